// SPDX-License-Identifier: GPL-2.0-only

//! mmap of rdmavt objects into user space.
//!
//! Offsets below [`OFFSET_START`] (the first 256 pages) belong to the driver and go to its
//! `mmap` callback; above, each user CQ, QP or SRQ ring gets its own page-sized offset when it
//! is created, and the ring is mapped at that offset.

use kernel::{
    ffi::c_int,
    page::{PAGE_SHIFT, PAGE_SIZE},
};

use crate::{bindings, device::Device, lock::spin_lock_init};

mod info;
mod udata;
pub(crate) use info::MmapInfo;
pub(crate) use udata::Udata;

/// Pages reserved for the driver's own mmaps.
const RESERVED_PAGES: usize = 256;
/// The first offset rdmavt hands out for its objects.
pub(crate) const OFFSET_START: usize = RESERVED_PAGES * PAGE_SIZE;

/// Sets up the device's list of objects waiting to be mmap'ed.
///
/// # Safety
///
/// The device is not yet registered: nothing else touches these fields.
pub(crate) unsafe fn init_device(dev: &Device) {
    let rdi = dev.as_raw();
    // SAFETY: unregistered device (caller's guarantee): the fields are ours alone.
    unsafe {
        bindings::rdmavt_rs_init_list_head(&raw mut (*rdi).pending_mmaps);
        spin_lock_init!(&raw mut (*rdi).pending_lock, c"&rdi->pending_lock");
        (*rdi).mmap_offset = OFFSET_START as u32;
        spin_lock_init!(&raw mut (*rdi).mmap_offset_lock, c"&rdi->mmap_offset_lock");
    }
}

/// The `mmap` verb.
///
/// # Safety
///
/// Called by ib_core with a live user context of one of our devices and its VMA.
pub(crate) unsafe extern "C" fn mmap(
    context: *mut bindings::ib_ucontext,
    vma: *mut bindings::vm_area_struct,
) -> c_int {
    // SAFETY: ib_core passes a live context whose device is ours.
    let dev = unsafe { Device::from_ib((*context).device) };
    // SAFETY: ib_core passes a live VMA for the duration of the call.
    let offset = unsafe { (*vma).vm_pgoff } << PAGE_SHIFT;
    if offset < OFFSET_START {
        // SAFETY: ib_core's objects, as this verb got them.
        return unsafe { dev.driver().mmap(context, vma) };
    }
    // SAFETY: as above.
    let size = unsafe {
        let range = &(*vma).__bindgen_anon_1.__bindgen_anon_1;
        range.vm_end - range.vm_start
    };
    // SAFETY: `context` and `vma` are ib_core's, live for the call.
    match unsafe { info::map_pending(dev, context, offset as u64, size as u64, vma) } {
        Ok(()) => 0,
        Err(e) => e.to_errno(),
    }
}
