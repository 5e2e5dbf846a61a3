#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only
#
# Multicast attach and detach of UD QPs on rvt_loop0 through libibverbs (tests/progs/
# mcast_attach.c, built by `make test-progs`): C's errnos, the per-group limit, freeing. The attach of a QP still in RESET
# runs on rdmavt-rs only: the C rdmavt reads rdi->ports[-1] there, which KASAN reports.
set -u
tests=$(cd "$(dirname "$0")/.." && pwd)
. "$tests/lib/ktap.sh"

prog=$KTAP_PROGS/mcast_attach
ktap_need_prog mcast_attach
ktap_load_rvt_loop mcast
if [ "$RDMAVT_RS_RDMAVT" = rs ]; then
	"$prog" --reset
else
	"$prog"
fi
