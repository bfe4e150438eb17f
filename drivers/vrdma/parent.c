// SPDX-License-Identifier: GPL-2.0
/*
 * The parent device of a vrdma ib_device, so that user space finds the
 * bound netdev where it looks for a NIC's:
 *
 *	/sys/class/infiniband/vrdma0/device/net/eth0 -> .../net/eth0
 *
 * A RoCE NIC's ib_device hangs under its PCI function, whose net/ holds
 * its netdevs; rdma-core's tests, ibdev2netdev and similar tools list that
 * directory.  A vrdma device may sit on a netdev without a parent (veth,
 * dummy), and a parent shared with other netdevs would list those too, so
 * each device gets a parent of its own, /sys/class/vrdma/linkN (in
 * /sys/devices/virtual/vrdma), with a net/ directory holding one link to
 * the bound netdev.  The link follows the netdev's renames
 * (vrdma_parent_rename(), under RTNL).
 */
#include <linux/device.h>
#include <linux/idr.h>
#include <linux/module.h>
#include <linux/slab.h>

#include "vrdma.h"

/**
 * struct vrdma_parent - the parent device of one vrdma ib_device
 * @dev: the device, of the class "vrdma"
 * @id: the N of its name, linkN
 * @net: its net/ directory
 * @ndev: the netdev the link points to
 * @link: the link's name, the netdev's name; empty while there is none
 */
struct vrdma_parent {
	struct device dev;
	int id;
	struct kobject *net;
	struct net_device *ndev;
	char link[IFNAMSIZ];
};

static struct class *vrdma_class;
static DEFINE_IDA(vrdma_parent_ida);

static void vrdma_parent_release(struct device *dev)
{
	struct vrdma_parent *parent = container_of(dev, struct vrdma_parent,
						   dev);

	ida_free(&vrdma_parent_ida, parent->id);
	kfree(parent);
}

/**
 * vrdma_parent_create() - give @vdev a parent device for @vdev->ndev
 * @vdev: a device not registered yet; ibdev.dev.parent is set
 *
 * The link into net/ is made later, under RTNL (vrdma_parent_link()).
 *
 * Return: 0 or a negative errno.
 */
int vrdma_parent_create(struct vrdma_dev *vdev)
{
	struct vrdma_parent *parent;
	int ret;

	parent = kzalloc(sizeof(*parent), GFP_KERNEL);
	if (!parent)
		return -ENOMEM;
	parent->id = ida_alloc(&vrdma_parent_ida, GFP_KERNEL);
	if (parent->id < 0) {
		ret = parent->id;
		kfree(parent);
		return ret;
	}
	parent->ndev = vdev->ndev;
	device_initialize(&parent->dev);
	parent->dev.class = vrdma_class;
	parent->dev.release = vrdma_parent_release;
	ret = dev_set_name(&parent->dev, "link%d", parent->id);
	if (!ret)
		ret = device_add(&parent->dev);
	if (ret)
		goto err_put;

	parent->net = kobject_create_and_add("net", &parent->dev.kobj);
	if (!parent->net) {
		ret = -ENOMEM;
		device_del(&parent->dev);
		goto err_put;
	}
	vdev->parent = parent;
	vdev->ibdev.dev.parent = &parent->dev;
	return 0;

err_put:
	put_device(&parent->dev);
	return ret;
}

/**
 * vrdma_parent_link() - put the link to the netdev into net/
 * @vdev: the device
 *
 * Context: RTNL held, so the netdev's name is stable.
 */
void vrdma_parent_link(struct vrdma_dev *vdev)
{
	struct vrdma_parent *parent = vdev->parent;

	ASSERT_RTNL();
	if (parent->link[0])
		return;
	if (sysfs_create_link(parent->net, &parent->ndev->dev.kobj,
			      parent->ndev->name))
		return;	/* only a tool's view of the device is lost */
	strscpy(parent->link, parent->ndev->name, sizeof(parent->link));
}

/**
 * vrdma_parent_rename() - the netdev was renamed: rename the link
 * @vdev: the device
 *
 * Context: RTNL held (NETDEV_CHANGENAME).
 */
void vrdma_parent_rename(struct vrdma_dev *vdev)
{
	struct vrdma_parent *parent = vdev->parent;

	ASSERT_RTNL();
	if (!parent->link[0] || !strcmp(parent->link, parent->ndev->name))
		return;
	/*
	 * Not sysfs_rename_link_ns(): it looks the old link up in the
	 * netdev's namespace tag, and net/ here is no tagged directory.
	 */
	sysfs_remove_link(parent->net, parent->link);
	parent->link[0] = '\0';
	vrdma_parent_link(vdev);
}

/**
 * vrdma_parent_destroy() - remove @vdev's parent device
 * @vdev: the device, unregistered (or never registered)
 *
 * The ib_device keeps a reference on the parent until it is freed itself.
 */
void vrdma_parent_destroy(struct vrdma_dev *vdev)
{
	struct vrdma_parent *parent = vdev->parent;

	if (!parent)
		return;
	vdev->parent = NULL;
	if (parent->link[0])
		sysfs_remove_link(parent->net, parent->link);
	kobject_put(parent->net);
	device_unregister(&parent->dev);
}

/*
 * libibverbs reads <ibdev>/device/modalias and hands it to the providers'
 * match tables: our provider matches VRDMA_MODALIAS there, which stays
 * right when the ib_device is renamed (unlike its name) and needs no
 * rdma_driver_id, whose numbers are ib_core's to give out.  Only the file
 * exists: the uevent carries no MODALIAS, so udev loads no module for it.
 */
static ssize_t modalias_show(struct device *dev, struct device_attribute *attr,
			     char *buf)
{
	return sysfs_emit(buf, "%s\n", VRDMA_MODALIAS);
}
static DEVICE_ATTR_RO(modalias);

static struct attribute *vrdma_parent_attrs[] = {
	&dev_attr_modalias.attr,
	NULL
};
ATTRIBUTE_GROUPS(vrdma_parent);

/* The class of the parents, /sys/class/vrdma; ib_core's messages name it. */
int vrdma_parent_init(void)
{
	vrdma_class = vrdma_class_create("vrdma");
	if (IS_ERR(vrdma_class))
		return PTR_ERR(vrdma_class);
	vrdma_class->dev_groups = vrdma_parent_groups;
	return 0;
}

void vrdma_parent_exit(void)
{
	class_destroy(vrdma_class);
}
