// SPDX-License-Identifier: (GPL-2.0 OR Linux-OpenIB)
/*
 * Tag matching: ibv_post_srq_ops() on a tag-matching SRQ.
 *
 * The kernel keeps the SRQ's tagged buffers, matches the messages against
 * them and writes every completion (drivers/vrdma/tm.c); the operations
 * reach it through the driver's method VRDMA_IB_METHOD_SRQ_OPS, which
 * takes them as an array and answers each TAG_ADD's handle.  A call
 * carries at most the SRQ's max_ops operations: a longer list goes in
 * several.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>

#include <rdma/rdma_user_ioctl.h>

#include "vrdma.h"

/* VRDMA_IB_METHOD_SRQ_OPS; 0 or a positive errno. */
static int vrdma_srq_ops_call(struct ibv_srq *ibsrq,
			      const struct vrdma_srq_op *ops, uint32_t n,
			      uint32_t *handles,
			      struct vrdma_srq_ops_resp *resp)
{
	struct {
		struct ib_uverbs_ioctl_hdr hdr;
		struct ib_uverbs_attr attrs[4];
	} cmd;

	memset(&cmd, 0, sizeof(cmd));
	cmd.hdr.length = sizeof(cmd);
	cmd.hdr.object_id = UVERBS_OBJECT_SRQ;
	cmd.hdr.method_id = VRDMA_IB_METHOD_SRQ_OPS;
	cmd.hdr.num_attrs = 4;
	cmd.hdr.driver_id = RDMA_DRIVER_UNKNOWN;
	cmd.attrs[0].attr_id = VRDMA_IB_ATTR_SRQ_OPS_HANDLE;
	cmd.attrs[0].flags = UVERBS_ATTR_F_MANDATORY;
	cmd.attrs[0].data = ibsrq->handle;
	cmd.attrs[1].attr_id = VRDMA_IB_ATTR_SRQ_OPS_WRS;
	cmd.attrs[1].flags = UVERBS_ATTR_F_MANDATORY;
	cmd.attrs[1].len = n * sizeof(*ops);
	cmd.attrs[1].data = (uintptr_t)ops;
	cmd.attrs[2].attr_id = VRDMA_IB_ATTR_SRQ_OPS_HANDLES;
	cmd.attrs[2].flags = UVERBS_ATTR_F_MANDATORY;
	cmd.attrs[2].len = n * sizeof(*handles);
	cmd.attrs[2].data = (uintptr_t)handles;
	cmd.attrs[3].attr_id = VRDMA_IB_ATTR_SRQ_OPS_RESP;
	cmd.attrs[3].flags = UVERBS_ATTR_F_MANDATORY;
	cmd.attrs[3].len = sizeof(*resp);
	cmd.attrs[3].data = (uintptr_t)resp;

	if (ioctl(ibsrq->context->cmd_fd, RDMA_VERBS_IOCTL, &cmd))
		return errno;
	if (resp->done > n)
		return EPROTO;
	return 0;
}

/* The work request as the kernel takes it; 0 or EINVAL. */
static int vrdma_srq_op_build(struct vrdma_srq_op *op,
			      const struct ibv_ops_wr *wr)
{
	memset(op, 0, sizeof(*op));
	op->wr_id = wr->wr_id;
	op->opcode = (uint8_t)wr->opcode;
	op->flags = (uint8_t)wr->flags;
	/* Unknown values stay unknown: the kernel refuses them. */
	if ((unsigned int)wr->opcode > UINT8_MAX ||
	    (unsigned int)wr->flags > UINT8_MAX)
		return EINVAL;
	op->unexpected_cnt = wr->tm.unexpected_cnt;
	op->handle = wr->tm.handle;
	if (wr->opcode != IBV_WR_TAG_ADD)
		return 0;
	if (wr->tm.add.num_sge < 0 || wr->tm.add.num_sge > VRDMA_TM_MAX_SGE ||
	    (wr->tm.add.num_sge && !wr->tm.add.sg_list))
		return EINVAL;
	op->recv_wr_id = wr->tm.add.recv_wr_id;
	op->tag = wr->tm.add.tag;
	op->mask = wr->tm.add.mask;
	op->num_sge = (uint16_t)wr->tm.add.num_sge;
	memcpy(op->sge, wr->tm.add.sg_list,
	       op->num_sge * sizeof(struct ibv_sge));
	return 0;
}

int vrdma_post_srq_ops(struct ibv_srq *ibsrq, struct ibv_ops_wr *wr,
		       struct ibv_ops_wr **bad_wr)
{
	struct vrdma_srq *srq = to_vsrq(ibsrq);
	uint32_t max = srq->tm_max_ops, n, i;
	struct vrdma_srq_ops_resp resp;
	struct ibv_ops_wr **wrs = NULL;
	struct vrdma_srq_op *ops = NULL;
	uint32_t *handles = NULL;
	int ret = 0;

	if (srq->vsrq.srq_type != IBV_SRQT_TM || !max) {
		*bad_wr = wr;
		return EINVAL;
	}
	ops = calloc(max, sizeof(*ops));
	handles = calloc(max, sizeof(*handles));
	wrs = calloc(max, sizeof(*wrs));
	if (!ops || !handles || !wrs) {
		ret = ENOMEM;
		*bad_wr = wr;
		goto out;
	}
	while (wr) {
		/* A batch of at most max_ops, up to the first bad one. */
		for (n = 0; wr && n < max; n++, wr = wr->next) {
			ret = vrdma_srq_op_build(&ops[n], wr);
			if (ret)
				break;
			wrs[n] = wr;
		}
		if (n) {
			int err;

			memset(&resp, 0, sizeof(resp));
			err = vrdma_srq_ops_call(ibsrq, ops, n, handles,
						 &resp);
			if (err) {
				*bad_wr = wrs[0];
				ret = err;
				goto out;
			}
			for (i = 0; i < resp.done; i++)
				if (wrs[i]->opcode == IBV_WR_TAG_ADD)
					wrs[i]->tm.handle = handles[i];
			if (resp.error) {
				*bad_wr = wrs[resp.done];
				ret = (int)resp.error;
				goto out;
			}
		}
		if (ret) {
			*bad_wr = wr;
			goto out;
		}
	}
out:
	free(wrs);
	free(handles);
	free(ops);
	return ret;
}
