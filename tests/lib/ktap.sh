# SPDX-License-Identifier: GPL-2.0-only
#
# KTAP output for the shell tests, in the form kselftest uses: a header, a plan, one line per
# test point, totals, and an exit status of 0 only when nothing failed. Sourced, never run.

KTAP_PASS=0
KTAP_FAIL=0
KTAP_SKIP=0
KTAP_N=0

ktap_header() { echo "TAP version 13"; }
ktap_plan() { echo "1..$1"; }
ktap_msg() { echo "# $*"; }

ktap_pass() { KTAP_N=$((KTAP_N + 1)); KTAP_PASS=$((KTAP_PASS + 1)); echo "ok $KTAP_N $*"; }
ktap_fail() { KTAP_N=$((KTAP_N + 1)); KTAP_FAIL=$((KTAP_FAIL + 1)); echo "not ok $KTAP_N $*"; }
# ktap_skip NAME REASON: counted as skipped, never as a pass; a REASON that says "C rdmavt"
# puts it under the C bugs in `tap.py count`'s breakdown (its SKIP_CATEGORIES).
ktap_skip() {
	KTAP_N=$((KTAP_N + 1)); KTAP_SKIP=$((KTAP_SKIP + 1))
	echo "ok $KTAP_N $1 # SKIP ${2:-no reason given}"
}
# A known gap that a later change closes: reported, counted as skipped, never as a pass.
ktap_todo() {
	KTAP_N=$((KTAP_N + 1)); KTAP_SKIP=$((KTAP_SKIP + 1))
	echo "not ok $KTAP_N $1 # TODO ${2:-}"
}

# ktap_check NAME CMD...: one test point that passes when CMD succeeds; CMD's output is shown
# as diagnostics only when it fails.
ktap_check() {
	local name=$1 output
	shift
	if output=$("$@" 2>&1); then
		ktap_pass "$name"
	else
		printf '%s\n' "$output" | sed 's/^/# /'
		ktap_fail "$name"
	fi
}

# ktap_bail DESCRIPTION: the whole test cannot run: a plan of one failing point, and exit.
ktap_bail() {
	ktap_header
	ktap_plan 1
	ktap_fail "$1"
	ktap_finish
	exit
}

# Where `make test-progs` puts the test programs of tests/progs/.
KTAP_PROGS=${RDMAVT_RS_REPO:-}/.test-bin

# ktap_need_prog NAME: bails out of the test when test program NAME is not built.
ktap_need_prog() {
	[ -x "$KTAP_PROGS/$1" ] || ktap_bail "$1: $KTAP_PROGS/$1 is not built (make test-progs)"
}

# ktap_load_rvt_loop NAME: loads rvt_loop, to be unloaded when the test exits; bails out of
# test NAME when it does not load.
ktap_load_rvt_loop() {
	local err
	err=$(insmod "$RDMAVT_RS_REPO/rvt_loop.ko" 2>&1) || ktap_bail "$1: rvt_loop loads: $err"
	trap 'rmmod rvt_loop 2>/dev/null' EXIT
}

ktap_finish() {
	echo "# Totals: pass:$KTAP_PASS fail:$KTAP_FAIL skip:$KTAP_SKIP"
	[ "$KTAP_FAIL" = 0 ]
}
