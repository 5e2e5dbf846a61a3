// SPDX-License-Identifier: GPL-2.0-only

//! One rvt_loop device: the driver structure rdmavt allocates for it ([`LoopDev`]), what the
//! callbacks read from it, and how it is freed. [`crate::register`] fills it in and registers
//! it.
//!
//! Each device has one IB port that is always ACTIVE with the link up. Its LID, GUID and GID
//! follow from the device's unit number, so they are the same at every load.
//!
//! A device is either one of the `num_devs` devices, which rvt_loop registers at load and
//! unregisters at unload, or one that `rdma link add` made ([`Origin::Link`]), which ib_core
//! unregisters when the user deletes it (see [`crate::link`]). A link device keeps its last
//! step ([`Finish`]) from its registration on.

use crate::{
    bindings,
    stats::{Counter, Counters},
};
use core::ptr::NonNull;
use kernel::{
    error::to_result,
    prelude::*,
    types::Opaque,
    workqueue::{impl_has_work, new_work, Queue, Work},
};

/// The IB MTU of every port, as an enum and in bytes.
pub(crate) const PORT_MTU: bindings::ib_mtu = bindings::ib_mtu_IB_MTU_4096;
pub(crate) const PORT_MTU_BYTES: u32 = 4096;

/// Entries in each port's P_Key table. Only the first is set: the default, full-member P_Key,
/// which is what QPs, the MAD layer and rdma-core use when nothing else is configured.
pub(crate) const NPKEYS: usize = bindings::RVT_MAX_PKEY_VALUES as usize;
const DEFAULT_PKEY: u16 = 0xffff;

/// Node and port GUIDs are this plus the unit number: an EUI-64 with the locally administered
/// bit set (no vendor OUI is ours to use), "rvtlp" in the bytes above the unit.
pub(crate) const GUID_BASE: u64 = 0x0272_7674_6c70_0000;

/// `IB_DEFAULT_GID_PREFIX`, the link-local subnet prefix of a port no subnet manager has
/// configured (the macro has a byte swap in it, which bindgen cannot evaluate).
const DEFAULT_GID_PREFIX: u64 = 0xfe80_0000_0000_0000;

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
    /// rvt_loop's own counters; `None` (zeroed memory) until `init_own()` allocates them.
    counters: Option<Counters>,
    /// A link device's last step, which `dealloc_driver` queues; `None` for the others.
    finish: Option<Pin<KBox<Finish>>>,
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
    pub(crate) unsafe fn free(dev: NonNull<Self>) {
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
    pub(crate) unsafe fn take_finish(ibdev: *mut bindings::ib_device) -> Option<Pin<KBox<Finish>>> {
        // SAFETY: ib_core calls `dealloc_driver` once, after unregistration: the type
        // invariants let us write the field then.
        unsafe { (*ibdev.cast::<Self>()).finish.take() }
    }

    /// Fills in rvt_loop's own fields of a new device: the first step of its registration
    /// ([`crate::register`]).
    pub(crate) fn init_own(
        &mut self,
        unit: u32,
        pdev: *mut bindings::pci_dev,
        origin: &Origin<'_>,
    ) -> Result {
        self.unit = unit;
        self.pdev = pdev;
        self.counters = Some(Counters::new()?);
        if let Origin::Link { wq, .. } = origin {
            self.finish = Some(Finish::new(NonNull::from(&*self), *wq)?);
        }
        Ok(())
    }

    /// The device's `rvt_dev_info`, for its registration to fill in.
    ///
    /// # Safety
    ///
    /// The device is not registered yet.
    pub(crate) unsafe fn rdi_mut(&mut self) -> &mut bindings::rvt_dev_info {
        // SAFETY: `self` is borrowed exclusively and the device is not registered yet (the
        // caller's guarantee), so nothing else reaches the `rvt_dev_info`; rvt_alloc_device()
        // zeroed and initialised it, so a unique reference to it is valid.
        unsafe { &mut *self.rdi.get() }
    }

    /// Sets up the port and its P_Key table, and hands them to rdmavt: the last step before
    /// registration.
    pub(crate) fn setup_port(&mut self) -> Result {
        let port = self.port.get();
        let pkeys = self.pkeys.get().cast::<u16>();
        // SAFETY: `port` and `pkeys` are fields of `self`, borrowed exclusively.
        unsafe { init_port(port, pkeys) };
        // SAFETY: `rdi` has room for one port (rvt_alloc_device(.., 1)), and the port and its
        // P_Key table live in the same allocation, as long as the device does.
        to_result(unsafe { bindings::rvt_init_port(self.rdi.get(), port, 0, pkeys) })
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

/// The last step of a link device, queued by `dealloc_driver`. What it runs is
/// [`crate::link`]'s (its `WorkItem` impl): the device's entry there goes with it.
///
/// # Invariants
///
/// `dev` is the link device whose `finish` this was, and `wq` the workqueue of
/// [`crate::link::Links`], which outlives it.
#[pin_data]
pub(crate) struct Finish {
    #[pin]
    work: Work<Finish>,
    dev: NonNull<LoopDev>,
    wq: NonNull<kernel::bindings::workqueue_struct>,
}

// SAFETY: The work runs on any CPU; the device and the queue may be used from any thread.
unsafe impl Send for Finish {}
// SAFETY: `&Finish` offers nothing but the work item, which is synchronised by workqueue.
unsafe impl Sync for Finish {}

impl_has_work! {
    impl HasWork<Self> for Finish { self.work }
}

impl Finish {
    /// The last step of link device `dev`, to be run on `wq`.
    fn new(
        dev: NonNull<LoopDev>,
        wq: NonNull<kernel::bindings::workqueue_struct>,
    ) -> Result<Pin<KBox<Self>>> {
        // INVARIANT: the caller makes this the `finish` of `dev`, with the link type's queue.
        KBox::pin_init(
            pin_init!(Self {
                work <- new_work!("rvt_loop::link::Finish"),
                dev,
                wq,
            }),
            GFP_KERNEL,
        )
    }

    /// The link device this is the last step of.
    pub(crate) fn dev(&self) -> NonNull<LoopDev> {
        self.dev
    }

    /// Queues the last step on its workqueue.
    pub(crate) fn queue(self: Pin<KBox<Self>>) {
        // SAFETY: By the type invariants the queue outlives every `Finish`.
        let wq = unsafe { Queue::from_raw(self.wq.as_ptr()) };
        wq.enqueue(self);
    }
}
