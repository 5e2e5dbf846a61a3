#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only
#
# rdma-core's own verbs tests (python3-pyverbs) against rvt_loop0: the device, PD, MR and CQ
# suites, CQ resize included, and those that need QPs and traffic through rvt_loop's send
# engine: QPs, CQ events, atomics, AHs, shared PDs, relaxed ordering. The raw unittest log goes
# to $RDMAVT_RS_OUT/pyverbs.log, where the host compares the rdmavt-rs run with the C rdmavt run
# test by test.
#
# tests/pyverbs-known-gaps lists what does not work yet, on rdmavt-rs or on both modules; those
# tests are reported as TODO while they fail, so the list can only shrink.
set -u
tests=$(cd "$(dirname "$0")/.." && pwd)
. "$tests/lib/ktap.sh"

suites=(test_device test_pd test_mr test_cq test_qp test_cq_events test_atomic test_addr
	test_shared_pd test_relaxed_ordering)
src=/usr/share/doc/rdma-core/tests
work=$(mktemp -d)
log=${RDMAVT_RS_OUT:-$work}/pyverbs.log
trap 'rmmod rvt_loop 2>/dev/null; rm -rf "$work"' EXIT

ktap_header
if [ ! -d "$src" ]; then
	ktap_plan 1
	ktap_skip "pyverbs" "python3-pyverbs is not installed"
	ktap_finish
	exit
fi
# The suite ships partly gzipped; run a private, unpacked copy.
cp -r "$src" "$work/tests"
gunzip -q "$work"/tests/*.gz

if ! insmod "$RDMAVT_RS_REPO/rvt_loop.ko" 2>"$work/insmod.err"; then
	ktap_plan 1
	sed 's/^/# /' "$work/insmod.err"
	ktap_fail "pyverbs: rvt_loop loads"
	ktap_finish
	exit
fi

# pyverbs is installed for Debian's interpreter, not for one earlier in PATH.
(cd "$work/tests" && timeout 600 /usr/bin/python3 run_tests.py --dev rvt_loop0 -v \
	"${suites[@]}") >"$log" 2>&1
python3 "$tests/tap.py" unittest "" "$log" "$tests/pyverbs-known-gaps" "$RDMAVT_RS_RDMAVT" |
	tee "$work/tap"
! grep -q '^not ok' <(grep -v '# TODO' "$work/tap")
