// SPDX-License-Identifier: GPL-2.0-only

//! The port counters that `rdma statistic` and sysfs `ports/1/hw_counters/` show, as rxe
//! provides them (rxe_hw_counters.c): `alloc_hw_port_stats` names them, [`fill()`] reads them
//! for `get_hw_stats` ([`crate::callbacks`]).
//!
//! Two kinds:
//!
//! - rdmavt's, in the port's `struct rvt_ibport`, which both rdmavt modules bump in
//!   `rvt_ruc_loopback()` (RC and UC): `loop_pkts` (each request the loopback finishes),
//!   `rnr_naks` (an RC request finding no receive WQE) and `pkt_drops` (a request whose
//!   destination QP is missing or cannot receive). The port's other counters are bumped by
//!   hfi1's wire protocol only (sequence NAKs, resends, duplicate requests, ACKs, ...), and
//!   `n_rc_timeouts` only by the retry timer, which a driver arms and rvt_loop never needs:
//!   on rvt_loop they would always read 0, so they are not shown.
//! - rvt_loop's own ([`Counter`]), bumped per message by whichever CPU sends or receives it,
//!   so they are per-CPU and summed when read ([`Counters`]).

use crate::bindings;
use core::ffi::CStr;
use core::{mem::offset_of, ptr::NonNull};

use kernel::{
    ffi::{c_int, c_ulong},
    prelude::*,
};

use crate::compat::atomic::{atomic_load, Relaxed};

/// rvt_loop's own counters, in the order `rdma statistic` shows them after rdmavt's.
#[derive(Clone, Copy)]
#[repr(u32)]
pub(crate) enum Counter {
    /// Send requests (any QP type, local operations excepted) the device took for
    /// transmission: counted when rdmavt hands each to the driver (`setup_wqe`), as it is
    /// posted, because RC and UC requests then travel inside `rvt_ruc_loopback()`, which tells
    /// the driver nothing per message. A request posted to a QP that cannot send (it is
    /// flushed) is not counted.
    SentPkts,
    /// The payload bytes of those requests.
    SentBytes,
    /// Datagrams (UD, GSI, SMI) placed in a receive WQE, unicast or multicast. RC and UC
    /// receives happen inside `rvt_ruc_loopback()`, which `loop_pkts` counts.
    RcvdPkts,
    /// The payload bytes of those datagrams, without the 40 bytes of room for a GRH.
    RcvdBytes,
    /// Unicast datagrams placed in a receive WQE.
    UdDeliveries,
    /// Copies of multicast datagrams placed in a receive WQE, one per attached QP.
    McastDeliveries,
}

/// The number of [`Counter`]s.
const OWN: usize = Counter::McastDeliveries as usize + 1;

/// One u64 counter of `struct rvt_ibport`, at `offset`, shown under `name`.
struct PortCounter {
    name: &'static CStr,
    offset: usize,
}

/// rdmavt's counters that the loopback bumps (see the module documentation).
const PORT: [PortCounter; 3] = [
    PortCounter {
        name: c"loop_pkts",
        offset: offset_of!(bindings::rvt_ibport, n_loop_pkts),
    },
    PortCounter {
        name: c"rnr_naks",
        offset: offset_of!(bindings::rvt_ibport, n_rnr_naks),
    },
    PortCounter {
        name: c"pkt_drops",
        offset: offset_of!(bindings::rvt_ibport, n_pkt_drops),
    },
];

impl PortCounter {
    /// The counter's value in `port`.
    ///
    /// # Safety
    ///
    /// `port` is a live `rvt_ibport`.
    unsafe fn read(&self, port: *const bindings::rvt_ibport) -> u64 {
        // SAFETY: `offset` is that of a u64 field of the live port, so the pointer is valid
        // and aligned. The C rdmavt bumps these without atomics (its counters are
        // "informational only"); a relaxed load is a READ_ONCE().
        unsafe { atomic_load(port.byte_add(self.offset).cast::<u64>().cast_mut(), Relaxed) }
    }
}

/// The names of [`Counter`]s, by value.
const OWN_NAMES: [&CStr; OWN] = [
    c"sent_pkts",
    c"sent_bytes",
    c"rcvd_pkts",
    c"rcvd_bytes",
    c"ud_deliveries",
    c"mcast_deliveries",
];

/// All counters: rdmavt's, then rvt_loop's.
const COUNT: usize = PORT.len() + OWN;

/// The descriptions ib_core keeps a pointer to for as long as the device exists.
struct Descs([bindings::rdma_stat_desc; COUNT]);

// SAFETY: `DESCS` is never written, and its name pointers are to static C strings.
unsafe impl Sync for Descs {}

const fn desc(name: &'static CStr) -> bindings::rdma_stat_desc {
    bindings::rdma_stat_desc {
        // `as_char_ptr()` is not a const fn; the bytes with their NUL are the same pointer.
        name: name.to_bytes_with_nul().as_ptr(),
        flags: 0,
        priv_: core::ptr::null(),
    }
}

const fn descs() -> [bindings::rdma_stat_desc; COUNT] {
    let mut t = [desc(c""); COUNT];
    let mut i = 0;
    while i < PORT.len() {
        t[i] = desc(PORT[i].name);
        i += 1;
    }
    while i < COUNT {
        t[i] = desc(OWN_NAMES[i - PORT.len()]);
        i += 1;
    }
    t
}

static DESCS: Descs = Descs(descs());

/// How long ib_core may show the values it read last before it asks again, in ms (rxe's).
const LIFESPAN_MS: u32 = bindings::RDMA_HW_STATS_DEFAULT_LIFESPAN;

/// `ib_device_ops::alloc_hw_port_stats`: the port's counters, named. ib_core frees the
/// structure when the device goes.
pub(crate) extern "C" fn alloc_hw_port_stats(
    _ibdev: *mut bindings::ib_device,
    _port_num: u32,
) -> *mut bindings::rdma_hw_stats {
    // SAFETY: `DESCS` is static and has `COUNT` entries.
    unsafe {
        bindings::rdma_alloc_hw_stats_struct(
            DESCS.0.as_ptr(),
            COUNT as c_int,
            LIFESPAN_MS as c_ulong,
        )
    }
}

/// Reads every counter of a device's port into `stats`, for `get_hw_stats`
/// ([`crate::callbacks`]): rdmavt's from `port`, rvt_loop's own from `own` (by index).
/// Returns how many.
///
/// # Safety
///
/// `stats` is the structure [`alloc_hw_port_stats()`] made for the device, which the caller's
/// `stats->lock` gives us, and `port` the device's port, live for the call.
pub(crate) unsafe fn fill(
    stats: *mut bindings::rdma_hw_stats,
    port: *const bindings::rvt_ibport,
    own: impl Fn(u32) -> u64,
) -> c_int {
    // SAFETY: ib_core allocated `stats` with `alloc_hw_port_stats()` (the caller's guarantee),
    // so `value` has `COUNT` entries, and the caller holds `stats->lock`, which serialises
    // writers.
    let values = unsafe { (*stats).value.as_mut_slice(COUNT) };
    for (value, counter) in values.iter_mut().zip(PORT.iter()) {
        // SAFETY: The caller's guarantee: the port is live.
        *value = unsafe { counter.read(port) };
    }
    for (i, value) in values[PORT.len()..].iter_mut().enumerate() {
        *value = own(i as u32);
    }
    COUNT as c_int
}

/// rvt_loop's own counters of one device: [`OWN`] u64 per CPU.
///
/// # Invariants
///
/// `self.0` came from `rvt_loop_counters_alloc(OWN)`; it is freed when `self` is dropped.
pub(crate) struct Counters(NonNull<u64>);

// SAFETY: Each CPU writes only its own copy, with a per-CPU operation; readers only sum.
unsafe impl Send for Counters {}
// SAFETY: As above.
unsafe impl Sync for Counters {}

extern "C" {
    fn rvt_loop_counters_alloc(n: u32) -> *mut u64;
    fn rvt_loop_counters_free(counters: *mut u64);
    fn rvt_loop_counters_add(counters: *mut u64, index: u32, value: u64);
    fn rvt_loop_counters_sum(counters: *mut u64, index: u32) -> u64;
}

impl Counters {
    /// Zeroed counters.
    pub(crate) fn new() -> Result<Self> {
        // SAFETY: Any count may be asked for; the memory comes back zeroed.
        let p = unsafe { rvt_loop_counters_alloc(OWN as u32) };
        // INVARIANT: allocated by rvt_loop_counters_alloc().
        NonNull::new(p).map(Self).ok_or(ENOMEM)
    }

    /// Adds `value` to `counter` on this CPU.
    pub(crate) fn add(&self, counter: Counter, value: u64) {
        // SAFETY: By the type invariants the counters are allocated; `counter` is below `OWN`.
        unsafe { rvt_loop_counters_add(self.0.as_ptr(), counter as u32, value) }
    }

    /// Counter number `index` summed over the CPUs; 0 beyond the last.
    pub(crate) fn sum(&self, index: u32) -> u64 {
        if index as usize >= OWN {
            return 0;
        }
        // SAFETY: By the type invariants the counters are allocated; `index` is below `OWN`.
        unsafe { rvt_loop_counters_sum(self.0.as_ptr(), index) }
    }
}

impl Drop for Counters {
    fn drop(&mut self) {
        // SAFETY: Allocated (type invariants); whoever owned `self` used them last.
        unsafe { rvt_loop_counters_free(self.0.as_ptr()) }
    }
}
