// SPDX-License-Identifier: GPL-2.0-only

//! rvt_loop_kverbs: a kernel consumer of rvt_loop0, through ib_core's kernel verbs only.
//!
//! Its KUnit suite, `rvt_loop_kverbs` (suite.rs), runs when the module loads: two kernel RC
//! QPs on rvt_loop0 exchange sends, RDMA writes and reads and atomics, which takes the kernel
//! paths of rdmavt (kernel receive queues, kernel CQs, the DMA MR). It runs on rdmavt-rs and
//! on the in-tree C rdmavt alike, with rvt_loop loaded first (tests/kselftest/kverbs.sh).

// The same generated bindings as rdmavt-rs, fenced the same way.
#[path = "../../bindings/mod.rs"]
mod bindings;
// The kernel line's differences, and the KUnit harness, shared with rdmavt.ko.
#[path = "../../compat/mod.rs"]
mod compat;
mod glue;
mod pair;
mod suite;
mod verbs;

use kernel::{error::to_result, prelude::*};

#[cfg(not(rdmavt_kernel_6_12))]
module! {
    type: Kverbs,
    name: "rvt_loop_kverbs",
    authors: ["rdmavt-rs developers"],
    description: "Kernel verbs tests on rvt_loop0",
    license: "GPL",
}

// 6.12's `module!` knows one `author`, not a list.
#[cfg(rdmavt_kernel_6_12)]
module! {
    type: Kverbs,
    name: "rvt_loop_kverbs",
    author: "rdmavt-rs developers",
    description: "Kernel verbs tests on rvt_loop0",
    license: "GPL",
}

/// The registered ib_client through which the tests find rvt_loop0.
struct Kverbs;

impl kernel::Module for Kverbs {
    fn init(_module: &'static ThisModule) -> Result<Self> {
        // SAFETY: No preconditions; unregistered in drop.
        to_result(unsafe { glue::rvt_loop_kverbs_register() })?;
        Ok(Kverbs)
    }
}

impl Drop for Kverbs {
    fn drop(&mut self) {
        // SAFETY: Registered in init.
        unsafe { glue::rvt_loop_kverbs_unregister() };
    }
}
