// SPDX-License-Identifier: GPL-2.0
/*
 * vrdma module entry: the "vrdma" rdma link type and the list of devices.
 *
 * A device is created by user space with
 *	rdma link add vrdma0 type vrdma netdev eth0
 * which lands in vrdma_newlink(), and removed by "rdma link delete", by the
 * netdev going away, or by unloading the module.
 */
#include <linux/module.h>
#include <linux/if_arp.h>
#include <rdma/rdma_netlink.h>

#include "vrdma.h"

/* Writers hold the mutex; the packet receive path reads under RCU. */
static DEFINE_MUTEX(vrdma_devices_lock);
static LIST_HEAD(vrdma_devices);

/**
 * vrdma_get_dev_by_netdev_rcu() - find the registered device bound to @ndev
 * @ndev: a netdev
 *
 * Context: any; takes rcu_read_lock itself.
 * Return: the device with a registration reference held (release it with
 * ib_device_put()), or NULL if no registered vrdma device uses @ndev.
 */
struct vrdma_dev *vrdma_get_dev_by_netdev_rcu(struct net_device *ndev)
{
	struct vrdma_dev *vdev, *found = NULL;

	rcu_read_lock();
	list_for_each_entry_rcu(vdev, &vrdma_devices, list) {
		if (vdev->ndev == ndev && ib_device_try_get(&vdev->ibdev)) {
			found = vdev;
			break;
		}
	}
	rcu_read_unlock();
	return found;
}

/**
 * vrdma_dev_list_add() - claim @vdev->ndev for @vdev
 * @vdev: a device that is not registered yet
 *
 * A netdev carries at most one vrdma device: two would fight over its GIDs
 * and over the packets sent to them.
 *
 * Return: 0, or -EBUSY if another vrdma device is bound to the netdev.
 */
static int vrdma_dev_list_add(struct vrdma_dev *vdev)
{
	struct vrdma_dev *other;
	int ret = 0;

	mutex_lock(&vrdma_devices_lock);
	list_for_each_entry(other, &vrdma_devices, list) {
		if (other->ndev == vdev->ndev) {
			ret = -EBUSY;
			break;
		}
	}
	if (!ret)
		list_add_tail_rcu(&vdev->list, &vrdma_devices);
	mutex_unlock(&vrdma_devices_lock);
	return ret;
}

/**
 * vrdma_dev_list_del() - forget @vdev, as it is freed
 * @vdev: a device on the list, or one never added
 *
 * Waits until no RCU reader can still see it.
 */
void vrdma_dev_list_del(struct vrdma_dev *vdev)
{
	mutex_lock(&vrdma_devices_lock);
	if (!list_empty(&vdev->list))
		list_del_rcu(&vdev->list);
	mutex_unlock(&vrdma_devices_lock);
	synchronize_rcu();
}

static int vrdma_newlink(const char *ibdev_name, struct net_device *ndev)
{
	/* The provider binds to devices by this name prefix. */
	if (strncmp(ibdev_name, VRDMA_DEVICE_NAME_PREFIX,
		    strlen(VRDMA_DEVICE_NAME_PREFIX))) {
		pr_info("vrdma: device names must start with \"%s\"\n",
			VRDMA_DEVICE_NAME_PREFIX);
		return -EINVAL;
	}
	if (ndev->type != ARPHRD_ETHER) {
		pr_info("vrdma: %s is not an Ethernet device\n", ndev->name);
		return -EINVAL;
	}
	if (netif_is_bond_slave(ndev) || netif_is_lag_port(ndev)) {
		pr_info("vrdma: %s is enslaved to a bond\n", ndev->name);
		return -EINVAL;
	}
	return vrdma_dev_add(ibdev_name, ndev);
}

static struct rdma_link_ops vrdma_link_ops = {
	.type = "vrdma",
	.newlink = vrdma_newlink,
};

/**
 * vrdma_dev_register() - claim the netdev and register @vdev with ib_core
 * @vdev: an allocated device with ->ndev set
 * @name: the ib_device name user space asked for
 *
 * On error the caller frees @vdev with ib_dealloc_device(), whose
 * dealloc_driver takes it off the list again.
 *
 * Return: 0 or a negative errno.
 */
int vrdma_dev_register(struct vrdma_dev *vdev, const char *name)
{
	int ret;

	ret = vrdma_dev_list_add(vdev);
	if (ret)
		return ret;

	ret = ib_register_device(&vdev->ibdev, name, NULL);
	if (!ret)
		vrdma_debugfs_dev_add(vdev);
	return ret;
}

/*
 * Unregister every device.  The link type is gone already, so the list only
 * shrinks.  ib_unregister_device() waits for an unregistration the netdev
 * notifier may have queued for the same device, so when it returns the
 * device's dealloc_driver has run and it is off the list.
 */
static void vrdma_unregister_all(void)
{
	struct vrdma_dev *vdev;

	for (;;) {
		mutex_lock(&vrdma_devices_lock);
		vdev = list_first_entry_or_null(&vrdma_devices,
						struct vrdma_dev, list);
		if (vdev)
			get_device(&vdev->ibdev.dev);
		mutex_unlock(&vrdma_devices_lock);
		if (!vdev)
			break;
		ib_unregister_device(&vdev->ibdev);
		put_device(&vdev->ibdev.dev);
	}
}

static int __init vrdma_init(void)
{
	int ret;

	vrdma_copy_init();
	ret = vrdma_rss_selftest();
	if (ret)
		return ret;
	ret = vrdma_sched_init();
	if (ret)
		return ret;
	ret = vrdma_parent_init();
	if (ret)
		goto err_qp;
	ret = vrdma_net_init();
	if (ret)
		goto err_parent;

	vrdma_debugfs_init();
	rdma_link_register(&vrdma_link_ops);
	pr_info("vrdma: loaded, uverbs ABI %d\n", VRDMA_UVERBS_ABI_VERSION);
	return 0;

err_parent:
	vrdma_parent_exit();
err_qp:
	vrdma_sched_exit();
	return ret;
}

static void __exit vrdma_exit(void)
{
	/* Waits for any "rdma link add" in progress; none can start after. */
	rdma_link_unregister(&vrdma_link_ops);
	vrdma_unregister_all();
	vrdma_debugfs_exit();
	vrdma_net_exit();
	vrdma_parent_exit();
	vrdma_sched_exit();
	vrdma_txq_exit();
	pr_info("vrdma: unloaded\n");
}

module_init(vrdma_init);
module_exit(vrdma_exit);

MODULE_DESCRIPTION("vrdma: virtual RDMA device over RoCEv2");
MODULE_LICENSE("GPL");
MODULE_ALIAS_RDMA_LINK("vrdma");
