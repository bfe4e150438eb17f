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
 *
 * An XRC SRQ (IB_SRQT_XRC) is the same ring, with a number by which XRC
 * requests name it, an XRCD and a CQ of its own; it is taken by XRC target
 * QPs, one message at a time (xrc.c).
 *
 * modify_srq with IB_SRQ_MAX_WR resizes the ring (IB_DEVICE_SRQ_RESIZE): a
 * new ring is allocated, the WQEs not taken yet move to its start in their
 * order, and the process maps it in place of the old one (struct
 * vrdma_modify_srq_req).  The SRQ lock keeps QPs from taking WQEs
 * meanwhile, and the producer -- the provider, or a kernel consumer under
 * the post lock -- does not post during the call.
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
 *	was granted; attr.srq_limit is ignored (the SRQ starts disarmed); an
 *	XRC SRQ's XRCD and CQ (ib_core has set them in @ibsrq too)
 * @udata: the request, struct vrdma_create_srq_req (vrdma_udata_req()),
 *	whose max_ops a tag-matching SRQ needs; the response carries struct
 *	vrdma_create_srq_resp; NULL for a kernel consumer
 *
 * Return: 0, -EOPNOTSUPP for a kernel consumer's tag-matching SRQ (no
 * kernel verb posts its operations), -EINVAL for sizes beyond the device's
 * and an XRC SRQ without XRCD or CQ, -ENOMEM past max_srq.
 */
int vrdma_create_srq(struct ib_srq *ibsrq, struct ib_srq_init_attr *init,
		     struct ib_udata *udata)
{
	struct vrdma_dev *vdev = to_vdev(ibsrq->device);
	struct vrdma_srq *srq = to_vsrq(ibsrq);
	struct vrdma_create_srq_resp resp = {};
	struct ib_srq_attr *attr = &init->attr;
	struct vrdma_create_srq_req req;
	struct vrdma_ucontext *uc;
	u32 n, stride;
	bool tm;
	int ret;

	ret = vrdma_udata_req(ibsrq->device, udata, __func__, &req.hdr,
			      sizeof(req), VRDMA_CREATE_SRQ_TM);
	if (ret)
		return ret;
	if (init->srq_type != IB_SRQT_BASIC && init->srq_type != IB_SRQT_XRC &&
	    (init->srq_type != IB_SRQT_TM || !udata))
		return -EOPNOTSUPP;
	/* max_ops for a tag-matching SRQ, and for no other. */
	tm = init->srq_type == IB_SRQT_TM;
	if (tm != !!(req.hdr.comp_mask & VRDMA_CREATE_SRQ_TM) ||
	    (!tm && req.max_ops) || req.reserved) {
		ibdev_dbg(ibsrq->device,
			  "%s: max_ops %u or reserved %#x not as the type says\n",
			  __func__, req.max_ops, req.reserved);
		return -EINVAL;
	}
	if (init->srq_type == IB_SRQT_XRC &&
	    (!init->ext.xrc.xrcd || !init->ext.cq))
		return -EINVAL;
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

	srq->srqn = 0;
	srq->tm = NULL;
	if (init->srq_type == IB_SRQT_TM) {
		ret = vrdma_tm_srq_create(srq, init, req.max_ops);
		if (ret)
			goto err_queue;
	}
	if (init->srq_type == IB_SRQT_XRC) {
		ret = vrdma_xrc_srq_add(vdev, srq);
		if (ret)
			goto err_queue;
		resp.srqn = srq->srqn;
	}
	ret = vrdma_queue_respond(&srq->queue, udata, &resp, sizeof(resp));
	if (ret)
		goto err_xrc;
	if (srq->srqn)
		vrdma_xrc_srq_publish(srq);
	return 0;

err_xrc:
	if (srq->srqn)
		vrdma_xrc_srq_del(srq);
	vrdma_tm_srq_destroy(srq);
	goto err_count;
err_queue:
	vrdma_queue_destroy(&srq->queue);
err_count:
	atomic_dec(&vdev->num_srq);
	return ret;
}

/*
 * Move the WQEs not taken yet into a new ring of at least @max_wr entries
 * (1 to max_srq_wr) and, with @limit, set the limit with it.  With @uc, the new ring's mmap
 * details go to @info (user memory) before the switch, so that a process
 * that cannot be told of the new ring keeps the old one.
 */
static int vrdma_srq_resize(struct vrdma_srq *srq, struct vrdma_ucontext *uc,
			    u32 max_wr, struct vrdma_ring_info __user *info,
			    const u32 *limit)
{
	struct vrdma_ring_info ri = {};
	struct vrdma_queue nq, oq = {};
	u32 n = roundup_pow_of_two(max_wr);
	unsigned long flags;
	u32 count;
	int ret;

	ret = vrdma_queue_init(&nq, uc, n, srq->queue.entry_size, &ri);
	if (ret)
		return ret;
	if (uc && copy_to_user(info, &ri, sizeof(ri))) {
		vrdma_queue_destroy(&nq);
		return -EFAULT;
	}

	spin_lock_irqsave(&srq->post_lock, flags);
	spin_lock(&srq->lock);
	if (srq->error || vrdma_queue_count(&srq->queue, &count)) {
		ret = -EIO;	/* its ring is garbage: nothing to keep */
	} else if (count > n || (!limit && srq->limit > n)) {
		ret = -EINVAL;
	} else {
		vrdma_queue_move(&nq, &srq->queue, srq->queue.kidx, count);
		/* prod before anyone can see the ring: nobody maps it yet. */
		nq.ring->prod = count;
		oq = srq->queue;
		srq->queue = nq;
		if (limit)
			srq->limit = *limit;
	}
	spin_unlock(&srq->lock);
	spin_unlock_irqrestore(&srq->post_lock, flags);

	vrdma_queue_destroy(ret ? &nq : &oq);
	return ret;
}

/**
 * vrdma_modify_srq() - resize the SRQ, arm or disarm its limit
 *	(ibv_modify_srq)
 * @ibsrq: the SRQ
 * @attr: attr->max_wr with IB_SRQ_MAX_WR: the new minimum size, which must
 *	hold the WQEs not taken yet and an armed limit; attr->srq_limit with
 *	IB_SRQ_LIMIT, 0 disarms (checked against the new size when both are
 *	given)
 * @mask: IB_SRQ_MAX_WR, IB_SRQ_LIMIT
 * @udata: the request, struct vrdma_modify_srq_req (vrdma_udata_req()),
 *	whose ring_info a resize needs; NULL for a kernel consumer
 *
 * Return: 0; -EINVAL for unknown attributes, a size of 0, beyond the
 * device's or too small, a limit beyond the ring, a user resize without
 * ring_info or a ring_info not announced; -EIO if the SRQ is in error;
 * -EFAULT if ring_info cannot be written; -ENOMEM.  On an error nothing
 * has changed.
 */
int vrdma_modify_srq(struct ib_srq *ibsrq, struct ib_srq_attr *attr,
		     enum ib_srq_attr_mask mask, struct ib_udata *udata)
{
	struct vrdma_srq *srq = to_vsrq(ibsrq);
	struct vrdma_modify_srq_req req;
	struct vrdma_ucontext *uc;
	u32 limit = 0, size;
	int ret;

	ret = vrdma_udata_req(ibsrq->device, udata, __func__, &req.hdr,
			      sizeof(req), VRDMA_MODIFY_SRQ_RING_INFO);
	if (ret)
		return ret;
	if (!(req.hdr.comp_mask & VRDMA_MODIFY_SRQ_RING_INFO) &&
	    req.ring_info) {
		ibdev_dbg(ibsrq->device,
			  "%s: ring_info set, not announced\n", __func__);
		return -EINVAL;
	}
	if (mask & ~(IB_SRQ_MAX_WR | IB_SRQ_LIMIT))
		return -EINVAL;
	uc = udata ? rdma_udata_to_drv_context(udata, struct vrdma_ucontext,
					       ibuc) : NULL;
	if (mask & IB_SRQ_MAX_WR) {
		if (uc && !(req.hdr.comp_mask & VRDMA_MODIFY_SRQ_RING_INFO)) {
			ibdev_dbg(ibsrq->device,
				  "%s: a resize without ring_info\n", __func__);
			return -EINVAL;
		}
		if (!attr->max_wr ||
		    attr->max_wr > to_vdev(ibsrq->device)->attr.max_srq_wr)
			return -EINVAL;
		size = roundup_pow_of_two(attr->max_wr);
	} else {
		size = srq->queue.num_entries;
	}
	if (mask & IB_SRQ_LIMIT) {
		limit = attr->srq_limit;
		if (limit > size)
			return -EINVAL;
	}

	if (mask & IB_SRQ_MAX_WR)
		return vrdma_srq_resize(srq, uc, attr->max_wr,
					u64_to_user_ptr(req.ring_info),
					mask & IB_SRQ_LIMIT ? &limit : NULL);
	if (mask & IB_SRQ_LIMIT) {
		spin_lock(&srq->lock);
		srq->limit = limit;
		spin_unlock(&srq->lock);
	}
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

	attr->max_sge = srq->max_sge;
	spin_lock(&srq->lock);
	attr->max_wr = srq->queue.num_entries;
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

	if (srq->srqn)
		vrdma_xrc_srq_del(srq);
	vrdma_tm_srq_destroy(srq);
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
