// SPDX-License-Identifier: GPL-2.0
/*
 * The bound netdev and this host's addresses: what happens to a device
 * when its netdev changes, which device a netdev is bound to, and whether
 * a destination is an address of this host (the packets to it are then
 * delivered inside the driver, net.c, or the loopback path moves whole
 * messages, loopback.c).
 */
#include <linux/if_vlan.h>
#include <linux/inetdevice.h>
#include <linux/netdevice.h>
#include <net/addrconf.h>
#include <net/ip.h>
#include <net/ipv6.h>
#include <net/ipv6_stubs.h>
#include <net/route.h>

#include "vrdma.h"

static int vrdma_netdev_event(struct notifier_block *nb, unsigned long event,
			      void *ptr)
{
	struct net_device *ndev = netdev_notifier_info_to_dev(ptr);
	struct vrdma_dev *vdev;

	vdev = vrdma_get_dev_by_netdev_rcu(ndev);
	if (!vdev)
		return NOTIFY_DONE;

	switch (event) {
	case NETDEV_UNREGISTER:
		/*
		 * The netdev waits for our reference; unregistration cannot
		 * run under RTNL, so it is queued.  The packet tap of the
		 * flows (raw.c) goes now.
		 */
		vrdma_raw_netdev_gone(vdev);
		ib_unregister_device_queued(&vdev->ibdev);
		break;
	case NETDEV_UP:
	case NETDEV_DOWN:
	case NETDEV_CHANGE:
		vrdma_port_update(vdev);
		break;
	case NETDEV_CHANGENAME:
		vrdma_parent_rename(vdev);
		break;
	default:
		/* MTU and addresses are read when queried; GIDs are ib_core's. */
		break;
	}

	ib_device_put(&vdev->ibdev);
	return NOTIFY_OK;
}

static struct notifier_block vrdma_netdev_notifier = {
	.notifier_call = vrdma_netdev_event,
};

/**
 * vrdma_dev_by_ndev() - the device bound to a netdev
 * @ndev: the netdev, or NULL
 *
 * The registered device on @ndev, or on the netdev under it if @ndev is a
 * VLAN: ib_core puts the addresses of VLANs on top of our netdev in our
 * GID table.
 *
 * Context: RCU.
 * Return: the device, referenced (ib_device_put()), or NULL.
 */
struct vrdma_dev *vrdma_dev_by_ndev(struct net_device *ndev)
{
	struct vrdma_dev *vdev;

	if (!ndev)
		return NULL;
	vdev = vrdma_get_dev_by_netdev_rcu(ndev);
	if (!vdev && is_vlan_dev(ndev))
		vdev = vrdma_get_dev_by_netdev_rcu(vlan_dev_real_dev(ndev));
	return vdev;
}

/**
 * vrdma_addr_ndev() - the netdev of this host that has an address
 * @net: the namespace
 * @ipv6: which of @addr4 and @addr6 to look up
 * @addr4: an IPv4 address
 * @addr6: an IPv6 address
 *
 * Context: RCU.
 * Return: the netdev, or NULL if it is not an address of this host.
 */
struct net_device *vrdma_addr_ndev(struct net *net, bool ipv6, __be32 addr4,
				   const struct in6_addr *addr6)
{
	if (!ipv6)
		return __ip_dev_find(net, addr4, false);
	/*
	 * With ipv6.disable=1 there is no address table to look in, yet the
	 * default GID (fe80::, from the MAC) still gives an IPv6 path; its
	 * packets fail at the route lookup.
	 */
	if (!IS_ENABLED(CONFIG_IPV6) || !ipv6_mod_enabled())
		return NULL;
	return ipv6_dev_find(net, addr6, NULL);
}

/*
 * The generation of what vrdma_addr_ndev() answers from: IP bumps its
 * count of @net's addresses of a family whenever one is added (for IPv6,
 * also when one becomes usable after duplicate address detection) or
 * removed, after the change can be seen.  IPv4 also asks the FIB's local
 * table, whose changes bump the route generation.  Both only grow.
 */
static u32 vrdma_addr_gen(struct net *net, bool ipv6)
{
#if IS_ENABLED(CONFIG_IPV6)
	if (ipv6)
		return atomic_read(&net->ipv6.dev_addr_genid);
#endif
	return atomic_read(&net->ipv4.dev_addr_genid) + rt_genid_ipv4(net);
}

/* vrdma_av.remote: "remote" and the generation it was learnt at. */
#define VRDMA_AV_REMOTE		BIT_ULL(32)

/**
 * vrdma_av_local_ndev() - the netdev of this host a path leads to
 * @net: the namespace of the sending device's netdev
 * @av: the path
 *
 * vrdma_addr_ndev() for the path's destination address.  Every
 * packet asks, and the tables cost a hash lookup, with a FIB lookup
 * besides for IPv4 (__ip_dev_find()).  So the answer "remote" is kept in
 * the path until @net's addresses change (vrdma_addr_gen(), read before
 * the lookup: an address added after it changes the generation), as IP's
 * own caches of source addresses are.  The answer "local" is not kept:
 * the device that has the address may go.
 *
 * Context: RCU.
 * Return: the netdev, or NULL if the destination is not this host.
 */
struct net_device *vrdma_av_local_ndev(struct net *net, struct vrdma_av *av)
{
	u64 remote = VRDMA_AV_REMOTE | vrdma_addr_gen(net, av->ipv6);
	struct net_device *ndev;

	if (atomic64_read(&av->remote) == remote)
		return NULL;
	smp_rmb();	/* the generation before the tables */
	ndev = vrdma_addr_ndev(net, av->ipv6, av->daddr4, &av->daddr6);
	if (!ndev)
		atomic64_set(&av->remote, remote);
	return ndev;
}

/**
 * vrdma_ndev_active() - whether a netdev carries packets: up, with carrier
 * @ndev: the netdev
 *
 * Return: true if it does.
 */
bool vrdma_ndev_active(struct net_device *ndev)
{
	return netif_running(ndev) && netif_carrier_ok(ndev);
}

/**
 * vrdma_pkt_local() - whether packets on @av stay inside this host
 * @vdev: the sending device
 * @av: the path
 *
 * True when the destination is an address of the namespace of @vdev's
 * netdev: vrdma_pkt_send() then delivers to the device that has it, inside
 * the driver.
 *
 * Context: any.
 */
bool vrdma_pkt_local(struct vrdma_dev *vdev, struct vrdma_av *av)
{
	bool local;

	rcu_read_lock();
	local = vrdma_av_local_ndev(dev_net(vdev->ndev), av);
	rcu_read_unlock();
	return local;
}

/**
 * vrdma_local_dev() - the device of this host that @av leads to
 * @vdev: the sending device
 * @av: the path
 *
 * The device vrdma_pkt_send() would deliver a packet on @av to inside the
 * driver, for the loopback path (loopback.c), which moves a whole message
 * without packets.
 *
 * Context: any.
 * Return: that device, referenced (ib_device_put()), if both ports are
 * up; else NULL.
 */
struct vrdma_dev *vrdma_local_dev(struct vrdma_dev *vdev, struct vrdma_av *av)
{
	struct vrdma_dev *ldev;

	rcu_read_lock();
	ldev = vrdma_dev_by_ndev(vrdma_av_local_ndev(dev_net(vdev->ndev), av));
	rcu_read_unlock();
	if (ldev && (!vrdma_ndev_active(vdev->ndev) ||
		     !vrdma_ndev_active(ldev->ndev))) {
		ib_device_put(&ldev->ibdev);
		ldev = NULL;
	}
	return ldev;
}

/**
 * vrdma_netdev_init() - start following netdev events
 *
 * Return: 0 or a negative errno.
 */
int vrdma_netdev_init(void)
{
	return register_netdevice_notifier(&vrdma_netdev_notifier);
}

/**
 * vrdma_netdev_exit() - stop following them
 */
void vrdma_netdev_exit(void)
{
	unregister_netdevice_notifier(&vrdma_netdev_notifier);
}
