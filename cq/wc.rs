// SPDX-License-Identifier: GPL-2.0-only

//! The work completions rdmavt itself enters (`struct ib_wc`): send completions, receive
//! completions at the responder, and flushes, each built from what it reports and entered on
//! its CQ.

use kernel::ffi::c_int;

use super::{Cq, WcStatus};
use crate::bindings;

/// A work completion's opcode (`IB_WC_*`), bindgen's newtype over C's `enum ib_wc_opcode`.
pub(crate) use crate::bindings::ib_wc_opcode as WcOpcode;

/// What a request adds to the receive completion of the WQE it consumed.
#[derive(Clone, Copy)]
pub(crate) enum RecvExtra {
    /// Nothing.
    None,
    /// SEND_WITH_IMM or RDMA_WRITE_WITH_IMM: the immediate data, in network order.
    Imm(u32),
    /// SEND_WITH_INV: the rkey it invalidated.
    Invalidated(u32),
}

/// A work completion being built: zero but for what its methods set.
pub(crate) struct Wc(bindings::ib_wc);

impl Wc {
    /// A completion of the request `wr_id` of the QP `ibqp` with `opcode` and `status`.
    pub(crate) fn new(
        ibqp: *mut bindings::ib_qp,
        wr_id: u64,
        opcode: WcOpcode,
        status: WcStatus,
    ) -> Self {
        // SAFETY: all-zero is a valid `ib_wc`: C integers, null pointers, and enums whose
        // zero is a value (IB_WC_SUCCESS, IB_WC_SEND).
        let mut wc: bindings::ib_wc = unsafe { core::mem::zeroed() };
        wc.__bindgen_anon_1.wr_id = wr_id;
        wc.opcode = opcode;
        wc.status = status;
        wc.qp = ibqp;
        Self(wc)
    }

    /// The bytes transferred.
    pub(crate) fn byte_len(mut self, byte_len: u32) -> Self {
        self.0.byte_len = byte_len;
        self
    }

    /// The immediate data or invalidated rkey of a receive completion.
    pub(crate) fn extra(mut self, extra: RecvExtra) -> Self {
        let (flags, ex) = match extra {
            RecvExtra::None => return self,
            RecvExtra::Imm(imm_data) => (
                bindings::ib_wc_flags_IB_WC_WITH_IMM,
                bindings::ib_wc__bindgen_ty_2 { imm_data },
            ),
            RecvExtra::Invalidated(invalidate_rkey) => (
                bindings::ib_wc_flags_IB_WC_WITH_INVALIDATE,
                bindings::ib_wc__bindgen_ty_2 { invalidate_rkey },
            ),
        };
        // CAST: the completion flags are bits of an int.
        self.0.wc_flags = flags as c_int;
        self.0.ex = ex;
        self
    }

    /// Where a receive completion's message came from: the sender's QPN, its LID (16 bits
    /// of the address vector's DLID) and service level, on port 1.
    pub(crate) fn source(mut self, src_qp: u32, ah: &bindings::rdma_ah_attr) -> Self {
        self.0.src_qp = src_qp;
        self.0.slid = crate::ah::dlid(ah) & 0xffff;
        self.0.sl = ah.sl;
        self.0.port_num = 1;
        self
    }
}

impl Cq {
    /// `rvt_cq_enter` of a completion rdmavt built; false if the CQ was full.
    pub(crate) fn enter_wc(&self, wc: &Wc, solicited: bool) -> bool {
        self.enter(&wc.0, solicited)
    }
}
