// SPDX-License-Identifier: GPL-2.0
/*
 * The responder: request packets are checked, executed and acknowledged.
 *
 * For each request it checks, in this order, the PSN (the next expected
 * one, an old one -- a duplicate -- or a gap), the opcode sequence (a
 * SEND_MIDDLE must follow a SEND_FIRST...), the QP's remote access flags,
 * and the lengths; then it executes it:
 *
 *   SEND        payload goes into the buffers of the next receive WQE;
 *               the last packet writes a receive CQE (SEND with
 *               invalidate: after unbinding the memory window its IETH
 *               names)
 *   RDMA WRITE  the RETH's rkey, address and length must be granted by an
 *               MR of the QP's PD, or a memory window (vrdma_rkey_get());
 *               payload goes there
 *   RDMA READ   the same check, then response packets carry the data back
 *   ATOMIC      the same check for 8 aligned bytes, then compare-and-swap
 *               or fetch-and-add; an ATOMIC ACKNOWLEDGE carries the
 *               original value back
 *   ATOMIC WRITE  the same check for 8 aligned bytes (REMOTE_WRITE), then
 *               one 8-byte store; FLUSH: the rkey must grant the FLUSH
 *               rights asked for on the range (or its MR), then the data
 *               placed before is made visible; both are answered by an
 *               RDMA READ RESPONSE ONLY without payload
 *
 * and, when the requester asked (AckReq), sends an ACK.  Errors are NAKed:
 * a PSN gap with a sequence error NAK, a missing receive WQE with an RNR
 * NAK, and invalid requests, access violations and local errors with a NAK
 * that also puts this QP in error.
 *
 * Responder resources: the last max_dest_rd_atomic READs, ATOMICs, ATOMIC
 * WRITEs and FLUSHes are remembered, so that a duplicate -- the requester
 * resends it because the answer was lost -- is answered from there: an
 * ATOMIC (or ATOMIC WRITE, or FLUSH) is never executed twice, and a READ
 * is answered again only within what the original asked for and was
 * granted.  A "duplicate" that matches no resource executes
 * nothing.
 *
 * A UC responder runs the same checks and executes SENDs and WRITEs the
 * same way, but answers nothing: a message it cannot take (a packet lost
 * or out of sequence, no receive WQE, a refused WRITE) is dropped silently
 * and counted, and it resumes at the next FIRST or ONLY packet.  Only local
 * errors (a receive buffer too small or not writable) fail the QP.  UD
 * requests go to ud.c.
 */
#include "vrdma.h"
#include "pkt.h"
#include "trace.h"

/* An answer's opcode: RC's, or its XRC twin from an XRC target QP. */
static u8 vrdma_resp_opcode(struct vrdma_qp *qp, u8 rc_opcode)
{
	return vrdma_qp_is_xrc(qp) ? VRDMA_OPCODE_XRC + rc_opcode : rc_opcode;
}

/* Put an ACK (syndrome VRDMA_SYN_ACK) or NAK for @psn on the wire. */
static void vrdma_xmit_ack(struct vrdma_qp *qp, u32 psn, u8 syndrome)
{
	struct vrdma_aeth *aeth;
	struct sk_buff *skb;

	skb = vrdma_pkt_alloc(qp->vdev, &qp->av,
			      vrdma_resp_opcode(qp, IB_OPCODE_RC_ACKNOWLEDGE),
			      0);
	if (!skb)
		return;	/* the requester's retry covers a lost ACK */
	aeth = vrdma_ext(skb, VRDMA_OPF_AETH);
	aeth->smsn = vrdma_aeth_smsn(syndrome, qp->resp.msn);
	vrdma_bth_init(skb, qp->attr.dest_qp_num, psn, false, false);
	trace_vrdma_ack_xmit(qp, psn, syndrome);
	if ((syndrome & VRDMA_SYN_TYPE_MASK) == VRDMA_SYN_NAK)
		vrdma_count(qp->vdev, VRDMA_CNT_NAK_SENT);
	else if ((syndrome & VRDMA_SYN_TYPE_MASK) == VRDMA_SYN_RNR_NAK)
		vrdma_count(qp->vdev, VRDMA_CNT_RNR_NAK_SENT);
	else
		vrdma_count(qp->vdev, VRDMA_CNT_ACK_SENT);
	vrdma_pkt_send(qp->vdev, &qp->av, qp->txq, skb);
}

/* Send the ACK owed, if any: it goes before any later response. */
static void vrdma_flush_ack(struct vrdma_qp *qp)
{
	if (!qp->resp.ack_pending)
		return;
	qp->resp.ack_pending = false;
	vrdma_xmit_ack(qp, qp->resp.ack_psn,
		       VRDMA_SYN_ACK | VRDMA_AETH_NO_CREDIT);
}

/*
 * Owe an ACK for @psn.  An ACK acknowledges every request up to its PSN,
 * so the requests of one batch of packets that ask for an ACK get one,
 * for the last of them (ACK coalescing, IBA 9.7.5.1.1).
 */
static void vrdma_ack_later(struct vrdma_qp *qp, u32 psn)
{
	struct vrdma_resp *resp = &qp->resp;

	if (resp->ack_pending) {
		vrdma_count(qp->vdev, VRDMA_CNT_ACK_COALESCED);
		if (vrdma_psn_diff(psn, resp->ack_psn) < 0)
			return;
	}
	resp->ack_pending = true;
	resp->ack_psn = psn;
}

/* Send an ACK or NAK for @psn now, after the ACK owed. */
static void vrdma_send_ack(struct vrdma_qp *qp, u32 psn, u8 syndrome)
{
	vrdma_flush_ack(qp);
	vrdma_xmit_ack(qp, psn, syndrome);
}

/* NAK a fatal error of request @psn and put the QP in error. */
static void vrdma_resp_fatal(struct vrdma_qp *qp, u32 psn, u8 nak,
			     enum ib_event_type event)
{
	if (vrdma_qp_is_rc(qp))
		vrdma_send_ack(qp, psn, VRDMA_SYN_NAK | nak);
	vrdma_qp_error(qp, event);
}

/*
 * Responder resources
 * -------------------
 * A ring of max_dest_rd_atomic entries; each new READ or ATOMIC takes the
 * oldest.  A requester keeps at most max_rd_atomic (set from our
 * max_dest_rd_atomic) of them outstanding, so when one takes the entry of
 * the request max_dest_rd_atomic before it, that one has completed at the
 * requester and will not be asked for again.  A responder cannot count
 * more precisely what is outstanding: nothing on the wire says when the
 * requester has received a response.  A requester that ignores the limit
 * loses answers (a duplicate ATOMIC found nowhere is dropped and counted,
 * and the requester's retries run out); one that has no resource at all to
 * use, max_dest_rd_atomic 0, is refused with an Invalid Request NAK.
 */

/**
 * vrdma_resp_res_alloc() - allocate responder resources (max_dest_rd_atomic)
 * @num: entries, at most VRDMA_MAX_RD_ATOMIC
 *
 * Allocated before modify_qp changes anything, installed with
 * vrdma_resp_res_install() once nothing can fail any more.
 *
 * Return: the entries, NULL for @num 0, or ERR_PTR(-ENOMEM).
 */
struct vrdma_rd_atomic *vrdma_resp_res_alloc(u32 num)
{
	struct vrdma_rd_atomic *res;

	if (!num)
		return NULL;
	res = kcalloc(num, sizeof(*res), GFP_KERNEL);
	return res ? res : ERR_PTR(-ENOMEM);
}

/**
 * vrdma_resp_res_install() - make @res the QP's responder resources
 * @qp: the QP, engines owned, mutex held
 * @res: from vrdma_resp_res_alloc(@num); the QP owns it now
 * @num: its entries
 *
 * Keeps the most recent entries that fit: the limit may change in SQD
 * while duplicates of answered requests can still arrive.
 */
void vrdma_resp_res_install(struct vrdma_qp *qp, struct vrdma_rd_atomic *res,
			    u32 num)
{
	struct vrdma_resp *resp = &qp->resp;
	u32 i, keep = min(num, resp->res_num);

	vrdma_qp_assert_locked(qp);

	/* The newest entries, oldest first, go to the start. */
	for (i = 0; i < keep; i++)
		res[i] = resp->res[(resp->res_head + resp->res_num - keep + i) %
				   resp->res_num];
	kfree(resp->res);
	resp->res = res;
	resp->res_num = num;
	resp->res_head = num ? keep % num : 0;
}

/**
 * vrdma_resp_res_reset() - forget every READ and ATOMIC (QP reset)
 * @qp: the QP, engines owned, mutex held
 */
void vrdma_resp_res_reset(struct vrdma_qp *qp)
{
	struct vrdma_resp *resp = &qp->resp;

	vrdma_qp_assert_locked(qp);

	if (resp->res)
		memset(resp->res, 0, resp->res_num * sizeof(*resp->res));
	resp->res_head = 0;
}

/* Take the oldest resource for a new READ or ATOMIC with PSN @psn. */
static struct vrdma_rd_atomic *vrdma_res_new(struct vrdma_qp *qp, u8 type,
					     u32 psn)
{
	struct vrdma_resp *resp = &qp->resp;
	struct vrdma_rd_atomic *res = &resp->res[resp->res_head];

	resp->res_head = (resp->res_head + 1) % resp->res_num;
	memset(res, 0, sizeof(*res));
	res->type = type;
	res->psn = psn;
	return res;
}

/*
 * The resource of the single-packet request (ATOMIC, ATOMIC WRITE, FLUSH:
 * @type) with PSN @psn, if it is still remembered.
 */
static struct vrdma_rd_atomic *vrdma_res_find(struct vrdma_qp *qp, u8 type,
					      u32 psn)
{
	struct vrdma_resp *resp = &qp->resp;
	u32 i;

	for (i = 0; i < resp->res_num; i++)
		if (resp->res[i].type == type && resp->res[i].psn == psn)
			return &resp->res[i];
	return NULL;
}

/* The READ that response PSN @psn belongs to, if it is still remembered. */
static struct vrdma_rd_atomic *vrdma_res_find_read(struct vrdma_qp *qp,
						   u32 psn)
{
	struct vrdma_resp *resp = &qp->resp;
	u32 i;

	for (i = 0; i < resp->res_num; i++) {
		struct vrdma_rd_atomic *res = &resp->res[i];

		if (res->type == VRDMA_RES_READ &&
		    vrdma_psn_diff(psn, res->psn) >= 0 &&
		    vrdma_psn_diff(psn, res->last_psn) <= 0)
			return res;
	}
	return NULL;
}

/*
 * Answer the single-packet request of @res with its PSN and MSN: an ATOMIC
 * ACKNOWLEDGE with the original value for an ATOMIC; for an ATOMIC WRITE or
 * a FLUSH an RDMA READ RESPONSE ONLY without payload, as rdma_rxe answers
 * them.
 */
static void vrdma_send_res_ack(struct vrdma_qp *qp,
			       const struct vrdma_rd_atomic *res)
{
	bool atomic = res->type == VRDMA_RES_ATOMIC;
	struct vrdma_aeth *aeth;
	struct sk_buff *skb;

	vrdma_flush_ack(qp);	/* responses leave in PSN order */
	skb = vrdma_pkt_alloc(qp->vdev, &qp->av,
			      vrdma_resp_opcode(qp, atomic ?
					IB_OPCODE_RC_ATOMIC_ACKNOWLEDGE :
					IB_OPCODE_RC_RDMA_READ_RESPONSE_ONLY),
			      0);
	if (!skb)
		return;	/* the requester resends; the answer is kept */
	aeth = vrdma_ext(skb, VRDMA_OPF_AETH);
	aeth->smsn = vrdma_aeth_smsn(VRDMA_SYN_ACK | VRDMA_AETH_NO_CREDIT,
				     res->msn);
	if (atomic) {
		struct vrdma_atmack *atmack = vrdma_ext(skb, VRDMA_OPF_ATMACK);

		atmack->orig = cpu_to_be64(res->orig);
	}
	vrdma_bth_init(skb, qp->attr.dest_qp_num, res->psn, false, false);
	vrdma_pkt_send(qp->vdev, &qp->av, qp->txq, skb);
}

/*
 * UC: drop the message in progress, silently: no completion.  A receive
 * WQE it was filling is kept and filled again from its start by the next
 * message.
 */
static void vrdma_uc_drop(struct vrdma_qp *qp)
{
	if (!qp->resp.drop)
		vrdma_count(qp->vdev, VRDMA_CNT_DROPPED_MSGS);
	qp->resp.drop = true;
	qp->rwqe.offset = 0;
}

/*
 * The requester asked for something it may not: RC NAKs it and puts the
 * QP in error; UC has nobody to tell and drops the message.
 */
static void vrdma_resp_refuse(struct vrdma_qp *qp, u32 psn, u8 nak,
			      enum ib_event_type event)
{
	if (qp->ibqp.qp_type == IB_QPT_UC)
		vrdma_uc_drop(qp);
	else
		vrdma_resp_fatal(qp, psn, nak, event);
}

/*
 * Write the receive CQE of the current receive WQE and release it; a
 * tag-matching SRQ's completes as tm.c says.
 */
static void vrdma_complete_rwqe(struct vrdma_qp *qp, struct sk_buff *skb,
				u8 status, u32 byte_len)
{
	struct vrdma_pkt *pkt = vrdma_pkt(skb);
	int ret;
	struct vrdma_cqe cqe = {
		.wr_id = qp->rwqe.wqe->wr_id,
		.status = status,
		.opcode = (pkt->mask & VRDMA_OPF_WRITE) ?
			  IB_WC_RECV_RDMA_WITH_IMM : IB_WC_RECV,
		.byte_len = byte_len,
		.qp_num = qp->ibqp.qp_num,
		.src_qp = qp->attr.dest_qp_num,
	};

	if (status == IB_WC_SUCCESS && (pkt->mask & VRDMA_OPF_IMMDT)) {
		struct vrdma_immdt *immdt = vrdma_ext(skb, VRDMA_OPF_IMMDT);

		cqe.ex.imm_data = immdt->imm;
		cqe.wc_flags |= VRDMA_WC_WITH_IMM;
	}
	if (status == IB_WC_SUCCESS && (pkt->mask & VRDMA_OPF_IETH)) {
		struct vrdma_ieth *ieth = vrdma_ext(skb, VRDMA_OPF_IETH);

		cqe.ex.invalidate_rkey = be32_to_cpu(ieth->rkey);
		cqe.wc_flags |= VRDMA_WC_WITH_INV;
	}
	qp->rwqe.valid = false;
	if (qp->rwqe.tm)
		ret = vrdma_tm_complete(qp, &cqe, pkt->se);
	else
		ret = vrdma_cq_post(qp->rcq, &cqe, pkt->se);
	if (ret)
		vrdma_qp_error(qp, IB_EVENT_QP_FATAL);
}

/*
 * Is this opcode allowed after the previous one?  Inside a multi-packet
 * SEND or WRITE only its MIDDLE and LAST packets may come.
 */
static bool vrdma_opcode_in_sequence(u8 prev, u32 mask)
{
	u32 prev_mask = vrdma_opcode[prev].mask;
	bool in_msg = (prev_mask & (VRDMA_OPF_FIRST | VRDMA_OPF_MIDDLE)) &&
		      !(prev_mask & VRDMA_OPF_LAST) &&
		      (prev_mask & (VRDMA_OPF_SEND | VRDMA_OPF_WRITE));

	if (!in_msg)
		return !!(mask & VRDMA_OPF_FIRST);
	if (mask & VRDMA_OPF_FIRST)
		return false;
	return (prev_mask & (VRDMA_OPF_SEND | VRDMA_OPF_WRITE)) ==
	       (mask & (VRDMA_OPF_SEND | VRDMA_OPF_WRITE));
}

/* Payload lengths: full MTU except in the last packet of a message. */
static bool vrdma_length_ok(struct vrdma_qp *qp, struct vrdma_pkt *pkt)
{
	if (pkt->mask & VRDMA_OPF_LAST)
		return pkt->paylen <= qp->mtu;
	return pkt->paylen == qp->mtu;
}

/*
 * A SEND packet: place it into the receive WQE.  Returns false if the
 * message must still be acknowledged, and then the QP put in error: the
 * rkey of a SEND with invalidate was not one this QP may invalidate (IBA
 * class J: the data was placed, the receive WQE completes with an error).
 * A tagged buffer takes no TMH, and a rendezvous request handled at its
 * match nothing at all (rwqe.tm_skip).
 */
static bool vrdma_exec_send(struct vrdma_qp *qp, struct sk_buff *skb)
{
	struct vrdma_pkt *pkt = vrdma_pkt(skb);
	struct vrdma_rwqe *rw = &qp->rwqe;
	u32 skip = min(rw->tm_skip, pkt->paylen);
	u32 len = pkt->paylen - skip;
	int ret;

	if (rw->tm != VRDMA_TM_DISCARD)
		rw->tm_skip = 0;
	if (len > rw->length - rw->offset) {
		/* Receive buffer too small. */
		vrdma_complete_rwqe(qp, skb, IB_WC_LOC_LEN_ERR, 0);
		vrdma_resp_fatal(qp, pkt->psn, VRDMA_NAK_INVALID_REQ, 0);
		return true;
	}
	ret = len ? vrdma_sgl_copy_from_skb(qp->vdev, rw->pd, rw->wqe->sge,
					    rw->wqe->num_sge, rw->offset, skb,
					    pkt->hdr_len + skip, len) : 0;
	if (ret) {
		vrdma_complete_rwqe(qp, skb, IB_WC_LOC_PROT_ERR, 0);
		vrdma_resp_fatal(qp, pkt->psn, VRDMA_NAK_REM_OP_ERR, 0);
		return true;
	}
	rw->offset += len;
	if (!(pkt->mask & VRDMA_OPF_LAST))
		return true;
	if (pkt->mask & VRDMA_OPF_IETH) {
		struct vrdma_ieth *ieth = vrdma_ext(skb, VRDMA_OPF_IETH);

		if (vrdma_invalidate_key(qp, be32_to_cpu(ieth->rkey), true)) {
			vrdma_complete_rwqe(qp, skb, IB_WC_REM_INV_REQ_ERR,
					    rw->offset);
			return false;
		}
	}
	vrdma_complete_rwqe(qp, skb, IB_WC_SUCCESS, rw->offset);
	return true;
}

/* An RDMA WRITE packet: the first one carries the RETH to check. */
static void vrdma_exec_write(struct vrdma_qp *qp, struct sk_buff *skb)
{
	struct vrdma_pkt *pkt = vrdma_pkt(skb);
	struct vrdma_resp *resp = &qp->resp;
	struct vrdma_mr *mr = NULL;
	int ret = 0;

	if (pkt->mask & VRDMA_OPF_FIRST) {
		struct vrdma_reth *reth = vrdma_ext(skb, VRDMA_OPF_RETH);

		resp->va = be64_to_cpu(reth->va);
		resp->rkey = be32_to_cpu(reth->rkey);
		resp->resid = be32_to_cpu(reth->len);
		resp->length = resp->resid;
		if (resp->resid > (1U << 31) ||
		    ((pkt->mask & VRDMA_OPF_LAST) &&
		     pkt->paylen != resp->resid)) {
			vrdma_resp_refuse(qp, pkt->psn, VRDMA_NAK_INVALID_REQ,
					  IB_EVENT_QP_REQ_ERR);
			return;
		}
	}
	if (pkt->paylen > resp->resid ||
	    ((pkt->mask & VRDMA_OPF_LAST) && pkt->paylen != resp->resid)) {
		vrdma_resp_refuse(qp, pkt->psn, VRDMA_NAK_INVALID_REQ,
				  IB_EVENT_QP_REQ_ERR);
		return;
	}
	/* Zero-length writes touch no memory and need no valid rkey. */
	if (resp->length) {
		ret = vrdma_rkey_get(qp, resp->rkey, resp->va,
				     (pkt->mask & VRDMA_OPF_FIRST) ?
				     resp->resid : pkt->paylen,
				     IB_ACCESS_REMOTE_WRITE, &mr);
		if (ret) {
			vrdma_resp_refuse(qp, pkt->psn, VRDMA_NAK_REM_ACCESS,
					  IB_EVENT_QP_ACCESS_ERR);
			return;
		}
		if (pkt->paylen)
			ret = vrdma_mr_copy_from_skb(mr, resp->va, skb,
						     pkt->hdr_len,
						     pkt->paylen);
		vrdma_mr_put(mr);
		/*
		 * Memory the key grants but the process no longer maps (an
		 * ODP MR's, odp.c): an access error, as for a bad key.
		 */
		if (ret == -EFAULT || ret == -EPERM) {
			vrdma_resp_refuse(qp, pkt->psn, VRDMA_NAK_REM_ACCESS,
					  IB_EVENT_QP_ACCESS_ERR);
			return;
		}
		if (ret) {
			vrdma_resp_fatal(qp, pkt->psn, VRDMA_NAK_REM_OP_ERR,
					 IB_EVENT_QP_FATAL);
			return;
		}
	}
	resp->va += pkt->paylen;
	resp->resid -= pkt->paylen;

	if ((pkt->mask & VRDMA_OPF_LAST) && (pkt->mask & VRDMA_OPF_IMMDT))
		vrdma_complete_rwqe(qp, skb, IB_WC_SUCCESS, resp->length);
}

/* Answer a READ of @len bytes at @va, @rkey, from response PSN @psn on. */
static void vrdma_read_start(struct vrdma_qp *qp, u64 va, u32 rkey, u32 len,
			     u32 psn)
{
	struct vrdma_resp *resp = &qp->resp;

	resp->read_va = va;
	resp->read_rkey = rkey;
	resp->read_resid = len;
	resp->read_psn = psn;
	resp->read_first = true;
	resp->read_active = true;
}

/* An RDMA READ request: check it, then answer it in bursts. */
static void vrdma_exec_read(struct vrdma_qp *qp, struct sk_buff *skb)
{
	struct vrdma_pkt *pkt = vrdma_pkt(skb);
	struct vrdma_reth *reth = vrdma_ext(skb, VRDMA_OPF_RETH);
	u32 len = be32_to_cpu(reth->len);
	u64 va = be64_to_cpu(reth->va);
	u32 rkey = be32_to_cpu(reth->rkey);

	if (len > (1U << 31)) {
		vrdma_resp_fatal(qp, pkt->psn, VRDMA_NAK_INVALID_REQ,
				 IB_EVENT_QP_REQ_ERR);
		return;
	}
	if (len) {
		struct vrdma_mr *mr;
		int ret = vrdma_rkey_get(qp, rkey, va, len,
					 IB_ACCESS_REMOTE_READ, &mr);

		if (!ret)
			vrdma_mr_put(mr);
		if (ret) {
			vrdma_resp_fatal(qp, pkt->psn, VRDMA_NAK_REM_ACCESS,
					 IB_EVENT_QP_ACCESS_ERR);
			return;
		}
	}
	vrdma_read_start(qp, va, rkey, len, pkt->psn);
}

/**
 * vrdma_resp_advance() - a request was executed: expect the next one
 * @qp: the QP, engines owned
 * @npkts: PSNs it took (a READ: one per response)
 * @msg_end: it ended a message, which the MSN counts
 */
void vrdma_resp_advance(struct vrdma_qp *qp, u32 npkts, bool msg_end)
{
	qp->resp.psn = vrdma_psn_add(qp->resp.psn, npkts);
	if (msg_end)
		qp->resp.msn++;
}

/*
 * An 8-byte operation on the responder's memory (ATOMIC, ATOMIC WRITE)
 * failed with @ret: -EINVAL, aligned in the MR but not in memory (iova !=
 * address), is an invalid request; any other error a remote access error.
 */
static void vrdma_atomic_nak(struct vrdma_qp *qp, u32 psn, int ret)
{
	if (ret == -EINVAL)
		vrdma_resp_fatal(qp, psn, VRDMA_NAK_INVALID_REQ,
				 IB_EVENT_QP_REQ_ERR);
	else
		vrdma_resp_fatal(qp, psn, VRDMA_NAK_REM_ACCESS,
				 IB_EVENT_QP_ACCESS_ERR);
}

/*
 * An ATOMIC request: check it, execute it, remember the answer and send
 * it.  IBA 9.4.5: the address must be 8-byte aligned, else the request is
 * invalid; the rkey must grant REMOTE_ATOMIC on those 8 bytes, else it is a
 * remote access error.  A masked atomic (vrdma's opcodes) is checked the
 * same way.
 */
static void vrdma_exec_atomic(struct vrdma_qp *qp, struct sk_buff *skb)
{
	struct vrdma_pkt *pkt = vrdma_pkt(skb);
	struct vrdma_atmeth *atmeth = vrdma_ext(skb, VRDMA_OPF_ATMETH);
	struct vrdma_resp *resp = &qp->resp;
	u64 va = be64_to_cpu(atmeth->va);
	u32 rkey = be32_to_cpu(atmeth->rkey);
	bool cas = pkt->opcode == IB_OPCODE_RC_COMPARE_SWAP ||
		   pkt->opcode == VRDMA_OPCODE_RC_MASKED_COMPARE_SWAP;
	struct vrdma_atomic_op aop = vrdma_atomic_plain(cas,
			be64_to_cpu(atmeth->comp), be64_to_cpu(atmeth->swap_add));
	struct vrdma_rd_atomic *res;
	struct vrdma_mr *mr;
	u64 orig;
	int ret;

	if (pkt->mask & VRDMA_OPF_ATMMASK) {
		struct vrdma_atmmask *m = vrdma_ext(skb, VRDMA_OPF_ATMMASK);

		aop.swap_add_mask = be64_to_cpu(m->swap_add_mask);
		if (cas)
			aop.compare_mask = be64_to_cpu(m->comp_mask);
	}

	if (va & (sizeof(u64) - 1)) {
		vrdma_resp_fatal(qp, pkt->psn, VRDMA_NAK_INVALID_REQ,
				 IB_EVENT_QP_REQ_ERR);
		return;
	}
	ret = vrdma_rkey_get(qp, rkey, va, sizeof(u64), IB_ACCESS_REMOTE_ATOMIC,
			     &mr);
	if (!ret) {
		ret = vrdma_mr_atomic(mr, va, &aop, &orig);
		vrdma_mr_put(mr);
	}
	if (ret) {
		vrdma_atomic_nak(qp, pkt->psn, ret);
		return;
	}

	trace_vrdma_atomic(qp, pkt->opcode, va, &aop, orig);
	vrdma_resp_advance(qp, 1, true);
	res = vrdma_res_new(qp, VRDMA_RES_ATOMIC, pkt->psn);
	res->orig = orig;
	res->msn = resp->msn;
	vrdma_send_res_ack(qp, res);
}

/*
 * An ATOMIC WRITE: 8 bytes written at once at the RETH's address.  IBA
 * annex A19: the RETH's length and the payload must be those 8 bytes and
 * the address 8-byte aligned, else the request is invalid; the rkey must
 * grant REMOTE_WRITE on them (as rdma_rxe asks), else it is a remote
 * access error.  Executed once: a duplicate is answered from its resource.
 */
static void vrdma_exec_atomic_write(struct vrdma_qp *qp, struct sk_buff *skb)
{
	struct vrdma_pkt *pkt = vrdma_pkt(skb);
	struct vrdma_reth *reth = vrdma_ext(skb, VRDMA_OPF_RETH);
	u64 va = be64_to_cpu(reth->va);
	u32 rkey = be32_to_cpu(reth->rkey);
	struct vrdma_rd_atomic *res;
	u8 value[sizeof(u64)];
	struct vrdma_mr *mr;
	int ret;

	if (be32_to_cpu(reth->len) != sizeof(value) ||
	    pkt->paylen != sizeof(value) || pkt->pad ||
	    (va & (sizeof(u64) - 1)) ||
	    skb_copy_bits(skb, pkt->hdr_len, value, sizeof(value))) {
		vrdma_resp_fatal(qp, pkt->psn, VRDMA_NAK_INVALID_REQ,
				 IB_EVENT_QP_REQ_ERR);
		return;
	}
	ret = vrdma_rkey_get(qp, rkey, va, sizeof(value),
			     IB_ACCESS_REMOTE_WRITE, &mr);
	if (!ret) {
		ret = vrdma_mr_atomic_write(mr, va, value);
		vrdma_mr_put(mr);
	}
	if (ret) {
		vrdma_atomic_nak(qp, pkt->psn, ret);
		return;
	}
	vrdma_resp_advance(qp, 1, true);
	res = vrdma_res_new(qp, VRDMA_RES_ATOMIC_WRITE, pkt->psn);
	res->msn = qp->resp.msn;
	vrdma_send_res_ack(qp, res);
}

/*
 * A FLUSH: the FETH says what to make of the data placed so far -- global
 * visibility, persistence, or both (a type without either, or with
 * reserved bits, is invalid) -- and of which memory: the RETH's range, or
 * the whole MR its rkey names (selectivity level).  The rkey must grant the
 * FLUSH right of each type asked for (IB_ACCESS_FLUSH_GLOBAL,
 * IB_ACCESS_FLUSH_PERSISTENT) on that range, else it is a remote access
 * error; without them the QP does not support the request.  No MR of this device
 * is given the persistent right: its pages are ordinary memory.
 */
static void vrdma_exec_flush(struct vrdma_qp *qp, struct sk_buff *skb)
{
	struct vrdma_pkt *pkt = vrdma_pkt(skb);
	struct vrdma_feth *feth = vrdma_ext(skb, VRDMA_OPF_FETH);
	struct vrdma_reth *reth = vrdma_ext(skb, VRDMA_OPF_RETH);
	u32 bits = be32_to_cpu(feth->bits);
	u32 type = bits & VRDMA_FETH_PLT_MASK;
	u32 level = (bits & VRDMA_FETH_SEL_MASK) >> VRDMA_FETH_SEL_SHIFT;
	u32 rkey = be32_to_cpu(reth->rkey);
	u32 len = be32_to_cpu(reth->len);
	struct vrdma_rd_atomic *res;
	struct vrdma_mr *mr;
	int access = 0;

	if (!type || (type & ~(VRDMA_FLUSH_GLOBAL | VRDMA_FLUSH_PERSISTENT)) ||
	    level > VRDMA_FLUSH_MR || len > (1U << 31)) {
		vrdma_resp_fatal(qp, pkt->psn, VRDMA_NAK_INVALID_REQ,
				 IB_EVENT_QP_REQ_ERR);
		return;
	}
	if (type & VRDMA_FLUSH_GLOBAL)
		access |= VRDMA_ACCESS_FLUSH_GLOBAL;
	if (type & VRDMA_FLUSH_PERSISTENT)
		access |= VRDMA_ACCESS_FLUSH_PERSISTENT;
	/* The QP must grant them too, as in rdma_rxe. */
	if ((qp->attr.qp_access_flags & access) != access) {
		vrdma_resp_fatal(qp, pkt->psn, VRDMA_NAK_INVALID_REQ,
				 IB_EVENT_QP_REQ_ERR);
		return;
	}
	/* The whole MR: its rights, no range; a window is not an MR. */
	if (level == VRDMA_FLUSH_MR)
		len = 0;
	if ((level == VRDMA_FLUSH_MR && VRDMA_KEY_IS_MW(rkey)) ||
	    vrdma_rkey_get(qp, rkey, be64_to_cpu(reth->va), len, access,
			   &mr)) {
		vrdma_resp_fatal(qp, pkt->psn, VRDMA_NAK_REM_ACCESS,
				 IB_EVENT_QP_ACCESS_ERR);
		return;
	}
	vrdma_mr_put(mr);
	/*
	 * The requests before it were placed by CPU stores into the pinned
	 * pages, possibly on another CPU; whoever is told of the FLUSH must
	 * see them.
	 */
	smp_mb();
	vrdma_resp_advance(qp, 1, true);
	res = vrdma_res_new(qp, VRDMA_RES_FLUSH, pkt->psn);
	res->msn = qp->resp.msn;
	vrdma_send_res_ack(qp, res);
}

/*
 * A duplicate ATOMIC WRITE or FLUSH: answered again from its resource,
 * never executed again; one no longer remembered is dropped, as an ATOMIC.
 */
static void vrdma_duplicate_placement(struct vrdma_qp *qp,
				      struct sk_buff *skb)
{
	struct vrdma_pkt *pkt = vrdma_pkt(skb);
	struct vrdma_rd_atomic *res;

	res = vrdma_res_find(qp, (pkt->mask & VRDMA_OPF_FLUSH) ?
			     VRDMA_RES_FLUSH : VRDMA_RES_ATOMIC_WRITE,
			     pkt->psn);
	if (!res) {
		vrdma_count(qp->vdev, VRDMA_CNT_ATOMIC_REPLAY_MISS);
		return;
	}
	vrdma_count(qp->vdev, VRDMA_CNT_ATOMIC_REPLAYED);
	vrdma_send_res_ack(qp, res);
}

/*
 * A duplicate ATOMIC: its answer was lost.  Answer it again from the
 * replay cache; executing it again would apply it twice.  One no longer
 * there is older than anything a requester keeping to max_rd_atomic can
 * still wait for: dropped.
 */
static void vrdma_duplicate_atomic(struct vrdma_qp *qp, struct sk_buff *skb)
{
	struct vrdma_rd_atomic *res;

	res = vrdma_res_find(qp, VRDMA_RES_ATOMIC, vrdma_pkt(skb)->psn);
	if (!res) {
		vrdma_count(qp->vdev, VRDMA_CNT_ATOMIC_REPLAY_MISS);
		return;
	}
	vrdma_count(qp->vdev, VRDMA_CNT_ATOMIC_REPLAYED);
	vrdma_send_res_ack(qp, res);
}

/* The opcode of the next read response packet. */
static u8 vrdma_read_resp_opcode(bool first, bool last)
{
	if (first)
		return last ? IB_OPCODE_RC_RDMA_READ_RESPONSE_ONLY :
			      IB_OPCODE_RC_RDMA_READ_RESPONSE_FIRST;
	return last ? IB_OPCODE_RC_RDMA_READ_RESPONSE_LAST :
		      IB_OPCODE_RC_RDMA_READ_RESPONSE_MIDDLE;
}

/**
 * vrdma_responder_reads() - send the ACK owed and the next read responses
 * @qp: the QP, engines owned (vrdma_qp_lock(), or the QP's tasklet:
 *	vrdma_qp_bh())
 * @burst: at most this many read response packets
 *
 * The task calls this after each batch of received packets: the ACK owed
 * for them (vrdma_ack_later()) leaves then, before any response that
 * follows it in PSN order.  The task answers a large READ VRDMA_READ_BURST
 * packets per run, so one QP cannot monopolise a CPU.  The MR is looked up
 * and checked again for every packet: it may be deregistered meanwhile.
 *
 * Return: true if response packets remain to be sent.
 */
bool vrdma_responder_reads(struct vrdma_qp *qp, int burst)
{
	struct vrdma_resp *resp = &qp->resp;

	vrdma_qp_assert_owned(qp);

	vrdma_flush_ack(qp);
	while (resp->read_active && burst--) {
		u32 paylen = min(resp->read_resid, qp->mtu);
		bool last = paylen == resp->read_resid;
		struct vrdma_mr *mr = NULL;
		struct sk_buff *skb;
		int ret = 0;
		u8 opcode;

		if (qp->state != IB_QPS_RTS && qp->state != IB_QPS_RTR &&
		    qp->state != IB_QPS_SQD) {
			resp->read_active = false;
			break;
		}
		opcode = vrdma_read_resp_opcode(resp->read_first, last);
		skb = vrdma_pkt_alloc(qp->vdev, &qp->av,
				      vrdma_resp_opcode(qp, opcode), paylen);
		if (!skb)
			return true;
		if (paylen) {
			ret = vrdma_rkey_get(qp, resp->read_rkey,
					     resp->read_va, paylen,
					     IB_ACCESS_REMOTE_READ, &mr);
			if (!ret) {
				ret = vrdma_mr_copy(mr, resp->read_va,
						    vrdma_payload(skb), paylen,
						    false);
				vrdma_mr_put(mr);
			}
		}
		if (ret) {
			kfree_skb(skb);
			resp->read_active = false;
			vrdma_resp_fatal(qp, resp->read_psn,
					 VRDMA_NAK_REM_ACCESS,
					 IB_EVENT_QP_ACCESS_ERR);
			break;
		}
		if (vrdma_pkt(skb)->mask & VRDMA_OPF_AETH) {
			struct vrdma_aeth *aeth = vrdma_ext(skb,
							    VRDMA_OPF_AETH);

			aeth->smsn = vrdma_aeth_smsn(VRDMA_SYN_ACK |
						     VRDMA_AETH_NO_CREDIT,
						     resp->msn);
		}
		vrdma_bth_init(skb, qp->attr.dest_qp_num, resp->read_psn,
			       false, false);
		vrdma_pkt_send(qp->vdev, &qp->av, qp->txq, skb);
		if (in_serving_softirq())
			vrdma_count(qp->vdev, VRDMA_CNT_SOFTIRQ_READ_RESP);

		resp->read_first = false;
		resp->read_va += paylen;
		resp->read_resid -= paylen;
		resp->read_psn = vrdma_psn_add(resp->read_psn, 1);
		if (last)
			resp->read_active = false;
	}
	return resp->read_active;
}

/* Does a READ request with PSN @psn come after the READ being answered? */
static bool vrdma_read_after_current(struct vrdma_qp *qp, u32 psn)
{
	struct vrdma_resp *resp = &qp->resp;
	u32 left;

	if (!resp->read_active)
		return false;
	left = max(1U, DIV_ROUND_UP(resp->read_resid, qp->mtu));
	return vrdma_psn_diff(psn, vrdma_psn_add(resp->read_psn, left)) >= 0;
}

/**
 * vrdma_responder_waits() - whether a request must wait for the READ being
 *	answered
 * @qp: the QP, engines owned
 * @skb: a request packet for it
 *
 * Requests are executed in order, and the responses of a READ leave before
 * the answer to anything after it: a NAK or ACK overtaking them would tell
 * the requester they were lost.  So while a READ is being answered, in
 * bursts (vrdma_responder_reads()), the requests that arrive wait in the
 * QP's queue; a READ of 2 GiB is answered without holding the QP for all
 * of it.  Only a duplicate READ asking again for that READ (or one before
 * it) does not wait: it replaces it.
 */
bool vrdma_responder_waits(struct vrdma_qp *qp, struct sk_buff *skb)
{
	struct vrdma_pkt *pkt = vrdma_pkt(skb);

	vrdma_qp_assert_owned(qp);

	if (!qp->resp.read_active)
		return false;
	return pkt->opcode != IB_OPCODE_RC_RDMA_READ_REQUEST ||
	       vrdma_psn_diff(pkt->psn, qp->resp.psn) >= 0 ||
	       vrdma_read_after_current(qp, pkt->psn);
}

/*
 * A duplicate READ: the requester lost responses and asks again, from the
 * first one missing (IBA 9.7.5.1.4).  It is answered from the responder
 * resource of the original READ: only PSNs of that READ, only a part of its
 * range, only with its rkey, which is checked again for every response as
 * for the original.  Anything else -- a READ no resource remembers, another
 * key, address or length, a forgery -- executes nothing and is dropped
 * (counted).  It replaces the READ being answered, if any: the requester
 * wants these responses, not the rest of those.
 */
static void vrdma_duplicate_read(struct vrdma_qp *qp, struct sk_buff *skb)
{
	struct vrdma_pkt *pkt = vrdma_pkt(skb);
	struct vrdma_reth *reth = vrdma_ext(skb, VRDMA_OPF_RETH);
	u64 va = be64_to_cpu(reth->va);
	u32 len = be32_to_cpu(reth->len);
	struct vrdma_rd_atomic *res;
	u32 last;

	res = vrdma_res_find_read(qp, pkt->psn);
	last = vrdma_psn_add(pkt->psn, max(1U, DIV_ROUND_UP(len, qp->mtu)) - 1);
	if (!res || !(qp->attr.qp_access_flags & IB_ACCESS_REMOTE_READ) ||
	    be32_to_cpu(reth->rkey) != res->rkey || len > res->len ||
	    va < res->va || va - res->va > res->len - len ||
	    vrdma_psn_diff(last, res->last_psn) > 0) {
		vrdma_count(qp->vdev, VRDMA_CNT_READ_REPLAY_MISS);
		return;
	}
	vrdma_read_start(qp, va, res->rkey, len, pkt->psn);
}

/*
 * A request with a PSN before the expected one was executed already: its
 * ACK was lost or is late, or the requester went back further than needed.
 * SENDs and WRITEs are acknowledged again and never executed twice (they
 * consume no receive WQE); a READ is answered again, from the memory as it
 * is now, which is what the requester asks for; an ATOMIC, ATOMIC WRITE or
 * FLUSH is answered from the replay cache.
 */
static void vrdma_duplicate(struct vrdma_qp *qp, struct sk_buff *skb)
{
	struct vrdma_pkt *pkt = vrdma_pkt(skb);

	vrdma_count(qp->vdev, VRDMA_CNT_DUP_REQ);
	if (pkt->mask & VRDMA_OPF_ATOMIC) {
		vrdma_duplicate_atomic(qp, skb);
		return;
	}
	if (pkt->mask & (VRDMA_OPF_ATOMIC_WRITE | VRDMA_OPF_FLUSH)) {
		vrdma_duplicate_placement(qp, skb);
		return;
	}
	if (pkt->mask & VRDMA_OPF_READ) {
		vrdma_duplicate_read(qp, skb);
		return;
	}
	if (!pkt->ack_req && !(pkt->mask & VRDMA_OPF_LAST))
		return;
	/*
	 * The ACK names this request's PSN, not the latest one executed: a
	 * later READ may be answered again only after it, and an ACK beyond
	 * it would tell the requester that its responses were lost.
	 */
	vrdma_ack_later(qp, pkt->psn);
}

/*
 * UC: check a request's place in the packet stream.  A FIRST or ONLY packet
 * always starts a new message, whatever PSN it has: an unfinished message
 * before it is dropped.  Any other packet must have the next PSN and
 * continue the message in progress, else that message is dropped.
 * Returns whether to go on with the packet.
 */
static bool vrdma_uc_in_sequence(struct vrdma_qp *qp, struct vrdma_pkt *pkt)
{
	struct vrdma_resp *resp = &qp->resp;
	u32 prev = vrdma_opcode[resp->opcode].mask;
	bool in_msg = (prev & (VRDMA_OPF_FIRST | VRDMA_OPF_MIDDLE)) &&
		      !(prev & VRDMA_OPF_LAST);

	/* While dropping, the PSN is not followed. */
	if (pkt->psn != resp->psn && !resp->drop)
		vrdma_count(qp->vdev, VRDMA_CNT_SEQ_ERR);
	if (pkt->mask & VRDMA_OPF_FIRST) {
		if (in_msg && !resp->drop)
			vrdma_uc_drop(qp);
		resp->drop = false;
		resp->psn = pkt->psn;
		resp->opcode = VRDMA_NO_OPCODE;
		return true;
	}
	if (resp->drop)
		return false;
	if (pkt->psn != resp->psn ||
	    !vrdma_opcode_in_sequence(resp->opcode, pkt->mask)) {
		vrdma_uc_drop(qp);
		return false;
	}
	return true;
}

/*
 * A UC request: as RC, without acknowledgements, RNR and retries; see the
 * comment at the top.
 */
static void vrdma_uc_responder(struct vrdma_qp *qp, struct sk_buff *skb)
{
	struct vrdma_pkt *pkt = vrdma_pkt(skb);
	struct vrdma_resp *resp = &qp->resp;

	if (!vrdma_qp_receives(qp))
		goto out;
	if (!(pkt->mask & VRDMA_OPF_UC) || !(pkt->mask & VRDMA_OPF_REQ)) {
		/* Another transport's packet: not for this QP. */
		vrdma_count(qp->vdev, VRDMA_CNT_MALFORMED);
		goto out;
	}
	if (!vrdma_uc_in_sequence(qp, pkt))
		goto out;
	if (!vrdma_length_ok(qp, pkt) ||
	    ((pkt->mask & VRDMA_OPF_WRITE) &&
	     !(qp->attr.qp_access_flags & IB_ACCESS_REMOTE_WRITE))) {
		vrdma_uc_drop(qp);
		goto out;
	}
	if (((pkt->mask & VRDMA_OPF_SEND) && (pkt->mask & VRDMA_OPF_FIRST)) ||
	    ((pkt->mask & VRDMA_OPF_WRITE) && (pkt->mask & VRDMA_OPF_IMMDT))) {
		if (!qp->rwqe.valid && !vrdma_take_rwqe(qp)) {
			if (qp->state != IB_QPS_ERR) {
				vrdma_count(qp->vdev, VRDMA_CNT_NO_RECV_WQE);
				vrdma_uc_drop(qp);
			}
			goto out;
		}
	}

	if (pkt->mask & VRDMA_OPF_SEND)
		vrdma_exec_send(qp, skb);
	else
		vrdma_exec_write(qp, skb);
	if (qp->state == IB_QPS_ERR || resp->drop)
		goto out;
	resp->opcode = pkt->opcode;
	vrdma_resp_advance(qp, 1, false);	/* UC counts no MSN */
out:
	consume_skb(skb);
}

/*
 * Is the request the one expected?  A duplicate is answered as the IBA
 * says (vrdma_duplicate()); a gap is NAKed once, and every request after
 * it dropped until the missing one is resent.
 */
static bool vrdma_rc_expected(struct vrdma_qp *qp, struct sk_buff *skb)
{
	struct vrdma_pkt *pkt = vrdma_pkt(skb);
	struct vrdma_resp *resp = &qp->resp;
	int diff = vrdma_psn_diff(pkt->psn, resp->psn);

	if (diff < 0) {
		vrdma_duplicate(qp, skb);
		return false;
	}
	if (diff > 0) {
		/* Packets were lost (or overtaken). */
		vrdma_count(qp->vdev, VRDMA_CNT_SEQ_ERR);
		if (!resp->nak_sent) {
			resp->nak_sent = true;
			vrdma_send_ack(qp, resp->psn,
				       VRDMA_SYN_NAK | VRDMA_NAK_PSN_SEQ_ERR);
		}
		return false;
	}
	resp->nak_sent = false;
	return true;
}

/*
 * May the expected request be executed?  Its opcode must follow the
 * previous one, its length fit the path MTU, and the QP must grant what it
 * asks; else the QP fails with the NAK the IBA names.
 */
static bool vrdma_rc_allowed(struct vrdma_qp *qp, struct vrdma_pkt *pkt)
{
	int access = qp->attr.qp_access_flags;

	if (!vrdma_opcode_in_sequence(qp->resp.opcode, pkt->mask) ||
	    ((pkt->mask & (VRDMA_OPF_SEND | VRDMA_OPF_WRITE)) &&
	     !vrdma_length_ok(qp, pkt))) {
		vrdma_resp_fatal(qp, pkt->psn, VRDMA_NAK_INVALID_REQ,
				 IB_EVENT_QP_REQ_ERR);
		return false;
	}
	if (((pkt->mask & (VRDMA_OPF_WRITE | VRDMA_OPF_ATOMIC_WRITE)) &&
	     !(access & IB_ACCESS_REMOTE_WRITE)) ||
	    ((pkt->mask & VRDMA_OPF_READ) &&
	     !(access & IB_ACCESS_REMOTE_READ))) {
		vrdma_resp_fatal(qp, pkt->psn, VRDMA_NAK_REM_ACCESS,
				 IB_EVENT_QP_ACCESS_ERR);
		return false;
	}
	/*
	 * An ATOMIC on a QP without REMOTE_ATOMIC is an operation the QP does
	 * not support (so is a FLUSH on one without the FLUSH rights of its
	 * placement type: vrdma_exec_flush()), and a READ, ATOMIC, ATOMIC
	 * WRITE or FLUSH without a single responder resource one it cannot
	 * take: all Invalid Request (IBA class C).
	 */
	if (((pkt->mask & VRDMA_OPF_ATOMIC) &&
	     !(access & IB_ACCESS_REMOTE_ATOMIC)) ||
	    ((pkt->mask & (VRDMA_OPF_READ | VRDMA_OPF_ATOMIC |
			   VRDMA_OPF_ATOMIC_WRITE | VRDMA_OPF_FLUSH)) &&
	     !qp->resp.res_num)) {
		vrdma_resp_fatal(qp, pkt->psn, VRDMA_NAK_INVALID_REQ,
				 IB_EVENT_QP_REQ_ERR);
		return false;
	}
	return true;
}

/*
 * Messages that consume a receive WQE need one before anything is done:
 * without, the requester is told to retry later (RNR).  A broken ring or
 * WQE has put this QP in error: the request fails.  False if the request
 * cannot go on.
 */
static bool vrdma_rc_have_rwqe(struct vrdma_qp *qp, struct sk_buff *skb)
{
	struct vrdma_pkt *pkt = vrdma_pkt(skb);

	if (!((pkt->mask & VRDMA_OPF_SEND) && (pkt->mask & VRDMA_OPF_FIRST)) &&
	    !((pkt->mask & VRDMA_OPF_WRITE) && (pkt->mask & VRDMA_OPF_IMMDT)))
		return true;
	if (qp->rwqe.valid)
		return true;
	if (vrdma_srq_is_tm(qp->srq) && (pkt->mask & VRDMA_OPF_SEND) ?
	    vrdma_tm_take(qp, skb) : vrdma_take_rwqe(qp))
		return true;
	if (qp->state == IB_QPS_ERR) {
		vrdma_send_ack(qp, pkt->psn,
			       VRDMA_SYN_NAK | VRDMA_NAK_REM_OP_ERR);
	} else {
		/* What follows is dropped, NAKed no more. */
		qp->resp.nak_sent = true;
		vrdma_send_ack(qp, pkt->psn,
			       VRDMA_SYN_RNR_NAK | qp->attr.min_rnr_timer);
	}
	return false;
}

/*
 * The request was executed: the responder expects the next one, a READ
 * is remembered for its duplicates, and the request is acknowledged if it
 * asked to be (an ATOMIC was answered already).  @inv_failed: a SEND with
 * invalidate was placed but its rkey could not be invalidated.
 */
static void vrdma_rc_executed(struct vrdma_qp *qp, struct sk_buff *skb,
			      bool inv_failed)
{
	struct vrdma_pkt *pkt = vrdma_pkt(skb);

	qp->resp.opcode = pkt->opcode;
	if (pkt->mask & (VRDMA_OPF_ATOMIC | VRDMA_OPF_ATOMIC_WRITE |
			 VRDMA_OPF_FLUSH))
		return;	/* answered, PSN and MSN moved on */
	if (pkt->mask & VRDMA_OPF_READ) {
		struct vrdma_reth *reth = vrdma_ext(skb, VRDMA_OPF_RETH);
		u32 npkts = max(1U, DIV_ROUND_UP(be32_to_cpu(reth->len),
						 qp->mtu));
		struct vrdma_rd_atomic *res;

		/* What a duplicate of it may ask for again. */
		res = vrdma_res_new(qp, VRDMA_RES_READ, pkt->psn);
		res->va = be64_to_cpu(reth->va);
		res->rkey = be32_to_cpu(reth->rkey);
		res->len = be32_to_cpu(reth->len);
		res->last_psn = vrdma_psn_add(pkt->psn, npkts - 1);
		vrdma_resp_advance(qp, npkts, true);
		return;
	}
	vrdma_resp_advance(qp, 1, pkt->mask & VRDMA_OPF_LAST);
	if (inv_failed) {
		/* The SEND is done: ACK it at once, the QP goes to error. */
		vrdma_send_ack(qp, pkt->psn,
			       VRDMA_SYN_ACK | VRDMA_AETH_NO_CREDIT);
		vrdma_qp_error(qp, 0);
	} else if (pkt->ack_req) {
		vrdma_ack_later(qp, pkt->psn);
	}
}

/*
 * An XRC target QP takes the SRQ a request names (vrdma_xrc_bind()).  The
 * expected request must get it, or it is an invalid request (class C).  A
 * request beyond it is NAKed for the gap as any other, whatever it names,
 * and a duplicate is answered as any other: only a READ, answered again
 * from memory, needs the named SRQ's PD, and one that cannot take that
 * SRQ now (a message or a READ to another is in progress) is dropped and
 * counted.  So the probe of a requester whose ACK was lost is answered
 * even while a later message to another SRQ is being received.  False if
 * the request was handled here.
 */
static bool vrdma_xrc_request(struct vrdma_qp *qp, struct sk_buff *skb)
{
	struct vrdma_pkt *pkt = vrdma_pkt(skb);
	int diff = vrdma_psn_diff(pkt->psn, qp->resp.psn);

	if (diff > 0 || vrdma_xrc_bind(qp, skb))
		return true;
	if (!diff) {
		vrdma_resp_fatal(qp, pkt->psn, VRDMA_NAK_INVALID_REQ,
				 IB_EVENT_QP_REQ_ERR);
		return false;
	}
	if (pkt->mask & VRDMA_OPF_READ) {
		vrdma_count(qp->vdev, VRDMA_CNT_DUP_REQ);
		vrdma_count(qp->vdev, VRDMA_CNT_READ_REPLAY_MISS);
		return false;
	}
	return true;
}

/**
 * vrdma_responder() - handle one request packet
 * @qp: the QP, engines owned (vrdma_qp_lock(), or the QP's tasklet:
 *	vrdma_qp_bh())
 * @skb: the request (consumed)
 *
 * An RC request is checked in the order of IBA 9.7.5 (PSN, opcode
 * sequence and length, access rights, a receive WQE) before anything is
 * executed; an XRC request first takes the SRQ its XRCETH names, with its
 * PD and CQ (vrdma_xrc_bind()).  UC and UD have responders of their own,
 * and so have raw packet QPs, which receive frames, not packets (raw.c).
 */
void vrdma_responder(struct vrdma_qp *qp, struct sk_buff *skb)
{
	struct vrdma_pkt *pkt = vrdma_pkt(skb);
	bool inv_failed = false;

	vrdma_qp_assert_owned(qp);

	switch (qp->ibqp.qp_type) {
	case IB_QPT_UC:
		vrdma_uc_responder(qp, skb);
		return;
	case IB_QPT_UD:
	case IB_QPT_GSI:
		vrdma_ud_responder(qp, skb);
		return;
	case IB_QPT_RAW_PACKET:
		vrdma_raw_responder(qp, skb);
		return;
	default:
		break;
	}

	if ((qp->state != IB_QPS_RTR && qp->state != IB_QPS_RTS &&
	     qp->state != IB_QPS_SQD) || !(pkt->mask & VRDMA_OPF_RC) ||
	    !(pkt->mask & VRDMA_OPF_REQ)) {
		kfree_skb(skb);
		return;
	}

	trace_vrdma_resp_pkt(qp, skb, qp->resp.psn);
	if (qp->ibqp.qp_type == IB_QPT_XRC_TGT && !vrdma_xrc_request(qp, skb))
		goto out;
	if (!vrdma_rc_expected(qp, skb) || !vrdma_rc_allowed(qp, pkt) ||
	    !vrdma_rc_have_rwqe(qp, skb))
		goto out;

	if (pkt->mask & VRDMA_OPF_SEND)
		inv_failed = !vrdma_exec_send(qp, skb);
	else if (pkt->mask & VRDMA_OPF_WRITE)
		vrdma_exec_write(qp, skb);
	else if (pkt->mask & VRDMA_OPF_ATOMIC)
		vrdma_exec_atomic(qp, skb);
	else if (pkt->mask & VRDMA_OPF_ATOMIC_WRITE)
		vrdma_exec_atomic_write(qp, skb);
	else if (pkt->mask & VRDMA_OPF_FLUSH)
		vrdma_exec_flush(qp, skb);
	else
		vrdma_exec_read(qp, skb);
	if (qp->state != IB_QPS_ERR)
		vrdma_rc_executed(qp, skb, inv_failed);
out:
	consume_skb(skb);
}
