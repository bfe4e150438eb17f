// SPDX-License-Identifier: (GPL-2.0 OR Linux-OpenIB)
/*
 * Memory windows.
 *
 * The kernel allocates a window and keeps all of its state; binding one is
 * a work request the kernel executes in send queue order: IBV_WR_BIND_MW
 * through post_send (or ibv_wr_bind_mw) for type 2 windows, and for type 1
 * ibv_bind_mw(), which lands here and posts the same work request with the
 * next key.  Invalidation is a work request too (IBV_WR_LOCAL_INV, or the
 * peer's IBV_WR_SEND_WITH_INV).
 */
#include <errno.h>
#include <stdlib.h>

#include "vrdma.h"

struct ibv_mw *vrdma_alloc_mw(struct ibv_pd *pd, enum ibv_mw_type type)
{
	struct ib_uverbs_alloc_mw_resp resp = {};
	struct ibv_alloc_mw cmd = {};
	struct ibv_mw *mw;
	int ret;

	mw = calloc(1, sizeof(*mw));
	if (!mw)
		return NULL;

	ret = ibv_cmd_alloc_mw(pd, type, mw, &cmd, sizeof(cmd), &resp,
			       sizeof(resp));
	if (ret) {
		free(mw);
		errno = ret;
		return NULL;
	}
	return mw;
}

int vrdma_dealloc_mw(struct ibv_mw *mw)
{
	int ret;

	ret = ibv_cmd_dealloc_mw(mw);
	if (ret)
		return ret;

	free(mw);
	return 0;
}

/*
 * ibv_bind_mw() of a type 1 window (libibverbs checked the type and the
 * MR's PD): a BIND_MW work request with the window's next key, which the
 * window has from now on.  If the bind then completes in error, the key is
 * the application's to restore (as with every provider).
 */
int vrdma_bind_mw(struct ibv_qp *qp, struct ibv_mw *mw,
		  struct ibv_mw_bind *mw_bind)
{
	struct ibv_send_wr wr = {
		.wr_id = mw_bind->wr_id,
		.opcode = IBV_WR_BIND_MW,
		.send_flags = mw_bind->send_flags,
		.bind_mw = {
			.mw = mw,
			.rkey = ibv_inc_rkey(mw->rkey),
			.bind_info = mw_bind->bind_info,
		},
	};
	struct ibv_send_wr *bad_wr;
	int ret;

	if (mw->type != IBV_MW_TYPE_1)
		return EINVAL;

	ret = vrdma_post_send(qp, &wr, &bad_wr);
	if (ret)
		return ret;
	mw->rkey = wr.bind_mw.rkey;
	return 0;
}
