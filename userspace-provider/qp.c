// SPDX-License-Identifier: (GPL-2.0 OR Linux-OpenIB)
/*
 * Queue pairs.
 *
 * A QP has two rings the kernel allocates and the process maps: the SQ and,
 * unless the QP receives through an SRQ, the RQ.  post_send writes send
 * WQEs into the SQ and then rings the doorbell, a POST_SEND command with no
 * work requests, unless the kernel said it will look anyway; post_recv
 * only writes the RQ (the kernel looks at it when a packet arrives),
 * except in ERR.  An extended QP's ibv_wr_* API (wr.c) writes the SQ the
 * same way, in batches.  Creating, modifying and destroying a QP go
 * through uverbs.
 *
 * XRC: an initiator QP (IBV_QPT_XRC_SEND) is an SQ without an RQ, whose
 * WQEs name the SRQ at the target that takes them.  A target QP
 * (IBV_QPT_XRC_RECV) has no ring at all: its messages go to the XRC SRQs
 * they name and complete on those SRQs' CQs, so nothing is posted to it;
 * ib_core makes it in an XRC domain, other processes of the domain open
 * it by number (ibv_open_qp), and each may modify or destroy its handle.
 *
 * Raw packet QPs (IBV_QPT_RAW_PACKET; the kernel asks for CAP_NET_RAW)
 * have a UD QP's rings; a send WQE has no address handle, its bytes are
 * the whole Ethernet frame.  They receive what their flows steer to them:
 * ibv_create_flow() and ibv_destroy_flow() are the kernel's alone.
 */
#include <errno.h>
#include <stdlib.h>
#include <unistd.h>

#include "vrdma.h"

/* Tears down what vrdma_qp_setup_rings() set up. */
static void vrdma_qp_unmap_rings(struct vrdma_qp *qp)
{
	vrdma_unmap_ring(&qp->sq.ring);
	vrdma_unmap_ring(&qp->rq.ring);
}

/*
 * Maps the rings of a QP the kernel has just created; attr holds the
 * capabilities the kernel granted.
 */
static int vrdma_qp_setup_rings(struct vrdma_context *ctx,
				struct vrdma_qp *qp,
				const struct ibv_qp_init_attr_ex *attr,
				const struct vrdma_create_qp_resp *resp)
{
	const struct ibv_qp_cap *cap = &attr->cap;
	bool rq = !attr->srq && attr->qp_type != IBV_QPT_XRC_SEND;
	int ret;

	/* a kernel that did not write its answer leaves qpn 0 */
	if (resp->qpn != qp->vqp.qp.qp_num) {
		vrdma_err(&ctx->ibv_ctx, "QP number %u, driver data says %u\n",
			  qp->vqp.qp.qp_num, resp->qpn);
		return EPROTO;
	}
	/* vrdma_send_wqe.num_sge is a u8 */
	if (cap->max_send_sge > UINT8_MAX) {
		vrdma_err(&ctx->ibv_ctx, "max_send_sge %u\n",
			  cap->max_send_sge);
		return EPROTO;
	}
	ret = vrdma_check_wq(ctx, "SQ", &resp->sq, VRDMA_SEND_WQE_HDR_SIZE,
			     cap->max_send_wr, cap->max_send_sge,
			     cap->max_inline_data);
	if (ret)
		return ret;
	if (!rq) {
		if (resp->rq.num_entries) {
			vrdma_err(&ctx->ibv_ctx,
				  "an RQ ring on a QP without RQ\n");
			return EPROTO;
		}
	} else {
		ret = vrdma_check_wq(ctx, "RQ", &resp->rq,
				     VRDMA_RECV_WQE_HDR_SIZE, cap->max_recv_wr,
				     cap->max_recv_sge, 0);
		if (ret)
			return ret;
	}

	qp->sq.limits.max_sge = cap->max_send_sge;
	qp->sq.limits.max_inline = cap->max_inline_data;
	qp->sq.limits.sig_all = attr->sq_sig_all ? VRDMA_SEND_SIGNALED : 0;
	qp->sq.limits.ud = attr->qp_type == IBV_QPT_UD;
	qp->sq.limits.xrc = attr->qp_type == IBV_QPT_XRC_SEND;
	qp->rq.max_sge = rq ? cap->max_recv_sge : 0;

	if (resp->sq.num_entries) {
		ret = vrdma_map_ring(ctx, &qp->sq.ring, &resp->sq,
				     VRDMA_SEND_WQE_HDR_SIZE, true);
		if (ret)
			return ret;
	}
	if (rq && resp->rq.num_entries) {
		ret = vrdma_map_ring(ctx, &qp->rq.ring, &resp->rq,
				     VRDMA_RECV_WQE_HDR_SIZE, true);
		if (ret) {
			vrdma_qp_unmap_rings(qp);
			return ret;
		}
	}
	return 0;
}

struct vrdma_qp *vrdma_qp_alloc(void)
{
	struct vrdma_qp *qp;
	int ret;

	qp = calloc(1, sizeof(*qp));
	if (!qp)
		return NULL;
	ret = vrdma_lock_init(&qp->sq.lock);
	if (ret)
		goto err_free;
	ret = vrdma_lock_init(&qp->rq.lock);
	if (ret)
		goto err_sq_lock;
	return qp;

err_sq_lock:
	vrdma_lock_destroy(&qp->sq.lock);
err_free:
	free(qp);
	errno = ret;
	return NULL;
}

void vrdma_qp_free(struct vrdma_qp *qp)
{
	vrdma_lock_destroy(&qp->rq.lock);
	vrdma_lock_destroy(&qp->sq.lock);
	free(qp);
}

/*
 * What an XRC QP is made with.  ib_core makes a target QP in an XRC domain
 * alone, with no CQ or SRQ, and libibverbs records in the ibv_qp those
 * attr holds: none, so that nothing takes them for the QP's.  A PD the
 * application gave stays recorded, as other providers leave it: the kernel
 * never sees it (each request's SRQ brings its own), but librdmacm takes
 * its rdma_cm_id's PD from a target QP's and makes the XRC SRQ on it.  An
 * initiator receives nothing: no SRQ, no receive CQ.  Returns 0 or EINVAL.
 */
static int vrdma_qp_xrc_attr(struct ibv_qp_init_attr_ex *attr)
{
	switch (attr->qp_type) {
	case IBV_QPT_XRC_RECV:
		if (!(attr->comp_mask & IBV_QP_INIT_ATTR_XRCD) || !attr->xrcd)
			return EINVAL;
		attr->send_cq = NULL;
		attr->recv_cq = NULL;
		attr->srq = NULL;
		return 0;
	case IBV_QPT_XRC_SEND:
		if (attr->srq)
			return EINVAL;
		attr->recv_cq = NULL;
		return 0;
	default:
		return 0;
	}
}

/*
 * Both create verbs end here, with comp_mask IBV_QP_INIT_ATTR_PD, or
 * IBV_QP_INIT_ATTR_XRCD for an XRC target QP; on success attr->cap holds
 * what the kernel granted.
 */
static struct ibv_qp *vrdma_create_qp_common(struct ibv_context *context,
					     struct ibv_qp_init_attr_ex *attr)
{
	struct vrdma_context *ctx = to_vctx(context);
	bool target = attr->qp_type == IBV_QPT_XRC_RECV;
	struct vrdma_cmd_create_qp_resp resp = {};
	struct vrdma_cmd_create_qp cmd = {};
	struct vrdma_qp *qp;
	int ret;

	ret = vrdma_qp_xrc_attr(attr);
	if (ret) {
		errno = ret;
		return NULL;
	}
	qp = vrdma_qp_alloc();
	if (!qp)
		return NULL;

	/*
	 * ib_core gives the driver no udata for an XRC target QP, which has
	 * no rings to describe: no room for an answer that never comes.
	 */
	ret = ibv_cmd_create_qp_ex(context, &qp->vqp, attr, &cmd.ibv_cmd,
				   sizeof(cmd), &resp.ibv_resp,
				   target ? sizeof(resp.ibv_resp) :
					    sizeof(resp));
	if (ret)
		goto err_free;

	if (!target) {
		ret = vrdma_qp_setup_rings(ctx, qp, attr, &resp.drv_payload);
		if (ret)
			goto err_destroy;
	}
	/* Made on a thread domain: one thread at a time posts. */
	if (attr->comp_mask & IBV_QP_INIT_ATTR_PD &&
	    vrdma_pd_single_threaded(attr->pd))
		qp->sq.lock.single = qp->rq.lock.single = true;
	return &qp->vqp.qp;

err_destroy:
	ibv_cmd_destroy_qp(&qp->vqp.qp);
err_free:
	vrdma_qp_free(qp);
	errno = ret;
	return NULL;
}

struct ibv_qp *vrdma_create_qp(struct ibv_pd *pd,
			       struct ibv_qp_init_attr *attr)
{
	struct ibv_qp_init_attr_ex attr_ex = {
		.qp_context = attr->qp_context,
		.send_cq = attr->send_cq,
		.recv_cq = attr->recv_cq,
		.srq = attr->srq,
		.cap = attr->cap,
		.qp_type = attr->qp_type,
		.sq_sig_all = attr->sq_sig_all,
		.comp_mask = IBV_QP_INIT_ATTR_PD,
		.pd = pd,
	};
	struct ibv_qp *qp;

	qp = vrdma_create_qp_common(pd->context, &attr_ex);
	if (qp)
		attr->cap = attr_ex.cap;
	return qp;
}

/*
 * ibv_create_qp_ex() with only a PD calls create_qp; this one sees the
 * rest, and takes what create_qp can express, a PD and no creation flags,
 * an XRC domain for an XRC target QP (which needs one, and no PD), plus
 * the ibv_wr_* API (IBV_QP_INIT_ATTR_SEND_OPS_FLAGS), which is the
 * provider's alone: the kernel sees the same QP either way.
 */
struct ibv_qp *vrdma_create_qp_ex(struct ibv_context *context,
				  struct ibv_qp_init_attr_ex *attr)
{
	const uint32_t known = IBV_QP_INIT_ATTR_PD | IBV_QP_INIT_ATTR_XRCD |
			       IBV_QP_INIT_ATTR_CREATE_FLAGS |
			       IBV_QP_INIT_ATTR_SEND_OPS_FLAGS;
	bool wr_api = attr->comp_mask & IBV_QP_INIT_ATTR_SEND_OPS_FLAGS;
	bool target = attr->qp_type == IBV_QPT_XRC_RECV;
	struct ibv_qp_init_attr_ex attr_k;
	struct ibv_qp *qp;
	int ret;

	/* RSS: a raw packet QP on an indirection table (wq.c) */
	if (attr->comp_mask & (IBV_QP_INIT_ATTR_IND_TABLE |
			       IBV_QP_INIT_ATTR_RX_HASH))
		return vrdma_create_qp_rss(context, attr);
	if ((!target && !(attr->comp_mask & IBV_QP_INIT_ATTR_PD)) ||
	    (attr->comp_mask & ~known) ||
	    ((attr->comp_mask & IBV_QP_INIT_ATTR_CREATE_FLAGS) &&
	     attr->create_flags)) {
		errno = EOPNOTSUPP;
		return NULL;
	}
	if (wr_api) {
		ret = vrdma_wr_check_ops(context, attr->qp_type,
					 attr->send_ops_flags);
		if (ret) {
			errno = ret;
			return NULL;
		}
	}

	/* an XRC domain means something to a target QP only */
	attr_k = *attr;
	attr_k.comp_mask = attr->comp_mask & (target ? IBV_QP_INIT_ATTR_XRCD :
						       IBV_QP_INIT_ATTR_PD);
	qp = vrdma_create_qp_common(context, &attr_k);
	if (!qp)
		return NULL;
	attr->cap = attr_k.cap;
	if (wr_api)
		vrdma_qp_init_wr(to_vqp(qp), attr->send_ops_flags);
	return qp;
}

/*
 * ibv_open_qp(): this context's handle on an XRC target QP that another
 * context, maybe another process's, created in an XRC domain this one has
 * open.  It has no rings, and libibverbs records no PD, CQ or SRQ for it;
 * it can be modified, queried and destroyed (the handle; the QP goes with
 * the last one).  ibv_cmd_open_qp() wants the XRCD, the number and the
 * type.
 */
struct ibv_qp *vrdma_open_qp(struct ibv_context *context,
			     struct ibv_qp_open_attr *attr)
{
	const uint32_t known = IBV_QP_OPEN_ATTR_NUM | IBV_QP_OPEN_ATTR_XRCD |
			       IBV_QP_OPEN_ATTR_CONTEXT |
			       IBV_QP_OPEN_ATTR_TYPE;
	struct ib_uverbs_create_qp_resp resp = {};
	struct ibv_open_qp cmd = {};
	struct vrdma_qp *qp;
	int ret;

	if (attr->comp_mask & ~known) {
		errno = EOPNOTSUPP;
		return NULL;
	}
	/* only a target QP can be opened (and only one has a domain) */
	if ((attr->comp_mask & IBV_QP_OPEN_ATTR_TYPE) &&
	    attr->qp_type != IBV_QPT_XRC_RECV) {
		errno = EINVAL;
		return NULL;
	}
	qp = vrdma_qp_alloc();
	if (!qp)
		return NULL;

	ret = ibv_cmd_open_qp(context, &qp->vqp, sizeof(qp->vqp), attr, &cmd,
			      sizeof(cmd), &resp, sizeof(resp));
	if (ret) {
		vrdma_qp_free(qp);
		errno = ret;
		return NULL;
	}
	return &qp->vqp.qp;
}

int vrdma_query_qp(struct ibv_qp *qp, struct ibv_qp_attr *attr, int attr_mask,
		   struct ibv_qp_init_attr *init_attr)
{
	struct ibv_query_qp cmd = {};

	return ibv_cmd_query_qp(qp, attr, attr_mask, init_attr, &cmd,
				sizeof(cmd));
}

/*
 * A flow steers received frames to a raw packet QP; it is the kernel's
 * alone (no driver data either way), the ibv_flow only its handle.
 */
struct ibv_flow *vrdma_create_flow(struct ibv_qp *qp,
				   struct ibv_flow_attr *attr)
{
	struct ibv_flow *flow;
	int ret;

	flow = calloc(1, sizeof(*flow));
	if (!flow)
		return NULL;
	ret = ibv_cmd_create_flow(qp, flow, attr, NULL, 0);
	if (ret) {
		free(flow);
		errno = ret;
		return NULL;
	}
	return flow;
}

int vrdma_destroy_flow(struct ibv_flow *flow)
{
	int ret;

	ret = ibv_cmd_destroy_flow(flow);
	if (ret)
		return ret;
	free(flow);
	return 0;
}

/* Drops the QP's completions not polled yet from cq (see below). */
static void vrdma_cq_clean(struct ibv_cq *ibcq, uint32_t qpn)
{
	struct vrdma_cq *cq;

	if (!ibcq)
		return;
	cq = to_vcq(ibcq);
	vrdma_lock(&cq->lock);
	if (cq->ring.hdr)
		vrdma_cq_clean_ring(&cq->ring, qpn);
	vrdma_unlock(&cq->lock);
}

/*
 * The rings are untouched: prod belongs to us and cons to the kernel in
 * every state (to RESET, the kernel drops the WQEs by moving cons up to
 * prod), so that nothing posted before a reset runs after it.  Nor does
 * anything it completed before: the QP's completions not polled yet leave
 * its CQs (as with mlx5), so that a QP reused after an error does not
 * find its old flush completions first.  From RESET on the kernel writes
 * none for it.
 */
int vrdma_modify_qp(struct ibv_qp *qp, struct ibv_qp_attr *attr,
		    int attr_mask)
{
	struct ibv_modify_qp cmd = {};
	int ret;

	ret = ibv_cmd_modify_qp(qp, attr, attr_mask, &cmd, sizeof(cmd));
	if (ret || !(attr_mask & IBV_QP_STATE) ||
	    attr->qp_state != IBV_QPS_RESET)
		return ret;
	/*
	 * An XRC target QP's (created or opened) stay: they are receives of
	 * the XRC SRQs its messages named, on those SRQs' CQs, each of which
	 * took one of their WQEs, whatever becomes of the QP.
	 */
	if (qp->qp_type == IBV_QPT_XRC_RECV)
		return 0;
	vrdma_cq_clean(qp->send_cq, qp->qp_num);
	if (qp->recv_cq != qp->send_cq)
		vrdma_cq_clean(qp->recv_cq, qp->qp_num);
	return 0;
}

int vrdma_destroy_qp(struct ibv_qp *ibqp)
{
	struct vrdma_qp *qp = to_vqp(ibqp);
	int ret;

	ret = ibv_cmd_destroy_qp(ibqp);
	if (ret)
		return ret;

	/* nothing is mapped for an XRC target QP, created or opened */
	vrdma_qp_unmap_rings(qp);
	vrdma_qp_free(qp);
	return 0;
}

/* The doorbell as a write() of POST_SEND: 0 or an errno. */
static int vrdma_sq_doorbell_write(struct ibv_qp *ibqp)
{
	struct ib_uverbs_post_send_resp resp;
	struct {
		struct ib_uverbs_cmd_hdr hdr;
		struct ib_uverbs_post_send cmd;
	} req = {
		.hdr = {
			.command = IB_USER_VERBS_CMD_POST_SEND,
			.in_words = sizeof(req) / 4,
			.out_words = sizeof(resp) / 4,
		},
		.cmd = {
			.response = (uintptr_t)&resp,
			.qp_handle = ibqp->handle,
			.wqe_size = sizeof(struct ib_uverbs_send_wr),
		},
	};

	if (write(ibqp->context->cmd_fd, &req, sizeof(req)) == sizeof(req))
		return 0;
	return errno;
}

/*
 * Tells the kernel the SQ has new WQEs: a POST_SEND command with no work
 * requests, which uverbs hands to the driver's post_send with wr == NULL.
 * It is written to the command fd, uverbs' legacy path (as rxe's provider
 * rings), a good deal lighter than the ioctl libibverbs would wrap it in
 * (ibv_cmd_post_send()).  The kernel refuses write() to a process whose
 * credentials changed since it opened the device (ib_safe_file_access());
 * such a QP rings by ioctl from then on.
 *
 * Unless the kernel has said, in the SQ ring's no_doorbell, that it will
 * read prod again anyway: it holds WQEs it may not send yet (a READ
 * waiting for max_rd_atomic, say), or many requests await answers, each
 * of which runs the requester.  Then the system call is skipped.  The
 * full barrier between publishing prod (done by the caller) and reading
 * the flag pairs with the kernel's between clearing the flag and reading
 * prod: either this sees the flag clear and rings, or the kernel sees the
 * new WQEs.
 */
int vrdma_sq_doorbell(struct vrdma_qp *qp)
{
	struct ibv_send_wr *bad_wr;
	int ret;

	__atomic_thread_fence(__ATOMIC_SEQ_CST);
	if (__atomic_load_n(&qp->sq.ring.hdr->no_doorbell, __ATOMIC_RELAXED))
		return 0;
	/* Posters of other threads may race on the flag: relaxed atomics. */
	if (!__atomic_load_n(&qp->sq.doorbell_ioctl, __ATOMIC_RELAXED)) {
		ret = vrdma_sq_doorbell_write(&qp->vqp.qp);
		if (ret != EACCES)
			return ret;
		__atomic_store_n(&qp->sq.doorbell_ioctl, true,
				 __ATOMIC_RELAXED);
	}
	return ibv_cmd_post_send(&qp->vqp.qp, NULL, &bad_wr);
}

/* As vrdma_qp_sq_ready(): the RQ takes work requests from INIT on. */
static bool vrdma_qp_rq_ready(const struct ibv_qp *ibqp)
{
	return ibqp->state != IBV_QPS_RESET;
}

int vrdma_post_send(struct ibv_qp *ibqp, struct ibv_send_wr *wr,
		    struct ibv_send_wr **bad_wr)
{
	struct vrdma_qp *qp = to_vqp(ibqp);
	uint32_t start, posted;
	int ret, db;

	/* no SQ: an XRC target QP, created or opened */
	if (!qp->sq.ring.hdr || !vrdma_qp_sq_ready(ibqp)) {
		*bad_wr = wr;
		return EINVAL;
	}

	vrdma_lock(&qp->sq.lock);
	start = qp->sq.ring.head;
	ret = vrdma_sq_post(&qp->sq.ring, &qp->sq.limits, wr, bad_wr);
	posted = qp->sq.ring.head - start;
	vrdma_unlock(&qp->sq.lock);

	/* outside the lock: each poster rings for what it published */
	if (!posted)
		return ret;
	db = vrdma_sq_doorbell(qp);
	if (db) {
		/*
		 * The WQEs stay in the ring (a later doorbell may still run
		 * them), but none of this call is known to have reached the
		 * device.
		 */
		*bad_wr = wr;
		return db;
	}
	return ret;
}

int vrdma_post_rq(struct vrdma_rq *rq, struct ibv_recv_wr *wr,
		  struct ibv_recv_wr **bad_wr, uint32_t *posted)
{
	uint32_t start;
	int ret;

	*posted = 0;
	vrdma_lock(&rq->lock);
	/* An SRQ whose resized ring could not be mapped has none. */
	if (!rq->ring.hdr) {
		vrdma_unlock(&rq->lock);
		*bad_wr = wr;
		return EINVAL;
	}
	start = rq->ring.head;
	ret = vrdma_rq_post(&rq->ring, rq->max_sge, wr, bad_wr);
	*posted = rq->ring.head - start;
	vrdma_unlock(&rq->lock);
	return ret;
}

/*
 * The kernel takes receive WQEs when packets arrive, so post_recv needs no
 * system call, except in ERR: nothing arrives any more, and the WQEs must
 * still complete (flushed).  POST_RECV with no work requests, which uverbs
 * hands to the driver's post_recv with wr == NULL, makes the kernel look.
 * (If the kernel moved the QP to ERR and the process has not queried it
 * yet, ibqp->state still says otherwise; the WQEs are flushed at the next
 * doorbell or modify_qp.)
 */
static int vrdma_rq_doorbell(struct vrdma_qp *qp)
{
	struct ibv_recv_wr *bad_wr;

	return ibv_cmd_post_recv(&qp->vqp.qp, NULL, &bad_wr);
}

int vrdma_post_recv(struct ibv_qp *ibqp, struct ibv_recv_wr *wr,
		    struct ibv_recv_wr **bad_wr)
{
	struct vrdma_qp *qp = to_vqp(ibqp);
	uint32_t posted;
	int ret, db;

	/*
	 * No RQ: a QP on an SRQ, an XRC initiator or target QP.  (A QP's RQ
	 * ring, unlike an SRQ's, never changes: no lock to look.)
	 */
	if (!qp->rq.ring.hdr || !vrdma_qp_rq_ready(ibqp)) {
		*bad_wr = wr;
		return EINVAL;
	}
	ret = vrdma_post_rq(&qp->rq, wr, bad_wr, &posted);
	if (!posted || ibqp->state != IBV_QPS_ERR)
		return ret;
	db = vrdma_rq_doorbell(qp);
	if (db) {
		*bad_wr = wr;	/* as for post_send */
		return db;
	}
	return ret;
}
