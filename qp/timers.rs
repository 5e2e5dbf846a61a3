// SPDX-License-Identifier: GPL-2.0-only

//! The RC retry and RNR timers of a QP (being written: this commit only declares the entry
//! point that creation calls).

use crate::bindings;

/// Sets up the QP's retry timer and RNR hrtimer.
///
/// # Safety
///
/// `qp` is a QP being created, used by nobody else.
pub(crate) unsafe fn init(_qp: *mut bindings::rvt_qp) {}
