// SPDX-License-Identifier: GPL-2.0-only
/*
 * UD multicast through rvt_loop's datagram engine, as TAP: three UD QPs on rvt_loop0, two
 * attached to a multicast group (MGID ff12:401b::1, MLID 0xc001); one request sent to the
 * group reaches both, with a GRH naming the group, and not the third QP. After one detaches,
 * the next request reaches only the other. The engine delivers before it completes the send,
 * so once the send completion is in, every receive that will happen has happened: no test
 * here waits on a clock.
 *
 * Exit status 0: all points passed; 1: one failed; 4: SKIP (no QP could be created, printed
 * as "# SKIP no QP: <errno>", for the caller to judge).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <infiniband/verbs.h>

#define MSG "hello, group"
#define GRH 40
#define QKEY 0x11111111
#define MLID 0xc001

static int n;
static int failed;

static void point(int ok, const char *what)
{
	printf("%sok %d %s\n", ok ? "" : "not ", ++n, what);
	failed |= !ok;
}

static void die(const char *what)
{
	printf("Bail out! %s: %s\n", what, strerror(errno));
	exit(1);
}

struct rqp {
	struct ibv_qp *qp;
	struct ibv_cq *cq;
	char buf[GRH + 64];
	struct ibv_mr *mr;
};

static struct ibv_qp *ud_qp(struct ibv_pd *pd, struct ibv_cq *cq)
{
	struct ibv_qp_init_attr init = {
		.send_cq = cq, .recv_cq = cq, .qp_type = IBV_QPT_UD,
		.cap = { .max_send_wr = 4, .max_recv_wr = 4, .max_send_sge = 1, .max_recv_sge = 1 },
	};
	struct ibv_qp_attr attr = { .qp_state = IBV_QPS_INIT, .port_num = 1, .qkey = QKEY };
	struct ibv_qp *qp = ibv_create_qp(pd, &init);

	if (!qp) {
		printf("# SKIP no QP: %s\n", strerror(errno));
		exit(4);
	}
	if (ibv_modify_qp(qp, &attr, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_QKEY))
		die("INIT");
	attr.qp_state = IBV_QPS_RTR;
	if (ibv_modify_qp(qp, &attr, IBV_QP_STATE))
		die("RTR");
	attr.qp_state = IBV_QPS_RTS;
	if (ibv_modify_qp(qp, &attr, IBV_QP_STATE | IBV_QP_SQ_PSN))
		die("RTS");
	return qp;
}

static void post_recv(struct rqp *r)
{
	struct ibv_sge sge = { (uintptr_t)r->buf, sizeof(r->buf), r->mr->lkey };
	struct ibv_recv_wr wr = { .wr_id = 1, .sg_list = &sge, .num_sge = 1 }, *bad;

	memset(r->buf, 0, sizeof(r->buf));
	if (ibv_post_recv(r->qp, &wr, &bad))
		die("post_recv");
}

/* Whether @r received the message from @src; with @expect 0, whether it received nothing. */
static int received(struct rqp *r, uint32_t src, int expect, union ibv_gid *mgid)
{
	struct ibv_wc wc;
	int got = ibv_poll_cq(r->cq, 1, &wc);

	if (!expect)
		return got == 0;
	if (got != 1 || wc.status != IBV_WC_SUCCESS) {
		printf("# poll %d, status %d\n", got, got == 1 ? (int)wc.status : -1);
		return 0;
	}
	if (wc.byte_len != GRH + sizeof(MSG) || wc.src_qp != src || !(wc.wc_flags & IBV_WC_GRH)) {
		printf("# byte_len %u src_qp %u flags %#x\n", wc.byte_len, wc.src_qp, wc.wc_flags);
		return 0;
	}
	/* The GRH's DGID (its last 16 bytes) is the group's. */
	return !memcmp(r->buf + GRH - 16, mgid->raw, 16) && !strcmp(r->buf + GRH, MSG);
}

int main(void)
{
	struct ibv_device **list = ibv_get_device_list(NULL);
	struct ibv_context *ctx = NULL;
	union ibv_gid mgid = { .raw = { 0xff, 0x12, 0x40, 0x1b, 0xff, 0xff, [15] = 1 } };
	struct rqp r[3];
	char msg[] = MSG;
	struct ibv_cq *scq;
	struct ibv_qp *sqp;
	struct ibv_mr *smr;
	struct ibv_ah *ah;
	struct ibv_pd *pd;
	struct ibv_wc wc;
	int i, round;

	printf("TAP version 13\n");
	for (i = 0; list && list[i]; i++)
		if (!strcmp(ibv_get_device_name(list[i]), "rvt_loop0"))
			ctx = ibv_open_device(list[i]);
	if (!ctx)
		die("open rvt_loop0");
	pd = ibv_alloc_pd(ctx);
	scq = ibv_create_cq(ctx, 4, NULL, NULL, 0);
	if (!pd || !scq)
		die("PD/CQ");
	sqp = ud_qp(pd, scq);
	printf("1..7\n");
	for (i = 0; i < 3; i++) {
		r[i].cq = ibv_create_cq(ctx, 4, NULL, NULL, 0);
		r[i].mr = ibv_reg_mr(pd, r[i].buf, sizeof(r[i].buf), IBV_ACCESS_LOCAL_WRITE);
		if (!r[i].cq || !r[i].mr)
			die("CQ/MR");
		r[i].qp = ud_qp(pd, r[i].cq);
		post_recv(&r[i]);
	}
	point(!ibv_attach_mcast(r[0].qp, &mgid, MLID) && !ibv_attach_mcast(r[1].qp, &mgid, MLID),
	      "two QPs attach to the group");

	smr = ibv_reg_mr(pd, msg, sizeof(msg), 0);
	ah = ibv_create_ah(pd, &(struct ibv_ah_attr){
		.dlid = MLID, .port_num = 1, .is_global = 1,
		.grh = { .dgid = mgid, .hop_limit = 1 } });
	if (!smr || !ah)
		die("MR/AH");
	for (round = 0; round < 2; round++) {
		struct ibv_sge sge = { (uintptr_t)msg, sizeof(msg), smr->lkey };
		struct ibv_send_wr wr = {
			.sg_list = &sge, .num_sge = 1, .opcode = IBV_WR_SEND,
			.send_flags = IBV_SEND_SIGNALED,
			.wr.ud = { .ah = ah, .remote_qpn = 0xffffff, .remote_qkey = QKEY },
		}, *bad;

		if (ibv_post_send(sqp, &wr, &bad))
			die("post_send");
		while (!(i = ibv_poll_cq(scq, 1, &wc)))
			;
		if (round == 0) {
			point(i == 1 && wc.status == IBV_WC_SUCCESS, "the send to the group completes");
			point(received(&r[0], sqp->qp_num, 1, &mgid) &&
			      received(&r[1], sqp->qp_num, 1, &mgid),
			      "both attached QPs receive it, with the group's GRH");
			point(received(&r[2], 0, 0, NULL), "the QP not attached receives nothing");
			post_recv(&r[0]);
			post_recv(&r[1]);
			point(!ibv_detach_mcast(r[0].qp, &mgid, MLID), "one QP detaches");
		} else {
			point(i == 1 && wc.status == IBV_WC_SUCCESS, "the second send completes");
			point(received(&r[1], sqp->qp_num, 1, &mgid) && received(&r[0], 0, 0, NULL),
			      "only the QP still attached receives it");
		}
	}
	printf("# Totals: %s\n", failed ? "failed" : "passed");
	return failed;
}
