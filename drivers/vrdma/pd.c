// SPDX-License-Identifier: GPL-2.0
/*
 * Protection domains.
 *
 * A PD is the unit of memory protection: a QP may only use MRs, MWs and AHs
 * of its own PD, so a key learned by a peer is useless on another PD's QP.
 * The PD itself holds no state; ib_core counts its users and refuses to
 * free one that is still in use.
 */
#include "vrdma.h"

/**
 * vrdma_alloc_pd() - create a protection domain
 * @ibpd: ib_core's PD, embedded in ours
 * @udata: the request, struct vrdma_uverbs_req (vrdma_udata_check()); NULL for a
 *	kernel consumer
 *
 * Return: 0, or -ENOMEM past the device's max_pd.
 */
int vrdma_alloc_pd(struct ib_pd *ibpd, struct ib_udata *udata)
{
	struct vrdma_dev *vdev = to_vdev(ibpd->device);
	int ret;

	ret = vrdma_udata_check(ibpd->device, udata, __func__);
	if (ret)
		return ret;
	if (atomic_inc_return(&vdev->num_pd) > VRDMA_MAX_PD) {
		atomic_dec(&vdev->num_pd);
		return -ENOMEM;
	}
	return 0;
}

/**
 * vrdma_dealloc_pd() - destroy a protection domain
 * @ibpd: the PD; ib_core guarantees it has no users left
 * @udata: no driver data
 *
 * Return: 0
 */
int vrdma_dealloc_pd(struct ib_pd *ibpd, struct ib_udata *udata)
{
	atomic_dec(&to_vdev(ibpd->device)->num_pd);
	return 0;
}
