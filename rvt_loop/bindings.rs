// SPDX-License-Identifier: GPL-2.0-only

//! Generated bindings to ib_core and the rdmavt headers, as rdmavt-rs itself uses them.
//!
//! The same generated file as `bindings/mod.rs` of rdmavt.ko (one bindgen run serves both
//! crates), fenced the same way: only the typed code of rvt_loop uses it.

#![allow(
    clippy::all,
    clippy::as_underscore,
    clippy::cast_lossless,
    clippy::ptr_as_ptr,
    clippy::ref_as_ptr,
    clippy::undocumented_unsafe_blocks,
    dead_code,
    improper_ctypes,
    missing_docs,
    non_camel_case_types,
    non_snake_case,
    non_upper_case_globals,
    unnecessary_transmutes,
    unreachable_pub,
    unsafe_op_in_unsafe_fn
)]

use pin_init::{MaybeZeroable, Zeroable};

// The kernel's parameters blocklist these so that they map to the Rust pointer-sized types.
type __kernel_size_t = usize;
type __kernel_ssize_t = isize;
type __kernel_ptrdiff_t = isize;

// SAFETY: `__BindgenBitfieldUnit<Storage>` is a newtype around `Storage`, so all zeroes is a
// valid value whenever it is one for `Storage`.
unsafe impl<Storage> Zeroable for __BindgenBitfieldUnit<Storage> where Storage: Zeroable {}

include!("../bindings/bindings_generated.rs");
