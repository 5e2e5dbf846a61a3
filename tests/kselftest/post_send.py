#!/usr/bin/python3
# SPDX-License-Identifier: GPL-2.0-only
#
# ibv_post_send from user space on rvt_loop0, through uverbs to rdmavt's post_send: bad
# requests fail with the errno the C rdmavt gives (the reference), a good one is queued, and
# destroying a QP whose sends may still be queued releases them (the run's kernel log and
# kmemleak are checked afterwards). Runs on both rdmavt modules; TAP on stdout.
#
# Uses Debian's /usr/bin/python3, for which python3-pyverbs is installed.

import errno
import os
import re
import subprocess
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
import pyverbs.enums as e  # noqa: E402
from ktap import DEV, main, point  # noqa: E402
from pyverbs.addr import AH, AHAttr  # noqa: E402
from pyverbs.cq import CQ  # noqa: E402
from pyverbs.device import Context  # noqa: E402
from pyverbs.mr import MR  # noqa: E402
from pyverbs.pd import PD  # noqa: E402
from pyverbs.qp import QP, QPAttr, QPCap, QPInitAttr  # noqa: E402
from pyverbs.wr import SGE, SendWR  # noqa: E402

QKEY = 0x11111111


def posts(desc, expected, qp, wr):
    """One point: posting `wr` on `qp` fails with `expected` (0: succeeds)."""
    try:
        qp.post_send(wr)
        code = 0
    except Exception as err:  # noqa: BLE001 - pyverbs raises PyverbsRDMAError
        code = getattr(err, "error_code", None)
        if code != expected:
            print(f"# {type(err).__name__}: {err}")
    point(code == expected, f"{desc}: errno {code} (expected {expected})")


def closes(obj):
    """Destroys a pyverbs object; whether that succeeded (else says why)."""
    try:
        obj.close()
    except Exception as err:  # noqa: BLE001 - any failure is the answer under test
        print(f"# {type(obj).__name__}.close(): {type(err).__name__}: {err}")
        return False
    return True


def tracked():
    """The device's QPs and MRs as ib_core's resource tracking counts them (`rdma resource
    show`, whose summary reads "0: rvt_loop0: pd 1 cq 1 qp 2 ... mr 0 ..."), or the error."""
    res = subprocess.run(["rdma", "resource", "show", DEV], capture_output=True, text=True)
    counts = dict(re.findall(r"\b(qp|mr) (\d+)", res.stdout))
    if res.returncode != 0 or set(counts) != {"qp", "mr"}:
        return f"unknown ({res.stdout.strip()} {res.stderr.strip()})"
    return f"qp {counts['qp']} mr {counts['mr']}"


def run():
    with Context(name=DEV) as ctx, PD(ctx) as pd, CQ(ctx, 16) as cq:
        # The QPs and MRs of the device before this test makes any.
        before = tracked()
        mr = MR(pd, 4096, e.IBV_ACCESS_LOCAL_WRITE)
        ah = AH(pd, attr=AHAttr(port_num=1, dlid=1))
        cap = QPCap(max_send_wr=4, max_recv_wr=4, max_send_sge=2, max_recv_sge=1)
        init = QPInitAttr(qp_type=e.IBV_QPT_UD, scq=cq, rcq=cq, cap=cap)

        def send(sges, opcode=e.IBV_WR_SEND):
            wr = SendWR(opcode=opcode, num_sge=len(sges), sg=sges)
            wr.set_wr_ud(ah, 1, QKEY)
            return wr

        good = SGE(mr.buf, 64, mr.lkey)
        # A QP in RESET takes no sends.
        qp = QP(pd, init)
        posts("send on a QP in RESET", errno.EINVAL, qp, send([good]))
        qp.close()
        # Brought to RTS by pyverbs (a UD QP needs no remote side).
        qa = QPAttr(port_num=1)
        qa.qkey = QKEY
        qp = QP(pd, init, qa)
        posts("send with more SGEs than max_send_sge", errno.EINVAL, qp, send([good] * 3))
        posts("send with an unknown lkey", errno.EINVAL, qp,
              send([SGE(mr.buf, 64, mr.lkey ^ 0xffff00)]))
        posts("send beyond the MR", errno.EINVAL, qp, send([SGE(mr.buf, 8192, mr.lkey)]))
        posts("RDMA write on a UD QP", errno.EINVAL, qp, send([good], e.IBV_WR_RDMA_WRITE))
        # rvt_loop's setup_wqe, as hfi1's: a datagram fits one packet of the port's MTU.
        mtu = 128 << ctx.query_port(1).active_mtu
        posts(f"a datagram of {mtu + 1} bytes, over the MTU", errno.EINVAL, qp,
              send([SGE(mr.buf, mtu, mr.lkey), SGE(mr.buf, 1, mr.lkey)]))
        posts("a good send", 0, qp, send([good]))
        posts("a send with two SGEs", 0, qp, send([good, SGE(mr.buf + 64, 64, mr.lkey)]))
        # Destroying the QP releases the queued sends' MR references: the MR can go after
        # (rvt_dereg_mr fails with EBUSY while a reference is held), and ib_core's resource
        # tracking counts one QP and one MR fewer.
        failed = [what for what, obj in (("QP", qp), ("AH", ah), ("MR", mr))
                  if not closes(obj)]
        point(not failed, "QP, AH and MR destroyed with sends queued"
              + (f": {', '.join(failed)} failed" if failed else ""))
        after = tracked()
        point(after == before, f"rdma resource: QPs and MRs {after} after (expected {before})")


if __name__ == "__main__":
    sys.exit(main("post_send", run))
