// SPDX-License-Identifier: GPL-2.0-only

//! `destroy_qp` and `query_qp`.

use kernel::ffi::c_int;

use super::{create, qpn, OwnedQp, Qp};
use crate::bindings;

/// `ib_device_ops.destroy_qp`: resets the QP (which stops it and unpublishes it), waits for
/// the last reference, then frees everything. The QP may be sending or receiving when this
/// starts. Always 0.
///
/// # Safety
///
/// Only ib_core calls this, through `RVT_DEV_OPS`, with a live QP of ours, once.
pub(crate) unsafe extern "C" fn destroy_qp(
    ibqp: *mut bindings::ib_qp,
    _udata: *mut bindings::ib_udata,
) -> c_int {
    // SAFETY: ib_core passes a live QP of ours, once, and calls no other verb on it.
    let mut qp = unsafe { OwnedQp::drain(Qp::from_ib(ibqp)) };
    let dev = qp.device();
    qpn::free_qpn(dev, qp.qpn());
    create::count_gone(dev, qp.qp_type());
    let mut f = qp.fields();
    // SAFETY: ib_core's helper, which drops the references the address vectors hold.
    unsafe {
        bindings::rdma_destroy_ah_attr(f.remote_ah_attr_mut());
        bindings::rdma_destroy_ah_attr(f.alt_ah_attr_mut());
    }
    qp.free_resources(true);
    0
}

/// `ib_device_ops.query_qp`: the QP's attributes and creation parameters. Always 0.
///
/// # Safety
///
/// Only ib_core calls this, through `RVT_DEV_OPS`, with a live QP of ours and valid output
/// structs.
pub(crate) unsafe extern "C" fn query_qp(
    ibqp: *mut bindings::ib_qp,
    attr: *mut bindings::ib_qp_attr,
    _attr_mask: c_int,
    init_attr: *mut bindings::ib_qp_init_attr,
) -> c_int {
    // SAFETY: ib_core passes a live QP of ours and valid, exclusive output structs.
    let (qp, attr, init) = unsafe { (Qp::from_ib(ibqp), &mut *attr, &mut *init_attr) };
    qp.query(attr, init);
    0
}

impl Qp {
    fn query(&self, attr: &mut bindings::ib_qp_attr, init: &mut bindings::ib_qp_init_attr) {
        let dev = self.device();
        let ibqp = self.ibqp();
        let parms = dev.dparms();
        // As in C, the fields are read without the QP locks: a snapshot that may mix values
        // from before and after a concurrent modify_qp(), which ib_core's callers accept.
        attr.qp_state = bindings::ib_qp_state(u32::from(self.state_unlocked()));
        attr.cur_qp_state = attr.qp_state;
        attr.path_mtu = dev
            .driver()
            .mtu_to_path_mtu(u32::from(self.pmtu_unlocked()))
            .unwrap_or(0);
        attr.path_mig_state = u32::from(self.s_mig_state_unlocked());
        attr.qkey = self.qkey_unlocked();
        attr.rq_psn = self.r_psn_unlocked() & parms.psn_mask as u32;
        attr.sq_psn = self.s_next_psn_unlocked() & parms.psn_mask as u32;
        attr.dest_qp_num = self.remote_qpn_unlocked();
        attr.qp_access_flags = c_int::from(self.qp_access_flags_unlocked());
        attr.cap.max_send_wr = self.s_size() - 1 - u32::from(parms.reserved_operations);
        // SAFETY: the QP's receive queue; its geometry is fixed at creation.
        let (rq_size, rq_max_sge) = unsafe { ((*self.rq()).size, (*self.rq()).max_sge) };
        // SAFETY: `ibqp.srq` is set by ib_core at creation and fixed.
        attr.cap.max_recv_wr = if unsafe { (*ibqp).srq }.is_null() {
            rq_size - 1
        } else {
            0
        };
        attr.cap.max_send_sge = u32::from(self.s_max_sge());
        attr.cap.max_recv_sge = u32::from(rq_max_sge);
        attr.cap.max_inline_data = 0;
        (attr.ah_attr, attr.alt_ah_attr) = self.ah_attrs_unlocked();
        attr.pkey_index = u16::from(self.s_pkey_index_unlocked());
        attr.alt_pkey_index = u16::from(self.s_alt_pkey_index_unlocked());
        attr.en_sqd_async_notify = 0;
        attr.sq_draining = self.s_draining_unlocked();
        attr.max_rd_atomic = self.s_max_rd_atomic_unlocked();
        attr.max_dest_rd_atomic = self.r_max_rd_atomic_unlocked();
        attr.min_rnr_timer = self.r_min_rnr_timer_unlocked();
        attr.port_num = u32::from(self.port_num_unlocked());
        attr.timeout = self.timeout_unlocked();
        attr.retry_cnt = self.s_retry_cnt_unlocked();
        attr.rnr_retry = self.s_rnr_retry_cnt_unlocked();
        attr.alt_port_num = attr.alt_ah_attr.port_num;
        attr.alt_timeout = self.alt_timeout_unlocked();

        // SAFETY: the `ib_qp` fields ib_core set at creation, fixed since.
        unsafe {
            init.event_handler = (*ibqp).event_handler;
            init.qp_context = (*ibqp).qp_context;
            init.send_cq = (*ibqp).send_cq;
            init.recv_cq = (*ibqp).recv_cq;
            init.srq = (*ibqp).srq;
            init.qp_type = (*ibqp).qp_type;
        }
        init.cap = attr.cap;
        init.sq_sig_type = if self.s_flags_unlocked() & bindings::RVT_S_SIGNAL_REQ_WR != 0 {
            bindings::ib_sig_type_IB_SIGNAL_REQ_WR
        } else {
            bindings::ib_sig_type_IB_SIGNAL_ALL_WR
        };
        init.port_num = u32::from(self.port_num_unlocked());
    }
}
