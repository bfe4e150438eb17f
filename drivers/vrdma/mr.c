// SPDX-License-Identifier: GPL-2.0
/*
 * Memory regions, and every access the driver makes to registered memory.
 *
 * Registering pins the pages (ib_umem_get, which charges them to the
 * process's RLIMIT_MEMLOCK) and builds a page table so an address inside the
 * region maps to its page in O(1).  The MR is named by a key: lkey for the
 * local side, rkey for a peer; in vrdma both are the same 32-bit value,
 * an index into the device's MR table (24 bits) and a key byte that changes
 * each time the index is reused, so a stale key never reaches a new MR.
 *
 * A key only opens memory if all of these hold, checked on every access:
 * the MR exists, the key byte matches, the MR belongs to the QP's PD, the
 * MR grants the access (LOCAL_WRITE, REMOTE_READ, REMOTE_WRITE,
 * REMOTE_ATOMIC), and the whole range lies inside the region.  An rkey may
 * also name a memory window (mw.c), which opens part of an MR with rights
 * of its own: vrdma_rkey_get() resolves both kinds, and
 * vrdma_invalidate_key() invalidates an MW's or a fast-reg MR's key.
 *
 * Reregistering (ibv_rereg_mr) changes the PD or the rights in place,
 * keeping the keys; a new translation (address range) is a new MR with new
 * keys, which ib_core puts in the place of the old one before it
 * deregisters that.  So are rights to write into a region whose pages were
 * pinned for reading only: they are pinned again, for writing.
 *
 * An MR registered with IB_ACCESS_ON_DEMAND pins nothing: its pages are
 * looked up, and faulted in, as they are used (odp.c).
 *
 * Kernel consumers also have fast-registration MRs (frmr.c): their key
 * opens memory only between a REG_MR work request and its invalidation,
 * so every lookup checks the MR's state along with its key.
 */
#include <linux/highmem.h>
#include <linux/overflow.h>
#include <linux/vmalloc.h>
#include <rdma/ib_umem.h>

#include "vrdma.h"
#include "trace.h"

/* Access flags we implement (and IB_ACCESS_ON_DEMAND: vrdma_user_access_ok()). */
#define VRDMA_MR_ACCESS	(IB_ACCESS_LOCAL_WRITE | IB_ACCESS_REMOTE_WRITE | \
			 IB_ACCESS_REMOTE_READ | IB_ACCESS_REMOTE_ATOMIC | \
			 IB_ACCESS_MW_BIND | IB_ACCESS_RELAXED_ORDERING | \
			 VRDMA_ACCESS_FLUSH_ALLOWED)

/**
 * vrdma_mr_alloc_key() - give @mr a table index and a fresh key byte
 * @vdev: the device
 * @mr: the new MR, complete but for its keys; published here
 *
 * Return: 0, -ENOMEM past max_mr.
 */
int vrdma_mr_alloc_key(struct vrdma_dev *vdev, struct vrdma_mr *mr)
{
	u32 index;
	u8 byte;
	int ret;

	ret = xa_alloc_cyclic(&vdev->mr_xa, &index, NULL,
			      XA_LIMIT(1, vdev->attr.max_mr), &vdev->mr_next,
			      GFP_KERNEL);
	if (ret < 0)
		return ret == -EBUSY ? -ENOMEM : ret;

	byte = ++vdev->mr_key_byte[index];
	mr->ibmr.lkey = VRDMA_KEY(index, byte);
	mr->ibmr.rkey = mr->ibmr.lkey;
	mr->key = mr->ibmr.lkey;
	if (!mr->fast_reg)
		mr->state = VRDMA_MR_VALID;
	refcount_set(&mr->refs, 1);
	init_completion(&mr->done);
	/* Publish only now: a lookup must see a complete MR. */
	xa_store(&vdev->mr_xa, index, mr, GFP_KERNEL);
	return 0;
}

/* Build the page table of a pinned user region. */
static int vrdma_mr_map_umem(struct vrdma_mr *mr)
{
	struct sg_page_iter iter;
	unsigned long i = 0;

	mr->npages = ib_umem_num_pages(mr->umem);
	mr->pages = kvmalloc_array(mr->npages, sizeof(*mr->pages),
				   VRDMA_GFP_USER);
	if (!mr->pages)
		return -ENOMEM;

	for_each_sgtable_page(&mr->umem->sgt_append.sgt, &iter, 0) {
		if (WARN_ON_ONCE(i >= mr->npages))
			return -EFAULT;
		mr->pages[i++] = sg_page_iter_page(&iter);
	}
	if (i != mr->npages)
		return -EFAULT;
	mr->page_offset = ib_umem_offset(mr->umem);
	return 0;
}

/* Rights a user or DM MR may have: -EOPNOTSUPP, -EINVAL as reg_user_mr. */
int vrdma_mr_access_ok(int access)
{
	if (access & ~VRDMA_MR_ACCESS)
		return -EOPNOTSUPP;
	if ((access & (IB_ACCESS_REMOTE_WRITE | IB_ACCESS_REMOTE_ATOMIC)) &&
	    !(access & IB_ACCESS_LOCAL_WRITE))
		return -EINVAL;
	return 0;
}

/* As vrdma_mr_access_ok(), for a process's MR, which may be ODP. */
static int vrdma_user_access_ok(int access)
{
	/* Huge pages are a hint for ODP's page table; ours has one size. */
	if (access & IB_ACCESS_ON_DEMAND)
		access &= ~(IB_ACCESS_ON_DEMAND | IB_ACCESS_HUGETLB);
	return vrdma_mr_access_ok(access);
}

/* Pin, map and key a user MR: reg_user_mr, and rereg with a translation. */
static struct vrdma_mr *vrdma_mr_create_user(struct ib_pd *ibpd, u64 start,
					     u64 length, u64 iova, int access)
{
	struct vrdma_dev *vdev = to_vdev(ibpd->device);
	bool odp = access & IB_ACCESS_ON_DEMAND;
	struct vrdma_mr *mr;
	u64 end;
	int ret;

	/* An implicit ODP MR: the whole address space (odp.c). */
	if (!(odp && !start && length == U64_MAX) &&
	    (!length || length > VRDMA_MAX_MR_SIZE ||
	     check_add_overflow(start, length, &end) ||
	     check_add_overflow(iova, length, &end)))
		return ERR_PTR(-EINVAL);
	ret = vrdma_user_access_ok(access);
	if (ret)
		return ERR_PTR(ret);

	mr = kzalloc(sizeof(*mr), GFP_KERNEL);
	if (!mr)
		return ERR_PTR(-ENOMEM);

	mr->pd = to_vpd(ibpd);
	mr->iova = iova;
	mr->length = length;
	mr->access = access;
	mr->ibmr.iova = iova;
	mr->ibmr.length = length;
	if (odp) {
		ret = vrdma_odp_init(mr, start);
		if (ret)
			goto err_free;
		/* Before the key opens it: see vrdma_pd_has_odp(). */
		WRITE_ONCE(mr->pd->odp, true);
	} else {
		mr->umem = ib_umem_get(ibpd->device, start, length, access);
		if (IS_ERR(mr->umem)) {
			ret = PTR_ERR(mr->umem);
			mr->umem = NULL;
			goto err_free;
		}
		ret = vrdma_mr_map_umem(mr);
		if (ret)
			goto err_release;
	}

	ret = vrdma_mr_alloc_key(vdev, mr);
	if (ret)
		goto err_release;
	return mr;

err_release:
	kvfree(mr->pages);
	if (mr->umem)
		ib_umem_release(mr->umem);
	vrdma_odp_fini(mr);
err_free:
	kfree(mr);
	return ERR_PTR(ret);
}

/**
 * vrdma_reg_user_mr() - register process memory
 * @ibpd: the PD the MR will belong to
 * @start: process virtual address of the buffer
 * @length: bytes
 * @iova: the address peers and WQEs use for @start (usually @start)
 * @access: IB_ACCESS_* flags
 * @udata: the request, struct vrdma_uverbs_req (vrdma_udata_check())
 *
 * Return: the MR, or ERR_PTR: -EINVAL for a zero, overflowing or too large
 * range or remote write/atomic without local write, -EOPNOTSUPP for access
 * flags we do not implement, -ENOMEM past max_mr or when pinning is refused
 * by RLIMIT_MEMLOCK, or the error of ib_umem_get().
 */
struct ib_mr *vrdma_reg_user_mr(struct ib_pd *ibpd, u64 start, u64 length,
				u64 iova, int access, struct ib_udata *udata)
{
	struct vrdma_mr *mr;
	int ret;

	ret = vrdma_udata_check(ibpd->device, udata, __func__);
	if (ret)
		return ERR_PTR(ret);
	mr = vrdma_mr_create_user(ibpd, start, length, iova, access);
	return IS_ERR(mr) ? ERR_CAST(mr) : &mr->ibmr;
}

/**
 * vrdma_rereg_user_mr() - change an MR's translation, PD or rights
 * @ibmr: the MR
 * @flags: IB_MR_REREG_TRANS, IB_MR_REREG_PD, IB_MR_REREG_ACCESS
 * @start: with IB_MR_REREG_TRANS: the new process address
 * @length: with IB_MR_REREG_TRANS: the new length
 * @iova: with IB_MR_REREG_TRANS: the new I/O virtual address
 * @access: with IB_MR_REREG_ACCESS: the new rights
 * @ibpd: the PD it will belong to (its own without IB_MR_REREG_PD)
 * @udata: the request, struct vrdma_uverbs_req (vrdma_udata_check())
 *
 * A new PD or new rights take effect in place, and the keys stay: a
 * request checked before goes on with what it was checked against.  A new
 * translation is a new MR with new keys (the old one's pages may be in use
 * right now); ib_core swaps it in and deregisters the old one, which waits
 * for its users as dereg always does.  Rights that write
 * (ib_access_writable()) given to an MR whose pages were pinned for reading
 * are a new translation onto the same range: the pages are pinned again
 * for writing, which breaks copy-on-write sharing, and is refused for
 * memory the process may not write (a read-only file mapping).  Writing
 * into pages pinned for reading would write into the page cache.  An MR
 * with memory windows bound to it keeps everything.
 *
 * Return: NULL (changed in place), the new MR, or ERR_PTR: -EBUSY while
 * windows are bound, -EOPNOTSUPP for unknown flags or rights and for a new
 * translation of a dma-buf MR, -EACCES for rights that write into a dma-buf
 * opened read-only, -EINVAL as reg_user_mr, and for a DMA MR, or the error
 * of ib_umem_get() (-EFAULT for write rights to memory that may not be
 * written).
 */
struct ib_mr *vrdma_rereg_user_mr(struct ib_mr *ibmr, int flags, u64 start,
				  u64 length, u64 iova, int access,
				  struct ib_pd *ibpd, struct ib_udata *udata)
{
	struct vrdma_dev *vdev = to_vdev(ibmr->device);
	struct vrdma_mr *mr = to_vmr(ibmr), *new;
	int ret;

	ret = vrdma_udata_check(ibmr->device, udata, __func__);
	if (ret)
		return ERR_PTR(ret);
	if (flags & ~(IB_MR_REREG_TRANS | IB_MR_REREG_PD | IB_MR_REREG_ACCESS))
		return ERR_PTR(-EOPNOTSUPP);
	if (mr->dma)
		return ERR_PTR(-EINVAL);
	if (!(flags & IB_MR_REREG_ACCESS))
		access = mr->access;
	ret = vrdma_user_access_ok(access);
	if (!ret)
		ret = vrdma_dmabuf_check_access(mr, access);
	if (ret)
		return ERR_PTR(ret);
	/* A dma-buf MR's memory is the buffer's: no other translation. */
	if (mr->dmabuf && (flags & IB_MR_REREG_TRANS ||
			   access & IB_ACCESS_ON_DEMAND))
		return ERR_PTR(-EOPNOTSUPP);
	if (!(flags & IB_MR_REREG_TRANS) && mr->umem &&
	    ((ib_access_writable(access) && !mr->umem->writable) ||
	     (access & IB_ACCESS_ON_DEMAND))) {
		flags |= IB_MR_REREG_TRANS;
		start = mr->umem->address;
		length = mr->umem->length;
		iova = mr->iova;
	}
	/* Pinned from now on: a new MR on the same range. */
	if (!(flags & IB_MR_REREG_TRANS) && mr->odp &&
	    !(access & IB_ACCESS_ON_DEMAND)) {
		flags |= IB_MR_REREG_TRANS;
		start = vrdma_odp_user_start(mr);
		length = mr->length;
		iova = mr->iova;
	}

	if (flags & IB_MR_REREG_TRANS) {
		/* No window may be bound, nor get bound from now on. */
		if (atomic_cmpxchg(&mr->num_mw, 0, -1))
			return ERR_PTR(-EBUSY);
		new = vrdma_mr_create_user(ibpd, start, length, iova, access);
		if (IS_ERR(new)) {
			atomic_set(&mr->num_mw, 0);
			return ERR_CAST(new);
		}
		/* The old MR stays unbindable until its dereg, next. */
		return &new->ibmr;
	}
	/*
	 * A bind checks the PD and rights and takes the MR under this lock
	 * (vrdma_mw_bind()): no change slips between its check and its take.
	 */
	xa_lock_bh(&vdev->mw_xa);
	if (atomic_read(&mr->num_mw)) {
		xa_unlock_bh(&vdev->mw_xa);
		return ERR_PTR(-EBUSY);
	}
	/* The new PD's QPs leave the softirq before the MR is theirs. */
	if (mr->odp)
		WRITE_ONCE(to_vpd(ibpd)->odp, true);
	WRITE_ONCE(mr->pd, to_vpd(ibpd));
	WRITE_ONCE(mr->access, access);
	xa_unlock_bh(&vdev->mw_xa);
	return NULL;
}

/**
 * vrdma_get_dma_mr() - an MR for a kernel consumer covering all memory
 * @ibpd: the PD
 * @access: IB_ACCESS_* flags
 *
 * vrdma's DMA addresses are kernel virtual addresses (ib_core's virt DMA),
 * so this MR translates nothing; each access still checks the address is
 * directly mapped kernel memory.
 *
 * Return: the MR or an ERR_PTR.
 */
struct ib_mr *vrdma_get_dma_mr(struct ib_pd *ibpd, int access)
{
	struct vrdma_dev *vdev = to_vdev(ibpd->device);
	struct vrdma_mr *mr;
	int ret;

	if (access & ~VRDMA_MR_ACCESS)
		return ERR_PTR(-EOPNOTSUPP);
	mr = kzalloc(sizeof(*mr), GFP_KERNEL);
	if (!mr)
		return ERR_PTR(-ENOMEM);
	mr->pd = to_vpd(ibpd);
	mr->dma = true;
	mr->access = access;
	mr->length = U64_MAX;
	ret = vrdma_mr_alloc_key(vdev, mr);
	if (ret) {
		kfree(mr);
		return ERR_PTR(ret);
	}
	return &mr->ibmr;
}

/**
 * vrdma_dereg_mr() - destroy an MR once nobody is using it
 * @ibmr: the MR
 * @udata: no driver data
 *
 * The key stops working at once; a packet or WQE that is using the memory
 * right now finishes first, and only then are the pages unpinned.  An MR
 * with memory windows bound to it stays (as in rxe): deallocate or
 * invalidate them first.
 *
 * Return: 0, or -EBUSY while memory windows are bound to it.
 */
int vrdma_dereg_mr(struct ib_mr *ibmr, struct ib_udata *udata)
{
	struct vrdma_dev *vdev = to_vdev(ibmr->device);
	struct vrdma_mr *mr = to_vmr(ibmr);

	/* -1: no bind takes it from now on (or a rereg took it already). */
	if (atomic_cmpxchg(&mr->num_mw, 0, -1) > 0)
		return -EBUSY;
	/* A REG_MR may have moved the key byte on: start after it. */
	vdev->mr_key_byte[VRDMA_KEY_INDEX(mr->key)] = VRDMA_KEY_BYTE(mr->key);
	xa_erase(&vdev->mr_xa, VRDMA_KEY_INDEX(mr->ibmr.lkey));
	vrdma_mr_put(mr);
	wait_for_completion(&mr->done);

	kvfree(mr->pages);
	kfree(mr->fr_pages);
	if (mr->umem)
		ib_umem_release(mr->umem);
	vrdma_odp_fini(mr);
	vrdma_dmabuf_fini(mr);
	kfree_rcu(mr, rcu);
	return 0;
}

/**
 * vrdma_mr_get() - look a key up
 * @vdev: the device
 * @key: an lkey or rkey, as received (untrusted)
 *
 * Context: any.
 * Return: the MR with a reference held (vrdma_mr_put()), or NULL if no
 * live, valid MR has exactly this key.  Access rights are not checked here.
 */
struct vrdma_mr *vrdma_mr_get(struct vrdma_dev *vdev, u32 key)
{
	struct vrdma_mr *mr;

	rcu_read_lock();
	mr = xa_load(&vdev->mr_xa, VRDMA_KEY_INDEX(key));
	/* Pairs with REG_MR's store-release: the key and range are set. */
	if (mr && (smp_load_acquire(&mr->state) != VRDMA_MR_VALID ||
		   READ_ONCE(mr->key) != key ||
		   !refcount_inc_not_zero(&mr->refs)))
		mr = NULL;
	rcu_read_unlock();
	return mr;
}

void vrdma_mr_put(struct vrdma_mr *mr)
{
	if (refcount_dec_and_test(&mr->refs))
		complete(&mr->done);
}

/**
 * vrdma_mr_check() - may @length bytes at @iova be accessed this way?
 * @mr: from vrdma_mr_get()
 * @pd: the PD of the QP asking
 * @key: the key used (lkey or rkey)
 * @iova: start address
 * @length: bytes; 0 checks only the rights
 * @access: IB_ACCESS_* rights needed (0 for a local read)
 *
 * Return: 0, -EACCES for a wrong PD or missing rights, -ERANGE for a range
 * outside the region.
 */
int vrdma_mr_check(struct vrdma_mr *mr, struct vrdma_pd *pd, u32 key,
		   u64 iova, u64 length, int access)
{
	u64 end;

	/* rereg may change both in place: each is read once. */
	if (READ_ONCE(mr->pd) != pd ||
	    (READ_ONCE(mr->access) & access) != access)
		return -EACCES;
	if (mr->dma || !length)
		return 0;
	if (iova < mr->iova || check_add_overflow(iova, length, &end) ||
	    end > mr->iova + mr->length)
		return -ERANGE;
	return 0;
}

/**
 * vrdma_rkey_get() - the memory an rkey of a request opens
 * @qp: the responder's QP, engines owned
 * @rkey: from the packet (untrusted): an MR's or a memory window's
 * @va: first address
 * @length: bytes; 0 checks the rights only
 * @access: IB_ACCESS_REMOTE_* (or VRDMA_ACCESS_FLUSH_*) rights needed
 * @mrp: set to the MR whose memory @va is, referenced (vrdma_mr_put())
 *
 * An MR's rkey opens its region if the MR is in @qp's PD and grants
 * @access; a window's rkey opens the window (vrdma_mw_rkey_get()).  Either
 * way the caller then reaches @va through the MR.
 *
 * Return: 0, -EACCES (no such key, another PD or QP, missing rights) or
 * -ERANGE (not inside the region or window).
 */
int vrdma_rkey_get(struct vrdma_qp *qp, u32 rkey, u64 va, u64 length,
		   int access, struct vrdma_mr **mrp)
{
	struct vrdma_mr *mr;
	int ret;

	vrdma_qp_assert_owned(qp);

	if (VRDMA_KEY_IS_MW(rkey))
		return vrdma_mw_rkey_get(qp, rkey, va, length, access, mrp);
	mr = vrdma_mr_get(qp->vdev, rkey);
	if (!mr)
		return -EACCES;
	ret = vrdma_mr_check(mr, qp->pd, rkey, va, length, access);
	trace_vrdma_key_check(mr, rkey, va, length, access, ret);
	if (ret) {
		vrdma_mr_put(mr);
		return ret;
	}
	*mrp = mr;
	return 0;
}

/**
 * vrdma_invalidate_key() - LOCAL_INV, or the IETH of a SEND with invalidate
 * @qp: the QP it came through, engines owned, mutex held
 * @key: a memory window's rkey or a fast-reg MR's key
 * @remote: from the peer's SEND with invalidate
 *
 * Return: 0, or -EINVAL if @key names nothing @qp may invalidate.
 */
int vrdma_invalidate_key(struct vrdma_qp *qp, u32 key, bool remote)
{
	vrdma_qp_assert_locked(qp);

	if (VRDMA_KEY_IS_MW(key))
		return vrdma_mw_invalidate(qp, key, remote);
	return vrdma_frmr_invalidate(qp, key);
}

/*
 * Map an address of the region to a kernel pointer, valid for up to *chunk
 * bytes (to the end of its page).  The range has been checked.
 */
static struct page *vrdma_mr_page(struct vrdma_mr *mr, u64 iova,
				  unsigned int *poff)
{
	u64 off = iova - mr->iova + mr->page_offset;

	*poff = offset_in_page(off);
	return mr->pages[off >> PAGE_SHIFT];
}

/* A DMA MR's address must be directly mapped kernel memory. */
static void *vrdma_mr_dma_ptr(u64 iova, u32 length)
{
	void *p = (void *)(uintptr_t)iova;

	if (!virt_addr_valid(p) || !virt_addr_valid(p + length - 1))
		return NULL;
	return p;
}

struct vrdma_odp_copy {
	void *buf;
	bool to_mr;
};

static int vrdma_odp_copy_fn(void *kaddr, u32 len, u32 done, void *ctx)
{
	struct vrdma_odp_copy *c = ctx;

	if (c->to_mr)
		vrdma_copy(kaddr, c->buf + done, len);
	else
		vrdma_copy(c->buf + done, kaddr, len);
	return 0;
}

/**
 * vrdma_mr_copy() - copy between a checked MR range and a kernel buffer
 * @mr: the MR, range checked with vrdma_mr_check()
 * @iova: start address in the region
 * @buf: kernel buffer
 * @length: bytes
 * @to_mr: copy from @buf into the MR (else from the MR into @buf)
 *
 * Return: 0, or -EFAULT for a DMA MR address that is not kernel memory
 * or a fast-reg MR address beyond its page list; for an ODP MR, as
 * vrdma_odp_access().
 */
int vrdma_mr_copy(struct vrdma_mr *mr, u64 iova, void *buf, u32 length,
		  bool to_mr)
{
	unsigned int poff, chunk;
	struct page *page;
	void *kaddr;

	if (mr->odp) {
		struct vrdma_odp_copy c = { .buf = buf, .to_mr = to_mr };

		return vrdma_odp_access(mr, iova, length, to_mr,
					vrdma_odp_copy_fn, &c);
	}
	if (mr->dma) {
		kaddr = vrdma_mr_dma_ptr(iova, length);
		if (!kaddr)
			return -EFAULT;
		if (to_mr)
			vrdma_copy(kaddr, buf, length);
		else
			vrdma_copy(buf, kaddr, length);
		return 0;
	}
	if (mr->fast_reg) {
		for (; length; iova += chunk, buf += chunk, length -= chunk) {
			kaddr = vrdma_frmr_ptr(mr, iova, &chunk);
			if (!kaddr)
				return -EFAULT;
			chunk = min(chunk, length);
			if (to_mr)
				vrdma_copy(kaddr, buf, chunk);
			else
				vrdma_copy(buf, kaddr, chunk);
		}
		return 0;
	}

	while (length) {
		page = vrdma_mr_page(mr, iova, &poff);
		chunk = min_t(u32, length, PAGE_SIZE - poff);
		kaddr = kmap_local_page(page);
		if (to_mr)
			vrdma_copy(kaddr + poff, buf, chunk);
		else
			vrdma_copy(buf, kaddr + poff, chunk);
		kunmap_local(kaddr);
		iova += chunk;
		buf += chunk;
		length -= chunk;
	}
	return 0;
}

/**
 * vrdma_mr_map() - map a piece of a checked MR range for the CPU
 * @mr: the MR, range checked with vrdma_mr_check()
 * @iova: start address in the region
 * @length: bytes wanted
 * @chunk: set to the bytes the pointer is valid for, at most @length (to
 *	the end of a page, or of a fast-reg MR's page)
 *
 * The loopback path (loopback.c) copies from one MR to another through two of
 * these at once.  Undo with vrdma_mr_unmap(), in reverse order.
 *
 * Return: the kernel address, or NULL for a DMA MR address that is not
 * kernel memory, a fast-reg MR address beyond its page list, or an ODP
 * MR (its pages may go at any time: the loopback path leaves them alone).
 */
void *vrdma_mr_map(struct vrdma_mr *mr, u64 iova, u32 length, u32 *chunk)
{
	unsigned int poff;
	void *kaddr;

	if (mr->odp)
		return NULL;
	if (mr->dma) {
		*chunk = length;
		return vrdma_mr_dma_ptr(iova, length);
	}
	if (mr->fast_reg) {
		kaddr = vrdma_frmr_ptr(mr, iova, chunk);
		*chunk = min(*chunk, length);
		return kaddr;
	}
	kaddr = kmap_local_page(vrdma_mr_page(mr, iova, &poff));
	*chunk = min_t(u32, length, PAGE_SIZE - poff);
	return kaddr + poff;
}

/**
 * vrdma_mr_unmap() - undo vrdma_mr_map()
 * @mr: the MR
 * @kaddr: what vrdma_mr_map() returned (not NULL)
 */
void vrdma_mr_unmap(struct vrdma_mr *mr, void *kaddr)
{
	if (!mr->dma && !mr->fast_reg && !mr->odp)
		kunmap_local(kaddr);
}

struct vrdma_skb_place {
	const struct sk_buff *skb;
	u32 offset;
};

static int vrdma_odp_skb_fn(void *kaddr, u32 len, u32 done, void *ctx)
{
	struct vrdma_skb_place *p = ctx;

	return vrdma_copy_from_skb(p->skb, p->offset + done, kaddr, len);
}

/**
 * vrdma_mr_copy_from_skb() - place packet payload into a checked MR range
 * @mr: the MR, range checked with vrdma_mr_check() for LOCAL/REMOTE_WRITE
 * @iova: start address in the region
 * @skb: the packet; the payload may be in fragments
 * @offset: where in @skb the bytes start
 * @length: bytes
 *
 * Return: 0, or a negative errno if @skb is shorter than claimed (it was
 * checked, so this is a driver bug) or the DMA address is bad; for an ODP
 * MR, as vrdma_odp_access().
 */
int vrdma_mr_copy_from_skb(struct vrdma_mr *mr, u64 iova,
			   const struct sk_buff *skb, u32 offset, u32 length)
{
	unsigned int poff, chunk;
	void *kaddr;
	int ret;

	if (mr->odp) {
		struct vrdma_skb_place p = { .skb = skb, .offset = offset };

		return vrdma_odp_access(mr, iova, length, true,
					vrdma_odp_skb_fn, &p);
	}
	if (mr->dma) {
		kaddr = vrdma_mr_dma_ptr(iova, length);
		if (!kaddr)
			return -EFAULT;
		return vrdma_copy_from_skb(skb, offset, kaddr, length);
	}
	if (mr->fast_reg) {
		for (; length; iova += chunk, offset += chunk, length -= chunk) {
			kaddr = vrdma_frmr_ptr(mr, iova, &chunk);
			if (!kaddr)
				return -EFAULT;
			chunk = min(chunk, length);
			ret = vrdma_copy_from_skb(skb, offset, kaddr, chunk);
			if (ret)
				return ret;
		}
		return 0;
	}

	while (length) {
		struct page *page = vrdma_mr_page(mr, iova, &poff);

		chunk = min_t(u32, length, PAGE_SIZE - poff);
		kaddr = kmap_local_page(page);
		ret = vrdma_copy_from_skb(skb, offset, kaddr + poff, chunk);
		kunmap_local(kaddr);
		if (ret)
			return ret;
		iova += chunk;
		offset += chunk;
		length -= chunk;
	}
	return 0;
}

/*
 * The 64-bit word at @iova of @mr, through its kernel mapping: *@kaddr is
 * what to kunmap_local() after, NULL when nothing was mapped.  Returns the
 * word, ERR_PTR(-EINVAL) if it is not 8-byte aligned in memory (an MR
 * whose iova and address differ modulo 8), ERR_PTR(-EFAULT) for a DMA MR
 * address that is not kernel memory.
 */
static u64 *vrdma_mr_word(struct vrdma_mr *mr, u64 iova, void **kaddr)
{
	unsigned int poff = 0;
	u64 *word;

	*kaddr = NULL;
	if (mr->dma) {
		word = vrdma_mr_dma_ptr(iova, sizeof(*word));
		if (!word)
			return ERR_PTR(-EFAULT);
	} else if (mr->fast_reg) {
		unsigned int chunk;

		word = vrdma_frmr_ptr(mr, iova, &chunk);
		if (!word)
			return ERR_PTR(-EFAULT);
	} else {
		struct page *page = vrdma_mr_page(mr, iova, &poff);

		/* Aligned, the word cannot cross into the next page. */
		if (poff & (sizeof(*word) - 1))
			return ERR_PTR(-EINVAL);
		*kaddr = kmap_local_page(page);
		word = *kaddr + poff;
	}
	if ((uintptr_t)word & (sizeof(*word) - 1)) {
		if (*kaddr)
			kunmap_local(*kaddr);
		return ERR_PTR(-EINVAL);
	}
	return word;
}

/* An operation on one 64-bit word of an MR (vrdma_mr_word_op()). */
struct vrdma_word_op {
	const struct vrdma_atomic_op *aop;
	u64 value;
	u64 orig;
};

/*
 * Run @fn on the aligned 64-bit word at @iova of @mr, with the MR's page
 * held in place for it (for ODP, under its table's lock).
 */
static int vrdma_mr_word_op(struct vrdma_mr *mr, u64 iova,
			    int (*fn)(void *kaddr, u32 len, u32 done,
				      void *ctx),
			    struct vrdma_word_op *op)
{
	void *kaddr;
	u64 *word;
	int ret;

	if (mr->odp)
		return vrdma_odp_access(mr, iova, sizeof(*word), true, fn, op);
	word = vrdma_mr_word(mr, iova, &kaddr);
	if (IS_ERR(word))
		return PTR_ERR(word);
	ret = fn(word, sizeof(*word), 0, op);
	if (kaddr)
		kunmap_local(kaddr);
	return ret;
}

/*
 * The value @aop makes of the word @old; false if it leaves the word alone
 * (a compare that fails).  A masked fetch-and-add adds field by field: the
 * mask's bits are cleared in both operands, so no carry leaves them, and
 * then get the sum of their own bits and the carry that came in.
 */
static bool vrdma_atomic_new(const struct vrdma_atomic_op *aop, u64 old,
			     u64 *new)
{
	u64 m = aop->swap_add_mask;

	if (aop->cmp_swap) {
		if ((old ^ aop->compare) & aop->compare_mask)
			return false;
		*new = (old & ~m) | (aop->swap_add & m);
	} else {
		*new = ((old & ~m) + (aop->swap_add & ~m)) ^
		       ((old ^ aop->swap_add) & m);
	}
	return true;
}

static int vrdma_atomic_fn(void *kaddr, u32 len, u32 done, void *ctx)
{
	struct vrdma_word_op *op = ctx;
	u64 *word = kaddr, old, new;

	/* An ODP word is checked here: it may not be aligned in memory. */
	if (len != sizeof(*word) || ((uintptr_t)word & (sizeof(*word) - 1)))
		return -EINVAL;
	old = READ_ONCE(*word);
	do {
		if (!vrdma_atomic_new(op->aop, old, &new))
			break;
	} while (!try_cmpxchg64(word, &old, new));
	op->orig = old;
	return 0;
}

static int vrdma_atomic_write_fn(void *kaddr, u32 len, u32 done, void *ctx)
{
	struct vrdma_word_op *op = ctx;
	u64 *word = kaddr;

	if (len != sizeof(*word) || ((uintptr_t)word & (sizeof(*word) - 1)))
		return -EINVAL;
	/* After the data of the requests before it: see below. */
	smp_store_release(word, op->value);
	return 0;
}

/**
 * vrdma_mr_atomic() - compare-and-swap or fetch-and-add 8 bytes of an MR
 * @mr: the MR, range checked with vrdma_mr_check() for REMOTE_ATOMIC
 * @iova: address of the 64-bit word, 8-byte aligned
 * @aop: the operation, masked or plain (the sum is modulo 2^64)
 * @orig: set to the value the word had before
 *
 * The operation ends in a 64-bit compare-and-exchange instruction on the
 * pinned page through its kernel mapping (repeated if the word changed
 * since it was read), not a read-modify-write under a lock.  Every atomic
 * that targets this word -- from any QP, from any vrdma device (two
 * devices in loopback reach the same physical page through their own
 * MRs) -- executes that instruction on the same memory, so they
 * are atomic with respect to each other without any shared lock: no
 * module-wide lock serialises unrelated QPs, and nothing has to be taken
 * in the right order.  The process's own CPU atomics on the word are
 * respected as well, although the device only promises IB_ATOMIC_HCA.
 *
 * Return: 0, -EINVAL if the word is not 8-byte aligned in memory, -EFAULT
 * for a DMA MR address that is not kernel memory.
 */
int vrdma_mr_atomic(struct vrdma_mr *mr, u64 iova,
		    const struct vrdma_atomic_op *aop, u64 *orig)
{
	struct vrdma_word_op op = { .aop = aop };
	int ret;

	ret = vrdma_mr_word_op(mr, iova, vrdma_atomic_fn, &op);
	*orig = op.orig;
	return ret;
}

/**
 * vrdma_mr_atomic_write() - write 8 bytes of an MR at once (ATOMIC WRITE)
 * @mr: the MR, range checked with vrdma_mr_check() for REMOTE_WRITE
 * @iova: address of the 64-bit word, 8-byte aligned
 * @value: the 8 bytes, in memory order
 *
 * One 64-bit store, so that no reader of the word sees it half written;
 * with release order, so that whoever sees the new value also sees the
 * data the requests before it placed (IBA annex A19).
 *
 * Return: 0, -EINVAL if the word is not 8-byte aligned in memory, -EFAULT
 * for a DMA MR address that is not kernel memory.
 */
int vrdma_mr_atomic_write(struct vrdma_mr *mr, u64 iova, const u8 *value)
{
	struct vrdma_word_op op = {};

	memcpy(&op.value, value, sizeof(op.value));
	return vrdma_mr_word_op(mr, iova, vrdma_atomic_write_fn, &op);
}

/**
 * vrdma_sgl_check() - check every SGE of a gather/scatter list
 * @vdev: the device
 * @pd: the QP's PD
 * @sge: the list, already copied out of shared memory
 * @num_sge: entries
 * @access: rights needed on each (IB_ACCESS_LOCAL_WRITE to scatter into)
 * @total: set to the sum of the lengths
 *
 * The requester checks a WQE when it takes it from the ring, before the
 * WQEs ahead of it have run.  A fast-reg MR's key, range and rights are
 * those of the last REG_MR executed, and a REG_MR or LOCAL_INV ahead in
 * the same queue is yet to change them (a consumer posts REG_MR and the
 * SEND that gathers from the new key in one chain): only its PD is
 * checked here, the rest when the bytes move (vrdma_sgl_walk(), the
 * loopback path), by which time everything before the WQE has run.
 *
 * Return: 0, -EACCES for a bad key or missing rights, -ERANGE for an SGE
 * outside its MR, -EINVAL if the total exceeds 2^31 (the IBA maximum
 * message).
 */
int vrdma_sgl_check(struct vrdma_dev *vdev, struct vrdma_pd *pd,
		    const struct vrdma_sge *sge, u32 num_sge, int access,
		    u32 *total)
{
	u64 sum = 0;
	u32 i;
	int ret;

	for (i = 0; i < num_sge; i++) {
		struct vrdma_mr *mr;

		if (!sge[i].length)
			continue;
		sum += sge[i].length;
		mr = vrdma_frmr_find(vdev, sge[i].lkey);
		if (mr) {
			ret = READ_ONCE(mr->pd) == pd ? 0 : -EACCES;
			vrdma_mr_put(mr);
			if (ret)
				return ret;
			continue;
		}
		mr = vrdma_mr_get(vdev, sge[i].lkey);
		if (!mr)
			return -EACCES;
		ret = vrdma_mr_check(mr, pd, sge[i].lkey, sge[i].addr,
				     sge[i].length, access);
		vrdma_mr_put(mr);
		if (ret)
			return ret;
	}
	if (sum > (1U << 31))
		return -EINVAL;
	*total = sum;
	return 0;
}

/*
 * Walk @length bytes of an SGL from byte @offset on, calling @fn for each
 * piece that lies in one SGE with its checked MR.  Keys are looked up and
 * checked again on every walk: the MR may have been deregistered since the
 * WQE was posted.
 */
static int vrdma_sgl_walk(struct vrdma_dev *vdev, struct vrdma_pd *pd,
			  const struct vrdma_sge *sge, u32 num_sge,
			  u32 offset, u32 length, int access,
			  int (*fn)(struct vrdma_mr *mr, u64 iova, u32 len,
				    u32 done, void *ctx),
			  void *ctx)
{
	u32 i, done = 0;
	int ret;

	for (i = 0; i < num_sge && done < length; i++) {
		struct vrdma_mr *mr;
		u32 len;
		u64 iova;

		if (offset >= sge[i].length) {
			offset -= sge[i].length;
			continue;
		}
		iova = sge[i].addr + offset;
		len = min(sge[i].length - offset, length - done);
		offset = 0;

		mr = vrdma_mr_get(vdev, sge[i].lkey);
		if (!mr)
			return -EACCES;
		ret = vrdma_mr_check(mr, pd, sge[i].lkey, iova, len, access);
		trace_vrdma_key_check(mr, sge[i].lkey, iova, len, access, ret);
		if (!ret)
			ret = fn(mr, iova, len, done, ctx);
		vrdma_mr_put(mr);
		if (ret)
			return ret;
		done += len;
	}
	return done == length ? 0 : -EINVAL;
}

struct vrdma_buf_ctx {
	void *buf;
	bool to_sgl;
};

static int vrdma_sgl_copy_one(struct vrdma_mr *mr, u64 iova, u32 len,
			      u32 done, void *ctx)
{
	struct vrdma_buf_ctx *c = ctx;

	return vrdma_mr_copy(mr, iova, c->buf + done, len, c->to_sgl);
}

/**
 * vrdma_sgl_copy() - copy between an SGL and a kernel buffer
 * @vdev: the device
 * @pd: the QP's PD
 * @sge: the list, copied out of shared memory
 * @num_sge: entries
 * @offset: byte of the list to start at
 * @buf: kernel buffer
 * @length: bytes
 * @to_sgl: scatter @buf into the list (needs LOCAL_WRITE), else gather
 *
 * Return: 0, -EACCES/-ERANGE as vrdma_sgl_check(), -EINVAL if the list is
 * shorter than @offset + @length.
 */
int vrdma_sgl_copy(struct vrdma_dev *vdev, struct vrdma_pd *pd,
		   const struct vrdma_sge *sge, u32 num_sge, u32 offset,
		   void *buf, u32 length, bool to_sgl)
{
	struct vrdma_buf_ctx c = { .buf = buf, .to_sgl = to_sgl };

	return vrdma_sgl_walk(vdev, pd, sge, num_sge, offset, length,
			      to_sgl ? IB_ACCESS_LOCAL_WRITE : 0,
			      vrdma_sgl_copy_one, &c);
}

struct vrdma_skb_ctx {
	const struct sk_buff *skb;
	u32 offset;
};

static int vrdma_sgl_copy_skb_one(struct vrdma_mr *mr, u64 iova, u32 len,
				  u32 done, void *ctx)
{
	struct vrdma_skb_ctx *c = ctx;

	return vrdma_mr_copy_from_skb(mr, iova, c->skb, c->offset + done, len);
}

/**
 * vrdma_sgl_copy_from_skb() - scatter packet payload into an SGL
 * @vdev: the device
 * @pd: the QP's PD
 * @sge: the list, copied out of shared memory
 * @num_sge: entries
 * @offset: byte of the list to start at
 * @skb: the packet
 * @skb_offset: where in @skb the payload starts
 * @length: bytes
 *
 * Return: as vrdma_sgl_copy().
 */
int vrdma_sgl_copy_from_skb(struct vrdma_dev *vdev, struct vrdma_pd *pd,
			    const struct vrdma_sge *sge, u32 num_sge,
			    u32 offset, const struct sk_buff *skb,
			    u32 skb_offset, u32 length)
{
	struct vrdma_skb_ctx c = { .skb = skb, .offset = skb_offset };

	return vrdma_sgl_walk(vdev, pd, sge, num_sge, offset, length,
			      IB_ACCESS_LOCAL_WRITE, vrdma_sgl_copy_skb_one,
			      &c);
}

/* Page fragments one packet may take: one slot stays for the trailer. */
#define VRDMA_MAX_PAYLOAD_FRAGS	(MAX_SKB_FRAGS - 1)

static int vrdma_sgl_frag_one(struct vrdma_mr *mr, u64 iova, u32 len,
			      u32 done, void *ctx)
{
	struct sk_buff *skb = ctx;

	/*
	 * A DMA MR's addresses may be vmalloc memory, a fast-reg MR's pages
	 * slab memory, which no fragment may reference: copied instead.
	 * Only user MRs have the pinned pages this takes (an ODP MR's may
	 * be taken from the process while the packet lives).
	 */
	if (mr->dma || mr->fast_reg || mr->odp)
		return -EOPNOTSUPP;
	while (len) {
		struct skb_shared_info *sh = skb_shinfo(skb);
		unsigned int poff, chunk;
		struct page *page = vrdma_mr_page(mr, iova, &poff);

		chunk = min_t(u32, len, PAGE_SIZE - poff);
		if (sh->nr_frags >= VRDMA_MAX_PAYLOAD_FRAGS)
			return -E2BIG;
		get_page(page);
		skb_fill_page_desc(skb, sh->nr_frags, page, poff, chunk);
		skb->len += chunk;
		skb->data_len += chunk;
		skb->truesize += chunk;
		iova += chunk;
		len -= chunk;
	}
	return 0;
}

/**
 * vrdma_sgl_add_frags() - append bytes of an SGL to a packet as page
 *	fragments that point at the MR's pinned pages, instead of copying
 * @vdev: the device
 * @pd: the QP's PD
 * @sge: the list, copied out of shared memory
 * @num_sge: entries
 * @offset: byte of the list to start at
 * @skb: the packet; the fragments are appended after its linear part
 * @length: bytes
 *
 * Each fragment holds a reference on its page, so the data stays valid
 * memory while the packet lives, even if the MR is deregistered meanwhile;
 * its contents are the process's until the packet is consumed, which is
 * why only requests whose WQE completes after the peer has placed them
 * (RC) are built this way.  The packet is marked SKBFL_SHARED_FRAG, as
 * splice and sendpage mark theirs: whatever in the stack would write into
 * the fragments or checksum them (skb_checksum_help(), in-place ESP,
 * skb_cow_data()) works on a private copy, never on the process's pages.
 *
 * Return: 0; -E2BIG if the bytes span more pages than a packet takes or
 * -EOPNOTSUPP for a DMA or fast-reg MR (build the packet by copying); else as
 * vrdma_sgl_copy().  On error the packet may hold some of the fragments:
 * free it.
 */
int vrdma_sgl_add_frags(struct vrdma_dev *vdev, struct vrdma_pd *pd,
			const struct vrdma_sge *sge, u32 num_sge, u32 offset,
			struct sk_buff *skb, u32 length)
{
	skb_shinfo(skb)->flags |= SKBFL_SHARED_FRAG;
	return vrdma_sgl_walk(vdev, pd, sge, num_sge, offset, length, 0,
			      vrdma_sgl_frag_one, skb);
}
