// SPDX-License-Identifier: GPL-2.0-only

//! Memory regions: the MR verbs, the lkey table, and the key checks the data path (hfi1, the
//! loopback path) runs on every SGE and RDMA request.
//!
//! An MR is a C `struct rvt_mr` ([`RvtMr`]): ib_core's `ib_mr`, the pinned user memory if
//! any, and the `rvt_mregion` ([`Mregion`]) the data path sees. A region is referenced by
//! itself from creation until its key is freed, by the lkey table (or `dma_mr`) while it is
//! published, and by every `rvt_sge` that points into it; `dereg_mr` unpublishes it, waits
//! for the other references to go, and only then frees it.

mod keys;
mod lkey;
mod refcount;
mod region;
#[cfg(rdmavt_kunit)]
mod tests;
mod verbs;

use core::{
    alloc::Layout,
    mem::{offset_of, size_of},
    ptr::NonNull,
};

use kernel::{
    alloc::{allocator::Kmalloc, flags},
    ffi::c_int,
    prelude::*,
    types::{Opaque, ScopeGuard},
};

use crate::compat;

use crate::{bindings, device::Device};

pub(crate) use keys::{check_lkey, check_recv_lkey, check_rkey, fast_reg_mr, invalidate_rkey};
pub(crate) use lkey::{driver_init, exit};
pub(crate) use refcount::{next_sge, put_mr, put_ss};
pub(crate) use region::{seg_ptr, SEGSZ};
pub(crate) use verbs::{alloc_mr, dereg_mr, get_dma_mr, map_mr_sg, reg_user_mr};

use lkey::KeyKind;

/// IB_ACCESS_LOCAL_WRITE: the HCA may write the region (an RDMA READ's or atomic's target).
pub(crate) const ACCESS_LOCAL_WRITE: u32 = bindings::ib_access_flags_IB_ACCESS_LOCAL_WRITE;
/// IB_ACCESS_REMOTE_WRITE: the peer may write the region.
pub(crate) const ACCESS_REMOTE_WRITE: u32 = bindings::ib_access_flags_IB_ACCESS_REMOTE_WRITE;
/// IB_ACCESS_REMOTE_READ: the peer may read the region.
pub(crate) const ACCESS_REMOTE_READ: u32 = bindings::ib_access_flags_IB_ACCESS_REMOTE_READ;
/// IB_ACCESS_REMOTE_ATOMIC: the peer may run atomics on the region.
pub(crate) const ACCESS_REMOTE_ATOMIC: u32 = bindings::ib_access_flags_IB_ACCESS_REMOTE_ATOMIC;
use region::Mregion;

/// `struct rvt_mr`, private to C rdmavt (its mr.h), so not in the bindings: only rdmavt
/// allocates and reads it; drivers see the `ib_mr` and the `rvt_mregion`.
#[repr(C)]
struct RvtMr {
    ibmr: bindings::ib_mr,
    umem: *mut bindings::ib_umem,
    /// Last: its map is a flexible array that the allocation extends.
    mr: bindings::rvt_mregion,
}

// ib_core hands us the `ib_mr` we returned; `to_imr` is a cast because it is the head.
const _: () = assert!(offset_of!(RvtMr, ibmr) == 0);
// The trace event `rvt_map_mr_sg` reads an MR as C's `struct rvt_mr` (trace/trace.h).
const _: () = assert!(
    size_of::<RvtMr>() == size_of::<bindings::rdmavt_rs_trace_mr>()
        && offset_of!(RvtMr, umem) == offset_of!(bindings::rdmavt_rs_trace_mr, umem)
        && offset_of!(RvtMr, mr) == offset_of!(bindings::rdmavt_rs_trace_mr, mr)
);

/// The allocation size of an `rvt_mr` with `m` map arrays, as C's `struct_size()`: `None`
/// where that saturates, which makes C's kzalloc fail.
fn mr_size(m: usize) -> Option<usize> {
    m.checked_mul(size_of::<*mut bindings::rvt_segarray>())?
        .checked_add(size_of::<RvtMr>())
}

/// An MR: the C `rvt_mr` behind an `ib_mr` of ours.
///
/// # Invariants
///
/// The wrapped `rvt_mr` was made by [`NewMr::new`], its region set up, and it is alive.
#[repr(transparent)]
struct Mr(Opaque<RvtMr>);

impl Mr {
    /// `to_imr`.
    ///
    /// # Safety
    ///
    /// `ibmr` is an `ib_mr` that rdmavt's verbs created (every MR of one of our devices,
    /// unless the driver brought its own MR verbs) and it stays alive for `'a`.
    unsafe fn from_ib<'a>(ibmr: *mut bindings::ib_mr) -> &'a Self {
        // SAFETY: `ibmr` is the head of an `RvtMr` (see the assertion above); the caller
        // guarantees it is alive for `'a`.
        unsafe { &*ibmr.cast() }
    }

    fn as_raw(&self) -> *mut RvtMr {
        self.0.get()
    }

    fn ibmr(&self) -> *mut bindings::ib_mr {
        // SAFETY: alive (type invariant).
        unsafe { &raw mut (*self.as_raw()).ibmr }
    }

    fn region(&self) -> &Mregion {
        // SAFETY: the region was set up by `NewMr::new` and lives as long as the MR.
        unsafe { Mregion::from_raw(&raw mut (*self.as_raw()).mr) }
    }

    fn umem(&self) -> *mut bindings::ib_umem {
        // SAFETY: alive (type invariant); set once, before the MR is handed out.
        unsafe { (*self.as_raw()).umem }
    }
}

/// An MR that is still ours alone: dropping it undoes its creation (`__rvt_free_mr`).
struct NewMr(NonNull<RvtMr>);

impl NewMr {
    /// `__rvt_alloc_mr` (and the start of `rvt_get_dma_mr`): a zeroed MR in `pd` with room
    /// for `count` segments and a key of `kind`. An indexed key is also the MR's lkey and
    /// rkey. Fails with ENOMEM, as C, whichever step fails.
    fn new(pd: *mut bindings::ib_pd, count: c_int, kind: KeyKind) -> Result<Self> {
        let m = region::segarrays(count).ok_or(ENOMEM)?;
        let layout = mr_size(m)
            .and_then(|size| Layout::from_size_align(size, core::mem::align_of::<RvtMr>()).ok())
            .ok_or(ENOMEM)?;
        // C allocates the rvt_mr with plain kzalloc, on no particular node.
        let mr = compat::alloc_on_node::<Kmalloc>(
            layout,
            flags::GFP_KERNEL | flags::__GFP_ZERO,
            kernel::bindings::NUMA_NO_NODE,
        )?
        .cast::<RvtMr>();
        // SAFETY: `mr` came from kmalloc just now and nobody else has seen it.
        let mr = ScopeGuard::new_with_data(mr, |mr| unsafe { bindings::kfree(mr.as_ptr().cast()) });
        // SAFETY: ib_core passes a live PD of one of our devices.
        let node = unsafe { Device::from_ib((*pd).device) }.dparms().node;
        // SAFETY: `mr` is a live allocation of at least `size_of::<RvtMr>()` bytes.
        let region = unsafe { &raw mut (*mr.as_ptr()).mr };
        // SAFETY: the region is zeroed and its map has room for `m` arrays; it is ours.
        unsafe { Mregion::init(region, pd, count, node)? };
        // SAFETY: set up just now; it lives as long as the allocation.
        let region_ref = unsafe { Mregion::from_raw(region) };
        if let Err(e) = lkey::alloc_lkey(region_ref, kind) {
            // SAFETY: not published (alloc_lkey failed) and ours alone.
            unsafe { Mregion::deinit(region) };
            return Err(e);
        }
        let mr = Self(mr.dismiss());
        if kind == KeyKind::Indexed {
            let ibmr = mr.ibmr();
            let key = mr.region().lkey();
            // SAFETY: ours alone until handed to ib_core.
            unsafe {
                (*ibmr).lkey = key;
                (*ibmr).rkey = key;
            }
        }
        Ok(mr)
    }

    /// The MR's pinned user memory, which it releases when it is deregistered.
    ///
    /// # Safety
    ///
    /// `umem` came from ib_umem_get and is not owned by anyone else.
    unsafe fn set_umem(&mut self, umem: *mut bindings::ib_umem) {
        // SAFETY: ours alone until handed to ib_core.
        unsafe { (*self.0.as_ptr()).umem = umem };
    }

    /// Hands the MR to ib_core, which gives it back to `dereg_mr`.
    fn into_ib(self) -> *mut bindings::ib_mr {
        let ibmr = self.ibmr();
        core::mem::forget(self);
        ibmr
    }
}

impl core::ops::Deref for NewMr {
    type Target = Mr;

    fn deref(&self) -> &Mr {
        // SAFETY: a `NewMr` owns a live MR made by `new`; `Mr` is a transparent wrapper.
        unsafe { &*self.0.as_ptr().cast() }
    }
}

impl Drop for NewMr {
    fn drop(&mut self) {
        lkey::free_lkey(self.region());
        // SAFETY: unpublished just now; the MR was never handed out, so nobody else holds a
        // reference to the region. Then the allocation from `new` goes.
        unsafe {
            Mregion::deinit(self.region().as_raw());
            bindings::kfree(self.0.as_ptr().cast());
        }
    }
}
