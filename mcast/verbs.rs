// SPDX-License-Identifier: GPL-2.0-only

//! `attach_mcast` and `detach_mcast` (ib_device_ops), and the `rvt_mcast_find` export that
//! hfi1's receive path walks groups with.
//!
//! ib_core has already checked that the QP is UD, the GID a multicast address and the LID a
//! multicast LID (ib_attach_mcast()); rdmavt adds C's own checks: not QP0/QP1, not in RESET.

use core::ptr;

use kernel::{error::from_result, ffi::c_int, prelude::*};

use super::{
    group::{Group, Member},
    groups, limits,
    tree::Tree,
};
use crate::{
    bindings,
    device::{Device, Port},
    macros::c_export,
    qp::{Locked, Qp},
};

/// The port a QP is bound to, and whether the QP is in RESET, read under `r_lock` (which,
/// with `s_lock`, guards both; C reads them unlocked).
fn port_and_reset(qp: &Qp) -> (u32, bool) {
    let r = qp.r_lock();
    let port_num = r.port_num();
    let reset = r.state() == bindings::ib_qp_state::IB_QPS_RESET.0;
    (u32::from(port_num), reset)
}

/// The QP's port. C indexes `rdi->ports[qp->port_num - 1]` unchecked, before any check, and a
/// QP that never left RESET has port 0: C reads `ports[-1]` (KASAN: slab-out-of-bounds), and
/// its detach then takes a lock inside whatever that was. Here port 0 is EINVAL.
fn port_of(dev: &Device, port_num: u32) -> Result<&Port> {
    dev.port(port_num)
}

fn attach(qp: &Qp, gid: &bindings::ib_gid, lid: u16) -> Result {
    let (port_num, reset) = port_and_reset(qp);
    if qp.qpn() <= 1 || reset {
        return Err(EINVAL);
    }
    let dev = qp.device();
    let port = port_of(dev, port_num)?;
    // Allocated before the lock, as in C: most attaches need both.
    let group = Group::new(gid, lid)?;
    let member = Member::new(qp)?;
    let (res, unused) = {
        // SAFETY: the driver initialised the port's lock before registering (rvt_init_port),
        // and its tree holds only our groups.
        let mut tree = unsafe { Tree::lock(port.as_raw()) };
        tree.add(group, member, limits(dev), &groups(dev))
    };
    drop(unused);
    res?;
    Ok(())
}

fn detach(qp: &Qp, gid: &bindings::ib_gid, lid: u16) -> Result {
    if qp.qpn() <= 1 {
        return Err(EINVAL);
    }
    let (port_num, _) = port_and_reset(qp);
    let dev = qp.device();
    let port = port_of(dev, port_num)?;
    let detached = {
        // SAFETY: as in `attach`.
        let mut tree = unsafe { Tree::lock(port.as_raw()) };
        tree.remove(gid, lid, qp.as_raw()).map_err(|_| EINVAL)?
    };
    detached.finish(&groups(dev));
    Ok(())
}

/// `attach_mcast`: adds the QP to the group (MGID `gid`, MLID `lid`) of its port.
///
/// # Safety
///
/// Only ib_core calls this, through `RVT_DEV_OPS`, with a live QP of ours and a valid GID.
pub(crate) unsafe extern "C" fn attach_mcast(
    ibqp: *mut bindings::ib_qp,
    gid: *mut bindings::ib_gid,
    lid: u16,
) -> c_int {
    // SAFETY: the caller passes a live QP of ours and a valid GID.
    let (qp, gid) = unsafe { (Qp::from_ib(ibqp), &*gid) };
    from_result(|| attach(qp, gid, lid).map(|()| 0))
}

/// `detach_mcast`: removes the QP from the group, and the group once it has no member.
/// Sleeps until receivers walking the group are done with it.
///
/// # Safety
///
/// As [`attach_mcast`].
pub(crate) unsafe extern "C" fn detach_mcast(
    ibqp: *mut bindings::ib_qp,
    gid: *mut bindings::ib_gid,
    lid: u16,
) -> c_int {
    // SAFETY: the caller passes a live QP of ours and a valid GID.
    let (qp, gid) = unsafe { (Qp::from_ib(ibqp), &*gid) };
    from_result(|| detach(qp, gid, lid).map(|()| 0))
}

/// Finds the group of MGID `mgid` and MLID `lid` (host order) on port `ibp`, with a
/// reference taken that the caller drops (`atomic_dec_return(&mcast->refcount) <= 1` then
/// `wake_up(&mcast->wait)`, as hfi1 does). NULL if there is none. Any context.
///
/// # Safety
///
/// `ibp` is a port of a registered rdmavt device; `mgid` is valid.
#[no_mangle]
pub(crate) unsafe extern "C" fn rvt_mcast_find(
    ibp: *mut bindings::rvt_ibport,
    mgid: *mut bindings::ib_gid,
    lid: u16,
) -> *mut bindings::rvt_mcast {
    // SAFETY: a registered device's port has its lock initialised and only our groups in its
    // tree; `mgid` is valid (caller's guarantee).
    let (mut tree, mgid) = unsafe { (Tree::lock(ibp), &*mgid) };
    tree.find_get(mgid, lid).unwrap_or(ptr::null_mut())
}
c_export!(rvt_mcast_find);
