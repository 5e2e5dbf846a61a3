// SPDX-License-Identifier: GPL-2.0-only

//! One rvt_loop device: allocated by rdmavt, filled in the way hfi1 fills its own
//! (hfi1_alloc_devdata() and hfi1_register_ib_device()), and registered with rdmavt.
//!
//! Each device has one IB port that is always ACTIVE with the link up. Its LID, GUID and GID
//! follow from the device's unit number, so they are the same at every load.
//!
//! A device is either one of the `num_devs` devices, which rvt_loop registers at load and
//! unregisters at unload ([`DeviceSet`]), or one that `rdma link add` made ([`Origin::Link`]),
//! which ib_core unregisters when the user deletes it (see [`crate::link`]).

use crate::{
    bindings, callbacks, debugfs, link,
    stats::{Counter, Counters},
    tables,
};
use core::{mem::size_of, ptr::NonNull};
use kernel::{
    error::to_result,
    prelude::*,
    str::CString,
    types::{Opaque, ScopeGuard},
};

/// The IB MTU of every port, as an enum and in bytes.
pub(crate) const PORT_MTU: bindings::ib_mtu = bindings::ib_mtu_IB_MTU_4096;
pub(crate) const PORT_MTU_BYTES: u32 = 4096;

/// Entries in each port's P_Key table. Only the first is set: the default, full-member P_Key,
/// which is what QPs, the MAD layer and rdma-core use when nothing else is configured.
const NPKEYS: usize = bindings::RVT_MAX_PKEY_VALUES as usize;
const DEFAULT_PKEY: u16 = 0xffff;

/// Node and port GUIDs are this plus the unit number: an EUI-64 with the locally administered
/// bit set (no vendor OUI is ours to use), "rvtlp" in the bytes above the unit.
const GUID_BASE: u64 = 0x0272_7674_6c70_0000;

/// The vendor ID ib_core reports is an OUI; ours is the one our GUIDs begin with. rdma-core
/// (pyverbs' device tests among others) takes a vendor ID of 0 for a broken device.
const VENDOR_ID: u32 = (GUID_BASE >> 40) as u32;

/// `IB_DEFAULT_GID_PREFIX`, the link-local subnet prefix of a port no subnet manager has
/// configured (the macro has a byte swap in it, which bindgen cannot evaluate).
const DEFAULT_GID_PREFIX: u64 = 0xfe80_0000_0000_0000;

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

/// The driver structure rdmavt allocates for each device: `rvt_alloc_device()` is given its
/// size and returns it zeroed, with the `ib_device` initialised.
///
/// # Invariants
///
/// - `rdi` is the first field, so a pointer to the `rvt_dev_info` or to its `ib_device` (the
///   first field of that) is a pointer to the `LoopDev`: `#[repr(C)]` keeps the order.
/// - `unit`, `pdev`, `pkeys`, `counters` and `finish` are written only before registration and
///   after unregistration; in between only rdmavt and ib_core write `rdi` and `port`, which is
///   why both are [`Opaque`].
/// - C frees the memory without dropping it: `counters` and `finish` are taken out before (see
///   [`LoopDev::free`] and [`LoopDev::release_unregistered`]).
#[repr(C)]
pub(crate) struct LoopDev {
    rdi: Opaque<bindings::rvt_dev_info>,
    port: Opaque<bindings::rvt_ibport>,
    /// The port's P_Key table; rdmavt reads it through `rvt_ibport::pkey_table`.
    pkeys: Opaque<[u16; NPKEYS]>,
    unit: u32,
    pdev: *mut bindings::pci_dev,
    /// rvt_loop's own counters; `None` (zeroed memory) until `init()` allocates them.
    counters: Option<Counters>,
    /// A link device's last step, which `dealloc_driver` queues; `None` for the others.
    finish: Option<Pin<KBox<link::Finish>>>,
}

/// Where a device comes from: its name, and who unregisters it.
pub(crate) enum Origin<'a> {
    /// One of the `num_devs` devices, `rvt_loop<unit>`: rvt_loop unregisters it.
    Param,
    /// Made by `rdma link add` under the name given: ib_core unregisters it when the user
    /// deletes it, rvt_loop when it unloads first. `wq` runs its last step.
    Link {
        name: &'a CStr,
        wq: NonNull<kernel::bindings::workqueue_struct>,
    },
}

impl LoopDev {
    /// The `LoopDev` behind an `rvt_dev_info` that rdmavt hands to a callback.
    ///
    /// # Safety
    ///
    /// `rdi` is the `rvt_dev_info` of a live `LoopDev`, which stays alive for `'a`.
    pub(crate) unsafe fn from_rdi<'a>(rdi: *const bindings::rvt_dev_info) -> &'a Self {
        // SAFETY: By the type invariants `rdi` is at offset 0 of the `LoopDev`, and the caller
        // guarantees that the `LoopDev` lives for `'a`. Every field C may change is `Opaque`.
        unsafe { &*rdi.cast::<Self>() }
    }

    /// The `LoopDev` behind an `ib_device` that ib_core hands to a callback.
    ///
    /// # Safety
    ///
    /// `ibdev` is the `ib_device` of a live `LoopDev`, which stays alive for `'a`.
    pub(crate) unsafe fn from_ibdev<'a>(ibdev: *const bindings::ib_device) -> &'a Self {
        // SAFETY: `ibdev` is the first field of `rvt_dev_info`, so it has the same address,
        // and the caller's guarantee is the one `from_rdi` asks for.
        unsafe { Self::from_rdi(ibdev.cast()) }
    }

    /// The device's index: its name is `rvt_loop<unit>`.
    pub(crate) fn unit(&self) -> u32 {
        self.unit
    }

    /// The PCI device that rdmavt prints through, or null when there is none.
    pub(crate) fn pci_dev(&self) -> *mut bindings::pci_dev {
        self.pdev
    }

    /// The port's LID. LID 0 is reserved, so unit 0 has LID 1.
    pub(crate) fn lid(&self) -> u32 {
        1 + self.unit
    }

    /// The node GUID, which is also the GUID of the port (GID index 0), in CPU order.
    pub(crate) fn guid(&self) -> u64 {
        GUID_BASE + u64::from(self.unit)
    }

    /// The port's subnet prefix, big-endian: the first half of its one GID. No subnet
    /// manager changes it.
    pub(crate) fn gid_prefix(&self) -> u64 {
        DEFAULT_GID_PREFIX.to_be()
    }

    /// Entry `index` of the port's P_Key table; 0, the invalid P_Key, beyond the table, as
    /// rdmavt's rvt_get_pkey() returns.
    pub(crate) fn pkey(&self, index: usize) -> u16 {
        self.pkeys().nth(index).unwrap_or(0)
    }

    /// The port's P_Key table.
    pub(crate) fn pkeys(&self) -> impl Iterator<Item = u16> + '_ {
        // SAFETY: By the type invariants the table is written only before registration, and
        // rdmavt only reads it, so shared reads are fine.
        unsafe { &*self.pkeys.get() }.iter().copied()
    }

    /// The port's driver data that rdmavt also reads (`rdi->ports[0]`).
    pub(crate) fn port(&self) -> *mut bindings::rvt_ibport {
        self.port.get()
    }

    /// Adds `value` to one of rvt_loop's own counters, on this CPU.
    pub(crate) fn count(&self, counter: Counter, value: u64) {
        if let Some(counters) = &self.counters {
            counters.add(counter, value);
        }
    }

    /// Counter number `index` of rvt_loop's own, summed over the CPUs.
    pub(crate) fn counter_sum(&self, index: u32) -> u64 {
        self.counters.as_ref().map_or(0, |c| c.sum(index))
    }

    /// Frees the device: what rvt_loop allocated for it, then rdmavt's (and ib_core's)
    /// reference.
    ///
    /// # Safety
    ///
    /// `dev` came from rvt_alloc_device() and is not registered (any more); nothing else uses
    /// it, nor does anything after this call.
    unsafe fn free(dev: NonNull<Self>) {
        // SAFETY: Nobody else reaches the device (the caller's guarantee). With `finish` gone,
        // the `dealloc_driver` that rvt_dealloc_device() calls does nothing.
        unsafe { Self::drop_own(dev) };
        // SAFETY: The caller's guarantee; the memory goes with ib_core's last reference.
        unsafe { bindings::rvt_dealloc_device(dev.as_ptr().cast()) }
    }

    /// Drops what rvt_loop allocated for the device.
    ///
    /// # Safety
    ///
    /// The device is not registered (any more) and nothing else uses it.
    unsafe fn drop_own(dev: NonNull<Self>) {
        // SAFETY: The caller's guarantee: the fields are ours alone.
        let (counters, finish) = unsafe {
            let dev = &mut *dev.as_ptr();
            (dev.counters.take(), dev.finish.take())
        };
        drop((counters, finish));
    }

    /// The last step of a link device, once ib_core has unregistered it and called its
    /// `dealloc_driver`: what `rvt_unregister_device()` frees after ib_core's unregistration
    /// (rdmavt's QP, MR and multicast tables; its call into ib_core finds the device gone and
    /// returns), then what rvt_loop allocated, and the port table of rvt_alloc_device(). That
    /// table is the half of rvt_dealloc_device() that ib_core's `ib_dealloc_device()` does not
    /// do; both rdmavt modules allocate it with kmalloc (C kzalloc_objs(), rdmavt-rs a KVec)
    /// and free it with kfree(). The memory itself goes with the caller's device reference.
    ///
    /// # Safety
    ///
    /// `dev` was registered, ib_core has unregistered it and called `dealloc_driver`, its MAD
    /// agent is gone ([`LoopDev::free_mad_agent`]), and the caller holds a reference to its
    /// `struct device`. Nothing else uses it, nor does anything after this call but the
    /// reference's put.
    pub(crate) unsafe fn release_unregistered(dev: NonNull<Self>) {
        let rdi = dev.as_ptr().cast::<bindings::rvt_dev_info>();
        // SAFETY: The caller's guarantee. ib_core's unregistration is fenced: a second call
        // returns at once once the device's refcount is 0.
        unsafe { bindings::rvt_unregister_device(rdi) };
        // SAFETY: As above: nothing else reaches the device.
        unsafe { Self::drop_own(dev) };
        // SAFETY: `ports` came from rvt_alloc_device(), with kmalloc (see above), and rdmavt
        // is done with it.
        unsafe { kernel::bindings::kfree((*rdi).ports.cast()) };
    }

    /// Unregisters the device's MAD agent, which rdmavt registered on its port: the part of
    /// `rvt_unregister_device()` that must come before ib_core's unregistration, where ib_mad
    /// frees the port the agent points into. As rdmavt's rvt_free_mad_agents() does, less the
    /// SM AH (only hfi1 makes one) and the driver's notification (rvt_loop has none).
    ///
    /// # Safety
    ///
    /// The device is registered, and this is called once, before ib_core unregisters it.
    pub(crate) unsafe fn free_mad_agent(&self) {
        // SAFETY: rdmavt wrote `send_agent` at registration and reads it at unregistration
        // only; the caller guarantees that neither runs now.
        let agent = unsafe { core::mem::take(&mut (*self.port()).send_agent) };
        if !agent.is_null() {
            // SAFETY: The agent rdmavt registered on this port and nobody else unregisters.
            unsafe { bindings::ib_unregister_mad_agent(agent) };
        }
    }

    /// Takes the last step of a link device out, once ib_core calls `dealloc_driver`.
    ///
    /// # Safety
    ///
    /// `ibdev` is the `ib_device` of a live `LoopDev`, which ib_core has unregistered (or
    /// which never was registered).
    pub(crate) unsafe fn take_finish(
        ibdev: *mut bindings::ib_device,
    ) -> Option<Pin<KBox<link::Finish>>> {
        // SAFETY: ib_core calls `dealloc_driver` once, after unregistration: the type
        // invariants let us write the field then.
        unsafe { (*ibdev.cast::<Self>()).finish.take() }
    }

    /// Fills in everything that rdmavt and ib_core read from the driver at registration.
    fn init(&mut self, unit: u32, pdev: *mut bindings::pci_dev, origin: &Origin<'_>) -> Result {
        self.unit = unit;
        self.pdev = pdev;
        self.counters = Some(Counters::new()?);
        if let Origin::Link { wq, .. } = origin {
            self.finish = Some(link::Finish::new(NonNull::from(&*self), *wq)?);
        }
        let guid = self.guid();
        let port = self.port.get();
        let pkeys = self.pkeys.get().cast::<u16>();

        // SAFETY: `self` is borrowed exclusively and the device is not registered yet, so
        // nothing else reaches the `rvt_dev_info`; rvt_alloc_device() zeroed and initialised
        // it, so a unique reference to it is valid.
        let rdi = unsafe { &mut *self.rdi.get() };
        set_name(&mut rdi.ibdev, unit, origin)?;
        init_ibdev(&mut rdi.ibdev, guid);
        rdi.driver_f = callbacks::DRIVER_F;
        rdi.dparms = params();
        if matches!(origin, Origin::Link { .. }) {
            link::init_ibdev(&mut rdi.ibdev, &mut rdi.dparms.props);
        }
        rdi.post_parms = tables::POST_PARMS.as_ptr();
        rdi.wc_opcode = tables::WC_OPCODE.as_ptr();

        // SAFETY: `port` and `pkeys` are fields of `self`, borrowed exclusively.
        unsafe { init_port(port, pkeys) };
        // SAFETY: `rdi` has room for one port (rvt_alloc_device(.., 1)), and the port and its
        // P_Key table live in the same allocation, as long as the device does.
        to_result(unsafe { bindings::rvt_init_port(rdi, port, 0, pkeys) })
    }
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

/// The `rvt_ibport` fields rdmavt reads, and the P_Key table.
///
/// # Safety
///
/// `port` and `pkeys` (`NPKEYS` entries) are valid for writes and not reachable by anyone else.
unsafe fn init_port(port: *mut bindings::rvt_ibport, pkeys: *mut u16) {
    // SAFETY: The caller guarantees exclusive access to `port`; the allocation zeroed it.
    let port = unsafe { &mut *port };
    // SAFETY: `port.lock` is valid for writes; it protects the port's multicast tree in
    // rdmavt. Name and class key are static, as spin_lock_init() makes them.
    unsafe {
        kernel::bindings::__spin_lock_init(
            (&raw mut port.lock).cast(),
            crate::compat::c_str_ptr(c"rvt_loop_port"),
            crate::compat::static_lock_class!().as_ptr(),
        )
    };
    port.gid_prefix = DEFAULT_GID_PREFIX.to_be();
    port.port_cap_flags = bindings::ib_port_capability_mask_bits_IB_PORT_SYS_IMAGE_GUID_SUP
        | bindings::ib_port_capability_mask_bits_IB_PORT_AUTO_MIGR_SUP;
    // No subnet manager: the driver configures the port, and sm_lid stays 0.

    // SAFETY: The caller guarantees that `pkeys` has `NPKEYS` (> 0) writable entries.
    unsafe { pkeys.write(DEFAULT_PKEY) };
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

impl LoopDev {
    /// Allocates, fills in and registers a device of unit `unit`, served by `pdev` (which may
    /// be null on rdmavt-rs). The caller owns the registered device, as `origin` says.
    pub(crate) fn create(
        unit: u32,
        pdev: *mut bindings::pci_dev,
        origin: &Origin<'_>,
    ) -> Result<NonNull<Self>> {
        // SAFETY: Any size of at least `rvt_dev_info` may be asked for, with one port.
        let rdi = unsafe { bindings::rvt_alloc_device(size_of::<LoopDev>(), 1) };
        let dev = NonNull::new(rdi.cast::<LoopDev>()).ok_or(ENOMEM)?;
        let dev = ScopeGuard::new_with_data(dev, |dev| {
            // SAFETY: The device was allocated above and never registered.
            unsafe { LoopDev::free(dev) }
        });

        // SAFETY: The device was just allocated and is not registered: nobody else holds it.
        unsafe { &mut *dev.as_ptr() }.init(unit, pdev, origin)?;
        // SAFETY: The device is filled in; on failure rdmavt leaves it for us to free.
        to_result(unsafe { bindings::rvt_register_device(dev.as_ptr().cast()) })?;
        Ok(dev.dismiss())
    }
}

impl Registration {
    /// Allocates, fills in and registers the device `rvt_loop<unit>`, served by `pdev` (which
    /// may be null on rdmavt-rs).
    fn new(unit: u32, pdev: *mut bindings::pci_dev) -> Result<Self> {
        // INVARIANT: allocated and registered, and owned by nobody else.
        Ok(Self(LoopDev::create(unit, pdev, &Origin::Param)?))
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
