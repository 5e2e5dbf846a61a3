// SPDX-License-Identifier: GPL-2.0-only

//! The reset state: what a new or reset QP looks like (`rvt_init_qp`), how a live QP gets
//! there (`rvt_reset_qp`), and dropping the memory-region references a QP holds.

use super::{PostGuard, Qp, RecvGuard, SendGuard};
use crate::bindings;

/// All three QP locks, taken in the documented order (see the module `qp`). Fields drop in
/// declaration order, so they are released in the reverse order they were taken.
pub(crate) struct AllLocks<'a> {
    pub(crate) s: SendGuard<'a>,
    pub(crate) h: PostGuard<'a>,
    pub(crate) r: RecvGuard<'a>,
}

impl Qp {
    /// Takes `r_lock`, `s_hlock` and `s_lock`, in that order.
    pub(crate) fn lock_all(&self) -> AllLocks<'_> {
        let r = self.r_lock();
        let h = self.s_hlock();
        let s = self.s_lock();
        AllLocks { s, h, r }
    }

    /// `rvt_init_qp`: the fields of the reset state.
    ///
    /// # Safety
    ///
    /// The caller holds all three QP locks, or owns the QP alone (during creation).
    pub(super) unsafe fn init_reset_state_unlocked(&self, qp_type: bindings::ib_qp_type) {
        let qp = self.as_raw();
        let (s_state, r_state) = if qp_type == bindings::ib_qp_type::IB_QPT_RC {
            (
                bindings::IB_OPCODE_RC_SEND_LAST,
                bindings::IB_OPCODE_RC_SEND_LAST,
            )
        } else {
            (
                bindings::IB_OPCODE_UC_SEND_LAST,
                bindings::IB_OPCODE_UC_SEND_LAST,
            )
        };
        // SAFETY: the caller guarantees exclusive access to every field written here.
        unsafe {
            (*qp).remote_qpn = 0;
            (*qp).qkey = 0;
            (*qp).qp_access_flags = 0;
            (*qp).s_flags &= bindings::RVT_S_SIGNAL_REQ_WR;
            (*qp).s_hdrwords = 0;
            (*qp).s_wqe = core::ptr::null_mut();
            (*qp).s_draining = 0;
            (*qp).s_next_psn = 0;
            (*qp).s_last_psn = 0;
            (*qp).s_sending_psn = 0;
            (*qp).s_sending_hpsn = 0;
            (*qp).s_psn = 0;
            (*qp).r_psn = 0;
            (*qp).r_msn = 0;
            (*qp).s_state = s_state as u8;
            (*qp).r_state = r_state as u8;
            (*qp).s_ack_state = bindings::IB_OPCODE_RC_ACKNOWLEDGE as u8;
            (*qp).r_nak_state = 0;
            (*qp).r_aflags = 0;
            (*qp).r_flags = 0;
            (*qp).s_head = 0;
            (*qp).s_tail = 0;
            (*qp).s_cur = 0;
            (*qp).s_acked = 0;
            (*qp).s_last = 0;
            (*qp).s_ssn = 1;
            (*qp).s_lsn = 0;
            (*qp).s_mig_state = bindings::ib_mig_state_IB_MIG_MIGRATED as u8;
            (*qp).r_head_ack_queue = 0;
            (*qp).s_tail_ack_queue = 0;
            (*qp).s_acked_ack_queue = 0;
            (*qp).s_num_rd_atomic = 0;
            (*qp).r_sge.num_sge = 0;
            (*qp).s_reserved_used.counter = 0;
        }
    }

    /// [`Qp::init_reset_state_unlocked`] for a QP being created, which nobody else sees yet.
    pub(super) fn init_reset_state(&self, qp_type: bindings::ib_qp_type) {
        // SAFETY: only `create` calls this, before the QP is published.
        unsafe { self.init_reset_state_unlocked(qp_type) }
    }

    /// `rvt_reset_qp`: back to the reset state, from any state.
    pub(crate) fn reset(&self) {
        let locks = self.lock_all();
        drop(self.reset_locked(locks));
    }

    /// `_rvt_reset_qp`: with all locks held. A QP not yet in reset is stopped first: the
    /// locks are let go while the driver stops its send engine and timers, the QP leaves the
    /// lookup table and its users drain; then they are taken again and returned.
    pub(crate) fn reset_locked<'a>(&'a self, mut locks: AllLocks<'a>) -> AllLocks<'a> {
        let dev = self.device();
        let f = dev.driver();
        let reset = bindings::ib_qp_state::IB_QPS_RESET.0;
        if locks.s.state() != reset {
            locks.s.set_state(&locks.r, reset as u8);
            f.flush_qp_waiters(self, &locks);
            locks.s.stop_timers();
            locks
                .s
                .clear_flags(bindings::RVT_S_TIMER | bindings::RVT_S_ANY_WAIT);
            drop(locks);
            self.stop_and_unpublish();
            locks = self.lock_all();
            self.clear_mr_refs(&mut locks.r, &mut locks.s, true);
            f.notify_qp_reset(self, &locks);
        }
        // SAFETY: all three locks are held.
        unsafe { self.init_reset_state_unlocked(self.qp_type()) };
        locks
    }

    /// With no QP lock held: stops the driver's send engine and the timers, waits for the
    /// driver to go quiet, and takes the QP out of the lookup table (waiting for its RCU
    /// readers).
    fn stop_and_unpublish(&self) {
        let f = self.device().driver();
        f.stop_send_queue(self);
        // SAFETY: rdmavt's timer teardown, in process context with no QP lock held, as C
        // calls it.
        unsafe { bindings::rvt_del_timers_sync(self.as_raw()) };
        f.quiesce_qp(self);
        self.remove();
    }

    /// `rvt_clear_mr_refs`: drops the MR references of the receive state, the RDMA read
    /// state and the ack queue, and with `sends` those of every unfinished send WQE.
    pub(crate) fn clear_mr_refs(&self, r: &mut RecvGuard<'_>, s: &mut SendGuard<'_>, sends: bool) {
        if self.test_and_clear_r_aflag(bindings::RVT_R_REWIND_SGE) {
            // SAFETY: the RDMA read state holds references while the bit is set.
            unsafe { bindings::rdmavt_rs_rvt_put_ss(s.s_rdma_read_sge_mut()) };
        }
        // SAFETY: what is left of the receive state holds references.
        unsafe { bindings::rdmavt_rs_rvt_put_ss(r.r_sge_mut()) };
        if sends {
            self.put_unfinished_sends(s);
        }
        let acks = self.s_ack_queue();
        if acks.is_null() {
            return;
        }
        let entries = usize::from(self.device().dparms().max_rdma_atomic) + 1;
        for n in 0..entries {
            // SAFETY: the ack queue has `max_rdma_atomic + 1` entries (allocated at creation);
            // with `r_lock` and `s_lock` held nothing else changes them.
            unsafe {
                let e = acks.add(n);
                if !(*e).rdma_sge.mr.is_null() {
                    bindings::rdmavt_rs_rvt_put_mr((*e).rdma_sge.mr);
                    (*e).rdma_sge.mr = core::ptr::null_mut();
                }
            }
        }
    }

    /// Releases every send WQE between `s_last` and `s_head` and the RDMA read MR. Every
    /// caller holds `s_hlock` too, so `s_head` does not move meanwhile.
    fn put_unfinished_sends(&self, s: &mut SendGuard<'_>) {
        let size = self.s_size();
        while s.s_last() != self.s_head_acquire() {
            let last = s.s_last();
            // SAFETY: `s_last` is a slot of the queue, posted and not completed; the glue
            // drops its references (taking C's pointer to the QP).
            unsafe { bindings::rdmavt_rs_rvt_put_qp_swqe(self.as_raw(), s.swqe(last)) };
            // The WQE is released before its slot is seen free (C's smp_wmb, paired with the
            // driver's read of `s_last` when it recomputes `s_avail`).
            s.publish_s_last(if last + 1 >= size { 0 } else { last + 1 });
        }
        let mr = s.s_rdma_mr();
        if !mr.is_null() {
            // SAFETY: the RDMA read MR's reference, taken when it was set.
            unsafe { bindings::rdmavt_rs_rvt_put_mr(mr) };
            *s.s_rdma_mr_mut() = core::ptr::null_mut();
        }
    }
}
