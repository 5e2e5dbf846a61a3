// SPDX-License-Identifier: GPL-2.0-only

//! The atomics rdmavt-rs uses, on both kernel lines: the subset of 7.3's
//! `kernel::sync::atomic` it needs, with 7.3's names, signatures and orderings, over
//! `core::sync::atomic`.
//!
//! 7.3's own atomics call the kernel's C atomics so that Rust follows the LKMM, each through an
//! out-of-line `rust_helper_*` function wherever the kernel cannot inline its helpers into Rust
//! (`CONFIG_RUST_INLINE_HELPERS` needs clang and rustc on one LLVM; gcc-built kernels never
//! can): `make profile` counted six such calls per 64-byte send for the acquire loads of the
//! queue indices alone, where C has a `mov`. On x86-64, the one architecture hfi1 and qib exist
//! on, the C atomics and `core`'s compile to the same instructions (plain loads and stores,
//! `lock`-prefixed read-modify-writes), inline, and the orderings map one to one: `Relaxed` and
//! `Acquire`/`Release` as named, `Full` as `SeqCst`. 6.12's kernel crate has no atomics at all.

use core::{
    cell::UnsafeCell,
    sync::atomic::{self as core_atomic, Ordering as CoreOrdering},
};

/// The kernel's orderings, as zero-sized types (7.3's `kernel::sync::atomic::ordering`).
pub(crate) mod ordering {
    use super::CoreOrdering;

    /// No ordering beyond the access itself (`READ_ONCE`/`WRITE_ONCE`).
    #[derive(Clone, Copy)]
    pub(crate) struct Relaxed;
    /// Acquire: later accesses stay after it (`smp_load_acquire`).
    #[derive(Clone, Copy)]
    pub(crate) struct Acquire;
    /// Release: earlier accesses stay before it (`smp_store_release`).
    #[derive(Clone, Copy)]
    pub(crate) struct Release;
    /// Fully ordered, as the C read-modify-writes without a suffix.
    #[derive(Clone, Copy)]
    pub(crate) struct Full;

    /// An ordering, and what it is for `core` (on success; `failure` for a compare-exchange).
    pub(crate) trait Ordering: Copy {
        /// The `core` ordering of the access or of a successful read-modify-write.
        const CORE: CoreOrdering;
        /// The `core` ordering of a failed compare-exchange (a load).
        const FAILURE: CoreOrdering;
    }
    /// The orderings a load may have.
    pub(crate) trait AcquireOrRelaxed: Ordering {}
    /// The orderings a store may have.
    pub(crate) trait ReleaseOrRelaxed: Ordering {}

    macro_rules! ordering {
        ($($t:ident => $core:ident, $failure:ident;)*) => {$(
            impl Ordering for $t {
                const CORE: CoreOrdering = CoreOrdering::$core;
                const FAILURE: CoreOrdering = CoreOrdering::$failure;
            }
        )*};
    }
    ordering! {
        Relaxed => Relaxed, Relaxed;
        Acquire => Acquire, Acquire;
        Release => Release, Relaxed;
        Full => SeqCst, SeqCst;
    }
    impl AcquireOrRelaxed for Relaxed {}
    impl AcquireOrRelaxed for Acquire {}
    impl ReleaseOrRelaxed for Relaxed {}
    impl ReleaseOrRelaxed for Release {}
}

pub(crate) use ordering::{Acquire, Full, Relaxed, Release};
use ordering::{AcquireOrRelaxed, Ordering, ReleaseOrRelaxed};

/// A type that has an atomic of its size in `core`: the operations on a `*mut Self` that
/// [`Atomic`] is made of.
///
/// # Safety
///
/// Each operation is atomic for every caller that upholds [`Atomic::from_ptr`]'s contract.
pub(crate) unsafe trait AtomicType: Copy {
    /// `load`.
    ///
    /// # Safety
    ///
    /// `p` is valid and aligned, and every concurrent access to it is atomic.
    unsafe fn load(p: *mut Self, o: CoreOrdering) -> Self;
    /// `store`.
    ///
    /// # Safety
    ///
    /// As [`AtomicType::load`].
    unsafe fn store(p: *mut Self, v: Self, o: CoreOrdering);
    /// `swap`.
    ///
    /// # Safety
    ///
    /// As [`AtomicType::load`].
    unsafe fn swap(p: *mut Self, v: Self, o: CoreOrdering) -> Self;
    /// `compare_exchange`.
    ///
    /// # Safety
    ///
    /// As [`AtomicType::load`].
    unsafe fn compare_exchange(
        p: *mut Self,
        old: Self,
        new: Self,
        success: CoreOrdering,
        failure: CoreOrdering,
    ) -> Result<Self, Self>;
}

/// An integer [`AtomicType`]: wrapping addition and subtraction, as the C atomics.
///
/// # Safety
///
/// As [`AtomicType`].
pub(crate) unsafe trait AtomicAdd: AtomicType {
    /// `fetch_add`, wrapping.
    ///
    /// # Safety
    ///
    /// As [`AtomicType::load`].
    unsafe fn fetch_add(p: *mut Self, v: Self, o: CoreOrdering) -> Self;
    /// `fetch_sub`, wrapping.
    ///
    /// # Safety
    ///
    /// As [`AtomicType::load`].
    unsafe fn fetch_sub(p: *mut Self, v: Self, o: CoreOrdering) -> Self;
}

macro_rules! atomic_type {
    ($([$($g:ident)?] $t:ty => $core:ty $(, $add:ident)?;)*) => {$(
        // SAFETY: each operation is `core`'s atomic of the same size and alignment.
        unsafe impl$(<$g>)? AtomicType for $t {
            #[inline(always)]
            unsafe fn load(p: *mut Self, o: CoreOrdering) -> Self {
                // SAFETY: the caller's guarantee.
                unsafe { <$core>::from_ptr(p) }.load(o)
            }
            #[inline(always)]
            unsafe fn store(p: *mut Self, v: Self, o: CoreOrdering) {
                // SAFETY: the caller's guarantee.
                unsafe { <$core>::from_ptr(p) }.store(v, o)
            }
            #[inline(always)]
            unsafe fn swap(p: *mut Self, v: Self, o: CoreOrdering) -> Self {
                // SAFETY: the caller's guarantee.
                unsafe { <$core>::from_ptr(p) }.swap(v, o)
            }
            #[inline(always)]
            unsafe fn compare_exchange(
                p: *mut Self,
                old: Self,
                new: Self,
                success: CoreOrdering,
                failure: CoreOrdering,
            ) -> Result<Self, Self> {
                // SAFETY: the caller's guarantee.
                unsafe { <$core>::from_ptr(p) }.compare_exchange(old, new, success, failure)
            }
        }
        $(
            // SAFETY: as above; `core`'s integer atomics wrap, as the C ones do.
            unsafe impl $add for $t {
                #[inline(always)]
                unsafe fn fetch_add(p: *mut Self, v: Self, o: CoreOrdering) -> Self {
                    // SAFETY: the caller's guarantee.
                    unsafe { <$core>::from_ptr(p) }.fetch_add(v, o)
                }
                #[inline(always)]
                unsafe fn fetch_sub(p: *mut Self, v: Self, o: CoreOrdering) -> Self {
                    // SAFETY: the caller's guarantee.
                    unsafe { <$core>::from_ptr(p) }.fetch_sub(v, o)
                }
            }
        )?
    )*};
}

atomic_type! {
    [] i8 => core_atomic::AtomicI8, AtomicAdd;
    [] u8 => core_atomic::AtomicU8, AtomicAdd;
    [] i32 => core_atomic::AtomicI32, AtomicAdd;
    [] u32 => core_atomic::AtomicU32, AtomicAdd;
    [] i64 => core_atomic::AtomicI64, AtomicAdd;
    [] u64 => core_atomic::AtomicU64, AtomicAdd;
    [] usize => core_atomic::AtomicUsize, AtomicAdd;
    [] isize => core_atomic::AtomicIsize, AtomicAdd;
    [] bool => core_atomic::AtomicBool;
    // `AtomicPtr<T>` is a pointer-sized atomic, as `*mut T` is.
    [T] *mut T => core_atomic::AtomicPtr<T>;
}

/// A value accessed only atomically: 7.3's `kernel::sync::atomic::Atomic<T>`.
#[repr(transparent)]
pub(crate) struct Atomic<T: AtomicType>(UnsafeCell<T>);

// SAFETY: every access goes through an atomic operation; as 7.3's, an atomic pointer shares
// the pointer's value, not what it points to.
unsafe impl<T: AtomicType> Sync for Atomic<T> {}
// SAFETY: as above.
unsafe impl<T: AtomicType> Send for Atomic<T> {}

impl<T: AtomicType> Atomic<T> {
    /// An atomic holding `v`.
    pub(crate) const fn new(v: T) -> Self {
        Self(UnsafeCell::new(v))
    }

    /// The `T` at `ptr`, as an atomic.
    ///
    /// # Safety
    ///
    /// `ptr` is valid and aligned for `'a`, and every access to it during `'a` is atomic.
    pub(crate) unsafe fn from_ptr<'a>(ptr: *mut T) -> &'a Self {
        // SAFETY: `Atomic<T>` is a transparent `UnsafeCell<T>`; the caller's guarantee.
        unsafe { &*ptr.cast::<Self>() }
    }

    fn ptr(&self) -> *mut T {
        self.0.get()
    }

    /// `atomic_read()`, `READ_ONCE()`, `smp_load_acquire()`.
    #[inline(always)]
    pub(crate) fn load<O: AcquireOrRelaxed>(&self, _: O) -> T {
        // SAFETY: `self` is valid, and accessed only atomically.
        unsafe { T::load(self.ptr(), O::CORE) }
    }

    /// `atomic_set()`, `WRITE_ONCE()`, `smp_store_release()`.
    #[inline(always)]
    pub(crate) fn store<O: ReleaseOrRelaxed>(&self, v: T, _: O) {
        // SAFETY: as in `load`.
        unsafe { T::store(self.ptr(), v, O::CORE) }
    }

    /// `xchg()`: stores `v` and returns the old value.
    #[inline(always)]
    pub(crate) fn xchg<O: Ordering>(&self, v: T, _: O) -> T {
        // SAFETY: as in `load`.
        unsafe { T::swap(self.ptr(), v, O::CORE) }
    }

    /// `cmpxchg()`: `Ok(old)` if the value was `old` and is now `new`, else `Err(current)`.
    #[inline(always)]
    pub(crate) fn cmpxchg<O: Ordering>(&self, old: T, new: T, _: O) -> Result<T, T> {
        // SAFETY: as in `load`.
        unsafe { T::compare_exchange(self.ptr(), old, new, O::CORE, O::FAILURE) }
    }
}

impl<T: AtomicAdd> Atomic<T> {
    /// `atomic_add()`: adds `v`, wrapping, with no ordering.
    #[inline(always)]
    pub(crate) fn add(&self, v: T, _: Relaxed) {
        // SAFETY: as in `load`.
        unsafe { T::fetch_add(self.ptr(), v, CoreOrdering::Relaxed) };
    }

    /// `atomic_fetch_add()`: adds `v`, wrapping, and returns the old value.
    #[inline(always)]
    pub(crate) fn fetch_add<O: Ordering>(&self, v: T, _: O) -> T {
        // SAFETY: as in `load`.
        unsafe { T::fetch_add(self.ptr(), v, O::CORE) }
    }

    /// `atomic_fetch_sub()`: subtracts `v`, wrapping, and returns the old value.
    #[inline(always)]
    pub(crate) fn fetch_sub<O: Ordering>(&self, v: T, _: O) -> T {
        // SAFETY: as in `load`.
        unsafe { T::fetch_sub(self.ptr(), v, O::CORE) }
    }
}

/// `Atomic::from_ptr(ptr).load(o)`.
///
/// # Safety
///
/// As [`Atomic::from_ptr`].
#[inline(always)]
pub(crate) unsafe fn atomic_load<T: AtomicType, O: AcquireOrRelaxed>(ptr: *mut T, o: O) -> T {
    // SAFETY: the caller's guarantee.
    unsafe { Atomic::from_ptr(ptr) }.load(o)
}

/// `Atomic::from_ptr(ptr).store(v, o)`.
///
/// # Safety
///
/// As [`Atomic::from_ptr`].
#[inline(always)]
pub(crate) unsafe fn atomic_store<T: AtomicType, O: ReleaseOrRelaxed>(ptr: *mut T, v: T, o: O) {
    // SAFETY: the caller's guarantee.
    unsafe { Atomic::from_ptr(ptr) }.store(v, o)
}

/// A flag accessed only atomically: 7.3's `kernel::sync::atomic::AtomicFlag`.
#[repr(transparent)]
pub(crate) struct AtomicFlag(Atomic<bool>);

impl AtomicFlag {
    /// A flag holding `b`.
    pub(crate) const fn new(b: bool) -> Self {
        Self(Atomic::new(b))
    }

    /// The flag's value.
    #[inline(always)]
    pub(crate) fn load<O: AcquireOrRelaxed>(&self, o: O) -> bool {
        self.0.load(o)
    }

    /// Sets the flag to `b`.
    #[inline(always)]
    pub(crate) fn store<O: ReleaseOrRelaxed>(&self, b: bool, o: O) {
        self.0.store(b, o)
    }

    /// Sets the flag to `b` and returns its old value.
    #[inline(always)]
    pub(crate) fn xchg<O: Ordering>(&self, b: bool, o: O) -> bool {
        self.0.xchg(b, o)
    }
}

/// The kernel's atomic bit operations on a bitmap of `unsigned long`s (linux/bitops.h), which
/// C inlines and bindgen cannot call: on x86-64 both are one `lock`-prefixed instruction on the
/// word that holds the bit, so C's callers of the same bitmap (drivers' own QPN allocators,
/// `r_aflags` in hfi1) and these see each other's updates atomically.
pub(crate) mod bitops {
    use core::sync::atomic::{AtomicUsize, Ordering};

    /// The word of the bitmap at `addr` that holds bit `nr`, and the bit's mask in it.
    ///
    /// # Safety
    ///
    /// The bitmap at `addr` is valid, aligned and holds bit `nr`; every concurrent access to
    /// its words is atomic.
    #[inline(always)]
    unsafe fn word<'a>(nr: usize, addr: *mut usize) -> (&'a AtomicUsize, usize) {
        // SAFETY: the caller's guarantee: the word is within the bitmap, and accessed only
        // atomically.
        let w = unsafe { AtomicUsize::from_ptr(addr.add(nr / usize::BITS as usize)) };
        (w, 1 << (nr % usize::BITS as usize))
    }

    /// `set_bit()`: sets bit `nr`, atomically, with no ordering promised (as C's).
    ///
    /// # Safety
    ///
    /// As [`word`].
    #[inline(always)]
    pub(crate) unsafe fn set_bit(nr: usize, addr: *mut usize) {
        // SAFETY: the caller's guarantee.
        let (w, mask) = unsafe { word(nr, addr) };
        w.fetch_or(mask, Ordering::Relaxed);
    }

    /// `clear_bit()`: clears bit `nr`, atomically, with no ordering promised (as C's).
    ///
    /// # Safety
    ///
    /// As [`word`].
    #[inline(always)]
    pub(crate) unsafe fn clear_bit(nr: usize, addr: *mut usize) {
        // SAFETY: the caller's guarantee.
        let (w, mask) = unsafe { word(nr, addr) };
        w.fetch_and(!mask, Ordering::Relaxed);
    }

    /// `test_and_set_bit()`: sets bit `nr` and says whether it was set; fully ordered.
    ///
    /// # Safety
    ///
    /// As [`word`].
    #[inline(always)]
    pub(crate) unsafe fn test_and_set_bit(nr: usize, addr: *mut usize) -> bool {
        // SAFETY: the caller's guarantee.
        let (w, mask) = unsafe { word(nr, addr) };
        w.fetch_or(mask, Ordering::SeqCst) & mask != 0
    }

    /// `test_and_clear_bit()`: clears bit `nr` and says whether it was set; fully ordered.
    ///
    /// # Safety
    ///
    /// As [`word`].
    #[inline(always)]
    pub(crate) unsafe fn test_and_clear_bit(nr: usize, addr: *mut usize) -> bool {
        // SAFETY: the caller's guarantee.
        let (w, mask) = unsafe { word(nr, addr) };
        w.fetch_and(!mask, Ordering::SeqCst) & mask != 0
    }
}
