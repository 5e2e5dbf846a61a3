#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only
#
# The bindings fence of rdmavt.ko: only the modules listed in bindings/fence may name
# `bindings::` (ours or the kernel crate's), each as many times as the list says; every other
# file of the module's production code uses the typed layer those modules provide. Out of its
# scope: the generated bindings themselves, the layout check (whose subject they are), the
# KUnit suites (*/tests.rs, which build C objects by hand), and the other modules of the tree
# (rvt_loop/, tests/).
#
#   scripts/bindings_fence.sh [ROOT]          checks; prints each breach, exits 1 on any
#   scripts/bindings_fence.sh --update [ROOT] rewrites the counts in ROOT/bindings/fence
#                                             (descriptions kept; a new file gets "TODO")
#
# A count that went down is a breach too, so that the list stays the exact statement of who
# uses the bindings: lower it with --update.
set -u
update=0
if [ "${1:-}" = --update ]; then
	update=1
	shift
fi
root=${1:-$(cd "$(dirname "$0")/.." && pwd)}
list=$root/bindings/fence

# The production Rust files of rdmavt.ko, relative to ROOT.
sources() {
	(cd "$root" && find . -name '*.rs' -not -path './bindings/*' -not -path './rvt_loop/*' \
		-not -path './tests/*' -not -path './layout/*' -not -path './.*' \
		-not -name tests.rs | sed 's|^\./||' | sort)
}

# The number of `bindings::` in each source that has any: "path count" lines.
counts() {
	local f n
	sources | while read -r f; do
		n=$(grep -o 'bindings::' "$root/$f" | wc -l)
		[ "$n" -eq 0 ] || echo "$f $n"
	done
}

if [ "$update" = 1 ]; then
	tmp=$(mktemp)
	trap 'rm -f "$tmp"' EXIT
	counts | awk -v list="$list" '
		BEGIN {
			while ((getline line < list) > 0) {
				if (line ~ /^#/ || line == "") { head = head line "\n"; continue }
				split(line, f, /[ \t]+/)
				sub(/^[^ \t]+[ \t]+[0-9]+[ \t]*/, "", line)
				what[f[1]] = line
			}
			printf "%s", head
		}
		{ printf "%-28s %4d  %s\n", $1, $2, ($1 in what) ? what[$1] : "TODO" }
	' >"$tmp"
	cp "$tmp" "$list"
	exit 0
fi

[ -f "$list" ] || { echo "$list: missing"; exit 1; }
counts | awk -v list="$list" '
	BEGIN {
		while ((getline line < list) > 0) {
			if (line ~ /^#/ || line == "") continue
			split(line, f, /[ \t]+/)
			allowed[f[1]] = f[2]
		}
	}
	{
		seen[$1] = 1
		files++
		if (!($1 in allowed)) {
			printf "%s: %d uses of bindings:: outside the fence (use the typed layer, or list it in bindings/fence with what it wraps)\n", $1, $2
			bad = 1
		} else if ($2 != allowed[$1]) {
			printf "%s: %d uses of bindings::, bindings/fence says %d (scripts/bindings_fence.sh --update)\n", $1, $2, allowed[$1]
			bad = 1
		}
		total += $2
	}
	END {
		for (p in allowed) if (!(p in seen)) {
			printf "%s: listed in bindings/fence, but uses no bindings:: (scripts/bindings_fence.sh --update)\n", p
			bad = 1
		}
		printf "%d uses in %d files\n", total, files > "/dev/stderr"
		exit bad
	}
'
