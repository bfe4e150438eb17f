/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Tracepoints: every step of the data path, for watching RDMA happen.
 *
 *   echo 1 > /sys/kernel/tracing/events/vrdma/enable
 *   cat /sys/kernel/tracing/trace_pipe
 *
 * In the order a SEND meets them (scripts/trace-send prints them as the
 * nine steps of the lecture notes):
 *
 *   vrdma_doorbell   the process rang the SQ doorbell (post_send)
 *   vrdma_sq_wqe     the requester copied a send WQE out of the SQ ring
 *   vrdma_req_pkt    ... and built one request packet of it (segmentation)
 *   vrdma_xmit       a packet leaves for the wire (requests, ACKs, responses)
 *   vrdma_rcv        a packet arrived and passed the header and ICRC checks
 *   vrdma_resp_pkt   the responder checked its PSN against the expected one
 *   vrdma_rq_wqe     the responder took a receive WQE out of the RQ (or SRQ)
 *   vrdma_key_check  an lkey or rkey was checked before memory was touched
 *   vrdma_atomic     an ATOMIC was executed on the responder's memory
 *   vrdma_ack_xmit   the responder sent an ACK, NAK or RNR NAK
 *   vrdma_comp_pkt   the completer got an ACK, NAK or response
 *   vrdma_retry      the requester went back to resend (go-back-N)
 *   vrdma_cqe        a CQE was written into a CQ ring
 *   vrdma_cq_notify  ... and the armed CQ's completion channel was woken
 *   vrdma_cq_arm     the process armed a CQ (ibv_req_notify_cq)
 *   vrdma_qp_error   a QP went to the error state
 *   vrdma_loopback_msg   a whole RC message between QPs of this host moved
 *                    without packets (loopback.c)
 *
 * Each costs one patched-out branch when disabled.
 */
#undef TRACE_SYSTEM
#define TRACE_SYSTEM vrdma

#if !defined(VRDMA_TRACE_H) || defined(TRACE_HEADER_MULTI_READ)
#define VRDMA_TRACE_H

#include <linux/tracepoint.h>
#include <rdma/ib_pack.h>

#include "vrdma.h"
#include "pkt.h"

#define vrdma_show_bth_opcode(op)					\
	__print_symbolic(op,						\
		{ IB_OPCODE_RC_SEND_FIRST, "SEND_FIRST" },		\
		{ IB_OPCODE_RC_SEND_MIDDLE, "SEND_MIDDLE" },		\
		{ IB_OPCODE_RC_SEND_LAST, "SEND_LAST" },		\
		{ IB_OPCODE_RC_SEND_LAST_WITH_IMMEDIATE, "SEND_LAST_IMM" }, \
		{ IB_OPCODE_RC_SEND_ONLY, "SEND_ONLY" },		\
		{ IB_OPCODE_RC_SEND_ONLY_WITH_IMMEDIATE, "SEND_ONLY_IMM" }, \
		{ IB_OPCODE_RC_RDMA_WRITE_FIRST, "WRITE_FIRST" },	\
		{ IB_OPCODE_RC_RDMA_WRITE_MIDDLE, "WRITE_MIDDLE" },	\
		{ IB_OPCODE_RC_RDMA_WRITE_LAST, "WRITE_LAST" },	\
		{ IB_OPCODE_RC_RDMA_WRITE_LAST_WITH_IMMEDIATE, "WRITE_LAST_IMM" }, \
		{ IB_OPCODE_RC_RDMA_WRITE_ONLY, "WRITE_ONLY" },	\
		{ IB_OPCODE_RC_RDMA_WRITE_ONLY_WITH_IMMEDIATE, "WRITE_ONLY_IMM" }, \
		{ IB_OPCODE_RC_RDMA_READ_REQUEST, "READ_REQUEST" },	\
		{ IB_OPCODE_RC_RDMA_READ_RESPONSE_FIRST, "READ_RESPONSE_FIRST" }, \
		{ IB_OPCODE_RC_RDMA_READ_RESPONSE_MIDDLE, "READ_RESPONSE_MIDDLE" }, \
		{ IB_OPCODE_RC_RDMA_READ_RESPONSE_LAST, "READ_RESPONSE_LAST" }, \
		{ IB_OPCODE_RC_RDMA_READ_RESPONSE_ONLY, "READ_RESPONSE_ONLY" }, \
		{ IB_OPCODE_RC_ACKNOWLEDGE, "ACKNOWLEDGE" },		\
		{ IB_OPCODE_RC_ATOMIC_ACKNOWLEDGE, "ATOMIC_ACKNOWLEDGE" }, \
		{ VRDMA_OPCODE_RC_FLUSH, "FLUSH" },			\
		{ VRDMA_OPCODE_RC_ATOMIC_WRITE, "ATOMIC_WRITE" },	\
		{ IB_OPCODE_RC_COMPARE_SWAP, "COMPARE_SWAP" },		\
		{ IB_OPCODE_RC_FETCH_ADD, "FETCH_ADD" },		\
		{ VRDMA_OPCODE_RC_MASKED_COMPARE_SWAP, "MASKED_COMPARE_SWAP" }, \
		{ VRDMA_OPCODE_RC_MASKED_FETCH_ADD, "MASKED_FETCH_ADD" }, \
		{ IB_OPCODE_RC_SEND_LAST_WITH_INVALIDATE, "SEND_LAST_INV" }, \
		{ IB_OPCODE_RC_SEND_ONLY_WITH_INVALIDATE, "SEND_ONLY_INV" }, \
		{ IB_OPCODE_UD_SEND_ONLY, "UD_SEND_ONLY" },		\
		{ IB_OPCODE_UD_SEND_ONLY_WITH_IMMEDIATE, "UD_SEND_ONLY_IMM" })

#define vrdma_show_wr_opcode(op)					\
	__print_symbolic(op,						\
		{ IB_UVERBS_WR_SEND, "SEND" },				\
		{ IB_UVERBS_WR_SEND_WITH_IMM, "SEND_WITH_IMM" },	\
		{ IB_UVERBS_WR_SEND_WITH_INV, "SEND_WITH_INV" },	\
		{ IB_UVERBS_WR_RDMA_WRITE, "RDMA_WRITE" },		\
		{ IB_UVERBS_WR_RDMA_WRITE_WITH_IMM, "RDMA_WRITE_WITH_IMM" }, \
		{ IB_UVERBS_WR_RDMA_READ, "RDMA_READ" },		\
		{ IB_UVERBS_WR_ATOMIC_CMP_AND_SWP, "ATOMIC_CMP_AND_SWP" }, \
		{ IB_UVERBS_WR_ATOMIC_FETCH_AND_ADD, "ATOMIC_FETCH_AND_ADD" }, \
		{ VRDMA_WR_MASKED_ATOMIC_CMP_AND_SWP, "MASKED_ATOMIC_CMP_AND_SWP" }, \
		{ VRDMA_WR_MASKED_ATOMIC_FETCH_AND_ADD, "MASKED_ATOMIC_FETCH_AND_ADD" }, \
		{ IB_UVERBS_WR_LOCAL_INV, "LOCAL_INV" },		\
		{ IB_UVERBS_WR_BIND_MW, "BIND_MW" },			\
		{ VRDMA_WR_FLUSH, "FLUSH" },				\
		{ VRDMA_WR_ATOMIC_WRITE, "ATOMIC_WRITE" })

#define vrdma_show_wc_opcode(op)					\
	__print_symbolic(op,						\
		{ IB_WC_SEND, "SEND" },					\
		{ IB_WC_RDMA_WRITE, "RDMA_WRITE" },			\
		{ IB_WC_RDMA_READ, "RDMA_READ" },			\
		{ IB_WC_COMP_SWAP, "COMP_SWAP" },			\
		{ IB_WC_FETCH_ADD, "FETCH_ADD" },			\
		{ IB_WC_BIND_MW, "BIND_MW" },				\
		{ IB_WC_LOCAL_INV, "LOCAL_INV" },			\
		{ VRDMA_WC_FLUSH, "FLUSH" },				\
		{ VRDMA_WC_ATOMIC_WRITE, "ATOMIC_WRITE" },		\
		{ IB_WC_RECV, "RECV" },					\
		{ IB_WC_RECV_RDMA_WITH_IMM, "RECV_RDMA_WITH_IMM" })

#define vrdma_show_wc_status(st)					\
	__print_symbolic(st,						\
		{ IB_WC_SUCCESS, "SUCCESS" },				\
		{ IB_WC_LOC_LEN_ERR, "LOC_LEN_ERR" },			\
		{ IB_WC_LOC_QP_OP_ERR, "LOC_QP_OP_ERR" },		\
		{ IB_WC_LOC_PROT_ERR, "LOC_PROT_ERR" },		\
		{ IB_WC_WR_FLUSH_ERR, "WR_FLUSH_ERR" },		\
		{ IB_WC_MW_BIND_ERR, "MW_BIND_ERR" },			\
		{ IB_WC_REM_INV_REQ_ERR, "REM_INV_REQ_ERR" },		\
		{ IB_WC_REM_ACCESS_ERR, "REM_ACCESS_ERR" },		\
		{ IB_WC_REM_OP_ERR, "REM_OP_ERR" },			\
		{ IB_WC_RETRY_EXC_ERR, "RETRY_EXC_ERR" },		\
		{ IB_WC_RNR_RETRY_EXC_ERR, "RNR_RETRY_EXC_ERR" },	\
		{ IB_WC_GENERAL_ERR, "GENERAL_ERR" })

/* The AETH syndrome's top bits: ACK, RNR NAK, NAK (IBA 9.7.5.2.3). */
#define vrdma_show_syndrome(syn)					\
	__print_symbolic((syn) & VRDMA_SYN_TYPE_MASK,			\
		{ VRDMA_SYN_ACK, "ACK" },				\
		{ VRDMA_SYN_RNR_NAK, "RNR_NAK" },			\
		{ VRDMA_SYN_NAK, "NAK" })

#define vrdma_qp_dev(qp)	dev_name(&(qp)->ibqp.device->dev)

TRACE_EVENT(vrdma_doorbell,
	    TP_PROTO(struct vrdma_qp *qp),
	    TP_ARGS(qp),
	    TP_STRUCT__entry(__string(dev, vrdma_qp_dev(qp))
			     __field(u32, qpn)
			     __field(u32, prod)
			     __field(u32, cons)),
	    TP_fast_assign(vrdma_assign_str(dev, vrdma_qp_dev(qp));
			   __entry->qpn = qp->ibqp.qp_num;
			   /* The SQ's producer index as the process left it. */
			   __entry->prod = READ_ONCE(qp->sq.ring->prod);
			   __entry->cons = qp->sq.kidx;),
	    TP_printk("%s qpn=%u sq_prod=%u sq_cons=%u", __get_str(dev),
		      __entry->qpn, __entry->prod, __entry->cons)
);

TRACE_EVENT(vrdma_sq_wqe,
	    TP_PROTO(struct vrdma_qp *qp, u32 idx, struct vrdma_swqe *swqe),
	    TP_ARGS(qp, idx, swqe),
	    TP_STRUCT__entry(__string(dev, vrdma_qp_dev(qp))
			     __field(u32, qpn)
			     __field(u32, idx)
			     __field(u64, wr_id)
			     __field(u8, opcode)
			     __field(u8, flags)
			     __field(u8, status)
			     __field(u32, num_sge)
			     __field(u32, length)),
	    TP_fast_assign(vrdma_assign_str(dev, vrdma_qp_dev(qp));
			   __entry->qpn = qp->ibqp.qp_num;
			   __entry->idx = idx;
			   __entry->wr_id = swqe->wqe->wr_id;
			   __entry->opcode = swqe->wqe->opcode;
			   __entry->flags = swqe->wqe->flags;
			   __entry->status = swqe->status;
			   __entry->num_sge = swqe->wqe->flags & VRDMA_SEND_INLINE ? 0 :
					      swqe->wqe->num_sge;
			   __entry->length = swqe->length;),
	    TP_printk("%s qpn=%u sq_idx=%u wr_id=0x%llx opcode=%s num_sge=%u length=%u flags=0x%x check=%s",
		      __get_str(dev), __entry->qpn, __entry->idx, __entry->wr_id,
		      vrdma_show_wr_opcode(__entry->opcode), __entry->num_sge,
		      __entry->length, __entry->flags,
		      vrdma_show_wc_status(__entry->status))
);

TRACE_EVENT(vrdma_rq_wqe,
	    TP_PROTO(struct vrdma_qp *qp),
	    TP_ARGS(qp),
	    TP_STRUCT__entry(__string(dev, vrdma_qp_dev(qp))
			     __field(u32, qpn)
			     __field(u32, idx)
			     __field(u64, wr_id)
			     __field(u32, num_sge)
			     __field(u32, length)
			     __field(bool, srq)),
	    TP_fast_assign(vrdma_assign_str(dev, vrdma_qp_dev(qp));
			   __entry->qpn = qp->ibqp.qp_num;
			   __entry->srq = !!qp->srq;
			   /* The index of the slot just taken. */
			   __entry->idx = (qp->srq ? qp->srq->queue.kidx : qp->rq.kidx) - 1;
			   __entry->wr_id = qp->rwqe.wqe->wr_id;
			   __entry->num_sge = qp->rwqe.wqe->num_sge;
			   __entry->length = qp->rwqe.length;),
	    TP_printk("%s qpn=%u %s_idx=%u wr_id=0x%llx num_sge=%u length=%u",
		      __get_str(dev), __entry->qpn, __entry->srq ? "srq" : "rq",
		      __entry->idx, __entry->wr_id, __entry->num_sge,
		      __entry->length)
);

TRACE_EVENT(vrdma_req_pkt,
	    TP_PROTO(struct vrdma_qp *qp, struct vrdma_swqe *swqe,
		     struct sk_buff *skb, u32 psn, u32 offset),
	    TP_ARGS(qp, swqe, skb, psn, offset),
	    TP_STRUCT__entry(__string(dev, vrdma_qp_dev(qp))
			     __field(u32, qpn)
			     __field(u32, dqpn)
			     __field(u64, wr_id)
			     __field(u8, opcode)
			     __field(u32, psn)
			     __field(u32, offset)
			     __field(u32, paylen)),
	    TP_fast_assign(vrdma_assign_str(dev, vrdma_qp_dev(qp));
			   __entry->qpn = qp->ibqp.qp_num;
			   __entry->dqpn = qp->attr.dest_qp_num;
			   __entry->wr_id = swqe->wqe->wr_id;
			   __entry->opcode = vrdma_pkt(skb)->opcode;
			   __entry->psn = psn;
			   __entry->offset = offset;
			   __entry->paylen = vrdma_pkt(skb)->paylen;),
	    TP_printk("%s qpn=%u wr_id=0x%llx opcode=%s psn=%u dest_qpn=%u offset=%u len=%u",
		      __get_str(dev), __entry->qpn, __entry->wr_id,
		      vrdma_show_bth_opcode(__entry->opcode), __entry->psn,
		      __entry->dqpn, __entry->offset, __entry->paylen)
);

DECLARE_EVENT_CLASS(vrdma_packet,
		    TP_PROTO(struct vrdma_dev *vdev, struct sk_buff *skb),
		    TP_ARGS(vdev, skb),
		    TP_STRUCT__entry(__string(dev, dev_name(&vdev->ibdev.dev))
				     __field(u8, opcode)
				     __field(u32, qpn)
				     __field(u32, psn)
				     __field(u32, paylen)
				     __field(bool, ack_req)),
		    TP_fast_assign(const struct vrdma_bth *bth = vrdma_bth(skb);

				   vrdma_assign_str(dev, dev_name(&vdev->ibdev.dev));
				   __entry->opcode = bth->opcode;
				   __entry->qpn = be32_to_cpu(bth->qpn) & VRDMA_BTH_QPN_MASK;
				   __entry->psn = be32_to_cpu(bth->apsn) & VRDMA_BTH_PSN_MASK;
				   __entry->ack_req = !!(be32_to_cpu(bth->apsn) &
							 VRDMA_BTH_ACKREQ);
				   __entry->paylen = vrdma_pkt(skb)->paylen;),
		    TP_printk("%s opcode=%s dest_qpn=%u psn=%u len=%u ackreq=%d",
			      __get_str(dev), vrdma_show_bth_opcode(__entry->opcode),
			      __entry->qpn, __entry->psn, __entry->paylen,
			      __entry->ack_req)
);

/* A packet handed to the IP stack (or to a local device). */
DEFINE_EVENT(vrdma_packet, vrdma_xmit,
	     TP_PROTO(struct vrdma_dev *vdev, struct sk_buff *skb),
	     TP_ARGS(vdev, skb)
);

/* A packet that passed vrdma_rcv()'s checks, queued to its QP. */
DEFINE_EVENT(vrdma_packet, vrdma_rcv,
	     TP_PROTO(struct vrdma_dev *vdev, struct sk_buff *skb),
	     TP_ARGS(vdev, skb)
);

TRACE_EVENT(vrdma_resp_pkt,
	    TP_PROTO(struct vrdma_qp *qp, struct sk_buff *skb, u32 expected),
	    TP_ARGS(qp, skb, expected),
	    TP_STRUCT__entry(__string(dev, vrdma_qp_dev(qp))
			     __field(u32, qpn)
			     __field(u8, opcode)
			     __field(u32, psn)
			     __field(u32, expected)
			     __field(u32, paylen)
			     __field(int, diff)),
	    TP_fast_assign(vrdma_assign_str(dev, vrdma_qp_dev(qp));
			   __entry->qpn = qp->ibqp.qp_num;
			   __entry->opcode = vrdma_pkt(skb)->opcode;
			   __entry->psn = vrdma_pkt(skb)->psn;
			   __entry->expected = expected;
			   __entry->paylen = vrdma_pkt(skb)->paylen;
			   __entry->diff = vrdma_psn_diff(vrdma_pkt(skb)->psn, expected);),
	    TP_printk("%s qpn=%u opcode=%s psn=%u expected=%u len=%u %s",
		      __get_str(dev), __entry->qpn,
		      vrdma_show_bth_opcode(__entry->opcode), __entry->psn,
		      __entry->expected, __entry->paylen,
		      !__entry->diff ? "in-order" :
		      __entry->diff < 0 ? "duplicate" : "sequence-error")
);

TRACE_EVENT(vrdma_key_check,
	    TP_PROTO(struct vrdma_mr *mr, u32 key, u64 iova, u64 length,
		     int access, int ret),
	    TP_ARGS(mr, key, iova, length, access, ret),
	    TP_STRUCT__entry(__string(dev, dev_name(&mr->ibmr.device->dev))
			     __field(u32, key)
			     __field(u64, iova)
			     __field(u64, offset)
			     __field(u64, length)
			     __field(int, access)
			     __field(int, ret)),
	    TP_fast_assign(vrdma_assign_str(dev, dev_name(&mr->ibmr.device->dev));
			   __entry->key = key;
			   __entry->iova = iova;
			   __entry->offset = iova - mr->iova;
			   __entry->length = length;
			   __entry->access = access;
			   __entry->ret = ret;),
	    TP_printk("%s key=0x%x iova=0x%llx mr_offset=%llu len=%llu access=%s %s",
		      __get_str(dev), __entry->key, __entry->iova, __entry->offset,
		      __entry->length,
		      __print_flags(__entry->access, "|",
				    { IB_ACCESS_LOCAL_WRITE, "LOCAL_WRITE" },
				    { IB_ACCESS_REMOTE_WRITE, "REMOTE_WRITE" },
				    { IB_ACCESS_REMOTE_READ, "REMOTE_READ" },
				    { IB_ACCESS_REMOTE_ATOMIC, "REMOTE_ATOMIC" }),
		      __entry->ret == -EACCES ? "refused(pd/rights)" :
		      __entry->ret ? "refused(range)" : "ok")
);

TRACE_EVENT(vrdma_atomic,
	    TP_PROTO(struct vrdma_qp *qp, u8 opcode, u64 va,
		     const struct vrdma_atomic_op *aop, u64 orig),
	    TP_ARGS(qp, opcode, va, aop, orig),
	    TP_STRUCT__entry(__string(dev, vrdma_qp_dev(qp))
			     __field(u32, qpn)
			     __field(u8, opcode)
			     __field(u64, va)
			     __field(u64, compare)
			     __field(u64, swap_add)
			     __field(u64, compare_mask)
			     __field(u64, swap_add_mask)
			     __field(u64, orig)),
	    TP_fast_assign(vrdma_assign_str(dev, vrdma_qp_dev(qp));
			   __entry->qpn = qp->ibqp.qp_num;
			   __entry->opcode = opcode;
			   __entry->va = va;
			   __entry->compare = aop->compare;
			   __entry->swap_add = aop->swap_add;
			   __entry->compare_mask = aop->compare_mask;
			   __entry->swap_add_mask = aop->swap_add_mask;
			   __entry->orig = orig;),
	    TP_printk("%s qpn=%u %s va=0x%llx compare=0x%llx swap_add=0x%llx compare_mask=0x%llx swap_add_mask=0x%llx orig=0x%llx",
		      __get_str(dev), __entry->qpn,
		      vrdma_show_bth_opcode(__entry->opcode), __entry->va,
		      __entry->compare, __entry->swap_add,
		      __entry->compare_mask, __entry->swap_add_mask,
		      __entry->orig)
);

TRACE_EVENT(vrdma_ack_xmit,
	    TP_PROTO(struct vrdma_qp *qp, u32 psn, u8 syndrome),
	    TP_ARGS(qp, psn, syndrome),
	    TP_STRUCT__entry(__string(dev, vrdma_qp_dev(qp))
			     __field(u32, qpn)
			     __field(u32, dqpn)
			     __field(u32, psn)
			     __field(u32, msn)
			     __field(u8, syndrome)),
	    TP_fast_assign(vrdma_assign_str(dev, vrdma_qp_dev(qp));
			   __entry->qpn = qp->ibqp.qp_num;
			   __entry->dqpn = qp->attr.dest_qp_num;
			   __entry->psn = psn;
			   __entry->msn = qp->resp.msn;
			   __entry->syndrome = syndrome;),
	    TP_printk("%s qpn=%u %s psn=%u msn=%u code=0x%x dest_qpn=%u",
		      __get_str(dev), __entry->qpn,
		      vrdma_show_syndrome(__entry->syndrome), __entry->psn,
		      __entry->msn, __entry->syndrome & 0x1f, __entry->dqpn)
);

TRACE_EVENT(vrdma_comp_pkt,
	    TP_PROTO(struct vrdma_qp *qp, struct sk_buff *skb),
	    TP_ARGS(qp, skb),
	    TP_STRUCT__entry(__string(dev, vrdma_qp_dev(qp))
			     __field(u32, qpn)
			     __field(u8, opcode)
			     __field(u8, syndrome)
			     __field(bool, aeth)
			     __field(u32, psn)
			     __field(u32, una)
			     __field(u32, paylen)),
	    TP_fast_assign(struct vrdma_pkt *pkt = vrdma_pkt(skb);

			   vrdma_assign_str(dev, vrdma_qp_dev(qp));
			   __entry->qpn = qp->ibqp.qp_num;
			   __entry->opcode = pkt->opcode;
			   __entry->aeth = !!(pkt->mask & VRDMA_OPF_AETH);
			   __entry->syndrome = __entry->aeth ?
				   be32_to_cpu(((struct vrdma_aeth *)
						vrdma_ext(skb, VRDMA_OPF_AETH))->smsn) >>
				   VRDMA_AETH_SYN_SHIFT : 0;
			   __entry->psn = pkt->psn;
			   __entry->una = qp->req.una;
			   __entry->paylen = pkt->paylen;),
	    TP_printk("%s qpn=%u opcode=%s %s psn=%u oldest_unacked=%u len=%u",
		      __get_str(dev), __entry->qpn,
		      vrdma_show_bth_opcode(__entry->opcode),
		      __entry->aeth ? vrdma_show_syndrome(__entry->syndrome) : "-",
		      __entry->psn, __entry->una, __entry->paylen)
);

TRACE_EVENT(vrdma_retry,
	    TP_PROTO(struct vrdma_qp *qp, u32 psn, bool timeout),
	    TP_ARGS(qp, psn, timeout),
	    TP_STRUCT__entry(__string(dev, vrdma_qp_dev(qp))
			     __field(u32, qpn)
			     __field(u32, psn)
			     __field(u8, retry)
			     __field(bool, timeout)),
	    TP_fast_assign(vrdma_assign_str(dev, vrdma_qp_dev(qp));
			   __entry->qpn = qp->ibqp.qp_num;
			   __entry->psn = psn;
			   __entry->retry = qp->req.retry;
			   __entry->timeout = timeout;),
	    TP_printk("%s qpn=%u resend_from_psn=%u retries=%u cause=%s",
		      __get_str(dev), __entry->qpn, __entry->psn, __entry->retry,
		      __entry->timeout ? "timeout" : "nak")
);

TRACE_EVENT(vrdma_cqe,
	    TP_PROTO(struct vrdma_cq *cq, const struct vrdma_cqe *cqe),
	    TP_ARGS(cq, cqe),
	    TP_STRUCT__entry(__string(dev, dev_name(&cq->ibcq.device->dev))
			     __field(u32, cqn)
			     __field(u32, idx)
			     __field(u32, qpn)
			     __field(u64, wr_id)
			     __field(u8, status)
			     __field(u8, opcode)
			     __field(u32, byte_len)),
	    TP_fast_assign(vrdma_assign_str(dev, dev_name(&cq->ibcq.device->dev));
			   __entry->cqn = cq->ibcq.res.id;
			   /* The slot just written; the process polls it from there. */
			   __entry->idx = cq->queue.kidx - 1;
			   __entry->qpn = cqe->qp_num;
			   __entry->wr_id = cqe->wr_id;
			   __entry->status = cqe->status;
			   __entry->opcode = cqe->opcode;
			   __entry->byte_len = cqe->byte_len;),
	    TP_printk("%s cq=%u cq_idx=%u qpn=%u wr_id=0x%llx status=%s opcode=%s byte_len=%u",
		      __get_str(dev), __entry->cqn, __entry->idx, __entry->qpn,
		      __entry->wr_id, vrdma_show_wc_status(__entry->status),
		      vrdma_show_wc_opcode(__entry->opcode), __entry->byte_len)
);

DECLARE_EVENT_CLASS(vrdma_cq_class,
		    TP_PROTO(struct vrdma_cq *cq, int flags),
		    TP_ARGS(cq, flags),
		    TP_STRUCT__entry(__string(dev, dev_name(&cq->ibcq.device->dev))
				     __field(u32, cqn)
				     __field(int, flags)),
		    TP_fast_assign(vrdma_assign_str(dev, dev_name(&cq->ibcq.device->dev));
				   __entry->cqn = cq->ibcq.res.id;
				   __entry->flags = flags;),
		    TP_printk("%s cq=%u %s", __get_str(dev), __entry->cqn,
			      (__entry->flags & IB_CQ_SOLICITED_MASK) == IB_CQ_SOLICITED ?
			      "solicited" : "next")
);

/* ibv_req_notify_cq: wake me at the next (solicited) completion. */
DEFINE_EVENT(vrdma_cq_class, vrdma_cq_arm,
	     TP_PROTO(struct vrdma_cq *cq, int flags),
	     TP_ARGS(cq, flags)
);

/* The armed CQ's completion channel is woken (ibv_get_cq_event returns). */
DEFINE_EVENT(vrdma_cq_class, vrdma_cq_notify,
	     TP_PROTO(struct vrdma_cq *cq, int flags),
	     TP_ARGS(cq, flags)
);

/*
 * A whole RC message moved by the loopback path (loopback.c): no packet, one
 * copy; @npsn PSNs from @psn consumed on both QPs.
 */
TRACE_EVENT(vrdma_loopback_msg,
	    TP_PROTO(struct vrdma_qp *qp, struct vrdma_swqe *swqe, u32 dqpn,
		     u32 psn, u32 npsn, u8 status),
	    TP_ARGS(qp, swqe, dqpn, psn, npsn, status),
	    TP_STRUCT__entry(__string(dev, vrdma_qp_dev(qp))
			     __field(u32, qpn)
			     __field(u32, dqpn)
			     __field(u64, wr_id)
			     __field(u8, opcode)
			     __field(u32, psn)
			     __field(u32, npsn)
			     __field(u32, length)
			     __field(u8, status)),
	    TP_fast_assign(vrdma_assign_str(dev, vrdma_qp_dev(qp));
			   __entry->qpn = qp->ibqp.qp_num;
			   __entry->dqpn = dqpn;
			   __entry->wr_id = swqe->wqe->wr_id;
			   __entry->opcode = swqe->wqe->opcode;
			   __entry->psn = psn;
			   __entry->npsn = npsn;
			   __entry->length = swqe->length;
			   __entry->status = status;),
	    TP_printk("%s qpn=%u wr_id=0x%llx wr_opcode=%u dest_qpn=%u psn=%u npsn=%u len=%u status=%u",
		      __get_str(dev), __entry->qpn, __entry->wr_id,
		      __entry->opcode, __entry->dqpn, __entry->psn,
		      __entry->npsn, __entry->length, __entry->status)
);

TRACE_EVENT(vrdma_qp_error,
	    TP_PROTO(struct vrdma_qp *qp, int event),
	    TP_ARGS(qp, event),
	    TP_STRUCT__entry(__string(dev, vrdma_qp_dev(qp))
			     __field(u32, qpn)
			     __field(int, event)),
	    TP_fast_assign(vrdma_assign_str(dev, vrdma_qp_dev(qp));
			   __entry->qpn = qp->ibqp.qp_num;
			   __entry->event = event;),
	    TP_printk("%s qpn=%u event=%d", __get_str(dev), __entry->qpn,
		      __entry->event)
);

#endif /* VRDMA_TRACE_H */

#undef TRACE_INCLUDE_PATH
#define TRACE_INCLUDE_PATH .
#undef TRACE_INCLUDE_FILE
#define TRACE_INCLUDE_FILE trace
#include <trace/define_trace.h>
