// SPDX-License-Identifier: GPL-2.0-only

//! `modify_qp`: the IB state machine, with the driver's hooks.
//!
//! All of a request is checked before any of it is applied, with the three QP locks held, so
//! a refused request changes nothing; like C, every refusal is -EINVAL.

use kernel::{ffi::c_int, prelude::*};

use super::{error::ErrorOutcome, AllLocks, Locked, Qp, QpMut};
use crate::{bindings, device::Device};

/// `IB_MULTICAST_LID_BASE`: IB unicast LIDs lie below it.
const IB_MULTICAST_LID_BASE: u32 = 0xc000;
/// The highest valid QP number.
const QPN_MASK: u32 = bindings::IB_QPN_MASK;

/// What a checked request will do besides setting attributes.
struct Plan {
    cur: u32,
    new: u32,
    /// The path MTU (enum) the driver chose, when the request sets one.
    pmtu: Option<u32>,
    /// Whether the request migrates to the armed alternate path.
    migrate: bool,
}

/// Whether `mask` has the attribute bit `bit`.
fn has(mask: c_int, bit: bindings::ib_qp_attr_mask) -> bool {
    mask as u32 & bit != 0
}

/// `rdma_ah_get_dlid()`.
fn dlid(ah: &bindings::rdma_ah_attr) -> u32 {
    // SAFETY: the union member read is the one `type_` says is in use.
    unsafe {
        match ah.type_ {
            bindings::rdma_ah_attr_type_RDMA_AH_ATTR_TYPE_IB => {
                u32::from(ah.__bindgen_anon_1.ib.dlid)
            }
            bindings::rdma_ah_attr_type_RDMA_AH_ATTR_TYPE_OPA => ah.__bindgen_anon_1.opa.dlid,
            _ => 0,
        }
    }
}

/// Automatic path migration: returns whether the request migrates now.
fn check_migration(
    locks: &AllLocks<'_>,
    attr: &bindings::ib_qp_attr,
    mask: c_int,
    new: u32,
) -> Result<bool> {
    if !has(mask, bindings::ib_qp_attr_mask_IB_QP_PATH_MIG_STATE) {
        return Ok(false);
    }
    let cur = u32::from(locks.s_mig_state());
    let rts = bindings::ib_qp_state::IB_QPS_RTS.0;
    let sqd = bindings::ib_qp_state::IB_QPS_SQD.0;
    match attr.path_mig_state {
        bindings::ib_mig_state_IB_MIG_REARM
            if cur != bindings::ib_mig_state_IB_MIG_ARMED && new == rts =>
        {
            Ok(false)
        }
        bindings::ib_mig_state_IB_MIG_MIGRATED
            if cur != bindings::ib_mig_state_IB_MIG_REARM && (new == rts || new == sqd) =>
        {
            Ok(cur == bindings::ib_mig_state_IB_MIG_ARMED)
        }
        _ => Err(EINVAL),
    }
}

/// The address vectors and the migration state.
fn apply_paths(f: &mut QpMut<'_>, attr: &mut bindings::ib_qp_attr, mask: c_int, plan: &Plan) {
    if has(mask, bindings::ib_qp_attr_mask_IB_QP_AV) {
        // SAFETY: ib_core's helper, which takes and drops the references the attributes
        // hold.
        unsafe { bindings::rdma_replace_ah_attr(f.remote_ah_attr_mut(), &attr.ah_attr) };
        *f.s_srate_mut() = attr.ah_attr.static_rate;
        // SAFETY: a pure conversion.
        *f.srate_mbps_mut() = unsafe { bindings::ib_rate_to_mbps(attr.ah_attr.static_rate.into()) };
    }
    if has(mask, bindings::ib_qp_attr_mask_IB_QP_ALT_PATH) {
        // SAFETY: as above.
        unsafe { bindings::rdma_replace_ah_attr(f.alt_ah_attr_mut(), &attr.alt_ah_attr) };
        *f.s_alt_pkey_index_mut() = attr.alt_pkey_index as u8;
    }
    if has(mask, bindings::ib_qp_attr_mask_IB_QP_PATH_MIG_STATE) {
        *f.s_mig_state_mut() = attr.path_mig_state as u8;
        if plan.migrate {
            // A plain copy, as C does: the alternate path's references move along.
            *f.remote_ah_attr_mut() = *f.alt_ah_attr();
            // C truncates the u32 port to rvt_qp's u8, as here; ports fit.
            *f.port_num_mut() = f.alt_ah_attr().port_num as u8;
            *f.s_pkey_index_mut() = f.s_alt_pkey_index();
        }
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
    // SAFETY: ib_core passes a live QP of ours and valid attributes.
    let (qp, attr) = unsafe { (Qp::from_ib(ibqp), &mut *attr) };
    match qp.modify(attr, attr_mask, udata) {
        Ok(()) => 0,
        Err(e) => e.to_errno(),
    }
}

impl Qp {
    fn modify(
        &self,
        attr: &mut bindings::ib_qp_attr,
        mask: c_int,
        udata: *mut bindings::ib_udata,
    ) -> Result {
        if mask as u32 & !bindings::ib_qp_attr_mask_IB_QP_ATTR_STANDARD_BITS != 0 {
            return Err(crate::compat::eopnotsupp());
        }
        let locks = self.lock_all();
        let plan = self.check_modify(&locks, attr, mask, udata)?;
        let (mut locks, outcome) = self.change_state(locks, &plan);
        self.apply(&mut locks, attr, mask, &plan, udata);
        drop(locks);
        let reset = bindings::ib_qp_state::IB_QPS_RESET.0;
        let init = bindings::ib_qp_state::IB_QPS_INIT.0;
        if plan.cur == reset && plan.new == init {
            self.insert();
        }
        if outcome == ErrorOutcome::LastWqe {
            super::error::raise_event(self, bindings::ib_event_type::IB_EVENT_QP_LAST_WQE_REACHED);
        }
        if plan.migrate {
            super::error::raise_event(self, bindings::ib_event_type::IB_EVENT_PATH_MIG);
        }
        Ok(())
    }

    /// C's checks, in C's order: the transition, the driver's own check, then each
    /// attribute the mask sets.
    fn check_modify(
        &self,
        locks: &AllLocks<'_>,
        attr: &mut bindings::ib_qp_attr,
        mask: c_int,
        udata: *mut bindings::ib_udata,
    ) -> Result<Plan> {
        let dev = self.device();
        let cur = if has(mask, bindings::ib_qp_attr_mask_IB_QP_CUR_STATE) {
            attr.cur_qp_state.0
        } else {
            locks.s.state()
        };
        let new = if has(mask, bindings::ib_qp_attr_mask_IB_QP_STATE) {
            attr.qp_state.0
        } else {
            cur
        };
        // SAFETY: a pure check of the IB state machine table.
        let ok = unsafe {
            bindings::ib_modify_qp_is_ok(
                bindings::ib_qp_state(cur),
                bindings::ib_qp_state(new),
                self.qp_type(),
                mask as u32,
            )
        };
        if !ok {
            return Err(EINVAL);
        }
        // SAFETY: `udata` is ib_core's, as the verb got it.
        unsafe { dev.driver().check_modify_qp(self, attr, mask, udata, locks) }?;
        self.check_paths(locks, dev, attr, mask)?;
        self.check_limits(dev, attr, mask)?;
        let pmtu = if has(mask, bindings::ib_qp_attr_mask_IB_QP_PATH_MTU) {
            Some(dev.driver().get_pmtu_from_attr(self, attr, locks)?)
        } else {
            None
        };
        let migrate = check_migration(locks, attr, mask, new)?;
        if has(mask, bindings::ib_qp_attr_mask_IB_QP_MAX_DEST_RD_ATOMIC)
            && attr.max_dest_rd_atomic > dev.dparms().max_rdma_atomic
        {
            return Err(EINVAL);
        }
        if new == bindings::ib_qp_state::IB_QPS_SQE.0
            && self.qp_type() == bindings::ib_qp_type::IB_QPT_RC
        {
            return Err(EINVAL);
        }
        Ok(Plan {
            cur,
            new,
            pmtu,
            migrate,
        })
    }

    /// The primary and alternate address vectors and P_Key indices.
    fn check_paths(
        &self,
        locks: &AllLocks<'_>,
        dev: &Device,
        attr: &mut bindings::ib_qp_attr,
        mask: c_int,
    ) -> Result {
        let port = locks.port_num();
        // SAFETY: a lookup in the registered device's port data.
        let opa = unsafe { bindings::rdmavt_rs_rdma_cap_opa_ah(dev.ibdev(), u32::from(port)) };
        let dlid_limit = if opa {
            // SAFETY: a constant computation.
            unsafe { bindings::rdmavt_rs_opa_mcast_base() }
        } else {
            IB_MULTICAST_LID_BASE
        };
        let check_ah = |ah: &mut bindings::rdma_ah_attr| -> Result {
            if dlid(ah) >= dlid_limit {
                return Err(EINVAL);
            }
            // SAFETY: our own `rvt_check_ah`, on the caller's valid attributes.
            match unsafe { crate::ah::rvt_check_ah(dev.ibdev(), ah) } {
                0 => Ok(()),
                _ => Err(EINVAL),
            }
        };
        let npkeys = dev.dparms().npkeys as u32;
        if has(mask, bindings::ib_qp_attr_mask_IB_QP_AV) {
            check_ah(&mut attr.ah_attr)?;
        }
        if has(mask, bindings::ib_qp_attr_mask_IB_QP_ALT_PATH) {
            check_ah(&mut attr.alt_ah_attr)?;
            if u32::from(attr.alt_pkey_index) >= npkeys {
                return Err(EINVAL);
            }
        }
        if has(mask, bindings::ib_qp_attr_mask_IB_QP_PKEY_INDEX)
            && u32::from(attr.pkey_index) >= npkeys
        {
            return Err(EINVAL);
        }
        Ok(())
    }

    /// The numeric limits of the IB spec and of the device.
    fn check_limits(&self, dev: &Device, attr: &bindings::ib_qp_attr, mask: c_int) -> Result {
        let bad = (has(mask, bindings::ib_qp_attr_mask_IB_QP_MIN_RNR_TIMER)
            && attr.min_rnr_timer > 31)
            || (has(mask, bindings::ib_qp_attr_mask_IB_QP_PORT)
                && self.bad_port(dev, attr.port_num))
            || (has(mask, bindings::ib_qp_attr_mask_IB_QP_DEST_QPN) && attr.dest_qp_num > QPN_MASK)
            || (has(mask, bindings::ib_qp_attr_mask_IB_QP_RETRY_CNT) && attr.retry_cnt > 7)
            || (has(mask, bindings::ib_qp_attr_mask_IB_QP_RNR_RETRY) && attr.rnr_retry > 7);
        if bad {
            Err(EINVAL)
        } else {
            Ok(())
        }
    }

    /// A port change is refused for the special QPs and for ports the device lacks.
    fn bad_port(&self, dev: &Device, port_num: u32) -> bool {
        let t = self.qp_type();
        // SAFETY: `phys_port_cnt` of a registered device is fixed.
        let ports = unsafe { (*dev.ibdev()).phys_port_cnt };
        t == bindings::ib_qp_type::IB_QPT_SMI
            || t == bindings::ib_qp_type::IB_QPT_GSI
            || port_num == 0
            || port_num > ports
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
        match bindings::ib_qp_state(plan.new) {
            bindings::ib_qp_state::IB_QPS_RESET => {
                if locks.s.state() != bindings::ib_qp_state::IB_QPS_RESET.0 {
                    locks = self.reset_locked(locks);
                }
            }
            bindings::ib_qp_state::IB_QPS_RTR => {
                let mut f = locks.fields();
                // Clearing COMM_EST lets the event fire again.
                *f.r_flags_mut() &= !(bindings::RVT_R_COMM_EST as u8);
                f.set_state(plan.new as u8);
            }
            bindings::ib_qp_state::IB_QPS_SQD => {
                let mut f = locks.fields();
                *f.s_draining_mut() = u8::from(f.s_last() != f.s_cur());
                f.set_state(plan.new as u8);
            }
            bindings::ib_qp_state::IB_QPS_ERR => {
                let status = bindings::ib_wc_status::IB_WC_WR_FLUSH_ERR;
                outcome = self.error(&mut locks.r, &mut locks.s, status);
            }
            _ => locks.fields().set_state(plan.new as u8),
        }
        (locks, outcome)
    }

    /// Sets the attributes the mask names (all checked already).
    fn apply(
        &self,
        locks: &mut AllLocks<'_>,
        attr: &mut bindings::ib_qp_attr,
        mask: c_int,
        plan: &Plan,
        udata: *mut bindings::ib_udata,
    ) {
        let dev = self.device();
        let m = |bit| has(mask, bit);
        let mut f = locks.fields();
        if m(bindings::ib_qp_attr_mask_IB_QP_PKEY_INDEX) {
            *f.s_pkey_index_mut() = attr.pkey_index as u8;
        }
        if m(bindings::ib_qp_attr_mask_IB_QP_PORT) {
            *f.port_num_mut() = attr.port_num as u8;
        }
        if m(bindings::ib_qp_attr_mask_IB_QP_DEST_QPN) {
            *f.remote_qpn_mut() = attr.dest_qp_num;
        }
        if m(bindings::ib_qp_attr_mask_IB_QP_SQ_PSN) {
            let psn = attr.sq_psn & dev.dparms().psn_modify_mask as u32;
            *f.s_next_psn_mut() = psn;
            *f.s_psn_mut() = psn;
            *f.s_sending_psn_mut() = psn;
            *f.s_last_psn_mut() = psn.wrapping_sub(1);
            *f.s_sending_hpsn_mut() = f.s_last_psn();
        }
        if m(bindings::ib_qp_attr_mask_IB_QP_RQ_PSN) {
            *f.r_psn_mut() = attr.rq_psn & dev.dparms().psn_modify_mask as u32;
        }
        if m(bindings::ib_qp_attr_mask_IB_QP_ACCESS_FLAGS) {
            *f.qp_access_flags_mut() = attr.qp_access_flags as u8;
        }
        apply_paths(&mut f, attr, mask, plan);
        // The driver sizes the MTU from the port and path just applied, as in C.
        let mtu = plan
            .pmtu
            .and_then(|pmtu| dev.driver().mtu_from_qp(self, pmtu, locks));
        apply_transport(&mut locks.fields(), attr, mask, mtu);
        // SAFETY: `udata` is ib_core's, as the verb got it.
        unsafe { dev.driver().modify_qp(self, attr, mask, udata, locks) };
    }
}

/// MTU (`mtu`, from the driver's `mtu_from_qp`), retries, timers, keys and RDMA read/atomic
/// depths.
fn apply_transport(f: &mut QpMut<'_>, attr: &bindings::ib_qp_attr, mask: c_int, mtu: Option<u32>) {
    let m = |bit| has(mask, bit);
    if let Some(mtu) = mtu {
        *f.pmtu_mut() = mtu as u16;
        *f.log_pmtu_mut() = mtu.checked_ilog2().unwrap_or(0) as u8;
    }
    if m(bindings::ib_qp_attr_mask_IB_QP_RETRY_CNT) {
        *f.s_retry_cnt_mut() = attr.retry_cnt;
        *f.s_retry_mut() = attr.retry_cnt;
    }
    if m(bindings::ib_qp_attr_mask_IB_QP_RNR_RETRY) {
        *f.s_rnr_retry_cnt_mut() = attr.rnr_retry;
        *f.s_rnr_retry_mut() = attr.rnr_retry;
    }
    if m(bindings::ib_qp_attr_mask_IB_QP_MIN_RNR_TIMER) {
        *f.r_min_rnr_timer_mut() = attr.min_rnr_timer;
    }
    if m(bindings::ib_qp_attr_mask_IB_QP_TIMEOUT) {
        *f.timeout_mut() = attr.timeout;
        *f.timeout_jiffies_mut() = super::timeout_to_jiffies(attr.timeout);
    }
    if m(bindings::ib_qp_attr_mask_IB_QP_QKEY) {
        *f.qkey_mut() = attr.qkey;
    }
    if m(bindings::ib_qp_attr_mask_IB_QP_MAX_DEST_RD_ATOMIC) {
        *f.r_max_rd_atomic_mut() = attr.max_dest_rd_atomic;
    }
    if m(bindings::ib_qp_attr_mask_IB_QP_MAX_QP_RD_ATOMIC) {
        *f.s_max_rd_atomic_mut() = attr.max_rd_atomic;
    }
}
