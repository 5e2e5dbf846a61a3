// SPDX-License-Identifier: GPL-2.0-only

//! Step 2 of the loopback, the responder: one send WQE delivered to the destination QP, with
//! only the destination's `r_lock` held (and its `s_lock` inside it, in order, to move it to
//! the error state). What the IB responder would do on the wire: consume a receive WQE, check
//! rkeys and access rights, move the data, perform the atomic, complete the receive.

use crate::compat::{
    atomic::{Atomic, Full},
    rcu,
};

use super::{
    aeth,
    sge::{self, start_sge},
    Delivery,
};
use crate::{
    cq::{RecvExtra, WcStatus},
    device::Port,
    mr::{self, ACCESS_REMOTE_ATOMIC, ACCESS_REMOTE_READ, ACCESS_REMOTE_WRITE},
    qp::{
        raise_last_wqe_reached, state_ops, Delivered, ErrorOutcome, GetWqe, Locked, Qp, RecvGuard,
        SendEngine, Swqe, WrOpcode,
    },
};

/// A request the responder refuses: the statuses of the send and of the receive side (the
/// responder goes to the error state with the latter).
struct Refused {
    send: WcStatus,
    recv: WcStatus,
}

impl Refused {
    /// An invalid request (no access, bad length, misaligned atomic): a UC requester does
    /// not learn of it.
    fn invalid(sqp: &Qp) -> Self {
        let send = if sqp.is_rc() {
            WcStatus::IB_WC_REM_INV_REQ_ERR
        } else {
            WcStatus::IB_WC_SUCCESS
        };
        Self {
            send,
            recv: WcStatus::IB_WC_LOC_QP_OP_ERR,
        }
    }

    /// The responder could not take a receive WQE (a bad one in its queue).
    fn operation() -> Self {
        Self {
            send: WcStatus::IB_WC_REM_OP_ERR,
            recv: WcStatus::IB_WC_LOC_QP_OP_ERR,
        }
    }

    /// A key, address range or access right that does not check out.
    fn access() -> Self {
        Self {
            send: WcStatus::IB_WC_REM_ACCESS_ERR,
            recv: WcStatus::IB_WC_LOC_PROT_ERR,
        }
    }
}

/// `loopback_qp_drop`: the destination is missing or cannot receive. An RC requester would
/// time out and retry, so it gets the error it would end with; UC drops silently.
fn drop_packet(port: &Port, sqp: &Qp) -> Delivery {
    port.count_pkt_drop();
    if sqp.is_rc() {
        Delivery::Failed(WcStatus::IB_WC_RETRY_EXC_ERR)
    } else {
        Delivery::Failed(WcStatus::IB_WC_SUCCESS)
    }
}

/// A local operation (REG_MR, LOCAL_INV) acts on the sender alone, so it completes whatever
/// the destination, as hfi1's requesters do it. The C rdmavt's loopback looks for the
/// destination first and drops the WQE with the message when it is missing or cannot receive
/// (RC: IB_WC_RETRY_EXC_ERR; UC: IB_WC_SUCCESS) without invalidating the rkey, and leaves a
/// deferred LOCAL_INV counted in `local_ops_pending` for good. `None`: not a local operation.
fn local_operation(sqp: &Qp, wqe: &Swqe) -> Option<Delivery> {
    match wqe.opcode() {
        // The registration itself happened at post time; only its completion is left.
        WrOpcode::IB_WR_REG_MR => Some(Delivery::done()),
        WrOpcode::IB_WR_LOCAL_INV => Some(local_invalidate(sqp, wqe)),
        _ => None,
    }
}

/// LOCAL_INV: invalidates the rkey at the sender, unless the post did it already (it was
/// neither fenced nor behind another pending local operation).
fn local_invalidate(sqp: &Qp, wqe: &Swqe) -> Delivery {
    if wqe.completion_only() {
        return Delivery::done();
    }
    let status = match mr::invalidate_rkey(sqp, wqe.invalidate_rkey()) {
        Ok(()) => WcStatus::IB_WC_SUCCESS,
        Err(_) => WcStatus::IB_WC_LOC_PROT_ERR,
    };
    Delivery::Done {
        status,
        local_op: true,
    }
}

/// Step 2, the responder: delivers `wqe` to `dest` with only `dest`'s `r_lock` held. Its key
/// checks use the loopback's RCU read-side section `rcu`, which keeps `dest` alive.
pub(super) fn deliver(
    busy: &mut SendEngine<'_>,
    dest: Option<&Qp>,
    port: &Port,
    wqe: &Swqe,
    rcu: &rcu::Guard,
) -> Delivery {
    let sqp = busy.qp;
    if let Some(delivery) = local_operation(sqp, wqe) {
        return delivery;
    }
    let Some(qp) = dest else {
        return drop_packet(port, sqp);
    };
    let mut r = qp.r_lock();
    if !state_ops(r.state()).process_recv_ok() || qp.qp_type() != sqp.qp_type() {
        return drop_packet(port, sqp);
    }
    let mut op = Responder {
        busy,
        r: &mut r,
        port,
        wqe,
        rcu,
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
                raise_last_wqe_reached(qp);
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
    wqe: &'a Swqe,
    /// The loopback's RCU read-side section, for the key checks.
    rcu: &'a rcu::Guard,
}

impl Responder<'_, '_, '_> {
    fn sqp(&self) -> &Qp {
        self.busy.qp
    }

    /// The responder QP.
    fn qp(&self) -> &Qp {
        self.r.qp()
    }

    fn has_access(&self, flag: u32) -> bool {
        u32::from(self.r.qp_access_flags()) & flag != 0
    }

    /// The receive queue's consumer: `rvt_get_rwqe()`. `Ok(false)`: the queue is empty.
    fn get_rwqe(&mut self, wr_id_only: bool) -> Result<bool, Refused> {
        let qp = self.r.qp();
        match qp.get_wqe(self.r, wr_id_only, self.rcu) {
            GetWqe::Error => Err(Refused::operation()),
            GetWqe::Empty => Ok(false),
            GetWqe::Taken => Ok(true),
        }
    }

    fn run(&mut self) -> Result<Delivery, Refused> {
        let wqe = self.wqe;
        // SAFETY: a send WQE of the sender, whose `sg_list` has `wr.num_sge` entries.
        unsafe { start_sge(self.busy.s_sge_mut(), wqe) };
        *self.busy.s_len_mut() = wqe.length();
        match wqe.opcode() {
            WrOpcode::IB_WR_SEND
            | WrOpcode::IB_WR_SEND_WITH_IMM
            | WrOpcode::IB_WR_SEND_WITH_INV => self.send(),
            WrOpcode::IB_WR_RDMA_WRITE | WrOpcode::IB_WR_RDMA_WRITE_WITH_IMM => self.write(),
            WrOpcode::IB_WR_RDMA_READ => self.read(),
            WrOpcode::IB_WR_ATOMIC_CMP_AND_SWP | WrOpcode::IB_WR_ATOMIC_FETCH_AND_ADD => {
                self.atomic()
            }
            _ => Ok(Delivery::Failed(WcStatus::IB_WC_LOC_QP_OP_ERR)),
        }
    }

    /// No receive WQE for the request: RC NAKs and retries after the responder's minimum
    /// RNR time, up to the sender's RNR retry count (7: for ever); UC drops the message.
    fn rnr_nak(&mut self) -> Delivery {
        if self.sqp().is_uc() {
            return Delivery::done();
        }
        self.port.count_rnr_nak();
        if *self.busy.s_rnr_retry_mut() == 0 {
            return Delivery::Failed(WcStatus::IB_WC_RNR_RETRY_EXC_ERR);
        }
        if self.busy.qp.s_rnr_retry_cnt_unlocked() < 7 {
            *self.busy.s_rnr_retry_mut() -= 1;
        }
        Delivery::RnrNak {
            aeth: aeth::rnr_nak(self.r.r_min_rnr_timer()),
        }
    }

    /// SEND, SEND_WITH_IMM, SEND_WITH_INV: into the next receive WQE.
    fn send(&mut self) -> Result<Delivery, Refused> {
        if !self.get_rwqe(false)? {
            return Ok(self.rnr_nak());
        }
        let wqe = self.wqe;
        if wqe.length() > self.r.r_len() {
            return Err(Refused::invalid(self.sqp()));
        }
        let extra = match wqe.opcode() {
            WrOpcode::IB_WR_SEND_WITH_INV => {
                let rkey = wqe.invalidate_rkey();
                match mr::invalidate_rkey(self.qp(), rkey) {
                    Ok(()) => RecvExtra::Invalidated(rkey),
                    Err(_) => RecvExtra::None,
                }
            }
            WrOpcode::IB_WR_SEND_WITH_IMM => RecvExtra::Imm(wqe.imm_data()),
            _ => RecvExtra::None,
        };
        self.transfer(true, false);
        self.complete_receive(extra);
        Ok(Delivery::done())
    }

    /// RDMA_WRITE and RDMA_WRITE_WITH_IMM (which also consumes a receive WQE, for its
    /// completion only).
    fn write(&mut self) -> Result<Delivery, Refused> {
        if !self.has_access(ACCESS_REMOTE_WRITE) {
            return Err(Refused::invalid(self.sqp()));
        }
        let wqe = self.wqe;
        let (extra, copy_last) = if wqe.opcode() == WrOpcode::IB_WR_RDMA_WRITE_WITH_IMM {
            if !self.get_rwqe(true)? {
                return Ok(self.rnr_nak());
            }
            (RecvExtra::Imm(wqe.imm_data()), false)
        } else {
            // A user QP polls the last bytes of a plain write for its arrival: they go last.
            (RecvExtra::None, self.qp().pid() != 0)
        };
        let length = wqe.length();
        if length != 0 {
            let (addr, rkey) = wqe.rdma();
            let (qp, rcu) = (self.r.qp(), self.rcu);
            let target = self.r.r_sge_mut();
            if !sge::check_rkey(target, qp, length, addr, rkey, ACCESS_REMOTE_WRITE, rcu) {
                return Err(Refused::access());
            }
            sge::single(target, length);
        }
        self.transfer(true, copy_last);
        self.complete_receive(extra);
        Ok(Delivery::done())
    }

    /// RDMA_READ: the responder's memory (through the rkey) into the sender's SGEs.
    fn read(&mut self) -> Result<Delivery, Refused> {
        if !self.has_access(ACCESS_REMOTE_READ) {
            return Err(Refused::invalid(self.sqp()));
        }
        let wqe = self.wqe;
        let length = wqe.length();
        let (addr, rkey) = wqe.rdma();
        let source = self.busy.s_sge_mut();
        let (qp, rcu) = (self.r.qp(), self.rcu);
        if !sge::check_rkey(source, qp, length, addr, rkey, ACCESS_REMOTE_READ, rcu) {
            return Err(Refused::access());
        }
        sge::single(source, length);
        if length == 0 {
            // The rkey is checked as C checks it, but no copy will consume the source and give
            // its region reference back: give it back now. C leaks it, and the responder's MR
            // can then never be deregistered.
            // SAFETY: the reference the rkey check just took; the SGE is not used again.
            unsafe { sge::release_current(source, self.rcu.into()) };
        }
        // SAFETY: the WQE's SGEs are the destination; `wr.num_sge` of them.
        unsafe { start_sge(self.r.r_sge_mut(), wqe) };
        // The source holds the rkey's region reference, given back as it is consumed; the
        // destination SGEs keep theirs, which the send completion drops.
        self.transfer(false, false);
        self.complete_receive(RecvExtra::None);
        Ok(Delivery::done())
    }

    /// ATOMIC_CMP_AND_SWP and ATOMIC_FETCH_AND_ADD on 8 aligned bytes of the responder; the
    /// original value lands in the sender's SGE (8 aligned bytes, checked at post).
    fn atomic(&mut self) -> Result<Delivery, Refused> {
        if !self.has_access(ACCESS_REMOTE_ATOMIC) {
            return Err(Refused::invalid(self.sqp()));
        }
        let a = self.wqe.atomic();
        if a.remote_addr % 8 != 0 {
            return Err(Refused::invalid(self.sqp()));
        }
        let qp = self.r.qp();
        let target = self.r.r_sge_mut();
        let rcu = self.rcu;
        if !sge::check_rkey(
            target,
            qp,
            8,
            a.remote_addr,
            a.rkey,
            ACCESS_REMOTE_ATOMIC,
            rcu,
        ) {
            return Err(Refused::access());
        }
        let vaddr = sge::cursor(target);
        if vaddr.addr() % 8 != 0 {
            // A user MR registered at an IOVA whose alignment differs from its user address
            // maps an aligned IB address to an unaligned kernel one; C runs a split-lock
            // atomic there, which the kernel may trap. Refused as a misaligned request.
            // SAFETY: the reference the rkey check took; the SGE is not used again.
            unsafe { sge::release_current(target, rcu.into()) };
            return Err(Refused::invalid(self.sqp()));
        }
        // SAFETY: the rkey check gave a kernel mapping of 8 bytes, 8-aligned (checked above),
        // which others (user space, other atomics) access atomically or not at all.
        let word = unsafe { Atomic::<u64>::from_ptr(vaddr.cast()) };
        let old = if self.wqe.opcode() == WrOpcode::IB_WR_ATOMIC_FETCH_AND_ADD {
            word.fetch_add(a.compare_add, Full)
        } else {
            word.cmpxchg(a.compare_add, a.swap, Full)
                .unwrap_or_else(|cur| cur)
        };
        // SAFETY: the sender's first SGE has 8 bytes (checked at post); the responder's
        // region reference from the rkey check is given back here, as its SGE is done.
        unsafe {
            sge::cursor(self.busy.s_sge_mut())
                .cast::<u64>()
                .write_unaligned(old);
            sge::release_current(target, rcu.into());
        }
        Ok(Delivery::done())
    }

    /// Moves the WQE's data from the sender's SGE state to the responder's. `release`: the
    /// responder's SGEs hold region references, given back as they fill (and the rest at the
    /// end); otherwise the sender's do.
    // Inline, for the reason `sge::transfer` is.
    #[inline(always)]
    fn transfer(&mut self, release: bool, copy_last: bool) {
        let dev = self.busy.qp.device();
        let length = *self.busy.s_len_mut();
        // SAFETY: the responder's `r_sge` covers the WQE's length (checked against `r_len`,
        // or set up by the rkey check); the sender's `s_sge` has `s_len` bytes; both are
        // kernel mappings of checked regions, and the releasing side holds the references.
        let left = unsafe {
            sge::transfer(
                self.busy.s_sge_mut(),
                self.r.r_sge_mut(),
                length,
                release,
                copy_last,
                dev,
                self.rcu.into(),
            )
        };
        *self.busy.s_len_mut() = left;
    }

    /// Completes the receive WQE the delivery consumed, if any: `rvt_recv_cq()`. Inline (C's
    /// is too): out of line, the whole `Responder` had to be built in memory for the call.
    #[inline(always)]
    fn complete_receive(&mut self, extra: RecvExtra) {
        let wqe = self.wqe;
        self.r.complete_delivery(Delivered {
            rdma_with_imm: wqe.opcode() == WrOpcode::IB_WR_RDMA_WRITE_WITH_IMM,
            extra,
            byte_len: wqe.length(),
            solicited: wqe.solicited(),
        });
    }
}
