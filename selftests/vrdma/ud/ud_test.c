// SPDX-License-Identifier: GPL-2.0
/*
 * UD and UC queue pairs and address handles through the standard verbs API.
 *
 * UD ("ud" fixture): SEND and SEND with immediate through an address
 * handle, sizes 0 to the port MTU, gather and scatter lists, inline data;
 * the 40 bytes of GRH in front of the received data are checked field by
 * field (for IPv4: 20 zero bytes and the IPv4 header; for IPv6: the IPv6
 * header), and so is every CQE field (src_qp, IBV_WC_GRH, byte_len with the
 * 40 bytes, sl with the L3 header type as mlx5 reports it); an answer
 * through ibv_create_ah_from_wc() proves libibverbs reads the GRH as it
 * should.  Then what must not arrive: a wrong Q_Key, a
 * message longer than the MTU (an error completion, and the SQ error state
 * SQE that a modify to RTS leaves), an AH of another PD or another process,
 * a message without a posted receive; many destinations through several
 * AHs, and two QPs on one SRQ, where each receiver knows a message by its
 * data, since UD promises no order (the _reordered tests send the
 * messages last first, as a path may deliver them).  Four variants: one
 * device talking to itself or two devices, over IPv4 or IPv6 GIDs.
 *
 * UC ("uc" fixture): SEND, SEND with immediate, RDMA WRITE and WRITE with
 * immediate, byte-exact as in rc_test (rc_xfer()), including messages of
 * many packets; and the messages a UC responder drops without a word: no
 * receive WQE, a bad rkey, no remote write access, and -- with packets
 * built by the test and sent through a raw socket -- lost packets, PSN
 * jumps and messages interrupted by others.  A receive buffer too small
 * is the responder's own error: the QP goes to ERR.
 *
 * VRDMA_TEST_TYPE=rxe runs the same tests on rdma_rxe; where rxe (Linux
 * 6.1) differs, its behaviour is accepted on rxe only and logged.
 *
 * Runs as root in the test VM.  main() sets up what rc_test has
 * (rc_suite.h: the module, a veth pair, policy routing, two RDMA devices)
 * and adds IPv6 addresses to the veth.
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <net/if.h>
#include <linux/if_ether.h>
#include <linux/if_packet.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <infiniband/verbs.h>

#include "rc_lib.h"
#include "rc_suite.h"
#include "wire_lib.h"

/* The devices' RoCE v2 GIDs with the IPv6 addresses; -1 without IPv6. */
static int ud_gid6_idx[2] = { -1, -1 };

/* Added to rc_suite.h's veth (NETDEV0, NETDEV1) for the IPv6 variants. */
#define IP6_0		"fd00:213::1"
#define IP6_1		"fd00:213::2"

#define UD_QKEY		0x11111111
#define UD_HOP_LIMIT	17
/*
 * What arrives instead: for a user AH ib_core resolves the destination MAC
 * and replaces the hop limit with its route's (ib_resolve_eth_dmac()),
 * here the default of net.ipv4.ip_default_ttl and IPv6's hop_limit.
 */
#define UD_HOP_LIMIT_ROUTE	64
#define UD_TCLASS	0x28		/* DSCP 10, no ECN */
#define UD_FLOW		0x12345
#define UD_DEPTH	64
#define GRH		40

/* ---- UD QPs and AHs ------------------------------------------------- */

struct ud_qp {
	struct rc_dev *dev;
	struct ibv_pd *pd;
	struct ibv_cq *scq, *rcq;
	struct ibv_qp *qp;
};

/* A UD QP in RTS on @d with Q_Key @qkey; receiving through @srq if set. */
static void ud_qp_create_srq(struct __test_metadata *_metadata,
			     struct ud_qp *q, struct rc_dev *d,
			     struct ibv_pd *pd, uint32_t qkey,
			     struct ibv_srq *srq)
{
	struct ibv_qp_init_attr ia = {
		.qp_type = IBV_QPT_UD,
		.srq = srq,
		.cap = {
			.max_send_wr = UD_DEPTH, .max_recv_wr = UD_DEPTH,
			.max_send_sge = 4, .max_recv_sge = 4,
			.max_inline_data = 64,
		},
	};
	struct ibv_qp_attr a = {
		.qp_state = IBV_QPS_INIT, .port_num = RC_PORT, .qkey = qkey,
	};

	memset(q, 0, sizeof(*q));
	q->dev = d;
	q->pd = pd;
	q->scq = ibv_create_cq(d->ctx, 2 * UD_DEPTH, NULL, NULL, 0);
	q->rcq = ibv_create_cq(d->ctx, 2 * UD_DEPTH, NULL, NULL, 0);
	ASSERT_NE(NULL, q->scq);
	ASSERT_NE(NULL, q->rcq);
	ia.send_cq = q->scq;
	ia.recv_cq = q->rcq;
	q->qp = ibv_create_qp(pd, &ia);
	ASSERT_NE(NULL, q->qp) {
		TH_LOG("ibv_create_qp(UD): %s", strerror(errno));
	}
	ASSERT_EQ(0, ibv_modify_qp(q->qp, &a, IBV_QP_STATE | IBV_QP_PKEY_INDEX |
				   IBV_QP_PORT | IBV_QP_QKEY));
	a.qp_state = IBV_QPS_RTR;
	ASSERT_EQ(0, ibv_modify_qp(q->qp, &a, IBV_QP_STATE));
	a.qp_state = IBV_QPS_RTS;
	a.sq_psn = 0xfffffe;	/* wraps at once */
	ASSERT_EQ(0, ibv_modify_qp(q->qp, &a, IBV_QP_STATE | IBV_QP_SQ_PSN));
}

static void ud_qp_create(struct __test_metadata *_metadata, struct ud_qp *q,
			 struct rc_dev *d, struct ibv_pd *pd, uint32_t qkey)
{
	ud_qp_create_srq(_metadata, q, d, pd, qkey, NULL);
}

static void ud_qp_destroy(struct ud_qp *q)
{
	if (q->qp)
		ibv_destroy_qp(q->qp);
	if (q->scq)
		ibv_destroy_cq(q->scq);
	if (q->rcq)
		ibv_destroy_cq(q->rcq);
	memset(q, 0, sizeof(*q));
}

static struct ibv_ah *ud_ah(struct ibv_pd *pd, int sgid_idx,
			    const union ibv_gid *dgid, uint8_t tclass,
			    uint32_t flow)
{
	struct ibv_ah_attr a = {
		.is_global = 1,
		.grh = {
			.dgid = *dgid, .sgid_index = sgid_idx,
			.hop_limit = UD_HOP_LIMIT, .traffic_class = tclass,
			.flow_label = flow,
		},
		.port_num = RC_PORT,
	};

	return ibv_create_ah(pd, &a);
}

static int ud_post_send(struct ibv_qp *qp, uint64_t wr_id,
			enum ibv_wr_opcode op, struct ibv_sge *sge, int n,
			unsigned int flags, struct ibv_ah *ah, uint32_t qpn,
			uint32_t qkey, uint32_t imm)
{
	struct ibv_send_wr wr = {
		.wr_id = wr_id, .sg_list = n ? sge : NULL, .num_sge = n,
		.opcode = op, .send_flags = IBV_SEND_SIGNALED | flags,
		.imm_data = htobe32(imm),
	}, *bad = NULL;

	wr.wr.ud.ah = ah;
	wr.wr.ud.remote_qpn = qpn;
	wr.wr.ud.remote_qkey = qkey;
	return ibv_post_send(qp, &wr, &bad);
}

static int ud_post_recv(struct ibv_qp *qp, uint64_t wr_id, struct rc_buf *b,
			size_t off, size_t len)
{
	struct ibv_sge sge = {
		.addr = (uintptr_t)(b->p + off), .length = len,
		.lkey = b->mr->lkey,
	};
	struct ibv_recv_wr wr = {
		.wr_id = wr_id, .sg_list = &sge, .num_sge = 1,
	}, *bad = NULL;

	return ibv_post_recv(qp, &wr, &bad);
}

static uint16_t be16_at(const uint8_t *p)
{
	return p[0] << 8 | p[1];
}

/* The one's complement sum of an IPv4 header: 0xffff if it checks. */
static uint16_t ip4_csum(const uint8_t *h)
{
	uint32_t sum = 0;
	int i;

	for (i = 0; i < 20; i += 2)
		sum += be16_at(h + i);
	while (sum >> 16)
		sum = (sum & 0xffff) + (sum >> 16);
	return sum;
}

/*
 * The 40 bytes in front of a UD message of @len bytes from @sgid to @dgid:
 * the IP header of the packet that carried it.
 */
static void ud_check_grh(struct __test_metadata *_metadata,
			 const uint8_t *grh, int ipv6,
			 const union ibv_gid *sgid, const union ibv_gid *dgid,
			 size_t len, int imm, uint8_t tclass, uint32_t flow,
			 const char *what)
{
	/* UDP, BTH, DETH, ImmDt, payload, pad, ICRC */
	size_t udp = 8 + 12 + 8 + (imm ? 4 : 0) + len + (-len & 3) + 4;
	static const uint8_t zero[20];
	/* Each test is a process of its own: rxe quirks are logged once. */
	static int csum_quirk, flow_quirk;

	if (!ipv6) {
		const uint8_t *ip = grh + 20;

		EXPECT_EQ(0, memcmp(grh, zero, 20)) {
			TH_LOG("%s: IPv4 GRH: the first 20 bytes not zero", what);
		}
		EXPECT_EQ(0x45, ip[0]) {
			TH_LOG("%s: IPv4 version/IHL", what);
		}
		EXPECT_EQ(tclass, ip[1]) {
			TH_LOG("%s: TOS", what);
		}
		EXPECT_EQ(20 + udp, be16_at(ip + 2)) {
			TH_LOG("%s: total length", what);
		}
		EXPECT_EQ(0x4000, be16_at(ip + 6)) {
			TH_LOG("%s: DF, no fragment", what);
		}
		EXPECT_EQ(UD_HOP_LIMIT_ROUTE, ip[8]);
		EXPECT_EQ(17, ip[9]);
		if (ip4_csum(ip) != 0xffff && rc_cfg.is_rxe) {
			if (!csum_quirk++)
				RC_QUIRK("%s: IPv4 header checksum not set",
					 what);
		} else {
			EXPECT_EQ(0xffff, ip4_csum(ip)) {
				TH_LOG("%s: IPv4 header checksum", what);
			}
		}
		EXPECT_EQ(0, memcmp(ip + 12, sgid->raw + 12, 4)) {
			TH_LOG("%s: source address", what);
		}
		EXPECT_EQ(0, memcmp(ip + 16, dgid->raw + 12, 4)) {
			TH_LOG("%s: destination address", what);
		}
		return;
	}
	EXPECT_EQ(6, grh[0] >> 4) {
		TH_LOG("%s: IPv6 version", what);
	}
	EXPECT_EQ(tclass, (grh[0] & 0xf) << 4 | grh[1] >> 4) {
		TH_LOG("%s: traffic class", what);
	}
	if (((grh[1] & 0xf) << 16 | grh[2] << 8 | grh[3]) != flow &&
	    rc_cfg.is_rxe) {
		if (!flow_quirk++)
			RC_QUIRK("%s: flow label not sent", what);
	} else {
		EXPECT_EQ(flow, (grh[1] & 0xf) << 16 | grh[2] << 8 | grh[3]) {
			TH_LOG("%s: flow label", what);
		}
	}
	EXPECT_EQ(udp, be16_at(grh + 4)) {
		TH_LOG("%s: payload length", what);
	}
	EXPECT_EQ(17, grh[6]);
	EXPECT_EQ(UD_HOP_LIMIT_ROUTE, grh[7]);
	EXPECT_EQ(0, memcmp(grh + 8, sgid->raw, 16)) {
		TH_LOG("%s: source address", what);
	}
	EXPECT_EQ(0, memcmp(grh + 24, dgid->raw, 16)) {
		TH_LOG("%s: destination address", what);
	}
}

/* ---- the UD fixture --------------------------------------------------- */

FIXTURE(ud) {
	struct rc_dev d0, d1;
	struct rc_dev *da, *db;
	int ipv6;
	int gidx_a, gidx_b;		/* source GIDs of A and B */
	union ibv_gid gid_a, gid_b;
	struct ud_qp a, b;
	struct rc_buf ba, bb;
	struct ibv_ah *ah_ab, *ah_ba;	/* A to B, B to A */
	int mtu;
	uint8_t last_grh[GRH];		/* of the last ud_xfer() */
};

FIXTURE_VARIANT(ud) {
	int two_devices;
	int ipv6;
};

FIXTURE_VARIANT_ADD(ud, loopback) {
	.two_devices = 0, .ipv6 = 0,
};

FIXTURE_VARIANT_ADD(ud, two_devices) {
	.two_devices = 1, .ipv6 = 0,
};

FIXTURE_VARIANT_ADD(ud, loopback_ipv6) {
	.two_devices = 0, .ipv6 = 1,
};

FIXTURE_VARIANT_ADD(ud, two_devices_ipv6) {
	.two_devices = 1, .ipv6 = 1,
};

FIXTURE_SETUP(ud)
{
	int ib = variant->two_devices;

	self->ipv6 = variant->ipv6;
	/*
	 * Linux 6.1's kselftest_harness.h runs the test after a SKIP(return)
	 * in the setup: leave by the jump a failed ASSERT takes instead
	 * (the test and the teardown are not run, the result is a skip).
	 */
	if (self->ipv6 && (ud_gid6_idx[0] < 0 || ud_gid6_idx[1] < 0))
		RC_SKIP_UNLESS_CI(longjmp(_metadata->env, 1),
				  "no IPv6 RoCE v2 GIDs");
	rc_ends_open(_metadata, &self->d0, &self->d1, &self->da, &self->db,
		     variant->two_devices);
	self->gidx_a = self->ipv6 ? ud_gid6_idx[0] : self->da->gid_idx;
	self->gidx_b = self->ipv6 ? ud_gid6_idx[ib] : self->db->gid_idx;
	ASSERT_EQ(0, ibv_query_gid(self->da->ctx, RC_PORT, self->gidx_a,
				   &self->gid_a));
	ASSERT_EQ(0, ibv_query_gid(self->db->ctx, RC_PORT, self->gidx_b,
				   &self->gid_b));
	self->mtu = 128 << self->da->port.active_mtu;

	ud_qp_create(_metadata, &self->a, self->da, self->da->pd, UD_QKEY);
	ud_qp_create(_metadata, &self->b, self->db, self->db->pd, UD_QKEY);
	rc_buf_alloc(_metadata, &self->ba, self->da->pd, 64 * 1024,
		     IBV_ACCESS_LOCAL_WRITE);
	rc_buf_alloc(_metadata, &self->bb, self->db->pd, 64 * 1024,
		     IBV_ACCESS_LOCAL_WRITE);
	self->ah_ab = ud_ah(self->da->pd, self->gidx_a, &self->gid_b,
			    UD_TCLASS, UD_FLOW);
	ASSERT_NE(NULL, self->ah_ab) {
		TH_LOG("ibv_create_ah: %s", strerror(errno));
	}
	self->ah_ba = ud_ah(self->db->pd, self->gidx_b, &self->gid_a,
			    UD_TCLASS, UD_FLOW);
	ASSERT_NE(NULL, self->ah_ba);
}

FIXTURE_TEARDOWN(ud)
{
	if (self->ah_ab)
		ibv_destroy_ah(self->ah_ab);
	if (self->ah_ba)
		ibv_destroy_ah(self->ah_ba);
	ud_qp_destroy(&self->a);
	ud_qp_destroy(&self->b);
	rc_buf_free(&self->ba);
	rc_buf_free(&self->bb);
	rc_dev_close(&self->d1);
	rc_dev_close(&self->d0);
}

/* One UD message and what to check of it. */
struct ud_xfer {
	size_t len;
	int lsge, rsge;		/* gather and receive scatter lists */
	int imm;		/* SEND with immediate */
	unsigned int flags;	/* IBV_SEND_INLINE */
	uint32_t seed;
	uint64_t wr_id;
};

/*
 * Posts a receive of GRH + len + 8 bytes on @dst, sends @x from @src with
 * @ah to @dst, checks both completions, the GRH and every byte of the
 * receive range (data where it belongs, the rest untouched).  Leaves the
 * receive completion in @wc and the received bytes at @dbuf.
 */
static void ud_xfer(struct __test_metadata *_metadata, FIXTURE_DATA(ud) *self,
		    struct ud_qp *src, struct rc_buf *sbuf, struct ud_qp *dst,
		    struct rc_buf *dbuf, struct ibv_ah *ah,
		    const union ibv_gid *sgid, const union ibv_gid *dgid,
		    const struct ud_xfer *x, struct ibv_wc *wc)
{
	uint32_t seed = x->seed * 11 + 3, bg = seed ^ 0x5a5a5a5a;
	size_t rlen = GRH + x->len + 8, at, i, n;
	struct ibv_sge lsge[RC_MAX_SGE], rsge[RC_MAX_SGE];
	struct ibv_recv_wr rwr, *rbad = NULL;
	uint8_t *img, *got, *inl = NULL;
	struct rc_sgl lg, rg;
	char what[96];
	int ret;

	snprintf(what, sizeof(what), "UD %s len %zu lsge %d rsge %d%s",
		 x->imm ? "SEND_IMM" : "SEND", x->len, x->lsge, x->rsge,
		 (x->flags & IBV_SEND_INLINE) ? " inline" : "");
	rc_sgl_layout(&lg, 3, x->len, x->lsge, seed);
	rc_sgl_layout(&rg, 5, rlen, x->rsge, seed + 1);
	ASSERT_LE(lg.end, sbuf->size);
	ASSERT_LE(rg.end + 16, dbuf->size);

	rc_fill(dbuf->p, rg.end + 16, bg, 0);
	img = malloc(rg.end + 16);
	got = malloc(rlen);
	ASSERT_NE(NULL, img);
	ASSERT_NE(NULL, got);
	memcpy(img, dbuf->p, rg.end + 16);
	if (x->flags & IBV_SEND_INLINE) {
		inl = malloc(lg.end + 1);
		ASSERT_NE(NULL, inl);
		rc_sgl_fill(&lg, inl, seed);
	} else {
		rc_sgl_fill(&lg, sbuf->p, seed);
	}

	rc_sgl_to_ibv(&rg, rsge, dbuf->p, dbuf->mr->lkey);
	memset(&rwr, 0, sizeof(rwr));
	rwr.wr_id = x->wr_id + 1;
	rwr.sg_list = rsge;
	rwr.num_sge = rg.n;
	ASSERT_EQ(0, ibv_post_recv(dst->qp, &rwr, &rbad));
	rc_sgl_to_ibv(&lg, lsge, inl ? inl : sbuf->p,
		      inl ? 0 : sbuf->mr->lkey);
	ret = ud_post_send(src->qp, x->wr_id,
			   x->imm ? IBV_WR_SEND_WITH_IMM : IBV_WR_SEND,
			   lsge, lg.n, x->flags, ah, dst->qp->qp_num, UD_QKEY,
			   0xabc00000 + x->seed);
	ASSERT_EQ(0, ret) {
		TH_LOG("%s: ibv_post_send: %s", what, strerror(ret));
	}
	if (inl)
		memset(inl, 0xee, lg.end + 1);

	rc_expect_wc(_metadata, src->scq, &(struct rc_wc_exp){
		.wr_id = x->wr_id, .status = IBV_WC_SUCCESS,
		.opcode = IBV_WC_SEND, .qp_num = src->qp->qp_num,
	}, what);
	memset(wc, 0, sizeof(*wc));
	ASSERT_EQ(1, rc_poll(dst->rcq, wc, 1, RC_TIMEOUT_MS)) {
		TH_LOG("%s: no receive completion", what);
	}
	rc_wc_check(_metadata, wc, &(struct rc_wc_exp){
		.wr_id = x->wr_id + 1, .status = IBV_WC_SUCCESS,
		.opcode = IBV_WC_RECV, .recv = 1, .byte_len = GRH + x->len,
		.imm = x->imm, .imm_data = htobe32(0xabc00000 + x->seed),
		.qp_num = dst->qp->qp_num,
	}, what);
	EXPECT_EQ(IBV_WC_GRH, wc->wc_flags & IBV_WC_GRH) {
		TH_LOG("%s: IBV_WC_GRH not set", what);
	}
	EXPECT_EQ(src->qp->qp_num, wc->src_qp) {
		TH_LOG("%s: src_qp", what);
	}
	/*
	 * The SL reports the L3 header as RoCE NICs (mlx5) do, 1 IPv6 and 2
	 * IPv4 (UCX's ud_verbs needs it); rxe reports 0.
	 */
	if (!(rc_cfg.is_rxe && wc->sl == 0)) {
		EXPECT_EQ(self->ipv6 ? 1 : 2, wc->sl) {
			TH_LOG("%s: sl", what);
		}
	}

	/* Gather what arrived, check the GRH, then every byte. */
	for (i = 0, at = 0; i < (size_t)rg.n; i++) {
		n = rg.s[i].len < rlen - at ? rg.s[i].len : rlen - at;
		memcpy(got + at, dbuf->p + rg.s[i].off, n);
		at += n;
	}
	ud_check_grh(_metadata, got, self->ipv6, sgid, dgid, x->len, x->imm,
		     UD_TCLASS, UD_FLOW, what);
	memcpy(self->last_grh, got, GRH);
	/* The GRH is checked: take it as it is, and the data as expected. */
	at = 0;
	for (i = 0; i < (size_t)rg.n && at < GRH; i++) {
		n = rg.s[i].len < GRH - at ? rg.s[i].len : GRH - at;
		memcpy(img + rg.s[i].off, got + at, n);
		at += n;
	}
	{
		/* The payload stream starts GRH bytes into the list. */
		size_t skip = GRH, done = 0;

		for (i = 0; i < (size_t)rg.n && done < x->len; i++) {
			size_t off = rg.s[i].off, l = rg.s[i].len;

			if (skip >= l) {
				skip -= l;
				continue;
			}
			off += skip;
			l -= skip;
			skip = 0;
			if (l > x->len - done)
				l = x->len - done;
			rc_fill(img + off, l, seed, done);
			done += l;
		}
	}
	EXPECT_SAME_BYTES(dbuf->p, img, rg.end + 16, what);
	free(img);
	free(got);
	free(inl);
}

static void ud_xfer_ab(struct __test_metadata *_metadata,
		       FIXTURE_DATA(ud) *self, const struct ud_xfer *x,
		       struct ibv_wc *wc)
{
	ud_xfer(_metadata, self, &self->a, &self->ba, &self->b, &self->bb,
		self->ah_ab, &self->gid_a, &self->gid_b, x, wc);
}

static enum ibv_qp_state ud_state(struct ud_qp *q)
{
	return rc_qp_state(q->qp);
}

/*
 * After a send WQE failed: the SQ is stopped (SQE); modify_qp to RTS
 * restarts it.  rxe puts the whole QP in ERR instead: then a new QP.
 */
static void ud_recover_sq(struct __test_metadata *_metadata,
			  FIXTURE_DATA(ud) *self, struct ud_qp *q)
{
	struct ibv_qp_attr a = { .qp_state = IBV_QPS_RTS };
	enum ibv_qp_state st = ud_state(q);

	if (st == IBV_QPS_ERR && rc_cfg.is_rxe) {
		RC_QUIRK("a failed UD send WQE puts the QP in ERR, not SQE");
		ud_qp_destroy(q);
		ud_qp_create(_metadata, q, self->da, self->da->pd, UD_QKEY);
		return;
	}
	ASSERT_EQ(IBV_QPS_SQE, st);
	a.cur_qp_state = IBV_QPS_SQE;
	ASSERT_EQ(0, ibv_modify_qp(q->qp, &a, IBV_QP_STATE |
				   IBV_QP_CUR_STATE));
	ASSERT_EQ(IBV_QPS_RTS, ud_state(q));
}

TEST_F_TIMEOUT(ud, send_recv, 120)
{
	static const struct { size_t len; int lsge, rsge, imm, inl; } m[] = {
		{ 0, 0, 1, 0, 0 }, { 1, 1, 1, 1, 0 }, { 333, 3, 2, 0, 0 },
		{ 64, 2, 4, 1, 1 }, { 1000, 4, 3, 1, 0 },
		{ 0 /* MTU - 1 */, 2, 2, 0, 0 }, { 0 /* MTU */, 1, 4, 1, 0 },
	};
	struct ibv_wc wc;
	struct ibv_ah *back;
	unsigned int i;

	for (i = 0; i < sizeof(m) / sizeof(m[0]); i++) {
		size_t len = m[i].len;

		if (i == 5)
			len = self->mtu - 1;
		if (i == 6)
			len = self->mtu;
		ud_xfer_ab(_metadata, self, &(struct ud_xfer){
			.len = len, .lsge = m[i].lsge, .rsge = m[i].rsge,
			.imm = m[i].imm,
			.flags = m[i].inl ? IBV_SEND_INLINE : 0,
			.seed = i, .wr_id = 0x100 + 16 * i,
		}, &wc);
	}

	/*
	 * Answer the last message the way applications do: an AH made
	 * from the completion and the GRH in front of the data.
	 */
	back = ibv_create_ah_from_wc(self->db->pd, &wc,
				     (struct ibv_grh *)self->last_grh, RC_PORT);
	ASSERT_NE(NULL, back) {
		TH_LOG("ibv_create_ah_from_wc: %s", strerror(errno));
	}
	ud_xfer(_metadata, self, &self->b, &self->bb, &self->a, &self->ba,
		back, &self->gid_b, &self->gid_a, &(struct ud_xfer){
			.len = 200, .lsge = 1, .rsge = 1, .seed = 50,
			.wr_id = 0x500,
		}, &wc);
	EXPECT_EQ(0, ibv_destroy_ah(back));
}

/* The name of the device B is on, for its counters. */
static const char *ud_name_b(FIXTURE_DATA(ud) *self)
{
	return rc_cfg.name[self->db == &self->d1];
}

/* Wait until counter @name of @dev exceeds @than (vrdma), or a while. */
static long ud_wait_counter(const char *dev, const char *name, long than)
{
	double deadline = rc_now_ms() + (double)RC_TIMEOUT_MS * rc_cfg.slow;
	long v;

	if (rc_cfg.is_rxe) {
		usleep(RC_QUIET_MS * 1000 * rc_cfg.slow);
		return -1;
	}
	while ((v = rc_hw_counter(dev, name)) <= than && rc_now_ms() < deadline)
		usleep(1000);
	return v;
}

static void ud_sge(struct ibv_sge *sge, struct rc_buf *b, size_t off,
		   size_t len)
{
	sge->addr = (uintptr_t)(b->p + off);
	sge->length = len;
	sge->lkey = b->mr->lkey;
}

/* A sent 100 bytes (seed) that arrived in B's receive @wr_id at offset 0. */
static void ud_expect_arrival(struct __test_metadata *_metadata,
			      FIXTURE_DATA(ud) *self, uint64_t wr_id,
			      uint32_t seed, const char *what)
{
	uint8_t want[100];

	rc_expect_wc(_metadata, self->b.rcq, &(struct rc_wc_exp){
		.wr_id = wr_id, .status = IBV_WC_SUCCESS,
		.opcode = IBV_WC_RECV, .recv = 1, .byte_len = GRH + 100,
		.qp_num = self->b.qp->qp_num,
	}, what);
	rc_fill(want, sizeof(want), seed, 0);
	EXPECT_SAME_BYTES(self->bb.p + GRH, want, sizeof(want), what);
}

/* A sends 100 bytes of stream @seed to B with @qkey; A's WQE succeeds. */
static void ud_send100(struct __test_metadata *_metadata,
		       FIXTURE_DATA(ud) *self, struct ibv_ah *ah,
		       uint32_t qkey, uint32_t seed, uint64_t wr_id)
{
	struct ibv_sge sge;

	rc_fill(self->ba.p, 100, seed, 0);
	ud_sge(&sge, &self->ba, 0, 100);
	ASSERT_EQ(0, ud_post_send(self->a.qp, wr_id, IBV_WR_SEND, &sge, 1, 0,
				  ah, self->b.qp->qp_num, qkey, 0));
	rc_expect_wc(_metadata, self->a.scq, &(struct rc_wc_exp){
		.wr_id = wr_id, .status = IBV_WC_SUCCESS,
		.opcode = IBV_WC_SEND, .qp_num = self->a.qp->qp_num,
	}, "send");
}

TEST_F(ud, qkey)
{
	struct ibv_qp_attr a = { .qkey = UD_QKEY ^ 0x00ff0000 };
	const char *nb = ud_name_b(self);
	long before = rc_hw_counter(nb, "qkey_errors");
	struct ibv_wc wc;

	ASSERT_EQ(0, ud_post_recv(self->b.qp, 0x11, &self->bb, 0, GRH + 100));
	/* The receiver's Q_Key or nothing. */
	ud_send100(_metadata, self, self->ah_ab, UD_QKEY + 1, 1, 1);
	EXPECT_CQ_EMPTY(self->b.rcq, "wrong Q_Key");
	if (!rc_cfg.is_rxe)
		EXPECT_EQ(before + 1, ud_wait_counter(nb, "qkey_errors",
						      before));

	/* The high bit sends the QP's own Q_Key, here the right one. */
	ud_send100(_metadata, self, self->ah_ab, 0x80000000, 2, 2);
	if (rc_cfg.is_rxe && !rc_poll(self->b.rcq, &wc, 1, RC_QUIET_MS)) {
		RC_QUIRK("the high bit of a WR's Q_Key is sent as it is");
		ud_send100(_metadata, self, self->ah_ab, UD_QKEY, 4, 4);
		ud_expect_arrival(_metadata, self, 0x11, 4, "the WR's Q_Key");
		return;
	}
	ud_expect_arrival(_metadata, self, 0x11, 2, "the QP's Q_Key");

	/* A's Q_Key changed (RTS -> RTS): now the high bit sends a wrong one. */
	ASSERT_EQ(0, ibv_modify_qp(self->a.qp, &a, IBV_QP_QKEY));
	ASSERT_EQ(0, ud_post_recv(self->b.qp, 0x12, &self->bb, 0, GRH + 100));
	ud_send100(_metadata, self, self->ah_ab, 0x80000000, 3, 3);
	EXPECT_CQ_EMPTY(self->b.rcq, "the QP's wrong Q_Key");
	ud_send100(_metadata, self, self->ah_ab, UD_QKEY, 4, 4);
	ud_expect_arrival(_metadata, self, 0x12, 4, "the WR's Q_Key");
}

TEST_F(ud, too_long)
{
	struct ibv_sge sge;
	struct ibv_wc wc;

	ASSERT_EQ(0, ud_post_recv(self->b.qp, 0x21, &self->bb, 0,
				  GRH + self->mtu + 64));
	ud_sge(&sge, &self->ba, 0, self->mtu + 1);
	ASSERT_EQ(0, ud_post_send(self->a.qp, 1, IBV_WR_SEND, &sge, 1, 0,
				  self->ah_ab, self->b.qp->qp_num, UD_QKEY, 0));
	ASSERT_EQ(1, rc_poll(self->a.scq, &wc, 1, RC_TIMEOUT_MS));
	EXPECT_EQ(1, wc.wr_id);
	EXPECT_CQ_EMPTY(self->b.rcq, "a UD message over the MTU");
	if (wc.status == IBV_WC_SUCCESS && rc_cfg.is_rxe) {
		RC_QUIRK("a UD message over the MTU is dropped silently");
	} else {
		EXPECT_EQ(IBV_WC_LOC_LEN_ERR, wc.status) {
			TH_LOG("status %s", ibv_wc_status_str(wc.status));
		}
		/* The SQ is stopped: later WQEs are flushed. */
		ud_sge(&sge, &self->ba, 0, 100);
		ASSERT_EQ(0, ud_post_send(self->a.qp, 2, IBV_WR_SEND, &sge, 1,
					  0, self->ah_ab, self->b.qp->qp_num,
					  UD_QKEY, 0));
		rc_expect_wc(_metadata, self->a.scq, &(struct rc_wc_exp){
			.wr_id = 2, .status = IBV_WC_WR_FLUSH_ERR,
			.qp_num = self->a.qp->qp_num,
		}, "posted in SQE");
		ud_recover_sq(_metadata, self, &self->a);
	}
	/* The receive side was never affected. */
	EXPECT_CQ_EMPTY(self->b.rcq, "after the SQ error");
	ud_send100(_metadata, self, self->ah_ab, UD_QKEY, 5, 5);
	ud_expect_arrival(_metadata, self, 0x21, 5, "after recovery");
}

/* A send with @ah, whose PD is not A's, fails and sends nothing. */
static void ud_foreign_ah(struct __test_metadata *_metadata,
			  FIXTURE_DATA(ud) *self, struct ibv_ah *ah,
			  const char *what)
{
	struct ibv_sge sge;

	ud_sge(&sge, &self->ba, 0, 100);
	ASSERT_EQ(0, ud_post_send(self->a.qp, 7, IBV_WR_SEND, &sge, 1, 0, ah,
				  self->b.qp->qp_num, UD_QKEY, 0));
	rc_expect_wc(_metadata, self->a.scq, &(struct rc_wc_exp){
		.wr_id = 7, .status = IBV_WC_LOC_QP_OP_ERR,
		.qp_num = self->a.qp->qp_num,
	}, what);
	EXPECT_CQ_EMPTY(self->b.rcq, what);
	ud_recover_sq(_metadata, self, &self->a);
}

TEST_F(ud, ah_other_pd)
{
	struct ibv_context *ctx2;
	struct ibv_pd *pd2, *pd3;
	struct ibv_ah *ah2, *ah3;

	ASSERT_EQ(0, ud_post_recv(self->b.qp, 0x31, &self->bb, 0, GRH + 100));
	/* Another PD of the same process. */
	pd2 = ibv_alloc_pd(self->da->ctx);
	ASSERT_NE(NULL, pd2);
	ah2 = ud_ah(pd2, self->gidx_a, &self->gid_b, 0, 0);
	ASSERT_NE(NULL, ah2);
	ud_foreign_ah(_metadata, self, ah2, "AH of another PD");

	/* Another context: as the kernel sees it, another process. */
	ctx2 = rc_open_by_name(rc_cfg.name[0]);
	ASSERT_NE(NULL, ctx2);
	pd3 = ibv_alloc_pd(ctx2);
	ASSERT_NE(NULL, pd3);
	ah3 = ud_ah(pd3, self->gidx_a, &self->gid_b, 0, 0);
	ASSERT_NE(NULL, ah3);
	ud_foreign_ah(_metadata, self, ah3, "AH of another context");

	/* The QP's own AH still works. */
	ud_send100(_metadata, self, self->ah_ab, UD_QKEY, 8, 8);
	ud_expect_arrival(_metadata, self, 0x31, 8, "own AH");

	EXPECT_EQ(0, ibv_destroy_ah(ah3));
	EXPECT_EQ(0, ibv_dealloc_pd(pd3));
	EXPECT_EQ(0, ibv_close_device(ctx2));
	EXPECT_EQ(0, ibv_destroy_ah(ah2));
	EXPECT_EQ(0, ibv_dealloc_pd(pd2));
}

TEST_F(ud, no_recv_wqe)
{
	const char *nb = ud_name_b(self);
	long v, before = rc_hw_counter(nb, "no_recv_wqe");
	struct ibv_wc wc;

	/* Nothing posted at B: the message is lost, not kept for later. */
	ud_send100(_metadata, self, self->ah_ab, UD_QKEY, 1, 1);
	v = ud_wait_counter(nb, "no_recv_wqe", before);
	if (!rc_cfg.is_rxe)
		EXPECT_EQ(before + 1, v);
	ud_xfer_ab(_metadata, self, &(struct ud_xfer){
		.len = 100, .lsge = 1, .rsge = 1, .seed = 2, .wr_id = 0x40,
	}, &wc);
	EXPECT_CQ_EMPTY(self->b.rcq, "the lost message");
}

TEST_F(ud, recv_too_small)
{
	struct ibv_wc wc;

	/* Room for the GRH and 99 bytes. */
	ASSERT_EQ(0, ud_post_recv(self->b.qp, 0x51, &self->bb, 0, GRH + 99));
	ud_send100(_metadata, self, self->ah_ab, UD_QKEY, 1, 1);
	ASSERT_EQ(1, rc_poll(self->b.rcq, &wc, 1, RC_TIMEOUT_MS));
	EXPECT_EQ(0x51, wc.wr_id);
	if (wc.status == IBV_WC_LOC_QP_OP_ERR && rc_cfg.is_rxe) {
		RC_QUIRK("a receive buffer too small: local QP operation error");
		return;
	}
	EXPECT_EQ(IBV_WC_LOC_LEN_ERR, wc.status) {
		TH_LOG("status %s", ibv_wc_status_str(wc.status));
	}
	EXPECT_EQ(IBV_QPS_ERR, ud_state(&self->b));
}

/*
 * The message that @data, @len bytes, holds: one of the @n messages
 * @first, @first + @step, ... where message k is @base + k bytes of
 * rc_fill() stream k; or -1 if it is none of them.  UD promises no order,
 * so a receiver knows a message by its contents, every byte of it.
 */
static int ud_which(const uint8_t *data, size_t len, int first, int step,
		    int n, size_t base)
{
	uint8_t *want = malloc(len + 1);
	int j, k, found = -1;

	if (!want)
		return -1;
	for (j = 0, k = first; j < n && found < 0; j++, k += step) {
		if (len != base + k)
			continue;
		rc_fill(want, len, k, 0);
		if (!memcmp(data, want, len))
			found = k;
	}
	free(want);
	return found;
}

/*
 * Receive WQE @wr_id, at @at, got @len bytes that hold none of the
 * messages it could: show where they differ from @k, the one it would
 * hold if the messages came in order.
 */
static void ud_no_message(struct __test_metadata *_metadata,
			  const uint8_t *at, size_t len, int k, size_t base,
			  const char *what)
{
	uint8_t *want = malloc(base + k + 1);

	ASSERT_NE(NULL, want);
	TH_LOG("%s: %zu bytes, none of the messages sent", what, len);
	rc_fill(want, base + k, k, 0);
	EXPECT_SAME_BYTES(at, want, base + k, what);
	free(want);
}

/*
 * Post k of @n: message k, or with @reversed message n - 1 - k, which a
 * receiver cannot tell from messages the path reordered.
 */
static int ud_post_order(int k, int n, int reversed)
{
	return reversed ? n - 1 - k : k;
}

/*
 * NQ receivers, each with its own Q_Key, ROUNDS messages each through
 * three AHs; each receiver consumes its receive WQEs in order, but its
 * messages may come in any order.  With @reversed the messages are sent
 * last first.
 */
static void ud_run_many_destinations(struct __test_metadata *_metadata,
				     FIXTURE_DATA(ud) *self, int reversed)
{
	enum { NQ = 6, NAH = 3, ROUNDS = 3, SLOT = 512 };
	static const uint8_t tclass[NAH] = { 0, UD_TCLASS, 0x80 };
	static const uint32_t flow[NAH] = { 1, UD_FLOW, 0xfffff };
	struct ibv_ah *ah[NAH];
	struct ud_qp q[NQ];
	struct ibv_sge sge;
	struct ibv_wc wc;
	char what[64];
	int i, r, k, p, reordered = 0;

	for (i = 0; i < NAH; i++) {
		ah[i] = ud_ah(self->da->pd, self->gidx_a, &self->gid_b,
			      tclass[i], flow[i]);
		ASSERT_NE(NULL, ah[i]);
	}
	/* Each receiver with its own Q_Key; ROUNDS receives each. */
	for (i = 0; i < NQ; i++) {
		ud_qp_create(_metadata, &q[i], self->db, self->db->pd,
			     UD_QKEY + i);
		for (r = 0; r < ROUNDS; r++)
			ASSERT_EQ(0, ud_post_recv(q[i].qp, i * ROUNDS + r,
						  &self->bb,
						  (i * ROUNDS + r) * SLOT,
						  SLOT));
	}
	/* Message k goes to receiver k % NQ through AH k % NAH. */
	for (p = 0; p < NQ * ROUNDS; p++) {
		k = ud_post_order(p, NQ * ROUNDS, reversed);
		rc_fill(self->ba.p + k * SLOT, 50 + k, k, 0);
		ud_sge(&sge, &self->ba, k * SLOT, 50 + k);
		ASSERT_EQ(0, ud_post_send(self->a.qp, k, IBV_WR_SEND, &sge, 1,
					  0, ah[k % NAH], q[k % NQ].qp->qp_num,
					  UD_QKEY + k % NQ, 0));
	}
	for (p = 0; p < NQ * ROUNDS; p++)
		rc_expect_wc(_metadata, self->a.scq, &(struct rc_wc_exp){
			.wr_id = ud_post_order(p, NQ * ROUNDS, reversed),
			.status = IBV_WC_SUCCESS, .opcode = IBV_WC_SEND,
			.qp_num = self->a.qp->qp_num,
		}, "send");
	/* Receiver i: messages i, i + NQ, ..., each once, in its r-th WQE. */
	for (i = 0; i < NQ; i++) {
		int seen[ROUNDS] = { 0 };

		for (r = 0; r < ROUNDS; r++) {
			uint8_t *at = self->bb.p + (i * ROUNDS + r) * SLOT;

			snprintf(what, sizeof(what), "QP %d WQE %d", i, r);
			ASSERT_EQ(1, rc_poll(q[i].rcq, &wc, 1, RC_TIMEOUT_MS)) {
				TH_LOG("%s: no completion", what);
			}
			ASSERT_EQ(IBV_WC_SUCCESS, wc.status) {
				TH_LOG("%s: %s", what,
				       ibv_wc_status_str(wc.status));
			}
			/* The WQEs, not the messages, are taken in order. */
			ASSERT_EQ((uint64_t)(i * ROUNDS + r), wc.wr_id);
			ASSERT_LE(GRH, wc.byte_len);
			k = ud_which(at + GRH, wc.byte_len - GRH, i, NQ,
				     ROUNDS, 50);
			if (k < 0) {
				ud_no_message(_metadata, at + GRH,
					      wc.byte_len - GRH, r * NQ + i,
					      50, what);
				continue;
			}
			snprintf(what, sizeof(what), "QP %d WQE %d message %d",
				 i, r, k);
			EXPECT_EQ(0, seen[k / NQ]++) {
				TH_LOG("%s: again", what);
			}
			reordered |= k != r * NQ + i;
			rc_wc_check(_metadata, &wc, &(struct rc_wc_exp){
				.wr_id = i * ROUNDS + r,
				.status = IBV_WC_SUCCESS,
				.opcode = IBV_WC_RECV, .recv = 1,
				.byte_len = GRH + 50 + k,
				.qp_num = q[i].qp->qp_num,
			}, what);
			EXPECT_EQ(self->a.qp->qp_num, wc.src_qp);
			ud_check_grh(_metadata, at, self->ipv6, &self->gid_a,
				     &self->gid_b, 50 + k, 0, tclass[k % NAH],
				     flow[k % NAH], what);
		}
		EXPECT_CQ_EMPTY(q[i].rcq, "more than was sent");
	}
	if (reordered)
		TH_LOG("messages came out of order");
	/* Sent last first, they cannot all have come in order. */
	if (reversed)
		EXPECT_TRUE(reordered);
	for (i = 0; i < NQ; i++)
		ud_qp_destroy(&q[i]);
	for (i = 0; i < NAH; i++)
		EXPECT_EQ(0, ibv_destroy_ah(ah[i]));
}

TEST_F_TIMEOUT(ud, many_destinations, 120)
{
	ud_run_many_destinations(_metadata, self, 0);
}

TEST_F_TIMEOUT(ud, many_destinations_reordered, 120)
{
	ud_run_many_destinations(_metadata, self, 1);
}

/*
 * An AH destroyed while sends that name it are queued and in flight:
 * destroy_ah does not wait for the sender, which may still hold the AH's
 * destination (and drop the last reference to it, after its packet).  The
 * sends are posted with the SQ drained (SQD), so they wait; the modify
 * back to RTS hands them to the QP's task, and the AH is destroyed while
 * that task sends them, after a delay that differs from round to round.
 * Each send before the destroy took effect succeeds and arrives intact;
 * once the handle is gone, the next send fails (its AH does not exist,
 * local QP operation error) and flushes the rest.  Under KASAN a
 * destination freed under its sender would show as a use after free.
 */
TEST_F_TIMEOUT(ud, destroy_ah_in_flight, 120)
{
	enum { ROUNDS = 8, N = 40, SLOT = 1024, SLOTS = 64 };
	static const int delay_us[ROUNDS] = {
		0, 300, 500, 700, 900, 1200, 2000, 5000,
	};
	struct ibv_qp_attr qa = { .qp_state = IBV_QPS_SQD };
	unsigned int posted = 0, used = 0;
	int r, k, ok, failed, arrived;
	struct ibv_sge sge;
	struct ibv_ah *ah;
	struct ibv_wc wc;
	char what[64];
	uint8_t want[100];

	if (ibv_modify_qp(self->a.qp, &qa, IBV_QP_STATE) && rc_cfg.is_rxe)
		SKIP(return, "rxe: no SQD for a UD QP");
	ASSERT_EQ(IBV_QPS_SQD, ud_state(&self->a));
	qa.qp_state = IBV_QPS_RTS;
	ASSERT_EQ(0, ibv_modify_qp(self->a.qp, &qa, IBV_QP_STATE));
	ASSERT_LE(SLOT * SLOTS, self->bb.size);
	for (r = 0; r < ROUNDS; r++) {
		/* B's RQ topped up to N receives, each in a slot of its own. */
		for (; posted < used + N; posted++)
			ASSERT_EQ(0, ud_post_recv(self->b.qp, posted % SLOTS,
						  &self->bb,
						  posted % SLOTS * SLOT,
						  SLOT));
		ah = ud_ah(self->da->pd, self->gidx_a, &self->gid_b, 0, 0);
		ASSERT_NE(NULL, ah);
		rc_fill(self->ba.p, 100, 0x900 + r, 0);
		ud_sge(&sge, &self->ba, 0, 100);
		qa.qp_state = IBV_QPS_SQD;
		ASSERT_EQ(0, ibv_modify_qp(self->a.qp, &qa, IBV_QP_STATE));
		for (k = 0; k < N; k++)
			ASSERT_EQ(0, ud_post_send(self->a.qp, k, IBV_WR_SEND,
						  &sge, 1, 0, ah,
						  self->b.qp->qp_num, UD_QKEY,
						  0));
		qa.qp_state = IBV_QPS_RTS;
		ASSERT_EQ(0, ibv_modify_qp(self->a.qp, &qa, IBV_QP_STATE));
		if (delay_us[r])
			usleep(delay_us[r]);
		ASSERT_EQ(0, ibv_destroy_ah(ah));

		ok = 0;
		failed = 0;
		for (k = 0; k < N; k++) {
			snprintf(what, sizeof(what), "round %d send %d", r, k);
			ASSERT_EQ(1, rc_poll(self->a.scq, &wc, 1,
					     RC_TIMEOUT_MS)) {
				TH_LOG("%s: no completion", what);
			}
			EXPECT_EQ((uint64_t)k, wc.wr_id);
			if (wc.status == IBV_WC_SUCCESS && !failed) {
				ok++;
				continue;
			}
			/* The first failure names the AH, the rest flush. */
			EXPECT_EQ(failed ? IBV_WC_WR_FLUSH_ERR :
					   IBV_WC_LOC_QP_OP_ERR, wc.status) {
				TH_LOG("%s: %s", what,
				       ibv_wc_status_str(wc.status));
			}
			failed++;
		}
		TH_LOG("round %d: %d of %d sent before the AH went", r, ok,
		       N);
		/* What was sent arrives, in order, intact. */
		rc_fill(want, sizeof(want), 0x900 + r, 0);
		for (arrived = 0; arrived < ok; arrived++, used++) {
			snprintf(what, sizeof(what), "round %d receive %d", r,
				 arrived);
			ASSERT_EQ(1, rc_poll(self->b.rcq, &wc, 1,
					     RC_TIMEOUT_MS)) {
				TH_LOG("%s: missing", what);
			}
			rc_wc_check(_metadata, &wc, &(struct rc_wc_exp){
				.wr_id = used % SLOTS,
				.status = IBV_WC_SUCCESS,
				.opcode = IBV_WC_RECV, .recv = 1,
				.byte_len = GRH + 100,
				.qp_num = self->b.qp->qp_num,
			}, what);
			EXPECT_SAME_BYTES(self->bb.p + used % SLOTS * SLOT +
					  GRH, want, sizeof(want), what);
		}
		EXPECT_CQ_EMPTY(self->b.rcq, "more than was sent");
		if (failed)
			ud_recover_sq(_metadata, self, &self->a);
	}
}

/*
 * Two UD QPs receiving through one SRQ: each message in some WQE of it,
 * each WQE taken once, each QP's messages in whatever order they come.
 * With @reversed the messages are sent last first.
 */
static void ud_run_srq(struct __test_metadata *_metadata,
		       FIXTURE_DATA(ud) *self, int reversed)
{
	enum { NQ = 2, NMSG = 6, SLOT = 256 };
	struct ibv_srq_init_attr sa = {
		.attr = { .max_wr = 16, .max_sge = 1 },
	};
	int seen[NMSG] = { 0 }, msg[NMSG] = { 0 }, got[NQ] = { 0 };
	struct ibv_recv_wr rwr, *rbad;
	struct ibv_srq *srq;
	struct ud_qp q[NQ];
	struct ibv_sge sge;
	struct ibv_wc wc;
	int i, k, n, reordered = 0;
	char what[64];
	uint8_t *at;

	srq = ibv_create_srq(self->db->pd, &sa);
	ASSERT_NE(NULL, srq) {
		TH_LOG("ibv_create_srq: %s", strerror(errno));
	}
	for (i = 0; i < NQ; i++)
		ud_qp_create_srq(_metadata, &q[i], self->db, self->db->pd,
				 UD_QKEY, srq);
	for (k = 0; k < NMSG; k++) {
		ud_sge(&sge, &self->bb, k * SLOT, SLOT);
		rwr = (struct ibv_recv_wr){
			.wr_id = k, .sg_list = &sge, .num_sge = 1,
		};
		ASSERT_EQ(0, ibv_post_srq_recv(srq, &rwr, &rbad));
	}
	/* Message k, 60 + k bytes, goes to QP k % NQ. */
	for (n = 0; n < NMSG; n++) {
		k = ud_post_order(n, NMSG, reversed);
		rc_fill(self->ba.p + k * SLOT, 60 + k, k, 0);
		ud_sge(&sge, &self->ba, k * SLOT, 60 + k);
		ASSERT_EQ(0, ud_post_send(self->a.qp, k, IBV_WR_SEND, &sge, 1,
					  0, self->ah_ab, q[k % NQ].qp->qp_num,
					  UD_QKEY, 0));
		rc_expect_wc(_metadata, self->a.scq, &(struct rc_wc_exp){
			.wr_id = k, .status = IBV_WC_SUCCESS,
			.opcode = IBV_WC_SEND, .qp_num = self->a.qp->qp_num,
		}, "send");
	}
	/* QP i gets messages i, i + NQ, ..., each once, a WQE each. */
	for (i = 0; i < NQ; i++) {
		for (n = 0; n < NMSG / NQ; n++) {
			snprintf(what, sizeof(what), "QP %d receive %d", i, n);
			ASSERT_EQ(1, rc_poll(q[i].rcq, &wc, 1, RC_TIMEOUT_MS)) {
				TH_LOG("%s: no completion", what);
			}
			ASSERT_EQ(IBV_WC_SUCCESS, wc.status) {
				TH_LOG("%s: %s", what,
				       ibv_wc_status_str(wc.status));
			}
			ASSERT_LT(wc.wr_id, (uint64_t)NMSG);
			EXPECT_EQ(0, seen[wc.wr_id]++) {
				TH_LOG("%s: WQE %d taken twice", what,
				       (int)wc.wr_id);
			}
			ASSERT_LE(GRH, wc.byte_len);
			at = self->bb.p + wc.wr_id * SLOT;
			k = ud_which(at + GRH, wc.byte_len - GRH, i, NQ,
				     NMSG / NQ, 60);
			if (k < 0) {
				ud_no_message(_metadata, at + GRH,
					      wc.byte_len - GRH, i + n * NQ,
					      60, what);
				continue;
			}
			snprintf(what, sizeof(what),
				 "QP %d receive %d message %d", i, n, k);
			EXPECT_EQ(0, msg[k]++) {
				TH_LOG("%s: again", what);
			}
			reordered |= k != i + n * NQ;
			rc_wc_check(_metadata, &wc, &(struct rc_wc_exp){
				.wr_id = wc.wr_id, .status = IBV_WC_SUCCESS,
				.opcode = IBV_WC_RECV, .recv = 1,
				.byte_len = GRH + 60 + k,
				.qp_num = q[i].qp->qp_num,
			}, what);
			EXPECT_EQ(self->a.qp->qp_num, wc.src_qp);
			ud_check_grh(_metadata, at, self->ipv6, &self->gid_a,
				     &self->gid_b, 60 + k, 0, UD_TCLASS,
				     UD_FLOW, what);
			got[i]++;
		}
		EXPECT_CQ_EMPTY(q[i].rcq, "more than was sent");
	}
	for (i = 0; i < NQ; i++)
		EXPECT_EQ(NMSG / NQ, got[i]);
	if (reordered)
		TH_LOG("messages came out of order");
	if (reversed)
		EXPECT_TRUE(reordered);
	for (i = 0; i < NQ; i++)
		ud_qp_destroy(&q[i]);
	EXPECT_EQ(0, ibv_destroy_srq(srq));
}

TEST_F(ud, srq)
{
	ud_run_srq(_metadata, self, 0);
}

TEST_F(ud, srq_reordered)
{
	ud_run_srq(_metadata, self, 1);
}

TEST_F(ud, qp_state_machine)
{
	struct ibv_qp_init_attr ia = {
		.qp_type = IBV_QPT_UD,
		.send_cq = self->a.scq, .recv_cq = self->a.rcq,
		.cap = { .max_send_wr = 4, .max_recv_wr = 4,
			 .max_send_sge = 1, .max_recv_sge = 1 },
	};
	struct ibv_qp_attr a = {
		.qp_state = IBV_QPS_INIT, .port_num = RC_PORT, .qkey = 0x1234,
	}, q;
	struct ibv_qp_init_attr qi;
	struct ibv_qp *qp;

	qp = ibv_create_qp(self->da->pd, &ia);
	ASSERT_NE(NULL, qp);
	EXPECT_EQ(IBV_QPT_UD, qp->qp_type);
	/* INIT needs the Q_Key. */
	EXPECT_NE(0, ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_PKEY_INDEX |
				   IBV_QP_PORT));
	ASSERT_EQ(0, ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_PKEY_INDEX |
				   IBV_QP_PORT | IBV_QP_QKEY));
	ASSERT_EQ(0, ibv_query_qp(qp, &q, IBV_QP_STATE | IBV_QP_QKEY, &qi));
	EXPECT_EQ(IBV_QPS_INIT, q.qp_state);
	EXPECT_EQ(0x1234, q.qkey);
	/* RTR takes no path: UD has none. */
	a.qp_state = IBV_QPS_RTR;
	a.ah_attr.is_global = 1;
	a.ah_attr.grh.dgid = self->gid_b;
	a.ah_attr.grh.sgid_index = self->gidx_a;
	a.ah_attr.port_num = RC_PORT;
	EXPECT_NE(0, ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_AV));
	ASSERT_EQ(0, ibv_modify_qp(qp, &a, IBV_QP_STATE));
	/* RTS needs the first PSN. */
	a.qp_state = IBV_QPS_RTS;
	a.sq_psn = 7;
	EXPECT_NE(0, ibv_modify_qp(qp, &a, IBV_QP_STATE));
	ASSERT_EQ(0, ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_SQ_PSN));
	/* The Q_Key may change in RTS. */
	a.qkey = 0x5678;
	ASSERT_EQ(0, ibv_modify_qp(qp, &a, IBV_QP_QKEY));
	ASSERT_EQ(0, ibv_query_qp(qp, &q, IBV_QP_STATE | IBV_QP_QKEY |
				  IBV_QP_SQ_PSN, &qi));
	EXPECT_EQ(IBV_QPS_RTS, q.qp_state);
	EXPECT_EQ(0x5678, q.qkey);
	EXPECT_EQ(7, q.sq_psn);
	EXPECT_EQ(IBV_QPT_UD, qi.qp_type);
	EXPECT_EQ(0, ibv_destroy_qp(qp));
}

/* ---- the UC fixture --------------------------------------------------- */

FIXTURE(uc) {
	struct rc_dev d0, d1;
	struct rc_dev *da, *db;
	struct rc_env e;
	int mtu;
};

FIXTURE_VARIANT(uc) {
	int two_devices;
};

FIXTURE_VARIANT_ADD(uc, loopback) {
	.two_devices = 0,
};

FIXTURE_VARIANT_ADD(uc, two_devices) {
	.two_devices = 1,
};

/* A UC pair, B's QP with @access, a buffer with every access per side. */
static void uc_env(struct __test_metadata *_metadata, FIXTURE_DATA(uc) *self,
		   int access)
{
	struct rc_opts o = {
		.qp_type = IBV_QPT_UC,
		.access = access ? access : IBV_ACCESS_REMOTE_WRITE,
	};
	struct rc_env *e = &self->e;

	rc_pair_create(_metadata, &e->p, self->da, self->db, &o);
	rc_buf_alloc(_metadata, &e->ba, self->da->pd, 256 * 1024,
		     RC_ACCESS_ALL);
	rc_buf_alloc(_metadata, &e->bb, self->db->pd, 256 * 1024,
		     RC_ACCESS_ALL);
}

FIXTURE_SETUP(uc)
{
	memset(&self->e, 0, sizeof(self->e));
	rc_ends_open(_metadata, &self->d0, &self->d1, &self->da, &self->db,
		     variant->two_devices);
	self->mtu = 128 << self->da->port.active_mtu;
}

FIXTURE_TEARDOWN(uc)
{
	rc_buf_free(&self->e.ba);
	rc_buf_free(&self->e.bb);
	rc_pair_destroy(&self->e.p);
	rc_dev_close(&self->d1);
	rc_dev_close(&self->d0);
}

static const char *uc_name_b(FIXTURE_DATA(uc) *self)
{
	return rc_cfg.name[self->db == &self->d1];
}

TEST_F_TIMEOUT(uc, opcodes, 180)
{
	static const enum ibv_wr_opcode ops[] = {
		IBV_WR_SEND, IBV_WR_SEND_WITH_IMM, IBV_WR_RDMA_WRITE,
		IBV_WR_RDMA_WRITE_WITH_IMM,
	};
	size_t lens[] = { 0, 1, 1000, 0, 0, 70001 };
	unsigned int i, j, n = 0;

	lens[3] = self->mtu;
	lens[4] = 3 * self->mtu + 17;
	uc_env(_metadata, self, 0);
	for (i = 0; i < sizeof(ops) / sizeof(ops[0]); i++)
		for (j = 0; j < sizeof(lens) / sizeof(lens[0]); j++, n++)
			rc_xfer(_metadata, &self->e, &(struct rc_xfer){
				.op = ops[i], .len = lens[j],
				.lsge = 1 + n % 4, .rsge = 1 + (n + 1) % 3,
				.loff = n % 5, .roff = n % 7, .slack = n % 3,
				.imm = 0x5eed0000 + n, .seed = n,
				.wr_id = 0x100 + 16 * n,
			});
	rc_xfer(_metadata, &self->e, &(struct rc_xfer){
		.op = IBV_WR_SEND_WITH_IMM, .len = 40, .lsge = 2, .rsge = 1,
		.flags = IBV_SEND_INLINE, .imm = 7, .seed = 99,
		.wr_id = 0x900,
	});
}

TEST_F(uc, no_recv_wqe)
{
	const char *nb = uc_name_b(self);
	long v, before = rc_hw_counter(nb, "no_recv_wqe");
	struct rc_qp *qa = &self->e.p.a;

	uc_env(_metadata, self, 0);
	/* A SEND of several packets with nothing posted: dropped whole. */
	rc_fill(self->e.ba.p, 3 * self->mtu, 1, 0);
	ASSERT_EQ(0, rc_post_send(qa, 1, IBV_WR_SEND, &self->e.ba, 0,
				  3 * self->mtu, IBV_SEND_SIGNALED, 0, 0));
	rc_expect_wc(_metadata, qa->scq, &(struct rc_wc_exp){
		.wr_id = 1, .status = IBV_WC_SUCCESS, .opcode = IBV_WC_SEND,
		.qp_num = qa->qp->qp_num,
	}, "SEND without a receive WQE");
	v = ud_wait_counter(nb, "no_recv_wqe", before);
	if (!rc_cfg.is_rxe)
		EXPECT_EQ(before + 1, v);
	/* The next message is received whole, nothing of the first. */
	rc_xfer(_metadata, &self->e, &(struct rc_xfer){
		.op = IBV_WR_SEND, .len = 2 * self->mtu + 3, .lsge = 2,
		.rsge = 3, .seed = 2, .wr_id = 0x20,
	});
	EXPECT_CQ_EMPTY(self->e.p.b.rcq, "the dropped SEND");
	EXPECT_EQ(IBV_QPS_RTS, rc_qp_state(self->e.p.b.qp));
}

/*
 * A WRITE that B refuses is dropped; A's WQE succeeds (nobody tells it),
 * B's memory and QP are untouched, and the next message goes through.
 */
TEST_F(uc, bad_rkey)
{
	const char *nb = uc_name_b(self);
	long before = rc_hw_counter(nb, "dropped_msgs");
	struct rc_qp *qa = &self->e.p.a, *qb = &self->e.p.b;
	size_t len = 2 * self->mtu + 100;
	uint8_t *img;

	uc_env(_metadata, self, 0);
	rc_fill(self->e.ba.p, len, 1, 0);
	rc_fill(self->e.bb.p, len + 64, 2, 0);
	img = malloc(len + 64);
	ASSERT_NE(NULL, img);
	memcpy(img, self->e.bb.p, len + 64);

	/* WRITE with a bad rkey, then WRITE_IMM with one, a receive posted. */
	ASSERT_EQ(0, rc_post_recv(qb, 0x77, &self->e.bb, len + 64, 16));
	ASSERT_EQ(0, rc_post_send(qa, 1, IBV_WR_RDMA_WRITE, &self->e.ba, 0,
				  len, IBV_SEND_SIGNALED,
				  (uintptr_t)self->e.bb.p,
				  self->e.bb.mr->rkey ^ 0x5a00));
	ASSERT_EQ(0, rc_post_send(qa, 2, IBV_WR_RDMA_WRITE_WITH_IMM,
				  &self->e.ba, 0, len, IBV_SEND_SIGNALED,
				  (uintptr_t)self->e.bb.p,
				  self->e.bb.mr->rkey ^ 0x5a00));
	rc_expect_wc(_metadata, qa->scq, &(struct rc_wc_exp){
		.wr_id = 1, .status = IBV_WC_SUCCESS,
		.opcode = IBV_WC_RDMA_WRITE, .qp_num = qa->qp->qp_num,
	}, "WRITE, bad rkey");
	rc_expect_wc(_metadata, qa->scq, &(struct rc_wc_exp){
		.wr_id = 2, .status = IBV_WC_SUCCESS,
		.opcode = IBV_WC_RDMA_WRITE, .qp_num = qa->qp->qp_num,
	}, "WRITE_IMM, bad rkey");
	if (!rc_cfg.is_rxe)
		EXPECT_LE(before + 2, ud_wait_counter(nb, "dropped_msgs",
						      before + 1));
	EXPECT_CQ_EMPTY(qb->rcq, "WRITE_IMM with a bad rkey");
	EXPECT_SAME_BYTES(self->e.bb.p, img, len + 64, "refused WRITEs");
	EXPECT_EQ(IBV_QPS_RTS, rc_qp_state(qb->qp));

	/* The receive WQE is still there for the next message. */
	ASSERT_EQ(0, rc_post_send(qa, 3, IBV_WR_SEND, &self->e.ba, 0, 16,
				  IBV_SEND_SIGNALED, 0, 0));
	rc_expect_wc(_metadata, qa->scq, &(struct rc_wc_exp){
		.wr_id = 3, .status = IBV_WC_SUCCESS, .opcode = IBV_WC_SEND,
		.qp_num = qa->qp->qp_num,
	}, "SEND");
	rc_expect_wc(_metadata, qb->rcq, &(struct rc_wc_exp){
		.wr_id = 0x77, .status = IBV_WC_SUCCESS, .opcode = IBV_WC_RECV,
		.recv = 1, .byte_len = 16, .qp_num = qb->qp->qp_num,
	}, "SEND after the refused WRITEs");
	EXPECT_SAME_BYTES(self->e.bb.p + len + 64, self->e.ba.p, 16,
			  "SEND after the refused WRITEs");
	free(img);
}

TEST_F(uc, no_remote_write)
{
	struct rc_qp *qa = &self->e.p.a, *qb = &self->e.p.b;
	uint8_t img[4096];

	uc_env(_metadata, self, IBV_ACCESS_LOCAL_WRITE);
	rc_fill(self->e.ba.p, sizeof(img) + 100, 1, 0);
	rc_fill(self->e.bb.p, sizeof(img), 2, 0);
	memcpy(img, self->e.bb.p, sizeof(img));
	ASSERT_EQ(0, rc_post_recv(qb, 0x31, &self->e.bb, sizeof(img), 100));
	ASSERT_EQ(0, rc_post_send(qa, 1, IBV_WR_RDMA_WRITE, &self->e.ba, 0,
				  sizeof(img), IBV_SEND_SIGNALED,
				  (uintptr_t)self->e.bb.p,
				  self->e.bb.mr->rkey));
	/* SENDs are still taken; it also tells the WRITE was handled. */
	ASSERT_EQ(0, rc_post_send(qa, 2, IBV_WR_SEND, &self->e.ba,
				  sizeof(img), 100, IBV_SEND_SIGNALED, 0, 0));
	rc_expect_wc(_metadata, qa->scq, &(struct rc_wc_exp){
		.wr_id = 1, .status = IBV_WC_SUCCESS,
		.opcode = IBV_WC_RDMA_WRITE, .qp_num = qa->qp->qp_num,
	}, "WRITE without remote write access");
	rc_expect_wc(_metadata, qa->scq, &(struct rc_wc_exp){
		.wr_id = 2, .status = IBV_WC_SUCCESS, .opcode = IBV_WC_SEND,
		.qp_num = qa->qp->qp_num,
	}, "SEND");
	rc_expect_wc(_metadata, qb->rcq, &(struct rc_wc_exp){
		.wr_id = 0x31, .status = IBV_WC_SUCCESS, .opcode = IBV_WC_RECV,
		.recv = 1, .byte_len = 100, .qp_num = qb->qp->qp_num,
	}, "SEND after the refused WRITE");
	EXPECT_SAME_BYTES(self->e.bb.p, img, sizeof(img), "refused WRITE");
	EXPECT_SAME_BYTES(self->e.bb.p + sizeof(img),
			  self->e.ba.p + sizeof(img), 100, "SEND");
	EXPECT_EQ(IBV_QPS_RTS, rc_qp_state(qb->qp));
}

TEST_F(uc, recv_too_small)
{
	struct rc_qp *qa = &self->e.p.a, *qb = &self->e.p.b;
	struct ibv_wc wc;

	uc_env(_metadata, self, 0);
	ASSERT_EQ(0, rc_post_recv(qb, 0x61, &self->e.bb, 0, self->mtu));
	ASSERT_EQ(0, rc_post_send(qa, 1, IBV_WR_SEND, &self->e.ba, 0,
				  self->mtu + 1, IBV_SEND_SIGNALED, 0, 0));
	rc_expect_wc(_metadata, qa->scq, &(struct rc_wc_exp){
		.wr_id = 1, .status = IBV_WC_SUCCESS, .opcode = IBV_WC_SEND,
		.qp_num = qa->qp->qp_num,
	}, "SEND larger than the receive buffer");
	ASSERT_EQ(1, rc_poll(qb->rcq, &wc, 1, RC_TIMEOUT_MS));
	EXPECT_EQ(0x61, wc.wr_id);
	if (wc.status == IBV_WC_LOC_QP_OP_ERR && rc_cfg.is_rxe) {
		RC_QUIRK("a receive buffer too small: local QP operation error");
		return;
	}
	EXPECT_EQ(IBV_WC_LOC_LEN_ERR, wc.status) {
		TH_LOG("status %s", ibv_wc_status_str(wc.status));
	}
	EXPECT_EQ(IBV_QPS_ERR, rc_qp_state(qb->qp));
}

/* ---- raw RoCEv2 packets: what a UC responder must survive ------------ */

/*
 * Verbs cannot lose a packet or send one out of order, so these tests
 * build UC request packets themselves and send them from A's address to
 * B's through a raw IP socket: IPv4, UDP to port 4791, BTH, RETH, payload,
 * pad and ICRC (see drivers/vrdma/icrc.c for what the ICRC covers).
 */

#define UC_OP_SEND_FIRST	0x20	/* IB_OPCODE_UC_SEND_FIRST */
#define UC_OP_SEND_MIDDLE	0x21
#define UC_OP_SEND_LAST		0x22
#define UC_OP_SEND_ONLY		0x24
#define UC_OP_WRITE_FIRST	0x26
#define UC_OP_WRITE_MIDDLE	0x27
#define UC_OP_WRITE_LAST	0x28
#define UC_OP_WRITE_ONLY	0x2a

struct uc_inj {
	int fd;
	struct sockaddr_ll to;	/* out of the veth end facing the device */
	uint8_t saddr[4], daddr[4];
	uint32_t qpn;		/* the destination QP */
	uint32_t psn;		/* of the next packet */
	size_t mtu;
	uint16_t id;		/* IPv4 identification */
};

/*
 * Packets for @daddr, the address of netdev @to_dev, from @saddr, sent out
 * of the other end of the veth (@from_dev) as Ethernet frames for
 * @to_dev's MAC: they arrive on the device's own netdev from the wire,
 * whatever the routing of two local addresses says (a device takes no
 * packet that this host sends it by "lo").
 */
static void uc_inj_open(struct __test_metadata *_metadata, struct uc_inj *j,
			const uint8_t *saddr, const uint8_t *daddr,
			const char *from_dev, const char *to_dev,
			uint32_t qpn, uint32_t psn, size_t mtu)
{
	unsigned int mac[ETH_ALEN];
	char path[128];
	FILE *f;
	int i;

	memset(j, 0, sizeof(*j));
	memcpy(j->saddr, saddr, 4);
	memcpy(j->daddr, daddr, 4);
	j->qpn = qpn;
	j->psn = psn;
	j->mtu = mtu;
	j->id = 0x4000;
	j->fd = socket(AF_PACKET, SOCK_DGRAM, htons(ETH_P_IP));
	ASSERT_LE(0, j->fd) {
		TH_LOG("packet socket: %s", strerror(errno));
	}
	snprintf(path, sizeof(path), "/sys/class/net/%s/address", to_dev);
	f = fopen(path, "r");
	ASSERT_NE(NULL, f);
	ASSERT_EQ(ETH_ALEN, fscanf(f, "%x:%x:%x:%x:%x:%x", &mac[0], &mac[1],
				   &mac[2], &mac[3], &mac[4], &mac[5]));
	fclose(f);
	j->to.sll_family = AF_PACKET;
	j->to.sll_protocol = htons(ETH_P_IP);
	j->to.sll_ifindex = if_nametoindex(from_dev);
	ASSERT_NE(0, j->to.sll_ifindex);
	j->to.sll_halen = ETH_ALEN;
	for (i = 0; i < ETH_ALEN; i++)
		j->to.sll_addr[i] = mac[i];
}

/* The IPv4 header checksum, which no IP stack fills in for a frame. */
static void uc_ip_csum(uint8_t *ip)
{
	uint32_t sum = 0;
	int i;

	ip[10] = ip[11] = 0;
	for (i = 0; i < 20; i += 2)
		sum += ip[i] << 8 | ip[i + 1];
	while (sum >> 16)
		sum = (sum & 0xffff) + (sum >> 16);
	ip[10] = ~sum >> 8;
	ip[11] = ~sum;
}

/*
 * Send one packet with the next PSN, or with @lose only count the PSN as
 * used (a packet lost on the way).
 */
static void uc_inj_packet(struct __test_metadata *_metadata,
			  struct uc_inj *j, uint8_t opcode, const uint8_t *reth,
			  const uint8_t *pay, size_t len, int lose)
{
	size_t pad = -len & 3, ext = reth ? 16 : 0;
	size_t n = WIRE_HDR_LEN + ext + len + pad + 4;
	uint8_t pkt[WIRE_HDR_LEN + 16 + 4096 + 4 + 4];
	uint8_t *bth = pkt + WIRE_HDR_LEN - 12;
	uint32_t psn = j->psn;

	j->psn = (j->psn + 1) & 0xffffff;
	if (lose)
		return;
	ASSERT_LE(n, sizeof(pkt));
	memset(pkt, 0, n);
	/* From a RoCEv2 source port. */
	wire_ip_udp(pkt, n, j->saddr, j->daddr, j->id++, 0xc017);
	bth[0] = opcode;
	bth[1] = pad << 4;
	bth[2] = 0xff;			/* P_Key 0xffff */
	bth[3] = 0xff;
	bth[5] = j->qpn >> 16;
	bth[6] = j->qpn >> 8;
	bth[7] = j->qpn;
	bth[9] = psn >> 16;
	bth[10] = psn >> 8;
	bth[11] = psn;
	if (reth)
		memcpy(bth + 12, reth, 16);
	if (len)
		memcpy(bth + 12 + ext, pay, len);
	wire_icrc(pkt, n);
	uc_ip_csum(pkt);

	ASSERT_EQ((ssize_t)n, sendto(j->fd, pkt, n, 0,
				     (struct sockaddr *)&j->to,
				     sizeof(j->to))) {
		TH_LOG("sendto: %s", strerror(errno));
	}
}

/*
 * A SEND (or an RDMA WRITE to @va/@rkey) of @len bytes of stream @seed, in
 * path-MTU packets; the packets whose index is set in @lose are lost.
 */
static void uc_inj_msg(struct __test_metadata *_metadata, struct uc_inj *j,
		       int write, size_t len, uint32_t seed, uint64_t va,
		       uint32_t rkey, unsigned int lose)
{
	uint8_t data[70000], reth[16];
	size_t off = 0, n;
	int i = 0, k;

	ASSERT_LE(len, sizeof(data));
	rc_fill(data, len, seed, 0);
	for (k = 0; k < 8; k++)
		reth[k] = va >> (56 - 8 * k);
	for (k = 0; k < 4; k++) {
		reth[8 + k] = rkey >> (24 - 8 * k);
		reth[12 + k] = len >> (24 - 8 * k);
	}
	do {
		int first = off == 0, last = len - off <= j->mtu;
		uint8_t op;

		n = last ? len - off : j->mtu;
		if (first)
			op = last ? UC_OP_SEND_ONLY : UC_OP_SEND_FIRST;
		else
			op = last ? UC_OP_SEND_LAST : UC_OP_SEND_MIDDLE;
		/* The WRITE opcodes are the SEND ones + 6 (ONLY: + 6 too). */
		if (write)
			op += 6;
		uc_inj_packet(_metadata, j, op, write && first ? reth : NULL,
			      data + off, n, !!(lose & (1u << i)));
		off += n;
		i++;
	} while (off < len);
}

/*
 * The receive completion @wc: receive WQE @wr_id got @len bytes of stream
 * @seed, at @b + @off.
 */
static void uc_check_msg(struct __test_metadata *_metadata,
			 const struct ibv_wc *wc, struct rc_qp *q,
			 struct rc_buf *b, size_t off, uint64_t wr_id,
			 size_t len, uint32_t seed, const char *what)
{
	uint8_t *want = malloc(len + 1);

	ASSERT_NE(NULL, want);
	rc_wc_check(_metadata, wc, &(struct rc_wc_exp){
		.wr_id = wr_id, .status = IBV_WC_SUCCESS,
		.opcode = IBV_WC_RECV, .recv = 1, .byte_len = len,
		.qp_num = q->qp->qp_num,
	}, what);
	rc_fill(want, len, seed, 0);
	EXPECT_SAME_BYTES(b->p + off, want, len, what);
	free(want);
}

static void uc_expect_msg(struct __test_metadata *_metadata, struct rc_qp *q,
			  struct rc_buf *b, size_t off, uint64_t wr_id,
			  size_t len, uint32_t seed, const char *what)
{
	struct ibv_wc wc;

	ASSERT_EQ(1, rc_poll(q->rcq, &wc, 1, RC_TIMEOUT_MS)) {
		TH_LOG("%s: no receive completion", what);
	}
	uc_check_msg(_metadata, &wc, q, b, off, wr_id, len, seed, what);
}

/* A UC QP receiving through an SRQ: multi-packet SENDs, in SRQ order. */
TEST_F(uc, srq)
{
	struct ibv_srq_init_attr sa = {
		.attr = { .max_wr = 8, .max_sge = 2 },
	};
	struct rc_opts oa = { .qp_type = IBV_QPT_UC }, ob;
	struct rc_qp *qa = &self->e.p.a, *qb = &self->e.p.b;
	size_t slot = 4 * self->mtu;
	struct ibv_recv_wr rwr, *rbad;
	struct ibv_srq *srq;
	struct ibv_sge sge;
	int k;

	rc_buf_alloc(_metadata, &self->e.ba, self->da->pd, 256 * 1024,
		     RC_ACCESS_ALL);
	rc_buf_alloc(_metadata, &self->e.bb, self->db->pd, 256 * 1024,
		     RC_ACCESS_ALL);
	srq = ibv_create_srq(self->db->pd, &sa);
	ASSERT_NE(NULL, srq) {
		TH_LOG("ibv_create_srq: %s", strerror(errno));
	}
	rc_opts_default(&oa, self->da);
	ob = oa;
	ob.srq = srq;
	rc_qp_create(_metadata, qa, self->da, &oa);
	rc_qp_create(_metadata, qb, self->db, &ob);
	rc_qp_connect(_metadata, qa, qb, IBV_ACCESS_REMOTE_WRITE);
	rc_qp_connect(_metadata, qb, qa, IBV_ACCESS_REMOTE_WRITE);

	for (k = 0; k < 4; k++) {
		ud_sge(&sge, &self->e.bb, k * slot, slot);
		rwr = (struct ibv_recv_wr){
			.wr_id = 0x50 + k, .sg_list = &sge, .num_sge = 1,
		};
		ASSERT_EQ(0, ibv_post_srq_recv(srq, &rwr, &rbad));
	}
	/* SEND k: 1 + k * MTU bytes, 1 to 4 packets. */
	for (k = 0; k < 4; k++) {
		rc_fill(self->e.ba.p + k * slot, 1 + k * self->mtu, k, 0);
		ASSERT_EQ(0, rc_post_send(qa, k, IBV_WR_SEND, &self->e.ba,
					  k * slot, 1 + k * self->mtu,
					  IBV_SEND_SIGNALED, 0, 0));
		rc_expect_wc(_metadata, qa->scq, &(struct rc_wc_exp){
			.wr_id = k, .status = IBV_WC_SUCCESS,
			.opcode = IBV_WC_SEND, .qp_num = qa->qp->qp_num,
		}, "UC SEND");
	}
	for (k = 0; k < 4; k++)
		uc_expect_msg(_metadata, qb, &self->e.bb, k * slot, 0x50 + k,
			      1 + k * self->mtu, k, "UC SEND through an SRQ");
	EXPECT_CQ_EMPTY(qb->rcq, "more than was sent");
	rc_pair_destroy(&self->e.p);
	EXPECT_EQ(0, ibv_destroy_srq(srq));
}

/*
 * A responder that lost packets, or got them out of order, drops the
 * message they belong to without a word and takes the next one that starts
 * with a FIRST or ONLY packet: whatever its PSN, and also when it
 * interrupts a message.  A receive WQE that a dropped SEND had begun to
 * fill is filled again by the next SEND.
 */
TEST_F(uc, lost_packets)
{
	struct rc_qp *qb = &self->e.p.b;
	const char *nb = uc_name_b(self);
	long seq = rc_hw_counter(nb, "seq_errors");
	long drop = rc_hw_counter(nb, "dropped_msgs");
	size_t m = self->mtu, slot = 4 * m;
	/* Where rxe may drop a message: wait less, it does not come. */
	int quirk_ms = rc_cfg.is_rxe ? RC_QUIET_MS : RC_TIMEOUT_MS;
	uint64_t wrid = 1, va;
	uint8_t a[4], b[4], *want;
	int two = self->db == &self->d1;
	struct uc_inj j;
	struct ibv_wc wc;

	if (rc_cfg.is_rxe && !two)
		SKIP(return, "rxe takes packets only from its own netdev");
	uc_env(_metadata, self, 0);
	/* Into B's netdev from A's end of the veth, or the other way. */
	inet_pton(AF_INET, two ? IP0 : IP1, a);
	inet_pton(AF_INET, two ? IP1 : IP0, b);
	uc_inj_open(_metadata, &j, a, b, two ? NETDEV0 : NETDEV1,
		    two ? NETDEV1 : NETDEV0, qb->qp->qp_num, qb->rq_psn, m);
	/* Receive WQE i takes the SEND at i * slot. */
	for (int i = 0; i < 12; i++)
		ASSERT_EQ(0, rc_post_recv(qb, i + 1, &self->e.bb, i * slot,
					  slot));

	/* The MIDDLE of a SEND is lost: that message is dropped whole. */
	uc_inj_msg(_metadata, &j, 0, 2 * m + 100, 1, 0, 0, 1 << 1);
	uc_inj_msg(_metadata, &j, 0, 200, 2, 0, 0, 0);
	if (rc_poll(qb->rcq, &wc, 1, quirk_ms)) {
		uc_check_msg(_metadata, &wc, qb, &self->e.bb, 0, wrid, 200, 2,
			     "SEND after a lost MIDDLE");
		wrid++;
	} else {
		EXPECT_EQ(1, rc_cfg.is_rxe);
		RC_QUIRK("after a lost packet the next message is dropped too");
	}
	uc_inj_msg(_metadata, &j, 0, 300, 3, 0, 0, 0);
	uc_expect_msg(_metadata, qb, &self->e.bb, (wrid - 1) * slot, wrid,
		      300, 3, "second SEND after a lost MIDDLE");
	wrid++;

	/* MIDDLE and LAST without their FIRST: dropped. */
	uc_inj_packet(_metadata, &j, UC_OP_SEND_MIDDLE, NULL, self->e.ba.p, m,
		      0);
	uc_inj_packet(_metadata, &j, UC_OP_SEND_LAST, NULL, self->e.ba.p, 8,
		      0);
	uc_inj_msg(_metadata, &j, 0, m + 1, 4, 0, 0, 0);
	uc_expect_msg(_metadata, qb, &self->e.bb, (wrid - 1) * slot, wrid,
		      m + 1, 4, "SEND after a MIDDLE and LAST alone");
	wrid++;

	/* A new message may start at any PSN. */
	j.psn = (j.psn + 1000) & 0xffffff;
	uc_inj_msg(_metadata, &j, 0, 3 * m, 5, 0, 0, 0);
	uc_expect_msg(_metadata, qb, &self->e.bb, (wrid - 1) * slot, wrid,
		      3 * m, 5, "SEND after a PSN jump");
	wrid++;

	/* A complete WRITE in the stream, for the RETH of these packets. */
	va = (uintptr_t)(self->e.bb.p + 20 * slot);
	uc_inj_msg(_metadata, &j, 1, 2 * m + 7, 6, va, self->e.bb.mr->rkey,
		   0);
	uc_inj_msg(_metadata, &j, 0, 10, 7, 0, 0, 0);
	uc_expect_msg(_metadata, qb, &self->e.bb, (wrid - 1) * slot, wrid,
		      10, 7, "SEND after a WRITE");
	wrid++;
	want = malloc(2 * m + 7);
	ASSERT_NE(NULL, want);
	rc_fill(want, 2 * m + 7, 6, 0);
	EXPECT_SAME_BYTES(self->e.bb.p + 20 * slot, want, 2 * m + 7,
			  "injected WRITE");
	free(want);

	/* A SEND interrupted by a new message: the new one counts. */
	uc_inj_packet(_metadata, &j, UC_OP_SEND_FIRST, NULL, self->e.ba.p, m,
		      0);
	uc_inj_msg(_metadata, &j, 0, 50, 8, 0, 0, 0);
	if (rc_poll(qb->rcq, &wc, 1, quirk_ms)) {
		uc_check_msg(_metadata, &wc, qb, &self->e.bb, (wrid - 1) * slot,
			     wrid, 50, 8, "SEND interrupting a SEND");
		wrid++;
	} else {
		EXPECT_EQ(1, rc_cfg.is_rxe);
		RC_QUIRK("a message that interrupts another is dropped too");
	}
	uc_inj_msg(_metadata, &j, 0, 60, 9, 0, 0, 0);
	uc_expect_msg(_metadata, qb, &self->e.bb, (wrid - 1) * slot, wrid,
		      60, 9, "SEND after an interrupted SEND");
	wrid++;

	/* A WRITE whose LAST is lost, then a SEND. */
	if (rc_cfg.is_rxe) {
		RC_QUIRK("not tried: after a WRITE lost its LAST, rxe takes "
			 "no new message");
	} else {
		uc_inj_msg(_metadata, &j, 1, 2 * m + 7, 10, va,
			   self->e.bb.mr->rkey, 1 << 2);
		uc_inj_msg(_metadata, &j, 0, 70, 11, 0, 0, 0);
		uc_expect_msg(_metadata, qb, &self->e.bb, (wrid - 1) * slot,
			      wrid, 70, 11, "SEND after a WRITE lost its LAST");
		wrid++;
	}
	EXPECT_CQ_EMPTY(qb->rcq, "more than the messages that arrived whole");
	EXPECT_EQ(IBV_QPS_RTS, rc_qp_state(qb->qp));
	if (!rc_cfg.is_rxe) {
		/* Gaps: the lost MIDDLE, the jump, the WRITE's lost LAST. */
		EXPECT_EQ(seq + 3, rc_hw_counter(nb, "seq_errors"));
		/*
		 * The 1st, the MIDDLE and LAST alone, the interrupted SEND,
		 * the WRITE without LAST.
		 */
		EXPECT_EQ(drop + 4, rc_hw_counter(nb, "dropped_msgs"));
	}
	close(j.fd);
}

/* ---- IPv6 on top of rc_suite.h's setup -------------------------------- */

static int ud_ipv6_set_up;

static void ud_ipv6_teardown(void)
{
	if (!ud_ipv6_set_up)
		return;
	rc_sh("ip -6 -force -batch - >/dev/null 2>&1 <<EOF\n"
	      "rule del pref 120\n"
	      "rule del pref 121\n"
	      "route flush table 213\n"
	      "route flush table 214\n"
	      "rule add pref 0 lookup local\n"
	      "rule del pref 1000 lookup local\n"
	      "EOF");
	ud_ipv6_set_up = 0;
}

/*
 * IPv6 addresses on the veth of rc_suite.h, and policy routing for them as
 * for IPv4: ib_core resolves an AH's destination through the routing
 * table, and rxe sends by it.  Without IPv6, or on a kernel without IPv6
 * policy routing (CONFIG_IPV6_MULTIPLE_TABLES), the IPv6 variants skip.
 */
static void ud_ipv6_setup(void)
{
	static const char *const gid[2] = {
		"fd00:0213:0000:0000:0000:0000:0000:0001",
		"fd00:0213:0000:0000:0000:0000:0000:0002",
	};

	if (rc_suite_ipv6_addrs(IP6_0, IP6_1))
		return;
	ud_ipv6_set_up = 1;
	atexit(ud_ipv6_teardown);
	if (rc_sh("ip -6 -batch - 2>/dev/null <<EOF\n"
		  "route add " IP6_1 " dev " NETDEV0 " src " IP6_0
		  " table 213\n"
		  "route add " IP6_0 " dev " NETDEV1 " src " IP6_1
		  " table 214\n"
		  "rule add pref 120 iif lo from " IP6_0 " to " IP6_1
		  " lookup 213\n"
		  "rule add pref 121 iif lo from " IP6_1 " to " IP6_0
		  " lookup 214\n"
		  "rule add pref 1000 lookup local\n"
		  "rule del pref 0 lookup local\n"
		  "EOF")) {
		printf("# no IPv6 policy routing: the IPv6 variants skip\n");
		return;
	}
	rc_suite_wait_gids(gid, ud_gid6_idx);
	printf("# IPv6 GIDs %d (" IP6_0 ") and %d (" IP6_1 ")\n",
	       ud_gid6_idx[0], ud_gid6_idx[1]);
	fflush(stdout);
}

int main(int argc, char **argv)
{
	return rc_suite_main_setup(argc, argv, ud_ipv6_setup);
}
