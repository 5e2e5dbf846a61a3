// SPDX-License-Identifier: GPL-2.0-only

//! The CQ verbs: create, destroy, poll, req_notify and resize.

use kernel::{
    error::to_result,
    ffi::{c_int, c_uint},
    prelude::*,
};

use crate::compat::lock::SpinLockIrqBackend;

use super::{enter, ring::Ring, Cq};
use crate::{
    bindings,
    device::Device,
    lock::Guarded,
    mmap::{MmapInfo, Udata},
    trace,
};

const REPORT_MISSED_EVENTS: u32 = bindings::ib_cq_notify_flags::IB_CQ_REPORT_MISSED_EVENTS.0;
const SOLICITED_MASK: u32 = bindings::ib_cq_notify_flags::IB_CQ_SOLICITED_MASK.0;
const NEXT_COMP: u8 = bindings::ib_cq_notify_flags::IB_CQ_NEXT_COMP.0 as u8;

/// The device's count of CQs, under `n_cqs_lock`.
fn cq_count(dev: &Device) -> Guarded<'_, u32, SpinLockIrqBackend> {
    let rdi = dev.as_raw();
    // SAFETY: `n_cqs_lock` is initialised at registration and protects `n_cqs_allocated`.
    unsafe { Guarded::lock(&raw mut (*rdi).n_cqs_lock, &raw mut (*rdi).n_cqs_allocated) }
}

/// Writes `v` as the verb's reply, as 7.3's C rdmavt does: `ib_respond_udata()`.
///
/// # Safety
///
/// `udata` is valid, with room for a u64.
#[cfg(not(rdmavt_kernel_6_12))]
unsafe fn respond_u64(udata: *mut bindings::ib_udata, mut v: u64) -> Result {
    // SAFETY: the caller's guarantee; `v` is a local u64.
    to_result(unsafe { bindings::_ib_respond_udata(udata, (&raw mut v).cast(), 8) })
}

/// Writes `v` as the verb's reply, as 6.12's C rdmavt does: `ib_copy_to_udata()` (6.12 has
/// no `ib_respond_udata()`).
///
/// # Safety
///
/// `udata` is valid, with room for a u64.
#[cfg(rdmavt_kernel_6_12)]
unsafe fn respond_u64(udata: *mut bindings::ib_udata, mut v: u64) -> Result {
    // SAFETY: the caller's guarantee; `v` is a local u64.
    to_result(unsafe { bindings::rdmavt_rs_ib_copy_to_udata(udata, (&raw mut v).cast(), 8) })
}

/// Counts a new CQ against the driver's `max_cq`.
fn count_new(dev: &Device) -> Result {
    let mut count = cq_count(dev);
    if *count == crate::device::limit(dev.dparms().props.max_cq) {
        return Err(ENOMEM);
    }
    *count += 1;
    Ok(())
}

/// The CPU completion callbacks of this vector run on.
fn comp_vector_cpu(dev: &Device, vector: c_int) -> c_int {
    match dev.driver().comp_vect_cpu_lookup(vector) {
        Some(cpu) => cpu,
        // SAFETY: a lookup in the topology tables.
        None => unsafe { bindings::rdmavt_rs_node_first_cpu(dev.dparms().node) },
    }
}

/// `create_cq`, for kernel consumers and (with a mapped ring) user space.
///
/// # Safety
///
/// Only ib_core calls this, through `RVT_DEV_OPS`, with live objects of one of our devices.
pub(crate) unsafe extern "C" fn create_cq(
    ibcq: *mut bindings::ib_cq,
    attr: *const bindings::ib_cq_init_attr,
    attrs: *mut bindings::uverbs_attr_bundle,
) -> c_int {
    // SAFETY: ib_core passes a new CQ of one of our devices (allocated with `size_ib_cq`, so
    // the head of an `rvt_cq`), valid attributes, and a bundle or NULL.
    let (dev, attr, udata) = unsafe {
        (
            Device::from_ib((*ibcq).device),
            &*attr,
            Udata::from_raw(bindings::rdmavt_rs_bundle_udata(attrs)),
        )
    };
    match create(dev, ibcq.cast(), attr, udata) {
        Ok(()) => 0,
        Err(e) => e.to_errno(),
    }
}

fn create(
    dev: &Device,
    cq: *mut bindings::rvt_cq,
    attr: &bindings::ib_cq_init_attr,
    udata: Udata,
) -> Result {
    if attr.flags != 0 {
        return Err(crate::compat::eopnotsupp());
    }
    let entries = attr.cqe;
    if entries < 1 || entries > crate::device::limit(dev.dparms().props.max_cqe) {
        return Err(EINVAL);
    }
    // SAFETY: `ibdev` of a registered device; num_comp_vectors is at least 1 (registration).
    let vectors = unsafe { (*dev.ibdev()).num_comp_vectors };
    // As in C, the vector is taken as an int, negative ones meaning 0.
    let vector = (attr.comp_vector as c_int).max(0) % vectors.max(1);

    let user = udata.wants_offset();
    let (ring, size) = Ring::alloc(entries, user, dev.dparms().node)?;
    let info = if user {
        let info = MmapInfo::new(dev, size, udata, ring.as_ptr()).inspect_err(|_| {
            // SAFETY: nothing else has seen the ring.
            unsafe { ring.free() };
        })?;
        // From here the info owns the ring: dropping its only reference frees both.
        udata.reply_offset(info.offset())?;
        Some(info)
    } else {
        None
    };
    if let Err(e) = count_new(dev) {
        match info {
            // Dropping the info's only reference frees it and the ring.
            Some(info) => drop(info),
            // SAFETY: nothing else has seen the ring.
            None => unsafe { ring.free() },
        }
        return Err(e);
    }
    if let Some(info) = &info {
        info.add_pending(dev);
    }
    // SAFETY: the CQ is new and ours until we return; its work item and lock are set up
    // before ib_core can hand it to anyone.
    unsafe {
        (*cq).rdi = dev.as_raw();
        (*cq).comp_vector_cpu = comp_vector_cpu(dev, vector);
        (*cq).ibcq.cqe = entries as c_int;
        (*cq).notify = enter::NOTIFY_NONE;
        crate::lock::spin_lock_init!(&raw mut (*cq).lock, c"&cq->lock");
        bindings::rdmavt_rs_init_work(&raw mut (*cq).comptask, Some(enter::send_complete));
        match ring {
            Ring::User(u) => (*cq).queue = u,
            Ring::Kernel(k) => (*cq).kqueue = k,
        }
        (*cq).ip = info.map_or(core::ptr::null_mut(), MmapInfo::into_raw);
    }
    // SAFETY: the CQ is set up, `rdi` included; `attr` is ib_core's.
    unsafe { trace::rvt_create_cq(cq, attr) };
    Ok(())
}

/// `destroy_cq`: waits for a running callback, then frees the ring (or drops the CQ's
/// reference on the mapped ring, which lives on while user space still maps it).
///
/// # Safety
///
/// Only ib_core calls this, through `RVT_DEV_OPS`, with live objects of one of our devices.
pub(crate) unsafe extern "C" fn destroy_cq(
    ibcq: *mut bindings::ib_cq,
    _udata: *mut bindings::ib_udata,
) -> c_int {
    let cq = ibcq.cast::<bindings::rvt_cq>();
    // SAFETY: ib_core destroys a live CQ of ours once nothing uses it any more.
    unsafe {
        bindings::flush_work(&raw mut (*cq).comptask);
        *cq_count(Device::from_raw((*cq).rdi)) -= 1;
        if (*cq).ip.is_null() {
            Ring::Kernel((*cq).kqueue).free();
        } else {
            drop(MmapInfo::from_raw((*cq).ip));
        }
    }
    0
}

/// `req_notify_cq`: arms the next (or next solicited) completion; with
/// IB_CQ_REPORT_MISSED_EVENTS, returns 1 if completions are already waiting.
///
/// # Safety
///
/// Only ib_core calls this, through `RVT_DEV_OPS`, with live objects of one of our devices.
pub(crate) unsafe extern "C" fn req_notify_cq(
    ibcq: *mut bindings::ib_cq,
    flags: bindings::ib_cq_notify_flags,
) -> c_int {
    // SAFETY: ib_core passes a live CQ of ours.
    let cq = unsafe { Cq::from_ib(ibcq) };
    let mut guard = cq.lock();
    // An armed "next completion" is never weakened to "next solicited".
    if guard.notify() != NEXT_COMP {
        guard.set_notify((flags.0 & SOLICITED_MASK) as u8);
    }
    if flags.0 & REPORT_MISSED_EVENTS == 0 {
        return 0;
    }
    let ring = guard.ring();
    // SAFETY: live ring, lock held.
    unsafe { c_int::from(ring.head() != ring.tail()) }
}

/// `poll_cq`, for kernel CQs only: user space polls its mapped ring itself.
///
/// # Safety
///
/// Only ib_core calls this, through `RVT_DEV_OPS`, with live objects of one of our devices.
pub(crate) unsafe extern "C" fn poll_cq(
    ibcq: *mut bindings::ib_cq,
    num_entries: c_int,
    entry: *mut bindings::ib_wc,
) -> c_int {
    // SAFETY: ib_core passes a live CQ of ours and room for `num_entries` completions.
    let cq = unsafe { Cq::from_ib(ibcq) };
    let guard = cq.lock();
    let Ring::Kernel(k) = guard.ring() else {
        return EINVAL.to_errno();
    };
    let last = guard.last_slot();
    // SAFETY: live kernel ring; the lock is held.
    let (head, mut tail) = unsafe { ((*k).head, (*k).tail.min(last)) };
    let mut polled = 0;
    while polled < num_entries && tail != head {
        // SAFETY: `tail <= last` is within the ring and `cq` is live. The event reads the
        // entry's QP, as C's does: a kernel consumer polls the completions of its own QPs,
        // which it destroys only once it is done with them.
        unsafe { trace::rvt_cq_poll(cq.as_raw(), Ring::kernel_slot(k, tail), polled as u32) };
        // SAFETY: `tail <= last` is within the ring; `entry` has room (ib_core's).
        unsafe { *entry.add(polled as usize) = Ring::read_kernel(k, tail) };
        tail = if tail >= last { 0 } else { tail + 1 };
        polled += 1;
    }
    // SAFETY: as above.
    unsafe { (*k).tail = tail };
    polled
}

/// `resize_user_cq`: moves the waiting completions into a ring for `cqe` entries.
///
/// # Safety
///
/// Only ib_core calls this, through `RVT_DEV_OPS`, with live objects of one of our devices.
pub(crate) unsafe extern "C" fn resize_cq(
    ibcq: *mut bindings::ib_cq,
    cqe: c_uint,
    udata: *mut bindings::ib_udata,
) -> c_int {
    // SAFETY: ib_core passes a live CQ of ours; resizes of one CQ are serialised by ib_core.
    let (cq, dev) = unsafe {
        (
            Cq::from_ib(ibcq),
            Device::from_raw((*ibcq.cast::<bindings::rvt_cq>()).rdi),
        )
    };
    // SAFETY: ib_core passes NULL or the call's valid udata.
    match resize(cq, dev, cqe, unsafe { Udata::from_raw(udata) }) {
        Ok(()) => 0,
        Err(e) => e.to_errno(),
    }
}

/// `resize_cq` on 6.12, whose count is signed: as [`resize_cq`].
///
/// # Safety
///
/// As [`resize_cq`].
#[cfg(rdmavt_kernel_6_12)]
pub(crate) unsafe extern "C" fn resize_cq_signed(
    ibcq: *mut bindings::ib_cq,
    cqe: c_int,
    udata: *mut bindings::ib_udata,
) -> c_int {
    // A negative count is out of range as a huge one is: -EINVAL, as C.
    let cqe = c_uint::try_from(cqe).unwrap_or(c_uint::MAX);
    // SAFETY: the caller's guarantee.
    unsafe { resize_cq(ibcq, cqe, udata) }
}

fn resize(cq: &Cq, dev: &Device, cqe: u32, udata: Udata) -> Result {
    if cqe > crate::device::limit(dev.dparms().props.max_cqe) {
        return Err(EINVAL);
    }
    // The ring keeps the kind it was created with: mapped when the CQ has mmap info. A reply
    // with no room for a new ring's offset cannot serve a mapped CQ, and a CQ created without
    // that room has no mapping to move. (C picks the kind from the reply and dereferences the
    // other kind's NULL ring when they differ.)
    // SAFETY: `ip` is set at creation and never changes.
    let user = unsafe { !(*cq.as_raw()).ip.is_null() };
    if user != udata.wants_offset() {
        return Err(EINVAL);
    }
    let (ring, size) = Ring::alloc(cqe, user, dev.dparms().node)?;
    // Check that the reply can be written before anything changes.
    if user {
        // SAFETY: `udata` is valid with room for a u64 (`wants_offset`).
        if let Err(e) = unsafe { respond_u64(udata.as_raw(), 0) } {
            // SAFETY: nothing else has seen the new ring.
            unsafe { ring.free() };
            return Err(e);
        }
    }
    let old = match move_entries(cq, ring, cqe) {
        Ok(old) => old,
        Err(e) => {
            // SAFETY: the new ring was not installed.
            unsafe { ring.free() };
            return Err(e);
        }
    };
    let ip = cq.as_raw();
    // SAFETY: `ip` is set at creation and never changes; resizes are serialised.
    let info = unsafe { (*ip).ip };
    if info.is_null() {
        // SAFETY: the old kernel ring is no longer installed and only the CQ used it.
        unsafe { old.free() };
        return Ok(());
    }
    // SAFETY: the old ring is no longer installed; a VMA that still maps it holds its own
    // references on the pages (remap_vmalloc_range), so they outlive the vfree.
    unsafe { old.free() };
    // SAFETY: `info` is the CQ's own reference, borrowed here and given back below.
    let mut info = unsafe { MmapInfo::from_raw(info) };
    info.update(dev, size, ring.as_ptr());
    let replied = udata.reply_offset(info.offset());
    info.add_pending(dev);
    let _ = info.into_raw();
    replied
}

/// Under the CQ's lock, copies the waiting completions to `new` and installs it; returns the
/// old ring. EINVAL if more are waiting than `cqe` holds.
fn move_entries(cq: &Cq, new: Ring, cqe: u32) -> Result<Ring> {
    let guard = cq.lock();
    let old = guard.ring();
    let last = guard.last_slot();
    // SAFETY: live ring, lock held; user-written indices are clamped into the ring.
    let (head, mut tail) = unsafe { (old.head().min(last), old.tail().min(last)) };
    let waiting = if head < tail {
        last + 1 + head - tail
    } else {
        head - tail
    };
    if cqe < waiting {
        return Err(EINVAL);
    }
    let mut n = 0;
    while tail != head {
        // SAFETY: `tail <= last` is in the old ring, `n < waiting <= cqe` in the new one.
        unsafe { new.copy_slot(n, old, tail) };
        tail = if tail == last { 0 } else { tail + 1 };
        n += 1;
    }
    let raw = cq.as_raw();
    // SAFETY: the lock is held; the new ring has `cqe + 1` slots.
    unsafe {
        (*raw).ibcq.cqe = cqe as c_int;
        new.set(n, Some(0));
        match new {
            Ring::User(u) => (*raw).queue = u,
            Ring::Kernel(k) => (*raw).kqueue = k,
        }
    }
    Ok(old)
}
