#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only
#
# The benchmark's guest side (run by scripts/bench.sh inside the VM, once per provider): sets
# up one RDMA device and runs the perftest matrix over it, server and client in this guest
# meeting over TCP, the same arguments on every provider.
#
#   bench-guest.sh rs|c|rxe|siw
#
# rs and c: rvt_loop0 on the rdmavt that scripts/vm.sh loaded; rxe: rxe0 over lo; siw: siw0
# over the guest's NIC (scripts/vm.sh --network), with its own address, which the kernel still
# routes through its loopback: siw over lo has lo's all-zero hardware address as its GID, which
# the RDMA CM never resolves to it. No rdmavt for rxe and siw. Each point's server and client
# output goes to $RDMAVT_RS_OUT as NAME.server and NAME.client, and one line "NAME STATUS" to
# $RDMAVT_RS_OUT/status; the host parses the numbers (scripts/bench_report.py). The exit status
# is 0 only when every point ran.
set -u
tests=$RDMAVT_RS_REPO/tests
. "$tests/lib/ktap.sh"
. "$tests/lib/traffic.sh"

provider=$1
out=$RDMAVT_RS_OUT
failed=0
# iWARP has no connection set-up without the RDMA CM: siw's points add -R, the only argument
# that differs between providers, and meet at the NIC's address.
cm=()
server=127.0.0.1
siw_addr=10.77.0.1
[ "$provider" != siw ] || { cm=(-R); server=$siw_addr; }

# Loads the provider's driver; sets TRAFFIC_DEV to its device.
bench_device() {
	case "$provider" in
	rs|c) traffic_setup ;;
	rxe)
		ip link set lo up
		modprobe rdma_rxe && rdma link add rxe0 type rxe netdev lo && TRAFFIC_DEV=rxe0 ;;
	siw)
		local nic
		nic=$(ls /sys/class/net | grep -vx lo | head -1)
		[ -n "$nic" ] || { echo "no NIC: scripts/vm.sh --network" >&2; return 1; }
		ip link set lo up && ip link set "$nic" up &&
			ip addr add "$siw_addr/24" dev "$nic" &&
			modprobe siw && rdma link add siw0 type siw netdev "$nic" && TRAFFIC_DEV=siw0 ;;
	*) echo "unknown provider $provider" >&2; return 1 ;;
	esac
}

# bench NAME PROGRAM [ARGS...]: one point, the same arguments on both sides, as
# tests/lib/traffic.sh pairs them (the server first, the client once it listens), but with
# both outputs kept for the report.
bench() {
	local name=$1 port=$((TRAFFIC_PORT++)) spid src=0 crc=0
	shift
	local cmd=("$@" -d "$TRAFFIC_DEV" -i 1 -F "${cm[@]}")
	echo "$* -d DEV -i 1 -F${cm[*]:+ ${cm[*]}}" >"$out/$name.cmd"
	timeout "$TRAFFIC_TIMEOUT" "${cmd[@]}" -p "$port" >"$out/$name.server" 2>&1 &
	spid=$!
	while kill -0 "$spid" 2>/dev/null && ! traffic_listening "$port"; do
		sleep 0.2
	done
	timeout "$TRAFFIC_TIMEOUT" "${cmd[@]}" -p "$port" "$server" >"$out/$name.client" 2>&1 ||
		crc=$?
	wait "$spid" || src=$?
	if [ "$src" = 0 ] && [ "$crc" = 0 ]; then
		echo "$name ok" >>"$out/status"
	else
		echo "$name failed(server=$src,client=$crc)" >>"$out/status"
		echo "bench: $provider $name failed (server exit $src, client exit $crc)" >&2
		tail -5 "$out/$name.server" "$out/$name.client" >&2
		failed=1
	fi
}

: >"$out/status"
if ! bench_device >"$out/setup.log" 2>&1; then
	cat "$out/setup.log" >&2
	echo "setup failed" >>"$out/status"
	exit 1
fi
{ uname -r; rdma link; ibv_devinfo -d "$TRAFFIC_DEV"; } >"$out/device.log" 2>&1

# The matrix; scripts/bench_report.py knows each name's program and metric from its output.
bench write_bw_64k ib_write_bw -s 65536 -n 2000
bench write_bw_64 ib_write_bw -s 64 -n 2000
bench send_bw_64k ib_send_bw -s 65536 -n 2000
bench send_bw_64 ib_send_bw -s 64 -n 2000
bench read_bw_64k ib_read_bw -s 65536 -n 2000
bench send_lat_8 ib_send_lat -s 8 -n 2000
bench write_lat_8 ib_write_lat -s 8 -n 2000

dmesg >"$out/dmesg.log"
exit "$failed"
