// SPDX-License-Identifier: GPL-2.0-only
/*
 * A fail-nth sweep over the verbs that allocate in the kernel (tests/kselftest/fail_nth.sh):
 * for each verb, N = 1, 2, 3, ... makes the Nth kmalloc or page allocation of this thread fail
 * (/proc/thread-self/fail-nth, CONFIG_FAULT_INJECTION), until the call runs without reaching
 * an Nth allocation, which ends the sweep. A call that met an injected failure must either
 * fail with an errno and leave nothing behind (the object does not exist, a modified QP keeps
 * its state, a resized CQ or SRQ keeps its size), or succeed with an object that works: a
 * failed allocation that something retries (a page fault) is not an error. Without an
 * injected failure the call must succeed. What a failed call allocated must be freed:
 * kmemleak, after the test, says whether it was. One point per verb, with its counts.
 *
 *   fail_nth [VERB...] [-x VERB]...    the verbs by name (default: all), e.g. fail_nth
 *                                      create_qp_rc; -x leaves one out
 */
#include <fcntl.h>
#include <poll.h>
#include <unistd.h>
#include "verbs_util.h"

#define QKEY 0x11111111
#define MLID 0xc001
/* No verb makes this many allocations: a sweep that gets here does not end. */
#define MAX_NTH 2000

static struct ibv_device *dev;
static struct ibv_context *ctx;
static struct ibv_pd *pd;
static struct ibv_cq *cq;
static uint16_t lid;
static char buf[4 * 4096] __attribute__((aligned(4096)));
static int nth_fd = -1;

/* The objects of one attempt: what `prepare` made and what `call` made. */
struct objs {
	struct ibv_context *ctx;
	struct ibv_pd *pd;
	struct ibv_ah *ah;
	struct ibv_mr *mr;
	struct ibv_cq *cq;
	struct ibv_qp *qp;
	struct ibv_srq *srq;
	int attached;
	enum ibv_qp_state from, to;
};

/*
 * A verb under the sweep. prepare: what the call needs, made without injection (0 or an
 * errno); call: the verb, 0 or an errno; check: after a call that failed, that nothing
 * changed (NULL: the object's absence says it); use: after a call that succeeded, that the
 * object works (NULL: nothing to check beyond success).
 */
struct verb {
	const char *name;
	int (*prepare)(struct objs *o);
	int (*call)(struct objs *o);
	int (*check)(struct objs *o);
	int (*use)(struct objs *o);
	/* The modify steps': the QP's state before and the one asked for. */
	enum ibv_qp_state from, to;
};

static void nth_set(unsigned int n)
{
	char s[16];
	int len = snprintf(s, sizeof(s), "%u", n);

	if (pwrite(nth_fd, s, len, 0) != len) {
		perror("fail-nth");
		exit(2);
	}
}

/* What is left of the count: 0 once the Nth allocation has failed. */
static unsigned int nth_left(void)
{
	char s[16] = "";

	if (pread(nth_fd, s, sizeof(s) - 1, 0) <= 0) {
		perror("fail-nth");
		exit(2);
	}
	return strtoul(s, NULL, 10);
}

static int err_of(const void *obj)
{
	return obj ? 0 : (errno ?: EIO);
}

static int new_cq(struct objs *o, int cqe)
{
	o->cq = ibv_create_cq(ctx, cqe, NULL, NULL, 0);
	return err_of(o->cq);
}

static int new_qp(struct objs *o, enum ibv_qp_type type)
{
	struct ibv_qp_init_attr ia = {
		.send_cq = cq, .recv_cq = cq, .qp_type = type,
		.cap = { .max_send_wr = 16, .max_recv_wr = 16, .max_send_sge = 2,
			 .max_recv_sge = 2 },
	};

	o->qp = ibv_create_qp(pd, &ia);
	return err_of(o->qp);
}

static int new_ud_qp(struct objs *o)
{
	return new_qp(o, IBV_QPT_UD) ?: ud_to_rts(o->qp, QKEY);
}

static union ibv_gid mgid(void)
{
	return (union ibv_gid){ .raw = { 0xff, 0x12, 0x40, 0x1b, [15] = 1 } };
}

/* --- the verbs ------------------------------------------------------------------------- */

static int open_device(struct objs *o)
{
	o->ctx = ibv_open_device(dev);
	return err_of(o->ctx);
}

static int alloc_pd(struct objs *o)
{
	o->pd = ibv_alloc_pd(ctx);
	return err_of(o->pd);
}

static int create_ah(struct objs *o)
{
	struct ibv_ah_attr a = { .dlid = lid, .port_num = 1 };

	o->ah = ibv_create_ah(pd, &a);
	return err_of(o->ah);
}

static int reg_mr(struct objs *o)
{
	o->mr = ibv_reg_mr(pd, buf, sizeof(buf), IBV_ACCESS_LOCAL_WRITE |
			   IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ);
	return err_of(o->mr);
}

static int create_cq(struct objs *o)
{
	return new_cq(o, 64);
}

static int small_cq(struct objs *o)
{
	return new_cq(o, 16);
}

static int resize_cq(struct objs *o)
{
	return ibv_resize_cq(o->cq, 256);
}

/*
 * After a failed resize the CQ has its old size and its old ring, which still polls; or the
 * new size: libhfi1verbs maps the new ring after the kernel has resized, and a failure of that
 * mmap fails the call too, leaving the provider no ring to poll.
 */
static int cq_kept(struct objs *o)
{
	struct ibv_wc wc;

	if (o->cq->cqe >= 256)
		return 0;
	return o->cq->cqe >= 16 && ibv_poll_cq(o->cq, 1, &wc) == 0 ? 0 : EIO;
}

static int cq_resized(struct objs *o)
{
	struct ibv_wc wc;

	return o->cq->cqe >= 256 && ibv_poll_cq(o->cq, 1, &wc) == 0 ? 0 : EIO;
}

static int create_qp_rc(struct objs *o)
{
	return new_qp(o, IBV_QPT_RC);
}

static int create_qp_uc(struct objs *o)
{
	return new_qp(o, IBV_QPT_UC);
}

static int create_qp_ud(struct objs *o)
{
	return new_qp(o, IBV_QPT_UD);
}

/*
 * The modify steps, of an RC QP connected to itself: from o->from (where prepare brings it) to
 * o->to. The connecting steps (INIT, RTR, RTS) are conn_step's; ERR and RESET take no more.
 */
static int step(struct objs *o, enum ibv_qp_state to)
{
	struct ibv_qp_attr a = { .qp_state = to };

	if (to == IBV_QPS_INIT || to == IBV_QPS_RTR || to == IBV_QPS_RTS)
		return conn_step(o->qp, to, o->qp->qp_num, lid);
	return ibv_modify_qp(o->qp, &a, IBV_QP_STATE);
}

/* An RC QP in o->from, through the states an RC QP takes on its way there. */
static int rc_in_from(struct objs *o)
{
	static const enum ibv_qp_state path[] = {
		IBV_QPS_INIT, IBV_QPS_RTR, IBV_QPS_RTS, IBV_QPS_ERR,
	};
	int ret = new_qp(o, IBV_QPT_RC);
	size_t i;

	for (i = 0; !ret && o->from != IBV_QPS_RESET && i < sizeof(path) / sizeof(path[0]); i++) {
		ret = step(o, path[i]);
		if (path[i] == o->from)
			break;
	}
	return ret;
}

static int modify(struct objs *o)
{
	return step(o, o->to);
}

static int in_from(struct objs *o)
{
	return qp_state(o->qp) == (int)o->from ? 0 : EIO;
}

static int in_to(struct objs *o)
{
	return qp_state(o->qp) == (int)o->to ? 0 : EIO;
}

static int create_srq(struct objs *o)
{
	struct ibv_srq_init_attr ia = { .attr = { .max_wr = 16, .max_sge = 2 } };

	o->srq = ibv_create_srq(pd, &ia);
	return err_of(o->srq);
}

static int resize_srq(struct objs *o)
{
	struct ibv_srq_attr a = { .max_wr = 256 };

	return ibv_modify_srq(o->srq, &a, IBV_SRQ_MAX_WR);
}

static int srq_max_wr(struct objs *o, int at_least, int below)
{
	struct ibv_srq_attr a;

	if (ibv_query_srq(o->srq, &a))
		return EIO;
	return (int)a.max_wr >= at_least && (int)a.max_wr < below ? 0 : EIO;
}

/* As a CQ's (cq_kept): the old size or the new one, as the kernel reports it. */
static int srq_kept(struct objs *o)
{
	return !srq_max_wr(o, 16, 256) || !srq_max_wr(o, 256, 1 << 30) ? 0 : EIO;
}

static int srq_resized(struct objs *o)
{
	return srq_max_wr(o, 256, 1 << 30);
}

static int attach_mcast(struct objs *o)
{
	union ibv_gid g = mgid();
	int ret = ibv_attach_mcast(o->qp, &g, MLID);

	o->attached = !ret;
	return ret;
}

/* A UD send to the QP itself (no receive posted: the datagram is dropped), then its completion. */
static int ud_post_send(struct objs *o)
{
	struct ibv_sge sge = { (uintptr_t)buf, 64, o->mr->lkey };
	struct ibv_send_wr wr = {
		.wr_id = 7, .sg_list = &sge, .num_sge = 1, .opcode = IBV_WR_SEND,
		.send_flags = IBV_SEND_SIGNALED,
		.wr.ud = { .ah = o->ah, .remote_qpn = o->qp->qp_num, .remote_qkey = QKEY },
	}, *bad;

	return ibv_post_send(o->qp, &wr, &bad);
}

static int ud_sender(struct objs *o)
{
	return new_ud_qp(o) ?: create_ah(o) ?: reg_mr(o);
}

/* The send's completion, and no other. */
static int send_completed(struct objs *o)
{
	struct ibv_wc wc;
	int i, n = 0;

	(void)o;
	for (i = 0; i < 5000 && !n; i++) {
		n = ibv_poll_cq(cq, 1, &wc);
		if (!n)
			usleep(1000);
	}
	return n == 1 && wc.wr_id == 7 && wc.status == IBV_WC_SUCCESS ? 0 : EIO;
}

/* Nothing was sent: no completion arrives. */
static int nothing_sent(struct objs *o)
{
	struct ibv_wc wc;

	(void)o;
	usleep(20000);
	return ibv_poll_cq(cq, 1, &wc) == 0 ? 0 : EIO;
}

#define MODIFY(f, t) { .name = "modify_qp_" #f "_to_" #t, .prepare = rc_in_from, .call = modify, \
			  .check = in_from, .use = in_to, .from = IBV_QPS_##f, .to = IBV_QPS_##t }

static const struct verb verbs[] = {
	{ .name = "open_device", .call = open_device },
	{ .name = "alloc_pd", .call = alloc_pd },
	{ .name = "create_ah", .call = create_ah },
	{ .name = "reg_mr", .call = reg_mr },
	{ .name = "create_cq", .call = create_cq },
	{ .name = "resize_cq", .prepare = small_cq, .call = resize_cq, .check = cq_kept,
	  .use = cq_resized },
	{ .name = "create_qp_rc", .call = create_qp_rc },
	{ .name = "create_qp_uc", .call = create_qp_uc },
	{ .name = "create_qp_ud", .call = create_qp_ud },
	MODIFY(RESET, INIT),
	MODIFY(INIT, RTR),
	MODIFY(RTR, RTS),
	MODIFY(RTS, ERR),
	MODIFY(ERR, RESET),
	{ .name = "create_srq", .call = create_srq },
	{ .name = "resize_srq", .prepare = create_srq, .call = resize_srq, .check = srq_kept,
	  .use = srq_resized },
	{ .name = "attach_mcast", .prepare = new_ud_qp, .call = attach_mcast },
	{ .name = "post_send_ud", .prepare = ud_sender, .call = ud_post_send, .check = nothing_sent,
	  .use = send_completed },
};

/* The first error of several steps: each runs whatever the ones before gave. */
static void first_err(int *ret, int err)
{
	if (!*ret)
		*ret = err;
}

/* Everything an attempt made, in the reverse order; 0 or the first errno. */
static int release(struct objs *o)
{
	union ibv_gid g = mgid();
	int ret = 0;

	if (o->attached)
		first_err(&ret, ibv_detach_mcast(o->qp, &g, MLID));
	if (o->qp)
		first_err(&ret, ibv_destroy_qp(o->qp));
	if (o->srq)
		first_err(&ret, ibv_destroy_srq(o->srq));
	if (o->cq)
		first_err(&ret, ibv_destroy_cq(o->cq));
	if (o->mr)
		first_err(&ret, ibv_dereg_mr(o->mr));
	if (o->ah)
		first_err(&ret, ibv_destroy_ah(o->ah));
	if (o->pd)
		first_err(&ret, ibv_dealloc_pd(o->pd));
	if (o->ctx)
		first_err(&ret, ibv_close_device(o->ctx));
	memset(o, 0, sizeof(*o));
	return ret;
}

/* The result of one attempt with the Nth allocation failing. */
enum outcome { DONE, FAILED, ABSORBED, WRONG };

static enum outcome attempt(const struct verb *v, unsigned int n, char *why, size_t len)
{
	struct objs o = { .from = v->from, .to = v->to };
	enum outcome out;
	unsigned int left;
	int ret;

	if (v->prepare && (ret = v->prepare(&o))) {
		snprintf(why, len, "preparing: %s", strerror(ret));
		release(&o);
		return WRONG;
	}
	nth_set(n);
	ret = v->call(&o);
	left = nth_left();
	nth_set(0);
	if (left && ret) {
		snprintf(why, len, "failed with no failure injected: %s", strerror(ret));
		out = WRONG;
	} else if (ret) {
		out = FAILED;
		if (v->check && v->check(&o)) {
			snprintf(why, len, "allocation %u: the failed call changed the object", n);
			out = WRONG;
		}
	} else {
		out = left ? DONE : ABSORBED;
		if (v->use && v->use(&o)) {
			snprintf(why, len, "allocation %u: the object does not work", n);
			out = WRONG;
		}
	}
	ret = release(&o);
	if (ret && out != WRONG) {
		snprintf(why, len, "allocation %u: freeing: %s", n, strerror(ret));
		out = WRONG;
	}
	return out;
}

static void sweep(const struct verb *v)
{
	unsigned int n, failed = 0, absorbed = 0;
	char why[160] = "";
	enum outcome out = WRONG;

	for (n = 1; n <= MAX_NTH; n++) {
		out = attempt(v, n, why, sizeof(why));
		if (out == FAILED)
			failed++;
		else if (out == ABSORBED)
			absorbed++;
		else
			break;
	}
	if (n > MAX_NTH)
		snprintf(why, sizeof(why), "still allocating after %d", MAX_NTH);
	tap_result(out == DONE, "%s: %u allocations failed in turn, %u gave an error, %u were "
		   "absorbed%s%s", v->name, n - 1, failed, absorbed, out == DONE ? "" : ": ",
		   out == DONE ? "" : why);
}

/* Whether the arguments ask for verb NAME: named, or all but those named after -x. */
static int wanted(const char *name, int argc, char **argv)
{
	int i, named = 0;

	for (i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "-x")) {
			if (++i < argc && !strcmp(argv[i], name))
				return 0;
			continue;
		}
		named = 1;
		if (!strcmp(argv[i], name))
			return 1;
	}
	return !named;
}

int main(int argc, char **argv)
{
	struct ibv_port_attr pa;
	struct objs base = { 0 };
	struct ibv_device **list;
	size_t i;

	nth_fd = open("/proc/thread-self/fail-nth", O_RDWR);
	if (nth_fd < 0) {
		tap_skip("fail_nth", "no /proc/thread-self/fail-nth (CONFIG_FAULT_INJECTION)");
		return tap_finish();
	}
	list = ibv_get_device_list(NULL);
	for (i = 0; list && list[i]; i++)
		if (!strcmp(ibv_get_device_name(list[i]), TEST_DEVICE))
			dev = list[i];
	ctx = dev ? ibv_open_device(dev) : NULL;
	pd = ctx ? ibv_alloc_pd(ctx) : NULL;
	cq = ctx ? ibv_create_cq(ctx, 256, NULL, NULL, 0) : NULL;
	if (!pd || !cq || ibv_query_port(ctx, 1, &pa)) {
		fprintf(stderr, "fail_nth: no %s\n", TEST_DEVICE);
		return 2;
	}
	lid = pa.lid;
	memset(buf, 0x5a, sizeof(buf));	/* its pages exist before any sweep */
	for (i = 0; i < sizeof(verbs) / sizeof(verbs[0]); i++)
		if (wanted(verbs[i].name, argc, argv))
			sweep(&verbs[i]);
	base.cq = cq;
	base.pd = pd;
	base.ctx = ctx;
	tap_result(!release(&base), "the device's base objects are freed");
	ibv_free_device_list(list);
	return tap_finish();
}
