// SPDX-License-Identifier: GPL-2.0-only

//! The C rdmavt's trace events, fired from Rust where C fires them.
//!
//! The events are defined in C, by the C rdmavt's own headers (`trace/trace_*.h`, included by
//! `trace/trace.h`), so that their systems, names, fields and print formats are the C
//! rdmavt's by construction: `trace-cmd report` and scripts read the same. `trace/trace.c`
//! defines them, and for each a `rust_do_trace_<event>()` that records it. Rust tests the
//! event's static key first ([`declare_trace!`]), so a disabled event costs a patched-out jump
//! (`CONFIG_JUMP_LABEL`) or a load and a compare, and no call: Rust Binder's model.
//!
//! The events read the C structs they are given (`rvt_qp`, `rvt_swqe`, `rvt_cq`, `ib_wc`,
//! `rvt_mregion`, `rvt_sge`, ...) as C's `TP_fast_assign` does; the functions here take the
//! pointers rdmavt-rs holds to those same structs. Where a typed object proves the pointer
//! alive (a [`Qp`], a [`Device`]) the function is safe; the others are `unsafe` with C's
//! requirement: live objects, as at the C call site.

use kernel::ffi::{c_char, c_int, c_uint, c_void};

use crate::{bindings, device::Device, qp::Qp};

/// Declares, for each event, an `unsafe fn` that records it if it is enabled.
///
/// The kernel crate's `kernel::declare_trace!` names `kernel::bindings`, where an out-of-tree
/// module's events are not; this is the same macro over our bindings. The event's
/// `__tracepoint_*` is typed as the kernel crate's `struct tracepoint` on 7.3 (see
/// `bindings/mod.rs`), which `kernel::jump_label::static_branch_unlikely!` reads the key
/// through; on 6.12, whose kernel crate has no tracepoint support, the key's count is read
/// (`compat::tracepoint_enabled!`). Without `CONFIG_TRACEPOINTS` the functions are empty, and
/// so they are in a build with `RDMAVT_RS_TRACE=n` (cfg `rdmavt_no_trace`), which `make bench`
/// compares with the normal build to show what disabled events cost.
macro_rules! declare_trace {
    ($($(#[$attr:meta])* $pub:vis unsafe fn $name:ident($($arg:ident : $typ:ty),* $(,)?);)*) => {$(
        $(#[$attr])*
        #[inline(always)]
        $pub unsafe fn $name($($arg: $typ),*) {
            #[cfg(all(CONFIG_TRACEPOINTS, not(rdmavt_no_trace)))]
            {
                // SAFETY: the tracepoint is a real static key, defined by trace/trace.c;
                // querying it is always allowed.
                let enabled = unsafe {
                    kernel::macros::paste! {
                        crate::compat::tracepoint_enabled!(crate::bindings::[<__tracepoint_ $name>])
                    }
                };
                if enabled {
                    kernel::macros::paste! {
                        // SAFETY: the caller's guarantee, which is the event's.
                        unsafe { crate::bindings::[<rust_do_trace_ $name>]($($arg),*) };
                    }
                }
            }
            #[cfg(any(not(CONFIG_TRACEPOINTS), rdmavt_no_trace))]
            {
                $(let _unused = $arg;)*
            }
        }
    )*};
}

declare_trace! {
    /// # Safety
    ///
    /// `rdi` is a live device; `msg` a NUL-terminated string.
    unsafe fn rvt_dbg(rdi: *mut bindings::rvt_dev_info, msg: *const c_char);
    /// # Safety
    ///
    /// `qp` is a live QP of ours.
    unsafe fn rvt_qpinsert(qp: *mut bindings::rvt_qp, bucket: u32);
    /// # Safety
    ///
    /// As [`rvt_qpinsert`].
    unsafe fn rvt_qpremove(qp: *mut bindings::rvt_qp, bucket: u32);
    /// # Safety
    ///
    /// As [`rvt_qpinsert`].
    unsafe fn rvt_rnrnak_add(qp: *mut bindings::rvt_qp, to: u32);
    /// # Safety
    ///
    /// As [`rvt_qpinsert`].
    unsafe fn rvt_rnrnak_timeout(qp: *mut bindings::rvt_qp, to: u32);
    /// # Safety
    ///
    /// As [`rvt_qpinsert`].
    unsafe fn rvt_rnrnak_stop(qp: *mut bindings::rvt_qp, to: u32);
    /// # Safety
    ///
    /// As [`rvt_qpinsert`].
    unsafe fn rvt_rc_timeout(qp: *mut bindings::rvt_qp, psn: u32);
    /// # Safety
    ///
    /// `qp` is a live QP of ours and `wqe` a slot of its send queue (only its own fields
    /// are read).
    pub(crate) unsafe fn rvt_post_one_wr(
        qp: *mut bindings::rvt_qp,
        wqe: *mut bindings::rvt_swqe,
        wr_num_sge: c_int,
    );
    /// # Safety
    ///
    /// As [`rvt_post_one_wr`].
    pub(crate) unsafe fn rvt_qp_send_completion(
        qp: *mut bindings::rvt_qp,
        wqe: *mut bindings::rvt_swqe,
        idx: u32,
    );
    /// # Safety
    ///
    /// `cq` is a live CQ of ours with `rdi` set; `attr` is valid.
    pub(crate) unsafe fn rvt_create_cq(
        cq: *mut bindings::rvt_cq,
        attr: *const bindings::ib_cq_init_attr,
    );
    /// # Safety
    ///
    /// `cq` is a live CQ of ours; `wc` a valid completion whose `qp` is live.
    pub(crate) unsafe fn rvt_cq_enter(
        cq: *mut bindings::rvt_cq,
        wc: *mut bindings::ib_wc,
        idx: u32,
    );
    /// # Safety
    ///
    /// As [`rvt_cq_enter`].
    pub(crate) unsafe fn rvt_cq_poll(cq: *mut bindings::rvt_cq, wc: *mut bindings::ib_wc, idx: u32);
    /// # Safety
    ///
    /// `mr` is a live region of ours, in a live PD; `v` is a kernel address that
    /// `virt_to_page` accepts.
    pub(crate) unsafe fn rvt_mr_page_seg(
        mr: *mut bindings::rvt_mregion,
        m: u16,
        n: u16,
        v: *mut c_void,
        len: usize,
    );
    /// # Safety
    ///
    /// As [`rvt_mr_page_seg`].
    pub(crate) unsafe fn rvt_mr_user_seg(
        mr: *mut bindings::rvt_mregion,
        m: u16,
        n: u16,
        v: *mut c_void,
        len: usize,
    );
    /// # Safety
    ///
    /// `sge` is a valid SGE that holds a reference to its region, whose PD (an `rvt_pd`) is
    /// live; `isge` is valid.
    pub(crate) unsafe fn rvt_sge_adjacent(sge: *mut bindings::rvt_sge, isge: *mut bindings::ib_sge);
    /// # Safety
    ///
    /// As [`rvt_sge_adjacent`].
    pub(crate) unsafe fn rvt_sge_new(sge: *mut bindings::rvt_sge, isge: *mut bindings::ib_sge);
    /// # Safety
    ///
    /// `ibmr` is an MR of ours (an `rvt_mr`), in a live PD; `sg_offset` is NULL or valid.
    pub(crate) unsafe fn rvt_map_mr_sg(
        ibmr: *mut bindings::ib_mr,
        sg_nents: c_int,
        sg_offset: *mut c_uint,
    );
}

/// `rvt_dbg`: a message about `dev` (C fires it at registration and unregistration).
pub(crate) fn dbg(dev: &Device, msg: &core::ffi::CStr) {
    // SAFETY: `dev` is live for the borrow; `msg` is NUL-terminated.
    unsafe { rvt_dbg(dev.as_raw(), crate::compat::c_str_ptr(msg)) }
}

/// `rvt_qpinsert`: `qp` went into bucket `bucket` of the QPN hash table.
pub(crate) fn qpinsert(qp: &Qp, bucket: u32) {
    // SAFETY: `qp` is live for the borrow.
    unsafe { rvt_qpinsert(qp.as_raw(), bucket) }
}

/// `rvt_qpremove`: `qp` left bucket `bucket` of the QPN hash table.
pub(crate) fn qpremove(qp: &Qp, bucket: u32) {
    // SAFETY: `qp` is live for the borrow.
    unsafe { rvt_qpremove(qp.as_raw(), bucket) }
}

/// `rvt_rnrnak_add`: the RNR timer is armed for `usecs`.
pub(crate) fn rnrnak_add(qp: &Qp, usecs: u32) {
    // SAFETY: `qp` is live for the borrow.
    unsafe { rvt_rnrnak_add(qp.as_raw(), usecs) }
}

/// `rvt_rnrnak_timeout`: the RNR timer expired (C passes 0 as the timeout).
pub(crate) fn rnrnak_timeout(qp: &Qp) {
    // SAFETY: `qp` is live for the borrow.
    unsafe { rvt_rnrnak_timeout(qp.as_raw(), 0) }
}

/// `rvt_rnrnak_stop`: the RNR wait is over (C passes 0 as the timeout).
pub(crate) fn rnrnak_stop(qp: &Qp) {
    // SAFETY: `qp` is live for the borrow.
    unsafe { rvt_rnrnak_stop(qp.as_raw(), 0) }
}

/// `rvt_rc_timeout`: the retry timer expired; the requester restarts at `psn`.
pub(crate) fn rc_timeout(qp: &Qp, psn: u32) {
    // SAFETY: `qp` is live for the borrow.
    unsafe { rvt_rc_timeout(qp.as_raw(), psn) }
}
