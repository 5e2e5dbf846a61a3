// SPDX-License-Identifier: GPL-2.0-only

//! `rvt_alloc_device` and `rvt_dealloc_device`: the driver's device structure, of which
//! `rvt_dev_info` is the head (and `ib_device` the head of that), plus the table of ports.

use core::ptr;

use kernel::{ffi::c_int, prelude::*};

use crate::{bindings, macros::c_export};

/// Allocates `size` bytes for the driver's device, which starts with an `rvt_dev_info`, and a
/// zeroed table of `nports` port pointers. Returns NULL on failure, as C does.
///
/// # Safety
///
/// Called by drivers through the C ABI; `size` is at least `size_of::<rvt_dev_info>()`.
#[no_mangle]
pub(crate) unsafe extern "C" fn rvt_alloc_device(
    size: usize,
    nports: c_int,
) -> *mut bindings::rvt_dev_info {
    let Ok(nports) = usize::try_from(nports) else {
        return ptr::null_mut();
    };
    // SAFETY: `size` covers the `rvt_dev_info` whose head is the `ib_device` (caller's
    // guarantee); ib_core zeroes the allocation.
    let ibdev = unsafe { bindings::rdmavt_rs_ib_alloc_device(size) };
    if ibdev.is_null() {
        return ptr::null_mut();
    }
    let rdi = ibdev.cast::<bindings::rvt_dev_info>();
    match alloc_ports(nports) {
        // SAFETY: `rdi` is the fresh, exclusively owned allocation above.
        Ok(ports) => unsafe { (*rdi).ports = ports },
        Err(_) => {
            // SAFETY: `ibdev` came from `_ib_alloc_device` and nobody else has seen it.
            unsafe { bindings::ib_dealloc_device(ibdev) };
            return ptr::null_mut();
        }
    }
    rdi
}
c_export!(rvt_alloc_device);

/// Frees what `rvt_alloc_device` allocated.
///
/// # Safety
///
/// `rdi` came from `rvt_alloc_device` and is not registered.
#[no_mangle]
pub(crate) unsafe extern "C" fn rvt_dealloc_device(rdi: *mut bindings::rvt_dev_info) {
    // SAFETY: `ports` is NULL or came from `alloc_ports`, which allocates with kmalloc;
    // kfree takes both.
    unsafe { bindings::kfree((*rdi).ports.cast()) };
    // SAFETY: the caller guarantees `rdi` is ours and unregistered.
    unsafe { bindings::ib_dealloc_device(&raw mut (*rdi).ibdev) };
}
c_export!(rvt_dealloc_device);

/// A kmalloc'ed, zeroed array of `n` port pointers (NULL for none), to be freed with kfree.
fn alloc_ports(n: usize) -> Result<*mut *mut bindings::rvt_ibport> {
    if n == 0 {
        return Ok(ptr::null_mut());
    }
    let mut ports = KVec::with_capacity(n, GFP_KERNEL)?;
    ports.extend_with(n, ptr::null_mut(), GFP_KERNEL)?;
    let (ptr, _len, _cap) = ports.into_raw_parts();
    Ok(ptr)
}
