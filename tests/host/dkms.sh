#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only
#
# DKMS as a user's machine runs it (dkms.conf, scripts/dkms-make.sh), against the cached test
# kernel of one kernel line (KERNEL=7.3, the default, or 6.12): `dkms add` of this tree's
# tracked files, `dkms build` for that kernel (dkms-make.sh must find its rustc and clang),
# `dkms install` and `dkms remove`. Everything goes to private DKMS, source and install trees
# in a temporary directory (dkms's --dkmstree, --sourcetree, --installtree), so the host's
# /usr/src, /var/lib/dkms and /lib/modules are never touched. Also: dkms-make.sh refuses, with
# its reason, a kernel that cannot take a Rust module.
set -u
here=$(cd "$(dirname "$0")" && pwd)
repo=$(cd "$here/../.." && pwd)
. "$here/../lib/ktap.sh"
. "$repo/scripts/lib.sh"

line=$KERNEL_LINE
kdir=$(readlink -f "$KERNEL_CURRENT")
pkg=rdmavt-rs
version=$(sed -n 's/^PACKAGE_VERSION="\(.*\)"/\1/p' "$repo/dkms.conf")
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

command -v dkms >/dev/null || ktap_bail "dkms ($line): dkms is not installed (make setup)"
[ -f "$kdir/.config" ] || ktap_bail "dkms ($line): no test kernel built in $KERNEL_CURRENT"
release=$(cat "$kdir/include/config/kernel.release")
ktap_header
ktap_plan 6

mkdir -p "$tmp/dkms" "$tmp/src/$pkg-$version" "$tmp/install/$release"
git -C "$repo" ls-files -z | (cd "$repo" && tar --null -T - -cf -) |
	tar -xf - -C "$tmp/src/$pkg-$version"
dkms_() {
	dkms --dkmstree "$tmp/dkms" --sourcetree "$tmp/src" --installtree "$tmp/install" "$@" \
		-m "$pkg" -v "$version"
}
for_kernel=(-k "$release" --kernelsourcedir "$kdir")
built=$tmp/dkms/$pkg/$version/$release/$(uname -m)/module
installed=$tmp/install/$release/updates/dkms

ktap_check "dkms ($line): add" dkms_ add

# Built with the kernel's own toolchain, each module carries the kernel's vermagic (the in-tree
# C rdmavt's).
same_vermagic() {
	local want got m
	want=$(modinfo -F vermagic "$kdir/drivers/infiniband/sw/rdmavt/rdmavt.ko") || return 1
	for m in rdmavt rvt_loop; do
		got=$(modinfo -F vermagic "$built/$m.ko") || return 1
		[ "$got" = "$want" ] || { echo "$m.ko: vermagic '$got', the kernel's '$want'"; return 1; }
	done
}
build_for_kernel() {
	dkms_ build "${for_kernel[@]}" || { cat "$tmp/dkms/$pkg/$version/build/make.log"; return 1; }
	same_vermagic
}
ktap_check "dkms ($line): build for $release: rdmavt.ko and rvt_loop.ko with the kernel's vermagic" \
	build_for_kernel

installed_in_updates() {
	dkms_ install "${for_kernel[@]}" --no-depmod || return 1
	[ -f "$installed/rdmavt.ko" ] && [ -f "$installed/rvt_loop.ko" ] &&
		dkms_ status | grep -q "$release.*: installed"
}
ktap_check "dkms ($line): install into updates/dkms, status installed" installed_in_updates

removed() {
	dkms_ remove --all --no-depmod || return 1
	[ ! -e "$installed/rdmavt.ko" ] && [ ! -e "$installed/rvt_loop.ko" ] &&
		[ -z "$(dkms_ status)" ]
}
ktap_check "dkms ($line): remove: the modules and the DKMS entry are gone" removed

# A kernel DKMS would still try (dkms.conf's BUILD_EXCLUSIVE_CONFIG aside): dkms-make.sh says
# why it cannot build, before any compiler runs.
refuses() {
	local want=$1 out
	shift
	mkdir -p "$tmp/kernel"
	printf '%s\n' "$@" >"$tmp/kernel/.config"
	if out=$(bash "$repo/scripts/dkms-make.sh" "$tmp/kernel" 2>&1); then
		echo "dkms-make.sh built for a kernel with: $*"
		return 1
	fi
	grep -q "$want" <<<"$out" || { echo "$out"; return 1; }
}
ktap_check "dkms-make.sh: refuses a kernel without CONFIG_RUST" \
	refuses "no CONFIG_RUST" CONFIG_CC_IS_CLANG=y
ktap_check "dkms-make.sh: refuses a kernel built with gcc" \
	refuses "not built with clang" CONFIG_RUST=y CONFIG_CC_IS_GCC=y
ktap_finish
