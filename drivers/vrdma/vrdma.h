/* SPDX-License-Identifier: GPL-2.0 */
/*
 * vrdma - a virtual RDMA device that speaks RoCEv2.
 *
 * This header holds the driver's objects.  Each RDMA concept has a file of
 * its own in this directory:
 *
 *   main.c      module init/exit, "rdma link add ... type vrdma"
 *   device.c    the ib_device: capabilities (query_device) and the verbs table
 *   port.c      the single RoCEv2 port: state, MTU, GIDs, P_Keys
 *   net.c       the bound Ethernet netdev: carrier/MTU/unregister events
 *   ucontext.c  a process's context and the mmap of shared memory into it
 *   pd.c        protection domains
 */
#ifndef VRDMA_H
#define VRDMA_H

#include <linux/list.h>
#include <linux/netdevice.h>
#include <rdma/ib_verbs.h>
#include <rdma/vrdma-abi.h>

#define VRDMA_PORT		1

/* The layout shared with user space, pinned (uapi/rdma/vrdma-abi.h). */
static_assert(sizeof(struct vrdma_ring) == VRDMA_RING_HDR_SIZE);
static_assert(sizeof(struct vrdma_sge) == 16);
static_assert(sizeof(struct vrdma_send_wqe) == VRDMA_SEND_WQE_HDR_SIZE);
static_assert(sizeof(struct vrdma_recv_wqe) == VRDMA_RECV_WQE_HDR_SIZE);
static_assert(sizeof(struct vrdma_cqe) == 32);
static_assert(sizeof(struct vrdma_ring_info) == 24);
static_assert(sizeof(struct vrdma_create_qp_resp) == 56);

/*
 * Device limits reported by query_device.  They are the sizes the
 * driver's own tables and shared rings are built for: ring depths are
 * powers of two that fit a u32 index, keys are a 24-bit index plus an
 * 8-bit key byte.
 */
#define VRDMA_MAX_QP		16384
#define VRDMA_MAX_QP_WR		16384
#define VRDMA_MAX_SGE		32
#define VRDMA_MAX_INLINE	512
#define VRDMA_MAX_CQ		16384
#define VRDMA_MAX_CQE		65536
#define VRDMA_MAX_MR		65536
#define VRDMA_MAX_PD		65536
#define VRDMA_MAX_SRQ		4096
#define VRDMA_MAX_SRQ_WR	16384
#define VRDMA_MAX_AH		65536
#define VRDMA_MAX_RD_ATOMIC	128
#define VRDMA_MAX_MR_SIZE	BIT_ULL(40)
#define VRDMA_MAX_FAST_REG_PAGES 512
#define VRDMA_MAX_PKEYS		1
#define VRDMA_GID_TABLE_LEN	32
#define VRDMA_VENDOR_ID		0xffffff	/* no OUI: a software device */
#define VRDMA_VENDOR_PART_ID	0x7672		/* "vr" */

/**
 * struct vrdma_dev - one vrdma ib_device, bound to one Ethernet netdev
 * @ibdev: the device ib_core knows; must be first for ib_alloc_device()
 * @ndev: the bound netdev, referenced until the device is freed
 * @ndev_tracker: tracks our reference on @ndev
 * @list: entry in the driver's list of devices (vrdma_devices)
 * @port_active: last port state reported to ib_core; changed under RTNL
 * @attr: device capabilities, filled once at creation
 * @num_pd: PDs in existence, held to attr.max_pd
 */
struct vrdma_dev {
	struct ib_device ibdev;
	struct net_device *ndev;
	netdevice_tracker ndev_tracker;
	struct list_head list;
	bool port_active;
	struct ib_device_attr attr;
	atomic_t num_pd;
};

/**
 * struct vrdma_ucontext - a process's open device context
 * @ibuc: ib_core's part
 */
struct vrdma_ucontext {
	struct ib_ucontext ibuc;
};

/**
 * struct vrdma_pd - a protection domain
 * @ibpd: ib_core's part
 */
struct vrdma_pd {
	struct ib_pd ibpd;
};

/**
 * struct vrdma_mmap_entry - a piece of kernel memory user space may mmap
 * @rdma_entry: ib_core's entry; its offset is what mmap() is given
 * @vaddr: vmalloc_user() memory, zeroed, page aligned
 * @size: bytes, a multiple of PAGE_SIZE
 */
struct vrdma_mmap_entry {
	struct rdma_user_mmap_entry rdma_entry;
	void *vaddr;
	size_t size;
};

static inline struct vrdma_dev *to_vdev(struct ib_device *ibdev)
{
	return container_of(ibdev, struct vrdma_dev, ibdev);
}

static inline struct vrdma_ucontext *to_vuc(struct ib_ucontext *ibuc)
{
	return container_of(ibuc, struct vrdma_ucontext, ibuc);
}

static inline struct vrdma_pd *to_vpd(struct ib_pd *ibpd)
{
	return container_of(ibpd, struct vrdma_pd, ibpd);
}

/* main.c */
struct vrdma_dev *vrdma_get_dev_by_netdev(struct net_device *ndev);
void vrdma_dev_list_del(struct vrdma_dev *vdev);
int vrdma_dev_register(struct vrdma_dev *vdev, const char *name);

/* device.c */
int vrdma_dev_add(const char *ibdev_name, struct net_device *ndev);

/* port.c */
int vrdma_query_port(struct ib_device *ibdev, u32 port,
		     struct ib_port_attr *attr);
int vrdma_get_port_immutable(struct ib_device *ibdev, u32 port,
			     struct ib_port_immutable *immutable);
int vrdma_query_pkey(struct ib_device *ibdev, u32 port, u16 index,
		     u16 *pkey);
enum rdma_link_layer vrdma_get_link_layer(struct ib_device *ibdev, u32 port);
void vrdma_port_update(struct vrdma_dev *vdev);

/* net.c */
int vrdma_net_init(void);
void vrdma_net_exit(void);

/* ucontext.c */
int vrdma_alloc_ucontext(struct ib_ucontext *ibuc, struct ib_udata *udata);
void vrdma_dealloc_ucontext(struct ib_ucontext *ibuc);
void vrdma_disassociate_ucontext(struct ib_ucontext *ibuc);
int vrdma_mmap(struct ib_ucontext *ibuc, struct vm_area_struct *vma);
void vrdma_mmap_free(struct rdma_user_mmap_entry *rdma_entry);
struct vrdma_mmap_entry *vrdma_mmap_alloc(struct vrdma_ucontext *uc,
					  size_t size, u64 *offset);
void vrdma_mmap_remove(struct vrdma_mmap_entry *entry);

/* pd.c */
int vrdma_alloc_pd(struct ib_pd *ibpd, struct ib_udata *udata);
int vrdma_dealloc_pd(struct ib_pd *ibpd, struct ib_udata *udata);

#endif /* VRDMA_H */
