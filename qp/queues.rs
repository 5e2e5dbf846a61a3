// SPDX-License-Identifier: GPL-2.0-only

//! The memory a QP owns besides its receive ring: the send queue (`s_wq`, vzalloc'd slots
//! of an `rvt_swqe` and its SGEs), the receive SGE list (`r_sg_list`), RC's RDMA read and
//! atomic response queue (`s_ack_queue`), and a UD QP's copy of each WQE's address
//! (`ud_wr.attr`). Each is recorded in its field as soon as it exists; [`OwnedQp::free_queues`]
//! frees whatever is there.

use core::{ffi::c_void, mem::size_of};

use kernel::{ffi::c_int, prelude::*};

use super::OwnedQp;
use crate::bindings;

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

impl OwnedQp<'_> {
    /// The send queue: `slots` zeroed slots with room for `max_sge` SGEs each, on `node`.
    pub(super) fn alloc_send_queue(&mut self, slots: u32, max_sge: u32, node: c_int) -> Result {
        let slot = (max_sge as usize)
            .checked_mul(size_of::<bindings::rvt_sge>())
            .and_then(|sges| sges.checked_add(size_of::<bindings::rvt_swqe>()))
            .ok_or(ENOMEM)?;
        let bytes = slot.checked_mul(slots as usize).ok_or(ENOMEM)?;
        // SAFETY: a plain allocation.
        let swq = unsafe { bindings::rdmavt_rs_vzalloc_node(bytes, node) };
        if swq.is_null() {
            return Err(ENOMEM);
        }
        *self.s_wq_mut() = swq.cast();
        Ok(())
    }

    /// Room for `n` receive SGEs beyond a receive WQE's first.
    pub(super) fn alloc_recv_sges(&mut self, n: usize, node: c_int) -> Result {
        let bytes = n
            .checked_mul(size_of::<bindings::rvt_sge>())
            .ok_or(ENOMEM)?;
        *self.r_sg_list_mut() = kzalloc_node(bytes, node)?.cast();
        Ok(())
    }

    /// RC's RDMA read and atomic response queue of `entries` entries.
    pub(super) fn alloc_ack_queue(&mut self, entries: usize, node: c_int) -> Result {
        let bytes = entries
            .checked_mul(size_of::<bindings::rvt_ack_entry>())
            .ok_or(ENOMEM)?;
        *self.s_ack_queue_mut() = kzalloc_node(bytes, node)?.cast();
        Ok(())
    }

    /// `alloc_ud_wq_attr`: each send queue slot of a UD-like QP gets room for a copy of its
    /// request's address.
    pub(super) fn alloc_ud_attrs(&mut self, node: c_int) -> Result {
        for n in 0..self.s_size() {
            let attr = kzalloc_node(size_of::<bindings::rdma_ah_attr>(), node)?;
            // SAFETY: the QP is ours alone during creation; the slot is in range.
            unsafe { (*self.swqe(n)).__bindgen_anon_1.ud_wr.attr = attr.cast() };
        }
        Ok(())
    }

    /// Frees every queue above that exists and leaves its field NULL.
    pub(super) fn free_queues(&mut self) {
        self.free_ud_attrs();
        // SAFETY: each queue was allocated above with the matching allocator, or is NULL,
        // and nothing uses it any more (`OwnedQp`'s invariant).
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
            // SAFETY: nothing else uses the send queue (`OwnedQp`'s invariant); the slot is
            // in range and holds a copy `alloc_ud_attrs` allocated, or NULL.
            unsafe {
                let wqe = self.swqe(n);
                bindings::kfree((*wqe).__bindgen_anon_1.ud_wr.attr.cast());
                (*wqe).__bindgen_anon_1.ud_wr.attr = core::ptr::null_mut();
            }
        }
    }
}
