// SPDX-License-Identifier: GPL-2.0-only
/*
 * C glue of rvt_loop.ko: the sysfs attributes of each port, which ib_sysfs.h's macros build
 * and which the shared bindings do not reach, the send engine's calls into rdmavt (ordinary
 * imports of either rdmavt module's exports, see below), the per-CPU operations of the
 * device's counters, which are macros, and the `rdma link` type with its module alias
 * (rdma_netlink.h is not part of the shared bindings). Logic lives in Rust.
 */

#include <linux/module.h>
#include <linux/percpu.h>
#include <linux/sysfs.h>
#include <linux/workqueue.h>
#include <rdma/ib_sysfs.h>
#include <rdma/ib_verbs.h>
#include <rdma/rdma_netlink.h>
#include <rdma/rdma_vt.h>
#include <rdma/rdmavt_qp.h>
#include <rdma/rdmavt_mr.h>

#include "rvt_loop_glue.h"

/* ports/1/rvt_loop/unit: which rvt_loop device this is (its name is rvt_loop<unit>). */
static ssize_t unit_show(struct ib_device *ibdev, u32 port_num,
			 struct ib_port_attribute *attr, char *buf)
{
	return sysfs_emit(buf, "%u\n", rvt_loop_unit(ibdev));
}
static IB_PORT_ATTR_RO(unit);

static struct attribute *rvt_loop_port_attrs[] = {
	&ib_port_attr_unit.attr,
	NULL,
};

static const struct attribute_group rvt_loop_port_group = {
	.name = "rvt_loop",
	.attrs = rvt_loop_port_attrs,
};

const struct attribute_group *rvt_loop_port_groups[RVT_LOOP_PORT_GROUPS] = {
	&rvt_loop_port_group,
	NULL,
};

/*
 * The send engine (qp.rs, ud.rs): rdmavt exports that only traffic needs, and thin wrappers
 * of the static inline helpers of rdmavt_qp.h and rdmavt_mr.h around them.
 *
 * Both rdmavt modules export every symbol used here; the module loader binds them as usual
 * and pins the exporting module.
 */
u32 rvt_loop_state_ops(const struct rvt_qp *qp)
{
	return ib_rvt_state_ops[READ_ONCE(qp->state)];
}

void rvt_loop_ruc_loopback(struct rvt_qp *qp)
{
	rvt_ruc_loopback(qp);
}

struct rvt_swqe *rvt_loop_swqe(struct rvt_qp *qp, u32 n)
{
	return rvt_get_swqe_ptr(qp, n);
}

void rvt_loop_send_complete(struct rvt_qp *qp, struct rvt_swqe *wqe, enum ib_wc_status status)
{
	lockdep_assert_held(&qp->s_lock);
	rvt_send_complete(qp, wqe, status);
}

struct rvt_qp *rvt_loop_lookup_qpn(struct rvt_qp *sqp, u32 qpn)
{
	struct rvt_dev_info *rdi = ib_to_rvt(sqp->ibqp.device);

	return rvt_lookup_qpn(rdi, rdi->ports[sqp->port_num - 1], qpn);
}

struct rvt_mcast *rvt_loop_mcast_find(struct rvt_qp *sqp, union ib_gid *mgid, u16 mlid)
{
	struct rvt_dev_info *rdi = ib_to_rvt(sqp->ibqp.device);

	return rvt_mcast_find(rdi->ports[sqp->port_num - 1], mgid, mlid);
}

/* Drops the reference rvt_mcast_find() took, as hfi1's receive path does. */
void rvt_loop_mcast_put(struct rvt_mcast *mcast)
{
	if (atomic_dec_return(&mcast->refcount) <= 1)
		wake_up(&mcast->wait);
}

int rvt_loop_get_rwqe(struct rvt_qp *qp)
{
	lockdep_assert_held(&qp->r_lock);
	return rvt_get_rwqe(qp, false);
}

void rvt_loop_rc_error(struct rvt_qp *qp, enum ib_wc_status status)
{
	rvt_rc_error(qp, status);
}

void rvt_loop_recv_grh(struct rvt_qp *qp, const struct ib_grh *grh)
{
	if (grh)
		rvt_copy_sge(qp, &qp->r_sge, (void *)grh, sizeof(*grh), true, false);
	else
		rvt_skip_sge(&qp->r_sge, sizeof(struct ib_grh), true);
}

/* Copies the payload of @swqe into @qp's receive buffer, and releases that buffer. */
void rvt_loop_recv_payload(struct rvt_qp *qp, struct rvt_swqe *swqe)
{
	struct rvt_sge_state ssge = {
		.sg_list = swqe->sg_list + 1,
		.sge = swqe->sg_list[0],
		.num_sge = swqe->wr.num_sge,
	};
	u32 length = swqe->length;

	while (length) {
		u32 len = rvt_get_sge_length(&ssge.sge, length);

		WARN_ON_ONCE(len == 0);
		rvt_copy_sge(qp, &qp->r_sge, ssge.sge.vaddr, len, true, false);
		rvt_update_sge(&ssge, len, false);
		length -= len;
	}
	rvt_put_ss(&qp->r_sge);
}

bool rvt_loop_take_wr_id(struct rvt_qp *qp)
{
	return test_and_clear_bit(RVT_R_WRID_VALID, &qp->r_aflags);
}

/*
 * rvt_recv_cq(), except on a full CQ: the header's version then calls rvt_error_qp() with
 * only r_lock held, though it asserts s_lock too (hfi1's ud_loopback() has that bug);
 * rvt_rc_error() takes s_lock around it, in rdmavt's order, and raises LAST_WQE_REACHED.
 */
void rvt_loop_recv_cq(struct rvt_qp *qp, struct ib_wc *wc, bool solicited)
{
	lockdep_assert_held(&qp->r_lock);
	if (unlikely(!rvt_cq_enter(ibcq_to_rvtcq(qp->ibqp.recv_cq), wc, solicited)))
		rvt_rc_error(qp, IB_WC_LOC_QP_OP_ERR);
}

/*
 * rvt_loop's own counters (stats.rs): an array of @n u64 per CPU, bumped on the CPU that
 * sends or receives, so that the data path never shares a cache line, and summed on read.
 */
u64 __percpu *rvt_loop_counters_alloc(u32 n)
{
	return __alloc_percpu(n * sizeof(u64), __alignof__(u64));
}

void rvt_loop_counters_free(u64 __percpu *counters)
{
	free_percpu(counters);
}

void rvt_loop_counters_add(u64 __percpu *counters, u32 index, u64 value)
{
	this_cpu_add(counters[index], value);
}

u64 rvt_loop_counters_sum(u64 __percpu *counters, u32 index)
{
	u64 sum = 0;
	int cpu;

	for_each_possible_cpu(cpu)
		sum += *per_cpu_ptr(&counters[index], cpu);
	return sum;
}

#ifdef RDMAVT_RS_KERNEL_6_12
/*
 * 6.12's rdma_link_ops has no dellink, which the removal of a link device needs (link.rs: its
 * first step runs before ib_core unregisters it): there is no rvt_loop link type on 6.12.
 */
void rvt_loop_link_register(void)
{
}

void rvt_loop_link_unregister(void)
{
}

void rvt_loop_set_link_ops(struct ib_device *ibdev)
{
}
#else
/*
 * `rdma link add NAME type rvt_loop netdev lo` and `rdma link delete NAME` (link.rs). ib_core's
 * nldev loads this module by its alias when the type is not registered yet.
 */
static struct rdma_link_ops rvt_loop_link_ops = {
	.type = "rvt_loop",
	.newlink = rvt_loop_newlink,
	.dellink = rvt_loop_dellink,
};
MODULE_ALIAS_RDMA_LINK("rvt_loop");

void rvt_loop_link_register(void)
{
	rdma_link_register(&rvt_loop_link_ops);
}

void rvt_loop_link_unregister(void)
{
	rdma_link_unregister(&rvt_loop_link_ops);
}

/* Makes nldev call rvt_loop_dellink() before it unregisters @ibdev. */
void rvt_loop_set_link_ops(struct ib_device *ibdev)
{
	ibdev->link_ops = &rvt_loop_link_ops;
}
#endif

/* The queue that finishes the removal of link devices; alloc_workqueue() is a macro. */
struct workqueue_struct *rvt_loop_link_wq_alloc(void)
{
	return alloc_workqueue("rvt_loop_link", WQ_UNBOUND, 0);
}

#ifdef RDMAVT_RS_KERNEL_6_12
/*
 * 6.12: the module parameter and the PCI driver, for which its kernel crate has no Rust API
 * (on 7.3 both are Rust: rvt_loop_main.rs, pci.rs).
 */
#include <linux/pci.h>

static unsigned int num_devs = 1;
module_param(num_devs, uint, 0444);
MODULE_PARM_DESC(num_devs,
		 "Number of loopback devices, rvt_loop0..rvt_loop<num_devs-1> (0-64); rdma link add makes more");

u32 rvt_loop_num_devs(void)
{
	return num_devs;
}

static const struct pci_device_id rvt_loop_pci_ids[] = {
	{ PCI_DEVICE(PCI_VENDOR_ID_REDHAT, 0x5) },
	{ }
};
MODULE_DEVICE_TABLE(pci, rvt_loop_pci_ids);

static int rvt_loop_probe(struct pci_dev *pdev, const struct pci_device_id *id)
{
	void *devs = rvt_loop_pci_probe(pdev);

	if (IS_ERR(devs))
		return PTR_ERR(devs);
	pci_set_drvdata(pdev, devs);
	return 0;
}

static void rvt_loop_remove(struct pci_dev *pdev)
{
	rvt_loop_pci_remove(pci_get_drvdata(pdev));
}

static struct pci_driver rvt_loop_pci_driver = {
	.name = "rvt_loop",
	.id_table = rvt_loop_pci_ids,
	.probe = rvt_loop_probe,
	.remove = rvt_loop_remove,
};

int rvt_loop_pci_register(void)
{
	return pci_register_driver(&rvt_loop_pci_driver);
}

void rvt_loop_pci_unregister(void)
{
	pci_unregister_driver(&rvt_loop_pci_driver);
}
#endif

#ifdef RDMAVT_RS_KERNEL_6_12
/* 6.12: debugfs, for which its kernel crate has no Rust API (on 7.3: debugfs.rs). */
#include <linux/debugfs.h>
#include <linux/seq_file.h>

void *rvt_loop_debugfs_dir(const char *name, void *parent)
{
	return debugfs_create_dir(name, parent);
}

void rvt_loop_debugfs_remove(void *dentry)
{
	debugfs_remove(dentry);
}

static int qp_stats_show(struct seq_file *m, void *v)
{
	return rvt_loop_print_qps(m, m->private);
}
DEFINE_SHOW_ATTRIBUTE(qp_stats);

void rvt_loop_debugfs_qp_stats(void *dir, struct rvt_dev_info *rdi)
{
	debugfs_create_file("qp_stats", 0444, dir, rdi, &qp_stats_fops);
}

void rvt_loop_seq_write(void *m, const char *s, size_t len)
{
	seq_write(m, s, len);
}
#endif
