// SPDX-License-Identifier: GPL-2.0-only

//! The QP's receive side: the `post_recv` verb, `rvt_get_rwqe` (the consumer that drivers and
//! the loopback call when a packet needs a receive WQE), receive completions for errors, and
//! the receive-queue flush of the error state. The ring these work on, its two locked sides
//! and its memory are `crate::krwq`'s, which knows nothing of QPs.

use kernel::{ffi::c_int, prelude::*};

use super::{state_ops, Locked, Qp, RecvGuard};
use crate::{
    bindings,
    compat::{rcu, read_side::ReadSide},
    cq::{RecvExtra, Wc, WcOpcode, WcStatus},
    krwq::{
        self,
        ring::{next_index, Corrupt, Rq, Rwqe},
    },
    macros::c_export,
    mr,
};

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
    unsafe { krwq::post_result(res, bad_wr) }
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
        let ops = state_ops(u32::from(self.state_unlocked()));
        let Some(rq) = self.own_rq().filter(|_| ops.post_recv_ok()) else {
            return Err((EINVAL, wr));
        };
        let flush = ops.flush_recv();
        let mut flush_one = |wr_id| complete(self, wr_id, WcStatus::IB_WC_WR_FLUSH_ERR);
        let on_flush: Option<&mut dyn FnMut(u64)> = flush.then_some(&mut flush_one);
        // SAFETY: the caller's guarantee.
        unsafe { krwq::post(rq, wr, on_flush) }
    }
}

/// Enters a receive completion of `status` for `wr_id` on the QP's receive CQ (solicited, as
/// C does for every receive error).
pub(super) fn complete(qp: &Qp, wr_id: u64, status: WcStatus) {
    let wc = Wc::new(qp.ibqp(), wr_id, WcOpcode::IB_WC_RECV, status);
    qp.recv_cq().enter_wc(&wc, true);
}

/// A request the responder delivered: what its receive completion says.
pub(crate) struct Delivered {
    /// RDMA_WRITE_WITH_IMM (IB_WC_RECV_RDMA_WITH_IMM), rather than a SEND (IB_WC_RECV).
    pub(crate) rdma_with_imm: bool,
    pub(crate) extra: RecvExtra,
    pub(crate) byte_len: u32,
    /// The request asked for a solicited event.
    pub(crate) solicited: bool,
}

impl RecvGuard<'_> {
    /// `rvt_recv_cq()` at the responder: completes the receive WQE that `rvt_get_rwqe()` took
    /// for `d` (if it took one: `RVT_R_WRID_VALID`), with the requester's QPN and LID. A full
    /// receive CQ moves the QP to the error state.
    ///
    /// Inline (C's `rvt_recv_cq()` is): the loopback calls it once a message, and out of line
    /// it took the delivery through memory and saved and restored five registers around it.
    #[inline(always)]
    pub(crate) fn complete_delivery(&mut self, d: Delivered) {
        let qp = self.qp();
        if !qp.test_and_clear_r_aflag(bindings::RVT_R_WRID_VALID) {
            return;
        }
        let opcode = if d.rdma_with_imm {
            WcOpcode::IB_WC_RECV_RDMA_WITH_IMM
        } else {
            WcOpcode::IB_WC_RECV
        };
        let wc = Wc::new(qp.ibqp(), self.r_wr_id(), opcode, WcStatus::IB_WC_SUCCESS)
            .byte_len(d.byte_len)
            .extra(d.extra)
            .source(self.remote_qpn(), self.remote_ah_attr());
        if !qp.recv_cq().enter_wc(&wc, d.solicited) {
            self.recv_cq_overflowed();
        }
    }

    /// The receive CQ overflowed: the QP goes to the error state. C calls rvt_error_qp() here
    /// without `s_lock`, which it requires; we take it, in order. As in C's rvt_recv_cq(), no
    /// LAST_WQE event follows.
    #[cold]
    #[inline(never)]
    fn recv_cq_overflowed(&mut self) {
        let qp = self.qp();
        let mut s = qp.s_lock();
        let _ = qp.error(self, &mut s, WcStatus::IB_WC_LOC_QP_OP_ERR);
    }
}

/// C's receive-queue flush in `rvt_error_qp()`: completes every receive WQE still queued with
/// IB_WC_WR_FLUSH_ERR and empties the queue. A QP with an SRQ has nothing of its own to flush.
///
/// Indices of a user ring outside the ring count as 0, as in C: the flush stays inside the
/// ring whatever user space wrote, and the QP is going to the error state anyway.
pub(super) fn flush(qp: &Qp) {
    let Some(rq) = qp.own_rq() else {
        return;
    };
    let mut c = rq.consumer();
    let head = c.head().unwrap_or(0);
    let mut tail = c.tail().unwrap_or(0);
    while tail != head {
        // SAFETY: `tail` is a checked index (or 0) and stays one through `next_index`.
        let wr_id = unsafe { c.wqe(tail) }.wr_id;
        tail = next_index(c.size(), tail);
        complete(qp, wr_id, WcStatus::IB_WC_WR_FLUSH_ERR);
    }
    c.set_tail(tail);
    // The cached count goes with the WQEs (C leaves it stale).
    let _ = c.recount(tail);
}

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
    /// its armed limit. The WQE's keys are checked inside the caller's RCU read-side section
    /// `rcu`.
    pub(crate) fn get_wqe(
        &self,
        r: &mut RecvGuard<'_>,
        wr_id_only: bool,
        rcu: &rcu::Guard,
    ) -> GetWqe {
        let srq = self.srq();
        let rq = match srq {
            // SAFETY: the QP holds its SRQ alive (ib_core counts the SRQ's users).
            Some(srq) => unsafe { Rq::of_srq(srq) },
            None => match self.own_rq() {
                Some(rq) => rq,
                None => return GetWqe::Empty,
            },
        };
        let mut c = rq.consumer();
        if !state_ops(r.state()).process_recv_ok() {
            return GetWqe::Empty;
        }
        let wqe = match c.take() {
            Ok(Some(wqe)) => wqe,
            Ok(None) => return GetWqe::Empty,
            Err(Corrupt) => return GetWqe::Error,
        };
        if !wr_id_only && self.init_sge(r, &wqe, rcu).is_err() {
            return GetWqe::Error;
        }
        *r.r_wr_id_mut() = wqe.wr_id;
        self.set_r_aflag(bindings::RVT_R_WRID_VALID);
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

    /// The QP's own receive queue; `None` for a QP with an SRQ, whose `r_rq` is never set up.
    pub(crate) fn own_rq(&self) -> Option<Rq<'_>> {
        // SAFETY: `r_rq` is set up at creation (`kwq` stays NULL with an SRQ) and lives as long
        // as the QP.
        unsafe {
            let rq = self.rq();
            (!(*rq).kwq.is_null()).then(|| Rq::of_qp(rq))
        }
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
    fn init_sge(&self, r: &mut RecvGuard<'_>, wqe: &Rwqe, rcu: &rcu::Guard) -> Result<(), Corrupt> {
        let res = wqe
            .num_sge()
            .and_then(|n| self.take_recv_sges(r, wqe, n, rcu));
        if res.is_err() {
            self.refuse_wqe(r, wqe.wr_id);
        }
        res
    }

    /// A receive WQE whose SGEs did not check out: none is kept, and it completes with
    /// IB_WC_LOC_PROT_ERR. Out of line, as [`put_sges`] is, so that the SGE loop of the
    /// common path keeps its values in registers.
    #[cold]
    #[inline(never)]
    fn refuse_wqe(&self, r: &mut RecvGuard<'_>, wr_id: u64) {
        r.r_sge_mut().num_sge = 0;
        complete(self, wr_id, WcStatus::IB_WC_LOC_PROT_ERR);
    }

    /// The lkey checks of [`Qp::init_sge`] for `n` SGEs (already checked against `max_sge`),
    /// with the consumer side of the WQE's ring held by the caller.
    fn take_recv_sges(
        &self,
        r: &mut RecvGuard<'_>,
        wqe: &Rwqe,
        n: u8,
        rcu: &rcu::Guard,
    ) -> Result<(), Corrupt> {
        // SAFETY: the PD (the QP's, or its SRQ's) is fixed at creation and live while the QP
        // is.
        let pd = unsafe {
            match self.srq() {
                Some(srq) => (*srq).ibsrq.pd,
                None => (*self.ibqp()).pd,
            }
        }
        .cast();
        let sg_list = self.r_sg_list();
        let ss = r.r_sge_mut();
        ss.sg_list = sg_list;
        let mut total = 0u32;
        let mut j = 0usize;
        for i in 0..n {
            // SAFETY: `i < n <= max_sge` (checked by `num_sge()`); the caller holds the ring.
            let sge = unsafe { wqe.sge(i) };
            if sge.length == 0 {
                continue;
            }
            let isge = if j == 0 {
                &mut ss.sge
            } else {
                // SAFETY: `r_sg_list` has room for `max_sge - 1` SGEs and `1 <= j < n`; it is
                // the QP's, under `r_lock`, and distinct from `ss.sge`.
                unsafe { &mut *ss.sg_list.add(j - 1) }
            };
            // SAFETY: the PD is live (see above).
            if unsafe { mr::check_recv_lkey(self, pd, isge, &sge, rcu.into()) }.is_err() {
                // SAFETY: the first `j` SGEs of `r_sge` hold references.
                unsafe { put_sges(ss, j, rcu.into()) };
                return Err(Corrupt);
            }
            j += 1;
            // A user ring can name one large MR in every SGE, so the sum can pass 4 GiB (the
            // IB maximum message is 2 GiB). C lets it wrap; unchecked here it would be a kernel
            // BUG under the overflow checks. Refused as a corrupt WQE, with the reference this
            // SGE just took given back too.
            let Some(sum) = total.checked_add(sge.length) else {
                // SAFETY: as above, now the first `j`.
                unsafe { put_sges(ss, j, rcu.into()) };
                return Err(Corrupt);
            };
            total = sum;
        }
        // CAST: `j <= n`, a u8.
        ss.num_sge = j as u8;
        ss.total_len = total;
        *r.r_len_mut() = total;
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
/// `ss` is a QP's `r_sge` under its `r_lock`, whose first `j` SGEs hold an MR reference;
/// `at` is the caller's read-side section.
#[cold]
#[inline(never)]
unsafe fn put_sges(ss: *mut bindings::rvt_sge_state, mut j: usize, at: ReadSide<'_>) {
    while j > 0 {
        j -= 1;
        // SAFETY: the caller's guarantee.
        unsafe {
            let sge = if j == 0 {
                &raw mut (*ss).sge
            } else {
                (*ss).sg_list.add(j - 1)
            };
            mr::put_mr((*sge).mr, at);
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
    let mut r = unsafe { qp.assume_r_locked() };
    let rcu = rcu::read_lock();
    match qp.get_wqe(&mut r, wr_id_only, &rcu) {
        GetWqe::Taken => 1,
        GetWqe::Empty => 0,
        GetWqe::Error => -1,
    }
}
c_export!(rvt_get_rwqe);
