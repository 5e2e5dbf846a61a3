// SPDX-License-Identifier: GPL-2.0-only

//! Walking SGE lists: the progress state `struct rvt_sge_state` (the inline helpers of
//! rdmavt_mr.h), `rvt_copy_sge` and `rvt_restart_sge`.
//!
//! An `rvt_sge_state` is a cursor: `sge` is the SGE in progress (its region, the address and
//! bytes left in the current segment of the region, the bytes left in the SGE), `sg_list` the
//! SGEs after it and `num_sge` how many SGEs, the current one included, remain.

use kernel::{ffi::c_void, page::PAGE_SIZE};

use crate::{
    bindings,
    compat::{rcu, read_side::ReadSide},
    device::Device,
    macros::c_export,
    mr::{self, seg_ptr, SEGSZ},
    qp::{Qp, Swqe},
};

/// Whether a walk gives back the region reference of each SGE it finishes: `Some` with the
/// read-side section to do it in (see [`mr::put_mr`]), `None` when the state's references
/// are someone else's to drop.
pub(super) type Release<'a> = Option<ReadSide<'a>>;

/// `rvt_get_sge_length`: how many of `length` bytes go to the current segment of `sge`.
pub(super) fn sge_length(sge: &bindings::rvt_sge, length: u32) -> u32 {
    length.min(sge.length).min(sge.sge_length)
}

/// `rvt_update_sge`: moves the cursor `len` bytes forward, to the next segment of the region
/// or to the next SGE when one runs out. With `release` (the read-side section to do it in),
/// an SGE that is done gives back its region reference.
///
/// Unlike C, a state whose SGEs are all consumed (`num_sge` 0) stays so (see [`mr::next_sge`]).
///
/// # Safety
///
/// `ss` is a consistent state: `sg_list` has `num_sge - 1` valid entries, `sge.mr` is a live
/// region (or, with `sge.length` never reaching 0 mid-SGE, NULL), and with `release` the state
/// holds a reference on each region of its SGEs. `len <= sge_length(&ss.sge, len)`.
#[inline(never)]
pub(super) unsafe fn update_sge(ss: &mut bindings::rvt_sge_state, len: u32, release: Release<'_>) {
    let sge = &mut ss.sge;
    sge.vaddr = sge.vaddr.cast::<u8>().wrapping_add(len as usize).cast();
    sge.length = sge.length.wrapping_sub(len);
    sge.sge_length = sge.sge_length.wrapping_sub(len);
    if sge.sge_length == 0 {
        // SAFETY: the caller's guarantee.
        unsafe { mr::next_sge(ss, release) };
    } else if sge.length == 0 && !sge.mr.is_null() {
        // SAFETY: the caller's guarantee: `sge.mr` is a live region.
        unsafe { next_segment(sge) };
    }
}

/// The current segment of `sge`'s region is used up: the cursor moves to the next one.
///
/// # Safety
///
/// `sge.mr` is a live region.
unsafe fn next_segment(sge: &mut bindings::rvt_sge) {
    // SAFETY: `sge.mr` is a live region (caller's guarantee).
    let mr = unsafe { &*sge.mr };
    // Key 0 is the DMA region: one segment as long as the SGE.
    if mr.lkey == 0 {
        return;
    }
    // `n` counts the segments of one map array and goes back to 0 at its end (at the end of
    // the region it stays past it, as in C, and the copy stops there): it cannot come near a
    // `u16`'s wrap, and the check would cost every call.
    sge.n = sge.n.wrapping_add(1);
    if usize::from(sge.n) >= SEGSZ {
        // A region of more map arrays than C's `u16` counts (65,536 arrays: over 64 GiB of
        // 4 KiB pages) ends here for the cursor; C's `m` wraps to the first array.
        let Some(m) = sge.m.checked_add(1) else {
            return;
        };
        sge.m = m;
        if u32::from(m) >= mr.mapsz {
            // The region's last segment: C leaves the cursor there too.
            return;
        }
        sge.n = 0;
    }
    // SAFETY: a live region (caller's guarantee); its segments live as long as it does.
    let Some(seg) = (unsafe { seg_ptr(sge.mr, usize::from(sge.m), usize::from(sge.n)) }) else {
        return;
    };
    // SAFETY: as above.
    let seg = unsafe { &*seg };
    sge.vaddr = seg.vaddr;
    // CAST: a segment is at most a page; C truncates the same way.
    sge.length = seg.length as u32;
}

/// `rvt_skip_sge`: moves the cursor `length` bytes forward without copying.
///
/// C loops for ever when the state runs out before `length` does; this warns and stops.
///
/// # Safety
///
/// As [`update_sge`].
pub(super) unsafe fn skip_sge(
    ss: &mut bindings::rvt_sge_state,
    mut length: u32,
    release: Release<'_>,
) {
    while length != 0 {
        let len = sge_length(&ss.sge, length);
        if crate::compat::warn_on!(len == 0) {
            return;
        }
        // SAFETY: the caller's guarantee; `len` fits the current segment.
        unsafe { update_sge(ss, len, release) };
        length -= len;
    }
}

/// How `rvt_copy_sge` moves bytes.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub(super) enum CopyMode {
    /// `memcpy`.
    Cached,
    /// Non-temporal stores, which keep a large copy from evicting the receiver's cache.
    Cacheless,
}

impl CopyMode {
    /// The mode for a copy of `length` bytes on a device whose driver asked for `sge_copy_mode`
    /// (`RVT_SGE_COPY_*`). Copies under a page are always cached.
    ///
    /// `RVT_SGE_COPY_ADAPTIVE` (C goes cacheless once the working set of the copies exceeds
    /// a share of the last-level cache) is not implemented: its copies are cached, which is
    /// correct, only slower for working sets larger than the cache (see README).
    pub(super) fn for_copy(sge_copy_mode: u32, length: u32) -> Self {
        if sge_copy_mode == bindings::RVT_SGE_COPY_CACHELESS && length as usize >= PAGE_SIZE {
            Self::Cacheless
        } else {
            Self::Cached
        }
    }
}

/// How one run of bytes is written.
#[derive(Clone, Copy)]
pub(super) enum Store {
    /// `memcpy` or non-temporal stores.
    Bulk(CopyMode),
    /// One byte at a time, in address order: the last 8 bytes of an RDMA WRITE to a user QP,
    /// which user space polls for the end of the data.
    Ordered,
}

/// Whether `len` bytes at `dst` and at `src` share any byte.
fn overlap(dst: *mut u8, src: *const u8, len: usize) -> bool {
    let (d, s) = (dst as usize, src as usize);
    d < s.wrapping_add(len) && s < d.wrapping_add(len)
}

/// Copies `len` bytes from `src` to `dst` the way `how` says.
///
/// # Safety
///
/// `dst` is valid for `len` bytes of writes and `src` for `len` bytes of reads.
unsafe fn store(dst: *mut u8, src: *const u8, len: usize, how: Store) {
    match how {
        // C's memcpy. A WQE may name the same memory as source and destination (an RDMA WRITE
        // of a buffer onto itself), which memcpy must not be given: then memmove.
        Store::Bulk(CopyMode::Cached) if overlap(dst, src, len) => {
            // SAFETY: the caller's guarantee.
            unsafe { core::ptr::copy(src, dst, len) }
        }
        // SAFETY: the caller's guarantee, and the two ranges do not overlap.
        Store::Bulk(CopyMode::Cached) => unsafe { core::ptr::copy_nonoverlapping(src, dst, len) },
        // SAFETY: the caller's guarantee; `copy_to_nontemporal` takes kernel addresses.
        Store::Bulk(CopyMode::Cacheless) => unsafe {
            bindings::copy_to_nontemporal(dst.cast(), src.cast(), len);
        },
        Store::Ordered => {
            for i in 0..len {
                // SAFETY: `i < len`, within both buffers (caller's guarantee); volatile so
                // that the bytes land in order.
                unsafe { dst.add(i).write_volatile(src.add(i).read()) };
            }
        }
    }
}

/// Copies `length` bytes from `data` through the cursor `ss`, advancing it; returns the bytes
/// left uncopied, which is 0 unless the state runs out first (C loops for ever then).
///
/// # Safety
///
/// As [`update_sge`]; each segment of `ss` is kernel memory valid for writes, `data` valid
/// for `length` bytes of reads.
pub(super) unsafe fn copy_run(
    ss: &mut bindings::rvt_sge_state,
    mut data: *const u8,
    mut length: u32,
    release: Release<'_>,
    how: Store,
) -> u32 {
    while length != 0 {
        let len = sge_length(&ss.sge, length);
        if crate::compat::warn_on!(len == 0) {
            break;
        }
        // SAFETY: the current segment has `len` bytes left (`sge_length`), `data` has
        // `length >= len` (caller's guarantee).
        unsafe { store(ss.sge.vaddr.cast(), data, len as usize, how) };
        // SAFETY: the caller's guarantee; `len` fits the current segment.
        unsafe { update_sge(ss, len, release) };
        // SAFETY: still within the caller's `length` bytes.
        data = unsafe { data.add(len as usize) };
        length -= len;
    }
    length
}

/// `rvt_copy_sge`'s body: copies `length` bytes of `data` into the memory `ss` describes.
/// With `copy_last`, the last 8 bytes are stored one by one, after the rest.
///
/// # Safety
///
/// As [`copy_run`].
// Inline, for the loopback's sake: see [`transfer`].
#[inline(always)]
pub(super) unsafe fn copy_sge(
    ss: &mut bindings::rvt_sge_state,
    data: *const u8,
    length: u32,
    release: Release<'_>,
    copy_last: bool,
    mode: CopyMode,
) {
    let (bulk, last) = match (copy_last, length) {
        (false, _) => (length, 0),
        (true, 0..=8) => (0, length),
        (true, _) => (length - 8, 8),
    };
    // SAFETY: the caller's guarantee, for `bulk + last == length` bytes in two runs.
    unsafe {
        let left = copy_run(ss, data, bulk, release, Store::Bulk(mode));
        if left == 0 {
            copy_run(ss, data.add(bulk as usize), last, release, Store::Ordered);
        }
    }
}

/// `rvt_copy_sge`: copies `length` bytes of `data` to the receive SGEs `ss` of `qp`.
///
/// # Safety
///
/// `qp` is a live QP of ours; `ss` a consistent SGE state over kernel mappings with room for
/// `length` bytes, holding a reference on each region when `release`; `data` valid for
/// `length` bytes of reads.
#[no_mangle]
pub(crate) unsafe extern "C" fn rvt_copy_sge(
    qp: *mut bindings::rvt_qp,
    ss: *mut bindings::rvt_sge_state,
    data: *mut c_void,
    length: u32,
    release: bool,
    copy_last: bool,
) {
    // SAFETY: a live QP of ours (caller's guarantee).
    let qp = unsafe { Qp::from_raw(qp) };
    let mode = copy_mode(qp.device(), length);
    // A driver may call this outside any read-side section (hfi1's receive path does).
    let rcu = release.then(rcu::read_lock);
    let release = rcu.as_ref().map(ReadSide::from);
    // SAFETY: the caller's guarantee; the driver owns `ss` for the call.
    unsafe { copy_sge(&mut *ss, data.cast(), length, release, copy_last, mode) };
}
c_export!(rvt_copy_sge);

/// The copy mode `dev`'s driver chose, for a copy of `length` bytes.
pub(super) fn copy_mode(dev: &Device, length: u32) -> CopyMode {
    CopyMode::for_copy(dev.dparms().sge_copy_mode, length)
}

/// Points `ss` at the start of the SGEs of `wqe`: what `rvt_restart_sge` and the loopback
/// start from. A WQE without SGEs gets an empty state (C copies `sg_list[0]` regardless,
/// which may lie past the queue).
///
/// # Safety
///
/// `wqe`'s `sg_list` has `wr.num_sge` entries.
pub(super) unsafe fn start_sge(ss: &mut bindings::rvt_sge_state, wqe: &Swqe) {
    let raw = wqe.as_raw();
    // SAFETY: the caller's guarantee; `wr` is the member every WQE fills.
    unsafe {
        let num_sge = (*raw).__bindgen_anon_1.wr.num_sge;
        let list = (*raw).sg_list.as_ptr();
        if num_sge > 0 {
            ss.sge = *list;
        } else {
            ss.sge = core::mem::zeroed();
        }
        ss.sg_list = list.add(1).cast_mut();
        // CAST: C's truncation to the u8 field; `num_sge` is at most `s_max_sge`.
        ss.num_sge = num_sge as u8;
    }
    ss.total_len = wqe.length();
}

/// Checks the rkey of an RDMA request to `qp` (`len` bytes at `vaddr`, access `acc`), and
/// on success points the current SGE of `ss` at the memory, holding a reference to its
/// region; the rest of `ss` is left as it was. `false`: refused. `rcu`: the caller's RCU
/// read-side section.
pub(super) fn check_rkey(
    ss: &mut bindings::rvt_sge_state,
    qp: &Qp,
    len: u32,
    vaddr: u64,
    rkey: u32,
    acc: u32,
    rcu: &rcu::Guard,
) -> bool {
    mr::check_rkey(qp, &mut ss.sge, len, vaddr, rkey, acc, rcu.into())
}

/// Makes the current SGE of `ss` its only one, of `len` bytes: the memory of a checked rkey.
pub(super) fn single(ss: &mut bindings::rvt_sge_state, len: u32) {
    ss.sg_list = core::ptr::null_mut();
    ss.num_sge = 1;
    ss.total_len = len;
}

/// The address the current SGE of `ss` is at.
pub(super) fn cursor(ss: &bindings::rvt_sge_state) -> *mut c_void {
    ss.sge.vaddr
}

/// Gives back the region reference of the current SGE of `ss`, inside the read-side section
/// `at`; `ss` is then empty.
///
/// # Safety
///
/// The current SGE holds a reference to its region (a checked key), and nothing but `ss`
/// uses it.
pub(super) unsafe fn release_current(ss: &mut bindings::rvt_sge_state, at: ReadSide<'_>) {
    // SAFETY: the caller's guarantee.
    unsafe { mr::put_mr(ss.sge.mr, at) };
    ss.num_sge = 0;
}

/// Moves `length` bytes from the SGEs of `src` into those of `dst`, a segment at a time;
/// returns the bytes left, 0 unless a state runs out first (a warning). `release`: `dst`'s
/// SGEs give back their region references as they fill, and what is left of them at the
/// end; otherwise `src`'s do as they empty, inside the read-side section `at`. `copy_last`:
/// see [`copy_sge`].
///
/// # Safety
///
/// Both are consistent states over kernel mappings of checked regions, `src` with at least
/// `length` bytes, `dst` with room for them; the one that releases holds a reference on
/// each of its regions.
// Inline into the responder, and `copy_sge` into it: the copy is the loopback's inner loop,
// and out of line each call saves and restores the registers the loop keeps (a 64 KiB RDMA
// WRITE calls `copy_sge` 16 times). The compiler's own choice turns on the size of the code
// around it, and turned the wrong way more than once (README, "Where the time goes").
#[inline(always)]
pub(super) unsafe fn transfer(
    src: &mut bindings::rvt_sge_state,
    dst: &mut bindings::rvt_sge_state,
    mut length: u32,
    release: bool,
    copy_last: bool,
    dev: &Device,
    at: ReadSide<'_>,
) -> u32 {
    let (dst_release, src_release) = if release {
        (Some(at), None)
    } else {
        (None, Some(at))
    };
    while length != 0 {
        let len = sge_length(&src.sge, length);
        if crate::compat::warn_on!(len == 0) {
            break;
        }
        // SAFETY: the caller's guarantees; `src`'s current segment has `len` bytes.
        unsafe {
            copy_sge(
                dst,
                src.sge.vaddr.cast(),
                len,
                dst_release,
                copy_last,
                copy_mode(dev, len),
            );
            update_sge(src, len, src_release);
        }
        length -= len;
    }
    if release {
        // SAFETY: what is left of `dst` still holds references (caller's guarantee).
        unsafe { mr::put_ss(dst, at) };
    }
    length
}

/// `rvt_restart_sge`: rewinds `ss` to byte `len` of `wqe`'s data, for a retransmission;
/// returns the bytes from there to the end.
///
/// # Safety
///
/// `ss` is the driver's state to overwrite; `wqe` a send WQE whose `sg_list` has
/// `wr.num_sge` entries, each over a live region, and `len <= wqe->length`.
#[no_mangle]
pub(crate) unsafe extern "C" fn rvt_restart_sge(
    ss: *mut bindings::rvt_sge_state,
    wqe: *mut bindings::rvt_swqe,
    len: u32,
) -> u32 {
    // SAFETY: the caller's guarantee: a send WQE of the driver's QP, which it does not
    // complete during the call.
    let wqe = unsafe { Swqe::from_raw(wqe) };
    // SAFETY: the caller's guarantee.
    unsafe {
        let ss = &mut *ss;
        start_sge(ss, wqe);
        skip_sge(ss, len, None);
    }
    wqe.length().wrapping_sub(len)
}
c_export!(rvt_restart_sge);
