#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only
#
# Hostile values in a user QP's mmap'ed receive ring (tests/progs/hostile_rq.c, built by
# `make test-progs`): head and tail beyond the ring, and num_sge over the QP's max_recv_sge.
# On rdmavt-rs a send to the QP must fail cleanly; the C rdmavt, the reference, receives into
# the ring for a hostile head (it bounds only the tail), which its run expects. The kernel log
# (checked by the VM run) must stay free of KASAN reports. The num_sge case runs on rdmavt-rs
# only: the C rdmavt trusts num_sge and reads past the WQE. The SGE-sum case runs on both: C
# lets the 32-bit sum of the lengths wrap and receives, rdmavt-rs refuses the WQE.
set -u
tests=$(cd "$(dirname "$0")/.." && pwd)
. "$tests/lib/ktap.sh"

prog=$KTAP_PROGS/hostile_rq
ktap_need_prog hostile_rq
ktap_load_rvt_loop hostile_rq
if [ "$RDMAVT_RS_RDMAVT" = rs ]; then
	"$prog" --num-sge
else
	"$prog" --c-reference
fi
