#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only
#
# Runs inside the guest before the command scripts/vm.sh was given: mounts debugfs, loads the
# RDMA core and the chosen rdmavt ($RDMAVT_RS_RDMAVT: rs, c or none), then execs the command.
set -euo pipefail

mountpoint -q /sys/kernel/debug || mount -t debugfs none /sys/kernel/debug

modprobe ib_core
modprobe ib_uverbs
case "$RDMAVT_RS_RDMAVT" in
rs) insmod "$RDMAVT_RS_REPO/rdmavt.ko" ;;
c) modprobe rdmavt ;;
none) ;;
esac

exec "$@"
