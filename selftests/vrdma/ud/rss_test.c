// SPDX-License-Identifier: GPL-2.0
/*
 * RSS through the standard verbs API: work queues (ibv_create_wq),
 * indirection tables (ibv_create_rwq_ind_table) and raw packet QPs on
 * them (ibv_create_qp_ex with IBV_QP_INIT_ATTR_RX_HASH).
 *
 *   - the Toeplitz hash: this test's own against Microsoft's RSS
 *     verification vectors, then the device's against the same vectors
 *     (their frames sent through a table of the largest size, each
 *     arriving in the WQ its known hash picks);
 *   - spreading: frames of many flows (IPv4 and IPv6, UDP and TCP, hash
 *     fields of each kind, none) reach exactly the WQ the Toeplitz hash of
 *     their fields picks, computed here; each WQ's CQ gets its own
 *     completions (wr_id, byte_len, the WQ's number as qp_num), the data
 *     byte for byte; tables of one entry and of the largest size;
 *   - WQ states: RESET and ERR get nothing (raw_dropped counted), entering
 *     RESET drops the WQEs posted, ERR flushes them and those posted
 *     later, ERR to RDY is refused, RESET to RDY receives again;
 *   - destroy order: a WQ a table holds, a table a QP holds, a QP with a
 *     flow: EBUSY; in order, everything goes;
 *   - the device's limits of tables and WQs (ENOMEM beyond);
 *   - bad inputs: a table larger than the device's, hash fields and
 *     functions not implemented, a key of the wrong length, WQs of
 *     another PD or context, sizes beyond the device's, modify/post on an
 *     RSS QP, no CAP_NET_RAW; and, written straight into a WQ's ring as a
 *     hostile process could, a WQE with too many SGEs, a garbage producer
 *     index, a bad lkey, a buffer too small.
 *
 * Frames are sent by a raw packet QP of the same device to a multicast
 * MAC, which the device offers to its own flows (raw.c).  Setup and names
 * are rc_test.c's (rc_suite.h).  rdma_rxe has no raw packet QPs: with
 * VRDMA_TEST_TYPE=rxe the program skips.
 *
 * Runs as root in the test VM.
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <linux/if_ether.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>
#include <infiniband/verbs.h>

#include "rc_lib.h"
#include "rc_suite.h"

#include "vrdma.h"

#define MAX_WQS		8
#define WQ_DEPTH	64
#define SLOT		2048		/* a frame's room in the buffers */
#define FRAME_LEN	256
#define MAX_TBL		4096		/* entries this test can build */

static const uint8_t mc_mac[6] = { 0x01, 0x50, 0x56, 0x19, 0x20, 0xa7 };
static const uint8_t src_mac[6] = { 0x24, 0x8a, 0x07, 0xa5, 0x28, 0xc8 };

/* The key of rdma-core's test_rss_traffic. */
static const uint8_t pyverbs_key[40] = {
	0x2c, 0xc6, 0x81, 0xd1, 0x5b, 0xdb, 0xf4, 0xf7,
	0xfc, 0xa2, 0x83, 0x19, 0xdb, 0x1a, 0x3e, 0x94,
	0x6b, 0x9e, 0x38, 0xd9, 0x2c, 0x9c, 0x03, 0xd1,
	0xad, 0x99, 0x44, 0xa7, 0xd9, 0x56, 0x3d, 0x59,
	0x06, 0x3c, 0x25, 0xf3, 0xfc, 0x1f, 0xdc, 0x2a,
};

/* Microsoft's RSS verification suite: its key and vectors. */
static const uint8_t ms_key[40] = {
	0x6d, 0x5a, 0x56, 0xda, 0x25, 0x5b, 0x0e, 0xc2,
	0x41, 0x67, 0x25, 0x3d, 0x43, 0xa3, 0x8f, 0xb0,
	0xd0, 0xca, 0x2b, 0xcb, 0xae, 0x7b, 0x30, 0xb4,
	0x77, 0xcb, 0x2d, 0xa3, 0x80, 0x30, 0xf2, 0x0c,
	0x6a, 0x42, 0xb7, 0x3b, 0xbe, 0xac, 0x01, 0xfa,
};

struct ms_vec {
	const char *src, *dst;	/* addresses */
	uint16_t sport, dport;
	uint32_t ip, ip_tcp;	/* the hash of the addresses, and with ports */
};

static const struct ms_vec ms_v4[] = {
	{ "66.9.149.187", "161.142.100.80", 2794, 1766,
	  0x323e8fc2, 0x51ccc178 },
	{ "199.92.111.2", "65.69.140.83", 14230, 4739,
	  0xd718262a, 0xc626b0ea },
	{ "24.19.198.95", "12.22.207.184", 12898, 38024,
	  0xd2d0a5de, 0x5c2b394a },
	{ "38.27.205.30", "209.142.163.6", 48228, 2217,
	  0x82989176, 0xafc7327f },
	{ "153.39.163.191", "202.188.127.2", 44251, 1303,
	  0x5d1809c5, 0x10e828a2 },
};

static const struct ms_vec ms_v6[] = {
	{ "3ffe:2501:200:1fff::7", "3ffe:2501:200:3::1", 2794, 1766,
	  0x2cc18cd5, 0x40207d3d },
	{ "3ffe:501:8::260:97ff:fe40:efab", "ff02::1", 14230, 4739,
	  0x0f0c461c, 0xdde51bbf },
	{ "3ffe:1900:4545:3:200:f8ff:fe21:67cf", "fe80::200:f8ff:fe21:67cf",
	  44251, 38024, 0x4b61e985, 0x02d1feef },
};

/* ---- the hash, as Microsoft's RSS specification defines it ------------- */

static uint32_t toeplitz(const uint8_t *key, const uint8_t *in, size_t len)
{
	uint32_t hash = 0, window;
	size_t i;
	int bit;

	window = (uint32_t)key[0] << 24 | key[1] << 16 | key[2] << 8 | key[3];
	for (i = 0; i < len; i++)
		for (bit = 7; bit >= 0; bit--) {
			if (in[i] >> bit & 1)
				hash ^= window;
			window = window << 1 | (key[i + 4] >> bit & 1);
		}
	return hash;
}

/* ---- frames ------------------------------------------------------------ */

struct frame {
	int ip6, tcp;
	uint8_t saddr[16], daddr[16];	/* IPv4: the first 4 bytes */
	uint16_t sport, dport;
	size_t len;
	uint32_t seed;			/* of the payload */
};

static void put16(uint8_t *p, uint16_t v)
{
	p[0] = v >> 8;
	p[1] = v;
}

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

static size_t frame_build(uint8_t *p, const struct frame *f)
{
	size_t l3 = 14, l4, l4len = f->tcp ? 20 : 8;
	uint8_t proto = f->tcp ? IPPROTO_TCP : IPPROTO_UDP;

	memset(p, 0, f->len);
	memcpy(p, mc_mac, 6);
	memcpy(p + 6, src_mac, 6);
	put16(p + 12, f->ip6 ? ETH_P_IPV6 : ETH_P_IP);
	if (f->ip6) {
		p[l3] = 0x60;
		put16(p + l3 + 4, f->len - l3 - 40);
		p[l3 + 6] = proto;
		p[l3 + 7] = 64;
		memcpy(p + l3 + 8, f->saddr, 16);
		memcpy(p + l3 + 24, f->daddr, 16);
		l4 = l3 + 40;
	} else {
		p[l3] = 0x45;
		put16(p + l3 + 2, f->len - l3);
		put16(p + l3 + 6, 0x4000);
		p[l3 + 8] = 64;
		p[l3 + 9] = proto;
		memcpy(p + l3 + 12, f->saddr, 4);
		memcpy(p + l3 + 16, f->daddr, 4);
		put16(p + l3 + 10, ip4_csum(p + l3));
		l4 = l3 + 20;
	}
	put16(p + l4, f->sport);
	put16(p + l4 + 2, f->dport);
	if (f->tcp)
		p[l4 + 12] = 5 << 4;
	else
		put16(p + l4 + 4, f->len - l4);
	rc_fill(p + l4 + l4len, f->len - l4 - l4len, f->seed, 0);
	return f->len;
}

/* The hash input of @f under @fields: addresses, then ports. */
static uint32_t frame_hash(const struct frame *f, const uint8_t *key,
			   uint64_t fields)
{
	uint8_t in[36];
	size_t n = 0, alen = f->ip6 ? 16 : 4;
	uint64_t s_ip = f->ip6 ? IBV_RX_HASH_SRC_IPV6 : IBV_RX_HASH_SRC_IPV4;
	uint64_t d_ip = f->ip6 ? IBV_RX_HASH_DST_IPV6 : IBV_RX_HASH_DST_IPV4;
	uint64_t s_p = f->tcp ? IBV_RX_HASH_SRC_PORT_TCP :
				IBV_RX_HASH_SRC_PORT_UDP;
	uint64_t d_p = f->tcp ? IBV_RX_HASH_DST_PORT_TCP :
				IBV_RX_HASH_DST_PORT_UDP;

	if (fields & s_ip) {
		memcpy(in + n, f->saddr, alen);
		n += alen;
	}
	if (fields & d_ip) {
		memcpy(in + n, f->daddr, alen);
		n += alen;
	}
	if (fields & s_p) {
		put16(in + n, f->sport);
		n += 2;
	}
	if (fields & d_p) {
		put16(in + n, f->dport);
		n += 2;
	}
	return toeplitz(key, in, n);
}

/* A frame of flow @i: addresses and ports spread by @i. */
static struct frame frame_flow(int i, int ip6, int tcp, uint32_t seed)
{
	struct frame f = {
		.ip6 = ip6, .tcp = tcp, .len = FRAME_LEN + i % 64,
		.sport = 1024 + i * 37, .dport = 5678 + (i % 5) * 1000,
		.seed = seed + i,
	};
	int k;

	for (k = 0; k < 16; k++) {
		f.saddr[k] = (uint8_t)(i * 13 + k * 7 + 1);
		f.daddr[k] = (uint8_t)(i * 29 + k * 3 + 2);
	}
	return f;
}

/* ---- the environment --------------------------------------------------- */

/* The device's counter @name, or -1. */
static long long hw_counter(const char *name)
{
	return rc_hw_counter(rc_cfg.name[0], name);
}

/* Wait until counter @name reaches @want; returns its value. */
static long long wait_counter(const char *name, long long want)
{
	double deadline = rc_now_ms() + RC_TIMEOUT_MS;
	long long v;

	while ((v = hw_counter(name)) < want && rc_now_ms() < deadline)
		usleep(5 * 1000);
	return v;
}

FIXTURE(rss) {
	struct rc_dev d;
	struct rc_buf sbuf, rbuf;
	struct ibv_cq *tx_cq;
	struct ibv_qp *tx;
	int nwq, ncq;
	struct ibv_cq *cq[MAX_WQS];
	struct ibv_wq *wq[MAX_WQS];
	uint32_t posted[MAX_WQS], done[MAX_WQS];
	struct ibv_rwq_ind_table *tbl;
	uint32_t tbl_size;
	int entry[MAX_TBL];		/* the WQ at each index */
	struct ibv_qp *qp;
	struct ibv_flow *flow;
	const uint8_t *key;
	uint64_t fields;
	uint32_t seed;
	int sent;
	struct ibv_device_attr_ex ax;
};

/* The raw packet QP that sends every frame, in RTS. */
static int tx_make(FIXTURE_DATA(rss) *self)
{
	struct ibv_qp_init_attr ia = {
		.qp_type = IBV_QPT_RAW_PACKET,
		.cap = { .max_send_wr = WQ_DEPTH, .max_recv_wr = 1,
			 .max_send_sge = 1, .max_recv_sge = 1 },
	};
	struct ibv_qp_attr a = { .qp_state = IBV_QPS_INIT, .port_num = RC_PORT };

	self->tx_cq = ibv_create_cq(self->d.ctx, 2 * WQ_DEPTH, NULL, NULL, 0);
	if (!self->tx_cq)
		return errno;
	ia.send_cq = ia.recv_cq = self->tx_cq;
	self->tx = ibv_create_qp(self->d.pd, &ia);
	if (!self->tx)
		return errno;
	if (ibv_modify_qp(self->tx, &a, IBV_QP_STATE | IBV_QP_PORT))
		return errno;
	a.qp_state = IBV_QPS_RTR;
	if (ibv_modify_qp(self->tx, &a, IBV_QP_STATE))
		return errno;
	a.qp_state = IBV_QPS_RTS;
	return ibv_modify_qp(self->tx, &a, IBV_QP_STATE) ? errno : 0;
}

FIXTURE_SETUP(rss)
{
	int ret;

	rc_dev_open(_metadata, &self->d, 0);
	rc_buf_alloc(_metadata, &self->sbuf, self->d.pd, WQ_DEPTH * SLOT,
		     IBV_ACCESS_LOCAL_WRITE);
	rc_buf_alloc(_metadata, &self->rbuf, self->d.pd,
		     MAX_WQS * WQ_DEPTH * SLOT, IBV_ACCESS_LOCAL_WRITE);
	ret = tx_make(self);
	if (ret == EOPNOTSUPP && rc_cfg.is_rxe)
		SKIP(return, "rxe: no raw packet QPs");
	ASSERT_EQ(0, ret) {
		TH_LOG("raw packet QP: %s", strerror(ret));
	}
	ASSERT_EQ(0, ibv_query_device_ex(self->d.ctx, NULL, &self->ax));
	self->seed = getpid();
}

static void rss_teardown_env(FIXTURE_DATA(rss) *self)
{
	int i;

	if (self->flow)
		ibv_destroy_flow(self->flow);
	if (self->qp)
		ibv_destroy_qp(self->qp);
	if (self->tbl)
		ibv_destroy_rwq_ind_table(self->tbl);
	for (i = 0; i < MAX_WQS; i++) {
		if (self->wq[i])
			ibv_destroy_wq(self->wq[i]);
		self->wq[i] = NULL;
	}
	for (i = 0; i < MAX_WQS; i++) {
		if (self->cq[i])
			ibv_destroy_cq(self->cq[i]);
		self->cq[i] = NULL;
	}
	self->flow = NULL;
	self->qp = NULL;
	self->tbl = NULL;
	memset(self->posted, 0, sizeof(self->posted));
	memset(self->done, 0, sizeof(self->done));
}

FIXTURE_TEARDOWN(rss)
{
	rss_teardown_env(self);
	if (self->tx)
		ibv_destroy_qp(self->tx);
	if (self->tx_cq)
		ibv_destroy_cq(self->tx_cq);
	rc_buf_free(&self->sbuf);
	rc_buf_free(&self->rbuf);
	rc_dev_close(&self->d);
}

static struct ibv_wq *wq_create(struct ibv_context *ctx, struct ibv_pd *pd,
				struct ibv_cq *cq, uint32_t max_wr)
{
	struct ibv_wq_init_attr a = {
		.wq_type = IBV_WQT_RQ, .max_wr = max_wr, .max_sge = 2,
		.pd = pd, .cq = cq,
	};

	return ibv_create_wq(ctx, &a);
}

static int wq_state(struct ibv_wq *wq, enum ibv_wq_state s)
{
	struct ibv_wq_attr a = { .attr_mask = IBV_WQ_ATTR_STATE, .wq_state = s };

	return ibv_modify_wq(wq, &a);
}

static struct ibv_qp *rss_qp(struct ibv_context *ctx, struct ibv_pd *pd,
			     struct ibv_rwq_ind_table *tbl, uint8_t func,
			     const uint8_t *key, uint8_t key_len,
			     uint64_t fields)
{
	struct ibv_qp_init_attr_ex a = {
		.qp_type = IBV_QPT_RAW_PACKET,
		.comp_mask = IBV_QP_INIT_ATTR_PD | IBV_QP_INIT_ATTR_IND_TABLE |
			     IBV_QP_INIT_ATTR_RX_HASH,
		.pd = pd,
		.rwq_ind_tbl = tbl,
		.rx_hash_conf = {
			.rx_hash_function = func,
			.rx_hash_key_len = key_len,
			.rx_hash_key = (uint8_t *)key,
			.rx_hash_fields_mask = fields,
		},
	};

	return ibv_create_qp_ex(ctx, &a);
}

/* A flow to @qp of the frames to mc_mac of @ethertype (0: any). */
static struct ibv_flow *mc_flow(struct ibv_qp *qp, uint16_t ethertype)
{
	/* The specs follow the attributes in memory, as libibverbs reads. */
	union {
		struct ibv_flow_attr attr;
		uint8_t bytes[sizeof(struct ibv_flow_attr) +
			      sizeof(struct ibv_flow_spec_eth)];
	} r = { .attr = {
		.type = IBV_FLOW_ATTR_NORMAL, .size = sizeof(r.bytes),
		.num_of_specs = 1, .port = RC_PORT,
	} };
	struct ibv_flow_spec_eth eth = {
		.type = IBV_FLOW_SPEC_ETH, .size = sizeof(eth),
	};

	memcpy(eth.val.dst_mac, mc_mac, 6);
	memset(eth.mask.dst_mac, 0xff, 6);
	eth.val.ether_type = htons(ethertype);
	eth.mask.ether_type = ethertype ? 0xffff : 0;
	memcpy(r.bytes + sizeof(r.attr), &eth, sizeof(eth));
	return ibv_create_flow(qp, &r.attr);
}

/* The WQ at table index @i: every bit of @i counts. */
static int entry_of(uint32_t i, int nwq)
{
	return (i ^ i >> 3 ^ i >> 6 ^ i >> 9 ^ i >> 12) % nwq;
}

/*
 * @nwq WQs in RDY on @ncq CQs (WQ i on CQ i % ncq), a table of 2^@log
 * entries, an RSS QP of @key and @fields on it, and its flow.
 */
static void rss_env(struct __test_metadata *_metadata, FIXTURE_DATA(rss) *self,
		    int nwq, int ncq, int log, const uint8_t *key,
		    uint64_t fields)
{
	struct ibv_rwq_ind_table_init_attr ta = { .log_ind_tbl_size = log };
	static struct ibv_wq *ind[MAX_TBL];
	uint32_t i;

	ASSERT_LE(1U << log, MAX_TBL);
	self->nwq = nwq;
	self->ncq = ncq;
	for (i = 0; i < (uint32_t)ncq; i++) {
		self->cq[i] = ibv_create_cq(self->d.ctx, 4 * WQ_DEPTH, NULL,
					    NULL, 0);
		ASSERT_NE(NULL, self->cq[i]);
	}
	for (i = 0; i < (uint32_t)nwq; i++) {
		self->wq[i] = wq_create(self->d.ctx, self->d.pd,
					self->cq[i % ncq], WQ_DEPTH);
		ASSERT_NE(NULL, self->wq[i]) {
			TH_LOG("ibv_create_wq: %s", strerror(errno));
		}
		ASSERT_EQ(0, wq_state(self->wq[i], IBV_WQS_RDY));
	}
	self->tbl_size = 1U << log;
	for (i = 0; i < self->tbl_size; i++) {
		self->entry[i] = entry_of(i, nwq);
		ind[i] = self->wq[self->entry[i]];
	}
	ta.ind_tbl = ind;
	self->tbl = ibv_create_rwq_ind_table(self->d.ctx, &ta);
	ASSERT_NE(NULL, self->tbl) {
		TH_LOG("ibv_create_rwq_ind_table: %s", strerror(errno));
	}
	self->key = key;
	self->fields = fields;
	self->qp = rss_qp(self->d.ctx, self->d.pd, self->tbl,
			  IBV_RX_HASH_FUNC_TOEPLITZ, key, 40, fields);
	ASSERT_NE(NULL, self->qp) {
		TH_LOG("RSS QP: %s", strerror(errno));
	}
	self->flow = mc_flow(self->qp, 0);
	ASSERT_NE(NULL, self->flow);
}

static void *rslot(FIXTURE_DATA(rss) *self, int w, uint32_t n)
{
	return self->rbuf.p + ((size_t)w * WQ_DEPTH + n % WQ_DEPTH) * SLOT;
}

static uint64_t wr_id_of(int w, uint32_t n)
{
	return (uint64_t)w << 32 | n;
}

/* Post @n receive WQEs to WQ @w, each a slot of rbuf. */
static void wq_post(struct __test_metadata *_metadata,
		    FIXTURE_DATA(rss) *self, int w, int n)
{
	while (n--) {
		uint32_t k = self->posted[w]++;
		struct ibv_sge sge = {
			.addr = (uintptr_t)rslot(self, w, k), .length = SLOT,
			.lkey = self->rbuf.mr->lkey,
		};
		struct ibv_recv_wr wr = {
			.wr_id = wr_id_of(w, k), .sg_list = &sge, .num_sge = 1,
		}, *bad = NULL;

		memset(rslot(self, w, k), 0xee, SLOT);
		ASSERT_EQ(0, ibv_post_wq_recv(self->wq[w], &wr, &bad));
	}
}

static void send_frame(struct __test_metadata *_metadata,
		       FIXTURE_DATA(rss) *self, const struct frame *f)
{
	int slot = self->sent++ % WQ_DEPTH;
	struct ibv_sge sge = {
		.addr = (uintptr_t)(self->sbuf.p + slot * SLOT),
		.length = f->len, .lkey = self->sbuf.mr->lkey,
	};
	struct ibv_send_wr wr = {
		.wr_id = slot, .sg_list = &sge, .num_sge = 1,
		.opcode = IBV_WR_SEND, .send_flags = IBV_SEND_SIGNALED,
	}, *bad = NULL;
	struct rc_wc_exp e = {
		.wr_id = slot, .status = IBV_WC_SUCCESS, .opcode = IBV_WC_SEND,
		.qp_num = self->tx->qp_num,
	};

	frame_build(self->sbuf.p + slot * SLOT, f);
	ASSERT_EQ(0, ibv_post_send(self->tx, &wr, &bad));
	rc_expect_wc(_metadata, self->tx_cq, &e, "the raw send");
}

/* The next completion of WQ @w is @f, whole. */
static void expect_on(struct __test_metadata *_metadata,
		      FIXTURE_DATA(rss) *self, int w, const struct frame *f,
		      const char *what)
{
	uint32_t k = self->done[w]++;
	struct rc_wc_exp e = {
		.wr_id = wr_id_of(w, k), .status = IBV_WC_SUCCESS,
		.opcode = IBV_WC_RECV, .recv = 1, .byte_len = f->len,
		.qp_num = self->wq[w]->wq_num,
	};
	uint8_t want[SLOT];

	rc_expect_wc(_metadata, self->cq[w % self->ncq], &e, what);
	frame_build(want, f);
	EXPECT_SAME_BYTES((uint8_t *)rslot(self, w, k), want, f->len, what);
}

/* Send @f; it arrives in the WQ its hash picks, which is returned. */
static int send_expect(struct __test_metadata *_metadata,
		       FIXTURE_DATA(rss) *self, const struct frame *f,
		       uint32_t hash, const char *what)
{
	int w = self->entry[hash & (self->tbl_size - 1)];

	send_frame(_metadata, self, f);
	expect_on(_metadata, self, w, f, what);
	return w;
}

static void expect_all_empty(struct __test_metadata *_metadata,
			     FIXTURE_DATA(rss) *self, const char *what)
{
	int i;

	for (i = 0; i < self->ncq; i++)
		EXPECT_CQ_EMPTY(self->cq[i], what);
}

/* ---- tests ------------------------------------------------------------- */

/* This test's Toeplitz hash gives Microsoft's answers. */
TEST(toeplitz_known_answers)
{
	struct frame f = {};
	size_t i;

	for (i = 0; i < sizeof(ms_v4) / sizeof(ms_v4[0]); i++) {
		ASSERT_EQ(1, inet_pton(AF_INET, ms_v4[i].src, f.saddr));
		ASSERT_EQ(1, inet_pton(AF_INET, ms_v4[i].dst, f.daddr));
		f.ip6 = 0;
		f.tcp = 1;
		f.sport = ms_v4[i].sport;
		f.dport = ms_v4[i].dport;
		EXPECT_EQ(ms_v4[i].ip, frame_hash(&f, ms_key,
				IBV_RX_HASH_SRC_IPV4 | IBV_RX_HASH_DST_IPV4));
		EXPECT_EQ(ms_v4[i].ip_tcp, frame_hash(&f, ms_key,
				IBV_RX_HASH_SRC_IPV4 | IBV_RX_HASH_DST_IPV4 |
				IBV_RX_HASH_SRC_PORT_TCP |
				IBV_RX_HASH_DST_PORT_TCP));
	}
	for (i = 0; i < sizeof(ms_v6) / sizeof(ms_v6[0]); i++) {
		ASSERT_EQ(1, inet_pton(AF_INET6, ms_v6[i].src, f.saddr));
		ASSERT_EQ(1, inet_pton(AF_INET6, ms_v6[i].dst, f.daddr));
		f.ip6 = 1;
		f.tcp = 1;
		f.sport = ms_v6[i].sport;
		f.dport = ms_v6[i].dport;
		EXPECT_EQ(ms_v6[i].ip, frame_hash(&f, ms_key,
				IBV_RX_HASH_SRC_IPV6 | IBV_RX_HASH_DST_IPV6));
		EXPECT_EQ(ms_v6[i].ip_tcp, frame_hash(&f, ms_key,
				IBV_RX_HASH_SRC_IPV6 | IBV_RX_HASH_DST_IPV6 |
				IBV_RX_HASH_SRC_PORT_TCP |
				IBV_RX_HASH_DST_PORT_TCP));
	}
}

/* What ibv_query_device_ex says of RSS. */
TEST_F(rss, caps)
{
	struct ibv_rss_caps *c = &self->ax.rss_caps;

	EXPECT_TRUE(c->supported_qpts & 1U << IBV_QPT_RAW_PACKET);
	EXPECT_EQ(1024, c->max_rwq_indirection_table_size);
	EXPECT_LE(1, c->max_rwq_indirection_tables);
	EXPECT_EQ(IBV_RX_HASH_FUNC_TOEPLITZ, c->rx_hash_function);
	EXPECT_EQ(0xff, c->rx_hash_fields_mask);
	EXPECT_LE(1, self->ax.max_wq_type_rq);
}

/*
 * The device's hash: Microsoft's vectors as frames, through a table of the
 * largest size, each into the WQ its known hash picks.  IPv4 frames go to
 * a QP hashing addresses and TCP ports, IPv6 frames (a flow of their own)
 * to one hashing only the IPv6 addresses.
 */
TEST_F(rss, ms_vectors_largest_table)
{
	uint32_t size = self->ax.rss_caps.max_rwq_indirection_table_size;
	struct ibv_flow *flow6;
	struct ibv_qp *qp6;
	struct frame f = { .tcp = 1, .len = FRAME_LEN };
	int log = 0, w;
	size_t i;

	while ((1U << log) < size)
		log++;
	ASSERT_EQ(size, 1U << log);
	rss_env(_metadata, self, MAX_WQS, MAX_WQS, log, ms_key,
		IBV_RX_HASH_SRC_IPV4 | IBV_RX_HASH_DST_IPV4 |
		IBV_RX_HASH_SRC_PORT_TCP | IBV_RX_HASH_DST_PORT_TCP);
	/* Only IPv4 for this QP, IPv6 for the other. */
	ASSERT_EQ(0, ibv_destroy_flow(self->flow));
	self->flow = mc_flow(self->qp, ETH_P_IP);
	ASSERT_NE(NULL, self->flow);
	qp6 = rss_qp(self->d.ctx, self->d.pd, self->tbl,
		     IBV_RX_HASH_FUNC_TOEPLITZ, ms_key, 40,
		     IBV_RX_HASH_SRC_IPV6 | IBV_RX_HASH_DST_IPV6);
	ASSERT_NE(NULL, qp6);
	flow6 = mc_flow(qp6, ETH_P_IPV6);
	ASSERT_NE(NULL, flow6);
	for (w = 0; w < MAX_WQS; w++)
		wq_post(_metadata, self, w, 8);

	for (i = 0; i < sizeof(ms_v4) / sizeof(ms_v4[0]); i++) {
		inet_pton(AF_INET, ms_v4[i].src, f.saddr);
		inet_pton(AF_INET, ms_v4[i].dst, f.daddr);
		f.ip6 = 0;
		f.sport = ms_v4[i].sport;
		f.dport = ms_v4[i].dport;
		f.seed = self->seed + i;
		send_expect(_metadata, self, &f, ms_v4[i].ip_tcp,
			    "an IPv4 vector");
	}
	for (i = 0; i < sizeof(ms_v6) / sizeof(ms_v6[0]); i++) {
		inet_pton(AF_INET6, ms_v6[i].src, f.saddr);
		inet_pton(AF_INET6, ms_v6[i].dst, f.daddr);
		f.ip6 = 1;
		f.sport = ms_v6[i].sport;
		f.dport = ms_v6[i].dport;
		f.seed = self->seed + 100 + i;
		send_expect(_metadata, self, &f, ms_v6[i].ip, "an IPv6 vector");
	}
	expect_all_empty(_metadata, self, "one completion per vector");
	EXPECT_EQ(0, ibv_destroy_flow(flow6));
	EXPECT_EQ(0, ibv_destroy_qp(qp6));
}

/*
 * Frames of many flows, each into the WQ of its hash (computed here), each
 * WQ's completions in order, on CQs that two WQs share: @ip6, @tcp say
 * which frames, @fields what is hashed.
 */
static void spread(struct __test_metadata *_metadata, FIXTURE_DATA(rss) *self,
		   int nwq, int ncq, int log, uint64_t fields, int ip6,
		   int tcp, int n)
{
	int hits[MAX_WQS] = { 0 }, used = 0, i, w;
	long long dropped;

	rss_env(_metadata, self, nwq, ncq, log, pyverbs_key, fields);
	dropped = hw_counter("raw_dropped");
	for (w = 0; w < nwq; w++)
		wq_post(_metadata, self, w, WQ_DEPTH);
	for (i = 0; i < n; i++) {
		/* Every fourth frame is of the other L4 protocol. */
		struct frame f = frame_flow(i, ip6, i % 4 == 3 ? !tcp : tcp,
					    self->seed);

		w = send_expect(_metadata, self, &f,
				frame_hash(&f, self->key, fields), "spread");
		if (!hits[w]++)
			used++;
	}
	expect_all_empty(_metadata, self, "one completion per frame");
	/* The frames did spread (a fixed set: this holds or never does). */
	if (nwq > 1 && fields)
		EXPECT_LE(nwq / 2, used);
	EXPECT_EQ(dropped, hw_counter("raw_dropped"));
}

TEST_F(rss, spread_ipv4_udp)
{
	spread(_metadata, self, MAX_WQS, MAX_WQS, 3,
	       IBV_RX_HASH_SRC_IPV4 | IBV_RX_HASH_DST_IPV4 |
	       IBV_RX_HASH_SRC_PORT_UDP | IBV_RX_HASH_DST_PORT_UDP, 0, 0, 48);
}

TEST_F(rss, spread_ipv6_tcp_shared_cqs)
{
	spread(_metadata, self, 4, 2, 4,
	       IBV_RX_HASH_SRC_IPV6 | IBV_RX_HASH_DST_IPV6 |
	       IBV_RX_HASH_SRC_PORT_TCP | IBV_RX_HASH_DST_PORT_TCP, 1, 1, 32);
}

/* Ports only, and IPv4 fields on IPv6 frames: hashed over the ports. */
TEST_F(rss, spread_ports_only)
{
	spread(_metadata, self, MAX_WQS, MAX_WQS, 5,
	       IBV_RX_HASH_SRC_IPV4 | IBV_RX_HASH_DST_PORT_UDP |
	       IBV_RX_HASH_SRC_PORT_UDP, 1, 0, 32);
}

/* No field: every frame hashes to 0, the first entry's WQ. */
TEST_F(rss, no_fields)
{
	spread(_metadata, self, 4, 4, 2, 0, 0, 1, 12);
	EXPECT_EQ(12, self->done[self->entry[0]]);
}

/* A table of one entry takes every frame. */
TEST_F(rss, table_of_one)
{
	spread(_metadata, self, 1, 1, 0, 0xff, 0, 0, 16);
	EXPECT_EQ(16, self->done[0]);
}

/* Find a frame whose hash picks WQ @w (flows from @start on). */
static struct frame frame_for(FIXTURE_DATA(rss) *self, int w, int start)
{
	struct frame f;
	int i;

	for (i = start;; i++) {
		f = frame_flow(i, 0, 0, self->seed);
		if (self->entry[frame_hash(&f, self->key, self->fields) &
				(self->tbl_size - 1)] == w)
			return f;
	}
}

/* Send @f for WQ @w, which must drop it: nothing completes, counted. */
static void expect_drop(struct __test_metadata *_metadata,
			FIXTURE_DATA(rss) *self, const struct frame *f,
			const char *what)
{
	long long dropped = hw_counter("raw_dropped");

	send_frame(_metadata, self, f);
	EXPECT_EQ(dropped + 1, wait_counter("raw_dropped", dropped + 1)) {
		TH_LOG("%s: raw_dropped", what);
	}
	expect_all_empty(_metadata, self, what);
}

/* Flushed completions of WQ @w: the next @n WQEs, in order. */
static void expect_flushed(struct __test_metadata *_metadata,
			   FIXTURE_DATA(rss) *self, int w, int n,
			   const char *what)
{
	while (n--) {
		struct rc_wc_exp e = {
			.wr_id = wr_id_of(w, self->done[w]++),
			.status = IBV_WC_WR_FLUSH_ERR,
			.qp_num = self->wq[w]->wq_num,
		};

		rc_expect_wc(_metadata, self->cq[w % self->ncq], &e, what);
	}
}

TEST_F(rss, wq_states)
{
	struct ibv_wq_attr a = { .attr_mask = IBV_WQ_ATTR_STATE };
	struct frame f0, f1;

	rss_env(_metadata, self, 2, 2, 1, pyverbs_key,
		IBV_RX_HASH_SRC_IPV4 | IBV_RX_HASH_DST_IPV4 |
		IBV_RX_HASH_SRC_PORT_UDP | IBV_RX_HASH_DST_PORT_UDP);
	f0 = frame_for(self, 0, 0);
	f1 = frame_for(self, 1, 0);
	wq_post(_metadata, self, 0, 16);

	/* RESET: nothing received; WQEs posted there stay for RDY. */
	ASSERT_EQ(0, wq_state(self->wq[1], IBV_WQS_RESET));
	wq_post(_metadata, self, 1, 2);
	expect_drop(_metadata, self, &f1, "a WQ in RESET");
	send_expect(_metadata, self, &f0, 0, "WQ 0, beside a WQ in RESET");
	ASSERT_EQ(0, wq_state(self->wq[1], IBV_WQS_RDY));
	send_frame(_metadata, self, &f1);
	expect_on(_metadata, self, 1, &f1, "posted in RESET, received in RDY");

	/* Entering RESET drops the WQEs posted, without completions. */
	ASSERT_EQ(0, wq_state(self->wq[1], IBV_WQS_RESET));
	self->done[1]++;
	ASSERT_EQ(0, wq_state(self->wq[1], IBV_WQS_RDY));
	expect_drop(_metadata, self, &f1, "the WQEs dropped by RESET");

	/* ERR flushes what is posted, then what is posted later. */
	wq_post(_metadata, self, 1, 3);
	ASSERT_EQ(0, wq_state(self->wq[1], IBV_WQS_ERR));
	expect_flushed(_metadata, self, 1, 3, "flushed entering ERR");
	expect_drop(_metadata, self, &f1, "a WQ in ERR");
	wq_post(_metadata, self, 1, 2);
	expect_flushed(_metadata, self, 1, 2, "posted in ERR");
	send_expect(_metadata, self, &f0, 0, "WQ 0, beside a WQ in ERR");

	/* ERR to RDY, or a current state that is not the WQ's: EINVAL. */
	EXPECT_EQ(EINVAL, wq_state(self->wq[1], IBV_WQS_RDY));
	a.attr_mask = IBV_WQ_ATTR_STATE | IBV_WQ_ATTR_CURR_STATE;
	a.curr_wq_state = IBV_WQS_RDY;
	a.wq_state = IBV_WQS_RESET;
	EXPECT_EQ(EINVAL, ibv_modify_wq(self->wq[1], &a));
	a.curr_wq_state = IBV_WQS_ERR;

	/* Through RESET back to RDY: it receives again. */
	a.wq_state = IBV_WQS_RESET;
	EXPECT_EQ(0, ibv_modify_wq(self->wq[1], &a));
	ASSERT_EQ(0, wq_state(self->wq[1], IBV_WQS_RDY));
	wq_post(_metadata, self, 1, 1);
	send_frame(_metadata, self, &f1);
	expect_on(_metadata, self, 1, &f1, "RDY again");
	expect_all_empty(_metadata, self, "nothing more");
}

TEST_F(rss, destroy_order)
{
	struct ibv_wq *extra;
	int w;

	rss_env(_metadata, self, 2, 1, 1, pyverbs_key, 0);
	EXPECT_EQ(EBUSY, ibv_destroy_wq(self->wq[0]));
	EXPECT_EQ(EBUSY, ibv_destroy_rwq_ind_table(self->tbl));
	EXPECT_EQ(EBUSY, ibv_destroy_qp(self->qp));
	/* A WQ no table holds goes at once. */
	extra = wq_create(self->d.ctx, self->d.pd, self->cq[0], 4);
	ASSERT_NE(NULL, extra);
	EXPECT_EQ(0, ibv_destroy_wq(extra));

	/* Still receiving. */
	wq_post(_metadata, self, 0, 1);
	send_expect(_metadata, self, &(struct frame){ .len = FRAME_LEN }, 0,
		    "after the refusals");

	ASSERT_EQ(0, ibv_destroy_flow(self->flow));
	self->flow = NULL;
	ASSERT_EQ(0, ibv_destroy_qp(self->qp));
	self->qp = NULL;
	EXPECT_EQ(EBUSY, ibv_destroy_wq(self->wq[1]));
	ASSERT_EQ(0, ibv_destroy_rwq_ind_table(self->tbl));
	self->tbl = NULL;
	for (w = 0; w < 2; w++) {
		ASSERT_EQ(0, ibv_destroy_wq(self->wq[w]));
		self->wq[w] = NULL;
	}
	/* The WQs' CQs are free again. */
	ASSERT_EQ(0, ibv_destroy_cq(self->cq[0]));
	self->cq[0] = NULL;
}

TEST_F(rss, bad_inputs)
{
	static struct ibv_wq *ind[2 * MAX_TBL];
	struct ibv_rwq_ind_table_init_attr ta = { .ind_tbl = ind };
	uint32_t max = self->ax.rss_caps.max_rwq_indirection_table_size;
	struct ibv_wq_init_attr wa = { .wq_type = IBV_WQT_RQ, .max_wr = 4,
				       .max_sge = 1 };
	struct ibv_context *ctx2, *ctx3;
	struct ibv_pd *pd2, *pd22;
	struct ibv_wq *wq2, *wq_pd2;
	struct ibv_cq *cq2;
	struct ibv_rwq_ind_table *t;
	struct ibv_qp_attr qa = { .qp_state = IBV_QPS_INIT };
	struct ibv_send_wr swr = {}, *sbad;
	struct ibv_recv_wr rwr = {}, *rbad;
	uint8_t long_key[64] = { 0 };
	struct ibv_qp *qp;
	int log = 0, pid, status;
	struct frame f;
	uint32_t i;

	rss_env(_metadata, self, 2, 1, 1, pyverbs_key, 0xff);
	while ((1U << log) < max)
		log++;

	/* A table larger than the device's. */
	for (i = 0; i < 2 * MAX_TBL; i++)
		ind[i] = self->wq[0];
	ta.log_ind_tbl_size = log + 1;
	ASSERT_LE(1U << (log + 1), 2 * MAX_TBL);
	t = ibv_create_rwq_ind_table(self->d.ctx, &ta);
	EXPECT_EQ(NULL, t);
	EXPECT_EQ(EINVAL, errno);

	/* Hash fields and functions not implemented, keys of wrong length. */
	qp = rss_qp(self->d.ctx, self->d.pd, self->tbl, 1, pyverbs_key, 40,
		    IBV_RX_HASH_IPSEC_SPI);
	EXPECT_EQ(NULL, qp);
	EXPECT_EQ(EOPNOTSUPP, errno);
	qp = rss_qp(self->d.ctx, self->d.pd, self->tbl, 1, pyverbs_key, 40,
		    IBV_RX_HASH_INNER | IBV_RX_HASH_SRC_IPV4);
	EXPECT_EQ(NULL, qp);
	EXPECT_EQ(EOPNOTSUPP, errno);
	qp = rss_qp(self->d.ctx, self->d.pd, self->tbl, 1, pyverbs_key, 40,
		    1ULL << 40);
	EXPECT_EQ(NULL, qp);
	EXPECT_EQ(EOPNOTSUPP, errno);
	qp = rss_qp(self->d.ctx, self->d.pd, self->tbl, 0, pyverbs_key, 40, 3);
	EXPECT_EQ(NULL, qp);
	EXPECT_EQ(EOPNOTSUPP, errno);
	qp = rss_qp(self->d.ctx, self->d.pd, self->tbl, 2, pyverbs_key, 40, 3);
	EXPECT_EQ(NULL, qp);
	EXPECT_EQ(EOPNOTSUPP, errno);
	qp = rss_qp(self->d.ctx, self->d.pd, self->tbl, 1, pyverbs_key, 39, 3);
	EXPECT_EQ(NULL, qp);
	EXPECT_EQ(EINVAL, errno);
	qp = rss_qp(self->d.ctx, self->d.pd, self->tbl, 1, long_key, 64, 3);
	EXPECT_EQ(NULL, qp);
	EXPECT_EQ(EINVAL, errno);
	qp = rss_qp(self->d.ctx, self->d.pd, self->tbl, 1, pyverbs_key, 0, 3);
	EXPECT_EQ(NULL, qp);
	EXPECT_EQ(EINVAL, errno);

	/* WQs of another PD: in the QP's table, or mixed in one table. */
	pd2 = ibv_alloc_pd(self->d.ctx);
	ASSERT_NE(NULL, pd2);
	qp = rss_qp(self->d.ctx, pd2, self->tbl, 1, pyverbs_key, 40, 3);
	EXPECT_EQ(NULL, qp);
	EXPECT_EQ(EINVAL, errno);
	wa.pd = pd2;
	wa.cq = self->cq[0];
	wq_pd2 = ibv_create_wq(self->d.ctx, &wa);
	ASSERT_NE(NULL, wq_pd2);
	ind[0] = self->wq[0];
	ind[1] = wq_pd2;
	ta.log_ind_tbl_size = 1;
	t = ibv_create_rwq_ind_table(self->d.ctx, &ta);
	EXPECT_EQ(NULL, t);
	EXPECT_EQ(EINVAL, errno);
	EXPECT_EQ(0, ibv_destroy_wq(wq_pd2));
	EXPECT_EQ(0, ibv_dealloc_pd(pd2));

	/* A WQ of another context names nothing in a third one. */
	ctx2 = rc_open_by_name(rc_cfg.name[0]);
	ctx3 = rc_open_by_name(rc_cfg.name[0]);
	ASSERT_NE(NULL, ctx2);
	ASSERT_NE(NULL, ctx3);
	pd22 = ibv_alloc_pd(ctx2);
	cq2 = ibv_create_cq(ctx2, 8, NULL, NULL, 0);
	ASSERT_NE(NULL, pd22);
	ASSERT_NE(NULL, cq2);
	wa.pd = pd22;
	wa.cq = cq2;
	wq2 = ibv_create_wq(ctx2, &wa);
	ASSERT_NE(NULL, wq2);
	ind[0] = ind[1] = wq2;
	t = ibv_create_rwq_ind_table(ctx3, &ta);
	EXPECT_EQ(NULL, t);
	EXPECT_NE(0, errno);
	EXPECT_EQ(0, ibv_destroy_wq(wq2));
	ibv_destroy_cq(cq2);
	ibv_dealloc_pd(pd22);
	ibv_close_device(ctx3);
	ibv_close_device(ctx2);

	/* WQs beyond the device's sizes, of no known type, with flags. */
	wa.pd = self->d.pd;
	wa.cq = self->cq[0];
	wa.max_wr = self->d.attr.max_qp_wr + 1;
	EXPECT_EQ(NULL, ibv_create_wq(self->d.ctx, &wa));
	EXPECT_EQ(EINVAL, errno);
	wa.max_wr = 4;
	wa.max_sge = self->d.attr.max_sge + 1;
	EXPECT_EQ(NULL, ibv_create_wq(self->d.ctx, &wa));
	EXPECT_EQ(EINVAL, errno);
	wa.max_sge = 1;
	wa.wq_type = 1;
	EXPECT_EQ(NULL, ibv_create_wq(self->d.ctx, &wa));
	EXPECT_EQ(EOPNOTSUPP, errno);
	wa.wq_type = IBV_WQT_RQ;
	wa.comp_mask = IBV_WQ_INIT_ATTR_FLAGS;
	wa.create_flags = IBV_WQ_FLAGS_SCATTER_FCS;
	EXPECT_EQ(NULL, ibv_create_wq(self->d.ctx, &wa));
	EXPECT_EQ(EOPNOTSUPP, errno);

	/* An RSS QP is not modified, sends nothing, takes no receives. */
	EXPECT_EQ(EOPNOTSUPP, ibv_modify_qp(self->qp, &qa, IBV_QP_STATE));
	EXPECT_NE(0, ibv_post_send(self->qp, &swr, &sbad));
	EXPECT_NE(0, ibv_post_recv(self->qp, &rwr, &rbad));

	/* Without CAP_NET_RAW: no RSS QP (ib_core), WQs and tables still. */
	pid = fork();
	ASSERT_LE(0, pid);
	if (!pid) {
		struct ibv_wq *w;

		if (setresgid(65534, 65534, 65534) ||
		    setresuid(65534, 65534, 65534))
			_exit(10);
		qp = rss_qp(self->d.ctx, self->d.pd, self->tbl, 1,
			    pyverbs_key, 40, 3);
		if (qp || errno != EPERM)
			_exit(11);
		wa.pd = self->d.pd;
		wa.cq = self->cq[0];
		wa.comp_mask = 0;
		w = ibv_create_wq(self->d.ctx, &wa);
		if (!w)
			_exit(12);
		if (ibv_destroy_wq(w))
			_exit(13);
		_exit(0);
	}
	ASSERT_EQ(pid, waitpid(pid, &status, 0));
	EXPECT_TRUE(WIFEXITED(status));
	EXPECT_EQ(0, WEXITSTATUS(status)) {
		TH_LOG("unprivileged: step %d failed", WEXITSTATUS(status));
	}

	/* After all that, the QP still receives. */
	wq_post(_metadata, self, 0, 1);
	wq_post(_metadata, self, 1, 1);
	f = frame_flow(7, 0, 0, self->seed);
	send_expect(_metadata, self, &f, frame_hash(&f, pyverbs_key, 0xff),
		    "after the bad inputs");
}

/*
 * The device's limits hold: max_rwq_indirection_tables tables, then
 * ENOMEM; max_wq_type_rq WQs, then ENOMEM; the last one of each works.
 */
TEST_F_TIMEOUT(rss, limits, 600)
{
	int max_tbl = self->ax.rss_caps.max_rwq_indirection_tables;
	int max_wq = self->ax.max_wq_type_rq;
	struct ibv_rwq_ind_table_init_attr ta = { .log_ind_tbl_size = 0 };
	struct ibv_rwq_ind_table **tbls;
	struct ibv_wq **wqs, *ind[1];
	int i, n;

	if (rc_cfg.is_rxe)
		SKIP(return, "vrdma's limits");
	rss_env(_metadata, self, 1, 1, 0, pyverbs_key, 0);
	tbls = calloc(max_tbl + 1, sizeof(*tbls));
	wqs = calloc(max_wq + 1, sizeof(*wqs));
	ASSERT_NE(NULL, tbls);
	ASSERT_NE(NULL, wqs);

	/* The fixture's table is one. */
	ind[0] = self->wq[0];
	ta.ind_tbl = ind;
	for (n = 0; n < max_tbl; n++) {
		tbls[n] = ibv_create_rwq_ind_table(self->d.ctx, &ta);
		if (!tbls[n])
			break;
	}
	EXPECT_EQ(max_tbl - 1, n);
	EXPECT_EQ(ENOMEM, errno);
	for (i = 0; i < n; i++)
		EXPECT_EQ(0, ibv_destroy_rwq_ind_table(tbls[i]));

	/* The fixture's WQ is one. */
	for (n = 0; n < max_wq; n++) {
		wqs[n] = wq_create(self->d.ctx, self->d.pd, self->cq[0], 1);
		if (!wqs[n])
			break;
	}
	EXPECT_EQ(max_wq - 1, n);
	EXPECT_EQ(ENOMEM, errno);
	for (i = 0; i < n; i++)
		EXPECT_EQ(0, ibv_destroy_wq(wqs[i]));
	free(tbls);
	free(wqs);

	/* The QP on the fixture's table still receives. */
	wq_post(_metadata, self, 0, 1);
	send_expect(_metadata, self, &(struct frame){ .len = FRAME_LEN }, 0,
		    "after the limits");
}

/* ---- a hostile process: it writes the WQ's ring (vrdma only) ----------- */

static struct vrdma_uring *wq_ring(struct ibv_wq *wq)
{
	return &vrdma_container_of(wq, struct vrdma_wq, ibv_wq)->rq.ring;
}

/* Write a WQE straight into WQ @w's ring. */
static void raw_wqe(FIXTURE_DATA(rss) *self, int w, uint32_t num_sge,
		    uint32_t lkey, uint32_t length)
{
	struct vrdma_uring *r = wq_ring(self->wq[w]);
	struct vrdma_recv_wqe *e = vrdma_uring_entry(r, r->head);
	uint32_t k = self->posted[w]++;

	memset(e, 0, r->entry_size);
	e->wr_id = wr_id_of(w, k);
	e->num_sge = num_sge;
	e->sge[0].addr = (uintptr_t)rslot(self, w, k);
	e->sge[0].length = length;
	e->sge[0].lkey = lkey;
	r->head++;
	vrdma_uring_publish(r);
}

/* The next completion of WQ @w is an error @status; the WQ is in ERR. */
static void expect_error(struct __test_metadata *_metadata,
			 FIXTURE_DATA(rss) *self, int w,
			 enum ibv_wc_status status, const char *what)
{
	struct rc_wc_exp e = {
		.wr_id = wr_id_of(w, self->done[w]++), .status = status,
		.qp_num = self->wq[w]->wq_num,
	};

	rc_expect_wc(_metadata, self->cq[w % self->ncq], &e, what);
}

/* Back to RDY through RESET, its ring as the provider left it. */
static void wq_recover(struct __test_metadata *_metadata,
		       FIXTURE_DATA(rss) *self, int w)
{
	ASSERT_EQ(0, wq_state(self->wq[w], IBV_WQS_RESET));
	self->done[w] = self->posted[w];
	ASSERT_EQ(0, wq_state(self->wq[w], IBV_WQS_RDY));
}

TEST_F(rss, hostile_ring)
{
	long long bad = hw_counter("bad_wqes");
	struct ibv_async_event ev;
	struct vrdma_uring *r;
	struct frame f0, f1;

	if (rc_cfg.is_rxe)
		SKIP(return, "writes vrdma's WQ ring directly");
	rss_env(_metadata, self, 2, 2, 1, pyverbs_key,
		IBV_RX_HASH_SRC_IPV4 | IBV_RX_HASH_DST_IPV4 |
		IBV_RX_HASH_SRC_PORT_UDP | IBV_RX_HASH_DST_PORT_UDP);
	f0 = frame_for(self, 0, 0);
	f1 = frame_for(self, 1, 0);

	/* More SGEs than the WQ has room for: LOC_QP_OP_ERR, WQ in ERR. */
	raw_wqe(self, 0, 0xffffffff, self->rbuf.mr->lkey, SLOT);
	wq_post(_metadata, self, 0, 1);
	send_frame(_metadata, self, &f0);
	expect_error(_metadata, self, 0, IBV_WC_LOC_QP_OP_ERR,
		     "a WQE with too many SGEs");
	expect_error(_metadata, self, 0, IBV_WC_WR_FLUSH_ERR,
		     "the WQE after it, flushed");
	EXPECT_EQ(bad + 1, wait_counter("bad_wqes", bad + 1));
	ASSERT_TRUE(rc_wait_async(_metadata, self->d.ctx, IBV_EVENT_WQ_FATAL,
				  &ev, RC_TIMEOUT_MS));
	EXPECT_EQ(self->wq[0], ev.element.wq);
	expect_drop(_metadata, self, &f0, "the WQ in ERR");
	wq_recover(_metadata, self, 0);

	/* An lkey that opens nothing: LOC_PROT_ERR. */
	raw_wqe(self, 0, 1, 0x12345600, SLOT);
	send_frame(_metadata, self, &f0);
	expect_error(_metadata, self, 0, IBV_WC_LOC_PROT_ERR, "a bad lkey");
	wq_recover(_metadata, self, 0);

	/* A buffer smaller than the frame: LOC_LEN_ERR. */
	raw_wqe(self, 0, 1, self->rbuf.mr->lkey, f0.len - 1);
	send_frame(_metadata, self, &f0);
	expect_error(_metadata, self, 0, IBV_WC_LOC_LEN_ERR, "too small");
	wq_recover(_metadata, self, 0);
	wq_post(_metadata, self, 0, 1);
	send_frame(_metadata, self, &f0);
	expect_on(_metadata, self, 0, &f0, "recovered");

	/* A producer index no ring can have: dropped, WQ fatal. */
	wq_post(_metadata, self, 1, 1);
	r = wq_ring(self->wq[1]);
	vrdma_store_release(&r->hdr->prod, r->head + 3 * r->num_entries);
	bad = hw_counter("bad_wqes");
	send_frame(_metadata, self, &f1);
	EXPECT_EQ(bad + 1, wait_counter("bad_wqes", bad + 1));
	ASSERT_TRUE(rc_wait_async(_metadata, self->d.ctx, IBV_EVENT_WQ_FATAL,
				  &ev, RC_TIMEOUT_MS));
	EXPECT_EQ(self->wq[1], ev.element.wq);
	expect_drop(_metadata, self, &f1, "a WQ with a garbage ring");
	/* The WQ beside it does not mind. */
	wq_post(_metadata, self, 0, 1);
	send_frame(_metadata, self, &f0);
	expect_on(_metadata, self, 0, &f0, "beside a garbage ring");
	expect_all_empty(_metadata, self, "nothing more");
}

int main(int argc, char **argv)
{
	return rc_suite_main(argc, argv);
}
