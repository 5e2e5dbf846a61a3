#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only
#
# Objects and modules that are still in use (tests/progs/in_use.c, built by `make
# test-progs`): a CQ a QP uses, a PD that holds objects, a ring mapped a second time give C's
# errnos; then, while a process has rvt_loop0 open, rmmod of rvt_loop and of rdmavt is refused
# (uverbs pins the driver's module for each open file, as ib_core expects of a driver without
# disassociate_ucontext) and succeeds once the process has closed it. Runs on both rdmavt
# modules; the VM run checks the kernel log and kmemleak afterwards.
set -u
. "$(dirname "$0")/../lib/ktap.sh"

prog=$KTAP_PROGS/in_use
ktap_need_prog in_use
ktap_load_rvt_loop in_use
work=$(mktemp -d)
trap 'exec 3>&- 2>/dev/null; rm -rf "$work"; rmmod rvt_loop 2>/dev/null' EXIT

# The program's own points first, then ours, renumbered after them.
"$prog" >"$work/tap"
grep -v '^1\.\.' "$work/tap"
KTAP_N=$(grep -cE '^(not )?ok ' "$work/tap")
KTAP_FAIL=$(grep -c '^not ok ' "$work/tap")
KTAP_PASS=$((KTAP_N - KTAP_FAIL))

# A process holding rvt_loop0 open, until we close its standard input.
mkfifo "$work/in"
"$prog" --hold <"$work/in" >"$work/hold" 2>&1 &
holder=$!
exec 3>"$work/in"
for _ in $(seq 100); do
	grep -q holding "$work/hold" && break
	kill -0 "$holder" 2>/dev/null || break
	sleep 0.1
done
ktap_check "a process holds rvt_loop0 open" grep -q holding "$work/hold"
ktap_check "rmmod rvt_loop is refused while it is open" \
	bash -c '! timeout 60 rmmod rvt_loop && [ -d /sys/module/rvt_loop ]'
ktap_check "rmmod rdmavt is refused under rvt_loop" \
	bash -c '! timeout 60 rmmod rdmavt && [ -d /sys/module/rdmavt ]'
exec 3>&-
if wait "$holder"; then
	ktap_pass "the holder closes the device and exits"
else
	sed 's/^/# /' "$work/hold"
	ktap_fail "the holder closes the device and exits"
fi
ktap_check "rmmod rvt_loop succeeds once it is closed" timeout 60 rmmod rvt_loop
echo "1..$KTAP_N"
ktap_finish
