// SPDX-License-Identifier: GPL-2.0
/*
 * Tag matching: SRQs of type IB_SRQT_TM (ibv_create_srq_ex with
 * IBV_SRQT_TM, ibv_post_srq_ops), matched in software by the responder.
 *
 * A tag-matching SRQ has, besides its ring of receive WQEs, a list of
 * tagged buffers the process adds and deletes with a method of the
 * driver's own (VRDMA_IB_METHOD_SRQ_OPS, below).  The wire stays plain
 * RoCEv2: a tag-matching message is a SEND whose payload starts with a TMH
 * (struct vrdma_tmh), so any peer can send one.  When the first packet of
 * a SEND reaches a QP of the SRQ (vrdma_tm_take(), from the responder):
 *
 *   EAGER       the oldest posted buffer whose tag matches under its mask
 *               takes the message without its 16-byte TMH: one TM_RECV
 *               completion with TM_MATCH and TM_DATA_VALID, or, for a
 *               message of more than one packet, TM_MATCH at the first
 *               packet and TM_DATA_VALID after the last;
 *   RNDV        the TMH is followed by a struct vrdma_rvh naming the data
 *               at the sender: on a match the receiving QP reads it into
 *               the buffer by an RDMA READ of its own and then sends the
 *               sender a FIN (the TMH and RVH with opcode FIN), by internal
 *               send work (the QP's kernel send sequence, requester.c);
 *               completions: TM_MATCH at once, TM_DATA_VALID once the data
 *               is there;
 *   NO_TAG      lands whole in a WQE of the ring: TM_NO_TAG;
 *   anything else, or no match, is "unexpected": it lands whole in a WQE
 *               of the ring (TM_RECV without flags), and matching stops
 *               until the process reports, with IBV_OPS_TM_SYNC, that it
 *               has handled as many unexpected messages as were delivered:
 *               a buffer posted in between could otherwise take a later
 *               message that the unexpected one should have matched.
 *
 * Every completion goes to the SRQ's CQ.  The state is the SRQ's and its
 * QPs' responders (in their tasks) and completers (also in the tasklet)
 * use it concurrently: tm->lock, BH-safe.  A completion about a match is
 * written under it, so completions come in the order of the matches.
 */
#include "vrdma.h"
#include "pkt.h"

#define UVERBS_MODULE_NAME vrdma_ib
#include <rdma/uverbs_named_ioctl.h>

enum vrdma_tag_state {
	VRDMA_TAG_FREE,
	VRDMA_TAG_POSTED,	/* in the list, may match */
	VRDMA_TAG_BUSY,		/* matched, its data not complete yet */
};

/**
 * struct vrdma_tm_tag - a tagged buffer
 * @list: in tm->posted (in the order they were added) or tm->free
 * @state: enum vrdma_tag_state
 * @num_sge: entries of @sge
 * @length: bytes @sge can take
 * @tag: matches a message whose tag & @mask equals @tag & @mask
 * @mask: see @tag
 * @wr_id: recv_wr_id of the TAG_ADD, for the buffer's completions
 * @sge: the buffer, checked against the SRQ's PD when added
 */
struct vrdma_tm_tag {
	struct list_head list;
	u8 state;
	u32 num_sge;
	u32 length;
	u64 tag;
	u64 mask;
	u64 wr_id;
	struct vrdma_sge sge[VRDMA_TM_MAX_SGE];
};

/**
 * struct vrdma_tm - the matching state of a tag-matching SRQ
 * @lock: protects all of it; BH-safe (completers run in the tasklet)
 * @posted: the buffers that may match, oldest first
 * @free: the entries of @tags not in use
 * @tags: max_num_tags entries; a handle is an index
 * @num_tags: entries of @tags
 * @max_ops: operations one VRDMA_IB_METHOD_SRQ_OPS call may carry
 * @unexp_hw: unexpected messages delivered
 * @unexp_sw: the count the process last reported (IBV_OPS_TM_SYNC):
 *	messages are matched only while both are equal
 */
struct vrdma_tm {
	spinlock_t lock;	/* see above */
	struct list_head posted;
	struct list_head free;
	struct vrdma_tm_tag *tags;
	u32 num_tags;
	u32 max_ops;
	u32 unexp_hw;
	u32 unexp_sw;
};

/* The SRQ's CQ, where every tag-matching completion goes. */
static struct vrdma_cq *vrdma_tm_cq(struct vrdma_srq *srq)
{
	return to_vcq(srq->ibsrq.ext.cq);
}

static int vrdma_tm_post(struct vrdma_srq *srq, const struct vrdma_cqe *cqe,
			 u64 tag, u32 priv, bool solicited)
{
	struct vrdma_cqe_tm tm = { .tag = tag, .priv = priv };

	return vrdma_cq_post_tm(vrdma_tm_cq(srq), cqe, &tm, solicited);
}

/* Back to the free entries (tm->lock held). */
static void vrdma_tm_release(struct vrdma_tm *tm, u32 handle)
{
	struct vrdma_tm_tag *t = &tm->tags[handle];

	if (t->state == VRDMA_TAG_POSTED)
		list_del(&t->list);
	if (t->state != VRDMA_TAG_FREE)
		list_add_tail(&t->list, &tm->free);
	t->state = VRDMA_TAG_FREE;
}

/**
 * vrdma_tm_srq_create() - make @srq a tag-matching SRQ
 * @srq: the SRQ being created, its ring made
 * @init: its attributes: ext.tag_matching.max_num_tags, ext.cq
 * @max_ops: from the provider's request
 *
 * Return: 0, -EINVAL for sizes beyond tm_caps or no CQ, -ENOMEM.
 */
int vrdma_tm_srq_create(struct vrdma_srq *srq, struct ib_srq_init_attr *init,
			u32 max_ops)
{
	struct ib_tm_caps *caps = &to_vdev(srq->ibsrq.device)->attr.tm_caps;
	u32 n = init->ext.tag_matching.max_num_tags, i;
	struct vrdma_tm *tm;

	if (!n || n > caps->max_num_tags || !max_ops ||
	    max_ops > caps->max_ops || !init->ext.cq)
		return -EINVAL;
	tm = kzalloc(sizeof(*tm), VRDMA_GFP_USER);
	if (!tm)
		return -ENOMEM;
	tm->tags = kvcalloc(n, sizeof(*tm->tags), VRDMA_GFP_USER);
	if (!tm->tags) {
		kfree(tm);
		return -ENOMEM;
	}
	spin_lock_init(&tm->lock);
	INIT_LIST_HEAD(&tm->posted);
	INIT_LIST_HEAD(&tm->free);
	for (i = 0; i < n; i++)
		list_add_tail(&tm->tags[i].list, &tm->free);
	tm->num_tags = n;
	tm->max_ops = max_ops;
	srq->tm = tm;
	return 0;
}

/**
 * vrdma_tm_srq_destroy() - free the matching state of @srq
 * @srq: an SRQ no QP uses any more
 */
void vrdma_tm_srq_destroy(struct vrdma_srq *srq)
{
	if (!srq->tm)
		return;
	kvfree(srq->tm->tags);
	kfree(srq->tm);
	srq->tm = NULL;
}

/* The oldest posted buffer @tag matches, or NULL (tm->lock held). */
static struct vrdma_tm_tag *vrdma_tm_match(struct vrdma_tm *tm, u64 tag)
{
	struct vrdma_tm_tag *t;

	list_for_each_entry(t, &tm->posted, list)
		if (!((t->tag ^ tag) & t->mask))
			return t;
	return NULL;
}

/* The receive WQE in use becomes the tagged buffer @t. */
static void vrdma_tm_use_tag(struct vrdma_qp *qp, struct vrdma_tm *tm,
			     struct vrdma_tm_tag *t)
{
	struct vrdma_rwqe *rw = &qp->rwqe;

	rw->wqe->wr_id = t->wr_id;
	rw->wqe->num_sge = t->num_sge;
	memcpy(rw->wqe->sge, t->sge, t->num_sge * sizeof(t->sge[0]));
	rw->pd = to_vpd(qp->srq->ibsrq.pd);
	rw->length = t->length;
	rw->offset = 0;
	rw->valid = true;
	rw->tm_handle = t - tm->tags;
	list_del(&t->list);
	t->state = VRDMA_TAG_BUSY;
}

/* A new WQE of the QP's own send work at the end of its send sequence. */
static struct vrdma_swqe *vrdma_tm_swqe_new(struct vrdma_qp *qp, u8 kind,
					    u32 length)
{
	struct vrdma_swqe *swqe = vrdma_swqe_at(qp, qp->req.fetch++);

	memset(swqe->wqe, 0, VRDMA_SEND_WQE_HDR_SIZE);
	swqe->kind = kind;
	swqe->pd = NULL;
	swqe->state = VRDMA_SWQE_NEW;
	swqe->status = IB_WC_SUCCESS;
	swqe->rd_atomic = false;
	swqe->read_done = 0;
	swqe->length = length;
	qp->tm_internal++;
	return swqe;
}

/*
 * A rendezvous request matched the tagged buffer @t, which can hold its
 * data: the QP reads the data into the buffer, then tells the sender
 * with a FIN, fenced behind the READ so that it leaves only once the data
 * is there.  The READ's completion completes the buffer
 * (vrdma_tm_swqe_done()).
 */
static void vrdma_tm_rndv(struct vrdma_qp *qp, struct vrdma_tm *tm,
			  struct vrdma_tm_tag *t, const struct vrdma_tmh *tmh,
			  const struct vrdma_rvh *rvh)
{
	struct vrdma_send_wqe *wqe;
	struct vrdma_swqe *swqe;

	swqe = vrdma_tm_swqe_new(qp, VRDMA_SWQE_TM_READ, be32_to_cpu(rvh->len));
	wqe = swqe->wqe;
	wqe->wr_id = t->wr_id;
	wqe->opcode = IB_UVERBS_WR_RDMA_READ;
	wqe->num_sge = t->num_sge;
	memcpy(wqe->sge, t->sge, t->num_sge * sizeof(t->sge[0]));
	wqe->rdma.remote_addr = be64_to_cpu(rvh->va);
	wqe->rdma.rkey = be32_to_cpu(rvh->rkey);
	swqe->pd = to_vpd(qp->srq->ibsrq.pd);
	swqe->tm_handle = t - tm->tags;

	/* The FIN: the request's TMH and RVH, with opcode FIN. */
	swqe = vrdma_tm_swqe_new(qp, VRDMA_SWQE_TM_FIN,
				 sizeof(*tmh) + sizeof(*rvh));
	wqe = swqe->wqe;
	wqe->opcode = IB_UVERBS_WR_SEND;
	wqe->flags = VRDMA_SEND_INLINE | VRDMA_SEND_FENCE;
	wqe->inline_len = swqe->length;
	memcpy(wqe->sge, tmh, sizeof(*tmh));
	memcpy((u8 *)wqe->sge + sizeof(*tmh), rvh, sizeof(*rvh));
	((struct vrdma_tmh *)wqe->sge)->opcode = VRDMA_TMH_FIN;
}

/*
 * A rendezvous request whose data the matched buffer cannot hold: the
 * buffer takes what it can of the request itself (its TMH and RVH first)
 * and completes with IBV_WC_TM_RNDV_INCOMPLETE, for the process to fetch
 * the data itself.  No byte goes beyond the buffer.
 */
static u8 vrdma_tm_rndv_short(struct vrdma_qp *qp, struct sk_buff *skb,
			      u32 *byte_len)
{
	struct vrdma_pkt *pkt = vrdma_pkt(skb);
	struct vrdma_rwqe *rw = &qp->rwqe;
	u32 n = min(pkt->paylen, rw->length);

	*byte_len = n;
	if (n && vrdma_sgl_copy_from_skb(qp->vdev, rw->pd, rw->wqe->sge,
					 rw->wqe->num_sge, 0, skb,
					 pkt->hdr_len, n))
		return IB_WC_LOC_PROT_ERR;
	return VRDMA_WC_TM_RNDV_INCOMPLETE;
}

/* The CQE of a match of @t's buffer, but for its status and length. */
static struct vrdma_cqe vrdma_tm_match_cqe(struct vrdma_qp *qp,
					   const struct vrdma_tm_tag *t)
{
	return (struct vrdma_cqe){
		.wr_id = t->wr_id,
		.opcode = VRDMA_WC_TM_RECV,
		.wc_flags = VRDMA_WC_TM_MATCH,
		.qp_num = qp->ibqp.qp_num,
		.src_qp = qp->attr.dest_qp_num,
	};
}

/*
 * A rendezvous request that matched @t (tm->lock held): the READ of its
 * data is started, or the buffer is too short for it; either way the
 * match is completed now, and the request itself places nothing.
 * Return: true if the SRQ's CQ overflowed (the QP goes to error).
 */
static bool vrdma_tm_take_rndv(struct vrdma_qp *qp, struct vrdma_tm_tag *t,
			       struct sk_buff *skb,
			       const struct vrdma_tmh *tmh,
			       const struct vrdma_rvh *rvh)
{
	struct vrdma_tm *tm = qp->srq->tm;
	struct vrdma_cqe cqe = vrdma_tm_match_cqe(qp, t);
	struct vrdma_rwqe *rw = &qp->rwqe;
	u32 handle = t - tm->tags;
	bool fatal;

	vrdma_tm_use_tag(qp, tm, t);
	if (be32_to_cpu(rvh->len) > t->length) {
		cqe.status = vrdma_tm_rndv_short(qp, skb, &cqe.byte_len);
		cqe.wc_flags |= VRDMA_WC_TM_DATA_VALID;
		vrdma_tm_release(tm, handle);
	} else {
		vrdma_tm_rndv(qp, tm, t, tmh, rvh);
	}
	fatal = vrdma_tm_post(qp->srq, &cqe, be64_to_cpu(tmh->tag),
			      be32_to_cpu(tmh->app_ctx), false);
	rw->tm = VRDMA_TM_DISCARD;
	rw->tm_skip = U32_MAX;
	rw->length = 0;
	return fatal;
}

/*
 * An eager message that matched @t (tm->lock held): its data goes to
 * @t's buffer past the TMH.  The match of a message of more than one
 * packet is completed now, its data's completion when the last arrives.
 * Return: true if the SRQ's CQ overflowed (the QP goes to error).
 */
static bool vrdma_tm_take_eager(struct vrdma_qp *qp, struct vrdma_tm_tag *t,
				const struct vrdma_tmh *tmh, bool only)
{
	struct vrdma_rwqe *rw = &qp->rwqe;
	struct vrdma_cqe cqe;

	vrdma_tm_use_tag(qp, qp->srq->tm, t);
	rw->tm = VRDMA_TM_EAGER;
	rw->tm_opcode = VRDMA_WC_TM_RECV;
	rw->tm_skip = sizeof(*tmh);
	rw->tm_tag = be64_to_cpu(tmh->tag);
	rw->tm_priv = be32_to_cpu(tmh->app_ctx);
	rw->tm_split = !only;
	if (!rw->tm_split)
		return false;
	cqe = vrdma_tm_match_cqe(qp, t);
	return vrdma_tm_post(qp->srq, &cqe, rw->tm_tag, rw->tm_priv, false);
}

/**
 * vrdma_tm_take() - the receive buffer of a SEND to a QP of a
 *	tag-matching SRQ
 * @qp: an RC QP whose SRQ is a tag-matching one, engines owned, mutex
 *	held; qp->rwqe free
 * @skb: the SEND's first (or only) packet
 *
 * Matches the message's TMH against the posted buffers, or takes a WQE of
 * the ring for it (see the top of the file).  A match of a single-packet
 * message is completed when its data is placed; of a longer one the match
 * is completed here.
 *
 * Return: as vrdma_take_rwqe(): false if no WQE of the ring is posted for
 * a message that needs one (RNR), or the QP is now in error.
 */
bool vrdma_tm_take(struct vrdma_qp *qp, struct sk_buff *skb)
{
	struct vrdma_pkt *pkt = vrdma_pkt(skb);
	struct vrdma_tm *tm = qp->srq->tm;
	struct vrdma_rwqe *rw = &qp->rwqe;
	struct {
		struct vrdma_tmh tmh;
		struct vrdma_rvh rvh;
	} hdr = {};
	struct vrdma_tmh *tmh = &hdr.tmh;
	u32 have = min_t(u32, pkt->paylen, sizeof(hdr));
	bool only = pkt->mask & VRDMA_OPF_LAST;
	bool no_tag;
	struct vrdma_tm_tag *t = NULL;
	bool fatal = false;

	if (have && skb_copy_bits(skb, pkt->hdr_len, &hdr, have))
		have = 0;
	no_tag = have && tmh->opcode == VRDMA_TMH_NO_TAG;

	spin_lock_bh(&tm->lock);
	/* A rendezvous request is one packet: its headers and a little data. */
	if (tm->unexp_hw == tm->unexp_sw &&
	    ((tmh->opcode == VRDMA_TMH_EAGER && have >= sizeof(*tmh)) ||
	     (tmh->opcode == VRDMA_TMH_RNDV && have == sizeof(hdr) && only)))
		t = vrdma_tm_match(tm, be64_to_cpu(tmh->tag));
	/* No room for its READ and FIN now: the sender tries again (RNR). */
	if (t && tmh->opcode == VRDMA_TMH_RNDV &&
	    qp->tm_internal + 2 > 2 * VRDMA_TM_MAX_RNDV) {
		spin_unlock_bh(&tm->lock);
		return false;
	}
	if (t && tmh->opcode == VRDMA_TMH_RNDV)
		fatal = vrdma_tm_take_rndv(qp, t, skb, tmh, &hdr.rvh);
	else if (t)
		fatal = vrdma_tm_take_eager(qp, t, tmh, only);
	else if (!no_tag)
		tm->unexp_hw++;	/* unexpected: matching stops from here on */
	spin_unlock_bh(&tm->lock);

	/*
	 * The QP's error flushes its send work, which takes tm->lock: never
	 * under it.  So is a WQE of the ring taken, which may find the ring
	 * garbage.
	 */
	if (fatal) {
		vrdma_qp_error(qp, IB_EVENT_QP_FATAL);
		return false;
	}
	if (t)
		return true;
	if (!vrdma_take_rwqe(qp)) {
		/* Not delivered after all: the sender tries again (RNR). */
		if (!no_tag) {
			spin_lock_bh(&tm->lock);
			tm->unexp_hw--;
			spin_unlock_bh(&tm->lock);
		}
		return false;
	}
	rw->tm = VRDMA_TM_PLAIN;
	rw->tm_opcode = no_tag ? VRDMA_WC_TM_NO_TAG : VRDMA_WC_TM_RECV;
	return true;
}

/**
 * vrdma_tm_complete() - write the completion of a message received on a
 *	QP of a tag-matching SRQ, and release its buffer
 * @qp: the QP, engines owned; qp->rwqe in use, about to be released
 * @cqe: the receive completion as for any SRQ's WQE: its status, length,
 *	immediate data
 * @solicited: the message asked for a solicited event
 *
 * Return: 0, or -ENOSPC when the CQ overflowed.
 */
int vrdma_tm_complete(struct vrdma_qp *qp, struct vrdma_cqe *cqe,
		      bool solicited)
{
	struct vrdma_rwqe *rw = &qp->rwqe;
	struct vrdma_srq *srq = qp->srq;
	struct vrdma_tm *tm = srq->tm;
	u64 tag = 0;
	u32 priv = 0;
	int ret = 0;

	switch (rw->tm) {
	case VRDMA_TM_PLAIN:
		if (cqe->status == IB_WC_SUCCESS)
			cqe->opcode = rw->tm_opcode;
		ret = vrdma_tm_post(srq, cqe, 0, 0, solicited);
		break;
	case VRDMA_TM_EAGER:
		cqe->opcode = VRDMA_WC_TM_RECV;
		if (cqe->status == IB_WC_SUCCESS)
			cqe->wc_flags |= VRDMA_WC_TM_DATA_VALID;
		if (!rw->tm_split && cqe->status == IB_WC_SUCCESS) {
			cqe->wc_flags |= VRDMA_WC_TM_MATCH;
			tag = rw->tm_tag;
			priv = rw->tm_priv;
		}
		spin_lock_bh(&tm->lock);
		ret = vrdma_tm_post(srq, cqe, tag, priv, solicited);
		vrdma_tm_release(tm, rw->tm_handle);
		spin_unlock_bh(&tm->lock);
		break;
	default:
		break;
	}
	rw->tm = VRDMA_TM_NONE;
	rw->tm_skip = 0;
	return ret;
}

/**
 * vrdma_tm_swqe_done() - the kernel's own send work completed
 * @qp: the QP, engines owned; @swqe left its send sequence
 * @swqe: a rendezvous READ or FIN (tm.c)
 * @status: how
 *
 * The READ's completion is the tagged buffer's: TM_DATA_VALID (without the
 * tag, as the match was completed already) or its error, and the buffer
 * is free again.  The FIN's is nobody's: a failure puts the QP in error as
 * any RC send does.
 */
void vrdma_tm_swqe_done(struct vrdma_qp *qp, struct vrdma_swqe *swqe,
			u8 status)
{
	struct vrdma_srq *srq = qp->srq;
	struct vrdma_tm *tm = srq->tm;
	int ret;
	struct vrdma_cqe cqe = {
		.wr_id = swqe->wqe->wr_id,
		.status = status,
		.opcode = VRDMA_WC_TM_RECV,
		.wc_flags = VRDMA_WC_TM_DATA_VALID,
		.byte_len = swqe->length,
		.qp_num = qp->ibqp.qp_num,
		.src_qp = qp->attr.dest_qp_num,
	};

	qp->tm_internal--;
	if (swqe->kind != VRDMA_SWQE_TM_READ)
		return;
	if (status != IB_WC_SUCCESS)
		cqe.wc_flags = 0;
	spin_lock_bh(&tm->lock);
	ret = vrdma_tm_post(srq, &cqe, 0, 0, false);
	vrdma_tm_release(tm, swqe->tm_handle);
	spin_unlock_bh(&tm->lock);
	/*
	 * Not under tm->lock: the error flushes the QP's send work.  Nor
	 * again from a flush, which is where a QP in error gets here.
	 */
	if (ret && qp->state != IB_QPS_ERR)
		vrdma_qp_error(qp, IB_EVENT_QP_FATAL);
}

/**
 * vrdma_tm_qp_reset() - a QP of a tag-matching SRQ goes to RESET
 * @qp: the QP, engines owned, mutex held
 *
 * What it had matched and not completed (a message being received, the
 * READs of rendezvous) is dropped without completions, as a reset drops
 * its WQEs; the tagged buffers are free again.
 */
void vrdma_tm_qp_reset(struct vrdma_qp *qp)
{
	struct vrdma_tm *tm = qp->srq->tm;
	u32 i;

	spin_lock_bh(&tm->lock);
	if (qp->rwqe.valid && qp->rwqe.tm == VRDMA_TM_EAGER)
		vrdma_tm_release(tm, qp->rwqe.tm_handle);
	for (i = qp->req.head; i != qp->req.fetch; i++) {
		struct vrdma_swqe *swqe = vrdma_swqe_at(qp, i);

		if (swqe->kind == VRDMA_SWQE_TM_READ)
			vrdma_tm_release(tm, swqe->tm_handle);
	}
	spin_unlock_bh(&tm->lock);
	qp->rwqe.tm = VRDMA_TM_NONE;
	qp->rwqe.tm_skip = 0;
	qp->tm_internal = 0;
}

/*
 * Execute one operation; 0 or a negative errno that refuses it.  An
 * operation that runs but fails (deleting a buffer no longer posted)
 * completes with IBV_WC_TM_ERR, signaled or not.
 */
static int vrdma_tm_op(struct vrdma_srq *srq, const struct vrdma_srq_op *op,
		       u32 *handle)
{
	struct vrdma_dev *vdev = to_vdev(srq->ibsrq.device);
	struct vrdma_tm *tm = srq->tm;
	struct vrdma_cqe cqe = { .wr_id = op->wr_id };
	struct vrdma_tm_tag *t;
	u32 total, i;

	if (op->opcode > VRDMA_SRQ_OP_TAG_SYNC ||
	    (op->flags & ~(VRDMA_SRQ_OP_SIGNALED | VRDMA_SRQ_OP_TM_SYNC)) ||
	    op->reserved)
		return -EINVAL;
	if (op->opcode == VRDMA_SRQ_OP_TAG_ADD &&
	    (op->num_sge > VRDMA_TM_MAX_SGE ||
	     vrdma_sgl_check(vdev, to_vpd(srq->ibsrq.pd), op->sge,
			     op->num_sge, IB_ACCESS_LOCAL_WRITE, &total)))
		return -EINVAL;
	if (op->opcode == VRDMA_SRQ_OP_TAG_DEL && op->handle >= tm->num_tags)
		return -EINVAL;

	spin_lock_bh(&tm->lock);
	switch (op->opcode) {
	case VRDMA_SRQ_OP_TAG_ADD:
		t = list_first_entry_or_null(&tm->free, struct vrdma_tm_tag,
					     list);
		if (!t) {
			spin_unlock_bh(&tm->lock);
			return -ENOMEM;
		}
		t->num_sge = op->num_sge;
		for (i = 0; i < op->num_sge; i++)
			t->sge[i] = op->sge[i];
		t->length = total;
		t->tag = op->tag;
		t->mask = op->mask;
		t->wr_id = op->recv_wr_id;
		t->state = VRDMA_TAG_POSTED;
		list_move_tail(&t->list, &tm->posted);
		*handle = t - tm->tags;
		cqe.opcode = VRDMA_WC_TM_ADD;
		break;
	case VRDMA_SRQ_OP_TAG_DEL:
		/* Consumed by a message meanwhile: the process learns so. */
		if (tm->tags[op->handle].state != VRDMA_TAG_POSTED)
			cqe.status = VRDMA_WC_TM_ERR;
		else
			vrdma_tm_release(tm, op->handle);
		cqe.opcode = VRDMA_WC_TM_DEL;
		break;
	default:
		cqe.opcode = VRDMA_WC_TM_SYNC;
		break;
	}
	if (op->flags & VRDMA_SRQ_OP_TM_SYNC)
		tm->unexp_sw = op->unexpected_cnt;
	if (tm->unexp_sw != tm->unexp_hw)
		cqe.wc_flags = VRDMA_WC_TM_SYNC_REQ;
	if ((op->flags & VRDMA_SRQ_OP_SIGNALED) || cqe.status)
		vrdma_tm_post(srq, &cqe, 0, 0, false);
	spin_unlock_bh(&tm->lock);
	return 0;
}

/*
 * VRDMA_IB_METHOD_SRQ_OPS: ibv_post_srq_ops().  ib_core has looked the
 * handle up as an SRQ of this command file and copied the operations in;
 * each is checked before it is executed.
 */
static int
UVERBS_HANDLER(VRDMA_IB_METHOD_SRQ_OPS)(struct uverbs_attr_bundle *attrs)
{
	struct ib_srq *ibsrq = uverbs_attr_get_obj(attrs,
						   VRDMA_IB_ATTR_SRQ_OPS_HANDLE);
	struct vrdma_srq *srq = to_vsrq(ibsrq);
	struct vrdma_srq_ops_resp resp = {};
	const struct vrdma_srq_op *ops;
	u32 *handles;
	int len, n, ret;

	if (!srq->tm)
		return -EINVAL;
	len = uverbs_attr_get_len(attrs, VRDMA_IB_ATTR_SRQ_OPS_WRS);
	if (len <= 0 || len % sizeof(*ops))
		return -EINVAL;
	n = len / sizeof(*ops);
	ops = uverbs_attr_get_alloced_ptr(attrs, VRDMA_IB_ATTR_SRQ_OPS_WRS);
	if (IS_ERR(ops))
		return PTR_ERR(ops);
	if (uverbs_attr_get_len(attrs, VRDMA_IB_ATTR_SRQ_OPS_HANDLES) <
	    n * (int)sizeof(u32))
		return -EINVAL;
	handles = kcalloc(n, sizeof(*handles), GFP_KERNEL);
	if (!handles)
		return -ENOMEM;

	for (resp.done = 0; resp.done < n; resp.done++) {
		/* More at once than max_ops: as a full command queue. */
		if (resp.done == srq->tm->max_ops) {
			resp.error = ENOMEM;
			break;
		}
		resp.error = -vrdma_tm_op(srq, &ops[resp.done],
					  &handles[resp.done]);
		if (resp.error)
			break;
	}
	ret = uverbs_copy_to(attrs, VRDMA_IB_ATTR_SRQ_OPS_HANDLES, handles,
			     n * sizeof(*handles));
	kfree(handles);
	if (ret)
		return ret;
	return uverbs_copy_to(attrs, VRDMA_IB_ATTR_SRQ_OPS_RESP, &resp,
			      sizeof(resp));
}

DECLARE_UVERBS_NAMED_METHOD(VRDMA_IB_METHOD_SRQ_OPS,
			    UVERBS_ATTR_IDR(VRDMA_IB_ATTR_SRQ_OPS_HANDLE,
					    UVERBS_OBJECT_SRQ,
					    UVERBS_ACCESS_READ, UA_MANDATORY),
			    UVERBS_ATTR_PTR_IN(VRDMA_IB_ATTR_SRQ_OPS_WRS,
					       UVERBS_ATTR_MIN_SIZE(sizeof(struct vrdma_srq_op)),
					       UA_MANDATORY, UA_ALLOC_AND_COPY),
			    UVERBS_ATTR_PTR_OUT(VRDMA_IB_ATTR_SRQ_OPS_HANDLES,
						UVERBS_ATTR_MIN_SIZE(sizeof(u32)),
						UA_MANDATORY),
			    UVERBS_ATTR_PTR_OUT(VRDMA_IB_ATTR_SRQ_OPS_RESP,
						UVERBS_ATTR_TYPE(struct vrdma_srq_ops_resp),
						UA_MANDATORY));

ADD_UVERBS_METHODS(vrdma_ib_srq, UVERBS_OBJECT_SRQ,
		   &UVERBS_METHOD(VRDMA_IB_METHOD_SRQ_OPS));

/* Chained into the device's uverbs API (dm.c). */
const struct uapi_definition vrdma_tm_uapi_defs[] = {
	UAPI_DEF_CHAIN_OBJ_TREE(UVERBS_OBJECT_SRQ, &vrdma_ib_srq),
	{}
};
