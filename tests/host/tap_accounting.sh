#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only
#
# tests/tap.py's honest accounting: a pyverbs test skipped in both runs is a skip in the
# differential, not a pass, and keeps its reason; a TAP file with no points, without a plan or
# with a plan that disagrees with its points fails; `count` sorts the skips by why (a feature
# neither rdmavt has, a C bug, pyverbs' random caps, a TODO, anything else) on the line before
# its last, which stays "N passed, N failed, N skipped"; tests/lib/ktap.py's skip() is a skip.
set -u
here=$(cd "$(dirname "$0")" && pwd)
. "$here/../lib/ktap.sh"
tap=$here/../tap.py
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

# The differential and one run's unittest log: t0 skipped on both for device memory, t1 (a
# "random" test) skipped on both, t2 passed on both, t3 skipped with a reason in quotes.
cat >"$tmp/gaps" <<'GAPS'
random m.C.test_t1
GAPS
cat >"$tmp/a" <<'LOG'
test_t0 (m.C.test_t0) ... skipped 'Device memory is not supported'
test_t1 (m.C.test_t1) ... skipped 'Create RC QP with attrs is not supported'
test_t2 (m.C.test_t2) ... ok
test_t3 (m.C.test_t3) ... skipped "Device rvt_loop0 doesn't have net interface"
LOG
cp "$tmp/a" "$tmp/b"
python3 "$tap" diff d "$tmp/a" "$tmp/b" "$tmp/gaps" >"$tmp/diff.tap"
python3 "$tap" unittest u "$tmp/a" "$tmp/gaps" rs >"$tmp/unittest.tap"
line() { grep "m.C.test_t$1:" "$tmp/diff.tap"; }

# prefix NAME RC: tap.py prefix over the TAP text on stdin.
prefix() { cat >"$tmp/$1.in"; python3 "$tap" prefix "$1" "$2" "$tmp/$1.in"; }
printf 'TAP version 13\n# nothing\n' | prefix none 0 >"$tmp/none.tap"
printf 'TAP version 13\n1..3\nok 1 a\nok 2 b\n' | prefix short 0 >"$tmp/short.tap"
printf 'TAP version 13\nok 1 a\n' | prefix unplanned 0 >"$tmp/unplanned.tap"
printf 'TAP version 13\nok 1 a\nok 2 b\n1..2\n' | prefix good 0 >"$tmp/good.tap"
printf 'TAP version 13\n1..1\nok 1 a\n' | prefix status 3 >"$tmp/status.tap"

# tests/lib/ktap.py's skip(), as a kselftest of ours uses it for a C bug.
RDMAVT_RS_REPO=$tmp python3 -c "
import sys
sys.path.insert(0, '$here/../lib')
import ktap
ktap.skip('resize', 'the C rdmavt unbalances c_lock')
print('1..1')" >"$tmp/ktap_skip.tap"

# The fuzzer's step logs: seed 1 the same in both, seed 2 different at its second step, seed 3
# only in the first run; and two logs that hold no seed.
printf 'seed 1 step 1: a -> ok\nseed 2 step 1: b -> ok\nseed 2 step 2: c -> ok\nseed 3 step 1: d -> ok\n' \
	>"$tmp/fuzz_a"
printf 'seed 1 step 1: a -> ok\nseed 2 step 1: b -> ok\nseed 2 step 2: c -> errno 22\n' >"$tmp/fuzz_b"
python3 "$tap" fuzzdiff f "$tmp/fuzz_a" "$tmp/fuzz_b" >"$tmp/fuzz.tap"
python3 "$tap" fuzzdiff f "$tmp/missing" /dev/null >"$tmp/fuzz_none.tap"
# A guest that died before it wrote its KUnit log: every suite fails, and tap.py does not.
python3 "$tap" kunit "$tmp/missing" s1 s2 >"$tmp/kunit_none.tap"
kunit_rc=$?

# Every kind of skip once, besides the differential's three, then the count.
cat >"$tmp/mixed.tap" <<'TAP'
ok 1 a
not ok 2 b # TODO known gap (tests/pyverbs-known-gaps)
ok 3 c # SKIP the device takes fewer than 16 receive SGEs
TAP
python3 "$tap" count "$tmp/diff.tap" "$tmp/ktap_skip.tap" "$tmp/mixed.tap" >"$tmp/count"
count_rc=$?

ktap_header
ktap_plan 20
ktap_check "diff: skipped in both is a skip, with its reason" \
	grep -q '^ok .* skipped / skipped # SKIP Device memory is not supported$' <<<"$(line 0)"
ktap_check "diff: a random test skipped in both says so" \
	grep -q '# SKIP random caps (tests/pyverbs-known-gaps): Create RC QP' <<<"$(line 1)"
ktap_check "diff: passed in both is a pass" grep -q '^ok .* ok / ok$' <<<"$(line 2)"
ktap_check "diff: a reason in double quotes is read too" \
	grep -q "# SKIP Device rvt_loop0 doesn't have net interface$" <<<"$(line 3)"
ktap_check "unittest: a skip keeps its reason, and the plan follows the points" \
	bash -c "grep -q '^ok 1 u: m.C.test_t0: skipped # SKIP Device memory' '$tmp/unittest.tap' &&
		[ \"\$(tail -1 '$tmp/unittest.tap')\" = 1..4 ]"
ktap_check "prefix: no points fails" grep -q '^not ok 1 none: printed no test points$' \
	"$tmp/none.tap"
ktap_check "prefix: a plan the points disagree with fails" \
	grep -q '^not ok 3 short: planned 3 test points, printed 2$' "$tmp/short.tap"
ktap_check "prefix: no plan fails" \
	grep -q '^not ok 2 unplanned: printed no plan (1..N) for its 1 test points$' \
	"$tmp/unplanned.tap"
ktap_check "prefix: a plan at the end that matches is fine" \
	bash -c "[ \"\$(grep -c '^ok ' '$tmp/good.tap')\" = 2 ] && ! grep -q '^not ok' '$tmp/good.tap'"
ktap_check "prefix: a status without a failing point still fails" \
	grep -q '^not ok 2 status: exited with status 3$' "$tmp/status.tap"
ktap_check "fuzzdiff: the same log is a pass" \
	grep -q '^ok 1 f: seed 1: 1 / 1 steps logged, the same$' "$tmp/fuzz.tap"
ktap_check "fuzzdiff: a different step fails and is shown" \
	bash -c "grep -q '^not ok 2 f: seed 2: 2 / 2 steps logged, different$' '$tmp/fuzz.tap' &&
		grep -q '^# b: seed 2 step 2: c -> errno 22$' '$tmp/fuzz.tap'"
ktap_check "fuzzdiff: a seed one run lacks fails" \
	grep -q '^not ok 3 f: seed 3: 1 / 0 steps logged, different$' "$tmp/fuzz.tap"
ktap_check "fuzzdiff: no seed at all fails" grep -q '^not ok 1 f: no seed ran$' \
	"$tmp/fuzz_none.tap"
ktap_check "kunit: a missing log fails each suite" \
	bash -c "[ $kunit_rc = 0 ] && grep -q '^not ok 1 kunit s1: the suite did not run$' '$tmp/kunit_none.tap' &&
		grep -q '^not ok 2 kunit s2: the suite did not run$' '$tmp/kunit_none.tap'"
ktap_check "ktap.py: skip() prints a SKIP point" \
	grep -q '^ok 1 resize # SKIP the C rdmavt unbalances c_lock$' "$tmp/ktap_skip.tap"
ktap_check "count: the last line is the count, skips counted as skipped" \
	test "$(tail -1 "$tmp/count")" = "2 passed, 0 failed, 6 skipped"
breakdown="# skipped: 1 for features neither rdmavt has, 1 for C rdmavt bugs,"
breakdown+=" 1 for random pyverbs caps, 1 TODO (known gaps), 2 for other reasons"
ktap_check "count: the line before it breaks the skips down" \
	test "$(tail -2 "$tmp/count" | head -1)" = "$breakdown"
ktap_check "count: exits 0 with nothing failed" test "$count_rc" = 0
ktap_check "count: a failure still fails it, and its count stays last" \
	bash -c "! python3 '$tap' count '$tmp/short.tap' >'$tmp/count2' &&
		[ \"\$(tail -1 '$tmp/count2')\" = '2 passed, 1 failed, 0 skipped' ]"
ktap_finish
