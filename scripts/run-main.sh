#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only
#
# The main job (`make run`): boots the test VM with rdmavt-rs loaded and runs
# scripts/guest-main.sh there. Grows into ibv_rc_pingpong against rvt_loop0 once rdmavt-rs
# serves QPs.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)

exec bash "$here/vm.sh" --rdmavt rs -- "$here/guest-main.sh"
