// SPDX-License-Identifier: GPL-2.0
/*
 * An ordinary TCP program, for rsockets' preload (librspreload.so):
 *
 *   tcp_stream server ADDR PORT
 *   tcp_stream client ADDR PORT BYTES
 *
 * It knows nothing of RDMA: socket(), bind(), listen(), accept(),
 * connect(), send() and recv(), the calls librspreload.so takes over, so
 * that it runs unmodified over an RDMA device.  The client sends an 8-byte
 * length, then BYTES bytes of a pseudo-random stream; the server checks
 * every byte as it arrives and answers with a 64-bit checksum of the
 * stream; the client compares it with its own.  Either exits 0 only if all
 * of it was right.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <netdb.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#define CHUNK	(64 * 1024)

/* The stream: xorshift64*, 8 bytes a step, from a fixed seed. */
struct gen {
	uint64_t s, sum;
};

static void gen_fill(struct gen *g, uint8_t *buf, size_t n)
{
	size_t i;

	for (i = 0; i < n; i += 8) {
		uint64_t v;

		g->s ^= g->s >> 12;
		g->s ^= g->s << 25;
		g->s ^= g->s >> 27;
		v = g->s * 0x2545f4914f6cdd1dULL;
		memcpy(buf + i, &v, n - i < 8 ? n - i : 8);
		g->sum = (g->sum ^ v) * 0x100000001b3ULL;
	}
}

static int xfer(int fd, void *buf, size_t n, int out)
{
	size_t done = 0;

	while (done < n) {
		ssize_t r = out ? send(fd, (char *)buf + done, n - done, 0) :
				  recv(fd, (char *)buf + done, n - done, 0);

		if (r == 0) {
			fprintf(stderr, "tcp_stream: connection closed after "
				"%zu of %zu bytes\n", done, n);
			return -1;
		}
		if (r < 0) {
			if (errno == EINTR)
				continue;
			perror(out ? "tcp_stream: send" : "tcp_stream: recv");
			return -1;
		}
		done += r;
	}
	return 0;
}

static int resolve(const char *addr, const char *port, int passive,
		   struct addrinfo **ai)
{
	struct addrinfo hints = {
		.ai_socktype = SOCK_STREAM,
		.ai_flags = AI_NUMERICHOST | (passive ? AI_PASSIVE : 0),
	};
	int ret = getaddrinfo(addr, port, &hints, ai);

	if (ret)
		fprintf(stderr, "tcp_stream: %s: %s\n", addr,
			gai_strerror(ret));
	return ret ? -1 : 0;
}

static int server(const char *addr, const char *port)
{
	static uint8_t buf[CHUNK], want[CHUNK];
	struct gen g = { .s = 4791 };
	struct addrinfo *ai;
	uint64_t n, got = 0;
	int ls, fd, one = 1;

	if (resolve(addr, port, 1, &ai))
		return 1;
	ls = socket(ai->ai_family, SOCK_STREAM, 0);
	if (ls < 0 ||
	    setsockopt(ls, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one)) ||
	    bind(ls, ai->ai_addr, ai->ai_addrlen) || listen(ls, 1)) {
		perror("tcp_stream: listen");
		return 1;
	}
	freeaddrinfo(ai);
	fd = accept(ls, NULL, NULL);
	if (fd < 0) {
		perror("tcp_stream: accept");
		return 1;
	}
	if (xfer(fd, &n, sizeof(n), 0))
		return 1;
	while (got < n) {
		size_t k = n - got < CHUNK ? n - got : CHUNK;
		size_t i;

		if (xfer(fd, buf, k, 0))
			return 1;
		gen_fill(&g, want, k);
		if (memcmp(buf, want, k)) {
			for (i = 0; buf[i] == want[i]; i++)
				;
			printf("tcp_stream server: mismatch at byte %llu\n",
			       (unsigned long long)(got + i));
			return 1;
		}
		got += k;
	}
	if (xfer(fd, &g.sum, sizeof(g.sum), 1))
		return 1;
	/* The client reads the answer, then closes: wait for that. */
	while (recv(fd, buf, 1, 0) > 0)
		;
	close(fd);
	close(ls);
	printf("tcp_stream server: %llu bytes, all right\n",
	       (unsigned long long)got);
	return 0;
}

static int client(const char *addr, const char *port, uint64_t n)
{
	static uint8_t buf[CHUNK];
	struct gen g = { .s = 4791 };
	struct addrinfo *ai;
	uint64_t sent = 0, sum;
	int fd;

	if (resolve(addr, port, 0, &ai))
		return 1;
	fd = socket(ai->ai_family, SOCK_STREAM, 0);
	if (fd < 0 || connect(fd, ai->ai_addr, ai->ai_addrlen)) {
		perror("tcp_stream: connect");
		return 1;
	}
	freeaddrinfo(ai);
	if (xfer(fd, &n, sizeof(n), 1))
		return 1;
	while (sent < n) {
		size_t k = n - sent < CHUNK ? n - sent : CHUNK;

		gen_fill(&g, buf, k);
		if (xfer(fd, buf, k, 1))
			return 1;
		sent += k;
	}
	if (xfer(fd, &sum, sizeof(sum), 0))
		return 1;
	close(fd);
	if (sum != g.sum) {
		printf("tcp_stream client: the server's checksum differs\n");
		return 1;
	}
	printf("tcp_stream client: %llu bytes sent, checksum %016llx matched\n",
	       (unsigned long long)n, (unsigned long long)sum);
	return 0;
}

int main(int argc, char **argv)
{
	if (argc == 4 && !strcmp(argv[1], "server"))
		return server(argv[2], argv[3]);
	if (argc == 5 && !strcmp(argv[1], "client"))
		return client(argv[2], argv[3], strtoull(argv[4], NULL, 0));
	fprintf(stderr, "usage: tcp_stream server ADDR PORT\n"
		"       tcp_stream client ADDR PORT BYTES\n");
	return 2;
}
