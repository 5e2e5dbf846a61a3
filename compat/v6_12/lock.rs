// SPDX-License-Identifier: GPL-2.0-only

//! `kernel::sync::lock` for 6.12: a lock over a C `spinlock_t` that lives in a C struct, with
//! 7.3's `Lock::from_raw`, `lock`, `try_lock` and backends (6.12 has neither `from_raw` nor
//! `try_lock`, its `Lock` has no guaranteed layout, and it has no interrupt-disabling backend).

use core::marker::PhantomData;

use kernel::{bindings as kbindings, ffi::c_char, types::Opaque};

use crate::{bindings, compat::irqsave};

/// How a lock is taken and released (7.3's `kernel::sync::lock::Backend`).
///
/// # Safety
///
/// `lock` and `try_lock` take the lock, `unlock` releases a lock taken by them, with the state
/// they returned.
pub(crate) unsafe trait Backend {
    /// The C lock.
    type State;
    /// What `lock` returns and `unlock` needs (the saved interrupt flags, for example).
    type GuardState;

    /// Initialises the lock at `ptr`, for lockdep named `name` in class `key`.
    ///
    /// # Safety
    ///
    /// `ptr` is valid for writes and not in use; `name` and `key` are static.
    unsafe fn init(ptr: *mut Self::State, name: *const c_char, key: *mut kbindings::lock_class_key);

    /// Takes the lock.
    ///
    /// # Safety
    ///
    /// `ptr` is an initialised lock.
    unsafe fn lock(ptr: *mut Self::State) -> Self::GuardState;

    /// Takes the lock if it is free.
    ///
    /// # Safety
    ///
    /// As [`Backend::lock`].
    unsafe fn try_lock(ptr: *mut Self::State) -> Option<Self::GuardState>;

    /// Releases the lock.
    ///
    /// # Safety
    ///
    /// The caller holds the lock, taken with `state`.
    unsafe fn unlock(ptr: *mut Self::State, state: &Self::GuardState);
}

/// `spin_lock()`: for locks never taken in interrupt context.
pub(crate) struct SpinLockBackend;

// SAFETY: the C spinlock calls, paired as C pairs them.
unsafe impl Backend for SpinLockBackend {
    type State = kbindings::spinlock_t;
    type GuardState = ();

    unsafe fn init(
        ptr: *mut Self::State,
        name: *const c_char,
        key: *mut kbindings::lock_class_key,
    ) {
        // SAFETY: the caller's guarantee.
        unsafe { kbindings::__spin_lock_init(ptr, name, key) }
    }

    unsafe fn lock(ptr: *mut Self::State) {
        // SAFETY: the caller's guarantee.
        unsafe { kbindings::spin_lock(ptr) }
    }

    unsafe fn try_lock(ptr: *mut Self::State) -> Option<()> {
        // SAFETY: the caller's guarantee.
        unsafe { bindings::rdmavt_rs_spin_trylock(ptr.cast()) }.then_some(())
    }

    unsafe fn unlock(ptr: *mut Self::State, (): &()) {
        // SAFETY: the caller's guarantee.
        unsafe { kbindings::spin_unlock(ptr) }
    }
}

/// `spin_lock_irqsave()`: for locks also taken in interrupt context (the CQ's, the QP's).
pub(crate) struct SpinLockIrqBackend;

// SAFETY: the C spinlock calls, paired as C pairs them; the saved flags go back to the unlock.
unsafe impl Backend for SpinLockIrqBackend {
    irqsave::irqsave_backend!();
}

/// A lock that protects no Rust data, over a C lock (7.3's `Lock<(), B>`).
#[repr(transparent)]
pub(crate) struct Lock<T, B: Backend> {
    state: Opaque<B::State>,
    _data: PhantomData<T>,
}

impl<B: Backend> Lock<(), B> {
    /// The C lock at `ptr`.
    ///
    /// # Safety
    ///
    /// `ptr` is an initialised lock that lives for `'a`.
    pub(crate) unsafe fn from_raw<'a>(ptr: *mut B::State) -> &'a Self {
        // SAFETY: `Lock<(), B>` is a transparent `Opaque<B::State>`; the caller's guarantee.
        unsafe { &*ptr.cast::<Self>() }
    }

    /// Takes the lock; the guard releases it.
    pub(crate) fn lock(&self) -> Guard<'_, (), B> {
        // SAFETY: `self` is an initialised lock (`from_raw`'s contract).
        let state = unsafe { B::lock(self.state.get()) };
        // SAFETY: taken just now.
        unsafe { Guard::new(self, state) }
    }

    /// Takes the lock if it is free.
    pub(crate) fn try_lock(&self) -> Option<Guard<'_, (), B>> {
        // SAFETY: as in `lock`.
        let state = unsafe { B::try_lock(self.state.get()) }?;
        // SAFETY: taken just now.
        Some(unsafe { Guard::new(self, state) })
    }
}

/// A held lock, released when dropped. Not `Send`: a spinlock is released by its taker.
#[must_use = "the lock unlocks immediately when the guard is unused"]
pub(crate) struct Guard<'a, T, B: Backend> {
    lock: &'a Lock<T, B>,
    state: B::GuardState,
    _not_send: PhantomData<*mut ()>,
}

impl<'a, T, B: Backend> Guard<'a, T, B> {
    /// A guard for `lock`, taken with `state`.
    ///
    /// # Safety
    ///
    /// The caller holds `lock`, and the guard is the one to release it (or is never dropped).
    pub(crate) unsafe fn new(lock: &'a Lock<T, B>, state: B::GuardState) -> Self {
        Self {
            lock,
            state,
            _not_send: PhantomData,
        }
    }
}

/// A guard for `lock`, which the caller already holds (7.3's `Guard::new(lock, ())`). The
/// flags it would restore are not known: it must never be dropped.
///
/// # Safety
///
/// The caller holds `lock` and the guard is never dropped.
pub(crate) unsafe fn assume_held<'a>(
    lock: &'a Lock<(), SpinLockIrqBackend>,
) -> Guard<'a, (), SpinLockIrqBackend> {
    // SAFETY: the caller's guarantee.
    unsafe { Guard::new(lock, 0) }
}

impl<T, B: Backend> Drop for Guard<'_, T, B> {
    fn drop(&mut self) {
        // SAFETY: the guard exists only while the lock is held, taken with `state`.
        unsafe { B::unlock(self.lock.state.get(), &self.state) }
    }
}
