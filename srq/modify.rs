// SPDX-License-Identifier: GPL-2.0-only

//! `modify_srq`: resizing an SRQ's ring (kernel or user) and arming its limit.
//!
//! C's resize takes only the old ring's `c_lock`, swaps the ring and then unlocks the new
//! ring's `c_lock`, while a concurrent `post_srq_recv` may still be writing into the old ring
//! under its `p_lock` as it is freed. Here a resize holds `rq.lock`, `p_lock` and `c_lock` of
//! the ring it replaces (see `krwq::ring::Rq::both`), and both sides take `rq.lock` first, so
//! neither can see a ring being swapped out.

use core::mem::size_of;

use kernel::{ffi::c_int, prelude::*};

use super::Srq;
use crate::{bindings, krwq};

const MAX_WR: bindings::ib_srq_attr_mask = bindings::ib_srq_attr_mask_IB_SRQ_MAX_WR;
const LIMIT: bindings::ib_srq_attr_mask = bindings::ib_srq_attr_mask_IB_SRQ_LIMIT;

/// `ib_device_ops.modify_srq`: C's `rvt_modify_srq()`.
///
/// With IB_SRQ_MAX_WR the ring is replaced by one of `max_wr + 1` slots holding the queued
/// WQEs (EINVAL when they do not fit or a user ring's indices or SGE counts are corrupt), and
/// user space learns the new ring's mmap offset through the address it passed. With
/// IB_SRQ_LIMIT alone the limit is armed (EINVAL unless below the ring's size).
///
/// # Safety
///
/// Only ib_core calls this, through `RVT_DEV_OPS`, with a live SRQ of ours, valid attributes
/// and `udata` NULL or valid.
pub(crate) unsafe extern "C" fn modify_srq(
    ibsrq: *mut bindings::ib_srq,
    attr: *mut bindings::ib_srq_attr,
    mask: bindings::ib_srq_attr_mask,
    udata: *mut bindings::ib_udata,
) -> c_int {
    // SAFETY: ib_core's live SRQ and valid attributes.
    let (srq, attr) = unsafe { (Srq::from_ib(ibsrq), &*attr) };
    let res = if mask & MAX_WR != 0 {
        srq.resize(attr, mask & LIMIT != 0, udata)
    } else if mask & LIMIT != 0 {
        srq.arm_limit(attr.srq_limit)
    } else {
        Ok(())
    };
    match res {
        Ok(()) => 0,
        Err(e) => e.to_errno(),
    }
}

/// Writes `value` to the user address `addr` (EFAULT if it cannot).
fn put_user_u64(addr: u64, value: u64) -> Result {
    // SAFETY: `copy_to_user` checks the user address itself.
    kernel::error::to_result(unsafe { bindings::rdmavt_rs_put_user_u64(addr, value) })
}

impl Srq {
    /// IB_SRQ_LIMIT alone.
    fn arm_limit(&self, limit: u32) -> Result {
        let mut c = self.rq().consumer();
        if limit >= c.size() {
            return Err(EINVAL);
        }
        c.set_limit(limit);
        Ok(())
    }

    /// IB_SRQ_MAX_WR (with IB_SRQ_LIMIT if `set_limit`), in C's order.
    fn resize(
        &self,
        attr: &bindings::ib_srq_attr,
        set_limit: bool,
        udata: *mut bindings::ib_udata,
    ) -> Result {
        let dev = self.device();
        // As in C, the current limit is read without the lock for this first check.
        let limit = if set_limit {
            attr.srq_limit
        } else {
            self.limit_snapshot()
        };
        if attr.max_wr > crate::device::limit(dev.dparms().props.max_srq_wr) || limit > attr.max_wr
        {
            return Err(EINVAL);
        }
        let max_sge = self.rq().max_sge();
        let size = attr.max_wr + 1;
        // SAFETY: all zeroes is a valid, empty `rvt_rq` (NULL pointers, zero sizes).
        let mut tmp: bindings::rvt_rq = unsafe { core::mem::zeroed() };
        // SAFETY: `tmp` is zeroed and ours alone; `max_sge` is the SRQ's own.
        let bytes = unsafe {
            krwq::alloc_sized(
                &mut tmp,
                size,
                u32::from(max_sge),
                dev.dparms().node,
                !udata.is_null(),
            )
        }?;
        let res = self
            .swap_ring(&mut tmp, udata, set_limit.then_some(attr.srq_limit))
            .and_then(|offset_addr| self.publish_ring(bytes, offset_addr));
        // SAFETY: `tmp` holds the old ring after a swap, or the unused new one; either way
        // nobody else uses it now (the locks that covered it are dropped, and a user ring's
        // mmap info points at the new ring).
        unsafe { krwq::free(&mut tmp) };
        res
    }

    /// Checks that user space can take the new offset, then moves the queued WQEs into
    /// `tmp`'s ring and swaps it in. Returns the user address for the offset, if any.
    fn swap_ring(
        &self,
        tmp: &mut bindings::rvt_rq,
        udata: *mut bindings::ib_udata,
        limit: Option<u32>,
    ) -> Result<Option<u64>> {
        let mut offset_addr = None;
        // SAFETY: NULL or ib_core's valid udata.
        if !udata.is_null() && unsafe { (*udata).inlen } >= size_of::<u64>() {
            let mut addr = 0u64;
            // SAFETY: `udata` is valid with at least a u64 of input.
            kernel::error::to_result(unsafe {
                bindings::rdmavt_rs_ib_copy_from_udata(
                    (&raw mut addr).cast(),
                    udata,
                    size_of::<u64>(),
                )
            })?;
            put_user_u64(addr, 0)?;
            offset_addr = Some(addr);
        }
        let mut both = self.rq().both();
        // SAFETY: `tmp` was set up by `alloc` with our `max_sge` and is ours alone.
        let n = unsafe { both.copy_queued(tmp) }.map_err(|_| EINVAL)?;
        // SAFETY: `tmp` was set up by `alloc` with our `max_sge`, and `n < tmp.size`.
        unsafe { both.replace(tmp, n) };
        if let Some(limit) = limit {
            both.consumer.set_limit(limit);
        }
        Ok(offset_addr)
    }

    /// After a resize of a user SRQ: points its mmap info at the new ring, tells user space
    /// the new offset and makes the ring mappable.
    fn publish_ring(&self, bytes: u32, offset_addr: Option<u64>) -> Result {
        let dev = self.device();
        let Some(mut info) = self.mmap_info() else {
            return Ok(());
        };
        // SAFETY: the SRQ's queue, just replaced; only `modify` changes `wq`, and ib_core
        // serialises it against itself.
        let wq = unsafe { (*self.as_raw()).rq.wq };
        info.update(
            dev,
            bytes + size_of::<bindings::rvt_rwq>() as u32,
            wq.cast(),
        );
        let res = offset_addr.map_or(Ok(()), |addr| put_user_u64(addr, info.offset()));
        if res.is_ok() {
            info.add_pending(dev);
        }
        let _ = info.into_raw();
        res
    }
}
