/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * The C glue of rvt_loop_kverbs.ko, as glue.rs declares it again by hand on the Rust side,
 * with the same types.
 */
#ifndef RVT_LOOP_KVERBS_GLUE_H
#define RVT_LOOP_KVERBS_GLUE_H

#include <linux/types.h>

struct ib_cq;
struct ib_device;
struct ib_mr;
struct ib_pd;
struct ib_qp;
struct ib_qp_init_attr;
struct ib_recv_wr;
struct ib_send_wr;
struct ib_wc;
struct rdma_ah_attr;

int rvt_loop_kverbs_register(void);
void rvt_loop_kverbs_unregister(void);
struct ib_device *rvt_loop_kverbs_device_get(void);
struct ib_pd *rvt_loop_kverbs_alloc_pd(struct ib_device *ibdev, unsigned int flags);
void rvt_loop_kverbs_dealloc_pd(struct ib_pd *pd);
struct ib_cq *rvt_loop_kverbs_alloc_cq(struct ib_device *ibdev, int nr_cqe);
int rvt_loop_kverbs_poll_cq(struct ib_cq *cq, int num_entries, struct ib_wc *wc);
struct ib_qp *rvt_loop_kverbs_create_qp(struct ib_pd *pd, struct ib_qp_init_attr *init_attr);
int rvt_loop_kverbs_destroy_qp(struct ib_qp *qp);
int rvt_loop_kverbs_post_send(struct ib_qp *qp, const struct ib_send_wr *wr,
			      const struct ib_send_wr **bad_wr);
int rvt_loop_kverbs_post_recv(struct ib_qp *qp, const struct ib_recv_wr *wr,
			      const struct ib_recv_wr **bad_wr);
void rvt_loop_kverbs_set_av(struct ib_device *ibdev, struct rdma_ah_attr *ah, u32 port_num,
			    u32 dlid);
u64 rvt_loop_kverbs_dma_map(struct ib_device *ibdev, void *cpu_addr, size_t size);
int rvt_loop_kverbs_dma_mapping_error(struct ib_device *ibdev, u64 dma_addr);
void rvt_loop_kverbs_dma_unmap(struct ib_device *ibdev, u64 dma_addr, size_t size);
struct ib_mr *rvt_loop_kverbs_alloc_mr(struct ib_pd *pd);
int rvt_loop_kverbs_dereg_mr(struct ib_mr *mr);
int rvt_loop_kverbs_map_mr(struct ib_mr *mr, u64 dma, unsigned int len);
bool rvt_loop_kverbs_on_rdmavt_rs(void);
unsigned int rvt_loop_kverbs_fail_nth(unsigned int n);

#endif /* RVT_LOOP_KVERBS_GLUE_H */
