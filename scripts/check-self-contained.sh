#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-only
#
# rdmavt.ko replaces the in-tree C rdmavt, so it must never use a symbol that only the C
# module defines: modpost resolves such a reference against the kernel's Module.symvers, the
# build succeeds, and insmod then fails with "Unknown symbol". Fail the build instead, naming
# the symbols.
#
#   check-self-contained.sh KDIR rdmavt.ko
set -euo pipefail

kdir=$1 ko=$2
[ -f "$kdir/Module.symvers" ] || { echo "$0: no $kdir/Module.symvers" >&2; exit 2; }

missing=$(nm -u "$ko" | awk '{print $2}' | sort -u |
	awk 'NR == FNR { want[$1] = 1; next }
	     ($2 in want) && $3 == "drivers/infiniband/sw/rdmavt/rdmavt" { print $2 }' \
	     - "$kdir/Module.symvers")
if [ -n "$missing" ]; then
	echo "$(basename "$ko"): uses symbols that only the C rdmavt defines:" >&2
	printf '  %s\n' $missing >&2
	exit 1
fi
