// SPDX-License-Identifier: GPL-2.0-only

//! The reset state: what a new or reset QP looks like (`rvt_init_qp`), how a live QP gets
//! there (`rvt_reset_qp`), and dropping the memory-region references a QP holds.

use super::{AllLocks, Qp, QpMut, RecvGuard, SendGuard};
use crate::{bindings, mr};

impl QpMut<'_> {
    /// `rvt_init_qp`: the fields of the reset state, for a QP being created or reset.
    pub(super) fn init_reset_state(&mut self, qp_type: bindings::ib_qp_type) {
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
        *self.remote_qpn_mut() = 0;
        *self.qkey_mut() = 0;
        *self.qp_access_flags_mut() = 0;
        *self.s_flags_mut() &= bindings::RVT_S_SIGNAL_REQ_WR;
        *self.s_hdrwords_mut() = 0;
        *self.s_wqe_mut() = core::ptr::null_mut();
        *self.s_draining_mut() = 0;
        *self.s_next_psn_mut() = 0;
        *self.s_last_psn_mut() = 0;
        *self.s_sending_psn_mut() = 0;
        *self.s_sending_hpsn_mut() = 0;
        *self.s_psn_mut() = 0;
        *self.r_psn_mut() = 0;
        *self.r_msn_mut() = 0;
        *self.s_state_mut() = s_state as u8;
        *self.r_state_mut() = r_state as u8;
        *self.s_ack_state_mut() = bindings::IB_OPCODE_RC_ACKNOWLEDGE as u8;
        *self.r_nak_state_mut() = 0;
        self.clear_r_aflags();
        *self.r_flags_mut() = 0;
        *self.s_tail_mut() = 0;
        *self.s_cur_mut() = 0;
        *self.s_acked_mut() = 0;
        self.set_s_head_last(0);
        *self.s_ssn_mut() = 1;
        *self.s_lsn_mut() = 0;
        *self.s_mig_state_mut() = bindings::ib_mig_state_IB_MIG_MIGRATED as u8;
        *self.r_head_ack_queue_mut() = 0;
        *self.s_tail_ack_queue_mut() = 0;
        *self.s_acked_ack_queue_mut() = 0;
        *self.s_num_rd_atomic_mut() = 0;
        self.r_sge_mut().num_sge = 0;
        self.clear_reserved_used();
    }
}

impl Qp {
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
        locks.fields().init_reset_state(self.qp_type());
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
        // Each state is given back inside the read-side section of the other lock, both held:
        // its own guard is borrowed for the state.
        if self.test_and_clear_r_aflag(bindings::RVT_R_REWIND_SGE) {
            // SAFETY: the RDMA read state holds references while the bit is set.
            unsafe { mr::put_ss(s.s_rdma_read_sge_mut(), r.read_side()) };
        }
        // SAFETY: what is left of the receive state holds references.
        unsafe { mr::put_ss(r.r_sge_mut(), s.read_side()) };
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
                    mr::put_mr((*e).rdma_sge.mr, s.read_side());
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
            // SAFETY: `s_last` is a slot of the queue, posted and not completed, which is
            // used again only once `s_last` moves past it below.
            unsafe { s.swqe(last).put_refs(self, s.read_side()) };
            // The WQE is released before its slot is seen free (C's smp_wmb, paired with the
            // driver's read of `s_last` when it recomputes `s_avail`).
            s.publish_s_last(if last + 1 >= size { 0 } else { last + 1 });
        }
        let mr = s.s_rdma_mr();
        if !mr.is_null() {
            // SAFETY: the RDMA read MR's reference, taken when it was set.
            unsafe { mr::put_mr(mr, s.read_side()) };
            *s.s_rdma_mr_mut() = core::ptr::null_mut();
        }
    }
}
