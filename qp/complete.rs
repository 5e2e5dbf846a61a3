// SPDX-License-Identifier: GPL-2.0-only

//! Send completions: `rvt_send_complete` and `rvt_qp_complete_swqe`, which free the send
//! queue slot at `s_last` and report its WQE on the send CQ.

use super::{error::DeferredError, state_ops, Qp, RecvGuard, SendGuard, Swqe};
use crate::{
    bindings,
    cq::{Wc, WcOpcode, WcStatus},
    macros::c_export,
    trace,
};

/// The next slot of the send queue after `n`, wrapping at `s_size` (`rvt_qp_swqe_incr`).
pub(super) fn next_slot(n: u32, s_size: u32) -> u32 {
    // A slot is below `s_size`, so the increment cannot wrap: no overflow check to branch on.
    let next = n.wrapping_add(1);
    if next >= s_size {
        0
    } else {
        next
    }
}

impl Qp {
    /// `rvt_qp_complete_swqe`: releases the WQE at `s_last`, frees its slot, and reports its
    /// completion on the send CQ if it must be reported. Returns the new `s_last`.
    ///
    /// # Safety
    ///
    /// `wqe` is the WQE in slot `s_last`, which the send engine has finished with.
    pub(crate) unsafe fn complete_swqe(
        &self,
        s: &mut SendGuard<'_>,
        r: Option<&mut RecvGuard<'_>>,
        wqe: &Swqe,
        opcode: WcOpcode,
        status: WcStatus,
    ) -> u32 {
        let reserved = wqe.reserve_used();
        if reserved {
            self.reserved_op_done();
        }
        let need_completion = !reserved
            && (s.flags() & bindings::RVT_S_SIGNAL_REQ_WR == 0
                || wqe.signaled()
                || status != WcStatus::IB_WC_SUCCESS);
        let wc = need_completion
            .then(|| Wc::new(self.ibqp(), wqe.wr_id(), opcode, status).byte_len(wqe.length()));
        // SAFETY: the caller guarantees `wqe` is the finished WQE at `s_last`, which stays
        // ours until `s_last` moves past it.
        unsafe { wqe.put_refs(self, s.read_side()) };
        // The WQE was read above: a poster may reuse the slot as soon as `s_last` moves.
        let last = next_slot(s.s_last(), self.s_size());
        s.publish_s_last(last);
        // `rvt_send_cq`: an error completion is entered as solicited.
        let entered = wc.is_none_or(|wc| {
            self.send_cq()
                .enter_wc(&wc, status != WcStatus::IB_WC_SUCCESS)
        });
        if !entered {
            self.error_from_send(s, r);
        }
        last
    }

    /// A full send CQ puts the QP in the error state (IB_WC_LOC_QP_OP_ERR), as in C's
    /// `rvt_send_cq`, which takes `r_lock` as well as the `s_lock` held here. C calls
    /// `rvt_error_qp` there whether `r_lock` is held or not, and its callers (hfi1's send
    /// engines, C's own loopback, rvt_loop's datagrams) hold only `s_lock`: lockdep warns, and
    /// the receive queue is flushed without its lock. Here: with `r` when the caller holds
    /// `r_lock`; else with `r_lock` if it is free now (a try-lock cannot deadlock, whatever the
    /// order); else the module's workqueue does it, taking both locks in order.
    fn error_from_send(&self, s: &mut SendGuard<'_>, r: Option<&mut RecvGuard<'_>>) {
        const ERR: bindings::ib_wc_status = bindings::ib_wc_status::IB_WC_LOC_QP_OP_ERR;
        // Under the caller's locks an SRQ's last-WQE event cannot be raised: as in C, it is
        // not (the deferred error raises it).
        match r {
            Some(r) => {
                self.error(r, s, ERR);
            }
            None => match s.try_r_lock() {
                Some(mut r) => {
                    self.error(&mut r, s, ERR);
                }
                None => DeferredError::queue(self),
            },
        }
    }

    /// `rvt_send_complete`: completes `wqe` (at `s_last`) with `status` and moves every
    /// send-queue index that pointed at it along. `r`: `r_lock`, when the caller holds it.
    ///
    /// # Safety
    ///
    /// As [`Qp::complete_swqe`].
    pub(crate) unsafe fn send_complete(
        &self,
        s: &mut SendGuard<'_>,
        r: Option<&mut RecvGuard<'_>>,
        wqe: &Swqe,
        status: WcStatus,
    ) {
        if !state_ops(s.state()).process_or_flush_send() {
            return;
        }
        // Any opcode `post_send` accepted has an entry.
        let opcode = wqe.wc_opcode(self.device()).unwrap_or(WcOpcode::IB_WC_SEND);
        let old_last = s.s_last();
        // SAFETY: the QP is live; `wqe` is its finished WQE at `s_last` (caller's guarantee).
        unsafe { trace::rvt_qp_send_completion(self.as_raw(), wqe.as_raw(), old_last) };
        // SAFETY: the caller's guarantee.
        let last = unsafe { self.complete_swqe(s, r, wqe, opcode, status) };
        // Every index that pointed at the completed slot moves along with `s_last`.
        let follow = |index: &mut u32| {
            if *index == old_last {
                *index = last;
            }
        };
        follow(s.s_acked_mut());
        follow(s.s_cur_mut());
        follow(s.s_tail_mut());
        if s.state() == bindings::ib_qp_state::IB_QPS_SQD.0 && last == s.s_cur() {
            *s.s_draining_mut() = 0;
        }
    }
}

/// `rvt_send_complete`, for drivers.
///
/// # Safety
///
/// `qp` is a live QP of ours whose `s_lock` the caller holds (`r_lock` too or not: see
/// `Qp::error_from_send`); `wqe` is its finished WQE at `s_last`.
#[no_mangle]
pub(crate) unsafe extern "C" fn rvt_send_complete(
    qp: *mut bindings::rvt_qp,
    wqe: *mut bindings::rvt_swqe,
    status: bindings::ib_wc_status,
) {
    // SAFETY: a live QP of ours (caller's guarantee).
    let qp = unsafe { Qp::from_raw(qp) };
    // SAFETY: the caller holds `s_lock` for the whole call.
    let mut s = unsafe { qp.assume_s_locked() };
    // SAFETY: the caller's guarantee on `wqe`: a posted WQE, at `s_last`.
    unsafe { qp.send_complete(&mut s, None, Swqe::from_raw(wqe), status) };
}
c_export!(rvt_send_complete);
