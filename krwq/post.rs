// SPDX-License-Identifier: GPL-2.0-only

//! Posting a chain of receive WRs into a ring: the producer half of a QP's `post_recv` and of
//! `post_srq_recv`.

use kernel::{ffi::c_int, prelude::*};

use super::ring::{PostError, Rq};
use crate::bindings;

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

/// Posts a chain of WRs to `rq`, or with `flush` hands each WR's `wr_id` to it instead (a QP
/// in the error state completes them with IB_WC_WR_FLUSH_ERR), once a slot is known to be
/// free, as C checks.
///
/// # Safety
///
/// `wr` is a valid chain of WRs (or NULL).
pub(crate) unsafe fn post(
    rq: Rq<'_>,
    mut wr: *const bindings::ib_recv_wr,
    mut flush: Option<&mut dyn FnMut(u64)>,
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
        match flush.as_mut() {
            Some(flush) => {
                // SAFETY: the WR is valid (`wr_id` is the union member a verbs caller sets).
                flush(unsafe { w.__bindgen_anon_1.wr_id })
            }
            // SAFETY: `num_sge` was checked against `max_sge` above.
            None => unsafe { p.push(at, w) },
        }
        drop(p);
        wr = w.next;
    }
    Ok(())
}
