#!/usr/bin/python3
# SPDX-License-Identifier: GPL-2.0-only
#
# The C rdmavt's trace events, on whichever rdmavt is loaded.
#
# (1) Every event of the systems rvt, rvt_qp, rvt_tx, rvt_cq, rvt_mr and rvt_rc exists with the
# format the C rdmavt gives it: each events/<system>/<event>/format, less its ID line, equals
# the copy recorded on the C rdmavt (tests/trace-golden/formats), and there is no other.
#
# (2) A deterministic workload, traced with all of them on: rvt_loop loaded; an RC pair on
# rvt_loop0 with 5 SENDs of 64 bytes into 5 receives and an RDMA WRITE of two contiguous SGEs;
# a second pair whose SEND finds no receive, with rnr_retry 1 (one RNR wait, then the error);
# rvt_loop unloaded. Each event fires as often as on the C rdmavt (tests/trace-golden/counts),
# with the same fields in the same order (tests/trace-golden/events, compared as a multiset;
# fields that hold addresses or a PID by name only, timestamps not at all), and with the values
# the workload implies: rvt_post_one_wr once per send WR with its wr_id, opcode, length, QPN and
# SGE counts; rvt_qp_send_completion once per send WQE; rvt_cq_enter once per completion with
# its wr_id, status, opcode, length and QPN, which are what user space polled; rvt_qpinsert and
# rvt_qpremove once per QP; rvt_create_cq per user CQ with its size; the RNR timer's add, stop
# and timeout, in order; rvt_sge_new per stored SGE, rvt_mr_user_seg per MR page; rvt_dbg at
# the driver's registration and unregistration.
#
# (3) The events only kernel consumers fire (rvt_cq_poll, rvt_map_mr_sg, rvt_mr_page_seg), with
# rvt_loop_kverbs.ko's suite loaded (tests/kverbs/): each fires, with fields that agree. Its
# fault-injection sweeps make the counts differ between the two rdmavts: not compared.
#
# Without tracefs the test is skipped, never passed. `trace_events.py --golden DIR`, run in
# the guest on the C rdmavt, writes the golden files into DIR (RDMAVT_RS_TRACE_GOLDEN=DIR then
# checks against them).
#
# Uses Debian's /usr/bin/python3, for which python3-pyverbs is installed.

import os
import re
import subprocess
import sys
import time
from collections import Counter

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
import pyverbs.enums as e  # noqa: E402
from conn import connect_attr  # noqa: E402
from ktap import DEV, REPO, _points, point, skip  # noqa: E402
from pyverbs.cq import CQ  # noqa: E402
from pyverbs.device import Context  # noqa: E402
from pyverbs.mr import MR  # noqa: E402
from pyverbs.pd import PD  # noqa: E402
from pyverbs.qp import QP, QPCap, QPInitAttr  # noqa: E402
from pyverbs.wr import SGE, RecvWR, SendWR  # noqa: E402

TRACEFS = "/sys/kernel/tracing"
SYSTEMS = ("rvt", "rvt_qp", "rvt_tx", "rvt_cq", "rvt_mr", "rvt_rc")
# RDMAVT_RS_TRACE_GOLDEN: another golden directory (one just written by --golden).
GOLDEN = os.environ.get("RDMAVT_RS_TRACE_GOLDEN", os.path.join(REPO, "tests", "trace-golden"))

N = 5          # SENDs into posted receives
M = 64         # their length, and the RDMA WRITE's
CQE = 16
SEND_WR_ID = 10
RECV_WR_ID = 100
WRITE_WR_ID = 50
RNR_WR_ID = 60
RNR_LEN = 8
# The kernel's enum ib_wr_opcode and ib_wc_opcode values the events print.
IB_WR_RDMA_WRITE, IB_WR_SEND = 0, 2
IB_WC_SEND, IB_WC_RDMA_WRITE, IB_WC_RECV = 0, 1, 128
# ib_rvt_rnr_table[1], the RNR timer for min_rnr_timer 1 (microseconds).
RNR_USECS = 10
# Fields whose values are addresses (kernel, hashed, or user space's) or a process ID: they
# differ from boot to boot, so they are compared by name, not value.
ADDRESS_FIELDS = {"wqe", "hrtimer", "mr", "sge", "isge", "vaddr", "page", "ivaddr", "iova",
                  "user_base", "pid"}


# --- tracefs ------------------------------------------------------------------------------

def tracefs_ready():
    """Whether tracefs and its events are there, mounting it if needed."""
    if not os.path.isdir(f"{TRACEFS}/events"):
        subprocess.run(["mount", "-t", "tracefs", "nodev", TRACEFS], capture_output=True)
    return os.path.isdir(f"{TRACEFS}/events")


def write(path, value):
    with open(f"{TRACEFS}/{path}", "w") as f:
        f.write(value)


def formats():
    """{"system/event": format text without its ID line} for every event of SYSTEMS."""
    found = {}
    for system in SYSTEMS:
        sysdir = f"{TRACEFS}/events/{system}"
        if not os.path.isdir(sysdir):
            continue
        for event in sorted(os.listdir(sysdir)):
            fmt = f"{sysdir}/{event}/format"
            if os.path.isfile(fmt):
                with open(fmt) as f:
                    lines = [ln for ln in f.read().splitlines() if not ln.startswith("ID:")]
                found[f"{system}/{event}"] = "\n".join(lines) + "\n"
    return found


def enable_all(on):
    for system in SYSTEMS:
        write(f"events/{system}/enable", "1" if on else "0")


# One line of the trace: "task-pid [cpu] flags timestamp: event: text".
LINE = re.compile(r"\s(rvt_[a-z_]+): (.*)$")


def parse(text):
    """An event's text as {field: value}: "[dev] key value key value ...". rvt_dbg's
    "[dev]: message" gives {"msg": message}; rvt_create_cq's "user cq true" gives "user"."""
    m = re.match(r"\[([^\]]*)\]:? ?(.*)$", text)
    if not m:
        return {"text": text}
    fields = {"dev": m.group(1)}
    rest = m.group(2)
    if text.startswith(f"[{m.group(1)}]:"):
        fields["msg"] = rest
        return fields
    words = rest.replace("user cq ", "user ").split()
    for key, value in zip(words[::2], words[1::2]):
        fields[key] = value
    return fields


def read_trace(keep):
    """The recorded events, in order, as (name, fields); also kept in the run's results as
    trace_events.`keep`, when there are results."""
    events = []
    with open(f"{TRACEFS}/trace") as f:
        lines = f.readlines()
    if os.environ.get("RDMAVT_RS_OUT"):
        with open(os.path.join(os.environ["RDMAVT_RS_OUT"], f"trace_events.{keep}"), "w") as f:
            f.writelines(lines)
    for line in lines:
        if line.startswith("#"):
            continue
        m = LINE.search(line.rstrip("\n"))
        if m:
            events.append((m.group(1), parse(m.group(2))))
    return events


# --- The workload ---------------------------------------------------------------------------

class End:
    def __init__(self, ctx, pd):
        self.cq = CQ(ctx, CQE)
        cap = QPCap(max_send_wr=8, max_recv_wr=8, max_send_sge=2, max_recv_sge=2)
        self.qp = QP(pd, QPInitAttr(qp_type=e.IBV_QPT_RC, scq=self.cq, rcq=self.cq, cap=cap))
        self.mr = MR(pd, 4096, e.IBV_ACCESS_LOCAL_WRITE | e.IBV_ACCESS_REMOTE_WRITE)

    def sge(self, offset, length):
        return SGE(self.mr.buf + offset, length, self.mr.lkey)

    def completions(self, count):
        """`count` completions (a bounded wait), as (wr_id, status, opcode, byte_len)."""
        got = []
        for _ in range(1000):
            n, wcs = self.cq.poll(count - len(got))
            got += [(wc.wr_id, wc.status, wc.opcode, wc.byte_len) for wc in wcs[:n]]
            if len(got) == count:
                break
            time.sleep(0.005)
        return got

    def close(self):
        self.qp.close()
        self.mr.close()
        self.cq.close()


def connect(ends, lid, rnr_retry):
    for me, peer in ((ends[0], ends[1]), (ends[1], ends[0])):
        access = e.IBV_ACCESS_LOCAL_WRITE | e.IBV_ACCESS_REMOTE_WRITE
        me.qp.to_rts(connect_attr(peer.qp.qp_num, lid, access, rnr_retry))


def workload():
    """Runs the traffic; returns what the checks need to know: the QP numbers and the
    completions user space saw."""
    seen = {}
    with Context(name=DEV) as ctx, PD(ctx) as pd:
        lid = ctx.query_port(1).lid
        a, b = End(ctx, pd), End(ctx, pd)
        connect((a, b), lid, 7)
        for i in range(N):
            b.qp.post_recv(RecvWR(wr_id=RECV_WR_ID + i, num_sge=1, sg=[b.sge(0, M)]))
        for i in range(N):
            a.qp.post_send(SendWR(wr_id=SEND_WR_ID + i, opcode=e.IBV_WR_SEND, num_sge=1,
                                  sg=[a.sge(0, M)], send_flags=e.IBV_SEND_SIGNALED))
        write = SendWR(wr_id=WRITE_WR_ID, opcode=e.IBV_WR_RDMA_WRITE, num_sge=2,
                       sg=[a.sge(0, M // 2), a.sge(M // 2, M // 2)],
                       send_flags=e.IBV_SEND_SIGNALED)
        write.set_wr_rdma(b.mr.rkey, b.mr.buf)
        a.qp.post_send(write)
        seen["a_wc"] = a.completions(N + 1)
        seen["b_wc"] = b.completions(N)

        c, d = End(ctx, pd), End(ctx, pd)
        connect((c, d), lid, 1)
        c.qp.post_send(SendWR(wr_id=RNR_WR_ID, opcode=e.IBV_WR_SEND, num_sge=1,
                              sg=[c.sge(0, RNR_LEN)], send_flags=e.IBV_SEND_SIGNALED))
        seen["c_wc"] = c.completions(1)
        seen["qpn"] = {name: end.qp.qp_num for name, end in zip("abcd", (a, b, c, d))}
        for end in (a, b, c, d):
            end.close()
    return seen


def traced_run():
    """rvt_loop loaded, the workload, rvt_loop unloaded, all with the events on."""
    enable_all(False)
    write("trace", "")
    write("tracing_on", "1")
    enable_all(True)
    try:
        load = subprocess.run(["insmod", f"{REPO}/rvt_loop.ko"], capture_output=True,
                              text=True)
        if load.returncode != 0:
            raise RuntimeError(f"rvt_loop loads: {load.stderr.strip()}")
        try:
            seen = workload()
        finally:
            subprocess.run(["rmmod", "rvt_loop"], check=False)
    finally:
        enable_all(False)
    events = read_trace("trace")
    write("trace", "")
    return seen, events


# --- Checks --------------------------------------------------------------------------------

def read_golden(name):
    with open(os.path.join(GOLDEN, name)) as f:
        return f.read()


def split_formats(text):
    """The golden formats file: "=== system/event" headers, each followed by its format."""
    out = {}
    for chunk in text.split("=== ")[1:]:
        name, _, body = chunk.partition("\n")
        out[name] = body
    return out


def join_formats(found):
    return "".join(f"=== {name}\n{body}" for name, body in sorted(found.items()))


def check_formats():
    want = split_formats(read_golden("formats"))
    got = formats()
    for name in sorted(want):
        same = got.get(name) == want[name]
        point(same, f"format of {name}: {'as C' if same else 'missing' if name not in got else 'differs'}")
        if name in got and not same:
            for a, b in zip(want[name].splitlines(), got[name].splitlines()):
                if a != b:
                    print(f"# C:  {a}\n# got: {b}")
    extra = sorted(set(got) - set(want))
    point(not extra, f"no events beyond the C rdmavt's ({len(want)}): {extra or 'none'}")


def counts_text(counter):
    return "".join(f"{name} {counter[name]}\n" for name in sorted(counter))


def check_counts(events):
    want = {}
    for line in read_golden("counts").splitlines():
        name, count = line.split()
        want[name] = int(count)
    got = Counter(name for name, _ in events)
    for name in sorted(set(want) | set(got)):
        point(got[name] == want.get(name, 0),
              f"{name} fired {got[name]} times (C: {want.get(name, 0)})")


def normalized(events):
    """Each event as one line, "name field=value ...", address fields masked."""
    return [f"{name} " + " ".join(f"{k}={'*' if k in ADDRESS_FIELDS else v}"
                                  for k, v in fields.items())
            for name, fields in events]


def check_fields(events):
    """Every event, with its fields in order, as on the C rdmavt: the same multiset of lines
    (the order of events from different CPUs may differ from run to run)."""
    want = Counter(read_golden("events").splitlines())
    got = Counter(normalized(events))
    point(got == want, f"every event's fields, addresses aside, as on C "
          f"({sum(want.values())} events): {'yes' if got == want else 'no'}")
    for line in sorted((want - got).elements()):
        print(f"# C only:  {line}")
    for line in sorted((got - want).elements()):
        print(f"# here only: {line}")


def of(events, name):
    return [fields for ev, fields in events if ev == name]


def expect(desc, got, want):
    point(got == want, f"{desc}: {got} (expected {want})")


def check_posts(events, qpn):
    posts = [(int(f["qpn"], 16), int(f["wr_id"], 16), f["opcode"], int(f["length"]),
              int(f["num_sge"]), int(f["wr_num_sge"])) for f in of(events, "rvt_post_one_wr")]
    send = f"0x{IB_WR_SEND:02x},SEND"
    want = [(qpn["a"], SEND_WR_ID + i, send, M, 1, 1) for i in range(N)]
    # The WRITE's two SGEs are contiguous in user space, and stay two: see check_sges.
    want.append((qpn["a"], WRITE_WR_ID, f"0x{IB_WR_RDMA_WRITE:02x},RDMA_WRITE", M, 2, 2))
    want.append((qpn["c"], RNR_WR_ID, send, RNR_LEN, 1, 1))
    expect("rvt_post_one_wr: one per send WR, (qpn, wr_id, opcode, length, num_sge, "
           "wr_num_sge)", posts, want)
    done = [(int(f["qpn"], 16), int(f["wr_id"], 16), int(f["length"]))
            for f in of(events, "rvt_qp_send_completion")]
    expect("rvt_qp_send_completion: one per send WQE, (qpn, wr_id, length)", done,
           [(q, w, n) for q, w, _, n, _, _ in want])


def check_completions(events, qpn, seen):
    entered = Counter((int(f["qpn"], 16), int(f["wr_id"], 16), int(f["status"]),
                       int(f["opcode"].split(",")[0]), int(f["length"]))
                      for f in of(events, "rvt_cq_enter"))
    want = Counter([(qpn["a"], SEND_WR_ID + i, e.IBV_WC_SUCCESS, IB_WC_SEND, M)
                    for i in range(N)])
    want[(qpn["a"], WRITE_WR_ID, e.IBV_WC_SUCCESS, IB_WC_RDMA_WRITE, M)] += 1
    want.update((qpn["b"], RECV_WR_ID + i, e.IBV_WC_SUCCESS, IB_WC_RECV, M) for i in range(N))
    want[(qpn["c"], RNR_WR_ID, e.IBV_WC_RNR_RETRY_EXC_ERR, IB_WC_SEND, RNR_LEN)] += 1
    point(entered == want, f"rvt_cq_enter: one per completion ({sum(want.values())}), with "
          f"the expected (qpn, wr_id, status, opcode, length): "
          f"{'yes' if entered == want else 'no'}")
    if entered != want:
        print(f"# got      {sorted(entered.items())}\n# expected {sorted(want.items())}")
    polled = Counter((w, s, n) for w, s, _, n in seen["a_wc"] + seen["b_wc"] + seen["c_wc"])
    traced = Counter((w, s, n) for _, w, s, _, n in entered.elements())
    expect("user space polled what rvt_cq_enter traced", polled == traced, True)
    idx_ok = all(f["idx"].isdigit() for f in of(events, "rvt_cq_enter"))
    expect("rvt_cq_enter: every idx a ring slot number", idx_ok, True)


def check_qps_and_cqs(events, qpn):
    mine = sorted(qpn.values())
    for name in ("rvt_qpinsert", "rvt_qpremove"):
        got = sorted(int(f["qpn"], 16) for f in of(events, name)
                     if int(f["qpn"], 16) in mine)
        expect(f"{name}: once per QP of the workload", got, mine)
    user = [(f["user"], int(f["cqe"])) for f in of(events, "rvt_create_cq") if f["user"] == "true"]
    expect("rvt_create_cq: one per user CQ, with its size", user, [("true", CQE)] * 4)
    msgs = [(f["dev"], f["msg"]) for f in of(events, "rvt_dbg")]
    expect("rvt_dbg at rvt_loop's registration and unregistration", msgs,
           [(DEV, "Driver attempting registration"), (DEV, "Driver is unregistering.")])


def check_rnr(events, qpn):
    rnr = [(name, int(f["qpn"], 16), int(f["timeout"]))
           for name, f in events if name.startswith("rvt_rnrnak_")]
    expect("RNR: the timer added, stopped and timed out once, in order, (event, qpn, us)", rnr,
           [("rvt_rnrnak_add", qpn["c"], RNR_USECS), ("rvt_rnrnak_stop", qpn["c"], 0),
            ("rvt_rnrnak_timeout", qpn["c"], 0)])


def check_sges(events, qpn):
    new = of(events, "rvt_sge_new")
    # The send side's 8 SGEs and the 5 receives' one each.
    expect("rvt_sge_new: one per stored SGE", len(new), N + 2 + 1 + N)
    # rvt_sge_adjacent merges an SGE that starts where the last one ends, but compares the
    # last one's kernel address (its segment's) with the new one's address as posted: for a
    # user MR those never meet, so the WRITE's two contiguous SGEs stay two, on C as here.
    # Only the DMA MR's SGEs (lkey 0, kernel addresses, kernel consumers) are ever merged.
    adj = of(events, "rvt_sge_adjacent")
    expect("rvt_sge_adjacent: never, for SGEs of a user MR", len(adj), 0)
    segs = [(int(f["m"]), int(f["n"]), int(f["len"])) for f in of(events, "rvt_mr_user_seg")]
    expect("rvt_mr_user_seg: the one page of each of the 4 MRs, (m, n, len)", segs,
           [(0, 0, 4096)] * 4)


# The events only kernel consumers fire, and the kernel verbs module that is one.
KERNEL_EVENTS = ("rvt_cq/rvt_cq_poll", "rvt_mr/rvt_map_mr_sg", "rvt_mr/rvt_mr_page_seg")
KVERBS = f"{REPO}/rvt_loop_kverbs.ko"


def kernel_consumers():
    """rvt_loop_kverbs.ko's suite (tests/kverbs/) with the events of kernel consumers on:
    polling kernel CQs and fast-register MRs. Its fault-injection sweeps make as many
    attempts as the rdmavt under them makes allocations, so the counts are not C's: each
    event fires, with fields that agree with each other."""
    if not os.path.exists(KVERBS):
        skip("events of kernel consumers", "rvt_loop_kverbs.ko not built (no KUnit)")
        return
    write("trace", "")
    for event in KERNEL_EVENTS:
        write(f"events/{event}/enable", "1")
    try:
        for cmd in (["insmod", f"{REPO}/rvt_loop.ko"], ["insmod", KVERBS],
                    ["rmmod", "rvt_loop_kverbs"], ["rmmod", "rvt_loop"]):
            subprocess.run(cmd, capture_output=True, check=False)
    finally:
        for event in KERNEL_EVENTS:
            write(f"events/{event}/enable", "0")
    events = read_trace("kverbs.trace")
    write("trace", "")
    maps = of(events, "rvt_map_mr_sg")
    # C sets the region's iova and user_base from the ib_mr's iova, and its length from
    # the ib_mr's.
    consistent = all(f["ibmr_iova"] == f["iova"] == f["user_base"] and int(f["length"], 16) > 0
                     and int(f["sg_nents"]) == 1 for f in maps)
    expect("kernel consumers: rvt_map_mr_sg fires, one SG entry, iova = ibmr_iova = "
           "user_base", (len(maps) > 0, consistent), (True, True))
    pages = of(events, "rvt_mr_page_seg")
    expect("kernel consumers: rvt_mr_page_seg fires, pages of 4096 bytes, at least one per "
           "mapping", (len(pages) >= len(maps) > 0, all(f["len"] == "4096" for f in pages)),
           (True, True))
    polls = of(events, "rvt_cq_poll")
    expect("kernel consumers: rvt_cq_poll fires, each batch counted from 0",
           (len(polls) > 0, any(f["idx"] == "0" for f in polls),
            all("," in f["opcode"] for f in polls)), (True, True, True))


def run():
    print("TAP version 13")
    if not tracefs_ready():
        skip("trace events", "no tracefs (/sys/kernel/tracing/events)")
        print("1..1")
        return 0
    if "--golden" in sys.argv:
        out = sys.argv[sys.argv.index("--golden") + 1]
        os.makedirs(out, exist_ok=True)
        with open(os.path.join(out, "formats"), "w") as f:
            f.write(join_formats(formats()))
        _, events = traced_run()
        with open(os.path.join(out, "counts"), "w") as f:
            f.write(counts_text(Counter(name for name, _ in events)))
        with open(os.path.join(out, "events"), "w") as f:
            f.write("".join(f"{line}\n" for line in normalized(events)))
        point(True, f"golden files written to {out}")
        print("1..1")
        return 0
    try:
        check_formats()
        seen, events = traced_run()
        print(f"# {len(events)} events recorded")
        qpn = seen["qpn"]
        check_counts(events)
        check_fields(events)
        check_posts(events, qpn)
        check_completions(events, qpn, seen)
        check_qps_and_cqs(events, qpn)
        check_rnr(events, qpn)
        check_sges(events, qpn)
        kernel_consumers()
    except Exception as err:  # noqa: BLE001 - any failure fails the test, with its reason
        point(False, f"trace_events: {type(err).__name__}: {err}")
    print(f"1..{len(_points)}")
    return 0 if _points and all(_points) else 1


if __name__ == "__main__":
    sys.exit(run())
