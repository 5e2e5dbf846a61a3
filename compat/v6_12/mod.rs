// SPDX-License-Identifier: GPL-2.0-only

//! The 6.12 kernel crate, completed: 7.3's API for what 6.12 lacks, and 6.12's own items where
//! only their path changed.

mod global_lock;
#[cfg(rdmavt_kunit)]
pub(crate) mod kunit;
mod kvec;
pub(crate) mod lock;
pub(crate) mod rcu;

pub(crate) use global_lock::{global_lock, GlobalMutex};
/// `fmt!`, at the crate's root on 6.12 (in the prelude on 7.3).
pub(crate) use kernel::fmt;
pub(crate) use kvec::KVecExt;

use core::{cell::UnsafeCell, mem::MaybeUninit};

use kernel::alloc::{AllocError, Allocator, Flags};

/// `ARef` and `AlwaysRefCounted` (in `kernel::types` on 6.12).
pub(crate) mod aref {
    pub(crate) use kernel::types::{ARef, AlwaysRefCounted};
}

/// 7.3's `Delta` and `fsleep` for 6.12, whose kernel crate has neither.
pub(crate) mod time {
    /// A span of time (7.3's counts nanoseconds; the sleeps here are whole milliseconds).
    #[derive(Clone, Copy, Debug)]
    pub(crate) struct Delta {
        ms: i64,
    }

    impl Delta {
        /// `ms` milliseconds.
        pub(crate) const fn from_millis(ms: i64) -> Self {
            Self { ms }
        }
    }

    /// Sleeps for at least `delta` (none when it is negative), as 7.3's `fsleep`: with
    /// `msleep`, which C's `fsleep()` also takes for spans of milliseconds.
    pub(crate) fn fsleep(delta: Delta) {
        let ms = u32::try_from(delta.ms.max(0)).unwrap_or(u32::MAX);
        // SAFETY: `msleep` sleeps in the calling task, which may sleep, as for 7.3's `fsleep`.
        unsafe { kernel::bindings::msleep(ms) };
    }
}

/// `kernel::sync::barrier` for 6.12.
pub(crate) mod barrier {
    use crate::compat::atomic::Full;

    /// `smp_mb()`: a full memory barrier (on x86-64, as `mfence` or a locked operation).
    #[inline(always)]
    pub(crate) fn smp_mb(_: Full) {
        core::sync::atomic::fence(core::sync::atomic::Ordering::SeqCst);
    }
}

/// A lockdep class (6.12's `LockClassKey` hides its pointer from other crates).
#[repr(transparent)]
pub(crate) struct LockClassKey(UnsafeCell<MaybeUninit<kernel::bindings::lock_class_key>>);

// SAFETY: lockdep is the only user of the key's memory, and it serialises its own accesses.
unsafe impl Sync for LockClassKey {}

impl LockClassKey {
    /// A key for a static: lockdep needs no initial value for keys in static memory.
    #[doc(hidden)]
    pub(crate) const fn new_static() -> Self {
        Self(UnsafeCell::new(MaybeUninit::uninit()))
    }

    /// The C key.
    pub(crate) fn as_ptr(&self) -> *mut kernel::bindings::lock_class_key {
        self.0.get().cast()
    }
}

/// A lockdep class of its own for the call site, in static memory, as C's `spin_lock_init()`.
macro_rules! static_lock_class {
    () => {{
        static CLASS: $crate::compat::LockClassKey = $crate::compat::LockClassKey::new_static();
        ::core::pin::Pin::static_ref(&CLASS)
    }};
}
pub(crate) use static_lock_class;

/// A C string's address, for C (`char` is unsigned in the kernel).
pub(crate) fn c_str_ptr(s: &core::ffi::CStr) -> *const kernel::ffi::c_char {
    s.as_ptr().cast()
}

/// The C string at `ptr`.
///
/// # Safety
///
/// `ptr` is a NUL-terminated string that lives, unchanged, for `'a`.
pub(crate) unsafe fn c_str_from_ptr<'a>(ptr: *const kernel::ffi::c_char) -> &'a core::ffi::CStr {
    // SAFETY: the caller's guarantee.
    unsafe { core::ffi::CStr::from_ptr(ptr.cast()) }
}

/// `WARN_ON(cond)`: a warning with a backtrace when `cond` holds; evaluates to `cond`.
macro_rules! warn_on {
    ($cond:expr) => {{
        let cond = $cond;
        if cond {
            // SAFETY: the file name is a NUL-terminated literal.
            unsafe {
                $crate::bindings::rdmavt_rs_warn(
                    ::core::concat!(::core::file!(), "\0").as_ptr(),
                    ::core::line!() as _,
                )
            };
        }
        cond
    }};
}
pub(crate) use warn_on;

/// Allocates `layout` with allocator `A`. 6.12's Rust allocators take no NUMA node, so `node`
/// is only the hint it is in C: the memory comes from any node.
pub(crate) fn alloc_on_node<A: Allocator>(
    layout: core::alloc::Layout,
    flags: Flags,
    _node: kernel::ffi::c_int,
) -> Result<core::ptr::NonNull<[u8]>, AllocError> {
    A::alloc(layout, flags)
}

/// Whether the tracepoint `$tp` is enabled: `static_key_false()` as C reads it without jump
/// labels, the key's enable count (6.12's kernel crate has no `static_branch_unlikely!`). To be
/// used inside `unsafe`: `$tp` must be a real tracepoint.
macro_rules! tracepoint_enabled {
    ($tp:path) => {
        ::core::sync::atomic::AtomicI32::from_ptr(::core::ptr::addr_of_mut!(
            $tp.key.enabled.counter
        ))
        .load(::core::sync::atomic::Ordering::Relaxed)
            > 0
    };
}
pub(crate) use tracepoint_enabled;

/// A value of all zeroes (7.3's `pin_init::zeroed()`), for the types that implement
/// `Zeroable`: on 6.12 the generated bindings do not, and `bindings/mod.rs` implements it for
/// the C structs built from zeroes.
pub(crate) const fn zeroed<T: kernel::init::Zeroable>() -> T {
    // SAFETY: `Zeroable` promises that all zeroes is a valid `T`.
    unsafe { core::mem::zeroed() }
}

/// `EOPNOTSUPP`, which 6.12's `kernel::error::code` lacks; `Error` has no public constant
/// constructor there, hence a function on both lines.
#[inline(always)]
pub(crate) fn eopnotsupp() -> kernel::error::Error {
    kernel::error::Error::from_errno(-(kernel::bindings::EOPNOTSUPP as i32))
}

/// `ETIMEDOUT`, which 6.12's `kernel::error::code` lacks too.
#[inline(always)]
pub(crate) fn etimedout() -> kernel::error::Error {
    kernel::error::Error::from_errno(-(kernel::bindings::ETIMEDOUT as i32))
}

/// `container_of!`: the struct that holds the field `$field` at `$ptr`, as a `*mut` (6.12's
/// gives a `*const`).
macro_rules! container_of {
    ($ptr:expr, $type:ty, $($field:tt)*) => {
        ::kernel::container_of!($ptr, $type, $($field)*).cast_mut()
    };
}
pub(crate) use container_of;
