// SPDX-License-Identifier: GPL-2.0-only

//! Step 1 of the loopback, the sender (see [`super`] for the steps and their locks): the
//! destination lookup, then, with the sender's `r_lock` and `s_lock` held, the completion of
//! the WQE the responder step handled (or the RNR timer armed for it, or the error state) and
//! the choice of the next WQE, marked in progress.

use crate::compat::rcu;

use super::{count, Delivery};
use crate::{
    bindings::{self, ib_wc_status},
    device::Port,
    qp::{raise_event, state_ops, ErrorOutcome, Locked, Qp, RecvGuard, SendEngine, SendGuard},
};

/// The destination QP of `sqp`, `rvt_lookup_qpn()`.
pub(super) fn lookup<'a>(sqp: &Qp, port: &Port, _rcu: &'a rcu::Guard) -> Option<&'a Qp> {
    // Read without a lock, as C does.
    let qpn = sqp.remote_qpn_unlocked();
    // SAFETY: the RCU read lock is held; the device and port are live.
    let qp =
        unsafe { bindings::rdmavt_rs_rvt_lookup_qpn(sqp.device().as_raw(), port.as_raw(), qpn) };
    // SAFETY: a QP in the device's table is live and initialised, and is freed only after an
    // RCU grace period once removed; the reference lives no longer than the read lock.
    (!qp.is_null()).then(|| unsafe { Qp::from_raw(qp) })
}

/// Step 1, the sender, with its `r_lock` and `s_lock` held: finishes the WQE the previous
/// step delivered (if any), then picks the next WQE to deliver. `None`: the loopback is done,
/// and the send engine given back.
pub(super) fn sender_step<'a>(
    sqp: &'a Qp,
    port: &Port,
    prev: Option<(SendEngine<'a>, *mut bindings::rvt_swqe, Delivery)>,
) -> Option<(SendEngine<'a>, *mut bindings::rvt_swqe)> {
    let mut r = sqp.r_lock();
    let mut s = sqp.s_lock();
    let busy = match prev {
        None => SendEngine::claim(&mut s)?,
        Some((busy, wqe, delivery)) => match finish(&mut r, &mut s, port, wqe, delivery) {
            Finished::Next => busy,
            Finished::Stop(event) => {
                busy.release(&mut s);
                drop(s);
                drop(r);
                if event {
                    raise_event(sqp, bindings::ib_event_type::IB_EVENT_QP_LAST_WQE_REACHED);
                }
                return None;
            }
        },
    };
    match next_wqe(&mut r, &mut s) {
        Some(wqe) => Some((busy, wqe)),
        None => {
            busy.release(&mut s);
            None
        }
    }
}

/// What the sender does after finishing a WQE.
enum Finished {
    /// Go on with the next WQE.
    Next,
    /// Stop; `true`: raise IB_EVENT_QP_LAST_WQE_REACHED once the locks are dropped.
    Stop(bool),
}

/// Completes (or requeues, for an RNR NAK) the WQE a responder step handled.
fn finish(
    r: &mut RecvGuard<'_>,
    s: &mut SendGuard<'_>,
    port: &Port,
    wqe: *mut bindings::rvt_swqe,
    delivery: Delivery,
) -> Finished {
    let sqp = s.qp();
    match delivery {
        Delivery::Done { status, local_op } => {
            // SAFETY: a live port.
            count(unsafe { &raw mut (*port.as_raw()).n_loop_pkts });
            complete_send(r, s, wqe, status);
            if local_op {
                sqp.local_op_done();
            }
            Finished::Next
        }
        Delivery::RnrNak { aeth } => {
            // As C: the timer is armed only while the sender may still receive (not in the
            // error state, whose flush a new call of the loopback does).
            if state_ops(s.state()) & bindings::RVT_PROCESS_RECV_OK != 0 {
                s.add_rnr_timer(aeth);
            }
            Finished::Stop(false)
        }
        Delivery::Failed(status) => {
            // SAFETY: `wqe` is the sender's WQE at `s_last`; `s_lock` and `r_lock` are held.
            unsafe { sqp.send_complete(s, Some(r), wqe, status) };
            if sqp.qp_type() != bindings::ib_qp_type::IB_QPT_RC {
                return Finished::Next;
            }
            let outcome = sqp.error(r, s, ib_wc_status::IB_WC_WR_FLUSH_ERR);
            Finished::Stop(outcome == ErrorOutcome::LastWqe)
        }
    }
}

/// Completes `wqe` with `status` and rearms the RNR retries for the next WQE.
fn complete_send(
    r: &mut RecvGuard<'_>,
    s: &mut SendGuard<'_>,
    wqe: *mut bindings::rvt_swqe,
    status: ib_wc_status,
) {
    *s.s_rnr_retry_mut() = s.s_rnr_retry_cnt();
    // SAFETY: `wqe` is the sender's WQE at `s_last`; `s_lock` and `r_lock` are held.
    unsafe { s.qp().send_complete(s, Some(r), wqe, status) };
}

/// The next WQE to deliver, marked in progress (`s_cur` past it). In a state that flushes
/// the send queue, each WQE is completed with IB_WC_WR_FLUSH_ERR instead. `None`: nothing
/// (more) to do.
fn next_wqe(r: &mut RecvGuard<'_>, s: &mut SendGuard<'_>) -> Option<*mut bindings::rvt_swqe> {
    let qp = s.qp();
    loop {
        let (last, head) = (s.s_last(), qp.s_head_acquire());
        if last == head {
            return None;
        }
        // SAFETY: `s_last` is a slot of the queue.
        let wqe = unsafe { s.swqe(last) };
        let ops = state_ops(s.state());
        if ops & bindings::RVT_PROCESS_NEXT_SEND_OK == 0 {
            if ops & bindings::RVT_FLUSH_SEND == 0 {
                return None;
            }
            complete_send(r, s, wqe, ib_wc_status::IB_WC_WR_FLUSH_ERR);
            continue;
        }
        // The WQE at `s_last` does not change until `s_last` moves.
        if s.s_cur() == last {
            *s.s_cur_mut() = if last + 1 >= qp.s_size() { 0 } else { last + 1 };
        }
        return Some(wqe);
    }
}
