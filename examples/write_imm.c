// SPDX-License-Identifier: (GPL-2.0 OR Linux-OpenIB)
/*
 * write_imm: an RDMA WRITE with immediate data.
 *
 * An RDMA WRITE puts our bytes straight into the peer's memory, at an
 * address the peer told us, opened by the rkey of the peer's MR: the
 * peer's CPU and its RQ take no part.  "With immediate" adds 4 bytes that
 * do consume one of the peer's receive WQEs and so wake it with a CQE
 * (IBV_WC_RECV_RDMA_WITH_IMM) saying "your memory has new data".
 *
 *   ./write_imm [device]
 *
 * On the wire: RDMA WRITE ONLY WITH IMMEDIATE, with a RETH (address,
 * rkey, length) and an ImmDt; the responder checks the rkey
 * (vrdma_rkey_get() in mr.c: the MR must be in the QP's PD and grant
 * IBV_ACCESS_REMOTE_WRITE, the range must lie inside it).
 */
#include "common.h"

int main(int argc, char **argv)
{
	struct ex ex;
	char src[32] = "written by the peer's device";
	char dst[64];
	struct ibv_mr *mr_src, *mr_dst;
	struct ibv_recv_wr rwr = { 0 }, *bad_rwr;
	struct ibv_send_wr swr = { 0 }, *bad_swr;
	struct ibv_sge sge;
	struct ibv_wc wc;
	int got_recv = 0;

	memset(dst, '.', sizeof(dst));
	ex_setup(&ex, argc > 1 ? argv[1] : NULL);

	/* The target opens its buffer to remote writes: that is the rkey. */
	mr_src = ex_reg(&ex, src, sizeof(src), 0);
	mr_dst = ex_reg(&ex, dst, sizeof(dst),
			IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE);

	/* The immediate data needs a receive WQE; it needs no buffer. */
	rwr.wr_id = 1;
	if (ibv_post_recv(ex.b, &rwr, &bad_rwr))
		DIE("ibv_post_recv failed");

	/*
	 * The writer needs the target's address and rkey (two machines would
	 * have sent them over a socket).  We write 28 bytes at dst + 8.
	 */
	sge = (struct ibv_sge){ (uintptr_t)src, 28, mr_src->lkey };
	swr.wr_id = 2;
	swr.opcode = IBV_WR_RDMA_WRITE_WITH_IMM;
	swr.imm_data = htonl(0x1234);
	swr.sg_list = &sge;
	swr.num_sge = 1;
	swr.send_flags = IBV_SEND_SIGNALED;
	swr.wr.rdma.remote_addr = (uintptr_t)(dst + 8);
	swr.wr.rdma.rkey = mr_dst->rkey;
	if (ibv_post_send(ex.a, &swr, &bad_swr))
		DIE("ibv_post_send failed");

	for (int i = 0; i < 2; i++) {
		wc = ex_poll(&ex);
		if (wc.wr_id != 1)
			continue;
		/* byte_len: how much the WRITE wrote; the imm, in order. */
		if (wc.opcode != IBV_WC_RECV_RDMA_WITH_IMM ||
		    !(wc.wc_flags & IBV_WC_WITH_IMM) ||
		    ntohl(wc.imm_data) != 0x1234 || wc.byte_len != 28)
			DIE("wrong CQE for the immediate");
		got_recv = 1;
	}
	printf("target memory: \"%.64s\"\n", dst);
	if (!got_recv || memcmp(dst, "........", 8) ||
	    memcmp(dst + 8, src, 28) || memcmp(dst + 36, "........", 8))
		DIE("wrong data");

	ibv_dereg_mr(mr_src);
	ibv_dereg_mr(mr_dst);
	ex_teardown(&ex);
	printf("write_imm: ok\n");
	return 0;
}
