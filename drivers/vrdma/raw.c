// SPDX-License-Identifier: GPL-2.0
/*
 * Raw packet QPs and flow steering.
 *
 * A raw packet QP (IB_QPT_RAW_PACKET, user space only; ib_core lets only
 * a process with CAP_NET_RAW create one) sends and receives whole Ethernet
 * frames on the bound netdev, without any RoCE header.
 *
 * Sending: a SEND WQE's gathered bytes are the frame, from the destination
 * MAC on, ETH_HLEN bytes at least and the netdev's MTU + ETH_HLEN at most
 * (4 bytes more when it carries an 802.1Q or 802.1ad tag); a shorter or
 * longer one completes with IB_WC_LOC_LEN_ERR and nothing is sent.  The
 * frame leaves through dev_queue_xmit() on the bound netdev.  As a NIC's
 * internal switch does, a frame to a multicast or broadcast MAC, or to the
 * netdev's own MAC, is also offered to the flows of this device (not to
 * the sending QP); one to the own MAC does not go on the wire.
 *
 * Receiving: a QP receives only what its flows (ibv_create_flow) steer to
 * it.  A flow is a list of specs -- Ethernet, IPv4, IPv6, TCP, UDP, each a
 * value and a mask: a field matches if (frame & mask) == (value & mask);
 * a spec of a layer also requires that layer (an IPv4 spec an IPv4 frame,
 * a UDP spec a UDP header) -- and a frame is steered to every QP one of
 * whose NORMAL flows it matches all specs of, one copy per QP.  Flows of
 * the other types take no specs: a SNIFFER flow gets every frame, an
 * ALL_DEFAULT flow every frame that no NORMAL flow took, an MC_DEFAULT
 * flow every such frame to a multicast MAC.  The frame is queued to the
 * QP (marked VRDMA_OPF_RAW in its struct vrdma_pkt) and the QP's task
 * places it, from the destination MAC on, into the next receive WQE
 * (vrdma_raw_responder()); without one it is dropped and counted, as a
 * NIC drops.
 *
 * RSS: a QP made on an indirection table (wq.c) is steered to as any
 * other, one copy per QP; the copy carries, in skb->hash, the Toeplitz
 * hash of the fields the QP selects (vrdma_raw_rss_hash()), and the
 * QP's task places it into the WQ the hash picks in the table instead of
 * an RQ of its own.
 *
 * The frames of the wire come from a packet tap on the bound netdev
 * (dev_add_pack(), ETH_P_ALL), which sees every frame received.  It exists
 * only while the device has at least one flow: every RoCE packet would
 * otherwise pay for a look at the flows.
 *
 * Flows are kept per device in an RCU list, grouped by QP, so that the
 * tap (softirq) and the senders walk them without a lock and give a QP
 * one copy of a frame; creating and destroying them take the device's
 * mutex.  At most VRDMA_MAX_FLOWS flows per device.
 */
#include <linux/etherdevice.h>
#include <linux/if_vlan.h>
#include <linux/ip.h>
#include <linux/ipv6.h>
#include <linux/tcp.h>
#include <linux/udp.h>

#include "vrdma.h"
#include "pkt.h"

/* The frame headers a flow looks at: Ethernet, a VLAN tag, IP, ports. */
#define VRDMA_RAW_HDR_MAX	(VLAN_ETH_HLEN + 60 + 4)

/**
 * struct vrdma_flow - a flow: the frames it steers to its QP
 * @ibflow: ib_core's part
 * @list: entry in vrdma_raw.flows (RCU), next to the QP's other flows
 * @qp: the raw packet QP that receives what it matches
 * @type: enum ib_flow_attr_type
 * @linked: on the list (destroy_qp takes the flows of a QP off it)
 * @rcu: frees it after the readers
 * @num_specs: entries of @specs
 * @specs: copies of the specs, each whole
 */
struct vrdma_flow {
	struct ib_flow ibflow;
	struct list_head list;
	struct vrdma_qp *qp;
	enum ib_flow_attr_type type;
	bool linked;
	struct rcu_head rcu;
	u32 num_specs;
	union ib_flow_spec specs[];
};

/**
 * struct vrdma_raw - the flows of a device
 * @vdev: the device
 * @mutex: serialises flow creation and destruction with the tap's
 *	registration; taken under RTNL (netdev events)
 * @flows: the flows (struct vrdma_flow), RCU; a QP's flows are adjacent
 * @num_flows: entries of @flows, held to VRDMA_MAX_FLOWS
 * @num_defaults: ALL_DEFAULT and MC_DEFAULT flows among them
 * @tap: the packet tap on the bound netdev
 * @tap_on: @tap is registered
 * @dead: the netdev is going away: no tap any more
 */
struct vrdma_raw {
	struct vrdma_dev *vdev;
	struct mutex mutex;	/* see above */
	struct list_head flows;
	u32 num_flows;
	u32 num_defaults;
	struct packet_type tap;
	bool tap_on;
	bool dead;
};

/* What a flow matches a frame against, parsed once per frame. */
struct vrdma_raw_hdrs {
	u8 dst[ETH_ALEN];
	u8 src[ETH_ALEN];
	__be16 proto;		/* after a VLAN tag */
	__be16 vlan_tci;
	bool vlan;
	u8 ip;			/* 4, 6, or 0: none */
	__be32 saddr4, daddr4;
	u8 ip4_flags;		/* IB_IPV4_DONT_FRAG, IB_IPV4_MORE_FRAG */
	struct in6_addr saddr6, daddr6;
	__be32 flow_label;
	u8 l4_proto, tos, ttl;
	bool ports;		/* a TCP or UDP header is there */
	__be16 sport, dport;
};

static inline struct vrdma_flow *to_vflow(struct ib_flow *ibflow)
{
	return container_of(ibflow, struct vrdma_flow, ibflow);
}

/* The 802.1Q or 802.1ad tag the stack took out of the frame, as on the wire. */
static void vrdma_raw_tag(const struct sk_buff *skb, u8 *tag)
{
	put_unaligned(skb->vlan_proto, (__be16 *)tag);
	put_unaligned(htons(skb_vlan_tag_get(skb)), (__be16 *)(tag + 2));
}

/*
 * Copy the first @len bytes of the frame in @skb, which starts @off bytes
 * from skb->data (at the MAC header; @off is 0 or negative), with a VLAN
 * tag the stack took out of the frame (skb_vlan_tag_present()) put back
 * after the MACs.
 */
static int vrdma_raw_frame_bytes(const struct sk_buff *skb, int off, u8 *buf,
				 unsigned int len)
{
	u8 tag[VLAN_HLEN];

	if (!skb_vlan_tag_present(skb) || len <= 2 * ETH_ALEN)
		return skb_copy_bits(skb, off, buf, len);
	if (skb_copy_bits(skb, off, buf, 2 * ETH_ALEN))
		return -EFAULT;
	vrdma_raw_tag(skb, tag);
	memcpy(buf + 2 * ETH_ALEN, tag,
	       min_t(unsigned int, len - 2 * ETH_ALEN, VLAN_HLEN));
	if (len <= VLAN_ETH_HLEN - 2)
		return 0;
	return skb_copy_bits(skb, off + 2 * ETH_ALEN, buf + VLAN_ETH_HLEN - 2,
			     len - (VLAN_ETH_HLEN - 2));
}

/* The frame's length, a VLAN tag the stack took out of it included. */
u32 vrdma_raw_frame_len(const struct sk_buff *skb, int off)
{
	return skb->len - off + (skb_vlan_tag_present(skb) ? VLAN_HLEN : 0);
}

/* Parse the IPv4 header at @p (@len bytes there) and the ports after it. */
static void vrdma_raw_parse_ip4(struct vrdma_raw_hdrs *h, const u8 *p,
				unsigned int len)
{
	const struct iphdr *iph = (const struct iphdr *)p;
	unsigned int ihl;
	u16 frag;

	if (len < sizeof(*iph) || iph->version != 4 || iph->ihl < 5)
		return;
	ihl = iph->ihl * 4;
	h->ip = 4;
	h->saddr4 = iph->saddr;
	h->daddr4 = iph->daddr;
	h->l4_proto = iph->protocol;
	h->tos = iph->tos;
	h->ttl = iph->ttl;
	frag = ntohs(iph->frag_off);
	h->ip4_flags = (frag & IP_DF ? IB_IPV4_DONT_FRAG : 0) |
		       (frag & IP_MF ? IB_IPV4_MORE_FRAG : 0);
	/* Only the first fragment has the ports. */
	if ((frag & IP_OFFSET) || len < ihl + 4)
		return;
	if (iph->protocol == IPPROTO_TCP || iph->protocol == IPPROTO_UDP) {
		h->ports = true;
		memcpy(&h->sport, p + ihl, 2);
		memcpy(&h->dport, p + ihl + 2, 2);
	}
}

static void vrdma_raw_parse_ip6(struct vrdma_raw_hdrs *h, const u8 *p,
				unsigned int len)
{
	const struct ipv6hdr *ip6 = (const struct ipv6hdr *)p;

	if (len < sizeof(*ip6) || ip6->version != 6)
		return;
	h->ip = 6;
	h->saddr6 = ip6->saddr;
	h->daddr6 = ip6->daddr;
	h->flow_label = ip6_flowlabel(ip6);
	h->l4_proto = ip6->nexthdr;
	h->tos = ip6_tclass(ip6_flowinfo(ip6));
	h->ttl = ip6->hop_limit;
	/* Extension headers are not walked: the next header is the L4's. */
	if (len < sizeof(*ip6) + 4)
		return;
	if (ip6->nexthdr == IPPROTO_TCP || ip6->nexthdr == IPPROTO_UDP) {
		h->ports = true;
		memcpy(&h->sport, p + sizeof(*ip6), 2);
		memcpy(&h->dport, p + sizeof(*ip6) + 2, 2);
	}
}

/*
 * Parse the headers of a frame of @len bytes whose first bytes are in
 * @buf (@have of them).  False if it is no Ethernet frame.
 */
static bool vrdma_raw_parse(struct vrdma_raw_hdrs *h, const u8 *buf,
			    unsigned int have)
{
	unsigned int off = ETH_HLEN;

	memset(h, 0, sizeof(*h));
	if (have < ETH_HLEN)
		return false;
	memcpy(h->dst, buf, ETH_ALEN);
	memcpy(h->src, buf + ETH_ALEN, ETH_ALEN);
	memcpy(&h->proto, buf + 2 * ETH_ALEN, 2);
	if (eth_type_vlan(h->proto) && have >= VLAN_ETH_HLEN) {
		h->vlan = true;
		memcpy(&h->vlan_tci, buf + ETH_HLEN, 2);
		memcpy(&h->proto, buf + ETH_HLEN + 2, 2);
		off = VLAN_ETH_HLEN;
	}
	if (h->proto == htons(ETH_P_IP))
		vrdma_raw_parse_ip4(h, buf + off, have - off);
	else if (h->proto == htons(ETH_P_IPV6))
		vrdma_raw_parse_ip6(h, buf + off, have - off);
	return true;
}

/* (a & m) == (b & m) over @n bytes. */
static bool vrdma_masked_eq(const void *a, const void *b, const void *m,
			    size_t n)
{
	const u8 *x = a, *y = b, *k = m;
	size_t i;

	for (i = 0; i < n; i++)
		if ((x[i] ^ y[i]) & k[i])
			return false;
	return true;
}

#define VRDMA_FIELD_EQ(pkt, val, mask) \
	vrdma_masked_eq(&(pkt), &(val), &(mask), sizeof(pkt))

static bool vrdma_spec_eth(const struct ib_flow_spec_eth *s,
			   const struct vrdma_raw_hdrs *h)
{
	const struct ib_flow_eth_filter *v = &s->val, *m = &s->mask;

	/* A VLAN tag asked for must be there. */
	if (m->vlan_tag && !h->vlan)
		return false;
	return vrdma_masked_eq(h->dst, v->dst_mac, m->dst_mac, ETH_ALEN) &&
	       vrdma_masked_eq(h->src, v->src_mac, m->src_mac, ETH_ALEN) &&
	       VRDMA_FIELD_EQ(h->proto, v->ether_type, m->ether_type) &&
	       VRDMA_FIELD_EQ(h->vlan_tci, v->vlan_tag, m->vlan_tag);
}

static bool vrdma_spec_ipv4(const struct ib_flow_spec_ipv4 *s,
			    const struct vrdma_raw_hdrs *h)
{
	const struct ib_flow_ipv4_filter *v = &s->val, *m = &s->mask;

	return h->ip == 4 &&
	       VRDMA_FIELD_EQ(h->saddr4, v->src_ip, m->src_ip) &&
	       VRDMA_FIELD_EQ(h->daddr4, v->dst_ip, m->dst_ip) &&
	       VRDMA_FIELD_EQ(h->l4_proto, v->proto, m->proto) &&
	       VRDMA_FIELD_EQ(h->tos, v->tos, m->tos) &&
	       VRDMA_FIELD_EQ(h->ttl, v->ttl, m->ttl) &&
	       VRDMA_FIELD_EQ(h->ip4_flags, v->flags, m->flags);
}

static bool vrdma_spec_ipv6(const struct ib_flow_spec_ipv6 *s,
			    const struct vrdma_raw_hdrs *h)
{
	const struct ib_flow_ipv6_filter *v = &s->val, *m = &s->mask;

	return h->ip == 6 &&
	       vrdma_masked_eq(&h->saddr6, v->src_ip, m->src_ip, 16) &&
	       vrdma_masked_eq(&h->daddr6, v->dst_ip, m->dst_ip, 16) &&
	       VRDMA_FIELD_EQ(h->flow_label, v->flow_label, m->flow_label) &&
	       VRDMA_FIELD_EQ(h->l4_proto, v->next_hdr, m->next_hdr) &&
	       VRDMA_FIELD_EQ(h->tos, v->traffic_class, m->traffic_class) &&
	       VRDMA_FIELD_EQ(h->ttl, v->hop_limit, m->hop_limit);
}

static bool vrdma_spec_ports(const struct ib_flow_spec_tcp_udp *s,
			     const struct vrdma_raw_hdrs *h)
{
	const struct ib_flow_tcp_udp_filter *v = &s->val, *m = &s->mask;
	u8 proto = s->type == IB_FLOW_SPEC_TCP ? IPPROTO_TCP : IPPROTO_UDP;

	return h->ports && h->l4_proto == proto &&
	       VRDMA_FIELD_EQ(h->sport, v->src_port, m->src_port) &&
	       VRDMA_FIELD_EQ(h->dport, v->dst_port, m->dst_port);
}

/* Does the frame match every spec of the NORMAL flow @f? */
static bool vrdma_flow_match(const struct vrdma_flow *f,
			     const struct vrdma_raw_hdrs *h)
{
	u32 i;

	for (i = 0; i < f->num_specs; i++) {
		const union ib_flow_spec *s = &f->specs[i];
		bool ok;

		switch (s->type) {
		case IB_FLOW_SPEC_ETH:
			ok = vrdma_spec_eth(&s->eth, h);
			break;
		case IB_FLOW_SPEC_IPV4:
			ok = vrdma_spec_ipv4(&s->ipv4, h);
			break;
		case IB_FLOW_SPEC_IPV6:
			ok = vrdma_spec_ipv6(&s->ipv6, h);
			break;
		default:	/* TCP, UDP: create_flow took no other */
			ok = vrdma_spec_ports(&s->tcp_udp, h);
			break;
		}
		if (!ok)
			return false;
	}
	return true;
}

/* Does a NORMAL flow (of a QP other than @except) take the frame? */
static bool vrdma_raw_steered(struct vrdma_raw *raw,
			      const struct vrdma_raw_hdrs *h,
			      struct vrdma_qp *except)
{
	struct vrdma_flow *f;

	list_for_each_entry_rcu(f, &raw->flows, list)
		if (f->qp != except && f->type == IB_FLOW_ATTR_NORMAL &&
		    vrdma_flow_match(f, h))
			return true;
	return false;
}

/*
 * The RSS hash of a frame for @rss: the Toeplitz hash of the fields it
 * selects, in the order of Microsoft's RSS input -- source address,
 * destination address, source port, destination port.  A field the
 * frame has not (an IPv6 address of an IPv4 frame, the ports of a
 * fragment or of another protocol) is left out.
 */
static u32 vrdma_raw_rss_hash(const struct vrdma_rss *rss,
			      const struct vrdma_raw_hdrs *h)
{
	u8 in[2 * sizeof(struct in6_addr) + 4];
	unsigned int n = 0;
	u64 f = rss->fields;
	bool tcp;

	if (h->ip == 4) {
		if (f & VRDMA_RX_HASH_SRC_IPV4) {
			memcpy(in + n, &h->saddr4, 4);
			n += 4;
		}
		if (f & VRDMA_RX_HASH_DST_IPV4) {
			memcpy(in + n, &h->daddr4, 4);
			n += 4;
		}
	} else if (h->ip == 6) {
		if (f & VRDMA_RX_HASH_SRC_IPV6) {
			memcpy(in + n, &h->saddr6, 16);
			n += 16;
		}
		if (f & VRDMA_RX_HASH_DST_IPV6) {
			memcpy(in + n, &h->daddr6, 16);
			n += 16;
		}
	}
	/* h->ports: a TCP or UDP header, and not a later fragment. */
	if (h->ports) {
		tcp = h->l4_proto == IPPROTO_TCP;
		if (f & (tcp ? VRDMA_RX_HASH_SRC_PORT_TCP :
			       VRDMA_RX_HASH_SRC_PORT_UDP)) {
			memcpy(in + n, &h->sport, 2);
			n += 2;
		}
		if (f & (tcp ? VRDMA_RX_HASH_DST_PORT_TCP :
			       VRDMA_RX_HASH_DST_PORT_UDP)) {
			memcpy(in + n, &h->dport, 2);
			n += 2;
		}
	}
	return vrdma_toeplitz(rss->key, in, n);
}

/*
 * Queue a copy of the frame to @qp; the QP's task places it.  @h: the
 * frame's headers, which an RSS QP hashes.
 */
static void vrdma_raw_queue(struct vrdma_qp *qp, struct sk_buff *skb, int off,
			    const struct vrdma_raw_hdrs *h)
{
	struct vrdma_dev *vdev = qp->vdev;
	struct sk_buff *copy;

	if (!refcount_inc_not_zero(&qp->refs))
		return;
	copy = skb_clone(skb, GFP_ATOMIC);
	if (!copy) {
		vrdma_count(vdev, VRDMA_CNT_RAW_DROPPED);
		vrdma_qp_put(qp);
		return;
	}
	/* From the MAC header on: the frame as it was on the wire. */
	__skb_push(copy, -off);
	skb_dst_drop(copy);
	memset(vrdma_pkt(copy), 0, sizeof(struct vrdma_pkt));
	vrdma_pkt(copy)->mask = VRDMA_OPF_RAW;
	/* Set once at creation: the reference keeps it. */
	if (qp->rss)
		skb_set_hash(copy, vrdma_raw_rss_hash(qp->rss, h),
			     PKT_HASH_TYPE_L4);
	vrdma_qp_rcv(qp, copy);
	vrdma_qp_put(qp);
}

/*
 * Offer the frame in @skb (starting @off bytes from skb->data) to the
 * flows of @raw: every QP but @except whose flows take it gets one copy.
 * Context: RCU held; softirq or the sender's process context.
 */
static void vrdma_raw_steer(struct vrdma_raw *raw, struct sk_buff *skb,
			    int off, struct vrdma_qp *except)
{
	u8 buf[VRDMA_RAW_HDR_MAX];
	struct vrdma_raw_hdrs h;
	struct vrdma_qp *last = NULL;
	struct vrdma_flow *f;
	unsigned int have;
	bool steered = false;

	have = min_t(unsigned int, vrdma_raw_frame_len(skb, off), sizeof(buf));
	if (vrdma_raw_frame_bytes(skb, off, buf, have) ||
	    !vrdma_raw_parse(&h, buf, have))
		return;
	if (READ_ONCE(raw->num_defaults))
		steered = vrdma_raw_steered(raw, &h, except);

	list_for_each_entry_rcu(f, &raw->flows, list) {
		bool take;

		/* A QP's flows are adjacent: one copy per QP. */
		if (f->qp == except || f->qp == last)
			continue;
		switch (f->type) {
		case IB_FLOW_ATTR_NORMAL:
			take = vrdma_flow_match(f, &h);
			break;
		case IB_FLOW_ATTR_SNIFFER:
			take = true;
			break;
		case IB_FLOW_ATTR_ALL_DEFAULT:
			take = !steered;
			break;
		default:	/* IB_FLOW_ATTR_MC_DEFAULT */
			take = !steered && is_multicast_ether_addr(h.dst);
			break;
		}
		if (!take)
			continue;
		last = f->qp;
		vrdma_raw_queue(f->qp, skb, off, &h);
	}
}

/*
 * The tap: every frame the bound netdev receives, in the receive softirq
 * (after the stack took a VLAN tag out into skb->vlan_tci), skb->data at
 * its network header.  The skb may be shared: only read, and cloned.
 */
static int vrdma_raw_tap_rcv(struct sk_buff *skb, struct net_device *ndev,
			     struct packet_type *pt,
			     struct net_device *orig_dev)
{
	struct vrdma_raw *raw = container_of(pt, struct vrdma_raw, tap);
	int off;

	/* Our own frames were offered to the flows when sent. */
	if (skb->pkt_type == PACKET_OUTGOING ||
	    skb->pkt_type == PACKET_LOOPBACK || !skb_mac_header_was_set(skb))
		goto out;
	off = skb_mac_header(skb) - skb->data;
	if (off > 0)
		goto out;
	rcu_read_lock();
	vrdma_raw_steer(raw, skb, off, NULL);
	rcu_read_unlock();
out:
	consume_skb(skb);
	return NET_RX_SUCCESS;
}

/* Caller holds raw->mutex. */
static void vrdma_raw_tap_update(struct vrdma_raw *raw)
{
	bool want = raw->num_flows && !raw->dead;

	lockdep_assert_held(&raw->mutex);
	if (want == raw->tap_on)
		return;
	if (want) {
		raw->tap.type = htons(ETH_P_ALL);
		raw->tap.dev = raw->vdev->ndev;
		raw->tap.func = vrdma_raw_tap_rcv;
		/* Outgoing frames are offered when sent: no copy of each. */
		raw->tap.ignore_outgoing = true;
		dev_add_pack(&raw->tap);
	} else {
		/* Waits until no tap call runs any more. */
		dev_remove_pack(&raw->tap);
	}
	raw->tap_on = want;
}

/*
 * Check the specs of @attr and copy them into @flow.  ib_core built them
 * (its sizes, its types); still, nothing is read beyond @attr->size.
 */
static int vrdma_flow_specs(struct vrdma_dev *vdev, struct vrdma_flow *flow,
			    const struct ib_flow_attr *attr)
{
	const u8 *p = (const u8 *)attr->flows;
	size_t left, hdr = offsetofend(union ib_flow_spec, size);
	u32 i;

	if (attr->size < sizeof(*attr))
		return -EINVAL;
	left = attr->size - sizeof(*attr);
	for (i = 0; i < attr->num_of_specs; i++) {
		const union ib_flow_spec *s = (const void *)p;
		size_t want;

		if (left < hdr || s->size < hdr || s->size > left)
			return -EINVAL;
		switch (s->type) {
		case IB_FLOW_SPEC_ETH:
			want = sizeof(struct ib_flow_spec_eth);
			break;
		case IB_FLOW_SPEC_IPV4:
			want = sizeof(struct ib_flow_spec_ipv4);
			break;
		case IB_FLOW_SPEC_IPV6:
			want = sizeof(struct ib_flow_spec_ipv6);
			break;
		case IB_FLOW_SPEC_TCP:
		case IB_FLOW_SPEC_UDP:
			want = sizeof(struct ib_flow_spec_tcp_udp);
			break;
		default:
			/* Inner headers, tunnels, actions... */
			ibdev_dbg(&vdev->ibdev, "create_flow: spec type %#x\n",
				  s->type);
			return -EOPNOTSUPP;
		}
		if (s->size != want)
			return -EINVAL;
		memcpy(&flow->specs[i], s, want);
		p += s->size;
		left -= s->size;
	}
	return left ? -EINVAL : 0;
}

/**
 * vrdma_create_flow() - steer frames to a raw packet QP
 *	(ib_device_ops.create_flow)
 * @ibqp: the QP; a raw packet QP
 * @attr: the flow: type, port and specs, as ib_core built them from the
 *	request (ib_core checked CAP_NET_RAW)
 * @udata: the request, struct vrdma_uverbs_req (vrdma_udata_check())
 *
 * Context: process.
 * Return: the flow, or ERR_PTR(-EINVAL) for a QP of another type, a bad
 * port or malformed specs, -EOPNOTSUPP for spec types, flow types and
 * flags not implemented, -ENOMEM past VRDMA_MAX_FLOWS, -ENODEV once the
 * netdev is going away.
 */
struct ib_flow *vrdma_create_flow(struct ib_qp *ibqp, struct ib_flow_attr *attr,
				  struct ib_udata *udata)
{
	struct vrdma_qp *qp = to_vqp(ibqp);
	struct vrdma_dev *vdev = qp->vdev;
	struct vrdma_raw *raw = vdev->raw;
	struct vrdma_flow *flow, *f, *after = NULL;
	int ret;

	ret = vrdma_udata_check(ibqp->device, udata, __func__);
	if (ret)
		return ERR_PTR(ret);
	if (ibqp->qp_type != IB_QPT_RAW_PACKET || attr->port != VRDMA_PORT)
		return ERR_PTR(-EINVAL);
	if (attr->flags)
		return ERR_PTR(-EOPNOTSUPP);
	switch (attr->type) {
	case IB_FLOW_ATTR_NORMAL:
		break;
	case IB_FLOW_ATTR_SNIFFER:
	case IB_FLOW_ATTR_ALL_DEFAULT:
	case IB_FLOW_ATTR_MC_DEFAULT:
		/* All frames, or those nobody else takes: no specs. */
		if (attr->num_of_specs)
			return ERR_PTR(-EINVAL);
		break;
	default:
		return ERR_PTR(-EOPNOTSUPP);
	}

	flow = kzalloc(struct_size(flow, specs, attr->num_of_specs),
		       VRDMA_GFP_USER);
	if (!flow)
		return ERR_PTR(-ENOMEM);
	flow->qp = qp;
	flow->type = attr->type;
	flow->num_specs = attr->num_of_specs;
	ret = vrdma_flow_specs(vdev, flow, attr);
	if (ret)
		goto err;

	mutex_lock(&raw->mutex);
	ret = -ENODEV;
	if (raw->dead)
		goto err_unlock;
	ret = -ENOMEM;
	if (raw->num_flows >= VRDMA_MAX_FLOWS)
		goto err_unlock;
	/* Next to the QP's other flows (vrdma_raw_steer()). */
	list_for_each_entry(f, &raw->flows, list)
		if (f->qp == qp)
			after = f;
	if (after)
		list_add_rcu(&flow->list, &after->list);
	else
		list_add_tail_rcu(&flow->list, &raw->flows);
	flow->linked = true;
	raw->num_flows++;
	if (flow->type == IB_FLOW_ATTR_ALL_DEFAULT ||
	    flow->type == IB_FLOW_ATTR_MC_DEFAULT)
		WRITE_ONCE(raw->num_defaults, raw->num_defaults + 1);
	WRITE_ONCE(qp->raw_flows, true);
	vrdma_raw_tap_update(raw);
	mutex_unlock(&raw->mutex);
	return &flow->ibflow;

err_unlock:
	mutex_unlock(&raw->mutex);
err:
	kfree(flow);
	return ERR_PTR(ret);
}

/* Take @flow off the list; raw->mutex held. */
static void vrdma_flow_unlink(struct vrdma_raw *raw, struct vrdma_flow *flow)
{
	lockdep_assert_held(&raw->mutex);
	if (!flow->linked)
		return;
	list_del_rcu(&flow->list);
	flow->linked = false;
	raw->num_flows--;
	if (flow->type == IB_FLOW_ATTR_ALL_DEFAULT ||
	    flow->type == IB_FLOW_ATTR_MC_DEFAULT)
		WRITE_ONCE(raw->num_defaults, raw->num_defaults - 1);
}

/**
 * vrdma_destroy_flow() - stop steering a flow's frames
 *	(ib_device_ops.destroy_flow)
 * @ibflow: the flow
 *
 * The last flow of the device takes the tap away.  The flow is freed
 * after the readers that may still look at it.
 *
 * Context: process.
 * Return: 0
 */
int vrdma_destroy_flow(struct ib_flow *ibflow)
{
	struct vrdma_flow *flow = to_vflow(ibflow);
	struct vrdma_raw *raw = flow->qp->vdev->raw;

	mutex_lock(&raw->mutex);
	vrdma_flow_unlink(raw, flow);
	vrdma_raw_tap_update(raw);
	mutex_unlock(&raw->mutex);
	kfree_rcu(flow, rcu);
	return 0;
}

/**
 * vrdma_raw_qp_destroy() - no flow may reach a raw QP being destroyed
 * @qp: the QP
 *
 * ib_core destroys a QP's flows before the QP (a flow holds the QP's
 * usecnt), so this normally finds none; any it finds are taken off the
 * list (their destroy_flow only frees them).  A reader may still hold a
 * flow of the QP it found before: after a grace period none does, and
 * nothing can reach the QP's memory through a flow.
 *
 * Context: process, may sleep.
 */
void vrdma_raw_qp_destroy(struct vrdma_qp *qp)
{
	struct vrdma_raw *raw = qp->vdev->raw;
	struct vrdma_flow *f, *next;

	if (qp->ibqp.qp_type != IB_QPT_RAW_PACKET || !qp->raw_flows)
		return;
	mutex_lock(&raw->mutex);
	list_for_each_entry_safe(f, next, &raw->flows, list)
		if (f->qp == qp)
			vrdma_flow_unlink(raw, f);
	vrdma_raw_tap_update(raw);
	mutex_unlock(&raw->mutex);
	synchronize_rcu();
}

/* A local copy goes where a NIC's switch sends it: multicast and to us. */
static bool vrdma_raw_loops(struct vrdma_dev *vdev, const u8 *dst, bool *own)
{
	*own = ether_addr_equal(dst, vdev->ndev->dev_addr);
	return *own || is_multicast_ether_addr(dst);
}

/**
 * vrdma_raw_send() - send the frame of a raw packet QP's SEND WQE
 * @qp: the QP, engines owned, mutex held
 * @swqe: the WQE at qp->req.cur, checked
 *
 * A WQE that cannot be sent -- too short or too long a frame, an MR gone
 * since it was checked -- gets its status set and is completed by the
 * caller, as a UD WQE (ud.c); nothing is sent then.
 *
 * Return: 0, or -ENOMEM when no skb could be allocated (retried later).
 */
int vrdma_raw_send(struct vrdma_qp *qp, struct vrdma_swqe *swqe)
{
	struct vrdma_dev *vdev = qp->vdev;
	struct net_device *ndev = vdev->ndev;
	u32 len = swqe->length, max = READ_ONCE(ndev->mtu) + ETH_HLEN;
	u32 psn = qp->req.psn;
	struct sk_buff *skb;
	struct ethhdr *eth;
	bool own = false, tagged;
	int err;

	vrdma_qp_assert_locked(qp);

	if (len < ETH_HLEN || len > max + VLAN_HLEN) {
		swqe->status = IB_WC_LOC_LEN_ERR;
		return 0;
	}
	skb = alloc_skb(LL_RESERVED_SPACE(ndev) + len,
			GFP_ATOMIC | __GFP_NOWARN);
	if (!skb) {
		vrdma_count(vdev, VRDMA_CNT_TX_ERR);
		return -ENOMEM;
	}
	skb_reserve(skb, LL_RESERVED_SPACE(ndev));
	if (vrdma_swqe_gather(qp, swqe->wqe, 0, skb_put(skb, len), len)) {
		kfree_skb(skb);
		swqe->status = IB_WC_LOC_PROT_ERR;
		return 0;
	}
	skb_reset_mac_header(skb);
	eth = eth_hdr(skb);
	/* Beyond the MTU only by a VLAN tag's 4 bytes. */
	tagged = eth_type_vlan(eth->h_proto) && len >= VLAN_ETH_HLEN;
	if (len > max && !tagged) {
		kfree_skb(skb);
		swqe->status = IB_WC_LOC_LEN_ERR;
		return 0;
	}
	/* As eth_type_trans() would say, the frame left where it is. */
	skb->protocol = eth_proto_is_802_3(eth->h_proto) ? eth->h_proto :
			htons(ETH_P_802_3);
	skb_set_network_header(skb, tagged ? VLAN_ETH_HLEN : ETH_HLEN);
	skb->dev = ndev;

	vrdma_req_datagram_sent(qp, swqe, psn);

	vrdma_count(vdev, VRDMA_CNT_RAW_SENT_PKTS);
	vrdma_count_add(vdev, VRDMA_CNT_RAW_SENT_BYTES, len);
	if (vrdma_raw_loops(vdev, eth->h_dest, &own)) {
		rcu_read_lock();
		vrdma_raw_steer(vdev->raw, skb, 0, qp);
		rcu_read_unlock();
	}
	/* To ourselves only: the wire would bring it back to nobody. */
	if (own) {
		consume_skb(skb);
		return 0;
	}
	/* net_xmit_eval() evaluates its argument twice. */
	err = dev_queue_xmit(skb);
	if (net_xmit_eval(err))
		vrdma_count(vdev, VRDMA_CNT_TX_ERR);
	return 0;
}

/* Complete the receive WQE in use; an error puts the QP in error. */
static void vrdma_raw_complete(struct vrdma_qp *qp, struct vrdma_cqe *cqe)
{
	cqe->wr_id = qp->rwqe.wqe->wr_id;
	cqe->opcode = IB_WC_RECV;
	cqe->qp_num = qp->ibqp.qp_num;
	qp->rwqe.valid = false;
	if (vrdma_cq_post(qp->rcq, cqe, false))
		vrdma_qp_error(qp, IB_EVENT_QP_FATAL);
	else if (cqe->status != IB_WC_SUCCESS)
		vrdma_qp_error(qp, 0);
}

/**
 * vrdma_raw_place() - copy a frame into the SGL of a receive WQE
 * @vdev: the device
 * @pd: the PD the WQE's SGEs are checked against
 * @wqe: the kernel's copy of the WQE, checked; its SGEs hold the frame
 * @skb: the frame, at its MAC header
 *
 * Return: 0, or the error of the copy (an SGE not writable).
 */
int vrdma_raw_place(struct vrdma_dev *vdev, struct vrdma_pd *pd,
		    const struct vrdma_recv_wqe *wqe, struct sk_buff *skb)
{
	const struct vrdma_sge *sge = wqe->sge;
	u32 n = wqe->num_sge;
	u8 tag[VLAN_HLEN];
	int ret;

	if (!skb_vlan_tag_present(skb))
		return vrdma_sgl_copy_from_skb(vdev, pd, sge, n, 0, skb, 0,
					       skb->len);
	/* The tag the stack took out goes back after the MACs. */
	vrdma_raw_tag(skb, tag);
	ret = vrdma_sgl_copy_from_skb(vdev, pd, sge, n, 0, skb, 0,
				      2 * ETH_ALEN);
	if (!ret)
		ret = vrdma_sgl_copy(vdev, pd, sge, n, 2 * ETH_ALEN, tag,
				     VLAN_HLEN, true);
	if (!ret)
		ret = vrdma_sgl_copy_from_skb(vdev, pd, sge, n,
					      2 * ETH_ALEN + VLAN_HLEN, skb,
					      2 * ETH_ALEN,
					      skb->len - 2 * ETH_ALEN);
	return ret;
}

/**
 * vrdma_raw_responder() - place one frame steered to a raw packet QP
 * @qp: the QP, engines owned, mutex held
 * @skb: the frame, from its MAC header on (vrdma_raw_queue()); consumed
 *
 * Into the next receive WQE, whole: a buffer too small for it, or not
 * writable, is a local error (IB_WC_LOC_LEN_ERR, IB_WC_LOC_PROT_ERR) that
 * puts the QP in error, as for UD.  Without a receive WQE the frame is
 * dropped and counted (raw_dropped).  An RSS QP places it into the WQ its
 * hash picks (vrdma_rss_rcv()).
 */
void vrdma_raw_responder(struct vrdma_qp *qp, struct sk_buff *skb)
{
	struct vrdma_rwqe *rw = &qp->rwqe;
	struct vrdma_cqe cqe = {};
	u32 len = vrdma_raw_frame_len(skb, 0);

	vrdma_qp_assert_locked(qp);

	/* Only raw.c queues to a raw QP, and only frames. */
	if (WARN_ON_ONCE(!(vrdma_pkt(skb)->mask & VRDMA_OPF_RAW)))
		goto out;
	if (qp->rss) {
		vrdma_rss_rcv(qp, skb);
		goto out;
	}
	if (!vrdma_qp_receives(qp) ||
	    (!rw->valid && !vrdma_take_rwqe(qp))) {
		vrdma_count(qp->vdev, VRDMA_CNT_RAW_DROPPED);
		goto out;
	}
	if (len > rw->length) {
		cqe.status = IB_WC_LOC_LEN_ERR;
	} else if (vrdma_raw_place(qp->vdev, rw->pd, rw->wqe, skb)) {
		cqe.status = IB_WC_LOC_PROT_ERR;
	} else {
		cqe.status = IB_WC_SUCCESS;
		cqe.byte_len = len;
		vrdma_count(qp->vdev, VRDMA_CNT_RAW_RCVD_PKTS);
		vrdma_count_add(qp->vdev, VRDMA_CNT_RAW_RCVD_BYTES, len);
	}
	vrdma_raw_complete(qp, &cqe);
out:
	consume_skb(skb);
}

/**
 * vrdma_raw_netdev_gone() - the bound netdev is being unregistered
 * @vdev: the device
 *
 * The tap goes at once (the device follows, queued: its flows are
 * destroyed then); no new one is made.
 *
 * Context: process, RTNL held.
 */
void vrdma_raw_netdev_gone(struct vrdma_dev *vdev)
{
	struct vrdma_raw *raw = vdev->raw;

	mutex_lock(&raw->mutex);
	raw->dead = true;
	vrdma_raw_tap_update(raw);
	mutex_unlock(&raw->mutex);
}

/**
 * vrdma_raw_dev_init() - a device's (empty) set of flows
 * @vdev: the device being created
 *
 * Return: 0 or -ENOMEM.
 */
int vrdma_raw_dev_init(struct vrdma_dev *vdev)
{
	struct vrdma_raw *raw;

	raw = kzalloc(sizeof(*raw), GFP_KERNEL);
	if (!raw)
		return -ENOMEM;
	raw->vdev = vdev;
	mutex_init(&raw->mutex);
	INIT_LIST_HEAD(&raw->flows);
	vdev->raw = raw;
	return 0;
}

/**
 * vrdma_raw_dev_fini() - free a device's flows
 * @vdev: the device, unregistered: its flows are destroyed, and with the
 *	last one the tap
 */
void vrdma_raw_dev_fini(struct vrdma_dev *vdev)
{
	struct vrdma_raw *raw = vdev->raw;

	if (!raw)
		return;
	mutex_lock(&raw->mutex);
	WARN_ON(!list_empty(&raw->flows));
	raw->dead = true;
	vrdma_raw_tap_update(raw);
	mutex_unlock(&raw->mutex);
	mutex_destroy(&raw->mutex);
	kfree(raw);
	vdev->raw = NULL;
}
