// SPDX-License-Identifier: GPL-2.0
/*
 * Kernel verbs: the kernel consumer's side of the rings.
 *
 * A user QP's process writes WQEs into rings it maps and reads CQEs from
 * them; a kernel consumer (ib_mad on QP1, rdma_cm's users, NVMe-oF...)
 * calls post_send, post_recv, post_srq_recv and poll_cq instead.  Its QPs,
 * CQs and SRQs get rings of exactly the same layout in kernel memory
 * (vrdma_queue_init() without a ucontext), and this file plays the part of
 * the provider: it turns each ib_send_wr into a struct vrdma_send_wqe in
 * the SQ ring, each ib_recv_wr into a struct vrdma_recv_wqe, and each
 * struct vrdma_cqe into a struct ib_wc.  The transport (requester,
 * responder, completer) cannot tell a kernel QP from a user one.
 *
 * Kernel consumers post and poll in atomic context (ib_mad posts under a
 * spinlock with interrupts off, CQs are polled from softirq), so nothing
 * here sleeps: posting only writes the ring and queues the QP's task,
 * which runs the requester (and, in the error state, the flush) later.
 * Posting to a QP in the error state is how ib_drain_qp() works: the
 * WQE is flushed by the task like any other, with IB_WC_WR_FLUSH_ERR.
 *
 * Addresses in SGEs are kernel virtual addresses (vrdma has no DMA device:
 * ib_core maps with virt DMA), with the PD's local_dma_lkey, the DMA MR
 * ib_core made for it (vrdma_get_dma_mr()), or any other MR's lkey; the
 * requester and responder check them as they check a process's.
 */
#include "vrdma.h"

/* The ring's opcode of a kernel work request; false if not supported. */
static bool vrdma_kwr_opcode(enum ib_wr_opcode op, u8 *opcode)
{
	switch (op) {
	case IB_WR_SEND:
		*opcode = IB_UVERBS_WR_SEND;
		return true;
	case IB_WR_SEND_WITH_IMM:
		*opcode = IB_UVERBS_WR_SEND_WITH_IMM;
		return true;
	case IB_WR_SEND_WITH_INV:
		*opcode = IB_UVERBS_WR_SEND_WITH_INV;
		return true;
	case IB_WR_RDMA_WRITE:
		*opcode = IB_UVERBS_WR_RDMA_WRITE;
		return true;
	case IB_WR_RDMA_WRITE_WITH_IMM:
		*opcode = IB_UVERBS_WR_RDMA_WRITE_WITH_IMM;
		return true;
	case IB_WR_RDMA_READ:
		*opcode = IB_UVERBS_WR_RDMA_READ;
		return true;
	case IB_WR_ATOMIC_CMP_AND_SWP:
		*opcode = IB_UVERBS_WR_ATOMIC_CMP_AND_SWP;
		return true;
	case IB_WR_ATOMIC_FETCH_AND_ADD:
		*opcode = IB_UVERBS_WR_ATOMIC_FETCH_AND_ADD;
		return true;
	case IB_WR_MASKED_ATOMIC_CMP_AND_SWP:
		*opcode = VRDMA_WR_MASKED_ATOMIC_CMP_AND_SWP;
		return true;
	case IB_WR_MASKED_ATOMIC_FETCH_AND_ADD:
		*opcode = VRDMA_WR_MASKED_ATOMIC_FETCH_AND_ADD;
		return true;
	case IB_WR_LOCAL_INV:
		*opcode = IB_UVERBS_WR_LOCAL_INV;
		return true;
	case IB_WR_REG_MR:
		*opcode = VRDMA_WR_REG_MR;
		return true;
	default:
		/* BIND_MW (kernel MWs), LSO, REG_MR_INTEGRITY */
		return false;
	}
}

/*
 * Copy the data of an inline send into the WQE: the SGEs point at kernel
 * memory the consumer owns, read now, as an inline send allows.
 */
static int vrdma_kwr_inline(struct vrdma_qp *qp, struct vrdma_send_wqe *wqe,
			    const struct ib_send_wr *wr)
{
	u8 *dst = (u8 *)wqe->sge;
	u32 len = 0;
	int i;

	for (i = 0; i < wr->num_sge; i++) {
		u32 n = wr->sg_list[i].length;

		if (n > qp->max_inline - len)
			return -EINVAL;
		memcpy(dst + len, (void *)(uintptr_t)wr->sg_list[i].addr, n);
		len += n;
	}
	wqe->inline_len = len;
	return 0;
}

/* Fill the SQ slot @wqe from @wr; the slot is not published yet. */
static int vrdma_kwr_to_wqe(struct vrdma_qp *qp, struct vrdma_send_wqe *wqe,
			    const struct ib_send_wr *wr)
{
	struct vrdma_atomic_masks *masks;
	int i;

	if (wr->send_flags & ~(IB_SEND_FENCE | IB_SEND_SIGNALED |
			       IB_SEND_SOLICITED | IB_SEND_INLINE))
		return -EINVAL;
	if (wr->num_sge < 0 ||
	    (!(wr->send_flags & IB_SEND_INLINE) &&
	     wr->num_sge > qp->max_send_sge))
		return -EINVAL;

	memset(wqe, 0, VRDMA_SEND_WQE_HDR_SIZE);
	if (!vrdma_kwr_opcode(wr->opcode, &wqe->opcode))
		return -EINVAL;
	wqe->wr_id = wr->wr_id;
	/* The same bit values as enum vrdma_send_flags. */
	wqe->flags = wr->send_flags;

	switch (wr->opcode) {
	case IB_WR_SEND_WITH_IMM:
	case IB_WR_RDMA_WRITE_WITH_IMM:
		wqe->ex.imm_data = wr->ex.imm_data;
		break;
	case IB_WR_SEND_WITH_INV:
	case IB_WR_LOCAL_INV:
		wqe->ex.invalidate_rkey = wr->ex.invalidate_rkey;
		break;
	default:
		break;
	}

	switch (wr->opcode) {
	case IB_WR_RDMA_WRITE:
	case IB_WR_RDMA_WRITE_WITH_IMM:
	case IB_WR_RDMA_READ:
		wqe->rdma.remote_addr = rdma_wr(wr)->remote_addr;
		wqe->rdma.rkey = rdma_wr(wr)->rkey;
		break;
	case IB_WR_MASKED_ATOMIC_CMP_AND_SWP:
	case IB_WR_MASKED_ATOMIC_FETCH_AND_ADD:
		/* The masks take the second SGE's place (uapi). */
		if (wr->num_sge != 1 || (wr->send_flags & IB_SEND_INLINE) ||
		    !vrdma_sq_fits_masks(&qp->sq))
			return -EINVAL;
		masks = (struct vrdma_atomic_masks *)&wqe->sge[1];
		masks->compare_add_mask = atomic_wr(wr)->compare_add_mask;
		masks->swap_mask = atomic_wr(wr)->swap_mask;
		fallthrough;
	case IB_WR_ATOMIC_CMP_AND_SWP:
	case IB_WR_ATOMIC_FETCH_AND_ADD:
		wqe->atomic.remote_addr = atomic_wr(wr)->remote_addr;
		wqe->atomic.compare_add = atomic_wr(wr)->compare_add;
		wqe->atomic.swap = atomic_wr(wr)->swap;
		wqe->atomic.rkey = atomic_wr(wr)->rkey;
		break;
	case IB_WR_LOCAL_INV:
		return 0;
	case IB_WR_REG_MR:
		/*
		 * The MR's page list is set (ib_map_mr_sg()); its range
		 * and the key the consumer chose take effect when the
		 * requester reaches this WQE (frmr.c).
		 */
		wqe->reg.mr_lkey = reg_wr(wr)->mr->lkey;
		wqe->reg.key = reg_wr(wr)->key;
		wqe->reg.iova = reg_wr(wr)->mr->iova;
		wqe->reg.length = reg_wr(wr)->mr->length;
		wqe->reg.access = reg_wr(wr)->access;
		return 0;
	default:
		break;
	}

	if (vrdma_qp_is_ud(qp)) {
		/* The requester finds the AH by handle, in the QP's PD. */
		if (!ud_wr(wr)->ah)
			return -EINVAL;
		wqe->ud.ah = to_vah(ud_wr(wr)->ah)->handle;
		wqe->ud.remote_qpn = ud_wr(wr)->remote_qpn;
		/* ib_mad asks for QP1's own Q_Key with the high bit. */
		wqe->ud.remote_qkey = ud_wr(wr)->remote_qkey;
	}

	if (wr->send_flags & IB_SEND_INLINE)
		return vrdma_kwr_inline(qp, wqe, wr);
	wqe->num_sge = wr->num_sge;
	for (i = 0; i < wr->num_sge; i++) {
		wqe->sge[i].addr = wr->sg_list[i].addr;
		wqe->sge[i].length = wr->sg_list[i].length;
		wqe->sge[i].lkey = wr->sg_list[i].lkey;
	}
	return 0;
}

/* Room for one more entry in a ring the kernel produces into? */
static bool vrdma_kring_full(struct vrdma_queue *q)
{
	/* Pairs with the consumer's store-release: the slot is free. */
	return q->ring->prod - smp_load_acquire(&q->ring->cons) >=
	       q->num_entries;
}

/* Publish the entry at the ring's producer index. */
static void vrdma_kring_publish(struct vrdma_queue *q)
{
	/* The entry is complete before the index that covers it. */
	smp_store_release(&q->ring->prod, q->ring->prod + 1);
}

/**
 * vrdma_kpost_send() - post send work requests of a kernel consumer
 * @qp: a kernel QP
 * @wr: the chain of work requests
 * @bad_wr: set to the first one not posted
 *
 * Each work request becomes a WQE in the SQ ring; the QP's task sends
 * them.  Checks that need the QP's state or an MR (lkeys, opcode for the
 * QP type) are the requester's, and fail the WQE with a completion.
 *
 * Context: any; does not sleep.
 * Return: 0, -ENOMEM when the SQ is full, -EINVAL for a work request that
 * cannot be expressed (unsupported opcode or flag, too many SGEs or inline
 * bytes).
 */
int vrdma_kpost_send(struct vrdma_qp *qp, const struct ib_send_wr *wr,
		     const struct ib_send_wr **bad_wr)
{
	struct vrdma_queue *q = &qp->sq;
	unsigned long flags;
	int ret = 0;

	spin_lock_irqsave(&qp->sq_lock, flags);
	for (; wr; wr = wr->next) {
		if (vrdma_kring_full(q)) {
			ret = -ENOMEM;
			break;
		}
		ret = vrdma_kwr_to_wqe(qp, vrdma_queue_slot(q, q->ring->prod),
				       wr);
		if (ret)
			break;
		vrdma_kring_publish(q);
	}
	spin_unlock_irqrestore(&qp->sq_lock, flags);
	if (ret)
		*bad_wr = wr;
	vrdma_qp_schedule(qp);
	return ret;
}

/* Post receive work requests into a kernel receive ring (RQ or SRQ). */
static int vrdma_kpost_rq(struct vrdma_queue *q, u32 max_sge,
			  const struct ib_recv_wr *wr,
			  const struct ib_recv_wr **bad_wr)
{
	int i;

	for (; wr; wr = wr->next) {
		struct vrdma_recv_wqe *wqe;

		if (vrdma_kring_full(q)) {
			*bad_wr = wr;
			return -ENOMEM;
		}
		if (wr->num_sge < 0 || wr->num_sge > max_sge) {
			*bad_wr = wr;
			return -EINVAL;
		}
		wqe = vrdma_queue_slot(q, q->ring->prod);
		wqe->wr_id = wr->wr_id;
		wqe->num_sge = wr->num_sge;
		wqe->reserved = 0;
		for (i = 0; i < wr->num_sge; i++) {
			wqe->sge[i].addr = wr->sg_list[i].addr;
			wqe->sge[i].length = wr->sg_list[i].length;
			wqe->sge[i].lkey = wr->sg_list[i].lkey;
		}
		vrdma_kring_publish(q);
	}
	return 0;
}

/**
 * vrdma_kpost_recv() - post receive work requests of a kernel consumer
 * @qp: a kernel QP without an SRQ
 * @wr: the chain of work requests
 * @bad_wr: set to the first one not posted
 *
 * The responder takes them as messages arrive; nothing needs to run for
 * them but in the error state, where the QP's task flushes them
 * (ib_drain_rq()).  A ULP posts one for every message it receives: a task
 * run for each would cost a wakeup per message.
 *
 * Context: any; does not sleep.
 * Return: 0, -ENOMEM when the RQ is full, -EINVAL for too many SGEs or a
 * QP with an SRQ.
 */
int vrdma_kpost_recv(struct vrdma_qp *qp, const struct ib_recv_wr *wr,
		     const struct ib_recv_wr **bad_wr)
{
	unsigned long flags;
	int ret;

	if (qp->srq) {
		*bad_wr = wr;
		return -EINVAL;
	}
	spin_lock_irqsave(&qp->rq_lock, flags);
	ret = vrdma_kpost_rq(&qp->rq, qp->max_recv_sge, wr, bad_wr);
	spin_unlock_irqrestore(&qp->rq_lock, flags);
	/*
	 * The WQEs published before the state is read; vrdma_qp_error()
	 * writes the state before it flushes: either it flushes them, or
	 * this sees the error state and has them flushed.
	 */
	smp_mb();
	if (READ_ONCE(qp->state) == IB_QPS_ERR)
		vrdma_qp_schedule(qp);
	return ret;
}

/**
 * vrdma_post_srq_recv() - post receive work requests to a kernel SRQ
 * @ibsrq: the SRQ
 * @wr: the chain of work requests
 * @bad_wr: set to the first one not posted
 *
 * Context: any; does not sleep.
 * Return: 0, -ENOMEM when the SRQ is full, -EINVAL for too many SGEs or
 * an SRQ of a process (its ring is the process's to write).
 */
int vrdma_post_srq_recv(struct ib_srq *ibsrq, const struct ib_recv_wr *wr,
			const struct ib_recv_wr **bad_wr)
{
	struct vrdma_srq *srq = to_vsrq(ibsrq);
	unsigned long flags;
	int ret;

	if (!vrdma_queue_is_kernel(&srq->queue)) {
		*bad_wr = wr;
		return -EINVAL;
	}
	spin_lock_irqsave(&srq->post_lock, flags);
	ret = vrdma_kpost_rq(&srq->queue, srq->max_sge, wr, bad_wr);
	spin_unlock_irqrestore(&srq->post_lock, flags);
	return ret;
}

/* enum vrdma_wc_flags to enum ib_wc_flags (the bit values differ). */
static int vrdma_wc_flags(const struct vrdma_cqe *cqe)
{
	int flags = 0;

	if (cqe->wc_flags & VRDMA_WC_GRH)
		flags |= IB_WC_GRH;
	if (cqe->wc_flags & VRDMA_WC_WITH_IMM)
		flags |= IB_WC_WITH_IMM;
	if (cqe->wc_flags & VRDMA_WC_WITH_INV)
		flags |= IB_WC_WITH_INVALIDATE;
	if (cqe->network_hdr_type != VRDMA_NETWORK_HDR_NONE)
		flags |= IB_WC_WITH_NETWORK_HDR_TYPE;
	return flags;
}

/* Fill @wc from @cqe, a copy of a CQE the kernel wrote. */
static void vrdma_cqe_to_wc(struct vrdma_dev *vdev, const struct vrdma_cqe *cqe,
			    struct ib_wc *wc)
{
	struct vrdma_qp *qp;

	memset(wc, 0, sizeof(*wc));
	wc->wr_id = cqe->wr_id;	/* or wr_cqe: the same 64 bits */
	wc->status = cqe->status;
	wc->opcode = cqe->opcode;
	wc->vendor_err = cqe->vendor_err;
	wc->byte_len = cqe->byte_len;
	/* Immediate data or the invalidated rkey: the same 32 bits. */
	wc->ex.imm_data = cqe->ex.imm_data;
	wc->src_qp = cqe->src_qp;
	wc->wc_flags = vrdma_wc_flags(cqe);
	wc->network_hdr_type = cqe->network_hdr_type;
	wc->pkey_index = 0;
	wc->port_num = VRDMA_PORT;
	/*
	 * The CQE names its QP by number: a consumer's QP outlives its
	 * completions (it drains before it destroys), so the lookup finds
	 * it; one destroyed meanwhile reads as NULL, not as freed memory.
	 */
	qp = vrdma_qp_get(vdev, cqe->qp_num);
	if (qp) {
		wc->qp = &qp->ibqp;
		vrdma_qp_put(qp);
	}
}

/**
 * vrdma_poll_cq() - take up to @num_entries completions of a kernel CQ
 * @ibcq: the CQ
 * @num_entries: room in @wc
 * @wc: filled
 *
 * Context: any; does not sleep.
 * Return: the number of completions taken, or -EINVAL for a process's CQ
 * (it polls its ring itself).
 */
int vrdma_poll_cq(struct ib_cq *ibcq, int num_entries, struct ib_wc *wc)
{
	struct vrdma_dev *vdev = to_vdev(ibcq->device);
	struct vrdma_cq *cq = to_vcq(ibcq);
	struct vrdma_queue *q = &cq->queue;
	unsigned long flags;
	u32 cons;
	int n = 0;

	if (!vrdma_queue_is_kernel(q))
		return -EINVAL;
	/* The CQ lock also keeps resize_cq from swapping the ring. */
	spin_lock_irqsave(&cq->lock, flags);
	cons = q->ring->cons;
	while (n < num_entries && cons != q->kidx) {
		struct vrdma_cqe cqe;

		memcpy(&cqe, vrdma_queue_slot(q, cons), sizeof(cqe));
		vrdma_cqe_to_wc(vdev, &cqe, &wc[n++]);
		cons++;
	}
	/* The slots are read: the producer may reuse them. */
	smp_store_release(&q->ring->cons, cons);
	spin_unlock_irqrestore(&cq->lock, flags);
	return n;
}
