// SPDX-License-Identifier: GPL-2.0-only

//! `post_send`: checks each work request against the driver's `post_parms`, takes its memory
//! references (lkeys, the UD address handle's attributes) into a send queue slot, numbers it,
//! and hands the queue to the driver's send engine.
//!
//! The send queue is a ring of `s_size` slots: `post_send` fills slot `s_head` under `s_hlock`
//! and publishes it by moving `s_head`; the send engine completes slot `s_last` under `s_lock`
//! and frees it by moving `s_last` (see [`Qp::complete_swqe`]). One slot always stays empty,
//! and `dparms.reserved_operations` slots are kept for the driver's own requests.

use kernel::{ffi::c_int, prelude::*};

use super::{
    complete::next_slot,
    send_wr::{OpParams, SendWr, WrOpcode},
    state_ops,
    swqe::{SwqeSlot, SLOT_WR_BYTES},
    Locked, PostGuard, Qp,
};
use crate::{
    bindings,
    compat::read_side::ReadSide,
    device::{log::rvt_err, Device},
    mr::{self, ACCESS_LOCAL_WRITE},
    trace,
};

/// `ib_device_ops.post_send`: posts the list `wr`; on error, `*bad_wr` is the request that
/// failed and those before it are posted. A QP in a state that does not take sends fails the
/// whole list with EINVAL and, as in C, leaves `*bad_wr` alone.
///
/// # Safety
///
/// Only ib_core calls this, through `RVT_DEV_OPS`, with a live QP of ours, a valid list of
/// work requests in kernel memory (each embedded in the struct its opcode calls for:
/// `ib_rdma_wr`, `ib_ud_wr`...) and a valid `bad_wr`. Any context, interrupts included.
pub(crate) unsafe extern "C" fn post_send(
    ibqp: *mut bindings::ib_qp,
    wr: *const bindings::ib_send_wr,
    bad_wr: *mut *const bindings::ib_send_wr,
) -> c_int {
    // SAFETY: ib_core passes a live QP of ours.
    let qp = unsafe { Qp::from_ib(ibqp) };
    // SAFETY: ib_core passes a valid list (see above).
    let wr = unsafe { SendWr::from_raw(wr) };
    match qp.post_send(wr) {
        Ok(()) => 0,
        Err((bad, e)) => {
            if let Some(bad) = bad {
                // SAFETY: `bad_wr` is valid for writes (see above).
                unsafe { *bad_wr = bad.as_ptr() };
            }
            e.to_errno()
        }
    }
}

/// What the driver's `post_parms` entry says about an accepted request.
struct Operation {
    /// The entry of the request's opcode.
    parms: OpParams,
    /// How many bytes of the request the slot keeps.
    copy_len: usize,
}

/// What happened to a local operation (fast register, local invalidate) at post time.
enum Local {
    /// Not a local operation: it is queued for the send engine.
    No,
    /// Carried out already, and unsignaled: nothing is queued.
    Done,
    /// Carried out already, signaled: queued only to complete in order.
    CompletionOnly,
    /// A local invalidate that must wait for earlier ones or a fence: queued, and the send
    /// engine carries it out.
    Delayed,
}

/// The free slots of a send queue of `size` slots between `head` (next to fill) and `last`
/// (next to complete), less the always-empty one and the reserved slots not in use:
/// `rvt_qp_is_avail`'s arithmetic. `None` when nothing is free.
pub(super) fn free_slots(
    head: u32,
    last: u32,
    size: u32,
    reserved: u32,
    reserved_used: u32,
) -> Option<u32> {
    let ring = if head >= last {
        size - (head - last)
    } else {
        last - head
    };
    let avail = ring
        .wrapping_sub(1)
        .wrapping_sub(reserved.wrapping_sub(reserved_used));
    // As C: the arithmetic is unsigned, a result that went "negative" means full.
    (avail as i32 > 0).then_some(avail)
}

/// Adds an SGE's length to a request's total. C lets the u32 total wrap, which corrupts the
/// PSN range and the completion's byte count; such a request is refused (EINVAL) here.
pub(super) fn add_length(total: u32, length: u32) -> Result<u32> {
    total.checked_add(length).ok_or(EINVAL)
}

impl Qp {
    /// Posts the list `wr`; on error, the request that failed (none when the QP's state
    /// refused the whole list) and why.
    fn post_send<'w>(&self, wr: SendWr<'w>) -> Result<(), (Option<SendWr<'w>>, Error)> {
        let mut h = self.s_hlock();
        // Read without the locks that write it, as C: a request racing with a state change
        // may be posted in the old state, which the send engine then flushes.
        if !state_ops(u32::from(self.state_unlocked())).post_send_ok() {
            return Err((None, EINVAL));
        }
        // With an empty queue and a single request, the driver may send it from here.
        let mut call_send = h.s_head() == self.s_last_acquire() && wr.next().is_none();
        let mut posted = 0u32;
        let mut res = Ok(());
        let mut cur = Some(wr);
        while let Some(this) = cur {
            if let Err(e) = self.post_one(&mut h, this, &mut call_send) {
                res = Err((Some(this), e));
                break;
            }
            // Each request posted took a free slot, and a queue has fewer than u32::MAX: the
            // count cannot wrap (no overflow check to branch on).
            posted = posted.wrapping_add(1);
            cur = this.next();
        }
        drop(h);
        if posted > 0 {
            self.kick(posted == 1 && call_send);
        }
        res
    }

    /// Starts the driver's send engine: here and now for a lone request on an empty queue
    /// (if the driver's `setup_wqe` agreed), otherwise later.
    fn kick(&self, now: bool) {
        let f = self.device().driver();
        if now {
            f.do_send(self);
        } else if !f.schedule_send_no_lock(self) && f.has_schedule_send() {
            // C calls `schedule_send_no_lock` without checking that the driver has one; one
            // without it gets `schedule_send`, which wants `s_lock`.
            f.schedule_send(self, &self.s_lock());
        }
    }

    /// `rvt_post_one_wr`: checks one request and queues it.
    fn post_one(&self, h: &mut PostGuard<'_>, wr: SendWr<'_>, call_send: &mut bool) -> Result {
        let dev = self.device();
        let op = self.valid_operation(h, dev, wr)?;
        let local = match self.local_operation(op.parms, wr)? {
            Local::Done => return Ok(()),
            local => local,
        };
        let reserve = op.parms.use_reserve();
        self.is_avail(h, dev, reserve)?;
        let head = h.s_head();
        // SAFETY: `s_head` is a slot of the queue (below `s_size`), not visible to the send
        // engine until `s_head` moves past it, so it is ours while `h` holds `s_hlock`.
        let mut slot = unsafe { SwqeSlot::new(self.swqe(head), self.s_max_sge()) };
        slot.fill(wr, op.copy_len)?;
        self.take_sges(&mut slot, wr, h.read_side())?;
        if let Err(e) = self.sequence(h, dev, &mut slot, &local, call_send) {
            self.release_slot(&mut slot, &local, h.read_side());
            return Err(e);
        }
        slot.set_reserve_used(reserve);
        if reserve {
            self.reserved_op_taken();
        } else {
            // `is_avail` left the count above 0, under this same `s_hlock`: it cannot wrap
            // (no overflow check to branch on).
            let avail = h.s_avail_mut();
            *avail = avail.wrapping_sub(1);
        }
        // SAFETY: the QP is live; the slot is filled, still ours.
        unsafe { trace::rvt_post_one_wr(self.as_raw(), slot.as_raw(), wr.num_sge()) };
        // The slot's contents are published with it (C's smp_wmb).
        h.publish_s_head(next_slot(head, self.s_size()));
        Ok(())
    }

    /// `rvt_qp_valid_operation` and the SGE count: C's checks, in C's order, all EINVAL.
    fn valid_operation(
        &self,
        h: &PostGuard<'_>,
        dev: &Device,
        wr: SendWr<'_>,
    ) -> Result<Operation> {
        // IB says no SGEs is fine. C compares the int with the u8 and so lets a negative
        // count through; here it is refused.
        let num_sge = usize::try_from(wr.num_sge()).map_err(|_| EINVAL)?;
        if num_sge > usize::from(self.s_max_sge()) {
            return Err(EINVAL);
        }
        let parms = OpParams::of(dev, wr.opcode()).ok_or(EINVAL)?;
        if parms.length() == 0 || !parms.supports(self) {
            return Err(EINVAL);
        }
        if parms.privileged() && self.user_pd() {
            return Err(EINVAL);
        }
        if parms.atomic_sge()
            && !wr.sges().first().is_some_and(|s| {
                s.length as usize >= size_of::<u64>() && s.addr % size_of::<u64>() as u64 == 0
            })
        {
            return Err(EINVAL);
        }
        if parms.atomic() && h.s_max_rd_atomic() == 0 {
            return Err(EINVAL);
        }
        let copy_len = self.ud_copy_len(wr, parms.length())?;
        // A driver table that asks for more than a slot holds would overrun it (C trusts it).
        if copy_len > SLOT_WR_BYTES {
            return Err(EINVAL);
        }
        Ok(Operation { parms, copy_len })
    }

    /// UD (and SMI/GSI) requests: the address handle must be of the QP's PD, and the slot
    /// keeps the whole `ib_ud_wr`. Others keep `len`, the driver table's length.
    fn ud_copy_len(&self, wr: SendWr<'_>, len: usize) -> Result<usize> {
        if self.is_rc() || self.is_uc() {
            Ok(len)
        } else if wr.ud_ah_ok(self) {
            Ok(SendWr::UD_BYTES)
        } else {
            Err(EINVAL)
        }
    }

    /// Fast register and local invalidate are carried out at post time, as C does, so that
    /// the requests after them can use the new key; a local invalidate behind a fence or
    /// another pending one waits for the send engine.
    fn local_operation(&self, parms: OpParams, wr: SendWr<'_>) -> Result<Local> {
        if !parms.local() {
            return Ok(Local::No);
        }
        self.carry_out_local(wr)
    }

    /// The local operation `wr` of [`Self::local_operation`]. Out of line: rare, and its
    /// calls would otherwise cost the common request's registers.
    #[cold]
    #[inline(never)]
    fn carry_out_local(&self, wr: SendWr<'_>) -> Result<Local> {
        match wr.opcode() {
            WrOpcode::IB_WR_REG_MR => wr.fast_reg(self)?,
            WrOpcode::IB_WR_LOCAL_INV => {
                if wr.fenced() || self.local_ops_pending() != 0 {
                    return Ok(Local::Delayed);
                }
                mr::invalidate_rkey(self, wr.invalidate_rkey())?;
            }
            _ => return Err(EINVAL),
        }
        Ok(if wr.signaled() {
            Local::CompletionOnly
        } else {
            Local::Done
        })
    }

    /// `rvt_qp_is_avail`: whether a slot is free for the request (ENOMEM if not), refreshing
    /// `s_avail` from `s_last` when the cached count ran out.
    fn is_avail(&self, h: &mut PostGuard<'_>, dev: &Device, reserved_op: bool) -> Result {
        let reserved = u32::from(dev.dparms().reserved_operations);
        // No barrier here, where C has smp_mb__before_atomic (a compiler barrier on x86, and
        // before a plain read, which it does not order): a slot freed by a reserved request
        // must be seen with that request's count dropped, and it is, because the count is
        // read below after `s_last` is read with Acquire, which pairs with the Release that
        // publishes `s_last` after the count drops (`Qp::complete_swqe`). A reserved
        // request's own test of the count orders nothing, and a stale count there only
        // refuses it with ENOMEM, as C's may.
        if reserved_op {
            return if self.reserved_used() >= reserved {
                Err(ENOMEM)
            } else {
                Ok(())
            };
        }
        if h.s_avail() != 0 {
            return Ok(());
        }
        self.refresh_avail(h, dev, reserved)
    }

    /// The cached count of free slots ran out: counts them again from `s_last`. Out of line:
    /// once every `s_avail` requests, which is every request only at queue depth 1 (the
    /// latency tests), where the call costs about what `post_send`'s smaller frame saves.
    #[inline(never)]
    fn refresh_avail(&self, h: &mut PostGuard<'_>, dev: &Device, reserved: u32) -> Result {
        let size = self.s_size();
        // The slots before `s_last` were given back by the send engine (see
        // `Qp::s_last_acquire`).
        let last = self.s_last_acquire();
        let avail =
            free_slots(h.s_head(), last, size, reserved, self.reserved_used()).ok_or(ENOMEM)?;
        *h.s_avail_mut() = avail;
        let max = size.wrapping_sub(1).wrapping_sub(reserved);
        if crate::compat::warn_on!(avail > max) {
            // Racy reads for the report, as C's; harmless.
            let (tail, cur, acked) = (
                self.s_tail_unlocked(),
                self.s_cur_unlocked(),
                self.s_acked_unlocked(),
            );
            rvt_err!(
                dev,
                "More avail entries than QP RB size.\nQP: {}, size: {}, avail: {}\nhead: {}, tail: {}, cur: {}, acked: {}, last: {}\n",
                self.qpn(),
                size,
                avail,
                h.s_head(),
                tail,
                cur,
                acked,
                last
            );
        }
        Ok(())
    }

    /// Checks each SGE's lkey and stores it in the slot, merging adjacent ones, and sums the
    /// length. On error, the references already taken are dropped, inside the read-side
    /// section `at` (the caller's `s_hlock`).
    fn take_sges(&self, slot: &mut SwqeSlot<'_>, wr: SendWr<'_>, at: ReadSide<'_>) -> Result {
        let acc = if wr.opcode().0 >= WrOpcode::IB_WR_RDMA_READ.0 {
            ACCESS_LOCAL_WRITE
        } else {
            0
        };
        let mut total = 0u32;
        for sge in wr.sges().iter().filter(|s| s.length != 0) {
            let res = add_length(total, sge.length).and_then(|t| {
                slot.add_sge(self, sge, acc, at)?;
                Ok(t)
            });
            match res {
                Ok(t) => total = t,
                Err(e) => {
                    slot.put_sges(at);
                    return Err(e);
                }
            }
        }
        slot.set_length(total, wr.num_sge() > 0);
        Ok(())
    }

    /// The PSNs and sequence number of a filled slot, the UD address handle's attributes, and
    /// the driver's `setup_wqe`. On error the caller releases the slot.
    fn sequence(
        &self,
        h: &mut PostGuard<'_>,
        dev: &Device,
        slot: &mut SwqeSlot<'_>,
        local: &Local,
        call_send: &mut bool,
    ) -> Result {
        let mut log_pmtu = h.log_pmtu();
        if self.is_ud_like() {
            // SAFETY: a UD-like QP's slot, filled from a request whose AH `ud_copy_len`
            // checked.
            log_pmtu = unsafe { slot.copy_ud_ah() };
        }
        match local {
            Local::No => {
                let ssn = h.s_ssn();
                *h.s_ssn_mut() = ssn.wrapping_add(1);
                let psn = h.s_next_psn();
                // The log of a path MTU (13 at most, for OPA's 10 KiB): `wrapping_shr` is the
                // plain shift, with no overflow check.
                let packets = slot
                    .length()
                    .checked_sub(1)
                    .map_or(0, |l| l.wrapping_shr(u32::from(log_pmtu)));
                slot.set_sequence(ssn, psn, psn.wrapping_add(packets));
            }
            _ => {
                if matches!(local, Local::Delayed) {
                    self.local_op_deferred();
                } else {
                    slot.set_completion_only();
                }
                slot.set_sequence(0, 0, 0);
            }
        }
        dev.driver().setup_wqe(self, slot, call_send, h)?;
        if matches!(local, Local::No) {
            *h.s_next_psn_mut() = slot.lpsn().wrapping_add(1);
        }
        Ok(())
    }

    /// Undoes `take_sges` and `sequence` on a slot that is not posted after all: its region
    /// references, its copy of the UD address, and the count of a delayed local operation
    /// (which C leaves raised, delaying every later local invalidate).
    #[cold]
    #[inline(never)]
    fn release_slot(&self, slot: &mut SwqeSlot<'_>, local: &Local, at: ReadSide<'_>) {
        if self.is_ud_like() {
            // SAFETY: `sequence` copied the AH's attributes first thing.
            unsafe { slot.destroy_ud_ah() };
        }
        slot.put_sges(at);
        if matches!(local, Local::Delayed) {
            self.local_op_done();
        }
    }
}
