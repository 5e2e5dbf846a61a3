#!/usr/bin/python3
# SPDX-License-Identifier: GPL-2.0-only
#
# Hostile and out-of-range input to the verbs rdmavt serves, from user space through
# libibverbs on rvt_loop0: each must fail with the errno the C rdmavt gives (the reference),
# never crash or leak (the run's kernel log is checked for reports afterwards). Runs on both
# rdmavt modules; TAP on stdout.
#
# Uses Debian's /usr/bin/python3, for which python3-pyverbs is installed.

import errno
import mmap
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
import pyverbs.enums as e  # noqa: E402
from ktap import DEV, fails_with, main  # noqa: E402
from pyverbs.addr import AH, AHAttr, GlobalRoute  # noqa: E402
from pyverbs.cq import CQ  # noqa: E402
from pyverbs.device import Context  # noqa: E402
from pyverbs.mr import MR  # noqa: E402
from pyverbs.pd import PD  # noqa: E402


def run():
    with Context(name=DEV) as ctx:
        attr = ctx.query_device()
        with PD(ctx) as pd:
            # Remote write without local write is not a valid combination (IBTA o10-37).
            fails_with("MR with remote write but no local write", errno.EINVAL,
                       lambda: MR(pd, 4096, e.IBV_ACCESS_REMOTE_WRITE))
            # A length no process can have mapped: more pages than ib_umem counts (C: EINVAL).
            fails_with("MR longer than the address space", errno.EINVAL,
                       lambda: MR(pd, 1 << 62, e.IBV_ACCESS_LOCAL_WRITE, address=0x10000))
            fails_with("CQ larger than max_cqe", errno.EINVAL,
                       lambda: CQ(ctx, attr.max_cqe + 1))
            # A missing port and a GID index beyond the table are refused by ib_uverbs and
            # ib_core before rdmavt sees the AH; SL and a multicast DLID without a GRH reach
            # rvt_check_ah(), which leaves them to the driver (rvt_loop's check_ah).
            fails_with("AH on a port that does not exist", errno.EINVAL,
                       lambda: AH(pd, attr=AHAttr(port_num=2, dlid=1)))
            port = ctx.query_port(1)
            fails_with("AH with a GRH whose source GID index is beyond the table", errno.EINVAL,
                       lambda: AH(pd, attr=AHAttr(port_num=1, dlid=1, is_global=1,
                                                  gr=GlobalRoute(sgid_index=port.gid_tbl_len))))
            fails_with("AH with service level 16", errno.EINVAL,
                       lambda: AH(pd, attr=AHAttr(port_num=1, dlid=1, sl=16)))
            fails_with("AH to a multicast LID without a GRH", errno.EINVAL,
                       lambda: AH(pd, attr=AHAttr(port_num=1, dlid=0xc001)))
        # The first 256 pages are the driver's (rvt_loop has no mmap of its own); above them
        # nothing was created, so nothing may be mapped.
        for offset in (0, 4096 * 256, 4096 * 4096):
            fails_with(f"mmap of the uverbs file at offset {offset:#x}", errno.EINVAL,
                       lambda: mmap.mmap(ctx.cmd_fd, 4096, offset=offset))


if __name__ == "__main__":
    sys.exit(main("bad input", run))
