// SPDX-License-Identifier: GPL-2.0-only

//! The 7.3 kernel crate: everything [`crate::compat`] names is the kernel crate's own.

pub(crate) use kernel::{
    prelude::fmt,
    sync::{aref, global_lock, rcu, LockClassKey},
    warn_on,
};

/// `kernel::sync::barrier`'s `smp_mb()`, ordered by the [`crate::compat::atomic`] `Full`.
pub(crate) mod barrier {
    /// `smp_mb()`: the kernel's full barrier.
    #[inline(always)]
    pub(crate) fn smp_mb(_: crate::compat::atomic::Full) {
        kernel::sync::barrier::smp_mb(kernel::sync::barrier::Full);
    }
}

/// The kernel crate's locks and its spinlock backend, and an interrupt-saving one.
pub(crate) mod lock {
    pub(crate) use kernel::sync::lock::{spinlock::SpinLockBackend, Backend, Guard, Lock};

    use crate::compat::irqsave;

    /// A spinlock taken with `spin_lock_irqsave()`, as C's rdmavt takes the locks it shares
    /// with interrupt context (see `compat/irqsave.rs` for why not the kernel crate's
    /// `SpinLockIrq`). The guard keeps the saved flags.
    pub(crate) struct SpinLockIrqBackend;

    // SAFETY: `lock` and `try_lock` take the spinlock (saving the interrupt flags the guard
    // keeps) and `unlock` releases it with them; `init` and `assert_is_held` are the plain
    // spinlock's, the same C lock.
    unsafe impl Backend for SpinLockIrqBackend {
        irqsave::irqsave_backend!();

        /// Lockdep's check, which the kernel crate makes on every guard it creates, so on
        /// every lock taken: C's `lockdep_assert_held()`, nothing without lockdep. The plain
        /// backend's is an out-of-line helper call even then, one per lock, so it is made only
        /// where lockdep is.
        #[inline(always)]
        unsafe fn assert_is_held(ptr: *mut Self::State) {
            #[cfg(CONFIG_LOCKDEP)]
            // SAFETY: the caller's guarantee: an initialised lock.
            unsafe {
                SpinLockBackend::assert_is_held(ptr)
            }
            #[cfg(not(CONFIG_LOCKDEP))]
            let _ = ptr;
        }
    }

    /// A guard for `lock`, which the caller already holds (lockdep asserts it).
    ///
    /// # Safety
    ///
    /// The caller holds `lock` and the guard is never dropped (it would unlock the caller's
    /// lock).
    pub(crate) unsafe fn assume_held<'a>(
        lock: &'a Lock<(), SpinLockIrqBackend>,
    ) -> Guard<'a, (), SpinLockIrqBackend> {
        // SAFETY: the caller's guarantee.
        unsafe { Guard::new(lock, 0) }
    }
}

/// A C string's address, for C (`char` is unsigned in the kernel).
pub(crate) fn c_str_ptr(s: &core::ffi::CStr) -> *const kernel::ffi::c_char {
    kernel::str::CStrExt::as_char_ptr(s)
}

/// The C string at `ptr`.
///
/// # Safety
///
/// `ptr` is a NUL-terminated string that lives, unchanged, for `'a`.
pub(crate) unsafe fn c_str_from_ptr<'a>(ptr: *const kernel::ffi::c_char) -> &'a core::ffi::CStr {
    // SAFETY: the caller's guarantee.
    unsafe { <core::ffi::CStr as kernel::str::CStrExt>::from_char_ptr(ptr) }
}

/// `static_lock_class!()`, as the pinned reference that `lock::init_spinlock` takes.
macro_rules! static_lock_class {
    () => {
        ::kernel::static_lock_class!()
    };
}
pub(crate) use static_lock_class;

/// Allocates `layout` with allocator `A`, on NUMA node `node` where it can (any node when
/// `node` is `NUMA_NO_NODE` or not a node).
pub(crate) fn alloc_on_node<A: kernel::alloc::Allocator>(
    layout: core::alloc::Layout,
    flags: kernel::alloc::Flags,
    node: kernel::ffi::c_int,
) -> Result<core::ptr::NonNull<[u8]>, kernel::alloc::AllocError> {
    let nid = kernel::alloc::NumaNode::new(node).unwrap_or(kernel::alloc::NumaNode::NO_NODE);
    A::alloc(layout, flags, nid)
}

/// Whether the tracepoint `$tp` is enabled: its static key, a patched jump with
/// `CONFIG_JUMP_LABEL`. To be used inside `unsafe`: `$tp` must be a real tracepoint.
macro_rules! tracepoint_enabled {
    ($tp:path) => {
        ::kernel::jump_label::static_branch_unlikely!($tp, ::kernel::bindings::tracepoint, key)
    };
}
pub(crate) use tracepoint_enabled;

/// A value of all zeroes, for the types `pin_init::Zeroable` vouches for.
pub(crate) use pin_init::zeroed;

/// `EOPNOTSUPP`, a function because 6.12's kernel crate cannot make it a constant.
#[inline(always)]
pub(crate) fn eopnotsupp() -> kernel::error::Error {
    kernel::error::code::EOPNOTSUPP
}

/// `ETIMEDOUT`, a function for the same reason.
#[inline(always)]
pub(crate) fn etimedout() -> kernel::error::Error {
    kernel::error::code::ETIMEDOUT
}

/// `container_of!`: the struct that holds the field `$field` at `$ptr`, as a `*mut`.
macro_rules! container_of {
    ($ptr:expr, $type:ty, $($field:tt)*) => {
        ::kernel::container_of!($ptr, $type, $($field)*)
    };
}
pub(crate) use container_of;

/// Sleeping for a while.
pub(crate) mod time {
    pub(crate) use kernel::time::{delay::fsleep, Delta};
}

/// KUnit's test case and suite constructors (what `#[kunit_tests]` builds on).
#[cfg(rdmavt_kunit)]
pub(crate) mod kunit {
    pub(crate) use kernel::{kunit::kunit_case, kunit_unsafe_test_suite};
}
