#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only
#
# A CQ resize whose reply disagrees with the kind of ring the CQ was created with
# (tests/progs/cq_resize.c, through the raw uverbs write() ABI): EINVAL, and the CQ still
# works. On rdmavt-rs only: the C rdmavt dereferences a NULL ring there (an oops), so its run
# reports the cases as skipped. The VM run checks the kernel log and kmemleak afterwards.
set -u
. "$(dirname "$0")/../lib/ktap.sh"

ktap_need_prog cq_resize
ktap_load_rvt_loop cq_resize
if [ "$RDMAVT_RS_RDMAVT" = rs ]; then
	"$KTAP_PROGS/cq_resize" --cases
else
	"$KTAP_PROGS/cq_resize"
fi
