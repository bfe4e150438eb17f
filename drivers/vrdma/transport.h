/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The transport's state, apart from the device and verbs objects of
 * vrdma.h: the kernel's copies of WQEs and their progress, the requester's
 * and the responder's state of a QP, the responder resources, and PSN
 * arithmetic.  The engines (requester.c, responder.c, completer.c,
 * loopback.c, ud.c) work on these; sched.c says who may, and when.
 */
#ifndef VRDMA_TRANSPORT_H
#define VRDMA_TRANSPORT_H

#include <linux/types.h>
#include <rdma/vrdma-abi.h>

/* PSNs are 24 bits. */
#define VRDMA_PSN_MASK		0xffffff
/* resp.opcode when no message is in progress: vrdma_opcode[] knows none. */
#define VRDMA_NO_OPCODE		0xff
/* retry_cnt and rnr_retry are 3 bits; an rnr_retry of 7 retries for ever. */
#define VRDMA_RETRY_MAX		7
#define VRDMA_RNR_RETRY_INFINITE 7

/* 24-bit PSN arithmetic: a - b as a signed distance. */
static inline int vrdma_psn_diff(u32 a, u32 b)
{
	return ((int)((a - b) << 8)) >> 8;
}

static inline u32 vrdma_psn_add(u32 psn, u32 n)
{
	return (psn + n) & VRDMA_PSN_MASK;
}

/**
 * struct vrdma_swqe - the kernel's copy of a send WQE, and its progress
 * @wqe: header (and SGEs or inline data, up to the SQ stride), copied out
 *	of the ring and checked; never read from the ring again; or written
 *	by the kernel for its own send work
 * @kind: enum vrdma_swqe_kind
 * @tm_handle: VRDMA_SWQE_TM_READ: the tagged buffer it reads into
 * @pd: the PD of its lkeys when not the QP's (a tagged buffer's: the
 *	SRQ's), else NULL
 * @state: enum vrdma_swqe_state
 * @status: IB_WC_* completion status, once known
 * @length: total bytes of the message
 * @first_psn: PSN of its first packet
 * @last_psn: PSN of its last packet (for READ: of the last response)
 * @read_done: bytes of an RDMA READ response placed so far
 * @read_start: @read_done when the READ request was last (re)sent: its
 *	response stream begins there
 * @rd_atomic: a READ or ATOMIC counted in req.rd_atomic (sent, not done)
 */
struct vrdma_swqe {
	struct vrdma_send_wqe *wqe;
	u8 kind;
	u32 tm_handle;
	struct vrdma_pd *pd;
	u8 state;
	u8 status;
	bool rd_atomic;
	u32 length;
	u32 first_psn;
	u32 last_psn;
	u32 read_done;
	u32 read_start;
};

/*
 * Whose send work a WQE is.  The QP's send sequence (qp->swqe, indexed by
 * req.head, req.cur, req.fetch) holds the WQEs copied out of the SQ ring
 * in their order, and between them the kernel's own: a tag-matching
 * QP's rendezvous READs and FINs (tm.c), which the process never posted,
 * take no slot of the ring and complete without a CQE of the SQ.
 */
enum vrdma_swqe_kind {
	VRDMA_SWQE_USER,	/* from the SQ ring (or a kernel post_send) */
	VRDMA_SWQE_TM_READ,	/* a rendezvous: the data into a tagged buffer */
	VRDMA_SWQE_TM_FIN,	/* then the FIN to the sender */
};

enum vrdma_swqe_state {
	VRDMA_SWQE_NEW,		/* copied, checked, not yet sent */
	VRDMA_SWQE_SENDING,	/* some packets sent */
	VRDMA_SWQE_SENT,	/* all packets sent, waiting for ACK/response */
	VRDMA_SWQE_DONE,	/* completed; CQE written if signaled */
};

/* What the receive WQE in use is on a QP of a tag-matching SRQ (tm.c). */
enum vrdma_tm_kind {
	VRDMA_TM_NONE,		/* no tag-matching SRQ */
	VRDMA_TM_PLAIN,		/* a WQE of the SRQ's ring: unexpected, NO_TAG */
	VRDMA_TM_EAGER,		/* a tagged buffer the message matched */
	VRDMA_TM_DISCARD,	/* a rendezvous request, handled at its match */
};

/**
 * struct vrdma_rwqe - the responder's copy of the receive WQE in use
 * @wqe: header and SGEs, copied out of the RQ/SRQ ring (kmalloc'ed,
 *	VRDMA_RECV_WQE_HDR_SIZE + VRDMA_MAX_SGE SGEs)
 * @pd: the PD its lkeys belong to: the QP's, or the SRQ's for a WQE
 *	taken from an SRQ
 * @length: total bytes its SGEs can take
 * @offset: bytes placed so far
 * @valid: a WQE has been taken for the current message
 * @tm: enum vrdma_tm_kind
 * @tm_opcode: its completion's opcode (VRDMA_WC_TM_RECV, _NO_TAG)
 * @tm_split: VRDMA_TM_EAGER: the match was completed at the first packet,
 *	the data is completed apart
 * @tm_skip: bytes at the start of the next packet's payload not placed
 *	(the TMH of a matched message; all of it for VRDMA_TM_DISCARD)
 * @tm_handle: VRDMA_TM_EAGER: the tagged buffer's handle
 * @tm_tag: VRDMA_TM_EAGER: the message's tag, for its completion
 * @tm_priv: VRDMA_TM_EAGER: the TMH's app_ctx
 */
struct vrdma_rwqe {
	struct vrdma_recv_wqe *wqe;
	struct vrdma_pd *pd;
	u32 length;
	u32 offset;
	bool valid;
	u8 tm;
	u8 tm_opcode;
	bool tm_split;
	u32 tm_skip;
	u32 tm_handle;
	u64 tm_tag;
	u32 tm_priv;
};

/**
 * struct vrdma_req - requester (and completer) state of a QP
 * @head: send sequence index of the oldest WQE not completed
 * @fetch: send sequence index the next WQE copied out of the ring (or
 *	made by the kernel) takes
 * @ring_fetch: next SQ ring index to copy out of the ring
 * @cur: send sequence index of the WQE being sent
 * @offset: bytes of @cur already sent
 * @psn: PSN of the next request packet
 * @max_psn: the PSN after the last request packet ever sent: @psn is behind
 *	it after going back (vrdma_rewind()), and answers to what was sent
 *	before are still answers
 * @una: oldest PSN not acknowledged yet
 * @rnr_retry: RNR NAKs received in a row for the current WQE
 * @rnr_wait: waiting for the RNR timer before resending
 * @retry: retries (timeouts, sequence error NAKs, implied NAKs) in a row
 *	without progress
 * @timed_out: the retransmission timer fired; handled by the task
 * @sqd_event: IB_EVENT_SQ_DRAINED still to be sent
 * @rd_atomic: READs and ATOMICs sent and not completed, held to the QP's
 *	max_rd_atomic
 * @rewound: the requester went back to @rewind_psn and has had no progress
 *	since: a NAK asking for that PSN again is stale
 * @rewind_psn: where it went back to
 * @probe: the retransmission timer sent the requester back: only the oldest
 *	request goes out, asking for an ACK, until something is acknowledged
 * @bh_more: the tasklet's requester run stopped at its budget with packets
 *	left to send; the tasklet's next run goes on (vrdma_qp_bh())
 *
 * Send sequence indices between @head (oldest not completed) and @cur
 * have all their packets sent; @cur up to @fetch are copied and checked
 * but not (fully) sent.  The sequence is the SQ ring's WQEs in their
 * order, and the kernel's own send work between them (enum
 * vrdma_swqe_kind): without any, @head and @ring_fetch are the ring's
 * sq.kidx and @fetch.
 */
struct vrdma_req {
	u32 head;
	u32 fetch;
	u32 ring_fetch;
	u32 cur;
	u32 offset;
	u32 psn;
	u32 max_psn;
	u32 una;
	u8 rnr_retry;
	bool rnr_wait;
	u8 retry;
	bool timed_out;
	bool sqd_event;
	u32 rd_atomic;
	bool rewound;
	u32 rewind_psn;
	bool probe;
	bool bh_more;
};

/* What a responder resource holds (struct vrdma_rd_atomic.type). */
enum vrdma_res_type {
	VRDMA_RES_FREE,
	VRDMA_RES_READ,
	VRDMA_RES_ATOMIC,
	VRDMA_RES_ATOMIC_WRITE,
	VRDMA_RES_FLUSH,
};

/**
 * struct vrdma_rd_atomic - a responder resource: one READ, ATOMIC, ATOMIC
 *	WRITE or FLUSH executed
 * @type: enum vrdma_res_type
 * @psn: the request's PSN
 * @msn: ATOMIC, ATOMIC WRITE, FLUSH: the MSN its answer carried
 * @orig: ATOMIC: the value the word had before, the answer
 * @va: READ: the address it read from
 * @rkey: READ: its rkey
 * @len: READ: its length
 * @last_psn: READ: the PSN of its last response
 *
 * A requester whose response was lost asks again with a PSN of the
 * original request.  A READ is answered again, but only for what the
 * original asked and was granted: its PSNs, a part of its range, its key
 * (checked again); an ATOMIC must not be executed again, so its answer is
 * kept here and sent again.  So is the (empty) answer of an ATOMIC WRITE,
 * which executed again could overwrite a later write of the word, and of
 * a FLUSH.
 */
struct vrdma_rd_atomic {
	u8 type;
	u32 psn;
	u32 msn;
	u64 orig;
	u64 va;
	u32 rkey;
	u32 len;
	u32 last_psn;
};

/**
 * struct vrdma_resp - responder state of a QP
 * @psn: expected PSN of the next request
 * @msn: message sequence number: requests completed, sent in every AETH
 * @opcode: opcode of the last accepted request, to check the sequence
 * @nak_sent: a sequence error or RNR NAK is out; send no other NAK until
 *	the expected PSN arrives
 * @ack_pending: an ACK for @ack_psn is owed; sent once the packets queued
 *	have been handled, or before any other response (ACK coalescing)
 * @ack_psn: the PSN it acknowledges
 * @va: next address of the RDMA WRITE in progress
 * @rkey: its rkey
 * @resid: bytes of it still to come
 * @length: its total length (for the byte_len of WRITE with immediate)
 * @read_va: next address of the RDMA READ being answered
 * @read_rkey: its rkey
 * @read_resid: bytes still to send
 * @read_psn: PSN of the next read response
 * @read_first: the next response is its first
 * @read_active: a READ is being answered
 * @read_bh: by the QP's tasklet, which finishes it (vrdma_qp_bh()); read
 *	locklessly by the task to leave the QP's queue to it meanwhile
 * @res: the responder resources, a ring of @res_num (the QP's
 *	max_dest_rd_atomic) entries holding the latest READs and ATOMICs
 * @res_num: entries of @res
 * @res_head: the next entry to (re)use, the oldest one
 * @drop: UC: the message in progress is being dropped; the responder
 *	resumes at the next FIRST or ONLY packet
 */
struct vrdma_resp {
	u32 psn;
	u32 msn;
	u8 opcode;
	bool nak_sent;
	bool ack_pending;
	u32 ack_psn;
	u64 va;
	u32 rkey;
	u32 resid;
	u32 length;
	u64 read_va;
	u32 read_rkey;
	u32 read_resid;
	u32 read_psn;
	bool read_first;
	bool read_active;
	bool read_bh;
	struct vrdma_rd_atomic *res;
	u32 res_num;
	u32 res_head;
	bool drop;
};

/*
 * The engines, entered as sched.c's contract says: each asserts that it
 * owns the QP's engines (vrdma_qp_assert_owned()), and what the tasklet
 * must leave to the task asserts the QP's mutex too
 * (vrdma_qp_assert_locked()).
 */
struct sk_buff;
struct vrdma_qp;

/* requester.c, responder.c, completer.c */
void vrdma_requester(struct vrdma_qp *qp);
void vrdma_requester_bh(struct vrdma_qp *qp);
int vrdma_swqe_gather(struct vrdma_qp *qp, struct vrdma_send_wqe *wqe,
		      u32 offset, void *buf, u32 length);
struct vrdma_atomic_op;
u8 vrdma_wqe_atomic_op(const struct vrdma_send_wqe *wqe,
		       struct vrdma_atomic_op *aop);
void vrdma_flush_sq(struct vrdma_qp *qp);
void vrdma_responder(struct vrdma_qp *qp, struct sk_buff *skb);
bool vrdma_responder_reads(struct vrdma_qp *qp, int burst);
bool vrdma_responder_waits(struct vrdma_qp *qp, struct sk_buff *skb);
void vrdma_resp_advance(struct vrdma_qp *qp, u32 npkts, bool msg_end);
struct vrdma_rd_atomic *vrdma_resp_res_alloc(u32 num);
void vrdma_resp_res_install(struct vrdma_qp *qp, struct vrdma_rd_atomic *res,
			    u32 num);
void vrdma_resp_res_reset(struct vrdma_qp *qp);
void vrdma_completer(struct vrdma_qp *qp, struct sk_buff *skb);
void vrdma_complete_swqe(struct vrdma_qp *qp, struct vrdma_swqe *swqe,
			 u8 status);
void vrdma_retrans_arm(struct vrdma_qp *qp);
void vrdma_req_progress(struct vrdma_qp *qp);
void vrdma_timed_out(struct vrdma_qp *qp);
/* ud.c: UD datagrams, one packet per message */
int vrdma_ud_send_packet(struct vrdma_qp *qp, struct vrdma_swqe *swqe);
void vrdma_ud_responder(struct vrdma_qp *qp, struct sk_buff *skb);
/* raw.c: raw packet QPs, one Ethernet frame per message */
int vrdma_raw_send(struct vrdma_qp *qp, struct vrdma_swqe *swqe);
void vrdma_raw_responder(struct vrdma_qp *qp, struct sk_buff *skb);
/* loopback.c: RC messages between QPs of this host, without packets */
int vrdma_loopback_exec(struct vrdma_qp *qp, struct vrdma_swqe *swqe);

#endif /* VRDMA_TRANSPORT_H */
