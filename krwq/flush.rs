// SPDX-License-Identifier: GPL-2.0-only

//! Flushing a receive queue when its QP enters the error state.

use super::ring::{next_index, Rq};
use crate::{bindings, qp::Qp};

/// Enters a receive completion of `status` for `wr_id` on the QP's receive CQ (solicited, as
/// C does for every receive error).
pub(crate) fn complete(qp: &Qp, wr_id: u64, status: bindings::ib_wc_status) {
    // SAFETY: all-zero is a valid `ib_wc` (C integers, null pointers, and enums whose zero is
    // IB_WC_SUCCESS/IB_WC_SEND); the QP is live, so its receive CQ is.
    unsafe {
        let mut wc: bindings::ib_wc = core::mem::zeroed();
        wc.qp = qp.ibqp();
        wc.opcode = bindings::ib_wc_opcode::IB_WC_RECV;
        wc.__bindgen_anon_1.wr_id = wr_id;
        wc.status = status;
        bindings::rvt_cq_enter((*qp.ibqp()).recv_cq.cast(), &mut wc, true);
    }
}

/// C's receive-queue flush in `rvt_error_qp()`: completes every receive WQE still queued with
/// IB_WC_WR_FLUSH_ERR and empties the queue. A QP with an SRQ has nothing of its own to flush.
///
/// Indices of a user ring outside the ring count as 0, as in C: the flush stays inside the
/// ring whatever user space wrote, and the QP is going to the error state anyway.
pub(crate) fn flush(qp: &Qp) {
    // SAFETY: `r_rq.kwq` is fixed at creation, NULL with an SRQ.
    if unsafe { (*qp.as_raw()).r_rq.kwq }.is_null() {
        return;
    }
    // SAFETY: the QP's own queue, set up at creation and alive as long as the QP.
    let rq = unsafe { Rq::of_qp(&raw mut (*qp.as_raw()).r_rq) };
    let mut c = rq.consumer();
    let head = c.head().unwrap_or(0);
    let mut tail = c.tail().unwrap_or(0);
    while tail != head {
        // SAFETY: `tail` is a checked index (or 0) and stays one through `next_index`.
        let wr_id = unsafe { c.wqe(tail) }.wr_id;
        tail = next_index(c.size(), tail);
        complete(qp, wr_id, bindings::ib_wc_status::IB_WC_WR_FLUSH_ERR);
    }
    c.set_tail(tail);
    // The cached count goes with the WQEs (C leaves it stale).
    let _ = c.recount(tail);
}
