// SPDX-License-Identifier: GPL-2.0-only

//! Owned kernel verbs objects, each released when dropped.
//!
//! None borrows another, so that a test can keep them side by side: whoever holds several
//! declares them in release order (a QP before its CQ and its PD, a buffer before the
//! device it is mapped for, the device last), because fields drop in declaration order.

use crate::{
    bindings,
    compat::{
        self,
        time::{fsleep, Delta},
    },
    glue,
};
use core::{mem::offset_of, ptr::NonNull};
use kernel::{
    error::{from_err_ptr, to_result},
    ffi::c_int,
    prelude::*,
};

/// How often a completion is polled for before giving up, and the sleep between two polls:
/// about two seconds in all. A bound on the wait, not a judgement of its length.
const POLLS: u32 = 200;
const POLL_SLEEP_MS: i64 = 10;

/// rvt_loop0, which cannot unregister while this lives.
///
/// # Invariants
///
/// `0` is a registered device on which this holds a registration reference.
pub(crate) struct Device(NonNull<bindings::ib_device>);

impl Device {
    /// rvt_loop0, or ENODEV when it is not registered.
    pub(crate) fn get() -> Result<Self> {
        // SAFETY: No preconditions; a non-null result carries a registration reference.
        let dev = unsafe { glue::rvt_loop_kverbs_device_get() };
        let Some(dev) = NonNull::new(dev) else {
            pr_err!("rvt_loop0 is not registered\n");
            return Err(ENODEV);
        };
        // INVARIANT: The reference rvt_loop_kverbs_device_get() took.
        Ok(Self(dev))
    }

    pub(crate) fn as_ptr(&self) -> *mut bindings::ib_device {
        self.0.as_ptr()
    }

    /// The LID of port `port`.
    pub(crate) fn lid(&self, port: u32) -> Result<u32> {
        let mut attr = bindings::ib_port_attr::default();
        // SAFETY: The device is registered (type invariant); `attr` is valid for writes.
        to_result(unsafe { bindings::ib_query_port(self.as_ptr(), port, &mut attr) })?;
        Ok(attr.lid)
    }
}

impl Drop for Device {
    fn drop(&mut self) {
        // SAFETY: Gives back the reference the type invariant says this holds.
        unsafe { bindings::ib_device_put(self.as_ptr()) };
    }
}

/// A kernel PD whose DMA MR also serves remote access (`IB_PD_UNSAFE_GLOBAL_RKEY`).
///
/// # Invariants
///
/// `0` came from ib_alloc_pd() and is not deallocated yet.
pub(crate) struct Pd(NonNull<bindings::ib_pd>);

impl Pd {
    pub(crate) fn alloc(dev: &Device) -> Result<Self> {
        let flags = bindings::ib_pd_flags_IB_PD_UNSAFE_GLOBAL_RKEY;
        // SAFETY: The device is registered.
        let pd = from_err_ptr(unsafe { glue::rvt_loop_kverbs_alloc_pd(dev.as_ptr(), flags) })?;
        // INVARIANT: A PD from ib_alloc_pd(), which never returns NULL.
        Ok(Self(NonNull::new(pd).ok_or(ENOMEM)?))
    }

    pub(crate) fn as_ptr(&self) -> *mut bindings::ib_pd {
        self.0.as_ptr()
    }

    /// The lkey of all kernel memory.
    pub(crate) fn lkey(&self) -> u32 {
        // SAFETY: A live PD (type invariant); ib_alloc_pd() set the field, nothing changes it.
        unsafe { (*self.as_ptr()).local_dma_lkey }
    }

    /// The rkey of all kernel memory.
    pub(crate) fn rkey(&self) -> u32 {
        // SAFETY: As in `lkey`.
        unsafe { (*self.as_ptr()).unsafe_global_rkey }
    }
}

impl Drop for Pd {
    fn drop(&mut self) {
        // SAFETY: A live PD (type invariant); its owner destroyed the QPs on it first.
        unsafe { glue::rvt_loop_kverbs_dealloc_pd(self.as_ptr()) };
    }
}

/// A CQ that is polled, never armed (`IB_POLL_DIRECT`).
///
/// # Invariants
///
/// `0` came from ib_alloc_cq() and is not freed yet.
pub(crate) struct Cq(NonNull<bindings::ib_cq>);

impl Cq {
    pub(crate) fn alloc(dev: &Device, entries: c_int) -> Result<Self> {
        // SAFETY: The device is registered.
        let cq = from_err_ptr(unsafe { glue::rvt_loop_kverbs_alloc_cq(dev.as_ptr(), entries) })?;
        // INVARIANT: A CQ from ib_alloc_cq(), which never returns NULL.
        Ok(Self(NonNull::new(cq).ok_or(ENOMEM)?))
    }

    /// The next completion, if there is one.
    pub(crate) fn poll(&self) -> Result<Option<bindings::ib_wc>> {
        let mut wc = bindings::ib_wc::default();
        // SAFETY: A live CQ (type invariant); `wc` has room for the one entry asked for.
        let n = unsafe { glue::rvt_loop_kverbs_poll_cq(self.0.as_ptr(), 1, &mut wc) };
        to_result(n)?;
        Ok((n == 1).then_some(wc))
    }

    /// The next completion, polled for a bounded number of times; ETIMEDOUT if none came.
    pub(crate) fn wait(&self) -> Result<bindings::ib_wc> {
        for _ in 0..POLLS {
            if let Some(wc) = self.poll()? {
                return Ok(wc);
            }
            fsleep(Delta::from_millis(POLL_SLEEP_MS));
        }
        pr_err!("no completion after {POLLS} polls\n");
        Err(compat::etimedout())
    }

    /// EINVAL, and what it holds, unless the CQ is empty.
    pub(crate) fn expect_empty(&self) -> Result {
        let Some(wc) = self.poll()? else {
            return Ok(());
        };
        pr_err!(
            "an unexpected completion: status {}, opcode {}, byte_len {}\n",
            wc.status.0,
            wc.opcode.0,
            wc.byte_len
        );
        Err(EINVAL)
    }

    pub(crate) fn as_ptr(&self) -> *mut bindings::ib_cq {
        self.0.as_ptr()
    }
}

impl Drop for Cq {
    fn drop(&mut self) {
        // SAFETY: A live CQ (type invariant); its owner destroyed the QPs on it first.
        unsafe { bindings::ib_free_cq(self.0.as_ptr()) };
    }
}

/// The depth of each QP's send and receive queue and of each CQ.
pub(crate) const QUEUE_DEPTH: u32 = 8;

/// A kernel RC QP with one SGE per WR, every send signalled.
///
/// # Invariants
///
/// `0` came from ib_create_qp() and is not destroyed yet.
pub(crate) struct Qp(NonNull<bindings::ib_qp>);

impl Qp {
    /// A QP on `pd` whose sends and receives both complete on `cq`.
    pub(crate) fn create(pd: &Pd, cq: &Cq) -> Result<Self> {
        let mut init = bindings::ib_qp_init_attr {
            send_cq: cq.as_ptr(),
            recv_cq: cq.as_ptr(),
            cap: bindings::ib_qp_cap {
                max_send_wr: QUEUE_DEPTH,
                max_recv_wr: QUEUE_DEPTH,
                max_send_sge: 1,
                max_recv_sge: 1,
                ..Default::default()
            },
            sq_sig_type: bindings::ib_sig_type_IB_SIGNAL_ALL_WR,
            qp_type: bindings::ib_qp_type::IB_QPT_RC,
            ..Default::default()
        };
        // SAFETY: A live PD and CQ, which the owner keeps until this QP is destroyed;
        // `init` is valid for the call.
        let qp = from_err_ptr(unsafe { glue::rvt_loop_kverbs_create_qp(pd.as_ptr(), &mut init) })?;
        // INVARIANT: A QP from ib_create_qp(), which never returns NULL.
        Ok(Self(NonNull::new(qp).ok_or(ENOMEM)?))
    }

    pub(crate) fn num(&self) -> u32 {
        // SAFETY: A live QP (type invariant); the number is set at creation, never changed.
        unsafe { (*self.0.as_ptr()).qp_num }
    }

    pub(crate) fn as_ptr(&self) -> *mut bindings::ib_qp {
        self.0.as_ptr()
    }

    /// ib_modify_qp() with the attributes of `mask`.
    pub(crate) fn modify(&self, attr: &mut bindings::ib_qp_attr, mask: u32) -> Result {
        let mask = c_int::try_from(mask)?;
        // SAFETY: A live QP (type invariant); `attr` is valid for the call.
        to_result(unsafe { bindings::ib_modify_qp(self.0.as_ptr(), attr, mask) })
    }

    /// Posts one send WR (its `next` must be null); the memory it names must stay mapped
    /// until it completes.
    pub(crate) fn post_send<W: SendWr>(&self, wr: &W) -> Result {
        let mut bad = core::ptr::null();
        // A pointer to the whole WR, not to its `ib_send_wr`: rdmavt reads the rest of it
        // through container_of().
        let wr = core::ptr::from_ref(wr).cast::<bindings::ib_send_wr>();
        // SAFETY: A live QP (type invariant); the WR (an `ib_send_wr` at offset 0, as
        // `SendWr` promises) and its SGE list are valid for the call, which copies them.
        to_result(unsafe { glue::rvt_loop_kverbs_post_send(self.0.as_ptr(), wr, &mut bad) })
    }

    /// Posts one receive WR (its `next` must be null), as `post_send`.
    pub(crate) fn post_recv(&self, wr: &bindings::ib_recv_wr) -> Result {
        let mut bad = core::ptr::null();
        // SAFETY: As in `post_send`.
        to_result(unsafe { glue::rvt_loop_kverbs_post_recv(self.0.as_ptr(), wr, &mut bad) })
    }
}

impl Drop for Qp {
    fn drop(&mut self) {
        // SAFETY: A live QP (type invariant), not used again.
        let ret = unsafe { glue::rvt_loop_kverbs_destroy_qp(self.0.as_ptr()) };
        if ret != 0 {
            pr_err!("ib_destroy_qp: {ret}\n");
        }
    }
}

/// A send WR: `ib_send_wr` itself, or a WR that embeds one for its opcode.
///
/// # Safety
///
/// Implementors are `repr(C)` structs whose first field is the `ib_send_wr`, as ib_verbs.h's
/// `ib_rdma_wr` and `ib_atomic_wr` are, which rdmavt finds with container_of().
pub(crate) unsafe trait SendWr {}

// SAFETY: It is the `ib_send_wr`.
unsafe impl SendWr for bindings::ib_send_wr {}
// SAFETY: `wr` is its first field (bindgen keeps C's layout).
unsafe impl SendWr for bindings::ib_rdma_wr {}
// SAFETY: As for `ib_rdma_wr`.
unsafe impl SendWr for bindings::ib_atomic_wr {}
// SAFETY: As for `ib_rdma_wr`.
unsafe impl SendWr for bindings::ib_reg_wr {}

/// A fast-register MR, whose key is published by a REG_MR work request.
///
/// # Invariants
///
/// `0` came from ib_alloc_mr() and is not deregistered yet.
pub(crate) struct Mr(NonNull<bindings::ib_mr>);

impl Mr {
    /// An MR on `pd` over `len` bytes at DMA address `dma`, not yet registered.
    pub(crate) fn new(pd: &Pd, dma: u64, len: usize) -> Result<Self> {
        // SAFETY: A live PD, which the owner keeps until this MR is deregistered.
        let mr = from_err_ptr(unsafe { glue::rvt_loop_kverbs_alloc_mr(pd.as_ptr()) })?;
        // INVARIANT: An MR from ib_alloc_mr(), which never returns NULL.
        let mr = Self(NonNull::new(mr).ok_or(ENOMEM)?);
        // SAFETY: A live MR, not registered yet; the memory stays mapped while it is used.
        let mapped = unsafe { glue::rvt_loop_kverbs_map_mr(mr.as_ptr(), dma, len.try_into()?) };
        if mapped != 1 {
            pr_err!("ib_map_mr_sg: {mapped}\n");
            return Err(EINVAL);
        }
        Ok(mr)
    }

    pub(crate) fn as_ptr(&self) -> *mut bindings::ib_mr {
        self.0.as_ptr()
    }

    /// The MR's key, used both as lkey and rkey by a fast-register MR.
    pub(crate) fn key(&self) -> u32 {
        // SAFETY: A live MR (type invariant); the key changes only through work requests
        // this test posts and waits for.
        unsafe { (*self.as_ptr()).rkey }
    }
}

impl Drop for Mr {
    fn drop(&mut self) {
        // SAFETY: A live MR (type invariant), not used again; no WR that names it is pending.
        let ret = unsafe { glue::rvt_loop_kverbs_dereg_mr(self.as_ptr()) };
        if ret != 0 {
            pr_err!("ib_dereg_mr: {ret}\n");
        }
    }
}

/// Whether rdmavt is rdmavt-rs rather than the C rdmavt, for the tests of the C rdmavt's bugs.
pub(crate) fn on_rdmavt_rs() -> bool {
    // SAFETY: No preconditions.
    unsafe { glue::rvt_loop_kverbs_on_rdmavt_rs() }
}

/// Runs `f` with the `n`-th fault-injectable allocation of this thread failing (from 1), and
/// says whether it did fail: whether `f` got as far as an `n`-th allocation. None when the
/// kernel has no fault injection (`CONFIG_FAULT_INJECTION`).
pub(crate) fn with_nth_failing<T>(n: u32, f: impl FnOnce() -> T) -> Option<(T, bool)> {
    // SAFETY: No preconditions: it sets the current task's own count.
    if unsafe { glue::rvt_loop_kverbs_fail_nth(n) } == u32::MAX {
        return None;
    }
    let out = f();
    // SAFETY: As above.
    let left = unsafe { glue::rvt_loop_kverbs_fail_nth(0) };
    Some((out, left == 0))
}

/// The bytes a test sends, receives, reads and writes.
pub(crate) const DATA_LEN: usize = 64;

/// The memory of one side of a test: a data area and the 8-byte aligned word atomics use.
#[repr(C)]
pub(crate) struct Mem {
    data: [u8; DATA_LEN],
    word: u64,
}

/// A `Mem` on the heap, DMA-mapped for a device.
///
/// The device reads and writes it behind the compiler's back, so it is held by a raw pointer
/// and accessed with volatile reads and writes only, never through a reference.
///
/// # Invariants
///
/// `mem` came from `KBox::into_raw` and is mapped at `dma` for `dev`, for its whole size;
/// `dev` is registered for as long as this lives (its owner drops the device later).
pub(crate) struct Buffer {
    mem: NonNull<Mem>,
    dma: u64,
    dev: *mut bindings::ib_device,
}

impl Buffer {
    pub(crate) fn new(dev: &Device) -> Result<Self> {
        let mem = KBox::new(
            Mem {
                data: [0; DATA_LEN],
                word: 0,
            },
            GFP_KERNEL,
        )?;
        let mem = KBox::into_raw(mem);
        let dma =
            // SAFETY: A registered device; `mem` is a live allocation of that size.
            unsafe { glue::rvt_loop_kverbs_dma_map(dev.as_ptr(), mem.cast(), size_of::<Mem>()) };
        // SAFETY: As above; `dma` is what the mapping returned.
        if unsafe { glue::rvt_loop_kverbs_dma_mapping_error(dev.as_ptr(), dma) } != 0 {
            // SAFETY: From KBox::into_raw() just above, never mapped.
            drop(unsafe { KBox::from_raw(mem) });
            return Err(ENOMEM);
        }
        // INVARIANT: Mapped just above; the owner keeps `dev` registered.
        Ok(Self {
            // SAFETY: KBox::into_raw() never returns null.
            mem: unsafe { NonNull::new_unchecked(mem) },
            dma,
            dev: dev.as_ptr(),
        })
    }

    /// The DMA address of byte `off` of the data area.
    pub(crate) fn data_addr(&self, off: usize) -> u64 {
        self.dma + (offset_of!(Mem, data) + off) as u64
    }

    /// The DMA address of the atomic word.
    pub(crate) fn word_addr(&self) -> u64 {
        self.dma + offset_of!(Mem, word) as u64
    }

    /// The data area as it is now.
    pub(crate) fn data(&self) -> [u8; DATA_LEN] {
        // SAFETY: A live, aligned `Mem` (type invariant); a volatile read, since the device
        // may have written it.
        unsafe { (&raw const (*self.mem.as_ptr()).data).read_volatile() }
    }

    pub(crate) fn set_data(&self, data: [u8; DATA_LEN]) {
        // SAFETY: As in `data`; no transfer is in flight while a test sets its memory.
        unsafe { (&raw mut (*self.mem.as_ptr()).data).write_volatile(data) }
    }

    pub(crate) fn word(&self) -> u64 {
        // SAFETY: As in `data`.
        unsafe { (&raw const (*self.mem.as_ptr()).word).read_volatile() }
    }

    pub(crate) fn set_word(&self, word: u64) {
        // SAFETY: As in `set_data`.
        unsafe { (&raw mut (*self.mem.as_ptr()).word).write_volatile(word) }
    }
}

impl Drop for Buffer {
    fn drop(&mut self) {
        // SAFETY: Mapped at `dma` for `dev`, which is still registered (type invariant); the
        // QPs that used it are destroyed.
        unsafe { glue::rvt_loop_kverbs_dma_unmap(self.dev, self.dma, size_of::<Mem>()) };
        // SAFETY: From KBox::into_raw() (type invariant), freed once.
        drop(unsafe { KBox::from_raw(self.mem.as_ptr()) });
    }
}
