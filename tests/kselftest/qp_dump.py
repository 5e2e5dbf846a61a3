#!/usr/bin/python3
# SPDX-License-Identifier: GPL-2.0-only
#
# /sys/kernel/debug/rvt_loop/<device>/qp_stats, the QP dump rvt_loop makes through rdmavt's
# rvt_qp_iter(): while QPs of several types and states exist it lists each of them, with
# its number, type and state, and its send and receive queue positions as the test moved
# them (a QP still in RESET is in no table, so not listed); a destroyed QP leaves the list; the directory goes with the module. Runs on both
# rdmavt modules; TAP on stdout.
#
# Uses Debian's /usr/bin/python3, for which python3-pyverbs is installed.

import os
import subprocess
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
import pyverbs.enums as e  # noqa: E402
from ktap import DEV, REPO, main, point  # noqa: E402
from pyverbs.addr import AH, AHAttr  # noqa: E402
from pyverbs.cq import CQ  # noqa: E402
from pyverbs.device import Context  # noqa: E402
from pyverbs.mr import MR  # noqa: E402
from pyverbs.pd import PD  # noqa: E402
from pyverbs.qp import QP, QPAttr, QPCap, QPInitAttr  # noqa: E402
from pyverbs.wr import SGE, RecvWR, SendWR  # noqa: E402

DEBUGFS = "/sys/kernel/debug"
ROOT = f"{DEBUGFS}/rvt_loop"
FILE = f"{ROOT}/{DEV}/qp_stats"
QKEY = 0x11111111


def dump():
    """The file's lines, as {qpn: {field: value}}."""
    with open(FILE) as f:
        lines = f.read().splitlines()
    qps = {}
    for line in lines:
        fields = dict(kv.split("=", 1) for kv in line.split())
        qps[int(fields["qpn"], 16)] = fields
    return qps


def shows(qps, qpn, want):
    """One point: QP `qpn` is listed with the fields `want` has."""
    got = qps.get(qpn)
    if got is None:
        point(False, f"QP {qpn:#x}: not listed")
        return
    got = {k: got.get(k) for k in want}
    point(got == want, f"QP {qpn:#x}: {got}" + ("" if got == want else f" (expected {want})"))


def modify(qp, state):
    attr = QPAttr(qp_state=state)
    mask = e.IBV_QP_STATE
    if state == e.IBV_QPS_INIT:
        attr.pkey_index = 0
        attr.port_num = 1
        attr.qp_access_flags = e.IBV_ACCESS_LOCAL_WRITE
        mask |= e.IBV_QP_PKEY_INDEX | e.IBV_QP_PORT | e.IBV_QP_ACCESS_FLAGS
    qp.modify(attr, mask)


def run():
    if not os.path.ismount(DEBUGFS):
        subprocess.run(["mount", "-t", "debugfs", "none", DEBUGFS], check=False)
    point(os.path.isfile(FILE), f"{FILE} exists")
    with Context(name=DEV) as ctx, PD(ctx) as pd, CQ(ctx, 16) as cq:
        mr = MR(pd, 4096, e.IBV_ACCESS_LOCAL_WRITE)
        cap = QPCap(max_send_wr=4, max_recv_wr=4, max_send_sge=1, max_recv_sge=1)

        def qp(qpt, attr=None):
            return QP(pd, QPInitAttr(qp_type=qpt, scq=cq, rcq=cq, cap=cap), attr)

        rc_reset = qp(e.IBV_QPT_RC)
        rc_init = qp(e.IBV_QPT_RC)
        modify(rc_init, e.IBV_QPS_INIT)
        uc_err = qp(e.IBV_QPT_UC)
        # ib_core takes RESET only to INIT (or RESET); INIT to ERR.
        modify(uc_err, e.IBV_QPS_INIT)
        modify(uc_err, e.IBV_QPS_ERR)
        ud_attr = QPAttr(port_num=1)
        ud_attr.qkey = QKEY
        ud = qp(e.IBV_QPT_UD, ud_attr)
        # Two receives on the RC QP in INIT, and three sends from the UD QP to itself, with
        # receives for them: its send queue's head and last move to 3, its receive queue's
        # head to 3 and (as the datagrams land) its tail too.
        for i in range(2):
            rc_init.post_recv(RecvWR(wr_id=i, num_sge=1, sg=[SGE(mr.buf, 64, mr.lkey)]))
        for i in range(3):
            ud.post_recv(RecvWR(wr_id=i, num_sge=1, sg=[SGE(mr.buf, 128, mr.lkey)]))
        ah = AH(pd, attr=AHAttr(port_num=1, dlid=ctx.query_port(1).lid))
        for i in range(3):
            wr = SendWR(wr_id=i, opcode=e.IBV_WR_SEND, num_sge=1,
                        sg=[SGE(mr.buf + 1024, 16, mr.lkey)], send_flags=e.IBV_SEND_SIGNALED)
            wr.set_wr_ud(ah, ud.qp_num, QKEY)
            ud.post_send(wr)
        for _ in range(1000):
            if cq.poll(6)[0] == 0 and dump()[ud.qp_num].get("s_last") == "3":
                break
            time.sleep(0.005)

        qps = dump()
        # The port's special QPs, which ib_core's MAD layer creates at registration.
        shows(qps, 0, {"type": "SMI", "state": "RTS"})
        shows(qps, 1, {"type": "GSI", "state": "RTS"})
        # rdmavt puts a QP in its table (rvt_insert_qp) when it first leaves RESET, and
        # rvt_qp_iter() walks the table: a QP still in RESET is not listed, as on hfi1.
        point(rc_reset.qp_num not in qps, f"QP {rc_reset.qp_num:#x} (RESET): not listed")
        shows(qps, rc_init.qp_num, {"type": "RC", "state": "INIT", "r_head": "2",
                                    "r_tail": "0"})
        shows(qps, uc_err.qp_num, {"type": "UC", "state": "ERR"})
        shows(qps, ud.qp_num, {"type": "UD", "state": "RTS", "s_head": "3", "s_last": "3",
                               "r_head": "3", "r_tail": "3"})
        mine = {rc_init.qp_num, uc_err.qp_num, ud.qp_num}
        point(set(qps) == mine | {0, 1}, f"no other QPs listed: {sorted(set(qps) - mine)}")

        gone = rc_init.qp_num
        rc_init.close()
        point(gone not in dump(), f"QP {gone:#x}: gone once destroyed")
        for obj in (ah, ud, uc_err, rc_reset, mr):
            obj.close()
    point(set(dump()) == {0, 1}, "only the special QPs left")
    # Unloading the module removes the directory; main() unloads it again at the end.
    subprocess.run(["rmmod", "rvt_loop"], check=False)
    point(not os.path.exists(ROOT), f"{ROOT} removed with the module")
    subprocess.run(["insmod", f"{REPO}/rvt_loop.ko"], check=False)
    point(os.path.isfile(FILE), f"{FILE} back with the module")


if __name__ == "__main__":
    sys.exit(main("qp_dump", run))
