// SPDX-License-Identifier: GPL-2.0
/*
 * Receive side scaling: work queues, indirection tables, and the raw
 * packet QPs made on them.
 *
 * A work queue (WQ, IB_WQT_RQ) is a receive ring of its own, laid out and
 * shared with the process as a QP's RQ, with a CQ of its own.  Its states:
 * RESET (WQEs may be posted, nothing is received; entering it discards the
 * posted WQEs without completions), RDY (receives) and ERR (receives
 * nothing; the posted WQEs complete with IB_WC_WR_FLUSH_ERR when the WQ
 * enters it, and at each modify_wq from ERR to ERR, the provider's
 * doorbell for WQEs posted later).
 *
 * An indirection table lists 2^n WQs, a WQ maybe more than once.  A raw
 * packet QP created on one (an RSS QP) has no rings and no state machine:
 * from its creation on it receives what its flows steer to it (raw.c),
 * each frame into the WQ at index (hash & (2^n - 1)) of the table, the hash
 * being the Toeplitz hash, under the QP's key, of the fields it selects
 * (raw.c gathers them, vrdma_toeplitz() hashes).  A frame whose WQ is not
 * in RDY or has no WQE posted is dropped and counted (raw_dropped), as a
 * NIC drops.
 *
 * Lifetimes are ib_core's: a table holds a use count on each of its WQs
 * and a QP one on its table, and neither is destroyed while counted
 * (EBUSY).  A frame is placed by the task of the QP it was steered to,
 * which destroy_qp stops before ib_core lets the table go: no frame
 * reaches a WQ that no QP's table holds.  Placement takes the WQ's mutex
 * inside the QP's (sched.c's lock order): QPs may share WQs.
 *
 * WQ numbers are taken from the QP numbers, reserved there without a QP,
 * so that a CQ shared by QPs and WQs tells their completions apart and no
 * packet ever finds a WQ by number.
 */
#include <linux/idr.h>
#include <rdma/uverbs_ioctl.h>

#include "vrdma.h"

static inline struct vrdma_wq *to_vwq(struct ib_wq *ibwq)
{
	return container_of(ibwq, struct vrdma_wq, ibwq);
}

static inline struct vrdma_rwq_ind_table *
to_vtbl(struct ib_rwq_ind_table *ibtbl)
{
	return container_of(ibtbl, struct vrdma_rwq_ind_table, ibtbl);
}

/**
 * vrdma_toeplitz() - the Toeplitz hash of @len bytes
 * @key: VRDMA_RSS_KEY_LEN bytes
 * @in: the input, fields in network order
 * @len: at most VRDMA_RSS_KEY_LEN - 4 bytes
 *
 * For each bit of the input set, from the first byte's most significant
 * bit on, the 32 bits of the key that start at that bit's position are
 * XORed into the result (Microsoft's RSS specification).  The window
 * slides one key bit for each input bit.
 *
 * Return: the hash.
 */
u32 vrdma_toeplitz(const u8 *key, const u8 *in, unsigned int len)
{
	u32 hash = 0, window = get_unaligned_be32(key);
	unsigned int i, bit;

	len = min_t(unsigned int, len, VRDMA_RSS_KEY_LEN - 4);
	for (i = 0; i < len; i++) {
		for (bit = 0; bit < 8; bit++) {
			if (in[i] & (0x80 >> bit))
				hash ^= window;
			window = window << 1 | ((key[i + 4] >> (7 - bit)) & 1);
		}
	}
	return hash;
}

/*
 * Microsoft's RSS verification suite: its key, and for two of its flows
 * the hash of the IPv4 addresses, of addresses and TCP ports, and of the
 * IPv6 addresses and ports.
 */
static const u8 vrdma_ms_key[VRDMA_RSS_KEY_LEN] = {
	0x6d, 0x5a, 0x56, 0xda, 0x25, 0x5b, 0x0e, 0xc2,
	0x41, 0x67, 0x25, 0x3d, 0x43, 0xa3, 0x8f, 0xb0,
	0xd0, 0xca, 0x2b, 0xcb, 0xae, 0x7b, 0x30, 0xb4,
	0x77, 0xcb, 0x2d, 0xa3, 0x80, 0x30, 0xf2, 0x0c,
	0x6a, 0x42, 0xb7, 0x3b, 0xbe, 0xac, 0x01, 0xfa,
};

static const struct {
	u8 in[36];
	unsigned int len;
	u32 hash;
} vrdma_ms_vectors[] = {
	/* 66.9.149.187:2794 -> 161.142.100.80:1766 */
	{ { 66, 9, 149, 187, 161, 142, 100, 80 }, 8, 0x323e8fc2 },
	{ { 66, 9, 149, 187, 161, 142, 100, 80, 0x0a, 0xea, 0x06, 0xe6 },
	  12, 0x51ccc178 },
	/* 199.92.111.2:14230 -> 65.69.140.83:4739 */
	{ { 199, 92, 111, 2, 65, 69, 140, 83 }, 8, 0xd718262a },
	{ { 199, 92, 111, 2, 65, 69, 140, 83, 0x37, 0x96, 0x12, 0x83 },
	  12, 0xc626b0ea },
	/* [3ffe:2501:200:1fff::7]:2794 -> [3ffe:2501:200:3::1]:1766 */
	{ { 0x3f, 0xfe, 0x25, 0x01, 0x02, 0x00, 0x1f, 0xff,
	    0, 0, 0, 0, 0, 0, 0, 0x07,
	    0x3f, 0xfe, 0x25, 0x01, 0x02, 0x00, 0x00, 0x03,
	    0, 0, 0, 0, 0, 0, 0, 0x01, 0x0a, 0xea, 0x06, 0xe6 },
	  36, 0x40207d3d },
};

/**
 * vrdma_rss_selftest() - check vrdma_toeplitz() against known answers
 *
 * Context: module load.
 * Return: 0, or -EINVAL if any hash differs (the module does not load).
 */
int vrdma_rss_selftest(void)
{
	unsigned int i;

	for (i = 0; i < ARRAY_SIZE(vrdma_ms_vectors); i++) {
		u32 h = vrdma_toeplitz(vrdma_ms_key, vrdma_ms_vectors[i].in,
				       vrdma_ms_vectors[i].len);

		if (h != vrdma_ms_vectors[i].hash) {
			pr_err("vrdma: Toeplitz vector %u: %#010x, expected %#010x\n",
			       i, h, vrdma_ms_vectors[i].hash);
			return -EINVAL;
		}
	}
	return 0;
}

/**
 * vrdma_wq_attr() - what query_device says of RSS
 * @attr: the device's attributes being filled
 */
void vrdma_wq_attr(struct ib_device_attr *attr)
{
	attr->max_wq_type_rq = VRDMA_MAX_WQ;
	attr->rss_caps.supported_qpts = BIT(IB_QPT_RAW_PACKET);
	attr->rss_caps.max_rwq_indirection_tables = VRDMA_MAX_RWQ_IND_TBL;
	attr->rss_caps.max_rwq_indirection_table_size =
		BIT(VRDMA_MAX_RWQ_IND_TBL_LOG);
}

void vrdma_wq_dev_init(struct vrdma_dev *vdev)
{
	ida_init(&vdev->rwq_ind_tbl_ida);
}

void vrdma_wq_dev_fini(struct vrdma_dev *vdev)
{
	ida_destroy(&vdev->rwq_ind_tbl_ida);
}

/* The WQ failed: a fatal error (a garbage ring, a CQ overflow) says so. */
static void vrdma_wq_event(struct vrdma_wq *wq, enum ib_event_type type)
{
	struct ib_wq *ibwq = &wq->ibwq;
	struct ib_event ev = {
		.device = ibwq->device,
		.element.wq = ibwq,
		.event = type,
	};

	if (ibwq->event_handler)
		ibwq->event_handler(&ev, ibwq->wq_context);
}

/* Complete every WQE posted with IB_WC_WR_FLUSH_ERR; wq->mutex held. */
static void vrdma_wq_flush(struct vrdma_wq *wq)
{
	struct vrdma_queue *q = &wq->rq;
	struct vrdma_cqe cqe = {
		.status = IB_WC_WR_FLUSH_ERR,
		.opcode = IB_WC_RECV,
		.qp_num = wq->ibwq.wq_num,
	};
	u32 count;

	lockdep_assert_held(&wq->mutex);
	if (vrdma_queue_count(q, &count))
		return;		/* a garbage index: nothing can be trusted */
	while (count--) {
		const struct vrdma_recv_wqe *w = vrdma_queue_slot(q, q->kidx);

		cqe.wr_id = READ_ONCE(w->wr_id);
		vrdma_queue_consume(q, 1);
		vrdma_cq_post(wq->cq, &cqe, false);
	}
}

/* Move the WQ to ERR, and flush it; wq->mutex held. */
static void vrdma_wq_error(struct vrdma_wq *wq, bool fatal)
{
	if (wq->ibwq.state != IB_WQS_ERR && fatal)
		vrdma_wq_event(wq, IB_EVENT_WQ_FATAL);
	wq->ibwq.state = IB_WQS_ERR;
	vrdma_wq_flush(wq);
}

/*
 * Copy the next WQE out of the ring into wq->wqe, then check the copy.
 * Return: 1 and the bytes its SGEs hold in @total, 0 if none is posted,
 * -EIO for a garbage producer index, -EINVAL for a WQE with more SGEs
 * than the WQ was granted.
 */
static int vrdma_wq_take(struct vrdma_wq *wq, u64 *total)
{
	struct vrdma_queue *q = &wq->rq;
	u32 count, i;

	if (vrdma_queue_count(q, &count))
		return -EIO;
	if (!count)
		return 0;
	memcpy(wq->wqe, vrdma_queue_slot(q, q->kidx),
	       VRDMA_RECV_WQE_HDR_SIZE + wq->max_sge * sizeof(struct vrdma_sge));
	vrdma_queue_consume(q, 1);
	if (wq->wqe->num_sge > wq->max_sge)
		return -EINVAL;
	*total = 0;
	for (i = 0; i < wq->wqe->num_sge; i++)
		*total += wq->wqe->sge[i].length;
	return 1;
}

/* Place one frame into the next WQE of @wq and complete it. */
static void vrdma_wq_rcv(struct vrdma_wq *wq, struct sk_buff *skb)
{
	struct vrdma_dev *vdev = wq->vdev;
	u32 len = vrdma_raw_frame_len(skb, 0);
	struct vrdma_cqe cqe = {
		.opcode = IB_WC_RECV,
		.qp_num = wq->ibwq.wq_num,
	};
	u64 total = 0;
	int ret;

	mutex_lock(&wq->mutex);
	if (wq->ibwq.state != IB_WQS_RDY) {
		vrdma_count(vdev, VRDMA_CNT_RAW_DROPPED);
		goto out;
	}
	ret = vrdma_wq_take(wq, &total);
	if (ret <= 0)
		vrdma_count(vdev, VRDMA_CNT_RAW_DROPPED);
	if (!ret)
		goto out;
	if (ret == -EIO) {
		vrdma_count(vdev, VRDMA_CNT_BAD_WQE);
		vrdma_wq_error(wq, true);
		goto out;
	}

	cqe.wr_id = wq->wqe->wr_id;
	if (ret < 0) {
		vrdma_count(vdev, VRDMA_CNT_BAD_WQE);
		cqe.status = IB_WC_LOC_QP_OP_ERR;
	} else if (len > total) {
		cqe.status = IB_WC_LOC_LEN_ERR;
	} else if (vrdma_raw_place(vdev, wq->pd, wq->wqe, skb)) {
		cqe.status = IB_WC_LOC_PROT_ERR;
	} else {
		cqe.status = IB_WC_SUCCESS;
		cqe.byte_len = len;
		vrdma_count(vdev, VRDMA_CNT_RAW_RCVD_PKTS);
		vrdma_count_add(vdev, VRDMA_CNT_RAW_RCVD_BYTES, len);
	}
	/* A receive error puts the WQ in error, as it does a QP. */
	if (vrdma_cq_post(wq->cq, &cqe, false))
		vrdma_wq_error(wq, true);
	else if (cqe.status != IB_WC_SUCCESS)
		vrdma_wq_error(wq, ret < 0);
out:
	mutex_unlock(&wq->mutex);
}

/**
 * vrdma_rss_rcv() - place a frame steered to an RSS QP
 * @qp: the QP, engines owned, mutex held
 * @skb: the frame, from its MAC header on, its RSS hash in skb->hash
 *	(raw.c); the caller consumes it
 */
void vrdma_rss_rcv(struct vrdma_qp *qp, struct sk_buff *skb)
{
	struct vrdma_rwq_ind_table *tbl = qp->rss->table;

	vrdma_qp_assert_locked(qp);
	vrdma_wq_rcv(tbl->wqs[skb->hash & tbl->mask], skb);
}

/**
 * vrdma_create_wq() - create a work queue in RESET (ib_device_ops.create_wq)
 * @ibpd: its PD
 * @init: type, CQ, max_wr and max_sge; the last two are updated to what
 *	was granted
 * @udata: the request, struct vrdma_uverbs_req (vrdma_udata_check()); the
 *	response carries struct vrdma_create_wq_resp
 *
 * Context: process.
 * Return: the WQ, or ERR_PTR(-EOPNOTSUPP) for kernel consumers (no raw
 * QPs: nothing to receive), a type other than IB_WQT_RQ or creation
 * flags, -EINVAL for sizes beyond the device's, -ENOMEM past
 * max_wq_type_rq.
 */
struct ib_wq *vrdma_create_wq(struct ib_pd *ibpd,
			      struct ib_wq_init_attr *init,
			      struct ib_udata *udata)
{
	struct vrdma_dev *vdev = to_vdev(ibpd->device);
	struct vrdma_create_wq_resp resp = {};
	struct vrdma_ucontext *uc;
	struct vrdma_wq *wq;
	u32 n, stride, wqn;
	int ret;

	ret = vrdma_udata_check(ibpd->device, udata, __func__);
	if (ret)
		return ERR_PTR(ret);
	if (!udata || init->wq_type != IB_WQT_RQ || init->create_flags)
		return ERR_PTR(-EOPNOTSUPP);
	if (init->max_wr > vdev->attr.max_qp_wr ||
	    init->max_sge > VRDMA_MAX_SGE)
		return ERR_PTR(-EINVAL);
	if (udata->outlen < sizeof(resp))
		return ERR_PTR(-EINVAL);
	uc = rdma_udata_to_drv_context(udata, struct vrdma_ucontext, ibuc);

	if (atomic_inc_return(&vdev->num_wq) > vdev->attr.max_wq_type_rq) {
		ret = -ENOMEM;
		goto err_count;
	}
	wq = kzalloc(sizeof(*wq), VRDMA_GFP_USER);
	if (!wq) {
		ret = -ENOMEM;
		goto err_count;
	}
	wq->wqe = kmalloc(VRDMA_RECV_WQE_HDR_SIZE +
			  VRDMA_MAX_SGE * sizeof(struct vrdma_sge),
			  VRDMA_GFP_USER);
	if (!wq->wqe) {
		ret = -ENOMEM;
		goto err_free;
	}
	stride = roundup_pow_of_two(VRDMA_RECV_WQE_HDR_SIZE +
				    max(init->max_sge, 1U) *
				    sizeof(struct vrdma_sge));
	n = roundup_pow_of_two(max(init->max_wr, 1U));
	ret = vrdma_queue_init(&wq->rq, uc, n, stride, &resp.rq);
	if (ret)
		goto err_free;
	wq->max_sge = min_t(u32, VRDMA_MAX_SGE,
			    (stride - VRDMA_RECV_WQE_HDR_SIZE) /
			    sizeof(struct vrdma_sge));

	/* A number no QP has, reserved (a NULL entry: no packet finds it). */
	ret = xa_alloc_cyclic_irq(&vdev->qp_xa, &wqn, NULL,
				  XA_LIMIT(VRDMA_MIN_QPN, VRDMA_MAX_QPN),
				  &vdev->qp_next, GFP_KERNEL);
	if (ret < 0)
		goto err_queue;
	wq->ibwq.wq_num = wqn;
	resp.wqn = wqn;
	wq->vdev = vdev;
	wq->pd = to_vpd(ibpd);
	wq->cq = to_vcq(init->cq);
	wq->ibwq.state = IB_WQS_RESET;
	/* ib_core leaves the handler (uverbs': the async event file) to us. */
	wq->ibwq.event_handler = init->event_handler;
	mutex_init(&wq->mutex);
	init->max_wr = n;
	init->max_sge = wq->max_sge;

	ret = ib_copy_to_udata(udata, &resp, sizeof(resp));
	if (ret)
		goto err_xa;
	return &wq->ibwq;

err_xa:
	mutex_destroy(&wq->mutex);
	xa_erase_irq(&vdev->qp_xa, wqn);
err_queue:
	vrdma_queue_destroy(&wq->rq);
err_free:
	kfree(wq->wqe);
	kfree(wq);
err_count:
	atomic_dec(&vdev->num_wq);
	return ERR_PTR(ret);
}

/**
 * vrdma_modify_wq() - change a WQ's state (ib_device_ops.modify_wq)
 * @ibwq: the WQ
 * @attr: the states
 * @mask: IB_WQ_STATE, IB_WQ_CUR_STATE, IB_WQ_FLAGS (with no flag)
 * @udata: the request, struct vrdma_uverbs_req (vrdma_udata_check())
 *
 * To RESET from any state: the posted WQEs are discarded, no completion.
 * To RDY from RESET (or RDY).  To ERR from any state: the posted WQEs are
 * flushed, and again at each modify from ERR to ERR.
 *
 * Context: process.
 * Return: 0, -EINVAL for a current state that is not the WQ's, an unknown
 * state or ERR to RDY, -EOPNOTSUPP for flags.
 */
int vrdma_modify_wq(struct ib_wq *ibwq, struct ib_wq_attr *attr, u32 mask,
		    struct ib_udata *udata)
{
	struct vrdma_wq *wq = to_vwq(ibwq);
	enum ib_wq_state cur;
	int ret;

	ret = vrdma_udata_check(ibwq->device, udata, __func__);
	if (ret)
		return ret;
	if (mask & ~(IB_WQ_STATE | IB_WQ_CUR_STATE | IB_WQ_FLAGS))
		return -EOPNOTSUPP;
	if ((mask & IB_WQ_FLAGS) && (attr->flags_mask || attr->flags))
		return -EOPNOTSUPP;

	mutex_lock(&wq->mutex);
	cur = (mask & IB_WQ_CUR_STATE) ? attr->curr_wq_state : wq->ibwq.state;
	ret = -EINVAL;
	if (cur != wq->ibwq.state)
		goto out;
	ret = 0;
	if (!(mask & IB_WQ_STATE))
		goto out;
	switch (attr->wq_state) {
	case IB_WQS_RESET:
		vrdma_queue_reset(&wq->rq);
		wq->ibwq.state = IB_WQS_RESET;
		break;
	case IB_WQS_RDY:
		if (cur == IB_WQS_ERR)
			ret = -EINVAL;
		else
			wq->ibwq.state = IB_WQS_RDY;
		break;
	case IB_WQS_ERR:
		vrdma_wq_error(wq, false);
		break;
	default:
		ret = -EINVAL;
		break;
	}
out:
	mutex_unlock(&wq->mutex);
	return ret;
}

/**
 * vrdma_destroy_wq() - destroy a WQ (ib_device_ops.destroy_wq)
 * @ibwq: the WQ; ib_core has checked that no indirection table holds it,
 *	so no frame is on its way to it
 * @udata: unused
 *
 * Return: 0
 */
int vrdma_destroy_wq(struct ib_wq *ibwq, struct ib_udata *udata)
{
	struct vrdma_wq *wq = to_vwq(ibwq);
	struct vrdma_dev *vdev = wq->vdev;

	xa_erase_irq(&vdev->qp_xa, ibwq->wq_num);
	vrdma_queue_destroy(&wq->rq);
	mutex_destroy(&wq->mutex);
	kfree(wq->wqe);
	kfree(wq);
	atomic_dec(&vdev->num_wq);
	return 0;
}

/**
 * vrdma_create_rwq_ind_table() - make an indirection table
 *	(ib_device_ops.create_rwq_ind_table)
 * @ibtbl: ib_core's table, embedded in ours
 * @init: its size, 2^log_ind_tbl_size, and its WQs (ib_core found each by
 *	its handle in the caller's context)
 * @udata: the request, struct vrdma_uverbs_req (vrdma_udata_check())
 *
 * Context: process.
 * Return: 0, -EINVAL for a size beyond the device's or WQs of different
 * PDs, -ENOMEM past max_rwq_indirection_tables.
 */
int vrdma_create_rwq_ind_table(struct ib_rwq_ind_table *ibtbl,
			       struct ib_rwq_ind_table_init_attr *init,
			       struct ib_udata *udata)
{
	struct vrdma_rwq_ind_table *tbl = to_vtbl(ibtbl);
	struct vrdma_dev *vdev = to_vdev(ibtbl->device);
	struct vrdma_pd *pd;
	u32 n, i;
	int ret;

	ret = vrdma_udata_check(ibtbl->device, udata, __func__);
	if (ret)
		return ret;
	if (init->log_ind_tbl_size > VRDMA_MAX_RWQ_IND_TBL_LOG)
		return -EINVAL;
	n = BIT(init->log_ind_tbl_size);
	/* One PD: the QP on the table is of it too (vrdma_rss_create()). */
	pd = to_vwq(init->ind_tbl[0])->pd;
	for (i = 0; i < n; i++)
		if (init->ind_tbl[i]->wq_type != IB_WQT_RQ ||
		    to_vwq(init->ind_tbl[i])->pd != pd)
			return -EINVAL;

	if (atomic_inc_return(&vdev->num_rwq_ind_tbl) >
	    vdev->attr.rss_caps.max_rwq_indirection_tables) {
		ret = -ENOMEM;
		goto err_count;
	}
	tbl->wqs = kvmalloc_array(n, sizeof(*tbl->wqs), VRDMA_GFP_USER);
	if (!tbl->wqs) {
		ret = -ENOMEM;
		goto err_count;
	}
	for (i = 0; i < n; i++)
		tbl->wqs[i] = to_vwq(init->ind_tbl[i]);
	tbl->mask = n - 1;
	ret = ida_alloc(&vdev->rwq_ind_tbl_ida, GFP_KERNEL);
	if (ret < 0)
		goto err_free;
	ibtbl->ind_tbl_num = ret;
	return 0;

err_free:
	kvfree(tbl->wqs);
err_count:
	atomic_dec(&vdev->num_rwq_ind_tbl);
	return ret;
}

/**
 * vrdma_destroy_rwq_ind_table() - free an indirection table's parts
 *	(ib_device_ops.destroy_rwq_ind_table)
 * @ibtbl: the table; ib_core has checked that no QP uses it, and frees it
 *
 * Return: 0
 */
int vrdma_destroy_rwq_ind_table(struct ib_rwq_ind_table *ibtbl)
{
	struct vrdma_rwq_ind_table *tbl = to_vtbl(ibtbl);
	struct vrdma_dev *vdev = to_vdev(ibtbl->device);

	ida_free(&vdev->rwq_ind_tbl_ida, ibtbl->ind_tbl_num);
	kvfree(tbl->wqs);
	atomic_dec(&vdev->num_rwq_ind_tbl);
	return 0;
}

/**
 * vrdma_rss_create() - the hash of a raw packet QP on an indirection table
 * @qp: the QP being created (ibqp.pd set)
 * @init: its creation attributes, rwq_ind_tbl set; a QP that only
 *	receives: no send queue, no receive CQ (ib_core checked the RQ)
 * @udata: the request, struct vrdma_create_qp_rss_req
 *
 * Context: process.
 * Return: the QP's struct vrdma_rss (kfree() it), or ERR_PTR(-EOPNOTSUPP)
 * for a kernel consumer, a QP type other than raw packet, a request
 * without VRDMA_CREATE_QP_RSS, hash fields or functions not implemented;
 * -EINVAL for a send queue, a key of the wrong length or a table whose
 * WQs are of another PD.
 */
struct vrdma_rss *vrdma_rss_create(struct vrdma_qp *qp,
				   struct ib_qp_init_attr *init,
				   struct ib_udata *udata)
{
	struct ib_device *ibdev = qp->ibqp.device;
	struct vrdma_rwq_ind_table *tbl = to_vtbl(init->rwq_ind_tbl);
	struct vrdma_create_qp_rss_req req;
	struct vrdma_rss *rss;
	u32 i;
	int ret;

	ret = vrdma_udata_req(ibdev, udata, "create_qp", &req.hdr,
			      sizeof(req), VRDMA_CREATE_QP_RSS);
	if (ret)
		return ERR_PTR(ret);
	if (!udata || init->qp_type != IB_QPT_RAW_PACKET ||
	    !(req.hdr.comp_mask & VRDMA_CREATE_QP_RSS))
		return ERR_PTR(-EOPNOTSUPP);
	if (init->send_cq || init->recv_cq || init->srq ||
	    init->cap.max_send_wr || init->cap.max_recv_wr)
		return ERR_PTR(-EINVAL);
	if (req.rx_hash_function != VRDMA_RX_HASH_FUNC_TOEPLITZ ||
	    (req.rx_hash_fields_mask & ~(u64)VRDMA_RX_HASH_FIELDS)) {
		ibdev_dbg(ibdev, "create_qp: hash function %u, fields %#llx\n",
			  req.rx_hash_function, req.rx_hash_fields_mask);
		return ERR_PTR(-EOPNOTSUPP);
	}
	if (req.rx_hash_key_len != VRDMA_RSS_KEY_LEN ||
	    memchr_inv(req.reserved, 0, sizeof(req.reserved)))
		return ERR_PTR(-EINVAL);
	for (i = 0; i <= tbl->mask; i++)
		if (tbl->wqs[i]->pd != to_vpd(qp->ibqp.pd))
			return ERR_PTR(-EINVAL);

	rss = kzalloc(sizeof(*rss), VRDMA_GFP_USER);
	if (!rss)
		return ERR_PTR(-ENOMEM);
	rss->table = tbl;
	rss->fields = req.rx_hash_fields_mask;
	memcpy(rss->key, req.rx_hash_key, sizeof(rss->key));
	return rss;
}
