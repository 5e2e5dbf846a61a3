// SPDX-License-Identifier: GPL-2.0-only

//! The interrupt-saving spinlock operations, on both kernel lines: C's `spin_lock_irqsave()`,
//! `spin_trylock_irqsave()` and `spin_unlock_irqrestore()`, the locking of every lock the C
//! rdmavt takes with interrupts off (the QP's, the receive ring's, the CQ's, ...).
//!
//! The lock and the unlock call the kernel's exported `_raw_spin_lock_irqsave()` and
//! `_raw_spin_unlock_irqrestore()` directly: one call each, as C makes. 7.3's kernel crate
//! offers instead `SpinLockIrq`, which disables interrupts with a per-CPU nesting count
//! (`local_interrupt_disable()`) on top of saving the flags, through an out-of-line helper, and
//! `make profile` showed its sections costing more than C's (docs/perf.md). Where a kernel
//! inlines those two functions (`CONFIG_INLINE_SPIN_LOCK_IRQSAVE`,
//! `CONFIG_INLINE_SPIN_UNLOCK_IRQRESTORE`) or has none (`CONFIG_PREEMPT_RT`), the C wrappers of
//! `compat/irqsave.c` stand in. `spin_trylock_irqsave()` is a macro on every kernel: always
//! the wrapper.

use kernel::{bindings as kbindings, ffi::c_ulong};

use crate::bindings;

/// The `raw_spinlock_t` of a `spinlock_t`: its first member (`rlock`, in a union) on every
/// kernel without `CONFIG_PREEMPT_RT`.
#[cfg(not(CONFIG_PREEMPT_RT))]
fn raw(lock: *mut kbindings::spinlock_t) -> *mut kbindings::raw_spinlock_t {
    lock.cast()
}

/// `spin_lock_irqsave()`: the saved interrupt flags.
///
/// # Safety
///
/// `lock` is an initialised spinlock.
#[inline(always)]
pub(crate) unsafe fn lock(lock: *mut kbindings::spinlock_t) -> c_ulong {
    #[cfg(not(any(CONFIG_PREEMPT_RT, CONFIG_INLINE_SPIN_LOCK_IRQSAVE)))]
    // SAFETY: an initialised spinlock (caller's guarantee), whose raw lock this is.
    unsafe {
        kbindings::_raw_spin_lock_irqsave(raw(lock))
    }
    #[cfg(any(CONFIG_PREEMPT_RT, CONFIG_INLINE_SPIN_LOCK_IRQSAVE))]
    // SAFETY: an initialised spinlock (caller's guarantee).
    unsafe {
        bindings::rdmavt_rs_spin_lock_irqsave(lock.cast())
    }
}

/// `spin_trylock_irqsave()`: the saved interrupt flags if the lock was free.
///
/// # Safety
///
/// `lock` is an initialised spinlock.
pub(crate) unsafe fn try_lock(lock: *mut kbindings::spinlock_t) -> Option<c_ulong> {
    let mut flags = 0;
    // SAFETY: an initialised spinlock (caller's guarantee); `flags` is valid for writes.
    unsafe { bindings::rdmavt_rs_spin_trylock_irqsave(lock.cast(), &mut flags) }.then_some(flags)
}

/// `spin_unlock_irqrestore()`.
///
/// # Safety
///
/// The caller holds `lock`, taken by [`lock`] or [`try_lock`], which returned `flags`.
#[inline(always)]
pub(crate) unsafe fn unlock(lock: *mut kbindings::spinlock_t, flags: c_ulong) {
    #[cfg(not(any(CONFIG_PREEMPT_RT, CONFIG_INLINE_SPIN_UNLOCK_IRQRESTORE)))]
    // SAFETY: the caller holds the lock, with these flags.
    unsafe {
        kbindings::_raw_spin_unlock_irqrestore(raw(lock), flags)
    }
    #[cfg(any(CONFIG_PREEMPT_RT, CONFIG_INLINE_SPIN_UNLOCK_IRQRESTORE))]
    // SAFETY: the caller holds the lock, with these flags.
    unsafe {
        bindings::rdmavt_rs_spin_unlock_irqrestore(lock.cast(), flags)
    }
}

/// The methods of an interrupt-saving spinlock backend over [`lock`], [`try_lock`] and
/// [`unlock`], for either line's `Backend` trait (the same items; 7.3's also has
/// `assert_is_held`, which its impl adds). `SpinLockBackend`, the plain spinlock's backend of
/// the same C lock, must be in scope: `init` is its.
macro_rules! irqsave_backend {
    () => {
        type State = kernel::bindings::spinlock_t;
        type GuardState = kernel::ffi::c_ulong;

        unsafe fn init(
            ptr: *mut Self::State,
            name: *const kernel::ffi::c_char,
            key: *mut kernel::bindings::lock_class_key,
        ) {
            // SAFETY: the caller's guarantee, which is `SpinLockBackend::init`'s.
            unsafe { SpinLockBackend::init(ptr, name, key) }
        }

        unsafe fn lock(ptr: *mut Self::State) -> Self::GuardState {
            // SAFETY: the caller's guarantee: an initialised lock.
            unsafe { $crate::compat::irqsave::lock(ptr) }
        }

        unsafe fn try_lock(ptr: *mut Self::State) -> Option<Self::GuardState> {
            // SAFETY: the caller's guarantee: an initialised lock.
            unsafe { $crate::compat::irqsave::try_lock(ptr) }
        }

        unsafe fn unlock(ptr: *mut Self::State, flags: &Self::GuardState) {
            // SAFETY: the caller holds the lock, taken by `lock` or `try_lock` with `flags`.
            unsafe { $crate::compat::irqsave::unlock(ptr, *flags) }
        }
    };
}
pub(crate) use irqsave_backend;
