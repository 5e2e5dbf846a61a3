// SPDX-License-Identifier: GPL-2.0-only

//! Generated bindings to ib_core, the rdmavt ABI headers and our C glue.
//!
//! This module may not be used directly, except by the thin typed layers that wrap each C
//! object (and by the layout check, whose subject is the bindings themselves).

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

#[cfg(rdmavt_kernel_6_12)]
use kernel::init::Zeroable;
#[cfg(not(rdmavt_kernel_6_12))]
use pin_init::{MaybeZeroable, Zeroable};

// The kernel's parameters blocklist these so that they map to the Rust pointer-sized types.
type __kernel_size_t = usize;
type __kernel_ssize_t = isize;
type __kernel_ptrdiff_t = isize;

// The trace events' `__tracepoint_*` are the kernel crate's `struct tracepoint`, so that
// `kernel::jump_label::static_branch_unlikely!` can test their keys (see trace/mod.rs). 6.12's
// kernel crate has neither: there our bindings have their own `tracepoint`.
#[cfg(all(CONFIG_TRACEPOINTS, not(rdmavt_kernel_6_12)))]
use kernel::bindings::tracepoint;

// SAFETY: `__BindgenBitfieldUnit<Storage>` is a newtype around `Storage`, so all zeroes is a
// valid value whenever it is one for `Storage`.
unsafe impl<Storage> Zeroable for __BindgenBitfieldUnit<Storage> where Storage: Zeroable {}

// On 6.12 the kernel's bindgen parameters derive no `Zeroable`: the C structs that are built
// from zeroes (`compat::zeroed()`) say so here.
#[cfg(rdmavt_kernel_6_12)]
mod zeroable {
    use super::*;

    // SAFETY: C structs of integers, pointers, `Option`s of function pointers and arrays and
    // unions of those: all zeroes is a valid value of each, as C's `= {}` makes them.
    unsafe impl Zeroable for ib_device_ops {}
    // SAFETY: As above.
    unsafe impl Zeroable for ib_device_attr {}
    // SAFETY: As above.
    unsafe impl Zeroable for rvt_driver_params {}
    // SAFETY: As above.
    unsafe impl Zeroable for rvt_driver_provided {}
}

include!("bindings_generated.rs");
