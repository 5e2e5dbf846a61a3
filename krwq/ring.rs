// SPDX-License-Identifier: GPL-2.0-only

//! The ring of a receive queue and its two sides.
//!
//! A ring has `size` slots of `sizeof(rvt_rwqe) + max_sge * sizeof(ib_sge)` bytes; one slot
//! always stays free, so `head == tail` means empty. For a kernel queue the slots and the
//! `head`/`tail` indices live in `struct rvt_krwq`; for a user queue they live in the mmap'd
//! `struct rvt_rwq`, which user space writes at will, so every index read from it is checked
//! against `size` and every WQE's `num_sge` against `max_sge` before anything is indexed with
//! it. In both cases `rvt_krwq` holds the two locks and the consumer's cached count.
//!
//! The producer side ([`Producer`]: `p_lock`, owns `head`) is what posts; the consumer side
//! ([`Consumer`]: `c_lock`, owns `tail` and `count`) is what takes WQEs off. Each side sees
//! the other's index only as an atomic snapshot. In Rust, a side's own index is written only
//! through its guard, and the rest of the crate reads the indices only through these guards
//! and [`Rq::posted_unlocked`]'s lock-free snapshot. That is not exclusivity: user space
//! writes a user ring's indices whenever it likes (hence the checks), and a C driver may read
//! a kernel ring's under the same locks.

use core::{marker::PhantomData, mem::size_of, ptr};

use crate::compat::{
    atomic::{Acquire, Atomic, Relaxed, Release},
    lock::{Guard, SpinLockIrqBackend},
};

use crate::bindings;

/// `RVT_RWQ_COUNT_THRESHOLD`: below this many cached entries the consumer reads `head` again.
pub(crate) const COUNT_THRESHOLD: u32 = 16;

/// An index or WQE of a user ring that points outside the ring (user space wrote it).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Corrupt;

/// `rvt_get_rq_count()`: the entries between `tail` and `head` of a ring of `size` slots.
pub(crate) fn rq_count(size: u32, head: u32, tail: u32) -> u32 {
    let count = head.wrapping_sub(tail);
    if (count as i32) < 0 {
        count.wrapping_add(size)
    } else {
        count
    }
}

/// The slot after `n`.
pub(crate) fn next_index(size: u32, n: u32) -> u32 {
    if n + 1 >= size {
        0
    } else {
        n + 1
    }
}

/// Bytes per receive WQE with `max_sge` SGEs.
pub(crate) fn rwqe_size(max_sge: u32) -> usize {
    size_of::<bindings::rvt_rwqe>() + max_sge as usize * size_of::<bindings::ib_sge>()
}

/// A receive queue: the `struct rvt_rq` of a QP (without SRQ) or of an SRQ.
///
/// An SRQ's ring can be replaced (`modify_srq` resizes it), so for an SRQ `rq.lock` guards
/// the ring's shape (`kwq`, `wq`, `size`) and both sides take it first. A QP's ring keeps its
/// shape for the QP's life, and its `rq.lock` is never initialised or taken.
///
/// # Invariants
///
/// `rq` points to a live `rvt_rq` set up by `krwq::alloc`, with `size` and `max_sge` set, that
/// lives for `'a`; if `shared`, `rq.lock` is initialised and `limit` points to the SRQ's
/// `limit`, else `limit` is NULL and the ring's shape never changes.
#[derive(Clone, Copy)]
pub(crate) struct Rq<'a> {
    rq: *mut bindings::rvt_rq,
    limit: *mut u32,
    shared: bool,
    _rq: PhantomData<&'a bindings::rvt_rq>,
}

/// The fixed facts of a ring, read once under the locks that keep them.
#[derive(Clone, Copy)]
struct Ring {
    kwq: *mut bindings::rvt_krwq,
    /// The user ring, NULL for a kernel queue.
    wq: *mut bindings::rvt_rwq,
    slots: *mut u8,
    size: u32,
    max_sge: u8,
}

/// Takes a C spinlock with interrupts disabled.
///
/// # Safety
///
/// `lock` is an initialised spinlock that lives for `'a`.
unsafe fn lock<'a>(lock: *mut bindings::spinlock_t) -> Guard<'a, (), SpinLockIrqBackend> {
    // SAFETY: the caller's guarantee.
    unsafe { crate::lock::lock_raw(lock) }
}

impl<'a> Rq<'a> {
    /// The receive queue of a QP without SRQ.
    ///
    /// # Safety
    ///
    /// `rq` is a QP's receive queue set up by `krwq::alloc`, alive for `'a`.
    pub(crate) unsafe fn of_qp(rq: *mut bindings::rvt_rq) -> Self {
        // INVARIANT: the caller's guarantee; a QP's ring is never resized.
        Self {
            rq,
            limit: ptr::null_mut(),
            shared: false,
            _rq: PhantomData,
        }
    }

    /// The receive queue of an SRQ.
    ///
    /// # Safety
    ///
    /// `srq` is a live SRQ whose queue `create_srq` set up (with `rq.lock` initialised),
    /// alive for `'a`.
    pub(crate) unsafe fn of_srq(srq: *mut bindings::rvt_srq) -> Self {
        // INVARIANT: the caller's guarantee.
        Self {
            // SAFETY: only field addresses of the caller's live SRQ are taken.
            rq: unsafe { &raw mut (*srq).rq },
            // SAFETY: as above.
            limit: unsafe { &raw mut (*srq).limit },
            shared: true,
            _rq: PhantomData,
        }
    }

    /// `rq.lock` for an SRQ, nothing for a QP.
    fn shape_lock(&self) -> Option<Guard<'a, (), SpinLockIrqBackend>> {
        self.shared.then(|| {
            // SAFETY: for an SRQ, `rq.lock` is initialised (type invariant).
            unsafe { lock(&raw mut (*self.rq).lock) }
        })
    }

    /// The ring as it is now.
    ///
    /// # Safety
    ///
    /// For an SRQ, the caller holds `rq.lock`.
    unsafe fn ring(&self) -> Ring {
        // SAFETY: the fields only change under `rq.lock` (type invariant and caller).
        unsafe {
            let kwq = (*self.rq).kwq;
            Ring {
                kwq,
                wq: (*self.rq).wq,
                slots: (*kwq).curr_wq.cast(),
                size: (*self.rq).size,
                max_sge: (*self.rq).max_sge,
            }
        }
    }

    /// Takes the producer side: `rq.lock` (SRQ) then `p_lock`.
    pub(crate) fn producer(&self) -> Producer<'a> {
        let shape = self.shape_lock();
        // SAFETY: `rq.lock` is held for an SRQ; a QP's ring never changes.
        let ring = unsafe { self.ring() };
        Producer {
            // SAFETY: `p_lock` was initialised by `alloc` and lives with the ring, which
            // cannot be replaced while `shape` is held.
            _p: unsafe { lock(&raw mut (*ring.kwq).p_lock) },
            _shape: shape,
            ring,
        }
    }

    /// Takes the consumer side: `rq.lock` (SRQ) then `c_lock`.
    pub(crate) fn consumer(&self) -> Consumer<'a> {
        let shape = self.shape_lock();
        // SAFETY: as in `producer`.
        let ring = unsafe { self.ring() };
        Consumer {
            // SAFETY: as in `producer`, for `c_lock`.
            _c: unsafe { lock(&raw mut (*ring.kwq).c_lock) },
            _shape: shape,
            ring,
            limit: self.limit,
        }
    }

    /// Takes both sides, for replacing the ring: `rq.lock`, `p_lock`, `c_lock`.
    pub(crate) fn both(&self) -> Both<'a> {
        let shape = self.shape_lock();
        // SAFETY: as in `producer`.
        let ring = unsafe { self.ring() };
        // SAFETY: as in `producer`.
        let p = unsafe { lock(&raw mut (*ring.kwq).p_lock) };
        Both {
            consumer: Consumer {
                // SAFETY: as in `consumer`.
                _c: unsafe { lock(&raw mut (*ring.kwq).c_lock) },
                _shape: None,
                ring,
                limit: self.limit,
            },
            _p: p,
            _shape: shape,
            rq: self.rq,
        }
    }

    /// The number of slots (one more than the WQEs the ring can hold). Fixed for a QP; for an
    /// SRQ a snapshot that a resize may change.
    pub(crate) fn size(&self) -> u32 {
        // SAFETY: a live queue (type invariant); racing with a resize only makes this stale.
        unsafe { ptr::read_volatile(&raw const (*self.rq).size) }
    }

    /// The most SGEs a WQE may have, fixed at creation.
    pub(crate) fn max_sge(&self) -> u8 {
        // SAFETY: a live queue (type invariant); `max_sge` is never changed after creation.
        unsafe { (*self.rq).max_sge }
    }

    /// The WQEs posted and not yet taken, as far as a look without either side's lock can
    /// tell (C's `rvt_compute_aeth()`): the consumer's cached count, else the distance from
    /// `tail` to `head` of the ring the two sides use, with an index outside the ring (which
    /// user space wrote) taken as 0. The two reads are not one snapshot: a credit computed
    /// from them may be stale, and the next ACK corrects it, as in C. An SRQ's ring, which a
    /// resize could replace under the look, answers 0 (its QPs advertise no credits).
    pub(crate) fn posted_unlocked(&self) -> u32 {
        if self.shared {
            return 0;
        }
        // SAFETY: a QP's ring never changes shape (type invariant).
        let ring = unsafe { self.ring() };
        // SAFETY: `count` is an aligned u32 of the live ring, written only by the consumer.
        // ORDERING: a hint, as C's READ_ONCE: nothing is read through it.
        let count = unsafe { Atomic::from_ptr(&raw mut (*ring.kwq).count) }.load(Relaxed);
        if count != 0 {
            return count;
        }
        let index = |i| ring.snapshot(i).unwrap_or(0);
        rq_count(ring.size, index(ring.head()), index(ring.tail()))
    }
}

impl Ring {
    /// The slot `n`.
    ///
    /// # Safety
    ///
    /// `n < self.size`.
    unsafe fn slot(&self, n: u32) -> *mut bindings::rvt_rwqe {
        // SAFETY: `alloc` sized the ring for `size` slots of this stride; `n` is one of them.
        unsafe {
            self.slots
                .add(rwqe_size(u32::from(self.max_sge)) * n as usize)
                .cast()
        }
    }

    /// A valid index, or [`Corrupt`].
    fn check(&self, n: u32) -> Result<u32, Corrupt> {
        if n < self.size {
            Ok(n)
        } else {
            Err(Corrupt)
        }
    }

    /// `head` (user ring or kernel ring).
    fn head(&self) -> *mut u32 {
        // SAFETY: only field addresses of the live ring are taken.
        unsafe {
            if self.wq.is_null() {
                &raw mut (*self.kwq).head
            } else {
                &raw mut (*self.wq).head.val
            }
        }
    }

    /// `tail` (user ring or kernel ring).
    fn tail(&self) -> *mut u32 {
        // SAFETY: only field addresses of the live ring are taken.
        unsafe {
            if self.wq.is_null() {
                &raw mut (*self.kwq).tail
            } else {
                &raw mut (*self.wq).tail.val
            }
        }
    }

    /// Reads an index the other side (or user space) writes.
    fn snapshot(&self, index: *mut u32) -> Result<u32, Corrupt> {
        // SAFETY: `index` is an aligned u32 of the live ring; it is only ever written
        // atomically by us, or by user space, whose writes cannot make an aligned u32 read
        // tear.
        // ORDERING: Acquire pairs with the Release of the side that published the index (or
        // user space's release store), so the slots it covers are read after it.
        let n = unsafe { Atomic::from_ptr(index) }.load(Acquire);
        self.check(n)
    }

    /// Publishes a new value of this side's own index.
    fn publish(&self, index: *mut u32, n: u32) {
        // SAFETY: as in `snapshot`.
        // ORDERING: Release orders the slot writes (producer) or reads (consumer) before the
        // index that hands them over; the other side's Acquire pairs with it.
        unsafe { Atomic::from_ptr(index) }.store(n, Release);
    }
}

/// A receive WQE still in its slot: read field by field, once, because a user ring can change
/// under us.
pub(crate) struct Rwqe {
    slot: *const bindings::rvt_rwqe,
    /// The WQE's `wr_id`.
    pub(crate) wr_id: u64,
    num_sge: u8,
    max_sge: u8,
}

impl Rwqe {
    /// The number of SGEs, or [`Corrupt`] when user space wrote more than the queue's
    /// `max_sge` (the C rdmavt trusts it and reads and writes past the WQE).
    pub(crate) fn num_sge(&self) -> Result<u8, Corrupt> {
        if self.num_sge <= self.max_sge {
            Ok(self.num_sge)
        } else {
            Err(Corrupt)
        }
    }

    /// SGE `i`, copied out of the slot.
    ///
    /// # Safety
    ///
    /// The ring is still alive (its side's guard is held, or the caller holds `c_lock`
    /// otherwise) and `i < self.num_sge()?`.
    pub(crate) unsafe fn sge(&self, i: u8) -> bindings::ib_sge {
        // SAFETY: `i < num_sge <= max_sge`: the SGE lies inside the slot.
        let s = unsafe { ptr::read_volatile((*self.slot).sg_list.as_ptr().add(usize::from(i))) };
        bindings::ib_sge {
            addr: s.addr,
            length: s.length,
            lkey: s.lkey,
        }
    }
}

/// The producer side held: `p_lock` (and `rq.lock` for an SRQ). Fields drop in declaration
/// order: `p_lock` first, then `rq.lock`.
pub(crate) struct Producer<'a> {
    _p: Guard<'a, (), SpinLockIrqBackend>,
    _shape: Option<Guard<'a, (), SpinLockIrqBackend>>,
    ring: Ring,
}

/// A free slot found by [`Producer::reserve`].
#[derive(Clone, Copy)]
pub(crate) struct Reserved {
    head: u32,
    next: u32,
}

/// Why a WQE cannot be posted.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum PostError {
    /// No free slot: ENOMEM, as in C.
    Full,
    /// A user ring's index is out of range: EINVAL.
    Corrupt,
}

impl Producer<'_> {
    /// The next free slot, without using it: C's `next == READ_ONCE(wq->tail)` check.
    pub(crate) fn reserve(&self) -> Result<Reserved, PostError> {
        let head = self
            .ring
            .snapshot(self.ring.head())
            .map_err(|_| PostError::Corrupt)?;
        let tail = self
            .ring
            .snapshot(self.ring.tail())
            .map_err(|_| PostError::Corrupt)?;
        let next = next_index(self.ring.size, head);
        if next == tail {
            return Err(PostError::Full);
        }
        Ok(Reserved { head, next })
    }

    /// Writes `wr` into the reserved slot and publishes it to the consumer.
    ///
    /// # Safety
    ///
    /// `wr` is valid, with `num_sge` (checked by the caller to lie in `0..=max_sge`) SGEs.
    pub(crate) unsafe fn push(&mut self, at: Reserved, wr: &bindings::ib_recv_wr) {
        let n = wr.num_sge as usize;
        // SAFETY: `at.head < size` (checked by `reserve`), so the slot is in the ring; the
        // caller guarantees `n <= max_sge` SGEs in `wr`, which the slot has room for.
        unsafe {
            let wqe = self.ring.slot(at.head);
            ptr::write_volatile(&raw mut (*wqe).wr_id, wr.__bindgen_anon_1.wr_id);
            ptr::write_volatile(&raw mut (*wqe).num_sge, n as u8);
            for i in 0..n {
                let s = &*wr.sg_list.add(i);
                let d = bindings::rvt_wqe_sge {
                    addr: s.addr,
                    length: s.length,
                    lkey: s.lkey,
                };
                ptr::write_volatile((*wqe).sg_list.as_mut_ptr().add(i), d);
            }
        }
        self.ring.publish(self.ring.head(), at.next);
    }
}

/// The consumer side held: `c_lock` (and `rq.lock` for an SRQ), with `tail` and `count`.
pub(crate) struct Consumer<'a> {
    _c: Guard<'a, (), SpinLockIrqBackend>,
    _shape: Option<Guard<'a, (), SpinLockIrqBackend>>,
    ring: Ring,
    limit: *mut u32,
}

impl Consumer<'_> {
    /// `tail`; [`Corrupt`] if user space put it outside the ring.
    pub(crate) fn tail(&self) -> Result<u32, Corrupt> {
        self.ring.snapshot(self.ring.tail())
    }

    /// `head` as the producer last published it; [`Corrupt`] if outside the ring.
    pub(crate) fn head(&self) -> Result<u32, Corrupt> {
        self.ring.snapshot(self.ring.head())
    }

    /// Moves `tail`: the slots before it go back to the producer.
    pub(crate) fn set_tail(&mut self, tail: u32) {
        debug_assert!(tail < self.ring.size);
        self.ring.publish(self.ring.tail(), tail);
    }

    /// The slots of the ring.
    pub(crate) fn size(&self) -> u32 {
        self.ring.size
    }

    /// `kwq->count`: the consumer's cached number of posted WQEs.
    pub(crate) fn count(&self) -> u32 {
        // SAFETY: `count` is only touched under `c_lock`, held.
        unsafe { (*self.ring.kwq).count }
    }

    fn set_count(&mut self, count: u32) {
        // SAFETY: `count` is only touched under `c_lock`, held.
        unsafe { (*self.ring.kwq).count = count };
    }

    /// Reads `head` again and recounts the WQEs from `tail`.
    pub(crate) fn recount(&mut self, tail: u32) -> Result<u32, Corrupt> {
        let count = rq_count(self.ring.size, self.head()?, tail);
        self.set_count(count);
        Ok(count)
    }

    /// The WQE in slot `n`.
    ///
    /// # Safety
    ///
    /// `n < self.size()`.
    pub(crate) unsafe fn wqe(&self, n: u32) -> Rwqe {
        // SAFETY: the caller guarantees `n` is a slot; each field is read once.
        unsafe {
            let slot = self.ring.slot(n);
            Rwqe {
                slot,
                wr_id: ptr::read_volatile(&raw const (*slot).wr_id),
                num_sge: ptr::read_volatile(&raw const (*slot).num_sge),
                max_sge: self.ring.max_sge,
            }
        }
    }

    /// Takes the WQE at `tail`, if there is one: C's count, read and advance of
    /// `rvt_get_rwqe()`. The count is decremented with the tail, so it never overstates what
    /// is left (C only decrements after a good WQE, leaving it one high after a bad one).
    pub(crate) fn take(&mut self) -> Result<Option<Rwqe>, Corrupt> {
        let tail = self.tail()?;
        if self.count() < COUNT_THRESHOLD {
            self.recount(tail)?;
        }
        if self.count() == 0 {
            return Ok(None);
        }
        // SAFETY: `tail` was checked against the size.
        let wqe = unsafe { self.wqe(tail) };
        self.set_tail(next_index(self.ring.size, tail));
        self.set_count(self.count() - 1);
        Ok(Some(wqe))
    }

    /// The SRQ's `limit` (protected by `c_lock`); `None` for a QP's queue.
    pub(crate) fn limit(&self) -> Option<u32> {
        // SAFETY: `limit` is the SRQ's (type invariant of `Rq`), protected by `c_lock`, held.
        (!self.limit.is_null()).then(|| unsafe { *self.limit })
    }

    /// Sets the SRQ's `limit` (0 disarms it). Does nothing for a QP's queue.
    pub(crate) fn set_limit(&mut self, limit: u32) {
        if !self.limit.is_null() {
            // SAFETY: as in `limit`.
            unsafe { *self.limit = limit };
        }
    }
}

/// Both sides held (`rq.lock`, `p_lock`, `c_lock`), for replacing the ring. Fields drop in
/// declaration order: `c_lock`, `p_lock`, then `rq.lock`.
pub(crate) struct Both<'a> {
    /// The consumer side, for reading what is queued.
    pub(crate) consumer: Consumer<'a>,
    _p: Guard<'a, (), SpinLockIrqBackend>,
    _shape: Option<Guard<'a, (), SpinLockIrqBackend>>,
    rq: *mut bindings::rvt_rq,
}

impl Both<'_> {
    /// Swaps the ring for `new`'s (whose WQEs `new_head` slots from 0 hold), and gives back
    /// the old one in `new`, to be freed by the caller once the locks are dropped (its locks
    /// are the ones held).
    ///
    /// # Safety
    ///
    /// `new` is a private queue set up by `krwq::alloc` with the same `max_sge`, `size` set,
    /// and `new_head < new.size`.
    pub(crate) unsafe fn replace(&mut self, new: &mut bindings::rvt_rq, new_head: u32) {
        // SAFETY: all three locks are held, so nobody else reads the shape or the indices;
        // `new` is private to the caller.
        unsafe {
            let fresh = Ring {
                kwq: new.kwq,
                wq: new.wq,
                slots: (*new.kwq).curr_wq.cast(),
                size: new.size,
                max_sge: new.max_sge,
            };
            fresh.publish(fresh.head(), new_head);
            fresh.publish(fresh.tail(), 0);
            core::mem::swap(&mut (*self.rq).kwq, &mut new.kwq);
            core::mem::swap(&mut (*self.rq).wq, &mut new.wq);
            core::mem::swap(&mut (*self.rq).size, &mut new.size);
        }
    }

    /// Copies the WQEs between `tail` and `head` into slots 0.. of `tmp`, in order; their
    /// number. Fails if an index or a WQE's SGE count is corrupt (C copies as many SGEs as a
    /// user WQE claims, past its slot), or if they do not fit.
    ///
    /// # Safety
    ///
    /// `tmp` is a queue set up by `krwq::alloc` that nobody else uses, with `size` set and
    /// the same `max_sge` as this one.
    pub(crate) unsafe fn copy_queued(&self, tmp: &bindings::rvt_rq) -> Result<u32, CopyError> {
        let c = &self.consumer;
        let head = c.head().map_err(|_| CopyError::Corrupt)?;
        let mut tail = c.tail().map_err(|_| CopyError::Corrupt)?;
        let n = rq_count(c.size(), head, tail);
        if tmp.size <= n {
            return Err(CopyError::TooSmall);
        }
        let mut i = 0;
        while tail != head {
            // SAFETY: `tail` is a checked index and stays one through `next_index`.
            let wqe = unsafe { c.wqe(tail) };
            let num_sge = wqe.num_sge().map_err(|_| CopyError::Corrupt)?;
            // SAFETY: `i < n < tmp.size`; the caller guarantees the rest.
            unsafe { copy_into(tmp, i, &wqe, num_sge) };
            i += 1;
            tail = next_index(c.size(), tail);
        }
        Ok(n)
    }
}

/// Why [`Both::copy_queued`] failed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum CopyError {
    /// A user ring's index or a WQE's SGE count is out of range.
    Corrupt,
    /// The queued WQEs do not fit the new ring.
    TooSmall,
}

/// Copies `wqe` (whose `num_sge` the caller checked) into slot `n` of the private queue `rq`.
///
/// # Safety
///
/// `rq` is a queue set up by `krwq::alloc` that nobody else uses, `n < rq.size`, the ring
/// `wqe` lives in is alive and `num_sge <= rq.max_sge`.
unsafe fn copy_into(rq: &bindings::rvt_rq, n: u32, wqe: &Rwqe, num_sge: u8) {
    // SAFETY: the caller's guarantees; the slot has room for `max_sge` SGEs.
    unsafe {
        let ring = Ring {
            kwq: rq.kwq,
            wq: rq.wq,
            slots: (*rq.kwq).curr_wq.cast(),
            size: rq.size,
            max_sge: rq.max_sge,
        };
        let d = ring.slot(n);
        ptr::write_volatile(&raw mut (*d).wr_id, wqe.wr_id);
        ptr::write_volatile(&raw mut (*d).num_sge, num_sge);
        for i in 0..num_sge {
            let s = wqe.sge(i);
            let sge = bindings::rvt_wqe_sge {
                addr: s.addr,
                length: s.length,
                lkey: s.lkey,
            };
            ptr::write_volatile((*d).sg_list.as_mut_ptr().add(usize::from(i)), sge);
        }
    }
}
