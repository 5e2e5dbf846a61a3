#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only
#
# Multicast attach and detach of UD QPs on rvt_loop0 through libibverbs (tests/progs/
# mcast_attach.c, built by `make test-progs`): C's errnos, the per-group limit, freeing. The attach of a QP still in RESET
# runs on rdmavt-rs only: the C rdmavt reads rdi->ports[-1] there, which KASAN reports.
set -u
tests=$(cd "$(dirname "$0")/.." && pwd)
. "$tests/lib/ktap.sh"

prog=$RDMAVT_RS_REPO/.test-bin/mcast_attach
trap 'rmmod rvt_loop 2>/dev/null' EXIT

if [ ! -x "$prog" ]; then
	ktap_header
	ktap_plan 1
	ktap_fail "mcast: $prog is not built (make test-progs)"
	ktap_finish
	exit
fi
if ! err=$(insmod "$RDMAVT_RS_REPO/rvt_loop.ko" 2>&1); then
	ktap_header
	ktap_plan 1
	ktap_fail "mcast: rvt_loop loads: $err"
	ktap_finish
	exit
fi
if [ "$RDMAVT_RS_RDMAVT" = rs ]; then
	"$prog" --reset
else
	"$prog"
fi
