// SPDX-License-Identifier: GPL-2.0
/*
 * Driver details of resources for ib_core's resource tracker:
 *
 *	rdma res show qp -dd
 *	rdma res show cq -dd
 *	rdma res show mr -dd
 *
 * ib_core prints what it knows of each object (QPN, state, PSNs it queried,
 * CQE count, MR length, PD...); these callbacks add, in the netlink
 * RDMA_NLDEV_ATTR_DRIVER nest, the driver's own view: ring indices, the
 * transport's sequence numbers and retry state, an MR's pinned pages.
 *
 * Indices written by user space (a WQ's producer, a CQ's consumer) are read
 * once and only printed: they show what the process published, which is
 * what one wants to compare with the kernel's own index when a QP stalls.
 *
 * Any user may list every object of its PID namespace.  Addresses are
 * shown only to those ib_core shows keys to, and to the owner
 * (vrdma_res_may_see_addr()).
 */
#include <linux/capability.h>
#include <linux/cred.h>
#include <linux/net.h>
#include <net/sock.h>
#include <rdma/restrack.h>
#include <rdma/rdma_netlink.h>
#include <uapi/rdma/rdma_netlink.h>

#include "vrdma.h"

/*
 * May the caller of "rdma res show" see @res's addresses?  A kernel
 * object's are kernel addresses (a fast-registration MR's iova is in the
 * direct map), a user object's are its owner's.  ib_core shows keys only
 * to a caller with CAP_NET_ADMIN (netlink_capable(): the socket's opener
 * and the sender both); it passes the driver no credentials, but runs
 * these callbacks in the caller's context: that of the request's sender,
 * or of the process reading a dump, whose socket the dump's message is
 * charged to (@msg->sk).  The owner of a user object, a process of the
 * same effective uid as the one that created it, may see it as well.
 */
static bool vrdma_res_may_see_addr(struct sk_buff *msg,
				   struct rdma_restrack_entry *res)
{
	struct socket *sock = msg->sk ? msg->sk->sk_socket : NULL;

	/* Unaudited: a user listing objects is no attempt at privilege. */
	if (ns_capable_noaudit(&init_user_ns, CAP_NET_ADMIN) &&
	    (!sock || !sock->file ||
	     file_ns_capable(sock->file, &init_user_ns, CAP_NET_ADMIN)))
		return true;
	return !rdma_is_kernel_res(res) && res->task &&
	       uid_eq(task_euid(res->task), current_euid());
}

struct vrdma_res_u32 {
	const char *name;
	u32 value;
};

/* Put @n name/value pairs into a fresh driver nest of @msg. */
static int vrdma_res_put(struct sk_buff *msg, const struct vrdma_res_u32 *v,
			 unsigned int n)
{
	struct nlattr *nest;
	unsigned int i;

	nest = nla_nest_start_noflag(msg, RDMA_NLDEV_ATTR_DRIVER);
	if (!nest)
		return -EMSGSIZE;
	for (i = 0; i < n; i++) {
		if (rdma_nl_put_driver_u32(msg, v[i].name, v[i].value)) {
			nla_nest_cancel(msg, nest);
			return -EMSGSIZE;
		}
	}
	nla_nest_end(msg, nest);
	return 0;
}

/*
 * The producer index user space last published in @q's ring.  ib_core
 * calls the driver's destroy before it stops reporting the object: a
 * destroyed CQ's ring is NULL (vrdma_destroy_cq(), under cq->lock), a
 * destroyed QP's rings are not read (qp->destroyed, under qp->mutex).
 */
static u32 vrdma_res_prod(struct vrdma_queue *q)
{
	return q->ring ? READ_ONCE(q->ring->prod) : 0;
}

static u32 vrdma_res_cons(struct vrdma_queue *q)
{
	return q->ring ? READ_ONCE(q->ring->cons) : 0;
}

/*
 * sq_pi: WQEs posted; sq_fetch: copied out of the ring by the requester;
 * sq_ci: completed.  sq_psn: the next new request's PSN, una_psn: the
 * oldest unacknowledged; rq_psn: the PSN the responder expects; retry and
 * rnr_retry count resends since the last progress, against their limits.
 */
static int vrdma_fill_res_qp_entry(struct sk_buff *msg, struct ib_qp *ibqp)
{
	struct vrdma_qp *qp = to_vqp(ibqp);
	struct vrdma_res_u32 v[16];
	unsigned int n = 0;

	vrdma_qp_lock(qp);
	if (qp->destroyed) {
		vrdma_qp_unlock(qp);
		return 0;
	}
	v[n++] = (struct vrdma_res_u32){ "sq_pi", vrdma_res_prod(&qp->sq) };
	v[n++] = (struct vrdma_res_u32){ "sq_fetch", qp->req.ring_fetch };
	v[n++] = (struct vrdma_res_u32){ "sq_ci", qp->sq.kidx };
	v[n++] = (struct vrdma_res_u32){ "sq_size", qp->sq.num_entries };
	if (!qp->srq) {
		v[n++] = (struct vrdma_res_u32){ "rq_pi",
						 vrdma_res_prod(&qp->rq) };
		v[n++] = (struct vrdma_res_u32){ "rq_ci", qp->rq.kidx };
		v[n++] = (struct vrdma_res_u32){ "rq_size",
						 qp->rq.num_entries };
	}
	v[n++] = (struct vrdma_res_u32){ "mtu", qp->mtu };
	if (vrdma_qp_is_rc(qp) || ibqp->qp_type == IB_QPT_UC) {
		v[n++] = (struct vrdma_res_u32){ "sq_psn", qp->req.psn };
		v[n++] = (struct vrdma_res_u32){ "una_psn", qp->req.una };
		v[n++] = (struct vrdma_res_u32){ "rq_psn", qp->resp.psn };
		v[n++] = (struct vrdma_res_u32){ "msn", qp->resp.msn };
	}
	if (vrdma_qp_is_rc(qp)) {
		v[n++] = (struct vrdma_res_u32){ "retry", qp->req.retry };
		v[n++] = (struct vrdma_res_u32){ "retry_max",
						 qp->attr.retry_cnt };
		v[n++] = (struct vrdma_res_u32){ "rnr_retry",
						 qp->req.rnr_retry };
		v[n++] = (struct vrdma_res_u32){ "rd_atomic",
						 qp->req.rd_atomic };
	}
	vrdma_qp_unlock(qp);

	return vrdma_res_put(msg, v, n);
}

/* cq_pi: CQEs written by the kernel; cq_ci: polled by the process. */
static int vrdma_fill_res_cq_entry(struct sk_buff *msg, struct ib_cq *ibcq)
{
	struct vrdma_cq *cq = to_vcq(ibcq);
	struct vrdma_res_u32 v[5];
	unsigned long flags;

	spin_lock_irqsave(&cq->lock, flags);
	v[0] = (struct vrdma_res_u32){ "cq_pi", cq->queue.kidx };
	v[1] = (struct vrdma_res_u32){ "cq_ci", vrdma_res_cons(&cq->queue) };
	v[2] = (struct vrdma_res_u32){ "cq_size", cq->queue.num_entries };
	v[3] = (struct vrdma_res_u32){ "armed", cq->notify };
	v[4] = (struct vrdma_res_u32){ "overflowed", cq->overflowed };
	spin_unlock_irqrestore(&cq->lock, flags);

	return vrdma_res_put(msg, v, ARRAY_SIZE(v));
}

/*
 * The MR's fields change only under dereg/rereg, which wait for the
 * restrack reference the caller holds; a value read racing with a rereg
 * is one of the two versions, never freed memory.
 */
static int vrdma_fill_res_mr_entry(struct sk_buff *msg, struct ib_mr *ibmr)
{
	struct vrdma_mr *mr = to_vmr(ibmr);
	struct nlattr *nest;

	nest = nla_nest_start_noflag(msg, RDMA_NLDEV_ATTR_DRIVER);
	if (!nest)
		return -EMSGSIZE;
	if (rdma_nl_put_driver_string(msg, "type",
				      READ_ONCE(mr->dma) ? "dma" :
				      ibmr->type == IB_MR_TYPE_DM ? "dm" :
				      mr->odp ? "odp" :
				      mr->dmabuf ? "dmabuf" : "user") ||
	    (mr->odp &&
	     rdma_nl_put_driver_u64(msg, "odp_pages",
				    vrdma_odp_mapped_pages(mr))) ||
	    (vrdma_res_may_see_addr(msg, &ibmr->res) &&
	     rdma_nl_put_driver_u64_hex(msg, "iova", READ_ONCE(mr->iova))) ||
	    rdma_nl_put_driver_u64(msg, "length", READ_ONCE(mr->length)) ||
	    rdma_nl_put_driver_u64(msg, "pinned_pages",
				   READ_ONCE(mr->npages)) ||
	    rdma_nl_put_driver_u32_hex(msg, "access",
				       READ_ONCE(mr->access)) ||
	    rdma_nl_put_driver_u32(msg, "bound_mws",
				   max(atomic_read(&mr->num_mw), 0))) {
		nla_nest_cancel(msg, nest);
		return -EMSGSIZE;
	}
	nla_nest_end(msg, nest);
	return 0;
}

const struct ib_device_ops vrdma_restrack_ops = {
	.fill_res_cq_entry = vrdma_fill_res_cq_entry,
	.fill_res_mr_entry = vrdma_fill_res_mr_entry,
	.fill_res_qp_entry = vrdma_fill_res_qp_entry,
};
