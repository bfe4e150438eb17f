// SPDX-License-Identifier: GPL-2.0
/*
 * The single RoCEv2 port of a vrdma device.
 *
 * Everything a port reports is derived from the bound netdev when asked:
 * the port is ACTIVE exactly when the netdev is up with carrier, and its
 * active MTU is the largest IB MTU whose packets fit the netdev MTU.  The
 * GID table is ib_core's: it fills it from the netdev's IP addresses.
 */
#include <linux/netdevice.h>
#include <rdma/ib_addr.h>
#include <rdma/ib_cache.h>
#include <rdma/ib_mad.h>

#include "vrdma.h"

static bool vrdma_netdev_active(struct net_device *ndev)
{
	return netif_running(ndev) && netif_carrier_ok(ndev);
}

/**
 * vrdma_active_mtu() - the port's active MTU
 * @ndev: the bound netdev
 *
 * Cheap and lock-free, unlike a whole vrdma_query_port(), whose
 * ib_get_eth_speed() takes the RTNL: modify_qp, under the QP's mutex,
 * must not (rdma_cm holds its own mutexes around modify_qp, and takes
 * them under the RTNL elsewhere).
 *
 * Return: the largest IB MTU whose RoCEv2 packets fit in the netdev MTU.
 */
enum ib_mtu vrdma_active_mtu(struct net_device *ndev)
{
	enum ib_mtu mtu = iboe_get_mtu(READ_ONCE(ndev->mtu));

	/* IB has nothing below 256; such a link is unusable anyway. */
	return mtu ? mtu : IB_MTU_256;
}

/**
 * vrdma_query_port() - report the port's attributes
 * @ibdev: the device
 * @port: always VRDMA_PORT (ib_core checks the range)
 * @attr: zeroed by ib_core; filled here
 *
 * A netdev on its way out (unregistering, or already let go of by ib_core)
 * has no speed: the port is reported down rather than the query failed,
 * which ib_core's cache update would log as a warning each time.
 *
 * Return: 0 or the error of ib_get_eth_speed().
 */
int vrdma_query_port(struct ib_device *ibdev, u32 port,
		     struct ib_port_attr *attr)
{
	struct net_device *ndev = to_vdev(ibdev)->ndev;
	int ret;

	if (vrdma_netdev_active(ndev)) {
		attr->state = IB_PORT_ACTIVE;
		attr->phys_state = IB_PORT_PHYS_STATE_LINK_UP;
	} else {
		attr->state = IB_PORT_DOWN;
		attr->phys_state = netif_running(ndev) ?
				   IB_PORT_PHYS_STATE_POLLING :
				   IB_PORT_PHYS_STATE_DISABLED;
	}
	attr->max_mtu = IB_MTU_4096;
	attr->active_mtu = vrdma_active_mtu(ndev);
	attr->gid_tbl_len = VRDMA_GID_TABLE_LEN;
	attr->pkey_tbl_len = VRDMA_MAX_PKEYS;
	attr->max_msg_sz = 1U << 31;	/* the IBA maximum */
	attr->max_vl_num = 1;
	attr->ip_gids = true;
	ret = ib_get_eth_speed(ibdev, port, &attr->active_speed,
			       &attr->active_width);
	if (ret == -ENODEV) {
		attr->state = IB_PORT_DOWN;
		attr->phys_state = IB_PORT_PHYS_STATE_DISABLED;
		attr->active_speed = IB_SPEED_SDR;
		attr->active_width = IB_WIDTH_1X;
		ret = 0;
	}
	return ret;
}

/**
 * vrdma_get_port_immutable() - the port properties fixed at registration
 * @ibdev: the device
 * @port: VRDMA_PORT
 * @immutable: filled here
 *
 * Marking the port RoCE with UDP encapsulation (RoCEv2) is what makes
 * ib_core manage a RoCEv2 GID table bound to the netdev.
 *
 * Return: 0
 */
int vrdma_get_port_immutable(struct ib_device *ibdev, u32 port,
			     struct ib_port_immutable *immutable)
{
	immutable->core_cap_flags = RDMA_CORE_PORT_IBA_ROCE_UDP_ENCAP;
	immutable->pkey_tbl_len = VRDMA_MAX_PKEYS;
	immutable->gid_tbl_len = VRDMA_GID_TABLE_LEN;
	immutable->max_mad_size = IB_MGMT_MAD_SIZE;
	return 0;
}

/**
 * vrdma_query_pkey() - the P_Key table has one entry, the default full key
 * @ibdev: the device
 * @port: VRDMA_PORT
 * @index: table index
 * @pkey: filled with the key
 *
 * Return: 0, or -EINVAL for an index past the table.
 */
int vrdma_query_pkey(struct ib_device *ibdev, u32 port, u16 index, u16 *pkey)
{
	if (index >= VRDMA_MAX_PKEYS)
		return -EINVAL;
	*pkey = IB_DEFAULT_PKEY_FULL;
	return 0;
}

/**
 * vrdma_port_mtu() - the port's active MTU in bytes
 * @vdev: the device
 *
 * What query_port reports as active_mtu, cheaply: the size limit of a UD
 * message, checked per packet.
 *
 * Return: 256 to 4096.
 */
u32 vrdma_port_mtu(struct vrdma_dev *vdev)
{
	return ib_mtu_enum_to_int(vrdma_active_mtu(vdev->ndev));
}

enum rdma_link_layer vrdma_get_link_layer(struct ib_device *ibdev, u32 port)
{
	return IB_LINK_LAYER_ETHERNET;
}

/**
 * vrdma_port_update() - tell ib_core's users when the port state changed
 * @vdev: a registered device
 *
 * Called under RTNL from netdev events, which serialises the updates of
 * @vdev->port_active.  Consumers see IB_EVENT_PORT_ACTIVE/IB_EVENT_PORT_ERR
 * (ibv_get_async_event in user space).
 */
void vrdma_port_update(struct vrdma_dev *vdev)
{
	bool active = vrdma_netdev_active(vdev->ndev);
	struct ib_event event = {
		.device = &vdev->ibdev,
		.element.port_num = VRDMA_PORT,
	};

	ASSERT_RTNL();
	if (active == vdev->port_active)
		return;
	vdev->port_active = active;
	event.event = active ? IB_EVENT_PORT_ACTIVE : IB_EVENT_PORT_ERR;
	ib_dispatch_event(&event);
}
