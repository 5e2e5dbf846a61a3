// SPDX-License-Identifier: GPL-2.0-only

//! Devices made and removed at run time, as rxe's are: `rdma link add NAME type rvt_loop
//! netdev lo` registers one under NAME, `rdma link delete NAME` removes it, and rvt_loop's
//! unload removes whatever is left. The netdev must be a loopback device: rvt_loop sends
//! nothing through it, and the argument is there because `rdma link add` requires one.
//!
//! # How a link device goes
//!
//! `rdma link delete` is ib_core's own unregistration (nldev_dellink()): it calls the link
//! type's `dellink`, then unregisters the device itself with `ib_unregister_device_and_put()`
//! and has the driver free it through `ib_device_ops::dealloc_driver`, under the device's
//! unregistration lock. The rdmavt API has no such flow: `rvt_unregister_device()` frees the
//! MAD agents, which must happen before ib_core's unregistration (ib_mad frees the port an
//! agent points into), then calls `ib_unregister_device()`, then frees rdmavt's tables, which
//! must happen after. Called from `dellink` it would wait forever for the device reference
//! nldev holds across the call; from `dealloc_driver`, for the lock ib_core holds. So a link
//! device goes in three steps, the same from `rdma link delete` and from unload:
//!
//! 1. `dellink` (or unload): the debugfs directory and the MAD agent go ([`Deletion`]).
//! 2. ib_core unregisters the device: user contexts are disassociated (their objects
//!    destroyed, later verbs fail with EIO), the kernel clients leave, and `dealloc_driver`
//!    queues the last step on rvt_loop's workqueue.
//! 3. [`Finish`]: `rvt_unregister_device()`, whose call into ib_core now returns at once,
//!    frees rdmavt's tables ([`LoopDev::release_unregistered`]); the device's entry and the
//!    references it held go last.
//!
//! Unload waits for every step 3 by destroying the workqueue.
//!
//! # Which devices
//!
//! Only link devices can be deleted (`IBK_ALLOW_USER_UNREG`); ib_core refuses `rdma link
//! delete` of the `num_devs` devices with EINVAL. Link devices take units from [`FIRST_UNIT`]
//! on, so their LIDs and GUIDs never equal those of the `num_devs` devices. On the C rdmavt,
//! whose log macros dereference the driver's PCI device, a link device is served by the
//! pci-testdev that rvt_loop has bound (and holds a reference to it); without one, only
//! rdmavt-rs takes it.

use crate::{
    bindings,
    debugfs::{self, QpStats},
    device::{Finish, LoopDev, Origin},
    register,
};
use core::ptr::{self, NonNull};
// 6.12's `KVec` has no `push_within_capacity` or `remove`.
#[cfg(rdmavt_kernel_6_12)]
use crate::compat::KVecExt;
use kernel::{
    error::from_result,
    ffi::{c_char, c_int},
    prelude::*,
    workqueue::WorkItem,
};

extern "C" {
    fn rvt_loop_link_register();
    fn rvt_loop_link_unregister();
    fn rvt_loop_link_wq_alloc() -> *mut kernel::bindings::workqueue_struct;
}

/// The first unit of a link device: those below belong to the `num_devs` devices.
const FIRST_UNIT: u32 = crate::MAX_DEVS;

/// How many link devices may exist at once.
const MAX_LINKS: u32 = 64;

/// A reference to a PCI device, or none (null).
struct Parent(*mut bindings::pci_dev);

impl Parent {
    /// Takes a reference to `pdev`, if there is one.
    fn get(pdev: *mut bindings::pci_dev) -> Self {
        // SAFETY: A non-null `pdev` is the bound PCI device, alive while it is bound, which
        // it is while `Shared::parent` holds it (the caller holds the lock).
        Self(unsafe { bindings::pci_dev_get(pdev) })
    }
}

impl Drop for Parent {
    fn drop(&mut self) {
        // SAFETY: Balances `get()`; pci_dev_put() takes NULL.
        unsafe { bindings::pci_dev_put(self.0) };
    }
}

/// A reference to the `struct device` of a link device: it keeps the memory of the
/// `LoopDev` after ib_core's unregistration, until the last step is done.
///
/// # Invariants
///
/// `self.0` is a `LoopDev` whose `struct device` this holds a reference to.
struct DevRef(NonNull<LoopDev>);

impl DevRef {
    /// # Safety
    ///
    /// `dev` is a live `LoopDev`, allocated by rdmavt.
    unsafe fn get(dev: NonNull<LoopDev>) -> Self {
        // SAFETY: The caller guarantees that `dev` is live; its device is initialised.
        unsafe { kernel::bindings::get_device(device_of(dev)) };
        // INVARIANT: the reference was just taken.
        Self(dev)
    }
}

impl Drop for DevRef {
    fn drop(&mut self) {
        // SAFETY: By the type invariants we hold a reference; after the last one the memory
        // goes (ib_device_release()), and nothing of ours uses it any more.
        unsafe { kernel::bindings::put_device(device_of(self.0)) };
    }
}

/// The `struct device` of the `ib_device` at the head of `dev`.
fn device_of(dev: NonNull<LoopDev>) -> *mut kernel::bindings::device {
    let ibdev = dev.as_ptr().cast::<bindings::ib_device>();
    // SAFETY: Only the address of a field is computed; `dev` begins with its `ib_device`.
    unsafe { (&raw mut (*ibdev).__bindgen_anon_1.dev).cast() }
}

/// A link device, from its registration until its last step.
struct LinkDev {
    dev: DevRef,
    /// `<debugfs>/rvt_loop/<name>/`: goes in the first step.
    debugfs: Option<QpStats>,
    /// The PCI device rdmavt prints through, or none (rdmavt-rs without one).
    _parent: Parent,
    unit: u32,
    /// The first step has been taken, by `dellink` or by unload.
    deleting: bool,
    /// Unload has unregistered it.
    unloaded: bool,
}

/// The first step of a link device's removal, taken once.
struct Deletion {
    dev: NonNull<LoopDev>,
    debugfs: Option<QpStats>,
}

impl Deletion {
    /// Removes the debugfs directory (waiting for its readers), then the MAD agent.
    ///
    /// # Safety
    ///
    /// The device is still registered, and its [`DevRef`] keeps it alive.
    unsafe fn run(self) {
        drop(self.debugfs);
        // SAFETY: Registered (the caller's guarantee) and taken once: `LinkDev::deleting`.
        unsafe { self.dev.as_ref().free_mad_agent() };
    }
}

impl LinkDev {
    /// The first step, unless someone has taken it already.
    fn take_deletion(&mut self) -> Option<Deletion> {
        if self.deleting {
            return None;
        }
        self.deleting = true;
        Some(Deletion {
            dev: self.dev.0,
            debugfs: self.debugfs.take(),
        })
    }
}

/// What the link devices share with the rest of rvt_loop.
pub(crate) struct Shared {
    /// The debugfs directory `rvt_loop`, under which every device has its own.
    root: Option<debugfs::Root>,
    /// The PCI device rvt_loop has bound, if any.
    parent: *mut bindings::pci_dev,
    links: KVec<LinkDev>,
    /// The queue of the last steps, while the link type is registered.
    wq: Option<NonNull<kernel::bindings::workqueue_struct>>,
}

// SAFETY: The raw pointers are a PCI device and a workqueue that any thread may use, and
// devices whose references the entries hold.
unsafe impl Send for Shared {}

crate::compat::global_lock! {
    // SAFETY: `Links::init()` initialises it in the module initialiser, before any use.
    unsafe(uninit) static SHARED: Mutex<Shared> = Shared {
        root: None,
        parent: ptr::null_mut(),
        links: KVec::new(),
        wq: None,
    };
}

impl Shared {
    /// The lowest unit no link device has.
    fn free_unit(&self) -> Option<u32> {
        (FIRST_UNIT..FIRST_UNIT + MAX_LINKS).find(|u| self.links.iter().all(|l| l.unit != *u))
    }

    /// The PCI device a new link device prints through: the bound one; none on rdmavt-rs
    /// without one; ENODEV on the C rdmavt without one.
    fn parent_for_link(&self) -> Result<Parent> {
        if !self.parent.is_null() || crate::soft_devices_ok() {
            return Ok(Parent::get(self.parent));
        }
        pr_err!(
            "rdma link add: no PCI device bound (QEMU: -device pci-testdev), and the loaded \
             rdmavt needs one: only rdmavt-rs takes devices without\n"
        );
        Err(ENODEV)
    }

    fn find(&mut self, dev: *const LoopDev) -> Option<usize> {
        self.links
            .iter()
            .position(|l| ptr::eq(l.dev.0.as_ptr(), dev))
    }
}

/// The debugfs directory `rvt_loop`, for the `num_devs` devices.
pub(crate) fn debugfs_root() -> Result<debugfs::Root> {
    SHARED.lock().root.clone().ok_or(ENODEV)
}

/// The PCI device rvt_loop has bound, for link devices to print through, while this lives.
pub(crate) struct Serving(());

/// Lends the bound `pdev` (null: none) to link devices made from now on, until the result
/// is dropped; link devices hold their own reference to it.
pub(crate) fn serve(pdev: *mut bindings::pci_dev) -> Serving {
    SHARED.lock().parent = pdev;
    Serving(())
}

impl Drop for Serving {
    fn drop(&mut self) {
        SHARED.lock().parent = ptr::null_mut();
    }
}

/// The last step of a link device, once `dealloc_driver` has queued it: the device's entry
/// goes with it.
impl WorkItem for Finish {
    type Pointer = Pin<KBox<Self>>;

    fn run(this: Pin<KBox<Self>>) {
        let dev = this.dev();
        drop(this);
        // SAFETY: `dealloc_driver` queued us: ib_core has unregistered the device, and the
        // first step has been taken (by `dellink` or unload, before unregistering). The
        // device's entry holds a reference to it until below.
        unsafe { LoopDev::release_unregistered(dev) };
        let link = {
            let mut shared = SHARED.lock();
            shared.find(dev.as_ptr()).map(|i| shared.links.remove(i))
        };
        // The device's memory goes here, with the entry's reference, or later with
        // ib_core's last one.
        drop(link);
    }
}

/// `rdma_link_ops::newlink`: registers an rvt_loop device named `ibdev_name`.
///
/// # Safety
///
/// `ibdev_name` is a NUL-terminated string and `ndev` a net device, both valid for the call.
#[no_mangle]
unsafe extern "C" fn rvt_loop_newlink(
    ibdev_name: *const c_char,
    ndev: *mut bindings::net_device,
) -> c_int {
    // SAFETY: The caller's guarantee.
    let (name, flags) = unsafe { (CStr::from_char_ptr(ibdev_name), (*ndev).flags) };
    from_result(|| {
        if flags & kernel::bindings::net_device_flags_IFF_LOOPBACK == 0 {
            pr_err!("rdma link add {name}: rvt_loop devices go on a loopback netdev (lo)\n");
            return Err(EINVAL);
        }
        new_link(name).map(|()| 0)
    })
}

/// Registers the link device `name` and records it.
fn new_link(name: &CStr) -> Result {
    // Held throughout: a `dellink` of the new device waits for its entry.
    let mut shared = SHARED.lock();
    let wq = shared.wq.ok_or(ENODEV)?;
    let unit = shared.free_unit().ok_or(ENOSPC)?;
    let parent = shared.parent_for_link()?;
    let root = shared.root.clone().ok_or(ENODEV)?;
    // Nothing may fail once the device is registered.
    shared.links.reserve(1, GFP_KERNEL)?;
    let dev = register::create(unit, parent.0, &Origin::Link { name, wq })?;
    // SAFETY: Registered just now; the user's delete waits for the lock we hold.
    let dev_ref = unsafe { DevRef::get(dev) };
    // SAFETY: The device stays registered until the first step, which drops the directory.
    let debugfs = unsafe { debugfs::qp_stats(&root, name, dev.cast()) };
    let link = LinkDev {
        dev: dev_ref,
        // A device without its debugfs directory works all the same.
        debugfs: debugfs.ok(),
        _parent: parent,
        unit,
        deleting: false,
        unloaded: false,
    };
    if shared.links.push_within_capacity(link).is_err() {
        // Cannot happen: reserved above.
        pr_err!("rdma link add {name}: lost its entry\n");
    }
    Ok(())
}

/// `rdma_link_ops::dellink`: the first step of the device's removal; ib_core unregisters it
/// when we return. Always 0: nldev_dellink() would keep its device reference on an error,
/// and the device could then never be unregistered.
///
/// # Safety
///
/// `ibdev` is a registered link device (ib_core calls this only for devices whose
/// `link_ops` are ours), on which the caller holds a reference.
#[no_mangle]
unsafe extern "C" fn rvt_loop_dellink(ibdev: *mut bindings::ib_device) -> c_int {
    let deletion = {
        let mut shared = SHARED.lock();
        shared
            .find(ibdev.cast())
            .and_then(|i| shared.links[i].take_deletion())
    };
    if let Some(deletion) = deletion {
        // SAFETY: Still registered (ib_core unregisters it after we return); the caller's
        // reference keeps it.
        unsafe { deletion.run() };
    }
    0
}

/// The link type's registration, and the removal of every link device at unload.
pub(crate) struct Links {
    registered: bool,
}

impl Links {
    /// Sets up what the devices share, with `root` as the debugfs directory of all.
    ///
    /// # Safety
    ///
    /// Called once, from the module initialiser, before anything else of this module.
    pub(crate) unsafe fn init(root: debugfs::Root) -> Self {
        // SAFETY: The caller's guarantee: once, before any use.
        unsafe { SHARED.init() };
        SHARED.lock().root = Some(root);
        Links { registered: false }
    }

    /// Registers the link type `rvt_loop`: `rdma link add` works from now on.
    pub(crate) fn register(&mut self) -> Result {
        // SAFETY: A plain allocation; destroyed in `drop()`.
        let wq = NonNull::new(unsafe { rvt_loop_link_wq_alloc() }).ok_or(ENOMEM)?;
        SHARED.lock().wq = Some(wq);
        // SAFETY: The glue's static table; unregistered in `drop()`.
        unsafe { rvt_loop_link_register() };
        self.registered = true;
        Ok(())
    }

    /// The next link device for unload to unregister, with a reference of its own and the
    /// first step of its removal if nobody has taken it yet.
    fn next_to_unload() -> Option<(DevRef, Option<Deletion>)> {
        let mut shared = SHARED.lock();
        let link = shared.links.iter_mut().find(|l| !l.unloaded)?;
        link.unloaded = true;
        // SAFETY: The entry's reference keeps the device alive.
        let dev = unsafe { DevRef::get(link.dev.0) };
        Some((dev, link.take_deletion()))
    }
}

impl Drop for Links {
    fn drop(&mut self) {
        if self.registered {
            // SAFETY: Registered in `register()`. Waits for `newlink` calls in progress;
            // none comes after.
            unsafe { rvt_loop_link_unregister() };
            while let Some((dev, deletion)) = Self::next_to_unload() {
                if let Some(deletion) = deletion {
                    // SAFETY: Registered until the call below; `dev` keeps it.
                    unsafe { deletion.run() };
                }
                // SAFETY: `dev` keeps the device alive. Unregistration is fenced: if a
                // `rdma link delete` is unregistering it too, this returns once that is done,
                // and `dealloc_driver` has queued the last step either way.
                unsafe { bindings::ib_unregister_device(dev.0.as_ptr().cast()) };
            }
            // Not under the lock: the last steps take it.
            let wq = SHARED.lock().wq.take();
            if let Some(wq) = wq {
                // SAFETY: Allocated in `register()`; runs the queued last steps first, and
                // every link device has queued its own by now.
                unsafe { kernel::bindings::destroy_workqueue(wq.as_ptr()) };
            }
            let left = SHARED.lock().links.len();
            if left != 0 {
                pr_err!("{left} link devices left at unload\n");
            }
        }
        // The static goes with the module's memory without being dropped: what it owns is
        // dropped here (the list's buffer; the debugfs directory, once the last device's
        // clone is gone).
        let (links, root) = {
            let mut shared = SHARED.lock();
            (core::mem::take(&mut shared.links), shared.root.take())
        };
        drop((links, root));
    }
}
