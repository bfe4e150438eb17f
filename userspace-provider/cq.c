// SPDX-License-Identifier: (GPL-2.0 OR Linux-OpenIB)
/*
 * Completion queues.
 *
 * The kernel allocates the CQ ring and produces CQEs into it; the process
 * maps it and consumes them: poll_cq reads only the ring and makes no
 * system call.  Arming (req_notify_cq) and everything else goes through
 * uverbs.
 */
#include <errno.h>
#include <stdlib.h>

#include "vrdma.h"

struct ibv_cq *vrdma_create_cq(struct ibv_context *context, int cqe,
			       struct ibv_comp_channel *channel,
			       int comp_vector)
{
	struct vrdma_context *ctx = to_vctx(context);
	struct vrdma_cmd_create_cq_resp resp = {};
	struct vrdma_cmd_create_cq cmd = {};
	struct vrdma_cq *cq;
	int ret;

	cq = calloc(1, sizeof(*cq));
	if (!cq)
		return NULL;
	ret = pthread_spin_init(&cq->lock, PTHREAD_PROCESS_PRIVATE);
	if (ret)
		goto err_free;

	ret = ibv_cmd_create_cq(context, cqe, channel, comp_vector,
				&cq->vcq.cq, &cmd.ibv_cmd, sizeof(cmd),
				&resp.ibv_resp, sizeof(resp));
	if (ret)
		goto err_lock;

	ret = vrdma_map_ring(ctx, &cq->ring, &resp.drv_payload.cq,
			     sizeof(struct vrdma_cqe), false);
	if (ret)
		goto err_destroy;
	/* the kernel must be able to hold every completion it promised */
	if ((uint32_t)cq->vcq.cq.cqe > cq->ring.num_entries) {
		vrdma_err(&ctx->ibv_ctx, "cqe %d in a ring of %u\n",
			  cq->vcq.cq.cqe, cq->ring.num_entries);
		ret = EPROTO;
		goto err_unmap;
	}
	return &cq->vcq.cq;

err_unmap:
	vrdma_unmap_ring(&cq->ring);
err_destroy:
	ibv_cmd_destroy_cq(&cq->vcq.cq);
err_lock:
	pthread_spin_destroy(&cq->lock);
err_free:
	free(cq);
	errno = ret;
	return NULL;
}

/*
 * The kernel moves the CQEs not yet polled into a new ring and answers with
 * it.  The lock is held across the command so that no poller consumes from
 * the old ring while the kernel copies out of it.
 */
int vrdma_resize_cq(struct ibv_cq *ibcq, int cqe)
{
	struct vrdma_context *ctx = to_vctx(ibcq->context);
	struct vrdma_cmd_resize_cq_resp resp = {};
	struct vrdma_cmd_resize_cq cmd = {};
	struct vrdma_cq *cq = to_vcq(ibcq);
	struct vrdma_uring ring = {};
	int ret;

	pthread_spin_lock(&cq->lock);

	ret = ibv_cmd_resize_cq(ibcq, cqe, &cmd.ibv_cmd, sizeof(cmd),
				&resp.ibv_resp, sizeof(resp));
	if (ret)
		goto out;

	/*
	 * The kernel has switched to the new ring, so the old one is dead
	 * whatever happens here; if the new one cannot be mapped, poll_cq
	 * fails from now on instead of reading stale CQEs.
	 */
	ret = vrdma_map_ring(ctx, &ring, &resp.drv_payload.cq,
			     sizeof(struct vrdma_cqe), false);
	vrdma_unmap_ring(&cq->ring);
	if (ret) {
		vrdma_err(&ctx->ibv_ctx, "cannot map the resized CQ: %d\n",
			  ret);
		goto out;
	}
	cq->ring = ring;

out:
	pthread_spin_unlock(&cq->lock);
	return ret;
}

int vrdma_destroy_cq(struct ibv_cq *ibcq)
{
	struct vrdma_cq *cq = to_vcq(ibcq);
	int ret;

	ret = ibv_cmd_destroy_cq(ibcq);
	if (ret)
		return ret;

	vrdma_unmap_ring(&cq->ring);
	pthread_spin_destroy(&cq->lock);
	free(cq);
	return 0;
}

int vrdma_poll_cq(struct ibv_cq *ibcq, int num_entries, struct ibv_wc *wc)
{
	struct vrdma_cq *cq = to_vcq(ibcq);
	int ret;

	pthread_spin_lock(&cq->lock);
	if (cq->ring.hdr)
		ret = vrdma_cq_poll_ring(&cq->ring, num_entries, wc);
	else
		ret = -EIO;	/* lost its ring in resize_cq */
	pthread_spin_unlock(&cq->lock);
	return ret;
}

/* The kernel arms the CQ; the event comes through the completion channel. */
int vrdma_req_notify_cq(struct ibv_cq *ibcq, int solicited_only)
{
	return ibv_cmd_req_notify_cq(ibcq, solicited_only);
}
