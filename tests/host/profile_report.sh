#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only
#
# scripts/profile_report.py (`make profile`) on a small synthetic boot, no VM: addresses
# resolved through the guest's kallsyms (module symbols included), idle and user-space samples
# counted apart, a sample taken where interrupts come back on given to the function whose
# section it ended (through the lock wrappers), inclusive counts for rdmavt's and rvt_loop's
# functions, and samples turned into CPU microseconds per message; and the counting boot's
# instruction counts (scripts/bench/insn-count.c's dumps) turned into instructions and calls per
# message, as the difference of a point's two runs, with an earlier profile's (--before) in
# columns before them; and the counted instructions sorted by kind with the listing of the
# rdmavt.ko the counting boot loaded.
set -u
here=$(cd "$(dirname "$0")" && pwd)
. "$here/../lib/ktap.sh"
report=$here/../../scripts/profile_report.py
python=/usr/bin/python3
[ -x "$python" ] || python=python3
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
d=$tmp/raw/rs/1
mkdir -p "$d"

printf '%s\n' \
	"ffffffff81000000 T pv_native_safe_halt" \
	"ffffffff81001000 T _raw_spin_unlock_irqrestore" \
	"ffffffff81002000 T rust_helper_spin_unlock_irqrestore" \
	"ffffffff81003000 T memcpy" \
	"ffffffffa0000000 t rvt_ruc_loopback	[rdmavt]" \
	"ffffffffa0001000 t rvt_post_send	[rdmavt]" \
	"ffffffffa0010000 t rvt_loop_do_send	[rvt_loop]" | gzip >"$d/kallsyms.gz"
# 10 samples at 999 Hz, 4 seconds, 2 CPUs: 2 idle, 2 in user space, 3 at an unlock called
# (through the Rust helper) by rvt_ruc_loopback, 3 in memcpy under rvt_ruc_loopback.
{
	echo "frequency: 999 Hz, seconds: 4, CPUs: 2"
	for i in 1 2; do printf 'swapper \n\tffffffff81000010\n\n'; done
	for i in 1 2; do printf 'ib_send_bw \n\t7f0000001000\n\n'; done
	for i in 1 2 3; do
		printf 'ib_send_bw \n\tffffffff81001010\n\tffffffff81002010\n\tffffffffa0000100\n'
		printf '\tffffffffa0001100\n\n'
	done
	for i in 1 2 3; do
		printf 'ib_send_bw \n\tffffffff81003010\n\tffffffffa0000200\n\tffffffffa0010100\n\n'
	done
} | gzip >"$d/send_bw_64.perf.gz"
# 100000 messages a second: 6.1035 MB/s of 64-byte messages.
cat >"$d/send_bw_64.client" <<EOF
 #bytes     #iterations    BW peak[MB/sec]    BW average[MB/sec]   MsgRate[Mpps]
 64         400000           0.00               6.103515625		   0.100000
EOF
echo "ib_send_bw -s 64" >"$d/send_bw_64.cmd"

# The counting boot: two runs of send_bw_64, 1000 and 3000 messages. rvt_ruc_loopback's first
# instruction runs once a message and its second twice; memcpy runs as often in both runs (the
# set-up they share), so not at all per message. In the second run the second instruction is in
# two translated blocks (5000 and 1000 executions), whose counts add up.
c=$tmp/raw/rs/insn
mkdir -p "$c"
cp "$d/kallsyms.gz" "$c/"
printf 'send_bw_64 1000\nsend_bw_64 3000\n' >"$c/insn.order"
printf 'user 1000\nffffffffa0000000 1000\nffffffffa0000004 2000\nffffffff81003000 500\n' \
	>"$c/insn.1"
printf 'user 5000\nffffffffa0000000 3000\nffffffffa0000004 5000\nffffffff81003000 500\n%s\n' \
	'ffffffffa0000004 1000' >"$c/insn.2"

"$python" "$report" "$tmp/raw" rs >"$tmp/out" 2>"$tmp/err"
rc=$?
# value ROW: the rs cell of the table row that starts with ROW.
value() { grep -F "| $1 |" "$tmp/out" | head -1 | awk -F' \\| ' '{ print $NF }' | sed 's/ |$//'; }
is() { [ "$1" = "$2" ] || { echo "got '$1', expected '$2'"; return 1; }; }

ktap_header
ktap_plan 14
ktap_check "the report runs" is "$rc" 0
ktap_check "messages per second from perftest's bandwidth" is "$(value "messages per second")" \
	"100,000"
ktap_check "idle and user-space samples counted apart" \
	is "$(value "samples (idle, user space)")" "10 (2, 2)"
# 6 kernel samples of 10: 0.6 of 2 CPUs' time over 100000 messages a second = 12 us.
ktap_check "kernel time per message: its share of both CPUs' time over the message rate" \
	is "$(value "kernel")" "12.0"
ktap_check "an interrupt-enabling unlock's samples go to the section's owner, past the helpers" \
	is "$(value '`rvt_ruc_loopback (irqs off)`')" "6.0"
ktap_check "a leaf's samples are its own (module symbols resolved)" \
	is "$(value '`memcpy`')" "6.0"
ktap_check "inclusive: every sample with the function in its chain" \
	bash -c "grep -qF '| \`rvt_ruc_loopback\` | rdmavt | 12.0 |' '$tmp/out' &&
		grep -qF '| \`rvt_loop_do_send\` | rvt_loop | 6.0 |' '$tmp/out'"
ktap_check "counted: kernel instructions per message, the runs' difference over their messages (an address in two blocks counted in both)" \
	is "$(value "kernel instructions")" "3.0"
ktap_check "counted: user-space instructions per message" \
	is "$(value "user-space instructions (perftest polls: time, not cost)")" "2.0"
ktap_check "counted: a function's instructions and calls (its first instruction) per message" \
	grep -qF '| `rvt_ruc_loopback` | rdmavt | 3.0 | 1.0 |' "$tmp/out"
# An earlier profile beside it: the same point, twice the instructions a message (6.0), in a
# column of its own before the current one.
mkdir -p "$tmp/before/rs/insn"
cp "$c/kallsyms.gz" "$c/insn.order" "$c/insn.1" "$tmp/before/rs/insn/"
printf 'user 5000\nffffffffa0000000 5000\nffffffffa0000004 10000\nffffffff81003000 500\n' \
	>"$tmp/before/rs/insn/insn.2"
"$python" "$report" --before "$tmp/before" abc1234 "$tmp/raw" rs >"$tmp/out2" 2>>"$tmp/err"
ktap_check "an earlier profile's counts (--before) in a column before the current one" \
	grep -qF '| kernel instructions | 6.0 | 3.0 |' "$tmp/out2"
# A point whose shorter run spent more in user space than its longer one: no negative count.
sed -i 's/^user 1000$/user 9000/' "$c/insn.1"
"$python" "$report" "$tmp/raw" rs >"$tmp/out3" 2>>"$tmp/err"
ktap_check "user space: a shorter run that polled more gives no count, not a negative one" \
	grep -qF '| user-space instructions (perftest polls: time, not cost) | - (the shorter run polled more) |' \
	"$tmp/out3"
# The instructions by kind, from the listing of the rdmavt.ko the counting boot kept: a function
# with a load, a conditional branch within its page taken half the time, a call run half the
# time to a function on another page, and the stack's push and pop.
m=$tmp/mix/rs/insn
mkdir -p "$m"
printf '\t.text\n\t.globl f\nf:\n\tpush %%rbp\n\tmov (%%rdi),%%eax\n\ttest %%eax,%%eax\n%s\n' \
	$'\tje 1f\n\tcall g\n1:\n\tpop %rbp\n\tret' >"$tmp/f.s"
# by_kind ROW: the rs cell of that row of the table by kind.
by_kind() {
	grep -F "| $1 |" "$tmp/out4" | head -1 | awk -F' \\| ' '{ print $NF }' | sed 's/ |$//'
}
far="jumps, calls and taken branches to another 4 KiB page (QEMU chains blocks only within a page)"
if as -o "$m/rdmavt.ko" "$tmp/f.s" 2>>"$tmp/err"; then
	printf '%s\n' "ffffffff81000000 T g" "ffffffffa0000000 t f	[rdmavt]" | gzip >"$m/kallsyms.gz"
	printf 'send_bw_64 1000\nsend_bw_64 3000\n' >"$m/insn.order"
	# push, mov, test, je, call, pop, ret at 0, 1, 3, 5, 7, 0xc, 0xd; the call half the time.
	for k in 1 2; do
		for off in 0 1 3 5 c d; do printf 'ffffffffa000000%s %d\n' "$off" $((k * 2000 - 1000)); done
		printf 'ffffffffa0000007 %d\n' $((k * 1000 - 500))
	done >"$tmp/dumps"
	head -7 "$tmp/dumps" >"$m/insn.1"
	tail -7 "$tmp/dumps" >"$m/insn.2"
	"$python" "$report" "$tmp/mix" rs >"$tmp/out4" 2>>"$tmp/err"
	ktap_check "by kind: instructions, loads and stores, on the stack, branches, calls" is \
		"$(by_kind instructions) $(by_kind "loads and stores (a memory operand, push, pop)") $(
		by_kind "of them on the stack") $(by_kind "conditional branches") $(by_kind calls)" \
		"6.5 3.0 2.0 1.0 0.5"
	ktap_check "by kind: a call to another page counted, a branch within the page not" \
		is "$(by_kind "$far")" 0.5
else
	ktap_skip "by kind: instructions, loads and stores, on the stack, branches, calls" \
		"no assembler (binutils)"
	ktap_skip "by kind: a call to another page counted, a branch within the page not" \
		"no assembler (binutils)"
fi
[ "$KTAP_FAIL" = 0 ] || {
	ktap_msg "report:"
	sed 's/^/# /' "$tmp/out" "$tmp/out2" "$tmp/out4" "$tmp/err"
}
ktap_finish
