#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only
#
# UD multicast on rvt_loop0 (tests/progs/ud_multicast.c, built by `make test-progs`): a send
# to a group reaches exactly the QPs attached to it, with a GRH.
set -u
tests=$(cd "$(dirname "$0")/.." && pwd)
. "$tests/lib/ktap.sh"
. "$tests/lib/traffic.sh"

work=$(mktemp -d)

prog=$RDMAVT_RS_REPO/.test-bin/ud_multicast
if [ ! -x "$prog" ]; then
	ktap_header; ktap_plan 1; ktap_fail "UD multicast: $prog is not built (make test-progs)"
	ktap_finish; exit
fi
traffic_setup >"$work/setup" || { ktap_header; ktap_plan 1; cat "$work/setup";
	ktap_fail "rvt_loop loads"; ktap_finish; exit; }
# After traffic_setup, whose trap unloads rvt_loop.
trap 'rm -rf "$work"; rmmod rvt_loop 2>/dev/null' EXIT

timeout "$TRAFFIC_TIMEOUT" "$prog" >"$work/out" 2>&1
rc=$?
cat "$work/out"
[ "$rc" = 0 ]
