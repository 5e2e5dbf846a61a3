// SPDX-License-Identifier: GPL-2.0-only

//! `destroy_qp` and `query_qp`.

use kernel::ffi::c_int;

use super::{create, qpn, Qp};
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
    // SAFETY: ib_core passes a live QP of ours.
    let qp = unsafe { Qp::from_ib(ibqp) };
    qp.reset();
    // SAFETY: a live QP; the reset took it out of the lookup table, so only holders of a
    // reference taken before can still reach it, and they drop it.
    unsafe { bindings::rdmavt_rs_wait_qp_unused(qp.as_raw()) };
    let dev = qp.device();
    qpn::free_qpn(dev, qp.qpn());
    create::count_gone(dev, qp.qp_type());
    let raw = qp.as_raw();
    // SAFETY: no references are left and ib_core calls no other verb on a QP it destroys.
    unsafe {
        bindings::rdma_destroy_ah_attr(&mut (*raw).remote_ah_attr);
        bindings::rdma_destroy_ah_attr(&mut (*raw).alt_ah_attr);
        qp.free_resources(true);
    }
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
        let qp = self.as_raw();
        let ibqp = self.ibqp();
        let parms = dev.dparms();
        // As in C, the fields are read without the QP locks: a snapshot that may mix values
        // from before and after a concurrent modify_qp(), which ib_core's callers accept.
        // SAFETY: a live QP; every field read is plain data of it.
        unsafe {
            attr.qp_state = bindings::ib_qp_state(u32::from((*qp).state));
            attr.cur_qp_state = attr.qp_state;
            attr.path_mtu = dev
                .driver()
                .mtu_to_path_mtu(u32::from((*qp).pmtu))
                .unwrap_or(0);
            attr.path_mig_state = u32::from((*qp).s_mig_state);
            attr.qkey = (*qp).qkey;
            attr.rq_psn = (*qp).r_psn & parms.psn_mask as u32;
            attr.sq_psn = (*qp).s_next_psn & parms.psn_mask as u32;
            attr.dest_qp_num = (*qp).remote_qpn;
            attr.qp_access_flags = c_int::from((*qp).qp_access_flags);
            attr.cap.max_send_wr = (*qp).s_size - 1 - u32::from(parms.reserved_operations);
            attr.cap.max_recv_wr = if (*ibqp).srq.is_null() {
                (*qp).r_rq.size - 1
            } else {
                0
            };
            attr.cap.max_send_sge = u32::from((*qp).s_max_sge);
            attr.cap.max_recv_sge = u32::from((*qp).r_rq.max_sge);
            attr.cap.max_inline_data = 0;
            attr.ah_attr = (*qp).remote_ah_attr;
            attr.alt_ah_attr = (*qp).alt_ah_attr;
            attr.pkey_index = u16::from((*qp).s_pkey_index);
            attr.alt_pkey_index = u16::from((*qp).s_alt_pkey_index);
            attr.en_sqd_async_notify = 0;
            attr.sq_draining = (*qp).s_draining;
            attr.max_rd_atomic = (*qp).s_max_rd_atomic;
            attr.max_dest_rd_atomic = (*qp).r_max_rd_atomic;
            attr.min_rnr_timer = (*qp).r_min_rnr_timer;
            attr.port_num = u32::from((*qp).port_num);
            attr.timeout = (*qp).timeout;
            attr.retry_cnt = (*qp).s_retry_cnt;
            attr.rnr_retry = (*qp).s_rnr_retry_cnt;
            attr.alt_port_num = (*qp).alt_ah_attr.port_num;
            attr.alt_timeout = (*qp).alt_timeout;

            init.event_handler = (*ibqp).event_handler;
            init.qp_context = (*ibqp).qp_context;
            init.send_cq = (*ibqp).send_cq;
            init.recv_cq = (*ibqp).recv_cq;
            init.srq = (*ibqp).srq;
            init.cap = attr.cap;
            init.sq_sig_type = if (*qp).s_flags & bindings::RVT_S_SIGNAL_REQ_WR != 0 {
                bindings::ib_sig_type_IB_SIGNAL_REQ_WR
            } else {
                bindings::ib_sig_type_IB_SIGNAL_ALL_WR
            };
            init.qp_type = (*ibqp).qp_type;
            init.port_num = u32::from((*qp).port_num);
        }
    }
}
