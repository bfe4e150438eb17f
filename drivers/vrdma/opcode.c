// SPDX-License-Identifier: GPL-2.0
/*
 * What each BTH opcode carries and means.
 *
 * The receive path looks an incoming opcode up here before it trusts
 * anything else in the packet: an opcode whose mask is 0 is one vrdma does
 * not implement (RD, CNP, vendor opcodes) and the packet is dropped.  The
 * senders use the same table to size their headers, so both directions
 * agree on the layout by construction.
 *
 * The header length of an opcode is not written by hand: VRDMA_HDR_LEN()
 * adds up the extension headers its mask names, in the order of
 * vrdma_ext_offset(), so the two cannot disagree.
 */
#include <rdma/ib_pack.h>

#include "pkt.h"

#define VRDMA_HDR_LEN(mask)						\
	(sizeof(struct vrdma_bth) +					\
	 ((mask) & VRDMA_OPF_DETH ? sizeof(struct vrdma_deth) : 0) +	\
	 ((mask) & VRDMA_OPF_RETH ? sizeof(struct vrdma_reth) : 0) +	\
	 ((mask) & VRDMA_OPF_ATMETH ? sizeof(struct vrdma_atmeth) : 0) + \
	 ((mask) & VRDMA_OPF_AETH ? sizeof(struct vrdma_aeth) : 0) +	\
	 ((mask) & VRDMA_OPF_ATMACK ? sizeof(struct vrdma_atmack) : 0) + \
	 ((mask) & VRDMA_OPF_IMMDT ? sizeof(struct vrdma_immdt) : 0) +	\
	 ((mask) & VRDMA_OPF_IETH ? sizeof(struct vrdma_ieth) : 0))

/* One table entry: the name is the opcode's own, without IB_OPCODE_. */
#define VRDMA_OP(op, m)							\
	[IB_OPCODE_##op] = {						\
		.name = #op,						\
		.mask = (m),						\
		.hdr_len = VRDMA_HDR_LEN(m),				\
	}

/* Packet positions within a message; a single packet is all three. */
#define P_FIRST		VRDMA_OPF_FIRST
#define P_MIDDLE	VRDMA_OPF_MIDDLE
#define P_LAST		VRDMA_OPF_LAST
#define P_ONLY		(VRDMA_OPF_FIRST | VRDMA_OPF_LAST | VRDMA_OPF_ONLY)

#define T_RC		VRDMA_OPF_RC
#define T_UC		VRDMA_OPF_UC
#define T_UD		VRDMA_OPF_UD

/* What the operations carry, without their position and transport. */
#define SEND_REQ	(VRDMA_OPF_REQ | VRDMA_OPF_SEND | VRDMA_OPF_PAYLOAD)
#define WRITE_REQ	(VRDMA_OPF_REQ | VRDMA_OPF_WRITE | VRDMA_OPF_PAYLOAD)
#define READ_REQ	(VRDMA_OPF_REQ | VRDMA_OPF_READ | VRDMA_OPF_RETH)
#define READ_RESP	(VRDMA_OPF_RESP | VRDMA_OPF_READ | VRDMA_OPF_PAYLOAD)
#define ATOMIC_REQ	(VRDMA_OPF_REQ | VRDMA_OPF_ATOMIC | VRDMA_OPF_ATMETH)
#define ACK_RESP	(VRDMA_OPF_RESP | VRDMA_OPF_ACK | VRDMA_OPF_AETH)

/*
 * The SEND and RDMA WRITE opcodes are the same for RC and UC (UC only has
 * no responses), so they are listed once, for transport @tr and mask @t.
 * The last packet of a SEND, and an RDMA WRITE with immediate, consume a
 * receive WQE (COMP).
 */
#define VRDMA_SEND_WRITE_OPS(tr, t)					\
	VRDMA_OP(tr##_SEND_FIRST, t | SEND_REQ | P_FIRST),		\
	VRDMA_OP(tr##_SEND_MIDDLE, t | SEND_REQ | P_MIDDLE),		\
	VRDMA_OP(tr##_SEND_LAST,					\
		 t | SEND_REQ | P_LAST | VRDMA_OPF_COMP),		\
	VRDMA_OP(tr##_SEND_LAST_WITH_IMMEDIATE,				\
		 t | SEND_REQ | P_LAST | VRDMA_OPF_COMP | VRDMA_OPF_IMMDT), \
	VRDMA_OP(tr##_SEND_ONLY,					\
		 t | SEND_REQ | P_ONLY | VRDMA_OPF_COMP),		\
	VRDMA_OP(tr##_SEND_ONLY_WITH_IMMEDIATE,				\
		 t | SEND_REQ | P_ONLY | VRDMA_OPF_COMP | VRDMA_OPF_IMMDT), \
	VRDMA_OP(tr##_RDMA_WRITE_FIRST,					\
		 t | WRITE_REQ | P_FIRST | VRDMA_OPF_RETH),		\
	VRDMA_OP(tr##_RDMA_WRITE_MIDDLE, t | WRITE_REQ | P_MIDDLE),	\
	VRDMA_OP(tr##_RDMA_WRITE_LAST, t | WRITE_REQ | P_LAST),		\
	VRDMA_OP(tr##_RDMA_WRITE_LAST_WITH_IMMEDIATE,			\
		 t | WRITE_REQ | P_LAST | VRDMA_OPF_COMP | VRDMA_OPF_IMMDT), \
	VRDMA_OP(tr##_RDMA_WRITE_ONLY,					\
		 t | WRITE_REQ | P_ONLY | VRDMA_OPF_RETH),		\
	VRDMA_OP(tr##_RDMA_WRITE_ONLY_WITH_IMMEDIATE,			\
		 t | WRITE_REQ | P_ONLY | VRDMA_OPF_COMP | VRDMA_OPF_RETH | \
		 VRDMA_OPF_IMMDT)

const struct vrdma_opcode_info vrdma_opcode[256] = {
	VRDMA_SEND_WRITE_OPS(RC, T_RC),
	VRDMA_OP(RC_SEND_LAST_WITH_INVALIDATE,
		 T_RC | SEND_REQ | P_LAST | VRDMA_OPF_COMP | VRDMA_OPF_IETH),
	VRDMA_OP(RC_SEND_ONLY_WITH_INVALIDATE,
		 T_RC | SEND_REQ | P_ONLY | VRDMA_OPF_COMP | VRDMA_OPF_IETH),

	/* One request asks for the whole read; the responses carry it. */
	VRDMA_OP(RC_RDMA_READ_REQUEST, T_RC | READ_REQ | P_ONLY),
	/* Middle responses carry no AETH: only the ends are acknowledged. */
	VRDMA_OP(RC_RDMA_READ_RESPONSE_FIRST,
		 T_RC | READ_RESP | P_FIRST | VRDMA_OPF_AETH),
	VRDMA_OP(RC_RDMA_READ_RESPONSE_MIDDLE, T_RC | READ_RESP | P_MIDDLE),
	VRDMA_OP(RC_RDMA_READ_RESPONSE_LAST,
		 T_RC | READ_RESP | P_LAST | VRDMA_OPF_AETH),
	VRDMA_OP(RC_RDMA_READ_RESPONSE_ONLY,
		 T_RC | READ_RESP | P_ONLY | VRDMA_OPF_AETH),

	VRDMA_OP(RC_ACKNOWLEDGE, T_RC | ACK_RESP | P_ONLY),
	VRDMA_OP(RC_ATOMIC_ACKNOWLEDGE,
		 T_RC | ACK_RESP | P_ONLY | VRDMA_OPF_ATOMIC | VRDMA_OPF_ATMACK),
	VRDMA_OP(RC_COMPARE_SWAP, T_RC | ATOMIC_REQ | P_ONLY),
	VRDMA_OP(RC_FETCH_ADD, T_RC | ATOMIC_REQ | P_ONLY),

	VRDMA_SEND_WRITE_OPS(UC, T_UC),

	/* UD messages are single packets; the DETH names the sender. */
	VRDMA_OP(UD_SEND_ONLY,
		 T_UD | SEND_REQ | P_ONLY | VRDMA_OPF_COMP | VRDMA_OPF_DETH),
	VRDMA_OP(UD_SEND_ONLY_WITH_IMMEDIATE,
		 T_UD | SEND_REQ | P_ONLY | VRDMA_OPF_COMP | VRDMA_OPF_DETH |
		 VRDMA_OPF_IMMDT),
};
