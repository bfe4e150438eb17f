/* SPDX-License-Identifier: (GPL-2.0 OR Linux-OpenIB) */
/*
 * libvrdma: the rdma-core provider for the vrdma kernel driver.
 *
 *   vrdma.c    registration with libibverbs, device and context life cycle
 *   verbs.c    device/port queries, protection domains
 *
 * Everything the provider shares with the kernel comes from
 * uapi/rdma/vrdma-abi.h; everything it shares with libibverbs beyond the
 * public verbs.h comes from vrdma-verbs-private.h.
 */
#ifndef VRDMA_PROVIDER_H
#define VRDMA_PROVIDER_H

#include <errno.h>
#include <stddef.h>

#include <rdma/vrdma-abi.h>

#include "vrdma-verbs-private.h"

#define VRDMA_PROVIDER_NAME "vrdma"

/* GET_CONTEXT: no driver request; struct vrdma_alloc_ucontext_resp back. */
VRDMA_DECLARE_DRV_CMD(vrdma_get_context, ibv_get_context, vrdma_verbs_empty,
		      ib_uverbs_get_context_resp, vrdma_alloc_ucontext_resp);

struct vrdma_device {
	struct verbs_device ibv_dev;
};

struct vrdma_context {
	struct verbs_context ibv_ctx;
};

struct vrdma_pd {
	struct ibv_pd ibv_pd;
};

#define vrdma_container_of(ptr, type, member)				\
	((type *)((char *)(ptr) - offsetof(type, member)))

static inline struct vrdma_device *to_vdev(struct ibv_device *ibdev)
{
	return vrdma_container_of(verbs_get_device(ibdev), struct vrdma_device,
				  ibv_dev);
}

static inline struct vrdma_context *to_vctx(struct ibv_context *ibctx)
{
	return vrdma_container_of(ibctx, struct vrdma_context, ibv_ctx.context);
}

static inline struct vrdma_pd *to_vpd(struct ibv_pd *ibpd)
{
	return vrdma_container_of(ibpd, struct vrdma_pd, ibv_pd);
}

/* Logs through libibverbs (VERBS_LOG_LEVEL/VERBS_LOG_FILE); keeps errno. */
#define vrdma_err(vctx, fmt, ...)					\
	do {								\
		int vrdma_err_errno = errno;				\
									\
		__verbs_log((vctx), VERBS_LOG_ERR, "%s: %s: " fmt,	\
			    (vctx)->context.device->name, __func__,	\
			    ##__VA_ARGS__);				\
		errno = vrdma_err_errno;				\
	} while (0)

/* verbs.c */
int vrdma_query_device_ex(struct ibv_context *context,
			  const struct ibv_query_device_ex_input *input,
			  struct ibv_device_attr_ex *attr, size_t attr_size);
int vrdma_query_port(struct ibv_context *context, uint8_t port_num,
		     struct ibv_port_attr *port_attr);
struct ibv_pd *vrdma_alloc_pd(struct ibv_context *context);
int vrdma_dealloc_pd(struct ibv_pd *pd);

#endif /* VRDMA_PROVIDER_H */
