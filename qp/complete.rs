// SPDX-License-Identifier: GPL-2.0-only

//! What a QP's state allows (`ib_rvt_state_ops`), send completions (`rvt_send_complete`), the
//! responder's events (`rvt_comm_est`, `rvt_rc_error`), and dropping a QP's references to a
//! memory region that is being deregistered (`rvt_qp_mr_clean`).

use kernel::{ffi::c_int, prelude::*};

use crate::compat::aref::ARef;

use super::{error::ErrorOutcome, state_ops, PostGuard, Qp, RecvGuard, SendGuard, Swqe};
use crate::{
    bindings,
    device::{log::rvt_err_ratelimited, Device},
    macros::c_export,
    trace,
};

/// The number of QP states, `IB_QPS_ERR + 1`: the length of [`ib_rvt_state_ops`].
pub(super) const STATES: usize = bindings::ib_qp_state::IB_QPS_ERR.0 as usize + 1;

/// `RVT_SEND_RESERVE_USED` (rdmavt_qp.h, a macro over an enum bindgen leaves out): the WQE
/// took one of the driver's reserved slots.
pub(super) const SEND_RESERVE_USED: c_int = bindings::ib_send_flags_IB_SEND_RESERVED_START;
/// `RVT_SEND_COMPLETION_ONLY`: a local operation already carried out, queued only so that it
/// completes in order.
pub(super) const SEND_COMPLETION_ONLY: c_int = bindings::ib_send_flags_IB_SEND_RESERVED_START << 1;

/// What each QP state allows, indexed by `IB_QPS_*`: C's table, exported because hfi1 reads
/// it inline. Posting sends is allowed in SQE and ERR: the send engine flushes them with
/// error completions (IB 1.2 C10-96).
#[no_mangle]
pub(crate) static ib_rvt_state_ops: [c_int; STATES] = {
    const RECV: u32 = bindings::RVT_POST_RECV_OK | bindings::RVT_PROCESS_RECV_OK;
    const SEND: u32 = bindings::RVT_POST_SEND_OK | bindings::RVT_PROCESS_SEND_OK;
    [
        0,                                                                       // RESET
        bindings::RVT_POST_RECV_OK as c_int,                                     // INIT
        RECV as c_int,                                                           // RTR
        (RECV | SEND | bindings::RVT_PROCESS_NEXT_SEND_OK) as c_int,             // RTS
        (RECV | SEND) as c_int,                                                  // SQD
        (RECV | bindings::RVT_POST_SEND_OK | bindings::RVT_FLUSH_SEND) as c_int, // SQE
        (bindings::RVT_POST_RECV_OK
            | bindings::RVT_FLUSH_RECV
            | bindings::RVT_POST_SEND_OK
            | bindings::RVT_FLUSH_SEND) as c_int, // ERR
    ]
};

// The header declares `extern const int ib_rvt_state_ops[]`, which bindgen makes a zero-length
// array: the element type is what can be checked, and is, here.
const _: () = {
    fn same_element<T, const N: usize, const M: usize>(_: *const [T; N], _: *const [T; M]) {}
    #[expect(dead_code, reason = "only type-checked")]
    fn check() {
        same_element(
            &raw const bindings::ib_rvt_state_ops,
            &raw const ib_rvt_state_ops,
        );
    }
};

/// The next slot of the send queue after `n`, wrapping at `s_size` (`rvt_qp_swqe_incr`).
pub(super) fn next_slot(n: u32, s_size: u32) -> u32 {
    if n + 1 >= s_size {
        0
    } else {
        n + 1
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
        wqe: *mut bindings::rvt_swqe,
        opcode: bindings::ib_wc_opcode,
        status: bindings::ib_wc_status,
    ) -> u32 {
        // SAFETY: the caller guarantees `wqe` is the finished WQE at `s_last`, which stays ours
        // until `s_last` moves past it.
        let (flags, wr_id, byte_len) = unsafe {
            let wr = &(*wqe).__bindgen_anon_1.wr;
            (wr.send_flags, wr.__bindgen_anon_1.wr_id, (*wqe).length)
        };
        if flags & SEND_RESERVE_USED != 0 {
            self.reserved_op_done();
        }
        // SAFETY: as above; the glue drops the WQE's references (the export takes C's
        // pointer to the QP).
        unsafe { bindings::rdmavt_rs_rvt_put_qp_swqe(self.as_raw(), wqe) };
        let need_completion = flags & SEND_RESERVE_USED == 0
            && (s.flags() & bindings::RVT_S_SIGNAL_REQ_WR == 0
                || flags & bindings::ib_send_flags_IB_SEND_SIGNALED != 0
                || status != bindings::ib_wc_status::IB_WC_SUCCESS);
        // The WQE was read above: a poster may reuse the slot as soon as `s_last` moves.
        let last = next_slot(s.s_last(), self.s_size());
        s.publish_s_last(last);
        if need_completion && !self.send_cq(wr_id, byte_len, opcode, status) {
            self.error_from_send(s, r);
        }
        last
    }

    /// `rvt_send_cq`: a send completion; false if the CQ was full.
    fn send_cq(
        &self,
        wr_id: u64,
        byte_len: u32,
        opcode: bindings::ib_wc_opcode,
        status: bindings::ib_wc_status,
    ) -> bool {
        let ibqp = self.ibqp();
        // SAFETY: all-zero is a valid `ib_wc` (C integers, enums whose zero is a value, null
        // pointers). `send_cq` is a live CQ of ours, fixed at creation.
        unsafe {
            let mut wc: bindings::ib_wc = core::mem::zeroed();
            wc.__bindgen_anon_1.wr_id = wr_id;
            wc.status = status;
            wc.opcode = opcode;
            wc.qp = ibqp;
            wc.byte_len = byte_len;
            let solicited = status != bindings::ib_wc_status::IB_WC_SUCCESS;
            bindings::rvt_cq_enter((*ibqp).send_cq.cast(), &mut wc, solicited)
        }
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
        status: bindings::ib_wc_status,
    ) {
        if !state_ops(s.state()).process_or_flush_send() {
            return;
        }
        // SAFETY: `wc_opcode` is the driver's table, fixed at registration, with an entry for
        // each opcode `post_send` accepts, which `wqe`'s is.
        let opcode = unsafe {
            *(*self.device().as_raw())
                .wc_opcode
                .add(wqe.opcode().0 as usize)
        };
        let wqe = wqe.as_raw();
        let old_last = s.s_last();
        // SAFETY: the QP is live; `wqe` is its finished WQE at `s_last` (caller's guarantee).
        unsafe { trace::rvt_qp_send_completion(self.as_raw(), wqe, old_last) };
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

/// A QP to move to the error state from the module's workqueue, for a full send CQ met where
/// `r_lock` could not be taken (see [`Qp::error_from_send`]). The reference it holds keeps the
/// QP alive, and `destroy_qp` waiting, until the work has run.
#[repr(C)]
struct DeferredError {
    /// First, so that the work item's address is the struct's.
    work: bindings::work_struct,
    qp: ARef<Qp>,
}

impl DeferredError {
    fn queue(qp: &Qp) {
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
            super::error::raise_event(&d.qp, bindings::ib_event_type::IB_EVENT_QP_LAST_WQE_REACHED);
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
    super::error::raise_event(qp, bindings::ib_event_type::IB_EVENT_COMM_EST);
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
        super::error::raise_event(qp, bindings::ib_event_type::IB_EVENT_QP_LAST_WQE_REACHED);
    }
}
c_export!(rvt_rc_error);

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
            // SAFETY: `n` is a slot of the queue, between `s_last` and `s_head`: posted, not
            // completed, its `num_sge` SGEs each holding a region reference.
            let found = unsafe {
                let wqe = s.swqe(n).as_raw();
                let sges = (*wqe).__bindgen_anon_1.wr.num_sge.max(0) as usize;
                let sg_list = (*wqe).sg_list.as_mut_ptr();
                (0..sges).any(|i| bindings::rvt_mr_has_lkey((*sg_list.add(i)).mr, lkey))
            };
            if found {
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
