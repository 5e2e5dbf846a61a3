#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only
#
# `make modules_install` and `make modules_uninstall`: put rdmavt.ko and rvt_loop.ko into (or
# take them out of) <modules dir>/<kernelrelease>/updates/ and run depmod, so that
# `modprobe rdmavt` and the drivers that depend on it (hfi1, qib) get rdmavt-rs, and get the
# in-tree C rdmavt again after an uninstall.
#
#   scripts/modules.sh install|uninstall
#
# Environment, as the Makefile passes it on:
#   KDIR              the kernel build to install for; the modules dir is
#                     $INSTALL_MOD_PATH/lib/modules/<its kernelrelease>, as for any kbuild
#                     external module
#   INSTALL_MOD_PATH  prefix of the modules dir (default: none, i.e. /lib/modules)
# Without KDIR the target is the cached test kernel, and its modules dir is the one that
# virtme-ng shows the guest as /lib/modules/$(uname -r): <build>/.virtme_mods/lib/modules/0.0.0.
# So `make modules_install` followed by `scripts/vm.sh --rdmavt none -- modprobe hfi1` loads
# hfi1 on rdmavt-rs; `make modules_uninstall` is the way back.
#
# The modules must be built already: like kbuild's own modules_install, this only installs.
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
repo=$(cd "$here/.." && pwd)
. "$here/lib.sh"

repo=$(module_tree "$repo")
ours=(rdmavt rvt_loop)
# Built beside them for the tests (tests/kverbs/); kbuild installs every module of the build,
# so these are taken out again. Never on a user's machine.
test_only=(rvt_loop_kverbs)

action=${1:-}
case "$action" in install|uninstall) ;; *) die "usage: modules.sh install|uninstall" ;; esac

# The kernel build, the prefix and the release name that the modules dir is made of.
kdir=${KDIR:-}
mod_path=${INSTALL_MOD_PATH:-}
release=
if [ -z "$kdir" ]; then
	kdir=$(readlink -f "$KERNEL_CURRENT" 2>/dev/null || true)
	[ -f "$kdir/.rdmavt-rs-built" ] || die "no cached test kernel yet: run make first"
	if [ -z "$mod_path" ]; then
		# The guest's modules dir. virtme-ng fills it with links to the build's modules on
		# its first boot; an install must not create it half-way, or vng would take it as
		# complete and the in-tree modules would be missing.
		mod_path=$kdir/.virtme_mods
		release=0.0.0
		if [ ! -f "$mod_path/lib/modules/$release/modules.dep" ]; then
			log "preparing the test kernel's modules dir for virtme-ng"
			(cd "$kdir" && "$(dirname "$VNG")/virtme-prep-kdir-mods" >/dev/null)
		fi
	fi
fi
[ -f "$kdir/include/config/kernel.release" ] || die "$kdir is not a configured kernel build"
[ -n "$release" ] || release=$(cat "$kdir/include/config/kernel.release")
moddir=$mod_path/lib/modules/$release

# depmod as kbuild runs it (scripts/depmod.sh): against the build's System.map, into
# $mod_path when there is one.
run_depmod() {
	local args=(-ae -F "$kdir/System.map")
	[ -z "$mod_path" ] || args+=(-b "$mod_path")
	PATH=$PATH:/sbin:/usr/sbin depmod "${args[@]}" "$release"
}

install() {
	local m
	for m in "${ours[@]}"; do
		[ -f "$repo/$m.ko" ] || die "$m.ko is not built: run make first"
	done
	# kbuild's own modules_install for external modules: it installs into
	# $(MODLIB)/updates (INSTALL_MOD_DIR), strips, signs or compresses as the kernel's
	# config asks, and runs depmod.
	make -C "$kdir" M="$repo" LLVM="$LLVM_SUFFIX" RUSTC="$RUSTC_DEBIAN" \
		INSTALL_MOD_PATH="$mod_path" KERNELRELEASE="$release" modules_install
	if [ "$(remove_modules "${test_only[@]}")" != 0 ]; then
		run_depmod
	fi
	log "installed into $moddir/updates"
}

# remove_modules NAME...: deletes these modules from updates/; prints how many there were.
remove_modules() {
	local m f removed=0
	for m in "$@"; do
		# Whatever suffix the kernel's CONFIG_MODULE_COMPRESS gave it at install time.
		for f in "$moddir/updates/$m.ko" "$moddir/updates/$m".ko.{gz,xz,zst}; do
			[ -e "$f" ] || continue
			rm -f "$f"
			removed=$((removed + 1))
		done
	done
	echo "$removed"
}

uninstall() {
	local removed
	# The test modules too, in case an older install left them.
	removed=$(remove_modules "${ours[@]}" "${test_only[@]}")
	rmdir "$moddir/updates" 2>/dev/null || true
	[ -d "$moddir" ] || die "no modules dir $moddir"
	run_depmod
	log "removed $removed module(s) from $moddir/updates"
}

"$action"
