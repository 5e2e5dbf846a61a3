#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only
#
# The benchmark's guest side (run by scripts/bench.sh inside the VM, once per boot): sets up
# one RDMA device, measures the guest's memcpy bandwidth, then runs the perftest matrix over
# the device, server and client in this guest meeting over TCP, the same arguments on every
# provider.
#
#   bench-guest.sh rs|rs-notrace|c|rxe|siw DURATION LAT_ITERS [POINTS [PROFILE|insn]]
#
# Each bandwidth point runs for DURATION seconds (perftest -D), the first and last second of
# them unmeasured (-f 1: the warm-up and the drain); each latency point runs LAT_ITERS
# iterations (-n), because perftest's duration mode reports no latency percentiles.
#
# rs and c: rvt_loop0 on the rdmavt that scripts/vm.sh loaded; rxe: rxe0 over lo; siw: siw0
# over the guest's NIC (scripts/vm.sh --network), with its own address, which the kernel still
# routes through its loopback: siw over lo has lo's all-zero hardware address as its GID, which
# the RDMA CM never resolves to it. No rdmavt for rxe and siw. Into $RDMAVT_RS_OUT go
# memcpy.txt (scripts/bench/memcpy-bw), each point's server and client output as NAME.server
# and NAME.client, its command as NAME.cmd, and one line "NAME STATUS" per point to status:
# ok, failed(...), or unsupported(...) for what the device lacks (siw: UC and atomics). The
# host parses the numbers (scripts/bench_report.py). The exit status is 0 only when every
# supported point ran.
#
# PROFILE=N (`make profile`): during each point, from 2 seconds after its client starts (past
# its warm-up), `perf record -a -g` samples the whole guest for N seconds at PROFILE_HZ; each
# sample's task and call chain (addresses) go to NAME.perf.gz (perf script), and the kernel's
# symbols with the modules' load addresses to kallsyms.gz, so that scripts/profile_report.py
# resolves them on the host: perf itself would take an installed rdmavt.ko's symbols for the
# rdmavt-rs loaded from elsewhere.
#
# insn (`make profile`'s counting boot, with scripts/bench/insn-count.c loaded into QEMU): each
# point runs twice instead, for INSN_ITERS[0] and then INSN_ITERS[1] iterations (-n, both
# kinds of point), each run between `insn-mark start` and `insn-mark stop`, so that the plugin
# writes the guest's kernel instruction counts of each run to insn.1, insn.2, ... and the
# difference of a point's two runs is the cost of its extra messages without the set-up and
# tear-down both runs share. insn.order names the runs: "NAME ITERATIONS" a line, in order.
set -u
tests=$RDMAVT_RS_REPO/tests
. "$tests/lib/ktap.sh"
. "$tests/lib/traffic.sh"

provider=$1
duration=$2
lat_iters=$3
only=${4:-all}
profile=${5:-0}
PROFILE_HZ=999
# sampling: perf records each point (PROFILE=N); marks: count() has the plugin count this run.
sampling=
[ "$profile" = 0 ] || [ "$profile" = insn ] || sampling=1
marks=
INSN_ITERS=(10000 50000)
insn_mark=$RDMAVT_RS_REPO/scripts/bench/insn-mark
out=$RDMAVT_RS_OUT
memcpy_bw=$RDMAVT_RS_REPO/scripts/bench/memcpy-bw
failed=0
# iWARP has no connection set-up without the RDMA CM: siw's points add -R, the only argument
# that differs between providers, and meet at the NIC's address.
cm=()
server=127.0.0.1
siw_addr=10.77.0.1
[ "$provider" != siw ] || { cm=(-R); server=$siw_addr; }
# A point takes DURATION or its latency iterations plus start-up and connection set-up; well
# past that it hangs, and has failed. A round trip on rxe, the slowest, takes 100 usec on an
# idle host and milliseconds on a loaded one: 10 ms an iteration are allowed.
TRAFFIC_TIMEOUT=$((duration + 120 + lat_iters / 100))

# Loads the provider's driver; sets TRAFFIC_DEV to its device.
bench_device() {
	case "$provider" in
	rs|rs-notrace|c) traffic_setup ;;
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
	selected "$name" || return 0
	local cmd=("$@" -d "$TRAFFIC_DEV" -i 1 -F "${cm[@]}")
	echo "$* -d DEV -i 1 -F${cm[*]:+ ${cm[*]}}" >"$out/$name.cmd"
	counters before >"$out/$name.stats"
	timeout "$TRAFFIC_TIMEOUT" "${cmd[@]}" -p "$port" >"$out/$name.server" 2>&1 &
	spid=$!
	while kill -0 "$spid" 2>/dev/null && ! traffic_listening "$port"; do
		sleep 0.2
	done
	[ -z "$sampling" ] || record "$name" &
	[ -z "$marks" ] || "$insn_mark" start
	timeout "$TRAFFIC_TIMEOUT" "${cmd[@]}" -p "$port" "$server" >"$out/$name.client" 2>&1 ||
		crc=$?
	wait "$spid" || src=$?
	[ -z "$marks" ] || "$insn_mark" stop
	counters after >>"$out/$name.stats"
	[ -z "$sampling" ] || { wait; report "$name"; }
	if [ "$src" = 0 ] && [ "$crc" = 0 ]; then
		echo "$name ok" >>"$out/status"
	else
		echo "$name failed(server=$src,client=$crc)" >>"$out/status"
		echo "bench: $provider $name failed (server exit $src, client exit $crc)" >&2
		tail -n 5 "$out/$name.server" "$out/$name.client" >&2
		failed=1
	fi
}

# counters WHEN: the device's port counters (`rdma statistic`: rdmavt's RNR NAKs, drops and
# loopback packets, and the driver's own), a line "WHEN: NAME VALUE ...", so that a point's
# output says how many RNR NAKs, retries or drops its messages met.
counters() {
	echo "$1: $(rdma statistic show link "$TRAFFIC_DEV/1" 2>&1 | tr -s ' \n' ' ')"
}

# record NAME: the samples of point NAME's middle PROFILE seconds, into the guest's /tmp.
record() {
	sleep 2
	perf record -F "$PROFILE_HZ" -a -g -o "/tmp/$1.perf.data" -- sleep "$profile" \
		>"$out/$1.perf.log" 2>&1
}

# report NAME: point NAME's samples, each a task line and its call chain's addresses, leaf
# first, after a line with the sampling parameters.
report() {
	{
		echo "frequency: $PROFILE_HZ Hz, seconds: $profile, CPUs: $(nproc)"
		perf script -i "/tmp/$1.perf.data" -F comm,ip
	} 2>>"$out/$1.perf.log" | gzip >"$out/$1.perf.gz"
	rm -f "/tmp/$1.perf.data"
	[ -e "$out/kallsyms.gz" ] || grep ' [tTwW] ' /proc/kallsyms | gzip >"$out/kallsyms.gz"
}

# selected NAME: whether NAME is among the points asked for (POINTS, "all" by default); a
# counting run NAME.N is point NAME's.
selected() { [ "$only" = all ] || [[ " $only " == *" ${1%.*} "* ]]; }

# bw NAME PROGRAM [ARGS...]: a bandwidth point, duration-based.
bw() { point "$1" "${@:2}" -- -D "$duration" -f 1; }

# lat NAME PROGRAM [ARGS...]: a latency point, iteration-based.
lat() { point "$1" "${@:2}" -- -n "$lat_iters"; }

# point NAME PROGRAM [ARGS...] -- HOW...: a point, measured with HOW (its length); in the
# counting boot, counted instead.
point() {
	local name=$1 args=()
	shift
	while [ "$1" != -- ]; do args+=("$1"); shift; done
	shift
	if [ "$profile" = insn ]; then
		count "$name" "${args[@]}"
	else
		bench "$name" "${args[@]}" "$@"
	fi
}

# count NAME PROGRAM [ARGS...]: the counting boot's two runs of a point (see insn above), its
# outputs as NAME.N.server and NAME.N.client, after an uncounted one (NAME.warm.*): the first
# run of a program pays for what later ones find cached (its binary and libraries read over
# 9p, page tables, slab caches), which would fall on the first counted run alone.
count() {
	local name=$1 n
	shift
	selected "$name" || return 0
	bench "$name.warm" "$@" -n "${INSN_ITERS[0]}"
	marks=1
	for n in "${INSN_ITERS[@]}"; do
		bench "$name.$n" "$@" -n "$n"
		echo "$name $n" >>"$out/insn.order"
	done
	marks=
}

# unsupported NAME REASON: a point this device cannot run; reported as n/a, not as a failure.
unsupported() {
	selected "$1" || return 0
	echo "$1 unsupported($2)" >>"$out/status"
}

# Whether the device does atomics: siw does not.
has_atomics() { ! ibv_devinfo -v -d "$TRAFFIC_DEV" | grep -q 'atomic_cap:.*ATOMIC_NONE'; }

# The guest's own copy rate, the fastest of four ways of copying (scripts/bench/memcpy-bw.c),
# before any traffic, on an otherwise idle guest: 2 seconds a size.
memcpy_limit() {
	if [ -x "$memcpy_bw" ]; then
		"$memcpy_bw" 2 >"$out/memcpy.txt" 2>&1 || echo "memcpy-bw failed" >&2
	else
		echo "$memcpy_bw is not built" >&2
	fi
}

: >"$out/status"
if ! bench_device >"$out/setup.log" 2>&1; then
	cat "$out/setup.log" >&2
	echo "setup failed" >>"$out/status"
	exit 1
fi
# The CPU flags that decide how memcpy copies: without fsrm, the kernel's memcpy is a loop of
# 8-byte moves; with erms, glibc's is `rep movsb` for mid-sized copies.
{
	uname -r
	grep -m1 '^model name' /proc/cpuinfo
	echo "copy flags: $(grep -m1 '^flags' /proc/cpuinfo | grep -o -w -E 'erms|fsrm|avx2|avx512f' |
		tr '\n' ' ')"
	rdma link
	ibv_devinfo -v -d "$TRAFFIC_DEV"
} >"$out/device.log" 2>&1
memcpy_limit

# The matrix; scripts/bench_report.py finds each point's metrics in its output. All RC unless
# the name says otherwise.
for verb in write send read; do
	bw "${verb}_bw_64" "ib_${verb}_bw" -s 64
	bw "${verb}_bw_4k" "ib_${verb}_bw" -s 4096
	bw "${verb}_bw_64k" "ib_${verb}_bw" -s 65536
	bw "${verb}_bw_1m" "ib_${verb}_bw" -s 1048576
done
if has_atomics; then
	bw atomic_bw ib_atomic_bw
else
	unsupported atomic_bw "no atomics"
fi
# Several QPs from one process on 2 vCPUs: the per-QP locks and the send engine's scheduling.
bw write_bw_64k_q4 ib_write_bw -s 65536 -q 4
bw write_bw_64k_q8 ib_write_bw -s 65536 -q 8
bw send_bw_4k_srq ib_send_bw -s 4096 --use-srq
if [ "$provider" != siw ]; then
	bw uc_write_bw_64k ib_write_bw -c UC -s 65536
else
	unsupported uc_write_bw_64k "iWARP has RC only"
fi
lat send_lat_8 ib_send_lat -s 8
lat write_lat_8 ib_write_lat -s 8
lat read_lat_8 ib_read_lat -s 8

# The counting boot's symbols, for the host to name the counted addresses.
[ "$profile" != insn ] || grep ' [tTwW] ' /proc/kallsyms | gzip >"$out/kallsyms.gz"
dmesg >"$out/dmesg.log"
exit "$failed"
