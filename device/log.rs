// SPDX-License-Identifier: GPL-2.0-only

//! rdmavt's device log messages: C's `rvt_pr_info`, `rvt_pr_warn`, `rvt_pr_err` and
//! `rvt_pr_err_ratelimited` (drivers/infiniband/sw/rdmavt/vt.h), as [`rvt_info!`],
//! [`rvt_warn!`], [`rvt_err!`] and [`rvt_err_ratelimited!`].
//!
//! As in C, a message goes through `dev_printk` on the driver's PCI device (`get_pci_dev`), so
//! that the log names the driver and the PCI function, and starts with the ib device's name:
//! `rvt_loop 0000:00:04.0: rvt_loop0: CQ is full!`. Where the driver has no PCI device
//! (`get_pci_dev` returns NULL, as rvt_loop's may; C would oops) the ib device's own `struct
//! device` stands in for it.
//!
//! The rate-limited form lets through the kernel's default burst (`DEFAULT_RATELIMIT_BURST`,
//! 10 messages in `DEFAULT_RATELIMIT_INTERVAL`, 5 seconds) per call site, and, as the next
//! interval begins, says how many it held back in `___ratelimit()`'s words:
//! `rvt_cq_enter: 12 callbacks suppressed`.

use core::{ffi::CStr, fmt};

use kernel::time::msecs_to_jiffies;

use super::Device;
use crate::{
    bindings,
    compat::{
        atomic::{Atomic, Relaxed},
        c_str_ptr,
    },
};

/// `KERN_ERR`, `KERN_WARNING`, `KERN_INFO`: the printk level prefixes.
pub(crate) const ERR: &CStr = c"\x013";
/// See [`ERR`].
pub(crate) const WARNING: &CStr = c"\x014";
/// See [`ERR`].
pub(crate) const INFO: &CStr = c"\x016";

/// The `struct device` C's `rvt_pr_*` print on: the driver's PCI device's, else the ib
/// device's.
fn log_device(dev: &Device) -> *mut bindings::device {
    match dev.driver().pci_dev() {
        // SAFETY: the driver's PCI device lives as long as its rdmavt device.
        Some(pdev) => unsafe { &raw mut (*pdev).dev },
        // SAFETY: the ib device is part of the live `dev`.
        None => unsafe { &raw mut (*dev.ibdev()).__bindgen_anon_1.dev },
    }
}

/// Prints `args` at `level` on `dev`'s device, after the ib device's name.
pub(crate) fn print(dev: &Device, level: &CStr, args: fmt::Arguments<'_>) {
    #[cfg(CONFIG_PRINTK)]
    // SAFETY: `level` is one of the `KERN_*` prefixes above, the device is live, the format
    // string is NUL-terminated and takes a C string (the device's name, live with it) and a
    // `fmt::Arguments` (`%pA`, the kernel's format for Rust arguments), which is what follows.
    unsafe {
        bindings::_dev_printk(
            c_str_ptr(level),
            log_device(dev),
            c_str_ptr(c"%s: %pA"),
            c_str_ptr(dev.name()),
            core::ptr::from_ref(&args).cast::<core::ffi::c_void>(),
        )
    };
    #[cfg(not(CONFIG_PRINTK))]
    let _unused = (dev, level, args);
}

/// `DEFAULT_RATELIMIT_BURST`: messages let through per interval.
const BURST: u32 = 10;
/// `DEFAULT_RATELIMIT_INTERVAL`, in milliseconds.
const INTERVAL_MS: u32 = 5000;

/// The state of one rate-limited call site: the kernel's `struct ratelimit_state`, without
/// its lock (an interval is claimed with a compare-and-exchange, so concurrent callers, which
/// may hold spinlocks, never wait).
pub(crate) struct RateLimit {
    /// The jiffies the current interval began at; 0 before the first message.
    begin: Atomic<usize>,
    /// Messages let through or asked for in this interval.
    printed: Atomic<u32>,
    /// Messages held back since the last report of them.
    missed: Atomic<u32>,
}

impl RateLimit {
    pub(crate) const fn new() -> Self {
        Self {
            begin: Atomic::new(0),
            printed: Atomic::new(0),
            missed: Atomic::new(0),
        }
    }

    /// Whether a message from this call site may be printed now. The caller that begins a
    /// new interval reports the messages held back in the last, naming `func`, the call site's
    /// C function, as the kernel does.
    pub(crate) fn allow(&self, func: &CStr) -> bool {
        let now = jiffies();
        let begin = self.begin.load(Relaxed);
        let over = msecs_to_jiffies(INTERVAL_MS);
        if (begin == 0 || now.wrapping_sub(begin) > over)
            && self.begin.cmpxchg(begin, now, Relaxed).is_ok()
        {
            self.printed.store(0, Relaxed);
            let missed = self.missed.xchg(0, Relaxed);
            if missed != 0 {
                report_suppressed(func, missed);
            }
        }
        // The count wraps (atomics do) only after 2^32 messages in one interval.
        if self.printed.fetch_add(1, Relaxed) < BURST {
            true
        } else {
            self.missed.fetch_add(1, Relaxed);
            false
        }
    }
}

/// `jiffies`, read once.
fn jiffies() -> usize {
    // SAFETY: `jiffies` is the kernel's tick counter, always readable; the volatile read is
    // C's `READ_ONCE(jiffies)`.
    unsafe { core::ptr::read_volatile(&raw const bindings::jiffies) }
}

/// `___ratelimit()`'s report: "FUNC: N callbacks suppressed", with no module prefix.
fn report_suppressed(func: &CStr, missed: u32) {
    #[cfg(CONFIG_PRINTK)]
    // SAFETY: a NUL-terminated format whose `%s` and `%u` take the C string and the `u32`
    // that follow.
    unsafe {
        bindings::_printk(
            c_str_ptr(c"\x014%s: %u callbacks suppressed\n"),
            c_str_ptr(func),
            missed,
        )
    };
    #[cfg(not(CONFIG_PRINTK))]
    let _unused = (func, missed);
}

/// `rvt_pr_info(rdi, ...)`: `rvt_info!(dev, "format {}\n", args)`, with `dev` a
/// [`Device`].
macro_rules! rvt_info {
    ($dev:expr, $($arg:tt)+) => {
        $crate::device::log::print($dev, $crate::device::log::INFO, format_args!($($arg)+))
    };
}

/// `rvt_pr_warn`: as [`rvt_info!`].
macro_rules! rvt_warn {
    ($dev:expr, $($arg:tt)+) => {
        $crate::device::log::print($dev, $crate::device::log::WARNING, format_args!($($arg)+))
    };
}

/// `rvt_pr_err`: as [`rvt_info!`].
macro_rules! rvt_err {
    ($dev:expr, $($arg:tt)+) => {
        $crate::device::log::print($dev, $crate::device::log::ERR, format_args!($($arg)+))
    };
}

/// `rvt_pr_err_ratelimited`: `rvt_err_ratelimited!(dev, c"c_function", "format\n", args)`,
/// rate-limited per call site (see the module's documentation); `c_function` is the name of
/// the C rdmavt's function that logs it, for the report of suppressed messages.
macro_rules! rvt_err_ratelimited {
    ($dev:expr, $func:expr, $($arg:tt)+) => {{
        static LIMIT: $crate::device::log::RateLimit = $crate::device::log::RateLimit::new();
        if LIMIT.allow($func) {
            $crate::device::log::rvt_err!($dev, $($arg)+);
        }
    }};
}

pub(crate) use {rvt_err, rvt_err_ratelimited, rvt_info, rvt_warn};
