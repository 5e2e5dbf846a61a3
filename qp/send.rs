// SPDX-License-Identifier: GPL-2.0-only

//! `post_send`: checks each work request against the driver's `post_parms`, takes its memory
//! references (lkeys, the UD address handle's attributes) into a send queue slot, numbers it,
//! and hands the queue to the driver's send engine.
//!
//! The send queue is a ring of `s_size` slots: `post_send` fills slot `s_head` under `s_hlock`
//! and publishes it by moving `s_head`; the send engine completes slot `s_last` under `s_lock`
//! and frees it by moving `s_last` (see [`Qp::complete_swqe`]). One slot always stays empty,
//! and `dparms.reserved_operations` slots are kept for the driver's own requests.

use core::{mem::size_of, ptr};

use kernel::{ffi::c_int, prelude::*};

use crate::compat::{atomic::Full, barrier::smp_mb};

use super::{
    complete::{next_slot, SEND_COMPLETION_ONLY, SEND_RESERVE_USED},
    state_ops, Locked, PostGuard, Qp,
};
use crate::{
    bindings,
    device::{log::rvt_err, Device},
    trace,
};

/// `RVT_OPERATION_MAX`: the number of entries of the driver's `post_parms` (a macro over an
/// enum that bindgen cannot evaluate).
pub(super) const OPERATION_MAX: u32 = bindings::ib_wr_opcode::IB_WR_RESERVED10.0 + 1;

/// The bytes of a work request a send queue slot can hold (the union at the head of
/// `rvt_swqe`).
const SLOT_WR_BYTES: usize = size_of::<bindings::rvt_swqe__bindgen_ty_1>();

/// `ib_device_ops.post_send`: posts the list `wr`; on error, `*bad_wr` is the request that
/// failed and those before it are posted. A QP in a state that does not take sends fails the
/// whole list with EINVAL and, as in C, leaves `*bad_wr` alone.
///
/// # Safety
///
/// Only ib_core calls this, through `RVT_DEV_OPS`, with a live QP of ours, a valid list of
/// work requests in kernel memory (each embedded in the struct its opcode calls for:
/// `ib_rdma_wr`, `ib_ud_wr`...) and a valid `bad_wr`. Any context, interrupts included.
pub(crate) unsafe extern "C" fn post_send(
    ibqp: *mut bindings::ib_qp,
    wr: *const bindings::ib_send_wr,
    bad_wr: *mut *const bindings::ib_send_wr,
) -> c_int {
    // SAFETY: ib_core passes a live QP of ours.
    let qp = unsafe { Qp::from_ib(ibqp) };
    // SAFETY: ib_core passes a valid list and `bad_wr` (see above).
    match unsafe { qp.post_send(wr, bad_wr) } {
        Ok(()) => 0,
        Err(e) => e.to_errno(),
    }
}

/// What the driver's `post_parms` entry says about an accepted request.
struct Operation {
    /// The entry of the request's opcode.
    parms: bindings::rvt_operation_params,
    /// How many bytes of the request the slot keeps.
    copy_len: usize,
    /// The request's number of SGEs.
    num_sge: usize,
}

impl Operation {
    fn has(&self, flag: u32) -> bool {
        self.parms.flags & flag != 0
    }
}

/// What happened to a local operation (fast register, local invalidate) at post time.
enum Local {
    /// Not a local operation: it is queued for the send engine.
    No,
    /// Carried out already, and unsignaled: nothing is queued.
    Done,
    /// Carried out already, signaled: queued only to complete in order.
    CompletionOnly,
    /// A local invalidate that must wait for earlier ones or a fence: queued, and the send
    /// engine carries it out.
    Delayed,
}

/// The free slots of a send queue of `size` slots between `head` (next to fill) and `last`
/// (next to complete), less the always-empty one and the reserved slots not in use:
/// `rvt_qp_is_avail`'s arithmetic. `None` when nothing is free.
pub(super) fn free_slots(
    head: u32,
    last: u32,
    size: u32,
    reserved: u32,
    reserved_used: u32,
) -> Option<u32> {
    let ring = if head >= last {
        size - (head - last)
    } else {
        last - head
    };
    let avail = ring
        .wrapping_sub(1)
        .wrapping_sub(reserved.wrapping_sub(reserved_used));
    // As C: the arithmetic is unsigned, a result that went "negative" means full.
    (avail as i32 > 0).then_some(avail)
}

/// Adds an SGE's length to a request's total. C lets the u32 total wrap, which corrupts the
/// PSN range and the completion's byte count; such a request is refused (EINVAL) here.
pub(super) fn add_length(total: u32, length: u32) -> Result<u32> {
    total.checked_add(length).ok_or(EINVAL)
}

impl Qp {
    /// # Safety
    ///
    /// As [`post_send`]'s.
    unsafe fn post_send(
        &self,
        wr: *const bindings::ib_send_wr,
        bad_wr: *mut *const bindings::ib_send_wr,
    ) -> Result {
        let mut h = self.s_hlock();
        // Read without the locks that write it, as C: a request racing with a state change
        // may be posted in the old state, which the send engine then flushes.
        if !state_ops(u32::from(self.state_unlocked())).post_send_ok() {
            return Err(EINVAL);
        }
        // With an empty queue and a single request, the driver may send it from here.
        // SAFETY: `wr` is valid (caller's guarantee).
        let single = unsafe { (*wr).next }.is_null();
        let mut call_send = h.s_head() == self.s_last_acquire() && single;
        let mut posted = 0u32;
        let mut res = Ok(());
        let mut cur = wr;
        while !cur.is_null() {
            // SAFETY: each request in the list is valid (caller's guarantee).
            let this = unsafe { &*cur };
            // SAFETY: as above.
            if let Err(e) = unsafe { self.post_one(&mut h, this, &mut call_send) } {
                // SAFETY: `bad_wr` is valid for writes (caller's guarantee).
                unsafe { *bad_wr = cur };
                res = Err(e);
                break;
            }
            posted += 1;
            cur = this.next;
        }
        drop(h);
        if posted > 0 {
            self.kick(posted == 1 && call_send);
        }
        res
    }

    /// Starts the driver's send engine: here and now for a lone request on an empty queue
    /// (if the driver's `setup_wqe` agreed), otherwise later.
    fn kick(&self, now: bool) {
        let f = self.device().driver();
        if now {
            f.do_send(self);
        } else if !f.schedule_send_no_lock(self) && f.has_schedule_send() {
            // C calls `schedule_send_no_lock` without checking that the driver has one; one
            // without it gets `schedule_send`, which wants `s_lock`.
            f.schedule_send(self, &self.s_lock());
        }
    }

    /// `rvt_post_one_wr`: checks one request and queues it.
    ///
    /// # Safety
    ///
    /// `wr` is valid, in kernel memory, embedded in the struct its opcode calls for, with
    /// `num_sge` entries at `sg_list`.
    unsafe fn post_one(
        &self,
        h: &mut PostGuard<'_>,
        wr: &bindings::ib_send_wr,
        call_send: &mut bool,
    ) -> Result {
        let dev = self.device();
        // SAFETY: the caller's guarantee.
        let op = unsafe { self.valid_operation(h, dev, wr) }?;
        // SAFETY: the caller's guarantee.
        let local = match unsafe { self.local_operation(&op, wr) }? {
            Local::Done => return Ok(()),
            local => local,
        };
        self.is_avail(h, dev, op.has(bindings::RVT_OPERATION_USE_RESERVE))?;
        let head = h.s_head();
        // SAFETY: `s_head` is a slot of the queue (below `s_size`), not visible to the send
        // engine until `s_head` moves past it, so it is ours under `s_hlock`.
        let wqe = unsafe { self.swqe(head) };
        // SAFETY: the request holds `copy_len` bytes (caller's guarantee, and `copy_len` is
        // the size of the struct its opcode calls for); the slot's head holds
        // `SLOT_WR_BYTES >= copy_len` (checked in `valid_operation`).
        unsafe {
            ptr::copy_nonoverlapping(
                ptr::from_ref(wr).cast::<u8>(),
                (&raw mut (*wqe).__bindgen_anon_1).cast::<u8>(),
                op.copy_len,
            );
        }
        // SAFETY: the slot is ours (see above); the request's SGEs are valid.
        unsafe { self.take_sges(dev, wqe, wr, &op) }?;
        // SAFETY: as above; `take_sges` filled the slot.
        let res = unsafe { self.sequence(h, dev, wqe, &local, call_send) };
        if let Err(e) = res {
            // SAFETY: the slot is still ours: give back what `take_sges` and `sequence` took.
            unsafe { self.release_slot(wqe, &local) };
            return Err(e);
        }
        // SAFETY: the slot is complete and ours.
        let flags = unsafe { &mut (*wqe).__bindgen_anon_1.wr.send_flags };
        if op.has(bindings::RVT_OPERATION_USE_RESERVE) {
            *flags |= SEND_RESERVE_USED;
            self.reserved_op_taken();
        } else {
            *flags &= !SEND_RESERVE_USED;
            *h.s_avail_mut() -= 1;
        }
        // SAFETY: the QP is live; `wqe` is the filled slot at `s_head`, still ours.
        unsafe { trace::rvt_post_one_wr(self.as_raw(), wqe, wr.num_sge) };
        // The slot's contents are published with it (C's smp_wmb).
        h.publish_s_head(next_slot(head, self.s_size()));
        Ok(())
    }

    /// `rvt_qp_valid_operation` and the SGE count: C's checks, in C's order, all EINVAL.
    ///
    /// # Safety
    ///
    /// As [`Qp::post_one`].
    unsafe fn valid_operation(
        &self,
        h: &PostGuard<'_>,
        dev: &Device,
        wr: &bindings::ib_send_wr,
    ) -> Result<Operation> {
        let (max_sge, max_rd_atomic) = (self.s_max_sge(), h.s_max_rd_atomic());
        // IB says no SGEs is fine. C compares the int with the u8 and so lets a negative
        // count through; here it is refused.
        let num_sge = usize::try_from(wr.num_sge).map_err(|_| EINVAL)?;
        if num_sge > usize::from(max_sge) {
            return Err(EINVAL);
        }
        let opcode = wr.opcode.0;
        if opcode >= OPERATION_MAX {
            return Err(EINVAL);
        }
        // SAFETY: `post_parms` is the driver's table of `RVT_OPERATION_MAX` entries, fixed at
        // registration (which checked it is there).
        let parms = unsafe { *(*dev.as_raw()).post_parms.add(opcode as usize) };
        let op = Operation {
            parms,
            copy_len: parms.length,
            num_sge,
        };
        if parms.length == 0 || parms.qpt_support & (1 << self.qp_type().0) == 0 {
            return Err(EINVAL);
        }
        // SAFETY: the QP's PD is a live PD of ours, the head of an `rvt_pd`.
        let user_pd = unsafe { (*self.pd()).user };
        if op.has(bindings::RVT_OPERATION_PRIV) && user_pd {
            return Err(EINVAL);
        }
        if op.has(bindings::RVT_OPERATION_ATOMIC_SGE) {
            // SAFETY: `sg_list` has `num_sge` entries (caller's guarantee).
            let first = (num_sge > 0).then(|| unsafe { &*wr.sg_list });
            if !first.is_some_and(|s| {
                s.length as usize >= size_of::<u64>() && s.addr % size_of::<u64>() as u64 == 0
            }) {
                return Err(EINVAL);
            }
        }
        if op.has(bindings::RVT_OPERATION_ATOMIC) && max_rd_atomic == 0 {
            return Err(EINVAL);
        }
        let op = self.check_ud(wr, op)?;
        // A driver table that asks for more than a slot holds would overrun it (C trusts it).
        if op.copy_len > SLOT_WR_BYTES {
            return Err(EINVAL);
        }
        Ok(op)
    }

    /// UD (and SMI/GSI) requests: the address handle must be of the QP's PD, and the slot
    /// keeps the whole `ib_ud_wr`.
    fn check_ud(&self, wr: &bindings::ib_send_wr, mut op: Operation) -> Result<Operation> {
        let t = self.qp_type();
        if t == bindings::ib_qp_type::IB_QPT_RC || t == bindings::ib_qp_type::IB_QPT_UC {
            return Ok(op);
        }
        // SAFETY: a request to a UD QP is the head of an `ib_ud_wr` (ib_core's contract).
        let ah = unsafe { (*ptr::from_ref(wr).cast::<bindings::ib_ud_wr>()).ah };
        // C dereferences a NULL AH; it is refused here.
        // SAFETY: a non-NULL AH of a request is a live AH (ib_core's contract).
        if ah.is_null() || unsafe { (*ah).pd } != unsafe { (*self.ibqp()).pd } {
            return Err(EINVAL);
        }
        op.copy_len = size_of::<bindings::ib_ud_wr>();
        Ok(op)
    }

    /// Fast register and local invalidate are carried out at post time, as C does, so that
    /// the requests after them can use the new key; a local invalidate behind a fence or
    /// another pending one waits for the send engine.
    ///
    /// # Safety
    ///
    /// As [`Qp::post_one`].
    unsafe fn local_operation(&self, op: &Operation, wr: &bindings::ib_send_wr) -> Result<Local> {
        if !op.has(bindings::RVT_OPERATION_LOCAL) {
            return Ok(Local::No);
        }
        let qp = self.as_raw();
        let signaled = wr.send_flags & bindings::ib_send_flags_IB_SEND_SIGNALED != 0;
        let ret = match wr.opcode {
            bindings::ib_wr_opcode::IB_WR_REG_MR => {
                // SAFETY: a REG_MR request is the head of an `ib_reg_wr` (ib_core's
                // contract) naming an MR of ours.
                unsafe {
                    let reg = &*ptr::from_ref(wr).cast::<bindings::ib_reg_wr>();
                    bindings::rvt_fast_reg_mr(qp, reg.mr, reg.key, reg.access)
                }
            }
            bindings::ib_wr_opcode::IB_WR_LOCAL_INV => {
                let fence = wr.send_flags & bindings::ib_send_flags_IB_SEND_FENCE != 0;
                if fence || self.local_ops_pending() != 0 {
                    return Ok(Local::Delayed);
                }
                // SAFETY: a live QP of ours; `invalidate_rkey` is the union member a
                // LOCAL_INV request sets.
                unsafe { bindings::rvt_invalidate_rkey(qp, wr.ex.invalidate_rkey) }
            }
            _ => return Err(EINVAL),
        };
        kernel::error::to_result(ret)?;
        Ok(if signaled {
            Local::CompletionOnly
        } else {
            Local::Done
        })
    }

    /// `rvt_qp_is_avail`: whether a slot is free for the request (ENOMEM if not), refreshing
    /// `s_avail` from `s_last` when the cached count ran out.
    fn is_avail(&self, h: &mut PostGuard<'_>, dev: &Device, reserved_op: bool) -> Result {
        let reserved = u32::from(dev.dparms().reserved_operations);
        // C's smp_mb__before_atomic: pairs with the barrier in `Qp::complete_swqe`, so that
        // a slot freed by a reserved request is seen with its count dropped.
        smp_mb(Full);
        if reserved_op {
            return if self.reserved_used() >= reserved {
                Err(ENOMEM)
            } else {
                Ok(())
            };
        }
        let size = self.s_size();
        if h.s_avail() != 0 {
            return Ok(());
        }
        // The slots before `s_last` were given back by the send engine (see
        // `Qp::s_last_acquire`).
        let last = self.s_last_acquire();
        let avail =
            free_slots(h.s_head(), last, size, reserved, self.reserved_used()).ok_or(ENOMEM)?;
        *h.s_avail_mut() = avail;
        let max = size.wrapping_sub(1).wrapping_sub(reserved);
        if crate::compat::warn_on!(avail > max) {
            // Racy reads for the report, as C's; harmless.
            let (tail, cur, acked) = (
                self.s_tail_unlocked(),
                self.s_cur_unlocked(),
                self.s_acked_unlocked(),
            );
            rvt_err!(
                dev,
                "More avail entries than QP RB size.\nQP: {}, size: {}, avail: {}\nhead: {}, tail: {}, cur: {}, acked: {}, last: {}\n",
                self.qpn(),
                size,
                avail,
                h.s_head(),
                tail,
                cur,
                acked,
                last
            );
        }
        Ok(())
    }

    /// Checks each SGE's lkey and stores it in the slot, merging adjacent ones, and sums the
    /// length. On error, the references already taken are dropped.
    ///
    /// # Safety
    ///
    /// `wqe` is a slot of the queue that is ours; `wr` has `op.num_sge` entries at `sg_list`.
    unsafe fn take_sges(
        &self,
        dev: &Device,
        wqe: *mut bindings::rvt_swqe,
        wr: &bindings::ib_send_wr,
        op: &Operation,
    ) -> Result {
        let acc = if wr.opcode.0 >= bindings::ib_wr_opcode::IB_WR_RDMA_READ.0 {
            bindings::ib_access_flags_IB_ACCESS_LOCAL_WRITE as c_int
        } else {
            0
        };
        // SAFETY: only the address of the slot's SGE array is taken.
        let sg_list = unsafe { (*wqe).sg_list.as_mut_ptr() };
        let mut stored = 0usize;
        let mut total = 0u32;
        for i in 0..op.num_sge {
            // SAFETY: `i < num_sge` entries of `sg_list` (caller's guarantee).
            let sge = unsafe { &*wr.sg_list.add(i) };
            if sge.length == 0 {
                continue;
            }
            // SAFETY: the slot has room for `s_max_sge >= num_sge > stored` SGEs (checked in
            // `valid_operation`), and its first `stored` hold references.
            let res = add_length(total, sge.length)
                .and_then(|t| Ok((t, unsafe { self.lkey_ok(dev, sg_list, stored, sge, acc) }?)));
            match res {
                Ok((t, added)) => {
                    total = t;
                    stored += added;
                }
                Err(e) => {
                    // SAFETY: the first `stored` entries each hold a region reference.
                    unsafe { put_sges(sg_list, stored) };
                    return Err(e);
                }
            }
        }
        // SAFETY: the slot is ours; `stored <= num_sge` fits the int.
        unsafe {
            (*wqe).length = total;
            if op.num_sge > 0 {
                (*wqe).__bindgen_anon_1.wr.num_sge = stored as c_int;
            }
        }
        Ok(())
    }

    /// `rvt_lkey_ok` on `sge` into entry `stored` of `sg_list`: 1 if it took that entry, 0 if
    /// it extended the one before.
    ///
    /// # Safety
    ///
    /// `sg_list` has room beyond `stored` entries, of which the first `stored` hold references.
    unsafe fn lkey_ok(
        &self,
        dev: &Device,
        sg_list: *mut bindings::rvt_sge,
        stored: usize,
        sge: &bindings::ib_sge,
        acc: c_int,
    ) -> Result<usize> {
        // SAFETY: the caller's guarantee on `sg_list`; the lkey table is the registered
        // device's and the PD the QP's; `rvt_lkey_ok` only reads `sge`.
        let ret = unsafe {
            let last = if stored > 0 {
                sg_list.add(stored - 1)
            } else {
                ptr::null_mut()
            };
            let rkt = &raw mut (*dev.as_raw()).lkey_table;
            bindings::rvt_lkey_ok(
                rkt,
                self.pd(),
                sg_list.add(stored),
                last,
                ptr::from_ref(sge).cast_mut(),
                acc,
            )
        };
        kernel::error::to_result(ret)?;
        Ok(ret as usize)
    }

    /// The PSNs and sequence number of a filled slot, the UD address handle's attributes, and
    /// the driver's `setup_wqe`. On error the caller releases the slot.
    ///
    /// # Safety
    ///
    /// `wqe` is the slot at `s_head`, ours, filled by `take_sges`.
    unsafe fn sequence(
        &self,
        h: &mut PostGuard<'_>,
        dev: &Device,
        wqe: *mut bindings::rvt_swqe,
        local: &Local,
        call_send: &mut bool,
    ) -> Result {
        let mut log_pmtu = h.log_pmtu();
        // SAFETY: the slot is ours. A UD QP's slots each have an `attr` allocated at creation;
        // the request's AH was checked to be live and of the QP's PD, the head of an `rvt_ah`.
        unsafe {
            if self.allowed_ops() == bindings::IB_OPCODE_UD as u8 {
                let ud = &raw mut (*wqe).__bindgen_anon_1.ud_wr;
                let ah = (*ud).wr.ah.cast::<bindings::rvt_ah>();
                log_pmtu = (*ah).log_pmtu;
                bindings::rdma_copy_ah_attr((*ud).attr, &(*ah).attr);
            }
        }
        // SAFETY: the slot is ours.
        let w = unsafe { &mut *wqe };
        match local {
            Local::No => {
                w.ssn = h.s_ssn();
                *h.s_ssn_mut() = w.ssn.wrapping_add(1);
                w.psn = h.s_next_psn();
                let packets = if w.length == 0 {
                    0
                } else {
                    (w.length - 1) >> log_pmtu
                };
                w.lpsn = w.psn.wrapping_add(packets);
            }
            _ => {
                if matches!(local, Local::Delayed) {
                    self.local_op_deferred();
                } else {
                    // SAFETY: `wr` is the member every request fills.
                    unsafe { w.__bindgen_anon_1.wr.send_flags |= SEND_COMPLETION_ONLY };
                }
                w.ssn = 0;
                w.psn = 0;
                w.lpsn = 0;
            }
        }
        // SAFETY: `wqe` is the slot being posted, filled in and not yet published.
        unsafe { dev.driver().setup_wqe(self, wqe, call_send, h) }?;
        if matches!(local, Local::No) {
            // SAFETY: the slot is ours.
            *h.s_next_psn_mut() = unsafe { (*wqe).lpsn }.wrapping_add(1);
        }
        Ok(())
    }

    /// Undoes `take_sges` and `sequence` on a slot that is not posted after all: its region
    /// references, its copy of the UD address, and the count of a delayed local operation
    /// (which C leaves raised, delaying every later local invalidate).
    ///
    /// # Safety
    ///
    /// `wqe` is the slot at `s_head`, ours, filled by `take_sges` and `sequence`.
    unsafe fn release_slot(&self, wqe: *mut bindings::rvt_swqe, local: &Local) {
        // SAFETY: the slot is ours; its `num_sge` entries hold references (or its count is
        // 0); a UD slot holds a copy of the AH's attributes.
        unsafe {
            if self.allowed_ops() == bindings::IB_OPCODE_UD as u8 {
                bindings::rdma_destroy_ah_attr((*wqe).__bindgen_anon_1.ud_wr.attr);
            }
            let stored = (*wqe).__bindgen_anon_1.wr.num_sge.max(0) as usize;
            put_sges((*wqe).sg_list.as_mut_ptr(), stored);
        }
        if matches!(local, Local::Delayed) {
            self.local_op_done();
        }
    }

    /// The QP's PD, an `rvt_pd` of ours.
    pub(super) fn pd(&self) -> *mut bindings::rvt_pd {
        // SAFETY: `ibqp.pd` is set by ib_core at creation and fixed.
        unsafe { (*self.ibqp()).pd.cast() }
    }
}

/// Drops the region references of the first `n` SGEs at `sg_list`.
///
/// # Safety
///
/// Each of those SGEs holds a reference to its region, which nobody uses after this.
unsafe fn put_sges(sg_list: *mut bindings::rvt_sge, n: usize) {
    for i in 0..n {
        // SAFETY: the caller's guarantee.
        unsafe { bindings::rdmavt_rs_rvt_put_mr((*sg_list.add(i)).mr) };
    }
}
