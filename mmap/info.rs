// SPDX-License-Identifier: GPL-2.0-only

//! `struct rvt_mmap_info`: a vmalloc'ed ring that user space maps.
//!
//! One is created with each user CQ, QP or SRQ and put on the device's pending list; the
//! creator's `mmap()` at the info's offset takes it off the list and maps it. The info is
//! reference counted (its `kref`): the owning object holds one reference and every VMA that
//! maps the ring holds one, so the ring outlives whichever goes last.

use core::{ffi::c_void, mem::offset_of};

use kernel::{page::PAGE_SIZE, prelude::*};

use crate::compat::lock::SpinLockIrqBackend;

use crate::{bindings, device::Device, lock::Guarded, mmap::Udata};

/// The device's list of infos waiting for their `mmap()`, under `pending_lock`.
fn pending(dev: &Device) -> Guarded<'_, bindings::list_head, SpinLockIrqBackend> {
    let rdi = dev.as_raw();
    // SAFETY: `pending_lock` (initialised at registration) protects the `pending_mmaps` list,
    // both living as long as the device.
    unsafe { Guarded::lock(&raw mut (*rdi).pending_lock, &raw mut (*rdi).pending_mmaps) }
}

/// The next free offset, one page per object, under `mmap_offset_lock`.
fn next_offset(dev: &Device) -> u64 {
    let rdi = dev.as_raw();
    let mut offset: Guarded<'_, u32, SpinLockIrqBackend> =
        // SAFETY: `mmap_offset_lock` (initialised at registration) protects `mmap_offset`.
        unsafe { Guarded::lock(&raw mut (*rdi).mmap_offset_lock, &raw mut (*rdi).mmap_offset) };
    // The counter wraps after 4 GiB of offsets; restart above the driver's pages, as C does.
    if *offset == 0 {
        *offset = super::OFFSET_START as u32;
    }
    let this = *offset;
    *offset = offset.wrapping_add(PAGE_SIZE as u32);
    this.into()
}

fn page_align(size: u32) -> u32 {
    size.next_multiple_of(PAGE_SIZE as u32)
}

/// An owned reference to an `rvt_mmap_info`.
///
/// # Invariants
///
/// `self.0` points to a live info, and this handle owns one reference of its `kref`.
pub(crate) struct MmapInfo(*mut bindings::rvt_mmap_info);

impl MmapInfo {
    /// An info for the ring `obj` of `size` bytes (vmalloc'ed, to be vfree'd with the last
    /// reference), owned by the user context of `udata`. EINVAL for a kernel caller (no
    /// `udata`), as in C.
    pub(crate) fn new(dev: &Device, size: u32, udata: Udata, obj: *mut c_void) -> Result<Self> {
        let context = udata.ucontext().ok_or(EINVAL)?;
        // SAFETY: all zeroes is a valid (unlinked, unreferenced) rvt_mmap_info.
        let info: bindings::rvt_mmap_info = unsafe { core::mem::zeroed() };
        let ip = KBox::into_raw(KBox::new(info, GFP_KERNEL)?);
        // SAFETY: `ip` is the fresh allocation above, ours alone.
        unsafe {
            bindings::rdmavt_rs_init_list_head(&raw mut (*ip).pending_mmaps);
            bindings::rdmavt_rs_kref_init(&raw mut (*ip).ref_);
            (*ip).offset = next_offset(dev);
            (*ip).size = page_align(size);
            (*ip).context = context;
            (*ip).obj = obj;
        }
        // INVARIANT: the kref starts at one, owned by the new handle.
        Ok(Self(ip))
    }

    /// Gives up the handle without dropping its reference, for storage in a C struct.
    pub(crate) fn into_raw(self) -> *mut bindings::rvt_mmap_info {
        let ip = self.0;
        core::mem::forget(self);
        ip
    }

    /// Takes back a handle given up with [`MmapInfo::into_raw`].
    ///
    /// # Safety
    ///
    /// `ip` came from `into_raw` and is taken back once.
    pub(crate) unsafe fn from_raw(ip: *mut bindings::rvt_mmap_info) -> Self {
        // INVARIANT: `into_raw` kept the reference this handle owned.
        Self(ip)
    }

    /// The offset user space passes to `mmap()` for this ring.
    pub(crate) fn offset(&self) -> u64 {
        // SAFETY: live by the type invariant; the offset changes only through `&mut self`.
        unsafe { (*self.0).offset }
    }

    /// Points the info at a new ring (after a resize), at a new offset. The old ring is the
    /// caller's to free; VMAs that map it keep it mapped.
    pub(crate) fn update(&mut self, dev: &Device, size: u32, obj: *mut c_void) {
        let offset = next_offset(dev);
        // SAFETY: live by the type invariant; the owning object serialises resizes.
        unsafe {
            (*self.0).offset = offset;
            (*self.0).size = page_align(size);
            (*self.0).obj = obj;
        }
    }

    /// Makes the info findable by `mmap()`. After a resize it may still be waiting from
    /// before; it is then left where it is.
    pub(crate) fn add_pending(&self, dev: &Device) {
        let mut list = pending(dev);
        // SAFETY: the info is live (type invariant); list links change only under the lock.
        unsafe {
            let node = &raw mut (*self.0).pending_mmaps;
            if bindings::rdmavt_rs_list_empty(node) {
                bindings::rdmavt_rs_list_add(node, &mut *list);
            }
        }
    }
}

impl Drop for MmapInfo {
    /// The owning object is going: its ring can no longer be mapped, so the info leaves the
    /// pending list now, while the object's device surely exists. A VMA may hold the last
    /// reference long after the device is gone: a process keeps its mappings when `rdma link
    /// delete` (or any unregistration that disassociates user contexts) destroys its objects
    /// and frees its context, so [`release`] must not touch either. (C's
    /// rvt_release_mmap_info() reads both there.)
    fn drop(&mut self) {
        // SAFETY: the info is live (type invariant) and so is its context, whose object is
        // being destroyed; only its owner puts it on the list (`add_pending`).
        unsafe {
            let dev = Device::from_ib((*(*self.0).context).device);
            let _list = pending(dev);
            bindings::rdmavt_rs_list_del_init(&raw mut (*self.0).pending_mmaps);
        }
        // SAFETY: this handle owns a reference (type invariant), given up here.
        unsafe { bindings::rdmavt_rs_kref_put(&raw mut (*self.0).ref_, Some(release)) };
    }
}

/// Frees an info and its ring once its last reference is gone.
///
/// # Safety
///
/// Only the kernel calls this, as the callback it was registered as.
unsafe extern "C" fn release(kref: *mut bindings::kref) {
    // SAFETY: `kref` is the `ref` member of an `rvt_mmap_info` created by `MmapInfo::new`.
    let ip = unsafe { kref.byte_sub(offset_of!(bindings::rvt_mmap_info, ref_)) }
        .cast::<bindings::rvt_mmap_info>();
    // SAFETY: the last reference is gone, so nobody else uses `ip`, and it is off the pending
    // list (its owner took it off before giving up its reference).
    unsafe {
        bindings::vfree((*ip).obj);
        drop(KBox::from_raw(ip));
    }
}

/// The kernel's entry point here.
///
/// # Safety
///
/// Only the kernel calls this, as the callback it was registered as.
unsafe extern "C" fn vma_open(vma: *mut bindings::vm_area_struct) {
    // SAFETY: `vm_private_data` is the info this VMA maps, on which `map_pending` took a
    // reference for the VMA being copied.
    unsafe {
        bindings::rdmavt_rs_kref_get(
            &raw mut (*(*vma).vm_private_data.cast::<bindings::rvt_mmap_info>()).ref_,
        )
    };
}

/// The kernel's entry point here.
///
/// # Safety
///
/// Only the kernel calls this, as the callback it was registered as.
unsafe extern "C" fn vma_close(vma: *mut bindings::vm_area_struct) {
    // SAFETY: the VMA holds a reference on its info (`vma_open`), given up here.
    unsafe {
        let ip = (*vma).vm_private_data.cast::<bindings::rvt_mmap_info>();
        bindings::rdmavt_rs_kref_put(&raw mut (*ip).ref_, Some(release));
    }
}

/// What every VMA of a ring does when it is copied or goes away.
struct VmOps(bindings::vm_operations_struct);
// SAFETY: a table of function pointers, never written.
unsafe impl Sync for VmOps {}

static VM_OPS: VmOps = VmOps(bindings::vm_operations_struct {
    open: Some(vma_open),
    close: Some(vma_close),
    // SAFETY: all zeroes is a valid vm_operations_struct: no other operations.
    ..unsafe { core::mem::zeroed() }
});

/// Maps the pending info of `context` at `offset` into `vma`: only the creator may map it,
/// and never more than its size. EINVAL when nothing matches, as in C.
///
/// # Safety
///
/// `context` and `vma` are live for the call (ib_core's mmap).
pub(super) unsafe fn map_pending(
    dev: &Device,
    context: *mut bindings::ib_ucontext,
    offset: u64,
    size: u64,
    vma: *mut bindings::vm_area_struct,
) -> Result {
    let ip = take_pending(dev, context, offset, size)?;
    // SAFETY: `ip` was on the pending list, so its ring is alive (the owner's reference);
    // `vma` is live (caller's guarantee).
    unsafe {
        kernel::error::to_result(bindings::remap_vmalloc_range(vma, (*ip).obj, 0))?;
        (*vma).vm_ops = &VM_OPS.0;
        (*vma).vm_private_data = ip.cast();
        vma_open(vma);
    }
    Ok(())
}

/// Takes the info that `context` may map at `offset` off the pending list.
fn take_pending(
    dev: &Device,
    context: *mut bindings::ib_ucontext,
    offset: u64,
    size: u64,
) -> Result<*mut bindings::rvt_mmap_info> {
    let mut list = pending(dev);
    let head: *mut bindings::list_head = &mut *list;
    // SAFETY: the list is ours while the lock is held; every node on it is the
    // `pending_mmaps` member of a live info.
    unsafe {
        let mut node = (*head).next;
        while node != head {
            let ip = node
                .byte_sub(offset_of!(bindings::rvt_mmap_info, pending_mmaps))
                .cast::<bindings::rvt_mmap_info>();
            node = (*node).next;
            if (*ip).context != context || (*ip).offset != offset {
                continue;
            }
            if size > (*ip).size.into() {
                break;
            }
            bindings::rdmavt_rs_list_del_init(&raw mut (*ip).pending_mmaps);
            return Ok(ip);
        }
    }
    Err(EINVAL)
}
