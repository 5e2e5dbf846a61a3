// SPDX-License-Identifier: GPL-2.0-only

//! The `ib_device_ops` rdmavt gives every device it registers.
//!
//! ib_set_device_ops() only fills the entries a driver left empty, so a driver overrides any
//! of these by setting its own before `rvt_register_device`. Verbs that rdmavt-rs does not
//! implement yet are absent: ib_core answers them with EOPNOTSUPP.

use core::mem::{offset_of, size_of};

use crate::{ah, bindings, cq, mcast, mmap, mr, pd, qp, srq};

use super::query;

/// rdmavt's user ABI version (rdma-core's libhfi1verbs and libqib speak it).
const UVERBS_ABI_VERSION: u32 = 2;

/// An ops table is plain data (function pointers and sizes) but bindgen cannot know that its
/// `port_groups`/`device_group` pointers, NULL here, are never written through.
#[repr(transparent)]
pub(crate) struct Ops(bindings::ib_device_ops);

// SAFETY: the table is immutable and its only pointers are NULL.
unsafe impl Sync for Ops {}

impl core::ops::Deref for Ops {
    type Target = bindings::ib_device_ops;

    fn deref(&self) -> &Self::Target {
        &self.0
    }
}

// ib_core allocates each object with the size given here and hands us its ib_* head: the head
// must be the first member of our struct (INIT_RDMA_OBJ_SIZE checks the same in C).
const _: () = {
    assert!(offset_of!(bindings::rvt_ah, ibah) == 0);
    assert!(offset_of!(bindings::rvt_pd, ibpd) == 0);
    assert!(offset_of!(bindings::rvt_ucontext, ibucontext) == 0);
    assert!(offset_of!(bindings::rvt_cq, ibcq) == 0);
    assert!(offset_of!(bindings::rvt_qp, ibqp) == 0);
    assert!(offset_of!(bindings::rvt_srq, ibsrq) == 0);
};

const NO_OPS: bindings::ib_device_ops =
    // SAFETY: all zeroes is a valid ib_device_ops: no ops, NULL pointers, zero sizes.
    unsafe { core::mem::zeroed() };

/// rdmavt's verbs.
pub(crate) static RVT_DEV_OPS: Ops = Ops(bindings::ib_device_ops {
    uverbs_abi_ver: UVERBS_ABI_VERSION,

    alloc_mr: Some(mr::alloc_mr),
    alloc_pd: Some(pd::alloc_pd),
    alloc_ucontext: Some(query::alloc_ucontext),
    attach_mcast: Some(mcast::attach_mcast),
    create_ah: Some(ah::create_ah),
    create_cq: Some(cq::create_cq),
    create_qp: Some(qp::create_qp),
    create_user_ah: Some(ah::create_ah),
    dealloc_pd: Some(pd::dealloc_pd),
    dealloc_ucontext: Some(query::dealloc_ucontext),
    dereg_mr: Some(mr::dereg_mr),
    destroy_ah: Some(ah::destroy_ah),
    destroy_cq: Some(cq::destroy_cq),
    detach_mcast: Some(mcast::detach_mcast),
    destroy_qp: Some(qp::destroy_qp),
    get_dma_mr: Some(mr::get_dma_mr),
    get_numa_node: Some(query::get_numa_node),
    get_port_immutable: Some(query::get_port_immutable),
    map_mr_sg: Some(mr::map_mr_sg),
    mmap: Some(mmap::mmap),
    modify_ah: Some(ah::modify_ah),
    modify_device: Some(query::modify_device),
    modify_port: Some(query::modify_port),
    modify_qp: Some(qp::modify_qp),
    poll_cq: Some(cq::poll_cq),
    post_send: Some(qp::post_send),
    query_ah: Some(ah::query_ah),
    query_device: Some(query::query_device),
    query_gid: Some(query::query_gid),
    query_pkey: Some(query::query_pkey),
    query_port: Some(query::query_port),
    query_qp: Some(qp::query_qp),
    req_notify_cq: Some(cq::req_notify_cq),
    // 6.12 names it `resize_cq`, with a signed count.
    #[cfg(not(rdmavt_kernel_6_12))]
    resize_user_cq: Some(cq::resize_cq),
    #[cfg(rdmavt_kernel_6_12)]
    resize_cq: Some(cq::resize_cq_signed),
    reg_user_mr: Some(mr::reg_user_mr),

    // No size_ib_mr: as in C, the MR verbs allocate `struct rvt_mr` themselves.
    size_ib_ah: size_of::<bindings::rvt_ah>(),
    size_ib_cq: size_of::<bindings::rvt_cq>(),
    size_ib_pd: size_of::<bindings::rvt_pd>(),
    size_ib_qp: size_of::<bindings::rvt_qp>(),
    size_ib_ucontext: size_of::<bindings::rvt_ucontext>(),

    // Receive queues and SRQs (krwq/, srq/).
    create_srq: Some(srq::create_srq),
    destroy_srq: Some(srq::destroy_srq),
    modify_srq: Some(srq::modify_srq),
    post_recv: Some(qp::post_recv),
    post_srq_recv: Some(srq::post_srq_recv),
    query_srq: Some(srq::query_srq),
    size_ib_srq: size_of::<bindings::rvt_srq>(),
    ..NO_OPS
});
