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

KERNEL_PKG=linux-source-7.3
KERNEL_VERSION=7.3.4

# Debian's toolchain for the kernel: rustc-web (1.96) with its matching source, clang-19.
RUSTC_DEBIAN=/usr/bin/rustc
LLVM_SUFFIX=-19

log() { printf '[rdmavt-rs] %s\n' "$*" >&2; }
die() { log "error: $*"; exit 1; }
