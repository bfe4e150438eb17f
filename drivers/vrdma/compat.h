/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The kernel interfaces that differ between the kernels vrdma builds for:
 * Linux 6.1 (Debian 12) and 6.12 (Debian 13, bookworm-backports).  Each
 * difference is bridged here, keyed on the release that made the change,
 * so that the rest of the driver is written once, against the newer
 * interface where that is simple, else through a vrdma_ wrapper:
 *
 *   6.2   FLUSH and ATOMIC WRITE: the MR rights and    VRDMA_ACCESS_FLUSH_*,
 *         device capabilities that announce them      VRDMA_DEVICE_PLACEMENT
 *   6.4   class_create() lost its module argument     vrdma_class_create()
 *   6.7   the sockets' mc_loop bits became flags      vrdma_sock_no_mc_loop()
 *   6.10  __assign_str() lost its source argument     vrdma_assign_str()
 *   6.11  create_cq gets a uverbs_attr_bundle         VRDMA_CQ_ATTRS,
 *         (its driver_udata is the former udata)      vrdma_cq_udata()
 *   6.2   dma_buf_vmap() wants the reservation lock;  vrdma_dma_buf_vmap()
 *         dma_buf_vmap_unlocked() takes it
 *   6.12  asm/unaligned.h moved to linux/unaligned.h  include compat.h
 *   6.12  reg_user_mr_dmabuf gets a uverbs_attr_bundle VRDMA_DMABUF_ATTRS,
 *                                                     vrdma_dmabuf_udata()
 */
#ifndef VRDMA_COMPAT_H
#define VRDMA_COMPAT_H

#include <linux/device.h>
#include <linux/ipv6.h>
#include <linux/version.h>
#include <net/inet_sock.h>
#include <rdma/ib_verbs.h>

#if LINUX_VERSION_CODE >= KERNEL_VERSION(6, 12, 0)
#include <linux/unaligned.h>
#else
#include <asm/unaligned.h>
#endif

/*
 * The rights a FLUSH needs of the key and the QP (IB_ACCESS_FLUSH_GLOBAL,
 * IB_ACCESS_FLUSH_PERSISTENT; 6.2), and which of them MRs and QPs may be
 * given: global visibility only, as the device announces (no page of a
 * vrdma MR is known to be persistent memory).  ib_core 6.1 refuses both
 * rights on a user MR (ib_check_mr_access()), so there no key grants a
 * FLUSH; the names keep their uverbs values, which nothing can set.
 * A QP may be given both: ib_cm asks for both on every connected QP of a
 * device that announces any FLUSH, and no key grants the persistent one.
 */
#if LINUX_VERSION_CODE >= KERNEL_VERSION(6, 2, 0)
#define VRDMA_ACCESS_FLUSH_GLOBAL	IB_ACCESS_FLUSH_GLOBAL
#define VRDMA_ACCESS_FLUSH_PERSISTENT	IB_ACCESS_FLUSH_PERSISTENT
#define VRDMA_ACCESS_FLUSH_ALLOWED	IB_ACCESS_FLUSH_GLOBAL
#define VRDMA_QP_ACCESS_FLUSH_ALLOWED	(IB_ACCESS_FLUSH_GLOBAL | \
					 IB_ACCESS_FLUSH_PERSISTENT)
#define VRDMA_DEVICE_PLACEMENT		(IB_DEVICE_FLUSH_GLOBAL | \
					 IB_DEVICE_ATOMIC_WRITE)
#else
#define VRDMA_ACCESS_FLUSH_GLOBAL	BIT(8)
#define VRDMA_ACCESS_FLUSH_PERSISTENT	BIT(9)
#define VRDMA_ACCESS_FLUSH_ALLOWED	0
#define VRDMA_QP_ACCESS_FLUSH_ALLOWED	0
#define VRDMA_DEVICE_PLACEMENT		0
#endif

#if LINUX_VERSION_CODE >= KERNEL_VERSION(6, 4, 0)
#define vrdma_class_create(name) class_create(name)
#else
#define vrdma_class_create(name) class_create(THIS_MODULE, name)
#endif

/* Turn off IP's loopback of the socket's own multicast; sk is locked. */
static inline void vrdma_sock_no_mc_loop(struct sock *sk, bool ipv6)
{
#if LINUX_VERSION_CODE >= KERNEL_VERSION(6, 7, 0)
	if (ipv6)
		inet6_clear_bit(MC6_LOOP, sk);
	else
		inet_clear_bit(MC_LOOP, sk);
#else
	if (ipv6)
		inet6_sk(sk)->mc_loop = 0;
	else
		inet_sk(sk)->mc_loop = 0;
#endif
}

/* In a TRACE_EVENT's TP_fast_assign: copy the string __string() named. */
#if LINUX_VERSION_CODE >= KERNEL_VERSION(6, 10, 0)
#define vrdma_assign_str(dst, src) __assign_str(dst)
#else
#define vrdma_assign_str(dst, src) __assign_str(dst, src)
#endif

/*
 * The last argument of ib_device_ops.create_cq, and the udata in it (NULL
 * for a kernel CQ: ib_alloc_cq() passes no bundle).
 */
#if LINUX_VERSION_CODE >= KERNEL_VERSION(6, 11, 0)
#include <rdma/uverbs_ioctl.h>

#define VRDMA_CQ_ATTRS struct uverbs_attr_bundle

static inline struct ib_udata *vrdma_cq_udata(struct uverbs_attr_bundle *attrs)
{
	return attrs ? &attrs->driver_udata : NULL;
}
#else
#define VRDMA_CQ_ATTRS struct ib_udata

static inline struct ib_udata *vrdma_cq_udata(struct ib_udata *udata)
{
	return udata;
}
#endif

/*
 * An importer's CPU mapping of a whole dma-buf, taking and dropping the
 * buffer's reservation lock (6.2), or its mutex (6.1) inside.
 */
#if LINUX_VERSION_CODE >= KERNEL_VERSION(6, 2, 0)
#define vrdma_dma_buf_vmap(dmabuf, map) dma_buf_vmap_unlocked(dmabuf, map)
#define vrdma_dma_buf_vunmap(dmabuf, map) dma_buf_vunmap_unlocked(dmabuf, map)
#else
#define vrdma_dma_buf_vmap(dmabuf, map) dma_buf_vmap(dmabuf, map)
#define vrdma_dma_buf_vunmap(dmabuf, map) dma_buf_vunmap(dmabuf, map)
#endif

/* The last argument of ib_device_ops.reg_user_mr_dmabuf, and its udata. */
#if LINUX_VERSION_CODE >= KERNEL_VERSION(6, 12, 0)
#include <rdma/uverbs_ioctl.h>

#define VRDMA_DMABUF_ATTRS struct uverbs_attr_bundle

static inline struct ib_udata *
vrdma_dmabuf_udata(struct uverbs_attr_bundle *attrs)
{
	return attrs ? &attrs->driver_udata : NULL;
}
#else
#define VRDMA_DMABUF_ATTRS struct ib_udata

static inline struct ib_udata *vrdma_dmabuf_udata(struct ib_udata *udata)
{
	return udata;
}
#endif

#endif /* VRDMA_COMPAT_H */
