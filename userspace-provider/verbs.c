// SPDX-License-Identifier: (GPL-2.0 OR Linux-OpenIB)
/*
 * Device and port queries, protection domains.
 *
 * All of these go straight to the kernel through libibverbs' command
 * helpers; vrdma defines no driver data for them.  The helpers return 0 or
 * a positive errno, and so do the int-returning verbs; the object-returning
 * ones return NULL with errno set.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>

#include "vrdma.h"

int vrdma_query_device_ex(struct ibv_context *context,
			  const struct ibv_query_device_ex_input *input,
			  struct ibv_device_attr_ex *attr, size_t attr_size)
{
	struct ib_uverbs_ex_query_device_resp resp = {};
	size_t resp_size = sizeof(resp);
	int ret;

	ret = ibv_cmd_query_device_any(context, input, attr, attr_size, &resp,
				       &resp_size);
	if (ret)
		return ret;

	/*
	 * fw_ver reaches user space as the raw number; print it the way the
	 * module's get_dev_fw_str() does for sysfs ("<major>.0.0").
	 */
	snprintf(attr->orig_attr.fw_ver, sizeof(attr->orig_attr.fw_ver),
		 "%" PRIu64 ".0.0", (uint64_t)resp.base.fw_ver);
	return 0;
}

int vrdma_query_port(struct ibv_context *context, uint8_t port_num,
		     struct ibv_port_attr *port_attr)
{
	struct ibv_query_port cmd = {};

	return ibv_cmd_query_port(context, port_num, port_attr, &cmd,
				  sizeof(cmd));
}

struct ibv_pd *vrdma_alloc_pd(struct ibv_context *context)
{
	struct ib_uverbs_alloc_pd_resp resp = {};
	struct ibv_alloc_pd cmd = {};
	struct vrdma_pd *pd;
	int ret;

	pd = calloc(1, sizeof(*pd));
	if (!pd)
		return NULL;

	ret = ibv_cmd_alloc_pd(context, &pd->ibv_pd, &cmd, sizeof(cmd), &resp,
			       sizeof(resp));
	if (ret) {
		free(pd);
		errno = ret;
		return NULL;
	}
	return &pd->ibv_pd;
}

int vrdma_dealloc_pd(struct ibv_pd *ibpd)
{
	int ret;

	ret = ibv_cmd_dealloc_pd(ibpd);
	if (ret)
		return ret;

	free(to_vpd(ibpd));
	return 0;
}
