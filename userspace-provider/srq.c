// SPDX-License-Identifier: (GPL-2.0 OR Linux-OpenIB)
/*
 * Shared receive queues.
 *
 * An SRQ is one receive ring that several QPs take receive WQEs from; it
 * works like a QP's RQ (post_srq_recv writes the ring, no system call).  A
 * kernel without SRQ support fails create with EOPNOTSUPP, which is what
 * ibv_create_srq() then reports.
 */
#include <errno.h>
#include <stdlib.h>

#include "vrdma.h"

struct ibv_srq *vrdma_create_srq(struct ibv_pd *pd,
				 struct ibv_srq_init_attr *attr)
{
	struct vrdma_context *ctx = to_vctx(pd->context);
	struct vrdma_cmd_create_srq_resp resp = {};
	struct vrdma_cmd_create_srq cmd = {};
	const struct vrdma_ring_info *info;
	struct vrdma_srq *srq;
	int ret;

	srq = calloc(1, sizeof(*srq));
	if (!srq)
		return NULL;
	ret = pthread_spin_init(&srq->rq.lock, PTHREAD_PROCESS_PRIVATE);
	if (ret)
		goto err_free;

	ret = ibv_cmd_create_srq(pd, &srq->ibv_srq, attr, &cmd.ibv_cmd,
				 sizeof(cmd), &resp.ibv_resp, sizeof(resp));
	if (ret)
		goto err_lock;

	/* attr->attr now holds what the kernel granted */
	info = &resp.drv_payload.rq;
	ret = vrdma_check_wq(ctx, "SRQ", info, VRDMA_RECV_WQE_HDR_SIZE,
			     attr->attr.max_wr, attr->attr.max_sge, 0);
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
	srq->rq.max_sge = attr->attr.max_sge;
	return &srq->ibv_srq;

err_destroy:
	ibv_cmd_destroy_srq(&srq->ibv_srq);
err_lock:
	pthread_spin_destroy(&srq->rq.lock);
err_free:
	free(srq);
	errno = ret;
	return NULL;
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
	pthread_spin_lock(&srq->rq.lock);
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
	pthread_spin_unlock(&srq->rq.lock);
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
	pthread_spin_destroy(&srq->rq.lock);
	free(srq);
	return 0;
}

int vrdma_post_srq_recv(struct ibv_srq *ibsrq, struct ibv_recv_wr *wr,
			struct ibv_recv_wr **bad_wr)
{
	uint32_t posted;

	return vrdma_post_rq(&to_vsrq(ibsrq)->rq, wr, bad_wr, &posted);
}
