// SPDX-License-Identifier: GPL-2.0
/*
 * The RC protocol when the wire loses, reorders and duplicates packets,
 * goes down, or never delivers, and QPs that die with traffic in flight.
 *
 * Two vrdma devices on the two ends of a veth pair, the second end in a
 * network namespace of its own, so that every packet crosses the veth; a
 * netem qdisc on both ends mangles the traffic in both directions:
 *
 *   stream             a mixed stream of SEND, SEND with immediate, RDMA
 *                      WRITE (with immediate) and RDMA READ, 1 byte to
 *                      64 KiB, 1-3 SGEs, under 5% loss, 10% reordering
 *                      and 2% duplication; every byte and every CQE of
 *                      both sides is checked, and the counters must show
 *                      the recovery (retransmits, NAKs, duplicates...).
 *                      VRDMA_LOSS_MB sets its size (default 64 MiB;
 *                      make check-long: 1024).  PSNs start near 2^24 and
 *                      wrap.
 *   psn_wrap           the same with small messages, starting just below
 *                      the PSN wrap and crossing it many messages deep
 *   total_loss         nothing arrives: the oldest WR fails with
 *                      IBV_WC_RETRY_EXC_ERR after timeout x (retry_cnt + 1),
 *                      the QP is in error, the rest is flushed in order
 *   bursts             a clean wire with a delay: bursts of WRITEs whose
 *                      doorbells are skipped (no_doorbell), each followed
 *                      by one WRITE posted while the last ACK is being
 *                      completed on the other CPU: it must be sent
 *   link_flap          the link goes down mid-stream and comes back within
 *                      the retry budget: the stream completes byte-exact
 *   link_down          the link stays down longer than the retry budget:
 *                      IBV_WC_RETRY_EXC_ERR, the rest flushed
 *   destroy_in_flight  50 times: QPs destroyed with requests, responses,
 *                      retransmission and RNR timers in flight
 *   kill_in_flight     50 times: a process streaming is killed (SIGKILL);
 *                      its QPs go away with it
 *
 * The kernel must stay quiet meanwhile: scripts/vm-run fails the run on
 * any WARN, KASAN or lockdep report.  The peer QP's timers firing after
 * destroy (rxe's CVE-2023-1281 class of bug) would show up there.
 *
 * Runs as root in the test VM; main() sets everything up and tears it
 * down.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <sched.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>
#include <infiniband/verbs.h>

#define NS		"vrdmaloss"
#define NETDEV0		"rlt0"		/* in the initial namespace */
#define NETDEV1		"rlt1"		/* in NS */
#define IP0		"10.217.0.1"
#define IP1		"10.217.0.2"
#define DEV0		"vrdmalt0"
#define DEV1		"vrdmalt1"
#define MAC0		"02:00:0a:d9:00:01"
#define MAC1		"02:00:0a:d9:00:02"

#include "ns_suite.h"

/* The impairment of the stream; delay makes netem's reordering act. */
#define NETEM_MANGLE	"delay 1ms reorder 10% loss 5% duplicate 2%"

/* netem with @params on both ends, or none for NULL. */
static int netem(const char *params)
{
	if (!params)
		return rc_sh("{ tc qdisc del dev " NETDEV0 " root; "
			     "tc -n " NS " qdisc del dev " NETDEV1 " root; "
			     "} 2>/dev/null; true");
	return rc_shf("tc qdisc replace dev " NETDEV0 " root netem %s && "
		      "tc -n " NS " qdisc replace dev " NETDEV1 " root netem %s",
		      params, params);
}

/* Counter @name of port 1 of @dev as "rdma statistic" shows it, or -1. */
static long long rdma_stat(const char *dev, const char *name)
{
	char cmd[128], buf[8192], key[64], *at;
	long long v = -1;
	size_t n;
	FILE *f;

	snprintf(cmd, sizeof(cmd), "rdma statistic show link %s/1", dev);
	f = popen(cmd, "r");
	if (!f)
		return -1;
	n = fread(buf, 1, sizeof(buf) - 1, f);
	pclose(f);
	buf[n] = 0;
	snprintf(key, sizeof(key), " %s ", name);
	at = strstr(buf, key);
	if (at && sscanf(at + strlen(key), "%lld", &v) != 1)
		v = -1;
	return v;
}

static const char * const counter_names[] = {
	"sent_pkts", "rcvd_pkts", "retransmits", "timeouts", "nak_sent",
	"nak_rcvd", "seq_errors", "duplicate_requests", "duplicate_responses",
	"implied_naks", "rnr_nak_sent", "rnr_nak_rcvd", "acks_sent",
	"acks_coalesced", "retry_exceeded", "rnr_retry_exceeded", "tx_errors",
	"malformed", "icrc_errors",
};

#define NCOUNTERS (sizeof(counter_names) / sizeof(counter_names[0]))

struct counters {
	long long v[2][NCOUNTERS];
};

static void counters_read(struct counters *c)
{
	unsigned int i;

	for (i = 0; i < NCOUNTERS; i++) {
		c->v[0][i] = rc_hw_counter(DEV0, counter_names[i]);
		c->v[1][i] = rc_hw_counter(DEV1, counter_names[i]);
	}
}

/* The increase of counter @name on device @d (0, 1) since @before. */
static long long counters_delta(const struct counters *before, int d,
				const char *name)
{
	struct counters now;
	unsigned int i;

	for (i = 0; i < NCOUNTERS; i++)
		if (!strcmp(counter_names[i], name))
			break;
	if (i == NCOUNTERS)
		return -1;
	now.v[d][i] = rc_hw_counter(d ? DEV1 : DEV0, name);
	return now.v[d][i] - before->v[d][i];
}

static void counters_log(struct __test_metadata *_metadata,
			 const struct counters *before)
{
	struct counters now;
	char line[1024];
	unsigned int i;
	int d, n;

	counters_read(&now);
	for (d = 0; d < 2; d++) {
		n = snprintf(line, sizeof(line), "%s:", d ? DEV1 : DEV0);
		for (i = 0; i < NCOUNTERS && n < (int)sizeof(line); i++)
			if (now.v[d][i] != before->v[d][i])
				n += snprintf(line + n, sizeof(line) - n,
					      " %s %lld", counter_names[i],
					      now.v[d][i] - before->v[d][i]);
		TH_LOG("%s", line);
	}
}

/* ---- fixture ---------------------------------------------------------- */

FIXTURE(loss) {
	struct rc_dev d0, d1;
	struct rc_env e;
	struct counters before;	/* logged at the end if the test fails */
};

FIXTURE_SETUP(loss)
{
	memset(&self->e, 0, sizeof(self->e));
	ASSERT_EQ(0, netem(NULL));
	ASSERT_EQ(0, ns_static_neigh());
	counters_read(&self->before);
	rc_dev_open(_metadata, &self->d0, 0);
	rc_dev_open(_metadata, &self->d1, 1);
}

FIXTURE_TEARDOWN(loss)
{
	if (!_metadata->passed)
		counters_log(_metadata, &self->before);
	netem(NULL);
	rc_sh("ip link set " NETDEV0 " up");
	/* bursts's steering, if it ended early. */
	rc_sh("echo 0 > /sys/class/net/" NETDEV0 "/queues/rx-0/rps_cpus");
	rc_env_destroy(&self->e);
	rc_dev_close(&self->d1);
	rc_dev_close(&self->d0);
}

/*
 * A on vrdmalt0, B on vrdmalt1, connected with A's requests starting at
 * PSN @a_psn and B's at @b_psn, and a buffer of @asz, @bsz bytes per side.
 */
static void env_create(struct __test_metadata *_metadata,
		       FIXTURE_DATA(loss) *self, struct rc_env *e,
		       const struct rc_opts *o, uint32_t a_psn, uint32_t b_psn,
		       size_t asz, size_t bsz)
{
	struct rc_opts oo = *o;

	memset(e, 0, sizeof(*e));
	oo.no_connect = 1;
	rc_pair_create(_metadata, &e->p, &self->d0, &self->d1, &oo);
	e->p.a.sq_psn = e->p.b.rq_psn = a_psn;
	e->p.b.sq_psn = e->p.a.rq_psn = b_psn;
	rc_qp_connect(_metadata, &e->p.a, &e->p.b, e->p.o.access);
	rc_qp_connect(_metadata, &e->p.b, &e->p.a, e->p.o.access);
	rc_buf_alloc(_metadata, &e->ba, self->d0.pd, asz, RC_ACCESS_ALL);
	rc_buf_alloc(_metadata, &e->bb, self->d1.pd, bsz, RC_ACCESS_ALL);
}

/* ---- a mixed, checked stream ------------------------------------------ */

/*
 * A is the requester of every message; B posts receives.  The buffers are
 * reused cyclically, so any amount of data fits in a few MiB:
 *
 *   A: ST_SLOTS source slots (SEND, WRITE), ST_SLOTS READ destinations
 *   B: ST_RECVS receive slots, ST_SLOTS WRITE targets, ST_SLOTS READ sources
 *
 * At most ST_SLOTS messages are in flight and A's completions come in
 * order, so a slot is free again when its turn comes.  Message k carries
 * the data pattern k (st_word()), so every byte says which message and
 * offset it belongs to.
 */
#define ST_MAXMSG	(64 * 1024)
#define ST_STRIDE	(ST_MAXMSG + 64)
#define ST_SLOTS	32
#define ST_RECVS	128
#define ST_A_SRC	0
#define ST_A_RDST	((size_t)ST_SLOTS * ST_STRIDE)
#define ST_A_SIZE	((size_t)2 * ST_SLOTS * ST_STRIDE)
#define ST_B_RECV	0
#define ST_B_WDST	((size_t)ST_RECVS * ST_STRIDE)
#define ST_B_RSRC	(ST_B_WDST + (size_t)ST_SLOTS * ST_STRIDE)
#define ST_B_SIZE	(ST_B_RSRC + (size_t)ST_SLOTS * ST_STRIDE)

static inline uint64_t st_mix(uint64_t x)
{
	x ^= x >> 31;
	x *= 0x9e3779b97f4a7c15ull;
	x ^= x >> 29;
	x *= 0xbf58476d1ce4e5b9ull;
	x ^= x >> 32;
	return x;
}

/* Word @i of message @k's data. */
static inline uint64_t st_word(uint32_t k, uint64_t i)
{
	return st_mix(((uint64_t)k << 36) ^ i ^ 0x5bd1e995ull);
}

static void st_fill(uint8_t *p, size_t len, uint32_t k)
{
	size_t i, n = len / 8;
	uint64_t w;

	for (i = 0; i < n; i++) {
		w = st_word(k, i);
		memcpy(p + 8 * i, &w, 8);
	}
	if (len % 8) {
		w = st_word(k, n);
		memcpy(p + 8 * n, &w, len % 8);
	}
}

/* -1 if @p holds the first @len bytes of message @k, else the offset. */
static long st_check(const uint8_t *p, size_t len, uint32_t k)
{
	size_t i, j, n = len / 8;
	uint64_t w;

	for (i = 0; i <= n; i++) {
		size_t m = i < n ? 8 : len % 8;

		w = st_word(k, i);
		if (m && memcmp(p + 8 * i, &w, m)) {
			for (j = 0; j < m; j++)
				if (p[8 * i + j] != ((uint8_t *)&w)[j])
					return 8 * i + j;
		}
	}
	return -1;
}

struct st_msg {
	uint32_t k;
	enum ibv_wr_opcode op;
	uint32_t len;
	size_t loff;		/* in A's buffer */
	size_t roff;		/* in B's buffer (WRITE target, READ source) */
};

struct st_recv {
	uint32_t k;
	enum ibv_wr_opcode op;
	uint32_t len;
};

struct st_opts {
	size_t bytes;		/* to move */
	uint32_t max_len;	/* per message, <= ST_MAXMSG */
	/* Called once, when half of the bytes have been posted. */
	void (*midway)(void *arg);
	void *arg;
};

struct st_result {
	size_t bytes;
	uint32_t msgs;
	double secs;
};

/* Message @k's operation and length, from @k alone. */
static void st_plan(struct st_msg *m, uint32_t k, uint32_t max_len)
{
	uint64_t r = st_mix(k * 0x2545f4914f6cdd1dull + 7);
	uint32_t pick = r % 100;

	m->k = k;
	if (pick < 25)
		m->op = IBV_WR_SEND;
	else if (pick < 35)
		m->op = IBV_WR_SEND_WITH_IMM;
	else if (pick < 60)
		m->op = IBV_WR_RDMA_WRITE;
	else if (pick < 70)
		m->op = IBV_WR_RDMA_WRITE_WITH_IMM;
	else
		m->op = IBV_WR_RDMA_READ;
	r >>= 8;
	switch (r % 10) {
	case 0: case 1: case 2:		/* small: one packet */
		m->len = 1 + (r >> 4) % 256;
		break;
	case 3: case 4: case 5: case 6:	/* a few packets */
		m->len = 257 + (r >> 4) % 8192;
		break;
	default:			/* many */
		m->len = 8192 + (r >> 4) % (max_len - 8192 + 1);
		break;
	}
	if (m->len > max_len)
		m->len = max_len;
}

/* Cut [addr, addr + len) into 1..3 SGEs at points picked by @k. */
static int st_sges(struct ibv_sge *sge, uint8_t *addr, uint32_t len,
		   uint32_t lkey, uint32_t k)
{
	uint64_t r = st_mix(k + 0x1234567);
	int n = 1 + r % 3, i;
	uint32_t at = 0, cut;

	if (len < 3)
		n = 1;
	for (i = 0; i < n; i++) {
		cut = i == n - 1 ? len : at + (r >> (8 + 8 * i)) % (len - at);
		sge[i].addr = (uintptr_t)(addr + at);
		sge[i].length = cut - at;
		sge[i].lkey = lkey;
		at = cut;
	}
	return n;
}

static int st_post_recv(struct rc_env *e, uint32_t slot)
{
	struct ibv_sge sge[3];
	struct ibv_recv_wr wr = { .wr_id = slot, .sg_list = sge };
	struct ibv_recv_wr *bad;

	wr.num_sge = st_sges(sge, e->bb.p + ST_B_RECV +
			     (size_t)slot * ST_STRIDE, ST_MAXMSG,
			     e->bb.mr->lkey, slot);
	return ibv_post_recv(e->p.b.qp, &wr, &bad);
}

static int st_post(struct rc_env *e, struct st_msg *m)
{
	uint32_t slot = m->k % ST_SLOTS;
	size_t skew = (m->k * 7) % 61;	/* unaligned, differently each time */
	struct ibv_sge sge[3];
	struct ibv_send_wr wr, *bad;

	memset(&wr, 0, sizeof(wr));
	wr.wr_id = m->k;
	wr.opcode = m->op;
	wr.send_flags = IBV_SEND_SIGNALED;
	wr.sg_list = sge;
	if (m->op == IBV_WR_RDMA_READ) {
		m->loff = ST_A_RDST + slot * ST_STRIDE + skew;
		m->roff = ST_B_RSRC + slot * ST_STRIDE + 63 - skew;
		st_fill(e->bb.p + m->roff, m->len, m->k);
		memset(e->ba.p + m->loff, 0, m->len);
	} else {
		m->loff = ST_A_SRC + slot * ST_STRIDE + skew;
		m->roff = ST_B_WDST + slot * ST_STRIDE + 63 - skew;
		st_fill(e->ba.p + m->loff, m->len, m->k);
	}
	wr.num_sge = st_sges(sge, e->ba.p + m->loff, m->len, e->ba.mr->lkey,
			     m->k);
	if (rc_op_has_imm(m->op))
		wr.imm_data = htobe32(m->k);
	wr.wr.rdma.remote_addr = (uintptr_t)e->bb.p + m->roff;
	wr.wr.rdma.rkey = e->bb.mr->rkey;
	return ibv_post_send(e->p.a.qp, &wr, &bad);
}

static enum ibv_wc_opcode st_wc_opcode(enum ibv_wr_opcode op)
{
	switch (op) {
	case IBV_WR_RDMA_WRITE:
	case IBV_WR_RDMA_WRITE_WITH_IMM:
		return IBV_WC_RDMA_WRITE;
	case IBV_WR_RDMA_READ:
		return IBV_WC_RDMA_READ;
	default:
		return IBV_WC_SEND;
	}
}

#define ST_INFLIGHT	ST_SLOTS
#define ST_STALL_MS	30000

/* Where message @m's data ends up. */
static const uint8_t *st_dest(struct rc_env *e, const struct st_msg *m)
{
	if (m->op == IBV_WR_RDMA_READ)
		return e->ba.p + m->loff;
	if (m->op == IBV_WR_RDMA_WRITE || m->op == IBV_WR_RDMA_WRITE_WITH_IMM)
		return e->bb.p + m->roff;
	return NULL;	/* a receive slot: checked at its completion */
}

/* Check B's receive completions; returns the number of errors. */
static int st_recv_cqes(struct __test_metadata *_metadata, struct rc_env *e,
			struct st_recv *rq, uint32_t *rhead, uint32_t rtail,
			int *seen)
{
	struct ibv_wc wc[16];
	int n, j, errors = 0;

	n = ibv_poll_cq(e->p.b.rcq, 16, wc);
	EXPECT_LE(0, n);
	for (j = 0; j < n; j++) {
		struct st_recv *r = &rq[*rhead % ST_INFLIGHT];
		long bad;

		EXPECT_NE(*rhead, rtail) {
			TH_LOG("a receive completion for no message");
			return errors + 1;
		}
		(*rhead)++;
		EXPECT_EQ(IBV_WC_SUCCESS, wc[j].status) {
			TH_LOG("recv of message %u: %s", r->k,
			       ibv_wc_status_str(wc[j].status));
			errors++;
			continue;
		}
		EXPECT_EQ(e->p.b.qp->qp_num, wc[j].qp_num);
		EXPECT_EQ(r->len, wc[j].byte_len) {
			TH_LOG("message %u: byte_len", r->k);
			errors++;
		}
		EXPECT_EQ(r->op == IBV_WR_SEND ? 0 : IBV_WC_WITH_IMM,
			  wc[j].wc_flags & IBV_WC_WITH_IMM);
		if (r->op != IBV_WR_SEND)
			EXPECT_EQ(htobe32(r->k), wc[j].imm_data) {
				TH_LOG("message %u: imm_data", r->k);
				errors++;
			}
		EXPECT_GT(ST_RECVS, wc[j].wr_id) {
			return errors + 1;
		}
		if (r->op == IBV_WR_RDMA_WRITE_WITH_IMM) {
			EXPECT_EQ(IBV_WC_RECV_RDMA_WITH_IMM, wc[j].opcode);
		} else {
			EXPECT_EQ(IBV_WC_RECV, wc[j].opcode);
			bad = st_check(e->bb.p + ST_B_RECV +
				       (size_t)wc[j].wr_id * ST_STRIDE,
				       r->len, r->k);
			EXPECT_EQ(-1, bad) {
				TH_LOG("SEND %u (%u bytes): byte %ld wrong",
				       r->k, r->len, bad);
				errors++;
			}
		}
		EXPECT_EQ(0, st_post_recv(e, wc[j].wr_id));
	}
	*seen += n > 0 ? n : 0;
	return errors;
}

/*
 * Move o->bytes from A to B (and back, for READs) and check everything:
 * both sides' completions, in order, every field, every byte, and that no
 * late packet changes data already checked.
 */
static void st_run(struct __test_metadata *_metadata, struct rc_env *e,
		   const struct st_opts *o, struct st_result *res)
{
	struct st_msg fl[ST_INFLIGHT];	/* A's WRs in flight, ring by k */
	struct st_recv rq[ST_INFLIGHT];	/* B's receives to come, in order */
	uint32_t next = 0, head = 0, rhead = 0, rtail = 0;
	size_t posted = 0, done = 0;
	int midway_done = !o->midway, errors = 0;
	double start = rc_now_ms(), last = start;
	struct ibv_wc wc[16];
	uint32_t i;
	int n, j, seen;

	memset(res, 0, sizeof(*res));
	for (i = 0; i < ST_RECVS; i++)
		ASSERT_EQ(0, st_post_recv(e, i));

	while ((posted < o->bytes || head != next || rhead != rtail) &&
	       errors < 5) {
		/* Keep ST_INFLIGHT messages in flight. */
		while (posted < o->bytes && next - head < ST_INFLIGHT) {
			struct st_msg *m = &fl[next % ST_INFLIGHT];
			const uint8_t *dst;
			long bad;

			/*
			 * Message next - ST_SLOTS used the same slots and is
			 * complete: its data must still be there, untouched
			 * by any late duplicate.
			 */
			dst = next >= ST_SLOTS ? st_dest(e, m) : NULL;
			bad = dst ? st_check(dst, m->len, m->k) : -1;
			EXPECT_EQ(-1, bad) {
				TH_LOG("%s %u (%u bytes) changed after its "
				       "completion, at byte %ld",
				       rc_op_str(m->op), m->k, m->len, bad);
				errors++;
			}
			st_plan(m, next, o->max_len);
			ASSERT_EQ(0, st_post(e, m)) {
				TH_LOG("post of message %u failed", next);
			}
			if (m->op == IBV_WR_SEND ||
			    m->op == IBV_WR_SEND_WITH_IMM ||
			    m->op == IBV_WR_RDMA_WRITE_WITH_IMM) {
				rq[rtail % ST_INFLIGHT] = (struct st_recv){
					.k = m->k, .op = m->op, .len = m->len,
				};
				rtail++;
			}
			posted += m->len;
			next++;
			if (!midway_done && posted >= o->bytes / 2) {
				midway_done = 1;
				o->midway(o->arg);
			}
		}

		seen = 0;
		errors += st_recv_cqes(_metadata, e, rq, &rhead, rtail, &seen);

		/* A's completions, in posting order. */
		n = ibv_poll_cq(e->p.a.scq, 16, wc);
		ASSERT_LE(0, n);
		for (j = 0; j < n; j++) {
			struct st_msg *m = &fl[head % ST_INFLIGHT];
			const uint8_t *dst = st_dest(e, m);
			long bad;

			ASSERT_NE(head, next) {
				TH_LOG("a completion for no WR");
			}
			EXPECT_EQ(m->k, wc[j].wr_id) {
				TH_LOG("completion out of order");
				errors++;
			}
			EXPECT_EQ(IBV_WC_SUCCESS, wc[j].status) {
				TH_LOG("message %u (%s, %u bytes): %s", m->k,
				       rc_op_str(m->op), m->len,
				       ibv_wc_status_str(wc[j].status));
				errors++;
			}
			EXPECT_EQ(e->p.a.qp->qp_num, wc[j].qp_num);
			EXPECT_EQ(st_wc_opcode(m->op), wc[j].opcode);
			bad = dst ? st_check(dst, m->len, m->k) : -1;
			EXPECT_EQ(-1, bad) {
				TH_LOG("%s %u (%u bytes): byte %ld wrong",
				       rc_op_str(m->op), m->k, m->len, bad);
				errors++;
			}
			done += m->len;
			head++;
		}
		if (n > 0 || seen)
			last = rc_now_ms();
		ASSERT_LT(rc_now_ms() - last, (double)ST_STALL_MS * rc_cfg.slow) {
			TH_LOG("stalled: %u of %u WRs completed, %u of %u "
			       "receives, %zu bytes", head, next, rhead, rtail,
			       done);
		}
		if (!n && !seen)
			usleep(20);
	}
	ASSERT_EQ(0, errors);
	res->bytes = done;
	res->msgs = next;
	res->secs = (rc_now_ms() - start) / 1000;
}

/*
 * The stream's size: VRDMA_LOSS_MB MiB, by default 64 MiB, or less on a
 * kernel VRDMA_TEST_SLOW times slower (make check-debug).
 */
static size_t loss_bytes(void)
{
	const char *s = getenv("VRDMA_LOSS_MB");
	long mb = s ? atol(s) : 0;

	if (mb <= 0)
		mb = 64 / rc_cfg.slow > 4 ? 64 / rc_cfg.slow : 4;
	return (size_t)mb << 20;
}

/* 4.096 us x 2^t, as the driver rounds it (jiffies, HZ 250 worst case). */
static double timeout_ms(int t)
{
	return 4.096e-3 * (1 << t) + 4;
}

/* The calibration: a window's worth of MTU-sized WRITEs, and their answers. */
#define CAL_PKTS	128

/*
 * The QP timeout for a stream under loss: @base, or longer where this
 * kernel and host are slow.  The requester keeps a window of requests in
 * flight, and their ACKs come back only as fast as the peer takes them in;
 * a timeout shorter than that fires with nothing lost and spends the
 * retries (the debug kernel of make check-debug on a loaded host runs the
 * data path far more than VRDMA_TEST_SLOW times slower).  So: four times
 * what CAL_PKTS packets of WRITEs take here, lossless, on a pair of their
 * own.
 */
static int loss_timeout(struct __test_metadata *_metadata,
			FIXTURE_DATA(loss) *self, int base)
{
	size_t mtu = 128u << self->d0.port.active_mtu;
	size_t len = 16 * mtu, size = CAL_PKTS * mtu;
	struct ibv_wc wc[CAL_PKTS / 16];
	struct rc_opts o = { 0 };
	int i, n = CAL_PKTS / 16, t = base;
	struct rc_env e;
	double ms;

	env_create(_metadata, self, &e, &o, 0x10, 0x20, size, size);
	ms = rc_now_ms();
	for (i = 0; i < n; i++)
		ASSERT_EQ(0, rc_post_send(&e.p.a, i, IBV_WR_RDMA_WRITE, &e.ba,
					  i * len, len, IBV_SEND_SIGNALED,
					  (uintptr_t)e.bb.p + i * len,
					  e.bb.mr->rkey));
	ASSERT_EQ(n, rc_poll(e.p.a.scq, wc, n, RC_TIMEOUT_MS));
	ms = rc_now_ms() - ms;
	for (i = 0; i < n; i++)
		ASSERT_EQ(IBV_WC_SUCCESS, wc[i].status);
	rc_env_destroy(&e);
	while (t < 24 && timeout_ms(t) < 4 * ms)
		t++;
	TH_LOG("%d packets of WRITEs in %.1f ms: QP timeout %d (%.0f ms)",
	       CAL_PKTS, ms, t, timeout_ms(t));
	return t;
}

static void stream_under_loss(struct __test_metadata *_metadata,
			      FIXTURE_DATA(loss) *self, size_t bytes,
			      uint32_t max_len, uint32_t psn)
{
	struct rc_opts o = { 0 };
	struct st_opts so = {
		.bytes = bytes, .max_len = max_len,
	};
	struct counters before;
	struct st_result res;

	o.max_recv_wr = ST_RECVS;
	o.max_send_sge = o.max_recv_sge = 3;
	o.timeout = loss_timeout(_metadata, self, rc_slow_timeout(13));
	/* B's PSN is 24 bits too: ib_core masks a wider one with a warning. */
	env_create(_metadata, self, &self->e, &o, psn, (psn + 0x80) & 0xffffff,
		   ST_A_SIZE, ST_B_SIZE);
	ASSERT_EQ(0, netem(NETEM_MANGLE));
	counters_read(&before);
	st_run(_metadata, &self->e, &so, &res);
	TH_LOG("%zu bytes in %u messages, %.1f s, %.2f MB/s", res.bytes,
	       res.msgs, res.secs, res.bytes / res.secs / 1e6);
	counters_log(_metadata, &before);
	ASSERT_GE(res.bytes, bytes);

	/* The wire did lose, reorder and duplicate, and it was repaired. */
	EXPECT_LT(0, counters_delta(&before, 0, "retransmits"));
	EXPECT_LT(0, counters_delta(&before, 0, "nak_rcvd"));
	EXPECT_LT(0, counters_delta(&before, 1, "nak_sent"));
	EXPECT_LT(0, counters_delta(&before, 1, "seq_errors"));
	EXPECT_LT(0, counters_delta(&before, 1, "duplicate_requests"));
	/* One NAK per gap, not one per packet out of sequence. */
	EXPECT_LT(counters_delta(&before, 1, "nak_sent"),
		  counters_delta(&before, 1, "seq_errors"));
	EXPECT_EQ(0, counters_delta(&before, 0, "retry_exceeded"));
	EXPECT_EQ(IBV_QPS_RTS, rc_qp_state(self->e.p.a.qp));
	EXPECT_EQ(IBV_QPS_RTS, rc_qp_state(self->e.p.b.qp));
}

TEST_F_TIMEOUT(loss, stream, 4 * 3600)
{
	stream_under_loss(_metadata, self, loss_bytes(), ST_MAXMSG, 0xfffe00);
}

/* Small messages, many packets around the wrap of the 24-bit PSN. */
TEST_F_TIMEOUT(loss, psn_wrap, 600)
{
	stream_under_loss(_metadata, self, 2 << 20, 12000, 0xfffff0);
}

/* ---- nothing arrives ---------------------------------------------------- */

/*
 * The WRs posted into a dead wire: the first fails with RETRY_EXC_ERR once
 * its retries are spent, about timeout x (retry_cnt + 1) after it was
 * sent, the others are flushed in order.
 */
static void expect_retry_exceeded(struct __test_metadata *_metadata,
				  struct rc_env *e, int nwr, double t0,
				  double budget_ms)
{
	struct ibv_wc wc;
	double took;
	int i;

	ASSERT_EQ(1, rc_poll(e->p.a.scq, &wc, 1,
			     (int)(budget_ms * 2) + RC_TIMEOUT_MS));
	took = rc_now_ms() - t0;
	EXPECT_EQ(0, wc.wr_id);
	EXPECT_EQ(IBV_WC_RETRY_EXC_ERR, wc.status) {
		TH_LOG("status %s", ibv_wc_status_str(wc.status));
	}
	EXPECT_EQ(e->p.a.qp->qp_num, wc.qp_num);
	TH_LOG("RETRY_EXC_ERR after %.0f ms (budget %.0f ms)", took,
	       budget_ms);
	EXPECT_GE(took, budget_ms * 0.9);
	EXPECT_LE(took, budget_ms * 1.5 * rc_cfg.slow + 1000);
	for (i = 1; i < nwr; i++) {
		ASSERT_EQ(1, rc_poll(e->p.a.scq, &wc, 1, RC_TIMEOUT_MS));
		EXPECT_EQ((uint64_t)i, wc.wr_id);
		EXPECT_EQ(IBV_WC_WR_FLUSH_ERR, wc.status) {
			TH_LOG("WR %d: %s", i, ibv_wc_status_str(wc.status));
		}
	}
	EXPECT_CQ_EMPTY(e->p.a.scq, "after the flush");
	EXPECT_EQ(IBV_QPS_ERR, rc_qp_state(e->p.a.qp));
}

/* SEND, WRITE, READ, SEND: one of each kind behind the first. */
static void post_four(struct __test_metadata *_metadata, struct rc_env *e)
{
	static const enum ibv_wr_opcode ops[] = {
		IBV_WR_SEND, IBV_WR_RDMA_WRITE, IBV_WR_RDMA_READ, IBV_WR_SEND,
	};
	int i;

	for (i = 0; i < 4; i++)
		ASSERT_EQ(0, rc_post_send(&e->p.a, i, ops[i], &e->ba,
					  i * 8192, 5000, IBV_SEND_SIGNALED,
					  (uintptr_t)e->bb.p + i * 8192,
					  e->bb.mr->rkey));
}

TEST_F_TIMEOUT(loss, total_loss, 120)
{
	struct rc_opts o = { .retry_cnt = 3 };
	struct rc_env *e = &self->e;
	struct counters before;
	double t0, budget;
	struct ibv_wc wc;
	int i;

	o.timeout = rc_slow_timeout(15);
	budget = timeout_ms(o.timeout) * (o.retry_cnt + 1);
	env_create(_metadata, self, e, &o, 0xfffffe, 0x10, 64 << 10,
		   64 << 10);
	for (i = 0; i < 4; i++)
		ASSERT_EQ(0, rc_post_recv(&e->p.b, 100 + i, &e->bb, 32768,
					  8192));
	ASSERT_EQ(0, netem("loss 100%"));
	counters_read(&before);
	t0 = rc_now_ms();
	post_four(_metadata, e);
	expect_retry_exceeded(_metadata, e, 4, t0, budget);
	counters_log(_metadata, &before);
	/* The first try and retry_cnt retries, each ended by a timeout. */
	EXPECT_EQ(o.retry_cnt + 1, counters_delta(&before, 0, "timeouts"));
	EXPECT_EQ(o.retry_cnt, counters_delta(&before, 0, "retransmits"));
	EXPECT_EQ(1, counters_delta(&before, 0, "retry_exceeded"));
	/* What users see (netlink) is what sysfs shows. */
	EXPECT_EQ(rc_hw_counter(DEV0, "timeouts"), rdma_stat(DEV0, "timeouts"));
	EXPECT_EQ(rc_hw_counter(DEV0, "retry_exceeded"),
		  rdma_stat(DEV0, "retry_exceeded"));
	/* B saw nothing, and is fine. */
	EXPECT_EQ(0, counters_delta(&before, 1, "rcvd_pkts"));
	EXPECT_EQ(IBV_QPS_RTS, rc_qp_state(e->p.b.qp));
	/* Posting to a QP in error: flushed at once. */
	ASSERT_EQ(0, rc_post_send(&e->p.a, 9, IBV_WR_SEND, &e->ba, 0, 10,
				  IBV_SEND_SIGNALED, 0, 0));
	ASSERT_EQ(1, rc_poll(e->p.a.scq, &wc, 1, RC_TIMEOUT_MS));
	EXPECT_EQ(9, wc.wr_id);
	EXPECT_EQ(IBV_WC_WR_FLUSH_ERR, wc.status);
}

/* ---- the doorbell skipped: a clean wire ---------------------------------- */

/*
 * With @on, A's side of the wire receives on CPU 0 (RPS), and this process
 * runs on CPU 1: the ACKs are then completed, and the SQ read again, on
 * one CPU while the test posts on the other.  Off: back to any CPU.  A
 * VM of one CPU keeps everything on it, which still tests the path.
 */
static void steer_acks(struct __test_metadata *_metadata, int on)
{
	long cpus = sysconf(_SC_NPROCESSORS_ONLN);
	cpu_set_t set;

	if (cpus < 2)
		return;
	CPU_ZERO(&set);
	if (on)
		CPU_SET(1, &set);
	else
		while (cpus--)
			CPU_SET(cpus, &set);
	ASSERT_EQ(0, sched_setaffinity(0, sizeof(set), &set));
	ASSERT_EQ(0, rc_shf("echo %d > /sys/class/net/" NETDEV0
			    "/queues/rx-0/rps_cpus", on));
}

#define BURST_MIN	8
#define BURST_MAX	24
#define BURST_ROUNDS	150	/* per burst size */
#define BURST_LEN	64

/*
 * @n WRITEs of B's buffer from A's, as fast as they post, then their @n
 * completions, spinning, in order; *@next is the wr_id of the first.
 */
static void write_burst(struct __test_metadata *_metadata, struct rc_env *e,
			int n, uint64_t *next)
{
	double deadline;
	struct ibv_wc wc[BURST_MAX];
	int i, got, r;

	for (i = 0; i < n; i++)
		ASSERT_EQ(0, rc_post_send(&e->p.a, *next + i,
					  IBV_WR_RDMA_WRITE, &e->ba,
					  i * BURST_LEN, BURST_LEN, 0,
					  (uintptr_t)e->bb.p + i * BURST_LEN,
					  e->bb.mr->rkey));
	deadline = rc_now_ms() + RC_TIMEOUT_MS * rc_cfg.slow;
	for (got = 0; got < n && rc_now_ms() < deadline; got += r) {
		r = rc_poll_cq(e->p.a.scq, n - got, wc + got);
		ASSERT_LE(0, r);
	}
	ASSERT_EQ(n, got) {
		TH_LOG("%d WRITEs from wr_id %llu: %d completions", n,
		       (unsigned long long)*next, got);
	}
	for (i = 0; i < n; i++)
		rc_wc_check(_metadata, &wc[i], &(struct rc_wc_exp){
			.wr_id = *next + i, .status = IBV_WC_SUCCESS,
			.opcode = IBV_WC_RDMA_WRITE,
			.qp_num = e->p.a.qp->qp_num,
		}, "WRITE");
	*next += n;
}

/*
 * vrdma's provider skips the doorbell while the kernel says it will read
 * the SQ again by itself (the SQ ring's no_doorbell: WQEs held back, or
 * VRDMA_QUIET_DEPTH, 16, RC messages awaiting answers).  The ACK that
 * completes the last of them ends that: the run that completes it clears
 * the word, then reads the SQ's producer index once more.  A WQE posted
 * just then, its doorbell skipped, is sent by that read, and by nothing
 * else: no message is left in flight to run the requester again.
 *
 * Each round: a burst of 8 to 24 WRITEs (crossing the threshold), all in
 * flight before the first ACK is back (netem's delay); the moment the
 * last completion is seen, one more WRITE, the probe, and its completion.
 * The ACKs are completed on the other CPU (steer_acks()), so the probe is
 * posted while that run goes on.  A probe left behind never completes, and
 * the deadline fails the test.  The window opens where one coalesced ACK
 * completes 16 or more messages at once, i.e. here the bursts of 16 (in
 * larger ones the last WRITEs leave later, and an earlier ACK clears the
 * word): with the re-read removed, a probe was stranded within their
 * first rounds in 4 runs of 4 (with 2 ms of delay, 2 of 3).
 */
TEST_F_TIMEOUT(loss, bursts, 300)
{
	struct rc_opts o = { .max_send_wr = BURST_MAX, .send_cqe = BURST_MAX,
			     .sq_sig_all = 1 };
	long long doorbells = rc_hw_counter(DEV0, "doorbells");
	struct rc_env *e = &self->e;
	uint64_t next = 0;
	int burst, round;

	ASSERT_LE(0, doorbells);
	env_create(_metadata, self, e, &o, 0x100, 0x200,
		   BURST_MAX * BURST_LEN, BURST_MAX * BURST_LEN);
	rc_fill(e->ba.p, e->ba.size, 9400, 0);
	rc_fill(e->bb.p, e->bb.size, 9401, 0);
	ASSERT_EQ(0, netem("delay 1ms"));
	steer_acks(_metadata, 1);
	for (burst = BURST_MIN; burst <= BURST_MAX; burst++)
		for (round = 0; round < BURST_ROUNDS; round++) {
			write_burst(_metadata, e, burst, &next);
			write_burst(_metadata, e, 1, &next);
		}
	steer_acks(_metadata, 0);
	EXPECT_SAME_BYTES(e->bb.p, e->ba.p, e->bb.size, "B's buffer");
	/* Some doorbells were skipped, or this tested nothing. */
	doorbells = rc_hw_counter(DEV0, "doorbells") - doorbells;
	TH_LOG("%llu WRITEs, %lld doorbells", (unsigned long long)next,
	       doorbells);
	EXPECT_GT((long long)next, doorbells);
}

/* ---- the link goes down ------------------------------------------------- */

struct flap {
	int down_ms;
	pid_t pid;
};

/*
 * Take the link down now, and up again f->down_ms later from a child, while
 * the stream goes on.
 */
static void flap_start(void *arg)
{
	struct flap *f = arg;

	if (rc_sh("ip link set " NETDEV0 " down"))
		return;
	f->pid = fork();
	if (f->pid == 0) {
		char cmd[128];

		snprintf(cmd, sizeof(cmd), "sleep %.3f; ip link set " NETDEV0
			 " up", f->down_ms / 1000.0);
		execl("/bin/sh", "sh", "-c", cmd, (char *)NULL);
		_exit(127);
	}
}

static int flap_wait(struct flap *f)
{
	int status;

	if (f->pid <= 0 || waitpid(f->pid, &status, 0) != f->pid)
		return -1;
	return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

/* Down for a second, within a retry budget of 8 x 537 ms: no error. */
TEST_F_TIMEOUT(loss, link_flap, 600)
{
	struct rc_opts o = { .retry_cnt = 7 };
	struct flap f = { .down_ms = 1000 };
	struct st_opts so = {
		.bytes = 16 << 20, .max_len = ST_MAXMSG,
		.midway = flap_start, .arg = &f,
	};
	struct counters before;
	struct st_result res;

	o.max_recv_wr = ST_RECVS;
	o.max_send_sge = o.max_recv_sge = 3;
	o.timeout = rc_slow_timeout(17);
	env_create(_metadata, self, &self->e, &o, 0x100, 0x200, ST_A_SIZE,
		   ST_B_SIZE);
	counters_read(&before);
	st_run(_metadata, &self->e, &so, &res);
	ASSERT_EQ(0, flap_wait(&f));
	TH_LOG("%zu bytes in %u messages, %.1f s", res.bytes, res.msgs,
	       res.secs);
	counters_log(_metadata, &before);
	/* Packets were lost to the dead link, and recovered by timeouts. */
	EXPECT_LT(0, counters_delta(&before, 0, "tx_errors"));
	EXPECT_LT(0, counters_delta(&before, 0, "timeouts"));
	EXPECT_LT(0, counters_delta(&before, 0, "retransmits"));
	EXPECT_EQ(0, counters_delta(&before, 0, "retry_exceeded"));
}

/* Down for longer than 4 x 134 ms: the oldest WR fails, the rest flush. */
TEST_F_TIMEOUT(loss, link_down, 120)
{
	struct rc_opts o = { .retry_cnt = 3 };
	struct rc_env *e = &self->e;
	struct counters before;
	double t0, budget;
	int i;

	o.timeout = rc_slow_timeout(15);
	budget = timeout_ms(o.timeout) * (o.retry_cnt + 1);
	env_create(_metadata, self, e, &o, 0x400, 0x800, 64 << 10, 64 << 10);
	for (i = 0; i < 4; i++)
		ASSERT_EQ(0, rc_post_recv(&e->p.b, 100 + i, &e->bb, 32768,
					  8192));
	ASSERT_EQ(0, rc_sh("ip link set " NETDEV0 " down"));
	counters_read(&before);
	t0 = rc_now_ms();
	post_four(_metadata, e);
	expect_retry_exceeded(_metadata, e, 4, t0, budget);
	ASSERT_EQ(0, rc_sh("ip link set " NETDEV0 " up"));
	counters_log(_metadata, &before);
	EXPECT_EQ(o.retry_cnt + 1, counters_delta(&before, 0, "timeouts"));
	EXPECT_EQ(1, counters_delta(&before, 0, "retry_exceeded"));
	EXPECT_LT(0, counters_delta(&before, 0, "tx_errors"));
}

/* ---- QPs that die busy -------------------------------------------------- */

/* Post a burst that keeps both QPs' timers and tasks busy. */
static int busy_burst(struct rc_env *e, uint32_t seed)
{
	int i, ret = 0;

	/* Two receives only: the SENDs after them meet RNR NAKs. */
	for (i = 0; i < 2; i++)
		ret |= rc_post_recv(&e->p.b, 500 + i, &e->bb, 0, 64 << 10);
	for (i = 0; i < 24 && !ret; i++) {
		static const enum ibv_wr_opcode ops[] = {
			IBV_WR_RDMA_WRITE, IBV_WR_RDMA_READ, IBV_WR_SEND,
		};
		enum ibv_wr_opcode op = ops[(seed + i) % 3];

		ret = rc_post_send(&e->p.a, i, op, &e->ba, 0,
				   1 + (st_mix(seed + i) % (60 << 10)),
				   IBV_SEND_SIGNALED,
				   (uintptr_t)e->bb.p, e->bb.mr->rkey);
		/* B sends too: both directions busy. */
		if (!ret && i % 4 == 0)
			ret = rc_post_send(&e->p.b, i, IBV_WR_RDMA_WRITE,
					   &e->bb, 0, 30000, IBV_SEND_SIGNALED,
					   (uintptr_t)e->ba.p, e->ba.mr->rkey);
	}
	return ret;
}

/* QPs of our devices that exist now, from "rdma resource show qp". */
/* QPs left on the test's devices, other than ib_mad's QP1 (GSI). */
static int qps_left(void)
{
	FILE *f = popen("rdma resource show qp 2>/dev/null | "
			"grep 'link vrdmalt' | grep -vc 'type GSI'", "r");
	int n = -1;

	if (!f)
		return -1;
	if (fscanf(f, "%d", &n) != 1)
		n = -1;
	pclose(f);
	return n;
}

/* A short clean stream: the devices still work. */
static void still_works(struct __test_metadata *_metadata,
			FIXTURE_DATA(loss) *self)
{
	struct rc_opts o = { 0 };
	struct st_opts so = { .bytes = 1 << 20, .max_len = ST_MAXMSG };
	struct st_result res;
	struct rc_env e;

	o.max_recv_wr = ST_RECVS;
	o.max_send_sge = o.max_recv_sge = 3;
	ASSERT_EQ(0, netem(NULL));
	env_create(_metadata, self, &e, &o, 0x1000, 0x2000, ST_A_SIZE,
		   ST_B_SIZE);
	st_run(_metadata, &e, &so, &res);
	rc_env_destroy(&e);
}

#define BUSY_ROUNDS	50

TEST_F_TIMEOUT(loss, destroy_in_flight, 900)
{
	struct rc_opts o = { .retry_cnt = 7 };
	struct counters before;
	int i;

	/* Short timers, so that they fire around the destroy. */
	o.timeout = 12;
	ASSERT_EQ(0, netem("delay 1ms loss 20%"));
	counters_read(&before);
	for (i = 0; i < BUSY_ROUNDS; i++) {
		struct rc_env e;

		env_create(_metadata, self, &e, &o, st_mix(i) & 0xffffff,
			   st_mix(i + 99) & 0xffffff, 64 << 10, 64 << 10);
		ASSERT_EQ(0, busy_burst(&e, i));
		usleep(st_mix(i + 7) % 30000);
		/* Either side first; the CQs and MRs after the QPs. */
		if (i & 1) {
			ibv_destroy_qp(e.p.b.qp);
			e.p.b.qp = NULL;
		}
		rc_env_destroy(&e);
	}
	counters_log(_metadata, &before);
	EXPECT_EQ(0, qps_left());
	still_works(_metadata, self);
}

/*
 * A child streams between its two QPs until it is killed: ib_uverbs
 * destroys its QPs as the process exits, with whatever is in flight.
 */
static void busy_child(int fd, uint32_t seed)
{
	static struct __test_metadata md = { .passed = 1 };
	struct rc_dev d0, d1;
	struct rc_opts o = { .retry_cnt = 7, .timeout = 12 };
	struct rc_env e;
	char c = 1;

	/* Any failure, ASSERTs in rc_lib.h too, just ends the child early. */
	if (setjmp(md.env))
		_exit(5);
	memset(&e, 0, sizeof(e));
	d0.ctx = rc_open_by_name(DEV0);
	d1.ctx = rc_open_by_name(DEV1);
	if (!d0.ctx || !d1.ctx)
		_exit(2);
	d0.pd = ibv_alloc_pd(d0.ctx);
	d1.pd = ibv_alloc_pd(d1.ctx);
	if (!d0.pd || !d1.pd || ibv_query_device(d0.ctx, &d0.attr) ||
	    ibv_query_device(d1.ctx, &d1.attr) ||
	    ibv_query_port(d0.ctx, RC_PORT, &d0.port) ||
	    ibv_query_port(d1.ctx, RC_PORT, &d1.port))
		_exit(3);
	d0.gid_idx = rc_cfg.gid_idx[0];
	d1.gid_idx = rc_cfg.gid_idx[1];
	if (ibv_query_gid(d0.ctx, RC_PORT, d0.gid_idx, &d0.gid) ||
	    ibv_query_gid(d1.ctx, RC_PORT, d1.gid_idx, &d1.gid))
		_exit(4);
	o.no_connect = 1;
	rc_pair_create(&md, &e.p, &d0, &d1, &o);
	e.p.a.sq_psn = e.p.b.rq_psn = seed & 0xffffff;
	e.p.b.sq_psn = e.p.a.rq_psn = (seed * 3) & 0xffffff;
	rc_qp_connect(&md, &e.p.a, &e.p.b, e.p.o.access);
	rc_qp_connect(&md, &e.p.b, &e.p.a, e.p.o.access);
	rc_buf_alloc(&md, &e.ba, d0.pd, 64 << 10, RC_ACCESS_ALL);
	rc_buf_alloc(&md, &e.bb, d1.pd, 64 << 10, RC_ACCESS_ALL);
	if (!md.passed)
		_exit(5);
	if (busy_burst(&e, seed))
		_exit(6);
	if (write(fd, &c, 1) != 1)
		_exit(7);
	for (;;) {
		struct ibv_wc wc[16];

		/* Keep posting as completions make room. */
		if (ibv_poll_cq(e.p.a.scq, 16, wc) > 0)
			busy_burst(&e, ++seed);
		ibv_poll_cq(e.p.b.scq, 16, wc);
		ibv_poll_cq(e.p.b.rcq, 16, wc);
		usleep(100);
	}
}

TEST_F_TIMEOUT(loss, kill_in_flight, 900)
{
	struct counters before;
	int i, status;

	ASSERT_EQ(0, netem("delay 1ms loss 20%"));
	counters_read(&before);
	for (i = 0; i < BUSY_ROUNDS; i++) {
		int fds[2];
		pid_t pid;
		char c;

		ASSERT_EQ(0, pipe(fds));
		pid = fork();
		ASSERT_LE(0, pid);
		if (pid == 0) {
			close(fds[0]);
			busy_child(fds[1], 1000 + i);
		}
		close(fds[1]);
		ASSERT_EQ(1, read(fds[0], &c, 1)) {
			waitpid(pid, &status, 0);
			TH_LOG("round %d: the child failed (status %#x)", i,
			       status);
		}
		close(fds[0]);
		usleep(st_mix(i) % 40000);
		ASSERT_EQ(0, kill(pid, SIGKILL));
		ASSERT_EQ(pid, waitpid(pid, &status, 0));
		EXPECT_TRUE(WIFSIGNALED(status));
	}
	counters_log(_metadata, &before);
	EXPECT_EQ(0, qps_left());
	still_works(_metadata, self);
}

/* ---- setup, in the parent before the tests fork ------------------------- */

static void suite_teardown(void)
{
	if (!set_up)
		return;
	rc_sh("{ rdma link delete " DEV0 "; rdma link delete " DEV1 "; "
	      "ip link del " NETDEV0 "; ip netns del " NS "; } >/dev/null 2>&1");
	set_up = 0;
}

static void suite_setup(void)
{
	double deadline;

	ns_suite_env(0);
	if (rc_sh("modprobe sch_netem") != 0)
		bail("no sch_netem", KSFT_SKIP);
	snprintf(rc_cfg.name[0], sizeof(rc_cfg.name[0]), DEV0);
	snprintf(rc_cfg.name[1], sizeof(rc_cfg.name[1]), DEV1);

	ns_veth_setup();
	if (rc_sh("rdma link add " DEV0 " type vrdma netdev " NETDEV0 " && "
		  "ip netns exec " NS " rdma link add " DEV1
		  " type vrdma netdev " NETDEV1))
		bail("rdma link add failed", KSFT_FAIL);

	deadline = rc_now_ms() + RC_TIMEOUT_MS;
	for (;;) {
		rc_cfg.gid_idx[0] = rc_find_gid(DEV0);
		rc_cfg.gid_idx[1] = rc_find_gid(DEV1);
		if (rc_cfg.gid_idx[0] >= 0 && rc_cfg.gid_idx[1] >= 0)
			break;
		if (rc_now_ms() > deadline)
			bail("no IPv4 RoCE v2 GID appeared", KSFT_FAIL);
		usleep(100 * 1000);
	}
	printf("# %s (" NETDEV0 ", " IP0 ") and %s (" NETDEV1 ", " IP1
	       ", netns " NS "), %zu MiB stream\n", DEV0, DEV1,
	       loss_bytes() >> 20);
}

int main(int argc, char **argv)
{
	return ns_suite_main(argc, argv);
}
