// SPDX-License-Identifier: GPL-2.0-only

//! `kernel::sync::rcu` for 6.12, which has none: the read-side critical section as a guard,
//! and `synchronize_rcu()`.

use core::marker::PhantomData;

use crate::bindings;

/// An RCU read-side critical section (`rcu_read_lock()` to `rcu_read_unlock()`), held by the
/// task that entered it.
#[must_use = "the critical section ends when the guard is dropped"]
pub(crate) struct Guard(PhantomData<*mut ()>);

impl Drop for Guard {
    fn drop(&mut self) {
        // SAFETY: the guard exists only inside the critical section it ends.
        unsafe { bindings::rdmavt_rs_rcu_read_unlock() }
    }
}

/// Enters an RCU read-side critical section.
pub(crate) fn read_lock() -> Guard {
    // SAFETY: always allowed; the guard ends the section.
    unsafe { bindings::rdmavt_rs_rcu_read_lock() };
    Guard(PhantomData)
}

/// Waits until every RCU read-side critical section that began before it has ended.
pub(crate) fn synchronize_rcu() {
    // SAFETY: called from process context, as its callers are.
    unsafe { bindings::synchronize_rcu() }
}
