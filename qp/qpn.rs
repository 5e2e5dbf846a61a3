// SPDX-License-Identifier: GPL-2.0-only

//! QP numbers: `struct rvt_qp_ibdev`, with the bitmap of numbers in use (`rvt_qpn_table`) and
//! the RCU hash table of live QPs that the receive path searches (`rvt_lookup_qpn()` in
//! rdmavt_qp.h, which hfi1 inlines: so the hash and the table's shape are C's, exactly).
//!
//! The bitmap's pages are set and cleared with atomic bit operations, as in C, because a
//! driver with its own `alloc_qpn` (qib) works on the same pages.

use core::ptr::{self, NonNull};

use kernel::{alloc::flags::__GFP_ZERO, ffi::c_ulong, page::PAGE_SIZE, prelude::*};

use crate::compat::{
    aref::ARef,
    atomic::{atomic_load, atomic_store, bitops, Acquire, Relaxed, Release},
    lock::{Guard, SpinLockBackend, SpinLockIrqBackend},
    rcu,
};

use super::Qp;
use crate::{
    bindings,
    device::{
        log::{rvt_err, rvt_info},
        Device, Port,
    },
    lock::{lock_raw, spin_lock_init},
    trace,
};

/// Bits in one page of the bitmap (`RVT_BITS_PER_PAGE`).
const BITS_PER_PAGE: u32 = (PAGE_SIZE * 8) as u32;
const BITS_PER_PAGE_MASK: u32 = BITS_PER_PAGE - 1;
/// One past the largest QP number (`RVT_QPN_MAX`).
const QPN_MAX: u32 = 1 << 24;
/// Pages in a full bitmap (`RVT_QPNMAP_ENTRIES`).
const QPNMAP_ENTRIES: u32 = QPN_MAX / BITS_PER_PAGE;
/// The prefix of the QPs hfi1's accelerated IPoIB (AIP) uses, their base and count.
pub(super) const AIP_QP_PREFIX: u8 = 0x81;
pub(super) const AIP_QP_BASE: u32 = (AIP_QP_PREFIX as u32) << 16;
const AIP_QPN_MAX: u32 = 1 << 16;
const AIP_QP_PREFIX_MASK: u32 = 0x00ff_0000;
const AIP_QP_SUFFIX: u32 = 0xffff;
/// `GOLDEN_RATIO_32` of include/linux/hash.h.
const GOLDEN_RATIO_32: u32 = 0x61c8_8647;

/// `hash_32()`: the hash table bucket of a QP number. It must be the kernel's own function,
/// because drivers look QPs up with the inline `rvt_lookup_qpn()`.
///
/// `bits` is a table's `qp_table_bits`, 1 to 31 ([`table_bits`]), so `32 - bits` is a shift
/// below 32: `wrapping_sub` and `wrapping_shr` are the plain operations, with no overflow
/// check on the path of every lookup.
pub(super) fn hash_32(val: u32, bits: u32) -> u32 {
    val.wrapping_mul(GOLDEN_RATIO_32)
        .wrapping_shr(32u32.wrapping_sub(bits))
}

/// `qp_table_bits` for a hash table of `size` buckets (rounded down to a power of two, as C).
/// A table of fewer than two buckets is refused (EINVAL): for one, `hash_32(qpn, 0)` shifts a
/// 32-bit value by 32, which in the inline `rvt_lookup_qpn()` that drivers compile is
/// undefined (on x86 it indexes far past the table), and here would be a kernel BUG under the
/// overflow checks. The C rdmavt refuses only 0. Drivers set the size from a module
/// parameter (hfi1's `qp_table_size`).
pub(super) fn table_bits(size: u32) -> Result<u32> {
    if size < 2 {
        return Err(EINVAL);
    }
    Ok(size.ilog2())
}

/// The device's QP bookkeeping (`rdi->qp_dev`), set up at registration.
///
/// # Invariants
///
/// Points to the `rvt_qp_ibdev` that [`driver_init`] allocated; it lives until [`exit`].
#[derive(Clone, Copy)]
pub(crate) struct QpDev(*mut bindings::rvt_qp_ibdev);

impl QpDev {
    /// The QP bookkeeping of a registered device.
    pub(crate) fn of(dev: &Device) -> Self {
        // SAFETY: `qp_dev` is set by `driver_init` before the device is registered, and
        // only verbs of registered devices get here.
        // INVARIANT: as just argued.
        Self(unsafe { (*dev.as_raw()).qp_dev })
    }

    /// The QPN table, which a driver with its own `alloc_qpn` also gets.
    pub(crate) fn qpt(&self) -> *mut bindings::rvt_qpn_table {
        // SAFETY: valid by the type invariant; only the field's address is taken.
        unsafe { &raw mut (*self.0).qpn_table }
    }

    /// The index of `qpn`'s bucket in the hash table (C's `n`, which the trace events show).
    fn bucket_index(&self, qpn: u32) -> u32 {
        // SAFETY: valid by the type invariant; `qp_table_bits` is fixed at registration.
        hash_32(qpn, unsafe { (*self.0).qp_table_bits })
    }

    /// The hash table bucket of `qpn`.
    fn bucket(&self, qpn: u32) -> *mut *mut bindings::rvt_qp {
        // SAFETY: valid by the type invariant; `qp_table` has `1 << qp_table_bits` entries
        // and the hash is below that.
        unsafe { (*self.0).qp_table.add(self.bucket_index(qpn) as usize) }
    }

    /// The number of buckets in the hash table, fixed at registration.
    pub(super) fn size(&self) -> u32 {
        // SAFETY: valid by the type invariant; written once by `init_tables`.
        unsafe { (*self.0).qp_table_size }
    }

    /// Bucket `i` of the hash table, in table order (the QP iterator's walk); `None` past
    /// the end.
    pub(super) fn nth_bucket(&self, i: u32) -> Option<*mut *mut bindings::rvt_qp> {
        if i >= self.size() {
            return None;
        }
        // SAFETY: valid by the type invariant; `qp_table` has `qp_table_size` entries and
        // `i` is below that; only the entry's address is taken.
        Some(unsafe { (*self.0).qp_table.add(i as usize) })
    }

    /// Takes `qpt_lock`, which serialises the writers of the hash table and the ports'
    /// special QP slots (readers use RCU).
    fn table_lock(&self) -> Guard<'_, (), SpinLockIrqBackend> {
        // SAFETY: `qpt_lock` was initialised by `driver_init` and lives as long as `qp_dev`
        // (type invariant).
        unsafe { lock_raw(&raw mut (*self.0).qpt_lock) }
    }
}

/// `rvt_driver_qp_init`: checks the driver's QP callbacks and parameters and allocates the
/// device's QP bookkeeping; -EINVAL as C for a driver that lacks one.
///
/// # Safety
///
/// The device is not yet registered: nothing else uses `qp_dev`.
pub(crate) unsafe fn driver_init(dev: &Device) -> Result {
    let parms = dev.dparms();
    let f = dev.driver();
    let bits = table_bits(parms.qp_table_size)?;
    if !f.has_free_all_qps()
        || !f.has_qp_priv_alloc()
        || !f.has_qp_priv_free()
        || !f.has_notify_qp_reset()
        || !f.has_notify_restart_rc()
    {
        return Err(EINVAL);
    }
    let qp_dev = KBox::<bindings::rvt_qp_ibdev>::new_uninit(GFP_KERNEL | __GFP_ZERO)?;
    // SAFETY: all-zero is a valid `rvt_qp_ibdev` (integers, null pointers, an unlocked
    // spinlock before its init below, and padding).
    let qp_dev = unsafe { qp_dev.assume_init() };
    let qp_dev = KBox::into_raw(qp_dev);
    // SAFETY: `qp_dev` is ours alone until published below.
    let res = unsafe { init_tables(dev, qp_dev, bits) };
    if let Err(e) = res {
        // SAFETY: not published; `free_tables` undoes what `init_tables` managed to do.
        unsafe { free_tables(qp_dev) };
        return Err(e);
    }
    // SAFETY: not registered yet (caller's guarantee).
    unsafe { (*dev.as_raw()).qp_dev = qp_dev };
    Ok(())
}

/// The hash table, `qpt_lock` and the QPN bitmap of a new `qp_dev`; `bits` is
/// [`table_bits`] of the driver's table size.
///
/// # Safety
///
/// `qp_dev` is a zeroed `rvt_qp_ibdev`, used by nobody else.
unsafe fn init_tables(dev: &Device, qp_dev: *mut bindings::rvt_qp_ibdev, bits: u32) -> Result {
    let size = dev.dparms().qp_table_size;
    let mut table = KVec::<*mut bindings::rvt_qp>::with_capacity(size as usize, GFP_KERNEL)?;
    for _ in 0..size {
        table.push(ptr::null_mut(), GFP_KERNEL)?;
    }
    let (table, _, _) = table.into_raw_parts();
    // SAFETY: the caller owns `qp_dev`; the table is freed with it by `free_tables`.
    unsafe {
        (*qp_dev).qp_table_size = size;
        (*qp_dev).qp_table_bits = bits;
        (*qp_dev).qp_table = table;
        spin_lock_init!(&raw mut (*qp_dev).qpt_lock, c"&rdi->qp_dev->qpt_lock");
        spin_lock_init!(&raw mut (*dev.as_raw()).n_qps_lock, c"&rdi->n_qps_lock");
        init_qpn_table(dev, &raw mut (*qp_dev).qpn_table)
    }
}

/// `init_qpn_table`: where allocation starts and steps, and the driver's reserved range
/// marked as in use.
///
/// # Safety
///
/// `qpt` is a zeroed table nobody else uses.
unsafe fn init_qpn_table(dev: &Device, qpt: *mut bindings::rvt_qpn_table) -> Result {
    let p = dev.dparms();
    if p.qpn_res_end < p.qpn_res_start {
        return Err(EINVAL);
    }
    // SAFETY: the caller owns `qpt`.
    unsafe {
        spin_lock_init!(&raw mut (*qpt).lock, c"&qpt->lock");
        (*qpt).last = p.qpn_start as u32;
        (*qpt).incr = ((p.qpn_inc as u32) << p.qos_shift) as u8;
    }
    rvt_info!(
        dev,
        "Reserving QPNs from 0x{:x} to 0x{:x} for non-verbs use\n",
        p.qpn_res_start,
        p.qpn_res_end
    );
    for qpn in p.qpn_res_start as u32..=p.qpn_res_end as u32 {
        // SAFETY: the caller owns `qpt`.
        let page = unsafe { map_page(qpt, qpn / BITS_PER_PAGE) }.ok_or(ENOMEM)?;
        // SAFETY: `page` is a live bitmap page of `BITS_PER_PAGE` bits.
        unsafe { bitops::set_bit((qpn & BITS_PER_PAGE_MASK) as usize, page.cast()) };
    }
    // C counts the pages below the reserved range, then one more for each page the range
    // fills to its end: the scan in `alloc_qpn` starts beyond them.
    // SAFETY: the caller owns `qpt`.
    unsafe { (*qpt).nmaps = (p.qpn_res_end as u32 + 1) / BITS_PER_PAGE };
    Ok(())
}

/// The bitmap page `index`, allocated (zeroed) if it is not there yet: `get_map_page()`.
/// `None` if the allocation fails or the index is beyond the bitmap.
///
/// # Safety
///
/// `qpt` is the initialised QPN table of a live `qp_dev`.
unsafe fn map_page(qpt: *mut bindings::rvt_qpn_table, index: u32) -> Option<*mut c_ulong> {
    if index >= QPNMAP_ENTRIES {
        return None;
    }
    // SAFETY: `index` is within `map` (checked above); its address is valid.
    let slot = unsafe { &raw mut (*qpt).map[index as usize].page };
    // SAFETY: `page` is written only under `qpt->lock`, from NULL to a page, never back
    // while the table lives; a racy read sees NULL (and we take the lock) or the page.
    let page = unsafe { atomic_load(slot, Relaxed) };
    if !page.is_null() {
        return Some(page.cast());
    }
    let new = KBox::<[c_ulong; PAGE_SIZE / 8]>::new([0; PAGE_SIZE / 8], GFP_KERNEL).ok()?;
    let new = KBox::into_raw(new).cast::<core::ffi::c_void>();
    // SAFETY: `qpt->lock` was initialised with the table; it protects the installing of
    // pages. Someone may have raced us to it: then our page goes.
    let _guard = unsafe { lock_raw::<SpinLockBackend>(&raw mut (*qpt).lock) };
    // SAFETY: `slot` is valid (above); we hold the lock that serialises its writers.
    let page = unsafe {
        let cur = atomic_load(slot, Relaxed);
        if cur.is_null() {
            atomic_store(slot, new, Release);
            new
        } else {
            bindings::kfree(new);
            cur
        }
    };
    Some(page.cast())
}

/// `free_qpn_table` and the rest of `qp_dev`.
///
/// # Safety
///
/// `qp_dev` came from `driver_init` and nothing uses it any more.
unsafe fn free_tables(qp_dev: *mut bindings::rvt_qp_ibdev) {
    // SAFETY: the caller owns `qp_dev`; each page came from `map_page` (kmalloc), the
    // table from `init_tables`' vector, `qp_dev` from `KBox::into_raw`.
    unsafe {
        for map in &(*qp_dev).qpn_table.map {
            bindings::kfree(map.page);
        }
        let table = (*qp_dev).qp_table;
        if !table.is_null() {
            let size = (*qp_dev).qp_table_size as usize;
            drop(KVec::from_raw_parts(table, size, size));
        }
        drop(KBox::from_raw(qp_dev));
    }
}

/// `rvt_qp_exit`: resets the QPs still left (there should be none: ib_core destroys every
/// QP before it lets a device go) and frees the QP bookkeeping.
///
/// # Safety
///
/// The device is unregistered (or its registration failed after `driver_init`).
pub(crate) unsafe fn exit(dev: &Device) {
    let rdi = dev.as_raw();
    let mut in_use: u32 = 0;
    // SAFETY: `rvt_qp_iter` walks the live QPs of `rdi` under RCU and calls back with each;
    // `in_use` outlives the walk.
    unsafe {
        bindings::rvt_qp_iter(rdi, (&raw mut in_use) as u64, Some(free_qp_cb));
    }
    if in_use != 0 {
        rvt_err!(dev, "QP memory leak! {} still in use\n", in_use);
    }
    // SAFETY: the device is gone (caller's guarantee): nothing uses `qp_dev` any more.
    unsafe {
        free_tables((*rdi).qp_dev);
        (*rdi).qp_dev = ptr::null_mut();
    }
}

/// `rvt_free_qp_cb`: resets a QP left at unregistration and counts it.
///
/// # Safety
///
/// Called by `rvt_qp_iter` with a live QP of ours and the `u32` counter given to it.
unsafe extern "C" fn free_qp_cb(qp: *mut bindings::rvt_qp, v: u64) {
    // SAFETY: `rvt_qp_iter` holds a reference on the QP during the callback.
    let qp = unsafe { Qp::from_raw(qp) };
    qp.reset();
    // SAFETY: `v` is the address of `exit`'s counter, alive during the walk.
    unsafe { *(v as usize as *mut u32) += 1 };
}

/// The type of QP being numbered, for [`alloc_qpn`].
pub(super) struct QpnRequest {
    pub(super) qp_type: bindings::ib_qp_type,
    pub(super) port_num: u32,
    /// Numbers for hfi1's accelerated IPoIB come from the smaller AIP range.
    pub(super) aip: bool,
}

/// `alloc_qpn`: the driver's allocator if it has one; 0 or 1 for a port's SMI or GSI QP
/// (-EINVAL if that port has one already); else the next free number after the last one,
/// stepping by the driver's increment, growing the bitmap a page at a time. -ENOMEM when all
/// are taken.
pub(super) fn alloc_qpn(dev: &Device, req: &QpnRequest) -> Result<u32> {
    let qpt = QpDev::of(dev).qpt();
    if let Some(qpn) = dev.driver().alloc_qpn(req.qp_type, req.port_num) {
        return qpn;
    }
    if req.qp_type == bindings::ib_qp_type::IB_QPT_SMI
        || req.qp_type == bindings::ib_qp_type::IB_QPT_GSI
    {
        return alloc_special(qpt, req);
    }
    let max_qpn = if req.aip { AIP_QPN_MAX } else { QPN_MAX };
    // SAFETY: the table is initialised (registered device).
    unsafe { scan(qpt, max_qpn) }.ok_or(ENOMEM)
}

/// Numbers 0 (SMI) and 1 (GSI): one of each per port, recorded in `qpt->flags`.
fn alloc_special(qpt: *mut bindings::rvt_qpn_table, req: &QpnRequest) -> Result<u32> {
    let gsi = u32::from(req.qp_type == bindings::ib_qp_type::IB_QPT_GSI);
    // create_qp checked that the port exists; ports beyond 16 do not fit the flags.
    let bit = 1u32
        .checked_shl(gsi + 2 * (req.port_num - 1))
        .ok_or(EINVAL)?;
    // SAFETY: `qpt->lock` is initialised and protects `flags`.
    let _guard = unsafe { lock_raw::<SpinLockBackend>(&raw mut (*qpt).lock) };
    // SAFETY: `flags` is protected by `qpt->lock`, held.
    let flags = unsafe { &mut (*qpt).flags };
    if *flags & bit != 0 {
        return Err(EINVAL);
    }
    *flags |= bit;
    Ok(gsi)
}

/// The bitmap scan of C's `alloc_qpn`, kept step for step (the order in which numbers come
/// out is visible to drivers and tests).
///
/// # Safety
///
/// `qpt` is an initialised QPN table.
unsafe fn scan(qpt: *mut bindings::rvt_qpn_table, max_qpn: u32) -> Option<u32> {
    // SAFETY: `last`, `incr` and `nmaps` are only written here and at initialisation; as in
    // C, concurrent allocators may race on them, which can only make one of them scan
    // further: the bits themselves are taken atomically.
    let (last, incr) = unsafe { ((*qpt).last, u32::from((*qpt).incr)) };
    let mut qpn = last + incr;
    if qpn >= max_qpn {
        qpn = incr | ((last & 1) ^ 1);
    }
    let mut offset = qpn & BITS_PER_PAGE_MASK;
    let mut map = qpn / BITS_PER_PAGE;
    // SAFETY: see above.
    let max_scan = unsafe { (*qpt).nmaps } - u32::from(offset == 0);
    let mut i = 0;
    loop {
        // SAFETY: the caller guarantees the table is initialised.
        let page = unsafe { map_page(qpt, map) }?;
        loop {
            // SAFETY: `offset < BITS_PER_PAGE` here: a bit of the page.
            if !unsafe { bitops::test_and_set_bit(offset as usize, page.cast()) } {
                // SAFETY: see above.
                unsafe { (*qpt).last = qpn };
                return Some(qpn);
            }
            offset += incr;
            qpn = map * BITS_PER_PAGE + offset;
            if offset >= BITS_PER_PAGE || qpn >= QPN_MAX {
                break;
            }
        }
        // Scan all existing pages before growing the bitmap by one.
        i += 1;
        // SAFETY: see above.
        let nmaps = unsafe { (*qpt).nmaps };
        if i > max_scan {
            if nmaps == QPNMAP_ENTRIES {
                return None;
            }
            map = nmaps;
            // SAFETY: see above.
            unsafe { (*qpt).nmaps = nmaps + 1 };
            offset = incr | (offset & 1);
        } else if map < nmaps {
            map += 1;
            offset = incr | (offset & 1);
        } else {
            map = 0;
            offset = incr | ((offset & 1) ^ 1);
        }
        qpn = map * BITS_PER_PAGE + offset;
    }
}

/// `rvt_free_qpn`: the number is free again.
pub(super) fn free_qpn(dev: &Device, qpn: u32) {
    let qpt = QpDev::of(dev).qpt();
    let qpn = if qpn & AIP_QP_PREFIX_MASK == AIP_QP_BASE {
        qpn & AIP_QP_SUFFIX
    } else {
        qpn
    };
    let qpn = qpn & bindings::IB_QPN_MASK;
    let index = (qpn / BITS_PER_PAGE) as usize;
    // SAFETY: `index < QPNMAP_ENTRIES` since `qpn < QPN_MAX`; pages are never freed while
    // the table lives.
    let page = unsafe { atomic_load(&raw mut (*qpt).map[index].page, Relaxed) };
    if !page.is_null() {
        // SAFETY: a live bitmap page, and the bit is inside it.
        unsafe { bitops::clear_bit((qpn & BITS_PER_PAGE_MASK) as usize, page.cast()) };
    }
}

impl Qp {
    /// The slot that holds this QP when it is a port's SMI or GSI QP.
    fn special_slot(&self) -> Option<*mut *mut bindings::rvt_qp> {
        let qpn = self.qpn();
        if qpn > 1 {
            return None;
        }
        // A special QP's port is fixed at creation, which checked it.
        let port_num = u32::from(self.port_num_unlocked());
        self.device().port(port_num).ok()?.special_qp_slot(qpn)
    }

    /// `rvt_insert_qp`: makes the QP findable by the receive path; the table holds a
    /// reference.
    pub(super) fn insert(&self) {
        // The table's reference lives on as the table's C pointer to the QP; `remove` takes
        // it back.
        let raw = ARef::into_raw(ARef::from(self))
            .as_ptr()
            .cast::<bindings::rvt_qp>();
        let qp_dev = QpDev::of(self.device());
        let _guard = qp_dev.table_lock();
        match self.special_slot() {
            // SAFETY: `slot` is a port's special QP slot; `qpt_lock` is held.
            Some(slot) => unsafe { atomic_store(slot, raw, Release) },
            None => {
                let bucket = qp_dev.bucket(self.qpn());
                // SAFETY: `qpt_lock` is held, which serialises writers of the bucket and of
                // `next`; readers see the QP only once it is linked (Release).
                unsafe {
                    *self.next_link() = *bucket;
                    atomic_store(bucket, raw, Release);
                }
                trace::qpinsert(self, qp_dev.bucket_index(self.qpn()));
            }
        }
    }

    /// `rvt_remove_qp`: takes the QP out of the table and, once no reader can still see it,
    /// drops the table's reference.
    pub(super) fn remove(&self) {
        let qp_dev = QpDev::of(self.device());
        let guard = qp_dev.table_lock();
        let raw = self.as_raw();
        let removed = match self.special_slot() {
            // SAFETY: `qpt_lock` is held, which serialises the writers of the slot.
            Some(slot) if unsafe { *slot } == raw => {
                // SAFETY: as above.
                unsafe { atomic_store(slot, ptr::null_mut(), Release) };
                true
            }
            _ => {
                // SAFETY: `qpt_lock` is held.
                let unlinked = unsafe { unlink(qp_dev.bucket(self.qpn()), self) };
                if unlinked {
                    trace::qpremove(self, qp_dev.bucket_index(self.qpn()));
                }
                unlinked
            }
        };
        drop(guard);
        if removed {
            rcu::synchronize_rcu();
            // SAFETY: this is the reference `insert` gave the table with `ARef::into_raw`;
            // the QP is out of the table and no reader can still see it, so it is ours to
            // drop; `self` stays valid after it, as the caller's `&Qp` does not rest on it.
            drop(unsafe { ARef::from_raw(NonNull::from(self)) });
        }
    }
}

/// Unlinks `qp` from the hash chain starting at `link`; false if it is not there.
///
/// # Safety
///
/// `qpt_lock` is held and `link` is a bucket of the table.
unsafe fn unlink(mut link: *mut *mut bindings::rvt_qp, qp: &Qp) -> bool {
    loop {
        // SAFETY: the lock is held (caller's guarantee), so the chain does not change;
        // every QP on it is live.
        let q = unsafe { *link };
        if q.is_null() {
            return false;
        }
        if q == qp.as_raw() {
            // SAFETY: as above; readers see either `qp` or its successor.
            unsafe { atomic_store(link, *qp.next_link(), Release) };
            return true;
        }
        // SAFETY: `q` is a live, published QP on the chain (the table holds a reference to
        // it), which stays so while the lock is held.
        link = unsafe { Qp::from_raw(q) }.next_link();
    }
}

impl Port {
    /// The port's slot for its SMI (`qpn` 0) or GSI (`qpn` 1) QP, `None` for any other
    /// number. Written under `qpt_lock`, read under RCU.
    pub(super) fn special_qp_slot(&self, qpn: u32) -> Option<*mut *mut bindings::rvt_qp> {
        if qpn > 1 {
            return None;
        }
        // SAFETY: a live port (the device's ports live as long as it does); `qp` has two
        // entries and `qpn <= 1`; only the slot's address is taken.
        Some(unsafe {
            (&raw mut (*self.as_raw()).qp)
                .cast::<*mut bindings::rvt_qp>()
                .add(qpn as usize)
        })
    }
}

/// `rvt_lookup_qpn()`: the QP numbered `qpn` on `port` of `dev` (QP 0 and 1 are the port's
/// special QPs), found in the RCU hash table; the reference lives no longer than the RCU read
/// lock.
pub(crate) fn lookup<'a>(
    dev: &Device,
    port: &Port,
    qpn: u32,
    _rcu: &'a rcu::Guard,
) -> Option<&'a Qp> {
    let special = port.special_qp_slot(qpn);
    // The port's slot for QP 0 or 1, or the chain of the hash table's bucket.
    let mut link = special.unwrap_or_else(|| QpDev::of(dev).bucket(qpn));
    loop {
        // SAFETY: a slot of the port, a bucket of the table or `next` of a QP on the chain:
        // each written under `qpt_lock` with Release (`Qp::insert`, `unlink`), read under the
        // RCU read lock as C's `rcu_dereference()` (a plain load on x86-64, as Acquire is).
        let qp = unsafe { atomic_load(link, Acquire) };
        if qp.is_null() {
            return None;
        }
        // SAFETY: a QP in the device's table is live and initialised, and is freed only after
        // an RCU grace period once removed; the reference lives no longer than the read lock.
        let q = unsafe { Qp::from_raw(qp) };
        if special.is_some() || q.qpn() == qpn {
            return Some(q);
        }
        link = q.next_link();
    }
}
