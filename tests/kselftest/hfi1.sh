#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only
#
# hfi1 on this rdmavt: every rvt_* symbol hfi1.ko imports is exported by our build (one point
# each, read from the symbol tables: the same files on both rdmavt variants, so only the
# rdmavt-rs run checks them), then the kernel build's own hfi1.ko is loaded with
# insmod on the rdmavt this VM runs (i2c-algo-bit first, its other dependency): it must load
# with no unknown symbol, hold rdmavt, and unload. With no Omni-Path card hfi1 only registers
# its PCI driver; what this proves is the link-level ABI: every import resolved against us.
#
# hfi1 on 7.3 WARNs at load about double dereferences in its own trace events, on either
# rdmavt: tests/splat-known forgives exactly that report.
set -u
. "$(dirname "$0")/../lib/ktap.sh"

hfi1=$(modinfo -n hfi1 2>/dev/null) || hfi1=
ktap_header
if [ -z "$hfi1" ] || [ ! -f "$hfi1" ]; then
	ktap_plan 1
	ktap_fail "hfi1.ko is in this kernel build"
	ktap_finish
	exit
fi

# What hfi1 takes from rdmavt: its undefined rvt_* symbols and ib_rvt_state_ops. Neither
# hfi1.ko nor the Module.symvers of our build depends on the rdmavt loaded: the C run would
# repeat the rdmavt-rs run's points with the same input, so it leaves them out.
imports= checks=0
if [ "$RDMAVT_RS_RDMAVT" = rs ]; then
	imports=$(llvm-nm-19 -u "$hfi1" | awk '{ print $2 }' | grep -E '^(rvt_|ib_rvt_)' | sort -u)
	checks=$(wc -w <<<"$imports")
	[ "$checks" != 0 ] || checks=1
fi
# What we export, from the Module.symvers of our build.
exports=$(awk '{ print $2 }' "$RDMAVT_RS_REPO/Module.symvers" | sort -u)

ktap_plan $((checks + 4))
[ "$checks" = 0 ] || [ -n "$imports" ] || ktap_fail "llvm-nm-19 -u finds hfi1's rvt_ imports"
for sym in $imports; do
	ktap_check "hfi1 import $sym is exported by rdmavt-rs" grep -qx "$sym" <<<"$exports"
done

modprobe i2c-algo-bit
mark="rdmavt-rs hfi1 test: insmod"
echo "$mark" >/dev/kmsg
if err=$(insmod "$hfi1" 2>&1); then
	ktap_pass "insmod hfi1.ko on the $RDMAVT_RS_RDMAVT rdmavt"
else
	ktap_fail "insmod hfi1.ko on the $RDMAVT_RS_RDMAVT rdmavt: $err"
fi
unknown=$(dmesg | sed -n "/$mark/,\$p" | grep -E 'Unknown symbol|disagrees about version')
if [ -z "$unknown" ]; then
	ktap_pass "no unknown symbol reported for hfi1"
else
	ktap_msg "$unknown"
	ktap_fail "no unknown symbol reported for hfi1"
fi
ktap_check "hfi1 holds rdmavt" test -e /sys/module/rdmavt/holders/hfi1
if [ -d /sys/module/hfi1 ] && err=$(rmmod hfi1 2>&1); then
	ktap_pass "rmmod hfi1"
else
	ktap_fail "rmmod hfi1: ${err:-not loaded}"
fi
ktap_finish
