// SPDX-License-Identifier: GPL-2.0-only

//! rdmavt-rs: the RDMA verbs transport library (rdmavt) in Rust.
//!
//! A drop-in replacement for drivers/infiniband/sw/rdmavt: it builds as `rdmavt.ko`, keeps the C
//! module's exports and the layouts of its ABI structs, so hfi1 (and qib) load against it
//! unchanged and rdma-core's libhfi1verbs works on top.

mod ah;
mod bindings;
mod compat;
mod cq;
mod device;
mod krwq;
mod layout;
mod lock;
mod loopback;
mod macros;
mod mad;
mod mcast;
mod mmap;
mod mr;
mod pd;
mod qp;
mod srq;
mod trace;

use kernel::prelude::*;

#[cfg(not(rdmavt_kernel_6_12))]
module! {
    type: Rdmavt,
    name: "rdmavt",
    authors: ["rdmavt-rs developers"],
    description: "RDMA verbs transport library (Rust)",
    license: "GPL",
}

// 6.12's `module!` knows one `author`, not a list.
#[cfg(rdmavt_kernel_6_12)]
module! {
    type: Rdmavt,
    name: "rdmavt",
    author: "rdmavt-rs developers",
    description: "RDMA verbs transport library (Rust)",
    license: "GPL",
}

struct Rdmavt;

impl kernel::Module for Rdmavt {
    fn init(_module: &'static ThisModule) -> Result<Self> {
        // A module whose ABI view disagrees with the drivers' must not serve them.
        let bad = layout::mismatches();
        if bad != 0 {
            pr_err!("{bad} ABI layout mismatches between Rust and C; refusing to load\n");
            return Err(EINVAL);
        }
        cq::init()?;
        pr_info!("rdmavt-rs loaded\n");
        Ok(Rdmavt)
    }
}

impl Drop for Rdmavt {
    fn drop(&mut self) {
        cq::exit();
    }
}
