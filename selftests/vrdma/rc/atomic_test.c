// SPDX-License-Identifier: GPL-2.0
/*
 * RC atomics through the standard verbs API: 8-byte compare-and-swap and
 * fetch-and-add, their results and the remote memory checked exactly, the
 * error cases (misaligned address, no REMOTE_ATOMIC on the MR or on the QP,
 * out of bounds, bad rkey, bad local buffer, no responder resources), many
 * READs and ATOMICs in flight beyond max_rd_atomic, two QPs (on two
 * devices) adding to the same word at once, and the responder's replay
 * cache: with answers dropped on a veth, every atomic is applied exactly
 * once and duplicates are answered from the cache.  ATOMIC WRITE and FLUSH
 * (written into the SQ ring: rdma-core 44 has no ibv_wr_flush()): their
 * data and completions, and the errors (misaligned, bad rkey, no
 * REMOTE_WRITE or FLUSH right, out of range, persistence, malformed WQEs);
 * on ib_core 6.1, where nothing can have the FLUSH rights, a FLUSH is
 * refused.  Both go as packets also between QPs of one host (the loopback
 * variant delivers them inside the driver).
 *
 * Variants as in rc_test.c: "loopback" (both QPs on one device) and
 * "two_devices" (one QP on each end of a veth pair). VRDMA_TEST_TYPE=rxe
 * runs the same tests on rdma_rxe to validate them.
 *
 * Runs as root in the test VM; main() (rc_suite.h) sets up the module, a
 * veth pair and the two RDMA devices.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>
#include <infiniband/verbs.h>

#include "rc_lib.h"
#include "rc_suite.h"

#include "vrdma.h"

/* QP access and target MR access that allow atomics. */
#define AT_QP_ACCESS	(IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ | \
			 IBV_ACCESS_REMOTE_ATOMIC)
#define AT_MR_ACCESS	(RC_ACCESS_ALL | IBV_ACCESS_REMOTE_ATOMIC)
#define AT_BUF		(128 * 1024)

/* ---- fixture --------------------------------------------------------- */

/* A pair, A's local buffer (results), B's target buffer. */
struct at_env {
	struct rc_pair p;
	struct rc_buf la, rb;
};

FIXTURE(atomic) {
	struct rc_dev d0, d1;
	struct rc_dev *da, *db;
	struct at_env e, e2;
	int two;
};

RC_ENDS_VARIANTS(atomic);

FIXTURE_SETUP(atomic)
{
	self->two = variant->two_devices;
	rc_ends_open(_metadata, &self->d0, &self->d1, &self->da, &self->db,
		     self->two);
}

static void env_destroy(struct at_env *e)
{
	rc_buf_free(&e->la);
	rc_buf_free(&e->rb);
	rc_pair_destroy(&e->p);
}

FIXTURE_TEARDOWN(atomic)
{
	env_destroy(&self->e2);
	env_destroy(&self->e);
	rc_dev_close(&self->d1);
	rc_dev_close(&self->d0);
}

/*
 * A pair from @da to @db with atomics allowed (unless @o says otherwise),
 * and a local and a target buffer of AT_BUF bytes.
 */
static void env_create(struct __test_metadata *_metadata, struct at_env *e,
		       struct rc_dev *da, struct rc_dev *db,
		       const struct rc_opts *o)
{
	struct rc_opts d = { .access = AT_QP_ACCESS };

	memset(e, 0, sizeof(*e));
	rc_pair_create(_metadata, &e->p, da, db, o ? o : &d);
	rc_buf_alloc(_metadata, &e->la, da->pd, AT_BUF, RC_ACCESS_ALL);
	rc_buf_alloc(_metadata, &e->rb, db->pd, AT_BUF, AT_MR_ACCESS);
}

/*
 * A connected pair whose max_rd_atomic / max_dest_rd_atomic are @init and
 * @dest on both QPs (RTR and RTS attributes as rc_qp_connect()).
 */
static void env_create_rd_atomic(struct __test_metadata *_metadata,
				 FIXTURE_DATA(atomic) *self, struct at_env *e,
				 struct rc_opts *o, int init, int dest)
{
	struct rc_qp *q[2] = { &e->p.a, &e->p.b };
	struct ibv_qp_attr a;
	int i;

	o->no_connect = 1;
	if (!o->access)
		o->access = AT_QP_ACCESS;
	env_create(_metadata, e, self->da, self->db, o);
	for (i = 0; i < 2; i++) {
		struct rc_qp *peer = q[1 - i];

		ASSERT_EQ(0, rc_to_init(q[i], o->access));
		rc_rtr_attr(&a, q[i], peer->qp->qp_num, &peer->dev->gid,
			    q[i]->rq_psn);
		a.max_dest_rd_atomic = dest;
		ASSERT_EQ(0, ibv_modify_qp(q[i]->qp, &a, RC_RTR_MASK));
	}
	for (i = 0; i < 2; i++) {
		rc_rts_attr(&a, q[i], q[i]->sq_psn);
		a.max_rd_atomic = init;
		ASSERT_EQ(0, ibv_modify_qp(q[i]->qp, &a, RC_RTS_MASK));
	}
}

/* ---- posting ------------------------------------------------------------ */

static const char *at_op_str(enum ibv_wr_opcode op)
{
	return op == IBV_WR_ATOMIC_CMP_AND_SWP ? "CAS" :
	       op == IBV_WR_ATOMIC_FETCH_AND_ADD ? "FAA" : "READ";
}

/*
 * An atomic WR: the result goes to @len bytes at @local (lkey @lkey), the
 * target is @raddr/@rkey. Signaled.
 */
static void atomic_wr(struct ibv_send_wr *wr, struct ibv_sge *sge,
		      uint64_t wr_id, enum ibv_wr_opcode op, void *local,
		      uint32_t len, uint32_t lkey, uint64_t raddr,
		      uint32_t rkey, uint64_t compare_add, uint64_t swap)
{
	sge->addr = (uintptr_t)local;
	sge->length = len;
	sge->lkey = lkey;
	memset(wr, 0, sizeof(*wr));
	wr->wr_id = wr_id;
	wr->sg_list = sge;
	wr->num_sge = 1;
	wr->opcode = op;
	wr->send_flags = IBV_SEND_SIGNALED;
	wr->wr.atomic.remote_addr = raddr;
	wr->wr.atomic.rkey = rkey;
	wr->wr.atomic.compare_add = compare_add;
	wr->wr.atomic.swap = swap;
}

/* A WR on @e's buffers: result at la + @loff, target rb + @roff. */
static void env_atomic_wr(struct at_env *e, struct ibv_send_wr *wr,
			  struct ibv_sge *sge, uint64_t wr_id,
			  enum ibv_wr_opcode op, size_t loff, size_t roff,
			  uint64_t compare_add, uint64_t swap)
{
	atomic_wr(wr, sge, wr_id, op, e->la.p + loff, 8, e->la.mr->lkey,
		  (uintptr_t)e->rb.p + roff, e->rb.mr->rkey, compare_add,
		  swap);
}

/* A 64-bit value of stream @seed, with carries in every byte likely. */
static uint64_t pat64(uint32_t seed, size_t i)
{
	uint64_t v = 0;
	int b;

	for (b = 0; b < 8; b++)
		v = v << 8 | rc_pat(seed, i * 8 + b);
	return v;
}

static void check_success(struct __test_metadata *_metadata,
			  const struct ibv_wc *wc, uint64_t wr_id,
			  enum ibv_wc_opcode opcode, uint32_t qp_num,
			  const char *what)
{
	rc_wc_check(_metadata, wc, &(struct rc_wc_exp){
		.wr_id = wr_id, .status = IBV_WC_SUCCESS, .opcode = opcode,
		.qp_num = qp_num,
	}, what);
	if (opcode != IBV_WC_RDMA_READ && wc->status == IBV_WC_SUCCESS) {
		EXPECT_EQ(8, wc->byte_len) {
			TH_LOG("%s: byte_len", what);
		}
	}
}

/*
 * One atomic on a word of B whose value is @old: A's result slot gets @old,
 * the word becomes @want, and no other byte of either buffer changes.
 */
static void one_atomic(struct __test_metadata *_metadata, struct at_env *e,
		       enum ibv_wr_opcode op, size_t roff, uint64_t old,
		       uint64_t compare_add, uint64_t swap, uint64_t want,
		       uint32_t seed)
{
	const size_t loff = 8 * (seed % 64) + 256;
	struct ibv_send_wr wr, *bad = NULL;
	uint8_t *limg, *rimg;
	struct ibv_sge sge;
	struct ibv_wc wc;
	char what[96];

	snprintf(what, sizeof(what), "%s at +%zu: %#" PRIx64 " (%#" PRIx64
		 ", %#" PRIx64 ")", at_op_str(op), roff, old, compare_add,
		 swap);
	rc_fill(e->la.p, e->la.size, seed, 0);
	rc_fill(e->rb.p, e->rb.size, seed + 1, 0);
	wr64(e->rb.p + roff, old);
	limg = malloc(e->la.size);
	rimg = malloc(e->rb.size);
	ASSERT_NE(NULL, limg);
	ASSERT_NE(NULL, rimg);
	memcpy(limg, e->la.p, e->la.size);
	memcpy(rimg, e->rb.p, e->rb.size);
	wr64(limg + loff, old);
	wr64(rimg + roff, want);

	env_atomic_wr(e, &wr, &sge, 0xa70 + seed, op, loff, roff,
		      compare_add, swap);
	ASSERT_EQ(0, ibv_post_send(e->p.a.qp, &wr, &bad));
	ASSERT_EQ(1, rc_poll(e->p.a.scq, &wc, 1, RC_TIMEOUT_MS)) {
		TH_LOG("%s: no completion", what);
	}
	check_success(_metadata, &wc, 0xa70 + seed,
		      op == IBV_WR_ATOMIC_CMP_AND_SWP ? IBV_WC_COMP_SWAP :
		      IBV_WC_FETCH_ADD, e->p.a.qp->qp_num, what);
	EXPECT_EQ(old, rd64(e->la.p + loff)) {
		TH_LOG("%s: returned %#" PRIx64, what, rd64(e->la.p + loff));
	}
	EXPECT_EQ(want, rd64(e->rb.p + roff)) {
		TH_LOG("%s: left %#" PRIx64, what, rd64(e->rb.p + roff));
	}
	EXPECT_SAME_BYTES(e->la.p, limg, e->la.size, "requester memory");
	EXPECT_SAME_BYTES(e->rb.p, rimg, e->rb.size, "responder memory");
	free(limg);
	free(rimg);
}

/* A new pair on the same devices does a CAS and an FAA right. */
static void fresh_pair_works(struct __test_metadata *_metadata,
			     FIXTURE_DATA(atomic) *self)
{
	struct at_env e;

	env_create(_metadata, &e, self->da, self->db, NULL);
	one_atomic(_metadata, &e, IBV_WR_ATOMIC_CMP_AND_SWP, 8, 5, 5, 6, 6,
		   31);
	one_atomic(_metadata, &e, IBV_WR_ATOMIC_FETCH_AND_ADD, 16, 7, 3, 0,
		   10, 32);
	env_destroy(&e);
}

/* ---- device and QP attributes ------------------------------------------ */

TEST_F(atomic, attributes)
{
	struct ibv_device_attr *a = &self->da->attr;
	struct rc_opts o = { 0 };
	struct ibv_qp_init_attr ia;
	struct ibv_qp_attr qa;

	EXPECT_EQ(IBV_ATOMIC_HCA, a->atomic_cap);
	EXPECT_LE(1, a->max_qp_rd_atom);
	EXPECT_LE(1, a->max_qp_init_rd_atom);
	EXPECT_LE(a->max_qp_rd_atom, a->max_res_rd_atom);
	TH_LOG("atomic_cap %d, max_qp_rd_atom %d, max_qp_init_rd_atom %d, "
	       "max_res_rd_atom %d", a->atomic_cap, a->max_qp_rd_atom,
	       a->max_qp_init_rd_atom, a->max_res_rd_atom);

	/* The limits are what modify_qp accepts, and query_qp reports. */
	env_create_rd_atomic(_metadata, self, &self->e, &o,
			     a->max_qp_init_rd_atom, a->max_qp_rd_atom);
	ASSERT_EQ(0, ibv_query_qp(self->e.p.a.qp, &qa, IBV_QP_MAX_QP_RD_ATOMIC |
				  IBV_QP_MAX_DEST_RD_ATOMIC, &ia));
	EXPECT_EQ(a->max_qp_init_rd_atom, qa.max_rd_atomic);
	EXPECT_EQ(a->max_qp_rd_atom, qa.max_dest_rd_atomic);
	memset(&qa, 0, sizeof(qa));
	qa.qp_state = IBV_QPS_RESET;
	ASSERT_EQ(0, ibv_modify_qp(self->e.p.b.qp, &qa, IBV_QP_STATE));
	ASSERT_EQ(0, rc_to_init(&self->e.p.b, AT_QP_ACCESS));
	rc_rtr_attr(&qa, &self->e.p.b, self->e.p.a.qp->qp_num,
		    &self->da->gid, 0);
	qa.max_dest_rd_atomic = a->max_qp_rd_atom + 1;
	if (!ibv_modify_qp(self->e.p.b.qp, &qa, RC_RTR_MASK) && rc_cfg.is_rxe) {
		RC_QUIRK("max_dest_rd_atomic beyond max_qp_rd_atom accepted");
	} else {
		EXPECT_EQ(IBV_QPS_INIT, rc_qp_state(self->e.p.b.qp));
	}
}

/* ---- results ------------------------------------------------------------ */

TEST_F(atomic, cas_success)
{
	env_create(_metadata, &self->e, self->da, self->db, NULL);
	one_atomic(_metadata, &self->e, IBV_WR_ATOMIC_CMP_AND_SWP, 0,
		   0x0123456789abcdefULL, 0x0123456789abcdefULL,
		   0xfedcba9876543210ULL, 0xfedcba9876543210ULL, 1);
	/* The last word of the MR, a high bit pattern, swap to 0. */
	one_atomic(_metadata, &self->e, IBV_WR_ATOMIC_CMP_AND_SWP,
		   AT_BUF - 8, ~0ULL, ~0ULL, 0, 0, 2);
	one_atomic(_metadata, &self->e, IBV_WR_ATOMIC_CMP_AND_SWP, 4096,
		   0, 0, 0x8000000000000001ULL, 0x8000000000000001ULL, 3);
}

TEST_F(atomic, cas_failure)
{
	env_create(_metadata, &self->e, self->da, self->db, NULL);
	/* Differs in the lowest bit, in the highest bit, everywhere. */
	one_atomic(_metadata, &self->e, IBV_WR_ATOMIC_CMP_AND_SWP, 8,
		   0x1111222233334444ULL, 0x1111222233334445ULL, 7,
		   0x1111222233334444ULL, 4);
	one_atomic(_metadata, &self->e, IBV_WR_ATOMIC_CMP_AND_SWP, 16,
		   0x1111222233334444ULL, 0x9111222233334444ULL, 7,
		   0x1111222233334444ULL, 5);
	one_atomic(_metadata, &self->e, IBV_WR_ATOMIC_CMP_AND_SWP, 24,
		   0, ~0ULL, 7, 0, 6);
}

TEST_F(atomic, faa_wrap)
{
	env_create(_metadata, &self->e, self->da, self->db, NULL);
	/* Carries through all 64 bits, and out of them (modulo 2^64). */
	one_atomic(_metadata, &self->e, IBV_WR_ATOMIC_FETCH_AND_ADD, 0,
		   0xfffffffffffffff0ULL, 0x20, 0, 0x10, 7);
	one_atomic(_metadata, &self->e, IBV_WR_ATOMIC_FETCH_AND_ADD, 8,
		   0x00000000ffffffffULL, 1, 0, 0x0000000100000000ULL, 8);
	one_atomic(_metadata, &self->e, IBV_WR_ATOMIC_FETCH_AND_ADD, 16,
		   5, ~0ULL, 0, 4, 9);	/* adding -1 */
	one_atomic(_metadata, &self->e, IBV_WR_ATOMIC_FETCH_AND_ADD, 24,
		   0x8000000000000000ULL, 0x8000000000000000ULL, 0, 0, 10);
	/* Adding 0 is a plain atomic read. */
	one_atomic(_metadata, &self->e, IBV_WR_ATOMIC_FETCH_AND_ADD, 32,
		   0x0123456789abcdefULL, 0, 0, 0x0123456789abcdefULL, 11);
	/* FAA ignores the swap operand. */
	one_atomic(_metadata, &self->e, IBV_WR_ATOMIC_FETCH_AND_ADD, 40,
		   100, 23, 0xdeadbeef, 123, 12);
}

/* ---- many in flight ----------------------------------------------------- */

/*
 * @n operations on one word of B from one QP, posted at once: FAAs of
 * random 64-bit values, CASs that succeed and that fail, and 8-byte READs
 * of the word. A QP executes its requests in order, so every result is
 * known exactly: each goes to its own slot of A's buffer.
 */
static void mixed_in_flight(struct __test_metadata *_metadata,
			    struct at_env *e, int n, uint32_t seed)
{
	const size_t roff = 1024;
	struct ibv_send_wr *wr, *bad = NULL;
	struct ibv_sge *sge;
	struct ibv_wc *wc;
	uint64_t *want, v = pat64(seed, 9999);
	int i, got;

	wr = calloc(n, sizeof(*wr));
	sge = calloc(n, sizeof(*sge));
	wc = calloc(n, sizeof(*wc));
	want = calloc(n, sizeof(*want));
	ASSERT_TRUE(wr && sge && wc && want);
	memset(e->la.p, 0xee, e->la.size);
	wr64(e->rb.p + roff, v);
	for (i = 0; i < n; i++) {
		uint64_t x = pat64(seed, i);

		want[i] = v;
		switch (i % 5) {
		case 0:
		case 1:
			env_atomic_wr(e, &wr[i], &sge[i], i,
				      IBV_WR_ATOMIC_FETCH_AND_ADD, 8 * i, roff,
				      x, 0);
			v += x;
			break;
		case 2:
			env_atomic_wr(e, &wr[i], &sge[i], i,
				      IBV_WR_ATOMIC_CMP_AND_SWP, 8 * i, roff,
				      v, x);
			v = x;
			break;
		case 3:
			env_atomic_wr(e, &wr[i], &sge[i], i,
				      IBV_WR_ATOMIC_CMP_AND_SWP, 8 * i, roff,
				      v ^ (1ULL << (i % 64)), x);
			break;
		default:
			env_atomic_wr(e, &wr[i], &sge[i], i,
				      IBV_WR_RDMA_READ, 8 * i, roff, 0, 0);
			wr[i].wr.rdma.remote_addr =
				(uintptr_t)e->rb.p + roff;
			wr[i].wr.rdma.rkey = e->rb.mr->rkey;
			break;
		}
		wr[i].next = i + 1 < n ? &wr[i + 1] : NULL;
	}
	ASSERT_EQ(0, ibv_post_send(e->p.a.qp, wr, &bad));
	got = rc_poll(e->p.a.scq, wc, n, 6 * RC_TIMEOUT_MS);
	ASSERT_EQ(n, got);
	for (i = 0; i < n; i++) {
		enum ibv_wr_opcode op = wr[i].opcode;
		char what[64];

		snprintf(what, sizeof(what), "op %d of %d (%s)", i, n,
			 at_op_str(op));
		check_success(_metadata, &wc[i], i,
			      op == IBV_WR_RDMA_READ ? IBV_WC_RDMA_READ :
			      op == IBV_WR_ATOMIC_CMP_AND_SWP ?
			      IBV_WC_COMP_SWAP : IBV_WC_FETCH_ADD,
			      e->p.a.qp->qp_num, what);
		EXPECT_EQ(want[i], rd64(e->la.p + 8 * i)) {
			TH_LOG("%s: returned %#" PRIx64 ", expected %#" PRIx64,
			       what, rd64(e->la.p + 8 * i), want[i]);
		}
	}
	EXPECT_EQ(v, rd64(e->rb.p + roff));
	free(wr);
	free(sge);
	free(wc);
	free(want);
}

/* More than max_rd_atomic (16 here) outstanding: the rest wait their turn. */
TEST_F_TIMEOUT(atomic, many_in_flight, 120)
{
	struct rc_opts o = {
		.access = AT_QP_ACCESS, .max_send_wr = 256, .send_cqe = 256,
	};

	env_create(_metadata, &self->e, self->da, self->db, &o);
	mixed_in_flight(_metadata, &self->e, 256, 40);
}

/* max_rd_atomic 1: one READ or ATOMIC at a time, still all of them. */
TEST_F_TIMEOUT(atomic, one_rd_atomic, 120)
{
	struct rc_opts o = { .max_send_wr = 128, .send_cqe = 128 };

	env_create_rd_atomic(_metadata, self, &self->e, &o, 1, 1);
	mixed_in_flight(_metadata, &self->e, 128, 41);
}

/*
 * Two QPs add to the same word of B at the same time: A1's FAAs add 1,
 * A2's add 2^32, posted together. With two devices the two responders are
 * on different devices (A1 on dev0 -> B1 on dev1, A2 on dev1 -> B2 on
 * dev0), each through its own MR over the same memory. The word ends up
 * exactly n + n * 2^32, and the k-th result of A1 (A2) has k in its low
 * (high) half: no add was lost, none applied twice.
 */
TEST_F_TIMEOUT(atomic, two_qps_same_word, 120)
{
	const int n = 200;
	struct rc_opts o = {
		.access = AT_QP_ACCESS, .max_send_wr = 256, .send_cqe = 256,
	};
	struct at_env *e1 = &self->e, *e2 = &self->e2;
	struct ibv_send_wr *wr[2], *bad = NULL;
	struct ibv_sge *sge[2];
	struct ibv_wc *wc;
	struct ibv_mr *mr2 = NULL;
	uint32_t rkey2;
	int i, k, got[2] = { 0, 0 };
	double deadline;

	env_create(_metadata, e1, self->da, self->db, &o);
	/* The second pair in the other direction, to the same memory. */
	env_create(_metadata, e2, self->db, self->da, &o);
	if (self->two) {
		mr2 = ibv_reg_mr(self->da->pd, e1->rb.p, e1->rb.size,
				 AT_MR_ACCESS);
		ASSERT_NE(NULL, mr2);
		rkey2 = mr2->rkey;
	} else {
		rkey2 = e1->rb.mr->rkey;
	}
	wr64(e1->rb.p, 0);
	wc = calloc(2 * n, sizeof(*wc));
	ASSERT_NE(NULL, wc);
	for (k = 0; k < 2; k++) {
		struct at_env *e = k ? e2 : e1;

		wr[k] = calloc(n, sizeof(*wr[k]));
		sge[k] = calloc(n, sizeof(*sge[k]));
		ASSERT_TRUE(wr[k] && sge[k]);
		memset(e->la.p, 0xee, 8 * n);
		for (i = 0; i < n; i++) {
			atomic_wr(&wr[k][i], &sge[k][i], i,
				  IBV_WR_ATOMIC_FETCH_AND_ADD,
				  e->la.p + 8 * i, 8, e->la.mr->lkey,
				  (uintptr_t)e1->rb.p,
				  k ? rkey2 : e1->rb.mr->rkey,
				  k ? 1ULL << 32 : 1, 0);
			wr[k][i].next = i + 1 < n ? &wr[k][i + 1] : NULL;
		}
	}
	ASSERT_EQ(0, ibv_post_send(e1->p.a.qp, wr[0], &bad));
	ASSERT_EQ(0, ibv_post_send(e2->p.a.qp, wr[1], &bad));

	deadline = rc_now_ms() + 6.0 * RC_TIMEOUT_MS * rc_cfg.slow;
	while ((got[0] < n || got[1] < n) && rc_now_ms() < deadline) {
		for (k = 0; k < 2; k++) {
			struct at_env *e = k ? e2 : e1;
			int r = ibv_poll_cq(e->p.a.scq, n - got[k],
					    wc + k * n + got[k]);

			ASSERT_LE(0, r);
			got[k] += r;
		}
		usleep(100);
	}
	ASSERT_EQ(n, got[0]);
	ASSERT_EQ(n, got[1]);
	for (k = 0; k < 2; k++) {
		struct at_env *e = k ? e2 : e1;

		for (i = 0; i < n; i++) {
			uint64_t r = rd64(e->la.p + 8 * i);

			check_success(_metadata, &wc[k * n + i], i,
				      IBV_WC_FETCH_ADD, e->p.a.qp->qp_num,
				      "concurrent FAA");
			EXPECT_EQ((uint64_t)i,
				  k ? r >> 32 : r & 0xffffffffULL) {
				TH_LOG("QP %d, FAA %d returned %#" PRIx64,
				       k + 1, i, r);
			}
		}
	}
	EXPECT_EQ((uint64_t)n + ((uint64_t)n << 32), rd64(e1->rb.p));
	if (mr2) {
		EXPECT_EQ(0, ibv_dereg_mr(mr2));
	}
	for (k = 0; k < 2; k++) {
		free(wr[k]);
		free(sge[k]);
	}
	free(wc);
}

/* ---- errors --------------------------------------------------------------- */

/*
 * A's atomic @wr fails at B: A gets @status, the WR after it is flushed,
 * both QPs go to the error state, B's posted receive is flushed, and
 * neither B's memory nor A's result slot changes.
 */
static void expect_remote_error(struct __test_metadata *_metadata,
				FIXTURE_DATA(atomic) *self,
				struct ibv_send_wr *wr,
				enum ibv_wc_status status, const char *what)
{
	struct at_env *e = &self->e;
	struct ibv_send_wr next, *bad = NULL;
	struct ibv_sge sge = {
		.addr = (uintptr_t)e->la.p + 4096, .length = 8,
		.lkey = e->la.mr->lkey,
	};
	uint8_t *limg, *rimg;
	struct ibv_wc wc;
	int ret;

	rc_fill(e->la.p, e->la.size, 0xa1, 0);
	rc_fill(e->rb.p, e->rb.size, 0xa2, 0);
	limg = malloc(e->la.size);
	rimg = malloc(e->rb.size);
	ASSERT_NE(NULL, limg);
	ASSERT_NE(NULL, rimg);
	memcpy(limg, e->la.p, e->la.size);
	memcpy(rimg, e->rb.p, e->rb.size);

	ASSERT_EQ(0, rc_post_recv(&e->p.b, 0x77, &e->rb, 8192, 64));
	rc_chain_send(wr, &next, &sge);
	ret = ibv_post_send(e->p.a.qp, wr, &bad);
	if (ret == EINVAL && rc_cfg.is_rxe) {
		RC_QUIRK("%s: refused by ibv_post_send", what);
		goto out;
	}
	ASSERT_EQ(0, ret);

	rc_expect_failed_flushed(_metadata, &e->p.a, wr->wr_id, status, what);
	ASSERT_EQ(1, rc_poll(e->p.b.rcq, &wc, 1, RC_TIMEOUT_MS)) {
		TH_LOG("the responder's receive was not flushed");
	}
	rc_wc_check(_metadata, &wc, &(struct rc_wc_exp){
		.wr_id = 0x77, .status = IBV_WC_WR_FLUSH_ERR,
		.qp_num = e->p.b.qp->qp_num,
	}, "responder's receive");
	EXPECT_EQ(IBV_QPS_ERR, rc_qp_state(e->p.b.qp));
	EXPECT_SAME_BYTES(e->rb.p, rimg, e->rb.size, "responder memory");
	EXPECT_SAME_BYTES(e->la.p, limg, e->la.size, "requester memory");
out:
	free(limg);
	free(rimg);
	fresh_pair_works(_metadata, self);
}

/* An atomic of @op at B's rb + @roff with @rkey fails with @status. */
static void remote_error_case(struct __test_metadata *_metadata,
			      FIXTURE_DATA(atomic) *self,
			      enum ibv_wr_opcode op, uint64_t raddr,
			      uint32_t rkey, enum ibv_wc_status status,
			      const char *what)
{
	struct at_env *e = &self->e;
	struct ibv_send_wr wr;
	struct ibv_sge sge;

	atomic_wr(&wr, &sge, 0x1, op, e->la.p + 64, 8, e->la.mr->lkey, raddr,
		  rkey, 1, 2);
	expect_remote_error(_metadata, self, &wr, status, what);
}

/* IBA 9.4.5: an atomic's address must be 8-byte aligned: Invalid Request. */
TEST_F(atomic, misaligned)
{
	env_create(_metadata, &self->e, self->da, self->db, NULL);
	remote_error_case(_metadata, self, IBV_WR_ATOMIC_FETCH_AND_ADD,
			  (uintptr_t)self->e.rb.p + 4, self->e.rb.mr->rkey,
			  IBV_WC_REM_INV_REQ_ERR, "FAA at +4");
}

TEST_F(atomic, misaligned_cas)
{
	env_create(_metadata, &self->e, self->da, self->db, NULL);
	remote_error_case(_metadata, self, IBV_WR_ATOMIC_CMP_AND_SWP,
			  (uintptr_t)self->e.rb.p + 4097,
			  self->e.rb.mr->rkey, IBV_WC_REM_INV_REQ_ERR,
			  "CAS at +4097");
}

/* An MR of B without REMOTE_ATOMIC (but every other right). */
TEST_F(atomic, mr_no_remote_atomic)
{
	struct ibv_mr *mr;

	env_create(_metadata, &self->e, self->da, self->db, NULL);
	mr = ibv_reg_mr(self->db->pd, self->e.rb.p, self->e.rb.size,
			RC_ACCESS_ALL);
	ASSERT_NE(NULL, mr);
	remote_error_case(_metadata, self, IBV_WR_ATOMIC_FETCH_AND_ADD,
			  (uintptr_t)self->e.rb.p + 64, mr->rkey,
			  IBV_WC_REM_ACCESS_ERR, "FAA on an MR without atomics");
	EXPECT_EQ(0, ibv_dereg_mr(mr));
}

/*
 * B's QP without REMOTE_ATOMIC: an operation the QP does not support,
 * Invalid Request (IBA class C responder error).
 */
TEST_F(atomic, qp_no_remote_atomic)
{
	struct rc_opts o = {
		.access = IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ,
	};

	env_create(_metadata, &self->e, self->da, self->db, &o);
	remote_error_case(_metadata, self, IBV_WR_ATOMIC_CMP_AND_SWP,
			  (uintptr_t)self->e.rb.p + 64, self->e.rb.mr->rkey,
			  IBV_WC_REM_INV_REQ_ERR,
			  "CAS on a QP without atomics");
}

/* Just past the end, and just before the start of the MR. */
TEST_F(atomic, out_of_bounds_end)
{
	env_create(_metadata, &self->e, self->da, self->db, NULL);
	remote_error_case(_metadata, self, IBV_WR_ATOMIC_FETCH_AND_ADD,
			  (uintptr_t)self->e.rb.p + AT_BUF, self->e.rb.mr->rkey,
			  IBV_WC_REM_ACCESS_ERR, "FAA past the MR");
}

TEST_F(atomic, out_of_bounds_start)
{
	env_create(_metadata, &self->e, self->da, self->db, NULL);
	remote_error_case(_metadata, self, IBV_WR_ATOMIC_CMP_AND_SWP,
			  (uintptr_t)self->e.rb.p - 8, self->e.rb.mr->rkey,
			  IBV_WC_REM_ACCESS_ERR, "CAS before the MR");
}

TEST_F(atomic, bad_rkey)
{
	uint32_t k;

	env_create(_metadata, &self->e, self->da, self->db, NULL);
	k = self->e.rb.mr->rkey ^ 0x5a;
	while (k == self->e.la.mr->lkey)
		k ^= 0x100;
	remote_error_case(_metadata, self, IBV_WR_ATOMIC_FETCH_AND_ADD,
			  (uintptr_t)self->e.rb.p, k, IBV_WC_REM_ACCESS_ERR,
			  "FAA with a bad rkey");
}

/*
 * B has no responder resources (max_dest_rd_atomic 0): it cannot take a
 * single READ or ATOMIC: Invalid Request.
 */
TEST_F(atomic, no_responder_resources)
{
	struct rc_opts o = { 0 };

	env_create_rd_atomic(_metadata, self, &self->e, &o, 1, 0);
	remote_error_case(_metadata, self, IBV_WR_ATOMIC_FETCH_AND_ADD,
			  (uintptr_t)self->e.rb.p, self->e.rb.mr->rkey,
			  IBV_WC_REM_INV_REQ_ERR,
			  "FAA to a QP with max_dest_rd_atomic 0");
}

/*
 * The local result buffer is bad: a wrong lkey, an MR without LOCAL_WRITE,
 * or not 8 bytes. The WR fails locally; vrdma checks it before sending, so
 * the remote word is untouched.
 */
static void local_error_case(struct __test_metadata *_metadata,
			     FIXTURE_DATA(atomic) *self, void *local,
			     uint32_t len, uint32_t lkey,
			     enum ibv_wc_status status, const char *what)
{
	struct at_env *e = &self->e;
	struct ibv_send_wr wr, *bad = NULL;
	struct ibv_sge sge;
	struct ibv_wc wc;

	wr64(e->rb.p, 1000);
	atomic_wr(&wr, &sge, 0x5, IBV_WR_ATOMIC_FETCH_AND_ADD, local, len,
		  lkey, (uintptr_t)e->rb.p, e->rb.mr->rkey, 1, 0);
	ASSERT_EQ(0, ibv_post_send(e->p.a.qp, &wr, &bad));
	ASSERT_EQ(1, rc_poll(e->p.a.scq, &wc, 1, RC_TIMEOUT_MS));
	if (rc_cfg.is_rxe && wc.status != status) {
		RC_QUIRK("%s: %s", what, ibv_wc_status_str(wc.status));
		return;
	}
	rc_wc_check(_metadata, &wc, &(struct rc_wc_exp){
		.wr_id = 0x5, .status = status, .qp_num = e->p.a.qp->qp_num,
	}, what);
	EXPECT_EQ(IBV_QPS_ERR, rc_qp_state(e->p.a.qp));
	usleep(RC_QUIET_MS * 1000);
	if (rc_cfg.is_rxe && rd64(e->rb.p) != 1000) {
		RC_QUIRK("%s: executed the atomic anyway", what);
		return;
	}
	EXPECT_EQ(1000, rd64(e->rb.p));
}

TEST_F(atomic, bad_lkey)
{
	env_create(_metadata, &self->e, self->da, self->db, NULL);
	local_error_case(_metadata, self, self->e.la.p,
			 8, self->e.la.mr->lkey ^ 0x5a, IBV_WC_LOC_PROT_ERR,
			 "result buffer with a bad lkey");
	fresh_pair_works(_metadata, self);
}

TEST_F(atomic, local_read_only)
{
	struct ibv_mr *mr;

	env_create(_metadata, &self->e, self->da, self->db, NULL);
	mr = ibv_reg_mr(self->da->pd, self->e.la.p, self->e.la.size, 0);
	ASSERT_NE(NULL, mr);
	local_error_case(_metadata, self, self->e.la.p, 8, mr->lkey,
			 IBV_WC_LOC_PROT_ERR,
			 "result buffer without LOCAL_WRITE");
	EXPECT_EQ(0, ibv_dereg_mr(mr));
}

TEST_F(atomic, local_length)
{
	env_create(_metadata, &self->e, self->da, self->db, NULL);
	local_error_case(_metadata, self, self->e.la.p, 16,
			 self->e.la.mr->lkey, IBV_WC_LOC_LEN_ERR,
			 "16-byte result buffer");
}

/* ---- ATOMIC WRITE and FLUSH --------------------------------------------- */

/*
 * IB_ACCESS_FLUSH_GLOBAL: ib_core 6.2 on; rdma-core 44 names it not, nor
 * has it ibv_wr_flush().  The tests write their WQEs into vrdma's SQ ring
 * (uapi/rdma/vrdma-abi.h), as the provider's builders do, and ring.
 */
#define AT_FLUSH_GLOBAL	(1 << 8)

/* The provider's doorbell: POST_SEND without work requests. */
static int sq_doorbell(struct ibv_qp *qp)
{
	struct ibv_send_wr *bad;

	return ibv_cmd_post_send(qp, NULL, &bad);
}

/*
 * A WQE as the tests write it into the ring: the header, and room for two
 * SGEs, or for one and a masked atomic's masks in the second's place.
 */
union at_wqe {
	struct vrdma_send_wqe w;
	uint8_t bytes[VRDMA_SEND_WQE_HDR_SIZE + 2 * sizeof(struct vrdma_sge)];
};

/* Post @w into @qp's SQ ring and ring. */
static void ring_post(struct __test_metadata *_metadata, struct ibv_qp *qp,
		      const union at_wqe *w)
{
	struct vrdma_uring *r = &to_vqp(qp)->sq.ring;
	struct vrdma_send_wqe *slot = vrdma_uring_entry(r, r->head);

	ASSERT_LE(sizeof(*w), r->entry_size);
	memset(slot, 0, r->entry_size);
	memcpy(slot, w, sizeof(*w));
	r->head++;
	vrdma_uring_publish(r);
	ASSERT_EQ(0, sq_doorbell(qp));
}

static void atomic_write_wqe(union at_wqe *u, uint64_t wr_id,
			     void *raddr, uint32_t rkey, uint64_t value)
{
	struct vrdma_send_wqe *w = &u->w;

	memset(u, 0, sizeof(*u));
	w->wr_id = wr_id;
	w->opcode = VRDMA_WR_ATOMIC_WRITE;
	w->flags = VRDMA_SEND_SIGNALED;
	vrdma_wqe_set_atomic_write(w, (uintptr_t)raddr, rkey, &value);
}

static void flush_wqe(union at_wqe *u, uint64_t wr_id, void *raddr,
		      uint32_t rkey, uint32_t len, uint8_t type, uint8_t level)
{
	struct vrdma_send_wqe *w = &u->w;

	memset(u, 0, sizeof(*u));
	w->wr_id = wr_id;
	w->opcode = VRDMA_WR_FLUSH;
	w->flags = VRDMA_SEND_SIGNALED;
	vrdma_wqe_set_flush(w, (uintptr_t)raddr, rkey, len, type, level);
}

/*
 * A pair whose QPs also grant FLUSH and an MR over B's buffer that does,
 * where ib_core lets an MR have the right (6.2 on): NULL before.
 */
static struct ibv_mr *env_create_flush(struct __test_metadata *_metadata,
				       FIXTURE_DATA(atomic) *self,
				       struct at_env *e)
{
	struct rc_opts o = { .access = AT_QP_ACCESS };
	struct ibv_mr *mr;
	struct rc_buf probe;

	/* Which kernel: may an MR have the right? */
	memset(&probe, 0, sizeof(probe));
	probe.p = mmap(NULL, 4096, PROT_READ | PROT_WRITE,
		       MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	ASSERT_NE(MAP_FAILED, probe.p);
	mr = ibv_reg_mr(self->da->pd, probe.p, 4096,
			RC_ACCESS_ALL | AT_FLUSH_GLOBAL);
	if (mr) {
		ibv_dereg_mr(mr);
		o.access |= AT_FLUSH_GLOBAL;
	}
	munmap(probe.p, 4096);
	env_create(_metadata, e, self->da, self->db, &o);
	if (!(o.access & AT_FLUSH_GLOBAL))
		return NULL;
	mr = ibv_reg_mr(self->db->pd, e->rb.p, e->rb.size,
			AT_MR_ACCESS | AT_FLUSH_GLOBAL);
	EXPECT_NE(NULL, mr);
	return mr;
}

/* A's next completion: @wr_id with @status (and @opcode on success). */
static void expect_wc(struct __test_metadata *_metadata, struct at_env *e,
		      uint64_t wr_id, enum ibv_wc_status status, int opcode,
		      uint32_t byte_len, const char *what)
{
	struct ibv_wc wc;

	ASSERT_EQ(1, rc_poll(e->p.a.scq, &wc, 1, RC_TIMEOUT_MS)) {
		TH_LOG("%s: no completion", what);
	}
	rc_wc_check(_metadata, &wc, &(struct rc_wc_exp){
		.wr_id = wr_id, .status = status,
		.opcode = (enum ibv_wc_opcode)opcode,
		.qp_num = e->p.a.qp->qp_num,
	}, what);
	if (status == IBV_WC_SUCCESS)
		EXPECT_EQ(byte_len, wc.byte_len) {
			TH_LOG("%s: byte_len", what);
		}
}

/*
 * ATOMIC WRITE: the 8 bytes land at once, in memory order, and nothing
 * else changes; IBV_WC_ATOMIC_WRITE with 8 bytes.  24 in a row, more than
 * max_rd_atomic, to 4 words: in order, the last one to each word stays.
 * ibv_post_send() has no room for the value: EINVAL.
 */
TEST_F(atomic, atomic_write)
{
	struct at_env *e = &self->e;
	union at_wqe w;
	struct ibv_send_wr wr, *bad = NULL;
	struct ibv_sge sge;
	uint8_t *rimg;
	int i;

	if (rc_cfg.is_rxe)
		SKIP(return, "writes vrdma's SQ ring directly");
	env_create(_metadata, e, self->da, self->db, NULL);
	rc_fill(e->rb.p, e->rb.size, 0x61, 0);
	rimg = malloc(e->rb.size);
	ASSERT_NE(NULL, rimg);
	memcpy(rimg, e->rb.p, e->rb.size);
	for (i = 0; i < 24; i++) {
		uint64_t v = 0x0102030405060708ull * (i + 1);

		atomic_write_wqe(&w, 0xa0 + i, e->rb.p + 64 + 8 * (i % 4),
				 e->rb.mr->rkey, v);
		ring_post(_metadata, e->p.a.qp, &w);
		memcpy(rimg + 64 + 8 * (i % 4), &v, 8);
	}
	for (i = 0; i < 24; i++)
		expect_wc(_metadata, e, 0xa0 + i, IBV_WC_SUCCESS,
			  VRDMA_WC_ATOMIC_WRITE, 8, "ATOMIC WRITE");
	EXPECT_SAME_BYTES(e->rb.p, rimg, e->rb.size, "responder memory");
	free(rimg);

	env_atomic_wr(e, &wr, &sge, 0x15, IBV_WR_ATOMIC_WRITE, 0, 0, 0, 0);
	EXPECT_EQ(EINVAL, ibv_post_send(e->p.a.qp, &wr, &bad));
	EXPECT_EQ(IBV_QPS_RTS, rc_qp_state(e->p.a.qp));
}

/*
 * A placement request @w that fails: A gets @status, both QPs go to error
 * (for a remote error), no byte of B's buffer changes; then a new pair
 * works.
 */
static void placement_error(struct __test_metadata *_metadata,
			    FIXTURE_DATA(atomic) *self,
			    const union at_wqe *w,
			    enum ibv_wc_status status, const char *what)
{
	struct at_env *e = &self->e;
	uint8_t *rimg = malloc(e->rb.size);

	ASSERT_NE(NULL, rimg);
	rc_fill(e->rb.p, e->rb.size, 0x62, 0);
	memcpy(rimg, e->rb.p, e->rb.size);
	ring_post(_metadata, e->p.a.qp, w);
	expect_wc(_metadata, e, w->w.wr_id, status, 0, 0, what);
	if (status != IBV_WC_LOC_QP_OP_ERR) {
		usleep(RC_QUIET_MS * 1000);
		EXPECT_EQ(IBV_QPS_ERR, rc_qp_state(e->p.b.qp)) {
			TH_LOG("%s: responder QP state", what);
		}
	}
	EXPECT_SAME_BYTES(e->rb.p, rimg, e->rb.size, "responder memory");
	free(rimg);
	fresh_pair_works(_metadata, self);
}

TEST_F(atomic, atomic_write_misaligned)
{
	union at_wqe w;

	if (rc_cfg.is_rxe)
		SKIP(return, "writes vrdma's SQ ring directly");
	env_create(_metadata, &self->e, self->da, self->db, NULL);
	atomic_write_wqe(&w, 0xb1, self->e.rb.p + 68, self->e.rb.mr->rkey, 1);
	placement_error(_metadata, self, &w, IBV_WC_REM_INV_REQ_ERR,
			"ATOMIC WRITE at +68");
}

TEST_F(atomic, atomic_write_bad_rkey)
{
	union at_wqe w;

	if (rc_cfg.is_rxe)
		SKIP(return, "writes vrdma's SQ ring directly");
	env_create(_metadata, &self->e, self->da, self->db, NULL);
	atomic_write_wqe(&w, 0xb2, self->e.rb.p + 64,
			 self->e.rb.mr->rkey ^ 0x40, 1);
	placement_error(_metadata, self, &w, IBV_WC_REM_ACCESS_ERR,
			"ATOMIC WRITE, bad rkey");
}

/* REMOTE_ATOMIC is not REMOTE_WRITE: ATOMIC WRITE needs the latter. */
TEST_F(atomic, atomic_write_no_remote_write)
{
	union at_wqe w;
	struct ibv_mr *mr;

	if (rc_cfg.is_rxe)
		SKIP(return, "writes vrdma's SQ ring directly");
	env_create(_metadata, &self->e, self->da, self->db, NULL);
	mr = ibv_reg_mr(self->db->pd, self->e.rb.p, self->e.rb.size,
			IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_READ |
			IBV_ACCESS_REMOTE_ATOMIC);
	ASSERT_NE(NULL, mr);
	atomic_write_wqe(&w, 0xb3, self->e.rb.p + 64, mr->rkey, 1);
	placement_error(_metadata, self, &w, IBV_WC_REM_ACCESS_ERR,
			"ATOMIC WRITE, no REMOTE_WRITE");
	ibv_dereg_mr(mr);
}

/* A WQE with SGEs, or with inline data: a local error, nothing sent. */
TEST_F(atomic, atomic_write_with_sge)
{
	union at_wqe w;

	if (rc_cfg.is_rxe)
		SKIP(return, "writes vrdma's SQ ring directly");
	env_create(_metadata, &self->e, self->da, self->db, NULL);
	atomic_write_wqe(&w, 0xb4, self->e.rb.p + 64, self->e.rb.mr->rkey, 1);
	w.w.num_sge = 1;
	placement_error(_metadata, self, &w, IBV_WC_LOC_QP_OP_ERR,
			"ATOMIC WRITE with an SGE");
}

/*
 * FLUSH of a range and of the whole MR: IBV_WC_FLUSH, behind an RDMA
 * WRITE whose data is there when it completes.  Without the FLUSH rights
 * (ib_core 6.1: none can be had) the QP refuses it: Invalid Request.
 */
TEST_F(atomic, flush)
{
	struct at_env *e = &self->e;
	struct ibv_send_wr wr, *bad = NULL;
	union at_wqe w;
	struct ibv_mr *fmr;
	struct ibv_sge sge;

	if (rc_cfg.is_rxe)
		SKIP(return, "writes vrdma's SQ ring directly");
	fmr = env_create_flush(_metadata, self, e);
	if (!fmr) {
		flush_wqe(&w, 0xc0, e->rb.p, e->rb.mr->rkey, 4096,
			  VRDMA_FLUSH_GLOBAL, VRDMA_FLUSH_RANGE);
		placement_error(_metadata, self, &w, IBV_WC_REM_INV_REQ_ERR,
				"FLUSH without FLUSH rights (ib_core 6.1)");
		return;
	}
	rc_fill(e->la.p, 4096, 0x63, 0);
	sge = (struct ibv_sge){ .addr = (uintptr_t)e->la.p, .length = 4096,
				.lkey = e->la.mr->lkey };
	wr = (struct ibv_send_wr){ .wr_id = 0xc1, .opcode = IBV_WR_RDMA_WRITE,
				   .sg_list = &sge, .num_sge = 1 };
	wr.wr.rdma.remote_addr = (uintptr_t)e->rb.p;
	wr.wr.rdma.rkey = e->rb.mr->rkey;
	ASSERT_EQ(0, ibv_post_send(e->p.a.qp, &wr, &bad));
	flush_wqe(&w, 0xc2, e->rb.p, fmr->rkey, 4096, VRDMA_FLUSH_GLOBAL,
		  VRDMA_FLUSH_RANGE);
	ring_post(_metadata, e->p.a.qp, &w);
	expect_wc(_metadata, e, 0xc2, IBV_WC_SUCCESS, VRDMA_WC_FLUSH, 0,
		  "FLUSH of a range");
	EXPECT_SAME_BYTES(e->rb.p, e->la.p, 4096, "the data flushed");
	flush_wqe(&w, 0xc3, NULL, fmr->rkey, 0, VRDMA_FLUSH_GLOBAL,
		  VRDMA_FLUSH_MR);
	ring_post(_metadata, e->p.a.qp, &w);
	expect_wc(_metadata, e, 0xc3, IBV_WC_SUCCESS, VRDMA_WC_FLUSH, 0,
		  "FLUSH of the MR");
	ibv_dereg_mr(fmr);
}

/* The rkey must grant FLUSH (e->rb.mr does not); a bad one, nothing. */
TEST_F(atomic, flush_no_right)
{
	union at_wqe w;
	struct ibv_mr *fmr;

	if (rc_cfg.is_rxe)
		SKIP(return, "writes vrdma's SQ ring directly");
	fmr = env_create_flush(_metadata, self, &self->e);
	if (!fmr)
		SKIP(return, "no FLUSH rights on this kernel (ib_core 6.1)");
	ibv_dereg_mr(fmr);
	flush_wqe(&w, 0xc4, self->e.rb.p, self->e.rb.mr->rkey, 4096,
		  VRDMA_FLUSH_GLOBAL, VRDMA_FLUSH_RANGE);
	placement_error(_metadata, self, &w, IBV_WC_REM_ACCESS_ERR,
			"FLUSH, key without the FLUSH right");
}

TEST_F(atomic, flush_out_of_range)
{
	union at_wqe w;
	struct ibv_mr *fmr;

	if (rc_cfg.is_rxe)
		SKIP(return, "writes vrdma's SQ ring directly");
	fmr = env_create_flush(_metadata, self, &self->e);
	if (!fmr)
		SKIP(return, "no FLUSH rights on this kernel (ib_core 6.1)");
	flush_wqe(&w, 0xc5, self->e.rb.p + 4096, fmr->rkey, AT_BUF,
		  VRDMA_FLUSH_GLOBAL, VRDMA_FLUSH_RANGE);
	placement_error(_metadata, self, &w, IBV_WC_REM_ACCESS_ERR,
			"FLUSH past the MR");
	ibv_dereg_mr(fmr);
}

/* Persistence is asked of no vrdma QP or MR: Invalid Request. */
TEST_F(atomic, flush_persistent)
{
	union at_wqe w;
	struct ibv_mr *fmr;

	if (rc_cfg.is_rxe)
		SKIP(return, "writes vrdma's SQ ring directly");
	fmr = env_create_flush(_metadata, self, &self->e);
	if (!fmr)
		SKIP(return, "no FLUSH rights on this kernel (ib_core 6.1)");
	flush_wqe(&w, 0xc6, self->e.rb.p, fmr->rkey, 4096,
		  VRDMA_FLUSH_PERSISTENT, VRDMA_FLUSH_RANGE);
	placement_error(_metadata, self, &w, IBV_WC_REM_INV_REQ_ERR,
			"FLUSH for persistence");
	ibv_dereg_mr(fmr);
}

/* A WQE with no placement type, or an unknown level: a local error. */
TEST_F(atomic, flush_bad_wqe)
{
	union at_wqe w;

	if (rc_cfg.is_rxe)
		SKIP(return, "writes vrdma's SQ ring directly");
	env_create(_metadata, &self->e, self->da, self->db, NULL);
	flush_wqe(&w, 0xc7, self->e.rb.p, self->e.rb.mr->rkey, 4096, 0,
		  VRDMA_FLUSH_RANGE);
	placement_error(_metadata, self, &w, IBV_WC_LOC_QP_OP_ERR,
			"FLUSH of no placement type");
	env_destroy(&self->e);
	env_create(_metadata, &self->e, self->da, self->db, NULL);
	flush_wqe(&w, 0xc8, self->e.rb.p, self->e.rb.mr->rkey, 4096,
		  VRDMA_FLUSH_GLOBAL, 2);
	placement_error(_metadata, self, &w, IBV_WC_LOC_QP_OP_ERR,
			"FLUSH of selectivity level 2");
}

/* ---- masked atomics ------------------------------------------------------ */

/*
 * The masked atomics of kernel consumers (IB_WR_MASKED_ATOMIC_*), written
 * into the SQ ring: rdma-core has no verb for them.
 */
static void masked_wqe(union at_wqe *u, struct at_env *e, uint64_t wr_id,
		       int cas, size_t loff, size_t roff, uint64_t compare_add,
		       uint64_t swap, uint64_t compare_add_mask,
		       uint64_t swap_mask)
{
	struct vrdma_send_wqe *w = &u->w;

	memset(u, 0, sizeof(*u));
	w->wr_id = wr_id;
	w->flags = VRDMA_SEND_SIGNALED;
	vrdma_wqe_set_masked_atomic(w, cas, (uintptr_t)e->rb.p + roff,
				    e->rb.mr->rkey, compare_add, swap,
				    compare_add_mask, swap_mask);
	w->num_sge = 1;
	w->sge[0].addr = (uintptr_t)e->la.p + loff;
	w->sge[0].length = 8;
	w->sge[0].lkey = e->la.mr->lkey;
}

struct masked_case {
	int cas;
	uint64_t old, compare_add, swap, cmask, smask;
};

/*
 * Each case on the word at @roff: the original value comes back, the word
 * is what the model says, and no other byte changes on either side.
 */
static void masked_run(struct __test_metadata *_metadata, struct at_env *e,
		       const struct masked_case *c, int n, const char *what)
{
	uint8_t *limg = malloc(e->la.size), *rimg = malloc(e->rb.size);
	const size_t roff = 72;
	union at_wqe w;
	int i;

	ASSERT_NE(NULL, limg);
	ASSERT_NE(NULL, rimg);
	rc_fill(e->la.p, e->la.size, 0x63, 0);
	rc_fill(e->rb.p, e->rb.size, 0x64, 0);
	memcpy(limg, e->la.p, e->la.size);
	memcpy(rimg, e->rb.p, e->rb.size);
	for (i = 0; i < n; i++) {
		/* For fetch-and-add, compare_add is the addend. */
		uint64_t want = c[i].cas ?
			rc_masked_atomic(1, c[i].old, c[i].compare_add,
					 c[i].swap, c[i].cmask, c[i].smask) :
			rc_masked_atomic(0, c[i].old, 0, c[i].compare_add, 0,
					 c[i].cmask);
		size_t loff = 8 * (i % 64);

		wr64(e->rb.p + roff, c[i].old);
		masked_wqe(&w, e, 0xd00 + i, c[i].cas, loff, roff,
			   c[i].compare_add, c[i].swap, c[i].cmask,
			   c[i].smask);
		ring_post(_metadata, e->p.a.qp, &w);
		expect_wc(_metadata, e, 0xd00 + i, IBV_WC_SUCCESS,
			  c[i].cas ? IBV_WC_COMP_SWAP : IBV_WC_FETCH_ADD, 8,
			  what);
		EXPECT_EQ(c[i].old, rd64(e->la.p + loff)) {
			TH_LOG("%s %d: returned %#" PRIx64, what, i,
			       rd64(e->la.p + loff));
		}
		EXPECT_EQ(want, rd64(e->rb.p + roff)) {
			TH_LOG("%s %d: %#" PRIx64 " %s %#" PRIx64 " / %#"
			       PRIx64 " masks %#" PRIx64 " %#" PRIx64
			       " left %#" PRIx64 ", not %#" PRIx64, what, i,
			       c[i].old, c[i].cas ? "cas" : "add",
			       c[i].compare_add, c[i].swap, c[i].cmask,
			       c[i].smask, rd64(e->rb.p + roff), want);
		}
		memcpy(limg + loff, &c[i].old, 8);
		memcpy(rimg + roff, &want, 8);
	}
	EXPECT_SAME_BYTES(e->la.p, limg, e->la.size, "requester memory");
	EXPECT_SAME_BYTES(e->rb.p, rimg, e->rb.size, "responder memory");
	free(limg);
	free(rimg);
}

/*
 * Masked compare-and-swap: only the bits of the compare mask are
 * compared, only those of the swap mask swapped; all-ones masks are the
 * plain operation (sent as the IBA's COMPARE SWAP), zero masks always
 * "match" and change nothing.  Then random cases, half of them matching.
 */
TEST_F(atomic, masked_cas)
{
	struct masked_case c[96] = {
		/* the low 48 bits match, bits 16-31 are swapped */
		{ 1, 0x1122334455667788ull, 0xffff334455667788ull,
		  0xaaaaaaaaaaaaaaaaull, 0x0000ffffffffffffull,
		  0x00000000ffff0000ull },
		/* one compared bit differs: unchanged */
		{ 1, 0x1122334455667788ull, 0x1122334455667789ull,
		  0xaaaaaaaaaaaaaaaaull, 0x00000000000000ffull,
		  ~0ull },
		/* nothing compared, nothing swapped */
		{ 1, 0x0123456789abcdefull, 0, ~0ull, 0, 0 },
		/* the plain operation, matching and not */
		{ 1, 0x5555ull, 0x5555ull, 0x6666ull, ~0ull, ~0ull },
		{ 1, 0x5555ull, 0x5554ull, 0x6666ull, ~0ull, ~0ull },
		/* a swap mask beyond the compare mask */
		{ 1, 0xf0f0f0f0f0f0f0f0ull, 0x00000000000000f0ull,
		  0x0f0f0f0f0f0f0f0full, 0xffull, 0xffff0000ffff0000ull },
	};
	int i, n = 6;

	if (rc_cfg.is_rxe)
		SKIP(return, "writes vrdma's SQ ring directly");
	for (i = n; i < 96; i++) {
		uint64_t cmask = pat64(0x51, i) & pat64(0x52, i);

		c[i].cas = 1;
		c[i].old = pat64(0x53, i);
		c[i].compare_add = i % 2 ? c[i].old ^ (pat64(0x54, i) & ~cmask) :
					   pat64(0x55, i);
		c[i].swap = pat64(0x56, i);
		c[i].cmask = cmask;
		c[i].smask = pat64(0x57, i);
	}
	env_create(_metadata, &self->e, self->da, self->db, NULL);
	masked_run(_metadata, &self->e, c, 96, "masked CAS");
}

/*
 * Masked fetch-and-add: the word split into fields at the mask's bits,
 * each field added on its own, its carry out dropped (16-bit and 8-bit
 * fields overflowing, every bit a field of its own); a mask of 0 is the
 * plain operation (sent as the IBA's FETCH ADD), wrapping at 2^64.  Then
 * random cases.
 */
TEST_F(atomic, masked_faa)
{
	struct masked_case c[96] = {
		{ 0, 0xffff0001fffe7fffull, 0x0001000100030001ull, 0,
		  0x8000800080008000ull, 0 },
		{ 0, 0xff7f80fe01ff00ffull, 0x0181800201010101ull, 0,
		  0x8080808080808080ull, 0 },
		{ 0, 0x0123456789abcdefull, 0xfedcba9876543210ull, 0, ~0ull,
		  0 },
		{ 0, 0xfffffffffffffff0ull, 0x20ull, 0, 0, 0 },
		/* a swap mask is no business of fetch-and-add */
		{ 0, 0x10ull, 0x1ull, 0, 0x1ull, ~0ull },
	};
	int i, n = 5;

	if (rc_cfg.is_rxe)
		SKIP(return, "writes vrdma's SQ ring directly");
	for (i = n; i < 96; i++) {
		c[i].old = pat64(0x61, i);
		c[i].compare_add = pat64(0x62, i);
		c[i].cmask = pat64(0x63, i) & pat64(0x64, i) & pat64(0x65, i);
	}
	env_create(_metadata, &self->e, self->da, self->db, NULL);
	masked_run(_metadata, &self->e, c, 96, "masked FAA");
}

/*
 * A masked atomic's WQE must have its one SGE (the masks take the second's
 * place): none, or two, is a local QP operation error; the responder
 * checks it as an atomic (misaligned: invalid request; an rkey without
 * REMOTE_ATOMIC: remote access error).  No byte changes.
 */
TEST_F(atomic, masked_errors)
{
	static const struct {
		int cas, num_sge;
		size_t roff;
		int no_atomic;
		enum ibv_wc_status status;
		const char *what;
	} c[] = {
		{ 1, 0, 64, 0, IBV_WC_LOC_QP_OP_ERR,
		  "masked CAS without an SGE" },
		{ 0, 2, 64, 0, IBV_WC_LOC_QP_OP_ERR,
		  "masked FAA with two SGEs" },
		{ 1, 1, 68, 0, IBV_WC_REM_INV_REQ_ERR, "masked CAS at +68" },
		{ 0, 1, 64, 1, IBV_WC_REM_ACCESS_ERR,
		  "masked FAA without REMOTE_ATOMIC" },
	};
	struct at_env *e = &self->e;
	unsigned int i;

	if (rc_cfg.is_rxe)
		SKIP(return, "writes vrdma's SQ ring directly");
	for (i = 0; i < sizeof(c) / sizeof(c[0]); i++) {
		struct ibv_mr *mr = NULL;
		union at_wqe w;

		env_create(_metadata, e, self->da, self->db, NULL);
		masked_wqe(&w, e, 0xd80 + i, c[i].cas, 0, c[i].roff, 1, 1, 1,
			   1);
		w.w.num_sge = c[i].num_sge;
		if (c[i].no_atomic) {
			mr = ibv_reg_mr(self->db->pd, e->rb.p, e->rb.size,
					RC_ACCESS_ALL);
			ASSERT_NE(NULL, mr);
			w.w.atomic.rkey = mr->rkey;
		}
		placement_error(_metadata, self, &w, c[i].status, c[i].what);
		if (mr)
			ibv_dereg_mr(mr);
		env_destroy(e);
	}
}

/* ---- replay: lost answers, duplicates answered from the cache ------------ */

/*
 * Packets between two devices of one network namespace are delivered inside
 * the driver, so nothing on the veth can lose them. The replay tests have
 * their own veth pair with one end in a namespace of its own, a device on
 * each end, and netem dropping some of the responder's packets on their way
 * out of that namespace.
 */
#define RP_NS		"vrdma_atns"
#define RP_NETDEV0	"rca0"
#define RP_NETDEV1	"rca1"
#define RP_IP0		"10.214.0.1"
#define RP_IP1		"10.214.0.2"
#define RP_DEV0		"vrdmaat0"
#define RP_DEV1		"vrdmaat1"

FIXTURE(replay) {
	struct rc_dev d0, d1;
	struct at_env e;
	int set_up;
};

static void replay_cleanup(void)
{
	rc_sh("{ rdma link delete " RP_DEV0 "; rdma link delete " RP_DEV1 "\n"
	      "ip netns del " RP_NS "; ip link del " RP_NETDEV0 "\n"
	      "} >/dev/null 2>&1");
}

/* Open device @name like rc_dev_open(), with its IPv4 RoCE v2 GID. */
static void replay_dev_open(struct __test_metadata *_metadata,
			    struct rc_dev *d, const char *name)
{
	double deadline = rc_now_ms() + RC_TIMEOUT_MS;

	memset(d, 0, sizeof(*d));
	while ((d->gid_idx = rc_find_gid(name)) < 0) {
		ASSERT_LT(rc_now_ms(), deadline) {
			TH_LOG("%s has no IPv4 RoCE v2 GID", name);
		}
		usleep(100 * 1000);
	}
	d->ctx = rc_open_by_name(name);
	ASSERT_NE(NULL, d->ctx);
	d->owned = 1;
	ASSERT_EQ(0, ibv_query_device(d->ctx, &d->attr));
	ASSERT_EQ(0, ibv_query_port(d->ctx, RC_PORT, &d->port));
	ASSERT_EQ(0, ibv_query_gid(d->ctx, RC_PORT, d->gid_idx, &d->gid));
	d->pd = ibv_alloc_pd(d->ctx);
	ASSERT_NE(NULL, d->pd);
}

FIXTURE_SETUP(replay)
{
	if (rc_cfg.is_rxe)
		SKIP(return, "rdma_rxe (Linux 6.1) receives RoCEv2 in the "
		     "initial network namespace only");
	replay_cleanup();
	self->set_up = 1;
	ASSERT_EQ(0, rc_sh("ip -batch - <<EOF\n"
			   "netns add " RP_NS "\n"
			   "link add " RP_NETDEV0 " type veth peer name "
			   RP_NETDEV1 " netns " RP_NS "\n"
			   "addr add " RP_IP0 "/24 dev " RP_NETDEV0 "\n"
			   "link set " RP_NETDEV0 " up\n"
			   "EOF\n"
			   "ip -n " RP_NS " -batch - <<EOF\n"
			   "addr add " RP_IP1 "/24 dev " RP_NETDEV1 "\n"
			   "link set " RP_NETDEV1 " up\n"
			   "link set lo up\n"
			   "EOF\n"
			   "rdma link add " RP_DEV0 " type vrdma netdev "
			   RP_NETDEV0 " &&\n"
			   "ip netns exec " RP_NS " rdma link add " RP_DEV1
			   " type vrdma netdev " RP_NETDEV1)) {
		TH_LOG("setting up a veth pair across namespaces failed");
	}
	replay_dev_open(_metadata, &self->d0, RP_DEV0);
	replay_dev_open(_metadata, &self->d1, RP_DEV1);
}

FIXTURE_TEARDOWN(replay)
{
	env_destroy(&self->e);
	rc_dev_close(&self->d1);
	rc_dev_close(&self->d0);
	if (self->set_up)
		replay_cleanup();
}

/*
 * Lose @percent % of what B sends, at random: netem on the egress of B's
 * veth end. B only answers (READ responses, ATOMIC ACKNOWLEDGEs), so only
 * answers are lost, and the requests all arrive.
 */
static void drop_responses(struct __test_metadata *_metadata, int percent)
{
	char cmd[256];

	snprintf(cmd, sizeof(cmd), "ip netns exec " RP_NS " tc qdisc add dev "
		 RP_NETDEV1 " root netem loss %d%%", percent);
	ASSERT_EQ(0, rc_sh(cmd)) {
		TH_LOG("tc netem failed");
	}
}

/*
 * A stream of FAAs, CASs and READs over a link that loses a fifth of B's
 * answers, with @depth READs/ATOMICs outstanding at most: every answer
 * must still be exact and every atomic applied exactly once. A lost ATOMIC
 * ACKNOWLEDGE makes A resend the ATOMIC; B must answer it from its replay
 * cache (counted in atomic_replayed), never execute it again. Lost READ
 * responses make A ask again; B executes the READ again.
 */
static void replay_case(struct __test_metadata *_metadata,
			FIXTURE_DATA(replay) *self, int depth)
{
	const int n = 96, rlen = 3000;
	const size_t roff = 0, doff = 4096, loff = 16384;
	struct rc_opts o = {
		.access = AT_QP_ACCESS, .max_send_wr = 128, .send_cqe = 128,
		.timeout = rc_slow_timeout(14), .retry_cnt = 7,
	};
	struct at_env *e = &self->e;
	struct rc_qp *q[2] = { &e->p.a, &e->p.b };
	struct ibv_send_wr wr[96], *bad = NULL;
	struct ibv_sge sge[96];
	struct ibv_wc wc[96];
	struct ibv_qp_attr a;
	uint64_t want[96], v = 0x1000;
	long long rep0, miss0, dup0, rep1, miss1, dup1;
	int i, got;

	if (!self->set_up)
		return;		/* skipped in the setup */
	o.no_connect = 1;
	env_create(_metadata, e, &self->d0, &self->d1, &o);
	for (i = 0; i < 2; i++) {
		ASSERT_EQ(0, rc_to_init(q[i], o.access));
		rc_rtr_attr(&a, q[i], q[1 - i]->qp->qp_num,
			    &q[1 - i]->dev->gid, q[i]->rq_psn);
		a.max_dest_rd_atomic = depth;
		ASSERT_EQ(0, ibv_modify_qp(q[i]->qp, &a, RC_RTR_MASK));
	}
	for (i = 0; i < 2; i++) {
		rc_rts_attr(&a, q[i], q[i]->sq_psn);
		a.max_rd_atomic = depth;
		ASSERT_EQ(0, ibv_modify_qp(q[i]->qp, &a, RC_RTS_MASK));
	}

	rc_fill(e->rb.p + doff, rlen, 77, 0);
	wr64(e->rb.p + roff, v);
	memset(e->la.p, 0xee, e->la.size);
	for (i = 0; i < n; i++) {
		uint64_t x = pat64(78, i);

		want[i] = v;
		switch (i % 4) {
		case 0:
			env_atomic_wr(e, &wr[i], &sge[i], i,
				      IBV_WR_ATOMIC_FETCH_AND_ADD, 8 * i, roff,
				      x, 0);
			v += x;
			break;
		case 1:
			env_atomic_wr(e, &wr[i], &sge[i], i,
				      IBV_WR_ATOMIC_CMP_AND_SWP, 8 * i, roff,
				      v, x);
			v = x;
			break;
		case 2:
			/*
			 * A READ of one packet. (Not of the word: a READ
			 * answered again reads the memory again, after the
			 * atomics that came later.)
			 */
			env_atomic_wr(e, &wr[i], &sge[i], i,
				      IBV_WR_RDMA_READ, 8 * i, roff, 0, 0);
			sge[i].addr = (uintptr_t)e->la.p + 8192 + i / 4 * 64;
			sge[i].length = 64;
			wr[i].wr.rdma.remote_addr = (uintptr_t)e->rb.p + doff;
			wr[i].wr.rdma.rkey = e->rb.mr->rkey;
			break;
		default:
			/* A READ of several packets, to its own place. */
			env_atomic_wr(e, &wr[i], &sge[i], i,
				      IBV_WR_RDMA_READ, 8 * i, roff, 0, 0);
			sge[i].addr = (uintptr_t)e->la.p + loff + i / 4 * 3072;
			sge[i].length = rlen;
			wr[i].wr.rdma.remote_addr = (uintptr_t)e->rb.p + doff;
			wr[i].wr.rdma.rkey = e->rb.mr->rkey;
			break;
		}
		wr[i].next = i + 1 < n ? &wr[i + 1] : NULL;
	}

	rep0 = rc_hw_counter(RP_DEV1, "atomic_replayed");
	miss0 = rc_hw_counter(RP_DEV1, "atomic_replay_missed");
	dup0 = rc_hw_counter(RP_DEV1, "duplicate_requests");
	drop_responses(_metadata, 20);
	ASSERT_EQ(0, ibv_post_send(e->p.a.qp, wr, &bad));
	got = rc_poll(e->p.a.scq, wc, n, 12 * RC_TIMEOUT_MS);
	ASSERT_EQ(n, got);
	for (i = 0; i < n; i++) {
		enum ibv_wr_opcode op = wr[i].opcode;
		char what[64];

		snprintf(what, sizeof(what), "op %d (%s)", i, at_op_str(op));
		check_success(_metadata, &wc[i], i,
			      op == IBV_WR_RDMA_READ ? IBV_WC_RDMA_READ :
			      op == IBV_WR_ATOMIC_CMP_AND_SWP ?
			      IBV_WC_COMP_SWAP : IBV_WC_FETCH_ADD,
			      e->p.a.qp->qp_num, what);
		if (i % 4 == 2) {
			EXPECT_SAME_BYTES(e->la.p + 8192 + i / 4 * 64,
					  e->rb.p + doff, 64, what);
		} else if (i % 4 != 3) {
			EXPECT_EQ(want[i], rd64(e->la.p + 8 * i)) {
				TH_LOG("%s: returned %#" PRIx64 ", expected "
				       "%#" PRIx64, what,
				       rd64(e->la.p + 8 * i), want[i]);
			}
		} else {
			EXPECT_SAME_BYTES(e->la.p + loff + i / 4 * 3072,
					  e->rb.p + doff, rlen, what);
		}
	}
	EXPECT_EQ(v, rd64(e->rb.p + roff)) {
		TH_LOG("the word is %#" PRIx64 ", expected %#" PRIx64
		       ": an atomic was lost or applied twice",
		       rd64(e->rb.p + roff), v);
	}

	rep1 = rc_hw_counter(RP_DEV1, "atomic_replayed");
	miss1 = rc_hw_counter(RP_DEV1, "atomic_replay_missed");
	dup1 = rc_hw_counter(RP_DEV1, "duplicate_requests");
	TH_LOG("duplicate requests %lld, atomics answered from the cache "
	       "%lld, not found %lld", dup1 - dup0, rep1 - rep0,
	       miss1 - miss0);
	EXPECT_LT(0, rep1 - rep0) {
		TH_LOG("no atomic answer was lost and replayed");
	}
	EXPECT_EQ(0, miss1 - miss0);
}

TEST_F_TIMEOUT(replay, depth_16, 240)
{
	replay_case(_metadata, self, 16);
}

/* The smallest cache: one entry, one READ/ATOMIC outstanding at a time. */
TEST_F_TIMEOUT(replay, depth_1, 240)
{
	replay_case(_metadata, self, 1);
}

int main(int argc, char **argv)
{
	return rc_suite_main(argc, argv);
}
