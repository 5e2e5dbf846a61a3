#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only
#
# Hostile values in a user QP's mmap'ed receive ring (tests/progs/hostile_rq.c, built by
# `make test-progs`): head and tail beyond the ring, and num_sge over the QP's max_recv_sge.
# On rdmavt-rs a send to the QP must fail cleanly; the C rdmavt, the reference, receives into
# the ring for a hostile head (it bounds only the tail), which its run expects. The kernel log
# (checked by the VM run) must stay free of KASAN reports. The num_sge case runs on rdmavt-rs
# only: the C rdmavt trusts num_sge and reads past the WQE.
set -u
tests=$(cd "$(dirname "$0")/.." && pwd)
. "$tests/lib/ktap.sh"

prog=$RDMAVT_RS_REPO/.test-bin/hostile_rq
trap 'rmmod rvt_loop 2>/dev/null' EXIT

if [ ! -x "$prog" ]; then
	ktap_header
	ktap_plan 1
	ktap_fail "hostile_rq: $prog is not built (make test-progs)"
	ktap_finish
	exit
fi
if ! err=$(insmod "$RDMAVT_RS_REPO/rvt_loop.ko" 2>&1); then
	ktap_header
	ktap_plan 1
	ktap_fail "hostile_rq: rvt_loop loads: $err"
	ktap_finish
	exit
fi
if [ "$RDMAVT_RS_RDMAVT" = rs ]; then
	"$prog" --num-sge
else
	"$prog" --c-reference
fi
