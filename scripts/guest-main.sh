#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only
#
# The main job's guest side (run by scripts/run-main.sh inside the VM, rdmavt-rs loaded):
# loads rvt_loop and shows rvt_loop0 as the RDMA stack and rdma-core see it.
set -euo pipefail

insmod "$RDMAVT_RS_REPO/rvt_loop.ko"
trap 'rmmod rvt_loop' EXIT
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
