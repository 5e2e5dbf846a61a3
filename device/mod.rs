// SPDX-License-Identifier: GPL-2.0-only

//! The rdmavt device: `struct rvt_dev_info`, which a driver allocates through us
//! (`rvt_alloc_device`), fills in, and registers (`rvt_register_device`).
//!
//! The driver owns `dparms`, `driver_f`, `post_parms` and the ports' contents; rdmavt reads
//! them. The C contract (include/rdma/rdma_vt.h) is that the driver leaves `dparms` alone once
//! the device is registered, which is what lets us hand out shared references to it. The
//! same holds for its callbacks, which rdmavt calls only through [`Device::driver`].

mod alloc;
mod driver;
pub(crate) mod log;
pub(crate) mod ops;
mod query;
mod register;

use core::ffi::CStr;

use kernel::{prelude::*, types::Opaque};

use crate::{
    bindings,
    compat::{
        atomic::{Atomic, Relaxed},
        c_str_from_ptr,
    },
};

/// A registered (or registering) rdmavt device.
///
/// # Invariants
///
/// The wrapped `rvt_dev_info` was allocated by `rvt_alloc_device` and is alive.
#[repr(transparent)]
pub(crate) struct Device(Opaque<bindings::rvt_dev_info>);

/// A limit of `ib_device_attr` (`max_qp`, `max_cqe`, ...) as a `u32`. They are `u32` on 7.3;
/// 6.12 has `int`, where a negative limit, which no driver sets, allows nothing.
pub(crate) fn limit<T: TryInto<u32>>(v: T) -> u32 {
    v.try_into().unwrap_or(0)
}

/// `v` as a limit of `ib_device_attr`: itself on 7.3, an `int` on 6.12. The one caller's
/// value, the lkey table's size, is at most 2^23 and fits; one that did not would become 0.
pub(crate) fn to_limit<T: TryFrom<u32> + Default>(v: u32) -> T {
    T::try_from(v).unwrap_or_default()
}

/// One port of a device: the driver's `struct rvt_ibport`.
#[repr(transparent)]
pub(crate) struct Port(Opaque<bindings::rvt_ibport>);

impl Device {
    /// # Safety
    ///
    /// `ptr` points to an `rvt_dev_info` from `rvt_alloc_device` that stays alive for `'a`.
    pub(crate) unsafe fn from_raw<'a>(ptr: *mut bindings::rvt_dev_info) -> &'a Self {
        // SAFETY: `Device` is a transparent wrapper of `rvt_dev_info`; the caller guarantees
        // the pointee lives for `'a`.
        unsafe { &*ptr.cast() }
    }

    /// The device an `ib_device` of ours is embedded in.
    ///
    /// # Safety
    ///
    /// `ibdev` is the `ibdev` member of a live `rvt_dev_info` (true of every device whose ops
    /// are rdmavt's) and stays alive for `'a`.
    pub(crate) unsafe fn from_ib<'a>(ibdev: *mut bindings::ib_device) -> &'a Self {
        // `ibdev` is the first member of `rvt_dev_info` ("Keep this first" in rdma_vt.h), so
        // the container is at the same address; the layout suite checks that offset.
        // SAFETY: see above; the caller guarantees the rest.
        unsafe { Self::from_raw(ibdev.cast()) }
    }

    pub(crate) fn as_raw(&self) -> *mut bindings::rvt_dev_info {
        self.0.get()
    }

    /// The name ib_core knows the device by (`rvt_loop0`, `hfi1_0`).
    pub(crate) fn name(&self) -> &CStr {
        // SAFETY: the device is alive (type invariant); its name lives as long as it does.
        unsafe { c_str_from_ptr(bindings::rdmavt_rs_dev_name(self.ibdev())) }
    }

    pub(crate) fn ibdev(&self) -> *mut bindings::ib_device {
        // SAFETY: `self.as_raw()` is valid by the type invariant.
        unsafe { &raw mut (*self.as_raw()).ibdev }
    }

    /// The driver's parameters, fixed once the device is registered.
    pub(crate) fn dparms(&self) -> &bindings::rvt_driver_params {
        // SAFETY: valid by the type invariant; the driver does not modify `dparms` after
        // registration (rdma_vt.h), and before it nothing else runs on this device.
        unsafe { &(*self.as_raw()).dparms }
    }

    /// The number of ports ib_core knows (`phys_port_cnt`), fixed at registration.
    pub(crate) fn phys_port_cnt(&self) -> u32 {
        // SAFETY: a field of the live device, written before registration.
        unsafe { (*self.ibdev()).phys_port_cnt }
    }

    /// The port with IB port number `port_num` (1-based, as ib_core numbers them).
    pub(crate) fn port(&self, port_num: u32) -> Result<&Port> {
        let nports = u32::try_from(self.dparms().nports).map_err(|_| EINVAL)?;
        if port_num == 0 || port_num > nports {
            return Err(EINVAL);
        }
        // SAFETY: `ports` has `nports` entries (rvt_alloc_device sized it from the same
        // count the driver reports) and the index is in range.
        let port = unsafe { *(*self.as_raw()).ports.add(port_num as usize - 1) };
        if port.is_null() {
            return Err(EINVAL);
        }
        // SAFETY: the driver registered this port with rvt_init_port; ports live as long as
        // the device.
        Ok(unsafe { &*port.cast::<Port>() })
    }
}

impl Port {
    pub(crate) fn as_raw(&self) -> *mut bindings::rvt_ibport {
        self.0.get()
    }

    /// Adds one to a counter of the port. C increments them without a lock; here the
    /// increment is at least atomic, and readers (hfi1's counters) still read them plainly.
    fn count(counter: *mut u64) {
        // SAFETY: a counter of a live port; every access to it from Rust is atomic.
        let c = unsafe { Atomic::from_ptr(counter) };
        // As C's `++`: a load and a store, not a locked increment. Two QPs of the port
        // counting at the same moment can lose one count, as they can in C (and in hfi1,
        // which counts into the same fields); the counters are statistics, and a locked
        // read-modify-write of a shared line per message cost more than they are worth.
        c.store(c.load(Relaxed).wrapping_add(1), Relaxed);
    }

    /// Counts a packet that the loopback delivered (`n_loop_pkts`).
    pub(crate) fn count_loop_pkt(&self) {
        // SAFETY: a live port; this only takes a field's address.
        Self::count(unsafe { &raw mut (*self.as_raw()).n_loop_pkts });
    }

    /// Counts a packet dropped for a missing or unready destination (`n_pkt_drops`).
    pub(crate) fn count_pkt_drop(&self) {
        // SAFETY: as in `count_loop_pkt`.
        Self::count(unsafe { &raw mut (*self.as_raw()).n_pkt_drops });
    }

    /// Counts an RNR NAK (`n_rnr_naks`).
    pub(crate) fn count_rnr_nak(&self) {
        // SAFETY: as in `count_loop_pkt`.
        Self::count(unsafe { &raw mut (*self.as_raw()).n_rnr_naks });
    }
}

/// `RC_QP_SCALING_INTERVAL`: RC QPs per extra jiffy of retry timeout (`busy_jiffies`).
const RC_QP_SCALING_INTERVAL: u32 = 5;

/// The device's QP counts, borrowed under `n_qps_lock`.
pub(crate) struct QpCounts<'a> {
    pub(crate) allocated: &'a mut u32,
    pub(crate) rc: &'a mut u32,
}

impl Device {
    /// Runs `f` on the device's QP counts with `n_qps_lock` held, then keeps the RC retry
    /// timers' `busy_jiffies` scaled to the number of RC QPs (unchanged unless `f` changed
    /// that number).
    pub(crate) fn with_qp_counts<R>(&self, f: impl FnOnce(QpCounts<'_>) -> R) -> R {
        let rdi = self.as_raw();
        // SAFETY: `n_qps_lock` is initialised at registration and protects the counts.
        let _guard = unsafe {
            crate::lock::lock_raw::<crate::compat::lock::SpinLockBackend>(
                &raw mut (*rdi).n_qps_lock,
            )
        };
        // SAFETY: the counts and `busy_jiffies` are protected by `n_qps_lock`, held; the
        // borrows end before it is released.
        unsafe {
            let r = f(QpCounts {
                allocated: &mut (*rdi).n_qps_allocated,
                rc: &mut (*rdi).n_rc_qps,
            });
            (*rdi).busy_jiffies = (*rdi).n_rc_qps / RC_QP_SCALING_INTERVAL;
            r
        }
    }
}
