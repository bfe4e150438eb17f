// SPDX-License-Identifier: GPL-2.0
/*
 * XRC (eXtended Reliable Connected transport) through the standard verbs
 * API, against the contract of /work/scratch/xrc-design.md:
 *
 *   - an XRC domain (ibv_open_xrcd), XRC SRQs on it (ibv_create_srq_ex,
 *     IBV_SRQT_XRC, each with its own CQ and number), XRC target QPs
 *     (IBV_QPT_XRC_RECV: no PD, no rings) on it, and XRC initiator QPs
 *     (IBV_QPT_XRC_SEND: a send queue only) that name, in every work
 *     request, the SRQ at the target that takes the message;
 *   - the data path: SEND (with immediate, inline) into the SRQ named,
 *     its receive completion in that SRQ's CQ with qp_num = the target QP;
 *     two SRQs behind one target QP and two target QPs in front of one
 *     SRQ; RDMA WRITE (with immediate), READ and the atomics, the rkeys
 *     checked against the PD of the SRQ named; messages of many packets
 *     across the PSN wrap; a target QP left in RTR, and one made as
 *     librdmacm makes it (its ibv_qp keeps the PD given); the SRQ limit;
 *   - the refusals: an SRQ number nobody has, an SRQ of another XRC
 *     domain, an SRQ destroyed meanwhile, also by another thread under
 *     traffic (IBV_WC_REM_INV_REQ_ERR at the initiator, the target QP in
 *     error, IBV_EVENT_QP_REQ_ERR), an rkey of another PD than the
 *     SRQ's (IBV_WC_REM_ACCESS_ERR), a receive WQE with a key of another
 *     PD than its SRQ's, an SRQ number wider than 24 bits
 *     (IBV_WC_LOC_QP_OP_ERR, not truncated), posting to a target QP or
 *     receiving on an initiator (EINVAL), an XRC SRQ without CQ or domain
 *     (EINVAL);
 *   - a domain shared through a file with another process, which creates
 *     its own SRQ on it and opens the target QP (ibv_open_qp): messages for
 *     either process through one target QP, also after its creator let go
 *     of it;
 *   - the ibv_wr_* API (ibv_wr_set_xrc_srqn) in batches;
 *   - on the wire (xrc_wire): between two devices in two network
 *     namespaces, every request packet an XRC opcode (0xA0 + the RC one)
 *     with an XRCETH naming the SRQ, every response in the XRC range
 *     without one, every ICRC right.
 *
 * Every byte of every buffer involved is compared with an image of what it
 * must hold (so bytes nobody should touch are checked too), and every
 * defined field of every completion.  Which WQE of an SRQ a message takes
 * is checked as well: an SRQ serves its WQEs in the order they were posted.
 *
 * Variants, setup and device names are those of rc_test.c (rc_suite.h):
 * "loopback" (initiator and target on one device) and "two_devices" (the
 * initiator on one end of a veth pair, the target on the other).  rdma_rxe
 * has no XRC: with VRDMA_TEST_TYPE=rxe the program skips.
 *
 * Runs as root in the test VM.
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <net/ethernet.h>
#include <net/if.h>
#include <linux/if_packet.h>
#include <poll.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>
#include <infiniband/verbs.h>

#include "rc_lib.h"
#include "rc_suite.h"
#include "wire_lib.h"

#define XRC_SRQS	8	/* SRQs of one test at most */
#define XRC_CONNS	8	/* initiator/target pairs at most */
#define XRC_MEM		((2 << 20) + 4096)	/* initiator and target memory */
#define XRC_TGT_ACCESS	(IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ | \
			 IBV_ACCESS_REMOTE_ATOMIC)
#define XRC_MEM_ACCESS	(RC_ACCESS_ALL | IBV_ACCESS_REMOTE_ATOMIC)
#define XRC_OPS		(IBV_QP_EX_WITH_SEND | IBV_QP_EX_WITH_SEND_WITH_IMM | \
			 IBV_QP_EX_WITH_RDMA_WRITE | \
			 IBV_QP_EX_WITH_RDMA_WRITE_WITH_IMM | \
			 IBV_QP_EX_WITH_RDMA_READ | \
			 IBV_QP_EX_WITH_ATOMIC_CMP_AND_SWP | \
			 IBV_QP_EX_WITH_ATOMIC_FETCH_AND_ADD)
/* In a wr_id: through the ibv_wr_* API, the SRQ number set after the data. */
#define XRC_SRQN_LAST	(1ULL << 63)

/* An XRC SRQ on the target's device, its CQ and its receive buffers. */
struct xrc_srq {
	struct ibv_srq *srq;
	struct ibv_cq *cq;
	struct ibv_pd *pd;
	uint32_t num;		/* ibv_get_srq_num() */
	struct rc_buf rb;	/* one slot per WQE */
	uint8_t *img;		/* what rb must hold */
	size_t cap;		/* bytes a WQE takes (two SGEs) */
	size_t slot;		/* bytes of rb per WQE */
	uint32_t nwqe;		/* slots */
	uint64_t posted;	/* WQEs posted, wr_ids 0 .. posted - 1 */
	uint64_t assigned;	/* WQEs the messages sent so far will take */
	uint64_t done;		/* receive completions checked */
};

/* An initiator QP on device A connected to a target QP on device B. */
struct xrc_conn {
	struct ibv_cq *scq;
	struct ibv_qp *ini;
	struct ibv_qp_ex *inix;	/* created for the ibv_wr_* API */
	struct ibv_qp *tgt;	/* NULL once closed (shared_file) */
	uint32_t tgt_qpn;
	uint32_t ini_psn, tgt_psn;
};

/* Registered memory with the image of what it must hold. */
struct xrc_mem {
	struct rc_buf b;
	uint8_t *img;
};

struct xrc_env {
	struct rc_dev d0, d1;
	struct rc_dev *da, *db;		/* the initiators', the targets' */
	struct ibv_xrcd *xrcd;		/* on B, of no file */
	struct ibv_xrcd *xrcd2;		/* another one */
	struct ibv_xrcd *fxrcd;		/* shared_file: of a file */
	int fd;
	char path[64];
	struct ibv_pd *pd2;		/* another PD on B */
	struct xrc_srq s[XRC_SRQS];
	int nsrq;
	struct xrc_conn c[XRC_CONNS];
	int nconn;
	struct xrc_mem sm;		/* initiator memory, on A */
	struct xrc_mem tm[2];		/* target memory: B's PD, pd2 */
	enum ibv_mtu mtu_enum;
	int mtu;
	pid_t child;
};

/* ---- setup --------------------------------------------------------------- */

/* rc_dev_open() of a device by name. */
static void xrc_dev_open(struct __test_metadata *_metadata, struct rc_dev *d,
			 const char *name, int gid_idx)
{
	memset(d, 0, sizeof(*d));
	d->ctx = rc_open_by_name(name);
	ASSERT_NE(NULL, d->ctx) {
		TH_LOG("cannot open %s", name);
	}
	d->owned = 1;
	ASSERT_EQ(0, ibv_query_device(d->ctx, &d->attr));
	ASSERT_EQ(0, ibv_query_port(d->ctx, RC_PORT, &d->port));
	ASSERT_EQ(IBV_PORT_ACTIVE, d->port.state);
	d->gid_idx = gid_idx;
	ASSERT_EQ(0, ibv_query_gid(d->ctx, RC_PORT, gid_idx, &d->gid));
	d->pd = ibv_alloc_pd(d->ctx);
	ASSERT_NE(NULL, d->pd);
}

static struct ibv_xrcd *xrc_open_xrcd(struct ibv_context *ctx, int fd,
				      int oflags)
{
	struct ibv_xrcd_init_attr a = {
		.comp_mask = IBV_XRCD_INIT_ATTR_FD | IBV_XRCD_INIT_ATTR_OFLAGS,
		.fd = fd,
		.oflags = oflags,
	};

	return ibv_open_xrcd(ctx, &a);
}

static void xrc_mem_alloc(struct __test_metadata *_metadata,
			  struct xrc_mem *m, struct ibv_pd *pd, uint32_t seed)
{
	rc_buf_alloc(_metadata, &m->b, pd, XRC_MEM, XRC_MEM_ACCESS);
	rc_fill(m->b.p, m->b.size, seed, 0);
	m->img = malloc(m->b.size);
	ASSERT_NE(NULL, m->img);
	memcpy(m->img, m->b.p, m->b.size);
}

static void xrc_mem_free(struct xrc_mem *m)
{
	rc_buf_free(&m->b);
	free(m->img);
	m->img = NULL;
}

/*
 * Devices @na (GID @ga) for the initiators and, with @two, @nb (@gb) for
 * the targets (else @na again); an XRC domain on the targets' device, and
 * memory on both.
 */
static void xrc_env_open(struct __test_metadata *_metadata, struct xrc_env *e,
			 const char *na, int ga, const char *nb, int gb,
			 int two)
{
	memset(e, 0, sizeof(*e));
	e->fd = -1;
	xrc_dev_open(_metadata, &e->d0, na, ga);
	e->da = e->db = &e->d0;
	if (two) {
		xrc_dev_open(_metadata, &e->d1, nb, gb);
		e->db = &e->d1;
	}
	e->mtu_enum = e->da->port.active_mtu < e->db->port.active_mtu ?
		      e->da->port.active_mtu : e->db->port.active_mtu;
	e->mtu = 128 << e->mtu_enum;
	e->xrcd = xrc_open_xrcd(e->db->ctx, -1, O_CREAT);
	ASSERT_NE(NULL, e->xrcd) {
		TH_LOG("ibv_open_xrcd(fd -1, O_CREAT): %s", strerror(errno));
	}
	xrc_mem_alloc(_metadata, &e->sm, e->da->pd, 0x51);
	xrc_mem_alloc(_metadata, &e->tm[0], e->db->pd, 0x7a);
}

/* Destroy in the order ib_core allows: QPs, SRQs, CQs, MRs, domains, PDs. */
static void xrc_env_close(struct __test_metadata *_metadata, struct xrc_env *e)
{
	int i, st;

	if (e->child > 0) {
		kill(e->child, SIGKILL);
		waitpid(e->child, &st, 0);
	}
	for (i = 0; i < e->nconn; i++) {
		if (e->c[i].ini)
			EXPECT_EQ(0, ibv_destroy_qp(e->c[i].ini));
		if (e->c[i].tgt)
			EXPECT_EQ(0, ibv_destroy_qp(e->c[i].tgt));
		if (e->c[i].scq)
			EXPECT_EQ(0, ibv_destroy_cq(e->c[i].scq));
	}
	for (i = 0; i < e->nsrq; i++) {
		if (e->s[i].srq)
			EXPECT_EQ(0, ibv_destroy_srq(e->s[i].srq));
		if (e->s[i].cq)
			EXPECT_EQ(0, ibv_destroy_cq(e->s[i].cq));
		rc_buf_free(&e->s[i].rb);
		free(e->s[i].img);
	}
	xrc_mem_free(&e->sm);
	xrc_mem_free(&e->tm[0]);
	xrc_mem_free(&e->tm[1]);
	if (e->xrcd)
		EXPECT_EQ(0, ibv_close_xrcd(e->xrcd));
	if (e->xrcd2)
		EXPECT_EQ(0, ibv_close_xrcd(e->xrcd2));
	if (e->fxrcd)
		EXPECT_EQ(0, ibv_close_xrcd(e->fxrcd));
	if (e->fd >= 0)
		close(e->fd);
	if (e->path[0])
		unlink(e->path);
	if (e->pd2)
		EXPECT_EQ(0, ibv_dealloc_pd(e->pd2));
	rc_dev_close(&e->d1);
	rc_dev_close(&e->d0);
}

/* The second PD on B, and target memory on it. */
static void xrc_pd2(struct __test_metadata *_metadata, struct xrc_env *e)
{
	e->pd2 = ibv_alloc_pd(e->db->ctx);
	ASSERT_NE(NULL, e->pd2);
	xrc_mem_alloc(_metadata, &e->tm[1], e->pd2, 0x7b);
}

/*
 * An XRC SRQ on B in domain @xrcd with PD @pd and a CQ of its own: @nwqe
 * slots of receive buffer of @cap bytes each (two SGEs per WQE); none
 * posted yet.
 */
static struct xrc_srq *xrc_srq_create(struct __test_metadata *_metadata,
				      struct xrc_env *e, struct ibv_xrcd *xrcd,
				      struct ibv_pd *pd, uint32_t nwqe,
				      size_t cap)
{
	struct ibv_srq_init_attr_ex a;
	struct xrc_srq *s;
	int i;

	ASSERT_LT(e->nsrq, XRC_SRQS);
	s = &e->s[e->nsrq++];
	memset(s, 0, sizeof(*s));
	s->pd = pd;
	s->cap = cap;
	s->slot = cap + 64;
	s->nwqe = nwqe;
	s->cq = ibv_create_cq(e->db->ctx, nwqe + 16, NULL, NULL, 0);
	ASSERT_NE(NULL, s->cq);

	memset(&a, 0, sizeof(a));
	a.attr.max_wr = nwqe;
	a.attr.max_sge = 2;
	a.comp_mask = IBV_SRQ_INIT_ATTR_TYPE | IBV_SRQ_INIT_ATTR_PD |
		      IBV_SRQ_INIT_ATTR_XRCD | IBV_SRQ_INIT_ATTR_CQ;
	a.srq_type = IBV_SRQT_XRC;
	a.pd = pd;
	a.xrcd = xrcd;
	a.cq = s->cq;
	s->srq = ibv_create_srq_ex(e->db->ctx, &a);
	ASSERT_NE(NULL, s->srq) {
		TH_LOG("ibv_create_srq_ex(XRC, %u WRs): %s", nwqe,
		       strerror(errno));
	}
	EXPECT_LE(nwqe, a.attr.max_wr);
	EXPECT_LE(2, a.attr.max_sge);
	ASSERT_EQ(0, ibv_get_srq_num(s->srq, &s->num));
	/* Non-zero and within the XRCETH's 24 bits; one per SRQ. */
	EXPECT_NE(0, s->num);
	EXPECT_GT(1u << 24, s->num);
	for (i = 0; i < e->nsrq - 1; i++)
		if (e->s[i].srq)
			EXPECT_NE(e->s[i].num, s->num) {
				TH_LOG("two SRQs numbered %#x", s->num);
			}

	rc_buf_alloc(_metadata, &s->rb, pd, nwqe * s->slot, RC_ACCESS_ALL);
	rc_fill(s->rb.p, s->rb.size, 0xb6 + e->nsrq, 0);
	s->img = malloc(s->rb.size);
	ASSERT_NE(NULL, s->img);
	memcpy(s->img, s->rb.p, s->rb.size);
	return s;
}

/* WQE @w's two receive segments, uneven and apart, in its slot of rb. */
static void wqe_sgl(const struct xrc_srq *s, uint64_t w, struct rc_sgl *g)
{
	rc_sgl_layout(g, w * s->slot + 1, s->cap, 2, (uint32_t)w + 7);
}

static int srq_post_sgl(struct ibv_srq *srq, uint64_t wr_id,
			struct ibv_sge *sge, int n)
{
	struct ibv_recv_wr wr = {
		.wr_id = wr_id, .sg_list = n ? sge : NULL, .num_sge = n,
	};
	struct ibv_recv_wr *bad = NULL;

	return ibv_post_srq_recv(srq, &wr, &bad);
}

/* Post @n WQEs, the next wr_ids, each into its own slot of rb. */
static void xrc_srq_post(struct __test_metadata *_metadata,
			 struct xrc_srq *s, int n)
{
	struct ibv_sge sge[2];
	struct rc_sgl g;
	uint64_t w;

	for (; n > 0; n--) {
		w = s->posted;
		ASSERT_LT(w, s->nwqe);
		wqe_sgl(s, w, &g);
		rc_sgl_to_ibv(&g, sge, s->rb.p, s->rb.mr->lkey);
		ASSERT_EQ(0, srq_post_sgl(s->srq, w, sge, g.n)) {
			TH_LOG("ibv_post_srq_recv of WQE %" PRIu64, w);
		}
		s->posted++;
	}
}

static enum ibv_qp_state qp_state(struct ibv_qp *qp)
{
	return rc_qp_state(qp);
}

/* Target to INIT, RTR and, with @tgt_rts, RTS; then the initiator to RTS. */
static void xrc_connect(struct __test_metadata *_metadata, struct xrc_env *e,
			struct xrc_conn *c, int tgt_rts)
{
	struct ibv_qp_attr a;

	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_INIT;
	a.pkey_index = 0;
	a.port_num = RC_PORT;
	a.qp_access_flags = XRC_TGT_ACCESS;
	ASSERT_EQ(0, ibv_modify_qp(c->tgt, &a, IBV_QP_STATE |
				   IBV_QP_PKEY_INDEX | IBV_QP_PORT |
				   IBV_QP_ACCESS_FLAGS)) {
		TH_LOG("target RESET->INIT: %s", strerror(errno));
	}
	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_RTR;
	a.path_mtu = e->mtu_enum;
	a.dest_qp_num = c->ini->qp_num;
	a.rq_psn = c->ini_psn;
	a.max_dest_rd_atomic = rc_rd_atomic(e->db->attr.max_qp_rd_atom);
	a.min_rnr_timer = 1;
	a.ah_attr.is_global = 1;
	a.ah_attr.grh.dgid = e->da->gid;
	a.ah_attr.grh.sgid_index = e->db->gid_idx;
	a.ah_attr.grh.hop_limit = RC_HOP_LIMIT;
	a.ah_attr.port_num = RC_PORT;
	ASSERT_EQ(0, ibv_modify_qp(c->tgt, &a, RC_RTR_MASK)) {
		TH_LOG("target INIT->RTR: %s", strerror(errno));
	}
	if (tgt_rts) {
		memset(&a, 0, sizeof(a));
		a.qp_state = IBV_QPS_RTS;
		a.timeout = 16;
		a.sq_psn = c->tgt_psn;
		ASSERT_EQ(0, ibv_modify_qp(c->tgt, &a, IBV_QP_STATE |
					   IBV_QP_TIMEOUT | IBV_QP_SQ_PSN)) {
			TH_LOG("target RTR->RTS: %s", strerror(errno));
		}
	}

	/* The initiator: the IBA's XRC_INI masks (no RNR, no responder). */
	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_INIT;
	a.pkey_index = 0;
	a.port_num = RC_PORT;
	a.qp_access_flags = 0;
	ASSERT_EQ(0, ibv_modify_qp(c->ini, &a, IBV_QP_STATE |
				   IBV_QP_PKEY_INDEX | IBV_QP_PORT |
				   IBV_QP_ACCESS_FLAGS)) {
		TH_LOG("initiator RESET->INIT: %s", strerror(errno));
	}
	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_RTR;
	a.path_mtu = e->mtu_enum;
	a.dest_qp_num = c->tgt_qpn;
	a.rq_psn = c->tgt_psn;
	a.ah_attr.is_global = 1;
	a.ah_attr.grh.dgid = e->db->gid;
	a.ah_attr.grh.sgid_index = e->da->gid_idx;
	a.ah_attr.grh.hop_limit = RC_HOP_LIMIT;
	a.ah_attr.port_num = RC_PORT;
	ASSERT_EQ(0, ibv_modify_qp(c->ini, &a, IBV_QP_STATE | IBV_QP_AV |
				   IBV_QP_PATH_MTU | IBV_QP_DEST_QPN |
				   IBV_QP_RQ_PSN)) {
		TH_LOG("initiator INIT->RTR: %s", strerror(errno));
	}
	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_RTS;
	a.timeout = 16;		/* 268 ms: TCG is slow */
	a.retry_cnt = 7;
	a.rnr_retry = 7;
	a.sq_psn = c->ini_psn;
	a.max_rd_atomic = rc_rd_atomic(e->da->attr.max_qp_init_rd_atom);
	ASSERT_EQ(0, ibv_modify_qp(c->ini, &a, RC_RTS_MASK)) {
		TH_LOG("initiator RTR->RTS: %s", strerror(errno));
	}
	EXPECT_EQ(IBV_QPS_RTS, qp_state(c->ini));
	EXPECT_EQ(tgt_rts ? IBV_QPS_RTS : IBV_QPS_RTR, qp_state(c->tgt));
}

enum { XRC_CONNECT = 1, XRC_WR_API = 2, XRC_TGT_RTR = 4 };

/*
 * An initiator on A (with XRC_WR_API for the ibv_wr_* API) and a target on
 * B in @xrcd; with XRC_CONNECT connected (the target left in RTR with
 * XRC_TGT_RTR).  The first initiator starts just below the PSN wrap.
 */
static struct xrc_conn *xrc_conn_create(struct __test_metadata *_metadata,
					struct xrc_env *e,
					struct ibv_xrcd *xrcd, int flags)
{
	struct ibv_qp_init_attr_ex ia;
	struct xrc_conn *c;
	int k = e->nconn;

	ASSERT_LT(k, XRC_CONNS);
	c = &e->c[e->nconn++];
	memset(c, 0, sizeof(*c));
	c->scq = ibv_create_cq(e->da->ctx, 256, NULL, NULL, 0);
	ASSERT_NE(NULL, c->scq);

	memset(&ia, 0, sizeof(ia));
	ia.qp_type = IBV_QPT_XRC_SEND;
	ia.send_cq = c->scq;
	ia.cap.max_send_wr = 128;
	ia.cap.max_send_sge = 4;
	ia.cap.max_inline_data = 64;
	ia.comp_mask = IBV_QP_INIT_ATTR_PD;
	ia.pd = e->da->pd;
	if (flags & XRC_WR_API) {
		ia.comp_mask |= IBV_QP_INIT_ATTR_SEND_OPS_FLAGS;
		ia.send_ops_flags = XRC_OPS;
	}
	c->ini = ibv_create_qp_ex(e->da->ctx, &ia);
	ASSERT_NE(NULL, c->ini) {
		TH_LOG("ibv_create_qp_ex(XRC_SEND): %s", strerror(errno));
	}
	EXPECT_EQ(IBV_QPT_XRC_SEND, c->ini->qp_type);
	EXPECT_EQ(IBV_QPS_RESET, c->ini->state);
	EXPECT_LE(128, ia.cap.max_send_wr);
	EXPECT_LE(4, ia.cap.max_send_sge);
	EXPECT_LE(64, ia.cap.max_inline_data);
	/* It has no receive queue. */
	EXPECT_EQ(0, ia.cap.max_recv_wr);
	EXPECT_EQ(0, ia.cap.max_recv_sge);
	if (flags & XRC_WR_API) {
		c->inix = ibv_qp_to_qp_ex(c->ini);
		ASSERT_NE(NULL, c->inix);
	}

	memset(&ia, 0, sizeof(ia));
	ia.qp_type = IBV_QPT_XRC_RECV;
	ia.comp_mask = IBV_QP_INIT_ATTR_XRCD;
	ia.xrcd = xrcd;
	c->tgt = ibv_create_qp_ex(e->db->ctx, &ia);
	ASSERT_NE(NULL, c->tgt) {
		TH_LOG("ibv_create_qp_ex(XRC_RECV): %s", strerror(errno));
	}
	EXPECT_EQ(IBV_QPT_XRC_RECV, c->tgt->qp_type);
	EXPECT_NE(0, c->tgt->qp_num);
	c->tgt_qpn = c->tgt->qp_num;

	c->ini_psn = 0xfffff0 - 7 * k;
	c->tgt_psn = 0x3000 + 101 * k;
	if (flags & XRC_CONNECT)
		xrc_connect(_metadata, e, c, !(flags & XRC_TGT_RTR));
	return c;
}

/* ---- messages -------------------------------------------------------------- */

/* One message of an initiator, everything about it that can be checked. */
struct xrc_msg {
	enum ibv_wr_opcode op;
	struct xrc_srq *s;	/* the SRQ named (and checked); else: */
	uint32_t srqn;		/* the number named, for an SRQ not ours */
	size_t len;
	int lsge;		/* local SGEs: gather, READ scatter (1 if 0) */
	size_t loff;		/* where they start in the initiator memory */
	int tmem;		/* target memory: 0 B's PD, 1 pd2 */
	size_t roff;		/* WRITE, READ, atomics: where in it */
	unsigned int flags;	/* IBV_SEND_INLINE */
	uint32_t seed, imm;
	uint64_t compare_add, swap;
	uint64_t wr_id;
};

/* What xrc_prepare() worked out, for posting and completing. */
struct xrc_pending {
	struct ibv_send_wr wr;
	struct ibv_sge sge[RC_MAX_SGE];
	uint8_t *inl;		/* an inline message's source */
	uint64_t wqe;		/* the SRQ WQE it takes */
	int has_recv;
	uint64_t old;		/* an atomic's original value */
};

static int is_send(enum ibv_wr_opcode op)
{
	return op == IBV_WR_SEND || op == IBV_WR_SEND_WITH_IMM;
}

static int is_atomic(enum ibv_wr_opcode op)
{
	return op == IBV_WR_ATOMIC_CMP_AND_SWP ||
	       op == IBV_WR_ATOMIC_FETCH_AND_ADD;
}

static const char *op_str(enum ibv_wr_opcode op)
{
	switch (op) {
	case IBV_WR_ATOMIC_CMP_AND_SWP: return "CAS";
	case IBV_WR_ATOMIC_FETCH_AND_ADD: return "FAA";
	default: return rc_op_str(op);
	}
}

static enum ibv_wc_opcode wc_op(enum ibv_wr_opcode op)
{
	switch (op) {
	case IBV_WR_SEND:
	case IBV_WR_SEND_WITH_IMM: return IBV_WC_SEND;
	case IBV_WR_RDMA_WRITE:
	case IBV_WR_RDMA_WRITE_WITH_IMM: return IBV_WC_RDMA_WRITE;
	case IBV_WR_RDMA_READ: return IBV_WC_RDMA_READ;
	case IBV_WR_ATOMIC_CMP_AND_SWP: return IBV_WC_COMP_SWAP;
	default: return IBV_WC_FETCH_ADD;
	}
}

/*
 * Lay out @m: fill its source (and the images), work out what its
 * destination must hold afterwards, and build its WR.
 */
static void xrc_prepare(struct __test_metadata *_metadata, struct xrc_env *e,
			const struct xrc_msg *m, struct xrc_pending *p)
{
	struct xrc_mem *t = &e->tm[m->tmem];
	uint32_t seed = m->seed * 7 + 1;
	int lsge = m->lsge ? m->lsge : 1;
	struct rc_sgl lg, rg;
	uint64_t v;

	memset(p, 0, sizeof(*p));
	ASSERT_NE(NULL, t->b.p);
	p->has_recv = m->s && (is_send(m->op) ||
			       m->op == IBV_WR_RDMA_WRITE_WITH_IMM);
	if (p->has_recv) {
		/* The next WQE of the SRQ; posted now if there is none. */
		p->wqe = m->s->assigned++;
		if (p->wqe >= m->s->posted)
			xrc_srq_post(_metadata, m->s, p->wqe + 1 -
				     m->s->posted);
		if (is_send(m->op)) {
			ASSERT_LE(m->len, m->s->cap);
			wqe_sgl(m->s, p->wqe, &rg);
			rc_sgl_expect(&rg, m->s->img, m->len, seed);
		}
	}

	memset(&p->wr, 0, sizeof(p->wr));
	p->wr.wr_id = m->wr_id;
	p->wr.opcode = m->op;
	p->wr.send_flags = IBV_SEND_SIGNALED | m->flags;
	p->wr.qp_type.xrc.remote_srqn = m->s ? m->s->num : m->srqn;
	if (rc_op_has_imm(m->op))
		p->wr.imm_data = htobe32(m->imm);

	if (is_atomic(m->op)) {
		ASSERT_EQ(0, m->roff % 8);
		ASSERT_EQ(0, m->loff % 8);
		p->old = v = rd64(t->img + m->roff);
		if (m->op == IBV_WR_ATOMIC_FETCH_AND_ADD)
			v += m->compare_add;
		else if (v == m->compare_add)
			v = m->swap;
		wr64(t->img + m->roff, v);
		wr64(e->sm.img + m->loff, p->old);
		p->sge[0].addr = (uintptr_t)e->sm.b.p + m->loff;
		p->sge[0].length = 8;
		p->sge[0].lkey = e->sm.b.mr->lkey;
		p->wr.sg_list = p->sge;
		p->wr.num_sge = 1;
		p->wr.wr.atomic.remote_addr = (uintptr_t)t->b.p + m->roff;
		p->wr.wr.atomic.rkey = t->b.mr->rkey;
		p->wr.wr.atomic.compare_add = m->compare_add;
		p->wr.wr.atomic.swap = m->swap;
		return;
	}

	rc_sgl_layout(&lg, m->loff, m->len, lsge, seed + 3);
	ASSERT_LE(lg.end, e->sm.b.size);
	if (m->op == IBV_WR_RDMA_READ) {
		/* The target's bytes, and where they land here. */
		ASSERT_LE(m->roff + m->len, t->b.size);
		rc_fill(t->b.p + m->roff, m->len, seed, 0);
		rc_fill(t->img + m->roff, m->len, seed, 0);
		rc_sgl_expect(&lg, e->sm.img, m->len, seed);
	} else if (m->flags & IBV_SEND_INLINE) {
		/* Inline data need not be registered memory: the heap. */
		p->inl = malloc(lg.end + 1);
		ASSERT_NE(NULL, p->inl);
		rc_sgl_fill(&lg, p->inl, seed);
	} else {
		rc_sgl_fill(&lg, e->sm.b.p, seed);
		rc_sgl_fill(&lg, e->sm.img, seed);
	}
	if (m->op == IBV_WR_RDMA_WRITE || m->op == IBV_WR_RDMA_WRITE_WITH_IMM) {
		ASSERT_LE(m->roff + m->len, t->b.size);
		rc_fill(t->img + m->roff, m->len, seed, 0);
	}
	rc_sgl_to_ibv(&lg, p->sge, p->inl ? p->inl : e->sm.b.p,
		      p->inl ? 0 : e->sm.b.mr->lkey);
	p->wr.sg_list = lg.n ? p->sge : NULL;
	p->wr.num_sge = lg.n;
	if (!is_send(m->op)) {
		p->wr.wr.rdma.remote_addr = (uintptr_t)t->b.p + m->roff;
		p->wr.wr.rdma.rkey = t->b.mr->rkey;
	}
}

/* ibv_post_send(), or the ibv_wr_* API on an initiator made for it. */
static int xrc_post(struct xrc_conn *c, struct ibv_send_wr *wr)
{
	struct ibv_send_wr *bad = NULL;

	if (c->inix)
		return rc_post_wr_list(c->inix, wr, XRC_SRQN_LAST);
	return ibv_post_send(c->ini, wr, &bad);
}

/*
 * The completions of @m, sent by @c: the initiator's, and for a message
 * that takes a receive WQE the receive completion in the named SRQ's CQ,
 * from the WQE it had to take, reported by @c's target QP.
 */
static void xrc_complete(struct __test_metadata *_metadata, struct xrc_env *e,
			 struct xrc_conn *c, const struct xrc_msg *m,
			 struct xrc_pending *p)
{
	char what[96];

	snprintf(what, sizeof(what), "%s of %zu bytes to SRQ %#x",
		 op_str(m->op), m->len, p->wr.qp_type.xrc.remote_srqn);
	free(p->inl);
	p->inl = NULL;
	rc_expect_wc(_metadata, c->scq, &(struct rc_wc_exp){
		.wr_id = m->wr_id, .status = IBV_WC_SUCCESS,
		.opcode = wc_op(m->op), .qp_num = c->ini->qp_num,
	}, what);
	if (!p->has_recv)
		return;
	rc_expect_wc(_metadata, m->s->cq, &(struct rc_wc_exp){
		.wr_id = p->wqe, .status = IBV_WC_SUCCESS,
		.opcode = is_send(m->op) ? IBV_WC_RECV :
			  IBV_WC_RECV_RDMA_WITH_IMM,
		.recv = 1, .byte_len = m->len,
		.imm = rc_op_has_imm(m->op), .imm_data = htobe32(m->imm),
		.qp_num = c->tgt_qpn,
	}, what);
	m->s->done++;
}

/*
 * Every byte of the memory involved is what the images say, and no SRQ's
 * CQ holds a completion nobody expected.  All completions expected are in
 * by now (a receive completion comes before the initiator's), so one
 * non-blocking poll finds a stray one.
 */
static void xrc_check(struct __test_metadata *_metadata, struct xrc_env *e,
		      const char *what)
{
	struct ibv_wc wc;
	char w[128];
	int i;

	EXPECT_SAME_BYTES(e->sm.b.p, e->sm.img, e->sm.b.size, what);
	for (i = 0; i < 2; i++)
		if (e->tm[i].b.p)
			EXPECT_SAME_BYTES(e->tm[i].b.p, e->tm[i].img,
					  e->tm[i].b.size, what);
	for (i = 0; i < e->nsrq; i++) {
		snprintf(w, sizeof(w), "%s: SRQ %d's buffers", what, i);
		EXPECT_SAME_BYTES(e->s[i].rb.p, e->s[i].img, e->s[i].rb.size,
				  w);
		memset(&wc, 0, sizeof(wc));
		EXPECT_EQ(0, ibv_poll_cq(e->s[i].cq, 1, &wc)) {
			TH_LOG("%s: SRQ %d's CQ has a completion: wr_id %"
			       PRIu64 " status %s qp_num %#x", what, i,
			       wc.wr_id, ibv_wc_status_str(wc.status),
			       wc.qp_num);
		}
	}
}

/* One message: posted, completed, every byte checked. */
static void xrc_msg(struct __test_metadata *_metadata, struct xrc_env *e,
		    struct xrc_conn *c, const struct xrc_msg *m)
{
	struct xrc_pending p;
	char what[96];
	int ret;

	xrc_prepare(_metadata, e, m, &p);
	ret = xrc_post(c, &p.wr);
	ASSERT_EQ(0, ret) {
		TH_LOG("%s: post: %s", op_str(m->op), strerror(ret));
		free(p.inl);
	}
	/* Inline data was copied by the post: scribbling on it is harmless. */
	if (p.inl)
		memset(p.inl, 0xee, m->len);
	xrc_complete(_metadata, e, c, m, &p);
	snprintf(what, sizeof(what), "%s of %zu bytes", op_str(m->op), m->len);
	xrc_check(_metadata, e, what);
}

/* Messages @m[0 .. n - 1] of @c posted in one go, then completed in order. */
static void xrc_batch(struct __test_metadata *_metadata, struct xrc_env *e,
		      struct xrc_conn *c, const struct xrc_msg *m, int n,
		      const char *what)
{
	struct xrc_pending *p = calloc(n, sizeof(*p));
	int i, ret;

	ASSERT_NE(NULL, p);
	for (i = 0; i < n; i++) {
		xrc_prepare(_metadata, e, &m[i], &p[i]);
		if (i)
			p[i - 1].wr.next = &p[i].wr;
	}
	ret = xrc_post(c, &p[0].wr);
	ASSERT_EQ(0, ret) {
		TH_LOG("%s: post of %d: %s", what, n, strerror(ret));
	}
	for (i = 0; i < n; i++)
		xrc_complete(_metadata, e, c, &m[i], &p[i]);
	xrc_check(_metadata, e, what);
	free(p);
}

/* A SEND of @len bytes from the start of the initiator memory (no data check). */
static void send_wr(struct xrc_env *e, struct ibv_send_wr *wr,
		    struct ibv_sge *sge, uint64_t wr_id,
		    enum ibv_wr_opcode op, uint32_t srqn, uint32_t len)
{
	sge->addr = (uintptr_t)e->sm.b.p;
	sge->length = len;
	sge->lkey = e->sm.b.mr->lkey;
	memset(wr, 0, sizeof(*wr));
	wr->wr_id = wr_id;
	wr->sg_list = sge;
	wr->num_sge = 1;
	wr->opcode = op;
	wr->send_flags = IBV_SEND_SIGNALED;
	wr->qp_type.xrc.remote_srqn = srqn;
}

/* An RDMA WRITE/READ or atomic of the initiator memory to @t + @roff. */
static void rdma_wr(struct xrc_env *e, struct ibv_send_wr *wr,
		    struct ibv_sge *sge, uint64_t wr_id,
		    enum ibv_wr_opcode op, uint32_t srqn, struct xrc_mem *t,
		    size_t roff, uint32_t len)
{
	send_wr(e, wr, sge, wr_id, op, srqn, is_atomic(op) ? 8 : len);
	if (is_atomic(op)) {
		wr->wr.atomic.remote_addr = (uintptr_t)t->b.p + roff;
		wr->wr.atomic.rkey = t->b.mr->rkey;
		wr->wr.atomic.compare_add = 1;
	} else {
		wr->wr.rdma.remote_addr = (uintptr_t)t->b.p + roff;
		wr->wr.rdma.rkey = t->b.mr->rkey;
	}
}

/*
 * @wr (built with send_wr/rdma_wr) fails with @status at the initiator of
 * @c: a SEND chained behind it (wr_id 2, the same SRQ) is flushed, and the
 * initiator is in the error state.
 */
static void xrc_expect_fail(struct __test_metadata *_metadata,
			    struct xrc_env *e, struct xrc_conn *c,
			    struct ibv_send_wr *wr, enum ibv_wc_status status,
			    const char *what)
{
	struct ibv_send_wr next;
	struct ibv_sge sge;
	int ret;

	send_wr(e, &next, &sge, 0x2, IBV_WR_SEND,
		wr->qp_type.xrc.remote_srqn, 16);
	wr->next = &next;
	ret = xrc_post(c, wr);
	wr->next = NULL;
	ASSERT_EQ(0, ret) {
		TH_LOG("%s: post: %s", what, strerror(ret));
	}
	rc_expect_wc(_metadata, c->scq, &(struct rc_wc_exp){
		.wr_id = wr->wr_id, .status = status,
		.qp_num = c->ini->qp_num,
	}, what);
	rc_expect_wc(_metadata, c->scq, &(struct rc_wc_exp){
		.wr_id = 0x2, .status = IBV_WC_WR_FLUSH_ERR,
		.qp_num = c->ini->qp_num,
	}, "the WR behind the failed one");
	EXPECT_EQ(IBV_QPS_ERR, qp_state(c->ini));
}

/*
 * @c's target QP went to the error state and said so with an affiliated
 * asynchronous event of @type (the responder's error class: an invalid
 * request, a remote access error).
 */
static void xrc_expect_tgt_error(struct __test_metadata *_metadata,
				 struct xrc_env *e, struct xrc_conn *c,
				 enum ibv_event_type type, const char *what)
{
	struct ibv_async_event ev;
	int got;

	EXPECT_EQ(IBV_QPS_ERR, qp_state(c->tgt)) {
		TH_LOG("%s: the target QP is not in the error state", what);
	}
	got = rc_wait_async(_metadata, e->db->ctx, type, &ev,
			    RC_TIMEOUT_MS * rc_cfg.slow);
	EXPECT_TRUE(got) {
		TH_LOG("%s: no %s for the target QP", what,
		       ibv_event_type_str(type));
	}
	if (got)
		EXPECT_EQ(c->tgt, ev.element.qp);
}

/* ---- the fixture ----------------------------------------------------------- */

FIXTURE(xrc) {
	struct xrc_env e;
};

RC_ENDS_VARIANTS(xrc);

FIXTURE_SETUP(xrc)
{
	xrc_env_open(_metadata, &self->e, rc_cfg.name[0], rc_cfg.gid_idx[0],
		     rc_cfg.name[1], rc_cfg.gid_idx[1], variant->two_devices);
}

FIXTURE_TEARDOWN(xrc)
{
	xrc_env_close(_metadata, &self->e);
}

/* ---- objects ----------------------------------------------------------------- */

/*
 * The device announces XRC; domains: of no file, of a file (O_CREAT to
 * make one, found again without, EAGAIN for a file with none, EINVAL for
 * O_EXCL on one that exists), closed; XRC SRQs: numbers, query, the limit;
 * an initiator has no receive queue; a target QP's attributes.
 */
TEST_F(xrc, objects)
{
	struct xrc_env *e = &self->e;
	struct ibv_xrcd *x1, *x2, *x3;
	struct ibv_qp_init_attr qia;
	struct ibv_srq_attr sa;
	struct ibv_qp_attr qa;
	struct xrc_srq *s0, *s1;
	struct xrc_conn *c;
	char path[] = "/tmp/xrc_test.XXXXXX";
	int fd;

	EXPECT_TRUE(e->da->attr.device_cap_flags & IBV_DEVICE_XRC) {
		TH_LOG("%s does not announce IBV_DEVICE_XRC",
		       ibv_get_device_name(e->da->ctx->device));
	}
	EXPECT_TRUE(e->db->attr.device_cap_flags & IBV_DEVICE_XRC);

	/* A domain of a file. */
	fd = mkstemp(path);
	ASSERT_LE(0, fd);
	x1 = xrc_open_xrcd(e->db->ctx, fd, 0);
	EXPECT_EQ(NULL, x1);
	EXPECT_EQ(EAGAIN, errno) {
		TH_LOG("a file without a domain, no O_CREAT: %s",
		       strerror(errno));
	}
	if (x1)
		ibv_close_xrcd(x1);
	x1 = xrc_open_xrcd(e->db->ctx, fd, O_CREAT);
	ASSERT_NE(NULL, x1) {
		TH_LOG("O_CREAT: %s", strerror(errno));
	}
	x2 = xrc_open_xrcd(e->db->ctx, fd, 0);
	EXPECT_NE(NULL, x2) {
		TH_LOG("the file's domain again: %s", strerror(errno));
	}
	x3 = xrc_open_xrcd(e->db->ctx, fd, O_CREAT | O_EXCL);
	EXPECT_EQ(NULL, x3);
	EXPECT_EQ(EINVAL, errno);
	if (x3)
		ibv_close_xrcd(x3);
	if (x2)
		EXPECT_EQ(0, ibv_close_xrcd(x2));
	EXPECT_EQ(0, ibv_close_xrcd(x1));
	close(fd);
	unlink(path);

	/* SRQs. */
	s0 = xrc_srq_create(_metadata, e, e->xrcd, e->db->pd, 16, 256);
	s1 = xrc_srq_create(_metadata, e, e->xrcd, e->db->pd, 16, 256);
	memset(&sa, 0xff, sizeof(sa));
	ASSERT_EQ(0, ibv_query_srq(s0->srq, &sa));
	EXPECT_LE(16, sa.max_wr);
	EXPECT_LE(2, sa.max_sge);
	EXPECT_EQ(0, sa.srq_limit);
	memset(&sa, 0, sizeof(sa));
	sa.srq_limit = 5;
	ASSERT_EQ(0, ibv_modify_srq(s1->srq, &sa, IBV_SRQ_LIMIT));
	memset(&sa, 0, sizeof(sa));
	ASSERT_EQ(0, ibv_query_srq(s1->srq, &sa));
	EXPECT_EQ(5, sa.srq_limit);
	xrc_srq_post(_metadata, s0, 16);

	/* A pair, not connected: both in RESET. */
	c = xrc_conn_create(_metadata, e, e->xrcd, 0);
	EXPECT_EQ(IBV_QPS_RESET, qp_state(c->ini));
	EXPECT_EQ(IBV_QPS_RESET, qp_state(c->tgt));
	memset(&qia, 0, sizeof(qia));
	ASSERT_EQ(0, ibv_query_qp(c->ini, &qa, IBV_QP_STATE | IBV_QP_CAP,
				  &qia));
	EXPECT_EQ(0, qa.cap.max_recv_wr);
	EXPECT_EQ(IBV_QPT_XRC_SEND, qia.qp_type);
	xrc_connect(_metadata, e, c, 1);
	memset(&qa, 0, sizeof(qa));
	ASSERT_EQ(0, ibv_query_qp(c->tgt, &qa, IBV_QP_STATE |
				  IBV_QP_ACCESS_FLAGS | IBV_QP_DEST_QPN |
				  IBV_QP_RQ_PSN | IBV_QP_PATH_MTU, &qia));
	EXPECT_EQ(IBV_QPS_RTS, qa.qp_state);
	EXPECT_EQ(c->ini->qp_num, qa.dest_qp_num);
	EXPECT_EQ(c->ini_psn, qa.rq_psn);
	EXPECT_EQ(e->mtu_enum, qa.path_mtu);
	EXPECT_EQ(XRC_TGT_ACCESS, qa.qp_access_flags & XRC_TGT_ACCESS);
	/* Nothing was sent: nothing taken from the SRQ. */
	xrc_check(_metadata, e, "objects");
}

/*
 * A target QP made as librdmacm makes one for an XRC connection request
 * (rdma_create_qp_ex(): IBV_QP_INIT_ATTR_PD | IBV_QP_INIT_ATTR_XRCD, its
 * device's PD, a receive CQ, receive capabilities): created, and its
 * ibv_qp keeps the PD given, as libibverbs records it (mlx5 leaves it),
 * for librdmacm takes from there the PD of the XRC SRQ it makes next
 * (rdma_xserver: rdma_create_srq(id, NULL, ...), id->pd = qp->pd).  It
 * works as any target QP.
 */
TEST_F(xrc, target_as_librdmacm)
{
	struct xrc_env *e = &self->e;
	struct ibv_qp_init_attr_ex ia;
	struct xrc_srq *s;
	struct xrc_conn *c;
	struct ibv_cq *cq;

	s = xrc_srq_create(_metadata, e, e->xrcd, e->db->pd, 8, 256);
	c = xrc_conn_create(_metadata, e, e->xrcd, 0);
	/* The target made by xrc_conn_create() goes for librdmacm's. */
	ASSERT_EQ(0, ibv_destroy_qp(c->tgt));
	c->tgt = NULL;
	cq = ibv_create_cq(e->db->ctx, 4, NULL, NULL, 0);
	ASSERT_NE(NULL, cq);
	memset(&ia, 0, sizeof(ia));
	ia.qp_type = IBV_QPT_XRC_RECV;
	ia.comp_mask = IBV_QP_INIT_ATTR_PD | IBV_QP_INIT_ATTR_XRCD;
	ia.pd = e->db->pd;
	ia.xrcd = e->xrcd;
	ia.recv_cq = cq;
	ia.cap.max_recv_wr = 1;
	ia.cap.max_recv_sge = 1;
	c->tgt = ibv_create_qp_ex(e->db->ctx, &ia);
	ASSERT_NE(NULL, c->tgt) {
		TH_LOG("a target QP as librdmacm makes it: %s",
		       strerror(errno));
	}
	c->tgt_qpn = c->tgt->qp_num;
	EXPECT_EQ(IBV_QPT_XRC_RECV, c->tgt->qp_type);
	EXPECT_EQ(e->db->pd, c->tgt->pd) {
		TH_LOG("the target QP's ibv_qp has PD %p, not the %p given "
		       "(librdmacm's rdma_create_srq() would use it)",
		       (void *)c->tgt->pd, (void *)e->db->pd);
	}
	xrc_connect(_metadata, e, c, 1);
	xrc_msg(_metadata, e, c, &(struct xrc_msg){
		.op = IBV_WR_SEND, .s = s, .len = 200, .seed = 55,
		.wr_id = 0x550,
	});
	xrc_msg(_metadata, e, c, &(struct xrc_msg){
		.op = IBV_WR_RDMA_WRITE, .s = s, .len = 300, .roff = 77,
		.seed = 56, .wr_id = 0x551,
	});
	EXPECT_EQ(0, ibv_destroy_qp(c->tgt));
	c->tgt = NULL;
	EXPECT_EQ(0, ibv_destroy_cq(cq));
}

/* ---- the data path ------------------------------------------------------------ */

/*
 * SEND and SEND with immediate into an SRQ named by its number: sizes
 * around the MTU (0 .. MTU + 1), gathered from 1 to 3 SGEs, inline data;
 * each lands whole in the SRQ's next WQE, its completion in that SRQ's CQ
 * with qp_num = the target QP.
 */
TEST_F(xrc, send)
{
	struct xrc_env *e = &self->e;
	struct xrc_srq *s;
	struct xrc_conn *c;
	size_t sizes[] = { 0, 1, 5, 0, 0, 0, 200 };
	unsigned int i;

	s = xrc_srq_create(_metadata, e, e->xrcd, e->db->pd, 32,
			   2 * e->mtu);
	c = xrc_conn_create(_metadata, e, e->xrcd, XRC_CONNECT);
	sizes[3] = e->mtu - 1;
	sizes[4] = e->mtu;
	sizes[5] = e->mtu + 1;
	xrc_srq_post(_metadata, s, 4);
	for (i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++)
		xrc_msg(_metadata, e, c, &(struct xrc_msg){
			.op = i & 1 ? IBV_WR_SEND_WITH_IMM : IBV_WR_SEND,
			.s = s, .len = sizes[i], .lsge = 1 + i % 3,
			.loff = 3 + i, .imm = 0x1234500 + i, .seed = 10 + i,
			.wr_id = 0x100 + i,
		});
	/* Inline, from two buffers. */
	xrc_msg(_metadata, e, c, &(struct xrc_msg){
		.op = IBV_WR_SEND, .s = s, .len = 64, .lsge = 2, .loff = 9,
		.flags = IBV_SEND_INLINE, .seed = 30, .wr_id = 0x130,
	});
	xrc_msg(_metadata, e, c, &(struct xrc_msg){
		.op = IBV_WR_SEND_WITH_IMM, .s = s, .len = 17, .loff = 1,
		.flags = IBV_SEND_INLINE, .imm = 0xfeedf00d, .seed = 31,
		.wr_id = 0x131,
	});
	EXPECT_EQ(IBV_QPS_RTS, qp_state(c->ini));
	EXPECT_EQ(IBV_QPS_RTS, qp_state(c->tgt));
}

/*
 * Two SRQs with a CQ each behind one target QP: 16 messages alternating
 * between them, posted at once, each in the SRQ it names and that SRQ's
 * CQ, in posting order; then a second target QP in front of the same two
 * SRQs, each completion naming the target QP it came through.
 */
TEST_F_TIMEOUT(xrc, two_srqs, 120)
{
	struct xrc_env *e = &self->e;
	struct xrc_msg m[16];
	struct xrc_srq *a, *b;
	struct xrc_conn *c0, *c1;
	int i;

	a = xrc_srq_create(_metadata, e, e->xrcd, e->db->pd, 32,
			   3 * e->mtu + 128);
	b = xrc_srq_create(_metadata, e, e->xrcd, e->db->pd, 32,
			   3 * e->mtu + 128);
	c0 = xrc_conn_create(_metadata, e, e->xrcd, XRC_CONNECT);
	c1 = xrc_conn_create(_metadata, e, e->xrcd, XRC_CONNECT);
	xrc_srq_post(_metadata, a, 8);
	xrc_srq_post(_metadata, b, 8);

	memset(m, 0, sizeof(m));
	for (i = 0; i < 16; i++) {
		m[i].op = i % 3 ? IBV_WR_SEND : IBV_WR_SEND_WITH_IMM;
		m[i].s = i & 1 ? b : a;
		m[i].len = i == 5 ? 0 : 1 + (i * 977) % (3 * e->mtu + 123);
		m[i].lsge = 1 + i % 2;
		m[i].loff = 8 + i * (3 * e->mtu + 256);
		m[i].imm = 0xab000000 | i;
		m[i].seed = 100 + i;
		m[i].wr_id = 0x200 + i;
	}
	xrc_batch(_metadata, e, c0, m, 16, "16 alternating between two SRQs");
	EXPECT_EQ(8, a->done);
	EXPECT_EQ(8, b->done);

	/* The other target QP, into the same SRQs. */
	for (i = 0; i < 6; i++) {
		m[i].s = i & 1 ? a : b;
		m[i].seed = 200 + i;
		m[i].wr_id = 0x300 + i;
	}
	xrc_batch(_metadata, e, c1, m, 6, "a second target QP, same SRQs");
	/* And the first once more: both target QPs serve both SRQs. */
	xrc_batch(_metadata, e, c0, m + 6, 2, "the first target QP again");
	EXPECT_EQ(IBV_QPS_RTS, qp_state(c0->tgt));
	EXPECT_EQ(IBV_QPS_RTS, qp_state(c1->tgt));
}

/*
 * RDMA WRITE (gathered, inline), WRITE with immediate (which takes a WQE
 * of the SRQ named, its buffers untouched), READ (scattered), CAS that
 * swaps and one that does not, FETCH_AND_ADD across the 2^64 wrap: every
 * byte of both memories, the values returned.
 */
TEST_F_TIMEOUT(xrc, rdma_atomic, 90)
{
	struct xrc_env *e = &self->e;
	struct xrc_srq *s;
	struct xrc_conn *c;
	uint64_t v;

	ASSERT_NE(IBV_ATOMIC_NONE, e->da->attr.atomic_cap);
	s = xrc_srq_create(_metadata, e, e->xrcd, e->db->pd, 8, 256);
	c = xrc_conn_create(_metadata, e, e->xrcd, XRC_CONNECT);

	xrc_msg(_metadata, e, c, &(struct xrc_msg){
		.op = IBV_WR_RDMA_WRITE, .s = s, .len = 5000, .lsge = 3,
		.loff = 5, .roff = 11, .seed = 40, .wr_id = 0x400,
	});
	xrc_msg(_metadata, e, c, &(struct xrc_msg){
		.op = IBV_WR_RDMA_WRITE, .s = s, .len = 60, .lsge = 2,
		.loff = 7, .roff = 9001, .flags = IBV_SEND_INLINE, .seed = 41,
		.wr_id = 0x401,
	});
	xrc_msg(_metadata, e, c, &(struct xrc_msg){
		.op = IBV_WR_RDMA_WRITE_WITH_IMM, .s = s, .len = 333,
		.loff = 3, .roff = 20001, .imm = 0x600dd00d, .seed = 42,
		.wr_id = 0x402,
	});
	EXPECT_EQ(1, s->done);
	xrc_msg(_metadata, e, c, &(struct xrc_msg){
		.op = IBV_WR_RDMA_READ, .s = s, .len = 7000, .lsge = 3,
		.loff = 30001, .roff = 40003, .seed = 43, .wr_id = 0x403,
	});
	xrc_msg(_metadata, e, c, &(struct xrc_msg){
		.op = IBV_WR_RDMA_READ, .s = s, .len = 1, .loff = 50001,
		.roff = 60001, .seed = 44, .wr_id = 0x404,
	});

	/* Atomics on words whose values the test set. */
	wr64(e->tm[0].b.p + 4096, 0x1111222233334444ULL);
	wr64(e->tm[0].img + 4096, 0x1111222233334444ULL);
	xrc_msg(_metadata, e, c, &(struct xrc_msg){
		.op = IBV_WR_ATOMIC_CMP_AND_SWP, .s = s, .loff = 64,
		.roff = 4096, .compare_add = 0x1111222233334444ULL,
		.swap = 0x5555666677778888ULL, .wr_id = 0x405,
	});
	EXPECT_EQ(0x5555666677778888ULL, rd64(e->tm[0].b.p + 4096));
	xrc_msg(_metadata, e, c, &(struct xrc_msg){
		.op = IBV_WR_ATOMIC_CMP_AND_SWP, .s = s, .loff = 72,
		.roff = 4096, .compare_add = 0x1111222233334444ULL,
		.swap = 1, .wr_id = 0x406,
	});
	EXPECT_EQ(0x5555666677778888ULL, rd64(e->sm.b.p + 72));
	v = 0xfffffffffffffffeULL;
	wr64(e->tm[0].b.p + 4104, v);
	wr64(e->tm[0].img + 4104, v);
	xrc_msg(_metadata, e, c, &(struct xrc_msg){
		.op = IBV_WR_ATOMIC_FETCH_AND_ADD, .s = s, .loff = 80,
		.roff = 4104, .compare_add = 5, .wr_id = 0x407,
	});
	EXPECT_EQ(3, rd64(e->tm[0].b.p + 4104));
	EXPECT_EQ(v, rd64(e->sm.b.p + 80));
	/* Only WRITE with immediate took a WQE. */
	EXPECT_EQ(1, s->done);
	EXPECT_EQ(IBV_QPS_RTS, qp_state(c->tgt));
}

/*
 * Messages of many packets, the initiator's PSNs crossing the 2^24 wrap:
 * SEND of 64 KiB + 5 and with immediate of 3 MTUs + 1, RDMA WRITE of
 * 1 MiB + 3 and with immediate of 2 MTUs + 5, READ of 1 MiB + 7; then one
 * more of each after them.
 */
TEST_F_TIMEOUT(xrc, multi_packet, 240)
{
	struct xrc_env *e = &self->e;
	struct xrc_srq *s;
	struct xrc_conn *c;
	int k;

	s = xrc_srq_create(_metadata, e, e->xrcd, e->db->pd, 8,
			   65536 + 64);
	c = xrc_conn_create(_metadata, e, e->xrcd, XRC_CONNECT);
	for (k = 0; k < 2; k++) {
		xrc_msg(_metadata, e, c, &(struct xrc_msg){
			.op = IBV_WR_SEND, .s = s, .len = 65536 + 5 - k,
			.lsge = 3, .loff = 1, .seed = 50 + k,
			.wr_id = 0x500 + 8 * k,
		});
		xrc_msg(_metadata, e, c, &(struct xrc_msg){
			.op = IBV_WR_SEND_WITH_IMM, .s = s,
			.len = 3 * e->mtu + 1, .lsge = 2, .loff = 70001,
			.imm = 0x5e5e + k, .seed = 51 + k,
			.wr_id = 0x501 + 8 * k,
		});
		xrc_msg(_metadata, e, c, &(struct xrc_msg){
			.op = IBV_WR_RDMA_WRITE, .s = s,
			.len = (1 << 20) + 3, .lsge = 3, .loff = 100001,
			.roff = 7 + k, .seed = 52 + k, .wr_id = 0x502 + 8 * k,
		});
		xrc_msg(_metadata, e, c, &(struct xrc_msg){
			.op = IBV_WR_RDMA_WRITE_WITH_IMM, .s = s,
			.len = 2 * e->mtu + 5, .loff = 3, .roff = 1200001,
			.imm = 0x77 + k, .seed = 54 + k,
			.wr_id = 0x503 + 8 * k,
		});
		xrc_msg(_metadata, e, c, &(struct xrc_msg){
			.op = IBV_WR_RDMA_READ, .s = s, .len = (1 << 20) + 7,
			.lsge = 2, .loff = 5 + k, .roff = 900001, .seed = 56 + k,
			.wr_id = 0x504 + 8 * k,
		});
	}
	EXPECT_EQ(IBV_QPS_RTS, qp_state(c->tgt));
}

/* A target QP left in RTR takes SENDs, WRITEs, READs and atomics. */
TEST_F(xrc, target_rtr)
{
	struct xrc_env *e = &self->e;
	struct xrc_srq *s;
	struct xrc_conn *c;

	s = xrc_srq_create(_metadata, e, e->xrcd, e->db->pd, 8,
			   2 * e->mtu);
	c = xrc_conn_create(_metadata, e, e->xrcd,
			    XRC_CONNECT | XRC_TGT_RTR);
	xrc_msg(_metadata, e, c, &(struct xrc_msg){
		.op = IBV_WR_SEND, .s = s, .len = 2 * e->mtu - 1, .lsge = 2,
		.seed = 60, .wr_id = 0x600,
	});
	xrc_msg(_metadata, e, c, &(struct xrc_msg){
		.op = IBV_WR_RDMA_WRITE, .s = s, .len = 3000, .roff = 5,
		.seed = 61, .wr_id = 0x601,
	});
	xrc_msg(_metadata, e, c, &(struct xrc_msg){
		.op = IBV_WR_RDMA_READ, .s = s, .len = 3000, .loff = 8192,
		.roff = 9000, .seed = 62, .wr_id = 0x602,
	});
	xrc_msg(_metadata, e, c, &(struct xrc_msg){
		.op = IBV_WR_ATOMIC_FETCH_AND_ADD, .s = s, .loff = 16384,
		.roff = 16384, .compare_add = 9, .wr_id = 0x603,
	});
	EXPECT_EQ(IBV_QPS_RTR, qp_state(c->tgt));
}

/*
 * The SRQ limit of an XRC SRQ: armed at 3 with 4 WQEs, the event comes
 * when the second message leaves 2, once.
 */
TEST_F(xrc, srq_limit)
{
	struct xrc_env *e = &self->e;
	struct ibv_async_event ev;
	struct ibv_srq_attr sa;
	struct xrc_srq *s;
	struct xrc_conn *c;
	int i;

	s = xrc_srq_create(_metadata, e, e->xrcd, e->db->pd, 8, 256);
	c = xrc_conn_create(_metadata, e, e->xrcd, XRC_CONNECT);
	xrc_srq_post(_metadata, s, 4);
	memset(&sa, 0, sizeof(sa));
	sa.srq_limit = 3;
	ASSERT_EQ(0, ibv_modify_srq(s->srq, &sa, IBV_SRQ_LIMIT));
	xrc_msg(_metadata, e, c, &(struct xrc_msg){
		.op = IBV_WR_SEND, .s = s, .len = 100, .seed = 70,
		.wr_id = 0x700,
	});
	EXPECT_FALSE(rc_wait_async(_metadata, e->db->ctx,
				   IBV_EVENT_SRQ_LIMIT_REACHED, &ev,
				   RC_QUIET_MS * rc_cfg.slow)) {
		TH_LOG("limit event with 3 WQEs left, limit 3");
	}
	xrc_msg(_metadata, e, c, &(struct xrc_msg){
		.op = IBV_WR_SEND, .s = s, .len = 100, .seed = 71,
		.wr_id = 0x701,
	});
	ASSERT_TRUE(rc_wait_async(_metadata, e->db->ctx,
				  IBV_EVENT_SRQ_LIMIT_REACHED, &ev,
				  RC_TIMEOUT_MS * rc_cfg.slow)) {
		TH_LOG("no limit event with 2 WQEs left, limit 3");
	}
	EXPECT_EQ(s->srq, ev.element.srq);
	memset(&sa, 0xff, sizeof(sa));
	ASSERT_EQ(0, ibv_query_srq(s->srq, &sa));
	EXPECT_EQ(0, sa.srq_limit);
	for (i = 0; i < 2; i++)
		xrc_msg(_metadata, e, c, &(struct xrc_msg){
			.op = IBV_WR_SEND, .s = s, .len = 10, .seed = 72 + i,
			.wr_id = 0x702 + i,
		});
	EXPECT_FALSE(rc_wait_async(_metadata, e->db->ctx,
				   IBV_EVENT_SRQ_LIMIT_REACHED, &ev,
				   RC_QUIET_MS * rc_cfg.slow)) {
		TH_LOG("a second limit event without re-arming");
	}
}

/* ---- SRQs a message cannot go to ---------------------------------------------- */

/* An SRQ number that none of @e's SRQs has (nor 0). */
static uint32_t unused_srqn(const struct xrc_env *e, uint32_t from)
{
	uint32_t n = (from ^ 0x800000) & 0xffffff;
	int i, again;

	do {
		again = !n;
		for (i = 0; i < e->nsrq; i++)
			again |= e->s[i].num == n;
		if (again)
			n = (n + 0x10001) & 0xffffff;
	} while (again);
	return n;
}

/*
 * A SEND naming SRQ number 0 (no SRQ has it), a WRITE and a READ naming a
 * number no SRQ has: Invalid Request NAK, the initiator's WQE completes
 * with IBV_WC_REM_INV_REQ_ERR, the target QP goes to the error state
 * (IBV_EVENT_QP_REQ_ERR); nothing is taken from the SRQ or written; a new
 * pair's SEND then takes the SRQ's first WQE.
 */
TEST_F_TIMEOUT(xrc, unknown_srqn, 90)
{
	struct xrc_env *e = &self->e;
	struct ibv_send_wr wr;
	struct ibv_sge sge;
	struct xrc_srq *s;
	struct xrc_conn *c;
	uint32_t n;

	s = xrc_srq_create(_metadata, e, e->xrcd, e->db->pd, 8, 256);
	xrc_srq_post(_metadata, s, 2);
	n = unused_srqn(e, s->num);

	c = xrc_conn_create(_metadata, e, e->xrcd, XRC_CONNECT);
	send_wr(e, &wr, &sge, 0x800, IBV_WR_SEND, 0, 100);
	xrc_expect_fail(_metadata, e, c, &wr, IBV_WC_REM_INV_REQ_ERR,
			"SEND to SRQ number 0");
	xrc_expect_tgt_error(_metadata, e, c, IBV_EVENT_QP_REQ_ERR,
			     "SEND to SRQ number 0");
	xrc_check(_metadata, e, "SEND to SRQ number 0");

	c = xrc_conn_create(_metadata, e, e->xrcd, XRC_CONNECT);
	rdma_wr(e, &wr, &sge, 0x801, IBV_WR_RDMA_WRITE, n, &e->tm[0], 64,
		3000);
	xrc_expect_fail(_metadata, e, c, &wr, IBV_WC_REM_INV_REQ_ERR,
			"WRITE naming an SRQ nobody has");
	xrc_expect_tgt_error(_metadata, e, c, IBV_EVENT_QP_REQ_ERR,
			     "WRITE naming an SRQ nobody has");
	xrc_check(_metadata, e, "WRITE naming an SRQ nobody has");

	c = xrc_conn_create(_metadata, e, e->xrcd, XRC_CONNECT);
	rdma_wr(e, &wr, &sge, 0x802, IBV_WR_RDMA_READ, n, &e->tm[0], 64,
		3000);
	xrc_expect_fail(_metadata, e, c, &wr, IBV_WC_REM_INV_REQ_ERR,
			"READ naming an SRQ nobody has");
	xrc_expect_tgt_error(_metadata, e, c, IBV_EVENT_QP_REQ_ERR,
			     "READ naming an SRQ nobody has");
	xrc_check(_metadata, e, "READ naming an SRQ nobody has");

	c = xrc_conn_create(_metadata, e, e->xrcd, XRC_CONNECT);
	xrc_msg(_metadata, e, c, &(struct xrc_msg){
		.op = IBV_WR_SEND, .s = s, .len = 200, .seed = 80,
		.wr_id = 0x803,
	});
	EXPECT_EQ(1, s->done);
}

/*
 * An SRQ of another XRC domain (on the same device and PD): a SEND through
 * a target QP of the first domain naming it, and a WRITE through a target
 * of the second naming an SRQ of the first, are Invalid Requests; through
 * a target QP of its own domain the SRQ takes messages.
 */
TEST_F_TIMEOUT(xrc, other_xrcd, 90)
{
	struct xrc_env *e = &self->e;
	struct ibv_send_wr wr;
	struct ibv_sge sge;
	struct xrc_srq *a, *x;
	struct xrc_conn *c;

	e->xrcd2 = xrc_open_xrcd(e->db->ctx, -1, O_CREAT);
	ASSERT_NE(NULL, e->xrcd2);
	a = xrc_srq_create(_metadata, e, e->xrcd, e->db->pd, 8, 512);
	x = xrc_srq_create(_metadata, e, e->xrcd2, e->db->pd, 8, 512);
	xrc_srq_post(_metadata, a, 2);
	xrc_srq_post(_metadata, x, 2);

	c = xrc_conn_create(_metadata, e, e->xrcd, XRC_CONNECT);
	send_wr(e, &wr, &sge, 0x900, IBV_WR_SEND, x->num, 100);
	xrc_expect_fail(_metadata, e, c, &wr, IBV_WC_REM_INV_REQ_ERR,
			"SEND to an SRQ of another domain");
	xrc_expect_tgt_error(_metadata, e, c, IBV_EVENT_QP_REQ_ERR,
			     "SEND to an SRQ of another domain");
	xrc_check(_metadata, e, "SEND to an SRQ of another domain");

	c = xrc_conn_create(_metadata, e, e->xrcd2, XRC_CONNECT);
	xrc_msg(_metadata, e, c, &(struct xrc_msg){
		.op = IBV_WR_SEND, .s = x, .len = 300, .seed = 90,
		.wr_id = 0x901,
	});
	rdma_wr(e, &wr, &sge, 0x902, IBV_WR_RDMA_WRITE, a->num, &e->tm[0], 64,
		100);
	xrc_expect_fail(_metadata, e, c, &wr, IBV_WC_REM_INV_REQ_ERR,
			"WRITE naming an SRQ of another domain");
	xrc_expect_tgt_error(_metadata, e, c, IBV_EVENT_QP_REQ_ERR,
			     "WRITE naming an SRQ of another domain");
	xrc_check(_metadata, e, "WRITE naming an SRQ of another domain");
	EXPECT_EQ(0, a->done);
}

/*
 * Memory keys are checked against the PD of the SRQ named: with SRQ P2 on
 * a second PD, a WRITE, READ and FETCH_AND_ADD to an MR of that PD naming
 * P2 succeed, and naming SRQ A (of the first PD) the same WRITE, a READ
 * and an atomic fail with IBV_WC_REM_ACCESS_ERR (the target QP in error,
 * IBV_EVENT_QP_ACCESS_ERR), no byte changed.  The first PD's MR through A
 * works.
 */
TEST_F_TIMEOUT(xrc, other_pd, 90)
{
	struct xrc_env *e = &self->e;
	struct ibv_send_wr wr;
	struct ibv_sge sge;
	struct xrc_srq *a, *p2;
	struct xrc_conn *c;

	xrc_pd2(_metadata, e);
	a = xrc_srq_create(_metadata, e, e->xrcd, e->db->pd, 8, 256);
	p2 = xrc_srq_create(_metadata, e, e->xrcd, e->pd2, 8, 256);
	xrc_srq_post(_metadata, a, 1);
	xrc_srq_post(_metadata, p2, 1);

	c = xrc_conn_create(_metadata, e, e->xrcd, XRC_CONNECT);
	xrc_msg(_metadata, e, c, &(struct xrc_msg){
		.op = IBV_WR_RDMA_WRITE, .s = p2, .tmem = 1, .len = 3000,
		.roff = 3, .seed = 100, .wr_id = 0xa00,
	});
	xrc_msg(_metadata, e, c, &(struct xrc_msg){
		.op = IBV_WR_RDMA_READ, .s = p2, .tmem = 1, .len = 3000,
		.loff = 4096, .roff = 8192, .seed = 101, .wr_id = 0xa01,
	});
	xrc_msg(_metadata, e, c, &(struct xrc_msg){
		.op = IBV_WR_ATOMIC_FETCH_AND_ADD, .s = p2, .tmem = 1,
		.loff = 16384, .roff = 16384, .compare_add = 3,
		.wr_id = 0xa02,
	});
	xrc_msg(_metadata, e, c, &(struct xrc_msg){
		.op = IBV_WR_RDMA_WRITE, .s = a, .tmem = 0, .len = 3000,
		.roff = 3, .seed = 102, .wr_id = 0xa03,
	});

	rdma_wr(e, &wr, &sge, 0xa04, IBV_WR_RDMA_WRITE, a->num, &e->tm[1],
		64, 3000);
	xrc_expect_fail(_metadata, e, c, &wr, IBV_WC_REM_ACCESS_ERR,
			"WRITE to pd2's MR naming an SRQ of the first PD");
	xrc_expect_tgt_error(_metadata, e, c, IBV_EVENT_QP_ACCESS_ERR,
			     "WRITE, rkey of another PD than the SRQ's");
	xrc_check(_metadata, e, "WRITE, rkey of another PD than the SRQ's");

	c = xrc_conn_create(_metadata, e, e->xrcd, XRC_CONNECT);
	rdma_wr(e, &wr, &sge, 0xa05, IBV_WR_RDMA_READ, p2->num, &e->tm[0],
		64, 3000);
	xrc_expect_fail(_metadata, e, c, &wr, IBV_WC_REM_ACCESS_ERR,
			"READ of the first PD's MR naming pd2's SRQ");
	xrc_expect_tgt_error(_metadata, e, c, IBV_EVENT_QP_ACCESS_ERR,
			     "READ, rkey of another PD than the SRQ's");
	xrc_check(_metadata, e, "READ, rkey of another PD than the SRQ's");

	c = xrc_conn_create(_metadata, e, e->xrcd, XRC_CONNECT);
	rdma_wr(e, &wr, &sge, 0xa06, IBV_WR_ATOMIC_FETCH_AND_ADD, a->num,
		&e->tm[1], 64, 8);
	xrc_expect_fail(_metadata, e, c, &wr, IBV_WC_REM_ACCESS_ERR,
			"FAA on pd2's MR naming an SRQ of the first PD");
	xrc_expect_tgt_error(_metadata, e, c, IBV_EVENT_QP_ACCESS_ERR,
			     "FAA, rkey of another PD than the SRQ's");
	xrc_check(_metadata, e, "FAA, rkey of another PD than the SRQ's");
	EXPECT_EQ(0, a->done);
	EXPECT_EQ(0, p2->done);
}

/*
 * A receive WQE is checked against its own SRQ's PD: a WQE of SRQ P2 (on a
 * second PD) with an lkey of the first PD fails the SEND into it (the
 * receive completes with IBV_WC_LOC_PROT_ERR in P2's CQ, the initiator
 * with IBV_WC_REM_OP_ERR, the target QP in error), no byte of the first
 * PD's buffer written; P2's next WQE serves a new pair.
 */
TEST_F(xrc, recv_other_pd)
{
	struct xrc_env *e = &self->e;
	struct ibv_send_wr wr;
	struct ibv_sge sge, rsge;
	struct xrc_srq *a, *p2;
	struct xrc_conn *c;

	xrc_pd2(_metadata, e);
	a = xrc_srq_create(_metadata, e, e->xrcd, e->db->pd, 8, 256);
	p2 = xrc_srq_create(_metadata, e, e->xrcd, e->pd2, 8, 256);

	/* P2's WQE 0 points into A's buffer, with A's (first PD's) lkey. */
	rsge.addr = (uintptr_t)a->rb.p + 5;
	rsge.length = 200;
	rsge.lkey = a->rb.mr->lkey;
	ASSERT_EQ(0, srq_post_sgl(p2->srq, 0, &rsge, 1));
	p2->posted = p2->assigned = 1;

	c = xrc_conn_create(_metadata, e, e->xrcd, XRC_CONNECT);
	send_wr(e, &wr, &sge, 0xb00, IBV_WR_SEND, p2->num, 100);
	xrc_expect_fail(_metadata, e, c, &wr, IBV_WC_REM_OP_ERR,
			"SEND into a WQE with a key of another PD");
	rc_expect_wc(_metadata, p2->cq, &(struct rc_wc_exp){
		.wr_id = 0, .status = IBV_WC_LOC_PROT_ERR,
		.qp_num = c->tgt_qpn,
	}, "the WQE with a key of another PD");
	p2->done = 1;
	EXPECT_EQ(IBV_QPS_ERR, qp_state(c->tgt));
	xrc_check(_metadata, e, "a WQE with a key of another PD");

	c = xrc_conn_create(_metadata, e, e->xrcd, XRC_CONNECT);
	xrc_msg(_metadata, e, c, &(struct xrc_msg){
		.op = IBV_WR_SEND, .s = p2, .len = 222, .seed = 110,
		.wr_id = 0xb01,
	});
}

/*
 * An SRQ number wider than the XRCETH's 24 bits, whose low 24 bits are
 * those of a real SRQ, completes with IBV_WC_LOC_QP_OP_ERR (nothing is
 * sent: the SRQ gets nothing); so does 0xffffffff; and, through the
 * ibv_wr_* API, a batch's second WR with such a number behind a good one.
 */
TEST_F(xrc, srqn_24_bits)
{
	struct xrc_env *e = &self->e;
	struct ibv_send_wr wr;
	struct ibv_sge sge;
	struct xrc_srq *s;
	struct xrc_conn *c;

	s = xrc_srq_create(_metadata, e, e->xrcd, e->db->pd, 8, 256);
	xrc_srq_post(_metadata, s, 2);

	c = xrc_conn_create(_metadata, e, e->xrcd, XRC_CONNECT);
	send_wr(e, &wr, &sge, 0xc00, IBV_WR_SEND, (1u << 24) | s->num, 100);
	xrc_expect_fail(_metadata, e, c, &wr, IBV_WC_LOC_QP_OP_ERR,
			"SEND naming SRQ 2^24 + a real one's");
	xrc_check(_metadata, e, "SRQ number 2^24 + a real one's");

	c = xrc_conn_create(_metadata, e, e->xrcd, XRC_CONNECT);
	rdma_wr(e, &wr, &sge, 0xc01, IBV_WR_RDMA_WRITE, 0xffffffff,
		&e->tm[0], 64, 100);
	xrc_expect_fail(_metadata, e, c, &wr, IBV_WC_LOC_QP_OP_ERR,
			"WRITE naming SRQ 0xffffffff");
	xrc_check(_metadata, e, "SRQ number 0xffffffff");

	c = xrc_conn_create(_metadata, e, e->xrcd, XRC_CONNECT | XRC_WR_API);
	xrc_msg(_metadata, e, c, &(struct xrc_msg){
		.op = IBV_WR_SEND, .s = s, .len = 10, .seed = 120,
		.wr_id = 0xc02,
	});
	send_wr(e, &wr, &sge, 0xc03, IBV_WR_SEND, (1u << 24) | s->num, 100);
	xrc_expect_fail(_metadata, e, c, &wr, IBV_WC_LOC_QP_OP_ERR,
			"ibv_wr_*: SRQ number 2^24 + a real one's");
	xrc_check(_metadata, e, "ibv_wr_*: SRQ number 2^24 + a real one's");
	EXPECT_EQ(1, s->done);
}

/*
 * Destroys an SRQ once @trigger messages have been posted, and copies its
 * receive buffers (@rb, @size bytes) to @snap as soon as that returned.
 */
struct srq_killer {
	struct ibv_srq *srq;
	int *posted;
	int trigger;
	int ret;
	const uint8_t *rb;
	uint8_t *snap;
	size_t size;
};

static void *srq_killer(void *arg)
{
	struct srq_killer *k = arg;

	while (__atomic_load_n(k->posted, __ATOMIC_ACQUIRE) < k->trigger)
		sched_yield();
	k->ret = ibv_destroy_srq(k->srq);
	memcpy(k->snap, k->rb, k->size);
	return NULL;
}

/*
 * 32 SENDs of 16 KiB into a new SRQ through a new pair, posted one by one
 * while another thread destroys the SRQ once @trigger of them have been
 * posted.  Whatever the race, each completes at the initiator in time:
 * those before the first failure with SUCCESS, and each of them with its
 * receive completion, in order, and its bytes in the SRQ's buffers; the
 * first failure IBV_WC_REM_INV_REQ_ERR, the rest flushed; no receive
 * completion for the others.  The WQE of the first failure may have been
 * being filled when the SRQ went ("the WQE being filled goes with it"):
 * its buffers' bytes are undefined, but nothing is written outside them,
 * into the WQEs no message took, or anywhere once ibv_destroy_srq()
 * returned.
 */
static void srq_destroyed_under_traffic(struct __test_metadata *_metadata,
					struct xrc_env *e, int trigger)
{
	struct srq_killer kl;
	struct xrc_msg m[32];
	struct xrc_pending p[32];
	struct ibv_send_wr wr;
	struct ibv_sge sge;
	struct ibv_wc wc;
	struct xrc_srq *t;
	struct xrc_conn *c;
	struct rc_sgl g;
	uint8_t *rimg;
	pthread_t th;
	int i, k, ret, posted = 0;

	t = xrc_srq_create(_metadata, e, e->xrcd, e->db->pd, 40, 16384);
	xrc_srq_post(_metadata, t, 40);
	rimg = malloc(t->rb.size);
	ASSERT_NE(NULL, rimg);
	memcpy(rimg, t->img, t->rb.size);
	c = xrc_conn_create(_metadata, e, e->xrcd, XRC_CONNECT);
	memset(m, 0, sizeof(m));
	for (i = 0; i < 32; i++) {
		m[i].op = IBV_WR_SEND;
		m[i].s = t;
		m[i].len = 16384 - i;
		m[i].loff = i * 16448;
		m[i].seed = 140 + i + 32 * trigger;
		m[i].wr_id = 0xd10 + i;
		xrc_prepare(_metadata, e, &m[i], &p[i]);
	}
	kl.srq = t->srq;
	kl.posted = &posted;
	kl.trigger = trigger;
	kl.ret = -1;
	kl.rb = t->rb.p;
	kl.size = t->rb.size;
	kl.snap = malloc(t->rb.size);
	ASSERT_NE(NULL, kl.snap);
	ASSERT_EQ(0, pthread_create(&th, NULL, srq_killer, &kl));
	for (i = 0, ret = 0; i < 32 && !ret; i++) {
		ret = xrc_post(c, &p[i].wr);
		__atomic_store_n(&posted, i + 1, __ATOMIC_RELEASE);
	}
	__atomic_store_n(&posted, 32, __ATOMIC_RELEASE);
	pthread_join(th, NULL);
	t->srq = NULL;
	ASSERT_EQ(0, ret) {
		TH_LOG("posting message %d: %s", i - 1, strerror(ret));
	}
	EXPECT_EQ(0, kl.ret) {
		TH_LOG("destroying an XRC SRQ under traffic: %s",
		       strerror(kl.ret));
	}

	for (i = 0, k = -1; i < 32; i++) {
		memset(&wc, 0, sizeof(wc));
		ASSERT_EQ(1, rc_poll(c->scq, &wc, 1, RC_TIMEOUT_MS)) {
			TH_LOG("message %d of 32: no completion", i);
		}
		EXPECT_EQ(m[i].wr_id, wc.wr_id);
		if (k < 0 && wc.status == IBV_WC_SUCCESS) {
			EXPECT_EQ(IBV_WC_SEND, wc.opcode);
			continue;
		}
		if (k < 0) {
			k = i;
			EXPECT_EQ(IBV_WC_REM_INV_REQ_ERR, wc.status) {
				TH_LOG("message %d, the first to fail: %s", i,
				       ibv_wc_status_str(wc.status));
			}
			continue;
		}
		EXPECT_EQ(IBV_WC_WR_FLUSH_ERR, wc.status) {
			TH_LOG("message %d, after the first failure: %s", i,
			       ibv_wc_status_str(wc.status));
		}
	}
	TH_LOG("SRQ destroyed after %d posted: %d of 32 messages landed",
	       trigger, k < 0 ? 32 : k);
	if (k < 0)
		k = 32;
	/* Those landed whole, in order, with their completions; no other. */
	memcpy(t->img, rimg, t->rb.size);
	free(rimg);
	for (i = 0; i < k; i++) {
		wqe_sgl(t, p[i].wqe, &g);
		rc_sgl_expect(&g, t->img, m[i].len, m[i].seed * 7 + 1);
		rc_expect_wc(_metadata, t->cq, &(struct rc_wc_exp){
			.wr_id = p[i].wqe, .status = IBV_WC_SUCCESS,
			.opcode = IBV_WC_RECV, .recv = 1,
			.byte_len = m[i].len, .qp_num = c->tgt_qpn,
		}, "a message before the SRQ went");
	}
	if (k < 32) {
		size_t at, n = 0;
		int j;

		wqe_sgl(t, p[k].wqe, &g);
		for (j = 0; j < g.n; j++)
			for (at = g.s[j].off; at < g.s[j].off + g.s[j].len;
			     at++) {
				n += t->img[at] != t->rb.p[at];
				t->img[at] = t->rb.p[at];
			}
		TH_LOG("the WQE of the first failure: %zu bytes written", n);
	}
	t->done = k;
	xrc_check(_metadata, e, "an SRQ destroyed under traffic");
	EXPECT_SAME_BYTES(t->rb.p, kl.snap, t->rb.size,
			  "written after ibv_destroy_srq() returned");
	free(kl.snap);
	if (k == 32) {
		/* All went before the destroy: one more must not. */
		send_wr(e, &wr, &sge, 0xd50, IBV_WR_SEND, t->num, 100);
		xrc_expect_fail(_metadata, e, c, &wr, IBV_WC_REM_INV_REQ_ERR,
				"SEND after the SRQ went");
	}
	EXPECT_EQ(IBV_QPS_ERR, qp_state(c->tgt));
}

/*
 * An SRQ destroyed while a target QP uses it (allowed): the WQEs left in
 * it go without completions; a SEND naming it afterwards is an Invalid
 * Request (the initiator's WQE IBV_WC_REM_INV_REQ_ERR, the target in
 * error).  Then under traffic, four times (srq_destroyed_under_traffic()).
 */
TEST_F_TIMEOUT(xrc, srq_destroyed, 120)
{
	struct xrc_env *e = &self->e;
	struct ibv_send_wr wr;
	struct ibv_sge sge;
	struct xrc_srq *a, *b;
	struct xrc_conn *c;
	uint32_t num;
	int i, r;

	a = xrc_srq_create(_metadata, e, e->xrcd, e->db->pd, 8, 256);
	b = xrc_srq_create(_metadata, e, e->xrcd, e->db->pd, 8, 256);
	xrc_srq_post(_metadata, a, 2);
	xrc_srq_post(_metadata, b, 4);
	c = xrc_conn_create(_metadata, e, e->xrcd, XRC_CONNECT);
	for (i = 0; i < 2; i++)
		xrc_msg(_metadata, e, c, &(struct xrc_msg){
			.op = IBV_WR_SEND, .s = b, .len = 100 + i,
			.seed = 130 + i, .wr_id = 0xd00 + i,
		});
	num = b->num;
	EXPECT_EQ(0, ibv_destroy_srq(b->srq)) {
		TH_LOG("destroying an XRC SRQ a target QP uses");
	}
	b->srq = NULL;
	EXPECT_CQ_EMPTY(b->cq, "the destroyed SRQ's WQEs");
	send_wr(e, &wr, &sge, 0xd02, IBV_WR_SEND, num, 100);
	xrc_expect_fail(_metadata, e, c, &wr, IBV_WC_REM_INV_REQ_ERR,
			"SEND to a destroyed SRQ");
	xrc_expect_tgt_error(_metadata, e, c, IBV_EVENT_QP_REQ_ERR,
			     "SEND to a destroyed SRQ");
	xrc_check(_metadata, e, "SEND to a destroyed SRQ");
	EXPECT_EQ(0, a->done);

	/* Under traffic: four rounds, the SRQ destroyed at another point. */
	for (r = 0; r < 4; r++)
		srq_destroyed_under_traffic(_metadata, e, 10 * r);
}

/*
 * Refused where they are posted, with EINVAL and the WR named: a send and
 * a receive on a target QP, a receive on an initiator; an XRC SRQ without
 * a CQ or without a domain.  The pair still works.
 */
TEST_F(xrc, bad_inputs)
{
	struct xrc_env *e = &self->e;
	struct ibv_recv_wr rwr, *rbad;
	struct ibv_srq_init_attr_ex sa;
	struct ibv_send_wr wr, wr2, *bad;
	struct ibv_sge sge, sge2, rsge;
	struct ibv_srq *srq;
	struct xrc_srq *s;
	struct xrc_conn *c;
	struct ibv_cq *cq;

	s = xrc_srq_create(_metadata, e, e->xrcd, e->db->pd, 8, 256);
	xrc_srq_post(_metadata, s, 2);
	c = xrc_conn_create(_metadata, e, e->xrcd, XRC_CONNECT);

	send_wr(e, &wr, &sge, 0xe00, IBV_WR_SEND, s->num, 10);
	send_wr(e, &wr2, &sge2, 0xe01, IBV_WR_SEND, s->num, 10);
	wr.next = &wr2;
	bad = NULL;
	EXPECT_EQ(EINVAL, ibv_post_send(c->tgt, &wr, &bad)) {
		TH_LOG("ibv_post_send on a target QP");
	}
	EXPECT_EQ(&wr, bad);
	wr.next = NULL;

	rsge.addr = (uintptr_t)e->tm[0].b.p;
	rsge.length = 100;
	rsge.lkey = e->tm[0].b.mr->lkey;
	memset(&rwr, 0, sizeof(rwr));
	rwr.wr_id = 0xe02;
	rwr.sg_list = &rsge;
	rwr.num_sge = 1;
	rbad = NULL;
	EXPECT_EQ(EINVAL, ibv_post_recv(c->tgt, &rwr, &rbad)) {
		TH_LOG("ibv_post_recv on a target QP");
	}
	EXPECT_EQ(&rwr, rbad);
	rsge.addr = (uintptr_t)e->sm.b.p;
	rsge.lkey = e->sm.b.mr->lkey;
	rbad = NULL;
	EXPECT_EQ(EINVAL, ibv_post_recv(c->ini, &rwr, &rbad)) {
		TH_LOG("ibv_post_recv on an initiator QP");
	}
	EXPECT_EQ(&rwr, rbad);

	cq = ibv_create_cq(e->db->ctx, 4, NULL, NULL, 0);
	ASSERT_NE(NULL, cq);
	memset(&sa, 0, sizeof(sa));
	sa.attr.max_wr = 4;
	sa.attr.max_sge = 1;
	sa.comp_mask = IBV_SRQ_INIT_ATTR_TYPE | IBV_SRQ_INIT_ATTR_PD |
		       IBV_SRQ_INIT_ATTR_XRCD;
	sa.srq_type = IBV_SRQT_XRC;
	sa.pd = e->db->pd;
	sa.xrcd = e->xrcd;
	errno = 0;
	srq = ibv_create_srq_ex(e->db->ctx, &sa);
	EXPECT_EQ(NULL, srq) {
		TH_LOG("an XRC SRQ without a CQ was created");
	}
	EXPECT_EQ(EINVAL, errno) {
		TH_LOG("an XRC SRQ without a CQ: %s", strerror(errno));
	}
	if (srq)
		ibv_destroy_srq(srq);
	memset(&sa, 0, sizeof(sa));
	sa.attr.max_wr = 4;
	sa.attr.max_sge = 1;
	sa.comp_mask = IBV_SRQ_INIT_ATTR_TYPE | IBV_SRQ_INIT_ATTR_PD |
		       IBV_SRQ_INIT_ATTR_CQ;
	sa.srq_type = IBV_SRQT_XRC;
	sa.pd = e->db->pd;
	sa.cq = cq;
	errno = 0;
	srq = ibv_create_srq_ex(e->db->ctx, &sa);
	EXPECT_EQ(NULL, srq) {
		TH_LOG("an XRC SRQ without a domain was created");
	}
	EXPECT_EQ(EINVAL, errno) {
		TH_LOG("an XRC SRQ without a domain: %s", strerror(errno));
	}
	if (srq)
		ibv_destroy_srq(srq);
	EXPECT_EQ(0, ibv_destroy_cq(cq));

	/* Nothing of it completed anywhere, and the pair works. */
	EXPECT_CQ_EMPTY(c->scq, "the refused posts");
	xrc_check(_metadata, e, "refused posts");
	xrc_msg(_metadata, e, c, &(struct xrc_msg){
		.op = IBV_WR_SEND, .s = s, .len = 150, .seed = 150,
		.wr_id = 0xe03,
	});
	EXPECT_EQ(IBV_QPS_RTS, qp_state(c->tgt));
}

/*
 * The ibv_wr_* API on an initiator created with
 * IBV_QP_INIT_ATTR_SEND_OPS_FLAGS: one batch of every opcode, each naming
 * its SRQ with ibv_wr_set_xrc_srqn() (one after its data setter), into two
 * SRQs; inline data; a batch aborted sends nothing.
 */
TEST_F_TIMEOUT(xrc, wr_api, 90)
{
	struct xrc_env *e = &self->e;
	struct xrc_msg m[9];
	struct xrc_srq *a, *b;
	struct xrc_conn *c;
	struct ibv_wc wc;

	a = xrc_srq_create(_metadata, e, e->xrcd, e->db->pd, 16,
			   2 * e->mtu);
	b = xrc_srq_create(_metadata, e, e->xrcd, e->db->pd, 16,
			   2 * e->mtu);
	c = xrc_conn_create(_metadata, e, e->xrcd, XRC_CONNECT | XRC_WR_API);
	wr64(e->tm[0].b.p + 8192, 77);
	wr64(e->tm[0].img + 8192, 77);

	memset(m, 0, sizeof(m));
	m[0] = (struct xrc_msg){ .op = IBV_WR_SEND, .s = a, .len = 300,
		.lsge = 2, .loff = 1, .seed = 160, .wr_id = 0xf00 };
	m[1] = (struct xrc_msg){ .op = IBV_WR_SEND_WITH_IMM, .s = b,
		.len = e->mtu + 7, .lsge = 3, .loff = 4001, .imm = 0xf1,
		.seed = 161, .wr_id = 0xf01 };
	m[2] = (struct xrc_msg){ .op = IBV_WR_RDMA_WRITE_WITH_IMM, .s = a,
		.len = 50, .loff = 12001, .roff = 100, .imm = 0xf2,
		.seed = 162, .wr_id = 0xf02 };
	m[3] = (struct xrc_msg){ .op = IBV_WR_RDMA_WRITE, .s = b, .len = 4000,
		.lsge = 2, .loff = 16001, .roff = 1001, .seed = 163,
		.wr_id = 0xf03 };
	m[4] = (struct xrc_msg){ .op = IBV_WR_RDMA_READ, .s = a, .len = 3000,
		.lsge = 2, .loff = 24001, .roff = 30001, .seed = 164,
		.wr_id = 0xf04 };
	m[5] = (struct xrc_msg){ .op = IBV_WR_ATOMIC_FETCH_AND_ADD, .s = b,
		.loff = 32768, .roff = 8192, .compare_add = 23,
		.wr_id = 0xf05 };
	m[6] = (struct xrc_msg){ .op = IBV_WR_ATOMIC_CMP_AND_SWP, .s = a,
		.loff = 32776, .roff = 8192, .compare_add = 100, .swap = 4,
		.wr_id = 0xf06 };
	m[7] = (struct xrc_msg){ .op = IBV_WR_SEND, .s = b, .len = 1000,
		.loff = 40001, .seed = 167, .wr_id = 0xf07 | XRC_SRQN_LAST };
	m[8] = (struct xrc_msg){ .op = IBV_WR_SEND, .s = a, .len = 48,
		.lsge = 2, .loff = 41001, .flags = IBV_SEND_INLINE,
		.seed = 168, .wr_id = 0xf08 };
	xrc_batch(_metadata, e, c, m, 9, "a batch of every opcode");
	EXPECT_EQ(4, rd64(e->tm[0].b.p + 8192));
	EXPECT_EQ(3, a->done);
	EXPECT_EQ(2, b->done);

	/* A batch aborted. */
	ibv_wr_start(c->inix);
	c->inix->wr_id = 0xf10;
	c->inix->wr_flags = IBV_SEND_SIGNALED;
	ibv_wr_send(c->inix);
	ibv_wr_set_xrc_srqn(c->inix, a->num);
	ibv_wr_set_sge(c->inix, e->sm.b.mr->lkey, (uintptr_t)e->sm.b.p, 8);
	ibv_wr_abort(c->inix);
	memset(&wc, 0, sizeof(wc));
	EXPECT_EQ(0, rc_poll(c->scq, &wc, 1, RC_QUIET_MS)) {
		TH_LOG("an aborted batch completed: wr_id %#" PRIx64,
		       wc.wr_id);
	}
	xrc_check(_metadata, e, "an aborted batch");

	/* And the QP carries on. */
	xrc_msg(_metadata, e, c, &(struct xrc_msg){
		.op = IBV_WR_SEND, .s = b, .len = 64, .seed = 169,
		.wr_id = 0xf11,
	});
}

/* ---- a domain shared with another process ------------------------------------ */

/* Read a line from @fd within @ms (times slow); 0, or -1 with nothing. */
static int read_line(int fd, char *buf, size_t n, int ms)
{
	double deadline = rc_now_ms() + (double)ms * rc_cfg.slow;
	struct pollfd pfd = { .fd = fd, .events = POLLIN };
	size_t got = 0;
	ssize_t r;
	int left;

	while (got + 1 < n) {
		left = deadline - rc_now_ms();
		if (left <= 0 || poll(&pfd, 1, left) != 1)
			return -1;
		r = read(fd, buf + got, 1);
		if (r <= 0)
			return -1;
		if (buf[got] == '\n')
			break;
		got++;
	}
	buf[got] = 0;
	return 0;
}

static void say(int fd, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

static void say(int fd, const char *fmt, ...)
{
	char buf[256];
	va_list ap;
	int n;

	va_start(ap, fmt);
	n = vsnprintf(buf, sizeof(buf) - 1, fmt, ap);
	va_end(ap);
	if (n < 0 || n >= (int)sizeof(buf) - 1)
		n = sizeof(buf) - 2;
	buf[n++] = '\n';
	if (write(fd, buf, n) != n)
		_exit(3);
}

#define SHARE_LEN0	3001
#define SHARE_LEN1	(2 * 4096 + 5)
#define SHARE_SLOT	(16 * 1024)

/*
 * The second process: its own context on device @dev, the domain of file
 * @path (O_CREAT), its own PD, CQ and XRC SRQ with two WQEs, the target QP
 * @tgt_qpn opened; then the two messages the first process sends it.  No
 * harness here (an ASSERT would jump into the parent's test): each step
 * reports to @out, "fail WHY" ends it.
 */
static int share_child(const char *dev, const char *path, uint32_t tgt_qpn,
		       uint32_t seed0, int in, int out)
{
	struct ibv_qp_open_attr oa;
	struct ibv_srq_init_attr_ex sa;
	struct ibv_recv_wr rwr, *rbad;
	struct ibv_qp_init_attr qia;
	struct ibv_context *ctx;
	struct ibv_xrcd *xrcd;
	struct ibv_qp_attr qa;
	struct ibv_sge sge;
	struct ibv_srq *srq;
	struct ibv_qp *qp, *bad_qp;
	struct ibv_pd *pd;
	struct ibv_cq *cq;
	struct ibv_mr *mr;
	struct ibv_wc wc;
	uint32_t srqn;
	uint8_t *buf, want;
	size_t len, i;
	char line[64];
	int fd, k, n;

#define CHILD_FAIL(...) do { say(out, "fail " __VA_ARGS__); return 1; } while (0)
	ctx = rc_open_by_name(dev);
	if (!ctx)
		CHILD_FAIL("cannot open %s", dev);
	fd = open(path, O_RDONLY | O_CREAT, 0600);
	if (fd < 0)
		CHILD_FAIL("open %s: %s", path, strerror(errno));
	xrcd = xrc_open_xrcd(ctx, fd, O_CREAT);
	if (!xrcd)
		CHILD_FAIL("ibv_open_xrcd of the file: %s", strerror(errno));
	pd = ibv_alloc_pd(ctx);
	cq = ibv_create_cq(ctx, 8, NULL, NULL, 0);
	if (!pd || !cq)
		CHILD_FAIL("PD or CQ");
	memset(&sa, 0, sizeof(sa));
	sa.attr.max_wr = 4;
	sa.attr.max_sge = 1;
	sa.comp_mask = IBV_SRQ_INIT_ATTR_TYPE | IBV_SRQ_INIT_ATTR_PD |
		       IBV_SRQ_INIT_ATTR_XRCD | IBV_SRQ_INIT_ATTR_CQ;
	sa.srq_type = IBV_SRQT_XRC;
	sa.pd = pd;
	sa.xrcd = xrcd;
	sa.cq = cq;
	srq = ibv_create_srq_ex(ctx, &sa);
	if (!srq)
		CHILD_FAIL("XRC SRQ on the shared domain: %s", strerror(errno));
	if (ibv_get_srq_num(srq, &srqn) || !srqn || srqn >= 1u << 24)
		CHILD_FAIL("ibv_get_srq_num");
	buf = calloc(2, SHARE_SLOT);
	if (!buf)
		CHILD_FAIL("calloc");
	memset(buf, 0xc5, 2 * SHARE_SLOT);
	mr = ibv_reg_mr(pd, buf, 2 * SHARE_SLOT, IBV_ACCESS_LOCAL_WRITE);
	if (!mr)
		CHILD_FAIL("ibv_reg_mr: %s", strerror(errno));
	for (k = 0; k < 2; k++) {
		sge.addr = (uintptr_t)buf + k * SHARE_SLOT;
		sge.length = SHARE_SLOT;
		sge.lkey = mr->lkey;
		memset(&rwr, 0, sizeof(rwr));
		rwr.wr_id = k;
		rwr.sg_list = &sge;
		rwr.num_sge = 1;
		if (ibv_post_srq_recv(srq, &rwr, &rbad))
			CHILD_FAIL("ibv_post_srq_recv");
	}

	memset(&oa, 0, sizeof(oa));
	oa.comp_mask = IBV_QP_OPEN_ATTR_NUM | IBV_QP_OPEN_ATTR_XRCD |
		       IBV_QP_OPEN_ATTR_TYPE;
	oa.qp_num = tgt_qpn;
	oa.xrcd = xrcd;
	oa.qp_type = IBV_QPT_XRC_RECV;
	qp = ibv_open_qp(ctx, &oa);
	if (!qp)
		CHILD_FAIL("ibv_open_qp(%#x): %s", tgt_qpn, strerror(errno));
	if (qp->qp_num != tgt_qpn || qp->qp_type != IBV_QPT_XRC_RECV)
		CHILD_FAIL("opened QP %#x type %d", qp->qp_num, qp->qp_type);
	if (ibv_query_qp(qp, &qa, IBV_QP_STATE, &qia) ||
	    qa.qp_state != IBV_QPS_RTS)
		CHILD_FAIL("the opened target QP is not in RTS");
	/* A number that is no target QP of the domain. */
	oa.qp_num = (tgt_qpn + 1) & 0xffffff;
	errno = 0;
	bad_qp = ibv_open_qp(ctx, &oa);
	if (bad_qp || errno != EINVAL)
		CHILD_FAIL("ibv_open_qp of a QP not in the domain: %s",
			   bad_qp ? "opened" : strerror(errno));
	say(out, "ready %u", srqn);

	for (k = 0; k < 2; k++) {
		if (read_line(in, line, sizeof(line), 4 * RC_TIMEOUT_MS) ||
		    atoi(line) != k)
			CHILD_FAIL("no word of message %d", k);
		len = k ? SHARE_LEN1 : SHARE_LEN0;
		n = rc_poll(cq, &wc, 1, RC_TIMEOUT_MS);
		if (n != 1)
			CHILD_FAIL("message %d: no receive completion", k);
		if (wc.status != IBV_WC_SUCCESS || wc.wr_id != (uint64_t)k ||
		    wc.opcode != IBV_WC_RECV || wc.byte_len != len ||
		    wc.qp_num != tgt_qpn)
			CHILD_FAIL("message %d: status %s wr_id %" PRIu64
				   " opcode %d byte_len %u qp_num %#x", k,
				   ibv_wc_status_str(wc.status), wc.wr_id,
				   wc.opcode, wc.byte_len, wc.qp_num);
		for (i = 0; i < SHARE_SLOT; i++) {
			want = i < len ? rc_pat(seed0 + 7 * k, i) : 0xc5;
			if (buf[k * SHARE_SLOT + i] != want)
				CHILD_FAIL("message %d: byte %zu is %#x, not %#x",
					   k, i, buf[k * SHARE_SLOT + i], want);
		}
		say(out, "got %d", k);
	}
	if (ibv_poll_cq(cq, 1, &wc))
		CHILD_FAIL("a completion too many");
	if (read_line(in, line, sizeof(line), 4 * RC_TIMEOUT_MS) ||
	    strcmp(line, "quit"))
		CHILD_FAIL("no word to end");
	if (ibv_destroy_qp(qp) || ibv_destroy_srq(srq) || ibv_dereg_mr(mr) ||
	    ibv_destroy_cq(cq) || ibv_dealloc_pd(pd))
		CHILD_FAIL("destroying: %s", strerror(errno));
	if (ibv_close_xrcd(xrcd))
		CHILD_FAIL("ibv_close_xrcd: %s", strerror(errno));
	close(fd);
	ibv_close_device(ctx);
	say(out, "done");
	return 0;
#undef CHILD_FAIL
}

/* The child's next line must start with @want; its words are logged. */
static void child_says(struct __test_metadata *_metadata, int fd,
		       const char *want, char *line, size_t n)
{
	ASSERT_EQ(0, read_line(fd, line, n, 4 * RC_TIMEOUT_MS)) {
		TH_LOG("the second process said nothing (waiting for \"%s\")",
		       want);
	}
	ASSERT_EQ(0, strncmp(line, want, strlen(want))) {
		TH_LOG("the second process: %s", line);
	}
}

/*
 * An XRC domain shared through a file: this process opens it (fd,
 * O_CREAT), makes an SRQ and a target QP in it; a second process opens it
 * the same way, makes its own SRQ and opens the target QP (ibv_open_qp,
 * refused for a number that is none of the domain's target QPs).  Through
 * the one target QP, messages land in the second process's SRQ and in
 * ours; then we destroy our handle of the target QP, and it still serves
 * both SRQs, for the second process holds it open.
 */
TEST_F_TIMEOUT(xrc, shared_file, 120)
{
	struct xrc_env *e = &self->e;
	int to_child[2], from_child[2], st, ret;
	struct xrc_srq *s;
	struct xrc_conn *c;
	char line[256];
	uint32_t srqn;
	pid_t pid;

	snprintf(e->path, sizeof(e->path), "/tmp/xrc_test.XXXXXX");
	e->fd = mkstemp(e->path);
	ASSERT_LE(0, e->fd);
	close(e->fd);
	e->fd = open(e->path, O_RDONLY);
	ASSERT_LE(0, e->fd);
	e->fxrcd = xrc_open_xrcd(e->db->ctx, e->fd, O_CREAT);
	ASSERT_NE(NULL, e->fxrcd) {
		TH_LOG("ibv_open_xrcd(%s, O_CREAT): %s", e->path,
		       strerror(errno));
	}
	s = xrc_srq_create(_metadata, e, e->fxrcd, e->db->pd, 8, 8192);
	c = xrc_conn_create(_metadata, e, e->fxrcd, XRC_CONNECT);

	ASSERT_EQ(0, pipe(to_child));
	ASSERT_EQ(0, pipe(from_child));
	fflush(stdout);
	fflush(stderr);
	pid = fork();
	ASSERT_LE(0, pid);
	if (pid == 0) {
		close(to_child[1]);
		close(from_child[0]);
		_exit(share_child(ibv_get_device_name(e->db->ctx->device),
				  e->path, c->tgt_qpn, 7 * 24 + 1, to_child[0],
				  from_child[1]));
	}
	e->child = pid;
	close(to_child[0]);
	close(from_child[1]);

	child_says(_metadata, from_child[0], "ready ", line, sizeof(line));
	srqn = strtoul(line + 6, NULL, 10);
	EXPECT_NE(s->num, srqn);

	/* To its SRQ, to ours, through the one target QP. */
	xrc_msg(_metadata, e, c, &(struct xrc_msg){
		.op = IBV_WR_SEND, .srqn = srqn, .len = SHARE_LEN0,
		.seed = 24, .wr_id = 0x1000,
	});
	say(to_child[1], "0");
	child_says(_metadata, from_child[0], "got 0", line, sizeof(line));
	xrc_msg(_metadata, e, c, &(struct xrc_msg){
		.op = IBV_WR_SEND, .s = s, .len = 4000, .lsge = 2,
		.seed = 180, .wr_id = 0x1001,
	});

	/* Our handle goes; the QP stays, the second process has it open. */
	EXPECT_EQ(0, ibv_destroy_qp(c->tgt));
	c->tgt = NULL;
	xrc_msg(_metadata, e, c, &(struct xrc_msg){
		.op = IBV_WR_SEND, .srqn = srqn, .len = SHARE_LEN1,
		.seed = 25, .wr_id = 0x1002,
	});
	say(to_child[1], "1");
	child_says(_metadata, from_child[0], "got 1", line, sizeof(line));
	xrc_msg(_metadata, e, c, &(struct xrc_msg){
		.op = IBV_WR_SEND, .s = s, .len = 100, .seed = 181,
		.wr_id = 0x1003,
	});

	say(to_child[1], "quit");
	child_says(_metadata, from_child[0], "done", line, sizeof(line));
	ret = waitpid(pid, &st, 0);
	e->child = 0;
	EXPECT_EQ(pid, ret);
	EXPECT_TRUE(WIFEXITED(st) && WEXITSTATUS(st) == 0);
	close(to_child[1]);
	close(from_child[0]);
	EXPECT_EQ(2, s->done);
}

/* ---- on the wire ------------------------------------------------------------- */

/*
 * Two vrdma devices on a veth pair whose second end is in a network
 * namespace of its own, so that their packets cross it (between devices of
 * one namespace they would not), set up by main() beside the suite's.
 */
#define XW_NS		"vrdmaxrc"
#define XW_NETDEV0	"xrw0"
#define XW_NETDEV1	"xrw1"		/* in XW_NS */
#define XW_IP0		"10.218.0.1"
#define XW_IP1		"10.218.0.2"
#define XW_MAC0		"02:00:0a:da:00:01"
#define XW_MAC1		"02:00:0a:da:00:02"

static char xw_name[2][32];
static int xw_gid[2] = { -1, -1 };
static int xw_set_up;

static void xw_teardown(void)
{
	if (!xw_set_up)
		return;
	rc_shf("{ rdma link delete %s; ip netns exec " XW_NS
	       " rdma link delete %s; ip link del " XW_NETDEV0 "; "
	       "ip netns del " XW_NS "; } >/dev/null 2>&1", xw_name[0],
	       xw_name[1]);
	xw_set_up = 0;
}

/* Any test of fixture xrc_wire left to run (VRDMA_RC_TESTS, arguments)? */
static int xw_wanted(void)
{
	struct __fixture_metadata *f;

	for (f = __fixture_list; f; f = f->next)
		if (!strcmp(f->name, "xrc_wire"))
			return f->tests != NULL;
	return 0;
}

/* Called by rc_suite_main_setup() once the suite's devices are up. */
static void xw_setup(void)
{
	double deadline;

	if (!xw_wanted())
		return;
	snprintf(xw_name[0], sizeof(xw_name[0]), "%sxw0", rc_cfg.type);
	snprintf(xw_name[1], sizeof(xw_name[1]), "%sxw1", rc_cfg.type);
	xw_set_up = 1;
	xw_teardown();
	xw_set_up = 1;
	atexit(xw_teardown);
	if (rc_shf("ip netns add " XW_NS " && ip -batch - <<EOF\n"
		   "link add " XW_NETDEV0 " address " XW_MAC0 " type veth "
		   "peer name " XW_NETDEV1 " address " XW_MAC1 " netns " XW_NS
		   "\n"
		   "addr add " XW_IP0 "/24 dev " XW_NETDEV0 "\n"
		   "link set " XW_NETDEV0 " up\n"
		   "EOF\n"
		   "ip -n " XW_NS " -batch - <<EOF\n"
		   "link set lo up\n"
		   "addr add " XW_IP1 "/24 dev " XW_NETDEV1 "\n"
		   "link set " XW_NETDEV1 " up\n"
		   "EOF\n"
		   "ip neigh replace " XW_IP1 " lladdr " XW_MAC1 " dev "
		   XW_NETDEV0 " nud permanent && ip -n " XW_NS
		   " neigh replace " XW_IP0 " lladdr " XW_MAC0 " dev "
		   XW_NETDEV1 " nud permanent && "
		   "rdma link add %s type %s netdev " XW_NETDEV0 " && "
		   "ip netns exec " XW_NS " rdma link add %s type %s netdev "
		   XW_NETDEV1, xw_name[0], rc_cfg.type, xw_name[1],
		   rc_cfg.type))
		rc_fail("the wire test's namespace, veth or devices");
	deadline = rc_now_ms() + RC_TIMEOUT_MS;
	for (;;) {
		xw_gid[0] = rc_find_gid(xw_name[0]);
		xw_gid[1] = rc_find_gid(xw_name[1]);
		if (xw_gid[0] >= 0 && xw_gid[1] >= 0)
			break;
		if (rc_now_ms() > deadline)
			rc_fail("no IPv4 RoCE v2 GID on the wire test's devices");
		usleep(100 * 1000);
	}
	printf("# wire: %s (" XW_NETDEV0 ", " XW_IP0 ") and %s (" XW_NETDEV1
	       ", " XW_IP1 ", netns " XW_NS ")\n", xw_name[0], xw_name[1]);
	fflush(stdout);
}

FIXTURE(xrc_wire) {
	struct xrc_env e;
	int sock;
};

FIXTURE_SETUP(xrc_wire)
{
	struct sockaddr_ll sll;
	int rcvbuf = 4 << 20;

	self->sock = -1;
	xrc_env_open(_metadata, &self->e, xw_name[0], xw_gid[0], xw_name[1],
		     xw_gid[1], 1);
	/* ETH_P_ALL: a socket of one protocol sees no outgoing packets. */
	self->sock = socket(AF_PACKET, SOCK_RAW | SOCK_NONBLOCK,
			    htons(ETH_P_ALL));
	ASSERT_LE(0, self->sock);
	setsockopt(self->sock, SOL_SOCKET, SO_RCVBUF, &rcvbuf, sizeof(rcvbuf));
	memset(&sll, 0, sizeof(sll));
	sll.sll_family = AF_PACKET;
	sll.sll_protocol = htons(ETH_P_ALL);
	sll.sll_ifindex = if_nametoindex(XW_NETDEV0);
	ASSERT_NE(0, sll.sll_ifindex);
	ASSERT_EQ(0, bind(self->sock, (struct sockaddr *)&sll, sizeof(sll)));
}

FIXTURE_TEARDOWN(xrc_wire)
{
	if (self->sock >= 0)
		close(self->sock);
	xrc_env_close(_metadata, &self->e);
}

/* One RoCEv2 packet seen on the veth. */
struct xw_pkt {
	int out;		/* from the initiator's end */
	uint8_t op;
	uint32_t dqpn, psn;
	uint32_t xrc_srqn;	/* the 4 bytes after the BTH, requests */
	uint32_t udp_len;	/* the UDP length */
	uint32_t payload;	/* after the headers, before pad and ICRC */
	int icrc_ok;
};

/* Request header bytes after BTH (and XRCETH) per XRC opcode; -1: none. */
static int xw_req_ext(uint8_t op)
{
	switch (op) {
	case 0xa0: case 0xa1: case 0xa2: case 0xa4:	/* SEND */
	case 0xa7: case 0xa8:				/* WRITE middle, last */
		return 0;
	case 0xa3: case 0xa5: case 0xa9:		/* ... with ImmDt */
		return 4;
	case 0xa6: case 0xaa: case 0xac:		/* RETH */
		return 16;
	case 0xab:					/* RETH, ImmDt */
		return 20;
	case 0xb3: case 0xb4:				/* AtomicETH */
		return 28;
	default:
		return -1;
	}
}

/* Response header bytes after BTH per XRC opcode; -1: not a response. */
static int xw_resp_ext(uint8_t op)
{
	switch (op) {
	case 0xad: case 0xaf: case 0xb0: case 0xb1:	/* AETH */
		return 4;
	case 0xae:					/* READ middle */
		return 0;
	case 0xb2:					/* AETH, AtomicAckETH */
		return 12;
	default:
		return -1;
	}
}

/* Every RoCEv2 packet that came by since the last call. */
static int xw_capture(int sock, struct xw_pkt *pk, int max)
{
	uint8_t frame[10000], copy[10000];
	const uint8_t *ip, *bth;
	struct sockaddr_ll from;
	socklen_t fl;
	size_t iplen;
	ssize_t n;
	int k = 0, quiet = 0, pad;
	struct in_addr ip0;

	inet_pton(AF_INET, XW_IP0, &ip0);
	while (quiet < 10 && k < max) {
		fl = sizeof(from);
		n = recvfrom(sock, frame, sizeof(frame), 0,
			     (struct sockaddr *)&from, &fl);
		if (n < 0) {
			usleep(20 * 1000 * rc_cfg.slow);
			quiet++;
			continue;
		}
		quiet = 0;
		/* SOCK_RAW on a veth: the Ethernet header is there. */
		if (n < 14 + 20 + 8 + 12 + 4 ||
		    frame[12] != 0x08 || frame[13] != 0x00)
			continue;
		ip = frame + 14;
		iplen = (ip[2] << 8) | ip[3];
		if (ip[9] != IPPROTO_UDP || (ip[0] & 0xf) != 5 ||
		    iplen > (size_t)n - 14 || iplen < 20 + 8 + 12 + 4)
			continue;
		if (((ip[22] << 8) | ip[23]) != WIRE_ROCE_PORT)
			continue;
		bth = ip + 28;
		memset(&pk[k], 0, sizeof(pk[k]));
		pk[k].out = !memcmp(ip + 12, &ip0, 4);
		pk[k].op = bth[0];
		pad = (bth[1] >> 4) & 3;
		pk[k].dqpn = (bth[5] << 16) | (bth[6] << 8) | bth[7];
		pk[k].psn = (bth[9] << 16) | (bth[10] << 8) | bth[11];
		pk[k].udp_len = (ip[24] << 8) | ip[25];
		if (iplen >= 20 + 8 + 12 + 4 + 4)
			pk[k].xrc_srqn = (bth[12] << 24) | (bth[13] << 16) |
					 (bth[14] << 8) | bth[15];
		/* Payload: UDP length less UDP, BTH, ICRC, pad, extensions. */
		pk[k].payload = pk[k].udp_len - 8 - 12 - 4 - pad;
		memcpy(copy, ip, iplen);
		wire_icrc(copy, iplen);
		pk[k].icrc_ok = !memcmp(copy + iplen - 4, ip + iplen - 4, 4);
		k++;
	}
	return k;
}

/*
 * The packets of an XRC SEND of 3 MTUs + 5 (FIRST, MIDDLE, MIDDLE, LAST),
 * a SEND with immediate (ONLY with ImmDt), an RDMA WRITE of 2 MTUs + 1
 * (FIRST, MIDDLE, LAST), a READ of 2 MTUs + 3 (its three responses) and a
 * FETCH_AND_ADD between two devices in two namespaces, captured on the
 * veth: each request an XRC opcode (0xA0 + the RC one) to the target QP,
 * its PSN the next, an XRCETH naming the SRQ (high byte 0), the payload
 * of every packet what it must be; each response an XRC opcode to the
 * initiator without XRCETH; every ICRC right.  The data are checked as
 * everywhere.
 */
TEST_F_TIMEOUT(xrc_wire, packets, 90)
{
	static const uint8_t want_req[] = {
		0xa0, 0xa1, 0xa1, 0xa2, 0xa5, 0xa6, 0xa7, 0xa8, 0xac, 0xb4,
	};
	struct xrc_env *e = &self->e;
	struct xw_pkt pk[256];
	uint32_t want_pay[10], psn_step[10], psn;
	int n, i, r, ext, seen_resp = 0, retrans = 0;
	struct xrc_srq *s;
	struct xrc_conn *c;
	int mtu;

	if (rc_cfg.is_rxe)
		SKIP(return, "rdma_rxe has no XRC");
	s = xrc_srq_create(_metadata, e, e->xrcd, e->db->pd, 8, 4 * e->mtu);
	c = xrc_conn_create(_metadata, e, e->xrcd, XRC_CONNECT);
	mtu = e->mtu;
	xw_capture(self->sock, pk, 256);	/* whatever came before */

	xrc_msg(_metadata, e, c, &(struct xrc_msg){
		.op = IBV_WR_SEND, .s = s, .len = 3 * mtu + 5, .lsge = 2,
		.seed = 190, .wr_id = 0x1100,
	});
	xrc_msg(_metadata, e, c, &(struct xrc_msg){
		.op = IBV_WR_SEND_WITH_IMM, .s = s, .len = 10, .imm = 0x1dea,
		.seed = 191, .wr_id = 0x1101,
	});
	xrc_msg(_metadata, e, c, &(struct xrc_msg){
		.op = IBV_WR_RDMA_WRITE, .s = s, .len = 2 * mtu + 1,
		.roff = 3, .seed = 192, .wr_id = 0x1102,
	});
	xrc_msg(_metadata, e, c, &(struct xrc_msg){
		.op = IBV_WR_RDMA_READ, .s = s, .len = 2 * mtu + 3,
		.loff = 65536, .roff = 65536, .seed = 193, .wr_id = 0x1103,
	});
	xrc_msg(_metadata, e, c, &(struct xrc_msg){
		.op = IBV_WR_ATOMIC_FETCH_AND_ADD, .s = s, .loff = 131072,
		.roff = 131072, .compare_add = 1, .wr_id = 0x1104,
	});

	/* The requests' payloads and the PSNs each takes. */
	want_pay[0] = want_pay[1] = want_pay[2] = mtu;
	want_pay[3] = 5;
	want_pay[4] = 10;
	want_pay[5] = want_pay[6] = mtu;
	want_pay[7] = 1;
	want_pay[8] = want_pay[9] = 0;
	for (i = 0; i < 10; i++)
		psn_step[i] = 1;
	psn_step[8] = 3;	/* the READ's three responses */

	n = xw_capture(self->sock, pk, 256);
	ASSERT_LT(10, n) {
		TH_LOG("%d RoCEv2 packets on " XW_NETDEV0, n);
	}
	/* The requests in order (a retransmission, if any, skipped). */
	psn = c->ini_psn;
	for (i = 0, r = 0; i < n; i++) {
		struct xw_pkt *p = &pk[i];

		EXPECT_TRUE(p->icrc_ok) {
			TH_LOG("packet %d (opcode %#x): bad ICRC", i, p->op);
		}
		if (!p->out)
			continue;
		if (r && p->psn != psn) {
			/* A retransmission: a request seen already. */
			TH_LOG("request PSN %#x again (opcode %#x)", p->psn,
			       p->op);
			retrans++;
			continue;
		}
		ASSERT_LT(r, 10) {
			TH_LOG("request %d: opcode %#x PSN %#x", r, p->op,
			       p->psn);
		}
		EXPECT_EQ(want_req[r], p->op) {
			TH_LOG("request %d: opcode %#x", r, p->op);
		}
		EXPECT_EQ(psn, p->psn) {
			TH_LOG("request %d: PSN", r);
		}
		EXPECT_EQ(c->tgt_qpn, p->dqpn);
		EXPECT_EQ(s->num, p->xrc_srqn) {
			TH_LOG("request %d (opcode %#x): XRCETH %#x, SRQ %#x",
			       r, p->op, p->xrc_srqn, s->num);
		}
		ext = xw_req_ext(p->op);
		if (ext >= 0)
			EXPECT_EQ(want_pay[r], p->payload - 4 - ext) {
				TH_LOG("request %d (opcode %#x): payload",
				       r, p->op);
			}
		psn = (psn + psn_step[r]) & 0xffffff;
		r++;
	}
	/*
	 * The responses: to the initiator, in the XRC range, no XRCETH; the
	 * READ's of MTU, MTU and 3 bytes (unless a retry asked again for part
	 * of it).
	 */
	for (i = 0; i < n; i++) {
		struct xw_pkt *p = &pk[i];

		if (p->out)
			continue;
		seen_resp++;
		EXPECT_EQ(c->ini->qp_num, p->dqpn);
		ext = xw_resp_ext(p->op);
		EXPECT_LE(0, ext) {
			TH_LOG("response opcode %#x", p->op);
		}
		if (p->op == 0xb1)
			EXPECT_EQ(8 + 12 + 4 + 4, p->udp_len) {
				TH_LOG("an ACK of %u bytes (an XRCETH?)",
				       p->udp_len);
			}
		if (p->op == 0xb2)
			EXPECT_EQ(8 + 12 + 12 + 4, p->udp_len);
		if (retrans)
			continue;
		if (p->op == 0xad || p->op == 0xae)
			EXPECT_EQ(mtu + ext, p->payload);
		if (p->op == 0xaf)
			EXPECT_EQ(3 + 4, p->payload);
		EXPECT_NE(0xb0, p->op);
	}
	EXPECT_EQ(10, r);
	/* An ACK at least, the three READ responses, the atomic's. */
	EXPECT_LE(5, seen_resp);
}

int main(int argc, char **argv)
{
	const char *type = getenv("VRDMA_TEST_TYPE");

	if (type && !strcmp(type, "rxe")) {
		printf("TAP version 13\n1..0 # SKIP rdma_rxe has no XRC\n");
		return KSFT_SKIP;
	}
	/* "xrc_test NAME...": only the tests of these names. */
	rc_only_tests(argc, argv);
	return rc_suite_main_setup(argc, argv, xw_setup);
}
