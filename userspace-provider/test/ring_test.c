// SPDX-License-Identifier: (GPL-2.0 OR Linux-OpenIB)
/*
 * ring_test - what post_send, post_recv and poll_cq do to a ring (ring.h),
 * run against fake rings in plain memory, playing the kernel's side by
 * hand: WQE and inline layout, flags, the fields of every opcode, full
 * rings, u32 index wraparound, CQE to ibv_wc conversion.
 *
 * No device, module or libibverbs is needed.  Output is TAP, then a last
 * line "N passed, N failed"; the exit status is non-zero on any failure.
 *
 *   make -C userspace-provider check
 */
#include <endian.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ring.h"
#include "tap.h"

/* What a slot holds before we write it: stale data, never zeros. */
#define STALE 0xa5

/* A ring as the kernel would allocate it, and our view of it. */
struct fake_ring {
	void *mem;
	struct vrdma_ring_info info;
	struct vrdma_uring r;
};

static void fake_ring_init(struct fake_ring *f, uint32_t num_entries,
			   uint32_t entry_size, uint32_t start, bool producer)
{
	size_t size = VRDMA_RING_HDR_SIZE + (size_t)num_entries * entry_size;

	f->mem = aligned_alloc(4096, (size + 4095) & ~(size_t)4095);
	if (!f->mem) {
		perror("aligned_alloc");
		exit(2);
	}
	memset(f->mem, STALE, size);
	memset(f->mem, 0, VRDMA_RING_HDR_SIZE);
	((struct vrdma_ring *)f->mem)->prod = start;
	((struct vrdma_ring *)f->mem)->cons = start;
	f->info = (struct vrdma_ring_info){
		.size = size,
		.num_entries = num_entries,
		.entry_size = entry_size,
	};
	vrdma_uring_init(&f->r, f->mem, &f->info, producer);
}

static void fake_ring_free(struct fake_ring *f)
{
	free(f->mem);
}

static struct vrdma_ring *hdr(struct fake_ring *f)
{
	return f->mem;
}

static struct vrdma_send_wqe *send_slot(struct fake_ring *f, uint32_t idx)
{
	return vrdma_uring_entry(&f->r, idx);
}

static struct vrdma_recv_wqe *recv_slot(struct fake_ring *f, uint32_t idx)
{
	return vrdma_uring_entry(&f->r, idx);
}

/* The kernel consumes n WQEs. */
static void kernel_consume(struct fake_ring *f, uint32_t n)
{
	vrdma_store_release(&hdr(f)->cons, hdr(f)->cons + n);
}

/* The kernel produces one CQE. */
static void kernel_produce(struct fake_ring *f, const struct vrdma_cqe *cqe)
{
	uint32_t prod = hdr(f)->prod;

	memcpy(vrdma_uring_entry(&f->r, prod), cqe, sizeof(*cqe));
	vrdma_store_release(&hdr(f)->prod, prod + 1);
}

static bool all_bytes(const void *p, size_t len, uint8_t val)
{
	const uint8_t *b = p;
	size_t i;

	for (i = 0; i < len; i++)
		if (b[i] != val)
			return false;
	return true;
}

/* 8 entries of 64 + 4 SGEs = 128 bytes; 64 bytes inline. */
static const struct vrdma_sq_limits rc_limits = {
	.max_sge = 4,
	.max_inline = 64,
};

static struct ibv_send_wr *bad_send_sentinel(void)
{
	return (struct ibv_send_wr *)(uintptr_t)0x5a5a;
}

/* ------------------------------------------------------------------------
 * Tests
 */

static void test_abi_sizes(void)
{
	CHECK_EQ(128, sizeof(struct vrdma_ring));
	CHECK_EQ(64, offsetof(struct vrdma_ring, cons));
	CHECK_EQ(16, sizeof(struct vrdma_sge));
	CHECK_EQ(64, sizeof(struct vrdma_send_wqe));
	CHECK_EQ(16, sizeof(struct vrdma_recv_wqe));
	CHECK_EQ(32, sizeof(struct vrdma_cqe));
	CHECK_EQ(24, sizeof(struct vrdma_ring_info));
	CHECK_EQ(56, sizeof(struct vrdma_create_qp_resp));
	CHECK_EQ(24, sizeof(struct vrdma_create_cq_resp));
	CHECK_EQ(32, sizeof(struct vrdma_create_srq_resp));
	/* the field offsets the kernel reads */
	CHECK_EQ(8, offsetof(struct vrdma_send_wqe, opcode));
	CHECK_EQ(12, offsetof(struct vrdma_send_wqe, ex));
	CHECK_EQ(16, offsetof(struct vrdma_send_wqe, inline_len));
	CHECK_EQ(20, offsetof(struct vrdma_send_wqe, xrc_remote_srqn));
	CHECK_EQ(24, offsetof(struct vrdma_send_wqe, rdma.remote_addr));
	CHECK_EQ(48, offsetof(struct vrdma_send_wqe, atomic.rkey));
	CHECK_EQ(32, offsetof(struct vrdma_send_wqe, ud.remote_qkey));
	CHECK_EQ(16, offsetof(struct vrdma_cqe, ex));
	CHECK_EQ(28, offsetof(struct vrdma_cqe, vendor_err));
}

static void test_ring_info(void)
{
	struct vrdma_ring_info good = {
		.offset = 4096,
		.size = VRDMA_RING_HDR_SIZE + 8 * 128,
		.num_entries = 8,
		.entry_size = 128,
	};
	struct vrdma_ring_info i;

	CHECK(vrdma_ring_info_valid(&good, 128));
	CHECK(vrdma_ring_info_valid(&good, 64));
	CHECK(!vrdma_ring_info_valid(&good, 129));

	i = good;
	i.size--;
	CHECK(!vrdma_ring_info_valid(&i, 64));
	i.size = 64;
	CHECK(!vrdma_ring_info_valid(&i, 64));
	i = good;
	i.num_entries = 0;
	CHECK(!vrdma_ring_info_valid(&i, 64));
	i.num_entries = 6;
	CHECK(!vrdma_ring_info_valid(&i, 64));
	i = good;
	i.entry_size = 96;
	CHECK(!vrdma_ring_info_valid(&i, 64));
	i.entry_size = 0;
	CHECK(!vrdma_ring_info_valid(&i, 0));
	i = good;
	i.offset = (uint64_t)INT64_MAX + 1;
	CHECK(!vrdma_ring_info_valid(&i, 64));
	/* the largest counts: no overflow in num_entries * entry_size */
	i.offset = 0;
	i.num_entries = 1U << 31;
	i.entry_size = 1U << 31;
	i.size = VRDMA_RING_HDR_SIZE + (1ULL << 62) - 1;
	CHECK(!vrdma_ring_info_valid(&i, 64));
	i.size++;
	CHECK(vrdma_ring_info_valid(&i, 64) == (sizeof(size_t) == 8));
}

static void test_wq_fits(void)
{
	/* an SQ of 8 x 128: 4 SGEs or 64 bytes inline */
	struct vrdma_ring_info sq = {
		.size = VRDMA_RING_HDR_SIZE + 8 * 128,
		.num_entries = 8,
		.entry_size = 128,
	};
	struct vrdma_ring_info none = {};

	CHECK(vrdma_wq_fits(&sq, VRDMA_SEND_WQE_HDR_SIZE, 8, 4, 64));
	CHECK(vrdma_wq_fits(&sq, VRDMA_SEND_WQE_HDR_SIZE, 1, 0, 0));
	CHECK(!vrdma_wq_fits(&sq, VRDMA_SEND_WQE_HDR_SIZE, 9, 4, 64));
	CHECK(!vrdma_wq_fits(&sq, VRDMA_SEND_WQE_HDR_SIZE, 8, 5, 64));
	CHECK(!vrdma_wq_fits(&sq, VRDMA_SEND_WQE_HDR_SIZE, 8, 4, 65));
	CHECK(!vrdma_wq_fits(&sq, VRDMA_SEND_WQE_HDR_SIZE, 8, UINT32_MAX, 0));
	CHECK(!vrdma_wq_fits(&sq, VRDMA_SEND_WQE_HDR_SIZE, 8, 0, UINT32_MAX));
	/* the same ring as an RQ: 7 SGEs */
	CHECK(vrdma_wq_fits(&sq, VRDMA_RECV_WQE_HDR_SIZE, 8, 7, 0));
	CHECK(!vrdma_wq_fits(&sq, VRDMA_RECV_WQE_HDR_SIZE, 8, 8, 0));
	/* no ring: only for no requests (an RQ behind an SRQ) */
	CHECK(vrdma_wq_fits(&none, VRDMA_RECV_WQE_HDR_SIZE, 0, 4, 0));
	CHECK(!vrdma_wq_fits(&none, VRDMA_RECV_WQE_HDR_SIZE, 1, 0, 0));
	/* a ring that is not what it says */
	sq.size--;
	CHECK(!vrdma_wq_fits(&sq, VRDMA_SEND_WQE_HDR_SIZE, 1, 0, 0));
}

static void test_init_indices(void)
{
	struct fake_ring f;

	fake_ring_init(&f, 4, 64, 0, true);
	hdr(&f)->prod = 7;
	hdr(&f)->cons = 3;
	vrdma_uring_init(&f.r, f.mem, &f.info, true);
	CHECK_EQ(7, f.r.head);
	CHECK_EQ(3, f.r.peer);
	CHECK_EQ(3, f.r.mask);
	CHECK_EQ(4, f.r.num_entries);
	CHECK_EQ(64, f.r.entry_size);
	CHECK_EQ(f.info.size, f.r.map_size);
	CHECK((uint8_t *)vrdma_uring_entry(&f.r, 5) ==
	      (uint8_t *)f.mem + 128 + 64);

	hdr(&f)->prod = 9;
	hdr(&f)->cons = 5;
	vrdma_uring_init(&f.r, f.mem, &f.info, false);
	CHECK_EQ(5, f.r.head);
	CHECK_EQ(9, f.r.peer);
	fake_ring_free(&f);
}

static void test_send_sge_layout(void)
{
	struct ibv_sge sge[3] = {
		{ .addr = 0x1000200030004000ULL, .length = 4096, .lkey = 0x11 },
		{ .addr = 0x5000, .length = 1, .lkey = 0x22 },
		{ .addr = 0xffffffffffffff00ULL, .length = 0xffffffff,
		  .lkey = 0x33 },
	};
	struct ibv_send_wr wr = {
		.wr_id = 0x1122334455667788ULL,
		.sg_list = sge,
		.num_sge = 3,
		.opcode = IBV_WR_SEND,
		.send_flags = IBV_SEND_SIGNALED,
	};
	struct ibv_send_wr *bad = bad_send_sentinel();
	struct vrdma_send_wqe *wqe;
	struct fake_ring f;

	fake_ring_init(&f, 8, 128, 0, true);
	CHECK_EQ(0, vrdma_sq_post(&f.r, &rc_limits, &wr, &bad));
	CHECK(bad == bad_send_sentinel());
	CHECK_EQ(1, hdr(&f)->prod);
	CHECK_EQ(0, hdr(&f)->cons);

	wqe = send_slot(&f, 0);
	CHECK_EQ(0x1122334455667788ULL, wqe->wr_id);
	CHECK_EQ(IB_UVERBS_WR_SEND, wqe->opcode);
	CHECK_EQ(3, wqe->num_sge);
	CHECK_EQ(VRDMA_SEND_SIGNALED, wqe->flags);
	CHECK_EQ(0, wqe->ex.imm_data);
	CHECK_EQ(0, wqe->inline_len);
	CHECK_EQ(0, wqe->xrc_remote_srqn);
	CHECK(all_bytes(wqe->pad, sizeof(wqe->pad), 0));
	CHECK_EQ(sge[0].addr, wqe->sge[0].addr);
	CHECK_EQ(sge[0].length, wqe->sge[0].length);
	CHECK_EQ(sge[0].lkey, wqe->sge[0].lkey);
	CHECK_EQ(sge[1].addr, wqe->sge[1].addr);
	CHECK_EQ(sge[1].length, wqe->sge[1].length);
	CHECK_EQ(sge[1].lkey, wqe->sge[1].lkey);
	CHECK_EQ(sge[2].addr, wqe->sge[2].addr);
	CHECK_EQ(sge[2].length, wqe->sge[2].length);
	CHECK_EQ(sge[2].lkey, wqe->sge[2].lkey);
	/* SGEs past num_sge and the next slot are not touched */
	CHECK(all_bytes(&wqe->sge[3], sizeof(wqe->sge[3]), STALE));
	CHECK(all_bytes(send_slot(&f, 1), 128, STALE));

	/* no SGEs at all */
	wr.num_sge = 0;
	wr.sg_list = NULL;
	CHECK_EQ(0, vrdma_sq_post(&f.r, &rc_limits, &wr, &bad));
	CHECK_EQ(0, send_slot(&f, 1)->num_sge);
	CHECK_EQ(2, hdr(&f)->prod);

	/* an empty list publishes nothing */
	CHECK_EQ(0, vrdma_sq_post(&f.r, &rc_limits, NULL, &bad));
	CHECK_EQ(2, hdr(&f)->prod);
	CHECK(bad == bad_send_sentinel());
	fake_ring_free(&f);
}

static void test_send_flags(void)
{
	struct vrdma_sq_limits sig_all = rc_limits;
	struct ibv_send_wr wr = { .opcode = IBV_WR_SEND };
	struct ibv_send_wr *bad = bad_send_sentinel();
	struct fake_ring f;

	sig_all.sig_all = VRDMA_SEND_SIGNALED;
	fake_ring_init(&f, 8, 128, 0, true);

	/* only the four the ABI knows; IP_CSUM etc. are dropped */
	wr.send_flags = IBV_SEND_FENCE | IBV_SEND_SOLICITED | IBV_SEND_IP_CSUM;
	CHECK_EQ(0, vrdma_sq_post(&f.r, &rc_limits, &wr, &bad));
	CHECK_EQ(VRDMA_SEND_FENCE | VRDMA_SEND_SOLICITED,
		 send_slot(&f, 0)->flags);

	wr.send_flags = ~0U & ~(unsigned int)IBV_SEND_INLINE;
	CHECK_EQ(0, vrdma_sq_post(&f.r, &rc_limits, &wr, &bad));
	CHECK_EQ(VRDMA_SEND_FENCE | VRDMA_SEND_SIGNALED | VRDMA_SEND_SOLICITED,
		 send_slot(&f, 1)->flags);

	wr.send_flags = 0;
	CHECK_EQ(0, vrdma_sq_post(&f.r, &rc_limits, &wr, &bad));
	CHECK_EQ(0, send_slot(&f, 2)->flags);

	/* sq_sig_all signals every WQE */
	CHECK_EQ(0, vrdma_sq_post(&f.r, &sig_all, &wr, &bad));
	CHECK_EQ(VRDMA_SEND_SIGNALED, send_slot(&f, 3)->flags);
	wr.send_flags = IBV_SEND_SIGNALED | IBV_SEND_FENCE;
	CHECK_EQ(0, vrdma_sq_post(&f.r, &sig_all, &wr, &bad));
	CHECK_EQ(VRDMA_SEND_SIGNALED | VRDMA_SEND_FENCE,
		 send_slot(&f, 4)->flags);
	CHECK_EQ(5, hdr(&f)->prod);
	CHECK(bad == bad_send_sentinel());
	fake_ring_free(&f);
}

static void test_send_rdma(void)
{
	struct ibv_sge sge = { .addr = 0x7000, .length = 8, .lkey = 5 };
	struct ibv_send_wr wr = {
		.wr_id = 1,
		.sg_list = &sge,
		.num_sge = 1,
		.opcode = IBV_WR_RDMA_WRITE_WITH_IMM,
		.imm_data = htobe32(0xdeadbeef),
		.wr.rdma = { .remote_addr = 0xabcdef0123456789ULL,
			     .rkey = 0x87654321 },
	};
	struct ibv_send_wr *bad = bad_send_sentinel();
	struct vrdma_send_wqe *wqe;
	struct fake_ring f;

	fake_ring_init(&f, 8, 128, 0, true);
	CHECK_EQ(0, vrdma_sq_post(&f.r, &rc_limits, &wr, &bad));
	wqe = send_slot(&f, 0);
	CHECK_EQ(IB_UVERBS_WR_RDMA_WRITE_WITH_IMM, wqe->opcode);
	CHECK_EQ(htobe32(0xdeadbeef), wqe->ex.imm_data);
	CHECK(all_bytes(&wqe->ex, 4, 0) == false);
	/* big endian, as given */
	CHECK_EQ(0xde, ((uint8_t *)&wqe->ex)[0]);
	CHECK_EQ(0xabcdef0123456789ULL, wqe->rdma.remote_addr);
	CHECK_EQ(0x87654321, wqe->rdma.rkey);
	CHECK_EQ(0, wqe->rdma.reserved);
	CHECK(all_bytes(wqe->pad + 16, sizeof(wqe->pad) - 16, 0));

	wr.opcode = IBV_WR_RDMA_WRITE;
	CHECK_EQ(0, vrdma_sq_post(&f.r, &rc_limits, &wr, &bad));
	wqe = send_slot(&f, 1);
	CHECK_EQ(IB_UVERBS_WR_RDMA_WRITE, wqe->opcode);
	CHECK_EQ(0, wqe->ex.imm_data);		/* no immediate: zero */
	CHECK_EQ(0xabcdef0123456789ULL, wqe->rdma.remote_addr);
	CHECK_EQ(0x87654321, wqe->rdma.rkey);

	wr.opcode = IBV_WR_RDMA_READ;
	CHECK_EQ(0, vrdma_sq_post(&f.r, &rc_limits, &wr, &bad));
	wqe = send_slot(&f, 2);
	CHECK_EQ(IB_UVERBS_WR_RDMA_READ, wqe->opcode);
	CHECK_EQ(0, wqe->ex.imm_data);
	CHECK_EQ(0xabcdef0123456789ULL, wqe->rdma.remote_addr);
	CHECK_EQ(0x87654321, wqe->rdma.rkey);
	CHECK_EQ(1, wqe->num_sge);
	CHECK_EQ(0x7000, wqe->sge[0].addr);
	CHECK(bad == bad_send_sentinel());
	fake_ring_free(&f);
}

static void test_send_atomic(void)
{
	struct ibv_sge sge = { .addr = 0x8000, .length = 8, .lkey = 6 };
	struct ibv_send_wr wr = {
		.sg_list = &sge,
		.num_sge = 1,
		.opcode = IBV_WR_ATOMIC_CMP_AND_SWP,
		.wr.atomic = { .remote_addr = 0x1000000000000008ULL,
			       .compare_add = 0x0102030405060708ULL,
			       .swap = 0xf0e0d0c0b0a09080ULL,
			       .rkey = 0xcafe },
	};
	struct ibv_send_wr *bad = bad_send_sentinel();
	struct vrdma_send_wqe *wqe;
	struct fake_ring f;

	fake_ring_init(&f, 8, 128, 0, true);
	CHECK_EQ(0, vrdma_sq_post(&f.r, &rc_limits, &wr, &bad));
	wqe = send_slot(&f, 0);
	CHECK_EQ(IB_UVERBS_WR_ATOMIC_CMP_AND_SWP, wqe->opcode);
	CHECK_EQ(0x1000000000000008ULL, wqe->atomic.remote_addr);
	CHECK_EQ(0x0102030405060708ULL, wqe->atomic.compare_add);
	CHECK_EQ(0xf0e0d0c0b0a09080ULL, wqe->atomic.swap);
	CHECK_EQ(0xcafe, wqe->atomic.rkey);
	CHECK_EQ(0, wqe->atomic.reserved);
	CHECK_EQ(0, wqe->ex.imm_data);

	wr.opcode = IBV_WR_ATOMIC_FETCH_AND_ADD;
	wr.wr.atomic.swap = 0;
	CHECK_EQ(0, vrdma_sq_post(&f.r, &rc_limits, &wr, &bad));
	wqe = send_slot(&f, 1);
	CHECK_EQ(IB_UVERBS_WR_ATOMIC_FETCH_AND_ADD, wqe->opcode);
	CHECK_EQ(0x1000000000000008ULL, wqe->atomic.remote_addr);
	CHECK_EQ(0x0102030405060708ULL, wqe->atomic.compare_add);
	CHECK_EQ(0, wqe->atomic.swap);
	CHECK_EQ(0xcafe, wqe->atomic.rkey);
	CHECK(bad == bad_send_sentinel());
	fake_ring_free(&f);
}

static void test_send_imm_inv(void)
{
	struct ibv_send_wr wr = {
		.opcode = IBV_WR_SEND_WITH_IMM,
		.imm_data = htobe32(0x01020304),
		/* ignored for a send on an RC QP: must not reach the WQE */
		.wr.rdma = { .remote_addr = 0x1234, .rkey = 0x99 },
	};
	struct ibv_send_wr *bad = bad_send_sentinel();
	struct vrdma_send_wqe *wqe;
	struct fake_ring f;

	fake_ring_init(&f, 8, 128, 0, true);
	CHECK_EQ(0, vrdma_sq_post(&f.r, &rc_limits, &wr, &bad));
	wqe = send_slot(&f, 0);
	CHECK_EQ(IB_UVERBS_WR_SEND_WITH_IMM, wqe->opcode);
	CHECK_EQ(htobe32(0x01020304), wqe->ex.imm_data);
	CHECK(all_bytes(wqe->pad, sizeof(wqe->pad), 0));

	wr.opcode = IBV_WR_SEND_WITH_INV;
	wr.invalidate_rkey = 0xabad1dea;
	CHECK_EQ(0, vrdma_sq_post(&f.r, &rc_limits, &wr, &bad));
	wqe = send_slot(&f, 1);
	CHECK_EQ(IB_UVERBS_WR_SEND_WITH_INV, wqe->opcode);
	CHECK_EQ(0xabad1dea, wqe->ex.invalidate_rkey);

	wr.opcode = IBV_WR_LOCAL_INV;
	wr.invalidate_rkey = 0x0badf00d;
	CHECK_EQ(0, vrdma_sq_post(&f.r, &rc_limits, &wr, &bad));
	wqe = send_slot(&f, 2);
	CHECK_EQ(IB_UVERBS_WR_LOCAL_INV, wqe->opcode);
	CHECK_EQ(0x0badf00d, wqe->ex.invalidate_rkey);

	wr.opcode = IBV_WR_SEND;
	CHECK_EQ(0, vrdma_sq_post(&f.r, &rc_limits, &wr, &bad));
	CHECK_EQ(0, send_slot(&f, 3)->ex.imm_data);

	/* an opcode vrdma_send_wqe.opcode cannot carry */
	wr.opcode = (enum ibv_wr_opcode)256;
	CHECK_EQ(EINVAL, vrdma_sq_post(&f.r, &rc_limits, &wr, &bad));
	CHECK(bad == &wr);
	CHECK_EQ(4, hdr(&f)->prod);
	fake_ring_free(&f);
}

static void test_send_bind(void)
{
	struct ibv_mr mr = { .lkey = 0x4321 };
	struct ibv_mw mw = { .rkey = 0x80001205, .type = IBV_MW_TYPE_2 };
	struct ibv_send_wr wr = {
		.wr_id = 77,
		.opcode = IBV_WR_BIND_MW,
		.send_flags = IBV_SEND_SIGNALED,
		.bind_mw = {
			.mw = &mw,
			.rkey = 0x80001206,
			.bind_info = {
				.mr = &mr,
				.addr = 0x1000000000000003ULL,
				.length = 0x200000001ULL,
				.mw_access_flags = IBV_ACCESS_REMOTE_READ |
						   IBV_ACCESS_REMOTE_WRITE,
			},
		},
	};
	struct ibv_send_wr *bad = bad_send_sentinel();
	struct vrdma_send_wqe *wqe;
	struct fake_ring f;

	fake_ring_init(&f, 8, 128, 0, true);
	CHECK_EQ(0, vrdma_sq_post(&f.r, &rc_limits, &wr, &bad));
	wqe = send_slot(&f, 0);
	CHECK_EQ(IB_UVERBS_WR_BIND_MW, wqe->opcode);
	CHECK_EQ(77, wqe->wr_id);
	CHECK_EQ(VRDMA_SEND_SIGNALED, wqe->flags);
	CHECK_EQ(0x80001205, wqe->bind.mw_rkey);
	CHECK_EQ(0x80001206, wqe->bind.new_rkey);
	CHECK_EQ(0x4321, wqe->bind.mr_lkey);
	CHECK_EQ(0x1000000000000003ULL, wqe->bind.addr);
	CHECK_EQ(0x200000001ULL, wqe->bind.length);
	CHECK_EQ(IB_UVERBS_ACCESS_REMOTE_READ | IB_UVERBS_ACCESS_REMOTE_WRITE,
		 wqe->bind.access);
	CHECK_EQ(0, wqe->num_sge);

	/* a type 1 unbind names no MR */
	wr.bind_mw.bind_info.mr = NULL;
	wr.bind_mw.bind_info.length = 0;
	CHECK_EQ(0, vrdma_sq_post(&f.r, &rc_limits, &wr, &bad));
	CHECK_EQ(0, send_slot(&f, 1)->bind.mr_lkey);
	CHECK_EQ(0, send_slot(&f, 1)->bind.length);

	/* no window at all */
	wr.bind_mw.mw = NULL;
	CHECK_EQ(EINVAL, vrdma_sq_post(&f.r, &rc_limits, &wr, &bad));
	CHECK(bad == &wr);
	CHECK_EQ(2, hdr(&f)->prod);
	fake_ring_free(&f);
}

static void test_send_ud(void)
{
	struct vrdma_sq_limits ud = rc_limits;
	/* libibverbs' handle is not the one the WQE carries */
	struct vrdma_ah ah = { .ibv_ah = { .handle = 0x42 }, .ah_num = 0x4711 };
	struct ibv_sge sge = { .addr = 0x9000, .length = 100, .lkey = 7 };
	struct ibv_send_wr wr = {
		.wr_id = 77,
		.sg_list = &sge,
		.num_sge = 1,
		.opcode = IBV_WR_SEND_WITH_IMM,
		.imm_data = htobe32(5),
		.wr.ud = { .ah = &ah.ibv_ah, .remote_qpn = 0x123456,
			   .remote_qkey = 0x11111111 },
	};
	struct ibv_send_wr *bad = bad_send_sentinel();
	struct vrdma_send_wqe *wqe;
	struct fake_ring f;

	ud.ud = true;
	fake_ring_init(&f, 8, 128, 0, true);
	CHECK_EQ(0, vrdma_sq_post(&f.r, &ud, &wr, &bad));
	wqe = send_slot(&f, 0);
	CHECK_EQ(IB_UVERBS_WR_SEND_WITH_IMM, wqe->opcode);
	CHECK_EQ(htobe32(5), wqe->ex.imm_data);
	CHECK_EQ(0x4711, wqe->ud.ah);
	CHECK_EQ(0x123456, wqe->ud.remote_qpn);
	CHECK_EQ(0x11111111, wqe->ud.remote_qkey);
	CHECK_EQ(0, wqe->ud.reserved);
	CHECK(all_bytes(wqe->pad + 16, sizeof(wqe->pad) - 16, 0));
	CHECK_EQ(1, wqe->num_sge);
	CHECK_EQ(100, wqe->sge[0].length);

	/* a UD send needs an AH */
	wr.wr.ud.ah = NULL;
	CHECK_EQ(EINVAL, vrdma_sq_post(&f.r, &ud, &wr, &bad));
	CHECK(bad == &wr);
	CHECK_EQ(1, hdr(&f)->prod);
	fake_ring_free(&f);
}

/*
 * XRC initiator: every WQE names the target's SRQ, the rest as RC; other
 * QPs leave the field zero whatever the request holds.
 */
static void test_send_xrc(void)
{
	struct vrdma_sq_limits xrc = rc_limits;
	struct ibv_sge sge = { .addr = 0x9000, .length = 8, .lkey = 7 };
	struct ibv_send_wr wr[2] = {
		{ .wr_id = 1, .next = &wr[1], .sg_list = &sge, .num_sge = 1,
		  .opcode = IBV_WR_SEND_WITH_IMM, .imm_data = htobe32(9),
		  .qp_type.xrc.remote_srqn = 0x123456 },
		{ .wr_id = 2, .sg_list = &sge, .num_sge = 1,
		  .opcode = IBV_WR_RDMA_READ,
		  .wr.rdma = { .remote_addr = 0x1000, .rkey = 0x55 },
		  /* passed on: the kernel judges it */
		  .qp_type.xrc.remote_srqn = 0x1000000 },
	};
	struct ibv_send_wr *bad = bad_send_sentinel();
	struct vrdma_send_wqe *wqe;
	struct fake_ring f;

	xrc.xrc = true;
	fake_ring_init(&f, 8, 128, 0, true);
	CHECK_EQ(0, vrdma_sq_post(&f.r, &xrc, wr, &bad));
	CHECK_EQ(2, hdr(&f)->prod);
	wqe = send_slot(&f, 0);
	CHECK_EQ(IB_UVERBS_WR_SEND_WITH_IMM, wqe->opcode);
	CHECK_EQ(htobe32(9), wqe->ex.imm_data);
	CHECK_EQ(0x123456, wqe->xrc_remote_srqn);
	CHECK_EQ(1, wqe->num_sge);
	wqe = send_slot(&f, 1);
	CHECK_EQ(IB_UVERBS_WR_RDMA_READ, wqe->opcode);
	CHECK_EQ(0x1000000, wqe->xrc_remote_srqn);
	CHECK_EQ(0x1000, wqe->rdma.remote_addr);
	CHECK_EQ(0x55, wqe->rdma.rkey);

	/* an RC QP ignores the XRC field of the request */
	wr[0].next = NULL;
	CHECK_EQ(0, vrdma_sq_post(&f.r, &rc_limits, wr, &bad));
	CHECK_EQ(0, send_slot(&f, 2)->xrc_remote_srqn);
	CHECK(bad == bad_send_sentinel());
	fake_ring_free(&f);
}

static void test_send_inline(void)
{
	char a[] = "hello", c[] = " world, 16!";
	struct ibv_sge sge[3] = {
		{ .addr = (uintptr_t)a, .length = 5, .lkey = 0xdead },
		{ .addr = 0, .length = 0 },	/* never read */
		{ .addr = (uintptr_t)c, .length = 11 },
	};
	struct ibv_send_wr wr = {
		.wr_id = 9,
		.sg_list = sge,
		.num_sge = 3,
		.opcode = IBV_WR_SEND,
		.send_flags = IBV_SEND_INLINE | IBV_SEND_SIGNALED,
	};
	struct ibv_send_wr *bad = bad_send_sentinel();
	uint8_t big[65], *data;
	struct vrdma_send_wqe *wqe;
	struct fake_ring f;
	size_t i;

	for (i = 0; i < sizeof(big); i++)
		big[i] = (uint8_t)(i * 7 + 1);

	fake_ring_init(&f, 8, 128, 0, true);
	CHECK_EQ(0, vrdma_sq_post(&f.r, &rc_limits, &wr, &bad));
	wqe = send_slot(&f, 0);
	data = (uint8_t *)wqe->sge;
	CHECK_EQ(9, wqe->wr_id);
	CHECK_EQ(VRDMA_SEND_INLINE | VRDMA_SEND_SIGNALED, wqe->flags);
	CHECK_EQ(0, wqe->num_sge);
	CHECK_EQ(16, wqe->inline_len);
	CHECK(!memcmp(data, "hello world, 16!", 16));
	/* nothing written past the data */
	CHECK(all_bytes(data + 16, 128 - 64 - 16, STALE));

	/* exactly max_inline: the whole SGE area */
	sge[0] = (struct ibv_sge){ .addr = (uintptr_t)big, .length = 40 };
	sge[1] = (struct ibv_sge){ .addr = (uintptr_t)big + 40, .length = 24 };
	wr.num_sge = 2;
	CHECK_EQ(0, vrdma_sq_post(&f.r, &rc_limits, &wr, &bad));
	wqe = send_slot(&f, 1);
	CHECK_EQ(64, wqe->inline_len);
	CHECK(!memcmp(wqe->sge, big, 64));
	CHECK(all_bytes(send_slot(&f, 2), 128, STALE));

	/* one byte more: refused, the slot left alone, nothing published */
	sge[1].length = 25;
	CHECK_EQ(EINVAL, vrdma_sq_post(&f.r, &rc_limits, &wr, &bad));
	CHECK(bad == &wr);
	CHECK_EQ(2, hdr(&f)->prod);
	CHECK(all_bytes(send_slot(&f, 2), 128, STALE));

	/* lengths that overflow 32 bits do not wrap into "small" */
	sge[0].length = 0xffffffff;
	sge[1].length = 2;
	bad = bad_send_sentinel();
	CHECK_EQ(EINVAL, vrdma_sq_post(&f.r, &rc_limits, &wr, &bad));
	CHECK(bad == &wr);
	CHECK_EQ(2, hdr(&f)->prod);
	fake_ring_free(&f);
}

static void test_send_bad_sge(void)
{
	struct ibv_sge sge[5] = {};
	struct ibv_send_wr wr[3] = {
		{ .wr_id = 1, .next = &wr[1], .sg_list = sge, .num_sge = 4 },
		{ .wr_id = 2, .next = &wr[2], .sg_list = sge, .num_sge = 5 },
		{ .wr_id = 3, .sg_list = sge, .num_sge = 1 },
	};
	struct ibv_send_wr *bad = bad_send_sentinel();
	struct fake_ring f;

	fake_ring_init(&f, 8, 128, 0, true);
	CHECK_EQ(EINVAL, vrdma_sq_post(&f.r, &rc_limits, wr, &bad));
	CHECK(bad == &wr[1]);
	/* what came before the bad one is posted */
	CHECK_EQ(1, hdr(&f)->prod);
	CHECK_EQ(1, send_slot(&f, 0)->wr_id);
	CHECK(all_bytes(send_slot(&f, 1), 128, STALE));

	wr[1].num_sge = -1;
	bad = bad_send_sentinel();
	CHECK_EQ(EINVAL, vrdma_sq_post(&f.r, &rc_limits, &wr[1], &bad));
	CHECK(bad == &wr[1]);
	CHECK_EQ(1, hdr(&f)->prod);
	fake_ring_free(&f);
}

static void test_send_full(void)
{
	struct ibv_send_wr wr[6] = {};
	struct ibv_send_wr *bad = bad_send_sentinel();
	struct fake_ring f;
	int i;

	for (i = 0; i < 6; i++) {
		wr[i].wr_id = 100 + i;
		wr[i].next = i < 5 ? &wr[i + 1] : NULL;
	}
	fake_ring_init(&f, 4, 64, 0, true);

	CHECK_EQ(ENOMEM, vrdma_sq_post(&f.r, &rc_limits, wr, &bad));
	CHECK(bad == &wr[4]);
	CHECK_EQ(4, hdr(&f)->prod);
	for (i = 0; i < 4; i++)
		CHECK_EQ(100 + i, send_slot(&f, i)->wr_id);

	/* still full until the kernel consumes */
	bad = bad_send_sentinel();
	CHECK_EQ(ENOMEM, vrdma_sq_post(&f.r, &rc_limits, &wr[5], &bad));
	CHECK(bad == &wr[5]);
	CHECK_EQ(4, hdr(&f)->prod);

	kernel_consume(&f, 2);
	bad = bad_send_sentinel();
	CHECK_EQ(ENOMEM, vrdma_sq_post(&f.r, &rc_limits, &wr[3], &bad));
	CHECK(bad == &wr[5]);
	CHECK_EQ(6, hdr(&f)->prod);
	CHECK_EQ(103, send_slot(&f, 4)->wr_id);
	CHECK_EQ(104, send_slot(&f, 5)->wr_id);
	/* slots 2 and 3 still hold the unconsumed WQEs */
	CHECK_EQ(102, send_slot(&f, 2)->wr_id);
	CHECK_EQ(103, send_slot(&f, 3)->wr_id);

	/* a cons ahead of prod (a kernel bug) reads as full */
	hdr(&f)->cons = 7;
	bad = bad_send_sentinel();
	CHECK_EQ(ENOMEM, vrdma_sq_post(&f.r, &rc_limits, &wr[5], &bad));
	CHECK(bad == &wr[5]);
	CHECK_EQ(6, hdr(&f)->prod);
	fake_ring_free(&f);
}

static void test_send_wraparound(void)
{
	const uint32_t start = 0xfffffff0;
	struct ibv_send_wr wr[7] = {};
	struct ibv_send_wr *bad = bad_send_sentinel();
	uint32_t idx = start, i;
	struct fake_ring f;
	int round;

	fake_ring_init(&f, 8, 64, start, true);
	CHECK_EQ(start, f.r.head);
	/* 5 rounds of 7: prod and cons cross 2^32 during round 3 */
	for (round = 0; round < 5; round++) {
		for (i = 0; i < 7; i++) {
			wr[i].wr_id = (uint64_t)round << 32 | (idx + i);
			wr[i].next = i < 6 ? &wr[i + 1] : NULL;
		}
		CHECK_EQ(0, vrdma_sq_post(&f.r, &rc_limits, wr, &bad));
		CHECK_EQ(idx + 7, hdr(&f)->prod);
		for (i = 0; i < 7; i++)
			CHECK_EQ((uint64_t)round << 32 | (idx + i),
				 send_slot(&f, idx + i)->wr_id);
		/* each WQE sits at VRDMA_RING_HDR_SIZE + (idx & 7) * 64 */
		CHECK((uint8_t *)send_slot(&f, idx) ==
		      (uint8_t *)f.mem + 128 + (idx & 7) * 64);
		kernel_consume(&f, 7);
		idx += 7;
	}
	CHECK_EQ(0x13, hdr(&f)->prod);
	CHECK_EQ(0x13, hdr(&f)->cons);
	CHECK(bad == bad_send_sentinel());

	/* full across the wrap: prod 4, cons 0xfffffffc */
	hdr(&f)->prod = 4;
	hdr(&f)->cons = 0xfffffffc;
	vrdma_uring_init(&f.r, f.mem, &f.info, true);
	wr[0].next = NULL;
	CHECK_EQ(ENOMEM, vrdma_sq_post(&f.r, &rc_limits, wr, &bad));
	CHECK(bad == &wr[0]);
	kernel_consume(&f, 1);
	CHECK_EQ(0, vrdma_sq_post(&f.r, &rc_limits, wr, &bad));
	CHECK_EQ(5, hdr(&f)->prod);
	CHECK_EQ(wr[0].wr_id, send_slot(&f, 4)->wr_id);
	fake_ring_free(&f);
}

static void test_recv(void)
{
	struct ibv_sge sge[4] = {
		{ .addr = 0xa000, .length = 256, .lkey = 1 },
		{ .addr = 0xb000, .length = 512, .lkey = 2 },
		{ .addr = 0xc000, .length = 1024, .lkey = 3 },
		{ .addr = 0xd000, .length = 2048, .lkey = 4 },
	};
	struct ibv_recv_wr wr[3] = {
		{ .wr_id = 11, .next = &wr[1], .sg_list = sge, .num_sge = 3 },
		{ .wr_id = 12, .next = &wr[2], .sg_list = sge, .num_sge = 0 },
		{ .wr_id = 13, .sg_list = sge, .num_sge = 4 },
	};
	struct ibv_recv_wr *bad = (struct ibv_recv_wr *)(uintptr_t)0x5a5a;
	struct vrdma_recv_wqe *wqe;
	struct fake_ring f;
	int i;

	/* 16 + 3 SGEs, rounded up to 64 */
	fake_ring_init(&f, 4, 64, 0, true);
	CHECK_EQ(EINVAL, vrdma_rq_post(&f.r, 3, wr, &bad));
	CHECK(bad == &wr[2]);
	CHECK_EQ(2, hdr(&f)->prod);

	wqe = recv_slot(&f, 0);
	CHECK_EQ(11, wqe->wr_id);
	CHECK_EQ(3, wqe->num_sge);
	CHECK_EQ(0, wqe->reserved);
	for (i = 0; i < 3; i++) {
		CHECK_EQ(sge[i].addr, wqe->sge[i].addr);
		CHECK_EQ(sge[i].length, wqe->sge[i].length);
		CHECK_EQ(sge[i].lkey, wqe->sge[i].lkey);
	}
	wqe = recv_slot(&f, 1);
	CHECK_EQ(12, wqe->wr_id);
	CHECK_EQ(0, wqe->num_sge);
	CHECK_EQ(0, wqe->reserved);
	CHECK(all_bytes(recv_slot(&f, 2), 64, STALE));

	/* full: 2 more fit */
	wr[2].num_sge = 1;
	bad = NULL;
	CHECK_EQ(ENOMEM, vrdma_rq_post(&f.r, 3, wr, &bad));
	CHECK(bad == &wr[2]);
	CHECK_EQ(4, hdr(&f)->prod);
	CHECK_EQ(11, recv_slot(&f, 2)->wr_id);
	CHECK_EQ(12, recv_slot(&f, 3)->wr_id);
	kernel_consume(&f, 1);
	CHECK_EQ(0, vrdma_rq_post(&f.r, 3, &wr[2], &bad));
	CHECK_EQ(5, hdr(&f)->prod);
	CHECK_EQ(13, recv_slot(&f, 4)->wr_id);
	CHECK_EQ(1, recv_slot(&f, 4)->num_sge);

	/* full is checked first: make room */
	CHECK_EQ(ENOMEM, vrdma_rq_post(&f.r, 3, &wr[2], &bad));
	kernel_consume(&f, 1);
	wr[0].num_sge = -2;
	CHECK_EQ(EINVAL, vrdma_rq_post(&f.r, 3, wr, &bad));
	CHECK(bad == &wr[0]);
	CHECK_EQ(5, hdr(&f)->prod);
	fake_ring_free(&f);
}

static void test_recv_wraparound(void)
{
	const uint32_t start = 0xfffffff0;
	struct ibv_sge sge = { .addr = 0x1000, .length = 64, .lkey = 9 };
	struct ibv_recv_wr wr = { .sg_list = &sge, .num_sge = 1 };
	struct ibv_recv_wr *bad = NULL;
	struct fake_ring f;
	uint32_t i;

	fake_ring_init(&f, 4, 32, start, true);
	for (i = 0; i < 40; i++) {
		wr.wr_id = start + i;
		CHECK_EQ(0, vrdma_rq_post(&f.r, 1, &wr, &bad));
		CHECK_EQ(start + i + 1, hdr(&f)->prod);
		CHECK_EQ(start + i, recv_slot(&f, start + i)->wr_id);
		if (i % 3 == 2)
			kernel_consume(&f, 3);
	}
	/* 40 posted, 39 consumed: 3 more fit, then full */
	CHECK_EQ(start + 39, hdr(&f)->cons);
	for (i = 0; i < 3; i++)
		CHECK_EQ(0, vrdma_rq_post(&f.r, 1, &wr, &bad));
	CHECK_EQ(ENOMEM, vrdma_rq_post(&f.r, 1, &wr, &bad));
	CHECK(bad == &wr);
	CHECK_EQ(start + 43, hdr(&f)->prod);
	CHECK_EQ(0x1b, hdr(&f)->prod);
	fake_ring_free(&f);
}

static struct vrdma_cqe sample_cqe(void)
{
	return (struct vrdma_cqe){
		.wr_id = 0x0123456789abcdefULL,
		.status = IBV_WC_REM_ACCESS_ERR,
		.opcode = IBV_WC_RECV_RDMA_WITH_IMM,
		.wc_flags = VRDMA_WC_WITH_IMM | VRDMA_WC_GRH,
		.byte_len = 0x12345,
		.ex.imm_data = htobe32(0xcafef00d),
		.qp_num = 0x001234,
		.src_qp = 0xabcdef,
		.vendor_err = 0x77,
		.network_hdr_type = 2,
	};
}

static void test_cqe_to_wc(void)
{
	struct vrdma_cqe cqe = sample_cqe();
	struct ibv_wc wc;

	memset(&wc, 0xff, sizeof(wc));
	vrdma_cqe_to_wc(&cqe, &wc);
	CHECK_EQ(0x0123456789abcdefULL, wc.wr_id);
	CHECK_EQ(IBV_WC_REM_ACCESS_ERR, wc.status);
	CHECK_EQ(IBV_WC_RECV_RDMA_WITH_IMM, wc.opcode);
	CHECK_EQ(IBV_WC_WITH_IMM | IBV_WC_GRH, wc.wc_flags);
	CHECK_EQ(0x12345, wc.byte_len);
	CHECK(!memcmp(&wc.imm_data, "\xca\xfe\xf0\x0d", 4));
	CHECK_EQ(0x001234, wc.qp_num);
	CHECK_EQ(0xabcdef, wc.src_qp);
	CHECK_EQ(0x77, wc.vendor_err);
	CHECK_EQ(0, wc.pkey_index);
	CHECK_EQ(0, wc.slid);
	/* the L3 header type as mlx5 reports it: 2 IPv4, 1 IPv6, else 0 */
	CHECK_EQ(2, wc.sl);
	CHECK_EQ(0, wc.dlid_path_bits);
	cqe.network_hdr_type = VRDMA_NETWORK_HDR_IPV6;
	vrdma_cqe_to_wc(&cqe, &wc);
	CHECK_EQ(1, wc.sl);
	cqe.network_hdr_type = VRDMA_NETWORK_HDR_NONE;
	vrdma_cqe_to_wc(&cqe, &wc);
	CHECK_EQ(0, wc.sl);

	/* the invalidated rkey, host order */
	cqe.status = IBV_WC_SUCCESS;
	cqe.opcode = IBV_WC_RECV;
	cqe.wc_flags = VRDMA_WC_WITH_INV;
	cqe.ex.invalidate_rkey = 0x89abcdef;
	cqe.vendor_err = 0xffff;
	memset(&wc, 0xff, sizeof(wc));
	vrdma_cqe_to_wc(&cqe, &wc);
	CHECK_EQ(IBV_WC_SUCCESS, wc.status);
	CHECK_EQ(IBV_WC_RECV, wc.opcode);
	CHECK_EQ(IBV_WC_WITH_INV, wc.wc_flags);
	CHECK_EQ(0x89abcdef, wc.invalidated_rkey);
	CHECK_EQ(0xffff, wc.vendor_err);

	/* a send completion: no flags, nothing extra */
	cqe = (struct vrdma_cqe){ .wr_id = 5, .opcode = IBV_WC_RDMA_READ,
				  .byte_len = 4096, .qp_num = 17 };
	memset(&wc, 0xff, sizeof(wc));
	vrdma_cqe_to_wc(&cqe, &wc);
	CHECK_EQ(5, wc.wr_id);
	CHECK_EQ(IBV_WC_SUCCESS, wc.status);
	CHECK_EQ(IBV_WC_RDMA_READ, wc.opcode);
	CHECK_EQ(0, wc.wc_flags);
	CHECK_EQ(4096, wc.byte_len);
	CHECK_EQ(0, wc.imm_data);
	CHECK_EQ(17, wc.qp_num);
	CHECK_EQ(0, wc.src_qp);
	CHECK_EQ(0, wc.vendor_err);
}

static void test_poll(void)
{
	const uint32_t start = 0xfffffffe;
	struct vrdma_cqe cqe = sample_cqe();
	struct ibv_wc wc[8];
	struct fake_ring f;
	int i;

	fake_ring_init(&f, 4, sizeof(struct vrdma_cqe), start, false);
	CHECK_EQ(0, vrdma_cq_poll_ring(&f.r, 8, wc));
	CHECK_EQ(start, hdr(&f)->cons);

	/* 3 CQEs: prod crosses 2^32 */
	for (i = 0; i < 3; i++) {
		cqe.wr_id = 1000 + i;
		kernel_produce(&f, &cqe);
	}
	CHECK_EQ(1, hdr(&f)->prod);
	CHECK_EQ(2, vrdma_cq_poll_ring(&f.r, 2, wc));
	CHECK_EQ(1000, wc[0].wr_id);
	CHECK_EQ(1001, wc[1].wr_id);
	CHECK_EQ(IBV_WC_REM_ACCESS_ERR, wc[1].status);
	CHECK_EQ(0, hdr(&f)->cons);
	/* num_entries 0 takes nothing and returns nothing */
	CHECK_EQ(0, vrdma_cq_poll_ring(&f.r, 0, wc));
	CHECK_EQ(0, hdr(&f)->cons);
	CHECK_EQ(1, vrdma_cq_poll_ring(&f.r, 8, wc));
	CHECK_EQ(1002, wc[0].wr_id);
	CHECK_EQ(1, hdr(&f)->cons);
	CHECK_EQ(0, vrdma_cq_poll_ring(&f.r, 8, wc));

	/* a full ring: every entry comes back, in order */
	for (i = 0; i < 4; i++) {
		cqe.wr_id = 2000 + i;
		cqe.qp_num = i;
		kernel_produce(&f, &cqe);
	}
	memset(wc, 0, sizeof(wc));
	CHECK_EQ(4, vrdma_cq_poll_ring(&f.r, 8, wc));
	for (i = 0; i < 4; i++) {
		CHECK_EQ(2000 + i, wc[i].wr_id);
		CHECK_EQ(i, wc[i].qp_num);
	}
	CHECK_EQ(0, wc[4].wr_id);	/* no more than there were */
	CHECK_EQ(5, hdr(&f)->cons);

	/* a prod no kernel can have written */
	hdr(&f)->prod = 5 + 5;
	CHECK_EQ(-EIO, vrdma_cq_poll_ring(&f.r, 8, wc));
	CHECK_EQ(5, hdr(&f)->cons);
	hdr(&f)->prod = 4;	/* behind cons */
	CHECK_EQ(-EIO, vrdma_cq_poll_ring(&f.r, 8, wc));
	CHECK_EQ(5, hdr(&f)->cons);
	fake_ring_free(&f);
}

/* A CQ after resize_cq: consumption starts where the kernel put cons. */
static void test_poll_resized(void)
{
	struct vrdma_cqe cqe = sample_cqe();
	struct ibv_wc wc[4];
	struct fake_ring f;

	fake_ring_init(&f, 8, 64, 0, false);	/* a 64-byte stride works too */
	hdr(&f)->prod = 0x100;
	hdr(&f)->cons = 0x100;
	cqe.wr_id = 1;
	kernel_produce(&f, &cqe);
	cqe.wr_id = 2;
	kernel_produce(&f, &cqe);
	vrdma_uring_init(&f.r, f.mem, &f.info, false);
	CHECK_EQ(0x100, f.r.head);
	CHECK_EQ(2, vrdma_cq_poll_ring(&f.r, 4, wc));
	CHECK_EQ(1, wc[0].wr_id);
	CHECK_EQ(2, wc[1].wr_id);
	CHECK_EQ(0x102, hdr(&f)->cons);
	fake_ring_free(&f);
}

/* Reset of a QP: its completions leave the CQ, the others stay in order. */
static void test_cq_clean(void)
{
	static const uint32_t qpn[] = { 7, 9, 7, 7, 9, 11, 7 };
	const uint32_t start = 0xfffffffd;
	struct vrdma_cqe cqe = sample_cqe();
	struct ibv_wc wc[8];
	struct fake_ring f;
	unsigned int i;

	fake_ring_init(&f, 8, sizeof(struct vrdma_cqe), start, false);
	CHECK_EQ(0, vrdma_cq_clean_ring(&f.r, 7));
	for (i = 0; i < 7; i++) {
		cqe.wr_id = 100 + i;
		cqe.qp_num = qpn[i];
		kernel_produce(&f, &cqe);
	}
	/* one polled before the reset */
	CHECK_EQ(1, vrdma_cq_poll_ring(&f.r, 1, wc));
	CHECK_EQ(100, wc[0].wr_id);
	CHECK_EQ(3, vrdma_cq_clean_ring(&f.r, 7));
	CHECK_EQ(start + 4, hdr(&f)->cons);
	CHECK_EQ(0, vrdma_cq_clean_ring(&f.r, 7));
	/* the kernel goes on producing behind them */
	cqe.wr_id = 107;
	cqe.qp_num = 11;
	kernel_produce(&f, &cqe);
	CHECK_EQ(4, vrdma_cq_poll_ring(&f.r, 8, wc));
	CHECK_EQ(101, wc[0].wr_id);
	CHECK_EQ(104, wc[1].wr_id);
	CHECK_EQ(105, wc[2].wr_id);
	CHECK_EQ(107, wc[3].wr_id);
	CHECK_EQ(hdr(&f)->prod, hdr(&f)->cons);
	/* a prod no kernel can have written: nothing is touched */
	hdr(&f)->prod += 9;
	CHECK_EQ(0, vrdma_cq_clean_ring(&f.r, 11));
	CHECK_EQ(start + 8, hdr(&f)->cons);
	fake_ring_free(&f);
}

static const struct tap_test tests[] = {
	{ "ABI sizes and offsets", test_abi_sizes },
	{ "ring_info validation", test_ring_info },
	{ "WQ ring holds the granted capabilities", test_wq_fits },
	{ "initial indices come from the ring header", test_init_indices },
	{ "send: SGE layout, header fields, stale slot zeroed",
	  test_send_sge_layout },
	{ "send: flags mapping and sq_sig_all", test_send_flags },
	{ "send: RDMA WRITE (WITH_IMM) and READ fields", test_send_rdma },
	{ "send: atomic CMP_AND_SWP and FETCH_AND_ADD fields",
	  test_send_atomic },
	{ "send: imm_data and invalidate_rkey", test_send_imm_inv },
	{ "send: memory window bind fields", test_send_bind },
	{ "send: UD address handle (the kernel's), QPN, Q_Key", test_send_ud },
	{ "send: XRC initiator names the remote SRQ", test_send_xrc },
	{ "send: inline data layout and max_inline_data",
	  test_send_inline },
	{ "send: num_sge beyond max_send_sge is EINVAL with bad_wr",
	  test_send_bad_sge },
	{ "send: full ring is ENOMEM with bad_wr", test_send_full },
	{ "send: u32 index wraparound", test_send_wraparound },
	{ "recv: WQE layout, EINVAL, full ring", test_recv },
	{ "recv: u32 index wraparound", test_recv_wraparound },
	{ "poll: every vrdma_cqe field into ibv_wc", test_cqe_to_wc },
	{ "poll: wraparound, partial polls, bad prod", test_poll },
	{ "poll: starts at the cons the kernel left (resize)",
	  test_poll_resized },
	{ "clean: a reset QP's completions leave the CQ", test_cq_clean },
};

int main(void)
{
	return tap_run(tests, sizeof(tests) / sizeof(tests[0]));
}
