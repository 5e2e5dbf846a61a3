#!/usr/bin/python3
# SPDX-License-Identifier: GPL-2.0-only
#
# rvt_loop's port counters, through sysfs (ports/1/hw_counters/) and iproute2's
# `rdma statistic show link rvt_loop0/1`: both list the same counters, and known workloads
# move them by exactly what they should: N UD sends of M bytes (sent and received packets +N,
# bytes +N*M, unicast deliveries +N), N RC sends of M bytes (sent +N and +N*M, rdmavt's
# loop_pkts +N; RC receives happen inside rdmavt's loopback, which rvt_loop cannot see, so
# rcvd_pkts stays), UD multicast (tests/progs/ud_multicast.c: 2 sends, 3 copies delivered),
# and an RC send with no receive posted and rnr_retry 0 (rnr_naks +1). Runs on both rdmavt
# modules; TAP on stdout.
#
# Uses Debian's /usr/bin/python3, for which python3-pyverbs is installed.

import json
import os
import subprocess
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
import pyverbs.enums as e  # noqa: E402
from conn import connect_attr  # noqa: E402
from ktap import DEV, REPO, main, point, skip  # noqa: E402
from pyverbs.addr import AH, AHAttr  # noqa: E402
from pyverbs.cq import CQ  # noqa: E402
from pyverbs.device import Context  # noqa: E402
from pyverbs.mr import MR  # noqa: E402
from pyverbs.pd import PD  # noqa: E402
from pyverbs.qp import QP, QPAttr, QPCap, QPInitAttr  # noqa: E402
from pyverbs.wr import SGE, RecvWR, SendWR  # noqa: E402

COUNTERS = {"loop_pkts", "rnr_naks", "pkt_drops", "sent_pkts", "sent_bytes", "rcvd_pkts",
            "rcvd_bytes", "ud_deliveries", "mcast_deliveries"}
SYSFS = f"/sys/class/infiniband/{DEV}/ports/1/hw_counters"
N = 7
M = 100
QKEY = 0x11111111
GRH = 40
MCAST_PROG = f"{REPO}/.test-bin/ud_multicast"
# sizeof("hello, group") in tests/progs/ud_multicast.c.
MCAST_BYTES = 13
# ib_core shows values it read less than the counters' lifespan (10 ms) ago: wait longer.
LIFESPAN = 0.05


def sysfs_counters():
    time.sleep(LIFESPAN)
    values = {}
    for name in os.listdir(SYSFS):
        if name != "lifespan":
            with open(os.path.join(SYSFS, name)) as f:
                values[name] = int(f.read())
    return values


def rdma_counters():
    """The counters as `rdma statistic` shows them: JSON, one object per port."""
    time.sleep(LIFESPAN)
    res = subprocess.run(["rdma", "-j", "statistic", "show", "link", f"{DEV}/1"],
                         capture_output=True, text=True)
    if res.returncode != 0:
        raise RuntimeError(f"rdma statistic: {res.stderr.strip()}")
    (port,) = json.loads(res.stdout)
    return {k: v for k, v in port.items() if k not in ("ifindex", "ifname", "port")}


def delta(before, after):
    return {k: after[k] - before[k] for k in after if k in before}


def expect_deltas(desc, before, after, want):
    """One point: every counter moved by `want` (counters it does not name by 0)."""
    got = delta(before, after)
    full = {k: want.get(k, 0) for k in COUNTERS}
    point(got == full, f"{desc}: {'as expected' if got == full else 'differ'}")
    if got != full:
        print(f"# got      {sorted(got.items())}\n# expected {sorted(full.items())}")


def both(desc, workload, want):
    """Runs `workload` between reads of both views; a point for each."""
    s0, r0 = sysfs_counters(), rdma_counters()
    workload()
    s1, r1 = sysfs_counters(), rdma_counters()
    expect_deltas(f"{desc} (sysfs)", s0, s1, want)
    expect_deltas(f"{desc} (rdma statistic)", r0, r1, want)


def wait(cq, count):
    """`count` completions of `cq` (bounded wait), as (status, byte_len) pairs."""
    got = []
    for _ in range(1000):
        n, wcs = cq.poll(count - len(got))
        got += [(wc.status, wc.byte_len) for wc in wcs[:n]]
        if len(got) == count:
            break
        time.sleep(0.005)
    return got


class Workloads:
    def __init__(self, ctx, pd):
        self.ctx, self.pd = ctx, pd
        self.lid = ctx.query_port(1).lid
        self.mr = MR(pd, 8192, e.IBV_ACCESS_LOCAL_WRITE)

    def qp(self, qpt, cq, attr=None):
        cap = QPCap(max_send_wr=N, max_recv_wr=N, max_send_sge=1, max_recv_sge=1)
        return QP(self.pd, QPInitAttr(qp_type=qpt, scq=cq, rcq=cq, cap=cap), attr)

    def ud_qp(self, cq):
        attr = QPAttr(port_num=1)
        attr.qkey = QKEY
        return self.qp(e.IBV_QPT_UD, cq, attr)

    def post_recvs(self, qp, length):
        for i in range(N):
            qp.post_recv(RecvWR(wr_id=i, num_sge=1,
                                sg=[SGE(self.mr.buf + 4096, length, self.mr.lkey)]))

    def send_wr(self, i):
        return SendWR(wr_id=i, opcode=e.IBV_WR_SEND, num_sge=1,
                      sg=[SGE(self.mr.buf, M, self.mr.lkey)], send_flags=e.IBV_SEND_SIGNALED)

    def ud_sends(self, ah, dqpn, scq, rcq, receivers):
        """N sends of M bytes from a new UD QP through `ah` to `dqpn`; waits for them and for
        `receivers` receive completions per send."""
        sender = self.ud_qp(scq)
        for i in range(N):
            wr = self.send_wr(i)
            wr.set_wr_ud(ah, dqpn, QKEY)
            sender.post_send(wr)
        sent = wait(scq, N)
        rcvd = wait(rcq, N * receivers)
        sender.close()
        point(sent == [(e.IBV_WC_SUCCESS, M)] * N and
              rcvd == [(e.IBV_WC_SUCCESS, M + GRH)] * (N * receivers),
              f"{N} UD sends of {M} bytes completed, {N * receivers} received")

    def ud_unicast(self):
        with CQ(self.ctx, 2 * N) as scq, CQ(self.ctx, 2 * N) as rcq:
            receiver = self.ud_qp(rcq)
            self.post_recvs(receiver, M + GRH)
            ah = AH(self.pd, attr=AHAttr(port_num=1, dlid=self.lid))
            self.ud_sends(ah, receiver.qp_num, scq, rcq, 1)
            ah.close()
            receiver.close()

    @staticmethod
    def ud_multicast():
        """tests/progs/ud_multicast.c (pyverbs 44 has no attach_mcast): a send of
        MCAST_BYTES to a group of two QPs, then, one QP detached, another."""
        res = subprocess.run([MCAST_PROG], capture_output=True, text=True, timeout=60)
        point(res.returncode == 0, f"ud_multicast: exit status {res.returncode}")
        if res.returncode != 0:
            print("".join(f"# {line}\n" for line in res.stdout.splitlines()), end="")

    def rc_pair(self, cq, rnr_retry):
        ends = [self.qp(e.IBV_QPT_RC, cq) for _ in range(2)]
        for me, peer in ((ends[0], ends[1]), (ends[1], ends[0])):
            me.to_rts(
                connect_attr(peer.qp_num, self.lid, e.IBV_ACCESS_LOCAL_WRITE, rnr_retry)
            )
        return ends

    def rc_sends(self):
        # Both QPs complete on one CQ: N sends on one side, N receives on the other.
        with CQ(self.ctx, 2 * N) as cq:
            a, b = self.rc_pair(cq, 7)
            self.post_recvs(b, M)
            for i in range(N):
                a.post_send(self.send_wr(i))
            got = wait(cq, 2 * N)
            point(got == [(e.IBV_WC_SUCCESS, M)] * (2 * N),
                  f"{N} RC sends of {M} bytes completed on both sides")
            a.close()
            b.close()

    def rnr(self):
        with CQ(self.ctx, 4) as cq:
            a, b = self.rc_pair(cq, 0)
            a.post_send(self.send_wr(0))
            status = [s for s, _ in wait(cq, 1)]
            point(status == [e.IBV_WC_RNR_RETRY_EXC_ERR],
                  f"RC send, no receive, rnr_retry 0: status {status} "
                  f"(expected [{e.IBV_WC_RNR_RETRY_EXC_ERR}])")
            a.close()
            b.close()


def run():
    names = set(os.listdir(SYSFS)) - {"lifespan"}
    point(names == COUNTERS, f"sysfs hw_counters: {sorted(names)}")
    shown = set(rdma_counters())
    point(shown == COUNTERS, f"rdma statistic: {sorted(shown)}")
    with Context(name=DEV) as ctx, PD(ctx) as pd:
        w = Workloads(ctx, pd)
        both(f"{N} UD sends of {M} bytes", w.ud_unicast,
             {"sent_pkts": N, "sent_bytes": N * M, "rcvd_pkts": N, "rcvd_bytes": N * M,
              "ud_deliveries": N})
        desc = "UD multicast: 2 sends, 2 + 1 copies delivered"
        if os.access(MCAST_PROG, os.X_OK):
            both(desc, w.ud_multicast,
                 {"sent_pkts": 2, "sent_bytes": 2 * MCAST_BYTES, "rcvd_pkts": 3,
                  "rcvd_bytes": 3 * MCAST_BYTES, "mcast_deliveries": 3})
        else:
            skip(desc, f"{MCAST_PROG} is not built (make test-progs)")
        both(f"{N} RC sends of {M} bytes", w.rc_sends,
             {"sent_pkts": N, "sent_bytes": N * M, "loop_pkts": N})
        # rvt_ruc_loopback() of both rdmavt modules counts the NAK, then fails the send
        # with no request finished: loop_pkts stays.
        both("RC send with no receive, rnr_retry 0", w.rnr,
             {"sent_pkts": 1, "sent_bytes": M, "rnr_naks": 1})
        w.mr.close()


if __name__ == "__main__":
    sys.exit(main("hw_counters", run))
