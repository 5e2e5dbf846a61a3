// SPDX-License-Identifier: GPL-2.0-only
/*
 * C glue of rvt_loop_kverbs.ko: the ib_client that finds rvt_loop0, and thin wrappers of the
 * kernel verbs that ib_verbs.h defines as static inlines or macros, which bindgen cannot call.
 * Declared in rvt_loop_kverbs_glue.h, and again by hand in glue.rs with the same types. Logic lives in Rust.
 */

#include <linux/dma-direction.h>
#include <linux/module.h>
#include <linux/mutex.h>
#include <linux/sched.h>
#include <linux/scatterlist.h>
#include <linux/string.h>
#include <rdma/ib_verbs.h>

#include "rvt_loop_kverbs_glue.h"

/* The device the tests run on, while it is registered; under rvt_loop_kverbs_lock. */
static struct ib_device *rvt_loop_kverbs_dev;
static DEFINE_MUTEX(rvt_loop_kverbs_lock);

static int rvt_loop_kverbs_add(struct ib_device *ibdev)
{
	if (strcmp(dev_name(&ibdev->dev), "rvt_loop0"))
		return -EOPNOTSUPP;
	mutex_lock(&rvt_loop_kverbs_lock);
	rvt_loop_kverbs_dev = ibdev;
	mutex_unlock(&rvt_loop_kverbs_lock);
	return 0;
}

/* Called before the device unregisters, which first waits for every ib_device_put(). */
static void rvt_loop_kverbs_remove(struct ib_device *ibdev, void *client_data)
{
	mutex_lock(&rvt_loop_kverbs_lock);
	if (rvt_loop_kverbs_dev == ibdev)
		rvt_loop_kverbs_dev = NULL;
	mutex_unlock(&rvt_loop_kverbs_lock);
}

static struct ib_client rvt_loop_kverbs_client = {
	.name = "rvt_loop_kverbs",
	.add = rvt_loop_kverbs_add,
	.remove = rvt_loop_kverbs_remove,
};

int rvt_loop_kverbs_register(void)
{
	return ib_register_client(&rvt_loop_kverbs_client);
}

void rvt_loop_kverbs_unregister(void)
{
	ib_unregister_client(&rvt_loop_kverbs_client);
}

/* rvt_loop0 with a registration reference (ib_device_put() drops it), or NULL. */
struct ib_device *rvt_loop_kverbs_device_get(void)
{
	struct ib_device *ibdev;

	mutex_lock(&rvt_loop_kverbs_lock);
	ibdev = rvt_loop_kverbs_dev;
	if (ibdev && !ib_device_try_get(ibdev))
		ibdev = NULL;
	mutex_unlock(&rvt_loop_kverbs_lock);
	return ibdev;
}

struct ib_pd *rvt_loop_kverbs_alloc_pd(struct ib_device *ibdev, unsigned int flags)
{
	return ib_alloc_pd(ibdev, flags);
}

void rvt_loop_kverbs_dealloc_pd(struct ib_pd *pd)
{
	ib_dealloc_pd(pd);
}

/* A CQ the caller polls (IB_POLL_DIRECT), on completion vector 0. */
struct ib_cq *rvt_loop_kverbs_alloc_cq(struct ib_device *ibdev, int nr_cqe)
{
	return ib_alloc_cq(ibdev, NULL, nr_cqe, 0, IB_POLL_DIRECT);
}

int rvt_loop_kverbs_poll_cq(struct ib_cq *cq, int num_entries, struct ib_wc *wc)
{
	return ib_poll_cq(cq, num_entries, wc);
}

struct ib_qp *rvt_loop_kverbs_create_qp(struct ib_pd *pd, struct ib_qp_init_attr *init_attr)
{
	return ib_create_qp(pd, init_attr);
}

int rvt_loop_kverbs_destroy_qp(struct ib_qp *qp)
{
	return ib_destroy_qp(qp);
}

int rvt_loop_kverbs_post_send(struct ib_qp *qp, const struct ib_send_wr *wr,
			      const struct ib_send_wr **bad_wr)
{
	return ib_post_send(qp, wr, bad_wr);
}

int rvt_loop_kverbs_post_recv(struct ib_qp *qp, const struct ib_recv_wr *wr,
			      const struct ib_recv_wr **bad_wr)
{
	return ib_post_recv(qp, wr, bad_wr);
}

/* The address handle of a path to @dlid through @port_num, without a GRH. */
void rvt_loop_kverbs_set_av(struct ib_device *ibdev, struct rdma_ah_attr *ah, u32 port_num,
			    u32 dlid)
{
	memset(ah, 0, sizeof(*ah));
	ah->type = rdma_ah_find_type(ibdev, port_num);
	rdma_ah_set_port_num(ah, port_num);
	rdma_ah_set_dlid(ah, dlid);
}

/* Bidirectional mappings: the tests' buffers are both sent from and written to. */
u64 rvt_loop_kverbs_dma_map(struct ib_device *ibdev, void *cpu_addr, size_t size)
{
	return ib_dma_map_single(ibdev, cpu_addr, size, DMA_BIDIRECTIONAL);
}

int rvt_loop_kverbs_dma_mapping_error(struct ib_device *ibdev, u64 dma_addr)
{
	return ib_dma_mapping_error(ibdev, dma_addr);
}

void rvt_loop_kverbs_dma_unmap(struct ib_device *ibdev, u64 dma_addr, size_t size)
{
	ib_dma_unmap_single(ibdev, dma_addr, size, DMA_BIDIRECTIONAL);
}

/* A fast-register MR on @pd for up to two pages (a small buffer may straddle a boundary). */
struct ib_mr *rvt_loop_kverbs_alloc_mr(struct ib_pd *pd)
{
	return ib_alloc_mr(pd, IB_MR_TYPE_MEM_REG, 2);
}

int rvt_loop_kverbs_dereg_mr(struct ib_mr *mr)
{
	return ib_dereg_mr(mr);
}

/* Maps @len bytes at DMA address @dma into @mr's page list: 1 when they all fit. */
int rvt_loop_kverbs_map_mr(struct ib_mr *mr, u64 dma, unsigned int len)
{
	struct scatterlist sg;

	sg_init_table(&sg, 1);
	sg_dma_address(&sg) = dma;
	sg_dma_len(&sg) = len;
	return ib_map_mr_sg(mr, &sg, 1, NULL, PAGE_SIZE);
}

/*
 * Whether the rdmavt loaded is rdmavt-rs, which exports a marker symbol of its own: the
 * tests of the C rdmavt's bugs expect what each variant does.
 */
bool rvt_loop_kverbs_on_rdmavt_rs(void)
{
	static const char marker[] = "rdmavt_rs_soft_device_ok";

	if (!__symbol_get(marker))
		return false;
	/* By name: symbol_put_addr() only takes a function's address, and this is data. */
#ifdef CONFIG_MODULE_UNLOAD
	__symbol_put(marker);
#endif
	return true;
}

/*
 * Makes the @n-th fault-injectable allocation (failslab, fail_page_alloc) of this thread fail
 * from now on, 0 for none, as /proc/<pid>/task/<tid>/fail-nth does from user space. Returns
 * what was left of the previous count: 0 once its allocation has failed. -1 (all bits) when
 * the kernel has no fault injection.
 */
unsigned int rvt_loop_kverbs_fail_nth(unsigned int n)
{
#ifdef CONFIG_FAULT_INJECTION
	unsigned int left = READ_ONCE(current->fail_nth);

	WRITE_ONCE(current->fail_nth, n);
	return left;
#else
	return UINT_MAX;
#endif
}
