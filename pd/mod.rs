// SPDX-License-Identifier: GPL-2.0-only

//! Protection domains: `struct rvt_pd`, counted against the driver's `max_pd`.

use kernel::{ffi::c_int, prelude::*};

use crate::{bindings, device::Device, lock::Guarded};

/// The device's count of allocated PDs, under `n_pds_lock`.
fn pd_count(dev: &Device) -> Guarded<'_, c_int> {
    let rdi = dev.as_raw();
    // SAFETY: `n_pds_lock` is initialised at registration and protects `n_pds_allocated`;
    // both live as long as the device.
    unsafe { Guarded::lock(&raw mut (*rdi).n_pds_lock, &raw mut (*rdi).n_pds_allocated) }
}

/// `alloc_pd`: fails with ENOMEM at the driver's limit, as the IBTA's `max_pd` demands.
///
/// # Safety
///
/// Only ib_core calls this, through `RVT_DEV_OPS`, with live objects of one of our devices.
pub(crate) unsafe extern "C" fn alloc_pd(
    ibpd: *mut bindings::ib_pd,
    udata: *mut bindings::ib_udata,
) -> c_int {
    // SAFETY: ib_core passes a PD of one of our devices, allocated with `size_ib_pd`, so it is
    // the head of an `rvt_pd`.
    let (dev, pd) = unsafe {
        (
            Device::from_ib((*ibpd).device),
            ibpd.cast::<bindings::rvt_pd>(),
        )
    };
    {
        let mut count = pd_count(dev);
        // As in C, the signed count compares as unsigned with the limit.
        if *count as u32 == crate::device::limit(dev.dparms().props.max_pd) {
            return ENOMEM.to_errno();
        }
        *count += 1;
    }
    // SAFETY: the PD is new and ours alone until we return.
    unsafe { (*pd).user = !udata.is_null() };
    0
}

/// `dealloc_pd`.
///
/// # Safety
///
/// Only ib_core calls this, through `RVT_DEV_OPS`, with live objects of one of our devices.
pub(crate) unsafe extern "C" fn dealloc_pd(
    ibpd: *mut bindings::ib_pd,
    _udata: *mut bindings::ib_udata,
) -> c_int {
    // SAFETY: ib_core passes a live PD of one of our devices.
    let dev = unsafe { Device::from_ib((*ibpd).device) };
    *pd_count(dev) -= 1;
    0
}
