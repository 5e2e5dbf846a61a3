#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only
#
# rdmavt-rs loads and unloads cleanly, ten times in a row, and so does the in-tree C rdmavt of
# the same kernel build (the reference every behavioural test also runs on). Leaves the rdmavt
# that the VM started with loaded again.
set -u
. "$(dirname "$0")/../lib/ktap.sh"

ours=$RDMAVT_RS_REPO/rdmavt.ko
rounds=10

loaded() { [ -d /sys/module/rdmavt ]; }
unload() { ! loaded || rmmod rdmavt; }

# Ours, ten times: every load must initialise (the ABI self-check runs at init) and every
# unload must leave no module behind.
load_ours_repeatedly() {
	local i
	for i in $(seq "$rounds"); do
		insmod "$ours" || { echo "insmod failed in round $i"; return 1; }
		grep -qx live /sys/module/rdmavt/initstate || { echo "not live in round $i"; return 1; }
		rmmod rdmavt || { echo "rmmod failed in round $i"; return 1; }
		! loaded || { echo "still loaded after round $i"; return 1; }
	done
}

# The module that is loaded is ours: only rdmavt-rs carries the "(Rust)" description.
ours_is_what_loads() {
	insmod "$ours" || return 1
	local d
	d=$(modinfo -F description "$ours")
	rmmod rdmavt
	[[ $d == *"(Rust)"* ]] || { echo "description: $d"; return 1; }
}

load_c_reference() {
	modprobe rdmavt || return 1
	loaded || { echo "modprobe rdmavt left no module"; return 1; }
	modprobe -r rdmavt || return 1
	! loaded
}

restore() {
	case "$RDMAVT_RS_RDMAVT" in
	rs) insmod "$ours" ;;
	c) modprobe rdmavt ;;
	esac
}

ktap_header
ktap_plan 3
unload
ktap_check "rdmavt-rs loads and unloads $rounds times" load_ours_repeatedly
ktap_check "the module insmod loads is rdmavt-rs" ours_is_what_loads
ktap_check "the in-tree C rdmavt loads and unloads" load_c_reference
restore || ktap_msg "could not reload the $RDMAVT_RS_RDMAVT rdmavt"
ktap_finish
