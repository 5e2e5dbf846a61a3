// SPDX-License-Identifier: GPL-2.0-only

//! The RC requester's timers: the retry timer (`s_timer`, a timer_list armed for a missing
//! ACK) and the RNR timer (`s_rnr_timer`, an hrtimer armed after an RNR NAK). Both only ask
//! the driver to run its send engine again; arming and disarming happen under `s_lock`, which
//! also guards the `RVT_S_TIMER` and `RVT_S_WAIT_RNR` flags that say whether each is armed.

use kernel::ffi::c_ulong;

use crate::compat::container_of;

use super::{Locked, Qp, SendGuard};
use crate::{bindings, macros::c_export, trace};

/// `ib_rvt_rnr_table`: the RNR NAK timer field's encoding (IBTA 9.7.5.2.8), in microseconds.
const RNR_TABLE_US: [u32; 32] = [
    655360, 10, 20, 30, 40, 60, 80, 120, 160, 240, 320, 480, 640, 960, 1280, 1920, 2560, 3840,
    5120, 7680, 10240, 15360, 20480, 30720, 40960, 61440, 81920, 122880, 163840, 245760, 327680,
    491520,
];

/// Where the 5-bit credit/timer field sits in an AETH (`IB_AETH_CREDIT_SHIFT`/`_MASK`).
const AETH_CREDIT_SHIFT: u32 = 24;
const AETH_CREDIT_MASK: u32 = 0x1f;

/// Sets up the QP's retry timer and RNR hrtimer, unarmed.
///
/// # Safety
///
/// `qp` is a QP being created, used by nobody else.
pub(crate) unsafe fn init(qp: *mut bindings::rvt_qp) {
    // SAFETY: the caller owns `qp`; both callbacks take the timers embedded in a QP.
    unsafe { bindings::rdmavt_rs_qp_timers_setup(qp, Some(rc_timeout), Some(rvt_rc_rnr_retry)) };
}

/// `rvt_rnr_tbl_to_usec`: the RNR timeout encoded as `index` (its low 5 bits), in
/// microseconds.
#[no_mangle]
pub(crate) extern "C" fn rvt_rnr_tbl_to_usec(index: u32) -> c_ulong {
    RNR_TABLE_US[(index & AETH_CREDIT_MASK) as usize] as c_ulong
}
c_export!(rvt_rnr_tbl_to_usec);

impl SendGuard<'_> {
    /// Arms the retry timer: `busy_jiffies` plus the QP's local ACK timeout, shifted left by
    /// `shift` to wait for several packets.
    pub(crate) fn add_retry_timer(&mut self, shift: u8) {
        // SAFETY: `busy_jiffies` is set by the driver before registration and fixed.
        let busy = unsafe { (*self.qp().device().as_raw()).busy_jiffies } as c_ulong;
        self.set_flags(bindings::RVT_S_TIMER);
        let delta = busy + (self.timeout_jiffies() << shift);
        // SAFETY: `s_lock` is held, which serialises arming with `stop_timers`; the timer
        // was set up at creation.
        unsafe { bindings::rdmavt_rs_add_timer_after(self.qp().s_timer(), delta) };
    }

    /// Arms the RNR timer with the timeout that the AETH `aeth` carries.
    pub(crate) fn add_rnr_timer(&mut self, aeth: u32) {
        let usecs = RNR_TABLE_US[((aeth >> AETH_CREDIT_SHIFT) & AETH_CREDIT_MASK) as usize];
        self.set_flags(bindings::RVT_S_WAIT_RNR);
        trace::rnrnak_add(self.qp(), usecs);
        // SAFETY: `s_lock` is held; the hrtimer was set up at creation.
        unsafe { bindings::rdmavt_rs_hrtimer_start_us(self.qp().s_rnr_timer(), usecs) };
    }

    /// Disarms both timers if either is armed, without waiting for a running callback (which
    /// finds its flag clear and does nothing).
    pub(crate) fn stop_timers(&mut self) {
        let armed = bindings::RVT_S_TIMER | bindings::RVT_S_WAIT_RNR;
        if self.flags() & armed == 0 {
            return;
        }
        self.clear_flags(armed);
        let qp = self.qp();
        // SAFETY: both timers were set up at creation; neither call sleeps.
        unsafe {
            bindings::timer_delete(qp.s_timer());
            bindings::hrtimer_try_to_cancel(qp.s_rnr_timer());
        }
    }
}

/// `rvt_add_retry_timer_ext`.
///
/// # Safety
///
/// `qp` is a live QP of ours whose `s_lock` the caller holds.
#[no_mangle]
pub(crate) unsafe extern "C" fn rvt_add_retry_timer_ext(qp: *mut bindings::rvt_qp, shift: u8) {
    // SAFETY: the caller's guarantee; lockdep checks that `s_lock` is held.
    let (_, mut s) = unsafe { locked(qp) };
    s.add_retry_timer(shift);
}
c_export!(rvt_add_retry_timer_ext);

/// `rvt_add_rnr_timer`.
///
/// # Safety
///
/// As [`rvt_add_retry_timer_ext`].
#[no_mangle]
pub(crate) unsafe extern "C" fn rvt_add_rnr_timer(qp: *mut bindings::rvt_qp, aeth: u32) {
    // SAFETY: the caller's guarantee.
    let (_, mut s) = unsafe { locked(qp) };
    s.add_rnr_timer(aeth);
}
c_export!(rvt_add_rnr_timer);

/// `rvt_stop_rc_timers`.
///
/// # Safety
///
/// As [`rvt_add_retry_timer_ext`].
#[no_mangle]
pub(crate) unsafe extern "C" fn rvt_stop_rc_timers(qp: *mut bindings::rvt_qp) {
    // SAFETY: the caller's guarantee.
    let (_, mut s) = unsafe { locked(qp) };
    s.stop_timers();
}
c_export!(rvt_stop_rc_timers);

/// `rvt_del_timers_sync`: disarms both timers and waits for running callbacks to finish.
///
/// # Safety
///
/// `qp` is a live QP of ours; the caller holds none of its locks (the callbacks take them).
#[no_mangle]
pub(crate) unsafe extern "C" fn rvt_del_timers_sync(qp: *mut bindings::rvt_qp) {
    // SAFETY: a live QP of ours (caller's guarantee).
    let qp = unsafe { Qp::from_raw(qp) };
    // SAFETY: the timers were set up at creation and the QP is live.
    unsafe {
        bindings::timer_delete_sync(qp.s_timer());
        bindings::hrtimer_cancel(qp.s_rnr_timer());
    }
}
c_export!(rvt_del_timers_sync);

/// A QP and a guard for the `s_lock` that an export's caller holds.
///
/// # Safety
///
/// `qp` is a live QP of ours whose `s_lock` the caller holds during the borrow.
unsafe fn locked<'a>(
    qp: *mut bindings::rvt_qp,
) -> (&'a Qp, core::mem::ManuallyDrop<SendGuard<'a>>) {
    // SAFETY: the caller's guarantee.
    let qp = unsafe { Qp::from_raw(qp) };
    // SAFETY: the caller holds `s_lock`; `assume_s_locked` asserts it with lockdep.
    (qp, unsafe { qp.assume_s_locked() })
}

/// The retry timer's callback: no ACK came in time. If the timer is still meant to be armed,
/// counts the timeout, tells the driver to restart from the last unacknowledged PSN and
/// schedules the send engine.
///
/// # Safety
///
/// Called by the timer core only, with `t` the `s_timer` of a live QP.
unsafe extern "C" fn rc_timeout(t: *mut bindings::timer_list) {
    // SAFETY: this timer is the `s_timer` of a QP (set up by `init`), and destroy waits for
    // the callback (`rvt_del_timers_sync`) before the QP goes away.
    let qp = unsafe { Qp::from_raw(container_of!(t, bindings::rvt_qp, s_timer)) };
    let r = qp.r_lock();
    let mut s = qp.s_lock();
    if s.flags() & bindings::RVT_S_TIMER == 0 {
        return;
    }
    s.clear_flags(bindings::RVT_S_TIMER);
    let dev = qp.device();
    if let Ok(port) = dev.port(u32::from(s.port_num())) {
        // SAFETY: a live port; C bumps its counters without a lock too.
        unsafe { (*port.as_raw()).n_rc_timeouts += 1 };
    }
    let psn = s.s_last_psn().wrapping_add(1);
    // SAFETY: the timer was set up at creation; deleting it needs no lock.
    unsafe { bindings::timer_delete(qp.s_timer()) };
    trace::rc_timeout(qp, psn);
    dev.driver().notify_restart_rc(qp, psn, true, &r, &s);
    dev.driver().schedule_send(qp, &s);
}

/// `rvt_rc_rnr_retry`: the RNR timer's callback; the wait is over, send again.
///
/// # Safety
///
/// `t` is the `s_rnr_timer` of a live QP of ours.
#[no_mangle]
pub(crate) unsafe extern "C" fn rvt_rc_rnr_retry(
    t: *mut bindings::hrtimer,
) -> bindings::hrtimer_restart {
    // SAFETY: the caller's guarantee (hrtimer callbacks of QPs; destroy cancels the timer
    // synchronously before the QP goes away).
    let qp = unsafe { Qp::from_raw(container_of!(t, bindings::rvt_qp, s_rnr_timer)) };
    let mut s = qp.s_lock();
    // `rvt_stop_rnr_timer`: C traces the stop only when the wait was still flagged.
    if s.flags() & bindings::RVT_S_WAIT_RNR != 0 {
        s.clear_flags(bindings::RVT_S_WAIT_RNR);
        trace::rnrnak_stop(qp);
    }
    trace::rnrnak_timeout(qp);
    qp.device().driver().schedule_send(qp, &s);
    bindings::hrtimer_restart::HRTIMER_NORESTART
}
c_export!(rvt_rc_rnr_retry);
