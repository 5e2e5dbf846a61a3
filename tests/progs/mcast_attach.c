// SPDX-License-Identifier: GPL-2.0-only
/*
 * Attaches UD QPs of rvt_loop0 to multicast groups and detaches them through libibverbs,
 * checking each errno against what the C rdmavt (with ib_core and uverbs in front) returns:
 *
 *   - a QP in RESET: EINVAL (--reset: the C rdmavt reads rdi->ports[-1] first, a KASAN
 *     report, so the wrapper passes this only on rdmavt-rs);
 *   - attach: success; the same attach again: success (uverbs answers it);
 *   - the same MGID with another MLID: EINVAL; a unicast GID: EINVAL (ib_core);
 *   - max_mcast_qp_attach QPs on one group, then one more: ENOMEM;
 *   - detach: success; detach of a QP not attached: EINVAL;
 *   - destroying a QP that is still attached: EBUSY (uverbs); closing the device file
 *     detaches and destroys them (kmemleak checks the freeing).
 *
 * Prints TAP.
 */
#include "verbs_util.h"

#define QKEY 0x11111111
#define NQPS 20

static union ibv_gid mgid(uint8_t last)
{
	union ibv_gid g = { .raw = { 0xff, 0x12, 0x40, 0x1b } };

	g.raw[15] = last;
	return g;
}

static struct ibv_qp *ud_qp(struct ibv_pd *pd, struct ibv_cq *cq)
{
	struct ibv_qp_init_attr ia = {
		.send_cq = cq, .recv_cq = cq, .qp_type = IBV_QPT_UD,
		.cap = { .max_send_wr = 2, .max_recv_wr = 2, .max_send_sge = 1, .max_recv_sge = 1 },
	};

	return ibv_create_qp(pd, &ia);
}

static void reset_qp_checks(struct ibv_qp *qp)
{
	union ibv_gid g = mgid(1);

	expect_errno(ibv_attach_mcast(qp, &g, 0xc001), EINVAL, "attach of a QP in RESET");
}

static void limit_checks(struct ibv_pd *pd, struct ibv_cq *cq, int max_per_group)
{
	struct ibv_qp *qps[NQPS] = { 0 };
	union ibv_gid g = mgid(3);
	int i, ret = 0, n = max_per_group + 1;

	if (n > NQPS) {
		tap_skip("max_mcast_qp_attach", "the device allows more QPs per group than we create");
		return;
	}
	for (i = 0; i < n && !ret; i++) {
		qps[i] = ud_qp(pd, cq);
		ret = qps[i] ? ud_to_rts(qps[i], QKEY) : errno;
		if (!ret && i < max_per_group)
			ret = ibv_attach_mcast(qps[i], &g, 0xc003);
	}
	tap_result(!ret, "%d QPs attached to one group (%s)", max_per_group,
		   ret ? strerror(ret) : "ok");
	if (!ret)
		expect_errno(ibv_attach_mcast(qps[max_per_group], &g, 0xc003), ENOMEM,
			     "one QP over max_mcast_qp_attach");
	/* Half are detached by hand; the rest go with the device file (uverbs detaches them). */
	for (i = 0, ret = 0; i < max_per_group / 2 && qps[i]; i++)
		ret |= ibv_detach_mcast(qps[i], &g, 0xc003);
	expect_errno(ret, 0, "detach half of the group");
	for (i = 0, ret = 0; i < max_per_group / 2 && qps[i]; i++)
		ret |= ibv_destroy_qp(qps[i]);
	expect_errno(ret, 0, "destroy the detached QPs");
	if (qps[max_per_group - 1])
		expect_errno(ibv_destroy_qp(qps[max_per_group - 1]), EBUSY,
			     "destroy a QP still attached");
}

static void attach_checks(struct ibv_pd *pd, struct ibv_cq *cq, struct ibv_qp *a)
{
	struct ibv_qp *b = ud_qp(pd, cq);
	union ibv_gid g = mgid(2), uni = { .raw = { 0xfe, 0x80 } };

	expect_errno(ibv_attach_mcast(a, &g, 0xc002), 0, "attach");
	expect_errno(ibv_attach_mcast(a, &g, 0xc002), 0, "the same attach again");
	expect_errno(ibv_attach_mcast(a, &g, 0xc00f), EINVAL, "the same MGID with another MLID");
	expect_errno(ibv_attach_mcast(a, &uni, 0xc002), EINVAL, "a unicast GID");
	if (!b || ud_to_rts(b, QKEY)) {
		tap_result(0, "a second UD QP to RTS");
		return;
	}
	expect_errno(ibv_attach_mcast(b, &g, 0xc002), 0, "a second QP joins the group");
	expect_errno(ibv_detach_mcast(a, &g, 0xc002), 0, "detach the first");
	expect_errno(ibv_detach_mcast(a, &g, 0xc002), EINVAL, "detach the first again");
	expect_errno(ibv_attach_mcast(b, &g, 0xc00f), EINVAL, "another MLID while the group lives");
	expect_errno(ibv_detach_mcast(b, &g, 0xc002), 0, "detach the last member");
	/* The group is gone: the MGID can come back with another MLID. */
	expect_errno(ibv_attach_mcast(b, &g, 0xc00f), 0, "the MGID again with another MLID");
	expect_errno(ibv_detach_mcast(b, &g, 0xc00f), 0, "and detached");
	ibv_destroy_qp(b);
}

int main(int argc, char **argv)
{
	int reset = argc > 1 && !strcmp(argv[1], "--reset");
	struct ibv_context *ctx = open_test_device();
	struct ibv_device_attr da;
	struct ibv_pd *pd;
	struct ibv_cq *cq;
	struct ibv_qp *qp;

	printf("TAP version 13\n");
	if (!ctx || ibv_query_device(ctx, &da)) {
		tap_result(0, "open %s", TEST_DEVICE);
		return tap_finish();
	}
	pd = ibv_alloc_pd(ctx);
	cq = pd ? ibv_create_cq(ctx, 64, NULL, NULL, 0) : NULL;
	if (!cq) {
		tap_result(0, "PD and CQ on %s: %s", TEST_DEVICE, strerror(errno));
		return tap_finish();
	}
	qp = ud_qp(pd, cq);
	tap_result(qp != NULL, "create a UD QP (%s)", qp ? "ok" : strerror(errno));
	if (!qp)
		return tap_finish();
	if (reset)
		reset_qp_checks(qp);
	else
		tap_skip("attach of a QP in RESET", "C rdmavt reads rdi->ports[-1] there (KASAN)");
	expect_errno(ud_to_rts(qp, QKEY), 0, "UD QP to RTS");
	attach_checks(pd, cq, qp);
	limit_checks(pd, cq, da.max_mcast_qp_attach);
	expect_errno(ibv_destroy_qp(qp), 0, "destroy the first QP");
	/* The CQ and PD still have attached QPs: closing the device file frees them all. */
	expect_errno(ibv_close_device(ctx), 0, "close the device with QPs still attached");
	return tap_finish();
}
