// SPDX-License-Identifier: GPL-2.0-only

//! `create_qp`: checks the request against the driver's limits, sets up the queues, the
//! driver's private data and a QP number, and, for user space, the mmap'able receive ring.
//!
//! ib_core allocates the `rvt_qp` zeroed (`size_ib_qp`) and hands us its `ib_qp` head. Every
//! resource a QP owns is recorded in its C fields as soon as it exists, so one function,
//! [`OwnedQp::free_resources`], unwinds a failed creation and finishes a destroy alike. Both
//! run on an [`OwnedQp`]: the QP that nobody else sees yet, or any more.

use kernel::{ffi::c_int, prelude::*};

use super::{
    attr::QpState,
    init_attr::{allowed_ops, InitAttr, QpType},
    qpn::{self, QpnRequest, AIP_QP_BASE},
    OwnedQp, Qp,
};
use crate::{
    bindings,
    device::Device,
    krwq,
    mmap::{MmapInfo, Udata},
};

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
    // SAFETY: ib_core passes valid attributes, which the reply's capabilities go back into,
    // and `udata` NULL or valid, for this call.
    let (mut init, udata) = unsafe { (InitAttr::from_raw(init_attr), Udata::from_raw(udata)) };
    match qp.create(&mut init, udata) {
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
fn check_request(dev: &Device, init: &InitAttr<'_>) -> Result<Shape> {
    let props = &dev.dparms().props;
    let cap = init.caps();
    if init.unsupported_flags() {
        return Err(crate::compat::eopnotsupp());
    }
    if cap.max_send_sge > crate::device::limit(props.max_send_sge)
        || cap.max_send_wr > crate::device::limit(props.max_qp_wr)
    {
        return Err(EINVAL);
    }
    let srq_max_sge = init.srq_max_sge();
    if srq_max_sge.is_none() {
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
    match init.qp_type() {
        QpType::IB_QPT_SMI | QpType::IB_QPT_GSI => {
            let port = init.port_num();
            if port == 0 || port > dev.phys_port_cnt() {
                return Err(EINVAL);
            }
        }
        QpType::IB_QPT_RC | QpType::IB_QPT_UC | QpType::IB_QPT_UD => {}
        // No raw or XRC QPs, as in C.
        _ => return Err(crate::compat::eopnotsupp()),
    }
    let rq_sges = srq_max_sge.unwrap_or(cap.max_recv_sge);
    // `max_send_wr` is within the device's `max_qp_wr`, an int.
    let sq_slots = cap.max_send_wr + 1 + u32::from(dev.dparms().reserved_operations);
    Ok(Shape {
        sq_slots,
        extra_rsges: rq_sges.saturating_sub(1) as usize,
    })
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
    fn create(&mut self, init: &mut InitAttr<'_>, udata: Udata) -> Result {
        let dev = self.device();
        let shape = check_request(dev, init)?;
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
        init: &mut InitAttr<'_>,
        shape: &Shape,
        udata: Udata,
        progress: &mut Progress,
    ) -> Result {
        self.alloc_queues(dev, init, shape)?;
        self.alloc_driver_priv(dev)?;
        progress.driver_priv = true;
        if init.srq_max_sge().is_none() {
            self.alloc_rq(dev, init, udata)?;
        }
        self.init_fields(init, shape);
        if self.is_ud_like() {
            self.alloc_ud_attrs(dev.dparms().node)?;
        }
        self.number(dev, init)?;
        progress.numbered = true;
        // SAFETY: `qp_priv_alloc` succeeded above, and the QP is still being created.
        unsafe { dev.driver().qp_priv_init(self, init) }?;
        init.clear_max_inline_data();
        self.reply(dev, udata)?;
        count_new(dev, init.qp_type())?;
        if let Some(info) = self.mmap_info() {
            info.add_pending(dev);
            let _ = info.into_raw();
        }
        Ok(())
    }

    /// The send queue, the receive SGE list, RC's ack queue and the timers.
    fn alloc_queues(&mut self, dev: &Device, init: &InitAttr<'_>, shape: &Shape) -> Result {
        let node = dev.dparms().node;
        self.alloc_send_queue(shape.sq_slots, init.caps().max_send_sge, node)?;
        self.alloc_recv_sges(shape.extra_rsges, node)?;
        if init.qp_type() == QpType::IB_QPT_RC {
            // `rvt_max_atomic()`: one more entry than the deepest RDMA read/atomic queue.
            self.alloc_ack_queue(usize::from(dev.dparms().max_rdma_atomic) + 1, node)?;
        }
        *self.allowed_ops_mut() = allowed_ops(init.qp_type());
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
    fn alloc_rq(&self, dev: &Device, init: &InitAttr<'_>, udata: Udata) -> Result {
        let cap = init.caps();
        // SAFETY: the QP's zeroed receive queue, ours alone during creation; `max_recv_sge`
        // is within the device's limit (`check_request`).
        unsafe {
            krwq::alloc_sized(
                self.rq(),
                cap.max_recv_wr + 1,
                cap.max_recv_sge,
                dev.dparms().node,
                udata.is_user(),
            )
        }
        .map(|_| ())
    }

    /// Locks, counts, queue geometry and the reset state (`rvt_init_qp`).
    fn init_fields(&mut self, init: &InitAttr<'_>, shape: &Shape) {
        let cap = init.caps();
        self.init_locks();
        self.fields().set_state(QpState::IB_QPS_RESET.0 as u8);
        *self.s_size_mut() = shape.sq_slots;
        *self.fields().s_avail_mut() = cap.max_send_wr;
        *self.s_max_sge_mut() = cap.max_send_sge as u8;
        if init.signal_req_wr() {
            *self.fields().s_flags_mut() = bindings::RVT_S_SIGNAL_REQ_WR;
        }
    }

    /// A QP number, the port, and the reset state's fields.
    fn number(&mut self, dev: &Device, init: &InitAttr<'_>) -> Result {
        let aip = init.netdev_use();
        let req = QpnRequest {
            qp_type: init.qp_type(),
            port_num: init.port_num(),
            aip,
        };
        let qpn = qpn::alloc_qpn(dev, &req)?;
        self.set_qpn(if aip { qpn | AIP_QP_BASE } else { qpn });
        let mut f = self.fields();
        *f.port_num_mut() = init.port_num() as u8;
        f.init_reset_state(init.qp_type());
        Ok(())
    }

    /// Tells user space where to mmap the receive ring (0 when it has none: an SRQ's QP).
    fn reply(&mut self, dev: &Device, udata: Udata) -> Result {
        if !udata.wants_offset() {
            return Ok(());
        }
        let mut offset = 0u64;
        // SAFETY: the QP's receive queue, ours alone during creation, set up by `alloc_rq`
        // (or zeroed, for an SRQ's QP).
        if let Some((ring, bytes)) = unsafe { krwq::user_ring(self.rq()) } {
            let bytes = u32::try_from(bytes).map_err(|_| ENOMEM)?;
            let info = MmapInfo::new(dev, bytes, udata, ring)?;
            offset = info.offset();
            // From here the info owns the ring (see `free_resources`).
            *self.ip_mut() = info.into_raw();
        }
        udata.reply_offset(offset)?;
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
            unsafe { krwq::forget_user_ring(self.rq()) };
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
        self.free_queues();
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

/// Counts a new QP against the driver's `max_qp` (-ENOMEM at the limit, as C).
fn count_new(dev: &Device, qp_type: QpType) -> Result {
    let max = crate::device::limit(dev.dparms().props.max_qp);
    dev.with_qp_counts(|n| {
        if *n.allocated == max {
            return Err(ENOMEM);
        }
        *n.allocated += 1;
        if qp_type == QpType::IB_QPT_RC {
            *n.rc += 1;
        }
        Ok(())
    })
}

/// Uncounts a destroyed QP: the reverse of [`count_new`].
pub(super) fn count_gone(dev: &Device, qp_type: QpType) {
    dev.with_qp_counts(|n| {
        *n.allocated -= 1;
        if qp_type == QpType::IB_QPT_RC {
            *n.rc -= 1;
        }
    })
}
