// SPDX-License-Identifier: GPL-2.0
/*
 * Two MPI ranks move buffers both ways and check every byte: rank 0 sends
 * each size to rank 1, then rank 1 sends it back with another pattern.
 * The sizes go from a byte (UCX's eager protocol) to 16 MiB (rendezvous:
 * RDMA READs or WRITEs straight between the registered buffers); a last
 * MPI_Allreduce of the errors makes both ranks agree on the verdict.
 *
 *   mpirun -np 2 [--mca pml ucx ...] mpi_xfer [MiB]
 *
 * Exits 0 if every byte arrived as sent, 1 on a mismatch, 2 on bad usage.
 * ucx_mpi.sh runs it over vrdma.
 */
#include <mpi.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

/* A byte of a pattern that repeats only after 2^32 bytes. */
static uint8_t pattern(size_t i, unsigned int seed)
{
	uint32_t x = (uint32_t)i * 2654435761u + seed * 40503u;

	return (uint8_t)(x >> 24 ^ x >> 11 ^ seed);
}

/* Receive @len bytes from @src and count the ones that differ. */
static long recv_check(uint8_t *buf, size_t len, int src, unsigned int seed)
{
	MPI_Status st;
	long bad = 0;
	int count;
	size_t i;

	for (i = 0; i < len; i++)
		buf[i] = ~pattern(i, seed);
	MPI_Recv(buf, (int)len, MPI_BYTE, src, (int)seed, MPI_COMM_WORLD, &st);
	MPI_Get_count(&st, MPI_BYTE, &count);
	if ((size_t)count != len) {
		fprintf(stderr, "seed %u: received %d bytes of %zu\n", seed,
			count, len);
		return 1;
	}
	for (i = 0; i < len; i++) {
		if (buf[i] == pattern(i, seed))
			continue;
		if (!bad)
			fprintf(stderr,
				"seed %u: %zu bytes, first bad byte at %zu: %#x, expected %#x\n",
				seed, len, i, buf[i], pattern(i, seed));
		bad++;
	}
	return bad;
}

static void send_pattern(uint8_t *buf, size_t len, int dst, unsigned int seed)
{
	size_t i;

	for (i = 0; i < len; i++)
		buf[i] = pattern(i, seed);
	MPI_Send(buf, (int)len, MPI_BYTE, dst, (int)seed, MPI_COMM_WORLD);
}

int main(int argc, char **argv)
{
	size_t sizes[] = { 1, 4097, 65536 + 13, 0 };
	long bad = 0, all_bad = 0;
	int rank, nranks, n;
	unsigned int seed;
	double t0, t;
	uint8_t *buf;
	size_t max;

	MPI_Init(&argc, &argv);
	MPI_Comm_rank(MPI_COMM_WORLD, &rank);
	MPI_Comm_size(MPI_COMM_WORLD, &nranks);
	max = (size_t)(argc > 1 ? atoi(argv[1]) : 16) << 20;
	if (nranks != 2 || max == 0 || max > (1u << 30)) {
		if (rank == 0)
			fprintf(stderr, "usage: mpirun -np 2 %s [MiB (1..1024)]\n",
				argv[0]);
		MPI_Finalize();
		return 2;
	}
	sizes[sizeof(sizes) / sizeof(sizes[0]) - 1] = max;
	buf = malloc(max);
	if (!buf) {
		perror("malloc");
		MPI_Abort(MPI_COMM_WORLD, 1);
	}

	MPI_Barrier(MPI_COMM_WORLD);
	t0 = MPI_Wtime();
	for (n = 0; n < (int)(sizeof(sizes) / sizeof(sizes[0])); n++) {
		/* 0 -> 1 with seed 2n + 1, then 1 -> 0 with seed 2n + 2 */
		seed = 2 * n + 1;
		if (rank == 0)
			send_pattern(buf, sizes[n], 1, seed);
		else
			bad += recv_check(buf, sizes[n], 0, seed);
		seed++;
		if (rank == 1)
			send_pattern(buf, sizes[n], 0, seed);
		else
			bad += recv_check(buf, sizes[n], 1, seed);
	}
	t = MPI_Wtime() - t0;

	MPI_Allreduce(&bad, &all_bad, 1, MPI_LONG, MPI_SUM, MPI_COMM_WORLD);
	if (rank == 0)
		printf("mpi_xfer: %zu MiB each way and %d smaller messages, %.2f s: %s (%ld bad bytes)\n",
		       max >> 20, n - 1, t, all_bad ? "MISMATCH" : "ok",
		       all_bad);
	free(buf);
	MPI_Finalize();
	return all_bad ? 1 : 0;
}
