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
 * over the damaged contents most of the time, and a share of well formed
 * requests at and just behind the expected PSN (duplicates).  They are
 * aimed at "target" QPs (RC, UC, UD) created afresh every round, connected
 * to a peer that does not exist, with receives posted and, on RC, requests
 * outstanding so that forged ACKs and read responses have something to
 * match; the UD target has AHs and sends of its own going out, and gets
 * forged RC answers (ACK, READ response, ATOMIC ACK), as QP1 does.  Each
 * round draws the RC target's remote rights (any of REMOTE_WRITE, _READ,
 * _ATOMIC) and the UC target's.
 *
 * Meanwhile an RC pair between DEV0 and DEV1 moves data across the same
 * veth and checks every byte (fz_live_start); its QPN is never forged, as
 * a forged packet with the right QPN and PSN is indistinguishable from its
 * peer's.
 *
 * Every round starts with a quiet phase: well formed requests and answers
 * with the right PSNs, keys and ICRC, which the target QPs would execute
 * had they come from the wire, sent instead by an unprivileged user's
 * plain UDP socket of this host (to DEV0's address, the subnet broadcast,
 * a multicast group the UD target is in) and from fz3, a second veth pair
 * whose end fz2 here carries no RDMA device; and forged answers to the UD
 * target and QP1 from the wire.  Nothing of it may be executed: no byte of
 * memory changes, no CQE, no packet answers it; wrong_netdev counts each
 * packet that did not come in on DEV0's netdev, malformed each answer to a
 * QP that is not RC.
 *
 * Checked, every round: no byte changes outside the memory that an rkey
 * legitimately grants, and no byte that nothing grants reading leaves the
 * device.  The target QPs' memory is laid out as regions, each in a
 * mapping of its own:
 *   granted   an MR with every remote right
 *   read only, write only, atomic only   MRs with that remote right alone
 *   local     an MR with local rights only
 *   other PD  an MR with every remote right in another PD
 *   stale     an MR registered with remote rights, deregistered and
 *             registered again (new keys, with or without REMOTE_READ)
 *             every round: only the old rkeys are sent; the new rkey must
 *             differ from every old one
 *   READ destination, receives   local MRs the target QPs' own READs
 *             and the receives write
 * A byte may change only inside an MR whose rights and the round's QPs'
 * allow it.  Every byte that no key grants reading (all but the granted
 * and read-only MRs in a round whose RC target has REMOTE_READ, and the
 * stale MR when it has REMOTE_READ) holds a per-run 8-byte marker; every
 * packet the device sends back towards NS and fz3 is captured and must not
 * hold 8 bytes of it.  Nor may a target answer a READ or an ATOMIC its
 * rights do not allow.
 *
 * Another process, of user nobody, has a PD, an MR with every remote right
 * over memory holding a second marker, an RC QP with no remote rights and
 * a UD QP.  The wire packets aim at its QPNs and keys, the target QPs'
 * packets and work requests use its keys and addresses, and it posts
 * sends and receives with the keys of this process's local-only MR: none
 * of its memory may change or leave, none of this process's either.
 *
 * The target QPs end each round in RTS, SQE (UD) or ERR, never anything
 * else, and are destroyed (a destroy that fails is a failure), their CQEs
 * are well formed and none comes once they are destroyed, and at the end
 * the live pair has kept working and the device has counted dropped
 * packets.  Every child process is waited for with a deadline.
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
#include <net/if.h>
#include <netinet/in.h>
#include <netinet/ip.h>
#include <netinet/udp.h>
#include <linux/if_packet.h>
#include <net/ethernet.h>
#include <poll.h>
#include <sched.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <grp.h>
#include <sys/socket.h>

#include "fuzz_lib.h"
#include "wire_lib.h"

#define NS		"vrdmafuzz"
#define IP0		"10.219.0.1"	/* DEV0's netdev */
#define IP1		"10.219.0.2"	/* DEV1's, in NS: where packets come from */
#define IP0_BCAST	"10.219.0.255"
#define IP_ALT		"10.220.0.2"	/* behind fz2, the other netdev */
#define MCAST_IP	"239.219.0.1"	/* the UD target's group */
#define FZ2_MAC		"\x02\x00\x0a\xdb\x01\x01"
#define INJECT_PORT	40000		/* the local socket's */
#define MCAST_QPN	0xffffff
#define QKEY		0x11111111
#define ROUND_PKTS	2000
#define REGION		(64 << 10)	/* one region's mapping */
#define RW		IBV_ACCESS_REMOTE_WRITE
#define RR		IBV_ACCESS_REMOTE_READ
#define RA		IBV_ACCESS_REMOTE_ATOMIC
#define LW		IBV_ACCESS_LOCAL_WRITE

/*
 * The targets' peer QPNs (nobody): 0x43, the round modulo PEERS, RC 0 or
 * UC 1, so that a captured answer names the round and the QP it is of.
 */
#define PEERS		0x4000
#define PEER_QPN(round, uc)	(0x430000 | ((round) % PEERS) << 2 | (uc))
#define OTHER_PEER_QPN	0x4f0000	/* the other user's RC QP's peer */
#define UD_DST_QPN	0xfff100	/* where UD sends go: nobody */

enum { R_GRANTED, R_LOCAL, R_OTHER_PD, R_STALE, R_READDST, R_RECV, R_RO,
	R_WO, R_AO, R_NUM };

static const char *const region_name[R_NUM] = {
	"granted MR", "local-only MR", "other PD's MR", "stale rkeys' MR",
	"READ destination MR", "receive MR", "read-only MR", "write-only MR",
	"atomic-only MR",
};

/* What the other user's process tells this one, and the reverse. */
struct other_info {
	uint64_t va;
	uint32_t len, lkey, rkey, rc_qpn, ud_qpn, rc_psn;
};

static struct {
	struct ibv_context *ctx;
	struct ibv_pd *pd, *pd2;
	struct ibv_cq *cq;
	uint8_t *map[R_NUM];		/* REGION bytes each */
	uint8_t *pat[R_NUM];		/* what they must hold */
	struct ibv_mr *mr[R_NUM];
	int mr_acc[R_NUM];		/* the MR's access flags */
	size_t mr_off[R_NUM], mr_len[R_NUM];
	int may_change[R_NUM];		/* bytes inside the MR may change */
	uint32_t stale[64];		/* old rkeys of the stale region */
	int nstale, stale_rot;
	int gid_idx;
	union ibv_gid peer_gid;
	enum ibv_mtu mtu;
	int raw;			/* raw socket in NS */
	int alt;			/* packet socket on fz3, in NS */
	int alt_ifindex;
	int cap[2], ncap;		/* capture on fz1 and fz3, in NS */
	uint8_t marker[8], marker2[8];	/* this process's, the other's */
	uint8_t *sendbuf;		/* what the targets' own sends send */
	struct ibv_mr *send_mr;
	struct ibv_ah *ah[2];		/* to IP1, to IP0 */
	int nah;
	int slow;
	uint8_t rc_acc[PEERS];		/* each round's RC target's rights */
	int quiet, round;		/* in the quiet phase of round */
	struct other_info other;	/* the other user's objects */
	uint32_t other_exp;		/* its RC QP's expected PSN */
	int have_other;
} g;

/* What the capture found. */
static struct {
	unsigned long pkts, answers;
	unsigned long leaks, leaks2;	/* markers seen */
	unsigned long wrong_answers;	/* a READ/ATOMIC answered sans right */
	unsigned long quiet_answers;	/* answers in the quiet phase */
} cap;

/* The target QPs of a round. */
struct target {
	struct ibv_qp *rc, *uc, *ud;
	uint32_t rc_rq_psn, rc_sq_psn, uc_rq_psn;
	uint32_t rc_exp, uc_exp;	/* the PSNs the responders expect */
	int rc_acc, uc_acc;
	int mcast;			/* the UD target is in MCAST_IP */
	uint32_t prev[3];		/* the previous round's QPNs, or 0 */
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

	switch (fz_below(r, 12)) {
	case 0: case 1: case 2:
		return g.mr[R_GRANTED]->rkey;
	case 3:
		return g.mr[R_LOCAL + fz_below(r, R_NUM - R_LOCAL)]->rkey;
	case 4:
		return g.mr[R_OTHER_PD]->rkey;
	case 5:
		return g.stale[fz_below(r, g.nstale)];
	case 6:
		k = g.mr[R_GRANTED]->rkey;
		return k ^ (1u << fz_below(r, 32));	/* another key byte */
	case 7: case 8:
		return g.mr[R_RO + fz_below(r, 3)]->rkey;
	case 9:
		if (g.have_other)
			return g.other.rkey;
		/* fall through */
	default:
		return fz_interesting32(r);
	}
}

/* A virtual address in or around one of the regions, or anywhere. */
static uint64_t pick_va(struct fz_rng *r, uint32_t len)
{
	int i = fz_below(r, R_NUM + 1);
	uint64_t base;
	size_t mlen;

	if (i == R_NUM && g.have_other) {
		base = g.other.va;
		mlen = g.other.len;
	} else {
		i %= R_NUM;
		base = (uintptr_t)g.map[i] + g.mr_off[i];
		mlen = g.mr_len[i];
	}
	switch (fz_below(r, 8)) {
	case 0: case 1: case 2:		/* inside */
		return base + fz_below(r, mlen + 1);
	case 3:				/* ending at the edge or beyond */
		return base + mlen - len + fz_below(r, 9) - 4;
	case 4:				/* starting before */
		return base - fz_below(r, 64);
	case 5:
		return base + mlen - fz_below(r, 8);
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
 * A key and an address inside the memory it names: a region's MR, an old
 * key of the stale one, the other user's MR.  @len bytes fit if they can.
 */
static void pick_key_va(struct fz_rng *r, uint32_t len, uint32_t *rkey,
			uint64_t *va)
{
	int i = fz_below(r, R_NUM + 2);
	uint64_t base;
	size_t mlen;

	if (i == R_NUM && g.have_other) {
		base = g.other.va;
		mlen = g.other.len;
		*rkey = g.other.rkey;
	} else {
		i = i >= R_NUM ? R_GRANTED : i;
		base = (uintptr_t)g.map[i] + g.mr_off[i];
		mlen = g.mr_len[i];
		*rkey = i == R_STALE ? g.stale[fz_below(r, g.nstale)] :
			g.mr[i]->rkey;
	}
	*va = base + (len < mlen ? fz_below(r, mlen - len + 1) : 0);
}

/* A request opcode that executes something, well formed. */
static int pick_request(struct fz_rng *r)
{
	static const uint8_t ops[] = { 0x04, 0x0a, 0x0c, 0x0c, 0x0c, 0x13,
				       0x14 };

	return ops[fz_below(r, sizeof(ops))];
}

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
	uint32_t qpn, psn, plen, pad, len, mtu = 128u << g.mtu;
	int op, el, bad_icrc = 0, damaged = 0, clean = 0;
	struct in_addr src;
	uint16_t id, sport;
	uint32_t *exp = NULL;

	/* Which QP, which opcode, which PSN. */
	switch (fz_below(r, 12)) {
	case 0: case 1: case 2: case 3:
		qpn = t->rc->qp_num;
		if (fz_one_in(r, 3)) {
			/* At the expected PSN or a few behind (duplicates). */
			clean = 1;
			op = pick_request(r);
			psn = t->rc_exp - (fz_one_in(r, 2) ? 0 :
					   1 + fz_below(r, 3));
		} else {
			op = fz_below(r, 0x20);
			if (op >= 0x0d && op <= 0x12)	/* our requests' */
				psn = t->rc_sq_psn + fz_below(r, 16) - 4;
			else
				psn = t->rc_exp + (fz_one_in(r, 2) ? 0 :
						   fz_below(r, 16) - 4);
		}
		exp = &t->rc_exp;
		break;
	case 4: case 5:
		qpn = t->uc->qp_num;
		op = 0x20 + fz_below(r, 0x20);
		psn = t->uc_exp + (fz_one_in(r, 2) ? 0 : fz_below(r, 16) - 4);
		exp = &t->uc_exp;
		break;
	case 6: case 7:
		qpn = fz_one_in(r, 4) ? 1 : t->ud->qp_num;	/* QP1 too */
		if (fz_one_in(r, 3))		/* RC answers: not for UD */
			op = 0x0d + fz_below(r, 6);
		else
			op = fz_one_in(r, 4) ? fz_below(r, 256) :
			     0x64 + fz_below(r, 2);
		psn = fz_u32(r);
		break;
	case 8:
		qpn = fz_one_in(r, 2) ? fz_below(r, 64) : fz_u32(r);
		op = fz_below(r, 256);
		psn = fz_u32(r);
		break;
	case 9:
		if (g.have_other) {
			/* The other user's QPs, keys and memory. */
			if (fz_one_in(r, 3)) {
				qpn = g.other.ud_qpn;
				op = 0x64;
				psn = fz_u32(r);
			} else {
				qpn = g.other.rc_qpn;
				op = fz_one_in(r, 2) ? pick_request(r) :
				     fz_below(r, 0x20);
				psn = g.other_exp - fz_below(r, 3);
				exp = &g.other_exp;
				clean = 1;
			}
			break;
		}
		/* fall through */
	default:
		/*
		 * A QPN of the previous round (destroyed) or another target's:
		 * never just any neighbour, which may be the live pair's.
		 */
		qpn = t->prev[fz_below(r, 3)];
		if (!qpn || fz_one_in(r, 2))
			qpn = (uint32_t[]){ t->rc->qp_num, t->uc->qp_num,
					    t->ud->qp_num }[fz_below(r, 3)];
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
		plen = clean ? 8 : mtu + 1 + fz_below(r, 64);	/* > MTU */
		break;
	case 3:
		plen = 8;				/* atomic-sized */
		break;
	default:
		plen = fz_below(r, mtu + 1);
	}
	if ((op & 0x1f) == 0x0c || (op & 0x1f) == 0x13 || (op & 0x1f) == 0x14)
		plen = clean ? 0 : plen;	/* requests without payload */
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
	if (!clean && fz_one_in(r, 32))
		bth[1] = fz_u32(r);	/* SE, MigReq, pad, TVer */
	bth[2] = bth[3] = 0xff;
	if (!clean && fz_one_in(r, 32))
		bth[2] = fz_u32(r), bth[3] = fz_u32(r);	/* P_Key */
	put32(bth + 4, qpn & 0xffffff);
	if (!clean && fz_one_in(r, 32))
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
		if (clean) {
			uint32_t dl = op == 0x0c ? 1 + fz_below(r, 2 * mtu) :
				      plen, key;
			uint64_t va;

			pick_key_va(r, dl, &key, &va);
			put64(p, va);
			put32(p + 8, key);
			put32(p + 12, dl);
			break;
		}
		put64(p, pick_va(r, plen));
		put32(p + 8, pick_rkey(r));
		put32(p + 12, pick_len(r, op == 0x0c ? fz_below(r, 4 * mtu) :
				       plen));
		break;
	case 0x13: case 0x14:				/* AtomicETH */
		if (op >= 0x40)
			break;
		if (clean) {
			uint32_t key;
			uint64_t va;

			pick_key_va(r, 8, &key, &va);
			put64(p, va & ~7ull);
			put32(p + 8, key);
			break;
		}
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
		put32(p, fz_one_in(r, 2) ? QKEY : 0x80000000);	/* Q_Key */
	p += el;
	fz_bytes(r, p, plen);
	p += plen + pad;

	/* Damage after the fact: the ICRC still covers it. */
	if (!clean && fz_one_in(r, 8)) {
		int n = 1 + fz_below(r, 4);

		while (n--)
			bth[fz_below(r, 12 + el)] ^= 1 << fz_below(r, 8);
		st->mutated++;
		damaged = 1;
	}

	wire_icrc(pkt, len);
	if (!clean && fz_one_in(r, 16)) {
		p[fz_below(r, 4)] ^= 1 << fz_below(r, 8);
		bad_icrc = 1;
		damaged = 1;
	}

	/* Truncated: anywhere from no BTH at all to one byte short. */
	if (!clean && fz_one_in(r, 10)) {
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

/*
 * A socket made in NS (socket(2)'s @domain, @type, @proto); with @ifname,
 * bound to that interface of NS (AF_PACKET), its index in *@ifindex.
 */
static int socket_in_ns(int domain, int type, int proto, const char *ifname,
			int *ifindex)
{
	int self_ns, ns, fd = -1;

	self_ns = open("/proc/self/ns/net", O_RDONLY);
	ns = open("/run/netns/" NS, O_RDONLY);
	if (self_ns >= 0 && ns >= 0 && !setns(ns, CLONE_NEWNET)) {
		fd = socket(domain, type, proto);
		if (fd >= 0 && ifname) {
			struct sockaddr_ll sll = {
				.sll_family = AF_PACKET,
				.sll_protocol = htons(ETH_P_IP),
				.sll_ifindex = if_nametoindex(ifname),
			};

			*ifindex = sll.sll_ifindex;
			if (!sll.sll_ifindex ||
			    bind(fd, (struct sockaddr *)&sll, sizeof(sll))) {
				close(fd);
				fd = -1;
			}
		}
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

/* A capture of what comes in on @ifname of NS: the device's packets. */
static int capture_open(const char *ifname)
{
	int fd, idx, sz = 8 << 20;

	fd = socket_in_ns(AF_PACKET, SOCK_DGRAM | SOCK_NONBLOCK,
			  htons(ETH_P_IP), ifname, &idx);
	if (fd >= 0)
		setsockopt(fd, SOL_SOCKET, SO_RCVBUFFORCE, &sz, sizeof(sz));
	return fd;
}

/* The byte at @addr of memory that nothing grants reading. */
static uint8_t marked(const uint8_t *m, const void *addr)
{
	return m[(uintptr_t)addr & 7];
}

/* Whether the round's targets may read region @i through its MR. */
static int readable(int i, const struct target *t)
{
	if (i == R_STALE)
		return !!(g.mr_acc[i] & RR);	/* its key is never sent */
	return (i == R_GRANTED || i == R_RO) && (t->rc_acc & RR);
}

/*
 * Fill region @i: the MR's bytes with a pattern if the round's targets may
 * read them, every other byte with the marker.
 */
static void fill_region(int i, const struct target *t)
{
	size_t j, lo = g.mr_off[i], hi = lo + g.mr_len[i];
	int rd = readable(i, t);

	for (j = 0; j < REGION; j++)
		g.pat[i][j] = rd && j >= lo && j < hi ?
			      (uint8_t)(j * 31 + i * 101 + 7) :
			      marked(g.marker, g.map[i] + j);
	memcpy(g.map[i], g.pat[i], REGION);
}

/* What the round's targets may change: by the MRs' and the QPs' rights. */
static void rights_setup(const struct target *t)
{
	int w = (t->rc_acc | t->uc_acc) & RW, a = t->rc_acc & RA, i;

	for (i = 0; i < R_NUM; i++) {
		int acc = g.mr_acc[i];

		g.may_change[i] = i == R_READDST || i == R_RECV;
		if (i == R_GRANTED || i == R_WO || i == R_AO)
			g.may_change[i] = (w && (acc & RW)) || (a && (acc & RA));
		fill_region(i, t);
	}
}

static int regions_setup(void)
{
	static const int acc[R_NUM] = {
		[R_GRANTED] = LW | RW | RR | RA, [R_LOCAL] = LW,
		[R_OTHER_PD] = LW | RW | RR | RA, [R_STALE] = LW | RW | RR | RA,
		[R_READDST] = LW, [R_RECV] = LW, [R_RO] = RR,
		[R_WO] = LW | RW, [R_AO] = LW | RA,
	};
	int i;

	for (i = 0; i < R_NUM; i++) {
		g.map[i] = mmap(NULL, REGION, PROT_READ | PROT_WRITE,
				MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
		g.pat[i] = malloc(REGION);
		if (g.map[i] == MAP_FAILED || !g.pat[i])
			return -1;
		/* Not page aligned at either end: a page-granular bug
		 * would write the bytes around the MR.
		 */
		g.mr_off[i] = 4096 * 4 + 100 + 8 * i;
		g.mr_len[i] = 3 * 4096 + 37;
		g.mr_acc[i] = acc[i];
		g.mr[i] = ibv_reg_mr(i == R_OTHER_PD ? g.pd2 : g.pd,
				     g.map[i] + g.mr_off[i], g.mr_len[i],
				     acc[i]);
		if (!g.mr[i])
			return -1;
	}
	g.sendbuf = calloc(1, 4096);
	if (!g.sendbuf)
		return -1;
	for (i = 0; i < 4096; i++)
		g.sendbuf[i] = i * 7 + 3;
	g.send_mr = ibv_reg_mr(g.pd, g.sendbuf, 4096, LW);
	return g.send_mr ? 0 : -1;
}

/*
 * Deregister the stale region's MR and register the range again, every
 * other time without REMOTE_READ: its old rkey joins the pool of stale
 * keys the packets use, the new one must be none of them.  Returns 0, or
 * -1 when a key came back.
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
	g.mr_acc[R_STALE] = LW | RW | RA | (g.stale_rot++ % 2 ? RR : 0);
	g.mr[R_STALE] = ibv_reg_mr(g.pd, g.map[R_STALE] + g.mr_off[R_STALE],
				   g.mr_len[R_STALE], g.mr_acc[R_STALE]);
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

/*
 * Bytes that changed where no rkey grants a write (@all: anywhere); the
 * first printed.
 */
static long sentinel_check(const char *when, int all)
{
	long bad = 0;
	int i;

	for (i = 0; i < R_NUM; i++) {
		size_t j, lo = g.mr_off[i], hi = lo + g.mr_len[i];

		for (j = 0; j < REGION; j++) {
			if (!all && g.may_change[i] && j >= lo && j < hi)
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

/* ---- what the device sends: the capture ------------------------------ */

/* Whether @p (@n bytes) holds 8 bytes of memory marked with @m. */
static int has_marker(const uint8_t *p, size_t n, const uint8_t *m)
{
	uint8_t rot[8];
	int k, j;

	for (k = 0; k < 8; k++) {
		for (j = 0; j < 8; j++)
			rot[j] = m[(k + j) & 7];
		if (memmem(p, n, rot, 8))
			return 1;
	}
	return 0;
}

/*
 * One packet that came in on fz1 or fz3 of NS (@p, @n bytes, from the IP
 * header on): the device's, if it is RoCEv2 and not one this program
 * sent.  It must not hold either marker, nor be an answer the QP that
 * sent it may not give.
 */
static void capture_one(uint8_t *p, size_t n)
{
	struct iphdr *ip = (struct iphdr *)p;
	struct udphdr *udp;
	uint32_t dqpn, psn;
	uint8_t *bth, op;
	size_t hl;
	int acc = -1, round = -1;

	if (n < sizeof(*ip) || ip->version != 4 || ip->protocol != IPPROTO_UDP)
		return;
	hl = ip->ihl * 4;
	if (n < hl + 8 + 12)
		return;
	udp = (struct udphdr *)(p + hl);
	if (udp->dest != htons(WIRE_ROCE_PORT) ||
	    udp->source == htons(INJECT_PORT))
		return;
	cap.pkts++;
	bth = p + hl + 8;
	op = bth[0];
	dqpn = ntohl(*(uint32_t *)(bth + 4)) & 0xffffff;
	psn = ntohl(*(uint32_t *)(bth + 8)) & 0xffffff;
	if ((dqpn & ~0xffffu) == 0x430000 && !(dqpn & 3)) {
		round = (dqpn >> 2) % PEERS;
		acc = g.rc_acc[round];
	} else if (dqpn == OTHER_PEER_QPN) {
		acc = 0;
	}
	if (acc >= 0 && op >= 0x0d && op <= 0x12) {
		const char *why = NULL;
		unsigned long *nr = NULL;

		cap.answers++;
		if (g.quiet && round == g.round % PEERS) {
			why = "answers a packet that did not come from the wire";
			nr = &cap.quiet_answers;
		} else if (op <= 0x10 && op != 0x0e && !(acc & RR)) {
			why = "is a READ response of a QP without REMOTE_READ";
			nr = &cap.wrong_answers;
		} else if (op == 0x12 && !(acc & RA)) {
			why = "is an ATOMIC ACK of a QP without REMOTE_ATOMIC";
			nr = &cap.wrong_answers;
		}
		if (nr && ++*nr <= 3)
			printf("# a packet of opcode %#x to QP %#x PSN %#x %s\n",
			       op, dqpn, psn, why);
	}
	/* An ATOMIC ACK returns the original value: the QP may read it. */
	if (op == 0x12 && acc > 0 && (acc & RA) && n >= hl + 8 + 24)
		memset(bth + 16, 0, 8);
	if (has_marker(bth, n - hl - 8, g.marker)) {
		if (cap.leaks++ < 3)
			printf("# a packet of opcode %#x to QP %#x PSN %#x carries memory nothing grants reading%s\n",
			       op, dqpn, psn, g.quiet ? " (quiet phase)" : "");
	}
	if (has_marker(bth, n - hl - 8, g.marker2)) {
		if (!cap.leaks2++)
			printf("# a packet of opcode %#x to QP %#x PSN %#x carries the other user's memory\n",
			       op, dqpn, psn);
	}
}

/* Everything captured so far. */
static void capture_drain(void)
{
	uint8_t buf[4096];
	int i;

	for (i = 0; i < g.ncap; i++) {
		for (;;) {
			struct sockaddr_ll sll;
			socklen_t sl = sizeof(sll);
			ssize_t n = recvfrom(g.cap[i], buf, sizeof(buf), 0,
					     (struct sockaddr *)&sll, &sl);

			if (n < 0)
				break;
			if (sll.sll_pkttype == PACKET_OUTGOING)
				continue;
			capture_one(buf, n);
		}
	}
}

/* ---- the quiet phase: packets that must not be executed -------------- */

enum route { LO_UNI, LO_BCAST, LO_MCAST, ALT, WIRE };

struct inj {
	uint8_t pkt[WIRE_HDR_LEN + 1100];
	size_t len;
	enum route route;
};

static uint16_t ip_csum(const void *hdr, size_t n)
{
	const uint16_t *w = hdr;
	uint32_t s = 0;

	while (n > 1) {
		s += *w++;
		n -= 2;
	}
	while (s >> 16)
		s = (s & 0xffff) + (s >> 16);
	return ~s;
}

/*
 * A well formed packet of opcode @op to @qpn at @psn, with extension
 * headers @ext (@el bytes) and @plen random payload bytes, for @route:
 * the IPv4 header is the one the kernel builds for the local socket
 * (source IP0, identification 0, DF) or the one fz3 sends.
 */
static void inj_build(struct fz_rng *r, struct inj *in, enum route route,
		      uint8_t op, uint32_t qpn, uint32_t psn,
		      const uint8_t *ext, int el, uint32_t plen)
{
	static const char *const dst[] = {
		[LO_UNI] = IP0, [LO_BCAST] = IP0_BCAST, [LO_MCAST] = MCAST_IP,
		[ALT] = IP0, [WIRE] = IP0,
	};
	uint8_t *bth = in->pkt + WIRE_HDR_LEN - 12;
	uint32_t pad = (4 - plen % 4) % 4;
	struct in_addr sa, da;
	int lo = route <= LO_MCAST;

	in->route = route;
	in->len = WIRE_HDR_LEN + el + plen + pad + 4;
	memset(in->pkt, 0, in->len);
	inet_pton(AF_INET, lo ? IP0 : route == ALT && fz_one_in(r, 2) ?
		  IP_ALT : IP1, &sa);
	inet_pton(AF_INET, dst[route], &da);
	wire_ip_udp(in->pkt, in->len, &sa, &da, lo ? 0 : 1 + fz_below(r, 65535),
		    lo ? INJECT_PORT : 0xc000 | fz_below(r, 0x4000));
	bth[0] = op;
	bth[1] = pad << 4;
	bth[2] = bth[3] = 0xff;
	put32(bth + 4, qpn);
	put32(bth + 8, 0x80000000u | (psn & 0xffffff));
	memcpy(bth + 12, ext, el);
	fz_bytes(r, bth + 12 + el, plen);
	wire_icrc(in->pkt, in->len);
	if (route == ALT) {
		struct iphdr *ip = (struct iphdr *)in->pkt;

		ip->check = ip_csum(ip, sizeof(*ip));
	}
}

/*
 * The packets of the local socket, sent by a child process of user nobody
 * from a plain UDP socket bound to IP0 (not connected, DF: identification
 * 0, as inj_build() assumes).  Returns how many were sent.
 */
static int inject_local(const struct inj *in, int n)
{
	int status, i, sent = 0;
	pid_t pid;

	fflush(stdout);
	pid = fork();
	if (pid < 0)
		return 0;
	if (!pid) {
		struct sockaddr_in src = { .sin_family = AF_INET,
					   .sin_port = htons(INJECT_PORT) };
		int fd, on = 1, pmtu = IP_PMTUDISC_DO;
		struct in_addr mif;

		if (setgroups(0, NULL) || setgid(65534) || setuid(65534))
			_exit(0);
		fd = socket(AF_INET, SOCK_DGRAM, 0);
		inet_pton(AF_INET, IP0, &src.sin_addr);
		mif = src.sin_addr;
		if (fd < 0 ||
		    setsockopt(fd, IPPROTO_IP, IP_MTU_DISCOVER, &pmtu,
			       sizeof(pmtu)) ||
		    setsockopt(fd, SOL_SOCKET, SO_BROADCAST, &on,
			       sizeof(on)) ||
		    setsockopt(fd, IPPROTO_IP, IP_MULTICAST_IF, &mif,
			       sizeof(mif)) ||
		    bind(fd, (struct sockaddr *)&src, sizeof(src)))
			_exit(0);
		for (i = 0; i < n; i++) {
			struct sockaddr_in dst = {
				.sin_family = AF_INET,
				.sin_port = htons(WIRE_ROCE_PORT),
			};

			if (in[i].route > LO_MCAST)
				continue;
			memcpy(&dst.sin_addr, in[i].pkt + 16, 4);
			sent += sendto(fd, in[i].pkt + 28, in[i].len - 28, 0,
				       (struct sockaddr *)&dst, sizeof(dst)) ==
				(ssize_t)(in[i].len - 28);
		}
		_exit(sent);
	}
	if (fz_wait_child(pid, &status, 30 * g.slow)) {
		printf("# the local socket's sender did not end within %d s\n",
		       30 * g.slow);
		return 0;
	}
	return WIFEXITED(status) ? WEXITSTATUS(status) : 0;
}

/* Send @in by fz3 (to fz2's MAC) or by the raw socket of NS. */
static int inject_ns(const struct inj *in)
{
	struct sockaddr_ll ll = {
		.sll_family = AF_PACKET, .sll_protocol = htons(ETH_P_IP),
		.sll_ifindex = g.alt_ifindex, .sll_halen = 6,
	};
	struct sockaddr_in to = { .sin_family = AF_INET };

	if (in->route == ALT) {
		memcpy(ll.sll_addr, FZ2_MAC, 6);
		return sendto(g.alt, in->pkt, in->len, 0,
			      (struct sockaddr *)&ll, sizeof(ll)) ==
		       (ssize_t)in->len;
	}
	inet_pton(AF_INET, IP0, &to.sin_addr);
	return sendto(g.raw, in->pkt, in->len, 0, (struct sockaddr *)&to,
		      sizeof(to)) == (ssize_t)in->len;
}

struct quiet_stats {
	unsigned long injected, answers_to_ud;
	long long wrong_netdev, malformed;
	int bad, bad_count, bad_malformed;
};

/*
 * The quiet phase of a round: requests and answers with every field right
 * for the targets @t (and the other user's RC QP), from the local socket
 * and from fz3, and RC answers to the UD target and QP1 from the wire.
 * None may change memory, complete anything or be answered.
 */
static void quiet_phase(struct fz_rng *r, struct target *t,
			struct quiet_stats *qs, const char *when)
{
	struct inj in[16];
	uint8_t ext[28];
	uint32_t mtu = (128u << g.mtu) > 1024 ? 1024 : 128u << g.mtu;
	long long wn, mal;
	struct ibv_wc wc;
	int n = 0, i, lo = 0, ns = 0, answers = 0, k;
	uint64_t va = (uintptr_t)g.map[R_GRANTED] + g.mr_off[R_GRANTED];

	capture_drain();
	wn = rc_hw_counter(ibv_get_device_name(g.ctx->device), "wrong_netdev");
	mal = rc_hw_counter(ibv_get_device_name(g.ctx->device), "malformed");
	g.quiet = 1;
	for (i = 0; i < 10; i++) {
		enum route rt = (enum route[]){ LO_UNI, LO_BCAST, ALT,
						ALT }[fz_below(r, 4)];

		memset(ext, 0, sizeof(ext));
		put64(ext, va + 8 * fz_below(r, 64));
		put32(ext + 8, g.mr[R_GRANTED]->rkey);
		switch (fz_below(r, 9)) {
		case 0:
			inj_build(r, &in[n++], rt, 0x04, t->rc->qp_num,
				  t->rc_exp, ext, 0, 16);
			break;
		case 1:
			put32(ext + 12, 16);
			inj_build(r, &in[n++], rt, 0x0a, t->rc->qp_num,
				  t->rc_exp, ext, 16, 16);
			break;
		case 2: case 3:
			put32(ext + 12, 64);
			inj_build(r, &in[n++], rt, 0x0c, t->rc->qp_num,
				  t->rc_exp - (i & 1), ext, 16, 0);
			break;
		case 4:
			put64(ext + 12, 1);
			inj_build(r, &in[n++], rt, 0x14, t->rc->qp_num,
				  t->rc_exp, ext, 28, 0);
			break;
		case 5:		/* the first of the RC target's READ's */
			memset(ext, 0, 4);
			ext[0] = 0x1f;
			inj_build(r, &in[n++], rt, 0x0d, t->rc->qp_num,
				  t->rc_sq_psn, ext, 4, mtu);
			break;
		case 6:
			put32(ext + 12, 16);
			inj_build(r, &in[n++], rt, i & 1 ? 0x2a : 0x24,
				  t->uc->qp_num, t->uc_exp, ext,
				  i & 1 ? 16 : 0, 16);
			break;
		case 7:
			put32(ext, QKEY);
			put32(ext + 4, 0x123);
			inj_build(r, &in[n++], rt, 0x64, t->ud->qp_num, 0,
				  ext, 8, 32);
			break;
		default:
			if (!g.have_other)
				break;
			inj_build(r, &in[n++], rt, 0x04, g.other.rc_qpn,
				  g.other_exp, ext, 0, 16);
		}
	}
	if (t->mcast) {
		put32(ext, QKEY);
		put32(ext + 4, 0x123);
		inj_build(r, &in[n++], LO_MCAST, 0x64, MCAST_QPN, 0, ext, 8,
			  32);
	}
	/* RC answers from the wire to QPs that are not RC. */
	for (k = 0; k < 3; k++) {
		static const uint8_t op[] = { 0x11, 0x10, 0x12 };

		memset(ext, 0, sizeof(ext));
		ext[0] = 0x1f;
		ext[3] = 1;
		inj_build(r, &in[n++], WIRE, op[k], k == 1 ? 1 : t->ud->qp_num,
			  fz_u32(r), ext, op[k] == 0x12 ? 12 : 4,
			  op[k] == 0x10 ? 4 : 0);
	}

	lo = inject_local(in, n);
	for (i = 0; i < n; i++) {
		if (in[i].route < ALT || !inject_ns(&in[i]))
			continue;
		if (in[i].route == ALT)
			ns++;
		else
			answers++;
	}
	usleep(150 * 1000 * g.slow);
	capture_drain();
	g.quiet = 0;
	qs->injected += lo + ns;
	qs->answers_to_ud += answers;

	/*
	 * A WR of the RC target with the other user's key may fail by now
	 * (and the QP's receives be flushed); a success or a receive can
	 * only be the injected packets' doing.
	 */
	while (ibv_poll_cq(g.cq, 1, &wc) > 0) {
		if (wc.status == IBV_WC_WR_FLUSH_ERR ||
		    (wc.status != IBV_WC_SUCCESS && !(wc.opcode & IBV_WC_RECV)))
			continue;
		if (!qs->bad)
			printf("# %s: a CQE for a packet that did not come from the wire: qp %#x status %d opcode %d\n",
			       when, wc.qp_num, wc.status, wc.opcode);
		qs->bad++;
	}
	if (sentinel_check(when, 1)) {
		printf("# %s: a packet that did not come from the wire wrote memory\n",
		       when);
		qs->bad++;
		for (k = 0; k < R_NUM; k++)
			memcpy(g.map[k], g.pat[k], REGION);
	}
	wn = rc_hw_counter(ibv_get_device_name(g.ctx->device),
			   "wrong_netdev") - wn;
	mal = rc_hw_counter(ibv_get_device_name(g.ctx->device),
			    "malformed") - mal;
	qs->wrong_netdev += wn;
	qs->malformed += mal;
	if (wn != lo + ns) {
		if (!qs->bad_count++)
			printf("# %s: wrong_netdev +%lld for %d packets from this host and %d from fz3\n",
			       when, wn, lo, ns);
	}
	if (mal < answers) {
		if (!qs->bad_malformed++)
			printf("# %s: malformed +%lld for %d RC answers to UD and QP1\n",
			       when, mal, answers);
	}
}

/* ---- the UD target's own sends --------------------------------------- */

static void ud_sends(struct fz_rng *r, struct ibv_qp *ud, int n)
{
	struct ibv_qp_attr a = { .qp_state = IBV_QPS_RTS };

	if (fz_qp_state(ud) == IBV_QPS_SQE)
		ibv_modify_qp(ud, &a, IBV_QP_STATE);
	while (n-- > 0) {
		struct ibv_sge s = {
			(uintptr_t)g.sendbuf + fz_below(r, 2048),
			1 + fz_below(r, 1024), g.send_mr->lkey,
		};
		struct ibv_send_wr wr = {
			.sg_list = &s, .num_sge = 1, .opcode = IBV_WR_SEND,
			.send_flags = fz_one_in(r, 2) ? IBV_SEND_SIGNALED : 0,
		}, *bad;

		/* The other user's memory, by its key: refused. */
		if (g.have_other && fz_one_in(r, 3)) {
			s.addr = g.other.va + fz_below(r, 1024);
			s.lkey = g.other.lkey;
		}
		wr.wr.ud.ah = g.ah[fz_below(r, g.nah)];
		wr.wr.ud.remote_qkey = QKEY;
		/* To itself only through this device's own address. */
		wr.wr.ud.remote_qpn = UD_DST_QPN + fz_below(r, 4);
		if (fz_one_in(r, 4)) {
			wr.wr.ud.ah = g.ah[1];
			wr.wr.ud.remote_qpn = ud->qp_num;
		}
		ibv_post_send(ud, &wr, &bad);
	}
}

static struct ibv_ah *ah_to(const char *ip)
{
	struct ibv_ah_attr aa = {
		.is_global = 1, .port_num = 1,
		.grh = { .sgid_index = g.gid_idx, .hop_limit = 64 },
	};

	aa.grh.dgid.raw[10] = aa.grh.dgid.raw[11] = 0xff;
	inet_pton(AF_INET, ip, aa.grh.dgid.raw + 12);
	return ibv_create_ah(g.pd, &aa);
}

/* ---- the other user -------------------------------------------------- */

/*
 * The other user's process: its own PD, an MR with every remote right over
 * memory holding marker2, an RC QP without remote rights (connected to
 * nobody), a UD QP.  It tells @wfd its objects, learns from @rfd this
 * process's local-only MR, posts sends and receives with that MR's key
 * until a byte (or the end) comes from @rfd, and checks its memory
 * meanwhile.  The byte, not the end alone: the live pair's process and
 * the local socket's sender inherit the pipe's other end too.  Exit status
 * 0 if no byte of its memory changed.
 */
static int other_run(const char *dev, int rfd, int wfd)
{
	struct rlimit rl = { RLIM_INFINITY, RLIM_INFINITY };
	struct ibv_qp_init_attr qa = {
		.cap = { .max_send_wr = 32, .max_recv_wr = 32,
			 .max_send_sge = 1, .max_recv_sge = 1 },
	};
	struct other_info me = { 0 }, them;
	struct ibv_context *ctx;
	struct ibv_pd *pd;
	struct ibv_cq *cq;
	struct ibv_mr *mr;
	struct ibv_qp *rc, *ud;
	struct ibv_ah *ah;
	struct ibv_wc wc[16];
	struct ibv_port_attr port;
	union ibv_gid peer = { 0 };
	unsigned long sends = 0, recvs = 0, loops = 0;
	long changed = 0;
	uint8_t *mem;
	int gi, recv_out = 0;
	size_t j;

	setrlimit(RLIMIT_MEMLOCK, &rl);
	if (setgroups(0, NULL) || setgid(65534) || setuid(65534))
		return 2;
	mem = mmap(NULL, REGION, PROT_READ | PROT_WRITE,
		   MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (mem == MAP_FAILED)
		return 2;
	for (j = 0; j < REGION; j++)
		mem[j] = marked(g.marker2, mem + j);
	ctx = rc_open_by_name(dev);
	gi = rc_find_gid(dev);
	if (!ctx || gi < 0 || ibv_query_port(ctx, 1, &port))
		return 2;
	pd = ibv_alloc_pd(ctx);
	cq = ibv_create_cq(ctx, 128, NULL, NULL, 0);
	if (!pd || !cq)
		return 2;
	mr = ibv_reg_mr(pd, mem + 8192 + 44, 3 * 4096 + 13,
			LW | RW | RR | RA);
	qa.send_cq = qa.recv_cq = cq;
	qa.qp_type = IBV_QPT_RC;
	rc = ibv_create_qp(pd, &qa);
	qa.qp_type = IBV_QPT_UD;
	ud = ibv_create_qp(pd, &qa);
	peer.raw[10] = peer.raw[11] = 0xff;
	inet_pton(AF_INET, IP1, peer.raw + 12);
	if (!mr || !rc || !ud ||
	    fz_connect_access(rc, gi, port.active_mtu, OTHER_PEER_QPN, &peer,
			      0x1000, 0x2000, 18, 7, 0) ||
	    fz_connect(ud, gi, port.active_mtu, 0, NULL, 0, 0, 0, 0))
		return 2;
	ah = ibv_create_ah(pd, &(struct ibv_ah_attr){
		.is_global = 1, .port_num = 1,
		.grh = { .dgid = peer, .sgid_index = gi, .hop_limit = 64 },
	});
	me.va = (uintptr_t)mr->addr;
	me.len = mr->length;
	me.lkey = mr->lkey;
	me.rkey = mr->rkey;
	me.rc_qpn = rc->qp_num;
	me.ud_qpn = ud->qp_num;
	me.rc_psn = 0x1000;
	if (!ah || write(wfd, &me, sizeof(me)) != sizeof(me) ||
	    poll(&(struct pollfd){ rfd, POLLIN }, 1, 60000 * g.slow) <= 0 ||
	    read(rfd, &them, sizeof(them)) != sizeof(them))
		return 2;

	for (;;) {
		struct pollfd pfd = { rfd, POLLIN };
		struct ibv_sge s = { them.va + loops % 512, 64 + loops % 512,
				     them.lkey };
		struct ibv_send_wr wr = {
			.sg_list = &s, .num_sge = 1, .opcode = IBV_WR_SEND,
			.send_flags = IBV_SEND_SIGNALED,
		}, *bw;
		struct ibv_recv_wr rw = { .sg_list = &s, .num_sge = 1 }, *br;
		struct ibv_qp_attr a = { .qp_state = IBV_QPS_RTS };
		int n, i;

		if (poll(&pfd, 1, 20) > 0)
			break;	/* the end */
		loops++;
		if (fz_qp_state(ud) == IBV_QPS_SQE)
			ibv_modify_qp(ud, &a, IBV_QP_STATE);
		wr.wr.ud.ah = ah;
		wr.wr.ud.remote_qpn = UD_DST_QPN;
		wr.wr.ud.remote_qkey = QKEY;
		sends += !ibv_post_send(ud, &wr, &bw);
		if (recv_out < 16) {
			recv_out += !ibv_post_recv(ud, &rw, &br);
			recv_out += !ibv_post_recv(rc, &rw, &br);
			recvs += 2;
		}
		while ((n = ibv_poll_cq(cq, 16, wc)) > 0)
			for (i = 0; i < n; i++)
				recv_out -= !!(wc[i].opcode & IBV_WC_RECV);
		for (j = 0; j < REGION; j++) {
			if (mem[j] == marked(g.marker2, mem + j))
				continue;
			if (!changed)
				printf("# the other user's memory: byte %zd from its MR's start is %#x\n",
				       j - 8192 - 44, mem[j]);
			changed++;
			mem[j] = marked(g.marker2, mem + j);
		}
	}
	printf("# the other user (uid %d) posted %lu sends and %lu receives with this process's key; %ld bytes of its memory changed\n",
	       getuid(), sends, recvs, changed);
	return changed ? 1 : 0;
}

/* Start other_run() in a child; its pid, its objects in g.other. */
static pid_t other_start(const char *dev, int *wfd)
{
	int to_child[2], to_parent[2];
	pid_t pid;

	if (pipe(to_child) || pipe(to_parent))
		return -1;
	fflush(stdout);
	pid = fork();
	if (!pid) {
		close(to_child[1]);
		close(to_parent[0]);
		_exit(other_run(dev, to_child[0], to_parent[1]));
	}
	close(to_child[0]);
	close(to_parent[1]);
	*wfd = to_child[1];
	if (pid > 0) {
		struct pollfd pfd = { to_parent[0], POLLIN };

		if (poll(&pfd, 1, 60000 * g.slow) > 0 &&
		    read(to_parent[0], &g.other, sizeof(g.other)) ==
		    sizeof(g.other)) {
			g.have_other = 1;
			g.other_exp = g.other.rc_psn;
		}
	}
	close(to_parent[0]);
	return pid;
}

/* ---- the target QPs -------------------------------------------------- */

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

/*
 * Receives into the receive MR: SENDs may land there.  Now and then one
 * with the other user's key and address (not for RC, which the error
 * would end).
 */
static void post_recvs(struct fz_rng *r, struct ibv_qp *qp, int n)
{
	struct ibv_sge s = {
		(uintptr_t)g.map[R_RECV] + g.mr_off[R_RECV],
		g.mr_len[R_RECV], g.mr[R_RECV]->lkey,
	};
	struct ibv_recv_wr wr = { .wr_id = qp->qp_num, .sg_list = &s,
				  .num_sge = 1 }, *bad;

	while (n-- > 0) {
		if (g.have_other && qp->qp_type != IBV_QPT_RC &&
		    fz_one_in(r, 8)) {
			struct ibv_sge o = { g.other.va, g.other.len,
					     g.other.lkey };

			wr.sg_list = &o;
			ibv_post_recv(qp, &wr, &bad);
			wr.sg_list = &s;
			continue;
		}
		if (ibv_post_recv(qp, &wr, &bad))
			break;
	}
}

/* The RC target's outstanding requests to its (absent) peer. */
static void post_requests(struct fz_rng *r, struct ibv_qp *qp)
{
	uint8_t *dst = g.map[R_READDST] + g.mr_off[R_READDST];
	struct ibv_sge s = { (uintptr_t)dst, 2048, g.mr[R_READDST]->lkey };
	struct ibv_send_wr wr = {
		.sg_list = &s, .num_sge = 1, .send_flags = IBV_SEND_SIGNALED,
	}, *bad;

	wr.opcode = IBV_WR_RDMA_READ;
	wr.wr.rdma.remote_addr = 0x10000;
	wr.wr.rdma.rkey = 0x1234;
	/* A forged response would write there through the other's key. */
	if (g.have_other && fz_one_in(r, 8)) {
		s.addr = g.other.va;
		s.lkey = g.other.lkey;
	}
	ibv_post_send(qp, &wr, &bad);
	s.addr = (uintptr_t)dst + 4096;
	s.lkey = g.mr[R_READDST]->lkey;
	wr.opcode = IBV_WR_ATOMIC_FETCH_AND_ADD;
	s.length = 8;
	wr.wr.atomic.remote_addr = 0x20000;
	wr.wr.atomic.rkey = 0x1234;
	ibv_post_send(qp, &wr, &bad);
	/* What it sends is its own: not of the marked memory. */
	wr.opcode = IBV_WR_SEND;
	s.addr = (uintptr_t)g.sendbuf;
	s.length = 100;
	s.lkey = g.send_mr->lkey;
	ibv_post_send(qp, &wr, &bad);
	wr.opcode = IBV_WR_RDMA_READ;
	s.addr = (uintptr_t)dst + 8192;
	s.length = 4096;
	s.lkey = g.mr[R_READDST]->lkey;
	ibv_post_send(qp, &wr, &bad);
}

/* The UD target's multicast group. */
static void mcast_gid(union ibv_gid *mgid)
{
	memset(mgid, 0, sizeof(*mgid));
	mgid->raw[10] = mgid->raw[11] = 0xff;
	inet_pton(AF_INET, MCAST_IP, mgid->raw + 12);
}

static int targets_create(struct fz_rng *r, struct target *t, int round,
			  const uint32_t *prev)
{
	union ibv_gid mgid;

	memset(t, 0, sizeof(*t));
	memcpy(t->prev, prev, sizeof(t->prev));
	t->rc_rq_psn = fz_u32(r) & 0xffffff;
	t->rc_sq_psn = fz_u32(r) & 0xffffff;
	t->uc_rq_psn = fz_u32(r) & 0xffffff;
	t->rc_exp = t->rc_rq_psn;
	t->uc_exp = t->uc_rq_psn;
	/* The rights: any of the three, the regions filled to match. */
	t->rc_acc = (fz_one_in(r, 2) ? RW : 0) | (fz_one_in(r, 2) ? RR : 0) |
		    (fz_one_in(r, 2) ? RA : 0);
	t->uc_acc = fz_one_in(r, 2) ? RW : 0;
	g.rc_acc[round % PEERS] = t->rc_acc;
	rights_setup(t);
	t->rc = target_qp(IBV_QPT_RC);
	t->uc = target_qp(IBV_QPT_UC);
	t->ud = target_qp(IBV_QPT_UD);
	if (!t->rc || !t->uc || !t->ud)
		return -1;
	/* Retries every ~1 s (timeout 18), 7 times: a round's length. */
	if (fz_connect_access(t->rc, g.gid_idx, g.mtu, PEER_QPN(round, 0),
			      &g.peer_gid, t->rc_rq_psn, t->rc_sq_psn, 18, 7,
			      t->rc_acc) ||
	    fz_connect_access(t->uc, g.gid_idx, g.mtu, PEER_QPN(round, 1),
			      &g.peer_gid, t->uc_rq_psn,
			      fz_u32(r) & 0xffffff, 0, 0, t->uc_acc) ||
	    fz_connect(t->ud, g.gid_idx, g.mtu, 0, NULL, 0, 0, 0, 0))
		return -1;
	mcast_gid(&mgid);
	t->mcast = !ibv_attach_mcast(t->ud, &mgid, 0);
	post_recvs(r, t->rc, 32);
	post_recvs(r, t->uc, 32);
	post_recvs(r, t->ud, 32);
	post_requests(r, t->rc);
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
			     wc[i].byte_len > g.mr_len[R_RECV])) {
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

/*
 * Destroy the target QPs; the UD target leaves its group first, as a QP
 * still attached cannot be destroyed (uverbs: EBUSY), and would live on,
 * taking the packets that the next rounds aim at its QPN.  Returns how
 * many could not be destroyed.
 */
static int targets_destroy(struct target *t, const char *when)
{
	struct ibv_qp *qp[3] = { t->rc, t->uc, t->ud };
	union ibv_gid mgid;
	int i, bad = 0, err;

	mcast_gid(&mgid);
	if (t->mcast && (err = ibv_detach_mcast(t->ud, &mgid, 0))) {
		printf("# %s: cannot detach UD QP %#x from its group: %s\n",
		       when, t->ud->qp_num, strerror(err));
		bad++;
	}
	for (i = 0; i < 3; i++) {
		if (!qp[i])
			continue;
		err = ibv_destroy_qp(qp[i]);
		if (err) {
			printf("# %s: cannot destroy QP %#x (type %d): %s\n",
			       when, qp[i]->qp_num, qp[i]->qp_type,
			       strerror(err));
			bad++;
		}
	}
	memset(t, 0, sizeof(*t));
	return bad;
}

static const char *const drop_counters[] = {
	"malformed", "icrc_errors", "no_qp", "seq_errors",
	"duplicate_requests", "duplicate_responses", "qkey_errors",
	"dropped_msgs", "nak_sent", "no_recv_wqe", "wrong_netdev",
	"read_replay_missed",
};
#define NDROP (sizeof(drop_counters) / sizeof(drop_counters[0]))

int main(int argc, char **argv)
{
	const char *dev0, *dev1;
	long long before[NDROP], d_icrc = 0, d_drop = 0;
	struct fuzz_stats st = { 0 };
	struct quiet_stats qs = { 0 };
	struct ibv_port_attr port;
	struct other_info mine;
	double end;
	uint64_t seed, m;
	unsigned long max_pkts = ~0ul;
	int round = 0, bad_rounds = 0, bad_keys = 0, cqe_bad = 0;
	int other_fd = -1, other_ok = 0, ost = 0, bad_destroy = 0;
	long sentinel_bad = 0;
	unsigned int i;
	pid_t live, other;
	uint32_t prev[3] = { 0 };

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
	g.slow = getenv("VRDMA_TEST_SLOW") ? atoi(getenv("VRDMA_TEST_SLOW")) :
		 1;
	if (g.slow < 1)
		g.slow = 1;
	/* The markers: of the run's seed, so a replay has the same. */
	m = fz_splitmix(seed ^ 0x6d61726b6572ull);
	memcpy(g.marker, &m, 8);
	m = fz_splitmix(m);
	memcpy(g.marker2, &m, 8);

	/* Before any MR of this process: its child shares none. */
	other = other_start(dev0, &other_fd);
	if (!g.have_other)
		printf("# the other user's process did not start\n");

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
	g.raw = socket_in_ns(AF_INET, SOCK_RAW, IPPROTO_RAW, NULL, NULL);
	g.alt = socket_in_ns(AF_PACKET, SOCK_DGRAM, htons(ETH_P_IP), "fz3",
			     &g.alt_ifindex);
	g.cap[g.ncap++] = capture_open("fz1");
	g.cap[g.ncap++] = capture_open("fz3");
	if (!g.pd || !g.pd2 || !g.cq || g.raw < 0 || g.alt < 0 ||
	    g.cap[0] < 0 || g.cap[1] < 0 || regions_setup()) {
		printf("Bail out! setup failed: %s\n", strerror(errno));
		return 1;
	}
	g.ah[0] = ah_to(IP1);
	g.ah[1] = ah_to(IP0);
	if (!g.ah[0] || !g.ah[1]) {
		printf("Bail out! cannot create the AHs: %s\n", strerror(errno));
		return 1;
	}
	g.nah = 2;
	/* The other user tries this process's local-only MR. */
	memset(&mine, 0, sizeof(mine));
	mine.va = (uintptr_t)g.map[R_LOCAL] + g.mr_off[R_LOCAL];
	mine.len = g.mr_len[R_LOCAL];
	mine.lkey = g.mr[R_LOCAL]->lkey;
	mine.rkey = g.mr[R_LOCAL]->rkey;
	if (g.have_other && write(other_fd, &mine, sizeof(mine)) !=
	    sizeof(mine))
		g.have_other = 0;
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
		g.round = round;
		if (targets_create(&r, &t, round, prev)) {
			printf("# %s: cannot create the target QPs: %s\n",
			       when, strerror(errno));
			bad_destroy += targets_destroy(&t, when);
			bad_rounds++;
			break;
		}
		qpn[0] = t.rc->qp_num;
		qpn[1] = t.uc->qp_num;
		qpn[2] = t.ud->qp_num;
		memcpy(prev, qpn, sizeof(prev));
		quiet_phase(&r, &t, &qs, when);
		ud_sends(&r, t.ud, 4);
		for (k = 0; k < ROUND_PKTS && st.sent < max_pkts; k++) {
			fuzz_one(&r, &t, &st);
			if (k % 128 == 127) {
				c = drain_cq(qpn, when);
				cqe_bad += c != 0;
				post_recvs(&r, t.rc, 4);
				post_recvs(&r, t.uc, 4);
				post_recvs(&r, t.ud, 4);
				ud_sends(&r, t.ud, 2);
				capture_drain();
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
		bad_destroy += targets_destroy(&t, when);
		/*
		 * Packets still on their way when the CQ was drained may have
		 * completed since (a slow kernel takes longer than the 100 ms
		 * above); none may come once the QPs are destroyed.
		 */
		c = drain_cq(qpn, when);
		cqe_bad += c != 0;
		capture_drain();
		bad = sentinel_check(when, 0);
		if (bad) {
			printf("# %s: %ld bytes changed outside what the rkeys grant\n",
			       when, bad);
			sentinel_bad += bad;
		}
		bad_keys += stale_rotate() != 0;
		round++;
	}
	usleep(300 * 1000);
	capture_drain();
	if (other > 0) {
		if (write(other_fd, "", 1) != 1)
			printf("# cannot tell the other user's process to end\n");
		close(other_fd);
		other_ok = !fz_wait_child(other, &ost, 60 * g.slow) &&
			   WIFEXITED(ost) && !WEXITSTATUS(ost);
		if (!other_ok)
			printf("# the other user's process failed or did not end within %d s (status %#x)\n",
			       60 * g.slow, ost);
	}
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
	printf("# captured %lu packets of the device, %lu of them answers of the targets\n",
	       cap.pkts, cap.answers);

	fz_result(!sentinel_bad, "no byte changed outside the memory the rkeys grant");
	fz_result(!bad_keys, "re-registration never gives an old rkey again");
	fz_result(!bad_rounds, "the target QPs end in RTS or ERR (UD: SQE)");
	fz_result(!bad_destroy, "the target QPs are destroyed at the end of each round");
	fz_result(!cqe_bad, "every CQE of the target QPs is well formed, none after their destruction");
	fz_result(d_icrc + d_drop >= (long long)st.bad_icrc && d_icrc > 0,
		  "the packets with a bad ICRC are dropped and counted (%lld icrc_errors for %lu sent)",
		  d_icrc, st.bad_icrc);
	fz_result(!qs.bad && !cap.quiet_answers && qs.injected > 0,
		  "nothing a local socket or another netdev sent was executed or answered (%lu packets)",
		  qs.injected);
	fz_result(!qs.bad_count,
		  "wrong_netdev counted each of them (%lld)", qs.wrong_netdev);
	fz_result(!qs.bad_malformed && qs.answers_to_ud > 0,
		  "RC answers to UD QPs and QP1 are dropped as malformed (%lld for %lu)",
		  qs.malformed, qs.answers_to_ud);
	fz_result(!cap.leaks && cap.pkts > 0,
		  "no packet of the device carries memory nothing grants reading (%lu captured)",
		  cap.pkts);
	fz_result(!cap.wrong_answers,
		  "no READ or ATOMIC is answered by a QP without the right");
	fz_result(g.have_other && other_ok && !cap.leaks2,
		  "the other user's memory is neither written nor sent");
	fz_result(fz_live_stop_wait(live), "the live QP pair kept working");
	fz_result(st.sent > 0 && st.send_err < st.sent / 10,
		  "%lu packets sent", st.sent);
	printf("1..%d\n", fz_tap_n);
	return fz_tap_failed ? 1 : 0;
}
