// SPDX-License-Identifier: GPL-2.0
/*
 * On-demand paging (ODP) through the standard verbs API.
 *
 * An MR registered with IBV_ACCESS_ON_DEMAND pins nothing: the device
 * faults its pages in when it touches them and drops them when the kernel
 * invalidates them (munmap, MADV_DONTNEED, reclaim, copy on write).  An
 * implicit ODP MR (ibv_reg_mr(pd, NULL, SIZE_MAX, ...)) covers the whole
 * address space, its iova being the virtual address.
 *
 * "odp_dev" (one device): the ODP capabilities ibv_query_device_ex()
 * reports; an ODP MR far beyond RLIMIT_MEMLOCK registered by uid 65534
 * (a pinned one of that size refused); ibv_advise_mr() -- synchronous
 * prefetch for reading and writing makes the pages resident (mincore()),
 * PREFETCH_NO_FAULT faults nothing in, an asynchronous prefetch does it
 * later, and what is refused: an lkey of no MR, of a pinned MR, of another
 * PD's MR, a range outside the MR, unknown flags and advice, no SGE;
 * huge pages (IBV_ACCESS_HUGETLB) where the VM can have them.
 *
 * "odp" (every operation, on one device and on two, with the loopback
 * path allowed and with local_direct=0): SEND/RECV, SEND with immediate,
 * RDMA WRITE (with immediate) and READ with ODP memory at the requester,
 * at the responder and at both, 64 KiB and 1 MiB messages spanning many
 * pages; the same from and into memory the CPU never touched (a fresh
 * mmap: the device faults every page in, a never-touched source sends
 * zeros); CMP_SWP and FETCH_ADD on a word of a never-touched ODP page;
 * an SRQ receiving into ODP memory; UD and UC; XRC (SEND into an XRC SRQ,
 * WRITE, READ, atomics at the target); implicit ODP MRs at several kinds
 * of addresses (heap, a large malloc, .bss, a fresh mmap); prefetch then
 * traffic; invalidation: RDMA after MADV_DONTNEED of anonymous memory
 * (the device must see the zeros, not the pages it had), a thread
 * dropping the PTEs of a shared memfd mapping in a loop while WRITEs,
 * READs and SENDs run (all data byte-exact, in the page cache too), a
 * mapping replaced by another at the same address; munmap'ed ODP memory
 * used locally and remotely (error completions, the QPs in error, the
 * device still working); fork(): copy on write must not let the device
 * read or write the child's pages; ibv_rereg_mr() of access and
 * translation; deregistration and munmap while a transfer runs; a process
 * that exits with ODP MRs registered and traffic in flight.
 *
 * Every transfer checks every byte of the destination buffer (the bytes
 * around the data included) and every completion's status.
 *
 * Runs as root in the test VM; main() (rc_suite.h) sets up the module, a
 * veth pair and the two RDMA devices.  VRDMA_TEST_TYPE=rxe runs it on
 * rdma_rxe, which skips what it lacks; vrdma must have all of it.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <poll.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>
#include <infiniband/verbs.h>

#include "rc_lib.h"
#include "rc_suite.h"

#define LOCAL_DIRECT	"/sys/module/vrdma/parameters/local_direct"
#define PAGE		4096
#define PLAIN_ACCESS	(RC_ACCESS_ALL | IBV_ACCESS_REMOTE_ATOMIC)
#define ODP_ACCESS	(PLAIN_ACCESS | IBV_ACCESS_ON_DEMAND)
#define QP_ACCESS	(IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ | \
			 IBV_ACCESS_REMOTE_ATOMIC)

/* Where ODP memory is: at the requester A, at the responder B, both. */
enum { ODP_A = 1, ODP_B = 2, ODP_BOTH = 3 };
static const int odp_modes[] = { ODP_A, ODP_B, ODP_BOTH };
#define FOR_EACH_MODE(m, i) \
	for ((i) = 0; (i) < 3 && ((m) = odp_modes[(i)], 1); (i)++)

static const char *mode_str(int mode)
{
	return mode == ODP_A ? "ODP at A" : mode == ODP_B ? "ODP at B" :
	       "ODP at both";
}

static int access_of(int mode, int side)
{
	return mode & side ? ODP_ACCESS : PLAIN_ACCESS;
}

/* What vrdma reports (device.c), per transport. */
#define RC_CAPS (IBV_ODP_SUPPORT_SEND | IBV_ODP_SUPPORT_RECV | \
		 IBV_ODP_SUPPORT_WRITE | IBV_ODP_SUPPORT_READ | \
		 IBV_ODP_SUPPORT_ATOMIC | IBV_ODP_SUPPORT_SRQ_RECV)
#define UC_CAPS (IBV_ODP_SUPPORT_SEND | IBV_ODP_SUPPORT_RECV | \
		 IBV_ODP_SUPPORT_WRITE | IBV_ODP_SUPPORT_SRQ_RECV)
#define UD_CAPS (IBV_ODP_SUPPORT_SEND | IBV_ODP_SUPPORT_RECV | \
		 IBV_ODP_SUPPORT_SRQ_RECV)
#define XRC_CAPS RC_CAPS

/* ---- helpers ----------------------------------------------------------- */

static int odp_write_param(const char *val)
{
	FILE *f = fopen(LOCAL_DIRECT, "w");
	int ret;

	if (!f)
		return -1;
	ret = fputs(val, f) < 0;
	return fclose(f) || ret ? -1 : 0;
}

/*
 * The device's ODP capabilities: vrdma must have ODP with implicit MRs;
 * elsewhere (rxe) the test skips.  In a fixture setup the skip leaves by
 * the jump a failed ASSERT takes (Linux 6.1's harness runs the test after
 * a SKIP(return) in the setup).
 */
static int odp_check_caps(struct __test_metadata *_metadata, struct rc_dev *d)
{
	struct ibv_device_attr_ex ax;

	memset(&ax, 0, sizeof(ax));
	ASSERT_EQ(0, ibv_query_device_ex(d->ctx, NULL, &ax));
	if ((ax.odp_caps.general_caps & IBV_ODP_SUPPORT) &&
	    (ax.odp_caps.general_caps & IBV_ODP_SUPPORT_IMPLICIT))
		return 1;
	RC_SKIP_ON_RXE(return 0, "no ODP (general_caps %#llx)",
		       (unsigned long long)ax.odp_caps.general_caps);
	return 0;
}

/*
 * A buffer of @size bytes mapped afresh and registered on @pd with
 * @access, never touched by the CPU (rc_buf_alloc() writes nothing into
 * it): the kernel gives zeros wherever the device or the CPU first
 * touches it.  Pinned (no ON_DEMAND in @access), its pages are all there.
 */
static void fresh_buf(struct __test_metadata *_metadata, struct rc_buf *b,
		      struct ibv_pd *pd, size_t size, int access)
{
	rc_buf_alloc(_metadata, b, pd, size, access);
}

/*
 * The whole of @p (@size bytes) is zero but for [@off, @off + @len),
 * which holds stream @seed: a fresh buffer after one transfer.
 */
static void expect_window(struct __test_metadata *_metadata, const uint8_t *p,
			  size_t size, size_t off, size_t len, uint32_t seed,
			  const char *what)
{
	uint8_t *img = calloc(1, size);

	ASSERT_NE(NULL, img);
	rc_fill(img + off, len, seed, 0);
	EXPECT_SAME_BYTES(p, img, size, what);
	free(img);
}

/* How many of the @n pages from the one of @p are resident (mincore()). */
static int resident(const uint8_t *p, int n)
{
	uintptr_t start = (uintptr_t)p & ~(uintptr_t)(PAGE - 1);
	unsigned char *vec = malloc(n);
	int i, r = 0;

	if (!vec || mincore((void *)start, (size_t)n * PAGE, vec)) {
		free(vec);
		return -1;
	}
	for (i = 0; i < n; i++)
		r += vec[i] & 1;
	free(vec);
	return r;
}

static enum ibv_wc_opcode wc_opcode(enum ibv_wr_opcode op)
{
	switch (op) {
	case IBV_WR_SEND:
	case IBV_WR_SEND_WITH_IMM:
		return IBV_WC_SEND;
	case IBV_WR_RDMA_WRITE:
	case IBV_WR_RDMA_WRITE_WITH_IMM:
		return IBV_WC_RDMA_WRITE;
	case IBV_WR_RDMA_READ:
		return IBV_WC_RDMA_READ;
	case IBV_WR_ATOMIC_CMP_AND_SWP:
		return IBV_WC_COMP_SWAP;
	case IBV_WR_ATOMIC_FETCH_AND_ADD:
		return IBV_WC_FETCH_ADD;
	default:
		return -1;
	}
}

/* One SGE at @laddr and a WR of @op to @raddr/@rkey (for RDMA). */
static void wr_init(struct ibv_send_wr *wr, struct ibv_sge *sge,
		    uint64_t wr_id, enum ibv_wr_opcode op, const void *laddr,
		    uint32_t len, uint32_t lkey, uint64_t raddr, uint32_t rkey)
{
	sge->addr = (uintptr_t)laddr;
	sge->length = len;
	sge->lkey = lkey;
	memset(wr, 0, sizeof(*wr));
	wr->wr_id = wr_id;
	wr->sg_list = sge;
	wr->num_sge = 1;
	wr->opcode = op;
	wr->send_flags = IBV_SEND_SIGNALED;
	wr->wr.rdma.remote_addr = raddr;
	wr->wr.rdma.rkey = rkey;
}

static void wr_atomic(struct ibv_send_wr *wr, struct ibv_sge *sge,
		      uint64_t wr_id, enum ibv_wr_opcode op, void *result,
		      uint32_t lkey, uint64_t raddr, uint32_t rkey,
		      uint64_t compare_add, uint64_t swap)
{
	wr_init(wr, sge, wr_id, op, result, 8, lkey, 0, 0);
	wr->wr.atomic.remote_addr = raddr;
	wr->wr.atomic.rkey = rkey;
	wr->wr.atomic.compare_add = compare_add;
	wr->wr.atomic.swap = swap;
}

/*
 * Post @wr on @q and wait for its completion (longer than usual: a 1 MiB
 * message faults in 256 pages).  Returns its status; wr_id, qp_num and on
 * success the opcode are checked.
 */
static enum ibv_wc_status post_wait(struct __test_metadata *_metadata,
				    struct rc_qp *q, struct ibv_send_wr *wr,
				    const char *what)
{
	struct ibv_send_wr *bad = NULL;
	struct ibv_wc wc;
	int ret;

	ret = ibv_post_send(q->qp, wr, &bad);
	EXPECT_EQ(0, ret) {
		TH_LOG("%s: post: %s", what, strerror(ret));
	}
	if (ret)
		return IBV_WC_GENERAL_ERR;
	memset(&wc, 0, sizeof(wc));
	if (rc_poll(q->scq, &wc, 1, 4 * RC_TIMEOUT_MS) != 1) {
		EXPECT_TRUE(0) {
			TH_LOG("%s: no completion", what);
		}
		return IBV_WC_GENERAL_ERR;
	}
	EXPECT_EQ(wr->wr_id, wc.wr_id) {
		TH_LOG("%s: wr_id", what);
	}
	EXPECT_EQ(q->qp->qp_num, wc.qp_num);
	if (wc.status == IBV_WC_SUCCESS) {
		EXPECT_EQ(wc_opcode(wr->opcode), wc.opcode) {
			TH_LOG("%s: opcode", what);
		}
	}
	return wc.status;
}

#define EXPECT_OK(status, what) do {					\
	enum ibv_wc_status __s = (status);				\
	EXPECT_EQ(IBV_WC_SUCCESS, __s) {				\
		TH_LOG("%s: %s", (what), ibv_wc_status_str(__s));	\
	}								\
} while (0)

/* A local error on memory the process does not map: either name. */
#define EXPECT_LOCAL_ERR(status, what) do {				\
	enum ibv_wc_status __s = (status);				\
	EXPECT_TRUE(__s == IBV_WC_LOC_PROT_ERR ||			\
		    __s == IBV_WC_LOC_ACCESS_ERR) {			\
		TH_LOG("%s: %s, expected LOC_PROT_ERR or "		\
		       "LOC_ACCESS_ERR", (what), ibv_wc_status_str(__s)); \
	}								\
} while (0)

static int post_recv1(struct rc_qp *q, uint64_t wr_id, const void *addr,
		      uint32_t len, uint32_t lkey)
{
	struct ibv_sge sge = {
		.addr = (uintptr_t)addr, .length = len, .lkey = lkey,
	};

	return rc_post_recv_sgl(q, wr_id, &sge, 1);
}

/* The receive completion @wr_id of @len bytes on @q. */
static void expect_recv(struct __test_metadata *_metadata, struct rc_qp *q,
			uint64_t wr_id, uint32_t len, const char *what)
{
	rc_expect_wc(_metadata, q->rcq, &(struct rc_wc_exp){
		.wr_id = wr_id, .status = IBV_WC_SUCCESS,
		.opcode = IBV_WC_RECV, .recv = 1, .byte_len = len,
		.qp_num = q->qp->qp_num,
	}, what);
}

/* A SEND of @len bytes at @src to a receive at @dst, both completions. */
static void send_ok(struct __test_metadata *_metadata, struct rc_env *e,
		    const void *src, uint32_t lkey, void *dst, uint32_t rlkey,
		    uint32_t len, uint64_t wr_id, const char *what)
{
	struct ibv_send_wr wr;
	struct ibv_sge sge;

	ASSERT_EQ(0, post_recv1(&e->p.b, wr_id + 1, dst, len, rlkey));
	wr_init(&wr, &sge, wr_id, IBV_WR_SEND, src, len, lkey, 0, 0);
	EXPECT_OK(post_wait(_metadata, &e->p.a, &wr, what), what);
	expect_recv(_metadata, &e->p.b, wr_id + 1, len, what);
}

/* An RDMA WRITE or READ of @len bytes that must succeed. */
static void rdma_ok(struct __test_metadata *_metadata, struct rc_qp *q,
		    enum ibv_wr_opcode op, const void *laddr, uint32_t lkey,
		    uint64_t raddr, uint32_t rkey, uint32_t len,
		    uint64_t wr_id, const char *what)
{
	struct ibv_send_wr wr;
	struct ibv_sge sge;

	wr_init(&wr, &sge, wr_id, op, laddr, len, lkey, raddr, rkey);
	EXPECT_OK(post_wait(_metadata, q, &wr, what), what);
}

/* ---- the device: capabilities, memlock, advise_mr, huge pages --------- */

FIXTURE(odp_dev) {
	struct rc_dev d0;
	int odp;
};

FIXTURE_SETUP(odp_dev)
{
	rc_dev_open(_metadata, &self->d0, 0);
	self->odp = odp_check_caps(_metadata, &self->d0);
	if (!self->odp)
		longjmp(_metadata->env, 1);
}

FIXTURE_TEARDOWN(odp_dev)
{
	rc_dev_close(&self->d0);
}

/* The capabilities ibv_query_device_ex() passes on, as device.c sets them. */
TEST_F(odp_dev, caps)
{
	struct ibv_device_attr_ex ax;

	memset(&ax, 0, sizeof(ax));
	ASSERT_EQ(0, ibv_query_device_ex(self->d0.ctx, NULL, &ax));
	EXPECT_EQ(IBV_ODP_SUPPORT | IBV_ODP_SUPPORT_IMPLICIT,
		  ax.odp_caps.general_caps);
	EXPECT_EQ(RC_CAPS, ax.odp_caps.per_transport_caps.rc_odp_caps);
	EXPECT_EQ(UC_CAPS, ax.odp_caps.per_transport_caps.uc_odp_caps);
	EXPECT_EQ(UD_CAPS, ax.odp_caps.per_transport_caps.ud_odp_caps);
	EXPECT_EQ(XRC_CAPS, ax.xrc_odp_caps);
	TH_LOG("general %#llx rc %#x uc %#x ud %#x xrc %#x",
	       (unsigned long long)ax.odp_caps.general_caps,
	       ax.odp_caps.per_transport_caps.rc_odp_caps,
	       ax.odp_caps.per_transport_caps.uc_odp_caps,
	       ax.odp_caps.per_transport_caps.ud_odp_caps, ax.xrc_odp_caps);
}

/*
 * In a child that gives up root under a 256 KiB RLIMIT_MEMLOCK: bit 0 an
 * ODP MR of 16 MiB failed, bit 1 the implicit one failed, bit 2 a pinned
 * 16 MiB one was granted, bit 3 a pinned 64 KiB one failed; 64 no setup.
 */
static int memlock_child(const char *dev)
{
	const size_t big = 16 << 20, limit = 256 << 10;
	struct rlimit rl = { limit, limit };
	struct ibv_context *ctx;
	struct ibv_mr *mr;
	struct ibv_pd *pd;
	uint8_t *mem;
	int bad = 0;

	ctx = rc_open_by_name(dev);
	pd = ctx ? ibv_alloc_pd(ctx) : NULL;
	mem = mmap(NULL, big, PROT_READ | PROT_WRITE,
		   MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (!pd || mem == MAP_FAILED)
		return 64;
	if (setrlimit(RLIMIT_MEMLOCK, &rl) || setgroups(0, NULL) ||
	    setresgid(65534, 65534, 65534) || setresuid(65534, 65534, 65534))
		return 64;

	mr = ibv_reg_mr(pd, mem, big, ODP_ACCESS);
	if (!mr) {
		printf("# ODP MR of 16 MiB under a 256 KiB limit: %s\n",
		       strerror(errno));
		bad |= 1;
	} else {
		ibv_dereg_mr(mr);
	}
	mr = ibv_reg_mr(pd, NULL, SIZE_MAX, ODP_ACCESS);
	if (!mr) {
		printf("# implicit ODP MR under a 256 KiB limit: %s\n",
		       strerror(errno));
		bad |= 2;
	} else {
		ibv_dereg_mr(mr);
	}
	mr = ibv_reg_mr(pd, mem, big, PLAIN_ACCESS);
	if (mr) {
		printf("# 16 MiB pinned under a 256 KiB limit\n");
		bad |= 4;
		ibv_dereg_mr(mr);
	} else if (errno != ENOMEM) {
		printf("# 16 MiB pinned: %s, expected ENOMEM\n",
		       strerror(errno));
		bad |= 4;
	}
	mr = ibv_reg_mr(pd, mem, 64 << 10, PLAIN_ACCESS);
	if (!mr) {
		printf("# 64 KiB pinned under a 256 KiB limit: %s\n",
		       strerror(errno));
		bad |= 8;
	} else {
		ibv_dereg_mr(mr);
	}
	fflush(stdout);
	return bad;
}

/*
 * ODP pins nothing, so RLIMIT_MEMLOCK does not apply: a non-root process
 * registers far more than its limit on demand, and still not pinned.
 */
TEST_F(odp_dev, memlock)
{
	int st = 0;
	pid_t pid;

	fflush(stdout);
	pid = fork();
	ASSERT_LE(0, pid);
	if (!pid)
		_exit(memlock_child(rc_cfg.name[0]));
	ASSERT_EQ(pid, waitpid(pid, &st, 0));
	ASSERT_TRUE(WIFEXITED(st));
	EXPECT_EQ(0, WEXITSTATUS(st)) {
		TH_LOG("child result %#x (see above)", WEXITSTATUS(st));
	}
}

static int advise(struct ibv_pd *pd, enum ibv_advise_mr_advice advice,
		  uint32_t flags, const void *addr, uint32_t len, uint32_t lkey)
{
	struct ibv_sge sge = {
		.addr = (uintptr_t)addr, .length = len, .lkey = lkey,
	};

	return ibv_advise_mr(pd, advice, flags, &sge, 1);
}

/*
 * Synchronous prefetch faults pages in before it returns (for writing:
 * pages of their own; for reading: the zero page will do, resident
 * either way); PREFETCH_NO_FAULT maps only what the process has mapped,
 * faulting nothing in; an asynchronous prefetch happens soon after.
 * Refused with EINVAL: an lkey of no MR, of a pinned MR, of another PD's
 * MR, ranges reaching outside the MR, unknown flags, no SGE; unknown
 * advice with EINVAL or EOPNOTSUPP.
 */
TEST_F(odp_dev, advise)
{
	struct ibv_pd *pd = self->d0.pd, *pd2;
	struct rc_buf b, plain, other;
	struct ibv_mr *imr;
	struct ibv_sge sge[2];
	uint8_t *fresh;
	double deadline;
	uint32_t lkey;
	int r;

	fresh_buf(_metadata, &b, pd, 32 * PAGE, ODP_ACCESS);
	lkey = b.mr->lkey;
	ASSERT_EQ(0, resident(b.p, 32)) {
		TH_LOG("a fresh mapping is already resident");
	}

	EXPECT_EQ(0, advise(pd, IBV_ADVISE_MR_ADVICE_PREFETCH_NO_FAULT,
			    IBV_ADVISE_MR_FLAG_FLUSH, b.p, 4 * PAGE, lkey));
	EXPECT_EQ(0, resident(b.p, 4)) {
		TH_LOG("PREFETCH_NO_FAULT faulted pages in");
	}
	EXPECT_EQ(0, advise(pd, IBV_ADVISE_MR_ADVICE_PREFETCH_WRITE,
			    IBV_ADVISE_MR_FLAG_FLUSH, b.p + 4 * PAGE + 100,
			    4 * PAGE - 200, lkey));
	EXPECT_EQ(4, resident(b.p + 4 * PAGE, 4)) {
		TH_LOG("synchronous PREFETCH_WRITE left pages out");
	}
	EXPECT_EQ(0, advise(pd, IBV_ADVISE_MR_ADVICE_PREFETCH,
			    IBV_ADVISE_MR_FLAG_FLUSH, b.p + 8 * PAGE,
			    2 * PAGE, lkey));
	EXPECT_EQ(2, resident(b.p + 8 * PAGE, 2)) {
		TH_LOG("synchronous PREFETCH left pages out");
	}
	/* Two SGEs in one call. */
	sge[0] = (struct ibv_sge){ (uintptr_t)(b.p + 12 * PAGE), PAGE, lkey };
	sge[1] = (struct ibv_sge){ (uintptr_t)(b.p + 14 * PAGE), PAGE, lkey };
	EXPECT_EQ(0, ibv_advise_mr(pd, IBV_ADVISE_MR_ADVICE_PREFETCH_WRITE,
				   IBV_ADVISE_MR_FLAG_FLUSH, sge, 2));
	EXPECT_EQ(1, resident(b.p + 12 * PAGE, 1));
	EXPECT_EQ(0, resident(b.p + 13 * PAGE, 1)) {
		TH_LOG("a page between the SGEs was faulted in");
	}
	EXPECT_EQ(1, resident(b.p + 14 * PAGE, 1));
	/* Asynchronous: done by the time a few seconds have passed. */
	EXPECT_EQ(0, advise(pd, IBV_ADVISE_MR_ADVICE_PREFETCH_WRITE, 0,
			    b.p + 16 * PAGE, 3 * PAGE, lkey));
	deadline = rc_now_ms() + RC_TIMEOUT_MS * rc_cfg.slow;
	while (resident(b.p + 16 * PAGE, 3) != 3 && rc_now_ms() < deadline)
		usleep(10 * 1000);
	EXPECT_EQ(3, resident(b.p + 16 * PAGE, 3)) {
		TH_LOG("asynchronous PREFETCH_WRITE never faulted");
	}
	/* NO_FAULT of pages the CPU has: fine. */
	memset(b.p + 20 * PAGE, 0x5a, PAGE);
	EXPECT_EQ(0, advise(pd, IBV_ADVISE_MR_ADVICE_PREFETCH_NO_FAULT,
			    IBV_ADVISE_MR_FLAG_FLUSH, b.p + 20 * PAGE, PAGE,
			    lkey));
	EXPECT_EQ(0, resident(b.p + 24 * PAGE, 8)) {
		TH_LOG("pages nobody asked for are resident");
	}

	/* Refusals. */
	fresh_buf(_metadata, &plain, pd, 4 * PAGE, PLAIN_ACCESS);
	pd2 = ibv_alloc_pd(self->d0.ctx);
	ASSERT_NE(NULL, pd2);
	fresh_buf(_metadata, &other, pd2, 4 * PAGE, ODP_ACCESS);
	EXPECT_EQ(EINVAL, advise(pd, IBV_ADVISE_MR_ADVICE_PREFETCH,
				 IBV_ADVISE_MR_FLAG_FLUSH, b.p, PAGE,
				 lkey ^ 0x5a00)) {
		TH_LOG("an lkey of no MR");
	}
	EXPECT_EQ(EINVAL, advise(pd, IBV_ADVISE_MR_ADVICE_PREFETCH,
				 IBV_ADVISE_MR_FLAG_FLUSH, plain.p, PAGE,
				 plain.mr->lkey)) {
		TH_LOG("a pinned MR");
	}
	EXPECT_EQ(EINVAL, advise(pd, IBV_ADVISE_MR_ADVICE_PREFETCH,
				 IBV_ADVISE_MR_FLAG_FLUSH, other.p, PAGE,
				 other.mr->lkey)) {
		TH_LOG("an MR of another PD");
	}
	EXPECT_EQ(EINVAL, advise(pd, IBV_ADVISE_MR_ADVICE_PREFETCH,
				 IBV_ADVISE_MR_FLAG_FLUSH,
				 b.p + 32 * PAGE - 10, 20, lkey)) {
		TH_LOG("a range past the MR's end");
	}
	EXPECT_EQ(EINVAL, advise(pd, IBV_ADVISE_MR_ADVICE_PREFETCH,
				 IBV_ADVISE_MR_FLAG_FLUSH, b.p - 10, 20,
				 lkey)) {
		TH_LOG("a range before the MR's start");
	}
	EXPECT_EQ(EINVAL, advise(pd, IBV_ADVISE_MR_ADVICE_PREFETCH, 1 << 1,
				 b.p, PAGE, lkey)) {
		TH_LOG("an unknown flag");
	}
	EXPECT_EQ(EINVAL, advise(pd, IBV_ADVISE_MR_ADVICE_PREFETCH,
				 IBV_ADVISE_MR_FLAG_FLUSH | (1u << 31), b.p,
				 PAGE, lkey)) {
		TH_LOG("an unknown flag beside FLUSH");
	}
	r = advise(pd, IBV_ADVISE_MR_ADVICE_PREFETCH_NO_FAULT + 7,
		   IBV_ADVISE_MR_FLAG_FLUSH, b.p, PAGE, lkey);
	EXPECT_TRUE(r == EINVAL || r == EOPNOTSUPP) {
		TH_LOG("unknown advice: %s", strerror(r));
	}
	EXPECT_EQ(EINVAL, ibv_advise_mr(pd, IBV_ADVISE_MR_ADVICE_PREFETCH,
					IBV_ADVISE_MR_FLAG_FLUSH, sge, 0)) {
		TH_LOG("no SGE");
	}
	/* One bad SGE fails the call. */
	sge[1].lkey = plain.mr->lkey;
	sge[1].addr = (uintptr_t)plain.p;
	EXPECT_EQ(EINVAL, ibv_advise_mr(pd, IBV_ADVISE_MR_ADVICE_PREFETCH,
					IBV_ADVISE_MR_FLAG_FLUSH, sge, 2));

	/*
	 * Through an implicit MR: any mapped address.  Guarded, so that a
	 * prefetch cannot fault in a neighbour's huge page over all four.
	 */
	fresh = rc_map_guarded(_metadata, 4 * PAGE);
	imr = ibv_reg_mr(pd, NULL, SIZE_MAX, ODP_ACCESS);
	ASSERT_NE(NULL, imr) {
		TH_LOG("implicit ODP MR: %s", strerror(errno));
	}
	EXPECT_EQ(0, advise(pd, IBV_ADVISE_MR_ADVICE_PREFETCH_WRITE,
			    IBV_ADVISE_MR_FLAG_FLUSH, fresh + PAGE, 2 * PAGE,
			    imr->lkey));
	EXPECT_EQ(0, resident(fresh, 1));
	EXPECT_EQ(2, resident(fresh + PAGE, 2));
	EXPECT_EQ(0, ibv_dereg_mr(imr));
	rc_unmap_guarded(fresh, 4 * PAGE);

	rc_buf_free(&other);
	EXPECT_EQ(0, ibv_dealloc_pd(pd2));
	rc_buf_free(&plain);
	rc_buf_free(&b);
}

/*
 * IBV_ACCESS_HUGETLB with ON_DEMAND: an MR of 2 MiB huge pages, never
 * touched, written, read and sent through on one device.  Needs huge
 * pages in the VM; the test reserves some and gives them back.
 */
TEST_F_TIMEOUT(odp_dev, hugetlb, 120)
{
	const size_t huge = 2 << 20, size = 2 * huge;
	struct rc_env e;
	struct rc_buf hb;
	struct rc_opts o = { .access = QP_ACCESS };
	char old[32] = "0";
	uint8_t *src;
	FILE *f;

	f = fopen("/proc/sys/vm/nr_hugepages", "r");
	ASSERT_NE(NULL, f);
	if (!fgets(old, sizeof(old), f))
		strcpy(old, "0");
	fclose(f);
	if (rc_shf("echo 4 >/proc/sys/vm/nr_hugepages"))
		RC_SKIP_UNLESS_CI(return, "cannot reserve huge pages");
	memset(&hb, 0, sizeof(hb));
	hb.size = size;
	hb.p = mmap(NULL, size, PROT_READ | PROT_WRITE,
		    MAP_PRIVATE | MAP_ANONYMOUS | MAP_HUGETLB, -1, 0);
	if (hb.p == MAP_FAILED) {
		rc_shf("echo %s >/proc/sys/vm/nr_hugepages", old);
		RC_SKIP_UNLESS_CI(return, "no huge pages: %s", strerror(errno));
	}
	hb.mr = ibv_reg_mr(self->d0.pd, hb.p, size,
			   ODP_ACCESS | IBV_ACCESS_HUGETLB);
	ASSERT_NE(NULL, hb.mr) {
		TH_LOG("ODP MR of huge pages: %s", strerror(errno));
	}
	rc_env_create(_metadata, &e, &self->d0, &self->d0, &o, size,
		      ODP_ACCESS, ODP_ACCESS);
	src = e.ba.p;
	rc_fill(src, size, 71, 0);
	/* WRITE across the boundary of the two huge pages. */
	rdma_ok(_metadata, &e.p.a, IBV_WR_RDMA_WRITE, src, e.ba.mr->lkey,
		(uintptr_t)hb.p + huge - 5000, hb.mr->rkey, 10000, 0x71,
		"WRITE into huge pages");
	expect_window(_metadata, hb.p, size, huge - 5000, 10000, 71,
		      "the huge pages after the WRITE");
	/* READ them back: stream 71 again at A, after zeroing A. */
	memset(src, 0, size);
	rdma_ok(_metadata, &e.p.a, IBV_WR_RDMA_READ, src + 3, e.ba.mr->lkey,
		(uintptr_t)hb.p + huge - 5000, hb.mr->rkey, 10000, 0x72,
		"READ from huge pages");
	expect_window(_metadata, src, size, 3, 10000, 71, "A after the READ");
	/* A SEND out of the huge pages (the B side of the pair receives). */
	send_ok(_metadata, &e, hb.p + huge - 5000, hb.mr->lkey,
		e.bb.p + 7, e.bb.mr->lkey, 10000, 0x73, "SEND from huge pages");
	expect_window(_metadata, e.bb.p, size, 7, 10000, 71,
		      "B after the SEND");
	rc_env_destroy(&e);
	EXPECT_EQ(0, ibv_dereg_mr(hb.mr));
	munmap(hb.p, size);
	rc_shf("echo %s >/proc/sys/vm/nr_hugepages", old);
}

/* ---- traffic: one device and two, loopback path on and off ------------- */

FIXTURE(odp) {
	struct rc_dev d0, d1;
	struct rc_dev *da, *db;
	struct rc_env e;
	int two;
	int param_set;
};

FIXTURE_VARIANT(odp) {
	int two_devices;
	int local_direct;
};

FIXTURE_VARIANT_ADD(odp, loopback) {
	.two_devices = 0, .local_direct = 1,
};

FIXTURE_VARIANT_ADD(odp, loopback_packets) {
	.two_devices = 0, .local_direct = 0,
};

FIXTURE_VARIANT_ADD(odp, two_devices) {
	.two_devices = 1, .local_direct = 1,
};

FIXTURE_VARIANT_ADD(odp, two_devices_packets) {
	.two_devices = 1, .local_direct = 0,
};

FIXTURE_SETUP(odp)
{
	memset(&self->e, 0, sizeof(self->e));
	self->two = variant->two_devices;
	if (!rc_cfg.is_rxe) {
		ASSERT_EQ(0, odp_write_param(variant->local_direct ? "1" : "0"))
		{
			TH_LOG("cannot set %s", LOCAL_DIRECT);
		}
		self->param_set = 1;
	}
	rc_ends_open(_metadata, &self->d0, &self->d1, &self->da, &self->db,
		     self->two);
	if (!odp_check_caps(_metadata, self->da))
		longjmp(_metadata->env, 1);
}

FIXTURE_TEARDOWN(odp)
{
	rc_env_destroy(&self->e);
	rc_dev_close(&self->d1);
	rc_dev_close(&self->d0);
	if (self->param_set)
		odp_write_param("1");
}

/* A pair and a @size buffer per side, ODP where @mode says. */
static void env_create(struct __test_metadata *_metadata,
		       FIXTURE_DATA(odp) *self, struct rc_env *e, int mode,
		       size_t size)
{
	struct rc_opts o = { .access = QP_ACCESS };

	rc_env_create(_metadata, e, self->da, self->db, &o, size,
		      access_of(mode, ODP_A), access_of(mode, ODP_B));
}

/* A new pair for the same buffers, after an error put the old one in ERR. */
static void new_pair(struct __test_metadata *_metadata, struct rc_env *e,
		     FIXTURE_DATA(odp) *self)
{
	struct rc_opts o = { .access = QP_ACCESS };

	rc_pair_destroy(&e->p);
	rc_pair_create(_metadata, &e->p, self->da, self->db, &o);
}

/* A fresh pair and buffers (ODP on both sides) move data both ways. */
static void fresh_pair_works(struct __test_metadata *_metadata,
			     FIXTURE_DATA(odp) *self)
{
	struct rc_env e;

	env_create(_metadata, self, &e, ODP_BOTH, 64 * 1024);
	rc_xfer(_metadata, &e, &(struct rc_xfer){
		.op = IBV_WR_SEND, .len = 5000, .lsge = 3, .rsge = 2,
		.loff = 1, .roff = 3, .seed = 901, .wr_id = 0x900,
	});
	rc_xfer(_metadata, &e, &(struct rc_xfer){
		.op = IBV_WR_RDMA_READ, .len = 9001, .lsge = 2,
		.loff = 5, .roff = 7, .seed = 902, .wr_id = 0x910,
	});
	rc_env_destroy(&e);
}

/* Device @i's counter @name, once ib_core's cache of it has expired. */
static long long hw_counter(int i, const char *name)
{
	usleep(50 * 1000);
	return rc_hw_counter(rc_cfg.name[i], name);
}

/*
 * Every opcode with ODP memory at the requester, the responder and both:
 * SG lists at odd offsets, 64 KiB and 1 MiB + 3 (257 pages) messages,
 * every byte around them checked (rc_xfer()).  The buffers were touched
 * by the CPU (rc_xfer() fills them) but never by the device.  QPs whose
 * PDs have ODP MRs send packets, whatever local_direct says: the loopback
 * path counts none of their messages.
 */
TEST_F_TIMEOUT(odp, opcodes, 300)
{
	static const enum ibv_wr_opcode ops[] = {
		IBV_WR_SEND, IBV_WR_SEND_WITH_IMM, IBV_WR_RDMA_WRITE,
		IBV_WR_RDMA_WRITE_WITH_IMM, IBV_WR_RDMA_READ,
	};
	static const size_t lens[] = { 65536 + 5, (1 << 20) + 3 };
	long long lb0 = 0, pkts0 = 0;
	unsigned int i, j;
	int mode, m, k = 0;

	FOR_EACH_MODE(mode, m) {
		TH_LOG("%s", mode_str(mode));
		env_create(_metadata, self, &self->e, mode, (1 << 20) + 65536);
		if (mode == ODP_BOTH && !rc_cfg.is_rxe) {
			lb0 = hw_counter(0, "loopback_msgs") +
			      hw_counter(1, "loopback_msgs");
			pkts0 = hw_counter(0, "sent_pkts") +
				hw_counter(1, "sent_pkts");
			ASSERT_LE(0, lb0);
		}
		for (i = 0; i < sizeof(ops) / sizeof(ops[0]); i++)
			for (j = 0; j < 2; j++, k++)
				rc_xfer(_metadata, &self->e, &(struct rc_xfer){
					.op = ops[i], .len = lens[j],
					.lsge = 1 + (k % 3), .rsge = 1 + (k % 2),
					.loff = 4093, .roff = 11 + k,
					.imm = 0x0d90000 + k, .seed = 100 + k,
					.wr_id = 0x1000 + 16 * k,
				});
		rc_env_destroy(&self->e);
	}
	if (!rc_cfg.is_rxe) {
		EXPECT_EQ(lb0, hw_counter(0, "loopback_msgs") +
			  hw_counter(1, "loopback_msgs")) {
			TH_LOG("ODP QPs' messages took the loopback path");
		}
		/* 10 messages, 2 of 257 pages at least, and their answers */
		EXPECT_LT(pkts0 + 2 * 257, hw_counter(0, "sent_pkts") +
			  hw_counter(1, "sent_pkts"));
	}
}

/*
 * @op between buffers mapped just before and never touched by the CPU
 * where it is not said: first the source written by the CPU, the
 * destination untouched (the device faults every destination page in,
 * for writing); then a second, untouched source (the device faults its
 * pages in for reading: zeros) over part of the same destination.
 */
static void fresh_case(struct __test_metadata *_metadata,
		       FIXTURE_DATA(odp) *self, enum ibv_wr_opcode op,
		       int mode)
{
	const size_t size = (1 << 20) + 3 * PAGE, len = (1 << 20) + 3;
	const size_t soff = 4093, doff = PAGE - 1, len2 = 3 * PAGE + 7;
	int is_read = op == IBV_WR_RDMA_READ, is_send = op == IBV_WR_SEND;
	struct rc_env *e = &self->e;
	struct rc_buf *src, *dst, src2;
	struct rc_qp *qa;
	uint8_t *img;
	char what[64];

	snprintf(what, sizeof(what), "%s, %s", rc_op_str(op), mode_str(mode));
	env_create(_metadata, self, e, mode, size);
	qa = &e->p.a;
	src = is_read ? &e->bb : &e->ba;
	dst = is_read ? &e->ba : &e->bb;

	/* An ODP MR pins nothing: registered, its pages are not there yet. */
	if (mode & (is_read ? ODP_A : ODP_B)) {
		EXPECT_EQ(0, resident(dst->p, (size + PAGE - 1) / PAGE)) {
			TH_LOG("%s: the ODP registration faulted pages in",
			       what);
		}
	}
	rc_fill(src->p + soff, len, 200 + mode, 0);
	if (is_send) {
		send_ok(_metadata, e, src->p + soff, src->mr->lkey,
			dst->p + doff, dst->mr->lkey, len, 0x2000, what);
	} else if (is_read) {
		rdma_ok(_metadata, qa, op, dst->p + doff, dst->mr->lkey,
			(uintptr_t)src->p + soff, src->mr->rkey, len, 0x2000,
			what);
	} else {
		rdma_ok(_metadata, qa, op, src->p + soff, src->mr->lkey,
			(uintptr_t)dst->p + doff, dst->mr->rkey, len, 0x2000,
			what);
	}
	expect_window(_metadata, dst->p, size, doff, len, 200 + mode, what);
	expect_window(_metadata, src->p, size, soff, len, 200 + mode,
		      "the source");

	/* An untouched source, on the same side, ODP or not as the first. */
	fresh_buf(_metadata, &src2, is_read ? self->db->pd : self->da->pd,
		  size, src->mr == e->ba.mr ? access_of(mode, ODP_A) :
		  access_of(mode, ODP_B));
	if (is_send) {
		send_ok(_metadata, e, src2.p + 11, src2.mr->lkey,
			dst->p + doff + 100, dst->mr->lkey, len2, 0x2010,
			"SEND of zeros");
	} else if (is_read) {
		rdma_ok(_metadata, qa, op, dst->p + doff + 100, dst->mr->lkey,
			(uintptr_t)src2.p + 11, src2.mr->rkey, len2, 0x2010,
			"READ of zeros");
	} else {
		rdma_ok(_metadata, qa, op, src2.p + 11, src2.mr->lkey,
			(uintptr_t)dst->p + doff + 100, dst->mr->rkey, len2,
			0x2010, "WRITE of zeros");
	}
	img = calloc(1, size);
	ASSERT_NE(NULL, img);
	rc_fill(img + doff, len, 200 + mode, 0);
	memset(img + doff + 100, 0, len2);
	EXPECT_SAME_BYTES(dst->p, img, size, "zeros over the data");
	free(img);
	rc_buf_free(&src2);
	rc_env_destroy(e);
}

TEST_F_TIMEOUT(odp, send_fresh, 180)
{
	int mode, m;

	FOR_EACH_MODE(mode, m)
		fresh_case(_metadata, self, IBV_WR_SEND, mode);
}

TEST_F_TIMEOUT(odp, write_fresh, 180)
{
	int mode, m;

	FOR_EACH_MODE(mode, m)
		fresh_case(_metadata, self, IBV_WR_RDMA_WRITE, mode);
}

TEST_F_TIMEOUT(odp, read_fresh, 180)
{
	int mode, m;

	FOR_EACH_MODE(mode, m)
		fresh_case(_metadata, self, IBV_WR_RDMA_READ, mode);
}

/*
 * CMP_SWP and FETCH_ADD on a word in a page nobody touched (it reads as
 * 0), the result into another such page; a failing compare; FETCH_ADD
 * wrapping.  The rest of both pages stays zero.
 */
TEST_F(odp, atomics)
{
	const uint64_t big = 0xfedcba9876543210ULL;
	struct rc_env *e = &self->e;
	struct ibv_send_wr wr;
	struct ibv_sge sge;
	uint8_t *word, *res, *img;
	uint64_t raddr;
	int mode, m;

	img = calloc(1, 4 * PAGE);
	ASSERT_NE(NULL, img);
	FOR_EACH_MODE(mode, m) {
		env_create(_metadata, self, e, mode, 4 * PAGE);
		word = e->bb.p + 2 * PAGE + 8 * 37;
		res = e->ba.p + PAGE + 8 * 5;
		raddr = (uintptr_t)word;

		wr_atomic(&wr, &sge, 0x31, IBV_WR_ATOMIC_FETCH_AND_ADD, res,
			  e->ba.mr->lkey, raddr, e->bb.mr->rkey, 0x1111, 0);
		EXPECT_OK(post_wait(_metadata, &e->p.a, &wr, "FETCH_ADD"),
			  mode_str(mode));
		EXPECT_EQ(0, rd64(res));
		EXPECT_EQ(0x1111, rd64(word));
		wr_atomic(&wr, &sge, 0x32, IBV_WR_ATOMIC_CMP_AND_SWP,
			  res + 8, e->ba.mr->lkey, raddr, e->bb.mr->rkey,
			  0x1111, big);
		EXPECT_OK(post_wait(_metadata, &e->p.a, &wr, "CMP_SWP"),
			  mode_str(mode));
		EXPECT_EQ(0x1111, rd64(res + 8));
		EXPECT_EQ(big, rd64(word));
		/* A compare that fails leaves the word alone. */
		wr_atomic(&wr, &sge, 0x33, IBV_WR_ATOMIC_CMP_AND_SWP,
			  res + 16, e->ba.mr->lkey, raddr, e->bb.mr->rkey,
			  0x1111, 5);
		EXPECT_OK(post_wait(_metadata, &e->p.a, &wr, "CMP_SWP fails"),
			  mode_str(mode));
		EXPECT_EQ(big, rd64(res + 16));
		EXPECT_EQ(big, rd64(word));
		/* FETCH_ADD wraps. */
		wr_atomic(&wr, &sge, 0x34, IBV_WR_ATOMIC_FETCH_AND_ADD,
			  res + 24, e->ba.mr->lkey, raddr, e->bb.mr->rkey,
			  ~big + 3, 0);
		EXPECT_OK(post_wait(_metadata, &e->p.a, &wr, "FETCH_ADD wraps"),
			  mode_str(mode));
		EXPECT_EQ(big, rd64(res + 24));
		EXPECT_EQ(2, rd64(word));

		/* Nothing else in either buffer changed. */
		memset(img, 0, 4 * PAGE);
		wr64(img + (word - e->bb.p), 2);
		EXPECT_SAME_BYTES(e->bb.p, img, 4 * PAGE, "B's pages");
		memset(img, 0, 4 * PAGE);
		wr64(img + (res - e->ba.p), 0);
		wr64(img + (res - e->ba.p) + 8, 0x1111);
		wr64(img + (res - e->ba.p) + 16, big);
		wr64(img + (res - e->ba.p) + 24, big);
		EXPECT_SAME_BYTES(e->ba.p, img, 4 * PAGE, "A's pages");
		rc_env_destroy(e);
	}
	free(img);
}

/*
 * An RC pair, A on @da without an SRQ, B on @db taking its receives from
 * @srq: rc_pair_create()'s steps, by hand.  A sends from @psn_ab, B from
 * @psn_ba.
 */
static void srq_pair_create(struct __test_metadata *_metadata,
			    struct rc_pair *p, struct rc_dev *da,
			    struct rc_dev *db, struct ibv_srq *srq,
			    uint32_t psn_ab, uint32_t psn_ba)
{
	memset(p, 0, sizeof(*p));
	p->o.access = QP_ACCESS;
	rc_opts_default(&p->o, da);
	rc_qp_create(_metadata, &p->a, da, &p->o);
	p->o.srq = srq;
	rc_qp_create(_metadata, &p->b, db, &p->o);
	p->a.sq_psn = p->b.rq_psn = psn_ab;
	p->b.sq_psn = p->a.rq_psn = psn_ba;
	rc_qp_connect(_metadata, &p->a, &p->b, QP_ACCESS);
	rc_qp_connect(_metadata, &p->b, &p->a, QP_ACCESS);
}

/*
 * An SRQ at B whose receive WQEs point into an ODP buffer nobody touched,
 * slots of 70000 bytes across page boundaries; A's SENDs of many sizes
 * from ODP memory land in the WQE they took, every byte in place.
 */
TEST_F_TIMEOUT(odp, srq, 120)
{
	const size_t slot = 70001, n = 8, size = n * slot + PAGE;
	struct ibv_srq_init_attr sa = {
		.attr = { .max_wr = 16, .max_sge = 1 },
	};
	struct rc_pair *p = &self->e.p;
	struct rc_buf src, dst;
	struct ibv_srq *srq;
	struct ibv_recv_wr rwr, *rbad;
	struct ibv_sge sge;
	struct ibv_wc wc;
	uint8_t *img;
	size_t i, len[8];
	int got[8] = { 0 };

	srq = ibv_create_srq(self->db->pd, &sa);
	ASSERT_NE(NULL, srq) {
		TH_LOG("ibv_create_srq: %s", strerror(errno));
	}
	srq_pair_create(_metadata, p, self->da, self->db, srq, 0xfffff0,
			0x123456);

	fresh_buf(_metadata, &src, self->da->pd, size, ODP_ACCESS);
	fresh_buf(_metadata, &dst, self->db->pd, size, ODP_ACCESS);
	for (i = 0; i < n; i++) {
		sge.addr = (uintptr_t)(dst.p + i * slot);
		sge.length = slot;
		sge.lkey = dst.mr->lkey;
		memset(&rwr, 0, sizeof(rwr));
		rwr.wr_id = 0x500 + i;
		rwr.sg_list = &sge;
		rwr.num_sge = 1;
		ASSERT_EQ(0, ibv_post_srq_recv(srq, &rwr, &rbad));
	}
	img = calloc(1, size);
	ASSERT_NE(NULL, img);
	for (i = 0; i < n; i++) {
		struct ibv_send_wr wr;

		len[i] = 1 + (i * 9973) % slot;
		if (i == n - 1)
			len[i] = slot;
		rc_fill(src.p + i * slot, len[i], 300 + i, 0);
		wr_init(&wr, &sge, 0x400 + i, IBV_WR_SEND, src.p + i * slot,
			len[i], src.mr->lkey, 0, 0);
		EXPECT_OK(post_wait(_metadata, &p->a, &wr, "SEND to the SRQ"),
			  "SEND to the SRQ");
	}
	for (i = 0; i < n; i++) {
		size_t w;

		ASSERT_EQ(1, rc_poll(p->b.rcq, &wc, 1, RC_TIMEOUT_MS));
		EXPECT_EQ(IBV_WC_SUCCESS, wc.status) {
			TH_LOG("SRQ receive: %s", ibv_wc_status_str(wc.status));
		}
		EXPECT_EQ(IBV_WC_RECV, wc.opcode);
		EXPECT_EQ(p->b.qp->qp_num, wc.qp_num);
		w = wc.wr_id - 0x500;
		ASSERT_GT(n, w);
		EXPECT_EQ(0, got[w]++);
		/* The SRQ hands its WQEs out in order. */
		EXPECT_EQ(i, w);
		EXPECT_EQ(len[i], wc.byte_len);
		rc_fill(img + w * slot, len[i], 300 + i, 0);
	}
	EXPECT_SAME_BYTES(dst.p, img, size, "the SRQ's buffer");
	free(img);
	rc_buf_free(&src);
	rc_buf_free(&dst);
	rc_pair_destroy(p);
	EXPECT_EQ(0, ibv_destroy_srq(srq));
}

/*
 * An SRQ in a PD of its own, with ODP memory, behind a QP whose PD has no
 * ODP MR: a receive WQE is checked against its SRQ's PD, so the message
 * must go as packets here too (the loopback path cannot hold ODP pages),
 * and land.
 */
TEST_F_TIMEOUT(odp, srq_other_pd, 120)
{
	const size_t size = 3 * PAGE;
	struct ibv_srq_init_attr sa = {
		.attr = { .max_wr = 4, .max_sge = 1 },
	};
	struct rc_pair *p = &self->e.p;
	struct ibv_recv_wr rwr, *rbad;
	struct ibv_send_wr wr;
	struct rc_buf src, dst;
	struct ibv_sge sge;
	struct ibv_srq *srq;
	struct ibv_pd *pd2;
	struct ibv_wc wc;
	uint8_t *img;

	pd2 = ibv_alloc_pd(self->db->ctx);
	ASSERT_NE(NULL, pd2);
	srq = ibv_create_srq(pd2, &sa);
	ASSERT_NE(NULL, srq) {
		TH_LOG("ibv_create_srq: %s", strerror(errno));
	}
	srq_pair_create(_metadata, p, self->da, self->db, srq, 0x10, 0x20);

	/* Pinned at the sender; ODP, never touched, in the SRQ's PD. */
	fresh_buf(_metadata, &src, self->da->pd, size, PLAIN_ACCESS);
	fresh_buf(_metadata, &dst, pd2, size, ODP_ACCESS);
	sge.addr = (uintptr_t)dst.p + 7;
	sge.length = size - 7;
	sge.lkey = dst.mr->lkey;
	memset(&rwr, 0, sizeof(rwr));
	rwr.wr_id = 0x700;
	rwr.sg_list = &sge;
	rwr.num_sge = 1;
	ASSERT_EQ(0, ibv_post_srq_recv(srq, &rwr, &rbad));

	rc_fill(src.p, 5000, 77, 0);
	wr_init(&wr, &sge, 0x701, IBV_WR_SEND, src.p, 5000, src.mr->lkey, 0,
		0);
	EXPECT_OK(post_wait(_metadata, &p->a, &wr, "SEND to the SRQ"),
		  "SEND to the SRQ");
	ASSERT_EQ(1, rc_poll(p->b.rcq, &wc, 1, RC_TIMEOUT_MS));
	EXPECT_EQ(IBV_WC_SUCCESS, wc.status) {
		TH_LOG("SRQ receive: %s", ibv_wc_status_str(wc.status));
	}
	EXPECT_EQ(5000, wc.byte_len);
	img = calloc(1, size);
	ASSERT_NE(NULL, img);
	rc_fill(img + 7, 5000, 77, 0);
	EXPECT_SAME_BYTES(dst.p, img, size, "the SRQ's ODP buffer");
	free(img);
	rc_buf_free(&src);
	rc_buf_free(&dst);
	rc_pair_destroy(p);
	EXPECT_EQ(0, ibv_destroy_srq(srq));
	EXPECT_EQ(0, ibv_dealloc_pd(pd2));
}

/* A UD QP in RTS on @d with Q_Key 0x11111111. */
static struct ibv_qp *ud_qp(struct __test_metadata *_metadata,
			    struct rc_dev *d, struct ibv_cq *cq)
{
	struct ibv_qp_init_attr ia = {
		.send_cq = cq, .recv_cq = cq, .qp_type = IBV_QPT_UD,
		.cap = { .max_send_wr = 16, .max_recv_wr = 16,
			 .max_send_sge = 1, .max_recv_sge = 1 },
	};
	struct ibv_qp_attr a = {
		.qp_state = IBV_QPS_INIT, .port_num = RC_PORT,
		.qkey = 0x11111111,
	};
	struct ibv_qp *qp;

	qp = ibv_create_qp(d->pd, &ia);
	if (!qp)
		return NULL;
	if (ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_PKEY_INDEX |
			  IBV_QP_PORT | IBV_QP_QKEY))
		goto err;
	a.qp_state = IBV_QPS_RTR;
	if (ibv_modify_qp(qp, &a, IBV_QP_STATE))
		goto err;
	a.qp_state = IBV_QPS_RTS;
	a.sq_psn = 0x42;
	if (ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_SQ_PSN))
		goto err;
	return qp;
err:
	ibv_destroy_qp(qp);
	return NULL;
}

/*
 * UD: datagrams of the path MTU from ODP memory into receive buffers in
 * ODP memory nobody touched, at offsets across page boundaries: the 40
 * bytes of GRH, then the data; the bytes around untouched.  The last one
 * from a source nobody touched (zeros) into a buffer that had data.
 */
TEST_F_TIMEOUT(odp, ud, 120)
{
	struct ibv_cq *ca, *cb;
	struct ibv_qp *qa, *qb;
	struct ibv_ah *ah;
	struct ibv_ah_attr aa = {
		.is_global = 1,
		.grh = { .hop_limit = 64 },
		.port_num = RC_PORT,
	};
	struct rc_buf src, dst, zero;
	struct ibv_send_wr wr, *bad;
	struct ibv_sge sge;
	struct ibv_wc wc;
	size_t mtu = 128 << self->da->port.active_mtu, off[4], size;
	uint8_t *img;
	int i;

	size = 4 * (mtu + 40 + PAGE) + PAGE;
	ca = ibv_create_cq(self->da->ctx, 32, NULL, NULL, 0);
	cb = ibv_create_cq(self->db->ctx, 32, NULL, NULL, 0);
	ASSERT_TRUE(ca && cb);
	qa = ud_qp(_metadata, self->da, ca);
	qb = ud_qp(_metadata, self->db, cb);
	ASSERT_TRUE(qa && qb) {
		TH_LOG("UD QPs: %s", strerror(errno));
	}
	aa.grh.dgid = self->db->gid;
	aa.grh.sgid_index = self->da->gid_idx;
	ah = ibv_create_ah(self->da->pd, &aa);
	ASSERT_NE(NULL, ah);
	fresh_buf(_metadata, &src, self->da->pd, size, ODP_ACCESS);
	fresh_buf(_metadata, &dst, self->db->pd, size, ODP_ACCESS);
	fresh_buf(_metadata, &zero, self->da->pd, size, ODP_ACCESS);
	img = calloc(1, size);
	ASSERT_NE(NULL, img);

	for (i = 0; i < 4; i++) {
		/* the last one over what the third left */
		off[i] = i == 3 ? off[2] :
			 i * (mtu + 40 + PAGE) + PAGE - 40 - 3 * i;
		sge.addr = (uintptr_t)(dst.p + off[i]);
		sge.length = 40 + mtu;
		sge.lkey = dst.mr->lkey;
		{
			struct ibv_recv_wr rwr = {
				.wr_id = 0x600 + i, .sg_list = &sge,
				.num_sge = 1,
			}, *rbad;

			ASSERT_EQ(0, ibv_post_recv(qb, &rwr, &rbad));
		}
		rc_fill(src.p + i * PAGE + 1, mtu, 400 + i, 0);
		wr_init(&wr, &sge, 0x700 + i, IBV_WR_SEND, src.p + i * PAGE + 1,
			mtu - i, src.mr->lkey, 0, 0);
		wr.wr.ud.ah = ah;
		wr.wr.ud.remote_qpn = qb->qp_num;
		wr.wr.ud.remote_qkey = 0x11111111;
		if (i == 3) {
			/* zeros, from pages nobody touched */
			sge.addr = (uintptr_t)zero.p + 5;
			sge.lkey = zero.mr->lkey;
		}
		ASSERT_EQ(0, ibv_post_send(qa, &wr, &bad));
		ASSERT_EQ(1, rc_poll(ca, &wc, 1, RC_TIMEOUT_MS));
		EXPECT_EQ(0x700 + i, wc.wr_id);
		EXPECT_EQ(IBV_WC_SUCCESS, wc.status) {
			TH_LOG("UD send %d: %s", i, ibv_wc_status_str(wc.status));
		}
		ASSERT_EQ(1, rc_poll(cb, &wc, 1, RC_TIMEOUT_MS));
		EXPECT_EQ(0x600 + i, wc.wr_id);
		EXPECT_EQ(IBV_WC_SUCCESS, wc.status) {
			TH_LOG("UD receive %d: %s", i,
			       ibv_wc_status_str(wc.status));
		}
		EXPECT_EQ(40 + mtu - i, wc.byte_len);
		EXPECT_EQ(qa->qp_num, wc.src_qp);
		if (i < 3)
			rc_fill(img + off[i] + 40, mtu - i, 400 + i, 0);
		else
			memset(img + off[i] + 40, 0, mtu - i);
		/* The GRH is the IP header: not ours to predict here. */
		memcpy(img + off[i], dst.p + off[i], 40);
	}
	/* The GRH of the last one covered the third's. */
	EXPECT_SAME_BYTES(dst.p, img, size, "the UD receive buffer");
	/* The first receive's GRH (IPv4: its header at byte 20) names A. */
	EXPECT_EQ(0, memcmp(dst.p + off[0] + 20 + 12, self->da->gid.raw + 12,
			    4));
	free(img);
	rc_buf_free(&zero);
	rc_buf_free(&src);
	rc_buf_free(&dst);
	ibv_destroy_ah(ah);
	ibv_destroy_qp(qa);
	ibv_destroy_qp(qb);
	ibv_destroy_cq(ca);
	ibv_destroy_cq(cb);
}

/* UC: SENDs and WRITEs of many pages between ODP buffers. */
TEST_F_TIMEOUT(odp, uc, 120)
{
	struct rc_opts o = {
		.access = IBV_ACCESS_REMOTE_WRITE, .qp_type = IBV_QPT_UC,
	};
	static const enum ibv_wr_opcode ops[] = {
		IBV_WR_SEND, IBV_WR_SEND_WITH_IMM, IBV_WR_RDMA_WRITE,
		IBV_WR_RDMA_WRITE_WITH_IMM,
	};
	unsigned int i;

	rc_env_create(_metadata, &self->e, self->da, self->db, &o, 256 * 1024,
		      ODP_ACCESS, ODP_ACCESS);
	for (i = 0; i < sizeof(ops) / sizeof(ops[0]); i++)
		rc_xfer(_metadata, &self->e, &(struct rc_xfer){
			.op = ops[i], .len = 70000 + i, .lsge = 2, .rsge = 2,
			.loff = 4090, .roff = 13, .imm = 0xc0de + i,
			.seed = 500 + i, .wr_id = 0x800 + 16 * i,
		});
}

/*
 * XRC: an initiator at A, a target QP and an XRC SRQ at B, B's memory in
 * ODP, never touched: SENDs into the SRQ, WRITE, READ, atomics through
 * the target's PD.
 */
TEST_F_TIMEOUT(odp, xrc, 120)
{
	struct ibv_xrcd_init_attr xa = {
		.comp_mask = IBV_XRCD_INIT_ATTR_FD | IBV_XRCD_INIT_ATTR_OFLAGS,
		.fd = -1, .oflags = O_CREAT,
	};
	struct ibv_srq_init_attr_ex sa = {
		.attr = { .max_wr = 8, .max_sge = 1 },
		.comp_mask = IBV_SRQ_INIT_ATTR_TYPE | IBV_SRQ_INIT_ATTR_XRCD |
			     IBV_SRQ_INIT_ATTR_CQ | IBV_SRQ_INIT_ATTR_PD,
		.srq_type = IBV_SRQT_XRC,
	};
	struct ibv_qp_init_attr_ex ia;
	struct ibv_qp_attr a;
	struct ibv_xrcd *xrcd;
	struct ibv_srq *srq;
	struct ibv_cq *ca, *cb;
	struct ibv_qp *ini, *tgt;
	struct rc_qp q;
	struct rc_buf src, dst;
	struct ibv_send_wr wr;
	struct ibv_sge sge;
	struct ibv_wc wc;
	uint32_t srqn;
	size_t size = 4 * PAGE + 100000;
	uint8_t *img;

	xrcd = ibv_open_xrcd(self->db->ctx, &xa);
	ASSERT_NE(NULL, xrcd) {
		TH_LOG("ibv_open_xrcd: %s", strerror(errno));
	}
	ca = ibv_create_cq(self->da->ctx, 32, NULL, NULL, 0);
	cb = ibv_create_cq(self->db->ctx, 32, NULL, NULL, 0);
	ASSERT_TRUE(ca && cb);
	sa.xrcd = xrcd;
	sa.cq = cb;
	sa.pd = self->db->pd;
	srq = ibv_create_srq_ex(self->db->ctx, &sa);
	ASSERT_NE(NULL, srq) {
		TH_LOG("XRC SRQ: %s", strerror(errno));
	}
	ASSERT_EQ(0, ibv_get_srq_num(srq, &srqn));

	memset(&ia, 0, sizeof(ia));
	ia.qp_type = IBV_QPT_XRC_SEND;
	ia.send_cq = ca;
	ia.cap.max_send_wr = 16;
	ia.cap.max_send_sge = 1;
	ia.comp_mask = IBV_QP_INIT_ATTR_PD;
	ia.pd = self->da->pd;
	ini = ibv_create_qp_ex(self->da->ctx, &ia);
	ASSERT_NE(NULL, ini) {
		TH_LOG("XRC initiator: %s", strerror(errno));
	}
	memset(&ia, 0, sizeof(ia));
	ia.qp_type = IBV_QPT_XRC_RECV;
	ia.comp_mask = IBV_QP_INIT_ATTR_XRCD;
	ia.xrcd = xrcd;
	tgt = ibv_create_qp_ex(self->db->ctx, &ia);
	ASSERT_NE(NULL, tgt) {
		TH_LOG("XRC target: %s", strerror(errno));
	}

	/* rc_lib's attributes; the target has no send queue (no RTS). */
	memset(&q, 0, sizeof(q));
	q.dev = self->db;
	q.qp = tgt;
	ASSERT_EQ(0, rc_to_init(&q, QP_ACCESS));
	rc_rtr_attr(&a, &q, ini->qp_num, &self->da->gid, 0x100);
	ASSERT_EQ(0, ibv_modify_qp(tgt, &a, RC_RTR_MASK));
	q.dev = self->da;
	q.qp = ini;
	ASSERT_EQ(0, rc_to_init(&q, 0));
	rc_rtr_attr(&a, &q, tgt->qp_num, &self->db->gid, 0x200);
	ASSERT_EQ(0, ibv_modify_qp(ini, &a, IBV_QP_STATE | IBV_QP_AV |
				   IBV_QP_PATH_MTU | IBV_QP_DEST_QPN |
				   IBV_QP_RQ_PSN));
	rc_rts_attr(&a, &q, 0x100);
	ASSERT_EQ(0, ibv_modify_qp(ini, &a, RC_RTS_MASK));
	q.scq = ca;

	fresh_buf(_metadata, &src, self->da->pd, size, ODP_ACCESS);
	fresh_buf(_metadata, &dst, self->db->pd, size, ODP_ACCESS);
	img = calloc(1, size);
	ASSERT_NE(NULL, img);

	/* SEND into the SRQ. */
	sge.addr = (uintptr_t)dst.p + PAGE - 9;
	sge.length = 70000;
	sge.lkey = dst.mr->lkey;
	{
		struct ibv_recv_wr rwr = {
			.wr_id = 0x61, .sg_list = &sge, .num_sge = 1,
		}, *rbad;

		ASSERT_EQ(0, ibv_post_srq_recv(srq, &rwr, &rbad));
	}
	rc_fill(src.p + 3, 70000, 600, 0);
	wr_init(&wr, &sge, 0x60, IBV_WR_SEND, src.p + 3, 70000, src.mr->lkey,
		0, 0);
	wr.qp_type.xrc.remote_srqn = srqn;
	EXPECT_OK(post_wait(_metadata, &q, &wr, "XRC SEND"), "XRC SEND");
	ASSERT_EQ(1, rc_poll(cb, &wc, 1, RC_TIMEOUT_MS));
	EXPECT_EQ(0x61, wc.wr_id);
	EXPECT_EQ(IBV_WC_SUCCESS, wc.status) {
		TH_LOG("XRC receive: %s", ibv_wc_status_str(wc.status));
	}
	EXPECT_EQ(70000, wc.byte_len);
	EXPECT_EQ(tgt->qp_num, wc.qp_num);
	rc_fill(img + PAGE - 9, 70000, 600, 0);
	EXPECT_SAME_BYTES(dst.p, img, size, "the XRC SEND");

	/* WRITE past it, READ it back into A. */
	rc_fill(src.p + 3, 20000, 601, 0);
	wr_init(&wr, &sge, 0x62, IBV_WR_RDMA_WRITE, src.p + 3, 20000,
		src.mr->lkey, (uintptr_t)dst.p + 70000 + PAGE, dst.mr->rkey);
	wr.qp_type.xrc.remote_srqn = srqn;
	EXPECT_OK(post_wait(_metadata, &q, &wr, "XRC WRITE"), "XRC WRITE");
	rc_fill(img + 70000 + PAGE, 20000, 601, 0);
	EXPECT_SAME_BYTES(dst.p, img, size, "the XRC WRITE");
	wr_init(&wr, &sge, 0x63, IBV_WR_RDMA_READ, src.p + 50000, 20000,
		src.mr->lkey, (uintptr_t)dst.p + 70000 + PAGE, dst.mr->rkey);
	wr.qp_type.xrc.remote_srqn = srqn;
	EXPECT_OK(post_wait(_metadata, &q, &wr, "XRC READ"), "XRC READ");
	memset(img, 0, size);
	rc_fill(img + 50000, 20000, 601, 0);
	EXPECT_SAME_BYTES(src.p + 50000, img + 50000, 20000, "the XRC READ");

	/* FETCH_ADD on a word of B's last, untouched page. */
	wr_atomic(&wr, &sge, 0x64, IBV_WR_ATOMIC_FETCH_AND_ADD, src.p + 8,
		  src.mr->lkey, (uintptr_t)dst.p + size - 64, dst.mr->rkey,
		  77, 0);
	wr.qp_type.xrc.remote_srqn = srqn;
	EXPECT_OK(post_wait(_metadata, &q, &wr, "XRC FETCH_ADD"),
		  "XRC FETCH_ADD");
	EXPECT_EQ(0, rd64(src.p + 8));
	EXPECT_EQ(77, rd64(dst.p + size - 64));

	free(img);
	rc_buf_free(&src);
	rc_buf_free(&dst);
	EXPECT_EQ(0, ibv_destroy_qp(ini));
	EXPECT_EQ(0, ibv_destroy_qp(tgt));
	EXPECT_EQ(0, ibv_destroy_srq(srq));
	EXPECT_EQ(0, ibv_destroy_cq(ca));
	EXPECT_EQ(0, ibv_destroy_cq(cb));
	EXPECT_EQ(0, ibv_close_xrcd(xrcd));
}

/* .bss, for the implicit MRs. */
static uint8_t odp_bss[5 * PAGE];

/*
 * Two pages nothing maps: mapped and unmapped again, so the next mapping
 * the process makes may take them (make a hole just before using it).
 */
static uint8_t *new_hole(struct __test_metadata *_metadata)
{
	uint8_t *hole = mmap(NULL, 2 * PAGE, PROT_READ | PROT_WRITE,
			     MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

	ASSERT_NE(MAP_FAILED, hole);
	ASSERT_EQ(0, munmap(hole, 2 * PAGE));
	return hole;
}

/*
 * Implicit ODP MRs on both sides: the whole address space under one key,
 * the virtual address as the iova.  Traffic between a small malloc (the
 * brk heap), a large one (its own mmap), .bss and a fresh mmap; an
 * address nobody maps is a remote access error.
 */
TEST_F_TIMEOUT(odp, implicit, 120)
{
	struct ibv_mr *ia, *ib;
	uint8_t *small, *large, *fresh, *hole;
	size_t lsize = 3 << 20;
	struct rc_env *e = &self->e;
	struct ibv_send_wr wr;
	struct ibv_sge sge;
	struct rc_opts o = { .access = QP_ACCESS };
	uint8_t *img;

	rc_pair_create(_metadata, &e->p, self->da, self->db, &o);
	ia = ibv_reg_mr(self->da->pd, NULL, SIZE_MAX, ODP_ACCESS);
	ASSERT_NE(NULL, ia) {
		TH_LOG("implicit ODP MR: %s", strerror(errno));
	}
	ib = ibv_reg_mr(self->db->pd, NULL, SIZE_MAX, ODP_ACCESS);
	ASSERT_NE(NULL, ib);
	EXPECT_EQ(NULL, ia->addr);
	EXPECT_EQ(SIZE_MAX, ia->length);

	small = malloc(5000);
	large = malloc(lsize);
	fresh = mmap(NULL, lsize, PROT_READ | PROT_WRITE,
		     MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	img = malloc(lsize);
	ASSERT_TRUE(small && large && img && fresh != MAP_FAILED);

	/* small heap -> fresh mmap (WRITE) */
	rc_fill(small, 5000, 700, 0);
	rdma_ok(_metadata, &e->p.a, IBV_WR_RDMA_WRITE, small, ia->lkey,
		(uintptr_t)fresh + PAGE - 100, ib->rkey, 5000, 0x70,
		"WRITE heap to mmap");
	expect_window(_metadata, fresh, lsize, PAGE - 100, 5000, 700,
		      "the mmap after the WRITE");
	/* fresh mmap -> .bss (READ) */
	memset(odp_bss, 0xee, sizeof(odp_bss));
	rdma_ok(_metadata, &e->p.a, IBV_WR_RDMA_READ, odp_bss + 7, ia->lkey,
		(uintptr_t)fresh + PAGE - 100, ib->rkey, 5000, 0x71,
		"READ mmap to .bss");
	memset(img, 0xee, sizeof(odp_bss));
	rc_fill(img + 7, 5000, 700, 0);
	EXPECT_SAME_BYTES(odp_bss, img, sizeof(odp_bss), ".bss");
	/* large malloc -> large malloc elsewhere in it (SEND) */
	rc_fill(large, lsize / 2, 701, 0);
	memset(large + lsize / 2, 0, lsize / 2);
	send_ok(_metadata, e, large, ia->lkey, large + lsize / 2 + 3, ib->lkey,
		lsize / 2 - 3, 0x72, "SEND within a large malloc");
	rc_fill(img, lsize / 2 - 3, 701, 0);
	EXPECT_SAME_BYTES(large + lsize / 2 + 3, img, lsize / 2 - 3,
			  "the large malloc's second half");
	/* an atomic on the heap */
	memset(small, 0, 16);
	wr_atomic(&wr, &sge, 0x73, IBV_WR_ATOMIC_FETCH_AND_ADD, odp_bss + 8,
		  ia->lkey, (uintptr_t)small, ib->rkey, 9, 0);
	EXPECT_OK(post_wait(_metadata, &e->p.a, &wr, "FETCH_ADD on the heap"),
		  "implicit FETCH_ADD");
	EXPECT_EQ(0, rd64(odp_bss + 8));
	EXPECT_EQ(9, rd64(small));

	/* Nobody maps @hole: the responder's access error. */
	hole = new_hole(_metadata);
	wr_init(&wr, &sge, 0x74, IBV_WR_RDMA_WRITE, small, 100, ia->lkey,
		(uintptr_t)hole + 8, ib->rkey);
	EXPECT_EQ(IBV_WC_REM_ACCESS_ERR,
		  post_wait(_metadata, &e->p.a, &wr, "WRITE to a hole"));
	EXPECT_EQ(IBV_QPS_ERR, rc_qp_state(e->p.a.qp));
	new_pair(_metadata, e, self);
	/* and locally: a READ into one (the new pair's rings may fill the old) */
	hole = new_hole(_metadata);
	wr_init(&wr, &sge, 0x75, IBV_WR_RDMA_READ, hole + 8, 100, ia->lkey,
		(uintptr_t)small, ib->rkey);
	EXPECT_LOCAL_ERR(post_wait(_metadata, &e->p.a, &wr, "READ into a hole"),
			 "READ into a hole");
	new_pair(_metadata, e, self);
	/* The keys still work. */
	rdma_ok(_metadata, &e->p.a, IBV_WR_RDMA_WRITE, small, ia->lkey,
		(uintptr_t)fresh + 3 * PAGE, ib->rkey, 5000, 0x76,
		"WRITE after the errors");
	EXPECT_EQ(0, memcmp(fresh + 3 * PAGE, small, 5000));

	rc_pair_destroy(&e->p);
	EXPECT_EQ(0, ibv_dereg_mr(ia));
	EXPECT_EQ(0, ibv_dereg_mr(ib));
	free(small);
	free(large);
	free(img);
	munmap(fresh, lsize);
}

/* Prefetched memory (sync and async) then traffic into and out of it. */
TEST_F(odp, prefetch_traffic)
{
	struct rc_env *e = &self->e;
	const size_t size = 64 * PAGE;
	struct ibv_sge sge;

	env_create(_metadata, self, e, ODP_BOTH, size);
	sge = (struct ibv_sge){ (uintptr_t)e->bb.p, size, e->bb.mr->lkey };
	EXPECT_EQ(0, ibv_advise_mr(self->db->pd,
				   IBV_ADVISE_MR_ADVICE_PREFETCH_WRITE,
				   IBV_ADVISE_MR_FLAG_FLUSH, &sge, 1));
	rc_fill(e->ba.p, size, 800, 0);
	sge = (struct ibv_sge){ (uintptr_t)e->ba.p, size, e->ba.mr->lkey };
	EXPECT_EQ(0, ibv_advise_mr(self->da->pd, IBV_ADVISE_MR_ADVICE_PREFETCH,
				   0, &sge, 1));
	rdma_ok(_metadata, &e->p.a, IBV_WR_RDMA_WRITE, e->ba.p, e->ba.mr->lkey,
		(uintptr_t)e->bb.p, e->bb.mr->rkey, size, 0x80,
		"WRITE after prefetch");
	expect_window(_metadata, e->bb.p, size, 0, size, 800, "prefetched");
	send_ok(_metadata, e, e->ba.p + 1, e->ba.mr->lkey, e->bb.p + 3,
		e->bb.mr->lkey, size - 5, 0x82, "SEND after prefetch");
	EXPECT_EQ(0, memcmp(e->bb.p + 3, e->ba.p + 1, size - 5));
}

/*
 * MADV_DONTNEED of anonymous memory drops its pages: the contents are
 * zero from then on, for the device too (a READ that returned the old
 * data would be using pages the process no longer has).  WRITEs after
 * it land in the new pages.  Rounds over the whole buffer and parts.
 */
TEST_F_TIMEOUT(odp, dontneed_anon, 120)
{
	struct rc_env *e = &self->e;
	const size_t size = 64 * PAGE;
	struct { size_t off, len; } drop[] = {
		{ 0, 64 * PAGE }, { 8 * PAGE, 3 * PAGE }, { 63 * PAGE, PAGE },
	};
	uint8_t *img;
	unsigned int r;

	env_create(_metadata, self, e, ODP_BOTH, size);
	img = malloc(size);
	ASSERT_NE(NULL, img);
	for (r = 0; r < sizeof(drop) / sizeof(drop[0]); r++) {
		uint32_t seed = 900 + r;

		/* The device writes all of B, reads it back. */
		rc_fill(e->ba.p, size, seed, 0);
		rdma_ok(_metadata, &e->p.a, IBV_WR_RDMA_WRITE, e->ba.p,
			e->ba.mr->lkey, (uintptr_t)e->bb.p, e->bb.mr->rkey,
			size, 0x90 + r, "WRITE");
		EXPECT_EQ(0, memcmp(e->bb.p, e->ba.p, size));
		memset(e->ba.p, 0, size);
		rdma_ok(_metadata, &e->p.a, IBV_WR_RDMA_READ, e->ba.p,
			e->ba.mr->lkey, (uintptr_t)e->bb.p, e->bb.mr->rkey,
			size, 0xa0 + r, "READ");
		rc_fill(img, size, seed, 0);
		EXPECT_SAME_BYTES(e->ba.p, img, size, "READ before DONTNEED");

		ASSERT_EQ(0, madvise(e->bb.p + drop[r].off, drop[r].len,
				     MADV_DONTNEED));
		memset(img + drop[r].off, 0, drop[r].len);
		/* The device sees the zeros, as the CPU does. */
		memset(e->ba.p, 0xee, size);
		rdma_ok(_metadata, &e->p.a, IBV_WR_RDMA_READ, e->ba.p,
			e->ba.mr->lkey, (uintptr_t)e->bb.p, e->bb.mr->rkey,
			size, 0xb0 + r, "READ after DONTNEED");
		EXPECT_SAME_BYTES(e->ba.p, img, size, "READ after DONTNEED");
		EXPECT_SAME_BYTES(e->bb.p, img, size, "B after DONTNEED");

		/* A WRITE into the dropped range lands in the new pages. */
		rc_fill(e->ba.p, drop[r].len, seed + 50, 0);
		rdma_ok(_metadata, &e->p.a, IBV_WR_RDMA_WRITE, e->ba.p,
			e->ba.mr->lkey, (uintptr_t)e->bb.p + drop[r].off,
			e->bb.mr->rkey, drop[r].len, 0xc0 + r,
			"WRITE after DONTNEED");
		rc_fill(img + drop[r].off, drop[r].len, seed + 50, 0);
		EXPECT_SAME_BYTES(e->bb.p, img, size, "B after the WRITE");
		memset(e->ba.p, 0, size);
		rdma_ok(_metadata, &e->p.a, IBV_WR_RDMA_READ, e->ba.p,
			e->ba.mr->lkey, (uintptr_t)e->bb.p, e->bb.mr->rkey,
			size, 0xd0 + r, "READ back");
		EXPECT_SAME_BYTES(e->ba.p, img, size, "READ back");
		/* The local side too: A's pages dropped under a SEND. */
		ASSERT_EQ(0, madvise(e->ba.p, size, MADV_DONTNEED));
		send_ok(_metadata, e, e->ba.p, e->ba.mr->lkey, e->bb.p,
			e->bb.mr->lkey, size, 0xe0 + 2 * r,
			"SEND from dropped pages");
		memset(img, 0, size);
		EXPECT_SAME_BYTES(e->bb.p, img, size, "zeros sent");
	}
	free(img);
}

/* The PTE dropper of dontneed_shared. */
struct dropper {
	uint8_t *p;
	size_t size;
	atomic_int stop;
	atomic_long calls;
	int err;
};

static void *dropper_run(void *arg)
{
	struct dropper *d = arg;
	size_t part = d->size / 8, i = 0;

	while (!atomic_load(&d->stop)) {
		/* The whole mapping, then each eighth in turn. */
		if (i % 9 == 8) {
			if (madvise(d->p, d->size, MADV_DONTNEED))
				d->err = errno;
		} else if (madvise(d->p + (i % 9) * part, part,
				   MADV_DONTNEED)) {
			d->err = errno;
		}
		atomic_fetch_add(&d->calls, 1);
		i++;
		if (!(i & 15))
			sched_yield();
	}
	return NULL;
}

/*
 * A MAP_SHARED memfd at B, under ODP: a thread keeps dropping its PTEs
 * (MADV_DONTNEED: the data stays in the page cache, the mapping must fault
 * it back) while WRITEs, READs and SENDs into and out of it run, each
 * checked as it completes; at the end all of it is byte-exact, through
 * the mapping and in the file.
 */
TEST_F_TIMEOUT(odp, dontneed_shared, 300)
{
	const size_t slot = 96 * 1024, nslots = 32, size = slot * nslots;
	struct rc_env *e = &self->e;
	struct dropper d = { 0 };
	struct rc_buf shm;
	pthread_t th;
	uint8_t *want, *file;
	int fd, i, iters = 240;

	env_create(_metadata, self, e, ODP_BOTH, slot + PAGE);
	fd = memfd_create("vrdma_odp", 0);
	ASSERT_LE(0, fd);
	ASSERT_EQ(0, ftruncate(fd, size));
	memset(&shm, 0, sizeof(shm));
	shm.size = size;
	shm.p = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	ASSERT_NE(MAP_FAILED, shm.p);
	shm.mr = ibv_reg_mr(self->db->pd, shm.p, size, ODP_ACCESS);
	ASSERT_NE(NULL, shm.mr) {
		TH_LOG("ODP MR of a shared mapping: %s", strerror(errno));
	}
	want = calloc(1, size);
	file = malloc(size);
	ASSERT_TRUE(want && file);

	d.p = shm.p;
	d.size = size;
	ASSERT_EQ(0, pthread_create(&th, NULL, dropper_run, &d));
	for (i = 0; i < iters && _metadata->passed; i++) {
		size_t s = (i * 7) % nslots, off = s * slot + (i * 131) % PAGE;
		size_t len = 1 + rc_pat(i, 0) * 373 % (slot - PAGE);
		uint8_t *at = shm.p + off;
		char what[48];

		switch (i % 3) {
		case 0:
			snprintf(what, sizeof(what), "WRITE %d", i);
			rc_fill(e->ba.p, len, 1000 + i, 0);
			rdma_ok(_metadata, &e->p.a, IBV_WR_RDMA_WRITE,
				e->ba.p, e->ba.mr->lkey, (uintptr_t)at,
				shm.mr->rkey, len, i, what);
			break;
		case 1:
			snprintf(what, sizeof(what), "SEND %d", i);
			rc_fill(e->ba.p, len, 1000 + i, 0);
			send_ok(_metadata, e, e->ba.p, e->ba.mr->lkey, at,
				shm.mr->lkey, len, i, what);
			break;
		default:
			/* a SEND out of the shared mapping, B to A */
			snprintf(what, sizeof(what), "SEND from B %d", i);
			rc_fill(at, len, 1000 + i, 0);
			ASSERT_EQ(0, post_recv1(&e->p.a, i + 1, e->ba.p, len,
						e->ba.mr->lkey));
			{
				struct ibv_send_wr wr;
				struct ibv_sge sge;

				wr_init(&wr, &sge, i, IBV_WR_SEND, at, len,
					shm.mr->lkey, 0, 0);
				EXPECT_OK(post_wait(_metadata, &e->p.b, &wr,
						    what), what);
			}
			expect_recv(_metadata, &e->p.a, i + 1, len, what);
			break;
		}
		rc_fill(want + off, len, 1000 + i, 0);
		/* What landed, through the CPU and read by the device. */
		EXPECT_SAME_BYTES(at, want + off, len, what);
		memset(e->ba.p, 0, len);
		rdma_ok(_metadata, &e->p.a, IBV_WR_RDMA_READ, e->ba.p,
			e->ba.mr->lkey, (uintptr_t)at, shm.mr->rkey, len,
			0x10000 + i, "READ back");
		EXPECT_SAME_BYTES(e->ba.p, want + off, len, what);
	}
	atomic_store(&d.stop, 1);
	pthread_join(th, NULL);
	EXPECT_EQ(0, d.err) {
		TH_LOG("madvise: %s", strerror(d.err));
	}
	TH_LOG("%d transfers, %ld MADV_DONTNEED calls meanwhile", i,
	       atomic_load(&d.calls));
	EXPECT_LT(iters, atomic_load(&d.calls)) {
		TH_LOG("the dropper hardly ran");
	}
	EXPECT_SAME_BYTES(shm.p, want, size, "the mapping at the end");
	ASSERT_EQ((ssize_t)size, pread(fd, file, size, 0));
	EXPECT_SAME_BYTES(file, want, size, "the file at the end");
	EXPECT_EQ(0, ibv_dereg_mr(shm.mr));
	munmap(shm.p, size);
	close(fd);
	free(want);
	free(file);
}

/*
 * A mapping replaced at the same address (munmap, then a memfd mapped
 * there with MAP_FIXED): the MR follows the address space, so the device
 * reads and writes the new mapping, never the pages of the old one.
 */
TEST_F(odp, remap)
{
	struct rc_env *e = &self->e;
	const size_t size = 16 * PAGE;
	uint8_t *img, *file, *p;
	int fd;

	env_create(_metadata, self, e, ODP_BOTH, size);
	rc_fill(e->bb.p, size, 1100, 0);
	rdma_ok(_metadata, &e->p.a, IBV_WR_RDMA_READ, e->ba.p, e->ba.mr->lkey,
		(uintptr_t)e->bb.p, e->bb.mr->rkey, size, 0x110,
		"READ of the first mapping");
	EXPECT_EQ(0, memcmp(e->ba.p, e->bb.p, size));

	img = malloc(size);
	file = malloc(size);
	ASSERT_TRUE(img && file);
	fd = memfd_create("vrdma_odp_remap", 0);
	ASSERT_LE(0, fd);
	rc_fill(img, size, 1101, 0);
	ASSERT_EQ((ssize_t)size, pwrite(fd, img, size, 0));
	ASSERT_EQ(0, munmap(e->bb.p, size));
	p = mmap(e->bb.p, size, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_FIXED,
		 fd, 0);
	ASSERT_EQ(e->bb.p, p);

	memset(e->ba.p, 0, size);
	rdma_ok(_metadata, &e->p.a, IBV_WR_RDMA_READ, e->ba.p, e->ba.mr->lkey,
		(uintptr_t)e->bb.p, e->bb.mr->rkey, size, 0x111,
		"READ of the new mapping");
	EXPECT_SAME_BYTES(e->ba.p, img, size, "READ of the new mapping");
	rc_fill(e->ba.p, size / 2, 1102, 0);
	rdma_ok(_metadata, &e->p.a, IBV_WR_RDMA_WRITE, e->ba.p, e->ba.mr->lkey,
		(uintptr_t)e->bb.p + PAGE, e->bb.mr->rkey, size / 2, 0x112,
		"WRITE into the new mapping");
	rc_fill(img + PAGE, size / 2, 1102, 0);
	ASSERT_EQ((ssize_t)size, pread(fd, file, size, 0));
	EXPECT_SAME_BYTES(file, img, size, "the file");
	close(fd);
	free(img);
	free(file);
}

/*
 * B's ODP memory unmapped under its MR: every request into it is a
 * remote access error (WRITE, READ, an atomic), a SEND into a receive
 * WQE there is the responder's local error; both QPs go to ERR, the
 * device goes on working.  Then one page unmapped in the middle of a
 * WRITE's range.
 */
TEST_F_TIMEOUT(odp, munmap_remote, 180)
{
	struct rc_env *e = &self->e;
	const size_t size = 16 * PAGE;
	struct ibv_send_wr wr;
	struct ibv_sge sge;
	struct ibv_wc wc;
	struct rc_buf hole;
	uint64_t raddr;
	int k;

	env_create(_metadata, self, e, ODP_BOTH, size);
	rc_fill(e->ba.p, size, 1200, 0);
	/* Keep the MR, drop the mapping: nothing else is mapped there. */
	hole = e->bb;
	ASSERT_EQ(0, munmap(hole.p, size));
	e->bb.p = NULL;
	raddr = (uintptr_t)hole.p + 100;

	for (k = 0; k < 3; k++) {
		static const char *const what[] = {
			"WRITE to unmapped", "READ of unmapped",
			"FETCH_ADD on unmapped",
		};

		if (k == 2)
			wr_atomic(&wr, &sge, 0x120 + k,
				  IBV_WR_ATOMIC_FETCH_AND_ADD, e->ba.p,
				  e->ba.mr->lkey, raddr + 4, hole.mr->rkey, 1,
				  0);
		else
			wr_init(&wr, &sge, 0x120 + k, k ? IBV_WR_RDMA_READ :
				IBV_WR_RDMA_WRITE, e->ba.p, 3 * PAGE,
				e->ba.mr->lkey, raddr, hole.mr->rkey);
		EXPECT_EQ(IBV_WC_REM_ACCESS_ERR,
			  post_wait(_metadata, &e->p.a, &wr, what[k])) {
			TH_LOG("%s", what[k]);
		}
		EXPECT_EQ(IBV_QPS_ERR, rc_qp_state(e->p.a.qp));
		EXPECT_EQ(IBV_QPS_ERR, rc_qp_state(e->p.b.qp)) {
			TH_LOG("%s: the responder", what[k]);
		}
		new_pair(_metadata, e, self);
	}

	/* A SEND into a receive WQE in the unmapped range. */
	ASSERT_EQ(0, post_recv1(&e->p.b, 0x131, hole.p, 5000, hole.mr->lkey));
	wr_init(&wr, &sge, 0x130, IBV_WR_SEND, e->ba.p, 5000, e->ba.mr->lkey,
		0, 0);
	{
		enum ibv_wc_status s = post_wait(_metadata, &e->p.a, &wr,
						 "SEND into unmapped");

		/* the responder's local error: NAKed either way */
		EXPECT_TRUE(s == IBV_WC_REM_OP_ERR ||
			    s == IBV_WC_REM_ACCESS_ERR) {
			TH_LOG("SEND into unmapped: %s",
			       ibv_wc_status_str(s));
		}
	}
	ASSERT_EQ(1, rc_poll(e->p.b.rcq, &wc, 1, RC_TIMEOUT_MS));
	EXPECT_EQ(0x131, wc.wr_id);
	EXPECT_LOCAL_ERR(wc.status, "the receive into unmapped memory");
	EXPECT_EQ(IBV_QPS_ERR, rc_qp_state(e->p.b.qp));
	ibv_dereg_mr(hole.mr);
	e->bb.mr = NULL;

	/* One page missing in the middle of a WRITE's range. */
	new_pair(_metadata, e, self);
	fresh_buf(_metadata, &e->bb, self->db->pd, size, ODP_ACCESS);
	ASSERT_EQ(0, munmap(e->bb.p + 5 * PAGE, PAGE));
	wr_init(&wr, &sge, 0x140, IBV_WR_RDMA_WRITE, e->ba.p, 8 * PAGE,
		e->ba.mr->lkey, (uintptr_t)e->bb.p + 2 * PAGE + 3,
		e->bb.mr->rkey);
	EXPECT_EQ(IBV_WC_REM_ACCESS_ERR,
		  post_wait(_metadata, &e->p.a, &wr, "WRITE across a hole"));
	/* Outside the WRITE's range nothing changed. */
	{
		uint8_t zero[2 * PAGE + 3] = { 0 };

		EXPECT_EQ(0, memcmp(e->bb.p, zero, sizeof(zero)));
		EXPECT_EQ(0, memcmp(e->bb.p + 10 * PAGE + 3, zero,
				    sizeof(zero)));
	}
	/* Remapped, the range works again. */
	ASSERT_EQ(e->bb.p + 5 * PAGE,
		  mmap(e->bb.p + 5 * PAGE, PAGE, PROT_READ | PROT_WRITE,
		       MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED, -1, 0));
	new_pair(_metadata, e, self);
	rdma_ok(_metadata, &e->p.a, IBV_WR_RDMA_WRITE, e->ba.p, e->ba.mr->lkey,
		(uintptr_t)e->bb.p + 2 * PAGE + 3, e->bb.mr->rkey, 8 * PAGE,
		0x141, "WRITE after the remap");
	EXPECT_EQ(0, memcmp(e->bb.p + 2 * PAGE + 3, e->ba.p, 8 * PAGE));
	fresh_pair_works(_metadata, self);
}

/*
 * A's ODP memory unmapped: a SEND from it, a READ into it and an atomic
 * whose result goes there fail at A with a local error, A's QP goes to
 * ERR, B receives nothing, and the device goes on working.
 */
TEST_F_TIMEOUT(odp, munmap_local, 180)
{
	struct rc_env *e = &self->e;
	const size_t size = 16 * PAGE;
	struct ibv_send_wr wr;
	struct ibv_sge sge;
	struct rc_buf gone;
	int k;

	env_create(_metadata, self, e, ODP_BOTH, size);
	gone = e->ba;
	ASSERT_EQ(0, munmap(gone.p, size));
	e->ba.p = NULL;

	for (k = 0; k < 3; k++) {
		static const char *const what[] = {
			"SEND from unmapped", "READ into unmapped",
			"CMP_SWP result into unmapped",
		};

		ASSERT_EQ(0, post_recv1(&e->p.b, 0x151, e->bb.p, size,
					e->bb.mr->lkey));
		if (k == 0)
			wr_init(&wr, &sge, 0x150, IBV_WR_SEND, gone.p + 5,
				3 * PAGE, gone.mr->lkey, 0, 0);
		else if (k == 1)
			wr_init(&wr, &sge, 0x150, IBV_WR_RDMA_READ, gone.p + 5,
				3 * PAGE, gone.mr->lkey, (uintptr_t)e->bb.p,
				e->bb.mr->rkey);
		else
			wr_atomic(&wr, &sge, 0x150, IBV_WR_ATOMIC_CMP_AND_SWP,
				  gone.p + 8, gone.mr->lkey,
				  (uintptr_t)e->bb.p, e->bb.mr->rkey, 0, 1);
		EXPECT_LOCAL_ERR(post_wait(_metadata, &e->p.a, &wr, what[k]),
				 what[k]);
		EXPECT_EQ(IBV_QPS_ERR, rc_qp_state(e->p.a.qp));
		if (k == 0)
			EXPECT_CQ_EMPTY(e->p.b.rcq, "the peer of a local error");
		new_pair(_metadata, e, self);
	}
	ibv_dereg_mr(gone.mr);
	e->ba.mr = NULL;
	fresh_pair_works(_metadata, self);
}

static int wait_fd(int fd, int ms)
{
	struct pollfd pfd = { .fd = fd, .events = POLLIN };
	char c;

	if (poll(&pfd, 1, ms) != 1 || read(fd, &c, 1) != 1)
		return -1;
	return 0;
}

/*
 * fork() with B's buffer in an ODP MR the device has used: after it the
 * parent's pages are copy-on-write.  The child writes the first third of
 * its copy; the parent writes the second third (its own copy now) and the
 * device must read the parent's new data, not the page the child kept;
 * the device WRITEs the last third, which must break the sharing for the
 * parent and not land in the child.  The child checks its copy.
 */
TEST_F_TIMEOUT(odp, fork_cow, 120)
{
	struct rc_env *e = &self->e;
	const size_t third = 4 * PAGE, size = 3 * third;
	int to_child[2], to_parent[2], st = 0;
	uint8_t *img;
	pid_t pid;

	env_create(_metadata, self, e, ODP_BOTH, size);
	rc_fill(e->bb.p, size, 1300, 0);
	rdma_ok(_metadata, &e->p.a, IBV_WR_RDMA_READ, e->ba.p, e->ba.mr->lkey,
		(uintptr_t)e->bb.p, e->bb.mr->rkey, size, 0x160,
		"READ before fork");
	EXPECT_EQ(0, memcmp(e->ba.p, e->bb.p, size));
	img = malloc(size);
	ASSERT_NE(NULL, img);
	ASSERT_EQ(0, pipe(to_child));
	ASSERT_EQ(0, pipe(to_parent));

	fflush(stdout);
	pid = fork();
	ASSERT_LE(0, pid);
	if (!pid) {
		/* No verbs here; _exit(): the parent's atexit is not ours. */
		uint8_t *want = malloc(size);
		int bad;

		rc_fill(e->bb.p, third, 1301, 0);
		if (write(to_parent[1], "r", 1) != 1 ||
		    wait_fd(to_child[0], 60000) || !want)
			_exit(2);
		rc_fill(want, size, 1300, 0);
		rc_fill(want, third, 1301, 0);
		bad = memcmp(e->bb.p, want, size) != 0;
		if (bad)
			printf("# the child's copy changed at offset %ld\n",
			       rc_memdiff(e->bb.p, want, size));
		fflush(stdout);
		_exit(bad);
	}
	ASSERT_EQ(0, wait_fd(to_parent[0], 60000));
	rc_fill(img, size, 1300, 0);
	memset(e->ba.p, 0, size);
	rdma_ok(_metadata, &e->p.a, IBV_WR_RDMA_READ, e->ba.p, e->ba.mr->lkey,
		(uintptr_t)e->bb.p, e->bb.mr->rkey, size, 0x161,
		"READ after the child wrote");
	EXPECT_SAME_BYTES(e->ba.p, img, size, "the parent's data");

	rc_fill(e->bb.p + third, third, 1302, 0);
	rc_fill(img + third, third, 1302, 0);
	memset(e->ba.p, 0, size);
	rdma_ok(_metadata, &e->p.a, IBV_WR_RDMA_READ, e->ba.p, e->ba.mr->lkey,
		(uintptr_t)e->bb.p, e->bb.mr->rkey, size, 0x162,
		"READ after the parent wrote");
	EXPECT_SAME_BYTES(e->ba.p, img, size,
			  "the parent's copy after its write");

	rc_fill(e->ba.p, third, 1303, 0);
	rdma_ok(_metadata, &e->p.a, IBV_WR_RDMA_WRITE, e->ba.p, e->ba.mr->lkey,
		(uintptr_t)e->bb.p + 2 * third, e->bb.mr->rkey, third, 0x163,
		"WRITE into a shared page");
	rc_fill(img + 2 * third, third, 1303, 0);
	EXPECT_SAME_BYTES(e->bb.p, img, size, "the parent after the WRITE");

	ASSERT_EQ(1, write(to_child[1], "g", 1));
	ASSERT_EQ(pid, waitpid(pid, &st, 0));
	EXPECT_TRUE(WIFEXITED(st) && WEXITSTATUS(st) == 0) {
		TH_LOG("the child's copy was not its own (status %#x)", st);
	}
	/* After the child is gone, too. */
	memset(e->ba.p, 0, size);
	rdma_ok(_metadata, &e->p.a, IBV_WR_RDMA_READ, e->ba.p, e->ba.mr->lkey,
		(uintptr_t)e->bb.p, e->bb.mr->rkey, size, 0x164,
		"READ after the child");
	EXPECT_SAME_BYTES(e->ba.p, img, size, "after the child exited");
	close(to_child[0]);
	close(to_child[1]);
	close(to_parent[0]);
	close(to_parent[1]);
	free(img);
}

/*
 * ibv_rereg_mr() of an ODP MR: new access rights (a WRITE refused while
 * it is read-only), then a new translation onto fresh memory (traffic
 * lands there, the old memory untouched), and back.
 */
TEST_F_TIMEOUT(odp, rereg, 120)
{
	struct rc_env *e = &self->e;
	const size_t size = 16 * PAGE, len = 5 * PAGE + 3;
	struct ibv_send_wr wr;
	struct ibv_sge sge;
	uint8_t *nb, *old;
	int ret;

	env_create(_metadata, self, e, ODP_BOTH, size);
	rc_fill(e->ba.p, size, 1400, 0);
	rdma_ok(_metadata, &e->p.a, IBV_WR_RDMA_WRITE, e->ba.p, e->ba.mr->lkey,
		(uintptr_t)e->bb.p, e->bb.mr->rkey, size, 0x170, "WRITE");

	ret = ibv_rereg_mr(e->bb.mr, IBV_REREG_MR_CHANGE_ACCESS, NULL, NULL, 0,
			   IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_READ |
			   IBV_ACCESS_ON_DEMAND);
	ASSERT_EQ(0, ret) {
		TH_LOG("rereg access: %d %s", ret, strerror(errno));
	}
	rdma_ok(_metadata, &e->p.a, IBV_WR_RDMA_READ, e->ba.p + 1,
		e->ba.mr->lkey, (uintptr_t)e->bb.p, e->bb.mr->rkey, len, 0x171,
		"READ, read-only");
	EXPECT_EQ(0, memcmp(e->ba.p + 1, e->bb.p, len));
	wr_init(&wr, &sge, 0x172, IBV_WR_RDMA_WRITE, e->ba.p, len,
		e->ba.mr->lkey, (uintptr_t)e->bb.p, e->bb.mr->rkey);
	EXPECT_EQ(IBV_WC_REM_ACCESS_ERR,
		  post_wait(_metadata, &e->p.a, &wr, "WRITE, read-only"));
	new_pair(_metadata, e, self);
	ret = ibv_rereg_mr(e->bb.mr, IBV_REREG_MR_CHANGE_ACCESS, NULL, NULL, 0,
			   ODP_ACCESS);
	ASSERT_EQ(0, ret);
	rc_fill(e->ba.p, len, 1401, 0);
	rdma_ok(_metadata, &e->p.a, IBV_WR_RDMA_WRITE, e->ba.p, e->ba.mr->lkey,
		(uintptr_t)e->bb.p, e->bb.mr->rkey, len, 0x173,
		"WRITE, writable again");
	EXPECT_EQ(0, memcmp(e->ba.p, e->bb.p, len));

	/* A new translation, onto memory nobody touched. */
	nb = mmap(NULL, size, PROT_READ | PROT_WRITE,
		  MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	ASSERT_NE(MAP_FAILED, nb);
	old = malloc(size);
	ASSERT_NE(NULL, old);
	memcpy(old, e->bb.p, size);
	ret = ibv_rereg_mr(e->bb.mr, IBV_REREG_MR_CHANGE_TRANSLATION, NULL,
			   nb + 5, size - 5, 0);
	ASSERT_EQ(0, ret) {
		TH_LOG("rereg translation: %d %s", ret, strerror(errno));
	}
	rc_fill(e->ba.p, len, 1402, 0);
	rdma_ok(_metadata, &e->p.a, IBV_WR_RDMA_WRITE, e->ba.p, e->ba.mr->lkey,
		(uintptr_t)nb + 5 + PAGE, e->bb.mr->rkey, len, 0x174,
		"WRITE into the new memory");
	expect_window(_metadata, nb, size, 5 + PAGE, len, 1402,
		      "the new memory");
	EXPECT_SAME_BYTES(e->bb.p, old, size, "the old memory");
	send_ok(_metadata, e, e->ba.p, e->ba.mr->lkey, nb + 5, e->bb.mr->lkey,
		len, 0x176, "SEND into the new memory");
	EXPECT_EQ(0, memcmp(nb + 5, e->ba.p, len));
	/* Back onto the old memory before the teardown. */
	ret = ibv_rereg_mr(e->bb.mr, IBV_REREG_MR_CHANGE_TRANSLATION, NULL,
			   e->bb.p, size, 0);
	ASSERT_EQ(0, ret);
	memset(e->ba.p, 0, size);
	rdma_ok(_metadata, &e->p.a, IBV_WR_RDMA_READ, e->ba.p, e->ba.mr->lkey,
		(uintptr_t)e->bb.p, e->bb.mr->rkey, size, 0x177,
		"READ of the old memory");
	EXPECT_SAME_BYTES(e->ba.p, old, size, "READ of the old memory");
	free(old);
	munmap(nb, size);
}

/*
 * Deregistration of the responder's and of the requester's ODP MR, and
 * munmap of the responder's memory, while a 4 MiB transfer runs: it
 * completes, whole or with an error, nothing hangs or crashes, and the
 * device goes on working.
 */
TEST_F_TIMEOUT(odp, dereg_in_flight, 180)
{
	struct rc_env *e = &self->e;
	const size_t size = 4 << 20;
	struct ibv_send_wr wr, *bad;
	struct ibv_sge sge;
	struct ibv_wc wc;
	int k;

	for (k = 0; k < 3; k++) {
		static const char *const what[] = {
			"READ, responder's MR deregistered",
			"WRITE, requester's MR deregistered",
			"WRITE, responder's memory unmapped",
		};

		env_create(_metadata, self, e, ODP_BOTH, size);
		rc_fill(k == 0 ? e->bb.p : e->ba.p, size, 1500 + k, 0);
		wr_init(&wr, &sge, 0x180 + k, k ? IBV_WR_RDMA_WRITE :
			IBV_WR_RDMA_READ, e->ba.p, size, e->ba.mr->lkey,
			(uintptr_t)e->bb.p, e->bb.mr->rkey);
		ASSERT_EQ(0, ibv_post_send(e->p.a.qp, &wr, &bad));
		usleep(2000);
		if (k == 0) {
			EXPECT_EQ(0, ibv_dereg_mr(e->bb.mr));
			e->bb.mr = NULL;
		} else if (k == 1) {
			EXPECT_EQ(0, ibv_dereg_mr(e->ba.mr));
			e->ba.mr = NULL;
		} else {
			EXPECT_EQ(0, munmap(e->bb.p, size));
			e->bb.p = NULL;
		}
		ASSERT_EQ(1, rc_poll(e->p.a.scq, &wc, 1, 4 * RC_TIMEOUT_MS)) {
			TH_LOG("%s: no completion", what[k]);
		}
		EXPECT_EQ(0x180 + k, wc.wr_id);
		EXPECT_TRUE(wc.status == IBV_WC_SUCCESS ||
			    wc.status == IBV_WC_REM_ACCESS_ERR ||
			    wc.status == IBV_WC_LOC_PROT_ERR ||
			    wc.status == IBV_WC_LOC_ACCESS_ERR) {
			TH_LOG("%s: %s", what[k], ibv_wc_status_str(wc.status));
		}
		TH_LOG("%s: %s", what[k], ibv_wc_status_str(wc.status));
		rc_env_destroy(e);
	}
	fresh_pair_works(_metadata, self);
}

/*
 * The process exits with ODP MRs registered (explicit and implicit) and
 * transfers through them running: the kernel cleans up (vm-run fails the
 * suite on any kernel warning).
 */
TEST_F(odp, exit_registered)
{
	struct rc_env *e = &self->e;
	const size_t size = 2 << 20;
	struct ibv_send_wr wr, *bad;
	struct ibv_sge sge;
	struct ibv_mr *imr;

	env_create(_metadata, self, e, ODP_BOTH, size);
	imr = ibv_reg_mr(self->db->pd, NULL, SIZE_MAX, ODP_ACCESS);
	ASSERT_NE(NULL, imr);
	rc_fill(e->ba.p, size, 1600, 0);
	wr_init(&wr, &sge, 0x190, IBV_WR_RDMA_WRITE, e->ba.p, size,
		e->ba.mr->lkey, (uintptr_t)e->bb.p, imr->rkey);
	ASSERT_EQ(0, ibv_post_send(e->p.a.qp, &wr, &bad));
	wr_init(&wr, &sge, 0x191, IBV_WR_RDMA_READ, e->ba.p, size,
		e->ba.mr->lkey, (uintptr_t)e->bb.p, e->bb.mr->rkey);
	ASSERT_EQ(0, ibv_post_send(e->p.a.qp, &wr, &bad));
	/* No teardown: everything is left to the kernel. */
	fflush(stdout);
	_exit(_metadata->passed ? 0 : 1);
}

static void restore_local_direct(void)
{
	if (!rc_cfg.is_rxe)
		odp_write_param("1");
}

static void odp_main_setup(void)
{
	atexit(restore_local_direct);
}

int main(int argc, char **argv)
{
	return rc_suite_main_setup(argc, argv, odp_main_setup);
}
