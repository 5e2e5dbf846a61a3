// SPDX-License-Identifier: GPL-2.0-only

//! Posting receive WQEs: the `post_recv` verb of a QP and the producer half of
//! `post_srq_recv`.

use kernel::{ffi::c_int, prelude::*};

use super::{
    recv_ops,
    ring::{PostError, Rq},
};
use crate::{bindings, qp::Qp};

/// `ib_device_ops.post_recv`: C's `rvt_post_recv()`.
///
/// A QP in a state that takes no receives, or with an SRQ, gets EINVAL; a WR with more SGEs
/// than the queue's `max_sge` EINVAL; a full queue ENOMEM; `*bad_wr` then names the WR. In the
/// error state each WR completes at once with IB_WC_WR_FLUSH_ERR.
///
/// A user QP's receives normally go straight into its mmap'd ring from user space; should the
/// uverbs command come here anyway, the WR goes into that same ring, at the head user space
/// sees (C would write a kernel-side head that nobody reads).
///
/// # Safety
///
/// Only ib_core calls this, through `RVT_DEV_OPS`, with a live QP of ours, a valid chain of
/// WRs and a valid `bad_wr`.
pub(crate) unsafe extern "C" fn post_recv(
    ibqp: *mut bindings::ib_qp,
    wr: *const bindings::ib_recv_wr,
    bad_wr: *mut *const bindings::ib_recv_wr,
) -> c_int {
    // SAFETY: ib_core passes a live QP of ours.
    let qp = unsafe { Qp::from_ib(ibqp) };
    // SAFETY: ib_core passes a valid WR chain.
    let res = unsafe { qp.post_recv(wr) };
    // SAFETY: ib_core's valid out-pointer.
    unsafe { post_result(res, bad_wr) }
}

/// What `post_recv` and `post_srq_recv` return to ib_core: 0, or the errno with `*bad_wr`
/// naming the WR that failed.
///
/// # Safety
///
/// `bad_wr` is valid for writes.
pub(crate) unsafe fn post_result(
    res: Result<(), (Error, *const bindings::ib_recv_wr)>,
    bad_wr: *mut *const bindings::ib_recv_wr,
) -> c_int {
    match res {
        Ok(()) => 0,
        Err((e, bad)) => {
            // SAFETY: the caller's guarantee.
            unsafe { *bad_wr = bad };
            e.to_errno()
        }
    }
}

impl Qp {
    /// # Safety
    ///
    /// `wr` is a valid chain of WRs (or NULL).
    unsafe fn post_recv(
        &self,
        wr: *const bindings::ib_recv_wr,
    ) -> Result<(), (Error, *const bindings::ib_recv_wr)> {
        // C reads the state without a lock: a post racing with a state change sees either.
        // SAFETY: a live QP; `state` is a byte, read once.
        let state = unsafe { core::ptr::read_volatile(&raw const (*self.as_raw()).state) };
        let ops = recv_ops(state);
        // SAFETY: `r_rq.kwq` is fixed at creation: NULL for a QP with an SRQ.
        if ops & bindings::RVT_POST_RECV_OK == 0 || unsafe { (*self.as_raw()).r_rq.kwq }.is_null() {
            return Err((EINVAL, wr));
        }
        // SAFETY: `ibqp.srq` is fixed at creation.
        let flush = ops & bindings::RVT_FLUSH_RECV != 0 && unsafe { (*self.ibqp()).srq }.is_null();
        // SAFETY: the QP's own queue, set up at creation and alive as long as the QP.
        let rq = unsafe { Rq::of_qp(&raw mut (*self.as_raw()).r_rq) };
        // SAFETY: the caller's guarantee.
        unsafe { post(rq, wr, flush.then_some(self)) }
    }
}

/// Posts a chain of WRs to `rq`, or with `flush` completes each with IB_WC_WR_FLUSH_ERR on
/// the QP's receive CQ (once a slot is known to be free, as C checks).
///
/// # Safety
///
/// `wr` is a valid chain of WRs (or NULL).
pub(crate) unsafe fn post(
    rq: Rq<'_>,
    mut wr: *const bindings::ib_recv_wr,
    flush: Option<&Qp>,
) -> Result<(), (Error, *const bindings::ib_recv_wr)> {
    while !wr.is_null() {
        // SAFETY: the caller guarantees every WR of the chain is valid.
        let w = unsafe { &*wr };
        if w.num_sge as u32 > u32::from(rq.max_sge()) {
            return Err((EINVAL, wr));
        }
        let mut p = rq.producer();
        let at = match p.reserve() {
            Ok(at) => at,
            Err(PostError::Full) => return Err((ENOMEM, wr)),
            Err(PostError::Corrupt) => return Err((EINVAL, wr)),
        };
        match flush {
            Some(qp) => {
                // SAFETY: the WR is valid (`wr_id` is the union member a verbs caller sets).
                let wr_id = unsafe { w.__bindgen_anon_1.wr_id };
                super::flush::complete(qp, wr_id, bindings::ib_wc_status::IB_WC_WR_FLUSH_ERR)
            }
            // SAFETY: `num_sge` was checked against `max_sge` above.
            None => unsafe { p.push(at, w) },
        }
        drop(p);
        wr = w.next;
    }
    Ok(())
}
