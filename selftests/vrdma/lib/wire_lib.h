/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Building RoCEv2 packets byte by byte, for the tests that play a peer
 * from a raw socket (rc_wire_test, ud_test's UC injector, fuzz_wire):
 * the IPv4 and UDP headers and the ICRC.  A packet here is IPv4 (20
 * bytes, no options), UDP (8), BTH (12), extension headers, payload, pad
 * and the 4 byte ICRC, in that order.
 */
#ifndef VRDMA_WIRE_LIB_H
#define VRDMA_WIRE_LIB_H

#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/ip.h>
#include <netinet/udp.h>
#include <stdint.h>
#include <string.h>

#define WIRE_ROCE_PORT	4791
#define WIRE_HDR_LEN	(20 + 8 + 12)	/* IPv4, UDP, BTH */

/* CRC-32 of IEEE 802.3 (reflected), neither inverted on entry nor exit. */
static inline uint32_t wire_crc32(uint32_t crc, const uint8_t *p, size_t n)
{
	static uint32_t table[256];
	uint32_t c;
	int i, j;

	if (!table[1]) {
		for (i = 0; i < 256; i++) {
			for (c = i, j = 0; j < 8; j++)
				c = c & 1 ? 0xedb88320 ^ (c >> 1) : c >> 1;
			table[i] = c;
		}
	}
	while (n--)
		crc = table[(crc ^ *p++) & 0xff] ^ (crc >> 8);
	return crc;
}

/*
 * The IPv4 and UDP headers of a @len byte packet from @saddr to @daddr
 * (4 bytes each, network order), IPv4 identification @id (not 0, which
 * the kernel would replace), from UDP port @sport to 4791.  The kernel
 * sums the IP header; the UDP checksum stays 0.
 */
static inline void wire_ip_udp(uint8_t *pkt, size_t len, const void *saddr,
			       const void *daddr, uint16_t id, uint16_t sport)
{
	struct iphdr *ip = (struct iphdr *)pkt;
	struct udphdr *udp = (struct udphdr *)(ip + 1);

	ip->version = 4;
	ip->ihl = 5;
	ip->tot_len = htons(len);
	ip->id = htons(id);
	ip->frag_off = htons(IP_DF);
	ip->ttl = 64;
	ip->protocol = IPPROTO_UDP;
	memcpy(&ip->saddr, saddr, 4);
	memcpy(&ip->daddr, daddr, 4);
	udp->source = htons(sport);
	udp->dest = htons(WIRE_ROCE_PORT);
	udp->len = htons(len - sizeof(*ip));
}

/*
 * Write the ICRC into the last 4 bytes of the @len byte packet @pkt: the
 * CRC of 8 bytes of 1s standing in for the LRH, of the IPv4, UDP and BTH
 * headers with their variant fields (TOS, TTL, both checksums, BTH
 * resv8a) set to 1s, then of the rest as it is (@twice: then of the BTH
 * and the rest again, as they are); least significant byte first on the
 * wire.
 */
static inline void wire_icrc_ext(uint8_t *pkt, size_t len, int twice)
{
	static const uint8_t lrh[8] = {
		0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff,
	};
	uint8_t m[WIRE_HDR_LEN], *p = pkt + len - 4;
	uint32_t crc;

	memcpy(m, pkt, sizeof(m));
	m[1] = 0xff;			/* TOS */
	m[8] = 0xff;			/* TTL */
	m[10] = m[11] = 0xff;		/* IP header checksum */
	m[26] = m[27] = 0xff;		/* UDP checksum */
	m[32] = 0xff;			/* BTH resv8a */
	crc = wire_crc32(0xffffffff, lrh, sizeof(lrh));
	crc = wire_crc32(crc, m, sizeof(m));
	crc = wire_crc32(crc, pkt + sizeof(m), p - (pkt + sizeof(m)));
	if (twice)
		crc = wire_crc32(crc, pkt + WIRE_HDR_LEN - 12,
				 p - (pkt + WIRE_HDR_LEN - 12));
	crc = ~crc;
	p[0] = crc;
	p[1] = crc >> 8;
	p[2] = crc >> 16;
	p[3] = crc >> 24;
}

static inline void wire_icrc(uint8_t *pkt, size_t len)
{
	wire_icrc_ext(pkt, len, 0);
}

/*
 * The ICRC rdma_rxe (Linux 6.2 to 6.12 at least) puts on a FLUSH, which
 * has no payload: its opcode table gives FLUSH no payload offset, so the
 * BTH and what follows it are covered a second time, unmasked.
 */
static inline void wire_icrc_rxe_flush(uint8_t *pkt, size_t len)
{
	wire_icrc_ext(pkt, len, 1);
}

#endif /* VRDMA_WIRE_LIB_H */
