#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only
#
# The tree's habits, checked by make check: every Rust file formatted as the kernel formats its
# own (`make rustfmtcheck`), and the build clean under clippy with the kernel's lints (`make
# clippy`). Clippy rebuilds everything, so it runs in a copy of the tree: the modules the VM
# tests load are never the clippy build's.
set -u
here=$(cd "$(dirname "$0")" && pwd)
repo=$(cd "$here/../.." && pwd)
. "$here/../lib/ktap.sh"

copy=$repo/.test-results/clippy-tree
rm -rf "$copy"
mkdir -p "$copy"
trap 'rm -rf "$copy"' EXIT

ktap_header
ktap_plan 2
ktap_check "make rustfmtcheck: every Rust file is formatted" make -s -C "$repo" rustfmtcheck
(cd "$repo" && git ls-files -z --cached --others --exclude-standard |
	grep -zv '^\.test-results/' | tar --null -T - -cf - 2>/dev/null) | tar -xf - -C "$copy"
ktap_check "make clippy: no warning in our code" make -s -C "$copy" clippy
ktap_finish
