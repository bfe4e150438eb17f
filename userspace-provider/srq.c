// SPDX-License-Identifier: (GPL-2.0 OR Linux-OpenIB)
/*
 * Shared receive queues.
 *
 * An SRQ is one receive ring that several QPs take receive WQEs from; it
 * works like a QP's RQ (post_srq_recv writes the ring, no system call).  A
 * kernel without SRQ support fails create with EOPNOTSUPP, which is what
 * ibv_create_srq() then reports.
 *
 * An XRC SRQ (ibv_create_srq_ex, IBV_SRQT_XRC) is the same ring, in an XRC
 * domain: it takes the messages that XRC initiators send to any target QP
 * of the domain naming its number (ibv_get_srq_num), and completes them on
 * its own CQ.
 *
 * A tag-matching SRQ (IBV_SRQT_TM) is the same ring too, for the messages
 * that match no tagged buffer; the kernel keeps the buffers
 * (ibv_post_srq_ops, tm.c) and completes everything on the SRQ's CQ.
 */
#include <errno.h>
#include <stdlib.h>

#include "vrdma.h"

static struct vrdma_srq *vrdma_srq_alloc(void)
{
	struct vrdma_srq *srq;
	int ret;

	srq = calloc(1, sizeof(*srq));
	if (!srq)
		return NULL;
	ret = vrdma_lock_init(&srq->rq.lock);
	if (ret) {
		free(srq);
		errno = ret;
		return NULL;
	}
	return srq;
}

static void vrdma_srq_free(struct vrdma_srq *srq)
{
	vrdma_lock_destroy(&srq->rq.lock);
	free(srq);
}

/*
 * The end of either create: @ret is the command's result, @granted what
 * the kernel granted.  Maps the ring of the SRQ the kernel has created,
 * destroying it if that fails; on any failure frees @srq and sets errno.
 */
static struct ibv_srq *vrdma_srq_created(struct vrdma_context *ctx,
					 struct vrdma_srq *srq, int ret,
					 const struct ibv_srq_attr *granted,
					 const struct vrdma_ring_info *info)
{
	if (ret)
		goto err_free;
	ret = vrdma_check_wq(ctx, "SRQ", info, VRDMA_RECV_WQE_HDR_SIZE,
			     granted->max_wr, granted->max_sge, 0);
	if (ret)
		goto err_destroy;
	if (!info->num_entries) {
		vrdma_err(&ctx->ibv_ctx, "SRQ without a ring\n");
		ret = EPROTO;
		goto err_destroy;
	}
	ret = vrdma_map_ring(ctx, &srq->rq.ring, info, VRDMA_RECV_WQE_HDR_SIZE,
			     true);
	if (ret)
		goto err_destroy;
	srq->rq.max_sge = granted->max_sge;
	return &srq->vsrq.srq;

err_destroy:
	ibv_cmd_destroy_srq(&srq->vsrq.srq);
err_free:
	vrdma_srq_free(srq);
	errno = ret;
	return NULL;
}

struct ibv_srq *vrdma_create_srq(struct ibv_pd *pd,
				 struct ibv_srq_init_attr *attr)
{
	struct vrdma_cmd_create_srq_resp resp = {};
	struct vrdma_cmd_create_srq cmd = {};
	struct vrdma_srq *srq;
	int ret;

	srq = vrdma_srq_alloc();
	if (!srq)
		return NULL;

	ret = ibv_cmd_create_srq(pd, &srq->vsrq.srq, attr, &cmd.ibv_cmd,
				 sizeof(cmd), &resp.ibv_resp, sizeof(resp));
	return vrdma_srq_created(to_vctx(pd->context), srq, ret, &attr->attr,
				 &resp.drv_payload.rq);
}

/*
 * ibv_create_srq_ex() of anything but a basic SRQ with a PD only (which
 * goes to create_srq): a basic SRQ, an XRC one in attr->xrcd completing
 * on attr->cq, or a tag-matching one completing on attr->cq, with
 * attr->tm_cap (the kernel checks it against tm_caps).
 */
struct ibv_srq *vrdma_create_srq_ex(struct ibv_context *context,
				    struct ibv_srq_init_attr_ex *attr)
{
	const uint32_t known = IBV_SRQ_INIT_ATTR_TYPE | IBV_SRQ_INIT_ATTR_PD |
			       IBV_SRQ_INIT_ATTR_XRCD | IBV_SRQ_INIT_ATTR_CQ |
			       IBV_SRQ_INIT_ATTR_TM;
	struct vrdma_context *ctx = to_vctx(context);
	struct vrdma_cmd_create_xsrq_resp resp = {};
	struct vrdma_cmd_create_xsrq cmd = {};
	enum ibv_srq_type type = IBV_SRQT_BASIC;
	struct vrdma_srq *srq;
	uint32_t srqn;
	int ret;

	if (attr->comp_mask & IBV_SRQ_INIT_ATTR_TYPE)
		type = attr->srq_type;
	if ((attr->comp_mask & ~known) ||
	    (type != IBV_SRQT_BASIC && type != IBV_SRQT_XRC &&
	     type != IBV_SRQT_TM)) {
		errno = EOPNOTSUPP;
		return NULL;
	}
	if (!(attr->comp_mask & IBV_SRQ_INIT_ATTR_PD) || !attr->pd ||
	    (type == IBV_SRQT_XRC &&
	     (!(attr->comp_mask & IBV_SRQ_INIT_ATTR_XRCD) ||
	      !(attr->comp_mask & IBV_SRQ_INIT_ATTR_CQ) || !attr->xrcd ||
	      !attr->cq)) ||
	    (type == IBV_SRQT_TM &&
	     (!(attr->comp_mask & IBV_SRQ_INIT_ATTR_CQ) ||
	      !(attr->comp_mask & IBV_SRQ_INIT_ATTR_TM) || !attr->cq ||
	      !attr->tm_cap.max_num_tags || !attr->tm_cap.max_ops))) {
		errno = EINVAL;
		return NULL;
	}

	srq = vrdma_srq_alloc();
	if (!srq)
		return NULL;

	if (type == IBV_SRQT_TM) {
		cmd.drv_payload.hdr.comp_mask = VRDMA_CREATE_SRQ_TM;
		cmd.drv_payload.max_ops = attr->tm_cap.max_ops;
		srq->tm_max_ops = attr->tm_cap.max_ops;
	}
	ret = ibv_cmd_create_srq_ex(context, &srq->vsrq, attr, &cmd.ibv_cmd,
				    sizeof(cmd), &resp.ibv_resp, sizeof(resp));
	if (!ret && type == IBV_SRQT_XRC) {
		/*
		 * Initiators put the number in a 24-bit field of every
		 * request, and 0 is none: one that does not fit, or that
		 * the driver data and uverbs do not agree on, is a kernel
		 * bug, better found here than by a peer's NAK.
		 */
		srqn = resp.drv_payload.srqn;
		if (!srqn || srqn >= 1U << 24 || srqn != srq->vsrq.srq_num) {
			vrdma_err(&ctx->ibv_ctx,
				  "XRC SRQ number %u, uverbs says %u\n", srqn,
				  srq->vsrq.srq_num);
			ibv_cmd_destroy_srq(&srq->vsrq.srq);
			ret = EPROTO;
		}
	}
	/* what ibv_create_srq() sets after create_srq, and _ex does not */
	srq->vsrq.srq.srq_context = attr->srq_context;
	srq->vsrq.srq.pd = attr->pd;
	return vrdma_srq_created(ctx, srq, ret, &attr->attr,
				 &resp.drv_payload.rq);
}

/* Only an XRC SRQ has a number: nothing names a basic one. */
int vrdma_get_srq_num(struct ibv_srq *ibsrq, uint32_t *srq_num)
{
	struct vrdma_srq *srq = to_vsrq(ibsrq);

	if (srq->vsrq.srq_type != IBV_SRQT_XRC)
		return EINVAL;
	*srq_num = srq->vsrq.srq_num;
	return 0;
}

/*
 * A resize (IBV_SRQ_MAX_WR): the kernel moves the WQEs it has not taken yet
 * to the start of a new ring and describes it in ring_info, since
 * MODIFY_SRQ has no driver response.  The post lock is held across the
 * command, so that nothing is posted to the old ring while the kernel
 * copies out of it.
 */
int vrdma_modify_srq(struct ibv_srq *ibsrq, struct ibv_srq_attr *attr,
		     int attr_mask)
{
	struct vrdma_context *ctx = to_vctx(ibsrq->context);
	struct vrdma_srq *srq = to_vsrq(ibsrq);
	struct vrdma_cmd_modify_srq cmd = {};
	struct vrdma_ring_info info = {};
	struct vrdma_uring ring = {};
	int ret;

	if (!(attr_mask & IBV_SRQ_MAX_WR))
		return ibv_cmd_modify_srq(ibsrq, attr, attr_mask, &cmd.ibv_cmd,
					  sizeof(cmd));

	cmd.drv_payload.hdr.comp_mask = VRDMA_MODIFY_SRQ_RING_INFO;
	cmd.drv_payload.ring_info = (uintptr_t)&info;
	vrdma_lock(&srq->rq.lock);
	if (!srq->rq.ring.hdr) {
		ret = EIO;	/* lost its ring in an earlier resize */
		goto out;
	}
	ret = ibv_cmd_modify_srq(ibsrq, attr, attr_mask, &cmd.ibv_cmd,
				 sizeof(cmd));
	if (ret)
		goto out;

	/*
	 * The kernel has switched to the new ring, so the old one is dead
	 * whatever happens here; if the new one cannot be used, posting
	 * fails from now on instead of writing where nobody reads.
	 */
	ret = vrdma_check_wq(ctx, "resized SRQ", &info,
			     VRDMA_RECV_WQE_HDR_SIZE, attr->max_wr,
			     srq->rq.max_sge, 0);
	if (!ret)
		ret = vrdma_map_ring(ctx, &ring, &info,
				     VRDMA_RECV_WQE_HDR_SIZE, true);
	vrdma_unmap_ring(&srq->rq.ring);
	if (ret) {
		vrdma_err(&ctx->ibv_ctx, "cannot map the resized SRQ: %d\n",
			  ret);
		goto out;
	}
	srq->rq.ring = ring;
out:
	vrdma_unlock(&srq->rq.lock);
	return ret;
}

int vrdma_query_srq(struct ibv_srq *srq, struct ibv_srq_attr *attr)
{
	struct ibv_query_srq cmd = {};

	return ibv_cmd_query_srq(srq, attr, &cmd, sizeof(cmd));
}

int vrdma_destroy_srq(struct ibv_srq *ibsrq)
{
	struct vrdma_srq *srq = to_vsrq(ibsrq);
	int ret;

	ret = ibv_cmd_destroy_srq(ibsrq);
	if (ret)
		return ret;

	vrdma_unmap_ring(&srq->rq.ring);
	vrdma_srq_free(srq);
	return 0;
}

int vrdma_post_srq_recv(struct ibv_srq *ibsrq, struct ibv_recv_wr *wr,
			struct ibv_recv_wr **bad_wr)
{
	uint32_t posted;

	return vrdma_post_rq(&to_vsrq(ibsrq)->rq, wr, bad_wr, &posted);
}
