// SPDX-License-Identifier: GPL-2.0-only

//! The `rdmavt_rs_layout` KUnit suite: every size, alignment and offset of the ABI structs
//! agrees between Rust and C, and the tables cover the structs hfi1 touches.

use core::ffi::CStr;

use super::{mismatches, RUST_LAYOUT};

/// The Rust view of one entry, by name.
fn rust_value(name: &CStr) -> Option<usize> {
    RUST_LAYOUT.iter().find(|e| e.name == name).map(|e| e.value)
}

mod suite {
    use super::*;
    use crate::compat::kunit::{assert, assert_eq};

    /// Every size, alignment and offset agrees between Rust and C.
    fn rust_and_c_agree() {
        assert_eq!(mismatches(), 0);
    }

    /// The structs hfi1 touches most are in the tables at all (a generator that dropped them
    /// would make the comparison above vacuous).
    fn covers_driver_structs() {
        for name in [
            c"rvt_krwq.(size)",
            c"rvt_krwq.p_lock",
            c"rvt_krwq.head",
            c"rvt_krwq.c_lock",
            c"rvt_krwq.tail",
            c"rvt_krwq.count",
            c"rvt_krwq.curr_wq",
            c"rvt_krwq.wq",
            c"rvt_rq.(size)",
            c"rvt_rq.lock",
            c"rvt_rwqe.(size)",
            c"rvt_rwqe.sg_list",
            c"rvt_sge.(size)",
            c"rvt_swqe.(size)",
            c"rvt_swqe.wr",
            c"rvt_swqe.sg_list",
            c"rvt_qp.(size)",
            c"rvt_qp.ibqp",
            c"rvt_qp.priv",
            c"rvt_qp.s_lock",
            c"rvt_qp.r_lock",
            c"rvt_qp.s_hlock",
            c"rvt_qp.r_rq",
            c"rvt_qp.s_wq",
        ] {
            assert!(rust_value(name).is_some());
        }
    }

    /// The consumer half of the receive ring is on its own cache line: that is the point of
    /// having two locks, and a packing change would silently undo it.
    fn krwq_consumer_on_own_cacheline() {
        let p = rust_value(c"rvt_krwq.p_lock").unwrap_or(usize::MAX);
        let c = rust_value(c"rvt_krwq.c_lock").unwrap_or(0);
        assert_eq!(p, 0);
        assert_eq!(c % 64, 0);
        assert!(c >= 64);
    }

    crate::compat::kunit::kunit_suite!(
        rdmavt_rs_layout,
        [
            rust_and_c_agree,
            covers_driver_structs,
            krwq_consumer_on_own_cacheline,
        ]
    );
}
