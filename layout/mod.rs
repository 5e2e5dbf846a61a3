// SPDX-License-Identifier: GPL-2.0-only

//! The ABI check: every struct of the rdmavt headers laid out the same in Rust and in C.
//!
//! hfi1 and qib read and write `struct rvt_qp`, `rvt_swqe`, `rvt_krwq` and friends directly, and
//! rdma-core maps `rvt_rwq` and `rvt_cq_wc` into user space, so one byte of difference between
//! what the bindings (and therefore our Rust code) see and what the C compiler built those
//! drivers with is memory corruption. Both tables are generated from the headers at build time
//! by `scripts/gen_layout.py`; the KUnit suite below compares them entry by entry.

use kernel::{ffi::c_char, prelude::*, str::CStr};

use crate::bindings;

/// One size, alignment or field offset: `name` is "struct.field", "struct.(size)" or
/// "struct.(align)".
pub(crate) struct Entry {
    name: &'static CStr,
    value: usize,
}

impl Entry {
    const fn new(name: &'static CStr, value: usize) -> Self {
        Self { name, value }
    }
}

include!("layout_generated.rs");

/// The C compiler's table, compiled into the C glue from the same generated list.
fn c_layout() -> &'static [bindings::rdmavt_rs_layout_entry] {
    // SAFETY: `rdmavt_rs_layout_c` is a constant array of `rdmavt_rs_layout_c_len` entries
    // defined in rdmavt_glue.c; it is never written and lives as long as the module.
    unsafe {
        core::slice::from_raw_parts(
            bindings::rdmavt_rs_layout_c.as_ptr(),
            bindings::rdmavt_rs_layout_c_len,
        )
    }
}

/// The name of a C table entry.
fn c_name(entry: &bindings::rdmavt_rs_layout_entry) -> &'static CStr {
    let name: *const c_char = entry.name;
    // SAFETY: every entry's name is a string literal in rdmavt_glue.c, NUL-terminated and
    // immutable for the life of the module.
    unsafe { CStr::from_char_ptr(name) }
}

/// The entries where the two views disagree, each reported with both values; returns how many.
pub(crate) fn mismatches() -> usize {
    let c = c_layout();
    if c.len() != RUST_LAYOUT.len() {
        pr_err!(
            "layout: C has {} entries, Rust {}\n",
            c.len(),
            RUST_LAYOUT.len()
        );
        return c.len().abs_diff(RUST_LAYOUT.len()).max(1);
    }
    let mut bad = 0;
    for (rust, c) in RUST_LAYOUT.iter().zip(c) {
        if rust.name != c_name(c) {
            pr_err!(
                "layout: entry {} in Rust is {} in C\n",
                rust.name,
                c_name(c)
            );
            bad += 1;
        } else if rust.value != c.value {
            pr_err!("layout: {}: Rust {} C {}\n", rust.name, rust.value, c.value);
            bad += 1;
        }
    }
    bad
}

/// The Rust view of one entry, by name.
#[cfg(CONFIG_KUNIT)]
fn rust_value(name: &CStr) -> Option<usize> {
    RUST_LAYOUT.iter().find(|e| e.name == name).map(|e| e.value)
}

#[kunit_tests(rdmavt_rs_layout)]
mod tests {
    use super::*;

    /// Every size, alignment and offset agrees between Rust and C.
    #[test]
    fn rust_and_c_agree() {
        assert_eq!(mismatches(), 0);
    }

    /// The structs hfi1 touches most are in the tables at all (a generator that dropped them
    /// would make the comparison above vacuous).
    #[test]
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
    #[test]
    fn krwq_consumer_on_own_cacheline() {
        let p = rust_value(c"rvt_krwq.p_lock").unwrap_or(usize::MAX);
        let c = rust_value(c"rvt_krwq.c_lock").unwrap_or(0);
        assert_eq!(p, 0);
        assert_eq!(c % 64, 0);
        assert!(c >= 64);
    }
}
