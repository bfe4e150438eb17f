// SPDX-License-Identifier: GPL-2.0
/*
 * A UD multicast sender that waits until its datagrams are on the wire, for
 * interop.sh: it sends what mckey's sender sends to an rdma_cm multicast
 * group (SEND with immediate to QPN 0xffffff under rdma_cm's UDP Q_Key),
 * but every send is signaled and the program exits only once each one has
 * completed.
 *
 *   mcast_send -d DEV -g GIDX -m GROUP [-C COUNT] [-S SIZE]
 *
 * Why not mckey itself: mckey's sender posts its sends unsignaled, then at
 * once leaves the group and destroys its QP.  A device whose requester runs
 * later (rdma_rxe queues the work to a task) may still hold some of them
 * when the QP goes, and discards them: on a loaded host rdma_rxe put 3 of
 * mckey's 20 datagrams on the wire, and the receiver rightly waited for the
 * other 17.  The datagrams that do go out are what a receiver is tested
 * with, so this sender makes sure all of them go out.
 *
 * GROUP is an IPv4 multicast address; the GID is its IPv4-mapped form, as
 * rdma_cm's RoCE v2 join uses.  The receiver must have joined the group
 * (mckey does, through rdma_cm, which also joins it at the IP level).
 * Exit 0 only if COUNT sends completed with IBV_WC_SUCCESS.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <infiniband/verbs.h>

/* rdma_cm's Q_Key of RDMA_PS_UDP (rdma/rdma_cma.h's RDMA_UDP_QKEY). */
#define MCAST_QKEY	0x01234567
#define MCAST_QPN	0xffffff
/* How long the completions may take in all, loaded emulated host included. */
#define WAIT_SECONDS	120

static void die(const char *what)
{
	fprintf(stderr, "mcast_send: %s: %s\n", what, strerror(errno));
	exit(1);
}

static void usage(void)
{
	fprintf(stderr,
		"usage: mcast_send -d DEV -g GIDX -m GROUP [-C COUNT] [-S SIZE]\n");
	exit(2);
}

static struct ibv_context *open_device(const char *name)
{
	struct ibv_device **list = ibv_get_device_list(NULL);
	struct ibv_context *ctx = NULL;

	if (!list)
		die("ibv_get_device_list");
	for (int i = 0; list[i]; i++)
		if (!strcmp(ibv_get_device_name(list[i]), name))
			ctx = ibv_open_device(list[i]);
	ibv_free_device_list(list);
	if (!ctx) {
		fprintf(stderr, "mcast_send: no device %s\n", name);
		exit(1);
	}
	return ctx;
}

/* A UD QP in RTS, sending under the group's Q_Key. */
static struct ibv_qp *ud_qp(struct ibv_pd *pd, struct ibv_cq *cq, int depth)
{
	struct ibv_qp_init_attr ia = {
		.send_cq = cq, .recv_cq = cq, .qp_type = IBV_QPT_UD,
		.cap = { .max_send_wr = depth, .max_recv_wr = 1,
			 .max_send_sge = 1, .max_recv_sge = 1 },
	};
	struct ibv_qp_attr a = { .qp_state = IBV_QPS_INIT, .port_num = 1,
				 .qkey = MCAST_QKEY };
	struct ibv_qp *qp = ibv_create_qp(pd, &ia);

	if (!qp)
		die("ibv_create_qp");
	if (ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_PKEY_INDEX |
			  IBV_QP_PORT | IBV_QP_QKEY))
		die("modify to INIT");
	a.qp_state = IBV_QPS_RTR;
	if (ibv_modify_qp(qp, &a, IBV_QP_STATE))
		die("modify to RTR");
	a.qp_state = IBV_QPS_RTS;
	a.sq_psn = lrand48() & 0xffffff;
	if (ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_SQ_PSN))
		die("modify to RTS");
	return qp;
}

int main(int argc, char **argv)
{
	const char *dev = NULL, *group = NULL;
	int gidx = -1, count = 10, size = 100, done = 0, failed = 0, opt;
	struct ibv_ah_attr aa = { .is_global = 1, .port_num = 1 };
	struct in_addr mc;
	struct ibv_context *ctx;
	struct ibv_pd *pd;
	struct ibv_cq *cq;
	struct ibv_qp *qp;
	struct ibv_mr *mr;
	struct ibv_ah *ah;
	struct ibv_wc wc;
	time_t deadline;
	char *buf;
	int n;

	while ((opt = getopt(argc, argv, "d:g:m:C:S:")) != -1) {
		switch (opt) {
		case 'd': dev = optarg; break;
		case 'g': gidx = atoi(optarg); break;
		case 'm': group = optarg; break;
		case 'C': count = atoi(optarg); break;
		case 'S': size = atoi(optarg); break;
		default: usage();
		}
	}
	if (!dev || gidx < 0 || !group || count < 1 || size < 1)
		usage();
	if (inet_pton(AF_INET, group, &mc) != 1 || !IN_MULTICAST(ntohl(mc.s_addr)))
		usage();
	srand48(getpid() ^ time(NULL));

	ctx = open_device(dev);
	pd = ibv_alloc_pd(ctx);
	if (!pd)
		die("ibv_alloc_pd");
	cq = ibv_create_cq(ctx, count, NULL, NULL, 0);
	if (!cq)
		die("ibv_create_cq");
	qp = ud_qp(pd, cq, count);
	buf = calloc(count, size);
	if (!buf)
		die("calloc");
	mr = ibv_reg_mr(pd, buf, (size_t)count * size, 0);
	if (!mr)
		die("ibv_reg_mr");

	/* ::ffff:GROUP, the group's GID; TTL 1 keeps it on the link. */
	aa.grh.dgid.raw[10] = 0xff;
	aa.grh.dgid.raw[11] = 0xff;
	memcpy(&aa.grh.dgid.raw[12], &mc.s_addr, 4);
	aa.grh.sgid_index = gidx;
	aa.grh.hop_limit = 1;
	ah = ibv_create_ah(pd, &aa);
	if (!ah)
		die("ibv_create_ah");

	printf("mcast_send: %d datagrams of %d bytes to %s from QPN 0x%x\n",
	       count, size, group, qp->qp_num);
	/* Back to back, as mckey sends them: the receiver gets a burst. */
	for (int i = 0; i < count; i++) {
		struct ibv_sge sge = { .addr = (uintptr_t)buf + (size_t)i * size,
				       .length = size, .lkey = mr->lkey };
		struct ibv_send_wr wr = {
			.wr_id = i, .sg_list = &sge, .num_sge = 1,
			.opcode = IBV_WR_SEND_WITH_IMM,
			.send_flags = IBV_SEND_SIGNALED,
			.imm_data = htonl(qp->qp_num),
			.wr.ud = { .ah = ah, .remote_qpn = MCAST_QPN,
				   .remote_qkey = MCAST_QKEY },
		}, *bad;

		memset(buf + (size_t)i * size, 'a' + i % 26, size);
		if (ibv_post_send(qp, &wr, &bad))
			die("ibv_post_send");
	}
	deadline = time(NULL) + WAIT_SECONDS;
	while (done + failed < count) {
		n = ibv_poll_cq(cq, 1, &wc);
		if (n < 0)
			die("ibv_poll_cq");
		if (!n) {
			if (time(NULL) > deadline) {
				fprintf(stderr,
					"mcast_send: %d sends never completed\n",
					count - done - failed);
				return 1;
			}
			usleep(1000);
		} else if (wc.status == IBV_WC_SUCCESS) {
			done++;
		} else {
			fprintf(stderr, "mcast_send: send %llu: %s\n",
				(unsigned long long)wc.wr_id,
				ibv_wc_status_str(wc.status));
			failed++;
		}
	}
	printf("mcast_send: %d sent, %d failed\n", done, failed);

	ibv_destroy_ah(ah);
	ibv_destroy_qp(qp);
	ibv_dereg_mr(mr);
	ibv_destroy_cq(cq);
	ibv_dealloc_pd(pd);
	ibv_close_device(ctx);
	free(buf);
	return failed || done != count;
}
