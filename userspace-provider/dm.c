// SPDX-License-Identifier: (GPL-2.0 OR Linux-OpenIB)
/*
 * Device memory: ibv_alloc_dm(), ibv_memcpy_to_dm()/from_dm(),
 * ibv_reg_dm_mr(), ibv_import_dm().
 *
 * A vrdma DM is kernel memory the device owns (drivers/vrdma/dm.c); the
 * provider maps it and copies in and out of the mapping, with no system
 * call.  ALLOC_DM answers only the handle: where to map the DM and how
 * long it is come from the driver's own method VRDMA_IB_METHOD_DM_QUERY
 * (uapi/rdma/vrdma-abi.h), sent here as a raw RDMA_VERBS_IOCTL since
 * libibverbs' ioctl helpers are private.  An imported DM (a second context
 * on a dup of the command file) is mapped the same way from its handle.
 *
 * Copies take offsets and lengths in multiples of 4 bytes, as the verbs
 * of NICs with on-chip memory do, and stay inside the DM.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <unistd.h>
#include <rdma/rdma_user_ioctl.h>
#include <rdma/ib_user_ioctl_cmds.h>

#include "vrdma.h"

/* Copies move whole 4-byte words of the DM. */
#define VRDMA_DM_ALIGN 4

struct vrdma_dm {
	struct verbs_dm vdm;
	uint8_t *addr;		/* the mapping */
	size_t map_len;		/* whole pages */
	uint64_t length;	/* bytes of the DM, as the kernel says */
};

static struct vrdma_dm *to_vrdma_dm(struct ibv_dm *ibdm)
{
	return vrdma_container_of(ibdm, struct vrdma_dm, vdm.dm);
}

/* 0, or why @offset/@length cannot be copied: EINVAL or EFAULT. */
static int vrdma_dm_range(const struct vrdma_dm *dm, uint64_t offset,
			  size_t length)
{
	if (offset % VRDMA_DM_ALIGN || length % VRDMA_DM_ALIGN)
		return EINVAL;
	if (offset > dm->length || length > dm->length - offset)
		return EFAULT;
	return 0;
}

static int vrdma_memcpy_to_dm(struct ibv_dm *ibdm, uint64_t dm_offset,
			      const void *host_addr, size_t length)
{
	struct vrdma_dm *dm = to_vrdma_dm(ibdm);
	int ret = vrdma_dm_range(dm, dm_offset, length);

	if (ret)
		return ret;
	memcpy(dm->addr + dm_offset, host_addr, length);
	return 0;
}

static int vrdma_memcpy_from_dm(void *host_addr, struct ibv_dm *ibdm,
				uint64_t dm_offset, size_t length)
{
	struct vrdma_dm *dm = to_vrdma_dm(ibdm);
	int ret = vrdma_dm_range(dm, dm_offset, length);

	if (ret)
		return ret;
	memcpy(host_addr, dm->addr + dm_offset, length);
	return 0;
}

/*
 * VRDMA_IB_METHOD_DM_QUERY of @handle; 0 or a positive errno.  Every
 * attribute is mandatory, so a kernel without the method, or that does not
 * know one of them, refuses the call instead of leaving an output unset.
 */
static int vrdma_dm_query(struct ibv_context *context, uint32_t handle,
			  uint64_t *mmap_offset, uint64_t *length)
{
	struct {
		struct ib_uverbs_ioctl_hdr hdr;
		struct ib_uverbs_attr attrs[3];
	} cmd;

	memset(&cmd, 0, sizeof(cmd));
	cmd.hdr.length = sizeof(cmd);
	cmd.hdr.object_id = UVERBS_OBJECT_DM;
	cmd.hdr.method_id = VRDMA_IB_METHOD_DM_QUERY;
	cmd.hdr.num_attrs = 3;
	cmd.hdr.driver_id = RDMA_DRIVER_UNKNOWN;
	cmd.attrs[0].attr_id = VRDMA_IB_ATTR_DM_QUERY_HANDLE;
	cmd.attrs[0].flags = UVERBS_ATTR_F_MANDATORY;
	cmd.attrs[0].data = handle;
	cmd.attrs[1].attr_id = VRDMA_IB_ATTR_DM_QUERY_MMAP_OFFSET;
	cmd.attrs[1].flags = UVERBS_ATTR_F_MANDATORY;
	cmd.attrs[1].len = sizeof(*mmap_offset);
	cmd.attrs[1].data = (uintptr_t)mmap_offset;
	cmd.attrs[2].attr_id = VRDMA_IB_ATTR_DM_QUERY_LENGTH;
	cmd.attrs[2].flags = UVERBS_ATTR_F_MANDATORY;
	cmd.attrs[2].len = sizeof(*length);
	cmd.attrs[2].data = (uintptr_t)length;

	if (ioctl(context->cmd_fd, RDMA_VERBS_IOCTL, &cmd))
		return errno;
	return 0;
}

/* Query and map the DM @dm->vdm.handle; 0 or a positive errno. */
static int vrdma_dm_map(struct ibv_context *context, struct vrdma_dm *dm)
{
	long page = sysconf(_SC_PAGESIZE);
	uint64_t offset, length;
	void *addr;
	int ret;

	ret = vrdma_dm_query(context, dm->vdm.handle, &offset, &length);
	if (ret)
		return ret;
	if (!length || page <= 0 || length > SIZE_MAX - page)
		return EPROTO;
	dm->length = length;
	dm->map_len = (length + page - 1) / page * page;
	addr = mmap(NULL, dm->map_len, PROT_READ | PROT_WRITE, MAP_SHARED,
		    context->cmd_fd, offset);
	if (addr == MAP_FAILED)
		return errno;
	dm->addr = addr;
	dm->vdm.dm.memcpy_to_dm = vrdma_memcpy_to_dm;
	dm->vdm.dm.memcpy_from_dm = vrdma_memcpy_from_dm;
	return 0;
}

/*
 * The kernel enforces the length (1 to max_dm_size: EINVAL) and the
 * alignment (up to a page); no comp_mask bit is defined.
 */
struct ibv_dm *vrdma_alloc_dm(struct ibv_context *context,
			      struct ibv_alloc_dm_attr *attr)
{
	struct vrdma_dm *dm;
	int ret;

	if (attr->comp_mask) {
		errno = EINVAL;
		return NULL;
	}
	dm = calloc(1, sizeof(*dm));
	if (!dm)
		return NULL;
	ret = ibv_cmd_alloc_dm(context, attr, &dm->vdm, NULL);
	if (ret) {
		free(dm);
		errno = ret;
		return NULL;
	}
	ret = vrdma_dm_map(context, dm);
	if (ret) {
		vrdma_err(&to_vctx(context)->ibv_ctx,
			  "alloc_dm: cannot map DM %u: %s\n", dm->vdm.handle,
			  strerror(ret));
		ibv_cmd_free_dm(&dm->vdm);
		free(dm);
		errno = ret;
		return NULL;
	}
	return &dm->vdm.dm;
}

/* While MRs of the DM exist the kernel refuses (EBUSY): it stays mapped. */
int vrdma_free_dm(struct ibv_dm *ibdm)
{
	struct vrdma_dm *dm = to_vrdma_dm(ibdm);
	int ret;

	ret = ibv_cmd_free_dm(&dm->vdm);
	if (ret)
		return ret;
	munmap(dm->addr, dm->map_len);
	free(dm);
	return 0;
}

/*
 * Another context's DM on the same command file: the kernel checks that
 * the handle names a DM (anything else fails), and the DM stays its
 * owner's, who frees it; unimport only unmaps.
 */
struct ibv_dm *vrdma_import_dm(struct ibv_context *context,
			       uint32_t dm_handle)
{
	struct vrdma_dm *dm;
	int ret;

	dm = calloc(1, sizeof(*dm));
	if (!dm)
		return NULL;
	dm->vdm.handle = dm_handle;
	dm->vdm.dm.handle = dm_handle;
	dm->vdm.dm.comp_mask = IBV_DM_MASK_HANDLE;
	dm->vdm.dm.context = context;
	ret = vrdma_dm_map(context, dm);
	if (ret) {
		free(dm);
		errno = ret;
		return NULL;
	}
	return &dm->vdm.dm;
}

void vrdma_unimport_dm(struct ibv_dm *ibdm)
{
	struct vrdma_dm *dm = to_vrdma_dm(ibdm);

	munmap(dm->addr, dm->map_len);
	free(dm);
}

/*
 * A zero-based MR over [dm_offset, dm_offset + length) of the DM; the
 * kernel checks the range and the rights.  It is deregistered as any MR.
 */
struct ibv_mr *vrdma_reg_dm_mr(struct ibv_pd *pd, struct ibv_dm *ibdm,
			       uint64_t dm_offset, size_t length,
			       unsigned int access)
{
	struct verbs_mr *vmr;
	int ret;

	vmr = calloc(1, sizeof(*vmr));
	if (!vmr)
		return NULL;
	ret = ibv_cmd_reg_dm_mr(pd, &to_vrdma_dm(ibdm)->vdm, dm_offset, length,
				access, vmr, NULL);
	if (ret) {
		free(vmr);
		errno = ret;
		return NULL;
	}
	return &vmr->ibv_mr;
}
