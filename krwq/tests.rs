// SPDX-License-Identifier: GPL-2.0-only

//! The rdmavt_rs_krwq KUnit suite: the ring's two sides on kernel and (hostile) user rings,
//! the SRQ resize copy, and a producer and a consumer running at once on two CPUs.

mod suite {
    use crate::compat::kunit::{assert, assert_eq};
    use core::ffi::c_void;

    use kernel::{ffi::c_int, prelude::*, types::Opaque};

    use crate::compat::atomic::{Atomic, Relaxed};

    use crate::{
        bindings,
        krwq::{
            self,
            ring::{rq_count, CopyError, Corrupt, PostError, Rq, COUNT_THRESHOLD},
        },
    };

    /// A receive queue of its own, as a QP's: freed on drop.
    struct TestRq(*mut bindings::rvt_rq);

    impl TestRq {
        fn new(size: u32, max_sge: u8, user: bool) -> Self {
            // SAFETY: all zeroes is a valid, empty `rvt_rq`.
            let rq: bindings::rvt_rq = unsafe { core::mem::zeroed() };
            let rq = KBox::into_raw(KBox::new(rq, GFP_KERNEL).expect("alloc"));
            let bytes = krwq::ring::rwqe_size(u32::from(max_sge)) * size as usize;
            // SAFETY: `rq` is the fresh, zeroed queue above, ours alone.
            unsafe {
                (*rq).size = size;
                (*rq).max_sge = max_sge;
                krwq::alloc(rq, bytes as u32, -1, user).expect("alloc rq");
            }
            Self(rq)
        }

        fn rq(&self) -> Rq<'_> {
            // SAFETY: set up by `alloc` in `new`, alive as long as `self`.
            unsafe { Rq::of_qp(self.0) }
        }

        /// The user ring's `head` and `tail`, which user space may write at will.
        fn user_indices(&self) -> (*mut u32, *mut u32) {
            // SAFETY: a user ring allocated in `new`.
            unsafe {
                (
                    &raw mut (*(*self.0).wq).head.val,
                    &raw mut (*(*self.0).wq).tail.val,
                )
            }
        }
    }

    impl Drop for TestRq {
        fn drop(&mut self) {
            // SAFETY: ours alone, set up by `alloc`.
            unsafe {
                krwq::free(self.0);
                drop(KBox::from_raw(self.0));
            }
        }
    }

    /// Posts a WR with `num_sge` SGEs whose addresses encode `wr_id`.
    fn post(rq: Rq<'_>, wr_id: u64, num_sge: i32) -> Result<(), c_int> {
        let mut sges = [bindings::ib_sge {
            addr: wr_id * 2,
            length: 8,
            lkey: 7,
        }; 4];
        let wr = bindings::ib_recv_wr {
            next: core::ptr::null_mut(),
            __bindgen_anon_1: bindings::ib_recv_wr__bindgen_ty_1 { wr_id },
            sg_list: sges.as_mut_ptr(),
            num_sge,
        };
        // SAFETY: a single valid WR with `num_sge` (at most 4, or rejected) SGEs.
        unsafe { krwq::post(rq, &wr, None) }.map_err(|(e, bad)| {
            assert_eq!(bad, &raw const wr);
            e.to_errno()
        })
    }

    /// A WQE taken off: its `wr_id` and checked `num_sge`.
    type Taken = (u64, Result<u8, Corrupt>);

    /// Takes the next WQE.
    fn take(rq: Rq<'_>) -> Result<Option<Taken>, Corrupt> {
        let mut c = rq.consumer();
        Ok(c.take()?.map(|w| (w.wr_id, w.num_sge())))
    }

    fn empty() {
        let q = TestRq::new(4, 2, false);
        assert_eq!(take(q.rq()), Ok(None));
        assert_eq!(q.rq().consumer().count(), 0);
        assert!(q.rq().producer().reserve().is_ok());
    }

    fn full_and_bad_sge_count() {
        let q = TestRq::new(4, 2, false);
        for i in 0..3 {
            assert_eq!(post(q.rq(), i, 1), Ok(()));
        }
        // One slot always stays free: C's -ENOMEM.
        assert_eq!(post(q.rq(), 3, 1), Err(ENOMEM.to_errno()));
        assert_eq!(q.rq().producer().reserve().err(), Some(PostError::Full));
        // More SGEs than max_sge, or a negative count: -EINVAL, before the ring is looked at.
        assert_eq!(post(q.rq(), 4, 3), Err(EINVAL.to_errno()));
        assert_eq!(post(q.rq(), 4, -1), Err(EINVAL.to_errno()));
        assert_eq!(take(q.rq()), Ok(Some((0, Ok(1)))));
        assert_eq!(post(q.rq(), 3, 2), Ok(()));
    }

    fn wrap_around_keeps_order() {
        let q = TestRq::new(4, 1, false);
        let mut next_post = 0;
        let mut next_take = 0;
        for _ in 0..10 {
            for _ in 0..2 {
                assert_eq!(post(q.rq(), next_post, 1), Ok(()));
                next_post += 1;
            }
            for _ in 0..2 {
                assert_eq!(take(q.rq()), Ok(Some((next_take, Ok(1)))));
                next_take += 1;
            }
        }
        assert_eq!(take(q.rq()), Ok(None));
    }

    fn count_as_c() {
        assert_eq!(rq_count(8, 6, 2), 4);
        assert_eq!(rq_count(8, 2, 6), 4);
        assert_eq!(rq_count(8, 3, 3), 0);
        assert_eq!(rq_count(8, 0, 7), 1);
        let q = TestRq::new(32, 1, false);
        for i in 0..20 {
            assert_eq!(post(q.rq(), i, 1), Ok(()));
        }
        assert!(take(q.rq()).unwrap().is_some());
        assert_eq!(q.rq().consumer().count(), 19);
        // At or above the threshold the cached count is trusted, as in C: new posts are only
        // seen once it drops below.
        for i in 20..25 {
            assert_eq!(post(q.rq(), i, 1), Ok(()));
        }
        assert!(take(q.rq()).unwrap().is_some());
        assert_eq!(q.rq().consumer().count(), 18);
        {
            // The ring holds 23 WQEs, the cached count says 18: the 5 new ones are unseen,
            // and the count is still at or above the threshold, so the next take trusts it.
            let c = q.rq().consumer();
            assert_eq!(rq_count(c.size(), c.head().unwrap(), c.tail().unwrap()), 23);
            assert!(c.count() >= COUNT_THRESHOLD);
        }
        for i in 2..25 {
            assert_eq!(take(q.rq()).unwrap().map(|(id, _)| id), Some(i));
        }
        assert_eq!(take(q.rq()), Ok(None));
        assert_eq!(q.rq().consumer().count(), 0);
    }

    fn hostile_user_indices() {
        let q = TestRq::new(4, 1, true);
        let (head, tail) = q.user_indices();
        assert_eq!(post(q.rq(), 1, 1), Ok(()));
        for bad in [4, 5, u32::MAX] {
            // SAFETY: user space may write anything there; so does this test.
            unsafe { head.write_volatile(bad) };
            assert_eq!(take(q.rq()), Err(Corrupt));
            assert_eq!(q.rq().producer().reserve().err(), Some(PostError::Corrupt));
            assert_eq!(post(q.rq(), 2, 1), Err(EINVAL.to_errno()));
        }
        // SAFETY: as above.
        unsafe {
            head.write_volatile(1);
            tail.write_volatile(77);
        }
        assert_eq!(take(q.rq()), Err(Corrupt));
        // SAFETY: as above.
        unsafe { tail.write_volatile(0) };
        assert_eq!(take(q.rq()), Ok(Some((1, Ok(1)))));
    }

    /// The credit an RC ACK advertises counts the indices the two sides move: the mmap'ed
    /// ring's for a user queue, even without mmap info, where the C rdmavt and (once) our
    /// `rvt_compute_aeth` read the kernel ring's, which nothing moves.
    fn posted_unlocked_counts_the_ring_in_use() {
        for user in [false, true] {
            let q = TestRq::new(8, 1, user);
            assert_eq!(q.rq().posted_unlocked(), 0);
            for i in 0..3 {
                assert_eq!(post(q.rq(), i, 1), Ok(()));
            }
            assert_eq!(q.rq().posted_unlocked(), 3);
            assert_eq!(take(q.rq()), Ok(Some((0, Ok(1)))));
            // The consumer's cached count, as C reads it first.
            assert_eq!(q.rq().posted_unlocked(), 2);
        }
        let q = TestRq::new(8, 1, true);
        let (head, tail) = q.user_indices();
        // SAFETY: user space may write anything there; so does this test.
        unsafe {
            head.write_volatile(u32::MAX);
            tail.write_volatile(6);
        }
        // A hostile index counts as 0, as in C: from tail 6 to head 0 are 2 WQEs.
        assert_eq!(q.rq().posted_unlocked(), 2);
    }

    fn hostile_user_num_sge() {
        let q = TestRq::new(4, 2, true);
        assert_eq!(post(q.rq(), 9, 2), Ok(()));
        // SAFETY: slot 0 of the user ring; user space may write its `num_sge` at will.
        unsafe { (*(*(*q.0).kwq).curr_wq).num_sge = 200 };
        // The WQE is consumed but its SGEs are never read: rvt_get_rwqe() fails it.
        assert_eq!(take(q.rq()), Ok(Some((9, Err(Corrupt)))));
        assert_eq!(post(q.rq(), 10, 2), Ok(()));
        // SAFETY: as above, slot 1.
        unsafe {
            let slot = (*(*q.0).kwq)
                .curr_wq
                .cast::<u8>()
                .add(krwq::ring::rwqe_size(2));
            (*slot.cast::<bindings::rvt_rwqe>()).num_sge = 3;
        }
        let tmp = TestRq::new(8, 2, true);
        // SAFETY: `tmp` is private, with the same `max_sge`.
        let copied = unsafe { q.rq().both().copy_queued(&*tmp.0) };
        assert_eq!(copied, Err(CopyError::Corrupt));
    }

    fn resize_copy_keeps_order() {
        let q = TestRq::new(4, 2, false);
        // Make the queued WQEs wrap around the end of the old ring.
        for i in 0..2 {
            assert_eq!(post(q.rq(), i, 1), Ok(()));
            assert!(take(q.rq()).unwrap().is_some());
        }
        for i in 10..13 {
            assert_eq!(post(q.rq(), i, 2), Ok(()));
        }
        let small = TestRq::new(3, 2, false);
        // SAFETY: `small` is private, with the same `max_sge`.
        let copied = unsafe { q.rq().both().copy_queued(&*small.0) };
        assert_eq!(copied, Err(CopyError::TooSmall));
        let tmp = TestRq::new(8, 2, false);
        {
            let mut both = q.rq().both();
            // SAFETY: `tmp` is private, with the same `max_sge`; `n < 8`.
            unsafe {
                let n = both.copy_queued(&*tmp.0).expect("copy");
                assert_eq!(n, 3);
                both.replace(&mut *tmp.0, n);
            }
        }
        assert_eq!(q.rq().size(), 8);
        for i in 10..13 {
            assert_eq!(take(q.rq()), Ok(Some((i, Ok(2)))));
        }
        for i in 0..7 {
            assert_eq!(post(q.rq(), i, 1), Ok(()));
        }
        assert_eq!(post(q.rq(), 7, 1), Err(ENOMEM.to_errno()));
    }

    /// What the two threads of `producer_and_consumer_on_two_cpus` share.
    struct Shared {
        rq: *mut bindings::rvt_rq,
        n: u64,
        bad: Atomic<u32>,
        stop: Atomic<u32>,
        done: [Opaque<bindings::completion>; 2],
    }

    /// Ends a test thread: completes `done` and exits without returning into module text.
    fn finish(done: &Opaque<bindings::completion>) -> ! {
        // SAFETY: an initialised completion that the test waits on.
        unsafe { bindings::rdmavt_rs_kthread_complete_and_exit(done.get()) }
    }

    /// Posts `n` WQEs, waiting whenever the ring is full.
    ///
    /// # Safety
    ///
    /// `data` is the test's `Shared`, alive until the thread completes.
    unsafe extern "C" fn producer(data: *mut c_void) -> c_int {
        // SAFETY: the test passes its `Shared`, alive until both threads completed.
        let s = unsafe { &*data.cast::<Shared>() };
        // SAFETY: the test's queue, alive as long as `s`.
        let rq = unsafe { Rq::of_qp(s.rq) };
        let mut i = 0;
        while i < s.n && s.stop.load(Relaxed) == 0 {
            match post(rq, i, 1 + (i % 2) as i32) {
                Ok(()) => i += 1,
                // SAFETY: a plain scheduling point.
                Err(e) if e == ENOMEM.to_errno() => unsafe { bindings::rdmavt_rs_cond_resched() },
                Err(_) => {
                    s.bad.store(1, Relaxed);
                    s.stop.store(1, Relaxed);
                }
            }
        }
        finish(&s.done[0])
    }

    /// Takes `n` WQEs, checking each, waiting whenever the ring is empty.
    ///
    /// # Safety
    ///
    /// As [`producer`].
    unsafe extern "C" fn consumer(data: *mut c_void) -> c_int {
        // SAFETY: as in `producer`.
        let s = unsafe { &*data.cast::<Shared>() };
        // SAFETY: as in `producer`.
        let rq = unsafe { Rq::of_qp(s.rq) };
        let mut got = 0;
        while got < s.n && s.stop.load(Relaxed) == 0 {
            let mut c = rq.consumer();
            match c.take() {
                Ok(Some(w)) => {
                    let want_sges = 1 + (got % 2) as u8;
                    let sge_ok = |i| {
                        // SAFETY: `c` is held and the count was checked to be `want_sges`.
                        unsafe { w.sge(i) }.addr == got * 2
                    };
                    let ok = w.wr_id == got
                        && w.num_sge() == Ok(want_sges)
                        && (0..want_sges).all(sge_ok);
                    if !ok {
                        s.bad.store(1, Relaxed);
                        s.stop.store(1, Relaxed);
                    }
                    got += 1;
                }
                Ok(None) => {
                    drop(c);
                    // SAFETY: a plain scheduling point.
                    unsafe { bindings::rdmavt_rs_cond_resched() };
                }
                Err(Corrupt) => {
                    s.bad.store(1, Relaxed);
                    s.stop.store(1, Relaxed);
                }
            }
        }
        finish(&s.done[1])
    }

    /// A producer kthread on CPU 0 and a consumer kthread on CPU 1 pass 20000 WQEs through
    /// an 8-slot ring; every WQE arrives once, in order, whole (lockdep watching the locks).
    fn producer_and_consumer_on_two_cpus() {
        let q = TestRq::new(8, 2, false);
        let shared = KBox::new(
            Shared {
                rq: q.0,
                n: 20000,
                bad: Atomic::new(0),
                stop: Atomic::new(0),
                done: [Opaque::uninit(), Opaque::uninit()],
            },
            GFP_KERNEL,
        )
        .expect("alloc");
        let data = (&raw const *shared).cast_mut().cast::<c_void>();
        // SAFETY: the completions are initialised before the threads start; the threads use
        // `shared` until they complete, and the test waits for both before dropping it.
        unsafe {
            bindings::rdmavt_rs_init_completion(shared.done[0].get());
            bindings::rdmavt_rs_init_completion(shared.done[1].get());
            assert_eq!(
                bindings::rdmavt_rs_kthread_start_on(Some(consumer), data, 1),
                0
            );
            assert_eq!(
                bindings::rdmavt_rs_kthread_start_on(Some(producer), data, 0),
                0
            );
            bindings::rdmavt_rs_wait_for_completion(shared.done[0].get());
            bindings::rdmavt_rs_wait_for_completion(shared.done[1].get());
        }
        assert_eq!(shared.bad.load(Relaxed), 0);
        assert_eq!(take(q.rq()), Ok(None));
    }

    crate::compat::kunit::kunit_suite!(
        rdmavt_rs_krwq,
        [
            empty,
            full_and_bad_sge_count,
            wrap_around_keeps_order,
            count_as_c,
            hostile_user_indices,
            posted_unlocked_counts_the_ring_in_use,
            hostile_user_num_sge,
            resize_copy_keeps_order,
            producer_and_consumer_on_two_cpus,
        ]
    );
}
