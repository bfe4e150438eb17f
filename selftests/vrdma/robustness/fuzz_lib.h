/* SPDX-License-Identifier: GPL-2.0 */
/*
 * What the two fuzzers (fuzz_verbs, fuzz_wire) share: a seeded random
 * generator, so that every run prints a seed that replays it, TAP output,
 * the device's counters and a plain RC connection without the kselftest
 * harness.
 */
#ifndef VRDMA_FUZZ_LIB_H
#define VRDMA_FUZZ_LIB_H

#include "gid_lib.h"
#include "ko_lib.h"
#include <errno.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>
#include <infiniband/verbs.h>

/* ---- random numbers: xorshift64*, seeded by splitmix64 ---------------- */

struct fz_rng {
	uint64_t s;
};

static inline uint64_t fz_splitmix(uint64_t x)
{
	x += 0x9e3779b97f4a7c15ull;
	x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
	x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
	return x ^ (x >> 31);
}

static inline void fz_seed(struct fz_rng *r, uint64_t seed)
{
	r->s = fz_splitmix(seed) | 1;
}

static inline uint64_t fz_u64(struct fz_rng *r)
{
	r->s ^= r->s >> 12;
	r->s ^= r->s << 25;
	r->s ^= r->s >> 27;
	return r->s * 0x2545f4914f6cdd1dull;
}

static inline uint32_t fz_u32(struct fz_rng *r)
{
	return fz_u64(r) >> 32;
}

/* 0 .. n-1 (n > 0) */
static inline uint32_t fz_below(struct fz_rng *r, uint32_t n)
{
	return (uint32_t)(((uint64_t)fz_u32(r) * n) >> 32);
}

/* true with probability 1/n */
static inline int fz_one_in(struct fz_rng *r, uint32_t n)
{
	return fz_below(r, n) == 0;
}

static inline void fz_bytes(struct fz_rng *r, void *p, size_t n)
{
	uint8_t *b = p;

	while (n--)
		*b++ = fz_u32(r);
}

/*
 * A 32-bit value that tends to break things: small, near powers of two,
 * all ones, or anything.
 */
static inline uint32_t fz_interesting32(struct fz_rng *r)
{
	static const uint32_t v[] = {
		0, 1, 2, 3, 7, 8, 15, 16, 31, 32, 63, 64, 127, 128, 255, 256,
		511, 512, 1023, 1024, 4095, 4096, 4097, 65535, 65536, 65537,
		0x7fffffff, 0x80000000, 0xfffffffe, 0xffffffff, 0x00ffffff,
		0x01000000,
	};

	switch (fz_below(r, 4)) {
	case 0:
		return fz_u32(r);
	case 1:
		return fz_below(r, 64);
	default:
		return v[fz_below(r, sizeof(v) / sizeof(v[0]))];
	}
}

/* ---- output and time ------------------------------------------------- */

static int fz_tap_n, fz_tap_failed;

static inline void fz_result(int ok, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

static inline void fz_result(int ok, const char *fmt, ...)
{
	va_list ap;

	printf("%sok %d ", ok ? "" : "not ", ++fz_tap_n);
	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
	printf("\n");
	if (!ok)
		fz_tap_failed++;
}

/*
 * What cannot be tested here: a skip, and under CI (vrdma_in_ci()), where
 * every kernel feature and tool a test needs is there, a failure.
 */
static inline void fz_skip(const char *fmt, ...)
	__attribute__((format(printf, 1, 2)));

static inline void fz_skip(const char *fmt, ...)
{
	int fail = vrdma_in_ci();
	va_list ap;

	printf("%sok %d # %s", fail ? "not " : "", ++fz_tap_n,
	       fail ? "a failure under CI: " : "SKIP ");
	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
	printf("\n");
	if (fail)
		fz_tap_failed++;
}

static inline double fz_now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

static inline int fz_sh(const char *cmd)
{
	int rc = system(cmd);

	return WIFEXITED(rc) ? WEXITSTATUS(rc) : -1;
}

/*
 * Wait at most @secs for the child @pid to end, its status in *@st; kill it
 * when it does not.  Returns 0, or -1 if it had to be killed: a fuzzer
 * never waits for a child that hangs (the kernel's part of such a hang is
 * for fuzz.sh's watchdog to show).
 */
static inline int fz_wait_child(pid_t pid, int *st, double secs)
{
	double end = fz_now() + secs;
	pid_t w;

	while (!(w = waitpid(pid, st, WNOHANG)) && fz_now() < end)
		usleep(10 * 1000);
	if (w == pid)
		return 0;
	if (!w) {
		kill(pid, SIGKILL);
		waitpid(pid, st, 0);
	}
	return -1;
}

/* ---- the device ------------------------------------------------------ */

/* rc_find_gid(): gid_lib.h. */

/* ---- a plain RC (or UC) connection ----------------------------------- */

/*
 * Move @qp through INIT, RTR and RTS towards @dqpn at @dgid, granting the
 * remote rights @access (UC: REMOTE_WRITE at most).  UC takes only the
 * attributes UC has; UD needs no peer.  The XRC QPs take the attributes
 * of their columns of the IBA's (and ib_core's) tables: an initiator
 * (IBV_QPT_XRC_SEND) has no responder, so no MAX_DEST_RD_ATOMIC and
 * MIN_RNR_TIMER at RTR; a target (IBV_QPT_XRC_RECV) has no requester, so
 * only TIMEOUT and SQ_PSN at RTS.
 */
static inline int fz_connect_access(struct ibv_qp *qp, int gid_idx,
				    enum ibv_mtu mtu, uint32_t dqpn,
				    const union ibv_gid *dgid,
				    uint32_t rq_psn, uint32_t sq_psn,
				    int timeout, int retry, int access)
{
	int uc = qp->qp_type == IBV_QPT_UC, ud = qp->qp_type == IBV_QPT_UD;
	int xini = qp->qp_type == IBV_QPT_XRC_SEND;
	int xtgt = qp->qp_type == IBV_QPT_XRC_RECV;
	struct ibv_qp_attr a = {
		.qp_state = IBV_QPS_INIT,
		.port_num = 1,
		.qkey = 0x11111111,
		.qp_access_flags = access,
	};
	int mask;

	if (ud)
		mask = IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT |
		       IBV_QP_QKEY;
	else if (uc)
		a.qp_access_flags &= IBV_ACCESS_REMOTE_WRITE,
		mask = IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT |
		       IBV_QP_ACCESS_FLAGS;
	else
		mask = IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT |
		       IBV_QP_ACCESS_FLAGS;
	if (ibv_modify_qp(qp, &a, mask))
		return -1;

	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_RTR;
	mask = IBV_QP_STATE;
	if (!ud) {
		a.path_mtu = mtu;
		a.dest_qp_num = dqpn;
		a.rq_psn = rq_psn;
		a.ah_attr.is_global = 1;
		a.ah_attr.grh.dgid = *dgid;
		a.ah_attr.grh.sgid_index = gid_idx;
		a.ah_attr.grh.hop_limit = 64;
		a.ah_attr.port_num = 1;
		mask |= IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN |
			IBV_QP_RQ_PSN;
		if (!uc && !xini) {
			a.max_dest_rd_atomic = 4;
			a.min_rnr_timer = 1;
			mask |= IBV_QP_MAX_DEST_RD_ATOMIC |
				IBV_QP_MIN_RNR_TIMER;
		}
	}
	if (ibv_modify_qp(qp, &a, mask))
		return -1;

	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_RTS;
	a.sq_psn = sq_psn;
	mask = IBV_QP_STATE | IBV_QP_SQ_PSN;
	if (xtgt) {
		a.timeout = timeout;
		mask |= IBV_QP_TIMEOUT;
	} else if (!uc && !ud) {
		a.timeout = timeout;
		a.retry_cnt = retry;
		a.rnr_retry = 7;
		a.max_rd_atomic = 4;
		mask |= IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT | IBV_QP_RNR_RETRY |
			IBV_QP_MAX_QP_RD_ATOMIC;
	}
	return ibv_modify_qp(qp, &a, mask);
}

/* fz_connect_access() granting every remote right the QP type has. */
static inline int fz_connect(struct ibv_qp *qp, int gid_idx,
			     enum ibv_mtu mtu, uint32_t dqpn,
			     const union ibv_gid *dgid, uint32_t rq_psn,
			     uint32_t sq_psn, int timeout, int retry)
{
	return fz_connect_access(qp, gid_idx, mtu, dqpn, dgid, rq_psn, sq_psn,
				 timeout, retry, IBV_ACCESS_REMOTE_WRITE |
				 IBV_ACCESS_REMOTE_READ |
				 IBV_ACCESS_REMOTE_ATOMIC);
}

static inline enum ibv_qp_state fz_qp_state(struct ibv_qp *qp)
{
	struct ibv_qp_init_attr init;
	struct ibv_qp_attr a;

	if (ibv_query_qp(qp, &a, IBV_QP_STATE, &init))
		return -1;
	return a.qp_state;
}

/* Poll @cq for one completion within @ms; 1, 0 (none) or -1. */
static inline int fz_poll(struct ibv_cq *cq, struct ibv_wc *wc, int ms)
{
	double end = fz_now() + ms / 1e3;
	int n;

	do {
		n = ibv_poll_cq(cq, 1, wc);
		if (n)
			return n;
		usleep(200);
	} while (fz_now() < end);
	return 0;
}

/* ---- live traffic: a QP pair that must keep working ------------------ */

#define FZ_LIVE_LEN	8192

static volatile sig_atomic_t fz_live_stop;

static void fz_live_sigterm(int sig)
{
	(void)sig;
	fz_live_stop = 1;
}

/* Wait for one completion on @cq; it must be a success of @op. */
static inline int fz_live_wc(struct ibv_cq *cq, enum ibv_wc_opcode op,
			     const char *what)
{
	struct ibv_wc wc;

	double end = fz_now() + 120;
	int n = 0;

	while (!n && !fz_live_stop && fz_now() < end) {
		n = ibv_poll_cq(cq, 1, &wc);
		if (!n)
			usleep(200);
	}
	if (!n && fz_live_stop)
		return 1;	/* stopped while waiting: not a failure */
	if (n != 1) {
		printf("# live traffic: no completion for %s\n", what);
		return -1;
	}
	if (wc.status != IBV_WC_SUCCESS || wc.opcode != op) {
		printf("# live traffic: %s: status %s opcode %d\n", what,
		       ibv_wc_status_str(wc.status), wc.opcode);
		return -1;
	}
	return 0;
}

/*
 * An RC pair between @dev_a and @dev_b (they may be the same) doing SEND,
 * RDMA WRITE and RDMA READ of FZ_LIVE_LEN bytes with a new pattern each
 * round, every byte checked, until SIGTERM.  Returns 0 if every round was
 * right and at least one completed, else 1.
 */
static inline int fz_live_run(const char *dev_a, const char *dev_b)
{
	struct ibv_context *ctx[2];
	struct ibv_pd *pd[2];
	struct ibv_cq *cq[2];
	struct ibv_qp *qp[2];
	struct ibv_mr *mr[2];
	union ibv_gid gid[2];
	int gi[2], i;
	uint8_t *buf[2];
	struct ibv_port_attr port;
	unsigned long rounds = 0;
	int ret = 0, slow;

	signal(SIGTERM, fz_live_sigterm);
	for (i = 0; i < 2; i++) {
		const char *dev = i ? dev_b : dev_a;
		struct ibv_qp_init_attr qa = {
			.cap = { .max_send_wr = 8, .max_recv_wr = 8,
				 .max_send_sge = 1, .max_recv_sge = 1 },
			.qp_type = IBV_QPT_RC,
		};

		ctx[i] = rc_open_by_name(dev);
		gi[i] = rc_find_gid(dev);
		if (!ctx[i] || gi[i] < 0 ||
		    ibv_query_gid(ctx[i], 1, gi[i], &gid[i]) ||
		    ibv_query_port(ctx[i], 1, &port))
			goto fail;
		pd[i] = ibv_alloc_pd(ctx[i]);
		cq[i] = ibv_create_cq(ctx[i], 16, NULL, NULL, 0);
		buf[i] = calloc(1, 3 * FZ_LIVE_LEN);
		if (!pd[i] || !cq[i] || !buf[i])
			goto fail;
		mr[i] = ibv_reg_mr(pd[i], buf[i], 3 * FZ_LIVE_LEN,
				   IBV_ACCESS_LOCAL_WRITE |
				   IBV_ACCESS_REMOTE_WRITE |
				   IBV_ACCESS_REMOTE_READ);
		qa.send_cq = qa.recv_cq = cq[i];
		qp[i] = ibv_create_qp(pd[i], &qa);
		if (!mr[i] || !qp[i])
			goto fail;
	}
	/*
	 * Retransmit after 268 ms (timeout 16), 7 times; on a slow (debug)
	 * kernel after 4.3 s (20): a busy TCG host can sit on an ACK for
	 * longer than the 2 s the first allows.
	 */
	slow = getenv("VRDMA_TEST_SLOW") ? atoi(getenv("VRDMA_TEST_SLOW")) : 1;
	for (i = 0; i < 2; i++)
		if (fz_connect(qp[i], gi[i], port.active_mtu,
			       qp[!i]->qp_num, &gid[!i], 100, 100,
			       slow > 1 ? 20 : 16, 7))
			goto fail;

	while (!fz_live_stop) {
		/* buf[x]: [0, L) send/write source, [L, 2L) recv/write
		 * target, [2L, 3L) read target.
		 */
		struct ibv_sge s = { (uintptr_t)buf[0], FZ_LIVE_LEN,
				     mr[0]->lkey };
		struct ibv_sge r = { (uintptr_t)buf[1] + FZ_LIVE_LEN,
				     FZ_LIVE_LEN, mr[1]->lkey };
		struct ibv_recv_wr rwr = { .sg_list = &r, .num_sge = 1 }, *brw;
		struct ibv_send_wr wr = { .sg_list = &s, .num_sge = 1,
					  .send_flags = IBV_SEND_SIGNALED },
				   *bwr;
		uint8_t seed = rounds * 7 + 1;
		int j;

		for (j = 0; j < FZ_LIVE_LEN; j++)
			buf[0][j] = seed + j * 13;
		if (ibv_post_recv(qp[1], &rwr, &brw))
			goto fail;
		wr.opcode = IBV_WR_SEND;
		if (ibv_post_send(qp[0], &wr, &bwr))
			goto fail;
		ret = fz_live_wc(cq[0], IBV_WC_SEND, "SEND");
		if (!ret)
			ret = fz_live_wc(cq[1], IBV_WC_RECV, "RECV");
		if (ret)
			goto stop;
		if (memcmp(buf[0], buf[1] + FZ_LIVE_LEN, FZ_LIVE_LEN)) {
			printf("# live traffic: SEND data wrong\n");
			goto fail;
		}
		for (j = 0; j < FZ_LIVE_LEN; j++)
			buf[0][j] = seed + j * 29;
		wr.opcode = IBV_WR_RDMA_WRITE;
		wr.wr.rdma.remote_addr = (uintptr_t)buf[1] + FZ_LIVE_LEN;
		wr.wr.rdma.rkey = mr[1]->rkey;
		if (ibv_post_send(qp[0], &wr, &bwr))
			goto fail;
		ret = fz_live_wc(cq[0], IBV_WC_RDMA_WRITE, "WRITE");
		if (ret)
			goto stop;
		if (memcmp(buf[0], buf[1] + FZ_LIVE_LEN, FZ_LIVE_LEN)) {
			printf("# live traffic: WRITE data wrong\n");
			goto fail;
		}
		s.addr = (uintptr_t)buf[0] + 2 * FZ_LIVE_LEN;
		wr.opcode = IBV_WR_RDMA_READ;
		if (ibv_post_send(qp[0], &wr, &bwr))
			goto fail;
		ret = fz_live_wc(cq[0], IBV_WC_RDMA_READ, "READ");
		if (ret)
			goto stop;
		if (memcmp(buf[0] + 2 * FZ_LIVE_LEN, buf[1] + FZ_LIVE_LEN,
			   FZ_LIVE_LEN)) {
			printf("# live traffic: READ data wrong\n");
			goto fail;
		}
		/* faults.sh waits for this before it breaks anything. */
		if (!rounds++) {
			printf("# live traffic: moving data (QPs %#x, %#x)\n",
			       qp[0]->qp_num, qp[1]->qp_num);
			fflush(stdout);
		}
	}
stop:
	if (ret < 0)
		goto fail;
	printf("# live traffic: %lu rounds of SEND, WRITE, READ\n", rounds);
	fflush(stdout);
	return rounds ? 0 : 1;
fail:
	printf("# live traffic failed after %lu rounds (%s)\n", rounds,
	       strerror(errno));
	fflush(stdout);
	return 1;
}

/* fz_live_run() in a child process; returns its pid. */
static inline pid_t fz_live_start(const char *dev_a, const char *dev_b)
{
	pid_t pid;

	fflush(stdout);
	pid = fork();
	if (!pid)
		_exit(fz_live_run(dev_a, dev_b));
	return pid;
}

/*
 * Stop the live traffic; whether it stayed right throughout.  It stops
 * within one poll of its CQ (fz_live_wc()); a slow host gets a minute.
 */
static inline int fz_live_stop_wait(pid_t pid)
{
	int st;

	kill(pid, SIGTERM);
	if (fz_wait_child(pid, &st, 60)) {
		printf("# live traffic: did not stop within 60 s of SIGTERM\n");
		return 0;
	}
	return WIFEXITED(st) && WEXITSTATUS(st) == 0;
}

#endif /* VRDMA_FUZZ_LIB_H */
