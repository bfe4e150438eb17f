// SPDX-License-Identifier: GPL-2.0
/*
 * The measurements of "make bench" that perftest does not make.
 *
 *   bench-tool verbs DEV   time ibv_reg_mr/ibv_dereg_mr of 1 GiB and the
 *                          creation and destruction of 1,000 RC QPs
 *   bench-tool memcpy      single-core memcpy bandwidth, the ceiling of a
 *                          data path that copies once
 *   bench-tool pingpong    half the round trip of a token passed through
 *                          shared memory between two processes pinned to
 *                          CPUs 0 and 1: the floor of perftest's latency
 *                          (also half a round trip) in this VM
 *
 * Output: CSV lines "test,size,qps,REP,value,unit" (scripts/bench.d/one-vm puts
 * the device and the repetition in).
 */
#define _GNU_SOURCE
#include <infiniband/verbs.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define MR_SIZE		(1UL << 30)
#define NUM_QP		1000

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

static struct ibv_context *open_dev(const char *name)
{
	struct ibv_device **list = ibv_get_device_list(NULL);
	struct ibv_context *ctx = NULL;
	int i;

	for (i = 0; list && list[i]; i++)
		if (!strcmp(ibv_get_device_name(list[i]), name))
			ctx = ibv_open_device(list[i]);
	if (list)
		ibv_free_device_list(list);
	return ctx;
}

static int verbs(const char *name)
{
	struct ibv_qp_init_attr init = {
		.qp_type = IBV_QPT_RC,
		.cap = { .max_send_wr = 64, .max_recv_wr = 64,
			 .max_send_sge = 1, .max_recv_sge = 1 },
	};
	static struct ibv_qp *qps[NUM_QP];
	struct ibv_context *ctx;
	struct ibv_cq *cq;
	struct ibv_pd *pd;
	struct ibv_mr *mr;
	double t0, t1, t2;
	char *buf;
	int i;

	ctx = open_dev(name);
	if (!ctx) {
		fprintf(stderr, "bench-tool: cannot open %s\n", name);
		return 1;
	}
	pd = ibv_alloc_pd(ctx);
	cq = ibv_create_cq(ctx, 256, NULL, NULL, 0);
	if (!pd || !cq) {
		fprintf(stderr, "bench-tool: no PD or CQ on %s\n", name);
		return 1;
	}

	/* Faulted in first: registration is timed, not the page faults. */
	buf = mmap(NULL, MR_SIZE, PROT_READ | PROT_WRITE,
		   MAP_PRIVATE | MAP_ANONYMOUS | MAP_POPULATE, -1, 0);
	if (buf == MAP_FAILED) {
		perror("bench-tool: mmap 1 GiB");
		return 1;
	}
	t0 = now();
	mr = ibv_reg_mr(pd, buf, MR_SIZE, IBV_ACCESS_LOCAL_WRITE |
			IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ);
	t1 = now();
	if (!mr) {
		perror("bench-tool: ibv_reg_mr 1 GiB");
		return 1;
	}
	ibv_dereg_mr(mr);
	t2 = now();
	munmap(buf, MR_SIZE);
	printf("reg_mr,%lu,1,REP,%.3f,ms\n", MR_SIZE, (t1 - t0) * 1e3);
	printf("dereg_mr,%lu,1,REP,%.3f,ms\n", MR_SIZE, (t2 - t1) * 1e3);

	init.send_cq = cq;
	init.recv_cq = cq;
	t0 = now();
	for (i = 0; i < NUM_QP; i++) {
		qps[i] = ibv_create_qp(pd, &init);
		if (!qps[i]) {
			perror("bench-tool: ibv_create_qp");
			return 1;
		}
	}
	t1 = now();
	for (i = 0; i < NUM_QP; i++)
		ibv_destroy_qp(qps[i]);
	t2 = now();
	printf("create_qp,%d,%d,REP,%.3f,ms\n", NUM_QP, NUM_QP, (t1 - t0) * 1e3);
	printf("destroy_qp,%d,%d,REP,%.3f,ms\n", NUM_QP, NUM_QP,
	       (t2 - t1) * 1e3);

	ibv_destroy_cq(cq);
	ibv_dealloc_pd(pd);
	ibv_close_device(ctx);
	return 0;
}

/*
 * memcpy between two buffers of @size, repeated for about @secs: MiB/s.
 * The 64 MiB case is the ceiling for big messages (out of cache both
 * sides); the small ones show what a cached copy costs.
 */
static double copy_bw(size_t size, double secs)
{
	char *src = malloc(size), *dst = malloc(size);
	/* Few clock reads: under TCG each costs as much as a small copy. */
	unsigned long batch = size < (64 << 20) ? (64 << 20) / size : 1;
	unsigned long n = 0, i;
	double t0, t;

	memset(src, 1, size);
	memset(dst, 2, size);
	t0 = now();
	do {
		for (i = 0; i < batch; i++) {
			memcpy(dst, src, size);
			/* Keep the copy from being optimised away. */
			__asm__ volatile("" : : "r"(dst) : "memory");
		}
		n += batch;
		t = now() - t0;
	} while (t < secs);
	free(src);
	free(dst);
	return (double)size * n / t / (1 << 20);
}

static int memcpy_bw(void)
{
	static const size_t sizes[] = { 65536, 1 << 20, 64 << 20 };
	unsigned int i;

	for (i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++)
		printf("memcpy,%zu,1,REP,%.1f,MB/s\n", sizes[i],
		       copy_bw(sizes[i], 1.0));
	return 0;
}

static void pin(int cpu)
{
	cpu_set_t set;

	CPU_ZERO(&set);
	CPU_SET(cpu, &set);
	sched_setaffinity(0, sizeof(set), &set);
}

/* As perftest's *_lat: the typical (median) of 200 half round trips. */
static int pingpong(void)
{
	enum { ITERS = 200 };
	volatile int *tok;
	static double lat[ITERS];
	double t, tmp;
	pid_t pid;
	int i, j;

	tok = mmap(NULL, 4096, PROT_READ | PROT_WRITE,
		   MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	if (tok == MAP_FAILED)
		return 1;
	pid = fork();
	if (pid < 0)
		return 1;
	if (!pid) {
		/* The echo side; the two tokens on different cache lines. */
		pin(1);
		for (i = 1; i <= ITERS; i++) {
			while (tok[0] != i)
				;
			tok[16] = i;
		}
		_exit(0);
	}
	pin(0);
	usleep(100000);
	for (i = 1; i <= ITERS; i++) {
		t = now();
		tok[0] = i;
		while (tok[16] != i)
			;
		lat[i - 1] = (now() - t) / 2;
	}
	waitpid(pid, NULL, 0);
	for (i = 1; i < ITERS; i++)
		for (j = i; j > 0 && lat[j - 1] > lat[j]; j--) {
			tmp = lat[j];
			lat[j] = lat[j - 1];
			lat[j - 1] = tmp;
		}
	printf("pingpong,2,1,REP,%.2f,us\n", lat[ITERS / 2] * 1e6);
	return 0;
}

int main(int argc, char **argv)
{
	if (argc == 3 && !strcmp(argv[1], "verbs"))
		return verbs(argv[2]);
	if (argc == 2 && !strcmp(argv[1], "memcpy"))
		return memcpy_bw();
	if (argc == 2 && !strcmp(argv[1], "pingpong"))
		return pingpong();
	fprintf(stderr,
		"usage: bench-tool verbs DEV | bench-tool memcpy | bench-tool pingpong\n");
	return 2;
}
