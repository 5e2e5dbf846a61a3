#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only
#
# Runs inside the guest before the command scripts/vm.sh was given: mounts debugfs, loads the
# RDMA core and the chosen rdmavt ($RDMAVT_RS_RDMAVT: rs, c or none), then execs the command.
set -euo pipefail

mountpoint -q /sys/kernel/debug || mount -t debugfs none /sys/kernel/debug
# kmemleak's own thread scans all memory every 10 minutes, the first time a minute after boot:
# under TCG each scan costs tens of seconds of the two shared cores. Only the explicit scans
# that tests/guest/run-suite.sh makes at the end count, and they find every leak the thread
# would have (a leaked object stays unreferenced), so the thread is stopped.
[ ! -w /sys/kernel/debug/kmemleak ] || echo scan=off >/sys/kernel/debug/kmemleak

modprobe ib_core
modprobe ib_uverbs
# `make modules_install` without KDIR installs rdmavt-rs where this modprobe looks; then the
# in-tree C rdmavt, the reference every test compares with, could not be loaded by name. With
# `none` that is what the user asked for (modprobe hfi1 on the installed rdmavt-rs).
if [ "$RDMAVT_RS_RDMAVT" != none ]; then
	case "$(modinfo -n rdmavt 2>/dev/null)" in
	*/updates/*)
		echo "rdmavt-rs is installed in the test kernel's modules dir:" \
			"make modules_uninstall, or use --rdmavt none" >&2
		exit 1 ;;
	esac
fi
. "$RDMAVT_RS_REPO/tests/lib/rdmavt.sh"
load_run_rdmavt

exec "$@"
