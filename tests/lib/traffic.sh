# SPDX-License-Identifier: GPL-2.0-only
#
# Traffic tests over rvt_loop0: a server and a client of an rdma-core or perftest program,
# both in this guest, meeting over TCP on 127.0.0.1 and then talking through rvt_loop's send
# engine. Sourced after ktap.sh, never run.
#
# Each test point passes when both sides exit 0, on rdmavt-rs and on the C rdmavt alike.

TRAFFIC_DEV=rvt_loop0
# Each pair gets its own TCP port, so that a server still in TIME_WAIT never blocks the next.
TRAFFIC_PORT=18600
# No test judges time, but a broken engine must not hang the run: a side that has not
# finished by then has failed.
TRAFFIC_TIMEOUT=180
# Why every point fails (rvt_loop does not load); empty when they can run.
TRAFFIC_BROKEN=

# Loads rvt_loop unless it is loaded. On failure, says why and fails; every point then fails
# with that reason.
traffic_setup() {
	local err
	[ -d /sys/module/rvt_loop ] && return
	if ! err=$(insmod "$RDMAVT_RS_REPO/rvt_loop.ko" 2>&1); then
		ktap_msg "insmod rvt_loop: $err"
		TRAFFIC_BROKEN="rvt_loop does not load on this rdmavt: $err"
		return 1
	fi
	trap 'rmmod rvt_loop 2>/dev/null' EXIT
}

# link_active DEV: port 1 of DEV is ACTIVE and LINK_UP in `rdma link`; otherwise says what it
# is and fails.
link_active() {
	local out
	out=$(rdma link show "$1/1") || return 1
	[[ $out == *"state ACTIVE physical_state LINK_UP"* ]] && return
	echo "$out"
	return 1
}

# Whether something listens on TCP port $1 on this host.
traffic_listening() { ss -Hltn "sport = :$1" | grep -q .; }

# traffic_run DIR PORT SERVER_CMD... -- CLIENT_ARGS...: one server and client as traffic_pair
# pairs them, without judging: their outputs go to DIR/server and DIR/client, their exit
# statuses to DIR/rc ("SERVER CLIENT"). Several may run at once, each with its own PORT.
traffic_run() {
	local dir=$1 port=$2
	shift 2
	local server=() client=() spid src=0 crc=0
	while [ $# -gt 0 ] && [ "$1" != -- ]; do server+=("$1"); shift; done
	shift
	client=("${server[0]}" "$@")
	mkdir -p "$dir"
	echo "${server[*]} -p $port" >"$dir/cmd"
	timeout "$TRAFFIC_TIMEOUT" "${server[@]}" -p "$port" >"$dir/server" 2>&1 &
	spid=$!
	# The server listens once its verbs objects exist; it may also fail before that.
	while kill -0 "$spid" 2>/dev/null && ! traffic_listening "$port"; do
		sleep 0.2
	done
	timeout "$TRAFFIC_TIMEOUT" "${client[@]}" -p "$port" 127.0.0.1 >"$dir/client" 2>&1 || crc=$?
	wait "$spid" || src=$?
	echo "$src $crc" >"$dir/rc"
}

# traffic_judge NAME DIR: the point of a pair traffic_run ran into DIR: passes when both sides
# exited 0; otherwise shows both outputs.
traffic_judge() {
	local name=$1 dir=$2 src crc
	read -r src crc <"$dir/rc" 2>/dev/null || { src=none; crc=none; }
	if [ "$src" = 0 ] && [ "$crc" = 0 ]; then
		ktap_pass "$name"
	else
		ktap_msg "server (exit $src): $(cat "$dir/cmd" 2>/dev/null)"
		sed 's/^/#   /' "$dir/server" 2>/dev/null | tail -20
		ktap_msg "client (exit $crc)"
		sed 's/^/#   /' "$dir/client" 2>/dev/null | tail -20
		ktap_fail "$name"
	fi
}

# traffic_pair NAME SERVER_CMD... -- CLIENT_ARGS...: one test point. Runs SERVER_CMD with
# "-p PORT" added, waits until it listens, then runs the same program with CLIENT_ARGS,
# "-p PORT" and 127.0.0.1. Both outputs are shown when the point does not pass.
traffic_pair() {
	local name=$1 out
	shift
	if [ -n "$TRAFFIC_BROKEN" ]; then
		ktap_fail "$name: $TRAFFIC_BROKEN"
		return
	fi
	out=$(mktemp -d)
	traffic_run "$out" "$((TRAFFIC_PORT++))" "$@"
	traffic_judge "$name" "$out"
	rm -rf "$out"
}
