#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only
#
# `make check`: every test of rdmavt-rs, ending in one line "N passed, N failed, N skipped".
#
#   1. host tests: the splat detector on recorded dmesg samples, the layout generator;
#   2. the VM test mode, once with rdmavt-rs and once with the in-tree C rdmavt: the modules'
#      KUnit suites, the kselftest programs under tests/kselftest/, and the splat detector over
#      the guest's kernel log and a final kmemleak scan;
#   3. the differentials: the two runs' pyverbs results, test by test, and the differential
#      fuzzer's step logs, seed by seed;
#   4. the 6.12 leg: the 6.12 test kernel and modules, and a named subset of the kselftests on
#      both rdmavt modules of 6.12 (RDMAVT_RS_NO_612=1 leaves it out).
# Before the last line, `tap.py count` sorts the skipped points by why.
#
# The modules must be built already (the Makefile's check target does that first).
set -uo pipefail

tests=$(cd "$(dirname "$0")" && pwd)
repo=$(cd "$tests/.." && pwd)
results=${RDMAVT_RS_RESULTS:-$repo/.test-results}
# Every earlier result but the benchmarks' (make bench keeps its own under bench*/).
mkdir -p "$results"
find "$results" -mindepth 1 -maxdepth 1 ! -name 'bench*' -exec rm -rf {} +

# Each source of test points becomes one TAP file in $results, shown as it is produced.
show() { cat "$1"; }

host_tests() {
	local t name
	for t in "$tests"/host/*.sh "$tests"/splat/test_*.sh; do
		[ -f "$t" ] || continue
		name=host/$(basename "${t%.*}")
		if [ -x "$t" ]; then
			"$t" >"$results/${name//\//_}.raw" 2>&1
		else
			# A test that cannot run fails, rather than vanish from the count.
			printf 'TAP version 13\n1..1\nnot ok 1 %s has no run bit (chmod +x)\n' \
				"${t#"$repo"/}" >"$results/${name//\//_}.raw"
			false
		fi
		python3 "$tests/tap.py" prefix "$name" $? "$results/${name//\//_}.raw" \
			>"$results/${name//\//_}.tap"
		show "$results/${name//\//_}.tap"
	done
}

# One boot of the VM with the given rdmavt (rs or c) on the given kernel line (7.3 or 6.12),
# then its results as TAP, named vm-rs, vm-c (7.3) and vm-6.12-rs, vm-6.12-c.
vm_tests() {
	local v=$1 line=${2:-7.3}
	local run=vm-$v
	[ "$line" = 7.3 ] || run=vm-$line-$v
	local out=$results/$run tap=$results/$run.tap rc
	local attempt
	for attempt in 1 2; do
		echo "# booting the $line test VM with the $v rdmavt"
		rm -rf "$out"
		KERNEL=$line bash "$repo/scripts/vm.sh" --rdmavt "$v" --timeout "$vm_timeout" \
			--out "$out" --console -- "$tests/guest/run-suite.sh" \
			>"$results/$run.console" 2>&1
		rc=$?
		# A guest that panicked (255) before the suite wrote its first file, with none of our
		# modules in the oops's list, died while booting: under TCG the kernel now and then
		# oopses in its early timekeeping on a busy host (README, "The two commands"). It
		# boots once more, and says so. A second such end, a hang, a crash with rdmavt or
		# rvt_loop loaded or loading (their KUnit suites run then), or any end after the
		# suite began, fails as always.
		[ "$rc" = 255 ] && [ ! -e "$out/kunit.log" ] && [ "$attempt" = 1 ] &&
			! grep -qE 'Modules linked in:.*(rdmavt|rvt_loop)' "$results/$run.console" ||
			break
		mv "$results/$run.console" "$results/$run.console.1"
		echo "# the guest ended (exit status $rc) before the suite began: once more" \
			"(its console: $run.console.1)"
	done
	{
		if [ "$rc" != 0 ]; then
			echo "not ok 1 $run: the guest ran the suite (exit status $rc)"
			tail -30 "$results/$run.console" | sed 's/^/# /'
		fi
		# rdmavt-rs's KUnit suites, which ran when it loaded (on both kernel lines).
		if [ "$v" = rs ]; then
			python3 "$tests/tap.py" kunit "$out/kunit.log" \
				$(grep -Ev '^#|^$' "$tests/kunit-suites") | sed "s/ kunit / $run: kunit /"
		fi
		local f name
		for f in "$out"/*.tap; do
			[ -f "$f" ] || continue
			name=$(basename "$f" .tap)
			python3 "$tests/tap.py" prefix "$run: $name" "$(cat "$out/$name.rc")" "$f"
		done
		# A test the guest never reached (it died or ran out of time first) fails too.
		for f in "$tests"/kselftest/*; do
			[ -f "$f" ] || continue
			name=$(basename "${f%.*}")
			selected "$name" || continue
			[ -f "$out/$name.tap" ] || echo "not ok 1 $run: $name: did not run"
		done
		# Reports that are no rdmavt's (tests/splat-known) are forgiven in both runs, the C
		# rdmavt's own bugs (tests/splat-known-c) in its run only; rdmavt-rs's never.
		local known=(--known "$tests/splat-known")
		[ "$v" = c ] && known+=(--known "$tests/splat-known-c")
		if python3 "$repo/scripts/splat_check.py" "${known[@]}" "$out/dmesg.txt" \
			"$out/kmemleak.txt" >"$out/splats.txt" 2>&1; then
			echo "ok 1 $run: kernel log free of KASAN/lockdep/UBSAN/kmemleak/WARN/BUG reports"
		else
			echo "not ok 1 $run: kernel log free of KASAN/lockdep/UBSAN/kmemleak/WARN/BUG reports"
			sed 's/^/# /' "$out/splats.txt" | head -80
		fi
	} >"$tap"
	show "$tap"
}

# The same pyverbs tests on both modules must end the same way, test by test (on the given
# kernel line, 7.3 by default).
differential() {
	local line=${1:-7.3} run=vm tap=$results/differential.tap
	[ "$line" = 7.3 ] || { run=vm-$line; tap=$results/differential-$line.tap; }
	python3 "$tests/tap.py" diff "pyverbs rdmavt-rs / C rdmavt${1:+ on $line}" \
		"$results/$run-rs/pyverbs.log" "$results/$run-c/pyverbs.log" \
		"$tests/pyverbs-known-gaps" >"$tap"
	show "$tap"
}

# The differential fuzzer's step logs, seed by seed, on rdmavt-rs and on the C rdmavt (7.3).
fuzz_differential() {
	local tap=$results/fuzz-differential.tap
	python3 "$tests/tap.py" fuzzdiff "fuzz rdmavt-rs / C rdmavt" "$results/vm-rs/fuzz.log" \
		"$results/vm-c/fuzz.log" >"$tap"
	show "$tap"
}

# RDMAVT_RS_TESTS="NAME...": only these kselftests, in the VM runs alone (make stress).
selected() { [ -z "${RDMAVT_RS_TESTS:-}" ] || [[ " $RDMAVT_RS_TESTS " == *" $1 "* ]]; }
# A bound on a hung guest, not a judgement of speed: a whole run takes about 20 minutes under
# TCG on 2 cores now; a soak (make stress DURATION=...) runs longer.
vm_timeout=$((2400 + 12 * ${RDMAVT_RS_STRESS_DURATION:-0}))

# The 6.12 LTS line: its test kernel (built and cached like 7.3's) and the modules built for it
# in .build/6.12/, with the export check (make KERNEL=6.12 modules), then the named subset of
# the kselftests below on rdmavt-rs and on 6.12's C rdmavt, and rdmavt-rs's KUnit suites
# (README, "Kernels": rdma_link is 7.3-only).
tests_612="module_load hfi1 qib modules_install pingpong pyverbs kverbs hostile_rq loopback"
tests_612+=" post_send qp_dump hw_counters rvt_loop_device log_messages"
leg_612() {
	local tap=$results/build-6.12.tap
	echo "# building the 6.12 test kernel (first time: about 15 minutes) and the modules for it"
	if make -s -C "$repo" KERNEL=6.12 modules >"$results/build-6.12.log" 2>&1; then
		echo "ok 1 6.12: the kernel and the modules build, rdmavt.ko exports the C rdmavt's" \
			"symbols" >"$tap"
		show "$tap"
	else
		{
			echo "not ok 1 6.12: the kernel and the modules build, rdmavt.ko exports the C" \
				"rdmavt's symbols"
			tail -30 "$results/build-6.12.log" | sed 's/^/# /'
		} >"$tap"
		show "$tap"
		return
	fi
	# DKMS against the 6.12 kernel (on 7.3 it is one of the host tests).
	KERNEL=6.12 "$tests/host/dkms.sh" >"$results/host_dkms-6.12.raw" 2>&1
	python3 "$tests/tap.py" prefix "host/dkms-6.12" $? "$results/host_dkms-6.12.raw" \
		>"$results/host_dkms-6.12.tap"
	show "$results/host_dkms-6.12.tap"
	RDMAVT_RS_TESTS=$tests_612 vm_tests rs 6.12
	RDMAVT_RS_TESTS=$tests_612 vm_tests c 6.12
	differential 6.12
}

[ -n "${RDMAVT_RS_TESTS:-}" ] || host_tests
vm_tests rs
vm_tests c
[ -n "${RDMAVT_RS_TESTS:-}" ] || differential
! selected fuzz || fuzz_differential
[ -n "${RDMAVT_RS_TESTS:-}" ] || [ -n "${RDMAVT_RS_NO_612:-}" ] || leg_612
echo "# results and guest logs: $results"
python3 "$tests/tap.py" count "$results"/*.tap
