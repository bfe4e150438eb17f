// SPDX-License-Identifier: GPL-2.0
/*
 * The Ethernet side of vrdma: what happens to a device when its netdev
 * changes.  (The RoCEv2 UDP tunnel will live here too.)
 */
#include <linux/netdevice.h>

#include "vrdma.h"

static int vrdma_netdev_event(struct notifier_block *nb, unsigned long event,
			      void *ptr)
{
	struct net_device *ndev = netdev_notifier_info_to_dev(ptr);
	struct vrdma_dev *vdev;

	vdev = vrdma_get_dev_by_netdev(ndev);
	if (!vdev)
		return NOTIFY_DONE;

	switch (event) {
	case NETDEV_UNREGISTER:
		/*
		 * The netdev waits for our reference; unregistration cannot
		 * run under RTNL, so it is queued.
		 */
		ib_unregister_device_queued(&vdev->ibdev);
		break;
	case NETDEV_UP:
	case NETDEV_DOWN:
	case NETDEV_CHANGE:
		vrdma_port_update(vdev);
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
 * vrdma_net_init() - start following netdev events
 *
 * Return: 0 or a negative errno.
 */
int vrdma_net_init(void)
{
	return register_netdevice_notifier(&vrdma_netdev_notifier);
}

/**
 * vrdma_net_exit() - stop following netdev events; devices are gone already
 */
void vrdma_net_exit(void)
{
	unregister_netdevice_notifier(&vrdma_netdev_notifier);
}
