#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only
#
# The layout check must catch a struct that Rust sees differently from C. A copy of the built
# tree gets one mutation in its generated bindings: eight bytes of bindgen padding before
# rvt_sge.length (bindgen 0.73 really did mistype such padding once; see Kbuild). Nothing else
# changes: the Rust code still compiles, and the C side still sees the header. Rebuilt, that
# rdmavt.ko must refuse to load in the test VM, naming the fields whose offsets moved.
# Takes a rebuild and a VM boot, about two minutes; the VM bound is generous because a guest
# on loaded cores can wait minutes for udev to settle before anything of ours runs.
set -u
here=$(cd "$(dirname "$0")" && pwd)
repo=$(cd "$here/../.." && pwd)
. "$here/../lib/ktap.sh"

# Under the repository, which the guest sees (it does not see the host's /tmp).
work=$repo/.test-results/layout-mutant
rm -rf "$work"
mkdir -p "$work"
trap 'rm -rf "$work"' EXIT

ktap_header
ktap_plan 4
# The built tree as it is, so that only what the mutation touches is rebuilt.
tar -C "$repo" --exclude=./.git --exclude=./.test-results -cf - . | tar -C "$work" -xf -
gen=$work/bindings/bindings_generated.rs
python3 - "$gen" <<'PY'
import re, sys
path = sys.argv[1]
text = open(path).read()
new, n = re.subn(r"(pub struct rvt_sge \{\n(?:    .*\n)*?)(    pub length: )",
                 r"\1    pub __bindgen_padding_99: [u8; 8usize],\n\2", text, count=1)
if n != 1:
    sys.exit("rvt_sge.length not found in the bindings")
open(path, "w").write(new)
PY
ktap_check "the mutation applies to rvt_sge in the bindings" test $? = 0
ktap_check "the mutant tree builds" make -s -C "$work" modules

out=$work/vm
mkdir -p "$out"
cat >"$work/guest.sh" <<'GUEST'
#!/bin/bash
insmod "$1" >"$RDMAVT_RS_OUT/insmod" 2>&1
echo $? >"$RDMAVT_RS_OUT/rc"
dmesg >"$RDMAVT_RS_OUT/dmesg"
GUEST
bash "$repo/scripts/vm.sh" --rdmavt none --timeout 600 --out "$out" -- \
	bash "$work/guest.sh" "$work/rdmavt.ko" >"$work/console" 2>&1
ktap_check "the mutant rdmavt.ko refuses to load" bash -c "[ -s '$out/rc' ] && [ \"\$(cat '$out/rc')\" != 0 ]"
ktap_check "its log names the moved field" \
	grep -E 'layout: rvt_sge\.length: Rust [0-9]+ C [0-9]+' "$out/dmesg"
ktap_finish
