// SPDX-License-Identifier: GPL-2.0-only

//! rvt_loop: a software, loopback-only HFI on the rdmavt C API (`rvt_*`).
//!
//! It registers `num_devs` IB devices, `rvt_loop0` to `rvt_loop<num_devs-1>`, each with one
//! ACTIVE port, and reports itself as an hfi1 (`RDMA_DRIVER_HFI1`) so that rdma-core's
//! libhfi1verbs serves it. It runs on rdmavt-rs and on the in-tree C rdmavt alike. More
//! devices come and go with `rdma link add NAME type rvt_loop netdev lo` and `rdma link
//! delete NAME` ([`link`]); the first loads the module if needed (its alias,
//! `rdma-link-rvt_loop`). Not on 6.12, whose `rdma_link_ops` has no `dellink`.
//!
//! It builds for 7.3 and 6.12 (`crate::compat`); where 6.12's kernel crate has no API for
//! it, the module parameter, the PCI driver ([`pci`]) and debugfs ([`debugfs`]) are C's.
//!
//! The C rdmavt prints through the driver's PCI device (its log macros dereference
//! `get_pci_dev()`), so the devices are served by a real PCI device when there is one: rvt_loop
//! binds QEMU's `pci-testdev` and creates them in probe. rdmavt-rs also takes devices
//! without one, and says so by exporting `rdmavt_rs_soft_device_ok`; with no PCI device bound
//! at load, rvt_loop then creates them on its own.

// The same generated bindings as rdmavt-rs, fenced the same way.
#[path = "../bindings/mod.rs"]
mod bindings;
mod callbacks;
// The kernel-crate differences between 7.3 and 6.12, as rdmavt-rs has them.
#[path = "../compat/mod.rs"]
mod compat;
mod debugfs;
mod device;
mod link;
mod pci;
mod qp;
mod rdmavt;
mod register;
mod stats;
mod tables;
mod ud;

use kernel::{ffi::c_int, prelude::*};
use register::DeviceSet;

use crate::compat::atomic::{Acquire, AtomicFlag, Full, Release};

#[cfg(not(rdmavt_kernel_6_12))]
module! {
    type: RvtLoop,
    name: "rvt_loop",
    authors: ["rdmavt-rs developers"],
    description: "Software loopback HFI on rdmavt",
    license: "GPL",
    params: {
        num_devs: u32 {
            default: 1,
            description: "Number of loopback devices, rvt_loop0..rvt_loop<num_devs-1> (0-64); \
                          rdma link add makes more",
        },
    },
}

// 6.12's `module!` has one `author` and no `params`: `num_devs` is a C module parameter there
// (rvt_loop_glue.c).
#[cfg(rdmavt_kernel_6_12)]
module! {
    type: RvtLoop,
    name: "rvt_loop",
    author: "rdmavt-rs developers",
    description: "Software loopback HFI on rdmavt",
    license: "GPL",
}

/// The most devices one load creates (LIDs 1 to 64).
const MAX_DEVS: u32 = 64;

/// The marker rdmavt-rs exports (an `int`, non-zero) when it accepts devices without a PCI
/// device. Looked up at run time, never imported: an import would keep rvt_loop from loading
/// on the C rdmavt. symbol_get() only returns symbols exported with EXPORT_SYMBOL_GPL.
const SOFT_DEVICE_MARKER: &core::ffi::CStr = c"rdmavt_rs_soft_device_ok";

/// The `num_devs` module parameter.
#[cfg(not(rdmavt_kernel_6_12))]
fn num_devs() -> u32 {
    module_parameters::num_devs.value()
}

/// The `num_devs` module parameter, a C one on 6.12 (rvt_loop_glue.c).
#[cfg(rdmavt_kernel_6_12)]
fn num_devs() -> u32 {
    extern "C" {
        fn rvt_loop_num_devs() -> u32;
    }
    // SAFETY: reads a module parameter of this module.
    unsafe { rvt_loop_num_devs() }
}

/// `num_devs`, checked.
fn device_count() -> Result<u32> {
    let count = num_devs();
    if count > MAX_DEVS {
        pr_err!("num_devs={count} is out of range 0-{MAX_DEVS}\n");
        return Err(EINVAL);
    }
    Ok(count)
}

/// Whether the loaded rdmavt accepts devices without a PCI device.
pub(crate) fn soft_devices_ok() -> bool {
    // SAFETY: The name is a valid C string. A non-null result holds a reference on the
    // exporting module, which __symbol_put() below drops.
    let marker = unsafe { kernel::bindings::__symbol_get(compat::c_str_ptr(SOFT_DEVICE_MARKER)) };
    if marker.is_null() {
        return false;
    }
    // SAFETY: The marker is an exported `int` of the module we hold a reference on.
    let ok = unsafe { marker.cast::<c_int>().read() } != 0;
    // SAFETY: Balances the successful __symbol_get() above; `marker` is not used after it.
    unsafe { kernel::bindings::__symbol_put(compat::c_str_ptr(SOFT_DEVICE_MARKER)) };
    ok
}

/// Set while the devices exist. Their names are global, so only one owner may create them:
/// the bound pci-testdev or, without one, the module itself.
static CLAIMED: AtomicFlag = AtomicFlag::new(false);

/// The claim on the device names; released when dropped.
struct Claim;

impl Claim {
    fn take() -> Option<Self> {
        (!CLAIMED.xchg(true, Full)).then_some(Claim)
    }
}

impl Drop for Claim {
    fn drop(&mut self) {
        CLAIMED.store(false, Release);
    }
}

/// The devices and the claim on their names. Fields drop in order: the PCI device is no
/// longer lent to new link devices, then the devices go.
pub(crate) struct Devices {
    _serving: link::Serving,
    _devs: DeviceSet,
    _claim: Claim,
}

impl Devices {
    /// Registers the `num_devs` devices, served by `pdev` (null: no PCI device), and lends
    /// `pdev` to link devices. ENODEV when another owner has them already.
    pub(crate) fn new(pdev: *mut bindings::pci_dev) -> Result<Self> {
        let claim = Claim::take().ok_or(ENODEV)?;
        let devs = DeviceSet::new(device_count()?, pdev, link::debugfs_root()?)?;
        Ok(Self {
            _serving: link::serve(pdev),
            _devs: devs,
            _claim: claim,
        })
    }
}

struct RvtLoop {
    /// The link type and whatever link devices are left. Dropped first.
    _links: link::Links,
    /// The devices when no PCI device serves them (rdmavt-rs only).
    _soft: Option<Devices>,
    _pci: pci::Registration,
}

impl kernel::Module for RvtLoop {
    fn init(module: &'static ThisModule) -> Result<Self> {
        // A bad num_devs fails the load, not only the probe.
        device_count()?;
        // SAFETY: Once, here, before anything else of the module runs.
        let mut links = unsafe { link::Links::init(debugfs::Root::new(c"rvt_loop")?) };
        // PCI drivers probe synchronously during registration, so after this line `CLAIMED`
        // tells whether a pci-testdev took the devices.
        let pci = pci::Registration::new(module)?;
        let soft = if CLAIMED.load(Acquire) {
            None
        } else if soft_devices_ok() {
            let devs = Devices::new(core::ptr::null_mut())?;
            pr_info!("registered rvt_loop devices without a PCI device\n");
            Some(devs)
        } else {
            pr_err!(
                "no PCI device to bind (QEMU: -device pci-testdev), and the loaded rdmavt \
                 needs one: only rdmavt-rs takes devices without\n"
            );
            return Err(ENODEV);
        };
        // Last: a new link device may need the PCI device bound above.
        links.register()?;
        Ok(RvtLoop {
            _links: links,
            _soft: soft,
            _pci: pci,
        })
    }
}
