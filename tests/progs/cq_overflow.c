// SPDX-License-Identifier: GPL-2.0-only
/*
 * A CQ that overflows while completions arrive (tests/kselftest/stress.sh): a UD QP whose send
 * CQ has room for one or two completions posts a burst of signalled sends to itself (no
 * receive is posted, so each datagram is dropped and only the send completes). rdmavt reports
 * the overflow as IB_EVENT_CQ_ERR and moves the QP to the error state; the CQ holds what
 * fitted; everything is destroyed cleanly afterwards. Repeated ROUNDS times (default 20).
 */
#include <poll.h>
#include <unistd.h>
#include "verbs_util.h"

#define QKEY 0x11111111
#define BURST 16

static struct ibv_context *ctx;
static struct ibv_pd *pd;
static struct ibv_mr *mr;
static char buf[64];

/* Waits up to TIMEOUT_MS for a CQ_ERR on CQ; 1 if it came. Other events are acknowledged. */
static int cq_err_event(struct ibv_cq *cq, int timeout_ms)
{
	struct pollfd p = { .fd = ctx->async_fd, .events = POLLIN };
	struct ibv_async_event ev;
	int seen = 0;

	while (!seen && poll(&p, 1, timeout_ms) == 1) {
		if (ibv_get_async_event(ctx, &ev))
			break;
		seen = ev.event_type == IBV_EVENT_CQ_ERR && ev.element.cq == cq;
		ibv_ack_async_event(&ev);
	}
	return seen;
}

/* One round: 0 when the overflow was reported and everything was freed, else an errno. */
static int round_trip(uint16_t lid)
{
	struct ibv_cq *scq = ibv_create_cq(ctx, 1, NULL, NULL, 0);
	struct ibv_cq *rcq = ibv_create_cq(ctx, 4, NULL, NULL, 0);
	struct ibv_qp_init_attr ia = {
		.send_cq = scq, .recv_cq = rcq, .qp_type = IBV_QPT_UD,
		.cap = { .max_send_wr = BURST, .max_recv_wr = 1, .max_send_sge = 1,
			 .max_recv_sge = 1 },
	};
	struct ibv_ah_attr aa = { .dlid = lid, .port_num = 1 };
	struct ibv_sge sge = { (uintptr_t)buf, sizeof(buf), mr->lkey };
	struct ibv_send_wr wr = {
		.sg_list = &sge, .num_sge = 1, .opcode = IBV_WR_SEND,
		.send_flags = IBV_SEND_SIGNALED, .wr.ud = { .remote_qkey = QKEY },
	}, *bad;
	struct ibv_qp *qp = NULL;
	struct ibv_ah *ah = NULL;
	struct ibv_wc wc[BURST];
	int i, ret = EIO, got;

	if (!scq || !rcq)
		goto out;
	qp = ibv_create_qp(pd, &ia);
	ah = ibv_create_ah(pd, &aa);
	if (!qp || !ah || ud_to_rts(qp, QKEY))
		goto out;
	wr.wr.ud.ah = ah;
	wr.wr.ud.remote_qpn = qp->qp_num;
	for (i = 0; i < BURST; i++) {
		wr.wr_id = i;
		if (ibv_post_send(qp, &wr, &bad))
			goto out;
	}
	if (!cq_err_event(scq, 5000)) {
		fprintf(stderr, "no IBV_EVENT_CQ_ERR\n");
		goto out;
	}
	/* The QP goes to the error state (C's rvt_send_cq); rdmavt-rs may take a moment. */
	for (i = 0; i < 100 && qp_state(qp) != IBV_QPS_ERR; i++)
		usleep(10000);
	if (qp_state(qp) != IBV_QPS_ERR) {
		fprintf(stderr, "the QP is in state %d, not IBV_QPS_ERR\n", qp_state(qp));
		goto out;
	}
	got = ibv_poll_cq(scq, BURST, wc);
	if (got < 1 || got > scq->cqe + 1) {
		fprintf(stderr, "polled %d of a CQ of %d\n", got, scq->cqe);
		goto out;
	}
	ret = 0;
out:
	if (qp && ibv_destroy_qp(qp))
		ret = EIO;
	if (ah && ibv_destroy_ah(ah))
		ret = EIO;
	if (scq && ibv_destroy_cq(scq))
		ret = EIO;
	if (rcq && ibv_destroy_cq(rcq))
		ret = EIO;
	return ret;
}

int main(int argc, char **argv)
{
	int rounds = argc > 1 ? atoi(argv[1]) : 20, i, failed = 0;
	struct ibv_port_attr pa;

	ctx = open_test_device();
	pd = ctx ? ibv_alloc_pd(ctx) : NULL;
	mr = pd ? ibv_reg_mr(pd, buf, sizeof(buf), 0) : NULL;
	if (!mr || ibv_query_port(ctx, 1, &pa)) {
		fprintf(stderr, "cq_overflow: no %s\n", TEST_DEVICE);
		return 2;
	}
	for (i = 0; i < rounds; i++)
		failed += round_trip(pa.lid) != 0;
	tap_result(!failed, "%d rounds of a CQ overflowing under a burst of %d sends: the overflow "
		   "reported (IBV_EVENT_CQ_ERR), the QP in error, what fitted polled, all destroyed "
		   "(%d failed)",
		   rounds, BURST, failed);
	tap_result(!ibv_dereg_mr(mr) && !ibv_dealloc_pd(pd) && !ibv_close_device(ctx),
		   "the device's objects are freed");
	return tap_finish();
}
