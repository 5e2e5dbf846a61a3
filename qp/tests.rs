// SPDX-License-Identifier: GPL-2.0-only

//! The `rdmavt_rs_qp_post` KUnit suite: `post_send`'s checks give C's errno and `bad_wr`, and
//! the send queue wraps around, on a QP and device built in memory for the test: no driver
//! is registered, so nothing is sent (the driver callbacks are absent), and the lkey table is
//! empty (every lkey is bad).

mod suite {
    use crate::compat::kunit::{assert, assert_eq};
    use core::{mem::size_of, ptr};

    use kernel::{alloc::flags::__GFP_ZERO, ffi::c_int, prelude::*};

    use crate::{
        bindings::{self, ib_wr_opcode as Op},
        lock::spin_lock_init,
        qp::{
            post_send,
            qpn::{hash_32, table_bits},
            send::{add_length, free_slots},
            send_wr::OPERATION_MAX,
            Qp,
        },
    };

    const SLOTS: u32 = 4;
    const MAX_SGE: u8 = 2;
    const EINVAL_: c_int = -(kernel::bindings::EINVAL as c_int);
    const ENOMEM_: c_int = -(kernel::bindings::ENOMEM as c_int);

    const fn qpt(t: bindings::ib_qp_type) -> u32 {
        1 << t.0
    }

    const fn op(length: usize, qpt_support: u32, flags: u32) -> bindings::rvt_operation_params {
        bindings::rvt_operation_params {
            length,
            qpt_support,
            flags,
        }
    }

    /// A driver's `post_parms`, as hfi1's for the opcodes it names; the others are unsupported.
    static POST_PARMS: [bindings::rvt_operation_params; OPERATION_MAX as usize] = {
        let connected = qpt(bindings::ib_qp_type::IB_QPT_RC) | qpt(bindings::ib_qp_type::IB_QPT_UC);
        let rc = qpt(bindings::ib_qp_type::IB_QPT_RC);
        let any = connected | qpt(bindings::ib_qp_type::IB_QPT_UD);
        let atomic = bindings::RVT_OPERATION_ATOMIC | bindings::RVT_OPERATION_ATOMIC_SGE;
        let mut t = [op(0, 0, 0); OPERATION_MAX as usize];
        t[Op::IB_WR_SEND.0 as usize] = op(size_of::<bindings::ib_send_wr>(), any, 0);
        t[Op::IB_WR_RDMA_READ.0 as usize] = op(
            size_of::<bindings::ib_rdma_wr>(),
            rc,
            bindings::RVT_OPERATION_ATOMIC,
        );
        t[Op::IB_WR_ATOMIC_CMP_AND_SWP.0 as usize] =
            op(size_of::<bindings::ib_atomic_wr>(), rc, atomic);
        t[Op::IB_WR_LOCAL_INV.0 as usize] = op(
            size_of::<bindings::ib_send_wr>(),
            connected,
            bindings::RVT_OPERATION_LOCAL,
        );
        t
    };

    static WC_OPCODE: [bindings::ib_wc_opcode; OPERATION_MAX as usize] =
        [bindings::ib_wc_opcode::IB_WC_SEND; OPERATION_MAX as usize];

    /// A zeroed C struct on the heap.
    fn zeroed_box<T>() -> Result<KBox<T>> {
        let b = KBox::<T>::new_uninit(GFP_KERNEL | __GFP_ZERO)?;
        // SAFETY: only used for the C structs of this suite, for which all-zero is valid
        // (integers, null pointers, unlocked locks initialised before use, padding).
        Ok(unsafe { b.assume_init() })
    }

    /// A device, a PD and an RC QP in RTS with `SLOTS` send slots of `MAX_SGE` SGEs, wired
    /// together as `create_qp` would, in memory that lives as long as the fixture.
    struct Fixture {
        rdi: KBox<bindings::rvt_dev_info>,
        pd: KBox<bindings::rvt_pd>,
        qp: KBox<bindings::rvt_qp>,
        lkeys: KBox<[*mut bindings::rvt_mregion; 2]>,
        swq: KVec<u64>,
    }

    impl Fixture {
        fn new() -> Result<Self> {
            let stride = size_of::<bindings::rvt_swqe>()
                + usize::from(MAX_SGE) * size_of::<bindings::rvt_sge>();
            let words = (stride * SLOTS as usize).div_ceil(size_of::<u64>());
            let swq = KVec::from_elem(0u64, words, GFP_KERNEL)?;
            let mut f = Fixture {
                rdi: zeroed_box()?,
                pd: zeroed_box()?,
                qp: zeroed_box()?,
                lkeys: KBox::new([ptr::null_mut(); 2], GFP_KERNEL)?,
                swq,
            };
            let rdi = &mut *f.rdi;
            rdi.post_parms = POST_PARMS.as_ptr();
            rdi.wc_opcode = WC_OPCODE.as_ptr();
            // One index bit: every key's slot is one of the two empty ones.
            rdi.lkey_table.max = 2;
            rdi.lkey_table.shift = 31;
            rdi.lkey_table.table = f.lkeys.as_mut_ptr();
            let qp = &raw mut *f.qp;
            // SAFETY: the fixture owns all of this memory; the QP is nobody else's.
            unsafe {
                spin_lock_init!(&raw mut (*qp).r_lock, c"test r_lock");
                spin_lock_init!(&raw mut (*qp).s_hlock, c"test s_hlock");
                spin_lock_init!(&raw mut (*qp).s_lock, c"test s_lock");
                (*qp).ibqp.device = &raw mut f.rdi.ibdev;
                f.pd.ibpd.device = &raw mut f.rdi.ibdev;
                (*qp).ibqp.pd = &raw mut f.pd.ibpd;
                (*qp).ibqp.qp_type = bindings::ib_qp_type::IB_QPT_RC;
                (*qp).allowed_ops = bindings::IB_OPCODE_RC as u8;
                (*qp).state = bindings::ib_qp_state::IB_QPS_RTS.0 as u8;
                (*qp).s_wq = f.swq.as_mut_ptr().cast();
                (*qp).s_size = SLOTS;
                (*qp).s_avail = SLOTS - 1;
                (*qp).s_max_sge = MAX_SGE;
                (*qp).s_ssn = 1;
                (*qp).s_flags = bindings::RVT_S_SIGNAL_REQ_WR;
                (*qp).log_pmtu = 12;
            }
            Ok(f)
        }

        fn raw(&mut self) -> *mut bindings::rvt_qp {
            &raw mut *self.qp
        }

        fn qp(&mut self) -> &Qp {
            // SAFETY: set up as `create_qp` would (locks initialised), alive as long as `self`.
            unsafe { Qp::from_raw(self.raw()) }
        }

        /// `post_send` on a list; returns the errno and the index of `bad_wr` in the list.
        fn post(&mut self, wrs: &mut [bindings::ib_send_wr]) -> (c_int, Option<usize>) {
            for i in 1..wrs.len() {
                let next = &raw mut wrs[i];
                wrs[i - 1].next = next;
            }
            let mut bad: *const bindings::ib_send_wr = ptr::null();
            let ibqp = self.raw().cast::<bindings::ib_qp>();
            // SAFETY: a QP of our making, a valid list of plain send requests in kernel memory.
            let ret = unsafe { post_send(ibqp, wrs.as_ptr(), &mut bad) };
            (ret, wrs.iter().position(|w| ptr::eq(w, bad)))
        }

        fn head(&mut self) -> u32 {
            // SAFETY: a field of the fixture's QP, which no other thread uses.
            unsafe { (*self.raw()).s_head }
        }

        /// The WQE in slot `n`.
        fn slot(&mut self, n: u32) -> &bindings::rvt_swqe {
            // SAFETY: `n` is a slot of the fixture's queue.
            unsafe { &*Qp::from_raw(self.raw()).swqe(n) }
        }

        /// Completes the WQE at `s_last` successfully, as a driver's send engine does.
        fn complete_one(&mut self) {
            let qp = self.qp();
            let mut s = qp.s_lock();
            // SAFETY: `s_last` is a slot the test posted and nothing else uses; `s_lock` is
            // held.
            unsafe {
                let wqe = s.swqe(s.s_last());
                qp.send_complete(&mut s, None, wqe, bindings::ib_wc_status::IB_WC_SUCCESS);
            }
        }
    }

    /// A SEND with the given SGEs (which must outlive the post), unsignaled.
    fn wr(opcode: Op, sges: &mut [bindings::ib_sge], wr_id: u64) -> bindings::ib_send_wr {
        // SAFETY: all-zero is a valid request (null pointers, integers, opcode 0).
        let mut w: bindings::ib_send_wr = unsafe { core::mem::zeroed() };
        w.opcode = opcode;
        w.sg_list = sges.as_mut_ptr();
        w.num_sge = sges.len() as c_int;
        w.__bindgen_anon_1.wr_id = wr_id;
        w
    }

    fn sge(addr: u64, length: u32, lkey: u32) -> bindings::ib_sge {
        bindings::ib_sge { addr, length, lkey }
    }

    fn bad_opcode() -> Result {
        let mut f = Fixture::new()?;
        // Beyond the table, unsupported by the driver, not for this QP type.
        for opcode in [Op(OPERATION_MAX), Op(0xff), Op::IB_WR_LSO] {
            assert_eq!(f.post(&mut [wr(opcode, &mut [], 1)]), (EINVAL_, Some(0)));
        }
        // SAFETY: the fixture's QP, used by nobody else.
        unsafe { (*f.raw()).ibqp.qp_type = bindings::ib_qp_type::IB_QPT_UC };
        assert_eq!(
            f.post(&mut [wr(Op::IB_WR_RDMA_READ, &mut [], 1)]),
            (EINVAL_, Some(0))
        );
        assert_eq!(f.head(), 0);
        Ok(())
    }

    fn too_many_sges() -> Result {
        let mut f = Fixture::new()?;
        // Zero-length SGEs are skipped before any lkey check: only the count can fail.
        let mut sges = [sge(0, 0, 0); MAX_SGE as usize + 1];
        assert_eq!(
            f.post(&mut [wr(Op::IB_WR_SEND, &mut sges, 1)]),
            (EINVAL_, Some(0))
        );
        let mut w = wr(Op::IB_WR_SEND, &mut [], 1);
        // C lets a negative count through; rdmavt-rs refuses it.
        w.num_sge = -1;
        assert_eq!(f.post(&mut [w]), (EINVAL_, Some(0)));
        assert_eq!(
            f.post(&mut [wr(Op::IB_WR_SEND, &mut sges[..MAX_SGE as usize], 1)]),
            (0, None)
        );
        assert_eq!(f.head(), 1);
        Ok(())
    }

    fn bad_lkey() -> Result {
        let mut f = Fixture::new()?;
        // An unknown key, and key 0 (the DMA MR) on a device without one.
        for lkey in [0x8000_0100, 0] {
            let mut sges = [sge(0x1000, 64, lkey)];
            assert_eq!(
                f.post(&mut [wr(Op::IB_WR_SEND, &mut sges, 1)]),
                (EINVAL_, Some(0))
            );
        }
        // No slot was taken.
        assert_eq!(f.head(), 0);
        // SAFETY: the fixture's QP, used by nobody else.
        assert_eq!(unsafe { (*f.raw()).s_avail }, SLOTS - 1);
        Ok(())
    }

    fn inline_is_not_special() -> Result {
        let mut f = Fixture::new()?;
        // rdmavt offers no inline data (max_inline_data is 0): an IB_SEND_INLINE request's
        // SGEs are memory references, checked like any others.
        let mut sges = [sge(0x1000, 4096, 0x8000_0100)];
        let mut w = wr(Op::IB_WR_SEND, &mut sges, 1);
        w.send_flags = bindings::ib_send_flags_IB_SEND_INLINE;
        assert_eq!(f.post(&mut [w]), (EINVAL_, Some(0)));
        Ok(())
    }

    fn atomics() -> Result {
        let mut f = Fixture::new()?;
        let cas = |s: &mut [bindings::ib_sge]| wr(Op::IB_WR_ATOMIC_CMP_AND_SWP, s, 1);
        // No RDMA read/atomic credit on the QP.
        assert_eq!(
            f.post(&mut [cas(&mut [sge(0x1000, 8, 1)])]),
            (EINVAL_, Some(0))
        );
        // SAFETY: the fixture's QP, used by nobody else.
        unsafe { (*f.raw()).s_max_rd_atomic = 1 };
        // The result SGE: missing, too short, misaligned.
        assert_eq!(f.post(&mut [cas(&mut [])]), (EINVAL_, Some(0)));
        assert_eq!(
            f.post(&mut [cas(&mut [sge(0x1000, 4, 1)])]),
            (EINVAL_, Some(0))
        );
        assert_eq!(
            f.post(&mut [cas(&mut [sge(0x1004, 8, 1)])]),
            (EINVAL_, Some(0))
        );
        assert_eq!(f.head(), 0);
        Ok(())
    }

    fn state_and_bad_wr() -> Result {
        let mut f = Fixture::new()?;
        let mut sges = [sge(0, 0, 0); MAX_SGE as usize + 1];
        let mut list = [
            wr(Op::IB_WR_SEND, &mut [], 1),
            wr(Op::IB_WR_SEND, &mut sges, 2),
            wr(Op::IB_WR_SEND, &mut [], 3),
        ];
        // The first is posted, the second is `bad_wr`, the third is not tried.
        assert_eq!(f.post(&mut list), (EINVAL_, Some(1)));
        assert_eq!(f.head(), 1);
        // SAFETY: the fixture's QP, used by nobody else.
        unsafe { (*f.raw()).state = bindings::ib_qp_state::IB_QPS_INIT.0 as u8 };
        // A state that takes no sends fails the list and, as C, sets no `bad_wr`.
        assert_eq!(
            f.post(&mut [wr(Op::IB_WR_SEND, &mut [], 4)]),
            (EINVAL_, None)
        );
        // SAFETY: as above.
        unsafe { (*f.raw()).state = bindings::ib_qp_state::IB_QPS_ERR.0 as u8 };
        // The error state takes sends: the send engine flushes them.
        assert_eq!(f.post(&mut [wr(Op::IB_WR_SEND, &mut [], 5)]), (0, None));
        Ok(())
    }

    fn ud_address_handle() -> Result {
        let mut f = Fixture::new()?;
        let mut other_pd = zeroed_box::<bindings::ib_pd>()?;
        let mut ah = zeroed_box::<bindings::ib_ah>()?;
        ah.pd = &raw mut *other_pd;
        // SAFETY: the fixture's QP, used by nobody else.
        unsafe { (*f.raw()).ibqp.qp_type = bindings::ib_qp_type::IB_QPT_UD };
        // SAFETY: all-zero is a valid `ib_ud_wr`.
        let mut ud: bindings::ib_ud_wr = unsafe { core::mem::zeroed() };
        ud.wr = wr(Op::IB_WR_SEND, &mut [], 1);
        let ibqp = f.raw().cast::<bindings::ib_qp>();
        let mut bad: *const bindings::ib_send_wr = ptr::null();
        // No AH (C dereferences it), then an AH of another PD.
        for ah in [ptr::null_mut(), &raw mut *ah] {
            ud.ah = ah;
            // SAFETY: a QP of our making and a valid UD request.
            assert_eq!(unsafe { post_send(ibqp, &ud.wr, &mut bad) }, EINVAL_);
            assert!(ptr::eq(bad, &ud.wr));
        }
        Ok(())
    }

    fn local_invalidate() -> Result {
        let mut f = Fixture::new()?;
        let mut inv = wr(Op::IB_WR_LOCAL_INV, &mut [], 1);
        // Carried out at post time: key 0 and unknown keys are refused.
        for key in [0, 0x8000_0100] {
            inv.ex.invalidate_rkey = key;
            assert_eq!(f.post(&mut [inv]), (EINVAL_, Some(0)));
        }
        // Behind a fence it waits for the send engine: queued, counted, not checked yet.
        inv.send_flags = bindings::ib_send_flags_IB_SEND_FENCE;
        assert_eq!(f.post(&mut [inv]), (0, None));
        assert_eq!(f.head(), 1);
        // SAFETY: the fixture's QP, used by nobody else.
        assert_eq!(unsafe { (*f.raw()).local_ops_pending.counter }, 1);
        assert_eq!(f.slot(0).ssn, 0);
        Ok(())
    }

    fn ring_wraps() -> Result {
        let mut f = Fixture::new()?;
        for id in 1..u64::from(SLOTS) {
            assert_eq!(f.post(&mut [wr(Op::IB_WR_SEND, &mut [], id)]), (0, None));
        }
        // One slot always stays empty.
        assert_eq!(
            f.post(&mut [wr(Op::IB_WR_SEND, &mut [], 9)]),
            (ENOMEM_, Some(0))
        );
        assert_eq!(f.head(), SLOTS - 1);
        f.complete_one();
        f.complete_one();
        // Two slots free again: the head wraps past the end.
        let mut list = [
            wr(Op::IB_WR_SEND, &mut [], 4),
            wr(Op::IB_WR_SEND, &mut [], 5),
        ];
        assert_eq!(f.post(&mut list), (0, None));
        assert_eq!(f.head(), 1);
        // SAFETY: the `wr_id` of a posted SEND is its union member in use.
        let id = |w: &bindings::rvt_swqe| unsafe { w.__bindgen_anon_1.wr.__bindgen_anon_1.wr_id };
        assert_eq!((id(f.slot(3)), f.slot(3).ssn), (4, 4));
        assert_eq!((id(f.slot(0)), f.slot(0).ssn), (5, 5));
        assert_eq!(
            f.post(&mut [wr(Op::IB_WR_SEND, &mut [], 6)]),
            (ENOMEM_, Some(0))
        );
        // SAFETY: the fixture's QP, used by nobody else.
        assert_eq!(unsafe { (*f.raw()).s_last }, 2);
        Ok(())
    }

    fn free_slot_arithmetic() {
        // Empty ring of 4: 3 usable; with 1 reserved slot unused, 2.
        assert_eq!(free_slots(0, 0, 4, 0, 0), Some(3));
        assert_eq!(free_slots(0, 0, 5, 1, 0), Some(3));
        assert_eq!(free_slots(1, 0, 5, 1, 1), Some(3));
        // Wrapped: head behind last.
        assert_eq!(free_slots(1, 2, 4, 0, 0), None);
        assert_eq!(free_slots(1, 3, 4, 0, 0), Some(1));
        // Full.
        assert_eq!(free_slots(3, 0, 4, 0, 0), None);
    }

    fn length_wrap() {
        assert_eq!(add_length(1, u32::MAX - 1).ok(), Some(u32::MAX));
        assert!(add_length(2, u32::MAX - 1).is_err());
    }

    /// The bit operations of `r_aflags` and the QPN bitmap: each bit in its own word of the
    /// bitmap, the others left alone, and the old value reported.
    fn atomic_bitops() {
        use crate::compat::atomic::bitops::{
            clear_bit, set_bit, test_and_clear_bit, test_and_set_bit,
        };
        const BITS: usize = usize::BITS as usize;
        let mut map = [0usize; 3];
        let m = map.as_mut_ptr();
        // SAFETY: `map` holds the bits used below, and nothing else accesses it.
        unsafe {
            set_bit(0, m);
            set_bit(BITS + 5, m);
            assert!(!test_and_set_bit(3 * BITS - 1, m));
            assert!(test_and_set_bit(3 * BITS - 1, m));
        }
        assert_eq!(map, [1, 1 << 5, 1 << (BITS - 1)]);
        let m = map.as_mut_ptr();
        // SAFETY: as above.
        unsafe {
            assert!(test_and_clear_bit(BITS + 5, m));
            assert!(!test_and_clear_bit(BITS + 5, m));
            clear_bit(0, m);
            clear_bit(1, m);
        }
        assert_eq!(map, [0, 0, 1 << (BITS - 1)]);
    }

    /// The QPN hash table's shape and hash: fewer than two buckets refused, the rest rounded
    /// down to a power of two, and every hash a bucket of the table, as the kernel's
    /// `hash_32()` computes it.
    fn qpn_hash() {
        assert!(table_bits(0).is_err());
        assert!(table_bits(1).is_err());
        assert_eq!(table_bits(2).ok(), Some(1));
        assert_eq!(table_bits(256).ok(), Some(8));
        assert_eq!(table_bits(300).ok(), Some(8));
        assert_eq!(table_bits(u32::MAX).ok(), Some(31));
        // include/linux/hash.h: (1 * GOLDEN_RATIO_32) >> 24 = 0x61.
        assert_eq!(hash_32(1, 8), 0x61);
        assert_eq!(hash_32(0, 8), 0);
        for bits in 1..=31 {
            for qpn in [2, 0x81_0000, 0xff_ffff, u32::MAX] {
                assert!(hash_32(qpn, bits) < 1 << bits);
            }
        }
    }

    crate::compat::kunit::kunit_suite!(
        rdmavt_rs_qp_post,
        [
            bad_opcode,
            too_many_sges,
            bad_lkey,
            inline_is_not_special,
            atomics,
            state_and_bad_wr,
            ud_address_handle,
            local_invalidate,
            ring_wraps,
            free_slot_arithmetic,
            length_wrap,
            atomic_bitops,
            qpn_hash,
        ]
    );
}
