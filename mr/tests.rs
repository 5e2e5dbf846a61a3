// SPDX-License-Identifier: GPL-2.0-only

//! The `rdmavt_rs_mr` KUnit suite: key encoding and checks, the lkey table's free-slot search,
//! region sizes and segment lookup, and a region's reference count.

mod suite {
    use crate::bindings;
    use crate::compat::kunit::{assert, assert_eq};
    use crate::compat::{aref::ARef, rcu};
    use crate::mr::{
        keys::{lkey_access_ok, range_offset, rkey_access_ok},
        lkey::{encode, find_free, index_of, next_key, MAX_BITS},
        mr_size,
        refcount::put_mr,
        region::{locate_uniform, locate_walk, segarrays, Mregion, SegPos, SEGSZ},
    };
    use core::{mem::size_of, ptr};
    use kernel::{
        page::{PAGE_SHIFT, PAGE_SIZE},
        prelude::*,
    };

    fn segsz_fills_a_page() {
        assert_eq!(SEGSZ * size_of::<bindings::rvt_seg>(), PAGE_SIZE);
        assert_eq!(size_of::<bindings::rvt_segarray>(), PAGE_SIZE);
    }

    fn segarrays_as_c() {
        assert_eq!(segarrays(0), Some(0));
        assert_eq!(segarrays(1), Some(1));
        assert_eq!(segarrays(SEGSZ as i32), Some(1));
        assert_eq!(segarrays(SEGSZ as i32 + 1), Some(2));
        // C's int arithmetic in size_t: small negative counts (max_num_sg near u32::MAX)
        // need no array, larger ones make a negative int and the allocation fail.
        assert_eq!(segarrays(-1), Some(0));
        assert_eq!(segarrays(-(SEGSZ as i32) + 1), Some(0));
        assert_eq!(segarrays(-(SEGSZ as i32)), None);
        assert_eq!(segarrays(i32::MIN), None);
        assert_eq!(
            segarrays(i32::MAX),
            Some((i32::MAX as usize).div_ceil(SEGSZ))
        );
    }

    fn mr_size_as_struct_size() {
        assert_eq!(mr_size(0), Some(size_of::<crate::mr::RvtMr>()));
        assert_eq!(mr_size(2), Some(size_of::<crate::mr::RvtMr>() + 16));
        assert_eq!(mr_size(usize::MAX), None);
    }

    fn key_layout() {
        // 16 index bits: index in the top 16, 8 generation bits, user byte clear.
        assert_eq!(encode(0x1234, 0x56, 16), 0x1234_5600);
        // The generation wraps within its bits.
        assert_eq!(encode(1, 0x1ff, 16), 0x0001_ff00);
        // With the most index bits, one generation bit is left.
        assert_eq!(encode(1, 3, MAX_BITS), (1 << 9) | (1 << 8));
        assert_eq!(index_of(0x1234_56ab, 32 - 16), 0x1234);
        assert_eq!(
            index_of(encode(0x7f_ffff, 0, MAX_BITS), 32 - MAX_BITS),
            0x7f_ffff
        );
    }

    fn key_never_zero() {
        // Index 0 at a generation whose masked bits are 0 would be key 0, the DMA MR's.
        let mut gen = 0xff;
        let key = next_key(0, &mut gen, 16);
        assert_eq!(key, 1 << 8);
        assert_eq!(gen, 0x101);
        let mut gen = 0;
        assert_eq!(next_key(0, &mut gen, 16), 1 << 8);
        assert_eq!(gen, 1);
        // Any other index makes the key non-zero whatever the generation.
        let mut gen = u32::MAX;
        assert_eq!(next_key(3, &mut gen, 8), 3 << 24);
        assert_eq!(gen, 0);
    }

    fn free_slot_search() {
        assert_eq!(find_free(0, 8, |_| true), Some(0));
        assert_eq!(find_free(6, 8, |r| r == 1), Some(1));
        assert_eq!(find_free(3, 8, |r| r == 3), Some(3));
        assert_eq!(find_free(5, 8, |_| false), None);
        assert_eq!(find_free(0, 1, |_| false), None);
    }

    fn access_flags() {
        let lw = bindings::ib_access_flags_IB_ACCESS_LOCAL_WRITE as i32;
        let rw = bindings::ib_access_flags_IB_ACCESS_REMOTE_WRITE as i32;
        let rr = bindings::ib_access_flags_IB_ACCESS_REMOTE_READ as i32;
        // lkeys need every flag asked for...
        assert!(lkey_access_ok(lw | rw, lw));
        assert!(lkey_access_ok(lw, 0));
        assert!(!lkey_access_ok(lw, lw | rw));
        // ...rkeys any one of them, and asking for none fails.
        assert!(rkey_access_ok(rw, rw | rr));
        assert!(!rkey_access_ok(lw, rw | rr));
        assert!(!rkey_access_ok(rw, 0));
    }

    fn ranges() {
        assert_eq!(range_offset(0x1000, 0x1000, 0x100, 0x100), Some(0));
        assert_eq!(range_offset(0x1080, 0x1000, 0x80, 0x100), Some(0x80));
        assert_eq!(range_offset(0x1081, 0x1000, 0x80, 0x100), None);
        assert_eq!(range_offset(0xfff, 0x1000, 1, 0x100), None);
        assert_eq!(range_offset(0x1100, 0x1000, 0, 0x100), Some(0x100));
        // An offset that wraps is refused, not wrapped past the length check.
        assert_eq!(range_offset(u64::MAX, 0, 2, 0x100), None);
    }

    fn segment_positions() {
        let shift = PAGE_SHIFT as u8;
        assert_eq!(locate_uniform(0, shift), SegPos { m: 0, n: 0, off: 0 });
        assert_eq!(
            locate_uniform(PAGE_SIZE + 5, shift),
            SegPos { m: 0, n: 1, off: 5 }
        );
        assert_eq!(
            locate_uniform(SEGSZ * PAGE_SIZE + 7, shift),
            SegPos { m: 1, n: 0, off: 7 }
        );
        // Segments of 10 bytes in a map of one array.
        let one_array = |m: usize, _n: usize| (m == 0).then_some(10);
        assert_eq!(
            locate_walk(25, one_array),
            Some(SegPos { m: 0, n: 2, off: 5 })
        );
        assert_eq!(locate_walk(10 * SEGSZ, one_array), None);
        // An unmapped (all zero) map is walked to its end and refused.
        assert_eq!(locate_walk(0, |m, _| (m == 0).then_some(0)), None);
    }

    /// References taken and given back inline, on this CPU's counter, count as C's do: once
    /// `percpu_ref_kill` has switched the count to atomic mode (in an RCU callback), it holds
    /// exactly the references still out, and the last put, now C's atomic path, completes the
    /// region.
    fn region_references_inline() -> Result {
        // SAFETY: all zero is the state `Mregion::init` starts from.
        let zeroed = unsafe { core::mem::zeroed::<bindings::rvt_mregion>() };
        let mut raw = KBox::new(zeroed, GFP_KERNEL)?;
        let mr: *mut bindings::rvt_mregion = &raw mut *raw;
        // SAFETY: zeroed and ours alone; no segments, so no map arrays.
        unsafe { Mregion::init(mr, ptr::null_mut(), 0, kernel::bindings::NUMA_NO_NODE) }?;
        // SAFETY: set up just now; freed only by `deinit`, after its last reference.
        let region = unsafe { Mregion::from_raw(mr) };
        let rcu = rcu::read_lock();
        for _ in 0..3 {
            let _ = ARef::into_raw(region.reference((&rcu).into()));
        }
        for _ in 0..2 {
            // SAFETY: one of the references taken above, given back.
            unsafe { put_mr(mr, (&rcu).into()) };
        }
        drop(rcu);
        region.kill();
        // SAFETY: process context, no lock held; waits for the switch to atomic mode.
        unsafe { bindings::rcu_barrier() };
        assert_eq!(region.count(), 1);
        assert!(!region.wait_unused(0));
        let rcu = rcu::read_lock();
        // SAFETY: the last reference, given back.
        unsafe { put_mr(mr, (&rcu).into()) };
        drop(rcu);
        assert!(region.wait_unused(0));
        // SAFETY: no reference is left and the region was never published.
        unsafe { Mregion::deinit(mr) };
        Ok(())
    }

    crate::compat::kunit::kunit_suite!(
        rdmavt_rs_mr,
        [
            segsz_fills_a_page,
            segarrays_as_c,
            mr_size_as_struct_size,
            key_layout,
            key_never_zero,
            free_slot_search,
            access_flags,
            ranges,
            segment_positions,
            region_references_inline,
        ]
    );
}
