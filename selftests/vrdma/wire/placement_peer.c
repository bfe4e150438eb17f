// SPDX-License-Identifier: GPL-2.0
/*
 * ATOMIC WRITE and FLUSH (the memory placement extensions) between two
 * hosts, for interop.sh: one side (the server, the target) registers a
 * buffer, the other (the client, the requester) writes into it and flushes
 * it over RC QPs; the target checks its own memory byte by byte after each
 * step and says what it found.  QP numbers, PSNs, GIDs, addresses and keys
 * go over a TCP connection, as ibv_rc_pingpong's do.
 *
 *   placement_peer -d DEV -g GIDX -p PORT -t TEST [HOST]
 *
 * Each case runs on QPs of its own (a remote access error breaks both):
 *
 *   atomic_write  8 bytes at an aligned offset and at the MR's last 8
 *                 bytes (IBV_WC_SUCCESS, IBV_WC_ATOMIC_WRITE, the bytes in
 *                 the target's memory, nothing else changed); through an
 *                 rkey without REMOTE_WRITE: IBV_WC_REM_ACCESS_ERR and the
 *                 memory unchanged
 *   flush         an RDMA WRITE then a global FLUSH of its range, and one
 *                 of the whole MR (IBV_WC_FLUSH, the data there); a
 *                 persistent FLUSH where the target could register an MR
 *                 with IB_ACCESS_FLUSH_PERSISTENT; a persistent FLUSH of
 *                 an MR with only the global right, and a global FLUSH
 *                 through an rkey without it: IBV_WC_REM_ACCESS_ERR
 *   flush_dropped an RDMA WRITE then a global FLUSH of its range, to a
 *                 target that drops the FLUSH unanswered (rdma_rxe 6.2 to
 *                 6.12 checks a FLUSH's ICRC over its headers twice, and
 *                 so drops the FLUSH of the IBA: see vrdma's icrc.c): the
 *                 WRITE lands, the FLUSH ends in IBV_WC_RETRY_EXC_ERR once
 *                 the retries are spent, nothing else changes
 *
 * rdma-core 44 has neither ibv_wr_flush() nor the FLUSH access flags: the
 * flags are ib_core's values, and a FLUSH is written into the send queue
 * the way rdma-core's own builders write it, in vrdma's ring layout
 * (uapi/rdma/vrdma-abi.h) or rdma_rxe's (rdma/rdma_user_rxe.h).
 * "placement_peer -d DEV --caps" prints which of the operations the
 * device announces.  Exit 0 only if every check passed.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <inttypes.h>
#include <netdb.h>
#include <poll.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>
#include <infiniband/verbs.h>
#include <rdma/rdma_user_rxe.h>

#include "vrdma.h"

/* ib_core's names (include/uapi/rdma/ib_user_ioctl_verbs.h, Linux 6.2 on). */
#define PP_ACCESS_FLUSH_GLOBAL		(1 << 8)
#define PP_ACCESS_FLUSH_PERSISTENT	(1 << 9)
#define PP_DEVICE_FLUSH_GLOBAL		(1ULL << 38)
#define PP_DEVICE_FLUSH_PERSISTENT	(1ULL << 39)
#define PP_DEVICE_ATOMIC_WRITE		(1ULL << 40)
#define PP_WR_FLUSH			14
#define PP_WC_FLUSH			8
#define PP_FLUSH_GLOBAL			1
#define PP_FLUSH_PERSISTENT		2
#define PP_FLUSH_RANGE			0
#define PP_FLUSH_MR			1

#define BUF_SIZE	4096
#define FILL		0xa5
/* A protocol line: a keyword, an offset and up to BUF_SIZE bytes in hex. */
#define LINE_MAX_LEN	(2 * BUF_SIZE + 64)

static struct {
	struct ibv_context *ctx;
	struct ibv_pd *pd;
	struct ibv_cq *cq;
	int gidx;
	union ibv_gid gid;
	int sock;
	bool rxe;
	int failed;
	int passed;
} g;

static void check(bool ok, const char *fmt, ...)
{
	va_list ap;

	printf("%s ", ok ? "ok:" : "FAILED:");
	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
	printf("\n");
	fflush(stdout);
	if (ok)
		g.passed++;
	else
		g.failed++;
}

static void die(const char *what)
{
	fprintf(stderr, "placement_peer: %s: %s\n", what, strerror(errno));
	exit(1);
}

/* One line over the TCP connection, either way. */
static void say(const char *fmt, ...)
{
	static char line[LINE_MAX_LEN];
	va_list ap;
	int n;

	va_start(ap, fmt);
	n = vsnprintf(line, sizeof(line) - 1, fmt, ap);
	va_end(ap);
	line[n++] = '\n';
	if (write(g.sock, line, n) != n)
		die("write to peer");
}

static char *hear(void)
{
	static char line[LINE_MAX_LEN];
	size_t n = 0;

	while (n < sizeof(line) - 1) {
		if (read(g.sock, line + n, 1) != 1) {
			fprintf(stderr, "placement_peer: the peer went away\n");
			exit(1);
		}
		if (line[n] == '\n')
			break;
		n++;
	}
	line[n] = 0;
	return line;
}

static void tcp_connect(const char *host, const char *port)
{
	struct addrinfo hints = { .ai_socktype = SOCK_STREAM }, *ai;
	int s, one = 1;

	if (getaddrinfo(host, port, &hints, &ai))
		die("getaddrinfo");
	if (host) {
		for (int i = 0; i < 100; i++) {
			s = socket(ai->ai_family, SOCK_STREAM, 0);
			if (!connect(s, ai->ai_addr, ai->ai_addrlen))
				break;
			close(s);
			s = -1;
			usleep(100000);
		}
		if (s < 0)
			die("connect");
		g.sock = s;
	} else {
		s = socket(AF_INET, SOCK_STREAM, 0);
		setsockopt(s, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
		struct sockaddr_in sin = {
			.sin_family = AF_INET,
			.sin_port = htons(atoi(port)),
		};
		if (bind(s, (void *)&sin, sizeof(sin)) || listen(s, 1))
			die("listen");
		g.sock = accept(s, NULL, NULL);
		if (g.sock < 0)
			die("accept");
		close(s);
	}
	freeaddrinfo(ai);
}

/* An RC QP that may use the placement operations, connected to the peer's. */
static struct ibv_qp *qp_connect(int access)
{
	struct ibv_qp_init_attr_ex ia = {
		.send_cq = g.cq, .recv_cq = g.cq, .qp_type = IBV_QPT_RC,
		.cap = { .max_send_wr = 16, .max_recv_wr = 1,
			 .max_send_sge = 1, .max_recv_sge = 1 },
		.comp_mask = IBV_QP_INIT_ATTR_PD |
			     IBV_QP_INIT_ATTR_SEND_OPS_FLAGS,
		.pd = g.pd,
		.send_ops_flags = IBV_QP_EX_WITH_RDMA_WRITE |
				  IBV_QP_EX_WITH_ATOMIC_WRITE,
	};
	struct ibv_qp_attr a = { .qp_state = IBV_QPS_INIT, .port_num = 1,
				 .qp_access_flags = access };
	uint32_t psn = lrand48() & 0xffffff, rqpn, rpsn;
	char gid[64], *line;
	union ibv_gid rgid;
	struct ibv_qp *qp;

	qp = ibv_create_qp_ex(g.ctx, &ia);
	if (!qp)
		die("ibv_create_qp_ex");
	if (ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_PKEY_INDEX |
			  IBV_QP_PORT | IBV_QP_ACCESS_FLAGS))
		die("modify_qp INIT");
	inet_ntop(AF_INET6, &g.gid, gid, sizeof(gid));
	say("qp %u %u %s", qp->qp_num, psn, gid);
	line = hear();
	if (sscanf(line, "qp %u %u %63s", &rqpn, &rpsn, gid) != 3 ||
	    inet_pton(AF_INET6, gid, &rgid) != 1) {
		fprintf(stderr, "placement_peer: bad peer line '%s'\n", line);
		exit(1);
	}
	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_RTR;
	a.path_mtu = IBV_MTU_1024;
	a.dest_qp_num = rqpn;
	a.rq_psn = rpsn;
	a.max_dest_rd_atomic = 4;
	a.min_rnr_timer = 12;
	a.ah_attr.is_global = 1;
	a.ah_attr.grh.dgid = rgid;
	a.ah_attr.grh.sgid_index = g.gidx;
	a.ah_attr.grh.hop_limit = 64;
	a.ah_attr.port_num = 1;
	if (ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU |
			  IBV_QP_DEST_QPN | IBV_QP_RQ_PSN |
			  IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER))
		die("modify_qp RTR");
	a.qp_state = IBV_QPS_RTS;
	a.timeout = 14;
	a.retry_cnt = 7;
	a.rnr_retry = 7;
	a.sq_psn = psn;
	a.max_rd_atomic = 4;
	if (ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_TIMEOUT |
			  IBV_QP_RETRY_CNT | IBV_QP_RNR_RETRY | IBV_QP_SQ_PSN |
			  IBV_QP_MAX_QP_RD_ATOMIC))
		die("modify_qp RTS");
	/*
	 * Both QPs ready before anything is sent: a request reaching a QP
	 * not yet in RTR is dropped, and rdma_rxe's retransmission of an
	 * ATOMIC WRITE carries address 0 (its go-back-N resets the WQE's
	 * address only for READ, WRITE and ATOMIC work requests).
	 */
	say("rts");
	if (strcmp(hear(), "rts")) {
		fprintf(stderr, "placement_peer: the peer's QP is not ready\n");
		exit(1);
	}
	return qp;
}

/* ---- the target ------------------------------------------------------- */

static int hexval(char c)
{
	return c <= '9' ? c - '0' : (c | 0x20) - 'a' + 10;
}

/*
 * Serve: the buffer starts as FILL; after each step the client says which
 * bytes it placed ("expect OFF HEX", or "expect -" for none) and the whole
 * buffer must be the image of what was placed so far.
 */
static int serve(bool flush)
{
	int wacc = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE |
		   IBV_ACCESS_REMOTE_READ;
	uint8_t *buf, *pbuf, image[BUF_SIZE];
	struct ibv_mr *mw, *mro, *mp;
	struct ibv_qp *qp = NULL;
	char *line;

	buf = mmap(NULL, BUF_SIZE, PROT_READ | PROT_WRITE,
		   MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	pbuf = mmap(NULL, BUF_SIZE, PROT_READ | PROT_WRITE,
		    MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (buf == MAP_FAILED || pbuf == MAP_FAILED)
		die("mmap");
	memset(buf, FILL, BUF_SIZE);
	memset(image, FILL, BUF_SIZE);
	if (flush)
		wacc |= PP_ACCESS_FLUSH_GLOBAL;
	mw = ibv_reg_mr(g.pd, buf, BUF_SIZE, wacc);
	mro = ibv_reg_mr(g.pd, buf, BUF_SIZE,
			 IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_READ);
	if (!mw || !mro)
		die("ibv_reg_mr");
	/* Persistence needs persistent memory under the MR's pages. */
	mp = flush ? ibv_reg_mr(g.pd, pbuf, BUF_SIZE, wacc |
				PP_ACCESS_FLUSH_PERSISTENT) : NULL;
	printf("target: MR %p rkey 0x%x (write%s), rkey 0x%x (read only); "
	       "an MR with IB_ACCESS_FLUSH_PERSISTENT: %s\n", buf, mw->rkey,
	       flush ? ", flush global" : "", mro->rkey,
	       mp ? "registered" : flush ? strerror(errno) : "not asked for");
	say("mr %" PRIu64 " %u %u %" PRIu64 " %u", (uint64_t)(uintptr_t)buf,
	    mw->rkey, mro->rkey, (uint64_t)(uintptr_t)pbuf, mp ? mp->rkey : 0);

	for (;;) {
		line = hear();
		if (!strcmp(line, "qp")) {
			if (qp)
				ibv_destroy_qp(qp);
			qp = qp_connect(IBV_ACCESS_REMOTE_WRITE |
					IBV_ACCESS_REMOTE_READ |
					(flush ? PP_ACCESS_FLUSH_GLOBAL |
					 PP_ACCESS_FLUSH_PERSISTENT : 0));
		} else if (!strncmp(line, "expect ", 7)) {
			char *hex = strchr(line + 7, ' ');
			unsigned int off = atoi(line + 7), i, bad;

			for (i = 0; hex && hex[1 + 2 * i] && hex[2 + 2 * i] &&
			     off + i < BUF_SIZE; i++)
				image[off + i] = hexval(hex[1 + 2 * i]) << 4 |
						 hexval(hex[2 + 2 * i]);
			for (bad = 0; bad < BUF_SIZE; bad++)
				if (buf[bad] != image[bad])
					break;
			if (bad == BUF_SIZE) {
				say("memory ok");
				check(true, "target memory: %s", line);
			} else {
				say("memory differs at %u: 0x%02x, not 0x%02x",
				    bad, buf[bad], image[bad]);
				check(false, "target memory: %s: at %u 0x%02x, not 0x%02x",
				      line, bad, buf[bad], image[bad]);
			}
		} else if (!strcmp(line, "done")) {
			break;
		}
	}
	if (qp)
		ibv_destroy_qp(qp);
	return 0;
}

/* ---- the requester ---------------------------------------------------- */

struct target {
	uint64_t addr, paddr;
	uint32_t wkey, rokey, pkey;
};

/* The next completion, within 30 s. */
static bool next_wc(struct ibv_wc *wc)
{
	time_t end = time(NULL) + 30;

	while (time(NULL) < end) {
		int n = ibv_poll_cq(g.cq, 1, wc);

		if (n < 0)
			die("ibv_poll_cq");
		if (n)
			return true;
		usleep(1000);
	}
	return false;
}

static void expect_wc(uint64_t wr_id, enum ibv_wc_status status, int opcode,
		      const char *what)
{
	struct ibv_wc wc;

	if (!next_wc(&wc)) {
		check(false, "%s: no completion in 30 s", what);
		return;
	}
	check(wc.wr_id == wr_id && wc.status == status &&
	      (status != IBV_WC_SUCCESS || (int)wc.opcode == opcode),
	      "%s: wr_id 0x%" PRIx64 " %s (%d) opcode %d, expected %s (%d) opcode %d",
	      what, wc.wr_id, ibv_wc_status_str(wc.status), wc.status,
	      wc.opcode, ibv_wc_status_str(status), status, opcode);
}

/* Tell the target which bytes were placed at @off; it answers. */
static void target_expects(unsigned int off, const void *p, size_t len,
			   const char *what)
{
	char hex[2 * BUF_SIZE + 1] = "-", *line;
	size_t i;

	for (i = 0; i < len; i++)
		sprintf(hex + 2 * i, "%02x", ((const uint8_t *)p)[i]);
	say("expect %u %s", off, hex);
	line = hear();
	check(!strcmp(line, "memory ok"), "%s: the target's memory: %s",
	      what, line);
}

static void atomic_write(struct ibv_qp *qp, uint64_t wr_id, uint32_t rkey,
			 uint64_t addr, const uint8_t value[8])
{
	struct ibv_qp_ex *qpx = ibv_qp_to_qp_ex(qp);

	ibv_wr_start(qpx);
	qpx->wr_id = wr_id;
	qpx->wr_flags = IBV_SEND_SIGNALED;
	ibv_wr_atomic_write(qpx, rkey, addr, value);
	if (ibv_wr_complete(qpx))
		die("ibv_wr_complete (ATOMIC WRITE)");
}

static void rdma_write(struct ibv_qp *qp, uint64_t wr_id, struct ibv_mr *mr,
		       uint32_t len, uint32_t rkey, uint64_t addr)
{
	struct ibv_qp_ex *qpx = ibv_qp_to_qp_ex(qp);

	ibv_wr_start(qpx);
	qpx->wr_id = wr_id;
	qpx->wr_flags = IBV_SEND_SIGNALED;
	ibv_wr_rdma_write(qpx, rkey, addr);
	ibv_wr_set_sge(qpx, mr->lkey, (uintptr_t)mr->addr, len);
	if (ibv_wr_complete(qpx))
		die("ibv_wr_complete (RDMA WRITE)");
}

/* The FLUSH fields of rdma_rxe's struct rxe_send_wr (Linux 6.2 on). */
struct rxe_flush_wr {
	__aligned_u64 remote_addr;
	__u32 length;
	__u32 rkey;
	__u8 type;
	__u8 level;
};

/*
 * rdma_rxe: the WQE an RDMA WRITE builder left in the SQ (found by its
 * wr_id in the queue the kernel shares with us), made a FLUSH before the
 * doorbell, as rdma-core 45's wr_flush() writes it.
 */
static struct rxe_send_wqe *rxe_find_wqe(uint64_t wr_id)
{
	char line[512];
	FILE *f = fopen("/proc/self/maps", "r");
	struct rxe_send_wqe *found = NULL;

	if (!f)
		die("/proc/self/maps");
	while (!found && fgets(line, sizeof(line), f)) {
		unsigned long lo, hi;

		if (!strstr(line, "/dev/infiniband/uverbs") ||
		    sscanf(line, "%lx-%lx", &lo, &hi) != 2)
			continue;
		for (unsigned long a = lo; a + sizeof(*found) <= hi; a += 8) {
			struct rxe_send_wqe *w = (void *)a;

			if (w->wr.wr_id == wr_id &&
			    w->wr.opcode == IBV_WR_RDMA_WRITE) {
				found = w;
				break;
			}
		}
	}
	fclose(f);
	return found;
}

static void post_flush(struct ibv_qp *qp, uint64_t wr_id, uint32_t rkey,
		       uint64_t addr, uint32_t len, uint8_t type,
		       uint8_t level)
{
	if (g.rxe) {
		struct ibv_qp_ex *qpx = ibv_qp_to_qp_ex(qp);
		uint64_t magic = ((uint64_t)mrand48() << 32) ^ mrand48();
		struct rxe_flush_wr *fw;
		struct rxe_send_wqe *w;

		ibv_wr_start(qpx);
		qpx->wr_id = magic;
		qpx->wr_flags = IBV_SEND_SIGNALED;
		ibv_wr_rdma_write(qpx, rkey, addr);
		ibv_wr_set_sge(qpx, 0, 0, 0);
		w = rxe_find_wqe(magic);
		if (!w) {
			ibv_wr_abort(qpx);
			fprintf(stderr, "placement_peer: rxe WQE not found\n");
			exit(1);
		}
		fw = (void *)&w->wr.wr;
		w->wr.wr_id = wr_id;
		w->wr.opcode = PP_WR_FLUSH;
		memset(fw, 0, sizeof(*fw));
		fw->remote_addr = addr;
		fw->rkey = rkey;
		fw->type = type;
		fw->level = level;
		w->iova = addr;
		w->dma.length = len;
		w->dma.resid = len;
		w->dma.num_sge = 0;
		if (ibv_wr_complete(qpx))
			die("ibv_wr_complete (FLUSH)");
	} else {
		struct vrdma_uring *r = &to_vqp(qp)->sq.ring;
		struct vrdma_send_wqe *w = vrdma_uring_entry(r, r->head);
		struct ibv_send_wr *bad;

		memset(w, 0, r->entry_size);
		w->wr_id = wr_id;
		w->opcode = VRDMA_WR_FLUSH;
		w->flags = VRDMA_SEND_SIGNALED;
		vrdma_wqe_set_flush(w, addr, rkey, len, type, level);
		r->head++;
		vrdma_uring_publish(r);
		/* The provider's doorbell: a POST_SEND without work requests. */
		if (ibv_cmd_post_send(qp, NULL, &bad))
			die("doorbell");
	}
}

static struct ibv_qp *new_qp(struct ibv_qp *old)
{
	if (old)
		ibv_destroy_qp(old);
	say("qp");
	return qp_connect(0);
}

static void run_atomic_write(const struct target *t)
{
	uint8_t v1[8] = { 0x11, 0x22, 0x33, 0x44, 0x55, 0x66, 0x77, 0x88 };
	uint8_t v2[8] = { 0xf0, 0x0d, 0xca, 0xfe, 0x00, 0x01, 0x02, 0x03 };
	uint8_t v3[8] = { 0xde, 0xad, 0xbe, 0xef, 0xde, 0xad, 0xbe, 0xef };
	struct ibv_qp *qp = new_qp(NULL);

	atomic_write(qp, 1, t->wkey, t->addr + 64, v1);
	expect_wc(1, IBV_WC_SUCCESS, IBV_WC_ATOMIC_WRITE,
		  "ATOMIC WRITE of 8 bytes at offset 64");
	target_expects(64, v1, 8, "ATOMIC WRITE at offset 64");
	atomic_write(qp, 2, t->wkey, t->addr + BUF_SIZE - 8, v2);
	expect_wc(2, IBV_WC_SUCCESS, IBV_WC_ATOMIC_WRITE,
		  "ATOMIC WRITE of the MR's last 8 bytes");
	target_expects(BUF_SIZE - 8, v2, 8, "ATOMIC WRITE at the MR's end");

	qp = new_qp(qp);
	atomic_write(qp, 3, t->rokey, t->addr + 128, v3);
	expect_wc(3, IBV_WC_REM_ACCESS_ERR, 0,
		  "ATOMIC WRITE through an rkey without REMOTE_WRITE");
	target_expects(0, NULL, 0, "refused ATOMIC WRITE");
	ibv_destroy_qp(qp);
}

/*
 * 256 bytes written at @off (work request @wr_id) and a global FLUSH of
 * them (@wr_id + 1) that must end in @status (@what); the target must hold
 * the bytes either way.
 */
static void write_and_flush(struct ibv_qp *qp, const struct target *t,
			    struct ibv_mr *lmr, uint64_t wr_id,
			    unsigned int off, uint8_t seed,
			    enum ibv_wc_status status, const char *what)
{
	uint8_t *data = lmr->addr;

	for (int i = 0; i < 256; i++)
		data[i] = (uint8_t)(i * seed + 3);
	rdma_write(qp, wr_id, lmr, 256, t->wkey, t->addr + off);
	post_flush(qp, wr_id + 1, t->wkey, t->addr + off, 256,
		   PP_FLUSH_GLOBAL, PP_FLUSH_RANGE);
	expect_wc(wr_id, IBV_WC_SUCCESS, IBV_WC_RDMA_WRITE,
		  "RDMA WRITE of 256 bytes");
	expect_wc(wr_id + 1, status, PP_WC_FLUSH, what);
	target_expects(off, data, 256, "RDMA WRITE, then the FLUSH");
}

static void run_flush(const struct target *t, struct ibv_mr *lmr)
{
	struct ibv_qp *qp = new_qp(NULL);

	write_and_flush(qp, t, lmr, 10, 512, 7, IBV_WC_SUCCESS,
			"global FLUSH of the written range");
	post_flush(qp, 12, t->wkey, 0, 0, PP_FLUSH_GLOBAL, PP_FLUSH_MR);
	expect_wc(12, IBV_WC_SUCCESS, PP_WC_FLUSH, "global FLUSH of the whole MR");
	target_expects(0, NULL, 0, "FLUSH of the MR");

	if (t->pkey) {
		post_flush(qp, 13, t->pkey, t->paddr, 64, PP_FLUSH_PERSISTENT,
			   PP_FLUSH_RANGE);
		expect_wc(13, IBV_WC_SUCCESS, PP_WC_FLUSH, "persistent FLUSH");
	} else {
		printf("# persistent FLUSH skipped: the target cannot register "
		       "an MR with IB_ACCESS_FLUSH_PERSISTENT (no persistent "
		       "memory)\n");
	}

	qp = new_qp(qp);
	post_flush(qp, 14, t->wkey, t->addr, 64, PP_FLUSH_PERSISTENT,
		   PP_FLUSH_RANGE);
	expect_wc(14, IBV_WC_REM_ACCESS_ERR, 0,
		  "persistent FLUSH of an MR with only the global right");
	target_expects(0, NULL, 0, "refused persistent FLUSH");

	qp = new_qp(qp);
	post_flush(qp, 15, t->rokey, t->addr, 64, PP_FLUSH_GLOBAL,
		   PP_FLUSH_RANGE);
	expect_wc(15, IBV_WC_REM_ACCESS_ERR, 0,
		  "global FLUSH through an rkey without the FLUSH right");
	target_expects(0, NULL, 0, "refused global FLUSH");
	ibv_destroy_qp(qp);
}

static void run_flush_dropped(const struct target *t, struct ibv_mr *lmr)
{
	struct ibv_qp *qp = new_qp(NULL);

	write_and_flush(qp, t, lmr, 20, 1024, 5, IBV_WC_RETRY_EXC_ERR,
			"global FLUSH the target drops: retries spent");
	ibv_destroy_qp(qp);
}

static int request(const char *test)
{
	struct ibv_mr *lmr;
	struct target t;
	void *lbuf;

	if (sscanf(hear(), "mr %" SCNu64 " %u %u %" SCNu64 " %u", &t.addr,
		   &t.wkey, &t.rokey, &t.paddr, &t.pkey) != 5) {
		fprintf(stderr, "placement_peer: bad MR line\n");
		return 1;
	}
	lbuf = calloc(1, BUF_SIZE);
	lmr = ibv_reg_mr(g.pd, lbuf, BUF_SIZE, IBV_ACCESS_LOCAL_WRITE);
	if (!lmr)
		die("ibv_reg_mr");
	if (!strcmp(test, "flush"))
		run_flush(&t, lmr);
	else if (!strcmp(test, "flush_dropped"))
		run_flush_dropped(&t, lmr);
	else
		run_atomic_write(&t);
	say("done");
	return 0;
}

static uint64_t caps(void)
{
	struct ibv_device_attr_ex a;

	if (ibv_query_device_ex(g.ctx, NULL, &a))
		die("ibv_query_device_ex");
	return a.device_cap_flags_ex;
}

static void usage(void)
{
	fprintf(stderr, "usage: placement_peer -d DEV -g GIDX -p PORT "
		"-t atomic_write|flush|flush_dropped [HOST]\n"
		"       placement_peer -d DEV --caps\n");
	exit(2);
}

int main(int argc, char **argv)
{
	const char *dev = NULL, *port = "18515", *test = NULL, *host = NULL;
	struct ibv_device **list;
	bool want_caps = false;
	int i, n;

	for (i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--caps"))
			want_caps = true;
		else if (i + 1 < argc && !strcmp(argv[i], "-d"))
			dev = argv[++i];
		else if (i + 1 < argc && !strcmp(argv[i], "-g"))
			g.gidx = atoi(argv[++i]);
		else if (i + 1 < argc && !strcmp(argv[i], "-p"))
			port = argv[++i];
		else if (i + 1 < argc && !strcmp(argv[i], "-t"))
			test = argv[++i];
		else if (argv[i][0] != '-' && !host)
			host = argv[i];
		else
			usage();
	}
	if (!dev || (!want_caps && (!test || (strcmp(test, "flush") &&
					     strcmp(test, "flush_dropped") &&
					     strcmp(test, "atomic_write")))))
		usage();
	list = ibv_get_device_list(&n);
	for (i = 0; list && i < n; i++)
		if (!strcmp(ibv_get_device_name(list[i]), dev))
			g.ctx = ibv_open_device(list[i]);
	if (!g.ctx)
		die(dev);
	if (want_caps) {
		uint64_t c = caps();

		printf("atomic_write %d flush_global %d flush_persistent %d\n",
		       !!(c & PP_DEVICE_ATOMIC_WRITE),
		       !!(c & PP_DEVICE_FLUSH_GLOBAL),
		       !!(c & PP_DEVICE_FLUSH_PERSISTENT));
		return 0;
	}
	/* Which provider's send queue layout a FLUSH is written in. */
	g.rxe = !strncmp(dev, "rxe", 3);
	srand48(getpid() ^ time(NULL));
	g.pd = ibv_alloc_pd(g.ctx);
	g.cq = ibv_create_cq(g.ctx, 32, NULL, NULL, 0);
	if (!g.pd || !g.cq || ibv_query_gid(g.ctx, 1, g.gidx, &g.gid))
		die("pd/cq/gid");
	tcp_connect(host, port);
	if (host)
		request(test);
	else
		serve(strcmp(test, "atomic_write"));
	printf("placement_peer %s %s: %d checks passed, %d failed\n",
	       host ? "requester" : "target", test, g.passed, g.failed);
	return g.failed || !g.passed;
}
