// SPDX-License-Identifier: (GPL-2.0 OR Linux-OpenIB)
/*
 * Registration with libibverbs, and the device and context life cycle.
 *
 * libibverbs dlopen()s this library (see vrdma.driver), whose constructor
 * registers vrdma_dev_ops.  For every uverbs device it finds, libibverbs
 * then asks the registered providers in turn; it binds a device to us when
 * its parent's modalias matches the table below and its uverbs_abi_ver
 * lies in [match_min_abi_version, match_max_abi_version].
 */
#include <errno.h>
#include <stdlib.h>

#include "vrdma.h"

/*
 * The module gives every ib_device a parent device of its own, whose
 * modalias attribute reads VRDMA_MODALIAS; libibverbs reads it as
 * <ibdev>/device/modalias.  It is the one thing that identifies our
 * devices and nothing else:
 *  - the name does not: "rdma dev set vrdma0 name x" renames a device, and
 *    any other driver's device (rdma_rxe's, say) may be named vrdma0;
 *  - the module reports RDMA_DRIVER_UNKNOWN, which libibverbs never
 *    matches on, and an rdma_driver_id we made up could be given to
 *    another driver by ib_core tomorrow;
 *  - "vrdma:" is no bus's modalias prefix, so no hardware device reads it.
 */
static const struct verbs_match_ent vrdma_match_table[] = {
	VRDMA_VERBS_MODALIAS_MATCH(VRDMA_MODALIAS, NULL),
	{},
};

static void vrdma_free_context(struct ibv_context *ibctx);

/* Ops left NULL fail with EOPNOTSUPP (libibverbs' defaults). */
static const struct verbs_context_ops vrdma_ctx_ops = {
	.advise_mr = vrdma_advise_mr,
	.alloc_dm = vrdma_alloc_dm,
	.alloc_mw = vrdma_alloc_mw,
	.alloc_parent_domain = vrdma_alloc_parent_domain,
	.alloc_pd = vrdma_alloc_pd,
	.alloc_td = vrdma_alloc_td,
	/* Multicast is the kernel's alone: nothing in the rings changes. */
	.attach_mcast = ibv_cmd_attach_mcast,
	.bind_mw = vrdma_bind_mw,
	.close_xrcd = vrdma_close_xrcd,
	.create_ah = vrdma_create_ah,
	.create_cq = vrdma_create_cq,
	.create_cq_ex = vrdma_create_cq_ex,
	.create_flow = vrdma_create_flow,
	.create_qp = vrdma_create_qp,
	.create_qp_ex = vrdma_create_qp_ex,
	.create_srq = vrdma_create_srq,
	.create_srq_ex = vrdma_create_srq_ex,
	.dealloc_mw = vrdma_dealloc_mw,
	.dealloc_pd = vrdma_dealloc_pd,
	.dealloc_td = vrdma_dealloc_td,
	.dereg_mr = vrdma_dereg_mr,
	.destroy_ah = vrdma_destroy_ah,
	.destroy_cq = vrdma_destroy_cq,
	.destroy_flow = vrdma_destroy_flow,
	.destroy_qp = vrdma_destroy_qp,
	.destroy_srq = vrdma_destroy_srq,
	.detach_mcast = ibv_cmd_detach_mcast,
	.free_context = vrdma_free_context,
	.free_dm = vrdma_free_dm,
	.get_srq_num = vrdma_get_srq_num,
	.import_dm = vrdma_import_dm,
	.import_mr = vrdma_import_mr,
	.import_pd = vrdma_import_pd,
	.modify_qp = vrdma_modify_qp,
	.modify_srq = vrdma_modify_srq,
	.open_qp = vrdma_open_qp,
	.open_xrcd = vrdma_open_xrcd,
	.poll_cq = vrdma_poll_cq,
	.post_recv = vrdma_post_recv,
	.post_send = vrdma_post_send,
	.post_srq_ops = vrdma_post_srq_ops,
	.post_srq_recv = vrdma_post_srq_recv,
	.query_device_ex = vrdma_query_device_ex,
	.query_port = vrdma_query_port,
	.query_qp = vrdma_query_qp,
	.query_srq = vrdma_query_srq,
	.reg_dm_mr = vrdma_reg_dm_mr,
	.reg_dmabuf_mr = vrdma_reg_dmabuf_mr,
	.reg_mr = vrdma_reg_mr,
	.req_notify_cq = vrdma_req_notify_cq,
	.rereg_mr = vrdma_rereg_mr,
	.resize_cq = vrdma_resize_cq,
	.unimport_dm = vrdma_unimport_dm,
	.unimport_mr = vrdma_unimport_mr,
	.unimport_pd = vrdma_unimport_pd,

	/* RSS (wq.c) */
	.create_rwq_ind_table = vrdma_create_rwq_ind_table,
	.create_wq = vrdma_create_wq,
	.destroy_rwq_ind_table = vrdma_destroy_rwq_ind_table,
	.destroy_wq = vrdma_destroy_wq,
	.modify_wq = vrdma_modify_wq,
};

/*
 * Called by ibv_open_device() with the opened /dev/infiniband/uverbsN, which
 * we own from here on: every error path closes it (verbs_uninit_context, or
 * _verbs_init_and_alloc_context itself).
 */
static struct verbs_context *vrdma_alloc_context(struct ibv_device *ibdev,
						 int cmd_fd,
						 void *private_data)
{
	struct vrdma_get_context_resp resp = {};
	struct vrdma_get_context cmd = {};
	struct vrdma_context *ctx;
	int ret;

	(void)private_data;

	ctx = vrdma_verbs_init_and_alloc_context(ibdev, cmd_fd, ctx, ibv_ctx,
						 RDMA_DRIVER_UNKNOWN);
	if (!ctx)
		return NULL;

	ret = ibv_cmd_get_context(&ctx->ibv_ctx, &cmd.ibv_cmd, sizeof(cmd),
				  &resp.ibv_resp, sizeof(resp));
	if (ret)
		goto err;

	/*
	 * A module that does not write our response leaves abi_version 0;
	 * the version was range-checked at match time already, this catches
	 * a device that matched but is not ours.
	 */
	if (resp.drv_payload.abi_version != VRDMA_UVERBS_ABI_VERSION) {
		vrdma_err(&ctx->ibv_ctx,
			  "kernel ABI version %u, provider supports %u\n",
			  resp.drv_payload.abi_version,
			  VRDMA_UVERBS_ABI_VERSION);
		ret = EPROTO;
		goto err;
	}

	verbs_set_ops(&ctx->ibv_ctx, &vrdma_ctx_ops);
	/* which provider a device got, for VERBS_LOG_LEVEL=4 */
	vrdma_dbg(&ctx->ibv_ctx, "libvrdma, kernel ABI %u\n",
		  resp.drv_payload.abi_version);
	return &ctx->ibv_ctx;

err:
	verbs_uninit_context(&ctx->ibv_ctx);
	free(ctx);
	errno = ret;
	return NULL;
}

/*
 * ibv_import_device(): a context on a command file that another context
 * opened (a dup of its fd, passed on or inherited), sharing its ucontext
 * and so its objects and rings.  The kernel has nothing to answer that the
 * first GET_CONTEXT did not (the ABI version was matched when the device
 * was found); QUERY_CONTEXT fails for a file that has no context yet.
 */
static struct verbs_context *vrdma_import_context(struct ibv_device *ibdev,
						  int cmd_fd)
{
	struct vrdma_context *ctx;
	int ret;

	ctx = vrdma_verbs_init_and_alloc_context(ibdev, cmd_fd, ctx, ibv_ctx,
						 RDMA_DRIVER_UNKNOWN);
	if (!ctx)
		return NULL;

	ret = ibv_cmd_query_context(&ctx->ibv_ctx.context, NULL);
	if (ret) {
		verbs_uninit_context(&ctx->ibv_ctx);
		free(ctx);
		errno = ret;
		return NULL;
	}
	verbs_set_ops(&ctx->ibv_ctx, &vrdma_ctx_ops);
	return &ctx->ibv_ctx;
}

static void vrdma_free_context(struct ibv_context *ibctx)
{
	struct vrdma_context *ctx = to_vctx(ibctx);

	verbs_uninit_context(&ctx->ibv_ctx);
	free(ctx);
}

/* libibverbs fills in every field of the verbs_device after we return. */
static struct verbs_device *
vrdma_alloc_device(struct verbs_sysfs_dev *sysfs_dev)
{
	struct vrdma_device *dev;

	(void)sysfs_dev;

	dev = calloc(1, sizeof(*dev));
	if (!dev)
		return NULL;
	return &dev->ibv_dev;
}

/* Called when the last reference (device list, open contexts) is gone. */
static void vrdma_uninit_device(struct verbs_device *verbs_device)
{
	free(to_vdev(&verbs_device->device));
}

static const struct verbs_device_ops vrdma_dev_ops = {
	.name = VRDMA_PROVIDER_NAME,
	.match_min_abi_version = VRDMA_UVERBS_ABI_VERSION,
	.match_max_abi_version = VRDMA_UVERBS_ABI_VERSION,
	.match_table = vrdma_match_table,
	.alloc_device = vrdma_alloc_device,
	.uninit_device = vrdma_uninit_device,
	.alloc_context = vrdma_alloc_context,
	.import_context = vrdma_import_context,
};

static void __attribute__((constructor)) vrdma_register_driver(void)
{
	verbs_register_driver_34(&vrdma_dev_ops);
}
