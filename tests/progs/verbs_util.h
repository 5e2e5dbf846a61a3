/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * Small helpers shared by the test programs: TAP output, opening rvt_loop0, and moving QPs
 * through their states. Header-only so that each program is one compile.
 */
#ifndef RDMAVT_RS_VERBS_UTIL_H
#define RDMAVT_RS_VERBS_UTIL_H

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <infiniband/verbs.h>

#define TEST_DEVICE "rvt_loop0"

static int tap_n, tap_failed;

static inline void tap_result(int ok, const char *fmt, ...)
{
	va_list ap;

	tap_n++;
	if (!ok)
		tap_failed++;
	printf("%sok %d ", ok ? "" : "not ", tap_n);
	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
	printf("\n");
	fflush(stdout);
}

static inline void tap_skip(const char *name, const char *reason)
{
	tap_n++;
	printf("ok %d %s # SKIP %s\n", tap_n, name, reason);
	fflush(stdout);
}

/* A check of an errno-style result (0 or a positive errno) against the one expected. */
static inline void expect_errno(int got, int want, const char *what)
{
	tap_result(got == want, "%s: %s (expected %s)", what, got ? strerror(got) : "success",
		   want ? strerror(want) : "success");
}

static inline int tap_finish(void)
{
	printf("1..%d\n", tap_n);
	return tap_failed ? 1 : 0;
}

/* The device called NAME, opened; NULL if there is none or it does not open. */
static inline struct ibv_context *open_device_named(const char *name)
{
	struct ibv_device **list = ibv_get_device_list(NULL);
	struct ibv_context *ctx = NULL;
	int i;

	for (i = 0; list && list[i]; i++)
		if (!strcmp(ibv_get_device_name(list[i]), name))
			ctx = ibv_open_device(list[i]);
	if (list)
		ibv_free_device_list(list);
	return ctx;
}

static inline struct ibv_context *open_test_device(void)
{
	return open_device_named(TEST_DEVICE);
}

/* RESET -> INIT -> RTR -> RTS of a UD QP on port 1; 0 or the errno of the failing step. */
static inline int ud_to_rts(struct ibv_qp *qp, uint32_t qkey)
{
	struct ibv_qp_attr a = {
		.qp_state = IBV_QPS_INIT, .pkey_index = 0, .port_num = 1, .qkey = qkey,
	};
	int ret;

	ret = ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_QKEY);
	if (ret)
		return ret;
	a.qp_state = IBV_QPS_RTR;
	ret = ibv_modify_qp(qp, &a, IBV_QP_STATE);
	if (ret)
		return ret;
	a.qp_state = IBV_QPS_RTS;
	a.sq_psn = 0;
	return ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_SQ_PSN);
}

/*
 * One step of an RC or UC QP towards RTS (TO: INIT, RTR or RTS), connected to DEST on port 1 at
 * LID, with the attributes the tests use: no retries, so that a send to an empty receive ring
 * fails at once. 0 or the errno of the modify.
 */
static inline int conn_step(struct ibv_qp *qp, enum ibv_qp_state to, uint32_t dest, uint16_t lid)
{
	int rc = qp->qp_type == IBV_QPT_RC;
	struct ibv_qp_attr a = { .qp_state = to };
	int mask = IBV_QP_STATE;

	switch (to) {
	case IBV_QPS_INIT:
		a.port_num = 1;
		a.qp_access_flags = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE;
		mask |= IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_ACCESS_FLAGS;
		break;
	case IBV_QPS_RTR:
		a.path_mtu = IBV_MTU_1024;
		a.dest_qp_num = dest;
		a.ah_attr.dlid = lid;
		a.ah_attr.port_num = 1;
		mask |= IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN | IBV_QP_RQ_PSN;
		if (rc) {
			a.max_dest_rd_atomic = 1;
			a.min_rnr_timer = 1;
			mask |= IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER;
		}
		break;
	case IBV_QPS_RTS:
		mask |= IBV_QP_SQ_PSN;
		if (rc) {
			a.timeout = 14;
			a.max_rd_atomic = 1;
			mask |= IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT | IBV_QP_RNR_RETRY |
				IBV_QP_MAX_QP_RD_ATOMIC;
		}
		break;
	default:
		return EINVAL;
	}
	return ibv_modify_qp(qp, &a, mask);
}

/* RESET -> INIT -> RTR -> RTS of an RC or UC QP (conn_step); 0 or the first errno. */
static inline int conn_to_rts(struct ibv_qp *qp, uint32_t dest, uint16_t lid)
{
	return conn_step(qp, IBV_QPS_INIT, dest, lid) ?:
	       conn_step(qp, IBV_QPS_RTR, dest, lid) ?:
	       conn_step(qp, IBV_QPS_RTS, dest, lid);
}

/* The state of a QP, or -1 if the query fails. */
static inline int qp_state(struct ibv_qp *qp)
{
	struct ibv_qp_attr a;
	struct ibv_qp_init_attr ia;

	if (ibv_query_qp(qp, &a, IBV_QP_STATE, &ia))
		return -1;
	return a.qp_state;
}

#endif /* RDMAVT_RS_VERBS_UTIL_H */
