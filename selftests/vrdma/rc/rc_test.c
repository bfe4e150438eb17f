// SPDX-License-Identifier: GPL-2.0
/*
 * The RC data path through the standard verbs API: every opcode, sizes,
 * gather/scatter lists, inline data, many WRs in flight, unsignaled WRs,
 * completion channels and solicited events, the QP state machine, and the
 * error cases (bad keys, bounds, access rights, short receive buffers,
 * posting in the wrong state, CQ overflow, RNR and retry exhaustion), each
 * followed by a check that a fresh QP pair still works.
 *
 * Every byte moved is checked (the destination range, with the bytes around
 * and between the segments, against an image of what must be there), and
 * every defined CQE field (wr_id, status, opcode, byte_len, wc_flags,
 * imm_data, qp_num; src_qp is only defined for UD and is not checked).
 *
 * Two variants of each test: "loopback", both QPs on one device talking to
 * themselves through the device's own IPv4 GID, and "two_devices", one QP
 * on each end of a veth pair, each with its own device's IPv4 GID.
 *
 * The device type comes from VRDMA_TEST_TYPE: "vrdma" (default) or "rxe"
 * (the kernel's Soft-RoCE, to validate the tests themselves). Where rxe
 * (Linux 6.1) deviates from the IB spec the spec is expected, and rxe's
 * behaviour is accepted on rxe only and logged as an "rxe quirk".
 *
 * Runs as root in the test VM. main() loads the module, creates a veth
 * pair with IPv4 addresses, policy routing that makes traffic between the
 * two local addresses really cross the veth, and the two RDMA devices;
 * the tests (each in its own child) open them; main removes it all at exit.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <libgen.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>
#include <infiniband/verbs.h>

#include "rc_lib.h"
#include "rc_suite.h"

/* ---- fixture --------------------------------------------------------- */

FIXTURE(rc) {
	struct rc_dev d0, d1;
	struct rc_dev *da, *db;
	struct rc_env e;
	int two;
	int mtu_changed;
};

RC_ENDS_VARIANTS(rc);

FIXTURE_SETUP(rc)
{
	memset(&self->e, 0, sizeof(self->e));
	self->two = variant->two_devices;
	rc_ends_open(_metadata, &self->d0, &self->d1, &self->da, &self->db,
		     self->two);
}

static int set_mtu(struct __test_metadata *_metadata, FIXTURE_DATA(rc) *self,
		   int netdev_mtu, enum ibv_mtu want);

FIXTURE_TEARDOWN(rc)
{
	if (self->mtu_changed)
		set_mtu(_metadata, self, 1500, IBV_MTU_1024);
	rc_env_destroy(&self->e);
	rc_dev_close(&self->d1);
	rc_dev_close(&self->d0);
}

/* A pair (opts may be NULL) and a @size buffer with every access per side. */
static void env_create(struct __test_metadata *_metadata,
		       FIXTURE_DATA(rc) *self, struct rc_env *e,
		       const struct rc_opts *o, size_t size)
{
	rc_env_create(_metadata, e, self->da, self->db, o, size, RC_ACCESS_ALL,
		      RC_ACCESS_ALL);
}

static int mtu_bytes(const struct rc_dev *d)
{
	return 128 << d->port.active_mtu;
}

static int read_sge(const struct rc_env *e, const struct rc_dev *d)
{
	int n = e->p.a.cap.max_send_sge;

	if (d->attr.max_sge_rd && (int)d->attr.max_sge_rd < n)
		n = d->attr.max_sge_rd;
	return n < RC_MAX_SGE ? n : RC_MAX_SGE;
}

/*
 * After a negative test: a new pair on the same devices moves data both
 * ways (SEND with gather/scatter and a READ). The old pair stays as it is.
 */
/* @e moves data both ways: a SEND with gather/scatter and a READ. */
static void pair_works(struct __test_metadata *_metadata, struct rc_env *e)
{
	rc_xfer(_metadata, e, &(struct rc_xfer){
		.op = IBV_WR_SEND, .len = 5000, .lsge = 3, .rsge = 2,
		.loff = 1, .roff = 3, .seed = 901, .wr_id = 0x900,
	});
	rc_xfer(_metadata, e, &(struct rc_xfer){
		.op = IBV_WR_RDMA_READ, .len = 3001, .lsge = 2,
		.loff = 5, .roff = 7, .seed = 902, .wr_id = 0x910,
	});
}

static void fresh_pair_works(struct __test_metadata *_metadata,
			     FIXTURE_DATA(rc) *self)
{
	struct rc_env e;

	env_create(_metadata, self, &e, NULL, 64 * 1024);
	pair_works(_metadata, &e);
	rc_env_destroy(&e);
}

/* An rkey/lkey that is none of @e's keys. */
static uint32_t bad_key(const struct rc_env *e, uint32_t key)
{
	uint32_t k = key ^ 0x5a;

	while (k == e->ba.mr->lkey || k == e->ba.mr->rkey ||
	       k == e->bb.mr->lkey || k == e->bb.mr->rkey)
		k ^= 0x100;
	return k;
}

/* An RDMA WRITE or READ of @len bytes at the start of @local. */
static void rdma_wr(struct ibv_send_wr *wr, struct ibv_sge *sge,
		    enum ibv_wr_opcode op, struct rc_buf *local, size_t len,
		    uint64_t raddr, uint32_t rkey)
{
	sge->addr = (uintptr_t)local->p;
	sge->length = len;
	sge->lkey = local->mr->lkey;
	memset(wr, 0, sizeof(*wr));
	wr->wr_id = 0x1;
	wr->sg_list = sge;
	wr->num_sge = 1;
	wr->opcode = op;
	wr->wr.rdma.remote_addr = raddr;
	wr->wr.rdma.rkey = rkey;
}

/* ---- parent domains --------------------------------------------------- */

static int pd_allocs;

static void *pd_alloc(struct ibv_pd *pd, void *ctx, size_t size,
		      size_t alignment, uint64_t type)
{
	pd_allocs++;
	return IBV_ALLOCATOR_USE_DEFAULT;
}

static void pd_free(struct ibv_pd *pd, void *ctx, void *ptr, uint64_t type)
{
}

/*
 * A parent domain with allocators on a PD of its own: A's QP, MRs and an
 * extended CQ made on it (IBV_CQ_INIT_ATTR_MASK_PD) move data; its PD
 * cannot go while it exists.  Refused: no PD, something that is no thread
 * domain given as one, unknown comp_mask bits, half an allocator, a parent
 * of a parent, an extended CQ on a plain PD.
 */
TEST_F(rc, parent_domain)
{
	struct ibv_parent_domain_init_attr pa;
	struct ibv_cq_init_attr_ex cqa;
	struct rc_dev pdev = *self->da;
	struct ibv_pd *base, *parent, *p2;
	struct ibv_cq_ex *cqx;

	base = ibv_alloc_pd(self->da->ctx);
	ASSERT_NE(NULL, base);
	memset(&pa, 0, sizeof(pa));
	pa.pd = base;
	pa.comp_mask = IBV_PARENT_DOMAIN_INIT_ATTR_ALLOCATORS |
		       IBV_PARENT_DOMAIN_INIT_ATTR_PD_CONTEXT;
	pa.alloc = pd_alloc;
	pa.free = pd_free;
	pa.pd_context = self;
	parent = ibv_alloc_parent_domain(self->da->ctx, &pa);
	if (!parent && errno == EOPNOTSUPP && rc_cfg.is_rxe) {
		ibv_dealloc_pd(base);
		SKIP(return, "rdma_rxe's provider has no parent domains");
	}
	ASSERT_NE(NULL, parent) {
		TH_LOG("ibv_alloc_parent_domain: %s", strerror(errno));
	}

	/* The pair's A end and its buffer on the parent domain. */
	pdev.pd = parent;
	pdev.owned = 0;
	rc_env_create(_metadata, &self->e, &pdev, self->db, NULL, 64 * 1024,
		      RC_ACCESS_ALL, RC_ACCESS_ALL);
	pair_works(_metadata, &self->e);

	/* An extended CQ on the parent domain; not on a plain PD. */
	memset(&cqa, 0, sizeof(cqa));
	cqa.cqe = 16;
	cqa.wc_flags = IBV_WC_STANDARD_FLAGS;
	cqa.comp_mask = IBV_CQ_INIT_ATTR_MASK_PD;
	cqa.parent_domain = parent;
	cqx = ibv_create_cq_ex(self->da->ctx, &cqa);
	EXPECT_NE(NULL, cqx) {
		TH_LOG("ibv_create_cq_ex on a parent domain: %s",
		       strerror(errno));
	}
	if (cqx)
		EXPECT_EQ(0, ibv_destroy_cq(ibv_cq_ex_to_cq(cqx)));
	cqa.parent_domain = base;
	cqx = ibv_create_cq_ex(self->da->ctx, &cqa);
	EXPECT_EQ(NULL, cqx);
	if (cqx)
		ibv_destroy_cq(ibv_cq_ex_to_cq(cqx));

	/* Refused attributes. */
	pa.pd = NULL;
	EXPECT_EQ(NULL, ibv_alloc_parent_domain(self->da->ctx, &pa));
	pa.pd = parent;
	p2 = ibv_alloc_parent_domain(self->da->ctx, &pa);
	EXPECT_EQ(NULL, p2);
	if (p2)
		ibv_dealloc_pd(p2);
	pa.pd = base;
	pa.td = (struct ibv_td *)parent;	/* not a TD */
	EXPECT_EQ(NULL, ibv_alloc_parent_domain(self->da->ctx, &pa));
	pa.td = NULL;
	pa.comp_mask |= 1u << 7;
	EXPECT_EQ(NULL, ibv_alloc_parent_domain(self->da->ctx, &pa));
	pa.comp_mask = IBV_PARENT_DOMAIN_INIT_ATTR_ALLOCATORS;
	pa.free = NULL;
	EXPECT_EQ(NULL, ibv_alloc_parent_domain(self->da->ctx, &pa));

	/* The PD outlives its parent domain. */
	EXPECT_EQ(EBUSY, ibv_dealloc_pd(base));
	rc_env_destroy(&self->e);
	memset(&self->e, 0, sizeof(self->e));
	EXPECT_EQ(0, ibv_dealloc_pd(parent));
	EXPECT_EQ(0, ibv_dealloc_pd(base));
	/* Nothing of vrdma's is device memory: the allocators go unused. */
	if (!rc_cfg.is_rxe)
		EXPECT_EQ(0, pd_allocs);
}

/*
 * A thread domain: A's QP and an extended CQ made on a parent domain with
 * one (rings without locks, one thread at a time) move data and complete;
 * the TD cannot go while the parent domain exists.  Refused: comp_mask
 * bits, a TD of another context.
 */
TEST_F(rc, thread_domain)
{
	struct ibv_td_init_attr ta = { 0 };
	struct ibv_parent_domain_init_attr pa;
	struct ibv_cq_init_attr_ex cqa;
	struct rc_dev pdev = *self->da;
	struct ibv_context *other;
	struct ibv_pd *base, *parent;
	struct ibv_td *td, *td2;
	struct ibv_cq_ex *cqx;

	td = ibv_alloc_td(self->da->ctx, &ta);
	if (!td && errno == EOPNOTSUPP && rc_cfg.is_rxe)
		SKIP(return, "rdma_rxe's provider has no thread domains");
	ASSERT_NE(NULL, td) {
		TH_LOG("ibv_alloc_td: %s", strerror(errno));
	}
	base = ibv_alloc_pd(self->da->ctx);
	ASSERT_NE(NULL, base);
	memset(&pa, 0, sizeof(pa));
	pa.pd = base;
	pa.td = td;
	parent = ibv_alloc_parent_domain(self->da->ctx, &pa);
	ASSERT_NE(NULL, parent) {
		TH_LOG("ibv_alloc_parent_domain with a TD: %s",
		       strerror(errno));
	}
	EXPECT_EQ(EBUSY, ibv_dealloc_td(td));

	pdev.pd = parent;
	pdev.owned = 0;
	rc_env_create(_metadata, &self->e, &pdev, self->db, NULL, 64 * 1024,
		      RC_ACCESS_ALL, RC_ACCESS_ALL);
	pair_works(_metadata, &self->e);
	rc_xfer(_metadata, &self->e, &(struct rc_xfer){
		.op = IBV_WR_RDMA_WRITE, .len = 20000, .lsge = 2, .rsge = 1,
		.loff = 5, .roff = 9, .seed = 77, .wr_id = 0x910,
	});

	/* An extended CQ on it, polled by its one thread: empty. */
	memset(&cqa, 0, sizeof(cqa));
	cqa.cqe = 16;
	cqa.wc_flags = IBV_WC_STANDARD_FLAGS;
	cqa.comp_mask = IBV_CQ_INIT_ATTR_MASK_PD;
	cqa.parent_domain = parent;
	cqx = ibv_create_cq_ex(self->da->ctx, &cqa);
	ASSERT_NE(NULL, cqx) {
		TH_LOG("ibv_create_cq_ex on a TD: %s", strerror(errno));
	}
	{
		struct ibv_poll_cq_attr pca = { 0 };
		int ret = ibv_start_poll(cqx, &pca);

		EXPECT_EQ(ENOENT, ret);
		if (!ret)
			ibv_end_poll(cqx);
		EXPECT_EQ(0, ibv_destroy_cq(ibv_cq_ex_to_cq(cqx)));
	}

	/* Refused: attributes, and a TD of another context. */
	ta.comp_mask = 1;
	EXPECT_EQ(NULL, ibv_alloc_td(self->da->ctx, &ta));
	other = ibv_open_device(self->da->ctx->device);
	ASSERT_NE(NULL, other);
	ta.comp_mask = 0;
	td2 = ibv_alloc_td(other, &ta);
	ASSERT_NE(NULL, td2);
	pa.td = td2;
	EXPECT_EQ(NULL, ibv_alloc_parent_domain(self->da->ctx, &pa));
	EXPECT_EQ(0, ibv_dealloc_td(td2));
	ibv_close_device(other);

	rc_env_destroy(&self->e);
	memset(&self->e, 0, sizeof(self->e));
	EXPECT_EQ(0, ibv_dealloc_pd(parent));
	EXPECT_EQ(0, ibv_dealloc_td(td));
	EXPECT_EQ(0, ibv_dealloc_pd(base));
}

/* ---- imported objects -------------------------------------------------- */

/*
 * A second context on a dup of the first one's command file
 * (ibv_import_device), the first one's PD (ibv_import_pd) and MR
 * (ibv_import_mr): a pair whose A end is built entirely through the
 * imported context and PD -- CQs, QP, the rings mapped through the dup,
 * the buffer's MR -- moves data both ways; the imported MR has the
 * original's keys and length, and B writes into it by its rkey.  Refused:
 * a handle that names no MR, a command file without a context.
 */
TEST_F(rc, import)
{
	struct rc_dev imp = *self->da;
	struct rc_buf orig = { 0 };
	struct ibv_mr *mr, *bad;
	struct ibv_sge sge;
	struct ibv_send_wr wr, *badwr;
	struct ibv_context *none;
	char path[128];
	int fd, i;

	imp.owned = 0;
	fd = dup(self->da->ctx->cmd_fd);
	ASSERT_LE(0, fd);
	imp.ctx = ibv_import_device(fd);
	if (!imp.ctx && errno == EOPNOTSUPP && rc_cfg.is_rxe)
		SKIP(return, "rdma_rxe's provider imports no device");
	ASSERT_NE(NULL, imp.ctx) {
		TH_LOG("ibv_import_device: %s", strerror(errno));
	}
	EXPECT_EQ(self->da->ctx->device, imp.ctx->device);
	imp.pd = ibv_import_pd(imp.ctx, self->da->pd->handle);
	ASSERT_NE(NULL, imp.pd) {
		TH_LOG("ibv_import_pd: %s", strerror(errno));
	}
	EXPECT_EQ(self->da->pd->handle, imp.pd->handle);

	/* Everything of A through the imported context and PD. */
	rc_env_create(_metadata, &self->e, &imp, self->db, NULL, 64 * 1024,
		      RC_ACCESS_ALL, RC_ACCESS_ALL);
	pair_works(_metadata, &self->e);
	rc_xfer(_metadata, &self->e, &(struct rc_xfer){
		.op = IBV_WR_RDMA_WRITE, .len = 7001, .lsge = 2,
		.loff = 5, .roff = 9, .seed = 72, .wr_id = 0x720,
	});

	/* An MR of the first context, imported: same keys, B writes into it. */
	rc_buf_alloc(_metadata, &orig, self->da->pd, 8192, RC_ACCESS_ALL);
	mr = ibv_import_mr(imp.pd, orig.mr->handle);
	ASSERT_NE(NULL, mr) {
		TH_LOG("ibv_import_mr: %s", strerror(errno));
	}
	EXPECT_EQ(orig.mr->lkey, mr->lkey);
	EXPECT_EQ(orig.mr->rkey, mr->rkey);
	EXPECT_EQ(orig.mr->length, mr->length);
	EXPECT_EQ(orig.mr->handle, mr->handle);
	memset(orig.p, 0, orig.size);
	for (i = 0; i < 4096; i++)
		((uint8_t *)self->e.bb.p)[i] = (uint8_t)(i * 7 + 3);
	rdma_wr(&wr, &sge, IBV_WR_RDMA_WRITE, &self->e.bb, 4096,
		(uintptr_t)orig.p + 100, mr->rkey);
	wr.send_flags = IBV_SEND_SIGNALED;
	ASSERT_EQ(0, ibv_post_send(self->e.p.b.qp, &wr, &badwr));
	rc_expect_wc(_metadata, self->e.p.b.scq, &(struct rc_wc_exp){
		.wr_id = 0x1, .status = IBV_WC_SUCCESS,
		.opcode = IBV_WC_RDMA_WRITE, .qp_num = self->e.p.b.qp->qp_num,
	}, "WRITE by the imported MR's rkey");
	EXPECT_EQ(0, memcmp((uint8_t *)orig.p + 100, self->e.bb.p, 4096));
	ibv_unimport_mr(mr);

	bad = ibv_import_mr(imp.pd, orig.mr->handle + 1000);
	EXPECT_EQ(NULL, bad);
	if (bad)
		ibv_unimport_mr(bad);

	/* A command file of the device without a context imports nothing. */
	snprintf(path, sizeof(path), "/dev/infiniband/%s",
		 self->da->ctx->device->dev_name);
	fd = open(path, O_RDWR | O_CLOEXEC);
	ASSERT_LE(0, fd);
	/* (A failed import has closed the file.) */
	none = ibv_import_device(fd);
	EXPECT_EQ(NULL, none);
	if (none)
		ibv_close_device(none);

	rc_buf_free(&orig);
	rc_env_destroy(&self->e);
	memset(&self->e, 0, sizeof(self->e));
	ibv_unimport_pd(imp.pd);
	EXPECT_EQ(0, ibv_close_device(imp.ctx));
}

/* ---- every opcode ----------------------------------------------------- */

TEST_F(rc, opcodes)
{
	static const enum ibv_wr_opcode ops[] = {
		IBV_WR_SEND, IBV_WR_SEND_WITH_IMM, IBV_WR_RDMA_WRITE,
		IBV_WR_RDMA_WRITE_WITH_IMM, IBV_WR_RDMA_READ,
	};
	unsigned int i;

	env_create(_metadata, self, &self->e, NULL, 64 * 1024);
	for (i = 0; i < sizeof(ops) / sizeof(ops[0]); i++)
		rc_xfer(_metadata, &self->e, &(struct rc_xfer){
			.op = ops[i], .len = 3000 + i, .lsge = 1, .rsge = 1,
			.loff = 0, .roff = 0, .imm = 0xc0de0000 + i,
			.seed = i, .wr_id = 0x100 + 16 * i,
		});
	/* And the other direction: B is a requester too. */
	{
		struct rc_env rev = self->e;

		rev.p.a = self->e.p.b;
		rev.p.b = self->e.p.a;
		rev.ba = self->e.bb;
		rev.bb = self->e.ba;
		for (i = 0; i < sizeof(ops) / sizeof(ops[0]); i++)
			rc_xfer(_metadata, &rev, &(struct rc_xfer){
				.op = ops[i], .len = 2000 + i, .lsge = 2,
				.rsge = 2, .loff = 1, .roff = 2,
				.imm = 0xbeef0000 + i, .seed = 50 + i,
				.wr_id = 0x200 + 16 * i,
			});
	}
}

/* A counter of device @d (rc_cfg.name[@i]), or -1. */
static long long hw_counter(int i, const char *name)
{
	/* ib_core caches the counters for a few milliseconds. */
	usleep(50 * 1000);
	return rc_hw_counter(rc_cfg.name[i], name);
}

/*
 * Which path a message between QPs of this host takes.  With the module
 * parameter local_direct set (the default), the loopback path (loopback.c)
 * moves each message whole, MR to MR: counted in loopback_msgs, no packet sent.
 * With local_direct=0 the same messages go as packets, delivered inside
 * the driver.  local_path.sh runs this and the error tests both ways.
 */
TEST_F(rc, local_path)
{
	static const enum ibv_wr_opcode ops[] = {
		IBV_WR_SEND, IBV_WR_SEND_WITH_IMM, IBV_WR_RDMA_WRITE,
		IBV_WR_RDMA_WRITE_WITH_IMM, IBV_WR_RDMA_READ,
	};
	long long ops0, pkts0, ops1, pkts1;
	int direct = 0, i;
	char c = 0;
	FILE *f;

	if (rc_cfg.is_rxe)
		SKIP(return, "vrdma's loopback path");
	f = fopen("/sys/module/vrdma/parameters/local_direct", "r");
	ASSERT_NE(NULL, f);
	ASSERT_EQ(1, fscanf(f, " %c", &c));
	fclose(f);
	direct = c == 'Y' || c == '1';

	env_create(_metadata, self, &self->e, NULL, 256 * 1024);
	ops0 = hw_counter(0, "loopback_msgs");
	pkts0 = hw_counter(0, "sent_pkts");
	for (i = 0; i < (int)(sizeof(ops) / sizeof(ops[0])); i++)
		rc_xfer(_metadata, &self->e, &(struct rc_xfer){
			.op = ops[i], .len = 65536 + 8 * i, .lsge = 3,
			.rsge = 2, .loff = 5, .roff = 3, .imm = 0x10ca1 + i,
			.seed = 700 + i, .wr_id = 0x700 + i,
		});
	ops1 = hw_counter(0, "loopback_msgs");
	pkts1 = hw_counter(0, "sent_pkts");
	ASSERT_LE(0, ops0);
	if (direct) {
		EXPECT_EQ(ops0 + 5, ops1);
		EXPECT_EQ(pkts0, pkts1) {
			TH_LOG("local_direct=1: packets were sent");
		}
	} else {
		EXPECT_EQ(ops0, ops1);
		EXPECT_LT(pkts0 + 60, pkts1) {
			TH_LOG("local_direct=0: too few packets");
		}
	}
}

/* Sizes around every boundary, with every opcode, 1..max SGEs. */
TEST_F_TIMEOUT(rc, sizes, 240)
{
	static const enum ibv_wr_opcode ops[] = {
		IBV_WR_SEND, IBV_WR_SEND_WITH_IMM, IBV_WR_RDMA_WRITE,
		IBV_WR_RDMA_WRITE_WITH_IMM, IBV_WR_RDMA_READ,
	};
	size_t sizes[] = { 0, 1, 2, 3, 63, 4095, 4096, 4097, 0, 0, 0,
			   65537, (1 << 20) + 3 };
	int mtu, nsge, nrd, k = 0;
	unsigned int i, j;

	env_create(_metadata, self, &self->e, NULL, (1 << 20) + 64 * 1024);
	mtu = mtu_bytes(self->da);
	sizes[8] = mtu - 1;
	sizes[9] = mtu;
	sizes[10] = mtu + 1;
	nsge = self->e.p.a.cap.max_send_sge;
	if (nsge > RC_MAX_SGE)
		nsge = RC_MAX_SGE;
	nrd = read_sge(&self->e, self->da);

	for (j = 0; j < sizeof(sizes) / sizeof(sizes[0]); j++) {
		for (i = 0; i < sizeof(ops) / sizeof(ops[0]); i++, k++) {
			int is_read = ops[i] == IBV_WR_RDMA_READ;

			rc_xfer(_metadata, &self->e, &(struct rc_xfer){
				.op = ops[i], .len = sizes[j],
				.lsge = 1 + k % (is_read ? nrd : nsge),
				.rsge = 1 + (k * 5 + 3) % nsge,
				.loff = 1 + k % 7, .roff = 3 + k % 5,
				.slack = k % 3 ? 0 : 7,
				.imm = 0x1000000 + k, .seed = 1000 + k,
				.wr_id = 0x10000 + 16 * k,
			});
		}
	}
}

/* Gather and scatter with 1..max SGEs on both sides. */
TEST_F_TIMEOUT(rc, sge, 120)
{
	int n, max, nrd;

	env_create(_metadata, self, &self->e, NULL, 256 * 1024);
	max = self->e.p.a.cap.max_send_sge;
	if (max > RC_MAX_SGE)
		max = RC_MAX_SGE;
	if (max > (int)self->e.p.b.cap.max_recv_sge)
		max = self->e.p.b.cap.max_recv_sge;
	nrd = read_sge(&self->e, self->da);
	TH_LOG("SGEs 1..%d (READ 1..%d), device max_sge %d max_sge_rd %d",
	       max, nrd, self->da->attr.max_sge, self->da->attr.max_sge_rd);

	for (n = 1; n <= max; n++) {
		/* One byte per SGE, and thousands per SGE. */
		rc_xfer(_metadata, &self->e, &(struct rc_xfer){
			.op = IBV_WR_SEND, .len = n, .lsge = n, .rsge = n,
			.loff = n, .roff = 2 * n + 1, .seed = 2000 + n,
			.wr_id = 0x20000 + 16 * n,
		});
		rc_xfer(_metadata, &self->e, &(struct rc_xfer){
			.op = IBV_WR_SEND_WITH_IMM, .len = 1000 * n + 3,
			.lsge = n, .rsge = max + 1 - n, .slack = 5,
			.loff = 3, .roff = n, .imm = n, .seed = 2100 + n,
			.wr_id = 0x21000 + 16 * n,
		});
		rc_xfer(_metadata, &self->e, &(struct rc_xfer){
			.op = IBV_WR_RDMA_WRITE, .len = 1500 * n + 1,
			.lsge = n, .loff = n % 4, .roff = 1 + n % 3,
			.seed = 2200 + n, .wr_id = 0x22000 + 16 * n,
		});
		if (n <= nrd)
			rc_xfer(_metadata, &self->e, &(struct rc_xfer){
				.op = IBV_WR_RDMA_READ, .len = 1300 * n + 7,
				.lsge = n, .loff = 5, .roff = n,
				.seed = 2300 + n, .wr_id = 0x23000 + 16 * n,
			});
	}
}

/* Big messages: 16 MiB, or the port's max_msg_sz if smaller. */
TEST_F_TIMEOUT(rc, big, 300)
{
	size_t len = 16 << 20;

	if (self->da->port.max_msg_sz < len) {
		TH_LOG("port max_msg_sz %u < 16 MiB: using that",
		       self->da->port.max_msg_sz);
		len = self->da->port.max_msg_sz;
	}
	env_create(_metadata, self, &self->e, NULL, len + 4096);
	rc_xfer(_metadata, &self->e, &(struct rc_xfer){
		.op = IBV_WR_RDMA_WRITE_WITH_IMM, .len = len, .lsge = 3,
		.loff = 1, .roff = 0, .imm = 0x16, .seed = 16,
		.wr_id = 0x1600,
	});
	rc_xfer(_metadata, &self->e, &(struct rc_xfer){
		.op = IBV_WR_SEND, .len = len - 5, .lsge = 1, .rsge = 2,
		.loff = 3, .roff = 1, .seed = 17, .wr_id = 0x1700,
	});
	/* A READ this long has many read responses in flight. */
	rc_xfer(_metadata, &self->e, &(struct rc_xfer){
		.op = IBV_WR_RDMA_READ, .len = len - 7, .lsge = 2,
		.loff = 2, .roff = 5, .seed = 18, .wr_id = 0x1800,
	});
}

/*
 * Set both veth ends' MTU and wait for the ports' active MTU to follow;
 * 0 on success. The devices' port attributes are refreshed.
 */
static int set_mtu(struct __test_metadata *_metadata, FIXTURE_DATA(rc) *self,
		   int netdev_mtu, enum ibv_mtu want)
{
	double deadline = rc_now_ms() + RC_TIMEOUT_MS;
	char cmd[128];

	snprintf(cmd, sizeof(cmd), "ip -batch - <<EOF\nlink set " NETDEV0
		 " mtu %d\nlink set " NETDEV1 " mtu %d\nEOF", netdev_mtu,
		 netdev_mtu);
	if (rc_sh(cmd))
		return -1;
	self->mtu_changed = netdev_mtu != 1500;
	for (;;) {
		if (ibv_query_port(self->da->ctx, RC_PORT, &self->da->port) ||
		    ibv_query_port(self->db->ctx, RC_PORT, &self->db->port))
			return -1;
		if (self->da->port.active_mtu == want &&
		    self->db->port.active_mtu == want)
			return 0;
		if (rc_now_ms() > deadline)
			return -1;
		usleep(50 * 1000);
	}
}

/*
 * Path MTU 4096 (netdev MTU 9000): the boundaries around it and big
 * messages of every opcode, READ above all (many 4 KiB read responses in
 * flight).
 */
TEST_F_TIMEOUT(rc, mtu_4096, 300)
{
	static const enum ibv_wr_opcode ops[] = {
		IBV_WR_SEND, IBV_WR_SEND_WITH_IMM, IBV_WR_RDMA_WRITE,
		IBV_WR_RDMA_WRITE_WITH_IMM, IBV_WR_RDMA_READ,
	};
	const size_t sizes[] = { 4095, 4096, 4097, 3 * 4096 + 1 };
	size_t big = 16 << 20;
	unsigned int i, j;
	int k = 0;

	ASSERT_EQ(0, set_mtu(_metadata, self, 9000, IBV_MTU_4096)) {
		TH_LOG("the active MTU did not become 4096");
	}
	if (self->da->port.max_msg_sz < big)
		big = self->da->port.max_msg_sz;
	env_create(_metadata, self, &self->e, NULL, big + 4096);
	for (j = 0; j < sizeof(sizes) / sizeof(sizes[0]); j++)
		for (i = 0; i < sizeof(ops) / sizeof(ops[0]); i++, k++)
			rc_xfer(_metadata, &self->e, &(struct rc_xfer){
				.op = ops[i], .len = sizes[j], .lsge = 1 + k % 3,
				.rsge = 1 + k % 2, .loff = k % 5, .roff = 1,
				.imm = k, .seed = 9000 + k,
				.wr_id = 0x90000 + 16 * k,
			});
	rc_xfer(_metadata, &self->e, &(struct rc_xfer){
		.op = IBV_WR_RDMA_READ, .len = big - 9, .lsge = 2,
		.loff = 1, .roff = 3, .seed = 9100, .wr_id = 0x91000,
	});
	rc_xfer(_metadata, &self->e, &(struct rc_xfer){
		.op = IBV_WR_RDMA_WRITE, .len = big - 9, .lsge = 2,
		.loff = 1, .roff = 3, .seed = 9101, .wr_id = 0x91010,
	});
	rc_xfer(_metadata, &self->e, &(struct rc_xfer){
		.op = IBV_WR_SEND, .len = (4 << 20) + 1, .lsge = 1, .rsge = 1,
		.loff = 1, .roff = 3, .seed = 9102, .wr_id = 0x91020,
	});
}

/*
 * Several long READs in flight with a short transport timeout (timeout 12:
 * 16.8 ms, 7 retries; longer by the slow factor). The requester's timer measures the time without
 * progress, so it must be restarted by every response that arrives: the
 * READs take far longer than 8 x 16.8 ms, yet none of them may time out.
 */
TEST_F_TIMEOUT(rc, reads_in_flight, 120)
{
	struct rc_opts o = { .timeout = rc_slow_timeout(12) };
	const size_t q = 4 << 20, len = q - 16;
	struct rc_env *e = &self->e;
	struct ibv_send_wr wr[4], *bad = NULL;
	struct ibv_sge sge[4];
	struct ibv_wc wc[4];
	uint8_t *img;
	int i, n;

	env_create(_metadata, self, e, &o, 4 * q);
	rc_fill(e->bb.p, e->bb.size, 9200, 0);
	rc_fill(e->ba.p, e->ba.size, 9201, 0);
	img = malloc(e->ba.size);
	ASSERT_NE(NULL, img);
	memcpy(img, e->ba.p, e->ba.size);
	for (i = 0; i < 4; i++) {
		memcpy(img + i * q + 1 + i, e->bb.p + i * q + 3, len);
		rdma_wr(&wr[i], &sge[i], IBV_WR_RDMA_READ, &e->ba, len,
			(uintptr_t)e->bb.p + i * q + 3, e->bb.mr->rkey);
		sge[i].addr += i * q + 1 + i;
		wr[i].wr_id = 0x9300 + i;
		wr[i].send_flags = IBV_SEND_SIGNALED;
		wr[i].next = i < 3 ? &wr[i + 1] : NULL;
	}
	ASSERT_EQ(0, ibv_post_send(e->p.a.qp, wr, &bad));
	n = rc_poll(e->p.a.scq, wc, 4, 60000);
	ASSERT_EQ(4, n);
	for (i = 0; i < n; i++)
		rc_wc_check(_metadata, &wc[i], &(struct rc_wc_exp){
			.wr_id = 0x9300 + i, .status = IBV_WC_SUCCESS,
			.opcode = IBV_WC_RDMA_READ, .qp_num = e->p.a.qp->qp_num,
		}, "4 MiB READ with a short transport timeout");
	EXPECT_SAME_BYTES(e->ba.p, img, e->ba.size, "4 READs of 4 MiB");
	free(img);
}

/* ---- inline ------------------------------------------------------------ */

TEST_F(rc, inline_data)
{
	struct rc_opts o = { .max_inline = 256 };
	size_t max, sizes[7];
	unsigned int i;
	int k = 0;

	env_create(_metadata, self, &self->e, &o, 64 * 1024);
	max = self->e.p.a.cap.max_inline_data;
	TH_LOG("asked 256 inline bytes, granted %zu", max);
	if (!max)
		RC_SKIP_ON_RXE(return, "the device grants no inline data");
	sizes[0] = 0;
	sizes[1] = 1;
	sizes[2] = 2;
	sizes[3] = 3;
	sizes[4] = max / 2 + 1;
	sizes[5] = max - 1;
	sizes[6] = max;
	for (i = 0; i < 7; i++, k += 4) {
		int nsge = sizes[i] >= 3 ? 3 : 1;

		rc_xfer_inline(_metadata, &self->e, sizes[i], nsge, k);
	}

	rc_inline_too_long(_metadata, &self->e, max);
}

/* ---- many WRs, unsignaled WRs ------------------------------------------ */

#define NWR 64
#define SLOT 4096

static size_t wr_len(int round, int i)
{
	return 1 + (i * 997 + round * 331) % 3999;
}

/*
 * NWR SENDs of different sizes posted before polling anything; the first
 * half as one linked list, the rest one by one. Only the WRs in @signaled
 * ask for a completion (all if sq_sig_all). Receives are all posted as one
 * list. Completions come in posting order.
 */
static void many_sends(struct __test_metadata *_metadata, struct rc_env *e,
		       int round, int signal_all_flag, int sq_sig_all)
{
	struct ibv_recv_wr rwr[NWR], *rbad = NULL;
	struct ibv_send_wr swr[NWR], *sbad = NULL;
	struct ibv_sge rsge[NWR], ssge[NWR];
	struct ibv_wc wc[NWR + 1];
	uint8_t *img;
	int i, n, nsig;

	rc_fill(e->bb.p, e->bb.size, 7777 + round, 0);
	img = malloc(e->bb.size);
	ASSERT_NE(NULL, img);
	memcpy(img, e->bb.p, e->bb.size);
	for (i = 0; i < NWR; i++) {
		size_t len = wr_len(round, i);

		rsge[i].addr = (uintptr_t)(e->bb.p + i * SLOT + i % 7);
		rsge[i].length = SLOT - 8;
		rsge[i].lkey = e->bb.mr->lkey;
		rwr[i].wr_id = 0x5000 + i;
		rwr[i].sg_list = &rsge[i];
		rwr[i].num_sge = 1;
		rwr[i].next = i + 1 < NWR ? &rwr[i + 1] : NULL;

		rc_fill(e->ba.p + i * SLOT + i % 5, len, round * 100 + i, 0);
		rc_fill(img + i * SLOT + i % 7, len, round * 100 + i, 0);
		ssge[i].addr = (uintptr_t)(e->ba.p + i * SLOT + i % 5);
		ssge[i].length = len;
		ssge[i].lkey = e->ba.mr->lkey;
		memset(&swr[i], 0, sizeof(swr[i]));
		swr[i].wr_id = 0x6000 + i;
		swr[i].sg_list = &ssge[i];
		swr[i].num_sge = 1;
		swr[i].opcode = IBV_WR_SEND;
		if (signal_all_flag || i == NWR - 1)
			swr[i].send_flags = IBV_SEND_SIGNALED;
		swr[i].next = i + 1 < NWR / 2 ? &swr[i + 1] : NULL;
	}
	ASSERT_EQ(0, ibv_post_recv(e->p.b.qp, rwr, &rbad));
	ASSERT_EQ(0, ibv_post_send(e->p.a.qp, &swr[0], &sbad));
	for (i = NWR / 2; i < NWR; i++)
		ASSERT_EQ(0, ibv_post_send(e->p.a.qp, &swr[i], &sbad));

	nsig = signal_all_flag || sq_sig_all ? NWR : 1;
	n = rc_poll(e->p.a.scq, wc, nsig, RC_TIMEOUT_MS);
	ASSERT_EQ(nsig, n);
	for (i = 0; i < n; i++)
		rc_wc_check(_metadata, &wc[i], &(struct rc_wc_exp){
			.wr_id = 0x6000 + (nsig == 1 ? NWR - 1 : i),
			.status = IBV_WC_SUCCESS, .opcode = IBV_WC_SEND,
			.qp_num = e->p.a.qp->qp_num,
		}, "send");
	EXPECT_CQ_EMPTY(e->p.a.scq, "after the signaled sends");

	n = rc_poll(e->p.b.rcq, wc, NWR, RC_TIMEOUT_MS);
	ASSERT_EQ(NWR, n);
	for (i = 0; i < n; i++)
		rc_wc_check(_metadata, &wc[i], &(struct rc_wc_exp){
			.wr_id = 0x5000 + i, .status = IBV_WC_SUCCESS,
			.opcode = IBV_WC_RECV, .recv = 1,
			.byte_len = wr_len(round, i),
			.qp_num = e->p.b.qp->qp_num,
		}, "recv");
	EXPECT_SAME_BYTES(e->bb.p, img, e->bb.size, "64 receive buffers");
	free(img);
}

TEST_F(rc, many_in_flight)
{
	struct rc_opts o = { .max_send_wr = NWR, .max_recv_wr = NWR };

	env_create(_metadata, self, &self->e, &o, NWR * SLOT);
	many_sends(_metadata, &self->e, 0, 1, 0);
	many_sends(_metadata, &self->e, 1, 1, 0);
}

/*
 * Unsignaled SENDs, then a signaled one: one send completion. With a send
 * queue of exactly NWR, the second and third rounds only fit if the
 * signaled completion retired the unsignaled WRs before it.
 */
TEST_F(rc, unsignaled)
{
	struct rc_opts o = { .max_send_wr = NWR, .max_recv_wr = NWR };

	env_create(_metadata, self, &self->e, &o, NWR * SLOT);
	many_sends(_metadata, &self->e, 0, 0, 0);
	many_sends(_metadata, &self->e, 1, 0, 0);
	many_sends(_metadata, &self->e, 2, 0, 0);
}

/* sq_sig_all: every WR completes, whatever its flags. */
TEST_F(rc, sq_sig_all)
{
	struct rc_opts o = {
		.max_send_wr = NWR, .max_recv_wr = NWR, .sq_sig_all = 1,
	};

	env_create(_metadata, self, &self->e, &o, NWR * SLOT);
	many_sends(_metadata, &self->e, 0, 0, 1);
}

/* ---- completion channel ------------------------------------------------ */

TEST_F(rc, comp_channel)
{
	struct rc_opts o = { .channel = 1 };
	struct rc_env *e = &self->e;
	struct ibv_wc wc;

	env_create(_metadata, self, e, &o, 64 * 1024);
	ASSERT_EQ(0, ibv_req_notify_cq(e->p.b.rcq, 0));
	ASSERT_EQ(0, rc_post_recv(&e->p.b, 1, &e->bb, 0, 1000));
	/* Nothing happened yet: no event. */
	EXPECT_EQ(0, rc_wait_cq_event(e->p.b.ch, e->p.b.rcq, RC_QUIET_MS));

	/* The classic pattern: sleep on the channel, then poll. */
	ASSERT_EQ(0, rc_post_send(&e->p.a, 2, IBV_WR_SEND, &e->ba, 0, 500,
				  IBV_SEND_SIGNALED, 0, 0));
	ASSERT_EQ(1, rc_wait_cq_event(e->p.b.ch, e->p.b.rcq, RC_TIMEOUT_MS));
	ASSERT_EQ(1, ibv_poll_cq(e->p.b.rcq, 1, &wc));
	rc_wc_check(_metadata, &wc, &(struct rc_wc_exp){
		.wr_id = 1, .status = IBV_WC_SUCCESS, .opcode = IBV_WC_RECV,
		.recv = 1, .byte_len = 500,
		.qp_num = e->p.b.qp->qp_num,
	}, "recv after event");
	rc_expect_wc(_metadata, e->p.a.scq, &(struct rc_wc_exp){
		.wr_id = 2, .status = IBV_WC_SUCCESS, .opcode = IBV_WC_SEND,
		.qp_num = e->p.a.qp->qp_num,
	}, "send");

	/* Not re-armed: the next completion raises no event. */
	rc_xfer(_metadata, e, &(struct rc_xfer){
		.op = IBV_WR_SEND, .len = 77, .lsge = 1, .rsge = 1,
		.seed = 4000, .wr_id = 0x40,
	});
	EXPECT_EQ(0, rc_wait_cq_event(e->p.b.ch, e->p.b.rcq, RC_QUIET_MS));

	/* Re-armed: it does, also for a WRITE with immediate. */
	ASSERT_EQ(0, ibv_req_notify_cq(e->p.b.rcq, 0));
	rc_xfer(_metadata, e, &(struct rc_xfer){
		.op = IBV_WR_RDMA_WRITE_WITH_IMM, .len = 99, .lsge = 1,
		.imm = 5, .seed = 4001, .wr_id = 0x50,
	});
	EXPECT_EQ(1, rc_wait_cq_event(e->p.b.ch, e->p.b.rcq, RC_TIMEOUT_MS));
}

/* Armed for solicited only: a plain SEND does not wake, a solicited does. */
TEST_F(rc, solicited)
{
	struct rc_opts o = { .channel = 1 };
	struct rc_env *e = &self->e;

	env_create(_metadata, self, e, &o, 64 * 1024);
	ASSERT_EQ(0, ibv_req_notify_cq(e->p.b.rcq, 1));
	rc_xfer(_metadata, e, &(struct rc_xfer){
		.op = IBV_WR_SEND, .len = 10, .lsge = 1, .rsge = 1,
		.seed = 4100, .wr_id = 0x10,
	});
	rc_xfer(_metadata, e, &(struct rc_xfer){
		.op = IBV_WR_SEND_WITH_IMM, .len = 10, .lsge = 1, .rsge = 1,
		.imm = 1, .seed = 4101, .wr_id = 0x20,
	});
	EXPECT_EQ(0, rc_wait_cq_event(e->p.b.ch, e->p.b.rcq, RC_QUIET_MS)) {
		TH_LOG("a non-solicited receive woke a solicited-only CQ");
	}
	rc_xfer(_metadata, e, &(struct rc_xfer){
		.op = IBV_WR_SEND, .len = 11, .lsge = 1, .rsge = 1,
		.flags = IBV_SEND_SOLICITED, .seed = 4102, .wr_id = 0x30,
	});
	EXPECT_EQ(1, rc_wait_cq_event(e->p.b.ch, e->p.b.rcq, RC_TIMEOUT_MS));

	ASSERT_EQ(0, ibv_req_notify_cq(e->p.b.rcq, 1));
	rc_xfer(_metadata, e, &(struct rc_xfer){
		.op = IBV_WR_RDMA_WRITE_WITH_IMM, .len = 12, .lsge = 1,
		.imm = 2, .flags = IBV_SEND_SOLICITED, .seed = 4103,
		.wr_id = 0x40,
	});
	EXPECT_EQ(1, rc_wait_cq_event(e->p.b.ch, e->p.b.rcq, RC_TIMEOUT_MS));
}

/* ---- RNR and retries ---------------------------------------------------- */

/* A SEND that finds no receive is retried (RNR NAK) until one is posted. */
TEST_F(rc, rnr_retry)
{
	struct rc_env *e = &self->e;

	env_create(_metadata, self, e, NULL, 64 * 1024);
	rc_fill(e->ba.p, 300, 5000, 0);
	ASSERT_EQ(0, rc_post_send(&e->p.a, 1, IBV_WR_SEND, &e->ba, 0, 300,
				  IBV_SEND_SIGNALED, 0, 0));
	EXPECT_CQ_EMPTY(e->p.a.scq, "send without a receive");
	ASSERT_EQ(0, rc_post_recv(&e->p.b, 2, &e->bb, 0, 300));
	rc_expect_wc(_metadata, e->p.a.scq, &(struct rc_wc_exp){
		.wr_id = 1, .status = IBV_WC_SUCCESS, .opcode = IBV_WC_SEND,
		.qp_num = e->p.a.qp->qp_num,
	}, "send after RNR");
	rc_expect_wc(_metadata, e->p.b.rcq, &(struct rc_wc_exp){
		.wr_id = 2, .status = IBV_WC_SUCCESS, .opcode = IBV_WC_RECV,
		.recv = 1, .byte_len = 300, .qp_num = e->p.b.qp->qp_num,
	}, "recv after RNR");
	EXPECT_SAME_BYTES(e->bb.p, e->ba.p, 300, "data after RNR");
}

/* RNR retries are finite unless rnr_retry is 7. */
TEST_F(rc, rnr_retry_exceeded)
{
	struct rc_opts o = { .rnr_retry = 1 };
	struct rc_env *e = &self->e;

	env_create(_metadata, self, e, &o, 64 * 1024);
	ASSERT_EQ(0, rc_post_send(&e->p.a, 1, IBV_WR_SEND, &e->ba, 0, 100,
				  IBV_SEND_SIGNALED, 0, 0));
	rc_expect_wc(_metadata, e->p.a.scq, &(struct rc_wc_exp){
		.wr_id = 1, .status = IBV_WC_RNR_RETRY_EXC_ERR,
		.qp_num = e->p.a.qp->qp_num,
	}, "send that never finds a receive");
	EXPECT_EQ(IBV_QPS_ERR, rc_qp_state(e->p.a.qp));
	fresh_pair_works(_metadata, self);
}

/*
 * The peer QP is gone: the requester exhausts its retries. retry_cnt 7 is
 * 7 retries (only rnr_retry 7 means "infinite"), so with timeout 16
 * (268 ms) this takes about 8 x 268 ms.
 */
TEST_F_TIMEOUT(rc, retry_exceeded, 60)
{
	struct rc_opts o = { .retry_cnt = 7 };
	struct rc_env *e = &self->e;
	struct ibv_wc wc;

	if (rc_cfg.is_rxe) {
		RC_QUIRK("retry_cnt 7 retries forever: using 6");
		o.retry_cnt = 6;
	}
	env_create(_metadata, self, e, &o, 64 * 1024);
	ASSERT_EQ(0, ibv_destroy_qp(e->p.b.qp));
	e->p.b.qp = NULL;
	ASSERT_EQ(0, rc_post_send(&e->p.a, 1, IBV_WR_SEND, &e->ba, 0, 100,
				  IBV_SEND_SIGNALED, 0, 0));
	ASSERT_EQ(1, rc_poll(e->p.a.scq, &wc, 1, 30000));
	rc_wc_check(_metadata, &wc, &(struct rc_wc_exp){
		.wr_id = 1, .status = IBV_WC_RETRY_EXC_ERR,
		.qp_num = e->p.a.qp->qp_num,
	}, "send to a destroyed QP");
	EXPECT_EQ(IBV_QPS_ERR, rc_qp_state(e->p.a.qp));
	fresh_pair_works(_metadata, self);
}

/* ---- remote access errors ---------------------------------------------- */

/*
 * A's request @wr fails at B with a remote access error: A gets
 * IBV_WC_REM_ACCESS_ERR, the WR after it is flushed, both QPs go to the
 * error state (on B, the class C "remote access" responder error), B's
 * posted receive is flushed, and B's memory is untouched.
 */
static void expect_remote_error(struct __test_metadata *_metadata,
				FIXTURE_DATA(rc) *self, struct rc_env *e,
				struct ibv_send_wr *wr,
				enum ibv_wc_status status,
				enum ibv_wc_status recv_alt,
				const char *what)
{
	struct ibv_wc wc;
	struct ibv_send_wr next, *bad = NULL;
	struct ibv_sge sge = {
		.addr = (uintptr_t)e->ba.p, .length = 8,
		.lkey = e->ba.mr->lkey,
	};
	uint8_t *img;
	int ret;

	rc_fill(e->bb.p, e->bb.size, 0xb0b0, 0);
	img = malloc(e->bb.size);
	ASSERT_NE(NULL, img);
	memcpy(img, e->bb.p, e->bb.size);

	ASSERT_EQ(0, rc_post_recv(&e->p.b, 0x77, &e->bb, 0, 64));
	rc_chain_send(wr, &next, &sge);
	wr->send_flags |= IBV_SEND_SIGNALED;
	ret = ibv_post_send(e->p.a.qp, wr, &bad);
	ASSERT_EQ(0, ret);

	rc_expect_failed_flushed(_metadata, &e->p.a, wr->wr_id, status, what);
	/* The responder: class C error, to the error state, receive flushed. */
	ASSERT_EQ(1, rc_poll(e->p.b.rcq, &wc, 1, RC_TIMEOUT_MS)) {
		TH_LOG("the responder's receive was not flushed");
	}
	if (recv_alt && rc_cfg.is_rxe && wc.status == IBV_WC_REM_ACCESS_ERR) {
		RC_QUIRK("the responder's receive completes with "
			 "REM_ACCESS_ERR, not LOC_ACCESS_ERR");
		wc.status = recv_alt;
	}
	rc_wc_check(_metadata, &wc, &(struct rc_wc_exp){
		.wr_id = 0x77,
		.status = recv_alt && wc.status == recv_alt ?
			  recv_alt : IBV_WC_WR_FLUSH_ERR,
		.qp_num = e->p.b.qp->qp_num,
	}, "responder's receive");
	EXPECT_EQ(IBV_QPS_ERR, rc_qp_state(e->p.b.qp));
	EXPECT_SAME_BYTES(e->bb.p, img, e->bb.size, "responder memory");
	free(img);
	fresh_pair_works(_metadata, self);
}

TEST_F(rc, bad_rkey_write)
{
	struct ibv_send_wr wr;
	struct ibv_sge sge;

	env_create(_metadata, self, &self->e, NULL, 64 * 1024);
	rdma_wr(&wr, &sge, IBV_WR_RDMA_WRITE, &self->e.ba, 100,
		(uintptr_t)self->e.bb.p,
		bad_key(&self->e, self->e.bb.mr->rkey));
	expect_remote_error(_metadata, self, &self->e, &wr,
			    IBV_WC_REM_ACCESS_ERR, 0, "WRITE with a bad rkey");
}

TEST_F(rc, bad_rkey_read)
{
	struct ibv_send_wr wr;
	struct ibv_sge sge;

	env_create(_metadata, self, &self->e, NULL, 64 * 1024);
	rdma_wr(&wr, &sge, IBV_WR_RDMA_READ, &self->e.ba, 100,
		(uintptr_t)self->e.bb.p,
		bad_key(&self->e, self->e.bb.mr->rkey));
	expect_remote_error(_metadata, self, &self->e, &wr,
			    IBV_WC_REM_ACCESS_ERR, 0, "READ with a bad rkey");
}

TEST_F(rc, bad_rkey_write_imm)
{
	struct ibv_send_wr wr;
	struct ibv_sge sge;

	env_create(_metadata, self, &self->e, NULL, 64 * 1024);
	rdma_wr(&wr, &sge, IBV_WR_RDMA_WRITE_WITH_IMM, &self->e.ba, 100,
		(uintptr_t)self->e.bb.p,
		bad_key(&self->e, self->e.bb.mr->rkey));
	wr.imm_data = htobe32(1);
	/*
	 * The receive WQE this WRITE would have consumed completes with
	 * IBV_WC_LOC_ACCESS_ERR ("a protection error on a local data buffer
	 * during an RDMA Write with Immediate", ibv_poll_cq(3)), or, if the
	 * device had not consumed it yet, is flushed.
	 */
	expect_remote_error(_metadata, self, &self->e, &wr,
			    IBV_WC_REM_ACCESS_ERR, IBV_WC_LOC_ACCESS_ERR,
			    "WRITE_IMM, bad rkey");
}

/* Past the end of the MR (by one byte, and wrapping around 2^64). */
TEST_F(rc, oob_write_end)
{
	struct ibv_send_wr wr;
	struct ibv_sge sge;
	struct rc_env *e = &self->e;

	env_create(_metadata, self, e, NULL, 64 * 1024);
	rdma_wr(&wr, &sge, IBV_WR_RDMA_WRITE, &e->ba, 100,
		(uintptr_t)e->bb.p + e->bb.size - 99, e->bb.mr->rkey);
	expect_remote_error(_metadata, self, e, &wr, IBV_WC_REM_ACCESS_ERR, 0,
			    "WRITE one byte past the MR");
}

TEST_F(rc, oob_write_wrap)
{
	struct ibv_send_wr wr;
	struct ibv_sge sge;
	struct rc_env *e = &self->e;

	env_create(_metadata, self, e, NULL, 64 * 1024);
	rdma_wr(&wr, &sge, IBV_WR_RDMA_WRITE, &e->ba, 4096,
		~0ULL - 100, e->bb.mr->rkey);
	expect_remote_error(_metadata, self, e, &wr, IBV_WC_REM_ACCESS_ERR, 0,
			    "WRITE at 2^64 - 101");
}

/* Before the start of the MR. */
TEST_F(rc, oob_read_start)
{
	struct ibv_send_wr wr;
	struct ibv_sge sge;
	struct rc_env *e = &self->e;

	env_create(_metadata, self, e, NULL, 64 * 1024);
	rdma_wr(&wr, &sge, IBV_WR_RDMA_READ, &e->ba, 100,
		(uintptr_t)e->bb.p - 1, e->bb.mr->rkey);
	expect_remote_error(_metadata, self, e, &wr, IBV_WC_REM_ACCESS_ERR, 0,
			    "READ one byte before the MR");
}

TEST_F(rc, oob_read_end)
{
	struct ibv_send_wr wr;
	struct ibv_sge sge;
	struct rc_env *e = &self->e;

	env_create(_metadata, self, e, NULL, 64 * 1024);
	rdma_wr(&wr, &sge, IBV_WR_RDMA_READ, &e->ba, 5000,
		(uintptr_t)e->bb.p + e->bb.size - 4999, e->bb.mr->rkey);
	expect_remote_error(_metadata, self, e, &wr, IBV_WC_REM_ACCESS_ERR, 0,
			    "READ one byte past the MR");
}

/* An MR of B without REMOTE_WRITE (resp. REMOTE_READ). */
static void mr_access_case(struct __test_metadata *_metadata,
			   FIXTURE_DATA(rc) *self, enum ibv_wr_opcode op,
			   int access, const char *what)
{
	struct rc_env *e = &self->e;
	struct ibv_send_wr wr;
	struct ibv_sge sge;
	struct ibv_mr *mr;

	env_create(_metadata, self, e, NULL, 64 * 1024);
	/* A second MR over B's buffer, with fewer rights; same memory. */
	mr = ibv_reg_mr(self->db->pd, e->bb.p, e->bb.size, access);
	ASSERT_NE(NULL, mr);
	rdma_wr(&wr, &sge, op, &e->ba, 100, (uintptr_t)e->bb.p + 64,
		mr->rkey);
	expect_remote_error(_metadata, self, e, &wr, IBV_WC_REM_ACCESS_ERR, 0,
			    what);
	EXPECT_EQ(0, ibv_dereg_mr(mr));
}

TEST_F(rc, mr_no_remote_write)
{
	mr_access_case(_metadata, self, IBV_WR_RDMA_WRITE,
		       IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_READ,
		       "WRITE to an MR without REMOTE_WRITE");
}

TEST_F(rc, mr_no_remote_read)
{
	mr_access_case(_metadata, self, IBV_WR_RDMA_READ,
		       IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE,
		       "READ from an MR without REMOTE_READ");
}

TEST_F(rc, mr_local_only)
{
	mr_access_case(_metadata, self, IBV_WR_RDMA_WRITE,
		       IBV_ACCESS_LOCAL_WRITE,
		       "WRITE to an MR with local access only");
}

/* An rkey that was valid, after ibv_dereg_mr. */
TEST_F(rc, rkey_after_dereg)
{
	struct rc_env *e = &self->e;
	struct ibv_send_wr wr;
	struct ibv_sge sge;
	struct ibv_mr *mr;
	uint32_t rkey;

	env_create(_metadata, self, e, NULL, 64 * 1024);
	mr = ibv_reg_mr(self->db->pd, e->bb.p, e->bb.size, RC_ACCESS_ALL);
	ASSERT_NE(NULL, mr);
	rkey = mr->rkey;
	/* It works while registered... */
	rc_fill(e->ba.p, 64, 6000, 0);
	rdma_wr(&wr, &sge, IBV_WR_RDMA_WRITE, &e->ba, 64,
		(uintptr_t)e->bb.p, rkey);
	wr.send_flags = IBV_SEND_SIGNALED;
	ASSERT_EQ(0, ibv_post_send(e->p.a.qp, &wr, &(struct ibv_send_wr *){0}));
	rc_expect_wc(_metadata, e->p.a.scq, &(struct rc_wc_exp){
		.wr_id = 1, .status = IBV_WC_SUCCESS,
		.opcode = IBV_WC_RDMA_WRITE, .qp_num = e->p.a.qp->qp_num,
	}, "WRITE with the live rkey");
	EXPECT_SAME_BYTES(e->bb.p, e->ba.p, 64, "WRITE with the live rkey");
	/* ... and not after. */
	ASSERT_EQ(0, ibv_dereg_mr(mr));
	rdma_wr(&wr, &sge, IBV_WR_RDMA_WRITE, &e->ba, 64,
		(uintptr_t)e->bb.p, rkey);
	expect_remote_error(_metadata, self, e, &wr, IBV_WC_REM_ACCESS_ERR, 0,
			    "WRITE with a deregistered rkey");
}

/* An MR of another PD on B's device. */
TEST_F(rc, rkey_other_pd)
{
	struct rc_env *e = &self->e;
	struct ibv_send_wr wr;
	struct ibv_sge sge;
	struct ibv_pd *pd2;
	struct ibv_mr *mr;

	env_create(_metadata, self, e, NULL, 64 * 1024);
	pd2 = ibv_alloc_pd(self->db->ctx);
	ASSERT_NE(NULL, pd2);
	mr = ibv_reg_mr(pd2, e->bb.p, e->bb.size, RC_ACCESS_ALL);
	ASSERT_NE(NULL, mr);
	rdma_wr(&wr, &sge, IBV_WR_RDMA_WRITE, &e->ba, 64,
		(uintptr_t)e->bb.p, mr->rkey);
	expect_remote_error(_metadata, self, e, &wr, IBV_WC_REM_ACCESS_ERR, 0,
			    "WRITE to an MR of another PD");
	EXPECT_EQ(0, ibv_dereg_mr(mr));
	EXPECT_EQ(0, ibv_dealloc_pd(pd2));
}

/*
 * B's QP was not given REMOTE_WRITE in its access flags. The IB spec makes
 * this an Invalid Request NAK (C9-? "operation not enabled on the QP");
 * some devices answer with a remote access error. Either way no byte of B
 * may change.
 */
TEST_F(rc, qp_no_remote_write)
{
	struct rc_opts o = { .access = IBV_ACCESS_REMOTE_READ };
	struct rc_env *e = &self->e;
	struct ibv_send_wr wr, *bad = NULL;
	struct ibv_sge sge;
	struct ibv_wc wc;
	uint8_t *img;

	env_create(_metadata, self, e, &o, 64 * 1024);
	rc_fill(e->bb.p, e->bb.size, 0xb1, 0);
	img = malloc(e->bb.size);
	ASSERT_NE(NULL, img);
	memcpy(img, e->bb.p, e->bb.size);
	rdma_wr(&wr, &sge, IBV_WR_RDMA_WRITE, &e->ba, 100,
		(uintptr_t)e->bb.p, e->bb.mr->rkey);
	wr.send_flags = IBV_SEND_SIGNALED;
	ASSERT_EQ(0, ibv_post_send(e->p.a.qp, &wr, &bad));
	ASSERT_EQ(1, rc_poll(e->p.a.scq, &wc, 1, RC_TIMEOUT_MS));
	EXPECT_EQ(1, wc.wr_id);
	EXPECT_TRUE(wc.status == IBV_WC_REM_INV_REQ_ERR ||
		    wc.status == IBV_WC_REM_ACCESS_ERR) {
		TH_LOG("status %s", ibv_wc_status_str(wc.status));
	}
	TH_LOG("WRITE to a QP without REMOTE_WRITE: %s",
	       ibv_wc_status_str(wc.status));
	EXPECT_SAME_BYTES(e->bb.p, img, e->bb.size, "responder memory");
	free(img);
	fresh_pair_works(_metadata, self);
}

/* ---- local errors -------------------------------------------------------- */

/*
 * B's receive buffer is smaller than the SEND: B's receive completes with
 * IBV_WC_LOC_LEN_ERR, A's send with IBV_WC_REM_INV_REQ_ERR, both QPs go to
 * the error state, and no byte outside B's receive buffer changes.
 */
TEST_F(rc, recv_too_small)
{
	struct rc_env *e = &self->e;
	struct ibv_wc wc;
	uint8_t *img;

	env_create(_metadata, self, e, NULL, 64 * 1024);
	rc_fill(e->bb.p, e->bb.size, 0xb2, 0);
	img = malloc(e->bb.size);
	ASSERT_NE(NULL, img);
	memcpy(img, e->bb.p, e->bb.size);
	rc_fill(e->ba.p, 3000, 0xa2, 0);

	ASSERT_EQ(0, rc_post_recv(&e->p.b, 0x10, &e->bb, 100, 10));
	ASSERT_EQ(0, rc_post_send(&e->p.a, 0x20, IBV_WR_SEND, &e->ba, 0,
				  3000, IBV_SEND_SIGNALED, 0, 0));
	ASSERT_EQ(1, rc_poll(e->p.b.rcq, &wc, 1, RC_TIMEOUT_MS));
	if (rc_cfg.is_rxe && wc.status == IBV_WC_LOC_QP_OP_ERR) {
		RC_QUIRK("a too small receive completes with LOC_QP_OP_ERR, "
			 "not LOC_LEN_ERR");
		wc.status = IBV_WC_LOC_LEN_ERR;
	}
	rc_wc_check(_metadata, &wc, &(struct rc_wc_exp){
		.wr_id = 0x10, .status = IBV_WC_LOC_LEN_ERR,
		.qp_num = e->p.b.qp->qp_num,
	}, "receive too small");
	ASSERT_EQ(1, rc_poll(e->p.a.scq, &wc, 1, RC_TIMEOUT_MS));
	if (rc_cfg.is_rxe && wc.status == IBV_WC_REM_OP_ERR) {
		RC_QUIRK("a SEND into a too small receive completes with "
			 "REM_OP_ERR, not REM_INV_REQ_ERR");
		wc.status = IBV_WC_REM_INV_REQ_ERR;
	}
	rc_wc_check(_metadata, &wc, &(struct rc_wc_exp){
		.wr_id = 0x20, .status = IBV_WC_REM_INV_REQ_ERR,
		.qp_num = e->p.a.qp->qp_num,
	}, "send into a too small receive");
	EXPECT_EQ(IBV_QPS_ERR, rc_qp_state(e->p.a.qp));
	EXPECT_EQ(IBV_QPS_ERR, rc_qp_state(e->p.b.qp));
	/* Inside the 10 bytes the content is undefined; outside untouched. */
	memcpy(img + 100, e->bb.p + 100, 10);
	EXPECT_SAME_BYTES(e->bb.p, img, e->bb.size, "around the receive");
	free(img);
	fresh_pair_works(_metadata, self);
}

/* A gathers from a bad lkey: IBV_WC_LOC_PROT_ERR; B is not disturbed. */
TEST_F(rc, bad_lkey_send)
{
	struct rc_env *e = &self->e;
	struct ibv_sge sge = {
		.addr = (uintptr_t)e->ba.p, .length = 100,
	};
	struct ibv_send_wr wr = {
		.wr_id = 0x30, .sg_list = &sge, .num_sge = 1,
		.opcode = IBV_WR_SEND, .send_flags = IBV_SEND_SIGNALED,
	}, *bad = NULL;
	struct ibv_wc wc;

	env_create(_metadata, self, e, NULL, 64 * 1024);
	sge.addr = (uintptr_t)e->ba.p;
	sge.lkey = bad_key(e, e->ba.mr->lkey);
	ASSERT_EQ(0, rc_post_recv(&e->p.b, 0x31, &e->bb, 0, 200));
	ASSERT_EQ(0, ibv_post_send(e->p.a.qp, &wr, &bad));
	ASSERT_EQ(1, rc_poll(e->p.a.scq, &wc, 1, RC_TIMEOUT_MS));
	if (rc_cfg.is_rxe && wc.status == IBV_WC_LOC_QP_OP_ERR) {
		RC_QUIRK("a bad gather lkey completes with LOC_QP_OP_ERR, "
			 "not LOC_PROT_ERR");
		wc.status = IBV_WC_LOC_PROT_ERR;
	}
	rc_wc_check(_metadata, &wc, &(struct rc_wc_exp){
		.wr_id = 0x30, .status = IBV_WC_LOC_PROT_ERR,
		.qp_num = e->p.a.qp->qp_num,
	}, "SEND from a bad lkey");
	EXPECT_EQ(IBV_QPS_ERR, rc_qp_state(e->p.a.qp));
	EXPECT_CQ_EMPTY(e->p.b.rcq, "the peer of a local error");
	EXPECT_EQ(IBV_QPS_RTS, rc_qp_state(e->p.b.qp));
	fresh_pair_works(_metadata, self);
}

/* A READ scattering into a bad lkey: IBV_WC_LOC_PROT_ERR. */
TEST_F(rc, bad_lkey_read)
{
	struct rc_env *e = &self->e;
	struct ibv_send_wr wr, *bad = NULL;
	struct ibv_sge sge;

	env_create(_metadata, self, e, NULL, 64 * 1024);
	rdma_wr(&wr, &sge, IBV_WR_RDMA_READ, &e->ba, 100,
		(uintptr_t)e->bb.p, e->bb.mr->rkey);
	sge.lkey = bad_key(e, e->ba.mr->lkey);
	wr.send_flags = IBV_SEND_SIGNALED;
	ASSERT_EQ(0, ibv_post_send(e->p.a.qp, &wr, &bad));
	rc_expect_wc(_metadata, e->p.a.scq, &(struct rc_wc_exp){
		.wr_id = 1, .status = IBV_WC_LOC_PROT_ERR,
		.qp_num = e->p.a.qp->qp_num,
	}, "READ into a bad lkey");
	EXPECT_EQ(IBV_QPS_ERR, rc_qp_state(e->p.a.qp));
	fresh_pair_works(_metadata, self);
}

/*
 * B's receive WQE has a bad lkey: B's receive completes with
 * IBV_WC_LOC_PROT_ERR and A gets IBV_WC_REM_OP_ERR (NAK "remote
 * operational error"); both QPs go to the error state.
 */
TEST_F(rc, bad_lkey_recv)
{
	struct rc_env *e = &self->e;
	struct ibv_sge sge;
	struct ibv_wc wc;

	env_create(_metadata, self, e, NULL, 64 * 1024);
	sge.addr = (uintptr_t)e->bb.p;
	sge.length = 200;
	sge.lkey = bad_key(e, e->bb.mr->lkey);
	ASSERT_EQ(0, rc_post_recv_sgl(&e->p.b, 0x41, &sge, 1));
	ASSERT_EQ(0, rc_post_send(&e->p.a, 0x40, IBV_WR_SEND, &e->ba, 0, 100,
				  IBV_SEND_SIGNALED, 0, 0));
	ASSERT_EQ(1, rc_poll(e->p.b.rcq, &wc, 1, RC_TIMEOUT_MS));
	if (rc_cfg.is_rxe && wc.status == IBV_WC_LOC_QP_OP_ERR)
		RC_QUIRK("bad receive lkey completes with LOC_QP_OP_ERR, not LOC_PROT_ERR");
	else
		rc_wc_check(_metadata, &wc, &(struct rc_wc_exp){
			.wr_id = 0x41, .status = IBV_WC_LOC_PROT_ERR,
			.qp_num = e->p.b.qp->qp_num,
		}, "receive into a bad lkey");
	rc_expect_wc(_metadata, e->p.a.scq, &(struct rc_wc_exp){
		.wr_id = 0x40, .status = IBV_WC_REM_OP_ERR,
		.qp_num = e->p.a.qp->qp_num,
	}, "send to a bad receive lkey");
	EXPECT_EQ(IBV_QPS_ERR, rc_qp_state(e->p.a.qp));
	EXPECT_EQ(IBV_QPS_ERR, rc_qp_state(e->p.b.qp));
	fresh_pair_works(_metadata, self);
}

/* A SEND with more SGEs than the QP was created for is refused. */
TEST_F(rc, too_many_sge)
{
	struct rc_env *e = &self->e;
	struct ibv_sge sge[RC_MAX_SGE * 2 + 1];
	struct ibv_send_wr wr, *bad = NULL;
	struct ibv_recv_wr rwr, *rbad = NULL;
	struct rc_opts o = { .max_send_sge = 2, .max_recv_sge = 2 };
	int i, n;

	env_create(_metadata, self, e, &o, 64 * 1024);
	n = e->p.a.cap.max_send_sge + 1;
	if (n > RC_MAX_SGE * 2 + 1)
		SKIP(return, "the device granted %d send SGEs", n - 1);
	for (i = 0; i < n; i++) {
		sge[i].addr = (uintptr_t)e->ba.p + 8 * i;
		sge[i].length = 8;
		sge[i].lkey = e->ba.mr->lkey;
	}
	memset(&wr, 0, sizeof(wr));
	wr.wr_id = 1;
	wr.sg_list = sge;
	wr.num_sge = n;
	wr.opcode = IBV_WR_SEND;
	wr.send_flags = IBV_SEND_SIGNALED;
	EXPECT_NE(0, ibv_post_send(e->p.a.qp, &wr, &bad));
	EXPECT_EQ(&wr, bad);
	memset(&rwr, 0, sizeof(rwr));
	rwr.wr_id = 2;
	rwr.sg_list = sge;
	rwr.num_sge = e->p.b.cap.max_recv_sge + 1;
	EXPECT_NE(0, ibv_post_recv(e->p.b.qp, &rwr, &rbad));
	EXPECT_EQ(&rwr, rbad);
	EXPECT_CQ_EMPTY(e->p.a.scq, "refused send");
	rc_xfer(_metadata, e, &(struct rc_xfer){
		.op = IBV_WR_SEND, .len = 30, .lsge = 2, .rsge = 2,
		.seed = 7100, .wr_id = 0x71,
	});
}

/*
 * Posting a send in RESET, INIT or RTR fails immediately (IB spec
 * C10-?: the send queue is not yet enabled), and so does a receive in
 * RESET; a receive posted in INIT is kept. None of the refused WRs may
 * ever execute or complete.
 */
TEST_F(rc, post_not_ready)
{
	struct rc_opts o = { .no_connect = 1 };
	struct rc_env *e = &self->e;
	struct rc_qp *a = &e->p.a;
	struct ibv_qp_attr qa;
	struct ibv_wc wc[8];
	uint8_t *img;
	int n, stale = 0, i;

	env_create(_metadata, self, e, &o, 64 * 1024);
	rc_fill(e->bb.p, e->bb.size, 0xb3, 0);
	img = malloc(e->bb.size);
	ASSERT_NE(NULL, img);
	memcpy(img, e->bb.p, e->bb.size);
	rc_fill(e->ba.p, 4096, 0xa3, 0);

	/* B is ready; the refused WRs would be WRITEs into B's buffer. */
	rc_qp_connect(_metadata, &e->p.b, a, e->p.o.access);

	EXPECT_EQ(IBV_QPS_RESET, rc_qp_state(a->qp));
	EXPECT_NE(0, rc_post_send(a, 0xdead0, IBV_WR_RDMA_WRITE, &e->ba, 0, 8,
				  IBV_SEND_SIGNALED, (uintptr_t)e->bb.p,
				  e->bb.mr->rkey)) {
		TH_LOG("post_send in RESET succeeded");
	}
	EXPECT_NE(0, rc_post_recv(a, 0xdead1, &e->ba, 1000, 100)) {
		TH_LOG("post_recv in RESET succeeded");
	}

	ASSERT_EQ(0, rc_to_init(a, IBV_ACCESS_REMOTE_WRITE |
				IBV_ACCESS_REMOTE_READ));
	EXPECT_NE(0, rc_post_send(a, 0xdead2, IBV_WR_RDMA_WRITE, &e->ba, 0, 8,
				  IBV_SEND_SIGNALED, (uintptr_t)e->bb.p + 8,
				  e->bb.mr->rkey)) {
		TH_LOG("post_send in INIT succeeded");
	}
	/* A receive in INIT is fine: it waits for the QP to be ready. */
	EXPECT_EQ(0, rc_post_recv(a, 0x1a17, &e->ba, 2000, 100));

	rc_rtr_attr(&qa, a, e->p.b.qp->qp_num, &e->p.b.dev->gid, a->rq_psn);
	ASSERT_EQ(0, ibv_modify_qp(a->qp, &qa, RC_RTR_MASK));
	EXPECT_NE(0, rc_post_send(a, 0xdead3, IBV_WR_RDMA_WRITE, &e->ba, 0, 8,
				  IBV_SEND_SIGNALED, (uintptr_t)e->bb.p + 16,
				  e->bb.mr->rkey)) {
		TH_LOG("post_send in RTR succeeded");
	}
	rc_rts_attr(&qa, a, a->sq_psn);
	ASSERT_EQ(0, ibv_modify_qp(a->qp, &qa, RC_RTS_MASK));

	/* The receive posted in INIT gets B's SEND. */
	ASSERT_EQ(0, rc_post_send(&e->p.b, 0xb5, IBV_WR_SEND, &e->bb, 0, 50,
				  IBV_SEND_SIGNALED, 0, 0));
	rc_expect_wc(_metadata, e->p.b.scq, &(struct rc_wc_exp){
		.wr_id = 0xb5, .status = IBV_WC_SUCCESS,
		.opcode = IBV_WC_SEND, .qp_num = e->p.b.qp->qp_num,
	}, "SEND to the receive posted in INIT");
	rc_expect_wc(_metadata, a->rcq, &(struct rc_wc_exp){
		.wr_id = 0x1a17, .status = IBV_WC_SUCCESS,
		.opcode = IBV_WC_RECV, .recv = 1, .byte_len = 50,
		.qp_num = a->qp->qp_num,
	}, "receive posted in INIT");

	/* The first send completion is that of a WR posted in RTS. */
	ASSERT_EQ(0, rc_post_send(a, 0x600d, IBV_WR_RDMA_WRITE, &e->ba, 0, 8,
				  IBV_SEND_SIGNALED, (uintptr_t)e->bb.p + 1000,
				  e->bb.mr->rkey));
	n = rc_poll(a->scq, wc, 8, 2000);
	for (i = 0; i < n; i++)
		if ((wc[i].wr_id & ~0xfULL) == 0xdead0)
			stale++;
	memcpy(img + 1000, e->ba.p, 8);
	if (rc_cfg.is_rxe && stale) {
		RC_QUIRK("%d WRs refused by post_send in RESET/INIT/RTR were "
			 "kept and executed in RTS", stale);
	} else {
		ASSERT_EQ(1, n);
		rc_wc_check(_metadata, &wc[0], &(struct rc_wc_exp){
			.wr_id = 0x600d, .status = IBV_WC_SUCCESS,
			.opcode = IBV_WC_RDMA_WRITE, .qp_num = a->qp->qp_num,
		}, "the first WRITE in RTS");
		EXPECT_SAME_BYTES(e->bb.p, img, e->bb.size,
				  "B's memory: only the RTS WRITE landed");
	}
	free(img);
	fresh_pair_works(_metadata, self);
}

/*
 * A tiny send CQ that is never polled overflows: IBV_EVENT_CQ_ERR. (The
 * spec lets the QPs on it go to the error state too; not checked.)
 */
TEST_F(rc, cq_overflow)
{
	struct rc_opts o = { .send_cqe = 1, .max_send_wr = 32,
			     .max_recv_wr = 64 };
	struct rc_env *e = &self->e;
	struct ibv_async_event ev;
	int i, n;

	env_create(_metadata, self, e, &o, 64 * 1024);
	n = e->p.a.scq->cqe + 4;
	TH_LOG("send CQ of %d entries, %d signaled SENDs", e->p.a.scq->cqe, n);
	ASSERT_LE(n, 32);
	for (i = 0; i < n; i++)
		ASSERT_EQ(0, rc_post_recv(&e->p.b, 0x100 + i, &e->bb, 64 * i,
					  64));
	for (i = 0; i < n; i++)
		ASSERT_EQ(0, rc_post_send(&e->p.a, 0x200 + i, IBV_WR_SEND,
					  &e->ba, 64 * i, 64,
					  IBV_SEND_SIGNALED, 0, 0));
	ASSERT_EQ(1, rc_wait_async(_metadata, self->da->ctx, IBV_EVENT_CQ_ERR,
				   &ev, RC_TIMEOUT_MS)) {
		TH_LOG("no IBV_EVENT_CQ_ERR");
	}
	EXPECT_EQ(e->p.a.scq, ev.element.cq);
	TH_LOG("after the overflow the QP is in state %d",
	       rc_qp_state(e->p.a.qp));
	fresh_pair_works(_metadata, self);
}

/* ---- QP state machine ---------------------------------------------------- */

#define INIT_MASK (IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | \
		   IBV_QP_ACCESS_FLAGS)

TEST_F(rc, qp_state_machine)
{
	static const int init_req[] = {
		IBV_QP_PKEY_INDEX, IBV_QP_PORT, IBV_QP_ACCESS_FLAGS,
	};
	static const int rtr_req[] = {
		IBV_QP_AV, IBV_QP_PATH_MTU, IBV_QP_DEST_QPN, IBV_QP_RQ_PSN,
		IBV_QP_MAX_DEST_RD_ATOMIC, IBV_QP_MIN_RNR_TIMER,
	};
	static const int rts_req[] = {
		IBV_QP_TIMEOUT, IBV_QP_RETRY_CNT, IBV_QP_RNR_RETRY,
		IBV_QP_SQ_PSN, IBV_QP_MAX_QP_RD_ATOMIC,
	};
	struct rc_opts o = { .no_connect = 1 };
	struct rc_env *e = &self->e;
	struct rc_qp *a = &e->p.a, *b = &e->p.b;
	int access = IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ;
	struct ibv_qp_attr qa, init = {
		.qp_state = IBV_QPS_INIT, .port_num = RC_PORT,
		.qp_access_flags = access,
	};
	unsigned int i;

	env_create(_metadata, self, e, &o, 64 * 1024);
	rc_qp_connect(_metadata, b, a, access);
	EXPECT_EQ(IBV_QPS_RESET, rc_qp_state(a->qp));

	/* RESET -> RTR and RESET -> RTS skip INIT: invalid. */
	rc_rtr_attr(&qa, a, b->qp->qp_num, &b->dev->gid, a->rq_psn);
	EXPECT_EQ(EINVAL, ibv_modify_qp(a->qp, &qa, RC_RTR_MASK));
	rc_rts_attr(&qa, a, a->sq_psn);
	EXPECT_EQ(EINVAL, ibv_modify_qp(a->qp, &qa, RC_RTS_MASK));
	EXPECT_EQ(IBV_QPS_RESET, rc_qp_state(a->qp));

	/* RESET -> INIT: each required attribute; no foreign one; port 2. */
	for (i = 0; i < sizeof(init_req) / sizeof(init_req[0]); i++) {
		qa = init;
		EXPECT_EQ(EINVAL, ibv_modify_qp(a->qp, &qa,
						INIT_MASK & ~init_req[i])) {
			TH_LOG("RESET->INIT without attribute %#x",
			       init_req[i]);
		}
	}
	qa = init;
	EXPECT_EQ(EINVAL, ibv_modify_qp(a->qp, &qa, INIT_MASK | IBV_QP_SQ_PSN));
	qa = init;
	qa.port_num = 2;
	EXPECT_EQ(EINVAL, ibv_modify_qp(a->qp, &qa, INIT_MASK));
	EXPECT_EQ(IBV_QPS_RESET, rc_qp_state(a->qp));
	qa = init;
	ASSERT_EQ(0, ibv_modify_qp(a->qp, &qa, INIT_MASK));
	EXPECT_EQ(IBV_QPS_INIT, rc_qp_state(a->qp));
	/* INIT -> INIT is allowed. */
	qa = init;
	EXPECT_EQ(0, ibv_modify_qp(a->qp, &qa, IBV_QP_STATE |
				   IBV_QP_ACCESS_FLAGS));

	/* INIT -> RTS skips RTR. */
	rc_rts_attr(&qa, a, a->sq_psn);
	EXPECT_EQ(EINVAL, ibv_modify_qp(a->qp, &qa, RC_RTS_MASK));
	/* INIT -> RTR: each required attribute. */
	for (i = 0; i < sizeof(rtr_req) / sizeof(rtr_req[0]); i++) {
		rc_rtr_attr(&qa, a, b->qp->qp_num, &b->dev->gid, a->rq_psn);
		EXPECT_EQ(EINVAL, ibv_modify_qp(a->qp, &qa,
						RC_RTR_MASK & ~rtr_req[i])) {
			TH_LOG("INIT->RTR without attribute %#x", rtr_req[i]);
		}
		EXPECT_EQ(IBV_QPS_INIT, rc_qp_state(a->qp));
	}
	rc_rtr_attr(&qa, a, b->qp->qp_num, &b->dev->gid, a->rq_psn);
	ASSERT_EQ(0, ibv_modify_qp(a->qp, &qa, RC_RTR_MASK));
	EXPECT_EQ(IBV_QPS_RTR, rc_qp_state(a->qp));

	/* RTR -> RTS: each required attribute. */
	for (i = 0; i < sizeof(rts_req) / sizeof(rts_req[0]); i++) {
		rc_rts_attr(&qa, a, a->sq_psn);
		EXPECT_EQ(EINVAL, ibv_modify_qp(a->qp, &qa,
						RC_RTS_MASK & ~rts_req[i])) {
			TH_LOG("RTR->RTS without attribute %#x", rts_req[i]);
		}
		EXPECT_EQ(IBV_QPS_RTR, rc_qp_state(a->qp));
	}
	rc_rts_attr(&qa, a, a->sq_psn);
	ASSERT_EQ(0, ibv_modify_qp(a->qp, &qa, RC_RTS_MASK));
	EXPECT_EQ(IBV_QPS_RTS, rc_qp_state(a->qp));
	/* RTS -> RTR is not a transition. */
	rc_rtr_attr(&qa, a, b->qp->qp_num, &b->dev->gid, a->rq_psn);
	EXPECT_EQ(EINVAL, ibv_modify_qp(a->qp, &qa, RC_RTR_MASK));
	EXPECT_EQ(IBV_QPS_RTS, rc_qp_state(a->qp));

	rc_xfer(_metadata, e, &(struct rc_xfer){
		.op = IBV_WR_SEND, .len = 1000, .lsge = 2, .rsge = 1,
		.seed = 8000, .wr_id = 0x80,
	});
	rc_xfer(_metadata, e, &(struct rc_xfer){
		.op = IBV_WR_RDMA_READ, .len = 3000, .lsge = 2,
		.seed = 8001, .wr_id = 0x90,
	});
}

/* ibv_query_qp returns what modify_qp set. */
TEST_F(rc, qp_query)
{
	struct rc_env *e = &self->e;
	struct rc_qp *a = &e->p.a, *b = &e->p.b;
	struct ibv_qp_attr qa, rtr, rts;
	struct ibv_qp_init_attr ia;

	env_create(_metadata, self, e, NULL, 4096);
	rc_rtr_attr(&rtr, a, b->qp->qp_num, &b->dev->gid, a->rq_psn);
	rc_rts_attr(&rts, a, a->sq_psn);
	memset(&qa, 0xa5, sizeof(qa));
	memset(&ia, 0xa5, sizeof(ia));
	ASSERT_EQ(0, ibv_query_qp(a->qp, &qa, IBV_QP_STATE |
				  IBV_QP_PKEY_INDEX | IBV_QP_PORT |
				  IBV_QP_ACCESS_FLAGS | RC_RTR_MASK |
				  RC_RTS_MASK | IBV_QP_CAP, &ia));
	EXPECT_EQ(IBV_QPS_RTS, qa.qp_state);
	EXPECT_EQ(0, qa.pkey_index);
	EXPECT_EQ(RC_PORT, qa.port_num);
	EXPECT_EQ(IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ,
		  qa.qp_access_flags);
	EXPECT_EQ(rtr.path_mtu, qa.path_mtu);
	EXPECT_EQ(b->qp->qp_num, qa.dest_qp_num);
	EXPECT_EQ(a->rq_psn, qa.rq_psn);
	EXPECT_EQ(a->sq_psn, qa.sq_psn);
	EXPECT_EQ(rtr.max_dest_rd_atomic, qa.max_dest_rd_atomic);
	EXPECT_EQ(rts.max_rd_atomic, qa.max_rd_atomic);
	EXPECT_EQ(rtr.min_rnr_timer, qa.min_rnr_timer);
	EXPECT_EQ(rts.timeout, qa.timeout);
	EXPECT_EQ(rts.retry_cnt, qa.retry_cnt);
	EXPECT_EQ(rts.rnr_retry, qa.rnr_retry);
	EXPECT_EQ(1, qa.ah_attr.is_global);
	EXPECT_EQ(0, memcmp(&b->dev->gid, &qa.ah_attr.grh.dgid,
			    sizeof(union ibv_gid)));
	EXPECT_EQ(self->da->gid_idx, qa.ah_attr.grh.sgid_index);
	EXPECT_EQ(RC_HOP_LIMIT, qa.ah_attr.grh.hop_limit);
	EXPECT_EQ(RC_PORT, qa.ah_attr.port_num);
	/*
	 * At least what create_qp reported (rxe reports the requested depth
	 * at create and the rounded-up ring size at query).
	 */
	EXPECT_LE(a->cap.max_send_wr, qa.cap.max_send_wr);
	EXPECT_LE(a->cap.max_recv_wr, qa.cap.max_recv_wr);
	EXPECT_LE(a->cap.max_send_sge, qa.cap.max_send_sge);
	EXPECT_LE(a->cap.max_recv_sge, qa.cap.max_recv_sge);
	EXPECT_LE(a->cap.max_inline_data, qa.cap.max_inline_data);
	if (a->cap.max_send_wr != qa.cap.max_send_wr ||
	    a->cap.max_recv_wr != qa.cap.max_recv_wr)
		TH_LOG("create_qp granted %u/%u WRs, query_qp says %u/%u",
		       a->cap.max_send_wr, a->cap.max_recv_wr,
		       qa.cap.max_send_wr, qa.cap.max_recv_wr);
	EXPECT_EQ(IBV_QPT_RC, ia.qp_type);
	EXPECT_EQ(0, ia.sq_sig_all);
	EXPECT_EQ(a->scq, ia.send_cq);
	EXPECT_EQ(a->rcq, ia.recv_cq);
	EXPECT_EQ(NULL, ia.srq);
	EXPECT_LE(a->cap.max_send_wr, ia.cap.max_send_wr);
	EXPECT_LE(a->cap.max_recv_sge, ia.cap.max_recv_sge);

	/* RTS -> RTS may change min_rnr_timer; the change reads back. */
	memset(&qa, 0, sizeof(qa));
	qa.qp_state = IBV_QPS_RTS;
	qa.min_rnr_timer = 12;
	ASSERT_EQ(0, ibv_modify_qp(a->qp, &qa, IBV_QP_STATE |
				   IBV_QP_MIN_RNR_TIMER));
	memset(&qa, 0, sizeof(qa));
	ASSERT_EQ(0, ibv_query_qp(a->qp, &qa, IBV_QP_MIN_RNR_TIMER, &ia));
	EXPECT_EQ(12, qa.min_rnr_timer);
}

/*
 * RTS -> ERR flushes the posted receives in order with IBV_WC_WR_FLUSH_ERR;
 * WRs posted in ERR complete with IBV_WC_WR_FLUSH_ERR too.
 */
TEST_F(rc, flush_on_error)
{
	struct rc_env *e = &self->e;
	struct rc_qp *b = &e->p.b;
	struct ibv_qp_attr qa = { .qp_state = IBV_QPS_ERR };
	struct ibv_wc wc[8];
	int i, n;

	env_create(_metadata, self, e, NULL, 64 * 1024);
	for (i = 0; i < 5; i++)
		ASSERT_EQ(0, rc_post_recv(b, 0x10 + i, &e->bb, 100 * i, 100));
	ASSERT_EQ(0, ibv_modify_qp(b->qp, &qa, IBV_QP_STATE));
	EXPECT_EQ(IBV_QPS_ERR, rc_qp_state(b->qp));
	n = rc_poll(b->rcq, wc, 5, RC_TIMEOUT_MS);
	ASSERT_EQ(5, n);
	for (i = 0; i < n; i++)
		rc_wc_check(_metadata, &wc[i], &(struct rc_wc_exp){
			.wr_id = 0x10 + i, .status = IBV_WC_WR_FLUSH_ERR,
			.qp_num = b->qp->qp_num,
		}, "flushed receive");
	EXPECT_CQ_EMPTY(b->rcq, "after the flush");

	/* Posting in ERR is allowed; the WRs are flushed. */
	ASSERT_EQ(0, rc_post_send(b, 0x20, IBV_WR_SEND, &e->bb, 0, 10,
				  IBV_SEND_SIGNALED, 0, 0));
	rc_expect_wc(_metadata, b->scq, &(struct rc_wc_exp){
		.wr_id = 0x20, .status = IBV_WC_WR_FLUSH_ERR,
		.qp_num = b->qp->qp_num,
	}, "send posted in ERR");
	ASSERT_EQ(0, rc_post_recv(b, 0x21, &e->bb, 0, 10));
	n = rc_poll(b->rcq, wc, 1, 2000);
	if (rc_cfg.is_rxe && n == 0) {
		RC_QUIRK("a receive posted in ERR is not flushed");
	} else {
		ASSERT_EQ(1, n);
		rc_wc_check(_metadata, &wc[0], &(struct rc_wc_exp){
			.wr_id = 0x21, .status = IBV_WC_WR_FLUSH_ERR,
			.qp_num = b->qp->qp_num,
		}, "receive posted in ERR");
	}
	fresh_pair_works(_metadata, self);
}

/* ERR -> RESET -> INIT -> RTR -> RTS on both QPs: the pair works again. */
TEST_F(rc, reset_and_reuse)
{
	struct rc_env *e = &self->e;
	struct ibv_qp_attr qa;

	env_create(_metadata, self, e, NULL, 64 * 1024);
	rc_xfer(_metadata, e, &(struct rc_xfer){
		.op = IBV_WR_SEND, .len = 5000, .lsge = 2, .rsge = 3,
		.seed = 8100, .wr_id = 0x10,
	});
	memset(&qa, 0, sizeof(qa));
	qa.qp_state = IBV_QPS_ERR;
	ASSERT_EQ(0, ibv_modify_qp(e->p.a.qp, &qa, IBV_QP_STATE));
	qa.qp_state = IBV_QPS_RESET;
	ASSERT_EQ(0, ibv_modify_qp(e->p.a.qp, &qa, IBV_QP_STATE));
	ASSERT_EQ(0, ibv_modify_qp(e->p.b.qp, &qa, IBV_QP_STATE));
	EXPECT_EQ(IBV_QPS_RESET, rc_qp_state(e->p.a.qp));
	EXPECT_EQ(IBV_QPS_RESET, rc_qp_state(e->p.b.qp));
	EXPECT_CQ_EMPTY(e->p.a.scq, "after reset");

	e->p.a.sq_psn = e->p.b.rq_psn = 0x42;
	e->p.b.sq_psn = e->p.a.rq_psn = 0xabcdef;
	rc_qp_connect(_metadata, &e->p.a, &e->p.b, e->p.o.access);
	rc_qp_connect(_metadata, &e->p.b, &e->p.a, e->p.o.access);
	rc_xfer(_metadata, e, &(struct rc_xfer){
		.op = IBV_WR_SEND, .len = 5001, .lsge = 3, .rsge = 2,
		.seed = 8101, .wr_id = 0x20,
	});
	rc_xfer(_metadata, e, &(struct rc_xfer){
		.op = IBV_WR_RDMA_WRITE, .len = 4000, .lsge = 3,
		.seed = 8102, .wr_id = 0x30,
	});
}

/* ---- memory registration ------------------------------------------------ */

FIXTURE(mr) {
	struct rc_dev d;
};

FIXTURE_SETUP(mr)
{
	rc_dev_open(_metadata, &self->d, 0);
}

FIXTURE_TEARDOWN(mr)
{
	rc_dev_close(&self->d);
}

/* ib_umem_get() refuses a region of no pages: EINVAL. */
TEST_F(mr, zero_length)
{
	static uint8_t buf[4096] __attribute__((aligned(4096)));
	struct ibv_mr *mr;

	errno = 0;
	mr = ibv_reg_mr(self->d.pd, buf, 0, IBV_ACCESS_LOCAL_WRITE);
	EXPECT_EQ(NULL, mr);
	EXPECT_EQ(EINVAL, errno);
	if (mr)
		ibv_dereg_mr(mr);
}

/* Remote write (or atomic) needs local write: EINVAL (ib_check_mr_access). */
TEST_F(mr, remote_write_needs_local_write)
{
	static uint8_t buf[4096];
	struct ibv_mr *mr;

	errno = 0;
	mr = ibv_reg_mr(self->d.pd, buf, sizeof(buf),
			IBV_ACCESS_REMOTE_WRITE);
	EXPECT_EQ(NULL, mr);
	EXPECT_EQ(EINVAL, errno);
	errno = 0;
	mr = ibv_reg_mr(self->d.pd, buf, sizeof(buf),
			IBV_ACCESS_REMOTE_READ | IBV_ACCESS_REMOTE_WRITE);
	EXPECT_EQ(NULL, mr);
	EXPECT_EQ(EINVAL, errno);
	/* With it, and remote read alone, all is fine. */
	mr = ibv_reg_mr(self->d.pd, buf, sizeof(buf),
			IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE);
	ASSERT_NE(NULL, mr);
	EXPECT_EQ(0, ibv_dereg_mr(mr));
	mr = ibv_reg_mr(self->d.pd, buf, sizeof(buf), IBV_ACCESS_REMOTE_READ);
	ASSERT_NE(NULL, mr);
	EXPECT_EQ(0, ibv_dereg_mr(mr));
}

/* More than is mapped: a hole, far beyond memory, and 2^64 wrap-around. */
TEST_F(mr, beyond_memory)
{
	long pg = sysconf(_SC_PAGESIZE);
	struct ibv_mr *mr;
	uint8_t *p;

	p = mmap(NULL, 3 * pg, PROT_READ | PROT_WRITE,
		 MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	ASSERT_NE(MAP_FAILED, p);
	ASSERT_EQ(0, munmap(p + pg, pg));
	mr = ibv_reg_mr(self->d.pd, p, 3 * pg, IBV_ACCESS_LOCAL_WRITE);
	EXPECT_EQ(NULL, mr) {
		TH_LOG("an MR over a hole in the address space");
	}
	if (mr)
		ibv_dereg_mr(mr);
	mr = ibv_reg_mr(self->d.pd, p, 1ULL << 40, IBV_ACCESS_LOCAL_WRITE);
	EXPECT_EQ(NULL, mr) {
		TH_LOG("a 1 TiB MR");
	}
	if (mr)
		ibv_dereg_mr(mr);
	errno = 0;
	mr = ibv_reg_mr(self->d.pd, (void *)(~0UL - 4095), 8192,
			IBV_ACCESS_LOCAL_WRITE);
	EXPECT_EQ(NULL, mr);
	if (mr)
		ibv_dereg_mr(mr);
	/* The mapped parts alone are fine. */
	mr = ibv_reg_mr(self->d.pd, p + 2 * pg, pg, IBV_ACCESS_LOCAL_WRITE);
	ASSERT_NE(NULL, mr);
	EXPECT_EQ(0, ibv_dereg_mr(mr));
	munmap(p, pg);
	munmap(p + 2 * pg, pg);
}

/* Every MR has its own lkey and rkey. */
TEST_F(mr, keys_distinct)
{
	static uint8_t buf[8][4096];
	struct ibv_mr *mr[8];
	int i, j;

	for (i = 0; i < 8; i++) {
		mr[i] = ibv_reg_mr(self->d.pd, buf[i], sizeof(buf[i]),
				   RC_ACCESS_ALL);
		ASSERT_NE(NULL, mr[i]);
	}
	for (i = 0; i < 8; i++)
		for (j = i + 1; j < 8; j++) {
			EXPECT_NE(mr[i]->lkey, mr[j]->lkey);
			EXPECT_NE(mr[i]->rkey, mr[j]->rkey);
		}
	for (i = 0; i < 8; i++)
		EXPECT_EQ(0, ibv_dereg_mr(mr[i]));
}

int main(int argc, char **argv)
{
	return rc_suite_main(argc, argv);
}
