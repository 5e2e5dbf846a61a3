// SPDX-License-Identifier: GPL-2.0-only

//! `rvt_register_device`, `rvt_unregister_device` and `rvt_init_port`.

use kernel::{
    error::{from_result, to_result},
    ffi::c_int,
    prelude::*,
};

use super::{
    log::{rvt_err, rvt_info},
    Device,
};
use crate::{bindings, lock::spin_lock_init, macros::c_export, mad, mcast, mmap, mr, qp, trace};

/// The uverbs commands rdmavt serves through its ops; ib_core learns of them here because
/// they have no `ib_device_ops` entry of their own to be detected by.
const UVERBS_CMDS: u64 = (1 << bindings::ib_uverbs_write_cmds_IB_USER_VERBS_CMD_POLL_CQ)
    | (1 << bindings::ib_uverbs_write_cmds_IB_USER_VERBS_CMD_REQ_NOTIFY_CQ)
    | (1 << bindings::ib_uverbs_write_cmds_IB_USER_VERBS_CMD_POST_SEND)
    | (1 << bindings::ib_uverbs_write_cmds_IB_USER_VERBS_CMD_POST_RECV)
    | (1 << bindings::ib_uverbs_write_cmds_IB_USER_VERBS_CMD_POST_SRQ_RECV);

/// A verb whose support check failed; the numbers are C rdmavt's, printed in the same message
/// so logs read the same on both modules.
#[derive(Clone, Copy)]
#[repr(u8)]
enum Verb {
    Misc = 0,
    ModifyDevice = 2,
    QueryPort = 3,
    ModifyPort = 4,
    QueryGid = 6,
    CreateQp = 10,
    ModifyQp = 11,
    DestroyQp = 12,
    PostSend = 14,
}

/// Checks that the driver set up what rdmavt needs for each verb it serves for it: rdmavt's
/// implementation is skipped (ib_set_device_ops keeps the driver's own entry) when the driver
/// brings its own, otherwise the driver's callbacks must be there. Same rules as C's
/// `check_support()`; the one difference is that a driver's `get_pci_dev` may return NULL.
fn check_support(dev: &Device) -> core::result::Result<(), Verb> {
    // SAFETY: the driver filled in `ibdev.ops` before registering; nothing changes it now.
    let ops = unsafe { &(*dev.ibdev()).ops };
    let f = dev.driver();
    let need = |ok: bool, verb| if ok { Ok(()) } else { Err(verb) };
    let qp_common = f.has_notify_qp_reset()
        && f.has_flush_qp_waiters()
        && f.has_stop_send_queue()
        && f.has_quiesce_qp();

    need(
        !ops.port_groups.is_null() && f.has_get_pci_dev(),
        Verb::Misc,
    )?;
    // rdmavt has no modify_device of its own that does anything: drivers bring theirs.
    need(ops.modify_device.is_some(), Verb::ModifyDevice)?;
    need(
        ops.query_port.is_some() || f.has_query_port_state(),
        Verb::QueryPort,
    )?;
    need(
        ops.modify_port.is_some() || (f.has_cap_mask_chg() && f.has_shut_down_port()),
        Verb::ModifyPort,
    )?;
    need(
        ops.query_gid.is_some() || f.has_get_guid_be(),
        Verb::QueryGid,
    )?;
    need(
        ops.create_qp.is_some() || (f.has_qp_priv_alloc() && f.has_qp_priv_free() && qp_common),
        Verb::CreateQp,
    )?;
    need(
        ops.modify_qp.is_some()
            || (qp_common
                && f.has_schedule_send()
                && f.has_get_pmtu_from_attr()
                && f.has_notify_error_qp()
                && f.has_mtu_from_qp()
                && f.has_mtu_to_path_mtu()),
        Verb::ModifyQp,
    )?;
    need(
        ops.destroy_qp.is_some() || (f.has_qp_priv_free() && qp_common),
        Verb::DestroyQp,
    )?;
    // SAFETY: as above, the driver's fields are stable during registration.
    let post_parms = unsafe { (*dev.as_raw()).post_parms };
    need(
        ops.post_send.is_some()
            || (f.has_schedule_send() && f.has_do_send() && !post_parms.is_null()),
        Verb::PostSend,
    )
}

/// The locks and counters of the device that rdmavt owns, set up before anything can use them.
///
/// # Safety
///
/// The device is not yet registered: nothing else touches these fields.
unsafe fn init_internal(dev: &Device) {
    let rdi = dev.as_raw();
    // SAFETY: the device is not registered yet (caller's guarantee), so the locks are unused
    // and the counters unshared.
    unsafe {
        spin_lock_init!(&raw mut (*rdi).n_ahs_lock, c"&rdi->n_ahs_lock");
        (*rdi).n_ahs_allocated = 0;
        spin_lock_init!(&raw mut (*rdi).n_srqs_lock, c"&rdi->n_srqs_lock");
        (*rdi).n_srqs_allocated = 0;
        mcast::driver_init(dev);
        spin_lock_init!(&raw mut (*rdi).n_cqs_lock, c"&rdi->n_cqs_lock");
        spin_lock_init!(&raw mut (*rdi).n_pds_lock, c"&rdi->n_pds_lock");
        (*rdi).n_pds_allocated = 0;
        mmap::init_device(dev);
    }
}

/// What rdmavt, not the driver, decides about the device ib_core will see.
///
/// # Safety
///
/// The device is not yet registered.
unsafe fn set_core_attributes(dev: &Device) {
    let ibdev = dev.ibdev();
    // SAFETY: not registered yet (caller's guarantee): ib_core does not read these yet.
    unsafe {
        (*ibdev).uverbs_cmd_mask |= UVERBS_CMDS;
        (*ibdev).node_type = bindings::RDMA_NODE_IB_CA as u8;
        if (*ibdev).num_comp_vectors == 0 {
            (*ibdev).num_comp_vectors = 1;
        }
    }
}

fn register(dev: &Device) -> Result {
    check_support(dev).map_err(|verb| {
        pr_err!("Driver support req not met at {}\n", verb as u8);
        EINVAL
    })?;
    let ibdev = dev.ibdev();
    // SAFETY: the device is the driver's, not yet registered; the ops table is static.
    unsafe { bindings::ib_set_device_ops(ibdev, &*super::ops::RVT_DEV_OPS) };
    // C: "Once we get past here we can use rvt_pr macros and tracepoints".
    trace::dbg(dev, c"Driver attempting registration");
    // SAFETY: the device is not registered yet.
    unsafe { init_internal(dev) };
    // SAFETY: the device is not registered yet.
    unsafe { qp::driver_init(dev) }.map_err(|_| {
        pr_err!("Error in driver QP init.\n");
        EINVAL
    })?;
    // After the multicast set-up in init_internal, as in C.
    // SAFETY: the device is not registered yet.
    if let Err(e) = unsafe { mr::driver_init(dev) } {
        pr_err!("Error in driver MR init.\n");
        // SAFETY: QP init succeeded above and the device never got registered.
        unsafe { qp::exit(dev) };
        return Err(e);
    }
    // SAFETY: the device is not registered yet.
    unsafe { set_core_attributes(dev) };
    // SAFETY: `ibdev` is fully set up; C registers under the name the driver gave the
    // device (dev_name), with no DMA device.
    let res = to_result(unsafe {
        bindings::ib_register_device(
            ibdev,
            bindings::rdmavt_rs_dev_name(ibdev),
            core::ptr::null_mut(),
        )
    });
    if let Err(e) = res {
        rvt_err!(dev, "Failed to register driver with ib core.\n");
        // SAFETY: MR and QP init succeeded above and the device never got registered.
        unsafe {
            mr::exit(dev);
            qp::exit(dev);
        }
        return Err(e);
    }
    // As in C, a port without a MAD agent is not fatal: the device works without traps.
    mad::create_agents(dev);
    rvt_info!(dev, "Registration with rdmavt done.\n");
    Ok(())
}

/// Registers the driver's device with rdmavt and ib_core.
///
/// # Safety
///
/// `rdi` is NULL or came from `rvt_alloc_device`, filled in by the driver.
#[no_mangle]
pub(crate) unsafe extern "C" fn rvt_register_device(rdi: *mut bindings::rvt_dev_info) -> c_int {
    if rdi.is_null() {
        return EINVAL.to_errno();
    }
    // SAFETY: `rdi` is a live device from `rvt_alloc_device` (caller's guarantee).
    let dev = unsafe { Device::from_raw(rdi) };
    from_result(|| register(dev).map(|()| 0))
}
c_export!(rvt_register_device);

/// Removes a device registered with `rvt_register_device`.
///
/// # Safety
///
/// `rdi` is NULL or a registered device.
#[no_mangle]
pub(crate) unsafe extern "C" fn rvt_unregister_device(rdi: *mut bindings::rvt_dev_info) {
    if rdi.is_null() {
        return;
    }
    // SAFETY: `rdi` is a live, registered device (caller's guarantee).
    let dev = unsafe { Device::from_raw(rdi) };
    // C fires this before its NULL check, so with the event on a NULL `rdi` oopses there.
    trace::dbg(dev, c"Driver is unregistering.");
    mad::free_agents(dev);
    // SAFETY: registered by `rvt_register_device`; ib_core waits for its users to go.
    unsafe { bindings::ib_unregister_device(dev.ibdev()) };
    // SAFETY: registration set the tables up, and ib_core has destroyed every MR and QP (a
    // QP still in a multicast group cannot have been destroyed: mcast::exit drops its
    // reference before the QP table goes).
    unsafe {
        mr::exit(dev);
        mcast::exit(dev);
        qp::exit(dev);
    }
}
c_export!(rvt_unregister_device);

/// Records the driver's port `port_index` (0-based) and its P_Key table. Always succeeds.
///
/// # Safety
///
/// `rdi` came from `rvt_alloc_device` with more than `port_index` ports; `port` and
/// `pkey_table` live as long as the device.
#[no_mangle]
pub(crate) unsafe extern "C" fn rvt_init_port(
    rdi: *mut bindings::rvt_dev_info,
    port: *mut bindings::rvt_ibport,
    port_index: c_int,
    pkey_table: *mut u16,
) -> c_int {
    // SAFETY: the caller guarantees the index is within the table rvt_alloc_device made and
    // that `port` is valid; the driver calls this before registering, single-threaded.
    unsafe {
        *(*rdi).ports.add(port_index as usize) = port;
        (*port).pkey_table = pkey_table;
    }
    0
}
c_export!(rvt_init_port);
