// SPDX-License-Identifier: GPL-2.0-only

//! The error state: `rvt_error_qp`, which stops a QP and flushes both of its queues; its
//! deferred form for a full send CQ met without `r_lock`; and the responder's entry points
//! that raise an event or the error state (`rvt_comm_est`, `rvt_rc_error`).

use kernel::{ffi::c_int, prelude::*};

use crate::compat::aref::ARef;

use super::{Qp, RecvGuard, SendGuard};
use crate::{bindings, device::log::rvt_err_ratelimited, macros::c_export};

/// What entering the error state asks the caller to do next.
#[derive(Clone, Copy, PartialEq, Eq)]
pub(crate) enum ErrorOutcome {
    /// Nothing more: the receive queue was flushed here, or the QP was already stopped.
    Done,
    /// The QP takes its receives from an SRQ and has an event handler: the caller raises
    /// IB_EVENT_QP_LAST_WQE_REACHED once it has dropped the QP locks.
    LastWqe,
}

impl Qp {
    /// Moves the QP to the error state, with both locks C requires held.
    pub(crate) fn error(
        &self,
        r: &mut RecvGuard<'_>,
        s: &mut SendGuard<'_>,
        err: bindings::ib_wc_status,
    ) -> ErrorOutcome {
        let err_state = bindings::ib_qp_state::IB_QPS_ERR.0;
        let reset = bindings::ib_qp_state::IB_QPS_RESET.0;
        let state = s.state();
        if state == err_state || state == reset {
            return ErrorOutcome::Done;
        }
        s.set_state(r, err_state as u8);
        self.stop_sending(r, s);
        self.clear_mr_refs(r, s, false);
        self.complete_active_receive(r, err);
        if self.own_rq().is_some() {
            super::recv::flush(self);
            // SAFETY: `event_handler` is set by ib_core at creation and fixed.
        } else if unsafe { (*self.ibqp()).event_handler }.is_some() {
            return ErrorOutcome::LastWqe;
        }
        ErrorOutcome::Done
    }

    /// Stops the timers and send waits, tells the driver, and has it drain the send queue
    /// (each WQE left completes with IB_WC_WR_FLUSH_ERR).
    fn stop_sending(&self, r: &RecvGuard<'_>, s: &mut SendGuard<'_>) {
        let f = self.device().driver();
        if s.flags() & (bindings::RVT_S_TIMER | bindings::RVT_S_WAIT_RNR) != 0 {
            s.clear_flags(bindings::RVT_S_TIMER | bindings::RVT_S_WAIT_RNR);
            // SAFETY: the retry timer was set up at creation; deleting it needs no lock.
            unsafe { bindings::timer_delete(self.s_timer()) };
        }
        s.clear_flags(bindings::RVT_S_ANY_WAIT_SEND);
        f.notify_error_qp(self, r, s);
        // `s_head` may only grow meanwhile: what is queued is drained.
        if s.s_last() != self.s_head_acquire() {
            f.schedule_send(self, s);
        }
    }

    /// Completes the receive in progress, if any, with `err`.
    fn complete_active_receive(&self, r: &RecvGuard<'_>, err: bindings::ib_wc_status) {
        if self.test_and_clear_r_aflag(bindings::RVT_R_WRID_VALID) {
            super::recv::complete(self, r.r_wr_id(), err);
        }
    }
}

/// `rvt_error_qp`, for drivers: returns 1 when the caller must raise
/// IB_EVENT_QP_LAST_WQE_REACHED (see [`ErrorOutcome::LastWqe`]).
///
/// # Safety
///
/// `qp` is a live QP of ours, and the caller holds its `r_lock` and `s_lock` with interrupts
/// disabled (lockdep checks it, as in C).
#[no_mangle]
pub(crate) unsafe extern "C" fn rvt_error_qp(
    qp: *mut bindings::rvt_qp,
    err: bindings::ib_wc_status,
) -> c_int {
    // SAFETY: a live QP of ours (caller's guarantee).
    let qp = unsafe { Qp::from_raw(qp) };
    // SAFETY: the caller holds both locks during the call (lockdep checks it).
    let (mut r, mut s) = unsafe { (qp.assume_r_locked(), qp.assume_s_locked()) };
    let outcome = qp.error(&mut r, &mut s, err);
    c_int::from(outcome == ErrorOutcome::LastWqe)
}
c_export!(rvt_error_qp);

/// Raises IB_EVENT_QP_LAST_WQE_REACHED, for a QP with an SRQ that entered the error state
/// ([`ErrorOutcome::LastWqe`]); without the QP's locks.
pub(crate) fn raise_last_wqe_reached(qp: &Qp) {
    raise_event(qp, bindings::ib_event_type::IB_EVENT_QP_LAST_WQE_REACHED);
}

/// Raises IB_EVENT_PATH_MIG, for a QP that `modify_qp` moved to its alternate path; without
/// the QP's locks.
pub(crate) fn raise_path_migrated(qp: &Qp) {
    raise_event(qp, bindings::ib_event_type::IB_EVENT_PATH_MIG);
}

/// Raises IB_EVENT_QP_LAST_WQE_REACHED (or another QP event) with the QP's handler, which
/// must be called without the QP's locks.
pub(crate) fn raise_event(qp: &Qp, event: bindings::ib_event_type) {
    let ibqp = qp.ibqp();
    // SAFETY: a live QP; its handler and context are set by ib_core at creation and fixed.
    // All-zero is a valid `ib_event` (null pointers, C integers and enums).
    unsafe {
        let Some(handler) = (*ibqp).event_handler else {
            return;
        };
        let mut ev: bindings::ib_event = core::mem::zeroed();
        ev.device = (*ibqp).device;
        ev.element.qp = ibqp;
        ev.event = event;
        handler(&mut ev, (*ibqp).qp_context);
    }
}

/// A QP to move to the error state from the module's workqueue, for a full send CQ met where
/// `r_lock` could not be taken (see [`Qp::error_from_send`]). The reference it holds keeps the
/// QP alive, and `destroy_qp` waiting, until the work has run.
#[repr(C)]
pub(super) struct DeferredError {
    /// First, so that the work item's address is the struct's.
    work: bindings::work_struct,
    qp: ARef<Qp>,
}

impl DeferredError {
    pub(super) fn queue(qp: &Qp) {
        let wq = crate::cq::module_wq();
        let d = KBox::new(
            Self {
                work: bindings::work_struct::default(),
                qp: qp.into(),
            },
            GFP_ATOMIC,
        );
        let (Ok(d), false) = (d, wq.is_null()) else {
            rvt_err_ratelimited!(
                qp.device(),
                c"rvt_send_complete",
                "QP {}: send CQ full; no memory to move the QP to the error state\n",
                qp.qpn()
            );
            return;
        };
        let d = KBox::into_raw(d);
        // SAFETY: `d` is ours until the work runs, which then owns it; the workqueue lives
        // until the module's exit, which flushes it.
        unsafe {
            bindings::rdmavt_rs_init_work(&raw mut (*d).work, Some(Self::run));
            bindings::rdmavt_rs_queue_work(wq, &raw mut (*d).work);
        }
    }

    /// # Safety
    ///
    /// Only the workqueue calls this, for a work item `queue` made.
    unsafe extern "C" fn run(work: *mut bindings::work_struct) {
        // SAFETY: `work` is the first field of the `DeferredError` that `queue` leaked into
        // the workqueue, which gives it back here once.
        let d = unsafe { KBox::from_raw(work.cast::<Self>()) };
        let outcome = {
            let mut r = d.qp.r_lock();
            let mut s = d.qp.s_lock();
            d.qp.error(&mut r, &mut s, bindings::ib_wc_status::IB_WC_LOC_QP_OP_ERR)
        };
        if outcome == ErrorOutcome::LastWqe {
            raise_event(&d.qp, bindings::ib_event_type::IB_EVENT_QP_LAST_WQE_REACHED);
        }
    }
}

/// `rvt_comm_est`: the first packet arrived on a QP in RTR; tells the consumer.
///
/// # Safety
///
/// `qp` is a live QP of ours whose `r_lock` the caller (the receive path) holds.
#[no_mangle]
pub(crate) unsafe extern "C" fn rvt_comm_est(qp: *mut bindings::rvt_qp) {
    // SAFETY: a live QP of ours (caller's guarantee).
    let qp = unsafe { Qp::from_raw(qp) };
    // SAFETY: the caller holds `r_lock` for the whole call.
    let mut r = unsafe { qp.assume_r_locked() };
    *r.r_flags_mut() |= bindings::RVT_R_COMM_EST as u8;
    raise_event(qp, bindings::ib_event_type::IB_EVENT_COMM_EST);
}
c_export!(rvt_comm_est);

/// `rvt_rc_error`: an RC protocol error puts the QP in the error state.
///
/// # Safety
///
/// `qp` is a live QP of ours whose `r_lock` the caller (the receive path) holds, and not its
/// `s_lock`.
#[no_mangle]
pub(crate) unsafe extern "C" fn rvt_rc_error(
    qp: *mut bindings::rvt_qp,
    err: bindings::ib_wc_status,
) {
    // SAFETY: a live QP of ours (caller's guarantee).
    let qp = unsafe { Qp::from_raw(qp) };
    // SAFETY: the caller holds `r_lock` for the whole call.
    let mut r = unsafe { qp.assume_r_locked() };
    let outcome = {
        let mut s = qp.s_lock();
        qp.error(&mut r, &mut s, err)
    };
    if outcome == ErrorOutcome::LastWqe {
        raise_event(qp, bindings::ib_event_type::IB_EVENT_QP_LAST_WQE_REACHED);
    }
}
c_export!(rvt_rc_error);
