// SPDX-License-Identifier: GPL-2.0
/*
 * XRC, the extended reliable connected transport: one connection per pair
 * of processes' domains instead of per pair of processes.
 *
 * An XRC domain (XRCD) groups XRC SRQs and XRC target QPs; ib_core shares
 * it between processes through a file.  An initiator QP (IB_QPT_XRC_INI)
 * is an RC send queue whose every WQE names an SRQ at the target, by the
 * number that SRQ was given here (vrdma_send_wqe.xrc_remote_srqn); each
 * request packet carries it in an XRCETH.  A target QP (IB_QPT_XRC_TGT)
 * has no queues, CQs or PD of its own: it is an RC responder that takes,
 * for each request, the SRQ the XRCETH names -- which must belong to its
 * XRCD -- and with it the receive WQE, the PD its keys are checked
 * against, and the CQ its completion goes to (vrdma_xrc_bind()).  The
 * transport is RC's, in the XRC opcode range (opcode.c).
 *
 * A target QP keeps the SRQ it last used, referenced, until a request
 * names another, so that a stream of messages to one SRQ looks it up
 * once.  An SRQ may be destroyed while target QPs hold it: destroy takes
 * it out of the number table, then visits its XRCD's target QPs and takes
 * it from those that hold it, with the receive WQE they were filling (it
 * was the SRQ's, and goes with it, without a completion); a request that
 * names it later is refused.
 */
#include "vrdma.h"
#include "pkt.h"

/**
 * vrdma_alloc_xrcd() - create an XRC domain (ibv_open_xrcd)
 * @ibxrcd: ib_core's XRCD, embedded in ours
 * @udata: the request, struct vrdma_uverbs_req (vrdma_udata_check()); NULL
 *	for a kernel consumer
 *
 * Return: 0, or what vrdma_udata_check() refuses.
 */
int vrdma_alloc_xrcd(struct ib_xrcd *ibxrcd, struct ib_udata *udata)
{
	struct vrdma_xrcd *xrcd = to_vxrcd(ibxrcd);
	int ret;

	ret = vrdma_udata_check(ibxrcd->device, udata, __func__);
	if (ret)
		return ret;
	mutex_init(&xrcd->lock);
	INIT_LIST_HEAD(&xrcd->tgt_qps);
	return 0;
}

/**
 * vrdma_dealloc_xrcd() - destroy an XRC domain
 * @ibxrcd: the XRCD; ib_core keeps it while SRQs or target QPs use it
 * @udata: unused
 *
 * Return: 0
 */
int vrdma_dealloc_xrcd(struct ib_xrcd *ibxrcd, struct ib_udata *udata)
{
	struct vrdma_xrcd *xrcd = to_vxrcd(ibxrcd);

	WARN_ON(!list_empty(&xrcd->tgt_qps));
	mutex_destroy(&xrcd->lock);
	return 0;
}

/**
 * vrdma_xrc_dev_init() - the device's table of XRC SRQ numbers
 * @vdev: the device being created
 *
 * Its lock is irq-safe as the QP table's: a lookup may come from any
 * context the receive path runs in.  Initialised here, it has a lockdep
 * class of its own.
 */
void vrdma_xrc_dev_init(struct vrdma_dev *vdev)
{
	xa_init_flags(&vdev->srq_xa, XA_FLAGS_ALLOC1 | XA_FLAGS_LOCK_IRQ);
}

void vrdma_xrc_dev_fini(struct vrdma_dev *vdev)
{
	WARN_ON(!xa_empty(&vdev->srq_xa));
	xa_destroy(&vdev->srq_xa);
}

static void vrdma_xrc_srq_put(struct vrdma_srq *srq)
{
	if (refcount_dec_and_test(&srq->refs))
		complete(&srq->done);
}

/* The XRC SRQ numbered @srqn, referenced, or NULL. */
static struct vrdma_srq *vrdma_xrc_srq_get(struct vrdma_dev *vdev, u32 srqn)
{
	struct vrdma_srq *srq;
	unsigned long flags;

	xa_lock_irqsave(&vdev->srq_xa, flags);
	srq = xa_load(&vdev->srq_xa, srqn);
	if (srq && !refcount_inc_not_zero(&srq->refs))
		srq = NULL;
	xa_unlock_irqrestore(&vdev->srq_xa, flags);
	return srq;
}

/**
 * vrdma_xrc_srq_add() - number a new XRC SRQ
 * @vdev: its device
 * @srq: the SRQ, complete but for its number
 *
 * The number is reserved; requests find the SRQ by it only once
 * vrdma_xrc_srq_publish() has been called.
 *
 * Return: 0 with srq->srqn and ibsrq.ext.xrc.srq_num set, or -ENOMEM when
 * every number is taken.
 */
int vrdma_xrc_srq_add(struct vrdma_dev *vdev, struct vrdma_srq *srq)
{
	u32 srqn;
	int ret;

	refcount_set(&srq->refs, 1);
	init_completion(&srq->done);
	ret = xa_alloc_cyclic_irq(&vdev->srq_xa, &srqn, NULL,
				  XA_LIMIT(1, VRDMA_XRCETH_SRQN_MASK),
				  &vdev->srq_next, GFP_KERNEL);
	if (ret < 0)
		return ret == -EBUSY ? -ENOMEM : ret;
	srq->srqn = srqn;
	srq->ibsrq.ext.xrc.srq_num = srqn;
	return 0;
}

/**
 * vrdma_xrc_srq_publish() - requests may find the SRQ by its number now
 * @srq: numbered by vrdma_xrc_srq_add(), its creation complete
 */
void vrdma_xrc_srq_publish(struct vrdma_srq *srq)
{
	xa_store_irq(&to_vdev(srq->ibsrq.device)->srq_xa, srq->srqn, srq,
		     GFP_KERNEL);
}

/*
 * Take @qp's SRQ from it.  The receive WQE it was filling belongs to the
 * SRQ, and a message that began in it cannot go on elsewhere: the next
 * packet of that message is out of sequence.
 */
static void vrdma_xrc_unbind(struct vrdma_qp *qp)
{
	if (!qp->srq)
		return;
	if (qp->rwqe.valid) {
		qp->rwqe.valid = false;
		qp->resp.opcode = VRDMA_NO_OPCODE;
	}
	vrdma_xrc_srq_put(qp->srq);
	qp->srq = NULL;
	qp->pd = NULL;
	qp->rcq = NULL;
}

/**
 * vrdma_xrc_srq_del() - make an XRC SRQ unreachable before it is destroyed
 * @srq: the SRQ
 *
 * Out of the number table first, so that no request finds it any more;
 * then taken from the target QPs that hold it; then every lookup still
 * running has ended.
 *
 * Context: process; takes the XRCD's lock, then each target QP's.
 */
void vrdma_xrc_srq_del(struct vrdma_srq *srq)
{
	struct vrdma_xrcd *xrcd = to_vxrcd(srq->ibsrq.ext.xrc.xrcd);
	struct vrdma_dev *vdev = to_vdev(srq->ibsrq.device);
	struct vrdma_qp *qp;

	xa_erase_irq(&vdev->srq_xa, srq->srqn);
	mutex_lock(&xrcd->lock);
	list_for_each_entry(qp, &xrcd->tgt_qps, xrc_entry) {
		vrdma_qp_lock(qp);
		if (qp->srq == srq)
			vrdma_xrc_unbind(qp);
		vrdma_qp_unlock(qp);
	}
	mutex_unlock(&xrcd->lock);
	vrdma_xrc_srq_put(srq);
	wait_for_completion(&srq->done);
}

/**
 * vrdma_xrc_tgt_add() - a new XRC target QP joins its XRCD
 * @qp: the QP, not yet reachable
 * @ibxrcd: its XRCD
 */
void vrdma_xrc_tgt_add(struct vrdma_qp *qp, struct ib_xrcd *ibxrcd)
{
	struct vrdma_xrcd *xrcd = to_vxrcd(ibxrcd);

	qp->xrcd = xrcd;
	mutex_lock(&xrcd->lock);
	list_add_tail(&qp->xrc_entry, &xrcd->tgt_qps);
	mutex_unlock(&xrcd->lock);
}

/**
 * vrdma_xrc_tgt_del() - an XRC target QP being destroyed lets go of its
 *	XRCD and of the SRQ it holds
 * @qp: the QP, out of the QP table and stopped
 */
void vrdma_xrc_tgt_del(struct vrdma_qp *qp)
{
	struct vrdma_xrcd *xrcd = qp->xrcd;

	mutex_lock(&xrcd->lock);
	list_del(&qp->xrc_entry);
	mutex_unlock(&xrcd->lock);
	vrdma_qp_lock(qp);
	vrdma_xrc_unbind(qp);
	vrdma_qp_unlock(qp);
}

/**
 * vrdma_xrc_tgt_reset() - an XRC target QP to RESET lets go of its SRQ
 * @qp: the QP, locked
 */
void vrdma_xrc_tgt_reset(struct vrdma_qp *qp)
{
	vrdma_qp_assert_locked(qp);
	vrdma_xrc_unbind(qp);
}

/*
 * Inside a message (after its FIRST, before its LAST), which went to the
 * SRQ the target QP holds.
 */
static bool vrdma_xrc_mid_message(struct vrdma_qp *qp)
{
	u32 prev = vrdma_opcode[qp->resp.opcode].mask;

	return (prev & (VRDMA_OPF_FIRST | VRDMA_OPF_MIDDLE)) &&
	       !(prev & VRDMA_OPF_LAST);
}

/**
 * vrdma_xrc_bind() - an XRC target QP takes the SRQ a request names
 * @qp: the target QP, engines owned in process context
 * @skb: an XRC request (its XRCETH is there: the receive path checked
 *	the header length of its opcode)
 *
 * The SRQ must exist and belong to the QP's XRCD; the packets of one
 * message must all name the SRQ its first named, and a READ being answered
 * keeps its SRQ (its PD checks the key of every response).  The QP's SRQ,
 * PD (for
 * the keys of RDMA requests and of the SRQ's receive WQEs) and receive CQ
 * are then that SRQ's, its own, and the one it was created with.
 *
 * Return: true if the request may go on with them.
 */
bool vrdma_xrc_bind(struct vrdma_qp *qp, struct sk_buff *skb)
{
	struct vrdma_xrceth *xrceth = vrdma_ext(skb, VRDMA_OPF_XRCETH);
	u32 srqn = be32_to_cpu(xrceth->srqn) & VRDMA_XRCETH_SRQN_MASK;
	struct vrdma_srq *srq;

	vrdma_qp_assert_locked(qp);

	if (qp->srq && qp->srq->srqn == srqn)
		return true;
	if (qp->rwqe.valid || vrdma_xrc_mid_message(qp) ||
	    qp->resp.read_active)
		return false;
	srq = vrdma_xrc_srq_get(qp->vdev, srqn);
	if (!srq)
		return false;
	if (srq->ibsrq.ext.xrc.xrcd != &qp->xrcd->ibxrcd) {
		vrdma_xrc_srq_put(srq);
		return false;
	}
	vrdma_xrc_unbind(qp);
	qp->srq = srq;
	qp->pd = to_vpd(srq->ibsrq.pd);
	qp->rcq = to_vcq(srq->ibsrq.ext.cq);
	return true;
}
