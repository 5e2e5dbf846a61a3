// SPDX-License-Identifier: GPL-2.0-only

//! What rvt_loop gives rdmavt and ib_core to call: the `rvt_driver_provided` table, the few
//! `ib_device_ops` a driver sets itself, and the two that link devices add ([`crate::link`]).
//!
//! rvt_register_device() refuses a driver that lacks any callback its check_support() and
//! rvt_driver_qp_init() ask for; the rest of the table stays empty, which rdmavt checks for
//! before each call. The device and port callbacks live here, the QP ones in [`crate::qp`].

use crate::{bindings, device::LoopDev, qp, stats};
use kernel::{ffi::c_int, prelude::*};

/// `rvt_dev_info::driver_f`, copied into every device.
pub(crate) const DRIVER_F: bindings::rvt_driver_provided = bindings::rvt_driver_provided {
    get_pci_dev: Some(get_pci_dev),
    query_port_state: Some(query_port_state),
    get_guid_be: Some(get_guid_be),
    shut_down_port: Some(shut_down_port),
    cap_mask_chg: Some(cap_mask_chg),
    check_ah: Some(check_ah),
    qp_priv_alloc: Some(qp::priv_alloc),
    qp_priv_free: Some(qp::priv_free),
    free_all_qps: Some(qp::free_all_qps),
    notify_qp_reset: Some(qp::notify_qp_reset),
    notify_restart_rc: Some(qp::notify_restart_rc),
    notify_error_qp: Some(qp::notify_error_qp),
    flush_qp_waiters: Some(qp::flush_qp_waiters),
    stop_send_queue: Some(qp::stop_send_queue),
    quiesce_qp: Some(qp::quiesce_qp),
    schedule_send: Some(qp::schedule_send),
    schedule_send_no_lock: Some(qp::schedule_send_no_lock),
    do_send: Some(qp::do_send),
    setup_wqe: Some(qp::setup_wqe),
    get_pmtu_from_attr: Some(qp::get_pmtu_from_attr),
    mtu_from_qp: Some(qp::mtu_from_qp),
    mtu_to_path_mtu: Some(qp::mtu_to_path_mtu),
    ..crate::compat::zeroed()
};

extern "C" {
    /// The port's sysfs attribute groups, in rvt_loop_glue.c: ib_sysfs.h, whose macros build
    /// them, is not part of our bindings. Null-terminated.
    static rvt_loop_port_groups: [*const bindings::attribute_group; 2];
}

/// The `ib_device_ops` rvt_loop sets; ib_set_device_ops() only fills slots still empty, so
/// rdmavt's own ops, set at registration, supply everything else.
struct DeviceOps(bindings::ib_device_ops);

// SAFETY: `OPS` is never written; its pointers are to this module and to the static, never
// written group table of the C glue.
unsafe impl Sync for DeviceOps {}

static OPS: DeviceOps = DeviceOps(bindings::ib_device_ops {
    #[cfg(not(rdmavt_kernel_6_12))]
    owner: <crate::RvtLoop as kernel::ModuleMetadata>::THIS_MODULE
        .as_ptr()
        .cast(),
    // 6.12 has no `ModuleMetadata`: the module's own symbol, which its `THIS_MODULE` wraps.
    #[cfg(rdmavt_kernel_6_12)]
    owner: (&raw mut kernel::bindings::__this_module).cast(),
    // rdma-core's libhfi1verbs binds to devices by this id, so it serves ours unmodified.
    driver_id: bindings::rdma_driver_id_RDMA_DRIVER_HFI1,
    // check_support(MISC) in rdmavt requires port groups of the driver.
    port_groups: (&raw const rvt_loop_port_groups).cast_mut().cast(),
    // check_support(MODIFY_DEVICE) requires the driver's modify_device.
    modify_device: Some(modify_device),
    // The port counters of `rdma statistic` and sysfs hw_counters/, as rxe has them.
    alloc_hw_port_stats: Some(stats::alloc_hw_port_stats),
    get_hw_stats: Some(get_hw_stats),
    ..crate::compat::zeroed()
});

/// The ops to hand to ib_set_device_ops().
pub(crate) fn ops() -> &'static bindings::ib_device_ops {
    &OPS.0
}

/// `ib_device_ops::get_hw_stats`: reads every counter of the port into `stats`; returns how
/// many.
///
/// # Safety
///
/// `ibdev` is a registered rvt_loop device and `stats` the structure
/// [`stats::alloc_hw_port_stats()`] made for it, which the caller's `stats->lock` gives us.
unsafe extern "C" fn get_hw_stats(
    ibdev: *mut bindings::ib_device,
    stats: *mut bindings::rdma_hw_stats,
    port: u32,
    _index: c_int,
) -> c_int {
    if port != 1 || stats.is_null() {
        return EINVAL.to_errno();
    }
    // SAFETY: ib_core calls this only for a registered device of ours.
    let dev = unsafe { LoopDev::from_ibdev(ibdev) };
    // SAFETY: The caller's guarantee for `stats`; the port lives as long as the device.
    unsafe { stats::fill(stats, dev.port(), |i| dev.counter_sum(i)) }
}

// `ib_device` reaches an empty placeholder struct that bindgen generates for an x86 type
// nothing here touches; the C side takes it by pointer only.
#[allow(improper_ctypes)]
extern "C" {
    /// Sets the glue's `rdma_link_ops` on a link device (rvt_loop_glue.c).
    fn rvt_loop_set_link_ops(ibdev: *mut bindings::ib_device);
}

/// The `ib_device_ops` of link devices, added to rvt_loop's own: the new flow's
/// `dealloc_driver`, and `disassociate_ucontext`, so that ib_core unregisters a device that
/// a process holds open (its objects destroyed, its later verbs failing) instead of waiting
/// for the process, as for rxe; uverbs then pins rvt_loop for no open device of this kind.
struct LinkOps(bindings::ib_device_ops);

// SAFETY: Never written; its pointers are functions of this module.
unsafe impl Sync for LinkOps {}

static LINK_OPS: LinkOps = LinkOps(bindings::ib_device_ops {
    dealloc_driver: Some(dealloc_driver),
    disassociate_ucontext: Some(disassociate_ucontext),
    ..crate::compat::zeroed()
});

/// What a link device has beyond the others, set before registration.
pub(crate) fn init_link_ibdev(
    ibdev: &mut bindings::ib_device,
    props: &mut bindings::ib_device_attr,
) {
    // ib_core copies the attributes at registration (rdmavt's query_device returns them);
    // nldev_dellink() refuses devices without this flag.
    props.kernel_cap_flags |= u64::from(bindings::ib_kernel_cap_flags_IBK_ALLOW_USER_UNREG);
    // SAFETY: `ibdev` is initialised and not registered; the ops are static. Only the slots
    // still empty are filled, and rdmavt fills neither of these.
    unsafe { bindings::ib_set_device_ops(ibdev, &LINK_OPS.0) };
    // SAFETY: As above; the link ops are the glue's static table.
    unsafe { rvt_loop_set_link_ops(ibdev) };
}

/// `dealloc_driver`: ib_core has unregistered the device; queues the last step.
///
/// # Safety
///
/// `ibdev` is an rvt_loop device that ib_core is deallocating.
unsafe extern "C" fn dealloc_driver(ibdev: *mut bindings::ib_device) {
    // SAFETY: The caller's guarantee. A device whose registration failed has no last step:
    // its creator took it out before freeing it.
    if let Some(finish) = unsafe { LoopDev::take_finish(ibdev) } {
        finish.queue();
    }
}

/// `disassociate_ucontext`: rvt_loop has no hardware state in a user context (no doorbells,
/// no mappings of its own), so nothing to take away, as for rxe. uverbs destroys the
/// context's objects through rdmavt's verbs after this.
extern "C" fn disassociate_ucontext(_uctx: *mut bindings::ib_ucontext) {}

/// Runs `f` on the device behind the `rdi` that rdmavt passes to a driver callback.
///
/// # Safety
///
/// `rdi` is the `rvt_dev_info` of a registered (or registering) rvt_loop device.
unsafe fn with_dev<R>(rdi: *const bindings::rvt_dev_info, f: impl FnOnce(&LoopDev) -> R) -> R {
    // SAFETY: rdmavt only calls a device's callbacks between rvt_register_device() and
    // rvt_unregister_device(), while our `Device` handle keeps the `LoopDev` alive.
    f(unsafe { LoopDev::from_rdi(rdi) })
}

/// rdmavt's log macros print through this device; on rdmavt-rs it may be null.
///
/// # Safety
///
/// `rdi` is the `rvt_dev_info` of a registered rvt_loop device.
unsafe extern "C" fn get_pci_dev(rdi: *mut bindings::rvt_dev_info) -> *mut bindings::pci_dev {
    // SAFETY: rdmavt passes the `rdi` of one of our devices.
    unsafe { with_dev(rdi, LoopDev::pci_dev) }
}

/// Fills in what rvt_query_port() leaves to the driver. The link of a loopback port is
/// always up and the port always ACTIVE: there is no cable and no subnet manager to wait for.
///
/// # Safety
///
/// `rdi` is the `rvt_dev_info` of a registered rvt_loop device, `props` a valid, zeroed
/// `ib_port_attr` that nothing else accesses during the call.
unsafe extern "C" fn query_port_state(
    rdi: *mut bindings::rvt_dev_info,
    _port_num: u32,
    props: *mut bindings::ib_port_attr,
) -> c_int {
    // SAFETY: `props` is the caller's zeroed `ib_port_attr`, ours to fill during this call.
    let props = unsafe { &mut *props };
    // SAFETY: rdmavt passes the `rdi` of one of our devices; ib_core has checked `port_num`
    // against our single port.
    unsafe { with_dev(rdi, |dev| props.lid = dev.lid()) };
    props.lmc = 0;
    props.state = bindings::ib_port_state_IB_PORT_ACTIVE;
    props.phys_state = bindings::ib_port_phys_state_IB_PORT_PHYS_STATE_LINK_UP as u8;
    // One GID per port: the link-local prefix and the port GUID (get_guid_be(), index 0).
    props.gid_tbl_len = 1;
    props.active_width = bindings::ib_port_width_IB_WIDTH_4X as u8;
    props.active_speed = bindings::ib_port_speed_IB_SPEED_EDR as u16;
    // In PortInfo's encoding 1 means one data VL, VL0: all a loopback needs.
    props.max_vl_num = 1;
    props.max_mtu = crate::device::PORT_MTU;
    props.active_mtu = crate::device::PORT_MTU;
    props.phys_mtu = crate::device::PORT_MTU_BYTES;
    0
}

/// The port GUID at `guid_index` of the GUID table, big-endian; the table has one entry.
///
/// # Safety
///
/// `rdi` is the `rvt_dev_info` of a registered rvt_loop device, `guid` valid for a write.
unsafe extern "C" fn get_guid_be(
    rdi: *mut bindings::rvt_dev_info,
    _rvp: *mut bindings::rvt_ibport,
    guid_index: c_int,
    guid: *mut bindings::__be64,
) -> c_int {
    if guid_index != 0 {
        return EINVAL.to_errno();
    }
    // SAFETY: rdmavt passes the `rdi` of one of our devices.
    let port_guid = unsafe { with_dev(rdi, LoopDev::guid) };
    // SAFETY: `guid` points to the interface id of the caller's GID.
    unsafe { guid.write(port_guid.to_be()) };
    0
}

/// A loopback port has no link to take down, so the device does not advertise
/// `IB_DEVICE_SHUTDOWN_PORT` and a request to shut the port down fails.
extern "C" fn shut_down_port(_rdi: *mut bindings::rvt_dev_info, _port_num: u32) -> c_int {
    crate::compat::eopnotsupp().to_errno()
}

/// hfi1 sends a trap to the subnet manager when the port's capability mask changes; a
/// loopback port has none to tell, and rdmavt has already recorded the new mask.
extern "C" fn cap_mask_chg(_rdi: *mut bindings::rvt_dev_info, _port_num: u32) {}

/// The number of service levels of an IB port (4 bits in the LRH).
const IB_SLS: u8 = 16;

/// `check_ah`, called by rdmavt's `rvt_check_ah()` after its own checks (port, static rate,
/// GID index): what hfi1's `hfi1_check_ah()` refuses, for an IB port: a multicast DLID
/// without a GRH, and a service level the port does not have.
///
/// # Safety
///
/// `ah_attr` is valid for reads for the call.
unsafe extern "C" fn check_ah(
    _ibdev: *mut bindings::ib_device,
    ah_attr: *mut bindings::rdma_ah_attr,
) -> c_int {
    // SAFETY: The caller guarantees `ah_attr`.
    let ah = unsafe { &*ah_attr };
    let dest = crate::ud::Dest::new(ah);
    if ah.sl >= IB_SLS || (dest.has_multicast_lid() && dest.grh().is_none()) {
        return EINVAL.to_errno();
    }
    0
}

/// `ib_device_ops::modify_device`: like hfi1, only the node description may be changed (it
/// is what ib_core's `node_desc` sysfs file writes); the system image GUID is fixed.
///
/// # Safety
///
/// `ibdev` is a registered rvt_loop device and `modify` a valid request.
unsafe extern "C" fn modify_device(
    ibdev: *mut bindings::ib_device,
    mask: c_int,
    modify: *mut bindings::ib_device_modify,
) -> c_int {
    let node_desc = bindings::ib_device_modify_flags_IB_DEVICE_MODIFY_NODE_DESC as c_int;
    if mask & !node_desc != 0 {
        return crate::compat::eopnotsupp().to_errno();
    }
    if mask & node_desc != 0 {
        // SAFETY: ib_core passes a registered device of ours and the caller's request; like
        // hfi1 and ib_core's other drivers, the description is copied without a lock.
        unsafe { (*ibdev).node_desc = (*modify).node_desc };
    }
    0
}

/// The unit number of the device behind `ibdev`, shown by the port attribute
/// `ports/1/rvt_loop/unit` in sysfs (rvt_loop_glue.c).
///
/// # Safety
///
/// `ibdev` is the `ib_device` of a registered rvt_loop device.
#[no_mangle]
unsafe extern "C" fn rvt_loop_unit(ibdev: *const bindings::ib_device) -> u32 {
    // SAFETY: ib_core shows port attributes only while the device is registered, and the
    // caller guarantees that it is ours.
    unsafe { LoopDev::from_ibdev(ibdev) }.unit()
}
