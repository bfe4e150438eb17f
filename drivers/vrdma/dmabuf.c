// SPDX-License-Identifier: GPL-2.0
/*
 * MRs on dma-bufs: ibv_reg_dmabuf_mr().
 *
 * A dma-buf is memory another driver exports (a GPU's buffer, a udmabuf, a
 * DMA heap) as a file descriptor.  A NIC maps it for DMA; vrdma's "DMA" is
 * the CPU, so it asks the exporter for the importer's CPU mapping,
 * dma_buf_vmap(), which keeps the buffer in place until dma_buf_vunmap().
 * The pages behind that mapping become the MR's page table, and from there
 * on the MR is like any other: the copy paths kmap its pages.
 *
 * Memory an exporter can only map as I/O memory (a GPU's VRAM behind a BAR)
 * has no pages and is refused, as is a buffer whose exporter offers no CPU
 * mapping at all.  A dma-buf opened read-only gives no rights
 * that write.
 */
#include <linux/dma-buf.h>
#include <linux/file.h>
#include <linux/mm.h>
#include <linux/vmalloc.h>

#include "vrdma.h"

MODULE_IMPORT_NS(DMA_BUF);

/**
 * struct vrdma_dmabuf - what an MR holds of its dma-buf
 * @dmabuf: the buffer, referenced
 * @map: its CPU mapping, which pins it while the MR exists
 */
struct vrdma_dmabuf {
	struct dma_buf *dmabuf;
	struct iosys_map map;
};

/* The page behind @vaddr of a vmap'ed or directly mapped buffer, or NULL. */
static struct page *vrdma_dmabuf_page(void *vaddr)
{
	if (is_vmalloc_addr(vaddr))
		return vmalloc_to_page(vaddr);
	if (virt_addr_valid(vaddr))
		return virt_to_page(vaddr);
	return NULL;
}

/* May a buffer opened with @file's mode be given @access? */
static int vrdma_dmabuf_access_ok(struct vrdma_dmabuf *db, int access)
{
	if (ib_access_writable(access) &&
	    !(db->dmabuf->file->f_mode & FMODE_WRITE))
		return -EACCES;
	return 0;
}

/**
 * vrdma_dmabuf_check_access() - may a dma-buf MR be given new rights?
 * @mr: the MR (rereg with IB_MR_REREG_ACCESS)
 * @access: the new rights
 *
 * Return: 0 (also for an MR that is not on a dma-buf), -EACCES for rights
 * that write into a dma-buf opened read-only.
 */
int vrdma_dmabuf_check_access(struct vrdma_mr *mr, int access)
{
	return mr->dmabuf ? vrdma_dmabuf_access_ok(mr->dmabuf, access) : 0;
}

/* Map the bytes [@offset, @offset + mr->length) of @db into @mr's pages. */
static int vrdma_dmabuf_map_pages(struct vrdma_mr *mr, struct vrdma_dmabuf *db,
				  u64 offset)
{
	unsigned long first = offset >> PAGE_SHIFT, i;

	mr->page_offset = offset_in_page(offset);
	mr->npages = PAGE_ALIGN(mr->page_offset + mr->length) >> PAGE_SHIFT;
	mr->pages = kvmalloc_array(mr->npages, sizeof(*mr->pages),
				   VRDMA_GFP_USER);
	if (!mr->pages)
		return -ENOMEM;
	for (i = 0; i < mr->npages; i++) {
		mr->pages[i] = vrdma_dmabuf_page(db->map.vaddr +
						 (first + i) * PAGE_SIZE);
		if (!mr->pages[i])
			return -EOPNOTSUPP;
	}
	return 0;
}

/**
 * vrdma_reg_user_mr_dmabuf() - register part of a dma-buf
 * @ibpd: the PD the MR will belong to
 * @offset: first byte of the buffer the MR covers
 * @length: bytes
 * @iova: the address peers and WQEs use for @offset (ib_core has checked
 *	that it lies at the same offset within a page)
 * @fd: the dma-buf's file descriptor, in the calling process
 * @access: IB_ACCESS_* flags (ON_DEMAND is not for dma-bufs)
 * @attrs: the request (6.1: its udata, no driver data)
 *
 * Return: the MR, or ERR_PTR: -EINVAL for a zero, overflowing or too large
 * range or one past the end of the buffer, -EBADF or -EINVAL for a @fd
 * that is no dma-buf, -EACCES for rights that write into a buffer opened
 * read-only, -EOPNOTSUPP for unknown rights, for an exporter that offers
 * no CPU mapping and for memory that has no pages (I/O memory), -ENOMEM
 * past max_mr, or the exporter's vmap error.
 */
struct ib_mr *vrdma_reg_user_mr_dmabuf(struct ib_pd *ibpd, u64 offset,
				       u64 length, u64 iova, int fd,
				       int access, VRDMA_DMABUF_ATTRS *attrs)
{
	struct vrdma_dev *vdev = to_vdev(ibpd->device);
	struct vrdma_dmabuf *db;
	struct vrdma_mr *mr;
	u64 end, iova_end;
	int ret;

	ret = vrdma_udata_check(ibpd->device, vrdma_dmabuf_udata(attrs),
				__func__);
	if (ret)
		return ERR_PTR(ret);
	if (!length || length > VRDMA_MAX_MR_SIZE ||
	    check_add_overflow(offset, length, &end) ||
	    check_add_overflow(iova, length, &iova_end))
		return ERR_PTR(-EINVAL);
	if (access & IB_ACCESS_ON_DEMAND)
		return ERR_PTR(-EOPNOTSUPP);
	ret = vrdma_mr_access_ok(access);
	if (ret)
		return ERR_PTR(ret);

	mr = kzalloc(sizeof(*mr), GFP_KERNEL);
	db = kzalloc(sizeof(*db), GFP_KERNEL);
	if (!mr || !db) {
		ret = -ENOMEM;
		goto err_free;
	}
	db->dmabuf = dma_buf_get(fd);
	if (IS_ERR(db->dmabuf)) {
		ret = PTR_ERR(db->dmabuf);
		goto err_free;
	}
	ret = vrdma_dmabuf_access_ok(db, access);
	if (ret)
		goto err_put;
	if (end > db->dmabuf->size) {
		ibdev_dbg(ibpd->device,
			  "reg_dmabuf_mr: bytes %llu..%llu of a %zu-byte buffer\n",
			  offset, end, db->dmabuf->size);
		ret = -EINVAL;
		goto err_put;
	}
	/* An exporter without a CPU mapping (udmabuf before 6.2): none. */
	if (!db->dmabuf->ops->vmap) {
		ibdev_dbg(ibpd->device, "reg_dmabuf_mr: the exporter has no vmap\n");
		ret = -EOPNOTSUPP;
		goto err_put;
	}
	ret = vrdma_dma_buf_vmap(db->dmabuf, &db->map);
	if (ret)
		goto err_put;
	if (db->map.is_iomem) {
		ibdev_dbg(ibpd->device, "reg_dmabuf_mr: I/O memory\n");
		ret = -EOPNOTSUPP;
		goto err_vunmap;
	}

	mr->pd = to_vpd(ibpd);
	mr->iova = iova;
	mr->length = length;
	mr->access = access;
	mr->ibmr.iova = iova;
	mr->ibmr.length = length;
	mr->dmabuf = db;
	ret = vrdma_dmabuf_map_pages(mr, db, offset);
	if (ret)
		goto err_vunmap;
	ret = vrdma_mr_alloc_key(vdev, mr);
	if (ret)
		goto err_vunmap;
	return &mr->ibmr;

err_vunmap:
	vrdma_dma_buf_vunmap(db->dmabuf, &db->map);
err_put:
	dma_buf_put(db->dmabuf);
err_free:
	kvfree(mr ? mr->pages : NULL);
	kfree(db);
	kfree(mr);
	return ERR_PTR(ret);
}

/**
 * vrdma_dmabuf_fini() - let an MR's dma-buf go
 * @mr: the MR, which nobody uses any more (dereg has waited)
 */
void vrdma_dmabuf_fini(struct vrdma_mr *mr)
{
	struct vrdma_dmabuf *db = mr->dmabuf;

	if (!db)
		return;
	vrdma_dma_buf_vunmap(db->dmabuf, &db->map);
	dma_buf_put(db->dmabuf);
	kfree(db);
	mr->dmabuf = NULL;
}
