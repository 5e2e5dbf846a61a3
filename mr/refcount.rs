// SPDX-License-Identifier: GPL-2.0-only

//! A region's reference count, a `percpu_ref` (`rvt_mregion.refcount`), and the data path's
//! use of it: the SGEs that point into a region each hold a reference, taken by a key check
//! and given back as a walk leaves the SGE ([`next_sge`], [`put_ss`]). Inside the read-side
//! section the key lookup already runs in, a get or put is one per-CPU `inc` or `dec` while
//! the count is per-CPU, as C's inline `percpu_ref_get`/`put`; the region's own reference
//! goes with `kill`, and `dereg_mr` waits for the rest ([`Mregion::wait_unused`]).

use core::ptr::{self, NonNull};

use kernel::ffi::c_ulong;

use crate::compat::{
    self,
    aref::{ARef, AlwaysRefCounted},
    atomic::{Atomic, Full, Relaxed},
    read_side::ReadSide,
};

use crate::bindings;

use super::region::Mregion;

/// percpu-refcount.h's `__PERCPU_REF_ATOMIC_DEAD`: the mode bits in `percpu_count_ptr`. With
/// either set the count is the shared atomic one, and the rest is not a per-CPU pointer.
const PERCPU_REF_ATOMIC_DEAD: c_ulong = 0b11;

/// `rvt_put_mr`: gives back the reference to `mr` that an SGE held, inside the read-side
/// section `at` (an RCU guard, or the QP spinlock under which the SGE is consumed).
///
/// # Safety
///
/// `mr` is a region of ours on which the caller owns a reference, which it no longer uses.
pub(crate) unsafe fn put_mr(mr: *mut bindings::rvt_mregion, at: ReadSide<'_>) {
    // SAFETY: the caller's reference keeps the region alive for the call.
    unsafe { Mregion::from_raw(mr).put_in(at) };
}

/// `rvt_put_ss`: gives back the region references of every SGE left in `ss`, inside the
/// read-side section `at`; `ss` is then empty. Usually it already is (a delivery consumes its
/// receive SGEs): that test is inline, the loop is not, so that the loopback's copy path stays
/// small enough for the compiler to inline.
///
/// # Safety
///
/// `ss` is a consistent state (`sg_list` has `num_sge - 1` more entries) whose SGEs each hold
/// a reference to their region, and nothing else uses them.
#[inline]
pub(crate) unsafe fn put_ss(ss: &mut bindings::rvt_sge_state, at: ReadSide<'_>) {
    if ss.num_sge != 0 {
        // SAFETY: the caller's guarantee.
        unsafe { put_each(ss, at) };
    }
}

/// [`put_ss`]'s loop.
///
/// # Safety
///
/// As [`put_ss`].
#[inline(never)]
unsafe fn put_each(ss: &mut bindings::rvt_sge_state, at: ReadSide<'_>) {
    while ss.num_sge != 0 {
        // SAFETY: the caller's guarantee.
        unsafe { next_sge(ss, Some(at)) };
    }
}

/// The current SGE of `ss` is used up: the next one becomes current. With `release` (the
/// read-side section to do it in), the finished SGE first gives back its region reference.
/// The one step every SGE walk takes, [`put_ss`] and the loopback's copy alike.
///
/// Out of line, so that a walk's common case, a cursor moving within a segment, saves no
/// registers for the call of [`put_mr`]. Unlike C, a state whose SGEs are all consumed
/// (`num_sge` 0) stays so: C decrements the count below zero and reads past the list.
///
/// # Safety
///
/// `ss` is a consistent state (`sg_list` has `num_sge - 1` more entries); with `release`, its
/// current SGE holds a reference to its region, which nothing else uses.
#[inline(never)]
pub(crate) unsafe fn next_sge(ss: &mut bindings::rvt_sge_state, release: Option<ReadSide<'_>>) {
    let done = ss.sge.mr;
    ss.num_sge = ss.num_sge.saturating_sub(1);
    if ss.num_sge != 0 {
        // SAFETY: `sg_list` has `num_sge` more entries (caller's guarantee).
        unsafe {
            ss.sge = *ss.sg_list;
            ss.sg_list = ss.sg_list.add(1);
        }
    }
    // Last, so that nothing is live across the rare call of its slow path, which is then a
    // tail call: no register is saved for it.
    if let Some(at) = release {
        // SAFETY: the SGE just left held a reference (caller's guarantee).
        unsafe { put_mr(done, at) };
    }
}

// SAFETY: `percpu_ref_get` and `percpu_ref_put` are the region's reference count; the region
// stays alive while a reference is held (type invariant).
unsafe impl AlwaysRefCounted for Mregion {
    fn inc_ref(&self) {
        // SAFETY: the refcount was initialised by `init` and is not exited while the region
        // is reachable (type invariant).
        unsafe { bindings::rdmavt_rs_percpu_ref_get(self.refcount()) };
    }

    unsafe fn dec_ref(obj: NonNull<Self>) {
        // SAFETY: the caller owns one reference, which this gives back; the release callback
        // only completes `comp`, it frees nothing.
        unsafe { bindings::rdmavt_rs_percpu_ref_put(obj.as_ref().refcount()) };
    }
}

/// The percpu_ref release callback: the last reference is gone, `dereg_mr` may go on.
///
/// # Safety
///
/// Called by percpu_ref with the `refcount` of a region set up by [`Mregion::init`].
pub(super) unsafe extern "C" fn complete_region(refcount: *mut bindings::percpu_ref) {
    // SAFETY: percpu_ref passes the `refcount` of a region set up by `init`, which is still
    // allocated: it is freed only after `dereg_mr` has seen this completion.
    unsafe {
        let mr = refcount.byte_sub(core::mem::offset_of!(bindings::rvt_mregion, refcount));
        bindings::complete(&raw mut (*mr.cast::<bindings::rvt_mregion>()).comp);
    }
}

impl Mregion {
    fn refcount(&self) -> *mut bindings::percpu_ref {
        // SAFETY: the region is alive (type invariant).
        unsafe { &raw mut (*self.as_raw()).refcount }
    }

    /// Drops the region's own reference (`percpu_ref_kill`): the count now reaches zero when
    /// the last user puts it.
    pub(super) fn kill(&self) {
        // SAFETY: the refcount was initialised by `init`; killing it once is the caller's
        // (free_lkey's) protocol, as in C.
        unsafe { bindings::rdmavt_rs_percpu_ref_kill(self.refcount()) };
    }

    /// Takes a reference for a holder that is not an [`ARef`] (the lkey table, a C `rvt_sge`).
    pub(super) fn get(&self) {
        self.inc_ref();
    }

    /// Gives back a reference taken with [`Mregion::get`] or handed over as a raw pointer.
    ///
    /// # Safety
    ///
    /// The caller owns one reference to the region.
    pub(super) unsafe fn put(&self) {
        // SAFETY: the caller owns the reference it gives back.
        unsafe { Self::dec_ref(NonNull::from(self)) };
    }

    /// `__ref_is_percpu`: the `__percpu` pointer of the count's per-CPU counters while the
    /// count is per-CPU (every region but one being deregistered); `None` once it is atomic.
    /// Inside a read-side section, as C's callers are, the counters stay allocated and every
    /// change to them counts: switching to atomic mode sums them, and later frees them, only
    /// after the RCU grace period it waits for (`percpu_ref_switch_to_atomic_rcu`).
    fn percpu_count(&self, _at: ReadSide<'_>) -> Option<*mut c_ulong> {
        // SAFETY: the refcount was initialised by `init` (type invariant). A volatile read is
        // `__ref_is_percpu`'s READ_ONCE: `percpu_ref_kill` sets the mode bits concurrently,
        // and the test and the use must see one value.
        let count = unsafe { ptr::read_volatile(&raw const (*self.refcount()).percpu_count_ptr) };
        (count & PERCPU_REF_ATOMIC_DEAD == 0).then_some(count as *mut c_ulong)
    }

    /// The count's shared part, `data->count`: the count itself once it is in atomic mode.
    fn shared_count(&self) -> &Atomic<i64> {
        // SAFETY: `init` allocated `data`, which lives until `deinit` (type invariant: the
        // region is alive); the count is an atomic_long_t, accessed only atomically.
        unsafe { Atomic::from_ptr(&raw mut (*(*self.refcount()).data).count.counter) }
    }

    /// The region with a new reference, taken inside the read-side section `at` in which the
    /// caller found it: `percpu_ref_get`, whose own `rcu_read_lock` that section stands for.
    /// Inline, as C's: one `inc` of this CPU's counter while the count is per-CPU (every
    /// region but one being deregistered), an atomic add to the shared count once it is not.
    /// No call on either path, so that the key checks around it keep their values in
    /// registers.
    pub(super) fn reference(&self, at: ReadSide<'_>) -> ARef<Self> {
        match self.percpu_count(at) {
            Some(count) => {
                // SAFETY: this CPU's counter, which stays allocated and unsummed while `at`
                // lasts (see `percpu_count`).
                if !unsafe { compat::percpu::this_cpu_inc(count) } {
                    self.inc_ref();
                }
            }
            // C's `atomic_long_add`.
            None => self.shared_count().add(1, Relaxed),
        }
        // SAFETY: the reference just taken is the one the `ARef` owns.
        unsafe { ARef::from_raw(NonNull::from(self)) }
    }

    /// `rvt_put_mr` inside the read-side section `at`: `percpu_ref_put`, as
    /// [`Mregion::reference`] is its get. While the count is per-CPU, one `dec` of this CPU's
    /// counter, which cannot reach zero that way; once it is atomic, C's
    /// `atomic_long_sub_and_test`, and the release callback for the last reference.
    ///
    /// # Safety
    ///
    /// The caller owns one reference to the region, which this gives back.
    unsafe fn put_in(&self, at: ReadSide<'_>) {
        match self.percpu_count(at) {
            Some(count) => {
                // SAFETY: as in `reference`; the caller's reference keeps the region, and with
                // it the counter's pointer, alive until this returns.
                if !unsafe { compat::percpu::this_cpu_dec(count) } {
                    // SAFETY: the caller's reference, given back.
                    unsafe { self.put() };
                }
            }
            // SAFETY: the caller's reference, given back.
            None => unsafe { self.put_shared() },
        }
    }

    /// [`Mregion::put_in`] once the count is atomic (the region is being deregistered): C's
    /// `atomic_long_sub_and_test`, and the release callback for the last reference. Out of
    /// line, so that the per-CPU `dec` of every other put needs no saved register.
    ///
    /// # Safety
    ///
    /// The caller owns one reference to the region, which this gives back.
    #[cold]
    #[inline(never)]
    unsafe fn put_shared(&self) {
        if self.shared_count().fetch_sub(1, Full) == 1 {
            // SAFETY: that was the last reference; the count is dead and atomic.
            unsafe { self.release_last() };
        }
    }

    /// Runs the count's release callback (`complete_region`, set by `init`), as
    /// `percpu_ref_put` does when the last reference goes. Out of line: it runs once per
    /// region.
    ///
    /// # Safety
    ///
    /// The count just dropped to zero.
    #[cold]
    unsafe fn release_last(&self) {
        let refcount = self.refcount();
        // SAFETY: `data` lives until `deinit` (see `shared_count`); its `release` is the
        // callback `init` registered, which takes the refcount.
        unsafe {
            if let Some(release) = (*(*refcount).data).release {
                release(refcount);
            }
        }
    }

    /// The region's count, for the error message when `dereg_mr` gives up waiting.
    pub(super) fn count(&self) -> i64 {
        // SAFETY: the refcount was initialised by `init` and is alive (type invariant), so
        // `data` points to its shared part; the count is an atomic_long_t.
        unsafe {
            let data = (*self.as_raw()).refcount.data;
            if data.is_null() {
                return 0;
            }
            Atomic::from_ptr(&raw mut (*data).count.counter).load(Relaxed)
        }
    }

    /// Waits up to `timeout` jiffies for the last reference to go; false if it did not.
    pub(super) fn wait_unused(&self, timeout: kernel::time::Jiffies) -> bool {
        // SAFETY: `comp` was initialised by `init` and lives as long as the region.
        unsafe {
            bindings::wait_for_completion_timeout(&raw mut (*self.as_raw()).comp, timeout) != 0
        }
    }
}
