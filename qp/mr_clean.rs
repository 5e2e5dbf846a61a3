// SPDX-License-Identifier: GPL-2.0-only

//! Dropping a QP's references to a memory region that is being deregistered
//! (`rvt_qp_mr_clean`, `rvt_dereg_clean_qps`): a QP that still uses it goes to the error
//! state, which lets go of it.

use super::{complete::next_slot, error::ErrorOutcome, PostGuard, Qp, RecvGuard, SendGuard};
use crate::{bindings, device::Device, macros::c_export};

impl Qp {
    /// `rvt_qp_mr_clean`: a QP that still references `lkey` (receive state, unfinished sends,
    /// RDMA read responses) goes to the error state, which drops those references. The
    /// special QPs are left alone, as in C.
    pub(crate) fn mr_clean(&self, lkey: u32) {
        let t = self.qp_type();
        if t == bindings::ib_qp_type::IB_QPT_SMI || t == bindings::ib_qp_type::IB_QPT_GSI {
            return;
        }
        let mut locks = self.lock_all();
        let state = locks.s.state();
        let stopped = state == bindings::ib_qp_state::IB_QPS_ERR.0
            || state == bindings::ib_qp_state::IB_QPS_RESET.0;
        let mut outcome = ErrorOutcome::Done;
        if !stopped && self.references_lkey(&locks.r, &locks.h, &locks.s, lkey) {
            outcome = self.error(
                &mut locks.r,
                &mut locks.s,
                bindings::ib_wc_status::IB_WC_LOC_PROT_ERR,
            );
        }
        drop(locks);
        if outcome == ErrorOutcome::LastWqe {
            super::error::raise_event(self, bindings::ib_event_type::IB_EVENT_QP_LAST_WQE_REACHED);
        }
    }

    /// Whether the receive state, a send WQE not yet completed, the RDMA read MR or the ack
    /// queue references `lkey`. The caller holds all three locks.
    fn references_lkey(
        &self,
        r: &RecvGuard<'_>,
        h: &PostGuard<'_>,
        s: &SendGuard<'_>,
        lkey: u32,
    ) -> bool {
        let mut r_sge = r.r_sge();
        // SAFETY: with all three locks held, nothing changes the SGE states, the WQEs between
        // `s_last` and `s_head`, the RDMA read MR or the ack queue; every SGE in use holds a
        // reference to its region, so the regions are alive. The export only reads the state.
        if unsafe { bindings::rvt_ss_has_lkey(&mut r_sge, lkey) } {
            return true;
        }
        let mut n = s.s_last();
        while n != h.s_head() {
            // SAFETY: `n` is a slot of the queue between `s_last` and `s_head`: a posted WQE,
            // which cannot complete while the locks are held.
            if unsafe { s.swqe(n) }.references_lkey(lkey) {
                return true;
            }
            n = next_slot(n, self.s_size());
        }
        // SAFETY: as above.
        if unsafe { bindings::rvt_mr_has_lkey(s.s_rdma_mr(), lkey) } {
            return true;
        }
        self.ack_queue_references(lkey)
    }

    /// Whether an entry of the RDMA read and atomic response queue references `lkey`. The
    /// caller holds all three locks.
    fn ack_queue_references(&self, lkey: u32) -> bool {
        // SAFETY: `s_ack_queue` is allocated at creation (NULL for QPs that have none), with
        // `max_rdma_atomic + 1` entries, each holding a region reference while in use.
        unsafe {
            let acks = self.s_ack_queue();
            let entries = if acks.is_null() {
                0
            } else {
                usize::from(self.device().dparms().max_rdma_atomic) + 1
            };
            (0..entries).any(|i| bindings::rvt_mr_has_lkey((*acks.add(i)).rdma_sge.mr, lkey))
        }
    }
}

/// `rvt_qp_mr_clean`, as C declares it in rdmavt_qp.h (not exported, as in C).
///
/// # Safety
///
/// `qp` is a live QP of ours; the caller holds none of its locks.
#[no_mangle]
pub(crate) unsafe extern "C" fn rvt_qp_mr_clean(qp: *mut bindings::rvt_qp, lkey: u32) {
    // SAFETY: a live QP of ours (caller's guarantee).
    unsafe { Qp::from_raw(qp) }.mr_clean(lkey);
}
c_export!(rvt_qp_mr_clean);

/// `rvt_dereg_clean_qp_cb`: `v` is the region being deregistered; QPs of other PDs cannot
/// reference it.
///
/// # Safety
///
/// Only `rvt_qp_iter` calls this, with a live QP of ours it holds a reference to, and the `v`
/// that [`dereg_clean_qps`] passed.
unsafe extern "C" fn dereg_clean_qp(qp: *mut bindings::rvt_qp, v: u64) {
    let mr = v as usize as *mut bindings::rvt_mregion;
    // SAFETY: the QP is live (the iterator holds a reference).
    let qp = unsafe { Qp::from_raw(qp) };
    // SAFETY: `v` is the live region `dereg_clean_qps` passed; its PD and key are fixed
    // while it is being deregistered.
    let (pd, lkey) = unsafe { ((*mr).pd, (*mr).lkey) };
    // The QP's `rvt_pd` is headed by its `ib_pd`, which the region names.
    if pd != qp.pd().cast() {
        return;
    }
    qp.mr_clean(lkey);
}

/// `rvt_dereg_clean_qps`: makes every QP of `dev` that references `mr` let go of it, so that
/// deregistering it does not wait for traffic that may never come.
///
/// # Safety
///
/// `mr` is a live region of `dev`, unpublished, being deregistered; the caller holds no QP
/// lock.
pub(crate) unsafe fn dereg_clean_qps(dev: &Device, mr: *mut bindings::rvt_mregion) {
    // SAFETY: our own iterator over the device's QPs, with a callback that takes each QP's
    // locks itself; `mr` outlives the call (caller's guarantee).
    unsafe { bindings::rvt_qp_iter(dev.as_raw(), mr as usize as u64, Some(dereg_clean_qp)) };
}
