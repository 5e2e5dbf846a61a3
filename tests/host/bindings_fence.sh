#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only
#
# The bindings fence (scripts/bindings_fence.sh over bindings/fence): the tree keeps it, and
# the check catches each way of breaking it, on a small tree of its own: a module outside
# the list that names `bindings::`, a listed module with more uses than the list says, one
# with fewer, and one with none (the list must stay the exact statement).
set -u
here=$(cd "$(dirname "$0")" && pwd)
repo=$(cd "$here/../.." && pwd)
. "$here/../lib/ktap.sh"
fence=$repo/scripts/bindings_fence.sh
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

# A tree whose fence lists one wrapper, a/mod.rs, with two uses; b/logic.rs uses none.
mkdir -p "$tmp/bindings" "$tmp/a" "$tmp/b"
printf '# the fence\na/mod.rs 2 struct x: X\n' >"$tmp/bindings/fence"
printf 'use crate::bindings;\nfn f(x: *mut bindings::x) -> bindings::y { todo!() }\n' >"$tmp/a/mod.rs"
printf 'fn g() {}\n' >"$tmp/b/logic.rs"
# Out of the fence's scope: a KUnit suite and the bindings themselves.
printf 'fn t() { bindings::z(); }\n' >"$tmp/b/tests.rs"
printf 'pub fn z() { bindings::z() }\n' >"$tmp/bindings/mod.rs"

# fails WHAT PATTERN: the check fails on the small tree, naming PATTERN.
fails() {
	local out
	if out=$(bash "$fence" "$tmp" 2>/dev/null); then
		echo "the check passed: $1"
		return 1
	fi
	grep -q -- "$2" <<<"$out" || { echo "no line about $2 in: $out"; return 1; }
}

ktap_header
ktap_plan 6
ktap_check "the tree keeps its fence (bindings/fence)" bash "$fence" "$repo"
ktap_check "a tree that keeps its fence passes (tests and bindings/ out of scope)" \
	bash "$fence" "$tmp"
printf 'fn g(p: *mut bindings::x) {}\n' >"$tmp/b/logic.rs"
ktap_check "a module outside the fence that names bindings:: fails" \
	fails "b/logic.rs is outside" "b/logic.rs: 1 uses of bindings:: outside the fence"
printf 'fn g() {}\n' >"$tmp/b/logic.rs"
printf 'fn h() { bindings::q() }\n' >>"$tmp/a/mod.rs"
ktap_check "a wrapper with more uses than the list says fails" \
	fails "a/mod.rs has 3" "a/mod.rs: 3 uses of bindings::, bindings/fence says 2"
printf 'fn f(x: *mut bindings::x) {}\n' >"$tmp/a/mod.rs"
ktap_check "a wrapper with fewer uses than the list says fails" \
	fails "a/mod.rs has 1" "a/mod.rs: 1 uses of bindings::, bindings/fence says 2"
printf 'fn f() {}\n' >"$tmp/a/mod.rs"
ktap_check "a listed module that uses no bindings:: fails" \
	fails "a/mod.rs has none" "a/mod.rs: listed in bindings/fence, but uses no bindings::"
ktap_finish
