/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * Between the Rust and the C glue of rvt_loop.ko. Declared again by hand on the Rust side
 * (callbacks.rs), which keeps the same sizes.
 */
#ifndef RVT_LOOP_GLUE_H
#define RVT_LOOP_GLUE_H

#include <linux/types.h>

struct attribute_group;
struct ib_device;
struct ib_grh;
struct ib_wc;
struct net_device;
struct rvt_mcast;
struct rvt_qp;
struct rvt_swqe;
struct workqueue_struct;
union ib_gid;
enum ib_wc_status;

/* The port attribute groups of every rvt_loop device (ib_device_ops.port_groups), NULL-ended. */
#define RVT_LOOP_PORT_GROUPS 2
extern const struct attribute_group *rvt_loop_port_groups[RVT_LOOP_PORT_GROUPS];

/* Rust (callbacks.rs): the unit number of the rvt_loop device @ibdev. */
u32 rvt_loop_unit(const struct ib_device *ibdev);

/* The send engine's calls into rdmavt (rvt_loop/rdmavt.rs declares them again). */
u32 rvt_loop_state_ops(const struct rvt_qp *qp);
void rvt_loop_ruc_loopback(struct rvt_qp *qp);
struct rvt_swqe *rvt_loop_swqe(struct rvt_qp *qp, u32 n);
void rvt_loop_send_complete(struct rvt_qp *qp, struct rvt_swqe *wqe, enum ib_wc_status status);
struct rvt_qp *rvt_loop_lookup_qpn(struct rvt_qp *sqp, u32 qpn);
struct rvt_mcast *rvt_loop_mcast_find(struct rvt_qp *sqp, union ib_gid *mgid, u16 mlid);
void rvt_loop_mcast_put(struct rvt_mcast *mcast);
int rvt_loop_get_rwqe(struct rvt_qp *qp);
void rvt_loop_rc_error(struct rvt_qp *qp, enum ib_wc_status status);
void rvt_loop_recv_grh(struct rvt_qp *qp, const struct ib_grh *grh);
void rvt_loop_recv_payload(struct rvt_qp *qp, struct rvt_swqe *swqe);
bool rvt_loop_take_wr_id(struct rvt_qp *qp);
void rvt_loop_recv_cq(struct rvt_qp *qp, struct ib_wc *wc, bool solicited);

/* rvt_loop's own counters, @n u64 per CPU (rvt_loop/stats.rs declares them again). */
u64 __percpu *rvt_loop_counters_alloc(u32 n);
void rvt_loop_counters_free(u64 __percpu *counters);
void rvt_loop_counters_add(u64 __percpu *counters, u32 index, u64 value);
u64 rvt_loop_counters_sum(u64 __percpu *counters, u32 index);

/* Rust (link.rs): rdma_link_ops' callbacks. */
int rvt_loop_newlink(const char *ibdev_name, struct net_device *ndev);
int rvt_loop_dellink(struct ib_device *ibdev);

/* rdma link (rvt_loop/link.rs declares them again, rvt_loop_set_link_ops() callbacks.rs). */
void rvt_loop_link_register(void);
void rvt_loop_link_unregister(void);
void rvt_loop_set_link_ops(struct ib_device *ibdev);
struct workqueue_struct *rvt_loop_link_wq_alloc(void);

#ifdef RDMAVT_RS_KERNEL_6_12
struct pci_dev;

/* 6.12: the num_devs module parameter, and the PCI driver's registration (C). */
u32 rvt_loop_num_devs(void);
int rvt_loop_pci_register(void);
void rvt_loop_pci_unregister(void);
/* Rust (pci.rs): probe's driver data (or an ERR_PTR), and its release at remove. */
void *rvt_loop_pci_probe(struct pci_dev *pdev);
void rvt_loop_pci_remove(void *devs);

/* 6.12: debugfs (C), and the Rust (debugfs.rs) `show` of qp_stats. */
struct rvt_dev_info;
void *rvt_loop_debugfs_dir(const char *name, void *parent);
void rvt_loop_debugfs_remove(void *dentry);
void rvt_loop_debugfs_qp_stats(void *dir, struct rvt_dev_info *rdi);
void rvt_loop_seq_write(void *m, const char *s, size_t len);
int rvt_loop_print_qps(void *m, struct rvt_dev_info *rdi);
#endif

#endif /* RVT_LOOP_GLUE_H */
