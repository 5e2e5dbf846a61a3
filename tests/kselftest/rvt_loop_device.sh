#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only
#
# rvt_loop, the software loopback HFI, registers devices that rdma-core serves as InfiniBand
# HCAs (through libhfi1verbs), with an ACTIVE port of LID 1 + unit and an MTU of 4096; it pins
# rdmavt while loaded and unregisters everything when unloaded. Runs on both rdmavt variants:
# every point must pass on both. Leaves the system as it found it: rvt_loop unloaded, the variant's rdmavt loaded.
set -u
. "$(dirname "$0")/../lib/ktap.sh"
. "$(dirname "$0")/../lib/rdmavt.sh"
. "$(dirname "$0")/../lib/traffic.sh"

ko=$RDMAVT_RS_REPO/rvt_loop.ko
load_err=

loaded() { [ -d /sys/module/rvt_loop ]; }
unload() { ! loaded || rmmod rvt_loop; }

# The value of port attribute $2 ("state:", "port_lid:", ...) in `ibv_devinfo -v` of device $1.
port_attr() { ibv_devinfo -v -d "$1" | awk -v key="$2" '$1 == key { print $2; exit }'; }

expect_port_attr() {
	local dev=$1 key=$2 want=$3 got
	got=$(port_attr "$dev" "$key")
	[ "$got" = "$want" ] && return
	echo "$dev: $key is '$got', expected '$want'"
	ibv_devinfo -v -d "$dev"
	return 1
}

# libibverbs lists only devices that a provider serves: for ours that is libhfi1verbs.
listed() {
	ibv_devices | awk 'NR > 2 { print $1 }' | grep -qx "$1" && return
	ibv_devices
	return 1
}

# libhfi1verbs opens the device and queries it (ibv_devinfo fails otherwise).
hfi1_provider_opens() {
	ibv_devinfo -d "$1" || return 1
	ibv_devinfo -d "$1" | grep -q 'transport:.*InfiniBand'
}

only_devices() {
	local want=$* got
	got=$(ls /sys/class/infiniband 2>/dev/null | grep '^rvt_loop' | tr '\n' ' ')
	[ "$got" = "${want:+$want }" ] && return
	echo "rvt_loop devices: '$got', expected '$want'"
	return 1
}

devices_up() {
	local dev
	for dev in "$@"; do
		listed "$dev" && link_active "$dev" || return 1
	done
	only_devices "$@"
}

two_devices_up() {
	devices_up rvt_loop0 rvt_loop1 && expect_port_attr rvt_loop1 port_lid: 2
}

# rdmavt's exports are in use by rvt_loop, so the module cannot go.
rdmavt_pinned() {
	if rmmod rdmavt 2>/dev/null; then
		echo "rmmod rdmavt succeeded while rvt_loop was loaded"
		restore_rdmavt
		return 1
	fi
	[ -d /sys/module/rdmavt ]
}

unloads_cleanly() {
	rmmod rvt_loop || return 1
	! loaded || { echo "rvt_loop still loaded"; return 1; }
	only_devices
}

restore_rdmavt() {
	[ -d /sys/module/rdmavt ] || load_run_rdmavt
}

# The pci-testdev (1b36:0005) that rvt_loop binds, as a sysfs path.
testdev() {
	local d
	for d in /sys/bus/pci/devices/*; do
		[ "$(cat "$d/vendor")" = 0x1b36 ] && [ "$(cat "$d/device")" = 0x0005 ] && echo "$d"
	done | head -1
}

# With the pci-testdev withheld from it (driver_override), rvt_loop must refuse to load on the
# C rdmavt, whose log macros need a PCI device, and register its device without one on
# rdmavt-rs.
without_pci() {
	local dev rc=0
	dev=$(testdev)
	[ -n "$dev" ] || { echo "no pci-testdev (1b36:0005) in this VM"; return 1; }
	echo none >"$dev/driver_override" || return 1
	if insmod "$ko" 2>&1; then
		if [ "$RDMAVT_RS_RDMAVT" = c ]; then
			echo "rvt_loop loaded on the C rdmavt without a PCI device"
			rc=1
		else
			devices_up rvt_loop0 || rc=1
		fi
		rmmod rvt_loop || rc=1
	elif [ "$RDMAVT_RS_RDMAVT" = rs ]; then
		echo "rvt_loop failed to load on rdmavt-rs without a PCI device"
		rc=1
	elif loaded; then
		echo "rvt_loop failed to load but is loaded"
		rc=1
	else
		dmesg | tail -5 | grep -q 'rvt_loop: no PCI device to bind' || {
			echo "no pr_err from rvt_loop"
			rc=1
		}
	fi
	echo >"$dev/driver_override"
	return $rc
}

without_pci_point() {
	local name="without a PCI device: refused on the C rdmavt, served on rdmavt-rs" out
	if ! out=$(without_pci); then
		printf '%s\n' "$out" | sed 's/^/# /'
		ktap_fail "$name"
	else
		ktap_pass "$name"
	fi
}

# One test point.
point() { ktap_check "$@"; }

# The test point "NAME": insmod rvt_loop with ARGS.
load_point() {
	local name=$1
	shift
	if load_err=$(insmod "$ko" "$@" 2>&1); then
		ktap_pass "$name"
	else
		printf '%s\n' "$load_err" | sed 's/^/# /'
		dmesg | tail -20 | sed 's/^/# /'
		ktap_fail "$name"
	fi
}

ktap_header
ktap_plan 13
unload

load_point "rvt_loop loads"
point "ibv_devices lists rvt_loop0" listed rvt_loop0
point "libhfi1verbs opens rvt_loop0" hfi1_provider_opens rvt_loop0
point "rvt_loop0 port 1 is PORT_ACTIVE" expect_port_attr rvt_loop0 state: PORT_ACTIVE
point "rvt_loop0 port 1 has LID 1" expect_port_attr rvt_loop0 port_lid: 1
point "rvt_loop0 port 1 has active_mtu 4096" expect_port_attr rvt_loop0 active_mtu: 4096
point "rdma link: rvt_loop0/1 ACTIVE, LINK_UP; no other device" devices_up rvt_loop0
point "rmmod rdmavt is refused while rvt_loop is loaded" rdmavt_pinned
point "rvt_loop unloads and its device goes" unloads_cleanly

load_point "rvt_loop loads with num_devs=2" num_devs=2
point "num_devs=2: rvt_loop0 and rvt_loop1 up, rvt_loop1 with LID 2" two_devices_up
point "rvt_loop unloads and both devices go" unloads_cleanly
without_pci_point

unload || ktap_msg "could not unload rvt_loop"
restore_rdmavt || ktap_msg "could not reload the $RDMAVT_RS_RDMAVT rdmavt"
ktap_finish
