// SPDX-License-Identifier: GPL-2.0-only

//! What each QP state allows: C's `ib_rvt_state_ops` table, exported because hfi1 reads it
//! inline, and [`StateOps`], a row of it with a named test per bit.

use kernel::ffi::c_int;

use crate::bindings;

/// The number of QP states, `IB_QPS_ERR + 1`: the length of [`ib_rvt_state_ops`].
pub(super) const STATES: usize = bindings::ib_qp_state::IB_QPS_ERR.0 as usize + 1;

/// What each QP state allows, indexed by `IB_QPS_*`: C's table, exported because hfi1 reads
/// it inline. Posting sends is allowed in SQE and ERR: the send engine flushes them with
/// error completions (IB 1.2 C10-96).
#[no_mangle]
pub(crate) static ib_rvt_state_ops: [c_int; STATES] = {
    const RECV: u32 = bindings::RVT_POST_RECV_OK | bindings::RVT_PROCESS_RECV_OK;
    const SEND: u32 = bindings::RVT_POST_SEND_OK | bindings::RVT_PROCESS_SEND_OK;
    [
        0,                                                                       // RESET
        bindings::RVT_POST_RECV_OK as c_int,                                     // INIT
        RECV as c_int,                                                           // RTR
        (RECV | SEND | bindings::RVT_PROCESS_NEXT_SEND_OK) as c_int,             // RTS
        (RECV | SEND) as c_int,                                                  // SQD
        (RECV | bindings::RVT_POST_SEND_OK | bindings::RVT_FLUSH_SEND) as c_int, // SQE
        (bindings::RVT_POST_RECV_OK
            | bindings::RVT_FLUSH_RECV
            | bindings::RVT_POST_SEND_OK
            | bindings::RVT_FLUSH_SEND) as c_int, // ERR
    ]
};

// The header declares `extern const int ib_rvt_state_ops[]`, which bindgen makes a zero-length
// array: the element type is what can be checked, and is, here.
const _: () = {
    fn same_element<T, const N: usize, const M: usize>(_: *const [T; N], _: *const [T; M]) {}
    #[expect(dead_code, reason = "only type-checked")]
    fn check() {
        same_element(
            &raw const bindings::ib_rvt_state_ops,
            &raw const ib_rvt_state_ops,
        );
    }
};

/// `ib_rvt_state_ops[state]`: the `RVT_*_OK` and `RVT_*FLUSH*` bits of QP state `state`
/// (`IB_QPS_*`); none for a value that is no state. (bindgen declares the exported C array
/// with length 0, so Rust reads the table through this.)
pub(crate) fn state_ops(state: u32) -> StateOps {
    StateOps(
        ib_rvt_state_ops
            .get(state as usize)
            .map_or(0, |&ops| ops as u32),
    )
}

/// What a QP state allows: a row of `ib_rvt_state_ops`.
#[derive(Clone, Copy)]
pub(crate) struct StateOps(u32);

// One test per bit of the row.
macro_rules! state_op_tests {
    ($($(#[$doc:meta])* $name:ident: $bit:ident;)*) => {
        impl StateOps {
            $(
                $(#[$doc])*
                pub(crate) fn $name(self) -> bool {
                    self.0 & bindings::$bit != 0
                }
            )*
        }
    };
}

state_op_tests! {
    /// RVT_POST_SEND_OK: `post_send` accepts WRs.
    post_send_ok: RVT_POST_SEND_OK;
    /// RVT_POST_RECV_OK: `post_recv` accepts WRs.
    post_recv_ok: RVT_POST_RECV_OK;
    /// RVT_FLUSH_RECV: posted receives are flushed.
    flush_recv: RVT_FLUSH_RECV;
    /// RVT_PROCESS_RECV_OK: the QP takes incoming requests.
    process_recv_ok: RVT_PROCESS_RECV_OK;
    /// RVT_PROCESS_NEXT_SEND_OK: the send engine may start the next WQE.
    process_next_send_ok: RVT_PROCESS_NEXT_SEND_OK;
    /// RVT_FLUSH_SEND: the send queue is flushed.
    flush_send: RVT_FLUSH_SEND;
    /// RVT_PROCESS_OR_FLUSH_SEND: the send engine runs, to send or to flush.
    process_or_flush_send: RVT_PROCESS_OR_FLUSH_SEND;
}
