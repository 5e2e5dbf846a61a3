#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only
#
# Stress, bounded, under the test kernel's KASAN, lockdep and kmemleak, on both rdmavt modules:
#   1. many QPs at once, in rounds of two waves of four pairs: perftest (RC write with 4 QPs,
#      send, read and atomics; UC write) with ibv_srq_pingpong (8 QPs on one SRQ),
#      ibv_ud_pingpong and ibv_rc_pingpong, while a small CQ overflows under bursts of
#      completions;
#   2. teardown under traffic: one side of a transfer killed with SIGKILL in the middle, so that
#      a process exits with everything open while its peer goes on sending (a destroyed QP, a
#      responder gone with reads outstanding), and the survivor must end; and QPs moved to the
#      error state with ibv_modify_qp under traffic (tests/progs/qp_err_traffic.c: RC and UC,
#      the receiver's QP while its peer sends, the sender's with its send queue busy), where
#      every WR on both sides completes once, with the statuses the C rdmavt gives, and what
#      was received is intact;
#   3. modules in use: rmmod of rvt_loop and of rdmavt refused under traffic.
# After each phase every object is freed (rdma resource's counts for rvt_loop0 are back where
# they started) and a data-checked ibv_rc_pingpong passes: nothing is wedged. Phases 1 and 2
# run for about DURATION seconds each: $RDMAVT_RS_STRESS_DURATION, 8 by default in `make
# check`; `make stress DURATION=600` soaks.
set -u
tests=$(cd "$(dirname "$0")/.." && pwd)
. "$tests/lib/ktap.sh"
. "$tests/lib/traffic.sh"

duration=${RDMAVT_RS_STRESS_DURATION:-8}
dev=(-d "$TRAFFIC_DEV" -i 1)
work=$(mktemp -d)

ktap_need_prog cq_overflow
ktap_need_prog qp_err_traffic
traffic_setup || ktap_bail "stress: $TRAFFIC_BROKEN"
ktap_header
trap 'rm -rf "$work"; rmmod rvt_loop 2>/dev/null' EXIT
ktap_msg "each phase: $duration s"

# rvt_loop0's object counts as rdma resource shows them ("pd 1 cq 2 qp 4 ...").
counts() { rdma resource show | sed -n "s/^[0-9]*: $TRAFFIC_DEV: //p"; }
start_counts=$(counts)

# settled PHASE: after a phase, every object its processes made is freed (allowing them a few
# seconds to exit), and the device still carries data.
settled() {
	local phase=$1 now i
	for i in $(seq 50); do
		now=$(counts)
		[ "$now" = "$start_counts" ] && break
		sleep 0.2
	done
	if [ "$now" = "$start_counts" ]; then
		ktap_pass "$phase: every object freed ($now)"
	else
		ktap_msg "at the start: $start_counts"
		ktap_msg "now:          $now"
		ktap_fail "$phase: every object freed"
	fi
	traffic_pair "$phase: ibv_rc_pingpong afterwards, data checked" \
		ibv_rc_pingpong "${dev[@]}" -n 20 -c -- "${dev[@]}" -n 20 -c
}

# --- 1. many QPs at once ---------------------------------------------------------------------

pairs=()
# parallel NAME SERVER_CMD... -- CLIENT_ARGS...: starts a pair in the background.
parallel() {
	local name=$1 port=$((TRAFFIC_PORT++))
	shift
	pairs+=("$name")
	traffic_run "$work/p${#pairs[@]}" "$port" "$@" &
}

# Rounds of two waves of four pairs, repeated until `duration` seconds have passed (one round
# at least). perftest runs by iteration count, and with -F: under load its check of the CPU's
# frequency fails and it reports nothing ("Can't produce a report") although the transfer was
# fine. UD goes lock-step (ibv_ud_pingpong): an ib_send_bw -c UD sender may outrun its
# receiver, whose datagrams are then dropped, as UD allows, and its count never reached.
n=(-n 500 -F "${dev[@]}")
srq_pair="ibv_srq_pingpong, 8 QPs on one SRQ"
# late_send DIR: the one failure ibv_srq_pingpong makes by itself with several QPs. Its loop
# counts sends and receives over all its QPs and posts a send on a QP whenever that QP's last
# send completed and a message came in, while its send count is short: a side whose send
# completions lag (its sends queued for the send engine, as they are under this load) posts
# up to one send per QP past the count, and the last of them can reach a peer that has done all
# its iterations and destroyed its QPs: IBV_WC_RETRY_EXC_ERR for that send (wr_id 2, the
# pingpong's send), as on a wire after the retries. Told apart only when the peer exited 0
# after all its iterations; any other outcome fails.
late_send() {
	local dir=$1 src crc failed done
	read -r src crc <"$dir/rc" 2>/dev/null || return 1
	case "$src $crc" in
	"1 0") failed=$dir/server done=$dir/client ;;
	"0 1") failed=$dir/client done=$dir/server ;;
	*) return 1 ;;
	esac
	grep -qx 'Failed status transport retry counter exceeded (12) for wr_id 2' "$failed" &&
		grep -q ' iters in ' "$done"
}
declare -A failed_in
rounds=0
wave() {
	local i
	wait
	for i in "${!pairs[@]}"; do
		[ "$(cat "$work/p$((i + 1))/rc" 2>/dev/null)" = "0 0" ] && continue
		if [ "${pairs[i]}" = "$srq_pair" ] && late_send "$work/p$((i + 1))"; then
			ktap_msg "many QPs, round $rounds: $srq_pair: a send past the pingpong's count" \
				"found its peer done and gone (IBV_WC_RETRY_EXC_ERR), the peer's run complete"
			continue
		fi
		failed_in["${pairs[i]}"]+=" $rounds"
		traffic_judge "many QPs, round $rounds: ${pairs[i]}" "$work/p$((i + 1))"
	done
	pairs=()
	rm -rf "$work"/p*
}
end=$((SECONDS + duration))
overflow_rc=0
while [ "$rounds" = 0 ] || [ "$SECONDS" -lt "$end" ]; do
	rounds=$((rounds + 1))
	parallel "ib_write_bw -q 4, 64 KiB" ib_write_bw -q 4 -s 65536 "${n[@]}" -- -q 4 -s 65536 "${n[@]}"
	parallel "ib_send_bw, 4 KiB" ib_send_bw -s 4096 "${n[@]}" -- -s 4096 "${n[@]}"
	parallel "ib_read_bw, 4 KiB" ib_read_bw -s 4096 "${n[@]}" -- -s 4096 "${n[@]}"
	parallel "$srq_pair" \
		ibv_srq_pingpong -q 8 -n 200 -c "${dev[@]}" -- -q 8 -n 200 -c "${dev[@]}"
	# Meanwhile a CQ overflows again and again (tests/progs/cq_overflow.c).
	"$KTAP_PROGS/cq_overflow" >"$work/overflow" 2>&1 || overflow_rc=$?
	wave
	parallel "ib_atomic_bw" ib_atomic_bw "${n[@]}" -- "${n[@]}"
	parallel "UC ib_write_bw, 64 KiB" ib_write_bw -c UC -s 65536 "${n[@]}" -- -c UC -s 65536 "${n[@]}"
	parallel "ibv_ud_pingpong" ibv_ud_pingpong -n 200 -c "${dev[@]}" -- -n 200 -c "${dev[@]}"
	parallel "ibv_rc_pingpong, 64 KiB" \
		ibv_rc_pingpong -s 65536 -n 200 -c "${dev[@]}" -- -s 65536 -n 200 -c "${dev[@]}"
	wave
done
for name in "ib_write_bw -q 4, 64 KiB" "ib_send_bw, 4 KiB" "ib_read_bw, 4 KiB" \
	"$srq_pair" "ib_atomic_bw" "UC ib_write_bw, 64 KiB" \
	"ibv_ud_pingpong" "ibv_rc_pingpong, 64 KiB"; do
	[ -n "${failed_in[$name]:-}" ] || ktap_pass "many QPs: $name, in each of $rounds rounds"
done
if [ "$overflow_rc" = 0 ]; then
	ktap_pass "many QPs: a CQ overflowing meanwhile reports IBV_EVENT_CQ_ERR and is destroyed"
else
	sed 's/^/#   /' "$work/overflow"
	ktap_fail "many QPs: a CQ overflowing meanwhile reports IBV_EVENT_CQ_ERR and is destroyed"
fi
settled "many QPs"

# --- 2. teardown under traffic ---------------------------------------------------------------

# killed NAME VICTIM PROGRAM ARGS...: a pair of PROGRAM ARGS runs; halfway through, VICTIM
# (server or client) is killed with SIGKILL. The survivor must then end by itself (with an
# error or not: its peer is gone) within TRAFFIC_TIMEOUT; one that has not is killed too and
# the point fails. A survivor that waits for ever by design (the pingpong's receiver) is given
# `duration` seconds and then killed, as a process exiting with everything still open.
killed() {
	local name=$1 victim=$2 port=$((TRAFFIC_PORT++)) spid cpid vpid survivor
	shift 2
	"$@" -p "$port" >"$work/k.server" 2>&1 &
	spid=$!
	while kill -0 "$spid" 2>/dev/null && ! traffic_listening "$port"; do
		sleep 0.2
	done
	"$@" -p "$port" 127.0.0.1 >"$work/k.client" 2>&1 &
	cpid=$!
	sleep "$((duration / 2 + 1))"
	if [ "$victim" = server ]; then vpid=$spid survivor=$cpid; else vpid=$cpid survivor=$spid; fi
	if ! kill -0 "$vpid" 2>/dev/null; then
		sed 's/^/#   /' "$work/k.server" "$work/k.client" | tail -20
		ktap_fail "$name: the $victim was still running to be killed"
		kill -9 "$survivor" 2>/dev/null
		wait 2>/dev/null
		return
	fi
	kill -9 "$vpid"
	local i
	for ((i = 0; i < 5 * TRAFFIC_TIMEOUT; i++)); do
		kill -0 "$survivor" 2>/dev/null || break
		sleep 0.2
	done
	if kill -0 "$survivor" 2>/dev/null; then
		kill -9 "$survivor"
		wait 2>/dev/null
		ktap_fail "$name: the survivor ends"
	else
		wait 2>/dev/null
		ktap_pass "$name: the survivor ends"
	fi
}

# lingering NAME PROGRAM ARGS...: both sides of an endless pingpong killed after a while.
lingering() {
	local name=$1 port=$((TRAFFIC_PORT++)) spid cpid
	shift
	"$@" -p "$port" >/dev/null 2>&1 &
	spid=$!
	while kill -0 "$spid" 2>/dev/null && ! traffic_listening "$port"; do
		sleep 0.2
	done
	"$@" -p "$port" 127.0.0.1 >/dev/null 2>&1 &
	cpid=$!
	sleep "$duration"
	if kill -0 "$spid" 2>/dev/null && kill -0 "$cpid" 2>/dev/null; then
		kill -9 "$cpid" "$spid"
		wait 2>/dev/null
		ktap_pass "$name: both sides still running after $duration s, then killed"
	else
		wait 2>/dev/null
		ktap_fail "$name: both sides still running after $duration s, then killed"
	fi
}

long=(-D "$((duration + 2))" -F "${dev[@]}")
killed "ib_send_bw, the sender killed" client ib_send_bw -s 4096 "${long[@]}"
killed "ib_send_bw, the receiver killed (its QP destroyed under the sends)" server \
	ib_send_bw -s 4096 "${long[@]}"
killed "ib_write_bw -q 4, the writer killed" client ib_write_bw -q 4 -s 65536 "${long[@]}"
killed "ib_read_bw, the responder killed (reads outstanding)" server \
	ib_read_bw -s 65536 "${long[@]}"
killed "UC ib_write_bw, the target killed" server ib_write_bw -c UC -s 65536 "${long[@]}"
lingering "ibv_rc_pingpong" ibv_rc_pingpong -n 100000000 "${dev[@]}"

# QPs moved to the error state while traffic runs (tests/progs/qp_err_traffic.c), in rounds
# for about `duration` seconds: the receiver's QP while its peer sends, the sender's with its
# send queue busy, pairs left alone beside them. Its TAP points become this test's points.
qp_err() {
	local out=$work/qp_err rc=0 failed=0 line
	timeout "$((duration + TRAFFIC_TIMEOUT))" "$KTAP_PROGS/qp_err_traffic" -t "$duration" \
		>"$out" 2>"$out.err" || rc=$?
	while IFS= read -r line; do
		case $line in
		"ok "*) ktap_pass "QP to ERR under traffic: ${line#ok * }" ;;
		"not ok "*) failed=1; ktap_fail "QP to ERR under traffic: ${line#not ok * }" ;;
		"# "*) ktap_msg "${line#\# }" ;;
		esac
	done <"$out"
	[ "$rc" = 0 ] && return
	sed 's/^/#   /' "$out.err" | tail -40
	[ "$failed" = 1 ] ||
		ktap_fail "QP to ERR under traffic: qp_err_traffic exits 0 (it exited $rc)"
}
qp_err
settled "teardown under traffic"

# --- 3. the modules in use -------------------------------------------------------------------

port=$((TRAFFIC_PORT++))
ibv_rc_pingpong -n 100000000 "${dev[@]}" -p "$port" >/dev/null 2>&1 &
spid=$!
while kill -0 "$spid" 2>/dev/null && ! traffic_listening "$port"; do
	sleep 0.2
done
ibv_rc_pingpong -n 100000000 "${dev[@]}" -p "$port" 127.0.0.1 >/dev/null 2>&1 &
cpid=$!
sleep 2
ktap_check "in use: rmmod rvt_loop is refused under traffic" \
	bash -c '! rmmod rvt_loop 2>&1 && [ -d /sys/module/rvt_loop ]'
ktap_check "in use: rmmod rdmavt is refused under traffic" \
	bash -c '! rmmod rdmavt 2>&1 && [ -d /sys/module/rdmavt ]'
ktap_check "in use: the traffic goes on meanwhile" kill -0 "$spid" "$cpid"
kill -9 "$spid" "$cpid" 2>/dev/null
wait 2>/dev/null
settled "in use"
ktap_check "rmmod rvt_loop afterwards" rmmod rvt_loop

echo "1..$KTAP_N"
ktap_finish
