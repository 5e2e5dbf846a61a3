// SPDX-License-Identifier: GPL-2.0-only

//! `create_qp`: checks the request against the driver's limits, sets up the queues, the
//! driver's private data and a QP number, and, for user space, the mmap'able receive ring.
//!
//! ib_core allocates the `rvt_qp` zeroed (`size_ib_qp`) and hands us its `ib_qp` head. Every
//! resource a QP owns is recorded in its C fields as soon as it exists, so one function,
//! [`OwnedQp::free_resources`], unwinds a failed creation and finishes a destroy alike. Both
//! run on an [`OwnedQp`]: the QP that nobody else sees yet, or any more.

use core::{ffi::c_void, mem::size_of};

use kernel::{ffi::c_int, prelude::*};

use super::{
    qpn::{self, QpnRequest, AIP_QP_BASE},
    OwnedQp, Qp,
};
use crate::{
    bindings,
    device::Device,
    krwq::{self, ring::rwqe_size},
    mmap::MmapInfo,
};

/// `RC_QP_SCALING_INTERVAL`: RC QPs per extra jiffy of retry timeout (`busy_jiffies`).
const RC_QP_SCALING_INTERVAL: u32 = 5;

const QPT_RC: bindings::ib_qp_type = bindings::ib_qp_type::IB_QPT_RC;
const QPT_UC: bindings::ib_qp_type = bindings::ib_qp_type::IB_QPT_UC;
const QPT_UD: bindings::ib_qp_type = bindings::ib_qp_type::IB_QPT_UD;
const QPT_SMI: bindings::ib_qp_type = bindings::ib_qp_type::IB_QPT_SMI;
const QPT_GSI: bindings::ib_qp_type = bindings::ib_qp_type::IB_QPT_GSI;

/// `ib_device_ops.create_qp`.
///
/// # Safety
///
/// Only ib_core calls this, through `RVT_DEV_OPS`, with a new zeroed QP of one of our devices,
/// valid attributes, and `udata` NULL (kernel caller) or valid.
pub(crate) unsafe extern "C" fn create_qp(
    ibqp: *mut bindings::ib_qp,
    init_attr: *mut bindings::ib_qp_init_attr,
    udata: *mut bindings::ib_udata,
) -> c_int {
    // SAFETY: ib_core allocated the QP with `size_ib_qp` for this call: the head of a zeroed
    // `rvt_qp`, which it hands to no other verb before this returns; `qp` is dropped here.
    let mut qp = unsafe { OwnedQp::new(ibqp) };
    // SAFETY: ib_core passes valid attributes, which the reply's capabilities go back into.
    let init = unsafe { &mut *init_attr };
    match qp.create(init, udata) {
        Ok(()) => 0,
        Err(e) => e.to_errno(),
    }
}

/// The sizes a valid request asks for.
struct Shape {
    /// Send queue slots: `max_send_wr`, one always free, and the driver's reserved ones.
    sq_slots: u32,
    /// Receive SGEs beyond the first, for `r_sg_list`.
    extra_rsges: usize,
}

/// C's checks of the request, in C's order (so the same request fails with the same errno).
fn check_request(
    dev: &Device,
    ibqp: *mut bindings::ib_qp,
    init: &bindings::ib_qp_init_attr,
) -> Result<Shape> {
    let props = &dev.dparms().props;
    let cap = &init.cap;
    let netdev_use = bindings::ib_qp_create_flags_IB_QP_CREATE_NETDEV_USE as u32;
    if init.create_flags & !netdev_use != 0 {
        return Err(crate::compat::eopnotsupp());
    }
    if cap.max_send_sge > crate::device::limit(props.max_send_sge)
        || cap.max_send_wr > crate::device::limit(props.max_qp_wr)
    {
        return Err(EINVAL);
    }
    if init.srq.is_null() {
        if cap.max_recv_sge > crate::device::limit(props.max_recv_sge)
            || cap.max_recv_wr > crate::device::limit(props.max_qp_wr)
        {
            return Err(EINVAL);
        }
        // Widened so that four u32 limits cannot wrap to zero.
        let total = [
            cap.max_send_sge,
            cap.max_send_wr,
            cap.max_recv_sge,
            cap.max_recv_wr,
        ]
        .iter()
        .map(|&v| u64::from(v))
        .sum::<u64>();
        if total == 0 {
            return Err(EINVAL);
        }
    }
    match init.qp_type {
        QPT_SMI | QPT_GSI => {
            // SAFETY: `ibqp->device` is our registered device.
            let ports = unsafe { (*(*ibqp).device).phys_port_cnt };
            if init.port_num == 0 || init.port_num > ports {
                return Err(EINVAL);
            }
        }
        QPT_RC | QPT_UC | QPT_UD => {}
        // No raw or XRC QPs, as in C.
        _ => return Err(crate::compat::eopnotsupp()),
    }
    let rq_sges = if init.srq.is_null() {
        cap.max_recv_sge
    } else {
        // SAFETY: ib_core passes a live SRQ of this device; `rq.max_sge` is fixed for it.
        u32::from(unsafe { (*init.srq.cast::<bindings::rvt_srq>()).rq.max_sge })
    };
    let sq_slots = cap.max_send_wr + 1 + u32::from(dev.dparms().reserved_operations);
    Ok(Shape {
        sq_slots,
        extra_rsges: rq_sges.saturating_sub(1) as usize,
    })
}

/// `get_allowed_ops`: the opcode family of the QP type (`IB_OPCODE_RC`, `_UC`, `_UD`).
fn allowed_ops(qp_type: bindings::ib_qp_type) -> u8 {
    (match qp_type {
        QPT_RC => bindings::IB_OPCODE_RC,
        QPT_UC => bindings::IB_OPCODE_UC,
        _ => bindings::IB_OPCODE_UD,
    }) as u8
}

/// `kzalloc_node()`.
fn kzalloc_node(size: usize, node: c_int) -> Result<*mut c_void> {
    // SAFETY: a plain allocation.
    let p = unsafe { bindings::rdmavt_rs_kzalloc_node(size, node) };
    if p.is_null() {
        Err(ENOMEM)
    } else {
        Ok(p)
    }
}

/// How far a creation got: what its error path must give back besides the QP's memory.
#[derive(Default)]
struct Progress {
    /// The driver's `qp_priv_alloc` succeeded (its result may be NULL).
    driver_priv: bool,
    /// A QP number was allocated.
    numbered: bool,
}

impl OwnedQp<'_> {
    fn create(
        &mut self,
        init: &mut bindings::ib_qp_init_attr,
        udata: *mut bindings::ib_udata,
    ) -> Result {
        let dev = self.device();
        let shape = check_request(dev, self.ibqp(), init)?;
        let mut progress = Progress::default();
        let res = self.set_up(dev, init, &shape, udata, &mut progress);
        if res.is_err() {
            if progress.numbered {
                qpn::free_qpn(dev, self.qpn());
            }
            self.free_resources(progress.driver_priv);
        }
        res
    }

    /// Everything after the checks, in C's order. On error, the caller frees what was
    /// recorded in the QP, and what `progress` says was taken.
    fn set_up(
        &mut self,
        dev: &Device,
        init: &mut bindings::ib_qp_init_attr,
        shape: &Shape,
        udata: *mut bindings::ib_udata,
        progress: &mut Progress,
    ) -> Result {
        self.alloc_queues(dev, init, shape)?;
        self.alloc_driver_priv(dev)?;
        progress.driver_priv = true;
        if init.srq.is_null() {
            self.alloc_rq(dev, init, udata)?;
        }
        self.init_fields(init, shape);
        self.alloc_ud_attrs(dev)?;
        self.number(dev, init)?;
        progress.numbered = true;
        // SAFETY: `qp_priv_alloc` succeeded above, and the QP is still being created.
        unsafe { dev.driver().qp_priv_init(self, init) }?;
        init.cap.max_inline_data = 0;
        self.reply(dev, udata)?;
        count_new(dev, init.qp_type)?;
        if let Some(info) = self.mmap_info() {
            info.add_pending(dev);
            let _ = info.into_raw();
        }
        Ok(())
    }

    /// The send queue, the receive SGE list, RC's ack queue and the timers.
    fn alloc_queues(
        &mut self,
        dev: &Device,
        init: &bindings::ib_qp_init_attr,
        shape: &Shape,
    ) -> Result {
        let node = dev.dparms().node;
        let slot = size_of::<bindings::rvt_swqe>()
            + init.cap.max_send_sge as usize * size_of::<bindings::rvt_sge>();
        let sq_bytes = slot.checked_mul(shape.sq_slots as usize).ok_or(ENOMEM)?;
        // SAFETY: a plain allocation.
        let swq = unsafe { bindings::rdmavt_rs_vzalloc_node(sq_bytes, node) };
        if swq.is_null() {
            return Err(ENOMEM);
        }
        *self.s_wq_mut() = swq.cast();
        let sg_list = kzalloc_node(shape.extra_rsges * size_of::<bindings::rvt_sge>(), node)?;
        *self.r_sg_list_mut() = sg_list.cast();
        if init.qp_type == QPT_RC {
            // `rvt_max_atomic()`: one more entry than the deepest RDMA read/atomic queue.
            let entries = usize::from(dev.dparms().max_rdma_atomic) + 1;
            let acks = kzalloc_node(entries * size_of::<bindings::rvt_ack_entry>(), node)?;
            *self.s_ack_queue_mut() = acks.cast();
        }
        *self.allowed_ops_mut() = allowed_ops(init.qp_type);
        // SAFETY: the QP is ours alone during creation: its timers are not in use yet.
        unsafe { super::timers::init(self.as_raw()) };
        Ok(())
    }

    /// The driver's private data (hfi1's `hfi1_qp_priv`, rvt_loop's send work).
    fn alloc_driver_priv(&mut self, dev: &Device) -> Result {
        let p = dev.driver().qp_priv_alloc(self)?;
        self.set_driver_priv(p);
        let mut f = self.fields();
        *f.timeout_jiffies_mut() = super::timeout_to_jiffies(f.timeout());
        Ok(())
    }

    /// The receive queue of a QP without SRQ: a kernel ring, or for user space the ring it
    /// will mmap.
    fn alloc_rq(
        &self,
        dev: &Device,
        init: &bindings::ib_qp_init_attr,
        udata: *mut bindings::ib_udata,
    ) -> Result {
        let rq = self.rq();
        let size = init.cap.max_recv_wr + 1;
        let max_sge = init.cap.max_recv_sge;
        // SAFETY: the QP is ours alone during creation.
        unsafe {
            (*rq).size = size;
            (*rq).max_sge = max_sge as u8;
        }
        let bytes = rwqe_size(max_sge)
            .checked_mul(size as usize)
            .ok_or(ENOMEM)?;
        let bytes = u32::try_from(bytes).map_err(|_| ENOMEM)?;
        // SAFETY: `rq` is the QP's zeroed receive queue, ours alone; `max_sge` is set.
        unsafe { krwq::alloc(rq, bytes, dev.dparms().node, !udata.is_null()) }
    }

    /// Locks, counts, queue geometry and the reset state (`rvt_init_qp`).
    fn init_fields(&mut self, init: &bindings::ib_qp_init_attr, shape: &Shape) {
        self.init_locks();
        self.fields()
            .set_state(bindings::ib_qp_state::IB_QPS_RESET.0 as u8);
        *self.s_size_mut() = shape.sq_slots;
        *self.fields().s_avail_mut() = init.cap.max_send_wr;
        *self.s_max_sge_mut() = init.cap.max_send_sge as u8;
        if init.sq_sig_type == bindings::ib_sig_type_IB_SIGNAL_REQ_WR {
            *self.fields().s_flags_mut() = bindings::RVT_S_SIGNAL_REQ_WR;
        }
    }

    /// `alloc_ud_wq_attr`: UD send WQEs each carry a copy of their AH's attributes.
    fn alloc_ud_attrs(&mut self, dev: &Device) -> Result {
        if !self.is_ud_like() {
            return Ok(());
        }
        for n in 0..self.s_size() {
            let attr = kzalloc_node(size_of::<bindings::rdma_ah_attr>(), dev.dparms().node)?;
            // SAFETY: the QP is ours alone during creation; the slot is in range.
            unsafe { (*self.swqe(n)).__bindgen_anon_1.ud_wr.attr = attr.cast() };
        }
        Ok(())
    }

    /// A QP number, the port, and the reset state's fields.
    fn number(&mut self, dev: &Device, init: &bindings::ib_qp_init_attr) -> Result {
        let aip =
            init.create_flags & bindings::ib_qp_create_flags_IB_QP_CREATE_NETDEV_USE as u32 != 0;
        let req = QpnRequest {
            qp_type: init.qp_type,
            port_num: init.port_num,
            aip,
        };
        let qpn = qpn::alloc_qpn(dev, &req)?;
        self.set_qpn(if aip { qpn | AIP_QP_BASE } else { qpn });
        let mut f = self.fields();
        *f.port_num_mut() = init.port_num as u8;
        f.init_reset_state(init.qp_type);
        Ok(())
    }

    /// Tells user space where to mmap the receive ring (0 when it has none: an SRQ's QP).
    fn reply(&mut self, dev: &Device, udata: *mut bindings::ib_udata) -> Result {
        // SAFETY: NULL or ib_core's valid udata.
        if udata.is_null() || unsafe { (*udata).outlen } < size_of::<u64>() {
            return Ok(());
        }
        let rq = self.rq();
        // SAFETY: the QP is ours alone during creation.
        let wq = unsafe { (*rq).wq };
        let mut offset = 0u64;
        if !wq.is_null() {
            // SAFETY: as above; the ring's geometry is set.
            let (size, max_sge) = unsafe { ((*rq).size, u32::from((*rq).max_sge)) };
            let bytes = size_of::<bindings::rvt_rwq>() + size as usize * rwqe_size(max_sge);
            let info = MmapInfo::new(dev, bytes as u32, udata, wq.cast())?;
            offset = info.offset();
            // From here the info owns the ring (see `free_resources`).
            *self.ip_mut() = info.into_raw();
        }
        // SAFETY: `udata` is valid with room for a u64 (checked above).
        kernel::error::to_result(unsafe {
            bindings::rdmavt_rs_ib_copy_to_udata(udata, (&raw mut offset).cast(), size_of::<u64>())
        })?;
        *self.pid_mut() = kernel::current!().pid();
        Ok(())
    }

    /// Frees what a QP owns: after a failed creation, or at the end of a destroy once the
    /// last reference is gone. Fields never set are NULL (ib_core zeroes the QP).
    ///
    /// `driver_priv` says whether the driver's `qp_priv_alloc` succeeded: then its
    /// `qp_priv_free` is called, whatever `priv` holds, as C calls it.
    pub(super) fn free_resources(&mut self, driver_priv: bool) {
        let dev = self.device();
        if let Some(info) = self.mmap_info() {
            // The info owns the user ring: its last reference frees it. The C rdmavt also
            // vfree()s the ring on one error path, a double free; not here.
            *self.ip_mut() = core::ptr::null_mut();
            // SAFETY: the QP's own receive queue, which nothing else uses (type invariant).
            unsafe { (*self.rq()).wq = core::ptr::null_mut() };
            drop(info);
        }
        // SAFETY: the QP's receive queue, unused from now on (type invariant); `create` set
        // it up, or left it zeroed.
        unsafe { krwq::free(self.rq()) };
        if driver_priv {
            // SAFETY: `qp_priv_alloc` succeeded (caller's word), this is the one call for it,
            // and nothing else uses the QP (type invariant).
            unsafe {
                dev.driver().qp_priv_free(self);
            }
            self.set_driver_priv(core::ptr::null_mut());
        }
        self.free_ud_attrs();
        // SAFETY: each queue was allocated by `create` with the matching allocator, or is
        // NULL, and nothing uses it any more (type invariant).
        unsafe {
            bindings::kfree(self.s_ack_queue().cast());
            bindings::kfree(self.r_sg_list().cast());
            bindings::vfree(self.s_wq().cast());
        }
        *self.s_ack_queue_mut() = core::ptr::null_mut();
        *self.r_sg_list_mut() = core::ptr::null_mut();
        *self.s_wq_mut() = core::ptr::null_mut();
    }

    /// `free_ud_wq_attr`.
    fn free_ud_attrs(&mut self) {
        if self.s_wq().is_null() || !self.is_ud_like() {
            return;
        }
        for n in 0..self.s_size() {
            // SAFETY: nothing else uses the send queue (type invariant); the slot is in
            // range and holds a copy `alloc_ud_attrs` allocated, or NULL.
            unsafe {
                let wqe = self.swqe(n);
                bindings::kfree((*wqe).__bindgen_anon_1.ud_wr.attr.cast());
                (*wqe).__bindgen_anon_1.ud_wr.attr = core::ptr::null_mut();
            }
        }
    }
}

impl Qp {
    /// The mmap info of a user receive ring, as a borrowed handle (given back with
    /// `into_raw`).
    fn mmap_info(&self) -> Option<MmapInfo> {
        let ip = self.ip();
        // SAFETY: `ip` came from `MmapInfo::into_raw`; the caller gives it back.
        (!ip.is_null()).then(|| unsafe { MmapInfo::from_raw(ip) })
    }
}

/// The device's QP counts, borrowed under `n_qps_lock`.
struct QpCounts<'a> {
    allocated: &'a mut u32,
    rc: &'a mut u32,
}

/// Runs `f` on the device's QP counts with `n_qps_lock` held, then keeps the RC retry timers'
/// `busy_jiffies` scaled to the number of RC QPs (unchanged unless `f` changed that number).
fn with_qp_counts<R>(dev: &Device, f: impl FnOnce(QpCounts<'_>) -> R) -> R {
    let rdi = dev.as_raw();
    // SAFETY: `n_qps_lock` is initialised at registration and protects the counts.
    let _guard = unsafe {
        crate::lock::lock_raw::<crate::compat::lock::SpinLockBackend>(&raw mut (*rdi).n_qps_lock)
    };
    // SAFETY: the counts and `busy_jiffies` are protected by `n_qps_lock`, held; the borrows
    // end before it is released.
    unsafe {
        let r = f(QpCounts {
            allocated: &mut (*rdi).n_qps_allocated,
            rc: &mut (*rdi).n_rc_qps,
        });
        (*rdi).busy_jiffies = (*rdi).n_rc_qps / RC_QP_SCALING_INTERVAL;
        r
    }
}

/// Counts a new QP against the driver's `max_qp` (-ENOMEM at the limit, as C).
fn count_new(dev: &Device, qp_type: bindings::ib_qp_type) -> Result {
    let max = crate::device::limit(dev.dparms().props.max_qp);
    with_qp_counts(dev, |n| {
        if *n.allocated == max {
            return Err(ENOMEM);
        }
        *n.allocated += 1;
        if qp_type == QPT_RC {
            *n.rc += 1;
        }
        Ok(())
    })
}

/// Uncounts a destroyed QP: the reverse of [`count_new`].
pub(super) fn count_gone(dev: &Device, qp_type: bindings::ib_qp_type) {
    with_qp_counts(dev, |n| {
        *n.allocated -= 1;
        if qp_type == QPT_RC {
            *n.rc -= 1;
        }
    })
}
