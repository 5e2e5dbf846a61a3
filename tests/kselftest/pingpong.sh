#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only
#
# rdma-core's ibv_*_pingpong examples between a server and a client on rvt_loop0, both in
# this guest: RC (polling, CQ events, GRH), UC, UD (LID and GRH addressed) and RC over an
# SRQ, each checking the data it receives (-c). Every exchange goes through rvt_loop's send
# engine: rdmavt's rvt_ruc_loopback() for RC and UC, rvt_loop's own datagram loopback for UD.
set -u
tests=$(cd "$(dirname "$0")/.." && pwd)
. "$tests/lib/ktap.sh"
. "$tests/lib/traffic.sh"

dev=(-d "$TRAFFIC_DEV" -i 1 -n 5 -c)

ktap_header
ktap_plan 8
traffic_setup

traffic_pair "ibv_rc_pingpong" ibv_rc_pingpong "${dev[@]}" -- "${dev[@]}"
traffic_pair "ibv_rc_pingpong -e (CQ events)" ibv_rc_pingpong "${dev[@]}" -e -- "${dev[@]}" -e
traffic_pair "ibv_rc_pingpong -g 0 (GRH), 64 KiB messages" \
	ibv_rc_pingpong "${dev[@]}" -g 0 -s 65536 -- "${dev[@]}" -g 0 -s 65536
traffic_pair "ibv_uc_pingpong" ibv_uc_pingpong "${dev[@]}" -- "${dev[@]}"
traffic_pair "ibv_ud_pingpong" ibv_ud_pingpong "${dev[@]}" -- "${dev[@]}"
traffic_pair "ibv_ud_pingpong -g 0 (GRH)" ibv_ud_pingpong "${dev[@]}" -g 0 -- "${dev[@]}" -g 0
traffic_pair "ibv_ud_pingpong -e (CQ events)" ibv_ud_pingpong "${dev[@]}" -e -- "${dev[@]}" -e
traffic_pair "ibv_srq_pingpong, 4 QPs on one SRQ" \
	ibv_srq_pingpong "${dev[@]}" -q 4 -- "${dev[@]}" -q 4

ktap_finish
