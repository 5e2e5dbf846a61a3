# SPDX-License-Identifier: GPL-2.0-only
#
# Shared settings for the scripts: where the toolchain, the kernel cache and the tools live.
# Sourced, never run.

# Everything built or installed outside the repository lives under one cache root so that a
# fresh clone reuses it (CI clones into a new folder each run). It must be visible in the
# test VM at the same path: virtme-ng mounts a tmpfs over /var/cache there, not over $HOME.
CACHE_ROOT=${RDMAVT_RS_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/rdmavt-rs}
TOOLS_DIR=$CACHE_ROOT/tools

BINDGEN_VERSION=0.73.0
BINDGEN=$TOOLS_DIR/bin/bindgen
VNG_VERSION=1.42
VNG=$TOOLS_DIR/venv/bin/vng

# The kernel line the scripts build and test for, from the KERNEL variable (`make run
# KERNEL=6.12`): 7.3, the default, or 6.12, the LTS line that enterprise distributions carry
# and the last with qib. Each has its own source package, suite and cache directories.
KERNEL_LINE=${KERNEL:-7.3}
case "$KERNEL_LINE" in
7.3)
	KERNEL_PKG=linux-source-7.3
	KERNEL_VERSION=7.3.4
	KERNEL_DEB_VERSION=7.3.4-1~bpo13+1
	KERNEL_SUITE=trixie-backports
	KERNEL_MIRROR_PATH=debian
	KERNEL_DEB_SHA256=703e369ddd4cce971452f5a593ee55df3a5c10c83caf0fa0df039633ed181ee3 ;;
6.12)
	KERNEL_PKG=linux-source-6.12
	KERNEL_VERSION=6.12.118
	KERNEL_DEB_VERSION=6.12.118-1~deb12u1
	KERNEL_SUITE=bookworm-security
	KERNEL_MIRROR_PATH=debian-security
	KERNEL_DEB_SHA256=896aff3b39299fa0dd36fef4f5db56ab189182e39abbbb1227dafdc7fcfe3fc3 ;;
*)
	printf '[rdmavt-rs] error: KERNEL=%s: the kernel lines are 7.3 and 6.12\n' "$KERNEL_LINE" >&2
	exit 1 ;;
esac
# The cached test kernel of this line: `current` for 7.3 (the name every tool used before there
# were two lines), `current-6.12` for 6.12.
KERNEL_CURRENT=$CACHE_ROOT/kernel/current
[ "$KERNEL_LINE" = 7.3 ] || KERNEL_CURRENT=$KERNEL_CURRENT-$KERNEL_LINE

# module_tree REPO: where the modules for this kernel line are built, and where a VM of that
# line runs its tests from: the checkout for 7.3, its copy .build/6.12/ for 6.12 (Makefile).
module_tree() {
	if [ "$KERNEL_LINE" = 7.3 ] || [ -f "$1/.build-tree" ]; then
		echo "$1"
	else
		echo "$1/.build/$KERNEL_LINE"
	fi
}

# Debian's toolchain for the kernel: rustc-web (1.96) with its matching source, clang-19.
RUSTC_DEBIAN=/usr/bin/rustc
LLVM_SUFFIX=-19

log() { printf '[rdmavt-rs] %s\n' "$*" >&2; }
die() { log "error: $*"; exit 1; }
