// SPDX-License-Identifier: GPL-2.0-only
/*
 * A process that holds an rvt_loop device open while `rdma link delete` removes it
 * (tests/kselftest/rdma_link.sh): link_hold DEVICE opens DEVICE, makes a PD, an MR, a CQ and
 * an RC QP in INIT (the CQ's and the QP's rings mapped from the uverbs file), says
 * "holding" and waits until its standard input ends. Then it uses the device again, which is
 * gone by then: each verb must fail, not crash, and a query says EIO, as ib_core answers for
 * a disassociated device. Prints TAP; exits 0 when every point passes.
 *
 * link_hold --no-rings DEVICE holds only the PD and the MR: nothing mapped, for the C rdmavt,
 * whose rvt_release_mmap_info() reads the freed user context when a ring's mapping outlives
 * the device.
 */
#include <unistd.h>
#include "verbs_util.h"

static int to_init(struct ibv_qp *qp)
{
	struct ibv_qp_attr a = {
		.qp_state = IBV_QPS_INIT, .pkey_index = 0, .port_num = 1,
		.qp_access_flags = IBV_ACCESS_REMOTE_WRITE,
	};

	return ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT |
			     IBV_QP_ACCESS_FLAGS);
}

/* The verbs after the device is gone: each fails (errno-style result, never 0). */
static void after_delete(struct ibv_context *ctx, struct ibv_cq *cq, struct ibv_qp *qp)
{
	struct ibv_device_attr attr;
	struct ibv_port_attr port;
	struct ibv_recv_wr rwr = { .wr_id = 1 }, *bad_rwr;
	struct ibv_pd *pd2;
	struct ibv_wc wc;
	int ret;

	ret = ibv_query_device(ctx, &attr);
	expect_errno(ret, EIO, "query_device after the delete");
	ret = ibv_query_port(ctx, 1, &port);
	tap_result(ret != 0, "query_port after the delete fails (%s)", strerror(ret));
	pd2 = ibv_alloc_pd(ctx);
	tap_result(pd2 == NULL, "alloc_pd after the delete fails (%s)",
		   pd2 ? "it succeeded" : strerror(errno));
	if (!qp)
		return;
	ret = to_init(qp);
	tap_result(ret != 0, "modify_qp after the delete fails (%s)", strerror(ret));
	/* libhfi1verbs posts receives into the mapped ring, which outlives the QP: any result. */
	ret = ibv_post_recv(qp, &rwr, &bad_rwr);
	tap_result(1, "post_recv after the delete returns (%s)", ret ? strerror(ret) : "queued");
	/* The CQ's ring is mapped too, and nothing will ever complete on it. */
	ret = ibv_poll_cq(cq, 1, &wc);
	tap_result(ret <= 0, "poll_cq after the delete finds no completion (%d)", ret);
}

int main(int argc, char **argv)
{
	static char buf[4096];
	struct ibv_qp_init_attr ia = {
		.qp_type = IBV_QPT_RC,
		.cap = { .max_send_wr = 4, .max_recv_wr = 4, .max_send_sge = 1, .max_recv_sge = 1 },
	};
	int rings = !(argc == 3 && !strcmp(argv[1], "--no-rings"));
	struct ibv_context *ctx;
	struct ibv_cq *cq = NULL;
	struct ibv_qp *qp = NULL;
	struct ibv_pd *pd;
	struct ibv_mr *mr;
	int ok;
	char c;

	if (argc != 2 && rings) {
		fprintf(stderr, "usage: link_hold [--no-rings] DEVICE\n");
		return 2;
	}
	printf("TAP version 13\n");
	ctx = open_device_named(argv[argc - 1]);
	pd = ctx ? ibv_alloc_pd(ctx) : NULL;
	mr = pd ? ibv_reg_mr(pd, buf, sizeof(buf), IBV_ACCESS_LOCAL_WRITE) : NULL;
	ok = mr != NULL;
	if (ok && rings) {
		cq = ibv_create_cq(ctx, 8, NULL, NULL, 0);
		ia.send_cq = cq;
		ia.recv_cq = cq;
		qp = cq ? ibv_create_qp(pd, &ia) : NULL;
		ok = qp && !to_init(qp);
	}
	tap_result(ok, "open %s with a PD and an MR%s (%s)", argv[argc - 1],
		   rings ? ", a CQ and an RC QP in INIT" : "", ok ? "ok" : strerror(errno));
	if (!ok)
		return tap_finish();
	printf("# holding\n");
	fflush(stdout);
	while (read(0, &c, 1) > 0)
		;
	after_delete(ctx, cq, qp);
	/* The objects are gone with the device; rdma-core frees its side of each. */
	if (qp)
		ibv_destroy_qp(qp);
	if (cq)
		ibv_destroy_cq(cq);
	ibv_dereg_mr(mr);
	ibv_dealloc_pd(pd);
	tap_result(ibv_close_device(ctx) == 0, "close the device");
	return tap_finish();
}
