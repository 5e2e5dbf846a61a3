// SPDX-License-Identifier: GPL-2.0-only
/*
 * QPs moved to the error state under traffic (tests/kselftest/stress.sh, "teardown under
 * traffic"). Each round connects six pairs of QPs on rvt_loop0 port 1 to each other, four RC
 * and two UC. One thread keeps posting signalled SENDs and RDMA WRITEs of random lengths (up
 * to 4 KiB, a header and a pattern) from each pair's sender to its receiver, keeps the
 * receiver's receive queue full, and polls; meanwhile a second thread, after short random
 * delays, moves with ibv_modify_qp to IBV_QPS_ERR
 *   - the receiver's QP of some pairs (a QP in error while its peer sends),
 *   - the sender's QP of others (its send queue busy, and posting to it goes on),
 * and leaves the rest alone; the kinds rotate over the pairs from round to round. Then the
 * posting stops, every QP is moved to the error state, the completions are drained, and
 * everything is destroyed. What must hold on any correct rdmavt (the C rdmavt's
 * rvt_ruc_loopback, loopback_qp_drop and rvt_error_qp do all of it):
 *   - every WR posted on either side completes exactly once, in the order of its queue;
 *   - a sender's statuses are IBV_WC_SUCCESS and IBV_WC_WR_FLUSH_ERR, and for RC with its
 *     receiver in error IBV_WC_RETRY_EXC_ERR (the loopback drops the packet, and the requester
 *     would time out: rdmavt shortcuts that to "retries exceeded"); a UC sender cannot know,
 *     its sends complete as sent. A receive is IBV_WC_SUCCESS or IBV_WC_WR_FLUSH_ERR;
 *   - once a queue has had an error completion, every later one is IBV_WC_WR_FLUSH_ERR; a WR
 *     posted after its own QP's move to ERR returned is flushed (or the post fails), and on RC
 *     one posted after the receiver's move returned never succeeds;
 *   - a successful receive holds exactly the bytes of a send posted (its length, header and
 *     pattern), in the order posted; on RC every send that succeeded was received; every
 *     RDMA WRITE target slot holds an intact message, on RC the last one that succeeded or a
 *     later one;
 *   - the QP moved reports IBV_QPS_ERR, an RC sender whose receiver was moved and that got
 *     IBV_WC_RETRY_EXC_ERR is in error too, and a QP whose peer was moved but that had no
 *     error itself (a UC sender, any receiver) is still in RTS;
 *   - the pairs left alone have only successes until the end, and every QP, CQ and MR is
 *     destroyed cleanly.
 * Receives are only posted to a QP before its move to the error state begins: libhfi1verbs
 * writes them into a mmap'ed ring, which the C rdmavt reads only when a packet arrives or the
 * QP enters the error state (rvt_error_qp flushes it once), so one posted later never
 * completes there.
 *
 *   qp_err_traffic [-r ROUNDS] [-t SECONDS] [-s SEED]
 *
 * runs ROUNDS rounds (20 by default) or, with -t, rounds until SECONDS have passed (3 at
 * least, so that each kind of pair meets each transport). Prints TAP points, one per kind of
 * pair, and a summary as a TAP comment; the diagnostics of failures go to stderr. The exit
 * status is 0 when every point passed, 1 when one failed, 2 when the set-up failed.
 */
#include <fcntl.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <time.h>
#include <unistd.h>
#include "verbs_util.h"

#define NPAIRS 6
#define NRC 4			/* pairs 0 to 3 are RC, 4 and 5 UC */
#define SQ_DEPTH 32
#define RQ_DEPTH 32
#define WSLOTS 8		/* RDMA WRITE target slots on each receiver */
#define SRECVS 4		/* receives posted on each sender, which nothing sends to */
#define MSG 4096
#define SMSG 64			/* the size of a sender's receive buffer */
#define CHAIN 8			/* WRs posted at once, at most: a chain goes to the workqueue */
#define MAXWR 32768		/* WRs a queue takes in one round, at most */
#define KILL_MS 40		/* the most a move to ERR waits after the previous one */
#define TAIL_MS 20		/* posting goes on this long after the last move */
#define DRAIN_S 10		/* the bound on waiting for the completions */
#define MAGIC 0x71e7e44dU

#define SEND_OFF 0
#define RECV_OFF (SEND_OFF + SQ_DEPTH * MSG)
#define WRITE_OFF (RECV_OFF + RQ_DEPTH * MSG)
#define SRECV_OFF (WRITE_OFF + WSLOTS * MSG)
#define BUF_SIZE (SRECV_OFF + SRECVS * SMSG)

/* What happens to a pair: the QP moved to ERR mid-traffic, if any. */
enum kind { RECEIVER, SENDER, NONE, KINDS };
static const char *const kind_name[] = { "receiver moved", "sender moved", "left alone" };

/* The work queues of a pair, as the top half of a wr_id. */
enum tag { T_SQ, T_RQ, T_SRQ };
static const char *const tag_name[] = { "sender's SQ", "receiver's RQ", "sender's RQ" };

enum op { OP_SEND = 1, OP_WRITE };

struct hdr {
	uint32_t magic, round, pair, seq, len;
};

struct queue {
	uint32_t posted, completed, next;
	int first_bad;		/* the status of the first error completion, or -1 */
	uint32_t first_bad_seq;
	uint8_t *seen;		/* completions of each WR */
};

struct pair {
	int idx, rc, kind;
	struct ibv_qp *qp[2];	/* the sender, the receiver */
	struct ibv_cq *cq;	/* both QPs' queues: there is room for every WR outstanding */
	struct ibv_mr *mr;
	uint8_t *buf;
	struct queue q[3];	/* by enum tag */
	uint32_t nsends;
	int64_t last_recv;	/* the sender's seq of the last message received */
	uint8_t *op, *ok, *delivered;	/* by SQ seq: enum op, completed with success, received */
	uint16_t *len;
	uint32_t after_self_err, after_peer_err;	/* the first SQ seq posted after the move */
	pthread_mutex_t lock;	/* receives are posted only before kill_started[1] */
	atomic_int kill_started[2], err_done[2];
	int failed;
};

static struct ibv_context *ctx;
static struct ibv_pd *pd;
static uint16_t lid;
static struct pair pairs[NPAIRS];
static int round_no;
static unsigned seed;
static atomic_int stop;

static pthread_mutex_t diag_lock = PTHREAD_MUTEX_INITIALIZER;
static int diags, failed_kind[KINDS], runs_kind[KINDS][2], teardown_failed;
/* Counted by the thread that posts and polls (the traffic thread, then the main thread). */
static unsigned long n_posted[3], n_sends, n_writes, n_refused, n_async;
static unsigned long n_status[3], n_other;	/* SUCCESS, WR_FLUSH_ERR, RETRY_EXC_ERR; other */
/* The moves to ERR mid-traffic, and those made with WRs outstanding on the sender. */
static atomic_int n_moves, n_busy_moves;

static void fail_pair(struct pair *p, const char *fmt, ...)
{
	va_list ap;

	pthread_mutex_lock(&diag_lock);
	if (!p->failed)
		failed_kind[p->kind]++;
	p->failed = 1;
	if (++diags <= 40) {
		fprintf(stderr, "qp_err_traffic: round %d, pair %d (%s, %s): ", round_no, p->idx,
			p->rc ? "RC" : "UC", kind_name[p->kind]);
		va_start(ap, fmt);
		vfprintf(stderr, fmt, ap);
		va_end(ap);
		fputc('\n', stderr);
	} else if (diags == 41) {
		fprintf(stderr, "qp_err_traffic: more failures, not shown\n");
	}
	pthread_mutex_unlock(&diag_lock);
}

static void fail_teardown(const char *fmt, ...)
{
	va_list ap;

	teardown_failed = 1;
	fprintf(stderr, "qp_err_traffic: round %d: ", round_no);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
}

static double now(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return t.tv_sec + t.tv_nsec / 1e9;
}

static uint8_t pattern(const struct pair *p, uint32_t seq, uint32_t i)
{
	return (uint8_t)(round_no * 131 + p->idx * 31 + seq * 7 + i + (i >> 8) * 13);
}

static void fill_msg(struct pair *p, uint8_t *m, uint32_t seq, uint32_t len)
{
	struct hdr h = { MAGIC, round_no, p->idx, seq, len };
	uint32_t i;

	memcpy(m, &h, sizeof(h));
	for (i = sizeof(h); i < len; i++)
		m[i] = pattern(p, seq, i);
}

/*
 * Whether M holds an intact message of this pair and round, of operation OP; its seq into
 * *SEQ. Says what is wrong otherwise.
 */
static int check_msg(struct pair *p, const uint8_t *m, int op, uint32_t *seq, const char *what)
{
	struct hdr h;
	uint32_t i;

	memcpy(&h, m, sizeof(h));
	if (h.magic != MAGIC || h.round != (uint32_t)round_no || h.pair != (uint32_t)p->idx ||
	    h.seq >= p->q[T_SQ].posted || p->op[h.seq] != op || h.len != p->len[h.seq]) {
		fail_pair(p, "%s: a bad header (magic %#x round %u pair %u seq %u len %u; %u WRs "
			  "posted)", what, h.magic, h.round, h.pair, h.seq, h.len,
			  p->q[T_SQ].posted);
		return 0;
	}
	for (i = sizeof(h); i < h.len; i++)
		if (m[i] != pattern(p, h.seq, i)) {
			fail_pair(p, "%s: message %u (%u bytes) differs at byte %u: %#x, not %#x",
				  what, h.seq, h.len, i, m[i], pattern(p, h.seq, i));
			return 0;
		}
	*seq = h.seq;
	return 1;
}

static const char *st(int status)
{
	return ibv_wc_status_str(status);
}

static void on_wc(struct pair *p, const struct ibv_wc *wc)
{
	uint32_t tag = wc->wr_id >> 32, seq = (uint32_t)wc->wr_id, s;
	int status = wc->status, side = tag == T_RQ;
	struct queue *q;

	if (status == IBV_WC_SUCCESS)
		n_status[0]++;
	else if (status == IBV_WC_WR_FLUSH_ERR)
		n_status[1]++;
	else if (status == IBV_WC_RETRY_EXC_ERR)
		n_status[2]++;
	else
		n_other++;

	if (tag > T_SRQ) {
		fail_pair(p, "a completion with a wr_id never posted: %#llx (%s)",
			  (unsigned long long)wc->wr_id, st(status));
		return;
	}
	q = &p->q[tag];
	if (wc->qp_num != p->qp[side]->qp_num)
		fail_pair(p, "%s WR %u: completed on QP %#x, posted on %#x", tag_name[tag], seq,
			  wc->qp_num, p->qp[side]->qp_num);
	if (seq >= q->posted) {
		fail_pair(p, "%s WR %u: completed (%s), never posted (%u posted)", tag_name[tag],
			  seq, st(status), q->posted);
		return;
	}
	if (q->seen[seq]++) {
		fail_pair(p, "%s WR %u: completed twice (now %s)", tag_name[tag], seq, st(status));
		return;
	}
	q->completed++;
	if (seq != q->next)
		fail_pair(p, "%s WR %u: completed out of order (%s), WR %u expected", tag_name[tag],
			  seq, st(status), q->next);
	q->next = seq + 1;

	/* The statuses allowed, and only flushes after an error. */
	if (q->first_bad >= 0 && status != IBV_WC_WR_FLUSH_ERR)
		fail_pair(p, "%s WR %u: %s after %s on WR %u", tag_name[tag], seq, st(status),
			  st(q->first_bad), q->first_bad_seq);
	else if (tag == T_SQ) {
		if (status != IBV_WC_SUCCESS && status != IBV_WC_WR_FLUSH_ERR &&
		    !(status == IBV_WC_RETRY_EXC_ERR && p->rc && p->kind == RECEIVER))
			fail_pair(p, "%s WR %u (%s): %s", tag_name[tag], seq,
				  p->op[seq] == OP_SEND ? "SEND" : "RDMA WRITE", st(status));
		else if (seq >= p->after_self_err && status != IBV_WC_WR_FLUSH_ERR)
			fail_pair(p, "%s WR %u, posted after the sender's move to ERR: %s, not "
				  "flushed", tag_name[tag], seq, st(status));
		else if (p->rc && seq >= p->after_peer_err && status == IBV_WC_SUCCESS)
			fail_pair(p, "%s WR %u, posted after the receiver's move to ERR: %s",
				  tag_name[tag], seq, st(status));
	} else if (status != IBV_WC_WR_FLUSH_ERR && (tag == T_SRQ || status != IBV_WC_SUCCESS)) {
		fail_pair(p, "%s WR %u: %s", tag_name[tag], seq, st(status));
	}
	if (status != IBV_WC_SUCCESS && q->first_bad < 0) {
		q->first_bad = status;
		q->first_bad_seq = seq;
	}
	if (status != IBV_WC_SUCCESS)
		return;

	if (tag == T_SQ) {
		p->ok[seq] = 1;
		if (wc->opcode != (p->op[seq] == OP_SEND ? IBV_WC_SEND : IBV_WC_RDMA_WRITE))
			fail_pair(p, "%s WR %u: opcode %d", tag_name[tag], seq, wc->opcode);
		return;
	}
	/* A receive: the message, whole, in the order sent. */
	if (wc->opcode != IBV_WC_RECV)
		fail_pair(p, "receive %u: opcode %d", seq, wc->opcode);
	if (!check_msg(p, p->buf + RECV_OFF + (seq % RQ_DEPTH) * MSG, OP_SEND, &s, "a receive"))
		return;
	if (wc->byte_len != p->len[s])
		fail_pair(p, "receive %u: byte_len %u, message %u has %u", seq, wc->byte_len, s,
			  p->len[s]);
	if ((int64_t)s <= p->last_recv)
		fail_pair(p, "receive %u: message %u after message %lld", seq, s,
			  (long long)p->last_recv);
	p->last_recv = s;
	p->delivered[s] = 1;
}

static int poll_pair(struct pair *p)
{
	struct ibv_wc wc[16];
	int n, i, total = 0;

	while ((n = ibv_poll_cq(p->cq, 16, wc)) > 0) {
		for (i = 0; i < n; i++)
			on_wc(p, &wc[i]);
		total += n;
	}
	if (n < 0)
		fail_pair(p, "ibv_poll_cq: %d", n);
	return total;
}

/* Keeps the receiver's receive queue full, until its move to ERR begins. */
static void post_recvs(struct pair *p)
{
	struct ibv_recv_wr wr[CHAIN], *bad;
	struct ibv_sge sge[CHAIN];
	struct queue *q = &p->q[T_RQ];
	int n, ret;

	pthread_mutex_lock(&p->lock);
	while (!atomic_load(&p->kill_started[1]) && q->posted - q->completed < RQ_DEPTH &&
	       q->posted < MAXWR) {
		for (n = 0; n < CHAIN && q->posted + n - q->completed < RQ_DEPTH &&
			    q->posted + n < MAXWR; n++) {
			uint32_t seq = q->posted + n;

			sge[n] = (struct ibv_sge){ (uintptr_t)(p->buf + RECV_OFF +
							       (seq % RQ_DEPTH) * MSG),
						   MSG, p->mr->lkey };
			wr[n] = (struct ibv_recv_wr){ .wr_id = (uint64_t)T_RQ << 32 | seq,
						      .sg_list = &sge[n], .num_sge = 1,
						      .next = &wr[n + 1] };
		}
		wr[n - 1].next = NULL;
		ret = ibv_post_recv(p->qp[1], wr, &bad);
		if (ret) {
			q->posted += bad - wr;
			fail_pair(p, "ibv_post_recv on the receiver (in RTS): %s", strerror(ret));
			break;
		}
		q->posted += n;
		n_posted[T_RQ] += n;
	}
	pthread_mutex_unlock(&p->lock);
}

/*
 * Posts a chain of SENDs and RDMA WRITEs. A SEND is posted only when a receive waits for it:
 * RC with no RNR retries would fail it otherwise. That credit no longer counts once either
 * QP's move to ERR has returned: what is sent then is dropped or flushed.
 */
static void post_sends(struct pair *p, unsigned *rs)
{
	struct ibv_send_wr wr[CHAIN], *bad;
	struct ibv_sge sge[CHAIN];
	struct queue *q = &p->q[T_SQ];
	int self_err = atomic_load(&p->err_done[0]), peer_err = atomic_load(&p->err_done[1]);
	int n, want = 1 + rand_r(rs) % CHAIN, sends = 0, ret, i;

	for (n = 0; n < want && q->posted + n - q->completed < SQ_DEPTH && q->posted + n < MAXWR;
	     n++) {
		uint32_t seq = q->posted + n, len;
		uint8_t *m = p->buf + SEND_OFF + (seq % SQ_DEPTH) * MSG;
		int send = rand_r(rs) % 3 &&
			   (p->nsends + sends < p->q[T_RQ].posted || self_err || peer_err);

		len = rand_r(rs) % 2 ? sizeof(struct hdr) + rand_r(rs) % 256 :
				       sizeof(struct hdr) + rand_r(rs) % (MSG - sizeof(struct hdr) + 1);
		fill_msg(p, m, seq, len);
		p->op[seq] = send ? OP_SEND : OP_WRITE;
		p->len[seq] = len;
		p->ok[seq] = 0;
		p->delivered[seq] = 0;
		sends += send;
		sge[n] = (struct ibv_sge){ (uintptr_t)m, len, p->mr->lkey };
		wr[n] = (struct ibv_send_wr){
			.wr_id = (uint64_t)T_SQ << 32 | seq, .next = &wr[n + 1], .sg_list = &sge[n],
			.num_sge = 1, .opcode = send ? IBV_WR_SEND : IBV_WR_RDMA_WRITE,
			.send_flags = IBV_SEND_SIGNALED,
		};
		if (!send) {
			wr[n].wr.rdma.remote_addr =
				(uintptr_t)(p->buf + WRITE_OFF + (seq % WSLOTS) * MSG);
			wr[n].wr.rdma.rkey = p->mr->rkey;
		}
	}
	if (!n)
		return;
	wr[n - 1].next = NULL;
	ret = ibv_post_send(p->qp[0], wr, &bad);
	if (ret) {
		i = bad - wr;
		n_refused += n - i;
		/* Refused: fine for a QP in error, or about to be (an RC sender whose peer is). */
		if (!atomic_load(&p->kill_started[0]) &&
		    !(p->rc && atomic_load(&p->kill_started[1])) && q->first_bad < 0)
			fail_pair(p, "ibv_post_send of %d WRs on the sender (in RTS) refused at the "
				  "%dth: %s", n, i + 1, strerror(ret));
		n = i;
	}
	if (!n)
		return;
	for (i = 0; i < n; i++) {
		if (p->op[q->posted + i] == OP_SEND) {
			p->nsends++;
			n_sends++;
		} else {
			n_writes++;
		}
	}
	if (self_err && p->after_self_err == UINT32_MAX)
		p->after_self_err = q->posted;
	if (peer_err && p->after_peer_err == UINT32_MAX)
		p->after_peer_err = q->posted;
	q->posted += n;
	n_posted[T_SQ] += n;
}

static void *traffic(void *arg)
{
	unsigned rs = seed * 7919 + round_no;
	int i, progress;

	(void)arg;
	while (!atomic_load(&stop)) {
		progress = 0;
		for (i = 0; i < NPAIRS; i++) {
			uint32_t before = pairs[i].q[T_SQ].posted;

			post_recvs(&pairs[i]);
			post_sends(&pairs[i], &rs);
			progress += pairs[i].q[T_SQ].posted != before;
			progress += poll_pair(&pairs[i]);
		}
		if (!progress)
			usleep(100);
	}
	return NULL;
}

static uint32_t outstanding(struct pair *p)
{
	return __atomic_load_n(&p->q[T_SQ].posted, __ATOMIC_RELAXED) -
	       __atomic_load_n(&p->q[T_SQ].completed, __ATOMIC_RELAXED);
}

/* Moves the victims' QPs to ERR, in a random order, after random delays. */
static void *killer(void *arg)
{
	unsigned rs = seed * 104729 + round_no;
	int order[NPAIRS], i, j, t, side, ret, state;

	(void)arg;
	for (i = 0; i < NPAIRS; i++)
		order[i] = i;
	for (i = NPAIRS - 1; i > 0; i--) {
		j = rand_r(&rs) % (i + 1);
		t = order[i];
		order[i] = order[j];
		order[j] = t;
	}
	for (i = 0; i < NPAIRS; i++) {
		struct pair *p = &pairs[order[i]];
		struct ibv_qp_attr a = { .qp_state = IBV_QPS_ERR };

		if (p->kind == NONE)
			continue;
		usleep(1000 + rand_r(&rs) % (KILL_MS * 1000));
		side = p->kind == RECEIVER;
		/*
		 * The sender is moved with sends outstanding, if that comes within 20 ms (read
		 * without the traffic thread's order: a hint, and a figure for the summary).
		 */
		for (j = 0; j < 200 && outstanding(p) < CHAIN / 2 && side == 0; j++)
			usleep(100);
		if (outstanding(p))
			atomic_fetch_add(&n_busy_moves, 1);
		atomic_fetch_add(&n_moves, 1);
		pthread_mutex_lock(&p->lock);
		atomic_store(&p->kill_started[side], 1);
		pthread_mutex_unlock(&p->lock);
		ret = ibv_modify_qp(p->qp[side], &a, IBV_QP_STATE);
		if (ret) {
			fail_pair(p, "ibv_modify_qp of the %s to IBV_QPS_ERR: %s",
				  side ? "receiver" : "sender", strerror(ret));
			continue;
		}
		atomic_store(&p->err_done[side], 1);
		state = qp_state(p->qp[side]);
		if (state != IBV_QPS_ERR)
			fail_pair(p, "the %s moved to IBV_QPS_ERR reports state %d",
				  side ? "receiver" : "sender", state);
	}
	return NULL;
}

/* The state of QP once it has settled to WANT (an error completion may precede the state). */
static int settled_state(struct ibv_qp *qp, int want)
{
	int i, state = qp_state(qp);

	for (i = 0; i < 100 && state != want; i++) {
		usleep(10000);
		state = qp_state(qp);
	}
	return state;
}

static int setup_pair(struct pair *p, int idx)
{
	struct ibv_qp_init_attr ia = {
		.qp_type = idx < NRC ? IBV_QPT_RC : IBV_QPT_UC, .sq_sig_all = 1,
		.cap = { .max_send_wr = SQ_DEPTH, .max_recv_wr = RQ_DEPTH, .max_send_sge = 1,
			 .max_recv_sge = 1 },
	};
	struct ibv_recv_wr wr[SRECVS], *bad;
	struct ibv_sge sge[SRECVS];
	int i, ret;

	p->idx = idx;
	p->rc = idx < NRC;
	p->kind = (idx + round_no) % KINDS;
	p->last_recv = -1;
	p->after_self_err = p->after_peer_err = UINT32_MAX;
	for (i = 0; i < 3; i++)
		p->q[i].first_bad = -1;
	memset(p->buf, 0, BUF_SIZE);
	p->cq = ibv_create_cq(ctx, SQ_DEPTH + RQ_DEPTH + SRECVS + 8, NULL, NULL, 0);
	if (!p->cq)
		return errno ?: EIO;
	p->mr = ibv_reg_mr(pd, p->buf, BUF_SIZE, IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE);
	if (!p->mr)
		return errno ?: EIO;
	ia.send_cq = ia.recv_cq = p->cq;
	for (i = 0; i < 2; i++) {
		p->qp[i] = ibv_create_qp(pd, &ia);
		if (!p->qp[i])
			return errno ?: EIO;
	}
	ret = conn_to_rts(p->qp[0], p->qp[1]->qp_num, lid) ?:
	      conn_to_rts(p->qp[1], p->qp[0]->qp_num, lid);
	if (ret)
		return ret;
	for (i = 0; i < SRECVS; i++) {
		sge[i] = (struct ibv_sge){ (uintptr_t)(p->buf + SRECV_OFF + i * SMSG), SMSG,
					   p->mr->lkey };
		wr[i] = (struct ibv_recv_wr){ .wr_id = (uint64_t)T_SRQ << 32 | i,
					      .sg_list = &sge[i], .num_sge = 1,
					      .next = i + 1 < SRECVS ? &wr[i + 1] : NULL };
	}
	ret = ibv_post_recv(p->qp[0], wr, &bad);
	if (ret)
		return ret;
	p->q[T_SRQ].posted = SRECVS;
	n_posted[T_SRQ] += SRECVS;
	runs_kind[p->kind][p->rc]++;
	return 0;
}

/* After the drain: nothing missing, every success delivered, the write slots intact. */
static void check_pair(struct pair *p)
{
	uint32_t s, w, seq, last_ok[WSLOTS];
	int t;

	for (t = T_SQ; t <= T_SRQ; t++) {
		struct queue *q = &p->q[t];

		if (q->completed == q->posted)
			continue;
		for (s = 0; s < q->posted && q->seen[s]; s++)
			;
		fail_pair(p, "%s: %u WRs posted, %u completed; WR %u never completed",
			  tag_name[t], q->posted, q->completed, s);
	}
	for (w = 0; w < WSLOTS; w++)
		last_ok[w] = UINT32_MAX;
	for (s = 0; s < p->q[T_SQ].posted; s++) {
		if (!p->ok[s])
			continue;
		if (p->op[s] == OP_WRITE)
			last_ok[s % WSLOTS] = s;
		else if (p->rc && !p->delivered[s])
			fail_pair(p, "SEND %u completed successfully, never received", s);
	}
	for (w = 0; w < WSLOTS; w++) {
		const uint8_t *m = p->buf + WRITE_OFF + w * MSG;
		char what[64];

		if (!((const struct hdr *)m)->magic) {
			if (p->rc && last_ok[w] != UINT32_MAX)
				fail_pair(p, "RDMA WRITE %u completed successfully, its target slot "
					  "is empty", last_ok[w]);
			continue;
		}
		snprintf(what, sizeof(what), "RDMA WRITE target slot %u", w);
		if (!check_msg(p, m, OP_WRITE, &seq, what))
			continue;
		if (seq % WSLOTS != w)
			fail_pair(p, "%s holds RDMA WRITE %u, meant for slot %u", what, seq,
				  seq % WSLOTS);
		else if (p->rc && last_ok[w] != UINT32_MAX && seq < last_ok[w])
			fail_pair(p, "%s holds RDMA WRITE %u; WRITE %u there completed "
				  "successfully", what, seq, last_ok[w]);
	}
}

static void drain_async(void)
{
	struct ibv_async_event ev;

	while (!ibv_get_async_event(ctx, &ev)) {
		n_async++;
		ibv_ack_async_event(&ev);
	}
}

static int run_round(void)
{
	pthread_t tt, kt;
	double deadline;
	int i, j, ret, done, state, want[2];

	for (i = 0; i < NPAIRS; i++) {
		ret = setup_pair(&pairs[i], i);
		if (ret) {
			fprintf(stderr, "qp_err_traffic: round %d, pair %d: set-up: %s\n", round_no,
				i, strerror(ret));
			return ret;
		}
	}
	atomic_store(&stop, 0);
	if (pthread_create(&tt, NULL, traffic, NULL) || pthread_create(&kt, NULL, killer, NULL)) {
		fprintf(stderr, "qp_err_traffic: pthread_create failed\n");
		return EAGAIN;
	}
	pthread_join(kt, NULL);
	usleep(TAIL_MS * 1000);
	atomic_store(&stop, 1);
	pthread_join(tt, NULL);

	/*
	 * Before the end: the QP moved is in error, and so is an RC sender that saw its receiver
	 * gone; the other side of a pair whose QP was moved, when it had no error itself, and
	 * both sides of a pair left alone, are still in RTS.
	 */
	for (i = 0; i < NPAIRS; i++) {
		struct pair *p = &pairs[i];

		poll_pair(p);
		want[0] = p->kind == SENDER || (p->q[T_SQ].first_bad == IBV_WC_RETRY_EXC_ERR) ?
				  IBV_QPS_ERR : IBV_QPS_RTS;
		want[1] = p->kind == RECEIVER ? IBV_QPS_ERR : IBV_QPS_RTS;
		if (p->kind == RECEIVER && p->rc && p->q[T_SQ].first_bad < 0)
			want[0] = -2;	/* it may not have sent since: either */
		for (j = 0; j < 2; j++) {
			if (want[j] == -2)
				continue;
			state = settled_state(p->qp[j], want[j]);
			if (state != want[j])
				fail_pair(p, "before the end, the %s is in state %d, not %d",
					  j ? "receiver" : "sender", state, want[j]);
		}
	}

	/* The end: every QP to ERR, and every WR completes. */
	for (i = 0; i < NPAIRS; i++)
		for (j = 0; j < 2; j++) {
			struct ibv_qp_attr a = { .qp_state = IBV_QPS_ERR };

			ret = ibv_modify_qp(pairs[i].qp[j], &a, IBV_QP_STATE);
			if (ret)
				fail_teardown("pair %d: ibv_modify_qp of the %s to IBV_QPS_ERR at "
					      "the end: %s", i, j ? "receiver" : "sender",
					      strerror(ret));
			else if ((state = qp_state(pairs[i].qp[j])) != IBV_QPS_ERR)
				fail_teardown("pair %d: the %s is in state %d after its move to "
					      "IBV_QPS_ERR", i, j ? "receiver" : "sender", state);
		}
	deadline = now() + DRAIN_S;
	do {
		done = 1;
		for (i = 0; i < NPAIRS; i++) {
			poll_pair(&pairs[i]);
			for (j = T_SQ; j <= T_SRQ; j++)
				done &= pairs[i].q[j].completed >= pairs[i].q[j].posted;
		}
		if (!done)
			usleep(1000);
	} while (!done && now() < deadline);
	/* Nothing more comes: a duplicate or a completion of nothing would show here. */
	usleep(20000);
	for (i = 0; i < NPAIRS; i++) {
		poll_pair(&pairs[i]);
		check_pair(&pairs[i]);
	}

	for (i = 0; i < NPAIRS; i++) {
		struct pair *p = &pairs[i];

		for (j = 0; j < 2; j++)
			if ((ret = ibv_destroy_qp(p->qp[j])))
				fail_teardown("pair %d: ibv_destroy_qp: %s", i, strerror(ret));
		if ((ret = ibv_destroy_cq(p->cq)))
			fail_teardown("pair %d: ibv_destroy_cq: %s", i, strerror(ret));
		if ((ret = ibv_dereg_mr(p->mr)))
			fail_teardown("pair %d: ibv_dereg_mr: %s", i, strerror(ret));
		p->qp[0] = p->qp[1] = NULL;
		p->cq = NULL;
		p->mr = NULL;
	}
	drain_async();
	return 0;
}

static void reset_pair(struct pair *p)
{
	int i;

	for (i = 0; i < 3; i++) {
		memset(p->q[i].seen, 0, MAXWR);
		p->q[i].posted = p->q[i].completed = p->q[i].next = 0;
	}
	p->nsends = 0;
	p->failed = 0;
	for (i = 0; i < 2; i++) {
		atomic_store(&p->kill_started[i], 0);
		atomic_store(&p->err_done[i], 0);
	}
}

int main(int argc, char **argv)
{
	int rounds = 20, opt, i, j;
	double seconds = 0, start;
	struct ibv_port_attr pa;
	char what[3][200];

	seed = time(NULL);
	while ((opt = getopt(argc, argv, "r:t:s:")) != -1) {
		switch (opt) {
		case 'r':
			rounds = atoi(optarg);
			break;
		case 't':
			seconds = atof(optarg);
			break;
		case 's':
			seed = strtoul(optarg, NULL, 0);
			break;
		default:
			fprintf(stderr, "usage: %s [-r ROUNDS] [-t SECONDS] [-s SEED]\n", argv[0]);
			return 2;
		}
	}
	ctx = open_test_device();
	pd = ctx ? ibv_alloc_pd(ctx) : NULL;
	if (!pd || ibv_query_port(ctx, 1, &pa)) {
		fprintf(stderr, "qp_err_traffic: no %s\n", TEST_DEVICE);
		return 2;
	}
	lid = pa.lid;
	fcntl(ctx->async_fd, F_SETFL, fcntl(ctx->async_fd, F_GETFL) | O_NONBLOCK);
	for (i = 0; i < NPAIRS; i++) {
		struct pair *p = &pairs[i];

		p->buf = aligned_alloc(4096, (BUF_SIZE + 4095) / 4096 * 4096);
		p->op = malloc(MAXWR);
		p->ok = malloc(MAXWR);
		p->delivered = malloc(MAXWR);
		p->len = malloc(MAXWR * sizeof(*p->len));
		for (j = 0; j < 3; j++)
			p->q[j].seen = malloc(MAXWR);
		if (!p->buf || !p->op || !p->ok || !p->delivered || !p->len || !p->q[0].seen ||
		    !p->q[1].seen || !p->q[2].seen) {
			fprintf(stderr, "qp_err_traffic: out of memory\n");
			return 2;
		}
		pthread_mutex_init(&p->lock, NULL);
	}

	start = now();
	for (round_no = 0; seconds > 0 ? round_no < 3 || now() - start < seconds : round_no < rounds;
	     round_no++) {
		for (i = 0; i < NPAIRS; i++)
			reset_pair(&pairs[i]);
		if (run_round())
			return 2;
	}

	for (i = 0; i < KINDS; i++)
		snprintf(what[i], sizeof(what[i]), "%d RC and %d UC pairs", runs_kind[i][1],
			 runs_kind[i][0]);
	tap_result(!failed_kind[RECEIVER],
		   "the receiver's QP moved to IBV_QPS_ERR while its peer sends (%s): every WR on "
		   "both sides completes once, in order; sends and RDMA WRITEs succeed, then "
		   "(RC) IBV_WC_RETRY_EXC_ERR, then only flushes; receives succeed, then are "
		   "flushed; the data received intact; the sender in RTS (UC) or in error (RC) "
		   "(%d failed)", what[RECEIVER], failed_kind[RECEIVER]);
	tap_result(!failed_kind[SENDER],
		   "the sender's QP moved to IBV_QPS_ERR with its send queue busy (%s): every WR "
		   "completes once, in order; those posted afterwards flushed; only successes "
		   "then flushes; the data received intact, the receiver still in RTS (%d failed)",
		   what[SENDER], failed_kind[SENDER]);
	tap_result(!failed_kind[NONE],
		   "the pairs left alone meanwhile (%s): every WR succeeds until the QPs are "
		   "moved to IBV_QPS_ERR at the end, then flushes, the data intact (%d failed)",
		   what[NONE], failed_kind[NONE]);
	tap_result(!teardown_failed && !ibv_dealloc_pd(pd) && !ibv_close_device(ctx),
		   "every QP moved to IBV_QPS_ERR at the end reports it; QPs, CQs, MRs, the PD "
		   "and the device destroyed cleanly");
	printf("# qp_err_traffic: %d rounds (seed %u, %.1f s): %lu WRs posted (%lu SENDs, %lu "
	       "RDMA WRITEs, %lu receives), %lu posts refused; completions: %lu IBV_WC_SUCCESS, "
	       "%lu IBV_WC_WR_FLUSH_ERR, %lu IBV_WC_RETRY_EXC_ERR, %lu other; %d moves to ERR "
	       "mid-traffic, %d of them with WRs outstanding on the sender; %lu async events\n",
	       round_no, seed, now() - start, n_posted[T_SQ] + n_posted[T_RQ] + n_posted[T_SRQ],
	       n_sends, n_writes, n_posted[T_RQ] + n_posted[T_SRQ], n_refused, n_status[0],
	       n_status[1], n_status[2], n_other, atomic_load(&n_moves),
	       atomic_load(&n_busy_moves), n_async);
	return tap_finish();
}
