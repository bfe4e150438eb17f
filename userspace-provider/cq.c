// SPDX-License-Identifier: (GPL-2.0 OR Linux-OpenIB)
/*
 * Completion queues.
 *
 * The kernel allocates the CQ ring and produces CQEs into it; the process
 * maps it and consumes them: poll_cq, and the extended CQ's start_poll,
 * next_poll and end_poll, read only the ring and make no system call.
 * Arming (req_notify_cq) and everything else goes through uverbs.
 *
 * An extended CQ (ibv_create_cq_ex) is the same CQ in the kernel, created
 * by the same command; it differs only in how the process polls it, and
 * plain poll_cq works on it too.
 *
 * A CQE's qp_num is handed on as it is, never looked up: an XRC SRQ's
 * receive completions name the target QP that took the message, which
 * may be another process's, or one this process only opened.
 */
#include <errno.h>
#include <stdlib.h>

#include "vrdma.h"

static struct vrdma_cq *vrdma_cq_alloc(void)
{
	struct vrdma_cq *cq;
	int ret;

	cq = calloc(1, sizeof(*cq));
	if (!cq)
		return NULL;
	ret = vrdma_lock_init(&cq->lock);
	if (ret) {
		free(cq);
		errno = ret;
		return NULL;
	}
	return cq;
}

static void vrdma_cq_free(struct vrdma_cq *cq)
{
	vrdma_lock_destroy(&cq->lock);
	free(cq);
}

/*
 * Maps the ring of a CQ the kernel has just created, or destroys the CQ.
 * Returns 0 or an errno.
 */
static int vrdma_cq_setup_ring(struct vrdma_context *ctx, struct vrdma_cq *cq,
			       const struct vrdma_ring_info *info)
{
	int ret;

	ret = vrdma_map_ring(ctx, &cq->ring, info, sizeof(struct vrdma_cqe),
			     false);
	if (ret)
		goto err_destroy;
	/* the kernel must be able to hold every completion it promised */
	if ((uint32_t)cq->vcq.cq.cqe > cq->ring.num_entries) {
		vrdma_err(&ctx->ibv_ctx, "cqe %d in a ring of %u\n",
			  cq->vcq.cq.cqe, cq->ring.num_entries);
		ret = EPROTO;
		goto err_unmap;
	}
	return 0;

err_unmap:
	vrdma_unmap_ring(&cq->ring);
err_destroy:
	ibv_cmd_destroy_cq(&cq->vcq.cq);
	return ret;
}

/*
 * The end of either create: @ret is the command's result.  Maps the ring
 * of the CQ the kernel has created; on any failure frees @cq and sets
 * errno.  Returns @cq, or NULL.
 */
static struct vrdma_cq *vrdma_cq_created(struct ibv_context *context,
					 struct vrdma_cq *cq, int ret,
					 const struct vrdma_ring_info *info)
{
	if (!ret)
		ret = vrdma_cq_setup_ring(to_vctx(context), cq, info);
	if (ret) {
		vrdma_cq_free(cq);
		errno = ret;
		return NULL;
	}
	return cq;
}

struct ibv_cq *vrdma_create_cq(struct ibv_context *context, int cqe,
			       struct ibv_comp_channel *channel,
			       int comp_vector)
{
	struct vrdma_cmd_create_cq_resp resp = {};
	struct vrdma_cmd_create_cq cmd = {};
	struct vrdma_cq *cq;
	int ret;

	cq = vrdma_cq_alloc();
	if (!cq)
		return NULL;

	ret = ibv_cmd_create_cq(context, cqe, channel, comp_vector,
				&cq->vcq.cq, &cmd.ibv_cmd, sizeof(cmd),
				&resp.ibv_resp, sizeof(resp));
	cq = vrdma_cq_created(context, cq, ret, &resp.drv_payload.cq);
	return cq ? &cq->vcq.cq : NULL;
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

	vrdma_lock(&cq->lock);

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
	vrdma_unlock(&cq->lock);
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
	vrdma_cq_free(cq);
	return 0;
}

/*
 * A probe point for watching the application poll (scripts/trace-send puts
 * a uprobe here): called with the work completions a poll_cq returned, when
 * it returned any.  It does nothing; noinline and the empty asm keep the
 * call, and its arguments in their registers (wc in %rsi, n in %edx on
 * x86-64), for the probe to read.
 */
__attribute__((noinline)) void vrdma_trace_poll(struct ibv_cq *ibcq,
						struct ibv_wc *wc, int n)
{
	__asm__ volatile("" : : "r"(ibcq), "r"(wc), "r"(n) : "memory");
}

int vrdma_poll_cq(struct ibv_cq *ibcq, int num_entries, struct ibv_wc *wc)
{
	struct vrdma_cq *cq = to_vcq(ibcq);
	int ret;

	vrdma_lock(&cq->lock);
	if (cq->ring.hdr)
		ret = vrdma_cq_poll_ring(&cq->ring, num_entries, wc);
	else
		ret = -EIO;	/* lost its ring in resize_cq */
	vrdma_unlock(&cq->lock);
	if (ret > 0)
		vrdma_trace_poll(ibcq, wc, ret);
	return ret;
}

/* The kernel arms the CQ; the event comes through the completion channel. */
int vrdma_req_notify_cq(struct ibv_cq *ibcq, int solicited_only)
{
	return ibv_cmd_req_notify_cq(ibcq, solicited_only);
}

/* ---- the extended CQ ----------------------------------------------------- */

/*
 * Everything a struct ibv_wc carries, and tag matching's tag and app_ctx,
 * for which a CQ that asks gets entries of VRDMA_CQE_TM_SIZE.  Not
 * completion timestamps, flow tags or VLANs: a CQE has none of them.
 */
#define VRDMA_CQ_EX_WC_FLAGS (IBV_WC_STANDARD_FLAGS | IBV_WC_EX_WITH_TM_INFO)

/*
 * The current CQE's wr_id and status go where ibv_cq_ex has them; the
 * read_* functions read the rest of the copy in cq->cur.
 */
static void vrdma_cq_ex_load(struct vrdma_cq *cq)
{
	vrdma_cq_taken_tm(&cq->ring, &cq->cur_tm);
	cq->vcq.cq_ex.wr_id = cq->cur.wr_id;
	cq->vcq.cq_ex.status = (enum ibv_wc_status)cq->cur.status;
}

/*
 * Takes the CQ lock, held until end_poll, when there is a completion;
 * ENOENT (none) or EIO leave it unlocked, and end_poll is not called then.
 */
static int vrdma_start_poll(struct ibv_cq_ex *cqx,
			    struct ibv_poll_cq_attr *attr)
{
	struct vrdma_cq *cq = to_vcq_ex(cqx);
	int ret;

	if (attr && attr->comp_mask)
		return EINVAL;

	vrdma_lock(&cq->lock);
	if (cq->ring.hdr)
		ret = vrdma_cq_take(&cq->ring, &cq->cur);
	else
		ret = EIO;	/* lost its ring in resize_cq */
	if (ret) {
		vrdma_unlock(&cq->lock);
		return ret;
	}
	vrdma_cq_ex_load(cq);
	return 0;
}

static int vrdma_next_poll(struct ibv_cq_ex *cqx)
{
	struct vrdma_cq *cq = to_vcq_ex(cqx);
	int ret;

	ret = vrdma_cq_take(&cq->ring, &cq->cur);
	if (!ret)
		vrdma_cq_ex_load(cq);
	return ret;
}

/* Hands every CQE taken since start_poll back to the kernel at once. */
static void vrdma_end_poll(struct ibv_cq_ex *cqx)
{
	struct vrdma_cq *cq = to_vcq_ex(cqx);

	vrdma_cq_release(&cq->ring);
	vrdma_unlock(&cq->lock);
}

static enum ibv_wc_opcode vrdma_wc_read_opcode(struct ibv_cq_ex *cqx)
{
	return (enum ibv_wc_opcode)to_vcq_ex(cqx)->cur.opcode;
}

static uint32_t vrdma_wc_read_vendor_err(struct ibv_cq_ex *cqx)
{
	return to_vcq_ex(cqx)->cur.vendor_err;
}

static uint32_t vrdma_wc_read_byte_len(struct ibv_cq_ex *cqx)
{
	return to_vcq_ex(cqx)->cur.byte_len;
}

/* Also ibv_wc_read_invalidated_rkey(): the same 32 bits, as they came. */
static __be32 vrdma_wc_read_imm_data(struct ibv_cq_ex *cqx)
{
	return to_vcq_ex(cqx)->cur.ex.imm_data;
}

static uint32_t vrdma_wc_read_qp_num(struct ibv_cq_ex *cqx)
{
	return to_vcq_ex(cqx)->cur.qp_num;
}

static uint32_t vrdma_wc_read_src_qp(struct ibv_cq_ex *cqx)
{
	return to_vcq_ex(cqx)->cur.src_qp;
}

static unsigned int vrdma_wc_read_wc_flags(struct ibv_cq_ex *cqx)
{
	return to_vcq_ex(cqx)->cur.wc_flags;
}

/* RoCE has no LIDs to speak of: zeros, as poll_cq reports them. */
static uint32_t vrdma_wc_read_slid(struct ibv_cq_ex *cqx)
{
	(void)cqx;
	return 0;
}

static uint8_t vrdma_wc_read_sl(struct ibv_cq_ex *cqx)
{
	return vrdma_cqe_sl(&to_vcq_ex(cqx)->cur);
}

static uint8_t vrdma_wc_read_dlid_path_bits(struct ibv_cq_ex *cqx)
{
	(void)cqx;
	return 0;
}

/* Zeros unless the completion is of a matched message (tm.c). */
static void vrdma_wc_read_tm_info(struct ibv_cq_ex *cqx,
				  struct ibv_wc_tm_info *tm_info)
{
	struct vrdma_cq *cq = to_vcq_ex(cqx);

	tm_info->tag = cq->cur_tm.tag;
	tm_info->priv = cq->cur_tm.priv;
}

/*
 * ibv_create_cq_ex().  libibverbs has already refused wc_flags it does not
 * know; the kernel is asked nothing it cannot do: no wc_flags beyond
 * struct ibv_wc's, and of the creation flags only
 * IBV_CREATE_CQ_ATTR_SINGLE_THREADED, the application's promise that one
 * thread at a time polls, which lets polling go without the ring's lock,
 * as a parent domain with a thread domain does.  A parent domain
 * (IBV_CQ_INIT_ATTR_MASK_PD) must be one of this context; the kernel's CQ
 * knows none, its ring being the kernel's.
 * Every read_* function of a supported field is set, whether or not
 * wc_flags asked for it; IBV_WC_EX_WITH_TM_INFO asks the kernel for CQEs
 * with room for the tag (struct vrdma_create_cq_req).
 */
struct ibv_cq_ex *vrdma_create_cq_ex(struct ibv_context *context,
				     struct ibv_cq_init_attr_ex *attr)
{
	struct vrdma_cmd_create_cq_ex_resp resp = {};
	struct vrdma_cmd_create_cq_ex cmd = {};
	struct ibv_cq_init_attr_ex kattr;
	struct ibv_cq_ex *cqx;
	struct vrdma_cq *cq;
	int ret;

	if ((attr->wc_flags & ~(uint64_t)VRDMA_CQ_EX_WC_FLAGS) ||
	    (attr->comp_mask & ~(uint32_t)(IBV_CQ_INIT_ATTR_MASK_FLAGS |
					   IBV_CQ_INIT_ATTR_MASK_PD)) ||
	    ((attr->comp_mask & IBV_CQ_INIT_ATTR_MASK_FLAGS) &&
	     (attr->flags & ~(uint32_t)IBV_CREATE_CQ_ATTR_SINGLE_THREADED))) {
		errno = EOPNOTSUPP;
		return NULL;
	}
	if ((attr->comp_mask & IBV_CQ_INIT_ATTR_MASK_PD) &&
	    !vrdma_is_parent_domain(context, attr->parent_domain)) {
		errno = EINVAL;
		return NULL;
	}
	kattr = *attr;
	kattr.comp_mask &= ~(uint32_t)IBV_CQ_INIT_ATTR_MASK_PD;
	kattr.parent_domain = NULL;

	cq = vrdma_cq_alloc();
	if (!cq)
		return NULL;

	if (attr->wc_flags & IBV_WC_EX_WITH_TM_INFO) {
		cmd.drv_payload.hdr.comp_mask = VRDMA_CREATE_CQ_CQE_SIZE;
		cmd.drv_payload.cqe_size = VRDMA_CQE_TM_SIZE;
	}
	ret = ibv_cmd_create_cq_ex(context, &kattr, &cq->vcq, &cmd.ibv_cmd,
				   sizeof(cmd), &resp.ibv_resp, sizeof(resp),
				   0);
	if (!vrdma_cq_created(context, cq, ret, &resp.drv_payload.cq))
		return NULL;
	if (((attr->comp_mask & IBV_CQ_INIT_ATTR_MASK_FLAGS) &&
	     (attr->flags & IBV_CREATE_CQ_ATTR_SINGLE_THREADED)) ||
	    ((attr->comp_mask & IBV_CQ_INIT_ATTR_MASK_PD) &&
	     vrdma_pd_single_threaded(attr->parent_domain)))
		cq->lock.single = true;

	cqx = &cq->vcq.cq_ex;
	cqx->start_poll = vrdma_start_poll;
	cqx->next_poll = vrdma_next_poll;
	cqx->end_poll = vrdma_end_poll;
	cqx->read_opcode = vrdma_wc_read_opcode;
	cqx->read_vendor_err = vrdma_wc_read_vendor_err;
	cqx->read_byte_len = vrdma_wc_read_byte_len;
	cqx->read_imm_data = vrdma_wc_read_imm_data;
	cqx->read_qp_num = vrdma_wc_read_qp_num;
	cqx->read_src_qp = vrdma_wc_read_src_qp;
	cqx->read_wc_flags = vrdma_wc_read_wc_flags;
	cqx->read_slid = vrdma_wc_read_slid;
	cqx->read_sl = vrdma_wc_read_sl;
	cqx->read_dlid_path_bits = vrdma_wc_read_dlid_path_bits;
	cqx->read_tm_info = vrdma_wc_read_tm_info;
	return cqx;
}
