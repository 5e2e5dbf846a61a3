// SPDX-License-Identifier: GPL-2.0-only

//! The two tables rdmavt's post-send path reads from the driver, indexed by `ib_wr_opcode`.
//!
//! `rvt_post_one_wr()` rejects an opcode whose `post_parms` entry has no length or does not
//! list the QP's type, copies `length` bytes of the work request into the send queue, and the
//! send engine reports its completion with the `wc_opcode` entry. The entries are hfi1's
//! (`hfi1_post_parms` in hfi1/qp.c, `ib_hfi1_wc_opcode` in hfi1/verbs.c) without hfi1's own
//! extensions (OPFN and TID RDMA), which need its hardware.

use crate::bindings::{
    ib_atomic_wr, ib_qp_type, ib_rdma_wr, ib_reg_wr, ib_send_wr, ib_wc_opcode, ib_wr_opcode,
    rvt_operation_params, RVT_OPERATION_ATOMIC, RVT_OPERATION_ATOMIC_SGE, RVT_OPERATION_LOCAL,
};
use core::mem::size_of;

/// `RVT_OPERATION_MAX` of rdmavt_qp.h, a macro bindgen cannot evaluate: the table length
/// rdmavt assumes for `post_parms`.
const OPERATION_MAX: usize = ib_wr_opcode::IB_WR_RESERVED10.0 as usize + 1;

/// The bit of `qpt` in `rvt_operation_params::qpt_support`.
const fn qpt(qpt: ib_qp_type) -> u32 {
    1 << qpt.0
}

const CONNECTED: u32 = qpt(ib_qp_type::IB_QPT_UC) | qpt(ib_qp_type::IB_QPT_RC);
const RC_ONLY: u32 = qpt(ib_qp_type::IB_QPT_RC);
const ANY_QPT: u32 = qpt(ib_qp_type::IB_QPT_UD)
    | qpt(ib_qp_type::IB_QPT_SMI)
    | qpt(ib_qp_type::IB_QPT_GSI)
    | CONNECTED;

/// An opcode rvt_loop does not support: rdmavt refuses to post it.
const UNSUPPORTED: rvt_operation_params = rvt_operation_params {
    length: 0,
    qpt_support: 0,
    flags: 0,
};

const fn op(length: usize, qpt_support: u32, flags: u32) -> rvt_operation_params {
    rvt_operation_params {
        length,
        qpt_support,
        flags,
    }
}

const fn post_parms() -> [rvt_operation_params; OPERATION_MAX] {
    let mut t = [UNSUPPORTED; OPERATION_MAX];
    let atomic = RVT_OPERATION_ATOMIC | RVT_OPERATION_ATOMIC_SGE;

    t[ib_wr_opcode::IB_WR_RDMA_WRITE.0 as usize] = op(size_of::<ib_rdma_wr>(), CONNECTED, 0);
    t[ib_wr_opcode::IB_WR_RDMA_READ.0 as usize] =
        op(size_of::<ib_rdma_wr>(), RC_ONLY, RVT_OPERATION_ATOMIC);
    t[ib_wr_opcode::IB_WR_ATOMIC_CMP_AND_SWP.0 as usize] =
        op(size_of::<ib_atomic_wr>(), RC_ONLY, atomic);
    t[ib_wr_opcode::IB_WR_ATOMIC_FETCH_AND_ADD.0 as usize] =
        op(size_of::<ib_atomic_wr>(), RC_ONLY, atomic);
    t[ib_wr_opcode::IB_WR_RDMA_WRITE_WITH_IMM.0 as usize] =
        op(size_of::<ib_rdma_wr>(), CONNECTED, 0);
    t[ib_wr_opcode::IB_WR_SEND.0 as usize] = op(size_of::<ib_send_wr>(), ANY_QPT, 0);
    t[ib_wr_opcode::IB_WR_SEND_WITH_IMM.0 as usize] = op(size_of::<ib_send_wr>(), ANY_QPT, 0);
    t[ib_wr_opcode::IB_WR_REG_MR.0 as usize] =
        op(size_of::<ib_reg_wr>(), CONNECTED, RVT_OPERATION_LOCAL);
    t[ib_wr_opcode::IB_WR_LOCAL_INV.0 as usize] =
        op(size_of::<ib_send_wr>(), CONNECTED, RVT_OPERATION_LOCAL);
    t[ib_wr_opcode::IB_WR_SEND_WITH_INV.0 as usize] = op(size_of::<ib_send_wr>(), RC_ONLY, 0);
    t
}

/// `rvt_dev_info::post_parms`: which work requests may be posted to which QP types.
pub(crate) static POST_PARMS: [rvt_operation_params; OPERATION_MAX] = post_parms();

const fn wc_opcode() -> [ib_wc_opcode; OPERATION_MAX] {
    // Entries for opcodes that POST_PARMS refuses are never read.
    let mut t = [ib_wc_opcode::IB_WC_SEND; OPERATION_MAX];

    t[ib_wr_opcode::IB_WR_RDMA_WRITE.0 as usize] = ib_wc_opcode::IB_WC_RDMA_WRITE;
    t[ib_wr_opcode::IB_WR_RDMA_WRITE_WITH_IMM.0 as usize] = ib_wc_opcode::IB_WC_RDMA_WRITE;
    t[ib_wr_opcode::IB_WR_SEND.0 as usize] = ib_wc_opcode::IB_WC_SEND;
    t[ib_wr_opcode::IB_WR_SEND_WITH_IMM.0 as usize] = ib_wc_opcode::IB_WC_SEND;
    t[ib_wr_opcode::IB_WR_RDMA_READ.0 as usize] = ib_wc_opcode::IB_WC_RDMA_READ;
    t[ib_wr_opcode::IB_WR_ATOMIC_CMP_AND_SWP.0 as usize] = ib_wc_opcode::IB_WC_COMP_SWAP;
    t[ib_wr_opcode::IB_WR_ATOMIC_FETCH_AND_ADD.0 as usize] = ib_wc_opcode::IB_WC_FETCH_ADD;
    t[ib_wr_opcode::IB_WR_SEND_WITH_INV.0 as usize] = ib_wc_opcode::IB_WC_SEND;
    t[ib_wr_opcode::IB_WR_LOCAL_INV.0 as usize] = ib_wc_opcode::IB_WC_LOCAL_INV;
    t[ib_wr_opcode::IB_WR_REG_MR.0 as usize] = ib_wc_opcode::IB_WC_REG_MR;
    t
}

/// `rvt_dev_info::wc_opcode`: the completion opcode of each work request opcode.
pub(crate) static WC_OPCODE: [ib_wc_opcode; OPERATION_MAX] = wc_opcode();
