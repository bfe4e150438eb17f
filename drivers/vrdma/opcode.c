// SPDX-License-Identifier: GPL-2.0
/*
 * What each BTH opcode carries and means.
 *
 * The receive path looks an incoming opcode up here before it trusts
 * anything else in the packet: an opcode whose mask is 0 is one vrdma does
 * not implement (RD, CNP, vendor opcodes but its own two) and the packet
 * is dropped.  The
 * senders size their headers from the same table, so both directions agree
 * on the layout.
 *
 * Each entry names the extension headers twice, once as mask flags and once
 * in the header length; they must agree with each other and with the order
 * of vrdma_ext_offset() (DETH, XRCETH, FETH, RETH, AtomicETH,
 * MaskedAtomicETH, AETH, AtomicAckETH, ImmDt, IETH), which the order of the
 * terms below follows.
 */
#include <rdma/ib_pack.h>

#include "pkt.h"

#define VRDMA_OP(op, m, len)						\
	[IB_OPCODE_##op] = {						\
		.name = #op,						\
		.mask = (m),						\
		.hdr_len = (len),					\
	}

/* Header lengths */
#define BTH		sizeof(struct vrdma_bth)
#define DETH		sizeof(struct vrdma_deth)
#define XRCETH		sizeof(struct vrdma_xrceth)
#define FETH		sizeof(struct vrdma_feth)
#define RETH		sizeof(struct vrdma_reth)
#define ATMETH		sizeof(struct vrdma_atmeth)
#define ATMMASK		sizeof(struct vrdma_atmmask)
#define AETH		sizeof(struct vrdma_aeth)
#define ATMACK		sizeof(struct vrdma_atmack)
#define IMMDT		sizeof(struct vrdma_immdt)
#define IETH		sizeof(struct vrdma_ieth)

/* Packet positions within a message; a single packet is all three. */
#define P_FIRST		VRDMA_OPF_FIRST
#define P_MIDDLE	VRDMA_OPF_MIDDLE
#define P_LAST		VRDMA_OPF_LAST
#define P_ONLY		(VRDMA_OPF_FIRST | VRDMA_OPF_LAST)

/* What the operations are, without position and headers. */
#define RC_SEND		(VRDMA_OPF_RC | VRDMA_OPF_REQ | VRDMA_OPF_SEND | \
			 VRDMA_OPF_PAYLOAD)
#define UC_SEND		(VRDMA_OPF_UC | VRDMA_OPF_REQ | VRDMA_OPF_SEND | \
			 VRDMA_OPF_PAYLOAD)
#define UD_SEND		(VRDMA_OPF_UD | VRDMA_OPF_REQ | VRDMA_OPF_SEND | \
			 VRDMA_OPF_PAYLOAD)
#define RC_WRITE	(VRDMA_OPF_RC | VRDMA_OPF_REQ | VRDMA_OPF_WRITE | \
			 VRDMA_OPF_PAYLOAD)
#define UC_WRITE	(VRDMA_OPF_UC | VRDMA_OPF_REQ | VRDMA_OPF_WRITE | \
			 VRDMA_OPF_PAYLOAD)
#define RC_READ_REQ	(VRDMA_OPF_RC | VRDMA_OPF_REQ | VRDMA_OPF_READ)
#define RC_READ_RESP	(VRDMA_OPF_RC | VRDMA_OPF_RESP | VRDMA_OPF_READ | \
			 VRDMA_OPF_PAYLOAD)
#define RC_ATOMIC_REQ	(VRDMA_OPF_RC | VRDMA_OPF_REQ | VRDMA_OPF_ATOMIC)
#define RC_ACK		(VRDMA_OPF_RC | VRDMA_OPF_RESP)

/*
 * XRC is RC with the SRQ named in every request (XRCETH): the same
 * operations, flagged XRC, at VRDMA_OPCODE_XRC + the RC opcode.
 */
#define VRDMA_XRC_OP(op, m, len)					\
	[VRDMA_OPCODE_XRC + IB_OPCODE_##op] = {				\
		.name = "XRC_" #op,					\
		.mask = (m) | VRDMA_OPF_XRC,				\
		.hdr_len = (len),					\
	}
#define XRC_REQ		(VRDMA_OPF_XRCETH)

const struct vrdma_opcode_info vrdma_opcode[256] = {
	/* RC: SEND */
	VRDMA_OP(RC_SEND_FIRST, RC_SEND | P_FIRST, BTH),
	VRDMA_OP(RC_SEND_MIDDLE, RC_SEND | P_MIDDLE, BTH),
	VRDMA_OP(RC_SEND_LAST, RC_SEND | P_LAST, BTH),
	VRDMA_OP(RC_SEND_LAST_WITH_IMMEDIATE,
		 RC_SEND | P_LAST | VRDMA_OPF_IMMDT, BTH + IMMDT),
	VRDMA_OP(RC_SEND_LAST_WITH_INVALIDATE,
		 RC_SEND | P_LAST | VRDMA_OPF_IETH, BTH + IETH),
	VRDMA_OP(RC_SEND_ONLY, RC_SEND | P_ONLY, BTH),
	VRDMA_OP(RC_SEND_ONLY_WITH_IMMEDIATE,
		 RC_SEND | P_ONLY | VRDMA_OPF_IMMDT, BTH + IMMDT),
	VRDMA_OP(RC_SEND_ONLY_WITH_INVALIDATE,
		 RC_SEND | P_ONLY | VRDMA_OPF_IETH, BTH + IETH),

	/* RC: RDMA WRITE; the first packet says where to */
	VRDMA_OP(RC_RDMA_WRITE_FIRST,
		 RC_WRITE | P_FIRST | VRDMA_OPF_RETH, BTH + RETH),
	VRDMA_OP(RC_RDMA_WRITE_MIDDLE, RC_WRITE | P_MIDDLE, BTH),
	VRDMA_OP(RC_RDMA_WRITE_LAST, RC_WRITE | P_LAST, BTH),
	VRDMA_OP(RC_RDMA_WRITE_LAST_WITH_IMMEDIATE,
		 RC_WRITE | P_LAST | VRDMA_OPF_IMMDT, BTH + IMMDT),
	VRDMA_OP(RC_RDMA_WRITE_ONLY,
		 RC_WRITE | P_ONLY | VRDMA_OPF_RETH, BTH + RETH),
	VRDMA_OP(RC_RDMA_WRITE_ONLY_WITH_IMMEDIATE,
		 RC_WRITE | P_ONLY | VRDMA_OPF_RETH | VRDMA_OPF_IMMDT,
		 BTH + RETH + IMMDT),

	/* RC: RDMA READ; one request asks for it all, responses carry it */
	VRDMA_OP(RC_RDMA_READ_REQUEST,
		 RC_READ_REQ | P_ONLY | VRDMA_OPF_RETH, BTH + RETH),
	/* Middle responses carry no AETH: only the ends are acknowledged. */
	VRDMA_OP(RC_RDMA_READ_RESPONSE_FIRST,
		 RC_READ_RESP | P_FIRST | VRDMA_OPF_AETH, BTH + AETH),
	VRDMA_OP(RC_RDMA_READ_RESPONSE_MIDDLE, RC_READ_RESP | P_MIDDLE, BTH),
	VRDMA_OP(RC_RDMA_READ_RESPONSE_LAST,
		 RC_READ_RESP | P_LAST | VRDMA_OPF_AETH, BTH + AETH),
	VRDMA_OP(RC_RDMA_READ_RESPONSE_ONLY,
		 RC_READ_RESP | P_ONLY | VRDMA_OPF_AETH, BTH + AETH),

	/* RC: atomics and acknowledgements */
	VRDMA_OP(RC_COMPARE_SWAP,
		 RC_ATOMIC_REQ | P_ONLY | VRDMA_OPF_ATMETH, BTH + ATMETH),
	VRDMA_OP(RC_FETCH_ADD,
		 RC_ATOMIC_REQ | P_ONLY | VRDMA_OPF_ATMETH, BTH + ATMETH),
	VRDMA_OP(RC_ACKNOWLEDGE, RC_ACK | P_ONLY | VRDMA_OPF_AETH, BTH + AETH),

	/*
	 * RC: the memory placement extensions.  Each is one packet, answered
	 * by an RDMA READ RESPONSE ONLY without payload; ATOMIC WRITE carries
	 * the 8 bytes it writes, FLUSH nothing.
	 */
	[VRDMA_OPCODE_RC_FLUSH] = {
		.name = "RC_FLUSH",
		.mask = VRDMA_OPF_RC | VRDMA_OPF_REQ | VRDMA_OPF_FLUSH |
			P_ONLY | VRDMA_OPF_FETH | VRDMA_OPF_RETH,
		.hdr_len = BTH + FETH + RETH,
	},
	[VRDMA_OPCODE_RC_ATOMIC_WRITE] = {
		.name = "RC_ATOMIC_WRITE",
		.mask = VRDMA_OPF_RC | VRDMA_OPF_REQ | VRDMA_OPF_ATOMIC_WRITE |
			VRDMA_OPF_PAYLOAD | P_ONLY | VRDMA_OPF_RETH,
		.hdr_len = BTH + RETH,
	},
	VRDMA_OP(RC_ATOMIC_ACKNOWLEDGE,
		 RC_ACK | VRDMA_OPF_ATOMIC | P_ONLY | VRDMA_OPF_AETH |
		 VRDMA_OPF_ATMACK, BTH + AETH + ATMACK),

	/* RC: vrdma's masked atomics, answered as the IBA's atomics */
	[VRDMA_OPCODE_RC_MASKED_COMPARE_SWAP] = {
		.name = "RC_MASKED_COMPARE_SWAP",
		.mask = RC_ATOMIC_REQ | P_ONLY | VRDMA_OPF_ATMETH |
			VRDMA_OPF_ATMMASK,
		.hdr_len = BTH + ATMETH + ATMMASK,
	},
	[VRDMA_OPCODE_RC_MASKED_FETCH_ADD] = {
		.name = "RC_MASKED_FETCH_ADD",
		.mask = RC_ATOMIC_REQ | P_ONLY | VRDMA_OPF_ATMETH |
			VRDMA_OPF_ATMMASK,
		.hdr_len = BTH + ATMETH + ATMMASK,
	},

	/* UC: SEND and RDMA WRITE, as RC but never answered */
	VRDMA_OP(UC_SEND_FIRST, UC_SEND | P_FIRST, BTH),
	VRDMA_OP(UC_SEND_MIDDLE, UC_SEND | P_MIDDLE, BTH),
	VRDMA_OP(UC_SEND_LAST, UC_SEND | P_LAST, BTH),
	VRDMA_OP(UC_SEND_LAST_WITH_IMMEDIATE,
		 UC_SEND | P_LAST | VRDMA_OPF_IMMDT, BTH + IMMDT),
	VRDMA_OP(UC_SEND_ONLY, UC_SEND | P_ONLY, BTH),
	VRDMA_OP(UC_SEND_ONLY_WITH_IMMEDIATE,
		 UC_SEND | P_ONLY | VRDMA_OPF_IMMDT, BTH + IMMDT),
	VRDMA_OP(UC_RDMA_WRITE_FIRST,
		 UC_WRITE | P_FIRST | VRDMA_OPF_RETH, BTH + RETH),
	VRDMA_OP(UC_RDMA_WRITE_MIDDLE, UC_WRITE | P_MIDDLE, BTH),
	VRDMA_OP(UC_RDMA_WRITE_LAST, UC_WRITE | P_LAST, BTH),
	VRDMA_OP(UC_RDMA_WRITE_LAST_WITH_IMMEDIATE,
		 UC_WRITE | P_LAST | VRDMA_OPF_IMMDT, BTH + IMMDT),
	VRDMA_OP(UC_RDMA_WRITE_ONLY,
		 UC_WRITE | P_ONLY | VRDMA_OPF_RETH, BTH + RETH),
	VRDMA_OP(UC_RDMA_WRITE_ONLY_WITH_IMMEDIATE,
		 UC_WRITE | P_ONLY | VRDMA_OPF_RETH | VRDMA_OPF_IMMDT,
		 BTH + RETH + IMMDT),

	/* XRC: requests carry an XRCETH after the BTH, answers do not */
	VRDMA_XRC_OP(SEND_FIRST, RC_SEND | P_FIRST | XRC_REQ, BTH + XRCETH),
	VRDMA_XRC_OP(SEND_MIDDLE, RC_SEND | P_MIDDLE | XRC_REQ, BTH + XRCETH),
	VRDMA_XRC_OP(SEND_LAST, RC_SEND | P_LAST | XRC_REQ, BTH + XRCETH),
	VRDMA_XRC_OP(SEND_LAST_WITH_IMMEDIATE,
		     RC_SEND | P_LAST | XRC_REQ | VRDMA_OPF_IMMDT,
		     BTH + XRCETH + IMMDT),
	VRDMA_XRC_OP(SEND_LAST_WITH_INVALIDATE,
		     RC_SEND | P_LAST | XRC_REQ | VRDMA_OPF_IETH,
		     BTH + XRCETH + IETH),
	VRDMA_XRC_OP(SEND_ONLY, RC_SEND | P_ONLY | XRC_REQ, BTH + XRCETH),
	VRDMA_XRC_OP(SEND_ONLY_WITH_IMMEDIATE,
		     RC_SEND | P_ONLY | XRC_REQ | VRDMA_OPF_IMMDT,
		     BTH + XRCETH + IMMDT),
	VRDMA_XRC_OP(SEND_ONLY_WITH_INVALIDATE,
		     RC_SEND | P_ONLY | XRC_REQ | VRDMA_OPF_IETH,
		     BTH + XRCETH + IETH),
	VRDMA_XRC_OP(RDMA_WRITE_FIRST,
		     RC_WRITE | P_FIRST | XRC_REQ | VRDMA_OPF_RETH,
		     BTH + XRCETH + RETH),
	VRDMA_XRC_OP(RDMA_WRITE_MIDDLE, RC_WRITE | P_MIDDLE | XRC_REQ,
		     BTH + XRCETH),
	VRDMA_XRC_OP(RDMA_WRITE_LAST, RC_WRITE | P_LAST | XRC_REQ,
		     BTH + XRCETH),
	VRDMA_XRC_OP(RDMA_WRITE_LAST_WITH_IMMEDIATE,
		     RC_WRITE | P_LAST | XRC_REQ | VRDMA_OPF_IMMDT,
		     BTH + XRCETH + IMMDT),
	VRDMA_XRC_OP(RDMA_WRITE_ONLY,
		     RC_WRITE | P_ONLY | XRC_REQ | VRDMA_OPF_RETH,
		     BTH + XRCETH + RETH),
	VRDMA_XRC_OP(RDMA_WRITE_ONLY_WITH_IMMEDIATE,
		     RC_WRITE | P_ONLY | XRC_REQ | VRDMA_OPF_RETH |
		     VRDMA_OPF_IMMDT, BTH + XRCETH + RETH + IMMDT),
	VRDMA_XRC_OP(RDMA_READ_REQUEST,
		     RC_READ_REQ | P_ONLY | XRC_REQ | VRDMA_OPF_RETH,
		     BTH + XRCETH + RETH),
	VRDMA_XRC_OP(RDMA_READ_RESPONSE_FIRST,
		     RC_READ_RESP | P_FIRST | VRDMA_OPF_AETH, BTH + AETH),
	VRDMA_XRC_OP(RDMA_READ_RESPONSE_MIDDLE, RC_READ_RESP | P_MIDDLE, BTH),
	VRDMA_XRC_OP(RDMA_READ_RESPONSE_LAST,
		     RC_READ_RESP | P_LAST | VRDMA_OPF_AETH, BTH + AETH),
	VRDMA_XRC_OP(RDMA_READ_RESPONSE_ONLY,
		     RC_READ_RESP | P_ONLY | VRDMA_OPF_AETH, BTH + AETH),
	VRDMA_XRC_OP(COMPARE_SWAP,
		     RC_ATOMIC_REQ | P_ONLY | XRC_REQ | VRDMA_OPF_ATMETH,
		     BTH + XRCETH + ATMETH),
	VRDMA_XRC_OP(FETCH_ADD,
		     RC_ATOMIC_REQ | P_ONLY | XRC_REQ | VRDMA_OPF_ATMETH,
		     BTH + XRCETH + ATMETH),
	VRDMA_XRC_OP(ACKNOWLEDGE, RC_ACK | P_ONLY | VRDMA_OPF_AETH, BTH + AETH),
	VRDMA_XRC_OP(ATOMIC_ACKNOWLEDGE,
		     RC_ACK | VRDMA_OPF_ATOMIC | P_ONLY | VRDMA_OPF_AETH |
		     VRDMA_OPF_ATMACK, BTH + AETH + ATMACK),

	/* UD: single-packet SENDs; the DETH names the sending QP */
	VRDMA_OP(UD_SEND_ONLY,
		 UD_SEND | P_ONLY | VRDMA_OPF_DETH, BTH + DETH),
	VRDMA_OP(UD_SEND_ONLY_WITH_IMMEDIATE,
		 UD_SEND | P_ONLY | VRDMA_OPF_DETH | VRDMA_OPF_IMMDT,
		 BTH + DETH + IMMDT),
};
