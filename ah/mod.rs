// SPDX-License-Identifier: GPL-2.0-only

//! Address handles: `struct rvt_ah`, validated by rdmavt and then by the driver.

use kernel::{ffi::c_int, prelude::*};

use crate::compat::lock::SpinLockIrqBackend;

use crate::{bindings, device::Device, lock::Guarded, macros::c_export};

/// The device's count of allocated AHs, under `n_ahs_lock`. AHs are destroyed from atomic
/// context (RDMA_DESTROY_AH_SLEEPABLE unset), so the lock is taken with interrupts off, as C.
fn ah_count(dev: &Device) -> Guarded<'_, c_int, SpinLockIrqBackend> {
    let rdi = dev.as_raw();
    // SAFETY: `n_ahs_lock` is initialised at registration and protects `n_ahs_allocated`;
    // both live as long as the device.
    unsafe { Guarded::lock(&raw mut (*rdi).n_ahs_lock, &raw mut (*rdi).n_ahs_allocated) }
}

/// `rdma_ah_get_dlid()`: the destination LID of an IB or OPA address, 0 for any other
/// type.
pub(crate) fn dlid(ah: &bindings::rdma_ah_attr) -> u32 {
    // SAFETY: the union member read is the one `type_` says is in use.
    unsafe {
        match ah.type_ {
            bindings::rdma_ah_attr_type_RDMA_AH_ATTR_TYPE_IB => {
                u32::from(ah.__bindgen_anon_1.ib.dlid)
            }
            bindings::rdma_ah_attr_type_RDMA_AH_ATTR_TYPE_OPA => ah.__bindgen_anon_1.opa.dlid,
            _ => 0,
        }
    }
}

/// Validates address handle attributes: a port that exists and answers `query_port`, a
/// static rate ib_core knows, a GID index within the port's table, then the driver's check.
pub(crate) fn check(ibdev: *mut bindings::ib_device, attr: &mut bindings::rdma_ah_attr) -> Result {
    let port_num = attr.port_num;
    let mut port_attr = bindings::ib_port_attr::default();
    // SAFETY: `ibdev` is one of our live devices; `port_attr` is a valid, zeroed output.
    if unsafe { bindings::ib_query_port(ibdev, port_num, &mut port_attr) } != 0 {
        return Err(EINVAL);
    }
    // SAFETY: as above.
    let phys_port_cnt = unsafe { (*ibdev).phys_port_cnt };
    if port_num < 1 || port_num > phys_port_cnt {
        return Err(EINVAL);
    }
    let rate = attr.static_rate;
    // SAFETY: ib_rate_to_mbps is a pure table lookup that takes any value.
    let known_rate = unsafe { bindings::ib_rate_to_mbps(rate.into()) } >= 0;
    if rate != bindings::ib_rate_IB_RATE_PORT_CURRENT as u8 && !known_rate {
        return Err(EINVAL);
    }
    if attr.ah_flags & bindings::ib_ah_flags_IB_AH_GRH as u8 != 0
        && u32::from(attr.grh.sgid_index) >= port_attr.gid_tbl_len as u32
    {
        return Err(EINVAL);
    }
    // SAFETY: `ibdev` is one of ours.
    let dev = unsafe { Device::from_ib(ibdev) };
    dev.driver().check_ah(attr)
}

/// Validates AH attributes for the driver: 0 or -EINVAL (or the driver's own error).
///
/// # Safety
///
/// `ibdev` is one of rdmavt's devices; `ah_attr` is valid.
#[no_mangle]
pub(crate) unsafe extern "C" fn rvt_check_ah(
    ibdev: *mut bindings::ib_device,
    ah_attr: *mut bindings::rdma_ah_attr,
) -> c_int {
    // SAFETY: the caller guarantees `ah_attr` is valid.
    match check(ibdev, unsafe { &mut *ah_attr }) {
        Ok(()) => 0,
        Err(e) => e.to_errno(),
    }
}
c_export!(rvt_check_ah);

/// `create_ah` and `create_user_ah`.
///
/// # Safety
///
/// Only ib_core calls this, through `RVT_DEV_OPS`, with live objects of one of our devices.
pub(crate) unsafe extern "C" fn create_ah(
    ibah: *mut bindings::ib_ah,
    init_attr: *mut bindings::rdma_ah_init_attr,
    _udata: *mut bindings::ib_udata,
) -> c_int {
    // SAFETY: ib_core passes an AH of one of our devices (allocated with `size_ib_ah`, so the
    // head of an `rvt_ah`) and valid attributes.
    let (ibdev, ah, attr) = unsafe {
        (
            (*ibah).device,
            ibah.cast::<bindings::rvt_ah>(),
            (*init_attr).ah_attr,
        )
    };
    // SAFETY: `attr` is valid for the call (ib_core's).
    if check(ibdev, unsafe { &mut *attr }).is_err() {
        return EINVAL.to_errno();
    }
    // SAFETY: `ibdev` is one of ours.
    let dev = unsafe { Device::from_ib(ibdev) };
    {
        let mut count = ah_count(dev);
        // As in C, the signed count compares as unsigned with the limit.
        if *count as u32 == crate::device::limit(dev.dparms().props.max_ah) {
            return ENOMEM.to_errno();
        }
        *count += 1;
    }
    // SAFETY: the AH is new and ours alone; `rdma_copy_ah_attr` takes its own references.
    unsafe { bindings::rdma_copy_ah_attr(&raw mut (*ah).attr, attr) };
    // SAFETY: ib_core's attributes, valid for the call; the AH is new and ours alone.
    let (attr, ah) = unsafe { (&mut *attr, &mut *ah) };
    dev.driver().notify_new_ah(attr, ah);
    0
}

/// `destroy_ah`.
///
/// # Safety
///
/// Only ib_core calls this, through `RVT_DEV_OPS`, with live objects of one of our devices.
pub(crate) unsafe extern "C" fn destroy_ah(ibah: *mut bindings::ib_ah, _flags: u32) -> c_int {
    // SAFETY: ib_core passes a live AH of one of our devices.
    let (dev, ah) = unsafe {
        (
            Device::from_ib((*ibah).device),
            ibah.cast::<bindings::rvt_ah>(),
        )
    };
    *ah_count(dev) -= 1;
    // SAFETY: the AH is being destroyed; its attribute references are released once.
    unsafe { bindings::rdma_destroy_ah_attr(&raw mut (*ah).attr) };
    0
}

/// `modify_ah`: new attributes, once they pass the same checks as at creation.
///
/// # Safety
///
/// Only ib_core calls this, through `RVT_DEV_OPS`, with live objects of one of our devices.
pub(crate) unsafe extern "C" fn modify_ah(
    ibah: *mut bindings::ib_ah,
    attr: *mut bindings::rdma_ah_attr,
) -> c_int {
    // SAFETY: ib_core passes a live AH of one of our devices and valid attributes.
    let (ibdev, ah, attr) =
        unsafe { ((*ibah).device, ibah.cast::<bindings::rvt_ah>(), &mut *attr) };
    if check(ibdev, attr).is_err() {
        return EINVAL.to_errno();
    }
    // SAFETY: as C: a plain copy (the caller keeps the attribute's references).
    unsafe { (*ah).attr = *attr };
    0
}

/// `query_ah`.
///
/// # Safety
///
/// Only ib_core calls this, through `RVT_DEV_OPS`, with live objects of one of our devices.
pub(crate) unsafe extern "C" fn query_ah(
    ibah: *mut bindings::ib_ah,
    attr: *mut bindings::rdma_ah_attr,
) -> c_int {
    // SAFETY: ib_core passes a live AH of one of our devices and a valid output.
    unsafe { *attr = (*ibah.cast::<bindings::rvt_ah>()).attr };
    0
}
