// SPDX-License-Identifier: GPL-2.0-only

//! Completion queues: `struct rvt_cq`, its ring, and the completion callbacks.
//!
//! Lock order: a CQ's `lock` is taken inside a QP's `s_lock`/`r_lock` (completions are
//! entered while a QP lock is held) and never the other way round; `rdi->n_cqs_lock` and
//! `rdi->pending_lock` are leaf locks.

mod enter;
mod ring;
mod verbs;
mod wc;

#[cfg(not(rdmavt_kernel_6_12))]
pub(crate) use verbs::resize_cq;
#[cfg(rdmavt_kernel_6_12)]
pub(crate) use verbs::resize_cq_signed;
pub(crate) use verbs::{create_cq, destroy_cq, poll_cq, req_notify_cq};
pub(crate) use wc::{RecvExtra, Wc, WcOpcode};

/// A work completion's status (`IB_WC_*`), bindgen's newtype over C's `enum ib_wc_status`.
pub(crate) use crate::bindings::ib_wc_status as WcStatus;

use core::ptr;

use kernel::{prelude::*, types::Opaque};

use crate::compat::{
    atomic::{Atomic, Relaxed},
    lock::{Guard, SpinLockIrqBackend},
};

use crate::{bindings, device::Device, lock::c_lock};
use ring::Ring;

/// The workqueue completion callbacks run on, created with the module.
static COMP_WQ: Atomic<*mut bindings::workqueue_struct> = Atomic::new(ptr::null_mut());

/// Creates the completion workqueue; called once from module init.
pub(crate) fn init() -> Result {
    // SAFETY: allocating a workqueue has no preconditions.
    let wq = unsafe { bindings::rdmavt_rs_alloc_cq_workqueue() };
    if wq.is_null() {
        pr_err!("Error in driver CQ init.\n");
        return Err(ENOMEM);
    }
    COMP_WQ.store(wq, Relaxed);
    Ok(())
}

/// The module's workqueue, for work that must be done before the module goes (a QP's deferred
/// error, `qp/complete.rs`): `exit` flushes it. Null before `init` and after `exit`.
pub(crate) fn module_wq() -> *mut bindings::workqueue_struct {
    COMP_WQ.load(Relaxed)
}

/// Destroys the completion workqueue; called once from module exit, after every device is
/// gone (each holds a reference on the module).
pub(crate) fn exit() {
    let wq = COMP_WQ.xchg(ptr::null_mut(), Relaxed);
    if !wq.is_null() {
        // SAFETY: created by `init`, and no CQ is left to queue work on it.
        unsafe { bindings::destroy_workqueue(wq) };
    }
}

/// A completion queue of one of our devices.
///
/// # Invariants
///
/// Wraps a live `rvt_cq` created by [`create_cq`] (so its lock is initialised).
#[repr(transparent)]
pub(crate) struct Cq(Opaque<bindings::rvt_cq>);

impl Cq {
    /// # Safety
    ///
    /// `ibcq` is the head of a live `rvt_cq` that `create_cq` set up, alive for `'a`.
    pub(crate) unsafe fn from_ib<'a>(ibcq: *mut bindings::ib_cq) -> &'a Self {
        // SAFETY: `ibcq` is the first member of `rvt_cq` (checked in device/ops.rs), and the
        // caller guarantees the rest.
        unsafe { &*ibcq.cast::<Self>() }
    }

    fn as_raw(&self) -> *mut bindings::rvt_cq {
        self.0.get()
    }

    /// The device the CQ belongs to.
    fn device(&self) -> &Device {
        // SAFETY: `rdi` is set at creation and not changed; the device outlives its CQs.
        unsafe { Device::from_raw((*self.as_raw()).rdi) }
    }

    /// Takes the CQ's lock.
    fn lock(&self) -> CqGuard<'_> {
        let cq = self.as_raw();
        // SAFETY: the lock was initialised by `create_cq` and lives with the CQ (type
        // invariant).
        let lock = unsafe { c_lock::<SpinLockIrqBackend>(&raw mut (*cq).lock) };
        CqGuard {
            _guard: lock.lock(),
            cq,
        }
    }
}

/// The CQ's lock held: access to what it protects (notification state and the ring).
struct CqGuard<'a> {
    _guard: Guard<'a, (), SpinLockIrqBackend>,
    cq: *mut bindings::rvt_cq,
}

impl CqGuard<'_> {
    fn ring(&self) -> Ring {
        // SAFETY: `queue`/`kqueue`/`ip` change only under the lock, which we hold.
        unsafe {
            if (*self.cq).ip.is_null() {
                Ring::Kernel((*self.cq).kqueue)
            } else {
                Ring::User((*self.cq).queue)
            }
        }
    }

    /// The largest valid slot index (`cqe`: the ring has `cqe + 1` slots).
    fn last_slot(&self) -> u32 {
        // SAFETY: `ibcq.cqe` changes only in resize, under the lock.
        unsafe { (*self.cq).ibcq.cqe as u32 }
    }

    fn notify(&self) -> u8 {
        // SAFETY: protected by the lock, which we hold.
        unsafe { (*self.cq).notify }
    }

    fn set_notify(&mut self, notify: u8) {
        // SAFETY: protected by the lock, which we hold.
        unsafe { (*self.cq).notify = notify };
    }
}
