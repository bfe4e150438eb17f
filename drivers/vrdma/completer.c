// SPDX-License-Identifier: GPL-2.0
/*
 * The completer: ACKs, NAKs and read responses complete send WQEs.
 *
 * The responder acknowledges requests by PSN; an ACK for PSN p says every
 * request up to p arrived and was executed, so every SEND and RDMA WRITE
 * whose last packet is at or before p is complete.  RDMA READs complete
 * when their response data has been placed, ATOMICs when their ATOMIC
 * ACKNOWLEDGE has brought the original value.  A NAK names the PSN that
 * failed: a sequence error means "resend from there" (go-back-N), an RNR
 * NAK means "no receive WQE was posted, try again after a while", and the
 * others (invalid request, remote access, remote operation error) fail the
 * WQE and put the QP in error.
 */
#include "vrdma.h"
#include "pkt.h"

/* The RNR timer values of the IBA (Table 45), in microseconds. */
static const u32 vrdma_rnr_usecs[32] = {
	655360, 10, 20, 30, 40, 60, 80, 120, 160, 240, 320, 480, 640, 960,
	1280, 1920, 2560, 3840, 5120, 7680, 10240, 15360, 20480, 30720,
	40960, 61440, 81920, 122880, 163840, 245760, 327680, 491520,
};

/*
 * Complete, in order, the SENDs and WRITEs acknowledged by @psn.
 *
 * A READ or ATOMIC stops the walk: an ACK does not carry its data.  An ACK
 * beyond it means it was executed and its response lost, so the oldest
 * unacknowledged PSN stays at its missing response: the retransmission
 * timer then asks for it again, and the responder answers a READ again and
 * an ATOMIC from its replay cache.
 */
static void vrdma_ack_up_to(struct vrdma_qp *qp, u32 psn)
{
	while (qp->sq.kidx != qp->req.cur && qp->state != IB_QPS_ERR) {
		struct vrdma_swqe *swqe = &qp->swqe[qp->sq.kidx & qp->sq.mask];

		if (vrdma_wqe_rd_atomic(swqe->wqe)) {
			u32 missing = vrdma_psn_add(swqe->first_psn,
						    swqe->read_done / qp->mtu);

			if (vrdma_psn_diff(psn, missing) >= 0)
				psn = vrdma_psn_add(missing, -1);
			break;
		}
		if (vrdma_psn_diff(psn, swqe->last_psn) < 0)
			break;
		vrdma_complete_swqe(qp, swqe, IB_WC_SUCCESS);
	}
	if (vrdma_psn_diff(vrdma_psn_add(psn, 1), qp->req.una) > 0) {
		qp->req.una = vrdma_psn_add(psn, 1);
		qp->req.retry = 0;	/* progress */
	}
	vrdma_retrans_arm(qp);
}

/*
 * Go back to @psn: the requester resends from the packet with that PSN.
 * Returns the WQE it falls in, or NULL if it is not outstanding.
 */
struct vrdma_swqe *vrdma_rewind(struct vrdma_qp *qp, u32 psn)
{
	u32 i;

	for (i = qp->sq.kidx; ; i++) {
		struct vrdma_swqe *swqe = &qp->swqe[i & qp->sq.mask];
		bool sending = i == qp->req.cur;

		if (!sending && i == qp->req.fetch)
			return NULL;
		if (sending && swqe->state != VRDMA_SWQE_SENDING)
			return NULL;
		if (vrdma_psn_diff(psn, swqe->first_psn) < 0)
			return NULL;
		if (sending || vrdma_psn_diff(psn, swqe->last_psn) <= 0) {
			bool is_read = swqe->wqe->opcode ==
				       IB_UVERBS_WR_RDMA_READ;

			/*
			 * A READ is asked again from its first missing
			 * response on (IBA 9.7.5.1.4); a SEND or WRITE is
			 * resent from the packet with this PSN.
			 */
			if (is_read)
				psn = vrdma_psn_add(swqe->first_psn,
						    swqe->read_done / qp->mtu);
			qp->req.cur = i;
			qp->req.offset = is_read ? 0 :
					 vrdma_psn_diff(psn, swqe->first_psn) *
					 qp->mtu;
			qp->req.psn = psn;
			vrdma_count(qp->vdev, VRDMA_CNT_RETRANSMITS);
			return swqe;
		}
		if (sending)
			return NULL;
	}
}

void vrdma_fail_head(struct vrdma_qp *qp, u8 status)
{
	struct vrdma_swqe *swqe = &qp->swqe[qp->sq.kidx & qp->sq.mask];

	if (qp->sq.kidx == qp->req.fetch)
		return;
	if (qp->req.cur == qp->sq.kidx) {
		qp->req.cur++;
		qp->req.offset = 0;
	}
	vrdma_complete_swqe(qp, swqe, status);
}

static void vrdma_rnr_nak(struct vrdma_qp *qp, u32 psn, u8 timer)
{
	vrdma_count(qp->vdev, VRDMA_CNT_RNR_NAK_RCVD);
	vrdma_ack_up_to(qp, vrdma_psn_add(psn, -1));
	if (qp->attr.rnr_retry != 7 && qp->req.rnr_retry >= qp->attr.rnr_retry) {
		vrdma_fail_head(qp, IB_WC_RNR_RETRY_EXC_ERR);
		return;
	}
	if (!vrdma_rewind(qp, psn))
		return;
	qp->req.rnr_retry++;
	qp->req.rnr_wait = true;
	del_timer(&qp->retrans_timer);
	mod_timer(&qp->rnr_timer,
		  jiffies + usecs_to_jiffies(vrdma_rnr_usecs[timer & 31]));
}

static void vrdma_ack(struct vrdma_qp *qp, struct sk_buff *skb)
{
	struct vrdma_pkt *pkt = vrdma_pkt(skb);
	struct vrdma_aeth *aeth = vrdma_ext(skb, VRDMA_OPF_AETH);
	u8 syn = be32_to_cpu(aeth->smsn) >> VRDMA_AETH_SYN_SHIFT;
	u32 psn = pkt->psn;

	switch (syn & VRDMA_SYN_TYPE_MASK) {
	case VRDMA_SYN_ACK:
		qp->req.rnr_retry = 0;
		vrdma_ack_up_to(qp, psn);
		break;
	case VRDMA_SYN_RNR_NAK:
		vrdma_rnr_nak(qp, psn, syn & 0x1f);
		break;
	case VRDMA_SYN_NAK:
		vrdma_count(qp->vdev, VRDMA_CNT_NAK_RCVD);
		vrdma_ack_up_to(qp, vrdma_psn_add(psn, -1));
		switch (syn & 0x1f) {
		case VRDMA_NAK_PSN_SEQ_ERR:
			vrdma_rewind(qp, psn);
			break;
		case VRDMA_NAK_INVALID_REQ:
			vrdma_fail_head(qp, IB_WC_REM_INV_REQ_ERR);
			break;
		case VRDMA_NAK_REM_ACCESS:
			vrdma_fail_head(qp, IB_WC_REM_ACCESS_ERR);
			break;
		default:
			vrdma_fail_head(qp, IB_WC_REM_OP_ERR);
			break;
		}
		break;
	default:
		/* Reserved syndrome: ignore the packet. */
		vrdma_count(qp->vdev, VRDMA_CNT_MALFORMED);
		break;
	}
}

static void vrdma_read_response(struct vrdma_qp *qp, struct sk_buff *skb)
{
	struct vrdma_pkt *pkt = vrdma_pkt(skb);
	struct vrdma_swqe *swqe;
	struct vrdma_send_wqe *wqe;
	u32 expect, resid;
	int ret;

	/* A response implies every request before the READ was executed. */
	vrdma_ack_up_to(qp, vrdma_psn_add(pkt->psn, -1));
	if (qp->sq.kidx == qp->req.cur || qp->state == IB_QPS_ERR)
		return;		/* nothing sent is waiting: a stale response */
	swqe = &qp->swqe[qp->sq.kidx & qp->sq.mask];
	wqe = swqe->wqe;
	if (wqe->opcode != IB_UVERBS_WR_RDMA_READ)
		return;

	expect = vrdma_psn_add(swqe->first_psn, swqe->read_done / qp->mtu);
	if (pkt->psn != expect) {
		/* Lost or duplicated: a gap is resent by the retry logic. */
		vrdma_count(qp->vdev, VRDMA_CNT_SEQ_ERR);
		return;
	}
	/*
	 * A response stream starts with FIRST (or ONLY) where the READ was
	 * last requested.  After a resend, responses of the earlier stream
	 * may still arrive: at the expected PSN they carry the same bytes,
	 * so a MIDDLE or LAST there is as good.
	 */
	resid = swqe->length - swqe->read_done;
	if (((pkt->mask & VRDMA_OPF_FIRST) &&
	     swqe->read_done != swqe->read_start) ||
	    (!swqe->read_done && !(pkt->mask & VRDMA_OPF_FIRST)) ||
	    ((pkt->mask & VRDMA_OPF_LAST) ? pkt->paylen != resid :
					    pkt->paylen != qp->mtu)) {
		/* Dropped: if nothing better comes, the retry logic acts. */
		vrdma_count(qp->vdev, VRDMA_CNT_MALFORMED);
		return;
	}

	if (pkt->paylen) {
		ret = vrdma_sgl_copy_from_skb(qp->vdev, qp->pd, wqe->sge,
					      wqe->num_sge, swqe->read_done,
					      skb, pkt->hdr_len, pkt->paylen);
		if (ret) {
			vrdma_fail_head(qp, IB_WC_LOC_PROT_ERR);
			return;
		}
	}
	swqe->read_done += pkt->paylen;
	/* Each response is progress: a long READ must not time out. */
	qp->req.retry = 0;
	vrdma_retrans_arm(qp);
	if (pkt->mask & VRDMA_OPF_LAST) {
		qp->req.rnr_retry = 0;
		vrdma_complete_swqe(qp, swqe, IB_WC_SUCCESS);
		vrdma_ack_up_to(qp, pkt->psn);
	}
}

/*
 * An ATOMIC ACKNOWLEDGE: the original value of the word, for the ATOMIC
 * with this PSN, which must be the oldest WQE.  (An answer for a later
 * ATOMIC while an earlier one still waits is dropped; the go-back-N resend
 * gets it again, from the responder's replay cache.)  The value goes to the
 * WQE's local buffer, whose lkey is checked again: the MR may be gone.
 */
static void vrdma_atomic_ack(struct vrdma_qp *qp, struct sk_buff *skb)
{
	struct vrdma_pkt *pkt = vrdma_pkt(skb);
	struct vrdma_aeth *aeth = vrdma_ext(skb, VRDMA_OPF_AETH);
	struct vrdma_atmack *atmack = vrdma_ext(skb, VRDMA_OPF_ATMACK);
	u8 syn = be32_to_cpu(aeth->smsn) >> VRDMA_AETH_SYN_SHIFT;
	struct vrdma_swqe *swqe;
	u64 orig;

	/* NAKs come as plain ACKNOWLEDGE packets. */
	if ((syn & VRDMA_SYN_TYPE_MASK) != VRDMA_SYN_ACK) {
		vrdma_count(qp->vdev, VRDMA_CNT_MALFORMED);
		return;
	}
	vrdma_ack_up_to(qp, vrdma_psn_add(pkt->psn, -1));
	if (qp->sq.kidx == qp->req.cur || qp->state == IB_QPS_ERR)
		return;		/* a stale answer */
	swqe = &qp->swqe[qp->sq.kidx & qp->sq.mask];
	if (!vrdma_wqe_atomic(swqe->wqe) || swqe->first_psn != pkt->psn ||
	    swqe->state != VRDMA_SWQE_SENT) {
		vrdma_count(qp->vdev, VRDMA_CNT_SEQ_ERR);
		return;
	}

	orig = be64_to_cpu(atmack->orig);
	if (vrdma_sgl_copy(qp->vdev, qp->pd, swqe->wqe->sge,
			   swqe->wqe->num_sge, 0, &orig, sizeof(orig), true)) {
		vrdma_fail_head(qp, IB_WC_LOC_PROT_ERR);
		return;
	}
	qp->req.rnr_retry = 0;
	vrdma_complete_swqe(qp, swqe, IB_WC_SUCCESS);
	vrdma_ack_up_to(qp, pkt->psn);
}

/**
 * vrdma_completer() - handle one response packet
 * @qp: the QP, mutex held
 * @skb: an ACK, NAK or read response (consumed)
 */
void vrdma_completer(struct vrdma_qp *qp, struct sk_buff *skb)
{
	struct vrdma_pkt *pkt = vrdma_pkt(skb);

	/* Only RC QPs are answered. */
	if ((qp->state != IB_QPS_RTS && qp->state != IB_QPS_SQD) ||
	    qp->ibqp.qp_type != IB_QPT_RC || !(pkt->mask & VRDMA_OPF_RC)) {
		kfree_skb(skb);
		return;
	}
	/* Only PSNs sent and not yet acknowledged can be answered. */
	if (vrdma_psn_diff(pkt->psn, qp->req.una) < -1 ||
	    vrdma_psn_diff(pkt->psn, qp->req.psn) >= 0) {
		vrdma_count(qp->vdev, VRDMA_CNT_DUP_REQ);
		kfree_skb(skb);
		return;
	}

	if (pkt->mask & VRDMA_OPF_READ)
		vrdma_read_response(qp, skb);
	else if (pkt->opcode == IB_OPCODE_RC_ATOMIC_ACKNOWLEDGE)
		vrdma_atomic_ack(qp, skb);
	else if (pkt->opcode == IB_OPCODE_RC_ACKNOWLEDGE)
		vrdma_ack(qp, skb);
	else
		vrdma_count(qp->vdev, VRDMA_CNT_MALFORMED);
	consume_skb(skb);
}
