// SPDX-License-Identifier: GPL-2.0-only

//! A `create_qp` request, `struct ib_qp_init_attr`: the QP type, the queue capabilities, the
//! SRQ, the port of a special QP and the creation flags, as `create_qp` reads them.

use crate::bindings;

/// The QP types (`IB_QPT_*`), bindgen's newtype over C's `enum ib_qp_type`.
pub(crate) use crate::bindings::ib_qp_type as QpType;

/// The queue capabilities a request asks for (`struct ib_qp_cap`, less inline data).
#[derive(Clone, Copy)]
pub(crate) struct Caps {
    pub(crate) max_send_wr: u32,
    pub(crate) max_recv_wr: u32,
    pub(crate) max_send_sge: u32,
    pub(crate) max_recv_sge: u32,
}

/// The attributes of a `create_qp` call.
///
/// # Invariants
///
/// Wraps ib_core's valid attributes of the `create_qp` call in progress; `srq` is NULL or a
/// live SRQ of the same device.
pub(crate) struct InitAttr<'a>(&'a mut bindings::ib_qp_init_attr);

impl<'a> InitAttr<'a> {
    /// # Safety
    ///
    /// `init` is ib_core's valid attributes of a `create_qp` call of ours, used only during
    /// that call.
    pub(crate) unsafe fn from_raw(init: *mut bindings::ib_qp_init_attr) -> Self {
        // SAFETY: the caller's guarantee.
        Self(unsafe { &mut *init })
    }

    /// The attributes as C's `qp_priv_init` callback takes them.
    pub(crate) fn as_raw(&mut self) -> *mut bindings::ib_qp_init_attr {
        self.0
    }

    pub(crate) fn qp_type(&self) -> QpType {
        self.0.qp_type
    }

    pub(crate) fn caps(&self) -> Caps {
        let c = &self.0.cap;
        Caps {
            max_send_wr: c.max_send_wr,
            max_recv_wr: c.max_recv_wr,
            max_send_sge: c.max_send_sge,
            max_recv_sge: c.max_recv_sge,
        }
    }

    /// The port of an SMI or GSI QP.
    pub(crate) fn port_num(&self) -> u32 {
        self.0.port_num
    }

    /// IB_QP_CREATE_NETDEV_USE: an accelerated IPoIB QP (its QPN in the AIP range).
    pub(crate) fn netdev_use(&self) -> bool {
        self.0.create_flags & bindings::ib_qp_create_flags_IB_QP_CREATE_NETDEV_USE as u32 != 0
    }

    /// A creation flag other than IB_QP_CREATE_NETDEV_USE, which rdmavt does not support.
    pub(crate) fn unsupported_flags(&self) -> bool {
        let netdev_use = bindings::ib_qp_create_flags_IB_QP_CREATE_NETDEV_USE as u32;
        self.0.create_flags & !netdev_use != 0
    }

    /// IB_SIGNAL_REQ_WR: only the requests that ask for it complete.
    pub(crate) fn signal_req_wr(&self) -> bool {
        self.0.sq_sig_type == bindings::ib_sig_type_IB_SIGNAL_REQ_WR
    }

    /// The SRQ's SGEs per receive, if the QP takes its receives from one.
    pub(crate) fn srq_max_sge(&self) -> Option<u32> {
        let srq = self.0.srq.cast::<bindings::rvt_srq>();
        // SAFETY: a non-NULL `srq` is a live SRQ of ours (type invariant), the head of an
        // `rvt_srq`, whose `rq.max_sge` is fixed.
        (!srq.is_null()).then(|| u32::from(unsafe { (*srq).rq.max_sge }))
    }

    /// The reply: rdmavt supports no inline data.
    pub(crate) fn clear_max_inline_data(&mut self) {
        self.0.cap.max_inline_data = 0;
    }
}

/// `get_allowed_ops`: the opcode family of the QP type (`IB_OPCODE_RC`, `_UC`, `_UD`).
pub(super) fn allowed_ops(qp_type: QpType) -> u8 {
    (match qp_type {
        QpType::IB_QPT_RC => bindings::IB_OPCODE_RC,
        QpType::IB_QPT_UC => bindings::IB_OPCODE_UC,
        _ => bindings::IB_OPCODE_UD,
    }) as u8
}
