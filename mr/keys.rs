// SPDX-License-Identifier: GPL-2.0-only

//! The key checks of the data path, exported to drivers: `rvt_lkey_ok` (a local SGE of a
//! posted work request), `rvt_rkey_ok` (a remote RDMA request), `rvt_fast_reg_mr` and
//! `rvt_invalidate_rkey` (the REG_MR and LOCAL_INV work requests), plus the lkey tests that
//! QP cleanup uses.
//!
//! A checked key yields an `rvt_sge` that holds a reference to its region; the driver drops
//! it with `rvt_put_mr` (rdmavt_mr.h) once the SGE is consumed.

use core::ptr;

use kernel::{ffi::c_int, prelude::*};

use crate::compat::{rcu, read_side::ReadSide};

use super::{
    lkey::{self, LkeyTable},
    region::Mregion,
    Mr,
};
use crate::{bindings, device::Device, macros::c_export, qp::Qp, trace};

/// The offset of `addr` from `base` when `len` bytes from there lie within a region of
/// `region_len` bytes at `base`. C computes `addr - base + len` in 64 bits and so accepts a
/// sum that wraps; that one is refused here (see `rvt_rkey_ok`).
pub(super) fn range_offset(addr: u64, base: u64, len: u32, region_len: usize) -> Option<usize> {
    let off = usize::try_from(addr.checked_sub(base)?).ok()?;
    let end = off.checked_add(len as usize)?;
    (end <= region_len).then_some(off)
}

/// An lkey grants a local access when the region allows all of `acc`.
pub(super) fn lkey_access_ok(mr_flags: c_int, acc: c_int) -> bool {
    mr_flags & acc == acc
}

/// An rkey grants a remote access when the region allows any of `acc`.
pub(super) fn rkey_access_ok(mr_flags: c_int, acc: c_int) -> bool {
    mr_flags & acc != 0
}

/// `rvt_sge_adjacent`: whether `sge` continues `last` (same key, next address), in which case
/// `last` grows by it instead of a new SGE being stored.
fn sge_adjacent(last: Option<&mut bindings::rvt_sge>, sge: &bindings::ib_sge) -> bool {
    let Some(last) = last else {
        return false;
    };
    // SAFETY: a stored SGE holds a reference to its region.
    let mr = unsafe { Mregion::from_raw(last.mr) };
    // CAST: as C's `(uint64_t)(vaddr + length)`.
    let end = (last.vaddr.addr() as u64).wrapping_add(u64::from(last.length));
    if sge.lkey != mr.lkey() || end != sge.addr {
        return false;
    }
    if sge.lkey != 0 {
        // The same unsigned arithmetic as C: an overrun is left for the full check to catch.
        let end = sge
            .addr
            .wrapping_sub(mr.user_base())
            .wrapping_add(u64::from(sge.length));
        if end > mr.length() as u64 {
            return false;
        }
    } else {
        last.length = last.length.wrapping_add(sge.length);
    }
    last.sge_length = last.sge_length.wrapping_add(sge.length);
    // SAFETY: `last` holds a reference to its region, whose PD outlives it; the event only
    // reads both SGEs.
    unsafe { trace::rvt_sge_adjacent(last, ptr::from_ref(sge).cast_mut()) };
    true
}

/// What `rvt_lkey_ok` did with an SGE.
enum Stored {
    /// It continued the previous SGE, which grew.
    Merged,
    /// It is stored in the new internal SGE, which holds a region reference.
    Added,
}

/// The region `key` names in `table`, referenced and checked as both key checks do: still
/// published, not invalidated, the very key (generation and user byte included), and the
/// PD `pd`; `at` is the read-side section the caller checks the key in. Inline: it is most of
/// each key check, twice per loopback message.
#[inline]
fn find(
    table: &LkeyTable,
    key: u32,
    pd: *mut bindings::ib_pd,
    at: ReadSide<'_>,
) -> Option<crate::compat::aref::ARef<Mregion>> {
    let mr = table.lookup(key, at)?.reference(at);
    // A failed check drops `mr`, giving the reference back (C's bail_unref).
    (mr.published() && !mr.invalidated() && mr.lkey() == key && mr.pd() == pd).then_some(mr)
}

/// The body of `rvt_lkey_ok`, inside the caller's RCU read-side section `at`.
///
/// Inline in each of its three callers, always: `post_send` and `get_wqe` call it once per
/// SGE, in a loop whose values would otherwise be saved around each call.
///
/// # Safety
///
/// `pd` is a live PD of one of our devices.
#[inline(always)]
unsafe fn lkey_ok(
    rkt: &LkeyTable,
    pd: *mut bindings::rvt_pd,
    isge: &mut bindings::rvt_sge,
    last: Option<&mut bindings::rvt_sge>,
    sge: &bindings::ib_sge,
    acc: c_int,
    at: ReadSide<'_>,
) -> Result<Stored> {
    // SAFETY: `pd` is live (caller's guarantee); `ibpd` is its head.
    let (user, ibpd) = unsafe { ((*pd).user, &raw mut (*pd).ibpd) };
    // Key 0 is the DMA MR: kernel virtual addresses, for kernel PDs.
    if sge.lkey == 0 {
        if user {
            return Err(EINVAL);
        }
        if sge_adjacent(last, sge) {
            return Ok(Stored::Merged);
        }
        // SAFETY: the PD's device is one of ours and outlives the PD.
        let dev = unsafe { Device::from_ib((*ibpd).device) };
        let mr = lkey::dma_mr(dev, at).ok_or(EINVAL)?.reference(at);
        Mregion::fill_dma_sge(mr, isge, sge.addr, sge.length);
        return Ok(Stored::Added);
    }
    if sge_adjacent(last, sge) {
        return Ok(Stored::Merged);
    }
    let mr = find(rkt, sge.lkey, ibpd, at).ok_or(EINVAL)?;
    let off = range_offset(sge.addr, mr.user_base(), sge.length, mr.length()).ok_or(EINVAL)?;
    if !lkey_access_ok(mr.access_flags(), acc) {
        return Err(EINVAL);
    }
    let pos = mr
        .locate(off.wrapping_add(mr.offset() as usize))
        .ok_or(EINVAL)?;
    Mregion::fill_sge(mr, isge, pos, sge.length)?;
    Ok(Stored::Added)
}

/// `rvt_lkey_ok` for our own `post_send`: checks SGE `sge` of a request posted on `qp` for
/// access `acc` (`ACCESS_LOCAL_WRITE` or none) and stores it in `new`, which then holds a
/// reference to its region; or, when it continues `last`, grows that one instead. `Ok(true)`:
/// stored in `new`; `Ok(false)`: merged into `last`. `at`: the poster's read-side section, its
/// `s_hlock`.
pub(crate) fn check_lkey(
    qp: &Qp,
    new: &mut bindings::rvt_sge,
    last: Option<&mut bindings::rvt_sge>,
    sge: &bindings::ib_sge,
    acc: u32,
    at: ReadSide<'_>,
) -> Result<bool> {
    // CAST: IB access flags fit an int.
    let acc = acc as c_int;
    let table = LkeyTable::of(qp.device());
    // SAFETY: the QP's PD is a live PD of ours; `new` and `last` are distinct references.
    let stored = unsafe { lkey_ok(table, qp.pd(), new, last, sge, acc, at) }?;
    Ok(traced(stored, new, sge))
}

/// `rvt_lkey_ok` for SGE `sge` of a receive WQE of `qp` (`init_sge`), inside the caller's RCU
/// read-side section `at`: checks it for local write under PD `pd` (the QP's, or its SRQ's)
/// and stores it in `new`, which then holds a reference to its region.
///
/// # Safety
///
/// `pd` is the live PD of `qp` or of its SRQ.
pub(crate) unsafe fn check_recv_lkey(
    qp: &Qp,
    pd: *mut bindings::rvt_pd,
    new: &mut bindings::rvt_sge,
    sge: &bindings::ib_sge,
    at: ReadSide<'_>,
) -> Result {
    // CAST: IB access flags fit an int.
    let acc = bindings::ib_access_flags_IB_ACCESS_LOCAL_WRITE as c_int;
    let table = LkeyTable::of(qp.device());
    // SAFETY: `pd` is a live PD of ours (caller's guarantee); there is no SGE to merge into.
    let stored = unsafe { lkey_ok(table, pd, new, None, sge, acc, at) }?;
    traced(stored, new, sge);
    Ok(())
}

/// The trace event of a stored SGE; `true` for one stored, `false` for one merged.
fn traced(stored: Stored, new: &mut bindings::rvt_sge, sge: &bindings::ib_sge) -> bool {
    match stored {
        Stored::Added => {
            // SAFETY: `new` now holds a reference to its region, whose PD outlives it; the
            // event only reads both SGEs.
            unsafe { trace::rvt_sge_new(new, ptr::from_ref(sge).cast_mut()) };
            true
        }
        Stored::Merged => false,
    }
}

/// Checks SGE `sge` of a posted work request against the lkey table `rkt` for PD `pd` and
/// access `acc`, and stores it in `isge`, which then holds a reference to the region. If it
/// continues `last_sge`, that one grows instead. Returns 1 (stored), 0 (merged) or -EINVAL.
///
/// # Safety
///
/// `rkt` is the lkey table of the registered device of `pd`, a live PD; `isge` and `sge` are
/// valid; `last_sge` is NULL or a valid SGE stored by an earlier call, distinct from `isge`.
#[no_mangle]
pub(crate) unsafe extern "C" fn rvt_lkey_ok(
    rkt: *mut bindings::rvt_lkey_table,
    pd: *mut bindings::rvt_pd,
    isge: *mut bindings::rvt_sge,
    last_sge: *mut bindings::rvt_sge,
    sge: *mut bindings::ib_sge,
    acc: c_int,
) -> c_int {
    // SAFETY: the caller guarantees all of these are valid and that `last_sge` and `isge`
    // do not overlap, so the mutable references made here alias nothing.
    let (isge, sge) = unsafe { (&mut *isge, &*sge) };
    let rcu = rcu::read_lock();
    // SAFETY: as above.
    let res = unsafe {
        lkey_ok(
            LkeyTable::from_raw(rkt),
            pd,
            isge,
            last_sge.as_mut(),
            sge,
            acc,
            (&rcu).into(),
        )
    };
    match res {
        Ok(stored) => c_int::from(traced(stored, isge, sge)),
        Err(e) => e.to_errno(),
    }
}
c_export!(rvt_lkey_ok);

/// The body of `rvt_rkey_ok`, inside the caller's RCU read-side section `at`; `None` where C
/// returns 0.
///
/// # Safety
///
/// `sge` is valid for writes.
unsafe fn rkey_ok(
    qp: &Qp,
    sge: *mut bindings::rvt_sge,
    len: u32,
    vaddr: u64,
    rkey: u32,
    acc: c_int,
    at: ReadSide<'_>,
) -> Option<()> {
    let (dev, pd) = (qp.device(), qp.pd().cast::<bindings::ib_pd>());
    // Key 0 is the DMA MR: kernel virtual addresses, for kernel PDs.
    if rkey == 0 {
        if qp.user_pd() {
            return None;
        }
        // C takes the DMA MR of the PD's device, which is the QP's.
        let mr = lkey::dma_mr(dev, at)?.reference(at);
        // SAFETY: `sge` is valid for writes (caller's guarantee).
        Mregion::fill_dma_sge(mr, unsafe { &mut *sge }, vaddr, len);
        return Some(());
    }
    let mr = find(LkeyTable::of(dev), rkey, pd, at)?;
    // C accepts `vaddr - iova + len` wrapping around 2^64 and then indexes the map with the
    // huge offset, reading past it; `range_offset` refuses such a request instead.
    let off = range_offset(vaddr, mr.iova(), len, mr.length())?;
    if !rkey_access_ok(mr.access_flags(), acc) {
        return None;
    }
    let pos = mr.locate(off.wrapping_add(mr.offset() as usize))?;
    // SAFETY: as above.
    Mregion::fill_sge(mr, unsafe { &mut *sge }, pos, len).ok()
}

/// `rvt_rkey_ok` for our own responder, inside its RCU read-side section `at`: checks an RDMA
/// request for `len` bytes at `vaddr` under `rkey` on `qp` for access `acc` (`ACCESS_REMOTE_*`,
/// any one of them) and points `sge` at the memory, holding a reference to its region.
/// `false`: refused, `sge` unchanged or holding no reference.
pub(crate) fn check_rkey(
    qp: &Qp,
    sge: &mut bindings::rvt_sge,
    len: u32,
    vaddr: u64,
    rkey: u32,
    acc: u32,
    at: ReadSide<'_>,
) -> bool {
    // CAST: IB access flags fit an int.
    let acc = acc as c_int;
    // SAFETY: a live QP of ours; `sge` is valid for writes.
    unsafe { rkey_ok(qp, sge, len, vaddr, rkey, acc, at) }.is_some()
}

/// Checks an RDMA request for `len` bytes at `vaddr` under `rkey` on `qp` for access `acc`
/// (any one of the flags), and points `sge` at the memory, holding a reference to its region.
/// Returns 1 if the request is allowed, 0 if not.
///
/// # Safety
///
/// `qp` is a live QP of one of rdmavt's devices; `sge` is valid for writes.
#[no_mangle]
pub(crate) unsafe extern "C" fn rvt_rkey_ok(
    qp: *mut bindings::rvt_qp,
    sge: *mut bindings::rvt_sge,
    len: u32,
    vaddr: u64,
    rkey: u32,
    acc: c_int,
) -> c_int {
    let rcu = rcu::read_lock();
    // SAFETY: a live QP of ours; `sge` is valid for writes (caller's guarantees).
    let ok = unsafe { rkey_ok(Qp::from_raw(qp), sge, len, vaddr, rkey, acc, (&rcu).into()) };
    c_int::from(ok.is_some())
}
c_export!(rvt_rkey_ok);

/// The body of `rvt_fast_reg_mr`: gives the fast-register MR `ibmr` the key `key` (same
/// index and generation, the consumer's user byte) and access `access`, and makes it valid
/// again. EACCES for an MR of another PD than `qp`'s, EINVAL for a DMA or user MR or another
/// key.
///
/// # Safety
///
/// `ibmr` is an MR that rdmavt created, live.
pub(crate) unsafe fn fast_reg_mr(
    qp: &Qp,
    ibmr: *mut bindings::ib_mr,
    key: u32,
    access: c_int,
) -> Result {
    // SAFETY: the caller guarantees `ibmr` is live and ours. The driver's send engine
    // serialises work requests on the QP, which is what protects these fields in C.
    unsafe {
        let mr = Mr::from_ib(ibmr);
        let region = mr.region();
        if (*qp.ibqp()).pd != region.pd() {
            return Err(EACCES);
        }
        if region.lkey() == 0 || !mr.umem().is_null() {
            return Err(EINVAL);
        }
        if key & 0xFFFF_FF00 != region.lkey() & 0xFFFF_FF00 {
            return Err(EINVAL);
        }
        (*ibmr).lkey = key;
        (*ibmr).rkey = key;
        let raw = region.as_raw();
        (*raw).lkey = key;
        (*raw).access_flags = access;
        (*raw).iova = (*ibmr).iova;
        region.set_invalidated(false);
    }
    Ok(())
}

/// The REG_MR work request, as [`fast_reg_mr`].
///
/// # Safety
///
/// `qp` is a live QP of one of rdmavt's devices; `ibmr` an MR that rdmavt created.
#[no_mangle]
pub(crate) unsafe extern "C" fn rvt_fast_reg_mr(
    qp: *mut bindings::rvt_qp,
    ibmr: *mut bindings::ib_mr,
    key: u32,
    access: c_int,
) -> c_int {
    // SAFETY: the caller's guarantees.
    match unsafe { fast_reg_mr(Qp::from_raw(qp), ibmr, key, access) } {
        Ok(()) => 0,
        Err(e) => e.to_errno(),
    }
}
c_export!(rvt_fast_reg_mr);

/// The body of `rvt_invalidate_rkey`: EINVAL for key 0, an unknown key or another PD.
pub(crate) fn invalidate_rkey(qp: &Qp, rkey: u32) -> Result {
    if rkey == 0 {
        return Err(EINVAL);
    }
    // SAFETY: the QP is live; its PD outlives it.
    let pd = unsafe { (*qp.ibqp()).pd };
    let rcu = rcu::read_lock();
    match LkeyTable::of(qp.device()).lookup(rkey, (&rcu).into()) {
        Some(mr) if mr.lkey() == rkey && mr.pd() == pd => {
            mr.set_invalidated(true);
            Ok(())
        }
        _ => Err(EINVAL),
    }
}

/// The LOCAL_INV (and SEND_WITH_INV) work request: invalidates `rkey` of an MR in `qp`'s
/// PD until it is fast-registered again. EINVAL for key 0, an unknown key or another PD.
///
/// # Safety
///
/// `qp` is a live QP of one of rdmavt's devices.
#[no_mangle]
pub(crate) unsafe extern "C" fn rvt_invalidate_rkey(qp: *mut bindings::rvt_qp, rkey: u32) -> c_int {
    // SAFETY: a live QP of ours (caller's guarantee).
    match invalidate_rkey(unsafe { Qp::from_raw(qp) }, rkey) {
        Ok(()) => 0,
        Err(e) => e.to_errno(),
    }
}
c_export!(rvt_invalidate_rkey);

/// Whether `mr` is the region of `lkey`. Not exported (as in C): QP cleanup uses it.
///
/// # Safety
///
/// `mr` is NULL or a live region.
#[no_mangle]
pub(crate) unsafe extern "C" fn rvt_mr_has_lkey(mr: *mut bindings::rvt_mregion, lkey: u32) -> bool {
    // SAFETY: a non-NULL `mr` is live (caller's guarantee).
    !mr.is_null() && lkey == unsafe { Mregion::from_raw(mr) }.lkey()
}
c_export!(rvt_mr_has_lkey);

/// Whether any SGE of the SGE state `ss` references `lkey`. Not exported (as in C).
///
/// # Safety
///
/// `ss` is a valid SGE state: its `num_sge - 1` further SGEs follow at `sg_list`.
#[no_mangle]
pub(crate) unsafe extern "C" fn rvt_ss_has_lkey(
    ss: *mut bindings::rvt_sge_state,
    lkey: u32,
) -> bool {
    // SAFETY: `ss` is valid (caller's guarantee), with `num_sge - 1` entries at `sg_list`
    // besides the current one; every SGE in use holds its region.
    unsafe {
        let ss = &*ss;
        if ss.num_sge == 0 {
            return false;
        }
        rvt_mr_has_lkey(ss.sge.mr, lkey)
            || (0..usize::from(ss.num_sge) - 1)
                .any(|i| rvt_mr_has_lkey((*ss.sg_list.add(i)).mr, lkey))
    }
}
c_export!(rvt_ss_has_lkey);
