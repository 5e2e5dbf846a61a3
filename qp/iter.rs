// SPDX-License-Identifier: GPL-2.0-only

//! The QP iterator of drivers (hfi1's debugfs and its QP walks): `rvt_qp_iter_init`,
//! `rvt_qp_iter_next` and `rvt_qp_iter`.
//!
//! The walk visits the special QPs first, two slots per port (QP0 and QP1), then each bucket
//! of the QPN hash table along its `next` chain. Special QPs are never in the hash table and
//! their `next` is NULL, so one loop covers both: position `n` below `specials` is port
//! `n / 2`'s QP `n & 1`, and position `specials + i` is bucket `i`.

use core::ptr;

use kernel::prelude::*;

use crate::compat::{
    aref::ARef,
    atomic::{atomic_load, Acquire},
    rcu,
};

use super::{qpn::QpDev, Qp};
use crate::{bindings, device::Device, macros::c_export};

/// The callback type of the iterator.
type Callback = Option<unsafe extern "C" fn(qp: *mut bindings::rvt_qp, v: u64)>;

/// A fresh iterator over `rdi`'s QPs, before the first.
///
/// # Safety
///
/// `rdi` is a registered device of ours.
unsafe fn start(rdi: *mut bindings::rvt_dev_info, v: u64, cb: Callback) -> bindings::rvt_qp_iter {
    bindings::rvt_qp_iter {
        qp: ptr::null_mut(),
        rdi,
        cb,
        v,
        // SAFETY: `phys_port_cnt` is fixed once the device is registered.
        specials: unsafe { (*rdi).ibdev.phys_port_cnt } as i32 * 2,
        n: 0,
    }
}

/// `rvt_qp_iter_init`: a new iterator, allocated (the caller frees it with `kfree`), or NULL
/// if memory is short.
///
/// # Safety
///
/// `rdi` is a registered device of ours.
#[no_mangle]
pub(crate) unsafe extern "C" fn rvt_qp_iter_init(
    rdi: *mut bindings::rvt_dev_info,
    v: u64,
    cb: Callback,
) -> *mut bindings::rvt_qp_iter {
    // SAFETY: the caller's guarantee.
    let iter = unsafe { start(rdi, v, cb) };
    // KBox is kmalloc memory, which the caller's kfree() releases.
    KBox::new(iter, GFP_KERNEL).map_or(ptr::null_mut(), KBox::into_raw)
}
c_export!(rvt_qp_iter_init);

/// `rvt_qp_iter_next`: moves to the next QP and returns 0 (`iter->qp` is it), or returns 1
/// at the end.
///
/// # Safety
///
/// `iter` came from [`rvt_qp_iter_init`] (or is a valid stack iterator) and the caller is in
/// an RCU read-side critical section, as it was on the previous call for the same walk.
#[no_mangle]
pub(crate) unsafe extern "C" fn rvt_qp_iter_next(iter: *mut bindings::rvt_qp_iter) -> i32 {
    // SAFETY: the caller's guarantee.
    let iter = unsafe { &mut *iter };
    // SAFETY: `rdi` is a device of ours, registered (or being unregistered by `qp::exit`,
    // which walks it before it frees the QP table).
    let dev = unsafe { Device::from_raw(iter.rdi) };
    let qp_dev = QpDev::of(dev);
    // CAST: a table size, far below `i32::MAX` (C too compares it with the int position).
    let size = qp_dev.size() as i32;
    let mut prev = iter.qp;
    while iter.n < size + iter.specials {
        // SAFETY: RCU is held (caller's guarantee), so every QP reached here stays allocated;
        // `prev` is NULL or the QP the walk reached last, and `iter.n` is a position.
        let next = unsafe { slot_after(iter, dev, qp_dev, prev) };
        if !next.is_null() {
            iter.qp = next;
            return 0;
        }
        prev = ptr::null_mut();
        iter.n += 1;
    }
    1
}
c_export!(rvt_qp_iter_next);

/// The QP after `prev` at position `iter.n`: `prev`'s hash successor, or the head of the
/// position if `prev` is NULL. NULL when the position has no more.
///
/// # Safety
///
/// Inside RCU; `prev` is NULL or a QP reached by this walk; `iter.n` is a valid position;
/// `dev` and `qp_dev` are the walk's device and its QP table.
unsafe fn slot_after(
    iter: &bindings::rvt_qp_iter,
    dev: &Device,
    qp_dev: QpDev,
    prev: *mut bindings::rvt_qp,
) -> *mut bindings::rvt_qp {
    let slot = if !prev.is_null() {
        // SAFETY: a QP this walk reached under RCU, which the caller still holds: the QP stays
        // allocated, and its `next` readable, until the read section ends.
        unsafe { Qp::from_raw(prev) }.next_link()
    } else if iter.n < iter.specials {
        // Two special QPs (0 and 1) per port, from port 1 on.
        // CAST: `0 <= n < specials`, twice the port count.
        let port = dev.port((iter.n / 2 + 1) as u32).ok();
        // CAST: 0 or 1.
        match port.and_then(|port| port.special_qp_slot((iter.n & 1) as u32)) {
            Some(slot) => slot,
            None => return ptr::null_mut(),
        }
    } else {
        // CAST: `specials <= n < specials + size`: a bucket of the table.
        match qp_dev.nth_bucket((iter.n - iter.specials) as u32) {
            Some(bucket) => bucket,
            None => return ptr::null_mut(),
        }
    };
    // SAFETY: a slot of the port, the table or a QP that RCU keeps alive (above).
    // ORDERING: Acquire pairs with the Release stores that publish a QP (qp/qpn.rs), so its
    // fields are visible once the pointer is.
    unsafe { atomic_load(slot, Acquire) }
}

/// `rvt_qp_iter`: calls `cb(qp, v)` for each QP of `rdi`, outside RCU and with a reference
/// held on the QP, so the callback may sleep.
///
/// # Safety
///
/// `rdi` is a registered device of ours; `cb` is a valid callback.
#[no_mangle]
pub(crate) unsafe extern "C" fn rvt_qp_iter(
    rdi: *mut bindings::rvt_dev_info,
    v: u64,
    cb: Callback,
) {
    // SAFETY: the caller's guarantee.
    let mut iter = unsafe { start(rdi, v, cb) };
    let Some(cb) = cb else { return };
    let mut guard = rcu::read_lock();
    // SAFETY: RCU is held, on this and every later call of the walk.
    while unsafe { rvt_qp_iter_next(&mut iter) } == 0 {
        // The counted reference keeps the QP alive once RCU ends, during the callback.
        // SAFETY: `iter.qp` is a live QP under RCU, where the walk found it.
        let held = ARef::from(unsafe { Qp::from_raw(iter.qp) });
        drop(guard);
        // SAFETY: the caller's callback, with a QP on which we hold a reference for it (C's
        // contract: the callback borrows the iterator's reference, it does not own one).
        unsafe { cb(held.as_raw(), iter.v) };
        guard = rcu::read_lock();
        // Given back only under RCU, as C does: the walk goes on from the QP's `next`, which
        // RCU keeps readable once the count no longer does.
        drop(held);
    }
    drop(guard);
}
c_export!(rvt_qp_iter);
