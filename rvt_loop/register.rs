// SPDX-License-Identifier: GPL-2.0-only

//! The registration of an rvt_loop device: its [`LoopDev`], allocated by rdmavt, filled in the
//! way hfi1 fills its own (hfi1_alloc_devdata() and hfi1_register_ib_device()), and
//! registered with rdmavt.
//!
//! The `num_devs` devices are registered at load and unregistered at unload ([`DeviceSet`]);
//! a device that `rdma link add` made ([`Origin::Link`]) is registered by [`create()`] too,
//! and ib_core unregisters it when the user deletes it (see [`crate::link`]).

use crate::{
    bindings, callbacks, debugfs,
    device::{LoopDev, Origin, GUID_BASE, NPKEYS},
    tables,
};
use core::{mem::size_of, ptr::NonNull};
use kernel::{error::to_result, prelude::*, str::CString, types::ScopeGuard};

/// The vendor ID ib_core reports is an OUI; ours is the one our GUIDs begin with. rdma-core
/// (pyverbs' device tests among others) takes a vendor ID of 0 for a broken device.
const VENDOR_ID: u32 = (GUID_BASE >> 40) as u32;

/// hfi1's PSN parameters (hfi1/verbs.h): 31-bit PSN arithmetic, 24-bit PSNs on the wire.
const PSN_MASK: i32 = 0x7fff_ffff;
const PSN_SHIFT: i32 = 1;
const PSN_MODIFY_MASK: i32 = 0xff_ffff;

/// QPNs hfi1 reserves for its KDETH (PSM) and AIP QPs, `RVT_KDETH_QP_BASE` to
/// `RVT_AIP_QP_MAX` in rdmavt_qp.h (bindgen cannot evaluate their casts). rvt_loop has neither
/// kind of QP; it reserves the same range so that rdmavt's QPN allocator runs here exactly as
/// under hfi1, which the tests cannot run without its hardware.
const QPN_RES_START: i32 = 0x80 << 16;
const QPN_RES_END: i32 = (0x81 << 16) + 0xffff;

/// Fills in everything that rdmavt and ib_core read from the driver at registration.
fn init(dev: &mut LoopDev, unit: u32, pdev: *mut bindings::pci_dev, origin: &Origin<'_>) -> Result {
    dev.init_own(unit, pdev, origin)?;
    let guid = dev.guid();

    // SAFETY: `create()` allocated the device just now and has not registered it yet.
    let rdi = unsafe { dev.rdi_mut() };
    set_name(&mut rdi.ibdev, unit, origin)?;
    init_ibdev(&mut rdi.ibdev, guid);
    rdi.driver_f = callbacks::DRIVER_F;
    rdi.dparms = params();
    if matches!(origin, Origin::Link { .. }) {
        callbacks::init_link_ibdev(&mut rdi.ibdev, &mut rdi.dparms.props);
    }
    rdi.post_parms = tables::POST_PARMS.as_ptr();
    rdi.wc_opcode = tables::WC_OPCODE.as_ptr();

    dev.setup_port()
}

/// Names the device before registration: rdmavt registers it under the name it already has
/// (`ib_register_device(.., dev_name(&rdi->ibdev.dev), ..)`), as hfi1_alloc_devdata() does.
/// A name that another device has already makes ib_core refuse the registration (ENFILE).
fn set_name(ibdev: &mut bindings::ib_device, unit: u32, origin: &Origin<'_>) -> Result {
    // `dev` is the member of the union that ib_core initialised (`coredev` begins with the
    // same `struct device`).
    let dev = (&raw mut ibdev.__bindgen_anon_1.dev).cast();
    to_result(match origin {
        // SAFETY: `dev` was initialised by rvt_alloc_device(); the format takes one unsigned
        // int.
        Origin::Param => unsafe {
            kernel::bindings::dev_set_name(dev, crate::compat::c_str_ptr(c"rvt_loop%u"), unit)
        },
        // SAFETY: As above; the format takes one string, and `name` is one.
        Origin::Link { name, .. } => unsafe {
            kernel::bindings::dev_set_name(dev, crate::compat::c_str_ptr(c"%s"), name.as_char_ptr())
        },
    })
}

/// The `ib_device` fields a driver sets: GUID, port count, ops.
///
/// Unlike hfi1, rvt_loop leaves `dev.parent` unset even when it has a PCI device: rdma-core's
/// udev rule (60-rdma-persistent-naming.rules, `rdma_rename NAME_FALLBACK`) renames every IB
/// device whose parent is a PCI device after its bus and slot (`ibp0s10`), and the names
/// `rvt_loop<unit>` are what users and tests address the devices by. rdmavt's messages still
/// name the PCI device, which it gets from get_pci_dev().
fn init_ibdev(ibdev: &mut bindings::ib_device, guid: u64) {
    ibdev.node_guid = guid.to_be();
    ibdev.phys_port_cnt = 1;
    ibdev.num_comp_vectors = 1;
    // SAFETY: `ibdev` is initialised and not registered; the ops are static.
    unsafe { bindings::ib_set_device_ops(ibdev, callbacks::ops()) };
}

/// `rvt_dev_info::dparms`: the device attributes ib_core reports and rdmavt's limits.
fn params() -> bindings::rvt_driver_params {
    bindings::rvt_driver_params {
        props: attributes(),
        lkey_table_size: 16,
        qp_table_size: 256,
        sge_copy_mode: bindings::RVT_SGE_COPY_MEMCPY,
        qpn_start: 0,
        qpn_inc: 1,
        // QPNs 0 and 1 are the SMI and GSI QPs, which rdmavt hands out by type. It steps
        // through the others by `qpn_inc << qos_shift`; a step of 2, as hfi1 and qib have,
        // keeps its wrap-around and new-bitmap paths from ever landing on QPN 1.
        qos_shift: 1,
        qpn_res_start: QPN_RES_START,
        qpn_res_end: QPN_RES_END,
        nports: 1,
        npkeys: NPKEYS as i32,
        node: kernel::bindings::NUMA_NO_NODE,
        psn_mask: PSN_MASK,
        psn_shift: PSN_SHIFT,
        psn_modify_mask: PSN_MODIFY_MASK,
        // A plain InfiniBand port, so ib_core, rdma-core and ibv_devinfo see IB, not OPA.
        core_cap_flags: bindings::RDMA_CORE_PORT_IBA_IB,
        max_mad_size: bindings::IB_MGMT_MAD_SIZE,
        max_rdma_atomic: 16,
        ..crate::compat::zeroed()
    }
}

/// The `ib_device_attr` that rdmavt's query_device returns.
fn attributes() -> bindings::ib_device_attr {
    let max_sge = 96;
    let max_mcast_grp = 16_384;
    let max_mcast_qp_attach = 16;

    bindings::ib_device_attr {
        // One system image for all units, as hfi1 uses the first unit's GUID for all.
        sys_image_guid: GUID_BASE.to_be(),
        vendor_id: VENDOR_ID,
        // The capabilities rdmavt implements for any driver, as hfi1 lists them, less
        // IB_DEVICE_SHUTDOWN_PORT (see shut_down_port()).
        device_cap_flags: (bindings::ib_device_cap_flags_IB_DEVICE_BAD_PKEY_CNTR
            | bindings::ib_device_cap_flags_IB_DEVICE_BAD_QKEY_CNTR
            | bindings::ib_device_cap_flags_IB_DEVICE_SYS_IMAGE_GUID
            | bindings::ib_device_cap_flags_IB_DEVICE_RC_RNR_NAK_GEN
            | bindings::ib_device_cap_flags_IB_DEVICE_PORT_ACTIVE_EVENT
            | bindings::ib_device_cap_flags_IB_DEVICE_SRQ_RESIZE
            | bindings::ib_device_cap_flags_IB_DEVICE_MEM_MGT_EXTENSIONS)
            as u64,
        page_size_cap: kernel::page::PAGE_SIZE as u64,
        max_mr_size: u64::MAX,
        max_fast_reg_page_list_len: u32::MAX,
        max_qp: 16_384,
        max_qp_wr: 16_383,
        max_send_sge: max_sge,
        max_recv_sge: max_sge,
        max_sge_rd: max_sge,
        max_cq: 0x1ffff,
        max_cqe: 0x2_ffff,
        max_ah: 0xffff,
        max_pd: 0xffff,
        max_qp_rd_atom: 16,
        max_qp_init_rd_atom: 255,
        max_srq: 1024,
        max_srq_wr: 0x1_ffff,
        max_srq_sge: 128,
        atomic_cap: bindings::ib_atomic_cap_IB_ATOMIC_GLOB,
        max_pkeys: NPKEYS as u16,
        max_mcast_grp,
        max_mcast_qp_attach,
        max_total_mcast_qp_attach: max_mcast_grp * max_mcast_qp_attach,
        ..crate::compat::zeroed()
    }
}

/// A registered rvt_loop device; dropping it unregisters and frees it.
///
/// # Invariants
///
/// `self.0` is a `LoopDev` that rvt_alloc_device() allocated and rvt_register_device()
/// registered, owned by this handle.
struct Registration(NonNull<LoopDev>);

// SAFETY: The handle only unregisters and frees the device, which C allows from any thread.
unsafe impl Send for Registration {}
// SAFETY: `&Registration` offers nothing at all.
unsafe impl Sync for Registration {}

/// Allocates, fills in and registers a device of unit `unit`, served by `pdev` (which may be
/// null on rdmavt-rs). The caller owns the registered device, as `origin` says.
pub(crate) fn create(
    unit: u32,
    pdev: *mut bindings::pci_dev,
    origin: &Origin<'_>,
) -> Result<NonNull<LoopDev>> {
    // SAFETY: Any size of at least `rvt_dev_info` may be asked for, with one port.
    let rdi = unsafe { bindings::rvt_alloc_device(size_of::<LoopDev>(), 1) };
    let dev = NonNull::new(rdi.cast::<LoopDev>()).ok_or(ENOMEM)?;
    let dev = ScopeGuard::new_with_data(dev, |dev| {
        // SAFETY: The device was allocated above and never registered.
        unsafe { LoopDev::free(dev) }
    });

    // SAFETY: The device was just allocated and is not registered: nobody else holds it.
    init(unsafe { &mut *dev.as_ptr() }, unit, pdev, origin)?;
    // SAFETY: The device is filled in; on failure rdmavt leaves it for us to free.
    to_result(unsafe { bindings::rvt_register_device(dev.as_ptr().cast()) })?;
    Ok(dev.dismiss())
}

impl Registration {
    /// Allocates, fills in and registers the device `rvt_loop<unit>`, served by `pdev` (which
    /// may be null on rdmavt-rs).
    fn new(unit: u32, pdev: *mut bindings::pci_dev) -> Result<Self> {
        // INVARIANT: allocated and registered, and owned by nobody else.
        Ok(Self(create(unit, pdev, &Origin::Param)?))
    }
}

impl Drop for Registration {
    fn drop(&mut self) {
        // SAFETY: By the type invariants the device is registered and owned by us. Once
        // rvt_unregister_device() returns, ib_core calls none of our callbacks any more, and
        // nothing else of ours uses the device: it is ours to free.
        unsafe {
            bindings::rvt_unregister_device(self.0.as_ptr().cast());
            LoopDev::free(self.0);
        }
    }
}

/// A registered rvt_loop device and its debugfs directory; dropping it removes both.
pub(crate) struct Device {
    /// `<debugfs>/rvt_loop/rvt_loop<unit>/`: dropped first, as it reads the device's QPs.
    _debugfs: debugfs::QpStats,
    _reg: Registration,
}

impl Device {
    /// Registers the device `rvt_loop<unit>`, served by `pdev` (which may be null on
    /// rdmavt-rs), and creates its directory under `root`.
    pub(crate) fn new(
        unit: u32,
        pdev: *mut bindings::pci_dev,
        root: &debugfs::Root,
    ) -> Result<Self> {
        let reg = Registration::new(unit, pdev)?;
        let name = CString::try_from_fmt(crate::compat::fmt!("rvt_loop{unit}"))?;
        let rdi = reg.0.cast::<bindings::rvt_dev_info>();
        Ok(Self {
            // SAFETY: `rdi` is registered, and stays so until `reg` is dropped, after this.
            _debugfs: unsafe { debugfs::qp_stats(root, &name, rdi) }?,
            _reg: reg,
        })
    }
}

/// The devices `rvt_loop0` to `rvt_loop<n-1>`, unregistered when dropped, and their debugfs
/// directory `rvt_loop`.
pub(crate) struct DeviceSet {
    /// Dropped first: each device removes its own directory.
    _devs: KVec<Device>,
    _debugfs: debugfs::Root,
}

impl DeviceSet {
    /// Registers `count` devices served by `pdev` (null: no PCI device), with their
    /// directories under `root`.
    pub(crate) fn new(
        count: u32,
        pdev: *mut bindings::pci_dev,
        root: debugfs::Root,
    ) -> Result<Self> {
        let mut devs = KVec::with_capacity(count as usize, GFP_KERNEL)?;
        for unit in 0..count {
            // On failure, the devices registered so far are dropped with `devs`.
            devs.push(Device::new(unit, pdev, &root)?, GFP_KERNEL)?;
        }
        Ok(Self {
            _devs: devs,
            _debugfs: root,
        })
    }
}
