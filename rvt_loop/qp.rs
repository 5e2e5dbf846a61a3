// SPDX-License-Identifier: GPL-2.0-only

//! The QP callbacks of `struct rvt_driver_provided` and what rvt_loop keeps per QP.
//!
//! # The send engine
//!
//! rdmavt queues posted work requests on the QP and asks the driver to send them:
//! `do_send()` directly, or `schedule_send()` to have it run later (from a timer, or with
//! `s_lock` held). rvt_loop runs `do_send()` from a work item, as hfi1 does, and the work
//! item is set up, queued and cancelled as the QP's life requires. Every destination is on
//! the same port: RC and UC requests go through rdmavt's `rvt_ruc_loopback()`, datagrams
//! through [`crate::ud`]. Both complete every request, and flush the queue with
//! `IB_WC_WR_FLUSH_ERR` when the QP is in the error state.

use crate::{
    bindings, bindings::ib_qp_type, device, device::LoopDev, rdmavt, stats::Counter, tables, ud,
};
use core::ptr;
use kernel::{
    container_of,
    ffi::{c_int, c_void},
    prelude::*,
    types::{ForeignOwnable, Opaque},
};

use crate::compat::atomic::{atomic_load, Relaxed};

/// What rvt_loop keeps for each QP, in `rvt_qp::priv`.
///
/// # Invariants
///
/// `work` was initialised to run [`send_work`], and `qp` is the QP whose `priv` this is.
#[pin_data]
pub(crate) struct QpPriv {
    /// Runs the send engine for `qp` outside the caller's context.
    #[pin]
    work: Opaque<kernel::bindings::work_struct>,
    qp: *mut bindings::rvt_qp,
}

/// How rdmavt's `void *priv` holds a [`QpPriv`].
type PrivBox = Pin<KBox<QpPriv>>;

impl QpPriv {
    fn new(qp: *mut bindings::rvt_qp) -> impl PinInit<Self, Error> {
        // INVARIANT: `work` runs `send_work`, and `qp` is the QP being created.
        try_pin_init!(Self {
            work <- Opaque::ffi_init(|work| {
                // SAFETY: `work` is valid for writes and pinned; `send_work` takes a
                // `work_struct` embedded in a `QpPriv`, which this one is.
                unsafe {
                    kernel::bindings::init_work_with_key(
                        work,
                        Some(send_work),
                        false,
                        crate::compat::c_str_ptr(c"rvt_loop_send"),
                        crate::compat::static_lock_class!().as_ptr(),
                    )
                }
            }),
            qp,
        })
    }

    /// The `QpPriv` of `qp`, if rdmavt has stored one.
    ///
    /// # Safety
    ///
    /// `qp` is a QP of one of our devices, between the return of `priv_alloc()` and the call
    /// of `priv_free()` for it.
    unsafe fn of<'a>(qp: *mut bindings::rvt_qp) -> Option<Pin<&'a Self>> {
        // SAFETY: The caller guarantees that `qp` is valid; `priv` is only written by
        // rdmavt's create path and by `priv_free()`, neither of which can run concurrently.
        let p = unsafe { (*qp).priv_ };
        // SAFETY: A non-null `priv` comes from `PrivBox::into_foreign()` in `priv_alloc()`
        // and stays valid until `priv_free()`, which the caller guarantees is later.
        (!p.is_null()).then(|| unsafe { PrivBox::borrow(p) })
    }

    /// Queues the send engine to run for the QP; a no-op when it is already queued.
    fn queue(&self) {
        // SAFETY: `system_dfl_wq` is set at boot and never changes; `work` was initialised
        // (type invariant) and stays valid while queued, as `priv_free()` cancels it before
        // the `QpPriv` goes away.
        unsafe {
            kernel::bindings::queue_work_on(
                kernel::bindings::wq_misc_consts_WORK_CPU_UNBOUND as c_int,
                kernel::bindings::system_dfl_wq,
                self.work.get(),
            )
        };
    }

    /// Cancels a queued run of the send engine and waits for a running one to return.
    fn cancel_sync(&self) {
        // SAFETY: `work` was initialised (type invariant); the caller may sleep (rdmavt calls
        // stop_send_queue() and qp_priv_free() from process context without locks held).
        unsafe { kernel::bindings::cancel_work_sync(self.work.get()) };
    }
}

/// The work function of every `QpPriv::work`.
///
/// # Safety
///
/// `work` is the `work` field of a live `QpPriv`.
unsafe extern "C" fn send_work(work: *mut kernel::bindings::work_struct) {
    let work = work.cast::<Opaque<kernel::bindings::work_struct>>();
    // SAFETY: The only work items running this function are `QpPriv::work` fields (type
    // invariant), and `priv_free()` cancels them before freeing, so the `QpPriv` is alive.
    let this = unsafe { &*container_of!(work, QpPriv, work) };
    // SAFETY: `this.qp` is the QP whose `priv` this is (type invariant), alive until
    // priv_free(), which waits for this function to return first.
    unsafe { do_send(this.qp) };
}

/// Allocates the `QpPriv` of a new QP: `qp_priv_alloc`, called by rvt_create_qp() in process
/// context. Returns an `ERR_PTR()` on failure, as rdmavt expects.
pub(crate) extern "C" fn priv_alloc(
    _rdi: *mut bindings::rvt_dev_info,
    qp: *mut bindings::rvt_qp,
) -> *mut c_void {
    match KBox::pin_init(QpPriv::new(qp), GFP_KERNEL) {
        Ok(b) => {
            // A `*mut` on 7.3, a `*const` on 6.12; rdmavt keeps a `void *`.
            let p: *const c_void = b.into_foreign();
            p.cast_mut()
        }
        Err(e) => e.to_ptr(),
    }
}

/// Frees the `QpPriv` of a QP that is being destroyed, or whose creation failed after
/// `priv_alloc()`: `qp_priv_free`.
///
/// # Safety
///
/// `qp` is a QP of ours whose `priv` is null or came from `priv_alloc()`, and nothing else
/// uses the QP during the call.
pub(crate) unsafe extern "C" fn priv_free(
    _rdi: *mut bindings::rvt_dev_info,
    qp: *mut bindings::rvt_qp,
) {
    // SAFETY: rdmavt passes a QP of ours whose `priv` came from `priv_alloc()` (it does not
    // call this when that failed), and nothing uses the QP concurrently any more.
    let p = unsafe { ptr::replace(&raw mut (*qp).priv_, ptr::null_mut()) };
    if p.is_null() {
        return;
    }
    // SAFETY: `p` came from `PrivBox::into_foreign()` and is given back once.
    let this = unsafe { PrivBox::from_foreign(p) };
    // A reset QP's send work was already stopped; one whose creation failed never ran.
    // Either way, nothing may run on it once it is freed.
    this.cancel_sync();
}

/// `free_all_qps`: how many of the port's special QPs (SMI, GSI) still exist. rdmavt 7.3
/// requires the callback but never calls it; hfi1's counts the same way.
///
/// # Safety
///
/// `rdi` is the `rvt_dev_info` of a registered rvt_loop device.
pub(crate) unsafe extern "C" fn free_all_qps(rdi: *mut bindings::rvt_dev_info) -> u32 {
    // SAFETY: rdmavt passes the `rdi` of one of our devices.
    let port = unsafe { LoopDev::from_rdi(rdi) }.port();
    // SAFETY: `port` is valid; we only take the address of its `qp` array.
    let slots = unsafe { &raw mut (*port).qp }.cast::<*mut bindings::rvt_qp>();
    (0..2)
        // SAFETY: `slots.add(i)` is an aligned, valid slot of the two-entry `qp` array, which
        // rdmavt updates with rcu_assign_pointer(). Testing it for null needs no more than
        // rcu_access_pointer(), which a relaxed load is.
        .filter(|&i| !unsafe { atomic_load(slots.add(i), Relaxed) }.is_null())
        .count() as u32
}

/// `notify_qp_reset`: rvt_loop keeps no per-QP send state beyond the work item, which
/// `stop_send_queue` has already stopped.
pub(crate) extern "C" fn notify_qp_reset(_qp: *mut bindings::rvt_qp) {}

/// `notify_restart_rc`: an RC retry restarts sending at `psn`. `rvt_ruc_loopback()`
/// completes each request before it takes the next, so nothing is in flight to rewind.
pub(crate) extern "C" fn notify_restart_rc(_qp: *mut bindings::rvt_qp, _psn: u32, _wait: c_int) {}

/// `notify_error_qp`: hfi1 takes the QP off its wait lists here; rvt_loop has none.
pub(crate) extern "C" fn notify_error_qp(_qp: *mut bindings::rvt_qp) {}

/// `flush_qp_waiters`: rvt_loop never parks a QP waiting for resources, so none to flush.
pub(crate) extern "C" fn flush_qp_waiters(_qp: *mut bindings::rvt_qp) {}

/// `stop_send_queue`: after this, the send engine does not run for the QP until it is
/// scheduled again. Called by rdmavt without locks held, in process context.
///
/// # Safety
///
/// `qp` is a live QP of ours (see [`QpPriv::of`]), and the caller may sleep.
pub(crate) unsafe extern "C" fn stop_send_queue(qp: *mut bindings::rvt_qp) {
    // SAFETY: rdmavt calls this for a QP of ours that has its `priv`.
    if let Some(this) = unsafe { QpPriv::of(qp) } {
        this.cancel_sync();
    }
}

/// `quiesce_qp`: hfi1 waits here for DMA in flight; rvt_loop has none, and
/// `stop_send_queue`, called just before, has already waited for the send work.
pub(crate) extern "C" fn quiesce_qp(_qp: *mut bindings::rvt_qp) {}

/// The longest RC or UC message, as IB defines it (2 GiB).
const MAX_MESSAGE: u32 = 0x8000_0000;

/// `setup_wqe`: the driver's checks of a send WQE being posted, as hfi1's: a datagram (UD,
/// SMI, GSI) fits one packet of the port's MTU, and an RC or UC message is at most 2 GiB.
/// rdmavt fails the post with this errno (-EINVAL), as on hfi1. Without it, a UD send whose
/// SGEs add up to nearly 4 GiB would be posted and overflow the datagram's length at the
/// receiver.
///
/// It is rdmavt's last check: a request that passes is posted, and counted as sent here
/// (see [`Counter::SentPkts`]).
///
/// # Safety
///
/// `qp` is a live QP of ours and `wqe` the WQE rdmavt is posting on it.
pub(crate) unsafe extern "C" fn setup_wqe(
    qp: *mut bindings::rvt_qp,
    wqe: *mut bindings::rvt_swqe,
    _call_send: *mut bool,
) -> c_int {
    // SAFETY: The caller guarantees both; the QP's type is fixed, the WQE is the poster's.
    let (qpt, length) = unsafe { ((*qp).ibqp.qp_type, (*wqe).length) };
    let max = match qpt {
        ib_qp_type::IB_QPT_RC | ib_qp_type::IB_QPT_UC => MAX_MESSAGE,
        _ => device::PORT_MTU_BYTES,
    };
    if length > max {
        return EINVAL.to_errno();
    }
    // SAFETY: The caller guarantees both.
    unsafe { count_sent(qp, wqe) };
    0
}

/// Counts a request being posted as sent, unless it is a local operation (no packet) or the
/// QP cannot send (it will be flushed).
///
/// # Safety
///
/// `qp` is a live QP of ours and `wqe` the WQE rdmavt is posting on it.
unsafe fn count_sent(qp: *mut bindings::rvt_qp, wqe: *mut bindings::rvt_swqe) {
    // SAFETY: The WQE is the poster's; `wr` is the member every request fills.
    let (opcode, length) = unsafe { ((*wqe).__bindgen_anon_1.wr.opcode, (*wqe).length) };
    let local = tables::POST_PARMS[opcode.0 as usize].flags & bindings::RVT_OPERATION_LOCAL != 0;
    // SAFETY: `qp` is live.
    if local || unsafe { rdmavt::state_ops(qp) } & bindings::RVT_PROCESS_NEXT_SEND_OK == 0 {
        return;
    }
    // SAFETY: `qp` is live; its device is one of ours.
    let dev = unsafe { LoopDev::from_ibdev((*qp).ibqp.device) };
    dev.count(Counter::SentPkts, 1);
    dev.count(Counter::SentBytes, length.into());
}

/// `schedule_send`, called with the QP's `s_lock` held: queues the send engine.
///
/// # Safety
///
/// `qp` is a live QP of ours (see [`QpPriv::of`]).
pub(crate) unsafe extern "C" fn schedule_send(qp: *mut bindings::rvt_qp) -> bool {
    // SAFETY: rdmavt calls this for a live QP of ours, after `priv_alloc()`.
    unsafe { schedule_send_no_lock(qp) }
}

/// `schedule_send_no_lock`, called without `s_lock`: queues the send engine. Queueing needs
/// no QP lock, so both variants are the same. Returns whether the engine will run.
///
/// # Safety
///
/// `qp` is a live QP of ours (see [`QpPriv::of`]).
pub(crate) unsafe extern "C" fn schedule_send_no_lock(qp: *mut bindings::rvt_qp) -> bool {
    // SAFETY: rdmavt calls this for a live QP of ours, after `priv_alloc()`.
    match unsafe { QpPriv::of(qp) } {
        Some(this) => {
            this.queue();
            true
        }
        None => false,
    }
}

/// `do_send`: runs the send engine for the QP, from the send work item or directly from
/// rvt_post_send(), possibly in atomic context, with none of the QP's locks held.
///
/// RC and UC go to rdmavt's `rvt_ruc_loopback()`, as hfi1 and qib send to a QP of their own
/// port: it takes `s_lock` and `RVT_S_BUSY`, moves each request to the destination QP
/// (`remote_qpn`), and completes it, or flushes the queue in the error state. rdmavt has
/// no datagram loopback, so rvt_loop delivers UD, SMI and GSI requests itself ([`ud`]).
///
/// # Safety
///
/// `qp` is a live QP of ours.
pub(crate) unsafe extern "C" fn do_send(qp: *mut bindings::rvt_qp) {
    // SAFETY: rdmavt passes a live QP; its type never changes.
    let qpt = unsafe { (*qp).ibqp.qp_type };
    if qpt == ib_qp_type::IB_QPT_RC || qpt == ib_qp_type::IB_QPT_UC {
        // SAFETY: A live RC or UC QP, no locks held (rdmavt calls do_send() without them,
        // and so does the work item).
        unsafe { rdmavt::ruc_loopback(qp) };
    } else {
        // SAFETY: A live UD, SMI or GSI QP (rdmavt creates no other kinds for us), no locks
        // held.
        unsafe { ud::do_send(qp) };
    }
}

/// The IB MTU enum's size in bytes, or `None` for a value that is not an IB MTU.
fn mtu_bytes(mtu: bindings::ib_mtu) -> Option<u32> {
    (bindings::ib_mtu_IB_MTU_256..=bindings::ib_mtu_IB_MTU_4096)
        .contains(&mtu)
        .then(|| 128 << mtu)
}

/// `get_pmtu_from_attr`: the path MTU (enum) a modify_qp() asks for, which may not exceed the
/// port's; -EINVAL for a value that is not an IB MTU.
///
/// # Safety
///
/// `attr` points to valid QP attributes.
pub(crate) unsafe extern "C" fn get_pmtu_from_attr(
    _rdi: *mut bindings::rvt_dev_info,
    _qp: *mut bindings::rvt_qp,
    attr: *mut bindings::ib_qp_attr,
) -> c_int {
    // SAFETY: rdmavt passes the caller's valid attributes.
    let mtu = unsafe { (*attr).path_mtu };
    match mtu_bytes(mtu) {
        // Every IB MTU fits the port's 4096 bytes.
        Some(_) => mtu as c_int,
        None => EINVAL.to_errno(),
    }
}

/// `mtu_from_qp`: the QP's MTU in bytes for the path MTU enum `get_pmtu_from_attr` chose.
pub(crate) extern "C" fn mtu_from_qp(
    _rdi: *mut bindings::rvt_dev_info,
    _qp: *mut bindings::rvt_qp,
    pmtu: u32,
) -> u32 {
    mtu_bytes(pmtu).map_or(device::PORT_MTU_BYTES, |bytes| {
        bytes.min(device::PORT_MTU_BYTES)
    })
}

/// `mtu_to_path_mtu`: the path MTU enum of an MTU in bytes, for query_qp(). A QP whose path
/// MTU was never set has an MTU of 0, and reports the port's.
pub(crate) extern "C" fn mtu_to_path_mtu(mtu: u32) -> c_int {
    let path_mtu = (bindings::ib_mtu_IB_MTU_256..=bindings::ib_mtu_IB_MTU_4096)
        .find(|&e| mtu_bytes(e) == Some(mtu))
        .unwrap_or(device::PORT_MTU);
    path_mtu as c_int
}
