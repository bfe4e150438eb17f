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
 * The ceiling of a link between two VMs, with plain UDP datagrams of the
 * sizes RoCE packets have on it (scripts/bench.d/two-vm):
 *
 *   bench-tool udp-sink PORT
 *                          the other end: counts datagrams, echoes those
 *                          that ask for it, reports its counts
 *   bench-tool udp-oneway HOST PORT SIZE SECS
 *                          datagrams of SIZE bytes of UDP payload sent as
 *                          fast as the sender can for SECS (sendmmsg, 32 a
 *                          call): what the sink received, per second
 *   bench-tool udp-rr HOST PORT REQ RESP INFLIGHT SECS
 *                          requests of REQ bytes answered by the sink with
 *                          RESP bytes, INFLIGHT outstanding at any time:
 *                          round trips per second, and with one in flight
 *                          the median round trip
 *
 * Output: CSV lines "test,size,qps,REP,value,unit" (scripts/bench.d/one-vm puts
 * the device and the repetition in).
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <infiniband/verbs.h>
#include <netdb.h>
#include <netinet/in.h>
#include <poll.h>
#include <sched.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
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


/* --- the link's ceiling: UDP between two VMs ---------------------------- */

#define UDP_MAX		9000	/* the VMs' MTU: no datagram is fragmented */
#define UDP_BATCH	32

/* The first bytes of every datagram: what the sink is to do with it. */
struct udp_hdr {
	uint32_t kind;		/* UDP_DATA, UDP_ECHO, UDP_RESET, UDP_STATS */
	uint32_t resp;		/* UDP_ECHO: the size of the answer */
	uint64_t seq;		/* echoed back */
};

enum { UDP_DATA = 1, UDP_ECHO, UDP_RESET, UDP_STATS };

struct udp_stats {
	uint32_t kind;
	uint32_t pad;
	uint64_t pkts, bytes;
};

static int udp_socket(void)
{
	int fd = socket(AF_INET, SOCK_DGRAM, 0), sz = 8 << 20;

	if (fd < 0) {
		perror("bench-tool: socket");
		exit(1);
	}
	/* Deep buffers: the sender, not a socket, is to be the limit. */
	setsockopt(fd, SOL_SOCKET, SO_RCVBUFFORCE, &sz, sizeof(sz));
	setsockopt(fd, SOL_SOCKET, SO_SNDBUFFORCE, &sz, sizeof(sz));
	return fd;
}

static void udp_peer(int fd, const char *host, const char *port)
{
	struct addrinfo hints = { .ai_family = AF_INET,
				  .ai_socktype = SOCK_DGRAM }, *ai;

	if (getaddrinfo(host, port, &hints, &ai) ||
	    connect(fd, ai->ai_addr, ai->ai_addrlen)) {
		fprintf(stderr, "bench-tool: cannot reach %s:%s\n", host, port);
		exit(1);
	}
	freeaddrinfo(ai);
}

static int udp_sink(const char *port)
{
	static char bufs[UDP_BATCH][UDP_MAX];
	struct sockaddr_in from[UDP_BATCH], any = {
		.sin_family = AF_INET, .sin_port = htons(atoi(port)),
	};
	struct mmsghdr msgs[UDP_BATCH];
	struct iovec iov[UDP_BATCH];
	static char out[UDP_MAX];
	uint64_t pkts = 0, bytes = 0;
	int fd = udp_socket(), n, i;

	if (bind(fd, (struct sockaddr *)&any, sizeof(any))) {
		perror("bench-tool: bind");
		return 1;
	}
	for (;;) {
		for (i = 0; i < UDP_BATCH; i++) {
			iov[i] = (struct iovec){ bufs[i], UDP_MAX };
			msgs[i] = (struct mmsghdr){ .msg_hdr = {
				.msg_name = &from[i],
				.msg_namelen = sizeof(from[i]),
				.msg_iov = &iov[i], .msg_iovlen = 1 } };
		}
		n = recvmmsg(fd, msgs, UDP_BATCH, MSG_WAITFORONE, NULL);
		if (n < 0)
			continue;
		for (i = 0; i < n; i++) {
			struct udp_hdr *h = (struct udp_hdr *)bufs[i];
			struct udp_stats st = { .kind = UDP_STATS };
			size_t len = msgs[i].msg_len, rlen;

			if (len < sizeof(*h))
				continue;
			switch (h->kind) {
			case UDP_DATA:
				pkts++;
				bytes += len;
				break;
			case UDP_ECHO:
				rlen = h->resp;
				if (rlen < sizeof(*h) || rlen > UDP_MAX)
					rlen = sizeof(*h);
				memcpy(out, h, sizeof(*h));
				sendto(fd, out, rlen, 0,
				       (struct sockaddr *)&from[i],
				       msgs[i].msg_hdr.msg_namelen);
				break;
			case UDP_RESET:
				pkts = bytes = 0;
				__attribute__((fallthrough));
			case UDP_STATS:
				st.pkts = pkts;
				st.bytes = bytes;
				sendto(fd, &st, sizeof(st), 0,
				       (struct sockaddr *)&from[i],
				       msgs[i].msg_hdr.msg_namelen);
				break;
			}
		}
	}
}

/* Ask the sink (RESET or STATS) until it answers: a lost datagram is resent. */
static int udp_ask(int fd, uint32_t kind, struct udp_stats *st)
{
	struct udp_hdr h = { .kind = kind };
	struct pollfd p = { .fd = fd, .events = POLLIN };
	int tries;

	for (tries = 0; tries < 50; tries++) {
		if (send(fd, &h, sizeof(h), 0) < 0)
			continue;
		while (poll(&p, 1, 200) == 1) {
			if (recv(fd, st, sizeof(*st), 0) == sizeof(*st) &&
			    st->kind == UDP_STATS)
				return 0;
		}
	}
	fprintf(stderr, "bench-tool: the sink does not answer\n");
	return 1;
}

static int udp_oneway(const char *host, const char *port, int size,
		      double secs)
{
	static char buf[UDP_MAX];
	struct mmsghdr msgs[UDP_BATCH];
	struct iovec iov = { buf, size };
	struct udp_hdr *h = (struct udp_hdr *)buf;
	struct udp_stats st;
	int fd = udp_socket(), i;
	double t0, t;

	if (size < (int)sizeof(*h) || size > UDP_MAX)
		return 2;
	udp_peer(fd, host, port);
	if (udp_ask(fd, UDP_RESET, &st))
		return 1;
	h->kind = UDP_DATA;
	for (i = 0; i < UDP_BATCH; i++)
		msgs[i] = (struct mmsghdr){ .msg_hdr = { .msg_iov = &iov,
							 .msg_iovlen = 1 } };
	t0 = now();
	do {
		/* A full queue is the ceiling too: ENOBUFS is not an error. */
		sendmmsg(fd, msgs, UDP_BATCH, 0);
		t = now() - t0;
	} while (t < secs);
	/* What is still on its way arrives before the question. */
	usleep(200000);
	if (udp_ask(fd, UDP_STATS, &st))
		return 1;
	printf("udp_oneway,%d,1,REP,%.0f,pps\n", size, st.pkts / t);
	printf("udp_oneway_bw,%d,1,REP,%.2f,MB/s\n", size,
	       st.bytes / t / (1 << 20));
	return 0;
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

static int udp_rr(const char *host, const char *port, int req, int resp,
		  int inflight, double secs)
{
	enum { SAMPLES = 100000 };
	static char buf[UDP_MAX], in[UDP_MAX];
	static double sent_at[1024], rtt[SAMPLES];
	struct udp_hdr *h = (struct udp_hdr *)buf;
	struct pollfd p = { .fd = -1, .events = POLLIN };
	uint64_t seq = 0, done = 0, lost = 0;
	int fd = udp_socket(), i, n = 0;
	double t0, t;

	if (req < (int)sizeof(*h) || req > UDP_MAX || resp > UDP_MAX ||
	    inflight < 1 || inflight > 1024)
		return 2;
	udp_peer(fd, host, port);
	p.fd = fd;
	h->kind = UDP_ECHO;
	h->resp = resp;
	t0 = now();
	for (i = 0; i < inflight; i++) {
		h->seq = seq++;
		sent_at[h->seq % 1024] = now();
		send(fd, buf, req, 0);
	}
	do {
		if (poll(&p, 1, 100) != 1) {
			/* Answers lost: the window is filled again. */
			for (i = 0; i < inflight; i++) {
				h->seq = seq++;
				sent_at[h->seq % 1024] = now();
				send(fd, buf, req, 0);
			}
			lost++;
		} else if (recv(fd, in, sizeof(in), 0) >= (int)sizeof(*h)) {
			struct udp_hdr *a = (struct udp_hdr *)in;

			t = now();
			if (n < SAMPLES)
				rtt[n++] = t - sent_at[a->seq % 1024];
			done++;
			h->seq = seq++;
			sent_at[h->seq % 1024] = t;
			send(fd, buf, req, 0);
		}
		t = now() - t0;
	} while (t < secs);
	printf("udp_rr,%d,%d,REP,%.0f,tps\n", req, inflight, done / t);
	if (inflight == 1 && n) {
		qsort(rtt, n, sizeof(rtt[0]), cmp_double);
		printf("udp_rtt,%d,1,REP,%.1f,us\n", req, rtt[n / 2] * 1e6);
	}
	if (lost)
		fprintf(stderr, "bench-tool: udp-rr: %lu refills after losses\n",
			(unsigned long)lost);
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
	if (argc == 3 && !strcmp(argv[1], "udp-sink"))
		return udp_sink(argv[2]);
	if (argc == 6 && !strcmp(argv[1], "udp-oneway"))
		return udp_oneway(argv[2], argv[3], atoi(argv[4]),
				  atof(argv[5]));
	if (argc == 8 && !strcmp(argv[1], "udp-rr"))
		return udp_rr(argv[2], argv[3], atoi(argv[4]), atoi(argv[5]),
			      atoi(argv[6]), atof(argv[7]));
	fprintf(stderr,
		"usage: bench-tool verbs DEV | memcpy | pingpong | udp-sink PORT |\n"
		"       udp-oneway HOST PORT SIZE SECS |\n"
		"       udp-rr HOST PORT REQ RESP INFLIGHT SECS\n");
	return 2;
}
