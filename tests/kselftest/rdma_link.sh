#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only
#
# `rdma link add NAME type rvt_loop netdev lo` and `rdma link delete NAME`: the first loads
# rvt_loop through its alias (rdma-link-rvt_loop) when it is not loaded, with rvt_loop.ko
# installed into an overlay of the guest's modules dir as tests/kselftest/modules_install.sh
# does; the device it makes is up, carries ibv_rc_pingpong, and goes with the second. Names
# already taken give ENFILE, as they do for rxe (ib_core's answer); a netdev that is not a
# loopback EINVAL; the num_devs devices cannot be deleted (ib_core's EINVAL). A device deleted
# while a process holds it open, or under ibv_rc_pingpong -e's traffic, goes at once; the
# process's later verbs fail (EIO) and it exits cleanly. num_devs still works, also as 0,
# beside link devices, and rmmod removes the link devices that are left. The VM run checks
# the kernel log and kmemleak afterwards.
#
# Runs on both rdmavt modules. On the C rdmavt the link devices print through the bound
# pci-testdev; a process whose ring mappings outlive the device is left out there (see the
# skips): C's rvt_release_mmap_info() reads the freed user context when the mapping goes.
# Leaves rvt_loop unloaded.
set -u
tests=$(cd "$(dirname "$0")/.." && pwd)
. "$tests/lib/ktap.sh"
. "$tests/lib/traffic.sh"

ko=$RDMAVT_RS_REPO/rvt_loop.ko
kver=$(uname -r)
real=$(readlink -f "/lib/modules/$kver")
scratch=$(mktemp -d)
work=$(mktemp -d)
c_ring_bug="C rdmavt bug: rvt_release_mmap_info() reads the freed user context when a ring's \
mapping outlives the device (KASAN use-after-free)"

loaded() { [ -d /sys/module/rvt_loop ]; }
unload() { ! loaded || rmmod rvt_loop; }
exists() { [ -e "/sys/class/infiniband/$1" ]; }

cleanup() {
	exec 3>&- 2>/dev/null
	unload
	! mountpoint -q "$real" || umount -l "$real"
	! mountpoint -q "$scratch" || umount -l "$scratch"
	rmdir "$scratch"
	rm -rf "$work"
}
trap cleanup EXIT

# rvt_loop.ko where modprobe finds it, in a tmpfs overlay over the modules dir (as in
# modules_install.sh: nothing on the host changes).
install_rvt_loop() {
	mount -t tmpfs rdmavt-rs-link "$scratch" || return 1
	mkdir "$scratch/upper" "$scratch/work"
	mount -t overlay rdmavt-rs-link \
		-o "lowerdir=$real,upperdir=$scratch/upper,workdir=$scratch/work" "$real" || return 1
	mkdir -p "$real/extra" && cp "$ko" "$real/extra/" && depmod -a "$kver" || return 1
	modinfo -F alias rvt_loop | grep -qx 'rdma-link-rvt_loop'
}

# The first `rdma link add` loads rvt_loop by its alias.
autoloads() {
	unload || return 1
	install_rvt_loop || return 1
	rdma link add link0 type rvt_loop netdev lo || return 1
	loaded || { echo "rvt_loop is not loaded"; return 1; }
	exists link0 || { echo "no link0"; return 1; }
}

# Until libibverbs lists device $1 (its uverbs node comes a moment after the netlink reply).
listed() {
	local i
	for i in $(seq 50); do
		ibv_devices | awk 'NR > 2 { print $1 }' | grep -qx "$1" && return
		sleep 0.1
	done
	ibv_devices
	return 1
}

# The port as libhfi1verbs shows it: ACTIVE, with LID $2.
devinfo() {
	local out
	listed "$1" || return 1
	out=$(ibv_devinfo -d "$1") || return 1
	grep -q 'state:.*PORT_ACTIVE' <<<"$out" && grep -qE "port_lid:[[:space:]]+$2\$" <<<"$out" &&
		return
	echo "$out"
	return 1
}

# `rdma link add $1 type $2 netdev $3` fails with the message of errno $4 ("rdma" prints
# strerror).
add_fails() {
	local out
	if out=$(rdma link add "$1" type "$2" netdev "$3" 2>&1); then
		echo "rdma link add $1 type $2 succeeded"
		rdma link delete "$1"
		return 1
	fi
	echo "$out"
	[[ $out == *"$4"* ]]
}

# The same name in rxe gives the same error: ib_core's ENFILE for a name that is taken.
rxe_agrees() {
	local rc=0
	modinfo rdma_rxe >/dev/null 2>&1 || { echo "no rdma_rxe module"; return 2; }
	add_fails rvt_loop0 rxe lo "Too many open files in system" || rc=1
	[ -d /sys/module/rdma_rxe ] && rmmod rdma_rxe
	return $rc
}

rxe_point() {
	local name="rxe gives the same error for a name that is taken" out rc=0
	out=$(rxe_agrees 2>&1) || rc=$?
	case $rc in
	0) ktap_pass "$name" ;;
	2) ktap_skip "$name" "$out" ;;
	*) printf '%s\n' "$out" | sed 's/^/# /'; ktap_fail "$name" ;;
	esac
}

# A netdev that is not a loopback is refused (EINVAL); a dummy one stands for any other.
not_loopback_point() {
	local name="a netdev that is not a loopback: EINVAL" out
	if ! ip link add rvtl_dummy0 type dummy 2>/dev/null; then
		ktap_skip "$name" "no dummy netdev in this kernel (CONFIG_DUMMY)"
		return
	fi
	ktap_check "$name" add_fails linkx rvt_loop rvtl_dummy0 "Invalid argument"
	ip link delete rvtl_dummy0
}

num_devs_not_deletable() {
	local out
	out=$(rdma link delete rvt_loop0 2>&1) && { echo "deleted rvt_loop0"; return 1; }
	echo "$out"
	[[ $out == *"Invalid argument"* ]] && exists rvt_loop0
}

gone() {
	local dev=$1
	! exists "$dev" || { echo "/sys/class/infiniband/$dev is still there"; return 1; }
	! rdma link show 2>/dev/null | grep -q "^link $dev/" || { rdma link; return 1; }
	! ibv_devices | awk '{ print $1 }' | grep -qx "$dev" || { ibv_devices; return 1; }
	[ ! -e "/sys/kernel/debug/rvt_loop/$dev" ] || { echo "debugfs dir left"; return 1; }
}

deletes() { rdma link delete "$1" && gone "$1"; }

# held NAME DEV [--no-rings]: DEV is deleted while tests/progs/link_hold holds it open; the
# delete returns at once, and the holder's verbs then fail and it exits cleanly.
held() {
	local dev=$1 holder rc=0
	shift
	rdma link add "$dev" type rvt_loop netdev lo && listed "$dev" || return 1
	rm -f "$work/in"
	mkfifo "$work/in"
	"$KTAP_PROGS/link_hold" "$@" "$dev" <"$work/in" >"$work/hold" 2>&1 &
	holder=$!
	exec 3>"$work/in"
	for _ in $(seq 100); do
		grep -q holding "$work/hold" && break
		kill -0 "$holder" 2>/dev/null || break
		sleep 0.1
	done
	grep -q holding "$work/hold" || rc=1
	[ $rc = 0 ] && { timeout 60 rdma link delete "$dev" || rc=1; }
	exec 3>&-
	wait "$holder" || rc=1
	gone "$dev" || rc=1
	cat "$work/hold"
	return $rc
}

held_point() {
	local name=$1 out
	shift
	if out=$(held "$@" 2>&1); then
		ktap_pass "$name"
	else
		printf '%s\n' "$out" | sed 's/^/# /'
		ktap_fail "$name"
	fi
}

# ibv_rc_pingpong -e runs on link2 (a long run), the device is deleted under it: the delete
# returns, and both sides, waiting for CQ events, get an error and exit. (A process that only
# polls its mapped CQ ring, ibv_rc_pingpong without -e, is never told, with rxe as here: its
# ring stays mapped and empty. ib_core sends it IB_EVENT_DEVICE_FATAL on its async fd.)
under_traffic() {
	local dev=link2 spid cpid src=0 crc=0 args
	args=(-d "$dev" -i 1 -e -n 100000000)
	rdma link add "$dev" type rvt_loop netdev lo && listed "$dev" || return 1
	timeout 120 ibv_rc_pingpong "${args[@]}" -p 18690 >"$work/server" 2>&1 &
	spid=$!
	while kill -0 "$spid" 2>/dev/null && ! traffic_listening 18690; do sleep 0.2; done
	timeout 120 ibv_rc_pingpong "${args[@]}" -p 18690 127.0.0.1 >"$work/client" 2>&1 &
	cpid=$!
	sleep 3
	kill -0 "$spid" && kill -0 "$cpid" || { echo "pingpong is not running"; cat "$work"/*; }
	timeout 60 rdma link delete "$dev" || { echo "rdma link delete $dev failed"; return 1; }
	wait "$spid" || src=$?
	wait "$cpid" || crc=$?
	echo "server exit $src, client exit $crc"
	sed 's/^/server: /' "$work/server" | tail -5
	sed 's/^/client: /' "$work/client" | tail -5
	# 124: still running at the timeout; above 128: killed by a signal.
	[ "$src" != 0 ] && [ "$src" -lt 124 ] && [ "$crc" != 0 ] && [ "$crc" -lt 124 ] &&
		gone "$dev"
}

num_devs_beside_links() {
	unload || return 1
	insmod "$ko" num_devs=2 || return 1
	exists rvt_loop0 && exists rvt_loop1 || { ls /sys/class/infiniband; return 1; }
	rdma link add link3 type rvt_loop netdev lo || return 1
	devinfo link3 65 && devinfo rvt_loop1 2
}

rmmod_removes_links() {
	rmmod rvt_loop || return 1
	! loaded || { echo "rvt_loop still loaded"; return 1; }
	gone link3 && gone rvt_loop0
}

num_devs_zero() {
	insmod "$ko" num_devs=0 || return 1
	[ -z "$(ls /sys/class/infiniband)" ] || { ls /sys/class/infiniband; return 1; }
	rdma link add link4 type rvt_loop netdev lo && devinfo link4 65 || return 1
	rmmod rvt_loop && gone link4
}

ktap_header
ktap_plan 16
[ -x "$KTAP_PROGS/link_hold" ] || ktap_msg "link_hold is not built (make test-progs)"

ktap_check "rdma link add link0 type rvt_loop netdev lo loads rvt_loop by its alias" autoloads
ktap_check "rdma link: link0/1 ACTIVE, LINK_UP" link_active link0
ktap_check "ibv_devinfo: link0 PORT_ACTIVE, LID 65" devinfo link0 65
TRAFFIC_DEV=link0
traffic_pair "ibv_rc_pingpong on link0" \
	ibv_rc_pingpong -d link0 -i 1 -n 5 -c -- -d link0 -i 1 -n 5 -c
ktap_check "a name that is taken (link0): ENFILE" \
	add_fails link0 rvt_loop lo "Too many open files in system"
ktap_check "the name of a num_devs device (rvt_loop0): ENFILE" \
	add_fails rvt_loop0 rvt_loop lo "Too many open files in system"
rxe_point
not_loopback_point
ktap_check "rdma link delete rvt_loop0 (num_devs): EINVAL, and it stays" num_devs_not_deletable
ktap_check "rdma link delete link0: gone from sysfs, rdma link, libibverbs, debugfs" \
	deletes link0
held_point "delete under a process holding a PD and an MR: at once; its verbs fail, it exits" \
	link1 --no-rings
if [ "$RDMAVT_RS_RDMAVT" = c ]; then
	ktap_skip "delete under a process with a CQ and a QP mapped: its verbs fail, it exits" \
		"$c_ring_bug"
	ktap_skip "delete under ibv_rc_pingpong -e's traffic: both sides fail and exit" \
		"$c_ring_bug"
else
	held_point "delete under a process with a CQ and a QP mapped: its verbs fail, it exits" \
		link5
	ktap_check "delete under ibv_rc_pingpong -e's traffic: both sides fail and exit" \
		under_traffic
fi
ktap_check "num_devs=2 beside a link device: rvt_loop1 LID 2, link3 LID 65" \
	num_devs_beside_links
ktap_check "rmmod rvt_loop removes the link device left (link3)" rmmod_removes_links
ktap_check "num_devs=0: no device until rdma link add, which works" num_devs_zero
ktap_finish
