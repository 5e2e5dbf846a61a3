// SPDX-License-Identifier: GPL-2.0-only

//! Loopback of connected QPs and the data-path helpers drivers share with it:
//! `rvt_ruc_loopback` (an RC or UC request to a QP on the same device, delivered and completed
//! without a wire), `rvt_copy_sge` and `rvt_restart_sge` (walking SGE lists), and
//! `rvt_compute_aeth`/`rvt_get_credit` (RC end-to-end credits).
//!
//! # Lock order
//!
//! The same as the QP's own (see `crate::qp`):
//!
//! ```text
//!   r_lock  ->  s_lock  ->  (a CQ's lock, the receive queue's c_lock: leaves)
//! ```
//!
//! The loopback moves one send WQE at a time in three steps, and no step holds a lock of one
//! QP while it takes a lock of another:
//!
//! 1. the sender, with its `r_lock` then its `s_lock`: completes the previous WQE (or flushes
//!    one, or arms the RNR timer) and picks the next, marking the QP `RVT_S_BUSY`;
//! 2. the responder, with only the destination's `r_lock` (and, to move it to the error state,
//!    its `s_lock` inside, in order): takes a receive WQE, checks keys, copies the data,
//!    completes the receive;
//! 3. back to 1, which completes the send.
//!
//! Between the steps the sender holds no lock: `RVT_S_BUSY` keeps every other caller of the
//! loopback out, so the fields only the send engine touches (`s_sge`, `s_len`,
//! `s_rnr_retry`) belong to the busy holder, as in C. The C rdmavt takes the sender's `r_lock`
//! inside its `s_lock` to complete a WQE and to flush the sender into the error state, the
//! opposite of `rvt_modify_qp()` and of every receive path; step 1 takes them in order
//! instead. The destination may be the sender itself: step 2 then takes the QP's `r_lock`
//! with nothing held.

mod aeth;
mod responder;
mod ruc;
mod sge;
mod tests;
