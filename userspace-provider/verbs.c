// SPDX-License-Identifier: (GPL-2.0 OR Linux-OpenIB)
/*
 * Device and port queries, protection domains, XRC domains, memory
 * regions, address handles.
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
#include <string.h>
#include <sys/ioctl.h>
#include <rdma/ib_user_ioctl_cmds.h>
#include <rdma/rdma_user_ioctl.h>

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
	/*
	 * RSS: the kernel answers the tables' sizes; the hash is the
	 * provider's to describe, as uverbs carries none (wq.c).
	 */
	if (attr_size >= offsetof(struct ibv_device_attr_ex, rss_caps) +
			 sizeof(attr->rss_caps)) {
		attr->rss_caps.rx_hash_function = IBV_RX_HASH_FUNC_TOEPLITZ;
		attr->rss_caps.rx_hash_fields_mask = VRDMA_RX_HASH_FIELDS;
	}
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

/*
 * Thread domains are the provider's alone: a promise of the application,
 * kept with the parent domains made with it (a TD goes only after them).
 * No attribute is defined yet: comp_mask must be 0.  The process's TDs are
 * listed, so that a parent domain is made only with one of them.
 */
static pthread_mutex_t vrdma_tds_lock = PTHREAD_MUTEX_INITIALIZER;
static struct vrdma_td *vrdma_tds;

struct ibv_td *vrdma_alloc_td(struct ibv_context *context,
			      struct ibv_td_init_attr *attr)
{
	struct vrdma_td *td;

	if (!attr || attr->comp_mask) {
		errno = EINVAL;
		return NULL;
	}
	td = calloc(1, sizeof(*td));
	if (!td)
		return NULL;
	td->ibv_td.context = context;
	pthread_mutex_lock(&vrdma_tds_lock);
	td->next = vrdma_tds;
	vrdma_tds = td;
	pthread_mutex_unlock(&vrdma_tds_lock);
	return &td->ibv_td;
}

int vrdma_dealloc_td(struct ibv_td *ibtd)
{
	struct vrdma_td *td = to_vtd(ibtd), **p;

	pthread_mutex_lock(&vrdma_tds_lock);
	if (atomic_load(&td->parents)) {
		pthread_mutex_unlock(&vrdma_tds_lock);
		return EBUSY;
	}
	for (p = &vrdma_tds; *p && *p != td; p = &(*p)->next)
		;
	if (*p)
		*p = td->next;
	pthread_mutex_unlock(&vrdma_tds_lock);
	free(td);
	return 0;
}

/*
 * Take @ibtd, a TD of @context, for a new parent domain: the TD, or NULL
 * if it is none of this context's.
 */
static struct vrdma_td *vrdma_td_get(struct ibv_context *context,
				     struct ibv_td *ibtd)
{
	struct vrdma_td *td;

	pthread_mutex_lock(&vrdma_tds_lock);
	for (td = vrdma_tds; td && &td->ibv_td != ibtd; td = td->next)
		;
	if (td && td->ibv_td.context == context)
		atomic_fetch_add(&td->parents, 1);
	else
		td = NULL;
	pthread_mutex_unlock(&vrdma_tds_lock);
	return td;
}

/*
 * Parent domains: what is made on one is made on its PD.  No memory of
 * this provider is ever shared with the device -- the rings are the
 * kernel's, mapped into the process -- so there is nothing for custom
 * allocators to allocate: they are kept (IBV_PARENT_DOMAIN_INIT_ATTR_
 * ALLOCATORS) and never called.  A thread domain lets the QPs and CQs made
 * on the parent domain go without their ring locks.
 */
struct ibv_pd *vrdma_alloc_parent_domain(struct ibv_context *context,
					 struct ibv_parent_domain_init_attr *attr)
{
	struct vrdma_pd *pd, *protection;

	if (!attr || !attr->pd || attr->pd->context != context ||
	    (attr->comp_mask & ~(uint32_t)(IBV_PARENT_DOMAIN_INIT_ATTR_ALLOCATORS |
					   IBV_PARENT_DOMAIN_INIT_ATTR_PD_CONTEXT))) {
		errno = EINVAL;
		return NULL;
	}
	protection = to_vpd(attr->pd);
	if (protection->protection ||
	    ((attr->comp_mask & IBV_PARENT_DOMAIN_INIT_ATTR_ALLOCATORS) &&
	     (!attr->alloc || !attr->free))) {
		errno = EINVAL;	/* a parent of a parent; half an allocator */
		return NULL;
	}

	pd = calloc(1, sizeof(*pd));
	if (!pd)
		return NULL;
	if (attr->td) {
		pd->td = vrdma_td_get(context, attr->td);
		if (!pd->td) {
			free(pd);
			errno = EINVAL;
			return NULL;
		}
	}
	pd->ibv_pd.context = context;
	pd->ibv_pd.handle = attr->pd->handle;
	pd->protection = protection;
	if (attr->comp_mask & IBV_PARENT_DOMAIN_INIT_ATTR_ALLOCATORS) {
		pd->alloc = attr->alloc;
		pd->free = attr->free;
	}
	if (attr->comp_mask & IBV_PARENT_DOMAIN_INIT_ATTR_PD_CONTEXT)
		pd->pd_context = attr->pd_context;
	atomic_fetch_add(&protection->parents, 1);
	return &pd->ibv_pd;
}

/* Is @pd a parent domain with a thread domain? */
bool vrdma_pd_single_threaded(struct ibv_pd *pd)
{
	return pd && to_vpd(pd)->td;
}

bool vrdma_is_parent_domain(struct ibv_context *context, struct ibv_pd *pd)
{
	return pd && pd->context == context && to_vpd(pd)->protection;
}

/* A PD goes only after its parent domains; a parent domain at any time. */
int vrdma_dealloc_pd(struct ibv_pd *ibpd)
{
	struct vrdma_pd *pd = to_vpd(ibpd);
	int ret;

	if (pd->protection) {
		if (pd->td)
			atomic_fetch_sub(&pd->td->parents, 1);
		atomic_fetch_sub(&pd->protection->parents, 1);
		free(pd);
		return 0;
	}
	if (atomic_load(&pd->parents))
		return EBUSY;
	ret = ibv_cmd_dealloc_pd(ibpd);
	if (ret)
		return ret;

	free(to_vpd(ibpd));
	return 0;
}

/*
 * XRC domains are the kernel's alone: ib_core finds the one already open
 * on attr's file, or makes one (O_CREAT), and keeps it until its last
 * user, in any process, closes it.  User space holds its handle.
 * ibv_cmd_open_xrcd() refuses unknown comp_mask bits (EOPNOTSUPP) and
 * wants both the fd and the oflags (EINVAL).
 */
struct ibv_xrcd *vrdma_open_xrcd(struct ibv_context *context,
				 struct ibv_xrcd_init_attr *attr)
{
	struct ib_uverbs_open_xrcd_resp resp = {};
	struct ibv_open_xrcd cmd = {};
	struct verbs_xrcd *xrcd;
	int ret;

	xrcd = calloc(1, sizeof(*xrcd));
	if (!xrcd)
		return NULL;

	ret = ibv_cmd_open_xrcd(context, xrcd, sizeof(*xrcd), attr, &cmd,
				sizeof(cmd), &resp, sizeof(resp));
	if (ret) {
		free(xrcd);
		errno = ret;
		return NULL;
	}
	return &xrcd->xrcd;
}

int vrdma_close_xrcd(struct ibv_xrcd *ibxrcd)
{
	struct verbs_xrcd *xrcd = to_vxrcd(ibxrcd);
	int ret;

	ret = ibv_cmd_close_xrcd(xrcd);
	if (ret)
		return ret;

	free(xrcd);
	return 0;
}

/*
 * Importing (ibv_import_pd, ibv_import_mr): a second context on the same
 * command file -- ibv_import_device() of a dup of the first one's -- uses
 * the first one's objects by their handles.  A PD is nothing but its
 * handle here, which the kernel checks wherever the PD is used; an MR's
 * keys and length come from the kernel (UVERBS_METHOD_QUERY_MR), which
 * fails for a handle that names no MR of this file.  Unimporting frees only
 * what user space holds: the objects stay until their owner destroys them.
 */
struct ibv_pd *vrdma_import_pd(struct ibv_context *context,
			       uint32_t pd_handle)
{
	struct vrdma_pd *pd;

	pd = calloc(1, sizeof(*pd));
	if (!pd)
		return NULL;
	pd->ibv_pd.context = context;
	pd->ibv_pd.handle = pd_handle;
	return &pd->ibv_pd;
}

void vrdma_unimport_pd(struct ibv_pd *ibpd)
{
	free(to_vpd(ibpd));
}

struct ibv_mr *vrdma_import_mr(struct ibv_pd *pd, uint32_t mr_handle)
{
	struct verbs_mr *vmr;
	int ret;

	vmr = calloc(1, sizeof(*vmr));
	if (!vmr)
		return NULL;
	ret = ibv_cmd_query_mr(pd, vmr, mr_handle);
	if (ret) {
		free(vmr);
		errno = ret;
		return NULL;
	}
	return &vmr->ibv_mr;
}

void vrdma_unimport_mr(struct ibv_mr *ibmr)
{
	free(vrdma_container_of(ibmr, struct verbs_mr, ibv_mr));
}

/*
 * The kernel pins the pages (with IBV_ACCESS_ON_DEMAND: none, it faults
 * them in as the device touches them) and hands out the keys; user space
 * keeps nothing of its own about an MR.
 *
 * On-demand paging goes through unchanged.  An implicit ODP MR,
 * ibv_reg_mr(pd, NULL, SIZE_MAX, ...), arrives here as it was asked (addr
 * NULL, length SIZE_MAX, hca_va 0); ibv_cmd_reg_mr() turns the length
 * into the kernel's U64_MAX and refuses SIZE_MAX with an address
 * (EINVAL).  libibverbs skips ibv_dontfork_range() for ODP MRs: nothing
 * is pinned that a fork could copy.
 */
struct ibv_mr *vrdma_reg_mr(struct ibv_pd *pd, void *addr, size_t length,
			    uint64_t hca_va, int access)
{
	struct ib_uverbs_reg_mr_resp resp = {};
	struct ibv_reg_mr cmd = {};
	struct verbs_mr *vmr;
	int ret;

	vmr = calloc(1, sizeof(*vmr));
	if (!vmr)
		return NULL;

	ret = ibv_cmd_reg_mr(pd, addr, length, hca_va, access, vmr, &cmd,
			     sizeof(cmd), &resp, sizeof(resp));
	if (ret) {
		free(vmr);
		errno = ret;
		return NULL;
	}
	return &vmr->ibv_mr;
}

/*
 * ibv_reg_dmabuf_mr(): @length bytes at @offset of the dma-buf @fd, at
 * @iova.  Sent as a raw UVERBS_METHOD_REG_DMABUF_MR: the ibv_cmd_ helper
 * changed its arguments between the rdma-core releases libvrdma builds
 * against.  The kernel checks the range, the buffer and the rights.
 */
struct ibv_mr *vrdma_reg_dmabuf_mr(struct ibv_pd *pd, uint64_t offset,
				   size_t length, uint64_t iova, int fd,
				   int access)
{
	struct {
		struct ib_uverbs_ioctl_hdr hdr;
		struct ib_uverbs_attr attrs[9];
	} cmd;
	struct ib_uverbs_attr *a = cmd.attrs;
	uint32_t lkey = 0, rkey = 0;
	struct verbs_mr *vmr;

	vmr = calloc(1, sizeof(*vmr));
	if (!vmr)
		return NULL;

	memset(&cmd, 0, sizeof(cmd));
	cmd.hdr.length = sizeof(cmd);
	cmd.hdr.object_id = UVERBS_OBJECT_MR;
	cmd.hdr.method_id = UVERBS_METHOD_REG_DMABUF_MR;
	cmd.hdr.num_attrs = 9;
	cmd.hdr.driver_id = RDMA_DRIVER_UNKNOWN;
	/* the new MR's handle comes back in .data */
	a[0].attr_id = UVERBS_ATTR_REG_DMABUF_MR_HANDLE;
	a[1].attr_id = UVERBS_ATTR_REG_DMABUF_MR_PD_HANDLE;
	a[1].data = pd->handle;
	a[2].attr_id = UVERBS_ATTR_REG_DMABUF_MR_OFFSET;
	a[2].len = sizeof(uint64_t);
	a[2].data = offset;
	a[3].attr_id = UVERBS_ATTR_REG_DMABUF_MR_LENGTH;
	a[3].len = sizeof(uint64_t);
	a[3].data = length;
	a[4].attr_id = UVERBS_ATTR_REG_DMABUF_MR_IOVA;
	a[4].len = sizeof(uint64_t);
	a[4].data = iova;
	a[5].attr_id = UVERBS_ATTR_REG_DMABUF_MR_FD;
	a[5].len = sizeof(uint32_t);
	a[5].data = (uint32_t)fd;
	a[6].attr_id = UVERBS_ATTR_REG_DMABUF_MR_ACCESS_FLAGS;
	a[6].len = sizeof(uint64_t);
	a[6].data = (uint32_t)access;
	a[7].attr_id = UVERBS_ATTR_REG_DMABUF_MR_RESP_LKEY;
	a[7].len = sizeof(lkey);
	a[7].data = (uintptr_t)&lkey;
	a[8].attr_id = UVERBS_ATTR_REG_DMABUF_MR_RESP_RKEY;
	a[8].len = sizeof(rkey);
	a[8].data = (uintptr_t)&rkey;
	for (int i = 0; i < 9; i++)
		a[i].flags = UVERBS_ATTR_F_MANDATORY;

	if (ioctl(pd->context->cmd_fd, RDMA_VERBS_IOCTL, &cmd)) {
		free(vmr);
		return NULL;	/* errno is the kernel's */
	}
	vmr->ibv_mr.context = pd->context;
	vmr->ibv_mr.pd = pd;
	vmr->ibv_mr.handle = (uint32_t)a[0].data;
	vmr->ibv_mr.lkey = lkey;
	vmr->ibv_mr.rkey = rkey;
	vmr->ibv_mr.addr = (void *)(uintptr_t)offset;
	vmr->ibv_mr.length = length;
	vmr->mr_type = IBV_MR_TYPE_DMABUF_MR;
	vmr->access = access;
	return &vmr->ibv_mr;
}

/* A kernel without rereg_user_mr answers EOPNOTSUPP. */
int vrdma_rereg_mr(struct verbs_mr *vmr, int flags, struct ibv_pd *pd,
		   void *addr, size_t length, int access)
{
	struct ib_uverbs_rereg_mr_resp resp = {};
	struct ibv_rereg_mr cmd = {};

	/* as for reg_mr: the MR's I/O virtual address is its user address */
	return ibv_cmd_rereg_mr(vmr, flags, addr, length, (uintptr_t)addr,
				access, pd, &cmd, sizeof(cmd), &resp,
				sizeof(resp));
}

int vrdma_dereg_mr(struct verbs_mr *vmr)
{
	int ret;

	ret = ibv_cmd_dereg_mr(vmr);
	if (ret)
		return ret;

	free(vmr);
	return 0;
}

/*
 * ibv_advise_mr(): prefetch (for reading or writing, or only what the
 * process has mapped already: PREFETCH_NO_FAULT) ranges of ODP MRs of
 * @pd.  The kernel checks the ranges (each inside an ODP MR of the PD
 * behind @pd, which a parent domain shares the handle of), the advice and
 * the flags, and faults the pages in before it returns
 * (IBV_ADVISE_MR_FLAG_FLUSH) or from a work item; the provider keeps no
 * state of an MR to check them against.
 */
int vrdma_advise_mr(struct ibv_pd *pd, enum ibv_advise_mr_advice advice,
		    uint32_t flags, struct ibv_sge *sg_list, uint32_t num_sge)
{
	return ibv_cmd_advise_mr(pd, advice, flags, sg_list, num_sge);
}

/*
 * For UD: the AH lives in the kernel only; a UD send WQE names it by the
 * handle the kernel returns as driver data.
 */
struct ibv_ah *vrdma_create_ah(struct ibv_pd *pd, struct ibv_ah_attr *attr)
{
	struct vrdma_cmd_create_ah_resp resp = {};
	struct vrdma_ah *ah;
	int ret;

	ah = calloc(1, sizeof(*ah));
	if (!ah)
		return NULL;

	ret = ibv_cmd_create_ah(pd, &ah->ibv_ah, attr, &resp.ibv_resp,
				sizeof(resp));
	if (ret) {
		free(ah);
		errno = ret;
		return NULL;
	}
	/* 0 is never a handle: a kernel that did not answer */
	if (!resp.drv_payload.ah) {
		vrdma_err(&to_vctx(pd->context)->ibv_ctx,
			  "create_ah: no AH handle from the kernel\n");
		ibv_cmd_destroy_ah(&ah->ibv_ah);
		free(ah);
		errno = EPROTO;
		return NULL;
	}
	ah->ah_num = resp.drv_payload.ah;
	return &ah->ibv_ah;
}

int vrdma_destroy_ah(struct ibv_ah *ibah)
{
	int ret;

	ret = ibv_cmd_destroy_ah(ibah);
	if (ret)
		return ret;

	free(to_vah(ibah));
	return 0;
}
