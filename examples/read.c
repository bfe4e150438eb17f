// SPDX-License-Identifier: (GPL-2.0 OR Linux-OpenIB)
/*
 * read: an RDMA READ of 3000 bytes from the peer's memory.
 *
 * The requester sends one RDMA READ REQUEST (RETH: address, rkey, length);
 * the responder checks the rkey for IBV_ACCESS_REMOTE_READ and answers
 * with READ RESPONSE packets, path-MTU sized (FIRST, MIDDLE, LAST: here
 * 1024 + 1024 + 952 bytes), that the requester scatters into its own SGL.
 * The request reserves one PSN per response packet.  Only the reader gets a
 * CQE: the peer's application never knows.
 *
 *   ./read [device]
 */
#include "common.h"

#define LEN 3000

int main(int argc, char **argv)
{
	static char remote[LEN], local[LEN];
	struct ex ex;
	struct ibv_mr *mr_remote, *mr_local;
	struct ibv_send_wr swr = { 0 }, *bad_swr;
	struct ibv_sge sge;
	struct ibv_wc wc;

	for (int i = 0; i < LEN; i++)
		remote[i] = 'a' + i % 26;
	ex_setup(&ex, argc > 1 ? argv[1] : NULL);

	/* The peer lets us read; we let the device write our buffer. */
	mr_remote = ex_reg(&ex, remote, LEN, IBV_ACCESS_REMOTE_READ);
	mr_local = ex_reg(&ex, local, LEN, IBV_ACCESS_LOCAL_WRITE);

	sge = (struct ibv_sge){ (uintptr_t)local, LEN, mr_local->lkey };
	swr.wr_id = 7;
	swr.opcode = IBV_WR_RDMA_READ;
	swr.sg_list = &sge;
	swr.num_sge = 1;
	swr.send_flags = IBV_SEND_SIGNALED;
	swr.wr.rdma.remote_addr = (uintptr_t)remote;
	swr.wr.rdma.rkey = mr_remote->rkey;
	if (ibv_post_send(ex.a, &swr, &bad_swr))
		DIE("ibv_post_send failed");

	wc = ex_poll(&ex);
	if (wc.wr_id != 7 || wc.opcode != IBV_WC_RDMA_READ)
		DIE("wrong CQE");
	if (memcmp(local, remote, LEN))
		DIE("wrong data");
	printf("read %d bytes: \"%.26s...\"\n", LEN, local);

	ibv_dereg_mr(mr_remote);
	ibv_dereg_mr(mr_local);
	ex_teardown(&ex);
	printf("read: ok\n");
	return 0;
}
