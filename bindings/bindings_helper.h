/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * The C declarations rdmavt-rs is written against: ib_core, the rdmavt ABI headers whose layouts
 * we keep, our own C glue, and the C rdmavt's trace events.
 */

#include <linux/pci.h>
#include <rdma/ib_verbs.h>
#include <rdma/ib_umem.h>
#include <rdma/ib_mad.h>
#include <rdma/ib_hdrs.h>
#include <rdma/uverbs_ioctl.h>
#include <rdma/rdma_vt.h>
#include <rdma/rdmavt_qp.h>
#include <rdma/rdmavt_cq.h>
#include <rdma/rdmavt_mr.h>
#include <uapi/rdma/rvt-abi.h>

#include "rdmavt_glue.h"

/* The trace events, without CREATE_TRACE_POINTS: their __tracepoint_* and rust_do_trace_*. */
#include "trace/trace.h"
#ifdef RDMAVT_RS_KERNEL_6_12
#include "compat/trace_6_12.h"
#endif
