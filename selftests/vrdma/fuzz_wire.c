// SPDX-License-Identifier: GPL-2.0
/*
 * The wire -> kernel fuzzer: mutated RoCEv2 packets at a device with live
 * QPs.
 *
 * fuzz.sh puts vrdma device DEV0 on one end of a veth pair and DEV1 on the
 * other, in the network namespace NS.  From a raw socket in NS this
 * program sends RoCEv2 packets it builds byte by byte (as rc_wire_test's
 * fake peer does) to DEV0: every opcode, truncated headers, wrong PSNs,
 * forged QPNs and rkeys, huge lengths, bad pad counts, with a valid ICRC
 * over the damaged contents most of the time.  They are aimed at "target"
 * QPs (RC, UC, UD) created afresh every round, connected to a peer that
 * does not exist, with receives posted and, on RC, requests outstanding so
 * that forged ACKs and read responses have something to match.
 *
 * Meanwhile an RC pair between DEV0 and DEV1 moves data across the same
 * veth and checks every byte (fz_live_start); its QPN is never forged, as
 * a forged packet with the right QPN and PSN is indistinguishable from its
 * peer's.
 *
 * Checked, every round: no byte changes outside the memory that an rkey
 * legitimately grants.  The target QPs' memory is laid out as regions,
 * each in a mapping of its own, filled with a pattern:
 *   granted   an MR with every remote right: bytes inside it may change,
 *             the bytes around it (same pages) must not
 *   local     an MR with local rights only: no byte may change
 *   other PD  an MR with every remote right in another PD: no byte may
 *             change (no QP of that PD exists)
 *   stale     an MR registered with remote rights, deregistered and
 *             registered again (new keys) every round: only the old rkeys
 *             are sent, and no byte may change; the new rkey must differ
 *             from every old one
 * The target QPs end each round in RTS, SQE (UD) or ERR, never anything
 * else, their CQEs are well formed, and at the end the live pair has kept
 * working and the device has counted dropped packets.
 *
 *   fuzz_wire DEV0 DEV1 SECONDS SEED [PACKETS]
 *
 * Stops after SECONDS or PACKETS packets, whichever comes first.  Each
 * round prints its seed; "fuzz_wire DEV0 DEV1 S SEED" replays a run from
 * its start (timing aside).  TAP output.
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/ip.h>
#include <netinet/udp.h>
#include <sched.h>
#include <sys/mman.h>
#include <sys/socket.h>

#include "fuzz_lib.h"
#include "wire_lib.h"

#define NS		"vrdmafuzz"
#define IP0		"10.219.0.1"	/* DEV0's netdev */
#define IP1		"10.219.0.2"	/* DEV1's, in NS: where packets come from */
#define PEER_QPN	0x4343		/* the targets' peer: nobody */
#define ROUND_PKTS	2000
#define REGION		(64 << 10)	/* one region's mapping */

enum { R_GRANTED, R_LOCAL, R_OTHER_PD, R_STALE, R_READDST, R_NUM };

static const char *const region_name[R_NUM] = {
	"granted MR", "local-only MR", "other PD's MR", "stale rkeys' MR",
	"READ destination MR",
};

static struct {
	struct ibv_context *ctx;
	struct ibv_pd *pd, *pd2;
	struct ibv_cq *cq;
	uint8_t *map[R_NUM];		/* REGION bytes each */
	uint8_t *pat[R_NUM];		/* what they must hold */
	struct ibv_mr *mr[R_NUM];
	size_t mr_off[R_NUM], mr_len[R_NUM];
	int may_change[R_NUM];		/* bytes inside the MR may change */
	uint32_t stale[64];		/* old rkeys of the stale region */
	int nstale;
	int gid_idx;
	union ibv_gid peer_gid;
	enum ibv_mtu mtu;
	int raw;			/* raw socket in NS */
} g;

/* The target QPs of a round. */
struct target {
	struct ibv_qp *rc, *uc, *ud;
	uint32_t rc_rq_psn, rc_sq_psn, uc_rq_psn;
	uint32_t rc_exp, uc_exp;	/* the PSNs the responders expect */
};

/* Extension header bytes of BTH opcode @op (IBA table 38), or -1. */
static int ext_len(uint8_t op)
{
	static const signed char rc[32] = {
		[0x00] = 0, [0x01] = 0, [0x02] = 0, [0x03] = 4, [0x04] = 0,
		[0x05] = 4, [0x06] = 16, [0x07] = 0, [0x08] = 0, [0x09] = 4,
		[0x0a] = 16, [0x0b] = 20, [0x0c] = 16, [0x0d] = 4, [0x0e] = 0,
		[0x0f] = 4, [0x10] = 4, [0x11] = 4, [0x12] = 12, [0x13] = 28,
		[0x14] = 28, [0x15] = -1, [0x16] = 4, [0x17] = 4,
		[0x18 ... 0x1f] = -1,
	};

	switch (op >> 5) {
	case 0:		/* RC */
	case 1:		/* UC */
		return rc[op & 0x1f];
	case 3:		/* UD: DETH, ImmDt */
		return op == 0x64 ? 8 : op == 0x65 ? 12 : -1;
	default:
		return -1;
	}
}

/* An rkey from the pools: right, wrong, stale, of another PD, random. */
static uint32_t pick_rkey(struct fz_rng *r)
{
	uint32_t k;

	switch (fz_below(r, 9)) {
	case 0: case 1: case 2:
		return g.mr[R_GRANTED]->rkey;
	case 3:
		return g.mr[R_LOCAL]->rkey;
	case 4:
		return g.mr[R_OTHER_PD]->rkey;
	case 5:
		return g.stale[fz_below(r, g.nstale)];
	case 6:
		k = g.mr[R_GRANTED]->rkey;
		return k ^ (1u << fz_below(r, 32));	/* another key byte */
	case 7:
		return g.mr[R_READDST]->rkey;
	default:
		return fz_interesting32(r);
	}
}

/* A virtual address in or around one of the regions, or anywhere. */
static uint64_t pick_va(struct fz_rng *r, uint32_t len)
{
	int i = fz_below(r, R_NUM);
	uint64_t base = (uintptr_t)g.map[i] + g.mr_off[i];

	switch (fz_below(r, 8)) {
	case 0: case 1: case 2:		/* inside */
		return base + fz_below(r, g.mr_len[i] + 1);
	case 3:				/* ending at the edge or beyond */
		return base + g.mr_len[i] - len + fz_below(r, 9) - 4;
	case 4:				/* starting before */
		return base - fz_below(r, 64);
	case 5:
		return base + g.mr_len[i] - fz_below(r, 8);
	case 6:
		return fz_u64(r);
	default:
		return (uint64_t)0 - fz_below(r, 4096);	/* wraps */
	}
}

static uint32_t pick_len(struct fz_rng *r, uint32_t payload)
{
	switch (fz_below(r, 6)) {
	case 0: case 1: case 2:
		return payload;
	case 3:
		return g.mr_len[R_GRANTED];
	default:
		return fz_interesting32(r);
	}
}

static void put32(uint8_t *p, uint32_t v)
{
	v = htonl(v);
	memcpy(p, &v, 4);
}

static void put64(uint8_t *p, uint64_t v)
{
	v = htobe64(v);
	memcpy(p, &v, 8);
}

struct fuzz_stats {
	unsigned long sent, bad_icrc, truncated, mutated, send_err;
};

/*
 * Build one mutated packet for the target QPs @t and send it.  Returns 0
 * or -1 (sendto failed: counted, not fatal).
 */
static int fuzz_one(struct fz_rng *r, struct target *t,
		    struct fuzz_stats *st)
{
	uint8_t pkt[2048], *bth = pkt + WIRE_HDR_LEN - 12, *p;
	struct iphdr *ip = (struct iphdr *)pkt;
	struct udphdr *udp = (struct udphdr *)(ip + 1);
	struct sockaddr_in to = { .sin_family = AF_INET };
	uint32_t qpn, psn, plen, pad, len, mtu = 256u << g.mtu;
	int op, el, bad_icrc = 0, damaged = 0;
	struct in_addr src;
	uint16_t id, sport;
	uint32_t *exp = NULL;

	/* Which QP, which opcode, which PSN. */
	switch (fz_below(r, 10)) {
	case 0: case 1: case 2: case 3:
		qpn = t->rc->qp_num;
		op = fz_below(r, 0x20);
		if (op >= 0x0d && op <= 0x12)	/* responses: our requests */
			psn = t->rc_sq_psn + fz_below(r, 16) - 4;
		else
			psn = t->rc_exp + (fz_one_in(r, 2) ? 0 :
					   fz_below(r, 16) - 4);
		exp = &t->rc_exp;
		break;
	case 4: case 5:
		qpn = t->uc->qp_num;
		op = 0x20 + fz_below(r, 0x20);
		psn = t->uc_exp + (fz_one_in(r, 2) ? 0 : fz_below(r, 16) - 4);
		exp = &t->uc_exp;
		break;
	case 6: case 7:
		qpn = t->ud->qp_num;
		op = fz_one_in(r, 4) ? fz_below(r, 256) : 0x64 + fz_below(r, 2);
		psn = fz_u32(r);
		break;
	case 8:
		qpn = fz_one_in(r, 2) ? fz_below(r, 64) : fz_u32(r);
		op = fz_below(r, 256);
		psn = fz_u32(r);
		break;
	default:
		qpn = (fz_one_in(r, 2) ? t->rc->qp_num : t->uc->qp_num) +
		      fz_below(r, 5) - 2;
		op = fz_below(r, 256);
		psn = fz_u32(r);
		break;
	}
	el = ext_len(op);
	if (el < 0)
		el = fz_below(r, 32);
	switch (fz_below(r, 8)) {
	case 0:
		plen = 0;
		break;
	case 1:
		plen = mtu;
		break;
	case 2:
		plen = mtu + 1 + fz_below(r, 64);	/* beyond the MTU */
		break;
	case 3:
		plen = 8;				/* atomic-sized */
		break;
	default:
		plen = fz_below(r, mtu + 1);
	}
	if (plen > 1400 - el)
		plen = 1400 - el;
	pad = (4 - plen % 4) % 4;

	len = WIRE_HDR_LEN + el + plen + pad + 4;
	memset(pkt, 0, len);
	id = 1 + fz_below(r, 65535);
	sport = 0xc000 | fz_below(r, 0x4000);
	inet_pton(AF_INET, IP1, &src);
	inet_pton(AF_INET, IP0, &to.sin_addr);
	wire_ip_udp(pkt, len, &src, &to.sin_addr, id, sport);

	bth[0] = op;
	bth[1] = pad << 4;
	if (fz_one_in(r, 32))
		bth[1] = fz_u32(r);	/* SE, MigReq, pad, TVer */
	bth[2] = bth[3] = 0xff;
	if (fz_one_in(r, 32))
		bth[2] = fz_u32(r), bth[3] = fz_u32(r);	/* P_Key */
	put32(bth + 4, qpn & 0xffffff);
	if (fz_one_in(r, 32))
		bth[4] = fz_u32(r);			/* reserved */
	put32(bth + 8, (fz_one_in(r, 2) ? 0x80000000u : 0) |
	      (psn & 0xffffff));

	/* Extension headers, plausible field by field. */
	p = bth + 12;
	fz_bytes(r, p, el);
	switch (op & 0x1f) {
	case 0x06: case 0x0a: case 0x0b: case 0x0c:	/* RETH */
		if (op >= 0x40)
			break;
		put64(p, pick_va(r, plen));
		put32(p + 8, pick_rkey(r));
		put32(p + 12, pick_len(r, op == 0x0c ? fz_below(r, 4 * mtu) :
				       plen));
		break;
	case 0x13: case 0x14:				/* AtomicETH */
		if (op >= 0x40)
			break;
		put64(p, pick_va(r, 8) & (fz_one_in(r, 4) ? ~0ull : ~7ull));
		put32(p + 8, pick_rkey(r));
		break;
	case 0x0d: case 0x0f: case 0x10: case 0x11: case 0x12:	/* AETH */
		if (op >= 0x40)
			break;
		p[0] = fz_one_in(r, 2) ? 0x1f : fz_u32(r);
		break;
	case 0x16: case 0x17:				/* IETH */
		if (op < 0x40)
			put32(p, pick_rkey(r));
		break;
	}
	if ((op == 0x64 || op == 0x65) && fz_below(r, 4))
		put32(p, fz_one_in(r, 2) ? 0x11111111 : 0x80000000);	/* Q_Key */
	p += el;
	fz_bytes(r, p, plen);
	p += plen + pad;

	/* Damage after the fact: the ICRC still covers it. */
	if (fz_one_in(r, 8)) {
		int n = 1 + fz_below(r, 4);

		while (n--)
			bth[fz_below(r, 12 + el)] ^= 1 << fz_below(r, 8);
		st->mutated++;
		damaged = 1;
	}

	wire_icrc(pkt, len);
	if (fz_one_in(r, 16)) {
		p[fz_below(r, 4)] ^= 1 << fz_below(r, 8);
		bad_icrc = 1;
		damaged = 1;
	}

	/* Truncated: anywhere from no BTH at all to one byte short. */
	if (fz_one_in(r, 10)) {
		len = sizeof(*ip) + sizeof(*udp) +
		      fz_below(r, len - sizeof(*ip) - sizeof(*udp));
		ip->tot_len = htons(len);
		udp->len = htons(len - sizeof(*ip));
		st->truncated++;
		bad_icrc = 0;
		damaged = 1;
	} else if (bad_icrc) {
		st->bad_icrc++;
	}

	/*
	 * An intact request with the expected PSN moves the responder on
	 * (if it takes it): aim the next ones there, deeper into messages.
	 */
	if (exp && !damaged && ((psn ^ *exp) & 0xffffff) == 0 &&
	    ((op & 0x1f) <= 0x0c || (op & 0x1f) == 0x13 ||
	     (op & 0x1f) == 0x14 || (op & 0x1f) >= 0x16))
		*exp = (*exp + 1) & 0xffffff;

	st->sent++;
	if (sendto(g.raw, pkt, len, 0, (struct sockaddr *)&to,
		   sizeof(to)) != (ssize_t)len) {
		st->send_err++;
		if (bad_icrc)
			st->bad_icrc--;
		return -1;
	}
	return 0;
}

/* ---- setup ----------------------------------------------------------- */

static int raw_socket_in_ns(void)
{
	int self_ns, ns, fd = -1;

	self_ns = open("/proc/self/ns/net", O_RDONLY);
	ns = open("/run/netns/" NS, O_RDONLY);
	if (self_ns >= 0 && ns >= 0 && !setns(ns, CLONE_NEWNET)) {
		fd = socket(AF_INET, SOCK_RAW, IPPROTO_RAW);
		if (setns(self_ns, CLONE_NEWNET)) {
			close(fd);
			fd = -1;
		}
	}
	if (self_ns >= 0)
		close(self_ns);
	if (ns >= 0)
		close(ns);
	return fd;
}

static void fill_pattern(int i)
{
	size_t j;

	for (j = 0; j < REGION; j++)
		g.pat[i][j] = (uint8_t)(j * 31 + i * 101 + 7);
	memcpy(g.map[i], g.pat[i], REGION);
}

static int regions_setup(void)
{
	int full = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE |
		   IBV_ACCESS_REMOTE_READ | IBV_ACCESS_REMOTE_ATOMIC;
	int i;

	for (i = 0; i < R_NUM; i++) {
		g.map[i] = mmap(NULL, REGION, PROT_READ | PROT_WRITE,
				MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
		g.pat[i] = malloc(REGION);
		if (g.map[i] == MAP_FAILED || !g.pat[i])
			return -1;
		fill_pattern(i);
		/* Not page aligned at either end: a page-granular bug
		 * would write the bytes around the MR.
		 */
		g.mr_off[i] = 4096 * 4 + 100 + 8 * i;
		g.mr_len[i] = 3 * 4096 + 37;
	}
	g.may_change[R_GRANTED] = g.may_change[R_READDST] = 1;
	g.mr[R_GRANTED] = ibv_reg_mr(g.pd, g.map[R_GRANTED] +
				     g.mr_off[R_GRANTED],
				     g.mr_len[R_GRANTED], full);
	g.mr[R_LOCAL] = ibv_reg_mr(g.pd, g.map[R_LOCAL] + g.mr_off[R_LOCAL],
				   g.mr_len[R_LOCAL], IBV_ACCESS_LOCAL_WRITE);
	g.mr[R_OTHER_PD] = ibv_reg_mr(g.pd2, g.map[R_OTHER_PD] +
				      g.mr_off[R_OTHER_PD],
				      g.mr_len[R_OTHER_PD], full);
	g.mr[R_READDST] = ibv_reg_mr(g.pd, g.map[R_READDST] +
				     g.mr_off[R_READDST],
				     g.mr_len[R_READDST],
				     IBV_ACCESS_LOCAL_WRITE);
	g.mr[R_STALE] = ibv_reg_mr(g.pd, g.map[R_STALE] + g.mr_off[R_STALE],
				   g.mr_len[R_STALE], full);
	for (i = 0; i < R_NUM; i++)
		if (!g.mr[i])
			return -1;
	return 0;
}

/*
 * Deregister the stale region's MR and register the range again: its old
 * rkey joins the pool of stale keys the packets use, the new one must be
 * none of them.  Returns 0, or -1 when a key came back.
 */
static int stale_rotate(void)
{
	uint32_t old = g.mr[R_STALE]->rkey;
	int i, ret = 0;

	if (g.nstale < (int)(sizeof(g.stale) / sizeof(g.stale[0])))
		g.stale[g.nstale++] = old;
	else
		g.stale[fz_below(&(struct fz_rng){ old | 1 }, g.nstale)] = old;
	ibv_dereg_mr(g.mr[R_STALE]);
	g.mr[R_STALE] = ibv_reg_mr(g.pd, g.map[R_STALE] + g.mr_off[R_STALE],
				   g.mr_len[R_STALE],
				   IBV_ACCESS_LOCAL_WRITE |
				   IBV_ACCESS_REMOTE_WRITE |
				   IBV_ACCESS_REMOTE_READ |
				   IBV_ACCESS_REMOTE_ATOMIC);
	if (!g.mr[R_STALE])
		return -1;
	for (i = 0; i < g.nstale; i++)
		if (g.stale[i] == g.mr[R_STALE]->rkey) {
			printf("# re-registration gave an old rkey again: %#x\n",
			       g.stale[i]);
			ret = -1;
		}
	return ret;
}

/* Bytes that changed where no rkey grants a write; the first printed. */
static long sentinel_check(const char *when)
{
	long bad = 0;
	int i;

	for (i = 0; i < R_NUM; i++) {
		size_t j, lo = g.mr_off[i], hi = lo + g.mr_len[i];

		for (j = 0; j < REGION; j++) {
			if (g.may_change[i] && j >= lo && j < hi)
				continue;
			if (g.map[i][j] == g.pat[i][j])
				continue;
			if (!bad)
				printf("# %s: %s: byte %zd from the MR's start is %#x, was %#x\n",
				       when, region_name[i], (ssize_t)(j - lo),
				       g.map[i][j], g.pat[i][j]);
			bad++;
		}
	}
	return bad;
}

static struct ibv_qp *target_qp(enum ibv_qp_type type)
{
	struct ibv_qp_init_attr qa = {
		.send_cq = g.cq, .recv_cq = g.cq,
		.cap = { .max_send_wr = 16, .max_recv_wr = 64,
			 .max_send_sge = 2, .max_recv_sge = 2 },
		.qp_type = type,
	};

	return ibv_create_qp(g.pd, &qa);
}

/* Receives into the granted MR: SENDs may land there. */
static void post_recvs(struct ibv_qp *qp, int n)
{
	struct ibv_sge s = {
		(uintptr_t)g.map[R_GRANTED] + g.mr_off[R_GRANTED],
		g.mr_len[R_GRANTED], g.mr[R_GRANTED]->lkey,
	};
	struct ibv_recv_wr wr = { .wr_id = qp->qp_num, .sg_list = &s,
				  .num_sge = 1 }, *bad;

	while (n-- > 0 && !ibv_post_recv(qp, &wr, &bad))
		;
}

/* The RC target's outstanding requests to its (absent) peer. */
static void post_requests(struct ibv_qp *qp)
{
	uint8_t *dst = g.map[R_READDST] + g.mr_off[R_READDST];
	struct ibv_sge s = { (uintptr_t)dst, 2048, g.mr[R_READDST]->lkey };
	struct ibv_send_wr wr = {
		.sg_list = &s, .num_sge = 1, .send_flags = IBV_SEND_SIGNALED,
	}, *bad;

	wr.opcode = IBV_WR_RDMA_READ;
	wr.wr.rdma.remote_addr = 0x10000;
	wr.wr.rdma.rkey = 0x1234;
	ibv_post_send(qp, &wr, &bad);
	wr.opcode = IBV_WR_ATOMIC_FETCH_AND_ADD;
	s.addr += 4096;
	s.length = 8;
	wr.wr.atomic.remote_addr = 0x20000;
	wr.wr.atomic.rkey = 0x1234;
	ibv_post_send(qp, &wr, &bad);
	wr.opcode = IBV_WR_SEND;
	s.addr += 64;
	s.length = 100;
	ibv_post_send(qp, &wr, &bad);
	wr.opcode = IBV_WR_RDMA_READ;
	s.addr += 4096;
	s.length = 4096;
	ibv_post_send(qp, &wr, &bad);
}

static int targets_create(struct fz_rng *r, struct target *t)
{
	memset(t, 0, sizeof(*t));
	t->rc_rq_psn = fz_u32(r) & 0xffffff;
	t->rc_sq_psn = fz_u32(r) & 0xffffff;
	t->uc_rq_psn = fz_u32(r) & 0xffffff;
	t->rc_exp = t->rc_rq_psn;
	t->uc_exp = t->uc_rq_psn;
	t->rc = target_qp(IBV_QPT_RC);
	t->uc = target_qp(IBV_QPT_UC);
	t->ud = target_qp(IBV_QPT_UD);
	if (!t->rc || !t->uc || !t->ud)
		return -1;
	/* Retries every ~1 s (timeout 18), 7 times: a round's length. */
	if (fz_connect(t->rc, g.gid_idx, g.mtu, PEER_QPN, &g.peer_gid,
		       t->rc_rq_psn, t->rc_sq_psn, 18, 7) ||
	    fz_connect(t->uc, g.gid_idx, g.mtu, PEER_QPN + 1, &g.peer_gid,
		       t->uc_rq_psn, fz_u32(r) & 0xffffff, 0, 0) ||
	    fz_connect(t->ud, g.gid_idx, g.mtu, 0, NULL, 0, 0, 0, 0))
		return -1;
	post_recvs(t->rc, 32);
	post_recvs(t->uc, 32);
	post_recvs(t->ud, 32);
	post_requests(t->rc);
	return 0;
}

/*
 * Poll what the CQ has; a malformed CQE counts as a failure, so does one of
 * a QP other than the round's (@qpn: RC, UC, UD), e.g. of a QP destroyed
 * earlier.
 */
static int drain_cq(const uint32_t *qpn, const char *when)
{
	struct ibv_wc wc[16];
	int n, i, bad = 0;

	while ((n = ibv_poll_cq(g.cq, 16, wc)) > 0) {
		for (i = 0; i < n; i++) {
			uint32_t q = wc[i].qp_num;

			if ((q != qpn[0] && q != qpn[1] && q != qpn[2]) ||
			    wc[i].status > IBV_WC_TM_RNDV_INCOMPLETE ||
			    (wc[i].status == IBV_WC_SUCCESS &&
			     (wc[i].opcode & IBV_WC_RECV) &&
			     wc[i].byte_len > g.mr_len[R_GRANTED])) {
				if (!bad)
					printf("# %s: a bad CQE: qp %#x status %d opcode %d byte_len %u\n",
					       when, q, wc[i].status,
					       wc[i].opcode, wc[i].byte_len);
				bad++;
			}
		}
	}
	return n < 0 ? -1 : bad;
}

static int state_ok(struct ibv_qp *qp, int ud)
{
	enum ibv_qp_state s = fz_qp_state(qp);

	if (s == IBV_QPS_RTS || s == IBV_QPS_ERR || (ud && s == IBV_QPS_SQE))
		return 1;
	printf("# QP %#x (type %d) in state %d after the round\n",
	       qp->qp_num, qp->qp_type, s);
	return 0;
}

static void targets_destroy(struct target *t)
{
	if (t->rc)
		ibv_destroy_qp(t->rc);
	if (t->uc)
		ibv_destroy_qp(t->uc);
	if (t->ud)
		ibv_destroy_qp(t->ud);
	memset(t, 0, sizeof(*t));
}

static const char *const drop_counters[] = {
	"malformed", "icrc_errors", "no_qp", "seq_errors",
	"duplicate_requests", "duplicate_responses", "qkey_errors",
	"dropped_msgs", "nak_sent", "no_recv_wqe",
};
#define NDROP (sizeof(drop_counters) / sizeof(drop_counters[0]))

int main(int argc, char **argv)
{
	const char *dev0, *dev1;
	long long before[NDROP], d_icrc = 0, d_drop = 0;
	struct fuzz_stats st = { 0 };
	struct ibv_port_attr port;
	double end;
	uint64_t seed;
	unsigned long max_pkts = ~0ul;
	int round = 0, bad_rounds = 0, bad_keys = 0, cqe_bad = 0;
	long sentinel_bad = 0;
	unsigned int i;
	pid_t live;

	setvbuf(stdout, NULL, _IOLBF, 0);
	if (argc < 5) {
		fprintf(stderr, "usage: %s DEV0 DEV1 SECONDS SEED [PACKETS]\n",
			argv[0]);
		return 2;
	}
	dev0 = argv[1];
	dev1 = argv[2];
	end = fz_now() + atof(argv[3]);
	seed = strtoull(argv[4], NULL, 0);
	if (argc > 5)
		max_pkts = strtoul(argv[5], NULL, 0);
	printf("TAP version 13\n# fuzz_wire %s %s %s %#llx: seed %#llx\n",
	       dev0, dev1, argv[3], (unsigned long long)seed,
	       (unsigned long long)seed);

	g.ctx = rc_open_by_name(dev0);
	g.gid_idx = rc_find_gid(dev0);
	if (!g.ctx || g.gid_idx < 0 || ibv_query_port(g.ctx, 1, &port)) {
		printf("Bail out! cannot open %s\n", dev0);
		return 1;
	}
	g.mtu = port.active_mtu;
	memset(&g.peer_gid, 0, sizeof(g.peer_gid));
	g.peer_gid.raw[10] = g.peer_gid.raw[11] = 0xff;
	inet_pton(AF_INET, IP1, g.peer_gid.raw + 12);
	g.pd = ibv_alloc_pd(g.ctx);
	g.pd2 = ibv_alloc_pd(g.ctx);
	g.cq = ibv_create_cq(g.ctx, 512, NULL, NULL, 0);
	g.raw = raw_socket_in_ns();
	if (!g.pd || !g.pd2 || !g.cq || g.raw < 0 || regions_setup()) {
		printf("Bail out! setup failed: %s\n", strerror(errno));
		return 1;
	}
	bad_keys += stale_rotate() != 0;
	for (i = 0; i < NDROP; i++)
		before[i] = rc_hw_counter(dev0, drop_counters[i]);
	live = fz_live_start(dev0, dev1);

	while (fz_now() < end && st.sent < max_pkts) {
		struct fz_rng r;
		struct target t;
		uint64_t rs = seed + round;
		char when[64];
		uint32_t qpn[3];
		long bad;
		int k, c;

		fz_seed(&r, rs);
		snprintf(when, sizeof(when), "round %d (seed %#llx)", round,
			 (unsigned long long)seed);
		if (targets_create(&r, &t)) {
			printf("# %s: cannot create the target QPs: %s\n",
			       when, strerror(errno));
			targets_destroy(&t);
			bad_rounds++;
			break;
		}
		qpn[0] = t.rc->qp_num;
		qpn[1] = t.uc->qp_num;
		qpn[2] = t.ud->qp_num;
		for (k = 0; k < ROUND_PKTS && st.sent < max_pkts; k++) {
			fuzz_one(&r, &t, &st);
			if (k % 128 == 127) {
				c = drain_cq(qpn, when);
				cqe_bad += c != 0;
				post_recvs(t.rc, 4);
				post_recvs(t.uc, 4);
				post_recvs(t.ud, 4);
				if (fz_now() > end)
					break;
			}
		}
		usleep(100 * 1000);	/* let the receive path finish */
		c = drain_cq(qpn, when);
		cqe_bad += c != 0;
		if (!state_ok(t.rc, 0) || !state_ok(t.uc, 0) ||
		    !state_ok(t.ud, 1))
			bad_rounds++;
		targets_destroy(&t);
		/*
		 * Packets still on their way when the CQ was drained may have
		 * completed since (a slow kernel takes longer than the 100 ms
		 * above); none may come once the QPs are destroyed.
		 */
		c = drain_cq(qpn, when);
		cqe_bad += c != 0;
		bad = sentinel_check(when);
		if (bad) {
			printf("# %s: %ld bytes changed outside what the rkeys grant\n",
			       when, bad);
			sentinel_bad += bad;
			for (k = 0; k < R_NUM; k++)
				memcpy(g.map[k], g.pat[k], REGION);
		}
		/* The granted MRs' bytes are whatever the packets wrote. */
		memcpy(g.pat[R_GRANTED], g.map[R_GRANTED], REGION);
		memcpy(g.pat[R_READDST], g.map[R_READDST], REGION);
		bad_keys += stale_rotate() != 0;
		round++;
	}
	usleep(300 * 1000);
	for (i = 0; i < NDROP; i++) {
		long long d = rc_hw_counter(dev0, drop_counters[i]) - before[i];

		printf("# %s +%lld\n", drop_counters[i], d);
		if (!strcmp(drop_counters[i], "icrc_errors"))
			d_icrc = d;
		if (!strcmp(drop_counters[i], "malformed") ||
		    !strcmp(drop_counters[i], "no_qp"))
			d_drop += d;
	}
	printf("# %lu packets in %d rounds: %lu with damaged headers, %lu truncated, %lu with a bad ICRC, %lu not sent\n",
	       st.sent, round, st.mutated, st.truncated, st.bad_icrc,
	       st.send_err);

	fz_result(!sentinel_bad, "no byte changed outside the memory the rkeys grant");
	fz_result(!bad_keys, "re-registration never gives an old rkey again");
	fz_result(!bad_rounds, "the target QPs end in RTS or ERR (UD: SQE)");
	fz_result(!cqe_bad, "every CQE of the target QPs is well formed");
	fz_result(d_icrc + d_drop >= (long long)st.bad_icrc && d_icrc > 0,
		  "the packets with a bad ICRC are dropped and counted (%lld icrc_errors for %lu sent)",
		  d_icrc, st.bad_icrc);
	fz_result(fz_live_stop_wait(live), "the live QP pair kept working");
	fz_result(st.sent > 0 && st.send_err < st.sent / 10,
		  "%lu packets sent", st.sent);
	printf("1..%d\n", fz_tap_n);
	return fz_tap_failed ? 1 : 0;
}
