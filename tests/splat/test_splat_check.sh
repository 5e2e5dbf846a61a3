#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only
#
# Host test of scripts/splat_check.py, as KTAP: every recorded kernel log under samples/ must
# give the outcome that expected.txt declares, on its own and spliced into the middle of a
# clean boot log; then the command line's contract (standard input, exit statuses, the format
# of a report).
set -u

here=$(cd "$(dirname "$0")" && pwd)
repo=$(cd "$here/../.." && pwd)
. "$repo/tests/lib/ktap.sh"

check=$repo/scripts/splat_check.py
samples=$here/samples
clean_log=$samples/clean-boot.log
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

# "<file> <kind>|clean [<reports>]" lines, without comments and blank lines.
mapfile -t cases < <(grep -Ev '^[[:space:]]*(#|$)' "$here/expected.txt")

# run CMD...: runs the detector's command line; its stdout lands in $tmp/out, $rc is its status.
run() {
	"$@" >"$tmp/out" 2>"$tmp/err"
	rc=$?
}

# The kind of every report in the last run's output, in order, one a line.
kinds() { sed -n 's/^splat: \([a-z-]*\): .*/\1/p' "$tmp/out"; }

# judge KIND [COUNT]: whether the last run found nothing (KIND "clean"), or found a first report
# of KIND (and COUNT reports in all, when given). Says why not on stdout.
judge() {
	local kind=$1 count=${2:-} got first n
	got=$(kinds)
	first=$(head -n 1 <<<"$got")
	n=$(grep -c . <<<"$got")
	if [ "$kind" = clean ]; then
		[ "$rc" = 0 ] && [ ! -s "$tmp/out" ] && return 0
		echo "expected no report and exit status 0; got exit status $rc"
	else
		if [ "$rc" = 1 ] && [ "$first" = "$kind" ] && { [ -z "$count" ] || [ "$n" = "$count" ]; }; then
			return 0
		fi
		echo "expected exit status 1 and a first report of kind $kind${count:+, $count report(s)}"
		echo "got exit status $rc and $n report(s)${got:+: $(paste -sd ' ' <<<"$got")}"
	fi
	head -n 40 "$tmp/out"
	cat "$tmp/err"
	return 1
}

# point DESCRIPTION KIND [COUNT]: one test point on the last run.
point() {
	local desc=$1
	shift
	if judge "$@" >"$tmp/why"; then
		ktap_pass "$desc"
	else
		sed 's/^/# /' "$tmp/why"
		ktap_fail "$desc"
	fi
}

# The clean boot log with FILE spliced in halfway through.
splice() {
	local half
	half=$(($(wc -l <"$clean_log") / 2))
	head -n "$half" "$clean_log"
	cat "$1"
	tail -n +"$((half + 1))" "$clean_log"
}

# A sample without an expectation would silently go untested.
every_sample_expected() {
	local f missing=0
	for f in "$samples"/*; do
		if ! printf '%s\n' "${cases[@]}" | grep -q "^$(basename "$f")[[:space:]]"; then
			echo "no expectation for $(basename "$f") in expected.txt"
			missing=1
		fi
	done
	return "$missing"
}

# A report: "splat: <kind>: <header, prefixes stripped>", then 15 lines indented by 4 spaces.
report_format() {
	run "$check" "$samples/refcount.log"
	[ "$(head -n 1 "$tmp/out")" = "splat: refcount: refcount_t: underflow; use-after-free." ] &&
		[ "$(wc -l <"$tmp/out")" = 16 ] &&
		! tail -n +2 "$tmp/out" | grep -qv '^    ' ||
		{ cat "$tmp/out"; return 1; }
}

# The test that was running, from run-suite.sh's marker, and no unreliable "? func" entries.
report_context() {
	# The boot-time sample, as if a test had been running, with the unwinder's unreliable
	# entries that KASAN reports usually carry between its own frames.
	{
		echo "[    0.001000] rdmavt-rs test: loopback"
		sed '/ print_report+/a [    0.005908]  ? kasan_complete_mode_report_info+0x45/0x230' \
			"$samples/kasan-wild-irq.log"
	} >"$tmp/context.log"
	run "$check" "$tmp/context.log"
	[ "$(sed -n 2p "$tmp/out")" = "    during: loopback" ] &&
		grep -q '^     *handle_edge_irq+' "$tmp/out" &&
		! grep -q '^ *? ' "$tmp/out" ||
		{ cat "$tmp/out"; return 1; }
}

ktap_header
ktap_plan $((2 * ${#cases[@]} + 16))

for line in "${cases[@]}"; do
	read -r file kind count <<<"$line"
	run "$check" "$samples/$file"
	point "- $file detected as $kind" "$kind" ${count:+"$count"}
	splice "$samples/$file" >"$tmp/spliced.log"
	run "$check" "$tmp/spliced.log"
	point "- $file in the middle of a clean log detected as $kind" "$kind" ${count:+"$count"}
done

run "$check" <"$samples/warn.log"
point "- standard input read when no file is given" warn 1
run "$check" "$clean_log" - <"$samples/kasan-slab-uaf.log"
point "- \"-\" reads standard input, after a clean file" kasan 1

run "$check" --no-such-option "$clean_log"
if [ "$rc" = 2 ]; then ktap_pass "- exit status 2 on a usage error"; else
	echo "# exit status $rc"; ktap_fail "- exit status 2 on a usage error"; fi
run "$check" "$clean_log" "$tmp/no-such-file.log"
if [ "$rc" = 2 ]; then ktap_pass "- exit status 2 on a missing file"; else
	echo "# exit status $rc"; ktap_fail "- exit status 2 on a missing file"; fi

# The C run's known reports (tests/splat-known-c): that one is forgiven, no other.
known=$repo/tests/splat-known-c
run "$check" --known "$known" "$samples/lockdep-c-loopback.log"
point "- --known forgives the C rdmavt's loopback lock inversion" clean
run "$check" --known "$known" "$samples/lockdep-circular.log"
point "- --known still reports another circular locking dependency" lockdep 1
splice "$samples/kasan-slab-uaf.log" >"$tmp/spliced.log"
cat "$samples/lockdep-c-loopback.log" >>"$tmp/spliced.log"
run "$check" --known "$known" "$tmp/spliced.log"
point "- --known still reports the other reports of a log" kasan 1

# The reports that are no rdmavt's (tests/splat-known), forgiven in both runs.
run "$check" --known "$repo/tests/splat-known" "$samples/warn-hfi1-trace-event.log"
point "- --known forgives hfi1's trace-event WARN at its load" clean
run "$check" --known "$repo/tests/splat-known" "$samples/warn.log"
point "- --known still reports another WARN" warn 1
run "$check" --known "$repo/tests/splat-known" "$samples/kasan-wild-irq.log"
point "- --known forgives the boot-time KASAN report in handle_edge_irq" clean
run "$check" --known "$repo/tests/splat-known" "$samples/kasan-slab-uaf.log"
point "- --known still reports another KASAN report" kasan 1
cat "$samples/warn-hfi1-trace-event.log" "$samples/lockdep-c-loopback.log" >"$tmp/both.log"
run "$check" --known "$repo/tests/splat-known" --known "$known" "$tmp/both.log"
point "- --known twice forgives what either file lists" clean
run "$check" --known "$repo/tests/splat-known" "$tmp/both.log"
point "- --known forgives only what its files list" lockdep 1

ktap_check "- a report is its header line and 15 indented lines of context" report_format
ktap_check "- a report names the running test and leaves out unreliable stack entries" \
	report_context
ktap_check "- every sample has an expectation" every_sample_expected

ktap_finish
