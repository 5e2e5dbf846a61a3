// SPDX-License-Identifier: GPL-2.0-only
/*
 * C glue of rdmavt.ko: what Rust cannot express or bindgen cannot reach. Logic lives in Rust.
 */

#include <linux/module.h>
#include <linux/stddef.h>
#include <linux/vmalloc.h>
#include <linux/workqueue.h>
#include <linux/topology.h>
#include <linux/kref.h>
#include <linux/percpu-refcount.h>
#include <linux/completion.h>
#include <linux/scatterlist.h>
#include <linux/mm.h>
#include <linux/kthread.h>
#include <linux/uaccess.h>
#include <rdma/ib_verbs.h>
#include <rdma/ib_umem.h>
#include <rdma/opa_addr.h>
#include <rdma/uverbs_ioctl.h>
#include <rdma/rdma_vt.h>
#include <rdma/rdmavt_qp.h>
#include <rdma/rdmavt_cq.h>
#include <rdma/rdmavt_mr.h>
#include <uapi/rdma/rvt-abi.h>

#include "rdmavt_glue.h"
#include "layout/layout_generated.h"

const struct rdmavt_rs_layout_entry rdmavt_rs_layout_c[] = {
	RDMAVT_RS_LAYOUT_C_ENTRIES
};
const size_t rdmavt_rs_layout_c_len = ARRAY_SIZE(rdmavt_rs_layout_c);

/* The device API, implemented in device/. */
EXPORT_SYMBOL(rvt_alloc_device);
EXPORT_SYMBOL(rvt_dealloc_device);
EXPORT_SYMBOL(rvt_register_device);
EXPORT_SYMBOL(rvt_unregister_device);
EXPORT_SYMBOL(rvt_init_port);

/* Address handles, implemented in ah/. */
EXPORT_SYMBOL(rvt_check_ah);

/* Completion queues, implemented in cq/enter.rs. */
EXPORT_SYMBOL(rvt_cq_enter);

/* A QP's receive side, implemented in qp/recv.rs. */
EXPORT_SYMBOL(rvt_get_rwqe);

/* Memory region keys, implemented in mr/keys.rs. */
EXPORT_SYMBOL(rvt_fast_reg_mr);
EXPORT_SYMBOL(rvt_invalidate_rkey);
EXPORT_SYMBOL(rvt_lkey_ok);
EXPORT_SYMBOL(rvt_rkey_ok);

/* Queue pairs: errors, timers, the iterator (qp/error.rs, qp/timers.rs, qp/iter.rs). */
EXPORT_SYMBOL(rvt_error_qp);
EXPORT_SYMBOL(rvt_rnr_tbl_to_usec);
EXPORT_SYMBOL(rvt_add_retry_timer_ext);
EXPORT_SYMBOL(rvt_add_rnr_timer);
EXPORT_SYMBOL(rvt_stop_rc_timers);
EXPORT_SYMBOL(rvt_del_timers_sync);
EXPORT_SYMBOL(rvt_rc_rnr_retry);
EXPORT_SYMBOL(rvt_qp_iter_init);
EXPORT_SYMBOL(rvt_qp_iter_next);
EXPORT_SYMBOL(rvt_qp_iter);

/* Completing sends, and the state table, implemented in qp/complete.rs. */
EXPORT_SYMBOL(ib_rvt_state_ops);
EXPORT_SYMBOL(rvt_send_complete);
EXPORT_SYMBOL(rvt_comm_est);
EXPORT_SYMBOL(rvt_rc_error);

/* Loopback and the data-path helpers, implemented in loopback/. */
EXPORT_SYMBOL(rvt_ruc_loopback);
EXPORT_SYMBOL(rvt_copy_sge);
EXPORT_SYMBOL(rvt_restart_sge);
EXPORT_SYMBOL(rvt_compute_aeth);
EXPORT_SYMBOL(rvt_get_credit);

/* Multicast, implemented in mcast/verbs.rs. */
EXPORT_SYMBOL(rvt_mcast_find);

/*
 * Tells a driver at run time (symbol_get) that this rdmavt accepts a device with no PCI
 * device behind it: the C rdmavt dereferences get_pci_dev() in its log messages. GPL-only,
 * because symbol_get() finds no other kind.
 */
const int rdmavt_rs_soft_device_ok = 1;
EXPORT_SYMBOL_GPL(rdmavt_rs_soft_device_ok);

struct ib_device *rdmavt_rs_ib_alloc_device(size_t size)
{
#ifdef RDMAVT_RS_KERNEL_6_12
	/* 6.12's takes no network namespace. */
	return _ib_alloc_device(size);
#else
	return _ib_alloc_device(size, &init_net);
#endif
}

const char *rdmavt_rs_dev_name(struct ib_device *ibdev)
{
	return dev_name(&ibdev->dev);
}

int rdmavt_rs_ib_no_udata_io(struct ib_udata *udata)
{
#ifdef RDMAVT_RS_KERNEL_6_12
	/* 6.12 has no ib_no_udata_io(), and its C rdmavt checks no udata: neither do we. */
	return 0;
#else
	return ib_no_udata_io(udata);
#endif
}

void rdmavt_rs_rdma_destroy_ah(struct ib_ah *ah)
{
	rdma_destroy_ah(ah, RDMA_DESTROY_AH_SLEEPABLE);
}

void rdmavt_rs_init_list_head(struct list_head *list)
{
	INIT_LIST_HEAD(list);
}

void rdmavt_rs_list_add(struct list_head *new, struct list_head *head)
{
	list_add(new, head);
}

void rdmavt_rs_list_del_init(struct list_head *entry)
{
	list_del_init(entry);
}

bool rdmavt_rs_list_empty(const struct list_head *head)
{
	return list_empty(head);
}

void rdmavt_rs_kref_init(struct kref *kref)
{
	kref_init(kref);
}

void rdmavt_rs_kref_get(struct kref *kref)
{
	kref_get(kref);
}

int rdmavt_rs_kref_put(struct kref *kref, void (*release)(struct kref *kref))
{
	return kref_put(kref, release);
}

/* The user context of a verb call, as rdma_udata_to_drv_context() finds it. */
struct ib_ucontext *rdmavt_rs_udata_to_ucontext(struct ib_udata *udata)
{
	return container_of(udata, struct uverbs_attr_bundle, driver_udata)->context;
}

int rdmavt_rs_ib_copy_to_udata(struct ib_udata *udata, void *src, size_t len)
{
	return ib_copy_to_udata(udata, src, len);
}

void *rdmavt_rs_vmalloc_user(unsigned long size)
{
	return vmalloc_user(size);
}

void *rdmavt_rs_vzalloc_node(unsigned long size, int node)
{
	return vzalloc_node(size, node);
}

/* Completion callbacks run here, as in C: high priority, CPU intensive, per CPU. */
struct workqueue_struct *rdmavt_rs_alloc_cq_workqueue(void)
{
	return alloc_workqueue("%s", WQ_HIGHPRI | WQ_CPU_INTENSIVE | WQ_PERCPU, 0,
			       "rdmavt_cq");
}

void rdmavt_rs_init_work(struct work_struct *work, void (*func)(struct work_struct *work))
{
	INIT_WORK(work, func);
}

void rdmavt_rs_queue_work(struct workqueue_struct *wq, struct work_struct *work)
{
	queue_work(wq, work);
}

int rdmavt_rs_node_first_cpu(int node)
{
	return cpumask_first(cpumask_of_node(node));
}

void rdmavt_rs_local_bh_disable(void)
{
	local_bh_disable();
}

void rdmavt_rs_local_bh_enable(void)
{
	local_bh_enable();
}

/* The driver's udata of a verb call; kernel callers pass no bundle. */
struct ib_udata *rdmavt_rs_bundle_udata(struct uverbs_attr_bundle *attrs)
{
	return attrs ? &attrs->driver_udata : NULL;
}

/*
 * Memory regions. percpu_ref_get/put are per-CPU operations whose fast path only exists as
 * a static inline (mr/region.rs has that fast path inline, for the data path, which runs in
 * a read-side section; these wrappers serve a count in atomic mode and an ARef's reference),
 * and the umem and scatterlist helpers are static inlines or macros: bindgen cannot call
 * them, so each gets a one-line wrapper.
 */
void rdmavt_rs_percpu_ref_get(struct percpu_ref *ref)
{
	percpu_ref_get(ref);
}

void rdmavt_rs_percpu_ref_put(struct percpu_ref *ref)
{
	percpu_ref_put(ref);
}

void rdmavt_rs_percpu_ref_kill(struct percpu_ref *ref)
{
	percpu_ref_kill(ref);
}

void rdmavt_rs_init_completion(struct completion *x)
{
	init_completion(x);
}

struct ib_umem *rdmavt_rs_ib_umem_get_va(struct ib_device *device, unsigned long addr,
					 size_t size, int access)
{
#ifdef RDMAVT_RS_KERNEL_6_12
	/* 6.12's ib_umem_get() is what 7.3 calls ib_umem_get_va(). */
	return ib_umem_get(device, addr, size, access);
#else
	return ib_umem_get_va(device, addr, size, access);
#endif
}

size_t rdmavt_rs_ib_umem_num_pages(struct ib_umem *umem)
{
	return ib_umem_num_pages(umem);
}

int rdmavt_rs_ib_umem_offset(struct ib_umem *umem)
{
	return ib_umem_offset(umem);
}

/*
 * The start of for_each_sgtable_page(&umem->sgt_append.sgt, iter, 0); the loop steps it with
 * __sg_page_iter_next(), which is exported.
 */
void rdmavt_rs_umem_page_iter_start(struct ib_umem *umem, struct sg_page_iter *iter)
{
	struct sg_table *sgt = &umem->sgt_append.sgt;

	__sg_page_iter_start(iter, sgt->sgl, sgt->orig_nents, 0);
}

void *rdmavt_rs_sg_page_iter_address(struct sg_page_iter *iter)
{
	return page_address(sg_page_iter_page(iter));
}

/* Queue pairs (qp/). */
void rdmavt_rs_rvt_get_qp(struct rvt_qp *qp)
{
	rvt_get_qp(qp);
}

void rdmavt_rs_rvt_put_qp(struct rvt_qp *qp)
{
	rvt_put_qp(qp);
}

void *rdmavt_rs_kzalloc_node(size_t size, int node)
{
	return kzalloc_node(size, GFP_KERNEL, node);
}

/* A new QP's counters, its wait queue for the last reference, and its response-wait link. */
void rdmavt_rs_init_qp_waits(struct rvt_qp *qp)
{
	atomic_set(&qp->refcount, 0);
	atomic_set(&qp->local_ops_pending, 0);
	init_waitqueue_head(&qp->wait);
	INIT_LIST_HEAD(&qp->rspwait);
}

/* destroy_qp: wait until the last reference (rvt_get_qp) is dropped. */
void rdmavt_rs_wait_qp_unused(struct rvt_qp *qp)
{
	wait_event(qp->wait, !atomic_read(&qp->refcount));
}

bool rdmavt_rs_rdma_cap_opa_ah(struct ib_device *device, u32 port_num)
{
	return rdma_cap_opa_ah(device, port_num);
}

/* The first OPA multicast LID: unicast DLIDs of an OPA path lie below it. */
u32 rdmavt_rs_opa_mcast_base(void)
{
	return opa_get_mcast_base(OPA_MCAST_NR);
}

/* qp/timers.rs: timer set-up and arming are macros or static inlines. */
void rdmavt_rs_qp_timers_setup(struct rvt_qp *qp, void (*rc_timeout)(struct timer_list *),
			       enum hrtimer_restart (*rnr_retry)(struct hrtimer *))
{
	timer_setup(&qp->s_timer, rc_timeout, 0);
#ifdef RDMAVT_RS_KERNEL_6_12
	/* 6.12 has no hrtimer_setup(). */
	hrtimer_init(&qp->s_rnr_timer, CLOCK_MONOTONIC, HRTIMER_MODE_REL);
	qp->s_rnr_timer.function = rnr_retry;
#else
	hrtimer_setup(&qp->s_rnr_timer, rnr_retry, CLOCK_MONOTONIC, HRTIMER_MODE_REL);
#endif
}

void rdmavt_rs_add_timer_after(struct timer_list *timer, unsigned long delta)
{
	timer->expires = jiffies + delta;
	add_timer(timer);
}

void rdmavt_rs_hrtimer_start_us(struct hrtimer *timer, u32 usecs)
{
	hrtimer_start(timer, ns_to_ktime(1000 * (u64)usecs), HRTIMER_MODE_REL_PINNED);
}

/* Receive queues and SRQs (krwq/, srq/). */
int rdmavt_rs_ib_copy_from_udata(void *dest, struct ib_udata *udata, size_t len)
{
	return ib_copy_from_udata(dest, udata, len);
}

/* modify_srq: the new mmap offset goes to an address user space passed. */
int rdmavt_rs_put_user_u64(u64 addr, u64 value)
{
	return copy_to_user(u64_to_user_ptr(addr), &value, sizeof(value)) ? -EFAULT : 0;
}

#if IS_ENABLED(CONFIG_KUNIT)
/*
 * The rdmavt_rs_krwq KUnit suite (krwq/tests.rs): a producer and a consumer kthread, each
 * bound to its own CPU, that tell the test they are done through a completion. Test code:
 * built only with KUnit.
 */
int rdmavt_rs_kthread_start_on(int (*fn)(void *data), void *data, unsigned int cpu)
{
	struct task_struct *t = kthread_create(fn, data, "rdmavt_rs_krwq/%u", cpu);

	if (IS_ERR(t))
		return PTR_ERR(t);
	if (cpu_online(cpu))
		kthread_bind(t, cpu);
	wake_up_process(t);
	return 0;
}

__noreturn void rdmavt_rs_kthread_complete_and_exit(struct completion *done)
{
	kthread_complete_and_exit(done, 0);
}

void rdmavt_rs_wait_for_completion(struct completion *done)
{
	wait_for_completion(done);
}

void rdmavt_rs_cond_resched(void)
{
	cond_resched();
}
#endif /* CONFIG_KUNIT */

/* Loopback (loopback/): the static inline look-ups of the delivery path. */


/*
 * Multicast (mcast/): the rb-tree, RCU list and wait queue helpers that are static inlines
 * or macros. Each does exactly what its namesake does in C's mcast.c.
 */
void rdmavt_rs_rb_link_insert(struct rb_node *node, struct rb_node *parent,
			      struct rb_node **link, struct rb_root *root)
{
	rb_link_node(node, parent, link);
	rb_insert_color(node, root);
}

void rdmavt_rs_rb_erase(struct rb_node *node, struct rb_root *root)
{
	rb_erase(node, root);
}

void rdmavt_rs_list_add_tail_rcu(struct list_head *new, struct list_head *head)
{
	list_add_tail_rcu(new, head);
}

void rdmavt_rs_list_del_rcu(struct list_head *entry)
{
	list_del_rcu(entry);
}

void rdmavt_rs_init_mcast_wait(struct rvt_mcast *mcast)
{
	init_waitqueue_head(&mcast->wait);
}

/* wait_event(mcast->wait, atomic_read(&mcast->refcount) <= max), as rvt_detach_mcast waits. */
void rdmavt_rs_mcast_wait_refs(struct rvt_mcast *mcast, int max)
{
	wait_event(mcast->wait, atomic_read(&mcast->refcount) <= max);
}

/* What a walker does when done with a group from rvt_mcast_find() (hfi1's verbs.c does it). */
void rdmavt_rs_mcast_put(struct rvt_mcast *mcast)
{
	if (atomic_dec_return(&mcast->refcount) <= 1)
		wake_up(&mcast->wait);
}
