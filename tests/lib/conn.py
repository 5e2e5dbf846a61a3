# SPDX-License-Identifier: GPL-2.0-only
"""Connecting the pyverbs tests' RC and UC QPs: the one set of attributes they all use."""

import pyverbs.enums as e
from pyverbs.addr import AHAttr
from pyverbs.qp import QPAttr


def connect_attr(dest_qp_num, lid, access, rnr_retry):
    """The QPAttr that QP.to_rts() takes through INIT and RTR to RTS, connected to QP
    dest_qp_num at lid on port 1: a 1024-byte MTU, PSNs 0, one read or atomic outstanding, an
    RNR timer of 1, a local ACK timeout of 14, 7 retries and rnr_retry RNR retries."""
    attr = QPAttr()
    attr.port_num = 1
    attr.pkey_index = 0
    attr.qp_access_flags = access
    attr.dest_qp_num = dest_qp_num
    attr.path_mtu = e.IBV_MTU_1024
    attr.rq_psn = attr.sq_psn = 0
    attr.max_rd_atomic = attr.max_dest_rd_atomic = 1
    attr.min_rnr_timer = 1
    attr.timeout = 14
    attr.retry_cnt = 7
    attr.rnr_retry = rnr_retry
    attr.ah_attr = AHAttr(port_num=1, dlid=lid)
    return attr
