// SPDX-License-Identifier: GPL-2.0-only

//! `rvt_ruc_loopback`: an RC or UC send queue whose destination QP is on the same device,
//! executed without a wire. Each send WQE is delivered to the destination (a receive WQE
//! consumed, memory written, read or atomically changed) and completed on both sides, with
//! the statuses the IB requester and responder would produce. See the module documentation
//! of [`super`] for the steps and their locks.

use kernel::{
    ffi::c_int,
    sync::{
        atomic::{atomic_load, Atomic, Relaxed},
        rcu,
    },
};

use super::responder::deliver;
use crate::{
    bindings::{self, ib_wc_status},
    device::Port,
    macros::c_export,
    qp::{raise_event, ErrorOutcome, Qp, RecvGuard, SendGuard},
};

/// `ib_rvt_state_ops[state]`: what a QP may do in `state` (`RVT_POST_*`, `RVT_PROCESS_*`,
/// `RVT_FLUSH_*` bits).
pub(super) fn state_ops(state: u32) -> u32 {
    if state > bindings::ib_qp_state::IB_QPS_ERR.0 {
        return 0;
    }
    // SAFETY: the exported table has an entry for every state up to IB_QPS_ERR and is
    // never written.
    let ops = unsafe {
        *(&raw const bindings::ib_rvt_state_ops)
            .cast::<c_int>()
            .add(state as usize)
    };
    // CAST: a set of flag bits.
    ops as u32
}

/// Adds one to a port counter. C increments them without a lock; here the increment is at
/// least atomic, and readers (hfi1's counters) still read them plainly.
pub(super) fn count(counter: *mut u64) {
    // SAFETY: a counter of a live port; every write to it from Rust is atomic.
    unsafe { Atomic::from_ptr(counter) }.add(1, Relaxed);
}

/// The sender's send engine, owned by this loopback call.
///
/// # Invariants
///
/// This call set `RVT_S_BUSY` in the QP's `s_flags` (with `s_lock` held) and nobody else
/// clears it: every caller of the loopback and of the driver's send engine stays out while it
/// is set, so the fields only the send engine uses (`s_sge`, `s_len`, `s_rnr_retry`) are
/// ours without a lock, as in C.
pub(super) struct Busy<'a> {
    pub(super) qp: &'a Qp,
}

impl<'a> Busy<'a> {
    /// Claims the send engine, unless it is busy, waiting (for an RNR timer, credits, ...),
    /// or the QP's state neither processes nor flushes sends.
    fn claim(s: &mut SendGuard<'a>) -> Option<Self> {
        if s.flags() & (bindings::RVT_S_BUSY | bindings::RVT_S_ANY_WAIT) != 0
            || state_ops(s.state()) & bindings::RVT_PROCESS_OR_FLUSH_SEND == 0
        {
            return None;
        }
        s.set_flags(bindings::RVT_S_BUSY);
        // INVARIANT: we set RVT_S_BUSY, with `s_lock` held.
        Some(Self { qp: s.qp() })
    }

    /// Gives the send engine back.
    fn release(self, s: &mut SendGuard<'_>) {
        s.clear_flags(bindings::RVT_S_BUSY);
    }

    fn raw(&self) -> *mut bindings::rvt_qp {
        self.qp.as_raw()
    }

    /// The sender's SGE state, `s_sge`.
    pub(super) fn s_sge(&mut self) -> &mut bindings::rvt_sge_state {
        // SAFETY: the busy owner's field (type invariant).
        unsafe { &mut (*self.raw()).s_sge }
    }

    /// The bytes of the current WQE not yet moved, `s_len`.
    pub(super) fn s_len(&mut self) -> &mut u32 {
        // SAFETY: the busy owner's field (type invariant).
        unsafe { &mut (*self.raw()).s_len }
    }

    /// The RNR retries left for the current WQE, `s_rnr_retry`.
    pub(super) fn rnr_retry(&mut self) -> &mut u8 {
        // SAFETY: the busy owner's field (type invariant).
        unsafe { &mut (*self.raw()).s_rnr_retry }
    }

    /// The RNR retry count of the QP's attributes (7: retry for ever).
    pub(super) fn rnr_retry_cnt(&self) -> u8 {
        // SAFETY: set by modify_qp; read without a lock as C does.
        unsafe { (*self.raw()).s_rnr_retry_cnt }
    }
}

/// How the responder step ended for one send WQE.
#[derive(Clone, Copy)]
pub(super) enum Delivery {
    /// Done: complete the send WQE with `status`. `local_op`: it was a local invalidate
    /// counted in `local_ops_pending`.
    Done {
        status: ib_wc_status,
        local_op: bool,
    },
    /// The responder has no receive WQE (RC): arm the RNR timer with this AETH, stop.
    RnrNak { aeth: u32 },
    /// Failed: complete the send WQE with `status`; an RC sender then goes to the error
    /// state.
    Failed(ib_wc_status),
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
    // SAFETY: `port_num` is set by modify_qp; read without a lock as C does.
    let port_num = u32::from(unsafe { (*sqp.as_raw()).port_num });
    let Ok(port) = sqp.device().port(port_num) else {
        return;
    };
    // The destination stays alive while the RCU read lock is held (destroy waits for it).
    let rcu = rcu::read_lock();
    let dest = lookup(sqp, port, &rcu);
    let mut current = sender_step(sqp, port, None);
    while let Some((mut busy, wqe)) = current {
        let delivery = deliver(&mut busy, dest, port, wqe);
        current = sender_step(sqp, port, Some((busy, wqe, delivery)));
    }
}
c_export!(rvt_ruc_loopback);

/// The destination QP of `sqp`, `rvt_lookup_qpn()`.
fn lookup<'a>(sqp: &Qp, port: &Port, _rcu: &'a rcu::Guard) -> Option<&'a Qp> {
    // SAFETY: `remote_qpn` is set by modify_qp; read without a lock as C does.
    let qpn = unsafe { (*sqp.as_raw()).remote_qpn };
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
fn sender_step<'a>(
    sqp: &'a Qp,
    port: &Port,
    prev: Option<(Busy<'a>, *mut bindings::rvt_swqe, Delivery)>,
) -> Option<(Busy<'a>, *mut bindings::rvt_swqe)> {
    let r = sqp.r_lock();
    let mut s = sqp.s_lock();
    let busy = match prev {
        None => Busy::claim(&mut s)?,
        Some((busy, wqe, delivery)) => match finish(&r, &mut s, port, wqe, delivery) {
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
    match next_wqe(&r, &mut s) {
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
    r: &RecvGuard<'_>,
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
            complete_send(s, wqe, status);
            if local_op {
                // SAFETY: an atomic_t of a live QP, incremented when the WQE was posted.
                unsafe { Atomic::from_ptr(&raw mut (*s.raw()).local_ops_pending.counter) }
                    .add(-1, Relaxed);
            }
            Finished::Next
        }
        Delivery::RnrNak { aeth } => {
            // As C: the timer is armed only while the sender may still receive (not in the
            // error state, whose flush a new call of the loopback does).
            if state_ops(s.state()) & bindings::RVT_PROCESS_RECV_OK != 0 {
                // SAFETY: `s_lock` is held, as rvt_add_rnr_timer requires.
                unsafe { bindings::rvt_add_rnr_timer(s.raw(), aeth) };
            }
            Finished::Stop(false)
        }
        Delivery::Failed(status) => {
            // SAFETY: `s_lock` and `r_lock` are held, as rvt_send_complete requires.
            unsafe { bindings::rvt_send_complete(s.raw(), wqe, status) };
            if sqp.qp_type() != bindings::ib_qp_type::IB_QPT_RC {
                return Finished::Next;
            }
            let outcome = sqp.error(r, s, ib_wc_status::IB_WC_WR_FLUSH_ERR);
            Finished::Stop(outcome == ErrorOutcome::LastWqe)
        }
    }
}

/// Completes `wqe` with `status` and rearms the RNR retries for the next WQE.
fn complete_send(s: &mut SendGuard<'_>, wqe: *mut bindings::rvt_swqe, status: ib_wc_status) {
    let qp = s.raw();
    // SAFETY: the fields are the send engine's, and `s_lock` and `r_lock` are held, as
    // rvt_send_complete requires.
    unsafe {
        (*qp).s_rnr_retry = (*qp).s_rnr_retry_cnt;
        bindings::rvt_send_complete(qp, wqe, status);
    }
}

/// The next WQE to deliver, marked in progress (`s_cur` past it). In a state that flushes
/// the send queue, each WQE is completed with IB_WC_WR_FLUSH_ERR instead. `None`: nothing
/// (more) to do.
fn next_wqe(_r: &RecvGuard<'_>, s: &mut SendGuard<'_>) -> Option<*mut bindings::rvt_swqe> {
    let qp = s.raw();
    loop {
        // SAFETY: `s_last`, `s_cur` and `s_size` are protected by `s_lock`, held; `s_head` is
        // the poster's, read once (C's READ_ONCE).
        let (last, head) = unsafe { ((*qp).s_last, atomic_load(&raw mut (*qp).s_head, Relaxed)) };
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
            complete_send(s, wqe, ib_wc_status::IB_WC_WR_FLUSH_ERR);
            continue;
        }
        // SAFETY: as above; the WQE at `s_last` does not change until `s_last` moves.
        unsafe {
            if (*qp).s_cur == last {
                (*qp).s_cur = if last + 1 >= (*qp).s_size {
                    0
                } else {
                    last + 1
                };
            }
        }
        return Some(wqe);
    }
}

/// A successful send completion.
pub(super) fn done() -> Delivery {
    Delivery::Done {
        status: ib_wc_status::IB_WC_SUCCESS,
        local_op: false,
    }
}
