#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-only
#
# Run after every build: rdmavt.ko's symbol table against the in-tree C rdmavt it replaces.
#
# - It exports exactly what the C rdmavt exports, each symbol with the same EXPORT_SYMBOL
#   flavour (hfi1 and qib link against those), plus only our own rdmavt_rs_* markers.
# - It uses no symbol that only the C rdmavt defines: modpost resolves such a reference
#   against the kernel's Module.symvers, the build succeeds, and insmod then fails with
#   "Unknown symbol".
#
#   check-exports.sh KDIR REPO
set -euo pipefail

kdir=$1 repo=$2
ko=$repo/rdmavt.ko
c_module=drivers/infiniband/sw/rdmavt/rdmavt
for f in "$kdir/Module.symvers" "$repo/Module.symvers" "$ko"; do
	[ -f "$f" ] || { echo "$0: no $f" >&2; exit 2; }
done

c_exports=$(awk -v m="$c_module" '$3 == m { print $2, $4 }' "$kdir/Module.symvers" | sort)
# The module column is "rdmavt" (7.3) or the module's path without .ko (6.12).
our_exports=$(awk '$3 ~ /(^|\/)rdmavt$/ && $2 !~ /^rdmavt_rs_/ { print $2, $4 }' \
	"$repo/Module.symvers" | sort)
if [ -z "$c_exports" ]; then
	echo "$0: $kdir has no in-tree rdmavt to compare with; exports not checked" >&2
elif [ "$c_exports" != "$our_exports" ]; then
	echo "rdmavt.ko: its exports differ from the C rdmavt's (< C only, > ours only):" >&2
	diff <(echo "$c_exports") <(echo "$our_exports") | grep '^[<>]' >&2
	exit 1
fi

missing=$(nm -u "$ko" | awk '{ print $2 }' | sort -u |
	awk -v m="$c_module" 'NR == FNR { want[$1] = 1; next } ($2 in want) && $3 == m { print $2 }' \
	- "$kdir/Module.symvers")
if [ -n "$missing" ]; then
	echo "rdmavt.ko: uses symbols that only the C rdmavt defines:" >&2
	printf '  %s\n' $missing >&2
	exit 1
fi
