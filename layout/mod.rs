// SPDX-License-Identifier: GPL-2.0-only

//! The ABI check: every struct of the rdmavt headers laid out the same in Rust and in C.
//!
//! hfi1 and qib read and write `struct rvt_qp`, `rvt_swqe`, `rvt_krwq` and friends directly, and
//! rdma-core maps `rvt_rwq` and `rvt_cq_wc` into user space, so one byte of difference between
//! what the bindings (and therefore our Rust code) see and what the C compiler built those
//! drivers with is memory corruption. Both tables are generated from the headers at build time
//! by `scripts/gen_layout.py`; the KUnit suite below compares them entry by entry.

use core::ffi::CStr;

use kernel::{ffi::c_char, prelude::*};

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

#[cfg(rdmavt_kunit)]
mod tests;

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
    unsafe { crate::compat::c_str_from_ptr(name) }
}

/// An entry's name, printable (the names are ASCII).
fn text(name: &CStr) -> &str {
    name.to_str().unwrap_or("?")
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
                text(rust.name),
                text(c_name(c))
            );
            bad += 1;
        } else if rust.value != c.value {
            pr_err!(
                "layout: {}: Rust {} C {}\n",
                text(rust.name),
                rust.value,
                c.value
            );
            bad += 1;
        }
    }
    bad
}
