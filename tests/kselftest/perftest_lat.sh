#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only
#
# perftest's latency programs between a server and a client on rvt_loop0, both in this
# guest, with a handful of iterations (under TCG with KASAN the numbers mean nothing; that
# every ping-pong completes does): send over RC, UC and UD, RDMA write over RC and UC.
set -u
tests=$(cd "$(dirname "$0")/.." && pwd)
. "$tests/lib/ktap.sh"
. "$tests/lib/traffic.sh"

args=(-d "$TRAFFIC_DEV" -i 1 -F -n 5)

# lat PROGRAM [ARGS...]: one point, the same arguments on both sides.
lat() { traffic_pair "$*" "$1" "${args[@]}" "${@:2}" -- "${args[@]}" "${@:2}"; }

ktap_header
ktap_plan 5
traffic_setup

lat ib_send_lat
lat ib_send_lat -c UC
lat ib_send_lat -c UD
lat ib_write_lat
lat ib_write_lat -c UC

ktap_finish
