// SPDX-License-Identifier: GPL-2.0
/*
 * The requester: where a send WQE becomes packets.
 *
 * It runs in the QP's task.  First it copies the WQEs the process has
 * posted out of the SQ ring and checks them (opcode, flags, SGE count,
 * inline length, every lkey).  Then, for the WQE being sent, it cuts the
 * message into path-MTU sized packets -- FIRST, MIDDLE..., LAST, or ONLY if
 * it fits in one -- numbers them with consecutive 24-bit PSNs, gathers the
 * payload from the SGEs (or the inline data), and sends them.  An RDMA READ
 * is a single request packet that reserves one PSN per response packet; an
 * ATOMIC is a single request packet (AtomicETH) answered by one ATOMIC
 * ACKNOWLEDGE; an ATOMIC WRITE (its 8 bytes in the WQE) and a FLUSH (FETH
 * and RETH) are single packets answered by an RDMA READ RESPONSE ONLY
 * without payload.  An RC message to a QP of this host is first offered
 * to the loopback path (loopback.c), which moves it whole, without
 * packets.
 *
 * At most VRDMA_WINDOW packets are unacknowledged at a time (one after a
 * timeout, until it is acknowledged: see vrdma_retry()); the completer
 * moves the window as ACKs arrive and completes the WQEs.  READs,
 * ATOMICs, ATOMIC WRITEs and FLUSHes use a responder resource at the peer
 * while they are outstanding, so at most max_rd_atomic of them are; the
 * next one waits for the oldest to complete.
 *
 * Local operations (BIND_MW, LOCAL_INV: mw.c; REG_MR: frmr.c) send nothing: they run when
 * the requester reaches them, in SQ order, and complete in order too.
 *
 * UC sends the same packets (in the UC opcode range) but nobody
 * acknowledges them: a WQE is complete once its last packet is sent.  UD
 * sends one packet per WQE, to the destination of the WQE's address handle
 * (ud.c); a raw packet QP sends its WQE's bytes as one Ethernet frame
 * (raw.c).  A failed WQE of these stops only the SQ (SQE), not the QP.
 */
#include "vrdma.h"
#include "pkt.h"
#include "trace.h"

/* BIND_MW, LOCAL_INV and REG_MR: executed here, nothing is sent. */
static bool vrdma_wqe_local(const struct vrdma_send_wqe *wqe)
{
	return wqe->opcode == IB_UVERBS_WR_BIND_MW ||
	       wqe->opcode == IB_UVERBS_WR_LOCAL_INV ||
	       wqe->opcode == VRDMA_WR_REG_MR;
}

/*
 * UD QPs (and QP1) only send, raw packet QPs only SEND (a frame has no
 * room for immediate data); UC QPs send, write and use memory windows;
 * RC QPs do everything (UC has no SEND with invalidate opcodes, no READ, no
 * atomics); XRC initiators all RC does but the memory placement extensions
 * and the masked atomics, which have no XRC opcodes here.
 */
static bool vrdma_op_on_qp_type(enum ib_qp_type type, u8 opcode)
{
	switch (opcode) {
	case IB_UVERBS_WR_SEND:
		return true;
	case IB_UVERBS_WR_SEND_WITH_IMM:
		return type != IB_QPT_RAW_PACKET;
	case IB_UVERBS_WR_RDMA_WRITE:
	case IB_UVERBS_WR_RDMA_WRITE_WITH_IMM:
	case IB_UVERBS_WR_BIND_MW:
	case IB_UVERBS_WR_LOCAL_INV:
	case VRDMA_WR_REG_MR:
		return type == IB_QPT_RC || type == IB_QPT_UC ||
		       type == IB_QPT_XRC_INI;
	case VRDMA_WR_ATOMIC_WRITE:
	case VRDMA_WR_FLUSH:
	case VRDMA_WR_MASKED_ATOMIC_CMP_AND_SWP:
	case VRDMA_WR_MASKED_ATOMIC_FETCH_AND_ADD:
		return type == IB_QPT_RC;
	default:
		return type == IB_QPT_RC || type == IB_QPT_XRC_INI;
	}
}

/*
 * Check a WQE copied out of the ring.  Returns IB_WC_SUCCESS or the status
 * the WQE will complete with; its length is set either way.
 */
static u8 vrdma_check_swqe(struct vrdma_qp *qp, struct vrdma_swqe *swqe)
{
	struct vrdma_send_wqe *wqe = swqe->wqe;
	u32 total = 0;
	int access = 0;
	int ret;

	swqe->length = 0;
	if (!vrdma_op_on_qp_type(qp->ibqp.qp_type, wqe->opcode))
		return IB_WC_LOC_QP_OP_ERR;
	/* The XRCETH has 24 bits for the target's SRQ. */
	if (qp->ibqp.qp_type == IB_QPT_XRC_INI &&
	    wqe->xrc_remote_srqn > VRDMA_XRCETH_SRQN_MASK)
		return IB_WC_LOC_QP_OP_ERR;
	switch (wqe->opcode) {
	case IB_UVERBS_WR_SEND:
	case IB_UVERBS_WR_SEND_WITH_IMM:
	case IB_UVERBS_WR_SEND_WITH_INV:
	case IB_UVERBS_WR_RDMA_WRITE:
	case IB_UVERBS_WR_RDMA_WRITE_WITH_IMM:
		break;
	case VRDMA_WR_MASKED_ATOMIC_CMP_AND_SWP:
	case VRDMA_WR_MASKED_ATOMIC_FETCH_AND_ADD:
		/* The masks take the second SGE's place: room for it. */
		if (wqe->num_sge != 1 || !vrdma_sq_fits_masks(&qp->sq))
			return IB_WC_LOC_QP_OP_ERR;
		fallthrough;
	case IB_UVERBS_WR_RDMA_READ:
	case IB_UVERBS_WR_ATOMIC_CMP_AND_SWP:
	case IB_UVERBS_WR_ATOMIC_FETCH_AND_ADD:
		if (wqe->flags & VRDMA_SEND_INLINE)
			return IB_WC_LOC_QP_OP_ERR;
		access = IB_ACCESS_LOCAL_WRITE;
		break;
	case VRDMA_WR_ATOMIC_WRITE:
	case VRDMA_WR_FLUSH:
		/* Their operands are in the WQE: there is no data to gather. */
		if ((wqe->flags & VRDMA_SEND_INLINE) || wqe->num_sge)
			return IB_WC_LOC_QP_OP_ERR;
		break;
	case IB_UVERBS_WR_LOCAL_INV:
	case IB_UVERBS_WR_BIND_MW:
		break;
	case VRDMA_WR_REG_MR:
		/* Kernel consumers only (frmr.c). */
		if (qp->ibqp.uobject)
			return IB_WC_LOC_QP_OP_ERR;
		break;
	default:
		return IB_WC_LOC_QP_OP_ERR;
	}
	if (wqe->flags & ~(VRDMA_SEND_FENCE | VRDMA_SEND_SIGNALED |
			   VRDMA_SEND_SOLICITED | VRDMA_SEND_INLINE))
		return IB_WC_LOC_QP_OP_ERR;
	/* No data: checked when they run (they depend on the WQEs before). */
	if (vrdma_wqe_local(wqe))
		return IB_WC_SUCCESS;
	if (wqe->opcode == VRDMA_WR_ATOMIC_WRITE) {
		swqe->length = sizeof(wqe->atomic_write.value);
		return IB_WC_SUCCESS;
	}
	if (wqe->opcode == VRDMA_WR_FLUSH) {
		/* Something to make visible, and a selectivity level known. */
		if (!wqe->flush.type ||
		    (wqe->flush.type & ~(VRDMA_FLUSH_GLOBAL |
					 VRDMA_FLUSH_PERSISTENT)) ||
		    wqe->flush.level > VRDMA_FLUSH_MR)
			return IB_WC_LOC_QP_OP_ERR;
		return IB_WC_SUCCESS;
	}

	if (wqe->flags & VRDMA_SEND_INLINE) {
		if (wqe->inline_len > qp->max_inline)
			return IB_WC_LOC_LEN_ERR;
		swqe->length = wqe->inline_len;
		return IB_WC_SUCCESS;
	}
	if (wqe->num_sge > qp->max_send_sge)
		return IB_WC_LOC_LEN_ERR;
	ret = vrdma_sgl_check(qp->vdev, qp->pd, wqe->sge, wqe->num_sge,
			      access, &total);
	swqe->length = total;
	if (ret == -EINVAL)
		return IB_WC_LOC_LEN_ERR;
	if (ret)
		return IB_WC_LOC_PROT_ERR;
	/* An atomic returns exactly the 8 bytes of the original value. */
	if (vrdma_wqe_atomic(wqe) && total != sizeof(u64))
		return IB_WC_LOC_LEN_ERR;
	return IB_WC_SUCCESS;
}

/*
 * Copy newly posted WQEs out of the ring.  Returns false if the ring's
 * producer index is garbage -- more entries than the ring holds, or behind
 * the WQEs already taken (copying up to it would wrap through 2^32
 * entries) -- the QP is then in error.
 */
static bool vrdma_fetch_swqes(struct vrdma_qp *qp)
{
	struct vrdma_queue *q = &qp->sq;
	/* Pairs with the provider's store-release: the WQEs are visible. */
	u32 prod = smp_load_acquire(&q->ring->prod);

	if (prod - q->kidx > q->num_entries ||
	    prod - q->kidx < qp->req.ring_fetch - q->kidx) {
		vrdma_count(qp->vdev, VRDMA_CNT_BAD_WQE);
		vrdma_qp_error(qp, IB_EVENT_QP_FATAL);
		return false;
	}
	while (qp->req.ring_fetch != prod) {
		struct vrdma_swqe *swqe = vrdma_swqe_at(qp, qp->req.fetch);

		memcpy(swqe->wqe, vrdma_queue_slot(q, qp->req.ring_fetch),
		       q->entry_size);
		swqe->kind = VRDMA_SWQE_USER;
		swqe->pd = NULL;
		swqe->state = VRDMA_SWQE_NEW;
		swqe->rd_atomic = false;
		swqe->read_done = 0;
		swqe->status = vrdma_check_swqe(qp, swqe);
		trace_vrdma_sq_wqe(qp, qp->req.ring_fetch, swqe);
		if (swqe->status != IB_WC_SUCCESS)
			vrdma_count(qp->vdev, VRDMA_CNT_BAD_WQE);
		qp->req.fetch++;
		qp->req.ring_fetch++;
	}
	return true;
}

/**
 * vrdma_wqe_atomic_op() - what an ATOMIC WQE does, and its BTH opcode
 * @wqe: a checked copy of a CMP_AND_SWP or FETCH_AND_ADD WQE, masked or not
 * @aop: set to the operation, with the masks of a plain one; may be NULL
 *
 * A masked atomic whose masks make it the plain operation (compare-and-
 * swap with all bits compared and swapped, fetch-and-add without field
 * boundaries) goes as the IBA's atomic, which any responder understands;
 * only the others need vrdma's opcodes.
 *
 * Return: the BTH opcode of its request.
 */
u8 vrdma_wqe_atomic_op(const struct vrdma_send_wqe *wqe,
		       struct vrdma_atomic_op *aop)
{
	bool cas = wqe->opcode == IB_UVERBS_WR_ATOMIC_CMP_AND_SWP ||
		   wqe->opcode == VRDMA_WR_MASKED_ATOMIC_CMP_AND_SWP;
	struct vrdma_atomic_op op = vrdma_atomic_plain(cas,
			cas ? wqe->atomic.compare_add : 0,
			cas ? wqe->atomic.swap : wqe->atomic.compare_add);
	bool plain = true;

	if (vrdma_wqe_masked_atomic(wqe)) {
		/* Checked: the WQE has one SGE and room for the masks. */
		const struct vrdma_atomic_masks *m = (const void *)&wqe->sge[1];

		op.compare_mask = cas ? m->compare_add_mask : 0;
		op.swap_add_mask = cas ? m->swap_mask : m->compare_add_mask;
		plain = cas ? op.compare_mask == ~0ULL &&
			      op.swap_add_mask == ~0ULL :
			      !op.swap_add_mask;
	}
	if (aop)
		*aop = op;
	if (plain)
		return cas ? IB_OPCODE_RC_COMPARE_SWAP : IB_OPCODE_RC_FETCH_ADD;
	return cas ? VRDMA_OPCODE_RC_MASKED_COMPARE_SWAP :
		     VRDMA_OPCODE_RC_MASKED_FETCH_ADD;
}

/* The BTH opcode of the packet of @wqe that starts at @offset. */
static u8 vrdma_req_opcode(struct vrdma_send_wqe *wqe, bool first, bool last)
{
	switch (wqe->opcode) {
	case IB_UVERBS_WR_SEND:
		if (first)
			return last ? IB_OPCODE_RC_SEND_ONLY :
				      IB_OPCODE_RC_SEND_FIRST;
		return last ? IB_OPCODE_RC_SEND_LAST : IB_OPCODE_RC_SEND_MIDDLE;
	case IB_UVERBS_WR_SEND_WITH_IMM:
		if (first)
			return last ? IB_OPCODE_RC_SEND_ONLY_WITH_IMMEDIATE :
				      IB_OPCODE_RC_SEND_FIRST;
		return last ? IB_OPCODE_RC_SEND_LAST_WITH_IMMEDIATE :
			      IB_OPCODE_RC_SEND_MIDDLE;
	case IB_UVERBS_WR_SEND_WITH_INV:
		if (first)
			return last ? IB_OPCODE_RC_SEND_ONLY_WITH_INVALIDATE :
				      IB_OPCODE_RC_SEND_FIRST;
		return last ? IB_OPCODE_RC_SEND_LAST_WITH_INVALIDATE :
			      IB_OPCODE_RC_SEND_MIDDLE;
	case IB_UVERBS_WR_RDMA_WRITE:
		if (first)
			return last ? IB_OPCODE_RC_RDMA_WRITE_ONLY :
				      IB_OPCODE_RC_RDMA_WRITE_FIRST;
		return last ? IB_OPCODE_RC_RDMA_WRITE_LAST :
			      IB_OPCODE_RC_RDMA_WRITE_MIDDLE;
	case IB_UVERBS_WR_RDMA_WRITE_WITH_IMM:
		if (first)
			return last ?
				IB_OPCODE_RC_RDMA_WRITE_ONLY_WITH_IMMEDIATE :
				IB_OPCODE_RC_RDMA_WRITE_FIRST;
		return last ? IB_OPCODE_RC_RDMA_WRITE_LAST_WITH_IMMEDIATE :
			      IB_OPCODE_RC_RDMA_WRITE_MIDDLE;
	case IB_UVERBS_WR_ATOMIC_CMP_AND_SWP:
	case IB_UVERBS_WR_ATOMIC_FETCH_AND_ADD:
	case VRDMA_WR_MASKED_ATOMIC_CMP_AND_SWP:
	case VRDMA_WR_MASKED_ATOMIC_FETCH_AND_ADD:
		return vrdma_wqe_atomic_op(wqe, NULL);
	case VRDMA_WR_ATOMIC_WRITE:
		return VRDMA_OPCODE_RC_ATOMIC_WRITE;
	case VRDMA_WR_FLUSH:
		return VRDMA_OPCODE_RC_FLUSH;
	default:
		return IB_OPCODE_RC_RDMA_READ_REQUEST;
	}
}

/**
 * vrdma_swqe_gather() - copy bytes of a send WQE's message into a packet
 * @qp: the QP
 * @wqe: the kernel's copy of the WQE, checked
 * @offset: first byte of the message
 * @buf: where to
 * @length: bytes
 *
 * Return: 0, -EINVAL for bytes beyond the message, or a negative errno
 * when an MR went away after the WQE was checked.
 */
int vrdma_swqe_gather(struct vrdma_qp *qp, struct vrdma_send_wqe *wqe,
		      u32 offset, void *buf, u32 length)
{
	if (wqe->flags & VRDMA_SEND_INLINE) {
		/* Never past the inline data, whatever the offset says. */
		if (offset > wqe->inline_len ||
		    length > wqe->inline_len - offset)
			return -EINVAL;
		memcpy(buf, (u8 *)wqe->sge + offset, length);
		return 0;
	}
	return vrdma_sgl_copy(qp->vdev, qp->pd, wqe->sge, wqe->num_sge,
			      offset, buf, length, false);
}

/*
 * The AtomicETH: compare-and-swap carries the new value and the one to
 * compare with, fetch-and-add the addend (and a compare field of 0); a
 * masked atomic's masks follow in the MaskedAtomicETH.
 */
static void vrdma_atmeth_init(struct sk_buff *skb, struct vrdma_send_wqe *wqe)
{
	struct vrdma_atmeth *atmeth = vrdma_ext(skb, VRDMA_OPF_ATMETH);
	struct vrdma_atomic_op aop;

	vrdma_wqe_atomic_op(wqe, &aop);
	atmeth->va = cpu_to_be64(wqe->atomic.remote_addr);
	atmeth->rkey = cpu_to_be32(wqe->atomic.rkey);
	atmeth->swap_add = cpu_to_be64(aop.swap_add);
	atmeth->comp = cpu_to_be64(aop.compare);
	if (vrdma_pkt(skb)->mask & VRDMA_OPF_ATMMASK) {
		struct vrdma_atmmask *m = vrdma_ext(skb, VRDMA_OPF_ATMMASK);

		m->swap_add_mask = cpu_to_be64(aop.swap_add_mask);
		m->comp_mask = cpu_to_be64(aop.compare_mask);
	}
}

/*
 * The RETH of @wqe's packet: for a READ resent after a loss (@done bytes
 * placed already), only what is missing; for a FLUSH, the range it names,
 * next to the FETH.
 */
static void vrdma_reth_init(struct sk_buff *skb, struct vrdma_swqe *swqe,
			    u32 done)
{
	struct vrdma_reth *reth = vrdma_ext(skb, VRDMA_OPF_RETH);
	struct vrdma_send_wqe *wqe = swqe->wqe;

	switch (wqe->opcode) {
	case VRDMA_WR_ATOMIC_WRITE:
		reth->va = cpu_to_be64(wqe->atomic_write.remote_addr);
		reth->rkey = cpu_to_be32(wqe->atomic_write.rkey);
		reth->len = cpu_to_be32(sizeof(wqe->atomic_write.value));
		break;
	case VRDMA_WR_FLUSH: {
		struct vrdma_feth *feth = vrdma_ext(skb, VRDMA_OPF_FETH);

		feth->bits = cpu_to_be32((wqe->flush.level <<
					  VRDMA_FETH_SEL_SHIFT &
					  VRDMA_FETH_SEL_MASK) |
					 (wqe->flush.type &
					  VRDMA_FETH_PLT_MASK));
		reth->va = cpu_to_be64(wqe->flush.remote_addr);
		reth->rkey = cpu_to_be32(wqe->flush.rkey);
		reth->len = cpu_to_be32(wqe->flush.length);
		break;
	}
	default:
		reth->va = cpu_to_be64(wqe->rdma.remote_addr + done);
		reth->rkey = cpu_to_be32(wqe->rdma.rkey);
		reth->len = cpu_to_be32(swqe->length - done);
		break;
	}
}

/* Below this, copying the payload costs less than referencing its pages. */
#define VRDMA_ZERO_COPY_MIN	512

/*
 * An RC request packet whose payload is page fragments pointing at the
 * WQE's MR pages, not a copy (vrdma_sgl_add_frags()): the data is copied
 * once, by the receiver, straight into its MR.  Only for RC: its WQE
 * completes after the peer has taken the data, so the process cannot
 * change the buffer under a packet still on its way; only for payloads
 * without pad; and only to a QP of this host.  On a wire, copies of a
 * packet outlive its WQE (a duplicate or a resend still queued somewhere):
 * pointing at memory the process has reused since, they would arrive with
 * a bad ICRC.  Returns the packet, NULL when it must be built by copying,
 * or an ERR_PTR when an MR of the WQE is no longer usable.
 */
static struct sk_buff *vrdma_req_zero_copy(struct vrdma_qp *qp,
					   struct vrdma_send_wqe *wqe,
					   u32 offset, u8 opcode, u32 paylen)
{
	struct sk_buff *skb;
	int err;

	if (!vrdma_qp_is_rc(qp) || paylen < VRDMA_ZERO_COPY_MIN ||
	    (paylen & 3) || (wqe->flags & VRDMA_SEND_INLINE) ||
	    !vrdma_pkt_local(qp->vdev, &qp->av))
		return NULL;
	skb = vrdma_pkt_alloc_hdr(qp->vdev, &qp->av, opcode, paylen, false);
	if (!skb)
		return NULL;
	err = vrdma_sgl_add_frags(qp->vdev, qp->pd, wqe->sge, wqe->num_sge,
				  offset, skb, paylen);
	if (!err)
		return skb;
	kfree_skb(skb);
	return err == -E2BIG || err == -EOPNOTSUPP ? NULL : ERR_PTR(err);
}

/*
 * Build the packet of @swqe with @opcode carrying @paylen bytes from
 * @offset, all but its BTH: the extension headers, and the payload taken
 * from the WQE's SGL (or pointing at its pages).  A READ resent after a
 * loss asks for what follows @done.  Returns the packet, ERR_PTR(-ENOMEM)
 * when none could be allocated (try again later), or another ERR_PTR when
 * the SGL no longer grants the bytes.
 */
static struct sk_buff *vrdma_req_build(struct vrdma_qp *qp,
				       struct vrdma_swqe *swqe, u32 offset,
				       u8 opcode, u32 paylen, u32 done)
{
	struct vrdma_send_wqe *wqe = swqe->wqe;
	struct sk_buff *skb;
	bool gather = true;
	u32 mask;

	skb = vrdma_req_zero_copy(qp, wqe, offset, opcode, paylen);
	if (IS_ERR(skb))
		return skb;
	if (skb) {
		gather = false;
	} else {
		skb = vrdma_pkt_alloc(qp->vdev, &qp->av, opcode, paylen);
		if (!skb)
			return ERR_PTR(-ENOMEM);
	}
	mask = vrdma_pkt(skb)->mask;

	if (mask & VRDMA_OPF_XRCETH) {
		struct vrdma_xrceth *xrceth = vrdma_ext(skb, VRDMA_OPF_XRCETH);

		xrceth->srqn = cpu_to_be32(wqe->xrc_remote_srqn);
	}
	if (mask & VRDMA_OPF_RETH)
		vrdma_reth_init(skb, swqe, done);
	if (mask & VRDMA_OPF_ATMETH)
		vrdma_atmeth_init(skb, wqe);
	if (mask & VRDMA_OPF_IMMDT) {
		struct vrdma_immdt *immdt = vrdma_ext(skb, VRDMA_OPF_IMMDT);

		immdt->imm = wqe->ex.imm_data;
	}
	if (mask & VRDMA_OPF_IETH) {
		struct vrdma_ieth *ieth = vrdma_ext(skb, VRDMA_OPF_IETH);

		ieth->rkey = cpu_to_be32(wqe->ex.invalidate_rkey);
	}
	if (mask & VRDMA_OPF_ATOMIC_WRITE) {
		memcpy(vrdma_payload(skb), wqe->atomic_write.value, paylen);
	} else if (paylen && gather &&
		   vrdma_swqe_gather(qp, wqe, offset, vrdma_payload(skb),
				     paylen)) {
		kfree_skb(skb);
		return ERR_PTR(-EFAULT);
	}
	return skb;
}

/*
 * Build and send the next packet of @swqe.  Returns 0, or a negative errno
 * when no packet could be built (the caller retries later).
 */
static int vrdma_send_packet(struct vrdma_qp *qp, struct vrdma_swqe *swqe)
{
	struct vrdma_send_wqe *wqe = swqe->wqe;
	u32 offset = qp->req.offset;
	bool first = offset == 0;
	bool is_read = wqe->opcode == IB_UVERBS_WR_RDMA_READ;
	bool rd_atomic = vrdma_wqe_rd_atomic(wqe);
	/* One packet: an ATOMIC WRITE's 8 bytes, or no payload. */
	u32 paylen = rd_atomic ? (wqe->opcode == VRDMA_WR_ATOMIC_WRITE ?
				  swqe->length : 0) :
				 min(swqe->length - offset, qp->mtu);
	bool last = rd_atomic || offset + paylen == swqe->length;
	/* A READ resent after a loss asks only for what is missing. */
	u32 done = is_read ? swqe->read_done : 0;
	u32 psn = qp->req.psn, npsn = 1;
	u8 opcode = vrdma_req_opcode(wqe, first, last);
	struct sk_buff *skb;
	bool ack_req;

	/* UC and XRC have the same opcodes as RC, each in its own range. */
	if (qp->ibqp.qp_type == IB_QPT_UC)
		opcode += IB_OPCODE_UC;
	else if (qp->ibqp.qp_type == IB_QPT_XRC_INI)
		opcode += VRDMA_OPCODE_XRC;
	skb = vrdma_req_build(qp, swqe, offset, opcode, paylen, done);
	if (PTR_ERR_OR_ZERO(skb) == -ENOMEM)
		return -ENOMEM;
	if (IS_ERR(skb)) {
		swqe->status = IB_WC_LOC_PROT_ERR;
		return 0;
	}

	if (is_read) {
		npsn = max(1U, DIV_ROUND_UP(swqe->length - done, qp->mtu));
		swqe->read_start = done;
	}
	ack_req = vrdma_qp_is_rc(qp) &&
		  (last || qp->req.probe ||
		   vrdma_psn_diff(psn, qp->req.una) % VRDMA_ACK_EVERY ==
		   VRDMA_ACK_EVERY - 1);
	vrdma_bth_init(skb, qp->attr.dest_qp_num, psn,
		       last && (wqe->flags & VRDMA_SEND_SOLICITED), ack_req);

	/*
	 * A message sent whole before stays SENT when it is sent again after
	 * a rewind: its last PSN is known, and an answer to what was sent
	 * before completes it (vrdma_ack_up_to()).
	 */
	if (first && !done && swqe->state == VRDMA_SWQE_NEW) {
		swqe->first_psn = psn;
		swqe->state = VRDMA_SWQE_SENDING;
	}
	if (rd_atomic && !swqe->rd_atomic) {
		swqe->rd_atomic = true;
		qp->req.rd_atomic++;
	}
	qp->req.psn = vrdma_psn_add(psn, npsn);
	vrdma_req_psn_sent(qp);
	if (!timer_pending(&qp->retrans_timer))
		vrdma_retrans_arm(qp);
	qp->req.offset += paylen;
	if (last) {
		swqe->last_psn = vrdma_psn_add(psn, npsn - 1);
		swqe->state = VRDMA_SWQE_SENT;
		qp->req.cur++;
		qp->req.offset = 0;
	}
	trace_vrdma_req_pkt(qp, swqe, skb, psn, offset);
	vrdma_pkt_send(qp->vdev, &qp->av, qp->txq, skb);
	return 0;
}

/* Send the next packet (or frame) of @swqe: as vrdma_send_packet(). */
static int vrdma_req_send_one(struct vrdma_qp *qp, struct vrdma_swqe *swqe)
{
	if (vrdma_qp_is_ud(qp))
		return vrdma_ud_send_packet(qp, swqe);
	if (qp->ibqp.qp_type == IB_QPT_RAW_PACKET)
		return vrdma_raw_send(qp, swqe);
	return vrdma_send_packet(qp, swqe);
}

/*
 * Is there an RDMA READ or ATOMIC not completed before @idx? (for the
 * fence flag)
 */
static bool vrdma_reads_pending(struct vrdma_qp *qp, u32 idx)
{
	u32 i;

	for (i = qp->req.head; i != idx; i++)
		if (vrdma_wqe_rd_atomic(vrdma_swqe_at(qp, i)->wqe))
			return true;
	return false;
}

/*
 * May one more READ or ATOMIC be sent?  The peer's responder keeps the
 * answers of only max_dest_rd_atomic of them for a resend, which is what
 * our max_rd_atomic was set from.  0 lets one through, as hardware does
 * that encodes the limit as a power of two: waiting for ever is no answer.
 */
static bool vrdma_rd_atomic_room(struct vrdma_qp *qp)
{
	return qp->req.rd_atomic < max_t(u32, qp->attr.max_rd_atomic, 1);
}

/*
 * Run the local operation @swqe, at req.cur.  It takes the PSN of the last
 * request before it as its own and consumes none: the ACK of that request
 * completes it, in order, after the requests before it
 * (vrdma_ack_up_to()); with nothing outstanding it completes at once.  A
 * failed one completes, with its error, once it is the oldest, and the QP
 * goes to error.  After a rewind the requester passes it again: it runs
 * once.  Returns false when the requester must stop.
 */
static bool vrdma_exec_local(struct vrdma_qp *qp, struct vrdma_swqe *swqe)
{
	struct vrdma_send_wqe *wqe = swqe->wqe;
	u32 idx = qp->req.cur;

	if (swqe->state == VRDMA_SWQE_NEW) {
		if (wqe->opcode == IB_UVERBS_WR_BIND_MW)
			swqe->status = vrdma_mw_bind(qp, wqe);
		else if (wqe->opcode == VRDMA_WR_REG_MR)
			swqe->status = vrdma_frmr_reg(qp, wqe);
		else if (vrdma_invalidate_key(qp, wqe->ex.invalidate_rkey,
					      false))
			swqe->status = IB_WC_LOC_QP_OP_ERR;
		swqe->first_psn = vrdma_psn_add(qp->req.psn, -1);
		swqe->last_psn = swqe->first_psn;
		swqe->state = VRDMA_SWQE_SENT;
	}
	if (swqe->status != IB_WC_SUCCESS) {
		if (qp->req.head != idx)
			return false;
		qp->req.cur++;
		vrdma_complete_swqe(qp, swqe, swqe->status);
		return false;
	}
	qp->req.cur++;
	if (qp->req.head == idx)
		vrdma_complete_swqe(qp, swqe, IB_WC_SUCCESS);
	return true;
}

/*
 * Send what the SQ holds, within the window: vrdma_requester(), from the
 * QP's tasklet when @bh (vrdma_requester_bh()).
 *
 * One loop over the WQEs in SQ order, whole: each condition that holds
 * the next WQE back (SQD, a failed WQE's turn, a fence, max_rd_atomic,
 * the window, the budget) is a "break" the reader sees next to the others,
 * which is what decides when the requester runs again.
 */
static void vrdma_send_wqes(struct vrdma_qp *qp, bool bh)
{
	bool acked = vrdma_qp_is_rc(qp);
	/*
	 * No window holds UC and UD back: as many packets per run.  The
	 * tasklet sends a few, as it answers a few READ packets.
	 */
	int budget = bh ? VRDMA_BH_BUDGET : VRDMA_WINDOW;

	qp->req.bh_more = false;
	if (qp->state == IB_QPS_ERR || qp->state == IB_QPS_SQE) {
		vrdma_flush_sq(qp);
		return;
	}
	if (qp->state != IB_QPS_RTS && qp->state != IB_QPS_SQD)
		return;
	if (!vrdma_fetch_swqes(qp))
		return;
	if (READ_ONCE(qp->req.timed_out)) {
		vrdma_timed_out(qp);
		if (qp->state == IB_QPS_ERR)
			return;
	}

	while (qp->req.cur != qp->req.fetch && !qp->req.rnr_wait) {
		struct vrdma_swqe *swqe = vrdma_swqe_at(qp, qp->req.cur);

		if (swqe->state == VRDMA_SWQE_NEW) {
			/* SQD: finish messages begun, start no new one. */
			if (qp->state == IB_QPS_SQD)
				break;
			/* A bad WQE completes in order, after the others. */
			if (swqe->status != IB_WC_SUCCESS) {
				if (qp->req.head != qp->req.cur)
					break;
				qp->req.cur++;
				vrdma_complete_swqe(qp, swqe, swqe->status);
				return;
			}
			if ((swqe->wqe->flags & VRDMA_SEND_FENCE) &&
			    vrdma_reads_pending(qp, qp->req.cur))
				break;
			if (vrdma_wqe_rd_atomic(swqe->wqe) &&
			    !vrdma_rd_atomic_room(qp))
				break;
		}
		if (vrdma_wqe_local(swqe->wqe)) {
			/*
			 * Binding, registering and invalidating are written
			 * for the QP's mutex holder (mw.c, frmr.c, mr.c) and
			 * rare: the task runs them.
			 */
			if (bh) {
				vrdma_qp_schedule(qp);
				break;
			}
			if (!vrdma_exec_local(qp, swqe))
				break;
			continue;
		}
		/* After a timeout, one request until it is acknowledged. */
		if (vrdma_psn_diff(qp->req.psn, qp->req.una) >=
		    (qp->req.probe ? 1 : VRDMA_WINDOW))
			break;
		/*
		 * A local peer: the whole message at once, no packet.  Not
		 * from the tasklet: it takes the peer's mutex.
		 */
		if (acked && !bh && vrdma_loopback_exec(qp, swqe)) {
			if (qp->state == IB_QPS_ERR)
				return;
			continue;
		}
		if ((!acked || bh) && !budget--) {
			/*
			 * Let other QPs in; carry on in the next run, the
			 * tasklet's own when it is the tasklet's.
			 */
			if (bh)
				qp->req.bh_more = true;
			else
				vrdma_qp_continue(qp);
			break;
		}
		if (vrdma_req_send_one(qp, swqe)) {
			/* Out of memory: try again on the next run. */
			vrdma_qp_continue(qp);
			break;
		}
		/* UC and UD wait for no ACK: a packet sent is done with. */
		if (!acked)
			qp->req.una = qp->req.psn;
		if (swqe->status != IB_WC_SUCCESS) {
			/* Failed midway: complete it once it is the oldest. */
			if (qp->req.head != qp->req.cur)
				break;
			qp->req.cur++;
			qp->req.offset = 0;
			vrdma_complete_swqe(qp, swqe, swqe->status);
			return;
		}
		if (!acked && swqe->state == VRDMA_SWQE_SENT)
			vrdma_complete_swqe(qp, swqe, IB_WC_SUCCESS);
	}

	if (qp->state == IB_QPS_SQD && qp->req.sqd_event &&
	    qp->req.head == qp->req.cur) {
		struct ib_event ev = {
			.device = qp->ibqp.device,
			.element.qp = &qp->ibqp,
			.event = IB_EVENT_SQ_DRAINED,
		};

		qp->req.sqd_event = false;
		if (qp->ibqp.event_handler)
			qp->ibqp.event_handler(&ev, qp->ibqp.qp_context);
	}
}

/*
 * Is a run of the requester certain to come without a doorbell, and soon?
 * It is when enough RC messages are waiting for their ACKs or responses:
 * each answer runs the requester (the task's run, or the tasklet's,
 * vrdma_requester_bh()), and if none comes, the retransmission timer does.
 * A WQE posted now then waits at most for the next answer, which with
 * VRDMA_QUIET_DEPTH messages in flight is a fraction of a round trip;
 * with fewer it could be a whole one, and the doorbell is worth its cost.
 */
static bool vrdma_req_answer_due(struct vrdma_qp *qp)
{
	return vrdma_qp_is_rc(qp) &&
	       qp->req.cur - qp->req.head >= VRDMA_QUIET_DEPTH &&
	       timer_pending(&qp->retrans_timer);
}

/*
 * After a run: tell the provider whether the next WQE needs a doorbell
 * (see vrdma_requester()).
 */
static void vrdma_req_doorbell_state(struct vrdma_qp *qp)
{
	struct vrdma_ring *ring = qp->sq.ring;

	/*
	 * The flag is set only in RTS and SQD, which the QP leaves for the
	 * error states (whose flush cleared it) or RESET (which clears it).
	 */
	if (qp->state != IB_QPS_RTS && qp->state != IB_QPS_SQD)
		return;
	if (qp->req.cur != qp->req.fetch || vrdma_req_answer_due(qp)) {
		if (!READ_ONCE(ring->no_doorbell))
			WRITE_ONCE(ring->no_doorbell, 1);
		return;
	}
	vrdma_sq_want_doorbell(qp);
	if (READ_ONCE(ring->prod) != qp->req.ring_fetch)
		vrdma_qp_continue(qp);	/* posted meanwhile, maybe unrung */
}

/**
 * vrdma_requester() - send what the SQ holds, within the window
 * @qp: the QP, engines owned, mutex held
 *
 * Then tells the provider whether the next WQE needs a doorbell.  A run
 * that reads prod again is certain when WQEs fetched are held back by
 * something (the window, max_rd_atomic, a fence, an RNR wait, SQD) whose
 * end runs the requester (a response, a timer, modify_qp), and when many
 * RC messages await their answers (vrdma_req_answer_due()): until then
 * the provider may skip the doorbell (no_doorbell).  Otherwise prod is
 * read again after the flag is cleared, so that a WQE published meanwhile
 * without a doorbell is not left behind: another run takes it.
 */
void vrdma_requester(struct vrdma_qp *qp)
{
	vrdma_qp_assert_locked(qp);

	vrdma_send_wqes(qp, false);
	vrdma_req_doorbell_state(qp);
}

/**
 * vrdma_requester_bh() - the requester's run after answers, in the softirq
 * @qp: an RC QP in RTS, engines owned by the QP's tasklet
 *
 * The answers just completed may have freed the window for WQEs held back,
 * and WQEs posted while no_doorbell was set wait for this run.  Sending
 * them from here saves waking the task, as rxe's completer runs its
 * requester.  It sends at most VRDMA_BH_BUDGET packets, leaving the rest
 * to the tasklet's next run (req.bh_more), and nothing that needs process
 * context: the loopback path (loopback.c) and the local operations (bind,
 * register, invalidate) are left to the task, which it queues.
 */
void vrdma_requester_bh(struct vrdma_qp *qp)
{
	vrdma_qp_assert_owned(qp);

	vrdma_send_wqes(qp, true);
	vrdma_req_doorbell_state(qp);
}
