// SPDX-License-Identifier: GPL-2.0
/*
 * The loopback path: an RC message between two QPs of this host, with no
 * packet at all.
 *
 * When the destination of an RC QP is a QP of this host (its address is
 * one of this namespace's, as for vrdma_pkt_send()'s local delivery), the
 * requester hands each new SEND, RDMA WRITE, RDMA READ or ATOMIC to
 * vrdma_loopback_exec() before it builds any packet.  That takes the
 * destination QP's mutex (a trylock: the two QPs' mutexes are taken in
 * either order by their two doorbells), runs the responder's checks on the
 * whole message at once, and copies it in one pass, page by page
 * (vrdma_mr_map()), from the source SGL (or the inline data) straight into
 * the destination MR or receive WQE -- or, for a READ, from the responder's
 * MR into the requester's SGL.  Both QPs move on as if the packets had been
 * sent and acknowledged: the requester's PSN and oldest unacknowledged PSN
 * advance by the number of packets the message would have taken, the
 * responder's expected PSN and MSN with them, so that later messages may go
 * as packets (or come back here) on the same QPs.  The receive CQE (with
 * immediate data or the invalidated rkey, byte_len) and the send CQE are
 * written before the doorbell returns.
 *
 * The fast path only ever does what the packet path would do without
 * error.  Whenever the packet path would answer with an RNR or error NAK,
 * or drop the request -- destination QP not ready, a PSN or MTU mismatch, a
 * READ being answered, no receive WQE, a receive buffer too small, a bad
 * rkey, bounds, access rights, a missing responder resource, a misaligned
 * atomic -- it changes nothing (the receive WQE it may have taken stays the
 * responder's, as a first packet would have left it) and returns 0: the
 * requester sends packets, and the responder finds the error as always.
 * So every error has exactly the packet path's outcome: the same NAK, the
 * same error CQEs, the same QP states and asynchronous events, the same
 * RNR retries and their counters.  What can fail only after data has moved
 * (an MR that went away meanwhile, a DMA address that is not kernel memory,
 * a receive CQ overflow, an rkey a SEND with invalidate may not invalidate)
 * is finished here the way the packet path finishes it.
 *
 * ATOMIC WRITE and FLUSH always go as packets (delivered inside the host
 * all the same): they are single packets whose answer carries nothing,
 * and their replay rules live in the responder resources.
 *
 * Self-connected QPs, QPs of other namespaces and UC/UD use packets; so do
 * all messages when the module parameter local_direct is 0, which is how
 * the tests prove the two paths equivalent.  Counters: such messages are no
 * packets and appear in none of the packet counters (sent_pkts, rcvd_pkts,
 * loopback_pkts, acks_sent...); the requesting device counts them in
 * loopback_msgs and their payload in loopback_bytes.  The tracepoint
 * vrdma_loopback_msg shows each one.
 */
#include <linux/moduleparam.h>

#include "vrdma.h"
#include "pkt.h"
#include "trace.h"

static bool local_direct = true;
module_param(local_direct, bool, 0644);
MODULE_PARM_DESC(local_direct,
		 "Move RC messages between QPs of this host directly from MR to MR, without packets (default: 1)");

/*
 * One side of a copy: the bytes of an SGL (each SGE's key looked up and
 * checked when the copy reaches it), of one checked MR range, or of a
 * kernel buffer (inline data).
 */
struct vrdma_span {
	struct vrdma_dev *vdev;
	struct vrdma_pd *pd;
	const struct vrdma_sge *sge;	/* NULL: no more pieces after this */
	u32 num_sge;
	u32 idx;			/* next SGE */
	int access;
	const u8 *buf;			/* a kernel buffer, not an MR */
	struct vrdma_mr *mr;		/* of the current piece, referenced */
	u64 iova;			/* next byte of it */
	u32 left;			/* bytes left in it */
};

static void vrdma_span_sgl(struct vrdma_span *sp, struct vrdma_dev *vdev,
			   struct vrdma_pd *pd, const struct vrdma_sge *sge,
			   u32 num_sge, int access)
{
	*sp = (struct vrdma_span){ .vdev = vdev, .pd = pd, .sge = sge,
				   .num_sge = num_sge, .access = access };
}

/* The bytes of a send WQE: its inline data or its gather list. */
static void vrdma_span_swqe(struct vrdma_span *sp, struct vrdma_qp *qp,
			    struct vrdma_send_wqe *wqe, int access)
{
	if (wqe->flags & VRDMA_SEND_INLINE)
		*sp = (struct vrdma_span){ .buf = (const u8 *)wqe->sge,
					   .left = wqe->inline_len };
	else
		vrdma_span_sgl(sp, qp->vdev, qp->pd, wqe->sge, wqe->num_sge,
			       access);
}

/* One MR range, already checked; the span takes over the reference. */
static void vrdma_span_mr(struct vrdma_span *sp, struct vrdma_mr *mr,
			  u64 iova, u32 length)
{
	*sp = (struct vrdma_span){ .mr = mr, .iova = iova, .left = length };
}

static void vrdma_span_fini(struct vrdma_span *sp)
{
	if (sp->mr)
		vrdma_mr_put(sp->mr);
	sp->mr = NULL;
}

/*
 * Make sure the current piece has bytes left, moving to the next SGE if
 * not; its key is checked as the packet path checks it (vrdma_sgl_walk()).
 * Returns 0, -EINVAL at the end of the list, or the key check's error.
 */
static int vrdma_span_next(struct vrdma_span *sp)
{
	while (!sp->left) {
		const struct vrdma_sge *sge;
		int ret;

		if (!sp->sge || sp->idx == sp->num_sge)
			return -EINVAL;
		sge = &sp->sge[sp->idx++];
		if (!sge->length)
			continue;
		vrdma_span_fini(sp);
		sp->mr = vrdma_mr_get(sp->vdev, sge->lkey);
		if (!sp->mr)
			return -EACCES;
		ret = vrdma_mr_check(sp->mr, sp->pd, sge->lkey, sge->addr,
				     sge->length, sp->access);
		trace_vrdma_key_check(sp->mr, sge->lkey, sge->addr,
				      sge->length, sp->access, ret);
		if (ret)
			return ret;
		sp->iova = sge->addr;
		sp->left = sge->length;
	}
	return 0;
}

static void vrdma_span_skip(struct vrdma_span *sp, u32 n)
{
	sp->left -= n;
	if (sp->buf)
		sp->buf += n;
	else
		sp->iova += n;
}

/* Would @length bytes of @sp pass their key checks?  Copies nothing. */
static int vrdma_span_check(struct vrdma_span sp, u32 length)
{
	int ret = 0;

	while (length) {
		u32 n;

		ret = vrdma_span_next(&sp);
		if (ret)
			break;
		n = min(length, sp.left);
		vrdma_span_skip(&sp, n);
		length -= n;
	}
	vrdma_span_fini(&sp);
	return ret;
}

/* Which side of a copy failed. */
enum {
	VRDMA_COPY_OK,
	VRDMA_COPY_SRC_ERR,
	VRDMA_COPY_DST_ERR,
};

/*
 * Copy @length bytes from @src to @dst: one vrdma_copy() per piece that lies in
 * one page of each side, through their kernel mappings.
 */
static int vrdma_span_copy(struct vrdma_span *dst, struct vrdma_span *src,
			   u32 length)
{
	while (length) {
		void *d, *s;
		u32 n, dn, sn;

		if (vrdma_span_next(src))
			return VRDMA_COPY_SRC_ERR;
		if (vrdma_span_next(dst))
			return VRDMA_COPY_DST_ERR;
		n = min3(length, src->left, dst->left);
		d = vrdma_mr_map(dst->mr, dst->iova, n, &dn);
		if (!d)
			return VRDMA_COPY_DST_ERR;
		if (src->buf) {
			s = (void *)src->buf;
			sn = n;
		} else {
			s = vrdma_mr_map(src->mr, src->iova, n, &sn);
			if (!s) {
				vrdma_mr_unmap(dst->mr, d);
				return VRDMA_COPY_SRC_ERR;
			}
		}
		n = min(dn, sn);
		vrdma_copy(d, s, n);
		if (!src->buf)
			vrdma_mr_unmap(src->mr, s);
		vrdma_mr_unmap(dst->mr, d);
		vrdma_span_skip(src, n);
		vrdma_span_skip(dst, n);
		length -= n;
	}
	return VRDMA_COPY_OK;
}

/* Request packets (PSNs) the message would have taken; a READ its responses. */
static u32 vrdma_loopback_npsn(struct vrdma_qp *qp, struct vrdma_swqe *swqe)
{
	if (vrdma_wqe_atomic(swqe->wqe))
		return 1;
	return max(1U, DIV_ROUND_UP(swqe->length, qp->mtu));
}

/*
 * The message's requests went out: the requester's state moves on as after
 * vrdma_send_packet() of its last packet.
 */
static void vrdma_loopback_sent(struct vrdma_qp *qp, struct vrdma_swqe *swqe,
				u32 dqpn, u8 status)
{
	u32 npsn = vrdma_loopback_npsn(qp, swqe);

	trace_vrdma_loopback_msg(qp, swqe, dqpn, qp->req.psn, npsn, status);
	vrdma_count(qp->vdev, VRDMA_CNT_LOOPBACK_MSGS);
	vrdma_count_add(qp->vdev, VRDMA_CNT_LOOPBACK_BYTES, swqe->length);
	swqe->first_psn = qp->req.psn;
	swqe->last_psn = vrdma_psn_add(qp->req.psn, npsn - 1);
	swqe->state = VRDMA_SWQE_SENT;
	qp->req.psn = vrdma_psn_add(qp->req.psn, npsn);
	vrdma_req_psn_sent(qp);
	qp->req.cur++;
}

/*
 * The responder executed the message: its expected PSN and MSN move on as
 * after the message's last packet; @opcode is the one it remembers for the
 * opcode sequence check (a whole message: an ONLY, a READ or an ATOMIC).
 * The message's PSNs are those vrdma_loopback_sent() gave it.
 */
static void vrdma_loopback_executed(struct vrdma_qp *dqp,
				    struct vrdma_swqe *swqe, u8 opcode)
{
	u32 npsn = vrdma_psn_diff(swqe->last_psn, swqe->first_psn) + 1;

	vrdma_resp_advance(dqp, npsn, true);
	dqp->resp.opcode = opcode;
	dqp->resp.nak_sent = false;
}

/*
 * ... and acknowledged it (or answered it): the WQE completes with
 * @status, IB_WC_SUCCESS, or a local error found placing a READ response
 * or an atomic's result, which puts the QP in error as in the completer.
 */
static void vrdma_loopback_acked(struct vrdma_qp *qp, struct vrdma_swqe *swqe,
				 u8 status)
{
	qp->req.una = qp->req.psn;
	qp->req.rnr_retry = 0;
	vrdma_req_progress(qp);
	vrdma_complete_swqe(qp, swqe, status);
}

/*
 * The responder NAKed the message with a fatal error and went to error
 * (@event, 0 for none, or already there); the requester's WQE fails with
 * @status and its QP goes to error too.
 */
static void vrdma_loopback_nak(struct vrdma_qp *qp, struct vrdma_qp *dqp,
			       struct vrdma_swqe *swqe, enum ib_event_type event,
			    u8 status)
{
	vrdma_count(dqp->vdev, VRDMA_CNT_NAK_SENT);
	vrdma_count(qp->vdev, VRDMA_CNT_NAK_RCVD);
	vrdma_qp_error(dqp, event);
	vrdma_loopback_sent(qp, swqe, dqp->ibqp.qp_num, status);
	vrdma_complete_swqe(qp, swqe, status);
}

/*
 * After the message was executed the responder found itself in error (a
 * receive CQ overflow): as in the packet path, it sends no ACK; the
 * requester's retransmission timer finds out, and its retries run out.
 */
static void vrdma_loopback_unanswered(struct vrdma_qp *qp)
{
	if (!timer_pending(&qp->retrans_timer))
		vrdma_retrans_arm(qp);
}

/*
 * Take the receive WQE a SEND or an RDMA WRITE with immediate consumes.
 * Returns 1 if there is one, 0 if there is none (the packet path answers
 * with an RNR NAK), -EIO if the ring or the WQE was bad and the responder
 * went to error (the packet path NAKs with a remote operation error).
 */
static int vrdma_loopback_rwqe(struct vrdma_qp *dqp)
{
	if (dqp->rwqe.valid)
		return dqp->rwqe.offset ? 0 : 1;
	if (vrdma_take_rwqe(dqp))
		return 1;
	return dqp->state == IB_QPS_ERR ? -EIO : 0;
}

/* Complete the receive WQE of a SEND or RDMA WRITE with immediate. */
static void vrdma_loopback_recv_cqe(struct vrdma_qp *dqp,
				    const struct vrdma_send_wqe *wqe, u8 status,
				 u32 byte_len)
{
	struct vrdma_cqe cqe = {
		.wr_id = dqp->rwqe.wqe->wr_id,
		.status = status,
		.opcode = wqe->opcode == IB_UVERBS_WR_RDMA_WRITE_WITH_IMM ?
			  IB_WC_RECV_RDMA_WITH_IMM : IB_WC_RECV,
		.byte_len = byte_len,
		.qp_num = dqp->ibqp.qp_num,
		.src_qp = dqp->attr.dest_qp_num,
	};

	if (status == IB_WC_SUCCESS) {
		if (wqe->opcode == IB_UVERBS_WR_SEND_WITH_IMM ||
		    wqe->opcode == IB_UVERBS_WR_RDMA_WRITE_WITH_IMM) {
			cqe.ex.imm_data = wqe->ex.imm_data;
			cqe.wc_flags |= VRDMA_WC_WITH_IMM;
		} else if (wqe->opcode == IB_UVERBS_WR_SEND_WITH_INV) {
			cqe.ex.invalidate_rkey = wqe->ex.invalidate_rkey;
			cqe.wc_flags |= VRDMA_WC_WITH_INV;
		}
	}
	dqp->rwqe.valid = false;
	if (vrdma_cq_post(dqp->rcq, &cqe, wqe->flags & VRDMA_SEND_SOLICITED))
		vrdma_qp_error(dqp, IB_EVENT_QP_FATAL);
}

/*
 * The source SGL of a SEND or WRITE failed its checks midway, as a gather
 * of the packet path would: the WQE completes with a local protection
 * error.  Returns 1 (done).
 */
static int vrdma_loopback_gather_failed(struct vrdma_qp *qp,
					struct vrdma_qp *dqp,
					struct vrdma_swqe *swqe)
{
	vrdma_loopback_sent(qp, swqe, dqp->ibqp.qp_num, IB_WC_LOC_PROT_ERR);
	vrdma_complete_swqe(qp, swqe, IB_WC_LOC_PROT_ERR);
	return 1;
}

/*
 * A SEND or WRITE placed without error: the receive CQE of one that
 * consumed a receive WQE (@recv), then, unless that put the responder in
 * error, the message is executed and acknowledged.  Returns 1 (done).
 */
static int vrdma_loopback_done(struct vrdma_qp *qp, struct vrdma_qp *dqp,
			       struct vrdma_swqe *swqe, u8 opcode, bool recv,
			       u32 len)
{
	if (recv) {
		vrdma_loopback_recv_cqe(dqp, swqe->wqe, IB_WC_SUCCESS, len);
		if (dqp->state == IB_QPS_ERR) {
			vrdma_loopback_unanswered(qp);
			return 1;
		}
	}
	vrdma_loopback_executed(dqp, swqe, opcode);
	vrdma_loopback_acked(qp, swqe, IB_WC_SUCCESS);
	return 1;
}

/* A SEND (with immediate, with invalidate) into the next receive WQE. */
static int vrdma_loopback_send(struct vrdma_qp *qp, struct vrdma_qp *dqp,
			       struct vrdma_swqe *swqe)
{
	struct vrdma_send_wqe *wqe = swqe->wqe;
	struct vrdma_rwqe *rw = &dqp->rwqe;
	struct vrdma_span src, dst;
	u32 len = swqe->length;
	int ret;

	ret = vrdma_loopback_rwqe(dqp);
	if (ret < 0) {
		vrdma_loopback_nak(qp, dqp, swqe, 0, IB_WC_REM_OP_ERR);
		return 1;
	}
	if (!ret || len > rw->length)
		return 0;
	vrdma_span_sgl(&dst, dqp->vdev, rw->pd, rw->wqe->sge,
		       rw->wqe->num_sge, IB_ACCESS_LOCAL_WRITE);
	if (vrdma_span_check(dst, len))
		return 0;

	vrdma_span_swqe(&src, qp, wqe, 0);
	ret = vrdma_span_copy(&dst, &src, len);
	vrdma_span_fini(&src);
	vrdma_span_fini(&dst);
	if (ret == VRDMA_COPY_SRC_ERR) {
		/* As a failed gather: the receive WQE stays, unfinished. */
		return vrdma_loopback_gather_failed(qp, dqp, swqe);
	}
	if (ret == VRDMA_COPY_DST_ERR) {
		vrdma_loopback_recv_cqe(dqp, wqe, IB_WC_LOC_PROT_ERR, 0);
		vrdma_loopback_nak(qp, dqp, swqe, 0, IB_WC_REM_OP_ERR);
		return 1;
	}

	vrdma_loopback_sent(qp, swqe, dqp->ibqp.qp_num, IB_WC_SUCCESS);
	if (wqe->opcode == IB_UVERBS_WR_SEND_WITH_INV &&
	    vrdma_invalidate_key(dqp, wqe->ex.invalidate_rkey, true)) {
		/* IBA class J: placed, acknowledged, then the QP fails. */
		vrdma_loopback_recv_cqe(dqp, wqe, IB_WC_REM_INV_REQ_ERR, len);
		vrdma_loopback_executed(dqp, swqe, IB_OPCODE_RC_SEND_ONLY);
		vrdma_loopback_acked(qp, swqe, IB_WC_SUCCESS);
		vrdma_qp_error(dqp, 0);
		return 1;
	}
	return vrdma_loopback_done(qp, dqp, swqe, IB_OPCODE_RC_SEND_ONLY, true,
				   len);
}

/* An RDMA WRITE (with immediate) into the responder's MR. */
static int vrdma_loopback_write(struct vrdma_qp *qp, struct vrdma_qp *dqp,
				struct vrdma_swqe *swqe)
{
	struct vrdma_send_wqe *wqe = swqe->wqe;
	bool imm = wqe->opcode == IB_UVERBS_WR_RDMA_WRITE_WITH_IMM;
	struct vrdma_span src, dst;
	struct vrdma_mr *mr;
	u32 len = swqe->length;
	int ret;

	if (!(dqp->attr.qp_access_flags & IB_ACCESS_REMOTE_WRITE))
		return 0;
	if (imm) {
		ret = vrdma_loopback_rwqe(dqp);
		if (ret < 0) {
			vrdma_loopback_nak(qp, dqp, swqe, 0, IB_WC_REM_OP_ERR);
			return 1;
		}
		if (!ret)
			return 0;
	}
	/* Zero-length writes touch no memory and need no valid rkey. */
	if (len) {
		if (vrdma_rkey_get(dqp, wqe->rdma.rkey, wqe->rdma.remote_addr,
				   len, IB_ACCESS_REMOTE_WRITE, &mr))
			return 0;
		vrdma_span_mr(&dst, mr, wqe->rdma.remote_addr, len);
		vrdma_span_swqe(&src, qp, wqe, 0);
		ret = vrdma_span_copy(&dst, &src, len);
		vrdma_span_fini(&src);
		vrdma_span_fini(&dst);
		if (ret == VRDMA_COPY_SRC_ERR)
			return vrdma_loopback_gather_failed(qp, dqp, swqe);
		if (ret == VRDMA_COPY_DST_ERR) {
			vrdma_loopback_nak(qp, dqp, swqe, IB_EVENT_QP_FATAL,
					   IB_WC_REM_OP_ERR);
			return 1;
		}
	}

	vrdma_loopback_sent(qp, swqe, dqp->ibqp.qp_num, IB_WC_SUCCESS);
	return vrdma_loopback_done(qp, dqp, swqe, IB_OPCODE_RC_RDMA_WRITE_ONLY,
				   imm, len);
}

/* An RDMA READ: from the responder's MR into the requester's SGL. */
static int vrdma_loopback_read(struct vrdma_qp *qp, struct vrdma_qp *dqp,
			       struct vrdma_swqe *swqe)
{
	struct vrdma_send_wqe *wqe = swqe->wqe;
	struct vrdma_span src, dst;
	struct vrdma_mr *mr;
	u32 len = swqe->length;
	u8 status = IB_WC_SUCCESS;
	int ret;

	if (!(dqp->attr.qp_access_flags & IB_ACCESS_REMOTE_READ) ||
	    !dqp->resp.res_num)
		return 0;
	if (len) {
		if (vrdma_rkey_get(dqp, wqe->rdma.rkey, wqe->rdma.remote_addr,
				   len, IB_ACCESS_REMOTE_READ, &mr))
			return 0;
		vrdma_span_mr(&src, mr, wqe->rdma.remote_addr, len);
		vrdma_span_sgl(&dst, qp->vdev, qp->pd, wqe->sge, wqe->num_sge,
			       IB_ACCESS_LOCAL_WRITE);
		ret = vrdma_span_copy(&dst, &src, len);
		vrdma_span_fini(&src);
		vrdma_span_fini(&dst);
		if (ret == VRDMA_COPY_SRC_ERR) {
			vrdma_loopback_nak(qp, dqp, swqe, IB_EVENT_QP_ACCESS_ERR,
					   IB_WC_REM_ACCESS_ERR);
			return 1;
		}
		/* The responses came; placing them failed (completer.c). */
		if (ret == VRDMA_COPY_DST_ERR)
			status = IB_WC_LOC_PROT_ERR;
	}
	vrdma_loopback_sent(qp, swqe, dqp->ibqp.qp_num, status);
	vrdma_loopback_executed(dqp, swqe, IB_OPCODE_RC_RDMA_READ_REQUEST);
	vrdma_loopback_acked(qp, swqe, status);
	return 1;
}

/* CMP_AND_SWP or FETCH_AND_ADD, masked or not, on the responder's MR. */
static int vrdma_loopback_atomic(struct vrdma_qp *qp, struct vrdma_qp *dqp,
				 struct vrdma_swqe *swqe)
{
	struct vrdma_send_wqe *wqe = swqe->wqe;
	struct vrdma_atomic_op aop;
	u8 opcode = vrdma_wqe_atomic_op(wqe, &aop);
	u64 va = wqe->atomic.remote_addr;
	u8 status = IB_WC_SUCCESS;
	struct vrdma_mr *mr;
	u64 orig;
	int ret;

	if (!(dqp->attr.qp_access_flags & IB_ACCESS_REMOTE_ATOMIC) ||
	    !dqp->resp.res_num || (va & (sizeof(u64) - 1)))
		return 0;
	if (vrdma_rkey_get(dqp, wqe->atomic.rkey, va, sizeof(u64),
			   IB_ACCESS_REMOTE_ATOMIC, &mr))
		return 0;
	/* Fails, if at all, before it changes the word: packets then. */
	ret = vrdma_mr_atomic(mr, va, &aop, &orig);
	vrdma_mr_put(mr);
	if (ret)
		return 0;
	trace_vrdma_atomic(dqp, opcode, va, &aop, orig);

	if (vrdma_sgl_copy(qp->vdev, qp->pd, wqe->sge, wqe->num_sge, 0, &orig,
			   sizeof(orig), true))
		status = IB_WC_LOC_PROT_ERR;
	vrdma_loopback_sent(qp, swqe, dqp->ibqp.qp_num, status);
	vrdma_loopback_executed(dqp, swqe, opcode);
	vrdma_loopback_acked(qp, swqe, status);
	return 1;
}

/*
 * Is @dqp ready to take @qp's next message whole?  It must be an RC QP
 * connected to @qp, able to receive, with the same path MTU (PSNs count
 * packets of it), expecting exactly @qp's next PSN, and have nothing of an
 * earlier request left to answer.
 */
static bool vrdma_loopback_ready(struct vrdma_qp *qp, struct vrdma_qp *dqp)
{
	struct vrdma_resp *resp = &dqp->resp;

	if (dqp->destroyed || dqp->ibqp.qp_type != IB_QPT_RC ||
	    dqp->attr.dest_qp_num != qp->ibqp.qp_num || dqp->mtu != qp->mtu)
		return false;
	/*
	 * ODP pages cannot be held mapped on both sides at once (odp.c): no
	 * PD whose MRs the message may reach may have any.  A receive WQE of
	 * an SRQ is checked against the SRQ's PD (rq.c).
	 */
	if (vrdma_pd_has_odp(qp->pd) || vrdma_pd_has_odp(dqp->pd) ||
	    (dqp->srq && vrdma_pd_has_odp(to_vpd(dqp->srq->ibsrq.pd))))
		return false;
	/* The responder matches tag-matching SENDs packet by packet (tm.c). */
	if (vrdma_srq_is_tm(dqp->srq))
		return false;
	if (dqp->state != IB_QPS_RTR && dqp->state != IB_QPS_RTS &&
	    dqp->state != IB_QPS_SQD)
		return false;
	return resp->psn == qp->req.psn && !resp->read_active &&
	       !resp->ack_pending;
}

/**
 * vrdma_loopback_exec() - move the next message of an RC QP to its local
 *	peer without packets, if it can be
 * @qp: the requesting QP, engines owned, mutex held
 * @swqe: the WQE at req.cur, new (nothing of it sent), checked and
 *	successful so far, allowed to start (fence, max_rd_atomic)
 *
 * Only when everything before it is complete and acknowledged, so that the
 * message is the only request in flight.  See the comment at the top.
 *
 * Return: 1 if the message was executed, its WQE completed (with success
 * or an error) or, rarely, left to the retransmission timer; 0 if nothing
 * was done and the requester must send packets.
 */
int vrdma_loopback_exec(struct vrdma_qp *qp, struct vrdma_swqe *swqe)
{
	struct vrdma_dev *ldev;
	struct vrdma_qp *dqp;
	int done = 0;

	vrdma_qp_assert_locked(qp);

	/* The kernel's own send work (tm.c) goes as packets. */
	if (!READ_ONCE(local_direct) || qp->ibqp.qp_type != IB_QPT_RC ||
	    swqe->kind != VRDMA_SWQE_USER ||
	    swqe->state != VRDMA_SWQE_NEW || qp->req.offset ||
	    vrdma_req_outstanding(qp) || qp->req.head != qp->req.cur)
		return 0;
	ldev = vrdma_local_dev(qp->vdev, &qp->av);
	if (!ldev)
		return 0;
	dqp = vrdma_qp_get(ldev, qp->attr.dest_qp_num);
	/* A nested trylock: lockdep records no order for it. */
	if (dqp && dqp != qp && vrdma_qp_trylock(dqp)) {
		vrdma_qp_hold_peer(dqp);
		if (vrdma_loopback_ready(qp, dqp)) {
			switch (swqe->wqe->opcode) {
			case IB_UVERBS_WR_SEND:
			case IB_UVERBS_WR_SEND_WITH_IMM:
			case IB_UVERBS_WR_SEND_WITH_INV:
				done = vrdma_loopback_send(qp, dqp, swqe);
				break;
			case IB_UVERBS_WR_RDMA_WRITE:
			case IB_UVERBS_WR_RDMA_WRITE_WITH_IMM:
				done = vrdma_loopback_write(qp, dqp, swqe);
				break;
			case IB_UVERBS_WR_RDMA_READ:
				done = vrdma_loopback_read(qp, dqp, swqe);
				break;
			case IB_UVERBS_WR_ATOMIC_CMP_AND_SWP:
			case IB_UVERBS_WR_ATOMIC_FETCH_AND_ADD:
			case VRDMA_WR_MASKED_ATOMIC_CMP_AND_SWP:
			case VRDMA_WR_MASKED_ATOMIC_FETCH_AND_ADD:
				done = vrdma_loopback_atomic(qp, dqp, swqe);
				break;
			}
		}
		vrdma_qp_release_peer(dqp);
	}
	if (dqp)
		vrdma_qp_put(dqp);
	ib_device_put(&ldev->ibdev);
	/*
	 * A doorbell may carry a whole SQ of large messages, each copied
	 * right here; the requester runs in process context (sched.c).
	 */
	if (done)
		cond_resched();
	return done;
}
