// SPDX-License-Identifier: GPL-2.0-only

//! The KUnit suite `rvt_loop_kverbs`: kernel verbs between two RC QPs on rvt_loop0.

mod tests {
    use crate::{
        bindings::{ib_wc_opcode as O, ib_wc_status as S},
        compat,
        pair::{check, check_bytes, Expect, Op, Pair, RNR_RETRY_FOREVER},
        verbs::{on_rdmavt_rs, with_nth_failing, DATA_LEN},
    };
    use kernel::prelude::*;

    /// Immediate data, as it goes on the wire (big-endian).
    const IMM: u32 = 0x1234_5678_u32.to_be();

    /// Recognisable bytes, different for each `seed`, none of them zero.
    fn pattern(seed: u8) -> [u8; DATA_LEN] {
        let mut p = [0; DATA_LEN];
        for (i, b) in p.iter_mut().enumerate() {
            *b = (seed as usize + i * 7) as u8 % 251 + 1;
        }
        p
    }

    /// A successful send-side completion of `wr_id` of `len` bytes.
    fn sent(wr_id: u64, opcode: O, len: u32) -> Expect {
        Expect {
            wr_id,
            status: S::IB_WC_SUCCESS,
            opcode,
            byte_len: len,
            imm: None,
        }
    }

    /// A successful receive of `len` bytes into receive `wr_id`.
    fn received(wr_id: u64, opcode: O, len: u32, imm: Option<u32>) -> Expect {
        Expect {
            wr_id,
            status: S::IB_WC_SUCCESS,
            opcode,
            byte_len: len,
            imm,
        }
    }

    /// Nothing more completed on either side.
    fn quiet(p: &Pair) -> Result {
        p.a.cq.expect_empty()?;
        p.b.cq.expect_empty()
    }

    /// Two SENDs into two receives posted on the peer, which take them in order, each with
    /// its own length: krwq's post_recv and rvt_get_rwqe.
    fn sends(imm: Option<u32>) -> Result {
        let p = Pair::new(RNR_RETRY_FOREVER)?;
        let msg = pattern(1);
        p.a.buf.set_data(msg);
        p.post_recv(&p.b, 0x100, 0, 32)?;
        p.post_recv(&p.b, 0x101, 32, 32)?;
        p.post(&p.a, 1, 0, 17, Op::Send { imm })?;
        p.post(&p.a, 2, 17, 29, Op::Send { imm })?;
        p.a.expect(&sent(1, O::IB_WC_SEND, 17))?;
        p.a.expect(&sent(2, O::IB_WC_SEND, 29))?;
        p.b.expect(&received(0x100, O::IB_WC_RECV, 17, imm))?;
        p.b.expect(&received(0x101, O::IB_WC_RECV, 29, imm))?;
        let got = p.b.buf.data();
        check_bytes("first message", &got[..17], &msg[..17])?;
        check_bytes("after the first message", &got[17..32], &[0; 15])?;
        check_bytes("second message", &got[32..61], &msg[17..46])?;
        check_bytes("after the second message", &got[61..], &[0; 3])?;
        quiet(&p)
    }

    fn send() -> Result {
        sends(None)
    }

    fn send_with_imm() -> Result {
        sends(Some(IMM))
    }

    /// Rounds of five receives and five SENDs on queues of eight, until both rings have
    /// wrapped around: every receive is taken once, in order, with its own message.
    fn send_rings_wrap() -> Result {
        const PER_ROUND: usize = 5;
        const LEN: usize = DATA_LEN / PER_ROUND;
        let p = Pair::new(RNR_RETRY_FOREVER)?;
        for round in 0..4u8 {
            let msg = pattern(round + 10);
            p.a.buf.set_data(msg);
            p.b.buf.set_data([0; DATA_LEN]);
            let base = u64::from(round) * 0x10;
            for i in 0..PER_ROUND {
                p.post_recv(&p.b, 0x400 + base + i as u64, i * LEN, LEN)?;
            }
            for i in 0..PER_ROUND {
                p.post(
                    &p.a,
                    base + i as u64,
                    i * LEN,
                    LEN - i,
                    Op::Send { imm: None },
                )?;
            }
            for i in 0..PER_ROUND {
                let len = (LEN - i) as u32;
                p.a.expect(&sent(base + i as u64, O::IB_WC_SEND, len))?;
                p.b.expect(&received(0x400 + base + i as u64, O::IB_WC_RECV, len, None))?;
                let got = p.b.buf.data();
                let at = i * LEN;
                check_bytes("message", &got[at..at + LEN - i], &msg[at..at + LEN - i])?;
            }
        }
        quiet(&p)
    }

    /// 40 bytes RDMA-written to byte 8 of the peer; WRITE_WITH_IMM also takes a receive.
    fn writes(imm: Option<u32>) -> Result {
        let p = Pair::new(RNR_RETRY_FOREVER)?;
        let msg = pattern(2);
        p.a.buf.set_data(msg);
        if imm.is_some() {
            p.post_recv(&p.b, 0x200, 0, 4)?;
        }
        p.post(&p.a, 3, 4, 40, Op::Write { remote_off: 8, imm })?;
        p.a.expect(&sent(3, O::IB_WC_RDMA_WRITE, 40))?;
        if imm.is_some() {
            p.b.expect(&received(0x200, O::IB_WC_RECV_RDMA_WITH_IMM, 40, imm))?;
        }
        let got = p.b.buf.data();
        check_bytes("before the write", &got[..8], &[0; 8])?;
        check_bytes("written", &got[8..48], &msg[4..44])?;
        check_bytes("after the write", &got[48..], &[0; DATA_LEN - 48])?;
        quiet(&p)
    }

    fn rdma_write() -> Result {
        writes(None)
    }

    fn rdma_write_with_imm() -> Result {
        writes(Some(IMM))
    }

    /// 33 bytes RDMA-read from byte 3 of the peer into byte 5 of our own memory.
    fn rdma_read() -> Result {
        let p = Pair::new(RNR_RETRY_FOREVER)?;
        let msg = pattern(3);
        p.b.buf.set_data(msg);
        p.post(&p.a, 4, 5, 33, Op::Read { remote_off: 3 })?;
        p.a.expect(&sent(4, O::IB_WC_RDMA_READ, 33))?;
        let got = p.a.buf.data();
        check_bytes("before the read", &got[..5], &[0; 5])?;
        check_bytes("read", &got[5..38], &msg[3..36])?;
        check_bytes("after the read", &got[38..], &[0; DATA_LEN - 38])?;
        check_bytes("the peer's memory", &p.b.buf.data(), &msg)?;
        quiet(&p)
    }

    /// A compare-and-swap that matches and swaps, then one that does not and leaves the
    /// word alone; each returns the old value.
    fn atomic_cmp_and_swp() -> Result {
        let p = Pair::new(RNR_RETRY_FOREVER)?;
        p.b.buf.set_word(0x1111_2222_3333_4444);
        let swap = Op::CmpSwap {
            compare: 0x1111_2222_3333_4444,
            swap: 0x5555_6666_7777_8888,
        };
        p.post(&p.a, 5, 0, 8, swap)?;
        p.a.expect(&sent(5, O::IB_WC_COMP_SWAP, 8))?;
        check("old value", p.a.buf.word(), 0x1111_2222_3333_4444)?;
        check("swapped value", p.b.buf.word(), 0x5555_6666_7777_8888)?;
        p.post(
            &p.a,
            6,
            0,
            8,
            Op::CmpSwap {
                compare: 1,
                swap: 2,
            },
        )?;
        p.a.expect(&sent(6, O::IB_WC_COMP_SWAP, 8))?;
        check("old value, no match", p.a.buf.word(), 0x5555_6666_7777_8888)?;
        check(
            "value after no match",
            p.b.buf.word(),
            0x5555_6666_7777_8888,
        )?;
        quiet(&p)
    }

    fn atomic_fetch_and_add() -> Result {
        let p = Pair::new(RNR_RETRY_FOREVER)?;
        p.b.buf.set_word(u64::MAX - 1);
        p.post(&p.a, 7, 0, 8, Op::FetchAdd { add: 3 })?;
        p.a.expect(&sent(7, O::IB_WC_FETCH_ADD, 8))?;
        check("old value", p.a.buf.word(), u64::MAX - 1)?;
        check("sum (wrapped)", p.b.buf.word(), 1)?;
        p.post(&p.a, 8, 0, 8, Op::FetchAdd { add: 41 })?;
        p.a.expect(&sent(8, O::IB_WC_FETCH_ADD, 8))?;
        check("old value", p.a.buf.word(), 1)?;
        check("sum", p.b.buf.word(), 42)?;
        quiet(&p)
    }

    /// A SEND with no receive posted at the peer, which may not retry its RNR NAK: the send
    /// completes in error, and the peer sees nothing.
    fn send_without_receive() -> Result {
        let p = Pair::new(0)?;
        p.a.buf.set_data(pattern(4));
        p.post(&p.a, 9, 0, 16, Op::Send { imm: None })?;
        p.a.expect(&Expect {
            wr_id: 9,
            status: S::IB_WC_RNR_RETRY_EXC_ERR,
            opcode: O::IB_WC_SEND,
            byte_len: 0,
            imm: None,
        })?;
        check_bytes("the peer's memory", &p.b.buf.data(), &[0; DATA_LEN])?;
        quiet(&p)
    }

    /// A fenced LOCAL_INV, which the post leaves to the send engine, on a QP whose peer
    /// cannot receive (it is in the error state): a local operation, it invalidates the key
    /// and completes, as hfi1's requesters do it whatever the peer. The C rdmavt's loopback
    /// drops it with the peer instead: IB_WC_RETRY_EXC_ERR, the key still valid (a C bug,
    /// listed in the README), which its run expects.
    fn fenced_local_inv_without_peer() -> Result {
        let p = Pair::new(RNR_RETRY_FOREVER)?;
        let mr = p.alloc_mr(&p.b)?;
        p.reg_mr(&p.b, 0x500, &mr)?;
        p.b.expect(&sent(0x500, O::IB_WC_REG_MR, 0))?;
        p.to_error(&p.a)?;
        p.local_inv(&p.b, 0x501, mr.key(), true)?;
        if !on_rdmavt_rs() {
            p.b.expect(&Expect {
                wr_id: 0x501,
                status: S::IB_WC_RETRY_EXC_ERR,
                opcode: O::IB_WC_LOCAL_INV,
                byte_len: 0,
                imm: None,
            })?;
            return quiet(&p);
        }
        p.b.expect(&sent(0x501, O::IB_WC_LOCAL_INV, 0))?;
        // The key is invalid now: a WR that names it is refused at post, as a bad lkey.
        let errno = |e: Error| u64::from(e.to_errno().unsigned_abs());
        let refused = p.send_with_lkey(&p.b, 0x502, mr.key()).err();
        check(
            "errno of a post naming the invalidated key",
            refused.map_or(0, errno),
            errno(EINVAL),
        )?;
        quiet(&p)
    }

    /// Receives posted to a QP that then enters the error state complete with
    /// IB_WC_WR_FLUSH_ERR, in the order they were posted, once.
    fn error_flushes_receives() -> Result {
        let p = Pair::new(RNR_RETRY_FOREVER)?;
        for wr_id in 0x300..0x303 {
            p.post_recv(&p.b, wr_id, 0, DATA_LEN)?;
        }
        p.to_error(&p.b)?;
        for wr_id in 0x300..0x303 {
            p.b.expect(&Expect {
                wr_id,
                status: S::IB_WC_WR_FLUSH_ERR,
                opcode: O::IB_WC_RECV,
                byte_len: 0,
                imm: None,
            })?;
        }
        quiet(&p)
    }

    /// No call here makes this many allocations: a sweep that gets that far does not end.
    const MAX_NTH: u32 = 2000;

    /// The allocations of `make` fail one at a time: its 1st, then its 2nd, ... until it runs
    /// without reaching an Nth. A call that met its failure returns an error, or something
    /// that `works` (the failure was absorbed); a call that did not meet one succeeds. What a
    /// call made is dropped before the next; kmemleak, after the test, says whether a failed
    /// call left anything behind.
    fn sweep<T>(what: &str, make: impl Fn() -> Result<T>, works: impl Fn(&T) -> Result) -> Result {
        let (mut failed, mut absorbed) = (0, 0);
        for n in 1..=MAX_NTH {
            let Some((made, hit)) = with_nth_failing(n, &make) else {
                pr_err!("{what}: the kernel has no fault injection\n");
                return Err(compat::eopnotsupp());
            };
            match made {
                Err(e) if !hit => {
                    pr_err!(
                        "{what}: fails with no allocation failing: {}\n",
                        e.to_errno()
                    );
                    return Err(e);
                }
                Err(_) => failed += 1,
                Ok(made) => {
                    works(&made).inspect_err(|e| {
                        pr_err!("{what}, allocation {n} failing: it does not work: {e:?}\n")
                    })?;
                    if !hit {
                        pr_info!(
                            "{what}: {} allocations failed in turn, {failed} gave an error, \
                             {absorbed} were absorbed\n",
                            n - 1
                        );
                        return Ok(());
                    }
                    absorbed += 1;
                }
            }
        }
        pr_err!("{what}: still allocating after {MAX_NTH}\n");
        Err(compat::etimedout())
    }

    /// One SEND from `a` into a receive on `b`.
    fn one_send(p: &Pair) -> Result {
        p.post_recv(&p.b, 0x700, 0, 8)?;
        p.post(&p.a, 0x701, 0, 8, Op::Send { imm: None })?;
        p.a.expect(&sent(0x701, O::IB_WC_SEND, 8))?;
        p.b.expect(&received(0x700, O::IB_WC_RECV, 8, None))?;
        quiet(p)
    }

    /// Every allocation of setting up a pair fails in turn: the PD with its DMA MR, the
    /// kernel CQs, the QPs with their kernel rings, each modify on the way to RTS. Each
    /// failure is an error and leaves nothing behind; a pair that was set up carries a SEND.
    fn allocation_failures_pair() -> Result {
        sweep("pair", || Pair::new(RNR_RETRY_FOREVER), one_send)
    }

    /// The same for a fast-register MR: one that was allocated registers with REG_MR.
    fn allocation_failures_fast_reg_mr() -> Result {
        let p = Pair::new(RNR_RETRY_FOREVER)?;
        sweep(
            "fast-register MR",
            || p.alloc_mr(&p.b),
            |mr| {
                p.reg_mr(&p.b, 0x600, mr)?;
                p.b.expect(&sent(0x600, O::IB_WC_REG_MR, 0))
            },
        )
    }

    crate::compat::kunit::kunit_suite!(
        rvt_loop_kverbs,
        [
            send,
            send_with_imm,
            send_rings_wrap,
            rdma_write,
            rdma_write_with_imm,
            rdma_read,
            atomic_cmp_and_swp,
            atomic_fetch_and_add,
            send_without_receive,
            fenced_local_inv_without_peer,
            error_flushes_receives,
            allocation_failures_pair,
            allocation_failures_fast_reg_mr,
        ]
    );
}
