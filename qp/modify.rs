// SPDX-License-Identifier: GPL-2.0-only

//! `modify_qp`: the IB state machine, with the driver's hooks.
//!
//! All of a request is checked before any of it is applied, with the three QP locks held, so
//! a refused request changes nothing; like C, every refusal is -EINVAL.

use kernel::{ffi::c_int, prelude::*};

use super::{
    attr::{mig, ModifyAttr, QpState, QPN_MASK},
    error::{raise_last_wqe_reached, raise_path_migrated, ErrorOutcome},
    AllLocks, Locked, Qp, QpMut,
};
use crate::{bindings, cq::WcStatus, device::Device};

/// What a checked request will do besides setting attributes.
struct Plan {
    cur: u32,
    new: u32,
    /// The path MTU (enum) the driver chose, when the request sets one.
    pmtu: Option<u32>,
    /// Whether the request migrates to the armed alternate path.
    migrate: bool,
}

/// Automatic path migration: returns whether the request migrates now.
fn check_migration(locks: &AllLocks<'_>, attr: &ModifyAttr<'_>, new: u32) -> Result<bool> {
    let Some(state) = attr.path_mig_state() else {
        return Ok(false);
    };
    let cur = u32::from(locks.s_mig_state());
    let rts = QpState::IB_QPS_RTS.0;
    let sqd = QpState::IB_QPS_SQD.0;
    match state {
        mig::REARM if cur != mig::ARMED && new == rts => Ok(false),
        mig::MIGRATED if cur != mig::REARM && (new == rts || new == sqd) => Ok(cur == mig::ARMED),
        _ => Err(EINVAL),
    }
}

/// `ib_device_ops.modify_qp`.
///
/// # Safety
///
/// Only ib_core calls this, through `RVT_DEV_OPS`, with a live QP of ours and valid
/// attributes.
pub(crate) unsafe extern "C" fn modify_qp(
    ibqp: *mut bindings::ib_qp,
    attr: *mut bindings::ib_qp_attr,
    attr_mask: c_int,
    udata: *mut bindings::ib_udata,
) -> c_int {
    // SAFETY: ib_core passes a live QP of ours, valid attributes and its `udata`.
    let (qp, mut attr) = unsafe {
        (
            Qp::from_ib(ibqp),
            ModifyAttr::new(&mut *attr, attr_mask, udata),
        )
    };
    match qp.modify(&mut attr) {
        Ok(()) => 0,
        Err(e) => e.to_errno(),
    }
}

impl Qp {
    fn modify(&self, attr: &mut ModifyAttr<'_>) -> Result {
        if attr.nonstandard() {
            return Err(crate::compat::eopnotsupp());
        }
        let locks = self.lock_all();
        let plan = self.check_modify(&locks, attr)?;
        let (mut locks, outcome) = self.change_state(locks, &plan);
        self.apply(&mut locks, attr, &plan);
        drop(locks);
        if plan.cur == QpState::IB_QPS_RESET.0 && plan.new == QpState::IB_QPS_INIT.0 {
            self.insert();
        }
        if outcome == ErrorOutcome::LastWqe {
            raise_last_wqe_reached(self);
        }
        if plan.migrate {
            raise_path_migrated(self);
        }
        Ok(())
    }

    /// C's checks, in C's order: the transition, the driver's own check, then each
    /// attribute the mask sets.
    fn check_modify(&self, locks: &AllLocks<'_>, attr: &mut ModifyAttr<'_>) -> Result<Plan> {
        let dev = self.device();
        let cur = attr.cur_state().unwrap_or_else(|| locks.s.state());
        let new = attr.state().unwrap_or(cur);
        if !attr.transition_ok(cur, new, self.qp_type()) {
            return Err(EINVAL);
        }
        dev.driver().check_modify_qp(self, attr, locks)?;
        attr.check_paths(dev, locks.port_num())?;
        self.check_limits(dev, attr)?;
        let pmtu = if attr.sets_path_mtu() {
            Some(dev.driver().get_pmtu_from_attr(self, attr, locks)?)
        } else {
            None
        };
        let migrate = check_migration(locks, attr, new)?;
        if attr
            .max_dest_rd_atomic()
            .is_some_and(|depth| depth > dev.dparms().max_rdma_atomic)
        {
            return Err(EINVAL);
        }
        if new == QpState::IB_QPS_SQE.0 && self.is_rc() {
            return Err(EINVAL);
        }
        Ok(Plan {
            cur,
            new,
            pmtu,
            migrate,
        })
    }

    /// The numeric limits of the IB spec and of the device.
    fn check_limits(&self, dev: &Device, attr: &ModifyAttr<'_>) -> Result {
        let bad = attr.min_rnr_timer().is_some_and(|t| t > 31)
            || attr.port_num().is_some_and(|port| self.bad_port(dev, port))
            || attr.dest_qp_num().is_some_and(|qpn| qpn > QPN_MASK)
            || attr.retry_cnt().is_some_and(|n| n > 7)
            || attr.rnr_retry().is_some_and(|n| n > 7);
        if bad {
            Err(EINVAL)
        } else {
            Ok(())
        }
    }

    /// A port change is refused for the special QPs and for ports the device lacks.
    fn bad_port(&self, dev: &Device, port_num: u32) -> bool {
        self.is_special() || port_num == 0 || port_num > dev.phys_port_cnt()
    }

    /// Moves to the new state. Reset lets go of the locks on the way (see
    /// [`Qp::reset_locked`]), so the locks come back with the outcome.
    fn change_state<'a>(
        &'a self,
        locks: AllLocks<'a>,
        plan: &Plan,
    ) -> (AllLocks<'a>, ErrorOutcome) {
        let mut locks = locks;
        let mut outcome = ErrorOutcome::Done;
        match QpState(plan.new) {
            QpState::IB_QPS_RESET => {
                if locks.s.state() != QpState::IB_QPS_RESET.0 {
                    locks = self.reset_locked(locks);
                }
            }
            QpState::IB_QPS_RTR => {
                let mut f = locks.fields();
                // Clearing COMM_EST lets the event fire again.
                f.clear_comm_est();
                f.set_state(plan.new as u8);
            }
            QpState::IB_QPS_SQD => {
                let mut f = locks.fields();
                *f.s_draining_mut() = u8::from(f.s_last() != f.s_cur());
                f.set_state(plan.new as u8);
            }
            QpState::IB_QPS_ERR => {
                outcome = self.error(&mut locks.r, &mut locks.s, WcStatus::IB_WC_WR_FLUSH_ERR);
            }
            _ => locks.fields().set_state(plan.new as u8),
        }
        (locks, outcome)
    }

    /// Sets the attributes the mask names (all checked already).
    fn apply(&self, locks: &mut AllLocks<'_>, attr: &mut ModifyAttr<'_>, plan: &Plan) {
        let dev = self.device();
        let mut f = locks.fields();
        if let Some(index) = attr.pkey_index() {
            *f.s_pkey_index_mut() = index as u8;
        }
        if let Some(port) = attr.port_num() {
            *f.port_num_mut() = port as u8;
        }
        if let Some(qpn) = attr.dest_qp_num() {
            *f.remote_qpn_mut() = qpn;
        }
        if let Some(psn) = attr.sq_psn() {
            let psn = psn & dev.dparms().psn_modify_mask as u32;
            *f.s_next_psn_mut() = psn;
            *f.s_psn_mut() = psn;
            *f.s_sending_psn_mut() = psn;
            *f.s_last_psn_mut() = psn.wrapping_sub(1);
            *f.s_sending_hpsn_mut() = f.s_last_psn();
        }
        if let Some(psn) = attr.rq_psn() {
            *f.r_psn_mut() = psn & dev.dparms().psn_modify_mask as u32;
        }
        if let Some(flags) = attr.access_flags() {
            *f.qp_access_flags_mut() = flags as u8;
        }
        attr.apply_paths(&mut f, plan.migrate);
        // The driver sizes the MTU from the port and path just applied, as in C.
        let mtu = plan
            .pmtu
            .and_then(|pmtu| dev.driver().mtu_from_qp(self, pmtu, locks));
        apply_transport(&mut locks.fields(), attr, mtu);
        dev.driver().modify_qp(self, attr, locks);
    }
}

/// MTU (`mtu`, from the driver's `mtu_from_qp`), retries, timers, keys and RDMA read/atomic
/// depths.
fn apply_transport(f: &mut QpMut<'_>, attr: &ModifyAttr<'_>, mtu: Option<u32>) {
    if let Some(mtu) = mtu {
        *f.pmtu_mut() = mtu as u16;
        *f.log_pmtu_mut() = mtu.checked_ilog2().unwrap_or(0) as u8;
    }
    if let Some(n) = attr.retry_cnt() {
        *f.s_retry_cnt_mut() = n;
        *f.s_retry_mut() = n;
    }
    if let Some(n) = attr.rnr_retry() {
        *f.s_rnr_retry_cnt_mut() = n;
        *f.s_rnr_retry_mut() = n;
    }
    if let Some(timer) = attr.min_rnr_timer() {
        *f.r_min_rnr_timer_mut() = timer;
    }
    if let Some(timeout) = attr.timeout() {
        *f.timeout_mut() = timeout;
        *f.timeout_jiffies_mut() = super::timeout_to_jiffies(timeout);
    }
    if let Some(qkey) = attr.qkey() {
        *f.qkey_mut() = qkey;
    }
    if let Some(depth) = attr.max_dest_rd_atomic() {
        *f.r_max_rd_atomic_mut() = depth;
    }
    if let Some(depth) = attr.max_rd_atomic() {
        *f.s_max_rd_atomic_mut() = depth;
    }
}
