// SPDX-License-Identifier: GPL-2.0-only

//! A send WQE, `struct rvt_swqe`: a slot of the send queue, which `post_send` fills (under
//! `s_hlock`, in a slot the send engine is not using) and the send engine reads until the WQE
//! completes.

use kernel::{ffi::c_int, types::Opaque};

use crate::bindings;

/// The work request opcodes (`IB_WR_*`), bindgen's newtype over C's `enum ib_wr_opcode`.
pub(crate) use crate::bindings::ib_wr_opcode as WrOpcode;

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

    /// IB_SEND_SOLICITED: the receive completion wakes a consumer waiting for solicited
    /// events.
    pub(crate) fn solicited(&self) -> bool {
        self.has_flag(bindings::ib_send_flags_IB_SEND_SOLICITED)
    }

    /// rdmavt's private flag on a LOCAL_INV that `post_send` already performed, because it was
    /// neither fenced nor behind another local operation: only its completion is left.
    pub(crate) fn completion_only(&self) -> bool {
        self.has_flag(bindings::ib_send_flags_IB_SEND_RESERVED_START << 1)
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
