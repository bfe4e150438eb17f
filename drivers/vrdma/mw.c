// SPDX-License-Identifier: GPL-2.0
/*
 * Memory windows: remote keys to parts of MRs, handed out and revoked
 * without registering memory again.
 *
 * A window is allocated empty in a PD (alloc_mw) and gets its meaning from
 * a BIND_MW work request, which the requester executes when it reaches it
 * in the send queue: the window then opens [addr, addr + length) of an MR
 * of its PD, with rights of its own, under the rkey the bind names (the
 * window's index and a key byte the application chooses, ibv_inc_rkey()).
 *
 *   type 1   bound through any QP of its PD (ibv_bind_mw() posts the
 *            BIND_MW), used through any QP of its PD; a new bind replaces
 *            the binding, a bind of length 0 unbinds it
 *   type 2B  bound through a QP (IBV_WR_BIND_MW) and used only through that
 *            QP; bound only while unbound; unbound by LOCAL_INV on a QP of
 *            its PD, or by a SEND_WITH_INV that the peer of that QP sends
 *
 * Windows have their own key table: an MW's index is VRDMA_MW_INDEX_BASE
 * plus its slot, so the responder tells a window's rkey from an MR's by the
 * key alone (vrdma_rkey_get()).
 *
 * Every window's binding changes, and is read, under the xa_lock of
 * vdev->mw_xa: a lookup sees a binding whole, and dealloc_mw, which erases
 * the window under that lock, returns only after every lookup that found it
 * is done (ib_core frees the window right after).  The lock is taken with
 * BHs off: the receive softirq looks windows up too, answering a READ
 * (vrdma_qp_bh()).  A bound window keeps its MR registered through
 * mr->num_mw: dereg and rereg refuse while it is not 0; a bind checks the
 * MR and takes it under that lock, under which rereg changes the MR's PD
 * and rights in place.  An access through a window holds the MR, as any
 * rkey access does; its check is per packet, so after an invalidation at
 * most a packet checked before it lands.
 */
#include "vrdma.h"

/*
 * The rights a window may grant: the remote ones (LOCAL_WRITE is accepted
 * and means nothing for a window).  Windows are never zero-based.
 */
#define VRDMA_MW_ACCESS	(IB_ACCESS_REMOTE_READ | IB_ACCESS_REMOTE_WRITE | \
			 IB_ACCESS_REMOTE_ATOMIC | IB_ACCESS_LOCAL_WRITE)

/**
 * vrdma_mw_dev_init() - the device's window table
 * @vdev: the device being created
 *
 * Return: 0 or -ENOMEM.
 */
int vrdma_mw_dev_init(struct vrdma_dev *vdev)
{
	xa_init_flags(&vdev->mw_xa, XA_FLAGS_ALLOC | XA_FLAGS_LOCK_BH);
	vdev->mw_key_byte = kvzalloc(VRDMA_MAX_MW, GFP_KERNEL);
	return vdev->mw_key_byte ? 0 : -ENOMEM;
}

/* Called when ib_core is done with the device: every window is gone. */
void vrdma_mw_dev_fini(struct vrdma_dev *vdev)
{
	WARN_ON(!xa_empty(&vdev->mw_xa));
	xa_destroy(&vdev->mw_xa);
	kvfree(vdev->mw_key_byte);
}

/**
 * vrdma_alloc_mw() - a new, unbound memory window (ibv_alloc_mw)
 * @ibmw: ib_core's window, embedded in ours; its type is 1 or 2
 * @udata: the request, struct vrdma_uverbs_req (vrdma_udata_check()); no
 *	response
 *
 * Return: 0, an error of vrdma_udata_req(), -EINVAL for room for a driver
 * response, -ENOMEM past max_mw.
 */
int vrdma_alloc_mw(struct ib_mw *ibmw, struct ib_udata *udata)
{
	struct vrdma_dev *vdev = to_vdev(ibmw->device);
	struct vrdma_mw *mw = to_vmw(ibmw);
	u32 slot;
	int ret;

	ret = vrdma_udata_check(ibmw->device, udata, __func__);
	if (ret)
		return ret;
	if (udata && udata->outlen)
		return -EINVAL;
	ret = xa_alloc_cyclic_bh(&vdev->mw_xa, &slot, NULL,
				 XA_LIMIT(0, VRDMA_MAX_MW - 1), &vdev->mw_next,
				 GFP_KERNEL);
	if (ret < 0)
		return ret == -EBUSY ? -ENOMEM : ret;

	mw->pd = to_vpd(ibmw->pd);
	mw->slot = slot;
	/* The slot is ours: its last key byte was stored before it was freed. */
	ibmw->rkey = VRDMA_KEY(VRDMA_MW_INDEX_BASE + slot,
			       ++vdev->mw_key_byte[slot]);
	/* Publish only now: a lookup must see a complete window. */
	xa_store_bh(&vdev->mw_xa, slot, mw, GFP_KERNEL);
	return 0;
}

/* Drop the binding; the caller holds the table lock. */
static void vrdma_mw_unbind(struct vrdma_mw *mw)
{
	if (mw->mr)
		atomic_dec(&mw->mr->num_mw);
	mw->mr = NULL;
	mw->addr = 0;
	mw->length = 0;
	mw->access = 0;
	mw->qpn = 0;
}

/**
 * vrdma_dealloc_mw() - destroy a window, bound or not (ibv_dealloc_mw)
 * @ibmw: the window
 *
 * Its rkey stops working at once; ib_core frees the memory on return.
 *
 * Return: 0
 */
int vrdma_dealloc_mw(struct ib_mw *ibmw)
{
	struct vrdma_dev *vdev = to_vdev(ibmw->device);
	struct vrdma_mw *mw = to_vmw(ibmw);

	xa_lock_bh(&vdev->mw_xa);
	vrdma_mw_unbind(mw);
	/* The next window in this slot starts after the last key used. */
	vdev->mw_key_byte[mw->slot] = VRDMA_KEY_BYTE(ibmw->rkey);
	__xa_erase(&vdev->mw_xa, mw->slot);
	xa_unlock_bh(&vdev->mw_xa);
	return 0;
}

/* The window a key names, bound or not; the caller holds the table lock. */
static struct vrdma_mw *vrdma_mw_find(struct vrdma_dev *vdev, u32 key)
{
	if (!VRDMA_KEY_IS_MW(key))
		return NULL;
	return xa_load(&vdev->mw_xa, VRDMA_KEY_INDEX(key) - VRDMA_MW_INDEX_BASE);
}

/*
 * May a window with rights @access open [@addr, @addr + @len) of @mr?  The
 * MR must be a user MR of the QP's PD that allows binding (C10-73), allow
 * local writes if the window allows remote writes or atomics (C10-74), and
 * hold the whole range (C10-75).
 */
static bool vrdma_mw_mr_ok(struct vrdma_mr *mr, struct vrdma_pd *pd, u32 lkey,
			   u64 addr, u64 len, int access)
{
	int need = IB_ACCESS_MW_BIND;

	if (access & (IB_ACCESS_REMOTE_WRITE | IB_ACCESS_REMOTE_ATOMIC))
		need |= IB_ACCESS_LOCAL_WRITE;
	return !mr->dma && !mr->fast_reg && !vrdma_mr_check(mr, pd, lkey, addr, len, need);
}

/**
 * vrdma_mw_bind() - execute a BIND_MW work request
 * @qp: the QP it was posted to, engines owned, mutex held
 * @wqe: the kernel's copy of the WQE
 *
 * The window is named by the index of bind.mw_rkey (not its key byte: the
 * application's copy of a type 2 window's key may be older than the last
 * bind).  The window, the QP and the MR must share a PD; a type 2 window
 * must be unbound and gets a non-empty range; the new key must keep the
 * window's index.  A failed bind changes nothing.
 *
 * Return: IB_WC_SUCCESS or IB_WC_MW_BIND_ERR.
 */
u8 vrdma_mw_bind(struct vrdma_qp *qp, const struct vrdma_send_wqe *wqe)
{
	struct vrdma_dev *vdev = qp->vdev;
	u32 new_rkey = wqe->bind.new_rkey;
	u64 addr = wqe->bind.addr, len = wqe->bind.length;
	int access = wqe->bind.access;
	struct vrdma_mr *mr = NULL;
	struct vrdma_mw *mw;
	u8 status = IB_WC_MW_BIND_ERR;

	vrdma_qp_assert_locked(qp);

	if ((access & ~VRDMA_MW_ACCESS) ||
	    VRDMA_KEY_INDEX(new_rkey) != VRDMA_KEY_INDEX(wqe->bind.mw_rkey))
		return IB_WC_MW_BIND_ERR;
	if (len) {
		mr = vrdma_mr_get(vdev, wqe->bind.mr_lkey);
		if (!mr)
			return IB_WC_MW_BIND_ERR;
	}

	xa_lock_bh(&vdev->mw_xa);
	mw = vrdma_mw_find(vdev, wqe->bind.mw_rkey);
	if (!mw || mw->pd != qp->pd)
		goto unlock;
	if (mw->ibmw.type == IB_MW_TYPE_2 && (mw->mr || !len))
		goto unlock;
	/*
	 * The MR's PD and rights are checked and the MR taken under the
	 * table lock, under which rereg changes them, and only while no
	 * window holds the MR (vrdma_rereg_user_mr()): what was checked
	 * stays true while the window is bound.  Taking it fails while
	 * dereg or rereg owns it.
	 */
	if (mr && (!vrdma_mw_mr_ok(mr, qp->pd, wqe->bind.mr_lkey, addr, len,
				   access) ||
		   !atomic_inc_unless_negative(&mr->num_mw)))
		goto unlock;
	vrdma_mw_unbind(mw);
	mw->mr = mr;
	mw->addr = addr;
	mw->length = len;
	mw->access = access;
	if (mw->ibmw.type == IB_MW_TYPE_2)
		mw->qpn = qp->ibqp.qp_num;
	mw->ibmw.rkey = new_rkey;
	status = IB_WC_SUCCESS;
unlock:
	xa_unlock_bh(&vdev->mw_xa);
	if (mr)
		vrdma_mr_put(mr);
	return status;
}

/**
 * vrdma_mw_invalidate() - unbind a type 2 window by its rkey
 * @qp: the QP the request came through, engines owned, mutex held
 * @rkey: the window's current key
 * @remote: the IETH of a SEND_WITH_INV from @qp's peer (else LOCAL_INV):
 *	the window must have been bound through @qp
 *
 * User MRs cannot be invalidated: an MR's key is refused.
 *
 * Return: 0, or -EINVAL if @rkey names no bound type 2 window of @qp's PD
 * (that @qp may invalidate).
 */
int vrdma_mw_invalidate(struct vrdma_qp *qp, u32 rkey, bool remote)
{
	struct vrdma_dev *vdev = qp->vdev;
	struct vrdma_mw *mw;
	int ret = -EINVAL;

	vrdma_qp_assert_locked(qp);

	xa_lock_bh(&vdev->mw_xa);
	mw = vrdma_mw_find(vdev, rkey);
	if (mw && mw->ibmw.rkey == rkey && mw->pd == qp->pd &&
	    mw->ibmw.type == IB_MW_TYPE_2 && mw->mr &&
	    (!remote || mw->qpn == qp->ibqp.qp_num)) {
		vrdma_mw_unbind(mw);
		ret = 0;
	}
	xa_unlock_bh(&vdev->mw_xa);
	return ret;
}

/**
 * vrdma_mw_rkey_get() - the memory a window's rkey opens to a request
 * @qp: the responder's QP, engines owned
 * @rkey: from the packet (untrusted); VRDMA_KEY_IS_MW()
 * @va: first address
 * @length: bytes; 0 checks the rights only
 * @access: IB_ACCESS_REMOTE_* rights needed (a window grants no FLUSH)
 * @mrp: set to the window's MR, referenced (vrdma_mr_put())
 *
 * Return: 0; -EACCES if no bound window has this key, it is of another PD,
 * a type 2 window bound through another QP, or it lacks a right; -ERANGE
 * if the range is not inside the window.
 */
int vrdma_mw_rkey_get(struct vrdma_qp *qp, u32 rkey, u64 va, u64 length,
		      int access, struct vrdma_mr **mrp)
{
	struct vrdma_dev *vdev = qp->vdev;
	struct vrdma_mw *mw;
	u64 end;
	int ret = -EACCES;

	vrdma_qp_assert_owned(qp);

	xa_lock_bh(&vdev->mw_xa);
	mw = vrdma_mw_find(vdev, rkey);
	if (!mw || mw->ibmw.rkey != rkey || !mw->mr || mw->pd != qp->pd ||
	    (mw->ibmw.type == IB_MW_TYPE_2 && mw->qpn != qp->ibqp.qp_num) ||
	    (mw->access & access) != access)
		goto unlock;
	ret = -ERANGE;
	if (va < mw->addr || check_add_overflow(va, length, &end) ||
	    end > mw->addr + mw->length)
		goto unlock;
	/* Registered while bound (num_mw): it holds its own reference. */
	refcount_inc(&mw->mr->refs);
	*mrp = mw->mr;
	ret = 0;
unlock:
	xa_unlock_bh(&vdev->mw_xa);
	return ret;
}
