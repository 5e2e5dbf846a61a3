// SPDX-License-Identifier: GPL-2.0-only

//! A `modify_qp` request: `struct ib_qp_attr` with the mask that says which of its attributes
//! the request sets. An attribute is read only through its mask bit (`None` when the mask
//! leaves it out), so no check or update can read a field the consumer did not set.

use kernel::{ffi::c_int, prelude::*};

use super::QpMut;
use crate::{bindings, device::Device};

/// The QP states (`IB_QPS_*`), bindgen's newtype over C's `enum ib_qp_state`.
pub(crate) use crate::bindings::ib_qp_state as QpState;

/// The highest valid QP number.
pub(super) const QPN_MASK: u32 = bindings::IB_QPN_MASK;

/// `IB_MULTICAST_LID_BASE`: IB unicast LIDs lie below it.
const IB_MULTICAST_LID_BASE: u32 = 0xc000;

/// The automatic path migration states (`enum ib_mig_state`).
pub(super) mod mig {
    use crate::bindings;

    /// IB_MIG_MIGRATED: no alternate path armed.
    pub(crate) const MIGRATED: u32 = bindings::ib_mig_state_IB_MIG_MIGRATED;
    /// IB_MIG_REARM: the alternate path is being set up.
    pub(crate) const REARM: u32 = bindings::ib_mig_state_IB_MIG_REARM;
    /// IB_MIG_ARMED: the alternate path is ready to take over.
    pub(crate) const ARMED: u32 = bindings::ib_mig_state_IB_MIG_ARMED;
}

/// The attributes of a `modify_qp` request, as ib_core passed them.
///
/// # Invariants
///
/// `udata` is what ib_core passed with the attributes (NULL from the kernel).
pub(crate) struct ModifyAttr<'a> {
    attr: &'a mut bindings::ib_qp_attr,
    mask: c_int,
    udata: *mut bindings::ib_udata,
}

// One accessor per attribute: its value if the mask sets it.
macro_rules! masked {
    ($($(#[$doc:meta])* $name:ident: $bit:ident -> $ty:ty = |$a:ident| $value:expr;)*) => {
        impl ModifyAttr<'_> {
            $(
                $(#[$doc])*
                pub(super) fn $name(&self) -> Option<$ty> {
                    let $a = &*self.attr;
                    self.has(bindings::$bit).then(|| $value)
                }
            )*
        }
    };
}

masked! {
    /// IB_QP_STATE: the state to move to.
    state: ib_qp_attr_mask_IB_QP_STATE -> u32 = |a| a.qp_state.0;
    /// IB_QP_CUR_STATE: the state the consumer believes the QP is in.
    cur_state: ib_qp_attr_mask_IB_QP_CUR_STATE -> u32 = |a| a.cur_qp_state.0;
    /// IB_QP_PKEY_INDEX.
    pkey_index: ib_qp_attr_mask_IB_QP_PKEY_INDEX -> u16 = |a| a.pkey_index;
    /// IB_QP_PORT.
    port_num: ib_qp_attr_mask_IB_QP_PORT -> u32 = |a| a.port_num;
    /// IB_QP_DEST_QPN.
    dest_qp_num: ib_qp_attr_mask_IB_QP_DEST_QPN -> u32 = |a| a.dest_qp_num;
    /// IB_QP_SQ_PSN.
    sq_psn: ib_qp_attr_mask_IB_QP_SQ_PSN -> u32 = |a| a.sq_psn;
    /// IB_QP_RQ_PSN.
    rq_psn: ib_qp_attr_mask_IB_QP_RQ_PSN -> u32 = |a| a.rq_psn;
    /// IB_QP_ACCESS_FLAGS.
    access_flags: ib_qp_attr_mask_IB_QP_ACCESS_FLAGS -> c_int = |a| a.qp_access_flags;
    /// IB_QP_PATH_MIG_STATE (`mig::*`).
    path_mig_state: ib_qp_attr_mask_IB_QP_PATH_MIG_STATE -> u32 = |a| a.path_mig_state;
    /// IB_QP_RETRY_CNT.
    retry_cnt: ib_qp_attr_mask_IB_QP_RETRY_CNT -> u8 = |a| a.retry_cnt;
    /// IB_QP_RNR_RETRY.
    rnr_retry: ib_qp_attr_mask_IB_QP_RNR_RETRY -> u8 = |a| a.rnr_retry;
    /// IB_QP_MIN_RNR_TIMER.
    min_rnr_timer: ib_qp_attr_mask_IB_QP_MIN_RNR_TIMER -> u8 = |a| a.min_rnr_timer;
    /// IB_QP_TIMEOUT.
    timeout: ib_qp_attr_mask_IB_QP_TIMEOUT -> u8 = |a| a.timeout;
    /// IB_QP_QKEY.
    qkey: ib_qp_attr_mask_IB_QP_QKEY -> u32 = |a| a.qkey;
    /// IB_QP_MAX_DEST_RD_ATOMIC: the responder's depth of RDMA reads and atomics.
    max_dest_rd_atomic: ib_qp_attr_mask_IB_QP_MAX_DEST_RD_ATOMIC -> u8 = |a| a.max_dest_rd_atomic;
    /// IB_QP_MAX_QP_RD_ATOMIC: the requester's depth of RDMA reads and atomics.
    max_rd_atomic: ib_qp_attr_mask_IB_QP_MAX_QP_RD_ATOMIC -> u8 = |a| a.max_rd_atomic;
}

impl<'a> ModifyAttr<'a> {
    /// # Safety
    ///
    /// `attr` and `udata` are what ib_core passed to the `modify_qp` verb.
    pub(super) unsafe fn new(
        attr: &'a mut bindings::ib_qp_attr,
        mask: c_int,
        udata: *mut bindings::ib_udata,
    ) -> Self {
        // INVARIANT: the caller's guarantee.
        Self { attr, mask, udata }
    }

    fn has(&self, bit: bindings::ib_qp_attr_mask) -> bool {
        self.mask as u32 & bit != 0
    }

    /// Whether the mask has bits that no IB attribute has (ib_core's extended ones, which
    /// rdmavt does not support).
    pub(super) fn nonstandard(&self) -> bool {
        self.mask as u32 & !bindings::ib_qp_attr_mask_IB_QP_ATTR_STANDARD_BITS != 0
    }

    /// Whether the request sets the path MTU (IB_QP_PATH_MTU), which the driver reads.
    pub(super) fn sets_path_mtu(&self) -> bool {
        self.has(bindings::ib_qp_attr_mask_IB_QP_PATH_MTU)
    }

    /// `ib_modify_qp_is_ok()`: whether the IB state machine allows a QP of `qp_type` to move
    /// from `cur` to `new` with exactly this mask's attributes.
    pub(super) fn transition_ok(&self, cur: u32, new: u32, qp_type: bindings::ib_qp_type) -> bool {
        // SAFETY: a pure check of the IB state machine table.
        unsafe {
            bindings::ib_modify_qp_is_ok(QpState(cur), QpState(new), qp_type, self.mask as u32)
        }
    }

    /// The attributes, mask and user data as C takes them, for the driver's callbacks.
    pub(crate) fn as_c(&mut self) -> (&mut bindings::ib_qp_attr, c_int, *mut bindings::ib_udata) {
        (self.attr, self.mask, self.udata)
    }

    /// The primary and alternate address vectors and P_Key indices: unicast destination LIDs
    /// (below `dev`'s multicast base on `port`), AHs that `rvt_check_ah` accepts, P_Key
    /// indices within the table.
    pub(super) fn check_paths(&mut self, dev: &Device, port: u8) -> Result {
        // SAFETY: a lookup in the registered device's port data.
        let opa = unsafe { bindings::rdmavt_rs_rdma_cap_opa_ah(dev.ibdev(), u32::from(port)) };
        let dlid_limit = if opa {
            // SAFETY: a constant computation.
            unsafe { bindings::rdmavt_rs_opa_mcast_base() }
        } else {
            IB_MULTICAST_LID_BASE
        };
        let check_ah = |ah: &mut bindings::rdma_ah_attr| -> Result {
            if crate::ah::dlid(ah) >= dlid_limit {
                return Err(EINVAL);
            }
            crate::ah::check(dev.ibdev(), ah).map_err(|_| EINVAL)
        };
        let npkeys = dev.dparms().npkeys as u32;
        if self.has(bindings::ib_qp_attr_mask_IB_QP_AV) {
            check_ah(&mut self.attr.ah_attr)?;
        }
        if self.has(bindings::ib_qp_attr_mask_IB_QP_ALT_PATH) {
            check_ah(&mut self.attr.alt_ah_attr)?;
            if u32::from(self.attr.alt_pkey_index) >= npkeys {
                return Err(EINVAL);
            }
        }
        match self.pkey_index() {
            Some(index) if u32::from(index) >= npkeys => Err(EINVAL),
            _ => Ok(()),
        }
    }

    /// Sets the address vectors and the migration state; `migrate`: the request migrates to
    /// the armed alternate path.
    pub(super) fn apply_paths(&self, f: &mut QpMut<'_>, migrate: bool) {
        let attr = &*self.attr;
        if self.has(bindings::ib_qp_attr_mask_IB_QP_AV) {
            // SAFETY: ib_core's helper, which takes and drops the references the attributes
            // hold.
            unsafe { bindings::rdma_replace_ah_attr(f.remote_ah_attr_mut(), &attr.ah_attr) };
            *f.s_srate_mut() = attr.ah_attr.static_rate;
            // SAFETY: a pure conversion.
            let mbps = unsafe { bindings::ib_rate_to_mbps(attr.ah_attr.static_rate.into()) };
            *f.srate_mbps_mut() = mbps;
        }
        if self.has(bindings::ib_qp_attr_mask_IB_QP_ALT_PATH) {
            // SAFETY: as above.
            unsafe { bindings::rdma_replace_ah_attr(f.alt_ah_attr_mut(), &attr.alt_ah_attr) };
            *f.s_alt_pkey_index_mut() = attr.alt_pkey_index as u8;
        }
        if let Some(state) = self.path_mig_state() {
            *f.s_mig_state_mut() = state as u8;
            if migrate {
                // A plain copy, as C does: the alternate path's references move along.
                *f.remote_ah_attr_mut() = *f.alt_ah_attr();
                // C truncates the u32 port to rvt_qp's u8, as here; ports fit.
                *f.port_num_mut() = f.alt_ah_attr().port_num as u8;
                *f.s_pkey_index_mut() = f.s_alt_pkey_index();
            }
        }
    }
}
