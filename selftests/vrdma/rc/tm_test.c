// SPDX-License-Identifier: GPL-2.0
/*
 * Tag matching (IBV_SRQT_TM, ibv_post_srq_ops): a sender QP on device A
 * connected to a receiver QP on device B (or on A: the loopback variant)
 * that receives through a tag-matching SRQ whose CQ reports
 * IBV_WC_EX_WITH_TM_INFO.  The sender writes the TMH (and RVH) into
 * ordinary SENDs, as any peer would.
 *
 * Covered: eager matches (one packet: one completion with TM_MATCH and
 * TM_DATA_VALID; more than one: TM_MATCH, then TM_DATA_VALID), the tag
 * mask and the oldest of two matching buffers winning, unexpected
 * messages (whole in a WQE of the ring, matching stopped until a SYNC
 * with the right count), NO_TAG, TAG_DEL (and of a buffer consumed or
 * deleted: IBV_WC_TM_ERR), TAG_ADD with a stale unexpected count
 * (IBV_WC_TM_SYNC_REQ), a full tag list (ENOMEM), max_ops, rendezvous (the
 * data read byte for byte, both completions, the FIN at the sender), a
 * rendezvous with a bad rkey (an error completion, the buffer untouched)
 * and into a buffer too small (IBV_WC_TM_RNDV_INCOMPLETE, nothing beyond
 * the buffer), an eager message too long for its buffer, and bad inputs:
 * operations on a basic SRQ, bad handles, opcodes, flags, SGEs and lkeys,
 * and the driver's method called with garbage.  Every byte of the
 * receiver's buffer is compared with an image of what it must hold.
 *
 * The SRQ's operations go through a system call that copies them in; the
 * only shared rings are the usual ones (its receive ring, the CQ's),
 * whose garbage srq_test and the fuzz tests cover.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <unistd.h>
#include <endian.h>
#include <infiniband/verbs.h>
#include <infiniband/tm_types.h>
#include <rdma/rdma_user_ioctl.h>
#include <rdma/ib_user_ioctl_cmds.h>

#include "ko_lib.h"
#include "rc_lib.h"
#include "rc_suite.h"
#include <rdma/vrdma-abi.h>

#define TM_BUF		(1 << 20)	/* each side's buffer */
#define TM_BG		0xa5		/* the receiver's background byte */
#define TM_HDR		((int)sizeof(struct ibv_tmh))
#define TM_RNDV_HDR	((int)(sizeof(struct ibv_tmh) + sizeof(struct ibv_rvh)))

/* One tag-matching completion, as the extended CQ reads it. */
struct tm_wc {
	uint64_t wr_id;
	enum ibv_wc_status status;
	enum ibv_wc_opcode opcode;
	unsigned int wc_flags;
	uint32_t byte_len;
	uint64_t tag;
	uint32_t priv;
};

FIXTURE(tm) {
	struct rc_dev d0, d1;
	struct rc_dev *da, *db;
	struct ibv_cq_ex *cq;		/* the SRQ's */
	struct ibv_srq *srq;
	struct rc_qp s, r;		/* sender on A, receiver on B */
	struct rc_buf sb, rb;
	uint8_t *img;			/* what rb must hold */
	uint32_t unexp;			/* unexpected messages handled */
	uint64_t plain_wr_id;		/* of the next plain WQE posted */
	struct ibv_device_attr_ex ax;
	struct tm_wc last;		/* the completion EXPECT_TM_WC() read */
	int cq_size;			/* of the SRQ's CQ; 0: 256 */
};

RC_ENDS_VARIANTS(tm);


static int tm_poll(FIXTURE_DATA(tm) *self, struct tm_wc *w, int ms)
{
	double deadline = rc_now_ms() + (double)ms * rc_cfg.slow;
	struct ibv_poll_cq_attr pa = {};
	struct ibv_wc_tm_info ti;
	int ret;

	while ((ret = ibv_start_poll(self->cq, &pa)) == ENOENT) {
		if (rc_now_ms() > deadline)
			return 0;
		usleep(50);
	}
	if (ret)
		return -1;
	w->wr_id = self->cq->wr_id;
	w->status = self->cq->status;
	w->opcode = ibv_wc_read_opcode(self->cq);
	w->wc_flags = ibv_wc_read_wc_flags(self->cq);
	w->byte_len = ibv_wc_read_byte_len(self->cq);
	ibv_wc_read_tm_info(self->cq, &ti);
	w->tag = ti.tag;
	w->priv = ti.priv;
	ibv_end_poll(self->cq);
	return 1;
}

/* The next completion of the SRQ's CQ must be this. */
#define EXPECT_TM_WC(wr, st, op, flags, tg) do { \
	struct tm_wc __w = {}; \
	ASSERT_EQ(1, tm_poll(self, &__w, RC_TIMEOUT_MS)) { \
		TH_LOG("no completion (wr_id %#llx expected)", \
		       (unsigned long long)(wr)); \
	} \
	EXPECT_EQ((uint64_t)(wr), __w.wr_id); \
	EXPECT_EQ((int)(st), (int)__w.status) { \
		TH_LOG("status %s", ibv_wc_status_str(__w.status)); \
	} \
	if ((st) == IBV_WC_SUCCESS) { \
		EXPECT_EQ((int)(op), (int)__w.opcode); \
		EXPECT_EQ((unsigned int)(flags), __w.wc_flags); \
		EXPECT_EQ((uint64_t)(tg), __w.tag); \
	} \
	self->last = __w; \
} while (0)

#define EXPECT_TM_EMPTY() do { \
	struct tm_wc __w; \
	EXPECT_EQ(0, tm_poll(self, &__w, RC_QUIET_MS)) { \
		TH_LOG("unexpected completion wr_id %#llx opcode %d", \
		       (unsigned long long)__w.wr_id, __w.opcode); \
	} \
} while (0)

static struct ibv_srq *tm_srq_create(FIXTURE_DATA(tm) *self,
				     uint32_t max_tags, uint32_t max_ops)
{
	struct ibv_srq_init_attr_ex ia;

	memset(&ia, 0, sizeof(ia));
	ia.comp_mask = IBV_SRQ_INIT_ATTR_TYPE | IBV_SRQ_INIT_ATTR_PD |
		       IBV_SRQ_INIT_ATTR_CQ | IBV_SRQ_INIT_ATTR_TM;
	ia.srq_type = IBV_SRQT_TM;
	ia.pd = self->db->pd;
	ia.cq = ibv_cq_ex_to_cq(self->cq);
	ia.attr.max_wr = 64;
	ia.attr.max_sge = 4;
	ia.tm_cap.max_num_tags = max_tags;
	ia.tm_cap.max_ops = max_ops;
	return ibv_create_srq_ex(self->db->ctx, &ia);
}

/* The SRQ (and its CQ), both QPs connected, both buffers. */
static void tm_env(struct __test_metadata *_metadata, FIXTURE_DATA(tm) *self,
		   uint32_t max_tags, uint32_t max_ops)
{
	struct ibv_cq_init_attr_ex ca = {
		.cqe = self->cq_size ? self->cq_size : 256,
		.wc_flags = IBV_WC_STANDARD_FLAGS | IBV_WC_EX_WITH_TM_INFO,
	};
	struct rc_opts so = {}, ro = {};

	self->cq = ibv_create_cq_ex(self->db->ctx, &ca);
	ASSERT_NE(NULL, self->cq) {
		TH_LOG("create_cq_ex with TM_INFO: %s", strerror(errno));
	}
	self->srq = tm_srq_create(self, max_tags, max_ops);
	ASSERT_NE(NULL, self->srq) {
		TH_LOG("create TM SRQ: %s", strerror(errno));
	}
	rc_opts_default(&so, self->da);
	rc_opts_default(&ro, self->db);
	ro.srq = self->srq;
	rc_qp_create(_metadata, &self->s, self->da, &so);
	rc_qp_create(_metadata, &self->r, self->db, &ro);
	self->s.sq_psn = 0xfffff0;
	self->r.rq_psn = self->s.sq_psn;
	self->r.sq_psn = 0x123456;
	self->s.rq_psn = self->r.sq_psn;
	rc_qp_connect(_metadata, &self->s, &self->r, so.access);
	rc_qp_connect(_metadata, &self->r, &self->s, ro.access);

	rc_buf_alloc(_metadata, &self->sb, self->da->pd, TM_BUF, RC_ACCESS_ALL);
	rc_buf_alloc(_metadata, &self->rb, self->db->pd, TM_BUF, RC_ACCESS_ALL);
	memset(self->rb.p, TM_BG, TM_BUF);
	self->img = malloc(TM_BUF);
	ASSERT_NE(NULL, self->img);
	memset(self->img, TM_BG, TM_BUF);
	self->plain_wr_id = 1000;
}

FIXTURE_SETUP(tm)
{
	rc_ends_open(_metadata, &self->d0, &self->d1, &self->da, &self->db,
		     variant->two_devices);
	ASSERT_EQ(0, ibv_query_device_ex(self->db->ctx, NULL, &self->ax));
	if (!(self->ax.tm_caps.flags & IBV_TM_CAP_RC))
		SKIP(return, "no tag matching on %s", rc_cfg.name[1]);
}

FIXTURE_TEARDOWN(tm)
{
	rc_qp_destroy(&self->r);
	rc_qp_destroy(&self->s);
	if (self->srq)
		EXPECT_EQ(0, ibv_destroy_srq(self->srq));
	if (self->cq)
		EXPECT_EQ(0, ibv_destroy_cq(ibv_cq_ex_to_cq(self->cq)));
	rc_buf_free(&self->sb);
	rc_buf_free(&self->rb);
	free(self->img);
	rc_dev_close(&self->d1);
	rc_dev_close(&self->d0);
}

/* One operation; returns ibv_post_srq_ops()'s result. */
static int tm_op(FIXTURE_DATA(tm) *self, enum ibv_ops_wr_opcode op,
		 int flags, uint64_t wr_id, uint32_t *handle)
{
	struct ibv_ops_wr wr, *bad = NULL;

	memset(&wr, 0, sizeof(wr));
	wr.wr_id = wr_id;
	wr.opcode = op;
	wr.flags = flags;
	wr.tm.unexpected_cnt = self->unexp;
	if (handle)
		wr.tm.handle = *handle;
	return ibv_post_srq_ops(self->srq, &wr, &bad);
}

/* TAG_ADD of rb[off, off + len) for @tag under @mask; its handle. */
static int tm_add(FIXTURE_DATA(tm) *self, uint64_t tag, uint64_t mask,
		  uint64_t recv_wr_id, size_t off, uint32_t len, int flags,
		  uint32_t *handle)
{
	struct ibv_sge sge = {
		.addr = (uintptr_t)self->rb.p + off,
		.length = len,
		.lkey = self->rb.mr->lkey,
	};
	struct ibv_ops_wr wr, *bad = NULL;
	int ret;

	memset(&wr, 0, sizeof(wr));
	wr.wr_id = recv_wr_id + 1000000;
	wr.opcode = IBV_WR_TAG_ADD;
	wr.flags = flags;
	wr.tm.unexpected_cnt = self->unexp;
	wr.tm.add.recv_wr_id = recv_wr_id;
	wr.tm.add.sg_list = &sge;
	wr.tm.add.num_sge = 1;
	wr.tm.add.tag = tag;
	wr.tm.add.mask = mask;
	ret = ibv_post_srq_ops(self->srq, &wr, &bad);
	if (!ret && handle)
		*handle = wr.tm.handle;
	return ret;
}

/* A plain WQE of the SRQ's ring over rb[off, off + len). */
static uint64_t tm_post_plain(struct __test_metadata *_metadata,
			      FIXTURE_DATA(tm) *self, size_t off, uint32_t len)
{
	struct ibv_sge sge = {
		.addr = (uintptr_t)self->rb.p + off,
		.length = len,
		.lkey = self->rb.mr->lkey,
	};
	struct ibv_recv_wr wr = {
		.wr_id = self->plain_wr_id++,
		.sg_list = &sge,
		.num_sge = 1,
	}, *bad;

	EXPECT_EQ(0, ibv_post_srq_recv(self->srq, &wr, &bad));
	return wr.wr_id;
}

/* The sender's message at sb[0, len): its headers and a pattern after. */
static void tm_msg(FIXTURE_DATA(tm) *self, uint8_t op, uint64_t tag,
		   uint32_t app_ctx, uint32_t len, uint32_t seed)
{
	struct ibv_tmh tmh = {
		.opcode = op,
		.app_ctx = htobe32(app_ctx),
		.tag = htobe64(tag),
	};

	rc_fill(self->sb.p, len, seed, 0);
	memcpy(self->sb.p, &tmh, len < TM_HDR ? len : TM_HDR);
}

/* SEND sb[0, len) and wait for its completion at the sender. */
static void tm_send(struct __test_metadata *_metadata, FIXTURE_DATA(tm) *self,
		    uint32_t len, enum ibv_wc_status want)
{
	struct ibv_sge sge = {
		.addr = (uintptr_t)self->sb.p,
		.length = len,
		.lkey = self->sb.mr->lkey,
	};
	struct ibv_send_wr wr = {
		.wr_id = 0x5e4d,
		.sg_list = &sge,
		.num_sge = 1,
		.opcode = IBV_WR_SEND,
		.send_flags = IBV_SEND_SIGNALED,
	}, *bad;
	struct ibv_wc wc;

	ASSERT_EQ(0, ibv_post_send(self->s.qp, &wr, &bad));
	ASSERT_EQ(1, rc_poll(self->s.scq, &wc, 1, RC_TIMEOUT_MS));
	EXPECT_EQ(want, wc.status) {
		TH_LOG("SEND: %s", ibv_wc_status_str(wc.status));
	}
}

#define EXPECT_RB() \
	EXPECT_SAME_BYTES(self->rb.p, self->img, TM_BUF, "receive buffer")

/* SYNC with the count of unexpected messages handled. */
#define TM_SYNC() do { \
	ASSERT_EQ(0, tm_op(self, IBV_WR_TAG_SYNC, \
			   IBV_OPS_SIGNALED | IBV_OPS_TM_SYNC, 27, NULL)); \
	EXPECT_TM_WC(27, IBV_WC_SUCCESS, IBV_WC_TM_SYNC, 0, 0); \
} while (0)

TEST_F(tm, caps)
{
	struct ibv_srq *srq;

	EXPECT_EQ(IBV_TM_CAP_RC, self->ax.tm_caps.flags);
	EXPECT_LE(64, self->ax.tm_caps.max_num_tags);
	EXPECT_LE(16, self->ax.tm_caps.max_ops);
	EXPECT_LE(1, self->ax.tm_caps.max_sge);
	EXPECT_LE(TM_RNDV_HDR, self->ax.tm_caps.max_rndv_hdr_size);
	tm_env(_metadata, self, 8, 8);
	/* beyond the capabilities, or none */
	srq = tm_srq_create(self, self->ax.tm_caps.max_num_tags + 1, 8);
	EXPECT_EQ(NULL, srq);
	srq = tm_srq_create(self, 8, self->ax.tm_caps.max_ops + 1);
	EXPECT_EQ(NULL, srq);
	srq = tm_srq_create(self, 8, 0);
	EXPECT_EQ(NULL, srq);
}

TEST_F(tm, eager)
{
	const uint32_t len = 1000;
	uint32_t h;

	tm_env(_metadata, self, 64, 16);
	ASSERT_EQ(0, tm_add(self, 5, ~0ULL, 55, 4096, 8192, IBV_OPS_SIGNALED,
			    &h));
	EXPECT_TM_WC(55 + 1000000, IBV_WC_SUCCESS, IBV_WC_TM_ADD, 0, 0);
	tm_msg(self, IBV_TMH_EAGER, 5, 0xc0ffee, len, 1);
	tm_send(_metadata, self, len, IBV_WC_SUCCESS);
	EXPECT_TM_WC(55, IBV_WC_SUCCESS, IBV_WC_TM_RECV,
		     IBV_WC_TM_MATCH | IBV_WC_TM_DATA_VALID, 5);
	EXPECT_EQ(0xc0ffeeu, self->last.priv);
	EXPECT_EQ(len - TM_HDR, self->last.byte_len);
	/* without the TMH, nothing else touched */
	memcpy(self->img + 4096, self->sb.p + TM_HDR, len - TM_HDR);
	EXPECT_RB();
	/* consumed: a DEL of it fails */
	ASSERT_EQ(0, tm_op(self, IBV_WR_TAG_DEL, IBV_OPS_SIGNALED, 77, &h));
	EXPECT_TM_WC(77, IBV_WC_TM_ERR, IBV_WC_TM_DEL, 0, 0);
	EXPECT_TM_EMPTY();
}

TEST_F(tm, mask_and_order)
{

	tm_env(_metadata, self, 64, 16);
	/* two buffers that both match 0x12ab: the older takes it */
	ASSERT_EQ(0, tm_add(self, 0x1200, 0xff00, 1, 0, 256, 0, NULL));
	ASSERT_EQ(0, tm_add(self, 0x12ab, ~0ULL, 2, 1024, 256, 0, NULL));
	/* unsignaled adds: no completion */
	EXPECT_TM_EMPTY();
	tm_msg(self, IBV_TMH_EAGER, 0x12ab, 0, 100, 2);
	tm_send(_metadata, self, 100, IBV_WC_SUCCESS);
	EXPECT_TM_WC(1, IBV_WC_SUCCESS, IBV_WC_TM_RECV,
		     IBV_WC_TM_MATCH | IBV_WC_TM_DATA_VALID, 0x12ab);
	memcpy(self->img, self->sb.p + TM_HDR, 100 - TM_HDR);
	tm_msg(self, IBV_TMH_EAGER, 0x12ab, 0, 120, 3);
	tm_send(_metadata, self, 120, IBV_WC_SUCCESS);
	EXPECT_TM_WC(2, IBV_WC_SUCCESS, IBV_WC_TM_RECV,
		     IBV_WC_TM_MATCH | IBV_WC_TM_DATA_VALID, 0x12ab);
	memcpy(self->img + 1024, self->sb.p + TM_HDR, 120 - TM_HDR);
	/* the masked bits matter: 0x13ab matches neither */
	ASSERT_EQ(0, tm_add(self, 0x1200, 0xff00, 3, 2048, 256, 0, NULL));
	tm_post_plain(_metadata, self, 4096, 256);
	tm_msg(self, IBV_TMH_EAGER, 0x13ab, 0, 80, 4);
	tm_send(_metadata, self, 80, IBV_WC_SUCCESS);
	EXPECT_TM_WC(1000, IBV_WC_SUCCESS, IBV_WC_TM_RECV, 0, 0);
	memcpy(self->img + 4096, self->sb.p, 80);
	EXPECT_RB();
}

TEST_F(tm, unexpected_then_sync)
{

	tm_env(_metadata, self, 64, 16);
	tm_post_plain(_metadata, self, 0, 512);
	tm_post_plain(_metadata, self, 512, 512);
	/* nothing posted for tag 9: whole, TMH included, into the ring's WQE */
	tm_msg(self, IBV_TMH_EAGER, 9, 0, 300, 5);
	tm_send(_metadata, self, 300, IBV_WC_SUCCESS);
	EXPECT_TM_WC(1000, IBV_WC_SUCCESS, IBV_WC_TM_RECV, 0, 0);
	EXPECT_EQ(300u, self->last.byte_len);
	memcpy(self->img, self->sb.p, 300);
	/* added before the process synced: SYNC_REQ, and no match yet */
	ASSERT_EQ(0, tm_add(self, 9, ~0ULL, 9, 2048, 512, IBV_OPS_SIGNALED,
			    NULL));
	EXPECT_TM_WC(9 + 1000000, IBV_WC_SUCCESS, IBV_WC_TM_ADD,
		     IBV_WC_TM_SYNC_REQ, 0);
	tm_msg(self, IBV_TMH_EAGER, 9, 0, 200, 6);
	tm_send(_metadata, self, 200, IBV_WC_SUCCESS);
	EXPECT_TM_WC(1001, IBV_WC_SUCCESS, IBV_WC_TM_RECV, 0, 0);
	memcpy(self->img + 512, self->sb.p, 200);
	/* a SYNC with a stale count changes nothing */
	self->unexp = 1;
	ASSERT_EQ(0, tm_op(self, IBV_WR_TAG_SYNC,
			   IBV_OPS_SIGNALED | IBV_OPS_TM_SYNC, 26, NULL));
	EXPECT_TM_WC(26, IBV_WC_SUCCESS, IBV_WC_TM_SYNC, IBV_WC_TM_SYNC_REQ, 0);
	/* with both handled, matching resumes */
	self->unexp = 2;
	TM_SYNC();
	tm_msg(self, IBV_TMH_EAGER, 9, 0, 100, 7);
	tm_send(_metadata, self, 100, IBV_WC_SUCCESS);
	EXPECT_TM_WC(9, IBV_WC_SUCCESS, IBV_WC_TM_RECV,
		     IBV_WC_TM_MATCH | IBV_WC_TM_DATA_VALID, 9);
	memcpy(self->img + 2048, self->sb.p + TM_HDR, 100 - TM_HDR);
	EXPECT_RB();
}

TEST_F(tm, no_tag)
{

	tm_env(_metadata, self, 64, 16);
	ASSERT_EQ(0, tm_add(self, 4, ~0ULL, 4, 4096, 512, 0, NULL));
	tm_post_plain(_metadata, self, 0, 512);
	/* its tag is ignored: no match, whole, not unexpected */
	tm_msg(self, IBV_TMH_NO_TAG, 4, 0, 64, 8);
	tm_send(_metadata, self, 64, IBV_WC_SUCCESS);
	EXPECT_TM_WC(1000, IBV_WC_SUCCESS, IBV_WC_TM_NO_TAG, 0, 0);
	memcpy(self->img, self->sb.p, 64);
	/* a one-byte NO_TAG message too */
	tm_post_plain(_metadata, self, 1024, 512);
	tm_msg(self, IBV_TMH_NO_TAG, 0, 0, 1, 9);
	tm_send(_metadata, self, 1, IBV_WC_SUCCESS);
	EXPECT_TM_WC(1001, IBV_WC_SUCCESS, IBV_WC_TM_NO_TAG, 0, 0);
	self->img[1024] = IBV_TMH_NO_TAG;
	/* no SYNC needed: the eager message matches */
	tm_msg(self, IBV_TMH_EAGER, 4, 0, 50, 10);
	tm_send(_metadata, self, 50, IBV_WC_SUCCESS);
	EXPECT_TM_WC(4, IBV_WC_SUCCESS, IBV_WC_TM_RECV,
		     IBV_WC_TM_MATCH | IBV_WC_TM_DATA_VALID, 4);
	memcpy(self->img + 4096, self->sb.p + TM_HDR, 50 - TM_HDR);
	EXPECT_RB();
}

TEST_F(tm, del)
{
	uint32_t h;

	tm_env(_metadata, self, 64, 16);
	ASSERT_EQ(0, tm_add(self, 3, ~0ULL, 3, 0, 512, 0, &h));
	ASSERT_EQ(0, tm_op(self, IBV_WR_TAG_DEL, IBV_OPS_SIGNALED, 31, &h));
	EXPECT_TM_WC(31, IBV_WC_SUCCESS, IBV_WC_TM_DEL, 0, 0);
	/* deleted twice: the second fails, signaled or not */
	ASSERT_EQ(0, tm_op(self, IBV_WR_TAG_DEL, 0, 32, &h));
	EXPECT_TM_WC(32, IBV_WC_TM_ERR, IBV_WC_TM_DEL, 0, 0);
	/* the message finds no buffer */
	tm_post_plain(_metadata, self, 1024, 512);
	tm_msg(self, IBV_TMH_EAGER, 3, 0, 40, 11);
	tm_send(_metadata, self, 40, IBV_WC_SUCCESS);
	EXPECT_TM_WC(1000, IBV_WC_SUCCESS, IBV_WC_TM_RECV, 0, 0);
	memcpy(self->img + 1024, self->sb.p, 40);
	EXPECT_RB();
	EXPECT_TM_EMPTY();
}

TEST_F(tm, stale_count)
{

	tm_env(_metadata, self, 64, 16);
	/* an ADD that reports a count the kernel has not delivered */
	self->unexp = 5;
	ASSERT_EQ(0, tm_add(self, 7, ~0ULL, 7, 0, 512,
			    IBV_OPS_SIGNALED | IBV_OPS_TM_SYNC, NULL));
	EXPECT_TM_WC(7 + 1000000, IBV_WC_SUCCESS, IBV_WC_TM_ADD,
		     IBV_WC_TM_SYNC_REQ, 0);
	tm_post_plain(_metadata, self, 1024, 512);
	tm_msg(self, IBV_TMH_EAGER, 7, 0, 60, 12);
	tm_send(_metadata, self, 60, IBV_WC_SUCCESS);
	EXPECT_TM_WC(1000, IBV_WC_SUCCESS, IBV_WC_TM_RECV, 0, 0);
	memcpy(self->img + 1024, self->sb.p, 60);
	self->unexp = 1;
	TM_SYNC();
	tm_msg(self, IBV_TMH_EAGER, 7, 0, 61, 13);
	tm_send(_metadata, self, 61, IBV_WC_SUCCESS);
	EXPECT_TM_WC(7, IBV_WC_SUCCESS, IBV_WC_TM_RECV,
		     IBV_WC_TM_MATCH | IBV_WC_TM_DATA_VALID, 7);
	memcpy(self->img, self->sb.p + TM_HDR, 61 - TM_HDR);
	EXPECT_RB();
}

TEST_F(tm, tags_full)
{
	uint32_t h[4], extra;
	int i;

	tm_env(_metadata, self, 4, 16);
	for (i = 0; i < 4; i++)
		ASSERT_EQ(0, tm_add(self, i, ~0ULL, i, i * 512, 512, 0,
				    &h[i]));
	EXPECT_EQ(ENOMEM, tm_add(self, 9, ~0ULL, 9, 0, 512, 0, &extra));
	ASSERT_EQ(0, tm_op(self, IBV_WR_TAG_DEL, 0, 0, &h[2]));
	EXPECT_EQ(0, tm_add(self, 9, ~0ULL, 9, 0, 512, 0, &extra));
	EXPECT_EQ(h[2], extra);
	EXPECT_TM_EMPTY();
}

/* VRDMA_IB_METHOD_SRQ_OPS called directly with @n ops of @ops. */
static int tm_ioctl(FIXTURE_DATA(tm) *self, const void *ops, uint32_t len,
		    uint32_t *handles, uint32_t hlen,
		    struct vrdma_srq_ops_resp *resp)
{
	struct {
		struct ib_uverbs_ioctl_hdr hdr;
		struct ib_uverbs_attr attrs[4];
	} cmd;

	memset(&cmd, 0, sizeof(cmd));
	cmd.hdr.length = sizeof(cmd);
	cmd.hdr.object_id = UVERBS_OBJECT_SRQ;
	cmd.hdr.method_id = VRDMA_IB_METHOD_SRQ_OPS;
	cmd.hdr.num_attrs = 4;
	cmd.hdr.driver_id = RDMA_DRIVER_UNKNOWN;
	cmd.attrs[0].attr_id = VRDMA_IB_ATTR_SRQ_OPS_HANDLE;
	cmd.attrs[0].flags = UVERBS_ATTR_F_MANDATORY;
	cmd.attrs[0].data = self->srq->handle;
	cmd.attrs[1].attr_id = VRDMA_IB_ATTR_SRQ_OPS_WRS;
	cmd.attrs[1].flags = UVERBS_ATTR_F_MANDATORY;
	cmd.attrs[1].len = len;
	cmd.attrs[1].data = (uintptr_t)ops;
	cmd.attrs[2].attr_id = VRDMA_IB_ATTR_SRQ_OPS_HANDLES;
	cmd.attrs[2].flags = UVERBS_ATTR_F_MANDATORY;
	cmd.attrs[2].len = hlen;
	cmd.attrs[2].data = (uintptr_t)handles;
	cmd.attrs[3].attr_id = VRDMA_IB_ATTR_SRQ_OPS_RESP;
	cmd.attrs[3].flags = UVERBS_ATTR_F_MANDATORY;
	cmd.attrs[3].len = sizeof(*resp);
	cmd.attrs[3].data = (uintptr_t)resp;
	memset(resp, 0xff, sizeof(*resp));
	if (ioctl(self->srq->context->cmd_fd, RDMA_VERBS_IOCTL, &cmd))
		return errno;
	return 0;
}

TEST_F(tm, max_ops)
{
	struct vrdma_srq_op ops[3];
	struct vrdma_srq_ops_resp resp;
	struct ibv_ops_wr wr[5], *bad;
	uint32_t handles[3];
	int i;

	if (strcmp(rc_cfg.type, "vrdma"))
		SKIP(return, "vrdma's own method");
	tm_env(_metadata, self, 64, 2);
	/* three at once where two may be: two run, then ENOMEM */
	memset(ops, 0, sizeof(ops));
	for (i = 0; i < 3; i++) {
		ops[i].wr_id = 40 + i;
		ops[i].opcode = VRDMA_SRQ_OP_TAG_SYNC;
		ops[i].flags = VRDMA_SRQ_OP_SIGNALED;
	}
	ASSERT_EQ(0, tm_ioctl(self, ops, sizeof(ops), handles,
			      sizeof(handles), &resp));
	EXPECT_EQ(2u, resp.done);
	EXPECT_EQ(ENOMEM, (int)resp.error);
	EXPECT_TM_WC(40, IBV_WC_SUCCESS, IBV_WC_TM_SYNC, 0, 0);
	EXPECT_TM_WC(41, IBV_WC_SUCCESS, IBV_WC_TM_SYNC, 0, 0);
	EXPECT_TM_EMPTY();
	/* the provider splits a longer list */
	memset(wr, 0, sizeof(wr));
	for (i = 0; i < 5; i++) {
		wr[i].wr_id = 50 + i;
		wr[i].opcode = IBV_WR_TAG_SYNC;
		wr[i].flags = IBV_OPS_SIGNALED;
		wr[i].next = i < 4 ? &wr[i + 1] : NULL;
	}
	ASSERT_EQ(0, ibv_post_srq_ops(self->srq, wr, &bad));
	for (i = 0; i < 5; i++)
		EXPECT_TM_WC(50 + i, IBV_WC_SUCCESS, IBV_WC_TM_SYNC, 0, 0);
}

/* A rendezvous request for sb[off, off + len) of the sender's. */
static uint32_t tm_rndv_msg(FIXTURE_DATA(tm) *self, uint64_t tag,
			    uint64_t off, uint32_t len, uint32_t rkey,
			    uint32_t extra)
{
	struct ibv_rvh rvh = {
		.va = htobe64((uintptr_t)self->sb.p + off),
		.rkey = htobe32(rkey),
		.len = htobe32(len),
	};

	tm_msg(self, IBV_TMH_RNDV, tag, 0xabc, TM_RNDV_HDR + extra, 14);
	memcpy(self->sb.p + TM_HDR, &rvh, sizeof(rvh));
	return TM_RNDV_HDR + extra;
}

/* The sender's receive WQE for the FIN, at sb[off, off + 256). */
static void tm_post_fin_wqe(struct __test_metadata *_metadata,
			    FIXTURE_DATA(tm) *self, size_t off)
{
	struct ibv_sge sge = {
		.addr = (uintptr_t)self->sb.p + off,
		.length = 256,
		.lkey = self->sb.mr->lkey,
	};
	struct ibv_recv_wr wr = { .wr_id = 0xf1, .sg_list = &sge,
				  .num_sge = 1 }, *bad;

	ASSERT_EQ(0, ibv_post_recv(self->s.qp, &wr, &bad));
}

TEST_F(tm, rndv)
{
	const uint32_t len = 100000, off = 4096, fin = TM_BUF - 4096;
	struct ibv_wc wc;
	struct ibv_tmh tmh;
	struct ibv_rvh rvh;
	uint32_t n;

	tm_env(_metadata, self, 64, 16);
	ASSERT_EQ(0, tm_add(self, 0x77, ~0ULL, 0x77, 8192, 128 * 1024, 0,
			    NULL));
	rc_fill(self->sb.p + off, len, 15, 0);
	tm_post_fin_wqe(_metadata, self, fin);
	n = tm_rndv_msg(self, 0x77, off, len, self->sb.mr->rkey, 16);
	tm_send(_metadata, self, n, IBV_WC_SUCCESS);
	EXPECT_TM_WC(0x77, IBV_WC_SUCCESS, IBV_WC_TM_RECV, IBV_WC_TM_MATCH,
		     0x77);
	EXPECT_EQ(0xabcu, self->last.priv);
	EXPECT_TM_WC(0x77, IBV_WC_SUCCESS, IBV_WC_TM_RECV,
		     IBV_WC_TM_DATA_VALID, 0);
	EXPECT_EQ(len, self->last.byte_len);
	memcpy(self->img + 8192, self->sb.p + off, len);
	EXPECT_RB();
	/* the FIN: the request's TMH and RVH, opcode FIN */
	ASSERT_EQ(1, rc_poll(self->s.rcq, &wc, 1, RC_TIMEOUT_MS));
	EXPECT_EQ(IBV_WC_SUCCESS, wc.status);
	EXPECT_EQ(IBV_WC_RECV, wc.opcode);
	EXPECT_EQ(0xf1u, wc.wr_id);
	EXPECT_EQ((uint32_t)TM_RNDV_HDR, wc.byte_len);
	memcpy(&tmh, self->sb.p + fin, sizeof(tmh));
	memcpy(&rvh, self->sb.p + fin + TM_HDR, sizeof(rvh));
	EXPECT_EQ(IBV_TMH_FIN, tmh.opcode);
	EXPECT_EQ(0x77u, be64toh(tmh.tag));
	EXPECT_EQ(0xabcu, be32toh(tmh.app_ctx));
	EXPECT_EQ((uintptr_t)self->sb.p + off, be64toh(rvh.va));
	EXPECT_EQ(len, be32toh(rvh.len));
	EXPECT_EQ(IBV_QPS_RTS, rc_qp_state(self->r.qp));
	EXPECT_TM_EMPTY();
}

/*
 * More rendezvous at once than a QP keeps in flight: the rest wait (RNR)
 * and go on; every buffer gets its data, every request its FIN.
 */
TEST_F(tm, rndv_many)
{
	enum { N = 12, LEN = 20000 };
	struct ibv_send_wr wr[N], *bad;
	struct ibv_sge sge[N];
	int match[N] = {}, data[N] = {};
	struct ibv_wc wc[N];
	uint8_t *hdrs;
	int i, got;

	tm_env(_metadata, self, 64, 16);
	hdrs = self->sb.p + TM_BUF - 64 * 1024;
	for (i = 0; i < N; i++) {
		struct ibv_tmh tmh = { .opcode = IBV_TMH_RNDV,
				       .tag = htobe64(100 + i) };
		struct ibv_rvh rvh = {
			.va = htobe64((uintptr_t)self->sb.p + i * LEN),
			.rkey = htobe32(self->sb.mr->rkey),
			.len = htobe32(LEN),
		};

		ASSERT_EQ(0, tm_add(self, 100 + i, ~0ULL, i, i * 32768, LEN,
				    0, NULL));
		rc_fill(self->sb.p + i * LEN, LEN, 100 + i, 0);
		memcpy(self->img + i * 32768, self->sb.p + i * LEN, LEN);
		memcpy(hdrs + i * 64, &tmh, sizeof(tmh));
		memcpy(hdrs + i * 64 + TM_HDR, &rvh, sizeof(rvh));
		tm_post_fin_wqe(_metadata, self, TM_BUF - 32768 + i * 256);
		sge[i].addr = (uintptr_t)hdrs + i * 64;
		sge[i].length = TM_RNDV_HDR;
		sge[i].lkey = self->sb.mr->lkey;
		memset(&wr[i], 0, sizeof(wr[i]));
		wr[i].wr_id = i;
		wr[i].sg_list = &sge[i];
		wr[i].num_sge = 1;
		wr[i].opcode = IBV_WR_SEND;
		wr[i].next = i < N - 1 ? &wr[i + 1] : NULL;
	}
	wr[N - 1].send_flags = IBV_SEND_SIGNALED;
	ASSERT_EQ(0, ibv_post_send(self->s.qp, wr, &bad));
	for (i = 0; i < 2 * N; i++) {
		ASSERT_EQ(1, tm_poll(self, &self->last, RC_TIMEOUT_MS));
		ASSERT_EQ(IBV_WC_SUCCESS, self->last.status);
		ASSERT_GT(N, (int)self->last.wr_id);
		if (self->last.wc_flags == IBV_WC_TM_MATCH) {
			EXPECT_EQ(100 + self->last.wr_id, self->last.tag);
			/* the match before the data */
			EXPECT_EQ(0, data[self->last.wr_id]);
			match[self->last.wr_id]++;
		} else {
			EXPECT_EQ(IBV_WC_TM_DATA_VALID, self->last.wc_flags);
			data[self->last.wr_id]++;
		}
	}
	for (i = 0; i < N; i++) {
		EXPECT_EQ(1, match[i]);
		EXPECT_EQ(1, data[i]);
	}
	EXPECT_RB();
	got = rc_poll(self->s.scq, wc, 1, RC_TIMEOUT_MS);
	EXPECT_EQ(1, got);
	got = rc_poll(self->s.rcq, wc, N, RC_TIMEOUT_MS);
	EXPECT_EQ(N, got);
	for (i = 0; i < got; i++)
		EXPECT_EQ(IBV_WC_SUCCESS, wc[i].status);
	EXPECT_TM_EMPTY();
}

TEST_F(tm, rndv_bad_rkey)
{
	uint32_t n;

	tm_env(_metadata, self, 64, 16);
	ASSERT_EQ(0, tm_add(self, 0x78, ~0ULL, 0x78, 8192, 8192, 0, NULL));
	tm_post_fin_wqe(_metadata, self, TM_BUF - 4096);
	n = tm_rndv_msg(self, 0x78, 4096, 4096, self->sb.mr->rkey ^ 0x80, 0);
	tm_send(_metadata, self, n, IBV_WC_SUCCESS);
	EXPECT_TM_WC(0x78, IBV_WC_SUCCESS, IBV_WC_TM_RECV, IBV_WC_TM_MATCH,
		     0x78);
	EXPECT_TM_WC(0x78, IBV_WC_REM_ACCESS_ERR, IBV_WC_TM_RECV, 0, 0);
	/* nothing placed, and no FIN */
	EXPECT_RB();
	EXPECT_EQ(IBV_QPS_ERR, rc_qp_state(self->r.qp));
}

TEST_F(tm, rndv_short)
{
	uint32_t n;

	tm_env(_metadata, self, 64, 16);
	/* 40 bytes for 4096: the request itself, cut at the buffer's end */
	ASSERT_EQ(0, tm_add(self, 0x79, ~0ULL, 0x79, 8192, 40, 0, NULL));
	n = tm_rndv_msg(self, 0x79, 4096, 4096, self->sb.mr->rkey, 16);
	tm_send(_metadata, self, n, IBV_WC_SUCCESS);
	EXPECT_TM_WC(0x79, IBV_WC_TM_RNDV_INCOMPLETE, IBV_WC_TM_RECV, 0, 0);
	memcpy(self->img + 8192, self->sb.p, 40);
	EXPECT_RB();
	EXPECT_EQ(IBV_QPS_RTS, rc_qp_state(self->r.qp));
	EXPECT_TM_EMPTY();
}

/*
 * The SRQ's CQ overflows: a rendezvous matched then cannot complete, the
 * receiving QP goes to error with its READ and FIN flushed, the sender is
 * told; nothing hangs and no byte is placed.
 */
TEST_F(tm, cq_overflow)
{
	struct ibv_cq *cq;
	int i, n;

	self->cq_size = 4;
	tm_env(_metadata, self, 64, 16);
	cq = ibv_cq_ex_to_cq(self->cq);
	for (i = 0; i <= cq->cqe + 1; i++)
		ASSERT_EQ(0, tm_op(self, IBV_WR_TAG_SYNC, IBV_OPS_SIGNALED,
				   60 + i, NULL));
	ASSERT_EQ(0, tm_add(self, 0x7a, ~0ULL, 0x7a, 8192, 8192, 0, NULL));
	tm_post_fin_wqe(_metadata, self, TM_BUF - 4096);
	n = tm_rndv_msg(self, 0x7a, 4096, 4096, self->sb.mr->rkey, 0);
	tm_send(_metadata, self, n, IBV_WC_REM_OP_ERR);
	EXPECT_EQ(IBV_QPS_ERR, rc_qp_state(self->r.qp));
	EXPECT_RB();
}

TEST_F(tm, multi_packet)
{
	const uint32_t len = 3 * 4096 + 100;

	tm_env(_metadata, self, 64, 16);
	ASSERT_EQ(0, tm_add(self, 0x99, ~0ULL, 0x99, 65536, 65536, 0, NULL));
	tm_msg(self, IBV_TMH_EAGER, 0x99, 0x55, len, 16);
	tm_send(_metadata, self, len, IBV_WC_SUCCESS);
	/* the match at the first packet, the data after the last */
	EXPECT_TM_WC(0x99, IBV_WC_SUCCESS, IBV_WC_TM_RECV, IBV_WC_TM_MATCH,
		     0x99);
	EXPECT_EQ(0x55u, self->last.priv);
	EXPECT_TM_WC(0x99, IBV_WC_SUCCESS, IBV_WC_TM_RECV,
		     IBV_WC_TM_DATA_VALID, 0);
	EXPECT_EQ(len - TM_HDR, self->last.byte_len);
	memcpy(self->img + 65536, self->sb.p + TM_HDR, len - TM_HDR);
	EXPECT_RB();
}

TEST_F(tm, eager_too_long)
{

	tm_env(_metadata, self, 64, 16);
	ASSERT_EQ(0, tm_add(self, 0x42, ~0ULL, 0x42, 8192, 100, 0, NULL));
	tm_msg(self, IBV_TMH_EAGER, 0x42, 0, 200, 17);
	tm_send(_metadata, self, 200, IBV_WC_REM_INV_REQ_ERR);
	EXPECT_TM_WC(0x42, IBV_WC_LOC_LEN_ERR, IBV_WC_TM_RECV, 0, 0);
	/* no byte beyond the buffer */
	EXPECT_SAME_BYTES(self->rb.p + 8192 + 100, self->img + 8192 + 100,
			  TM_BUF - 8192 - 100, "beyond the tagged buffer");
}

TEST_F(tm, bad_inputs)
{
	struct ibv_srq_init_attr sa = { .attr = { .max_wr = 4, .max_sge = 1 } };
	struct ibv_ops_wr wr, *bad;
	struct ibv_sge sge[5];
	struct vrdma_srq_op op;
	struct vrdma_srq_ops_resp resp;
	struct ibv_qp_init_attr qa;
	struct ibv_srq *basic;
	uint32_t h, handles[2];
	struct ibv_qp *qp;
	int i;

	tm_env(_metadata, self, 8, 8);
	/* list operations on a basic SRQ */
	basic = ibv_create_srq(self->db->pd, &sa);
	ASSERT_NE(NULL, basic);
	memset(&wr, 0, sizeof(wr));
	wr.opcode = IBV_WR_TAG_SYNC;
	bad = NULL;
	EXPECT_NE(0, ibv_post_srq_ops(basic, &wr, &bad));
	EXPECT_EQ(&wr, bad);
	EXPECT_EQ(0, ibv_destroy_srq(basic));
	/* handles beyond the list, opcodes and flags nobody knows */
	h = 8;
	EXPECT_EQ(EINVAL, tm_op(self, IBV_WR_TAG_DEL, 0, 1, &h));
	h = 0xffffffff;
	EXPECT_EQ(EINVAL, tm_op(self, IBV_WR_TAG_DEL, 0, 1, &h));
	EXPECT_EQ(EINVAL, tm_op(self, 7, 0, 1, NULL));
	EXPECT_EQ(EINVAL, tm_op(self, IBV_WR_TAG_SYNC, 0x80, 1, NULL));
	/* SGEs: too many, a bad lkey, beyond the MR */
	for (i = 0; i < 5; i++) {
		sge[i].addr = (uintptr_t)self->rb.p;
		sge[i].length = 16;
		sge[i].lkey = self->rb.mr->lkey;
	}
	memset(&wr, 0, sizeof(wr));
	wr.opcode = IBV_WR_TAG_ADD;
	wr.tm.add.sg_list = sge;
	wr.tm.add.num_sge = self->ax.tm_caps.max_sge + 1;
	EXPECT_EQ(EINVAL, ibv_post_srq_ops(self->srq, &wr, &bad));
	wr.tm.add.num_sge = 1;
	sge[0].lkey ^= 0x80;
	EXPECT_EQ(EINVAL, ibv_post_srq_ops(self->srq, &wr, &bad));
	sge[0].lkey = self->rb.mr->lkey;
	sge[0].length = TM_BUF + 1;
	EXPECT_EQ(EINVAL, ibv_post_srq_ops(self->srq, &wr, &bad));
	EXPECT_TM_EMPTY();
	/* a TM SRQ takes RC QPs only */
	memset(&qa, 0, sizeof(qa));
	qa.send_cq = self->r.scq;
	qa.recv_cq = self->r.rcq;
	qa.srq = self->srq;
	qa.qp_type = IBV_QPT_UD;
	qa.cap.max_send_wr = 1;
	qa.cap.max_send_sge = 1;
	qp = ibv_create_qp(self->db->pd, &qa);
	EXPECT_EQ(NULL, qp);
	if (qp)
		ibv_destroy_qp(qp);
	if (strcmp(rc_cfg.type, "vrdma"))
		return;
	/* the driver's method with garbage: refused, nothing done */
	memset(&op, 0, sizeof(op));
	op.opcode = VRDMA_SRQ_OP_TAG_SYNC;
	op.reserved = 1;
	ASSERT_EQ(0, tm_ioctl(self, &op, sizeof(op), handles,
			      sizeof(handles), &resp));
	EXPECT_EQ(0u, resp.done);
	EXPECT_EQ(EINVAL, (int)resp.error);
	op.reserved = 0;
	op.opcode = VRDMA_SRQ_OP_TAG_ADD;
	op.num_sge = 0xffff;
	ASSERT_EQ(0, tm_ioctl(self, &op, sizeof(op), handles,
			      sizeof(handles), &resp));
	EXPECT_EQ(EINVAL, (int)resp.error);
	/* a length that is no whole number of operations */
	EXPECT_NE(0, tm_ioctl(self, &op, sizeof(op) - 1, handles,
			      sizeof(handles), &resp));
	/* no room for the handles */
	EXPECT_NE(0, tm_ioctl(self, &op, sizeof(op), handles, 2, &resp));
	EXPECT_TM_EMPTY();
}

int main(int argc, char **argv)
{
	return rc_suite_main(argc, argv);
}
