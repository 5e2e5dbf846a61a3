// SPDX-License-Identifier: GPL-2.0-only

//! Multicast: per port, an rb-tree of groups (`struct rvt_mcast`, one per MGID), each with
//! the list of its attached QPs (`struct rvt_mcast_qp`). Both keep their C layout: hfi1 finds
//! a group with `rvt_mcast_find()` and walks its QP list under RCU, without our lock.
//!
//! # References and freeing
//!
//! A group's `refcount` counts one for the tree and one for each walker (a receiver between
//! `rvt_mcast_find()` and its put). Members are added and removed under the port's lock with
//! RCU list operations; a detach then waits until only the tree's reference is left, so that
//! no walker still stands on the removed member, before freeing it; the last detach also
//! drops the tree's reference and waits for none before freeing the group.
//!
//! # Lock order
//!
//! ```text
//!   port->lock  ->  rdi->n_mcast_grps_lock
//! ```
//!
//! No QP lock is held while taking either (attach reads the QP's state under `r_lock` and
//! drops it first); hfi1 takes a QP's `r_lock` while walking a group, holding neither.

mod group;
#[cfg(rdmavt_kunit)]
mod tests;
mod tree;
mod verbs;

pub(crate) use verbs::{attach_mcast, detach_mcast};

use crate::{
    device::{log::rvt_err, Device},
    lock::spin_lock_init,
};
use group::Group;
use tree::{GroupCount, Limits, Tree};

/// Sets up the device's multicast state: `rvt_driver_mcast_init()`.
///
/// # Safety
///
/// The device is not registered yet: nothing else uses its multicast state.
pub(crate) unsafe fn driver_init(dev: &Device) {
    // SAFETY: the device is not registered (caller's guarantee), so the lock is unused.
    unsafe {
        spin_lock_init!(
            &raw mut (*dev.as_raw()).n_mcast_grps_lock,
            c"&rdi->n_mcast_grps_lock"
        )
    };
}

/// The device's group count.
fn groups(dev: &Device) -> GroupCount<'_> {
    let rdi = dev.as_raw();
    // SAFETY: `driver_init` initialised the lock at registration; it protects the count, and
    // both live as long as the device.
    unsafe {
        GroupCount::new(
            &raw mut (*rdi).n_mcast_grps_lock,
            &raw mut (*rdi).n_mcast_grps_allocated,
        )
    }
}

/// The driver's multicast limits (`dparms.props`).
fn limits(dev: &Device) -> Limits {
    let props = &dev.dparms().props;
    Limits {
        groups: crate::device::limit(props.max_mcast_grp),
        qps_per_group: crate::device::limit(props.max_mcast_qp_attach),
    }
}

/// Frees the groups still attached when the device goes away. ib_core detaches every user
/// QP before destroying it and kernel users detach theirs, so a group here is a driver's
/// leak: C's `rvt_qp_exit()` reports it as one (`rvt_mcast_tree_empty()`), and leaves it.
/// We report it and free it, giving the QPs their references back.
///
/// # Safety
///
/// The device was registered and ib_core has unregistered it: no verb and no receiver runs.
pub(crate) unsafe fn exit(dev: &Device) {
    let nports = u32::try_from(dev.dparms().nports).unwrap_or(0);
    let mut freed = 0u32;
    for port in (1..=nports).filter_map(|n| dev.port(n).ok()) {
        loop {
            let m = {
                // SAFETY: a registered device's port: lock initialised, only our groups.
                let mut tree = unsafe { Tree::lock(port.as_raw()) };
                tree.pop()
            };
            let Some(m) = m else { break };
            // SAFETY: out of the tree, and no receiver runs any more (caller's guarantee).
            drop(unsafe { Group::from_raw(m) });
            freed += 1;
        }
    }
    if freed != 0 {
        rvt_err!(
            dev,
            "{freed} multicast groups still attached at unregister; freed\n"
        );
        *groups(dev).lock() = 0;
    }
}
