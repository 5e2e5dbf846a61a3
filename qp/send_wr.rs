// SPDX-License-Identifier: GPL-2.0-only

//! A consumer's send work request, `struct ib_send_wr` inside the struct its opcode calls for
//! (`ib_rdma_wr`, `ib_atomic_wr`, `ib_ud_wr`, `ib_reg_wr`), and the driver's `post_parms`
//! entry for its opcode: what `post_send` reads of both.

use core::{mem::size_of, ptr, slice};

use kernel::{ffi::c_int, prelude::*};

use super::Qp;
use crate::{bindings, device::Device, mr};

/// The work request opcodes (`IB_WR_*`), bindgen's newtype over C's `enum ib_wr_opcode`.
pub(crate) use crate::bindings::ib_wr_opcode as WrOpcode;

/// A scatter/gather entry of a request (`struct ib_sge`): address, length and lkey.
pub(crate) use crate::bindings::ib_sge as Sge;

/// `RVT_OPERATION_MAX`: the number of entries of the driver's `post_parms` (a macro over an
/// enum that bindgen cannot evaluate).
pub(crate) const OPERATION_MAX: u32 = bindings::ib_wr_opcode::IB_WR_RESERVED10.0 + 1;

/// A posted send work request, with the rest of the list behind it.
///
/// # Invariants
///
/// `self.0` is valid for `'a`, in kernel memory, and the head of the struct its opcode calls
/// for on the QP it is posted to (`ib_ud_wr` on every QP that is not RC or UC); it has
/// `num_sge` entries at `sg_list` when `num_sge` is positive, and `next` is NULL or another
/// such request. ib_core's contract for `post_send`.
#[derive(Clone, Copy)]
pub(crate) struct SendWr<'a>(&'a bindings::ib_send_wr);

impl<'a> SendWr<'a> {
    /// # Safety
    ///
    /// `wr` is a list of requests as the type invariant describes, valid for `'a`.
    pub(crate) unsafe fn from_raw(wr: *const bindings::ib_send_wr) -> Self {
        // SAFETY: the caller's guarantee.
        Self(unsafe { &*wr })
    }

    /// The request's address, for `bad_wr`.
    pub(crate) fn as_ptr(self) -> *const bindings::ib_send_wr {
        self.0
    }

    /// The next request of the list.
    pub(crate) fn next(self) -> Option<Self> {
        // SAFETY: `next` is NULL or a request as valid as this one (type invariant).
        (!self.0.next.is_null()).then(|| unsafe { Self::from_raw(self.0.next) })
    }

    pub(crate) fn opcode(self) -> WrOpcode {
        self.0.opcode
    }

    /// The consumer's SGE count, unchecked: it may be negative or beyond the QP's limit.
    pub(crate) fn num_sge(self) -> c_int {
        self.0.num_sge
    }

    /// The request's SGEs; none when `num_sge` is not positive.
    pub(crate) fn sges(self) -> &'a [Sge] {
        match usize::try_from(self.0.num_sge) {
            // SAFETY: `sg_list` has `num_sge` entries (type invariant).
            Ok(n) if n > 0 => unsafe { slice::from_raw_parts(self.0.sg_list, n) },
            _ => &[],
        }
    }

    fn has_flag(self, flag: bindings::ib_send_flags) -> bool {
        // CAST: the send flags are bits of an int.
        self.0.send_flags & flag as c_int != 0
    }

    pub(crate) fn signaled(self) -> bool {
        self.has_flag(bindings::ib_send_flags_IB_SEND_SIGNALED)
    }

    pub(crate) fn fenced(self) -> bool {
        self.has_flag(bindings::ib_send_flags_IB_SEND_FENCE)
    }

    /// The rkey of LOCAL_INV and SEND_WITH_INV.
    pub(crate) fn invalidate_rkey(self) -> u32 {
        // SAFETY: `ex` is a union of two `u32`s, so either reads as a valid value.
        unsafe { self.0.ex.invalidate_rkey }
    }

    /// A request to a QP that is neither RC nor UC: whether its address handle is there and
    /// of `qp`'s PD. C dereferences a NULL AH; it is refused here.
    pub(crate) fn ud_ah_ok(self, qp: &Qp) -> bool {
        if qp.is_rc() || qp.is_uc() {
            return false;
        }
        // SAFETY: a request to such a QP is the head of an `ib_ud_wr` (type invariant).
        let ah = unsafe { (*ptr::from_ref(self.0).cast::<bindings::ib_ud_wr>()).ah };
        // SAFETY: a non-NULL AH of a request is a live AH (ib_core's contract).
        !ah.is_null() && unsafe { (*ah).pd } == unsafe { (*qp.ibqp()).pd }
    }

    /// The bytes a send queue slot keeps of a request to a QP that is neither RC nor UC.
    pub(crate) const UD_BYTES: usize = size_of::<bindings::ib_ud_wr>();

    /// Carries out a REG_MR request on `qp` (`rvt_fast_reg_mr`); EINVAL for another opcode.
    pub(crate) fn fast_reg(self, qp: &Qp) -> Result {
        if self.opcode() != WrOpcode::IB_WR_REG_MR {
            return Err(EINVAL);
        }
        // SAFETY: a REG_MR request is the head of an `ib_reg_wr` (type invariant) naming an MR
        // of the QP's device, live while the request is posted (ib_core's contract).
        unsafe {
            let reg = &*ptr::from_ref(self.0).cast::<bindings::ib_reg_wr>();
            mr::fast_reg_mr(qp, reg.mr, reg.key, reg.access)
        }
    }
}

/// The driver's `post_parms` entry of an opcode (`struct rvt_operation_params`).
#[derive(Clone, Copy)]
pub(crate) struct OpParams(bindings::rvt_operation_params);

impl OpParams {
    /// The entry of `opcode` in `dev`'s table; `None` beyond it.
    pub(crate) fn of(dev: &Device, opcode: WrOpcode) -> Option<Self> {
        if opcode.0 >= OPERATION_MAX {
            return None;
        }
        // SAFETY: `post_parms` is the driver's table of `RVT_OPERATION_MAX` entries, fixed at
        // registration (which checked it is there).
        Some(Self(unsafe {
            *(*dev.as_raw()).post_parms.add(opcode.0 as usize)
        }))
    }

    /// The bytes of the request a send queue slot keeps; 0 for an opcode the driver does not
    /// support.
    pub(crate) fn length(self) -> usize {
        self.0.length
    }

    /// Whether the driver supports the opcode on `qp`'s type.
    pub(crate) fn supports(self, qp: &Qp) -> bool {
        1u32.checked_shl(qp.qp_type().0)
            .is_some_and(|bit| self.0.qpt_support & bit != 0)
    }

    fn has(self, flag: u32) -> bool {
        self.0.flags & flag != 0
    }

    /// RVT_OPERATION_PRIV: kernel consumers only.
    pub(crate) fn privileged(self) -> bool {
        self.has(bindings::RVT_OPERATION_PRIV)
    }

    /// RVT_OPERATION_ATOMIC: needs `max_rd_atomic`.
    pub(crate) fn atomic(self) -> bool {
        self.has(bindings::RVT_OPERATION_ATOMIC)
    }

    /// RVT_OPERATION_ATOMIC_SGE: one aligned 8-byte SGE at least.
    pub(crate) fn atomic_sge(self) -> bool {
        self.has(bindings::RVT_OPERATION_ATOMIC_SGE)
    }

    /// RVT_OPERATION_LOCAL: carried out at post time.
    pub(crate) fn local(self) -> bool {
        self.has(bindings::RVT_OPERATION_LOCAL)
    }

    /// RVT_OPERATION_USE_RESERVE: takes one of the driver's reserved slots.
    pub(crate) fn use_reserve(self) -> bool {
        self.has(bindings::RVT_OPERATION_USE_RESERVE)
    }
}
