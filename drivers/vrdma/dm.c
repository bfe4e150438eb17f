// SPDX-License-Identifier: GPL-2.0
/*
 * Device memory: ibv_alloc_dm() and the MRs made of it (ibv_reg_dm_mr()).
 *
 * A NIC's device memory is on-chip memory the process reaches through a
 * BAR mapping.  Here it is zeroed kernel pages, allocated as the shared
 * rings are (vrdma_mmap_alloc(): charged to the owner's memory cgroup)
 * and mapped into the process, which copies in and out of them itself
 * (the provider's ibv_memcpy_to_dm/from_dm).  What makes it "device"
 * memory is who owns it: the pages are the device's, not the process's,
 * and outlive any mapping until the DM is freed.  Each DM's pages are
 * also charged to the owner's RLIMIT_MEMLOCK, as pinning an MR is, and all
 * DMs of a device together are held to VRDMA_MAX_DM_TOTAL.
 *
 * A DM MR is an ordinary vrdma_mr (mr.c) whose page table points into the
 * DM, zero based: address 0 is the byte at the MR's offset in the DM.  It
 * pins nothing of its own and so frees only its page table at dereg;
 * ib_core refuses to free a DM while MRs of it exist (ib_dm.usecnt), so
 * the pages are there for as long as any key can reach them.
 *
 * ALLOC_DM answers only the DM's handle.  Where to map it comes from a
 * method of the driver's own, VRDMA_IB_METHOD_DM_QUERY (uapi), which
 * ibv_import_dm() uses too: a second context on the same command file
 * shares the ucontext, so it may map the same entry.
 */
#include <linux/capability.h>
#include <linux/sched/mm.h>
#include <linux/sched/signal.h>
#include <linux/vmalloc.h>

#include "vrdma.h"

#define UVERBS_MODULE_NAME vrdma_ib
#include <rdma/uverbs_named_ioctl.h>

/**
 * struct vrdma_dm - device memory
 * @ibdm: ib_core's part; ib_core fills it after alloc_dm returns
 * @mmap: the pages, as the mmap entry the process maps
 * @mmap_offset: what mmap() is given for @mmap
 * @length: bytes asked for; accesses are held to these, not to whole pages
 * @npages: pages held, counted in vdev->dm_pages and in @mm's pinned_vm
 * @mm: the allocating process's mm, charged for @npages (mmgrab()ed)
 */
struct vrdma_dm {
	struct ib_dm ibdm;
	struct vrdma_mmap_entry *mmap;
	u64 mmap_offset;
	u64 length;
	unsigned long npages;
	struct mm_struct *mm;
};

static inline struct vrdma_dm *to_vdm(struct ib_dm *ibdm)
{
	return container_of(ibdm, struct vrdma_dm, ibdm);
}

/*
 * Charge the DM to the caller's RLIMIT_MEMLOCK in pinned_vm, where
 * ib_umem_get() charges the pages of MRs: memory a process pins through the
 * device is held to one limit, whichever way it pins it.
 */
static int vrdma_dm_charge(struct vrdma_dm *dm)
{
	unsigned long limit = rlimit(RLIMIT_MEMLOCK) >> PAGE_SHIFT;
	struct mm_struct *mm = current->mm;

	if (atomic64_add_return(dm->npages, &mm->pinned_vm) > limit &&
	    !capable(CAP_IPC_LOCK)) {
		atomic64_sub(dm->npages, &mm->pinned_vm);
		return -ENOMEM;
	}
	mmgrab(mm);
	dm->mm = mm;
	return 0;
}

static void vrdma_dm_uncharge(struct vrdma_dm *dm)
{
	atomic64_sub(dm->npages, &dm->mm->pinned_vm);
	mmdrop(dm->mm);
}

/**
 * vrdma_alloc_dm() - allocate device memory for a process
 * @ibdev: the device
 * @ibuc: the context whose process may map it
 * @attr: length in bytes, alignment (log2 of bytes), flags
 * @attrs: the ALLOC_DM method's attributes; nothing of the driver's
 *
 * Return: the DM, or ERR_PTR: -EINVAL for a length of 0 or beyond
 * max_dm_size or an alignment beyond a page, -EOPNOTSUPP for flags,
 * -ENOMEM past VRDMA_MAX_DM_TOTAL for the device, past the caller's
 * RLIMIT_MEMLOCK (without CAP_IPC_LOCK) or its memory cgroup's limit.
 */
struct ib_dm *vrdma_alloc_dm(struct ib_device *ibdev,
			     struct ib_ucontext *ibuc,
			     struct ib_dm_alloc_attr *attr,
			     struct uverbs_attr_bundle *attrs)
{
	struct vrdma_dev *vdev = to_vdev(ibdev);
	struct vrdma_dm *dm;
	int ret;

	if (attr->flags) {
		ibdev_dbg(ibdev, "alloc_dm: unknown flags %#x\n", attr->flags);
		return ERR_PTR(-EOPNOTSUPP);
	}
	if (!attr->length || attr->length > vdev->attr.max_dm_size) {
		ibdev_dbg(ibdev, "alloc_dm: length %llu, 1 to %llu allowed\n",
			  attr->length, vdev->attr.max_dm_size);
		return ERR_PTR(-EINVAL);
	}
	/* Pages start at page boundaries: any alignment up to that holds. */
	if (attr->alignment > PAGE_SHIFT) {
		ibdev_dbg(ibdev, "alloc_dm: alignment 2^%u beyond a page\n",
			  attr->alignment);
		return ERR_PTR(-EINVAL);
	}

	dm = kzalloc(sizeof(*dm), GFP_KERNEL);
	if (!dm)
		return ERR_PTR(-ENOMEM);
	dm->length = attr->length;
	dm->npages = PAGE_ALIGN(attr->length) >> PAGE_SHIFT;

	if (atomic_add_return(dm->npages, &vdev->dm_pages) >
	    VRDMA_MAX_DM_TOTAL >> PAGE_SHIFT) {
		ibdev_dbg(ibdev, "alloc_dm: the device's %lu bytes are taken\n",
			  VRDMA_MAX_DM_TOTAL);
		ret = -ENOMEM;
		goto err_count;
	}
	ret = vrdma_dm_charge(dm);
	if (ret)
		goto err_count;
	dm->mmap = vrdma_mmap_alloc(to_vuc(ibuc), dm->length,
				    &dm->mmap_offset);
	if (IS_ERR(dm->mmap)) {
		ret = PTR_ERR(dm->mmap);
		goto err_charge;
	}
	return &dm->ibdm;

err_charge:
	vrdma_dm_uncharge(dm);
err_count:
	atomic_sub(dm->npages, &vdev->dm_pages);
	kfree(dm);
	return ERR_PTR(ret);
}

/**
 * vrdma_dealloc_dm() - free device memory
 * @ibdm: the DM; ib_core has checked that no MR of it is left
 * @attrs: the FREE_DM method's attributes
 *
 * The pages go once no mapping holds them: the process may still have
 * them mapped (an importing context, or one that did not unmap), and a
 * packet that was built from a DM MR holds its pages too.
 *
 * Return: 0
 */
int vrdma_dealloc_dm(struct ib_dm *ibdm, struct uverbs_attr_bundle *attrs)
{
	struct vrdma_dev *vdev = to_vdev(ibdm->device);
	struct vrdma_dm *dm = to_vdm(ibdm);

	vrdma_mmap_remove(dm->mmap);
	vrdma_dm_uncharge(dm);
	atomic_sub(dm->npages, &vdev->dm_pages);
	kfree(dm);
	return 0;
}

/**
 * vrdma_reg_dm_mr() - an MR over part of a DM
 * @ibpd: the PD the MR will belong to
 * @ibdm: the DM
 * @attr: offset and length in the DM, access flags (IB_ZERO_BASED, which
 *	ib_core requires, and the rights)
 * @attrs: the method's attributes; nothing of the driver's
 *
 * The MR is zero based: its addresses run from 0 to @attr->length, and
 * address 0 is byte @attr->offset of the DM.  Its rights are checked as an
 * ordinary MR's, and so is every access through its keys.
 *
 * Return: the MR, or ERR_PTR: -EINVAL for a range beyond the DM or rights
 * that are not allowed together, -EOPNOTSUPP for rights we do not
 * implement, -ENOMEM past max_mr.
 */
struct ib_mr *vrdma_reg_dm_mr(struct ib_pd *ibpd, struct ib_dm *ibdm,
			      struct ib_dm_mr_attr *attr,
			      struct uverbs_attr_bundle *attrs)
{
	struct vrdma_dev *vdev = to_vdev(ibpd->device);
	struct vrdma_dm *dm = to_vdm(ibdm);
	int access = attr->access_flags & ~IB_ZERO_BASED;
	unsigned long first, i;
	struct vrdma_mr *mr;
	int ret;

	ret = vrdma_mr_access_ok(access);
	if (ret)
		return ERR_PTR(ret);
	/* ib_core checked this against ib_dm.length, a u32: again, whole. */
	if (attr->offset > dm->length ||
	    attr->length > dm->length - attr->offset)
		return ERR_PTR(-EINVAL);

	mr = kzalloc(sizeof(*mr), GFP_KERNEL);
	if (!mr)
		return ERR_PTR(-ENOMEM);
	first = attr->offset >> PAGE_SHIFT;
	mr->page_offset = offset_in_page(attr->offset);
	/* A zero-length MR has no page: no access reaches one (mr_check). */
	if (attr->length) {
		mr->npages = PAGE_ALIGN(mr->page_offset + attr->length) >>
			     PAGE_SHIFT;
		mr->pages = kvmalloc_array(mr->npages, sizeof(*mr->pages),
					   VRDMA_GFP_USER);
		if (!mr->pages) {
			ret = -ENOMEM;
			goto err_free;
		}
		for (i = 0; i < mr->npages; i++)
			mr->pages[i] = vmalloc_to_page(dm->mmap->vaddr +
						       (first + i) * PAGE_SIZE);
	}
	mr->pd = to_vpd(ibpd);
	mr->iova = 0;
	mr->length = attr->length;
	mr->access = access;
	mr->ibmr.iova = 0;
	mr->ibmr.length = attr->length;
	ret = vrdma_mr_alloc_key(vdev, mr);
	if (ret)
		goto err_free;
	return &mr->ibmr;

err_free:
	kvfree(mr->pages);
	kfree(mr);
	return ERR_PTR(ret);
}

/*
 * VRDMA_IB_METHOD_DM_QUERY: where the process maps a DM, and its length.
 * ib_core has looked the handle up as a DM of this command file (a handle
 * of anything else fails there) and holds it for reading.
 */
static int
UVERBS_HANDLER(VRDMA_IB_METHOD_DM_QUERY)(struct uverbs_attr_bundle *attrs)
{
	struct ib_dm *ibdm = uverbs_attr_get_obj(attrs,
						 VRDMA_IB_ATTR_DM_QUERY_HANDLE);
	struct vrdma_dm *dm = to_vdm(ibdm);
	int ret;

	ret = uverbs_copy_to(attrs, VRDMA_IB_ATTR_DM_QUERY_MMAP_OFFSET,
			     &dm->mmap_offset, sizeof(dm->mmap_offset));
	if (ret)
		return ret;
	return uverbs_copy_to(attrs, VRDMA_IB_ATTR_DM_QUERY_LENGTH,
			      &dm->length, sizeof(dm->length));
}

DECLARE_UVERBS_NAMED_METHOD(VRDMA_IB_METHOD_DM_QUERY,
			    UVERBS_ATTR_IDR(VRDMA_IB_ATTR_DM_QUERY_HANDLE,
					    UVERBS_OBJECT_DM,
					    UVERBS_ACCESS_READ, UA_MANDATORY),
			    UVERBS_ATTR_PTR_OUT(VRDMA_IB_ATTR_DM_QUERY_MMAP_OFFSET,
						UVERBS_ATTR_TYPE(u64),
						UA_MANDATORY),
			    UVERBS_ATTR_PTR_OUT(VRDMA_IB_ATTR_DM_QUERY_LENGTH,
						UVERBS_ATTR_TYPE(u64),
						UA_MANDATORY));

ADD_UVERBS_METHODS(vrdma_ib_dm, UVERBS_OBJECT_DM,
		   &UVERBS_METHOD(VRDMA_IB_METHOD_DM_QUERY));

/* The driver's methods, merged into the device's uverbs API. */
static const struct uapi_definition vrdma_uapi_defs[] = {
	UAPI_DEF_CHAIN_OBJ_TREE(UVERBS_OBJECT_DM, &vrdma_ib_dm),
	UAPI_DEF_CHAIN(vrdma_tm_uapi_defs),
	{}
};

/**
 * vrdma_dm_dev_init() - give a new device the driver's uverbs methods
 * @vdev: the device, before registration
 */
void vrdma_dm_dev_init(struct vrdma_dev *vdev)
{
	vdev->ibdev.driver_def = vrdma_uapi_defs;
}
