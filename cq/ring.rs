// SPDX-License-Identifier: GPL-2.0-only

//! The completion ring of a CQ.
//!
//! A user CQ's ring (`struct rvt_cq_wc`) is vmalloc'ed with `vmalloc_user` and mapped into the
//! process, which polls it itself: the kernel produces at `head`, user space consumes at
//! `tail`. A kernel CQ's ring (`struct rvt_k_cq_wc`) is only touched under the CQ's lock. The
//! ring has `cqe + 1` slots so that a full ring (next == tail) differs from an empty one.
//!
//! User space can write anything into a mapped ring, both indices included: every index read
//! from it is clamped before use, so a hostile value cannot move a write outside the ring.

use core::{ffi::c_void, mem::size_of};

use kernel::{ffi::c_int, prelude::*};

use crate::compat::atomic::{Acquire, Atomic, Release};

use crate::bindings;

/// A CQ's ring, as its `rvt_cq` records it (`queue` for user CQs, `kqueue` for kernel ones).
#[derive(Clone, Copy)]
pub(super) enum Ring {
    User(*mut bindings::rvt_cq_wc),
    Kernel(*mut bindings::rvt_k_cq_wc),
}

impl Ring {
    /// A zeroed ring for `entries` completions (plus the spare slot); returns it with its
    /// size in bytes.
    pub(super) fn alloc(entries: u32, user: bool, node: c_int) -> Result<(Self, u32)> {
        let slots = entries as usize + 1;
        let (slot, head) = if user {
            (
                size_of::<bindings::ib_uverbs_wc>(),
                size_of::<bindings::rvt_cq_wc>(),
            )
        } else {
            (
                size_of::<bindings::ib_wc>(),
                size_of::<bindings::rvt_k_cq_wc>(),
            )
        };
        let size = slot
            .checked_mul(slots)
            .and_then(|s| s.checked_add(head))
            .and_then(|s| u32::try_from(s).ok())
            .ok_or(ENOMEM)?;
        // SAFETY: plain allocations of `size` bytes; both helpers return zeroed memory.
        let ring = unsafe {
            if user {
                Self::User(bindings::rdmavt_rs_vmalloc_user(size as usize).cast())
            } else {
                Self::Kernel(bindings::rdmavt_rs_vzalloc_node(size as usize, node).cast())
            }
        };
        if ring.as_ptr().is_null() {
            return Err(ENOMEM);
        }
        Ok((ring, size))
    }

    pub(super) fn as_ptr(self) -> *mut c_void {
        match self {
            Self::User(u) => u.cast(),
            Self::Kernel(k) => k.cast(),
        }
    }

    /// Frees a ring that no mmap info owns.
    ///
    /// # Safety
    ///
    /// Nothing references the ring any more.
    pub(super) unsafe fn free(self) {
        // SAFETY: the ring was vmalloc'ed by `alloc` and is unreferenced (caller's guarantee).
        unsafe { bindings::vfree(self.as_ptr()) };
    }

    /// The producer index, as stored (possibly written by user space: clamp before use).
    ///
    /// # Safety
    ///
    /// The ring is live and the caller holds the CQ's lock.
    pub(super) unsafe fn head(self) -> u32 {
        match self {
            // SAFETY: live ring (caller's guarantee). ORDERING: Acquire pairs with the
            // Release of whoever wrote the index last, so the slots it covers are visible.
            Self::User(u) => unsafe { Atomic::from_ptr(&raw mut (*u).head.val) }.load(Acquire),
            // SAFETY: live ring, lock held (caller's guarantee).
            Self::Kernel(k) => unsafe { (*k).head },
        }
    }

    /// The consumer index, as stored (user space writes it: clamp before use).
    ///
    /// # Safety
    ///
    /// As for [`Ring::head`].
    pub(super) unsafe fn tail(self) -> u32 {
        match self {
            // SAFETY: as in `head`. ORDERING: Acquire, so that slots user space has consumed
            // are not overwritten before its reads of them are done.
            Self::User(u) => unsafe { Atomic::from_ptr(&raw mut (*u).tail.val) }.load(Acquire),
            // SAFETY: live ring, lock held (caller's guarantee).
            Self::Kernel(k) => unsafe { (*k).tail },
        }
    }

    /// Publishes new indices.
    ///
    /// # Safety
    ///
    /// As for [`Ring::head`]; the slots below `head` are written.
    pub(super) unsafe fn set(self, head: u32, tail: Option<u32>) {
        match self {
            // SAFETY: live ring (caller's guarantee). ORDERING: Release, so user space sees
            // every slot written before it sees the index that covers it.
            Self::User(u) => unsafe {
                if let Some(t) = tail {
                    Atomic::from_ptr(&raw mut (*u).tail.val).store(t, Release);
                }
                Atomic::from_ptr(&raw mut (*u).head.val).store(head, Release);
            },
            // SAFETY: live ring, lock held (caller's guarantee).
            Self::Kernel(k) => unsafe {
                if let Some(t) = tail {
                    (*k).tail = t;
                }
                (*k).head = head;
            },
        }
    }

    /// Writes one completion into slot `idx`, in the ring's own format.
    ///
    /// # Safety
    ///
    /// The ring is live with more than `idx` slots, the CQ's lock is held, and `wc.qp` is a
    /// live QP.
    pub(super) unsafe fn write(self, idx: u32, wc: &bindings::ib_wc) {
        let idx = idx as usize;
        match self {
            // SAFETY: `idx` is within the ring (caller's guarantee); `wc.qp` is live.
            Self::User(u) => unsafe {
                let slot = &mut *(&raw mut (*u).uqueue)
                    .cast::<bindings::ib_uverbs_wc>()
                    .add(idx);
                *slot = to_uverbs(wc);
            },
            // SAFETY: `idx` is within the ring (caller's guarantee).
            Self::Kernel(k) => unsafe {
                *(&raw mut (*k).kqueue).cast::<bindings::ib_wc>().add(idx) = *wc;
            },
        }
    }

    /// Copies slot `from` of `src` to slot `to` of `self` (same kind of ring), for a resize.
    ///
    /// # Safety
    ///
    /// Both rings are live, of the same kind, with the slots in range, and the lock is held.
    pub(super) unsafe fn copy_slot(self, to: u32, src: Self, from: u32) {
        let (to, from) = (to as usize, from as usize);
        // SAFETY: in range and exclusive (caller's guarantee).
        unsafe {
            match (self, src) {
                (Self::User(d), Self::User(s)) => {
                    let s = (&raw mut (*s).uqueue)
                        .cast::<bindings::ib_uverbs_wc>()
                        .add(from);
                    *(&raw mut (*d).uqueue)
                        .cast::<bindings::ib_uverbs_wc>()
                        .add(to) = *s;
                }
                (Self::Kernel(d), Self::Kernel(s)) => {
                    let s = (&raw mut (*s).kqueue).cast::<bindings::ib_wc>().add(from);
                    *(&raw mut (*d).kqueue).cast::<bindings::ib_wc>().add(to) = *s;
                }
                _ => {}
            }
        }
    }

    /// Reads slot `idx` of a kernel ring.
    ///
    /// # Safety
    ///
    /// A live kernel ring with more than `idx` slots; the lock is held.
    pub(super) unsafe fn read_kernel(k: *mut bindings::rvt_k_cq_wc, idx: u32) -> bindings::ib_wc {
        // SAFETY: in range (caller's guarantee).
        unsafe { *Self::kernel_slot(k, idx) }
    }

    /// Slot `idx` of a kernel ring.
    ///
    /// # Safety
    ///
    /// As [`Ring::read_kernel`].
    pub(super) unsafe fn kernel_slot(
        k: *mut bindings::rvt_k_cq_wc,
        idx: u32,
    ) -> *mut bindings::ib_wc {
        // SAFETY: in range (caller's guarantee); only the address is computed.
        unsafe {
            (&raw mut (*k).kqueue)
                .cast::<bindings::ib_wc>()
                .add(idx as usize)
        }
    }
}

/// A completion as user space reads it.
///
/// # Safety
///
/// `wc.qp` is a live QP.
unsafe fn to_uverbs(wc: &bindings::ib_wc) -> bindings::ib_uverbs_wc {
    // SAFETY: both members of the `wr_id`/`wr_cqe` union are 64 bits of plain data; user
    // CQs are only filled by verbs that set `wr_id`.
    let wr_id = unsafe { wc.__bindgen_anon_1.wr_id };
    // SAFETY: `imm_data` and `invalidate_rkey` are both 32 bits of plain data.
    let imm_data = unsafe { wc.ex.imm_data };
    bindings::ib_uverbs_wc {
        wr_id,
        status: wc.status.0,
        opcode: wc.opcode.0,
        vendor_err: wc.vendor_err,
        byte_len: wc.byte_len,
        ex: bindings::ib_uverbs_wc__bindgen_ty_1 { imm_data },
        // SAFETY: `wc.qp` is live (caller's guarantee).
        qp_num: unsafe { (*wc.qp).qp_num },
        src_qp: wc.src_qp,
        wc_flags: wc.wc_flags as u32,
        pkey_index: wc.pkey_index,
        // LIDs above 16 bits are OPA's extended LIDs, which a user CQ entry cannot carry.
        slid: wc.slid as u16,
        sl: wc.sl,
        dlid_path_bits: wc.dlid_path_bits,
        port_num: wc.port_num as u8,
        reserved: 0,
    }
}
