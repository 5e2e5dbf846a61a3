#!/usr/bin/python3
# SPDX-License-Identifier: GPL-2.0-only
#
# The differential fuzzer's guest half: for each seed, a random sequence of verbs on rvt_loop0
# through pyverbs (MRs registered and deregistered, RC, UC and UD QPs created with valid and
# invalid capabilities, modified to random states with right and wrong attribute masks,
# receives and sends of every opcode with random SGE lists, lengths, keys and flags, CQs
# resized, QPs destroyed), every step's outcome written to $RDMAVT_RS_OUT/fuzz.log in terms
# that do not depend on the rdmavt: the errno, each completion's status, opcode, length and
# WR ID per QP (objects are named by their index, never by a QPN or key), the QP states, and
# at the end a checksum of every MR's bytes. The host compares the rdmavt-rs run's log with
# the C rdmavt's, seed by seed (tests/tap.py fuzzdiff); here one point per seed says that the
# sequence ran to its end.
#
# The outcome of a step must not depend on timing: after every step that can complete work the
# CQs are drained until quiet; rnr_retry is 0, so an RNR NAK ends the WQE at once (no timer
# decides it); the CQs are larger than all queues together. The generator leaves out two inputs
# where the C rdmavt is known to be wrong and rdmavt-rs deliberately differs, each with a test
# of its own on both rdmavts (README, "C rdmavt bugs"): an RDMA READ of length 0 (C leaks the
# responder's MR reference) and LOCAL_INV (C completes a deferred one without invalidating).
#
# RDMAVT_RS_FUZZ_SEEDS="1 2 3" chooses the seeds (default: 1 to 6), RDMAVT_RS_FUZZ_STEPS the
# steps per seed (default 80). Uses Debian's /usr/bin/python3, for which python3-pyverbs is installed.

import os
import random
import sys
import time
import zlib

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
import pyverbs.enums as e  # noqa: E402
from ktap import DEV, error_code, main, point  # noqa: E402
from pyverbs.addr import AH, AHAttr  # noqa: E402
from pyverbs.cq import CQ  # noqa: E402
from pyverbs.device import Context  # noqa: E402
from pyverbs.mr import MR  # noqa: E402
from pyverbs.pd import PD  # noqa: E402
from pyverbs.qp import QP, QPAttr, QPCap, QPInitAttr  # noqa: E402
from pyverbs.wr import SGE, RecvWR, SendWR  # noqa: E402

SEEDS = [int(s) for s in os.environ.get("RDMAVT_RS_FUZZ_SEEDS", "1 2 3 4 5 6").split()]
STEPS = int(os.environ.get("RDMAVT_RS_FUZZ_STEPS", "80"))
LOG = os.path.join(os.environ.get("RDMAVT_RS_OUT", "/tmp"), "fuzz.log")
QKEY = 0x11111111
CQE = 256  # more than all QPs' queues together: no CQ overflows
MAX_QPS = 6
MAX_MRS = 6

QPT = {"RC": e.IBV_QPT_RC, "UC": e.IBV_QPT_UC, "UD": e.IBV_QPT_UD}
STATES = {e.IBV_QPS_RESET: "RESET", e.IBV_QPS_INIT: "INIT", e.IBV_QPS_RTR: "RTR",
          e.IBV_QPS_RTS: "RTS", e.IBV_QPS_SQD: "SQD", e.IBV_QPS_SQE: "SQE",
          e.IBV_QPS_ERR: "ERR"}
OPCODES = {
    "RC": ["SEND", "SEND_WITH_IMM", "RDMA_WRITE", "RDMA_WRITE_WITH_IMM", "RDMA_READ",
           "ATOMIC_CMP_AND_SWP", "ATOMIC_FETCH_AND_ADD"],
    "UC": ["SEND", "SEND_WITH_IMM", "RDMA_WRITE", "RDMA_WRITE_WITH_IMM"],
    "UD": ["SEND", "SEND_WITH_IMM"],
}
ACCESS = [e.IBV_ACCESS_LOCAL_WRITE, e.IBV_ACCESS_REMOTE_WRITE, e.IBV_ACCESS_REMOTE_READ,
          e.IBV_ACCESS_REMOTE_ATOMIC]
M = e  # masks, for brevity below
# The attributes each transition needs (ib_modify_qp_is_ok's required masks, plus the ones
# rdma-core's own tools pass).
REQUIRED = {
    ("RESET", "INIT"): {"RC": M.IBV_QP_PKEY_INDEX | M.IBV_QP_PORT | M.IBV_QP_ACCESS_FLAGS,
                        "UC": M.IBV_QP_PKEY_INDEX | M.IBV_QP_PORT | M.IBV_QP_ACCESS_FLAGS,
                        "UD": M.IBV_QP_PKEY_INDEX | M.IBV_QP_PORT | M.IBV_QP_QKEY},
    ("INIT", "RTR"): {"RC": M.IBV_QP_AV | M.IBV_QP_PATH_MTU | M.IBV_QP_DEST_QPN
                      | M.IBV_QP_RQ_PSN | M.IBV_QP_MAX_DEST_RD_ATOMIC | M.IBV_QP_MIN_RNR_TIMER,
                      "UC": M.IBV_QP_AV | M.IBV_QP_PATH_MTU | M.IBV_QP_DEST_QPN
                      | M.IBV_QP_RQ_PSN,
                      "UD": 0},
    ("RTR", "RTS"): {"RC": M.IBV_QP_SQ_PSN | M.IBV_QP_TIMEOUT | M.IBV_QP_RETRY_CNT
                     | M.IBV_QP_RNR_RETRY | M.IBV_QP_MAX_QP_RD_ATOMIC,
                     "UC": M.IBV_QP_SQ_PSN, "UD": M.IBV_QP_SQ_PSN},
}
# Attributes a wrong mask may add: each is refused by some transition of some QP type.
STRAY = [M.IBV_QP_QKEY, M.IBV_QP_AV, M.IBV_QP_DEST_QPN, M.IBV_QP_SQ_PSN, M.IBV_QP_RNR_RETRY,
         M.IBV_QP_ACCESS_FLAGS, M.IBV_QP_MIN_RNR_TIMER]


def outcome(fn):
    """'ok' or 'errno N' for fn(), and fn()'s result (None on an error)."""
    try:
        return "ok", fn()
    except Exception as err:  # noqa: BLE001 - the errno is the outcome under test
        code = error_code(err)
        if code is None:
            raise
        return f"errno {code}", None


class Fuzz:
    """One seed's world: a device context, two PDs, two CQs, an AH, and up to MAX_MRS MRs and
    MAX_QPS QPs, each named by a number that only grows."""

    def __init__(self, seed, out):
        self.rnd = random.Random(seed)
        self.seed = seed
        self.out = out
        self.step = 0
        self.ctx = Context(name=DEV)
        self.lid = self.ctx.query_port(1).lid
        self.pds = [PD(self.ctx), PD(self.ctx)]
        self.cqs = [CQ(self.ctx, CQE), CQ(self.ctx, CQE)]
        self.ah = AH(self.pds[0], attr=AHAttr(port_num=1, dlid=self.lid))
        self.mrs = {}  # name: (MR, pd index, length)
        self.qps = {}  # name: (QP, type, pd index, max send SGEs, max receive SGEs)
        self.ready = {}  # name: whether its last modify took it to RTS
        self.names = 0
        self.wr_id = 0
        self.completions = {}  # QP name (0: unknown): ["cq.. wr .. status ..", ...]
        # One MR per PD to start from, with every right.
        for pd in range(2):
            mr = MR(self.pds[pd], 4096, sum(ACCESS))
            mr.write(bytes(self.rnd.getrandbits(8) for _ in range(256)), 256)
            self.mrs[self.name()] = (mr, pd, 4096)

    def log(self, what, result):
        self.out.write(f"seed {self.seed} step {self.step}: {what} -> {result}\n")

    def name(self):
        self.names += 1
        return self.names

    def pick(self, objs):
        return self.rnd.choice(sorted(objs)) if objs else None

    # --- the steps -----------------------------------------------------------------------

    def reg_mr(self):
        if len(self.mrs) >= MAX_MRS:
            return self.dereg_mr()
        pd = self.rnd.randrange(2)
        length = self.rnd.choice([8, 64, 4096, 65536])
        # Mostly local write (a receive or READ target needs it), each remote right at random.
        access = e.IBV_ACCESS_LOCAL_WRITE if self.rnd.random() < 0.9 else 0
        for flag in ACCESS[1:]:
            if self.rnd.random() < 0.6:
                access |= flag
        res, mr = outcome(lambda: MR(self.pds[pd], length, access))
        n = None
        if mr is not None:
            n = self.name()
            mr.write(bytes(self.rnd.getrandbits(8) for _ in range(min(length, 256))),
                     min(length, 256))
            self.mrs[n] = (mr, pd, length)
        self.log(f"reg_mr pd{pd} len {length} access {access:#x} as mr{n}", res)

    def dereg_mr(self):
        n = self.pick(self.mrs)
        if n is None:
            return self.reg_mr()
        res, _ = outcome(self.mrs[n][0].close)
        del self.mrs[n]
        self.log(f"dereg mr{n}", res)

    def create_qp(self):
        if len(self.qps) >= MAX_QPS:
            return self.destroy_qp()
        kind = self.rnd.choice(list(QPT))
        pd = self.rnd.randrange(2)
        scq, rcq = self.rnd.randrange(2), self.rnd.randrange(2)
        # Mostly sound capabilities; now and then one past rvt_loop's limits.
        wr = lambda: self.rnd.choice([1, 2, 4, 16, 0x100000]) if self.rnd.random() < 0.1 \
            else self.rnd.choice([1, 2, 4, 16])
        sge = lambda: self.rnd.choice([97, 1000]) if self.rnd.random() < 0.1 \
            else self.rnd.choice([1, 2, 3, 4])
        cap = QPCap(max_send_wr=wr(), max_recv_wr=wr(), max_send_sge=sge(),
                    max_recv_sge=sge(), max_inline_data=self.rnd.choice([0, 0, 64]))
        init = QPInitAttr(qp_type=QPT[kind], scq=self.cqs[scq], rcq=self.cqs[rcq], cap=cap,
                          sq_sig_all=self.rnd.choice([0, 1]))
        desc = (f"create_qp {kind} pd{pd} cq{scq}/cq{rcq} wr {cap.max_send_wr}/"
                f"{cap.max_recv_wr} sge {cap.max_send_sge}/{cap.max_recv_sge} inline "
                f"{cap.max_inline_data} sig_all {init.sq_sig_all}")
        res, qp = outcome(lambda: QP(self.pds[pd], init))
        n = None
        if qp is not None:
            n = self.name()
            self.qps[n] = (qp, kind, pd, cap.max_send_sge, cap.max_recv_sge)
            self.ready[n] = False
        self.log(f"{desc} as qp{n}", res)
        # Mostly straight on to RTS, connected to a QP of its type (itself if the first).
        if n is not None and self.rnd.random() < 0.8:
            for _ in range(3):
                self.modify_qp(n, sound=True)

    def attr(self, kind, nxt):
        """The attributes of a modify to nxt, the destination a random QP of type kind (now
        and then none), and that destination's name."""
        attr = QPAttr()
        attr.qp_state = {v: k for k, v in STATES.items()}[nxt]
        attr.pkey_index = 0
        attr.port_num = 1
        attr.qkey = QKEY
        attr.qp_access_flags = sum(f for f in ACCESS if self.rnd.random() < 0.7)
        attr.path_mtu = self.rnd.choice([e.IBV_MTU_256, e.IBV_MTU_1024, e.IBV_MTU_4096])
        peer = self.rnd.choice(sorted(m for m in self.qps if self.qps[m][1] == kind))
        attr.dest_qp_num = self.qps[peer][0].qp_num
        if self.rnd.random() < 0.05:
            attr.dest_qp_num, peer = 0xfffff0, None
        attr.rq_psn = attr.sq_psn = 0
        attr.max_rd_atomic = attr.max_dest_rd_atomic = 1
        attr.min_rnr_timer = 1
        attr.timeout = 14
        attr.retry_cnt = 7
        attr.rnr_retry = 0
        attr.ah_attr = AHAttr(port_num=1, dlid=self.lid)
        return attr, peer

    def destroy_qp(self):
        n = self.pick(self.qps)
        if n is None:
            return self.create_qp()
        res, _ = outcome(self.qps[n][0].close)
        del self.qps[n]
        del self.ready[n]
        self.log(f"destroy qp{n}", res)

    def state(self, n):
        """QP n's state as the device reports it."""
        attr, _ = self.qps[n][0].query(e.IBV_QP_STATE)
        return STATES.get(attr.qp_state, str(attr.qp_state))

    def modify_qp(self, n=None, sound=False):
        """A modify of QP n (a random one): mostly to the next state on the way to RTS with
        the attributes it needs; else to ERR, RESET or any state, and (unless sound) now and
        then with a wrong mask."""
        if n is None:
            # Mostly one on its way to RTS.
            waiting = [m for m in self.qps if not self.ready[m]]
            n = self.rnd.choice(sorted(waiting)) if waiting and self.rnd.random() < 0.7 \
                else self.pick(self.qps)
        if n is None:
            return self.create_qp()
        qp, kind = self.qps[n][:2]
        cur = self.state(n)
        nxt = {"RESET": "INIT", "INIT": "RTR", "RTR": "RTS", "RTS": "RTS"}.get(cur, "RESET")
        r = 1 if sound else self.rnd.random()
        if r < 0.05:
            nxt = "ERR"
        elif r < 0.1:
            nxt = "RESET"
        elif r < 0.15:
            nxt = self.rnd.choice(["INIT", "RTR", "RTS", "SQD"])
        mask = e.IBV_QP_STATE | REQUIRED.get((cur, nxt), {}).get(kind, 0)
        wrong = not sound and self.rnd.random() < 0.1
        if wrong:
            mask ^= self.rnd.choice(STRAY)
        attr, peer = self.attr(kind, nxt)
        res, _ = outcome(lambda: qp.modify(attr, mask))
        if res == "ok":
            self.ready[n] = nxt == "RTS"
        self.log(f"modify qp{n} {cur}->{nxt} mask {mask:#x}{' (wrong)' if wrong else ''} "
                 f"dest qp{peer} access {attr.qp_access_flags:#x} mtu {attr.path_mtu}", res)
        self.drain()

    def busy_qp(self):
        """A QP to post on: mostly one that was taken to RTS."""
        ready = [n for n in self.qps if self.ready[n]]
        if ready and self.rnd.random() < 0.8:
            return self.rnd.choice(sorted(ready))
        return self.pick(self.qps)

    def pick_mr(self, pd):
        """An MR, mostly of PD pd (another PD's lkey fails the access)."""
        same = [n for n in self.mrs if self.mrs[n][1] == pd]
        if same and self.rnd.random() < 0.85:
            return self.rnd.choice(sorted(same))
        return self.pick(self.mrs)

    def sges(self, limit, pd):
        """A random SGE list over the MRs (now and then a bad lkey): mostly 1 to limit entries,
        sometimes none or one too many."""
        out, desc = [], []
        count = self.rnd.randint(1, min(limit, 2)) if self.rnd.random() < 0.9 \
            else self.rnd.choice([0, limit + 1])
        for _ in range(count):
            n = self.pick_mr(pd)
            if n is None or self.rnd.random() < 0.03:
                out.append(SGE(0x1000, 16, 0xdead00))
                desc.append("bad")
                continue
            mr, _, length = self.mrs[n]
            off = self.rnd.randrange(length)
            ln = self.rnd.randint(1, min(length - off, 512)) if self.rnd.random() < 0.9 \
                else length - off + self.rnd.randint(1, 64)
            out.append(SGE(mr.buf + off, ln, mr.lkey))
            desc.append(f"mr{n}+{off}:{ln}")
        return out, desc

    def post_recv(self):
        n = self.busy_qp()
        if n is None:
            return self.create_qp()
        qp, _, pd, _, max_sge = self.qps[n]
        sg, desc = self.sges(max_sge, pd)
        self.wr_id += 1
        wr = RecvWR(wr_id=self.wr_id, num_sge=1, sg=sg or [SGE(0, 0, 0)])
        wr.num_sge = len(sg)  # pyverbs builds no WR without an SGE; the verbs take one
        res, _ = outcome(lambda: qp.post_recv(wr))
        self.log(f"post_recv qp{n} wr {self.wr_id} sges [{' '.join(desc)}]", res)
        self.drain()

    def remote(self, pd):
        """A random remote address and rkey: inside some MR, past its end, or a bad key."""
        n = self.pick_mr(pd)
        if n is None or self.rnd.random() < 0.03:
            return 0x1000, 0xdead00, "bad"
        mr, _, length = self.mrs[n]
        off = self.rnd.randrange(0, length, 8)
        if self.rnd.random() < 0.05:
            off = length
        return mr.buf + off, mr.rkey, f"mr{n}+{off}"

    def post_send(self):
        n = self.busy_qp()
        if n is None:
            return self.create_qp()
        qp, kind, pd, max_sge, _ = self.qps[n]
        op = self.rnd.choice(OPCODES[kind])
        atomic = op.startswith("ATOMIC")
        sg, desc = self.sges(max_sge, pd)
        if atomic and self.rnd.random() < 0.8:
            # An 8-byte aligned word, as an atomic needs; otherwise whatever came.
            sg, desc = sg[:1], desc[:1]
            if sg and desc[0] != "bad":
                sg[0].addr &= ~7
                sg[0].length = 8
                desc[0] = "word"
        if op == "RDMA_READ" and sum(s.length for s in sg) == 0:
            sg, desc = [], []  # never a zero-length READ (see the header)
            op = "RDMA_WRITE"
        flags = 0
        if self.rnd.random() < 0.7:
            flags |= e.IBV_SEND_SIGNALED
        if self.rnd.random() < 0.05:
            flags |= e.IBV_SEND_INLINE
        if self.rnd.random() < 0.1:
            flags |= e.IBV_SEND_FENCE
        self.wr_id += 1
        wr = SendWR(wr_id=self.wr_id, opcode=getattr(e, f"IBV_WR_{op}"), num_sge=1,
                    sg=sg or [SGE(0, 0, 0)], send_flags=flags)
        wr.num_sge = len(sg)
        what = f"post_send qp{n} wr {self.wr_id} {op} flags {flags:#x} sges [{' '.join(desc)}]"
        if op.endswith("WITH_IMM"):
            wr.imm_data = 0x1234
        if op.startswith("RDMA") or atomic:
            addr, rkey, where = self.remote(pd)
            if atomic:
                wr.set_wr_atomic(rkey, addr, 5, 7)
            else:
                wr.set_wr_rdma(rkey, addr)
            what += f" remote {where}"
        if kind == "UD":
            peers = [m for m in self.qps if self.qps[m][1] == "UD"]
            peer = self.rnd.choice(sorted(peers))
            wr.set_wr_ud(self.ah, self.qps[peer][0].qp_num, QKEY)
            what += f" to qp{peer}"
        res, _ = outcome(lambda: qp.post_send(wr))
        self.log(what, res)
        self.drain()

    def resize_cq(self):
        c = self.rnd.randrange(2)
        cqe = self.rnd.choice([CQE, CQE * 2, 1 << 30])
        res, _ = outcome(lambda: self.cqs[c].resize(cqe))
        self.log(f"resize cq{c} to {cqe}", res)

    def query(self):
        n = self.pick(self.qps)
        if n is None:
            return self.create_qp()
        self.log(f"query qp{n}", self.state(n))

    # --- completions ---------------------------------------------------------------------

    def drain(self):
        """Polls both CQs until nothing has arrived for 100 ms (at most 3 s), so that the next
        step finds the work of this one done, and keeps what came per QP, in arrival order:
        the seed's log ends with each QP's completions (in which step one arrived is timing,
        not outcome; QPs' engines may interleave on a shared CQ)."""
        qpn = {obj[0].qp_num: n for n, obj in self.qps.items()}
        quiet_since = time.monotonic()
        deadline = quiet_since + 3
        while time.monotonic() < deadline and time.monotonic() - quiet_since < 0.1:
            for c, cq in enumerate(self.cqs):
                npolled, wcs = cq.poll(16)
                for wc in wcs[:npolled]:
                    quiet_since = time.monotonic()
                    if wc.status != e.IBV_WC_SUCCESS and wc.qp_num in qpn:
                        # An error completion means the QP is in the error state now.
                        self.ready[qpn[wc.qp_num]] = False
                    self.completions.setdefault(qpn.get(wc.qp_num, 0), []).append(
                        f"cq{c} wr {wc.wr_id} status {wc.status} opcode {wc.opcode} "
                        f"len {wc.byte_len}")
            time.sleep(0.005)

    def run(self, steps):
        actions = [(self.reg_mr, 2), (self.dereg_mr, 1), (self.create_qp, 2),
                   (self.destroy_qp, 1), (self.modify_qp, 6), (self.post_recv, 8),
                   (self.post_send, 12), (self.resize_cq, 1), (self.query, 1)]
        fns, weights = zip(*actions)
        for self.step in range(1, steps + 1):
            self.rnd.choices(fns, weights)[0]()
        self.step = "end"
        self.drain()
        for n in sorted(self.completions):
            for i, wc in enumerate(self.completions[n], 1):
                self.log(f"qp{n} completion {i}", wc)
        for n in sorted(self.mrs):
            mr, _, length = self.mrs[n]
            self.log(f"mr{n} bytes", f"crc32 {zlib.crc32(mr.read(length, 0)):#010x}")
        for n in sorted(self.qps):
            self.log(f"qp{n} state", self.state(n))

    def close(self):
        self.ctx.close()


def body():
    with open(LOG, "w") as out:
        for seed in SEEDS:
            fuzz = Fuzz(seed, out)
            try:
                fuzz.run(STEPS)
                point(True, f"fuzz seed {seed}: {STEPS} steps ran")
            except Exception as err:  # noqa: BLE001 - a harness error, not an outcome
                point(False, f"fuzz seed {seed}: step {fuzz.step}: {type(err).__name__}: {err}")
            finally:
                fuzz.close()
            out.flush()


sys.exit(main("fuzz", body))
