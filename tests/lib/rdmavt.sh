# SPDX-License-Identifier: GPL-2.0-only
#
# The rdmavt of the VM run: loaded by the VM's prologue, and again by tests that unload it and
# by the runner after them. Sourced.

# load_run_rdmavt: loads this run's rdmavt (RDMAVT_RS_RDMAVT: rs, c, or none for neither).
# `modprobe -r` of an rdmavt also unloads the modules it depended on that nothing else uses,
# ib_uverbs among them, which on 6.12 holds ib_umem_get() (7.3 has it in ib_core); insmod loads
# no dependencies, so for rdmavt-rs they are loaded first.
load_run_rdmavt() {
	case "$RDMAVT_RS_RDMAVT" in
	rs) modprobe -a ib_core ib_uverbs && insmod "$RDMAVT_RS_REPO/rdmavt.ko" ;;
	c) modprobe rdmavt ;;
	esac
}
