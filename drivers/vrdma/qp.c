// SPDX-License-Identifier: GPL-2.0
/*
 * Queue pairs: creation, the state machine (modify_qp), query, destroy,
 * and the doorbells of post_send and post_recv.
 *
 * A QP is a send queue and a receive queue (or an SRQ), each a ring shared
 * with the process.  XRC QPs have half of that: an initiator only the send
 * queue, a target neither (xrc.c).  Which context runs its engines, and when, is the
 * scheduler's (sched.c); the receive WQEs are taken and flushed in rq.c.
 */
#include <rdma/ib_cache.h>
#include <rdma/uverbs_ioctl.h>

#include "vrdma.h"
#include "trace.h"
#include "pkt.h"

/**
 * vrdma_qp_get() - find a QP by number for the receive path
 * @vdev: the device the packet arrived on
 * @qpn: destination QPN from the packet (untrusted)
 *
 * Under the table lock, not just RCU: ib_core frees the QP with kfree()
 * as soon as vrdma_destroy_qp() returns, with no grace period, so a
 * lookup must never touch a QP that destroy has already taken out of the
 * table.  While a QP is in the table, the table's reference keeps it.
 *
 * Context: any.
 * Return: the QP with a reference (vrdma_qp_put()), or NULL.
 */
struct vrdma_qp *vrdma_qp_get(struct vrdma_dev *vdev, u32 qpn)
{
	struct vrdma_qp *qp;
	unsigned long flags;

	xa_lock_irqsave(&vdev->qp_xa, flags);
	qp = xa_load(&vdev->qp_xa, qpn);
	if (qp && !refcount_inc_not_zero(&qp->refs))
		qp = NULL;
	xa_unlock_irqrestore(&vdev->qp_xa, flags);
	return qp;
}

void vrdma_qp_put(struct vrdma_qp *qp)
{
	if (refcount_dec_and_test(&qp->refs))
		complete(&qp->done);
}

static void vrdma_qp_event(struct vrdma_qp *qp, enum ib_event_type type)
{
	struct ib_qp *ibqp = &qp->ibqp;
	struct ib_event ev = {
		.device = ibqp->device,
		.element.qp = ibqp,
		.event = type,
	};

	if (ibqp->event_handler)
		ibqp->event_handler(&ev, ibqp->qp_context);
}

/**
 * vrdma_qp_error() - move the QP to the error state
 * @qp: the QP, engines owned
 * @event: the affiliated asynchronous event to raise, or 0 for none
 *
 * Every outstanding WQE of the SQ and RQ completes with
 * IB_WC_WR_FLUSH_ERR, in order; WQEs posted later are flushed as they come.
 * A QP on an SRQ flushes only the receive WQE it holds (the others belong
 * to the SRQ) and then raises IB_EVENT_QP_LAST_WQE_REACHED: it takes no
 * more, so its owner may destroy it without losing any.
 */
void vrdma_qp_error(struct vrdma_qp *qp, enum ib_event_type event)
{
	bool entering = qp->state != IB_QPS_ERR;

	vrdma_qp_assert_owned(qp);

	if (entering) {
		trace_vrdma_qp_error(qp, event);
		WRITE_ONCE(qp->state, IB_QPS_ERR);
		/* The state before the rings: see vrdma_kpost_recv(). */
		smp_mb();
		del_timer(&qp->rnr_timer);
		del_timer(&qp->retrans_timer);
		if (event)
			vrdma_qp_event(qp, event);
	}
	vrdma_flush_sq(qp);
	vrdma_flush_rq(qp);
	if (entering && qp->srq)
		vrdma_qp_event(qp, IB_EVENT_QP_LAST_WQE_REACHED);
}

/**
 * vrdma_qp_sq_error() - a send WQE of a UC or UD QP failed: stop the SQ
 * @qp: the QP, engines owned
 *
 * The QP goes to SQE (IBA 10.3.1): the WQEs after the failed one are
 * flushed, and so are those posted later, while receives go on; modify_qp
 * to RTS starts the SQ again.  RC has no such state: its errors are
 * vrdma_qp_error().
 */
void vrdma_qp_sq_error(struct vrdma_qp *qp)
{
	vrdma_qp_assert_owned(qp);

	if (qp->state == IB_QPS_ERR)
		return;
	qp->state = IB_QPS_SQE;
	del_timer(&qp->rnr_timer);
	del_timer(&qp->retrans_timer);
	vrdma_flush_sq(qp);
}

/**
 * vrdma_qp_receives() - whether the QP's receive side takes packets
 * @qp: the QP, engines owned
 *
 * Return: true from RTR on, until ERR; in SQE too (UC, UD).
 */
bool vrdma_qp_receives(struct vrdma_qp *qp)
{
	switch (qp->state) {
	case IB_QPS_RTR:
	case IB_QPS_RTS:
	case IB_QPS_SQD:
	case IB_QPS_SQE:
		return true;
	default:
		return false;
	}
}

/* Round a ring size up to a power of two, at least 1. */
static u32 vrdma_ring_entries(u32 wr)
{
	return roundup_pow_of_two(max(wr, 1U));
}

static int vrdma_qp_check_cap(struct vrdma_dev *vdev, struct ib_qp_cap *cap,
			      bool has_srq)
{
	if (cap->max_send_wr > vdev->attr.max_qp_wr ||
	    cap->max_send_sge > VRDMA_MAX_SGE ||
	    cap->max_inline_data > VRDMA_MAX_INLINE)
		return -EINVAL;
	if (!has_srq && (cap->max_recv_wr > vdev->attr.max_qp_wr ||
			 cap->max_recv_sge > VRDMA_MAX_SGE))
		return -EINVAL;
	return 0;
}

/*
 * Size the rings, allocate them and the kernel's copies of the WQEs.  A QP
 * that receives nothing (an XRC initiator) or sends nothing (an XRC
 * target) gets the missing ring as one empty entry in kernel memory,
 * which nobody posts to: every path that looks at a QP's rings finds them.
 */
static int vrdma_qp_alloc_queues(struct vrdma_qp *qp, struct ib_qp_cap *cap,
				 struct vrdma_ucontext *uc,
				 struct vrdma_create_qp_resp *resp)
{
	bool xrc_ini = qp->ibqp.qp_type == IB_QPT_XRC_INI;
	gfp_t gfp = uc ? VRDMA_GFP_USER : GFP_KERNEL;
	u32 n, stride, i;
	int ret;

	stride = roundup_pow_of_two(VRDMA_SEND_WQE_HDR_SIZE +
				    max(cap->max_send_sge *
					(u32)sizeof(struct vrdma_sge),
					cap->max_inline_data));
	n = vrdma_ring_entries(cap->max_send_wr);
	ret = vrdma_queue_init(&qp->sq, uc, n, stride, &resp->sq);
	if (ret)
		return ret;
	qp->max_send_sge = min_t(u32, VRDMA_MAX_SGE,
				 (stride - VRDMA_SEND_WQE_HDR_SIZE) /
				 sizeof(struct vrdma_sge));
	qp->max_inline = min_t(u32, VRDMA_MAX_INLINE,
			       stride - VRDMA_SEND_WQE_HDR_SIZE);
	cap->max_send_wr = n;
	cap->max_send_sge = qp->max_send_sge;
	cap->max_inline_data = qp->max_inline;

	/*
	 * A QP of a tag-matching SRQ sends rendezvous READs and FINs of its
	 * own (tm.c), beside the SQ's WQEs, whose FIN carries its headers
	 * inline.
	 */
	if (vrdma_srq_is_tm(qp->srq)) {
		n = roundup_pow_of_two(n + 2 * VRDMA_TM_MAX_RNDV);
		stride = max_t(u32, stride, VRDMA_SEND_WQE_HDR_SIZE +
			       max(VRDMA_TM_MAX_SGE * sizeof(struct vrdma_sge),
				   sizeof(struct vrdma_tmh) +
				   sizeof(struct vrdma_rvh)));
	}
	qp->swqe_mask = n - 1;
	qp->swqe = kvcalloc(n, sizeof(*qp->swqe), gfp);
	/*
	 * kmalloc while small: every vmalloc'ed area freed adds to the lazy
	 * purge, whose kernel TLB flush interrupts every CPU.
	 */
	qp->swqe_buf = kvmalloc_array(n, stride, gfp);
	if (!qp->swqe || !qp->swqe_buf)
		return -ENOMEM;
	for (i = 0; i < n; i++)
		qp->swqe[i].wqe = qp->swqe_buf + (size_t)i * stride;

	qp->rwqe.wqe = kmalloc(VRDMA_RECV_WQE_HDR_SIZE +
			       VRDMA_MAX_SGE * sizeof(struct vrdma_sge),
			       gfp);
	if (!qp->rwqe.wqe)
		return -ENOMEM;

	if (qp->srq) {
		cap->max_recv_wr = 0;
		cap->max_recv_sge = 0;
		return 0;
	}
	stride = roundup_pow_of_two(VRDMA_RECV_WQE_HDR_SIZE +
				    max(cap->max_recv_sge, 1U) *
				    sizeof(struct vrdma_sge));
	n = vrdma_ring_entries(cap->max_recv_wr);
	ret = vrdma_queue_init(&qp->rq, xrc_ini ? NULL : uc, n, stride,
			       &resp->rq);
	if (ret)
		return ret;
	if (xrc_ini) {
		memset(&resp->rq, 0, sizeof(resp->rq));
		return 0;
	}
	qp->max_recv_sge = min_t(u32, VRDMA_MAX_SGE,
				 (stride - VRDMA_RECV_WQE_HDR_SIZE) /
				 sizeof(struct vrdma_sge));
	cap->max_recv_wr = n;
	cap->max_recv_sge = qp->max_recv_sge;
	return 0;
}

static void vrdma_qp_free_queues(struct vrdma_qp *qp)
{
	vrdma_queue_destroy(&qp->sq);
	if (!qp->srq)
		vrdma_queue_destroy(&qp->rq);
	kvfree(qp->swqe);
	kvfree(qp->swqe_buf);
	kfree(qp->rwqe.wqe);
	kfree(qp->resp.res);
}

static void vrdma_qp_reset(struct vrdma_qp *qp)
{
	struct vrdma_rd_atomic *res = qp->resp.res;
	u32 res_num = qp->resp.res_num;

	/* Posted WQEs are discarded without completions. */
	if (vrdma_srq_is_tm(qp->srq))
		vrdma_tm_qp_reset(qp);
	vrdma_queue_reset(&qp->sq);
	WRITE_ONCE(qp->sq.ring->no_doorbell, 0);
	if (!qp->srq)
		vrdma_queue_reset(&qp->rq);
	memset(&qp->req, 0, sizeof(qp->req));
	memset(&qp->resp, 0, sizeof(qp->resp));
	/* The responder resources stay allocated, emptied. */
	qp->resp.res = res;
	qp->resp.res_num = res_num;
	vrdma_resp_res_reset(qp);
	qp->resp.opcode = VRDMA_NO_OPCODE;	/* no message in progress */
	qp->req.head = qp->sq.kidx;
	qp->req.fetch = qp->sq.kidx;
	qp->req.ring_fetch = qp->sq.kidx;
	qp->req.cur = qp->sq.kidx;
	qp->rwqe.valid = false;
	del_timer(&qp->rnr_timer);
	del_timer(&qp->retrans_timer);
	skb_queue_purge(&qp->rx);
	if (qp->ibqp.qp_type == IB_QPT_XRC_TGT)
		vrdma_xrc_tgt_reset(qp);
}

/*
 * Whether a QP of @init's type, flags and capabilities can be created
 * for a process (@udata) or for the kernel (see vrdma_create_qp()); the
 * capabilities of the types without an RQ or without rings are set to
 * none.
 */
static int vrdma_qp_check_init(struct vrdma_dev *vdev,
			       struct ib_qp_init_attr *init,
			       struct ib_udata *udata)
{
	if ((init->qp_type != IB_QPT_RC && init->qp_type != IB_QPT_UC &&
	     init->qp_type != IB_QPT_UD && init->qp_type != IB_QPT_XRC_TGT &&
	     (init->qp_type != IB_QPT_GSI || udata) &&
	     (init->qp_type != IB_QPT_XRC_INI || !udata) &&
	     (init->qp_type != IB_QPT_RAW_PACKET || !udata)) ||
	    init->create_flags)
		return -EOPNOTSUPP;
	if (init->qp_type == IB_QPT_GSI && init->port_num != VRDMA_PORT)
		return -EINVAL;
	/* Tag matching is defined for RC only (tm.c). */
	if (init->srq && vrdma_srq_is_tm(to_vsrq(init->srq)) &&
	    init->qp_type != IB_QPT_RC)
		return -EINVAL;
	if (init->qp_type == IB_QPT_XRC_TGT) {
		if (!init->xrcd)
			return -EINVAL;
		memset(&init->cap, 0, sizeof(init->cap));
	} else if (init->qp_type == IB_QPT_XRC_INI) {
		init->cap.max_recv_wr = 0;
		init->cap.max_recv_sge = 0;
	}
	return vrdma_qp_check_cap(vdev, &init->cap, !!init->srq);
}

/**
 * vrdma_create_qp() - create a QP in the RESET state
 * @ibqp: ib_core's QP, embedded in ours
 * @init: type, CQs, SRQ and capabilities; capabilities are updated to what
 *	was granted
 * @udata: the request, struct vrdma_uverbs_req (vrdma_udata_check()); the
 *	response carries struct vrdma_create_qp_resp; NULL for a
 *	kernel consumer's QP, whose rings are in kernel memory (kverbs.c)
 *
 * RC, UC and UD QPs are created for processes and kernel consumers; the
 * GSI QP (QP1, IB_QPT_GSI, which ib_mad creates for the port) only for
 * the kernel, always with number 1.  XRC initiator QPs are created for
 * processes (a kernel work request has no field for the target's SRQ);
 * XRC target QPs by ib_core for an XRCD (@udata NULL, no PD, no CQs).
 * Raw packet QPs (raw.c) only for processes, which ib_core lets create
 * one only with CAP_NET_RAW; their rings are a UD QP's.  One on an
 * indirection table (an RSS QP, wq.c) has none: it only receives, into
 * the table's WQs, from its creation on (in RTR, which modify_qp does not
 * change).
 *
 * Return: 0, -EOPNOTSUPP for QP types and flags not implemented, -EINVAL
 * for capabilities beyond the device's or a target QP without XRCD,
 * -EBUSY for a second GSI QP, -ENOMEM past max_qp.
 */
int vrdma_create_qp(struct ib_qp *ibqp, struct ib_qp_init_attr *init,
		    struct ib_udata *udata)
{
	struct vrdma_dev *vdev = to_vdev(ibqp->device);
	struct vrdma_qp *qp = to_vqp(ibqp);
	struct vrdma_create_qp_resp resp = {};
	struct vrdma_ucontext *uc;
	struct vrdma_rss *rss = NULL;
	u32 qpn;
	int ret;

	if (init->rwq_ind_tbl) {
		/* Its request carries the hash (wq.c). */
		rss = vrdma_rss_create(qp, init, udata);
		if (IS_ERR(rss))
			return PTR_ERR(rss);
		memset(&init->cap, 0, sizeof(init->cap));
	} else {
		ret = vrdma_udata_check(ibqp->device, udata, __func__);
		if (ret)
			return ret;
	}
	ret = vrdma_qp_check_init(vdev, init, udata);
	if (ret)
		goto err_rss;
	ret = -EINVAL;
	if (udata && udata->outlen < sizeof(resp))
		goto err_rss;
	/* An RSS QP's empty rings stay in the kernel, as an XRC target's. */
	uc = udata && !rss ? rdma_udata_to_drv_context(udata,
						       struct vrdma_ucontext,
						       ibuc) : NULL;
	qp->rss = rss;

	if (atomic_inc_return(&vdev->num_qp) > vdev->attr.max_qp) {
		ret = -ENOMEM;
		goto err_count;
	}

	qp->vdev = vdev;
	/* An XRC target QP has none: each request's SRQ brings its own. */
	qp->pd = ibqp->pd ? to_vpd(ibqp->pd) : NULL;
	qp->scq = to_vcq(init->send_cq);
	qp->rcq = to_vcq(init->recv_cq);
	qp->srq = init->srq ? to_vsrq(init->srq) : NULL;
	qp->sq_sig_all = init->sq_sig_type == IB_SIGNAL_ALL_WR;
	qp->state = rss ? IB_QPS_RTR : IB_QPS_RESET;
	spin_lock_init(&qp->sq_lock);
	spin_lock_init(&qp->rq_lock);
	vrdma_sched_qp_init(qp);
	refcount_set(&qp->refs, 1);
	init_completion(&qp->done);

	ret = dst_cache_init(&qp->av.dst_cache, GFP_KERNEL);
	if (ret)
		goto err_count;
	/* Only RC (XRC too) and UC need their packets in order. */
	if (vrdma_qp_is_rc(qp) || init->qp_type == IB_QPT_UC) {
		qp->txq = vrdma_txq_create(vdev);
		if (!qp->txq) {
			ret = -ENOMEM;
			goto err_queues;
		}
	}
	ret = vrdma_qp_alloc_queues(qp, &init->cap, uc, &resp);
	if (ret)
		goto err_queues;
	if (rss)
		memset(&init->cap, 0, sizeof(init->cap));

	if (init->qp_type == IB_QPT_GSI) {
		/* Reserved (a NULL entry) until complete, as below. */
		qpn = VRDMA_GSI_QPN;
		ret = xa_insert_irq(&vdev->qp_xa, qpn, NULL, GFP_KERNEL);
	} else {
		ret = xa_alloc_cyclic_irq(&vdev->qp_xa, &qpn, NULL,
					  XA_LIMIT(VRDMA_MIN_QPN, VRDMA_MAX_QPN),
					  &vdev->qp_next, GFP_KERNEL);
	}
	if (ret < 0)
		goto err_queues;
	ibqp->qp_num = qpn;
	resp.qpn = qpn;

	if (udata) {
		ret = ib_copy_to_udata(udata, &resp, sizeof(resp));
		if (ret)
			goto err_xa;
	}
	vrdma_qp_lock(qp);
	vrdma_qp_reset(qp);
	vrdma_qp_unlock(qp);
	if (init->qp_type == IB_QPT_XRC_TGT)
		vrdma_xrc_tgt_add(qp, init->xrcd);
	/* Visible to the receive path only when complete. */
	xa_store_irq(&vdev->qp_xa, qpn, qp, GFP_KERNEL);
	vrdma_debugfs_qp_add(qp);
	return 0;

err_xa:
	xa_erase_irq(&vdev->qp_xa, qpn);
err_queues:
	vrdma_qp_free_queues(qp);
	vrdma_txq_destroy(qp->txq);
	dst_cache_destroy(&qp->av.dst_cache);
err_count:
	atomic_dec(&vdev->num_qp);
err_rss:
	kfree(rss);
	qp->rss = NULL;
	return ret;
}

/* Check the values of the attributes in @mask; states are checked apart. */
static int vrdma_qp_check_attr(struct vrdma_qp *qp, struct ib_qp_attr *attr,
			       int mask)
{
	if ((mask & IB_QP_PORT) && attr->port_num != VRDMA_PORT)
		return -EINVAL;
	if ((mask & IB_QP_PKEY_INDEX) && attr->pkey_index >= VRDMA_MAX_PKEYS)
		return -EINVAL;
	if ((mask & IB_QP_PATH_MTU) &&
	    (attr->path_mtu < IB_MTU_256 || attr->path_mtu > IB_MTU_4096))
		return -EINVAL;
	if ((mask & IB_QP_MAX_QP_RD_ATOMIC) &&
	    attr->max_rd_atomic > VRDMA_MAX_RD_ATOMIC)
		return -EINVAL;
	if ((mask & IB_QP_MAX_DEST_RD_ATOMIC) &&
	    attr->max_dest_rd_atomic > VRDMA_MAX_RD_ATOMIC)
		return -EINVAL;
	/*
	 * ON_DEMAND means nothing for a QP, but consumers pass their MRs'
	 * rights (pyverbs' ODP tests): accepted, as other devices do.
	 */
	if ((mask & IB_QP_ACCESS_FLAGS) &&
	    (attr->qp_access_flags & ~(IB_ACCESS_REMOTE_WRITE |
				       IB_ACCESS_REMOTE_READ |
				       IB_ACCESS_REMOTE_ATOMIC |
				       IB_ACCESS_LOCAL_WRITE |
				       IB_ACCESS_ON_DEMAND |
				       VRDMA_QP_ACCESS_FLUSH_ALLOWED)))
		return -EINVAL;
	if ((mask & IB_QP_RETRY_CNT) &&
	    attr->retry_cnt > VRDMA_RETRY_MAX)
		return -EINVAL;
	if ((mask & IB_QP_RNR_RETRY) &&
	    attr->rnr_retry > VRDMA_RETRY_MAX)
		return -EINVAL;
	if ((mask & IB_QP_MIN_RNR_TIMER) && attr->min_rnr_timer > 31)
		return -EINVAL;
	if ((mask & IB_QP_TIMEOUT) && attr->timeout > 31)
		return -EINVAL;
	if ((mask & IB_QP_DEST_QPN) && attr->dest_qp_num > VRDMA_MAX_QPN)
		return -EINVAL;
	return 0;
}

/* Keep the attributes for query_qp; the path is resolved separately. */
static void vrdma_qp_store_attr(struct vrdma_qp *qp, struct ib_qp_attr *attr,
				int mask)
{
	struct ib_qp_attr *a = &qp->attr;

	if (mask & IB_QP_ACCESS_FLAGS)
		a->qp_access_flags = attr->qp_access_flags;
	if (mask & IB_QP_PKEY_INDEX)
		a->pkey_index = attr->pkey_index;
	if (mask & IB_QP_PORT)
		a->port_num = attr->port_num;
	if (mask & IB_QP_QKEY)
		a->qkey = attr->qkey;
	if (mask & IB_QP_PATH_MTU)
		a->path_mtu = attr->path_mtu;
	if (mask & IB_QP_TIMEOUT)
		a->timeout = attr->timeout;
	if (mask & IB_QP_RETRY_CNT)
		a->retry_cnt = attr->retry_cnt;
	if (mask & IB_QP_RNR_RETRY)
		a->rnr_retry = attr->rnr_retry;
	if (mask & IB_QP_RQ_PSN) {
		a->rq_psn = attr->rq_psn & VRDMA_MAX_QPN;
		qp->resp.psn = a->rq_psn;
	}
	if (mask & IB_QP_MAX_QP_RD_ATOMIC)
		a->max_rd_atomic = attr->max_rd_atomic;
	if (mask & IB_QP_MIN_RNR_TIMER)
		a->min_rnr_timer = attr->min_rnr_timer;
	if (mask & IB_QP_SQ_PSN) {
		a->sq_psn = attr->sq_psn & VRDMA_MAX_QPN;
		qp->req.psn = a->sq_psn;
		qp->req.max_psn = a->sq_psn;
		qp->req.una = a->sq_psn;
	}
	if (mask & IB_QP_MAX_DEST_RD_ATOMIC)
		a->max_dest_rd_atomic = attr->max_dest_rd_atomic;
	if (mask & IB_QP_DEST_QPN)
		a->dest_qp_num = attr->dest_qp_num;
	if (mask & IB_QP_AV)
		a->ah_attr = attr->ah_attr;
	if (mask & IB_QP_EN_SQD_ASYNC_NOTIFY)
		a->en_sqd_async_notify = attr->en_sqd_async_notify;
}

/*
 * The path MTU in use: what was asked, at most what the netdev carries.
 * Not through vrdma_query_port(): that takes the RTNL, and the QP's mutex
 * is held here (lockdep: rtnl_mutex -> rdma_cm's qp_mutex -> qp->mutex).
 */
static u32 vrdma_qp_mtu(struct vrdma_qp *qp, enum ib_mtu path_mtu)
{
	enum ib_mtu mtu = path_mtu ? path_mtu : IB_MTU_1024;

	return ib_mtu_enum_to_int(min(mtu, vrdma_active_mtu(qp->vdev->ndev)));
}

/*
 * Are messages of the SQ begun and not completed?  Their packets were cut
 * at qp->mtu, and a resend finds its place in a message from the PSN
 * distance times qp->mtu (vrdma_rewind()), as the completer finds READ
 * responses: the MTU must not change under them.
 */
static bool vrdma_qp_sq_busy(struct vrdma_qp *qp)
{
	if (qp->req.head != qp->req.cur)
		return true;
	return qp->req.cur != qp->req.fetch &&
	       vrdma_swqe_at(qp, qp->req.cur)->state != VRDMA_SWQE_NEW;
}

/**
 * vrdma_modify_qp() - change attributes and state (ibv_modify_qp)
 * @ibqp: the QP
 * @attr: new values
 * @mask: IB_QP_* attributes to change
 * @udata: the request, struct vrdma_uverbs_req (vrdma_udata_check()); NULL for a
 *	kernel consumer
 *
 * The transition and the attributes it requires or allows are checked
 * against the IBA tables (ib_modify_qp_is_ok()).
 *
 * Return: 0, -EINVAL, -ENOMEM for the responder resources, or -EBUSY for a
 * path MTU change while messages are outstanding, with the QP unchanged.
 */
int vrdma_modify_qp(struct ib_qp *ibqp, struct ib_qp_attr *attr, int mask,
		    struct ib_udata *udata)
{
	struct vrdma_qp *qp = to_vqp(ibqp);
	struct vrdma_rd_atomic *res = NULL;
	enum ib_qp_state cur, new;
	int ret;

	ret = vrdma_udata_check(ibqp->device, udata, __func__);
	if (ret)
		return ret;
	/* An RSS QP has no states to go through (wq.c). */
	if ((mask & ~IB_QP_ATTR_STANDARD_BITS) || qp->rss)
		return -EOPNOTSUPP;

	vrdma_qp_lock(qp);
	cur = (mask & IB_QP_CUR_STATE) ? attr->cur_qp_state : qp->state;
	new = (mask & IB_QP_STATE) ? attr->qp_state : cur;
	ret = -EINVAL;
	if (cur != qp->state ||
	    !ib_modify_qp_is_ok(cur, new, ibqp->qp_type, mask))
		goto out;
	ret = vrdma_qp_check_attr(qp, attr, mask);
	if (ret)
		goto out;
	/*
	 * A new path (SQD to SQD) may bring a new MTU, the netdev's having
	 * changed since: taken only once every message begun is completed.
	 */
	if ((mask & (IB_QP_PATH_MTU | IB_QP_AV)) && vrdma_qp_sq_busy(qp) &&
	    vrdma_qp_mtu(qp, (mask & IB_QP_PATH_MTU) ? attr->path_mtu :
			 qp->attr.path_mtu) != qp->mtu) {
		ret = -EBUSY;
		goto out;
	}
	if (mask & IB_QP_MAX_DEST_RD_ATOMIC) {
		res = vrdma_resp_res_alloc(attr->max_dest_rd_atomic);
		if (IS_ERR(res)) {
			ret = PTR_ERR(res);
			goto out;
		}
	}
	if (mask & IB_QP_AV) {
		ret = vrdma_av_set(&qp->av, &attr->ah_attr);
		if (ret) {
			kfree(res);
			goto out;
		}
	}
	if (new == IB_QPS_RESET && cur != IB_QPS_RESET)
		vrdma_qp_reset(qp);
	if (mask & IB_QP_MAX_DEST_RD_ATOMIC)
		vrdma_resp_res_install(qp, res, attr->max_dest_rd_atomic);
	vrdma_qp_store_attr(qp, attr, mask);
	if (mask & (IB_QP_AV | IB_QP_DEST_QPN))
		qp->av.sport = cpu_to_be16(rdma_get_udp_sport(qp->av.flow_label,
							      ibqp->qp_num,
							      qp->attr.dest_qp_num));
	if (mask & (IB_QP_PATH_MTU | IB_QP_AV))
		qp->mtu = vrdma_qp_mtu(qp, qp->attr.path_mtu);

	if (!(mask & IB_QP_STATE) || new == cur)
		goto out;
	switch (new) {
	case IB_QPS_ERR:
		vrdma_qp_error(qp, 0);
		break;
	case IB_QPS_SQD:
		qp->state = new;
		qp->req.sqd_event = qp->attr.en_sqd_async_notify;
		vrdma_qp_schedule(qp);
		break;
	case IB_QPS_RTS:
		qp->state = new;
		/* WQEs may have been posted before: start on them. */
		vrdma_qp_schedule(qp);
		break;
	default:
		qp->state = new;
		break;
	}
out:
	vrdma_qp_unlock(qp);
	return ret;
}

/**
 * vrdma_query_qp() - report attributes (ibv_query_qp)
 * @ibqp: the QP
 * @attr: filled
 * @mask: which attributes are wanted; all are filled
 * @init: filled with the creation attributes
 *
 * Return: 0
 */
int vrdma_query_qp(struct ib_qp *ibqp, struct ib_qp_attr *attr, int mask,
		   struct ib_qp_init_attr *init)
{
	struct vrdma_qp *qp = to_vqp(ibqp);

	vrdma_qp_lock(qp);
	*attr = qp->attr;
	attr->qp_state = qp->state;
	attr->cur_qp_state = qp->state;
	attr->sq_draining = qp->state == IB_QPS_SQD &&
			    qp->req.cur != qp->req.head;
	attr->cap.max_send_wr = qp->sq.num_entries;
	attr->cap.max_send_sge = qp->max_send_sge;
	attr->cap.max_inline_data = qp->max_inline;
	attr->cap.max_recv_wr = qp->srq ? 0 : qp->rq.num_entries;
	attr->cap.max_recv_sge = qp->srq ? 0 : qp->max_recv_sge;
	/* The rings XRC QPs have only for form (vrdma_qp_alloc_queues()). */
	if (ibqp->qp_type == IB_QPT_XRC_TGT)
		memset(&attr->cap, 0, sizeof(attr->cap));
	if (ibqp->qp_type == IB_QPT_XRC_INI) {
		attr->cap.max_recv_wr = 0;
		attr->cap.max_recv_sge = 0;
	}
	if (qp->rss)
		memset(&attr->cap, 0, sizeof(attr->cap));
	/* The PSNs as they are now ("rdma res show qp" reports them). */
	attr->sq_psn = qp->req.psn;
	attr->rq_psn = qp->resp.psn;
	vrdma_qp_unlock(qp);

	memset(init, 0, sizeof(*init));
	init->qp_type = ibqp->qp_type;
	init->send_cq = ibqp->send_cq;
	init->recv_cq = ibqp->recv_cq;
	init->srq = ibqp->srq;
	init->cap = attr->cap;
	init->sq_sig_type = qp->sq_sig_all ? IB_SIGNAL_ALL_WR :
					     IB_SIGNAL_REQ_WR;
	return 0;
}

/**
 * vrdma_destroy_qp() - destroy a QP, with traffic in flight or not
 * @ibqp: the QP
 * @udata: unused
 *
 * No new packet can find the QP once it is out of the table; we wait for
 * those that did, stop the task and the timers, and only then free.  No
 * completions are generated.  (rxe once freed a QP under a running
 * retransmission timer; the destroyed flag, set under the mutex, is what
 * keeps the task from re-arming one here.)
 *
 * Return: 0
 */
int vrdma_destroy_qp(struct ib_qp *ibqp, struct ib_udata *udata)
{
	struct vrdma_qp *qp = to_vqp(ibqp);
	struct vrdma_dev *vdev = qp->vdev;

	vrdma_debugfs_qp_del(qp);
	/* No multicast group nor flow may reach the QP any more. */
	vrdma_mcast_qp_destroy(qp);
	vrdma_raw_qp_destroy(qp);
	vrdma_qp_lock(qp);
	WRITE_ONCE(qp->destroyed, true);
	vrdma_qp_unlock(qp);

	xa_erase_irq(&vdev->qp_xa, ibqp->qp_num);
	vrdma_qp_put(qp);
	wait_for_completion(&qp->done);
	vrdma_sched_qp_stop(qp);
	vrdma_txq_destroy(qp->txq);
	/* Tagged buffers it matched and did not complete are free again. */
	if (vrdma_srq_is_tm(qp->srq))
		vrdma_tm_qp_reset(qp);
	if (qp->xrcd)
		vrdma_xrc_tgt_del(qp);

	if (qp->av.sgid_attr)
		rdma_put_gid_attr(qp->av.sgid_attr);
	dst_cache_destroy(&qp->av.dst_cache);
	vrdma_qp_free_queues(qp);
	kfree(qp->rss);
	atomic_dec(&vdev->num_qp);
	return 0;
}

/**
 * vrdma_post_send() - the doorbell of a user QP's send queue
 * @ibqp: the QP
 * @wr: NULL: the WQEs are in the SQ ring already; for a kernel QP, the
 *	work requests to post (vrdma_kpost_send())
 * @bad_wr: set to @wr on error
 *
 * The provider refuses to post before RTS; WQEs already in the ring wait
 * for RTS (the requester ignores the SQ until then), so the doorbell itself
 * never fails.
 *
 * When the QP's task is not running, the caller runs the QP itself (the
 * requester, and the ACKs that came back meanwhile): the first packets
 * leave before post_send returns, as from a NIC, and a UD or UC WQE is
 * complete by then, as is an RC WQE to a local peer (vrdma_qp_rcv_local()).
 * Otherwise the task is queued (again), so that it looks at the SQ once
 * more before it ends.
 *
 * Return: 0, or -EINVAL for work requests passed the kernel way to a user
 * QP, and for an XRC target QP.
 */
int vrdma_post_send(struct ib_qp *ibqp, const struct ib_send_wr *wr,
		    const struct ib_send_wr **bad_wr)
{
	struct vrdma_qp *qp = to_vqp(ibqp);

	if (ibqp->qp_type == IB_QPT_XRC_TGT || qp->rss) {
		*bad_wr = wr;
		return -EINVAL;	/* nothing to send with */
	}
	if (vrdma_queue_is_kernel(&qp->sq))
		return vrdma_kpost_send(qp, wr, bad_wr);
	if (wr) {
		*bad_wr = wr;
		return -EINVAL;
	}
	trace_vrdma_doorbell(qp);
	vrdma_count(qp->vdev, VRDMA_CNT_DOORBELLS);
	vrdma_qp_doorbell(qp);
	return 0;
}

/**
 * vrdma_post_recv() - the receive doorbell, rung only in the error state
 * @ibqp: the QP
 * @wr: NULL: the WQEs are in the RQ ring already; for a kernel QP, the
 *	work requests to post (vrdma_kpost_recv())
 * @bad_wr: set to @wr on error
 *
 * Receive WQEs need no doorbell: the responder takes them when a message
 * arrives.  In the error state nothing arrives, so the provider rings this
 * to have them flushed.
 *
 * Return: 0, or -EINVAL for work requests passed the kernel way to a user
 * QP, and for an XRC target QP.
 */
int vrdma_post_recv(struct ib_qp *ibqp, const struct ib_recv_wr *wr,
		    const struct ib_recv_wr **bad_wr)
{
	if (ibqp->qp_type == IB_QPT_XRC_TGT || to_vqp(ibqp)->rss) {
		*bad_wr = wr;
		return -EINVAL;	/* its receive WQEs are in XRC SRQs or WQs */
	}
	if (vrdma_queue_is_kernel(&to_vqp(ibqp)->sq))
		return vrdma_kpost_recv(to_vqp(ibqp), wr, bad_wr);
	if (wr) {
		*bad_wr = wr;
		return -EINVAL;
	}
	vrdma_qp_schedule(to_vqp(ibqp));
	return 0;
}
