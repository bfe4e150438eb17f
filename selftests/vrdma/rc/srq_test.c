// SPDX-License-Identifier: GPL-2.0
/*
 * Shared receive queues through the standard verbs API: several RC QPs
 * receiving through one SRQ, the SRQ limit event, RNR on an empty SRQ, a
 * QP on an SRQ going to the error state (IBV_EVENT_QP_LAST_WQE_REACHED,
 * the SRQ's WQEs left to the other QPs), bad WQEs (too many SGEs, bad
 * lkey, and, on vrdma, garbage written straight into the ring), the SRQ's
 * attributes, resizing it (ibv_modify_srq with IBV_SRQ_MAX_WR, also while
 * messages arrive) and the order of destruction.
 *
 * Each test builds "connections": a sender QP on device A connected to a
 * receiver QP on device B that receives through the SRQ. Which WQE a
 * message lands in is the SRQ's choice, so the check goes the other way:
 * each receive CQE names its WQE (wr_id) and its QP (qp_num); messages of
 * one connection complete in order, so the CQE tells which message it was,
 * and that message's bytes must be in that WQE's buffers. Every byte of
 * the receive buffer is compared with an image kept by the test, so WQEs
 * nobody should have used must be untouched too.
 *
 * Variants, device types (VRDMA_TEST_TYPE) and the suite setup are those
 * of rc_test.c (rc_suite.h). rdma_rxe (Linux 6.1) raises no
 * IBV_EVENT_QP_LAST_WQE_REACHED; that is accepted on rxe only, as a quirk.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <infiniband/verbs.h>

#include "ko_lib.h"
#include "rc_lib.h"
#include "rc_suite.h"
/* The provider's own header: the hostile tests write into the SRQ ring. */
#include "vrdma.h"

#define SRQ_CONNS	4	/* connections at most */
#define SRQ_MSGS	16	/* messages per connection at most */

/* One message a sender posted, to match with its receive completion. */
struct srq_msg {
	enum ibv_wr_opcode op;
	uint32_t len;
	uint32_t seed;
	uint32_t imm;
};

/* A sender on device A connected to a receiver on B that uses the SRQ. */
struct srq_conn {
	struct rc_qp s, r;
	struct srq_msg msg[SRQ_MSGS];
	int sent, done;		/* messages posted, and completed both sides */
};

FIXTURE(srq) {
	struct rc_dev d0, d1;
	struct rc_dev *da, *db;
	struct ibv_srq *srq;
	struct ibv_srq_attr attr;	/* granted */
	struct srq_conn c[SRQ_CONNS];
	int nconn;
	struct rc_buf sb, rb;		/* send sources on A, receives on B */
	uint8_t *img;			/* what rb must hold */
	size_t slot;			/* bytes of rb per WQE, and of sb per message */
	size_t cap;			/* bytes a WQE can take */
	int mtu;
	uint64_t next_wr_id;		/* of the next WQE posted to the SRQ */
};

RC_ENDS_VARIANTS(srq);

#define SRQ_WQES	(SRQ_CONNS * SRQ_MSGS + 16)	/* slots in rb */

FIXTURE_SETUP(srq)
{
	rc_ends_open(_metadata, &self->d0, &self->d1, &self->da, &self->db,
		     variant->two_devices);
}

/* Receivers before the SRQ: ib_core refuses to destroy an SRQ in use. */
FIXTURE_TEARDOWN(srq)
{
	int i;

	for (i = 0; i < self->nconn; i++) {
		rc_qp_destroy(&self->c[i].r);
		rc_qp_destroy(&self->c[i].s);
	}
	if (self->srq)
		EXPECT_EQ(0, ibv_destroy_srq(self->srq));
	rc_buf_free(&self->sb);
	rc_buf_free(&self->rb);
	free(self->img);
	rc_dev_close(&self->d1);
	rc_dev_close(&self->d0);
}

static struct ibv_srq *srq_create(struct __test_metadata *_metadata,
				  struct rc_dev *d, uint32_t max_wr,
				  uint32_t max_sge, struct ibv_srq_attr *granted)
{
	struct ibv_srq_init_attr ia;
	struct ibv_srq *srq;

	memset(&ia, 0, sizeof(ia));
	ia.attr.max_wr = max_wr;
	ia.attr.max_sge = max_sge;
	srq = ibv_create_srq(d->pd, &ia);
	EXPECT_NE(NULL, srq) {
		TH_LOG("ibv_create_srq(%u, %u): %s", max_wr, max_sge,
		       strerror(errno));
	}
	if (srq) {
		EXPECT_LE(max_wr, ia.attr.max_wr);
		EXPECT_LE(max_sge, ia.attr.max_sge);
	}
	if (granted)
		*granted = ia.attr;
	return srq;
}

/*
 * The SRQ on B (@max_wr WQEs of @max_sge SGEs), @nconn connections and the
 * buffers; rb is filled with a background pattern that the image copies.
 */
static void srq_env(struct __test_metadata *_metadata, FIXTURE_DATA(srq) *self,
		    uint32_t max_wr, uint32_t max_sge, int nconn)
{
	struct rc_opts so, ro;
	int i;

	ASSERT_LE(nconn, SRQ_CONNS);
	self->mtu = 128 << self->db->port.active_mtu;
	if (self->da->port.active_mtu < self->db->port.active_mtu)
		self->mtu = 128 << self->da->port.active_mtu;
	self->cap = 4 * self->mtu;
	self->slot = self->cap + 64;
	self->srq = srq_create(_metadata, self->db, max_wr, max_sge,
			       &self->attr);
	ASSERT_NE(NULL, self->srq);

	for (i = 0; i < nconn; i++) {
		struct srq_conn *c = &self->c[i];

		memset(&so, 0, sizeof(so));
		memset(&ro, 0, sizeof(ro));
		so.max_send_sge = ro.max_send_sge = 1;
		so.max_recv_sge = ro.max_recv_sge = 1;
		ro.srq = self->srq;
		rc_opts_default(&so, self->da);
		rc_opts_default(&ro, self->db);
		rc_qp_create(_metadata, &c->s, self->da, &so);
		self->nconn = i + 1;
		rc_qp_create(_metadata, &c->r, self->db, &ro);
		/* Different PSNs per connection, the first ones near the wrap. */
		c->s.sq_psn = c->r.rq_psn = 0xfffff8 - 5 * i;
		c->r.sq_psn = c->s.rq_psn = 0x2000 + 77 * i;
		rc_qp_connect(_metadata, &c->s, &c->r, so.access);
		rc_qp_connect(_metadata, &c->r, &c->s, ro.access);
	}

	rc_buf_alloc(_metadata, &self->sb, self->da->pd,
		     SRQ_CONNS * SRQ_MSGS * self->slot, RC_ACCESS_ALL);
	rc_buf_alloc(_metadata, &self->rb, self->db->pd,
		     SRQ_WQES * self->slot, RC_ACCESS_ALL);
	rc_fill(self->rb.p, self->rb.size, 0xb6, 0);
	self->img = malloc(self->rb.size);
	ASSERT_NE(NULL, self->img);
	memcpy(self->img, self->rb.p, self->rb.size);
}

/* WQE @wr_id's two receive segments, uneven and apart, in its slot of rb. */
static void wqe_sgl(FIXTURE_DATA(srq) *self, uint64_t wr_id, struct rc_sgl *g)
{
	rc_sgl_layout(g, wr_id * self->slot + 1, self->cap, 2,
		      (uint32_t)wr_id + 7);
}

static int srq_post_sgl(struct ibv_srq *srq, uint64_t wr_id,
			struct ibv_sge *sge, int n)
{
	struct ibv_recv_wr wr = {
		.wr_id = wr_id, .sg_list = n ? sge : NULL, .num_sge = n,
	};
	struct ibv_recv_wr *bad = NULL;
	int ret = ibv_post_srq_recv(srq, &wr, &bad);

	if (ret && bad != &wr)
		return -1;
	return ret;
}

/* Post @n WQEs with the next wr_ids, each into its own slot of rb. */
static void srq_post(struct __test_metadata *_metadata,
		     FIXTURE_DATA(srq) *self, int n)
{
	struct ibv_sge sge[2];
	struct rc_sgl g;
	uint64_t w;

	for (; n > 0; n--) {
		w = self->next_wr_id++;
		ASSERT_LT(w, SRQ_WQES);
		wqe_sgl(self, w, &g);
		ASSERT_LE(g.end, (w + 1) * self->slot);
		rc_sgl_to_ibv(&g, sge, self->rb.p, self->rb.mr->lkey);
		ASSERT_EQ(0, srq_post_sgl(self->srq, w, sge, g.n)) {
			TH_LOG("ibv_post_srq_recv of WQE %llu",
			       (unsigned long long)w);
		}
	}
}

/*
 * Connection @ci posts @n messages: uneven lengths up to 3 MTUs and a bit
 * (multi-packet, so that QPs hold WQEs across packets while others take
 * theirs), one of them empty, SEND and SEND with immediate in turn.
 */
static void srq_send(struct __test_metadata *_metadata,
		     FIXTURE_DATA(srq) *self, int ci, int n)
{
	struct srq_conn *c = &self->c[ci];
	struct ibv_send_wr wr, *bad;
	struct ibv_sge sge;
	struct srq_msg *m;
	int k, ret;

	for (; n > 0; n--) {
		k = c->sent;
		ASSERT_LT(k, SRQ_MSGS);
		m = &c->msg[k];
		m->seed = 0x5000 + ci * 0x100 + k;
		m->len = (ci == 1 && k == 2) ? 0 :
			 1 + (ci * 977 + k * 1409) % (3 * self->mtu + 123);
		m->op = (k & 1) ? IBV_WR_SEND_WITH_IMM : IBV_WR_SEND;
		m->imm = 0xc0de0000 | ci << 8 | k;

		sge.addr = (uintptr_t)self->sb.p +
			   (ci * SRQ_MSGS + k) * self->slot;
		sge.length = m->len;
		sge.lkey = self->sb.mr->lkey;
		rc_fill((uint8_t *)(uintptr_t)sge.addr, m->len, m->seed, 0);
		memset(&wr, 0, sizeof(wr));
		wr.wr_id = k;
		wr.sg_list = &sge;
		wr.num_sge = 1;
		wr.opcode = m->op;
		wr.send_flags = IBV_SEND_SIGNALED;
		wr.imm_data = htobe32(m->imm);
		bad = NULL;
		ret = ibv_post_send(c->s.qp, &wr, &bad);
		ASSERT_EQ(0, ret) {
			TH_LOG("conn %d message %d: ibv_post_send: %s", ci, k,
			       strerror(ret));
		}
		c->sent++;
	}
}

/*
 * The next @n messages of connection @ci complete on both sides; each
 * receive completion's WQE is recorded in @wr_ids (if not NULL) and its
 * bytes go into the image.
 */
static void srq_expect(struct __test_metadata *_metadata,
		       FIXTURE_DATA(srq) *self, int ci, int n,
		       uint64_t *wr_ids)
{
	struct srq_conn *c = &self->c[ci];
	struct ibv_wc wc;
	struct rc_sgl g;
	struct srq_msg *m;
	char what[64];
	int k, i;

	for (i = 0; i < n; i++) {
		k = c->done;
		ASSERT_LT(k, c->sent);
		m = &c->msg[k];
		snprintf(what, sizeof(what), "conn %d message %d (%u bytes)",
			 ci, k, m->len);
		rc_expect_wc(_metadata, c->s.scq, &(struct rc_wc_exp){
			.wr_id = k, .status = IBV_WC_SUCCESS,
			.opcode = IBV_WC_SEND, .qp_num = c->s.qp->qp_num,
		}, what);
		memset(&wc, 0, sizeof(wc));
		ASSERT_EQ(1, rc_poll(c->r.rcq, &wc, 1, RC_TIMEOUT_MS)) {
			TH_LOG("%s: no receive completion", what);
		}
		/* Any WQE of the SRQ, but one that was posted. */
		ASSERT_LT(wc.wr_id, self->next_wr_id) {
			TH_LOG("%s: wr_id %llu was never posted", what,
			       (unsigned long long)wc.wr_id);
		}
		rc_wc_check(_metadata, &wc, &(struct rc_wc_exp){
			.wr_id = wc.wr_id, .status = IBV_WC_SUCCESS,
			.opcode = IBV_WC_RECV, .recv = 1, .byte_len = m->len,
			.imm = m->op == IBV_WR_SEND_WITH_IMM,
			.imm_data = htobe32(m->imm), .qp_num = c->r.qp->qp_num,
		}, what);
		wqe_sgl(self, wc.wr_id, &g);
		rc_sgl_expect(&g, self->img, m->len, m->seed);
		if (wr_ids)
			wr_ids[i] = wc.wr_id;
		c->done++;
	}
}

/* Every byte of the receive buffer is what the image says. */
static void srq_check_bytes(struct __test_metadata *_metadata,
			    FIXTURE_DATA(srq) *self, const char *what)
{
	EXPECT_SAME_BYTES(self->rb.p, self->img, self->rb.size, what);
}

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

/* @n wr_ids are exactly @first .. @first + n - 1, in any order. */
static void expect_wr_ids(struct __test_metadata *_metadata, uint64_t *ids,
			  int n, uint64_t first, const char *what)
{
	int i;

	qsort(ids, n, sizeof(*ids), cmp_u64);
	for (i = 0; i < n && ids[i] == first + i; i++)
		;
	EXPECT_EQ(n, i) {
		TH_LOG("%s: WQE %llu unused or used twice", what,
		       (unsigned long long)(first + i));
	}
}

static enum ibv_qp_state qp_state(struct srq_conn *c)
{
	return rc_qp_state(c->r.qp);
}

/* No async event of @type on @ctx for a while; others are logged. */
static int async_quiet(struct __test_metadata *_metadata,
		       struct ibv_context *ctx, enum ibv_event_type type)
{
	struct ibv_async_event ev;

	return !rc_wait_async(_metadata, ctx, type, &ev,
			      RC_QUIET_MS * rc_cfg.slow);
}

static int async_wait(struct __test_metadata *_metadata,
		      struct ibv_context *ctx, enum ibv_event_type type,
		      struct ibv_async_event *ev)
{
	return rc_wait_async(_metadata, ctx, type, ev,
			     RC_TIMEOUT_MS * rc_cfg.slow);
}

/* The receiver of connection @ci announces it takes no more WQEs. */
static void expect_last_wqe(struct __test_metadata *_metadata,
			    FIXTURE_DATA(srq) *self, int ci)
{
	struct ibv_async_event ev;
	int got = async_wait(_metadata, self->db->ctx,
			     IBV_EVENT_QP_LAST_WQE_REACHED, &ev);

	if (!got && rc_cfg.is_rxe) {
		RC_QUIRK("no IBV_EVENT_QP_LAST_WQE_REACHED");
		return;
	}
	EXPECT_TRUE(got) {
		TH_LOG("no IBV_EVENT_QP_LAST_WQE_REACHED");
	}
	if (got)
		EXPECT_EQ(self->c[ci].r.qp, ev.element.qp);
}

/* ---- attributes ------------------------------------------------------ */

/*
 * Device limits, what create_srq grants and query_srq reports, modify_srq
 * of the limit, refused sizes, a QP on the SRQ, and destruction order.
 */
TEST_F(srq, attributes)
{
	struct ibv_device_attr *da = &self->db->attr;
	struct ibv_srq_attr sa, got;
	struct ibv_qp_init_attr qia;
	struct ibv_srq_init_attr ia;
	struct ibv_sge sge = { 0 };
	struct ibv_qp_attr qa;
	struct ibv_srq *big;
	struct rc_opts ro;
	struct rc_qp q;

	EXPECT_LE(1, da->max_srq);
	EXPECT_LE(64, da->max_srq_wr);
	EXPECT_LE(2, da->max_srq_sge);

	self->srq = srq_create(_metadata, self->db, 100, 3, &sa);
	ASSERT_NE(NULL, self->srq);
	EXPECT_GE(da->max_srq_wr, sa.max_wr);
	EXPECT_GE(da->max_srq_sge, sa.max_sge);
	memset(&got, 0xff, sizeof(got));
	ASSERT_EQ(0, ibv_query_srq(self->srq, &got));
	if (rc_cfg.is_rxe && got.max_wr > sa.max_wr)
		RC_QUIRK("query_srq max_wr %u, create_srq granted %u",
			 got.max_wr, sa.max_wr);
	else
		EXPECT_EQ(sa.max_wr, got.max_wr);
	EXPECT_EQ(sa.max_sge, got.max_sge);
	EXPECT_EQ(0, got.srq_limit);

	/* Arm, change and disarm the limit. */
	memset(&sa, 0, sizeof(sa));
	sa.srq_limit = 10;
	ASSERT_EQ(0, ibv_modify_srq(self->srq, &sa, IBV_SRQ_LIMIT));
	ASSERT_EQ(0, ibv_query_srq(self->srq, &got));
	EXPECT_EQ(10, got.srq_limit);
	sa.srq_limit = 0;
	ASSERT_EQ(0, ibv_modify_srq(self->srq, &sa, IBV_SRQ_LIMIT));
	ASSERT_EQ(0, ibv_query_srq(self->srq, &got));
	EXPECT_EQ(0, got.srq_limit);
	/* A limit beyond any SRQ is refused and changes nothing. */
	sa.srq_limit = da->max_srq_wr + 1;
	EXPECT_NE(0, ibv_modify_srq(self->srq, &sa, IBV_SRQ_LIMIT));
	ASSERT_EQ(0, ibv_query_srq(self->srq, &got));
	EXPECT_EQ(0, got.srq_limit);

	/* A device that does not claim SRQ resizing refuses it. */
	if (!(da->device_cap_flags & IBV_DEVICE_SRQ_RESIZE)) {
		sa.max_wr = 2 * got.max_wr;
		EXPECT_NE(0, ibv_modify_srq(self->srq, &sa, IBV_SRQ_MAX_WR));
		sa.max_wr = got.max_wr;
		ASSERT_EQ(0, ibv_query_srq(self->srq, &got));
		EXPECT_EQ(sa.max_wr, got.max_wr);
	}

	/* Sizes beyond the device's. */
	memset(&ia, 0, sizeof(ia));
	ia.attr.max_wr = da->max_srq_wr + 1;
	ia.attr.max_sge = 1;
	big = ibv_create_srq(self->db->pd, &ia);
	EXPECT_EQ(NULL, big);
	if (big)
		ibv_destroy_srq(big);
	ia.attr.max_wr = 4;
	ia.attr.max_sge = da->max_srq_sge + 1;
	big = ibv_create_srq(self->db->pd, &ia);
	EXPECT_EQ(NULL, big);
	if (big)
		ibv_destroy_srq(big);

	/* A QP on the SRQ: it has no receive queue of its own. */
	memset(&ro, 0, sizeof(ro));
	ro.srq = self->srq;
	rc_opts_default(&ro, self->db);
	rc_qp_create(_metadata, &q, self->db, &ro);
	memset(&qia, 0, sizeof(qia));
	ASSERT_EQ(0, ibv_query_qp(q.qp, &qa, IBV_QP_CAP, &qia));
	EXPECT_EQ(self->srq, qia.srq);
	ASSERT_EQ(0, rc_to_init(&q, IBV_ACCESS_REMOTE_WRITE));
	EXPECT_NE(0, rc_post_recv_sgl(&q, 1, &sge, 1)) {
		TH_LOG("ibv_post_recv on a QP with an SRQ");
	}

	/* The SRQ outlives its QPs: refused while one uses it. */
	EXPECT_EQ(EBUSY, ibv_destroy_srq(self->srq));
	ASSERT_EQ(0, ibv_query_srq(self->srq, &got));
	rc_qp_destroy(&q);
	EXPECT_EQ(0, ibv_destroy_srq(self->srq));
	self->srq = NULL;
}

/* ibv_modify_srq(IBV_SRQ_MAX_WR): 0 or an errno. */
static int srq_set_max_wr(FIXTURE_DATA(srq) *self, uint32_t max_wr)
{
	struct ibv_srq_attr sa = { .max_wr = max_wr };

	return ibv_modify_srq(self->srq, &sa, IBV_SRQ_MAX_WR);
}

static uint32_t srq_max_wr(struct __test_metadata *_metadata,
			   FIXTURE_DATA(srq) *self)
{
	struct ibv_srq_attr got;

	memset(&got, 0, sizeof(got));
	EXPECT_EQ(0, ibv_query_srq(self->srq, &got));
	return got.max_wr;
}

/*
 * A resize to @max_wr with @pending WQEs not used yet: one that succeeds
 * holds them and @max_wr, one that fails leaves the size as it was.  A
 * device may grant more than asked, so whether a size too small for
 * @pending is refused depends on its rounding; vrdma's is a power of two.
 */
static void srq_resize_check(struct __test_metadata *_metadata,
			     FIXTURE_DATA(srq) *self, uint32_t max_wr,
			     uint32_t pending)
{
	uint32_t before = srq_max_wr(_metadata, self), after, n;
	int ret = srq_set_max_wr(self, max_wr);

	after = srq_max_wr(_metadata, self);
	if (ret) {
		EXPECT_EQ(before, after) {
			TH_LOG("a refused resize to %u changed the size",
			       max_wr);
		}
	} else {
		EXPECT_LE(pending, after);
		EXPECT_LE(max_wr, after);
	}
	if (rc_cfg.is_rxe)
		return;
	for (n = 1; n < max_wr; n <<= 1)
		;
	EXPECT_EQ(n < pending, ret != 0) {
		TH_LOG("resize to %u with %u pending: %s", max_wr, pending,
		       ret ? strerror(ret) : "granted");
	}
}

/* ---- resizing ---------------------------------------------------------- */

/*
 * A resize keeps the WQEs not used yet, in order, grows the SRQ beyond what
 * it could hold before (also while messages arrive and QPs take WQEs),
 * shrinks it down to exactly what is pending, and refuses sizes that cannot
 * hold the pending WQEs or an armed limit, 0 and sizes beyond the device's,
 * changing nothing then.  Every message lands whole in the WQE its
 * completion names, and the WQEs are used in the order they were posted.
 */
TEST_F_TIMEOUT(srq, resize, 240)
{
	struct ibv_device_attr *da = &self->db->attr;
	uint64_t ids[2 * SRQ_MSGS];
	struct ibv_srq_attr sa;
	uint32_t old;
	int i, ret;

	if (!(da->device_cap_flags & IBV_DEVICE_SRQ_RESIZE))
		SKIP(return, "the device does not resize SRQs");
	srq_env(_metadata, self, 32, 2, SRQ_CONNS);
	old = self->attr.max_wr;
	srq_post(_metadata, self, 20);
	srq_send(_metadata, self, 0, 5);
	srq_expect(_metadata, self, 0, 5, ids);
	expect_wr_ids(_metadata, ids, 5, 0, "before resizing");

	/* 15 pending: too small, nothing, too big; none changes anything. */
	srq_resize_check(_metadata, self, 8, 15);
	EXPECT_NE(0, srq_set_max_wr(self, 0));
	EXPECT_NE(0, srq_set_max_wr(self, da->max_srq_wr + 1));
	EXPECT_NE(0, srq_set_max_wr(self, UINT32_MAX));
	if (!rc_cfg.is_rxe)
		EXPECT_EQ(old, srq_max_wr(_metadata, self));

	/* Grown while connection 0's next messages arrive. */
	srq_send(_metadata, self, 0, 11);
	ASSERT_EQ(0, srq_set_max_wr(self, 200));
	EXPECT_LE(200, srq_max_wr(_metadata, self));
	srq_expect(_metadata, self, 0, 11, ids);
	expect_wr_ids(_metadata, ids, 11, 5, "while resizing");

	/* 4 pending and 60 more: more than the old ring held. */
	srq_post(_metadata, self, 60);
	srq_send(_metadata, self, 1, SRQ_MSGS);
	srq_send(_metadata, self, 2, SRQ_MSGS);
	srq_expect(_metadata, self, 1, SRQ_MSGS, ids);
	srq_expect(_metadata, self, 2, SRQ_MSGS, ids + SRQ_MSGS);
	expect_wr_ids(_metadata, ids, 2 * SRQ_MSGS, 16, "after growing");
	srq_check_bytes(_metadata, self, "after growing");

	/* 32 pending: shrunk to exactly that, not below. */
	srq_resize_check(_metadata, self, 16, 32);
	ASSERT_EQ(0, srq_set_max_wr(self, 32));
	EXPECT_LE(32, srq_max_wr(_metadata, self));
	if (!rc_cfg.is_rxe)
		EXPECT_EQ(32, srq_max_wr(_metadata, self));
	srq_send(_metadata, self, 3, SRQ_MSGS);
	srq_expect(_metadata, self, 3, SRQ_MSGS, ids);
	for (i = 0; i < SRQ_MSGS; i++)
		EXPECT_EQ(48 + i, ids[i]);

	/* 16 pending; an armed limit must fit too, the new one if given. */
	memset(&sa, 0, sizeof(sa));
	sa.max_wr = 16;
	sa.srq_limit = 40;
	ret = ibv_modify_srq(self->srq, &sa, IBV_SRQ_MAX_WR | IBV_SRQ_LIMIT);
	if (!ret && rc_cfg.is_rxe) {
		RC_QUIRK("a new SRQ limit checked against the old size");
		sa.srq_limit = 0;
		ASSERT_EQ(0, ibv_modify_srq(self->srq, &sa, IBV_SRQ_LIMIT));
	} else {
		EXPECT_NE(0, ret);
	}
	sa.srq_limit = 10;
	ASSERT_EQ(0, ibv_modify_srq(self->srq, &sa,
				    IBV_SRQ_MAX_WR | IBV_SRQ_LIMIT));
	memset(&sa, 0, sizeof(sa));
	ASSERT_EQ(0, ibv_query_srq(self->srq, &sa));
	EXPECT_LE(16, sa.max_wr);
	EXPECT_EQ(10, sa.srq_limit);
	srq_resize_check(_metadata, self, 8, 16);
	EXPECT_NE(0, srq_set_max_wr(self, 8));
	srq_check_bytes(_metadata, self, "after shrinking");
}

/* ---- the data path ----------------------------------------------------- */

/*
 * Four connections send 12 messages each at once into one SRQ of more
 * WQEs: every message lands whole in exactly one WQE, the WQEs used are
 * the 48 posted first, the others are untouched; then the rest go, in
 * order, to one connection.
 */
TEST_F_TIMEOUT(srq, many_qps, 240)
{
	uint64_t ids[SRQ_CONNS * 12];
	int i;

	srq_env(_metadata, self, 64, 2, SRQ_CONNS);
	srq_post(_metadata, self, SRQ_CONNS * 12 + 8);
	for (i = 0; i < SRQ_CONNS; i++)
		srq_send(_metadata, self, i, 12);
	for (i = 0; i < SRQ_CONNS; i++)
		srq_expect(_metadata, self, i, 12, ids + 12 * i);
	expect_wr_ids(_metadata, ids, SRQ_CONNS * 12, 0, "4 QPs x 12");
	srq_check_bytes(_metadata, self, "after 4 QPs x 12 messages");

	srq_send(_metadata, self, 2, 4);
	srq_expect(_metadata, self, 2, 4, ids);
	for (i = 0; i < 4; i++)
		EXPECT_EQ(SRQ_CONNS * 12 + i, ids[i]);
	srq_send(_metadata, self, 0, 4);
	srq_expect(_metadata, self, 0, 4, ids);
	for (i = 0; i < 4; i++)
		EXPECT_EQ(SRQ_CONNS * 12 + 4 + i, ids[i]);
	srq_check_bytes(_metadata, self, "after the last 8");
}

/* An empty SRQ: both senders are told RNR and retry until WQEs come. */
TEST_F(srq, rnr)
{
	uint64_t ids[2];

	srq_env(_metadata, self, 16, 2, 2);
	srq_send(_metadata, self, 0, 1);
	srq_send(_metadata, self, 1, 1);
	EXPECT_CQ_EMPTY(self->c[0].s.scq, "send into an empty SRQ");
	EXPECT_CQ_EMPTY(self->c[1].s.scq, "send into an empty SRQ");
	EXPECT_CQ_EMPTY(self->c[0].r.rcq, "receive from an empty SRQ");
	srq_post(_metadata, self, 2);
	srq_expect(_metadata, self, 0, 1, ids);
	srq_expect(_metadata, self, 1, 1, ids + 1);
	expect_wr_ids(_metadata, ids, 2, 0, "after RNR");
	srq_check_bytes(_metadata, self, "after RNR");
	EXPECT_EQ(IBV_QPS_RTS, qp_state(&self->c[0]));
}

/*
 * RDMA WRITE with immediate consumes an SRQ WQE (its buffers untouched),
 * a plain RDMA WRITE none.
 */
TEST_F(srq, write_imm)
{
	struct srq_conn *c;
	struct ibv_send_wr wr, *bad = NULL;
	struct ibv_sge sge;
	size_t at, len = 2 * 1024 + 17;
	uint64_t id;
	uint8_t *src;
	int i;

	srq_env(_metadata, self, 16, 2, 1);
	c = &self->c[0];
	srq_post(_metadata, self, 2);
	/* The target: the last slot of rb, which no WQE uses. */
	at = (SRQ_WQES - 1) * self->slot + 3;
	src = self->sb.p;
	rc_fill(src, len, 0x777, 0);
	for (i = 0; i < 2; i++) {
		sge.addr = (uintptr_t)src;
		sge.length = len;
		sge.lkey = self->sb.mr->lkey;
		memset(&wr, 0, sizeof(wr));
		wr.wr_id = 0x100 + i;
		wr.sg_list = &sge;
		wr.num_sge = 1;
		wr.opcode = i ? IBV_WR_RDMA_WRITE_WITH_IMM : IBV_WR_RDMA_WRITE;
		wr.send_flags = IBV_SEND_SIGNALED;
		wr.imm_data = htobe32(0xabc);
		wr.wr.rdma.remote_addr = (uintptr_t)self->rb.p + at;
		wr.wr.rdma.rkey = self->rb.mr->rkey;
		ASSERT_EQ(0, ibv_post_send(c->s.qp, &wr, &bad));
		rc_expect_wc(_metadata, c->s.scq, &(struct rc_wc_exp){
			.wr_id = 0x100 + i, .status = IBV_WC_SUCCESS,
			.opcode = IBV_WC_RDMA_WRITE,
			.qp_num = c->s.qp->qp_num,
		}, "WRITE");
	}
	rc_expect_wc(_metadata, c->r.rcq, &(struct rc_wc_exp){
		.wr_id = 0, .status = IBV_WC_SUCCESS,
		.opcode = IBV_WC_RECV_RDMA_WITH_IMM, .recv = 1,
		.byte_len = len, .imm = 1, .imm_data = htobe32(0xabc),
		.qp_num = c->r.qp->qp_num,
	}, "WRITE with immediate: the first WQE");
	EXPECT_CQ_EMPTY(c->r.rcq, "plain WRITE");
	rc_fill(self->img + at, len, 0x777, 0);
	srq_check_bytes(_metadata, self, "WRITEs");

	/* The second WQE is still there, for a SEND (message 1: 0 was the WRITEs). */
	c->sent = c->done = 1;
	srq_send(_metadata, self, 0, 1);
	srq_expect(_metadata, self, 0, 1, &id);
	EXPECT_EQ(1, id);
	srq_check_bytes(_metadata, self, "SEND after the WRITEs");
}

/*
 * WQEs with as many SGEs as the device allows: a message scattered over
 * all of them lands byte-exact, in an SRQ and in a QP's own RQ.
 */
TEST_F(srq, max_sge)
{
	int n = self->db->attr.max_srq_sge, i;
	struct ibv_sge sge[64];
	struct srq_conn *c;
	struct rc_env e;
	struct rc_opts o;
	size_t at, len, total = 0;
	uint8_t *p;

	if (n > 64)
		n = 64;
	srq_env(_metadata, self, 4, n, 1);
	c = &self->c[0];
	ASSERT_EQ(n, self->attr.max_sge);
	/* n uneven segments, 3 bytes apart, in slot 0. */
	for (i = 0, at = 2; i < n; i++) {
		sge[i].addr = (uintptr_t)self->rb.p + at;
		sge[i].length = self->cap / n - 3 - i % 5;
		sge[i].lkey = self->rb.mr->lkey;
		at += sge[i].length + 3;
		total += sge[i].length;
	}
	ASSERT_LE(at, self->slot);
	ASSERT_EQ(0, srq_post_sgl(self->srq, 0, sge, n));
	self->next_wr_id = 1;

	/* All but 7 bytes of the last segment. */
	len = total - 7;
	rc_fill(self->sb.p, len, 0x4242, 0);
	ASSERT_EQ(0, rc_post_send(&c->s, 0x1, IBV_WR_SEND, &self->sb, 0, len,
				  IBV_SEND_SIGNALED, 0, 0));
	rc_expect_wc(_metadata, c->s.scq, &(struct rc_wc_exp){
		.wr_id = 0x1, .status = IBV_WC_SUCCESS, .opcode = IBV_WC_SEND,
		.qp_num = c->s.qp->qp_num,
	}, "SEND over all SGEs");
	rc_expect_wc(_metadata, c->r.rcq, &(struct rc_wc_exp){
		.wr_id = 0, .status = IBV_WC_SUCCESS, .opcode = IBV_WC_RECV,
		.recv = 1, .byte_len = len, .qp_num = c->r.qp->qp_num,
	}, "receive over all SGEs");
	for (i = 0, at = 0; i < n; i++) {
		p = self->img + (sge[i].addr - (uintptr_t)self->rb.p);
		rc_fill(p, len - at < sge[i].length ? len - at : sge[i].length,
			0x4242, at);
		at += sge[i].length;
	}
	srq_check_bytes(_metadata, self, "all SGEs");

	/* A QP's own RQ with as many receive SGEs as the device allows. */
	memset(&o, 0, sizeof(o));
	o.max_recv_sge = self->db->attr.max_sge;
	memset(&e, 0, sizeof(e));
	rc_pair_create(_metadata, &e.p, self->da, self->db, &o);
	rc_buf_alloc(_metadata, &e.ba, self->da->pd, 64 * 1024, RC_ACCESS_ALL);
	rc_buf_alloc(_metadata, &e.bb, self->db->pd, 64 * 1024, RC_ACCESS_ALL);
	rc_xfer(_metadata, &e, &(struct rc_xfer){
		.op = IBV_WR_SEND, .len = 5000, .lsge = 1, .rsge = RC_MAX_SGE,
		.seed = 4343, .wr_id = 0x10,
	});
	rc_buf_free(&e.ba);
	rc_buf_free(&e.bb);
	rc_pair_destroy(&e.p);
}

/* ---- the SRQ limit ----------------------------------------------------- */

/*
 * The limit event fires once, when a WQE taken leaves fewer than the limit
 * in the SRQ, is then disarmed, and fires again once re-armed.
 */
TEST_F_TIMEOUT(srq, limit, 120)
{
	struct ibv_context *ctx;
	struct ibv_async_event ev;
	struct ibv_srq_attr sa;

	srq_env(_metadata, self, 16, 2, 2);
	ctx = self->db->ctx;
	srq_post(_metadata, self, 16);
	memset(&sa, 0, sizeof(sa));
	sa.srq_limit = 8;
	ASSERT_EQ(0, ibv_modify_srq(self->srq, &sa, IBV_SRQ_LIMIT));

	/* 16 -> 8 WQEs: not below the limit yet. */
	srq_send(_metadata, self, 0, 4);
	srq_send(_metadata, self, 1, 4);
	srq_expect(_metadata, self, 0, 4, NULL);
	srq_expect(_metadata, self, 1, 4, NULL);
	EXPECT_TRUE(async_quiet(_metadata, ctx, IBV_EVENT_SRQ_LIMIT_REACHED)) {
		TH_LOG("limit event with 8 WQEs left, limit 8");
	}
	memset(&sa, 0xff, sizeof(sa));
	ASSERT_EQ(0, ibv_query_srq(self->srq, &sa));
	EXPECT_EQ(8, sa.srq_limit);

	/* 7 left: the event, once. */
	srq_send(_metadata, self, 0, 1);
	srq_expect(_metadata, self, 0, 1, NULL);
	ASSERT_TRUE(async_wait(_metadata, ctx, IBV_EVENT_SRQ_LIMIT_REACHED,
			       &ev)) {
		TH_LOG("no limit event with 7 WQEs left, limit 8");
	}
	EXPECT_EQ(self->srq, ev.element.srq);
	ASSERT_EQ(0, ibv_query_srq(self->srq, &sa));
	EXPECT_EQ(0, sa.srq_limit);
	srq_send(_metadata, self, 1, 2);
	srq_expect(_metadata, self, 1, 2, NULL);
	EXPECT_TRUE(async_quiet(_metadata, ctx, IBV_EVENT_SRQ_LIMIT_REACHED)) {
		TH_LOG("a second limit event without re-arming");
	}

	/* 5 left; re-armed at 4: 4 left is not below it, 3 is. */
	sa.srq_limit = 4;
	ASSERT_EQ(0, ibv_modify_srq(self->srq, &sa, IBV_SRQ_LIMIT));
	srq_send(_metadata, self, 0, 1);
	srq_expect(_metadata, self, 0, 1, NULL);
	EXPECT_TRUE(async_quiet(_metadata, ctx, IBV_EVENT_SRQ_LIMIT_REACHED)) {
		TH_LOG("limit event with 4 WQEs left, limit 4");
	}
	srq_send(_metadata, self, 1, 1);
	srq_expect(_metadata, self, 1, 1, NULL);
	ASSERT_TRUE(async_wait(_metadata, ctx, IBV_EVENT_SRQ_LIMIT_REACHED,
			       &ev)) {
		TH_LOG("no limit event after re-arming");
	}
	EXPECT_EQ(self->srq, ev.element.srq);
	srq_send(_metadata, self, 0, 3);
	srq_expect(_metadata, self, 0, 3, NULL);
	EXPECT_TRUE(async_quiet(_metadata, ctx, IBV_EVENT_SRQ_LIMIT_REACHED)) {
		TH_LOG("a second limit event after re-arming");
	}
	srq_check_bytes(_metadata, self, "16 messages");
}

/* ---- errors ------------------------------------------------------------ */

/*
 * A receiver moved to ERR raises IBV_EVENT_QP_LAST_WQE_REACHED and flushes
 * nothing of the SRQ: all its WQEs go to the other receiver.
 */
TEST_F(srq, qp_error)
{
	struct ibv_qp_attr qa = { .qp_state = IBV_QPS_ERR };
	uint64_t ids[6];

	srq_env(_metadata, self, 16, 2, 2);
	srq_post(_metadata, self, 6);
	ASSERT_EQ(0, ibv_modify_qp(self->c[0].r.qp, &qa, IBV_QP_STATE));
	EXPECT_EQ(IBV_QPS_ERR, qp_state(&self->c[0]));
	expect_last_wqe(_metadata, self, 0);
	EXPECT_CQ_EMPTY(self->c[0].r.rcq, "the SRQ's WQEs flushed");

	srq_send(_metadata, self, 1, 6);
	srq_expect(_metadata, self, 1, 6, ids);
	expect_wr_ids(_metadata, ids, 6, 0, "the other QP");
	srq_check_bytes(_metadata, self, "after one QP's error");
	EXPECT_CQ_EMPTY(self->c[0].r.rcq, "the QP in error");
}

/*
 * A receive with more SGEs than the SRQ takes is refused at post; a WQE
 * with a bad lkey fails the message and the receiving QP (LOC_PROT_ERR,
 * the sender gets REM_OP_ERR), and only that WQE: the next ones serve
 * another QP.
 */
TEST_F(srq, bad_wqe)
{
	struct ibv_sge sge[RC_MAX_SGE * 2 + 2];
	struct ibv_recv_wr wr, *bad = NULL;
	struct ibv_wc wc;
	uint64_t ids[2];
	int i, n;

	srq_env(_metadata, self, 16, 2, 2);
	n = self->attr.max_sge + 1;
	if (n > (int)(sizeof(sge) / sizeof(sge[0])))
		SKIP(return, "the device granted %d SGEs", n - 1);
	for (i = 0; i < n; i++) {
		sge[i].addr = (uintptr_t)self->rb.p + 8 * i;
		sge[i].length = 8;
		sge[i].lkey = self->rb.mr->lkey;
	}
	memset(&wr, 0, sizeof(wr));
	wr.wr_id = 0x99;
	wr.sg_list = sge;
	wr.num_sge = n;
	EXPECT_NE(0, ibv_post_srq_recv(self->srq, &wr, &bad));
	EXPECT_EQ(&wr, bad);

	/* WQE 0 with a bad lkey, then two good ones. */
	sge[0].addr = (uintptr_t)self->rb.p + 1;
	sge[0].length = 4000;
	sge[0].lkey = self->rb.mr->lkey ^ 0x5a5a00;
	ASSERT_EQ(0, srq_post_sgl(self->srq, 0, sge, 1));
	self->next_wr_id = 1;
	srq_post(_metadata, self, 2);

	srq_send(_metadata, self, 0, 1);
	ASSERT_EQ(1, rc_poll(self->c[0].r.rcq, &wc, 1, RC_TIMEOUT_MS));
	if (rc_cfg.is_rxe && wc.status == IBV_WC_LOC_QP_OP_ERR)
		RC_QUIRK("bad receive lkey completes with LOC_QP_OP_ERR, not LOC_PROT_ERR");
	else
		rc_wc_check(_metadata, &wc, &(struct rc_wc_exp){
			.wr_id = 0, .status = IBV_WC_LOC_PROT_ERR,
			.qp_num = self->c[0].r.qp->qp_num,
		}, "receive into a bad lkey");
	rc_expect_wc(_metadata, self->c[0].s.scq, &(struct rc_wc_exp){
		.wr_id = 0, .status = IBV_WC_REM_OP_ERR,
		.qp_num = self->c[0].s.qp->qp_num,
	}, "send to a bad receive lkey");
	EXPECT_EQ(IBV_QPS_ERR, qp_state(&self->c[0]));
	expect_last_wqe(_metadata, self, 0);
	EXPECT_CQ_EMPTY(self->c[0].r.rcq, "the SRQ's WQEs flushed");

	srq_send(_metadata, self, 1, 2);
	srq_expect(_metadata, self, 1, 2, ids);
	expect_wr_ids(_metadata, ids, 2, 1, "after the bad WQE");
	srq_check_bytes(_metadata, self, "after the bad WQE");
}

/* ---- a hostile process (vrdma only: it writes the provider's ring) ----- */

/* Write a receive WQE straight into the SRQ ring, as a buggy process might. */
static void raw_wqe(FIXTURE_DATA(srq) *self, uint64_t wr_id, uint32_t num_sge)
{
	struct vrdma_uring *r = &to_vsrq(self->srq)->rq.ring;
	struct vrdma_recv_wqe *w = vrdma_uring_entry(r, r->head);

	memset(w, 0, r->entry_size);
	w->wr_id = wr_id;
	w->num_sge = num_sge;
	r->head++;
	vrdma_uring_publish(r);
}

/*
 * WQEs with more SGEs than the SRQ has room for: each fails its message
 * with LOC_QP_OP_ERR and its QP; the next good WQE serves a third QP.
 */
TEST_F(srq, hostile_num_sge)
{
	uint64_t ids[1];
	int i;

	if (rc_cfg.is_rxe)
		SKIP(return, "writes vrdma's SRQ ring directly");
	srq_env(_metadata, self, 16, 2, 3);
	raw_wqe(self, 0, self->attr.max_sge + 1);
	raw_wqe(self, 1, 0xffffffff);
	self->next_wr_id = 2;
	srq_post(_metadata, self, 1);

	for (i = 0; i < 2; i++) {
		srq_send(_metadata, self, i, 1);
		rc_expect_wc(_metadata, self->c[i].r.rcq, &(struct rc_wc_exp){
			.wr_id = i, .status = IBV_WC_LOC_QP_OP_ERR,
			.qp_num = self->c[i].r.qp->qp_num,
		}, "a WQE with too many SGEs");
		rc_expect_wc(_metadata, self->c[i].s.scq, &(struct rc_wc_exp){
			.wr_id = 0, .status = IBV_WC_REM_OP_ERR,
			.qp_num = self->c[i].s.qp->qp_num,
		}, "a send into a WQE with too many SGEs");
		EXPECT_EQ(IBV_QPS_ERR, qp_state(&self->c[i]));
		expect_last_wqe(_metadata, self, i);
	}
	srq_send(_metadata, self, 2, 1);
	srq_expect(_metadata, self, 2, 1, ids);
	EXPECT_EQ(2, ids[0]);
	srq_check_bytes(_metadata, self, "after bad WQEs");
}

/*
 * A producer index no ring can have: the SRQ is in error for good
 * (IBV_EVENT_SRQ_ERR), and every QP that needs a WQE from it fails.
 */
TEST_F(srq, hostile_prod)
{
	struct vrdma_uring *r;
	struct ibv_async_event ev;
	int i;

	if (rc_cfg.is_rxe)
		SKIP(return, "writes vrdma's SRQ ring directly");
	srq_env(_metadata, self, 16, 2, 2);
	srq_post(_metadata, self, 2);
	r = &to_vsrq(self->srq)->rq.ring;
	vrdma_store_release(&r->hdr->prod, r->head + 3 * r->num_entries);

	srq_send(_metadata, self, 0, 1);
	rc_expect_wc(_metadata, self->c[0].s.scq, &(struct rc_wc_exp){
		.wr_id = 0, .status = IBV_WC_REM_OP_ERR,
		.qp_num = self->c[0].s.qp->qp_num,
	}, "a send into a garbage SRQ");
	ASSERT_TRUE(async_wait(_metadata, self->db->ctx, IBV_EVENT_SRQ_ERR,
			       &ev));
	EXPECT_EQ(self->srq, ev.element.srq);

	/* Nothing of a garbage ring is worth moving to a bigger one. */
	EXPECT_NE(0, srq_set_max_wr(self, 64));

	/* Repaired, it stays in error. */
	vrdma_uring_publish(r);
	srq_send(_metadata, self, 1, 1);
	rc_expect_wc(_metadata, self->c[1].s.scq, &(struct rc_wc_exp){
		.wr_id = 0, .status = IBV_WC_REM_OP_ERR,
		.qp_num = self->c[1].s.qp->qp_num,
	}, "a send into an SRQ in error");
	for (i = 0; i < 2; i++) {
		EXPECT_EQ(IBV_QPS_ERR, qp_state(&self->c[i]));
		EXPECT_CQ_EMPTY(self->c[i].r.rcq, "receiver");
	}
	srq_check_bytes(_metadata, self, "nothing placed");
}

int main(int argc, char **argv)
{
	return rc_suite_main(argc, argv);
}
