// SPDX-License-Identifier: GPL-2.0
/*
 * Limits and isolation:
 *   memlock     a process without CAP_IPC_LOCK cannot pin more than its
 *               RLIMIT_MEMLOCK through reg_mr; dereg gives the charge back
 *   memcg       the kernel memory of a process's objects is charged to its
 *               memory cgroup: uid 65534 in a cgroup with a memory.max of
 *               128 MiB (and a 64 KiB RLIMIT_MEMLOCK) creating QPs, SRQs
 *               and CQs of the maximum size gets ENOMEM once the rings
 *               reach memory.max, memory.current grows by at least the
 *               rings of each object created, and destroying them gives
 *               it back
 *   max_*       max_qp_wr, max_cqe, max_sge, max_inline_data and
 *               max_mr_size are refused with a clean error one past the
 *               limit; max_cq, max_qp, max_srq and max_pd are enforced
 *               by count (every object up to the limit created, the next
 *               refused, one more once one is gone); XRC SRQs count
 *               with basic ones against max_srq, each with a number of
 *               its own (non-zero, 24 bits)
 *   max_mr      filled on a device made with a small max_mr (limits.sh
 *               sets the module parameter): every MR up to the limit
 *               registered, the next refused with ENOMEM, all deregister
 *   keys        re-registering gives a new key: the key byte changes when
 *               an MR table slot is reused; a WRITE with the old rkey of a
 *               reused slot, or with an rkey of another PD, is refused and
 *               changes nothing, as is an lkey of another PD
 *   rings       a ring is zeroed when it is mapped, and an offset of
 *               another context's ring cannot be mapped
 *   SQ index    a producer index moved back behind WQEs the kernel has
 *               taken puts the QP in error at once (taken as a count,
 *               it would make the doorbell copy 2^32 WQEs)
 *   CQEs        the kernel's CQE carries no stray bytes: a flushed
 *               receive's fields that do not apply and the reserved byte
 *               are zero, read straight from the ring; query_qp of a new
 *               QP returns zeros for every attribute not yet set
 *
 *   limits_test DEV
 *
 * Runs as root (in the VM); the memlock and memcg tests drop to uid/gid
 * 65534 in a child.  The memcg test needs cgroup2 at /sys/fs/cgroup with
 * the memory controller.  TAP output.
 */
#define _GNU_SOURCE
#include <fcntl.h>
#include <grp.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/stat.h>

#include "fuzz_lib.h"
/* The provider's view of a CQ: where its ring is mapped, at which offset. */
#include "vrdma.h"

static struct ibv_context *ctx;
static struct ibv_pd *pd;
static struct ibv_device_attr attr;

/* The memlock test, in a child that gives up root. */
static int memlock_child(void)
{
	const size_t limit = 256 << 10;
	struct rlimit rl = { limit, limit };
	struct ibv_mr *a, *b, *c;
	uint8_t *mem;
	int bad = 0;

	mem = mmap(NULL, 2 << 20, PROT_READ | PROT_WRITE,
		   MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (mem == MAP_FAILED)
		return 2;
	memset(mem, 1, 2 << 20);
	/* ctx was opened as root; the pinning below is charged to us. */
	if (setrlimit(RLIMIT_MEMLOCK, &rl) || setgroups(0, NULL) ||
	    setresgid(65534, 65534, 65534) || setresuid(65534, 65534, 65534))
		return 2;

	a = ibv_reg_mr(pd, mem, 128 << 10, IBV_ACCESS_LOCAL_WRITE);
	if (!a) {
		printf("# 128 KiB under a 256 KiB limit: %s\n", strerror(errno));
		bad++;
	}
	b = ibv_reg_mr(pd, mem + (512 << 10), 192 << 10,
		       IBV_ACCESS_LOCAL_WRITE);
	if (b) {
		printf("# 128 + 192 KiB pinned under a 256 KiB limit\n");
		bad++;
	} else if (errno != ENOMEM) {
		printf("# past the limit: %s, expected ENOMEM\n",
		       strerror(errno));
		bad++;
	}
	c = ibv_reg_mr(pd, mem, 1 << 20, IBV_ACCESS_LOCAL_WRITE);
	if (c) {
		printf("# 1 MiB pinned under a 256 KiB limit\n");
		bad++;
	}
	if (a)
		ibv_dereg_mr(a);
	/* The charge is given back: 192 KiB fits now. */
	b = ibv_reg_mr(pd, mem + (512 << 10), 192 << 10,
		       IBV_ACCESS_LOCAL_WRITE);
	if (!b) {
		printf("# 192 KiB after dereg: %s\n", strerror(errno));
		bad++;
	}
	/* The context is the parent's too: leave no MR in it. */
	if (b)
		ibv_dereg_mr(b);
	if (c)
		ibv_dereg_mr(c);
	return bad ? 1 : 0;
}

static void test_memlock(void)
{
	int st;
	pid_t pid;

	fflush(stdout);
	pid = fork();
	if (!pid)
		_exit(memlock_child());
	waitpid(pid, &st, 0);
	fz_result(WIFEXITED(st) && WEXITSTATUS(st) == 0,
		  "reg_mr by a non-root process is held to RLIMIT_MEMLOCK");
}

/*
 * The memcg test.  Each object of the maximum size has megabytes of rings
 * (a QP's SQ and RQ are 16 MiB each, a CQ's 2 MiB): MEMCG_TRIES of any
 * kind are more than MEMCG_MAX, so all of them created means nobody was
 * charged.
 */
#define MEMCG_MAX	(128L << 20)
#define MEMCG_TRIES	16
#define MEMCG_CQ_TRIES	128

static char memcg_dir[64];

static long memcg_read(const char *file)
{
	char path[128], buf[32] = "";
	long v = -1;
	int fd;

	snprintf(path, sizeof(path), "%s/%s", memcg_dir, file);
	fd = open(path, O_RDONLY);
	if (fd >= 0 && read(fd, buf, sizeof(buf) - 1) > 0)
		v = atol(buf);
	if (fd >= 0)
		close(fd);
	return v;
}

static int write_file(const char *path, const char *val)
{
	int fd = open(path, O_WRONLY), ok;

	if (fd < 0)
		return -1;
	ok = write(fd, val, strlen(val)) == (ssize_t)strlen(val);
	close(fd);
	return ok ? 0 : -1;
}

enum memcg_kind { MEMCG_QP, MEMCG_SRQ, MEMCG_CQ };

static const char *const memcg_names[] = { "QP", "SRQ", "CQ" };

/* One object of the maximum size of @kind; its rings' bytes in @ring. */
static void *memcg_create(enum memcg_kind kind, struct ibv_cq *cq,
			  long *ring)
{
	struct ibv_qp_init_attr qa = {
		.send_cq = cq, .recv_cq = cq, .qp_type = IBV_QPT_RC,
		.cap = { .max_send_wr = attr.max_qp_wr,
			 .max_recv_wr = attr.max_qp_wr,
			 .max_send_sge = attr.max_sge,
			 .max_recv_sge = attr.max_sge,
			 .max_inline_data = 512 },
	};
	struct ibv_srq_init_attr sa = {
		.attr = { .max_wr = attr.max_srq_wr,
			  .max_sge = attr.max_srq_sge },
	};
	struct ibv_qp *qp;
	struct ibv_srq *srq;
	struct ibv_cq *c;

	switch (kind) {
	case MEMCG_QP:
		qp = ibv_create_qp(pd, &qa);
		if (qp)
			*ring = to_vqp(qp)->sq.ring.map_size +
				to_vqp(qp)->rq.ring.map_size;
		return qp;
	case MEMCG_SRQ:
		srq = ibv_create_srq(pd, &sa);
		if (srq)
			*ring = to_vsrq(srq)->rq.ring.map_size;
		return srq;
	default:
		c = ibv_create_cq(ctx, attr.max_cqe, NULL, NULL, 0);
		if (c)
			*ring = to_vcq(c)->ring.map_size;
		return c;
	}
}

static void memcg_destroy(enum memcg_kind kind, void *obj)
{
	if (kind == MEMCG_QP)
		ibv_destroy_qp(obj);
	else if (kind == MEMCG_SRQ)
		ibv_destroy_srq(obj);
	else
		ibv_destroy_cq(obj);
}

/*
 * Objects of @kind until one fails: it must fail with ENOMEM before
 * @tries, after at least one; memory.current must have grown by each
 * one's rings at least, and come back once they are destroyed.
 * Return: 0 if so.
 */
static int memcg_fill(enum memcg_kind kind, struct ibv_cq *cq, int tries)
{
	const char *what = memcg_names[kind];
	long base = memcg_read("memory.current"), rings = 0, ring, now;
	void *objs[MEMCG_CQ_TRIES];
	int n = 0, err = 0, bad = 0;

	while (n < tries) {
		objs[n] = memcg_create(kind, cq, &ring);
		if (!objs[n]) {
			err = errno;
			break;
		}
		rings += ring;
		n++;
	}
	now = memcg_read("memory.current");
	printf("# %s: %d of %d created (%ld MiB of rings), then %s; memory.current %ld -> %ld MiB of %ld\n",
	       what, n, tries, rings >> 20, err ? strerror(err) : "no error",
	       base >> 20, now >> 20, MEMCG_MAX >> 20);
	if (n == tries || !n || err != ENOMEM) {
		printf("# %s: expected ENOMEM after at least one\n", what);
		bad = 1;
	}
	if (base < 0 || now - base < rings) {
		printf("# %s: memory.current grew by %ld bytes, less than the rings' %ld\n",
		       what, now - base, rings);
		bad = 1;
	}
	while (n > 0)
		memcg_destroy(kind, objs[--n]);
	now = memcg_read("memory.current");
	if (now - base > rings / 2) {
		printf("# %s: destroyed, memory.current still %ld MiB above %ld MiB\n",
		       what, (now - base) >> 20, base >> 20);
		bad = 1;
	}
	return bad;
}

/* In the cgroup, as uid 65534: bit 0, 1, 2 for QPs, SRQs, CQs failed. */
static int memcg_child(void)
{
	struct rlimit rl = { 64 << 10, 64 << 10 };
	struct ibv_cq *cq;
	char path[96], pid[16];
	int bad = 0;

	snprintf(path, sizeof(path), "%s/cgroup.procs", memcg_dir);
	snprintf(pid, sizeof(pid), "%d", getpid());
	if (write_file(path, pid) || setrlimit(RLIMIT_MEMLOCK, &rl) ||
	    setgroups(0, NULL) || setresgid(65534, 65534, 65534) ||
	    setresuid(65534, 65534, 65534)) {
		printf("# into %s as uid 65534: %s\n", memcg_dir,
		       strerror(errno));
		return 8;
	}
	cq = ibv_create_cq(ctx, 16, NULL, NULL, 0);
	if (!cq)
		return 8;
	bad |= memcg_fill(MEMCG_QP, cq, MEMCG_TRIES);
	bad |= memcg_fill(MEMCG_SRQ, cq, MEMCG_TRIES) << 1;
	bad |= memcg_fill(MEMCG_CQ, cq, MEMCG_CQ_TRIES) << 2;
	ibv_destroy_cq(cq);
	return bad;
}

static void test_memcg(void)
{
	char max[32], path[96], ctl[256] = "";
	int st, k;
	pid_t pid;
	FILE *f;

	/* A kernel without CONFIG_MEMCG has no memory controller to test. */
	f = fopen("/sys/fs/cgroup/cgroup.controllers", "r");
	if (f) {
		if (!fgets(ctl, sizeof(ctl), f))
			ctl[0] = 0;
		fclose(f);
	}
	if (f && !strstr(ctl, "memory")) {
		ctl[strcspn(ctl, "\n")] = 0;
		fz_skip("no memory controller in cgroup2 (a kernel without "
			"CONFIG_MEMCG); controllers: %s", ctl[0] ? ctl : "none");
		return;
	}
	snprintf(memcg_dir, sizeof(memcg_dir), "/sys/fs/cgroup/vrdma-limits-%d",
		 getpid());
	/* The memory controller for the root's children, then ours. */
	write_file("/sys/fs/cgroup/cgroup.subtree_control", "+memory");
	if (mkdir(memcg_dir, 0755) && errno != EEXIST) {
		fz_skip("no cgroup2 at /sys/fs/cgroup: %s", strerror(errno));
		return;
	}
	snprintf(path, sizeof(path), "%s/memory.max", memcg_dir);
	snprintf(max, sizeof(max), "%ld", MEMCG_MAX);
	if (write_file(path, max)) {
		fz_result(0, "memory.max of %s: %s", memcg_dir,
			  strerror(errno));
		rmdir(memcg_dir);
		return;
	}
	fflush(stdout);
	pid = fork();
	if (!pid)
		_exit(memcg_child());
	waitpid(pid, &st, 0);
	rmdir(memcg_dir);
	if (!WIFEXITED(st) || WEXITSTATUS(st) >= 8) {
		fz_result(0, "memcg: the child %s %d", WIFEXITED(st) ?
			  "exited" : "was killed by signal", WIFEXITED(st) ?
			  WEXITSTATUS(st) : WTERMSIG(st));
		return;
	}
	for (k = MEMCG_QP; k <= MEMCG_CQ; k++)
		fz_result(!(WEXITSTATUS(st) & (1 << k)),
			  "memcg: %ss of the maximum size by uid 65534 are charged to its cgroup, ENOMEM at memory.max",
			  memcg_names[k]);
}

/* create_qp with @cap must fail with EINVAL (or ENOMEM). */
static int qp_refused(struct ibv_cq *cq, struct ibv_qp_cap cap, const char *what)
{
	struct ibv_qp_init_attr qa = {
		.send_cq = cq, .recv_cq = cq, .cap = cap,
		.qp_type = IBV_QPT_RC,
	};
	struct ibv_qp *qp = ibv_create_qp(pd, &qa);

	if (qp) {
		printf("# %s: created\n", what);
		ibv_destroy_qp(qp);
		return 0;
	}
	if (errno != EINVAL && errno != ENOMEM) {
		printf("# %s: %s\n", what, strerror(errno));
		return 0;
	}
	return 1;
}

static void test_sizes(void)
{
	struct ibv_qp_cap ok = { 16, 16, 1, 1, 0 }, cap;
	struct ibv_cq *cq, *big;
	struct ibv_mr *mr;
	int good;

	cq = ibv_create_cq(ctx, 16, NULL, NULL, 0);
	if (!cq) {
		fz_result(0, "a CQ: %s", strerror(errno));
		return;
	}
	cap = ok;
	cap.max_send_wr = attr.max_qp_wr + 1;
	good = qp_refused(cq, cap, "max_send_wr past max_qp_wr");
	cap = ok;
	cap.max_recv_wr = attr.max_qp_wr + 1;
	good &= qp_refused(cq, cap, "max_recv_wr past max_qp_wr");
	cap = ok;
	cap.max_send_sge = attr.max_sge + 1;
	good &= qp_refused(cq, cap, "max_send_sge past max_sge");
	cap = ok;
	cap.max_recv_sge = attr.max_sge + 1;
	good &= qp_refused(cq, cap, "max_recv_sge past max_sge");
	cap = ok;
	cap.max_inline_data = 1 << 20;
	good &= qp_refused(cq, cap, "max_inline_data of 1 MiB");
	fz_result(good, "QP sizes past max_qp_wr, max_sge, the inline limit refused");

	big = ibv_create_cq(ctx, attr.max_cqe + 1, NULL, NULL, 0);
	fz_result(!big && errno == EINVAL, "a CQ of max_cqe + 1 refused (%s)",
		  big ? "created" : strerror(errno));
	if (big)
		ibv_destroy_cq(big);
	big = ibv_create_cq(ctx, attr.max_cqe, NULL, NULL, 0);
	fz_result(!!big, "a CQ of max_cqe (%d) created", attr.max_cqe);
	if (big)
		ibv_destroy_cq(big);

	/* Refused before anything is pinned: no memory needed. */
	mr = ibv_reg_mr(pd, (void *)0x10000, attr.max_mr_size + 1,
			IBV_ACCESS_LOCAL_WRITE);
	fz_result(!mr && errno == EINVAL,
		  "reg_mr of max_mr_size + 1 bytes refused (%s)",
		  mr ? "registered" : strerror(errno));
	if (mr)
		ibv_dereg_mr(mr);
	ibv_destroy_cq(cq);
}

/*
 * Create objects with @create until it fails; exactly @max must have been
 * created, the error must be ENOMEM (or EINVAL), and after destroying one
 * another can be created.
 */
static void test_count(const char *what, int max, void *(*create)(void),
		       void (*destroy)(void *))
{
	void **objs = calloc(max + 1, sizeof(*objs));
	double start = fz_now();
	int n = 0, err = 0, again;

	while (n <= max) {
		objs[n] = create();
		if (!objs[n]) {
			err = errno;
			break;
		}
		n++;
	}
	again = 0;
	if (n > 0) {
		destroy(objs[--n]);
		objs[n] = create();
		if (objs[n])
			again = 1, n++;
	}
	fz_result(n == max && (err == ENOMEM || err == EINVAL) && again,
		  "%s: %d created of max %d, then %s; one more after one is gone: %s (%.1f s)",
		  what, n, max, err ? strerror(err) : "no error", again ?
		  "yes" : "no", fz_now() - start);
	while (n > 0)
		destroy(objs[--n]);
	free(objs);
}

static void *mk_cq(void)
{
	return ibv_create_cq(ctx, 1, NULL, NULL, 0);
}

static void rm_cq(void *p)
{
	ibv_destroy_cq(p);
}

static void *mk_pd(void)
{
	return ibv_alloc_pd(ctx);
}

static void rm_pd(void *p)
{
	ibv_dealloc_pd(p);
}

static void *mk_srq(void)
{
	struct ibv_srq_init_attr sa = { .attr = { .max_wr = 1, .max_sge = 1 } };

	return ibv_create_srq(pd, &sa);
}

static void rm_srq(void *p)
{
	ibv_destroy_srq(p);
}

/* The XRC SRQs of the max_srq fill: their domain, CQ and numbers. */
static struct ibv_xrcd *lim_xrcd;
static struct ibv_cq *lim_xcq;
static uint32_t *xsrqn;
static int nxsrqn;

/* Basic and XRC SRQs in turn: one count for both. */
static void *mk_xsrq(void)
{
	struct ibv_srq_init_attr_ex sa = {
		.attr = { .max_wr = 1, .max_sge = 1 },
		.comp_mask = IBV_SRQ_INIT_ATTR_TYPE | IBV_SRQ_INIT_ATTR_PD |
			     IBV_SRQ_INIT_ATTR_XRCD | IBV_SRQ_INIT_ATTR_CQ,
		.srq_type = IBV_SRQT_XRC, .pd = pd, .xrcd = lim_xrcd,
		.cq = lim_xcq,
	};
	static int k;
	struct ibv_srq *srq;

	if (k++ % 2)
		return mk_srq();
	srq = ibv_create_srq_ex(ctx, &sa);
	if (srq && ibv_get_srq_num(srq, &xsrqn[nxsrqn++]))
		xsrqn[nxsrqn - 1] = 0;
	return srq;
}

static int cmp_u32(const void *a, const void *b)
{
	uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;

	return x < y ? -1 : x > y;
}

/*
 * max_srq again, every other SRQ an XRC SRQ: they share the limit, and
 * each XRC SRQ gets a number no other has, non-zero, of 24 bits (what an
 * XRCETH carries).
 */
static void test_xrc_srq_count(void)
{
	int i, bad = 0;

	lim_xrcd = ibv_open_xrcd(ctx, &(struct ibv_xrcd_init_attr){
		.comp_mask = IBV_XRCD_INIT_ATTR_FD | IBV_XRCD_INIT_ATTR_OFLAGS,
		.fd = -1, .oflags = O_CREAT,
	});
	lim_xcq = ibv_create_cq(ctx, 4, NULL, NULL, 0);
	xsrqn = calloc(attr.max_srq + 2, sizeof(*xsrqn));
	if (!lim_xrcd || !lim_xcq || !xsrqn) {
		fz_result(0, "max_srq with XRC SRQs: no XRC domain or CQ: %s",
			  strerror(errno));
		return;
	}
	test_count("max_srq, every other SRQ an XRC SRQ", attr.max_srq,
		   mk_xsrq, rm_srq);
	qsort(xsrqn, nxsrqn, sizeof(*xsrqn), cmp_u32);
	for (i = 0; i < nxsrqn; i++)
		bad += !xsrqn[i] || xsrqn[i] >= 1u << 24 ||
		       (i && xsrqn[i] == xsrqn[i - 1]);
	fz_result(nxsrqn > 0 && !bad,
		  "each of %d XRC SRQs had a number of its own, non-zero, of 24 bits (%d not)",
		  nxsrqn, bad);
	free(xsrqn);
	ibv_destroy_cq(lim_xcq);
	ibv_close_xrcd(lim_xrcd);
}

static struct ibv_cq *qp_cq;
static struct ibv_srq *qp_srq;

static void *mk_qp(void)
{
	struct ibv_qp_init_attr qa = {
		.send_cq = qp_cq, .recv_cq = qp_cq, .srq = qp_srq,
		.cap = { .max_send_wr = 1, .max_send_sge = 1 },
		.qp_type = IBV_QPT_UD,
	};

	return ibv_create_qp(pd, &qa);
}

static void rm_qp(void *p)
{
	ibv_destroy_qp(p);
}

static uint8_t mr_page[4096] __attribute__((aligned(4096)));
static int mr_dereg_failed;

static void *mk_mr(void)
{
	return ibv_reg_mr(pd, mr_page, sizeof(mr_page), IBV_ACCESS_LOCAL_WRITE);
}

static void rm_mr(void *p)
{
	mr_dereg_failed += !!ibv_dereg_mr(p);
}

/*
 * The objects of kind @what ("pd", "cq" or "qp") that kernel users hold on
 * @dev ("comm [ib_core]" in rdma's listing): ib_core's MAD agent has a PD,
 * a CQ and the GSI QP (QP1).  They count against the device's limits as
 * the process's own do.
 */
static int kernel_objs(const char *dev, const char *what)
{
	char cmd[160], line[512];
	int n = 0;
	FILE *f;

	/* QPs are listed per port. */
	snprintf(cmd, sizeof(cmd), "rdma resource show %s %s %s%s", what,
		 strcmp(what, "qp") ? "dev" : "link", dev,
		 strcmp(what, "qp") ? "" : "/1");
	f = popen(cmd, "r");
	while (f && fgets(line, sizeof(line), f)) {
		printf("#   %s", line);
		n += !!strstr(line, "comm [");
	}
	if (f)
		pclose(f);
	return n;
}

static int slow_factor(void)
{
	const char *s = getenv("VRDMA_TEST_SLOW");

	return s && atoi(s) > 1 ? atoi(s) : 1;
}

/* Two RC QPs of @qpd on the device, connected to each other (loopback). */
struct lpair {
	struct ibv_cq *cq;
	struct ibv_qp *a, *b;
};

static int lpair_make(struct lpair *lp, struct ibv_pd *qpd, int gi)
{
	struct ibv_qp_init_attr qa = {
		.cap = { .max_send_wr = 4, .max_recv_wr = 4,
			 .max_send_sge = 1, .max_recv_sge = 1 },
		.qp_type = IBV_QPT_RC,
	};
	struct ibv_port_attr port;
	union ibv_gid gid;

	memset(lp, 0, sizeof(*lp));
	lp->cq = ibv_create_cq(ctx, 16, NULL, NULL, 0);
	if (!lp->cq)
		return -1;
	qa.send_cq = qa.recv_cq = lp->cq;
	lp->a = ibv_create_qp(qpd, &qa);
	lp->b = ibv_create_qp(qpd, &qa);
	if (!lp->a || !lp->b || ibv_query_gid(ctx, 1, gi, &gid) ||
	    ibv_query_port(ctx, 1, &port))
		return -1;
	if (fz_connect(lp->a, gi, port.active_mtu, lp->b->qp_num, &gid,
		       0, 0, 18, 7) ||
	    fz_connect(lp->b, gi, port.active_mtu, lp->a->qp_num, &gid,
		       0, 0, 18, 7))
		return -1;
	return 0;
}

static void lpair_free(struct lpair *lp)
{
	if (lp->a)
		ibv_destroy_qp(lp->a);
	if (lp->b)
		ibv_destroy_qp(lp->b);
	if (lp->cq)
		ibv_destroy_cq(lp->cq);
}

/*
 * A signalled RDMA WRITE of @len bytes from @src (@lkey) on a fresh pair of
 * QPs in @qpd to @dst with @rkey.  Return: the completion's status, or -1.
 */
static int lpair_write(struct ibv_pd *qpd, int gi, void *src, uint32_t lkey,
		       void *dst, uint32_t rkey, uint32_t len)
{
	struct ibv_sge sge = { (uintptr_t)src, len, lkey };
	struct ibv_send_wr wr = {
		.wr_id = 7, .sg_list = &sge, .num_sge = 1,
		.opcode = IBV_WR_RDMA_WRITE, .send_flags = IBV_SEND_SIGNALED,
		.wr.rdma = { (uintptr_t)dst, rkey },
	}, *bad;
	struct lpair lp;
	struct ibv_wc wc;
	int st = -1;

	if (!lpair_make(&lp, qpd, gi) && !ibv_post_send(lp.a, &wr, &bad) &&
	    fz_poll(lp.cq, &wc, 30000 * slow_factor()) == 1)
		st = wc.status;
	lpair_free(&lp);
	return st;
}

/*
 * Keys on the wire: a deregistered MR's rkey whose table slot has been
 * taken again (by a new MR over the same memory) must be refused, so must
 * an rkey of another PD's MR and an lkey of another PD; the memory stays
 * as it was.  Needs a small max_mr, so that a slot comes back soon (the
 * allocation is cyclic).
 */
static void test_key_isolation(const char *dev)
{
	static uint8_t src[64], dst[4096] __attribute__((aligned(4096)));
	const int access = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE;
	struct ibv_mr *ls = ibv_reg_mr(pd, src, sizeof(src), access);
	struct ibv_pd *pd2 = ibv_alloc_pd(ctx);
	struct ibv_mr *m, *m2 = NULL, *o = NULL, *os = NULL;
	int gi = rc_find_gid(dev), i, st, clean;
	uint32_t old;

	memset(src, 0xa5, sizeof(src));
	m = ls && pd2 ? ibv_reg_mr(pd, dst, sizeof(dst), access) : NULL;
	if (!m || gi < 0) {
		fz_result(0, "key isolation: MRs and a PD: %s", strerror(errno));
		goto out;
	}
	old = m->rkey;
	ibv_dereg_mr(m);
	for (i = 0; i <= attr.max_mr && !m2; i++) {
		m = ibv_reg_mr(pd, dst, sizeof(dst), access);
		if (!m)
			break;
		if ((m->rkey >> 8) == (old >> 8))
			m2 = m;
		else
			ibv_dereg_mr(m);
	}
	if (!m2) {
		fz_result(0, "the slot of rkey %#x never came back in %d registrations",
			  old, i);
		goto out;
	}
	memset(dst, 0, sizeof(dst));
	st = lpair_write(pd, gi, src, ls->lkey, dst, old, sizeof(src));
	for (clean = 1, i = 0; i < (int)sizeof(dst); i++)
		clean &= !dst[i];
	fz_result(m2->rkey != old && st == IBV_WC_REM_ACCESS_ERR && clean,
		  "a WRITE with rkey %#x after its slot was reused (now %#x): %s, memory %s",
		  old, m2->rkey, st < 0 ? "no completion" :
		  ibv_wc_status_str(st), clean ? "untouched" : "WRITTEN");
	st = lpair_write(pd, gi, src, ls->lkey, dst, m2->rkey, sizeof(src));
	fz_result(st == IBV_WC_SUCCESS && !memcmp(dst, src, sizeof(src)),
		  "a WRITE with the new rkey %#x: %s", m2->rkey,
		  st < 0 ? "no completion" : ibv_wc_status_str(st));

	o = ibv_reg_mr(pd2, dst, sizeof(dst), access);
	os = ibv_reg_mr(pd2, src, sizeof(src), access);
	if (!o || !os) {
		fz_result(0, "MRs in a second PD: %s", strerror(errno));
		goto out;
	}
	memset(dst, 0, sizeof(dst));
	st = lpair_write(pd, gi, src, ls->lkey, dst, o->rkey, sizeof(src));
	for (clean = 1, i = 0; i < (int)sizeof(dst); i++)
		clean &= !dst[i];
	fz_result(st == IBV_WC_REM_ACCESS_ERR && clean,
		  "a WRITE with an rkey of another PD: %s, memory %s",
		  st < 0 ? "no completion" : ibv_wc_status_str(st),
		  clean ? "untouched" : "WRITTEN");
	st = lpair_write(pd, gi, src, os->lkey, dst, m2->rkey, sizeof(src));
	for (clean = 1, i = 0; i < (int)sizeof(dst); i++)
		clean &= !dst[i];
	fz_result(st == IBV_WC_LOC_PROT_ERR && clean,
		  "a WRITE from an lkey of another PD: %s, memory %s",
		  st < 0 ? "no completion" : ibv_wc_status_str(st),
		  clean ? "untouched" : "WRITTEN");
out:
	if (os)
		ibv_dereg_mr(os);
	if (o)
		ibv_dereg_mr(o);
	if (m2)
		ibv_dereg_mr(m2);
	if (ls)
		ibv_dereg_mr(ls);
	if (pd2)
		ibv_dealloc_pd(pd2);
}

/* Keys: the slot of a deregistered MR comes back with another key byte. */
static void test_keys(void)
{
	static uint8_t buf[4096];
	uint32_t seen[512];
	int i, j, dup = 0;

	for (i = 0; i < 512; i++) {
		struct ibv_mr *mr = ibv_reg_mr(pd, buf, sizeof(buf),
					       IBV_ACCESS_LOCAL_WRITE |
					       IBV_ACCESS_REMOTE_WRITE);

		if (!mr) {
			fz_result(0, "reg_mr: %s", strerror(errno));
			return;
		}
		seen[i] = mr->rkey;
		ibv_dereg_mr(mr);
		/* Only the last 255: an 8-bit key byte wraps after 256. */
		for (j = i > 255 ? i - 255 : 0; j < i; j++)
			dup += seen[j] == seen[i];
	}
	fz_result(!dup, "512 registrations of one buffer, each with a new rkey (%d repeated)",
		  dup);
}

/*
 * A ring is zero when first mapped; another context cannot map it.  The
 * CQ ring's mmap offset is the provider's: mapping it again through a
 * second context of the same device must fail.
 */
static void test_rings(const char *dev)
{
	struct ibv_context *other = rc_open_by_name(dev);
	struct ibv_cq *cq = ibv_create_cq(ctx, 64, NULL, NULL, 0);
	struct vrdma_uring *r;
	const uint8_t *p;
	size_t i, nz = 0;
	void *m;

	if (!other || !cq) {
		fz_result(0, "a second context and a CQ: %s", strerror(errno));
		return;
	}
	r = &to_vcq(cq)->ring;
	p = (const uint8_t *)r->hdr;
	for (i = 0; i < r->map_size; i++)
		nz += p[i] != 0;
	fz_result(!nz, "a new CQ ring is all zeros (%zu bytes not)", nz);

	/*
	 * The provider does not keep the offset; try every offset a ring of
	 * ctx can have (ib_core hands out small page numbers).
	 */
	for (i = 0; i < 64; i++) {
		m = mmap(NULL, r->map_size, PROT_READ | PROT_WRITE, MAP_SHARED,
			 other->cmd_fd, i * 4096);
		if (m != MAP_FAILED) {
			munmap(m, r->map_size);
			break;
		}
	}
	fz_result(i == 64, "no offset maps a ring through a context that does not own it");
	ibv_destroy_cq(cq);
	ibv_close_device(other);
}

/* A flushed receive's CQE, as the kernel wrote it into the ring. */
static void test_cqe_bytes(void)
{
	struct ibv_cq *cq = ibv_create_cq(ctx, 4, NULL, NULL, 0);
	struct ibv_qp_init_attr qa = {
		.cap = { .max_send_wr = 1, .max_recv_wr = 1,
			 .max_send_sge = 1, .max_recv_sge = 1 },
		.qp_type = IBV_QPT_RC,
	};
	struct ibv_qp_attr a = { .qp_state = IBV_QPS_INIT, .port_num = 1 };
	static uint8_t buf[64];
	struct ibv_mr *mr = ibv_reg_mr(pd, buf, sizeof(buf),
				       IBV_ACCESS_LOCAL_WRITE);
	struct ibv_sge sge = { (uintptr_t)buf, sizeof(buf), 0 };
	struct ibv_recv_wr wr = { .wr_id = 0x1234, .sg_list = &sge,
				  .num_sge = 1 }, *bad;
	const struct vrdma_cqe *cqe;
	struct vrdma_uring *r;
	struct ibv_qp *qp;
	double end;

	qa.send_cq = qa.recv_cq = cq;
	qp = cq && mr ? ibv_create_qp(pd, &qa) : NULL;
	if (!qp || ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_PKEY_INDEX |
				 IBV_QP_PORT | IBV_QP_ACCESS_FLAGS)) {
		fz_result(0, "a QP in INIT: %s", strerror(errno));
		return;
	}
	sge.lkey = mr->lkey;
	ibv_post_recv(qp, &wr, &bad);
	a.qp_state = IBV_QPS_ERR;
	ibv_modify_qp(qp, &a, IBV_QP_STATE);
	r = &to_vcq(cq)->ring;
	end = fz_now() + 10;
	while (!__atomic_load_n(&r->hdr->prod, __ATOMIC_ACQUIRE) &&
	       fz_now() < end)
		usleep(1000);
	cqe = vrdma_uring_entry(r, 0);
	fz_result(r->hdr->prod == 1 && cqe->wr_id == 0x1234 &&
		  cqe->status == IBV_WC_WR_FLUSH_ERR && !cqe->byte_len &&
		  !cqe->wc_flags && !cqe->ex.imm_data && !cqe->src_qp &&
		  !cqe->network_hdr_type && !cqe->reserved,
		  "a flushed receive's CQE: no stray bytes (prod %u status %u byte_len %u wc_flags %#x ex %#x src_qp %#x hdr %u reserved %u)",
		  r->hdr->prod, cqe->status, cqe->byte_len, cqe->wc_flags,
		  cqe->ex.invalidate_rkey, cqe->src_qp,
		  cqe->network_hdr_type, cqe->reserved);
	ibv_destroy_qp(qp);
	ibv_destroy_cq(cq);
	ibv_dereg_mr(mr);
}

/*
 * query_qp: ib_core hands the driver a kmalloc'ed (not zeroed) ib_qp_attr
 * and copies most of it to user space; whatever the driver leaves unset
 * would be stale kernel memory.  A new QP has set none of these fields.
 */
static void test_query_qp_zero(void)
{
	struct ibv_cq *cq = ibv_create_cq(ctx, 4, NULL, NULL, 0);
	struct ibv_qp_init_attr qa = {
		.cap = { .max_send_wr = 1, .max_recv_wr = 1,
			 .max_send_sge = 1, .max_recv_sge = 1 },
		.qp_type = IBV_QPT_RC,
	}, init;
	struct ibv_qp_attr a, z;
	struct ibv_qp *qp;
	int dirty;

	qa.send_cq = qa.recv_cq = cq;
	qp = cq ? ibv_create_qp(pd, &qa) : NULL;
	memset(&a, 0, sizeof(a));
	if (!qp || ibv_query_qp(qp, &a, (IBV_QP_DEST_QPN << 1) - 1, &init)) {
		fz_result(0, "query_qp of a new QP: %s", strerror(errno));
		goto out;
	}
	memset(&z, 0, sizeof(z));
	dirty = a.qkey || a.dest_qp_num || a.qp_access_flags ||
		a.pkey_index || a.alt_pkey_index || a.path_mtu ||
		a.path_mig_state || a.timeout || a.retry_cnt ||
		a.rnr_retry || a.min_rnr_timer || a.max_rd_atomic ||
		a.max_dest_rd_atomic || a.alt_port_num || a.alt_timeout ||
		a.en_sqd_async_notify || a.sq_draining ||
		memcmp(&a.ah_attr.grh.dgid, &z.ah_attr.grh.dgid, 16) ||
		a.ah_attr.grh.flow_label || a.ah_attr.grh.hop_limit ||
		a.ah_attr.grh.traffic_class || a.ah_attr.dlid ||
		a.ah_attr.sl || a.ah_attr.is_global ||
		memcmp(&a.alt_ah_attr.grh.dgid, &z.alt_ah_attr.grh.dgid, 16) ||
		a.alt_ah_attr.grh.flow_label || a.alt_ah_attr.dlid ||
		a.alt_ah_attr.sl || a.alt_ah_attr.is_global;
	fz_result(a.qp_state == IBV_QPS_RESET && !dirty,
		  "query_qp of a new QP: nothing but what is set (state %d qkey %#x dqpn %#x timeout %u hop_limit %u alt_timeout %u)",
		  a.qp_state, a.qkey, a.dest_qp_num, a.timeout,
		  a.ah_attr.grh.hop_limit, a.alt_timeout);
out:
	if (qp)
		ibv_destroy_qp(qp);
	if (cq)
		ibv_destroy_cq(cq);
}

/*
 * Three SENDs to a QP that never answers are taken by the kernel; then the
 * producer index goes back to 1 and the doorbell rings: the QP must go to
 * error, promptly.
 */
/* The requester's fetch index in a QP's debugfs file, -1 if unknown. */
static long sq_fetch(const char *path)
{
	char line[256];
	long fetch = -1;
	FILE *f = fopen(path, "r");

	while (f && fgets(line, sizeof(line), f))
		if (sscanf(line, "requester: fetch %ld", &fetch) == 1)
			break;
	if (f)
		fclose(f);
	return fetch;
}

static void test_sq_prod_back(const char *dev)
{
	struct ibv_cq *cq = ibv_create_cq(ctx, 16, NULL, NULL, 0);
	struct ibv_qp_init_attr qa = {
		.cap = { .max_send_wr = 8, .max_recv_wr = 1,
			 .max_send_sge = 1, .max_recv_sge = 1 },
		.qp_type = IBV_QPT_RC,
	};
	struct ibv_send_wr wr = { .opcode = IBV_WR_SEND }, *bad;
	struct ibv_port_attr port;
	struct vrdma_uring *r;
	union ibv_gid gid;
	struct ibv_qp *qp;
	int i, gi = rc_find_gid(dev);
	char path[128];
	double t;

	qa.send_cq = qa.recv_cq = cq;
	qp = cq ? ibv_create_qp(pd, &qa) : NULL;
	if (!qp || gi < 0 || ibv_query_gid(ctx, 1, gi, &gid) ||
	    ibv_query_port(ctx, 1, &port) ||
	    fz_connect(qp, gi, port.active_mtu, 0xfffff0, &gid, 0, 0, 20, 7)) {
		fz_result(0, "an RC QP in RTS: %s", strerror(errno));
		return;
	}
	for (i = 0; i < 3; i++)
		ibv_post_send(qp, &wr, &bad);
	r = &to_vqp(qp)->sq.ring;
	/*
	 * The kernel takes all three first: the provider skips doorbells
	 * the kernel said (no_doorbell) it does not need, and a doorbell may
	 * hand the work to the QP's task, so ring one and wait for the
	 * requester's fetch index in debugfs.
	 */
	ibv_cmd_post_send(qp, NULL, &bad);
	snprintf(path, sizeof(path), "/sys/kernel/debug/vrdma/%s/qp%u", dev,
		 qp->qp_num);
	for (t = fz_now(); sq_fetch(path) != r->head && fz_now() - t < 10;)
		usleep(10000);
	if (sq_fetch(path) != r->head) {
		fz_result(0, "the kernel took the 3 SENDs (%s: fetch %ld, head %u)",
			  path, sq_fetch(path), r->head);
		goto out;
	}
	vrdma_store_release(&r->hdr->prod, r->head - 2);
	t = fz_now();
	ibv_cmd_post_send(qp, NULL, &bad);
	/* At once, not after copying 2^32 WQEs; the task may do it. */
	while (fz_qp_state(qp) != IBV_QPS_ERR && fz_now() - t < 5)
		usleep(10000);
	t = fz_now() - t;
	fz_result(t < 5 && fz_qp_state(qp) == IBV_QPS_ERR,
		  "an SQ producer index moved back: the QP in error (%.2f s)",
		  t);
out:
	ibv_destroy_qp(qp);
	ibv_destroy_cq(cq);
}

int main(int argc, char **argv)
{
	struct ibv_srq_init_attr sa = { .attr = { .max_wr = 1, .max_sge = 1 } };

	setvbuf(stdout, NULL, _IOLBF, 0);
	printf("TAP version 13\n");
	if (argc != 2) {
		fprintf(stderr, "usage: %s DEV\n", argv[0]);
		return 2;
	}
	ctx = rc_open_by_name(argv[1]);
	pd = ctx ? ibv_alloc_pd(ctx) : NULL;
	if (!pd || ibv_query_device(ctx, &attr)) {
		printf("Bail out! cannot open %s\n", argv[1]);
		return 1;
	}
	test_memlock();
	test_memcg();
	test_sizes();
	test_keys();
	test_rings(argv[1]);
	test_cqe_bytes();
	test_query_qp_zero();
	test_sq_prod_back(argv[1]);
	test_count("max_srq", attr.max_srq, mk_srq, rm_srq);
	test_xrc_srq_count();
	/* limits.sh makes the device with a small max_mr; 65536 takes long. */
	bool all = getenv("VRDMA_LIMITS_ALL");
	bool mrs = attr.max_mr <= 4096 || all;
	/* The PDs of kernel users (ib_core's MAD agent has one). */
	int kpd = mrs ? kernel_objs(argv[1], "pd") : 0;

	if (mrs) {
		test_key_isolation(argv[1]);
		/*
		 * A kernel PD comes with a DMA MR on a device without a local
		 * DMA lkey: ours to leave.
		 */
		printf("# %d kernel PDs, each with its DMA MR\n", kpd);
		test_count("max_mr", attr.max_mr - kpd, mk_mr, rm_mr);
		fz_result(!mr_dereg_failed, "every MR of the max_mr fill deregistered (%d failed)",
			  mr_dereg_failed);
	} else {
		fz_skip("max_mr is %d: limits.sh lowers it", attr.max_mr);
	}
	/* Tens of thousands of objects: the long run only (make fuzz). */
	if (all) {
		int kcq = kernel_objs(argv[1], "cq");
		int kqp = kernel_objs(argv[1], "qp");

		printf("# kernel users hold %d CQs, %d PDs, %d QPs\n",
		       kcq, kpd, kqp);
		test_count("max_cq", attr.max_cq - kcq, mk_cq, rm_cq);
		/* And this process has one PD already. */
		test_count("max_pd", attr.max_pd - kpd - 1, mk_pd, rm_pd);
		qp_cq = ibv_create_cq(ctx, 16, NULL, NULL, 0);
		qp_srq = ibv_create_srq(pd, &sa);
		if (qp_cq && qp_srq)
			test_count("max_qp", attr.max_qp - kqp, mk_qp, rm_qp);
	}
	printf("1..%d\n", fz_tap_n);
	return fz_tap_failed ? 1 : 0;
}
