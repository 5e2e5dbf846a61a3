// SPDX-License-Identifier: GPL-2.0-only

//! Step 1 of the loopback, the sender (see [`super`] for the steps and their locks): the
//! destination lookup, then, with the sender's `s_lock` held (and its `r_lock` before it to
//! move it to the error state), the completion of the WQE the responder step handled (or the
//! RNR timer armed for it, or the error state) and the choice of the next WQE, marked in
//! progress.

use crate::compat::rcu;

use super::Delivery;
use crate::{
    cq::WcStatus,
    device::Port,
    qp::{
        self, raise_last_wqe_reached, state_ops, ErrorOutcome, Locked, Qp, RecvGuard, SendEngine,
        SendGuard, Swqe,
    },
};

/// The destination QP of `sqp`, `rvt_lookup_qpn()`.
pub(super) fn lookup<'a>(sqp: &Qp, port: &Port, rcu: &'a rcu::Guard) -> Option<&'a Qp> {
    // Read without a lock, as C does.
    qp::lookup(sqp.device(), port, sqp.remote_qpn_unlocked(), rcu)
}

/// Step 1, the sender, with its `s_lock` held: finishes the WQE the previous step delivered
/// (if any), then picks the next WQE to deliver. `None`: the loopback is done, and the send
/// engine given back. After a failed delivery, which moves an RC sender to the error state and
/// so flushes its receive queue, the sender's `r_lock` is taken too, first; C takes it only
/// then as well (inside `s_lock`, the wrong order). A completion that finds the send CQ full
/// needs `r_lock` too: it takes it if it is free, or leaves the error state to the workqueue
/// (`Qp::error_from_send`).
pub(super) fn sender_step<'a>(
    sqp: &'a Qp,
    port: &Port,
    prev: Option<(SendEngine<'a>, &'a Swqe, Delivery)>,
) -> Option<(SendEngine<'a>, &'a Swqe)> {
    let (busy, r, s) = match prev {
        None => {
            let mut s = sqp.s_lock();
            let busy = SendEngine::claim(&mut s)?;
            (busy, None, s)
        }
        Some((busy, wqe, Delivery::Done { status, local_op })) => {
            let mut s = sqp.s_lock();
            port.count_loop_pkt();
            complete_send(None, &mut s, wqe, status);
            if local_op {
                sqp.local_op_done();
            }
            (busy, None, s)
        }
        Some((busy, _, Delivery::RnrNak { aeth })) => {
            let mut s = sqp.s_lock();
            // As C: the timer is armed only while the sender may still receive (not in the
            // error state, whose flush a new call of the loopback does).
            if state_ops(s.state()).process_recv_ok() {
                s.add_rnr_timer(aeth);
            }
            return stop(busy, None, s, false);
        }
        Some((busy, wqe, Delivery::Failed(status))) => {
            let mut r = sqp.r_lock();
            let mut s = sqp.s_lock();
            // SAFETY: `wqe` is the sender's WQE at `s_last`; `s_lock` and `r_lock` are held.
            unsafe { sqp.send_complete(&mut s, Some(&mut r), wqe, status) };
            if sqp.is_rc() {
                let outcome = sqp.error(&mut r, &mut s, WcStatus::IB_WC_WR_FLUSH_ERR);
                return stop(busy, Some(r), s, outcome == ErrorOutcome::LastWqe);
            }
            (busy, Some(r), s)
        }
    };
    next(busy, r, s)
}

/// Picks the next WQE with the sender's locks held (`r_lock` if `r`), or gives the send engine
/// back when there is none.
fn next<'a>(
    busy: SendEngine<'a>,
    mut r: Option<RecvGuard<'a>>,
    mut s: SendGuard<'a>,
) -> Option<(SendEngine<'a>, &'a Swqe)> {
    let next = match next_wqe(r.as_mut(), &mut s) {
        Some(wqe) => Some((busy, wqe)),
        None => {
            busy.release(&mut s);
            None
        }
    };
    drop(s);
    drop(r);
    next
}

/// Gives the send engine back and drops the sender's locks; `event`: then raises
/// IB_EVENT_QP_LAST_WQE_REACHED (an SRQ's QP entered the error state).
fn stop<'a>(
    busy: SendEngine<'a>,
    r: Option<RecvGuard<'a>>,
    mut s: SendGuard<'a>,
    event: bool,
) -> Option<(SendEngine<'a>, &'a Swqe)> {
    let sqp = s.qp();
    busy.release(&mut s);
    drop(s);
    drop(r);
    if event {
        raise_last_wqe_reached(sqp);
    }
    None
}

/// Completes `wqe` with `status` and rearms the RNR retries for the next WQE; `r`: the
/// sender's `r_lock`, when held.
fn complete_send(
    r: Option<&mut RecvGuard<'_>>,
    s: &mut SendGuard<'_>,
    wqe: &Swqe,
    status: WcStatus,
) {
    *s.s_rnr_retry_mut() = s.s_rnr_retry_cnt();
    // SAFETY: `wqe` is the sender's WQE at `s_last`; `s_lock` is held, and `r_lock` if `r`.
    unsafe { s.qp().send_complete(s, r, wqe, status) };
}

/// The next WQE to deliver, marked in progress (`s_cur` past it). In a state that flushes
/// the send queue, each WQE is completed with IB_WC_WR_FLUSH_ERR instead. `None`: nothing
/// (more) to do.
fn next_wqe<'a>(mut r: Option<&mut RecvGuard<'a>>, s: &mut SendGuard<'a>) -> Option<&'a Swqe> {
    let qp = s.qp();
    loop {
        let (last, head) = (s.s_last(), qp.s_head_acquire());
        if last == head {
            return None;
        }
        // SAFETY: `s_last` is a slot of the queue, between `s_last` and `s_head`: posted, and
        // it completes only through the send engine, which this caller holds.
        let wqe = unsafe { s.swqe(last) };
        let ops = state_ops(s.state());
        if !ops.process_next_send_ok() {
            if !ops.flush_send() {
                return None;
            }
            complete_send(r.as_deref_mut(), s, wqe, WcStatus::IB_WC_WR_FLUSH_ERR);
            continue;
        }
        // The WQE at `s_last` does not change until `s_last` moves.
        if s.s_cur() == last {
            *s.s_cur_mut() = if last + 1 >= qp.s_size() { 0 } else { last + 1 };
        }
        return Some(wqe);
    }
}
