#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only
#
# Kernel verbs consumers: rvt_loop_kverbs.ko's KUnit suite, which runs when the module loads,
# drives two kernel RC QPs on rvt_loop0 through ib_core (SEND, SEND_WITH_IMM, RDMA WRITE and
# WRITE_WITH_IMM, RDMA READ, both atomics, an RNR NAK that may not be retried, receives flushed
# by the error state), and their set-up with each of its allocations failing in turn. One TAP
# point per KUnit case, from the kernel log, and one for each module unloading. Runs on both
# rdmavt variants; leaves rvt_loop as it found it.
set -u
. "$(dirname "$0")/../lib/ktap.sh"
. "$(dirname "$0")/../lib/faults.sh"

repo=$RDMAVT_RS_REPO
suite=rvt_loop_kverbs
marker="kverbs.sh: loading $suite ($$)"
log=$(mktemp)
own_rvt_loop=
trap 'faults_close; rm -rf "$log"' EXIT

loaded() { [ -d "/sys/module/$1" ]; }

# The kernel log from the last marker on: only this run's suite output.
log_since_marker() {
	dmesg | awk -v m="$marker" 'index($0, m) { n = NR } { line[NR] = $0 }
		END { for (i = n; i <= NR && n; i++) print line[i] }'
}

ktap_header
if ! loaded rvt_loop; then
	if ! err=$(insmod "$repo/rvt_loop.ko" 2>&1); then
		ktap_plan 1
		ktap_fail "$suite: rvt_loop loads: $err"
		ktap_finish
		exit
	fi
	own_rvt_loop=1
fi

echo "$marker" >/dev/kmsg
load_err=
# The allocation_failures cases fail the kernel verbs' allocations one at a time.
! faults_available || faults_open
insmod "$repo/$suite.ko" 2>&1 || load_err="insmod $suite failed"
faults_close
log_since_marker >"$log"
points=$(python3 "$repo/tests/tap.py" kunit "$log" "$suite")

ktap_plan $(($(grep -c '^\(not \)\?ok ' <<<"$points") + 1 + ${own_rvt_loop:-0}))
[ -z "$load_err" ] || ktap_msg "$load_err"
while IFS= read -r line; do
	desc=$(sed -E 's/^(not )?ok [0-9]+ //' <<<"$line")
	case $line in
	"ok "*) ktap_pass "$desc" ;;
	*) ktap_fail "$desc" ;;
	esac
done <<<"$points"
# What the suite logged about a failure (pr_err lines of the module), as diagnostics.
grep -q '^not ok ' <<<"$points" && grep -E "$suite: |# .*(ASSERTION|Expected)" "$log" |
	grep -Ev "$marker|enabling unsafe global rkey" | sed 's/^/# /'

unload() { ! loaded "$1" || rmmod "$1"; }
ktap_check "$suite unloads" unload "$suite"
[ -z "$own_rvt_loop" ] || ktap_check "rvt_loop unloads after the suite" unload rvt_loop
ktap_finish
