#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only
#
# hfi1 (Omni-Path) on this rdmavt: its imports are ours, and it loads, holds rdmavt and unloads
# (tests/lib/hw_driver.sh). i2c-algo-bit is its other dependency.
#
# hfi1 on 7.3 WARNs at load about double dereferences in its own trace events, on either
# rdmavt: tests/splat-known forgives exactly that report.
set -u
. "$(dirname "$0")/../lib/ktap.sh"
. "$(dirname "$0")/../lib/hw_driver.sh"

hw_driver_test hfi1 "" i2c-algo-bit
