/* SPDX-License-Identifier: (GPL-2.0 OR Linux-OpenIB) */
/*
 * libvrdma: the rdma-core provider for the vrdma kernel driver.
 *
 *   vrdma.c    registration with libibverbs, device and context life cycle
 *   verbs.c    device/port queries, protection domains, XRC domains,
 *              memory regions, address handles
 *   mw.c       memory windows: alloc/dealloc, ibv_bind_mw
 *   dm.c       device memory: alloc/free, the copies, DM MRs, import
 *   ring.h     what the data path does to a shared ring (no system calls)
 *   ring.c     mapping the rings the kernel allocates
 *   cq.c       completion queues: create/resize/destroy, poll_cq, and the
 *              extended CQ's start/next/end_poll and read_* functions
 *   qp.c       queue pairs (XRC ones too): create/open/modify/destroy,
 *              post_send, post_recv
 *   wr.c       the ibv_wr_* work request builders of an extended QP
 *   srq.c      shared receive queues, basic and XRC, post_srq_recv
 *   wq.c       RSS: work queues, post_wq_recv, indirection tables, raw
 *              packet QPs on them
 *
 * Everything the provider shares with the kernel comes from
 * uapi/rdma/vrdma-abi.h; everything it shares with libibverbs beyond the
 * public verbs.h comes from vrdma-verbs-private.h.
 */
#ifndef VRDMA_PROVIDER_H
#define VRDMA_PROVIDER_H

#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>

#include <rdma/vrdma-abi.h>

#include "vrdma-verbs-private.h"
#include "ring.h"

#define VRDMA_PROVIDER_NAME "vrdma"

/* GET_CONTEXT: no driver request; struct vrdma_alloc_ucontext_resp back. */
VRDMA_DECLARE_DRV_CMD(vrdma_get_context, ibv_get_context, vrdma_verbs_empty,
		      ib_uverbs_get_context_resp, vrdma_alloc_ucontext_resp);

/*
 * The data path's commands: no driver request, the rings back.  (Named
 * vrdma_cmd_* to stay clear of the uapi's vrdma_create_*_resp.)
 */
VRDMA_DECLARE_DRV_CMD(vrdma_cmd_create_cq, ibv_create_cq, vrdma_verbs_empty,
		      ib_uverbs_create_cq_resp, vrdma_create_cq_resp);
/*
 * create_cq_ex: libibverbs sends no driver request here; the response
 * starts with the extended core response.
 */
struct vrdma_cmd_create_cq_ex_resp {
	struct ib_uverbs_ex_create_cq_resp ibv_resp;
	struct vrdma_create_cq_resp drv_payload;
};

static_assert(offsetof(struct vrdma_cmd_create_cq_ex_resp, drv_payload) ==
		      sizeof(struct ib_uverbs_ex_create_cq_resp),
	      "bad vrdma_cmd_create_cq_ex response layout");
static_assert(sizeof(struct vrdma_cmd_create_cq_ex_resp) ==
		      sizeof(struct ib_uverbs_ex_create_cq_resp) +
			      sizeof(struct vrdma_create_cq_resp),
	      "bad vrdma_cmd_create_cq_ex response size");

VRDMA_DECLARE_DRV_CMD(vrdma_cmd_resize_cq, ibv_resize_cq, vrdma_verbs_empty,
		      ib_uverbs_resize_cq_resp, vrdma_create_cq_resp);
VRDMA_DECLARE_DRV_CMD(vrdma_cmd_create_qp, ibv_create_qp, vrdma_verbs_empty,
		      ib_uverbs_create_qp_resp, vrdma_create_qp_resp);
VRDMA_DECLARE_DRV_CMD(vrdma_cmd_create_srq, ibv_create_srq,
		      vrdma_verbs_empty, ib_uverbs_create_srq_resp,
		      vrdma_create_srq_resp);
/*
 * create_srq_ex: the same driver data after the XSRQ command, and a driver
 * request: a tag-matching SRQ's max_ops.
 */
VRDMA_DECLARE_DRV_CMD(vrdma_cmd_create_xsrq, ibv_create_xsrq,
		      vrdma_create_srq_req, ib_uverbs_create_srq_resp,
		      vrdma_create_srq_resp);
/* create_cq_ex: the CQE size (tag matching's needs more room). */
struct vrdma_cmd_create_cq_ex {
	struct ibv_create_cq_ex ibv_cmd;
	struct vrdma_create_cq_req drv_payload;
};

static_assert(offsetof(struct vrdma_cmd_create_cq_ex, drv_payload) ==
		      sizeof(struct ibv_create_cq_ex),
	      "bad vrdma_cmd_create_cq_ex request layout");
/* MODIFY_SRQ: a driver request (the resized ring's ring_info), no response. */
struct vrdma_cmd_modify_srq {
	struct ibv_modify_srq ibv_cmd;
	struct vrdma_modify_srq_req drv_payload;
};

static_assert(offsetof(struct vrdma_cmd_modify_srq, drv_payload) ==
		      sizeof(struct ibv_modify_srq),
	      "bad vrdma_cmd_modify_srq request layout");
static_assert(sizeof(struct vrdma_cmd_modify_srq) ==
		      sizeof(struct ibv_modify_srq) +
			      sizeof(struct vrdma_modify_srq_req),
	      "bad vrdma_cmd_modify_srq request size");

VRDMA_DECLARE_DRV_CMD(vrdma_cmd_create_ah, ibv_create_ah, vrdma_verbs_empty,
		      ib_uverbs_create_ah_resp, vrdma_create_ah_resp);

struct vrdma_device {
	struct verbs_device ibv_dev;
};

struct vrdma_context {
	struct verbs_context ibv_ctx;
};

/*
 * The lock of a ring the application may use from several threads at
 * once.  A QP made on a parent domain with a thread domain, and a CQ made
 * on one or created IBV_CREATE_CQ_ATTR_SINGLE_THREADED, are used by one
 * thread at a time, as the application promised: their rings need no
 * lock, and @single says so.  (The kernel's side of a ring needs none of
 * these: it reads only what the indices published.)
 */
struct vrdma_lock {
	pthread_spinlock_t lock;
	bool single;
};

static inline int vrdma_lock_init(struct vrdma_lock *l)
{
	l->single = false;
	return pthread_spin_init(&l->lock, PTHREAD_PROCESS_PRIVATE);
}

static inline void vrdma_lock_destroy(struct vrdma_lock *l)
{
	pthread_spin_destroy(&l->lock);
}

static inline void vrdma_lock(struct vrdma_lock *l)
{
	if (!l->single)
		pthread_spin_lock(&l->lock);
}

static inline void vrdma_unlock(struct vrdma_lock *l)
{
	if (!l->single)
		pthread_spin_unlock(&l->lock);
}

/*
 * A thread domain (ibv_alloc_td): the application's promise that what is
 * made on a parent domain with it is used by one thread at a time.
 */
struct vrdma_td {
	struct ibv_td ibv_td;
	atomic_int parents;		/* parent domains made with it */
	struct vrdma_td *next;		/* in the process's list (verbs.c) */
};

/*
 * A PD, or a parent domain (ibv_alloc_parent_domain): a PD of user space
 * only, carrying the handle of the PD it was made on (@protection), so that
 * whatever is created "on" it is created on that PD in the kernel.
 */
struct vrdma_pd {
	struct ibv_pd ibv_pd;
	struct vrdma_pd *protection;	/* a parent domain's PD, else NULL */
	struct vrdma_td *td;		/* a parent domain's thread domain */
	atomic_int parents;		/* parent domains made on this PD */
	void *(*alloc)(struct ibv_pd *pd, void *pd_context, size_t size,
		       size_t alignment, uint64_t resource_type);
	void (*free)(struct ibv_pd *pd, void *pd_context, void *ptr,
		     uint64_t resource_type);
	void *pd_context;
};

/* struct vrdma_ah is in ring.h: post_send needs it. */

/*
 * Several threads may poll one CQ: lock is taken around every ring access,
 * and held from start_poll to end_poll.
 */
struct vrdma_cq {
	struct verbs_cq vcq;
	struct vrdma_lock lock;
	struct vrdma_uring ring;
	struct vrdma_cqe cur;	/* start/next_poll's CQE, for the read_* */
	struct vrdma_cqe_tm cur_tm;	/* its tag-matching part (TM_INFO) */
};

/*
 * The ibv_wr_* batch between wr_start and wr_complete/wr_abort (wr.c), built
 * under the SQ lock: the WQEs go into the ring past prod, which only
 * wr_complete moves.
 */
struct vrdma_wr_batch {
	struct vrdma_send_wqe *wqe;	/* the WQE the setters apply to */
	uint32_t start;			/* the SQ's head at wr_start */
	int err;			/* the first error: discard the batch */
	bool ud_addr_missing;		/* a UD WQE without wr_set_ud_addr */
};

struct vrdma_sq {
	struct vrdma_lock lock;
	struct vrdma_uring ring;
	struct vrdma_sq_limits limits;
	uint64_t send_ops;		/* IBV_QP_EX_WITH_*: builders allowed */
	struct vrdma_wr_batch wr;
	bool doorbell_ioctl;		/* write() refused: ring by ioctl */
};

/* A QP's RQ or an SRQ. */
struct vrdma_rq {
	struct vrdma_lock lock;
	struct vrdma_uring ring;
	uint32_t max_sge;
};

/*
 * A QP, or a handle on an XRC target QP (ibv_open_qp).  An XRC target QP
 * has neither ring (its messages go to the XRC SRQ each names), an XRC
 * initiator no RQ.
 */
struct vrdma_qp {
	struct verbs_qp vqp;
	struct vrdma_sq sq;
	struct vrdma_rq rq;	/* no ring with an SRQ */
};

/* A work queue (RSS): a receive ring as a QP's RQ. */
struct vrdma_wq {
	struct ibv_wq ibv_wq;
	struct vrdma_rq rq;
};

/*
 * vsrq.srq_type and srq_num are filled by create_srq_ex only.  tm_max_ops:
 * a tag-matching SRQ's operations per VRDMA_IB_METHOD_SRQ_OPS call.
 */
struct vrdma_srq {
	struct verbs_srq vsrq;
	struct vrdma_rq rq;
	uint32_t tm_max_ops;
};

#define vrdma_container_of(ptr, type, member)				\
	((type *)((char *)(ptr) - offsetof(type, member)))

static inline struct vrdma_device *to_vdev(struct ibv_device *ibdev)
{
	return vrdma_container_of(verbs_get_device(ibdev), struct vrdma_device,
				  ibv_dev);
}

static inline struct vrdma_context *to_vctx(struct ibv_context *ibctx)
{
	return vrdma_container_of(ibctx, struct vrdma_context, ibv_ctx.context);
}

static inline struct vrdma_td *to_vtd(struct ibv_td *ibtd)
{
	return vrdma_container_of(ibtd, struct vrdma_td, ibv_td);
}

static inline struct vrdma_pd *to_vpd(struct ibv_pd *ibpd)
{
	return vrdma_container_of(ibpd, struct vrdma_pd, ibv_pd);
}

static inline struct vrdma_ah *to_vah(struct ibv_ah *ibah)
{
	return vrdma_container_of(ibah, struct vrdma_ah, ibv_ah);
}

static inline struct vrdma_cq *to_vcq(struct ibv_cq *ibcq)
{
	return vrdma_container_of(ibcq, struct vrdma_cq, vcq.cq);
}

static inline struct vrdma_cq *to_vcq_ex(struct ibv_cq_ex *cqx)
{
	return vrdma_container_of(cqx, struct vrdma_cq, vcq.cq_ex);
}

static inline struct vrdma_qp *to_vqp(struct ibv_qp *ibqp)
{
	return vrdma_container_of(ibqp, struct vrdma_qp, vqp.qp);
}

static inline struct vrdma_qp *to_vqp_ex(struct ibv_qp_ex *qpx)
{
	return vrdma_container_of(qpx, struct vrdma_qp, vqp.qp_ex);
}

static inline struct vrdma_srq *to_vsrq(struct ibv_srq *ibsrq)
{
	return vrdma_container_of(ibsrq, struct vrdma_srq, vsrq.srq);
}

static inline struct verbs_xrcd *to_vxrcd(struct ibv_xrcd *ibxrcd)
{
	return vrdma_container_of(ibxrcd, struct verbs_xrcd, xrcd);
}

/*
 * Whether the QP takes send work requests in its state.  A WQE in the ring
 * runs once the kernel gets to it, so one posted too early must be refused,
 * not queued (the SQ is enabled from RTS on).  ibqp->state is what
 * libibverbs recorded at the last modify_qp or query_qp; the states the
 * kernel moves a QP to on its own, SQE and ERR, both take work requests
 * (to flush them).
 */
static inline bool vrdma_qp_sq_ready(const struct ibv_qp *ibqp)
{
	switch (ibqp->state) {
	case IBV_QPS_RESET:
	case IBV_QPS_INIT:
	case IBV_QPS_RTR:
		return false;
	default:
		return true;
	}
}

/* Logs through libibverbs (VERBS_LOG_LEVEL/VERBS_LOG_FILE); keeps errno. */
#define vrdma_log(vctx, level, fmt, ...)				\
	do {								\
		int vrdma_log_errno = errno;				\
									\
		__verbs_log((vctx), (level), "%s: %s: " fmt,		\
			    (vctx)->context.device->name, __func__,	\
			    ##__VA_ARGS__);				\
		errno = vrdma_log_errno;				\
	} while (0)
#define vrdma_err(vctx, fmt, ...)					\
	vrdma_log(vctx, VERBS_LOG_ERR, fmt, ##__VA_ARGS__)
#define vrdma_dbg(vctx, fmt, ...)					\
	vrdma_log(vctx, VERBS_LOG_DEBUG, fmt, ##__VA_ARGS__)

/* verbs.c */
int vrdma_query_device_ex(struct ibv_context *context,
			  const struct ibv_query_device_ex_input *input,
			  struct ibv_device_attr_ex *attr, size_t attr_size);
int vrdma_query_port(struct ibv_context *context, uint8_t port_num,
		     struct ibv_port_attr *port_attr);
struct ibv_pd *vrdma_alloc_pd(struct ibv_context *context);
int vrdma_dealloc_pd(struct ibv_pd *pd);
struct ibv_mr *vrdma_reg_mr(struct ibv_pd *pd, void *addr, size_t length,
			    uint64_t hca_va, int access);
struct ibv_mr *vrdma_reg_dmabuf_mr(struct ibv_pd *pd, uint64_t offset,
				   size_t length, uint64_t iova, int fd,
				   int access);
int vrdma_rereg_mr(struct verbs_mr *vmr, int flags, struct ibv_pd *pd,
		   void *addr, size_t length, int access);
int vrdma_dereg_mr(struct verbs_mr *vmr);
int vrdma_advise_mr(struct ibv_pd *pd, enum ibv_advise_mr_advice advice,
		    uint32_t flags, struct ibv_sge *sg_list, uint32_t num_sge);
struct ibv_pd *vrdma_alloc_parent_domain(struct ibv_context *context,
					 struct ibv_parent_domain_init_attr *attr);
bool vrdma_is_parent_domain(struct ibv_context *context, struct ibv_pd *pd);
bool vrdma_pd_single_threaded(struct ibv_pd *pd);
struct ibv_td *vrdma_alloc_td(struct ibv_context *context,
			      struct ibv_td_init_attr *attr);
int vrdma_dealloc_td(struct ibv_td *ibtd);

struct ibv_pd *vrdma_import_pd(struct ibv_context *context,
			       uint32_t pd_handle);
void vrdma_unimport_pd(struct ibv_pd *ibpd);
struct ibv_mr *vrdma_import_mr(struct ibv_pd *pd, uint32_t mr_handle);
void vrdma_unimport_mr(struct ibv_mr *ibmr);

/* tm.c */
int vrdma_post_srq_ops(struct ibv_srq *ibsrq, struct ibv_ops_wr *wr,
		       struct ibv_ops_wr **bad_wr);

/* dm.c */
struct ibv_dm *vrdma_alloc_dm(struct ibv_context *context,
			      struct ibv_alloc_dm_attr *attr);
int vrdma_free_dm(struct ibv_dm *ibdm);
struct ibv_dm *vrdma_import_dm(struct ibv_context *context,
			       uint32_t dm_handle);
void vrdma_unimport_dm(struct ibv_dm *ibdm);
struct ibv_mr *vrdma_reg_dm_mr(struct ibv_pd *pd, struct ibv_dm *ibdm,
			       uint64_t dm_offset, size_t length,
			       unsigned int access);
struct ibv_ah *vrdma_create_ah(struct ibv_pd *pd, struct ibv_ah_attr *attr);
int vrdma_destroy_ah(struct ibv_ah *ah);
struct ibv_xrcd *vrdma_open_xrcd(struct ibv_context *context,
				 struct ibv_xrcd_init_attr *attr);
int vrdma_close_xrcd(struct ibv_xrcd *xrcd);

/* mw.c */
struct ibv_mw *vrdma_alloc_mw(struct ibv_pd *pd, enum ibv_mw_type type);
int vrdma_dealloc_mw(struct ibv_mw *mw);
int vrdma_bind_mw(struct ibv_qp *qp, struct ibv_mw *mw,
		  struct ibv_mw_bind *mw_bind);

/* ring.c */
int vrdma_map_ring(struct vrdma_context *ctx, struct vrdma_uring *ring,
		   const struct vrdma_ring_info *info, uint32_t min_entry_size,
		   bool producer);
void vrdma_unmap_ring(struct vrdma_uring *ring);
int vrdma_check_wq(struct vrdma_context *ctx, const char *name,
		   const struct vrdma_ring_info *info, uint32_t wqe_hdr_size,
		   uint32_t max_wr, uint32_t max_sge, uint32_t max_inline);

/* cq.c */
struct ibv_cq *vrdma_create_cq(struct ibv_context *context, int cqe,
			       struct ibv_comp_channel *channel,
			       int comp_vector);
int vrdma_resize_cq(struct ibv_cq *cq, int cqe);
int vrdma_destroy_cq(struct ibv_cq *cq);
int vrdma_poll_cq(struct ibv_cq *cq, int num_entries, struct ibv_wc *wc);
void vrdma_trace_poll(struct ibv_cq *ibcq, struct ibv_wc *wc, int n);
int vrdma_req_notify_cq(struct ibv_cq *cq, int solicited_only);
struct ibv_cq_ex *vrdma_create_cq_ex(struct ibv_context *context,
				     struct ibv_cq_init_attr_ex *attr);

/* qp.c */
struct ibv_qp *vrdma_create_qp(struct ibv_pd *pd,
			       struct ibv_qp_init_attr *attr);
struct ibv_qp *vrdma_create_qp_ex(struct ibv_context *context,
				  struct ibv_qp_init_attr_ex *attr);
struct ibv_qp *vrdma_open_qp(struct ibv_context *context,
			     struct ibv_qp_open_attr *attr);
int vrdma_query_qp(struct ibv_qp *qp, struct ibv_qp_attr *attr, int attr_mask,
		   struct ibv_qp_init_attr *init_attr);
int vrdma_modify_qp(struct ibv_qp *qp, struct ibv_qp_attr *attr,
		    int attr_mask);
int vrdma_destroy_qp(struct ibv_qp *qp);
struct ibv_flow *vrdma_create_flow(struct ibv_qp *qp,
				   struct ibv_flow_attr *attr);
int vrdma_destroy_flow(struct ibv_flow *flow);
int vrdma_post_send(struct ibv_qp *qp, struct ibv_send_wr *wr,
		    struct ibv_send_wr **bad_wr);
int vrdma_sq_doorbell(struct vrdma_qp *qp);
int vrdma_post_recv(struct ibv_qp *qp, struct ibv_recv_wr *wr,
		    struct ibv_recv_wr **bad_wr);
int vrdma_post_rq(struct vrdma_rq *rq, struct ibv_recv_wr *wr,
		  struct ibv_recv_wr **bad_wr, uint32_t *posted);
struct vrdma_qp *vrdma_qp_alloc(void);
void vrdma_qp_free(struct vrdma_qp *qp);

/* wq.c */
struct ibv_wq *vrdma_create_wq(struct ibv_context *context,
			       struct ibv_wq_init_attr *attr);
int vrdma_modify_wq(struct ibv_wq *wq, struct ibv_wq_attr *attr);
int vrdma_destroy_wq(struct ibv_wq *wq);
struct ibv_rwq_ind_table *
vrdma_create_rwq_ind_table(struct ibv_context *context,
			   struct ibv_rwq_ind_table_init_attr *attr);
int vrdma_destroy_rwq_ind_table(struct ibv_rwq_ind_table *tbl);
struct ibv_qp *vrdma_create_qp_rss(struct ibv_context *context,
				   struct ibv_qp_init_attr_ex *attr);

/* wr.c */
int vrdma_wr_check_ops(struct ibv_context *context, enum ibv_qp_type type,
		       uint64_t send_ops);
void vrdma_qp_init_wr(struct vrdma_qp *qp, uint64_t send_ops);

/* srq.c */
struct ibv_srq *vrdma_create_srq(struct ibv_pd *pd,
				 struct ibv_srq_init_attr *attr);
struct ibv_srq *vrdma_create_srq_ex(struct ibv_context *context,
				    struct ibv_srq_init_attr_ex *attr);
int vrdma_get_srq_num(struct ibv_srq *srq, uint32_t *srq_num);
int vrdma_modify_srq(struct ibv_srq *srq, struct ibv_srq_attr *attr,
		     int attr_mask);
int vrdma_query_srq(struct ibv_srq *srq, struct ibv_srq_attr *attr);
int vrdma_destroy_srq(struct ibv_srq *srq);
int vrdma_post_srq_recv(struct ibv_srq *srq, struct ibv_recv_wr *wr,
			struct ibv_recv_wr **bad_wr);

#endif /* VRDMA_PROVIDER_H */
