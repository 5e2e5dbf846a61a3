#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only
#
# rdmavt-rs loads and unloads cleanly, ten times in a row, and so does the in-tree C rdmavt of
# the same kernel build (the reference every behavioural test also runs on). Leaves the rdmavt
# that the VM started with loaded again.
set -u
. "$(dirname "$0")/../lib/ktap.sh"
. "$(dirname "$0")/../lib/rdmavt.sh"

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

# Whether the rdmavt that is loaded now is rdmavt-rs: only it defines the marker symbol
# rdmavt_rs_soft_device_ok (rdmavt_glue.c), which the kernel lists among the loaded module's
# symbols (CONFIG_KALLSYMS_ALL). The .ko file on disk says nothing about what was loaded.
loaded_rdmavt_is_ours() {
	awk '$3 == "rdmavt_rs_soft_device_ok" && $4 == "[rdmavt]" { found = 1 }
		END { exit !found }' /proc/kallsyms
}

ours_is_what_loads() {
	insmod "$ours" || return 1
	local rc=0
	loaded_rdmavt_is_ours || { echo "no rdmavt_rs_soft_device_ok in [rdmavt]"; rc=1; }
	rmmod rdmavt
	return $rc
}

load_c_reference() {
	modprobe rdmavt || return 1
	loaded || { echo "modprobe rdmavt left no module"; return 1; }
	if loaded_rdmavt_is_ours; then
		echo "modprobe rdmavt loaded rdmavt-rs"
		modprobe -r rdmavt
		return 1
	fi
	modprobe -r rdmavt || return 1
	! loaded
}


ktap_header
ktap_plan 3
unload
ktap_check "rdmavt-rs loads and unloads $rounds times" load_ours_repeatedly
ktap_check "the module insmod loads is rdmavt-rs (its marker symbol is in kallsyms)" \
	ours_is_what_loads
ktap_check "the in-tree C rdmavt loads (without that marker) and unloads" load_c_reference
load_run_rdmavt || ktap_msg "could not reload the $RDMAVT_RS_RDMAVT rdmavt"
ktap_finish
