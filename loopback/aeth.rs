// SPDX-License-Identifier: GPL-2.0-only

//! RC end-to-end flow control: the credit field of the AETH (IBTA 9.7.7.2), which tells the
//! requester how many receive WQEs the responder has posted.

use crate::{bindings, macros::c_export, qp::Qp};

/// The number of credits each 5-bit AETH credit code stands for (IBTA table 45); code 0x1F
/// means "no credit information" (`IB_AETH_CREDIT_INVAL`).
pub(super) const CREDIT_TABLE: [u16; 31] = [
    0, 1, 2, 3, 4, 6, 8, 12, 16, 24, 32, 48, 64, 96, 128, 192, 256, 384, 512, 768, 1024, 1536,
    2048, 3072, 4096, 6144, 8192, 12288, 16384, 24576, 32768,
];

/// The credit code for `credits` free receive WQEs: the largest code that does not promise
/// more than there are.
pub(super) fn credit_code(credits: u32) -> u32 {
    // `CREDIT_TABLE[0]` is 0, so at least one entry is <= `credits`.
    let above = CREDIT_TABLE.partition_point(|&c| u32::from(c) <= credits);
    // CAST: at most 31.
    (above - 1) as u32
}

/// The AETH of an RNR NAK: the responder's minimum RNR timer code `timer` in the credit
/// field's place (`IB_AETH_CREDIT_SHIFT`), which the requester's RNR timer decodes.
pub(super) fn rnr_nak(timer: u8) -> u32 {
    u32::from(timer) << bindings::IB_AETH_CREDIT_SHIFT
}

/// `rvt_cmp_msn`: compares two 24-bit message sequence numbers modulo 2^24.
pub(super) fn cmp_msn(a: u32, b: u32) -> i32 {
    // CAST: C's `(int)a - (int)b`, shifted so only the low 24 bits count.
    (a as i32).wrapping_sub(b as i32).wrapping_shl(8)
}

/// `rvt_compute_aeth`: the AETH of an ACK from `qp`: its MSN and credit code, in network
/// byte order. A QP with an SRQ has no credits to give and says so with the invalid code.
///
/// # Safety
///
/// `qp` is a live QP of ours.
#[no_mangle]
pub(crate) unsafe extern "C" fn rvt_compute_aeth(qp: *mut bindings::rvt_qp) -> bindings::__be32 {
    // SAFETY: a live QP of ours (caller's guarantee).
    let qp = unsafe { Qp::from_raw(qp) };
    // A QP with an SRQ has no ring of its own. The credit is a lock-free look at the ring
    // (`Rq::posted_unlocked`) at the indices post_recv and rvt_get_rwqe move.
    let code = match qp.own_rq() {
        Some(rq) => credit_code(rq.posted_unlocked()),
        None => bindings::IB_AETH_CREDIT_INVAL,
    };
    // `r_msn` is read without a lock, as C reads it.
    ((qp.r_msn_unlocked() & bindings::IB_MSN_MASK) | (code << bindings::IB_AETH_CREDIT_SHIFT))
        .to_be()
}
c_export!(rvt_compute_aeth);

/// What an AETH's credit field means for a requester.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub(super) enum Credit {
    /// The responder gives no credit information: send without limit.
    Unlimited,
    /// The responder can take messages up to this limit sequence number.
    Limit(u32),
}

impl Credit {
    /// Decodes the credit field of the host-order `aeth`.
    pub(super) fn of(aeth: u32) -> Self {
        let code = (aeth >> bindings::IB_AETH_CREDIT_SHIFT) & bindings::IB_AETH_CREDIT_MASK;
        match CREDIT_TABLE.get(code as usize) {
            None => Self::Unlimited,
            Some(&credits) => {
                Self::Limit(aeth.wrapping_add(u32::from(credits)) & bindings::IB_MSN_MASK)
            }
        }
    }
}

/// `rvt_get_credit`: updates the requester's limit sequence number (`s_lsn`) from an AETH
/// the responder sent, and reschedules a send that waited for credit.
///
/// # Safety
///
/// `qp` is a live QP of ours and the caller holds its `s_lock` (lockdep checks it, as C).
#[no_mangle]
pub(crate) unsafe extern "C" fn rvt_get_credit(qp: *mut bindings::rvt_qp, aeth: u32) {
    // SAFETY: a live QP of ours (caller's guarantee).
    let qp = unsafe { Qp::from_raw(qp) };
    // SAFETY: the caller holds `s_lock` for the whole call.
    let mut s = unsafe { qp.assume_s_locked() };
    let unlimited = bindings::RVT_S_UNLIMITED_CREDIT;
    if s.flags() & unlimited != 0 {
        return;
    }
    match Credit::of(aeth) {
        Credit::Unlimited => s.set_flags(unlimited),
        Credit::Limit(lsn) => {
            let cur = s.s_lsn_mut();
            if cmp_msn(lsn, *cur) <= 0 {
                return;
            }
            *cur = lsn;
        }
    }
    if s.flags() & bindings::RVT_S_WAIT_SSN_CREDIT != 0 {
        s.clear_flags(bindings::RVT_S_WAIT_SSN_CREDIT);
        qp.device().driver().schedule_send(qp, &s);
    }
}
c_export!(rvt_get_credit);
