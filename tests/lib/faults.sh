# SPDX-License-Identifier: GPL-2.0-only
#
# Fault injection for the fail-nth sweeps (tests/kselftest/fail_nth.sh and the kverbs suite's
# allocation_failures cases): failslab and fail_page_alloc skip GFP_KERNEL allocations, order-0
# pages and highmem (which vmalloc'ed rings and user pages are) by default; faults_open makes
# every allocation of a thread whose fail-nth count runs out fail, quietly (no stack dump per
# failure in the kernel log), and faults_close puts the old settings back. Sourced, never run.

FAULTS_DIR=/sys/kernel/debug
faults_saved=()

# Whether the kernel has fail-nth and the debugfs attributes (CONFIG_FAULT_INJECTION,
# FAILSLAB, FAIL_PAGE_ALLOC, FAULT_INJECTION_DEBUG_FS).
faults_available() {
	[ -w /proc/self/fail-nth ] && [ -d "$FAULTS_DIR/failslab" ] &&
		[ -d "$FAULTS_DIR/fail_page_alloc" ]
}

# faults_set FILE VALUE: writes VALUE, remembering the old one for faults_close.
faults_set() {
	faults_saved+=("$(cat "$1") $1")
	echo "$2" >"$1"
}

faults_open() {
	local f
	for f in failslab fail_page_alloc; do
		faults_set "$FAULTS_DIR/$f/ignore-gfp-wait" N
		faults_set "$FAULTS_DIR/$f/verbose" 0
	done
	faults_set "$FAULTS_DIR/fail_page_alloc/ignore-gfp-highmem" N
	faults_set "$FAULTS_DIR/fail_page_alloc/min-order" 0
}

faults_close() {
	local s
	for s in "${faults_saved[@]}"; do echo "${s%% *}" >"${s#* }"; done
	faults_saved=()
}
