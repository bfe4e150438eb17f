// SPDX-License-Identifier: GPL-2.0
/*
 * Fast-registration MRs: how kernel consumers (NVMe over Fabrics, NFS over
 * RDMA, iSER...) hand a peer a key to an I/O buffer without registering
 * memory on the fast path.
 *
 * A consumer allocates the MR once (ib_alloc_mr(): a key, an empty page
 * list of max_num_sg entries), and then, for each I/O:
 *
 *   ib_map_mr_sg()      fills the page list from a scatterlist; with
 *                       ib_core's virt DMA the "DMA addresses" are kernel
 *                       virtual addresses of directly mapped memory
 *   IB_WR_REG_MR        a send queue work request that makes the MR valid:
 *                       range (iova, length), rights and a new key byte
 *   ...                 the peer READs or WRITEs through the rkey
 *   IB_WR_LOCAL_INV     or the peer's SEND with invalidate: the key stops
 *                       working, the MR is free for the next I/O
 *
 * REG_MR and LOCAL_INV are local operations the requester executes when it
 * reaches them, in send queue order (vrdma_exec_local()), so a SEND posted
 * after a REG_MR carries an rkey that already works.  The MR's state
 * (free/valid) is checked with its key on every lookup (vrdma_mr_get()): a
 * key not yet registered, or invalidated, opens nothing.
 *
 * User PDs never hold fast-registration MRs (uverbs has no alloc_mr), so a
 * user QP that posts VRDMA_WR_REG_MR gets a local QP operation error.
 */
#include <linux/log2.h>

#include "vrdma.h"

/* Rights a REG_MR may grant: those of a user MR, without binding windows. */
#define VRDMA_FRMR_ACCESS	(IB_ACCESS_LOCAL_WRITE | \
				 IB_ACCESS_REMOTE_WRITE | \
				 IB_ACCESS_REMOTE_READ | \
				 IB_ACCESS_REMOTE_ATOMIC | \
				 IB_ACCESS_RELAXED_ORDERING)

/* The smallest page size a consumer may map with. */
#define VRDMA_FRMR_MIN_PAGE	512

/**
 * vrdma_alloc_mr() - a fast-registration MR, free, with an empty page list
 * @ibpd: the PD (a kernel consumer's)
 * @type: IB_MR_TYPE_MEM_REG only
 * @max_num_sg: entries its page list can hold
 *
 * Return: the MR, or ERR_PTR: -EINVAL for another type or more than
 * max_fast_reg_page_list_len entries, -ENOMEM.
 */
struct ib_mr *vrdma_alloc_mr(struct ib_pd *ibpd, enum ib_mr_type type,
			     u32 max_num_sg)
{
	struct vrdma_dev *vdev = to_vdev(ibpd->device);
	struct vrdma_mr *mr;
	int ret = -ENOMEM;

	if (type != IB_MR_TYPE_MEM_REG || !max_num_sg ||
	    max_num_sg > VRDMA_MAX_FAST_REG_PAGES)
		return ERR_PTR(-EINVAL);
	mr = kzalloc(sizeof(*mr), GFP_KERNEL);
	if (!mr)
		return ERR_PTR(-ENOMEM);
	mr->fr_pages = kcalloc(max_num_sg, sizeof(*mr->fr_pages), GFP_KERNEL);
	if (!mr->fr_pages)
		goto err;
	mr->pd = to_vpd(ibpd);
	mr->fast_reg = true;
	mr->state = VRDMA_MR_FREE;
	mr->fr_max = max_num_sg;
	mr->fr_page_shift = PAGE_SHIFT;
	ret = vrdma_mr_alloc_key(vdev, mr);
	if (ret)
		goto err;
	return &mr->ibmr;

err:
	kfree(mr->fr_pages);
	kfree(mr);
	return ERR_PTR(ret);
}

/* ib_sg_to_pages() callback: one page of ibmr.page_size bytes. */
static int vrdma_frmr_set_page(struct ib_mr *ibmr, u64 addr)
{
	struct vrdma_mr *mr = to_vmr(ibmr);
	void *p = (void *)(uintptr_t)addr;

	if (mr->fr_npages == mr->fr_max)
		return -ENOMEM;
	/* virt DMA: the page must be directly mapped kernel memory. */
	if (!virt_addr_valid(p) || !virt_addr_valid(p + ibmr->page_size - 1))
		return -EINVAL;
	mr->fr_pages[mr->fr_npages++] = addr;
	return 0;
}

/**
 * vrdma_map_mr_sg() - fill a fast-reg MR's page list from a scatterlist
 * @ibmr: the MR, free (the consumer's duty: it is not in use)
 * @sg: the list, mapped with ib_dma_map_sg() (kernel virtual addresses)
 * @sg_nents: entries
 * @sg_offset: byte offset into the first entry, or NULL
 *
 * ib_sg_to_pages() cuts the list into pages of ibmr->page_size bytes and
 * sets ibmr->iova and ibmr->length; the REG_MR that follows names them.
 *
 * Return: the number of entries mapped, or a negative errno.
 */
int vrdma_map_mr_sg(struct ib_mr *ibmr, struct scatterlist *sg, int sg_nents,
		    unsigned int *sg_offset)
{
	struct vrdma_mr *mr = to_vmr(ibmr);

	if (!is_power_of_2(ibmr->page_size) ||
	    ibmr->page_size < VRDMA_FRMR_MIN_PAGE)
		return -EINVAL;
	mr->fr_npages = 0;
	mr->fr_page_shift = ilog2(ibmr->page_size);
	return ib_sg_to_pages(ibmr, sg, sg_nents, sg_offset,
			      vrdma_frmr_set_page);
}

/**
 * vrdma_frmr_find() - the fast-reg MR at the index of a key, in any state
 * @vdev: the device
 * @key: an lkey or rkey (untrusted); its key byte is not compared
 *
 * Return: the MR, referenced (vrdma_mr_put()), or NULL if the index names
 * no fast-reg MR.
 */
struct vrdma_mr *vrdma_frmr_find(struct vrdma_dev *vdev, u32 key)
{
	struct vrdma_mr *mr;

	if (VRDMA_KEY_IS_MW(key))
		return NULL;
	rcu_read_lock();
	mr = xa_load(&vdev->mr_xa, VRDMA_KEY_INDEX(key));
	if (mr && (!mr->fast_reg || !refcount_inc_not_zero(&mr->refs)))
		mr = NULL;
	rcu_read_unlock();
	return mr;
}

/**
 * vrdma_frmr_reg() - execute a REG_MR work request
 * @qp: the QP it was posted to, engines owned, mutex held
 * @wqe: the kernel's copy of the WQE
 *
 * The MR named by the index of reg.mr_lkey must be a free fast-reg MR of
 * the QP's PD; the new key must keep that index, the rights be ones we
 * implement (remote write or atomic only with local write), and the range
 * lie inside the mapped page list, starting at the offset of reg.iova in
 * its page (ib_sg_to_pages() sets iova to the first byte's address).  A
 * failed REG_MR changes nothing.
 *
 * Return: IB_WC_SUCCESS or IB_WC_LOC_QP_OP_ERR.
 */
u8 vrdma_frmr_reg(struct vrdma_qp *qp, const struct vrdma_send_wqe *wqe)
{
	u32 key = wqe->reg.key;
	int access = wqe->reg.access;
	u64 iova = wqe->reg.iova, length = wqe->reg.length, end;
	u8 status = IB_WC_LOC_QP_OP_ERR;
	struct vrdma_mr *mr;
	u32 offset;

	vrdma_qp_assert_locked(qp);

	/* Never from user space: user PDs have no fast-reg MRs. */
	if (qp->ibqp.uobject)
		return IB_WC_LOC_QP_OP_ERR;
	if (VRDMA_KEY_INDEX(key) != VRDMA_KEY_INDEX(wqe->reg.mr_lkey) ||
	    (access & ~VRDMA_FRMR_ACCESS) ||
	    ((access & (IB_ACCESS_REMOTE_WRITE | IB_ACCESS_REMOTE_ATOMIC)) &&
	     !(access & IB_ACCESS_LOCAL_WRITE)))
		return IB_WC_LOC_QP_OP_ERR;
	mr = vrdma_frmr_find(qp->vdev, key);
	if (!mr)
		return IB_WC_LOC_QP_OP_ERR;
	if (mr->pd != qp->pd || READ_ONCE(mr->state) != VRDMA_MR_FREE)
		goto out;
	offset = iova & (BIT_ULL(mr->fr_page_shift) - 1);
	if (check_add_overflow(iova, length, &end) ||
	    offset + length > (u64)mr->fr_npages << mr->fr_page_shift)
		goto out;

	mr->iova = iova;
	mr->length = length;
	mr->page_offset = offset;
	WRITE_ONCE(mr->access, access);
	WRITE_ONCE(mr->key, key);
	/* Pairs with vrdma_mr_get(): whoever sees it valid sees the rest. */
	smp_store_release(&mr->state, VRDMA_MR_VALID);
	status = IB_WC_SUCCESS;
out:
	vrdma_mr_put(mr);
	return status;
}

/**
 * vrdma_frmr_invalidate() - invalidate a fast-reg MR by its key
 * @qp: the QP it came through, engines owned, mutex held
 * @key: the MR's key
 *
 * LOCAL_INV on a QP of its PD, or a SEND with invalidate arriving on one
 * (vrdma_invalidate_key()).  Invalidating a free MR whose key is still
 * this one is harmless and allowed.  A request already checked goes on
 * with its packet, as with windows.
 *
 * Return: 0, or -EINVAL if @key names no fast-reg MR of @qp's PD.
 */
int vrdma_frmr_invalidate(struct vrdma_qp *qp, u32 key)
{
	struct vrdma_mr *mr = vrdma_frmr_find(qp->vdev, key);
	int ret = -EINVAL;

	if (!mr)
		return -EINVAL;
	if (READ_ONCE(mr->key) == key && mr->pd == qp->pd) {
		WRITE_ONCE(mr->state, VRDMA_MR_FREE);
		ret = 0;
	}
	vrdma_mr_put(mr);
	return ret;
}

/**
 * vrdma_frmr_ptr() - translate an address of a valid fast-reg MR
 * @mr: the MR, range checked with vrdma_mr_check()
 * @iova: the address
 * @chunk: set to the bytes from there to the end of its page
 *
 * Each page of the list is directly mapped kernel memory (checked at
 * map_mr_sg), so no kmap is needed.  The page index is checked against the
 * list once more: a REG_MR on another QP may be changing the range.
 *
 * Return: the kernel pointer, or NULL beyond the page list.
 */
void *vrdma_frmr_ptr(struct vrdma_mr *mr, u64 iova, u32 *chunk)
{
	u32 shift = READ_ONCE(mr->fr_page_shift);
	u64 off = iova - READ_ONCE(mr->iova) + READ_ONCE(mr->page_offset);
	u64 idx = off >> shift;
	u64 in_page = off & (BIT_ULL(shift) - 1);

	if (idx >= min(READ_ONCE(mr->fr_npages), mr->fr_max))
		return NULL;
	*chunk = BIT_ULL(shift) - in_page;
	return (void *)(uintptr_t)(READ_ONCE(mr->fr_pages[idx]) + in_page);
}
