// SPDX-License-Identifier: GPL-2.0-only

//! Step 2 of the loopback, the responder: one send WQE delivered to the destination QP, with
//! only the destination's `r_lock` held (and its `s_lock` inside it, in order, to move it to
//! the error state). What the IB responder would do on the wire: consume a receive WQE, check
//! rkeys and access rights, move the data, perform the atomic, complete the receive.

use core::ptr;

use kernel::ffi::c_int;

use crate::compat::atomic::{Atomic, Full};

use super::{
    count,
    sge::{copy_mode, copy_sge, sge_length, start_sge, update_sge},
    Delivery,
};
use crate::{
    bindings::{self, ib_wc_status, ib_wr_opcode},
    device::Port,
    qp::{raise_event, state_ops, ErrorOutcome, GetWqe, Locked, Qp, RecvGuard, SendEngine},
};

/// A request the responder refuses: the statuses of the send and of the receive side (the
/// responder goes to the error state with the latter).
struct Refused {
    send: ib_wc_status,
    recv: ib_wc_status,
}

impl Refused {
    /// An invalid request (no access, bad length, misaligned atomic): a UC requester does
    /// not learn of it.
    fn invalid(sqp: &Qp) -> Self {
        let send = if sqp.qp_type() == bindings::ib_qp_type::IB_QPT_RC {
            ib_wc_status::IB_WC_REM_INV_REQ_ERR
        } else {
            ib_wc_status::IB_WC_SUCCESS
        };
        Self {
            send,
            recv: ib_wc_status::IB_WC_LOC_QP_OP_ERR,
        }
    }

    /// The responder could not take a receive WQE (a bad one in its queue).
    fn operation() -> Self {
        Self {
            send: ib_wc_status::IB_WC_REM_OP_ERR,
            recv: ib_wc_status::IB_WC_LOC_QP_OP_ERR,
        }
    }

    /// A key, address range or access right that does not check out.
    fn access() -> Self {
        Self {
            send: ib_wc_status::IB_WC_REM_ACCESS_ERR,
            recv: ib_wc_status::IB_WC_LOC_PROT_ERR,
        }
    }
}

/// `loopback_qp_drop`: the destination is missing or cannot receive. An RC requester would
/// time out and retry, so it gets the error it would end with; UC drops silently.
fn drop_packet(port: &Port, sqp: &Qp) -> Delivery {
    // SAFETY: a live port.
    count(unsafe { &raw mut (*port.as_raw()).n_pkt_drops });
    if sqp.qp_type() == bindings::ib_qp_type::IB_QPT_RC {
        Delivery::Failed(ib_wc_status::IB_WC_RETRY_EXC_ERR)
    } else {
        Delivery::Failed(ib_wc_status::IB_WC_SUCCESS)
    }
}

/// A local operation (REG_MR, LOCAL_INV) acts on the sender alone, so it completes whatever
/// the destination, as hfi1's requesters do it. The C rdmavt's loopback looks for the
/// destination first and drops the WQE with the message when it is missing or cannot receive
/// (RC: IB_WC_RETRY_EXC_ERR; UC: IB_WC_SUCCESS) without invalidating the rkey, and leaves a
/// deferred LOCAL_INV counted in `local_ops_pending` for good. `None`: not a local operation.
fn local_operation(sqp: &Qp, wqe: *mut bindings::rvt_swqe) -> Option<Delivery> {
    // SAFETY: the WQE at `s_last` does not change while the sender holds its send engine.
    let wr = unsafe { &(*wqe).__bindgen_anon_1.wr };
    match wr.opcode {
        // The registration itself happened at post time; only its completion is left.
        ib_wr_opcode::IB_WR_REG_MR => Some(Delivery::done()),
        ib_wr_opcode::IB_WR_LOCAL_INV => Some(local_invalidate(sqp, wr)),
        _ => None,
    }
}

/// LOCAL_INV: invalidates the rkey at the sender, unless the post did it already (it was
/// neither fenced nor behind another pending local operation).
fn local_invalidate(sqp: &Qp, wr: &bindings::ib_send_wr) -> Delivery {
    // CAST: a send flag bit.
    let completion_only = (bindings::ib_send_flags_IB_SEND_RESERVED_START << 1) as c_int;
    if wr.send_flags & completion_only != 0 {
        return Delivery::done();
    }
    // SAFETY: `invalidate_rkey` is the member LOCAL_INV fills; the sender is live.
    let failed = unsafe { bindings::rvt_invalidate_rkey(sqp.as_raw(), wr.ex.invalidate_rkey) } != 0;
    let status = if failed {
        ib_wc_status::IB_WC_LOC_PROT_ERR
    } else {
        ib_wc_status::IB_WC_SUCCESS
    };
    Delivery::Done {
        status,
        local_op: true,
    }
}

/// Step 2, the responder: delivers `wqe` to `dest` with only `dest`'s `r_lock` held.
pub(super) fn deliver(
    busy: &mut SendEngine<'_>,
    dest: Option<&Qp>,
    port: &Port,
    wqe: *mut bindings::rvt_swqe,
) -> Delivery {
    let sqp = busy.qp;
    if let Some(delivery) = local_operation(sqp, wqe) {
        return delivery;
    }
    let Some(qp) = dest else {
        return drop_packet(port, sqp);
    };
    let mut r = qp.r_lock();
    if state_ops(r.state()) & bindings::RVT_PROCESS_RECV_OK == 0 || qp.qp_type() != sqp.qp_type() {
        return drop_packet(port, sqp);
    }
    let mut op = Responder {
        busy,
        r: &mut r,
        port,
        wqe,
    };
    match op.run() {
        Ok(delivery) => delivery,
        Err(refused) => {
            // The responder goes to the error state: `rvt_rc_error()`, with the locks in order.
            let mut s = qp.s_lock();
            let outcome = qp.error(&mut r, &mut s, refused.recv);
            drop(s);
            drop(r);
            if outcome == ErrorOutcome::LastWqe {
                raise_event(qp, bindings::ib_event_type::IB_EVENT_QP_LAST_WQE_REACHED);
            }
            Delivery::Failed(refused.send)
        }
    }
}

/// One WQE at the responder, whose `r_lock` is held.
struct Responder<'a, 'b, 'c> {
    busy: &'a mut SendEngine<'b>,
    r: &'a mut RecvGuard<'c>,
    port: &'a Port,
    wqe: *mut bindings::rvt_swqe,
}

/// The receive completion a delivery produces, if it consumed a receive WQE.
struct RecvFlags {
    wc_flags: c_int,
    ex: bindings::ib_wc__bindgen_ty_2,
}

impl RecvFlags {
    fn none() -> Self {
        Self {
            wc_flags: 0,
            ex: bindings::ib_wc__bindgen_ty_2 { imm_data: 0 },
        }
    }
}

impl Responder<'_, '_, '_> {
    fn sqp(&self) -> &Qp {
        self.busy.qp
    }

    /// The responder QP.
    fn qp(&self) -> &Qp {
        self.r.qp()
    }

    fn wr(&self) -> &bindings::ib_send_wr {
        // SAFETY: the WQE at `s_last` does not change while we hold the send engine.
        unsafe { &(*self.wqe).__bindgen_anon_1.wr }
    }

    fn length(&self) -> u32 {
        // SAFETY: as `wr`.
        unsafe { (*self.wqe).length }
    }

    fn has_access(&self, flag: bindings::ib_access_flags) -> bool {
        u32::from(self.r.qp_access_flags()) & flag != 0
    }

    /// The receive queue's consumer: `rvt_get_rwqe()`. `Ok(false)`: the queue is empty.
    fn get_rwqe(&mut self, wr_id_only: bool) -> Result<bool, Refused> {
        let qp = self.r.qp();
        match qp.get_wqe(self.r, wr_id_only) {
            GetWqe::Error => Err(Refused::operation()),
            GetWqe::Empty => Ok(false),
            GetWqe::Taken => Ok(true),
        }
    }

    /// Checks an rkey of the responder for `len` bytes at `vaddr`, filling `sge`.
    fn rkey_ok(
        &self,
        sge: *mut bindings::rvt_sge,
        len: u32,
        vaddr: u64,
        rkey: u32,
        acc: u32,
    ) -> Result<(), Refused> {
        // CAST: IB access flags fit an int.
        let acc = acc as c_int;
        // SAFETY: the responder is a live QP of ours (the export takes C's pointer to it) and
        // `sge` is the state being set up.
        if unsafe { bindings::rvt_rkey_ok(self.qp().as_raw(), sge, len, vaddr, rkey, acc) } == 0 {
            return Err(Refused::access());
        }
        Ok(())
    }

    fn run(&mut self) -> Result<Delivery, Refused> {
        let wqe = self.wqe;
        let length = self.length();
        // SAFETY: a send WQE of the sender, whose `sg_list` has `wr.num_sge` entries.
        unsafe { start_sge(self.busy.s_sge_mut(), wqe) };
        *self.busy.s_len_mut() = length;
        let op = self.wr().opcode;
        match op {
            ib_wr_opcode::IB_WR_SEND
            | ib_wr_opcode::IB_WR_SEND_WITH_IMM
            | ib_wr_opcode::IB_WR_SEND_WITH_INV => self.send(),
            ib_wr_opcode::IB_WR_RDMA_WRITE | ib_wr_opcode::IB_WR_RDMA_WRITE_WITH_IMM => {
                self.write()
            }
            ib_wr_opcode::IB_WR_RDMA_READ => self.read(),
            ib_wr_opcode::IB_WR_ATOMIC_CMP_AND_SWP | ib_wr_opcode::IB_WR_ATOMIC_FETCH_AND_ADD => {
                self.atomic()
            }
            _ => Ok(Delivery::Failed(ib_wc_status::IB_WC_LOC_QP_OP_ERR)),
        }
    }

    /// No receive WQE for the request: RC NAKs and retries after the responder's minimum
    /// RNR time, up to the sender's RNR retry count (7: for ever); UC drops the message.
    fn rnr_nak(&mut self) -> Delivery {
        if self.sqp().qp_type() == bindings::ib_qp_type::IB_QPT_UC {
            return Delivery::done();
        }
        // SAFETY: a live port.
        count(unsafe { &raw mut (*self.port.as_raw()).n_rnr_naks });
        if *self.busy.s_rnr_retry_mut() == 0 {
            return Delivery::Failed(ib_wc_status::IB_WC_RNR_RETRY_EXC_ERR);
        }
        if self.busy.qp.s_rnr_retry_cnt_unlocked() < 7 {
            *self.busy.s_rnr_retry_mut() -= 1;
        }
        let timer = u32::from(self.r.r_min_rnr_timer());
        Delivery::RnrNak {
            aeth: timer << bindings::IB_AETH_CREDIT_SHIFT,
        }
    }

    /// SEND, SEND_WITH_IMM, SEND_WITH_INV: into the next receive WQE.
    fn send(&mut self) -> Result<Delivery, Refused> {
        if !self.get_rwqe(false)? {
            return Ok(self.rnr_nak());
        }
        if self.length() > self.r.r_len() {
            return Err(Refused::invalid(self.sqp()));
        }
        let wr = *self.wr();
        let mut flags = RecvFlags::none();
        match wr.opcode {
            ib_wr_opcode::IB_WR_SEND_WITH_INV => {
                // SAFETY: the member SEND_WITH_INV fills; the responder is live.
                let rkey = unsafe { wr.ex.invalidate_rkey };
                // SAFETY: as above (the export takes C's pointer to the QP).
                if unsafe { bindings::rvt_invalidate_rkey(self.qp().as_raw(), rkey) } == 0 {
                    flags.wc_flags = bindings::ib_wc_flags_IB_WC_WITH_INVALIDATE as c_int;
                    flags.ex.invalidate_rkey = rkey;
                }
            }
            ib_wr_opcode::IB_WR_SEND_WITH_IMM => {
                flags.wc_flags = bindings::ib_wc_flags_IB_WC_WITH_IMM as c_int;
                // SAFETY: the member SEND_WITH_IMM fills.
                flags.ex.imm_data = unsafe { wr.ex.imm_data };
            }
            _ => {}
        }
        self.transfer(true, false);
        self.complete_receive(flags);
        Ok(Delivery::done())
    }

    /// RDMA_WRITE and RDMA_WRITE_WITH_IMM (which also consumes a receive WQE, for its
    /// completion only).
    fn write(&mut self) -> Result<Delivery, Refused> {
        if !self.has_access(bindings::ib_access_flags_IB_ACCESS_REMOTE_WRITE) {
            return Err(Refused::invalid(self.sqp()));
        }
        let wr = *self.wr();
        let mut flags = RecvFlags::none();
        let copy_last = if wr.opcode == ib_wr_opcode::IB_WR_RDMA_WRITE_WITH_IMM {
            flags.wc_flags = bindings::ib_wc_flags_IB_WC_WITH_IMM as c_int;
            // SAFETY: the member WRITE_WITH_IMM fills.
            flags.ex.imm_data = unsafe { wr.ex.imm_data };
            if !self.get_rwqe(true)? {
                return Ok(self.rnr_nak());
            }
            false
        } else {
            // A user QP polls the last bytes of a plain write for its arrival: they go last.
            self.qp().pid() != 0
        };
        let length = self.length();
        if length != 0 {
            // SAFETY: the member RDMA writes fill.
            let (addr, rkey) = unsafe {
                (
                    (*self.wqe).__bindgen_anon_1.rdma_wr.remote_addr,
                    (*self.wqe).__bindgen_anon_1.rdma_wr.rkey,
                )
            };
            let target = &raw mut self.r.r_sge_mut().sge;
            self.rkey_ok(
                target,
                length,
                addr,
                rkey,
                bindings::ib_access_flags_IB_ACCESS_REMOTE_WRITE,
            )?;
            let ss = self.r.r_sge_mut();
            ss.sg_list = core::ptr::null_mut();
            ss.num_sge = 1;
            ss.total_len = length;
        }
        self.transfer(true, copy_last);
        self.complete_receive(flags);
        Ok(Delivery::done())
    }

    /// RDMA_READ: the responder's memory (through the rkey) into the sender's SGEs.
    fn read(&mut self) -> Result<Delivery, Refused> {
        if !self.has_access(bindings::ib_access_flags_IB_ACCESS_REMOTE_READ) {
            return Err(Refused::invalid(self.sqp()));
        }
        let length = self.length();
        // SAFETY: the member RDMA_READ fills.
        let (addr, rkey) = unsafe {
            (
                (*self.wqe).__bindgen_anon_1.rdma_wr.remote_addr,
                (*self.wqe).__bindgen_anon_1.rdma_wr.rkey,
            )
        };
        let source = &raw mut self.busy.s_sge_mut().sge;
        self.rkey_ok(
            source,
            length,
            addr,
            rkey,
            bindings::ib_access_flags_IB_ACCESS_REMOTE_READ,
        )?;
        let ss = self.busy.s_sge_mut();
        ss.sg_list = core::ptr::null_mut();
        if length == 0 {
            // The rkey is checked as C checks it, but no copy will consume the source and give
            // its region reference back: give it back now. C leaks it, and the responder's MR
            // can then never be deregistered.
            // SAFETY: the reference the rkey check just took; the SGE is not used again.
            unsafe { bindings::rdmavt_rs_rvt_put_mr(ss.sge.mr) };
            ss.num_sge = 0;
        } else {
            ss.num_sge = 1;
        }
        // SAFETY: the WQE's SGEs are the destination; `wr.num_sge` of them.
        unsafe { start_sge(self.r.r_sge_mut(), self.wqe) };
        // The source holds the rkey's region reference, given back as it is consumed; the
        // destination SGEs keep theirs, which the send completion drops.
        self.transfer(false, false);
        self.complete_receive(RecvFlags::none());
        Ok(Delivery::done())
    }

    /// ATOMIC_CMP_AND_SWP and ATOMIC_FETCH_AND_ADD on 8 aligned bytes of the responder; the
    /// original value lands in the sender's SGE (8 aligned bytes, checked at post).
    fn atomic(&mut self) -> Result<Delivery, Refused> {
        if !self.has_access(bindings::ib_access_flags_IB_ACCESS_REMOTE_ATOMIC) {
            return Err(Refused::invalid(self.sqp()));
        }
        // SAFETY: the member atomics fill.
        let a = unsafe { (*self.wqe).__bindgen_anon_1.atomic_wr };
        if a.remote_addr % 8 != 0 {
            return Err(Refused::invalid(self.sqp()));
        }
        let target = &raw mut self.r.r_sge_mut().sge;
        self.rkey_ok(
            target,
            8,
            a.remote_addr,
            a.rkey,
            bindings::ib_access_flags_IB_ACCESS_REMOTE_ATOMIC,
        )?;
        // SAFETY: `target` was filled by the rkey check and holds a region reference.
        let vaddr = unsafe { (*target).vaddr };
        if vaddr.addr() % 8 != 0 {
            // A user MR registered at an IOVA whose alignment differs from its user address
            // maps an aligned IB address to an unaligned kernel one; C runs a split-lock
            // atomic there, which the kernel may trap. Refused as a misaligned request.
            // SAFETY: the reference the rkey check took; the SGE is not used again.
            unsafe { bindings::rdmavt_rs_rvt_put_mr((*target).mr) };
            self.r.r_sge_mut().num_sge = 0;
            return Err(Refused::invalid(self.sqp()));
        }
        // SAFETY: the rkey check gave a kernel mapping of 8 bytes, 8-aligned (checked above),
        // which others (user space, other atomics) access atomically or not at all.
        let word = unsafe { Atomic::<u64>::from_ptr(vaddr.cast()) };
        let old = if self.wr().opcode == ib_wr_opcode::IB_WR_ATOMIC_FETCH_AND_ADD {
            word.fetch_add(a.compare_add, Full)
        } else {
            word.cmpxchg(a.compare_add, a.swap, Full)
                .unwrap_or_else(|cur| cur)
        };
        // SAFETY: the sender's first SGE has 8 bytes (checked at post); the responder's
        // region reference from the rkey check is given back here, as its SGE is done.
        unsafe {
            self.busy
                .s_sge_mut()
                .sge
                .vaddr
                .cast::<u64>()
                .write_unaligned(old);
            bindings::rdmavt_rs_rvt_put_mr((*target).mr);
        }
        self.r.r_sge_mut().num_sge = 0;
        Ok(Delivery::done())
    }

    /// Moves the WQE's data from the sender's SGE state to the responder's. `release`: the
    /// responder's SGEs hold region references, given back as they fill (and the rest at the
    /// end); otherwise the sender's do.
    fn transfer(&mut self, release: bool, copy_last: bool) {
        let sqp: &Qp = self.busy.qp;
        let dev = sqp.device();
        loop {
            let left = *self.busy.s_len_mut();
            if left == 0 {
                break;
            }
            let ss = self.busy.s_sge_mut();
            let len = sge_length(&ss.sge, left);
            if crate::compat::warn_on!(len == 0) {
                break;
            }
            let src = ss.sge.vaddr.cast::<u8>();
            // SAFETY: the responder's `r_sge` covers the WQE's length (checked against
            // `r_len`, or set up by the rkey check); the sender's SGE has `len` bytes at
            // `src`; both are kernel mappings of checked regions.
            unsafe {
                copy_sge(
                    self.r.r_sge_mut(),
                    src,
                    len,
                    release,
                    copy_last,
                    copy_mode(dev, len),
                );
                update_sge(ss, len, !release);
            }
            *self.busy.s_len_mut() = left - len;
        }
        if release {
            // SAFETY: what is left of the responder's `r_sge` still holds references.
            unsafe { bindings::rdmavt_rs_rvt_put_ss(self.r.r_sge_mut()) };
        }
    }

    /// Completes the receive WQE the delivery consumed, if any: `rvt_recv_cq()`.
    fn complete_receive(&mut self, flags: RecvFlags) {
        let qp = self.qp();
        if !qp.test_and_clear_r_aflag(bindings::RVT_R_WRID_VALID) {
            return;
        }
        let wr = self.wr();
        // SAFETY: all zeroes is a valid `ib_wc` (integers, pointers, enums whose 0 is a value).
        let mut wc: bindings::ib_wc = unsafe { core::mem::zeroed() };
        wc.opcode = if wr.opcode == ib_wr_opcode::IB_WR_RDMA_WRITE_WITH_IMM {
            bindings::ib_wc_opcode::IB_WC_RECV_RDMA_WITH_IMM
        } else {
            bindings::ib_wc_opcode::IB_WC_RECV
        };
        wc.wc_flags = flags.wc_flags;
        wc.ex = flags.ex;
        wc.status = ib_wc_status::IB_WC_SUCCESS;
        wc.byte_len = self.length();
        wc.__bindgen_anon_1.wr_id = self.r.r_wr_id();
        wc.qp = qp.ibqp();
        wc.src_qp = self.r.remote_qpn();
        let ah = self.r.remote_ah_attr();
        // SAFETY: a valid address vector; the helper only reads it.
        wc.slid =
            unsafe { bindings::rdmavt_rs_rdma_ah_get_dlid(ptr::from_ref(ah).cast_mut()) } & 0xffff;
        wc.sl = ah.sl;
        wc.port_num = 1;
        let solicited = wr.send_flags & bindings::ib_send_flags_IB_SEND_SOLICITED as c_int != 0;
        // SAFETY: the responder's receive CQ is live while the QP is.
        let entered = unsafe { bindings::rvt_cq_enter(qp.recv_cq(), &mut wc, solicited) };
        if !entered {
            // The CQ overflowed: the QP goes to the error state. C calls rvt_error_qp() here
            // without `s_lock`, which it requires; we take it, in order. As in C's
            // rvt_recv_cq(), no LAST_WQE event follows.
            let responder = self.r.qp();
            let mut s = responder.s_lock();
            let _ = responder.error(self.r, &mut s, ib_wc_status::IB_WC_LOC_QP_OP_ERR);
        }
    }
}
