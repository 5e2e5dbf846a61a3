#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only
#
# rdmavt's kernel log messages read as the C rdmavt's (its vt.h: rvt_pr_info, rvt_pr_err,
# rvt_pr_err_ratelimited): printed with dev_printk on the driver's PCI device, the ib device's
# name first ("rvt_loop 0000:00:04.0: rvt_loop0: CQ is full!"), and "CQ is full!" rate-limited
# per call site as dev_err_ratelimited is (10 in 5 seconds; the rest counted and reported as
# "rvt_cq_enter: N callbacks suppressed" when the next interval begins). Every overflow is
# accounted for, printed or suppressed, so the points do not depend on how fast the VM runs.
# On both rdmavt modules.
set -u
. "$(dirname "$0")/../lib/ktap.sh"

ktap_need_prog cq_overflow
# The rate limit's interval (DEFAULT_RATELIMIT_INTERVAL), and a little more.
interval=6
# CQs overflowed in a row: more than the burst of 10 however slowly the VM runs them.
burst=30

# The kernel log as it comes, read from /dev/kmsg: the C rdmavt WARNs at each overflow
# (tests/splat-known-c), and its stack traces would push the first lines out of the ring
# buffer before dmesg could read them.
kmsg=$(mktemp)
cat /dev/kmsg >"$kmsg" &
reader=$!
# mark NAME: a line in the kernel log that the lines after it are counted from.
mark() { echo "log_messages: $1" >/dev/kmsg; }
# since NAME: the messages logged after mark NAME (their text; a record's dictionary lines,
# which start with a space, left out).
since() {
	sleep 0.5
	sed -n 's/^[0-9]*,[0-9]*,[0-9]*,[^;]*;//p' "$kmsg" | sed -n "/^log_messages: $1\$/,\$p"
}

mark load
ktap_load_rvt_loop log_messages
trap 'kill $reader 2>/dev/null; rm -f "$kmsg"; rmmod rvt_loop 2>/dev/null' EXIT
ktap_header

# The PCI function rvt_loop's devices are served by, as dev_printk names it with its driver:
# "rvt_loop 0000:00:04.0".
pci=$(ls /sys/bus/pci/drivers/rvt_loop 2>/dev/null | grep -m1 '^[0-9a-f]*:')
prefix="rvt_loop $pci: rvt_loop0: "
ktap_msg "expected prefix: $prefix"

reg=$(since load | grep -c "^$prefix""Registration with rdmavt done\.$")
if [ "$reg" = 1 ]; then
	ktap_pass "registration: \"${prefix}Registration with rdmavt done.\""
else
	since load | grep -i "registration" | sed 's/^/#   /'
	ktap_fail "registration: \"${prefix}Registration with rdmavt done.\""
fi

# Begin a fresh interval, so that whatever earlier tests left suppressed is reported before
# the second mark: the counts after it are this test's alone.
sleep "$interval"
"$KTAP_PROGS/cq_overflow" 1 >/dev/null 2>&1 || ktap_msg "cq_overflow 1 failed"
mark count
out=$("$KTAP_PROGS/cq_overflow" "$burst" 2>&1) || { echo "$out" | sed 's/^/#   /'; ktap_fail "cq_overflow $burst"; }
sleep "$interval"
# One more overflow begins the next interval, which reports what the last one held back.
"$KTAP_PROGS/cq_overflow" 1 >/dev/null 2>&1 || ktap_msg "cq_overflow 1 failed"
total=$((burst + 1))

log=$(since count)
full=$(grep -c "CQ is full!" <<<"$log")
named=$(grep -c "^$prefix""CQ is full!$" <<<"$log")
suppressed=$(sed -n 's/^rvt_cq_enter: \([0-9]*\) callbacks suppressed$/\1/p' <<<"$log" |
	awk '{ n += $1 } END { print n + 0 }')
ktap_msg "$total overflows: $full messages printed, $suppressed reported suppressed"

if [ "$full" -gt 0 ] && [ "$named" = "$full" ]; then
	ktap_pass "\"CQ is full!\": every message names the device (\"${prefix}CQ is full!\")"
else
	grep "CQ is full!" <<<"$log" | head -3 | sed 's/^/#   /'
	ktap_fail "\"CQ is full!\": every message names the device (\"${prefix}CQ is full!\")"
fi
if [ "$full" -lt "$total" ] && [ "$suppressed" -gt 0 ]; then
	ktap_pass "\"CQ is full!\": rate-limited ($full of $total printed), the rest reported as rvt_cq_enter's"
else
	ktap_fail "\"CQ is full!\": rate-limited ($full of $total printed), the rest reported as rvt_cq_enter's"
fi
if [ $((full + suppressed)) = "$total" ]; then
	ktap_pass "\"CQ is full!\": every overflow is printed or counted as suppressed ($total)"
else
	ktap_fail "\"CQ is full!\": every overflow is printed or counted as suppressed ($full + $suppressed, not $total)"
fi

ktap_plan "$KTAP_N"
ktap_finish
