// SPDX-License-Identifier: GPL-2.0-only

//! `rvt_cq_enter`: how drivers and rdmavt add a completion, and the callback that follows.

use core::{mem::offset_of, ptr};

use crate::compat::atomic::Relaxed;

use super::{Cq, COMP_WQ};
use crate::{bindings, device::log::rvt_err_ratelimited, macros::c_export, trace};

/// `cq->notify` when no notification is armed.
pub(super) const NOTIFY_NONE: u8 = bindings::ib_cq_notify_flags::IB_CQ_NEXT_COMP.0 as u8 + 1;
const NEXT_COMP: u8 = bindings::ib_cq_notify_flags::IB_CQ_NEXT_COMP.0 as u8;
const SOLICITED: u8 = bindings::ib_cq_notify_flags::IB_CQ_SOLICITED.0 as u8;

/// Whether this completion fires the armed notification.
fn fires(notify: u8, solicited: bool, wc: &bindings::ib_wc) -> bool {
    notify == NEXT_COMP
        || (notify == SOLICITED
            && (solicited || wc.status != bindings::ib_wc_status::IB_WC_SUCCESS))
}

impl Cq {
    /// Adds `wc`; false if the ring is full, which is then reported as a CQ error.
    pub(super) fn enter(&self, wc: &bindings::ib_wc, solicited: bool) -> bool {
        let mut guard = self.lock();
        let ring = guard.ring();
        let last = guard.last_slot();
        // SAFETY: the ring is live and the lock held.
        let (head, tail) = unsafe { (ring.head(), ring.tail()) };
        // A head outside the ring (only user space can put one there) restarts at the end.
        let (head, next) = if head >= last {
            (last, 0)
        } else {
            (head, head + 1)
        };
        // SAFETY: `cq_full` is protected by the lock, held.
        let full = unsafe { &mut (*guard.cq).cq_full };
        if next == tail || *full != 0 {
            if *full == 0 {
                rvt_err_ratelimited!(self.device(), c"rvt_cq_enter", "CQ is full!\n");
            }
            *full = 1;
            drop(guard);
            self.report_overflow();
            return false;
        }
        // SAFETY: the CQ is live and `wc` a valid completion of a live QP (the driver's).
        unsafe { trace::rvt_cq_enter(self.as_raw(), ptr::from_ref(wc).cast_mut(), head) };
        // SAFETY: `head <= last` is a slot of the live ring; the lock is held; the driver
        // enters completions of live QPs.
        unsafe {
            ring.write(head, wc);
            ring.set(next, None);
        }
        if fires(guard.notify(), solicited, wc) {
            guard.set_notify(NOTIFY_NONE);
            self.schedule_callback();
        }
        true
    }

    /// Raises IB_EVENT_CQ_ERR with the CQ's event handler, if it has one.
    fn report_overflow(&self) {
        let ibcq = self.as_raw().cast::<bindings::ib_cq>();
        // SAFETY: the CQ is live; its handler and context are set at creation by ib_core.
        unsafe {
            if let Some(handler) = (*ibcq).event_handler {
                let mut ev: bindings::ib_event = core::mem::zeroed();
                ev.device = (*ibcq).device;
                ev.element.cq = ibcq;
                ev.event = bindings::ib_event_type::IB_EVENT_CQ_ERR;
                handler(&mut ev, (*ibcq).cq_context);
            }
        }
    }

    /// Queues the completion callback on the CQ's CPU; `triggered` lets a running callback
    /// see that another completion came in meanwhile.
    fn schedule_callback(&self) {
        let cq = self.as_raw();
        // SAFETY: called with the lock held (from `enter`); the work item was initialised at
        // creation and the workqueue lives as long as the module.
        unsafe {
            (*cq).triggered = (*cq).triggered.wrapping_add(1);
            bindings::queue_work_on(
                (*cq).comp_vector_cpu,
                COMP_WQ.load(Relaxed),
                &raw mut (*cq).comptask,
            );
        }
    }
}

/// Adds a completion to a CQ; false if it was full.
///
/// # Safety
///
/// `cq` is a live CQ of an rdmavt device and `entry` a valid completion of a live QP.
#[no_mangle]
pub(crate) unsafe extern "C" fn rvt_cq_enter(
    cq: *mut bindings::rvt_cq,
    entry: *mut bindings::ib_wc,
    solicited: bool,
) -> bool {
    // SAFETY: the caller guarantees both pointers.
    unsafe { Cq::from_ib(cq.cast()).enter(&*entry, solicited) }
}
c_export!(rvt_cq_enter);

/// The work item behind a notification: calls the CQ's completion handler until no new
/// notification fired while it ran.
///
/// # Safety
///
/// Only the workqueue calls this, for the `comptask` of a live CQ.
pub(super) unsafe extern "C" fn send_complete(work: *mut bindings::work_struct) {
    // SAFETY: the work item is the `comptask` member of a live `rvt_cq`: destroy_cq flushes
    // it before the CQ goes away.
    let cq =
        unsafe { work.byte_sub(offset_of!(bindings::rvt_cq, comptask)) }.cast::<bindings::rvt_cq>();
    loop {
        // SAFETY: `triggered` is a byte that `enter` bumps under the lock; an unlocked read
        // here may be stale, which only costs one more round, as in C.
        let triggered = unsafe { core::ptr::read_volatile(&raw const (*cq).triggered) };
        // The handler may be called from a softirq elsewhere (it is for hfi1's receive path),
        // and expects bottom halves off.
        // SAFETY: `ibcq.comp_handler` and `cq_context` are set by ib_core at creation.
        unsafe {
            bindings::rdmavt_rs_local_bh_disable();
            if let Some(handler) = (*cq).ibcq.comp_handler {
                handler(&raw mut (*cq).ibcq, (*cq).ibcq.cq_context);
            }
            bindings::rdmavt_rs_local_bh_enable();
        }
        // SAFETY: as above.
        if unsafe { core::ptr::read_volatile(&raw const (*cq).triggered) } == triggered {
            return;
        }
    }
}
