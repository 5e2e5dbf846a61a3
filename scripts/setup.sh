#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only
#
# Installs everything rdmavt-rs needs to build and test, idempotently: Debian packages, a
# pinned bindgen-cli from crates.io and virtme-ng in a project-local venv. Quiet when all of it
# is already there; safe to run again at any time.
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
. "$here/lib.sh"

debs=(rustc-web rust-web-src rust-web-clippy rustfmt-web clang-19 lld-19 llvm-19 libclang-19-dev bc flex bison libelf-dev
      libssl-dev cpio qemu-system-x86 busybox-static ibverbs-utils ibverbs-providers rdma-core
      perftest python3-pyverbs iproute2 python3-venv xz-utils kmod pahole rsync libibverbs-dev gcc
      python3-matplotlib dkms)
# The benchmark kernel with inlined Rust helpers (make bench BENCH_HELPERS=inline) needs a clang
# of rustc-web's LLVM major version, 22: bookworm-security carries it. Only then: it is large.
[ "${BENCH_HELPERS:-}" != inline ] || debs+=(clang-22 lld-22 llvm-22 libclang-22-dev)

missing_debs() {
	local p
	for p in "${debs[@]}"; do
		dpkg-query -W -f='${Status}\n' "$p" 2>/dev/null | grep -q '^install ok installed' ||
			echo "$p"
	done
}

install_debs() {
	local need
	need=$(missing_debs)
	[ -z "$need" ] && return 0
	log "installing Debian packages:" $need
	local sudo=
	[ "$(id -u)" = 0 ] || sudo=sudo
	$sudo apt-get update -q >/dev/null
	# shellcheck disable=SC2086
	DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -q --no-install-recommends $need >/dev/null
}

install_bindgen() {
	if [ -x "$BINDGEN" ] && "$BINDGEN" --version 2>/dev/null | grep -q " $BINDGEN_VERSION\$"; then
		return 0
	fi
	log "installing bindgen-cli $BINDGEN_VERSION from crates.io"
	# bindgen finds libclang through LIBCLANG_PATH at run time; build it with the host cargo.
	cargo install --locked --quiet --root "$TOOLS_DIR" --version "$BINDGEN_VERSION" bindgen-cli
}

install_vng() {
	if [ -x "$VNG" ] && "$VNG" --version 2>/dev/null | grep -q "$VNG_VERSION"; then
		return 0
	fi
	log "installing virtme-ng $VNG_VERSION into $TOOLS_DIR/venv"
	/usr/bin/python3 -m venv "$TOOLS_DIR/venv"
	"$TOOLS_DIR/venv/bin/pip" install -q "virtme-ng==$VNG_VERSION"
}

mkdir -p "$TOOLS_DIR"
install_debs
install_bindgen
install_vng
