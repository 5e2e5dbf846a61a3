// SPDX-License-Identifier: GPL-2.0-only

//! A port's multicast tree (`rvt_ibport.mcast_tree`, an rb-tree ordered by MGID), reached
//! only with the port's `lock` held, and the device's count of groups.

use core::{cmp::Ordering, marker::PhantomData, ptr};

use kernel::prelude::*;

use crate::compat::lock::SpinLockIrqBackend;

use super::group::{self, gid_bytes, group_of, member_of, Group, Member};
use crate::{bindings, lock::Guarded};

/// The tree of one port, its `lock` held (with interrupts off, as C takes it).
///
/// # Invariants
///
/// `root` is the port's `mcast_tree`, the field `_guard` holds the lock of; every node in
/// it is the `rb_node` of a live group given with [`Group::into_raw`].
pub(crate) struct Tree<'a> {
    _guard: Guarded<'a, bindings::rb_root, SpinLockIrqBackend>,
    root: *mut bindings::rb_root,
}

/// What an attach did not put into the tree, freed when dropped (after the lock, as C does).
pub(crate) struct Unused {
    /// The new group, unless it was inserted.
    _group: Option<Group>,
    /// The new member, unless it was linked.
    _member: Option<Member>,
}

/// The device's count of multicast groups (`n_mcast_grps_allocated`) and its lock.
///
/// # Invariants
///
/// `lock` is an initialised spinlock that protects `count`; both live for `'a`.
pub(crate) struct GroupCount<'a> {
    lock: *mut bindings::spinlock_t,
    count: *mut u32,
    _life: PhantomData<&'a ()>,
}

/// The driver's limits (`dparms.props`).
#[derive(Clone, Copy)]
pub(crate) struct Limits {
    /// `max_mcast_grp`: groups per device.
    pub(crate) groups: u32,
    /// `max_mcast_qp_attach`: QPs per group.
    pub(crate) qps_per_group: u32,
}

/// How an attach went, when it went well.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Attached {
    /// A new group, with the QP as its first member; the tree took both.
    NewGroup,
    /// The group was there; the tree took the member, not the new group.
    Joined,
    /// The QP was already a member; the tree took neither (C calls this success too).
    AlreadyMember,
}

/// Why an attach failed. The tree took nothing.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum AttachError {
    /// The MGID is in the tree with another MLID (one MGID has one MLID): EINVAL.
    LidMismatch,
    /// The group has `max_mcast_qp_attach` members, or the device `max_mcast_grp` groups: ENOMEM.
    Full,
}

impl From<AttachError> for Error {
    fn from(e: AttachError) -> Error {
        match e {
            AttachError::LidMismatch => EINVAL,
            AttachError::Full => ENOMEM,
        }
    }
}

/// Why a detach failed: the MGID is not there, has another MLID, or the QP is not a member.
/// All three are EINVAL in C.
#[derive(Debug, PartialEq, Eq)]
pub(crate) struct NotAttached;

/// What a detach took out of the tree, to be freed once the walkers are gone
/// ([`Detached::finish`]).
///
/// # Invariants
///
/// `member` is off `group`'s list and owned by this value; if `last`, `group` is out of its
/// tree and owned by this value too. Walkers that found them before may still hold them.
pub(crate) struct Detached {
    group: *mut bindings::rvt_mcast,
    member: *mut bindings::rvt_mcast_qp,
    last: bool,
}

impl Detached {
    /// Whether the QP was the group's last member, so that the group left the tree (for the
    /// KUnit suite).
    #[cfg(rdmavt_kunit)]
    pub(crate) fn was_last(&self) -> bool {
        self.last
    }

    /// Waits for the walkers and frees what the detach took out: the rest of
    /// `rvt_detach_mcast()`. Sleeps.
    pub(crate) fn finish(self, groups: &GroupCount<'_>) {
        let (m, mqp) = (self.group, self.member);
        // SAFETY: `m` is live: the tree's reference (or, if it left the tree, ours) keeps it.
        // No new walker finds `mqp` (off the list); those that did hold a reference on the
        // group, so once only the tree's is left, `mqp` is ours alone.
        unsafe {
            group::wait_walkers(m, 1);
            drop(Member::from_raw(mqp));
        }
        if !self.last {
            return;
        }
        // SAFETY: the group is out of the tree (type invariant): drop the tree's reference and
        // wait for the last walkers; then the group is ours alone.
        unsafe {
            group::refs(m).add(-1, crate::compat::atomic::Relaxed);
            group::wait_walkers(m, 0);
            drop(Group::from_raw(m));
        }
        *groups.lock() -= 1;
    }
}

impl<'a> GroupCount<'a> {
    /// # Safety
    ///
    /// `lock` is an initialised spinlock that protects `count`; both live for `'a`.
    pub(crate) unsafe fn new(lock: *mut bindings::spinlock_t, count: *mut u32) -> Self {
        // INVARIANT: the caller's guarantee.
        Self {
            lock,
            count,
            _life: PhantomData,
        }
    }

    /// Takes the lock. Inside a tree's lock too (C nests it there), so interrupts are off.
    pub(crate) fn lock(&self) -> Guarded<'_, u32, SpinLockIrqBackend> {
        // SAFETY: the type invariant.
        unsafe { Guarded::lock(self.lock, self.count) }
    }
}

impl<'a> Tree<'a> {
    /// Takes `lock` and gives the tree it protects.
    ///
    /// # Safety
    ///
    /// `port` is a port whose `lock` is initialised, alive for `'a`, and whose `mcast_tree`
    /// holds only groups given with [`Group::into_raw`].
    pub(crate) unsafe fn lock(port: *mut bindings::rvt_ibport) -> Self {
        // SAFETY: `port` is valid (caller's guarantee); this only takes a field's address.
        let root = unsafe { &raw mut (*port).mcast_tree };
        // SAFETY: `lock` protects `mcast_tree` (rdma_vt.h: "protect changes in this struct"),
        // both live as long as the port (caller's guarantee).
        let guard = unsafe { Guarded::lock(&raw mut (*port).lock, root) };
        // INVARIANT: the lock of `root` is held; its contents are the caller's guarantee.
        Self {
            _guard: guard,
            root,
        }
    }

    /// Whether no group is in the tree (for the KUnit suite).
    #[cfg(rdmavt_kunit)]
    pub(crate) fn is_empty(&self) -> bool {
        // SAFETY: `root` is valid and its lock held (type invariant).
        unsafe { (*self.root).rb_node.is_null() }
    }

    /// The link where a group for `mgid` is or would go, and its parent: the search of
    /// `rvt_mcast_find()`, `rvt_mcast_add()` and `rvt_detach_mcast()`.
    fn search(&mut self, mgid: &[u8; 16]) -> (*mut *mut bindings::rb_node, *mut bindings::rb_node) {
        // SAFETY: `root` is valid (type invariant); this only takes a field's address.
        let mut link: *mut *mut bindings::rb_node = unsafe { &raw mut (*self.root).rb_node };
        let mut parent = ptr::null_mut();
        // SAFETY: the lock is held, so every node reachable from the root is a live group
        // in this tree (type invariant of `Tree::lock`'s caller).
        unsafe {
            while !(*link).is_null() {
                parent = *link;
                let here = gid_bytes(&(*group_of(parent)).mcast_addr.mgid);
                link = match mgid.cmp(&here) {
                    Ordering::Less => &raw mut (*parent).rb_left,
                    Ordering::Greater => &raw mut (*parent).rb_right,
                    Ordering::Equal => break,
                };
            }
        }
        (link, parent)
    }

    /// The group for `mgid`, if any, whatever its MLID.
    pub(crate) fn find(&mut self, mgid: &bindings::ib_gid) -> Option<*mut bindings::rvt_mcast> {
        let (link, _) = self.search(&gid_bytes(mgid));
        // SAFETY: `link` points into the locked tree.
        let n = unsafe { *link };
        (!n.is_null()).then(|| group_of(n))
    }

    /// The group for `mgid` and `lid` with a walker's reference taken: `rvt_mcast_find()`.
    pub(crate) fn find_get(
        &mut self,
        mgid: &bindings::ib_gid,
        lid: u16,
    ) -> Option<*mut bindings::rvt_mcast> {
        let m = self.find(mgid)?;
        // SAFETY: `m` is in the locked tree, so live.
        unsafe {
            if (*m).mcast_addr.lid != lid {
                return None;
            }
            group::get(m);
        }
        Some(m)
    }

    /// Attaches `member`'s QP to the group of `new`'s MGID, inserting `new` if the group is
    /// not there: `rvt_mcast_add()`. What the tree does not take comes back in [`Unused`],
    /// for the caller to free once the lock is dropped.
    pub(crate) fn add(
        &mut self,
        new: Group,
        member: Member,
        limits: Limits,
        groups: &GroupCount<'_>,
    ) -> (core::result::Result<Attached, AttachError>, Unused) {
        let (mgid, lid) = new.addr();
        let (link, parent) = self.search(&gid_bytes(&mgid));
        // SAFETY: `link` points into the locked tree.
        let existing = unsafe { *link };
        if !existing.is_null() {
            let (res, member) = self.join(group_of(existing), lid, member, limits);
            return (
                res,
                Unused {
                    _group: Some(new),
                    _member: member,
                },
            );
        }
        {
            let mut n = groups.lock();
            if *n >= limits.groups {
                return (
                    Err(AttachError::Full),
                    Unused {
                        _group: Some(new),
                        _member: Some(member),
                    },
                );
            }
            *n += 1;
        }
        let m = new.into_raw();
        let mqp = member.into_raw();
        // SAFETY: `m` is the new group (now the tree's) and `mqp` the new member (now the
        // group's); `link`/`parent` are the empty slot the search found, in the locked tree.
        unsafe {
            (*m).n_attached += 1;
            bindings::rdmavt_rs_list_add_tail_rcu(&raw mut (*mqp).list, &raw mut (*m).qp_list);
            // The tree's own reference, which the last detach drops.
            group::get(m);
            bindings::rdmavt_rs_rb_link_insert(&raw mut (*m).rb_node, parent, link, self.root);
        }
        (
            Ok(Attached::NewGroup),
            Unused {
                _group: None,
                _member: None,
            },
        )
    }

    /// Adds `member` to the group `m` already in the tree, if the MLID matches, the QP is not
    /// a member yet and the group has room; gives `member` back if not.
    fn join(
        &mut self,
        m: *mut bindings::rvt_mcast,
        lid: u16,
        member: Member,
        limits: Limits,
    ) -> (core::result::Result<Attached, AttachError>, Option<Member>) {
        let qp = member.qp();
        // SAFETY: `m` is in the locked tree, so live, and its list changes only under the lock.
        unsafe {
            if (*m).mcast_addr.lid != lid {
                return (Err(AttachError::LidMismatch), Some(member));
            }
            if members(m).any(|p| (*p).qp == qp) {
                return (Ok(Attached::AlreadyMember), Some(member));
            }
            // C compares the int count with the u32 limit, as unsigned.
            if (*m).n_attached as u32 >= limits.qps_per_group {
                return (Err(AttachError::Full), Some(member));
            }
            let mqp = member.into_raw();
            (*m).n_attached += 1;
            bindings::rdmavt_rs_list_add_tail_rcu(&raw mut (*mqp).list, &raw mut (*m).qp_list);
        }
        (Ok(Attached::Joined), None)
    }

    /// Takes `qp`'s member off the group of `mgid`/`lid`, and the group out of the tree if it
    /// was the last: the locked part of `rvt_detach_mcast()`. The member stays visible to
    /// walkers that found it before: see [`Detached`].
    pub(crate) fn remove(
        &mut self,
        mgid: &bindings::ib_gid,
        lid: u16,
        qp: *mut bindings::rvt_qp,
    ) -> core::result::Result<Detached, NotAttached> {
        let m = self.find(mgid).ok_or(NotAttached)?;
        // SAFETY: `m` is in the locked tree, so live, and its list changes only under the lock.
        unsafe {
            if (*m).mcast_addr.lid != lid {
                return Err(NotAttached);
            }
            let mqp = members(m).find(|&p| (*p).qp == qp).ok_or(NotAttached)?;
            // Unlinked, but not poisoned: walkers that are on it may still step forward.
            bindings::rdmavt_rs_list_del_rcu(&raw mut (*mqp).list);
            (*m).n_attached -= 1;
            let last = bindings::rdmavt_rs_list_empty(&raw const (*m).qp_list);
            if last {
                bindings::rdmavt_rs_rb_erase(&raw mut (*m).rb_node, self.root);
            }
            // INVARIANT: `mqp` is off the list and `m`, if last, out of the tree, both ours.
            Ok(Detached {
                group: m,
                member: mqp,
                last,
            })
        }
    }

    /// Takes any one group out of the tree, for freeing them all at unregister.
    pub(crate) fn pop(&mut self) -> Option<*mut bindings::rvt_mcast> {
        // SAFETY: `root` is valid and its lock held (type invariant).
        let n = unsafe { (*self.root).rb_node };
        if n.is_null() {
            return None;
        }
        // SAFETY: `n` is the root node of the locked tree.
        unsafe { bindings::rdmavt_rs_rb_erase(n, self.root) };
        Some(group_of(n))
    }
}

impl Group {
    /// The group's MGID and MLID.
    pub(crate) fn addr(&self) -> (bindings::ib_gid, u16) {
        let m = self.as_ptr();
        // SAFETY: the handle's group is live; its address never changes.
        unsafe { ((*m).mcast_addr.mgid, (*m).mcast_addr.lid) }
    }
}

/// The members of group `m`, in list order.
///
/// # Safety
///
/// `m` is live and its list does not change while the iterator is used (its tree's lock is
/// held, or the group is owned).
unsafe fn members(
    m: *mut bindings::rvt_mcast,
) -> impl Iterator<Item = *mut bindings::rvt_mcast_qp> {
    // SAFETY: the caller guarantees `m` is live and its list stable.
    let head = unsafe { &raw mut (*m).qp_list };
    // SAFETY: as above.
    let mut pos = unsafe { (*head).next };
    core::iter::from_fn(move || {
        if pos == head {
            return None;
        }
        let here = pos;
        // SAFETY: `here` is an entry of the stable list.
        pos = unsafe { (*here).next };
        Some(member_of(here))
    })
}
