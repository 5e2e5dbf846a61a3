// SPDX-License-Identifier: GPL-2.0-only

//! Write access to the whole QP, for the paths that change more than one lock's fields at
//! once: [`AllLocks`], all three locks held (`modify_qp`, reset), and [`OwnedQp`], the QP
//! seen by nobody but its creator or its destroyer. Both lend a [`QpMut`], which reads and
//! writes every field of the lock lists in `fields`; only [`OwnedQp`] writes the fields that
//! are fixed once the QP is published.

use core::{marker::PhantomData, ops::Deref};

use super::{Locked, PostGuard, Qp, RecvGuard, SendGuard};
use crate::{bindings, device::Device};

/// All three QP locks, taken in the documented order (see the module `qp`). Fields drop in
/// declaration order, so they are released in the reverse order they were taken.
pub(crate) struct AllLocks<'a> {
    pub(crate) s: SendGuard<'a>,
    pub(crate) h: PostGuard<'a>,
    pub(crate) r: RecvGuard<'a>,
}

impl Qp {
    /// Takes `r_lock`, `s_hlock` and `s_lock`, in that order, as C's `rvt_modify_qp()` and
    /// `rvt_reset_qp()` do (interrupts are disabled from the first).
    pub(crate) fn lock_all(&self) -> AllLocks<'_> {
        let r = self.r_lock();
        let h = self.s_hlock();
        let s = self.s_lock();
        AllLocks { s, h, r }
    }
}

impl<'a> AllLocks<'a> {
    /// The QP whose locks these are.
    pub(crate) fn qp(&self) -> &'a Qp {
        self.s.qp()
    }

    /// Every field the three locks protect, to read and write while they are held.
    pub(crate) fn fields(&mut self) -> QpMut<'_> {
        // INVARIANT: the three locks stay held while `self` is borrowed, which the result
        // does for as long as it lives.
        QpMut {
            qp: self.qp(),
            _borrow: PhantomData,
        }
    }
}

impl Locked for AllLocks<'_> {
    fn qp_ptr(&self) -> *mut bindings::rvt_qp {
        self.qp().as_raw()
    }
}

/// A QP that only its creator or its destroyer sees: not in the QPN table, no reference to it
/// held elsewhere, and no other verb running on it. It writes every field, the fixed ones
/// too.
///
/// # Invariants
///
/// Nothing but the holder of this value uses `qp` while it lives, except the driver's
/// callbacks this holder calls.
pub(crate) struct OwnedQp<'a> {
    qp: &'a Qp,
    _not_send: PhantomData<*mut ()>,
}

impl<'a> OwnedQp<'a> {
    /// The QP `create_qp` is setting up: nothing can find it until `create_qp` returns it to
    /// ib_core, and `modify_qp` to INIT is what publishes it in the QPN table.
    ///
    /// # Safety
    ///
    /// `ibqp` is the `ibqp` head of the zeroed `rvt_qp` that ib_core allocated for this call
    /// of `create_qp` (with `size_ib_qp`), alive for `'a`; the result is dropped before
    /// `create_qp` returns.
    pub(crate) unsafe fn new(ibqp: *mut bindings::ib_qp) -> Self {
        // INVARIANT: ib_core gives the new QP to no other verb, and no other path of ours
        // can reach it, until `create_qp` returns (caller's guarantee).
        Self {
            // SAFETY: the head of a zeroed `rvt_qp` of one of our devices, alive for `'a`.
            // Its locks are not initialised yet, which `Qp`'s invariant asks for: `create`
            // initialises them before anything takes one.
            qp: unsafe { Qp::from_ib(ibqp) },
            _not_send: PhantomData,
        }
    }

    /// The QP `destroy_qp` is tearing down: resets it, which stops it and takes it out of the
    /// QPN table, then waits for the last reference taken before that to be dropped.
    ///
    /// # Safety
    ///
    /// The caller is ib_core's `destroy_qp` for `qp`: ib_core calls no other verb on `qp`,
    /// now or later.
    pub(crate) unsafe fn drain(qp: &'a Qp) -> Self {
        qp.reset();
        // SAFETY: a live QP; the reset took it out of the lookup table, so only holders of a
        // reference taken before can still reach it, and they drop it.
        unsafe { bindings::rdmavt_rs_wait_qp_unused(qp.as_raw()) };
        // INVARIANT: the QP is out of the table with no reference left, its timers and the
        // driver's send engine are stopped (reset), and ib_core calls no other verb on it
        // (caller's guarantee).
        Self {
            qp,
            _not_send: PhantomData,
        }
    }

    /// The device the QP belongs to (borrowed for as long as the QP, not this owner).
    pub(crate) fn device(&self) -> &'a Device {
        self.qp.device()
    }

    /// Every field of the lock lists, to read and write.
    pub(crate) fn fields(&mut self) -> QpMut<'_> {
        // INVARIANT: nothing else uses the QP while `self` lives (type invariant), and the
        // result borrows `self`.
        QpMut {
            qp: self.qp,
            _borrow: PhantomData,
        }
    }

    /// Sets the QP number: `ibqp.qp_num`, fixed once the QP is published.
    pub(crate) fn set_qpn(&mut self, qpn: u32) {
        // SAFETY: nothing else uses the QP (type invariant).
        unsafe { (*self.ibqp()).qp_num = qpn };
    }
}

impl Deref for OwnedQp<'_> {
    type Target = Qp;

    fn deref(&self) -> &Qp {
        self.qp
    }
}

/// Every field that one of the QP's locks protects, to read and write (the accessors are
/// generated in `fields`, from the lock lists), and the QP's state and send queue indices.
///
/// # Invariants
///
/// While it lives, all three of `qp`'s locks are held, or nothing else uses `qp` (an
/// [`OwnedQp`] lent it).
pub(crate) struct QpMut<'a> {
    qp: &'a Qp,
    /// Borrows the [`AllLocks`] or [`OwnedQp`] it came from; never sent to another task.
    _borrow: PhantomData<&'a mut *mut ()>,
}

impl QpMut<'_> {
    /// The raw QP, for the generated accessors.
    pub(super) fn qp_ptr(&self) -> *mut bindings::rvt_qp {
        self.qp.as_raw()
    }

    /// Clears RVT_R_COMM_EST in `r_flags`, so that the next packet the QP receives raises
    /// IB_EVENT_COMM_EST again.
    pub(crate) fn clear_comm_est(&mut self) {
        *self.r_flags_mut() &= !(bindings::RVT_R_COMM_EST as u8);
    }
}
