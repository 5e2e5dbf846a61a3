// SPDX-License-Identifier: GPL-2.0-only

//! Spinlocks that live inside C structs.
//!
//! hfi1 and qib take the locks embedded in `struct rvt_dev_info`, `rvt_qp`, `rvt_krwq` and
//! friends, so those locks keep their C type and place. Every lock site of the crate reaches
//! such a lock through [`c_lock`], the one place that turns a C `spinlock_t` into the kernel
//! crate's `Lock`. On top of it, [`Guarded`] owns the lock and hands out the one field that
//! lock protects, the way `MapleGuard` owns a maple tree's spinlock
//! (rust/kernel/maple_tree.rs), for the counters and lists of `rvt_dev_info`; the QP, the
//! receive ring, the CQ and the lkey table build their own guards on [`c_lock`], each handing
//! out what its lock protects.

use core::{
    ffi::CStr,
    marker::PhantomData,
    ops::{Deref, DerefMut},
    pin::Pin,
};

use crate::compat::{
    self,
    lock::{Backend, Guard, Lock, SpinLockBackend},
    LockClassKey,
};

use crate::bindings;

/// The C spinlock at `lock`, as the kernel crate's lock over no data, to be taken with backend
/// `B` (which says whether interrupts are disabled).
///
/// # Safety
///
/// `lock` is an initialised spinlock that lives for `'a`.
pub(crate) unsafe fn c_lock<'a, B>(lock: *mut bindings::spinlock_t) -> &'a Lock<(), B>
where
    B: Backend<State = kernel::bindings::spinlock_t>,
{
    // SAFETY: bindgen generated the same C type twice, once in the kernel crate's bindings
    // and once in ours; the caller guarantees the lock is initialised and lives for `'a`.
    unsafe { Lock::<(), B>::from_raw(lock.cast()) }
}

/// A held C spinlock and, through it, the field it protects. The access is exclusive only
/// among code that takes the lock to touch the field (C code such as hfi1 included), which is
/// what the caller of [`Guarded::lock`] promises; the guard cannot check it.
pub(crate) struct Guarded<'a, T, B: Backend = SpinLockBackend> {
    _guard: Guard<'a, (), B>,
    field: *mut T,
    _field: PhantomData<&'a mut T>,
}

impl<'a, T, B> Guarded<'a, T, B>
where
    B: Backend<State = kernel::bindings::spinlock_t>,
{
    /// Takes `lock` and gives access to `field`.
    ///
    /// # Safety
    ///
    /// `lock` is an initialised spinlock and `field` a valid pointer, both for `'a`, and `lock`
    /// protects `field`: nothing reads or writes `field` without holding `lock`.
    pub(crate) unsafe fn lock(lock: *mut bindings::spinlock_t, field: *mut T) -> Self {
        // SAFETY: the caller guarantees the lock is initialised and lives for `'a`.
        let lock = unsafe { c_lock::<B>(lock) };
        Self {
            _guard: lock.lock(),
            field,
            _field: PhantomData,
        }
    }
}

impl<T, B: Backend> Deref for Guarded<'_, T, B> {
    type Target = T;

    fn deref(&self) -> &T {
        // SAFETY: the lock that protects `field` is held for as long as `self` lives.
        unsafe { &*self.field }
    }
}

impl<T, B: Backend> DerefMut for Guarded<'_, T, B> {
    fn deref_mut(&mut self) -> &mut T {
        // SAFETY: the lock that protects `field` is held for as long as `self` lives, and
        // `&mut self` makes this the only reference through the guard.
        unsafe { &mut *self.field }
    }
}

/// Takes a C spinlock that protects no single field but serialises a set of writers (a hash
/// table's, a bitmap's): the guard only proves the lock is held.
///
/// # Safety
///
/// `lock` is an initialised spinlock that lives for `'a`.
pub(crate) unsafe fn lock_raw<'a, B>(lock: *mut bindings::spinlock_t) -> Guard<'a, (), B>
where
    B: Backend<State = kernel::bindings::spinlock_t>,
{
    // SAFETY: the caller's guarantee.
    unsafe { c_lock::<B>(lock) }.lock()
}

/// Initialises a spinlock embedded in a C struct, with its own lockdep class.
///
/// # Safety
///
/// `lock` is valid for writes and not in use (never initialised, or no longer held by anyone).
pub(crate) unsafe fn init_spinlock(
    lock: *mut bindings::spinlock_t,
    name: &'static CStr,
    key: Pin<&'static LockClassKey>,
) {
    // SAFETY: the caller guarantees `lock` is valid and unused; `name` and `key` are static.
    unsafe { SpinLockBackend::init(lock.cast(), compat::c_str_ptr(name), key.as_ptr()) }
}

/// `spin_lock_init()`: one lockdep class per call site, named after the lock, as in C.
macro_rules! spin_lock_init {
    ($lock:expr, $name:literal) => {
        $crate::lock::init_spinlock($lock, $name, $crate::compat::static_lock_class!())
    };
}
pub(crate) use spin_lock_init;
