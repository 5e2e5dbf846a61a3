// SPDX-License-Identifier: GPL-2.0-only

//! Two kernel RC QPs on rvt_loop0, connected to each other through the port's own LID, and
//! the work requests and completion checks the tests are written in.

use crate::{
    bindings,
    verbs::{Buffer, Cq, Device, Mr, Pd, Qp, DATA_LEN, QUEUE_DEPTH},
};
use kernel::{ffi::c_int, prelude::*};

/// The port every QP uses.
const PORT: u32 = 1;

/// `rnr_retry` 7: the responder's RNR NAKs are retried for ever.
pub(crate) const RNR_RETRY_FOREVER: u8 = 7;

/// One QP with its CQ (for sends and receives alike) and its memory. Fields drop in order.
pub(crate) struct Side {
    pub(crate) qp: Qp,
    pub(crate) cq: Cq,
    pub(crate) buf: Buffer,
}

impl Side {
    fn new(dev: &Device, pd: &Pd) -> Result<Self> {
        let buf = Buffer::new(dev)?;
        let cq = Cq::alloc(dev, 2 * QUEUE_DEPTH as i32)?;
        let qp = Qp::create(pd, &cq)?;
        Ok(Self { qp, cq, buf })
    }
}

/// Two connected QPs `a` and `b` in RTS. Fields drop in order: the QPs before the PD, all
/// before the device.
pub(crate) struct Pair {
    pub(crate) a: Side,
    pub(crate) b: Side,
    pd: Pd,
    dev: Device,
}

impl Pair {
    /// A pair whose RNR NAKs are retried `rnr_retry` times (7: for ever).
    pub(crate) fn new(rnr_retry: u8) -> Result<Self> {
        let dev = Device::get()?;
        let pd = Pd::alloc(&dev)?;
        let a = Side::new(&dev, &pd)?;
        let b = Side::new(&dev, &pd)?;
        let pair = Self { a, b, pd, dev };
        pair.connect(&pair.a, pair.b.qp.num(), rnr_retry)?;
        pair.connect(&pair.b, pair.a.qp.num(), rnr_retry)?;
        Ok(pair)
    }

    /// Moves `side`'s QP through INIT and RTR to RTS, towards QP `dest_qpn` on this port.
    fn connect(&self, side: &Side, dest_qpn: u32, rnr_retry: u8) -> Result {
        let lid = self.dev.lid(PORT)?;
        let step = |f: &dyn Fn(&mut bindings::ib_qp_attr) -> u32| -> Result {
            let mut attr = bindings::ib_qp_attr::default();
            let mask = f(&mut attr);
            side.qp.modify(&mut attr, mask)
        };
        step(&|attr| {
            attr.qp_state = bindings::ib_qp_state::IB_QPS_INIT;
            attr.pkey_index = 0;
            attr.port_num = PORT;
            attr.qp_access_flags = (bindings::ib_access_flags_IB_ACCESS_LOCAL_WRITE
                | bindings::ib_access_flags_IB_ACCESS_REMOTE_WRITE
                | bindings::ib_access_flags_IB_ACCESS_REMOTE_READ
                | bindings::ib_access_flags_IB_ACCESS_REMOTE_ATOMIC)
                as i32;
            bindings::ib_qp_attr_mask_IB_QP_STATE
                | bindings::ib_qp_attr_mask_IB_QP_PKEY_INDEX
                | bindings::ib_qp_attr_mask_IB_QP_PORT
                | bindings::ib_qp_attr_mask_IB_QP_ACCESS_FLAGS
        })
        .inspect_err(|e| pr_err!("to INIT: {}\n", e.to_errno()))?;
        step(&|attr| {
            attr.qp_state = bindings::ib_qp_state::IB_QPS_RTR;
            attr.path_mtu = bindings::ib_mtu_IB_MTU_1024;
            attr.dest_qp_num = dest_qpn;
            attr.rq_psn = 0;
            attr.max_dest_rd_atomic = 1;
            attr.min_rnr_timer = 1;
            // SAFETY: A registered device and a valid AH attribute to fill.
            unsafe {
                crate::glue::rvt_loop_kverbs_set_av(self.dev.as_ptr(), &mut attr.ah_attr, PORT, lid)
            };
            bindings::ib_qp_attr_mask_IB_QP_STATE
                | bindings::ib_qp_attr_mask_IB_QP_AV
                | bindings::ib_qp_attr_mask_IB_QP_PATH_MTU
                | bindings::ib_qp_attr_mask_IB_QP_DEST_QPN
                | bindings::ib_qp_attr_mask_IB_QP_RQ_PSN
                | bindings::ib_qp_attr_mask_IB_QP_MAX_DEST_RD_ATOMIC
                | bindings::ib_qp_attr_mask_IB_QP_MIN_RNR_TIMER
        })
        .inspect_err(|e| pr_err!("to RTR: {}\n", e.to_errno()))?;
        step(&|attr| {
            attr.qp_state = bindings::ib_qp_state::IB_QPS_RTS;
            attr.timeout = 14;
            attr.retry_cnt = 7;
            attr.rnr_retry = rnr_retry;
            attr.sq_psn = 0;
            attr.max_rd_atomic = 1;
            bindings::ib_qp_attr_mask_IB_QP_STATE
                | bindings::ib_qp_attr_mask_IB_QP_TIMEOUT
                | bindings::ib_qp_attr_mask_IB_QP_RETRY_CNT
                | bindings::ib_qp_attr_mask_IB_QP_RNR_RETRY
                | bindings::ib_qp_attr_mask_IB_QP_SQ_PSN
                | bindings::ib_qp_attr_mask_IB_QP_MAX_QP_RD_ATOMIC
        })
        .inspect_err(|e| pr_err!("to RTS: {}\n", e.to_errno()))
    }

    /// Moves `side`'s QP to the error state.
    pub(crate) fn to_error(&self, side: &Side) -> Result {
        let mut attr = bindings::ib_qp_attr {
            qp_state: bindings::ib_qp_state::IB_QPS_ERR,
            ..Default::default()
        };
        side.qp
            .modify(&mut attr, bindings::ib_qp_attr_mask_IB_QP_STATE)
    }

    /// The SGE of `len` bytes at `addr` in this pair's memory.
    fn sge(&self, addr: u64, len: usize) -> Result<bindings::ib_sge> {
        Ok(bindings::ib_sge {
            addr,
            length: u32::try_from(len)?,
            lkey: self.pd.lkey(),
        })
    }

    /// Posts a receive of up to `len` bytes into `side`'s data area from byte `off`.
    pub(crate) fn post_recv(&self, side: &Side, wr_id: u64, off: usize, len: usize) -> Result {
        let mut sge = self.sge(side.buf.data_addr(off), len)?;
        let mut wr = bindings::ib_recv_wr {
            sg_list: &mut sge,
            num_sge: 1,
            ..Default::default()
        };
        wr.__bindgen_anon_1.wr_id = wr_id;
        side.qp.post_recv(&wr)
    }

    /// Posts `op` from `side`, whose local memory is `len` bytes of its data area from `off`
    /// (atomics: its atomic word), towards the other side's memory.
    pub(crate) fn post(&self, side: &Side, wr_id: u64, off: usize, len: usize, op: Op) -> Result {
        let peer = if core::ptr::eq(side, &self.a) {
            &self.b
        } else {
            &self.a
        };
        let mut sge = match op {
            Op::CmpSwap { .. } | Op::FetchAdd { .. } => self.sge(side.buf.word_addr(), 8)?,
            _ => self.sge(side.buf.data_addr(off), len)?,
        };
        let mut wr = bindings::ib_send_wr {
            sg_list: &mut sge,
            num_sge: 1,
            opcode: op.opcode(),
            send_flags: bindings::ib_send_flags_IB_SEND_SIGNALED,
            ..Default::default()
        };
        wr.__bindgen_anon_1.wr_id = wr_id;
        if let Some(imm) = op.imm() {
            wr.ex.imm_data = imm;
        }
        match op {
            Op::Send { .. } => side.qp.post_send(&wr),
            Op::Write { remote_off, .. } | Op::Read { remote_off } => {
                let rdma = bindings::ib_rdma_wr {
                    wr,
                    remote_addr: peer.buf.data_addr(remote_off),
                    rkey: self.pd.rkey(),
                };
                side.qp.post_send(&rdma)
            }
            Op::CmpSwap { compare, swap } => self.post_atomic(side, peer, wr, compare, swap),
            Op::FetchAdd { add } => self.post_atomic(side, peer, wr, add, 0),
        }
    }

    /// A fast-register MR on this pair's PD over `side`'s data area, not yet registered.
    pub(crate) fn alloc_mr(&self, side: &Side) -> Result<Mr> {
        Mr::new(&self.pd, side.buf.data_addr(0), DATA_LEN)
    }

    /// Posts a signalled REG_MR of `mr` under its current key, for local and remote writes.
    pub(crate) fn reg_mr(&self, side: &Side, wr_id: u64, mr: &Mr) -> Result {
        let mut wr = bindings::ib_reg_wr {
            wr: bindings::ib_send_wr {
                opcode: bindings::ib_wr_opcode::IB_WR_REG_MR,
                send_flags: bindings::ib_send_flags_IB_SEND_SIGNALED,
                ..Default::default()
            },
            mr: mr.as_ptr(),
            key: mr.key(),
            access: (bindings::ib_access_flags_IB_ACCESS_LOCAL_WRITE
                | bindings::ib_access_flags_IB_ACCESS_REMOTE_WRITE) as c_int,
        };
        wr.wr.__bindgen_anon_1.wr_id = wr_id;
        side.qp.post_send(&wr)
    }

    /// Posts a signalled LOCAL_INV of `key`; `fence`: it waits for the WRs before it, so the
    /// post cannot invalidate at once and leaves it to the send engine.
    pub(crate) fn local_inv(&self, side: &Side, wr_id: u64, key: u32, fence: bool) -> Result {
        let mut flags = bindings::ib_send_flags_IB_SEND_SIGNALED;
        if fence {
            flags |= bindings::ib_send_flags_IB_SEND_FENCE;
        }
        let mut wr = bindings::ib_send_wr {
            opcode: bindings::ib_wr_opcode::IB_WR_LOCAL_INV,
            send_flags: flags,
            ..Default::default()
        };
        wr.__bindgen_anon_1.wr_id = wr_id;
        wr.ex.invalidate_rkey = key;
        side.qp.post_send(&wr)
    }

    /// Posts a SEND of `side`'s first 8 bytes through `lkey` instead of the PD's DMA key.
    pub(crate) fn send_with_lkey(&self, side: &Side, wr_id: u64, lkey: u32) -> Result {
        let mut sge = bindings::ib_sge {
            addr: side.buf.data_addr(0),
            length: 8,
            lkey,
        };
        let mut wr = bindings::ib_send_wr {
            sg_list: &mut sge,
            num_sge: 1,
            opcode: bindings::ib_wr_opcode::IB_WR_SEND,
            send_flags: bindings::ib_send_flags_IB_SEND_SIGNALED,
            ..Default::default()
        };
        wr.__bindgen_anon_1.wr_id = wr_id;
        side.qp.post_send(&wr)
    }

    fn post_atomic(
        &self,
        side: &Side,
        peer: &Side,
        wr: bindings::ib_send_wr,
        compare_add: u64,
        swap: u64,
    ) -> Result {
        let atomic = bindings::ib_atomic_wr {
            wr,
            remote_addr: peer.buf.word_addr(),
            compare_add,
            swap,
            rkey: self.pd.rkey(),
            ..Default::default()
        };
        side.qp.post_send(&atomic)
    }
}

/// What a send WR does.
#[derive(Clone, Copy)]
pub(crate) enum Op {
    /// SEND, or SEND_WITH_IMM with the immediate data (as it goes on the wire).
    Send { imm: Option<u32> },
    /// RDMA WRITE to byte `remote_off` of the peer's data area, or WRITE_WITH_IMM.
    Write { remote_off: usize, imm: Option<u32> },
    /// RDMA READ from byte `remote_off` of the peer's data area.
    Read { remote_off: usize },
    /// ATOMIC_CMP_AND_SWP on the peer's atomic word.
    CmpSwap { compare: u64, swap: u64 },
    /// ATOMIC_FETCH_AND_ADD on the peer's atomic word.
    FetchAdd { add: u64 },
}

impl Op {
    fn opcode(self) -> bindings::ib_wr_opcode {
        use bindings::ib_wr_opcode as W;
        match self {
            Op::Send { imm: None } => W::IB_WR_SEND,
            Op::Send { imm: Some(_) } => W::IB_WR_SEND_WITH_IMM,
            Op::Write { imm: None, .. } => W::IB_WR_RDMA_WRITE,
            Op::Write { imm: Some(_), .. } => W::IB_WR_RDMA_WRITE_WITH_IMM,
            Op::Read { .. } => W::IB_WR_RDMA_READ,
            Op::CmpSwap { .. } => W::IB_WR_ATOMIC_CMP_AND_SWP,
            Op::FetchAdd { .. } => W::IB_WR_ATOMIC_FETCH_AND_ADD,
        }
    }

    fn imm(self) -> Option<u32> {
        match self {
            Op::Send { imm } | Op::Write { imm, .. } => imm,
            _ => None,
        }
    }
}

/// The completion a test expects.
pub(crate) struct Expect {
    pub(crate) wr_id: u64,
    pub(crate) status: bindings::ib_wc_status,
    pub(crate) opcode: bindings::ib_wc_opcode,
    /// Checked when the status is IB_WC_SUCCESS (it is undefined otherwise).
    pub(crate) byte_len: u32,
    /// The immediate data of a receive, or `None` when it must carry none.
    pub(crate) imm: Option<u32>,
}

/// Says where `got` first differs from `want` and fails, unless they are equal.
pub(crate) fn check_bytes(what: &str, got: &[u8], want: &[u8]) -> Result {
    match got.iter().zip(want).position(|(g, w)| g != w) {
        None if got.len() == want.len() => Ok(()),
        None => check(what, got.len() as u64, want.len() as u64),
        Some(i) => check(what, got[i].into(), want[i].into())
            .inspect_err(|_| pr_err!("{what}: the bytes differ first at {i}\n")),
    }
}

/// Says what differs and fails, unless `got` equals `want`.
pub(crate) fn check(what: &str, got: u64, want: u64) -> Result {
    if got == want {
        return Ok(());
    }
    pr_err!("{what}: got {got:#x}, expected {want:#x}\n");
    Err(EINVAL)
}

impl Side {
    /// Waits for the next completion on this side's CQ and checks it against `want`: it is
    /// this side's QP's, with the expected WR ID, status, opcode, length and immediate data.
    pub(crate) fn expect(&self, want: &Expect) -> Result {
        let wc = self.cq.wait()?;
        // SAFETY: Kernel verbs consumers of this module post `wr_id`s, never `wr_cqe`s, and
        // rdmavt copies the WR's union into the completion.
        let wr_id = unsafe { wc.__bindgen_anon_1.wr_id };
        check("wr_id", wr_id, want.wr_id)?;
        check("status", wc.status.0.into(), want.status.0.into())?;
        if wc.qp != self.qp.as_ptr() {
            pr_err!("the completion is not this QP's\n");
            return Err(EINVAL);
        }
        check("opcode", wc.opcode.0.into(), want.opcode.0.into())?;
        if want.status != bindings::ib_wc_status::IB_WC_SUCCESS {
            return Ok(());
        }
        check("byte_len", wc.byte_len.into(), want.byte_len.into())?;
        let with_imm = wc.wc_flags as u32 & bindings::ib_wc_flags_IB_WC_WITH_IMM != 0;
        check("IB_WC_WITH_IMM", with_imm.into(), want.imm.is_some().into())?;
        if let Some(imm) = want.imm {
            // SAFETY: IB_WC_WITH_IMM says the union holds the immediate data.
            check("imm_data", unsafe { wc.ex.imm_data }.into(), imm.into())?;
        }
        Ok(())
    }
}
