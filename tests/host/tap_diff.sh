#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only
#
# tests/tap.py diff, the test-by-test comparison of the two pyverbs runs: equal outcomes pass;
# a difference fails unless the gaps file excuses it: as a TODO for an "rs" test, and, for a
# "random" test only, ok on one side and skipped on the other.
set -u
here=$(cd "$(dirname "$0")" && pwd)
. "$here/../lib/ktap.sh"
tap=$here/../tap.py
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

# log FILE OUTCOME...: a unittest -v log of tests t0, t1, ... with these outcomes.
log() {
	local f=$1 i=0 o
	shift
	for o in "$@"; do
		echo "test_t$i (m.C.test_t$i) ... $o"
		i=$((i + 1))
	done >"$f"
}

cat >"$tmp/gaps" <<'GAPS'
# comment
rs m.C.test_t2
random m.C.test_t3
random m.C.test_t4
GAPS
#              t0  t1   t2    t3                 t4
log "$tmp/a" ok ok ERROR "skipped 'caps'" ok
log "$tmp/b" ok FAIL ok ok ERROR
python3 "$tap" diff d "$tmp/a" "$tmp/b" "$tmp/gaps" >"$tmp/out"

# line N: the diff's line for test tN.
line() { grep "m.C.test_t$1:" "$tmp/out"; }

ktap_header
ktap_plan 5
ktap_check "the same outcome passes" grep -q '^ok ' <<<"$(line 0)"
ktap_check "a difference fails" grep -q '^not ok .* ok / FAIL$' <<<"$(line 1)"
ktap_check "a difference in an rs gap is a TODO" grep -q '^not ok .*# TODO' <<<"$(line 2)"
ktap_check "a random test may skip on one side" grep -q '^ok .* skipped / ok$' <<<"$(line 3)"
ktap_check "a random test may not fail on one side" grep -q '^not ok .* ok / ERROR$' <<<"$(line 4)"
ktap_finish
