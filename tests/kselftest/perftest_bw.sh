#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only
#
# perftest's bandwidth programs between a server and a client on rvt_loop0, both in this
# guest, with a handful of iterations (the guest runs under TCG with KASAN: the numbers mean
# nothing, that every request completes does): send, RDMA write, RDMA read and atomics over
# RC, send and write over UC, send over UD.
set -u
tests=$(cd "$(dirname "$0")/.." && pwd)
. "$tests/lib/ktap.sh"
. "$tests/lib/traffic.sh"

args=(-d "$TRAFFIC_DEV" -i 1 -F -n 5)

# bw PROGRAM [ARGS...]: one point, the same arguments on both sides.
bw() { traffic_pair "$*" "$1" "${args[@]}" "${@:2}" -- "${args[@]}" "${@:2}"; }

ktap_header
ktap_plan 9
traffic_setup

# UD first: on the C rdmavt the first RC send makes lockdep report C's own lock inversion
# (tests/splat-known-c), after which lockdep is off; rvt_loop's datagram engine is checked
# before that.
bw ib_send_bw -c UD
bw ib_send_bw
bw ib_send_bw -c UC
bw ib_write_bw
bw ib_write_bw -c UC
bw ib_read_bw
bw ib_atomic_bw
bw ib_atomic_bw -A CMP_AND_SWAP
bw ib_send_bw -e -s 1024

ktap_finish
