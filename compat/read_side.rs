// SPDX-License-Identifier: GPL-2.0-only

//! [`ReadSide`]: proof that the caller is inside an RCU read-side critical section, however it
//! was entered, for the code that only needs to know it is in one.
//!
//! A region's reference count is a `percpu_ref`, whose get and put C wraps in an
//! `rcu_read_lock()` of their own: the count may be switched from per-CPU to atomic mode at any
//! time, and the switch sums the per-CPU counters only after an RCU grace period. Most of the
//! data path already runs inside such a section: the loopback's `rcu::Guard`, or a held QP
//! spinlock. Since the RCU flavours were consolidated (4.20), a grace period also waits for
//! every region that runs with preemption, bottom halves or interrupts disabled, which a
//! spinlock does on every non-RT preemption model; on PREEMPT_RT, `spin_lock()` enters
//! `rcu_read_lock()` itself (kernel/locking/spinlock_rt.c). So a held spinlock is a read-side
//! section on every configuration, and a [`ReadSide`] can stand for either, at no cost: it is
//! a zero-sized token that borrows whatever keeps the section open.

use core::marker::PhantomData;

use super::{
    lock::{Backend, Guard},
    rcu,
};

/// An RCU read-side critical section that lasts at least `'a`.
#[derive(Clone, Copy)]
pub(crate) struct ReadSide<'a>(PhantomData<&'a ()>);

impl<'a> From<&'a rcu::Guard> for ReadSide<'a> {
    fn from(_: &'a rcu::Guard) -> Self {
        Self(PhantomData)
    }
}

impl<'a> ReadSide<'a> {
    /// The section a held spinlock is (see the module's documentation).
    pub(crate) fn spinlock<B>(_held: &'a Guard<'_, (), B>) -> Self
    where
        B: Backend<State = kernel::bindings::spinlock_t>,
    {
        Self(PhantomData)
    }
}
