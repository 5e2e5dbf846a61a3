// SPDX-License-Identifier: GPL-2.0-only

//! The driver's callbacks (`struct rvt_driver_provided`, `rdi->driver_f`), as rdmavt calls
//! them: [`Driver`], one method per callback.
//!
//! This is the only code that touches the driver's function pointers. Each method takes typed
//! arguments (the [`Qp`], the [`Port`]) and, as proof arguments, the guards of the QP locks
//! the callback runs under in C (docs/callbacks.md, "locks held (C)"), which hfi1 asserts:
//! [`RecvGuard`] for `r_lock`, [`PostGuard`] for `s_hlock`, [`SendGuard`] for `s_lock` and
//! [`AllLocks`] for all three. A callback that must run with no QP lock held takes no guard
//! and says why.
//!
//! A driver leaves most callbacks NULL. An optional callback's method returns what its caller
//! needs when it is absent (a default, an `Option`, or whether it was called); a callback C
//! cannot do without returns `Err(EINVAL)` when it is absent, as rdmavt did before this layer
//! (registration checks those, see `has_*` and `check_support()`).
//!
//! What every `SAFETY` argument below relies on, besides what it says:
//! - the function pointer is the driver's, set before `rvt_register_device` and left alone
//!   while the device exists; the driver's module stays loaded until it has unregistered;
//! - the device pointer passed is the one whose table this is ([`Driver`]'s invariant), and a
//!   QP passed is a live QP of that device whose lock guards are its own
//!   ([`Driver::qp_callback`] checks both; a mismatch warns and the call is skipped).
//!
//! Most methods are safe: their types carry what the driver assumes. `unsafe` are the ones
//! that pass ib_core's objects through untyped (`udata`, a user context, a VMA, a send WQE)
//! and the two whose precondition is a step of the QP's life that no type tracks
//! (`qp_priv_init` after `qp_priv_alloc`, `qp_priv_free` once at the end).

use core::ptr;

use kernel::{error::to_result, ffi::c_int, prelude::*, types::Opaque};

mod qp;

use super::{Device, Port};
use crate::{
    bindings,
    compat::container_of,
    qp::{AllLocks, Locked, Qp},
};

/// The driver's callbacks of one device.
///
/// # Invariants
///
/// The wrapped table is the `driver_f` member of a live `rvt_dev_info`: only
/// [`Device::driver`] makes a `&Driver`.
#[repr(transparent)]
pub(crate) struct Driver(Opaque<bindings::rvt_driver_provided>);

impl Device {
    /// The driver's callbacks.
    pub(crate) fn driver(&self) -> &Driver {
        // SAFETY: the device is live (type invariant) and `Driver` is a transparent wrapper of
        // `rvt_driver_provided`.
        // INVARIANT: the reference is to this live device's `driver_f`.
        unsafe { &*(&raw mut (*self.as_raw()).driver_f).cast::<Driver>() }
    }
}

/// Generates `has_<callback>()`: whether the driver set the callback, for the checks at
/// registration.
macro_rules! has {
    ($($callback:ident),* $(,)?) => {
        ::kernel::macros::paste! {
            impl Driver {
                $(
                    #[doc = concat!("Whether the driver has `", stringify!($callback), "`.")]
                    pub(crate) fn [<has_ $callback>](&self) -> bool {
                        self.table().$callback.is_some()
                    }
                )*
            }
        }
    };
}

has! {
    get_pci_dev,
    query_port_state,
    cap_mask_chg,
    shut_down_port,
    get_guid_be,
    free_all_qps,
    qp_priv_alloc,
    qp_priv_free,
    notify_qp_reset,
    flush_qp_waiters,
    stop_send_queue,
    quiesce_qp,
    notify_restart_rc,
    get_pmtu_from_attr,
    notify_error_qp,
    mtu_from_qp,
    mtu_to_path_mtu,
    schedule_send,
    do_send,
}

// The table, the device it belongs to, and the check that a QP is that device's.
impl Driver {
    fn table(&self) -> &bindings::rvt_driver_provided {
        // SAFETY: the table is part of a live device (type invariant); the driver fills it in
        // before registering and does not change it after (rdma_vt.h), and rdmavt never
        // writes it.
        unsafe { &*self.0.get() }
    }

    /// The device whose table this is, as the callbacks take it.
    fn rdi(&self) -> *mut bindings::rvt_dev_info {
        // SAFETY: the table is the `driver_f` member of an `rvt_dev_info` (type invariant), so
        // stepping back by that member's offset stays within the device.
        unsafe { container_of!(self.0.get(), bindings::rvt_dev_info, driver_f) }
    }

    fn device(&self) -> &Device {
        // SAFETY: a live device (type invariant), alive as long as its table is.
        unsafe { Device::from_raw(self.rdi()) }
    }

    /// `callback` if the driver set it, `qp` is a QP of this device, and every lock in `held`
    /// (the QPs of the guards given as proof) is `qp`'s: the conditions each QP callback's
    /// `SAFETY` argument starts from. A mismatch is a bug in rdmavt: it warns, and the callback
    /// is treated as absent.
    fn qp_callback<F>(
        &self,
        callback: Option<F>,
        qp: &Qp,
        held: &[*mut bindings::rvt_qp],
    ) -> Option<F> {
        let callback = callback?;
        let mine = ptr::eq(qp.device().as_raw(), self.rdi())
            && held.iter().all(|&locked| ptr::eq(locked, qp.as_raw()));
        if crate::compat::warn_on!(!mine) {
            return None;
        }
        Some(callback)
    }
}

impl Driver {
    /// Whether `port_num` (1-based) is a port of this device: hfi1 and qib index their port
    /// arrays with the number the port callbacks get. The callers checked it already.
    fn is_port(&self, port_num: u32) -> bool {
        self.device().port(port_num).is_ok()
    }

    /// [`Driver::is_port`] for a 0-based port index, as the MAD agent callbacks take it.
    fn is_port_index(&self, port_idx: c_int) -> bool {
        u32::try_from(port_idx).is_ok_and(|i| self.is_port(i + 1))
    }
}

/// The QPs of all three guards.
fn all_three(locks: &AllLocks<'_>) -> [*mut bindings::rvt_qp; 3] {
    [locks.r.qp_ptr(), locks.h.qp_ptr(), locks.s.qp_ptr()]
}

// The device and its ports: ib_core's device verbs, with no rdmavt lock held.
impl Driver {
    /// `get_pci_dev`: the PCI device the driver's device is, which rdmavt's log messages
    /// name ([`super::log`]); `None` if the driver has no callback or it returns NULL
    /// (rvt_loop without a PCI device).
    pub(crate) fn pci_dev(&self) -> Option<*mut bindings::pci_dev> {
        let get = self.table().get_pci_dev?;
        // SAFETY: the device's own pointer; the callback only reads the driver's data.
        let pdev = unsafe { get(self.rdi()) };
        (!pdev.is_null()).then_some(pdev)
    }

    /// `query_port_state`, after rdmavt filled in its part of `props`: the driver adds the
    /// link's state. Required (-EINVAL without it).
    pub(crate) fn query_port_state(
        &self,
        port_num: u32,
        props: &mut bindings::ib_port_attr,
    ) -> Result {
        let query = self.table().query_port_state.ok_or(EINVAL)?;
        if !self.is_port(port_num) {
            return Err(EINVAL);
        }
        // SAFETY: the device's own pointer and one of its ports; `props` is a valid attribute
        // struct for the call; ib_core's `query_port` verb, as C calls it (no lock held).
        to_result(unsafe { query(self.rdi(), port_num, props) })
    }

    /// `get_guid_be`: the interface id of GID `index` of `port`, into `guid`. Required
    /// (-EINVAL without it).
    pub(crate) fn get_guid_be(
        &self,
        port: &Port,
        index: c_int,
        guid: &mut bindings::__be64,
    ) -> Result {
        let get = self.table().get_guid_be.ok_or(EINVAL)?;
        // SAFETY: the device's own pointer and one of its ports (`Device::port` gives only
        // those); `guid` is valid for writes; ib_core's `query_gid` verb, as C calls it.
        to_result(unsafe { get(self.rdi(), port.as_raw(), index, guid) })
    }

    /// `cap_mask_chg`: the port's capability mask changed; nothing when absent.
    pub(crate) fn cap_mask_chg(&self, port_num: u32) {
        let Some(chg) = self.table().cap_mask_chg else {
            return;
        };
        if self.is_port(port_num) {
            // SAFETY: the device's own pointer and one of its ports; ib_core's `modify_port`
            // verb, as C calls it.
            unsafe { chg(self.rdi(), port_num) };
        }
    }

    /// `shut_down_port`: what the driver returns, passed on to ib_core unchanged as C does;
    /// 0 when it has none.
    pub(crate) fn shut_down_port(&self, port_num: u32) -> c_int {
        match self.table().shut_down_port {
            None => 0,
            Some(_) if !self.is_port(port_num) => EINVAL.to_errno(),
            // SAFETY: the device's own pointer and one of its ports; ib_core's `modify_port`
            // verb, as C calls it.
            Some(shut_down) => unsafe { shut_down(self.rdi(), port_num) },
        }
    }

    /// `comp_vect_cpu_lookup`: the CPU of completion vector `vector`, if the driver says.
    pub(crate) fn comp_vect_cpu_lookup(&self, vector: c_int) -> Option<c_int> {
        let lookup = self.table().comp_vect_cpu_lookup?;
        // SAFETY: the device's own pointer; `create_cq`, as C calls it (no lock held).
        Some(unsafe { lookup(self.rdi(), vector) })
    }

    /// `notify_create_mad_agent`: port `port_idx` (0-based) got its MAD agent.
    pub(crate) fn notify_create_mad_agent(&self, port_idx: c_int) {
        let Some(notify) = self.table().notify_create_mad_agent else {
            return;
        };
        if self.is_port_index(port_idx) {
            // SAFETY: the device's own pointer and one of its port indices; device
            // registration, as C calls it (no lock held).
            unsafe { notify(self.rdi(), port_idx) };
        }
    }

    /// `notify_free_mad_agent`: port `port_idx` (0-based) lost its MAD agent.
    pub(crate) fn notify_free_mad_agent(&self, port_idx: c_int) {
        let Some(notify) = self.table().notify_free_mad_agent else {
            return;
        };
        if self.is_port_index(port_idx) {
            // SAFETY: the device's own pointer and one of its port indices; device
            // (un)registration, as C calls it (no lock held).
            unsafe { notify(self.rdi(), port_idx) };
        }
    }
}

// User contexts and the driver's mmap range: ib_core's objects, passed through.
impl Driver {
    /// `alloc_ucontext`: what the driver returns, passed on to ib_core unchanged as C does; 0
    /// when it has none.
    ///
    /// # Safety
    ///
    /// `uctx` and `udata` are what ib_core passed to the `alloc_ucontext` verb of this device.
    pub(crate) unsafe fn alloc_ucontext(
        &self,
        uctx: *mut bindings::ib_ucontext,
        udata: *mut bindings::ib_udata,
    ) -> c_int {
        // 6.12's table has no user-context callbacks (hfi1 moved its user contexts into them
        // after 6.12): there is never one to call.
        #[cfg(not(rdmavt_kernel_6_12))]
        if let Some(alloc) = self.table().alloc_ucontext {
            // SAFETY: ib_core's objects of this device (caller's guarantee), from its verb, as
            // C calls it.
            return unsafe { alloc(uctx, udata) };
        }
        let _ = (uctx, udata);
        0
    }

    /// `dealloc_ucontext`; nothing when absent.
    ///
    /// # Safety
    ///
    /// `uctx` is what ib_core passed to the `dealloc_ucontext` verb of this device.
    pub(crate) unsafe fn dealloc_ucontext(&self, uctx: *mut bindings::ib_ucontext) {
        #[cfg(not(rdmavt_kernel_6_12))]
        if let Some(dealloc) = self.table().dealloc_ucontext {
            // SAFETY: ib_core's context of this device (caller's guarantee), from its verb, as
            // C calls it.
            unsafe { dealloc(uctx) };
        }
        let _ = uctx;
    }

    /// `mmap` of an offset in the driver's own range: what the driver returns, passed on
    /// unchanged as C does; -EINVAL when it has none.
    ///
    /// # Safety
    ///
    /// `context` and `vma` are what ib_core passed to the `mmap` verb of this device.
    pub(crate) unsafe fn mmap(
        &self,
        context: *mut bindings::ib_ucontext,
        vma: *mut bindings::vm_area_struct,
    ) -> c_int {
        #[cfg(not(rdmavt_kernel_6_12))]
        if let Some(mmap) = self.table().mmap {
            // SAFETY: ib_core's objects of this device (caller's guarantee), from its verb
            // with the mm's `mmap_lock` held, as C calls it.
            return unsafe { mmap(context, vma) };
        }
        let _ = (context, vma);
        EINVAL.to_errno()
    }
}

// Address handles. `check_ah` takes no lock guard: `rvt_check_ah()` is exported, and hfi1
// calls it under locks of its own, while rdmavt calls it with none (the AH verbs) or with
// all three of a QP's (modify_qp).
impl Driver {
    /// `check_ah`: the driver's check of AH attributes that passed rdmavt's; `Ok` when it has
    /// none.
    pub(crate) fn check_ah(&self, attr: &mut bindings::rdma_ah_attr) -> Result {
        let Some(check) = self.table().check_ah else {
            return Ok(());
        };
        // SAFETY: this device's `ib_device` and valid attributes, as C calls it.
        to_result(unsafe { check(&raw mut (*self.rdi()).ibdev, attr) })
    }

    /// `notify_new_ah`: `ah` was created with `attr`; nothing when absent.
    pub(crate) fn notify_new_ah(
        &self,
        attr: &mut bindings::rdma_ah_attr,
        ah: &mut bindings::rvt_ah,
    ) {
        if let Some(notify) = self.table().notify_new_ah {
            // SAFETY: this device's `ib_device`, valid attributes and a new AH of it, from the
            // `create_ah` verb with no lock held, as C calls it.
            unsafe { notify(&raw mut (*self.rdi()).ibdev, attr, ah) };
        }
    }
}
