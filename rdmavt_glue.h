/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * What the C glue of rdmavt.ko offers the Rust side. Everything here is read by bindgen.
 */
#ifndef RDMAVT_RS_GLUE_H
#define RDMAVT_RS_GLUE_H

#include <linux/types.h>

/**
 * struct rdmavt_rs_layout_entry - one size, alignment or field offset of an ABI struct
 * @name: "struct.field", "struct.(size)" or "struct.(align)"
 * @value: what the C compiler computes for it
 */
struct rdmavt_rs_layout_entry {
	const char *name;
	size_t value;
};

/* The C compiler's view of every struct in the rdmavt ABI headers (layout_generated.h). */
extern const struct rdmavt_rs_layout_entry rdmavt_rs_layout_c[];
extern const size_t rdmavt_rs_layout_c_len;

/*
 * Wrappers for the static inline helpers and macros of ib_core that Rust calls; each does
 * exactly what its namesake does.
 */
struct ib_device;
struct ib_udata;
struct ib_ah;
struct list_head;

struct ib_device *rdmavt_rs_ib_alloc_device(size_t size);
const char *rdmavt_rs_dev_name(struct ib_device *ibdev);
int rdmavt_rs_ib_no_udata_io(struct ib_udata *udata);
void rdmavt_rs_rdma_destroy_ah(struct ib_ah *ah);
void rdmavt_rs_init_list_head(struct list_head *list);
void rdmavt_rs_list_add(struct list_head *new, struct list_head *head);
void rdmavt_rs_list_del_init(struct list_head *entry);
bool rdmavt_rs_list_empty(const struct list_head *head);

struct kref;
void rdmavt_rs_kref_init(struct kref *kref);
void rdmavt_rs_kref_get(struct kref *kref);
int rdmavt_rs_kref_put(struct kref *kref, void (*release)(struct kref *kref));

struct ib_ucontext *rdmavt_rs_udata_to_ucontext(struct ib_udata *udata);
struct uverbs_attr_bundle;
struct ib_udata *rdmavt_rs_bundle_udata(struct uverbs_attr_bundle *attrs);
int rdmavt_rs_ib_copy_to_udata(struct ib_udata *udata, void *src, size_t len);

void *rdmavt_rs_vmalloc_user(unsigned long size);
void *rdmavt_rs_vzalloc_node(unsigned long size, int node);

struct work_struct;
struct workqueue_struct;
struct workqueue_struct *rdmavt_rs_alloc_cq_workqueue(void);
void rdmavt_rs_init_work(struct work_struct *work, void (*func)(struct work_struct *work));
void rdmavt_rs_queue_work(struct workqueue_struct *wq, struct work_struct *work);
int rdmavt_rs_node_first_cpu(int node);
void rdmavt_rs_local_bh_disable(void);
void rdmavt_rs_local_bh_enable(void);

/*
 * Memory regions (mr/): the percpu_ref, completion, umem and scatterlist helpers that are
 * static inline in their headers. Each does exactly what its namesake does, nothing more.
 */
struct percpu_ref;
struct completion;
struct ib_umem;
struct sg_page_iter;

void rdmavt_rs_percpu_ref_get(struct percpu_ref *ref);
void rdmavt_rs_percpu_ref_put(struct percpu_ref *ref);
void rdmavt_rs_percpu_ref_kill(struct percpu_ref *ref);
void rdmavt_rs_init_completion(struct completion *x);
struct ib_umem *rdmavt_rs_ib_umem_get_va(struct ib_device *device, unsigned long addr,
					 size_t size, int access);
size_t rdmavt_rs_ib_umem_num_pages(struct ib_umem *umem);
int rdmavt_rs_ib_umem_offset(struct ib_umem *umem);
void rdmavt_rs_umem_page_iter_start(struct ib_umem *umem, struct sg_page_iter *iter);
void *rdmavt_rs_sg_page_iter_address(struct sg_page_iter *iter);

/*
 * Queue pairs (qp/): the refcount helpers of rdmavt_qp.h, which hfi1 also calls on our QPs.
 */
struct rvt_qp;
void rdmavt_rs_rvt_get_qp(struct rvt_qp *qp);
void rdmavt_rs_rvt_put_qp(struct rvt_qp *qp);
void *rdmavt_rs_kzalloc_node(size_t size, int node);
void rdmavt_rs_init_qp_waits(struct rvt_qp *qp);
void rdmavt_rs_wait_qp_unused(struct rvt_qp *qp);
bool rdmavt_rs_rdma_cap_opa_ah(struct ib_device *device, u32 port_num);
u32 rdmavt_rs_opa_mcast_base(void);

/* Receive queues and SRQs (krwq/, srq/). */
int rdmavt_rs_ib_copy_from_udata(void *dest, struct ib_udata *udata, size_t len);
int rdmavt_rs_put_user_u64(u64 addr, u64 value);

#if IS_ENABLED(CONFIG_KUNIT)
/* The rdmavt_rs_krwq KUnit suite's threads (krwq/tests.rs); not in a build without KUnit. */
int rdmavt_rs_kthread_start_on(int (*fn)(void *data), void *data, unsigned int cpu);
__noreturn void rdmavt_rs_kthread_complete_and_exit(struct completion *done);
void rdmavt_rs_wait_for_completion(struct completion *done);
void rdmavt_rs_cond_resched(void);
#endif

/*
 * Multicast (mcast/): rb-tree linking, RCU list updates and the group's wait queue.
 */
struct rb_node;
struct rb_root;
struct rvt_mcast;
void rdmavt_rs_rb_link_insert(struct rb_node *node, struct rb_node *parent,
			      struct rb_node **link, struct rb_root *root);
void rdmavt_rs_rb_erase(struct rb_node *node, struct rb_root *root);
void rdmavt_rs_list_add_tail_rcu(struct list_head *new, struct list_head *head);
void rdmavt_rs_list_del_rcu(struct list_head *entry);
void rdmavt_rs_init_mcast_wait(struct rvt_mcast *mcast);
void rdmavt_rs_mcast_wait_refs(struct rvt_mcast *mcast, int max);
void rdmavt_rs_mcast_put(struct rvt_mcast *mcast);

/* QP timers (qp/timers.rs): their set-up and arming are macros or static inlines. */
#include <linux/hrtimer_types.h>
struct timer_list;

void rdmavt_rs_qp_timers_setup(struct rvt_qp *qp, void (*rc_timeout)(struct timer_list *),
			       enum hrtimer_restart (*rnr_retry)(struct hrtimer *));
void rdmavt_rs_add_timer_after(struct timer_list *timer, unsigned long delta);
void rdmavt_rs_hrtimer_start_us(struct hrtimer *timer, u32 usecs);

#ifdef RDMAVT_RS_KERNEL_6_12
/* compat/compat_6_12.c: what 6.12's kernel crate has no Rust API or helper for. */
#include <linux/spinlock_types.h>

void rdmavt_rs_rcu_read_lock(void);
void rdmavt_rs_rcu_read_unlock(void);
bool rdmavt_rs_spin_trylock(spinlock_t *lock);
void rdmavt_rs_warn(const char *file, int line);
#endif

/* compat/irqsave.c: the interrupt-saving spinlock's C side, on both kernel lines. */
#include <linux/spinlock_types.h>

unsigned long rdmavt_rs_spin_lock_irqsave(spinlock_t *lock);
bool rdmavt_rs_spin_trylock_irqsave(spinlock_t *lock, unsigned long *flags);
void rdmavt_rs_spin_unlock_irqrestore(spinlock_t *lock, unsigned long flags);

#endif /* RDMAVT_RS_GLUE_H */
