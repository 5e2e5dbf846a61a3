// SPDX-License-Identifier: GPL-2.0-only

//! What differs between the kernel crates of the kernel lines rdmavt-rs builds for.
//!
//! rdmavt-rs is written against the 7.3 kernel crate. The 6.12 LTS line's kernel crate is older:
//! it has no `sync::barrier`, `sync::rcu` or `sync::aref`, no
//! `Lock::from_raw` and no interrupt-disabling spinlock backend, no `warn_on!`, no NUMA node
//! for its allocators, no tracepoint support and no `pin_init` crate. Kbuild derives the line
//! from the kernel it builds against and sets `--cfg rdmavt_kernel_6_12` for 6.x (see Kbuild);
//! every item the rest of the crate takes from here is then either the kernel crate's own
//! (`v7_3.rs`, re-exports and nothing else) or a small equivalent with the same name, the same
//! signature and the same semantics (`v6_12/`), so that the crate is written once, against
//! the newer API, and the older line costs one module.

// Each crate that includes this module (rdmavt.ko's, rvt_loop's, rvt_loop_kverbs's) uses a
// part of it; rvt_loop_kverbs uses only `kunit`.
#[allow(dead_code, unused_imports, unused_macros)]
#[cfg_attr(not(rdmavt_kernel_6_12), path = "v7_3.rs")]
#[cfg_attr(rdmavt_kernel_6_12, path = "v6_12/mod.rs")]
mod imp;

#[allow(unused_imports)]
pub(crate) use imp::*;

// The atomics, inline on both lines (see there why not 7.3's `kernel::sync::atomic`).
#[allow(dead_code, unused_imports)]
pub(crate) mod atomic;

// Per-CPU counters, inline where the architecture makes that one instruction.
#[allow(dead_code)]
pub(crate) mod percpu;

// Proof of an RCU read-side critical section, from an RCU guard or a held spinlock.
#[allow(dead_code)]
pub(crate) mod read_side;

// The interrupt-saving spinlock operations under both lines' `lock::SpinLockIrqBackend`.
#[allow(dead_code)]
mod irqsave;

// The KUnit suites' harness, for the crates that have suites.
#[cfg(rdmavt_kunit)]
#[allow(dead_code, unused_imports, unused_macros)]
pub(crate) mod kunit;
