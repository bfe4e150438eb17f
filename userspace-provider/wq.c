// SPDX-License-Identifier: (GPL-2.0 OR Linux-OpenIB)
/*
 * RSS: work queues, indirection tables, and raw packet QPs on them.
 *
 * A WQ (IBV_WQT_RQ) is a receive ring the kernel allocates and the
 * process maps, as a QP's RQ: ibv_post_wq_recv() only writes it, the
 * kernel takes a WQE when a frame arrives for the WQ.  Its completions go
 * to its CQ with the WQ's number as qp_num.  In ERR the kernel flushes the
 * WQEs when the WQ enters it; WQEs posted later are flushed by a
 * modify_wq from ERR to ERR, the WQ's doorbell.
 *
 * An indirection table and the hash of a QP on it are the kernel's: the
 * table is a list of WQ handles, and the QP (IBV_QPT_RAW_PACKET with
 * IBV_QP_INIT_ATTR_IND_TABLE and IBV_QP_INIT_ATTR_RX_HASH) takes its hash
 * function, fields and key in the driver request of CREATE_QP (struct
 * vrdma_create_qp_rss_req); it has no rings, receives only, into the
 * table's WQs, and is not modified.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "vrdma.h"

/* The hash fields are libibverbs' values, so they pass as they are. */
#define VRDMA_SAME(a, b) static_assert((int)(a) == (int)(b), #a)
VRDMA_SAME(VRDMA_RX_HASH_SRC_IPV4, IBV_RX_HASH_SRC_IPV4);
VRDMA_SAME(VRDMA_RX_HASH_DST_IPV4, IBV_RX_HASH_DST_IPV4);
VRDMA_SAME(VRDMA_RX_HASH_SRC_IPV6, IBV_RX_HASH_SRC_IPV6);
VRDMA_SAME(VRDMA_RX_HASH_DST_IPV6, IBV_RX_HASH_DST_IPV6);
VRDMA_SAME(VRDMA_RX_HASH_SRC_PORT_TCP, IBV_RX_HASH_SRC_PORT_TCP);
VRDMA_SAME(VRDMA_RX_HASH_DST_PORT_TCP, IBV_RX_HASH_DST_PORT_TCP);
VRDMA_SAME(VRDMA_RX_HASH_SRC_PORT_UDP, IBV_RX_HASH_SRC_PORT_UDP);
VRDMA_SAME(VRDMA_RX_HASH_DST_PORT_UDP, IBV_RX_HASH_DST_PORT_UDP);
VRDMA_SAME(VRDMA_RX_HASH_FUNC_TOEPLITZ, IBV_RX_HASH_FUNC_TOEPLITZ);
static_assert(sizeof(struct vrdma_create_qp_rss_req) == 64,
	      "vrdma_create_qp_rss_req");
static_assert(sizeof(struct vrdma_create_wq_resp) == 32,
	      "vrdma_create_wq_resp");

VRDMA_DECLARE_DRV_CMD(vrdma_cmd_create_wq, ibv_create_wq, vrdma_verbs_empty,
		      ib_uverbs_ex_create_wq_resp, vrdma_create_wq_resp);
VRDMA_DECLARE_DRV_CMD(vrdma_cmd_create_qp_rss, ibv_create_qp_ex,
		      vrdma_create_qp_rss_req, ib_uverbs_ex_create_qp_resp,
		      vrdma_create_qp_resp);

static inline struct vrdma_wq *to_vwq(struct ibv_wq *ibwq)
{
	return vrdma_container_of(ibwq, struct vrdma_wq, ibv_wq);
}

/* The WQ's doorbell in ERR: have the kernel flush what was posted. */
static int vrdma_wq_doorbell(struct ibv_wq *ibwq)
{
	struct ibv_wq_attr attr = {
		.attr_mask = IBV_WQ_ATTR_STATE,
		.wq_state = IBV_WQS_ERR,
	};
	struct ibv_modify_wq cmd = {};

	return ibv_cmd_modify_wq(ibwq, &attr, &cmd, sizeof(cmd));
}

static int vrdma_post_wq_recv(struct ibv_wq *ibwq, struct ibv_recv_wr *wr,
			      struct ibv_recv_wr **bad_wr)
{
	struct vrdma_wq *wq = to_vwq(ibwq);
	uint32_t posted;
	int ret, db;

	ret = vrdma_post_rq(&wq->rq, wr, bad_wr, &posted);
	if (!posted || ibwq->state != IBV_WQS_ERR)
		return ret;
	db = vrdma_wq_doorbell(ibwq);
	if (db) {
		*bad_wr = wr;	/* as for a QP's post_recv */
		return db;
	}
	return ret;
}

struct ibv_wq *vrdma_create_wq(struct ibv_context *context,
			       struct ibv_wq_init_attr *attr)
{
	struct vrdma_context *ctx = to_vctx(context);
	struct vrdma_cmd_create_wq_resp resp = {};
	struct vrdma_cmd_create_wq cmd = {};
	struct vrdma_wq *wq;
	int ret;

	if (attr->wq_type != IBV_WQT_RQ) {
		errno = EOPNOTSUPP;
		return NULL;
	}
	wq = calloc(1, sizeof(*wq));
	if (!wq)
		return NULL;
	ret = vrdma_lock_init(&wq->rq.lock);
	if (ret)
		goto err_free;

	ret = ibv_cmd_create_wq(context, attr, &wq->ibv_wq, &cmd.ibv_cmd,
				sizeof(cmd), &resp.ibv_resp, sizeof(resp));
	if (ret)
		goto err_lock;
	/* a kernel that did not write its answer leaves wqn 0 */
	if (resp.drv_payload.wqn != wq->ibv_wq.wq_num) {
		vrdma_err(&ctx->ibv_ctx, "WQ number %u, driver data says %u\n",
			  wq->ibv_wq.wq_num, resp.drv_payload.wqn);
		ret = EPROTO;
		goto err_destroy;
	}
	ret = vrdma_check_wq(ctx, "WQ", &resp.drv_payload.rq,
			     VRDMA_RECV_WQE_HDR_SIZE, attr->max_wr,
			     attr->max_sge, 0);
	if (ret)
		goto err_destroy;
	ret = vrdma_map_ring(ctx, &wq->rq.ring, &resp.drv_payload.rq,
			     VRDMA_RECV_WQE_HDR_SIZE, true);
	if (ret)
		goto err_destroy;
	wq->rq.max_sge = attr->max_sge;
	wq->ibv_wq.wq_context = attr->wq_context;
	wq->ibv_wq.state = IBV_WQS_RESET;
	wq->ibv_wq.post_recv = vrdma_post_wq_recv;
	return &wq->ibv_wq;

err_destroy:
	ibv_cmd_destroy_wq(&wq->ibv_wq);
err_lock:
	vrdma_lock_destroy(&wq->rq.lock);
err_free:
	free(wq);
	errno = ret;
	return NULL;
}

/*
 * As for a QP: to RESET, the kernel drops the posted WQEs, and the WQ's
 * completions not polled yet leave its CQ.
 */
int vrdma_modify_wq(struct ibv_wq *ibwq, struct ibv_wq_attr *attr)
{
	struct ibv_modify_wq cmd = {};
	struct vrdma_cq *cq;
	int ret;

	ret = ibv_cmd_modify_wq(ibwq, attr, &cmd, sizeof(cmd));
	if (ret || !(attr->attr_mask & IBV_WQ_ATTR_STATE) ||
	    attr->wq_state != IBV_WQS_RESET)
		return ret;
	cq = to_vcq(ibwq->cq);
	vrdma_lock(&cq->lock);
	if (cq->ring.hdr)
		vrdma_cq_clean_ring(&cq->ring, ibwq->wq_num);
	vrdma_unlock(&cq->lock);
	return 0;
}

int vrdma_destroy_wq(struct ibv_wq *ibwq)
{
	struct vrdma_wq *wq = to_vwq(ibwq);
	int ret;

	/* EBUSY while an indirection table holds it */
	ret = ibv_cmd_destroy_wq(ibwq);
	if (ret)
		return ret;
	vrdma_unmap_ring(&wq->rq.ring);
	vrdma_lock_destroy(&wq->rq.lock);
	free(wq);
	return 0;
}

struct ibv_rwq_ind_table *
vrdma_create_rwq_ind_table(struct ibv_context *context,
			   struct ibv_rwq_ind_table_init_attr *attr)
{
	struct ib_uverbs_ex_create_rwq_ind_table_resp resp = {};
	struct ibv_rwq_ind_table *tbl;
	int ret;

	tbl = calloc(1, sizeof(*tbl));
	if (!tbl)
		return NULL;
	ret = ibv_cmd_create_rwq_ind_table(context, attr, tbl, &resp,
					   sizeof(resp));
	if (ret) {
		free(tbl);
		errno = ret;
		return NULL;
	}
	return tbl;
}

int vrdma_destroy_rwq_ind_table(struct ibv_rwq_ind_table *tbl)
{
	int ret;

	/* EBUSY while a QP uses it */
	ret = ibv_cmd_destroy_rwq_ind_table(tbl);
	if (ret)
		return ret;
	free(tbl);
	return 0;
}

/*
 * A raw packet QP on an indirection table: the kernel checks the hash
 * (function, fields, key length).  It receives from its creation on, in
 * RTR, which no modify_qp changes.
 */
struct ibv_qp *vrdma_create_qp_rss(struct ibv_context *context,
				   struct ibv_qp_init_attr_ex *attr)
{
	const uint32_t known = IBV_QP_INIT_ATTR_PD |
			       IBV_QP_INIT_ATTR_CREATE_FLAGS |
			       IBV_QP_INIT_ATTR_IND_TABLE |
			       IBV_QP_INIT_ATTR_RX_HASH;
	const uint32_t needed = IBV_QP_INIT_ATTR_PD |
				IBV_QP_INIT_ATTR_IND_TABLE |
				IBV_QP_INIT_ATTR_RX_HASH;
	struct ibv_rx_hash_conf *conf = &attr->rx_hash_conf;
	struct vrdma_context *ctx = to_vctx(context);
	struct vrdma_cmd_create_qp_rss_resp resp = {};
	struct vrdma_cmd_create_qp_rss cmd = {};
	struct vrdma_create_qp_rss_req *req = &cmd.drv_payload;
	struct ibv_qp_init_attr_ex attr_k;
	struct vrdma_qp *qp;
	int ret;

	if ((attr->comp_mask & ~known) ||
	    ((attr->comp_mask & IBV_QP_INIT_ATTR_CREATE_FLAGS) &&
	     attr->create_flags)) {
		errno = EOPNOTSUPP;
		return NULL;
	}
	if ((attr->comp_mask & needed) != needed || !attr->rwq_ind_tbl ||
	    attr->qp_type != IBV_QPT_RAW_PACKET ||
	    (conf->rx_hash_key_len && !conf->rx_hash_key)) {
		errno = EINVAL;
		return NULL;
	}
	req->hdr.comp_mask = VRDMA_CREATE_QP_RSS;
	req->rx_hash_fields_mask = conf->rx_hash_fields_mask;
	req->rx_hash_function = conf->rx_hash_function;
	req->rx_hash_key_len = conf->rx_hash_key_len;
	if (conf->rx_hash_key_len)
		memcpy(req->rx_hash_key, conf->rx_hash_key,
		       conf->rx_hash_key_len < VRDMA_RSS_KEY_LEN ?
		       conf->rx_hash_key_len : VRDMA_RSS_KEY_LEN);

	qp = vrdma_qp_alloc();
	if (!qp)
		return NULL;
	attr_k = *attr;
	attr_k.comp_mask = IBV_QP_INIT_ATTR_PD | IBV_QP_INIT_ATTR_IND_TABLE;
	ret = ibv_cmd_create_qp_ex2(context, &qp->vqp, &attr_k, &cmd.ibv_cmd,
				    sizeof(cmd), &resp.ibv_resp, sizeof(resp));
	if (ret)
		goto err_free;
	/* a kernel that did not write its answer leaves qpn 0 */
	if (resp.drv_payload.qpn != qp->vqp.qp.qp_num ||
	    resp.drv_payload.sq.num_entries ||
	    resp.drv_payload.rq.num_entries) {
		vrdma_err(&ctx->ibv_ctx, "QP %u: rings or number %u\n",
			  qp->vqp.qp.qp_num, resp.drv_payload.qpn);
		ret = EPROTO;
		goto err_destroy;
	}
	attr->cap = attr_k.cap;
	qp->vqp.qp.state = IBV_QPS_RTR;
	return &qp->vqp.qp;

err_destroy:
	ibv_cmd_destroy_qp(&qp->vqp.qp);
err_free:
	vrdma_qp_free(qp);
	errno = ret;
	return NULL;
}
