// SPDX-License-Identifier: GPL-2.0
/*
 * Receive WQEs: the responder takes them from the QP's RQ or its SRQ, one
 * per message, and the error state flushes them.
 *
 * A WQE is copied out of the shared ring before it is looked at, and its
 * slot is returned at once; the copy (qp->rwqe) is what the responder
 * fills.
 */
#include "vrdma.h"
#include "trace.h"

/* Copy the next WQE out of the QP's own RQ: as vrdma_srq_take(). */
static int vrdma_rq_take(struct vrdma_qp *qp, struct vrdma_recv_wqe *wqe)
{
	struct vrdma_queue *q = &qp->rq;
	u32 count;

	if (vrdma_queue_count(q, &count))
		return -EIO;
	if (!count)
		return 0;
	memcpy(wqe, vrdma_queue_slot(q, q->kidx),
	       VRDMA_RECV_WQE_HDR_SIZE +
	       qp->max_recv_sge * sizeof(struct vrdma_sge));
	vrdma_queue_consume(q, 1);
	return 1;
}

/**
 * vrdma_take_rwqe() - copy the next receive WQE out of the RQ or the SRQ
 * @qp: the QP, engines owned, mutex held; qp->rwqe must be free
 *
 * The responder's one way to a receive WQE, whether the QP has an RQ or
 * shares an SRQ.  The WQE is copied before it is looked at and its slot is
 * returned at once: the process may reuse it while the message is being
 * received.  A malformed WQE (more SGEs than granted) completes with
 * IB_WC_LOC_QP_OP_ERR; it and a garbage ring put the QP in error.
 *
 * Return: true if a WQE was taken, false if none is posted (RNR) or the QP
 * is now in error.
 */
bool vrdma_take_rwqe(struct vrdma_qp *qp)
{
	struct vrdma_rwqe *rw = &qp->rwqe;
	u32 max_sge, i;
	u64 total = 0;
	int ret;

	vrdma_qp_assert_locked(qp);

	if (qp->srq) {
		ret = vrdma_srq_take(qp->srq, rw->wqe);
		max_sge = qp->srq->max_sge;
		/* The SRQ's WQEs are checked against the SRQ's PD. */
		rw->pd = to_vpd(qp->srq->ibsrq.pd);
	} else {
		ret = vrdma_rq_take(qp, rw->wqe);
		max_sge = qp->max_recv_sge;
		rw->pd = qp->pd;
	}
	if (ret <= 0) {
		if (ret) {
			vrdma_count(qp->vdev, VRDMA_CNT_BAD_WQE);
			vrdma_qp_error(qp, IB_EVENT_QP_FATAL);
		}
		return false;
	}

	/* The copy is ours now: check it. */
	if (rw->wqe->num_sge > max_sge) {
		struct vrdma_cqe cqe = {
			.wr_id = rw->wqe->wr_id,
			.status = IB_WC_LOC_QP_OP_ERR,
			.opcode = IB_WC_RECV,
			.qp_num = qp->ibqp.qp_num,
		};

		vrdma_count(qp->vdev, VRDMA_CNT_BAD_WQE);
		vrdma_cq_post(qp->rcq, &cqe, false);
		vrdma_qp_error(qp, IB_EVENT_QP_FATAL);
		return false;
	}
	for (i = 0; i < rw->wqe->num_sge; i++)
		total += rw->wqe->sge[i].length;
	rw->length = min_t(u64, total, U32_MAX);
	rw->offset = 0;
	rw->valid = true;
	rw->tm = VRDMA_TM_NONE;
	rw->tm_skip = 0;
	trace_vrdma_rq_wqe(qp);
	return true;
}

/**
 * vrdma_flush_rq() - complete every posted receive WQE with a flush error
 * @qp: the QP, engines owned, in the error state
 *
 * With an SRQ only the WQE the QP holds is flushed: the SRQ's WQEs belong
 * to the SRQ and other QPs take them.
 */
void vrdma_flush_rq(struct vrdma_qp *qp)
{
	struct vrdma_queue *q = &qp->rq;
	struct vrdma_cqe cqe = {
		.status = IB_WC_WR_FLUSH_ERR,
		.opcode = IB_WC_RECV,
		.qp_num = qp->ibqp.qp_num,
	};
	u32 count;

	vrdma_qp_assert_owned(qp);

	if (qp->rwqe.valid) {
		cqe.wr_id = qp->rwqe.wqe->wr_id;
		qp->rwqe.valid = false;
		if (qp->rwqe.tm)
			vrdma_tm_complete(qp, &cqe, false);
		else
			vrdma_cq_post(qp->rcq, &cqe, false);
	}
	if (qp->srq)
		return;
	if (vrdma_queue_count(q, &count))
		count = 0;	/* garbage index: nothing can be trusted */
	while (count--) {
		struct vrdma_recv_wqe *w = vrdma_queue_slot(q, q->kidx);

		cqe.wr_id = READ_ONCE(w->wr_id);
		vrdma_queue_consume(q, 1);
		vrdma_cq_post(qp->rcq, &cqe, false);
	}
}
