#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only
#
# The main job (`make run`): boots the test VM with rdmavt-rs loaded (RDMAVT=c: the in-tree C
# rdmavt) and runs scripts/guest-main.sh there: rvt_loop0 as rdma-core sees it, and
# ibv_rc_pingpong over it.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)

exec bash "$here/vm.sh" --rdmavt "${RDMAVT:-rs}" -- "$here/guest-main.sh"
