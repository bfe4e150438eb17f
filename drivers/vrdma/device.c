// SPDX-License-Identifier: GPL-2.0
/*
 * The vrdma ib_device: its capabilities and the table of verbs ib_core
 * calls.  A device is allocated per "rdma link add" and freed by
 * vrdma_dealloc_driver() once ib_core has unregistered it.
 */
#include <linux/module.h>
#include <net/addrconf.h>

#include "vrdma.h"

/*
 * The capabilities are fixed for the life of the device; the GUIDs come from
 * the netdev's MAC the way RoCE NICs derive them (EUI-64).
 */
/* The QP table's lock: see vrdma_dev_add(). */
static struct lock_class_key vrdma_qp_xa_key;
static struct lock_class_key vrdma_ah_xa_key;

/*
 * max_mr is 65536: too many for a test to fill quickly.  A device takes
 * the value when it is created, so limits.sh can make one with a small
 * limit and check that it holds.
 */
static unsigned int max_mr = VRDMA_MAX_MR;
module_param(max_mr, uint, 0644);
MODULE_PARM_DESC(max_mr, "MRs per device, 1 to 65536 (read when a device is created)");

static void vrdma_init_attr(struct vrdma_dev *vdev)
{
	struct ib_device_attr *attr = &vdev->attr;

	memset(attr, 0, sizeof(*attr));
	attr->fw_ver = VRDMA_UVERBS_ABI_VERSION;
	attr->sys_image_guid = vdev->ibdev.node_guid;
	attr->max_mr_size = VRDMA_MAX_MR_SIZE;
	attr->page_size_cap = PAGE_SIZE;
	attr->vendor_id = VRDMA_VENDOR_ID;
	attr->vendor_part_id = VRDMA_VENDOR_PART_ID;
	attr->hw_ver = 0;
	attr->max_qp = VRDMA_MAX_QP;
	attr->max_qp_wr = VRDMA_MAX_QP_WR;
	/*
	 * "rdma link delete" may remove the device.  ODP MRs (odp.c) for
	 * every operation of every transport, explicit and implicit.
	 */
	attr->kernel_cap_flags = IBK_ALLOW_USER_UNREG | IBK_ON_DEMAND_PAGING;
	attr->odp_caps.general_caps = IB_ODP_SUPPORT | IB_ODP_SUPPORT_IMPLICIT;
	attr->odp_caps.per_transport_caps.rc_odp_caps = IB_ODP_SUPPORT_SEND |
		IB_ODP_SUPPORT_RECV | IB_ODP_SUPPORT_WRITE |
		IB_ODP_SUPPORT_READ | IB_ODP_SUPPORT_ATOMIC |
		IB_ODP_SUPPORT_SRQ_RECV;
	attr->odp_caps.per_transport_caps.xrc_odp_caps =
		attr->odp_caps.per_transport_caps.rc_odp_caps;
	attr->odp_caps.per_transport_caps.uc_odp_caps = IB_ODP_SUPPORT_SEND |
		IB_ODP_SUPPORT_RECV | IB_ODP_SUPPORT_WRITE |
		IB_ODP_SUPPORT_SRQ_RECV;
	attr->odp_caps.per_transport_caps.ud_odp_caps = IB_ODP_SUPPORT_SEND |
		IB_ODP_SUPPORT_RECV | IB_ODP_SUPPORT_SRQ_RECV;
	attr->device_cap_flags = IB_DEVICE_RC_RNR_NAK_GEN |
				 IB_DEVICE_SYS_IMAGE_GUID |
				 IB_DEVICE_CHANGE_PHY_PORT |
				 IB_DEVICE_MEM_WINDOW |
				 IB_DEVICE_MEM_WINDOW_TYPE_2B |
				 IB_DEVICE_MEM_MGT_EXTENSIONS |
				 IB_DEVICE_SRQ_RESIZE |
				 IB_DEVICE_XRC |
				 VRDMA_DEVICE_PLACEMENT;
	attr->max_send_sge = VRDMA_MAX_SGE;
	attr->max_recv_sge = VRDMA_MAX_SGE;
	attr->max_sge_rd = VRDMA_MAX_SGE;
	attr->max_cq = VRDMA_MAX_CQ;
	attr->max_cqe = VRDMA_MAX_CQE - 1;
	attr->max_mr = clamp_t(unsigned int, READ_ONCE(max_mr), 1, VRDMA_MAX_MR);
	attr->max_mw = VRDMA_MAX_MW;
	attr->max_pd = VRDMA_MAX_PD;
	/*
	 * READs and ATOMICs: a responder resource (max_dest_rd_atomic) is a
	 * small per-QP allocation, so every QP can have the per-QP maximum.
	 * Atomics are 64-bit cmpxchg on the pinned page (vrdma_mr_atomic()):
	 * atomic with respect to every other atomic of vrdma devices.
	 * Masked atomics too, for kernel consumers (RDS sends every atomic
	 * masked); on the wire with vrdma's own opcodes unless the masks make
	 * them plain (pkt.h).
	 */
	attr->max_qp_rd_atom = VRDMA_MAX_RD_ATOMIC;
	attr->max_res_rd_atom = VRDMA_MAX_RD_ATOMIC * VRDMA_MAX_QP;
	attr->max_qp_init_rd_atom = VRDMA_MAX_RD_ATOMIC;
	attr->atomic_cap = IB_ATOMIC_HCA;
	attr->masked_atomic_cap = IB_ATOMIC_HCA;
	attr->max_ah = VRDMA_MAX_AH;
	/* UD multicast: held to these by mcast.c. */
	attr->max_mcast_grp = VRDMA_MAX_MCAST_GRP;
	attr->max_mcast_qp_attach = VRDMA_MAX_MCAST_QP_ATTACH;
	attr->max_total_mcast_qp_attach = VRDMA_MAX_TOTAL_MCAST_QP_ATTACH;
	attr->max_srq = VRDMA_MAX_SRQ;
	attr->max_srq_wr = VRDMA_MAX_SRQ_WR;
	attr->max_srq_sge = VRDMA_MAX_SGE;
	/* Tag matching in software, by the responder (tm.c). */
	attr->tm_caps.flags = IB_TM_CAP_RNDV_RC;
	attr->tm_caps.max_num_tags = VRDMA_TM_MAX_TAGS;
	attr->tm_caps.max_ops = VRDMA_TM_MAX_OPS;
	attr->tm_caps.max_sge = VRDMA_TM_MAX_SGE;
	attr->tm_caps.max_rndv_hdr_size = VRDMA_TM_MAX_RNDV_HDR;
	attr->max_fast_reg_page_list_len = VRDMA_MAX_FAST_REG_PAGES;
	/* Kernel pages mapped into the process (dm.c). */
	attr->max_dm_size = VRDMA_MAX_DM_SIZE;
	attr->max_pkeys = VRDMA_MAX_PKEYS;
	/* RSS: WQs, indirection tables (wq.c). */
	vrdma_wq_attr(attr);
	attr->local_ca_ack_delay = 15;
}

static int vrdma_query_device(struct ib_device *ibdev,
			      struct ib_device_attr *attr,
			      struct ib_udata *udata)
{
	int ret;

	ret = vrdma_udata_check(ibdev, udata, __func__);
	if (ret)
		return ret;
	/* No driver-specific output is defined. */
	if (udata->outlen)
		return -EINVAL;

	*attr = to_vdev(ibdev)->attr;
	return 0;
}

static void vrdma_get_dev_fw_str(struct ib_device *ibdev, char *str)
{
	snprintf(str, IB_FW_VERSION_NAME_MAX, "%d.0.0",
		 VRDMA_UVERBS_ABI_VERSION);
}

/*
 * Called by ib_core as the last step of unregistration (or of a failed
 * registration); nothing of the device is reachable any more.
 */
static void vrdma_dealloc_driver(struct ib_device *ibdev)
{
	struct vrdma_dev *vdev = to_vdev(ibdev);

	vrdma_debugfs_dev_del(vdev);
	vrdma_dev_list_del(vdev);
	vrdma_parent_destroy(vdev);
	if (vdev->net)
		vrdma_net_dev_close(vdev);
	WARN_ON(!xa_empty(&vdev->qp_xa) || !xa_empty(&vdev->mr_xa) ||
		!xa_empty(&vdev->ah_xa) || atomic_read(&vdev->dm_pages));
	xa_destroy(&vdev->qp_xa);
	xa_destroy(&vdev->ah_xa);
	xa_destroy(&vdev->mr_xa);
	kvfree(vdev->mr_key_byte);
	vrdma_mw_dev_fini(vdev);
	vrdma_mcast_dev_fini(vdev);
	vrdma_raw_dev_fini(vdev);
	vrdma_wq_dev_fini(vdev);
	vrdma_xrc_dev_fini(vdev);
	netdev_put(vdev->ndev, &vdev->ndev_tracker);
}

static const struct ib_device_ops vrdma_dev_ops = {
	.owner = THIS_MODULE,
	.driver_id = RDMA_DRIVER_UNKNOWN,
	.uverbs_abi_ver = VRDMA_UVERBS_ABI_VERSION,

	.alloc_dm = vrdma_alloc_dm,
	.alloc_mr = vrdma_alloc_mr,
	.alloc_mw = vrdma_alloc_mw,
	.alloc_pd = vrdma_alloc_pd,
	.alloc_ucontext = vrdma_alloc_ucontext,
	.alloc_xrcd = vrdma_alloc_xrcd,
	.attach_mcast = vrdma_attach_mcast,
	.create_cq = vrdma_create_cq,
	.create_flow = vrdma_create_flow,
	.create_qp = vrdma_create_qp,
	.create_srq = vrdma_create_srq,
	.create_ah = vrdma_create_ah,
	.create_user_ah = vrdma_create_ah,
	.dealloc_dm = vrdma_dealloc_dm,
	.dealloc_driver = vrdma_dealloc_driver,
	.dealloc_mw = vrdma_dealloc_mw,
	.dealloc_pd = vrdma_dealloc_pd,
	.dealloc_ucontext = vrdma_dealloc_ucontext,
	.dealloc_xrcd = vrdma_dealloc_xrcd,
	.dereg_mr = vrdma_dereg_mr,
	.destroy_ah = vrdma_destroy_ah,
	.destroy_cq = vrdma_destroy_cq,
	.destroy_flow = vrdma_destroy_flow,
	.destroy_qp = vrdma_destroy_qp,
	.destroy_srq = vrdma_destroy_srq,
	.detach_mcast = vrdma_detach_mcast,
	.disassociate_ucontext = vrdma_disassociate_ucontext,
	.get_dev_fw_str = vrdma_get_dev_fw_str,
	.get_dma_mr = vrdma_get_dma_mr,
	.get_link_layer = vrdma_get_link_layer,
	.get_port_immutable = vrdma_get_port_immutable,
	.map_mr_sg = vrdma_map_mr_sg,
	.mmap = vrdma_mmap,
	.mmap_free = vrdma_mmap_free,
	.modify_qp = vrdma_modify_qp,
	.modify_srq = vrdma_modify_srq,
	.poll_cq = vrdma_poll_cq,
	.post_recv = vrdma_post_recv,
	.post_send = vrdma_post_send,
	.post_srq_recv = vrdma_post_srq_recv,
	.query_device = vrdma_query_device,
	.query_pkey = vrdma_query_pkey,
	.query_port = vrdma_query_port,
	.query_qp = vrdma_query_qp,
	.query_srq = vrdma_query_srq,
	.query_ucontext = vrdma_query_ucontext,
	.reg_dm_mr = vrdma_reg_dm_mr,
	.reg_user_mr = vrdma_reg_user_mr,
	.reg_user_mr_dmabuf = vrdma_reg_user_mr_dmabuf,
	.advise_mr = vrdma_advise_mr,
	.req_notify_cq = vrdma_req_notify_cq,
	.rereg_user_mr = vrdma_rereg_user_mr,
	.resize_cq = vrdma_resize_cq,

	/* RSS (wq.c) */
	.create_rwq_ind_table = vrdma_create_rwq_ind_table,
	.create_wq = vrdma_create_wq,
	.destroy_rwq_ind_table = vrdma_destroy_rwq_ind_table,
	.destroy_wq = vrdma_destroy_wq,
	.modify_wq = vrdma_modify_wq,
	INIT_RDMA_OBJ_SIZE(ib_rwq_ind_table, vrdma_rwq_ind_table, ibtbl),

	INIT_RDMA_OBJ_SIZE(ib_ah, vrdma_ah, ibah),
	INIT_RDMA_OBJ_SIZE(ib_cq, vrdma_cq, ibcq),
	INIT_RDMA_OBJ_SIZE(ib_mw, vrdma_mw, ibmw),
	INIT_RDMA_OBJ_SIZE(ib_pd, vrdma_pd, ibpd),
	INIT_RDMA_OBJ_SIZE(ib_qp, vrdma_qp, ibqp),
	INIT_RDMA_OBJ_SIZE(ib_srq, vrdma_srq, ibsrq),
	INIT_RDMA_OBJ_SIZE(ib_ucontext, vrdma_ucontext, ibuc),
	INIT_RDMA_OBJ_SIZE(ib_xrcd, vrdma_xrcd, ibxrcd),
};

/**
 * vrdma_dev_add() - create and register a vrdma device on @ndev
 * @ibdev_name: the name user space gave ("vrdma0")
 * @ndev: an Ethernet netdev
 *
 * Return: 0, or a negative errno with nothing left behind: -EBUSY if @ndev
 * already carries a vrdma device, -ENFILE if the name is taken.
 */
int vrdma_dev_add(const char *ibdev_name, struct net_device *ndev)
{
	struct vrdma_dev *vdev;
	struct ib_device *ibdev;
	int ret;

	vdev = ib_alloc_device(vrdma_dev, ibdev);
	if (!vdev)
		return -ENOMEM;
	ibdev = &vdev->ibdev;

	INIT_LIST_HEAD(&vdev->list);
	vdev->ndev = ndev;
	netdev_hold(ndev, &vdev->ndev_tracker, GFP_KERNEL);
	/*
	 * Looked up in any context (vrdma_qp_get()), so its lock is irq-safe;
	 * it needs a lockdep class of its own, apart from the other tables
	 * here (one class per xa_init_flags() caller), whose locks are not.
	 */
	xa_init_flags(&vdev->qp_xa, XA_FLAGS_ALLOC | XA_FLAGS_LOCK_IRQ);
	lockdep_set_class(&vdev->qp_xa.xa_lock, &vrdma_qp_xa_key);
	/* Irq-safe too (ah.c), and so a class of its own. */
	xa_init_flags(&vdev->ah_xa, XA_FLAGS_ALLOC1 | XA_FLAGS_LOCK_IRQ);
	lockdep_set_class(&vdev->ah_xa.xa_lock, &vrdma_ah_xa_key);
	xa_init_flags(&vdev->mr_xa, XA_FLAGS_ALLOC1);
	vrdma_xrc_dev_init(vdev);
	vrdma_wq_dev_init(vdev);
	vdev->mr_key_byte = kvzalloc(VRDMA_MAX_MR + 1, GFP_KERNEL);
	ret = vrdma_mw_dev_init(vdev);
	if (!ret)
		ret = vrdma_mcast_dev_init(vdev);
	if (!ret)
		ret = vrdma_raw_dev_init(vdev);
	if (!vdev->mr_key_byte || ret) {
		ret = -ENOMEM;
		goto err_dealloc;
	}

	ibdev->node_type = RDMA_NODE_IB_CA;
	ibdev->phys_port_cnt = 1;
	/*
	 * A CQE's handler runs where the CQE is written, so a vector picks
	 * nothing here; but ULPs open as many queues as there are vectors
	 * (nvme-rdma: one per CPU up to this), so offer one per CPU.
	 */
	ibdev->num_comp_vectors = num_possible_cpus();
	ibdev->local_dma_lkey = 0;
	strscpy(ibdev->node_desc, "vrdma", sizeof(ibdev->node_desc));
	addrconf_addr_eui48((unsigned char *)&ibdev->node_guid,
			    ndev->dev_addr);
	vrdma_init_attr(vdev);
	vrdma_dm_dev_init(vdev);
	ib_set_device_ops(ibdev, &vrdma_dev_ops);
	ib_set_device_ops(ibdev, &vrdma_counters_ops);
	ib_set_device_ops(ibdev, &vrdma_restrack_ops);
	/*
	 * Commands beyond ib_core's default set: the doorbells (an empty
	 * POST_SEND, and POST_RECV in the error state) and arming a CQ.
	 */
	ibdev->uverbs_cmd_mask |= BIT_ULL(IB_USER_VERBS_CMD_POST_SEND) |
				  BIT_ULL(IB_USER_VERBS_CMD_POST_RECV) |
				  BIT_ULL(IB_USER_VERBS_CMD_REQ_NOTIFY_CQ);

	ret = vrdma_parent_create(vdev);
	if (ret)
		goto err_dealloc;

	/* The RoCEv2 UDP port of the netdev's namespace. */
	ret = vrdma_net_dev_open(vdev);
	if (ret)
		goto err_dealloc;

	/* ib_core fills the GID table from the netdev's IP addresses. */
	ret = ib_device_set_netdev(ibdev, ndev, VRDMA_PORT);
	if (ret)
		goto err_dealloc;

	ret = vrdma_dev_register(vdev, ibdev_name);
	if (ret)
		goto err_dealloc;

	/*
	 * The netdev may have been unregistered while we registered, before
	 * the notifier could see us: then nobody else will remove the device.
	 */
	rtnl_lock();
	if (ndev->reg_state != NETREG_REGISTERED) {
		ib_unregister_device_queued(ibdev);
	} else {
		vrdma_parent_link(vdev);
		vrdma_port_update(vdev);
	}
	rtnl_unlock();

	dev_info(&ibdev->dev, "vrdma device on %s\n", netdev_name(ndev));
	return 0;

err_dealloc:
	ib_dealloc_device(ibdev);
	return ret;
}
