// SPDX-License-Identifier: GPL-2.0-only

//! `/sys/kernel/debug/rvt_loop/<device>/qp_stats`: one line per live QP of the device, as
//! hfi1's `qp_stats` (hfi1/debugfs.c, `qp_iter_print()` in hfi1/qp.c) lists them, through
//! rdmavt's `rvt_qp_iter()`, which both rdmavt modules export:
//!
//! ```text
//! n=0 qpn=0x0 type=SMI state=RTS refcount=1 s_last=0 s_acked=0 s_cur=0 s_tail=0 s_head=0 ...
//! ```
//!
//! The fields are read without the QP's locks, as hfi1 reads them: a line is a snapshot of
//! a QP that may be changing, never a consistent one.

use crate::bindings::{self, ib_qp_state, ib_qp_type};
use core::{fmt, ptr::NonNull};
use kernel::{
    debugfs::{Dir, Scope},
    prelude::*,
    sync::atomic::{atomic_load, Relaxed},
};

/// The QPs of one registered device, which the file lists.
///
/// # Invariants
///
/// `self.0` is a registered `rvt_dev_info`, and stays registered while the file exists: the
/// [`Scope`] that owns this is dropped before the device is unregistered.
pub(crate) struct QpTable(NonNull<bindings::rvt_dev_info>);

// SAFETY: The table is only read, through rdmavt's iterator, which takes its own locks.
unsafe impl Send for QpTable {}
// SAFETY: As above.
unsafe impl Sync for QpTable {}

/// The debugfs directory of one device, `<root>/<name>`, with its `qp_stats` file. Dropping
/// it removes both, and waits for readers.
///
/// # Safety
///
/// `rdi` is a registered device, which stays registered until the returned scope is dropped.
pub(crate) unsafe fn qp_stats<'a>(
    root: &'a Dir,
    name: &'a CStr,
    rdi: NonNull<bindings::rvt_dev_info>,
) -> impl PinInit<Scope<QpTable>, Error> + 'a {
    // INVARIANT: the caller guarantees that `rdi` outlives the scope.
    root.scope(Ok::<_, Error>(QpTable(rdi)), name, |table, dir| {
        dir.read_callback_file(c"qp_stats", table, &print_qps)
    })
}

/// What the iterator's callback writes to, and the first error.
struct Walk<'a, 'b> {
    out: &'a mut fmt::Formatter<'b>,
    n: u32,
    result: fmt::Result,
}

/// The contents of `qp_stats`.
fn print_qps(table: &QpTable, out: &mut fmt::Formatter<'_>) -> fmt::Result {
    let mut walk = Walk {
        out,
        n: 0,
        result: Ok(()),
    };
    // SAFETY: By the type invariants the device is registered; `walk` outlives the call,
    // which hands its address back to `print_qp` only.
    unsafe {
        bindings::rvt_qp_iter(
            table.0.as_ptr(),
            (&raw mut walk) as usize as u64,
            Some(print_qp),
        )
    };
    walk.result
}

/// `rvt_qp_iter()`'s callback: one line for `qp`.
///
/// # Safety
///
/// `qp` is a live QP that the caller holds a reference to, and `v` the address of the
/// [`Walk`] that [`print_qps()`] passed.
unsafe extern "C" fn print_qp(qp: *mut bindings::rvt_qp, v: u64) {
    // SAFETY: `v` is the address of `print_qps()`'s `walk`, borrowed by nothing else while
    // the iterator runs.
    let walk = unsafe { &mut *(v as usize as *mut Walk<'_, '_>) };
    if walk.result.is_ok() {
        // SAFETY: The caller holds a reference to `qp`.
        walk.result = unsafe { write_qp(walk.out, walk.n, qp) };
    }
    walk.n += 1;
}

/// A racy read of a field that others write under a lock we do not take (READ_ONCE()).
///
/// # Safety
///
/// `p` is valid and aligned.
unsafe fn read_once(p: *const u32) -> u32 {
    // SAFETY: The caller's guarantee; relaxed loads are what READ_ONCE() is.
    unsafe { atomic_load(p.cast_mut(), Relaxed) }
}

/// Writes the line of QP number `n`, `qp`.
///
/// # Safety
///
/// `qp` is a live QP.
unsafe fn write_qp(out: &mut fmt::Formatter<'_>, n: u32, qp: *mut bindings::rvt_qp) -> fmt::Result {
    // SAFETY: The number and type of a live QP never change.
    let (qpn, qpt) = unsafe { ((*qp).ibqp.qp_num, (*qp).ibqp.qp_type) };
    // SAFETY: `state` is a u8 of the live QP, read as the i8 the atomics know; refcount an
    // atomic_t.
    let (state, refcount) = unsafe {
        (
            atomic_load((&raw mut (*qp).state).cast::<i8>(), Relaxed) as u8,
            atomic_load(&raw mut (*qp).refcount.counter, Relaxed),
        )
    };
    write!(
        out,
        "n={n} qpn={qpn:#x} type={} state={} refcount={refcount}",
        type_name(qpt),
        state_name(state.into()),
    )?;
    // SAFETY: The fields are u32 of the live QP.
    let [s_last, s_acked, s_cur, s_tail, s_head, s_size, s_avail] = unsafe {
        [
            &raw const (*qp).s_last,
            &raw const (*qp).s_acked,
            &raw const (*qp).s_cur,
            &raw const (*qp).s_tail,
            &raw const (*qp).s_head,
            &raw const (*qp).s_size,
            &raw const (*qp).s_avail,
        ]
        .map(|p| read_once(p))
    };
    write!(
        out,
        " s_last={s_last} s_acked={s_acked} s_cur={s_cur} s_tail={s_tail} s_head={s_head} \
         s_size={s_size} s_avail={s_avail}"
    )?;
    // SAFETY: `qp` is live.
    unsafe { write_rq(out, qp) }?;
    // SAFETY: The fields are u32 of the live QP.
    let [s_last_psn, s_psn, s_next_psn, r_psn, remote_qpn] = unsafe {
        [
            &raw const (*qp).s_last_psn,
            &raw const (*qp).s_psn,
            &raw const (*qp).s_next_psn,
            &raw const (*qp).r_psn,
            &raw const (*qp).remote_qpn,
        ]
        .map(|p| read_once(p))
    };
    writeln!(
        out,
        " s_last_psn={s_last_psn:#x} s_psn={s_psn:#x} s_next_psn={s_next_psn:#x} \
         r_psn={r_psn:#x} remote_qpn={remote_qpn:#x}"
    )
}

/// The receive queue's positions: `srq=yes` for a QP on a shared receive queue, else its
/// own ring's head (the producer's), tail (the consumer's) and size.
///
/// # Safety
///
/// `qp` is a live QP.
unsafe fn write_rq(out: &mut fmt::Formatter<'_>, qp: *mut bindings::rvt_qp) -> fmt::Result {
    // SAFETY: The SRQ and the receive queue's rings are set at creation and never change.
    let (srq, rq) = unsafe { ((*qp).ibqp.srq, &raw const (*qp).r_rq) };
    if !srq.is_null() {
        return write!(out, " srq=yes");
    }
    // SAFETY: As above; a user QP's ring (`wq`) is shared with user space, a kernel QP's is
    // `kwq`, and a QP without an SRQ has one of them.
    let (size, wq, kwq) = unsafe { ((*rq).size, (*rq).wq, (*rq).kwq) };
    // SAFETY: The indices are u32 of the live ring; the producer and the consumer write
    // them under their own locks (or in user space).
    let (head, tail) = unsafe {
        if !wq.is_null() {
            (
                read_once(&raw const (*wq).head.val),
                read_once(&raw const (*wq).tail.val),
            )
        } else if !kwq.is_null() {
            (
                read_once(&raw const (*kwq).head),
                read_once(&raw const (*kwq).tail),
            )
        } else {
            (0, 0)
        }
    };
    write!(out, " r_head={head} r_tail={tail} r_size={size}")
}

fn type_name(qpt: ib_qp_type) -> &'static str {
    match qpt {
        ib_qp_type::IB_QPT_SMI => "SMI",
        ib_qp_type::IB_QPT_GSI => "GSI",
        ib_qp_type::IB_QPT_RC => "RC",
        ib_qp_type::IB_QPT_UC => "UC",
        ib_qp_type::IB_QPT_UD => "UD",
        _ => "other",
    }
}

fn state_name(state: u32) -> &'static str {
    match ib_qp_state(state) {
        ib_qp_state::IB_QPS_RESET => "RESET",
        ib_qp_state::IB_QPS_INIT => "INIT",
        ib_qp_state::IB_QPS_RTR => "RTR",
        ib_qp_state::IB_QPS_RTS => "RTS",
        ib_qp_state::IB_QPS_SQD => "SQD",
        ib_qp_state::IB_QPS_SQE => "SQE",
        ib_qp_state::IB_QPS_ERR => "ERR",
        _ => "unknown",
    }
}
