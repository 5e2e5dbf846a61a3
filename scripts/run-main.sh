#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only
#
# The main job (`make run`): boots the test VM with rdmavt-rs and rvt_loop loaded and shows
# what the RDMA stack and rdma-core see. Grows into ibv_rc_pingpong against rvt_loop0 once
# rdmavt-rs serves QPs.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)

exec bash "$here/vm.sh" --rdmavt rs -- bash -c '
	set -e
	insmod "$RDMAVT_RS_REPO/rvt_loop.ko"
	echo "== modules"; lsmod | grep -E "^(rvt_loop|rdmavt|ib_uverbs|ib_core)\b"
	echo "== modinfo rdmavt: $(modinfo -F description "$RDMAVT_RS_REPO/rdmavt.ko")"
	echo "== rdma dev"; rdma dev
	echo "== rdma link"; rdma link
	echo "== ibv_devices"; ibv_devices
	echo "== ibv_devinfo -d rvt_loop0"; ibv_devinfo -d rvt_loop0
	rmmod rvt_loop
'
