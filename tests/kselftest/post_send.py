#!/usr/bin/python3
# SPDX-License-Identifier: GPL-2.0-only
#
# ibv_post_send from user space on rvt_loop0, through uverbs to rdmavt's post_send: bad
# requests fail with the errno the C rdmavt gives (the reference), a good one is queued, and
# destroying a QP with queued sends releases them (the run's kernel log and kmemleak are
# checked afterwards). rvt_loop has no send engine yet, so nothing completes. Runs on both
# rdmavt modules; TAP on stdout.
#
# Uses Debian's /usr/bin/python3, for which python3-pyverbs is installed.

import errno
import os
import subprocess
import sys

REPO = os.environ["RDMAVT_RS_REPO"]
DEV = "rvt_loop0"
QKEY = 0x11111111
points = []


def point(ok, desc):
    points.append((ok, desc))
    print(f"{'ok' if ok else 'not ok'} {len(points)} {desc}", flush=True)


def posts(desc, expected, qp, wr):
    """One point: posting `wr` on `qp` fails with `expected` (0: succeeds)."""
    try:
        qp.post_send(wr)
        code = 0
    except Exception as e:  # pyverbs raises PyverbsRDMAError
        code = getattr(e, "error_code", None)
        if code != expected:
            print(f"# {type(e).__name__}: {e}")
    point(code == expected, f"{desc}: errno {code} (expected {expected})")


def main():
    print("TAP version 13")
    try:
        from pyverbs.addr import AH, AHAttr
        from pyverbs.cq import CQ
        from pyverbs.device import Context
        from pyverbs.mr import MR
        from pyverbs.pd import PD
        from pyverbs.qp import QP, QPAttr, QPCap, QPInitAttr
        from pyverbs.wr import SGE, SendWR
        import pyverbs.enums as e
    except ImportError as err:
        print(f"ok 1 post_send # SKIP python3-pyverbs is missing ({err})")
        return 0
    load = subprocess.run(["insmod", f"{REPO}/rvt_loop.ko"], capture_output=True, text=True)
    if load.returncode != 0:
        point(False, f"post_send: rvt_loop loads: {load.stderr.strip()}")
        return 1
    v = dict(AH=AH, AHAttr=AHAttr, CQ=CQ, Context=Context, MR=MR, PD=PD, QP=QP, QPAttr=QPAttr,
             QPCap=QPCap, QPInitAttr=QPInitAttr, SGE=SGE, SendWR=SendWR, e=e)
    try:
        run(v)
    finally:
        subprocess.run(["rmmod", "rvt_loop"])
    return 0 if all(ok for ok, _ in points) else 1


def run(v):
    e = v["e"]
    with v["Context"](name=DEV) as ctx, v["PD"](ctx) as pd, v["CQ"](ctx, 16) as cq:
        mr = v["MR"](pd, 4096, e.IBV_ACCESS_LOCAL_WRITE)
        ah = v["AH"](pd, attr=v["AHAttr"](port_num=1, dlid=1))
        cap = v["QPCap"](max_send_wr=4, max_recv_wr=4, max_send_sge=2, max_recv_sge=1)
        init = v["QPInitAttr"](qp_type=e.IBV_QPT_UD, scq=cq, rcq=cq, cap=cap)

        def send(sges, opcode=e.IBV_WR_SEND):
            wr = v["SendWR"](opcode=opcode, num_sge=len(sges), sg=sges)
            wr.set_wr_ud(ah, 1, QKEY)
            return wr

        good = v["SGE"](mr.buf, 64, mr.lkey)
        # A QP in RESET takes no sends.
        qp = v["QP"](pd, init)
        posts("send on a QP in RESET", errno.EINVAL, qp, send([good]))
        qp.close()
        # Brought to RTS by pyverbs (a UD QP needs no remote side).
        qa = v["QPAttr"](port_num=1)
        qa.qkey = QKEY
        qp = v["QP"](pd, init, qa)
        posts("send with more SGEs than max_send_sge", errno.EINVAL, qp, send([good] * 3))
        posts("send with an unknown lkey", errno.EINVAL, qp,
              send([v["SGE"](mr.buf, 64, mr.lkey ^ 0xffff00)]))
        posts("send beyond the MR", errno.EINVAL, qp, send([v["SGE"](mr.buf, 8192, mr.lkey)]))
        posts("RDMA write on a UD QP", errno.EINVAL, qp, send([good], e.IBV_WR_RDMA_WRITE))
        posts("a good send", 0, qp, send([good]))
        posts("a send with two SGEs", 0, qp, send([good, v["SGE"](mr.buf + 64, 64, mr.lkey)]))
        # Destroying the QP releases the queued sends' MR references: the MR can go after.
        qp.close()
        ah.close()
        mr.close()
        point(True, "QP, AH and MR destroyed with sends queued")


if __name__ == "__main__":
    sys.exit(main())
