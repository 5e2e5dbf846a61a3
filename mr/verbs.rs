// SPDX-License-Identifier: GPL-2.0-only

//! The MR verbs of `ib_device_ops`: `get_dma_mr`, `reg_user_mr`, `alloc_mr` with
//! `map_mr_sg`, and `dereg_mr`.

use kernel::{
    error::from_err_ptr,
    ffi::{c_int, c_uint},
    page::{PAGE_SHIFT, PAGE_SIZE},
    prelude::*,
    time::msecs_to_jiffies,
};

use crate::compat::rcu;

use super::{
    lkey,
    region::{seg_ptr, SEGSZ},
    KeyKind, Mr, Mregion, NewMr,
};
use crate::{bindings, device::log::rvt_err, trace};

/// How long `dereg_mr` waits for a region's users to let go: C's `5 * HZ`.
const DEREG_TIMEOUT_MS: u32 = 5000;

/// An MR for ib_core, or the error pointer C would return.
fn into_ib(mr: Result<NewMr>) -> *mut bindings::ib_mr {
    match mr {
        Ok(mr) => mr.into_ib(),
        Err(e) => e.to_ptr(),
    }
}

/// `get_dma_mr`: the MR of key 0, which covers kernel virtual memory; kernel PDs only.
///
/// # Safety
///
/// Called by ib_core with a live PD of one of our devices.
pub(crate) unsafe extern "C" fn get_dma_mr(
    pd: *mut bindings::ib_pd,
    acc: c_int,
) -> *mut bindings::ib_mr {
    // SAFETY: ib_core passes a live PD of one of our devices, allocated with `size_ib_pd`,
    // so the head of an `rvt_pd`.
    if unsafe { (*pd.cast::<bindings::rvt_pd>()).user } {
        return EPERM.to_ptr();
    }
    into_ib(NewMr::new(pd, 0, KeyKind::Dma).inspect(|mr| {
        // SAFETY: ours alone until returned.
        unsafe { (*mr.region().as_raw()).access_flags = acc };
    }))
}

/// `reg_user_mr`: pins `length` bytes of user memory at `start` and maps them page by page;
/// `virt_addr` is the address rkeys use for it. A DMA handle (`dmah`, since 6.17) is not
/// supported.
///
/// # Safety
///
/// Called by ib_core with a live PD of one of our devices, from the registering process.
#[cfg(not(rdmavt_kernel_6_12))]
pub(crate) unsafe extern "C" fn reg_user_mr(
    pd: *mut bindings::ib_pd,
    start: u64,
    length: u64,
    virt_addr: u64,
    mr_access_flags: c_int,
    dmah: *mut bindings::ib_dmah,
    _udata: *mut bindings::ib_udata,
) -> *mut bindings::ib_mr {
    if !dmah.is_null() {
        return crate::compat::eopnotsupp().to_ptr();
    }
    // SAFETY: the caller's guarantee.
    unsafe { reg_user(pd, start, length, virt_addr, mr_access_flags) }
}

/// `reg_user_mr` before 6.17, which has no DMA handle: as above.
///
/// # Safety
///
/// As above.
#[cfg(rdmavt_kernel_6_12)]
pub(crate) unsafe extern "C" fn reg_user_mr(
    pd: *mut bindings::ib_pd,
    start: u64,
    length: u64,
    virt_addr: u64,
    mr_access_flags: c_int,
    _udata: *mut bindings::ib_udata,
) -> *mut bindings::ib_mr {
    // SAFETY: the caller's guarantee.
    unsafe { reg_user(pd, start, length, virt_addr, mr_access_flags) }
}

/// The `reg_user_mr` verb of both kernel lines.
///
/// # Safety
///
/// As `reg_user_mr`.
unsafe fn reg_user(
    pd: *mut bindings::ib_pd,
    start: u64,
    length: u64,
    virt_addr: u64,
    mr_access_flags: c_int,
) -> *mut bindings::ib_mr {
    if length == 0 {
        return EINVAL.to_ptr();
    }
    // SAFETY: ib_core passes a live PD of one of our devices; ib_umem_get checks the range
    // and the flags and pins the pages. CAST: u64 and unsigned long/size_t are the same
    // width on the 64-bit targets rdmavt builds for, as C's implicit conversions.
    let umem = match from_err_ptr(unsafe {
        bindings::rdmavt_rs_ib_umem_get_va(
            (*pd).device,
            start as usize,
            length as usize,
            mr_access_flags,
        )
    }) {
        Ok(umem) => umem,
        Err(e) => return e.to_ptr(),
    };
    // SAFETY: `umem` was just pinned and is ours; its page count is at most what a 64-bit
    // length gives. CAST: C stores the page count in an int, and so sizes the map.
    let pages = unsafe { bindings::rdmavt_rs_ib_umem_num_pages(umem) } as c_int;
    let res = NewMr::new(pd, pages, KeyKind::Indexed).and_then(|mut mr| {
        // SAFETY: `umem` is ours; the MR releases it from now on, in `dereg_mr`.
        unsafe { mr.set_umem(umem) };
        // SAFETY: as above, `umem` is live.
        let offset = unsafe { bindings::rdmavt_rs_ib_umem_offset(umem) };
        let region = mr.region().as_raw();
        // SAFETY: ours alone until returned.
        unsafe {
            (*region).user_base = start;
            (*region).iova = virt_addr;
            (*region).length = length as usize;
            // CAST: the offset within a page, which fits.
            (*region).offset = offset as u32;
            (*region).access_flags = mr_access_flags;
            (*region).page_shift = PAGE_SHIFT as u8;
        }
        map_umem(mr.region(), umem)?;
        Ok(mr)
    });
    match res {
        Ok(mr) => mr.into_ib(),
        Err(e) => {
            // The failed `NewMr` (if any) is gone without releasing `umem`: C's bail_umem.
            // SAFETY: pinned above and not owned by any MR.
            unsafe { bindings::ib_umem_release(umem) };
            e.to_ptr()
        }
    }
}

/// Fills the map of a new user MR with the kernel addresses of the pinned pages, one page
/// per segment (for_each_sgtable_page in C). EINVAL for a page with no kernel mapping.
fn map_umem(mr: &Mregion, umem: *mut bindings::ib_umem) -> Result {
    let region = mr.as_raw();
    let mut iter = bindings::sg_page_iter::default();
    // SAFETY: `umem` is pinned and live; `iter` is ours.
    unsafe { bindings::rdmavt_rs_umem_page_iter_start(umem, &mut iter) };
    let (mut m, mut n) = (0, 0);
    // SAFETY: `iter` was started on the umem's table, which stays as it is.
    while unsafe { bindings::__sg_page_iter_next(&mut iter) } {
        // SAFETY: `iter` is on a page of the table.
        let vaddr = unsafe { bindings::rdmavt_rs_sg_page_iter_address(&mut iter) };
        if vaddr.is_null() {
            return Err(EINVAL);
        }
        // The map was sized for the umem's pages; C trusts that, here it is checked.
        // SAFETY: the region is the new MR's, ours alone; `m < mapsz` arrays are allocated.
        unsafe {
            let seg = seg_ptr(region, m, n).ok_or(EINVAL)?;
            (*seg).vaddr = vaddr;
            (*seg).length = PAGE_SIZE;
        }
        // SAFETY: the region is the new MR's, in a live PD; `vaddr` is a page's kernel address.
        // CAST: C passes `m` and `n` to the event's u16 parameters.
        unsafe { trace::rvt_mr_user_seg(region, m as u16, n as u16, vaddr, PAGE_SIZE) };
        n += 1;
        if n == SEGSZ {
            m += 1;
            n = 0;
        }
    }
    Ok(())
}

/// `alloc_mr`: an MR for fast registration, with room for `max_num_sg` pages.
///
/// # Safety
///
/// Called by ib_core with a live PD of one of our devices.
pub(crate) unsafe extern "C" fn alloc_mr(
    pd: *mut bindings::ib_pd,
    mr_type: bindings::ib_mr_type,
    max_num_sg: u32,
) -> *mut bindings::ib_mr {
    if mr_type != bindings::ib_mr_type::IB_MR_TYPE_MEM_REG {
        return EINVAL.to_ptr();
    }
    // CAST: C passes the u32 on as an int; see `region::segarrays` for what that does.
    into_ib(NewMr::new(pd, max_num_sg as c_int, KeyKind::Indexed))
}

/// `rvt_set_page`, ib_sg_to_pages' callback: appends the page at `addr` to the map.
///
/// # Safety
///
/// Called by ib_sg_to_pages, from `map_mr_sg`, with the MR `map_mr_sg` is mapping.
unsafe extern "C" fn set_page(ibmr: *mut bindings::ib_mr, addr: u64) -> c_int {
    // SAFETY: ib_sg_to_pages calls back with the MR `map_mr_sg` passed it, one of ours.
    let region = unsafe { Mr::from_ib(ibmr) }.region().as_raw();
    // SAFETY: ib_core serialises map_mr_sg with the MR's other users (the ULP owns it). The
    // event reads the region and its PD, live while the MR is, and only computes the page of
    // the address (a kernel mapping under INFINIBAND_VIRT_DMA).
    unsafe {
        let ps: u32 = 1 << (*region).page_shift;
        // CAST: as C, the count of pages mapped so far, in a u32.
        let mapped = ((*region).length >> (*region).page_shift) as u32;
        if mapped == (*region).max_segs {
            return ENOMEM.to_errno();
        }
        let (m, n) = (mapped as usize / SEGSZ, mapped as usize % SEGSZ);
        // C indexes without this check; only a `max_num_sg` above i32::MAX (an int count
        // that C reads as negative) gets past `max_segs` without it.
        let Some(seg) = seg_ptr(region, m, n) else {
            return ENOMEM.to_errno();
        };
        // CAST: a DMA address of a kernel mapping, which the data path uses as a pointer.
        (*seg).vaddr = core::ptr::with_exposed_provenance_mut(addr as usize);
        (*seg).length = ps as usize;
        (*region).length += ps as usize;
        // CAST: as above; C passes `m` and `n` to the event's u16 parameters.
        trace::rvt_mr_page_seg(region, m as u16, n as u16, (*seg).vaddr, ps as usize);
    }
    0
}

/// `map_mr_sg`: maps a DMA-mapped scatterlist page by page; returns how many entries were
/// mapped, as ib_sg_to_pages.
///
/// # Safety
///
/// Called by ib_core with one of our MRs, owned by the caller while it maps it, and a
/// DMA-mapped scatterlist of `sg_nents` entries.
pub(crate) unsafe extern "C" fn map_mr_sg(
    ibmr: *mut bindings::ib_mr,
    sg: *mut bindings::scatterlist,
    sg_nents: c_int,
    sg_offset: *mut c_uint,
) -> c_int {
    // SAFETY: ib_core passes one of our MRs.
    let region = unsafe { Mr::from_ib(ibmr) }.region().as_raw();
    // SAFETY: the ULP owns the MR while it maps it; ib_sg_to_pages gets ib_core's arguments,
    // and so does the event, which reads the MR (ours) and its PD (live while it is).
    unsafe {
        (*region).length = 0;
        (*region).page_shift = PAGE_SHIFT as u8;
        let ret = bindings::ib_sg_to_pages(ibmr, sg, sg_nents, sg_offset, Some(set_page));
        let iova = (*ibmr).iova;
        (*region).user_base = iova;
        (*region).iova = iova;
        // C reads the first segment even when the MR has no map array (max_num_sg 0);
        // an empty map counts as address 0 here.
        let first = seg_ptr(region, 0, 0).map_or(0, |seg| (*seg).vaddr.addr() as u64);
        // CAST: as C, the offset into the first page, truncated to the u32 field.
        (*region).offset = iova.wrapping_sub(first) as u32;
        (*region).length = (*ibmr).length as usize;
        trace::rvt_map_mr_sg(ibmr, sg_nents, sg_offset);
        ret
    }
}

/// `rvt_check_refs`: waits for the references other than the MR's to go, after making the
/// QPs that may hold some let go.
fn check_refs(mr: &Mregion, caller: &str) -> Result {
    if mr.lkey() != 0 {
        // Not for the DMA MR: C skips it too. QPs that still reference the key (unfinished
        // sends, receive state, RDMA read responses) go to the error state and let go.
        // SAFETY: the region is unpublished and being deregistered; its PD's device is ours
        // and outlives it; no QP lock is held here.
        unsafe {
            let dev = crate::device::Device::from_ib((*mr.pd()).device);
            crate::qp::dereg_clean_qps(dev, mr.as_raw());
        }
        // The lkey table is read under RCU: wait for those readers before counting.
        rcu::synchronize_rcu();
    }
    if !mr.wait_unused(msecs_to_jiffies(DEREG_TIMEOUT_MS)) {
        // SAFETY: the region's PD is alive (ib_core holds it until the MR is gone) and
        // belongs to one of our devices.
        let dev = unsafe { crate::device::Device::from_ib((*mr.pd()).device) };
        rvt_err!(
            dev,
            "{} timeout mr {:p} pd {:p} lkey {:x} refcount {}\n",
            caller,
            mr.as_raw(),
            mr.pd(),
            mr.lkey(),
            mr.count()
        );
        // As C: the MR stays (ib_core keeps it on EBUSY); take back a reference so the count
        // cannot reach zero again behind the caller's back.
        mr.get();
        return Err(EBUSY);
    }
    Ok(())
}

/// `dereg_mr`: unpublishes the MR's key, waits for its users, then frees it. EBUSY (and the
/// MR kept) if a user does not let go within five seconds, as C.
///
/// # Safety
///
/// Called by ib_core with one of our MRs, which nobody uses to post new work any more.
pub(crate) unsafe extern "C" fn dereg_mr(
    ibmr: *mut bindings::ib_mr,
    _udata: *mut bindings::ib_udata,
) -> c_int {
    // SAFETY: ib_core passes one of our MRs, which stays until we free it below.
    let mr = unsafe { Mr::from_ib(ibmr) };
    let region = mr.region();
    lkey::free_lkey(region);
    // SAFETY: drops the table's reference (or, for the DMA MR, the one `alloc_lkey` took
    // before the lock); the region's memory is not freed by a put.
    unsafe { region.put() };
    if let Err(e) = check_refs(region, "rvt_dereg_mr") {
        return e.to_errno();
    }
    let (raw, umem) = (region.as_raw(), mr.umem());
    // SAFETY: the count reached zero after the key was unpublished and a grace period
    // passed: nobody references the region or the MR any more; both came from `NewMr::new`
    // and `umem` (or NULL, which ib_umem_release accepts) was pinned for it.
    unsafe {
        Mregion::deinit(raw);
        bindings::ib_umem_release(umem);
        bindings::kfree(mr.ibmr().cast());
    }
    0
}
