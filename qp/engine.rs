// SPDX-License-Identifier: GPL-2.0-only

//! The send engine of a QP, owned through `RVT_S_BUSY`.
//!
//! Whoever sets `RVT_S_BUSY` in `s_flags` (with `s_lock` held) runs the QP's send engine until
//! it clears the bit: every caller of the loopback and of the driver's send engine stays out
//! meanwhile. The fields only the send engine uses are then its own without a lock, as in C;
//! [`SendEngine`] is that ownership, and its field list below the statement of it (the same
//! fields are also reachable under `s_lock`, see `fields`).

use super::{state_ops, Qp, SendGuard};
use crate::bindings;

/// The send engine of `qp`, claimed.
///
/// # Invariants
///
/// The holder set `RVT_S_BUSY` in the QP's `s_flags` (with `s_lock` held) and nobody else
/// clears it until [`SendEngine::release`].
pub(crate) struct SendEngine<'a> {
    /// The QP whose engine this is.
    pub(crate) qp: &'a Qp,
}

impl<'a> SendEngine<'a> {
    /// Claims the send engine, unless it is busy, waiting (for an RNR timer, credits, ...),
    /// or the QP's state neither processes nor flushes sends.
    pub(crate) fn claim(s: &mut SendGuard<'a>) -> Option<Self> {
        if s.flags() & (bindings::RVT_S_BUSY | bindings::RVT_S_ANY_WAIT) != 0
            || !state_ops(s.state()).process_or_flush_send()
        {
            return None;
        }
        s.set_flags(bindings::RVT_S_BUSY);
        // INVARIANT: we set RVT_S_BUSY, with `s_lock` held.
        Some(Self { qp: s.qp() })
    }

    /// Gives the send engine back.
    pub(crate) fn release(self, s: &mut SendGuard<'_>) {
        s.clear_flags(bindings::RVT_S_BUSY);
    }
}

/// Generates `field_mut()` on [`SendEngine`] for each field the engine owns.
macro_rules! engine_fields {
    ($($field:ident: $ty:ty,)*) => {
        ::kernel::macros::paste! {
            impl SendEngine<'_> {
                $(
                    #[doc = concat!("`", stringify!($field), "`, the send engine's own.")]
                    #[inline]
                    pub(crate) fn [<$field _mut>](&mut self) -> &mut $ty {
                        // SAFETY: the engine's field (type invariant); `&mut self` makes this
                        // the only reference through the engine.
                        unsafe { &mut (*self.qp.as_raw()).$field }
                    }
                )*
            }
        }
    };
}

engine_fields! {
    s_sge: bindings::rvt_sge_state,
    s_len: u32,
    s_rnr_retry: u8,
}
