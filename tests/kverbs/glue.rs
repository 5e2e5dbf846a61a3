// SPDX-License-Identifier: GPL-2.0-only

//! The C glue (`rvt_loop_kverbs_glue.c`), declared again by hand with the same types: the
//! ib_client that finds rvt_loop0, and the kernel verbs that ib_verbs.h only has as static
//! inlines or macros.

use crate::bindings;
use kernel::ffi::{c_int, c_uint, c_void};

// The device types reach an empty placeholder struct that bindgen generates for an x86 type
// nothing here touches; the C side takes them by pointer only.
#[allow(improper_ctypes)]
extern "C" {
    pub(crate) fn rvt_loop_kverbs_register() -> c_int;
    pub(crate) fn rvt_loop_kverbs_unregister();
    pub(crate) fn rvt_loop_kverbs_device_get() -> *mut bindings::ib_device;
    pub(crate) fn rvt_loop_kverbs_alloc_pd(
        ibdev: *mut bindings::ib_device,
        flags: c_uint,
    ) -> *mut bindings::ib_pd;
    pub(crate) fn rvt_loop_kverbs_dealloc_pd(pd: *mut bindings::ib_pd);
    pub(crate) fn rvt_loop_kverbs_alloc_cq(
        ibdev: *mut bindings::ib_device,
        nr_cqe: c_int,
    ) -> *mut bindings::ib_cq;
    pub(crate) fn rvt_loop_kverbs_poll_cq(
        cq: *mut bindings::ib_cq,
        num_entries: c_int,
        wc: *mut bindings::ib_wc,
    ) -> c_int;
    pub(crate) fn rvt_loop_kverbs_create_qp(
        pd: *mut bindings::ib_pd,
        init_attr: *mut bindings::ib_qp_init_attr,
    ) -> *mut bindings::ib_qp;
    pub(crate) fn rvt_loop_kverbs_destroy_qp(qp: *mut bindings::ib_qp) -> c_int;
    pub(crate) fn rvt_loop_kverbs_post_send(
        qp: *mut bindings::ib_qp,
        wr: *const bindings::ib_send_wr,
        bad_wr: *mut *const bindings::ib_send_wr,
    ) -> c_int;
    pub(crate) fn rvt_loop_kverbs_post_recv(
        qp: *mut bindings::ib_qp,
        wr: *const bindings::ib_recv_wr,
        bad_wr: *mut *const bindings::ib_recv_wr,
    ) -> c_int;
    pub(crate) fn rvt_loop_kverbs_set_av(
        ibdev: *mut bindings::ib_device,
        ah: *mut bindings::rdma_ah_attr,
        port_num: u32,
        dlid: u32,
    );
    pub(crate) fn rvt_loop_kverbs_dma_map(
        ibdev: *mut bindings::ib_device,
        cpu_addr: *mut c_void,
        size: usize,
    ) -> u64;
    pub(crate) fn rvt_loop_kverbs_dma_mapping_error(
        ibdev: *mut bindings::ib_device,
        dma_addr: u64,
    ) -> c_int;
    pub(crate) fn rvt_loop_kverbs_dma_unmap(
        ibdev: *mut bindings::ib_device,
        dma_addr: u64,
        size: usize,
    );
    pub(crate) fn rvt_loop_kverbs_alloc_mr(pd: *mut bindings::ib_pd) -> *mut bindings::ib_mr;
    pub(crate) fn rvt_loop_kverbs_dereg_mr(mr: *mut bindings::ib_mr) -> c_int;
    pub(crate) fn rvt_loop_kverbs_map_mr(mr: *mut bindings::ib_mr, dma: u64, len: c_uint) -> c_int;
    pub(crate) fn rvt_loop_kverbs_on_rdmavt_rs() -> bool;
    pub(crate) fn rvt_loop_kverbs_fail_nth(n: c_uint) -> c_uint;
}
