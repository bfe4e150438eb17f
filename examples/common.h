/* SPDX-License-Identifier: (GPL-2.0 OR Linux-OpenIB) */
/*
 * What every example needs before it can move a byte: a device, a PD, a
 * CQ and two RC QPs connected to each other.  Both QPs live in this one
 * process on one device: the device sends the packets to its own IP
 * address (loopback), so the whole exchange can be read in one file.  Two
 * machines would do exactly the same, exchanging QPN, PSN and GID (and the
 * buffer's address and rkey) over a socket first, as ibv_rc_pingpong does.
 *
 * The words are those of the lecture notes: a WR (work request) posted
 * with ibv_post_send()/ibv_post_recv() becomes a WQE in the SQ or RQ; the
 * device reports each finished WQE as a CQE in the CQ, which the program
 * polls.  Memory must be registered (an MR, in a PD) before the device may
 * touch it: lkey opens it to our own WQEs, rkey to the peer's requests.
 */
#ifndef EXAMPLES_COMMON_H
#define EXAMPLES_COMMON_H

#include <arpa/inet.h>
#include <infiniband/verbs.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define DIE(...) do { fprintf(stderr, __VA_ARGS__); fputc('\n', stderr); \
		      exit(1); } while (0)

struct ex {
	struct ibv_context *ctx;
	struct ibv_pd *pd;	/* protection domain: MRs and QPs meet here */
	struct ibv_cq *cq;	/* one CQ for every CQE of both QPs */
	struct ibv_qp *a, *b;	/* a sends, b receives (or is the target) */
	int gid_index;		/* a RoCEv2 GID of an IPv4 address */
};

/* Open the device called @name (argv[1]) or the first one. */
static struct ibv_context *ex_open(const char *name)
{
	struct ibv_device **list = ibv_get_device_list(NULL);
	struct ibv_context *ctx = NULL;
	int i;

	if (!list)
		DIE("no RDMA devices");
	for (i = 0; list[i]; i++)
		if (!name || !strcmp(ibv_get_device_name(list[i]), name))
			break;
	if (!list[i])
		DIE("no device %s", name ? name : "");
	ctx = ibv_open_device(list[i]);
	ibv_free_device_list(list);
	if (!ctx)
		DIE("ibv_open_device failed");
	return ctx;
}

/* The GID of an IPv4 address (::ffff:a.b.c.d), RoCE version 2. */
static int ex_find_gid(struct ibv_context *ctx)
{
	struct ibv_port_attr port;
	int i;

	if (ibv_query_port(ctx, 1, &port))
		DIE("ibv_query_port failed");
	for (i = 0; i < port.gid_tbl_len; i++) {
		static const uint8_t v4[12] = { [10] = 0xff, [11] = 0xff };
		struct ibv_gid_entry e;

		if (ibv_query_gid_ex(ctx, 1, i, &e, 0))
			continue;
		if (e.gid_type == IBV_GID_TYPE_ROCE_V2 &&
		    !memcmp(e.gid.raw, v4, 12))
			return i;
	}
	DIE("no RoCEv2 IPv4 GID: give the netdev an IPv4 address");
}

static struct ibv_qp *ex_create_qp(struct ex *ex)
{
	struct ibv_qp_init_attr init = {
		.send_cq = ex->cq,
		.recv_cq = ex->cq,
		.cap = { .max_send_wr = 4, .max_recv_wr = 4,
			 .max_send_sge = 3, .max_recv_sge = 3 },
		.qp_type = IBV_QPT_RC,
	};
	struct ibv_qp *qp = ibv_create_qp(ex->pd, &init);

	if (!qp)
		DIE("ibv_create_qp failed");
	return qp;
}

/*
 * RESET -> INIT -> RTR -> RTS: the QP learns its peer (QPN, GID, the PSN
 * the peer starts at) and the rules (path MTU, retries, what the peer may
 * do to our memory: remote write, read, atomic).
 */
static void ex_connect(struct ex *ex, struct ibv_qp *qp, struct ibv_qp *peer,
		       uint32_t my_psn, uint32_t peer_psn)
{
	struct ibv_qp_attr attr = {
		.qp_state = IBV_QPS_INIT,
		.port_num = 1,
		.qp_access_flags = IBV_ACCESS_REMOTE_WRITE |
				   IBV_ACCESS_REMOTE_READ |
				   IBV_ACCESS_REMOTE_ATOMIC,
	};

	if (ibv_modify_qp(qp, &attr, IBV_QP_STATE | IBV_QP_PKEY_INDEX |
			  IBV_QP_PORT | IBV_QP_ACCESS_FLAGS))
		DIE("modify_qp INIT failed");

	memset(&attr, 0, sizeof(attr));
	attr.qp_state = IBV_QPS_RTR;
	attr.path_mtu = IBV_MTU_1024;
	attr.dest_qp_num = peer->qp_num;
	attr.rq_psn = peer_psn;		/* the first PSN we expect */
	attr.max_dest_rd_atomic = 1;	/* READs/atomics we answer at once */
	attr.min_rnr_timer = 12;
	attr.ah_attr.is_global = 1;	/* RoCE: addressed by GID */
	attr.ah_attr.port_num = 1;
	attr.ah_attr.grh.hop_limit = 64;
	attr.ah_attr.grh.sgid_index = ex->gid_index;
	if (ibv_query_gid(ex->ctx, 1, ex->gid_index, &attr.ah_attr.grh.dgid))
		DIE("ibv_query_gid failed");
	if (ibv_modify_qp(qp, &attr, IBV_QP_STATE | IBV_QP_AV |
			  IBV_QP_PATH_MTU | IBV_QP_DEST_QPN | IBV_QP_RQ_PSN |
			  IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER))
		DIE("modify_qp RTR failed");

	memset(&attr, 0, sizeof(attr));
	attr.qp_state = IBV_QPS_RTS;
	attr.sq_psn = my_psn;		/* the PSN of our first packet */
	attr.timeout = 14;		/* 4.096 us * 2^14 = 67 ms per try */
	attr.retry_cnt = 7;
	attr.rnr_retry = 7;
	attr.max_rd_atomic = 1;		/* READs/atomics we have in flight */
	if (ibv_modify_qp(qp, &attr, IBV_QP_STATE | IBV_QP_SQ_PSN |
			  IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT |
			  IBV_QP_RNR_RETRY | IBV_QP_MAX_QP_RD_ATOMIC))
		DIE("modify_qp RTS failed");
}

static void ex_setup(struct ex *ex, const char *dev)
{
	ex->ctx = ex_open(dev);
	ex->gid_index = ex_find_gid(ex->ctx);
	ex->pd = ibv_alloc_pd(ex->ctx);
	ex->cq = ibv_create_cq(ex->ctx, 16, NULL, NULL, 0);
	if (!ex->pd || !ex->cq)
		DIE("ibv_alloc_pd/ibv_create_cq failed");
	ex->a = ex_create_qp(ex);
	ex->b = ex_create_qp(ex);
	ex_connect(ex, ex->a, ex->b, 100, 200);
	ex_connect(ex, ex->b, ex->a, 200, 100);
	printf("device %s, QP a = %u, QP b = %u, GID index %d\n",
	       ibv_get_device_name(ex->ctx->device), ex->a->qp_num,
	       ex->b->qp_num, ex->gid_index);
}

/* Register @len bytes at @buf with @access rights: an MR with its keys. */
static struct ibv_mr *ex_reg(struct ex *ex, void *buf, size_t len, int access)
{
	struct ibv_mr *mr = ibv_reg_mr(ex->pd, buf, len, access);

	if (!mr)
		DIE("ibv_reg_mr failed");
	printf("MR at %p, %zu bytes: lkey 0x%x rkey 0x%x\n", buf, len,
	       mr->lkey, mr->rkey);
	return mr;
}

/* Poll the CQ until one CQE arrives (busy polling: no system call). */
static struct ibv_wc ex_poll(struct ex *ex)
{
	struct ibv_wc wc;
	long spins = 0;
	int n;

	while ((n = ibv_poll_cq(ex->cq, 1, &wc)) == 0)
		if (++spins > 2000000000L)
			DIE("no completion");
	if (n < 0)
		DIE("ibv_poll_cq failed");
	printf("CQE: wr_id %llu status %s opcode %d byte_len %u qp %u\n",
	       (unsigned long long)wc.wr_id, ibv_wc_status_str(wc.status),
	       wc.opcode, wc.byte_len, wc.qp_num);
	if (wc.status != IBV_WC_SUCCESS)
		DIE("the work request failed");
	return wc;
}

static void ex_teardown(struct ex *ex)
{
	ibv_destroy_qp(ex->a);
	ibv_destroy_qp(ex->b);
	ibv_destroy_cq(ex->cq);
	ibv_dealloc_pd(ex->pd);
	ibv_close_device(ex->ctx);
}

#endif /* EXAMPLES_COMMON_H */
