// SPDX-License-Identifier: GPL-2.0
/*
 * Address handles: where a UD send goes.
 *
 * A connected QP learns its destination once, at RTR; a UD QP names it in
 * every send WQE, by an address handle.  The AH holds the path (source
 * GID, destination GID and the IP addresses they are, hop limit, traffic
 * class, flow label; ib_core has resolved the destination MAC before we are
 * called) and lives only in the kernel: the process knows it by a handle,
 * which create_ah returns in its driver data and the provider writes into
 * vrdma_send_wqe.ud.ah.
 *
 * The handle comes from shared memory, so it is untrusted: the requester
 * looks it up in the device's table and uses the AH only if it belongs to
 * the sending QP's PD.  AHs of another PD, and so of another process, are
 * refused like handles that do not exist.
 */
#include <net/ipv6.h>
#include <rdma/ib_cache.h>

#include "vrdma.h"

/* Handles are small numbers; 0 is never one, so a zeroed WQE names none. */
#define VRDMA_AH_HANDLE_MAX	0xffffff

/*
 * The handle table's lock is irq-safe: AHs are created and destroyed in
 * any context (ib_cm holds a spinlock with interrupts off), and looked up
 * by UD sends, which may run in the receive softirq.
 */
static int vrdma_ah_alloc_handle(struct vrdma_dev *vdev, u32 *handle,
				 gfp_t gfp)
{
	unsigned long flags;
	int ret;

	/* A sleeping allocation drops the lock, which needs irqs on. */
	if (gfpflags_allow_blocking(gfp))
		return xa_alloc_cyclic_irq(&vdev->ah_xa, handle, NULL,
					   XA_LIMIT(1, VRDMA_AH_HANDLE_MAX),
					   &vdev->ah_next, gfp);
	xa_lock_irqsave(&vdev->ah_xa, flags);
	ret = __xa_alloc_cyclic(&vdev->ah_xa, handle, NULL,
				XA_LIMIT(1, VRDMA_AH_HANDLE_MAX),
				&vdev->ah_next, gfp);
	xa_unlock_irqrestore(&vdev->ah_xa, flags);
	return ret;
}

static void vrdma_ah_erase(struct vrdma_dev *vdev, u32 handle)
{
	unsigned long flags;

	xa_lock_irqsave(&vdev->ah_xa, flags);
	__xa_erase(&vdev->ah_xa, handle);
	xa_unlock_irqrestore(&vdev->ah_xa, flags);
}

/**
 * vrdma_av_set() - fill a path from an address vector
 * @av: the path; a source GID it held before is released
 * @attr: a RoCE address vector with a GRH and a RoCEv2 source GID
 *
 * Return: 0, or -EINVAL for an address vector that is not RoCEv2 or whose
 * destination GID is not of the source GID's IP version.
 */
int vrdma_av_set(struct vrdma_av *av, const struct rdma_ah_attr *attr)
{
	const struct ib_global_route *grh;
	const struct ib_gid_attr *sgid;
	bool ipv6;

	if (!(rdma_ah_get_ah_flags(attr) & IB_AH_GRH) ||
	    attr->type != RDMA_AH_ATTR_TYPE_ROCE)
		return -EINVAL;
	grh = rdma_ah_read_grh(attr);
	sgid = grh->sgid_attr;
	if (!sgid || sgid->gid_type != IB_GID_TYPE_ROCE_UDP_ENCAP)
		return -EINVAL;
	ipv6 = rdma_gid_attr_network_type(sgid) == RDMA_NETWORK_IPV6;
	/* An IPv4 source cannot reach an IPv6 destination, nor the reverse. */
	if (ipv6 == ipv6_addr_v4mapped((struct in6_addr *)grh->dgid.raw))
		return -EINVAL;

	if (av->sgid_attr)
		rdma_put_gid_attr(av->sgid_attr);
	rdma_hold_gid_attr(sgid);
	av->sgid_attr = sgid;
	av->dgid = grh->dgid;
	av->ipv6 = ipv6;
	if (ipv6) {
		memcpy(&av->saddr6, sgid->gid.raw, sizeof(av->saddr6));
		memcpy(&av->daddr6, grh->dgid.raw, sizeof(av->daddr6));
	} else {
		memcpy(&av->saddr4, sgid->gid.raw + 12, sizeof(av->saddr4));
		memcpy(&av->daddr4, grh->dgid.raw + 12, sizeof(av->daddr4));
	}
	memcpy(av->dmac, attr->roce.dmac, ETH_ALEN);
	av->tos = grh->traffic_class;
	av->ttl = grh->hop_limit ? grh->hop_limit : 64;
	av->flow_label = grh->flow_label;
	dst_cache_reset(&av->dst_cache);
	atomic64_set(&av->remote, 0);
	return 0;
}

/**
 * vrdma_create_ah() - create an address handle (create_ah, create_user_ah)
 * @ibah: ib_core's AH, embedded in ours; ibah->pd is its PD
 * @init: the address vector (ib_core has resolved the destination MAC);
 *	without RDMA_CREATE_AH_SLEEPABLE in init->flags, atomic context
 *	(ib_cm creates AHs under a spinlock)
 * @udata: the request, struct vrdma_uverbs_req (vrdma_udata_check()); the
 *	response carries struct vrdma_create_ah_resp; NULL for a kernel
 *	consumer, whose UD work requests name the ib_ah itself
 *	(kverbs.c puts its handle into the WQE)
 *
 * Return: 0, -EINVAL for an address vector vrdma cannot send to or a
 * response too short for the handle, -ENOMEM past max_ah.
 */
int vrdma_create_ah(struct ib_ah *ibah, struct rdma_ah_init_attr *init,
		    struct ib_udata *udata)
{
	struct vrdma_dev *vdev = to_vdev(ibah->device);
	struct vrdma_ah *ah = to_vah(ibah);
	struct vrdma_create_ah_resp resp = {};
	gfp_t gfp = (init->flags & RDMA_CREATE_AH_SLEEPABLE) ? GFP_KERNEL :
								GFP_ATOMIC;
	struct vrdma_ah_dest *dest;
	unsigned long flags;
	u32 handle, fl;
	int ret;

	ret = vrdma_udata_check(ibah->device, udata, __func__);
	if (ret)
		return ret;
	/* Without the handle the process could not use the AH. */
	if (udata && udata->outlen < sizeof(resp))
		return -EINVAL;
	if (atomic_inc_return(&vdev->num_ah) > vdev->attr.max_ah) {
		ret = -ENOMEM;
		goto err_count;
	}

	dest = kzalloc(sizeof(*dest), gfp);
	if (!dest) {
		ret = -ENOMEM;
		goto err_count;
	}
	dest->pd = to_vpd(ibah->pd);
	refcount_set(&dest->refs, 1);
	ret = dst_cache_init(&dest->av.dst_cache, gfp);
	if (ret)
		goto err_dest;
	ret = vrdma_av_set(&dest->av, init->ah_attr);
	if (ret)
		goto err_av;

	/*
	 * Cyclic: a handle is not reused soon, so a WQE still naming a
	 * destroyed AH most likely fails instead of reaching another one.
	 */
	ret = vrdma_ah_alloc_handle(vdev, &handle, gfp);
	if (ret < 0)
		goto err_av;
	ah->handle = handle;
	ah->dest = dest;
	/*
	 * One UDP source port per AH: UD has no connection whose QPNs could
	 * be hashed, so the flow label, or else the handle, gives the entropy.
	 */
	fl = dest->av.flow_label ? : handle & IB_GRH_FLOWLABEL_MASK;
	dest->av.sport = cpu_to_be16(rdma_flow_label_to_udp_sport(fl));

	if (udata) {
		resp.ah = handle;
		ret = ib_copy_to_udata(udata, &resp, sizeof(resp));
		if (ret)
			goto err_xa;
	}
	/* Visible to senders only when complete; the slot is allocated. */
	xa_lock_irqsave(&vdev->ah_xa, flags);
	__xa_store(&vdev->ah_xa, handle, dest, gfp);
	xa_unlock_irqrestore(&vdev->ah_xa, flags);
	return 0;

err_xa:
	vrdma_ah_erase(vdev, handle);
err_av:
	if (dest->av.sgid_attr)
		rdma_put_gid_attr(dest->av.sgid_attr);
	dst_cache_destroy(&dest->av.dst_cache);
err_dest:
	kfree(dest);
err_count:
	atomic_dec(&vdev->num_ah);
	return ret;
}

/**
 * vrdma_destroy_ah() - destroy an AH, with sends using it in flight or not
 * @ibah: the AH
 * @flags: RDMA_DESTROY_AH_SLEEPABLE or not: either way we never wait; user
 *	AHs are destroyed in process context, kernel ones may be in atomic
 *	context (ib_cm, under a spinlock)
 *
 * Once the handle is out of the table no sender can find the AH.  A sender
 * that found it before holds a reference to the destination, not to the
 * ib_ah, which ib_core frees when we return: the destination goes with the
 * last reference, ours here or the sender's after its packet.
 *
 * Return: 0
 */
int vrdma_destroy_ah(struct ib_ah *ibah, u32 flags)
{
	struct vrdma_dev *vdev = to_vdev(ibah->device);
	struct vrdma_ah *ah = to_vah(ibah);

	vrdma_ah_erase(vdev, ah->handle);
	vrdma_ah_put(ah->dest);
	atomic_dec(&vdev->num_ah);
	return 0;
}

/**
 * vrdma_ah_get() - look an AH handle up for a send
 * @vdev: the device
 * @handle: from a send WQE (untrusted)
 * @pd: the sending QP's PD
 *
 * The lookup and the reference are taken under the table's lock, which
 * destroy_ah's erase also takes: a destination found here is not freed
 * before vrdma_ah_put(), even if its AH is destroyed meanwhile.
 *
 * Context: any.
 * Return: the AH's destination with a reference, or NULL if no AH of @pd
 * has @handle.
 */
struct vrdma_ah_dest *vrdma_ah_get(struct vrdma_dev *vdev, u32 handle,
				   struct vrdma_pd *pd)
{
	struct vrdma_ah_dest *dest;
	unsigned long flags;

	xa_lock_irqsave(&vdev->ah_xa, flags);
	dest = xa_load(&vdev->ah_xa, handle);
	if (dest && dest->pd == pd)
		refcount_inc(&dest->refs);
	else
		dest = NULL;
	xa_unlock_irqrestore(&vdev->ah_xa, flags);
	return dest;
}

/**
 * vrdma_ah_put() - drop a reference to an AH's destination
 * @dest: the destination
 *
 * The last one frees it; that may be in atomic context (destroy_ah), and
 * so may what it releases: the GID reference (its entry is freed from a
 * work item) and the per-CPU route cache.
 */
void vrdma_ah_put(struct vrdma_ah_dest *dest)
{
	if (!refcount_dec_and_test(&dest->refs))
		return;
	rdma_put_gid_attr(dest->av.sgid_attr);
	dst_cache_destroy(&dest->av.dst_cache);
	kfree(dest);
}
