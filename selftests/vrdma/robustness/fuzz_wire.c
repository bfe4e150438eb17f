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
 * vrdma's masked atomics (0xc0, 0xc1: an AtomicETH and a MaskedAtomicETH
 * of masks drawn from none, all, field boundaries, single bits and any)
 * are among the well formed requests to the RC target, and among the
 * others now and then with the MaskedAtomicETH cut short or missing
 * under a valid ICRC; the UC target gets them too, which UC has not.  An
 * ATOMIC ACK of the RC target at the PSN of an intact one is counted.  So
 * that the RC target executes them all through a round, not in its first
 * packets only, it is connected again (receives and requests posted
 * anew) whenever it has fallen into ERR, as the XRC target is.
 *
 * XRC: every round also has an XRC target QP in XRC domain X1, whose two
 * XRC SRQs are S1 (in PD1, the RC target's) and S2 (in PD3, no QP's), and
 * an XRC SRQ S3 in another domain X2 (in PD2); each SRQ has receives
 * posted into a region of its own PD and a CQ of its own.  The XRC
 * target gets the XRC opcodes (0xA0 + RC's) with an XRCETH naming S1, S2,
 * S3, the other user's XRC SRQ, SRQs destroyed earlier or any number, with
 * keys of the named SRQ's PD or any other, an XRCETH cut short under a
 * valid ICRC, and RC opcodes; the RC target gets XRC opcodes, the XRC
 * initiator (connected to nobody, a READ, an ATOMIC and a SEND
 * outstanding) XRC and RC answers.  A round names (in every XRCETH it
 * sends, damaged or not) only the SRQs of X1 it draws -- S1, S2 or both --
 * so that only the memory of their PDs may change; now and then it
 * destroys one of its SRQs under the target, and connects the target
 * again when it is in ERR (its expected PSN read back with query_qp);
 * messages of several packets go to it, now and then with its SRQ
 * destroyed, the target reset or another SRQ named midway.  The quiet
 * phase adds XRC requests from the local socket and fz3, and from the
 * wire requests and answers of one transport to QPs of the other, masked
 * atomics at the XRC QPs among them (each must count as malformed).
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
 *   S2's PD's MR   every remote right, in PD3: only through S2
 *   S2's PD's local-only MR   in PD3: S1's receives name it now and then
 *   S1's, S2's, S3's receives   the XRC SRQs' receive buffers (S2's also
 *             name PD1's local-only MR now and then: refused)
 *   ODP       an on-demand paging MR in PD1, its rights drawn every round
 *             (changed in place by rereg_mr), one page inside it unmapped
 *             while packets come (mapped between rounds to hold a third
 *             marker, prefetched into the MR with advise_mr, unmapped
 *             again: no packet may ever carry that marker), pages dropped
 *             with MADV_DONTNEED between and during rounds (they read as
 *             zeros, and the device has to fault them in), advise_mr of
 *             parts of it meanwhile; well formed requests are aimed into
 *             and across the hole a third of the time
 *   DM        an MR of device memory (ibv_alloc_dm, zero based), in PD1,
 *             registered again with rights drawn every round; its bytes
 *             are read and written with ibv_memcpy_from_dm/to_dm
 * With an ODP MR in it, PD1's QPs are run by their task, never by the
 * softirq (the tasklet still runs the other user's RC QP and the live
 * pair).
 * A byte may change only inside an MR whose rights and the round's QPs'
 * allow it -- for the XRC target, of the PD of an SRQ of X1 the round
 * names; never of PD2 (S3's), never of an SRQ's receive buffer (and, for
 * S2, of PD3) once the SRQ is destroyed.  Every byte that no key grants
 * reading (all but the granted and read-only MRs in a round whose RC
 * target, or XRC target through S1, has REMOTE_READ, S2's PD's MR in a
 * round whose XRC target has it through S2, and the stale MR when it has
 * REMOTE_READ) holds a per-run 8-byte marker; every
 * packet the device sends back towards NS and fz3 is captured and must not
 * hold 8 bytes of it.  Nor may a target answer a READ or an ATOMIC its
 * rights do not allow.
 *
 * Another process, of user nobody, has a PD, an MR with every remote right
 * over memory holding a second marker, an RC QP with no remote rights, a
 * UD QP and an XRC SRQ in an XRC domain of its own, receives posted into
 * that memory (XRCETHs name it: it must never complete one).  The wire
 * packets aim at its QPNs and keys, the target QPs' packets and work
 * requests use its keys and addresses, and it posts
 * sends and receives with the keys of this process's local-only MR: none
 * of its memory may change or leave, none of this process's either.
 *
 * The target QPs end each round in RTS, SQE (UD), RTR (the XRC target) or
 * ERR, never anything else, and are destroyed (a destroy that fails is a
 * failure), their CQEs are well formed and none comes once they are
 * destroyed; a CQE of an XRC SRQ is a receive of the XRC target of one of
 * that SRQ's WQEs, of an SRQ of X1 the round names, none once the SRQ is
 * destroyed, none ever on S3's CQ; every QP sends only its transport's
 * opcodes (the XRC target XRC answers, the initiator XRC requests); and
 * at the end the live pair has kept working and the device has counted
 * dropped packets.  Every child process is waited for with a deadline.
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
 * The targets' peer QPNs (nobody): 0x43, the round modulo PEERS, and the
 * kind of target (PK_*), so that a captured packet names the round and
 * the QP it is of.
 */
#define PEERS		0x4000
#define PEER_QPN(round, kind)	(0x430000 | ((round) % PEERS) << 2 | (kind))
enum { PK_RC, PK_UC, PK_XTGT, PK_XINI };

/* The XRC opcodes: 0xA0 + the RC opcode (IBA table 38). */
#define XRC		0xa0
#define XRC_SRQS	3		/* S1, S2 (the target's XRCD), S3 */
#define XRC_WRID	0x58524300	/* | SRQ index: the XRC SRQs' WQEs */
/*
 * vrdma's masked atomics, RC only: an AtomicETH, then a MaskedAtomicETH
 * (swap/add mask, compare mask: 16 bytes); answered by ATOMIC ACKs.
 */
#define MASKED_CAS	0xc0
#define MASKED_FAA	0xc1
#define MASKED_EL	(28 + 16)
#define OTHER_XRC_WRID	0x4f580000	/* the other user's XRC SRQ's */
#define OTHER_PEER_QPN	0x4f0000	/* the other user's RC QP's peer */
#define UD_DST_QPN	0xfff100	/* where UD sends go: nobody */

/*
 * The regions.  PD1 is the RC, UC, UD targets' and the XRC initiator's,
 * and S1's, the first XRC SRQ of the XRC target's domain; PD2 is another
 * PD, S3's, an XRC SRQ in another XRC domain; PD3 is S2's, the second
 * XRC SRQ of the target's domain, and no QP's.
 */
enum { R_GRANTED, R_LOCAL, R_OTHER_PD, R_STALE, R_READDST, R_RECV, R_RO,
	R_WO, R_AO, R_X3, R_X3LOCAL, R_XRECV1, R_XRECV2, R_XRECV3, R_ODP, R_DM,
	R_NUM };

static const char *const region_name[R_NUM] = {
	"granted MR", "local-only MR", "other PD's MR", "stale rkeys' MR",
	"READ destination MR", "receive MR", "read-only MR", "write-only MR",
	"atomic-only MR", "XRC SRQ S2's PD's MR", "S2's PD's local-only MR",
	"S1's receive MR", "S2's receive MR", "S3's (other XRCD) receive MR",
	"ODP MR", "DM MR",
};
/* The receive region of XRC SRQ k (S1, S2, S3: in PD1, PD3, PD2). */
#define R_XRECV(k)	(R_XRECV1 + (k))

/*
 * What the other user's process tells this one, and the reverse; xrc_srqn
 * is the number of its XRC SRQ (in an XRC domain of its own, receives
 * posted into its memory), 0 if it has none.
 */
struct other_info {
	uint64_t va;
	uint32_t len, lkey, rkey, rc_qpn, ud_qpn, rc_psn, xrc_srqn;
};

static struct {
	struct ibv_context *ctx;
	struct ibv_pd *pd, *pd2, *pd3;
	struct ibv_cq *cq;
	struct ibv_xrcd *xrcd[2];	/* the XRC target's and S1, S2's; S3's */
	struct ibv_cq *xcq[XRC_SRQS];	/* each XRC SRQ's own */
	uint8_t *map[R_NUM];		/* REGION bytes each */
	uint8_t *pat[R_NUM];		/* what they must hold */
	struct ibv_mr *mr[R_NUM];
	int mr_acc[R_NUM];		/* the MR's access flags */
	size_t mr_off[R_NUM], mr_len[R_NUM];
	uint64_t mr_base[R_NUM];	/* the MR's first byte, as keys say */
	struct ibv_dm *dm;		/* R_DM's memory; g.map[R_DM]: a copy */
	int hole_mapped;		/* the ODP hole: between rounds only */
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
	uint8_t marker3[8];		/* what the ODP hole last held */
	uint8_t *sendbuf;		/* what the targets' own sends send */
	struct ibv_mr *send_mr;
	struct ibv_ah *ah[2];		/* to IP1, to IP0 */
	int nah;
	int slow;
	uint8_t rc_acc[PEERS];		/* each round's RC target's rights */
	uint8_t xrc_acc[PEERS];		/* ... and XRC target's */
	int quiet, round;		/* in the quiet phase of round */
	struct other_info other;	/* the other user's objects */
	uint32_t other_exp;		/* its RC QP's expected PSN */
	int have_other;
} g;

/* What the capture found. */
static struct {
	unsigned long pkts, answers;
	unsigned long leaks, leaks2;	/* markers seen */
	unsigned long leaks3;		/* the ODP hole's marker seen */
	unsigned long wrong_answers;	/* a READ/ATOMIC answered sans right */
	unsigned long wrong_range;	/* an opcode outside its transport's */
	unsigned long quiet_answers;	/* answers in the quiet phase */
	unsigned long masked_acks;	/* ATOMIC ACKs of masked atomics */
} cap;

/*
 * The PSNs (+ 1, 0: none) at which the round's RC target was sent an
 * intact masked atomic at its expected PSN: an ATOMIC ACK there answers
 * it (or a duplicate of it), which shows that masked atomics get as far
 * as being executed.
 */
#define MASKED_PSNS	1024
static uint32_t masked_psn[MASKED_PSNS];

/*
 * The target QPs of a round.  The XRC target (xt) is in XRC domain X1,
 * whose SRQs are S1 (PD1) and S2 (PD3); S3 is in X2 (PD2).  A round names
 * in its XRCETHs only the SRQs of X1 that xmode allows (bit k: srq[k]),
 * so that a region an allowed SRQ's PD holds is the only one an XRC
 * request may change; S3, dead SRQs and the other user's are named
 * freely: nothing may ever reach them.
 */
#define NTGT	5
struct target {
	struct ibv_qp *rc, *uc, *ud, *xt, *xi;
	uint32_t rc_rq_psn, rc_sq_psn, uc_rq_psn, xt_rq_psn, xi_sq_psn;
	uint32_t rc_exp, uc_exp, xt_exp;	/* what the responders expect */
	int rc_acc, uc_acc, xt_acc;
	int mcast;			/* the UD target is in MCAST_IP */
	int xmode;			/* which of S1, S2 may be named */
	struct ibv_srq *srq[XRC_SRQS];	/* NULL once destroyed */
	uint32_t srqn[XRC_SRQS];
	int srq_gone[XRC_SRQS];		/* destroyed during the round */
	int xt_resets;			/* reset and connected again */
	int rc_resets;			/* the RC target's, the same */
	uint32_t prev[NTGT];		/* the previous round's QPNs, or 0 */
};

/* SRQ numbers of destroyed XRC SRQs: never valid again. */
static uint32_t dead_srqn[16];
static int ndead;

/* How deep the XRC packets went: what to read a run's figures by. */
static struct {
	unsigned long recv_ok[XRC_SRQS];	/* successful receives */
	unsigned long answers;			/* the XRC target's */
	unsigned long placed[R_NUM];		/* bytes changed where allowed */
} xs;

/*
 * An XRC request opcode: an RC request's (SEND, RDMA WRITE, READ, the two
 * atomics, SEND with invalidate) + 0xA0, which carries an XRCETH (4
 * bytes, the SRQ at the target) before the RC extension headers.  The XRC
 * answers (ACK, READ responses, ATOMIC ACK) carry none.
 */
static int xrc_req(uint8_t op)
{
	uint8_t o = op & 0x1f;

	return (op >> 5) == (XRC >> 5) &&
	       (o <= 0x0c || o == 0x13 || o == 0x14 || o == 0x16 || o == 0x17);
}

static int xrc_answer(uint8_t op)
{
	return op >= XRC + 0x0d && op <= XRC + 0x12;
}

/* RC, UC and XRC share the RC opcodes' extension headers. */
static int rc_like(uint8_t op)
{
	return (op >> 5) <= 1 || (op >> 5) == (XRC >> 5);
}

static int masked_atomic(int op)
{
	return op == MASKED_CAS || op == MASKED_FAA;
}

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
	case 5:		/* XRC: RC's, an XRCETH first on requests */
		if (xrc_req(op))
			return 4 + rc[op & 0x1f];
		return xrc_answer(op) ? rc[op & 0x1f] : -1;
	case 6:		/* vrdma's: the masked atomics */
		return masked_atomic(op) ? MASKED_EL : -1;
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
		base = g.mr_base[i];
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
	unsigned long xrc, xrc_short, xrc_srq_destroyed, xrc_seq;
	unsigned long masked, masked_short;	/* masked atomics sent */
};

/* ---- XRC SRQ numbers -------------------------------------------------- */

/*
 * Whether the 24 bits of @n name an SRQ of X1 that the round keeps out of
 * its XRCETHs.
 */
static int srqn_forbidden(const struct target *t, uint32_t n)
{
	int k;

	for (k = 0; k < 2; k++)
		if (!(t->xmode & (1 << k)) && t->srqn[k] == (n & 0xffffff))
			return 1;
	return 0;
}

/*
 * An SRQ number for an XRCETH: one of X1's that the round allows (alive
 * or destroyed meanwhile), S3 (another XRC domain), the other user's, one
 * destroyed in an earlier round, or anything; now and then with the
 * reserved bits set.  *@which: the index of the SRQ it names, or -1.
 */
static uint32_t pick_srqn(struct fz_rng *r, const struct target *t, int clean,
			  int *which)
{
	uint32_t n;
	int k = -1;

	switch (clean && fz_below(r, 3) ? 0 : fz_below(r, clean ? 10 : 16)) {
	case 0: case 1: case 2: case 3: case 4: case 5: case 6:
		k = t->xmode == 3 ? (int)fz_below(r, 2) : t->xmode - 1;
		break;
	case 7:
		k = 2;
		break;
	case 8:
		if (g.have_other && g.other.xrc_srqn) {
			n = g.other.xrc_srqn;
			goto out;
		}
		k = 2;
		break;
	case 9:
		if (ndead) {
			n = dead_srqn[fz_below(r, ndead)];
			goto out;
		}
		/* fall through */
	default:
		n = fz_one_in(r, 2) ? fz_interesting32(r) :
		    t->srqn[0] + fz_below(r, 16) - 8;
		goto out;
	}
	n = t->srqn[k];
out:
	if (!clean && fz_one_in(r, 8))
		n |= fz_u32(r) << 24;
	while (srqn_forbidden(t, n)) {
		n = fz_u32(r);
		k = -1;
	}
	*which = k;
	return n;
}

/*
 * The ODP region (R_ODP) lies at ODP_BASE, far below where the kernel
 * places mappings top down, so that no later mmap (a ring, malloc's) falls
 * into its hole: page ODP_HOLE, inside the MR, mapped only between rounds
 * (to hold marker3 and be prefetched into the MR's page table) and
 * unmapped while packets come.
 */
#define ODP_BASE	((void *)0x200000000000ull)
#define ODP_HOLE	(6 * 4096)

/* Whether byte @j of region @i is in the ODP region's unmapped hole. */
static int in_hole(int i, size_t j)
{
	return i == R_ODP && !g.hole_mapped && j >= ODP_HOLE &&
	       j < ODP_HOLE + 4096;
}

/*
 * A third of the time, an address for @len bytes of the ODP MR that runs
 * into or across its hole (the responder meets it in the middle of a
 * message).
 */
static void odp_hole_va(struct fz_rng *r, int i, uint32_t len, uint64_t *va)
{
	uint64_t h = (uintptr_t)g.map[R_ODP] + ODP_HOLE;
	uint64_t lo = g.mr_base[i], hi = lo + g.mr_len[i];

	if (i != R_ODP || !fz_one_in(r, 3))
		return;
	*va = h + 4096 - fz_below(r, 4096 + (len < 8192 ? len : 8192));
	if (len <= g.mr_len[i] && *va + len > hi)
		*va = hi - len;
	if (*va < lo)
		*va = lo;
}

/*
 * A key and an address inside region @i's MR (the stale one: an old key),
 * @len bytes of it if they fit.
 */
static void key_va_region(struct fz_rng *r, int i, uint32_t len,
			  uint32_t *rkey, uint64_t *va)
{
	uint64_t base = g.mr_base[i];
	size_t mlen = g.mr_len[i];

	*rkey = i == R_STALE ? g.stale[fz_below(r, g.nstale)] : g.mr[i]->rkey;
	*va = base + (len < mlen ? fz_below(r, mlen - len + 1) : 0);
	odp_hole_va(r, i, len, va);
}

/*
 * A key and an address inside the memory it names: a region's MR, an old
 * key of the stale one, the other user's MR.  @len bytes fit if they can.
 */
static void pick_key_va(struct fz_rng *r, uint32_t len, uint32_t *rkey,
			uint64_t *va)
{
	int i = fz_below(r, R_NUM + 4);
	uint64_t base;
	size_t mlen;

	if (i == R_NUM && g.have_other) {
		base = g.other.va;
		mlen = g.other.len;
		*rkey = g.other.rkey;
	} else {
		/* The granted MR, the ODP and DM MRs more often. */
		i = i < R_NUM ? i : i == R_NUM + 2 ? R_ODP :
		    i == R_NUM + 3 ? R_DM : R_GRANTED;
		base = g.mr_base[i];
		mlen = g.mr_len[i];
		*rkey = i == R_STALE ? g.stale[fz_below(r, g.nstale)] :
			g.mr[i]->rkey;
	}
	*va = base + (len < mlen ? fz_below(r, mlen - len + 1) : 0);
	if (i < R_NUM)
		odp_hole_va(r, i, len, va);
}

/*
 * ... for an XRC request naming SRQ @k of PD 1, 3, 2 (S1, S2, S3): mostly
 * a key of that PD, its remotely accessible MR first; else any.
 */
static void pick_key_va_xrc(struct fz_rng *r, int k, uint32_t len,
			    uint32_t *rkey, uint64_t *va)
{
	static const int pd_regions[XRC_SRQS][8] = {
		{ R_GRANTED, R_GRANTED, R_RO, R_WO, R_AO, R_LOCAL, R_ODP,
		  R_DM },
		{ R_X3, R_X3, R_X3, R_X3LOCAL, R_XRECV2, R_X3, R_X3, R_X3 },
		{ R_OTHER_PD, R_OTHER_PD, R_XRECV3, R_OTHER_PD, R_OTHER_PD,
		  R_XRECV3, R_OTHER_PD, R_XRECV3 },
	};

	if (k < 0 || fz_one_in(r, 3))
		pick_key_va(r, len, rkey, va);
	else
		key_va_region(r, pd_regions[k][fz_below(r, 8)], len, rkey, va);
}

/*
 * A request opcode that executes something, well formed: for RC also the
 * masked atomics, which have no XRC opcodes.
 */
static int pick_request(struct fz_rng *r, int xrc)
{
	static const uint8_t ops[] = { 0x04, 0x0a, 0x0c, 0x0c, 0x0c, 0x13,
				       0x14, MASKED_CAS, MASKED_FAA };

	return ops[fz_below(r, sizeof(ops) - (xrc ? 2 : 0))];
}

/*
 * The masks of a masked atomic: none (the plain operation's, or every
 * bit), field boundaries of 8, 16, 32 bits, single bits, or any.
 */
static uint64_t pick_mask(struct fz_rng *r)
{
	switch (fz_below(r, 8)) {
	case 0:
		return 0;
	case 1:
		return ~0ull;
	case 2:
		return 0x8080808080808080ull;
	case 3:
		return 0x8000800080008000ull;
	case 4:
		return 0x8000000080000000ull;
	case 5:
		return 1ull << fz_below(r, 64);
	default:
		return fz_u64(r);
	}
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
	int op, el, bad_icrc = 0, damaged = 0, clean = 0, xk = -1, xo = 0;
	int fam = 0;	/* the opcodes' transport of the QP exp is of */
	struct in_addr src;
	uint16_t id, sport;
	uint32_t *exp = NULL;

	/* Which QP, which opcode, which PSN. */
	switch (fz_below(r, 16)) {
	case 0: case 1: case 2: case 3:
		qpn = t->rc->qp_num;
		if (fz_one_in(r, 3)) {
			/* At the expected PSN or a few behind (duplicates). */
			clean = 1;
			op = pick_request(r, 0);
			psn = t->rc_exp - (fz_one_in(r, 2) ? 0 :
					   1 + fz_below(r, 3));
		} else {
			/* XRC's opcodes too: not for an RC QP. */
			op = fz_below(r, 0x20) | (fz_one_in(r, 8) ? XRC : 0);
			if (fz_one_in(r, 16))
				op = MASKED_CAS + fz_below(r, 2);
			if ((op & 0x1f) >= 0x0d && (op & 0x1f) <= 0x12)
				psn = t->rc_sq_psn + fz_below(r, 16) - 4;
			else
				psn = t->rc_exp + (fz_one_in(r, 2) ? 0 :
						   fz_below(r, 16) - 4);
		}
		exp = &t->rc_exp;
		break;
	case 12: case 13: case 14:
		/*
		 * The XRC target: well formed requests naming an SRQ (mostly
		 * one the round allows) with a key of its PD, at the expected
		 * PSN or a few behind; else any XRC opcode, now and then an
		 * RC one (not for an XRC QP).
		 */
		qpn = t->xt->qp_num;
		if (fz_one_in(r, 2)) {
			clean = 1;
			op = XRC + pick_request(r, 1);
			psn = t->xt_exp - (fz_one_in(r, 2) ? 0 :
					   1 + fz_below(r, 3));
		} else {
			/*
			 * At the expected PSN less often than RC's: garbage
			 * there ends the target, and deep messages need it
			 * alive (it is connected again when in ERR).
			 */
			op = fz_below(r, 0x20) | (fz_one_in(r, 8) ? 0 : XRC);
			psn = t->xt_exp + (fz_one_in(r, 4) ? 0 :
					   fz_below(r, 16) - 4);
		}
		exp = &t->xt_exp;
		fam = XRC >> 5;
		st->xrc++;
		break;
	case 15:
		/*
		 * The XRC initiator, with requests outstanding: XRC answers
		 * near its PSNs, now and then RC ones and XRC requests.
		 */
		qpn = t->xi->qp_num;
		op = fz_one_in(r, 4) ? fz_below(r, 0x20) :
		     fz_one_in(r, 4) ? XRC + fz_below(r, 0x20) :
		     XRC + 0x0d + fz_below(r, 6);
		psn = t->xi_sq_psn + fz_below(r, 16) - 4;
		st->xrc++;
		break;
	case 4: case 5:
		qpn = t->uc->qp_num;
		op = 0x20 + fz_below(r, 0x20);
		if (fz_one_in(r, 16))		/* RC only */
			op = MASKED_CAS + fz_below(r, 2);
		psn = t->uc_exp + (fz_one_in(r, 2) ? 0 : fz_below(r, 16) - 4);
		exp = &t->uc_exp;
		fam = 1;
		break;
	case 6: case 7:
		qpn = fz_one_in(r, 4) ? 1 : t->ud->qp_num;	/* QP1 too */
		if (fz_one_in(r, 3))		/* RC, XRC answers: not for UD */
			op = 0x0d + fz_below(r, 6) + (fz_one_in(r, 2) ? XRC : 0);
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
				op = fz_one_in(r, 2) ? pick_request(r, 0) :
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
		qpn = t->prev[fz_below(r, NTGT)];
		if (!qpn || fz_one_in(r, 2))
			qpn = (uint32_t[]){ t->rc->qp_num, t->uc->qp_num,
					    t->ud->qp_num, t->xt->qp_num,
					    t->xi->qp_num }[fz_below(r, NTGT)];
		op = fz_below(r, 256);
		psn = fz_u32(r);
		break;
	}
	el = ext_len(op);
	if (el < 0)
		el = fz_below(r, 32);
	/* An XRCETH cut short, under a valid ICRC. */
	if (!clean && xrc_req(op) && fz_one_in(r, 16)) {
		el = fz_below(r, 4);
		st->xrc_short++;
	}
	/* A MaskedAtomicETH cut short or missing, under a valid ICRC. */
	if (masked_atomic(op)) {
		st->masked++;
		if (!clean && fz_one_in(r, 4)) {
			el = 28 + fz_below(r, 16);
			st->masked_short++;
		}
	}
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
	if ((op & 0x1f) == 0x0c || (op & 0x1f) == 0x13 ||
	    (op & 0x1f) == 0x14 || masked_atomic(op))
		plen = clean ? 0 : plen;	/* requests without payload */
	if (el < 4 && xrc_req(op))
		plen = 0;
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
	if (xrc_req(op) && el >= 4) {
		/* The XRCETH: the SRQ the request is for. */
		put32(p, pick_srqn(r, t, clean, &xk));
		xo = 4;
	} else if (xrc_req(op)) {
		xo = el;	/* cut short: nothing more */
		op = -1;
	}
	switch (masked_atomic(op) ? 0x13 : op < 0 || !rc_like(op) ? -1 :
		op & 0x1f) {
	case 0x06: case 0x0a: case 0x0b: case 0x0c:	/* RETH */
		if (clean) {
			uint32_t dl = (op & 0x1f) == 0x0c ?
				      1 + fz_below(r, 2 * mtu) : plen, key;
			uint64_t va;

			if (xo)
				pick_key_va_xrc(r, xk, dl, &key, &va);
			else
				pick_key_va(r, dl, &key, &va);
			put64(p + xo, va);
			put32(p + xo + 8, key);
			put32(p + xo + 12, dl);
			break;
		}
		put64(p + xo, pick_va(r, plen));
		put32(p + xo + 8, pick_rkey(r));
		put32(p + xo + 12, pick_len(r, (op & 0x1f) == 0x0c ?
					    fz_below(r, 4 * mtu) : plen));
		break;
	case 0x13: case 0x14:				/* AtomicETH */
		if (clean) {
			uint32_t key;
			uint64_t va;

			/*
			 * A masked atomic half the time into an MR that may
			 * grant it, the plain ones' other keys being the
			 * same checks for it: so that it is executed.
			 */
			if (xo)
				pick_key_va_xrc(r, xk, 8, &key, &va);
			else if (masked_atomic(op) && fz_one_in(r, 2))
				key_va_region(r, fz_one_in(r, 2) ? R_AO :
					      R_GRANTED, 8, &key, &va);
			else
				pick_key_va(r, 8, &key, &va);
			put64(p + xo, va & ~7ull);
			put32(p + xo + 8, key);
			break;
		}
		put64(p + xo, pick_va(r, 8) & (fz_one_in(r, 4) ? ~0ull : ~7ull));
		put32(p + xo + 8, pick_rkey(r));
		break;
	}
	/* The masks, as far as the header goes. */
	if (masked_atomic(op)) {
		uint8_t m[16];

		put64(m, pick_mask(r));
		put64(m + 8, pick_mask(r));
		memcpy(p + 28, m, el - 28);
	}
	switch (op < 0 || !rc_like(op) ? -1 : op & 0x1f) {
	case 0x0d: case 0x0f: case 0x10: case 0x11: case 0x12:	/* AETH */
		p[0] = fz_one_in(r, 2) ? 0x1f : fz_u32(r);
		break;
	case 0x16: case 0x17:				/* IETH */
		put32(p + xo, pick_rkey(r));
		break;
	}
	op = bth[0];
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
		/*
		 * Whatever the damage made of the packet: an XRCETH never
		 * names an SRQ the round keeps out.
		 */
		if (xrc_req(bth[0]) && el + plen >= 4 &&
		    srqn_forbidden(t, ntohl(*(uint32_t *)(bth + 12))))
			put32(bth + 12, t->srqn[2]);
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
	    (op >> 5) == fam && !(xrc_req(op) && el < 4) &&
	    ((op & 0x1f) <= 0x0c || (op & 0x1f) == 0x13 ||
	     (op & 0x1f) == 0x14 || (op & 0x1f) >= 0x16))
		*exp = (*exp + 1) & 0xffffff;
	/* A masked atomic whole, at an RC QP: as any RC request. */
	if (exp && !damaged && ((psn ^ *exp) & 0xffffff) == 0 &&
	    masked_atomic(op) && fam == 0 && el == MASKED_EL) {
		if (exp == &t->rc_exp && !plen)
			masked_psn[psn % MASKED_PSNS] = (psn & 0xffffff) + 1;
		*exp = (*exp + 1) & 0xffffff;
	}

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

/*
 * Whether the round's targets may read region @i through its MR: the RC
 * target those of PD1, the XRC target those of the PD of an SRQ the
 * round names (S1: PD1, S2: PD3).  The ODP and DM MRs (PD1) have rights
 * drawn every round.
 */
static int readable(int i, const struct target *t)
{
	int x1 = (t->xmode & 1) && (t->xt_acc & RR);

	if (i == R_STALE)
		return !!(g.mr_acc[i] & RR);	/* its key is never sent */
	if (i == R_X3)
		return (t->xmode & 2) && (t->xt_acc & RR);
	if (i == R_ODP || i == R_DM)
		return (g.mr_acc[i] & RR) && ((t->rc_acc & RR) || x1);
	return (i == R_GRANTED || i == R_RO) && ((t->rc_acc & RR) || x1);
}

/*
 * What region @i holds into g.map[i]: the DM's bytes are the device's,
 * g.map[R_DM] a copy.
 */
static void region_load(int i)
{
	if (i == R_DM && ibv_memcpy_from_dm(g.map[i], g.dm, 0, REGION))
		printf("# cannot read the DM: %s\n", strerror(errno));
}

/* Region @i's memory made what g.pat[i] says (not the ODP hole). */
static void region_store(int i)
{
	if (in_hole(i, ODP_HOLE)) {
		memcpy(g.map[i], g.pat[i], ODP_HOLE);
		memcpy(g.map[i] + ODP_HOLE + 4096, g.pat[i] + ODP_HOLE + 4096,
		       REGION - ODP_HOLE - 4096);
		return;
	}
	memcpy(g.map[i], g.pat[i], REGION);
	if (i == R_DM && ibv_memcpy_to_dm(g.dm, 0, g.pat[i], REGION))
		printf("# cannot write the DM: %s\n", strerror(errno));
}

/*
 * Fill region @i: the MR's bytes with a pattern if the round's targets may
 * read them, every other byte with the marker (the ODP hole, while mapped,
 * with marker3).
 */
static void fill_region(int i, const struct target *t)
{
	size_t j, lo = g.mr_off[i], hi = lo + g.mr_len[i];
	int rd = readable(i, t);

	for (j = 0; j < REGION; j++)
		g.pat[i][j] = i == R_ODP && j >= ODP_HOLE &&
			      j < ODP_HOLE + 4096 ?
			      marked(g.marker3, g.map[i] + j) :
			      rd && j >= lo && j < hi ?
			      (uint8_t)(j * 31 + i * 101 + 7) :
			      marked(g.marker, g.map[i] + j);
	region_store(i);
}

/*
 * What the round's targets may change: by the MRs' and the QPs' rights.
 * The XRC target may change PD1's MRs through S1, PD3's through S2, and
 * the receive buffers of the SRQs the round names; never PD2's (S3's, in
 * another XRC domain).
 */
static void rights_setup(const struct target *t)
{
	int x1 = t->xmode & 1 ? t->xt_acc : 0, x2 = t->xmode & 2 ? t->xt_acc : 0;
	int w = (t->rc_acc | t->uc_acc | x1) & RW, a = (t->rc_acc | x1) & RA, i;

	for (i = 0; i < R_NUM; i++) {
		int acc = g.mr_acc[i];

		g.may_change[i] = i == R_READDST || i == R_RECV ||
				  (i == R_XRECV1 && (t->xmode & 1)) ||
				  (i == R_XRECV2 && (t->xmode & 2));
		if (i == R_GRANTED || i == R_WO || i == R_AO || i == R_ODP ||
		    i == R_DM)
			g.may_change[i] = (w && (acc & RW)) || (a && (acc & RA));
		if (i == R_X3)
			g.may_change[i] = ((x2 & RW) && (acc & RW)) ||
					  ((x2 & RA) && (acc & RA));
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
		[R_X3] = LW | RW | RR | RA, [R_X3LOCAL] = LW,
		[R_XRECV1] = LW, [R_XRECV2] = LW, [R_XRECV3] = LW,
		[R_ODP] = LW | RW | RR | RA, [R_DM] = LW | RW | RR | RA,
	};
	struct ibv_pd *pd[R_NUM] = {
		[R_OTHER_PD] = g.pd2, [R_XRECV3] = g.pd2,
		[R_X3] = g.pd3, [R_X3LOCAL] = g.pd3, [R_XRECV2] = g.pd3,
	};
	int i;

	for (i = 0; i < R_NUM; i++) {
		if (i == R_DM) {
			/* A copy: the DM is read with memcpy_from_dm. */
			g.map[i] = aligned_alloc(4096, REGION);
			g.dm = ibv_alloc_dm(g.ctx, &(struct ibv_alloc_dm_attr){
				.length = REGION });
			if (!g.dm) {
				printf("# ibv_alloc_dm: %s\n", strerror(errno));
				return -1;
			}
		} else {
			g.map[i] = mmap(i == R_ODP ? ODP_BASE : NULL, REGION,
					PROT_READ | PROT_WRITE,
					MAP_PRIVATE | MAP_ANONYMOUS |
					(i == R_ODP ? MAP_FIXED_NOREPLACE : 0),
					-1, 0);
			if (i == R_ODP && g.map[i] == MAP_FAILED)
				g.map[i] = mmap(NULL, REGION,
						PROT_READ | PROT_WRITE,
						MAP_PRIVATE | MAP_ANONYMOUS,
						-1, 0);
		}
		g.pat[i] = malloc(REGION);
		if (!g.map[i] || g.map[i] == MAP_FAILED || !g.pat[i])
			return -1;
		/* Not page aligned at either end: a page-granular bug
		 * would write the bytes around the MR.
		 */
		g.mr_off[i] = 4096 * 4 + 100 + 8 * i;
		g.mr_len[i] = 3 * 4096 + 37;
		g.mr_acc[i] = acc[i];
		g.mr_base[i] = (uintptr_t)g.map[i] + g.mr_off[i];
		if (i == R_DM) {
			/* Zero based: address 0 is the MR's first byte. */
			g.mr_base[i] = 0;
			g.mr[i] = ibv_reg_dm_mr(g.pd, g.dm, g.mr_off[i],
						g.mr_len[i], acc[i] |
						IBV_ACCESS_ZERO_BASED);
		} else {
			g.mr[i] = ibv_reg_mr(pd[i] ? pd[i] : g.pd,
					     g.map[i] + g.mr_off[i],
					     g.mr_len[i], acc[i] |
					     (i == R_ODP ?
					      IBV_ACCESS_ON_DEMAND : 0));
		}
		if (!g.mr[i]) {
			printf("# cannot register the %s: %s\n",
			       region_name[i], strerror(errno));
			return -1;
		}
	}
	g.hole_mapped = 1;
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

/* ---- the ODP and DM MRs ---------------------------------------------- */

/* What the ODP and DM MRs went through: what to read a run's figures by. */
static struct {
	unsigned long rereg, rereg_failed, advise, advise_calls, dropped;
	unsigned long holes, dm_reg, probes, probes_landed;
} os;

/*
 * The ODP and DM MRs' rights for the round, drawn as the QPs' are:
 * LOCAL_WRITE and any of the remote ones (REMOTE_WRITE surely with
 * @write).  The ODP MR changes them in place (rereg_mr; registered again
 * if that fails), the DM MR is registered again.  The ODP hole is mapped
 * again for fill_region() to write marker3 into.  Returns 0, or -1 if an
 * MR is gone.
 */
static int odp_dm_rights(struct fz_rng *r, int write)
{
	uint8_t *hole = g.map[R_ODP] + ODP_HOLE;
	int acc;

	if (!g.hole_mapped &&
	    mmap(hole, 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE |
		 MAP_ANONYMOUS | MAP_FIXED_NOREPLACE, -1, 0) == hole)
		g.hole_mapped = 1;
	acc = LW | (fz_one_in(r, 2) || write ? RW : 0) |
	      (fz_one_in(r, 2) ? RR : 0) | (fz_one_in(r, 2) ? RA : 0);
	if (!ibv_rereg_mr(g.mr[R_ODP], IBV_REREG_MR_CHANGE_ACCESS, NULL, NULL,
			  0, acc | IBV_ACCESS_ON_DEMAND)) {
		os.rereg++;
	} else {
		if (!os.rereg_failed++)
			printf("# rereg_mr of the ODP MR's rights failed: %s\n",
			       strerror(errno));
		ibv_dereg_mr(g.mr[R_ODP]);
		g.mr[R_ODP] = ibv_reg_mr(g.pd, g.map[R_ODP] + g.mr_off[R_ODP],
					 g.mr_len[R_ODP],
					 acc | IBV_ACCESS_ON_DEMAND);
	}
	g.mr_acc[R_ODP] = acc;

	acc = LW | (fz_one_in(r, 2) || write ? RW : 0) |
	      (fz_one_in(r, 2) ? RR : 0) | (fz_one_in(r, 2) ? RA : 0);
	ibv_dereg_mr(g.mr[R_DM]);
	g.mr[R_DM] = ibv_reg_dm_mr(g.pd, g.dm, g.mr_off[R_DM], g.mr_len[R_DM],
				   acc | IBV_ACCESS_ZERO_BASED);
	g.mr_acc[R_DM] = acc;
	os.dm_reg += !!g.mr[R_DM];
	if (!g.mr[R_ODP] || !g.mr[R_DM]) {
		printf("# cannot register the ODP or DM MR again: %s\n",
		       strerror(errno));
		return -1;
	}
	return 0;
}

/*
 * A page of the ODP region dropped (MADV_DONTNEED; mostly one of the
 * MR's, never the hole): it reads as zeros from now on, and the CPU leaves
 * it alone, so the device has to fault it in itself.
 */
static void odp_drop_page(struct fz_rng *r)
{
	size_t pg = fz_below(r, 4) ? (size_t[]){ 4, 5, 7 }[fz_below(r, 3)] :
		    fz_below(r, REGION / 4096);

	if (pg == ODP_HOLE / 4096 ||
	    madvise(g.map[R_ODP] + pg * 4096, 4096, MADV_DONTNEED))
		return;
	memset(g.pat[R_ODP] + pg * 4096, 0, 4096);
	os.dropped++;
}

/*
 * ibv_advise_mr() on a part of the ODP MR, maybe across the hole, with any
 * advice, at once or from the kernel's work item: a fault in the responder's
 * way, or none.
 */
static void odp_advise(struct fz_rng *r)
{
	uint32_t len = 1 + fz_below(r, g.mr_len[R_ODP]);
	struct ibv_sge sge = {
		g.mr_base[R_ODP] + fz_below(r, g.mr_len[R_ODP] - len + 1), len,
		g.mr[R_ODP]->lkey,
	};

	os.advise_calls++;
	os.advise += !ibv_advise_mr(g.pd, (enum ibv_advise_mr_advice[]){
		IBV_ADVISE_MR_ADVICE_PREFETCH,
		IBV_ADVISE_MR_ADVICE_PREFETCH_WRITE,
		IBV_ADVISE_MR_ADVICE_PREFETCH_NO_FAULT }[fz_below(r, 3)],
		fz_one_in(r, 2) ? IBV_ADVISE_MR_FLAG_FLUSH : 0, &sge, 1);
}

/*
 * After fill_region(): the whole ODP MR prefetched into its page table,
 * the hole (holding marker3) with it; then the hole unmapped, which must
 * drop it from there (no packet may ever carry marker3), and a page
 * dropped.
 */
static void odp_hole_cycle(struct fz_rng *r)
{
	struct ibv_sge sge = { g.mr_base[R_ODP], g.mr_len[R_ODP],
			       g.mr[R_ODP]->lkey };

	os.advise_calls++;
	os.advise += !ibv_advise_mr(g.pd, fz_one_in(r, 2) ?
				    IBV_ADVISE_MR_ADVICE_PREFETCH_WRITE :
				    IBV_ADVISE_MR_ADVICE_PREFETCH,
				    IBV_ADVISE_MR_FLAG_FLUSH, &sge, 1);
	if (g.hole_mapped && !munmap(g.map[R_ODP] + ODP_HOLE, 4096)) {
		g.hole_mapped = 0;
		os.holes++;
	}
	odp_drop_page(r);
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

		region_load(i);
		for (j = 0; j < REGION; j++) {
			if (in_hole(i, j))
				continue;
			if (!all && g.may_change[i] && j >= lo && j < hi) {
				xs.placed[i] += g.map[i][j] != g.pat[i][j];
				continue;
			}
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
	uint8_t *bth, op, rop;
	size_t hl;
	int acc = -1, round = -1, kind = -1;

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
	if ((dqpn & ~0xffffu) == 0x430000) {
		round = (dqpn >> 2) % PEERS;
		kind = dqpn & 3;
		acc = kind == PK_RC ? g.rc_acc[round] :
		      kind == PK_XTGT ? g.xrc_acc[round] : -1;
	} else if (dqpn == OTHER_PEER_QPN) {
		kind = PK_RC;
		acc = 0;
	}
	/*
	 * Each QP speaks its transport only: the RC targets RC (requests
	 * and answers), the UC target UC, the XRC target XRC answers, the
	 * XRC initiator XRC requests.
	 */
	if (kind >= 0 &&
	    (kind == PK_XTGT ? !xrc_answer(op) :
	     kind == PK_XINI ? !xrc_req(op) :
	     kind == PK_UC ? (op >> 5) != 1 : (op >> 5) != 0)) {
		if (++cap.wrong_range <= 3)
			printf("# a packet of opcode %#x to QP %#x PSN %#x is not of its QP's transport\n",
			       op, dqpn, psn);
	}
	rop = kind == PK_XTGT ? op - XRC : op;
	if (acc >= 0 && rop >= 0x0d && rop <= 0x12) {
		const char *why = NULL;
		unsigned long *nr = NULL;

		cap.answers++;
		xs.answers += kind == PK_XTGT;
		if (g.quiet && round == g.round % PEERS) {
			why = "answers a packet that did not come from the wire";
			nr = &cap.quiet_answers;
		} else if (rop <= 0x10 && rop != 0x0e && !(acc & RR)) {
			why = "is a READ response of a QP without REMOTE_READ";
			nr = &cap.wrong_answers;
		} else if (rop == 0x12 && !(acc & RA)) {
			why = "is an ATOMIC ACK of a QP without REMOTE_ATOMIC";
			nr = &cap.wrong_answers;
		}
		if (nr && ++*nr <= 3)
			printf("# a packet of opcode %#x to QP %#x PSN %#x %s\n",
			       op, dqpn, psn, why);
	}
	if (rop == 0x12 && kind == PK_RC && round == g.round % PEERS &&
	    masked_psn[psn % MASKED_PSNS] == psn + 1)
		cap.masked_acks++;
	/* An ATOMIC ACK returns the original value: the QP may read it. */
	if (rop == 0x12 && acc > 0 && (acc & RA) && n >= hl + 8 + 24)
		memset(bth + 16, 0, 8);
	if (has_marker(bth, n - hl - 8, g.marker)) {
		if (cap.leaks++ < 3)
			printf("# a packet of opcode %#x to QP %#x PSN %#x carries memory nothing grants reading%s\n",
			       op, dqpn, psn, g.quiet ? " (quiet phase)" : "");
	}
	if (has_marker(bth, n - hl - 8, g.marker3)) {
		if (cap.leaks3++ < 3)
			printf("# a packet of opcode %#x to QP %#x PSN %#x carries what the ODP MR's unmapped page held\n",
			       op, dqpn, psn);
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

static void post_recvs(struct fz_rng *r, struct ibv_qp *qp, int n);

/*
 * In a round whose RC target and ODP and DM MRs all grant REMOTE_WRITE: a
 * well formed RDMA WRITE of 64 bytes into a mapped part of each MR (the
 * ODP one maybe just dropped), at the RC target's expected PSN, before
 * the round's other packets.  It must land, byte for byte, within 5 s
 * (times VRDMA_TEST_SLOW: a loaded host).  Returns how many did not.
 */
static int odp_dm_probe(struct fz_rng *r, struct target *t)
{
	int k, bad = 0;

	for (k = 0; k < 2; k++) {
		int i = k ? R_DM : R_ODP, landed = 0;
		size_t off = g.mr_off[i] + fz_below(r, 4096 - 64);
		uint8_t ext[16];
		struct inj in;
		double end;

		/*
		 * A READ of its own with the other user's key
		 * (post_requests()) may have ended the target: connected
		 * again, with its receives, expecting the same PSN.
		 */
		if (fz_qp_state(t->rc) != IBV_QPS_RTS) {
			struct ibv_qp_attr a = { .qp_state = IBV_QPS_RESET };

			if (ibv_modify_qp(t->rc, &a, IBV_QP_STATE) ||
			    fz_connect_access(t->rc, g.gid_idx, g.mtu,
					      PEER_QPN(g.round, PK_RC),
					      &g.peer_gid, t->rc_exp,
					      t->rc_sq_psn, 18, 7, t->rc_acc))
				return bad;
			post_recvs(r, t->rc, 32);
		}
		put64(ext, g.mr_base[i] + off - g.mr_off[i]);
		put32(ext + 8, g.mr[i]->rkey);
		put32(ext + 12, 64);
		inj_build(r, &in, WIRE, 0x0a, t->rc->qp_num, t->rc_exp, ext,
			  16, 64);
		if (!inject_ns(&in))
			continue;
		t->rc_exp = (t->rc_exp + 1) & 0xffffff;
		os.probes++;
		end = fz_now() + 5 * g.slow;
		do {
			region_load(i);
			landed = !memcmp(g.map[i] + off,
					 in.pkt + WIRE_HDR_LEN + 16, 64);
			if (!landed)
				usleep(2000);
		} while (!landed && fz_now() < end);
		os.probes_landed += landed;
		if (!landed && !bad++)
			printf("# a WRITE of 64 bytes into the %s at offset %zu, granted, did not land\n",
			       region_name[i], off - g.mr_off[i]);
	}
	return bad;
}

struct quiet_stats {
	unsigned long injected, answers_to_ud, xrc_cross;
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
	struct inj in[24];
	uint8_t ext[48];
	uint32_t mtu = (128u << g.mtu) > 1024 ? 1024 : 128u << g.mtu;
	long long wn, mal;
	struct ibv_wc wc;
	int n = 0, i, lo = 0, ns = 0, answers = 0, k, x, xk, cross, xc = 0;
	uint64_t va = (uintptr_t)g.map[R_GRANTED] + g.mr_off[R_GRANTED];
	uint32_t xn = pick_srqn(r, t, 1, &xk);

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
		switch (fz_below(r, 11)) {
		case 9:		/* XRC SEND to an SRQ the round names */
			xk = t->xmode == 3 ? (int)fz_below(r, 2) : t->xmode - 1;
			put32(ext, t->srqn[xk]);
			inj_build(r, &in[n++], rt, XRC + 0x04, t->xt->qp_num,
				  t->xt_exp, ext, 4, 16);
			break;
		case 10:	/* XRC WRITE with a key of that SRQ's PD */
			xk = t->xmode == 3 ? (int)fz_below(r, 2) : t->xmode - 1;
			x = xk ? R_X3 : R_GRANTED;
			put32(ext, t->srqn[xk]);
			put64(ext + 4, (uintptr_t)g.map[x] + g.mr_off[x] +
				       8 * fz_below(r, 64));
			put32(ext + 12, g.mr[x]->rkey);
			put32(ext + 16, 16);
			inj_build(r, &in[n++], rt, XRC + 0x0a, t->xt->qp_num,
				  t->xt_exp, ext, 20, 16);
			break;
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
			if (fz_one_in(r, 2)) {
				inj_build(r, &in[n++], rt, 0x14, t->rc->qp_num,
					  t->rc_exp, ext, 28, 0);
				break;
			}
			/* masked: 16-bit fields; a CAS compares nothing */
			put64(ext + 28, 0x8000800080008000ull);
			inj_build(r, &in[n++], rt, MASKED_CAS + (i & 1),
				  t->rc->qp_num, t->rc_exp, ext, MASKED_EL, 0);
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
	/*
	 * Requests and answers of one transport at QPs of the other, every
	 * field right: an RC SEND at the XRC target's expected PSN, an XRC
	 * SEND (to an SRQ the round names) at the RC target's, XRC answers
	 * to the RC target and the XRC target, an RC ACK and an XRC SEND to
	 * the XRC initiator, and masked atomics (which XRC has not) at the
	 * XRC target and initiator.  Each is malformed.
	 */
	cross = n;
	for (k = 0; k < 8; k++) {
		static const uint8_t op[] = { 0x04, XRC + 0x04, XRC + 0x11,
					      XRC + 0x10, 0x11, XRC + 0x04,
					      MASKED_CAS, MASKED_FAA };
		uint32_t qpn[] = { t->xt->qp_num, t->rc->qp_num,
				   t->rc->qp_num, t->xt->qp_num,
				   t->xi->qp_num, t->xi->qp_num,
				   t->xt->qp_num, t->xi->qp_num };
		uint32_t psn[] = { t->xt_exp, t->rc_exp, t->rc_sq_psn,
				   t->xt_exp, t->xi_sq_psn, t->xi_sq_psn,
				   t->xt_exp, t->xi_sq_psn };
		int el = xrc_req(op[k]) ? 4 : masked_atomic(op[k]) ?
			 MASKED_EL : (op[k] & 0x1f) == 0x04 ? 0 : 4;

		memset(ext, 0, sizeof(ext));
		if (xrc_req(op[k])) {
			put32(ext, xn);
		} else if (masked_atomic(op[k])) {
			uint32_t mkey;
			uint64_t mva;

			key_va_region(r, R_GRANTED, 8, &mkey, &mva);
			put64(ext, mva & ~7ull);
			put32(ext + 8, mkey);
			put64(ext + 12, 1);
			put64(ext + 28, ~0ull);
		} else if (el) {
			ext[0] = 0x1f;
			ext[3] = 1;
		}
		inj_build(r, &in[n++], WIRE, op[k], qpn[k], psn[k], ext, el,
			  (op[k] & 0x1f) == 0x04 ? 16 :
			  (op[k] & 0x1f) == 0x10 ? 4 : 0);
	}

	lo = inject_local(in, n);
	for (i = 0; i < n; i++) {
		if (in[i].route < ALT || !inject_ns(&in[i]))
			continue;
		if (in[i].route == ALT)
			ns++;
		else if (i >= cross)
			xc++;
		else
			answers++;
	}
	usleep(150 * 1000 * g.slow);
	capture_drain();
	g.quiet = 0;
	qs->injected += lo + ns;
	qs->answers_to_ud += answers;
	qs->xrc_cross += xc;

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
	for (k = 0; k < XRC_SRQS; k++) {
		while (ibv_poll_cq(g.xcq[k], 1, &wc) > 0) {
			if (wc.status == IBV_WC_WR_FLUSH_ERR)
				continue;
			if (!qs->bad)
				printf("# %s: a CQE of XRC SRQ S%d for a packet that did not come from the wire: qp %#x status %d opcode %d\n",
				       when, k + 1, wc.qp_num, wc.status,
				       wc.opcode);
			qs->bad++;
		}
	}
	if (sentinel_check(when, 1)) {
		printf("# %s: a packet that did not come from the wire wrote memory\n",
		       when);
		qs->bad++;
		for (k = 0; k < R_NUM; k++)
			region_store(k);
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
	if (mal < answers + xc) {
		if (!qs->bad_malformed++)
			printf("# %s: malformed +%lld for %d RC answers to UD and QP1 and %d packets of one of RC and XRC at a QP of the other\n",
			       when, mal, answers, xc);
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
	struct ibv_cq *cq, *xcq;
	struct ibv_mr *mr;
	struct ibv_qp *rc, *ud;
	struct ibv_ah *ah;
	struct ibv_xrcd *xrcd;
	struct ibv_srq *xsrq = NULL;
	struct ibv_wc wc[16];
	struct ibv_port_attr port;
	union ibv_gid peer = { 0 };
	unsigned long sends = 0, recvs = 0, loops = 0, xcqes = 0;
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
	/*
	 * An XRC SRQ in an XRC domain of its own, receives posted into its
	 * memory: the fuzzer names it in the XRCETHs of requests to its XRC
	 * target, which must never reach it.
	 */
	xrcd = ibv_open_xrcd(ctx, &(struct ibv_xrcd_init_attr){
		.comp_mask = IBV_XRCD_INIT_ATTR_FD | IBV_XRCD_INIT_ATTR_OFLAGS,
		.fd = -1, .oflags = O_CREAT,
	});
	xcq = ibv_create_cq(ctx, 64, NULL, NULL, 0);
	if (xrcd && xcq)
		xsrq = ibv_create_srq_ex(ctx, &(struct ibv_srq_init_attr_ex){
			.attr = { .max_wr = 32, .max_sge = 1 },
			.comp_mask = IBV_SRQ_INIT_ATTR_TYPE |
				     IBV_SRQ_INIT_ATTR_PD |
				     IBV_SRQ_INIT_ATTR_XRCD |
				     IBV_SRQ_INIT_ATTR_CQ,
			.srq_type = IBV_SRQT_XRC, .pd = pd, .xrcd = xrcd,
			.cq = xcq,
		});
	if (xsrq && !ibv_get_srq_num(xsrq, &me.xrc_srqn)) {
		struct ibv_sge s = { (uintptr_t)mr->addr, mr->length,
				     mr->lkey };
		struct ibv_recv_wr rw = { .wr_id = OTHER_XRC_WRID,
					  .sg_list = &s, .num_sge = 1 }, *br;
		int i;

		for (i = 0; i < 16; i++)
			ibv_post_srq_recv(xsrq, &rw, &br);
	} else {
		printf("# the other user has no XRC SRQ: %s\n",
		       strerror(errno));
		me.xrc_srqn = 0;
	}
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
		while (xcq && (n = ibv_poll_cq(xcq, 16, wc)) > 0) {
			if (!xcqes)
				printf("# the other user's XRC SRQ completed a receive: qp %#x status %d\n",
				       wc[0].qp_num, wc[0].status);
			xcqes += n;
		}
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
	printf("# the other user (uid %d) posted %lu sends and %lu receives with this process's key; %ld bytes of its memory changed, %lu CQEs of its XRC SRQ (%u)\n",
	       getuid(), sends, recvs, changed, xcqes, me.xrc_srqn);
	return changed || xcqes ? 1 : 0;
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

/* ---- the XRC targets ------------------------------------------------- */

/* XRC SRQ @k: S1 (X1, PD1), S2 (X1, PD3), S3 (X2, PD2), each its own CQ. */
static struct ibv_srq *xrc_srq_create(int k)
{
	struct ibv_srq_init_attr_ex sa = {
		.attr = { .max_wr = 64, .max_sge = 2 },
		.comp_mask = IBV_SRQ_INIT_ATTR_TYPE | IBV_SRQ_INIT_ATTR_PD |
			     IBV_SRQ_INIT_ATTR_XRCD | IBV_SRQ_INIT_ATTR_CQ,
		.srq_type = IBV_SRQT_XRC,
		.pd = k == 0 ? g.pd : k == 1 ? g.pd3 : g.pd2,
		.xrcd = g.xrcd[k == 2],
		.cq = g.xcq[k],
	};

	return ibv_create_srq_ex(g.ctx, &sa);
}

/*
 * Receives into XRC SRQ @k's receive region.  Now and then, in S1 or S2,
 * one whose key is of the other's PD: refused when a message reaches it
 * (the key's region never changes, the target goes to error).
 */
static void post_srq_recvs(struct fz_rng *r, struct target *t, int k, int n)
{
	int i = R_XRECV(k);
	struct ibv_sge s = {
		(uintptr_t)g.map[i] + g.mr_off[i], g.mr_len[i], g.mr[i]->lkey,
	};
	struct ibv_recv_wr wr = { .wr_id = XRC_WRID | k, .sg_list = &s,
				  .num_sge = 1 }, *bad;

	if (!t->srq[k])
		return;
	while (n-- > 0) {
		if (k < 2 && fz_one_in(r, 64)) {
			int j = k ? R_LOCAL : R_X3LOCAL;
			struct ibv_sge o = {
				(uintptr_t)g.map[j] + g.mr_off[j],
				g.mr_len[j], g.mr[j]->lkey,
			};

			wr.sg_list = &o;
			ibv_post_srq_recv(t->srq[k], &wr, &bad);
			wr.sg_list = &s;
			continue;
		}
		if (ibv_post_srq_recv(t->srq[k], &wr, &bad))
			break;
	}
}

/*
 * The XRC target to INIT, RTR and, every other time, RTS, towards its
 * (absent) peer, expecting @rq_psn, with the round's rights.
 */
static int xt_connect(struct fz_rng *r, struct target *t, int round)
{
	struct ibv_qp_attr a = {
		.qp_state = IBV_QPS_INIT, .port_num = 1,
		.qp_access_flags = t->xt_acc,
	};

	if (fz_one_in(r, 2))
		return fz_connect_access(t->xt, g.gid_idx, g.mtu,
					 PEER_QPN(round, PK_XTGT), &g.peer_gid,
					 t->xt_rq_psn, fz_u32(r) & 0xffffff, 18,
					 7, t->xt_acc);
	if (ibv_modify_qp(t->xt, &a, IBV_QP_STATE | IBV_QP_PKEY_INDEX |
			  IBV_QP_PORT | IBV_QP_ACCESS_FLAGS))
		return -1;
	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_RTR;
	a.path_mtu = g.mtu;
	a.dest_qp_num = PEER_QPN(round, PK_XTGT);
	a.rq_psn = t->xt_rq_psn;
	a.max_dest_rd_atomic = 4;
	a.min_rnr_timer = 1;
	a.ah_attr.is_global = 1;
	a.ah_attr.grh.dgid = g.peer_gid;
	a.ah_attr.grh.sgid_index = g.gid_idx;
	a.ah_attr.grh.hop_limit = 64;
	a.ah_attr.port_num = 1;
	return ibv_modify_qp(t->xt, &a, IBV_QP_STATE | IBV_QP_AV |
			     IBV_QP_PATH_MTU | IBV_QP_DEST_QPN |
			     IBV_QP_RQ_PSN | IBV_QP_MAX_DEST_RD_ATOMIC |
			     IBV_QP_MIN_RNR_TIMER);
}

/*
 * An XRC target in ERR back to RESET and connected again, with a new
 * expected PSN: it lets go of its SRQ (and of the WQE it was filling)
 * while packets for it arrive.
 */
static void xt_rearm(struct fz_rng *r, struct target *t, int round)
{
	struct ibv_qp_attr a = { .qp_state = IBV_QPS_RESET };

	if (ibv_modify_qp(t->xt, &a, IBV_QP_STATE))
		return;
	t->xt_rq_psn = fz_u32(r) & 0xffffff;
	t->xt_exp = t->xt_rq_psn;
	t->xt_resets++;
	xt_connect(r, t, round);
}

/*
 * The XRC target's state; in ERR it is connected again, else the PSN its
 * responder expects (query_qp reports it) is where the next requests go.
 */
static void xt_sync(struct fz_rng *r, struct target *t, int round)
{
	struct ibv_qp_init_attr init;
	struct ibv_qp_attr a;

	if (ibv_query_qp(t->xt, &a, IBV_QP_STATE | IBV_QP_RQ_PSN, &init))
		return;
	if (a.qp_state == IBV_QPS_ERR)
		xt_rearm(r, t, round);
	else
		t->xt_exp = a.rq_psn & 0xffffff;
}

/*
 * The RC target's state, as xt_sync() the XRC target's: garbage at its
 * expected PSN ends it within a few packets, and an RC target in ERR
 * executes nothing, the masked atomics among the well formed requests
 * included.  In ERR it is connected again, expecting the PSN it was
 * left at, with receives and requests of its own; else the PSN its
 * responder expects is where the next requests go.
 */
static void rc_sync(struct fz_rng *r, struct target *t, int round)
{
	struct ibv_qp_attr a = { .qp_state = IBV_QPS_RESET };
	struct ibv_qp_init_attr init;

	if (ibv_query_qp(t->rc, &a, IBV_QP_STATE | IBV_QP_RQ_PSN, &init))
		return;
	if (a.qp_state != IBV_QPS_ERR) {
		t->rc_exp = a.rq_psn & 0xffffff;
		return;
	}
	a.qp_state = IBV_QPS_RESET;
	if (ibv_modify_qp(t->rc, &a, IBV_QP_STATE) ||
	    fz_connect_access(t->rc, g.gid_idx, g.mtu, PEER_QPN(round, PK_RC),
			      &g.peer_gid, t->rc_exp, t->rc_sq_psn, 18, 7,
			      t->rc_acc))
		return;
	t->rc_resets++;
	post_recvs(r, t->rc, 32);
	post_requests(r, t->rc);
}

/*
 * The XRC initiator's requests to its (absent) peer, each naming an SRQ
 * there: a READ and an ATOMIC into the READ destination, whose forged
 * answers may write there only, and a SEND of its own memory.
 */
static void xi_requests(struct fz_rng *r, struct target *t)
{
	uint8_t *dst = g.map[R_READDST] + g.mr_off[R_READDST];
	struct ibv_sge s = { (uintptr_t)dst + 2048, 2048,
			     g.mr[R_READDST]->lkey };
	struct ibv_send_wr wr = {
		.sg_list = &s, .num_sge = 1, .send_flags = IBV_SEND_SIGNALED,
	}, *bad;

	wr.qp_type.xrc.remote_srqn = fz_one_in(r, 4) ? fz_interesting32(r) :
				     t->srqn[fz_below(r, XRC_SRQS)];
	wr.opcode = IBV_WR_RDMA_READ;
	wr.wr.rdma.remote_addr = 0x30000;
	wr.wr.rdma.rkey = 0x4321;
	ibv_post_send(t->xi, &wr, &bad);
	wr.opcode = IBV_WR_ATOMIC_CMP_AND_SWP;
	s.addr = (uintptr_t)dst + 4096 + 16;
	s.length = 8;
	wr.wr.atomic.remote_addr = 0x40000;
	wr.wr.atomic.rkey = 0x4321;
	ibv_post_send(t->xi, &wr, &bad);
	wr.opcode = IBV_WR_SEND;
	s.addr = (uintptr_t)g.sendbuf + 512;
	s.length = 200;
	s.lkey = g.send_mr->lkey;
	ibv_post_send(t->xi, &wr, &bad);
}

/*
 * The round's XRC objects: S1, S2, S3 with receives posted, the target in
 * X1, the initiator in PD1.
 */
static int xrc_targets_create(struct fz_rng *r, struct target *t, int round)
{
	struct ibv_qp_init_attr_ex qa = {
		.qp_type = IBV_QPT_XRC_RECV,
		.comp_mask = IBV_QP_INIT_ATTR_XRCD,
		.xrcd = g.xrcd[0],
	};
	int k;

	for (k = 0; k < XRC_SRQS; k++) {
		t->srq[k] = xrc_srq_create(k);
		if (!t->srq[k] || ibv_get_srq_num(t->srq[k], &t->srqn[k])) {
			printf("# cannot create XRC SRQ %d: %s\n", k,
			       strerror(errno));
			return -1;
		}
		post_srq_recvs(r, t, k, 32);
	}
	t->xt = ibv_create_qp_ex(g.ctx, &qa);
	memset(&qa, 0, sizeof(qa));
	qa.qp_type = IBV_QPT_XRC_SEND;
	qa.comp_mask = IBV_QP_INIT_ATTR_PD;
	qa.pd = g.pd;
	qa.send_cq = g.cq;
	qa.cap.max_send_wr = 16;
	qa.cap.max_send_sge = 2;
	t->xi = ibv_create_qp_ex(g.ctx, &qa);
	if (!t->xt || !t->xi) {
		printf("# cannot create the XRC %s QP: %s\n",
		       t->xt ? "initiator" : "target", strerror(errno));
		return -1;
	}
	if (xt_connect(r, t, round) ||
	    fz_connect_access(t->xi, g.gid_idx, g.mtu,
			      PEER_QPN(round, PK_XINI), &g.peer_gid,
			      fz_u32(r) & 0xffffff, t->xi_sq_psn, 18, 7, 0)) {
		printf("# cannot connect the XRC QPs: %s\n", strerror(errno));
		return -1;
	}
	xi_requests(r, t);
	return 0;
}

/*
 * Poll XRC SRQ @k's CQ.  A CQE there must be a receive of the round's XRC
 * target @xtqpn, from this SRQ's WQEs, well formed, and of an SRQ the
 * round names (@allowed), not destroyed and drained before (@gone).  S3's
 * CQ never gets any.  Returns the bad ones.
 */
static int drain_xcq(int k, uint32_t xtqpn, int allowed, int gone,
		     const char *when)
{
	struct ibv_wc wc[16];
	int n, i, bad = 0;

	while ((n = ibv_poll_cq(g.xcq[k], 16, wc)) > 0) {
		for (i = 0; i < n; i++) {
			const char *why = NULL;

			if (k == 2)
				why = "on the CQ of an SRQ of another XRC domain";
			else if (!allowed)
				why = "on the CQ of an SRQ no packet named";
			else if (gone)
				why = "after its SRQ was destroyed";
			else if (wc[i].qp_num != xtqpn)
				why = "of a QP other than the XRC target";
			else if (wc[i].wr_id != (uint64_t)(XRC_WRID | k))
				why = "of a WQE that is not this SRQ's";
			else if (wc[i].status > IBV_WC_TM_RNDV_INCOMPLETE ||
				 (wc[i].opcode != IBV_WC_RECV &&
				  wc[i].opcode != IBV_WC_RECV_RDMA_WITH_IMM) ||
				 (wc[i].status == IBV_WC_SUCCESS &&
				  wc[i].byte_len > g.mr_len[R_XRECV(k)]))
				why = "malformed";
			if (!why) {
				xs.recv_ok[k] += wc[i].status ==
						 IBV_WC_SUCCESS;
				continue;
			}
			if (!bad)
				printf("# %s: a CQE of XRC SRQ S%d %s: qp %#x wr_id %#llx status %d opcode %d byte_len %u\n",
				       when, k + 1, why, wc[i].qp_num,
				       (unsigned long long)wc[i].wr_id,
				       wc[i].status, wc[i].opcode,
				       wc[i].byte_len);
			bad++;
		}
	}
	return n < 0 ? bad + 1 : bad;
}

static int drain_xcqs(const struct target *t, uint32_t xtqpn, const char *when)
{
	int k, bad = 0;

	for (k = 0; k < XRC_SRQS; k++)
		bad += drain_xcq(k, xtqpn, (t->xmode >> k) & 1, t->srq_gone[k],
				 when);
	return bad;
}

/*
 * Nothing may change region @i any more: what its MR holds now (if it
 * could change) is what it must keep.  A byte changed where it never
 * could, it is not taken in: sentinel_check() reports it.
 */
static void region_freeze(int i)
{
	size_t j, lo = g.mr_off[i], hi = lo + g.mr_len[i];

	if (!g.may_change[i])
		return;
	for (j = lo; j < hi; j++) {
		xs.placed[i] += g.map[i][j] != g.pat[i][j];
		g.pat[i][j] = g.map[i][j];
	}
	g.may_change[i] = 0;
}

/* Remember @n as a destroyed SRQ's number. */
static void srqn_dead(uint32_t n)
{
	if (ndead < (int)(sizeof(dead_srqn) / sizeof(dead_srqn[0])))
		dead_srqn[ndead++] = n;
	else
		dead_srqn[n % ndead] = n;
}

/*
 * XRC SRQ @k destroyed in the middle of the round, while the target may
 * hold it: its CQ drained, from now on nothing may reach its receive
 * region, nor (S2 being the only way to PD3) S2's PD's memory, nor its CQ.
 * Returns the bad CQEs, or 1 if the destroy failed.
 */
static int xrc_srq_kill(struct target *t, int k, const char *when)
{
	int bad, err;

	err = ibv_destroy_srq(t->srq[k]);
	if (err) {
		printf("# %s: cannot destroy XRC SRQ S%d while in use: %s\n",
		       when, k + 1, strerror(err));
		return 1;
	}
	t->srq[k] = NULL;
	srqn_dead(t->srqn[k]);
	bad = drain_xcq(k, t->xt->qp_num, (t->xmode >> k) & 1, 0, when);
	t->srq_gone[k] = 1;
	region_freeze(R_XRECV(k));
	if (k == 1)
		region_freeze(R_X3);
	return bad;
}

/*
 * A message of several packets (SEND or RDMA WRITE, FIRST, MIDDLEs, LAST,
 * with immediate or not) to the XRC target at its expected PSN, every
 * packet well formed and naming one SRQ the round allows -- but now and
 * then, before one of the packets after the first, that SRQ is destroyed,
 * the target is reset and connected again, or that packet names another
 * SRQ (S3, a dead one, the other allowed one).  A message begun in one SRQ
 * must end there or nowhere.  Returns the bad CQEs a destroy drained.
 */
static int fuzz_xrc_seq(struct fz_rng *r, struct target *t, int round,
			struct fuzz_stats *st, const char *when)
{
	uint32_t mtu = 128u << g.mtu, n = 2 + fz_below(r, 3), i, rkey, name;
	uint32_t last = 1 + fz_below(r, mtu), total = (n - 1) * mtu + last;
	int write = fz_one_in(r, 2), imm = fz_one_in(r, 3), bad = 0, xk;
	int k = t->xmode == 3 ? (int)fz_below(r, 2) : t->xmode - 1;
	int twist = fz_one_in(r, 3) ? 1 + (int)fz_below(r, n - 1) : -1;
	uint8_t ext[32];
	struct inj in;
	uint64_t va;

	if (mtu > 1024)		/* struct inj's room */
		return 0;
	xt_sync(r, t, round);
	key_va_region(r, k ? R_X3 : R_GRANTED, total, &rkey, &va);
	for (i = 0; i < n; i++) {
		uint8_t op = i == 0 ? 0x00 : i < n - 1 ? 0x01 :
			     imm ? 0x03 : 0x02;
		int el = 4;

		name = t->srqn[k];
		if ((int)i == twist) {
			switch (fz_below(r, 4)) {
			case 0:
				/* Rarely: it ends the SRQ for the round. */
				if (t->srq[k] && fz_one_in(r, 4)) {
					bad += xrc_srq_kill(t, k, when);
					st->xrc_srq_destroyed++;
				}
				break;
			case 1:
				xt_rearm(r, t, round);
				break;
			default:
				name = pick_srqn(r, t, 0, &xk);
			}
		}
		if (write)
			op += 0x06;	/* RDMA WRITE FIRST ... LAST_WITH_IMM */
		memset(ext, 0, sizeof(ext));
		put32(ext, name);
		if (write && i == 0) {
			put64(ext + 4, va);
			put32(ext + 12, rkey);
			put32(ext + 16, total);
			el += 16;
		}
		if (imm && i == n - 1) {
			put32(ext + el, fz_u32(r));
			el += 4;
		}
		inj_build(r, &in, WIRE, XRC + op, t->xt->qp_num, t->xt_exp, ext,
			  el, i < n - 1 ? mtu : last);
		st->sent += inject_ns(&in);
		st->xrc++;
		t->xt_exp = (t->xt_exp + 1) & 0xffffff;
	}
	st->xrc_seq++;
	return bad;
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
	/*
	 * Every fourth round, the first included, all may write
	 * (odp_dm_probe()) and do atomics: a short run on a slow kernel,
	 * of a round or two, executes masked atomics too.
	 */
	if (!(round % 4))
		t->rc_acc |= RW | RA;
	t->uc_acc = fz_one_in(r, 2) ? RW : 0;
	g.rc_acc[round % PEERS] = t->rc_acc;
	t->xt_rq_psn = fz_u32(r) & 0xffffff;
	t->xt_exp = t->xt_rq_psn;
	t->xi_sq_psn = fz_u32(r) & 0xffffff;
	t->xt_acc = (fz_one_in(r, 2) ? RW : 0) | (fz_one_in(r, 2) ? RR : 0) |
		    (fz_one_in(r, 2) ? RA : 0);
	t->xmode = 1 + fz_below(r, 3);
	g.xrc_acc[round % PEERS] = t->xt_acc;
	if (odp_dm_rights(r, !(round % 4)))
		return -1;
	rights_setup(t);
	odp_hole_cycle(r);
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
	return xrc_targets_create(r, t, round);
}

/*
 * Poll what the CQ has; a malformed CQE counts as a failure, so does one of
 * a QP other than the round's (@qpn: RC, UC, UD, the XRC initiator; the
 * XRC target has no CQ of its own), e.g. of a QP destroyed earlier.
 */
static int drain_cq(const uint32_t *qpn, const char *when)
{
	struct ibv_wc wc[16];
	int n, i, bad = 0;

	while ((n = ibv_poll_cq(g.cq, 16, wc)) > 0) {
		for (i = 0; i < n; i++) {
			uint32_t q = wc[i].qp_num;

			if ((q != qpn[0] && q != qpn[1] && q != qpn[2] &&
			     q != qpn[4]) ||
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

	if (s == IBV_QPS_RTS || s == IBV_QPS_ERR || (ud && s == IBV_QPS_SQE) ||
	    (qp->qp_type == IBV_QPT_XRC_RECV && s == IBV_QPS_RTR))
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
	struct ibv_qp *qp[NTGT] = { t->rc, t->uc, t->ud, t->xt, t->xi };
	union ibv_gid mgid;
	int i, bad = 0, err;

	mcast_gid(&mgid);
	if (t->mcast && (err = ibv_detach_mcast(t->ud, &mgid, 0))) {
		printf("# %s: cannot detach UD QP %#x from its group: %s\n",
		       when, t->ud->qp_num, strerror(err));
		bad++;
	}
	for (i = 0; i < NTGT; i++) {
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
	/* The SRQs once nothing uses them: as the kernel guarantees. */
	for (i = 0; i < XRC_SRQS; i++) {
		if (!t->srq[i])
			continue;
		err = ibv_destroy_srq(t->srq[i]);
		if (err) {
			printf("# %s: cannot destroy XRC SRQ S%d: %s\n", when,
			       i + 1, strerror(err));
			bad++;
		}
		srqn_dead(t->srqn[i]);
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
	int round = 0, bad_rounds = 0, bad_keys = 0, cqe_bad = 0, xcqe_bad = 0;
	int other_fd = -1, other_ok = 0, ost = 0, bad_destroy = 0;
	int probe_bad = 0;
	unsigned long xt_resets = 0, xt_err_rounds = 0, rc_resets = 0;
	long sentinel_bad = 0;
	unsigned int i;
	pid_t live, other;
	uint32_t prev[NTGT] = { 0 };

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
	m = fz_splitmix(m);
	memcpy(g.marker3, &m, 8);

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
	g.pd3 = ibv_alloc_pd(g.ctx);
	g.cq = ibv_create_cq(g.ctx, 512, NULL, NULL, 0);
	for (i = 0; i < 2; i++) {
		struct ibv_xrcd_init_attr xa = {
			.comp_mask = IBV_XRCD_INIT_ATTR_FD |
				     IBV_XRCD_INIT_ATTR_OFLAGS,
			.fd = -1, .oflags = O_CREAT,
		};

		g.xrcd[i] = ibv_open_xrcd(g.ctx, &xa);
		if (!g.xrcd[i]) {
			printf("Bail out! cannot open an XRC domain: %s\n",
			       strerror(errno));
			return 1;
		}
	}
	for (i = 0; i < XRC_SRQS; i++)
		if (!(g.xcq[i] = ibv_create_cq(g.ctx, 256, NULL, NULL, 0))) {
			printf("Bail out! cannot create a CQ: %s\n",
			       strerror(errno));
			return 1;
		}
	g.raw = socket_in_ns(AF_INET, SOCK_RAW, IPPROTO_RAW, NULL, NULL);
	g.alt = socket_in_ns(AF_PACKET, SOCK_DGRAM, htons(ETH_P_IP), "fz3",
			     &g.alt_ifindex);
	g.cap[g.ncap++] = capture_open("fz1");
	g.cap[g.ncap++] = capture_open("fz3");
	if (!g.pd || !g.pd2 || !g.pd3 || !g.cq || g.raw < 0 || g.alt < 0 ||
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
		uint32_t qpn[NTGT];
		struct target saved;
		long bad;
		int k, c;

		fz_seed(&r, rs);
		snprintf(when, sizeof(when), "round %d (seed %#llx)", round,
			 (unsigned long long)seed);
		g.round = round;
		memset(masked_psn, 0, sizeof(masked_psn));
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
		qpn[3] = t.xt->qp_num;
		qpn[4] = t.xi->qp_num;
		memcpy(prev, qpn, sizeof(prev));
		if (round < 3 || !(round % 50))
			printf("# %s: XRC target %#x names %s, rights %#x; SRQs %u %u, S3 %u\n",
			       when, qpn[3], t.xmode == 3 ? "S1 and S2" :
			       t.xmode == 1 ? "S1" : "S2", t.xt_acc,
			       t.srqn[0], t.srqn[1], t.srqn[2]);
		quiet_phase(&r, &t, &qs, when);
		if (!(round % 4))
			probe_bad += odp_dm_probe(&r, &t);
		ud_sends(&r, t.ud, 4);
		for (k = 0; k < ROUND_PKTS && st.sent < max_pkts; k++) {
			if (fz_one_in(&r, 48))
				xcqe_bad += fuzz_xrc_seq(&r, &t, round, &st,
							 when);
			fuzz_one(&r, &t, &st);
			if (k % 32 == 31 && k % 128 != 127) {
				xt_sync(&r, &t, round);
				rc_sync(&r, &t, round);
			}
			if (k % 128 == 127) {
				int x;

				c = drain_cq(qpn, when);
				cqe_bad += c != 0;
				xcqe_bad += drain_xcqs(&t, qpn[3], when) != 0;
				post_recvs(&r, t.rc, 4);
				post_recvs(&r, t.uc, 4);
				post_recvs(&r, t.ud, 4);
				for (x = 0; x < XRC_SRQS; x++)
					post_srq_recvs(&r, &t, x, 4);
				ud_sends(&r, t.ud, 2);
				if (fz_one_in(&r, 4))
					xi_requests(&r, &t);
				/* ODP pages go and come under the packets. */
				if (fz_one_in(&r, 3))
					odp_drop_page(&r);
				if (fz_one_in(&r, 3))
					odp_advise(&r);
				/*
				 * Now and then an SRQ destroyed under the
				 * target, or the target, fallen into ERR,
				 * connected again.
				 */
				x = fz_below(&r, XRC_SRQS);
				if (t.srq[x] && ((t.xmode >> x) & 1 || x == 2) &&
				    fz_one_in(&r, 24)) {
					xcqe_bad += xrc_srq_kill(&t, x, when);
					st.xrc_srq_destroyed++;
				}
				xt_sync(&r, &t, round);
				rc_sync(&r, &t, round);
				capture_drain();
				if (fz_now() > end)
					break;
			}
		}
		usleep(100 * 1000);	/* let the receive path finish */
		c = drain_cq(qpn, when);
		cqe_bad += c != 0;
		xcqe_bad += drain_xcqs(&t, qpn[3], when) != 0;
		if (!state_ok(t.rc, 0) || !state_ok(t.uc, 0) ||
		    !state_ok(t.ud, 1) || !state_ok(t.xt, 0) ||
		    !state_ok(t.xi, 0))
			bad_rounds++;
		xt_err_rounds += fz_qp_state(t.xt) == IBV_QPS_ERR;
		xt_resets += t.xt_resets;
		rc_resets += t.rc_resets;
		saved = t;
		bad_destroy += targets_destroy(&t, when);
		/*
		 * Packets still on their way when the CQ was drained may have
		 * completed since (a slow kernel takes longer than the 100 ms
		 * above); none may come once the QPs are destroyed.
		 */
		c = drain_cq(qpn, when);
		cqe_bad += c != 0;
		xcqe_bad += drain_xcqs(&saved, qpn[3], when) != 0;
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
	printf("# RC target: fallen into ERR and connected again %lu times; masked atomics: %lu sent, %lu with a short MaskedAtomicETH, %lu ATOMIC ACKs of the RC target for them\n",
	       rc_resets, st.masked, st.masked_short, cap.masked_acks);
	printf("# XRC: %lu packets at the XRC QPs, %lu with a short XRCETH, %lu messages of several packets; %lu SRQs destroyed under the target, %lu resets of the target, %lu rounds ending in ERR\n",
	       st.xrc, st.xrc_short, st.xrc_seq, st.xrc_srq_destroyed,
	       xt_resets, xt_err_rounds);
	printf("# XRC: receives completed in S1 %lu, S2 %lu; %lu answers of the XRC target; bytes placed in S1's receives %lu, S2's %lu, S2's PD's MR %lu, PD1's granted/write-only/atomic-only MRs %lu/%lu/%lu\n",
	       xs.recv_ok[0], xs.recv_ok[1], xs.answers, xs.placed[R_XRECV1],
	       xs.placed[R_XRECV2], xs.placed[R_X3], xs.placed[R_GRANTED],
	       xs.placed[R_WO], xs.placed[R_AO]);

	printf("# ODP and DM: the ODP MR's rights changed by rereg_mr %lu times (%lu failed), %lu of %lu advise_mr calls taken, %lu pages dropped, its hole unmapped %lu times; the DM MR registered %lu times; bytes placed in the ODP MR %lu, the DM MR %lu\n",
	       os.rereg, os.rereg_failed, os.advise, os.advise_calls,
	       os.dropped, os.holes, os.dm_reg, xs.placed[R_ODP],
	       xs.placed[R_DM]);
	/* For fuzz.sh: each must be more than 0. */
	printf("# reached: odp_rereg=%lu odp_advise=%lu odp_dropped=%lu odp_holes=%lu dm_reg=%lu probes_landed=%lu masked_acks=%lu\n",
	       os.rereg, os.advise, os.dropped, os.holes, os.dm_reg,
	       os.probes_landed, cap.masked_acks);

	fz_result(!sentinel_bad, "no byte changed outside the memory the rkeys grant");
	fz_result(!bad_keys, "re-registration never gives an old rkey again");
	fz_result(!bad_rounds, "the target QPs end in RTS or ERR (UD: SQE, XRC target: RTR)");
	fz_result(!bad_destroy, "the target QPs are destroyed at the end of each round");
	fz_result(!cqe_bad, "every CQE of the target QPs is well formed, none after their destruction");
	fz_result(!xcqe_bad && st.xrc > 0,
		  "every CQE of the XRC SRQs is the XRC target's, of a named SRQ of its XRC domain, none after the SRQ's destruction");
	fz_result(d_icrc + d_drop >= (long long)st.bad_icrc && d_icrc > 0,
		  "the packets with a bad ICRC are dropped and counted (%lld icrc_errors for %lu sent)",
		  d_icrc, st.bad_icrc);
	fz_result(!qs.bad && !cap.quiet_answers && qs.injected > 0,
		  "nothing a local socket or another netdev sent was executed or answered (%lu packets)",
		  qs.injected);
	fz_result(!qs.bad_count,
		  "wrong_netdev counted each of them (%lld)", qs.wrong_netdev);
	fz_result(!qs.bad_malformed && qs.answers_to_ud > 0 && qs.xrc_cross > 0,
		  "RC answers to UD QPs and QP1, RC packets to XRC QPs and XRC packets to RC QPs are dropped as malformed (%lld for %lu + %lu)",
		  qs.malformed, qs.answers_to_ud, qs.xrc_cross);
	fz_result(!cap.leaks && cap.pkts > 0,
		  "no packet of the device carries memory nothing grants reading (%lu captured)",
		  cap.pkts);
	fz_result(!probe_bad,
		  "granted WRITEs into the ODP and DM MRs land (%lu of %lu)",
		  os.probes_landed, os.probes);
	fz_result(!cap.leaks3 && os.holes > 0,
		  "no packet of the device carries the ODP MR's unmapped page (unmapped %lu times)",
		  os.holes);
	fz_result(!cap.wrong_answers,
		  "no READ or ATOMIC is answered by a QP without the right");
	fz_result(!cap.wrong_range,
		  "every QP answers and sends in its own transport's opcodes (XRC: 0xA0 on)");
	fz_result(g.have_other && other_ok && !cap.leaks2,
		  "the other user's memory is neither written nor sent");
	fz_result(fz_live_stop_wait(live), "the live QP pair kept working");
	fz_result(st.sent > 0 && st.send_err < st.sent / 10,
		  "%lu packets sent", st.sent);
	printf("1..%d\n", fz_tap_n);
	return fz_tap_failed ? 1 : 0;
}
