// SPDX-License-Identifier: (GPL-2.0 OR Linux-OpenIB)
/*
 * cas: an atomic compare-and-swap on the peer's memory.
 *
 * "If the 8 bytes at remote_addr equal compare_add, replace them with
 * swap; either way, tell me what they were."  The responder executes it
 * on its memory as one 64-bit cmpxchg (vrdma_mr_atomic() in mr.c) and
 * answers with an ATOMIC ACKNOWLEDGE carrying the original value, which
 * the device writes into the requester's 8-byte SGE.  The address must be
 * 8-byte aligned and the MR must grant IBV_ACCESS_REMOTE_ATOMIC.  This is
 * how a lock is taken across machines: CAS 0 -> my id.
 *
 *   ./cas [device]
 */
#include <stdint.h>

#include "common.h"

static uint64_t cas(struct ex *ex, struct ibv_mr *mr_word, uint64_t *word,
		    struct ibv_mr *mr_old, uint64_t *old, uint64_t compare,
		    uint64_t swap)
{
	struct ibv_sge sge = { (uintptr_t)old, 8, mr_old->lkey };
	struct ibv_send_wr swr = { 0 }, *bad_swr;

	swr.wr_id = 9;
	swr.opcode = IBV_WR_ATOMIC_CMP_AND_SWP;
	swr.sg_list = &sge;
	swr.num_sge = 1;
	swr.send_flags = IBV_SEND_SIGNALED;
	swr.wr.atomic.remote_addr = (uintptr_t)word;
	swr.wr.atomic.rkey = mr_word->rkey;
	swr.wr.atomic.compare_add = compare;
	swr.wr.atomic.swap = swap;
	if (ibv_post_send(ex->a, &swr, &bad_swr))
		DIE("ibv_post_send failed");
	if (ex_poll(ex).opcode != IBV_WC_COMP_SWAP)
		DIE("wrong CQE");
	printf("CAS(compare %llu, swap %llu): was %llu, now %llu\n",
	       (unsigned long long)compare, (unsigned long long)swap,
	       (unsigned long long)*old, (unsigned long long)*word);
	return *old;
}

int main(int argc, char **argv)
{
	static uint64_t word __attribute__((aligned(8))) = 0;
	static uint64_t old;
	struct ex ex;
	struct ibv_mr *mr_word, *mr_old;

	ex_setup(&ex, argc > 1 ? argv[1] : NULL);
	mr_word = ex_reg(&ex, &word, 8, IBV_ACCESS_LOCAL_WRITE |
			 IBV_ACCESS_REMOTE_ATOMIC);
	mr_old = ex_reg(&ex, &old, 8, IBV_ACCESS_LOCAL_WRITE);

	/* The lock is free (0): take it. */
	if (cas(&ex, mr_word, &word, mr_old, &old, 0, 42) != 0 || word != 42)
		DIE("the first CAS should have swapped");
	/* Taken (42): a second taker fails and learns who holds it. */
	if (cas(&ex, mr_word, &word, mr_old, &old, 0, 7) != 42 || word != 42)
		DIE("the second CAS should have failed");

	ibv_dereg_mr(mr_word);
	ibv_dereg_mr(mr_old);
	ex_teardown(&ex);
	printf("cas: ok\n");
	return 0;
}
