/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * The C rdmavt's trace events (systems rvt, rvt_qp, rvt_tx, rvt_mr, rvt_cq and rvt_rc), defined
 * by the headers beside this one, which are the C rdmavt's own (Linux 7.3,
 * drivers/infiniband/sw/rdmavt/trace_*.h). This file plays the part of C's trace.h: the device
 * name field every event starts with, then each header. trace.c includes it with
 * CREATE_TRACE_POINTS to define the events; bindings/bindings_helper.h includes it plainly, so
 * that bindgen sees each event's `__tracepoint_*` and `rust_do_trace_*` (trace/mod.rs).
 */

#include <rdma/ib_verbs.h>
#include <rdma/rdma_vt.h>
#include <rdma/rdmavt_mr.h>

/* As C's trace.h: the device name, a string field named "dev". */
#define RDI_DEV_ENTRY(rdi)   __string(dev, rvt_get_ibdev_name(rdi))
#define RDI_DEV_ASSIGN(rdi)  __assign_str(dev)

#ifndef RDMAVT_RS_TRACE_MR
#define RDMAVT_RS_TRACE_MR
/**
 * struct rdmavt_rs_trace_mr - the C rdmavt's private struct rvt_mr (its mr.h), which
 * rvt_map_mr_sg reads from an ib_mr: rdmavt-rs's MRs have this layout (mr/mod.rs's RvtMr,
 * which asserts it against this struct).
 * @ibmr: ib_core's part
 * @umem: the pinned user memory, if any
 * @mr: the region the data path sees; last, its map is a flexible array
 */
struct rdmavt_rs_trace_mr {
	struct ib_mr ibmr;
	struct ib_umem *umem;
	struct rvt_mregion mr;
};

static inline struct rdmavt_rs_trace_mr *to_imr(struct ib_mr *ibmr)
{
	return container_of(ibmr, struct rdmavt_rs_trace_mr, ibmr);
}
#endif

#include "trace_rvt.h"
#include "trace_qp.h"
#include "trace_tx.h"
#include "trace_mr.h"
#include "trace_cq.h"
#include "trace_rc.h"
