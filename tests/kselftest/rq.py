#!/usr/bin/python3
# SPDX-License-Identifier: GPL-2.0-only
#
# A QP's own receive queue from user space (libhfi1verbs posts into the mmap'd ring): the
# receives still queued when the QP enters the error state complete with
# IB_WC_WR_FLUSH_ERR, in order, as C's rvt_error_qp() flushes them. Runs on both rdmavt
# modules; TAP on stdout.
#
# Uses Debian's /usr/bin/python3, for which python3-pyverbs is installed.

import os
import subprocess
import sys

REPO = os.environ["RDMAVT_RS_REPO"]
DEV = "rvt_loop0"
points = []


def point(ok, desc):
    points.append((ok, desc))
    print(f"{'ok' if ok else 'not ok'} {len(points)} {desc}", flush=True)


def main():
    print("TAP version 13")
    try:
        import pyverbs.enums as e
        from pyverbs.cq import CQ
        from pyverbs.device import Context
        from pyverbs.mr import MR
        from pyverbs.pd import PD
        from pyverbs.qp import QP, QPAttr, QPCap, QPInitAttr
        from pyverbs.wr import SGE, RecvWR
    except ImportError as err:
        print(f"ok 1 rq # SKIP python3-pyverbs is missing ({err})")
        return 0
    load = subprocess.run(["insmod", f"{REPO}/rvt_loop.ko"], capture_output=True, text=True)
    if load.returncode != 0:
        point(False, f"rq: rvt_loop loads: {load.stderr.strip()}")
        return 1
    try:
        with Context(name=DEV) as ctx, PD(ctx) as pd, CQ(ctx, 32) as cq:
            mr = MR(pd, 4096, e.IBV_ACCESS_LOCAL_WRITE)
            cap = QPCap(max_send_wr=4, max_recv_wr=8, max_send_sge=1, max_recv_sge=2)
            qp = QP(pd, QPInitAttr(qp_type=e.IBV_QPT_RC, scq=cq, rcq=cq, cap=cap))
            init = QPAttr(qp_state=e.IBV_QPS_INIT)
            init.pkey_index = 0
            init.port_num = 1
            init.qp_access_flags = e.IBV_ACCESS_LOCAL_WRITE
            qp.modify(init, e.IBV_QP_STATE | e.IBV_QP_PKEY_INDEX | e.IBV_QP_PORT |
                      e.IBV_QP_ACCESS_FLAGS)
            for i in range(5):
                qp.post_recv(RecvWR(wr_id=100 + i, num_sge=2,
                                    sg=[SGE(mr.buf, 64, mr.lkey), SGE(mr.buf + 64, 64, mr.lkey)]))
            point(cq.poll(1)[0] == 0, "no completion before the error state")
            qp.modify(QPAttr(qp_state=e.IBV_QPS_ERR), e.IBV_QP_STATE)
            n, wcs = cq.poll(32)
            got = [(wc.wr_id, int(wc.status)) for wc in wcs[:n]]
            want = [(100 + i, int(e.IBV_WC_WR_FLUSH_ERR)) for i in range(5)]
            point(got == want, f"error state: {got} (expected {want})")
            qp.modify(QPAttr(qp_state=e.IBV_QPS_ERR), e.IBV_QP_STATE)
            point(cq.poll(32)[0] == 0, "nothing flushed twice")
            qp.close()
            mr.close()
    except Exception as ex:
        point(False, f"rq: {type(ex).__name__}: {ex}")
    finally:
        subprocess.run(["rmmod", "rvt_loop"])
    return 0 if all(ok for ok, _ in points) else 1


if __name__ == "__main__":
    sys.exit(main())
