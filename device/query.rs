// SPDX-License-Identifier: GPL-2.0-only

//! Device and port verbs: what ib_core asks of a device about itself, answered from the
//! driver's parameters and ports, or passed down to the driver where only it knows.

use kernel::{
    error::{from_result, to_result},
    ffi::c_int,
    prelude::*,
};

use super::Device;
use crate::bindings;

/// Largest message rdmavt moves: 2 GiB, as in C.
const MAX_MSG_SZ: u32 = 0x8000_0000;

/// `query_device`: the driver's `dparms.props`, with no private user data either way.
///
/// # Safety
///
/// Only ib_core calls this, through `RVT_DEV_OPS`, with live objects of one of our devices.
pub(crate) unsafe extern "C" fn query_device(
    ibdev: *mut bindings::ib_device,
    props: *mut bindings::ib_device_attr,
    uhw: *mut bindings::ib_udata,
) -> c_int {
    // SAFETY: ib_core calls this on one of our live devices with valid `props` and `uhw`.
    unsafe {
        let err = bindings::rdmavt_rs_ib_no_udata_io(uhw);
        if err != 0 {
            return err;
        }
        *props = Device::from_ib(ibdev).dparms().props;
    }
    0
}

/// `get_numa_node`: where the driver said the device lives.
///
/// # Safety
///
/// Only ib_core calls this, through `RVT_DEV_OPS`, with live objects of one of our devices.
pub(crate) unsafe extern "C" fn get_numa_node(ibdev: *mut bindings::ib_device) -> c_int {
    // SAFETY: ib_core calls this on one of our live devices.
    unsafe { Device::from_ib(ibdev) }.dparms().node
}

/// `modify_device`: hfi1 and qib bring their own; rdmavt has nothing to change.
///
/// # Safety
///
/// Only ib_core calls this, through `RVT_DEV_OPS`, with live objects of one of our devices.
pub(crate) unsafe extern "C" fn modify_device(
    _ibdev: *mut bindings::ib_device,
    _mask: c_int,
    _modify: *mut bindings::ib_device_modify,
) -> c_int {
    crate::compat::eopnotsupp().to_errno()
}

/// `query_port`: what rdmavt keeps of the port, then the driver fills in the link state.
///
/// # Safety
///
/// Only ib_core calls this, through `RVT_DEV_OPS`, with live objects of one of our devices.
pub(crate) unsafe extern "C" fn query_port(
    ibdev: *mut bindings::ib_device,
    port_num: u32,
    props: *mut bindings::ib_port_attr,
) -> c_int {
    from_result(|| {
        // SAFETY: ib_core calls this on one of our live devices, with a valid port number.
        let dev = unsafe { Device::from_ib(ibdev) };
        let rvp = dev.port(port_num)?.as_raw();
        // SAFETY: `props` is valid and zeroed by ib_core; the port lives as long as the device.
        // The counters are read without a lock, as C does: they are informational.
        unsafe {
            let p = &mut *props;
            p.sm_lid = (*rvp).sm_lid;
            p.sm_sl = (*rvp).sm_sl;
            p.port_cap_flags = (*rvp).port_cap_flags;
            p.max_msg_sz = MAX_MSG_SZ;
            p.pkey_tbl_len = dev.dparms().npkeys as u16;
            p.bad_pkey_cntr = (*rvp).pkey_violations.into();
            p.qkey_viol_cntr = (*rvp).qkey_violations.into();
            p.subnet_timeout = (*rvp).subnet_timeout;
            p.init_type_reply = 0;
        }
        // SAFETY: `props` is valid, as above, and no other reference to it is left.
        let props = unsafe { &mut *props };
        dev.driver().query_port_state(port_num, props)?;
        Ok(0)
    })
}

/// `modify_port`: capability bits kept by rdmavt; shutdown and traps are the driver's.
///
/// # Safety
///
/// Only ib_core calls this, through `RVT_DEV_OPS`, with live objects of one of our devices.
pub(crate) unsafe extern "C" fn modify_port(
    ibdev: *mut bindings::ib_device,
    port_num: u32,
    mask: c_int,
    props: *mut bindings::ib_port_modify,
) -> c_int {
    from_result(|| {
        // SAFETY: ib_core calls this on one of our live devices with valid `props`.
        let (dev, props) = unsafe { (Device::from_ib(ibdev), &*props) };
        let rvp = dev.port(port_num)?.as_raw();
        // SAFETY: the port lives as long as the device; ib_core serialises modify_port.
        unsafe {
            if mask & bindings::ib_port_modify_flags_IB_PORT_OPA_MASK_CHG as c_int != 0 {
                // The OPA capability mask 3 is 16 bits wide; the upper bits do not exist there.
                (*rvp).port_cap3_flags |= props.set_port_cap_mask as u16;
                (*rvp).port_cap3_flags &= !(props.clr_port_cap_mask as u16);
            } else {
                (*rvp).port_cap_flags |= props.set_port_cap_mask;
                (*rvp).port_cap_flags &= !props.clr_port_cap_mask;
            }
        }
        if props.set_port_cap_mask != 0 || props.clr_port_cap_mask != 0 {
            dev.driver().cap_mask_chg(port_num);
        }
        let mut ret = 0;
        if mask & bindings::ib_port_modify_flags_IB_PORT_SHUTDOWN as c_int != 0 {
            ret = dev.driver().shut_down_port(port_num);
        }
        if mask & bindings::ib_port_modify_flags_IB_PORT_RESET_QKEY_CNTR as c_int != 0 {
            // SAFETY: as above.
            unsafe { (*rvp).qkey_violations = 0 };
        }
        Ok(ret)
    })
}

/// `query_pkey`: the driver keeps the P_Key table current; a stale read is harmless.
///
/// # Safety
///
/// Only ib_core calls this, through `RVT_DEV_OPS`, with live objects of one of our devices.
pub(crate) unsafe extern "C" fn query_pkey(
    ibdev: *mut bindings::ib_device,
    port_num: u32,
    index: u16,
    pkey: *mut u16,
) -> c_int {
    from_result(|| {
        // SAFETY: ib_core calls this on one of our live devices.
        let dev = unsafe { Device::from_ib(ibdev) };
        if u32::from(index) >= dev.dparms().npkeys as u32 {
            return Err(EINVAL);
        }
        let rvp = dev.port(port_num)?.as_raw();
        // SAFETY: the driver's table has `npkeys` entries (rvt_init_port) and `index` is
        // below that; `pkey` is valid for writes.
        unsafe { *pkey = *(*rvp).pkey_table.add(usize::from(index)) };
        Ok(0)
    })
}

/// `query_gid`: the subnet prefix kept by rdmavt, the interface id from the driver.
///
/// # Safety
///
/// Only ib_core calls this, through `RVT_DEV_OPS`, with live objects of one of our devices.
pub(crate) unsafe extern "C" fn query_gid(
    ibdev: *mut bindings::ib_device,
    port_num: u32,
    index: c_int,
    gid: *mut bindings::ib_gid,
) -> c_int {
    from_result(|| {
        // SAFETY: ib_core calls this on one of our live devices with a valid `gid`.
        let dev = unsafe { Device::from_ib(ibdev) };
        let port = dev.port(port_num)?;
        // SAFETY: `gid` is valid for writes, and ours for the call; the port lives as long as
        // the device.
        let global = unsafe {
            let global = &mut (*gid).global;
            global.subnet_prefix = (*port.as_raw()).gid_prefix;
            global
        };
        dev.driver()
            .get_guid_be(port, index, &mut global.interface_id)?;
        Ok(0)
    })
}

/// `get_port_immutable`: the port's fixed attributes, from the driver and `query_port`.
///
/// # Safety
///
/// Only ib_core calls this, through `RVT_DEV_OPS`, with live objects of one of our devices.
pub(crate) unsafe extern "C" fn get_port_immutable(
    ibdev: *mut bindings::ib_device,
    port_num: u32,
    immutable: *mut bindings::ib_port_immutable,
) -> c_int {
    from_result(|| {
        // SAFETY: ib_core calls this on one of our live devices with a valid `immutable`.
        let (dev, immutable) = unsafe { (Device::from_ib(ibdev), &mut *immutable) };
        immutable.core_cap_flags = dev.dparms().core_cap_flags;
        let mut attr = bindings::ib_port_attr::default();
        // SAFETY: `attr` is a valid, zeroed ib_port_attr, as ib_query_port expects.
        to_result(unsafe { bindings::ib_query_port(ibdev, port_num, &mut attr) })?;
        immutable.pkey_tbl_len = attr.pkey_tbl_len.into();
        immutable.gid_tbl_len = attr.gid_tbl_len;
        immutable.max_mad_size = dev.dparms().max_mad_size;
        Ok(0)
    })
}

/// `alloc_ucontext`: nothing of rdmavt's own; the driver may want to know.
///
/// # Safety
///
/// Only ib_core calls this, through `RVT_DEV_OPS`, with live objects of one of our devices.
pub(crate) unsafe extern "C" fn alloc_ucontext(
    uctx: *mut bindings::ib_ucontext,
    udata: *mut bindings::ib_udata,
) -> c_int {
    // SAFETY: ib_core passes a live context of one of our devices.
    let dev = unsafe { Device::from_ib((*uctx).device) };
    // SAFETY: ib_core's objects, as this verb got them.
    unsafe { dev.driver().alloc_ucontext(uctx, udata) }
}

/// `dealloc_ucontext`: the driver's, if it has one.
///
/// # Safety
///
/// Only ib_core calls this, through `RVT_DEV_OPS`, with live objects of one of our devices.
pub(crate) unsafe extern "C" fn dealloc_ucontext(uctx: *mut bindings::ib_ucontext) {
    // SAFETY: ib_core passes a live context of one of our devices.
    let dev = unsafe { Device::from_ib((*uctx).device) };
    // SAFETY: ib_core's context, as this verb got it.
    unsafe { dev.driver().dealloc_ucontext(uctx) };
}
