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
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
import pyverbs.enums as e  # noqa: E402
from ktap import DEV, main, point  # noqa: E402
from pyverbs.cq import CQ  # noqa: E402
from pyverbs.device import Context  # noqa: E402
from pyverbs.mr import MR  # noqa: E402
from pyverbs.pd import PD  # noqa: E402
from pyverbs.qp import QP, QPAttr, QPCap, QPInitAttr  # noqa: E402
from pyverbs.wr import SGE, RecvWR  # noqa: E402


def run():
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


if __name__ == "__main__":
    sys.exit(main("rq", run))
