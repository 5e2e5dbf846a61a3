// SPDX-License-Identifier: GPL-2.0-only

//! Queue pairs: `struct rvt_qp`, its QPN table, its life (create, modify, destroy), the post
//! paths, the RC timers and the QP iterator.
//!
//! `struct rvt_qp` keeps its C layout and its C locks, because hfi1 reads its fields and takes
//! its locks directly. Rust code reaches the locks only through the guards below.
//!
//! # Lock order
//!
//! ```text
//!   r_lock  ->  s_hlock  ->  s_lock  ->  (a CQ's lock, rdi->n_qps_lock, qpt->lock: leaves)
//!
//!   r_lock  ->  s_lock  ->  rq.lock  ->  p_lock  ->  c_lock  ->  a CQ's lock
//! ```
//!
//! The second line is the receive queue's (`crate::krwq`): `rq.lock` exists only for an
//! SRQ, where it guards the ring's shape against a resize; `p_lock` is the producer's
//! (`post_recv`, `post_srq_recv`), `c_lock` the consumer's (`rvt_get_rwqe`, under the QP's
//! `r_lock`; the flush in `rvt_error_qp`, under `r_lock` and `s_lock`). Only an SRQ resize
//! holds `p_lock` and `c_lock` together; a post in the error state and a bad WQE enter a
//! completion under `p_lock` or `c_lock`. The KUnit suite `rdmavt_rs_krwq` runs both sides
//! at once under lockdep.
//!
//! A path that holds `s_lock` never takes `r_lock` of the same QP. The C rdmavt breaks this
//! in `rvt_ruc_loopback()`: to flush the sender into the error state it takes the sender's
//! `r_lock` inside its `s_lock`, while `rvt_modify_qp()` and the receive paths take `r_lock`
//! first: an ABBA inversion on one QP. rdmavt-rs's loopback drops `s_lock` and takes both in
//! the order above (see `crate::loopback`). Between two QPs, no path holds one QP's lock while
//! taking another's, except `r_lock` of a receiver under nothing of its sender.
//!
//! All three QP locks are taken with interrupts disabled, as in C (`spin_lock_irqsave`):
//! hfi1 takes them from its interrupt handlers.

mod attr;
mod complete;
mod create;
mod destroy;
mod engine;
mod error;
mod exclusive;
mod fields;
mod init_attr;
mod iter;
mod modify;
mod mr_clean;
mod qpn;
mod queues;
mod recv;
mod reset;
mod send;
mod send_wr;
mod state;
mod swqe;
#[cfg(rdmavt_kunit)]
mod tests;
mod timers;

pub(crate) use attr::ModifyAttr;
pub(crate) use create::create_qp;
pub(crate) use destroy::{destroy_qp, query_qp};
pub(crate) use engine::SendEngine;
pub(crate) use error::{raise_last_wqe_reached, ErrorOutcome};
pub(crate) use exclusive::{AllLocks, OwnedQp, QpMut};
pub(crate) use fields::Locked;
pub(crate) use init_attr::InitAttr;
pub(crate) use modify::modify_qp;
pub(crate) use mr_clean::dereg_clean_qps;
pub(crate) use qpn::{driver_init, exit, lookup, QpDev};
pub(crate) use recv::{post_recv, Delivered, GetWqe};
pub(crate) use send::post_send;
pub(crate) use send_wr::WrOpcode;
pub(crate) use state::state_ops;
pub(crate) use swqe::{Swqe, SwqeSlot};

use core::{marker::PhantomData, mem::ManuallyDrop, ptr::NonNull};

use kernel::types::Opaque;

use crate::compat::{
    aref::AlwaysRefCounted,
    lock::{assume_held, Guard, SpinLockIrqBackend},
    read_side::ReadSide,
};

use crate::{
    bindings,
    cq::Cq,
    device::Device,
    lock::{c_lock, spin_lock_init},
};

/// A QP of one of our devices.
///
/// A `&Qp` lives no longer than what keeps the QP alive: ib_core during a verb, an RCU read
/// section in which the QP was found in the QPN table, or a counted reference. To keep the QP
/// beyond that, take a counted one: `ARef::<Qp>::from(qp)` (`rvt_get_qp()`), given back
/// (`rvt_put_qp()`) when the `ARef` drops.
///
/// # Invariants
///
/// Wraps a live `rvt_qp` that `create_qp` initialised (so its locks and its `refcount` are
/// initialised), and that stays alive while the reference to this wrapper exists.
#[repr(transparent)]
pub(crate) struct Qp(Opaque<bindings::rvt_qp>);

// SAFETY: `rvt_get_qp()` and `rvt_put_qp()` are the QP's count (`refcount`: zero in the zeroed
// QP that ib_core allocates, set to zero again by `create_qp` before anything can find the QP,
// so every QP is counted from the start). A counted reference keeps the QP alive:
// `destroy_qp` first unpublishes the QP (the reset takes it out of the QPN table and waits for
// an RCU grace period, so no reader of the table can still find it and count it), then waits
// for the count to reach zero (`rdmavt_rs_wait_qp_unused`, C's `wait_event(qp->wait,
// !atomic_read(&qp->refcount))`, which `rvt_put_qp()` wakes when it drops the last), and only
// then frees the QP.
unsafe impl AlwaysRefCounted for Qp {
    fn inc_ref(&self) {
        // SAFETY: a live QP (type invariant), whose `refcount` is an initialised atomic_t;
        // its destroyer cannot be past its wait for the count while `self` is borrowed.
        unsafe { bindings::rdmavt_rs_rvt_get_qp(self.as_raw()) }
    }

    unsafe fn dec_ref(obj: NonNull<Self>) {
        // SAFETY: the caller gives back a reference it owns, so the QP is still live; after
        // this the QP may be freed, and it is not touched again here.
        unsafe { bindings::rdmavt_rs_rvt_put_qp(obj.as_ptr().cast()) }
    }
}

impl Qp {
    /// # Safety
    ///
    /// `qp` points to a live `rvt_qp` that `create_qp` initialised, alive for `'a`.
    pub(crate) unsafe fn from_raw<'a>(qp: *mut bindings::rvt_qp) -> &'a Self {
        // SAFETY: `Qp` is a transparent wrapper; the caller guarantees the rest.
        unsafe { &*qp.cast() }
    }

    /// # Safety
    ///
    /// `ibqp` is the `ibqp` head of a live `rvt_qp` that `create_qp` initialised, alive for
    /// `'a`: true of every QP ib_core passes to our verbs.
    pub(crate) unsafe fn from_ib<'a>(ibqp: *mut bindings::ib_qp) -> &'a Self {
        // SAFETY: `ibqp` is the first member of `rvt_qp` (checked in device/ops.rs), so the
        // container is at the same address; the caller guarantees the rest.
        unsafe { Self::from_raw(ibqp.cast()) }
    }

    pub(crate) fn as_raw(&self) -> *mut bindings::rvt_qp {
        self.0.get()
    }

    pub(crate) fn ibqp(&self) -> *mut bindings::ib_qp {
        // SAFETY: the QP is live (type invariant); this only takes a field's address.
        unsafe { &raw mut (*self.as_raw()).ibqp }
    }

    /// The device the QP belongs to.
    pub(crate) fn device(&self) -> &Device {
        // SAFETY: a live QP's `ibqp.device` is the registered device that created it, which
        // outlives its QPs.
        unsafe { Device::from_ib((*self.ibqp()).device) }
    }

    /// The QP number, fixed at creation.
    pub(crate) fn qpn(&self) -> u32 {
        // SAFETY: `qp_num` is written once, before the QP is published.
        unsafe { (*self.ibqp()).qp_num }
    }

    /// The transport type, fixed at creation.
    pub(crate) fn qp_type(&self) -> bindings::ib_qp_type {
        // SAFETY: `qp_type` is written once, before the QP is published.
        unsafe { (*self.ibqp()).qp_type }
    }

    /// The QP's PD, an `rvt_pd` of ours: `ibqp.pd`, set by ib_core at creation and fixed.
    pub(crate) fn pd(&self) -> *mut bindings::rvt_pd {
        // SAFETY: a live QP (type invariant); `ibqp.pd` is fixed once the QP is created.
        unsafe { (*self.ibqp()).pd.cast() }
    }

    /// Whether the QP's PD belongs to a user process (which may not post privileged
    /// operations nor use the DMA MR).
    pub(crate) fn user_pd(&self) -> bool {
        // SAFETY: the QP's PD is a live PD of ours, the head of an `rvt_pd`, and outlives it.
        unsafe { (*self.pd()).user }
    }

    /// The receive CQ, fixed at creation.
    pub(crate) fn recv_cq(&self) -> &Cq {
        // SAFETY: a live QP; `ibqp.recv_cq` is a CQ of ours, set at creation, which outlives
        // the QP (ib_core holds a reference on it for the QP).
        unsafe { Cq::from_ib((*self.ibqp()).recv_cq) }
    }

    /// The send CQ, fixed at creation.
    pub(crate) fn send_cq(&self) -> &Cq {
        // SAFETY: as `recv_cq`'s.
        unsafe { Cq::from_ib((*self.ibqp()).send_cq) }
    }

    /// Whether the QP is a reliable connected one, fixed at creation.
    pub(crate) fn is_rc(&self) -> bool {
        self.qp_type() == bindings::ib_qp_type::IB_QPT_RC
    }

    /// Whether the QP is an unreliable connected one, fixed at creation.
    pub(crate) fn is_uc(&self) -> bool {
        self.qp_type() == bindings::ib_qp_type::IB_QPT_UC
    }

    /// Whether the QP is UD, SMI or GSI (`allowed_ops` is IB_OPCODE_UD): its send queue
    /// slots each carry a copy of their request's address. Fixed at creation.
    pub(crate) fn is_ud_like(&self) -> bool {
        self.allowed_ops() == bindings::IB_OPCODE_UD as u8
    }

    /// Whether the QP is a port's QP 0 or 1 (IB_QPT_SMI, IB_QPT_GSI), fixed at creation.
    pub(crate) fn is_special(&self) -> bool {
        let t = self.qp_type();
        t == bindings::ib_qp_type::IB_QPT_SMI || t == bindings::ib_qp_type::IB_QPT_GSI
    }

    /// Takes `r_lock`: the responder state (`r_*` fields, the receive queue's consumer side
    /// for a QP without SRQ, `state` with `s_lock` also held).
    pub(crate) fn r_lock(&self) -> RecvGuard<'_> {
        // SAFETY: `r_lock` is initialised (type invariant).
        RecvGuard(unsafe { QpGuard::lock(self, self.raw_lock(Lock::R)) })
    }

    /// Takes `s_hlock`: the post-send line (`s_head`, `s_avail`, `s_ssn`, `s_next_psn`).
    pub(crate) fn s_hlock(&self) -> PostGuard<'_> {
        // SAFETY: `s_hlock` is initialised (type invariant).
        PostGuard(unsafe { QpGuard::lock(self, self.raw_lock(Lock::SH)) })
    }

    /// Takes `s_lock`: the requester state (`s_flags`, `s_last`, `s_cur`, `s_tail`, `s_acked`,
    /// the timers' arming, `state` together with `r_lock`).
    pub(crate) fn s_lock(&self) -> SendGuard<'_> {
        // SAFETY: `s_lock` is initialised (type invariant).
        SendGuard(unsafe { QpGuard::lock(self, self.raw_lock(Lock::S)) })
    }

    /// The address of one of the QP's three spinlocks.
    fn raw_lock(&self, lock: Lock) -> *mut bindings::spinlock_t {
        let qp = self.as_raw();
        // SAFETY: only a field address of the live QP is taken.
        unsafe {
            match lock {
                Lock::R => &raw mut (*qp).r_lock,
                Lock::SH => &raw mut (*qp).s_hlock,
                Lock::S => &raw mut (*qp).s_lock,
            }
        }
    }
}

/// The QP's three spinlocks, in the order they are taken.
#[derive(Clone, Copy)]
enum Lock {
    /// `r_lock`.
    R,
    /// `s_hlock`.
    SH,
    /// `s_lock`.
    S,
}

impl OwnedQp<'_> {
    /// Initialises the three QP locks (with their lockdep names) and the QP's wait queue,
    /// before anything can take them.
    pub(crate) fn init_locks(&mut self) {
        // SAFETY: nothing else uses the QP yet (`OwnedQp`'s invariant), so no one takes a
        // lock while it is initialised.
        unsafe {
            spin_lock_init!(self.raw_lock(Lock::R), c"&qp->r_lock");
            spin_lock_init!(self.raw_lock(Lock::SH), c"&qp->s_hlock");
            spin_lock_init!(self.raw_lock(Lock::S), c"&qp->s_lock");
            bindings::rdmavt_rs_init_qp_waits(self.as_raw());
        }
    }
}

impl Qp {
    /// A [`RecvGuard`] for an `r_lock` the caller (a driver, through an export) already
    /// holds. It never unlocks: the lock stays the caller's. Lockdep checks that it is held.
    ///
    /// # Safety
    ///
    /// The caller holds `r_lock` for as long as the returned guard lives.
    pub(crate) unsafe fn assume_r_locked(&self) -> ManuallyDrop<RecvGuard<'_>> {
        // SAFETY: `r_lock` is initialised (type invariant) and held (caller's guarantee).
        ManuallyDrop::new(RecvGuard(unsafe {
            QpGuard::assume(self, self.raw_lock(Lock::R))
        }))
    }

    /// A [`SendGuard`] for an `s_lock` the caller already holds; see [`Qp::assume_r_locked`].
    ///
    /// # Safety
    ///
    /// The caller holds `s_lock` for as long as the returned guard lives.
    pub(crate) unsafe fn assume_s_locked(&self) -> ManuallyDrop<SendGuard<'_>> {
        // SAFETY: `s_lock` is initialised (type invariant) and held (caller's guarantee).
        ManuallyDrop::new(SendGuard(unsafe {
            QpGuard::assume(self, self.raw_lock(Lock::S))
        }))
    }
}

/// One of a QP's C spinlocks, held, taken with interrupts disabled.
pub(crate) struct QpGuard<'a> {
    _guard: Guard<'a, (), SpinLockIrqBackend>,
    qp: &'a Qp,
    _not_send: PhantomData<*mut ()>,
}

impl<'a> QpGuard<'a> {
    /// # Safety
    ///
    /// `lock` is an initialised spinlock inside `qp`.
    unsafe fn lock(qp: &'a Qp, lock: *mut bindings::spinlock_t) -> Self {
        // SAFETY: the caller guarantees `lock` is initialised and lives as long as `qp`.
        let lock = unsafe { c_lock::<SpinLockIrqBackend>(lock) };
        Self {
            _guard: lock.lock(),
            qp,
            _not_send: PhantomData,
        }
    }

    /// A guard for a lock the caller already holds (lockdep asserts it).
    ///
    /// # Safety
    ///
    /// `lock` is an initialised spinlock inside `qp`, held by the caller while the guard
    /// lives; the guard must not be dropped (it would unlock the caller's lock).
    unsafe fn assume(qp: &'a Qp, lock: *mut bindings::spinlock_t) -> Self {
        // SAFETY: as in `lock`; the caller holds the lock.
        let lock = unsafe { c_lock::<SpinLockIrqBackend>(lock) };
        Self {
            // SAFETY: the caller owns the lock and never drops the guard.
            _guard: unsafe { assume_held(lock) },
            qp,
            _not_send: PhantomData,
        }
    }

    /// The RCU read-side section that the held lock is: for giving back region references
    /// without a section of their own.
    fn read_side(&self) -> ReadSide<'_> {
        ReadSide::spinlock(&self._guard)
    }
}

/// `r_lock` held: see [`Qp::r_lock`].
pub(crate) struct RecvGuard<'a>(QpGuard<'a>);

/// `s_hlock` held: see [`Qp::s_hlock`].
pub(crate) struct PostGuard<'a>(QpGuard<'a>);

/// `s_lock` held: see [`Qp::s_lock`].
pub(crate) struct SendGuard<'a>(QpGuard<'a>);

// The QP behind a guard, for the paths that hold one lock and call on into the QP (the
// loopback's requester and responder, the timers); nothing needs it from `PostGuard` yet.
macro_rules! guard_qp {
    ($($guard:ident),*) => {$(
        impl<'a> $guard<'a> {
            /// The QP whose lock this is.
            pub(crate) fn qp(&self) -> &'a Qp {
                self.0.qp
            }
        }
    )*};
}
guard_qp!(RecvGuard, SendGuard);

// Every QP lock held is an RCU read-side section (see `ReadSide`).
macro_rules! guard_read_side {
    ($($guard:ident),*) => {$(
        impl $guard<'_> {
            /// The RCU read-side section that the held lock is.
            pub(crate) fn read_side(&self) -> ReadSide<'_> {
                self.0.read_side()
            }
        }
    )*};
}
guard_read_side!(RecvGuard, PostGuard, SendGuard);

impl SendGuard<'_> {
    /// The QP's state (`IB_QPS_*`). Written only with both `r_lock` and `s_lock` held, so
    /// either lock is enough to read it.
    pub(crate) fn state(&self) -> u32 {
        // SAFETY: `s_lock` is held, see above.
        u32::from(unsafe { (*self.qp_ptr()).state })
    }

    /// `s_flags`.
    pub(crate) fn flags(&self) -> u32 {
        self.s_flags()
    }

    /// Sets bits in `s_flags`.
    pub(crate) fn set_flags(&mut self, bits: u32) {
        *self.s_flags_mut() |= bits;
    }

    /// Clears bits in `s_flags`.
    pub(crate) fn clear_flags(&mut self, bits: u32) {
        *self.s_flags_mut() &= !bits;
    }
}

impl<'a> SendGuard<'a> {
    /// The send WQE in slot `n` of the send queue: `rvt_get_swqe_ptr()`.
    ///
    /// # Safety
    ///
    /// `n < s_size`, and the slot holds a posted WQE that does not complete while the
    /// reference is used.
    pub(crate) unsafe fn swqe(&self, n: u32) -> &'a Swqe {
        // SAFETY: the caller guarantees `n` is a slot of the send queue and that it holds a
        // posted WQE that does not complete while the reference is used.
        unsafe { Swqe::from_raw(self.qp().swqe(n)) }
    }

    /// `r_lock` while `s_lock` is held, against the order (`r_lock` first): only as a
    /// try-lock, which never waits and so cannot deadlock. `None` when someone holds it,
    /// perhaps this very caller further up.
    pub(crate) fn try_r_lock(&self) -> Option<RecvGuard<'a>> {
        let qp = self.qp();
        // SAFETY: `r_lock` is initialised (the QP's type invariant) and lives as long as `qp`.
        let lock = unsafe { c_lock::<SpinLockIrqBackend>(qp.raw_lock(Lock::R)) };
        Some(RecvGuard(QpGuard {
            _guard: lock.try_lock()?,
            qp,
            _not_send: PhantomData,
        }))
    }
}

impl RecvGuard<'_> {
    /// The QP's state (`IB_QPS_*`), see [`SendGuard::state`].
    pub(crate) fn state(&self) -> u32 {
        // SAFETY: `r_lock` is held, see `SendGuard::state`.
        u32::from(unsafe { (*self.qp_ptr()).state })
    }
}

/// `rvt_timeout_to_jiffies()`: the IB local ACK timeout, 4.096 us << `timeout`, in jiffies
/// (`timeout` above 31 counts as 31), rounded as C rounds it.
pub(crate) fn timeout_to_jiffies(timeout: u8) -> kernel::ffi::c_ulong {
    // SAFETY: a pure conversion.
    let jiffies = unsafe { bindings::__usecs_to_jiffies(1u32 << timeout.min(31)) };
    // C computes this in unsigned long, so it cannot overflow on 64-bit.
    jiffies * 4096 / 1000
}
