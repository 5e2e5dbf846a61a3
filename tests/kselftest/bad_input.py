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
import subprocess
import sys

REPO = os.environ["RDMAVT_RS_REPO"]
DEV = "rvt_loop0"
points = []


def point(ok, desc):
    points.append((ok, desc))
    print(f"{'ok' if ok else 'not ok'} {len(points)} {desc}", flush=True)


def fails_with(desc, expected, fn):
    """One point: fn() raises an error whose errno is `expected`."""
    try:
        obj = fn()
    except Exception as e:  # pyverbs raises PyverbsRDMAError, mmap raises OSError
        code = getattr(e, "error_code", None) or getattr(e, "errno", None)
        point(code == expected, f"{desc}: errno {code} (expected {expected})")
        if code != expected:
            print(f"# {type(e).__name__}: {e}")
        return
    close = getattr(obj, "close", None)
    if close:
        close()
    point(False, f"{desc}: succeeded (expected errno {expected})")


def main():
    print("TAP version 13")
    try:
        from pyverbs.addr import AH, AHAttr, GlobalRoute
        from pyverbs.cq import CQ
        from pyverbs.device import Context
        from pyverbs.mr import MR
        from pyverbs.pd import PD
        import pyverbs.enums as e
    except ImportError as err:
        print(f"ok 1 bad input # SKIP python3-pyverbs is missing ({err})")
        return 0
    load = subprocess.run(["insmod", f"{REPO}/rvt_loop.ko"], capture_output=True, text=True)
    if load.returncode != 0:
        point(False, f"bad input: rvt_loop loads: {load.stderr.strip()}")
        return 1
    try:
        run(Context, PD, MR, CQ, AH, AHAttr, GlobalRoute, e)
    finally:
        subprocess.run(["rmmod", "rvt_loop"])
    return 0 if all(ok for ok, _ in points) else 1


def run(Context, PD, MR, CQ, AH, AHAttr, GlobalRoute, e):
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
            fails_with("AH on a port that does not exist", errno.EINVAL,
                       lambda: AH(pd, attr=AHAttr(port_num=2, dlid=1)))
            # rdmavt's own checks (rvt_check_ah), then the driver's (rvt_loop's check_ah).
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
    sys.exit(main())
