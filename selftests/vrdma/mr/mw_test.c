// SPDX-License-Identifier: GPL-2.0
/*
 * Memory windows and MR reregistration through the standard verbs API.
 *
 * Windows: RDMA WRITE and READ through type 1 (ibv_bind_mw) and type 2
 * (IBV_WR_BIND_MW) windows onto an MR that grants no remote access itself;
 * rebinding, unbinding, LOCAL_INV and SEND_WITH_INV (the receive completion
 * reports the invalidated rkey); and what must be refused: rights the
 * window does not grant, addresses outside it (inside the MR), the key
 * after an unbind, an invalidation or a dealloc, a window of another PD, a
 * type 2 window through another QP, binds the IBA forbids (MW_BIND_ERR),
 * invalidations of what cannot be invalidated (LOC_QP_OP_ERR locally,
 * REM_INV_REQ_ERR on the receive of a SEND_WITH_INV), deregistering an MR
 * with windows bound; and a dealloc while a READ through the window runs.
 *
 * Reregistration: new rights and a new PD (same keys), a new translation
 * (new keys, the old ones refused), refused while windows are bound, and
 * while a READ of the MR runs; write rights for an MR registered read-only
 * (its pages pinned again, for writing), refused for a read-only file
 * mapping.
 *
 * Every refused access must leave the target memory untouched.  Variants:
 * "loopback" (both QPs on one device) and "two_devices" (one QP on each end
 * of a veth pair), as in rc_test.c, and "loopback_wr_api", with the work
 * requests through the ibv_wr_* API (ibv_wr_bind_mw(), ibv_wr_local_inv(),
 * ibv_wr_send_inv(), ...) and extended CQs.  VRDMA_TEST_TYPE=rxe runs the
 * same tests on rdma_rxe, accepting its deviations as logged quirks (rxe
 * has no rereg_mr: those tests skip there).
 *
 * Runs as root in the test VM; main() (rc_suite.h) sets up the module, a
 * veth pair and the two RDMA devices.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>
#include <infiniband/verbs.h>

#include "rc_lib.h"
#include "rc_suite.h"
/* The provider's own header: user_reg_mr writes into the SQ ring. */
#include "vrdma.h"

#define MW_BUF		(64 * 1024)
/* B's MR: no remote rights of its own, windows grant them. */
#define MW_MR_ACCESS	(IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_MW_BIND)
#define MW_RW		(IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ)
/* The window used by most tests: inside B's buffer, unaligned. */
#define WIN_OFF		4099
#define WIN_LEN		20003

/* ---- fixture --------------------------------------------------------- */

FIXTURE(mw) {
	struct rc_dev d0, d1;
	struct rc_dev *da, *db;
	struct rc_env e;
	struct ibv_mw *mw[2];
	int two;
};

FIXTURE_VARIANT(mw) {
	int two_devices;
	int ex;		/* extended verbs: ibv_wr_bind_mw() and the like */
};

FIXTURE_VARIANT_ADD(mw, loopback) {
	.two_devices = 0,
};

FIXTURE_VARIANT_ADD(mw, two_devices) {
	.two_devices = 1,
};

FIXTURE_VARIANT_ADD(mw, loopback_wr_api) {
	.two_devices = 0,
	.ex = 1,
};

FIXTURE_SETUP(mw)
{
	/* Each test runs in a child of its own: this is the child's copy. */
	rc_cfg.ex = variant->ex;
	memset(&self->e, 0, sizeof(self->e));
	self->two = variant->two_devices;
	rc_ends_open(_metadata, &self->d0, &self->d1, &self->da, &self->db,
		     self->two);
}

FIXTURE_TEARDOWN(mw)
{
	int i;

	for (i = 0; i < 2; i++)
		if (self->mw[i])
			ibv_dealloc_mw(self->mw[i]);
	rc_env_destroy(&self->e);
	rc_dev_close(&self->d1);
	rc_dev_close(&self->d0);
}

/* A pair, A's buffer with every right, B's with @b_access. */
static void env_create(struct __test_metadata *_metadata,
		       FIXTURE_DATA(mw) *self, int b_access, size_t size)
{
	rc_env_create(_metadata, &self->e, self->da, self->db, NULL, size,
		      RC_ACCESS_ALL, b_access);
}

/*
 * A new pair for the same buffers and windows, after an error put the old
 * one in ERR (type 2 windows bound through the old B stay bound to it).
 */
static void new_pair(struct __test_metadata *_metadata, FIXTURE_DATA(mw) *self)
{
	rc_pair_destroy(&self->e.p);
	rc_pair_create(_metadata, &self->e.p, self->da, self->db, NULL);
}

static struct ibv_mw *mw_alloc(struct __test_metadata *_metadata,
			       FIXTURE_DATA(mw) *self, int i,
			       struct ibv_pd *pd, enum ibv_mw_type type)
{
	self->mw[i] = ibv_alloc_mw(pd, type);
	ASSERT_NE(NULL, self->mw[i]) {
		TH_LOG("ibv_alloc_mw(type %d): %s", type, strerror(errno));
	}
	EXPECT_EQ(type, self->mw[i]->type);
	return self->mw[i];
}

/*
 * Deallocate window @i.  A type 2 window goes before the QP it is bound
 * through: rxe (6.1) hangs, then crashes, destroying a QP with a type 2
 * window bound to it (vrdma's own test of that is qp_destroyed_bound).
 */
static void mw_free(struct __test_metadata *_metadata, FIXTURE_DATA(mw) *self,
		    int i)
{
	if (!self->mw[i])
		return;
	EXPECT_EQ(0, ibv_dealloc_mw(self->mw[i]));
	self->mw[i] = NULL;
}

/* B's address at offset @off. */
static uint64_t baddr(const struct rc_env *e, size_t off)
{
	return (uintptr_t)e->bb.p + off;
}

/*
 * Post a bind of @mw on @q (type 1: ibv_bind_mw(), which picks the next
 * key; type 2: IBV_WR_BIND_MW with the next key) and check its completion;
 * returns the key the bind gave (or asked for, when it fails).  On success
 * the window's ibv_mw.rkey is its new key (rxe's provider names a type 2
 * window by it).
 */
static uint32_t mw_bind(struct __test_metadata *_metadata, struct rc_qp *q,
			struct ibv_mw *mw, struct ibv_mr *mr, uint64_t addr,
			uint64_t len, int access, enum ibv_wc_status status,
			const char *what)
{
	struct ibv_mw_bind_info info = {
		.mr = mr, .addr = addr, .length = len,
		.mw_access_flags = access,
	};
	uint32_t old = mw->rkey, rkey;
	int ret;

	if (mw->type == IBV_MW_TYPE_1) {
		struct ibv_mw_bind b = {
			.wr_id = 0xb1d, .send_flags = IBV_SEND_SIGNALED,
			.bind_info = info,
		};

		ret = ibv_bind_mw(q->qp, mw, &b);
		ASSERT_EQ(0, ret) {
			TH_LOG("%s: ibv_bind_mw: %s", what, strerror(ret));
		}
		rkey = mw->rkey;
		EXPECT_EQ(ibv_inc_rkey(old), rkey);
	} else {
		struct ibv_send_wr wr = {
			.wr_id = 0xb1d, .opcode = IBV_WR_BIND_MW,
			.send_flags = IBV_SEND_SIGNALED,
		}, *bad = NULL;

		rkey = ibv_inc_rkey(old);
		wr.bind_mw.mw = mw;
		wr.bind_mw.rkey = rkey;
		wr.bind_mw.bind_info = info;
		ret = rc_post(q, &wr, &bad);
		ASSERT_EQ(0, ret) {
			TH_LOG("%s: post BIND_MW: %s", what, strerror(ret));
		}
	}
	rc_expect_wc(_metadata, q->scq, &(struct rc_wc_exp){
		.wr_id = 0xb1d, .status = status, .opcode = IBV_WC_BIND_MW,
		.qp_num = q->qp->qp_num,
	}, what);
	if (status == IBV_WC_SUCCESS)
		mw->rkey = rkey;
	else
		mw->rkey = old;
	return rkey;
}

/* LOCAL_INV of @rkey on @q, completing with @status. */
static void local_inv(struct __test_metadata *_metadata, struct rc_qp *q,
		      uint32_t rkey, enum ibv_wc_status status,
		      const char *what)
{
	struct ibv_send_wr wr = {
		.wr_id = 0x1a7, .opcode = IBV_WR_LOCAL_INV,
		.send_flags = IBV_SEND_SIGNALED, .invalidate_rkey = rkey,
	}, *bad = NULL;

	ASSERT_EQ(0, rc_post(q, &wr, &bad));
	rc_expect_wc(_metadata, q->scq, &(struct rc_wc_exp){
		.wr_id = 0x1a7, .status = status, .opcode = IBV_WC_LOCAL_INV,
		.qp_num = q->qp->qp_num,
	}, what);
}

/* Where B receives: past the window. */
#define RECV_OFF	40000

/*
 * A sends B a 100-byte SEND_WITH_INV of @rkey.  With @ok both complete and
 * B's receive reports the invalidated key; else (IBA class J: the message
 * is executed and acknowledged) A's SEND succeeds, B's receive completes
 * with REM_INV_REQ_ERR and B goes to ERR.
 */
static void send_inv(struct __test_metadata *_metadata, struct rc_env *e,
		     uint32_t rkey, int ok, const char *what)
{
	struct ibv_sge sge = {
		.addr = (uintptr_t)e->ba.p, .length = 100,
		.lkey = e->ba.mr->lkey,
	};
	struct ibv_send_wr wr = {
		.wr_id = 0x5e1, .sg_list = &sge, .num_sge = 1,
		.opcode = IBV_WR_SEND_WITH_INV,
		.send_flags = IBV_SEND_SIGNALED, .invalidate_rkey = rkey,
	}, *bad = NULL;
	struct ibv_wc wc;

	rc_fill(e->ba.p, 100, rkey, 0);
	ASSERT_EQ(0, rc_post_recv(&e->p.b, 0x5e2, &e->bb, RECV_OFF, 128));
	ASSERT_EQ(0, rc_post(&e->p.a, &wr, &bad));
	rc_expect_wc(_metadata, e->p.a.scq, &(struct rc_wc_exp){
		.wr_id = 0x5e1, .status = IBV_WC_SUCCESS,
		.opcode = IBV_WC_SEND, .qp_num = e->p.a.qp->qp_num,
	}, what);
	ASSERT_EQ(1, rc_poll(e->p.b.rcq, &wc, 1, RC_TIMEOUT_MS)) {
		TH_LOG("%s: no receive completion", what);
	}
	if (!ok) {
		rc_wc_check(_metadata, &wc, &(struct rc_wc_exp){
			.wr_id = 0x5e2, .status = IBV_WC_REM_INV_REQ_ERR,
			.qp_num = e->p.b.qp->qp_num,
		}, what);
		EXPECT_EQ(IBV_QPS_ERR, rc_qp_state(e->p.b.qp));
		return;
	}
	rc_wc_check(_metadata, &wc, &(struct rc_wc_exp){
		.wr_id = 0x5e2, .status = IBV_WC_SUCCESS,
		.opcode = IBV_WC_RECV, .qp_num = e->p.b.qp->qp_num,
	}, what);
	EXPECT_EQ(100, wc.byte_len);
	if (rc_cfg.is_rxe && (wc.wc_flags & ~(unsigned int)IBV_WC_GRH) ==
			     IBV_WC_IP_CSUM_OK) {
		RC_QUIRK("the kernel's IB_WC_WITH_INVALIDATE (4) in wc_flags, "
			 "not IBV_WC_WITH_INV (8)");
		wc.wc_flags = IBV_WC_WITH_INV;
		/* and then rc_poll_ex() did not read the key */
		if (rc_cfg.ex)
			wc.invalidated_rkey = rkey;
	}
	EXPECT_EQ(IBV_WC_WITH_INV, wc.wc_flags & ~(unsigned int)IBV_WC_GRH) {
		TH_LOG("%s: wc_flags %#x", what, wc.wc_flags);
	}
	EXPECT_EQ(rkey, wc.invalidated_rkey);
	EXPECT_SAME_BYTES(e->bb.p + RECV_OFF, e->ba.p, 100, what);
}

/*
 * A does an RDMA @op of @len bytes at B's offset @off with @rkey, which
 * must complete with @status.  A WRITE must change exactly those bytes of
 * B, a READ must bring them; a refused one changes no byte of B, and both
 * QPs end in ERR (the responder's class C error).
 */
static void rdma_via(struct __test_metadata *_metadata, struct rc_env *e,
		     enum ibv_wr_opcode op, size_t off, size_t len,
		     uint32_t rkey, enum ibv_wc_status status, uint32_t seed,
		     const char *what)
{
	int is_read = op == IBV_WR_RDMA_READ;
	struct ibv_sge sge = {
		.addr = (uintptr_t)e->ba.p, .length = len,
		.lkey = e->ba.mr->lkey,
	};
	struct ibv_send_wr wr = {
		.wr_id = 0xda7a, .sg_list = &sge, .num_sge = 1, .opcode = op,
		.send_flags = IBV_SEND_SIGNALED,
	}, *bad = NULL;
	uint8_t *img, *want;
	int ret;

	ASSERT_LE(len, e->ba.size);
	img = malloc(e->bb.size);
	want = malloc(len + 1);
	ASSERT_TRUE(img && want);
	rc_fill(want, len, seed, 0);
	if (is_read) {
		if (off < e->bb.size)
			rc_fill(e->bb.p + off, len < e->bb.size - off ?
				len : e->bb.size - off, seed, 0);
		memset(e->ba.p, 0xee, len);
	} else {
		memcpy(e->ba.p, want, len);
	}
	memcpy(img, e->bb.p, e->bb.size);
	wr.wr.rdma.remote_addr = baddr(e, off);
	wr.wr.rdma.rkey = rkey;
	ret = rc_post(&e->p.a, &wr, &bad);
	ASSERT_EQ(0, ret) {
		TH_LOG("%s: post: %s", what, strerror(ret));
	}
	rc_expect_wc(_metadata, e->p.a.scq, &(struct rc_wc_exp){
		.wr_id = 0xda7a, .status = status,
		.opcode = is_read ? IBV_WC_RDMA_READ : IBV_WC_RDMA_WRITE,
		.qp_num = e->p.a.qp->qp_num,
	}, what);
	if (status == IBV_WC_SUCCESS && !is_read)
		memcpy(img + off, want, len);
	EXPECT_SAME_BYTES(e->bb.p, img, e->bb.size, what);
	if (status == IBV_WC_SUCCESS && is_read)
		EXPECT_SAME_BYTES(e->ba.p, want, len, what);
	if (status != IBV_WC_SUCCESS) {
		EXPECT_EQ(IBV_QPS_ERR, rc_qp_state(e->p.a.qp));
		EXPECT_EQ(IBV_QPS_ERR, rc_qp_state(e->p.b.qp));
	}
	free(img);
	free(want);
}

/* A WRITE and a READ of @len bytes at @off through @rkey both work. */
static void rw_ok(struct __test_metadata *_metadata, struct rc_env *e,
		  size_t off, size_t len, uint32_t rkey, uint32_t seed,
		  const char *what)
{
	rdma_via(_metadata, e, IBV_WR_RDMA_WRITE, off, len, rkey,
		 IBV_WC_SUCCESS, seed, what);
	rdma_via(_metadata, e, IBV_WR_RDMA_READ, off, len, rkey,
		 IBV_WC_SUCCESS, seed + 1, what);
}

/* ---- the device --------------------------------------------------------- */

/* Memory windows of both types are advertised and can be allocated. */
TEST_F(mw, caps)
{
	struct ibv_mw *m1, *m2;

	EXPECT_LT(0, self->db->attr.max_mw);
	EXPECT_EQ(IBV_DEVICE_MEM_WINDOW,
		  self->db->attr.device_cap_flags & IBV_DEVICE_MEM_WINDOW);
	EXPECT_EQ(IBV_DEVICE_MEM_WINDOW_TYPE_2B,
		  self->db->attr.device_cap_flags &
		  IBV_DEVICE_MEM_WINDOW_TYPE_2B);
	m1 = mw_alloc(_metadata, self, 0, self->db->pd, IBV_MW_TYPE_1);
	m2 = mw_alloc(_metadata, self, 1, self->db->pd, IBV_MW_TYPE_2);
	EXPECT_NE(m1->rkey, m2->rkey);
	EXPECT_EQ(self->db->pd, m1->pd);
	EXPECT_EQ(0, ibv_dealloc_mw(m1));
	self->mw[0] = NULL;
	EXPECT_EQ(0, ibv_dealloc_mw(m2));
	self->mw[1] = NULL;
}

/* ---- binding and using windows -------------------------------------------- */

/*
 * Both types: WRITE and READ through a window onto an MR without remote
 * rights; a type 1 window rebinds to another range with the next key.
 */
TEST_F(mw, write_read)
{
	struct rc_env *e = &self->e;
	struct ibv_mw *m1, *m2;
	uint32_t k1, k2;

	env_create(_metadata, self, MW_MR_ACCESS, MW_BUF);
	m1 = mw_alloc(_metadata, self, 0, self->db->pd, IBV_MW_TYPE_1);
	m2 = mw_alloc(_metadata, self, 1, self->db->pd, IBV_MW_TYPE_2);
	k1 = mw_bind(_metadata, &e->p.b, m1, e->bb.mr, baddr(e, WIN_OFF),
		     WIN_LEN, MW_RW, IBV_WC_SUCCESS, "bind type 1");
	k2 = mw_bind(_metadata, &e->p.b, m2, e->bb.mr, baddr(e, 30001),
		     9000, MW_RW, IBV_WC_SUCCESS, "bind type 2");
	/* The whole window, and its two ends. */
	rw_ok(_metadata, e, WIN_OFF, WIN_LEN, k1, 10, "type 1, all of it");
	rw_ok(_metadata, e, WIN_OFF, 1, k1, 20, "type 1, first byte");
	rw_ok(_metadata, e, WIN_OFF + WIN_LEN - 7, 7, k1, 30,
	      "type 1, last bytes");
	rw_ok(_metadata, e, 30001, 9000, k2, 40, "type 2, all of it");
	rw_ok(_metadata, e, 30001 + 4000, 17, k2, 50, "type 2, inside");

	/* Type 1 rebinds in place: a new range, the next key. */
	k1 = mw_bind(_metadata, &e->p.b, m1, e->bb.mr, baddr(e, 50000),
		     5000, IBV_ACCESS_REMOTE_WRITE, IBV_WC_SUCCESS,
		     "rebind type 1");
	rdma_via(_metadata, e, IBV_WR_RDMA_WRITE, 50000, 5000, k1,
		 IBV_WC_SUCCESS, 60, "type 1 rebound");
	/* The MR's own rkey still grants nothing remote. */
	rdma_via(_metadata, e, IBV_WR_RDMA_WRITE, WIN_OFF, 10,
		 e->bb.mr->rkey, IBV_WC_REM_ACCESS_ERR, 70,
		 "the MR's own rkey");
}

/* Bind, invalidate and bind again, locally and by the peer. */
TEST_F(mw, type2_rebind)
{
	struct rc_env *e = &self->e;
	struct ibv_mw *m;
	uint32_t k;
	int i;

	env_create(_metadata, self, MW_MR_ACCESS, MW_BUF);
	m = mw_alloc(_metadata, self, 0, self->db->pd, IBV_MW_TYPE_2);
	for (i = 0; i < 4; i++) {
		k = mw_bind(_metadata, &e->p.b, m, e->bb.mr,
			    baddr(e, WIN_OFF + 100 * i), 1000, MW_RW,
			    IBV_WC_SUCCESS, "bind");
		rw_ok(_metadata, e, WIN_OFF + 100 * i, 1000, k, 100 + 2 * i,
		      "bound");
		if (i & 1)
			send_inv(_metadata, e, k, 1, "SEND_WITH_INV");
		else
			local_inv(_metadata, &e->p.b, k, IBV_WC_SUCCESS,
				  "LOCAL_INV");
	}
}

/* A window grants only its own rights. */
TEST_F_TIMEOUT(mw, access_narrower, 120)
{
	struct rc_env *e = &self->e;
	int t;

	env_create(_metadata, self, MW_MR_ACCESS, MW_BUF);
	for (t = 0; t < 2; t++) {
		enum ibv_mw_type type = t ? IBV_MW_TYPE_2 : IBV_MW_TYPE_1;
		struct ibv_mw *m;
		uint32_t k;

		if (t)
			new_pair(_metadata, self);
		m = mw_alloc(_metadata, self, t, self->db->pd, type);
		k = mw_bind(_metadata, &e->p.b, m, e->bb.mr,
			    baddr(e, WIN_OFF), WIN_LEN,
			    IBV_ACCESS_REMOTE_READ, IBV_WC_SUCCESS,
			    "bind read-only");
		rdma_via(_metadata, e, IBV_WR_RDMA_READ, WIN_OFF, 500, k,
			 IBV_WC_SUCCESS, 200 + t, "READ, read-only window");
		rdma_via(_metadata, e, IBV_WR_RDMA_WRITE, WIN_OFF, 500, k,
			 IBV_WC_REM_ACCESS_ERR, 210 + t,
			 "WRITE, read-only window");
	}
	/* And the other way round. */
	mw_free(_metadata, self, 1);
	new_pair(_metadata, self);
	{
		struct ibv_mw *m = self->mw[0];
		uint32_t k;

		k = mw_bind(_metadata, &e->p.b, m, e->bb.mr,
			    baddr(e, WIN_OFF), WIN_LEN,
			    IBV_ACCESS_REMOTE_WRITE, IBV_WC_SUCCESS,
			    "bind write-only");
		rdma_via(_metadata, e, IBV_WR_RDMA_WRITE, WIN_OFF, 500, k,
			 IBV_WC_SUCCESS, 220, "WRITE, write-only window");
		rdma_via(_metadata, e, IBV_WR_RDMA_READ, WIN_OFF, 500, k,
			 IBV_WC_REM_ACCESS_ERR, 230,
			 "READ, write-only window");
	}
}

/* Inside the MR but outside the window: refused, both ends. */
TEST_F_TIMEOUT(mw, out_of_window, 120)
{
	static const struct {
		enum ibv_wr_opcode op;
		long off;	/* from the window's start */
		size_t len;
		const char *what;
	} c[] = {
		{ IBV_WR_RDMA_WRITE, WIN_LEN - 10, 11, "WRITE one past the end" },
		{ IBV_WR_RDMA_WRITE, -1, 2, "WRITE one before the start" },
		{ IBV_WR_RDMA_READ, WIN_LEN, 1, "READ just after the end" },
		{ IBV_WR_RDMA_READ, -4096, 5000, "READ from before the start" },
	};
	struct rc_env *e = &self->e;
	unsigned int i;

	env_create(_metadata, self, MW_MR_ACCESS, MW_BUF);
	for (i = 0; i < sizeof(c) / sizeof(c[0]); i++) {
		struct ibv_mw *m;
		uint32_t k;

		if (i)
			new_pair(_metadata, self);
		/* Type 1 (rebound) and type 2 (a new one each time) in turn. */
		m = self->mw[i & 1];
		if (!m)
			m = mw_alloc(_metadata, self, i & 1, self->db->pd,
				     (i & 1) ? IBV_MW_TYPE_2 : IBV_MW_TYPE_1);
		k = mw_bind(_metadata, &e->p.b, m, e->bb.mr,
			    baddr(e, WIN_OFF), WIN_LEN, MW_RW,
			    IBV_WC_SUCCESS, c[i].what);
		if (rc_cfg.is_rxe) {
			RC_QUIRK("rxe checks the MR's bounds, not the "
				 "window's: %s not tested", c[i].what);
		} else {
			rdma_via(_metadata, e, c[i].op, WIN_OFF + c[i].off,
				 c[i].len, k, IBV_WC_REM_ACCESS_ERR, 300 + i,
				 c[i].what);
		}
		if (m->type == IBV_MW_TYPE_2)
			mw_free(_metadata, self, 1);
	}
}

/* An 8-byte atomic at B's offset @off through @rkey; returns the answer. */
static uint64_t atomic_via(struct __test_metadata *_metadata,
			   struct rc_env *e, enum ibv_wr_opcode op, size_t off,
			   uint32_t rkey, uint64_t compare_add, uint64_t swap,
			   enum ibv_wc_status status, const char *what)
{
	struct ibv_sge sge = {
		.addr = (uintptr_t)e->ba.p, .length = 8,
		.lkey = e->ba.mr->lkey,
	};
	struct ibv_send_wr wr = {
		.wr_id = 0xa7, .sg_list = &sge, .num_sge = 1, .opcode = op,
		.send_flags = IBV_SEND_SIGNALED,
	}, *bad = NULL;

	memset(e->ba.p, 0xee, 8);
	wr.wr.atomic.remote_addr = baddr(e, off);
	wr.wr.atomic.rkey = rkey;
	wr.wr.atomic.compare_add = compare_add;
	wr.wr.atomic.swap = swap;
	ASSERT_EQ(0, rc_post(&e->p.a, &wr, &bad));
	rc_expect_wc(_metadata, e->p.a.scq, &(struct rc_wc_exp){
		.wr_id = 0xa7, .status = status,
		.opcode = op == IBV_WR_ATOMIC_FETCH_AND_ADD ?
			  IBV_WC_FETCH_ADD : IBV_WC_COMP_SWAP,
		.qp_num = e->p.a.qp->qp_num,
	}, what);
	return *(uint64_t *)(void *)e->ba.p;
}

/* Atomics through a window that grants REMOTE_ATOMIC, and one that does not. */
TEST_F(mw, atomic)
{
	struct rc_opts o = {
		.access = IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ |
			  IBV_ACCESS_REMOTE_ATOMIC,
	};
	struct rc_env *e = &self->e;
	uint64_t *word;
	uint32_t k1, k2;

	if (self->db->attr.atomic_cap == IBV_ATOMIC_NONE)
		RC_SKIP_ON_RXE(return, "the device has no atomics");
	rc_pair_create(_metadata, &e->p, self->da, self->db, &o);
	rc_buf_alloc(_metadata, &e->ba, self->da->pd, MW_BUF, RC_ACCESS_ALL);
	rc_buf_alloc(_metadata, &e->bb, self->db->pd, MW_BUF, MW_MR_ACCESS);
	word = (uint64_t *)(void *)(e->bb.p + 8192);
	*word = 100;
	mw_alloc(_metadata, self, 0, self->db->pd, IBV_MW_TYPE_1);
	mw_alloc(_metadata, self, 1, self->db->pd, IBV_MW_TYPE_2);
	k2 = mw_bind(_metadata, &e->p.b, self->mw[1], e->bb.mr,
		     baddr(e, WIN_OFF), WIN_LEN, IBV_ACCESS_REMOTE_ATOMIC,
		     IBV_WC_SUCCESS, "bind an atomic window");
	k1 = mw_bind(_metadata, &e->p.b, self->mw[0], e->bb.mr,
		     baddr(e, WIN_OFF), WIN_LEN, MW_RW, IBV_WC_SUCCESS,
		     "bind a read/write window");
	EXPECT_EQ(100, atomic_via(_metadata, e, IBV_WR_ATOMIC_FETCH_AND_ADD,
				  8192, k2, 5, 0, IBV_WC_SUCCESS,
				  "FETCH_AND_ADD"));
	EXPECT_EQ(105, *word);
	EXPECT_EQ(105, atomic_via(_metadata, e, IBV_WR_ATOMIC_CMP_AND_SWP,
				  8192, k2, 105, 7, IBV_WC_SUCCESS,
				  "CMP_AND_SWP"));
	EXPECT_EQ(7, *word);
	atomic_via(_metadata, e, IBV_WR_ATOMIC_FETCH_AND_ADD, 8192, k1, 1, 0,
		   IBV_WC_REM_ACCESS_ERR, "FETCH_AND_ADD, no REMOTE_ATOMIC");
	EXPECT_EQ(7, *word);
	mw_free(_metadata, self, 1);
}

/* ---- keys that no longer work ---------------------------------------------- */

/* Type 1: the key before a rebind, and after an unbind (length 0). */
TEST_F(mw, type1_old_keys)
{
	struct rc_env *e = &self->e;
	struct ibv_mw *m;
	uint32_t k0, k1;

	env_create(_metadata, self, MW_MR_ACCESS, MW_BUF);
	m = mw_alloc(_metadata, self, 0, self->db->pd, IBV_MW_TYPE_1);
	k0 = mw_bind(_metadata, &e->p.b, m, e->bb.mr, baddr(e, WIN_OFF),
		     WIN_LEN, MW_RW, IBV_WC_SUCCESS, "bind");
	k1 = mw_bind(_metadata, &e->p.b, m, e->bb.mr, baddr(e, WIN_OFF),
		     WIN_LEN, MW_RW, IBV_WC_SUCCESS, "rebind, same range");
	EXPECT_NE(k0, k1);
	rdma_via(_metadata, e, IBV_WR_RDMA_WRITE, WIN_OFF, 100, k1,
		 IBV_WC_SUCCESS, 400, "the new key");
	rdma_via(_metadata, e, IBV_WR_RDMA_WRITE, WIN_OFF, 100, k0,
		 IBV_WC_REM_ACCESS_ERR, 401, "the key before the rebind");

	new_pair(_metadata, self);
	/* With the MR named (rxe's provider needs one), but length 0. */
	mw_bind(_metadata, &e->p.b, m, e->bb.mr, baddr(e, WIN_OFF), 0, 0,
		IBV_WC_SUCCESS, "unbind");
	rdma_via(_metadata, e, IBV_WR_RDMA_READ, WIN_OFF, 100, k1,
		 IBV_WC_REM_ACCESS_ERR, 402, "the key before the unbind");
}

/* Type 2: the key after LOCAL_INV, and after SEND_WITH_INV. */
TEST_F(mw, type2_invalidated_key)
{
	struct rc_env *e = &self->e;
	struct ibv_mw *m;
	uint32_t k;

	env_create(_metadata, self, MW_MR_ACCESS, MW_BUF);
	m = mw_alloc(_metadata, self, 0, self->db->pd, IBV_MW_TYPE_2);
	k = mw_bind(_metadata, &e->p.b, m, e->bb.mr, baddr(e, WIN_OFF),
		    WIN_LEN, MW_RW, IBV_WC_SUCCESS, "bind");
	local_inv(_metadata, &e->p.b, k, IBV_WC_SUCCESS, "LOCAL_INV");
	rdma_via(_metadata, e, IBV_WR_RDMA_WRITE, WIN_OFF, 100, k,
		 IBV_WC_REM_ACCESS_ERR, 500, "WRITE after LOCAL_INV");

	new_pair(_metadata, self);
	k = mw_bind(_metadata, &e->p.b, m, e->bb.mr, baddr(e, WIN_OFF),
		    WIN_LEN, MW_RW, IBV_WC_SUCCESS, "bind again");
	send_inv(_metadata, e, k, 1, "SEND_WITH_INV");
	rdma_via(_metadata, e, IBV_WR_RDMA_READ, WIN_OFF, 100, k,
		 IBV_WC_REM_ACCESS_ERR, 501, "READ after SEND_WITH_INV");
}

/*
 * Deallocated while bound (both types): the keys stop working.  Meanwhile
 * the MR cannot be deregistered; afterwards it can.
 */
TEST_F(mw, dealloc_bound)
{
	struct rc_env *e = &self->e;
	uint32_t k1, k2;
	int ret;

	env_create(_metadata, self, MW_MR_ACCESS, MW_BUF);
	mw_alloc(_metadata, self, 0, self->db->pd, IBV_MW_TYPE_1);
	mw_alloc(_metadata, self, 1, self->db->pd, IBV_MW_TYPE_2);
	k1 = mw_bind(_metadata, &e->p.b, self->mw[0], e->bb.mr,
		     baddr(e, WIN_OFF), WIN_LEN, MW_RW, IBV_WC_SUCCESS,
		     "bind type 1");
	k2 = mw_bind(_metadata, &e->p.b, self->mw[1], e->bb.mr,
		     baddr(e, WIN_OFF), WIN_LEN, MW_RW, IBV_WC_SUCCESS,
		     "bind type 2");
	rw_ok(_metadata, e, WIN_OFF, 64, k2, 600, "type 2 before");

	ret = ibv_dereg_mr(e->bb.mr);
	EXPECT_NE(0, ret);
	if (!rc_cfg.is_rxe)
		EXPECT_EQ(EBUSY, ret);
	if (!ret)
		e->bb.mr = NULL;

	EXPECT_EQ(0, ibv_dealloc_mw(self->mw[0]));
	self->mw[0] = NULL;
	EXPECT_EQ(0, ibv_dealloc_mw(self->mw[1]));
	self->mw[1] = NULL;
	rdma_via(_metadata, e, IBV_WR_RDMA_WRITE, WIN_OFF, 64, k2,
		 IBV_WC_REM_ACCESS_ERR, 601, "type 2 after dealloc");
	new_pair(_metadata, self);
	rdma_via(_metadata, e, IBV_WR_RDMA_READ, WIN_OFF, 64, k1,
		 IBV_WC_REM_ACCESS_ERR, 602, "type 1 after dealloc");
	ASSERT_NE(NULL, e->bb.mr);
	EXPECT_EQ(0, ibv_dereg_mr(e->bb.mr));
	e->bb.mr = NULL;
}

/* ---- windows of another PD, or of another QP --------------------------- */

/*
 * A window of another PD of B's device (bound through a QP of that PD, to
 * an MR of that PD over the same memory) works there, not on B's QP.
 */
TEST_F(mw, other_pd)
{
	struct rc_env *e = &self->e;
	struct rc_dev db2 = *self->db;
	struct rc_pair p2;
	struct ibv_pd *pd2;
	struct ibv_mr *mr2;
	struct ibv_mw *m;
	uint32_t k;

	env_create(_metadata, self, MW_MR_ACCESS, MW_BUF);
	pd2 = ibv_alloc_pd(self->db->ctx);
	ASSERT_NE(NULL, pd2);
	mr2 = ibv_reg_mr(pd2, e->bb.p, e->bb.size, MW_MR_ACCESS);
	ASSERT_NE(NULL, mr2);
	db2.pd = pd2;
	db2.owned = 0;
	rc_pair_create(_metadata, &p2, self->da, &db2, NULL);
	m = mw_alloc(_metadata, self, 0, pd2, IBV_MW_TYPE_1);
	k = mw_bind(_metadata, &p2.b, m, mr2, baddr(e, WIN_OFF), WIN_LEN,
		    MW_RW, IBV_WC_SUCCESS, "bind in the other PD");
	{
		struct rc_env e2 = *e;

		e2.p = p2;
		rw_ok(_metadata, &e2, WIN_OFF, 100, k, 700,
		      "through a QP of its PD");
	}
	rdma_via(_metadata, e, IBV_WR_RDMA_WRITE, WIN_OFF, 100, k,
		 IBV_WC_REM_ACCESS_ERR, 701, "through a QP of another PD");
	EXPECT_EQ(0, ibv_dealloc_mw(m));
	self->mw[0] = NULL;
	rc_pair_destroy(&p2);
	EXPECT_EQ(0, ibv_dereg_mr(mr2));
	EXPECT_EQ(0, ibv_dealloc_pd(pd2));
}

/* A type 2 window works only through the QP it was bound through. */
TEST_F(mw, type2_other_qp)
{
	struct rc_env *e = &self->e;
	struct rc_env e2 = *e;
	struct ibv_mw *m;
	uint32_t k;

	env_create(_metadata, self, MW_MR_ACCESS, MW_BUF);
	m = mw_alloc(_metadata, self, 0, self->db->pd, IBV_MW_TYPE_2);
	k = mw_bind(_metadata, &e->p.b, m, e->bb.mr, baddr(e, WIN_OFF),
		    WIN_LEN, MW_RW, IBV_WC_SUCCESS, "bind");
	e2 = *e;
	rc_pair_create(_metadata, &e2.p, self->da, self->db, NULL);
	rw_ok(_metadata, e, WIN_OFF, 100, k, 800, "through its QP");
	rdma_via(_metadata, &e2, IBV_WR_RDMA_WRITE, WIN_OFF, 100, k,
		 IBV_WC_REM_ACCESS_ERR, 801, "through another QP, same PD");
	/* Nor may the other QP's peer invalidate it. */
	rc_pair_destroy(&e2.p);
	rc_pair_create(_metadata, &e2.p, self->da, self->db, NULL);
	if (rc_cfg.is_rxe) {
		RC_QUIRK("rxe lets the peer of any QP invalidate a type 2 "
			 "window; not tested");
	} else {
		send_inv(_metadata, &e2, k, 0, "SEND_WITH_INV via another QP");
		rw_ok(_metadata, e, WIN_OFF, 100, k, 802, "still bound");
	}
	rc_pair_destroy(&e2.p);
}

/*
 * The QP a type 2 window was bound through is destroyed: the window works
 * through no QP, can still be invalidated through another QP of its PD,
 * bound again and deallocated.
 */
TEST_F(mw, qp_destroyed_bound)
{
	struct rc_env *e = &self->e;
	struct ibv_mw *m;
	uint32_t k;

	if (rc_cfg.is_rxe)
		SKIP(return, "rxe (6.1) hangs and crashes destroying a QP "
		     "with a type 2 window bound to it");
	env_create(_metadata, self, MW_MR_ACCESS, MW_BUF);
	m = mw_alloc(_metadata, self, 0, self->db->pd, IBV_MW_TYPE_2);
	k = mw_bind(_metadata, &e->p.b, m, e->bb.mr, baddr(e, WIN_OFF),
		    WIN_LEN, MW_RW, IBV_WC_SUCCESS, "bind");
	rw_ok(_metadata, e, WIN_OFF, 100, k, 850, "through its QP");
	new_pair(_metadata, self);
	rdma_via(_metadata, e, IBV_WR_RDMA_WRITE, WIN_OFF, 100, k,
		 IBV_WC_REM_ACCESS_ERR, 851, "its QP destroyed");
	new_pair(_metadata, self);
	local_inv(_metadata, &e->p.b, k, IBV_WC_SUCCESS,
		  "LOCAL_INV through another QP");
	k = mw_bind(_metadata, &e->p.b, m, e->bb.mr, baddr(e, WIN_OFF),
		    WIN_LEN, MW_RW, IBV_WC_SUCCESS, "bind again");
	rw_ok(_metadata, e, WIN_OFF, 100, k, 852, "bound again");
	/* Destroyed bound, then deallocated (by the teardown). */
	new_pair(_metadata, self);
}

/* ---- what a bind, LOCAL_INV or SEND_WITH_INV must refuse -------------- */

/*
 * Each refused bind completes with MW_BIND_ERR and puts the QP in ERR; the
 * window stays as it was.
 */
TEST_F_TIMEOUT(mw, bind_errors, 120)
{
	enum { NO_BIND, WRITE_NO_LW, PAST_MR, T2_EMPTY, T2_BOUND, T2_OTHER_PD,
	       T1_OTHER_PD, ZERO_BASED, NCASES };
	static const char *const what[NCASES] = {
		"an MR without MW_BIND", "a writable window, MR without "
		"LOCAL_WRITE", "a range past the MR", "type 2, length 0",
		"type 2, already bound", "type 2 of another PD",
		"type 1 of another PD", "zero-based",
	};
	struct rc_env *e = &self->e;
	struct ibv_pd *pd2;
	struct ibv_mr *nobind, *nolw, *mr2;
	int c;

	env_create(_metadata, self, MW_MR_ACCESS, MW_BUF);
	pd2 = ibv_alloc_pd(self->db->ctx);
	ASSERT_NE(NULL, pd2);
	nobind = ibv_reg_mr(self->db->pd, e->bb.p, e->bb.size,
			    IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_READ);
	nolw = ibv_reg_mr(self->db->pd, e->bb.p, e->bb.size,
			  IBV_ACCESS_MW_BIND);
	mr2 = ibv_reg_mr(pd2, e->bb.p, e->bb.size, MW_MR_ACCESS);
	ASSERT_TRUE(nobind && nolw && mr2);

	for (c = 0; c < NCASES; c++) {
		struct ibv_mr *mr = e->bb.mr;
		struct ibv_mw *m;
		uint64_t len = WIN_LEN, addr = baddr(e, WIN_OFF);
		int access = MW_RW;
		enum ibv_wc_status st = IBV_WC_MW_BIND_ERR;

		mw_free(_metadata, self, 0);
		if (c)
			new_pair(_metadata, self);
		m = mw_alloc(_metadata, self, 0,
			     c == T2_OTHER_PD || c == T1_OTHER_PD ? pd2 :
			     self->db->pd,
			     c == T1_OTHER_PD || c == NO_BIND ||
			     c == ZERO_BASED ? IBV_MW_TYPE_1 : IBV_MW_TYPE_2);
		switch (c) {
		case NO_BIND:
			mr = nobind;
			break;
		case WRITE_NO_LW:
			mr = nolw;
			break;
		case PAST_MR:
			len = e->bb.size - WIN_OFF + 1;
			break;
		case T2_EMPTY:
			len = 0;
			break;
		case T2_BOUND:
			mw_bind(_metadata, &e->p.b, m, mr, addr, len, access,
				IBV_WC_SUCCESS, "the first bind");
			break;
		case T2_OTHER_PD:
		case T1_OTHER_PD:
			mr = mr2;
			break;
		case ZERO_BASED:
			access |= IBV_ACCESS_ZERO_BASED;
			addr = 0;
			break;
		}
		if (rc_cfg.is_rxe && c == T1_OTHER_PD) {
			RC_QUIRK("rxe binds a type 1 window of another PD "
				 "than the QP's");
			st = IBV_WC_SUCCESS;
		}
		if (m->type == IBV_MW_TYPE_1 && c == ZERO_BASED) {
			/* rxe's provider refuses it before the kernel does. */
			struct ibv_mw_bind b = {
				.wr_id = 0xb1d,
				.send_flags = IBV_SEND_SIGNALED,
				.bind_info = { .mr = mr, .addr = addr,
					       .length = len,
					       .mw_access_flags = access },
			};
			int ret = ibv_bind_mw(e->p.b.qp, m, &b);

			if (ret) {
				EXPECT_EQ(EINVAL, ret);
				continue;
			}
			rc_expect_wc(_metadata, e->p.b.scq, &(struct rc_wc_exp){
				.wr_id = 0xb1d, .status = st,
				.qp_num = e->p.b.qp->qp_num,
			}, what[c]);
		} else {
			mw_bind(_metadata, &e->p.b, m, mr, addr, len, access,
				st, what[c]);
		}
		if (st != IBV_WC_SUCCESS)
			EXPECT_EQ(IBV_QPS_ERR, rc_qp_state(e->p.b.qp)) {
				TH_LOG("%s", what[c]);
			}
	}
	mw_free(_metadata, self, 0);
	EXPECT_EQ(0, ibv_dereg_mr(nobind));
	EXPECT_EQ(0, ibv_dereg_mr(nolw));
	EXPECT_EQ(0, ibv_dereg_mr(mr2));
	EXPECT_EQ(0, ibv_dealloc_pd(pd2));
}

/*
 * LOCAL_INV of what it cannot invalidate completes with LOC_QP_OP_ERR: a
 * type 1 window, an unbound type 2 window, an MR.
 */
TEST_F_TIMEOUT(mw, local_inv_errors, 120)
{
	struct rc_env *e = &self->e;
	struct ibv_mw *m1, *m2;
	uint32_t k1;

	env_create(_metadata, self, MW_MR_ACCESS, MW_BUF);
	m1 = mw_alloc(_metadata, self, 0, self->db->pd, IBV_MW_TYPE_1);
	m2 = mw_alloc(_metadata, self, 1, self->db->pd, IBV_MW_TYPE_2);
	k1 = mw_bind(_metadata, &e->p.b, m1, e->bb.mr, baddr(e, WIN_OFF),
		     WIN_LEN, MW_RW, IBV_WC_SUCCESS, "bind type 1");
	local_inv(_metadata, &e->p.b, k1, IBV_WC_LOC_QP_OP_ERR,
		  "LOCAL_INV of a type 1 window");
	EXPECT_EQ(IBV_QPS_ERR, rc_qp_state(e->p.b.qp));
	new_pair(_metadata, self);
	if (rc_cfg.is_rxe) {
		RC_QUIRK("rxe (6.1) crashes invalidating an unbound type 2 "
			 "window: not tested");
	} else {
		local_inv(_metadata, &e->p.b, m2->rkey, IBV_WC_LOC_QP_OP_ERR,
			  "LOCAL_INV of an unbound type 2 window");
		new_pair(_metadata, self);
	}
	local_inv(_metadata, &e->p.b, e->bb.mr->rkey, IBV_WC_LOC_QP_OP_ERR,
		  "LOCAL_INV of an MR");
	/* The type 1 window still works. */
	new_pair(_metadata, self);
	rw_ok(_metadata, e, WIN_OFF, 100, k1, 900, "type 1 after all that");
}

/*
 * A REG_MR WQE (VRDMA_WR_REG_MR: kernel consumers' fast registration)
 * written straight into a user QP's SQ ring, naming a user MR of its PD
 * and a new key for it: it completes with LOC_QP_OP_ERR, the QP goes to
 * ERR, and the MR keeps its key (user PDs never own fast-reg MRs).
 */
TEST_F(mw, user_reg_mr)
{
	struct rc_env *e = &self->e;
	struct ibv_send_wr wr = {
		.wr_id = 2, .opcode = IBV_WR_SEND,
		.send_flags = IBV_SEND_SIGNALED,
	}, *bad = NULL;
	struct vrdma_send_wqe *w;
	struct vrdma_uring *r;
	uint32_t key;

	if (rc_cfg.is_rxe)
		SKIP(return, "writes vrdma's SQ ring directly");
	env_create(_metadata, self, RC_ACCESS_ALL, MW_BUF);
	key = (e->bb.mr->lkey & ~0xffu) | ((e->bb.mr->lkey + 1) & 0xff);
	r = &to_vqp(e->p.b.qp)->sq.ring;
	w = vrdma_uring_entry(r, r->head);
	memset(w, 0, r->entry_size);
	w->wr_id = 0x7e9;
	w->opcode = VRDMA_WR_REG_MR;
	w->flags = VRDMA_SEND_SIGNALED;
	w->reg.mr_lkey = e->bb.mr->lkey;
	w->reg.key = key;
	w->reg.iova = baddr(e, 0);
	w->reg.length = 4096;
	w->reg.access = IBV_ACCESS_LOCAL_WRITE | MW_RW;
	r->head++;
	vrdma_uring_publish(r);
	/* The doorbell: a SEND posted behind it, flushed. */
	ASSERT_EQ(0, rc_post(&e->p.b, &wr, &bad));
	rc_expect_wc(_metadata, e->p.b.scq, &(struct rc_wc_exp){
		.wr_id = 0x7e9, .status = IBV_WC_LOC_QP_OP_ERR,
		.qp_num = e->p.b.qp->qp_num,
	}, "REG_MR from user space");
	rc_expect_wc(_metadata, e->p.b.scq, &(struct rc_wc_exp){
		.wr_id = 2, .status = IBV_WC_WR_FLUSH_ERR,
		.qp_num = e->p.b.qp->qp_num,
	}, "the SEND behind it");
	EXPECT_EQ(IBV_QPS_ERR, rc_qp_state(e->p.b.qp));

	new_pair(_metadata, self);
	rdma_via(_metadata, e, IBV_WR_RDMA_WRITE, 0, 100, key,
		 IBV_WC_REM_ACCESS_ERR, 910, "the key REG_MR named");
	new_pair(_metadata, self);
	rw_ok(_metadata, e, 0, 100, e->bb.mr->rkey, 911, "the MR's own key");
}

/*
 * SEND_WITH_INV of what the receiver cannot invalidate: a type 1 window, an
 * MR (IBA class J: executed, acknowledged, the receive fails).
 */
TEST_F_TIMEOUT(mw, send_inv_errors, 120)
{
	struct rc_env *e = &self->e;
	struct ibv_mw *m1;
	uint32_t k1;

	env_create(_metadata, self, MW_MR_ACCESS, MW_BUF);
	m1 = mw_alloc(_metadata, self, 0, self->db->pd, IBV_MW_TYPE_1);
	k1 = mw_bind(_metadata, &e->p.b, m1, e->bb.mr, baddr(e, WIN_OFF),
		     WIN_LEN, MW_RW, IBV_WC_SUCCESS, "bind type 1");
	send_inv(_metadata, e, k1, 0, "SEND_WITH_INV of a type 1 window");
	new_pair(_metadata, self);
	send_inv(_metadata, e, e->bb.mr->rkey, 0, "SEND_WITH_INV of an MR");
	new_pair(_metadata, self);
	rw_ok(_metadata, e, WIN_OFF, 100, k1, 950, "type 1 still bound");
}

/*
 * A 4 MiB READ through a window while the window is deallocated: it
 * completes, whole or with a remote access error, and nothing breaks.
 */
TEST_F_TIMEOUT(mw, dealloc_during_read, 120)
{
	struct rc_env *e = &self->e;
	size_t len = 4 << 20;
	struct ibv_sge sge;
	struct ibv_send_wr wr = {
		.wr_id = 0xbead, .sg_list = &sge, .num_sge = 1,
		.opcode = IBV_WR_RDMA_READ, .send_flags = IBV_SEND_SIGNALED,
	}, *bad = NULL;
	struct ibv_wc wc;
	uint32_t k;

	if (rc_cfg.is_rxe)
		SKIP(return, "rxe (6.1) can lose the READ's completion "
		     "(WARN in rxe_completer)");
	env_create(_metadata, self, MW_MR_ACCESS, len + 4096);
	mw_alloc(_metadata, self, 0, self->db->pd, IBV_MW_TYPE_1);
	k = mw_bind(_metadata, &e->p.b, self->mw[0], e->bb.mr, baddr(e, 0),
		    len, MW_RW, IBV_WC_SUCCESS, "bind");
	sge.addr = (uintptr_t)e->ba.p;
	sge.length = len;
	sge.lkey = e->ba.mr->lkey;
	wr.wr.rdma.remote_addr = baddr(e, 0);
	wr.wr.rdma.rkey = k;
	ASSERT_EQ(0, rc_post(&e->p.a, &wr, &bad));
	usleep(2000);
	EXPECT_EQ(0, ibv_dealloc_mw(self->mw[0]));
	self->mw[0] = NULL;
	ASSERT_EQ(1, rc_poll(e->p.a.scq, &wc, 1, 4 * RC_TIMEOUT_MS));
	EXPECT_EQ(0xbead, wc.wr_id);
	EXPECT_TRUE(wc.status == IBV_WC_SUCCESS ||
		    wc.status == IBV_WC_REM_ACCESS_ERR) {
		TH_LOG("status %s", ibv_wc_status_str(wc.status));
	}
	TH_LOG("READ during dealloc: %s", ibv_wc_status_str(wc.status));
	EXPECT_EQ(0, ibv_dereg_mr(e->bb.mr));
	e->bb.mr = NULL;
}

/*
 * The process exits with windows bound (to an MR it never deregisters)
 * and a READ through one running: the kernel cleans up after it (a
 * deregistration refused while windows are bound is retried after them),
 * and vm-run fails the suite on any warning.
 */
TEST_F(mw, exit_bound)
{
	struct rc_env *e = &self->e;
	struct ibv_sge sge;
	struct ibv_send_wr wr = {
		.wr_id = 0xe1, .sg_list = &sge, .num_sge = 1,
		.opcode = IBV_WR_RDMA_READ, .send_flags = IBV_SEND_SIGNALED,
	}, *bad = NULL;
	uint32_t k;

	env_create(_metadata, self, MW_MR_ACCESS, MW_BUF);
	mw_alloc(_metadata, self, 0, self->db->pd, IBV_MW_TYPE_1);
	mw_alloc(_metadata, self, 1, self->db->pd, IBV_MW_TYPE_2);
	k = mw_bind(_metadata, &e->p.b, self->mw[0], e->bb.mr, baddr(e, 0),
		    MW_BUF, MW_RW, IBV_WC_SUCCESS, "bind type 1");
	mw_bind(_metadata, &e->p.b, self->mw[1], e->bb.mr, baddr(e, WIN_OFF),
		WIN_LEN, MW_RW, IBV_WC_SUCCESS, "bind type 2");
	sge.addr = (uintptr_t)e->ba.p;
	sge.length = MW_BUF;
	sge.lkey = e->ba.mr->lkey;
	wr.wr.rdma.remote_addr = baddr(e, 0);
	wr.wr.rdma.rkey = k;
	ASSERT_EQ(0, rc_post(&e->p.a, &wr, &bad));
	/* No teardown: everything is left to the kernel. */
	fflush(stdout);
	_exit(_metadata->passed ? 0 : 1);
}

/* ---- ibv_rereg_mr ------------------------------------------------------------ */

/* 0, or skip the test where the device has no rereg_mr (rxe). */
static int rereg(struct __test_metadata *_metadata, struct ibv_mr *mr,
		 int flags, struct ibv_pd *pd, void *addr, size_t len,
		 int access)
{
	int ret;

	errno = 0;
	ret = ibv_rereg_mr(mr, flags, pd, addr, len, access);
	if (ret && errno == EOPNOTSUPP && rc_cfg.is_rxe)
		return -EOPNOTSUPP;
	return ret ? -errno : 0;
}

#define REREG_OR_SKIP(_mr, _flags, _pd, _addr, _len, _access) do { \
	int __r = rereg(_metadata, (_mr), (_flags), (_pd), (_addr), \
			(_len), (_access)); \
	if (__r == -EOPNOTSUPP) \
		SKIP(return, "rxe has no rereg_mr"); \
	ASSERT_EQ(0, __r) { \
		TH_LOG("ibv_rereg_mr(%#x): %s", (_flags), strerror(-__r)); \
	} \
} while (0)

/* New rights take effect at once, with the same keys. */
TEST_F(mw, rereg_access)
{
	struct rc_env *e = &self->e;
	uint32_t lkey, rkey;

	env_create(_metadata, self, RC_ACCESS_ALL, MW_BUF);
	lkey = e->bb.mr->lkey;
	rkey = e->bb.mr->rkey;
	rw_ok(_metadata, e, 100, 3000, rkey, 1000, "before");
	REREG_OR_SKIP(e->bb.mr, IBV_REREG_MR_CHANGE_ACCESS, NULL, NULL, 0,
		      IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_READ);
	EXPECT_EQ(lkey, e->bb.mr->lkey);
	EXPECT_EQ(rkey, e->bb.mr->rkey);
	rdma_via(_metadata, e, IBV_WR_RDMA_READ, 100, 3000, rkey,
		 IBV_WC_SUCCESS, 1001, "READ, now read-only");
	rdma_via(_metadata, e, IBV_WR_RDMA_WRITE, 100, 3000, rkey,
		 IBV_WC_REM_ACCESS_ERR, 1002, "WRITE, now read-only");
	new_pair(_metadata, self);
	REREG_OR_SKIP(e->bb.mr, IBV_REREG_MR_CHANGE_ACCESS, NULL, NULL, 0,
		      RC_ACCESS_ALL);
	rw_ok(_metadata, e, 100, 3000, e->bb.mr->rkey, 1003, "writable again");
}

/*
 * Both QPs through RESET and back to RTS, as after an error.  The
 * completions they made before are gone from their CQs (flushed receives
 * here): the QP starts afresh.
 */
static void restate_pair(struct __test_metadata *_metadata, struct rc_env *e)
{
	struct ibv_qp_attr qa = { .qp_state = IBV_QPS_RESET };

	ASSERT_EQ(0, ibv_modify_qp(e->p.a.qp, &qa, IBV_QP_STATE));
	ASSERT_EQ(0, ibv_modify_qp(e->p.b.qp, &qa, IBV_QP_STATE));
	EXPECT_CQ_EMPTY(e->p.a.rcq, "A's receive CQ after RESET");
	EXPECT_CQ_EMPTY(e->p.b.rcq, "B's receive CQ after RESET");
	EXPECT_CQ_EMPTY(e->p.a.scq, "A's send CQ after RESET");
	e->p.a.sq_psn = e->p.b.rq_psn = 0x777;
	e->p.b.sq_psn = e->p.a.rq_psn = 0x888;
	rc_qp_connect(_metadata, &e->p.a, &e->p.b, e->p.o.access);
	rc_qp_connect(_metadata, &e->p.b, &e->p.a, e->p.o.access);
}

/*
 * Another PD: not usable by B's QP until it is back (the flow of pyverbs'
 * test_mr_rereg_pd, which reuses its QPs after the error).
 */
TEST_F(mw, rereg_pd)
{
	struct rc_env *e = &self->e;
	struct ibv_pd *pd2;
	int r;

	env_create(_metadata, self, RC_ACCESS_ALL, MW_BUF);
	pd2 = ibv_alloc_pd(self->db->ctx);
	ASSERT_NE(NULL, pd2);
	r = rereg(_metadata, e->bb.mr, IBV_REREG_MR_CHANGE_PD, pd2, NULL, 0, 0);
	if (r == -EOPNOTSUPP) {
		ibv_dealloc_pd(pd2);
		SKIP(return, "rxe has no rereg_mr");
	}
	ASSERT_EQ(0, r);
	EXPECT_EQ(pd2, e->bb.mr->pd);
	/* Receives on both sides, to be flushed by the error. */
	ASSERT_EQ(0, rc_post_recv(&e->p.a, 0x11, &e->ba, 0, 64));
	ASSERT_EQ(0, rc_post_recv(&e->p.b, 0x12, &e->bb, 64, 64));
	rdma_via(_metadata, e, IBV_WR_RDMA_WRITE, 0, 100, e->bb.mr->rkey,
		 IBV_WC_REM_ACCESS_ERR, 1100, "WRITE, MR in another PD");
	restate_pair(_metadata, e);
	REREG_OR_SKIP(e->bb.mr, IBV_REREG_MR_CHANGE_PD, self->db->pd, NULL, 0,
		      0);
	rw_ok(_metadata, e, 0, 100, e->bb.mr->rkey, 1101, "back in its PD");
	/* A PD an MR was moved out of can go; the one it is in cannot. */
	EXPECT_EQ(0, ibv_dealloc_pd(pd2));
}

/*
 * A new translation: new keys for the new memory; the old keys refused and
 * the old memory untouched.
 */
TEST_F(mw, rereg_translation)
{
	struct rc_env *e = &self->e;
	size_t len = 3 * 4096 + 123;
	uint8_t *nb, *old_img;
	uint32_t old_rkey;

	env_create(_metadata, self, RC_ACCESS_ALL, MW_BUF);
	nb = mmap(NULL, len, PROT_READ | PROT_WRITE,
		  MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	ASSERT_NE(MAP_FAILED, nb);
	old_rkey = e->bb.mr->rkey;
	{
		int r = rereg(_metadata, e->bb.mr,
			      IBV_REREG_MR_CHANGE_TRANSLATION, NULL, nb + 5,
			      len - 5, 0);

		if (r == -EOPNOTSUPP) {
			munmap(nb, len);
			SKIP(return, "rxe has no rereg_mr");
		}
		ASSERT_EQ(0, r);
	}
	EXPECT_EQ(nb + 5, e->bb.mr->addr);
	EXPECT_EQ(len - 5, e->bb.mr->length);
	EXPECT_NE(old_rkey, e->bb.mr->rkey);
	old_img = malloc(e->bb.size);
	ASSERT_NE(NULL, old_img);
	memcpy(old_img, e->bb.p, e->bb.size);

	/* Through the new key into the new memory, all of it. */
	rc_fill(e->ba.p, len - 5, 1200, 0);
	{
		struct ibv_sge sge = {
			.addr = (uintptr_t)e->ba.p, .length = len - 5,
			.lkey = e->ba.mr->lkey,
		};
		struct ibv_send_wr wr = {
			.wr_id = 0x7e, .sg_list = &sge, .num_sge = 1,
			.opcode = IBV_WR_RDMA_WRITE,
			.send_flags = IBV_SEND_SIGNALED,
		}, *bad = NULL;

		wr.wr.rdma.remote_addr = (uintptr_t)nb + 5;
		wr.wr.rdma.rkey = e->bb.mr->rkey;
		ASSERT_EQ(0, rc_post(&e->p.a, &wr, &bad));
		rc_expect_wc(_metadata, e->p.a.scq, &(struct rc_wc_exp){
			.wr_id = 0x7e, .status = IBV_WC_SUCCESS,
			.opcode = IBV_WC_RDMA_WRITE,
			.qp_num = e->p.a.qp->qp_num,
		}, "WRITE into the new memory");
		EXPECT_SAME_BYTES(nb + 5, e->ba.p, len - 5, "new memory");
	}
	EXPECT_SAME_BYTES(e->bb.p, old_img, e->bb.size, "old memory");
	/* The old key, at the old address. */
	rdma_via(_metadata, e, IBV_WR_RDMA_WRITE, 0, 100, old_rkey,
		 IBV_WC_REM_ACCESS_ERR, 1201, "the key before the rereg");
	free(old_img);
	/* Put the old memory back before the teardown deregisters. */
	new_pair(_metadata, self);
	REREG_OR_SKIP(e->bb.mr, IBV_REREG_MR_CHANGE_TRANSLATION, NULL,
		      e->bb.p, e->bb.size, 0);
	rw_ok(_metadata, e, 7, 5000, e->bb.mr->rkey, 1202, "the old memory");
	munmap(nb, len);
}

/* Refused while a window is bound to the MR; fine after. */
TEST_F(mw, rereg_busy)
{
	struct rc_env *e = &self->e;
	int r;

	env_create(_metadata, self, MW_MR_ACCESS, MW_BUF);
	mw_alloc(_metadata, self, 0, self->db->pd, IBV_MW_TYPE_1);
	mw_bind(_metadata, &e->p.b, self->mw[0], e->bb.mr, baddr(e, WIN_OFF),
		WIN_LEN, MW_RW, IBV_WC_SUCCESS, "bind");
	r = rereg(_metadata, e->bb.mr, IBV_REREG_MR_CHANGE_ACCESS, NULL, NULL,
		  0, MW_MR_ACCESS | IBV_ACCESS_REMOTE_READ);
	if (r == -EOPNOTSUPP)
		SKIP(return, "rxe has no rereg_mr");
	EXPECT_EQ(-EBUSY, r);
	mw_bind(_metadata, &e->p.b, self->mw[0], e->bb.mr, baddr(e, WIN_OFF),
		0, 0, IBV_WC_SUCCESS, "unbind");
	REREG_OR_SKIP(e->bb.mr, IBV_REREG_MR_CHANGE_ACCESS, NULL, NULL, 0,
		      MW_MR_ACCESS | IBV_ACCESS_REMOTE_READ);
	rdma_via(_metadata, e, IBV_WR_RDMA_READ, 0, 100, e->bb.mr->rkey,
		 IBV_WC_SUCCESS, 1300, "READ after the rereg");
}

/*
 * Write rights for an MR registered read-only: its pages are pinned again,
 * for writing (a new MR, maybe with new keys), and WRITEs land.
 */
TEST_F(mw, rereg_add_write)
{
	struct rc_env *e = &self->e;

	env_create(_metadata, self, IBV_ACCESS_REMOTE_READ, MW_BUF);
	rdma_via(_metadata, e, IBV_WR_RDMA_WRITE, 100, 3000, e->bb.mr->rkey,
		 IBV_WC_REM_ACCESS_ERR, 1500, "WRITE, read-only");
	new_pair(_metadata, self);
	REREG_OR_SKIP(e->bb.mr, IBV_REREG_MR_CHANGE_ACCESS, NULL, NULL, 0,
		      RC_ACCESS_ALL);
	rw_ok(_metadata, e, 100, 3000, e->bb.mr->rkey, 1501, "now writable");
	rw_ok(_metadata, e, MW_BUF - 5000, 5000, e->bb.mr->rkey, 1502,
	      "its last bytes");
}

/* READ @len bytes of @mr at @p into A's buffer: the completion status. */
static enum ibv_wc_status read_into_a(struct __test_metadata *_metadata,
				      struct rc_env *e, struct ibv_mr *mr,
				      const uint8_t *p, size_t len)
{
	struct ibv_sge sge = {
		.addr = (uintptr_t)e->ba.p, .length = len,
		.lkey = e->ba.mr->lkey,
	};
	struct ibv_send_wr wr = {
		.wr_id = 0x4ead, .sg_list = &sge, .num_sge = 1,
		.opcode = IBV_WR_RDMA_READ, .send_flags = IBV_SEND_SIGNALED,
	}, *bad = NULL;
	struct ibv_wc wc;

	memset(e->ba.p, 0xee, len);
	wr.wr.rdma.remote_addr = (uintptr_t)p;
	wr.wr.rdma.rkey = mr->rkey;
	if (rc_post(&e->p.a, &wr, &bad) ||
	    rc_poll(e->p.a.scq, &wc, 1, RC_TIMEOUT_MS) != 1)
		return IBV_WC_GENERAL_ERR;
	EXPECT_EQ(0x4ead, wc.wr_id);
	return wc.status;
}

/*
 * Write rights for an MR of a read-only file mapping are refused: the
 * process may not write that memory, so neither may a peer.  The MR stays
 * as it was, READs work, the file is untouched.
 */
TEST_F(mw, rereg_write_readonly_file)
{
	struct rc_env *e = &self->e;
	char path[] = "/tmp/vrdma_mw_ro_XXXXXX";
	size_t len = 3 * 4096;
	uint8_t *want, *p, *now;
	struct ibv_mr *mr;
	int fd, r;

	env_create(_metadata, self, RC_ACCESS_ALL, MW_BUF);
	want = malloc(len);
	now = malloc(len);
	ASSERT_TRUE(want && now);
	rc_fill(want, len, 1600, 0);
	fd = mkstemp(path);
	ASSERT_LE(0, fd);
	unlink(path);
	ASSERT_EQ((ssize_t)len, write(fd, want, len));
	p = mmap(NULL, len, PROT_READ, MAP_PRIVATE, fd, 0);
	ASSERT_NE(MAP_FAILED, p);
	mr = ibv_reg_mr(self->db->pd, p, len, IBV_ACCESS_REMOTE_READ);
	ASSERT_NE(NULL, mr) {
		TH_LOG("ibv_reg_mr of the mapping: %s", strerror(errno));
	}
	ASSERT_EQ(IBV_WC_SUCCESS, read_into_a(_metadata, e, mr, p, len));
	EXPECT_SAME_BYTES(e->ba.p, want, len, "READ of the file");

	r = rereg(_metadata, mr, IBV_REREG_MR_CHANGE_ACCESS, NULL, NULL, 0,
		  RC_ACCESS_ALL);
	if (r == -EOPNOTSUPP) {
		ibv_dereg_mr(mr);
		SKIP(return, "rxe has no rereg_mr");
	}
	EXPECT_NE(0, r) {
		TH_LOG("write rights to a read-only mapping were granted");
	}
	TH_LOG("rereg for writing: %s", strerror(-r));
	EXPECT_EQ(IBV_WC_SUCCESS, read_into_a(_metadata, e, mr, p, len)) {
		TH_LOG("READ after the refused rereg");
	}
	EXPECT_SAME_BYTES(e->ba.p, want, len, "READ after the refused rereg");
	EXPECT_EQ(0, ibv_dereg_mr(mr));
	ASSERT_EQ((ssize_t)len, pread(fd, now, len, 0));
	EXPECT_SAME_BYTES(now, want, len, "the file");
	munmap(p, len);
	close(fd);
	free(want);
	free(now);
}

/*
 * A new translation while a 4 MiB READ of the MR runs: the READ completes,
 * whole or with a remote access error; the new key works.
 */
TEST_F_TIMEOUT(mw, rereg_during_read, 120)
{
	struct rc_env *e = &self->e;
	size_t len = 4 << 20;
	struct ibv_sge sge;
	struct ibv_send_wr wr = {
		.wr_id = 0xbeef, .sg_list = &sge, .num_sge = 1,
		.opcode = IBV_WR_RDMA_READ, .send_flags = IBV_SEND_SIGNALED,
	}, *bad = NULL;
	struct ibv_wc wc;
	uint8_t *nb;
	int r;

	env_create(_metadata, self, RC_ACCESS_ALL, len);
	nb = mmap(NULL, MW_BUF, PROT_READ | PROT_WRITE,
		  MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	ASSERT_NE(MAP_FAILED, nb);
	sge.addr = (uintptr_t)e->ba.p;
	sge.length = len;
	sge.lkey = e->ba.mr->lkey;
	wr.wr.rdma.remote_addr = baddr(e, 0);
	wr.wr.rdma.rkey = e->bb.mr->rkey;
	ASSERT_EQ(0, rc_post(&e->p.a, &wr, &bad));
	usleep(2000);
	r = rereg(_metadata, e->bb.mr, IBV_REREG_MR_CHANGE_TRANSLATION, NULL,
		  nb, MW_BUF, 0);
	ASSERT_EQ(1, rc_poll(e->p.a.scq, &wc, 1, 4 * RC_TIMEOUT_MS));
	EXPECT_EQ(0xbeef, wc.wr_id);
	if (r == -EOPNOTSUPP) {
		munmap(nb, MW_BUF);
		SKIP(return, "rxe has no rereg_mr");
	}
	ASSERT_EQ(0, r);
	EXPECT_TRUE(wc.status == IBV_WC_SUCCESS ||
		    wc.status == IBV_WC_REM_ACCESS_ERR) {
		TH_LOG("status %s", ibv_wc_status_str(wc.status));
	}
	TH_LOG("READ during rereg: %s", ibv_wc_status_str(wc.status));
	if (wc.status != IBV_WC_SUCCESS)
		new_pair(_metadata, self);
	{
		struct rc_env e2 = *e;

		/* rdma_via() addresses B's buffer: point it at the new one. */
		e2.bb.p = nb;
		e2.bb.size = MW_BUF;
		rw_ok(_metadata, &e2, 10, 1000, e->bb.mr->rkey, 1400,
		      "the new key");
	}
	REREG_OR_SKIP(e->bb.mr, IBV_REREG_MR_CHANGE_TRANSLATION, NULL,
		      e->bb.p, e->bb.size, 0);
	munmap(nb, MW_BUF);
}

int main(int argc, char **argv)
{
	return rc_suite_main(argc, argv);
}
