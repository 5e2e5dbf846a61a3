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

prog=$KTAP_PROGS/ud_multicast
ktap_need_prog ud_multicast
traffic_setup >"$work/setup" || ktap_bail "UD multicast: $TRAFFIC_BROKEN"
# After traffic_setup, whose trap unloads rvt_loop.
trap 'rm -rf "$work"; rmmod rvt_loop 2>/dev/null' EXIT

timeout "$TRAFFIC_TIMEOUT" "$prog" >"$work/out" 2>&1
rc=$?
cat "$work/out"
[ "$rc" = 0 ]
