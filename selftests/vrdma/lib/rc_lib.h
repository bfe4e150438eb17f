/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Helpers of rc_test.c and ex_test.c: RC QP pairs connected through RoCEv2
 * GIDs, buffers with registered MRs, data patterns, completion polling with
 * timeouts and one generic "transfer and check every byte and every CQE
 * field" step.
 *
 * With rc_cfg.ex (ex_test.c) the same helpers use the extended verbs: CQs
 * from ibv_create_cq_ex() polled with ibv_start_poll() and the read_*
 * functions, QPs from ibv_create_qp_ex() posted to with the ibv_wr_* API.
 *
 * Every helper that checks something takes the harness' _metadata, so that
 * EXPECT_*() / ASSERT_*() work inside it and report the helper's line; an
 * ASSERT aborts the test child, whose exit releases all verbs resources.
 *
 * No wait here is unbounded: completions, CQ events and async events are all
 * polled against a deadline (RC_TIMEOUT_MS), so that a broken driver fails a
 * test instead of hanging the suite.
 */
#ifndef RC_LIB_H
#define RC_LIB_H

#include "gid_lib.h"
#include <endian.h>
#include <errno.h>
#include <poll.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>
#include <infiniband/verbs.h>

#include "kselftest_harness.h"

/* Deadlines, multiplied by VRDMA_TEST_SLOW (rc_cfg.slow, default 1). */
#define RC_TIMEOUT_MS	10000	/* any single wait */
#define RC_QUIET_MS	200	/* "nothing more arrives" */
#define RC_MAX_SGE	16	/* SGEs we use at most, for time */
#define RC_PORT		1
#define RC_HOP_LIMIT	64

/* Test-wide configuration, set up by main() before the tests fork. */
struct rc_config {
	const char *type;	/* "vrdma" or "rxe" */
	int is_rxe;		/* accept rxe's documented deviations */
	char name[2][32];	/* the two RDMA devices */
	int gid_idx[2];		/* their IPv4 RoCE v2 GID index */
	int slow;		/* VRDMA_TEST_SLOW: scales waits (debug kernel) */
	int ex;			/* the extended verbs (see above) */
};
extern struct rc_config rc_cfg;

/* An rxe deviation from the IB spec that we tolerate on rxe only. */
#define RC_QUIRK(fmt, ...) \
	TH_LOG("rxe quirk (accepted on rxe only): " fmt, ##__VA_ARGS__)

static inline double rc_now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

static inline int rc_sh(const char *cmd)
{
	int rc = system(cmd);

	return WIFEXITED(rc) ? WEXITSTATUS(rc) : -1;
}

static inline int rc_shf(const char *fmt, ...)
	__attribute__((format(printf, 1, 2)));

/* rc_sh() of a printf format. */
static inline int rc_shf(const char *fmt, ...)
{
	char cmd[2048];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(cmd, sizeof(cmd), fmt, ap);
	va_end(ap);
	return rc_sh(cmd);
}

/*
 * rc_cfg from the environment: the device type (VRDMA_TEST_TYPE, vrdma by
 * default) and VRDMA_TEST_SLOW.  Return: NULL, or why the tests cannot run.
 */
static inline const char *rc_cfg_env(void)
{
	const char *type = getenv("VRDMA_TEST_TYPE");
	const char *slow = getenv("VRDMA_TEST_SLOW");
	struct __fixture_metadata *f;
	struct __test_metadata *t;

	rc_cfg.type = type && *type ? type : "vrdma";
	rc_cfg.is_rxe = !strcmp(rc_cfg.type, "rxe");
	rc_cfg.slow = slow ? atoi(slow) : 1;
	if (rc_cfg.slow < 1 || rc_cfg.slow > 64)
		return "VRDMA_TEST_SLOW must be 1..64";
	/* The harness's own limit of each test (TEST_F_TIMEOUT) too. */
	for (f = __fixture_list; f; f = f->next)
		for (t = f->tests; t; t = t->next)
			t->timeout *= rc_cfg.slow;
	if (getuid() != 0)
		return "must run as root (in the VM)";
	return NULL;
}

/*
 * "PROGRAM NAME..." runs only the tests named (the 6.1 harness has no
 * filter of its own): the others are unlinked from their fixture's list.
 */
static inline void rc_only_tests(int argc, char **argv)
{
	struct __fixture_metadata *f;
	struct __test_metadata *t, **link;
	int i, keep;

	if (argc < 2)
		return;
	for (f = __fixture_list; f; f = f->next) {
		link = &f->tests;
		for (t = f->tests; t; t = t->next) {
			for (keep = 0, i = 1; i < argc && !keep; i++)
				keep = !strcmp(argv[i], t->name);
			if (keep) {
				*link = t;
				link = &t->next;
			}
		}
		*link = NULL;
	}
}

/* ---- devices -------------------------------------------------------- */

struct rc_dev {
	struct ibv_context *ctx;
	struct ibv_pd *pd;
	struct ibv_device_attr attr;
	struct ibv_port_attr port;
	int gid_idx;
	union ibv_gid gid;
	int owned;		/* we opened ctx (not an alias of another) */
};

static inline void rc_dev_open(struct __test_metadata *_metadata,
			       struct rc_dev *d, int i)
{
	memset(d, 0, sizeof(*d));
	d->ctx = rc_open_by_name(rc_cfg.name[i]);
	ASSERT_NE(NULL, d->ctx) {
		TH_LOG("cannot open %s", rc_cfg.name[i]);
	}
	d->owned = 1;
	ASSERT_EQ(0, ibv_query_device(d->ctx, &d->attr));
	ASSERT_EQ(0, ibv_query_port(d->ctx, RC_PORT, &d->port));
	ASSERT_EQ(IBV_PORT_ACTIVE, d->port.state);
	d->gid_idx = rc_cfg.gid_idx[i];
	ASSERT_EQ(0, ibv_query_gid(d->ctx, RC_PORT, d->gid_idx, &d->gid));
	/* An IPv4-mapped GID: ::ffff:a.b.c.d */
	ASSERT_EQ(0xffff, (d->gid.raw[10] << 8) | d->gid.raw[11]);
	d->pd = ibv_alloc_pd(d->ctx);
	ASSERT_NE(NULL, d->pd);
}

static inline void rc_dev_close(struct rc_dev *d)
{
	if (!d->owned)
		return;
	if (d->pd)
		ibv_dealloc_pd(d->pd);
	if (d->ctx)
		ibv_close_device(d->ctx);
	memset(d, 0, sizeof(*d));
}

/*
 * A fixture's two ends: device 0 (@d0) as @a, and device 1 (@d1) as @b
 * with @two, else @a again (loopback on one device).
 */
static inline void rc_ends_open(struct __test_metadata *_metadata,
				struct rc_dev *d0, struct rc_dev *d1,
				struct rc_dev **a, struct rc_dev **b, int two)
{
	rc_dev_open(_metadata, d0, 0);
	*a = d0;
	*b = d0;
	if (two) {
		rc_dev_open(_metadata, d1, 1);
		*b = d1;
	}
}

static inline int rc_max_sge(const struct rc_dev *d)
{
	return d->attr.max_sge < RC_MAX_SGE ? d->attr.max_sge : RC_MAX_SGE;
}

/* ---- QPs ------------------------------------------------------------ */

struct rc_opts {
	int send_cqe, recv_cqe;		/* default 256 */
	int max_send_wr, max_recv_wr;	/* default 128 */
	int max_send_sge, max_recv_sge;	/* default min(16, max_sge) */
	int max_inline;			/* default 0 */
	int sq_sig_all;
	int channel;			/* a completion channel for the RCQ */
	int no_connect;			/* leave both QPs in RESET */
	int access;			/* QP access flags; default R/W */
	int timeout;			/* 0: 16 (268 ms) */
	int retry_cnt;			/* 0: 7 */
	int rnr_retry;			/* 0: 7 (infinite) */
	struct ibv_srq *srq;		/* receive through this SRQ */
	enum ibv_qp_type qp_type;	/* 0: IBV_QPT_RC; or IBV_QPT_UC */
};

struct rc_qp {
	struct rc_dev *dev;
	struct ibv_cq *scq, *rcq;
	struct ibv_comp_channel *ch;
	struct ibv_qp *qp;
	struct ibv_qp_ex *qpx;		/* with rc_cfg.ex */
	struct ibv_qp_cap cap;		/* what create_qp granted */
	uint32_t sq_psn;		/* initial PSNs */
	uint32_t rq_psn;
	int timeout, retry_cnt, rnr_retry;
};

struct rc_pair {
	struct rc_qp a, b;
	struct rc_opts o;
};

static inline void rc_opts_default(struct rc_opts *o, const struct rc_dev *d)
{
	if (!o->send_cqe)
		o->send_cqe = 256;
	if (!o->recv_cqe)
		o->recv_cqe = 256;
	if (!o->max_send_wr)
		o->max_send_wr = 128;
	if (!o->max_recv_wr)
		o->max_recv_wr = 128;
	if (!o->max_send_sge)
		o->max_send_sge = rc_max_sge(d);
	if (!o->max_recv_sge)
		o->max_recv_sge = rc_max_sge(d);
	if (!o->access)
		o->access = IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ;
}

/* The ibv_wr_* builders an RC QP gets with rc_cfg.ex. */
#define RC_WR_OPS (IBV_QP_EX_WITH_SEND | IBV_QP_EX_WITH_SEND_WITH_IMM | \
		   IBV_QP_EX_WITH_RDMA_WRITE | \
		   IBV_QP_EX_WITH_RDMA_WRITE_WITH_IMM | \
		   IBV_QP_EX_WITH_RDMA_READ)
#define RC_WR_ATOMIC_OPS (IBV_QP_EX_WITH_ATOMIC_CMP_AND_SWP | \
			  IBV_QP_EX_WITH_ATOMIC_FETCH_AND_ADD)
/* With memory windows: binding and invalidating them. */
#define RC_WR_MW_OPS (IBV_QP_EX_WITH_BIND_MW | IBV_QP_EX_WITH_LOCAL_INV | \
		      IBV_QP_EX_WITH_SEND_WITH_INV)

/* A CQ, extended with rc_cfg.ex; NULL with errno on failure. */
static inline struct ibv_cq *rc_create_cq(struct rc_dev *d, int cqe,
					  struct ibv_comp_channel *ch)
{
	struct ibv_cq_init_attr_ex a = {
		.cqe = cqe,
		.channel = ch,
		.wc_flags = IBV_WC_STANDARD_FLAGS,
	};
	struct ibv_cq_ex *cq;

	if (!rc_cfg.ex)
		return ibv_create_cq(d->ctx, cqe, NULL, ch, 0);
	cq = ibv_create_cq_ex(d->ctx, &a);
	return cq ? ibv_cq_ex_to_cq(cq) : NULL;
}

static inline void rc_qp_create(struct __test_metadata *_metadata,
				struct rc_qp *q, struct rc_dev *d,
				const struct rc_opts *o)
{
	struct ibv_qp_init_attr_ex ia;

	memset(q, 0, sizeof(*q));
	q->dev = d;
	if (o->channel) {
		q->ch = ibv_create_comp_channel(d->ctx);
		ASSERT_NE(NULL, q->ch);
	}
	q->scq = rc_create_cq(d, o->send_cqe, NULL);
	ASSERT_NE(NULL, q->scq) {
		TH_LOG("create CQ: %s", strerror(errno));
	}
	ASSERT_LE(o->send_cqe, q->scq->cqe);
	q->rcq = rc_create_cq(d, o->recv_cqe, q->ch);
	ASSERT_NE(NULL, q->rcq);
	ASSERT_LE(o->recv_cqe, q->rcq->cqe);

	memset(&ia, 0, sizeof(ia));
	ia.send_cq = q->scq;
	ia.recv_cq = q->rcq;
	ia.qp_type = o->qp_type ? o->qp_type : IBV_QPT_RC;
	ia.sq_sig_all = o->sq_sig_all;
	ia.cap.max_send_wr = o->max_send_wr;
	ia.cap.max_recv_wr = o->max_recv_wr;
	ia.cap.max_send_sge = o->max_send_sge;
	ia.cap.max_recv_sge = o->max_recv_sge;
	ia.cap.max_inline_data = o->max_inline;
	ia.srq = o->srq;
	ia.comp_mask = IBV_QP_INIT_ATTR_PD;
	ia.pd = d->pd;
	if (rc_cfg.ex) {
		ia.comp_mask |= IBV_QP_INIT_ATTR_SEND_OPS_FLAGS;
		ia.send_ops_flags = RC_WR_OPS;
		if (d->attr.atomic_cap != IBV_ATOMIC_NONE)
			ia.send_ops_flags |= RC_WR_ATOMIC_OPS;
		if (d->attr.device_cap_flags & IBV_DEVICE_MEM_WINDOW)
			ia.send_ops_flags |= RC_WR_MW_OPS;
	}
	/*
	 * struct ibv_qp_init_attr_ex begins with struct ibv_qp_init_attr, as
	 * libibverbs' own ibv_create_qp_ex() relies on.
	 */
	if (rc_cfg.ex)
		q->qp = ibv_create_qp_ex(d->ctx, &ia);
	else
		q->qp = ibv_create_qp(d->pd, (struct ibv_qp_init_attr *)&ia);
	ASSERT_NE(NULL, q->qp) {
		TH_LOG("create QP: %s", strerror(errno));
	}
	if (rc_cfg.ex) {
		q->qpx = ibv_qp_to_qp_ex(q->qp);
		ASSERT_NE(NULL, q->qpx);
	}
	/* The granted capabilities are at least what we asked for. */
	q->cap = ia.cap;
	ASSERT_LE(o->max_send_wr, q->cap.max_send_wr);
	ASSERT_LE(o->max_send_sge, q->cap.max_send_sge);
	/* With an SRQ the receive capabilities are the SRQ's. */
	if (!o->srq) {
		ASSERT_LE(o->max_recv_wr, q->cap.max_recv_wr);
		ASSERT_LE(o->max_recv_sge, q->cap.max_recv_sge);
	}
	EXPECT_EQ(IBV_QPS_RESET, q->qp->state);
	EXPECT_EQ(ia.qp_type, q->qp->qp_type);
}

static inline int rc_rd_atomic(int dev_max)
{
	return dev_max <= 0 ? 1 : dev_max < 16 ? dev_max : 16;
}

/* The three modify_qp steps; each returns ibv_modify_qp's result. */
static inline int rc_to_init(struct rc_qp *q, int access)
{
	struct ibv_qp_attr a = {
		.qp_state = IBV_QPS_INIT,
		.pkey_index = 0,
		.port_num = RC_PORT,
		.qp_access_flags = access,
	};

	return ibv_modify_qp(q->qp, &a, IBV_QP_STATE | IBV_QP_PKEY_INDEX |
			     IBV_QP_PORT | IBV_QP_ACCESS_FLAGS);
}

static inline void rc_rtr_attr(struct ibv_qp_attr *a, struct rc_qp *q,
			       uint32_t dqpn, const union ibv_gid *dgid,
			       uint32_t rq_psn)
{
	memset(a, 0, sizeof(*a));
	a->qp_state = IBV_QPS_RTR;
	a->path_mtu = q->dev->port.active_mtu;
	a->dest_qp_num = dqpn;
	a->rq_psn = rq_psn;
	a->max_dest_rd_atomic = rc_rd_atomic(q->dev->attr.max_qp_rd_atom);
	a->min_rnr_timer = 1;	/* 0.01 ms */
	a->ah_attr.is_global = 1;
	a->ah_attr.grh.dgid = *dgid;
	a->ah_attr.grh.sgid_index = q->dev->gid_idx;
	a->ah_attr.grh.hop_limit = RC_HOP_LIMIT;
	a->ah_attr.port_num = RC_PORT;
}

#define RC_RTR_MASK (IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU | \
		     IBV_QP_DEST_QPN | IBV_QP_RQ_PSN | \
		     IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER)
#define RC_RTS_MASK (IBV_QP_STATE | IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT | \
		     IBV_QP_RNR_RETRY | IBV_QP_SQ_PSN | IBV_QP_MAX_QP_RD_ATOMIC)
/* UC has no ACKs: no RDMA READ, RNR or retry attributes. */
#define UC_RTR_MASK (IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU | \
		     IBV_QP_DEST_QPN | IBV_QP_RQ_PSN)
#define UC_RTS_MASK (IBV_QP_STATE | IBV_QP_SQ_PSN)

static inline void rc_rts_attr(struct ibv_qp_attr *a, struct rc_qp *q,
			       uint32_t sq_psn)
{
	memset(a, 0, sizeof(*a));
	a->qp_state = IBV_QPS_RTS;
	/* 4.096 us * 2^16 = 268 ms by default: TCG is slow. */
	a->timeout = q->timeout ? q->timeout : 16;
	a->retry_cnt = q->retry_cnt ? q->retry_cnt : 7;
	a->rnr_retry = q->rnr_retry ? q->rnr_retry : 7;	/* 7: infinite */
	a->sq_psn = sq_psn;
	a->max_rd_atomic = rc_rd_atomic(q->dev->attr.max_qp_init_rd_atom);
}

static inline void rc_qp_connect(struct __test_metadata *_metadata,
				 struct rc_qp *q, const struct rc_qp *peer,
				 int access)
{
	int uc = q->qp->qp_type == IBV_QPT_UC;
	struct ibv_qp_attr a;

	ASSERT_EQ(0, rc_to_init(q, access));
	rc_rtr_attr(&a, q, peer->qp->qp_num, &peer->dev->gid, q->rq_psn);
	ASSERT_EQ(0, ibv_modify_qp(q->qp, &a, uc ? UC_RTR_MASK : RC_RTR_MASK)) {
		TH_LOG("INIT->RTR failed");
	}
	rc_rts_attr(&a, q, q->sq_psn);
	ASSERT_EQ(0, ibv_modify_qp(q->qp, &a, uc ? UC_RTS_MASK : RC_RTS_MASK)) {
		TH_LOG("RTR->RTS failed");
	}
}

/*
 * A on @da and B on @db (the same device for loopback), connected. A's
 * first PSN is just below the 24-bit wrap, so that multi-packet messages
 * cross it.
 */
static inline void rc_pair_create(struct __test_metadata *_metadata,
				  struct rc_pair *p, struct rc_dev *da,
				  struct rc_dev *db, const struct rc_opts *o)
{
	memset(p, 0, sizeof(*p));
	if (o)
		p->o = *o;
	rc_opts_default(&p->o, da);
	rc_qp_create(_metadata, &p->a, da, &p->o);
	rc_qp_create(_metadata, &p->b, db, &p->o);
	p->a.timeout = p->b.timeout = p->o.timeout;
	p->a.retry_cnt = p->b.retry_cnt = p->o.retry_cnt;
	p->a.rnr_retry = p->b.rnr_retry = p->o.rnr_retry;
	p->a.sq_psn = 0xfffff0;
	p->b.rq_psn = p->a.sq_psn;
	p->b.sq_psn = 0x123456;
	p->a.rq_psn = p->b.sq_psn;
	if (p->o.no_connect)
		return;
	rc_qp_connect(_metadata, &p->a, &p->b, p->o.access);
	rc_qp_connect(_metadata, &p->b, &p->a, p->o.access);
}

static inline void rc_qp_destroy(struct rc_qp *q)
{
	if (q->qp)
		ibv_destroy_qp(q->qp);
	if (q->scq)
		ibv_destroy_cq(q->scq);
	if (q->rcq)
		ibv_destroy_cq(q->rcq);
	if (q->ch)
		ibv_destroy_comp_channel(q->ch);
	memset(q, 0, sizeof(*q));
}

static inline void rc_pair_destroy(struct rc_pair *p)
{
	rc_qp_destroy(&p->a);
	rc_qp_destroy(&p->b);
}

static inline enum ibv_qp_state rc_qp_state(struct ibv_qp *qp)
{
	struct ibv_qp_attr a;
	struct ibv_qp_init_attr ia;

	if (ibv_query_qp(qp, &a, IBV_QP_STATE, &ia))
		return -1;
	return a.qp_state;
}

/* ---- buffers and patterns -------------------------------------------- */

struct rc_buf {
	uint8_t *p;
	size_t size;
	struct ibv_mr *mr;
};

#define RC_ACCESS_ALL (IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE | \
		       IBV_ACCESS_REMOTE_READ)

/* Bytes a guarded mapping of @size takes: its pages and a guard each side. */
static inline size_t rc_guarded_len(size_t size)
{
	size_t pg = (size_t)sysconf(_SC_PAGESIZE);

	return (size + pg - 1) / pg * pg + 2 * pg;
}

/*
 * @size bytes of fresh anonymous memory, read-write, between two PROT_NONE
 * guard pages.  A mapping of its own: it never merges with a neighbouring
 * mapping, so a huge page the kernel faults in for a neighbour never
 * covers it (untouched memory stays untouched), and an access just past
 * either end faults instead of reading a neighbour.
 */
static inline uint8_t *rc_map_guarded(struct __test_metadata *_metadata,
				      size_t size)
{
	size_t pg = (size_t)sysconf(_SC_PAGESIZE);
	uint8_t *map = mmap(NULL, rc_guarded_len(size), PROT_NONE,
			    MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

	ASSERT_NE(MAP_FAILED, map);
	ASSERT_EQ(0, mprotect(map + pg, rc_guarded_len(size) - 2 * pg,
			      PROT_READ | PROT_WRITE));
	return map + pg;
}

static inline void rc_unmap_guarded(uint8_t *p, size_t size)
{
	munmap(p - sysconf(_SC_PAGESIZE), rc_guarded_len(size));
}

/* A buffer of @size bytes (rc_map_guarded()) registered with @access. */
static inline void rc_buf_alloc(struct __test_metadata *_metadata,
				struct rc_buf *b, struct ibv_pd *pd,
				size_t size, int access)
{
	memset(b, 0, sizeof(*b));
	b->p = rc_map_guarded(_metadata, size);
	b->size = size;
	b->mr = ibv_reg_mr(pd, b->p, size, access);
	ASSERT_NE(NULL, b->mr) {
		TH_LOG("ibv_reg_mr(%zu, %#x): %s", size, access,
		       strerror(errno));
	}
	EXPECT_EQ(b->p, b->mr->addr);
	EXPECT_EQ(size, b->mr->length);
}

static inline void rc_buf_free(struct rc_buf *b)
{
	if (b->mr)
		ibv_dereg_mr(b->mr);
	if (b->p)
		rc_unmap_guarded(b->p, b->size);
	memset(b, 0, sizeof(*b));
}

/* Byte @i of the stream @seed: not periodic in any power of two. */
static inline uint8_t rc_pat(uint32_t seed, size_t i)
{
	uint32_t x = (uint32_t)i * 2654435761u + seed * 0x9e3779b9u;

	x ^= x >> 15;
	x *= 0x85ebca6bu;
	x ^= x >> 13;
	return x;
}

static inline void rc_fill(uint8_t *p, size_t n, uint32_t seed, size_t from)
{
	size_t i;

	for (i = 0; i < n; i++)
		p[i] = rc_pat(seed, from + i);
}

/* ---- SG lists --------------------------------------------------------- */

struct rc_seg {
	size_t off;	/* in the buffer */
	size_t len;
};

struct rc_sgl {
	int n;
	size_t total;
	size_t end;	/* first offset past the last segment */
	struct rc_seg s[RC_MAX_SGE];
};

/*
 * Lay out @total bytes as @n segments from offset @start: uneven lengths,
 * each segment at an odd distance (1..13 bytes) after the previous one, so
 * that neither starts nor lengths are aligned. n is clamped to total, and
 * is 0 for total 0.
 */
static inline void rc_sgl_layout(struct rc_sgl *g, size_t start, size_t total,
				 int n, uint32_t seed)
{
	size_t base, cut, prev = 0, off = start;
	int i;

	if ((size_t)n > total)
		n = total;
	if (n > RC_MAX_SGE)
		n = RC_MAX_SGE;
	g->n = n;
	g->total = total;
	base = n ? total / n : 0;
	for (i = 0; i < n; i++) {
		cut = total * (i + 1) / n;
		if (i < n - 1 && base >= 3) {
			size_t j = rc_pat(seed, i) % (base / 3 + 1);

			cut = (rc_pat(seed, 100 + i) & 1) ? cut + j : cut - j;
		}
		g->s[i].off = off;
		g->s[i].len = cut - prev;
		off += g->s[i].len + 1 + 2 * (rc_pat(seed, 200 + i) % 7);
		prev = cut;
	}
	g->end = off;
}

static inline void rc_sgl_to_ibv(const struct rc_sgl *g, struct ibv_sge *sge,
				 uint8_t *base, uint32_t lkey)
{
	int i;

	for (i = 0; i < g->n; i++) {
		sge[i].addr = (uintptr_t)(base + g->s[i].off);
		sge[i].length = g->s[i].len;
		sge[i].lkey = lkey;
	}
}

/* Fill the segments with the first g->total bytes of stream @seed. */
static inline void rc_sgl_fill(const struct rc_sgl *g, uint8_t *base,
			       uint32_t seed)
{
	size_t at = 0;
	int i;

	for (i = 0; i < g->n; i++) {
		rc_fill(base + g->s[i].off, g->s[i].len, seed, at);
		at += g->s[i].len;
	}
}

/* Overlay the first @len bytes of stream @seed onto @img, scattered by g. */
static inline void rc_sgl_expect(const struct rc_sgl *g, uint8_t *img,
				 size_t len, uint32_t seed)
{
	size_t at = 0, n;
	int i;

	for (i = 0; i < g->n && at < len; i++) {
		n = g->s[i].len < len - at ? g->s[i].len : len - at;
		rc_fill(img + g->s[i].off, n, seed, at);
		at += n;
	}
}

/* -1 if equal, else the first differing offset. */
static inline long rc_memdiff(const uint8_t *a, const uint8_t *b, size_t n)
{
	size_t i;

	if (!memcmp(a, b, n))
		return -1;
	for (i = 0; a[i] == b[i]; i++)
		;
	return i;
}

/*
 * Wait (at most @ms x slow) until @n bytes at @seen equal @want: data that
 * no completion announces, e.g. a UC RDMA WRITE, which is complete at the
 * requester once sent.
 */
static inline void rc_wait_bytes(const volatile uint8_t *seen,
				 const uint8_t *want, size_t n, int ms)
{
	double deadline = rc_now_ms() + (double)ms * rc_cfg.slow;

	while (memcmp((const void *)seen, want, n) && rc_now_ms() < deadline)
		usleep(100);
}

#define EXPECT_SAME_BYTES(seen, want, n, what) do { \
	long __d = rc_memdiff((seen), (want), (n)); \
	EXPECT_EQ(-1, __d) { \
		TH_LOG("%s: first difference at offset %ld of %zu: " \
		       "%#04x, expected %#04x", (what), __d, (size_t)(n), \
		       (seen)[__d], (want)[__d]); \
	} \
} while (0)

/* ---- completions ------------------------------------------------------ */

/*
 * ibv_poll_cq() for a CQ from ibv_create_cq_ex(), through ibv_start_poll(),
 * ibv_next_poll(), ibv_end_poll() and the read_* functions: up to @n
 * completions into @wc; returns how many, or -1 on an error.
 *
 * On rxe, one completion per start_poll/end_poll: the rxe provider of
 * rdma-core v44 breaks the CQ when end_poll follows an ENOENT from
 * next_poll (it moves the consumer index past the producer's and unlocks
 * twice; fixed upstream in b78b414e0 and 5e7aa4102).
 */
static inline int rc_poll_ex(struct ibv_cq_ex *cq, int n, struct ibv_wc *wc)
{
	struct ibv_poll_cq_attr attr = { .comp_mask = 0 };
	int got = 0, ret;

	if (n <= 0)
		return 0;
	if (rc_cfg.is_rxe && n > 1) {
		while (got < n && (ret = rc_poll_ex(cq, 1, wc + got)) == 1)
			got++;
		return ret < 0 && !got ? ret : got;
	}
	ret = ibv_start_poll(cq, &attr);
	if (ret)
		return ret == ENOENT ? 0 : -1;
	do {
		memset(&wc[got], 0, sizeof(wc[got]));
		wc[got].wr_id = cq->wr_id;
		wc[got].status = cq->status;
		wc[got].opcode = ibv_wc_read_opcode(cq);
		wc[got].vendor_err = ibv_wc_read_vendor_err(cq);
		wc[got].byte_len = ibv_wc_read_byte_len(cq);
		wc[got].wc_flags = ibv_wc_read_wc_flags(cq);
		/* imm_data is defined with IBV_WC_WITH_IMM or _INV only */
		if (wc[got].wc_flags & (IBV_WC_WITH_IMM | IBV_WC_WITH_INV))
			wc[got].imm_data = ibv_wc_read_imm_data(cq);
		wc[got].qp_num = ibv_wc_read_qp_num(cq);
		wc[got].src_qp = ibv_wc_read_src_qp(cq);
		wc[got].slid = ibv_wc_read_slid(cq);
		wc[got].sl = ibv_wc_read_sl(cq);
		wc[got].dlid_path_bits = ibv_wc_read_dlid_path_bits(cq);
		got++;
	} while (got < n && !(ret = ibv_next_poll(cq)));
	ibv_end_poll(cq);
	return ret && ret != ENOENT ? -1 : got;
}

/* ibv_poll_cq(), or rc_poll_ex() on the extended CQs of rc_cfg.ex. */
static inline int rc_poll_cq(struct ibv_cq *cq, int n, struct ibv_wc *wc)
{
	if (rc_cfg.ex)
		return rc_poll_ex((struct ibv_cq_ex *)cq, n, wc);
	return ibv_poll_cq(cq, n, wc);
}

/*
 * Wait for @n completions, for at most @ms times the slow factor: a debug
 * kernel (KASAN, lockdep) under TCG is several times slower, and a deadline
 * is there to catch a lost completion, not to time the device.  Returns
 * how many came.
 */
static inline int rc_poll(struct ibv_cq *cq, struct ibv_wc *wc, int n, int ms)
{
	double deadline = rc_now_ms() + (double)ms * rc_cfg.slow;
	int got = 0, r;

	while (got < n) {
		r = rc_poll_cq(cq, n - got, wc + got);
		if (r < 0)
			return r;
		got += r;
		if (got == n)
			break;
		if (rc_now_ms() > deadline)
			break;
		if (!r)
			usleep(50);	/* leave the CPU to the soft device */
	}
	return got;
}

/* Nothing (more) arrives on @cq within RC_QUIET_MS (scaled too). */
#define EXPECT_CQ_EMPTY(cq, what) do { \
	struct ibv_wc __wc; \
	int __n = rc_poll((cq), &__wc, 1, RC_QUIET_MS); \
	EXPECT_EQ(0, __n) { \
		TH_LOG("%s: unexpected completion wr_id %#llx status %s " \
		       "opcode %d", (what), (unsigned long long)__wc.wr_id, \
		       ibv_wc_status_str(__wc.status), __wc.opcode); \
	} \
} while (0)

struct rc_wc_exp {
	uint64_t wr_id;
	enum ibv_wc_status status;
	enum ibv_wc_opcode opcode;
	int recv;		/* a receive completion: byte_len, wc_flags
				 * and imm_data are defined */
	uint32_t byte_len;
	int imm;		/* IBV_WC_WITH_IMM with imm_data */
	__be32 imm_data;
	uint32_t qp_num;
};

/*
 * Check every defined field of @wc. For an error completion only wr_id,
 * status and qp_num are defined; for a send-queue completion also opcode
 * (byte_len and wc_flags are defined for receive completions only; rxe,
 * for one, reports IBV_WC_WITH_IMM on the requester's SEND_WITH_IMM).
 * IBV_WC_GRH is not checked: on RoCE it only says a GRH (the IP header)
 * was there, which is true of every packet; devices differ on whether
 * they report it for RC. src_qp, slid, sl, dlid_path_bits and pkey_index
 * are UD-only.
 */
static inline void rc_wc_check(struct __test_metadata *_metadata,
			       const struct ibv_wc *wc,
			       const struct rc_wc_exp *e, const char *what)
{
	EXPECT_EQ(e->wr_id, wc->wr_id) {
		TH_LOG("%s: wr_id", what);
	}
	EXPECT_EQ(e->status, wc->status) {
		TH_LOG("%s: status %s (vendor_err %#x), expected %s", what,
		       ibv_wc_status_str(wc->status), wc->vendor_err,
		       ibv_wc_status_str(e->status));
	}
	EXPECT_EQ(e->qp_num, wc->qp_num) {
		TH_LOG("%s: qp_num", what);
	}
	if (e->status != IBV_WC_SUCCESS || wc->status != IBV_WC_SUCCESS)
		return;
	EXPECT_EQ(e->opcode, wc->opcode) {
		TH_LOG("%s: opcode", what);
	}
	if (!e->recv)
		return;
	EXPECT_EQ(e->byte_len, wc->byte_len) {
		TH_LOG("%s: byte_len", what);
	}
	EXPECT_EQ(e->imm ? IBV_WC_WITH_IMM : 0,
		  wc->wc_flags & ~(unsigned int)IBV_WC_GRH) {
		TH_LOG("%s: wc_flags %#x", what, wc->wc_flags);
	}
	if (e->imm) {
		EXPECT_EQ(e->imm_data, wc->imm_data) {
			TH_LOG("%s: imm_data", what);
		}
	}
}

/* Poll exactly one completion and check it. */
static inline void rc_expect_wc(struct __test_metadata *_metadata,
				struct ibv_cq *cq, const struct rc_wc_exp *e,
				const char *what)
{
	struct ibv_wc wc;

	memset(&wc, 0, sizeof(wc));
	ASSERT_EQ(1, rc_poll(cq, &wc, 1, RC_TIMEOUT_MS)) {
		TH_LOG("%s: no completion within %d ms", what, RC_TIMEOUT_MS);
	}
	rc_wc_check(_metadata, &wc, e, what);
}

/*
 * Post @wr of @q signaled (ibv_post_send) and expect its one completion:
 * @status, and @opcode if that is success.
 */
static inline void rc_post_expect(struct __test_metadata *_metadata,
				  struct rc_qp *q, struct ibv_send_wr *wr,
				  enum ibv_wc_status status,
				  enum ibv_wc_opcode opcode, const char *what)
{
	struct ibv_send_wr *bad = NULL;

	wr->send_flags |= IBV_SEND_SIGNALED;
	ASSERT_EQ(0, ibv_post_send(q->qp, wr, &bad)) {
		TH_LOG("%s: post", what);
	}
	rc_expect_wc(_metadata, q->scq, &(struct rc_wc_exp){
		.wr_id = wr->wr_id, .status = status, .opcode = opcode,
		.qp_num = q->qp->qp_num,
	}, what);
}

/* Chain behind @wr a signaled SEND of @sge, wr_id 2 (for the below). */
static inline void rc_chain_send(struct ibv_send_wr *wr,
				 struct ibv_send_wr *next, struct ibv_sge *sge)
{
	memset(next, 0, sizeof(*next));
	next->wr_id = 0x2;
	next->sg_list = sge;
	next->num_sge = 1;
	next->opcode = IBV_WR_SEND;
	next->send_flags = IBV_SEND_SIGNALED;
	wr->next = next;
}

/*
 * A WR of @q that fails with @status, posted with a signaled WR of wr_id 2
 * chained behind it: the WR completes with @status, the one behind it is
 * flushed, and the QP is in the error state.
 */
static inline void rc_expect_failed_flushed(struct __test_metadata *_metadata,
					    struct rc_qp *q, uint64_t wr_id,
					    enum ibv_wc_status status,
					    const char *what)
{
	rc_expect_wc(_metadata, q->scq, &(struct rc_wc_exp){
		.wr_id = wr_id, .status = status, .qp_num = q->qp->qp_num,
	}, what);
	rc_expect_wc(_metadata, q->scq, &(struct rc_wc_exp){
		.wr_id = 0x2, .status = IBV_WC_WR_FLUSH_ERR,
		.qp_num = q->qp->qp_num,
	}, "the WR after the failed one");
	EXPECT_EQ(IBV_QPS_ERR, rc_qp_state(q->qp));
}

/* Wait for an async event of @type on @ctx; others are logged and skipped. */
static inline int rc_wait_async(struct __test_metadata *_metadata,
				struct ibv_context *ctx,
				enum ibv_event_type type,
				struct ibv_async_event *out, int ms)
{
	struct pollfd pfd = { .fd = ctx->async_fd, .events = POLLIN };
	double deadline = rc_now_ms() + ms;
	struct ibv_async_event ev;
	int left;

	for (;;) {
		left = deadline - rc_now_ms();
		if (left <= 0 || poll(&pfd, 1, left) != 1)
			return 0;
		if (ibv_get_async_event(ctx, &ev))
			return 0;
		if (ev.event_type == type) {
			*out = ev;
			ibv_ack_async_event(&ev);
			return 1;
		}
		TH_LOG("async event %s (waiting for %s)",
		       ibv_event_type_str(ev.event_type),
		       ibv_event_type_str(type));
		ibv_ack_async_event(&ev);
	}
}

/*
 * A QP timeout attribute (4.096 us x 2^t) grown with the slow factor, for
 * tests whose point is a short transport timer that still never fires.
 */
static inline int rc_slow_timeout(int t)
{
	int s;

	for (s = rc_cfg.slow; s > 1; s >>= 1)
		t++;
	return t;
}

/* 1 if a CQ event arrived on @ch within @ms x slow (and it was acked). */
static inline int rc_wait_cq_event(struct ibv_comp_channel *ch,
				   struct ibv_cq *want, int ms)
{
	struct pollfd pfd = { .fd = ch->fd, .events = POLLIN };
	struct ibv_cq *cq;
	void *ctx;

	if (poll(&pfd, 1, ms * rc_cfg.slow) != 1)
		return 0;
	if (ibv_get_cq_event(ch, &cq, &ctx))
		return 0;
	ibv_ack_cq_events(cq, 1);
	return cq == want;
}

/* rc_find_gid(): gid_lib.h. */

/* A 64-bit word of memory at any alignment, as an atomic sees it. */
static inline uint64_t rd64(const void *p)
{
	uint64_t v;

	memcpy(&v, p, sizeof(v));
	return v;
}

static inline void wr64(void *p, uint64_t v)
{
	memcpy(p, &v, sizeof(v));
}

/*
 * What a masked atomic (vrdma's VRDMA_WR_MASKED_ATOMIC_*, the kernel's
 * IB_WR_MASKED_ATOMIC_*) leaves in the word @old, worked out bit by bit,
 * apart from the driver's arithmetic: compare-and-swap (@cas) compares the
 * bits of @compare_mask and swaps those of @swap_add_mask; fetch-and-add
 * adds @swap_add with the carry out of every bit of @swap_add_mask dropped.
 */
static inline uint64_t rc_masked_atomic(int cas, uint64_t old,
					uint64_t compare, uint64_t swap_add,
					uint64_t compare_mask,
					uint64_t swap_add_mask)
{
	uint64_t r = 0;
	int b, carry = 0;

	if (cas)
		return (old ^ compare) & compare_mask ? old :
		       (old & ~swap_add_mask) | (swap_add & swap_add_mask);
	for (b = 0; b < 64; b++) {
		int sum = (int)(old >> b & 1) + (int)(swap_add >> b & 1) +
			  carry;

		r |= (uint64_t)(sum & 1) << b;
		carry = (sum >> 1) && !(swap_add_mask >> b & 1);
	}
	return r;
}

/* ---- posting ------------------------------------------------------- */

/*
 * What an application does to post @wr (a list) through the ibv_wr_* API:
 * one batch, the builder of each WR's opcode, on an XRC initiator the
 * target's SRQ (ibv_wr_set_xrc_srqn(): before the data, or after it for a
 * WR whose wr_id has a bit of @srqn_after_data), and the setter of its
 * data.  Returns ibv_wr_complete()'s result; the batch is all or nothing.
 */
static inline int rc_post_wr_list(struct ibv_qp_ex *qpx,
				  struct ibv_send_wr *wr,
				  uint64_t srqn_after_data)
{
	bool xrc = qpx->qp_base.qp_type == IBV_QPT_XRC_SEND;
	struct ibv_data_buf buf[RC_MAX_SGE];
	int i;

	ibv_wr_start(qpx);
	for (; wr; wr = wr->next) {
		qpx->wr_id = wr->wr_id;
		qpx->wr_flags = wr->send_flags;
		switch (wr->opcode) {
		case IBV_WR_SEND:
			ibv_wr_send(qpx);
			break;
		case IBV_WR_SEND_WITH_IMM:
			ibv_wr_send_imm(qpx, wr->imm_data);
			break;
		case IBV_WR_SEND_WITH_INV:
			ibv_wr_send_inv(qpx, wr->invalidate_rkey);
			break;
		case IBV_WR_LOCAL_INV:
			ibv_wr_local_inv(qpx, wr->invalidate_rkey);
			continue;	/* no data */
		case IBV_WR_BIND_MW:
			ibv_wr_bind_mw(qpx, wr->bind_mw.mw, wr->bind_mw.rkey,
				       &wr->bind_mw.bind_info);
			continue;
		case IBV_WR_RDMA_WRITE:
			ibv_wr_rdma_write(qpx, wr->wr.rdma.rkey,
					  wr->wr.rdma.remote_addr);
			break;
		case IBV_WR_RDMA_WRITE_WITH_IMM:
			ibv_wr_rdma_write_imm(qpx, wr->wr.rdma.rkey,
					      wr->wr.rdma.remote_addr,
					      wr->imm_data);
			break;
		case IBV_WR_RDMA_READ:
			ibv_wr_rdma_read(qpx, wr->wr.rdma.rkey,
					 wr->wr.rdma.remote_addr);
			break;
		case IBV_WR_ATOMIC_CMP_AND_SWP:
			ibv_wr_atomic_cmp_swp(qpx, wr->wr.atomic.rkey,
					      wr->wr.atomic.remote_addr,
					      wr->wr.atomic.compare_add,
					      wr->wr.atomic.swap);
			break;
		case IBV_WR_ATOMIC_FETCH_AND_ADD:
			ibv_wr_atomic_fetch_add(qpx, wr->wr.atomic.rkey,
						wr->wr.atomic.remote_addr,
						wr->wr.atomic.compare_add);
			break;
		default:
			ibv_wr_abort(qpx);
			return EINVAL;
		}
		if (xrc && !(wr->wr_id & srqn_after_data))
			ibv_wr_set_xrc_srqn(qpx, wr->qp_type.xrc.remote_srqn);
		if ((wr->send_flags & IBV_SEND_INLINE) && wr->num_sge == 1) {
			ibv_wr_set_inline_data(qpx, (void *)(uintptr_t)
					       wr->sg_list[0].addr,
					       wr->sg_list[0].length);
		} else if (wr->send_flags & IBV_SEND_INLINE) {
			if (wr->num_sge > RC_MAX_SGE) {
				ibv_wr_abort(qpx);
				return EINVAL;
			}
			for (i = 0; i < wr->num_sge; i++) {
				buf[i].addr = (void *)(uintptr_t)
					      wr->sg_list[i].addr;
				buf[i].length = wr->sg_list[i].length;
			}
			ibv_wr_set_inline_data_list(qpx, wr->num_sge, buf);
		} else if (wr->num_sge == 1) {
			ibv_wr_set_sge(qpx, wr->sg_list[0].lkey,
				       wr->sg_list[0].addr,
				       wr->sg_list[0].length);
		} else {
			ibv_wr_set_sge_list(qpx, wr->num_sge, wr->sg_list);
		}
		if (xrc && (wr->wr_id & srqn_after_data))
			ibv_wr_set_xrc_srqn(qpx, wr->qp_type.xrc.remote_srqn);
	}
	return ibv_wr_complete(qpx);
}

static inline int rc_post_wr_api(struct ibv_qp_ex *qpx, struct ibv_send_wr *wr)
{
	return rc_post_wr_list(qpx, wr, 0);
}

/*
 * ibv_post_send(), or with rc_cfg.ex the ibv_wr_* API; there all of @wr
 * fails together and *bad is @wr then.
 */
static inline int rc_post(struct rc_qp *q, struct ibv_send_wr *wr,
			  struct ibv_send_wr **bad)
{
	int ret;

	if (!q->qpx)
		return ibv_post_send(q->qp, wr, bad);
	ret = rc_post_wr_api(q->qpx, wr);
	if (ret)
		*bad = wr;
	return ret;
}

static inline int rc_post_recv_sgl(struct rc_qp *q, uint64_t wr_id,
				   struct ibv_sge *sge, int n)
{
	struct ibv_recv_wr wr = {
		.wr_id = wr_id, .sg_list = n ? sge : NULL, .num_sge = n,
	};
	struct ibv_recv_wr *bad = NULL;

	return ibv_post_recv(q->qp, &wr, &bad);
}

static inline int rc_post_recv(struct rc_qp *q, uint64_t wr_id,
			       struct rc_buf *b, size_t off, size_t len)
{
	struct ibv_sge sge = {
		.addr = (uintptr_t)(b->p + off), .length = len,
		.lkey = b->mr->lkey,
	};

	return rc_post_recv_sgl(q, wr_id, &sge, 1);
}

static inline int rc_post_send(struct rc_qp *q, uint64_t wr_id,
			       enum ibv_wr_opcode op, struct rc_buf *b,
			       size_t off, size_t len, unsigned int flags,
			       uint64_t raddr, uint32_t rkey)
{
	struct ibv_sge sge = {
		.addr = (uintptr_t)(b->p + off), .length = len,
		.lkey = b->mr->lkey,
	};
	struct ibv_send_wr wr = {
		.wr_id = wr_id, .sg_list = &sge, .num_sge = 1,
		.opcode = op, .send_flags = flags,
	};
	struct ibv_send_wr *bad = NULL;

	wr.wr.rdma.remote_addr = raddr;
	wr.wr.rdma.rkey = rkey;
	return rc_post(q, &wr, &bad);
}

/* ---- one checked transfer ------------------------------------------ */

/* A pair with one buffer on each side. */
struct rc_env {
	struct rc_pair p;
	struct rc_buf ba, bb;
};

/*
 * A pair from @da to @db (@o may be NULL) and a @size buffer on each side,
 * A's with @a_access, B's with @b_access.
 */
static inline void rc_env_create(struct __test_metadata *_metadata,
				 struct rc_env *e, struct rc_dev *da,
				 struct rc_dev *db, const struct rc_opts *o,
				 size_t size, int a_access, int b_access)
{
	memset(e, 0, sizeof(*e));
	rc_pair_create(_metadata, &e->p, da, db, o);
	rc_buf_alloc(_metadata, &e->ba, da->pd, size, a_access);
	rc_buf_alloc(_metadata, &e->bb, db->pd, size, b_access);
}

static inline void rc_env_destroy(struct rc_env *e)
{
	rc_buf_free(&e->ba);
	rc_buf_free(&e->bb);
	rc_pair_destroy(&e->p);
}

struct rc_xfer {
	enum ibv_wr_opcode op;
	size_t len;
	int lsge;		/* requester's local SGEs (gather, or READ scatter) */
	int rsge;		/* responder's receive SGEs (SEND) */
	size_t loff, roff;	/* where the lists start in A's, B's buffer */
	size_t slack;		/* receive capacity beyond len (SEND) */
	unsigned int flags;	/* IBV_SEND_INLINE, IBV_SEND_SOLICITED */
	uint32_t imm;
	uint32_t seed;
	uint64_t wr_id;
};

static inline const char *rc_op_str(enum ibv_wr_opcode op)
{
	switch (op) {
	case IBV_WR_SEND: return "SEND";
	case IBV_WR_SEND_WITH_IMM: return "SEND_IMM";
	case IBV_WR_RDMA_WRITE: return "WRITE";
	case IBV_WR_RDMA_WRITE_WITH_IMM: return "WRITE_IMM";
	case IBV_WR_RDMA_READ: return "READ";
	default: return "?";
	}
}

static inline int rc_op_has_imm(enum ibv_wr_opcode op)
{
	return op == IBV_WR_SEND_WITH_IMM || op == IBV_WR_RDMA_WRITE_WITH_IMM;
}

static inline int rc_op_is_send(enum ibv_wr_opcode op)
{
	return op == IBV_WR_SEND || op == IBV_WR_SEND_WITH_IMM;
}

/*
 * A posts @x to B, both sides' completions are polled and every field
 * checked, and then every byte of the destination range is compared with
 * its image from before the transfer with the expected data applied (so
 * bytes around and between the segments must be untouched too), and the
 * source is checked unchanged.
 */
static inline void rc_xfer(struct __test_metadata *_metadata,
			   struct rc_env *e, const struct rc_xfer *x)
{
	struct rc_qp *qa = &e->p.a, *qb = &e->p.b;
	int is_send = rc_op_is_send(x->op), is_read = x->op == IBV_WR_RDMA_READ;
	int has_recv = is_send || x->op == IBV_WR_RDMA_WRITE_WITH_IMM;
	int is_inline = !!(x->flags & IBV_SEND_INLINE);
	uint32_t seed = x->seed * 7 + 1, bg = seed ^ 0xa5a5a5a5;
	struct rc_sgl lg, rg;
	struct ibv_sge lsge[RC_MAX_SGE], rsge[RC_MAX_SGE];
	struct ibv_send_wr wr, *bad = NULL;
	struct rc_buf *dst;
	uint8_t *img, *src_base, *inl = NULL;
	size_t dst_end, recv_off = 0;
	char what[96];
	int ret;

	snprintf(what, sizeof(what), "%s len %zu lsge %d rsge %d%s",
		 rc_op_str(x->op), x->len, x->lsge, x->rsge,
		 is_inline ? " inline" : "");

	/* Layouts: the local list at A, and B's receive list or region. */
	rc_sgl_layout(&lg, x->loff, x->len, x->lsge, seed);
	ASSERT_LE(lg.end, e->ba.size);
	memset(&rg, 0, sizeof(rg));
	if (is_send) {
		rc_sgl_layout(&rg, x->roff, x->len + x->slack, x->rsge,
			      seed + 1);
		dst_end = rg.end;
	} else {
		dst_end = x->roff + x->len;
		if (x->op == IBV_WR_RDMA_WRITE_WITH_IMM) {
			/* Its receive WQE's buffer must stay untouched. */
			recv_off = dst_end + 9;
			dst_end = recv_off + 40;
		}
	}
	dst_end += 16;
	if (is_read)
		dst_end = lg.end + 16;
	dst = is_read ? &e->ba : &e->bb;
	ASSERT_LE(dst_end, dst->size);

	/* Background in the destination, the stream in the source. */
	rc_fill(dst->p, dst_end, bg, 0);
	if (is_read) {
		rc_fill(e->bb.p + x->roff, x->len, seed, 0);
	} else if (is_inline) {
		/* Inline data need not be registered memory: use the heap. */
		inl = malloc(lg.end + 1);
		ASSERT_NE(NULL, inl);
		rc_sgl_fill(&lg, inl, seed);
	} else {
		rc_sgl_fill(&lg, e->ba.p, seed);
	}
	img = malloc(dst_end);
	ASSERT_NE(NULL, img);
	memcpy(img, dst->p, dst_end);
	if (is_read)
		rc_sgl_expect(&lg, img, x->len, seed);
	else if (is_send)
		rc_sgl_expect(&rg, img, x->len, seed);
	else
		rc_fill(img + x->roff, x->len, seed, 0);

	/* Post the receive, then the request. */
	if (is_send) {
		rc_sgl_to_ibv(&rg, rsge, e->bb.p, e->bb.mr->lkey);
		ASSERT_EQ(0, rc_post_recv_sgl(qb, x->wr_id + 1, rsge, rg.n));
	} else if (has_recv) {
		ASSERT_EQ(0, rc_post_recv(qb, x->wr_id + 1, &e->bb, recv_off,
					  40));
	}
	src_base = inl ? inl : e->ba.p;
	rc_sgl_to_ibv(&lg, lsge, src_base, inl ? 0 : e->ba.mr->lkey);
	memset(&wr, 0, sizeof(wr));
	wr.wr_id = x->wr_id;
	wr.sg_list = lg.n ? lsge : NULL;
	wr.num_sge = lg.n;
	wr.opcode = x->op;
	wr.send_flags = IBV_SEND_SIGNALED | x->flags;
	if (rc_op_has_imm(x->op))
		wr.imm_data = htobe32(x->imm);
	if (!is_send) {
		wr.wr.rdma.remote_addr = (uintptr_t)(e->bb.p + x->roff);
		wr.wr.rdma.rkey = e->bb.mr->rkey;
	}
	ret = rc_post(qa, &wr, &bad);
	ASSERT_EQ(0, ret) {
		TH_LOG("%s: post: %s", what, strerror(ret));
	}
	/* Inline data was copied by the post: scribbling on it is harmless. */
	if (inl)
		memset(inl, 0xee, lg.end + 1);

	rc_expect_wc(_metadata, qa->scq, &(struct rc_wc_exp){
		.wr_id = x->wr_id, .status = IBV_WC_SUCCESS,
		.opcode = is_send ? IBV_WC_SEND :
			  is_read ? IBV_WC_RDMA_READ : IBV_WC_RDMA_WRITE,
		.qp_num = qa->qp->qp_num,
	}, what);
	if (has_recv)
		rc_expect_wc(_metadata, qb->rcq, &(struct rc_wc_exp){
			.wr_id = x->wr_id + 1, .status = IBV_WC_SUCCESS,
			.opcode = is_send ? IBV_WC_RECV :
				  IBV_WC_RECV_RDMA_WITH_IMM,
			.recv = 1, .byte_len = x->len,
			.imm = rc_op_has_imm(x->op),
			.imm_data = htobe32(x->imm),
			.qp_num = qb->qp->qp_num,
		}, what);

	/* Nothing tells a UC requester when its WRITE has landed. */
	if (x->op == IBV_WR_RDMA_WRITE && qa->qp->qp_type == IBV_QPT_UC)
		rc_wait_bytes(dst->p, img, dst_end, RC_TIMEOUT_MS);
	EXPECT_SAME_BYTES(dst->p, img, dst_end, what);
	/* The source is unchanged. */
	if (is_read) {
		free(img);
		img = malloc(x->len + 1);
		ASSERT_NE(NULL, img);
		rc_fill(img, x->len, seed, 0);
		EXPECT_SAME_BYTES(e->bb.p + x->roff, img, x->len, "READ source");
	} else if (!inl) {
		size_t at = 0;
		int i;

		for (i = 0; i < lg.n; i++) {
			free(img);
			img = malloc(lg.s[i].len);
			ASSERT_NE(NULL, img);
			rc_fill(img, lg.s[i].len, seed, at);
			EXPECT_SAME_BYTES(e->ba.p + lg.s[i].off, img,
					  lg.s[i].len, "gather source");
			at += lg.s[i].len;
		}
	}
	free(img);
	free(inl);
}

/*
 * SEND, SEND with immediate, WRITE and WRITE with immediate of @len bytes
 * of inline data, the last three from @nsge buffers; seeds and wr_ids from
 * @k on.
 */
static inline void rc_xfer_inline(struct __test_metadata *_metadata,
				  struct rc_env *e, size_t len, int nsge, int k)
{
	rc_xfer(_metadata, e, &(struct rc_xfer){
		.op = IBV_WR_SEND, .len = len, .lsge = 1,
		.rsge = 1, .loff = 1, .roff = 1,
		.flags = IBV_SEND_INLINE, .seed = 3000 + k,
		.wr_id = 0x30000 + 16 * k,
	});
	rc_xfer(_metadata, e, &(struct rc_xfer){
		.op = IBV_WR_SEND_WITH_IMM, .len = len,
		.lsge = nsge, .rsge = 2, .slack = 3, .loff = 2,
		.roff = 5, .imm = k, .flags = IBV_SEND_INLINE,
		.seed = 3001 + k, .wr_id = 0x30000 + 16 * (k + 1),
	});
	rc_xfer(_metadata, e, &(struct rc_xfer){
		.op = IBV_WR_RDMA_WRITE, .len = len, .lsge = nsge,
		.loff = 3, .roff = 7, .flags = IBV_SEND_INLINE,
		.seed = 3002 + k, .wr_id = 0x30000 + 16 * (k + 2),
	});
	rc_xfer(_metadata, e, &(struct rc_xfer){
		.op = IBV_WR_RDMA_WRITE_WITH_IMM, .len = len,
		.lsge = nsge, .loff = 3, .roff = 7, .imm = ~k,
		.flags = IBV_SEND_INLINE, .seed = 3003 + k,
		.wr_id = 0x30000 + 16 * (k + 3),
	});
}

/*
 * An inline SEND one byte longer than the @max granted is refused when it
 * is posted (by ibv_post_send(), or with rc_cfg.ex by wr_complete), nothing
 * is sent, and the QP carries on.
 */
static inline void rc_inline_too_long(struct __test_metadata *_metadata,
				      struct rc_env *e, size_t max)
{
	struct ibv_send_wr wr, *bad = NULL;
	struct ibv_sge sge;
	uint8_t *buf;

	buf = calloc(1, max + 1);
	ASSERT_NE(NULL, buf);
	sge.addr = (uintptr_t)buf;
	sge.length = max + 1;
	sge.lkey = 0;
	memset(&wr, 0, sizeof(wr));
	wr.wr_id = 0x3ffff;
	wr.sg_list = &sge;
	wr.num_sge = 1;
	wr.opcode = IBV_WR_SEND;
	wr.send_flags = IBV_SEND_INLINE | IBV_SEND_SIGNALED;
	EXPECT_NE(0, rc_post(&e->p.a, &wr, &bad));
	EXPECT_EQ(&wr, bad);
	free(buf);
	EXPECT_CQ_EMPTY(e->p.a.scq, "refused inline send");
	rc_xfer(_metadata, e, &(struct rc_xfer){
		.op = IBV_WR_SEND, .len = 100, .lsge = 1, .rsge = 1,
		.seed = 3999, .wr_id = 0x3fff0,
	});
}

#endif /* RC_LIB_H */
