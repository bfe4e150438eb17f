// SPDX-License-Identifier: (GPL-2.0 OR Linux-OpenIB)
/*
 * The ibv_wr_* work request API of an extended QP (ibv_qp_ex), created with
 * IBV_QP_INIT_ATTR_SEND_OPS_FLAGS.
 *
 * A batch is what happens between ibv_wr_start() and ibv_wr_complete() or
 * ibv_wr_abort(), under the SQ lock.  Each builder (ibv_wr_send(),
 * ibv_wr_rdma_write(), ...) starts a WQE in the next free slot of the SQ
 * ring, the setters that follow (ibv_wr_set_sge(), ...) fill in its data,
 * and they write the same bytes post_send writes, through the same helpers
 * (ring.h).  Nothing of it is the kernel's before wr_complete publishes the
 * whole batch with one store-release of prod and rings the doorbell once;
 * wr_abort, or any error, just moves our head back to where the batch
 * began.
 *
 * The builders and setters return nothing: the first error is recorded, the
 * rest of the batch is ignored, and wr_complete returns the error having
 * posted nothing: EINVAL for a bad request (an op the QP was not created
 * for, too many SGEs, too much inline data, a setter with no WQE, a QP not
 * ready to send), ENOMEM when the SQ is full, EOPNOTSUPP for what the
 * kernel cannot do yet.
 */
#include <errno.h>

#include "vrdma.h"

/*
 * The ops the kernel carries out, by QP type.  Atomics, SEND with
 * invalidate, LOCAL_INV and BIND_MW depend on what the device reports
 * (vrdma_wr_check_ops); ATOMIC WRITE needs only REMOTE_WRITE rights, which
 * every kernel vrdma builds for grants (ib_core 6.1 too, which does not
 * know the device capability); TSO and the rest are not in the kernel.
 * An XRC initiator carries RC's SENDs, RDMA and atomics, not ATOMIC WRITE,
 * invalidation or memory windows.
 */
#define VRDMA_WR_OPS_UD	(IBV_QP_EX_WITH_SEND | IBV_QP_EX_WITH_SEND_WITH_IMM)
#define VRDMA_WR_OPS_UC	(VRDMA_WR_OPS_UD | IBV_QP_EX_WITH_RDMA_WRITE | \
			 IBV_QP_EX_WITH_RDMA_WRITE_WITH_IMM)
#define VRDMA_WR_OPS_RC	(VRDMA_WR_OPS_UC | IBV_QP_EX_WITH_RDMA_READ | \
			 IBV_QP_EX_WITH_ATOMIC_WRITE)
#define VRDMA_WR_OPS_ATOMIC (IBV_QP_EX_WITH_ATOMIC_CMP_AND_SWP | \
			     IBV_QP_EX_WITH_ATOMIC_FETCH_AND_ADD)
#define VRDMA_WR_OPS_MW	(IBV_QP_EX_WITH_LOCAL_INV | IBV_QP_EX_WITH_BIND_MW)
#define VRDMA_WR_OPS_ASK (VRDMA_WR_OPS_ATOMIC | VRDMA_WR_OPS_MW | \
			  IBV_QP_EX_WITH_SEND_WITH_INV)

/**
 * vrdma_wr_check_ops() - whether a QP of @type can have the builders of
 * @send_ops (IBV_QP_EX_WITH_*)
 * @context: the device's context
 * @type: the QP type
 * @send_ops: ibv_qp_init_attr_ex.send_ops_flags
 *
 * Atomics need the device's atomic_cap, LOCAL_INV and BIND_MW its memory
 * windows, SEND with invalidate something to invalidate (memory windows,
 * or the memory management extensions' MRs); the device is only asked when
 * @send_ops wants them.
 *
 * Return: 0, or EOPNOTSUPP (or the query's error).
 */
int vrdma_wr_check_ops(struct ibv_context *context, enum ibv_qp_type type,
		       uint64_t send_ops)
{
	struct ibv_device_attr_ex attr;
	uint64_t ops;
	int ret;

	switch (type) {
	case IBV_QPT_RC:
		ops = VRDMA_WR_OPS_RC | VRDMA_WR_OPS_ATOMIC |
		      IBV_QP_EX_WITH_SEND_WITH_INV | VRDMA_WR_OPS_MW;
		break;
	case IBV_QPT_UC:
		ops = VRDMA_WR_OPS_UC | IBV_QP_EX_WITH_SEND_WITH_INV;
		break;
	case IBV_QPT_UD:
		ops = VRDMA_WR_OPS_UD;
		break;
	case IBV_QPT_RAW_PACKET:
		/* a frame has no room for immediate data; no TSO */
		ops = IBV_QP_EX_WITH_SEND;
		break;
	case IBV_QPT_XRC_SEND:
		ops = VRDMA_WR_OPS_UC | IBV_QP_EX_WITH_RDMA_READ |
		      VRDMA_WR_OPS_ATOMIC;
		break;
	default:
		ops = 0;
		break;
	}
	if (send_ops & ~ops)
		return EOPNOTSUPP;
	if (!(send_ops & VRDMA_WR_OPS_ASK))
		return 0;

	/* the base attributes are enough: one plain QUERY_DEVICE */
	ret = ibv_cmd_query_device_any(context, NULL, &attr,
				       sizeof(attr.orig_attr), NULL, NULL);
	if (ret)
		return ret;
	if ((send_ops & VRDMA_WR_OPS_ATOMIC) &&
	    attr.orig_attr.atomic_cap == IBV_ATOMIC_NONE)
		return EOPNOTSUPP;
	if ((send_ops & VRDMA_WR_OPS_MW) &&
	    !(attr.orig_attr.device_cap_flags & IBV_DEVICE_MEM_WINDOW))
		return EOPNOTSUPP;
	if ((send_ops & IBV_QP_EX_WITH_SEND_WITH_INV) &&
	    !(attr.orig_attr.device_cap_flags &
	      (IBV_DEVICE_MEM_MGT_EXTENSIONS | IBV_DEVICE_MEM_WINDOW)))
		return EOPNOTSUPP;
	return 0;
}

/* Records the batch's first error; the setters that follow do nothing. */
static void vrdma_wr_fail(struct vrdma_sq *sq, int err)
{
	if (!sq->wr.err)
		sq->wr.err = err;
	sq->wr.wqe = NULL;
}

/*
 * A builder's common part: the header of a new WQE in the next free slot.
 * Returns the WQE for the builder's own fields, or NULL after an error.
 */
static struct vrdma_send_wqe *vrdma_wr_begin(struct ibv_qp_ex *qpx,
					     uint64_t op_flag,
					     enum ibv_wr_opcode opcode)
{
	struct vrdma_sq *sq = &to_vqp_ex(qpx)->sq;
	struct vrdma_send_wqe *wqe;

	if (sq->wr.err)
		return NULL;
	if (!(sq->send_ops & op_flag) || sq->wr.ud_addr_missing) {
		vrdma_wr_fail(sq, EINVAL);
		return NULL;
	}
	if (vrdma_uring_full(&sq->ring)) {
		vrdma_wr_fail(sq, ENOMEM);
		return NULL;
	}
	wqe = vrdma_uring_entry(&sq->ring, sq->ring.head);
	vrdma_wqe_start(wqe, qpx->wr_id, opcode, qpx->wr_flags, &sq->limits);
	sq->ring.head++;
	sq->wr.wqe = wqe;
	sq->wr.ud_addr_missing = sq->limits.ud;
	return wqe;
}

/* ---- builders ---------------------------------------------------------- */

static void vrdma_wr_send(struct ibv_qp_ex *qpx)
{
	vrdma_wr_begin(qpx, IBV_QP_EX_WITH_SEND, IBV_WR_SEND);
}

static void vrdma_wr_send_imm(struct ibv_qp_ex *qpx, __be32 imm_data)
{
	struct vrdma_send_wqe *wqe;

	wqe = vrdma_wr_begin(qpx, IBV_QP_EX_WITH_SEND_WITH_IMM,
			     IBV_WR_SEND_WITH_IMM);
	if (wqe)
		vrdma_wqe_set_imm(wqe, imm_data);
}

static void vrdma_wr_send_inv(struct ibv_qp_ex *qpx, uint32_t invalidate_rkey)
{
	struct vrdma_send_wqe *wqe;

	wqe = vrdma_wr_begin(qpx, IBV_QP_EX_WITH_SEND_WITH_INV,
			     IBV_WR_SEND_WITH_INV);
	if (wqe)
		vrdma_wqe_set_inv(wqe, invalidate_rkey);
}

static void vrdma_wr_rdma_write(struct ibv_qp_ex *qpx, uint32_t rkey,
				uint64_t remote_addr)
{
	struct vrdma_send_wqe *wqe;

	wqe = vrdma_wr_begin(qpx, IBV_QP_EX_WITH_RDMA_WRITE,
			     IBV_WR_RDMA_WRITE);
	if (wqe)
		vrdma_wqe_set_rdma(wqe, remote_addr, rkey);
}

static void vrdma_wr_rdma_write_imm(struct ibv_qp_ex *qpx, uint32_t rkey,
				    uint64_t remote_addr, __be32 imm_data)
{
	struct vrdma_send_wqe *wqe;

	wqe = vrdma_wr_begin(qpx, IBV_QP_EX_WITH_RDMA_WRITE_WITH_IMM,
			     IBV_WR_RDMA_WRITE_WITH_IMM);
	if (!wqe)
		return;
	vrdma_wqe_set_rdma(wqe, remote_addr, rkey);
	vrdma_wqe_set_imm(wqe, imm_data);
}

static void vrdma_wr_rdma_read(struct ibv_qp_ex *qpx, uint32_t rkey,
			       uint64_t remote_addr)
{
	struct vrdma_send_wqe *wqe;

	wqe = vrdma_wr_begin(qpx, IBV_QP_EX_WITH_RDMA_READ, IBV_WR_RDMA_READ);
	if (wqe)
		vrdma_wqe_set_rdma(wqe, remote_addr, rkey);
}

static void vrdma_wr_atomic_cmp_swp(struct ibv_qp_ex *qpx, uint32_t rkey,
				    uint64_t remote_addr, uint64_t compare,
				    uint64_t swap)
{
	struct vrdma_send_wqe *wqe;

	wqe = vrdma_wr_begin(qpx, IBV_QP_EX_WITH_ATOMIC_CMP_AND_SWP,
			     IBV_WR_ATOMIC_CMP_AND_SWP);
	if (wqe)
		vrdma_wqe_set_atomic(wqe, remote_addr, rkey, compare, swap);
}

static void vrdma_wr_atomic_fetch_add(struct ibv_qp_ex *qpx, uint32_t rkey,
				      uint64_t remote_addr, uint64_t add)
{
	struct vrdma_send_wqe *wqe;

	wqe = vrdma_wr_begin(qpx, IBV_QP_EX_WITH_ATOMIC_FETCH_AND_ADD,
			     IBV_WR_ATOMIC_FETCH_AND_ADD);
	if (wqe)
		vrdma_wqe_set_atomic(wqe, remote_addr, rkey, add, 0);
}

/* The 8 bytes at atomic_wr are copied now: the caller may reuse them. */
static void vrdma_wr_atomic_write(struct ibv_qp_ex *qpx, uint32_t rkey,
				  uint64_t remote_addr, const void *atomic_wr)
{
	struct vrdma_send_wqe *wqe;

	if (!atomic_wr) {
		vrdma_wr_fail(&to_vqp_ex(qpx)->sq, EINVAL);
		return;
	}
	wqe = vrdma_wr_begin(qpx, IBV_QP_EX_WITH_ATOMIC_WRITE,
			     IBV_WR_ATOMIC_WRITE);
	if (wqe)
		vrdma_wqe_set_atomic_write(wqe, remote_addr, rkey, atomic_wr);
}

static void vrdma_wr_local_inv(struct ibv_qp_ex *qpx, uint32_t rkey)
{
	struct vrdma_send_wqe *wqe;

	wqe = vrdma_wr_begin(qpx, IBV_QP_EX_WITH_LOCAL_INV, IBV_WR_LOCAL_INV);
	if (wqe)
		vrdma_wqe_set_inv(wqe, rkey);
}

/* A type 2 window gets rkey (the application's; see mw.c for type 1). */
static void vrdma_wr_bind_mw(struct ibv_qp_ex *qpx, struct ibv_mw *mw,
			     uint32_t rkey,
			     const struct ibv_mw_bind_info *bind_info)
{
	struct vrdma_send_wqe *wqe;

	if (!mw || !bind_info) {
		vrdma_wr_fail(&to_vqp_ex(qpx)->sq, EINVAL);
		return;
	}
	wqe = vrdma_wr_begin(qpx, IBV_QP_EX_WITH_BIND_MW, IBV_WR_BIND_MW);
	if (wqe)
		vrdma_wqe_set_bind(wqe, mw, rkey, bind_info);
}

/*
 * A builder of an op create_qp_ex refuses: never reached by a correct
 * caller, so it only makes wr_complete fail instead of crashing.
 */
static void vrdma_wr_send_tso(struct ibv_qp_ex *qpx, void *hdr,
			      uint16_t hdr_sz, uint16_t mss)
{
	(void)hdr;
	(void)hdr_sz;
	(void)mss;
	vrdma_wr_fail(&to_vqp_ex(qpx)->sq, EOPNOTSUPP);
}

/* ---- setters ----------------------------------------------------------- */

/*
 * The destination of a UD WQE: the AH by the kernel driver's own handle
 * (the uverbs handle in struct ibv_ah is not one the driver can look up).
 */
static void vrdma_wr_set_ud_addr(struct ibv_qp_ex *qpx, struct ibv_ah *ah,
				 uint32_t remote_qpn, uint32_t remote_qkey)
{
	struct vrdma_sq *sq = &to_vqp_ex(qpx)->sq;

	if (!sq->wr.wqe || !sq->limits.ud || !ah) {
		vrdma_wr_fail(sq, EINVAL);
		return;
	}
	vrdma_wqe_set_ud(sq->wr.wqe, vrdma_ah_num(ah), remote_qpn,
			 remote_qkey);
	sq->wr.ud_addr_missing = false;
}

/* The SRQ at the target of an XRC initiator's WQE, as post_send's. */
static void vrdma_wr_set_xrc_srqn(struct ibv_qp_ex *qpx, uint32_t remote_srqn)
{
	struct vrdma_sq *sq = &to_vqp_ex(qpx)->sq;

	if (!sq->wr.wqe || !sq->limits.xrc) {
		vrdma_wr_fail(sq, EINVAL);
		return;
	}
	vrdma_wqe_set_xrc(sq->wr.wqe, remote_srqn);
}

static void vrdma_wr_set_sge_list(struct ibv_qp_ex *qpx, size_t num_sge,
				  const struct ibv_sge *sg_list)
{
	struct vrdma_sq *sq = &to_vqp_ex(qpx)->sq;

	/* An ATOMIC WRITE's data is its 8 bytes, in the WQE. */
	if (!sq->wr.wqe || num_sge > sq->limits.max_sge ||
	    sq->wr.wqe->opcode == IBV_WR_ATOMIC_WRITE) {
		vrdma_wr_fail(sq, EINVAL);
		return;
	}
	vrdma_wqe_set_sgl(sq->wr.wqe, sg_list, num_sge);
}

static void vrdma_wr_set_sge(struct ibv_qp_ex *qpx, uint32_t lkey,
			     uint64_t addr, uint32_t length)
{
	const struct ibv_sge sge = {
		.addr = addr,
		.length = length,
		.lkey = lkey,
	};

	vrdma_wr_set_sge_list(qpx, 1, &sge);
}

/* Inline data: for SEND and RDMA WRITE only, up to max_inline_data. */
static void vrdma_wr_set_inline_data_list(struct ibv_qp_ex *qpx,
					  size_t num_buf,
					  const struct ibv_data_buf *buf_list)
{
	struct vrdma_sq *sq = &to_vqp_ex(qpx)->sq;
	struct vrdma_send_wqe *wqe = sq->wr.wqe;
	uint64_t total = 0;
	size_t i;

	if (!wqe || wqe->opcode == IBV_WR_RDMA_READ ||
	    wqe->opcode == IBV_WR_ATOMIC_CMP_AND_SWP ||
	    wqe->opcode == IBV_WR_ATOMIC_FETCH_AND_ADD ||
	    wqe->opcode == IBV_WR_ATOMIC_WRITE) {
		vrdma_wr_fail(sq, EINVAL);
		return;
	}
	for (i = 0; i < num_buf; i++) {
		if (!vrdma_inline_fits(&total, buf_list[i].length,
				       &sq->limits)) {
			vrdma_wr_fail(sq, EINVAL);
			return;
		}
	}
	vrdma_wqe_set_inline(wqe);
	for (i = 0; i < num_buf; i++)
		vrdma_wqe_add_inline(wqe, buf_list[i].addr,
				     buf_list[i].length);
}

static void vrdma_wr_set_inline_data(struct ibv_qp_ex *qpx, void *addr,
				     size_t length)
{
	const struct ibv_data_buf buf = { .addr = addr, .length = length };

	vrdma_wr_set_inline_data_list(qpx, 1, &buf);
}

/* ---- the batch --------------------------------------------------------- */

/* As post_send, a QP not ready to send (or without an SQ) takes nothing. */
static void vrdma_wr_start(struct ibv_qp_ex *qpx)
{
	struct vrdma_qp *qp = to_vqp_ex(qpx);
	struct vrdma_sq *sq = &qp->sq;

	vrdma_lock(&sq->lock);
	sq->wr.start = sq->ring.head;
	sq->wr.wqe = NULL;
	sq->wr.ud_addr_missing = false;
	sq->wr.err = sq->ring.hdr && vrdma_qp_sq_ready(&qp->vqp.qp) ?
		     0 : EINVAL;
}

/* Forgets every WQE of the batch: they were never published. */
static void vrdma_wr_discard(struct vrdma_sq *sq)
{
	sq->ring.head = sq->wr.start;
	sq->wr.wqe = NULL;
	vrdma_unlock(&sq->lock);
}

static void vrdma_wr_abort(struct ibv_qp_ex *qpx)
{
	vrdma_wr_discard(&to_vqp_ex(qpx)->sq);
}

static int vrdma_wr_complete(struct ibv_qp_ex *qpx)
{
	struct vrdma_qp *qp = to_vqp_ex(qpx);
	struct vrdma_sq *sq = &qp->sq;
	int ret = sq->wr.err;
	bool posted;

	if (!ret && sq->wr.ud_addr_missing)
		ret = EINVAL;
	if (ret) {
		vrdma_wr_discard(sq);
		return ret;
	}

	posted = sq->ring.head != sq->wr.start;
	if (posted)
		vrdma_uring_publish(&sq->ring);
	sq->wr.wqe = NULL;
	vrdma_unlock(&sq->lock);

	/*
	 * Outside the lock, as post_send.  If the doorbell fails, the WQEs
	 * stay in the ring (a later doorbell may still run them), but none of
	 * the batch is known to have reached the device.
	 */
	return posted ? vrdma_sq_doorbell(qp) : 0;
}

/**
 * vrdma_qp_init_wr() - make a new QP an extended one with the ibv_wr_* API
 * @qp: the QP, just created, not yet seen by the application
 * @send_ops: the IBV_QP_EX_WITH_* builders it may use, which
 *	vrdma_wr_check_ops() has accepted
 *
 * Every function pointer is set, those of ops not in @send_ops too: called
 * anyway, they fail the batch instead of crashing.
 */
void vrdma_qp_init_wr(struct vrdma_qp *qp, uint64_t send_ops)
{
	struct ibv_qp_ex *qpx = &qp->vqp.qp_ex;

	qp->sq.send_ops = send_ops;

	qpx->wr_start = vrdma_wr_start;
	qpx->wr_complete = vrdma_wr_complete;
	qpx->wr_abort = vrdma_wr_abort;

	qpx->wr_send = vrdma_wr_send;
	qpx->wr_send_imm = vrdma_wr_send_imm;
	qpx->wr_send_inv = vrdma_wr_send_inv;
	qpx->wr_rdma_write = vrdma_wr_rdma_write;
	qpx->wr_rdma_write_imm = vrdma_wr_rdma_write_imm;
	qpx->wr_rdma_read = vrdma_wr_rdma_read;
	qpx->wr_atomic_cmp_swp = vrdma_wr_atomic_cmp_swp;
	qpx->wr_atomic_fetch_add = vrdma_wr_atomic_fetch_add;
	qpx->wr_local_inv = vrdma_wr_local_inv;
	qpx->wr_bind_mw = vrdma_wr_bind_mw;
	qpx->wr_send_tso = vrdma_wr_send_tso;
	qpx->wr_atomic_write = vrdma_wr_atomic_write;

	qpx->wr_set_sge = vrdma_wr_set_sge;
	qpx->wr_set_sge_list = vrdma_wr_set_sge_list;
	qpx->wr_set_inline_data = vrdma_wr_set_inline_data;
	qpx->wr_set_inline_data_list = vrdma_wr_set_inline_data_list;
	qpx->wr_set_ud_addr = vrdma_wr_set_ud_addr;
	qpx->wr_set_xrc_srqn = vrdma_wr_set_xrc_srqn;

	qp->vqp.comp_mask |= VERBS_QP_EX;
}
