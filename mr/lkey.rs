// SPDX-License-Identifier: GPL-2.0-only

//! The device's lkey table (`rdi->lkey_table`) and its DMA MR (`rdi->dma_mr`): how an lkey or
//! rkey finds its memory region.
//!
//! A key is `index << shift | generation << 8 | user byte`: the top `lkey_table_size` bits
//! index the table, the low 8 bits belong to the consumer (fast-register may change them),
//! and the bits in between count allocations, so a stale key fails the `lkey ==` check
//! instead of reaching the region now in its slot. Key 0 is the DMA MR, which has no slot.
//!
//! # Locking
//!
//! `lkey_table.lock` is a spinlock taken with interrupts off (C: spin_lock_irqsave). It is a
//! leaf: nothing else is taken under it. It serialises the writers of the slots, `dma_mr`,
//! `next`, `gen` and of each region's `lkey_published`; [`Locked`] is the only way to them.
//! Readers (`rvt_lkey_ok`, `rvt_rkey_ok`, `rvt_invalidate_rkey`) find regions under RCU with
//! [`LkeyTable::lookup`], which asks for the RCU guard as proof; a region leaves its slot
//! before `dereg_mr` waits for a grace period, so the region outlives every such reader.

use core::{alloc::Layout, ptr::NonNull};

use kernel::{
    alloc::{allocator::Vmalloc, flags, Allocator},
    prelude::*,
    types::Opaque,
};

use crate::compat::{
    self,
    atomic::{Atomic, Relaxed, Release},
    lock::{Guard, SpinLockIrqBackend},
    read_side::ReadSide,
};

use super::region::Mregion;
use crate::{
    bindings,
    device::{
        log::{rvt_err, rvt_warn},
        Device,
    },
    lock::{c_lock, spin_lock_init},
};

/// The most index bits a key may have: at least 4 bits stay for the generation.
pub(super) const MAX_BITS: u32 = bindings::RVT_MAX_LKEY_TABLE_BITS;

/// The key for table index `index` at generation `gen`, with `bits` index bits (1 to
/// [`MAX_BITS`]); its user byte is zero.
pub(super) fn encode(index: u32, gen: u32, bits: u32) -> u32 {
    let gen_mask = (1u32 << (24 - bits)) - 1;
    (index << (32 - bits)) | ((gen_mask & gen) << 8)
}

/// The table index of `key` in a table whose keys shift by `shift` (32 minus the index bits).
/// A table's shift is 32 - [`MAX_BITS`] to 31 (`driver_init`), where `wrapping_shr` is the plain
/// shift, with no overflow check to branch on (twice a loopback message).
pub(super) fn index_of(key: u32, shift: u32) -> usize {
    key.wrapping_shr(shift) as usize
}

/// The first free index from `next` on, wrapping around a table of `max` (a power of two)
/// entries; `None` if all are taken.
pub(super) fn find_free(next: u32, max: u32, is_free: impl Fn(u32) -> bool) -> Option<u32> {
    let mut r = next;
    loop {
        if is_free(r) {
            return Some(r);
        }
        r = (r + 1) & (max - 1);
        if r == next {
            return None;
        }
    }
}

/// A new key for index `index`, advancing the table's generation `gen` as C does: once per
/// key, and once more when the key came out as 0, which is reserved for the DMA MR.
pub(super) fn next_key(index: u32, gen: &mut u32, bits: u32) -> u32 {
    *gen = gen.wrapping_add(1);
    let mut key = encode(index, *gen, bits);
    if key == 0 {
        key |= 1 << 8;
        *gen = gen.wrapping_add(1);
    }
    key
}

/// Which key a new region gets.
#[derive(Clone, Copy, PartialEq, Eq)]
pub(super) enum KeyKind {
    /// Key 0: the device's one DMA MR, covering all of kernel virtual memory.
    Dma,
    /// A key with a slot in the table.
    Indexed,
}

/// The lkey table of a device.
///
/// # Invariants
///
/// The wrapped table was set up by [`driver_init`]: `max`, `shift` and `table` are fixed
/// until [`exit`], and `table` has `max` slots.
#[repr(transparent)]
pub(super) struct LkeyTable(Opaque<bindings::rvt_lkey_table>);

impl LkeyTable {
    /// # Safety
    ///
    /// `ptr` is the lkey table of a registered device, which outlives `'a`.
    pub(super) unsafe fn from_raw<'a>(ptr: *mut bindings::rvt_lkey_table) -> &'a Self {
        // SAFETY: transparent wrapper; the caller guarantees the rest.
        unsafe { &*ptr.cast() }
    }

    /// The table of a registered device.
    pub(super) fn of(dev: &Device) -> &Self {
        // SAFETY: the device is registered (every caller reaches it through a verb or a
        // region of one), so `driver_init` has run and `exit` has not.
        unsafe { Self::from_raw(&raw mut (*dev.as_raw()).lkey_table) }
    }

    fn as_raw(&self) -> *mut bindings::rvt_lkey_table {
        self.0.get()
    }

    /// The index of `key` in the table.
    fn index(&self, key: u32) -> usize {
        // SAFETY: `shift` is fixed while the table exists (type invariant).
        index_of(key, unsafe { (*self.as_raw()).shift })
    }

    /// Slot `index`, an RCU-protected pointer.
    fn slot(&self, index: usize) -> &Atomic<*mut bindings::rvt_mregion> {
        // SAFETY: `index` comes from a 32-bit key shifted right by `32 - bits`, or is below
        // `max`, so it is below `max = 1 << bits`, within `table` (type invariant); slots are
        // only accessed atomically.
        unsafe { Atomic::from_ptr((*self.as_raw()).table.add(index)) }
    }

    /// `rcu_dereference(rkt->table[key >> rkt->shift])`: the region in `key`'s slot, which
    /// may hold another key (callers compare `lkey`).
    pub(super) fn lookup<'a>(&'a self, key: u32, _at: ReadSide<'a>) -> Option<&'a Mregion> {
        // ORDERING: Relaxed is READ_ONCE, which is what rcu_dereference is: the address
        // dependency orders the region's fields after the Release in `publish`.
        let mr = self.slot(self.index(key)).load(Relaxed);
        // SAFETY: a region in a slot is alive, and it stays alive for the RCU read-side
        // section `_at` proves: `dereg_mr` empties the slot and waits for a grace period
        // before it can free the region.
        (!mr.is_null()).then(|| unsafe { Mregion::from_raw(mr) })
    }

    /// Takes the table lock, with interrupts off.
    fn lock<'a>(&'a self, dev: &'a Device) -> Locked<'a> {
        // SAFETY: the lock was initialised by `driver_init` and lives as long as the table.
        let lock = unsafe { c_lock::<SpinLockIrqBackend>(&raw mut (*self.as_raw()).lock) };
        Locked {
            _guard: lock.lock(),
            table: self,
            dev,
        }
    }
}

/// `rcu_dereference(rdi->dma_mr)`: the device's DMA MR, the region of key 0.
pub(super) fn dma_mr<'a>(dev: &'a Device, _at: ReadSide<'a>) -> Option<&'a Mregion> {
    // SAFETY: `dma_mr` is a field of the live device, only accessed atomically.
    let slot = unsafe { Atomic::from_ptr(&raw mut (*dev.as_raw()).dma_mr) };
    // ORDERING: Relaxed is READ_ONCE, as rcu_dereference (see `LkeyTable::lookup`).
    let mr = slot.load(Relaxed);
    // SAFETY: the DMA MR is alive while published; as in C, its readers rely on the RCU
    // section `_at` proves and on `dereg_mr` waiting for their references.
    (!mr.is_null()).then(|| unsafe { Mregion::from_raw(mr) })
}

/// The lkey table of `dev`, locked: the slots, `dma_mr`, `next` and `gen` for writing.
struct Locked<'a> {
    _guard: Guard<'a, (), SpinLockIrqBackend>,
    table: &'a LkeyTable,
    dev: &'a Device,
}

impl Locked<'_> {
    /// `rcu_access_pointer(rkt->table[index]) == NULL`.
    fn is_free(&self, index: u32) -> bool {
        // ORDERING: Relaxed: only the pointer's value is used, under the writers' lock.
        self.table.slot(index as usize).load(Relaxed).is_null()
    }

    /// `rcu_assign_pointer` of slot `index`.
    fn set_slot(&mut self, index: usize, mr: *mut bindings::rvt_mregion) {
        // ORDERING: Release, as rcu_assign_pointer: readers that see the region also see
        // its fields and `lkey_published`, written before.
        self.table.slot(index).store(mr, Release);
    }

    fn dma_mr(&self) -> &Atomic<*mut bindings::rvt_mregion> {
        // SAFETY: `dma_mr` is a field of the live device, only accessed atomically.
        unsafe { Atomic::from_ptr(&raw mut (*self.dev.as_raw()).dma_mr) }
    }

    /// `rkt->next` and `rkt->gen`.
    fn cursor(&mut self) -> (&mut u32, &mut u32) {
        let t = self.table.as_raw();
        // SAFETY: the lock is held and protects both fields; `&mut self` makes these the
        // only references.
        unsafe { (&mut (*t).next, &mut (*t).gen_) }
    }

    fn max(&self) -> u32 {
        // SAFETY: fixed while the table exists.
        unsafe { (*self.table.as_raw()).max }
    }
}

/// The device of a region: the device of its PD.
fn device_of(mr: &Mregion) -> &Device {
    // SAFETY: a region's PD is a live PD of one of our devices: ib_core holds the PD until
    // the MR is deregistered, and the device outlives both.
    unsafe { Device::from_ib((*mr.pd()).device) }
}

/// `rvt_alloc_lkey`: publishes the region under a new key (and sets its `lkey`), or as the
/// DMA MR, taking a reference for the table. As in C, a second DMA MR is not published and
/// still succeeds; a full table is ENOMEM.
pub(super) fn alloc_lkey(mr: &Mregion, kind: KeyKind) -> Result {
    let dev = device_of(mr);
    // C takes a reference before the lock and gives it back on failure; for the DMA MR it
    // keeps it and takes one more for `dma_mr`.
    mr.get();
    let mut table = LkeyTable::of(dev).lock(dev);
    if kind == KeyKind::Dma {
        // ORDERING: Relaxed: only compared with NULL, under the lock.
        if table.dma_mr().load(Relaxed).is_null() {
            // SAFETY: the lock is held.
            unsafe { mr.set_published(true) };
            // ORDERING: Release, as rcu_assign_pointer: `lkey_published` first.
            table.dma_mr().store(mr.as_raw(), Release);
            mr.get();
        }
        return Ok(());
    }
    let max = table.max();
    let (next, _) = table.cursor();
    let start = *next;
    let Some(r) = find_free(start, max, |r| table.is_free(r)) else {
        // SAFETY: gives back the reference taken above (under the lock, as C does; the
        // region's own reference is still held, so this put never completes it).
        unsafe { mr.put() };
        return Err(ENOMEM);
    };
    let bits = dev.dparms().lkey_table_size;
    let (next, gen) = table.cursor();
    *next = (r + 1) & (max - 1);
    let key = next_key(r, gen, bits);
    // SAFETY: the region is not published yet, so nothing else reads `lkey`.
    unsafe { (*mr.as_raw()).lkey = key };
    // SAFETY: the lock is held.
    unsafe { mr.set_published(true) };
    table.set_slot(r as usize, mr.as_raw());
    Ok(())
}

/// `rvt_free_lkey`: takes the region out of the table (or out of `dma_mr`) and drops its own
/// reference with `percpu_ref_kill`; a region that was never published is left alone.
pub(super) fn free_lkey(mr: &Mregion) {
    let dev = device_of(mr);
    let freed = {
        let mut table = LkeyTable::of(dev).lock(dev);
        let lkey = mr.lkey();
        if lkey == 0 {
            if mr.published() {
                // SAFETY: the lock is held.
                unsafe { mr.set_published(false) };
                // ORDERING: Release, as rcu_assign_pointer.
                table.dma_mr().store(core::ptr::null_mut(), Release);
                // SAFETY: drops the reference `alloc_lkey` took for `dma_mr`.
                unsafe { mr.put() };
            }
            true
        } else if mr.published() {
            let bits = dev.dparms().lkey_table_size;
            // SAFETY: the lock is held.
            unsafe { mr.set_published(false) };
            table.set_slot(index_of(lkey, 32 - bits), core::ptr::null_mut());
            true
        } else {
            false
        }
    };
    if freed {
        mr.kill();
    }
}

/// `rvt_driver_mr_init`: the lkey table of a device being registered, with
/// `dparms.lkey_table_size` index bits (capped at [`MAX_BITS`], as C warns); sets
/// `props.max_mr` to its size.
///
/// # Safety
///
/// The device is not registered yet: nothing else touches its table, `dma_mr` or `dparms`.
pub(crate) unsafe fn driver_init(dev: &Device) -> Result {
    let rdi = dev.as_raw();
    let mut bits = dev.dparms().lkey_table_size;
    if bits == 0 {
        return Err(EINVAL);
    }
    // SAFETY: unregistered device (caller's guarantee): the lock is not in use.
    unsafe { spin_lock_init!(&raw mut (*rdi).lkey_table.lock, c"&rdi->lkey_table.lock") };
    if bits > MAX_BITS {
        rvt_warn!(
            dev,
            "lkey bits {} too large, reduced to {}\n",
            bits,
            MAX_BITS
        );
        // SAFETY: unregistered device: the driver is done with `dparms` and nobody reads it.
        unsafe { (*rdi).dparms.lkey_table_size = MAX_BITS };
        bits = MAX_BITS;
    }
    let max = 1u32 << bits;
    let layout = Layout::array::<*mut bindings::rvt_mregion>(max as usize).map_err(|_| ENOMEM)?;
    let table = compat::alloc_on_node::<Vmalloc>(layout, flags::GFP_KERNEL, dev.dparms().node)?
        .cast::<*mut bindings::rvt_mregion>();
    // SAFETY: unregistered device: these fields are ours; `table` has `max` slots, which start
    // out empty (RCU_INIT_POINTER(..., NULL) in C).
    unsafe {
        (*rdi).lkey_table.max = max;
        (*rdi).lkey_table.shift = 32 - bits;
        for i in 0..max as usize {
            table.as_ptr().add(i).write(core::ptr::null_mut());
        }
        (*rdi).lkey_table.table = table.as_ptr();
        (*rdi).dma_mr = core::ptr::null_mut();
        (*rdi).dparms.props.max_mr = crate::device::to_limit(max);
    }
    Ok(())
}

/// `rvt_mr_exit`: frees the lkey table; complains, as C does, about a DMA MR still there.
///
/// # Safety
///
/// `driver_init` succeeded on the device, which is unregistered now (or never got
/// registered): no verb and no data path uses the table any more.
pub(crate) unsafe fn exit(dev: &Device) {
    let rdi = dev.as_raw();
    // SAFETY: unregistered: nothing else touches these fields any more.
    unsafe {
        if !(*rdi).dma_mr.is_null() {
            rvt_err!(dev, "DMA MR not null!\n");
        }
        let table = (*rdi).lkey_table.table;
        (*rdi).lkey_table.table = core::ptr::null_mut();
        if let Some(table) = NonNull::new(table) {
            // The layout `driver_init` allocated with, so it cannot fail here.
            if let Ok(layout) =
                Layout::array::<*mut bindings::rvt_mregion>((*rdi).lkey_table.max as usize)
            {
                Vmalloc::free(table.cast(), layout);
            }
        }
    }
}
