/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * The C declarations rdmavt-rs is written against: ib_core, the rdmavt ABI headers whose layouts
 * we keep, and our own C glue.
 */

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
