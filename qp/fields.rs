// SPDX-License-Identifier: GPL-2.0-only

//! Which lock protects which field of `struct rvt_qp`.
//!
//! The lists below are the one written statement of the QP's lock coverage. They follow the
//! sections of `struct rvt_qp` in `rdmavt_qp.h` (the `r_lock` line, the post-send line, the
//! `s_lock` line) and `docs/callbacks.md`, and each list generates, on the guard of its lock, a
//! reader `field()` and a writer `field_mut()` per field, so that a field is read and written
//! only while its lock is held:
//!
//! - [`RecvGuard`] (`r_lock`): the responder's state;
//! - [`PostGuard`] (`s_hlock`): the post-send line;
//! - [`SendGuard`] (`s_lock`): the requester's state;
//! - [`Locked`], any of the three: the read-mostly fields, which `modify_qp` writes with all
//!   three locks held, so that holding one is enough to read them;
//! - [`QpMut`], all three locks held ([`super::AllLocks`]) or the QP owned alone
//!   ([`OwnedQp`]): every field of the lists above, to read and write, with the state and
//!   the send queue indices (the paths that change the QP as a whole: create, modify, reset);
//! - on [`Qp`] itself: the fields fixed once the QP is published, which only an [`OwnedQp`]
//!   writes (create, destroy), and the fields that C reads with no lock at all
//!   (`*_unlocked`, as C's READ_ONCE: a racing `modify_qp` can make them stale, never torn).
//!
//! Left out on purpose: the atomics (`refcount`, `r_aflags`, `s_reserved_used`,
//! `local_ops_pending`), which [`Qp`] changes atomically with no lock (`refcount` only through its
//! `AlwaysRefCounted`; a reset clears `r_aflags` and `s_reserved_used` through [`QpMut`]), the QPN
//! hash link `next` (under the table's `qpt_lock`, see [`Qp::next_link`]), the receive queue `r_rq`
//! (`crate::krwq`, with locks of its own), and the memory the locks themselves and the timers live
//! in.

use core::ptr;

use kernel::ffi::{c_int, c_ulong, c_void};

use crate::compat::{
    atomic::{bitops, Acquire, Atomic, Full, Relaxed, Release},
    barrier::smp_mb,
};

use super::{OwnedQp, PostGuard, Qp, QpMut, RecvGuard, SendGuard};
use crate::bindings;

/// Generates a reader `field()` and a writer `field_mut()` per field on `$on`, whose
/// `qp_ptr()` is the QP and whose existence proves that `$lock` is held.
macro_rules! field_fns {
    ($on:ty, $lock:literal, $also:literal: $($field:ident: $ty:ty,)*) => {
        ::kernel::macros::paste! {
            // Generated for the whole list, which states the coverage; not every field has a
            // reader or a writer in Rust yet (hfi1 uses the rest).
            #[allow(dead_code)]
            impl $on {
                $(
                    #[doc = concat!("`", stringify!($field), "`, under ", $lock, $also, ".")]
                    #[inline]
                    pub(crate) fn $field(&self) -> $ty {
                        // SAFETY: `self` proves that the lock that protects the field is held
                        // (a guard of it, or a `QpMut`: all three held, or the QP owned
                        // alone), so no one writes it while it is read.
                        unsafe { (*self.qp_ptr()).$field }
                    }

                    #[doc = concat!("`", stringify!($field), "`, to write, under ", $lock, $also,
                                    ".")]
                    #[inline]
                    pub(crate) fn [<$field _mut>](&mut self) -> &mut $ty {
                        // SAFETY: as above; `&mut self` makes this the only reference through
                        // `self`, and no other path reaches the field without the lock.
                        unsafe { &mut (*self.qp_ptr()).$field }
                    }
                )*
            }
        }
    };
}

/// Generates `field()` and `field_mut()` for each field `$lock` protects on `$guard`, and on
/// [`QpMut`], which stands for all three locks.
macro_rules! locked_fields {
    ($guard:ident, $lock:literal: $($field:ident: $ty:ty,)*) => {
        field_fns!($guard<'_>, $lock, "": $($field: $ty,)*);
        field_fns!(QpMut<'_>, $lock, " (with the other two, or the QP owned alone)":
                   $($field: $ty,)*);
    };
}

locked_fields! { RecvGuard, "`r_lock`":
    r_psn: u32,
    r_wr_id: u64,
    r_ack_psn: u32,
    r_len: u32,
    r_rcv_len: u32,
    r_msn: u32,
    r_state: u8,
    r_flags: u8,
    r_head_ack_queue: u8,
    r_adefered: u8,
    r_sge: bindings::rvt_sge_state,
}

// `s_head` is published to the send engine; see `publish_s_head`.
locked_fields! { PostGuard, "`s_hlock`":
    s_next_psn: u32,
    s_avail: u32,
    s_ssn: u32,
}

// `s_flags` is mostly changed bit-wise (`flags`, `set_flags`, `clear_flags`), and `s_last`
// is published to posters (see `publish_s_last`). `s_sge`, `s_len` and `s_rnr_retry` also
// belong to the send engine while it is marked busy, without the lock (see `super::engine`).
locked_fields! { SendGuard, "`s_lock`":
    s_flags: u32,
    s_cur_sge: *mut bindings::rvt_sge_state,
    s_wqe: *mut bindings::rvt_swqe,
    s_sge: bindings::rvt_sge_state,
    s_rdma_mr: *mut bindings::rvt_mregion,
    s_len: u32,
    s_rdma_read_len: u32,
    s_last_psn: u32,
    s_sending_psn: u32,
    s_sending_hpsn: u32,
    s_psn: u32,
    s_ack_rdma_psn: u32,
    s_ack_psn: u32,
    s_tail: u32,
    s_cur: u32,
    s_acked: u32,
    s_lsn: u32,
    s_ahgpsn: u32,
    s_cur_size: u16,
    s_rdma_ack_cnt: u16,
    s_hdrwords: u8,
    s_ahgidx: i8,
    s_state: u8,
    s_ack_state: u8,
    s_nak_state: u8,
    r_nak_state: u8,
    s_retry: u8,
    s_rnr_retry: u8,
    s_num_rd_atomic: u8,
    s_tail_ack_queue: u8,
    s_acked_ack_queue: u8,
    s_draining: u8,
    s_rdma_read_sge: bindings::rvt_sge_state,
    s_ack_rdma_sge: bindings::rvt_sge_state,
}

/// Generates the readers of the read-mostly fields on [`Locked`], and their readers and
/// writers on [`QpMut`].
macro_rules! read_mostly_fields {
    ($($field:ident: $ty:ty,)*) => {
        field_fns!(QpMut<'_>, "all three locks", " (or the QP owned alone)": $($field: $ty,)*);

        /// A guard of one of the QP's three locks. `modify_qp` writes the read-mostly fields
        /// with all three held (and `create_qp` before the QP is published), both through a
        /// [`QpMut`], so any one of them is enough to read these.
        // Generated for the whole list, which states the coverage; not every field has a
        // reader in Rust yet.
        #[allow(dead_code)]
        pub(crate) trait Locked {
            /// The QP the held lock belongs to.
            fn qp_ptr(&self) -> *mut bindings::rvt_qp;

            $(
                #[doc = concat!("`", stringify!($field), "`, under any of the QP's locks.")]
                #[inline]
                fn $field(&self) -> $ty {
                    // SAFETY: a lock of the QP is held (the trait's contract), and the field
                    // is only written with all of them held.
                    unsafe { (*self.qp_ptr()).$field }
                }
            )*

            /// `remote_ah_attr`, under any of the QP's locks.
            #[inline]
            fn remote_ah_attr(&self) -> &bindings::rdma_ah_attr {
                // SAFETY: as for the fields above.
                unsafe { &(*self.qp_ptr()).remote_ah_attr }
            }
        }
    };
}

read_mostly_fields! {
    timeout_jiffies: c_ulong,
    srate_mbps: c_int,
    remote_qpn: u32,
    qkey: u32,
    pmtu: u16,
    log_pmtu: u8,
    qp_access_flags: u8,
    alt_timeout: u8,
    timeout: u8,
    s_srate: u8,
    s_mig_state: u8,
    port_num: u8,
    s_pkey_index: u8,
    s_alt_pkey_index: u8,
    r_max_rd_atomic: u8,
    s_max_rd_atomic: u8,
    s_retry_cnt: u8,
    s_rnr_retry_cnt: u8,
    r_min_rnr_timer: u8,
}

macro_rules! impl_locked {
    ($($guard:ident),*) => {$(
        impl Locked for $guard<'_> {
            fn qp_ptr(&self) -> *mut bindings::rvt_qp {
                self.0.qp.as_raw()
            }
        }
    )*};
}
impl_locked!(RecvGuard, PostGuard, SendGuard);

/// Generates `Qp` readers of fields that are fixed once the QP is published, and their
/// writers on [`OwnedQp`]: only `create_qp` and `destroy_qp` write them.
macro_rules! fixed_fields {
    ($($field:ident: $ty:ty,)*) => {
        ::kernel::macros::paste! {
            // Generated for the whole list; not every field has a reader or a writer in Rust.
            #[allow(dead_code)]
            impl Qp {
                $(
                    #[doc = concat!("`", stringify!($field), "`, fixed once the QP is \
                                     published.")]
                    #[inline]
                    pub(crate) fn $field(&self) -> $ty {
                        // SAFETY: a live QP (type invariant); the field is written only through
                        // an `OwnedQp`, while nothing else uses the QP.
                        unsafe { (*self.as_raw()).$field }
                    }
                )*
            }

            #[allow(dead_code)]
            impl OwnedQp<'_> {
                $(
                    #[doc = concat!("`", stringify!($field), "`, to write, while the QP is \
                                     being created or destroyed.")]
                    #[inline]
                    pub(crate) fn [<$field _mut>](&mut self) -> &mut $ty {
                        // SAFETY: nothing else uses the QP (`OwnedQp`'s invariant), and
                        // `&mut self` makes this the only reference through it.
                        unsafe { &mut (*self.as_raw()).$field }
                    }
                )*
            }
        }
    };
}

// `ip` owns a user receive ring (see `create`). `priv` (bindgen's `priv_`) is fixed too, but
// only the driver reads it: see `OwnedQp::set_driver_priv`.
fixed_fields! {
    s_ack_queue: *mut bindings::rvt_ack_entry,
    pid: c_int,
    s_size: u32,
    s_max_sge: u8,
    s_wq: *mut bindings::rvt_swqe,
    r_sg_list: *mut bindings::rvt_sge,
    ip: *mut bindings::rvt_mmap_info,
    allowed_ops: u8,
}

impl OwnedQp<'_> {
    /// Stores the driver's private data (`priv`, what its `qp_priv_alloc` returned), fixed
    /// once the QP is published.
    pub(crate) fn set_driver_priv(&mut self, p: *mut c_void) {
        // SAFETY: nothing else uses the QP (`OwnedQp`'s invariant).
        unsafe { (*self.as_raw()).priv_ = p };
    }
}

/// Generates `Qp` readers of read-mostly fields that C reads with no lock.
macro_rules! unlocked_reads {
    ($($field:ident: $ty:ty,)*) => {
        ::kernel::macros::paste! {
            // Generated for the whole list, which states what C reads with no lock; not every
            // field has a reader in Rust yet.
            #[allow(dead_code)]
            impl Qp {
                $(
                    #[doc = concat!("`", stringify!($field), "` read with no lock, as C reads \
                                     it (READ_ONCE): a racing `modify_qp` can make it stale.")]
                    #[inline]
                    pub(crate) fn [<$field _unlocked>](&self) -> $ty {
                        // SAFETY: a live QP (type invariant); an aligned field read once and
                        // volatile, so it cannot tear or be read twice.
                        unsafe { core::ptr::read_volatile(&raw const (*self.as_raw()).$field) }
                    }
                )*
            }
        }
    };
}

// The data path's few, and what `query_qp` reports: C reads all of it with no lock.
unlocked_reads! {
    state: u8,
    remote_qpn: u32,
    port_num: u8,
    r_msn: u32,
    s_rnr_retry_cnt: u8,
    pmtu: u16,
    s_mig_state: u8,
    qkey: u32,
    r_psn: u32,
    s_next_psn: u32,
    qp_access_flags: u8,
    s_pkey_index: u8,
    s_alt_pkey_index: u8,
    s_draining: u8,
    s_max_rd_atomic: u8,
    r_max_rd_atomic: u8,
    r_min_rnr_timer: u8,
    timeout: u8,
    s_retry_cnt: u8,
    alt_timeout: u8,
    s_flags: u32,
    // For a report only (see `post_send`'s check of `s_avail`): `s_lock`'s fields.
    s_tail: u32,
    s_cur: u32,
    s_acked: u32,
}

impl Qp {
    /// The primary and alternate address vectors, copied with no lock as C's `query_qp`
    /// copies them: a racing `modify_qp` can leave the copy half old, half new.
    pub(crate) fn ah_attrs_unlocked(&self) -> (bindings::rdma_ah_attr, bindings::rdma_ah_attr) {
        let qp = self.as_raw();
        // SAFETY: a live QP (type invariant); volatile copies of plain data, each read once.
        unsafe {
            (
                core::ptr::read_volatile(&raw const (*qp).remote_ah_attr),
                core::ptr::read_volatile(&raw const (*qp).alt_ah_attr),
            )
        }
    }
}

// The send queue's two indices, each written under one lock and read by the other side
// without it: `s_head` (the poster's, under `s_hlock`) and `s_last` (the send engine's, under
// `s_lock`). Every write is a Release store (`store_release`), every unlocked read an Acquire
// load.

/// Stores `n` into a send queue index of a live QP with Release ordering.
///
/// # Safety
///
/// `index` is `s_head` or `s_last` of a live QP, and the caller holds the lock that
/// serialises its writers (or owns the QP alone).
unsafe fn store_release(index: *mut u32, n: u32) {
    // SAFETY: an aligned u32 of the live QP, its writers serialised (caller's guarantee).
    // ORDERING: Release orders the slots' writes (or reads) before the index that hands them
    // over; pairs with the Acquire of `Qp::s_head_acquire` or `Qp::s_last_acquire`.
    unsafe { Atomic::from_ptr(index) }.store(n, Release);
}

impl PostGuard<'_> {
    /// `s_head`: the next slot to fill.
    pub(crate) fn s_head(&self) -> u32 {
        // SAFETY: written only under `s_hlock`, which this guard holds.
        unsafe { (*self.qp_ptr()).s_head }
    }

    /// Moves `s_head` to `n`, publishing the slots before it to the send engine.
    pub(crate) fn publish_s_head(&mut self, n: u32) {
        // SAFETY: `s_head` of the live QP, whose `s_hlock` this guard holds.
        unsafe { store_release(&raw mut (*self.qp_ptr()).s_head, n) };
    }
}

impl SendGuard<'_> {
    /// Sets the QP's state, which is written with both `r_lock` and `s_lock` held (and read
    /// under either): `r` is the proof of the other lock, checked to be this QP's.
    pub(crate) fn set_state(&mut self, r: &RecvGuard<'_>, state: u8) {
        if crate::compat::warn_on!(!ptr::eq(r.qp_ptr(), self.qp_ptr())) {
            return;
        }
        // SAFETY: both locks that protect `state` are held: this guard's `s_lock` and `r`'s
        // `r_lock` of the same QP.
        unsafe { (*self.qp_ptr()).state = state };
    }

    /// `s_last`: the oldest slot not yet completed.
    pub(crate) fn s_last(&self) -> u32 {
        // SAFETY: written only under `s_lock`, which this guard holds.
        unsafe { (*self.qp_ptr()).s_last }
    }

    /// Moves `s_last` to `n`, giving the slots before it back to posters.
    pub(crate) fn publish_s_last(&mut self, n: u32) {
        // SAFETY: `s_last` of the live QP, whose `s_lock` this guard holds.
        unsafe { store_release(&raw mut (*self.qp_ptr()).s_last, n) };
    }
}

// What `QpMut` reaches besides the lock lists: the state (written with `r_lock` and `s_lock`
// held), the send queue indices, the address vectors (read-mostly; lent by reference, as
// `Locked::remote_ah_attr` lends it) and the two atomics a reset clears.
impl QpMut<'_> {
    /// Sets the QP's state (`IB_QPS_*`).
    pub(crate) fn set_state(&mut self, state: u8) {
        // SAFETY: all three locks held, among them both that protect `state`, or the QP owned
        // alone (type invariant).
        unsafe { (*self.qp_ptr()).state = state };
    }

    /// `s_last`: the oldest slot not yet completed.
    pub(crate) fn s_last(&self) -> u32 {
        // SAFETY: as in `set_state`: `s_lock`, its writers' lock, is held or not needed.
        unsafe { (*self.qp_ptr()).s_last }
    }

    /// Sets both send queue indices, `s_head` and `s_last`, to `n`: an empty queue.
    pub(crate) fn set_s_head_last(&mut self, n: u32) {
        // SAFETY: `s_head` and `s_last` of the live QP; `s_hlock` and `s_lock`, which
        // serialise their writers, are held (or the QP is owned alone): type invariant.
        unsafe {
            store_release(&raw mut (*self.qp_ptr()).s_head, n);
            store_release(&raw mut (*self.qp_ptr()).s_last, n);
        }
    }

    /// `remote_ah_attr`: the primary path's address vector.
    pub(crate) fn remote_ah_attr_mut(&mut self) -> &mut bindings::rdma_ah_attr {
        // SAFETY: as in `set_state`; `&mut self` makes this the only reference through
        // `self`.
        unsafe { &mut (*self.qp_ptr()).remote_ah_attr }
    }

    /// `alt_ah_attr`: the alternate path's address vector.
    pub(crate) fn alt_ah_attr(&self) -> &bindings::rdma_ah_attr {
        // SAFETY: as in `set_state`.
        unsafe { &(*self.qp_ptr()).alt_ah_attr }
    }

    /// `alt_ah_attr`, to write.
    pub(crate) fn alt_ah_attr_mut(&mut self) -> &mut bindings::rdma_ah_attr {
        // SAFETY: as in `remote_ah_attr_mut`.
        unsafe { &mut (*self.qp_ptr()).alt_ah_attr }
    }

    /// Clears every `RVT_R_*` bit of `r_aflags` (C stores 0 with a plain write).
    pub(crate) fn clear_r_aflags(&mut self) {
        // SAFETY: `r_aflags` of a live QP, changed only by atomic bit operations.
        unsafe { Atomic::from_ptr(&raw mut (*self.qp_ptr()).r_aflags) }.store(0, Relaxed);
    }

    /// Sets `s_reserved_used` to 0: C's `atomic_set()`.
    pub(crate) fn clear_reserved_used(&mut self) {
        // SAFETY: an atomic_t of a live QP.
        unsafe { Atomic::from_ptr(&raw mut (*self.qp_ptr()).s_reserved_used.counter) }
            .store(0, Relaxed);
    }
}

impl Qp {
    /// The send WQE in slot `n`: `rvt_get_swqe_ptr()`. Slots are `sizeof(rvt_swqe)` plus room
    /// for `s_max_sge` SGEs.
    ///
    /// # Safety
    ///
    /// `n < s_size`.
    pub(crate) unsafe fn swqe(&self, n: u32) -> *mut bindings::rvt_swqe {
        let stride = core::mem::size_of::<bindings::rvt_swqe>()
            + usize::from(self.s_max_sge()) * core::mem::size_of::<bindings::rvt_sge>();
        // SAFETY: the caller guarantees `n` is in range, so the slot lies inside the queue's
        // allocation, fixed at creation.
        unsafe { self.s_wq().cast::<u8>().add(stride * n as usize).cast() }
    }

    /// `s_head` as the send engine sees it, without `s_hlock` (C's READ_ONCE).
    pub(crate) fn s_head_acquire(&self) -> u32 {
        // SAFETY: an aligned u32 of the live QP, written atomically (`publish_s_head`).
        // ORDERING: Acquire pairs with the Release of `PostGuard::publish_s_head`: the slots
        // before it are read after their writes.
        unsafe { Atomic::from_ptr(&raw mut (*self.as_raw()).s_head) }.load(Acquire)
    }

    /// `s_last` as a poster sees it, without `s_lock`.
    pub(crate) fn s_last_acquire(&self) -> u32 {
        // SAFETY: an aligned u32 of the live QP, written atomically (`publish_s_last`).
        // ORDERING: Acquire pairs with the Release of `SendGuard::publish_s_last`: a freed
        // slot is reused only after the engine is done with it.
        unsafe { Atomic::from_ptr(&raw mut (*self.as_raw()).s_last) }.load(Acquire)
    }
}

impl Qp {
    /// The retry timer; the timer API synchronises its users.
    pub(crate) fn s_timer(&self) -> *mut bindings::timer_list {
        // SAFETY: only a field address of the live QP.
        unsafe { &raw mut (*self.as_raw()).s_timer }
    }

    /// The QP's receive queue (unused with an SRQ), which `crate::krwq` locks itself.
    pub(crate) fn rq(&self) -> *mut bindings::rvt_rq {
        // SAFETY: only a field address of the live QP.
        unsafe { &raw mut (*self.as_raw()).r_rq }
    }

    /// The RNR timer; the hrtimer API synchronises its users.
    pub(crate) fn s_rnr_timer(&self) -> *mut bindings::hrtimer {
        // SAFETY: only a field address of the live QP.
        unsafe { &raw mut (*self.as_raw()).s_rnr_timer }
    }

    /// `next`, the QP's link in its QPN hash chain: written under the table's `qpt_lock`
    /// (qp/qpn.rs), followed under RCU by the lookups and the QP iterator. The address only.
    pub(crate) fn next_link(&self) -> *mut *mut bindings::rvt_qp {
        // SAFETY: only a field address of the live QP.
        unsafe { &raw mut (*self.as_raw()).next }
    }

    /// Sets `bit` (`RVT_R_*`) of `r_aflags`, atomically: C's `set_bit()`, no lock.
    pub(crate) fn set_r_aflag(&self, bit: u32) {
        // SAFETY: `r_aflags` of a live QP, an `unsigned long` changed only by atomic bit
        // operations; `bit` is one of its bits. CAST: a bit number.
        unsafe { bitops::set_bit(bit as usize, self.r_aflags()) };
    }

    /// Clears `bit` (`RVT_R_*`) of `r_aflags` atomically and says whether it was set: C's
    /// `test_and_clear_bit()`, no lock.
    pub(crate) fn test_and_clear_r_aflag(&self, bit: u32) -> bool {
        // SAFETY: as in `set_r_aflag`. CAST: a bit number.
        unsafe { bitops::test_and_clear_bit(bit as usize, self.r_aflags()) }
    }

    /// The address of `r_aflags`, as the bit operations take it.
    fn r_aflags(&self) -> *mut usize {
        // SAFETY: only a field address of the live QP; an `unsigned long` is a `usize`.
        unsafe { (&raw mut (*self.as_raw()).r_aflags).cast() }
    }

    /// `s_reserved_used`: the reserved send slots in use, read atomically.
    pub(crate) fn reserved_used(&self) -> u32 {
        // SAFETY: an atomic_t of a live QP.
        let n = unsafe { Atomic::from_ptr(&raw mut (*self.as_raw()).s_reserved_used.counter) }
            .load(Relaxed);
        // CAST: a count, never negative.
        n as u32
    }

    /// A request was posted into a reserved slot: `s_reserved_used` goes up by one.
    pub(crate) fn reserved_op_taken(&self) {
        // SAFETY: an atomic_t of a live QP.
        unsafe { Atomic::from_ptr(&raw mut (*self.as_raw()).s_reserved_used.counter) }
            .add(1, Relaxed);
    }

    /// A request posted into a reserved slot completed: `s_reserved_used` goes down by one,
    /// then a full barrier (C's smp_mb__after_atomic), so that the count drops before
    /// `s_last` frees the slot (see `Qp::is_avail`).
    pub(crate) fn reserved_op_done(&self) {
        // SAFETY: an atomic_t of a live QP, incremented when the request was posted.
        unsafe { Atomic::from_ptr(&raw mut (*self.as_raw()).s_reserved_used.counter) }
            .add(-1, Relaxed);
        smp_mb(Full);
    }

    /// `local_ops_pending`: the local operations deferred to the send engine, read atomically.
    pub(crate) fn local_ops_pending(&self) -> i32 {
        // SAFETY: an atomic_t of a live QP.
        unsafe { Atomic::from_ptr(&raw mut (*self.as_raw()).local_ops_pending.counter) }
            .load(Relaxed)
    }

    /// A local operation is deferred to the send engine: `local_ops_pending` goes up by one.
    pub(crate) fn local_op_deferred(&self) {
        // SAFETY: an atomic_t of a live QP.
        unsafe { Atomic::from_ptr(&raw mut (*self.as_raw()).local_ops_pending.counter) }
            .add(1, Relaxed);
    }

    /// A local operation counted at post (a deferred LOCAL_INV) is done: `local_ops_pending`
    /// goes down by one, atomically.
    pub(crate) fn local_op_done(&self) {
        // SAFETY: an atomic_t of a live QP, incremented when the WQE was posted.
        unsafe { Atomic::from_ptr(&raw mut (*self.as_raw()).local_ops_pending.counter) }
            .add(-1, Relaxed);
    }
}
