#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only
#
# qib (QLogic TrueScale, the module ib_qib) on this rdmavt: its imports are ours, and it loads,
# holds rdmavt and unloads (tests/lib/hw_driver.sh). qib was removed upstream in 6.17: on 7.3
# this is a skip, on the 6.12 line the test.
set -u
. "$(dirname "$0")/../lib/ktap.sh"
. "$(dirname "$0")/../lib/hw_driver.sh"

absent=
[ "$(uname -r | cut -d. -f1)" -lt 7 ] || absent="qib was removed from the kernel in 6.17"
hw_driver_test ib_qib "$absent"
