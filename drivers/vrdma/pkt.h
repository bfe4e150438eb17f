/* SPDX-License-Identifier: GPL-2.0 */
/*
 * RoCEv2 packet formats.
 *
 * On the wire a vrdma packet is
 *
 *   Ethernet | IPv4 or IPv6 | UDP (dst 4791) | BTH | ext. headers | payload
 *   | pad | ICRC
 *
 * The BTH (base transport header) names the opcode, the destination QP and
 * the PSN; the opcode decides which extension headers follow (RETH for
 * RDMA, AETH for ACKs, ImmDt, IETH, AtomicETH, AtomicAckETH, DETH for UD,
 * XRCETH for XRC requests).
 * Payloads are padded to 4 bytes; the pad count is in the BTH.  The ICRC is
 * a CRC32 over the whole packet from the IP header on, with the fields
 * routers may change masked out (icrc.c).
 *
 * All fields are big endian; the structs below are the exact wire layout.
 */
#ifndef VRDMA_PKT_H
#define VRDMA_PKT_H

#include <linux/skbuff.h>
#include <rdma/ib_pack.h>

#include "vrdma.h"

#define VRDMA_ICRC_SIZE		4
#define VRDMA_UDP_PORT		4791	/* ROCE_V2_UDP_DPORT */

/*
 * The RC opcodes of the memory placement extensions (IBA annex A19), which
 * ib_pack.h names only from Linux 6.2 on.
 */
#define VRDMA_OPCODE_RC_FLUSH		0x1c
#define VRDMA_OPCODE_RC_ATOMIC_WRITE	0x1d

/*
 * Masked atomics (IB_WR_MASKED_ATOMIC_*), which the IBA does not define:
 * two opcodes of the manufacturer-specific range (0xc0-0xff), RC only,
 * with a MaskedAtomicETH after the AtomicETH, answered by an ATOMIC
 * ACKNOWLEDGE.  Only vrdma understands them; rdma_rxe and IBA responders
 * drop them.  A masked atomic whose masks make it the plain operation
 * goes as the IBA's COMPARE SWAP or FETCH ADD, which every responder
 * understands.
 */
#define VRDMA_OPCODE_RC_MASKED_COMPARE_SWAP	0xc0
#define VRDMA_OPCODE_RC_MASKED_FETCH_ADD	0xc1

/*
 * The XRC transport's opcodes are RC's with this prefix (IBA 9.2, table
 * 38), which ib_pack.h does not name.  The receive path hands the engines
 * the RC opcode (vrdma_pkt.opcode) and the VRDMA_OPF_XRC flag.
 */
#define VRDMA_OPCODE_XRC		0xa0

/* Base transport header, 12 bytes */
struct vrdma_bth {
	u8 opcode;
	u8 flags;		/* SE | M | PadCnt(2) | TVer(4) */
	__be16 pkey;
	__be32 qpn;		/* FECN | BECN | resv6 | DestQP(24) */
	__be32 apsn;		/* AckReq | resv7 | PSN(24) */
};

#define VRDMA_BTH_SE		0x80
#define VRDMA_BTH_MIG		0x40
#define VRDMA_BTH_PAD_SHIFT	4
#define VRDMA_BTH_PAD_MASK	0x30
#define VRDMA_BTH_QPN_MASK	0x00ffffff
#define VRDMA_BTH_ACKREQ	0x80000000
#define VRDMA_BTH_PSN_MASK	0x00ffffff

/* RDMA extended transport header, 16 bytes */
struct vrdma_reth {
	__be64 va;
	__be32 rkey;
	__be32 len;
} __packed;

/* ACK extended transport header: syndrome(8) | MSN(24) */
struct vrdma_aeth {
	__be32 smsn;
};

#define VRDMA_AETH_MSN_MASK	0x00ffffff
#define VRDMA_AETH_SYN_SHIFT	24

/* AETH syndromes (IBA 9.7.5.2.1): the top bits say ACK, RNR NAK or NAK. */
enum vrdma_aeth_syndrome {
	VRDMA_SYN_ACK		= 0x00,	/* | credit count (5 bits) */
	VRDMA_SYN_RNR_NAK	= 0x20,	/* | RNR timer (5 bits) */
	VRDMA_SYN_NAK		= 0x60,	/* | NAK code */
	VRDMA_SYN_TYPE_MASK	= 0x60,
};

enum vrdma_nak_code {
	VRDMA_NAK_PSN_SEQ_ERR	= 0,
	VRDMA_NAK_INVALID_REQ	= 1,
	VRDMA_NAK_REM_ACCESS	= 2,
	VRDMA_NAK_REM_OP_ERR	= 3,
	VRDMA_NAK_INV_RD_REQ	= 4,
};

/* Credit count meaning "no flow control credits are advertised". */
#define VRDMA_AETH_NO_CREDIT	0x1f
/* The low 5 bits of a syndrome: credits, RNR timer or NAK code. */
#define VRDMA_SYN_VALUE_MASK	0x1f

/* The AETH field of @syndrome and @msn, in network order. */
static inline __be32 vrdma_aeth_smsn(u8 syndrome, u32 msn)
{
	return cpu_to_be32((u32)syndrome << VRDMA_AETH_SYN_SHIFT |
			   (msn & VRDMA_AETH_MSN_MASK));
}

/*
 * FLUSH extended transport header: the selectivity level (bits 5-4: a
 * range, or the whole MR) and the placement type (bits 3-0: global
 * visibility, persistence), enum vrdma_flush_level and vrdma_flush_type.
 */
struct vrdma_feth {
	__be32 bits;
};

#define VRDMA_FETH_PLT_MASK	0x0000000f
#define VRDMA_FETH_SEL_MASK	0x00000030
#define VRDMA_FETH_SEL_SHIFT	4

/* Atomic extended transport header, 28 bytes */
struct vrdma_atmeth {
	__be64 va;
	__be32 rkey;
	__be64 swap_add;
	__be64 comp;
} __packed;

/*
 * Masked atomic extended transport header (vrdma's), 16 bytes: the masks of
 * struct vrdma_atomic_masks, in the order of the AtomicETH's operands.
 */
struct vrdma_atmmask {
	__be64 swap_add_mask;
	__be64 comp_mask;
} __packed;

/* Atomic ACK extended transport header: the original value */
struct vrdma_atmack {
	__be64 orig;
} __packed;

/* Immediate data */
struct vrdma_immdt {
	__be32 imm;
};

/* Invalidate extended transport header */
struct vrdma_ieth {
	__be32 rkey;
};

/* Datagram extended transport header (UD) */
struct vrdma_deth {
	__be32 qkey;
	__be32 sqp;		/* resv8 | SrcQP(24) */
};

/* XRC extended transport header: the SRQ at the target that takes it */
struct vrdma_xrceth {
	__be32 srqn;		/* resv8 | XRCSRQ(24) */
};

#define VRDMA_XRCETH_SRQN_MASK	0x00ffffff

/* What an opcode carries and means: vrdma_opcode[opcode].mask */
enum vrdma_opcode_flags {
	VRDMA_OPF_RETH		= BIT(0),
	VRDMA_OPF_AETH		= BIT(1),
	VRDMA_OPF_ATMETH	= BIT(2),
	VRDMA_OPF_ATMACK	= BIT(3),
	VRDMA_OPF_IMMDT		= BIT(4),
	VRDMA_OPF_IETH		= BIT(5),
	VRDMA_OPF_DETH		= BIT(6),
	VRDMA_OPF_PAYLOAD	= BIT(7),	/* may carry payload */
	VRDMA_OPF_REQ		= BIT(8),	/* requester -> responder */
	VRDMA_OPF_RESP		= BIT(9),	/* responder -> requester */
	VRDMA_OPF_SEND		= BIT(10),
	VRDMA_OPF_WRITE		= BIT(11),
	VRDMA_OPF_READ		= BIT(12),
	VRDMA_OPF_ATOMIC	= BIT(13),
	VRDMA_OPF_FIRST		= BIT(14),
	VRDMA_OPF_MIDDLE	= BIT(15),
	VRDMA_OPF_LAST		= BIT(16),	/* also set for ONLY */
	VRDMA_OPF_RC		= BIT(17),
	VRDMA_OPF_UC		= BIT(18),
	VRDMA_OPF_UD		= BIT(19),
	VRDMA_OPF_FETH		= BIT(20),
	VRDMA_OPF_FLUSH		= BIT(21),
	VRDMA_OPF_ATOMIC_WRITE	= BIT(22),
	VRDMA_OPF_XRC		= BIT(23),	/* the XRC transport */
	VRDMA_OPF_XRCETH	= BIT(24),
	/* not an opcode's: a frame for a raw packet QP (raw.c), no BTH */
	VRDMA_OPF_RAW		= BIT(25),
	VRDMA_OPF_ATMMASK	= BIT(26),	/* MaskedAtomicETH */
};

/**
 * struct vrdma_opcode_info - one BTH opcode
 * @name: for traces, e.g. "RC_SEND_ONLY"
 * @mask: enum vrdma_opcode_flags; 0 for opcodes vrdma does not know
 * @hdr_len: BTH plus extension headers, i.e. where the payload starts
 */
struct vrdma_opcode_info {
	const char *name;
	u32 mask;
	u8 hdr_len;
};

extern const struct vrdma_opcode_info vrdma_opcode[256];

/**
 * struct vrdma_pkt - a packet's parsed BTH, kept in skb->cb
 * @mask: vrdma_opcode[BTH opcode].mask
 * @qpn: destination QP
 * @psn: packet sequence number
 * @paylen: payload bytes, without pad and ICRC
 * @hdr_len: bytes from the BTH to the payload
 * @opcode: BTH opcode; of a received XRC packet, its RC opcode (the BTH's
 *	less VRDMA_OPCODE_XRC), so that the engines compare one set
 * @pad: pad bytes after the payload
 * @se: solicited event requested
 * @ack_req: the requester asks for an ACK of this packet
 *
 * While a packet is handled, skb->data points at its BTH and skb->len
 * covers BTH, extension headers, payload and pad; the ICRC has been checked
 * and trimmed.  The headers are in the linear part; the payload may not be.
 */
struct vrdma_pkt {
	u32 mask;
	u32 qpn;
	u32 psn;
	u32 paylen;
	u16 hdr_len;
	u8 opcode;
	u8 pad;
	bool se;
	bool ack_req;
};

static inline struct vrdma_pkt *vrdma_pkt(struct sk_buff *skb)
{
	BUILD_BUG_ON(sizeof(struct vrdma_pkt) > sizeof(skb->cb));
	return (struct vrdma_pkt *)skb->cb;
}

static inline struct vrdma_bth *vrdma_bth(struct sk_buff *skb)
{
	return (struct vrdma_bth *)skb->data;
}

/*
 * Extension headers follow the BTH in the order of the IBA: DETH, XRCETH,
 * FETH, RETH, AtomicETH (and vrdma's MaskedAtomicETH), AETH, AtomicAckETH,
 * ImmDt, IETH.  Their offsets
 * for an opcode are fixed; vrdma_ext_offset() computes them from the mask.
 */
static inline unsigned int vrdma_ext_offset(u32 mask, u32 which)
{
	unsigned int off = sizeof(struct vrdma_bth);

	if (which == VRDMA_OPF_DETH)
		return off;
	if (mask & VRDMA_OPF_DETH)
		off += sizeof(struct vrdma_deth);
	if (which == VRDMA_OPF_XRCETH)
		return off;
	if (mask & VRDMA_OPF_XRCETH)
		off += sizeof(struct vrdma_xrceth);
	if (which == VRDMA_OPF_FETH)
		return off;
	if (mask & VRDMA_OPF_FETH)
		off += sizeof(struct vrdma_feth);
	if (which == VRDMA_OPF_RETH)
		return off;
	if (mask & VRDMA_OPF_RETH)
		off += sizeof(struct vrdma_reth);
	if (which == VRDMA_OPF_ATMETH)
		return off;
	if (mask & VRDMA_OPF_ATMETH)
		off += sizeof(struct vrdma_atmeth);
	if (which == VRDMA_OPF_ATMMASK)
		return off;
	if (mask & VRDMA_OPF_ATMMASK)
		off += sizeof(struct vrdma_atmmask);
	if (which == VRDMA_OPF_AETH)
		return off;
	if (mask & VRDMA_OPF_AETH)
		off += sizeof(struct vrdma_aeth);
	if (which == VRDMA_OPF_ATMACK)
		return off;
	if (mask & VRDMA_OPF_ATMACK)
		off += sizeof(struct vrdma_atmack);
	if (which == VRDMA_OPF_IMMDT)
		return off;
	if (mask & VRDMA_OPF_IMMDT)
		off += sizeof(struct vrdma_immdt);
	return off;	/* VRDMA_OPF_IETH */
}

/* Pointer to extension header @which of the packet in @skb. */
static inline void *vrdma_ext(struct sk_buff *skb, u32 which)
{
	return skb->data + vrdma_ext_offset(vrdma_pkt(skb)->mask, which);
}

static inline void *vrdma_payload(struct sk_buff *skb)
{
	return skb->data + vrdma_pkt(skb)->hdr_len;
}

/* net.c: building, sending and receiving packets */
struct sk_buff *vrdma_pkt_alloc(struct vrdma_dev *vdev, struct vrdma_av *av,
				u8 opcode, u32 paylen);
struct sk_buff *vrdma_pkt_alloc_hdr(struct vrdma_dev *vdev,
				    struct vrdma_av *av, u8 opcode, u32 paylen,
				    bool linear);
void vrdma_bth_init(struct sk_buff *skb, u32 dest_qpn, u32 psn, bool se,
		    bool ack_req);
int vrdma_pkt_send(struct vrdma_dev *vdev, struct vrdma_av *av,
		   struct vrdma_txq *txq, struct sk_buff *skb);
int vrdma_ip_send(struct vrdma_dev *vdev, struct sk_buff *skb);

/* txq.c: a QP's packets leave in order, whichever CPU sends them */
int vrdma_txq_xmit(struct vrdma_txq *q, struct sk_buff *skb);

/* icrc.c */
u32 vrdma_icrc(struct sk_buff *skb, unsigned int len);
bool vrdma_icrc_rxe_flush(struct sk_buff *skb, unsigned int hdr_len,
			  u32 icrc, u32 wire);

#endif /* VRDMA_PKT_H */
