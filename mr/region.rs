// SPDX-License-Identifier: GPL-2.0-only

//! `struct rvt_mregion`: the part of a memory region the data path sees. Its segment map
//! turns an offset into a kernel virtual address; its `percpu_ref` counts who uses it (see
//! `refcount.rs`).
//!
//! The map is `mapsz` page-sized arrays of `RVT_SEGSZ` segments each, allocated when the
//! region is created for its `max_segs` segments and filled in by the verb that creates it
//! (one page per segment for user and fast-register MRs, none for the DMA MR).

use core::{alloc::Layout, mem::size_of, ptr};

use kernel::{
    alloc::{allocator::Kmalloc, flags},
    error::to_result,
    ffi::c_int,
    page::PAGE_SIZE,
    prelude::*,
    types::Opaque,
};

use crate::compat::{
    self,
    aref::ARef,
    atomic::{Atomic, Relaxed},
};

use crate::bindings;

use super::refcount::complete_region;

/// `RVT_SEGSZ`: the number of segments in one map array, which fills a page.
pub(crate) const SEGSZ: usize = PAGE_SIZE / size_of::<bindings::rvt_seg>();

// bindgen cannot evaluate RVT_SEGSZ; the array type it sized is the check.
const _: () =
    assert!(size_of::<bindings::rvt_segarray>() == SEGSZ * size_of::<bindings::rvt_seg>());

/// The segment at (`m`, `n`) of `mr`'s map, if the map has array `m`: the one place that
/// walks a region's map of `mapsz` arrays of `RVT_SEGSZ` segments.
///
/// # Safety
///
/// `mr` is a live region whose first `mapsz` map entries are allocated arrays.
pub(crate) unsafe fn seg_ptr(
    mr: *mut bindings::rvt_mregion,
    m: usize,
    n: usize,
) -> Option<*mut bindings::rvt_seg> {
    // SAFETY: the caller's guarantee; `m` and `n` are checked against the map's shape.
    unsafe {
        if m >= (*mr).mapsz as usize || n >= SEGSZ {
            return None;
        }
        let array = *(*mr).map.as_ptr().add(m);
        Some(&raw mut (*array).segs[n])
    }
}

/// The number of map arrays for `count` segments, computed as C does, `(count + RVT_SEGSZ - 1)
/// / RVT_SEGSZ` in `size_t` then stored in an `int`; `None` when that `int` is negative (a
/// count below `-RVT_SEGSZ + 1`), for which C's allocation fails.
///
/// `count` comes from a `u32` (`alloc_mr`'s `max_num_sg`) or a page count squeezed into an
/// `int`, as in C, so the negative cases are reachable from ib_core.
pub(super) fn segarrays(count: c_int) -> Option<usize> {
    let seg = SEGSZ as u64;
    // CAST: C converts the int to size_t (sign extension), adds with wrap-around, divides,
    // then truncates to int.
    let m = (i64::from(count) as u64).wrapping_add(seg - 1) / seg;
    usize::try_from(m as i32).ok()
}

/// Where offset `off` of a region lies in its map: array `m`, segment `n`, and the offset
/// left within that segment.
#[derive(Debug, PartialEq, Eq, Clone, Copy)]
pub(super) struct SegPos {
    pub(super) m: usize,
    pub(super) n: usize,
    pub(super) off: usize,
}

/// The position of `off` in a map of uniform `1 << page_shift` byte segments.
///
/// A region's page shift is `PAGE_SHIFT` (`reg_user_mr`, `alloc_mr`), so neither shift
/// overflows and `off` is at least `entries << shift`: the wrapping operations are the plain
/// ones, with no overflow checks to branch on (a key check runs this).
pub(super) fn locate_uniform(off: usize, page_shift: u8) -> SegPos {
    let shift = u32::from(page_shift);
    let entries = off.wrapping_shr(shift);
    SegPos {
        m: entries / SEGSZ,
        n: entries % SEGSZ,
        off: off.wrapping_sub(entries.wrapping_shl(shift)),
    }
}

/// The position of `off` in a map of segments of any length, walking from the start as C
/// does. `seg_len(m, n)` is `None` past the end of the map, where the walk gives up (C would
/// read past the map; only an MR with nothing mapped gets there).
pub(super) fn locate_walk(
    mut off: usize,
    seg_len: impl Fn(usize, usize) -> Option<usize>,
) -> Option<SegPos> {
    let (mut m, mut n) = (0, 0);
    loop {
        let len = seg_len(m, n)?;
        if off < len {
            return Some(SegPos { m, n, off });
        }
        off -= len;
        n += 1;
        if n >= SEGSZ {
            m += 1;
            n = 0;
        }
    }
}

/// A memory region.
///
/// # Invariants
///
/// The wrapped `rvt_mregion` was set up by [`Mregion::init`] and is alive: its owner (the
/// `rvt_mr` it is the tail of) is freed only once the reference count has dropped to zero and
/// `dereg_mr` has seen it do so, so every counted reference keeps it alive.
#[repr(transparent)]
pub(super) struct Mregion(Opaque<bindings::rvt_mregion>);

// SAFETY: a region is shared between CPUs by design: its fields are set before it is
// published in the lkey table (or changed by the owning QP's send engine, as in C), its count
// is a percpu_ref and its flags are atomics.
unsafe impl Send for Mregion {}
// SAFETY: as above.
unsafe impl Sync for Mregion {}

impl Mregion {
    /// # Safety
    ///
    /// `ptr` points to a region set up by [`Mregion::init`] that stays alive for `'a` (a
    /// reference is held, or the lkey table's RCU protection covers `'a`).
    pub(super) unsafe fn from_raw<'a>(ptr: *mut bindings::rvt_mregion) -> &'a Self {
        // SAFETY: `Mregion` is a transparent wrapper; the caller guarantees the rest.
        unsafe { &*ptr.cast() }
    }

    pub(super) fn as_raw(&self) -> *mut bindings::rvt_mregion {
        self.0.get()
    }

    /// `rvt_init_mregion`: allocates the map for `count` segments on `node` and starts the
    /// reference count at one, the region's own reference, which `free_lkey` kills.
    ///
    /// # Safety
    ///
    /// `mr` is a zeroed region whose map has room for `segarrays(count)` arrays, exclusively
    /// the caller's. On failure it is left as [`Mregion::deinit`] leaves it.
    pub(super) unsafe fn init(
        mr: *mut bindings::rvt_mregion,
        pd: *mut bindings::ib_pd,
        count: c_int,
        node: c_int,
    ) -> Result {
        // SAFETY: exclusively ours (caller's guarantee).
        unsafe { (*mr).mapsz = 0 };
        // SAFETY: as above; on failure `deinit` frees what was allocated.
        if unsafe { Self::alloc_map(mr, count, node) }.is_err() {
            // SAFETY: as above.
            unsafe { Self::deinit(mr) };
            return Err(ENOMEM);
        }
        // SAFETY: as above; `comp` is initialised before the refcount can complete it.
        let res = unsafe {
            bindings::rdmavt_rs_init_completion(&raw mut (*mr).comp);
            to_result(bindings::percpu_ref_init(
                &raw mut (*mr).refcount,
                Some(complete_region),
                0,
                kernel::bindings::GFP_KERNEL,
            ))
        };
        if res.is_err() {
            // SAFETY: as above.
            unsafe { Self::deinit(mr) };
            return Err(ENOMEM);
        }
        // SAFETY: as above.
        unsafe {
            (*mr).lkey_invalid.counter = 0;
            (*mr).pd = pd;
            // CAST: as C's int-to-u32 assignment.
            (*mr).max_segs = count as u32;
        }
        Ok(())
    }

    /// Allocates the zeroed map arrays, counting them in `mapsz` as they come.
    ///
    /// # Safety
    ///
    /// As for [`Mregion::init`].
    unsafe fn alloc_map(mr: *mut bindings::rvt_mregion, count: c_int, node: c_int) -> Result {
        let m = segarrays(count).ok_or(ENOMEM)?;
        for i in 0..m {
            let array = compat::alloc_on_node::<Kmalloc>(
                Layout::new::<bindings::rvt_segarray>(),
                flags::GFP_KERNEL | flags::__GFP_ZERO,
                node,
            )?;
            // SAFETY: `i < m`, within the map (caller's guarantee); the region is ours.
            unsafe {
                *(*mr).map.as_mut_ptr().add(i) = array.as_ptr().cast();
                (*mr).mapsz += 1;
            }
        }
        Ok(())
    }

    /// `rvt_deinit_mregion`: frees the map and the reference count's per-CPU part.
    ///
    /// # Safety
    ///
    /// `mr` is exclusively the caller's: not in the lkey table, and nobody else holds a
    /// reference. Its map arrays are the ones `alloc_map` made (or NULL).
    pub(super) unsafe fn deinit(mr: *mut bindings::rvt_mregion) {
        // SAFETY: exclusively ours (caller's guarantee); the first `mapsz` arrays came from
        // kmalloc, and percpu_ref_exit accepts a zeroed, never initialised refcount.
        unsafe {
            let mut i = (*mr).mapsz as usize;
            (*mr).mapsz = 0;
            while i > 0 {
                i -= 1;
                bindings::kfree((*(*mr).map.as_ptr().add(i)).cast());
            }
            bindings::percpu_ref_exit(&raw mut (*mr).refcount);
        }
    }

    pub(super) fn lkey(&self) -> u32 {
        // SAFETY: alive (type invariant). The lkey changes only under the lkey table lock or
        // by fast-register on the owning QP, and C reads it unlocked in the same places.
        unsafe { (*self.as_raw()).lkey }
    }

    pub(super) fn pd(&self) -> *mut bindings::ib_pd {
        // SAFETY: alive (type invariant); `pd` is fixed at `init`.
        unsafe { (*self.as_raw()).pd }
    }

    /// The user's address of the region's start: what lkeys address it by.
    pub(super) fn user_base(&self) -> u64 {
        // SAFETY: alive (type invariant); set when the region is registered or mapped.
        unsafe { (*self.as_raw()).user_base }
    }

    /// The IB address of the region's start: what rkeys address it by.
    pub(super) fn iova(&self) -> u64 {
        // SAFETY: alive (type invariant); set when registered, mapped or fast-registered.
        unsafe { (*self.as_raw()).iova }
    }

    pub(super) fn length(&self) -> usize {
        // SAFETY: alive (type invariant); set when the region is registered or mapped.
        unsafe { (*self.as_raw()).length }
    }

    /// Where the region starts within its first segment.
    pub(super) fn offset(&self) -> u32 {
        // SAFETY: alive (type invariant); set with the map.
        unsafe { (*self.as_raw()).offset }
    }

    pub(super) fn access_flags(&self) -> c_int {
        // SAFETY: alive (type invariant); set when registered or fast-registered.
        unsafe { (*self.as_raw()).access_flags }
    }

    /// `READ_ONCE(mr->lkey_published)`: whether the region is in the lkey table.
    pub(super) fn published(&self) -> bool {
        // SAFETY: alive (type invariant); `lkey_published` is a u8 written under the lkey
        // table lock, read here racily as C's READ_ONCE does.
        // ORDERING: Relaxed, as READ_ONCE: the slot load that found the region orders it.
        unsafe { Atomic::from_ptr((&raw mut (*self.as_raw()).lkey_published).cast::<i8>()) }
            .load(Relaxed)
            != 0
    }

    /// Sets `lkey_published`.
    ///
    /// # Safety
    ///
    /// The caller holds the lkey table lock (the field's writers are serialised by it).
    pub(super) unsafe fn set_published(&self, published: bool) {
        // SAFETY: alive (type invariant); the caller serialises writers; readers use atomics.
        // ORDERING: Relaxed; the rcu_assign_pointer of the slot that follows is the release.
        unsafe { Atomic::from_ptr((&raw mut (*self.as_raw()).lkey_published).cast::<i8>()) }
            .store(i8::from(published), Relaxed);
    }

    fn lkey_invalid(&self) -> &Atomic<i32> {
        // SAFETY: alive (type invariant); `lkey_invalid` is an atomic_t, only ever accessed
        // atomically.
        unsafe { Atomic::from_ptr(&raw mut (*self.as_raw()).lkey_invalid.counter) }
    }

    /// `atomic_read(&mr->lkey_invalid)`: the key was invalidated by a remote or local
    /// invalidate and not yet fast-registered again.
    pub(super) fn invalidated(&self) -> bool {
        // ORDERING: Relaxed, as atomic_read.
        self.lkey_invalid().load(Relaxed) != 0
    }

    /// `atomic_set(&mr->lkey_invalid, ...)`.
    pub(super) fn set_invalidated(&self, invalid: bool) {
        // ORDERING: Relaxed, as atomic_set.
        self.lkey_invalid().store(i32::from(invalid), Relaxed);
    }

    /// The segment at (`m`, `n`), if the map has array `m`.
    fn seg(&self, m: usize, n: usize) -> Option<&bindings::rvt_seg> {
        // SAFETY: alive (type invariant), so its map is; segments live as long as the region.
        unsafe { seg_ptr(self.as_raw(), m, n).map(|seg| &*seg) }
    }

    /// Where offset `off` (relative to the start of the mapped memory) lies in the map.
    pub(super) fn locate(&self, off: usize) -> Option<SegPos> {
        // SAFETY: alive (type invariant); the page shift is set with the map.
        let page_shift = unsafe { (*self.as_raw()).page_shift };
        if page_shift != 0 {
            Some(locate_uniform(off, page_shift))
        } else {
            locate_walk(off, |m, n| self.seg(m, n).map(|s| s.length))
        }
    }

    /// Points `sge` at offset `pos` of the region, for an SGE of `sge_length` bytes; the SGE
    /// takes over the reference `mr`.
    pub(super) fn fill_sge(
        mr: ARef<Self>,
        sge: &mut bindings::rvt_sge,
        pos: SegPos,
        sge_length: u32,
    ) -> Result {
        let seg = mr.seg(pos.m, pos.n).ok_or(EINVAL)?;
        sge.vaddr = seg.vaddr.wrapping_byte_add(pos.off);
        // CAST: as C's size_t-to-u32 assignment.
        sge.length = seg.length.wrapping_sub(pos.off) as u32;
        sge.sge_length = sge_length;
        // CAST: a position within the map: m < mapsz and n < RVT_SEGSZ, as in C's u16 fields.
        sge.m = pos.m as u16;
        sge.n = pos.n as u16;
        sge.mr = ARef::into_raw(mr).as_ptr().cast();
        Ok(())
    }

    /// Points `sge` at kernel virtual address `vaddr` through the DMA MR; the SGE takes over
    /// the reference `mr`.
    pub(super) fn fill_dma_sge(mr: ARef<Self>, sge: &mut bindings::rvt_sge, vaddr: u64, len: u32) {
        sge.mr = ARef::into_raw(mr).as_ptr().cast();
        // CAST: the DMA MR's addresses are kernel virtual addresses, which the C data path
        // dereferences; u64 and pointers have the same width on the 64-bit targets rdmavt
        // builds for.
        sge.vaddr = ptr::with_exposed_provenance_mut(vaddr as usize);
        sge.length = len;
        sge.sge_length = len;
        sge.m = 0;
        sge.n = 0;
    }
}
