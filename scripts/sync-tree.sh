#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only
#
# Makes DIR a copy of the checkout's sources, to build the modules for a second kernel line in
# (make KERNEL=6.12): kbuild writes its objects beside the sources, so two kernels cannot share
# one tree. rsync keeps modification times, so kbuild rebuilds only what changed; files gone
# from the checkout go from the copy, the copy's build output stays. The test programs are
# the checkout's (they do not depend on the kernel).
#
#   scripts/sync-tree.sh DIR
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
repo=$(cd "$here/.." && pwd)
dir=${1:?usage: sync-tree.sh DIR}

mkdir -p "$dir"
# The sources git knows of, tracked or new (not ignored): copied, and kept as the copy's list.
git -C "$repo" ls-files --cached --others --exclude-standard | sort >"$dir/.sources.new"
rsync -a --files-from="$dir/.sources.new" "$repo/" "$dir/"
# Sources deleted from the checkout since the last sync: a stale .rs or .c would still be
# compiled.
if [ -f "$dir/.sources" ]; then
	comm -23 "$dir/.sources" "$dir/.sources.new" | while IFS= read -r f; do
		rm -f "$dir/$f"
	done
fi
mv "$dir/.sources.new" "$dir/.sources"
ln -sfn "$repo/.test-bin" "$dir/.test-bin"
# The mark of a copy: built in place (Makefile, lib.sh's module_tree).
touch "$dir/.build-tree"
