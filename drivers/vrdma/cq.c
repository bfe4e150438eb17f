// SPDX-License-Identifier: GPL-2.0
/*
 * Completion queues.
 *
 * A CQ is a ring of CQEs (struct vrdma_cqe) that the kernel writes and the
 * process reads without a system call: ibv_poll_cq in the provider only
 * looks at the ring.  The kernel enters the picture for notification
 * (ibv_req_notify_cq arms the CQ; the next completion, or the next
 * solicited one, wakes the completion channel) and when the ring is full:
 * a CQE that does not fit is lost, so the CQ is in error and its owner gets
 * IB_EVENT_CQ_ERR.
 */
#include <rdma/uverbs_ioctl.h>

#include "vrdma.h"
#include "trace.h"

static u32 vrdma_cq_entries(int cqe)
{
	return roundup_pow_of_two(cqe + 1);
}

/* The process the ring is shared with, or NULL for a kernel CQ. */
static struct vrdma_ucontext *vrdma_cq_ucontext(struct ib_udata *udata)
{
	if (!udata)
		return NULL;
	return rdma_udata_to_drv_context(udata, struct vrdma_ucontext, ibuc);
}

/**
 * vrdma_create_cq() - create a CQ with room for at least attr->cqe CQEs
 * @ibcq: ib_core's CQ, embedded in ours
 * @attr: size and flags
 * @attrs: holds the udata (compat.h): the request, struct
 *	vrdma_create_cq_req (vrdma_udata_req()), whose cqe_size chooses the
 *	entry: a CQE, or a CQE and its tag-matching part; the response
 *	carries struct vrdma_create_cq_resp
 *
 * Return: 0, -EINVAL for a bad size, -EOPNOTSUPP for flags, -ENOMEM past
 * max_cq.
 */
int vrdma_create_cq(struct ib_cq *ibcq, const struct ib_cq_init_attr *attr,
		    VRDMA_CQ_ATTRS *attrs)
{
	struct ib_udata *udata = vrdma_cq_udata(attrs);
	struct vrdma_dev *vdev = to_vdev(ibcq->device);
	struct vrdma_cq *cq = to_vcq(ibcq);
	struct vrdma_create_cq_resp resp = {};
	struct vrdma_create_cq_req req;
	u32 n, cqe_size = sizeof(struct vrdma_cqe);
	struct vrdma_ucontext *uc;
	int ret;

	ret = vrdma_udata_req(ibcq->device, udata, __func__, &req.hdr,
			      sizeof(req), VRDMA_CREATE_CQ_CQE_SIZE);
	if (ret)
		return ret;
	if (req.hdr.comp_mask & VRDMA_CREATE_CQ_CQE_SIZE) {
		cqe_size = req.cqe_size;
		if (cqe_size != sizeof(struct vrdma_cqe) &&
		    cqe_size != VRDMA_CQE_TM_SIZE)
			return -EINVAL;
	} else if (req.cqe_size) {
		return -EINVAL;
	}
	if (req.reserved) {
		ibdev_dbg(ibcq->device, "%s: reserved field %#x is not zero\n",
			  __func__, req.reserved);
		return -EINVAL;
	}
	if (attr->flags)
		return -EOPNOTSUPP;
	if (attr->cqe < 1 || attr->cqe > vdev->attr.max_cqe)
		return -EINVAL;
	if (udata && udata->outlen < sizeof(resp))
		return -EINVAL;
	uc = vrdma_cq_ucontext(udata);
	if (atomic_inc_return(&vdev->num_cq) > vdev->attr.max_cq) {
		ret = -ENOMEM;
		goto err_count;
	}

	n = vrdma_cq_entries(attr->cqe);
	ret = vrdma_queue_init(&cq->queue, uc, n, cqe_size, &resp.cq);
	if (ret)
		goto err_count;
	spin_lock_init(&cq->lock);
	cq->notify = 0;
	cq->overflowed = false;
	ibcq->cqe = n - 1;

	ret = vrdma_queue_respond(&cq->queue, udata, &resp, sizeof(resp));
	if (ret)
		goto err_count;
	return 0;

err_count:
	atomic_dec(&vdev->num_cq);
	return ret;
}

/**
 * vrdma_destroy_cq() - destroy a CQ no QP uses any more
 * @ibcq: the CQ; ib_core has checked it is unused
 * @udata: unused
 *
 * Return: 0
 */
int vrdma_destroy_cq(struct ib_cq *ibcq, struct ib_udata *udata)
{
	struct vrdma_cq *cq = to_vcq(ibcq);
	struct vrdma_queue q;

	/* "rdma res show cq" may still look at it (restrack.c). */
	spin_lock_irq(&cq->lock);
	q = cq->queue;
	cq->queue.ring = NULL;
	spin_unlock_irq(&cq->lock);
	vrdma_queue_destroy(&q);
	atomic_dec(&to_vdev(ibcq->device)->num_cq);
	return 0;
}

/**
 * vrdma_resize_cq() - move the CQEs not yet polled into a ring of new size
 * @ibcq: the CQ
 * @cqe: the new minimum number of CQEs
 * @udata: the request, struct vrdma_uverbs_req (vrdma_udata_check()); the
 *	response carries struct vrdma_create_cq_resp, the new ring
 *
 * The provider holds its CQ lock across the call, so nobody polls; the new
 * ring starts at index 0 with the pending CQEs in order.
 *
 * Return: 0, -EINVAL if @cqe is out of range or smaller than the number of
 * pending CQEs, or a memory error.
 */
int vrdma_resize_cq(struct ib_cq *ibcq, int cqe, struct ib_udata *udata)
{
	struct vrdma_dev *vdev = to_vdev(ibcq->device);
	struct vrdma_cq *cq = to_vcq(ibcq);
	struct vrdma_create_cq_resp resp = {};
	struct vrdma_ucontext *uc;
	struct vrdma_queue nq, oq;
	u32 pending, cons;
	int ret;

	ret = vrdma_udata_check(ibcq->device, udata, __func__);
	if (ret)
		return ret;
	if (cqe < 1 || cqe > vdev->attr.max_cqe)
		return -EINVAL;
	if (udata && udata->outlen < sizeof(resp))
		return -EINVAL;
	uc = vrdma_cq_ucontext(udata);
	ret = vrdma_queue_init(&nq, uc, vrdma_cq_entries(cqe),
			       cq->queue.entry_size, &resp.cq);
	if (ret)
		return ret;

	spin_lock_irq(&cq->lock);
	cons = READ_ONCE(cq->queue.ring->cons);
	pending = cq->queue.kidx - cons;
	if (pending > cq->queue.num_entries || pending > nq.num_entries - 1) {
		spin_unlock_irq(&cq->lock);
		vrdma_queue_destroy(&nq);
		return -EINVAL;
	}
	vrdma_queue_move(&nq, &cq->queue, cons, pending);
	nq.kidx = pending;
	nq.ring->prod = pending;
	oq = cq->queue;
	cq->queue = nq;
	ibcq->cqe = nq.num_entries - 1;
	spin_unlock_irq(&cq->lock);

	vrdma_queue_destroy(&oq);
	if (udata)
		return ib_copy_to_udata(udata, &resp, sizeof(resp));
	return 0;
}

/**
 * vrdma_req_notify_cq() - arm the CQ for its next (solicited) completion
 * @ibcq: the CQ
 * @flags: IB_CQ_NEXT_COMP or IB_CQ_SOLICITED, maybe with
 *	IB_CQ_REPORT_MISSED_EVENTS
 *
 * Return: 1 if IB_CQ_REPORT_MISSED_EVENTS was asked and CQEs are pending,
 * else 0.
 */
int vrdma_req_notify_cq(struct ib_cq *ibcq, enum ib_cq_notify_flags flags)
{
	struct vrdma_cq *cq = to_vcq(ibcq);
	unsigned long irqflags;
	int ret = 0;

	trace_vrdma_cq_arm(cq, flags);
	spin_lock_irqsave(&cq->lock, irqflags);
	/* "Next completion" includes solicited ones: it wins. */
	if (cq->notify != IB_CQ_NEXT_COMP)
		cq->notify = flags & IB_CQ_SOLICITED_MASK;
	if ((flags & IB_CQ_REPORT_MISSED_EVENTS) &&
	    cq->queue.kidx != READ_ONCE(cq->queue.ring->cons))
		ret = 1;
	spin_unlock_irqrestore(&cq->lock, irqflags);
	return ret;
}

/**
 * vrdma_cq_post() - write a completion
 * @cq: the CQ
 * @cqe: the completion; copied
 * @solicited: it completes a message sent with the solicited event bit
 *
 * Context: any; the CQ lock is taken with interrupts off.
 * Return: 0, or -ENOSPC if the CQ is full (or was): the CQE is lost, the CQ
 * is in error and IB_EVENT_CQ_ERR has been raised.
 */
int vrdma_cq_post(struct vrdma_cq *cq, const struct vrdma_cqe *cqe,
		  bool solicited)
{
	return vrdma_cq_post_tm(cq, cqe, NULL, solicited);
}

/**
 * vrdma_cq_post_tm() - write a completion with its tag-matching part
 * @cq: the CQ
 * @cqe: the completion; copied
 * @tm: its tag and TMH app_ctx, or NULL for zeros; written only into a CQ
 *	of VRDMA_CQE_TM_SIZE entries (IBV_WC_EX_WITH_TM_INFO), the others
 *	have no room and their owner no way to read it
 * @solicited: as vrdma_cq_post()
 *
 * Context and return: as vrdma_cq_post().
 */
int vrdma_cq_post_tm(struct vrdma_cq *cq, const struct vrdma_cqe *cqe,
		     const struct vrdma_cqe_tm *tm, bool solicited)
{
	static const struct vrdma_cqe_tm no_tm;
	struct ib_cq *ibcq = &cq->ibcq;
	bool notify = false, overflow = false;
	unsigned long flags;

	spin_lock_irqsave(&cq->lock, flags);
	if (cq->overflowed) {
		spin_unlock_irqrestore(&cq->lock, flags);
		return -ENOSPC;
	}
	if (vrdma_queue_full(&cq->queue)) {
		cq->overflowed = true;
		overflow = true;
	} else {
		void *slot = vrdma_queue_slot(&cq->queue, cq->queue.kidx);

		memcpy(slot, cqe, sizeof(*cqe));
		if (cq->queue.entry_size >= VRDMA_CQE_TM_SIZE)
			memcpy(slot + sizeof(*cqe), tm ? tm : &no_tm,
			       sizeof(*tm));
		vrdma_queue_produce(&cq->queue);
		trace_vrdma_cqe(cq, cqe);
		if (cq->notify == IB_CQ_NEXT_COMP ||
		    (cq->notify == IB_CQ_SOLICITED && solicited)) {
			cq->notify = 0;
			notify = true;
		}
	}
	spin_unlock_irqrestore(&cq->lock, flags);

	if (overflow) {
		struct ib_event ev = {
			.device = ibcq->device,
			.element.cq = ibcq,
			.event = IB_EVENT_CQ_ERR,
		};

		vrdma_count(to_vdev(ibcq->device), VRDMA_CNT_CQ_OVERFLOW);
		if (ibcq->event_handler)
			ibcq->event_handler(&ev, ibcq->cq_context);
		return -ENOSPC;
	}
	if (notify)
		trace_vrdma_cq_notify(cq, solicited ? IB_CQ_SOLICITED : 0);
	if (notify && ibcq->comp_handler)
		ibcq->comp_handler(ibcq, ibcq->cq_context);
	return 0;
}
