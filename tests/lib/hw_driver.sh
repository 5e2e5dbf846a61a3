# SPDX-License-Identifier: GPL-2.0-only
#
# A hardware driver built on rdmavt (hfi1, qib) loads on the rdmavt this VM runs: every rvt_*
# symbol the driver imports is exported by our build (one point each, read from the symbol
# tables: the same files on both rdmavt variants, so only the rdmavt-rs run checks them), then
# the kernel build's own DRIVER.ko is loaded with insmod, after its other dependencies: it must
# load with no unknown symbol, hold rdmavt, and unload. With no card the driver only registers
# its PCI driver; what this proves is the link-level ABI: every import resolved against us.
# Sourced by tests/kselftest/hfi1.sh and qib.sh, after tests/lib/ktap.sh.

# hw_driver_test DRIVER WHY-ABSENT DEPENDENCY...: the test, as KTAP. A kernel build without
# DRIVER.ko is a skip when WHY-ABSENT is set (qib on 7.3: removed in 6.17), else a failure.
hw_driver_test() {
	local driver=$1 absent=$2 dep
	shift 2
	local ko
	ko=$(modinfo -n "$driver" 2>/dev/null) || ko=
	ktap_header
	if [ -z "$ko" ] || [ ! -f "$ko" ]; then
		ktap_plan 1
		if [ -n "$absent" ]; then
			ktap_skip "$driver.ko on the $RDMAVT_RS_RDMAVT rdmavt" "$absent"
		else
			ktap_fail "$driver.ko is in this kernel build"
		fi
		ktap_finish
		return
	fi

	# What the driver takes from rdmavt: its undefined rvt_* symbols and ib_rvt_state_ops.
	# Neither the driver's .ko nor the Module.symvers of our build depends on the rdmavt
	# loaded: the C run would repeat the rdmavt-rs run's points with the same input, so it
	# leaves them out.
	local imports= checks=0 exports sym
	if [ "$RDMAVT_RS_RDMAVT" = rs ]; then
		imports=$(llvm-nm-19 -u "$ko" | awk '{ print $2 }' | grep -E '^(rvt_|ib_rvt_)' |
			sort -u)
		checks=$(wc -w <<<"$imports")
		[ "$checks" != 0 ] || checks=1
	fi
	# What we export, from the Module.symvers of our build.
	exports=$(awk '{ print $2 }' "$RDMAVT_RS_REPO/Module.symvers" | sort -u)

	ktap_plan $((checks + 4))
	[ "$checks" = 0 ] || [ -n "$imports" ] ||
		ktap_fail "llvm-nm-19 -u finds $driver's rvt_ imports"
	for sym in $imports; do
		ktap_check "$driver import $sym is exported by rdmavt-rs" grep -qx "$sym" <<<"$exports"
	done

	for dep in "$@"; do
		modprobe "$dep"
	done
	local mark="rdmavt-rs $driver test: insmod" err unknown
	echo "$mark" >/dev/kmsg
	if err=$(insmod "$ko" 2>&1); then
		ktap_pass "insmod $driver.ko on the $RDMAVT_RS_RDMAVT rdmavt"
	else
		ktap_fail "insmod $driver.ko on the $RDMAVT_RS_RDMAVT rdmavt: $err"
	fi
	unknown=$(dmesg | sed -n "/$mark/,\$p" | grep -E 'Unknown symbol|disagrees about version')
	if [ -z "$unknown" ]; then
		ktap_pass "no unknown symbol reported for $driver"
	else
		ktap_msg "$unknown"
		ktap_fail "no unknown symbol reported for $driver"
	fi
	ktap_check "$driver holds rdmavt" test -e "/sys/module/rdmavt/holders/$driver"
	if [ -d "/sys/module/$driver" ] && err=$(rmmod "$driver" 2>&1); then
		ktap_pass "rmmod $driver"
	else
		ktap_fail "rmmod $driver: ${err:-not loaded}"
	fi
	ktap_finish
}
