// SPDX-License-Identifier: GPL-2.0-only

//! `rvt_get_rwqe`: the consumer that drivers (and the loopback) call when a packet needs a
//! receive WQE.

use kernel::ffi::c_int;

use super::{
    flush::complete,
    recv_ops,
    ring::{Corrupt, Rq, Rwqe},
};
use crate::{
    bindings,
    macros::c_export,
    qp::{Qp, RecvGuard},
};

/// What [`Qp::get_wqe`] found.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum GetWqe {
    /// A WQE is now the QP's current receive (`r_wr_id`, and `r_sge` unless only the id was
    /// asked for): C's 1.
    Taken,
    /// No WQE, or the QP takes no receives in its state: C's 0 (the driver sends an RNR NAK).
    Empty,
    /// A local error: a WQE with a bad key or, in a user ring, an index or SGE count that user
    /// space corrupted. C's -1: the caller moves the QP to the error state.
    Error,
}

impl Qp {
    /// `rvt_get_rwqe()`: takes the next receive WQE, from the QP's queue or its SRQ, and arms
    /// the receive state with it; raises IB_EVENT_SRQ_LIMIT_REACHED when an SRQ falls below
    /// its armed limit.
    pub(crate) fn get_wqe(&self, r: &RecvGuard<'_>, wr_id_only: bool) -> GetWqe {
        let srq = self.srq();
        let rq = match srq {
            // SAFETY: the QP holds its SRQ alive (ib_core counts the SRQ's users).
            Some(srq) => unsafe { Rq::of_srq(srq) },
            // SAFETY: the QP's own queue, alive as long as the QP.
            None => unsafe { Rq::of_qp(&raw mut (*self.as_raw()).r_rq) },
        };
        let mut c = rq.consumer();
        if recv_ops(r.state() as u8) & bindings::RVT_PROCESS_RECV_OK == 0 {
            return GetWqe::Empty;
        }
        let wqe = match c.take() {
            Ok(Some(wqe)) => wqe,
            Ok(None) => return GetWqe::Empty,
            Err(Corrupt) => return GetWqe::Error,
        };
        if !wr_id_only && self.init_sge(r, &wqe).is_err() {
            return GetWqe::Error;
        }
        // SAFETY: `r_wr_id` is protected by `r_lock`, held; `r_aflags` bits are atomic.
        unsafe {
            (*r.raw()).r_wr_id = wqe.wr_id;
            bindings::rdmavt_rs_set_bit(
                bindings::RVT_R_WRID_VALID as usize,
                (&raw mut (*r.raw()).r_aflags).cast(),
            );
        }
        let Some(srq) = srq else {
            return GetWqe::Taken;
        };
        // SAFETY: the SRQ is live (see above); its handler is set by ib_core at creation.
        if unsafe { (*srq).ibsrq.event_handler }.is_none() {
            return GetWqe::Taken;
        }
        let limit = c.limit().unwrap_or(0);
        if c.count() < limit {
            // A user ring's corrupt head only withholds the event: the WQE is good.
            let tail = c.tail().unwrap_or(0);
            if c.recount(tail).is_ok_and(|n| n < limit) {
                c.set_limit(0);
                drop(c);
                self.raise_srq_limit(srq);
            }
        }
        GetWqe::Taken
    }

    /// The QP's SRQ, if it has one.
    fn srq(&self) -> Option<*mut bindings::rvt_srq> {
        // SAFETY: `ibqp.srq` is fixed at creation; `ibsrq` is the first member of `rvt_srq`.
        let srq = unsafe { (*self.ibqp()).srq };
        (!srq.is_null()).then_some(srq.cast())
    }

    /// C's `init_sge()`: checks each SGE's lkey for local write and builds `r_sge` and
    /// `r_len`. A bad key, an SGE count a user ring corrupted, or SGE lengths whose sum does
    /// not fit `r_len`'s 32 bits complete the WQE with IB_WC_LOC_PROT_ERR, having dropped the
    /// MR references taken so far.
    fn init_sge(&self, r: &RecvGuard<'_>, wqe: &Rwqe) -> Result<(), Corrupt> {
        let qp = r.raw();
        let res = wqe.num_sge().and_then(|n| self.take_recv_sges(r, wqe, n));
        if res.is_err() {
            // SAFETY: `r_sge` is protected by `r_lock`, held.
            unsafe { (*qp).r_sge.num_sge = 0 };
            complete(self, wqe.wr_id, bindings::ib_wc_status::IB_WC_LOC_PROT_ERR);
        }
        res
    }

    /// The lkey checks of [`Qp::init_sge`] for `n` SGEs (already checked against `max_sge`).
    fn take_recv_sges(&self, r: &RecvGuard<'_>, wqe: &Rwqe, n: u8) -> Result<(), Corrupt> {
        let qp = r.raw();
        let dev = self.device();
        // SAFETY: `r_sge`, `r_sg_list` and `r_len` are protected by `r_lock`, held;
        // `r_sg_list` has room for `max_sge - 1` SGEs, and `j < n <= max_sge`; the QP's PD (or
        // its SRQ's) is live while the QP is.
        unsafe {
            let pd = match self.srq() {
                Some(srq) => (*srq).ibsrq.pd,
                None => (*self.ibqp()).pd,
            };
            let ss = &raw mut (*qp).r_sge;
            (*ss).sg_list = (*qp).r_sg_list;
            (*qp).r_len = 0;
            let mut j = 0usize;
            for i in 0..n {
                let mut sge = wqe.sge(i);
                if sge.length == 0 {
                    continue;
                }
                let isge = if j == 0 {
                    &raw mut (*ss).sge
                } else {
                    (*ss).sg_list.add(j - 1)
                };
                let ok = bindings::rvt_lkey_ok(
                    &raw mut (*dev.as_raw()).lkey_table,
                    pd.cast(),
                    isge,
                    core::ptr::null_mut(),
                    &mut sge,
                    bindings::ib_access_flags_IB_ACCESS_LOCAL_WRITE as c_int,
                );
                if ok <= 0 {
                    put_sges(ss, j);
                    return Err(Corrupt);
                }
                j += 1;
                // A user ring can name one large MR in every SGE, so the sum can pass 4 GiB
                // (the IB maximum message is 2 GiB). C lets it wrap; unchecked here it would
                // be a kernel BUG under the overflow checks. Refused as a corrupt WQE, with
                // the reference this SGE just took given back too.
                let Some(len) = (*qp).r_len.checked_add(sge.length) else {
                    put_sges(ss, j);
                    return Err(Corrupt);
                };
                (*qp).r_len = len;
            }
            (*ss).num_sge = j as u8;
            (*ss).total_len = (*qp).r_len;
        }
        Ok(())
    }

    /// Raises IB_EVENT_SRQ_LIMIT_REACHED on the SRQ's handler (no receive-queue lock held).
    fn raise_srq_limit(&self, srq: *mut bindings::rvt_srq) {
        // SAFETY: the SRQ is live while the QP is; its handler and context are fixed at
        // creation. All-zero is a valid `ib_event`.
        unsafe {
            let ibsrq = &raw mut (*srq).ibsrq;
            let Some(handler) = (*ibsrq).event_handler else {
                return;
            };
            let mut ev: bindings::ib_event = core::mem::zeroed();
            ev.device = (*self.ibqp()).device;
            ev.element.srq = ibsrq;
            ev.event = bindings::ib_event_type::IB_EVENT_SRQ_LIMIT_REACHED;
            handler(&mut ev, (*ibsrq).srq_context);
        }
    }
}

/// Drops the MR references of the first `j` SGEs of `ss` (C's `bad_lkey` unwinding).
///
/// # Safety
///
/// `ss` is a QP's `r_sge` under its `r_lock`, whose first `j` SGEs hold an MR reference.
unsafe fn put_sges(ss: *mut bindings::rvt_sge_state, mut j: usize) {
    while j > 0 {
        j -= 1;
        // SAFETY: the caller's guarantee.
        unsafe {
            let sge = if j == 0 {
                &raw mut (*ss).sge
            } else {
                (*ss).sg_list.add(j - 1)
            };
            bindings::rdmavt_rs_rvt_put_mr((*sge).mr);
        }
    }
}

/// `rvt_get_rwqe`, for drivers: 1 when a WQE was taken, 0 when none is available, -1 on a
/// local error (see [`GetWqe`]).
///
/// # Safety
///
/// `qp` is a live QP of ours, and the caller holds its `r_lock` (lockdep checks it).
#[no_mangle]
pub(crate) unsafe extern "C" fn rvt_get_rwqe(qp: *mut bindings::rvt_qp, wr_id_only: bool) -> c_int {
    // SAFETY: a live QP of ours (caller's guarantee).
    let qp = unsafe { Qp::from_raw(qp) };
    // SAFETY: the caller holds `r_lock` during the call.
    let r = unsafe { qp.assume_r_locked() };
    match qp.get_wqe(&r, wr_id_only) {
        GetWqe::Taken => 1,
        GetWqe::Empty => 0,
        GetWqe::Error => -1,
    }
}
c_export!(rvt_get_rwqe);
