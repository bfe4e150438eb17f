// SPDX-License-Identifier: GPL-2.0
/*
 * Shared receive queues.
 *
 * An SRQ is a receive ring like a QP's RQ, shared with the process in the
 * same way (ibv_post_srq_recv writes it, no system call), from which any
 * number of RC QPs take their receive WQEs.  QP tasks run concurrently on
 * all CPUs, so taking a WQE -- reading prod, copying the WQE out, returning
 * the slot -- is done under srq->lock; checking the copy and placing data
 * into it is then the taking QP's business (vrdma_take_rwqe() in rq.c).
 *
 * A WQE belongs to the SRQ until a QP takes it, then to that QP.  A QP that
 * goes to the error state flushes only the WQE it holds, never the SRQ's,
 * and raises IB_EVENT_QP_LAST_WQE_REACHED: it will take no more.
 *
 * modify_srq with IB_SRQ_LIMIT arms a one-shot event: the first QP that
 * takes a WQE and leaves fewer than the limit in the ring raises
 * IB_EVENT_SRQ_LIMIT_REACHED and disarms it.  A ring whose indices make no
 * sense puts the SRQ in error for good (IB_EVENT_SRQ_ERR, once); every QP
 * that then needs a WQE from it goes to the error state.
 */
#include <rdma/uverbs_ioctl.h>

#include "vrdma.h"

static void vrdma_srq_event(struct vrdma_srq *srq, enum ib_event_type type)
{
	struct ib_srq *ibsrq = &srq->ibsrq;
	struct ib_event ev = {
		.device = ibsrq->device,
		.element.srq = ibsrq,
		.event = type,
	};

	if (ibsrq->event_handler)
		ibsrq->event_handler(&ev, ibsrq->srq_context);
}

/**
 * vrdma_create_srq() - create an SRQ with a ring the process maps, or in
 *	kernel memory for a kernel consumer (posted by vrdma_post_srq_recv())
 * @ibsrq: ib_core's SRQ, embedded in ours
 * @init: type and size; attr.max_wr and attr.max_sge are updated to what
 *	was granted; attr.srq_limit is ignored (the SRQ starts disarmed)
 * @udata: the request, struct vrdma_uverbs_req (vrdma_udata_check()); the
 *	response carries struct vrdma_create_srq_resp; NULL for a
 *	kernel consumer
 *
 * Return: 0, -EOPNOTSUPP for XRC/tag-matching SRQs,
 * -EINVAL for sizes beyond the device's, -ENOMEM past max_srq.
 */
int vrdma_create_srq(struct ib_srq *ibsrq, struct ib_srq_init_attr *init,
		     struct ib_udata *udata)
{
	struct vrdma_dev *vdev = to_vdev(ibsrq->device);
	struct vrdma_srq *srq = to_vsrq(ibsrq);
	struct vrdma_create_srq_resp resp = {};
	struct ib_srq_attr *attr = &init->attr;
	struct vrdma_ucontext *uc;
	u32 n, stride;
	int ret;

	ret = vrdma_udata_check(ibsrq->device, udata, __func__);
	if (ret)
		return ret;
	if (init->srq_type != IB_SRQT_BASIC)
		return -EOPNOTSUPP;
	if (attr->max_wr > vdev->attr.max_srq_wr ||
	    attr->max_sge > vdev->attr.max_srq_sge)
		return -EINVAL;
	if (udata && udata->outlen < sizeof(resp))
		return -EINVAL;
	uc = udata ? rdma_udata_to_drv_context(udata, struct vrdma_ucontext,
					       ibuc) : NULL;

	if (atomic_inc_return(&vdev->num_srq) > vdev->attr.max_srq) {
		ret = -ENOMEM;
		goto err_count;
	}

	/* The same layout as a QP's RQ: header and SGEs, a power of two. */
	stride = roundup_pow_of_two(VRDMA_RECV_WQE_HDR_SIZE +
				    max(attr->max_sge, 1U) *
				    sizeof(struct vrdma_sge));
	n = roundup_pow_of_two(max(attr->max_wr, 1U));
	ret = vrdma_queue_init(&srq->queue, uc, n, stride, &resp.rq);
	if (ret)
		goto err_count;
	spin_lock_init(&srq->lock);
	spin_lock_init(&srq->post_lock);
	srq->max_sge = min_t(u32, VRDMA_MAX_SGE,
			     (stride - VRDMA_RECV_WQE_HDR_SIZE) /
			     sizeof(struct vrdma_sge));
	srq->limit = 0;
	srq->error = false;
	attr->max_wr = n;
	attr->max_sge = srq->max_sge;
	attr->srq_limit = 0;

	ret = vrdma_queue_respond(&srq->queue, udata, &resp, sizeof(resp));
	if (ret)
		goto err_count;
	return 0;

err_count:
	atomic_dec(&vdev->num_srq);
	return ret;
}

/**
 * vrdma_modify_srq() - arm or disarm the SRQ limit (ibv_modify_srq)
 * @ibsrq: the SRQ
 * @attr: attr->srq_limit with IB_SRQ_LIMIT; 0 disarms
 * @mask: IB_SRQ_LIMIT
 * @udata: the request, struct vrdma_uverbs_req (vrdma_udata_check()); NULL for a
 *	kernel consumer
 *
 * Return: 0, -EOPNOTSUPP for IB_SRQ_MAX_WR (the mapped ring cannot be
 * resized: IB_DEVICE_SRQ_RESIZE is not claimed), -EINVAL for a limit beyond
 * the ring or unknown attributes.
 */
int vrdma_modify_srq(struct ib_srq *ibsrq, struct ib_srq_attr *attr,
		     enum ib_srq_attr_mask mask, struct ib_udata *udata)
{
	struct vrdma_srq *srq = to_vsrq(ibsrq);
	int ret;

	ret = vrdma_udata_check(ibsrq->device, udata, __func__);
	if (ret)
		return ret;
	if (mask & ~(IB_SRQ_MAX_WR | IB_SRQ_LIMIT))
		return -EINVAL;
	if (mask & IB_SRQ_MAX_WR)
		return -EOPNOTSUPP;
	if (!(mask & IB_SRQ_LIMIT))
		return 0;
	if (attr->srq_limit > srq->queue.num_entries)
		return -EINVAL;

	spin_lock(&srq->lock);
	srq->limit = attr->srq_limit;
	spin_unlock(&srq->lock);
	return 0;
}

/**
 * vrdma_query_srq() - report the SRQ's size and armed limit
 * @ibsrq: the SRQ
 * @attr: filled; srq_limit is 0 when disarmed (or the event has fired)
 *
 * Return: 0
 */
int vrdma_query_srq(struct ib_srq *ibsrq, struct ib_srq_attr *attr)
{
	struct vrdma_srq *srq = to_vsrq(ibsrq);

	attr->max_wr = srq->queue.num_entries;
	attr->max_sge = srq->max_sge;
	spin_lock(&srq->lock);
	attr->srq_limit = srq->limit;
	spin_unlock(&srq->lock);
	return 0;
}

/**
 * vrdma_destroy_srq() - destroy an SRQ no QP uses any more
 * @ibsrq: the SRQ; ib_core refuses (EBUSY) while a QP is attached, and a
 *	destroyed QP's task has stopped for good, so nobody takes WQEs now
 * @udata: unused
 *
 * Return: 0
 */
int vrdma_destroy_srq(struct ib_srq *ibsrq, struct ib_udata *udata)
{
	struct vrdma_srq *srq = to_vsrq(ibsrq);

	vrdma_queue_destroy(&srq->queue);
	atomic_dec(&to_vdev(ibsrq->device)->num_srq);
	return 0;
}

/**
 * vrdma_srq_take() - copy the next WQE out of the SRQ for a QP
 * @srq: the SRQ
 * @wqe: where the WQE goes: room for VRDMA_MAX_SGE SGEs; only the header
 *	and srq->max_sge SGEs are copied, the caller checks num_sge
 *
 * Context: a QP's task.  Consumers on other QPs are serialised by
 * srq->lock, so each WQE goes to exactly one QP.
 * Return: 1 if a WQE was taken, 0 if the SRQ is empty, -EIO if the SRQ is
 * in error (its ring is garbage).
 */
int vrdma_srq_take(struct vrdma_srq *srq, struct vrdma_recv_wqe *wqe)
{
	struct vrdma_queue *q = &srq->queue;
	bool limit = false, error = false;
	u32 count;
	int ret;

	spin_lock(&srq->lock);
	if (srq->error) {
		ret = -EIO;
	} else if (vrdma_queue_count(q, &count)) {
		srq->error = true;
		error = true;
		ret = -EIO;
	} else if (!count) {
		ret = 0;
	} else {
		/* Copied before it is looked at; the slot is free at once. */
		memcpy(wqe, vrdma_queue_slot(q, q->kidx),
		       VRDMA_RECV_WQE_HDR_SIZE +
		       srq->max_sge * sizeof(struct vrdma_sge));
		vrdma_queue_consume(q, 1);
		if (srq->limit && count - 1 < srq->limit) {
			srq->limit = 0;
			limit = true;
		}
		ret = 1;
	}
	spin_unlock(&srq->lock);

	if (limit)
		vrdma_srq_event(srq, IB_EVENT_SRQ_LIMIT_REACHED);
	if (error)
		vrdma_srq_event(srq, IB_EVENT_SRQ_ERR);
	return ret;
}
