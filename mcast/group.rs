// SPDX-License-Identifier: GPL-2.0-only

//! The two objects of the multicast tree, in their C layout (hfi1 walks them): a group
//! (`struct rvt_mcast`, one per MGID) and a member (`struct rvt_mcast_qp`, one per attached QP),
//! each owned by a handle until the tree takes it.

use core::ptr::NonNull;

use kernel::prelude::*;

use crate::compat::{
    aref::ARef,
    atomic::{Atomic, Relaxed},
};

use crate::{bindings, qp::Qp};

/// The MGID's 16 bytes, which order the tree (C compares them with memcmp).
pub(crate) fn gid_bytes(gid: &bindings::ib_gid) -> [u8; 16] {
    // SAFETY: every member of `union ib_gid` is plain bytes, so `raw` is always initialised.
    unsafe { gid.raw }
}

/// A member that no list holds: one reference on its QP and the allocation.
///
/// # Invariants
///
/// `self.0` is a `KBox`-allocated `rvt_mcast_qp`, on no list, whose `qp` is an [`ARef<Qp>`]
/// given up with [`ARef::into_raw`], owned by this handle.
pub(crate) struct Member(NonNull<bindings::rvt_mcast_qp>);

impl Member {
    /// A member for `qp`, taking a reference on it: `rvt_mcast_qp_alloc()`.
    pub(crate) fn new(qp: &Qp) -> Result<Self> {
        let mqp = bindings::rvt_mcast_qp {
            list: bindings::list_head::default(),
            qp: qp.as_raw(),
        };
        let mqp = KBox::into_raw(KBox::new(mqp, GFP_KERNEL)?);
        // The member's reference lives on as its C pointer to the QP, which hfi1 follows;
        // `drop` takes it back.
        ARef::into_raw(ARef::from(qp));
        // INVARIANT: fresh allocation, on no list, with the QP reference just taken.
        // SAFETY: `KBox::into_raw` never returns NULL.
        Ok(Self(unsafe { NonNull::new_unchecked(mqp) }))
    }

    /// The QP this member attaches.
    pub(crate) fn qp(&self) -> *mut bindings::rvt_qp {
        // SAFETY: `self.0` is valid (type invariant).
        unsafe { (*self.0.as_ptr()).qp }
    }

    /// Gives the member to a list; [`Member::from_raw`] takes it back.
    pub(crate) fn into_raw(self) -> *mut bindings::rvt_mcast_qp {
        let p = self.0.as_ptr();
        core::mem::forget(self);
        p
    }

    /// # Safety
    ///
    /// `mqp` came from [`Member::into_raw`], is on no list any more, and no walker can still
    /// see it (the group's walkers are gone, see `Group::wait_walkers`).
    pub(crate) unsafe fn from_raw(mqp: *mut bindings::rvt_mcast_qp) -> Self {
        // INVARIANT: the caller hands back what `into_raw` gave away, unlinked.
        // SAFETY: `into_raw` never returns NULL.
        Self(unsafe { NonNull::new_unchecked(mqp) })
    }
}

impl Drop for Member {
    /// `rvt_mcast_qp_free()`: drops the QP reference and frees the member.
    fn drop(&mut self) {
        let mqp = self.0.as_ptr();
        // SAFETY: the handle owns the allocation and the QP reference that `new` gave up
        // with `ARef::into_raw` (type invariant); `qp` is that pointer, never NULL. The QP is
        // not touched after its reference is dropped.
        unsafe {
            drop(ARef::from_raw(NonNull::new_unchecked(
                (*mqp).qp.cast::<Qp>(),
            )));
            drop(KBox::from_raw(mqp));
        }
    }
}

/// A group that no tree holds, with the members still on its list.
///
/// # Invariants
///
/// `self.0` is a `KBox`-allocated `rvt_mcast` with initialised list and wait queue, in no
/// tree and seen by no walker; every entry of its `qp_list` is a member given away with
/// [`Member::into_raw`], owned by this handle.
pub(crate) struct Group(NonNull<bindings::rvt_mcast>);

impl Group {
    /// An empty group for `mgid`/`lid` with no references: `rvt_mcast_alloc()`.
    pub(crate) fn new(mgid: &bindings::ib_gid, lid: u16) -> Result<Self> {
        // SAFETY: all zeroes is a valid unlinked `rvt_mcast` (its list and wait queue are
        // initialised below, before use).
        let zero: bindings::rvt_mcast = unsafe { core::mem::zeroed() };
        let m = KBox::into_raw(KBox::new(zero, GFP_KERNEL)?);
        // SAFETY: `m` is the fresh allocation: its list head and wait queue are set up in
        // place, where they stay.
        unsafe {
            (*m).mcast_addr.mgid = *mgid;
            (*m).mcast_addr.lid = lid;
            bindings::rdmavt_rs_init_list_head(&raw mut (*m).qp_list);
            bindings::rdmavt_rs_init_mcast_wait(m);
        }
        // INVARIANT: initialised above, on no tree, with an empty list.
        // SAFETY: `KBox::into_raw` never returns NULL.
        Ok(Self(unsafe { NonNull::new_unchecked(m) }))
    }

    pub(crate) fn as_ptr(&self) -> *mut bindings::rvt_mcast {
        self.0.as_ptr()
    }

    /// Gives the group to a tree; [`Group::from_raw`] takes it back.
    pub(crate) fn into_raw(self) -> *mut bindings::rvt_mcast {
        let p = self.0.as_ptr();
        core::mem::forget(self);
        p
    }

    /// # Safety
    ///
    /// `m` came from [`Group::into_raw`] and has been erased from its tree; the caller owns
    /// every member still on its list. Walkers may still hold references: see
    /// [`Group::wait_walkers`].
    pub(crate) unsafe fn from_raw(m: *mut bindings::rvt_mcast) -> Self {
        // INVARIANT: the caller hands back what `into_raw` gave away, erased from the tree.
        // SAFETY: `into_raw` never returns NULL.
        Self(unsafe { NonNull::new_unchecked(m) })
    }
}

impl Drop for Group {
    /// `rvt_mcast_free()`: frees the members left on the list, then the group.
    fn drop(&mut self) {
        let m = self.0.as_ptr();
        // SAFETY: the handle owns the group and its members (type invariant), and no walker
        // sees them any more.
        unsafe {
            let head = &raw mut (*m).qp_list;
            let mut pos = (*head).next;
            while pos != head {
                let next = (*pos).next;
                drop(Member::from_raw(member_of(pos)));
                pos = next;
            }
            drop(KBox::from_raw(m));
        }
    }
}

/// The member whose `list` is `pos` (`list_entry()`).
pub(crate) fn member_of(pos: *mut bindings::list_head) -> *mut bindings::rvt_mcast_qp {
    // `list` is the first member of `rvt_mcast_qp`.
    const _: () = assert!(core::mem::offset_of!(bindings::rvt_mcast_qp, list) == 0);
    pos.cast()
}

/// The group whose `rb_node` is `n` (`rb_entry()`).
pub(crate) fn group_of(n: *mut bindings::rb_node) -> *mut bindings::rvt_mcast {
    // `rb_node` is the first member of `rvt_mcast`.
    const _: () = assert!(core::mem::offset_of!(bindings::rvt_mcast, rb_node) == 0);
    n.cast()
}

/// The group's reference count (`refcount`), which the tree and each walker hold.
///
/// # Safety
///
/// `m` is a live group.
pub(crate) unsafe fn refs<'a>(m: *mut bindings::rvt_mcast) -> &'a Atomic<i32> {
    // SAFETY: `refcount` is an `atomic_t` of a live group (caller's guarantee); C only ever
    // accesses it atomically.
    unsafe { Atomic::from_ptr(&raw mut (*m).refcount.counter) }
}

/// Takes a walker's (or the tree's) reference on a group. Relaxed, as C's `atomic_inc()`.
///
/// # Safety
///
/// `m` is a live group in a tree whose lock is held.
pub(crate) unsafe fn get(m: *mut bindings::rvt_mcast) {
    // SAFETY: the caller guarantees `m` is live.
    unsafe { refs(m) }.add(1, Relaxed);
}

/// Waits until at most `max` references are left on a group: the tree's own (`max` 1) or
/// none (`max` 0). Walkers drop theirs with `rdmavt_rs_mcast_put()` or as hfi1 does.
///
/// # Safety
///
/// `m` is a live group that stays alive during the wait, and no new walker can find it (it
/// is out of the tree, or the member being waited for is off its list).
pub(crate) unsafe fn wait_walkers(m: *mut bindings::rvt_mcast, max: i32) {
    // SAFETY: the caller guarantees `m` is live; the wait sleeps, which a verb may do.
    unsafe { bindings::rdmavt_rs_mcast_wait_refs(m, max) }
}
