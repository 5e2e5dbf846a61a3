// SPDX-License-Identifier: GPL-2.0-only

//! The send engine's calls into rdmavt, through the C glue (rvt_loop_glue.c).
//!
//! They are rdmavt exports that only traffic needs (`rvt_ruc_loopback()`, `rvt_get_rwqe()`,
//! `rvt_copy_sge()`, `rvt_send_complete()`, `rvt_mcast_find()`, ...) and the static inline
//! helpers of rdmavt_qp.h and rdmavt_mr.h around them. Both rdmavt modules export them all.

use crate::bindings;
use kernel::ffi::c_int;

// The QP types reach an empty placeholder struct that bindgen generates for an x86 type
// nothing here touches; the C side takes them by pointer only.
#[allow(improper_ctypes)]
extern "C" {
    fn rvt_loop_state_ops(qp: *const bindings::rvt_qp) -> u32;
    fn rvt_loop_ruc_loopback(qp: *mut bindings::rvt_qp);
    fn rvt_loop_swqe(qp: *mut bindings::rvt_qp, n: u32) -> *mut bindings::rvt_swqe;
    fn rvt_loop_send_complete(
        qp: *mut bindings::rvt_qp,
        wqe: *mut bindings::rvt_swqe,
        status: bindings::ib_wc_status,
    );
    fn rvt_loop_lookup_qpn(sqp: *mut bindings::rvt_qp, qpn: u32) -> *mut bindings::rvt_qp;
    fn rvt_loop_mcast_find(
        sqp: *mut bindings::rvt_qp,
        mgid: *mut bindings::ib_gid,
        mlid: u16,
    ) -> *mut bindings::rvt_mcast;
    fn rvt_loop_mcast_put(mcast: *mut bindings::rvt_mcast);
    fn rvt_loop_get_rwqe(qp: *mut bindings::rvt_qp) -> c_int;
    fn rvt_loop_rc_error(qp: *mut bindings::rvt_qp, status: bindings::ib_wc_status);
    fn rvt_loop_recv_grh(qp: *mut bindings::rvt_qp, grh: *const bindings::ib_grh);
    fn rvt_loop_recv_payload(qp: *mut bindings::rvt_qp, swqe: *mut bindings::rvt_swqe);
    fn rvt_loop_take_wr_id(qp: *mut bindings::rvt_qp) -> bool;
    fn rvt_loop_recv_cq(qp: *mut bindings::rvt_qp, wc: *mut bindings::ib_wc, solicited: bool);
}

/// `ib_rvt_state_ops[qp->state]`: what the QP's state allows (`RVT_PROCESS_*`).
///
/// # Safety
///
/// `qp` is a live QP.
pub(crate) unsafe fn state_ops(qp: *const bindings::rvt_qp) -> u32 {
    // SAFETY: The caller guarantees both; the state is read once.
    unsafe { rvt_loop_state_ops(qp) }
}

/// `rvt_ruc_loopback()`: runs the RC or UC send queue of `qp` against its destination QP on
/// the same port. It takes the QP's locks and `RVT_S_BUSY` itself.
///
/// # Safety
///
/// `qp` is a live RC or UC QP, the caller holds none of its locks.
pub(crate) unsafe fn ruc_loopback(qp: *mut bindings::rvt_qp) {
    // SAFETY: The caller guarantees what rvt_ruc_loopback() needs.
    unsafe { rvt_loop_ruc_loopback(qp) }
}

/// `rvt_get_swqe_ptr()`: entry `n` of the send queue of `qp`.
///
/// # Safety
///
/// `qp` is a live QP and `n < s_size`.
pub(crate) unsafe fn swqe(qp: *mut bindings::rvt_qp, n: u32) -> *mut bindings::rvt_swqe {
    // SAFETY: Pointer arithmetic within the send queue, which the caller guarantees.
    unsafe { rvt_loop_swqe(qp, n) }
}

/// `rvt_send_complete()`: completes `wqe`, the oldest entry (`s_last`) of the send queue.
///
/// # Safety
///
/// `qp` is live, the caller holds its `s_lock`, and `wqe` is the entry at `s_last`.
pub(crate) unsafe fn send_complete(
    qp: *mut bindings::rvt_qp,
    wqe: *mut bindings::rvt_swqe,
    status: bindings::ib_wc_status,
) {
    // SAFETY: The caller guarantees what rvt_send_complete() needs.
    unsafe { rvt_loop_send_complete(qp, wqe, status) }
}

/// `rvt_lookup_qpn()` on the port of `sqp`: the QP numbered `qpn`, or null.
///
/// # Safety
///
/// `sqp` is a live QP and the caller is in an RCU read-side critical section, which it keeps
/// for as long as it uses the QP returned.
pub(crate) unsafe fn lookup_qpn(sqp: *mut bindings::rvt_qp, qpn: u32) -> *mut bindings::rvt_qp {
    // SAFETY: The caller guarantees what rvt_lookup_qpn() needs.
    unsafe { rvt_loop_lookup_qpn(sqp, qpn) }
}

/// `rvt_mcast_find()` on the port of `sqp`: the multicast group `mgid`/`mlid` with a
/// reference held, which [`mcast_put()`] drops, or null.
///
/// # Safety
///
/// `sqp` is a live QP
pub(crate) unsafe fn mcast_find(
    sqp: *mut bindings::rvt_qp,
    mgid: &bindings::ib_gid,
    mlid: u16,
) -> *mut bindings::rvt_mcast {
    let mut mgid = *mgid;
    // SAFETY: The caller guarantees `sqp`; `mgid` is a local copy rdmavt only reads.
    unsafe { rvt_loop_mcast_find(sqp, &mut mgid, mlid) }
}

/// Drops the reference [`mcast_find()`] took, waking a detach that waits for it.
///
/// # Safety
///
/// `mcast` came from [`mcast_find()`] and is put once.
pub(crate) unsafe fn mcast_put(mcast: *mut bindings::rvt_mcast) {
    // SAFETY: The caller guarantees that we own the reference.
    unsafe { rvt_loop_mcast_put(mcast) }
}

/// `rvt_get_rwqe(qp, false)`: takes the next receive WQE of `qp` into `r_sge`, `r_len` and
/// `r_wr_id`. Positive when there was one, 0 when the receive queue is empty, negative when
/// the WQE was bad.
///
/// # Safety
///
/// `qp` is live, the caller holds its `r_lock`.
pub(crate) unsafe fn get_rwqe(qp: *mut bindings::rvt_qp) -> c_int {
    // SAFETY: The caller guarantees what rvt_get_rwqe() needs.
    unsafe { rvt_loop_get_rwqe(qp) }
}

/// `rvt_rc_error()`: moves `qp` to the error state after a bad receive.
///
/// # Safety
///
/// `qp` is live, the caller holds its `r_lock`.
pub(crate) unsafe fn rc_error(qp: *mut bindings::rvt_qp, status: bindings::ib_wc_status) {
    // SAFETY: The caller guarantees what rvt_rc_error() needs.
    unsafe { rvt_loop_rc_error(qp, status) }
}

/// Fills the first 40 bytes of the receive buffer of `qp` with `grh`, or skips them when
/// there is none: UD receive buffers begin with room for a GRH either way.
///
/// # Safety
///
/// `qp` is live, the caller holds its `r_lock`, `r_sge` holds a receive WQE of at least 40
/// bytes.
pub(crate) unsafe fn recv_grh(qp: *mut bindings::rvt_qp, grh: Option<&bindings::ib_grh>) {
    let grh = grh.map_or(core::ptr::null(), core::ptr::from_ref);
    // SAFETY: The caller guarantees the rest; `grh` is null or valid for reads.
    unsafe { rvt_loop_recv_grh(qp, grh) }
}

/// Copies the payload of `swqe` into the receive buffer of `qp`, then releases the buffer.
///
/// # Safety
///
/// As for [`recv_grh()`], and the buffer has room for the payload; `swqe` is a posted send
/// WQE whose memory references stay held during the call.
pub(crate) unsafe fn recv_payload(qp: *mut bindings::rvt_qp, swqe: *mut bindings::rvt_swqe) {
    // SAFETY: The caller guarantees what the copy needs.
    unsafe { rvt_loop_recv_payload(qp, swqe) }
}

/// Whether the receive WQE that `get_rwqe()` took wants a completion; clears the flag.
///
/// # Safety
///
/// `qp` is live and the caller holds its `r_lock`.
pub(crate) unsafe fn take_wr_id(qp: *mut bindings::rvt_qp) -> bool {
    // SAFETY: An atomic bit operation on a live QP.
    unsafe { rvt_loop_take_wr_id(qp) }
}

/// `rvt_recv_cq()`: enters `wc` on the receive CQ of `qp`, or moves the QP to the error
/// state when the CQ is full. Unlike the C helper (and hfi1), with `s_lock` taken for
/// rvt_error_qp(), which requires it.
///
/// # Safety
///
/// `qp` is live, the caller holds its `r_lock`.
pub(crate) unsafe fn recv_cq(qp: *mut bindings::rvt_qp, wc: &mut bindings::ib_wc, solicited: bool) {
    // SAFETY: The caller guarantees the QP; `wc` is valid and only read.
    unsafe { rvt_loop_recv_cq(qp, wc, solicited) }
}
