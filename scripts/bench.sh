#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only
#
# `make bench`: perftest over rdmavt-rs, the in-tree C rdmavt, rxe and siw, side by side, on
# the benchmark kernel (scripts/kconfig/bench.config: the test kernel without its debugging).
#
# Builds that kernel (`scripts/kernel.sh --bench`), builds rdmavt.ko and rvt_loop.ko against
# it in a copy of this tree (.test-results/bench/build: the test build's modules in the tree
# are never touched), then boots the VM once per provider and runs scripts/bench-guest.sh:
# rdmavt-rs and C rdmavt each with rvt_loop0, rxe0 over lo, siw0 over the guest's NIC. The
# table of results, with each provider's ratio to the C rdmavt, is printed and written to
# .test-results/bench/results.md, the raw perftest output beside it.
#
# Speed never fails the run: it fails only when a build, a boot or a perftest run fails.
# Under TCG the numbers are only comparable within one run.
#
#   scripts/bench.sh [PROVIDER...]    rs, c, rxe, siw (default: all four)
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
repo=$(cd "$here/.." && pwd)
. "$here/lib.sh"

results=$repo/.test-results/bench
build=$results/build
providers=("$@")
[ ${#providers[@]} -gt 0 ] || providers=(rs c rxe siw)

# The tracked and untracked (not ignored) files of this tree, without build products, into
# $build, and the modules built there against the benchmark kernel.
build_modules() {
	local kdir=$1
	rm -rf "$build"
	mkdir -p "$build"
	(cd "$repo" && git ls-files -z --cached --others --exclude-standard |
		tar --null -T - -cf -) | tar -xf - -C "$build"
	log "building the modules against $kdir in $build"
	make -s -C "$build" KDIR="$kdir" modules
}

# run_provider KDIR PROVIDER: one VM boot; its raw output in $results/raw/PROVIDER.
run_provider() {
	local kdir=$1 p=$2 rdmavt=none net=()
	case "$p" in
	rs|c) rdmavt=$p ;;
	rxe) ;;
	siw) net=(--network user) ;;
	*) die "unknown provider $p (rs, c, rxe or siw)" ;;
	esac
	rm -rf "$results/raw/$p"
	mkdir -p "$results/raw/$p"
	log "bench: $p"
	KDIR=$kdir bash "$build/scripts/vm.sh" --rdmavt "$rdmavt" --timeout 1500 "${net[@]}" \
		--out "$results/raw/$p" -- "$build/scripts/bench-guest.sh" "$p" \
		>"$results/raw/$p/vm.log" 2>&1
}

main() {
	local kdir p failed=()
	kdir=$(bash "$here/kernel.sh" --bench)
	build_modules "$kdir"
	for p in "${providers[@]}"; do
		run_provider "$kdir" "$p" || {
			log "bench: the $p run failed (see $results/raw/$p/vm.log)"
			failed+=("$p")
		}
	done
	{
		echo "perftest on $(basename "$kdir") (scripts/kconfig/bench.config), QEMU TCG," \
			"2 vCPUs, $(date -u '+%Y-%m-%d %H:%M UTC'), $(git -C "$repo" describe --always --dirty)"
		echo
		python3 "$here/bench_report.py" "$results/raw" "${providers[@]}"
	} >"$results/results.md"
	cat "$results/results.md"
	log "results: $results/results.md, raw output: $results/raw/"
	[ ${#failed[@]} = 0 ] || die "runs failed: ${failed[*]}"
}

main
