// SPDX-License-Identifier: GPL-2.0
/*
 * Live traffic for faults.sh: an RC pair between DEV_A and DEV_B moving
 * data (SEND, RDMA WRITE, RDMA READ), every byte checked, until SIGTERM.
 * Exits 0 if it stayed right throughout, 1 if a transfer failed (which a
 * fault may legitimately cause).
 *
 *   fuzz_live DEV_A DEV_B
 */
#include "fuzz_lib.h"

int main(int argc, char **argv)
{
	setvbuf(stdout, NULL, _IOLBF, 0);
	if (argc != 3) {
		fprintf(stderr, "usage: %s DEV_A DEV_B\n", argv[0]);
		return 2;
	}
	return fz_live_run(argv[1], argv[2]);
}
