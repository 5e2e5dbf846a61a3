#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only
#
# The main job's guest side (run by scripts/run-main.sh inside the VM, with rdmavt-rs loaded,
# or the C rdmavt with RDMAVT=c): loads rvt_loop, shows rvt_loop0 as the RDMA stack and
# rdma-core see it, and runs ibv_rc_pingpong between a server and a client on it.
set -euo pipefail

insmod "$RDMAVT_RS_REPO/rvt_loop.ko"
trap 'rmmod rvt_loop' EXIT
echo "== kernel $(uname -r)"
echo "== modules"
lsmod | grep -E "^(rvt_loop|rdmavt|ib_uverbs|ib_core)\b"
echo "== rdmavt: $(modinfo -F description "$RDMAVT_RS_REPO/rdmavt.ko")"
echo "== rdma dev"
rdma dev
echo "== rdma link"
rdma link
echo "== ibv_devices"
ibv_devices
echo "== ibv_devinfo -d rvt_loop0"
ibv_devinfo -d rvt_loop0
echo "== ibv_rc_pingpong on rvt_loop0 (server and client, over 127.0.0.1)"
pp=(ibv_rc_pingpong -d rvt_loop0 -i 1 -n 10 -c)
"${pp[@]}" >/tmp/pingpong-server.txt 2>&1 &
server=$!
# The client can connect once the server listens (ibv_rc_pingpong's port 18515).
while kill -0 "$server" 2>/dev/null && ! ss -Hltn "sport = :18515" | grep -q .; do
	sleep 0.2
done
rc=0
timeout 120 "${pp[@]}" 127.0.0.1 || rc=$?
wait "$server" || rc=$?
echo "-- server:"
cat /tmp/pingpong-server.txt
if [ "$rc" = 0 ]; then
	echo "== ibv_rc_pingpong: ok"
elif grep -q "Couldn't create QP" /tmp/pingpong-server.txt; then
	echo "== ibv_rc_pingpong: this rdmavt cannot create QPs yet"
else
	echo "== ibv_rc_pingpong: FAILED (exit status $rc)"
	exit "$rc"
fi
