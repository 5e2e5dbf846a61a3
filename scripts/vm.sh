#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only
#
# Boots the cached test kernel in QEMU (TCG) with virtme-ng and runs one command inside.
#
#   scripts/vm.sh [--rdmavt rs|c|none] [--timeout SECONDS] [--out DIR] [--network MODE]
#                 [--console] [--plugin SPEC] [--append ARGS] -- CMD [ARGS...]
#
# The guest sees the host's root read-only over 9p, so the repository, rdma-core's tools,
# perftest and python3 are all there at their host paths. Before CMD runs, ib_core and
# ib_uverbs are loaded, then the chosen rdmavt: `rs` (default) is ours from this checkout, `c`
# the in-tree C module of the same kernel build, `none` neither. --out DIR is writable in the
# guest as $RDMAVT_RS_OUT. --network MODE gives the guest a NIC (vng's --network, without
# DHCP: the command configures it). --console shows the guest kernel's console on standard
# error, its warnings and worse (loglevel 5): a guest that panics leaves its last words there,
# where the kernel log that CMD would have saved is lost with it. --plugin SPEC loads a QEMU
# TCG plugin (QEMU's -plugin SPEC: the library's path, then its NAME=VALUE arguments), as
# `make profile` does to count instructions (scripts/bench/insn-count.c). --append ARGS adds
# to the guest kernel's command line (the benchmark's tsc=reliable). KDIR=DIR boots another kernel
# build, such as the benchmark kernel (scripts/kernel.sh --bench). The exit status is CMD's;
# 124 means the guest hung past the timeout, 255 that it ended without CMD's status (a panic).
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
repo=$(cd "$here/.." && pwd)
. "$here/lib.sh"
# The guest takes the modules, the tests and the scripts from the tree built for its kernel.
repo=$(module_tree "$repo")
[ -d "$repo" ] || die "nothing built for $KERNEL_LINE yet in $repo: make KERNEL=$KERNEL_LINE"

rdmavt=rs
timeout=600
out=
network=
console=
plugin=
append=
while [ $# -gt 0 ]; do
	case "$1" in
	--rdmavt) rdmavt=$2; shift 2 ;;
	--timeout) timeout=$2; shift 2 ;;
	--out) out=$2; shift 2 ;;
	--network) network=$2; shift 2 ;;
	--console) console=1; shift ;;
	--plugin) plugin=$2; shift 2 ;;
	--append) append=$2; shift 2 ;;
	--) shift; break ;;
	*) die "usage: vm.sh [--rdmavt rs|c|none] [--timeout S] [--out DIR] [--network M] [--console] [--plugin SPEC] [--append ARGS] -- CMD" ;;
	esac
done
[ $# -gt 0 ] || die "no command given"
# virtme-ng's --exec does not carry control characters: put multi-line commands in a script.
for arg in "$@"; do
	[[ $arg != *[[:cntrl:]]* ]] || die "arguments may not contain newlines or tabs; use a script"
done
case "$rdmavt" in rs|c|none) ;; *) die "--rdmavt takes rs, c or none" ;; esac

kdir=${KDIR:-$(bash "$here/kernel.sh")}
[ -f "$kdir/arch/x86/boot/bzImage" ] || die "no kernel image in $kdir"

# virtme-ng links the build's modules into .virtme_mods once; a set made before the build
# finished (or from an older one) lacks modules, so it is made again when out of date.
mods=$kdir/.virtme_mods/lib/modules/0.0.0/modules.dep
if [ -d "$kdir/.virtme_mods" ] && [ ! "$mods" -nt "$kdir/modules.order" ]; then
	rm -rf "$kdir/.virtme_mods"
fi

# The command line for the guest: a prologue that loads the modules, then the user's command
# with each argument quoted so that it survives the trip through vng's --exec.
guest_cmd="RDMAVT_RS_REPO=$(printf %q "$repo") RDMAVT_RS_RDMAVT=$rdmavt KERNEL=$KERNEL_LINE"
[ -n "$out" ] && guest_cmd+=" RDMAVT_RS_OUT=$(printf %q "$out")"
# The test runner's selections, when the caller made them (tests/check.sh, make stress).
for v in RDMAVT_RS_TESTS RDMAVT_RS_STRESS_DURATION RDMAVT_RS_FUZZ_SEEDS RDMAVT_RS_FUZZ_STEPS; do
	[ -z "${!v:-}" ] || guest_cmd+=" $v=$(printf %q "${!v}")"
done
guest_cmd+=" $(printf %q "$repo/scripts/guest-prologue.sh")"
for arg in "$@"; do
	guest_cmd+=" $(printf %q "$arg")"
done

# kasan_multi_shot: every KASAN report, not only the first (a boot-time one, forgiven by
# tests/splat-known, must not hide a later one). pty.legacy_count=0: the config's 256 legacy
# BSD pty pairs are 512 devices that udev's coldplug would otherwise work through at boot, and
# nothing here uses them. no5lvl: 4-level paging. With 5 levels (QEMU's TCG CPU has LA57),
# pgtable_l5_enabled() reads the boot CPU's feature bits, which identify_boot_cpu() clears and
# fills again with interrupts on: an interrupt in that window sees a 4-level address space
# under a 5-level kernel (KASAN's "wild-memory-access" in handle_edge_irq, tests/splat-known).
vng_args=(--run "$kdir" --disable-kvm --disable-microvm --cpus 2 --memory 3G
	--append="kmemleak=on kasan_multi_shot printk.devkmsg=on pty.legacy_count=0 no5lvl"
	--qemu-opts="-device pci-testdev${plugin:+ -plugin $plugin}")
[ -n "$out" ] && { mkdir -p "$out"; vng_args+=(--rwdir "$out"); }
[ -n "$append" ] && vng_args+=(--append="$append")
[ -n "$network" ] && vng_args+=(--network "$network" --no-dhcp)
# vng's --verbose routes the console to standard error at loglevel 7; the later loglevel wins.
[ -n "$console" ] && vng_args+=(--verbose --append="loglevel=5")

set +e
PATH=$(dirname "$VNG"):$PATH timeout --kill-after=15 "$timeout" "$VNG" "${vng_args[@]}" --exec "$guest_cmd" </dev/null
rc=$?
set -e
[ "$rc" = 124 ] && log "the guest did not finish within ${timeout}s"
exit "$rc"
