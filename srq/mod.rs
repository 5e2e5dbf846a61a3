// SPDX-License-Identifier: GPL-2.0-only

//! Shared receive queues: `struct rvt_srq`, a receive queue (see [`crate::krwq`]) that many
//! QPs take their receive WQEs from, with a limit that raises IB_EVENT_SRQ_LIMIT_REACHED
//! when the queue runs low. A user SRQ's ring is mmap'd, as a QP's.

mod modify;

pub(crate) use modify::modify_srq;

use kernel::{ffi::c_int, prelude::*, types::Opaque};

use crate::compat::lock::SpinLockBackend;

use crate::{
    bindings,
    device::Device,
    krwq::{self, Rq},
    lock::{lock_raw, spin_lock_init},
    mmap::{MmapInfo, Udata},
};

/// An SRQ of one of our devices.
///
/// # Invariants
///
/// Wraps an `rvt_srq` that ib_core allocated (`size_ib_srq`) and that lives while the
/// reference to this wrapper does; once `create_srq` succeeded, its queue is set up.
#[repr(transparent)]
pub(crate) struct Srq(Opaque<bindings::rvt_srq>);

impl Srq {
    /// # Safety
    ///
    /// `ibsrq` is the `ibsrq` head of an `rvt_srq` of ours, alive for `'a`.
    unsafe fn from_ib<'a>(ibsrq: *mut bindings::ib_srq) -> &'a Self {
        // SAFETY: `ibsrq` is the first member of `rvt_srq` (checked in device/ops.rs); the
        // caller guarantees the rest.
        unsafe { &*ibsrq.cast() }
    }

    fn as_raw(&self) -> *mut bindings::rvt_srq {
        self.0.get()
    }

    fn device(&self) -> &Device {
        // SAFETY: ib_core sets `device` before calling any verb; devices outlive their SRQs.
        unsafe { Device::from_ib((*self.as_raw()).ibsrq.device) }
    }

    /// The SRQ's receive queue (only valid once `create_srq` set it up).
    fn rq(&self) -> Rq<'_> {
        // SAFETY: called only on SRQs that `create` set up (queue and `rq.lock`).
        unsafe { Rq::of_srq(self.as_raw()) }
    }

    /// The armed limit, read without `c_lock` (which protects its writes), as C does in
    /// `query_srq` and in `modify_srq`'s first check.
    fn limit_snapshot(&self) -> u32 {
        // SAFETY: a live SRQ; an aligned u32 read once, so a racing write cannot tear it.
        unsafe { core::ptr::read_volatile(&raw const (*self.as_raw()).limit) }
    }

    fn raw_rq(&self) -> *mut bindings::rvt_rq {
        // SAFETY: only the field's address is taken.
        unsafe { &raw mut (*self.as_raw()).rq }
    }

    /// The mmap info of a user ring, as a handle to give back with `into_raw`.
    fn mmap_info(&self) -> Option<MmapInfo> {
        // SAFETY: `ip` is set during creation only (its object changes under `modify`).
        let ip = unsafe { (*self.as_raw()).ip };
        // SAFETY: `ip` came from `MmapInfo::into_raw`; the caller gives it back.
        (!ip.is_null()).then(|| unsafe { MmapInfo::from_raw(ip) })
    }
}

/// `ib_device_ops.create_srq`: C's `rvt_create_srq()`.
///
/// # Safety
///
/// Only ib_core calls this, through `RVT_DEV_OPS`, with a zeroed SRQ of one of our devices,
/// valid attributes, and `udata` NULL (kernel caller) or valid.
pub(crate) unsafe extern "C" fn create_srq(
    ibsrq: *mut bindings::ib_srq,
    init: *mut bindings::ib_srq_init_attr,
    udata: *mut bindings::ib_udata,
) -> c_int {
    // SAFETY: ib_core's new SRQ, valid attributes, and NULL or the call's valid udata.
    let (srq, init, udata) = unsafe { (Srq::from_ib(ibsrq), &*init, Udata::from_raw(udata)) };
    match srq.create(init, udata) {
        Ok(()) => 0,
        Err(e) => e.to_errno(),
    }
}

impl Srq {
    fn create(&self, init: &bindings::ib_srq_init_attr, udata: Udata) -> Result {
        let dev = self.device();
        let props = &dev.dparms().props;
        if init.srq_type != bindings::ib_srq_type_IB_SRQT_BASIC {
            return Err(crate::compat::eopnotsupp());
        }
        let attr = &init.attr;
        if attr.max_sge == 0
            || attr.max_sge > crate::device::limit(props.max_srq_sge)
            || attr.max_wr == 0
            || attr.max_wr > crate::device::limit(props.max_srq_wr)
        {
            return Err(EINVAL);
        }
        let rq = self.raw_rq();
        // SAFETY: `rq` is the zeroed queue of a new SRQ, ours alone; `max_sge` is within the
        // device's limit (checked above).
        unsafe {
            krwq::alloc_sized(
                rq,
                attr.max_wr + 1,
                attr.max_sge,
                dev.dparms().node,
                udata.is_user(),
            )
        }?;
        let res = self.finish_create(dev, attr, udata);
        if res.is_err() {
            // SAFETY: the SRQ never became visible; the info (if any) was dropped.
            unsafe { krwq::free(rq) };
        }
        res
    }

    /// The steps after the queue exists: the mmap reply, the lock, the limit, the count.
    fn finish_create(&self, dev: &Device, attr: &bindings::ib_srq_attr, udata: Udata) -> Result {
        let srq = self.as_raw();
        let info = self.reply(dev, udata)?;
        // SAFETY: the SRQ is ours alone during creation.
        unsafe {
            spin_lock_init!(&raw mut (*srq).rq.lock, c"&srq->rq.lock");
            (*srq).limit = attr.srq_limit;
        }
        if let Err(e) = count_new(dev) {
            // The info owns the ring: dropping it frees the ring, so the queue must forget it.
            if info.is_some() {
                // SAFETY: as above.
                unsafe { (*srq).rq.wq = core::ptr::null_mut() };
            }
            return Err(e);
        }
        if let Some(info) = info {
            info.add_pending(dev);
            // SAFETY: as above.
            unsafe { (*srq).ip = info.into_raw() };
        }
        Ok(())
    }

    /// For user space with room for the answer: the mmap info of the ring and its offset
    /// written back. On failure the ring is left to the caller to free.
    fn reply(&self, dev: &Device, user: Udata) -> Result<Option<MmapInfo>> {
        let rq = self.raw_rq();
        // SAFETY: the SRQ's queue, set up by `krwq::alloc_sized`, ours alone during creation.
        let ring = unsafe { krwq::user_ring(rq) };
        let Some((ring, bytes)) = ring.filter(|_| user.wants_offset()) else {
            return Ok(None);
        };
        let info = MmapInfo::new(dev, u32::try_from(bytes).map_err(|_| ENOMEM)?, user, ring)?;
        if let Err(e) = user.reply_offset(info.offset()) {
            // SAFETY: as above: dropping `info` frees the ring, which the queue then forgets.
            unsafe { krwq::forget_user_ring(rq) };
            drop(info);
            return Err(e);
        }
        Ok(Some(info))
    }
}

/// Counts a new SRQ against the driver's `max_srq` (ENOMEM at the limit, as C).
fn count_new(dev: &Device) -> Result {
    let rdi = dev.as_raw();
    // SAFETY: `n_srqs_lock` is initialised at registration and protects the count.
    let _guard = unsafe { lock_raw::<SpinLockBackend>(&raw mut (*rdi).n_srqs_lock) };
    // SAFETY: protected by `n_srqs_lock`, held.
    unsafe {
        if (*rdi).n_srqs_allocated == crate::device::limit(dev.dparms().props.max_srq) {
            return Err(ENOMEM);
        }
        (*rdi).n_srqs_allocated += 1;
    }
    Ok(())
}

/// `ib_device_ops.query_srq`: `max_wr`, `max_sge` and the armed limit. Always 0.
///
/// # Safety
///
/// Only ib_core calls this, through `RVT_DEV_OPS`, with a live SRQ of ours and a valid
/// `attr`.
pub(crate) unsafe extern "C" fn query_srq(
    ibsrq: *mut bindings::ib_srq,
    attr: *mut bindings::ib_srq_attr,
) -> c_int {
    // SAFETY: ib_core's live SRQ and valid, exclusive output.
    let (srq, attr) = unsafe { (Srq::from_ib(ibsrq), &mut *attr) };
    // As in C, a snapshot without the lock: a concurrent modify may be half-visible.
    let rq = srq.rq();
    attr.max_wr = rq.size() - 1;
    attr.max_sge = u32::from(rq.max_sge());
    attr.srq_limit = srq.limit_snapshot();
    0
}

/// `ib_device_ops.destroy_srq`: uncounts the SRQ and frees its ring (a user ring once its
/// last mapping is gone too). Always 0. ib_core destroys an SRQ only when no QP uses it.
///
/// # Safety
///
/// Only ib_core calls this, through `RVT_DEV_OPS`, with a live SRQ of ours, once.
pub(crate) unsafe extern "C" fn destroy_srq(
    ibsrq: *mut bindings::ib_srq,
    _udata: *mut bindings::ib_udata,
) -> c_int {
    // SAFETY: ib_core's live SRQ.
    let srq = unsafe { Srq::from_ib(ibsrq) };
    let dev = srq.device();
    let rdi = dev.as_raw();
    {
        // SAFETY: `n_srqs_lock` is initialised at registration and protects the count.
        let _guard = unsafe { lock_raw::<SpinLockBackend>(&raw mut (*rdi).n_srqs_lock) };
        // SAFETY: protected by `n_srqs_lock`, held.
        unsafe { (*rdi).n_srqs_allocated -= 1 };
    }
    // SAFETY: nothing uses the SRQ any more (ib_core's guarantee). The info owns a mapped
    // ring: the queue forgets it, and the info's last reference frees it. A user ring never
    // mapped (no reply room) is freed with the queue; C leaks it.
    unsafe {
        if let Some(info) = srq.mmap_info() {
            (*srq.as_raw()).ip = core::ptr::null_mut();
            (*srq.as_raw()).rq.wq = core::ptr::null_mut();
            drop(info);
        }
        krwq::free(srq.raw_rq());
    }
    0
}

/// `ib_device_ops.post_srq_recv`: C's `rvt_post_srq_recv()` (EINVAL for too many SGEs,
/// ENOMEM when full, `*bad_wr` naming the WR).
///
/// # Safety
///
/// Only ib_core calls this, through `RVT_DEV_OPS`, with a live SRQ of ours, a valid chain of
/// WRs and a valid `bad_wr`.
pub(crate) unsafe extern "C" fn post_srq_recv(
    ibsrq: *mut bindings::ib_srq,
    wr: *const bindings::ib_recv_wr,
    bad_wr: *mut *const bindings::ib_recv_wr,
) -> c_int {
    // SAFETY: ib_core's live SRQ.
    let srq = unsafe { Srq::from_ib(ibsrq) };
    // SAFETY: ib_core's valid WR chain.
    let res = unsafe { krwq::post(srq.rq(), wr, None) };
    // SAFETY: ib_core's valid out-pointer.
    unsafe { krwq::post_result(res, bad_wr) }
}
