// SPDX-License-Identifier: GPL-2.0-only
/*
 * A user RC QP's receive ring (struct rvt_rwq, mmap'ed from the kernel by libhfi1verbs) is
 * user memory: this program writes hostile values into it and then sends to the QP from a
 * second QP of rvt_loop0, so that the kernel reads the ring (RC loopback: rvt_ruc_loopback()
 * and rvt_get_rwqe() in C). Each case passes when the send completes with an error status or
 * the receiving QP is in the error state, never as a good receive, and (checked by the VM
 * run) the kernel logs no KASAN or other report. The cases:
 *
 *   head     head far beyond the ring, nothing posted
 *   tail     tail far beyond the ring, nothing posted
 *   both     head and tail beyond the ring, one apart (a naive count says one WQE)
 *   num_sge  a posted WQE whose num_sge is 255, over the QP's max_recv_sge: the C rdmavt
 *            trusts it and reads (and copies SGEs) past the WQE, so the wrapper runs this
 *            case on rdmavt-rs only
 *   sge sum  a WQE posted through ibv_post_recv whose SGEs (max_recv_sge of them, all one
 *            large MR) add up to more than 4 GiB: every value is legal on its own. The C
 *            rdmavt lets the 32-bit sum wrap and receives; rdmavt-rs once panicked the kernel
 *            here (an overflow check in rvt_get_rwqe) and now refuses the WQE. Either way the
 *            MR must deregister afterwards: no SGE keeps a reference to it.
 *
 * With --c-reference (the wrapper's run on the C rdmavt) the head cases expect what C does:
 * it bounds the tail but counts WQEs from the hostile head, so it takes the slot at the tail
 * as a posted WQE and receives into it (inside the ring: no report). rdmavt-rs refuses.
 *
 * The ring is found through libhfi1verbs' struct hfi1_qp (the ibv_qp, then the ring pointer),
 * checked against /proc/self/maps and a WQE posted through ibv_post_recv before it is used.
 * A send that cannot be posted or never completes fails the case.
 */
#include <stdint.h>
#include <sys/mman.h>
#include <unistd.h>
#include <rdma/rvt-abi.h>
#include "verbs_util.h"

#define MAGIC_WR_ID 0x5eed0000cafeULL
#define POLLS 2000		/* 1 ms apart: the bound on waiting for the send engine */
#define MSG 64

struct pair {
	struct ibv_cq *scq, *rcq;
	struct ibv_qp *send, *recv;
	struct rvt_rwq *ring;
	uint32_t size, max_sge;
};

static struct ibv_pd *pd;
static struct ibv_mr *mr;
static char buf[4096];
static uint16_t lid;

/* Whether [p, p + len) lies inside a mapping of a uverbs device file. */
static int in_uverbs_mapping(const void *p, size_t len)
{
	FILE *f = fopen("/proc/self/maps", "r");
	unsigned long lo, hi, a = (unsigned long)p;
	char line[512];
	int found = 0;

	while (f && fgets(line, sizeof(line), f))
		if (sscanf(line, "%lx-%lx", &lo, &hi) == 2 && strstr(line, "/dev/infiniband/uverbs") &&
		    a >= lo && a + len <= hi)
			found = 1;
	if (f)
		fclose(f);
	return found;
}

static struct rvt_rwqe *wqe_at(struct pair *p, uint32_t n)
{
	size_t stride = sizeof(struct rvt_rwqe) + p->max_sge * sizeof(struct rvt_wqe_sge);

	return (struct rvt_rwqe *)((char *)p->ring->wq + stride * n);
}

/*
 * libhfi1verbs' struct hfi1_qp is { struct ibv_qp ibv_qp; struct hfi1_rq rq; } and hfi1_rq
 * starts with the ring pointer. Checked, not trusted: the pointer must lie in the mmap'ed
 * ring, and a WQE posted through libibverbs must show up in it.
 */
static int locate_ring(struct pair *p)
{
	struct ibv_sge sge = { .addr = (uintptr_t)buf, .length = MSG, .lkey = mr->lkey };
	struct ibv_recv_wr wr = { .wr_id = MAGIC_WR_ID, .sg_list = &sge, .num_sge = 1 }, *bad;
	struct rvt_rwq *ring = *(struct rvt_rwq **)((char *)p->recv + sizeof(struct ibv_qp));
	struct rvt_rwqe *w;

	if (!in_uverbs_mapping(ring, sizeof(*ring)))
		return 0;
	p->ring = ring;
	if (ring->head.val != 0 || ring->tail.val != 0 || ibv_post_recv(p->recv, &wr, &bad))
		return 0;
	w = wqe_at(p, 0);
	return ring->head.val == 1 && w->wr_id == MAGIC_WR_ID && w->num_sge == 1 &&
	       w->sg_list[0].lkey == mr->lkey;
}

static struct ibv_qp *rc_qp(struct ibv_cq *scq, struct ibv_cq *rcq, uint32_t max_recv_sge)
{
	struct ibv_qp_init_attr ia = {
		.send_cq = scq, .recv_cq = rcq, .qp_type = IBV_QPT_RC,
		.cap = { .max_send_wr = 4, .max_recv_wr = 3, .max_send_sge = 1,
			 .max_recv_sge = max_recv_sge },
	};

	return ibv_create_qp(pd, &ia);
}

static void destroy_pair(struct pair *p)
{
	if (p->send)
		ibv_destroy_qp(p->send);
	if (p->recv)
		ibv_destroy_qp(p->recv);
	if (p->scq)
		ibv_destroy_cq(p->scq);
	if (p->rcq)
		ibv_destroy_cq(p->rcq);
}

/* 0, or an errno. The receiving QP takes up to max_recv_sge SGEs per WQE. */
static int make_pair(struct ibv_context *ctx, struct pair *p, uint32_t max_recv_sge)
{
	struct ibv_qp_attr a;
	struct ibv_qp_init_attr ia;

	memset(p, 0, sizeof(*p));
	p->scq = ibv_create_cq(ctx, 8, NULL, NULL, 0);
	p->rcq = ibv_create_cq(ctx, 8, NULL, NULL, 0);
	if (!p->scq || !p->rcq)
		return errno ? errno : ENOMEM;
	p->send = rc_qp(p->scq, p->scq, 1);
	if (!p->send)
		return errno;
	p->recv = rc_qp(p->rcq, p->rcq, max_recv_sge);
	if (!p->recv)
		return errno;
	if (ibv_query_qp(p->recv, &a, IBV_QP_CAP, &ia))
		return EIO;
	/* libhfi1verbs sizes the ring as the kernel does: max_recv_wr + 1 slots. */
	p->size = ia.cap.max_recv_wr + 1;
	p->max_sge = ia.cap.max_recv_sge;
	if (conn_to_rts(p->send, p->recv->qp_num, lid) ||
	    conn_to_rts(p->recv, p->send->qp_num, lid))
		return EIO;
	return 0;
}

enum outcome { REFUSED, ACCEPTED, BROKEN };

/* Sends one message from p->send to p->recv and says how the hostile ring was taken. */
static enum outcome send_and_see(struct pair *p, const char **why)
{
	struct ibv_sge sge = { .addr = (uintptr_t)buf + 2048, .length = MSG, .lkey = mr->lkey };
	struct ibv_send_wr wr = {
		.wr_id = 1, .sg_list = &sge, .num_sge = 1, .opcode = IBV_WR_SEND,
		.send_flags = IBV_SEND_SIGNALED,
	}, *bad;
	struct ibv_wc wc;
	int i, n = 0;

	n = ibv_post_send(p->send, &wr, &bad);
	if (n) {
		*why = strerror(n);
		return BROKEN;
	}
	for (i = 0; i < POLLS && !(n = ibv_poll_cq(p->scq, 1, &wc)); i++)
		usleep(1000);
	if (n < 0) {
		*why = "ibv_poll_cq failed";
		return BROKEN;
	}
	if (!n) {
		*why = "no send completion within 2 s";
		return BROKEN;
	}
	*why = ibv_wc_status_str(wc.status);
	if (wc.status != IBV_WC_SUCCESS || qp_state(p->recv) == IBV_QPS_ERR)
		return REFUSED;
	return ACCEPTED;
}

/* Reports how a send into the pair's posted receive WQE was taken, against what was wanted. */
static void report(const char *name, struct pair *p, enum outcome want)
{
	const char *why = "";

	switch (send_and_see(p, &why)) {
	case REFUSED:
		tap_result(want == REFUSED, "%s: refused (%s)", name, why);
		break;
	case ACCEPTED:
		tap_result(want == ACCEPTED, "%s: received%s", name,
			   want == ACCEPTED ? ", as the C rdmavt does" : "");
		break;
	case BROKEN:
		tap_result(0, "%s: send or poll failed: %s", name, why);
		break;
	}
}

typedef void (*spoil_fn)(struct pair *p);

static void spoil_head(struct pair *p)
{
	__atomic_store_n(&p->ring->head.val, 0xfffffff0u, __ATOMIC_RELEASE);
}

static void spoil_tail(struct pair *p)
{
	__atomic_store_n(&p->ring->tail.val, 0x7fffffffu, __ATOMIC_RELEASE);
}

static void spoil_both(struct pair *p)
{
	__atomic_store_n(&p->ring->tail.val, 0x80000000u, __ATOMIC_RELEASE);
	__atomic_store_n(&p->ring->head.val, 0x80000001u, __ATOMIC_RELEASE);
}

static void spoil_num_sge(struct pair *p)
{
	wqe_at(p, 0)->num_sge = 255;
	__atomic_thread_fence(__ATOMIC_RELEASE);
}

/*
 * One case: a fresh pair, the ring located (which posts one good WQE), the ring spoiled, a
 * send. For the cases that want an empty ring, the good WQE is taken back first.
 */
static void run_case(struct ibv_context *ctx, const char *name, spoil_fn spoil, int keep_wqe,
		     enum outcome want)
{
	struct pair p;
	int ret = make_pair(ctx, &p, 1);

	if (ret) {
		tap_result(0, "%s: two connected RC QPs (%s)", name, strerror(ret));
		goto out;
	}
	if (!locate_ring(&p)) {
		tap_result(0, "%s: the receive ring found through libhfi1verbs", name);
		goto out;
	}
	if (!keep_wqe)
		__atomic_store_n(&p.ring->head.val, 0, __ATOMIC_RELEASE);
	spoil(&p);
	report(name, &p, want);
out:
	destroy_pair(&p);
}

/*
 * One receive WQE of max_recv_sge SGEs, each the whole of one MR just large enough that
 * their lengths add up past 4 GiB, posted through libibverbs; then a 64-byte send into it.
 */
static void run_sge_sum_case(struct ibv_context *ctx, uint32_t max_recv_sge, enum outcome want)
{
	const char *name = "SGE lengths adding up past 4 GiB";
	size_t page = sysconf(_SC_PAGESIZE);
	size_t len = ((1ULL << 32) / max_recv_sge + page) & ~(page - 1);
	struct ibv_sge *sges = calloc(max_recv_sge, sizeof(*sges));
	struct ibv_recv_wr wr = { .wr_id = MAGIC_WR_ID, .num_sge = max_recv_sge }, *bad;
	struct ibv_mr *big_mr = NULL;
	struct pair p;
	void *big;
	uint32_t i;
	int ret;

	if (max_recv_sge < 16) {
		/* Each SGE would need an MR of 256 MiB or more. */
		tap_skip(name, "the device takes fewer than 16 receive SGEs");
		free(sges);
		return;
	}
	big = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	ret = make_pair(ctx, &p, max_recv_sge);
	if (ret || !sges || big == MAP_FAILED) {
		tap_result(0, "%s: a pair with %u receive SGEs and %zu bytes of memory (%s)", name,
			   max_recv_sge, len, strerror(ret ? ret : ENOMEM));
		goto out;
	}
	big_mr = ibv_reg_mr(pd, big, len, IBV_ACCESS_LOCAL_WRITE);
	if (!big_mr) {
		tap_result(0, "%s: register %zu bytes: %s", name, len, strerror(errno));
		goto out;
	}
	for (i = 0; i < max_recv_sge; i++)
		sges[i] = (struct ibv_sge){ .addr = (uintptr_t)big, .length = len,
					    .lkey = big_mr->lkey };
	wr.sg_list = sges;
	ret = ibv_post_recv(p.recv, &wr, &bad);
	if (ret) {
		tap_result(0, "%s: ibv_post_recv: %s", name, strerror(ret));
		goto out;
	}
	report(name, &p, want);
	ret = ibv_dereg_mr(big_mr);
	big_mr = NULL;
	expect_errno(ret, 0, "SGE lengths past 4 GiB: the MR deregisters, no reference left");
out:
	if (big_mr)
		ibv_dereg_mr(big_mr);
	destroy_pair(&p);
	if (big != MAP_FAILED)
		munmap(big, len);
	free(sges);
}

int main(int argc, char **argv)
{
	int num_sge = argc > 1 && !strcmp(argv[1], "--num-sge");
	int c_reference = argc > 1 && !strcmp(argv[1], "--c-reference");
	enum outcome head_case = c_reference ? ACCEPTED : REFUSED;
	struct ibv_context *ctx = open_test_device();
	struct ibv_device_attr da;
	struct ibv_port_attr pa;
	struct ibv_cq *cq;

	printf("TAP version 13\n");
	if (!ctx || ibv_query_port(ctx, 1, &pa) || ibv_query_device(ctx, &da)) {
		tap_result(0, "open %s", TEST_DEVICE);
		return tap_finish();
	}
	lid = pa.lid;
	pd = ibv_alloc_pd(ctx);
	mr = pd ? ibv_reg_mr(pd, buf, sizeof(buf), IBV_ACCESS_LOCAL_WRITE) : NULL;
	cq = mr ? ibv_create_cq(ctx, 8, NULL, NULL, 0) : NULL;
	if (!cq) {
		tap_result(0, "PD, MR and CQ on %s: %s", TEST_DEVICE, strerror(errno));
		return tap_finish();
	}
	ibv_destroy_cq(cq);
	run_case(ctx, "head beyond the ring", spoil_head, 0, head_case);
	run_case(ctx, "tail beyond the ring", spoil_tail, 0, REFUSED);
	run_case(ctx, "head and tail beyond the ring", spoil_both, 0, head_case);
	if (num_sge)
		run_case(ctx, "num_sge over max_recv_sge", spoil_num_sge, 1, REFUSED);
	else
		tap_skip("num_sge over max_recv_sge",
			 "C rdmavt trusts the ring's num_sge and reads past the WQE");
	run_sge_sum_case(ctx, da.max_sge, c_reference ? ACCEPTED : REFUSED);
	ibv_dereg_mr(mr);
	ibv_dealloc_pd(pd);
	ibv_close_device(ctx);
	return tap_finish();
}
