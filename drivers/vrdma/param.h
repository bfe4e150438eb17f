/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Every limit and tunable of the driver, in one place: the device's
 * limits that query_device reports, and the sizes and budgets that decide
 * how the transport and the scheduler (sched.c) share time and memory.
 */
#ifndef VRDMA_PARAM_H
#define VRDMA_PARAM_H

/*
 * Device limits reported by query_device.  They are the sizes the
 * driver's own tables and shared rings are built for: ring depths are
 * powers of two that fit a u32 index, keys are a 24-bit index plus an
 * 8-bit key byte.
 */
#define VRDMA_MAX_QP		16384
#define VRDMA_MAX_QP_WR		16384
#define VRDMA_MAX_SGE		32
#define VRDMA_MAX_INLINE	512
#define VRDMA_MAX_CQ		16384
#define VRDMA_MAX_CQE		65536
#define VRDMA_MAX_MR		65536
#define VRDMA_MAX_MW		65536
#define VRDMA_MAX_PD		65536
#define VRDMA_MAX_SRQ		4096
#define VRDMA_MAX_SRQ_WR	16384
#define VRDMA_MAX_AH		65536
#define VRDMA_MAX_MCAST_GRP	256
#define VRDMA_MAX_MCAST_QP_ATTACH 64
#define VRDMA_MAX_TOTAL_MCAST_QP_ATTACH 2048
#define VRDMA_MAX_RD_ATOMIC	128
/*
 * Flows (raw.c) per device: each is looked at for every frame the bound
 * netdev receives while there are any, and holds kernel memory.
 */
#define VRDMA_MAX_FLOWS		256
/*
 * RSS (wq.c): WQs and indirection tables per device, and the largest
 * table, 2^VRDMA_MAX_RWQ_IND_TBL_LOG entries.
 */
#define VRDMA_MAX_WQ		4096
#define VRDMA_MAX_RWQ_IND_TBL	256
#define VRDMA_MAX_RWQ_IND_TBL_LOG 10
/*
 * Tag matching (tm.c): the tagged buffers of a tag-matching SRQ, searched
 * in order for every tag-matching SEND; the operations one
 * ibv_post_srq_ops() may carry; the longest rendezvous request (TMH, RVH
 * and the sender's own data); the rendezvous a QP may have in flight, each
 * an RDMA READ and a FIN of its own send work.
 */
#define VRDMA_TM_MAX_TAGS	256
#define VRDMA_TM_MAX_OPS	256
#define VRDMA_TM_MAX_RNDV_HDR	64
#define VRDMA_TM_MAX_RNDV	8
#define VRDMA_MAX_MR_SIZE	BIT_ULL(40)
#define VRDMA_MAX_FAST_REG_PAGES 512
#define VRDMA_MAX_PKEYS		1
#define VRDMA_GID_TABLE_LEN	32
#define VRDMA_VENDOR_ID		0xffffff	/* no OUI: a software device */
#define VRDMA_VENDOR_PART_ID	0x7672		/* "vr" */

/*
 * ODP (odp.c): how long one chunk of a page fault may keep being started
 * over because its range was invalidated meanwhile, before the access
 * fails.  hmm's own default is 1 s; a debug kernel under TCG needs more.
 */
#define VRDMA_ODP_FAULT_TIMEOUT_MS	5000

/*
 * Device memory (dm.c): the largest DM, and the most all DMs of a device
 * hold together.  Each is kernel memory pinned for the life of the DM,
 * also charged to its owner's RLIMIT_MEMLOCK and memory cgroup.
 */
#define VRDMA_MAX_DM_SIZE	BIT(20)
#define VRDMA_MAX_DM_TOTAL	BIT(26)

/*
 * Received packets a QP holds for its task or tasklet at most; the next
 * are dropped (rx_queue_full) and RC recovers them by retransmission.
 * Far above what a peer keeps in flight (VRDMA_WINDOW requests), it
 * bounds what a flood can pin while the QP cannot keep up.
 */
#define VRDMA_RX_QUEUE_MAX	4096

/*
 * Packets a QP holds back at most while its packets sent from another CPU
 * are in flight (txq.c); the next are dropped (tx_errors).  That wait lasts
 * as long as a veth takes to deliver a CPU's queue or a NIC to complete a
 * packet, while a run sends VRDMA_READ_BURST responses at most.
 */
#define VRDMA_TXQ_HELD_MAX	1024

/*
 * Transport
 */

/* Requests the requester may have sent and not had acknowledged. */
#define VRDMA_WINDOW		128
/* The requester asks for an ACK at least every this many packets. */
#define VRDMA_ACK_EVERY		32
/* Read response packets the responder sends per run of the QP task. */
#define VRDMA_READ_BURST	64
/* ... and the QP's tasklet for a READ it answers (vrdma_qp_bh()). */
#define VRDMA_BH_READ_BURST	4
/*
 * Packets the QP's tasklet executes, and sends, per run; it schedules
 * itself again for the rest.
 */
#define VRDMA_BH_BUDGET		16
/*
 * RC messages in flight from which a WQE posted waits for the next answer
 * instead of a doorbell (vrdma_req_answer_due()).
 */
#define VRDMA_QUIET_DEPTH	16

/*
 * Scheduler (sched.c)
 */

/* Packets one run of the task executes, then it lets others in. */
#define VRDMA_RUN_BUDGET	256
/* Runs of the QP a doorbell makes at most before leaving it to the task. */
#define VRDMA_DOORBELL_ROUNDS	8

#endif /* VRDMA_PARAM_H */
