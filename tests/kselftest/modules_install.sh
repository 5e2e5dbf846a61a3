#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only
#
# `make modules_install` puts rdmavt-rs where the guest's modprobe looks, so that modprobe (for
# rdmavt itself and for hfi1, which depends on it) picks ours over the in-tree C rdmavt; `make
# modules_uninstall` brings the C rdmavt back. Runs on both rdmavt variants.
#
# The guest's /lib/modules/$(uname -r) is a link to the cached test kernel's modules dir on the
# host (<build>/.virtme_mods/lib/modules/0.0.0), which the guest sees read-only over 9p and
# which every other VM run uses too. The test mounts a tmpfs-backed overlay over that dir first,
# inside the guest only: the install and both depmod runs write into the overlay, and nothing
# on the host changes. Leaves the system as it found it: the overlay gone, the variant's
# rdmavt loaded, rvt_loop unloaded.
#
# Then `modprobe hfi1` must load hfi1 on the installed rdmavt-rs (with no Omni-Path card it
# only registers its PCI driver; its 7.3 trace-event WARN is forgiven by tests/splat-known).
set -u
. "$(dirname "$0")/../lib/ktap.sh"
. "$(dirname "$0")/../lib/rdmavt.sh"

kver=$(uname -r)
moddir=/lib/modules/$kver
real=$(readlink -f "$moddir")
scratch=$(mktemp -d)
ours_desc="(Rust)"

loaded() { [ -d "/sys/module/$1" ]; }
unload() { ! loaded "$1" || rmmod "$1"; }

# An overlay over the modules dir, mounted on the real path so that its relative links to
# the build's modules keep resolving.
overlay_modules_dir() {
	mount -t tmpfs rdmavt-rs-modules "$scratch" || return 1
	mkdir "$scratch/upper" "$scratch/work"
	mount -t overlay rdmavt-rs-modules \
		-o "lowerdir=$real,upperdir=$scratch/upper,workdir=$scratch/work" "$real"
}

cleanup() {
	unload rvt_loop
	unload hfi1
	unload rdmavt
	# Lazily: systemd-udevd keeps the modules.*.bin indexes it read while loading modules
	# mapped until it next checks them, so the overlay is still busy for a while.
	! mountpoint -q "$real" || umount -l "$real"
	! mountpoint -q "$scratch" || umount -l "$scratch"
	rmdir "$scratch"
	load_run_rdmavt
}

# The default target of the Makefile: the cached test kernel, whose modules dir is this one.
install() {
	make -s -C "$RDMAVT_RS_REPO" modules_install || return 1
	local m
	for m in rdmavt rvt_loop; do
		[ -f "$real/updates/$m.ko" ] || { echo "no $real/updates/$m.ko"; return 1; }
	done
	# The test-only module (tests/kverbs/) is built beside them but never installed.
	[ ! -e "$real/updates/rvt_loop_kverbs.ko" ] || { echo "rvt_loop_kverbs.ko installed"; return 1; }
}

uninstall() {
	make -s -C "$RDMAVT_RS_REPO" modules_uninstall || return 1
	[ ! -e "$real/updates" ] || { ls -l "$real/updates"; return 1; }
}

# What modinfo finds for rdmavt by name, through modules.dep, is rdmavt-rs.
modinfo_is_ours() {
	local path desc
	path=$(modinfo -n rdmavt) || return 1
	desc=$(modinfo -F description rdmavt)
	echo "rdmavt: $path: $desc"
	[ "$path" = "$moddir/updates/rdmavt.ko" ] && [[ $desc == *"$ours_desc"* ]] &&
		[ -z "$(modinfo -F intree rdmavt)" ]
}

modinfo_is_in_tree() {
	local path desc
	path=$(modinfo -n rdmavt) || return 1
	desc=$(modinfo -F description rdmavt)
	echo "rdmavt: $path: $desc"
	[ "$path" = "$moddir/kernel/drivers/infiniband/sw/rdmavt/rdmavt.ko" ] &&
		[[ $desc != *"$ours_desc"* ]] && [ "$(modinfo -F intree rdmavt)" = Y ] || return 1
	# rvt_loop has no in-tree counterpart: after the uninstall it is gone.
	! modinfo -n rvt_loop 2>/dev/null
}

# modprobe resolves hfi1's dependency on rdmavt to ours (without loading anything).
hfi1_depends_on_ours() {
	local deps
	deps=$(modprobe --show-depends hfi1) || return 1
	echo "$deps"
	grep -qx "insmod $moddir/updates/rdmavt.ko *" <<<"$deps"
}

# Only an out-of-tree module taints the kernel with O: the loaded rdmavt is ours exactly
# when /sys/module/rdmavt/taint says so.
loaded_rdmavt_is_ours() { grep -q O /sys/module/rdmavt/taint; }

modprobe_loads_ours() {
	unload rdmavt || return 1
	modprobe rdmavt || return 1
	loaded_rdmavt_is_ours || { echo "taint: $(cat /sys/module/rdmavt/taint)"; return 1; }
	modprobe rvt_loop || return 1
	loaded rvt_loop || { echo "modprobe rvt_loop left no module"; return 1; }
	modprobe -r rvt_loop rdmavt
}

modprobe_loads_in_tree() {
	unload rdmavt || return 1
	modprobe rdmavt || return 1
	! loaded_rdmavt_is_ours || { echo "taint: $(cat /sys/module/rdmavt/taint)"; return 1; }
	modprobe -r rdmavt
}

# driver_loads_on_ours DRIVER: modprobe loads the driver (hfi1, ib_qib) on rdmavt-rs.
driver_loads_on_ours() {
	unload rdmavt || return 1
	modprobe "$1" || return 1
	loaded_rdmavt_is_ours || { echo "taint: $(cat /sys/module/rdmavt/taint)"; return 1; }
	modprobe -r "$1" rdmavt
}

ktap_header
ktap_plan 9
trap cleanup EXIT
if ! out=$(overlay_modules_dir 2>&1); then
	printf '%s\n' "$out" | sed 's/^/# /'
	ktap_msg "cannot overlay $real: not installing into the shared modules dir"
	exit 1
fi
ktap_check "make modules_install installs rdmavt and rvt_loop into $moddir/updates" install
ktap_check "modinfo rdmavt shows rdmavt-rs" modinfo_is_ours
ktap_check "modprobe resolves hfi1's rdmavt to rdmavt-rs" hfi1_depends_on_ours
ktap_check "modprobe rdmavt and rvt_loop load rdmavt-rs" modprobe_loads_ours
ktap_check "modprobe hfi1 loads hfi1 on rdmavt-rs" driver_loads_on_ours hfi1
# qib was removed from the kernel in 6.17: on the 6.12 line only.
if modinfo -n ib_qib >/dev/null 2>&1; then
	ktap_check "modprobe ib_qib loads qib on rdmavt-rs" driver_loads_on_ours ib_qib
else
	ktap_skip "modprobe ib_qib loads qib on rdmavt-rs" "qib was removed from the kernel in 6.17"
fi
ktap_check "make modules_uninstall removes them" uninstall
ktap_check "modinfo rdmavt shows the in-tree rdmavt again" modinfo_is_in_tree
ktap_check "modprobe rdmavt loads the in-tree rdmavt again" modprobe_loads_in_tree
ktap_finish
