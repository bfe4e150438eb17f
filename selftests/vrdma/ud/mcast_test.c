// SPDX-License-Identifier: GPL-2.0
/*
 * UD multicast through the verbs: ibv_attach_mcast(), ibv_detach_mcast()
 * and sends through an AH whose destination GID is a multicast address.
 *
 * "mc" fixture, over IPv4 (MGID ::ffff:239.1.2.3) and IPv6 (ff0e::1:3),
 * and over IPv4 through a netem qdisc that reorders the packets:
 * one sender on device A, three receiving QPs on device B (two with the
 * sender's Q_Key, one with another) and one on A, the sender's own device;
 * every QP with the right Q_Key gets every message once, in whatever order
 * the path delivers them (UD promises none), with the right data, source
 * QP and GRH (the group's address as destination), the QP with the
 * wrong Q_Key and a QP not attached get nothing, and the counters
 * (mcast_sent_pkts, mcast_rcvd_pkts, qkey_errors) say so.  A QP detached
 * gets nothing more; once the group is empty a packet for it is dropped
 * and counted in no_qp.
 *
 * "mc_err" fixture: what attach and detach refuse: a QP that is not UD,
 * a GID that is not multicast, a detach of a group the QP is not in (also
 * after a destroy); attaching twice is one attachment; the limits
 * query_device reports are the ones enforced (max_mcast_qp_attach QPs per
 * group, max_mcast_grp groups, max_total_mcast_qp_attach in all), and a
 * QP destroyed while attached leaves its groups.
 *
 * VRDMA_TEST_TYPE=rxe runs it on rdma_rxe; the limits are checked on vrdma
 * only.  main() sets up what rc_test has (rc_suite.h) and IPv6 addresses.
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/wait.h>
#include <infiniband/verbs.h>

#include "rc_lib.h"
#include "rc_suite.h"

#define IP6_0		"fd00:215::1"
#define IP6_1		"fd00:215::2"
#define MC_QKEY		0x11112222
#define MC_QPN		0xffffff
#define MC_DEPTH	32
#define MC_MSGS		8
#define MC_LEN		200
#define GRH		40
#define MC_SLOT		(GRH + MC_LEN + 56)

static int mc_gid6_idx[2] = { -1, -1 };

static long mc_counter(const char *dev, const char *name)
{
	return rc_hw_counter(dev, name);
}

/* A UD QP in RTS with Q_Key @qkey; its CQs are @cq. */
static struct ibv_qp *mc_qp(struct __test_metadata *_metadata,
			    struct rc_dev *d, struct ibv_cq *cq, uint32_t qkey)
{
	struct ibv_qp_init_attr ia = {
		.qp_type = IBV_QPT_UD, .send_cq = cq, .recv_cq = cq,
		.cap = {
			.max_send_wr = MC_DEPTH, .max_recv_wr = MC_DEPTH,
			.max_send_sge = 1, .max_recv_sge = 1,
		},
	};
	struct ibv_qp_attr a = {
		.qp_state = IBV_QPS_INIT, .port_num = RC_PORT, .qkey = qkey,
	};
	struct ibv_qp *qp = ibv_create_qp(d->pd, &ia);

	if (!qp)
		return NULL;
	if (ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_PKEY_INDEX |
			  IBV_QP_PORT | IBV_QP_QKEY))
		goto err;
	a.qp_state = IBV_QPS_RTR;
	if (ibv_modify_qp(qp, &a, IBV_QP_STATE))
		goto err;
	a.qp_state = IBV_QPS_RTS;
	if (ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_SQ_PSN))
		goto err;
	return qp;
err:
	ibv_destroy_qp(qp);
	return NULL;
}

/* The MGID of the variant: ::ffff:239.1.2.<n> or ff0e::1:<n>. */
static void mc_mgid(union ibv_gid *g, int ipv6, int n)
{
	memset(g, 0, sizeof(*g));
	if (ipv6) {
		g->raw[0] = 0xff;
		g->raw[1] = 0x0e;
		g->raw[13] = 1;
		g->raw[14] = n >> 8;
		g->raw[15] = n;
	} else {
		g->raw[10] = 0xff;
		g->raw[11] = 0xff;
		g->raw[12] = 239;
		g->raw[13] = 1 + (n >> 8);
		g->raw[14] = 2;
		g->raw[15] = n;
	}
}

/* ---- data: the "mc" fixture ------------------------------------------ */

/* The receivers: on B with the Q_Key (2), with another, on A (the sender's). */
enum { R_B1, R_B2, R_BADKEY, R_A, R_NOT_ATTACHED, R_NUM };

FIXTURE(mc) {
	struct rc_dev d0, d1;
	int ipv6, gidx;
	union ibv_gid mgid, sgid;
	struct ibv_cq *scq, *rcq[R_NUM];
	struct ibv_qp *s, *r[R_NUM];
	int attached[R_NUM];
	struct rc_buf sb, rb[R_NUM];
	struct ibv_ah *ah;
	int reorder;
};

FIXTURE_VARIANT(mc) {
	int ipv6;
	int reorder;	/* through netem, which reorders them */
};

FIXTURE_VARIANT_ADD(mc, ipv4) {
	.ipv6 = 0,
};

FIXTURE_VARIANT_ADD(mc, ipv6) {
	.ipv6 = 1,
};

FIXTURE_VARIANT_ADD(mc, ipv4_reordered) {
	.ipv6 = 0, .reorder = 1,
};

FIXTURE_SETUP(mc)
{
	struct ibv_ah_attr aa = { .is_global = 1, .port_num = RC_PORT };
	int i;

	self->ipv6 = variant->ipv6;
	/* As ud_test: a SKIP in the setup must leave by the ASSERT jump. */
	if (self->ipv6 && (mc_gid6_idx[0] < 0 || mc_gid6_idx[1] < 0))
		RC_SKIP_UNLESS_CI(longjmp(_metadata->env, 1),
				  "no IPv6 RoCE v2 GIDs");
	/*
	 * netem on A's end of the veth holds packets for 100 ms but lets
	 * every second one (by its own count) through at once, ahead of
	 * those it holds: B gets them out of order, as a path may.
	 */
	if (variant->reorder &&
	    rc_sh("tc qdisc replace dev " NETDEV0
		  " root netem delay 100ms reorder 100% gap 2"))
		RC_SKIP_UNLESS_CI(longjmp(_metadata->env, 1),
				  "no netem qdisc");
	self->reorder = variant->reorder;
	rc_dev_open(_metadata, &self->d0, 0);
	rc_dev_open(_metadata, &self->d1, 1);
	self->gidx = self->ipv6 ? mc_gid6_idx[0] : self->d0.gid_idx;
	ASSERT_EQ(0, ibv_query_gid(self->d0.ctx, RC_PORT, self->gidx,
				   &self->sgid));
	mc_mgid(&self->mgid, self->ipv6, 3);

	self->scq = ibv_create_cq(self->d0.ctx, 2 * MC_DEPTH, NULL, NULL, 0);
	ASSERT_NE(NULL, self->scq);
	self->s = mc_qp(_metadata, &self->d0, self->scq, MC_QKEY);
	ASSERT_NE(NULL, self->s);
	rc_buf_alloc(_metadata, &self->sb, self->d0.pd, 64 * 1024,
		     IBV_ACCESS_LOCAL_WRITE);
	for (i = 0; i < R_NUM; i++) {
		struct rc_dev *d = i == R_A ? &self->d0 : &self->d1;

		self->rcq[i] = ibv_create_cq(d->ctx, 2 * MC_DEPTH, NULL,
					     NULL, 0);
		ASSERT_NE(NULL, self->rcq[i]);
		self->r[i] = mc_qp(_metadata, d, self->rcq[i],
				   i == R_BADKEY ? MC_QKEY + 1 : MC_QKEY);
		ASSERT_NE(NULL, self->r[i]);
		rc_buf_alloc(_metadata, &self->rb[i], d->pd,
			     MC_DEPTH * MC_SLOT, IBV_ACCESS_LOCAL_WRITE);
	}

	aa.grh.dgid = self->mgid;
	aa.grh.sgid_index = self->gidx;
	aa.grh.hop_limit = 8;
	self->ah = ibv_create_ah(self->d0.pd, &aa);
	ASSERT_NE(NULL, self->ah) {
		TH_LOG("ibv_create_ah(multicast): %s", strerror(errno));
	}
}

FIXTURE_TEARDOWN(mc)
{
	int i;

	if (self->ah)
		ibv_destroy_ah(self->ah);
	for (i = 0; i < R_NUM; i++) {
		if (self->attached[i])
			ibv_detach_mcast(self->r[i], &self->mgid, 0);
		if (self->r[i])
			ibv_destroy_qp(self->r[i]);
		if (self->rcq[i])
			ibv_destroy_cq(self->rcq[i]);
		rc_buf_free(&self->rb[i]);
	}
	if (self->s)
		ibv_destroy_qp(self->s);
	if (self->scq)
		ibv_destroy_cq(self->scq);
	rc_buf_free(&self->sb);
	rc_dev_close(&self->d1);
	rc_dev_close(&self->d0);
	if (self->reorder)
		rc_sh("tc qdisc del dev " NETDEV0 " root 2>/dev/null");
}

static void mc_post_recvs(struct __test_metadata *_metadata,
			  FIXTURE_DATA(mc) *self, int i, int n)
{
	int k;

	for (k = 0; k < n; k++) {
		struct ibv_sge sge = {
			.addr = (uintptr_t)(self->rb[i].p + k * MC_SLOT),
			.length = MC_SLOT, .lkey = self->rb[i].mr->lkey,
		};
		struct ibv_recv_wr wr = {
			.wr_id = k, .sg_list = &sge, .num_sge = 1,
		}, *bad;

		ASSERT_EQ(0, ibv_post_recv(self->r[i], &wr, &bad));
	}
}

/* @n messages to the group, message k filled with pattern @seed + k. */
static void mc_send(struct __test_metadata *_metadata, FIXTURE_DATA(mc) *self,
		    int n, uint32_t seed)
{
	struct ibv_wc wc[MC_MSGS];
	int k;

	for (k = 0; k < n; k++) {
		struct ibv_sge sge = {
			.addr = (uintptr_t)(self->sb.p + k * MC_LEN),
			.length = MC_LEN, .lkey = self->sb.mr->lkey,
		};
		struct ibv_send_wr wr = {
			.wr_id = k, .sg_list = &sge, .num_sge = 1,
			.opcode = IBV_WR_SEND, .send_flags = IBV_SEND_SIGNALED,
		}, *bad;

		rc_fill(self->sb.p + k * MC_LEN, MC_LEN, seed + k, 0);
		wr.wr.ud.ah = self->ah;
		wr.wr.ud.remote_qpn = MC_QPN;
		wr.wr.ud.remote_qkey = MC_QKEY;
		ASSERT_EQ(0, ibv_post_send(self->s, &wr, &bad));
	}
	ASSERT_EQ(n, rc_poll(self->scq, wc, n, RC_TIMEOUT_MS));
	for (k = 0; k < n; k++)
		EXPECT_EQ(IBV_WC_SUCCESS, wc[k].status);
}

/*
 * The message of the sender's mc_send(@n, @seed) that @data holds, or -1
 * if it is none of them.
 */
static int mc_which(const uint8_t *data, int n, uint32_t seed)
{
	uint8_t want[MC_LEN];
	int j;

	for (j = 0; j < n; j++) {
		rc_fill(want, MC_LEN, seed + j, 0);
		if (!memcmp(data, want, MC_LEN))
			return j;
	}
	return -1;
}

/*
 * Receiver @i got the @n messages of mc_send(@n, @seed), each once and
 * each whole, in its receive WQEs from @first_slot on, which it consumes
 * in order.  The messages themselves may come in any order: UD promises
 * none, and on the test's veth none holds, since the sender's packets
 * leave from whichever CPU runs its QP (the process's doorbell, the
 * unbound workqueue), and each CPU's packets wait in its own backlog.
 */
static void mc_expect(struct __test_metadata *_metadata,
		      FIXTURE_DATA(mc) *self, int i, int n, uint32_t seed,
		      int first_slot, const char *what)
{
	int seen[MC_MSGS] = { 0 }, reordered = 0;
	struct ibv_wc wc;
	int j, k;

	ASSERT_GE(MC_MSGS, n);
	for (k = 0; k < n; k++) {
		const uint8_t *grh, *data;

		ASSERT_EQ(1, rc_poll(self->rcq[i], &wc, 1, RC_TIMEOUT_MS)) {
			TH_LOG("%s: receiver %d: message %d of %d missing",
			       what, i, k, n);
		}
		ASSERT_EQ(IBV_WC_SUCCESS, wc.status) {
			TH_LOG("%s: receiver %d: %s", what, i,
			       ibv_wc_status_str(wc.status));
		}
		EXPECT_EQ(IBV_WC_RECV, wc.opcode);
		EXPECT_EQ(self->r[i]->qp_num, wc.qp_num);
		EXPECT_EQ(self->s->qp_num, wc.src_qp);
		EXPECT_EQ(GRH + MC_LEN, wc.byte_len);
		EXPECT_TRUE(wc.wc_flags & IBV_WC_GRH);
		ASSERT_EQ((uint64_t)(first_slot + k), wc.wr_id);
		grh = self->rb[i].p + wc.wr_id * MC_SLOT;
		data = grh + GRH;
		/* The packet's destination address: the group's. */
		if (self->ipv6) {
			EXPECT_EQ(0, memcmp(grh + 24, self->mgid.raw, 16));
			EXPECT_EQ(0, memcmp(grh + 8, self->sgid.raw, 16));
		} else {
			EXPECT_EQ(0, memcmp(grh + 36, self->mgid.raw + 12, 4));
			EXPECT_EQ(0, memcmp(grh + 32, self->sgid.raw + 12, 4));
		}
		j = mc_which(data, n, seed);
		EXPECT_LE(0, j) {
			TH_LOG("%s: receiver %d: WQE %d: data of no message sent",
			       what, i, first_slot + k);
		}
		if (j < 0)
			continue;
		EXPECT_EQ(0, seen[j]++) {
			TH_LOG("%s: receiver %d: message %d again, in WQE %d",
			       what, i, j, first_slot + k);
		}
		reordered |= j != k;
	}
	if (reordered)
		TH_LOG("%s: receiver %d: the messages came out of order", what,
		       i);
}

static void mc_attach(struct __test_metadata *_metadata,
		      FIXTURE_DATA(mc) *self, int i)
{
	ASSERT_EQ(0, ibv_attach_mcast(self->r[i], &self->mgid, 0)) {
		TH_LOG("ibv_attach_mcast(receiver %d): %s", i,
		       strerror(errno));
	}
	self->attached[i] = 1;
}

static void mc_detach(struct __test_metadata *_metadata,
		      FIXTURE_DATA(mc) *self, int i)
{
	self->attached[i] = 0;
	ASSERT_EQ(0, ibv_detach_mcast(self->r[i], &self->mgid, 0));
}

TEST_F_TIMEOUT(mc, send_recv, 120)
{
	const char *na = rc_cfg.name[0], *nb = rc_cfg.name[1];
	long sent = mc_counter(na, "mcast_sent_pkts");
	long rcvd = mc_counter(nb, "mcast_rcvd_pkts");
	long qkey = mc_counter(nb, "qkey_errors");
	long noqp;
	int i;

	for (i = 0; i < R_NUM; i++) {
		mc_post_recvs(_metadata, self, i, MC_DEPTH);
		if (i != R_NOT_ATTACHED)
			mc_attach(_metadata, self, i);
	}

	mc_send(_metadata, self, MC_MSGS, 100);
	mc_expect(_metadata, self, R_B1, MC_MSGS, 100, 0, "B1");
	mc_expect(_metadata, self, R_B2, MC_MSGS, 100, 0, "B2");
	/* The sender's own device gets it back, as a NIC does. */
	mc_expect(_metadata, self, R_A, MC_MSGS, 100, 0, "sender's device");
	EXPECT_CQ_EMPTY(self->rcq[R_BADKEY], "wrong Q_Key");
	EXPECT_CQ_EMPTY(self->rcq[R_NOT_ATTACHED], "not attached");
	EXPECT_CQ_EMPTY(self->rcq[R_B1], "more than was sent");
	if (!rc_cfg.is_rxe) {
		EXPECT_EQ(sent + MC_MSGS, mc_counter(na, "mcast_sent_pkts"));
		EXPECT_EQ(rcvd + MC_MSGS, mc_counter(nb, "mcast_rcvd_pkts"));
		EXPECT_EQ(qkey + MC_MSGS, mc_counter(nb, "qkey_errors"));
	}

	/* B2 leaves: B1 still receives, B2 no more. */
	mc_detach(_metadata, self, R_B2);
	mc_send(_metadata, self, 2, 200);
	mc_expect(_metadata, self, R_B1, 2, 200, MC_MSGS, "B1 after B2 left");
	mc_expect(_metadata, self, R_A, 2, 200, MC_MSGS, "A after B2 left");
	EXPECT_CQ_EMPTY(self->rcq[R_B2], "B2 after its detach");

	/* Everybody leaves: the group is gone, on B and on A. */
	mc_detach(_metadata, self, R_B1);
	mc_detach(_metadata, self, R_BADKEY);
	mc_detach(_metadata, self, R_A);
	noqp = mc_counter(nb, "no_qp");
	mc_send(_metadata, self, 1, 300);
	EXPECT_CQ_EMPTY(self->rcq[R_B1], "B1 after its detach");
	EXPECT_CQ_EMPTY(self->rcq[R_A], "A after its detach");
	/* B's netdev left the group: IP may drop it before we see it. */
	if (!rc_cfg.is_rxe)
		EXPECT_LE(noqp, mc_counter(nb, "no_qp"));
}

/*
 * ib_core refuses to destroy an attached QP (EBUSY); a process that exits
 * with QPs attached leaves their groups, and the group works on.
 */
TEST_F(mc, exit_attached)
{
	int pipefd[2], status;
	char c = 0;
	pid_t pid;

	mc_post_recvs(_metadata, self, R_B1, MC_DEPTH);
	mc_attach(_metadata, self, R_B1);
	mc_attach(_metadata, self, R_B2);
	EXPECT_EQ(EBUSY, ibv_destroy_qp(self->r[R_B2]));

	ASSERT_EQ(0, pipe(pipefd));
	pid = fork();
	ASSERT_LE(0, pid);
	if (!pid) {
		struct rc_dev d = { 0 };
		struct ibv_cq *cq;
		struct ibv_qp *qp;

		d.ctx = rc_open_by_name(rc_cfg.name[1]);
		d.pd = d.ctx ? ibv_alloc_pd(d.ctx) : NULL;
		cq = d.pd ? ibv_create_cq(d.ctx, 8, NULL, NULL, 0) : NULL;
		qp = cq ? mc_qp(_metadata, &d, cq, MC_QKEY) : NULL;
		if (qp && !ibv_attach_mcast(qp, &self->mgid, 0))
			c = 1;
		if (write(pipefd[1], &c, 1) != 1)
			_exit(2);
		_exit(0);	/* everything still attached and allocated */
	}
	close(pipefd[1]);
	EXPECT_EQ(1, read(pipefd[0], &c, 1));
	EXPECT_EQ(1, c);
	close(pipefd[0]);
	ASSERT_EQ(pid, waitpid(pid, &status, 0));
	EXPECT_EQ(0, status);

	mc_send(_metadata, self, 2, 400);
	mc_expect(_metadata, self, R_B1, 2, 400, 0, "B1 after a process left");
}

/* ---- errors and limits: the "mc_err" fixture ------------------------- */

FIXTURE(mc_err) {
	struct rc_dev d;
	struct ibv_cq *cq;
	struct ibv_qp *qp[80];
	int n;
};

FIXTURE_SETUP(mc_err)
{
	rc_dev_open(_metadata, &self->d, 1);
	self->cq = ibv_create_cq(self->d.ctx, 256, NULL, NULL, 0);
	ASSERT_NE(NULL, self->cq);
}

FIXTURE_TEARDOWN(mc_err)
{
	int i;

	/* Destroying an attached QP detaches it (uverbs, then the driver). */
	for (i = 0; i < self->n; i++)
		if (self->qp[i])
			ibv_destroy_qp(self->qp[i]);
	if (self->cq)
		ibv_destroy_cq(self->cq);
	rc_dev_close(&self->d);
}

static struct ibv_qp *mc_err_qp(struct __test_metadata *_metadata,
				FIXTURE_DATA(mc_err) *self)
{
	struct ibv_qp *qp = mc_qp(_metadata, &self->d, self->cq, MC_QKEY);

	if (qp && self->n < (int)(sizeof(self->qp) / sizeof(self->qp[0])))
		self->qp[self->n++] = qp;
	return qp;
}

TEST_F(mc_err, refused)
{
	struct ibv_qp_init_attr ia = {
		.qp_type = IBV_QPT_RC, .send_cq = self->cq,
		.recv_cq = self->cq,
		.cap = { .max_send_wr = 4, .max_recv_wr = 4,
			 .max_send_sge = 1, .max_recv_sge = 1 },
	};
	union ibv_gid mgid, other, own;
	struct ibv_qp *ud, *rc;

	mc_mgid(&mgid, 0, 10);
	mc_mgid(&other, 1, 10);
	ud = mc_err_qp(_metadata, self);
	ASSERT_NE(NULL, ud);
	rc = ibv_create_qp(self->d.pd, &ia);
	ASSERT_NE(NULL, rc);
	self->qp[self->n++] = rc;

	/* Only UD QPs, only multicast GIDs. */
	EXPECT_EQ(EINVAL, ibv_attach_mcast(rc, &mgid, 0));
	ASSERT_EQ(0, ibv_query_gid(self->d.ctx, RC_PORT, self->d.gid_idx,
				   &own));
	EXPECT_EQ(EINVAL, ibv_attach_mcast(ud, &own, 0));
	/* Detach of a group the QP is not in. */
	EXPECT_EQ(EINVAL, ibv_detach_mcast(ud, &mgid, 0));
	/* Twice is once: one detach undoes it. */
	EXPECT_EQ(0, ibv_attach_mcast(ud, &mgid, 0));
	EXPECT_EQ(0, ibv_attach_mcast(ud, &mgid, 0));
	EXPECT_EQ(EINVAL, ibv_detach_mcast(ud, &other, 0));
	EXPECT_EQ(0, ibv_detach_mcast(ud, &mgid, 0));
	EXPECT_EQ(EINVAL, ibv_detach_mcast(ud, &mgid, 0));
	/* IPv6 groups too, on an IPv4-only QP: the GID names the group. */
	EXPECT_EQ(0, ibv_attach_mcast(ud, &other, 0));
	EXPECT_EQ(0, ibv_detach_mcast(ud, &other, 0));
}

/* The limits query_device reports are the ones attach enforces. */
TEST_F_TIMEOUT(mc_err, limits, 300)
{
	struct ibv_device_attr *a = &self->d.attr;
	int per_grp = a->max_mcast_qp_attach, grps = a->max_mcast_grp;
	int total = a->max_total_mcast_qp_attach, i, j, k;
	union ibv_gid g;
	struct ibv_qp *qp;

	TH_LOG("max_mcast_grp %d max_mcast_qp_attach %d "
	       "max_total_mcast_qp_attach %d", grps, per_grp, total);
	ASSERT_LT(0, grps);
	ASSERT_LT(0, per_grp);
	ASSERT_LE(per_grp, total);
	if (rc_cfg.is_rxe)
		SKIP(return, "rxe's limits are not checked");
	ASSERT_EQ(256, grps);
	ASSERT_EQ(64, per_grp);
	ASSERT_EQ(2048, total);
	ASSERT_GT(70, per_grp);

	/* per_grp QPs in one group; one more is refused. */
	mc_mgid(&g, 0, 1);
	for (i = 0; i <= per_grp; i++) {
		qp = mc_err_qp(_metadata, self);
		ASSERT_NE(NULL, qp);
		ASSERT_EQ(i < per_grp ? 0 : ENOMEM,
			  ibv_attach_mcast(qp, &g, 0)) {
			TH_LOG("QP %d of one group", i);
		}
	}
	/* The QP left out goes into grps groups (one is taken); no more. */
	qp = self->qp[per_grp];
	for (j = 2; j <= grps + 1; j++) {
		mc_mgid(&g, 0, j);
		ASSERT_EQ(j <= grps ? 0 : ENOMEM, ibv_attach_mcast(qp, &g, 0)) {
			TH_LOG("group %d of %d", j, grps);
		}
	}
	/* Leave all but one of them again. */
	for (j = 3; j <= grps; j++) {
		mc_mgid(&g, 0, j);
		ASSERT_EQ(0, ibv_detach_mcast(qp, &g, 0));
	}
	/*
	 * Now per_grp + 1 attachments in 2 groups; fill groups with the
	 * first QPs up to the total, then one more is refused.
	 */
	k = per_grp + 1;
	for (j = 3; k < total; j++) {
		mc_mgid(&g, 0, j);
		for (i = 0; i < per_grp && k < total; i++, k++)
			ASSERT_EQ(0, ibv_attach_mcast(self->qp[i], &g, 0)) {
				TH_LOG("attachment %d of %d", k, total);
			}
	}
	mc_mgid(&g, 0, j);
	EXPECT_EQ(ENOMEM, ibv_attach_mcast(self->qp[0], &g, 0));
	/* After a detach there is room for one. */
	mc_mgid(&g, 0, 1);
	ASSERT_EQ(0, ibv_detach_mcast(self->qp[0], &g, 0));
	mc_mgid(&g, 0, j);
	EXPECT_EQ(0, ibv_attach_mcast(self->qp[0], &g, 0));
	/* The teardown destroys them all attached: the groups go too. */
}

static void mc_ipv6_setup(void)
{
	static const char *const gid[2] = {
		"fd00:0215:0000:0000:0000:0000:0000:0001",
		"fd00:0215:0000:0000:0000:0000:0000:0002",
	};

	if (!rc_suite_ipv6_addrs(IP6_0, IP6_1))
		rc_suite_wait_gids(gid, mc_gid6_idx);
}

int main(int argc, char **argv)
{
	return rc_suite_main_setup(argc, argv, mc_ipv6_setup);
}
