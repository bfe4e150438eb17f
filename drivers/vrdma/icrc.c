// SPDX-License-Identifier: GPL-2.0
/*
 * The invariant CRC (ICRC) of RoCEv2 packets.
 *
 * InfiniBand protects a packet end to end with a CRC over every field that
 * no switch or router may change.  RoCEv2 (IBA annex A17) keeps that CRC
 * for packets carried in IP/UDP: the IP and UDP headers are covered too,
 * with the fields a router rewrites masked out.  Precisely, the ICRC is the
 * CRC-32 of IEEE 802.3 (the Ethernet FCS: reflected polynomial 0xedb88320,
 * initial value ~0, result complemented) over
 *
 *   8 bytes of 0xff     in place of the IB local route header (LRH)
 *   the IP header       IPv4: TOS, TTL and header checksum set to all 1s
 *                       IPv6: traffic class, flow label and hop limit
 *                       set to all 1s
 *   the UDP header      checksum set to all 1s
 *   the BTH             its resv8a byte (FECN, BECN, reserved; the 5th
 *                       byte) set to all 1s
 *   everything after    extension headers, payload and pad, as they are
 *
 * and it travels in the 4 bytes after the pad, least significant byte
 * first, as the Ethernet FCS does: put_unaligned_le32(vrdma_icrc(...)).
 * rdma_rxe computes the same CRC (rxe_icrc.c) and, on the little-endian
 * machines it runs on, stores the same four bytes, so the two interoperate;
 * selftests/vrdma/wire/icrc_kat.py checks packets captured from both.
 *
 * crc32_le() is the kernel's CRC-32 library function; it neither inverts
 * its input value nor its result, which is why the start value below is
 * the running CRC after the LRH stand-in and why vrdma_icrc() complements
 * at the end.
 */
#include <linux/crc32.h>
#include <linux/ip.h>
#include <linux/ipv6.h>
#include <linux/skbuff.h>
#include <linux/udp.h>

#include "pkt.h"

/* crc32_le(~0, 8 bytes of 0xff): the CRC after the masked LRH. */
#define VRDMA_ICRC_SEED		0xdebb20e3

/* The most the masked copy holds: IPv4 with 40 bytes of options. */
#define VRDMA_ICRC_HDR_MAX	(60 + sizeof(struct udphdr) + \
				 sizeof(struct vrdma_bth))

/* Set the fields of the IP header that routers may change to all 1s. */
static bool vrdma_icrc_mask_ip(u8 *hdr, unsigned int ip_len)
{
	struct ipv6hdr *ip6h;
	struct iphdr *iph;

	switch (hdr[0] >> 4) {
	case 4:
		iph = (struct iphdr *)hdr;
		if (ip_len < sizeof(*iph) || ip_len != iph->ihl * 4)
			return false;
		iph->tos = 0xff;
		iph->ttl = 0xff;
		iph->check = (__force __sum16)0xffff;
		return true;
	case 6:
		/* Extension headers would be covered unmasked: none allowed. */
		if (ip_len != sizeof(*ip6h))
			return false;
		ip6h = (struct ipv6hdr *)hdr;
		/* The traffic class straddles priority and flow_lbl[0]. */
		ip6h->priority = 0xf;
		memset(ip6h->flow_lbl, 0xff, sizeof(ip6h->flow_lbl));
		ip6h->hop_limit = 0xff;
		return true;
	default:
		return false;
	}
}

/**
 * vrdma_icrc() - compute the ICRC of a RoCEv2 packet
 * @skb: the packet.  skb_network_header() is its IP header (IPv4, or IPv6
 *	without extension headers), skb_transport_header() its UDP header,
 *	and the BTH follows the UDP header.  skb->data may point anywhere
 *	from the IP header up to the end of the BTH (it is at the IP header
 *	when sending and at the UDP header or BTH when receiving).  Only the
 *	IP header has to be in the linear part: the rest, payload in
 *	particular, may be in page fragments.
 * @len: the bytes covered, counted from the first byte of the IP header to
 *	the last byte of the pad, i.e. the IP datagram without its ICRC.
 *
 * The skb is not changed: the headers are masked in a copy on the stack
 * and the rest is read in place, fragment by fragment.
 *
 * Context: any.
 * Return: the ICRC; its wire bytes are put_unaligned_le32() of it.  If the
 * skb does not hold such a packet of @len bytes (a caller bug: net.c checks
 * the lengths first) it warns once and returns 0.
 */
u32 vrdma_icrc(struct sk_buff *skb, unsigned int len)
{
	int nh_off = skb_network_offset(skb);
	int ip_len = skb_transport_offset(skb) - nh_off;
	unsigned int hdr_len = ip_len + sizeof(struct udphdr) +
			       sizeof(struct vrdma_bth);
	u8 hdr[VRDMA_ICRC_HDR_MAX];
	struct skb_seq_state st;
	unsigned int done, n;
	struct vrdma_bth *bth;
	struct udphdr *udph;
	const u8 *data;
	u32 crc;

	if (WARN_ON_ONCE(ip_len <= 0 || hdr_len > sizeof(hdr) ||
			 len < hdr_len || nh_off + (int)hdr_len < 0 ||
			 nh_off + (s64)len > skb->len))
		return 0;

	/* IP, UDP and BTH: copied, so that their variant fields can be masked. */
	if (WARN_ON_ONCE(skb_copy_bits(skb, nh_off, hdr, hdr_len)))
		return 0;
	if (WARN_ON_ONCE(!vrdma_icrc_mask_ip(hdr, ip_len)))
		return 0;
	udph = (struct udphdr *)(hdr + ip_len);
	udph->check = (__force __sum16)0xffff;
	bth = (struct vrdma_bth *)(udph + 1);
	bth->qpn |= cpu_to_be32(~VRDMA_BTH_QPN_MASK);

	crc = crc32_le(VRDMA_ICRC_SEED, hdr, hdr_len);

	/*
	 * The rest is read where it lies.  skb_seq_read() may return more
	 * than asked for (up to the end of a fragment), hence the min().
	 */
	len -= hdr_len;
	if (!len)
		return ~crc;
	skb_prepare_seq_read(skb, nh_off + hdr_len, nh_off + hdr_len + len,
			     &st);
	for (done = 0; done < len; done += n) {
		n = skb_seq_read(done, &data, &st);
		if (WARN_ON_ONCE(!n))
			break;
		n = min(n, len - done);
		crc = crc32_le(crc, data, n);
	}
	skb_abort_seq_read(&st);

	return ~crc;
}

/**
 * vrdma_icrc_rxe_flush() - is this a FLUSH request with rdma_rxe's ICRC?
 * @skb: a packet as vrdma_rcv() has checked it up to its ICRC: skb->data
 *	at the BTH, its headers (@hdr_len bytes) linear; a FLUSH has no
 *	payload and no pad
 * @hdr_len: the length of those headers
 * @icrc: vrdma_icrc() of the packet
 * @wire: the ICRC the packet carries
 *
 * rdma_rxe's opcode table (Linux 6.2 to at least 6.12) gives RC_FLUSH no
 * payload offset, so its ICRC covers the BTH, FETH and RETH a second time
 * after the masked headers, unmasked, as if they were the payload; rxe
 * sends FLUSHes with that ICRC and expects it.  vrdma sends the ICRC of
 * the IBA, and accepts this form as well, for FLUSH requests only: it still
 * covers every byte of the packet, so a damaged packet is still dropped.
 *
 * Context: any.
 * Return: true if the packet is an RC FLUSH and @wire is that ICRC.
 */
bool vrdma_icrc_rxe_flush(struct sk_buff *skb, unsigned int hdr_len,
			  u32 icrc, u32 wire)
{
	return vrdma_bth(skb)->opcode == VRDMA_OPCODE_RC_FLUSH &&
	       ~crc32_le(~icrc, skb->data, hdr_len) == wire;
}
