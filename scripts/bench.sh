#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only
#
# `make bench`: perftest over rdmavt-rs, the in-tree C rdmavt, rxe and siw, side by side, on
# the benchmark kernel (scripts/kconfig/bench.config: the test kernel without its debugging,
# built with -O2).
#
# Builds that kernel (`scripts/kernel.sh --bench`, or `--bench-inline` with inlined Rust
# helpers), builds rdmavt.ko, rvt_loop.ko and scripts/bench/memcpy-bw against it in a copy of
# this tree (the test build's modules in the tree are never touched), then boots the VM again
# and again and runs scripts/bench-guest.sh in it: rdmavt-rs and the C rdmavt alternate boot by
# boot, the first of a round changing from round to round (rs c, c rs, rs c, ...), so that
# whatever else the host does falls on both alike; rxe and
# siw, a reference only, boot after them. The table (median, minimum and maximum over the
# boots, ratios of medians to the C rdmavt, "within noise" where the ranges overlap) is
# printed and written to results.md, the plot of the ratios to ratios.png, the raw output of
# each boot to raw/PROVIDER/ROUND/.
#
# Speed never fails the run: it fails only when a build, a boot or a perftest run fails.
# Under TCG the numbers are only comparable within one run.
#
#   scripts/bench.sh [PROVIDER...]    rs, c, rxe, siw (default: all four), rs-notrace
#
# rs-notrace is rdmavt-rs built with its trace event calls compiled out (RDMAVT_RS_TRACE=n, in
# a second copy): `BENCH_PROVIDERS="rs rs-notrace" BENCH_REFERENCE=rs-notrace make bench`
# measures what the disabled events cost (README, "Benchmarks"). It alternates with rs and c.
#
# Settings, from the environment (the Makefile passes them on):
#   BENCH_ROUNDS=N        boots each of rdmavt-rs and the C rdmavt (default 5; quick: 1)
#   BENCH_REF_ROUNDS=N    boots each of rxe and siw (default 1)
#   BENCH_QUICK=1         a first look: one round, 3-second bandwidth points (4 otherwise),
#                         5000 latency iterations (20000 otherwise)
#   BENCH_HELPERS=inline  the kernel and modules built with clang-22 and
#                         CONFIG_RUST_INLINE_HELPERS; results in .test-results/bench-inline
#   KERNEL=6.12           the 6.12 LTS line's benchmark kernel; results in
#                         .test-results/bench-6.12 (bench-inline-6.12 with inline helpers)
#   BENCH_ONLY="NAME..."  only these points (names as in the table: send_lat_8 read_bw_4k ...),
#                         to look again at a few rows with more rounds
#   BENCH_REFERENCE=P     the provider the ratios are to (default c)
#   BENCH_PROFILE=1       `make profile`: perf record during the points of BENCH_ONLY (default
#                         send_bw_64 and write_bw_64k), 8-second points, one boot each of rs
#                         and c by default; results in .test-results/profile (-inline,
#                         -6.12), and the side-by-side summary scripts/profile_report.py
#                         writes to docs/perf.md (for the default kernel and helpers) and to
#                         the results. After the sampling boots, one counting boot each, with
#                         the QEMU plugin scripts/bench/insn-count.c: the instructions and
#                         calls per message of every kernel function (bench-guest.sh's insn);
#                         BENCH_PROFILE=insn: the counting boots alone
#   BENCH_PROFILE_BEFORE=DIR  an earlier profile's raw output (a copy of its
#                         .test-results/profile/raw): its counts beside these in the summary,
#                         labelled with the tree in DIR/commit, as before and after
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
repo=$(cd "$here/.." && pwd)
. "$here/lib.sh"

providers=("$@")
profile=${BENCH_PROFILE:-}
[ "$profile" != 0 ] || profile=
if [ ${#providers[@]} = 0 ]; then
	if [ -n "$profile" ]; then providers=(rs c); else providers=(rs c rxe siw); fi
fi

quick=${BENCH_QUICK:-}
[ "$quick" != 0 ] || quick=
helpers=${BENCH_HELPERS:-outline}
case "$helpers" in
outline) kernel_flag=--bench; llvm=$LLVM_SUFFIX; results=$repo/.test-results/bench ;;
inline) kernel_flag=--bench-inline; llvm=-22; results=$repo/.test-results/bench-inline ;;
*) die "BENCH_HELPERS is outline (default) or inline" ;;
esac
[ -z "$profile" ] || results=$repo/.test-results/profile${results#"$repo"/.test-results/bench}
# The 6.12 line (KERNEL=6.12) has results of its own: .test-results/bench-6.12 and so on.
[ "$KERNEL_LINE" = 7.3 ] || results+=-$KERNEL_LINE
# A bandwidth point: 1 s warm-up, DURATION - 2 s measured, 1 s drain. Latency points count
# iterations instead: perftest's duration mode has no percentiles. With 2 to 5 s of start-up
# and connection set-up a point under TCG, a boot takes about 3 minutes, and a full run (10
# boots, rxe and siw once) about 35 on idle cores, up to 50 on shared ones (README).
if [ -n "$quick" ]; then
	rounds=${BENCH_ROUNDS:-1} duration=3 lat_iters=5000
else
	rounds=${BENCH_ROUNDS:-5} duration=4 lat_iters=20000
fi
ref_rounds=${BENCH_REF_ROUNDS:-1}
only=${BENCH_ONLY:-all}
# A profile: 4 seconds of samples in the middle of 8-second points.
profile_seconds=0
if [ -n "$profile" ]; then
	rounds=${BENCH_ROUNDS:-1} duration=8 profile_seconds=4
	only=${BENCH_ONLY:-send_bw_64 write_bw_64k}
fi
reference=${BENCH_REFERENCE:-c}
# A boot that has not finished by then hangs: the boot itself, 20 points with their start-up,
# and latency points at up to 10 ms an iteration (rxe's under load).
boot_timeout=$((600 + 20 * (duration + 30) + 3 * lat_iters / 100))
build=$results/build
build_notrace=$results/build-notrace
# Debian's python, which has Debian's matplotlib (a python earlier in PATH may not).
python=/usr/bin/python3

# build_copy KDIR DIR [MAKE VARIABLE...]: the tracked and untracked (not ignored) files of this
# tree, without build products, into DIR, and the modules built there against the benchmark
# kernel with the kernel's own LLVM.
build_copy() {
	local kdir=$1 dir=$2
	shift 2
	rm -rf "$dir"
	mkdir -p "$dir"
	(cd "$repo" && git ls-files -z --cached --others --exclude-standard |
		tar --null -T - -cf -) | tar -xf - -C "$dir"
	# A copy already: the 6.12 line builds in it, not in a .build/6.12/ of it (lib.sh's
	# module_tree), which sync-tree.sh could not fill from a tree outside git.
	[ "$KERNEL_LINE" = 7.3 ] || touch "$dir/.build-tree"
	log "building the modules against $kdir in $dir${1:+ ($*)}"
	make -s -C "$dir" KDIR="$kdir" LLVM="$llvm" "$@" modules
}

# The modules in $build (and in $build_notrace for rs-notrace), and memcpy-bw with the host's
# gcc (the guest runs the host's binaries over 9p); for a profile, the counting plugin and the
# guest's marks (at an address of their own: scripts/bench/insn-mark.c).
build_modules() {
	local kdir=$1 b=$build/scripts/bench
	build_copy "$kdir" "$build"
	gcc -O2 -Wall -o "$b/memcpy-bw" "$b/memcpy-bw.c"
	if [ -n "$profile" ]; then
		gcc -O2 -Wall -shared -fPIC -fvisibility=hidden -o "$b/insn-count.so" \
			"$b/insn-count.c" -lpthread
		gcc -O1 -Wall -static -no-pie -Wl,-Ttext-segment=0x13370000 -o "$b/insn-mark" \
			"$b/insn-mark.c"
	fi
	rm -rf "$build_notrace"
	if [[ " ${providers[*]} " == *" rs-notrace "* ]]; then
		build_copy "$kdir" "$build_notrace" RDMAVT_RS_TRACE=n
		cp "$build/scripts/bench/memcpy-bw" "$build_notrace/scripts/bench/"
	fi
}

# run_boot KDIR PROVIDER ROUND: one VM boot; its raw output in $results/raw/PROVIDER/ROUND.
# ROUND "insn": a profile's counting boot, with the plugin loaded.
#
# tsc=reliable: under TCG the clocksource watchdog finds the TSC skewed against the HPET now and
# then, a minute or so into a boot, and switches the guest to the HPET. From then on every
# gettimeofday() is a system call that reads an emulated HPET, where the vDSO read the TSC, and
# perftest asks for the time about ten times a message: `make profile`'s counts showed a boot
# that had switched spending twice the kernel instructions per 64-byte send of one that had not.
# A boot-by-boot lottery of that size has no place in a comparison; TCG's TSC follows the
# host's clock, so it is kept.
run_boot() {
	local kdir=$1 p=$2 round=$3 rdmavt=none net=() dir=$results/raw/$2/$3 tree=$build
	local mode=$profile_seconds plugin=()
	case "$p" in
	rs|c) rdmavt=$p ;;
	rs-notrace) rdmavt=rs tree=$build_notrace ;;
	siw) net=(--network user) ;;
	esac
	mkdir -p "$dir"
	[ "$round" != insn ] || { mode=insn; plugin=(--plugin "$(insn_plugin "$dir")"); }
	# The counting boot keeps the rdmavt.ko it loads, which the profile's summary reads the
	# counted instructions from (what they do: loads, stores, branches).
	if [ "$round" = insn ]; then
		case "$rdmavt" in
		rs) cp "$tree/rdmavt.ko" "$dir/" ;;
		c) cp "$kdir/drivers/infiniband/sw/rdmavt/rdmavt.ko" "$dir/" ;;
		esac
	fi
	echo "$p $round" >>"$results/raw/order"
	log "bench: $p, round $round ($(date -u +%H:%M:%S))"
	KDIR=$kdir bash "$tree/scripts/vm.sh" --rdmavt "$rdmavt" --timeout "$boot_timeout" \
		"${net[@]}" "${plugin[@]}" --append tsc=reliable --out "$dir" -- \
		"$tree/scripts/bench-guest.sh" "$p" "$duration" "$lat_iters" "$only" "$mode" \
		>"$dir/vm.log" 2>&1
}

# insn_plugin DIR: QEMU's -plugin argument for a counting boot writing to DIR/insn.N.
insn_plugin() {
	local b=$build/scripts/bench
	nm "$b/insn-mark" | awk -v so="$b/insn-count.so,out=$1/insn" '
		$3 == "mark_start" { start = $1 }
		$3 == "mark_stop" { stop = $1 }
		END { print so ",start=0x" start ",stop=0x" stop }'
}

# The boots in their order: the rdmavts (rs, rs-notrace, c) round by round, in the order
# given in odd rounds and the reverse in even ones (rs c, c rs, rs c, ...), then rxe and siw.
# The reversal balances what a boot's place in the run does to it: with the same one always
# first, a host that drifts over the run, or a second boot that finds the first's files in the
# host's page cache, favours one side in every round (a run of 3 rounds at 64-byte writes
# gave the first boot of each round 9% more in one order and none in the other).
boot_plan() {
	local r p n=$rounds m=$ref_rounds rdmavts=()
	[ "$profile" != insn ] || n=0 m=0
	for p in "${providers[@]}"; do
		case "$p" in rs|rs-notrace|c) rdmavts+=("$p") ;; esac
	done
	for ((r = 1; r <= n; r++)); do
		for p in $(round_order "$r" "${rdmavts[@]}"); do
			echo "$p $r"
		done
	done
	for p in "${providers[@]}"; do
		case "$p" in rs|rs-notrace|c) continue ;; esac
		for ((r = 1; r <= m; r++)); do
			echo "$p $r"
		done
	done
	[ -z "$profile" ] || for p in "${providers[@]}"; do echo "$p insn"; done
}

# round_order ROUND PROVIDER...: the providers in their order in odd rounds, reversed in even.
round_order() {
	local r=$1 i
	shift
	if ((r % 2)); then
		echo "$@"
	else
		for ((i = $#; i >= 1; i--)); do echo "${!i}"; done
	fi
}

# The table and the plot from raw/, with a header that says what was measured on what.
report() {
	local kdir=$1
	{
		echo "perftest on $(basename "$kdir") (scripts/kconfig/bench.config, Rust helpers" \
			"$helpers), QEMU TCG, 2 vCPUs, $(date -u '+%Y-%m-%d %H:%M UTC')," \
			"$(git -C "$repo" describe --always --dirty)."
		echo "Boots: $(boot_plan | awk '!($1 in n) { o[k++] = $1 } { n[$1]++ }
			END { for (i = 0; i < k; i++) printf "%s%s %d", i ? ", " : "", o[i], n[o[i]] }')" \
			"(the rdmavts alternating); bandwidth points ${duration} s (-D $duration -f 1)," \
			"latency points -n $lat_iters${quick:+ (quick mode)}."
		echo
		"$python" "$here/bench_report.py" --png "$results/ratios.png" --reference "$reference" \
			--title "$(basename "$kdir"), Rust helpers $helpers, QEMU TCG, 2 vCPUs" \
			"$results/raw" "${providers[@]}"
	} >"$results/results.md"
	cat "$results/results.md"
}

# The profile's side-by-side summary: $results/perf.md, and docs/perf.md for the default kernel
# line and helpers (the one the README discusses).
profile_summary() {
	local kdir=$1 before=()
	if [ -n "${BENCH_PROFILE_BEFORE:-}" ]; then
		before=(--before "$BENCH_PROFILE_BEFORE"
			"$(cat "$BENCH_PROFILE_BEFORE/commit" 2>/dev/null || echo "an earlier tree")")
	fi
	"$python" "$here/profile_report.py" --title "$(basename "$kdir"), Rust helpers $helpers," \
		--commit "$(git -C "$repo" describe --always --dirty)" "${before[@]}" "$results/raw" \
		"${providers[@]}" >"$results/perf.md"
	if [ "$KERNEL_LINE" = 7.3 ] && [ "$helpers" = outline ] && [ "$profile" != insn ]; then
		cp "$results/perf.md" "$repo/docs/perf.md"
		log "profile: docs/perf.md"
	fi
}

main() {
	local kdir p round failed=() start=$SECONDS
	for p in "${providers[@]}"; do
		case "$p" in rs|rs-notrace|c|rxe|siw) ;; *) die "unknown provider $p (rs, rs-notrace, c, rxe or siw)" ;; esac
	done
	[[ " ${providers[*]} " == *" $reference "* ]] ||
		die "BENCH_REFERENCE=$reference is not among the providers (${providers[*]})"
	kdir=$(BENCH_HELPERS=$helpers bash "$here/kernel.sh" "$kernel_flag")
	BENCH_HELPERS=$helpers build_modules "$kdir"
	rm -rf "$results/raw"
	mkdir -p "$results/raw"
	git -C "$repo" describe --always --dirty >"$results/raw/commit"
	while read -r p round; do
		run_boot "$kdir" "$p" "$round" </dev/null || {
			log "bench: $p round $round failed (see $results/raw/$p/$round/vm.log)"
			failed+=("$p/$round")
		}
	done < <(boot_plan)
	[ "$profile" = insn ] || report "$kdir"
	[ -z "$profile" ] || profile_summary "$kdir"
	log "benchmark: $(( (SECONDS - start) / 60 )) min; results: $results/results.md," \
		"plot: $results/ratios.png, raw output: $results/raw/"
	[ ${#failed[@]} = 0 ] || die "runs failed: ${failed[*]}"
}

main
