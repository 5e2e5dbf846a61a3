// SPDX-License-Identifier: GPL-2.0-only
/*
 * C glue of rdmavt.ko: what Rust cannot express or bindgen cannot reach. Logic lives in Rust.
 */

#include <linux/stddef.h>
#include <rdma/rdma_vt.h>
#include <rdma/rdmavt_qp.h>
#include <rdma/rdmavt_cq.h>
#include <rdma/rdmavt_mr.h>
#include <uapi/rdma/rvt-abi.h>

#include "rdmavt_glue.h"
#include "layout/layout_generated.h"

const struct rdmavt_rs_layout_entry rdmavt_rs_layout_c[] = {
	RDMAVT_RS_LAYOUT_C_ENTRIES
};
const size_t rdmavt_rs_layout_c_len = ARRAY_SIZE(rdmavt_rs_layout_c);
