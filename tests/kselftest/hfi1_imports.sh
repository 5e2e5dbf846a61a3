#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only
#
# Which rdmavt symbols that hfi1.ko imports does rdmavt-rs export? One test point per import:
# a pass when we export it, a TODO while we do not yet (the hfi1 issue turns all into passes).
# Reads the symbol tables only; loading hfi1 for real is a separate test.
set -u
. "$(dirname "$0")/../lib/ktap.sh"

hfi1=$(modinfo -n hfi1 2>/dev/null) || hfi1=
ktap_header
if [ -z "$hfi1" ] || [ ! -f "$hfi1" ]; then
	ktap_plan 1
	ktap_skip "hfi1 imports" "hfi1.ko is not in this kernel build"
	ktap_finish
	exit
fi

# What hfi1 takes from rdmavt: its undefined rvt_* symbols and ib_rvt_state_ops.
imports=$(llvm-nm-19 -u "$hfi1" | awk '{ print $2 }' | grep -E '^(rvt_|ib_rvt_)' | sort -u)
# What we export, from the Module.symvers of our build.
exports=$(awk '{ print $2 }' "$RDMAVT_RS_REPO/Module.symvers" | sort -u)

ktap_plan "$(echo "$imports" | wc -l)"
for sym in $imports; do
	if grep -qx "$sym" <<<"$exports"; then
		ktap_pass "hfi1 import $sym is exported"
	else
		ktap_todo "hfi1 import $sym is exported" "not yet implemented in rdmavt-rs"
	fi
done
ktap_finish
