// SPDX-License-Identifier: GPL-2.0-only

//! KUnit suite `rdmavt_rs_loopback`: what of the loopback runs without a device: the AETH
//! credit encoding against C's table, SGE walking and copying across SGEs, segments and
//! segment arrays, `rvt_restart_sge`.

mod suite {
    use crate::compat::kunit::{assert, assert_eq};
    use crate::loopback::{
        aeth::{cmp_msn, credit_code, Credit, CREDIT_TABLE},
        sge::{copy_run, copy_sge, rvt_restart_sge, CopyMode, Store},
    };
    use crate::{bindings, mr::SEGSZ};
    use core::mem::size_of;
    use kernel::{alloc::flags::GFP_KERNEL, page::PAGE_SIZE, prelude::*};

    /// A fake region of `segs` segments of `seg_len` bytes each, over one buffer, with lkey
    /// 1 (not the DMA region) so the cursor walks its map. No reference counting: the tests
    /// never release.
    struct FakeMr {
        buf: KVec<u8>,
        arrays: KVec<KBox<bindings::rvt_segarray>>,
        mr: KVec<u8>,
    }

    impl FakeMr {
        fn new(segs: usize, seg_len: usize) -> Result<Self> {
            let mut buf = KVec::from_elem(0u8, segs * seg_len, GFP_KERNEL)?;
            let nmaps = segs.div_ceil(SEGSZ).max(1);
            let mut arrays: KVec<KBox<bindings::rvt_segarray>> = KVec::new();
            for _ in 0..nmaps {
                let mut a = KBox::<bindings::rvt_segarray>::new_uninit(GFP_KERNEL)?;
                // SAFETY: all-zero is a valid array of (NULL, 0) segments.
                let a = unsafe {
                    a.as_mut_ptr().write_bytes(0, 1);
                    a.assume_init()
                };
                arrays.push(a, GFP_KERNEL)?;
            }
            let base = buf.as_mut_ptr();
            for i in 0..segs {
                let seg = &mut arrays[i / SEGSZ].segs[i % SEGSZ];
                // SAFETY: within `buf`.
                seg.vaddr = unsafe { base.add(i * seg_len) }.cast();
                seg.length = seg_len;
            }
            let size = size_of::<bindings::rvt_mregion>() + nmaps * size_of::<usize>();
            let mr = KVec::from_elem(0u8, size, GFP_KERNEL)?;
            let mut this = Self { buf, arrays, mr };
            let raw = this.raw();
            // SAFETY: `mr` is sized for the region and its map; all-zero is a valid region.
            unsafe {
                (*raw).lkey = 1;
                (*raw).mapsz = nmaps as u32;
                for (i, a) in this.arrays.iter_mut().enumerate() {
                    *(*raw).map.as_mut_ptr().add(i) = &mut **a;
                }
            }
            Ok(this)
        }

        fn raw(&mut self) -> *mut bindings::rvt_mregion {
            self.mr.as_mut_ptr().cast()
        }

        /// An SGE over `len` bytes from byte `off` (segment aligned).
        fn sge(&mut self, off: usize, len: u32) -> bindings::rvt_sge {
            let seg_len = self.arrays[0].segs[0].length;
            let i = off / seg_len;
            // SAFETY: all-zero is a valid SGE.
            let mut sge: bindings::rvt_sge = unsafe { core::mem::zeroed() };
            sge.mr = self.raw();
            // SAFETY: within `buf`.
            sge.vaddr = unsafe { self.buf.as_mut_ptr().add(off) }.cast();
            sge.sge_length = len;
            sge.length = (seg_len - off % seg_len) as u32;
            sge.m = (i / SEGSZ) as u16;
            sge.n = (i % SEGSZ) as u16;
            sge
        }
    }

    fn state(list: &mut [bindings::rvt_sge]) -> bindings::rvt_sge_state {
        // SAFETY: all-zero is a valid state.
        let mut ss: bindings::rvt_sge_state = unsafe { core::mem::zeroed() };
        ss.sge = list[0];
        ss.sg_list = list[1..].as_mut_ptr();
        ss.num_sge = list.len() as u8;
        ss.total_len = list.iter().map(|s| s.sge_length).sum();
        ss
    }

    fn pattern(len: usize) -> Result<KVec<u8>> {
        let mut v = KVec::new();
        for i in 0..len {
            v.push((i * 7 + 3) as u8, GFP_KERNEL)?;
        }
        Ok(v)
    }

    fn copy_across_segments_and_sges() -> Result {
        // 64-byte segments; two SGEs: 100 bytes from 0 (two segments), 50 from 192.
        let mut mr = FakeMr::new(8, 64)?;
        let mut list = [mr.sge(0, 100), mr.sge(192, 50)];
        let mut ss = state(&mut list);
        let data = pattern(150)?;
        // SAFETY: the state covers 150 bytes of `mr.buf`; `data` has 150.
        unsafe { copy_sge(&mut ss, data.as_ptr(), 150, None, false, CopyMode::Cached) };
        assert_eq!(&mr.buf[..100], &data[..100]);
        assert!(mr.buf[100..192].iter().all(|&b| b == 0));
        assert_eq!(&mr.buf[192..242], &data[100..]);
        assert!(mr.buf[242..].iter().all(|&b| b == 0));
        // The last SGE consumed: nothing left, and the count stays at 0.
        assert_eq!(ss.num_sge, 0);
        assert_eq!(ss.sge.sge_length, 0);
        Ok(())
    }

    fn copy_onto_an_overlapping_part_of_itself() -> Result {
        // An RDMA WRITE whose source and destination share memory: bytes 0..96 of a
        // one-segment region written to 32..128 of it, as memmove would (memcpy must not see
        // it). Across segments the copy runs segment by segment, in C as here.
        let mut mr = FakeMr::new(1, 128)?;
        let data = pattern(128)?;
        mr.buf.copy_from_slice(&data);
        let src = mr.buf.as_ptr();
        let mut list = [mr.sge(32, 96)];
        let mut ss = state(&mut list);
        // SAFETY: the state covers 96 bytes of `mr.buf` from 32; `src` has 128 bytes.
        unsafe { copy_sge(&mut ss, src, 96, None, false, CopyMode::Cached) };
        assert_eq!(&mr.buf[..32], &data[..32]);
        assert_eq!(&mr.buf[32..], &data[..96]);
        Ok(())
    }

    fn copy_in_pieces_with_copy_last() -> Result {
        let mut mr = FakeMr::new(4, 16)?;
        let mut list = [mr.sge(0, 60)];
        let mut ss = state(&mut list);
        let data = pattern(60)?;
        // SAFETY: as above; two calls of 27 and 33 bytes.
        unsafe {
            copy_sge(&mut ss, data.as_ptr(), 27, None, true, CopyMode::Cached);
            copy_sge(
                &mut ss,
                data.as_ptr().add(27),
                33,
                None,
                true,
                CopyMode::Cached,
            );
        }
        assert_eq!(&mr.buf[..60], &data[..]);
        assert_eq!(mr.buf[60..], [0; 4]);
        // A short copy with copy_last is all ordered bytes.
        let mut list = [mr.sge(0, 5)];
        let mut ss = state(&mut list);
        // SAFETY: as above.
        unsafe { copy_sge(&mut ss, [9u8; 5].as_ptr(), 5, None, true, CopyMode::Cached) };
        assert_eq!(mr.buf[..5], [9; 5]);
        Ok(())
    }

    fn copy_crosses_segment_arrays() -> Result {
        // One segment past the first array: the cursor moves to map[1].segs[0].
        let mut mr = FakeMr::new(SEGSZ + 1, 4)?;
        let off = (SEGSZ - 1) * 4;
        let mut list = [mr.sge(off, 8)];
        let mut ss = state(&mut list);
        // SAFETY: as above.
        unsafe {
            copy_sge(
                &mut ss,
                [1, 2, 3, 4, 5, 6, 7, 8u8].as_ptr(),
                8,
                None,
                false,
                CopyMode::Cacheless,
            )
        };
        assert_eq!(mr.buf[off..off + 8], [1, 2, 3, 4, 5, 6, 7, 8]);
        Ok(())
    }

    fn copy_ends_with_the_state() -> Result {
        let mut mr = FakeMr::new(2, 16)?;
        let mut list = [mr.sge(0, 8)];
        let mut ss = state(&mut list);
        let data = pattern(8)?;
        // SAFETY: as above: exactly the 8 bytes the state has.
        let left = unsafe {
            copy_run(
                &mut ss,
                data.as_ptr(),
                8,
                None,
                Store::Bulk(CopyMode::Cached),
            )
        };
        assert_eq!(left, 0);
        assert_eq!(ss.num_sge, 0);
        Ok(())
    }

    fn restart_skips_into_the_wqe() -> Result {
        let mut mr = FakeMr::new(8, 32)?;
        // A WQE of two SGEs (40 + 30 bytes), in 8-byte words sized for its flexible array.
        let bytes = size_of::<bindings::rvt_swqe>() + 2 * size_of::<bindings::rvt_sge>();
        let mut words = KVec::from_elem(0u64, bytes.div_ceil(8), GFP_KERNEL)?;
        let wqe: *mut bindings::rvt_swqe = words.as_mut_ptr().cast();
        let (a, b) = (mr.sge(0, 40), mr.sge(128, 30));
        // SAFETY: `words` holds a zeroed WQE with room for two SGEs.
        unsafe {
            (*wqe).__bindgen_anon_1.wr.num_sge = 2;
            (*wqe).length = 70;
            *(*wqe).sg_list.as_mut_ptr() = a;
            *(*wqe).sg_list.as_mut_ptr().add(1) = b;
        }
        // SAFETY: all-zero is a valid state.
        let mut ss: bindings::rvt_sge_state = unsafe { core::mem::zeroed() };
        // SAFETY: the WQE above; 45 bytes: all of the first SGE and 5 of the second.
        let left = unsafe { rvt_restart_sge(&mut ss, wqe, 45) };
        assert_eq!(left, 25);
        assert_eq!(ss.num_sge, 1);
        assert_eq!(ss.total_len, 70);
        assert_eq!(ss.sge.sge_length, 25);
        assert_eq!(ss.sge.length, 27);
        assert_eq!(ss.sge.vaddr, mr.buf[133..].as_mut_ptr().cast());
        // Into the second segment of the first SGE.
        // SAFETY: as above.
        let left = unsafe { rvt_restart_sge(&mut ss, wqe, 33) };
        assert_eq!(left, 37);
        assert_eq!(ss.num_sge, 2);
        assert_eq!(
            (ss.sge.m, ss.sge.n, ss.sge.length, ss.sge.sge_length),
            (0, 1, 31, 7)
        );
        assert_eq!(ss.sge.vaddr, mr.buf[33..].as_mut_ptr().cast());
        // From the start: nothing skipped.
        // SAFETY: as above.
        assert_eq!(unsafe { rvt_restart_sge(&mut ss, wqe, 0) }, 70);
        assert_eq!(ss.sge.vaddr, mr.buf.as_mut_ptr().cast());
        Ok(())
    }

    fn restart_of_a_wqe_without_sges() -> Result {
        // A zero-length SEND has no SGEs: the state starts empty instead of copying
        // `sg_list[0]`, which C reads regardless (past the queue for the last slot).
        let words = size_of::<bindings::rvt_swqe>().div_ceil(8) + 8;
        let mut words = KVec::from_elem(0u64, words, GFP_KERNEL)?;
        let wqe: *mut bindings::rvt_swqe = words.as_mut_ptr().cast();
        // SAFETY: `words` holds a zeroed WQE and room for one SGE, filled with a marker
        // that must not be copied.
        unsafe { (*(*wqe).sg_list.as_mut_ptr()).sge_length = 0xdead };
        // SAFETY: all-zero is a valid state.
        let mut ss: bindings::rvt_sge_state = unsafe { core::mem::zeroed() };
        ss.sge.sge_length = 5;
        // SAFETY: a WQE with `num_sge` 0 and length 0.
        assert_eq!(unsafe { rvt_restart_sge(&mut ss, wqe, 0) }, 0);
        assert_eq!(ss.num_sge, 0);
        assert_eq!(ss.sge.sge_length, 0);
        assert!(ss.sge.mr.is_null());
        Ok(())
    }

    fn copy_modes() {
        let page = PAGE_SIZE as u32;
        assert_eq!(
            CopyMode::for_copy(bindings::RVT_SGE_COPY_MEMCPY, page * 4),
            CopyMode::Cached
        );
        assert_eq!(
            CopyMode::for_copy(bindings::RVT_SGE_COPY_CACHELESS, page - 1),
            CopyMode::Cached
        );
        assert_eq!(
            CopyMode::for_copy(bindings::RVT_SGE_COPY_CACHELESS, page),
            CopyMode::Cacheless
        );
    }

    /// A known gap (README, "Known gaps"), not C's behaviour: C's RVT_SGE_COPY_ADAPTIVE goes
    /// cacheless once the working set of recent copies outgrows a share of the last-level
    /// cache; ours does not track it and copies cached. Update this when the gap is closed.
    fn adaptive_copies_cached_a_known_gap() {
        assert_eq!(
            CopyMode::for_copy(bindings::RVT_SGE_COPY_ADAPTIVE, PAGE_SIZE as u32 * 4),
            CopyMode::Cached
        );
    }

    /// C's binary search of rvt_compute_aeth, as written there: the reference for
    /// `credit_code`.
    fn c_credit_code(credits: u32) -> u32 {
        let (mut min, mut max) = (0u32, 31u32);
        loop {
            let x = (min + max) / 2;
            let c = u32::from(CREDIT_TABLE[x as usize]);
            if c == credits {
                return x;
            }
            if c > credits {
                max = x;
            } else {
                if min == x {
                    return x;
                }
                min = x;
            }
        }
    }

    fn credit_table_as_c() {
        // rdmavt's rc.c, codes 0x00..=0x1E.
        let c: [u16; 31] = [
            0, 1, 2, 3, 4, 6, 8, 12, 16, 24, 32, 48, 64, 96, 128, 192, 256, 384, 512, 768, 1024,
            1536, 2048, 3072, 4096, 6144, 8192, 12288, 16384, 24576, 32768,
        ];
        assert_eq!(CREDIT_TABLE, c);
        assert_eq!(bindings::IB_AETH_CREDIT_SHIFT, 24);
        assert_eq!(bindings::IB_AETH_CREDIT_INVAL, 0x1f);
        assert_eq!(bindings::IB_MSN_MASK, 0xff_ffff);
    }

    fn credit_code_as_c() {
        for credits in 0..=70_000u32 {
            assert_eq!(credit_code(credits), c_credit_code(credits));
        }
        for credits in [u32::MAX, 1 << 20, 32767, 32769] {
            assert_eq!(credit_code(credits), c_credit_code(credits));
        }
        // Never more than posted: 5 WQEs give code 4 (4 credits), 7 give 5 (6).
        assert_eq!(credit_code(5), 4);
        assert_eq!(credit_code(7), 5);
        assert_eq!(credit_code(u32::MAX), 0x1e);
    }

    fn credit_decoding() {
        let aeth = |code: u32, msn: u32| (code << 24) | msn;
        assert_eq!(Credit::of(aeth(0x1f, 5)), Credit::Unlimited);
        assert_eq!(Credit::of(aeth(0, 5)), Credit::Limit(5));
        assert_eq!(Credit::of(aeth(0x0a, 5)), Credit::Limit(37));
        // The limit wraps within 24 bits.
        assert_eq!(Credit::of(aeth(0x1e, 0xff_fff0)), Credit::Limit(32768 - 16));
    }

    fn msn_arithmetic() {
        assert!(cmp_msn(5, 4) > 0);
        assert!(cmp_msn(4, 5) < 0);
        assert_eq!(cmp_msn(7, 7), 0);
        // Modulo 2^24: 0 comes after 0xffffff.
        assert!(cmp_msn(0, 0xff_ffff) > 0);
        assert!(cmp_msn(0x100_0003, 3) == 0);
    }

    crate::compat::kunit::kunit_suite!(
        rdmavt_rs_loopback,
        [
            copy_across_segments_and_sges,
            copy_onto_an_overlapping_part_of_itself,
            copy_in_pieces_with_copy_last,
            copy_crosses_segment_arrays,
            copy_ends_with_the_state,
            restart_skips_into_the_wqe,
            restart_of_a_wqe_without_sges,
            copy_modes,
            adaptive_copies_cached_a_known_gap,
            credit_table_as_c,
            credit_code_as_c,
            credit_decoding,
            msn_arithmetic,
        ]
    );
}
