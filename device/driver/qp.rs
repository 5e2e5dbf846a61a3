// SPDX-License-Identifier: GPL-2.0-only

//! The QP's driver callbacks, from creation to destruction, each under the QP locks C holds
//! for it (the module documentation of [`super`] says what every `SAFETY` argument relies on).

use kernel::{
    error::{from_err_ptr, to_result},
    ffi::{c_int, c_void},
    prelude::*,
};

use super::{all_three, Driver};
use crate::{
    bindings,
    qp::{
        AllLocks, InitAttr, Locked, ModifyAttr, PostGuard, Qp, QpDev, RecvGuard, SendGuard,
        SwqeSlot,
    },
};

// QP creation and destruction: no QP lock; until `create_qp` returns, the QP is the creator's
// alone.
impl Driver {
    /// `alloc_qpn`: the QP number the driver picks, if it numbers QPs itself (else rdmavt's
    /// bitmap does); `Err` with the driver's errno.
    pub(crate) fn alloc_qpn(
        &self,
        qp_type: bindings::ib_qp_type,
        port_num: u32,
    ) -> Option<Result<u32>> {
        let alloc = self.table().alloc_qpn?;
        let qpt = QpDev::of(self.device()).qpt();
        // SAFETY: the device's own pointer and its QPN table (`create_qp` is a verb, so the
        // device is registered and the table set up), in process context, as C calls it.
        let ret = unsafe { alloc(self.rdi(), qpt, qp_type, port_num) };
        Some(u32::try_from(ret).map_err(|_| Error::from_errno(ret)))
    }

    /// `qp_priv_alloc`: the driver's private data for `qp` (hfi1's `hfi1_qp_priv`), or its
    /// errno. Required (-EINVAL without it). No lock: the QP is not yet visible.
    pub(crate) fn qp_priv_alloc(&self, qp: &Qp) -> Result<*mut c_void> {
        let alloc = self
            .qp_callback(self.table().qp_priv_alloc, qp, &[])
            .ok_or(EINVAL)?;
        // SAFETY: the device's own pointer and a QP of it, in process context from
        // `create_qp` before the QP is visible, as C calls it.
        from_err_ptr(unsafe { alloc(self.rdi(), qp.as_raw()) })
    }

    /// `qp_priv_init`, on a QP set up and numbered; `Ok` when absent.
    ///
    /// # Safety
    ///
    /// `qp_priv_alloc` succeeded for `qp`, and `create_qp` has not yet returned it.
    pub(crate) unsafe fn qp_priv_init(&self, qp: &Qp, init: &mut InitAttr<'_>) -> Result {
        let Some(priv_init) = self.qp_callback(self.table().qp_priv_init, qp, &[]) else {
            return Ok(());
        };
        // SAFETY: the device's own pointer and a QP of it whose private data exists (caller's
        // guarantee), with the creation's attributes, in process context, as C calls it.
        to_result(unsafe { priv_init(self.rdi(), qp.as_raw(), init.as_raw()) })
    }

    /// `qp_priv_free`; nothing when absent. Takes no lock guard: hfi1 and rvt_loop wait here
    /// for their send work (`cancel_work_sync()`), which must not happen under a spinlock.
    ///
    /// # Safety
    ///
    /// `qp_priv_alloc` succeeded for `qp` (whatever it returned), this is the one call for it,
    /// and nothing uses the QP any more (a failed creation, or the end of a destroy).
    pub(crate) unsafe fn qp_priv_free(&self, qp: &Qp) {
        if let Some(free) = self.qp_callback(self.table().qp_priv_free, qp, &[]) {
            // SAFETY: the device's own pointer and a QP of it that nothing uses, once (caller's
            // guarantee), in process context with no lock held, as C calls it.
            unsafe { free(self.rdi(), qp.as_raw()) };
        }
    }
}

// modify_qp: all three QP locks held.
impl Driver {
    /// `check_modify_qp`, after rdmavt's check of the transition; `Ok` when absent, and
    /// -EINVAL for any refusal, as C.
    pub(crate) fn check_modify_qp(
        &self,
        qp: &Qp,
        attr: &mut ModifyAttr<'_>,
        locks: &AllLocks<'_>,
    ) -> Result {
        let Some(check) = self.qp_callback(self.table().check_modify_qp, qp, &all_three(locks))
        else {
            return Ok(());
        };
        let (attr, mask, udata) = attr.as_c();
        // SAFETY: a QP of this device with all three of its locks held (`locks`), and the
        // attributes, mask and `udata` ib_core passed to the verb (`ModifyAttr`'s invariant),
        // as C calls it.
        match unsafe { check(qp.as_raw(), attr, mask, udata) } {
            0 => Ok(()),
            _ => Err(EINVAL),
        }
    }

    /// `get_pmtu_from_attr`: the path MTU (an `ib_mtu`) the driver takes from `attr`; -EINVAL
    /// when it refuses it (a negative value) or is absent, as C.
    pub(crate) fn get_pmtu_from_attr(
        &self,
        qp: &Qp,
        attr: &mut ModifyAttr<'_>,
        locks: &AllLocks<'_>,
    ) -> Result<u32> {
        let get = self
            .qp_callback(self.table().get_pmtu_from_attr, qp, &all_three(locks))
            .ok_or(EINVAL)?;
        let (attr, _, _) = attr.as_c();
        // SAFETY: the device's own pointer, a QP of it with all three of its locks held
        // (`locks`) and valid attributes, as C calls it.
        let pmtu = unsafe { get(self.rdi(), qp.as_raw(), attr) };
        u32::try_from(pmtu).map_err(|_| EINVAL)
    }

    /// `mtu_from_qp`: the MTU in bytes for path MTU `pmtu`, if the driver has the callback.
    pub(crate) fn mtu_from_qp(&self, qp: &Qp, pmtu: u32, locks: &AllLocks<'_>) -> Option<u32> {
        let mtu_from_qp = self.qp_callback(self.table().mtu_from_qp, qp, &all_three(locks))?;
        // SAFETY: the device's own pointer and a QP of it with all three of its locks held
        // (`locks`), as C calls it.
        Some(unsafe { mtu_from_qp(self.rdi(), qp.as_raw(), pmtu) })
    }

    /// `modify_qp`, after rdmavt applied the attributes; nothing when absent.
    pub(crate) fn modify_qp(&self, qp: &Qp, attr: &mut ModifyAttr<'_>, locks: &AllLocks<'_>) {
        if let Some(modify) = self.qp_callback(self.table().modify_qp, qp, &all_three(locks)) {
            let (attr, mask, udata) = attr.as_c();
            // SAFETY: a QP of this device with all three of its locks held (`locks`), and the
            // attributes, mask and `udata` ib_core passed to the verb (`ModifyAttr`'s
            // invariant), as C calls it.
            unsafe { modify(qp.as_raw(), attr, mask, udata) };
        }
    }

    /// `mtu_to_path_mtu`: the `ib_mtu` of an MTU in bytes, for `query_qp`, if the driver has
    /// the callback. No QP: `query_qp` reads the QP without its locks, as C.
    pub(crate) fn mtu_to_path_mtu(&self, mtu: u32) -> Option<u32> {
        let to_path_mtu = self.table().mtu_to_path_mtu?;
        // SAFETY: a pure conversion of the driver's; `query_qp` verb, as C calls it.
        let path_mtu = unsafe { to_path_mtu(mtu) };
        // CAST: as C stores the int in the enum.
        Some(path_mtu as u32)
    }
}

// Reset (from modify to RESET, and destroy): with all three locks, then with none while the
// driver stops, then all three again.
impl Driver {
    /// `flush_qp_waiters`: the QP is going to reset; nothing when absent.
    pub(crate) fn flush_qp_waiters(&self, qp: &Qp, locks: &AllLocks<'_>) {
        if let Some(flush) = self.qp_callback(self.table().flush_qp_waiters, qp, &all_three(locks))
        {
            // SAFETY: a QP of this device with all three of its locks held (`locks`; hfi1
            // asserts `s_lock` and nests its iowait lock inside), as C calls it.
            unsafe { flush(qp.as_raw()) };
        }
    }

    /// `stop_send_queue`; nothing when absent. Takes no lock guard: the caller has let go of
    /// the QP's locks, because hfi1 and rvt_loop wait here for their send work
    /// (`cancel_work_sync()`), which must not happen under a spinlock.
    pub(crate) fn stop_send_queue(&self, qp: &Qp) {
        if let Some(stop) = self.qp_callback(self.table().stop_send_queue, qp, &[]) {
            // SAFETY: a QP of this device, in process context during reset, as C calls it.
            unsafe { stop(qp.as_raw()) };
        }
    }

    /// `quiesce_qp`, after `stop_send_queue` and the timers' teardown; nothing when absent.
    /// Takes no lock guard: like `stop_send_queue`, the driver may wait here.
    pub(crate) fn quiesce_qp(&self, qp: &Qp) {
        if let Some(quiesce) = self.qp_callback(self.table().quiesce_qp, qp, &[]) {
            // SAFETY: a QP of this device, in process context during reset, as C calls it.
            unsafe { quiesce(qp.as_raw()) };
        }
    }

    /// `notify_qp_reset`, once the QP left the lookup table; nothing when absent.
    pub(crate) fn notify_qp_reset(&self, qp: &Qp, locks: &AllLocks<'_>) {
        if let Some(notify) = self.qp_callback(self.table().notify_qp_reset, qp, &all_three(locks))
        {
            // SAFETY: a QP of this device with all three of its locks held (`locks`), as C
            // calls it.
            unsafe { notify(qp.as_raw()) };
        }
    }
}

// The error state, the send engine and the RC timers: `s_lock` held (and `r_lock` where C
// holds it), except around `do_send` and `schedule_send_no_lock`.
impl Driver {
    /// `notify_error_qp`: the QP moved to the error state; nothing when absent.
    pub(crate) fn notify_error_qp(&self, qp: &Qp, r: &RecvGuard<'_>, s: &SendGuard<'_>) {
        let held = [r.qp_ptr(), s.qp_ptr()];
        if let Some(notify) = self.qp_callback(self.table().notify_error_qp, qp, &held) {
            // SAFETY: a QP of this device with its `r_lock` and `s_lock` held (`r`, `s`), as
            // C calls it.
            unsafe { notify(qp.as_raw()) };
        }
    }

    /// `schedule_send`: run the send engine soon; nothing when absent.
    pub(crate) fn schedule_send(&self, qp: &Qp, s: &SendGuard<'_>) {
        if let Some(schedule) = self.qp_callback(self.table().schedule_send, qp, &[s.qp_ptr()]) {
            // SAFETY: a QP of this device with its `s_lock` held (`s`; hfi1 asserts it), as C
            // calls it.
            unsafe { schedule(qp.as_raw()) };
        }
    }

    /// `schedule_send_no_lock`: run the send engine soon. Returns whether the driver has it.
    /// Takes no lock guard: C calls it after `post_send` let go of `s_hlock`, and the driver
    /// takes `s_lock` itself.
    pub(crate) fn schedule_send_no_lock(&self, qp: &Qp) -> bool {
        let Some(schedule) = self.qp_callback(self.table().schedule_send_no_lock, qp, &[]) else {
            return false;
        };
        // SAFETY: a QP of this device with none of its locks held, as C calls it.
        unsafe { schedule(qp.as_raw()) };
        true
    }

    /// `do_send`: send the one request just posted, here and now; nothing when absent. Takes
    /// no lock guard: C calls it after `post_send` let go of `s_hlock`, and the driver's send
    /// engine takes the QP's locks itself.
    pub(crate) fn do_send(&self, qp: &Qp) {
        if let Some(do_send) = self.qp_callback(self.table().do_send, qp, &[]) {
            // SAFETY: a QP of this device with none of its locks held, as C calls it.
            unsafe { do_send(qp.as_raw()) };
        }
    }

    /// `setup_wqe`: the driver's check of a filled-in send WQE, which may clear `call_send`
    /// (the request then goes through `schedule_send_no_lock`); `Ok` when absent, the
    /// driver's errno when it refuses (a negative value).
    ///
    pub(crate) fn setup_wqe(
        &self,
        qp: &Qp,
        slot: &mut SwqeSlot<'_>,
        call_send: &mut bool,
        h: &PostGuard<'_>,
    ) -> Result {
        let Some(setup) = self.qp_callback(self.table().setup_wqe, qp, &[h.qp_ptr()]) else {
            return Ok(());
        };
        // SAFETY: a QP of this device with its `s_hlock` held (`h`), the WQE being posted
        // (`slot`), as C calls it.
        let ret = unsafe { setup(qp.as_raw(), slot.as_raw(), call_send) };
        if ret < 0 {
            return Err(Error::from_errno(ret));
        }
        Ok(())
    }

    /// `notify_restart_rc`: the retry timer fired; restart from `psn`. Nothing when absent.
    pub(crate) fn notify_restart_rc(
        &self,
        qp: &Qp,
        psn: u32,
        wait: bool,
        r: &RecvGuard<'_>,
        s: &SendGuard<'_>,
    ) {
        let held = [r.qp_ptr(), s.qp_ptr()];
        if let Some(restart) = self.qp_callback(self.table().notify_restart_rc, qp, &held) {
            // SAFETY: a QP of this device with its `r_lock` and `s_lock` held (`r`, `s`), from
            // the retry timer, as C calls it.
            unsafe { restart(qp.as_raw(), psn, c_int::from(wait)) };
        }
    }
}
