// SPDX-License-Identifier: GPL-2.0
/*
 * UD multicast: groups of QPs that one datagram reaches together.
 *
 * A multicast group is named by its MGID, which for RoCEv2 is an IP
 * multicast address: IPv4-mapped (::ffff:224.1.2.3) or IPv6 (ff0e::1).
 * ibv_attach_mcast() puts a UD QP into a group of its device, and
 * ibv_detach_mcast() takes it out; each device keeps its groups here, each
 * with the list of its QPs.  A group exists while it has QPs.
 *
 * Sending needs nothing of this file: a UD send through an AH whose
 * destination GID is a multicast address becomes an IP multicast packet
 * (ud.c, net.c) with destination QPN 0xFFFFFF, the multicast QPN.
 *
 * Receiving: a packet with that QPN is for the group its destination IP
 * address names; each QP of the group on the receiving device gets a copy,
 * and checks it (Q_Key, receive WQE) as any UD packet (ud.c).  The packets
 * arrive through the IP stack's UDP socket (net.c), which accepts
 * multicast only for groups the netdev has joined: so while a group exists
 * its netdev is a member at the IP level (IGMP, MLD) and its multicast MAC
 * is in the netdev's filter, as a RoCE NIC programs its own.  The QPs of
 * the sending device in the group get a copy too, as on real hardware,
 * delivered inside the driver (net.c): a copy that IP loops back could as
 * well come from any local socket, and is not accepted.
 *
 * Limits (query_device): max_mcast_grp groups per device,
 * max_mcast_qp_attach QPs per group, max_total_mcast_qp_attach attachments
 * per device.  Past them attach fails with -ENOMEM.
 */
#include <linux/etherdevice.h>
#include <linux/igmp.h>
#include <linux/inetdevice.h>
#include <linux/rtnetlink.h>
#include <net/addrconf.h>
#include <net/if_inet6.h>
#include <net/ip.h>
#include <net/ipv6.h>
#include <rdma/ib_addr.h>

#include "pkt.h"
#include "vrdma.h"

/**
 * struct vrdma_mcg - a multicast group of a device
 * @list: entry in vrdma_mcast.groups
 * @mgid: its MGID
 * @members: the attached QPs (struct vrdma_mca)
 * @num_qps: entries of @members
 */
struct vrdma_mcg {
	struct list_head list;
	union ib_gid mgid;
	struct list_head members;
	u32 num_qps;
};

/**
 * struct vrdma_mca - a QP attached to a group
 * @list: entry in vrdma_mcg.members
 * @qp: the QP; valid while listed: destroy_qp takes it out first
 */
struct vrdma_mca {
	struct list_head list;
	struct vrdma_qp *qp;
};

/**
 * struct vrdma_mcast - the multicast groups of a device
 * @mutex: serialises attach, detach and QP cleanup, which may sleep
 *	(joining a group at the IP level)
 * @lock: protects the lists, which the receive path walks in softirq
 * @groups: the groups (struct vrdma_mcg); a few hundred at most, so a
 *	list is searched
 * @num_groups: entries of @groups, held to max_mcast_grp
 * @num_attached: attachments in all groups, held to
 *	max_total_mcast_qp_attach
 */
struct vrdma_mcast {
	struct mutex mutex;	/* see above */
	spinlock_t lock;	/* see above */
	struct list_head groups;
	u32 num_groups;
	u32 num_attached;
};

/* Context: mc->lock or mc->mutex held. */
static struct vrdma_mcg *vrdma_mcg_find(struct vrdma_mcast *mc,
					const union ib_gid *mgid)
{
	struct vrdma_mcg *mcg;

	list_for_each_entry(mcg, &mc->groups, list)
		if (!memcmp(&mcg->mgid, mgid, sizeof(*mgid)))
			return mcg;
	return NULL;
}

/*
 * Make the netdev receive (@join) or stop receiving the group's packets:
 * its multicast MAC (01:00:5e:... for IPv4, 33:33:... for IPv6, as
 * ib_core's ib_resolve_eth_dmac() maps them for senders) in the filter,
 * and IP membership, without which the IP stack drops them before our UDP
 * socket sees them.  Both are counted, so rdma_cm's own IPv4 join
 * (cma_igmp_send()) and ours add up.
 */
static int vrdma_mcg_netdev(struct vrdma_dev *vdev, const union ib_gid *mgid,
			    bool join)
{
	const struct in6_addr *addr6 = (const struct in6_addr *)mgid->raw;
	bool ipv4 = ipv6_addr_v4mapped(addr6);
	bool ipv6 = !ipv4 && IS_ENABLED(CONFIG_IPV6) && ipv6_mod_enabled();
	struct net_device *ndev = vdev->ndev;
	struct in_device *in_dev;
	u8 mac[ETH_ALEN];
	int ret = 0;

	if (ipv4)
		ip_eth_mc_map(addr6->s6_addr32[3], mac);
	else
		ipv6_eth_mc_map(addr6, mac);

	if (join) {
		ret = dev_mc_add(ndev, mac);
		if (ret)
			return ret;
	}
	/* IGMP and MLD membership changes are made under RTNL. */
	rtnl_lock();
	if (ipv4) {
		in_dev = __in_dev_get_rtnl(ndev);
		if (in_dev && join)
			ip_mc_inc_group(in_dev, addr6->s6_addr32[3]);
		else if (in_dev)
			ip_mc_dec_group(in_dev, addr6->s6_addr32[3]);
	} else if (ipv6 && join) {
		ret = ipv6_dev_mc_inc(ndev, addr6);
	} else if (ipv6) {
		ipv6_dev_mc_dec(ndev, addr6);
	}
	rtnl_unlock();
	if (join && ret) {
		dev_mc_del(ndev, mac);
		return ret;
	}
	/* Unregistering the netdev may have flushed its list already. */
	if (!join)
		dev_mc_del(ndev, mac);
	return 0;
}

/* Take @mca out of @mcg, and the group out of the device when empty. */
static void vrdma_mca_del(struct vrdma_dev *vdev, struct vrdma_mcg *mcg,
			  struct vrdma_mca *mca)
{
	struct vrdma_mcast *mc = vdev->mcast;
	bool empty;

	lockdep_assert_held(&mc->mutex);
	spin_lock_bh(&mc->lock);
	list_del(&mca->list);
	empty = !--mcg->num_qps;
	if (empty)
		list_del(&mcg->list);
	spin_unlock_bh(&mc->lock);
	kfree(mca);
	mc->num_attached--;
	if (empty) {
		mc->num_groups--;
		vrdma_mcg_netdev(vdev, &mcg->mgid, false);
		kfree(mcg);
	}
}

/**
 * vrdma_attach_mcast() - attach a UD QP to a multicast group
 *	(ib_device_ops.attach_mcast)
 * @ibqp: the QP
 * @gid: the MGID: an IPv4-mapped or IPv6 multicast address
 * @lid: unused on RoCE (ib_core checks it)
 *
 * The first QP of a group creates it and makes the netdev a member.
 *
 * Context: process, may sleep.
 * Return: 0, -EINVAL for a QP that is not UD or a GID that is not
 * multicast, -EEXIST if the QP is attached already, -ENOMEM past a limit.
 */
int vrdma_attach_mcast(struct ib_qp *ibqp, union ib_gid *gid, u16 lid)
{
	struct vrdma_qp *qp = to_vqp(ibqp);
	struct vrdma_dev *vdev = qp->vdev;
	struct vrdma_mcast *mc = vdev->mcast;
	struct vrdma_mcg *mcg, *new = NULL;
	struct vrdma_mca *mca;
	int ret;

	if (ibqp->qp_type != IB_QPT_UD ||
	    !rdma_is_multicast_addr((struct in6_addr *)gid->raw))
		return -EINVAL;

	mutex_lock(&mc->mutex);
	mcg = vrdma_mcg_find(mc, gid);
	if (mcg) {
		list_for_each_entry(mca, &mcg->members, list) {
			if (mca->qp == qp) {
				ret = -EEXIST;
				goto unlock;
			}
		}
	}
	ret = -ENOMEM;
	if ((mcg && mcg->num_qps >= vdev->attr.max_mcast_qp_attach) ||
	    (!mcg && mc->num_groups >= vdev->attr.max_mcast_grp) ||
	    mc->num_attached >= vdev->attr.max_total_mcast_qp_attach)
		goto unlock;
	mca = kzalloc(sizeof(*mca), GFP_KERNEL);
	if (!mca)
		goto unlock;
	mca->qp = qp;

	if (!mcg) {
		new = kzalloc(sizeof(*new), GFP_KERNEL);
		if (!new)
			goto err_mca;
		new->mgid = *gid;
		INIT_LIST_HEAD(&new->members);
		ret = vrdma_mcg_netdev(vdev, gid, true);
		if (ret)
			goto err_mcg;
		mcg = new;
		mc->num_groups++;
	}
	spin_lock_bh(&mc->lock);
	if (new)
		list_add_tail(&new->list, &mc->groups);
	list_add_tail(&mca->list, &mcg->members);
	mcg->num_qps++;
	spin_unlock_bh(&mc->lock);
	mc->num_attached++;
	mutex_unlock(&mc->mutex);
	return 0;

err_mcg:
	kfree(new);
err_mca:
	kfree(mca);
unlock:
	mutex_unlock(&mc->mutex);
	return ret;
}

/**
 * vrdma_detach_mcast() - detach a QP from a multicast group
 *	(ib_device_ops.detach_mcast)
 * @ibqp: the QP
 * @gid: the MGID
 * @lid: unused on RoCE
 *
 * The last QP to leave a group deletes it and the netdev's membership.
 *
 * Context: process, may sleep.
 * Return: 0, or -EINVAL if @ibqp is not attached to @gid.
 */
int vrdma_detach_mcast(struct ib_qp *ibqp, union ib_gid *gid, u16 lid)
{
	struct vrdma_qp *qp = to_vqp(ibqp);
	struct vrdma_dev *vdev = qp->vdev;
	struct vrdma_mcast *mc = vdev->mcast;
	struct vrdma_mcg *mcg;
	struct vrdma_mca *mca;
	int ret = -EINVAL;

	mutex_lock(&mc->mutex);
	mcg = vrdma_mcg_find(mc, gid);
	if (mcg) {
		list_for_each_entry(mca, &mcg->members, list) {
			if (mca->qp == qp) {
				vrdma_mca_del(vdev, mcg, mca);
				ret = 0;
				break;
			}
		}
	}
	mutex_unlock(&mc->mutex);
	return ret;
}

/**
 * vrdma_mcast_qp_destroy() - detach a QP being destroyed from every group
 * @qp: the QP
 *
 * ib_core detaches what its consumers attached before it destroys a QP
 * (uverbs on a process's exit; a kernel QP cannot be destroyed while
 * attached), so this normally finds nothing; it makes sure that no group
 * keeps a pointer to a freed QP.
 *
 * Context: process, may sleep.
 */
void vrdma_mcast_qp_destroy(struct vrdma_qp *qp)
{
	struct vrdma_dev *vdev = qp->vdev;
	struct vrdma_mcast *mc = vdev->mcast;
	struct vrdma_mcg *mcg, *next;
	struct vrdma_mca *mca;

	if (!vrdma_qp_is_ud(qp))
		return;
	mutex_lock(&mc->mutex);
	list_for_each_entry_safe(mcg, next, &mc->groups, list) {
		list_for_each_entry(mca, &mcg->members, list) {
			if (mca->qp == qp) {
				/* May free mcg, not next. */
				vrdma_mca_del(vdev, mcg, mca);
				break;
			}
		}
	}
	mutex_unlock(&mc->mutex);
}

/**
 * vrdma_mcast_rcv() - deliver a packet for the multicast QPN to its group
 * @vdev: the receiving device
 * @skb: a checked packet (see vrdma_rcv()) whose destination QPN is
 *	VRDMA_MCAST_QPN; consumed
 * @bytes: its length from the IP header on, for rcvd_bytes
 *
 * Only UD SENDs to an IP multicast address are multicast packets; others
 * are malformed.  Every QP of the group gets a copy (a clone: the data is
 * only read), which its task checks against its own Q_Key.  The packet is
 * counted once, in rcvd_pkts and mcast_rcvd_pkts, or in no_qp when the
 * device has no QP in that group.
 *
 * Context: softirq.
 */
void vrdma_mcast_rcv(struct vrdma_dev *vdev, struct sk_buff *skb,
		     unsigned int bytes)
{
	struct vrdma_mcast *mc = vdev->mcast;
	struct vrdma_pkt *pkt = vrdma_pkt(skb);
	struct vrdma_mcg *mcg;
	struct vrdma_mca *mca;
	union ib_gid mgid;
	unsigned int n = 0;

	if (!(pkt->mask & VRDMA_OPF_UD))
		goto malformed;
	if (ip_hdr(skb)->version == 4) {
		if (!ipv4_is_multicast(ip_hdr(skb)->daddr))
			goto malformed;
		ipv6_addr_set_v4mapped(ip_hdr(skb)->daddr,
				       (struct in6_addr *)mgid.raw);
	} else {
		if (!ipv6_addr_is_multicast(&ipv6_hdr(skb)->daddr))
			goto malformed;
		memcpy(mgid.raw, &ipv6_hdr(skb)->daddr, sizeof(mgid));
	}

	spin_lock_bh(&mc->lock);
	mcg = vrdma_mcg_find(mc, &mgid);
	if (mcg) {
		list_for_each_entry(mca, &mcg->members, list) {
			struct sk_buff *copy;

			if (!refcount_inc_not_zero(&mca->qp->refs))
				continue;
			copy = skb_clone(skb, GFP_ATOMIC);
			if (copy) {
				vrdma_qp_rcv(mca->qp, copy);
				n++;
			}
			vrdma_qp_put(mca->qp);
		}
	}
	spin_unlock_bh(&mc->lock);

	if (!n) {
		vrdma_count(vdev, VRDMA_CNT_NO_QP);
		kfree_skb(skb);
		return;
	}
	vrdma_count(vdev, VRDMA_CNT_RCVD_PKTS);
	vrdma_count_add(vdev, VRDMA_CNT_RCVD_BYTES, bytes);
	vrdma_count(vdev, VRDMA_CNT_MCAST_RCVD);
	consume_skb(skb);
	return;

malformed:
	vrdma_count(vdev, VRDMA_CNT_MALFORMED);
	kfree_skb(skb);
}

/**
 * vrdma_mcast_member() - whether @vdev has QPs in the group @mgid
 * @vdev: the device
 * @mgid: the group's MGID
 *
 * Context: any but hard interrupt.
 */
bool vrdma_mcast_member(struct vrdma_dev *vdev, const union ib_gid *mgid)
{
	struct vrdma_mcast *mc = vdev->mcast;
	bool member;

	spin_lock_bh(&mc->lock);
	member = vrdma_mcg_find(mc, mgid);
	spin_unlock_bh(&mc->lock);
	return member;
}

/**
 * vrdma_mcast_dev_init() - a device's (empty) set of groups
 * @vdev: the device being created
 *
 * Return: 0 or -ENOMEM.
 */
int vrdma_mcast_dev_init(struct vrdma_dev *vdev)
{
	struct vrdma_mcast *mc;

	mc = kzalloc(sizeof(*mc), GFP_KERNEL);
	if (!mc)
		return -ENOMEM;
	mutex_init(&mc->mutex);
	spin_lock_init(&mc->lock);
	INIT_LIST_HEAD(&mc->groups);
	vdev->mcast = mc;
	return 0;
}

/**
 * vrdma_mcast_dev_fini() - free a device's groups
 * @vdev: the device, unregistered: its QPs are destroyed, and with them
 *	every attachment
 */
void vrdma_mcast_dev_fini(struct vrdma_dev *vdev)
{
	struct vrdma_mcast *mc = vdev->mcast;

	if (!mc)
		return;
	WARN_ON(!list_empty(&mc->groups));
	mutex_destroy(&mc->mutex);
	kfree(mc);
	vdev->mcast = NULL;
}
