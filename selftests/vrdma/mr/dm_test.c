// SPDX-License-Identifier: GPL-2.0
/*
 * Device memory through the standard verbs API: ibv_alloc_dm(),
 * ibv_free_dm(), ibv_memcpy_to_dm()/from_dm(), ibv_reg_dm_mr(),
 * ibv_import_dm()/ibv_unimport_dm().
 *
 * The API (fixture dm, one device): max_dm_size announced; DMs of 4 bytes
 * to max_dm_size read back zeroed and hold what is copied in, at every
 * offset; what is refused and how (0 or max_dm_size + 1 bytes, comp_mask
 * bits, alignment beyond a page; copies at offsets or of lengths that are
 * not multiples of 4, or beyond the DM, leaving it untouched); DM MRs
 * beyond the DM or not zero based refused, zero-length ones taken; a DM
 * with an MR cannot be freed (EBUSY); a second context on a dup of the
 * command file imports the DM by its handle and sees and writes the same
 * bytes, and importing a PD's or an MR's handle as a DM fails; the
 * device's total (VRDMA_MAX_DM_TOTAL: 64 DMs of max_dm_size) refused
 * beyond with ENOMEM, given back by free and by closing the context with
 * DMs and DM MRs left; a process without CAP_IPC_LOCK held to its
 * RLIMIT_MEMLOCK, its VmPin grown by each DM and back to where it was
 * after; thousands of DMs allocated and freed leave nothing behind.
 *
 * RDMA (fixture dm_rc, variants loopback and two_devices as in rc_test.c):
 * SEND from a DM MR into an ordinary MR and from one DM MR into another,
 * RDMA WRITE into a remote DM MR and READ from it, CAS and FAA on a DM
 * word, every byte checked, and the bytes around untouched; a WRITE beyond
 * the DM MR (inside the DM) is refused.  rc/local_path.sh runs these with
 * the loopback path on and off.
 *
 * Runs as root in the test VM; main() (rc_suite.h) sets up the module, a
 * veth pair and the two RDMA devices.  rdma_rxe has no device memory:
 * with VRDMA_TEST_TYPE=rxe every test skips.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <grp.h>
#include <inttypes.h>
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

/* drivers/vrdma/param.h: VRDMA_MAX_DM_SIZE, VRDMA_MAX_DM_TOTAL */
#define DM_MAX		(1 << 20)
#define DM_TOTAL	(64 << 20)
#define DM_ZB		IBV_ACCESS_ZERO_BASED
#define DM_ATOMIC_QP	(IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ | \
			 IBV_ACCESS_REMOTE_ATOMIC)
#define DM_ALL		(DM_ZB | IBV_ACCESS_LOCAL_WRITE | \
			 IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ | \
			 IBV_ACCESS_REMOTE_ATOMIC)

static struct ibv_dm *dm_alloc(struct ibv_context *ctx, size_t len)
{
	struct ibv_alloc_dm_attr a = { .length = len };

	return ibv_alloc_dm(ctx, &a);
}

/* max_dm_size, or skip where the device has none (rxe) */
#define DM_MAX_OR_SKIP(ctx, max) do {					\
	struct ibv_device_attr_ex __ax;					\
									\
	memset(&__ax, 0, sizeof(__ax));					\
	ASSERT_EQ(0, ibv_query_device_ex((ctx), NULL, &__ax));		\
	(max) = __ax.max_dm_size;					\
	if (!(max))							\
		RC_SKIP_ON_RXE(return, "no device memory");		\
} while (0)

/* The pinned pages of this process, from VmPin of /proc/self/status. */
static long vm_pin_kb(void)
{
	char line[256];
	long kb = -1;
	FILE *f;

	f = fopen("/proc/self/status", "r");
	if (!f)
		return -1;
	while (fgets(line, sizeof(line), f))
		if (sscanf(line, "VmPin: %ld kB", &kb) == 1)
			break;
	fclose(f);
	return kb;
}

/* ---- the API ---------------------------------------------------------- */

FIXTURE(dm) {
	struct rc_dev d;
	uint64_t max;
};

FIXTURE_SETUP(dm)
{
	rc_dev_open(_metadata, &self->d, 0);
	DM_MAX_OR_SKIP(self->d.ctx, self->max);
}

FIXTURE_TEARDOWN(dm)
{
	rc_dev_close(&self->d);
}

TEST_F(dm, max_size)
{
	EXPECT_EQ(DM_MAX, self->max);
}

/* Zeroed at first; what goes in comes out, whole and in pieces. */
TEST_F(dm, sizes)
{
	static const size_t sizes[] = {
		4, 8, 100, 4092, 4096, 4100, 65540, DM_MAX - 4, DM_MAX,
	};
	uint8_t *want, *got;
	size_t i, n;

	want = malloc(DM_MAX);
	got = malloc(DM_MAX);
	ASSERT_NE(NULL, want);
	ASSERT_NE(NULL, got);
	for (i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++) {
		struct ibv_dm *dm;
		char what[64];

		n = sizes[i];
		snprintf(what, sizeof(what), "DM of %zu bytes", n);
		dm = dm_alloc(self->d.ctx, n);
		ASSERT_NE(NULL, dm) {
			TH_LOG("%s: %s", what, strerror(errno));
		}
		EXPECT_EQ(self->d.ctx, dm->context);
		memset(got, 0xee, n);
		ASSERT_EQ(0, ibv_memcpy_from_dm(got, dm, 0, n));
		memset(want, 0, n);
		EXPECT_SAME_BYTES(got, want, n, what);

		rc_fill(want, n, i, 0);
		ASSERT_EQ(0, ibv_memcpy_to_dm(dm, 0, want, n));
		memset(got, 0xee, n);
		ASSERT_EQ(0, ibv_memcpy_from_dm(got, dm, 0, n));
		EXPECT_SAME_BYTES(got, want, n, what);

		/* A piece at an offset, the rest as it was. */
		if (n >= 12) {
			rc_fill(want + 4, n - 8, i + 100, 0);
			ASSERT_EQ(0, ibv_memcpy_to_dm(dm, 4, want + 4, n - 8));
			memset(got, 0xee, n);
			ASSERT_EQ(0, ibv_memcpy_from_dm(got + 4, dm, 4, n - 8));
			EXPECT_SAME_BYTES(got + 4, want + 4, n - 8, what);
			ASSERT_EQ(0, ibv_memcpy_from_dm(got, dm, 0, n));
			EXPECT_SAME_BYTES(got, want, n, what);
		}
		EXPECT_EQ(0, ibv_free_dm(dm));
	}
	free(want);
	free(got);
}

TEST_F(dm, alloc_refused)
{
	struct ibv_alloc_dm_attr a;
	struct ibv_dm *dm;

	memset(&a, 0, sizeof(a));
	a.length = self->max + 1;
	errno = 0;
	EXPECT_EQ(NULL, ibv_alloc_dm(self->d.ctx, &a));
	EXPECT_EQ(EINVAL, errno);
	a.length = 1ULL << 40;
	errno = 0;
	EXPECT_EQ(NULL, ibv_alloc_dm(self->d.ctx, &a));
	EXPECT_EQ(EINVAL, errno);
	a.length = 0;
	errno = 0;
	EXPECT_EQ(NULL, ibv_alloc_dm(self->d.ctx, &a));
	EXPECT_EQ(EINVAL, errno);
	a.length = 64;
	a.comp_mask = 1;
	errno = 0;
	EXPECT_EQ(NULL, ibv_alloc_dm(self->d.ctx, &a));
	EXPECT_EQ(EINVAL, errno);
	a.comp_mask = 0x80000000;
	EXPECT_EQ(NULL, ibv_alloc_dm(self->d.ctx, &a));
	a.comp_mask = 0;
	/* Any alignment up to a page holds; beyond, refused. */
	a.log_align_req = __builtin_ctz(sysconf(_SC_PAGESIZE));
	dm = ibv_alloc_dm(self->d.ctx, &a);
	ASSERT_NE(NULL, dm) {
		TH_LOG("page alignment: %s", strerror(errno));
	}
	EXPECT_EQ(0, ibv_free_dm(dm));
	a.log_align_req++;
	errno = 0;
	EXPECT_EQ(NULL, ibv_alloc_dm(self->d.ctx, &a));
	EXPECT_EQ(EINVAL, errno);
	a.log_align_req = 0;
	dm = ibv_alloc_dm(self->d.ctx, &a);
	ASSERT_NE(NULL, dm);
	EXPECT_EQ(0, ibv_free_dm(dm));
}

/*
 * Copies: offsets and lengths in multiples of 4, inside the DM (100 bytes,
 * in a page that has more): EINVAL, EFAULT, and the DM untouched.
 */
TEST_F(dm, copy_bounds)
{
	static const struct {
		uint64_t off;
		size_t len;
		int err;
	} cases[] = {
		{ 3, 4, EINVAL }, { 4, 3, EINVAL }, { 1, 1, EINVAL },
		{ 0, 102, EINVAL }, { 104, 4, EFAULT }, { 0, 104, EFAULT },
		{ 96, 8, EFAULT }, { 100, 4, EFAULT }, { 4096, 4, EFAULT },
		{ UINT64_MAX - 3, 4, EFAULT }, { 4, SIZE_MAX - 3, EFAULT },
		{ 96, 4, 0 }, { 100, 0, 0 }, { 0, 0, 0 }, { 0, 100, 0 },
	};
	uint8_t want[100], got[200], buf[200];
	struct ibv_dm *dm;
	size_t i;

	dm = dm_alloc(self->d.ctx, 100);
	ASSERT_NE(NULL, dm);
	rc_fill(want, sizeof(want), 7, 0);
	ASSERT_EQ(0, ibv_memcpy_to_dm(dm, 0, want, sizeof(want)));
	rc_fill(buf, sizeof(buf), 7, 0);
	for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		uint64_t off = cases[i].off;
		size_t len = cases[i].len;
		const uint8_t *src = off < sizeof(buf) ? buf + off : buf;

		EXPECT_EQ(cases[i].err, ibv_memcpy_from_dm(got, dm, off, len)) {
			TH_LOG("from_dm offset %" PRIu64 " length %zu", off,
			       len);
		}
		/* The same bytes again: nothing changes when it works. */
		EXPECT_EQ(cases[i].err, ibv_memcpy_to_dm(dm, off, src, len)) {
			TH_LOG("to_dm offset %" PRIu64 " length %zu", off,
			       len);
		}
		memset(got, 0xee, sizeof(got));
		ASSERT_EQ(0, ibv_memcpy_from_dm(got, dm, 0, sizeof(want)));
		EXPECT_SAME_BYTES(got, want, sizeof(want), "the DM");
	}
	EXPECT_EQ(0, ibv_free_dm(dm));
}

/*
 * DM MRs: zero based, inside the DM; the keys, length and no address; the
 * driver's details show a DM MR.
 */
TEST_F(dm, reg_bounds)
{
	struct ibv_dm *dm;
	struct ibv_mr *mr;

	dm = dm_alloc(self->d.ctx, 100);
	ASSERT_NE(NULL, dm);
	errno = 0;
	EXPECT_EQ(NULL, ibv_reg_dm_mr(self->d.pd, dm, 0, 104,
				      DM_ZB | IBV_ACCESS_LOCAL_WRITE));
	EXPECT_EQ(EINVAL, errno);
	errno = 0;
	EXPECT_EQ(NULL, ibv_reg_dm_mr(self->d.pd, dm, 4, 100,
				      DM_ZB | IBV_ACCESS_LOCAL_WRITE));
	EXPECT_EQ(EINVAL, errno);
	errno = 0;
	EXPECT_EQ(NULL, ibv_reg_dm_mr(self->d.pd, dm, 104, 0,
				      DM_ZB | IBV_ACCESS_LOCAL_WRITE));
	EXPECT_EQ(EINVAL, errno);
	errno = 0;
	EXPECT_EQ(NULL, ibv_reg_dm_mr(self->d.pd, dm, 0, 100,
				      IBV_ACCESS_LOCAL_WRITE));
	EXPECT_EQ(EINVAL, errno);
	/* Remote write needs local write, as for any MR. */
	errno = 0;
	EXPECT_EQ(NULL, ibv_reg_dm_mr(self->d.pd, dm, 0, 100,
				      DM_ZB | IBV_ACCESS_REMOTE_WRITE));
	EXPECT_EQ(EINVAL, errno);

	mr = ibv_reg_dm_mr(self->d.pd, dm, 100, 0,
			   DM_ZB | IBV_ACCESS_LOCAL_WRITE);
	ASSERT_NE(NULL, mr) {
		TH_LOG("zero-length DM MR: %s", strerror(errno));
	}
	EXPECT_EQ(0, ibv_dereg_mr(mr));

	mr = ibv_reg_dm_mr(self->d.pd, dm, 4, 96, DM_ALL);
	ASSERT_NE(NULL, mr) {
		TH_LOG("DM MR: %s", strerror(errno));
	}
	EXPECT_EQ(mr->lkey, mr->rkey);
	EXPECT_EQ(96, mr->length);
	EXPECT_EQ(NULL, mr->addr);
	EXPECT_EQ(self->d.pd, mr->pd);
	EXPECT_EQ(0, rc_shf("rdma -dd res show mr dev %s | "
			    "grep -q 'drv_type dm .*drv_length 96 '",
			    rc_cfg.name[0])) {
		TH_LOG("rdma res show mr: no DM MR of 96 bytes");
	}
	EXPECT_EQ(0, ibv_dereg_mr(mr));
	EXPECT_EQ(0, ibv_free_dm(dm));
}

/* Not while an MR of it exists. */
TEST_F(dm, free_busy)
{
	struct ibv_dm *dm;
	struct ibv_mr *mr;
	uint8_t b[8] = { 1, 2, 3, 4, 5, 6, 7, 8 }, c[8];

	dm = dm_alloc(self->d.ctx, 4096);
	ASSERT_NE(NULL, dm);
	mr = ibv_reg_dm_mr(self->d.pd, dm, 0, 4096,
			   DM_ZB | IBV_ACCESS_LOCAL_WRITE);
	ASSERT_NE(NULL, mr);
	EXPECT_EQ(EBUSY, ibv_free_dm(dm));
	/* Still there, still mapped. */
	EXPECT_EQ(0, ibv_memcpy_to_dm(dm, 8, b, 8));
	EXPECT_EQ(0, ibv_memcpy_from_dm(c, dm, 8, 8));
	EXPECT_EQ(0, memcmp(b, c, 8));
	EXPECT_EQ(0, ibv_dereg_mr(mr));
	EXPECT_EQ(0, ibv_free_dm(dm));
}

/*
 * A second context on a dup of the command file imports the DM by its
 * handle: the same bytes both ways, a DM MR of the import works; handles
 * that are no DM's fail.
 */
TEST_F(dm, import)
{
	struct ibv_context *ctx2;
	struct ibv_dm *dm, *dm2;
	struct ibv_mr *mr, *mr2;
	uint8_t want[8192], got[8192];
	int fd;

	dm = dm_alloc(self->d.ctx, sizeof(want));
	ASSERT_NE(NULL, dm);
	EXPECT_TRUE(dm->comp_mask & IBV_DM_MASK_HANDLE);
	fd = dup(self->d.ctx->cmd_fd);
	ASSERT_LE(0, fd);
	ctx2 = ibv_import_device(fd);
	ASSERT_NE(NULL, ctx2) {
		TH_LOG("ibv_import_device: %s", strerror(errno));
	}
	dm2 = ibv_import_dm(ctx2, dm->handle);
	ASSERT_NE(NULL, dm2) {
		TH_LOG("ibv_import_dm: %s", strerror(errno));
	}
	EXPECT_EQ(dm->handle, dm2->handle);
	EXPECT_EQ(ctx2, dm2->context);

	rc_fill(want, sizeof(want), 11, 0);
	ASSERT_EQ(0, ibv_memcpy_to_dm(dm, 0, want, sizeof(want)));
	ASSERT_EQ(0, ibv_memcpy_from_dm(got, dm2, 0, sizeof(got)));
	EXPECT_SAME_BYTES(got, want, sizeof(want), "through the import");
	rc_fill(want + 4096, 4096, 12, 0);
	ASSERT_EQ(0, ibv_memcpy_to_dm(dm2, 4096, want + 4096, 4096));
	ASSERT_EQ(0, ibv_memcpy_from_dm(got, dm, 0, sizeof(got)));
	EXPECT_SAME_BYTES(got, want, sizeof(want), "written by the import");
	/* The import's bounds are the DM's. */
	EXPECT_EQ(EFAULT, ibv_memcpy_from_dm(got, dm2, 4096, 8192));

	/* An MR of the imported DM, in the first context's PD. */
	mr2 = ibv_reg_dm_mr(self->d.pd, dm2, 0, 4096,
			    DM_ZB | IBV_ACCESS_LOCAL_WRITE);
	ASSERT_NE(NULL, mr2) {
		TH_LOG("DM MR of the import: %s", strerror(errno));
	}
	EXPECT_EQ(EBUSY, ibv_free_dm(dm));
	EXPECT_EQ(0, ibv_dereg_mr(mr2));

	/* Handles of other objects, and of nothing, are no DM. */
	mr = ibv_reg_dm_mr(self->d.pd, dm, 0, 64,
			   DM_ZB | IBV_ACCESS_LOCAL_WRITE);
	ASSERT_NE(NULL, mr);
	errno = 0;
	EXPECT_EQ(NULL, ibv_import_dm(ctx2, self->d.pd->handle));
	EXPECT_NE(0, errno);
	errno = 0;
	EXPECT_EQ(NULL, ibv_import_dm(ctx2, mr->handle));
	EXPECT_NE(0, errno);
	errno = 0;
	EXPECT_EQ(NULL, ibv_import_dm(ctx2, 0x7fffff));
	EXPECT_NE(0, errno);
	EXPECT_EQ(0, ibv_dereg_mr(mr));

	ibv_unimport_dm(dm2);
	/* Unimporting leaves the DM to its owner. */
	ASSERT_EQ(0, ibv_memcpy_from_dm(got, dm, 0, sizeof(got)));
	EXPECT_SAME_BYTES(got, want, sizeof(want), "after unimport");
	EXPECT_EQ(0, ibv_free_dm(dm));
	/* Freed, the handle imports no more. */
	errno = 0;
	EXPECT_EQ(NULL, ibv_import_dm(ctx2, dm->handle));
	EXPECT_NE(0, errno);
	ibv_close_device(ctx2);
}

/* Allocate DMs of max_dm_size until refused; returns how many. */
static int fill_device(struct ibv_context *ctx, struct ibv_dm **dms, int max,
		       int *err)
{
	int n;

	*err = 0;
	for (n = 0; n < max; n++) {
		dms[n] = dm_alloc(ctx, DM_MAX);
		if (!dms[n]) {
			*err = errno;
			break;
		}
	}
	return n;
}

/*
 * A process with DMs and a DM MR of them left exits: closing its context
 * frees them, and gives back their pages (0 when all were allocated).
 */
static int exit_with_dms(void)
{
	struct ibv_dm *dms[DM_TOTAL / DM_MAX];
	struct ibv_context *ctx;
	struct ibv_pd *pd;
	int n, err;

	ctx = rc_open_by_name(rc_cfg.name[0]);
	pd = ctx ? ibv_alloc_pd(ctx) : NULL;
	if (!pd)
		return 100;
	n = fill_device(ctx, dms, DM_TOTAL / DM_MAX, &err);
	if (n != DM_TOTAL / DM_MAX) {
		printf("# in the child: %d DMs, then %s\n", n, strerror(err));
		return 101;
	}
	if (!ibv_reg_dm_mr(pd, dms[0], 0, DM_MAX,
			   DM_ZB | IBV_ACCESS_LOCAL_WRITE))
		return 102;
	return 0;
}

/*
 * The device's total: 64 DMs of max_dm_size, the 65th refused with
 * ENOMEM, as is a small one; freed, or left by a process that exits, they
 * all come back.
 */
TEST_F_TIMEOUT(dm, device_total, 300)
{
	const int cap = DM_TOTAL / DM_MAX;
	struct ibv_dm *dms[DM_TOTAL / DM_MAX + 1];
	int n, i, err, st;
	pid_t pid;

	n = fill_device(self->d.ctx, dms, cap + 1, &err);
	EXPECT_EQ(cap, n);
	EXPECT_EQ(ENOMEM, err);
	errno = 0;
	EXPECT_EQ(NULL, dm_alloc(self->d.ctx, 4));
	EXPECT_EQ(ENOMEM, errno);
	for (i = 0; i < n; i++)
		EXPECT_EQ(0, ibv_free_dm(dms[i]));

	fflush(stdout);
	pid = fork();
	ASSERT_LE(0, pid);
	if (!pid)
		_exit(exit_with_dms());
	ASSERT_EQ(pid, waitpid(pid, &st, 0));
	ASSERT_TRUE(WIFEXITED(st));
	EXPECT_EQ(0, WEXITSTATUS(st));

	n = fill_device(self->d.ctx, dms, cap + 1, &err);
	EXPECT_EQ(cap, n) {
		TH_LOG("after the child: %d DMs, then %s", n, strerror(err));
	}
	EXPECT_EQ(ENOMEM, err);
	for (i = 0; i < n; i++)
		EXPECT_EQ(0, ibv_free_dm(dms[i]));
}

/* The memlock test, in a child that gives up root; 0 when all held. */
static int memlock_child(struct ibv_context *ctx)
{
	const size_t limit = 256 << 10;
	struct rlimit rl = { limit, limit };
	struct ibv_dm *a, *b, *c;
	long pin0, pin;
	int bad = 0;

	/* ctx was opened as root; what is allocated below is charged to us. */
	if (setrlimit(RLIMIT_MEMLOCK, &rl) || setgroups(0, NULL) ||
	    setresgid(65534, 65534, 65534) || setresuid(65534, 65534, 65534))
		return 100;
	pin0 = vm_pin_kb();
	if (pin0 < 0)
		return 101;

	a = dm_alloc(ctx, 128 << 10);
	if (!a) {
		printf("# 128 KiB under a 256 KiB limit: %s\n", strerror(errno));
		bad++;
	}
	pin = vm_pin_kb();
	if (pin != pin0 + 128) {
		printf("# VmPin %ld kB after 128 KiB, was %ld kB\n", pin, pin0);
		bad++;
	}
	errno = 0;
	b = dm_alloc(ctx, 192 << 10);
	if (b || errno != ENOMEM) {
		printf("# 128 + 192 KiB under a 256 KiB limit: %s\n",
		       b ? "allocated" : strerror(errno));
		bad++;
	}
	c = dm_alloc(ctx, 1 << 20);
	if (c) {
		printf("# 1 MiB under a 256 KiB limit\n");
		bad++;
	}
	if (a && ibv_free_dm(a))
		bad++;
	if (vm_pin_kb() != pin0) {
		printf("# VmPin %ld kB after free, was %ld kB\n", vm_pin_kb(),
		       pin0);
		bad++;
	}
	/* The charge is given back: 192 KiB fits now. */
	if (!b)
		b = dm_alloc(ctx, 192 << 10);
	if (!b) {
		printf("# 192 KiB after free: %s\n", strerror(errno));
		bad++;
	}
	if (b)
		ibv_free_dm(b);
	if (c)
		ibv_free_dm(c);
	return bad;
}

/* Without CAP_IPC_LOCK a process is held to its RLIMIT_MEMLOCK. */
TEST_F(dm, memlock)
{
	pid_t pid;
	int st;

	fflush(stdout);
	pid = fork();
	ASSERT_LE(0, pid);
	if (!pid)
		_exit(memlock_child(self->d.ctx));
	ASSERT_EQ(pid, waitpid(pid, &st, 0));
	ASSERT_TRUE(WIFEXITED(st));
	EXPECT_EQ(0, WEXITSTATUS(st));
}

/*
 * Many DMs of many sizes, up to 32 alive at once, allocated and freed in
 * a random order: VmPin comes back to where it was, and the device's whole
 * total is there again.
 */
TEST_F_TIMEOUT(dm, many, 300)
{
	struct ibv_dm *live[32] = { NULL }, *dms[DM_TOTAL / DM_MAX + 1];
	uint32_t x = 12345;
	long pin0;
	int i, n, err;

	pin0 = vm_pin_kb();
	ASSERT_LE(0, pin0);
	for (i = 0; i < 3000; i++) {
		int k;

		x = x * 1103515245 + 12345;
		k = (x >> 8) % 32;
		if (live[k]) {
			ASSERT_EQ(0, ibv_free_dm(live[k]));
			live[k] = NULL;
			continue;
		}
		live[k] = dm_alloc(self->d.ctx, 4 + 4 * ((x >> 13) % 40000));
		ASSERT_NE(NULL, live[k]) {
			TH_LOG("round %d: %s", i, strerror(errno));
		}
	}
	for (i = 0; i < 32; i++)
		if (live[i])
			ASSERT_EQ(0, ibv_free_dm(live[i]));
	EXPECT_EQ(pin0, vm_pin_kb());
	n = fill_device(self->d.ctx, dms, DM_TOTAL / DM_MAX + 1, &err);
	EXPECT_EQ(DM_TOTAL / DM_MAX, n);
	for (i = 0; i < n; i++)
		EXPECT_EQ(0, ibv_free_dm(dms[i]));
}

/* ---- RDMA with DM MRs -------------------------------------------------- */

#define DM_LEN		(64 * 1024)
/*
 * The DM MRs start inside the DM's second page, zero based: their address
 * 0 is not at a page boundary of the DM (but 8-byte aligned, for atomics).
 */
#define DM_MR_OFF	(4096 + 24)
#define DM_MR_LEN	(40000)
#define BUF_LEN		(64 * 1024)

FIXTURE(dm_rc) {
	struct rc_dev d0, d1;
	struct rc_dev *da, *db;
	struct rc_env e;
	struct ibv_dm *dma, *dmb;	/* A's and B's DM */
	struct ibv_mr *mra, *mrb;	/* their MRs */
	uint8_t *ia, *ib;		/* what each DM should hold */
};

RC_ENDS_VARIANTS(dm_rc);

FIXTURE_SETUP(dm_rc)
{
	struct rc_opts o = { .access = DM_ATOMIC_QP };
	uint64_t max;

	memset(&self->e, 0, sizeof(self->e));
	rc_ends_open(_metadata, &self->d0, &self->d1, &self->da, &self->db,
		     variant->two_devices);
	DM_MAX_OR_SKIP(self->da->ctx, max);
	rc_env_create(_metadata, &self->e, self->da, self->db, &o, BUF_LEN,
		      RC_ACCESS_ALL | IBV_ACCESS_REMOTE_ATOMIC,
		      RC_ACCESS_ALL | IBV_ACCESS_REMOTE_ATOMIC);
	self->dma = dm_alloc(self->da->ctx, DM_LEN);
	ASSERT_NE(NULL, self->dma);
	self->dmb = dm_alloc(self->db->ctx, DM_LEN);
	ASSERT_NE(NULL, self->dmb);
	self->mra = ibv_reg_dm_mr(self->da->pd, self->dma, DM_MR_OFF,
				  DM_MR_LEN, DM_ALL);
	ASSERT_NE(NULL, self->mra) {
		TH_LOG("A's DM MR: %s", strerror(errno));
	}
	self->mrb = ibv_reg_dm_mr(self->db->pd, self->dmb, DM_MR_OFF,
				  DM_MR_LEN, DM_ALL);
	ASSERT_NE(NULL, self->mrb);
	/* A background in both DMs, which is also what they should hold. */
	self->ia = malloc(DM_LEN);
	self->ib = malloc(DM_LEN);
	ASSERT_NE(NULL, self->ia);
	ASSERT_NE(NULL, self->ib);
	rc_fill(self->ia, DM_LEN, 0xa, 0);
	rc_fill(self->ib, DM_LEN, 0xb, 0);
	ASSERT_EQ(0, ibv_memcpy_to_dm(self->dma, 0, self->ia, DM_LEN));
	ASSERT_EQ(0, ibv_memcpy_to_dm(self->dmb, 0, self->ib, DM_LEN));
}

FIXTURE_TEARDOWN(dm_rc)
{
	if (self->mra)
		ibv_dereg_mr(self->mra);
	if (self->mrb)
		ibv_dereg_mr(self->mrb);
	if (self->dma)
		ibv_free_dm(self->dma);
	if (self->dmb)
		ibv_free_dm(self->dmb);
	free(self->ia);
	free(self->ib);
	rc_env_destroy(&self->e);
	rc_dev_close(&self->d1);
	rc_dev_close(&self->d0);
}

/* The DM holds exactly @img. */
static void dm_check(struct __test_metadata *_metadata, struct ibv_dm *dm,
		     const uint8_t *img, const char *what)
{
	uint8_t *got = malloc(DM_LEN);

	ASSERT_NE(NULL, got);
	ASSERT_EQ(0, ibv_memcpy_from_dm(got, dm, 0, DM_LEN));
	EXPECT_SAME_BYTES(got, img, DM_LEN, what);
	free(got);
}

/*
 * SEND from A's DM MR, gathered with a piece of A's ordinary MR, into
 * B's ordinary MR; then from A's DM MR into B's DM MR.  Lengths cross
 * pages and packets.
 */
TEST_F(dm_rc, send)
{
	static const uint32_t lens[] = { 1, 4, 1000, 4096, 9001, DM_MR_LEN };
	uint8_t *img;
	size_t i;

	img = malloc(BUF_LEN);
	ASSERT_NE(NULL, img);
	for (i = 0; i < sizeof(lens) / sizeof(lens[0]); i++) {
		uint32_t len = lens[i], addr = DM_MR_LEN - len;
		struct ibv_sge s[2] = {
			{ .addr = addr, .length = len,
			  .lkey = self->mra->lkey },
			{ .addr = (uintptr_t)self->e.ba.p + 3, .length = 5,
			  .lkey = self->e.ba.mr->lkey },
		};
		struct ibv_send_wr wr = {
			.wr_id = 0x100 + i, .sg_list = s, .num_sge = 2,
			.opcode = IBV_WR_SEND,
		};
		char what[64];

		snprintf(what, sizeof(what), "SEND %u bytes of DM", len);
		rc_fill(self->ia + DM_MR_OFF + addr, len, 0x20 + i, 0);
		ASSERT_EQ(0, ibv_memcpy_to_dm(self->dma, 0, self->ia, DM_LEN));
		rc_fill(self->e.ba.p, 64, 0x40 + i, 0);
		memset(self->e.bb.p, 0x5a, BUF_LEN);
		memset(img, 0x5a, BUF_LEN);
		memcpy(img + 7, self->ia + DM_MR_OFF + addr, len);
		memcpy(img + 7 + len, self->e.ba.p + 3, 5);
		ASSERT_EQ(0, rc_post_recv(&self->e.p.b, 0x200 + i, &self->e.bb,
					  7, len + 5 + 11));
		rc_post_expect(_metadata, &self->e.p.a, &wr, IBV_WC_SUCCESS, IBV_WC_SEND,
		       what);
		rc_expect_wc(_metadata, self->e.p.b.rcq, &(struct rc_wc_exp){
			.wr_id = 0x200 + i, .status = IBV_WC_SUCCESS,
			.opcode = IBV_WC_RECV, .recv = 1,
			.byte_len = len + 5,
			.qp_num = self->e.p.b.qp->qp_num,
		}, what);
		EXPECT_SAME_BYTES(self->e.bb.p, img, BUF_LEN, what);
		dm_check(_metadata, self->dma, self->ia, "A's DM, the source");
	}

	/* DM to DM: received at an offset of B's DM MR. */
	for (i = 0; i < sizeof(lens) / sizeof(lens[0]) - 1; i++) {
		uint32_t len = lens[i];
		struct ibv_sge s = {
			.addr = 100, .length = len, .lkey = self->mra->lkey,
		}, r = {
			.addr = 333, .length = len + 3,
			.lkey = self->mrb->lkey,
		};
		struct ibv_recv_wr rwr = {
			.wr_id = 0x300 + i, .sg_list = &r, .num_sge = 1,
		}, *rbad = NULL;
		struct ibv_send_wr wr = {
			.wr_id = 0x400 + i, .sg_list = &s, .num_sge = 1,
			.opcode = IBV_WR_SEND,
		};
		char what[64];

		snprintf(what, sizeof(what), "SEND %u bytes DM to DM", len);
		rc_fill(self->ia + DM_MR_OFF + 100, len, 0x60 + i, 0);
		ASSERT_EQ(0, ibv_memcpy_to_dm(self->dma, 0, self->ia, DM_LEN));
		ASSERT_EQ(0, ibv_post_recv(self->e.p.b.qp, &rwr, &rbad));
		rc_post_expect(_metadata, &self->e.p.a, &wr, IBV_WC_SUCCESS, IBV_WC_SEND,
		       what);
		rc_expect_wc(_metadata, self->e.p.b.rcq, &(struct rc_wc_exp){
			.wr_id = 0x300 + i, .status = IBV_WC_SUCCESS,
			.opcode = IBV_WC_RECV, .recv = 1, .byte_len = len,
			.qp_num = self->e.p.b.qp->qp_num,
		}, what);
		memcpy(self->ib + DM_MR_OFF + 333,
		       self->ia + DM_MR_OFF + 100, len);
		dm_check(_metadata, self->dmb, self->ib, what);
	}
	free(img);
}

/*
 * RDMA WRITE from A's ordinary MR into B's DM MR (zero based: address X
 * is byte DM_MR_OFF + X of the DM), then READ from it into A's ordinary
 * MR, and a WRITE from A's DM MR into B's DM MR.
 */
TEST_F(dm_rc, write_read)
{
	static const uint32_t lens[] = { 4, 4096, 9001, DM_MR_LEN - 17 };
	size_t i;

	for (i = 0; i < sizeof(lens) / sizeof(lens[0]); i++) {
		uint32_t len = lens[i], raddr = 17;
		struct ibv_sge s = {
			.addr = (uintptr_t)self->e.ba.p + 1, .length = len,
			.lkey = self->e.ba.mr->lkey,
		};
		struct ibv_send_wr wr = {
			.wr_id = 0x500 + i, .sg_list = &s, .num_sge = 1,
			.opcode = IBV_WR_RDMA_WRITE,
		};
		uint8_t *img;
		char what[64];

		snprintf(what, sizeof(what), "WRITE %u bytes into DM", len);
		rc_fill(self->e.ba.p + 1, len, 0x80 + i, 0);
		wr.wr.rdma.remote_addr = raddr;
		wr.wr.rdma.rkey = self->mrb->rkey;
		rc_post_expect(_metadata, &self->e.p.a, &wr, IBV_WC_SUCCESS,
		       IBV_WC_RDMA_WRITE, what);
		memcpy(self->ib + DM_MR_OFF + raddr, self->e.ba.p + 1, len);
		dm_check(_metadata, self->dmb, self->ib, what);

		snprintf(what, sizeof(what), "READ %u bytes from DM", len);
		rc_fill(self->ib + DM_MR_OFF + raddr, len, 0x90 + i, 0);
		ASSERT_EQ(0, ibv_memcpy_to_dm(self->dmb, 0, self->ib, DM_LEN));
		memset(self->e.ba.p, 0x33, BUF_LEN);
		img = malloc(BUF_LEN);
		ASSERT_NE(NULL, img);
		memset(img, 0x33, BUF_LEN);
		memcpy(img + 1, self->ib + DM_MR_OFF + raddr, len);
		wr.wr_id = 0x600 + i;
		wr.opcode = IBV_WR_RDMA_READ;
		rc_post_expect(_metadata, &self->e.p.a, &wr, IBV_WC_SUCCESS, IBV_WC_RDMA_READ,
		       what);
		EXPECT_SAME_BYTES(self->e.ba.p, img, BUF_LEN, what);
		free(img);
		dm_check(_metadata, self->dmb, self->ib, "READ source");
	}

	/* DM MR to DM MR, the whole MR. */
	{
		struct ibv_sge s = {
			.addr = 0, .length = DM_MR_LEN,
			.lkey = self->mra->lkey,
		};
		struct ibv_send_wr wr = {
			.wr_id = 0x700, .sg_list = &s, .num_sge = 1,
			.opcode = IBV_WR_RDMA_WRITE,
		};

		wr.wr.rdma.remote_addr = 0;
		wr.wr.rdma.rkey = self->mrb->rkey;
		rc_post_expect(_metadata, &self->e.p.a, &wr, IBV_WC_SUCCESS,
		       IBV_WC_RDMA_WRITE, "WRITE DM to DM");
		memcpy(self->ib + DM_MR_OFF, self->ia + DM_MR_OFF, DM_MR_LEN);
		dm_check(_metadata, self->dmb, self->ib, "WRITE DM to DM");
	}
}

/* CAS and FAA on words of B's DM MR; results into A's DM MR. */
TEST_F(dm_rc, atomics)
{
	const uint64_t w0 = 0x1122334455667788ULL;
	uint64_t v, raddr = 8 * 101;
	struct ibv_sge s = {
		.addr = 64, .length = 8, .lkey = self->mra->lkey,
	};
	struct ibv_send_wr wr = {
		.wr_id = 0x800, .sg_list = &s, .num_sge = 1,
		.opcode = IBV_WR_ATOMIC_CMP_AND_SWP,
	};

	wr64(self->ib + DM_MR_OFF + raddr, w0);
	ASSERT_EQ(0, ibv_memcpy_to_dm(self->dmb, 0, self->ib, DM_LEN));
	wr.wr.atomic.remote_addr = raddr;
	wr.wr.atomic.rkey = self->mrb->rkey;

	/* CAS that matches. */
	wr.wr.atomic.compare_add = w0;
	wr.wr.atomic.swap = 0xdeadbeefcafef00dULL;
	rc_post_expect(_metadata, &self->e.p.a, &wr, IBV_WC_SUCCESS, IBV_WC_COMP_SWAP,
	       "CAS on DM");
	ASSERT_EQ(0, ibv_memcpy_from_dm(&v, self->dma, DM_MR_OFF + 64, 8));
	EXPECT_EQ(w0, v);
	wr64(self->ib + DM_MR_OFF + raddr, 0xdeadbeefcafef00dULL);
	dm_check(_metadata, self->dmb, self->ib, "CAS on DM");

	/* CAS that does not. */
	wr.wr_id = 0x801;
	wr.wr.atomic.compare_add = w0;
	wr.wr.atomic.swap = 1;
	rc_post_expect(_metadata, &self->e.p.a, &wr, IBV_WC_SUCCESS, IBV_WC_COMP_SWAP,
	       "failed CAS on DM");
	ASSERT_EQ(0, ibv_memcpy_from_dm(&v, self->dma, DM_MR_OFF + 64, 8));
	EXPECT_EQ(0xdeadbeefcafef00dULL, v);
	dm_check(_metadata, self->dmb, self->ib, "failed CAS on DM");

	/* FAA, wrapping. */
	wr.wr_id = 0x802;
	wr.opcode = IBV_WR_ATOMIC_FETCH_AND_ADD;
	wr.wr.atomic.compare_add = 0x3000000000000000ULL;
	rc_post_expect(_metadata, &self->e.p.a, &wr, IBV_WC_SUCCESS, IBV_WC_FETCH_ADD,
	       "FAA on DM");
	ASSERT_EQ(0, ibv_memcpy_from_dm(&v, self->dma, DM_MR_OFF + 64, 8));
	EXPECT_EQ(0xdeadbeefcafef00dULL, v);
	wr64(self->ib + DM_MR_OFF + raddr,
	     0xdeadbeefcafef00dULL + 0x3000000000000000ULL);
	dm_check(_metadata, self->dmb, self->ib, "FAA on DM");
	wr64(self->ia + DM_MR_OFF + 64, 0xdeadbeefcafef00dULL);
	dm_check(_metadata, self->dma, self->ia, "A's DM, the results");
}

/*
 * A WRITE that runs past the end of B's DM MR, into bytes the DM has but
 * the MR does not cover, is refused and changes nothing.
 */
TEST_F(dm_rc, write_beyond_mr)
{
	struct ibv_sge s = {
		.addr = (uintptr_t)self->e.ba.p, .length = 8,
		.lkey = self->e.ba.mr->lkey,
	};
	struct ibv_send_wr wr = {
		.wr_id = 0x900, .sg_list = &s, .num_sge = 1,
		.opcode = IBV_WR_RDMA_WRITE,
	};

	rc_fill(self->e.ba.p, 8, 0x99, 0);
	wr.wr.rdma.remote_addr = DM_MR_LEN - 4;
	wr.wr.rdma.rkey = self->mrb->rkey;
	rc_post_expect(_metadata, &self->e.p.a, &wr, IBV_WC_REM_ACCESS_ERR, 0,
	       "WRITE beyond the DM MR");
	dm_check(_metadata, self->dmb, self->ib, "WRITE beyond the DM MR");
}

int main(int argc, char **argv)
{
	return rc_suite_main(argc, argv);
}
