// SPDX-License-Identifier: GPL-2.0-only

//! A send WQE, `struct rvt_swqe`: a slot of the send queue, which `post_send` fills (under
//! `s_hlock`, in a slot the send engine is not using) and the send engine reads until the WQE
//! completes.

use core::{mem::size_of, ptr, slice};

use kernel::{ffi::c_int, prelude::*, types::Opaque};

use super::{
    send_wr::{SendWr, Sge, WrOpcode, OPERATION_MAX},
    Qp,
};
use crate::{bindings, compat::read_side::ReadSide, cq::WcOpcode, device::Device, mr};

/// `RVT_SEND_RESERVE_USED` (rdmavt_qp.h, a macro over an enum bindgen leaves out): the WQE
/// took one of the driver's reserved slots.
const SEND_RESERVE_USED: c_int = bindings::ib_send_flags_IB_SEND_RESERVED_START;
/// `RVT_SEND_COMPLETION_ONLY`: a local operation already carried out, queued only so that it
/// completes in order.
const SEND_COMPLETION_ONLY: c_int = bindings::ib_send_flags_IB_SEND_RESERVED_START << 1;

/// A posted send WQE.
///
/// # Invariants
///
/// Wraps a slot of a live QP's send queue holding a posted WQE that has not completed: its
/// fields do not change while a reference to this wrapper is used (`post_send` writes only
/// free slots, and the slot becomes free only when the WQE completes).
#[repr(transparent)]
pub(crate) struct Swqe(Opaque<bindings::rvt_swqe>);

/// The operands of an atomic WR (`struct ib_atomic_wr`).
#[derive(Clone, Copy)]
pub(crate) struct AtomicWr {
    pub(crate) remote_addr: u64,
    pub(crate) rkey: u32,
    /// The value compared (compare-and-swap) or added (fetch-and-add).
    pub(crate) compare_add: u64,
    pub(crate) swap: u64,
}

impl Swqe {
    /// # Safety
    ///
    /// `wqe` is a slot of a live QP's send queue holding a posted WQE that does not complete
    /// while the returned reference is used.
    pub(crate) unsafe fn from_raw<'a>(wqe: *mut bindings::rvt_swqe) -> &'a Self {
        // SAFETY: `Swqe` is a transparent wrapper; the caller guarantees the rest.
        unsafe { &*wqe.cast() }
    }

    pub(crate) fn as_raw(&self) -> *mut bindings::rvt_swqe {
        self.0.get()
    }

    /// The work request, without its `sg_list` (the WQE's own SGEs follow it).
    fn wr(&self) -> &bindings::ib_send_wr {
        // SAFETY: `wr` is the member every WQE fills, and it does not change while `self` is
        // used (type invariant).
        unsafe { &(*self.as_raw()).__bindgen_anon_1.wr }
    }

    pub(crate) fn opcode(&self) -> WrOpcode {
        self.wr().opcode
    }

    /// The total length of the WQE's data.
    pub(crate) fn length(&self) -> u32 {
        // SAFETY: as `wr`.
        unsafe { (*self.as_raw()).length }
    }

    fn has_flag(&self, flag: bindings::ib_send_flags) -> bool {
        // CAST: the send flags are bits of an int.
        self.wr().send_flags & flag as c_int != 0
    }

    /// The consumer's ID of the request.
    pub(crate) fn wr_id(&self) -> u64 {
        // SAFETY: `wr_id` is the member of the union the consumer fills (`wr_cqe` is the
        // same word).
        unsafe { self.wr().__bindgen_anon_1.wr_id }
    }

    /// IB_SEND_SIGNALED: the consumer asked for a completion.
    pub(crate) fn signaled(&self) -> bool {
        self.has_flag(bindings::ib_send_flags_IB_SEND_SIGNALED)
    }

    /// rdmavt's private flag on a WQE that took one of the driver's reserved slots.
    pub(crate) fn reserve_used(&self) -> bool {
        self.wr().send_flags & SEND_RESERVE_USED != 0
    }

    /// The completion opcode the driver's `wc_opcode` table gives the WQE's opcode; `None`
    /// for an opcode beyond it (`post_send` accepts none).
    pub(crate) fn wc_opcode(&self, dev: &Device) -> Option<WcOpcode> {
        let op = self.opcode().0;
        // SAFETY: `wc_opcode` is the driver's table of `RVT_OPERATION_MAX` entries, fixed at
        // registration; `op` is within it.
        (op < OPERATION_MAX).then(|| unsafe { *(*dev.as_raw()).wc_opcode.add(op as usize) })
    }

    /// Drops the WQE's references: its SGEs' regions (inside the read-side section `at`, the
    /// caller's `s_lock`), and a UD WQE's copy of its address (`rvt_put_qp_swqe`).
    ///
    /// # Safety
    ///
    /// The WQE is `qp`'s, finished by the send engine, and its slot is not used again until
    /// `post_send` fills it anew.
    pub(crate) unsafe fn put_refs(&self, qp: &Qp, at: ReadSide<'_>) {
        for sge in self.sges() {
            // SAFETY: each SGE of the WQE holds a reference to its region (type invariant),
            // which the caller says nothing uses after this.
            unsafe { mr::put_mr(sge.mr, at) };
        }
        if qp.is_ud_like() {
            // SAFETY: a UD-like QP's posted WQE holds the copy of its AH's attributes that
            // `post_send` made (`SwqeSlot::copy_ud_ah`); the caller says nothing uses it after
            // this.
            unsafe { bindings::rdma_destroy_ah_attr((*self.as_raw()).__bindgen_anon_1.ud_wr.attr) };
        }
    }

    /// The WQE's SGEs: `num_sge` of them, which `post_send` set to the count it stored.
    fn sges(&self) -> &[bindings::rvt_sge] {
        let n = usize::try_from(self.wr().num_sge).unwrap_or(0);
        // SAFETY: a posted WQE's slot holds `num_sge` initialised SGEs after its `wr`, which
        // do not change while `self` is used (type invariant).
        unsafe { slice::from_raw_parts((*self.as_raw()).sg_list.as_ptr(), n) }
    }

    /// Whether one of the WQE's SGEs references the region of `lkey`.
    pub(crate) fn references_lkey(&self, lkey: u32) -> bool {
        self.sges().iter().any(|sge| {
            // SAFETY: each SGE holds a reference to its region, which is so alive (type
            // invariant).
            unsafe { bindings::rvt_mr_has_lkey(sge.mr, lkey) }
        })
    }

    /// IB_SEND_SOLICITED: the receive completion wakes a consumer waiting for solicited
    /// events.
    pub(crate) fn solicited(&self) -> bool {
        self.has_flag(bindings::ib_send_flags_IB_SEND_SOLICITED)
    }

    /// rdmavt's private flag on a LOCAL_INV that `post_send` already performed, because it was
    /// neither fenced nor behind another local operation: only its completion is left.
    pub(crate) fn completion_only(&self) -> bool {
        self.wr().send_flags & SEND_COMPLETION_ONLY != 0
    }

    /// The immediate data of a `*_WITH_IMM` opcode, in network order.
    pub(crate) fn imm_data(&self) -> u32 {
        // SAFETY: `ex` is a union of two `u32`s, so either reads as a valid value; the
        // `*_WITH_IMM` opcodes fill `imm_data`.
        unsafe { self.wr().ex.imm_data }
    }

    /// The rkey to invalidate of LOCAL_INV and SEND_WITH_INV.
    pub(crate) fn invalidate_rkey(&self) -> u32 {
        // SAFETY: as `imm_data`; those opcodes fill `invalidate_rkey`.
        unsafe { self.wr().ex.invalidate_rkey }
    }

    /// The remote address and rkey of an RDMA WRITE or READ.
    pub(crate) fn rdma(&self) -> (u64, u32) {
        // SAFETY: the RDMA opcodes fill `rdma_wr` (its `wr` is the one above); the WQE does
        // not change while `self` is used (type invariant).
        let rdma = unsafe { &(*self.as_raw()).__bindgen_anon_1.rdma_wr };
        (rdma.remote_addr, rdma.rkey)
    }

    /// The operands of an atomic WR.
    pub(crate) fn atomic(&self) -> AtomicWr {
        // SAFETY: as `rdma`; the atomic opcodes fill `atomic_wr`.
        let a = unsafe { &(*self.as_raw()).__bindgen_anon_1.atomic_wr };
        AtomicWr {
            remote_addr: a.remote_addr,
            rkey: a.rkey,
            compare_add: a.compare_add,
            swap: a.swap,
        }
    }
}

/// The bytes of a work request a send queue slot holds (the union at the head of
/// `rvt_swqe`).
pub(crate) const SLOT_WR_BYTES: usize = size_of::<bindings::rvt_swqe__bindgen_ty_1>();

/// The free slot at `s_head` that `post_send` fills, before it is published.
///
/// # Invariants
///
/// Wraps a slot of a live QP's send queue, with room for `max_sge` SGEs, that nothing else
/// reads or writes while this wrapper lives: the slot at `s_head`, which the send engine does
/// not read until `s_head` moves past it, with the QP's `s_hlock` held. Its SGE entries are
/// initialised memory (the queue is zeroed at creation); the first `stored` of them hold a
/// reference to their region.
pub(crate) struct SwqeSlot<'a> {
    wqe: &'a mut bindings::rvt_swqe,
    max_sge: usize,
    stored: usize,
}

impl<'a> SwqeSlot<'a> {
    /// # Safety
    ///
    /// `wqe` is the slot at `s_head` of a live QP's send queue whose `s_hlock` is held for
    /// `'a`, with room for `max_sge` SGEs.
    pub(crate) unsafe fn new(wqe: *mut bindings::rvt_swqe, max_sge: u8) -> Self {
        Self {
            // SAFETY: the caller's guarantee: nobody else uses the slot for `'a`.
            wqe: unsafe { &mut *wqe },
            max_sge: usize::from(max_sge),
            stored: 0,
        }
    }

    pub(crate) fn as_raw(&mut self) -> *mut bindings::rvt_swqe {
        self.wqe
    }

    /// Copies the first `len` bytes of `wr` (the request's struct, as the driver's table or
    /// the QP type says) to the slot's head. EINVAL when the slot cannot hold that many.
    pub(crate) fn fill(&mut self, wr: SendWr<'_>, len: usize) -> Result {
        if len > SLOT_WR_BYTES {
            return Err(EINVAL);
        }
        // SAFETY: `len` is within the struct the request heads (the length its opcode calls
        // for; `SendWr`'s invariant) and within the slot's head (checked above); the slot is
        // ours and distinct from the consumer's request.
        unsafe {
            ptr::copy_nonoverlapping(
                wr.as_ptr().cast::<u8>(),
                (&raw mut self.wqe.__bindgen_anon_1).cast::<u8>(),
                len,
            );
        }
        Ok(())
    }

    /// The slot's SGE array.
    fn sges(&mut self) -> &mut [bindings::rvt_sge] {
        // SAFETY: the slot has room for `max_sge` initialised SGEs, ours alone (type
        // invariant).
        unsafe { slice::from_raw_parts_mut(self.wqe.sg_list.as_mut_ptr(), self.max_sge) }
    }

    /// Checks the request's SGE `sge` on `qp` for access `acc` and stores it after the ones
    /// stored so far, holding its region, or merges it into the last one; `at` is the
    /// poster's read-side section. EINVAL when the lkey check fails or the slot is full.
    pub(crate) fn add_sge(&mut self, qp: &Qp, sge: &Sge, acc: u32, at: ReadSide<'_>) -> Result {
        let stored = self.stored;
        let (before, after) = self.sges().split_at_mut(stored);
        let new = after.first_mut().ok_or(EINVAL)?;
        if mr::check_lkey(qp, new, before.last_mut(), sge, acc, at)? {
            self.stored = stored + 1;
        }
        Ok(())
    }

    /// Drops the region references of the SGEs stored so far, inside the read-side section
    /// `at` (the poster's `s_hlock`).
    pub(crate) fn put_sges(&mut self, at: ReadSide<'_>) {
        let n = core::mem::take(&mut self.stored);
        for sge in &self.sges()[..n] {
            // SAFETY: each of the first `stored` SGEs holds a reference to its region (type
            // invariant), which nothing uses after this.
            unsafe { mr::put_mr(sge.mr, at) };
        }
    }

    /// The request as the slot holds it (`wr`, the member every request fills).
    fn wr(&mut self) -> &mut bindings::ib_send_wr {
        // SAFETY: `wr` is the head of every member of the union; the slot is ours.
        unsafe { &mut self.wqe.__bindgen_anon_1.wr }
    }

    /// Records the data's total length and, for a request with SGEs (`has_sges`), the count
    /// stored.
    pub(crate) fn set_length(&mut self, length: u32, has_sges: bool) {
        self.wqe.length = length;
        if has_sges {
            // CAST: `stored <= num_sge`, which is an int.
            self.wr().num_sge = self.stored as c_int;
        }
    }

    pub(crate) fn length(&self) -> u32 {
        self.wqe.length
    }

    /// Sets or clears `RVT_SEND_RESERVE_USED`: the WQE took one of the reserved slots.
    pub(crate) fn set_reserve_used(&mut self, used: bool) {
        let flags = &mut self.wr().send_flags;
        if used {
            *flags |= SEND_RESERVE_USED;
        } else {
            *flags &= !SEND_RESERVE_USED;
        }
    }

    /// Sets `RVT_SEND_COMPLETION_ONLY`: a local operation carried out already.
    pub(crate) fn set_completion_only(&mut self) {
        self.wr().send_flags |= SEND_COMPLETION_ONLY;
    }

    /// The send sequence number and the first and last PSNs.
    pub(crate) fn set_sequence(&mut self, ssn: u32, psn: u32, lpsn: u32) {
        self.wqe.ssn = ssn;
        self.wqe.psn = psn;
        self.wqe.lpsn = lpsn;
    }

    pub(crate) fn lpsn(&self) -> u32 {
        self.wqe.lpsn
    }

    /// A UD slot: copies its request's address handle's attributes into the slot's own copy
    /// (`attr`) and returns the AH's path MTU.
    ///
    /// # Safety
    ///
    /// The slot belongs to a QP that is neither RC nor UC, whose slots each have an `attr`
    /// (allocated at creation); it was filled from a request whose AH was checked to be live
    /// and of the QP's PD ([`SendWr::ud_ah_ok`]), so the head of an `rvt_ah`.
    pub(crate) unsafe fn copy_ud_ah(&mut self) -> u8 {
        // SAFETY: the caller's guarantee.
        unsafe {
            let ud = &mut self.wqe.__bindgen_anon_1.ud_wr;
            let ah = ud.wr.ah.cast::<bindings::rvt_ah>();
            bindings::rdma_copy_ah_attr(ud.attr, &(*ah).attr);
            (*ah).log_pmtu
        }
    }

    /// Gives back the copy [`Self::copy_ud_ah`] made.
    ///
    /// # Safety
    ///
    /// [`Self::copy_ud_ah`] was called on the slot.
    pub(crate) unsafe fn destroy_ud_ah(&mut self) {
        // SAFETY: the slot holds a copy of the AH's attributes (caller's guarantee).
        unsafe { bindings::rdma_destroy_ah_attr(self.wqe.__bindgen_anon_1.ud_wr.attr) };
    }
}
