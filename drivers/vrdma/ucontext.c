// SPDX-License-Identifier: GPL-2.0
/*
 * A user context: what a process gets from ibv_open_device(), and the
 * mmap() through which it sees memory the driver shares with it.
 *
 * Shared memory is zeroed pages (no stale kernel data reaches user space),
 * charged to the process's memory cgroup, mapped into the vmalloc area as
 * remap_vmalloc_range() wants (vrdma_vmalloc_user()) and registered as an
 * rdma_user_mmap_entry.  ib_core hands out the mmap offsets, checks that
 * only the owning context maps them, and when the device goes away while
 * the process lives (disassociation) it zaps the mappings; we free the
 * memory in mmap_free once the last user of an entry is gone.
 */
#include <linux/mm.h>
#include <linux/vmalloc.h>

#include "vrdma.h"

static_assert(sizeof(struct vrdma_uverbs_req) == 8);

/**
 * vrdma_udata_req() - read and check the driver request of a verb
 * @ibdev: the device the verb is for
 * @udata: the verb's udata; NULL for a kernel consumer
 * @verb: the verb's name, for the message of a refusal
 * @req: where the request goes: struct vrdma_uverbs_req, or a verb's
 *	struct that starts with it
 * @size: sizeof(*@req), the request as this module knows it
 * @comp_known: the comp_mask bits of the verb this module knows
 *
 * Applies the rules of struct vrdma_uverbs_req, so that what a newer
 * provider asks for is refused rather than ignored: a request shorter than
 * @size (today's provider sends none) reads as if its missing bytes were
 * zero; bytes beyond @size must be zero.  Each refusal says why at
 * ibdev_dbg().
 *
 * Return: 0, -EOPNOTSUPP for non-zero bytes beyond @size or comp_mask
 * bits outside @comp_known, -EINVAL for a non-zero reserved field, or
 * -EFAULT.
 */
int vrdma_udata_req(struct ib_device *ibdev, struct ib_udata *udata,
		    const char *verb, struct vrdma_uverbs_req *req, size_t size,
		    u32 comp_known)
{
	size_t len = udata ? udata->inlen : 0;
	int ret;

	memset(req, 0, size);
	if (!len)
		return 0;
	if (len > size && !ib_is_udata_cleared(udata, size, len - size)) {
		ibdev_dbg(ibdev,
			  "%s: %zu bytes of request, only %zu known, the rest not zero\n",
			  verb, len, size);
		return -EOPNOTSUPP;
	}
	ret = ib_copy_from_udata(req, udata, min(len, size));
	if (ret) {
		ibdev_dbg(ibdev, "%s: request not readable\n", verb);
		return ret;
	}
	if (req->comp_mask & ~comp_known) {
		ibdev_dbg(ibdev, "%s: unknown comp_mask bits %#x\n", verb,
			  req->comp_mask & ~comp_known);
		return -EOPNOTSUPP;
	}
	if (req->reserved) {
		ibdev_dbg(ibdev, "%s: reserved field %#x is not zero\n", verb,
			  req->reserved);
		return -EINVAL;
	}
	return 0;
}

/**
 * vrdma_udata_check() - vrdma_udata_req() for a verb whose request has
 *	nothing beyond struct vrdma_uverbs_req yet
 * @ibdev: the device the verb is for
 * @udata: the verb's udata; NULL for a kernel consumer
 * @verb: the verb's name, for the message of a refusal
 *
 * Return: as vrdma_udata_req().
 */
int vrdma_udata_check(struct ib_device *ibdev, struct ib_udata *udata,
		      const char *verb)
{
	struct vrdma_uverbs_req req;

	return vrdma_udata_req(ibdev, udata, verb, &req, sizeof(req), 0);
}

/**
 * vrdma_alloc_ucontext() - open a context for a process
 * @ibuc: ib_core's context, embedded in ours
 * @udata: the request, struct vrdma_uverbs_req (vrdma_udata_check()); carries
 *	struct vrdma_alloc_ucontext_resp back
 *
 * Return: 0 or a negative errno.
 */
int vrdma_alloc_ucontext(struct ib_ucontext *ibuc, struct ib_udata *udata)
{
	struct vrdma_alloc_ucontext_resp resp = {
		.abi_version = VRDMA_UVERBS_ABI_VERSION,
	};
	int ret;

	ret = vrdma_udata_check(ibuc->device, udata, __func__);
	if (ret)
		return ret;
	if (udata->outlen < sizeof(resp))
		return -EINVAL;
	return ib_copy_to_udata(udata, &resp, sizeof(resp));
}

void vrdma_dealloc_ucontext(struct ib_ucontext *ibuc)
{
}

/**
 * vrdma_query_ucontext() - answer QUERY_CONTEXT (ibv_import_device)
 * @ibuc: the context of the command file
 * @attrs: the method's attributes; ib_core has filled the core ones
 *
 * A second context imported on a dup of the command file shares this
 * ucontext; it needs nothing beyond the core answer (the ABI version was
 * matched when the provider found the device, the rings are described by
 * each verb that makes one), so there is no driver attribute.
 *
 * Return: 0
 */
int vrdma_query_ucontext(struct ib_ucontext *ibuc,
			 struct uverbs_attr_bundle *attrs)
{
	return 0;
}

/*
 * The device is being removed while the process still has it open.
 * ib_core destroys the context's objects and zaps its mappings itself;
 * implementing this is what lets "rdma link delete" return at once instead
 * of waiting for every such process to exit.
 */
void vrdma_disassociate_ucontext(struct ib_ucontext *ibuc)
{
}

/*
 * vmalloc_user() charges nobody: a process could pin a gigabyte of rings
 * beyond its memory cgroup's limit.  The allocator that takes both a gfp
 * and VM_USERMAP (__vmalloc_node_range()) is not exported, so the pages
 * are allocated here, charged, and handed to vmap(), which with
 * VM_MAP_PUT_PAGES frees them and their array in vfree(), as for vmalloc
 * memory.
 */
static void *vrdma_vmalloc_user(size_t size)
{
	unsigned int i, n = size >> PAGE_SHIFT;
	struct page **pages;
	void *vaddr;

	pages = kvmalloc_array(n, sizeof(*pages), VRDMA_GFP_USER);
	if (!pages)
		return NULL;
	for (i = 0; i < n; i++) {
		pages[i] = alloc_page(VRDMA_GFP_USER | __GFP_ZERO);
		if (!pages[i])
			goto err;
		cond_resched();
	}
	vaddr = vmap(pages, n, VM_MAP | VM_USERMAP | VM_MAP_PUT_PAGES,
		     PAGE_KERNEL);
	if (vaddr)
		return vaddr;
err:
	while (i--)
		__free_page(pages[i]);
	kvfree(pages);
	return NULL;
}

/**
 * vrdma_mmap_alloc() - allocate zeroed memory a process may map
 * @uc: the owning context; no other context can map it
 * @size: bytes; rounded up to whole pages
 * @offset: set to the offset to pass to mmap()
 *
 * Return: the entry, or an ERR_PTR.  Drop it with vrdma_mmap_remove().
 */
struct vrdma_mmap_entry *vrdma_mmap_alloc(struct vrdma_ucontext *uc,
					  size_t size, u64 *offset)
{
	struct vrdma_mmap_entry *entry;
	int ret;

	entry = kzalloc(sizeof(*entry), VRDMA_GFP_USER);
	if (!entry)
		return ERR_PTR(-ENOMEM);

	entry->size = PAGE_ALIGN(size);
	entry->vaddr = vrdma_vmalloc_user(entry->size);
	if (!entry->vaddr) {
		kfree(entry);
		return ERR_PTR(-ENOMEM);
	}

	ret = rdma_user_mmap_entry_insert(&uc->ibuc, &entry->rdma_entry,
					  entry->size);
	if (ret) {
		vfree(entry->vaddr);
		kfree(entry);
		return ERR_PTR(ret);
	}
	*offset = rdma_user_mmap_get_offset(&entry->rdma_entry);
	return entry;
}

/**
 * vrdma_mmap_remove() - no new mappings; free once existing ones are gone
 * @entry: from vrdma_mmap_alloc()
 */
void vrdma_mmap_remove(struct vrdma_mmap_entry *entry)
{
	rdma_user_mmap_entry_remove(&entry->rdma_entry);
}

/**
 * vrdma_mmap_free() - ib_core's last reference to an entry is gone
 * @rdma_entry: the entry
 */
void vrdma_mmap_free(struct rdma_user_mmap_entry *rdma_entry)
{
	struct vrdma_mmap_entry *entry =
		container_of(rdma_entry, struct vrdma_mmap_entry, rdma_entry);

	vfree(entry->vaddr);
	kfree(entry);
}

/**
 * vrdma_mmap() - map an entry of this context into the calling process
 * @ibuc: the context the mmap() came through
 * @vma: must cover exactly the entry
 *
 * Return: 0, -EINVAL for an offset that is not this context's or a size
 * that does not match, or the error of remap_vmalloc_range().
 */
int vrdma_mmap(struct ib_ucontext *ibuc, struct vm_area_struct *vma)
{
	struct rdma_user_mmap_entry *rdma_entry;
	struct vrdma_mmap_entry *entry;
	int ret;

	rdma_entry = rdma_user_mmap_entry_get(ibuc, vma);
	if (!rdma_entry)
		return -EINVAL;
	entry = container_of(rdma_entry, struct vrdma_mmap_entry, rdma_entry);

	if (vma->vm_end - vma->vm_start != entry->size) {
		ret = -EINVAL;
		goto out;
	}
	ret = remap_vmalloc_range(vma, entry->vaddr, 0);
out:
	rdma_user_mmap_entry_put(rdma_entry);
	return ret;
}
