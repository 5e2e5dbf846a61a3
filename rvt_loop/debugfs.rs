// SPDX-License-Identifier: GPL-2.0-only

//! `/sys/kernel/debug/rvt_loop/<device>/qp_stats`: one line per live QP of the device, as
//! hfi1's `qp_stats` (hfi1/debugfs.c, `qp_iter_print()` in hfi1/qp.c) lists them, through
//! rdmavt's `rvt_qp_iter()`, which both rdmavt modules export:
//!
//! ```text
//! n=0 qpn=0x0 type=SMI state=RTS refcount=1 s_last=0 s_acked=0 s_cur=0 s_tail=0 s_head=0 ...
//! ```
//!
//! The fields are read without the QP's locks, as hfi1 reads them: a line is a snapshot of
//! a QP that may be changing, never a consistent one.

use crate::bindings::{self, ib_qp_state, ib_qp_type};
use core::{fmt, ptr::NonNull};
use kernel::prelude::*;

use crate::compat::atomic::{atomic_load, Relaxed};

/// The QPs of one registered device, which the file lists.
///
/// # Invariants
///
/// `self.0` is a registered `rvt_dev_info`, and stays registered while the file exists: the
/// [`QpStats`] that owns this is dropped before the device is unregistered.
pub(crate) struct QpTable(NonNull<bindings::rvt_dev_info>);

// SAFETY: The table is only read, through rdmavt's iterator, which takes its own locks.
unsafe impl Send for QpTable {}
// SAFETY: As above.
unsafe impl Sync for QpTable {}

/// The kernel crate's debugfs (7.3): a directory is a refcounted `Dir`, a file's data lives
/// in a `Scope` that removes the file when dropped and waits for readers.
#[cfg(not(rdmavt_kernel_6_12))]
mod imp {
    use core::ptr::NonNull;

    use kernel::{
        debugfs::{Dir, Scope},
        prelude::*,
    };

    use super::{print_qps, QpTable};
    use crate::bindings;

    /// A directory, removed when its last handle goes.
    #[derive(Clone)]
    pub(crate) struct Root(Dir);

    impl Root {
        pub(crate) fn new(name: &'static core::ffi::CStr) -> Result<Self> {
            Ok(Self(Dir::new(name)))
        }
    }

    /// A device's directory and its `qp_stats`.
    pub(crate) struct QpStats {
        _scope: Pin<KBox<Scope<QpTable>>>,
    }

    /// # Safety
    ///
    /// As [`super::qp_stats`].
    pub(crate) unsafe fn qp_stats(
        root: &Root,
        name: &CStr,
        rdi: NonNull<bindings::rvt_dev_info>,
    ) -> Result<QpStats> {
        // INVARIANT: the caller guarantees that `rdi` outlives the scope.
        let scope = root
            .0
            .scope(Ok::<_, Error>(QpTable(rdi)), name, |table, dir| {
                dir.read_callback_file(c"qp_stats", table, &print_qps)
            });
        Ok(QpStats {
            _scope: KBox::pin_init(scope, GFP_KERNEL)?,
        })
    }
}

/// C's debugfs (6.12, whose kernel crate has none), through rvt_loop_glue.c: the file's
/// `show` calls [`rvt_loop_print_qps`].
#[cfg(rdmavt_kernel_6_12)]
mod imp {
    use core::{fmt, ptr::NonNull};

    use kernel::{
        ffi::{c_char, c_int, c_void},
        prelude::*,
        sync::Arc,
    };

    use super::{print_qps, QpTable};
    use crate::bindings;

    /// The contents of `qp_stats`, as `Display`.
    struct Qps<'a>(&'a QpTable);

    impl fmt::Display for Qps<'_> {
        fn fmt(&self, out: &mut fmt::Formatter<'_>) -> fmt::Result {
            print_qps(self.0, out)
        }
    }

    // `rvt_dev_info` reaches an empty placeholder struct that bindgen generates for a type
    // nothing here touches; the C side takes it by pointer only.
    #[allow(improper_ctypes)]
    extern "C" {
        fn rvt_loop_debugfs_dir(name: *const c_char, parent: *mut c_void) -> *mut c_void;
        fn rvt_loop_debugfs_qp_stats(dir: *mut c_void, rdi: *mut bindings::rvt_dev_info);
        fn rvt_loop_debugfs_remove(dentry: *mut c_void);
        fn rvt_loop_seq_write(m: *mut c_void, s: *const u8, len: usize);
    }

    /// A debugfs dentry of ours, removed (with what is below it) when dropped.
    struct Dentry(*mut c_void);

    // SAFETY: a dentry may be used and removed from any thread.
    unsafe impl Send for Dentry {}
    // SAFETY: `&Dentry` only gives the pointer, to create files below it.
    unsafe impl Sync for Dentry {}

    impl Drop for Dentry {
        fn drop(&mut self) {
            // SAFETY: a dentry we created (or an error value, which it ignores), removed once;
            // waits for the readers of the files below it.
            unsafe { rvt_loop_debugfs_remove(self.0) };
        }
    }

    /// A directory, removed when its last handle goes.
    #[derive(Clone)]
    pub(crate) struct Root(Arc<Dentry>);

    impl Root {
        pub(crate) fn new(name: &'static core::ffi::CStr) -> Result<Self> {
            // SAFETY: `name` is a C string; no parent: the debugfs root.
            let dir = unsafe {
                rvt_loop_debugfs_dir(crate::compat::c_str_ptr(name), core::ptr::null_mut())
            };
            Ok(Self(Arc::new(Dentry(dir), GFP_KERNEL)?))
        }
    }

    /// A device's directory with its `qp_stats`, and its parent's handle, which keeps the
    /// parent until this is gone (fields drop in order).
    pub(crate) struct QpStats {
        _dir: Dentry,
        _parent: Root,
    }

    /// # Safety
    ///
    /// As [`super::qp_stats`].
    pub(crate) unsafe fn qp_stats(
        root: &Root,
        name: &CStr,
        rdi: NonNull<bindings::rvt_dev_info>,
    ) -> Result<QpStats> {
        // SAFETY: `name` is a C string, the parent one of our directories.
        let dir = Dentry(unsafe { rvt_loop_debugfs_dir(name.as_char_ptr(), (root.0).0) });
        // SAFETY: the file's data is the device, which the caller keeps registered while
        // `QpStats` (which removes the file when dropped) lives.
        unsafe { rvt_loop_debugfs_qp_stats(dir.0, rdi.as_ptr()) };
        Ok(QpStats {
            _dir: dir,
            _parent: root.clone(),
        })
    }

    /// Where the `Display` of the QPs writes: the seq_file of a read.
    struct Seq(*mut c_void);

    impl fmt::Write for Seq {
        fn write_str(&mut self, s: &str) -> fmt::Result {
            // SAFETY: the seq_file of the read in progress (`rvt_loop_print_qps`).
            unsafe { rvt_loop_seq_write(self.0, s.as_ptr(), s.len()) };
            Ok(())
        }
    }

    /// The `show` of `qp_stats`: the device's QPs into seq_file `m`.
    ///
    /// # Safety
    ///
    /// `m` is the seq_file of a read of a `qp_stats` file, and `rdi` that file's device, which
    /// is registered while the file exists.
    #[no_mangle]
    unsafe extern "C" fn rvt_loop_print_qps(
        m: *mut c_void,
        rdi: *mut bindings::rvt_dev_info,
    ) -> c_int {
        let Some(rdi) = NonNull::new(rdi) else {
            return EINVAL.to_errno();
        };
        // INVARIANT: the caller's guarantee.
        let table = QpTable(rdi);
        match fmt::write(&mut Seq(m), format_args!("{}", Qps(&table))) {
            Ok(()) => 0,
            Err(_) => EINVAL.to_errno(),
        }
    }
}

pub(crate) use imp::{QpStats, Root};

/// The debugfs directory of one device, `<root>/<name>`, with its `qp_stats` file. Dropping
/// the result removes both, and waits for readers.
///
/// # Safety
///
/// `rdi` is a registered device, which stays registered until the result is dropped.
pub(crate) unsafe fn qp_stats(
    root: &Root,
    name: &CStr,
    rdi: NonNull<bindings::rvt_dev_info>,
) -> Result<QpStats> {
    // SAFETY: the caller's guarantee.
    unsafe { imp::qp_stats(root, name, rdi) }
}

/// What the iterator's callback writes to, and the first error.
struct Walk<'a, 'b> {
    out: &'a mut fmt::Formatter<'b>,
    n: u32,
    result: fmt::Result,
}

/// The contents of `qp_stats`.
fn print_qps(table: &QpTable, out: &mut fmt::Formatter<'_>) -> fmt::Result {
    let mut walk = Walk {
        out,
        n: 0,
        result: Ok(()),
    };
    // SAFETY: By the type invariants the device is registered; `walk` outlives the call,
    // which hands its address back to `print_qp` only.
    unsafe {
        bindings::rvt_qp_iter(
            table.0.as_ptr(),
            (&raw mut walk) as usize as u64,
            Some(print_qp),
        )
    };
    walk.result
}

/// `rvt_qp_iter()`'s callback: one line for `qp`.
///
/// # Safety
///
/// `qp` is a live QP that the caller holds a reference to, and `v` the address of the
/// [`Walk`] that [`print_qps()`] passed.
unsafe extern "C" fn print_qp(qp: *mut bindings::rvt_qp, v: u64) {
    // SAFETY: `v` is the address of `print_qps()`'s `walk`, borrowed by nothing else while
    // the iterator runs.
    let walk = unsafe { &mut *(v as usize as *mut Walk<'_, '_>) };
    if walk.result.is_ok() {
        // SAFETY: The caller holds a reference to `qp`.
        walk.result = unsafe { write_qp(walk.out, walk.n, qp) };
    }
    walk.n += 1;
}

/// A racy read of a field that others write under a lock we do not take (READ_ONCE()).
///
/// # Safety
///
/// `p` is valid and aligned.
unsafe fn read_once(p: *const u32) -> u32 {
    // SAFETY: The caller's guarantee; relaxed loads are what READ_ONCE() is.
    unsafe { atomic_load(p.cast_mut(), Relaxed) }
}

/// Writes the line of QP number `n`, `qp`.
///
/// # Safety
///
/// `qp` is a live QP.
unsafe fn write_qp(out: &mut fmt::Formatter<'_>, n: u32, qp: *mut bindings::rvt_qp) -> fmt::Result {
    // SAFETY: The number and type of a live QP never change.
    let (qpn, qpt) = unsafe { ((*qp).ibqp.qp_num, (*qp).ibqp.qp_type) };
    // SAFETY: `state` is a u8 of the live QP, read as the i8 the atomics know; refcount an
    // atomic_t.
    let (state, refcount) = unsafe {
        (
            atomic_load((&raw mut (*qp).state).cast::<i8>(), Relaxed) as u8,
            atomic_load(&raw mut (*qp).refcount.counter, Relaxed),
        )
    };
    write!(
        out,
        "n={n} qpn={qpn:#x} type={} state={} refcount={refcount}",
        type_name(qpt),
        state_name(state.into()),
    )?;
    // SAFETY: The fields are u32 of the live QP.
    let [s_last, s_acked, s_cur, s_tail, s_head, s_size, s_avail] = unsafe {
        [
            &raw const (*qp).s_last,
            &raw const (*qp).s_acked,
            &raw const (*qp).s_cur,
            &raw const (*qp).s_tail,
            &raw const (*qp).s_head,
            &raw const (*qp).s_size,
            &raw const (*qp).s_avail,
        ]
        .map(|p| read_once(p))
    };
    write!(
        out,
        " s_last={s_last} s_acked={s_acked} s_cur={s_cur} s_tail={s_tail} s_head={s_head} \
         s_size={s_size} s_avail={s_avail}"
    )?;
    // SAFETY: `qp` is live.
    unsafe { write_rq(out, qp) }?;
    // SAFETY: The fields are u32 of the live QP.
    let [s_last_psn, s_psn, s_next_psn, r_psn, remote_qpn] = unsafe {
        [
            &raw const (*qp).s_last_psn,
            &raw const (*qp).s_psn,
            &raw const (*qp).s_next_psn,
            &raw const (*qp).r_psn,
            &raw const (*qp).remote_qpn,
        ]
        .map(|p| read_once(p))
    };
    writeln!(
        out,
        " s_last_psn={s_last_psn:#x} s_psn={s_psn:#x} s_next_psn={s_next_psn:#x} \
         r_psn={r_psn:#x} remote_qpn={remote_qpn:#x}"
    )
}

/// The receive queue's positions: `srq=yes` for a QP on a shared receive queue, else its
/// own ring's head (the producer's), tail (the consumer's) and size.
///
/// # Safety
///
/// `qp` is a live QP.
unsafe fn write_rq(out: &mut fmt::Formatter<'_>, qp: *mut bindings::rvt_qp) -> fmt::Result {
    // SAFETY: The SRQ and the receive queue's rings are set at creation and never change.
    let (srq, rq) = unsafe { ((*qp).ibqp.srq, &raw const (*qp).r_rq) };
    if !srq.is_null() {
        return write!(out, " srq=yes");
    }
    // SAFETY: As above; a user QP's ring (`wq`) is shared with user space, a kernel QP's is
    // `kwq`, and a QP without an SRQ has one of them.
    let (size, wq, kwq) = unsafe { ((*rq).size, (*rq).wq, (*rq).kwq) };
    // SAFETY: The indices are u32 of the live ring; the producer and the consumer write
    // them under their own locks (or in user space).
    let (head, tail) = unsafe {
        if !wq.is_null() {
            (
                read_once(&raw const (*wq).head.val),
                read_once(&raw const (*wq).tail.val),
            )
        } else if !kwq.is_null() {
            (
                read_once(&raw const (*kwq).head),
                read_once(&raw const (*kwq).tail),
            )
        } else {
            (0, 0)
        }
    };
    write!(out, " r_head={head} r_tail={tail} r_size={size}")
}

fn type_name(qpt: ib_qp_type) -> &'static str {
    match qpt {
        ib_qp_type::IB_QPT_SMI => "SMI",
        ib_qp_type::IB_QPT_GSI => "GSI",
        ib_qp_type::IB_QPT_RC => "RC",
        ib_qp_type::IB_QPT_UC => "UC",
        ib_qp_type::IB_QPT_UD => "UD",
        _ => "other",
    }
}

fn state_name(state: u32) -> &'static str {
    match ib_qp_state(state) {
        ib_qp_state::IB_QPS_RESET => "RESET",
        ib_qp_state::IB_QPS_INIT => "INIT",
        ib_qp_state::IB_QPS_RTR => "RTR",
        ib_qp_state::IB_QPS_RTS => "RTS",
        ib_qp_state::IB_QPS_SQD => "SQD",
        ib_qp_state::IB_QPS_SQE => "SQE",
        ib_qp_state::IB_QPS_ERR => "ERR",
        _ => "unknown",
    }
}
