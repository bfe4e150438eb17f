// SPDX-License-Identifier: (GPL-2.0 OR Linux-OpenIB)
/*
 * send_sgl: one SEND whose data is gathered from three places.
 *
 * The lecture notes' picture: an SGL (scatter/gather list) of 3 SGEs of
 * N1, N2 and N3 bytes, scattered in memory; the device gathers them and
 * the wire carries N1 + N2 + N3 contiguous bytes.  The receiver's WQE has
 * an SGL too: here two SGEs, so the same bytes are scattered again.
 *
 *   ./send_sgl [device]
 *
 * Watch it: scripts/trace-send shows the same steps for ibv_rc_pingpong;
 * with the tracepoints on (echo 1 > /sys/kernel/tracing/events/vrdma/enable)
 * this program's vrdma_key_check events show one lkey check per SGE.
 */
#include "common.h"

int main(int argc, char **argv)
{
	struct ex ex;
	/* Three separate buffers (N1 = 5, N2 = 7, N3 = 4 bytes). */
	char one[5] = "Hello", two[7] = ", RDMA ", three[4] = "SGL!";
	char in[16] = { 0 };	/* the receiver's buffer, 16 bytes */
	struct ibv_mr *mr_one, *mr_two, *mr_three, *mr_in;
	struct ibv_recv_wr rwr = { 0 }, *bad_rwr;
	struct ibv_send_wr swr = { 0 }, *bad_swr;
	struct ibv_sge rsge[2], ssge[3];
	struct ibv_wc wc;

	ex_setup(&ex, argc > 1 ? argv[1] : NULL);

	/*
	 * Every buffer the device touches is registered.  Sending only reads
	 * ours: no rights beyond local read are needed.  Receiving writes:
	 * IBV_ACCESS_LOCAL_WRITE.
	 */
	mr_one = ex_reg(&ex, one, sizeof(one), 0);
	mr_two = ex_reg(&ex, two, sizeof(two), 0);
	mr_three = ex_reg(&ex, three, sizeof(three), 0);
	mr_in = ex_reg(&ex, in, sizeof(in), IBV_ACCESS_LOCAL_WRITE);

	/*
	 * Step 1 of the nine: the receiver posts a WQE to its RQ first.  Its
	 * SGL: 10 bytes at in[0], then the rest at in[10].
	 */
	rsge[0] = (struct ibv_sge){ (uintptr_t)in, 10, mr_in->lkey };
	rsge[1] = (struct ibv_sge){ (uintptr_t)(in + 10), 6, mr_in->lkey };
	rwr.wr_id = 1;
	rwr.sg_list = rsge;
	rwr.num_sge = 2;
	if (ibv_post_recv(ex.b, &rwr, &bad_rwr))
		DIE("ibv_post_recv failed");

	/*
	 * Step 2: the sender posts a SEND WR of 3 SGEs.  Each SGE names its
	 * buffer by address, length and the lkey of the MR it lies in: the
	 * device checks each one (vrdma: vrdma_sgl_check() in mr.c) before it
	 * reads a byte.
	 */
	ssge[0] = (struct ibv_sge){ (uintptr_t)one, 5, mr_one->lkey };
	ssge[1] = (struct ibv_sge){ (uintptr_t)two, 7, mr_two->lkey };
	ssge[2] = (struct ibv_sge){ (uintptr_t)three, 4, mr_three->lkey };
	swr.wr_id = 2;
	swr.opcode = IBV_WR_SEND;
	swr.sg_list = ssge;
	swr.num_sge = 3;
	swr.send_flags = IBV_SEND_SIGNALED;	/* we want a CQE for it */
	if (ibv_post_send(ex.a, &swr, &bad_swr))
		DIE("ibv_post_send failed");

	/*
	 * Steps 3-9 happen in the device; we see their end: two CQEs, the
	 * receiver's (RECV, byte_len 16) and the sender's (SEND), in any
	 * order.
	 */
	for (int i = 0; i < 2; i++) {
		wc = ex_poll(&ex);
		if (wc.wr_id == 1 && (wc.opcode != IBV_WC_RECV ||
				      wc.byte_len != 16))
			DIE("wrong receive CQE");
	}
	printf("received: \"%.16s\"\n", in);
	if (memcmp(in, "Hello, RDMA SGL!", 16))
		DIE("wrong data");

	ibv_dereg_mr(mr_one);
	ibv_dereg_mr(mr_two);
	ibv_dereg_mr(mr_three);
	ibv_dereg_mr(mr_in);
	ex_teardown(&ex);
	printf("send_sgl: ok\n");
	return 0;
}
