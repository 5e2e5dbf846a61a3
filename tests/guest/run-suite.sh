#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only
#
# The test mode, inside the guest (started by tests/check.sh through scripts/vm.sh, with the
# chosen rdmavt already loaded). Writes into $RDMAVT_RS_OUT:
#   kunit.log      the kernel log as it stood after the modules' KUnit suites ran at load time
#   NAME.tap       the TAP output of each kselftest program under tests/kselftest/
#   NAME.rc        its exit status
#   kmemleak.txt   what a kmemleak scan found at the end
#   dmesg.txt      the whole kernel log at the end
# The host parses these; this script only runs things and records what happened.
set -u

out=$RDMAVT_RS_OUT
tests=$RDMAVT_RS_REPO/tests/kselftest
. "$RDMAVT_RS_REPO/tests/lib/rdmavt.sh"
leaks=/sys/kernel/debug/kmemleak

dmesg >"$out/kunit.log"
: >"$out/kmemleak.txt"

# A test that leaves the run's rdmavt unloaded (one killed by its timeout before its cleanup)
# fails, and the rdmavt is loaded again, with any overlay it left on the modules dir gone, so
# that the tests after it are not failed for what it did.
left_unloaded() {
	local modules
	[ "$RDMAVT_RS_RDMAVT" != none ] && [ ! -d /sys/module/rdmavt ] || return 0
	echo "# tests/guest/run-suite.sh: $1 left rdmavt unloaded; loaded again" >>"$out/$1.tap"
	[ "$(cat "$out/$1.rc")" != 0 ] || echo 1 >"$out/$1.rc"
	modules=$(readlink -f "/lib/modules/$(uname -r)")
	! mountpoint -q "$modules" || umount -l "$modules"
	load_run_rdmavt
}

# Objects allocated during boot are not ours to answer for: start counting leaks from here.
[ -w "$leaks" ] && echo clear >"$leaks"

# RDMAVT_RS_TESTS="NAME...": only these tests (make stress). A soak's stress phases
# (RDMAVT_RS_STRESS_DURATION seconds each) get the time they need on top of the usual bound.
limit=$((600 + 12 * ${RDMAVT_RS_STRESS_DURATION:-0}))
for t in "$tests"/*; do
	[ -f "$t" ] || continue
	name=$(basename "${t%.*}")
	[ -z "${RDMAVT_RS_TESTS:-}" ] || [[ " $RDMAVT_RS_TESTS " == *" $name "* ]] || continue
	echo "--- $name ($RDMAVT_RS_RDMAVT)"
	# The kernel log names each test as it starts: a report then says which test caused it
	# (scripts/splat_check.py prints it as "during:").
	echo "rdmavt-rs test: $name" >/dev/kmsg
	if [ ! -x "$t" ]; then
		# A test that cannot run fails, rather than vanish from the count.
		printf 'TAP version 13\n1..1\nnot ok 1 %s\n' \
			"tests/kselftest/${t##*/} has no run bit (chmod +x)" \
			>"$out/$name.tap"
		echo 1 >"$out/$name.rc"
		continue
	fi
	# A bound on a hang, not a judgement of speed: a test that loads rdmavt-rs several times
	# runs its KUnit suites each time, which takes a while under TCG on shared cores.
	timeout "$limit" "$t" >"$out/$name.tap" 2>&1
	echo $? >"$out/$name.rc"
	left_unloaded "$name"
done

if [ -w "$leaks" ]; then
	# kmemleak only reports objects older than a few seconds; scan twice to catch the last test.
	sleep 6
	echo scan >"$leaks"
	echo scan >"$leaks"
	cat "$leaks" >"$out/kmemleak.txt"
fi
dmesg >"$out/dmesg.txt"
