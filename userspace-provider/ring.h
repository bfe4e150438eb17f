/* SPDX-License-Identifier: (GPL-2.0 OR Linux-OpenIB) */
/*
 * The shared rings of uapi/rdma/vrdma-abi.h, from user space's side: what
 * post_send, post_recv, post_srq_recv and poll_cq do to a ring.
 *
 * Everything here works on plain memory and makes no system call, so that
 * test/ring_test.c can run it against fake rings; mapping the rings the
 * kernel allocated (ring.c), locking and the SQ doorbell (qp.c) are the
 * callers' part.
 *
 * The side that produces into a ring keeps its index to itself (head) and
 * publishes it with a store-release; it reads the other side's index with a
 * load-acquire, so that it sees the entries (CQ) or frees the slots (WQ)
 * only after the other side is done with them.  Indices are free-running
 * u32: every difference is taken modulo 2^32.
 */
#ifndef VRDMA_RING_H
#define VRDMA_RING_H

#include <assert.h>
#include <errno.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <infiniband/tm_types.h>
#include <infiniband/verbs.h>
#include <rdma/ib_user_verbs.h>
#include <rdma/vrdma-abi.h>

/* ------------------------------------------------------------------------
 * The ABI as the kernel module pins it too (drivers/vrdma/vrdma.h).
 */
static_assert(sizeof(struct vrdma_ring) == 128, "vrdma_ring");
static_assert(VRDMA_RING_HDR_SIZE == sizeof(struct vrdma_ring),
	      "VRDMA_RING_HDR_SIZE");
static_assert(offsetof(struct vrdma_ring, cons) == 64,
	      "prod and cons on their own cache lines");
static_assert(sizeof(struct vrdma_sge) == 16, "vrdma_sge");
static_assert(sizeof(struct vrdma_send_wqe) == 64, "vrdma_send_wqe");
static_assert(VRDMA_SEND_WQE_HDR_SIZE == sizeof(struct vrdma_send_wqe),
	      "VRDMA_SEND_WQE_HDR_SIZE");
static_assert(offsetof(struct vrdma_send_wqe, sge) == VRDMA_SEND_WQE_HDR_SIZE,
	      "send WQE SGEs");
static_assert(sizeof(struct vrdma_recv_wqe) == 16, "vrdma_recv_wqe");
static_assert(VRDMA_RECV_WQE_HDR_SIZE == sizeof(struct vrdma_recv_wqe),
	      "VRDMA_RECV_WQE_HDR_SIZE");
static_assert(offsetof(struct vrdma_recv_wqe, sge) == VRDMA_RECV_WQE_HDR_SIZE,
	      "receive WQE SGEs");
static_assert(sizeof(struct vrdma_cqe) == 32, "vrdma_cqe");
static_assert(sizeof(struct vrdma_ring_info) == 24, "vrdma_ring_info");
static_assert(sizeof(struct vrdma_create_cq_resp) == 24,
	      "vrdma_create_cq_resp");
static_assert(sizeof(struct vrdma_create_qp_resp) == 56,
	      "vrdma_create_qp_resp");
static_assert(sizeof(struct vrdma_create_srq_resp) == 32,
	      "vrdma_create_srq_resp");
static_assert(sizeof(struct vrdma_modify_srq_req) == 16,
	      "vrdma_modify_srq_req");
static_assert(sizeof(struct vrdma_create_ah_resp) == 8,
	      "vrdma_create_ah_resp");
static_assert(sizeof(struct vrdma_uverbs_req) == 8, "vrdma_uverbs_req");
static_assert(sizeof(struct vrdma_tmh) == sizeof(struct ibv_tmh) &&
		      sizeof(struct vrdma_rvh) == sizeof(struct ibv_rvh),
	      "tag-matching headers");
static_assert(sizeof(struct vrdma_srq_op) == 112, "vrdma_srq_op");
static_assert(sizeof(struct vrdma_srq_ops_resp) == 8, "vrdma_srq_ops_resp");
static_assert(sizeof(struct vrdma_create_srq_req) == 16,
	      "vrdma_create_srq_req");
static_assert(sizeof(struct vrdma_create_cq_req) == 16,
	      "vrdma_create_cq_req");
static_assert(sizeof(struct vrdma_cqe) + sizeof(struct vrdma_cqe_tm) ==
		      VRDMA_CQE_TM_SIZE,
	      "vrdma_cqe_tm");
/* Tag matching's opcodes, flags and statuses, as rdma-core has them. */
static_assert((int)VRDMA_TMH_NO_TAG == IBV_TMH_NO_TAG &&
		      (int)VRDMA_TMH_RNDV == IBV_TMH_RNDV &&
		      (int)VRDMA_TMH_FIN == IBV_TMH_FIN &&
		      (int)VRDMA_TMH_EAGER == IBV_TMH_EAGER,
	      "enum vrdma_tmh_opcode");
static_assert((int)VRDMA_SRQ_OP_TAG_ADD == IBV_WR_TAG_ADD &&
		      (int)VRDMA_SRQ_OP_TAG_DEL == IBV_WR_TAG_DEL &&
		      (int)VRDMA_SRQ_OP_TAG_SYNC == IBV_WR_TAG_SYNC &&
		      (int)VRDMA_SRQ_OP_SIGNALED == IBV_OPS_SIGNALED &&
		      (int)VRDMA_SRQ_OP_TM_SYNC == IBV_OPS_TM_SYNC,
	      "enum vrdma_srq_op_opcode, vrdma_srq_op_flags");
static_assert((int)VRDMA_WC_TM_ADD == IBV_WC_TM_ADD &&
		      (int)VRDMA_WC_TM_DEL == IBV_WC_TM_DEL &&
		      (int)VRDMA_WC_TM_SYNC == IBV_WC_TM_SYNC &&
		      (int)VRDMA_WC_TM_RECV == IBV_WC_TM_RECV &&
		      (int)VRDMA_WC_TM_NO_TAG == IBV_WC_TM_NO_TAG &&
		      (int)VRDMA_WC_TM_SYNC_REQ == IBV_WC_TM_SYNC_REQ &&
		      (int)VRDMA_WC_TM_MATCH == IBV_WC_TM_MATCH &&
		      (int)VRDMA_WC_TM_DATA_VALID == IBV_WC_TM_DATA_VALID &&
		      (int)VRDMA_WC_TM_ERR == IBV_WC_TM_ERR &&
		      (int)VRDMA_WC_TM_RNDV_INCOMPLETE ==
			      IBV_WC_TM_RNDV_INCOMPLETE,
	      "tag matching completions");

/* SGEs are copied between struct ibv_sge and the ring as they are. */
static_assert(sizeof(struct ibv_sge) == sizeof(struct vrdma_sge) &&
		      offsetof(struct ibv_sge, addr) ==
			      offsetof(struct vrdma_sge, addr) &&
		      offsetof(struct ibv_sge, length) ==
			      offsetof(struct vrdma_sge, length) &&
		      offsetof(struct ibv_sge, lkey) ==
			      offsetof(struct vrdma_sge, lkey),
	      "struct ibv_sge is struct vrdma_sge");

/* Flags and opcodes go to the ring and come back unconverted. */
static_assert((int)VRDMA_SEND_FENCE == IBV_SEND_FENCE &&
		      (int)VRDMA_SEND_SIGNALED == IBV_SEND_SIGNALED &&
		      (int)VRDMA_SEND_SOLICITED == IBV_SEND_SOLICITED &&
		      (int)VRDMA_SEND_INLINE == IBV_SEND_INLINE,
	      "enum vrdma_send_flags");
static_assert((int)VRDMA_WC_GRH == IBV_WC_GRH &&
		      (int)VRDMA_WC_WITH_IMM == IBV_WC_WITH_IMM &&
		      (int)VRDMA_WC_WITH_INV == IBV_WC_WITH_INV,
	      "enum vrdma_wc_flags");
static_assert((int)IBV_WR_RDMA_WRITE == IB_UVERBS_WR_RDMA_WRITE &&
		      (int)IBV_WR_RDMA_WRITE_WITH_IMM ==
			      IB_UVERBS_WR_RDMA_WRITE_WITH_IMM &&
		      (int)IBV_WR_SEND == IB_UVERBS_WR_SEND &&
		      (int)IBV_WR_SEND_WITH_IMM == IB_UVERBS_WR_SEND_WITH_IMM &&
		      (int)IBV_WR_RDMA_READ == IB_UVERBS_WR_RDMA_READ &&
		      (int)IBV_WR_ATOMIC_CMP_AND_SWP ==
			      IB_UVERBS_WR_ATOMIC_CMP_AND_SWP &&
		      (int)IBV_WR_ATOMIC_FETCH_AND_ADD ==
			      IB_UVERBS_WR_ATOMIC_FETCH_AND_ADD &&
		      (int)IBV_WR_LOCAL_INV == IB_UVERBS_WR_LOCAL_INV &&
		      (int)IBV_WR_BIND_MW == IB_UVERBS_WR_BIND_MW &&
		      (int)IBV_WR_SEND_WITH_INV == IB_UVERBS_WR_SEND_WITH_INV &&
		      (int)IBV_WR_TSO == IB_UVERBS_WR_TSO,
	      "enum ibv_wr_opcode is enum ib_uverbs_wr_opcode");
/* rdma-core 44 names ATOMIC WRITE, not FLUSH (IBV_WR_FLUSH, IBV_WC_FLUSH). */
static_assert((int)IBV_WR_ATOMIC_WRITE == VRDMA_WR_ATOMIC_WRITE &&
		      (int)IBV_WC_ATOMIC_WRITE == VRDMA_WC_ATOMIC_WRITE,
	      "enum vrdma_placement_opcode");

/* The flags a work request sets itself; VRDMA_SEND_INLINE comes with data. */
#define VRDMA_SEND_WR_FLAGS						\
	(VRDMA_SEND_FENCE | VRDMA_SEND_SIGNALED | VRDMA_SEND_SOLICITED)

/* ------------------------------------------------------------------------
 * Ring indices and entries.
 */

/*
 * One mapped ring.  A zeroed one is "no ring" (the RQ of a QP on an SRQ, or
 * a CQ whose resize lost its mapping).
 */
struct vrdma_uring {
	struct vrdma_ring *hdr;		/* the mapping starts with the header */
	size_t map_size;
	uint32_t num_entries;
	uint32_t mask;			/* num_entries - 1 */
	uint32_t entry_size;
	uint32_t head;			/* ours: prod of a WQ, cons of a CQ */
	uint32_t peer;			/* the other side's, as last read */
};

static inline uint32_t vrdma_load_acquire(const uint32_t *p)
{
	return __atomic_load_n(p, __ATOMIC_ACQUIRE);
}

static inline void vrdma_store_release(uint32_t *p, uint32_t v)
{
	__atomic_store_n(p, v, __ATOMIC_RELEASE);
}

static inline bool vrdma_is_pow2(uint64_t x)
{
	return x && !(x & (x - 1));
}

/*
 * Whether the kernel described a usable ring: power-of-two counts, entries
 * of at least min_entry_size bytes, all of it inside the mapping, and an
 * offset mmap() can take.  A kernel bug must fail create, not scribble.
 */
static inline bool vrdma_ring_info_valid(const struct vrdma_ring_info *info,
					 uint32_t min_entry_size)
{
	uint64_t bytes;

	if (!vrdma_is_pow2(info->num_entries) ||
	    !vrdma_is_pow2(info->entry_size) ||
	    info->entry_size < min_entry_size)
		return false;
	if (info->size < VRDMA_RING_HDR_SIZE || info->size > SIZE_MAX ||
	    info->offset > INT64_MAX)
		return false;
	/* both are at most 2^31: no overflow */
	bytes = (uint64_t)info->num_entries * info->entry_size;
	return bytes <= info->size - VRDMA_RING_HDR_SIZE;
}

/*
 * Whether a work queue ring holds what the kernel granted with it: max_wr
 * requests, each with max_sge SGEs or max_inline bytes after a WQE header
 * of wqe_hdr_size.  No ring (num_entries 0) holds a queue of no requests.
 */
static inline bool vrdma_wq_fits(const struct vrdma_ring_info *info,
				 uint32_t wqe_hdr_size, uint32_t max_wr,
				 uint32_t max_sge, uint32_t max_inline)
{
	uint64_t sge_bytes = wqe_hdr_size +
			     (uint64_t)max_sge * sizeof(struct vrdma_sge);
	uint64_t inline_bytes = (uint64_t)wqe_hdr_size + max_inline;

	if (!info->num_entries)
		return !max_wr;
	return vrdma_ring_info_valid(info, wqe_hdr_size) &&
	       max_wr <= info->num_entries &&
	       sge_bytes <= info->entry_size &&
	       inline_bytes <= info->entry_size;
}

/*
 * Takes over a mapped ring.  The starting indices are whatever the kernel
 * left in the header (after resize_cq, where the copied CQEs begin).
 */
static inline void vrdma_uring_init(struct vrdma_uring *r, void *map,
				    const struct vrdma_ring_info *info,
				    bool producer)
{
	r->hdr = map;
	r->map_size = info->size;
	r->num_entries = info->num_entries;
	r->mask = info->num_entries - 1;
	r->entry_size = info->entry_size;
	if (producer) {
		r->head = __atomic_load_n(&r->hdr->prod, __ATOMIC_RELAXED);
		r->peer = vrdma_load_acquire(&r->hdr->cons);
	} else {
		r->head = __atomic_load_n(&r->hdr->cons, __ATOMIC_RELAXED);
		r->peer = vrdma_load_acquire(&r->hdr->prod);
	}
}

static inline void *vrdma_uring_entry(const struct vrdma_uring *r,
				      uint32_t idx)
{
	return (uint8_t *)r->hdr + VRDMA_RING_HDR_SIZE +
	       (size_t)(idx & r->mask) * r->entry_size;
}

/*
 * Producer: no free slot.  cons only grows, so the last value read is only
 * ever too pessimistic: read it again only when that says full.  ">=" so
 * that a cons past prod (a kernel bug) reads as full, not as free space.
 */
static inline bool vrdma_uring_full(struct vrdma_uring *r)
{
	if (r->head - r->peer < r->num_entries)
		return false;
	r->peer = vrdma_load_acquire(&r->hdr->cons);
	return r->head - r->peer >= r->num_entries;
}

/* Producer: hands the entries written so far to the kernel. */
static inline void vrdma_uring_publish(struct vrdma_uring *r)
{
	vrdma_store_release(&r->hdr->prod, r->head);
}

/* ------------------------------------------------------------------------
 * Send queue.
 */

/*
 * An address handle.  ibv_ah.handle is libibverbs' name for it in commands;
 * a UD send WQE names it by the kernel's own handle, which create_ah
 * returned as driver data.
 */
struct vrdma_ah {
	struct ibv_ah ibv_ah;
	uint32_t ah_num;
};

static inline uint32_t vrdma_ah_num(const struct ibv_ah *ah)
{
	return ((const struct vrdma_ah *)((const char *)ah -
					  offsetof(struct vrdma_ah, ibv_ah)))
		->ah_num;
}

/* What post_send checks a work request against; fixed at create_qp. */
struct vrdma_sq_limits {
	uint32_t max_sge;
	uint32_t max_inline;
	uint16_t sig_all;	/* VRDMA_SEND_SIGNALED with sq_sig_all, or 0 */
	bool ud;
	bool xrc;		/* an XRC initiator: WQEs name the target SRQ */
};

/*
 * A send WQE is built in its slot piece by piece, by post_send from a
 * struct ibv_send_wr (vrdma_build_send_wqe below) and by the ibv_wr_*
 * builders (wr.c) one call per piece alike, so that both APIs write the
 * same bytes.  The callers check first (SGE count, inline length against
 * the limits, which create_qp checked against the stride, so that neither
 * the SGEs nor the inline data can run past the slot) and then write.
 */

/*
 * The header, every field not set by a later piece zeroed: the slot holds
 * the previous lap's WQE.  No data: a gather list of no SGEs.
 */
static inline void vrdma_wqe_start(struct vrdma_send_wqe *wqe, uint64_t wr_id,
				   uint8_t opcode, unsigned int send_flags,
				   const struct vrdma_sq_limits *lim)
{
	memset(wqe, 0, VRDMA_SEND_WQE_HDR_SIZE);
	wqe->wr_id = wr_id;
	wqe->opcode = opcode;
	wqe->flags = (send_flags & VRDMA_SEND_WR_FLAGS) | lim->sig_all;
}

/* Immediate data, big endian as given. */
static inline void vrdma_wqe_set_imm(struct vrdma_send_wqe *wqe, __be32 imm)
{
	wqe->ex.imm_data = imm;
}

static inline void vrdma_wqe_set_inv(struct vrdma_send_wqe *wqe,
				     uint32_t rkey)
{
	wqe->ex.invalidate_rkey = rkey;
}

static inline void vrdma_wqe_set_rdma(struct vrdma_send_wqe *wqe,
				      uint64_t remote_addr, uint32_t rkey)
{
	wqe->rdma.remote_addr = remote_addr;
	wqe->rdma.rkey = rkey;
}

static inline void vrdma_wqe_set_atomic(struct vrdma_send_wqe *wqe,
					uint64_t remote_addr, uint32_t rkey,
					uint64_t compare_add, uint64_t swap)
{
	wqe->atomic.remote_addr = remote_addr;
	wqe->atomic.compare_add = compare_add;
	wqe->atomic.swap = swap;
	wqe->atomic.rkey = rkey;
}

/*
 * A masked atomic (VRDMA_WR_MASKED_ATOMIC_*, for which rdma-core has no
 * verb): @atomic's operands, and the masks in the second SGE's place.  The
 * caller sets the one SGE, the result's, in an entry with room for two.
 */
static inline void vrdma_wqe_set_masked_atomic(struct vrdma_send_wqe *wqe,
					       int cmp_swap,
					       uint64_t remote_addr,
					       uint32_t rkey,
					       uint64_t compare_add,
					       uint64_t swap,
					       uint64_t compare_add_mask,
					       uint64_t swap_mask)
{
	struct vrdma_atomic_masks *m = (void *)&wqe->sge[1];

	wqe->opcode = cmp_swap ? VRDMA_WR_MASKED_ATOMIC_CMP_AND_SWP :
				 VRDMA_WR_MASKED_ATOMIC_FETCH_AND_ADD;
	vrdma_wqe_set_atomic(wqe, remote_addr, rkey, compare_add, swap);
	m->compare_add_mask = compare_add_mask;
	m->swap_mask = swap_mask;
}

/* ATOMIC WRITE: the 8 bytes at value, copied now, in memory order. */
static inline void vrdma_wqe_set_atomic_write(struct vrdma_send_wqe *wqe,
					      uint64_t remote_addr,
					      uint32_t rkey, const void *value)
{
	wqe->atomic_write.remote_addr = remote_addr;
	wqe->atomic_write.rkey = rkey;
	memcpy(wqe->atomic_write.value, value,
	       sizeof(wqe->atomic_write.value));
}

/*
 * FLUSH (enum vrdma_flush_type, vrdma_flush_level).  rdma-core 44 has no
 * ibv_wr_flush(): this is what its builder writes, for the WQE's own users.
 */
static inline void vrdma_wqe_set_flush(struct vrdma_send_wqe *wqe,
				       uint64_t remote_addr, uint32_t rkey,
				       uint32_t length, uint8_t type,
				       uint8_t level)
{
	wqe->flush.remote_addr = remote_addr;
	wqe->flush.rkey = rkey;
	wqe->flush.length = length;
	wqe->flush.type = type;
	wqe->flush.level = level;
}

/*
 * The XRC SRQ at the target that takes the message (ibv_send_wr's
 * qp_type.xrc.remote_srqn, ibv_wr_set_xrc_srqn()).  Passed on as it is:
 * the kernel completes a WQE whose number does not fit the XRCETH's 24 bits
 * with an error, as it does any other it cannot send.
 */
static inline void vrdma_wqe_set_xrc(struct vrdma_send_wqe *wqe,
				     uint32_t remote_srqn)
{
	wqe->xrc_remote_srqn = remote_srqn;
}

static inline void vrdma_wqe_set_ud(struct vrdma_send_wqe *wqe, uint32_t ah,
				    uint32_t remote_qpn, uint32_t remote_qkey)
{
	wqe->ud.ah = ah;
	wqe->ud.remote_qpn = remote_qpn;
	wqe->ud.remote_qkey = remote_qkey;
}

/*
 * A memory window bind (IBV_WR_BIND_MW, ibv_bind_mw, ibv_wr_bind_mw): the
 * kernel finds the window by the index in mw's rkey, binds it to what info
 * describes and gives it rkey.  No data goes with it: the kernel ignores
 * the SGEs of a bind.
 */
static inline void vrdma_wqe_set_bind(struct vrdma_send_wqe *wqe,
				      const struct ibv_mw *mw, uint32_t rkey,
				      const struct ibv_mw_bind_info *info)
{
	wqe->bind.mw_rkey = mw->rkey;
	wqe->bind.new_rkey = rkey;
	wqe->bind.mr_lkey = info->mr ? info->mr->lkey : 0;
	wqe->bind.addr = info->addr;
	wqe->bind.length = info->length;
	wqe->bind.access = info->mw_access_flags;
}

/* The gather list, replacing any data set before; num_sge <= max_sge. */
static inline void vrdma_wqe_set_sgl(struct vrdma_send_wqe *wqe,
				     const struct ibv_sge *sge,
				     uint32_t num_sge)
{
	wqe->flags &= ~VRDMA_SEND_INLINE;
	wqe->inline_len = 0;
	wqe->num_sge = num_sge;
	if (num_sge)
		memcpy(wqe->sge, sge, num_sge * sizeof(struct vrdma_sge));
}

/*
 * Inline data instead of a gather list, empty so far: vrdma_wqe_add_inline
 * appends to it, up to the max_inline the caller checked the total against.
 * The data is copied now, so the caller may reuse its buffers on return.
 */
static inline void vrdma_wqe_set_inline(struct vrdma_send_wqe *wqe)
{
	wqe->flags |= VRDMA_SEND_INLINE;
	wqe->num_sge = 0;
	wqe->inline_len = 0;
}

static inline void vrdma_wqe_add_inline(struct vrdma_send_wqe *wqe,
					const void *data, uint32_t len)
{
	if (!len)
		return;		/* data may be anything then */
	memcpy((uint8_t *)wqe->sge + wqe->inline_len, data, len);
	wqe->inline_len += len;
}

/*
 * Whether len more inline bytes fit after *total, which then counts them;
 * 64 bits: num_sge lengths of up to 4 GiB each cannot wrap.
 */
static inline bool vrdma_inline_fits(uint64_t *total, uint64_t len,
				     const struct vrdma_sq_limits *lim)
{
	if (len > lim->max_inline || *total > lim->max_inline - len)
		return false;
	*total += len;
	return true;
}

/* Writes wr into the slot wqe, or returns EINVAL leaving the slot alone. */
static inline int vrdma_build_send_wqe(struct vrdma_send_wqe *wqe,
				       const struct ibv_send_wr *wr,
				       const struct vrdma_sq_limits *lim)
{
	bool inl = wr->send_flags & IBV_SEND_INLINE;
	uint64_t inline_len = 0;
	const struct ibv_sge *sge;
	int i;

	if (wr->num_sge < 0 || (uint32_t)wr->num_sge > lim->max_sge)
		return EINVAL;
	if ((unsigned int)wr->opcode > UINT8_MAX)
		return EINVAL;
	if (lim->ud && !wr->wr.ud.ah)
		return EINVAL;
	if (wr->opcode == IBV_WR_BIND_MW && !wr->bind_mw.mw)
		return EINVAL;
	/* struct ibv_send_wr has no room for their operands: ibv_wr_*() only. */
	if (wr->opcode == (enum ibv_wr_opcode)VRDMA_WR_ATOMIC_WRITE ||
	    wr->opcode == (enum ibv_wr_opcode)VRDMA_WR_FLUSH)
		return EINVAL;
	for (i = 0; inl && i < wr->num_sge; i++)
		if (!vrdma_inline_fits(&inline_len, wr->sg_list[i].length,
				       lim))
			return EINVAL;

	vrdma_wqe_start(wqe, wr->wr_id, wr->opcode, wr->send_flags, lim);
	switch (wr->opcode) {
	case IBV_WR_SEND_WITH_IMM:
	case IBV_WR_RDMA_WRITE_WITH_IMM:
		vrdma_wqe_set_imm(wqe, wr->imm_data);
		break;
	case IBV_WR_SEND_WITH_INV:
	case IBV_WR_LOCAL_INV:
		vrdma_wqe_set_inv(wqe, wr->invalidate_rkey);
		break;
	default:
		break;
	}

	if (lim->xrc)
		vrdma_wqe_set_xrc(wqe, wr->qp_type.xrc.remote_srqn);
	if (lim->ud) {
		vrdma_wqe_set_ud(wqe, vrdma_ah_num(wr->wr.ud.ah),
				 wr->wr.ud.remote_qpn, wr->wr.ud.remote_qkey);
	} else {
		switch (wr->opcode) {
		case IBV_WR_RDMA_WRITE:
		case IBV_WR_RDMA_WRITE_WITH_IMM:
		case IBV_WR_RDMA_READ:
			vrdma_wqe_set_rdma(wqe, wr->wr.rdma.remote_addr,
					   wr->wr.rdma.rkey);
			break;
		case IBV_WR_ATOMIC_CMP_AND_SWP:
		case IBV_WR_ATOMIC_FETCH_AND_ADD:
			vrdma_wqe_set_atomic(wqe, wr->wr.atomic.remote_addr,
					     wr->wr.atomic.rkey,
					     wr->wr.atomic.compare_add,
					     wr->wr.atomic.swap);
			break;
		case IBV_WR_BIND_MW:
			vrdma_wqe_set_bind(wqe, wr->bind_mw.mw, wr->bind_mw.rkey,
					   &wr->bind_mw.bind_info);
			break;
		default:
			break;
		}
	}

	if (inl) {
		vrdma_wqe_set_inline(wqe);
		for (i = 0; i < wr->num_sge; i++) {
			sge = &wr->sg_list[i];
			vrdma_wqe_add_inline(wqe,
					     (const void *)(uintptr_t)sge->addr,
					     sge->length);
		}
	} else {
		vrdma_wqe_set_sgl(wqe, wr->sg_list, wr->num_sge);
	}
	return 0;
}

/*
 * Writes the list into the SQ until it ends, the ring is full (ENOMEM) or
 * a request is bad (EINVAL); *bad_wr is the first request not written.
 * Publishes what was written; the caller holds the SQ lock and rings the
 * doorbell when head moved.
 */
static inline int vrdma_sq_post(struct vrdma_uring *sq,
				const struct vrdma_sq_limits *lim,
				struct ibv_send_wr *wr,
				struct ibv_send_wr **bad_wr)
{
	uint32_t start = sq->head;
	int ret = 0;

	for (; wr; wr = wr->next) {
		if (vrdma_uring_full(sq)) {
			ret = ENOMEM;
			break;
		}
		ret = vrdma_build_send_wqe(vrdma_uring_entry(sq, sq->head), wr,
					   lim);
		if (ret)
			break;
		sq->head++;
	}
	if (ret)
		*bad_wr = wr;
	if (sq->head != start)
		vrdma_uring_publish(sq);
	return ret;
}

/* ------------------------------------------------------------------------
 * Receive queues (a QP's RQ, an SRQ).
 */

static inline int vrdma_build_recv_wqe(struct vrdma_recv_wqe *wqe,
				       const struct ibv_recv_wr *wr,
				       uint32_t max_sge)
{
	if (wr->num_sge < 0 || (uint32_t)wr->num_sge > max_sge)
		return EINVAL;

	wqe->wr_id = wr->wr_id;
	wqe->num_sge = wr->num_sge;
	wqe->reserved = 0;
	if (wr->num_sge)
		memcpy(wqe->sge, wr->sg_list,
		       wr->num_sge * sizeof(struct vrdma_sge));
	return 0;
}

/* As vrdma_sq_post, for receive requests; there is no doorbell. */
static inline int vrdma_rq_post(struct vrdma_uring *rq, uint32_t max_sge,
				struct ibv_recv_wr *wr,
				struct ibv_recv_wr **bad_wr)
{
	uint32_t start = rq->head;
	int ret = 0;

	for (; wr; wr = wr->next) {
		if (vrdma_uring_full(rq)) {
			ret = ENOMEM;
			break;
		}
		ret = vrdma_build_recv_wqe(vrdma_uring_entry(rq, rq->head), wr,
					   max_sge);
		if (ret)
			break;
		rq->head++;
	}
	if (ret)
		*bad_wr = wr;
	if (rq->head != start)
		vrdma_uring_publish(rq);
	return ret;
}

/* ------------------------------------------------------------------------
 * Completion queue.
 */

/*
 * The SL of a completion.  RoCE packets carry no SL; for UD receives RoCE
 * NICs (mlx5) report in its low bits the L3 header the datagram came with,
 * 1 for IPv6 and 2 for IPv4, and UCX's ud_verbs relies on it to find the
 * destination address in the GRH: without it, UCX drops every datagram
 * from an IPv4 GID as misaddressed.  0 for everything else.
 */
static inline uint8_t vrdma_cqe_sl(const struct vrdma_cqe *cqe)
{
	switch (cqe->network_hdr_type) {
	case VRDMA_NETWORK_HDR_IPV4:
		return 2;
	case VRDMA_NETWORK_HDR_IPV6:
		return 1;
	default:
		return 0;
	}
}

static inline void vrdma_cqe_to_wc(const struct vrdma_cqe *cqe,
				   struct ibv_wc *wc)
{
	wc->wr_id = cqe->wr_id;
	wc->status = (enum ibv_wc_status)cqe->status;
	wc->opcode = (enum ibv_wc_opcode)cqe->opcode;
	wc->vendor_err = cqe->vendor_err;
	wc->byte_len = cqe->byte_len;
	/* imm_data or invalidated_rkey: the same 32 bits, as they came */
	wc->imm_data = cqe->ex.imm_data;
	wc->qp_num = cqe->qp_num;
	wc->src_qp = cqe->src_qp;
	wc->wc_flags = cqe->wc_flags;
	/* RoCE has no LIDs or P_Key table to speak of */
	wc->pkey_index = 0;
	wc->slid = 0;
	wc->sl = vrdma_cqe_sl(cqe);
	wc->dlid_path_bits = 0;
}

/*
 * Copies the next CQE out of the ring into *cqe and moves past it, without
 * handing the slot back yet (vrdma_cq_release does that for everything
 * taken so far).  prod is read again only when the CQEs known to be there
 * are used up.  Returns 0, ENOENT when the ring is empty, or EIO when prod
 * is further ahead than the ring is long (nothing the kernel can have
 * written).  The caller holds the CQ lock.
 */
static inline int vrdma_cq_take(struct vrdma_uring *cq, struct vrdma_cqe *cqe)
{
	if (cq->head == cq->peer)
		cq->peer = vrdma_load_acquire(&cq->hdr->prod);
	if (cq->peer - cq->head > cq->num_entries) {
		cq->peer = cq->head;	/* not to be believed: read it again */
		return EIO;
	}
	if (cq->head == cq->peer)
		return ENOENT;
	memcpy(cqe, vrdma_uring_entry(cq, cq->head), sizeof(*cqe));
	cq->head++;
	return 0;
}

/*
 * The tag-matching part of the CQE vrdma_cq_take() took last, from a CQ of
 * VRDMA_CQE_TM_SIZE entries; zeros from any other.
 */
static inline void vrdma_cq_taken_tm(const struct vrdma_uring *cq,
				     struct vrdma_cqe_tm *tm)
{
	if (cq->entry_size >= VRDMA_CQE_TM_SIZE)
		memcpy(tm, (const char *)vrdma_uring_entry(cq, cq->head - 1) +
			       sizeof(struct vrdma_cqe), sizeof(*tm));
	else
		memset(tm, 0, sizeof(*tm));
}

/* After the reads of vrdma_cq_take: the kernel may overwrite those slots. */
static inline void vrdma_cq_release(struct vrdma_uring *cq)
{
	vrdma_store_release(&cq->hdr->cons, cq->head);
}

/*
 * Reads up to num_entries completions and returns them to the kernel;
 * returns how many, or -EIO when the first one cannot be read (see
 * vrdma_cq_take).  The caller holds the CQ lock.
 */
static inline int vrdma_cq_poll_ring(struct vrdma_uring *cq, int num_entries,
				     struct ibv_wc *wc)
{
	struct vrdma_cqe cqe;
	int n, ret = 0;

	for (n = 0; n < num_entries; n++) {
		ret = vrdma_cq_take(cq, &cqe);
		if (ret)
			break;
		vrdma_cqe_to_wc(&cqe, &wc[n]);
	}
	if (n)
		vrdma_cq_release(cq);
	return !n && ret == EIO ? -EIO : n;
}

/*
 * Removes the completions of QP qpn not polled yet (modify_qp to RESET:
 * what the QP did before must not be taken for what it does after).  The
 * others move towards prod in their order and the slots freed in front are
 * handed back: the kernel only writes at prod, and what lies between cons
 * and prod is the consumer's.  Returns how many went.  The caller holds the
 * CQ lock.
 */
static inline uint32_t vrdma_cq_clean_ring(struct vrdma_uring *cq,
					   uint32_t qpn)
{
	uint32_t prod = vrdma_load_acquire(&cq->hdr->prod);
	uint32_t i, freed = 0;
	struct vrdma_cqe *cqe;

	if (prod - cq->head > cq->num_entries)
		return 0;	/* garbage: poll_cq reports it */
	for (i = prod; i != cq->head;) {
		cqe = vrdma_uring_entry(cq, --i);
		if (cqe->qp_num == qpn)
			freed++;
		else if (freed)
			memcpy(vrdma_uring_entry(cq, i + freed), cqe,
			       sizeof(*cqe));
	}
	cq->peer = prod;
	if (freed) {
		cq->head += freed;
		vrdma_store_release(&cq->hdr->cons, cq->head);
	}
	return freed;
}

#endif /* VRDMA_RING_H */
