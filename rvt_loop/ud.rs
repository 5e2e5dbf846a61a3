// SPDX-License-Identifier: GPL-2.0-only

//! The datagram send engine: UD QPs and the port's SMI (QP0) and GSI (QP1) QPs.
//!
//! rdmavt has no datagram loopback of its own, so rvt_loop does what hfi1 does for a UD
//! packet addressed to its own port (hfi1/ud.c, `hfi1_make_ud_req()` and `ud_loopback()`):
//! each posted request is delivered straight into the receive queue of the QP it names, or,
//! for a multicast destination, of every QP attached to the group, and then completed on the
//! sender. The port has no wire, so a request for any other LID is completed and dropped.
//!
//! # Locks
//!
//! The sender's `s_lock` guards the send queue indices and `s_flags`; it is dropped while a
//! request is delivered, with `RVT_S_BUSY` keeping the engine single-threaded per QP, as in
//! hfi1. Delivery takes the receiver's `r_lock` alone. So the engine never holds two QP
//! locks at once, and the receiver may be the sender itself.

use crate::compat::{
    atomic::{atomic_load, Relaxed},
    lock::{Guard, Lock, SpinLockIrqBackend},
    rcu,
};
use crate::{bindings, device::LoopDev, rdmavt, stats::Counter};
use core::mem::size_of;

type Qp = bindings::rvt_qp;
type IbQpType = bindings::ib_qp_type;

/// The permissive LID, which reaches the GSI QP of the port itself.
const LID_PERMISSIVE: u32 = 0xffff;
/// LIDs from here up to (not including) the permissive LID are multicast LIDs.
const MULTICAST_LID_BASE: u32 = 0xc000;
/// The size of the GRH that begins every UD receive buffer, present on the wire or not.
const GRH_BYTES: u32 = size_of::<bindings::ib_grh>() as u32;
/// The fields of a GRH's first word (include/rdma/ib_hdrs.h).
const GRH_VERSION: u32 = 6 << 28;
const GRH_TCLASS_SHIFT: u32 = 20;
const GRH_NEXT_HDR: u8 = 0x1b;
/// The P_Key bits that name a partition, and the full-membership bit.
const PKEY_LOW_15: u16 = 0x7fff;
const PKEY_MEMBER: u16 = 0x8000;

/// Takes a spinlock embedded in a QP.
///
/// # Safety
///
/// `lock` is an initialised spinlock of a QP that stays alive for `'a`.
unsafe fn lock<'a>(lock: *mut bindings::spinlock_t) -> Guard<'a, (), SpinLockIrqBackend> {
    // SAFETY: The caller guarantees that the lock is initialised and lives for `'a`; the two
    // bindings of `spinlock_t` are the same C type.
    unsafe { Lock::<(), SpinLockIrqBackend>::from_raw(lock.cast()) }.lock()
}

/// SMI and GSI QPs carry datagrams like UD QPs; a GSI QP talks to UD QPs.
fn datagram_class(qpt: IbQpType) -> IbQpType {
    if qpt == IbQpType::IB_QPT_GSI {
        IbQpType::IB_QPT_UD
    } else {
        qpt
    }
}

fn is_special(qpt: IbQpType) -> bool {
    qpt == IbQpType::IB_QPT_GSI || qpt == IbQpType::IB_QPT_SMI
}

/// What the send engine does next.
enum Step {
    /// Deliver and complete this request.
    Send(*mut bindings::rvt_swqe),
    /// The QP is in the error state: complete the oldest request with a flush error.
    Flush(*mut bindings::rvt_swqe),
    /// Nothing to do.
    Idle,
}

/// The next step for `qp`, advancing `s_cur` past a request to send.
///
/// # Safety
///
/// `qp` is a live datagram QP whose `s_lock` the caller holds.
unsafe fn next_step(qp: *mut Qp) -> Step {
    // SAFETY: `qp` is live (caller); s_head is written under s_hlock, which we do not hold,
    // so it is read once, as READ_ONCE() would.
    let head = unsafe { atomic_load(&raw mut (*qp).s_head, Relaxed) };
    // SAFETY: The caller holds `s_lock`, which protects s_last, s_cur and s_size.
    let (last, cur, size) = unsafe { ((*qp).s_last, (*qp).s_cur, (*qp).s_size) };
    // SAFETY: `qp` is live.
    let ops = unsafe { rdmavt::state_ops(qp) };
    if ops & bindings::RVT_PROCESS_NEXT_SEND_OK == 0 {
        if ops & bindings::RVT_FLUSH_SEND == 0 || last == head {
            return Step::Idle;
        }
        // SAFETY: `last` is an index into the send queue.
        return Step::Flush(unsafe { rdmavt::swqe(qp, last) });
    }
    if cur == head {
        return Step::Idle;
    }
    // SAFETY: `cur` is an index into the send queue; the entries from s_cur to s_head were
    // posted completely before s_head moved past them.
    let wqe = unsafe { rdmavt::swqe(qp, cur) };
    // SAFETY: The caller holds `s_lock`.
    unsafe { (*qp).s_cur = if cur + 1 >= size { 0 } else { cur + 1 } };
    Step::Send(wqe)
}

/// `do_send` for a datagram QP: delivers every posted request and completes it, or flushes
/// them when the QP is in the error state.
///
/// # Safety
///
/// `qp` is a live UD, SMI or GSI QP of ours, and the caller holds none of its locks.
pub(crate) unsafe fn do_send(qp: *mut Qp) {
    // SAFETY: `qp` is live for the whole call.
    let mut guard = unsafe { lock(&raw mut (*qp).s_lock) };
    // SAFETY: We hold `s_lock`, which protects `s_flags`; `qp` is live.
    let busy = unsafe { (*qp).s_flags } & (bindings::RVT_S_BUSY | bindings::RVT_S_ANY_WAIT) != 0;
    // SAFETY: `qp` is live.
    if busy || unsafe { rdmavt::state_ops(qp) } & bindings::RVT_PROCESS_OR_FLUSH_SEND == 0 {
        return;
    }
    // SAFETY: We hold `s_lock`.
    unsafe { (*qp).s_flags |= bindings::RVT_S_BUSY };
    loop {
        // SAFETY: We hold `s_lock` of the live datagram QP `qp`.
        match unsafe { next_step(qp) } {
            Step::Idle => break,
            Step::Flush(wqe) => {
                // SAFETY: We hold `s_lock`, and `wqe` is the entry at s_last.
                unsafe {
                    rdmavt::send_complete(qp, wqe, bindings::ib_wc_status::IB_WC_WR_FLUSH_ERR)
                }
            }
            Step::Send(wqe) => {
                // RVT_S_BUSY keeps `wqe` ours while `s_lock` is dropped for the delivery.
                drop(guard);
                // SAFETY: `wqe` is a posted request of `qp`, which nobody else completes.
                unsafe { deliver(qp, wqe) };
                // SAFETY: As above.
                guard = unsafe { lock(&raw mut (*qp).s_lock) };
                // SAFETY: We hold `s_lock`; the engine completes in order, one request at a
                // time, so `wqe` is the entry at s_last.
                unsafe { rdmavt::send_complete(qp, wqe, bindings::ib_wc_status::IB_WC_SUCCESS) }
            }
        }
    }
    // SAFETY: We hold `s_lock`.
    unsafe { (*qp).s_flags &= !bindings::RVT_S_BUSY };
    drop(guard);
}

/// The address a datagram request goes to.
pub(crate) struct Dest<'a> {
    ah: &'a bindings::rdma_ah_attr,
    dlid: u32,
}

impl<'a> Dest<'a> {
    /// The destination of address handle attributes `ah`.
    pub(crate) fn new(ah: &'a bindings::rdma_ah_attr) -> Self {
        // rdma_ah_get_dlid(). SAFETY: Each arm reads the union member that `type_` names.
        let dlid = unsafe {
            match ah.type_ {
                bindings::rdma_ah_attr_type_RDMA_AH_ATTR_TYPE_IB => {
                    u32::from(ah.__bindgen_anon_1.ib.dlid)
                }
                bindings::rdma_ah_attr_type_RDMA_AH_ATTR_TYPE_OPA => ah.__bindgen_anon_1.opa.dlid,
                _ => 0,
            }
        };
        Self { ah, dlid }
    }

    pub(crate) fn grh(&self) -> Option<&bindings::ib_global_route> {
        (u32::from(self.ah.ah_flags) & bindings::ib_ah_flags_IB_AH_GRH != 0).then_some(&self.ah.grh)
    }

    /// Whether the DLID is a multicast LID (the permissive LID is not one).
    pub(crate) fn has_multicast_lid(&self) -> bool {
        (MULTICAST_LID_BASE..LID_PERMISSIVE).contains(&self.dlid)
    }

    fn is_multicast(&self) -> bool {
        // SAFETY: Every bit pattern is a valid `raw` GID.
        let mgid = self.grh().is_some_and(|g| unsafe { g.dgid.raw[0] } == 0xff);
        mgid || self.has_multicast_lid()
    }
}

/// Delivers the request `wqe` of `sqp` to its destination QP(s) on our port. Whatever goes
/// wrong at the destination is the receiver's business: the request still completes.
///
/// # Safety
///
/// `sqp` is a live datagram QP of ours, the caller holds none of its locks, and `wqe` is a
/// posted request of it that stays posted during the call.
unsafe fn deliver(sqp: *mut Qp, wqe: *mut bindings::rvt_swqe) {
    // SAFETY: rdmavt copied the AH attributes of every datagram request into `ud_wr.attr`
    // when it was posted; they stay until the request completes.
    let ah = unsafe { &*(*wqe).__bindgen_anon_1.ud_wr.attr };
    let dest = Dest::new(ah);
    // SAFETY: `sqp` is live; its device is one of ours.
    let dev = unsafe { LoopDev::from_ibdev((*sqp).ibqp.device) };
    // SAFETY: `sqp` is live; the type never changes.
    let sqpt = unsafe { (*sqp).ibqp.qp_type };
    // The QPs found below stay alive until the RCU read-side section ends.
    let _rcu = rcu::read_lock();
    if dest.is_multicast() {
        // SAFETY: The caller's guarantees, and we are in an RCU read-side section.
        unsafe { deliver_multicast(dev, sqp, wqe, &dest) };
    } else if dest.dlid == dev.lid()
        || (dest.dlid == LID_PERMISSIVE && sqpt == IbQpType::IB_QPT_GSI)
    {
        // SAFETY: `wqe` is a datagram request.
        let qpn = unsafe { (*wqe).__bindgen_anon_1.ud_wr.wr.remote_qpn };
        // SAFETY: `sqp` is live and we are in an RCU read-side section.
        let dqp = unsafe { rdmavt::lookup_qpn(sqp, qpn) };
        if !dqp.is_null() {
            // SAFETY: The caller's guarantees; `dqp` lives until `_rcu` is dropped.
            unsafe { receive(dev, sqp, wqe, &dest, dqp) };
        }
    }
}

/// Delivers `wqe` to every QP attached to the multicast group it is addressed to. IB
/// multicast needs a GRH: it names the group.
///
/// # Safety
///
/// As for [`deliver()`], and the caller is in an RCU read-side section.
unsafe fn deliver_multicast(
    dev: &LoopDev,
    sqp: *mut Qp,
    wqe: *mut bindings::rvt_swqe,
    dest: &Dest<'_>,
) {
    let Some(grh) = dest.grh() else { return };
    // MLIDs are 16 bits; the cast keeps a unicast LID from matching a group.
    // SAFETY: `sqp` is live.
    let mcast = unsafe { rdmavt::mcast_find(sqp, &grh.dgid, dest.dlid as u16) };
    if mcast.is_null() {
        return;
    }
    // SAFETY: `mcast` is held by the reference mcast_find() took; its list of attached QPs
    // is an RCU list (rvt_mcast_qp::list), which we walk inside the caller's read section.
    let head = unsafe { &raw mut (*mcast).qp_list };
    // SAFETY: As above; rcu_dereference() of `next` is a single load on every architecture
    // that runs this (a dependent load).
    let mut pos = unsafe { atomic_load(&raw mut (*head).next, Relaxed) };
    while pos != head {
        // `pos` is the `list` field, at offset 0, of a live `rvt_mcast_qp`.
        let mqp = pos.cast::<bindings::rvt_mcast_qp>();
        // SAFETY: `mqp` is live, and an attached QP stays alive while it is on the list.
        unsafe { receive(dev, sqp, wqe, dest, (*mqp).qp) };
        // SAFETY: As above.
        pos = unsafe { atomic_load(&raw mut (*pos).next, Relaxed) };
    }
    // SAFETY: The reference mcast_find() took, put once.
    unsafe { rdmavt::mcast_put(mcast) };
}

/// Whether a packet with P_Key `pkey` may enter through the P_Key table entry `entry`, as
/// hfi1's ingress check has it: same partition, and not both limited members.
fn pkey_matches(pkey: u16, entry: u16) -> bool {
    pkey & PKEY_LOW_15 == entry & PKEY_LOW_15
        && (pkey & PKEY_MEMBER != 0 || entry & PKEY_MEMBER != 0)
}

/// hfi1's `ingress_pkey_check()`: the partition of `pkey` is in the port's table, most
/// likely at `index`, the receiving QP's.
fn pkey_admits(dev: &LoopDev, pkey: u16, index: u8) -> bool {
    pkey & PKEY_LOW_15 != 0
        && (pkey_matches(pkey, dev.pkey(index.into()))
            || dev.pkeys().any(|e| pkey_matches(pkey, e)))
}

/// The GRH the receiver finds in front of the payload when the request had one.
fn make_grh(dev: &LoopDev, route: &bindings::ib_global_route) -> bindings::ib_grh {
    let flow = GRH_VERSION | u32::from(route.traffic_class) << GRH_TCLASS_SHIFT | route.flow_label;
    bindings::ib_grh {
        version_tclass_flow: flow.to_be(),
        // hfi1 leaves the payload length of a looped-back GRH at 0 too.
        paylen: 0,
        next_hdr: GRH_NEXT_HDR,
        hop_limit: route.hop_limit,
        // The port has one GID: the subnet prefix and the port GUID.
        sgid: bindings::ib_gid {
            global: bindings::ib_gid__bindgen_ty_1 {
                subnet_prefix: dev.gid_prefix(),
                interface_id: dev.guid().to_be(),
            },
        },
        dgid: route.dgid,
    }
}

/// Counts a datagram of `length` payload bytes placed in a receive WQE.
fn count_received(dev: &LoopDev, dest: &Dest<'_>, length: u32) {
    dev.count(Counter::RcvdPkts, 1);
    dev.count(Counter::RcvdBytes, length.into());
    let kind = if dest.is_multicast() {
        Counter::McastDeliveries
    } else {
        Counter::UdDeliveries
    };
    dev.count(kind, 1);
}

/// Receives `wqe` of `sqp` on `dqp`, as hfi1's `ud_loopback()` does: checks type, state,
/// P_Key and Q_Key, takes a receive WQE, copies GRH and payload, and completes it. A request
/// that fails a check is dropped silently, as the IBTA asks.
///
/// # Safety
///
/// As for [`deliver()`]; `dqp` is a QP of the same device that stays alive during the call.
unsafe fn receive(
    dev: &LoopDev,
    sqp: *mut Qp,
    wqe: *mut bindings::rvt_swqe,
    dest: &Dest<'_>,
    dqp: *mut Qp,
) {
    // SAFETY: Both QPs are live; type, number, Q_Key and P_Key index are only changed by
    // modify_qp(), and a racing change makes at most this one datagram go astray, as on hfi1.
    let (sqpt, dqpt, dqpn, dqkey, sqkey, dpkey_index, spkey_index) = unsafe {
        (
            (*sqp).ibqp.qp_type,
            (*dqp).ibqp.qp_type,
            (*dqp).ibqp.qp_num,
            (*dqp).qkey,
            (*sqp).qkey,
            (*dqp).s_pkey_index,
            (*sqp).s_pkey_index,
        )
    };
    // SAFETY: `wqe` is a posted datagram request.
    let ud = unsafe { &(*wqe).__bindgen_anon_1.ud_wr.wr };
    if datagram_class(dqpt) != datagram_class(sqpt) {
        return;
    }
    // SAFETY: `dqp` is live.
    if unsafe { rdmavt::state_ops(dqp) } & bindings::RVT_PROCESS_RECV_OK == 0 {
        return;
    }
    if dqpn > 1 && !pkey_admits(dev, dev.pkey(spkey_index.into()), dpkey_index) {
        return;
    }
    // Q_Keys with the high bit set mean the sender's own (IBTA 10.2.5); QP0 has none.
    let qkey = if (ud.remote_qkey as i32) < 0 {
        sqkey
    } else {
        ud.remote_qkey
    };
    if dqpn != 0 && qkey != dqkey {
        return;
    }

    // SAFETY: `wqe` is posted; its length and work request do not change while it is.
    let (length, wr) = unsafe { ((*wqe).length, &(*wqe).__bindgen_anon_1.wr) };
    let grh = dest.grh().map(|route| make_grh(dev, route));

    // SAFETY: `dqp` is live during the call.
    let _r = unsafe { lock(&raw mut (*dqp).r_lock) };
    // SAFETY: We hold the `r_lock` of `dqp`, which protects r_flags and the receive state.
    if unsafe { (*dqp).r_flags } & bindings::RVT_R_REUSE_SGE as u8 != 0 {
        // A datagram too big for it left the last receive WQE unused (see below).
        // SAFETY: As above.
        unsafe { (*dqp).r_flags &= !(bindings::RVT_R_REUSE_SGE as u8) };
    } else {
        // SAFETY: We hold `r_lock`.
        let got = unsafe { rdmavt::get_rwqe(dqp) };
        if got < 0 {
            // A bad receive WQE: the receiver goes to the error state, as on hfi1.
            // SAFETY: As above.
            unsafe { rdmavt::rc_error(dqp, bindings::ib_wc_status::IB_WC_LOC_QP_OP_ERR) };
        }
        if got <= 0 {
            return;
        }
    }
    // `setup_wqe` kept the datagram within one packet; the sum is checked all the same, as
    // the length comes from user space.
    // SAFETY: We hold `r_lock`.
    let r_len = unsafe { (*dqp).r_len };
    let Some(byte_len) = length.checked_add(GRH_BYTES).filter(|&n| n <= r_len) else {
        // Dropped silently; the receive WQE serves the next datagram.
        // SAFETY: As above.
        unsafe { (*dqp).r_flags |= bindings::RVT_R_REUSE_SGE as u8 };
        return;
    };
    // SAFETY: We hold `r_lock`; the receive WQE has room for the GRH and the payload.
    unsafe {
        rdmavt::recv_grh(dqp, grh.as_ref());
        rdmavt::recv_payload(dqp, wqe);
    }
    count_received(dev, dest, length);
    // SAFETY: We hold `r_lock`.
    if !unsafe { rdmavt::take_wr_id(dqp) } {
        return;
    }

    // SAFETY: `ib_wc` is plain data whose enums have a zero variant (IB_WC_SUCCESS, ...).
    let mut wc: bindings::ib_wc = unsafe { core::mem::zeroed() };
    // SAFETY: We hold `r_lock`, which protects r_wr_id.
    wc.__bindgen_anon_1.wr_id = unsafe { (*dqp).r_wr_id };
    wc.status = bindings::ib_wc_status::IB_WC_SUCCESS;
    wc.opcode = bindings::ib_wc_opcode::IB_WC_RECV;
    wc.byte_len = byte_len;
    // SAFETY: Only the address of the live `dqp`'s `ibqp` is taken.
    wc.qp = unsafe { &raw mut (*dqp).ibqp };
    // SAFETY: `sqp` is live.
    wc.src_qp = unsafe { (*sqp).ibqp.qp_num };
    if grh.is_some() {
        wc.wc_flags |= bindings::ib_wc_flags_IB_WC_GRH as i32;
    }
    if wr.opcode == bindings::ib_wr_opcode::IB_WR_SEND_WITH_IMM {
        wc.wc_flags |= bindings::ib_wc_flags_IB_WC_WITH_IMM as i32;
        // SAFETY: A send with immediate carries `imm_data` in `ex`.
        wc.ex.imm_data = unsafe { wr.ex.imm_data };
    }
    wc.pkey_index = match (is_special(dqpt), is_special(sqpt)) {
        (true, true) => ud.pkey_index,
        (true, false) => spkey_index.into(),
        (false, _) => 0,
    };
    // The port's LMC is 0: the source LID is the port's, with no path bits.
    wc.slid = dev.lid() & 0xffff;
    wc.sl = dest.ah.sl;
    // SAFETY: `dqp` is live; its port never changes.
    wc.port_num = unsafe { (*dqp).port_num }.into();
    let solicited = wr.send_flags & bindings::ib_send_flags_IB_SEND_SOLICITED != 0;
    // SAFETY: We hold `r_lock`.
    unsafe { rdmavt::recv_cq(dqp, &mut wc, solicited) };
}
