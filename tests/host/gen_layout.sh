#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only
#
# scripts/gen_layout.py on a small header: both tables list the same entries in the same order,
# anonymous unions are flattened with one offset term per level, bindgen's padding is left out,
# and a struct missing from the bindings stops the build.
set -u
here=$(cd "$(dirname "$0")" && pwd)
. "$here/../lib/ktap.sh"
gen=$here/../../scripts/gen_layout.py
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

python3 "$gen" "$here/gen_layout/sample_bindings.rs" "$tmp/l.rs" "$tmp/l.h" \
	"$here/gen_layout/sample.h" >"$tmp/err" 2>&1
gen_rc=$?

labels_rs() { grep -o 'c"[^"]*"' "$tmp/l.rs" | cut -d'"' -f2; }
labels_h() { grep -o '{ "[^"]*"' "$tmp/l.h" | cut -d'"' -f2; }

ktap_header
ktap_plan 7
ktap_check "generator succeeds" test "$gen_rc" = 0
ktap_check "Rust and C list the same entries in the same order" \
	diff <(labels_rs) <(labels_h)
ktap_check "entries: sizes, alignments, flattened members" diff <(labels_rs) - <<'LIST'
outer.(size)
outer.(align)
outer.a
outer.b
outer.c
outer.named
outer.tail
inner.(size)
inner.(align)
inner.x
keyword.(size)
keyword.(align)
keyword.priv
LIST
ktap_check "an anonymous member's Rust offset sums both levels" grep -qF \
	'offset_of!(bindings::outer, __bindgen_anon_1) + ::core::mem::offset_of!(bindings::outer__bindgen_ty_1, b)' \
	"$tmp/l.rs"
ktap_check "C names the anonymous member directly" grep -qF 'offsetof(struct outer, b)' "$tmp/l.h"
ktap_check "a member named like a Rust keyword keeps its C name" \
	grep -qF 'offsetof(struct keyword, priv)' "$tmp/l.h"
echo 'struct missing { int y; };' >"$tmp/extra.h"
ktap_check "a struct the bindings lack fails the generator" \
	bash -c "! python3 '$gen' '$here/gen_layout/sample_bindings.rs' '$tmp/x.rs' '$tmp/x.h' \
		'$here/gen_layout/sample.h' '$tmp/extra.h' 2>/dev/null"
ktap_finish
