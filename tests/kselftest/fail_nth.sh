#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only
#
# Allocation failures, one at a time (tests/progs/fail_nth.c): every verb that allocates in the
# kernel is called again and again with its 1st, 2nd, 3rd, ... allocation failing, until it
# runs with none failing; each failed call must give an error and leave nothing behind, each
# absorbed one an object that works. kmalloc and page allocations both fail (failslab and
# fail_page_alloc, GFP_KERNEL ones included, which they skip by default), and the kernel log
# stays quiet about it. Then the device still carries a pingpong. Runs on both rdmavt modules;
# the VM run checks the kernel log and kmemleak afterwards.
set -u
tests=$(cd "$(dirname "$0")/.." && pwd)
. "$tests/lib/ktap.sh"
. "$tests/lib/traffic.sh"
. "$tests/lib/faults.sh"

if ! faults_available; then
	ktap_header
	ktap_plan 1
	ktap_skip fail_nth "the kernel has no fail-nth (CONFIG_FAULT_INJECTION, FAILSLAB, ...)"
	ktap_finish
	exit
fi
ktap_need_prog fail_nth
ktap_load_rvt_loop fail_nth
work=$(mktemp -d)
trap 'faults_close; rm -rf "$work"; rmmod rvt_loop 2>/dev/null' EXIT
faults_open

# The C rdmavt's resize of a user SRQ unlocks the new ring's c_lock where it locked the old
# one's (lockdep), and leaks the old ring's rvt_krwq on every success (kmemleak): its run
# leaves that verb out (README, "Where the C rdmavt is wrong").
args=()
[ "$RDMAVT_RS_RDMAVT" != c ] || args=(-x resize_srq)

# The program's points first, then ours, renumbered after them.
"$KTAP_PROGS/fail_nth" "${args[@]}" >"$work/tap" 2>"$work/err"
rc=$?
grep -v '^1\.\.' "$work/tap"
KTAP_N=$(grep -cE '^(not )?ok ' "$work/tap")
KTAP_FAIL=$(grep -cE '^not ok ' "$work/tap")
KTAP_SKIP=$(grep -c ' # SKIP' "$work/tap")
KTAP_PASS=$((KTAP_N - KTAP_FAIL - KTAP_SKIP))
if [ "$rc" -gt 1 ] || { [ "$rc" = 1 ] && [ "$KTAP_FAIL" = 0 ]; }; then
	sed 's/^/# /' "$work/err"
	ktap_fail "fail_nth exits with $rc"
fi
[ "$RDMAVT_RS_RDMAVT" != c ] ||
	ktap_skip "resize_srq" \
		"C rdmavt: rvt_modify_srq unlocks the wrong c_lock, leaks a user SRQ's old rvt_krwq"

# The device after all that.
faults_close
dev=(-d "$TRAFFIC_DEV" -i 1 -n 5 -c)
traffic_pair "ibv_rc_pingpong after the sweep" ibv_rc_pingpong "${dev[@]}" -- "${dev[@]}"
echo "1..$KTAP_N"
ktap_finish
