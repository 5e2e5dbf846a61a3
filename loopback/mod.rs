// SPDX-License-Identifier: GPL-2.0-only

//! Loopback of connected QPs and the data-path helpers drivers share with it:
//! `rvt_ruc_loopback` (an RC or UC request to a QP on the same device, delivered and completed
//! without a wire), `rvt_copy_sge` and `rvt_restart_sge` (walking SGE lists), and
//! `rvt_compute_aeth`/`rvt_get_credit` (RC end-to-end credits).
//!
//! # Lock order
//!
//! The same as the QP's own (see `crate::qp`):
//!
//! ```text
//!   r_lock  ->  s_lock  ->  (a CQ's lock, the receive queue's c_lock: leaves)
//! ```
//!
//! The loopback moves one send WQE at a time in three steps, and no step holds a lock of one
//! QP while it takes a lock of another:
//!
//! 1. the sender, with its `s_lock` (and its `r_lock` before it, to move it to the error state
//!    after a failed delivery): completes the previous WQE (or flushes one, or arms the RNR
//!    timer) and picks the next, marking the QP `RVT_S_BUSY`;
//! 2. the responder, with only the destination's `r_lock` (and, to move it to the error state,
//!    its `s_lock` inside, in order): takes a receive WQE, checks keys, copies the data,
//!    completes the receive;
//! 3. back to 1, which completes the send.
//!
//! Between the steps the sender holds no lock: `RVT_S_BUSY` keeps every other caller of the
//! loopback out, so the fields only the send engine touches (`s_sge`, `s_len`,
//! `s_rnr_retry`) belong to the busy holder (`qp::SendEngine`), as in C. The C rdmavt takes
//! the sender's `r_lock` inside its `s_lock` to flush the sender into the error state, the
//! opposite of `rvt_modify_qp()` and of every receive path; step 1 takes them in order
//! instead, and only then: a plain completion needs `s_lock` alone (one that finds the send
//! CQ full takes `r_lock` if it is free, or leaves the error state to the workqueue). The
//! destination may be the sender itself: step 2 then takes the QP's `r_lock` with nothing
//! held.

mod aeth;
mod responder;
mod ruc;
mod sge;
#[cfg(rdmavt_kunit)]
mod tests;

use crate::compat::rcu;

use crate::{bindings, cq::WcStatus, macros::c_export, qp::Qp};

/// How the responder step ended for one send WQE.
#[derive(Clone, Copy)]
pub(super) enum Delivery {
    /// Done: complete the send WQE with `status`. `local_op`: it was a local invalidate
    /// counted in `local_ops_pending`.
    Done { status: WcStatus, local_op: bool },
    /// The responder has no receive WQE (RC): arm the RNR timer with this AETH, stop.
    RnrNak { aeth: u32 },
    /// Failed: complete the send WQE with `status`; an RC sender then goes to the error
    /// state.
    Failed(WcStatus),
}

impl Delivery {
    /// A successful send completion.
    pub(super) fn done() -> Self {
        Self::Done {
            status: WcStatus::IB_WC_SUCCESS,
            local_op: false,
        }
    }
}

/// `rvt_ruc_loopback`: runs the send queue of `sqp` against its destination QP on the same
/// device until it is empty, blocked (RNR) or failed.
///
/// # Safety
///
/// `sqp` is a live RC or UC QP of ours; the caller holds none of its locks.
#[no_mangle]
pub(crate) unsafe extern "C" fn rvt_ruc_loopback(sqp: *mut bindings::rvt_qp) {
    // SAFETY: a live QP of ours (caller's guarantee).
    let sqp = unsafe { Qp::from_raw(sqp) };
    // Read without a lock, as C does.
    let port_num = u32::from(sqp.port_num_unlocked());
    let Ok(port) = sqp.device().port(port_num) else {
        return;
    };
    // The destination stays alive while the RCU read lock is held (destroy waits for it).
    let rcu = rcu::read_lock();
    let dest = ruc::lookup(sqp, port, &rcu);
    // One call of each step (which the compiler can so inline): the sender's first
    // finishes nothing, each later one the WQE the responder step handled.
    let mut prev = None;
    while let Some((mut busy, wqe)) = ruc::sender_step(sqp, port, prev) {
        let delivery = responder::deliver(&mut busy, dest, port, wqe, &rcu);
        prev = Some((busy, wqe, delivery));
    }
}
c_export!(rvt_ruc_loopback);
