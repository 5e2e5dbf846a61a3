// SPDX-License-Identifier: GPL-2.0-only

//! The receive queue of a QP or SRQ: `struct rvt_rq`, with its kernel ring `struct rvt_krwq`
//! and, for user QPs, the mmap'd `struct rvt_rwq`.
//!
//! The queue's memory is here (`rvt_alloc_rq`/`rvt_free_rq`); the ring and its two locked
//! sides in [`ring`]; posting a chain of WRs in `post`. This module knows nothing of QPs:
//! the QP's receive logic (`post_recv`, `rvt_get_rwqe`, the flush of the error state) is
//! `crate::qp`'s, and so is the lock order these locks take part in.

mod post;
pub(crate) mod ring;
#[cfg(rdmavt_kunit)]
mod tests;

pub(crate) use post::{post, post_result};
pub(crate) use ring::Rq;

use core::{ffi::c_void, mem::size_of};

use kernel::{ffi::c_int, prelude::*};

use crate::bindings;

/// `rvt_alloc_rq`: the memory of a receive queue of `bytes` bytes of WQEs, on `node`.
///
/// A user queue gets its ring in `vmalloc_user` memory, to be mmap'd, and a `rvt_krwq` without
/// slots that only holds the locks; a kernel queue gets the slots in its `rvt_krwq`.
///
/// # Safety
///
/// `rq` is a zeroed receive queue that nothing else uses.
pub(crate) unsafe fn alloc(
    rq: *mut bindings::rvt_rq,
    bytes: u32,
    node: c_int,
    user: bool,
) -> Result {
    let bytes = bytes as usize;
    let head = core::mem::size_of::<bindings::rvt_krwq>();
    // SAFETY: the caller owns `rq`; every pointer stored is freed by `free`.
    unsafe {
        let slots = if user {
            let wq = bindings::rdmavt_rs_vmalloc_user(
                (core::mem::size_of::<bindings::rvt_rwq>() + bytes) as usize,
            );
            (*rq).wq = wq.cast();
            (*rq).kwq = bindings::rdmavt_rs_kzalloc_node(head, node).cast();
            if wq.is_null() || (*rq).kwq.is_null() {
                free(rq);
                return Err(ENOMEM);
            }
            (*(*rq).wq).wq.as_mut_ptr()
        } else {
            (*rq).kwq = bindings::rdmavt_rs_vzalloc_node((head + bytes) as usize, node).cast();
            if (*rq).kwq.is_null() {
                return Err(ENOMEM);
            }
            (*(*rq).kwq).wq.as_mut_ptr()
        };
        let kwq = (*rq).kwq;
        (*kwq).curr_wq = slots;
        crate::lock::spin_lock_init!(&raw mut (*kwq).p_lock, c"&rq->kwq->p_lock");
        crate::lock::spin_lock_init!(&raw mut (*kwq).c_lock, c"&rq->kwq->c_lock");
    }
    Ok(())
}

/// A new receive queue of `size` WQEs of `max_sge` SGEs each: its geometry, then its memory
/// ([`alloc`]); returns the bytes of its WQEs. ENOMEM for a ring too large to describe.
///
/// # Safety
///
/// As [`alloc`]'s; `max_sge` fits the queue's `u8` (the caller checked it against the
/// device's limit).
pub(crate) unsafe fn alloc_sized(
    rq: *mut bindings::rvt_rq,
    size: u32,
    max_sge: u32,
    node: c_int,
    user: bool,
) -> Result<u32> {
    // SAFETY: the caller owns `rq`.
    unsafe {
        (*rq).size = size;
        (*rq).max_sge = max_sge as u8;
    }
    let bytes = ring_bytes(size, max_sge)?;
    // SAFETY: the caller's guarantee; the geometry is set.
    unsafe { alloc(rq, bytes, node, user) }?;
    Ok(bytes)
}

/// The bytes of a ring of `size` slots of `max_sge` SGEs, or ENOMEM if that exceeds a u32
/// (C's u32 arithmetic would wrap and allocate too little).
fn ring_bytes(size: u32, max_sge: u32) -> Result<u32> {
    let bytes = ring::rwqe_size(max_sge)
        .checked_mul(size as usize)
        .ok_or(ENOMEM)?;
    u32::try_from(bytes).map_err(|_| ENOMEM)
}

/// A user queue's ring, to be mmap'd: its address and size in bytes (the `rvt_rwq` head
/// and the WQEs); `None` for a kernel queue.
///
/// # Safety
///
/// `rq` was set up by [`alloc_sized`] and nothing changes it meanwhile.
pub(crate) unsafe fn user_ring(rq: *mut bindings::rvt_rq) -> Option<(*mut c_void, usize)> {
    // SAFETY: the caller's guarantee.
    let (wq, size, max_sge) = unsafe { ((*rq).wq, (*rq).size, u32::from((*rq).max_sge)) };
    if wq.is_null() {
        return None;
    }
    // `alloc_sized` checked that the WQEs' size fits a u32.
    let bytes = size_of::<bindings::rvt_rwq>() + size as usize * ring::rwqe_size(max_sge);
    Some((wq.cast(), bytes))
}

/// Forgets a user queue's ring, which an mmap info now owns (and frees).
///
/// # Safety
///
/// `rq` is a queue that nothing else uses.
pub(crate) unsafe fn forget_user_ring(rq: *mut bindings::rvt_rq) {
    // SAFETY: the caller's guarantee.
    unsafe { (*rq).wq = core::ptr::null_mut() };
}

/// `rvt_free_rq`: frees what [`alloc`] allocated and leaves the pointers NULL.
///
/// # Safety
///
/// `rq` was set up by [`alloc`] (or is zeroed), and nothing uses it any more.
pub(crate) unsafe fn free(rq: *mut bindings::rvt_rq) {
    // SAFETY: the caller's guarantee; `kvfree` and `vfree` take NULL.
    unsafe {
        kernel::bindings::kvfree((*rq).kwq.cast());
        (*rq).kwq = core::ptr::null_mut();
        bindings::vfree((*rq).wq.cast());
        (*rq).wq = core::ptr::null_mut();
    }
}
