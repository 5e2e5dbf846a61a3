// SPDX-License-Identifier: GPL-2.0-only

//! A verb call's user data, `struct ib_udata`: absent for a kernel consumer; for user space,
//! where its reply goes. The create verbs of the objects with a mapped ring (CQ, QP, SRQ)
//! answer with the ring's mmap offset.

use core::mem::size_of;

use kernel::{error::to_result, prelude::*};

use crate::bindings;

/// A verb call's `udata`.
///
/// # Invariants
///
/// `self.0` is NULL (a kernel consumer's call) or the valid `udata` of the verb call in
/// progress.
#[derive(Clone, Copy)]
pub(crate) struct Udata(*mut bindings::ib_udata);

impl Udata {
    /// # Safety
    ///
    /// `udata` is NULL or ib_core's valid `udata` for the call in progress, and the result is
    /// used only during that call.
    pub(crate) unsafe fn from_raw(udata: *mut bindings::ib_udata) -> Self {
        Self(udata)
    }

    pub(crate) fn as_raw(self) -> *mut bindings::ib_udata {
        self.0
    }

    /// The call comes from user space.
    pub(crate) fn is_user(self) -> bool {
        !self.0.is_null()
    }

    /// The user context of a call from user space (`rdma_udata_to_drv_context`'s base);
    /// `None` for a kernel consumer.
    pub(crate) fn ucontext(self) -> Option<*mut bindings::ib_ucontext> {
        if !self.is_user() {
            return None;
        }
        // SAFETY: valid, not NULL (type invariant); a verb call from user space has a user
        // context.
        Some(unsafe { bindings::rdmavt_rs_udata_to_ucontext(self.0) })
    }

    /// User space left room for a ring's mmap offset in its reply.
    pub(crate) fn wants_offset(self) -> bool {
        // SAFETY: NULL or valid (type invariant).
        self.is_user() && unsafe { (*self.0).outlen } >= size_of::<u64>()
    }

    /// Writes a ring's mmap offset as the reply (`ib_copy_to_udata`); EINVAL when user space
    /// left no room for it.
    pub(crate) fn reply_offset(self, offset: u64) -> Result {
        if !self.wants_offset() {
            return Err(EINVAL);
        }
        let mut offset = offset;
        // SAFETY: valid with room for a u64 (checked above); `offset` is a local u64.
        to_result(unsafe {
            bindings::rdmavt_rs_ib_copy_to_udata(self.0, (&raw mut offset).cast(), size_of::<u64>())
        })
    }
}
