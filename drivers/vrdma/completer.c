// SPDX-License-Identifier: GPL-2.0
/*
 * The completer: ACKs, NAKs and read responses complete send WQEs.
 *
 * The responder acknowledges requests by PSN; an ACK for PSN p says every
 * request up to p arrived and was executed, so every SEND and RDMA WRITE
 * whose last packet is at or before p is complete.  RDMA READs complete
 * when their response data has been placed, ATOMICs when their ATOMIC
 * ACKNOWLEDGE has brought the original value; ATOMIC WRITEs and FLUSHes,
 * which bring nothing back, like a SEND: by their empty RDMA READ RESPONSE
 * or by any later ACK.  A NAK names the PSN that
 * failed: a sequence error means "resend from there" (go-back-N), an RNR
 * NAK means "no receive WQE was posted, try again after a while", and the
 * others (invalid request, remote access, remote operation error) fail the
 * WQE and put the QP in error.
 *
 * The end of a send WQE's life is all here: its completion
 * (vrdma_complete_swqe()), the flush of the error state (vrdma_flush_sq()),
 * and retransmission: the timer (vrdma_retrans_arm(), vrdma_timed_out())
 * and going back (vrdma_rewind(), vrdma_retry()).  The requester calls
 * these; the completer calls nothing of the requester's.
 */
#include "vrdma.h"
#include "pkt.h"
#include "trace.h"

/*
 * The RNR timer values of the IBA (Table 45), in microseconds, indexed by
 * the 5-bit timer field of an RNR NAK's syndrome.
 */
static const u32 vrdma_rnr_usecs[VRDMA_SYN_VALUE_MASK + 1] = {
	[IB_RNR_TIMER_655_36] = 655360,	[IB_RNR_TIMER_000_01] = 10,
	[IB_RNR_TIMER_000_02] = 20,	[IB_RNR_TIMER_000_03] = 30,
	[IB_RNR_TIMER_000_04] = 40,	[IB_RNR_TIMER_000_06] = 60,
	[IB_RNR_TIMER_000_08] = 80,	[IB_RNR_TIMER_000_12] = 120,
	[IB_RNR_TIMER_000_16] = 160,	[IB_RNR_TIMER_000_24] = 240,
	[IB_RNR_TIMER_000_32] = 320,	[IB_RNR_TIMER_000_48] = 480,
	[IB_RNR_TIMER_000_64] = 640,	[IB_RNR_TIMER_000_96] = 960,
	[IB_RNR_TIMER_001_28] = 1280,	[IB_RNR_TIMER_001_92] = 1920,
	[IB_RNR_TIMER_002_56] = 2560,	[IB_RNR_TIMER_003_84] = 3840,
	[IB_RNR_TIMER_005_12] = 5120,	[IB_RNR_TIMER_007_68] = 7680,
	[IB_RNR_TIMER_010_24] = 10240,	[IB_RNR_TIMER_015_36] = 15360,
	[IB_RNR_TIMER_020_48] = 20480,	[IB_RNR_TIMER_030_72] = 30720,
	[IB_RNR_TIMER_040_96] = 40960,	[IB_RNR_TIMER_061_44] = 61440,
	[IB_RNR_TIMER_081_92] = 81920,	[IB_RNR_TIMER_122_88] = 122880,
	[IB_RNR_TIMER_163_84] = 163840,	[IB_RNR_TIMER_245_76] = 245760,
	[IB_RNR_TIMER_327_68] = 327680,	[IB_RNR_TIMER_491_52] = 491520,
};

/*
 * The PSN of the first response of @swqe, an RDMA READ or ATOMIC, still
 * missing: READ responses are placed in order, one path MTU each; an
 * ATOMIC has one response.
 */
static u32 vrdma_read_expect(struct vrdma_qp *qp, struct vrdma_swqe *swqe)
{
	return vrdma_psn_add(swqe->first_psn, swqe->read_done / qp->mtu);
}

/**
 * vrdma_req_progress() - requests were acknowledged: forward progress
 * @qp: the QP, engines owned; req.una moved on
 *
 * The retry counter starts over, the retransmission timer too.
 */
void vrdma_req_progress(struct vrdma_qp *qp)
{
	qp->req.retry = 0;
	qp->req.rewound = false;
	qp->req.probe = false;
	vrdma_retrans_arm(qp);
}

/*
 * An answer acknowledged requests that the requester went back to send
 * again (a late ACK after a timeout, which a responder sends for the
 * duplicate of a request it executed): it resumes after them, at the
 * first PSN not acknowledged, instead of sending what arrived already.
 */
static void vrdma_skip_acked(struct vrdma_qp *qp)
{
	struct vrdma_swqe *swqe;

	if (vrdma_psn_diff(qp->req.una, qp->req.psn) <= 0)
		return;
	/* The WQEs it had gone back to may all be complete now. */
	if ((s32)(qp->req.cur - qp->req.head) < 0) {
		qp->req.cur = qp->req.head;
		qp->req.offset = 0;
	}
	swqe = vrdma_swqe_at(qp, qp->req.cur);
	if (qp->req.cur != qp->req.fetch && swqe->state != VRDMA_SWQE_NEW &&
	    !vrdma_wqe_rd_atomic(swqe->wqe))
		qp->req.offset = vrdma_psn_diff(qp->req.una, swqe->first_psn) *
				 qp->mtu;
	qp->req.psn = qp->req.una;
}

/*
 * Complete, in order, the SENDs and WRITEs acknowledged by @psn, and move
 * the oldest unacknowledged PSN past it.  After a rewind that includes
 * WQEs the requester is sending again (vrdma_skip_acked()); a WQE never
 * sent whole has no last PSN yet, and is not complete.  Completion stops
 * at an RDMA READ or ATOMIC, which only its responses complete.  If @psn is at or beyond
 * the first response of that READ (or ATOMIC) still missing, that response
 * was lost (the responder answers requests in order): an "implied NAK"
 * (IBA 9.7.5.1.5).  The unacknowledged PSN then stays at the missing
 * response, so that the timer keeps running for it; the responder answers
 * a READ again, and an ATOMIC from its replay cache.
 *
 * Return: true on an implied NAK; the caller goes back to qp->req.una.
 */
static bool vrdma_ack_up_to(struct vrdma_qp *qp, u32 psn)
{
	u32 una = vrdma_psn_add(psn, 1);
	bool implied = false;

	while (qp->req.head != qp->req.fetch && qp->state != IB_QPS_ERR) {
		struct vrdma_swqe *swqe = vrdma_swqe_at(qp, qp->req.head);

		/* A failed WQE completes, with its error, in the requester. */
		if (swqe->state != VRDMA_SWQE_SENT ||
		    swqe->status != IB_WC_SUCCESS)
			break;
		if (vrdma_wqe_data_answer(swqe->wqe)) {
			u32 expect = vrdma_read_expect(qp, swqe);

			if (vrdma_psn_diff(psn, expect) >= 0) {
				implied = true;
				una = expect;
			}
			break;
		}
		if (vrdma_psn_diff(psn, swqe->last_psn) < 0)
			break;
		vrdma_complete_swqe(qp, swqe, IB_WC_SUCCESS);
	}
	if (vrdma_psn_diff(una, qp->req.una) > 0) {
		qp->req.una = una;
		vrdma_skip_acked(qp);
		vrdma_req_progress(qp);
	}
	if (implied)
		vrdma_count(qp->vdev, VRDMA_CNT_IMPLIED_NAK);
	return implied;
}

/**
 * vrdma_rewind() - go back to @psn: the requester resends from there
 * @qp: the QP, engines owned
 * @psn: an unacknowledged PSN sent (between req.una and req.psn)
 *
 * Go-back-N: every request from the packet with this PSN on is sent again.
 * A READ is asked again only from its first missing response on
 * (IBA 9.7.5.1.4).
 *
 * Return: the WQE @psn falls in, or NULL if it is not outstanding.
 */
static struct vrdma_swqe *vrdma_rewind(struct vrdma_qp *qp, u32 psn)
{
	u32 i;

	vrdma_qp_assert_owned(qp);

	for (i = qp->req.head; i != qp->req.fetch; i++) {
		struct vrdma_swqe *swqe = vrdma_swqe_at(qp, i);
		bool is_read = swqe->wqe->opcode == IB_UVERBS_WR_RDMA_READ;
		u32 last;

		if (swqe->state == VRDMA_SWQE_NEW ||
		    vrdma_psn_diff(psn, swqe->first_psn) < 0)
			return NULL;
		/* Of the message being sent, the PSNs before max_psn are out. */
		last = swqe->state == VRDMA_SWQE_SENDING ?
		       vrdma_psn_add(qp->req.max_psn, -1) : swqe->last_psn;
		if (vrdma_psn_diff(psn, last) > 0)
			continue;

		if (is_read)
			psn = vrdma_read_expect(qp, swqe);
		qp->req.cur = i;
		qp->req.offset = is_read ? 0 :
				 vrdma_psn_diff(psn, swqe->first_psn) * qp->mtu;
		qp->req.psn = psn;
		qp->req.rewound = true;
		qp->req.rewind_psn = psn;
		vrdma_count(qp->vdev, VRDMA_CNT_RETRANSMITS);
		return swqe;
	}
	return NULL;
}

/* The oldest WQE fails with @status: its QP goes to error (completer). */
static void vrdma_fail_head(struct vrdma_qp *qp, u8 status)
{
	struct vrdma_swqe *swqe = vrdma_swqe_at(qp, qp->req.head);

	vrdma_qp_assert_owned(qp);

	if (qp->req.head == qp->req.fetch)
		return;
	if (qp->req.cur == qp->req.head) {
		qp->req.cur++;
		qp->req.offset = 0;
	}
	vrdma_complete_swqe(qp, swqe, status);
}

/**
 * vrdma_retry() - resend from @psn after a loss, within the retry budget
 * @qp: the QP, engines owned
 * @psn: the first PSN to resend, normally qp->req.una
 * @timeout: the retransmission timer expired (else a NAK said so)
 *
 * Timeouts, sequence error NAKs and implied NAKs all spend the QP's
 * retry_cnt; any progress restores it.  When it is spent, the oldest WQE
 * completes with IB_WC_RETRY_EXC_ERR and the QP goes to the error state,
 * which flushes the rest.  A NAK asking for the PSN the requester went back
 * to already, with nothing acknowledged since, was sent before the resent
 * packets arrived (or is a copy): acting on it again would only send the
 * same packets twice.
 *
 * After a timeout only the oldest request is resent, with AckReq set, and
 * the rest once it is acknowledged (a "probe").  The timer fires when the
 * peer is gone, or so far behind that its answers take longer than the
 * timeout: resending the whole window each time would only queue more
 * copies in front of the one that matters, until every retry is spent
 * waiting behind them.  NAKs need no probe: the peer is keeping up.
 */
static void vrdma_retry(struct vrdma_qp *qp, u32 psn, bool timeout)
{
	vrdma_qp_assert_owned(qp);

	trace_vrdma_retry(qp, psn, timeout);
	if (!timeout && qp->req.rewound && psn == qp->req.rewind_psn) {
		vrdma_count(qp->vdev, VRDMA_CNT_DUP_RESP);
		return;
	}
	if (qp->req.retry >= qp->attr.retry_cnt) {
		vrdma_count(qp->vdev, VRDMA_CNT_RETRY_EXC);
		vrdma_fail_head(qp, IB_WC_RETRY_EXC_ERR);
		return;
	}
	qp->req.retry++;
	if (!vrdma_rewind(qp, psn))
		vrdma_retrans_arm(qp);	/* nothing to resend: keep watching */
	else if (timeout)
		qp->req.probe = true;
}

static void vrdma_rnr_nak(struct vrdma_qp *qp, u32 psn, u8 timer)
{
	vrdma_count(qp->vdev, VRDMA_CNT_RNR_NAK_RCVD);
	if (vrdma_ack_up_to(qp, vrdma_psn_add(psn, -1))) {
		/* A READ before it lost responses: that comes first. */
		vrdma_retry(qp, qp->req.una, false);
		return;
	}
	/* A copy of the RNR NAK being waited out already. */
	if (qp->req.rnr_wait && qp->req.rewound &&
	    psn == qp->req.rewind_psn) {
		vrdma_count(qp->vdev, VRDMA_CNT_DUP_RESP);
		return;
	}
	if (qp->attr.rnr_retry != VRDMA_RNR_RETRY_INFINITE &&
	    qp->req.rnr_retry >= qp->attr.rnr_retry) {
		vrdma_count(qp->vdev, VRDMA_CNT_RNR_RETRY_EXC);
		vrdma_fail_head(qp, IB_WC_RNR_RETRY_EXC_ERR);
		return;
	}
	if (!vrdma_rewind(qp, psn))
		return;
	qp->req.rnr_retry++;
	qp->req.rnr_wait = true;
	del_timer(&qp->retrans_timer);
	mod_timer(&qp->rnr_timer,
		  jiffies + usecs_to_jiffies(vrdma_rnr_usecs[timer & VRDMA_SYN_VALUE_MASK]));
}

static void vrdma_ack(struct vrdma_qp *qp, struct sk_buff *skb)
{
	struct vrdma_pkt *pkt = vrdma_pkt(skb);
	struct vrdma_aeth *aeth = vrdma_ext(skb, VRDMA_OPF_AETH);
	u8 syn = be32_to_cpu(aeth->smsn) >> VRDMA_AETH_SYN_SHIFT;
	u32 psn = pkt->psn;

	/* A NAK names a request not executed: not one acknowledged since. */
	if ((syn & VRDMA_SYN_TYPE_MASK) != VRDMA_SYN_ACK &&
	    vrdma_psn_diff(psn, qp->req.una) < 0) {
		vrdma_count(qp->vdev, VRDMA_CNT_DUP_RESP);
		return;
	}
	switch (syn & VRDMA_SYN_TYPE_MASK) {
	case VRDMA_SYN_ACK:
		qp->req.rnr_retry = 0;
		if (vrdma_ack_up_to(qp, psn))
			vrdma_retry(qp, qp->req.una, false);
		break;
	case VRDMA_SYN_RNR_NAK:
		vrdma_rnr_nak(qp, psn, syn & VRDMA_SYN_VALUE_MASK);
		break;
	case VRDMA_SYN_NAK:
		vrdma_count(qp->vdev, VRDMA_CNT_NAK_RCVD);
		/* A NAK acknowledges every request before its PSN. */
		vrdma_ack_up_to(qp, vrdma_psn_add(psn, -1));
		switch (syn & VRDMA_SYN_VALUE_MASK) {
		case VRDMA_NAK_PSN_SEQ_ERR:
			/* Resend from there, or from a READ found short. */
			vrdma_retry(qp, qp->req.una, false);
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

/*
 * The answer to an ATOMIC WRITE or FLUSH, the oldest WQE: an RDMA READ
 * RESPONSE ONLY without payload, with its PSN and an ACK syndrome.  It
 * acknowledges the request like an ACK; anything else is dropped and
 * counted.
 */
static void vrdma_placement_response(struct vrdma_qp *qp, struct sk_buff *skb,
				     struct vrdma_swqe *swqe)
{
	struct vrdma_pkt *pkt = vrdma_pkt(skb);
	struct vrdma_aeth *aeth = vrdma_ext(skb, VRDMA_OPF_AETH);
	u8 syn = be32_to_cpu(aeth->smsn) >> VRDMA_AETH_SYN_SHIFT;

	if (pkt->opcode != IB_OPCODE_RC_RDMA_READ_RESPONSE_ONLY ||
	    pkt->paylen || (syn & VRDMA_SYN_TYPE_MASK) != VRDMA_SYN_ACK) {
		vrdma_count(qp->vdev, VRDMA_CNT_MALFORMED);
		return;
	}
	if (pkt->psn != swqe->first_psn) {
		vrdma_count(qp->vdev, VRDMA_CNT_DUP_RESP);
		return;
	}
	qp->req.rnr_retry = 0;
	vrdma_ack_up_to(qp, pkt->psn);
}

static void vrdma_read_response(struct vrdma_qp *qp, struct sk_buff *skb)
{
	struct vrdma_pkt *pkt = vrdma_pkt(skb);
	struct vrdma_swqe *swqe;
	struct vrdma_send_wqe *wqe;
	u32 resid;
	int ret;

	/*
	 * A response implies every request before it was executed, and that
	 * an earlier READ still short of responses lost them.
	 */
	if (vrdma_ack_up_to(qp, vrdma_psn_add(pkt->psn, -1))) {
		vrdma_retry(qp, qp->req.una, false);
		return;
	}
	if (qp->req.head == qp->req.fetch || qp->state == IB_QPS_ERR)
		return;		/* nothing sent is waiting: a stale response */
	swqe = vrdma_swqe_at(qp, qp->req.head);
	wqe = swqe->wqe;
	if (vrdma_wqe_placement(wqe) && swqe->state == VRDMA_SWQE_SENT) {
		vrdma_placement_response(qp, skb, swqe);
		return;
	}
	if (wqe->opcode != IB_UVERBS_WR_RDMA_READ ||
	    swqe->state != VRDMA_SWQE_SENT)
		return;

	if (pkt->psn != vrdma_read_expect(qp, swqe)) {
		/* Before the first missing one: a copy, or resent. */
		vrdma_count(qp->vdev, VRDMA_CNT_DUP_RESP);
		return;
	}
	/*
	 * A response stream starts with FIRST (or ONLY) where the READ was
	 * last requested.  After a resend, responses of the earlier stream
	 * may still arrive: at the expected PSN they carry the same bytes,
	 * so a MIDDLE or LAST there is as good.  No response is longer than
	 * the path MTU.
	 */
	resid = swqe->length - swqe->read_done;
	if (pkt->paylen > qp->mtu ||
	    ((pkt->mask & VRDMA_OPF_FIRST) &&
	     swqe->read_done != swqe->read_start) ||
	    (!swqe->read_done && !(pkt->mask & VRDMA_OPF_FIRST)) ||
	    ((pkt->mask & VRDMA_OPF_LAST) ? pkt->paylen != resid :
					    pkt->paylen != qp->mtu)) {
		/* Dropped: if nothing better comes, the retry logic acts. */
		vrdma_count(qp->vdev, VRDMA_CNT_MALFORMED);
		return;
	}

	if (pkt->paylen) {
		ret = vrdma_sgl_copy_from_skb(qp->vdev,
					      swqe->pd ? swqe->pd : qp->pd,
					      wqe->sge,
					      wqe->num_sge, swqe->read_done,
					      skb, pkt->hdr_len, pkt->paylen);
		if (ret) {
			vrdma_fail_head(qp, IB_WC_LOC_PROT_ERR);
			return;
		}
	}
	swqe->read_done += pkt->paylen;
	if (pkt->mask & VRDMA_OPF_LAST) {
		qp->req.rnr_retry = 0;
		vrdma_complete_swqe(qp, swqe, IB_WC_SUCCESS);
	}
	/* Each response is progress: a long READ must not time out. */
	vrdma_ack_up_to(qp, pkt->psn);
}

/*
 * An ATOMIC ACKNOWLEDGE: the original value of the word, for the ATOMIC
 * with this PSN, which must be the oldest WQE.  (An answer for a later
 * ATOMIC while an earlier one still waits implies the earlier one's was
 * lost: the go-back-N resend gets it again, from the responder's replay
 * cache.)  The value goes to the WQE's local buffer, whose lkey is checked
 * again: the MR may be gone.
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
	if (vrdma_ack_up_to(qp, vrdma_psn_add(pkt->psn, -1))) {
		vrdma_retry(qp, qp->req.una, false);
		return;
	}
	if (qp->req.head == qp->req.fetch || qp->state == IB_QPS_ERR)
		return;		/* a stale answer */
	swqe = vrdma_swqe_at(qp, qp->req.head);
	if (!vrdma_wqe_atomic(swqe->wqe) || swqe->first_psn != pkt->psn ||
	    swqe->state != VRDMA_SWQE_SENT) {
		vrdma_count(qp->vdev, VRDMA_CNT_DUP_RESP);
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
 * @qp: the QP, engines owned (vrdma_qp_lock(), or the QP's tasklet:
 *	vrdma_qp_bh())
 * @skb: an ACK, NAK or read response (consumed)
 */
void vrdma_completer(struct vrdma_qp *qp, struct sk_buff *skb)
{
	struct vrdma_pkt *pkt = vrdma_pkt(skb);

	vrdma_qp_assert_owned(qp);

	/* Only RC (and XRC) QPs are answered: anything else is forged. */
	if (!vrdma_qp_is_rc(qp) || !(pkt->mask & VRDMA_OPF_RC)) {
		vrdma_count(qp->vdev, VRDMA_CNT_MALFORMED);
		kfree_skb(skb);
		return;
	}
	if (qp->state != IB_QPS_RTS && qp->state != IB_QPS_SQD) {
		kfree_skb(skb);
		return;
	}
	/*
	 * Only PSNs sent and not yet acknowledged can be answered: up to the
	 * highest ever sent, which after a go-back-N is beyond req.psn.
	 */
	if (vrdma_psn_diff(pkt->psn, qp->req.una) < -1 ||
	    vrdma_psn_diff(pkt->psn, qp->req.max_psn) >= 0) {
		vrdma_count(qp->vdev, VRDMA_CNT_DUP_RESP);
		kfree_skb(skb);
		return;
	}

	trace_vrdma_comp_pkt(qp, skb);
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

/*
 * The IB_WC_* opcode of a completed send WQE.  A process's CQE has only
 * the opcodes of enum ibv_wc_opcode, which has no masked atomics.
 */
static u8 vrdma_wc_opcode(struct vrdma_qp *qp, u8 wr_opcode)
{
	switch (wr_opcode) {
	case VRDMA_WR_MASKED_ATOMIC_CMP_AND_SWP:
		return qp->ibqp.uobject ? IB_WC_COMP_SWAP :
					  IB_WC_MASKED_COMP_SWAP;
	case VRDMA_WR_MASKED_ATOMIC_FETCH_AND_ADD:
		return qp->ibqp.uobject ? IB_WC_FETCH_ADD :
					  IB_WC_MASKED_FETCH_ADD;
	case IB_UVERBS_WR_RDMA_WRITE:
	case IB_UVERBS_WR_RDMA_WRITE_WITH_IMM:
		return IB_WC_RDMA_WRITE;
	case IB_UVERBS_WR_RDMA_READ:
		return IB_WC_RDMA_READ;
	case IB_UVERBS_WR_ATOMIC_CMP_AND_SWP:
		return IB_WC_COMP_SWAP;
	case IB_UVERBS_WR_ATOMIC_FETCH_AND_ADD:
		return IB_WC_FETCH_ADD;
	case VRDMA_WR_ATOMIC_WRITE:
		return VRDMA_WC_ATOMIC_WRITE;
	case VRDMA_WR_FLUSH:
		return VRDMA_WC_FLUSH;
	case IB_UVERBS_WR_LOCAL_INV:
		return IB_WC_LOCAL_INV;
	case IB_UVERBS_WR_BIND_MW:
		return IB_WC_BIND_MW;
	case VRDMA_WR_REG_MR:
		return IB_WC_REG_MR;
	default:
		return IB_WC_SEND;
	}
}

/**
 * vrdma_complete_swqe() - complete the oldest send WQE and return its slot
 * @qp: the QP, engines owned
 * @swqe: the WQE at req.head
 * @status: IB_WC_* status
 *
 * A CQE is written if the WQE was signaled or failed; the kernel's own
 * send work completes in tm.c instead, and has no slot in the ring.  A CQ
 * overflow puts the QP in error.
 */
void vrdma_complete_swqe(struct vrdma_qp *qp, struct vrdma_swqe *swqe,
			 u8 status)
{
	struct vrdma_send_wqe *wqe = swqe->wqe;

	vrdma_qp_assert_owned(qp);

	swqe->state = VRDMA_SWQE_DONE;
	if (swqe->rd_atomic) {
		swqe->rd_atomic = false;
		qp->req.rd_atomic--;
	}
	qp->req.head++;
	if (swqe->kind != VRDMA_SWQE_USER) {
		vrdma_tm_swqe_done(qp, swqe, status);
		goto out;
	}
	/*
	 * Free the slot before the CQE is visible: a process that sees the
	 * completion may post into the slot at once.  The kernel's copy of
	 * the WQE stays valid.
	 */
	vrdma_queue_consume(&qp->sq, 1);
	if (qp->sq_sig_all || (wqe->flags & VRDMA_SEND_SIGNALED) ||
	    status != IB_WC_SUCCESS) {
		struct vrdma_cqe cqe = {
			.wr_id = wqe->wr_id,
			.status = status,
			.opcode = vrdma_wc_opcode(qp, wqe->opcode),
			.byte_len = swqe->length,
			.qp_num = qp->ibqp.qp_num,
		};

		if (vrdma_cq_post(qp->scq, &cqe, false))
			status = IB_WC_GENERAL_ERR;
	}
out:
	if (status == IB_WC_SUCCESS || qp->state == IB_QPS_ERR)
		return;
	if (vrdma_qp_is_rc(qp) || status == IB_WC_GENERAL_ERR)
		vrdma_qp_error(qp, status == IB_WC_GENERAL_ERR ?
				   IB_EVENT_QP_FATAL : 0);
	else
		vrdma_qp_sq_error(qp);
}

/**
 * vrdma_flush_sq() - complete every WQE not completed with a flush error
 * @qp: the QP, engines owned, in the error state
 *
 * Includes WQEs posted but not yet copied out of the ring: only their
 * wr_id and opcode are read from there.  The kernel's own send work
 * completes in tm.c.
 */
void vrdma_flush_sq(struct vrdma_qp *qp)
{
	struct vrdma_queue *q = &qp->sq;
	u32 prod;

	vrdma_qp_assert_owned(qp);

	/* Flushing is done once prod is read: WQEs after it need a doorbell. */
	vrdma_sq_want_doorbell(qp);
	/* Pairs with the provider's store-release of prod. */
	prod = smp_load_acquire(&q->ring->prod);

	/* A garbage producer index: flush what we know of. */
	if (prod - q->kidx > q->num_entries ||
	    prod - q->kidx < qp->req.ring_fetch - q->kidx)
		prod = qp->req.ring_fetch;

	/* Copied out already: the send sequence, in order. */
	while (qp->req.head != qp->req.fetch) {
		struct vrdma_swqe *swqe = vrdma_swqe_at(qp, qp->req.head);
		struct vrdma_cqe cqe = {
			.wr_id = swqe->wqe->wr_id,
			.status = IB_WC_WR_FLUSH_ERR,
			.opcode = vrdma_wc_opcode(qp, swqe->wqe->opcode),
			.qp_num = qp->ibqp.qp_num,
		};

		qp->req.head++;
		if (swqe->kind != VRDMA_SWQE_USER) {
			vrdma_tm_swqe_done(qp, swqe, IB_WC_WR_FLUSH_ERR);
			continue;
		}
		vrdma_queue_consume(q, 1);
		vrdma_cq_post(qp->scq, &cqe, false);
	}
	/* Still only in the ring. */
	while (q->kidx != prod) {
		struct vrdma_send_wqe *w = vrdma_queue_slot(q, q->kidx);
		struct vrdma_cqe cqe = {
			.wr_id = READ_ONCE(w->wr_id),
			.status = IB_WC_WR_FLUSH_ERR,
			.opcode = vrdma_wc_opcode(qp, READ_ONCE(w->opcode)),
			.qp_num = qp->ibqp.qp_num,
		};

		vrdma_queue_consume(q, 1);
		vrdma_cq_post(qp->scq, &cqe, false);
	}
	qp->req.ring_fetch = q->kidx;
	qp->req.fetch = qp->req.head;
	qp->req.cur = qp->req.head;
	qp->req.offset = 0;
	qp->req.rd_atomic = 0;
}

/**
 * vrdma_retrans_arm() - (re)start or stop the retransmission timer
 * @qp: the QP, engines owned
 *
 * Runs whenever requests are sent or acknowledged: the timer measures how
 * long the oldest unacknowledged request has gone without progress.  A
 * timeout attribute of 0 means wait forever.
 */
void vrdma_retrans_arm(struct vrdma_qp *qp)
{
	u8 t = qp->attr.timeout;

	vrdma_qp_assert_owned(qp);

	if (!vrdma_req_outstanding(qp) || qp->req.rnr_wait || !t ||
	    qp->state == IB_QPS_ERR) {
		del_timer(&qp->retrans_timer);
		return;
	}
	/* IBA: 4.096 us * 2^timeout. */
	mod_timer(&qp->retrans_timer,
		  jiffies + usecs_to_jiffies((4096ULL << t) / 1000) + 1);
}

/**
 * vrdma_timed_out() - the retransmission timer fired: go back
 * @qp: the QP, engines owned
 *
 * The oldest request, or its ACK, was lost.  Go back to it and send
 * everything again, at most retry_cnt times in a row.
 */
void vrdma_timed_out(struct vrdma_qp *qp)
{
	vrdma_qp_assert_owned(qp);

	qp->req.timed_out = false;
	/* Acknowledged meanwhile, or progress re-armed the timer since. */
	if (!vrdma_req_outstanding(qp) || qp->req.rnr_wait ||
	    timer_pending(&qp->retrans_timer))
		return;
	vrdma_count(qp->vdev, VRDMA_CNT_TIMEOUTS);
	vrdma_retry(qp, qp->req.una, true);
}
