#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only
#
# DKMS's build command (dkms.conf): builds rdmavt.ko and rvt_loop.ko in the current directory
# against one installed kernel, with the toolchain that kernel was built with.
#
#   scripts/dkms-make.sh KERNEL_BUILD_DIR [clean] [CC=... LD=...]
#
# A Rust module only builds with the exact rustc of its kernel (the kernel crate's metadata is
# rustc-version specific) and, for the bindings, its clang. The kernel's .config records both;
# this script finds the matching tools, or says which one is missing, instead of letting the
# build fail later with a crate-metadata error. Overrides: RUSTC, BINDGEN, LLVM (as for make).
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
repo=$(cd "$here/.." && pwd)
user_bindgen=${BINDGEN:-}
. "$here/lib.sh"

kdir=${1:-}
shift || true
target=modules
for arg in "$@"; do
	case "$arg" in
	clean) target=clean ;;
	# DKMS appends CC=clang LD=ld.lld for a clang-built kernel. LLVM= below picks the
	# kernel's own clang and lld (clang-19 where plain clang may be missing or another
	# version), so these are left out.
	CC=* | LD=*) ;;
	*) die "unknown argument $arg" ;;
	esac
done
[ -f "$kdir/.config" ] || die "usage: dkms-make.sh KERNEL_BUILD_DIR [clean] ($kdir has no .config)"

config() { sed -n "s/^$1=//p" "$kdir/.config" | sed 's/^"\(.*\)"$/\1/'; }

[ "$(config CONFIG_RUST)" = y ] || die "$kdir: the kernel has no CONFIG_RUST"
[ "$(config CONFIG_CC_IS_CLANG)" = y ] ||
	die "$kdir: the kernel was not built with clang (LLVM=1); Rust modules need that"

# The clang of the kernel: clang-<major> when it is installed, else a plain clang of that
# major version.
clang_major=$(( $(config CONFIG_CLANG_VERSION) / 10000 ))
if [ -z "${LLVM:-}" ]; then
	if command -v "clang-$clang_major" >/dev/null; then
		LLVM=-$clang_major
	elif clang --version 2>/dev/null | grep -q "clang version $clang_major\."; then
		LLVM=1
	else
		die "the kernel was built with clang $clang_major, which is not installed"
	fi
fi
libclang=/usr/lib/llvm-$clang_major/lib

# The rustc of the kernel, exactly: the first of $RUSTC, Debian's rustc, rustc in PATH.
want_rustc=$(config CONFIG_RUSTC_VERSION_TEXT)
rustc=
for r in ${RUSTC:-} "$RUSTC_DEBIAN" rustc; do
	if [ "$("$r" --version 2>/dev/null)" = "$want_rustc" ]; then
		rustc=$(command -v "$r")
		break
	fi
done
[ -n "$rustc" ] || die "the kernel was built with '$want_rustc'; no such rustc found (set RUSTC)"

# bindgen makes our bindings; another version than the kernel's may lay out some types
# differently (the layout check at load time would refuse the module), so it is a warning.
bindgen=${user_bindgen:-$(command -v bindgen || echo "$BINDGEN")}
[ -x "$bindgen" ] || die "no bindgen found (set BINDGEN)"
want_bindgen=$(config CONFIG_BINDGEN_VERSION_TEXT)
[ "$("$bindgen" --version)" = "$want_bindgen" ] ||
	log "warning: $("$bindgen" --version), the kernel used $want_bindgen"

make -C "$kdir" M="$repo" LLVM="$LLVM" RUSTC="$rustc" BINDGEN="$bindgen" \
	LIBCLANG_PATH="$libclang" "$target"
