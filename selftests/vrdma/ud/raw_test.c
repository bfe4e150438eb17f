// SPDX-License-Identifier: GPL-2.0
/*
 * Raw packet QPs and flow steering through the standard verbs API.
 *
 *   - a raw packet QP (IBV_QPT_RAW_PACKET) is created, with an RQ or an
 *     SRQ, moved RESET, INIT (port), RTR, RTS, queried, and shown by
 *     "rdma res show qp" with its type; a process without CAP_NET_RAW
 *     gets EPERM, and no flow either (ib_core's checks);
 *   - frames one raw QP sends with a multicast destination MAC reach the
 *     QPs of the same device whose flows match them (a NIC's internal
 *     switch), byte for byte, not the sender's own: flows of each spec
 *     type (Ethernet, IPv4, IPv6, TCP, UDP) with masks; frames that differ
 *     in a masked field (an IP address, a port, the ethertype) do not
 *     arrive, and a frame that two flows of one QP match arrives once;
 *     SNIFFER, ALL_DEFAULT and MC_DEFAULT flows; a frame to the netdev's
 *     own MAC arrives and does not go on the wire;
 *   - frames from the wire: an AF_PACKET socket on the veth peer sends
 *     IPv4/UDP frames (one with an 802.1Q tag) to the bound netdev's MAC,
 *     and the flow's QP receives them whole, the tag where it was;
 *   - what is refused or dropped: a frame shorter than the Ethernet header
 *     or longer than the MTU allows (IBV_WC_LOC_LEN_ERR, nothing sent),
 *     SEND with immediate (IBV_WC_LOC_QP_OP_ERR), a frame without a
 *     receive WQE (dropped, raw_dropped counted), a receive buffer too
 *     small (IBV_WC_LOC_LEN_ERR); malformed flows (sizes that lie, built
 *     by hand as uverbs commands; unknown, inner and action specs, too
 *     many specs, flags, a port that is not there, specs on a sniffer, a
 *     flow on a UD QP); flows up to the device's limit, then ENOMEM;
 *   - life cycle: a destroyed flow steers nothing more; a QP with flows
 *     cannot be destroyed (EBUSY, ib_core), and a process that exits with
 *     flows leaves none behind; the packet tap is in /proc/net/ptype only
 *     while the device has flows, and goes with "rdma link delete" and
 *     with the netdev; an RC pair between the two devices keeps working
 *     while a sniffer on one of them sees its RoCE packets.
 *
 * Setup and device names are those of rc_test.c (rc_suite.h): the raw QPs
 * are on the first device (on rct0), the wire's peer is rct1; the veth has
 * no IPv6, whose chatter sniffers and default flows would take.  rdma_rxe
 * has no raw packet QPs: with VRDMA_TEST_TYPE=rxe the program skips.
 *
 * Runs as root in the test VM.
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <net/if.h>
#include <linux/if_ether.h>
#include <linux/if_packet.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>
#include <infiniband/verbs.h>
#include <rdma/ib_user_verbs.h>

#include "rc_lib.h"
#include "rc_suite.h"

#define RAW_DEPTH	64
#define RAW_BUF		(64 * 1024)
#define RAW_SLOT	4096		/* each frame's room in the buffers */
#define RAW_MAX_FLOWS	256		/* VRDMA_MAX_FLOWS */
#define RAW_TAP		"vrdma_raw_tap_rcv"

/* pyverbs' PacketConsts: "DST mac must be multicast". */
static const uint8_t mc_mac[6] = { 0x01, 0x50, 0x56, 0x19, 0x20, 0xa7 };
static const uint8_t src_mac[6] = { 0x24, 0x8a, 0x07, 0xa5, 0x28, 0xc8 };

/* ---- frames ------------------------------------------------------------ */

struct frame {
	const uint8_t *dst;
	int ip6;		/* IPv6, else IPv4 */
	int tcp;		/* TCP, else UDP */
	uint32_t saddr, daddr;	/* IPv4 (host order); IPv6: the last word */
	uint16_t sport, dport;
	int vlan;		/* an 802.1Q tag with this VID */
	uint16_t ethertype;	/* 0: IPv4 or IPv6 as @ip6 says */
	size_t len;		/* the whole frame */
	uint32_t seed;		/* of the payload */
};

static void put16(uint8_t *p, uint16_t v)
{
	p[0] = v >> 8;
	p[1] = v;
}

static void put32(uint8_t *p, uint32_t v)
{
	put16(p, v >> 16);
	put16(p + 2, v);
}

/* The IPv4 header checksum of the 20 bytes at @h (its field 0). */
static uint16_t ip4_csum(const uint8_t *h)
{
	uint32_t sum = 0;
	int i;

	for (i = 0; i < 20; i += 2)
		sum += h[i] << 8 | h[i + 1];
	while (sum >> 16)
		sum = (sum & 0xffff) + (sum >> 16);
	return ~sum;
}

/* Build @f into @p; returns its length (f->len). */
static size_t frame_build(uint8_t *p, const struct frame *f)
{
	size_t off = 12, l3, l4len = f->tcp ? 20 : 8;

	memset(p, 0, f->len);
	memcpy(p, f->dst, 6);
	memcpy(p + 6, src_mac, 6);
	if (f->vlan) {
		put16(p + 12, ETH_P_8021Q);
		put16(p + 14, 5 << 13 | f->vlan);
		off += 4;
	}
	put16(p + off, f->ethertype ? f->ethertype :
		       f->ip6 ? ETH_P_IPV6 : ETH_P_IP);
	l3 = off + 2;
	if (f->ip6) {
		p[l3] = 0x60;
		put16(p + l3 + 4, f->len - l3 - 40);
		p[l3 + 6] = f->tcp ? IPPROTO_TCP : IPPROTO_UDP;
		p[l3 + 7] = 64;
		p[l3 + 8] = 0xa0;	/* a0a1::...  b0b1::... as pyverbs */
		p[l3 + 9] = 0xa1;
		put32(p + l3 + 20, f->saddr);
		p[l3 + 24] = 0xb0;
		p[l3 + 25] = 0xb1;
		put32(p + l3 + 36, f->daddr);
		l3 += 40;
	} else {
		p[l3] = 0x45;
		put16(p + l3 + 2, f->len - l3);
		put16(p + l3 + 6, 0x4000);	/* DF */
		p[l3 + 8] = 64;
		p[l3 + 9] = f->tcp ? IPPROTO_TCP : IPPROTO_UDP;
		put32(p + l3 + 12, f->saddr);
		put32(p + l3 + 16, f->daddr);
		put16(p + l3 + 10, ip4_csum(p + l3));
		l3 += 20;
	}
	put16(p + l3, f->sport);
	put16(p + l3 + 2, f->dport);
	if (f->tcp)
		p[l3 + 12] = 5 << 4;
	else
		put16(p + l3 + 4, f->len - l3);
	if (f->len > l3 + l4len)
		rc_fill(p + l3 + l4len, f->len - l3 - l4len, f->seed, 0);
	return f->len;
}

/* The default frame: IPv4/UDP 1.1.1.1:1234 -> 2.2.2.2:5678 to @dst. */
static struct frame frame_std(const uint8_t *dst, size_t len, uint32_t seed)
{
	struct frame f = {
		.dst = dst, .saddr = 0x01010101, .daddr = 0x02020202,
		.sport = 1234, .dport = 5678, .len = len, .seed = seed,
	};

	return f;
}

/* ---- flows ------------------------------------------------------------- */

/* An ibv_flow_attr and its specs, laid out as libibverbs wants them. */
struct flow_req {
	struct ibv_flow_attr attr;
	uint8_t specs[512];
	size_t used;
};

static void flow_init(struct flow_req *r, enum ibv_flow_attr_type type)
{
	memset(r, 0, sizeof(*r));
	r->attr.type = type;
	r->attr.size = sizeof(r->attr);
	r->attr.port = RC_PORT;
}

static void *flow_add(struct flow_req *r, enum ibv_flow_spec_type type,
		      size_t size)
{
	struct ibv_flow_spec *s = (void *)(r->specs + r->used);

	s->hdr.type = type;
	s->hdr.size = size;
	r->used += size;
	r->attr.size += size;
	r->attr.num_of_specs++;
	return s;
}

static void flow_eth(struct flow_req *r, const uint8_t *dst, uint16_t type)
{
	struct ibv_flow_spec_eth *s = flow_add(r, IBV_FLOW_SPEC_ETH,
					       sizeof(*s));

	memcpy(s->val.dst_mac, dst, 6);
	memset(s->mask.dst_mac, 0xff, 6);
	memcpy(s->val.src_mac, src_mac, 6);
	memset(s->mask.src_mac, 0xff, 6);
	s->val.ether_type = htons(type);
	s->mask.ether_type = type ? 0xffff : 0;
}

/* IPv4 (ext spec, as pyverbs' Ipv4ExtSpec): addresses under /@plen. */
static void flow_ip4(struct flow_req *r, uint32_t saddr, uint32_t daddr,
		     int plen, uint8_t proto)
{
	struct ibv_flow_spec_ipv4_ext *s = flow_add(r, IBV_FLOW_SPEC_IPV4_EXT,
						    sizeof(*s));
	uint32_t m = plen ? ~0u << (32 - plen) : 0;

	s->val.src_ip = htonl(saddr);
	s->mask.src_ip = htonl(m);
	s->val.dst_ip = htonl(daddr);
	s->mask.dst_ip = htonl(m);
	s->val.proto = proto;
	s->mask.proto = proto ? 0xff : 0;
}

static void flow_ip6(struct flow_req *r, uint32_t daddr, uint8_t next)
{
	struct ibv_flow_spec_ipv6 *s = flow_add(r, IBV_FLOW_SPEC_IPV6,
						sizeof(*s));

	s->val.dst_ip[0] = 0xb0;
	s->val.dst_ip[1] = 0xb1;
	put32(s->val.dst_ip + 12, daddr);
	memset(s->mask.dst_ip, 0xff, 16);
	s->val.next_hdr = next;
	s->mask.next_hdr = 0xff;
}

static void flow_ports(struct flow_req *r, int tcp, uint16_t sport,
		       uint16_t dport)
{
	struct ibv_flow_spec_tcp_udp *s =
		flow_add(r, tcp ? IBV_FLOW_SPEC_TCP : IBV_FLOW_SPEC_UDP,
			 sizeof(*s));

	s->val.src_port = htons(sport);
	s->mask.src_port = sport ? 0xffff : 0;
	s->val.dst_port = htons(dport);
	s->mask.dst_port = 0xffff;
}

static struct ibv_flow *flow_create(struct ibv_qp *qp, struct flow_req *r)
{
	return ibv_create_flow(qp, &r->attr);
}

/* ---- raw QPs ----------------------------------------------------------- */

struct raw_qp {
	struct ibv_cq *scq, *rcq;
	struct ibv_qp *qp;
};

/* A raw packet QP of @pd in RTS (on @srq if set); NULL qp if refused. */
static int raw_qp_make(struct raw_qp *q, struct ibv_context *ctx,
		       struct ibv_pd *pd, struct ibv_srq *srq)
{
	struct ibv_qp_init_attr ia = {
		.qp_type = IBV_QPT_RAW_PACKET,
		.srq = srq,
		.cap = {
			.max_send_wr = RAW_DEPTH, .max_recv_wr = RAW_DEPTH,
			.max_send_sge = 4, .max_recv_sge = 4,
			.max_inline_data = 64,
		},
	};
	struct ibv_qp_attr a = { .qp_state = IBV_QPS_INIT, .port_num = RC_PORT };

	memset(q, 0, sizeof(*q));
	q->scq = ibv_create_cq(ctx, 2 * RAW_DEPTH, NULL, NULL, 0);
	q->rcq = ibv_create_cq(ctx, 2 * RAW_DEPTH, NULL, NULL, 0);
	if (!q->scq || !q->rcq)
		return errno ? errno : ENOMEM;
	ia.send_cq = q->scq;
	ia.recv_cq = q->rcq;
	q->qp = ibv_create_qp(pd, &ia);
	if (!q->qp)
		return errno;
	if (ibv_modify_qp(q->qp, &a, IBV_QP_STATE | IBV_QP_PORT))
		return errno;
	a.qp_state = IBV_QPS_RTR;
	if (ibv_modify_qp(q->qp, &a, IBV_QP_STATE))
		return errno;
	a.qp_state = IBV_QPS_RTS;
	if (ibv_modify_qp(q->qp, &a, IBV_QP_STATE))
		return errno;
	return 0;
}

static void raw_qp_destroy(struct raw_qp *q)
{
	if (q->qp)
		ibv_destroy_qp(q->qp);
	if (q->scq)
		ibv_destroy_cq(q->scq);
	if (q->rcq)
		ibv_destroy_cq(q->rcq);
	memset(q, 0, sizeof(*q));
}

static int raw_post_recv(struct ibv_qp *qp, uint64_t wr_id, struct rc_buf *b,
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

static int raw_post_send(struct ibv_qp *qp, uint64_t wr_id,
			 enum ibv_wr_opcode op, struct rc_buf *b, size_t off,
			 size_t len)
{
	struct ibv_sge sge = {
		.addr = (uintptr_t)(b->p + off), .length = len,
		.lkey = b->mr->lkey,
	};
	struct ibv_send_wr wr = {
		.wr_id = wr_id, .sg_list = &sge, .num_sge = 1, .opcode = op,
		.send_flags = IBV_SEND_SIGNALED,
	}, *bad = NULL;

	return ibv_post_send(qp, &wr, &bad);
}

/* ---- the environment --------------------------------------------------- */

/* The device's counter @name, or -1. */
static long long raw_counter(const char *name)
{
	return rc_hw_counter(rc_cfg.name[0], name);
}

/* Does /proc/net/ptype hold our tap (on @netdev)? */
static int raw_tap_on(const char *netdev)
{
	char line[256];
	int found = 0;
	FILE *f = fopen("/proc/net/ptype", "r");

	if (!f)
		return -1;
	while (fgets(line, sizeof(line), f))
		if (strstr(line, RAW_TAP) && strstr(line, netdev))
			found = 1;
	fclose(f);
	return found;
}

static int read_mac(const char *netdev, uint8_t *mac)
{
	char path[128];
	unsigned int m[6];
	FILE *f;
	int i, n;

	snprintf(path, sizeof(path), "/sys/class/net/%s/address", netdev);
	f = fopen(path, "r");
	if (!f)
		return -1;
	n = fscanf(f, "%x:%x:%x:%x:%x:%x", &m[0], &m[1], &m[2], &m[3], &m[4],
		   &m[5]);
	fclose(f);
	for (i = 0; i < 6; i++)
		mac[i] = m[i];
	return n == 6 ? 0 : -1;
}

/* Send @len bytes of @frame out of @netdev through an AF_PACKET socket. */
static int wire_send(const char *netdev, const uint8_t *frame, size_t len)
{
	struct sockaddr_ll sll = {
		.sll_family = AF_PACKET,
		.sll_ifindex = if_nametoindex(netdev),
		.sll_halen = 6,
	};
	int fd, ret;

	fd = socket(AF_PACKET, SOCK_RAW, 0);
	if (fd < 0)
		return -1;
	memcpy(sll.sll_addr, frame, 6);
	ret = sendto(fd, frame, len, 0, (struct sockaddr *)&sll, sizeof(sll));
	close(fd);
	return ret == (int)len ? 0 : -1;
}

FIXTURE(raw) {
	struct rc_dev d;
	struct rc_buf sbuf, rbuf;
	struct raw_qp a, b;
	uint8_t own_mac[6];
	uint32_t seed;
};

FIXTURE_SETUP(raw)
{
	int ret;

	rc_dev_open(_metadata, &self->d, 0);
	rc_buf_alloc(_metadata, &self->sbuf, self->d.pd, RAW_BUF,
		     IBV_ACCESS_LOCAL_WRITE);
	rc_buf_alloc(_metadata, &self->rbuf, self->d.pd, RAW_BUF,
		     IBV_ACCESS_LOCAL_WRITE);
	ret = raw_qp_make(&self->a, self->d.ctx, self->d.pd, NULL);
	if (ret == EOPNOTSUPP && rc_cfg.is_rxe)
		SKIP(return, "rxe: no raw packet QPs");
	ASSERT_EQ(0, ret) {
		TH_LOG("raw packet QP: %s", strerror(ret));
	}
	ASSERT_EQ(0, raw_qp_make(&self->b, self->d.ctx, self->d.pd, NULL));
	ASSERT_EQ(0, read_mac(NETDEV0, self->own_mac));
	self->seed = getpid();
}

FIXTURE_TEARDOWN(raw)
{
	raw_qp_destroy(&self->a);
	raw_qp_destroy(&self->b);
	rc_buf_free(&self->sbuf);
	rc_buf_free(&self->rbuf);
	rc_dev_close(&self->d);
}

/* Send @f from @from (slot @slot of sbuf), expect the send's success. */
static void send_frame(struct __test_metadata *_metadata,
		       FIXTURE_DATA(raw) *self, struct raw_qp *from,
		       const struct frame *f, int slot)
{
	struct rc_wc_exp e = {
		.wr_id = 0x5000 + slot, .status = IBV_WC_SUCCESS,
		.opcode = IBV_WC_SEND, .qp_num = from->qp->qp_num,
	};

	frame_build(self->sbuf.p + slot * RAW_SLOT, f);
	ASSERT_EQ(0, raw_post_send(from->qp, e.wr_id, IBV_WR_SEND, &self->sbuf,
				   slot * RAW_SLOT, f->len));
	rc_expect_wc(_metadata, from->scq, &e, "raw send");
}

/* The next receive completion of @to is @f, whole, in slot @slot of rbuf. */
static void expect_frame(struct __test_metadata *_metadata,
			 FIXTURE_DATA(raw) *self, struct raw_qp *to,
			 const struct frame *f, int slot, const char *what)
{
	struct rc_wc_exp e = {
		.wr_id = 0x7000 + slot, .status = IBV_WC_SUCCESS,
		.opcode = IBV_WC_RECV, .recv = 1, .byte_len = f->len,
		.qp_num = to->qp->qp_num,
	};
	uint8_t want[RAW_SLOT];

	rc_expect_wc(_metadata, to->rcq, &e, what);
	frame_build(want, f);
	EXPECT_SAME_BYTES(self->rbuf.p + slot * RAW_SLOT, want, f->len, what);
}

static void post_slot(struct __test_metadata *_metadata,
		      FIXTURE_DATA(raw) *self, struct raw_qp *to, int slot)
{
	memset(self->rbuf.p + slot * RAW_SLOT, 0xee, RAW_SLOT);
	ASSERT_EQ(0, raw_post_recv(to->qp, 0x7000 + slot, &self->rbuf,
				   slot * RAW_SLOT, RAW_SLOT));
}

/* @f from a to b through @flow_of_b: arrives (@arrives) or not. */
static void loop_one(struct __test_metadata *_metadata,
		     FIXTURE_DATA(raw) *self, const struct frame *f,
		     int arrives, const char *what)
{
	post_slot(_metadata, self, &self->b, 1);
	send_frame(_metadata, self, &self->a, f, 0);
	if (arrives)
		expect_frame(_metadata, self, &self->b, f, 1, what);
	else
		EXPECT_CQ_EMPTY(self->b.rcq, what);
	/* The sender has no flow: its own frame never comes back. */
	EXPECT_CQ_EMPTY(self->a.rcq, "the sender");
}

/* ---- tests ------------------------------------------------------------- */

/*
 * The QP's life: states, query, restrack, an SRQ, the opcodes it takes,
 * and as a process without CAP_NET_RAW: EPERM.
 */
TEST_F(raw, create_modify_query)
{
	struct ibv_qp_init_attr init;
	struct ibv_srq_init_attr sa = {
		.attr = { .max_wr = 16, .max_sge = 2 },
	};
	struct ibv_qp_attr qa;
	struct ibv_srq *srq;
	struct raw_qp s;
	pid_t pid;
	int status;

	ASSERT_EQ(0, ibv_query_qp(self->a.qp, &qa, IBV_QP_STATE | IBV_QP_CAP,
				  &init));
	EXPECT_EQ(IBV_QPS_RTS, qa.qp_state);
	EXPECT_LE(RAW_DEPTH, qa.cap.max_send_wr);
	EXPECT_LE(RAW_DEPTH, qa.cap.max_recv_wr);
	EXPECT_LE(4, qa.cap.max_send_sge);
	EXPECT_LE(64, qa.cap.max_inline_data);
	EXPECT_EQ(IBV_QPT_RAW_PACKET, self->a.qp->qp_type);
	EXPECT_EQ(0, rc_shf("rdma res show qp link %s/1 lqpn %u | "
			    "grep -q 'type RAW_PACKET'", rc_cfg.name[0],
			    self->a.qp->qp_num));

	/* RESET, and from there INIT needs the port. */
	qa.qp_state = IBV_QPS_RESET;
	ASSERT_EQ(0, ibv_modify_qp(self->a.qp, &qa, IBV_QP_STATE));
	qa.qp_state = IBV_QPS_INIT;
	EXPECT_NE(0, ibv_modify_qp(self->a.qp, &qa, IBV_QP_STATE));
	qa.port_num = 2;
	EXPECT_NE(0, ibv_modify_qp(self->a.qp, &qa,
				   IBV_QP_STATE | IBV_QP_PORT));
	qa.port_num = RC_PORT;
	EXPECT_EQ(0, ibv_modify_qp(self->a.qp, &qa,
				   IBV_QP_STATE | IBV_QP_PORT));

	/* On an SRQ, receiving from it. */
	srq = ibv_create_srq(self->d.pd, &sa);
	ASSERT_NE(NULL, srq);
	ASSERT_EQ(0, raw_qp_make(&s, self->d.ctx, self->d.pd, srq));
	EXPECT_EQ(0, ibv_query_qp(s.qp, &qa, IBV_QP_CAP, &init));
	EXPECT_EQ(0, qa.cap.max_recv_wr);
	raw_qp_destroy(&s);
	EXPECT_EQ(0, ibv_destroy_srq(srq));

	/* Without CAP_NET_RAW: refused, though a UD QP is not. */
	pid = fork();
	ASSERT_LE(0, pid);
	if (!pid) {
		struct ibv_qp_init_attr ia = {
			.qp_type = IBV_QPT_RAW_PACKET,
			.send_cq = self->b.scq, .recv_cq = self->b.rcq,
			.cap = { .max_send_wr = 4, .max_recv_wr = 4,
				 .max_send_sge = 1, .max_recv_sge = 1 },
		};
		struct ibv_qp *qp;
		struct flow_req r;

		if (setresgid(65534, 65534, 65534) ||
		    setresuid(65534, 65534, 65534))
			_exit(10);
		qp = ibv_create_qp(self->d.pd, &ia);
		if (qp || errno != EPERM)
			_exit(11);
		ia.qp_type = IBV_QPT_UD;
		qp = ibv_create_qp(self->d.pd, &ia);
		if (!qp)
			_exit(12);
		ibv_destroy_qp(qp);
		flow_init(&r, IBV_FLOW_ATTR_NORMAL);
		flow_eth(&r, mc_mac, ETH_P_IP);
		if (flow_create(self->b.qp, &r))
			_exit(13);
		_exit(0);
	}
	ASSERT_EQ(pid, waitpid(pid, &status, 0));
	EXPECT_TRUE(WIFEXITED(status));
	EXPECT_EQ(0, WEXITSTATUS(status)) {
		TH_LOG("unprivileged: step %d failed", WEXITSTATUS(status));
	}
}

/*
 * Frames one QP sends to a multicast MAC reach the flows of another QP of
 * the device that match them, byte for byte: each spec type, with masks;
 * what differs in a matched field does not arrive.
 */
TEST_F(raw, loopback_specs)
{
	struct ibv_flow *flow;
	struct flow_req r;
	struct frame f;

	/* Ethernet: destination, source, ethertype. */
	flow_init(&r, IBV_FLOW_ATTR_NORMAL);
	flow_eth(&r, mc_mac, ETH_P_IP);
	flow = flow_create(self->b.qp, &r);
	ASSERT_NE(NULL, flow) {
		TH_LOG("ibv_create_flow: %s", strerror(errno));
	}
	f = frame_std(mc_mac, 1000, self->seed);
	loop_one(_metadata, self, &f, 1, "eth spec");
	f.ip6 = 1;
	loop_one(_metadata, self, &f, 0, "eth spec, another ethertype");
	f = frame_std(self->own_mac, 200, self->seed + 1);
	f.dst = (const uint8_t[6]){ 0x01, 0x50, 0x56, 0x19, 0x20, 0xa8 };
	loop_one(_metadata, self, &f, 0, "eth spec, another MAC");
	/* The shortest frame: an Ethernet header. */
	EXPECT_EQ(0, ibv_destroy_flow(flow));
	flow_init(&r, IBV_FLOW_ATTR_NORMAL);
	flow_eth(&r, mc_mac, 0x88b5);
	flow = flow_create(self->b.qp, &r);
	ASSERT_NE(NULL, flow);
	f = frame_std(mc_mac, ETH_HLEN, self->seed);
	f.ethertype = 0x88b5;
	loop_one(_metadata, self, &f, 1, "14 bytes");
	EXPECT_EQ(0, ibv_destroy_flow(flow));

	/* IPv4 alone: the addresses under a /24 mask, the protocol. */
	flow_init(&r, IBV_FLOW_ATTR_NORMAL);
	flow_ip4(&r, 0x01010163, 0x02020263, 24, IPPROTO_UDP);
	flow = flow_create(self->b.qp, &r);
	ASSERT_NE(NULL, flow);
	f = frame_std(mc_mac, 1500, self->seed + 2);
	loop_one(_metadata, self, &f, 1, "ipv4 spec");
	f.daddr = 0x02020302;
	loop_one(_metadata, self, &f, 0, "ipv4 spec, another network");
	f = frame_std(mc_mac, 100, self->seed + 3);
	f.tcp = 1;
	loop_one(_metadata, self, &f, 0, "ipv4 spec, TCP");
	EXPECT_EQ(0, ibv_destroy_flow(flow));

	/* Ethernet, IPv4 and UDP ports. */
	flow_init(&r, IBV_FLOW_ATTR_NORMAL);
	flow_eth(&r, mc_mac, ETH_P_IP);
	flow_ip4(&r, 0x01010101, 0x02020202, 32, IPPROTO_UDP);
	flow_ports(&r, 0, 1234, 5678);
	flow = flow_create(self->b.qp, &r);
	ASSERT_NE(NULL, flow);
	f = frame_std(mc_mac, 700, self->seed + 4);
	loop_one(_metadata, self, &f, 1, "udp spec");
	f.dport = 5679;
	loop_one(_metadata, self, &f, 0, "udp spec, another port");
	f = frame_std(mc_mac, 700, self->seed + 5);
	f.sport = 4321;
	loop_one(_metadata, self, &f, 0, "udp spec, another source port");
	EXPECT_EQ(0, ibv_destroy_flow(flow));

	/* IPv6 and TCP, and an IPv6/UDP frame that must not match. */
	flow_init(&r, IBV_FLOW_ATTR_NORMAL);
	flow_eth(&r, mc_mac, ETH_P_IPV6);
	flow_ip6(&r, 0xb6b7b8b9, IPPROTO_TCP);
	flow_ports(&r, 1, 0, 5678);
	flow = flow_create(self->b.qp, &r);
	ASSERT_NE(NULL, flow);
	f = frame_std(mc_mac, 1200, self->seed + 6);
	f.ip6 = 1;
	f.tcp = 1;
	f.daddr = 0xb6b7b8b9;
	loop_one(_metadata, self, &f, 1, "ipv6 + tcp spec");
	f.tcp = 0;
	loop_one(_metadata, self, &f, 0, "ipv6 + tcp spec, UDP");
	f.tcp = 1;
	f.daddr = 0xb6b7b8ba;
	loop_one(_metadata, self, &f, 0, "ipv6 + tcp spec, another address");
	EXPECT_EQ(0, ibv_destroy_flow(flow));
}

/* A packet socket on @netdev that sees every frame, or -1. */
static int wire_listen(const char *netdev)
{
	struct sockaddr_ll sll = {
		.sll_family = AF_PACKET,
		.sll_protocol = htons(ETH_P_ALL),
		.sll_ifindex = if_nametoindex(netdev),
	};
	int fd = socket(AF_PACKET, SOCK_RAW | SOCK_NONBLOCK, htons(ETH_P_ALL));

	if (fd >= 0 && bind(fd, (struct sockaddr *)&sll, sizeof(sll))) {
		close(fd);
		fd = -1;
	}
	return fd;
}

/* Did @fd see @frame (@len bytes) within RC_QUIET_MS? */
static int wire_seen(int fd, const uint8_t *frame, size_t len)
{
	double deadline = rc_now_ms() + RC_QUIET_MS * rc_cfg.slow;
	uint8_t buf[RAW_SLOT];
	ssize_t n;

	do {
		n = recv(fd, buf, sizeof(buf), 0);
		if (n == (ssize_t)len && !memcmp(buf, frame, len))
			return 1;
		if (n < 0)
			usleep(1000);
	} while (rc_now_ms() < deadline);
	return 0;
}

/*
 * Two flows of one QP that a frame matches give it one copy; a destroyed
 * flow steers nothing; SNIFFER, ALL_DEFAULT and MC_DEFAULT flows; a frame
 * to the own MAC arrives and does not reach the wire, one to a multicast
 * MAC does both.
 */
TEST_F(raw, flow_types)
{
	struct ibv_flow *f1, *f2, *def;
	struct raw_qp c;
	struct flow_req r;
	struct frame f;
	int fd;

	flow_init(&r, IBV_FLOW_ATTR_NORMAL);
	flow_eth(&r, mc_mac, ETH_P_IP);
	f1 = flow_create(self->b.qp, &r);
	flow_init(&r, IBV_FLOW_ATTR_NORMAL);
	flow_ports(&r, 0, 0, 5678);
	f2 = flow_create(self->b.qp, &r);
	ASSERT_NE(NULL, f1);
	ASSERT_NE(NULL, f2);
	f = frame_std(mc_mac, 300, self->seed);
	loop_one(_metadata, self, &f, 1, "two flows, one copy");
	post_slot(_metadata, self, &self->b, 2);
	EXPECT_CQ_EMPTY(self->b.rcq, "a second copy");
	/* The WQE of slot 2 is still there: the next frame takes it. */
	f.seed++;
	send_frame(_metadata, self, &self->a, &f, 0);
	expect_frame(_metadata, self, &self->b, &f, 2, "the next frame");

	/* IPv6/UDP to port 5678: only f2 takes it, and then not. */
	f.ip6 = 1;
	loop_one(_metadata, self, &f, 1, "the port flow");
	EXPECT_EQ(0, ibv_destroy_flow(f2));
	loop_one(_metadata, self, &f, 0, "the port flow destroyed");
	EXPECT_EQ(0, ibv_destroy_flow(f1));
	f.ip6 = 0;
	loop_one(_metadata, self, &f, 0, "both flows destroyed");

	/* A sniffer gets everything. */
	flow_init(&r, IBV_FLOW_ATTR_SNIFFER);
	f1 = flow_create(self->b.qp, &r);
	ASSERT_NE(NULL, f1);
	f.dport = 9;
	loop_one(_metadata, self, &f, 1, "sniffer");
	EXPECT_EQ(0, ibv_destroy_flow(f1));

	/* A default flow what no NORMAL flow takes: from a third QP. */
	ASSERT_EQ(0, raw_qp_make(&c, self->d.ctx, self->d.pd, NULL));
	flow_init(&r, IBV_FLOW_ATTR_ALL_DEFAULT);
	def = flow_create(self->b.qp, &r);
	ASSERT_NE(NULL, def);
	f.seed++;
	loop_one(_metadata, self, &f, 1, "all default, unsteered");
	flow_init(&r, IBV_FLOW_ATTR_NORMAL);
	flow_ports(&r, 0, 0, 9);
	f1 = flow_create(self->a.qp, &r);
	ASSERT_NE(NULL, f1);
	post_slot(_metadata, self, &self->a, 3);
	post_slot(_metadata, self, &self->b, 1);
	f.seed++;
	send_frame(_metadata, self, &c, &f, 0);
	expect_frame(_metadata, self, &self->a, &f, 3, "steered");
	EXPECT_CQ_EMPTY(self->b.rcq, "steered away from the default");
	EXPECT_EQ(0, ibv_destroy_flow(f1));
	EXPECT_EQ(0, ibv_destroy_flow(def));

	/* MC_DEFAULT: the posted WQE of slot 1 takes a multicast frame. */
	flow_init(&r, IBV_FLOW_ATTR_MC_DEFAULT);
	def = flow_create(self->b.qp, &r);
	ASSERT_NE(NULL, def);
	f.seed++;
	send_frame(_metadata, self, &c, &f, 0);
	expect_frame(_metadata, self, &self->b, &f, 1, "mc default");
	f = frame_std(self->own_mac, 400, self->seed + 9);
	loop_one(_metadata, self, &f, 0, "mc default, unicast");
	EXPECT_EQ(0, ibv_destroy_flow(def));
	raw_qp_destroy(&c);

	/* To the own MAC the flow gets it, the wire not; multicast both. */
	fd = wire_listen(NETDEV1);
	ASSERT_LE(0, fd);
	flow_init(&r, IBV_FLOW_ATTR_NORMAL);
	flow_eth(&r, self->own_mac, ETH_P_IP);
	f1 = flow_create(self->b.qp, &r);
	ASSERT_NE(NULL, f1);
	f.seed++;
	loop_one(_metadata, self, &f, 1, "to the own MAC");
	EXPECT_EQ(0, wire_seen(fd, self->sbuf.p, f.len));
	EXPECT_EQ(0, ibv_destroy_flow(f1));
	f = frame_std(mc_mac, 400, self->seed + 10);
	send_frame(_metadata, self, &self->a, &f, 0);
	EXPECT_EQ(1, wire_seen(fd, self->sbuf.p, f.len));
	close(fd);
}

/*
 * Frames from the wire: an AF_PACKET socket on the peer sends IPv4/UDP
 * frames to the netdev's MAC; the flow's QP gets them whole, a VLAN tag
 * where it was; other ports do not arrive.  Counted in raw_rcvd_pkts.
 */
TEST_F(raw, from_the_wire)
{
	struct ibv_flow *flow, *vflow;
	struct flow_req r;
	struct frame f;
	uint8_t frame[RAW_SLOT];
	long long rcvd = raw_counter("raw_rcvd_pkts");
	int i;

	ASSERT_LE(0, rcvd);
	flow_init(&r, IBV_FLOW_ATTR_NORMAL);
	flow_eth(&r, self->own_mac, ETH_P_IP);
	flow_ip4(&r, 0x01010101, 0x02020202, 32, IPPROTO_UDP);
	flow_ports(&r, 0, 1234, 5678);
	flow = flow_create(self->b.qp, &r);
	ASSERT_NE(NULL, flow);
	EXPECT_EQ(1, raw_tap_on(NETDEV0));

	for (i = 0; i < 4; i++) {
		f = frame_std(self->own_mac, 60 + i * 400, self->seed + i);
		post_slot(_metadata, self, &self->b, 1);
		frame_build(frame, &f);
		ASSERT_EQ(0, wire_send(NETDEV1, frame, f.len));
		expect_frame(_metadata, self, &self->b, &f, 1, "from the wire");
	}
	f.dport = 5677;
	frame_build(frame, &f);
	post_slot(_metadata, self, &self->b, 1);
	ASSERT_EQ(0, wire_send(NETDEV1, frame, f.len));
	EXPECT_CQ_EMPTY(self->b.rcq, "another port, from the wire");
	EXPECT_LE(rcvd + 4, raw_counter("raw_rcvd_pkts"));

	/* Tagged: the stack takes the tag out, the QP gets it back. */
	flow_init(&r, IBV_FLOW_ATTR_NORMAL);
	flow_eth(&r, self->own_mac, ETH_P_IP);
	{
		struct ibv_flow_spec_eth *s = (void *)r.specs;

		s->val.vlan_tag = htons(0xc0c);
		s->mask.vlan_tag = htons(0x0fff);
	}
	vflow = flow_create(self->a.qp, &r);
	ASSERT_NE(NULL, vflow);
	f = frame_std(self->own_mac, 500, self->seed + 7);
	f.vlan = 0xc0c;
	post_slot(_metadata, self, &self->a, 2);
	frame_build(frame, &f);
	ASSERT_EQ(0, wire_send(NETDEV1, frame, f.len));
	expect_frame(_metadata, self, &self->a, &f, 2, "tagged, from the wire");
	/* The untagged flow of b: a tagged frame matches it too. */
	expect_frame(_metadata, self, &self->b, &f, 1, "tagged, b's flow");
	EXPECT_EQ(0, ibv_destroy_flow(vflow));
	EXPECT_EQ(0, ibv_destroy_flow(flow));
	EXPECT_EQ(0, raw_tap_on(NETDEV0));
}

/*
 * What is refused or dropped on the data path: frames too short or too
 * long to send, SEND with immediate, a frame without a receive WQE, a
 * receive buffer too small.
 */
TEST_F(raw, data_path_errors)
{
	struct rc_wc_exp e = { .qp_num = self->a.qp->qp_num };
	struct ibv_qp_attr qa = { .qp_state = IBV_QPS_RTS };
	struct ibv_flow *flow;
	struct flow_req r;
	struct frame f;
	long long dropped = raw_counter("raw_dropped");
	long long tx = raw_counter("raw_sent_pkts");
	unsigned int mtu;
	double deadline;
	FILE *m;

	m = fopen("/sys/class/net/" NETDEV0 "/mtu", "r");
	ASSERT_NE(NULL, m);
	ASSERT_EQ(1, fscanf(m, "%u", &mtu));
	fclose(m);
	ASSERT_GE(RAW_SLOT - 20, mtu + 18);

	flow_init(&r, IBV_FLOW_ATTR_NORMAL);
	flow_eth(&r, mc_mac, 0);
	flow = flow_create(self->b.qp, &r);
	ASSERT_NE(NULL, flow);

	/* 13 bytes: no Ethernet header. */
	post_slot(_metadata, self, &self->b, 1);
	e.wr_id = 1;
	e.status = IBV_WC_LOC_LEN_ERR;
	memcpy(self->sbuf.p, mc_mac, 6);
	memcpy(self->sbuf.p + 6, src_mac, 6);
	ASSERT_EQ(0, raw_post_send(self->a.qp, 1, IBV_WR_SEND, &self->sbuf, 0,
				   ETH_HLEN - 1));
	rc_expect_wc(_metadata, self->a.scq, &e, "13 bytes");
	EXPECT_CQ_EMPTY(self->b.rcq, "13 bytes sent");
	ASSERT_EQ(0, ibv_modify_qp(self->a.qp, &qa, IBV_QP_STATE));

	/* MTU + 15 bytes untagged; MTU + 18 tagged goes. */
	f = frame_std(mc_mac, mtu + ETH_HLEN + 1, self->seed);
	frame_build(self->sbuf.p, &f);
	e.wr_id = 2;
	ASSERT_EQ(0, raw_post_send(self->a.qp, 2, IBV_WR_SEND, &self->sbuf, 0,
				   f.len));
	rc_expect_wc(_metadata, self->a.scq, &e, "MTU + 15");
	EXPECT_CQ_EMPTY(self->b.rcq, "MTU + 15 sent");
	ASSERT_EQ(0, ibv_modify_qp(self->a.qp, &qa, IBV_QP_STATE));
	f.vlan = 7;
	f.len = mtu + ETH_HLEN + 4;
	send_frame(_metadata, self, &self->a, &f, 0);
	expect_frame(_metadata, self, &self->b, &f, 1, "MTU + 18 tagged");
	f.len++;
	post_slot(_metadata, self, &self->b, 1);
	frame_build(self->sbuf.p, &f);
	e.wr_id = 3;
	ASSERT_EQ(0, raw_post_send(self->a.qp, 3, IBV_WR_SEND, &self->sbuf, 0,
				   f.len));
	rc_expect_wc(_metadata, self->a.scq, &e, "MTU + 19 tagged");
	EXPECT_CQ_EMPTY(self->b.rcq, "MTU + 19 sent");
	ASSERT_EQ(0, ibv_modify_qp(self->a.qp, &qa, IBV_QP_STATE));

	/* No immediate data in a frame. */
	f = frame_std(mc_mac, 100, self->seed);
	frame_build(self->sbuf.p, &f);
	e.wr_id = 4;
	e.status = IBV_WC_LOC_QP_OP_ERR;
	ASSERT_EQ(0, raw_post_send(self->a.qp, 4, IBV_WR_SEND_WITH_IMM,
				   &self->sbuf, 0, f.len));
	rc_expect_wc(_metadata, self->a.scq, &e, "SEND with immediate");
	EXPECT_CQ_EMPTY(self->b.rcq, "SEND with immediate sent");
	ASSERT_EQ(0, ibv_modify_qp(self->a.qp, &qa, IBV_QP_STATE));
	/* Exactly one frame (the tagged one) left so far. */
	EXPECT_EQ(tx + 1, raw_counter("raw_sent_pkts"));

	/* The WQE of slot 1 takes this one; then none is posted. */
	send_frame(_metadata, self, &self->a, &f, 0);
	expect_frame(_metadata, self, &self->b, &f, 1, "the last WQE");
	f.seed++;
	send_frame(_metadata, self, &self->a, &f, 0);
	EXPECT_CQ_EMPTY(self->b.rcq, "no receive WQE");
	/* Dropped by b's task: wait for it before posting the next WQE. */
	deadline = rc_now_ms() + RC_TIMEOUT_MS * rc_cfg.slow;
	while (raw_counter("raw_dropped") == dropped && rc_now_ms() < deadline)
		usleep(10 * 1000);
	EXPECT_EQ(dropped + 1, raw_counter("raw_dropped"));
	/* The next posted WQE takes the next frame, not the dropped one. */
	f.seed++;
	post_slot(_metadata, self, &self->b, 1);
	send_frame(_metadata, self, &self->a, &f, 0);
	expect_frame(_metadata, self, &self->b, &f, 1, "after a drop");

	/* A buffer too small: the QP's error. */
	ASSERT_EQ(0, raw_post_recv(self->b.qp, 9, &self->rbuf, 0, 99));
	send_frame(_metadata, self, &self->a, &f, 0);
	e.wr_id = 9;
	e.status = IBV_WC_LOC_LEN_ERR;
	e.qp_num = self->b.qp->qp_num;
	rc_expect_wc(_metadata, self->b.rcq, &e, "buffer too small");
	EXPECT_EQ(IBV_QPS_ERR, rc_qp_state(self->b.qp));
	EXPECT_EQ(0, ibv_destroy_flow(flow));
}

/* A uverbs CREATE_FLOW written by hand: sizes that lie. */
static int create_flow_cmd(struct ibv_context *ctx, struct ibv_qp *qp,
			   uint16_t attr_size, uint8_t num_specs,
			   const void *specs, size_t specs_len)
{
	struct {
		struct ib_uverbs_cmd_hdr hdr;
		struct ib_uverbs_ex_cmd_hdr ex;
		struct ib_uverbs_create_flow cmd;
		uint8_t specs[256];
	} req;
	struct ib_uverbs_create_flow_resp resp;
	size_t len = sizeof(req.hdr) + sizeof(req.ex) + sizeof(req.cmd) +
		     specs_len;

	memset(&req, 0, sizeof(req));
	memset(&resp, 0, sizeof(resp));
	req.hdr.command = IB_USER_VERBS_CMD_FLAG_EXTENDED |
			  IB_USER_VERBS_EX_CMD_CREATE_FLOW;
	req.hdr.in_words = (sizeof(req.cmd) + specs_len) / 8;
	req.hdr.out_words = sizeof(resp) / 8;
	req.ex.response = (uintptr_t)&resp;
	req.cmd.qp_handle = qp->handle;
	req.cmd.flow_attr.size = attr_size;
	req.cmd.flow_attr.num_of_specs = num_specs;
	req.cmd.flow_attr.port = RC_PORT;
	memcpy(req.specs, specs, specs_len);
	if (write(ctx->cmd_fd, &req, len) == (ssize_t)len) {
		/* Accepted after all: take it away again. */
		struct {
			struct ib_uverbs_cmd_hdr hdr;
			struct ib_uverbs_ex_cmd_hdr ex;
			struct ib_uverbs_destroy_flow cmd;
		} d = {
			.hdr = {
				.command = IB_USER_VERBS_CMD_FLAG_EXTENDED |
					   IB_USER_VERBS_EX_CMD_DESTROY_FLOW,
				.in_words = sizeof(d.cmd) / 8,
			},
			.cmd = { .flow_handle = resp.flow_handle },
		};

		if (write(ctx->cmd_fd, &d, sizeof(d)) != sizeof(d))
			return -1;
		return 0;
	}
	return errno;
}

/*
 * Flows that are refused: malformed, unknown, on the wrong QP; then as
 * many as the device takes, and one more.
 */
TEST_F(raw, flow_refused)
{
	struct ibv_flow *flows[RAW_MAX_FLOWS];
	struct ib_uverbs_flow_spec_eth eth;
	struct ibv_flow_spec_action_drop *drop;
	struct ud_like { struct ibv_cq *cq; struct ibv_qp *qp; } ud;
	struct ibv_qp_init_attr ia = {
		.qp_type = IBV_QPT_UD,
		.cap = { .max_send_wr = 4, .max_recv_wr = 4,
			 .max_send_sge = 1, .max_recv_sge = 1 },
	};
	struct flow_req r;
	struct frame f;
	int i, n;

	/* The kernel's form of an Ethernet spec, for the hand-made ones. */
	memset(&eth, 0, sizeof(eth));
	eth.hdr.type = IBV_FLOW_SPEC_ETH;
	eth.hdr.size = sizeof(eth);
	memcpy(eth.val.dst_mac, mc_mac, 6);
	memset(eth.mask.dst_mac, 0xff, 6);
	/* Right: accepted (and destroyed again). */
	EXPECT_EQ(0, create_flow_cmd(self->d.ctx, self->b.qp, sizeof(eth), 1,
				     &eth, sizeof(eth)));
	/*
	 * More bytes than the specs have (ib_core reads past the command:
	 * ENOSPC), fewer, a spec larger than all, smaller than its header.
	 */
	EXPECT_NE(0, create_flow_cmd(self->d.ctx, self->b.qp,
				     sizeof(eth) + 8, 1, &eth, sizeof(eth)));
	EXPECT_NE(0, create_flow_cmd(self->d.ctx, self->b.qp,
				     sizeof(eth) - 8, 1, &eth, sizeof(eth)));
	eth.hdr.size = sizeof(eth) + 64;
	EXPECT_NE(0, create_flow_cmd(self->d.ctx, self->b.qp, sizeof(eth), 1,
				     &eth, sizeof(eth)));
	eth.hdr.size = 4;
	EXPECT_NE(0, create_flow_cmd(self->d.ctx, self->b.qp, sizeof(eth), 1,
				     &eth, sizeof(eth)));
	eth.hdr.size = 0;
	EXPECT_NE(0, create_flow_cmd(self->d.ctx, self->b.qp, sizeof(eth), 1,
				     &eth, sizeof(eth)));
	eth.hdr.size = sizeof(eth);
	/* Two specs announced, one there. */
	EXPECT_NE(0, create_flow_cmd(self->d.ctx, self->b.qp, sizeof(eth), 2,
				     &eth, sizeof(eth)));
	/* A spec type nobody knows. */
	eth.hdr.type = 0x77;
	EXPECT_NE(0, create_flow_cmd(self->d.ctx, self->b.qp, sizeof(eth), 1,
				     &eth, sizeof(eth)));
	eth.hdr.type = IBV_FLOW_SPEC_ETH;
	/* None of it left a flow, and a right one still goes. */
	EXPECT_EQ(0, raw_tap_on(NETDEV0));
	EXPECT_EQ(0, create_flow_cmd(self->d.ctx, self->b.qp, sizeof(eth), 1,
				     &eth, sizeof(eth)));

	/* Through libibverbs: an inner spec, an action, too many specs. */
	flow_init(&r, IBV_FLOW_ATTR_NORMAL);
	flow_eth(&r, mc_mac, 0);
	((struct ibv_flow_spec *)r.specs)->hdr.type |= IBV_FLOW_SPEC_INNER;
	EXPECT_EQ(NULL, flow_create(self->b.qp, &r));
	EXPECT_EQ(EOPNOTSUPP, errno);
	flow_init(&r, IBV_FLOW_ATTR_NORMAL);
	flow_eth(&r, mc_mac, 0);
	drop = flow_add(&r, IBV_FLOW_SPEC_ACTION_DROP, sizeof(*drop));
	(void)drop;
	EXPECT_EQ(NULL, flow_create(self->b.qp, &r));
	EXPECT_EQ(EOPNOTSUPP, errno);
	flow_init(&r, IBV_FLOW_ATTR_NORMAL);
	for (i = 0; i < 11; i++)
		flow_ports(&r, 0, 0, 5678);
	EXPECT_EQ(NULL, flow_create(self->b.qp, &r));
	EXPECT_EQ(EINVAL, errno);
	/* Flags, a port that is not there, specs on a sniffer. */
	flow_init(&r, IBV_FLOW_ATTR_NORMAL);
	flow_eth(&r, mc_mac, 0);
	r.attr.flags = IBV_FLOW_ATTR_FLAGS_DONT_TRAP;
	EXPECT_EQ(NULL, flow_create(self->b.qp, &r));
	EXPECT_EQ(EOPNOTSUPP, errno);
	r.attr.flags = 0;
	r.attr.port = 2;
	EXPECT_EQ(NULL, flow_create(self->b.qp, &r));
	EXPECT_EQ(EINVAL, errno);
	r.attr.port = RC_PORT;
	r.attr.type = IBV_FLOW_ATTR_SNIFFER;
	EXPECT_EQ(NULL, flow_create(self->b.qp, &r));
	EXPECT_EQ(EINVAL, errno);

	/* A UD QP steers no frames. */
	ud.cq = ibv_create_cq(self->d.ctx, 8, NULL, NULL, 0);
	ASSERT_NE(NULL, ud.cq);
	ia.send_cq = ud.cq;
	ia.recv_cq = ud.cq;
	ud.qp = ibv_create_qp(self->d.pd, &ia);
	ASSERT_NE(NULL, ud.qp);
	flow_init(&r, IBV_FLOW_ATTR_NORMAL);
	flow_eth(&r, mc_mac, 0);
	EXPECT_EQ(NULL, flow_create(ud.qp, &r));
	EXPECT_EQ(EINVAL, errno);
	ibv_destroy_qp(ud.qp);
	ibv_destroy_cq(ud.cq);

	/* Up to the limit, over two QPs; then ENOMEM. */
	for (n = 0; n < RAW_MAX_FLOWS; n++) {
		flow_init(&r, IBV_FLOW_ATTR_NORMAL);
		flow_ports(&r, 0, 0, 10000 + n);
		flows[n] = flow_create(n & 1 ? self->a.qp : self->b.qp, &r);
		if (!flows[n])
			break;
	}
	EXPECT_EQ(RAW_MAX_FLOWS, n) {
		TH_LOG("flow %d: %s", n, strerror(errno));
	}
	flow_init(&r, IBV_FLOW_ATTR_NORMAL);
	flow_ports(&r, 0, 0, 5678);
	EXPECT_EQ(NULL, flow_create(self->b.qp, &r));
	EXPECT_EQ(ENOMEM, errno);
	/* The last one still steers. */
	f = frame_std(mc_mac, 128, self->seed);
	f.dport = 10000 + RAW_MAX_FLOWS - 1;
	post_slot(_metadata, self, &self->b, 1);
	post_slot(_metadata, self, &self->a, 2);
	send_frame(_metadata, self, &self->b, &f, 0);
	expect_frame(_metadata, self, &self->a, &f, 2, "the last flow");
	EXPECT_CQ_EMPTY(self->b.rcq, "b's own frame");
	for (i = 0; i < n; i++)
		EXPECT_EQ(0, ibv_destroy_flow(flows[i]));
	EXPECT_EQ(0, raw_tap_on(NETDEV0));
	EXPECT_NE(NULL, flows[0] = flow_create(self->b.qp, &r));
	EXPECT_EQ(0, ibv_destroy_flow(flows[0]));
}

/*
 * A QP with flows: destroy fails (ib_core holds it: EBUSY) until they are
 * gone; a process that exits with flows leaves no tap; the tap is there
 * only while flows are.
 */
TEST_F(raw, life_cycle)
{
	struct ibv_flow *flow;
	struct flow_req r;
	pid_t pid;
	int status;

	EXPECT_EQ(0, raw_tap_on(NETDEV0));
	flow_init(&r, IBV_FLOW_ATTR_NORMAL);
	flow_eth(&r, mc_mac, ETH_P_IP);
	flow = flow_create(self->b.qp, &r);
	ASSERT_NE(NULL, flow);
	EXPECT_EQ(1, raw_tap_on(NETDEV0));
	EXPECT_EQ(EBUSY, ibv_destroy_qp(self->b.qp));
	EXPECT_EQ(0, ibv_destroy_flow(flow));
	EXPECT_EQ(0, raw_tap_on(NETDEV0));
	EXPECT_EQ(0, ibv_destroy_qp(self->b.qp));
	self->b.qp = NULL;

	/* A process that exits with a QP and its flows: ib_core cleans up. */
	pid = fork();
	ASSERT_LE(0, pid);
	if (!pid) {
		struct ibv_context *ctx = rc_open_by_name(rc_cfg.name[0]);
		struct ibv_pd *pd = ctx ? ibv_alloc_pd(ctx) : NULL;
		struct raw_qp q;

		if (!pd || raw_qp_make(&q, ctx, pd, NULL))
			_exit(1);
		flow_init(&r, IBV_FLOW_ATTR_SNIFFER);
		if (!flow_create(q.qp, &r) || raw_tap_on(NETDEV0) != 1)
			_exit(2);
		_exit(0);
	}
	ASSERT_EQ(pid, waitpid(pid, &status, 0));
	EXPECT_EQ(0, WEXITSTATUS(status));
	EXPECT_EQ(0, raw_tap_on(NETDEV0));
}

/*
 * The tap goes with the device: "rdma link delete" with a process's flow
 * in place, and the netdev deleted under another.  (A fixture of nothing,
 * for a timeout of its own: deleting links is slow on a debug kernel.)
 */
FIXTURE(tap) {
};

FIXTURE_SETUP(tap)
{
}

FIXTURE_TEARDOWN(tap)
{
}

TEST_F_TIMEOUT(tap, link_delete, 300)
{
	const char *how[] = { "rdma link delete vrdmaraw0",
			      "ip link del rawt0" };
	int i;

	if (rc_cfg.is_rxe)
		SKIP(return, "rxe: no raw packet QPs");
	for (i = 0; i < 2; i++) {
		struct ibv_context *ctx = NULL;
		struct ibv_pd *pd;
		struct raw_qp q;
		struct flow_req r;
		struct ibv_flow *flow;
		double deadline;

		ASSERT_EQ(0, rc_sh("ip link add rawt0 type veth peer name rawt1 "
				   "&& ip link set rawt0 up && ip link set rawt1 up "
				   "&& rdma link add vrdmaraw0 type vrdma netdev rawt0"));
		deadline = rc_now_ms() + RC_TIMEOUT_MS;
		while (!ctx && rc_now_ms() < deadline) {
			ctx = rc_open_by_name("vrdmaraw0");
			if (!ctx)
				usleep(100 * 1000);
		}
		ASSERT_NE(NULL, ctx);
		pd = ibv_alloc_pd(ctx);
		ASSERT_NE(NULL, pd);
		ASSERT_EQ(0, raw_qp_make(&q, ctx, pd, NULL));
		flow_init(&r, IBV_FLOW_ATTR_SNIFFER);
		flow = flow_create(q.qp, &r);
		ASSERT_NE(NULL, flow);
		EXPECT_EQ(1, raw_tap_on("rawt0"));
		EXPECT_EQ(0, rc_sh(how[i]));
		deadline = rc_now_ms() + RC_TIMEOUT_MS;
		while (raw_tap_on("rawt0") && rc_now_ms() < deadline)
			usleep(50 * 1000);
		EXPECT_EQ(0, raw_tap_on("rawt0")) {
			TH_LOG("after %s", how[i]);
		}
		/* The context is dead: the verbs fail, closing works. */
		ibv_destroy_flow(flow);
		raw_qp_destroy(&q);
		ibv_dealloc_pd(pd);
		ibv_close_device(ctx);
		rc_sh("rdma link delete vrdmaraw0 2>/dev/null; "
		      "ip link del rawt0 2>/dev/null");
		deadline = rc_now_ms() + RC_TIMEOUT_MS;
		while (!rc_sh("rdma link show vrdmaraw0/1 >/dev/null 2>&1") &&
		       rc_now_ms() < deadline)
			usleep(50 * 1000);
	}
}

/*
 * RoCE keeps working while flows exist: an RC pair between the two
 * devices moves a message byte for byte while a sniffer is on the first
 * device; and a RoCE v2 packet from the wire (a bogus one, from the
 * peer's address to the device's, UDP port 4791) reaches both the
 * sniffer, whole, and the device's RoCE receive path, which drops it and
 * counts it: the tap takes nothing from the stack.
 */
TEST_F(raw, roce_beside_flows)
{
	struct rc_dev d1;
	struct rc_pair p;
	struct rc_opts o = { 0 };
	struct rc_buf src, dst;
	struct ibv_flow *flow;
	struct flow_req r;
	struct frame f;
	uint8_t frame[RAW_SLOT];
	long long dropped = raw_counter("rcvd_dropped");
	double deadline;

	flow_init(&r, IBV_FLOW_ATTR_SNIFFER);
	flow = flow_create(self->b.qp, &r);
	ASSERT_NE(NULL, flow);

	rc_dev_open(_metadata, &d1, 1);
	rc_pair_create(_metadata, &p, &self->d, &d1, &o);
	rc_buf_alloc(_metadata, &src, self->d.pd, 65536, RC_ACCESS_ALL);
	rc_buf_alloc(_metadata, &dst, d1.pd, 65536, RC_ACCESS_ALL);
	rc_fill(src.p, 65536, self->seed, 0);
	ASSERT_EQ(0, rc_post_recv(&p.b, 1, &dst, 0, 65536));
	ASSERT_EQ(0, rc_post_send(&p.a, 2, IBV_WR_SEND, &src, 0, 65536,
				  IBV_SEND_SIGNALED, 0, 0));
	{
		struct rc_wc_exp e = {
			.wr_id = 2, .status = IBV_WC_SUCCESS,
			.opcode = IBV_WC_SEND, .qp_num = p.a.qp->qp_num,
		};
		struct rc_wc_exp er = {
			.wr_id = 1, .status = IBV_WC_SUCCESS,
			.opcode = IBV_WC_RECV, .recv = 1, .byte_len = 65536,
			.qp_num = p.b.qp->qp_num,
		};

		rc_expect_wc(_metadata, p.a.scq, &e, "RC send");
		rc_expect_wc(_metadata, p.b.rcq, &er, "RC receive");
	}
	EXPECT_SAME_BYTES(dst.p, src.p, 65536, "RC message");
	rc_buf_free(&src);
	rc_buf_free(&dst);
	rc_pair_destroy(&p);
	rc_dev_close(&d1);

	/* IPv4 10.211.0.2 -> 10.211.0.1, UDP to 4791: a BTH, a bad ICRC. */
	f = frame_std(self->own_mac, 14 + 20 + 8 + 12 + 16 + 4, self->seed);
	f.saddr = 0x0ad30002;
	f.daddr = 0x0ad30001;
	f.sport = 0xc000;
	f.dport = 4791;
	post_slot(_metadata, self, &self->b, 1);
	frame_build(frame, &f);
	ASSERT_EQ(0, wire_send(NETDEV1, frame, f.len));
	expect_frame(_metadata, self, &self->b, &f, 1, "RoCE, sniffed");
	deadline = rc_now_ms() + RC_TIMEOUT_MS;
	while (raw_counter("rcvd_dropped") == dropped &&
	       rc_now_ms() < deadline)
		usleep(10 * 1000);
	EXPECT_EQ(dropped + 1, raw_counter("rcvd_dropped"));
	EXPECT_EQ(0, ibv_destroy_flow(flow));
}

/*
 * Sniffers and default flows take whatever the wire brings: no IPv6 on
 * the veth, so that its neighbour discovery and MLD chatter does not take
 * the receive WQEs meant for the tests' frames (the tests use IPv4 GIDs).
 */
static void raw_suite_setup(void)
{
	if (!access("/proc/sys/net/ipv6", F_OK) &&
	    (rc_write("/proc/sys/net/ipv6/conf/" NETDEV0 "/disable_ipv6", "1") ||
	     rc_write("/proc/sys/net/ipv6/conf/" NETDEV1 "/disable_ipv6", "1")))
		rc_fail("disable_ipv6 failed");
}

int main(int argc, char **argv)
{
	return rc_suite_main_setup(argc, argv, raw_suite_setup);
}
