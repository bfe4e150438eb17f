// SPDX-License-Identifier: GPL-2.0
/*
 * The RoCEv2 UDP tunnel that carries a device's packets (what its netdev
 * does to it is netdev.c's).
 *
 * Sending: the requester or responder allocates a packet with
 * vrdma_pkt_alloc(), fills the BTH (vrdma_bth_init()), the extension
 * headers and the payload, and vrdma_pkt_send() puts UDP and IP in front,
 * the ICRC behind, and gives it to the IP stack of the netdev's namespace,
 * which routes it out of the netdev.  A packet for an address of the same
 * namespace never goes through IP: it is delivered inside the driver.
 *
 * Receiving: each namespace that has vrdma devices has a UDP socket on port
 * 4791 (one for IPv4, one for IPv6) in tunnel mode, so the IP stack hands
 * us RoCEv2 packets in softirq context.  Only packets that came in on a
 * device's bound netdev are its own (vrdma_rcv_dev()): a local process's
 * UDP socket reaches no QP.  vrdma_rcv() checks everything a packet claims
 * before believing it, then queues it on its QP; the QP's task does the
 * rest in process context.
 *
 * The sockets exist only while a device in the namespace does, so loading
 * the module takes no port, and rdma_rxe (which binds port 4791 in the
 * initial namespace) can run beside vrdma devices in other namespaces.
 */
#include <linux/if_vlan.h>
#include <linux/inetdevice.h>
#include <linux/netdevice.h>
#include <net/addrconf.h>
#include <net/ip.h>
#include <net/ipv6.h>
#include <net/ipv6_stubs.h>
#include <net/net_namespace.h>
#include <net/route.h>
#include <net/udp_tunnel.h>
#include <rdma/ib_mad.h>

#include "pkt.h"
#include "trace.h"
#include "vrdma.h"

/* BTH transport header version: only 0 is defined. */
#define VRDMA_BTH_TVER_MASK	0x0f

/* The largest payload of one packet: the largest IB MTU. */
#define VRDMA_MAX_PAYLOAD	4096

/**
 * struct vrdma_net - the RoCEv2 sockets of one network namespace
 * @list: entry in vrdma_nets
 * @net: the namespace; NULL once it has been dismantled
 * @users: devices whose netdev was in @net when they opened
 * @sk4: UDP socket on port 4791 for IPv4
 * @sk6: the same for IPv6; NULL when IPv6 is disabled
 *
 * Protected by vrdma_nets_lock.  The fast paths do not use it: sending
 * routes in the namespace of the device's netdev and receiving finds the
 * device from the packet.
 */
struct vrdma_net {
	struct list_head list;
	struct net *net;
	unsigned int users;
	struct socket *sk4;
	struct socket *sk6;
};

static DEFINE_MUTEX(vrdma_nets_lock);
static LIST_HEAD(vrdma_nets);

/*
 * Receiving
 */

/*
 * XRC packets reach only XRC QPs, requests the target's and answers the
 * initiator's; the packets of the other transports never reach XRC QPs.
 */
static bool vrdma_xrc_match(struct vrdma_qp *qp, u32 mask)
{
	if (!(mask & VRDMA_OPF_XRC))
		return !vrdma_qp_is_xrc(qp);
	if (mask & VRDMA_OPF_REQ)
		return qp->ibqp.qp_type == IB_QPT_XRC_TGT;
	return qp->ibqp.qp_type == IB_QPT_XRC_INI;
}

/**
 * vrdma_rcv() - check a RoCEv2 packet and queue it on its QP
 * @vdev: the device the packet is for; the caller holds a reference
 * @skb: the packet; skb->data at its UDP header, the network and transport
 *	headers set, the IP header linear
 * @local: a packet vrdma_pkt_send() delivered inside the driver: it never
 *	left memory, its ICRC was not computed, and its QP may be run at
 *	once (vrdma_qp_rcv_local())
 *
 * Nothing in the packet is trusted until checked: the UDP length, that
 * the BTH is there, that the opcode is one we know, that the packet is long
 * enough for that opcode's headers, its pad and the ICRC, the pad count,
 * TVer, P_Key and the ICRC, and that its QP speaks its transport (XRC or
 * not).  Every packet ends counted in exactly one of
 * rcvd_pkts (queued on its QP), malformed, icrc_errors or no_qp.
 *
 * On success skb->data is at the BTH, skb->len covers BTH to pad (the
 * ICRC is trimmed), the headers are linear, vrdma_pkt(skb) is filled, and
 * skb_network_header() still points at the IP header, which UD reads the
 * sender's address from.
 *
 * The checks are one sequence, in the order the headers come, each
 * relying on the ones before it: kept whole, so that one sees at a glance
 * that nothing is believed before it is checked.
 *
 * Context: softirq from the wire; the sender's context when @local.
 * Consumes @skb.
 */
static void vrdma_rcv(struct vrdma_dev *vdev, struct sk_buff *skb,
		      bool local)
{
	unsigned int ulen, len, hdr_len, pad, paylen, ip_len, bytes;
	const struct vrdma_opcode_info *info;
	struct vrdma_pkt *pkt;
	struct vrdma_bth *bth;
	struct vrdma_qp *qp;
	__le32 wire_icrc;
	u32 apsn, icrc;

	/* The ICRC covers the IP header; it must be exactly one we know. */
	ip_len = skb_transport_offset(skb) - skb_network_offset(skb);
	if (ip_hdr(skb)->version == 4) {
		if (ip_len != ip_hdr(skb)->ihl * 4)
			goto malformed;
	} else if (ip_hdr(skb)->version != 6 ||
		   ip_len != sizeof(struct ipv6hdr)) {
		goto malformed;
	}

	/* UDP has trimmed the skb to the UDP length; check, do not assume. */
	if (!pskb_may_pull(skb, sizeof(struct udphdr)))
		goto malformed;
	ulen = ntohs(udp_hdr(skb)->len);
	if (ulen < sizeof(struct udphdr) + sizeof(struct vrdma_bth) +
		   VRDMA_ICRC_SIZE || ulen > skb->len)
		goto malformed;
	if (pskb_trim_rcsum(skb, ulen))
		goto malformed;
	__skb_pull(skb, sizeof(struct udphdr));
	len = skb->len;		/* BTH to ICRC */

	if (!pskb_may_pull(skb, sizeof(struct vrdma_bth)))
		goto malformed;
	bth = vrdma_bth(skb);
	info = &vrdma_opcode[bth->opcode];
	if (!info->mask)
		goto malformed;
	if (bth->flags & VRDMA_BTH_TVER_MASK)
		goto malformed;
	/* The default partition, with full or limited membership. */
	if ((be16_to_cpu(bth->pkey) & IB_DEFAULT_PKEY_PARTIAL) !=
	    IB_DEFAULT_PKEY_PARTIAL)
		goto malformed;

	hdr_len = info->hdr_len;
	pad = (bth->flags & VRDMA_BTH_PAD_MASK) >> VRDMA_BTH_PAD_SHIFT;
	if (len < hdr_len + pad + VRDMA_ICRC_SIZE)
		goto malformed;
	paylen = len - hdr_len - pad - VRDMA_ICRC_SIZE;
	/* Packets are whole 4-byte words; opcodes without payload have none. */
	if (info->mask & VRDMA_OPF_PAYLOAD) {
		if ((paylen + pad) & 3)
			goto malformed;
	} else if (paylen || pad) {
		goto malformed;
	}
	if (!pskb_may_pull(skb, hdr_len))
		goto malformed;

	/* From the IP header to the end of the ICRC. */
	bytes = ip_len + sizeof(struct udphdr) + len;
	if (!local) {
		if (skb_copy_bits(skb, len - VRDMA_ICRC_SIZE, &wire_icrc,
				  VRDMA_ICRC_SIZE))
			goto malformed;
		icrc = vrdma_icrc(skb, bytes - VRDMA_ICRC_SIZE);
		if (icrc != le32_to_cpu(wire_icrc)) {
			if (!vrdma_icrc_rxe_flush(skb, hdr_len, icrc,
						  le32_to_cpu(wire_icrc))) {
				vrdma_count(vdev, VRDMA_CNT_ICRC_ERR);
				goto drop;
			}
			vrdma_count(vdev, VRDMA_CNT_RXE_FLUSH_ICRC);
		}
	}
	if (pskb_trim_rcsum(skb, len - VRDMA_ICRC_SIZE))
		goto malformed;
	/* The pull, or the trim of a cloned skb, may have moved the headers. */
	bth = vrdma_bth(skb);

	/*
	 * The packet may wait on its QP for a while: do not let it pin the
	 * input route (and so the netdev) meanwhile.
	 */
	skb_dst_drop(skb);

	pkt = vrdma_pkt(skb);
	apsn = be32_to_cpu(bth->apsn);
	pkt->mask = info->mask;
	pkt->qpn = be32_to_cpu(bth->qpn) & VRDMA_BTH_QPN_MASK;
	pkt->psn = apsn & VRDMA_BTH_PSN_MASK;
	pkt->paylen = paylen;
	pkt->hdr_len = hdr_len;
	pkt->opcode = bth->opcode;
	if (info->mask & VRDMA_OPF_XRC)
		pkt->opcode -= VRDMA_OPCODE_XRC;
	pkt->pad = pad;
	pkt->se = bth->flags & VRDMA_BTH_SE;
	pkt->ack_req = apsn & VRDMA_BTH_ACKREQ;
	trace_vrdma_rcv(vdev, skb);

	if (pkt->qpn == VRDMA_MCAST_QPN) {
		vrdma_mcast_rcv(vdev, skb, bytes);
		return;
	}
	qp = vrdma_qp_get(vdev, pkt->qpn);
	/* A raw packet QP has no transport: it takes frames only (raw.c). */
	if (qp && qp->ibqp.qp_type == IB_QPT_RAW_PACKET) {
		vrdma_qp_put(qp);
		qp = NULL;
	}
	if (!qp) {
		vrdma_count(vdev, VRDMA_CNT_NO_QP);
		goto drop;
	}
	if (!vrdma_xrc_match(qp, pkt->mask)) {
		vrdma_qp_put(qp);
		goto malformed;
	}
	vrdma_count(vdev, VRDMA_CNT_RCVD_PKTS);
	vrdma_count_add(vdev, VRDMA_CNT_RCVD_BYTES, bytes);
	if (local)
		vrdma_qp_rcv_local(qp, skb);
	else
		vrdma_qp_rcv(qp, skb);
	vrdma_qp_put(qp);
	return;

malformed:
	vrdma_count(vdev, VRDMA_CNT_MALFORMED);
drop:
	kfree_skb(skb);
}

/*
 * The device a packet that UDP handed us is for, referenced, or NULL.  Only
 * a packet that came in on the bound netdev (or a VLAN on it) from outside
 * is: one that a socket of this host sent, even to the device's own
 * address, arrives by "lo" or, looped back by IP (multicast, broadcast), as
 * PACKET_LOOPBACK, and must not reach a QP.  The device's own multicast
 * copies are delivered inside the driver (vrdma_mcast_loop()).  Such a
 * packet is counted, in wrong_netdev, on the device of the netdev it was
 * looped back by, or else on the one whose address it names.
 * Context: RCU.
 */
static struct vrdma_dev *vrdma_rcv_dev(struct sock *sk, struct sk_buff *skb)
{
	struct net_device *ndev;
	struct vrdma_dev *vdev;

	vdev = vrdma_dev_by_ndev(skb->dev);
	if (vdev && skb->pkt_type != PACKET_LOOPBACK)
		return vdev;
	if (!vdev) {
		if (ip_hdr(skb)->version == 4)
			ndev = vrdma_addr_ndev(sock_net(sk), false,
					       ip_hdr(skb)->daddr, NULL);
		else
			ndev = vrdma_addr_ndev(sock_net(sk), true, 0,
					       &ipv6_hdr(skb)->daddr);
		vdev = vrdma_dev_by_ndev(ndev);
	}
	if (vdev) {
		vrdma_count(vdev, VRDMA_CNT_WRONG_NETDEV);
		ib_device_put(&vdev->ibdev);
	}
	return NULL;
}

/*
 * The UDP tunnel's receive hook: softirq, under RCU, skb->data at the UDP
 * header, the UDP checksum (if any) verified.
 */
static int vrdma_udp_encap_rcv(struct sock *sk, struct sk_buff *skb)
{
	struct vrdma_dev *vdev = vrdma_rcv_dev(sk, skb);

	if (!vdev) {
		kfree_skb(skb);
		return 0;
	}
	vrdma_rcv(vdev, skb, false);
	ib_device_put(&vdev->ibdev);
	return 0;	/* consumed */
}

/*
 * Sending
 */

/**
 * vrdma_pkt_alloc() - allocate a packet
 * @vdev: the sending device
 * @av: the path; only its IP version is used here
 * @opcode: the BTH opcode; must be one vrdma_opcode[] knows
 * @paylen: payload bytes, at most 4096
 *
 * The skb has headroom for the link layer, IP and UDP headers, and
 * tailroom for the ICRC.  skb->data points at the BTH; skb->len covers
 * BTH, extension headers, payload and pad.  The BTH and extension headers
 * and the pad are zeroed; the payload is left for the caller to fill.
 * vrdma_pkt(skb) has its mask, opcode, hdr_len, paylen and pad set.
 *
 * It allocates with GFP_ATOMIC: callers may be atomic, and sending must
 * not wait for memory reclaim, which may itself be waiting for this device
 * (storage over RDMA).  A failure is counted in tx_errors; RC recovers from
 * it by retransmission.
 *
 * Context: any.
 * Return: the skb, or NULL.
 */
struct sk_buff *vrdma_pkt_alloc(struct vrdma_dev *vdev, struct vrdma_av *av,
				u8 opcode, u32 paylen)
{
	return vrdma_pkt_alloc_hdr(vdev, av, opcode, paylen, true);
}

/**
 * vrdma_pkt_alloc_hdr() - allocate a packet, with or without room for its
 *	payload
 * @vdev: the sending device
 * @av: the path; only its IP version is used here
 * @opcode: the BTH opcode; must be one vrdma_opcode[] knows
 * @paylen: payload bytes, at most 4096
 * @linear: room for the payload and pad in the linear part, as
 *	vrdma_pkt_alloc(); else only the headers are there, skb->len covers
 *	BTH and extension headers, and the caller appends @paylen bytes as
 *	page fragments (vrdma_sgl_add_frags()); @paylen must then be a
 *	multiple of 4 (no pad)
 *
 * Context: any.
 * Return: the skb, or NULL.
 */
struct sk_buff *vrdma_pkt_alloc_hdr(struct vrdma_dev *vdev,
				    struct vrdma_av *av, u8 opcode, u32 paylen,
				    bool linear)
{
	const struct vrdma_opcode_info *info = &vrdma_opcode[opcode];
	unsigned int pad = -paylen & 3;
	unsigned int headroom, len;
	struct vrdma_pkt *pkt;
	struct sk_buff *skb;
	u8 *hdr;

	if (WARN_ON_ONCE(!info->mask || paylen > VRDMA_MAX_PAYLOAD ||
			 (!linear && pad)))
		return NULL;

	/* A VLAN on top of our netdev may carry the packet: room for its tag. */
	headroom = LL_RESERVED_SPACE(vdev->ndev) + VLAN_HLEN +
		   (av->ipv6 ? sizeof(struct ipv6hdr) : sizeof(struct iphdr)) +
		   sizeof(struct udphdr);
	len = info->hdr_len + (linear ? paylen + pad : 0);

	skb = alloc_skb(headroom + len + VRDMA_ICRC_SIZE,
			GFP_ATOMIC | __GFP_NOWARN);
	if (!skb) {
		vrdma_count(vdev, VRDMA_CNT_TX_ERR);
		return NULL;
	}
	skb_reserve(skb, headroom);
	hdr = skb_put(skb, len);
	memset(hdr, 0, info->hdr_len);
	/* Pad bytes are covered by the ICRC: never leak memory through them. */
	if (linear)
		memset(hdr + info->hdr_len + paylen, 0, pad);
	skb->protocol = av->ipv6 ? htons(ETH_P_IPV6) : htons(ETH_P_IP);

	pkt = vrdma_pkt(skb);
	memset(pkt, 0, sizeof(*pkt));
	pkt->mask = info->mask;
	pkt->opcode = opcode;
	pkt->hdr_len = info->hdr_len;
	pkt->paylen = paylen;
	pkt->pad = pad;
	return skb;
}

/**
 * vrdma_bth_init() - fill the BTH of a packet from vrdma_pkt_alloc()
 * @skb: the packet; opcode and pad are taken from vrdma_pkt(skb)
 * @dest_qpn: the destination QP (24 bits)
 * @psn: the packet sequence number (24 bits)
 * @se: solicited event
 * @ack_req: ask the responder to acknowledge this packet
 *
 * The P_Key is the default partition's (0xffff), TVer 0, MigReq 0, and
 * FECN/BECN clear.  vrdma_pkt(skb) gets the same values.
 */
void vrdma_bth_init(struct sk_buff *skb, u32 dest_qpn, u32 psn, bool se,
		    bool ack_req)
{
	struct vrdma_pkt *pkt = vrdma_pkt(skb);
	struct vrdma_bth *bth = vrdma_bth(skb);

	pkt->qpn = dest_qpn & VRDMA_BTH_QPN_MASK;
	pkt->psn = psn & VRDMA_BTH_PSN_MASK;
	pkt->se = se;
	pkt->ack_req = ack_req;

	bth->opcode = pkt->opcode;
	bth->flags = (se ? VRDMA_BTH_SE : 0) |
		     (pkt->pad << VRDMA_BTH_PAD_SHIFT);
	bth->pkey = cpu_to_be16(IB_DEFAULT_PKEY_FULL);
	bth->qpn = cpu_to_be32(pkt->qpn);
	bth->apsn = cpu_to_be32((ack_req ? VRDMA_BTH_ACKREQ : 0) | pkt->psn);
}

/* UDP in front of the BTH; skb->len is BTH to pad. */
static void vrdma_push_udp(struct sk_buff *skb, __be16 sport)
{
	struct udphdr *udph;

	__skb_push(skb, sizeof(*udph));
	skb_reset_transport_header(skb);
	udph = udp_hdr(skb);
	udph->source = sport;
	udph->dest = htons(VRDMA_UDP_PORT);
	udph->len = htons(skb->len + VRDMA_ICRC_SIZE);
	/*
	 * No UDP checksum: the ICRC protects the packet.  RoCEv2 allows 0
	 * for IPv6 too, and rdma_rxe and RoCE NICs send and accept it.
	 */
	udph->check = 0;
}

static void vrdma_push_ip4(struct net *net, struct sk_buff *skb,
			   const struct vrdma_av *av)
{
	struct iphdr *iph;

	__skb_push(skb, sizeof(*iph));
	skb_reset_network_header(skb);
	iph = ip_hdr(skb);
	iph->version = 4;
	iph->ihl = sizeof(*iph) >> 2;
	iph->tos = av->tos;
	iph->tot_len = htons(skb->len + VRDMA_ICRC_SIZE);
	/* RoCE packets fit the path MTU; they must never be fragmented. */
	iph->frag_off = htons(IP_DF);
	iph->ttl = av->ttl;
	iph->protocol = IPPROTO_UDP;
	iph->saddr = av->saddr4;
	iph->daddr = av->daddr4;
	ip_select_ident(net, skb, NULL);
	/* ip_local_out() computes it again; local delivery needs it here. */
	ip_send_check(iph);
}

static void vrdma_push_ip6(struct sk_buff *skb, const struct vrdma_av *av)
{
	struct ipv6hdr *ip6h;

	__skb_push(skb, sizeof(*ip6h));
	skb_reset_network_header(skb);
	ip6h = ipv6_hdr(skb);
	ip6_flow_hdr(ip6h, av->tos,
		     htonl(av->flow_label) & IPV6_FLOWLABEL_MASK);
	ip6h->payload_len = htons(skb->len - sizeof(*ip6h) + VRDMA_ICRC_SIZE);
	ip6h->nexthdr = IPPROTO_UDP;
	ip6h->hop_limit = av->ttl;
	ip6h->saddr = av->saddr6;
	ip6h->daddr = av->daddr6;
}

/*
 * Room for the ICRC at the end of the packet: in the linear part, or, for
 * a packet whose payload is in page fragments, in a fragment of its own
 * from the per-CPU page fragment cache.  NULL if there is no memory.
 */
static void *vrdma_put_trailer(struct sk_buff *skb)
{
	struct skb_shared_info *sh = skb_shinfo(skb);
	struct page *page;
	void *p;

	if (!skb_is_nonlinear(skb))
		return skb_put(skb, VRDMA_ICRC_SIZE);
	if (sh->nr_frags >= MAX_SKB_FRAGS)
		return NULL;
	p = netdev_alloc_frag(VRDMA_ICRC_SIZE);
	if (!p)
		return NULL;
	page = virt_to_head_page(p);
	skb_fill_page_desc(skb, sh->nr_frags, page, p - page_address(page),
			   VRDMA_ICRC_SIZE);
	skb->len += VRDMA_ICRC_SIZE;
	skb->data_len += VRDMA_ICRC_SIZE;
	skb->truesize += VRDMA_ICRC_SIZE;
	return p;
}

/*
 * Compute the ICRC of the packet at skb->data (its IP header) and append
 * it.  Returns 0 or -ENOMEM.
 */
static int vrdma_put_icrc(struct sk_buff *skb)
{
	u32 icrc = vrdma_icrc(skb, skb->len);
	void *trailer = vrdma_put_trailer(skb);

	if (!trailer)
		return -ENOMEM;
	put_unaligned_le32(icrc, trailer);
	return 0;
}

/*
 * The netdev the path leaves by: the source GID's if that is a VLAN on top
 * of ours, else ours.  Context: RCU.
 */
static struct net_device *vrdma_out_ndev(struct vrdma_dev *vdev,
					 const struct vrdma_av *av)
{
	struct net_device *ndev;

	if (!av->sgid_attr)
		return vdev->ndev;
	ndev = rcu_dereference(av->sgid_attr->ndev);
	if (ndev && is_vlan_dev(ndev) && vlan_dev_real_dev(ndev) == vdev->ndev)
		return ndev;
	return vdev->ndev;
}

/*
 * Route a packet of @av: from the path's route cache when it is still
 * valid, else by a lookup whose result is cached.  Context: BH disabled.
 */
static int vrdma_route4(struct net *net, struct sk_buff *skb,
			struct vrdma_av *av, int oif)
{
	struct flowi4 fl4 = {
		.flowi4_oif = oif,
		.flowi4_tos = RT_TOS(av->tos),
		.flowi4_proto = IPPROTO_UDP,
		.saddr = av->saddr4,
		.daddr = av->daddr4,
		/* The ports spread QPs over equal-cost paths. */
		.fl4_sport = av->sport,
		.fl4_dport = htons(VRDMA_UDP_PORT),
	};
	struct rtable *rt;
	__be32 saddr;

	/*
	 * A multicast route says whether the host is a member of the group,
	 * which decides if IP loops the packet back to us (mcast.c); that
	 * changes with attach and detach, so such a route is not kept.
	 */
	if (ipv4_is_multicast(av->daddr4)) {
		rt = ip_route_output_key(net, &fl4);
		if (IS_ERR(rt))
			return PTR_ERR(rt);
		skb_dst_set(skb, &rt->dst);
		return 0;
	}
	rt = dst_cache_get_ip4(&av->dst_cache, &saddr);
	if (rt && saddr == av->saddr4) {
		skb_dst_set(skb, &rt->dst);
		return 0;
	}
	if (rt)
		ip_rt_put(rt);
	rt = ip_route_output_key(net, &fl4);
	if (IS_ERR(rt))
		return PTR_ERR(rt);
	dst_cache_set_ip4(&av->dst_cache, &rt->dst, av->saddr4);
	skb_dst_set(skb, &rt->dst);
	return 0;
}

static int vrdma_route6(struct net *net, struct sk_buff *skb,
			struct vrdma_av *av, int oif)
{
	struct flowi6 fl6 = {
		.flowi6_oif = oif,
		.flowi6_proto = IPPROTO_UDP,
		.flowlabel = ip6_make_flowinfo(av->tos, htonl(av->flow_label) &
					       IPV6_FLOWLABEL_MASK),
		.saddr = av->saddr6,
		.daddr = av->daddr6,
		.fl6_sport = av->sport,
		.fl6_dport = htons(VRDMA_UDP_PORT),
	};
	struct dst_entry *dst;
	struct in6_addr saddr;

	dst = dst_cache_get_ip6(&av->dst_cache, &saddr);
	if (dst && ipv6_addr_equal(&saddr, &av->saddr6)) {
		skb_dst_set(skb, dst);
		return 0;
	}
	dst_release(dst);
	dst = ipv6_stub->ipv6_dst_lookup_flow(net, NULL, &fl6, NULL);
	if (IS_ERR(dst))
		return PTR_ERR(dst);
	dst_cache_set_ip6(&av->dst_cache, dst, &av->saddr6);
	skb_dst_set(skb, dst);
	return 0;
}

/*
 * Give a routed packet to the IP stack.  @sk, when not NULL, is the tunnel
 * socket, whose only use here is that IP does not loop multicast back to
 * us (vrdma_mcast_loop()).  Consumes @skb; counts it sent or failed.
 */
static int vrdma_ip_out(struct vrdma_dev *vdev, struct sock *sk,
			struct sk_buff *skb)
{
	struct net *net = dev_net(vdev->ndev);
	unsigned int len = skb->len;
	int err;

	/* skb->cb held vrdma_pkt; IP keeps its own control block there. */
	if (skb->protocol == htons(ETH_P_IP)) {
		memset(IPCB(skb), 0, sizeof(*IPCB(skb)));
		err = ip_local_out(net, sk, skb);
#if IS_ENABLED(CONFIG_IPV6)
	} else {
		memset(IP6CB(skb), 0, sizeof(*IP6CB(skb)));
		err = ip6_local_out(net, sk, skb);
#else
	} else {
		kfree_skb(skb);
		err = -EAFNOSUPPORT;
#endif
	}
	/* Congestion notification (NET_XMIT_CN) still means sent. */
	err = net_xmit_eval(err);
	if (err > 0)
		err = -ENOBUFS;
	if (err) {
		vrdma_count(vdev, VRDMA_CNT_TX_ERR);
		return err;
	}
	vrdma_count(vdev, VRDMA_CNT_SENT_PKTS);
	vrdma_count_add(vdev, VRDMA_CNT_SENT_BYTES, len);
	return 0;
}

/**
 * vrdma_ip_send() - give a QP's routed packet to the IP stack
 * @vdev: the sending device
 * @skb: from vrdma_pkt_send(), routed, its IP header and ICRC in place
 *
 * Context: process or softirq.
 * Return: 0 or the errno of IP (counted in tx_errors).  Consumes @skb.
 */
int vrdma_ip_send(struct vrdma_dev *vdev, struct sk_buff *skb)
{
	return vrdma_ip_out(vdev, NULL, skb);
}

/*
 * Hand a packet for an address of this namespace to the device that has
 * it, @ldev (referenced; the reference is dropped here), as if it had come
 * in through the UDP tunnel but without going through IP: between two
 * netdevs of one namespace IP would route it via "lo", and drop it as a
 * martian if it did not.  Called outside RCU and with BHs enabled when the
 * sender's context allows it, so that vrdma_rcv() may run the destination
 * QP at once (vrdma_qp_rcv_local()).  Consumes @skb.
 */
static int vrdma_deliver_local(struct vrdma_dev *vdev, struct vrdma_dev *ldev,
			       struct sk_buff *skb)
{
	unsigned int ip_len = skb_transport_offset(skb);
	void *trailer;

	/* Like a wire, it needs both ports up. */
	if (!ldev || !vrdma_ndev_active(vdev->ndev) ||
	    !vrdma_ndev_active(ldev->ndev)) {
		if (ldev)
			ib_device_put(&ldev->ibdev);
		kfree_skb(skb);
		return -EHOSTUNREACH;
	}

	/* Same layout as from the wire; the ICRC is not computed. */
	trailer = vrdma_put_trailer(skb);
	if (!trailer) {
		ib_device_put(&ldev->ibdev);
		kfree_skb(skb);
		return -ENOMEM;
	}
	memset(trailer, 0, VRDMA_ICRC_SIZE);
	vrdma_count(vdev, VRDMA_CNT_SENT_PKTS);
	vrdma_count_add(vdev, VRDMA_CNT_SENT_BYTES, skb->len);
	vrdma_count(vdev, VRDMA_CNT_LOOPBACK_PKTS);

	skb->dev = ldev->ndev;
	skb->pkt_type = PACKET_HOST;
	__skb_pull(skb, ip_len);

	vrdma_rcv(ldev, skb, true);
	ib_device_put(&ldev->ibdev);
	return 0;
}

/*
 * A multicast packet reaches the sending device's own QPs in its group as
 * on real hardware; receiving accepts no packet that IP looped back
 * (vrdma_rcv_dev()), so the copy for them is delivered here, and IP is told
 * not to loop the original (the tunnel sockets have IP_MULTICAST_LOOP off).
 * @skb is at its IP header, ICRC appended; it is not consumed.
 */
static void vrdma_mcast_loop(struct vrdma_dev *vdev, struct vrdma_av *av,
			     struct sk_buff *skb)
{
	struct sk_buff *copy;

	if (!vrdma_mcast_member(vdev, &av->dgid))
		return;
	copy = skb_copy(skb, GFP_ATOMIC);
	if (!copy) {
		vrdma_count(vdev, VRDMA_CNT_TX_ERR);
		return;
	}
	vrdma_count(vdev, VRDMA_CNT_LOOPBACK_PKTS);
	copy->dev = vdev->ndev;
	copy->pkt_type = PACKET_MULTICAST;
	__skb_pull(copy, skb_transport_offset(copy));
	vrdma_rcv(vdev, copy, true);
}

static bool vrdma_av_mcast(const struct vrdma_av *av)
{
	return av->ipv6 ? ipv6_addr_is_multicast(&av->daddr6) :
			  ipv4_is_multicast(av->daddr4);
}

/* The tunnel socket of @vdev's namespace for the IP version of @ipv6. */
static struct sock *vrdma_tunnel_sk(struct vrdma_dev *vdev, bool ipv6)
{
	struct socket *sock = ipv6 ? vdev->net->sk6 : vdev->net->sk4;

	return sock ? sock->sk : NULL;
}

/**
 * vrdma_pkt_send() - send a packet
 * @vdev: the sending device
 * @av: the path: @av->ipv6 selects IPv4 (@av->saddr4, @av->daddr4) or IPv6
 *	(@av->saddr6, @av->daddr6, @av->flow_label); @av->tos is the IPv4
 *	TOS or IPv6 traffic class, @av->ttl the TTL or hop limit, @av->sport
 *	the UDP source port (network order).  @av->sgid_attr may be NULL;
 *	when it is a VLAN on top of our netdev, the packet leaves by it.
 *	@av->dmac is not used: the neighbour table resolves the next hop.
 * @txq: the sending QP's transmit queue (an RC or UC QP's), which keeps
 *	its packets in order (txq.c); NULL for a UD QP's packet
 * @skb: from vrdma_pkt_alloc() (or vrdma_pkt_alloc_hdr() with the payload
 *	in page fragments), BTH filled (vrdma_bth_init()), skb->data at the
 *	BTH.  May be a clone (a copy kept for
 *	retransmission): the headers are written into a private copy then.
 *
 * Puts UDP (destination port 4791, no checksum) and IPv4 (DF) or IPv6 in
 * front of the BTH and the ICRC behind the pad, routes the packet in the
 * namespace of the device's netdev, out of that netdev only, and sends it
 * with ip_local_out()/ip6_local_out().  A packet whose destination is an
 * address of that namespace is delivered to its device directly instead
 * (counted in loopback_pkts too).
 *
 * Context: process or softirq, not with hard interrupts disabled; the
 * caller may hold a mutex or spinlock.
 * Return: 0 if the packet was sent (or, for @txq, held back to be sent
 * in order), else a negative errno (no route,
 * -EHOSTUNREACH for a local address without an active vrdma device, the
 * error of the IP stack); errors are counted in tx_errors.  The skb is
 * consumed either way.
 */
int vrdma_pkt_send(struct vrdma_dev *vdev, struct vrdma_av *av,
		   struct vrdma_txq *txq, struct sk_buff *skb)
{
	struct vrdma_pkt *pkt = vrdma_pkt(skb);
	unsigned int headroom;
	struct net_device *local;
	struct sock *sk;
	struct net *net;
	int err;

	if (WARN_ON_ONCE(skb->len != pkt->hdr_len + pkt->paylen + pkt->pad ||
			 skb_headlen(skb) < pkt->hdr_len)) {
		err = -EINVAL;
		goto free;
	}
	trace_vrdma_xmit(vdev, skb);
	headroom = sizeof(struct udphdr) +
		   (av->ipv6 ? sizeof(struct ipv6hdr) : sizeof(struct iphdr));
	err = skb_cow_head(skb, headroom);
	if (!err && !skb_is_nonlinear(skb) &&
	    skb_tailroom(skb) < VRDMA_ICRC_SIZE)
		err = pskb_expand_head(skb, 0, VRDMA_ICRC_SIZE, GFP_ATOMIC);
	if (err)
		goto free;

	rcu_read_lock();
	net = dev_net(vdev->ndev);
	vrdma_push_udp(skb, av->sport);
	if (av->ipv6)
		vrdma_push_ip6(skb, av);
	else
		vrdma_push_ip4(net, skb, av);
	/* A resend may take another path than the packet was made for. */
	skb->protocol = av->ipv6 ? htons(ETH_P_IPV6) : htons(ETH_P_IP);

	local = vrdma_av_local_ndev(net, av);
	if (local) {
		struct vrdma_dev *ldev = vrdma_dev_by_ndev(local);

		rcu_read_unlock();
		err = vrdma_deliver_local(vdev, ldev, skb);
		goto out;
	}

	/* The route cache is per CPU. */
	local_bh_disable();
	if (av->ipv6)
		err = vrdma_route6(net, skb, av,
				   vrdma_out_ndev(vdev, av)->ifindex);
	else
		err = vrdma_route4(net, skb, av,
				   vrdma_out_ndev(vdev, av)->ifindex);
	local_bh_enable();
	rcu_read_unlock();
	if (err)
		goto free;

	err = vrdma_put_icrc(skb);
	if (err)
		goto free;
	/* A QP's packets keep their order (txq.c); they count themselves. */
	if (txq)
		return vrdma_txq_xmit(txq, skb);
	sk = NULL;
	if (vrdma_av_mcast(av)) {
		vrdma_mcast_loop(vdev, av, skb);
		sk = vrdma_tunnel_sk(vdev, av->ipv6);
	}
	return vrdma_ip_out(vdev, sk, skb);

free:
	kfree_skb(skb);
out:
	if (err)
		vrdma_count(vdev, VRDMA_CNT_TX_ERR);
	return err;
}

/*
 * The tunnel sockets
 */

static int vrdma_udp_sock(struct net *net, struct vrdma_net *vn, bool ipv6,
			  struct socket **sockp)
{
	struct udp_tunnel_sock_cfg tnl_cfg = {
		.sk_user_data = vn,
		.encap_type = 1,	/* any non-zero type: we parse it all */
		.encap_rcv = vrdma_udp_encap_rcv,
	};
	struct udp_port_cfg udp_cfg = {
		.family = ipv6 ? AF_INET6 : AF_INET,
		.local_udp_port = htons(VRDMA_UDP_PORT),
		/* Leave IPv4 to the IPv4 socket. */
		.ipv6_v6only = 1,
		/* RoCEv2 senders leave the IPv6 UDP checksum 0: accept it. */
		.use_udp6_rx_checksums = 0,
	};
	int err;

	err = udp_sock_create(net, &udp_cfg, sockp);
	if (err)
		return err;
	/* Our multicast is looped inside the driver (vrdma_mcast_loop()). */
	lock_sock((*sockp)->sk);
	vrdma_sock_no_mc_loop((*sockp)->sk, ipv6);
	release_sock((*sockp)->sk);
	setup_udp_tunnel_sock(net, *sockp, &tnl_cfg);
	return 0;
}

static void vrdma_net_release(struct vrdma_net *vn)
{
	if (vn->sk6)
		udp_tunnel_sock_release(vn->sk6);
	if (vn->sk4)
		udp_tunnel_sock_release(vn->sk4);
	vn->sk4 = NULL;
	vn->sk6 = NULL;
}

/* Create the sockets of @net, which the caller holds a reference on. */
static struct vrdma_net *vrdma_net_create(struct net *net)
{
	struct vrdma_net *vn;
	int err;

	vn = kzalloc(sizeof(*vn), GFP_KERNEL);
	if (!vn)
		return ERR_PTR(-ENOMEM);
	vn->net = net;

	err = vrdma_udp_sock(net, vn, false, &vn->sk4);
	if (err) {
		pr_info("vrdma: cannot bind UDP port %d (%d); is rdma_rxe using it?\n",
			VRDMA_UDP_PORT, err);
		goto err_free;
	}
	err = vrdma_udp_sock(net, vn, true, &vn->sk6);
	if (err == -EAFNOSUPPORT) {
		/* IPv6 is disabled: IPv4 alone is a working RoCEv2 port. */
		vn->sk6 = NULL;
	} else if (err) {
		pr_info("vrdma: cannot bind UDP port %d for IPv6 (%d)\n",
			VRDMA_UDP_PORT, err);
		goto err_release;
	}
	return vn;

err_release:
	vrdma_net_release(vn);
err_free:
	kfree(vn);
	return ERR_PTR(err);
}

/**
 * vrdma_net_dev_open() - make @vdev's namespace receive RoCEv2 packets
 * @vdev: a device with ->ndev set, not yet open
 *
 * The first device in a namespace creates the namespace's UDP sockets on
 * port 4791; later ones share them.  Sets @vdev->net.
 *
 * Context: process; takes vrdma_nets_lock, may sleep.
 * Return: 0, -EADDRINUSE if something else (rdma_rxe, in the initial
 * namespace) has the port, -ENODEV if the namespace is being dismantled,
 * or another negative errno.
 */
int vrdma_net_dev_open(struct vrdma_dev *vdev)
{
	struct net *net = dev_net(vdev->ndev);
	struct vrdma_net *vn;
	int err = 0;

	mutex_lock(&vrdma_nets_lock);
	list_for_each_entry(vn, &vrdma_nets, list) {
		if (vn->net == net)
			goto found;
	}

	/*
	 * The reference keeps the namespace's teardown from starting while
	 * the sockets are created; once vn is listed, vrdma_net_ns_exit()
	 * will find it.
	 */
	if (!maybe_get_net(net)) {
		err = -ENODEV;
		goto unlock;
	}
	vn = vrdma_net_create(net);
	if (!IS_ERR(vn))
		list_add(&vn->list, &vrdma_nets);
	put_net(net);
	if (IS_ERR(vn)) {
		err = PTR_ERR(vn);
		goto unlock;
	}
found:
	vn->users++;
	vdev->net = vn;
unlock:
	mutex_unlock(&vrdma_nets_lock);
	return err;
}

/**
 * vrdma_net_dev_close() - undo vrdma_net_dev_open()
 * @vdev: the device, open or not (then this does nothing)
 *
 * The last device of a namespace closes its sockets.  Call it when @vdev
 * can no longer receive, e.g. from dealloc_driver.
 *
 * Context: process; takes vrdma_nets_lock, may sleep.
 */
void vrdma_net_dev_close(struct vrdma_dev *vdev)
{
	struct vrdma_net *vn = vdev->net;

	if (!vn)
		return;

	mutex_lock(&vrdma_nets_lock);
	vdev->net = NULL;
	if (!--vn->users) {
		list_del_init(&vn->list);
		vrdma_net_release(vn);
		kfree(vn);
	}
	mutex_unlock(&vrdma_nets_lock);
}

/*
 * A namespace is being dismantled.  Its netdevs are gone already (device
 * pernet operations exit before subsystems), so its vrdma devices are
 * unregistered or on their way; one whose netdev moved back to the initial
 * namespace may still hold its vrdma_net.  The sockets must not outlive the
 * namespace, so they are closed now and the entry is made anonymous; the
 * last device to close frees it.
 */
static void vrdma_net_ns_exit(struct net *net)
{
	struct vrdma_net *vn;

	mutex_lock(&vrdma_nets_lock);
	list_for_each_entry(vn, &vrdma_nets, list) {
		if (vn->net == net) {
			list_del_init(&vn->list);
			vn->net = NULL;
			vrdma_net_release(vn);
			break;
		}
	}
	mutex_unlock(&vrdma_nets_lock);
}

static struct pernet_operations vrdma_net_ops = {
	.exit = vrdma_net_ns_exit,
};

/**
 * vrdma_net_init() - start following namespace and netdev events
 *
 * Return: 0 or a negative errno.
 */
int vrdma_net_init(void)
{
	int err;

	err = register_pernet_subsys(&vrdma_net_ops);
	if (err)
		return err;
	err = vrdma_netdev_init();
	if (err)
		unregister_pernet_subsys(&vrdma_net_ops);
	return err;
}

/**
 * vrdma_net_exit() - stop following them; devices are gone already
 */
void vrdma_net_exit(void)
{
	vrdma_netdev_exit();
	unregister_pernet_subsys(&vrdma_net_ops);
	WARN_ON(!list_empty(&vrdma_nets));
}
