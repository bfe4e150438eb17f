/* SPDX-License-Identifier: GPL-2.0 */
/*
 * vrdma - a virtual RDMA device that speaks RoCEv2.
 *
 * This header holds the driver's objects.  Each RDMA concept has a file of
 * its own in this directory:
 *
 *   main.c      module init/exit, "rdma link add ... type vrdma"
 *   device.c    the ib_device: capabilities (query_device) and the verbs table
 *   port.c      the single RoCEv2 port: state, MTU, GIDs, P_Keys
 *   netdev.c    the bound Ethernet netdev (carrier, MTU, unregister
 *               events) and which addresses are this host's
 *   parent.c    the parent device whose net/ names the bound netdev
 *   ucontext.c  a process's context and the mmap of shared memory into it
 *   pd.c        protection domains
 *   mr.c        memory regions: pinning, keys, and every access to MR memory
 *   mw.c        memory windows: binding, invalidation, their rkeys
 *   frmr.c      fast-registration MRs of kernel consumers: REG_MR, LOCAL_INV
 *   odp.c       on-demand paging MRs: pages faulted in when used, dropped
 *               when the kernel invalidates them; ibv_advise_mr prefetch
 *   dm.c        device memory: kernel pages a process maps, and MRs of them
 *   queue.c     the shared rings (SQ, RQ, SRQ, CQ) and their index checks
 *   cq.c        completion queues: writing CQEs, notification
 *   qp.c        queue pairs: creation, the state machine, the doorbells
 *   sched.c     who runs a QP's engines, from where: task, tasklet, doorbell
 *               and inline runs, timers; the lock order
 *   rq.c        receive WQEs: taken from the RQ or SRQ, flushed
 *   srq.c       shared receive queues: one receive ring for many QPs
 *   tm.c        tag matching: tag-matching SRQs, their tagged buffers, and
 *               the match of each tag-matching SEND
 *   xrc.c       XRC: domains, SRQ numbers, the target QP's SRQ per message
 *   ah.c        address handles: where a UD send goes
 *   mcast.c     UD multicast: groups of QPs, attach and detach
 *   raw.c       raw packet QPs: Ethernet frames sent on the netdev, and
 *               flow steering of received frames to them
 *   wq.c        RSS: work queues, indirection tables, the Toeplitz hash
 *               that picks a frame's WQ for a QP on a table
 *   param.h     every limit and tunable
 *   transport.h the transport's state: send WQEs in flight, requester,
 *               responder, PSNs
 *   pkt.h       the RoCEv2 headers (BTH, RETH, AETH, ...) and opcodes
 *   opcode.c    what each BTH opcode carries
 *   icrc.c      the invariant CRC of RoCEv2 packets
 *   net.c       the UDP tunnel: sending and receiving RoCEv2 packets
 *   txq.c       a QP's packets leave in order, whichever CPU sends them
 *   requester.c SQ WQEs become request packets
 *   responder.c request packets are checked, placed, and ACKed
 *   completer.c ACKs and read responses complete SQ WQEs
 *   loopback.c  the loopback path: RC messages between QPs of this host,
 *               moved MR to MR without packets
 *   copy.c      the bulk payload copy, its routine timed at module load
 *   ud.c        UD datagrams (and QP1, GSI): one packet per message, Q_Key,
 *               GRH
 *   kverbs.c    kernel consumers: post_send/post_recv/poll_cq on the rings
 *   counters.c  the device's counters (rdma statistic)
 *   restrack.c  driver details of QPs, CQs, MRs for "rdma res show"
 *   trace.h     tracepoints at every step of the data path (trace.c)
 *   debugfs.c   /sys/kernel/debug/vrdma: each QP's rings and WQEs in flight
 *
 * How a SEND travels: the process writes a WQE into the SQ ring and rings
 * the doorbell (vrdma_post_send); the QP's task (sched.c) runs the requester,
 * which copies the WQE out of the ring, checks it, and turns it into
 * packets (vrdma_pkt_send).  On the receiving QP the responder checks each
 * packet, places its payload into the buffers of the next RQ WQE, writes a
 * CQE and sends an ACK; the completer of the sending QP matches the ACK to
 * the WQE and writes the sender's CQE.
 */
#ifndef VRDMA_H
#define VRDMA_H

#include <linux/list.h>
#include <linux/mutex.h>
#include <linux/netdevice.h>
#include <linux/skbuff.h>
#include <linux/workqueue.h>
#include <linux/xarray.h>
#include <net/dst_cache.h>
#include <rdma/ib_verbs.h>
#include <rdma/ib_umem.h>
#include <rdma/uverbs_ioctl.h>
#include <rdma/vrdma-abi.h>

#include "compat.h"
#include "param.h"
#include "transport.h"

struct vrdma_txq;

#define VRDMA_PORT		1

/* The layout shared with user space, pinned (uapi/rdma/vrdma-abi.h). */
static_assert(sizeof(struct vrdma_ring) == VRDMA_RING_HDR_SIZE);
static_assert(sizeof(struct vrdma_sge) == 16);
static_assert(sizeof(struct vrdma_send_wqe) == VRDMA_SEND_WQE_HDR_SIZE);
static_assert(sizeof(struct vrdma_recv_wqe) == VRDMA_RECV_WQE_HDR_SIZE);
static_assert(sizeof(struct vrdma_cqe) == 32);
static_assert(sizeof(struct vrdma_ring_info) == 24);
static_assert(sizeof(struct vrdma_create_qp_resp) == 56);
static_assert(sizeof(struct vrdma_create_srq_resp) == 32);
static_assert(sizeof(struct vrdma_modify_srq_req) == 16);
static_assert(sizeof(struct vrdma_create_ah_resp) == 8);
static_assert(sizeof(struct vrdma_create_qp_rss_req) == 64);
static_assert(sizeof(struct vrdma_create_wq_resp) == 32);
static_assert(sizeof(struct vrdma_tmh) == 16);
static_assert(sizeof(struct vrdma_rvh) == 16);
static_assert(sizeof(struct vrdma_srq_op) == 112);
static_assert(sizeof(struct vrdma_srq_ops_resp) == 8);
static_assert(sizeof(struct vrdma_create_srq_req) == 16);
static_assert(sizeof(struct vrdma_create_cq_req) == 16);
static_assert(sizeof(struct vrdma_cqe) + sizeof(struct vrdma_cqe_tm) ==
	      VRDMA_CQE_TM_SIZE);
static_assert(VRDMA_TM_MAX_SGE <= VRDMA_MAX_SGE);
/* The GRH type reaches user space as the kernel's enum rdma_network_type. */
static_assert(RDMA_NETWORK_IPV4 == (int)VRDMA_NETWORK_HDR_IPV4);
static_assert(RDMA_NETWORK_IPV6 == (int)VRDMA_NETWORK_HDR_IPV6);
static_assert(sizeof(union rdma_network_hdr) == VRDMA_GRH_SIZE);

/*
 * Memory a process's object holds in sizes the process chooses (rings,
 * the kernel's copies of its WQEs, an MR's page table): charged to its
 * memory cgroup, and at the cgroup's limit the verb fails with ENOMEM
 * instead of waking the OOM killer, as for BPF maps.  Kernel consumers'
 * objects stay GFP_KERNEL: their sizes are the kernel's.
 */
#define VRDMA_GFP_USER	(GFP_KERNEL_ACCOUNT | __GFP_RETRY_MAYFAIL | \
			 __GFP_NOWARN)

/* QPN 0 and 1 are the special QPs; numbers are 24 bits. */
#define VRDMA_GSI_QPN		1
#define VRDMA_MIN_QPN		2
#define VRDMA_MAX_QPN		0xffffff
/* The destination QPN of a multicast packet: every QP of the group. */
#define VRDMA_MCAST_QPN		0xffffff

/* A Q_Key in a UD send WQE with this bit set means "the QP's Q_Key". */
#define VRDMA_QKEY_USE_QP	0x80000000

/*
 * A key is a table index (24 bits) and a key byte that changes on reuse.
 * MRs and memory windows have tables of their own: an MW's index is
 * VRDMA_MW_INDEX_BASE plus its slot, so a key says by itself which table
 * it names, and an MW's key never opens an MR nor serves as an lkey.
 */
#define VRDMA_KEY(index, byte)	((u32)(index) << 8 | (u8)(byte))
#define VRDMA_KEY_INDEX(key)	((key) >> 8)
#define VRDMA_KEY_BYTE(key)	((key) & 0xff)
#define VRDMA_MW_INDEX_BASE	0x800000
#define VRDMA_KEY_IS_MW(key)	(VRDMA_KEY_INDEX(key) >= VRDMA_MW_INDEX_BASE)

/*
 * Per-device counters, shown by "rdma statistic show link vrdma0/1"
 * (counters.c).  Every dropped packet and every error is counted in one.
 */
enum vrdma_counter {
	VRDMA_CNT_SENT_PKTS,
	VRDMA_CNT_RCVD_PKTS,
	VRDMA_CNT_SENT_BYTES,
	VRDMA_CNT_RCVD_BYTES,
	VRDMA_CNT_LOOPBACK_PKTS,	/* delivered inside the driver */
	VRDMA_CNT_ICRC_ERR,		/* dropped: bad ICRC */
	VRDMA_CNT_MALFORMED,		/* dropped: bad headers or lengths */
	VRDMA_CNT_NO_QP,		/* dropped: no such QP */
	VRDMA_CNT_TX_ERR,		/* not sent: no route, no memory */
	VRDMA_CNT_SEQ_ERR,		/* out-of-sequence requests received */
	VRDMA_CNT_DUP_REQ,		/* duplicate requests received */
	VRDMA_CNT_NAK_SENT,
	VRDMA_CNT_NAK_RCVD,
	VRDMA_CNT_RNR_NAK_SENT,
	VRDMA_CNT_RNR_NAK_RCVD,
	VRDMA_CNT_RETRANSMITS,		/* resends started (go-back-N) */
	VRDMA_CNT_CQ_OVERFLOW,
	VRDMA_CNT_BAD_WQE,		/* malformed WQEs found in a ring */
	VRDMA_CNT_ATOMIC_REPLAYED,	/* duplicate atomics answered again */
	VRDMA_CNT_ATOMIC_REPLAY_MISS,	/* dropped: duplicate atomic too old */
	VRDMA_CNT_READ_REPLAY_MISS,	/* dropped: duplicate READ not executed */
	VRDMA_CNT_QKEY_ERR,		/* UD: dropped, wrong Q_Key */
	VRDMA_CNT_NO_RECV_WQE,		/* UD/UC: dropped, no receive WQE */
	VRDMA_CNT_DROPPED_MSGS,		/* UC: messages dropped unexecuted */
	VRDMA_CNT_TIMEOUTS,		/* retransmission timer expiries */
	VRDMA_CNT_IMPLIED_NAK,		/* READ responses found missing */
	VRDMA_CNT_DUP_RESP,		/* stale responses received, ignored */
	VRDMA_CNT_RETRY_EXC,		/* WQEs failed: retry_cnt exceeded */
	VRDMA_CNT_RNR_RETRY_EXC,	/* WQEs failed: rnr_retry exceeded */
	VRDMA_CNT_ACK_SENT,		/* ACKs sent (not NAKs, not responses) */
	VRDMA_CNT_ACK_COALESCED,	/* ACK requests answered by a later ACK */
	VRDMA_CNT_LOOPBACK_MSGS,	/* RC messages moved by loopback.c */
	VRDMA_CNT_LOOPBACK_BYTES,	/* their payload bytes */
	VRDMA_CNT_MCAST_SENT,		/* UD: packets sent to a multicast GID */
	VRDMA_CNT_MCAST_RCVD,		/* UD: multicast packets delivered */
	VRDMA_CNT_SOFTIRQ_RESP,		/* responses completed in the softirq */
	VRDMA_CNT_SOFTIRQ_READ,		/* READ requests answered there */
	VRDMA_CNT_SOFTIRQ_READ_RESP,	/* READ response packets sent there */
	VRDMA_CNT_DOORBELLS,		/* SQ doorbells of user QPs */
	VRDMA_CNT_WRONG_NETDEV,		/* dropped: not from the bound netdev */
	VRDMA_CNT_RX_QUEUE_FULL,	/* dropped: VRDMA_RX_QUEUE_MAX queued */
	VRDMA_CNT_RXE_FLUSH_ICRC,	/* FLUSHes with rdma_rxe's ICRC taken */
	VRDMA_CNT_TX_HELD,	/* a QP's packets held behind its others */
	VRDMA_CNT_RAW_SENT_PKTS,	/* raw packet QPs: frames sent */
	VRDMA_CNT_RAW_SENT_BYTES,
	VRDMA_CNT_RAW_RCVD_PKTS,	/* frames placed in receive WQEs */
	VRDMA_CNT_RAW_RCVD_BYTES,
	VRDMA_CNT_RAW_DROPPED,		/* steered frames not placed */
	VRDMA_NUM_COUNTERS
};

/**
 * struct vrdma_dev - one vrdma ib_device, bound to one Ethernet netdev
 * @ibdev: the device ib_core knows; must be first for ib_alloc_device()
 * @ndev: the bound netdev, referenced until the device is freed
 * @ndev_tracker: tracks our reference on @ndev
 * @list: entry in the driver's list of devices (vrdma_devices), RCU
 * @port_active: last port state reported to ib_core; changed under RTNL
 * @attr: device capabilities, filled once at creation
 * @num_pd: PDs in existence, held to attr.max_pd
 * @num_cq: CQs in existence, held to attr.max_cq
 * @num_qp: QPs in existence, held to attr.max_qp
 * @num_srq: SRQs in existence, held to attr.max_srq
 * @num_ah: AHs in existence, held to attr.max_ah
 * @dm_pages: pages of all DMs, held to VRDMA_MAX_DM_TOTAL (dm.c)
 * @qp_xa: QPN -> struct vrdma_qp; lookups under its (irq-safe) lock
 * @ah_xa: AH handle -> struct vrdma_ah_dest; lookups under its xa_lock
 * @mr_xa: key index -> struct vrdma_mr; lookups under RCU
 * @mr_key_byte: last key byte used for each index, so a reused index gets
 *	a different key and stale keys are refused
 * @mr_next: where the cyclic search for a free MR index resumes
 * @mw_xa: MW slot (index - VRDMA_MW_INDEX_BASE) -> struct vrdma_mw; its
 *	xa_lock also guards every window's binding (mw.c)
 * @mw_key_byte: as @mr_key_byte, per MW slot
 * @mw_next: where the cyclic search for a free MW slot resumes
 * @qp_next: where the cyclic search for a free QPN resumes
 * @srq_xa: XRC SRQ number -> struct vrdma_srq; lookups under its (irq-safe)
 *	lock, as @qp_xa's
 * @srq_next: where the cyclic search for a free XRC SRQ number resumes
 * @ah_next: where the cyclic search for a free AH handle resumes
 * @net: the tunnel sockets of the netdev's namespace (net.c)
 * @mcast: its multicast groups (mcast.c)
 * @raw: its flows, and the packet tap (raw.c)
 * @num_wq: WQs in existence, held to attr.max_wq_type_rq (wq.c)
 * @num_rwq_ind_tbl: indirection tables in existence, held to
 *	attr.rss_caps.max_rwq_indirection_tables
 * @rwq_ind_tbl_ida: the indirection tables' numbers
 * @parent: the parent device, whose net/ names @ndev (parent.c)
 * @counters: enum vrdma_counter
 * @debugfs: its directory under /sys/kernel/debug/vrdma (debugfs.c)
 */
struct vrdma_dev {
	struct ib_device ibdev;
	struct net_device *ndev;
	netdevice_tracker ndev_tracker;
	struct list_head list;
	bool port_active;
	struct ib_device_attr attr;
	atomic_t num_pd;
	atomic_t num_cq;
	atomic_t num_qp;
	atomic_t num_srq;
	atomic_t num_ah;
	atomic_t dm_pages;
	struct xarray qp_xa;
	struct xarray ah_xa;
	struct xarray mr_xa;
	u8 *mr_key_byte;
	u32 mr_next;
	struct xarray mw_xa;
	u8 *mw_key_byte;
	u32 mw_next;
	u32 qp_next;
	u32 ah_next;
	struct xarray srq_xa;
	u32 srq_next;
	struct vrdma_net *net;
	struct vrdma_mcast *mcast;
	struct vrdma_raw *raw;
	atomic_t num_wq;
	atomic_t num_rwq_ind_tbl;
	struct ida rwq_ind_tbl_ida;
	struct vrdma_parent *parent;
	atomic64_t counters[VRDMA_NUM_COUNTERS];
	struct dentry *debugfs;
};

static inline void vrdma_count(struct vrdma_dev *vdev, enum vrdma_counter c)
{
	atomic64_inc(&vdev->counters[c]);
}

static inline void vrdma_count_add(struct vrdma_dev *vdev,
				   enum vrdma_counter c, u64 n)
{
	atomic64_add(n, &vdev->counters[c]);
}

/**
 * struct vrdma_ucontext - a process's open device context
 * @ibuc: ib_core's part
 */
struct vrdma_ucontext {
	struct ib_ucontext ibuc;
};

/**
 * struct vrdma_pd - a protection domain
 * @ibpd: ib_core's part
 * @odp: an ODP MR was made in it (or moved to it): its QPs' engines run
 *	only where pages may be faulted in (odp.c); never cleared
 */
struct vrdma_pd {
	struct ib_pd ibpd;
	bool odp;
};

/* Must the QPs of @pd leave the softirq and loopback paths (odp.c)? */
static inline bool vrdma_pd_has_odp(struct vrdma_pd *pd)
{
	return pd && READ_ONCE(pd->odp);
}

/**
 * struct vrdma_mmap_entry - a piece of kernel memory user space may mmap
 * @rdma_entry: ib_core's entry; its offset is what mmap() is given
 * @vaddr: zeroed pages mapped in the vmalloc area for remap_vmalloc_range(),
 *	charged to the owner's memory cgroup (ucontext.c)
 * @size: bytes, a multiple of PAGE_SIZE
 */
struct vrdma_mmap_entry {
	struct rdma_user_mmap_entry rdma_entry;
	void *vaddr;
	size_t size;
};

/**
 * struct vrdma_queue - the kernel's view of one shared ring
 * @ring: the ring header, in shared memory (or kernel memory for kernel
 *	queues); never trusted
 * @buf: the entries, right after the header
 * @mmap: the mmap entry user space maps; NULL for kernel queues
 * @kbuf: the allocation when there is no @mmap
 * @num_entries: power of two
 * @mask: num_entries - 1
 * @entry_size: stride, power of two
 * @kidx: the index the kernel owns (producer of a CQ, consumer of a WQ);
 *	the copy in @ring is only ever written from this
 */
struct vrdma_queue {
	struct vrdma_ring *ring;
	void *buf;
	struct vrdma_mmap_entry *mmap;
	void *kbuf;
	u32 num_entries;
	u32 mask;
	u32 entry_size;
	u32 kidx;
};

/* struct vrdma_mr.state: only a valid MR's key opens memory. */
enum vrdma_mr_state {
	VRDMA_MR_FREE,		/* fast-reg MR not registered, or invalidated */
	VRDMA_MR_VALID,
};

/**
 * struct vrdma_mr - a memory region (or the DMA MR of a kernel consumer)
 * @ibmr: ib_core's part; ibmr.lkey == ibmr.rkey is our key when created
 * @pd: the owning PD; a key is only valid on QPs of this PD
 * @umem: the pinned user pages (user MRs)
 * @pages: one entry per PAGE_SIZE page covering [iova, iova + length),
 *	for O(1) iova -> page lookup
 * @npages: entries in @pages
 * @page_offset: offset of iova within pages[0]
 * @iova: first valid address
 * @length: bytes
 * @access: IB_ACCESS_* flags granted
 * @dma: a DMA MR: addresses are kernel virtual addresses, any length
 * @fast_reg: a fast-registration MR (frmr.c): @fr_pages translates
 * @state: enum vrdma_mr_state; user and DMA MRs are always valid
 * @key: the key that opens it now (a fast-reg MR's changes with each
 *	REG_MR; the consumer edits ibmr's copies itself)
 * @fr_pages: fast-reg: kernel virtual address of each page of
 *	1 << @fr_page_shift bytes, set by map_mr_sg
 * @fr_max: fast-reg: entries allocated in @fr_pages (max_num_sg)
 * @fr_npages: fast-reg: entries set by the last map_mr_sg
 * @fr_page_shift: fast-reg: log2 of ibmr.page_size at map_mr_sg
 * @odp: an on-demand paging MR: its pages are looked up here, not in
 *	@pages (odp.c)
 * @dmabuf: an MR on a dma-buf: the buffer and its mapping, which hold
 *	@pages in place (dmabuf.c)
 * @num_mw: memory windows bound to it; -1 while dereg or rereg owns it, so
 *	that no bind can take it meanwhile.  Binds take it, and rereg changes
 *	@pd and @access in place, under the xa_lock of vdev->mw_xa (mw.c)
 * @refs: users; the MR is freed after the last one
 * @done: completed when @refs drops to zero, for dereg to wait on
 * @rcu: lookups run under RCU, so the memory outlives a grace period
 */
struct vrdma_mr {
	struct ib_mr ibmr;
	struct vrdma_pd *pd;
	struct ib_umem *umem;
	struct page **pages;
	unsigned long npages;
	unsigned int page_offset;
	u64 iova;
	u64 length;
	int access;
	bool dma;
	bool fast_reg;
	u8 state;
	u32 key;
	u64 *fr_pages;
	u32 fr_max;
	u32 fr_npages;
	u32 fr_page_shift;
	struct vrdma_odp *odp;
	struct vrdma_dmabuf *dmabuf;
	atomic_t num_mw;
	refcount_t refs;
	struct completion done;
	struct rcu_head rcu;
};

/**
 * struct vrdma_mw - a memory window: a remote key to part of an MR
 * @ibmw: ib_core's part; ib_core allocates and frees it; ibmw.rkey is the
 *	window's current key
 * @pd: the PD; the window is bound, used and invalidated through QPs of
 *	this PD only
 * @slot: its index in vdev->mw_xa
 * @mr: the MR it is bound to, NULL while unbound; the MR's num_mw keeps
 *	it registered meanwhile
 * @addr: first address of the window, in the MR's address space
 * @length: bytes
 * @access: IB_ACCESS_REMOTE_* rights it grants
 * @qpn: type 2: the QP it was bound through, the only one it works on
 *
 * Everything but @ibmw.type, @pd and @slot changes, and is read, under the
 * xa_lock of vdev->mw_xa.
 */
struct vrdma_mw {
	struct ib_mw ibmw;
	struct vrdma_pd *pd;
	u32 slot;
	struct vrdma_mr *mr;
	u64 addr;
	u64 length;
	int access;
	u32 qpn;
};

/**
 * struct vrdma_cq - a completion queue
 * @ibcq: ib_core's part
 * @queue: the CQE ring; the kernel produces
 * @lock: serialises producers (QP tasks, flushes) and resize
 * @notify: armed notification: 0, IB_CQ_NEXT_COMP or IB_CQ_SOLICITED
 * @overflowed: a CQE was lost; the CQ is in error (IB_EVENT_CQ_ERR sent)
 */
struct vrdma_cq {
	struct ib_cq ibcq;
	struct vrdma_queue queue;
	spinlock_t lock;	/* see above */
	u8 notify;
	bool overflowed;
};

/**
 * struct vrdma_av - a path: where a connected QP (filled at RTR) or an AH
 *	sends
 * @sgid_attr: source GID entry (RoCEv2, IPv4-mapped or IPv6)
 * @dgid: destination GID
 * @saddr4: IPv4 source address when @ipv6 is false
 * @daddr4: IPv4 destination address when @ipv6 is false
 * @saddr6: IPv6 source address when @ipv6 is true
 * @daddr6: IPv6 destination address when @ipv6 is true
 * @ipv6: network type
 * @dmac: destination MAC, resolved by ib_core
 * @tos: traffic class
 * @ttl: hop limit
 * @flow_label: IPv6 flow label
 * @sport: UDP source port for ECMP entropy: a hash of the QPNs (QP), of
 *	the flow label or handle (AH)
 * @dst_cache: the route to the destination, looked up once per CPU and
 *	kept while it stays valid
 * @remote: that the destination is no address of this host, known since
 *	the address generation it holds (vrdma_av_local_ndev()); 0: not known
 */
struct vrdma_av {
	const struct ib_gid_attr *sgid_attr;
	union ib_gid dgid;
	__be32 saddr4;
	__be32 daddr4;
	struct in6_addr saddr6;
	struct in6_addr daddr6;
	bool ipv6;
	u8 dmac[ETH_ALEN];
	u8 tos;
	u8 ttl;
	u32 flow_label;
	__be16 sport;
	struct dst_cache dst_cache;
	atomic64_t remote;
};

/**
 * struct vrdma_ah_dest - the part of an AH that UD sends use
 * @pd: the AH's PD; only QPs of this PD may send with it
 * @av: the path
 * @refs: one for the handle table, one per sender using @av right now
 *
 * ib_core frees the ib_ah as soon as destroy_ah returns, which may be in
 * atomic context, where we cannot wait for a sender; so what senders use
 * is allocated apart, and the last reference frees it.
 */
struct vrdma_ah_dest {
	struct vrdma_pd *pd;
	struct vrdma_av av;
	refcount_t refs;
};

/**
 * struct vrdma_ah - an address handle: the destination of UD sends
 * @ibah: ib_core's part; ib_core frees it after destroy_ah
 * @dest: the destination, which may outlive the AH by a packet
 * @handle: the number UD send WQEs name the AH by (vrdma_send_wqe.ud.ah)
 */
struct vrdma_ah {
	struct ib_ah ibah;
	struct vrdma_ah_dest *dest;
	u32 handle;
};

/**
 * struct vrdma_qp - a queue pair
 * @ibqp: ib_core's part
 * @vdev: the device
 * @pd: the PD; an XRC target QP's is that of the SRQ it holds, or NULL
 * @scq: send CQ (none for an XRC target QP)
 * @rcq: receive CQ (an XRC target QP: its SRQ's; none for an initiator)
 * @srq: shared receive queue, or NULL; an XRC target QP's is the XRC SRQ
 *	the last request named, referenced (xrc.c)
 * @sq: the SQ ring (user space produces WQEs, the kernel consumes); sq.kidx
 *	is the oldest WQE not yet completed
 * @rq: the RQ ring (unused with an SRQ)
 * @swqe: the send sequence (struct vrdma_req): the kernel's copies of the
 *	SQ's WQEs and its own send work, and their progress
 * @swqe_buf: storage of their WQEs
 * @swqe_mask: entries of @swqe - 1: the SQ's, and room for the kernel's
 *	own send work on a QP of a tag-matching SRQ
 * @tm_internal: the kernel's own send WQEs in the sequence (tm.c)
 * @rwqe: the receive WQE the responder is filling
 * @max_send_sge: granted SGEs per send WQE
 * @max_recv_sge: granted SGEs per receive WQE
 * @max_inline: granted inline bytes
 * @sq_sig_all: every send WQE is signaled
 * @sq_lock: a kernel QP: serialises its consumer's producers of SQ WQEs
 * @rq_lock: a kernel QP: serialises its consumer's producers of RQ WQEs
 * @mutex: serialises the QP's task with modify/destroy; everything below
 *	is protected by it, together with @owner
 * @owner: bit VRDMA_QP_OWNED: someone runs the engines, either a holder of
 *	@mutex (vrdma_qp_lock()) or the QP's tasklet, @bh, which takes it
 *	with a test-and-set; each excludes the other
 * @state: enum ib_qp_state
 * @destroyed: the QP is being destroyed; the task must not be queued
 * @attr: attributes set by modify_qp, for query_qp
 * @av: the path, set at RTR
 * @mtu: path MTU in bytes
 * @req: requester and completer state
 * @resp: responder state
 * @rnr_timer: fires when an RNR NAK's delay has passed
 * @retrans_timer: fires when sent requests stay unacknowledged for the
 *	QP's timeout (the "timeout" attribute)
 * @rx: incoming packets for the task; has its own lock
 * @draining: the mutex holder (task, doorbell, inline run, the loopback
 *	path holding a peer) takes in @rx and @kicked before it lets go and
 *	looks again after; a packet's sender then need not queue the task
 *	(vrdma_qp_rcv(), vrdma_qp_rcv_local()), nor a doorbell that found
 *	the mutex held (vrdma_qp_doorbell())
 * @kicked: a doorbell found the mutex held: the holder runs the requester
 *	once more
 * @task: the QP's task, queued by events at high priority (sched.c)
 * @task_more: the same task, queued by a run that has work left, at
 *	normal priority
 * @bh: executes responses and READ requests in the softirq (vrdma_qp_bh())
 * @txq: keeps an RC or UC QP's packets in order across CPUs (txq.c); NULL
 *	for UD
 * @refs: lookups from the receive path hold a reference
 * @done: completed when @refs drops to zero
 * @debugfs: its file, showing the rings (debugfs.c)
 * @xrcd: an XRC target QP's XRC domain, else NULL
 * @xrc_entry: an XRC target QP's entry in @xrcd's list
 * @raw_flows: a raw packet QP that has had flows (raw.c)
 * @rss: a raw packet QP on an indirection table: its hash and table
 *	(wq.c); it only receives, each frame into the WQ the hash picks
 */
struct vrdma_qp {
	struct ib_qp ibqp;
	struct vrdma_dev *vdev;
	struct vrdma_pd *pd;
	struct vrdma_cq *scq;
	struct vrdma_cq *rcq;
	struct vrdma_srq *srq;
	struct vrdma_queue sq;
	struct vrdma_queue rq;
	struct vrdma_swqe *swqe;
	void *swqe_buf;
	u32 swqe_mask;
	u32 tm_internal;
	struct vrdma_rwqe rwqe;
	u32 max_send_sge;
	u32 max_recv_sge;
	u32 max_inline;
	bool sq_sig_all;
	spinlock_t sq_lock;	/* see above */
	spinlock_t rq_lock;	/* see above */

	struct mutex mutex;	/* see above */
	unsigned long owner;	/* see above */
	enum ib_qp_state state;
	bool destroyed;
	struct ib_qp_attr attr;
	struct vrdma_av av;
	u32 mtu;
	struct vrdma_req req;
	struct vrdma_resp resp;
	struct timer_list rnr_timer;
	struct timer_list retrans_timer;

	struct sk_buff_head rx;
	bool draining;
	bool kicked;
	struct work_struct task;	/* woken by an event: high priority */
	struct work_struct task_more;	/* a run that has more: normal */
	struct tasklet_struct bh;	/* responses, READs: vrdma_qp_bh() */
	struct vrdma_txq *txq;
	refcount_t refs;
	struct completion done;
	struct dentry *debugfs;
	struct vrdma_xrcd *xrcd;
	struct list_head xrc_entry;
	bool raw_flows;
	struct vrdma_rss *rss;
};

/**
 * struct vrdma_srq - a shared receive queue
 * @ibsrq: ib_core's part
 * @queue: the receive ring; queue.kidx is the next WQE to take
 * @lock: QPs take WQEs from it concurrently; protects @queue's consumer
 *	side, @limit and @error, and @queue itself against a resize
 * @max_sge: granted SGEs per WQE
 * @limit: SRQ limit for IB_EVENT_SRQ_LIMIT_REACHED, 0 when disarmed
 * @error: the ring's indices were garbage; no WQE is taken any more
 * @post_lock: a kernel SRQ: serialises its consumer's producers, and
 *	them with a resize; taken before @lock
 * @srqn: an XRC SRQ's number (ibsrq.ext.xrc.srq_num), 0 for a basic SRQ
 * @refs: an XRC SRQ: the number table's reference and one per lookup or
 *	XRC target QP using it (xrc.c)
 * @done: completed when @refs drops to 0
 * @tm: a tag-matching SRQ's tagged buffers and matching state (tm.c),
 *	else NULL
 */
struct vrdma_srq {
	struct ib_srq ibsrq;
	struct vrdma_queue queue;
	spinlock_t lock;	/* see above */
	spinlock_t post_lock;	/* see above */
	u32 max_sge;
	u32 limit;
	bool error;
	u32 srqn;
	refcount_t refs;
	struct completion done;
	struct vrdma_tm *tm;
};

/* Is @srq (maybe NULL) a tag-matching SRQ? */
static inline bool vrdma_srq_is_tm(const struct vrdma_srq *srq)
{
	return srq && srq->tm;
}

/**
 * struct vrdma_wq - a work queue (IB_WQT_RQ): a receive ring of its own
 * @ibwq: ib_core's part
 * @vdev: the device
 * @pd: its PD: the WQEs' SGEs are checked against it
 * @cq: where its completions go, with the WQ's number as qp_num
 * @mutex: serialises the placement of frames (the tasks of the QPs whose
 *	tables hold it) with modify_wq; protects everything below, and
 *	ibwq.state, the WQ's state, which ib_core reads too
 * @rq: the ring; user space produces
 * @max_sge: granted SGEs per WQE
 * @wqe: the kernel's copy of the WQE being filled
 */
struct vrdma_wq {
	struct ib_wq ibwq;
	struct vrdma_dev *vdev;
	struct vrdma_pd *pd;
	struct vrdma_cq *cq;
	struct mutex mutex;	/* see above */
	struct vrdma_queue rq;
	u32 max_sge;
	struct vrdma_recv_wqe *wqe;
};

/**
 * struct vrdma_rwq_ind_table - an indirection table of WQs
 * @ibtbl: ib_core's part, which holds a use count on each WQ
 * @mask: entries - 1 (a power of two entries)
 * @wqs: the WQ at each index
 */
struct vrdma_rwq_ind_table {
	struct ib_rwq_ind_table ibtbl;
	u32 mask;
	struct vrdma_wq **wqs;
};

/**
 * struct vrdma_rss - what a QP on an indirection table hashes, and where
 *	the hash sends a frame
 * @table: the indirection table (ib_core holds its use count)
 * @fields: enum vrdma_rx_hash_fields
 * @key: the Toeplitz key
 */
struct vrdma_rss {
	struct vrdma_rwq_ind_table *table;
	u64 fields;
	u8 key[VRDMA_RSS_KEY_LEN];
};

/**
 * struct vrdma_xrcd - an XRC domain
 * @ibxrcd: ib_core's part (which shares it between processes by inode)
 * @lock: protects @tgt_qps
 * @tgt_qps: its XRC target QPs (vrdma_qp.xrc_entry), which an XRC SRQ
 *	being destroyed visits to take itself away from them
 */
struct vrdma_xrcd {
	struct ib_xrcd ibxrcd;
	struct mutex lock;	/* see above */
	struct list_head tgt_qps;
};

static inline struct vrdma_dev *to_vdev(struct ib_device *ibdev)
{
	return container_of(ibdev, struct vrdma_dev, ibdev);
}

static inline struct vrdma_ucontext *to_vuc(struct ib_ucontext *ibuc)
{
	return container_of(ibuc, struct vrdma_ucontext, ibuc);
}

static inline struct vrdma_xrcd *to_vxrcd(struct ib_xrcd *ibxrcd)
{
	return container_of(ibxrcd, struct vrdma_xrcd, ibxrcd);
}

/*
 * XRC QPs are reliable connected QPs: the RC transport, with the SRQ named
 * in each request.  vrdma_qp_is_rc() is true for all three kinds.
 */
static inline bool vrdma_qp_is_rc(struct vrdma_qp *qp)
{
	return qp->ibqp.qp_type == IB_QPT_RC ||
	       qp->ibqp.qp_type == IB_QPT_XRC_INI ||
	       qp->ibqp.qp_type == IB_QPT_XRC_TGT;
}

static inline bool vrdma_qp_is_xrc(struct vrdma_qp *qp)
{
	return qp->ibqp.qp_type == IB_QPT_XRC_INI ||
	       qp->ibqp.qp_type == IB_QPT_XRC_TGT;
}

static inline struct vrdma_pd *to_vpd(struct ib_pd *ibpd)
{
	return container_of(ibpd, struct vrdma_pd, ibpd);
}

static inline struct vrdma_mr *to_vmr(struct ib_mr *ibmr)
{
	return container_of(ibmr, struct vrdma_mr, ibmr);
}

static inline struct vrdma_mw *to_vmw(struct ib_mw *ibmw)
{
	return container_of(ibmw, struct vrdma_mw, ibmw);
}

static inline struct vrdma_cq *to_vcq(struct ib_cq *ibcq)
{
	return container_of(ibcq, struct vrdma_cq, ibcq);
}

static inline struct vrdma_qp *to_vqp(struct ib_qp *ibqp)
{
	return container_of(ibqp, struct vrdma_qp, ibqp);
}

static inline struct vrdma_srq *to_vsrq(struct ib_srq *ibsrq)
{
	return container_of(ibsrq, struct vrdma_srq, ibsrq);
}

/* QP1 (GSI) sends and receives datagrams as a UD QP does. */
static inline bool vrdma_qp_is_ud(const struct vrdma_qp *qp)
{
	return qp->ibqp.qp_type == IB_QPT_UD || qp->ibqp.qp_type == IB_QPT_GSI;
}

/*
 * ATOMIC WRITE and FLUSH: one request packet each, answered by an RDMA
 * READ RESPONSE ONLY without payload.  The answer brings nothing back, so
 * an ACK of a later request completes them too: the responder executes in
 * order.
 */
static inline bool vrdma_wqe_placement(const struct vrdma_send_wqe *wqe)
{
	return wqe->opcode == VRDMA_WR_ATOMIC_WRITE ||
	       wqe->opcode == VRDMA_WR_FLUSH;
}

static inline bool vrdma_wqe_masked_atomic(const struct vrdma_send_wqe *wqe)
{
	return wqe->opcode == VRDMA_WR_MASKED_ATOMIC_CMP_AND_SWP ||
	       wqe->opcode == VRDMA_WR_MASKED_ATOMIC_FETCH_AND_ADD;
}

/*
 * A masked atomic's masks take the second SGE's place (uapi): does an entry
 * of @sq have room for them?
 */
static inline bool vrdma_sq_fits_masks(const struct vrdma_queue *sq)
{
	return sq->entry_size >= VRDMA_SEND_WQE_HDR_SIZE +
				 2 * sizeof(struct vrdma_sge);
}

/* CMP_AND_SWP and FETCH_AND_ADD, masked or not. */
static inline bool vrdma_wqe_atomic(const struct vrdma_send_wqe *wqe)
{
	return wqe->opcode == IB_UVERBS_WR_ATOMIC_CMP_AND_SWP ||
	       wqe->opcode == IB_UVERBS_WR_ATOMIC_FETCH_AND_ADD ||
	       vrdma_wqe_masked_atomic(wqe);
}

/* RDMA READ and ATOMIC: only their answers, which carry data, complete. */
static inline bool vrdma_wqe_data_answer(const struct vrdma_send_wqe *wqe)
{
	return wqe->opcode == IB_UVERBS_WR_RDMA_READ || vrdma_wqe_atomic(wqe);
}

/*
 * READs, ATOMICs, ATOMIC WRITEs and FLUSHes use responder resources at the
 * peer: at most max_rd_atomic are outstanding, and a fence waits for them.
 */
static inline bool vrdma_wqe_rd_atomic(const struct vrdma_send_wqe *wqe)
{
	return vrdma_wqe_data_answer(wqe) || vrdma_wqe_placement(wqe);
}

static inline struct vrdma_ah *to_vah(struct ib_ah *ibah)
{
	return container_of(ibah, struct vrdma_ah, ibah);
}

/* The send WQE at send sequence index @idx (struct vrdma_req). */
static inline struct vrdma_swqe *vrdma_swqe_at(struct vrdma_qp *qp, u32 idx)
{
	return &qp->swqe[idx & qp->swqe_mask];
}

/* The requester sent up to req.psn: keep req.max_psn the highest. */
static inline void vrdma_req_psn_sent(struct vrdma_qp *qp)
{
	if (vrdma_psn_diff(qp->req.psn, qp->req.max_psn) > 0)
		qp->req.max_psn = qp->req.psn;
}

/*
 * A message of one packet without acknowledgment (UD, raw) left with PSN
 * @psn: the requester moves on to the next WQE.
 */
static inline void vrdma_req_datagram_sent(struct vrdma_qp *qp,
					   struct vrdma_swqe *swqe, u32 psn)
{
	swqe->first_psn = psn;
	swqe->last_psn = psn;
	swqe->state = VRDMA_SWQE_SENT;
	qp->req.psn = vrdma_psn_add(psn, 1);
	vrdma_req_psn_sent(qp);
	qp->req.cur++;
	qp->req.offset = 0;
}

/* Requests sent and not acknowledged: since a rewind, @psn is not it. */
static inline bool vrdma_req_outstanding(const struct vrdma_qp *qp)
{
	return qp->req.una != qp->req.max_psn;
}

/* main.c */
struct vrdma_dev *vrdma_get_dev_by_netdev_rcu(struct net_device *ndev);
void vrdma_dev_list_del(struct vrdma_dev *vdev);
int vrdma_dev_register(struct vrdma_dev *vdev, const char *name);

/* device.c */
int vrdma_dev_add(const char *ibdev_name, struct net_device *ndev);

/* port.c */
enum ib_mtu vrdma_active_mtu(struct net_device *ndev);
int vrdma_query_port(struct ib_device *ibdev, u32 port,
		     struct ib_port_attr *attr);
int vrdma_get_port_immutable(struct ib_device *ibdev, u32 port,
			     struct ib_port_immutable *immutable);
int vrdma_query_pkey(struct ib_device *ibdev, u32 port, u16 index,
		     u16 *pkey);
enum rdma_link_layer vrdma_get_link_layer(struct ib_device *ibdev, u32 port);
void vrdma_port_update(struct vrdma_dev *vdev);
u32 vrdma_port_mtu(struct vrdma_dev *vdev);

/* net.c */
int vrdma_net_init(void);
void vrdma_net_exit(void);
int vrdma_net_dev_open(struct vrdma_dev *vdev);
void vrdma_net_dev_close(struct vrdma_dev *vdev);

/* netdev.c */
int vrdma_netdev_init(void);
void vrdma_netdev_exit(void);
struct vrdma_dev *vrdma_dev_by_ndev(struct net_device *ndev);
struct net_device *vrdma_addr_ndev(struct net *net, bool ipv6,
				   __be32 addr4,
				   const struct in6_addr *addr6);
struct net_device *vrdma_av_local_ndev(struct net *net, struct vrdma_av *av);
bool vrdma_ndev_active(struct net_device *ndev);
bool vrdma_pkt_local(struct vrdma_dev *vdev, struct vrdma_av *av);
struct vrdma_dev *vrdma_local_dev(struct vrdma_dev *vdev,
				  struct vrdma_av *av);

/* parent.c */
int vrdma_parent_init(void);
void vrdma_parent_exit(void);
int vrdma_parent_create(struct vrdma_dev *vdev);
void vrdma_parent_link(struct vrdma_dev *vdev);
void vrdma_parent_rename(struct vrdma_dev *vdev);
void vrdma_parent_destroy(struct vrdma_dev *vdev);

/* counters.c */
extern const struct ib_device_ops vrdma_counters_ops;

/* restrack.c */
extern const struct ib_device_ops vrdma_restrack_ops;

/* ucontext.c */
int vrdma_udata_req(struct ib_device *ibdev, struct ib_udata *udata,
		    const char *verb, struct vrdma_uverbs_req *req, size_t size,
		    u32 comp_known);
int vrdma_udata_check(struct ib_device *ibdev, struct ib_udata *udata,
		      const char *verb);
int vrdma_alloc_ucontext(struct ib_ucontext *ibuc, struct ib_udata *udata);
void vrdma_dealloc_ucontext(struct ib_ucontext *ibuc);
void vrdma_disassociate_ucontext(struct ib_ucontext *ibuc);
int vrdma_query_ucontext(struct ib_ucontext *ibuc,
			 struct uverbs_attr_bundle *attrs);
int vrdma_mmap(struct ib_ucontext *ibuc, struct vm_area_struct *vma);
void vrdma_mmap_free(struct rdma_user_mmap_entry *rdma_entry);
struct vrdma_mmap_entry *vrdma_mmap_alloc(struct vrdma_ucontext *uc,
					  size_t size, u64 *offset);
void vrdma_mmap_remove(struct vrdma_mmap_entry *entry);

/* pd.c */
int vrdma_alloc_pd(struct ib_pd *ibpd, struct ib_udata *udata);
int vrdma_dealloc_pd(struct ib_pd *ibpd, struct ib_udata *udata);

/* mr.c */
struct ib_mr *vrdma_reg_user_mr(struct ib_pd *ibpd, u64 start, u64 length,
				u64 iova, int access, struct ib_udata *udata);
struct ib_mr *vrdma_get_dma_mr(struct ib_pd *ibpd, int access);
int vrdma_mr_alloc_key(struct vrdma_dev *vdev, struct vrdma_mr *mr);
int vrdma_mr_access_ok(int access);
int vrdma_dereg_mr(struct ib_mr *ibmr, struct ib_udata *udata);
struct ib_mr *vrdma_rereg_user_mr(struct ib_mr *ibmr, int flags, u64 start,
				  u64 length, u64 iova, int access,
				  struct ib_pd *ibpd, struct ib_udata *udata);
struct vrdma_mr *vrdma_mr_get(struct vrdma_dev *vdev, u32 key);
void vrdma_mr_put(struct vrdma_mr *mr);
int vrdma_mr_check(struct vrdma_mr *mr, struct vrdma_pd *pd, u32 key,
		   u64 iova, u64 length, int access);
int vrdma_rkey_get(struct vrdma_qp *qp, u32 rkey, u64 va, u64 length,
		   int access, struct vrdma_mr **mrp);
int vrdma_mr_copy(struct vrdma_mr *mr, u64 iova, void *buf, u32 length,
		  bool to_mr);
void *vrdma_mr_map(struct vrdma_mr *mr, u64 iova, u32 length, u32 *chunk);
void vrdma_mr_unmap(struct vrdma_mr *mr, void *kaddr);
int vrdma_mr_copy_from_skb(struct vrdma_mr *mr, u64 iova,
			   const struct sk_buff *skb, u32 offset, u32 length);
int vrdma_sgl_check(struct vrdma_dev *vdev, struct vrdma_pd *pd,
		    const struct vrdma_sge *sge, u32 num_sge, int access,
		    u32 *total);
int vrdma_sgl_copy(struct vrdma_dev *vdev, struct vrdma_pd *pd,
		   const struct vrdma_sge *sge, u32 num_sge, u32 offset,
		   void *buf, u32 length, bool to_sgl);
int vrdma_sgl_copy_from_skb(struct vrdma_dev *vdev, struct vrdma_pd *pd,
			    const struct vrdma_sge *sge, u32 num_sge,
			    u32 offset, const struct sk_buff *skb,
			    u32 skb_offset, u32 length);
int vrdma_sgl_add_frags(struct vrdma_dev *vdev, struct vrdma_pd *pd,
			const struct vrdma_sge *sge, u32 num_sge, u32 offset,
			struct sk_buff *skb, u32 length);
/**
 * struct vrdma_atomic_op - what an ATOMIC does to its word
 * @cmp_swap: compare-and-swap; else fetch-and-add
 * @compare: compare-and-swap: the value compared with the word
 * @swap_add: the value swapped in, or added
 * @compare_mask: compare-and-swap: the bits compared (all ones: plain)
 * @swap_add_mask: compare-and-swap: the bits swapped (all ones: plain);
 *	fetch-and-add: the last bit of each field, whose carry is dropped
 *	(0: plain)
 */
struct vrdma_atomic_op {
	bool cmp_swap;
	u64 compare;
	u64 swap_add;
	u64 compare_mask;
	u64 swap_add_mask;
};

/* A plain compare-and-swap or fetch-and-add: the masks that change nothing. */
static inline struct vrdma_atomic_op
vrdma_atomic_plain(bool cmp_swap, u64 compare, u64 swap_add)
{
	return (struct vrdma_atomic_op){
		.cmp_swap = cmp_swap,
		.compare = compare,
		.swap_add = swap_add,
		.compare_mask = cmp_swap ? ~0ULL : 0,
		.swap_add_mask = cmp_swap ? ~0ULL : 0,
	};
}

int vrdma_mr_atomic(struct vrdma_mr *mr, u64 iova,
		    const struct vrdma_atomic_op *aop, u64 *orig);
int vrdma_mr_atomic_write(struct vrdma_mr *mr, u64 iova, const u8 *value);
int vrdma_invalidate_key(struct vrdma_qp *qp, u32 key, bool remote);

/* odp.c */
int vrdma_odp_init(struct vrdma_mr *mr, u64 start);
void vrdma_odp_fini(struct vrdma_mr *mr);
u64 vrdma_odp_user_start(struct vrdma_mr *mr);
unsigned long vrdma_odp_mapped_pages(struct vrdma_mr *mr);
int vrdma_odp_access(struct vrdma_mr *mr, u64 iova, u32 length, bool write,
		     int (*fn)(void *kaddr, u32 len, u32 done, void *ctx),
		     void *ctx);
int vrdma_advise_mr(struct ib_pd *ibpd, enum ib_uverbs_advise_mr_advice advice,
		    u32 flags, struct ib_sge *sg_list, u32 num_sge,
		    struct uverbs_attr_bundle *attrs);

/* mw.c */
int vrdma_mw_dev_init(struct vrdma_dev *vdev);
void vrdma_mw_dev_fini(struct vrdma_dev *vdev);
int vrdma_alloc_mw(struct ib_mw *ibmw, struct ib_udata *udata);
int vrdma_dealloc_mw(struct ib_mw *ibmw);
u8 vrdma_mw_bind(struct vrdma_qp *qp, const struct vrdma_send_wqe *wqe);
int vrdma_mw_invalidate(struct vrdma_qp *qp, u32 rkey, bool remote);
int vrdma_mw_rkey_get(struct vrdma_qp *qp, u32 rkey, u64 va, u64 length,
		      int access, struct vrdma_mr **mrp);

/* dm.c */
struct ib_dm *vrdma_alloc_dm(struct ib_device *ibdev,
			     struct ib_ucontext *ibuc,
			     struct ib_dm_alloc_attr *attr,
			     struct uverbs_attr_bundle *attrs);
int vrdma_dealloc_dm(struct ib_dm *ibdm, struct uverbs_attr_bundle *attrs);
struct ib_mr *vrdma_reg_dm_mr(struct ib_pd *ibpd, struct ib_dm *ibdm,
			      struct ib_dm_mr_attr *attr,
			      struct uverbs_attr_bundle *attrs);
void vrdma_dm_dev_init(struct vrdma_dev *vdev);

/* dmabuf.c */
struct ib_mr *vrdma_reg_user_mr_dmabuf(struct ib_pd *ibpd, u64 offset,
				       u64 length, u64 iova, int fd,
				       int access, VRDMA_DMABUF_ATTRS *attrs);
int vrdma_dmabuf_check_access(struct vrdma_mr *mr, int access);
void vrdma_dmabuf_fini(struct vrdma_mr *mr);

/* frmr.c */
struct ib_mr *vrdma_alloc_mr(struct ib_pd *ibpd, enum ib_mr_type type,
			     u32 max_num_sg);
int vrdma_map_mr_sg(struct ib_mr *ibmr, struct scatterlist *sg, int sg_nents,
		    unsigned int *sg_offset);
u8 vrdma_frmr_reg(struct vrdma_qp *qp, const struct vrdma_send_wqe *wqe);
int vrdma_frmr_invalidate(struct vrdma_qp *qp, u32 key);
struct vrdma_mr *vrdma_frmr_find(struct vrdma_dev *vdev, u32 key);
void *vrdma_frmr_ptr(struct vrdma_mr *mr, u64 iova, u32 *chunk);

/* queue.c */
int vrdma_queue_init(struct vrdma_queue *q, struct vrdma_ucontext *uc,
		     u32 num_entries, u32 entry_size,
		     struct vrdma_ring_info *info);
void vrdma_queue_destroy(struct vrdma_queue *q);
int vrdma_queue_respond(struct vrdma_queue *q, struct ib_udata *udata,
			void *resp, size_t len);
int vrdma_queue_count(struct vrdma_queue *q, u32 *count);
bool vrdma_queue_full(struct vrdma_queue *q);

/* A ring in kernel memory: the queue of a kernel consumer. */
static inline bool vrdma_queue_is_kernel(const struct vrdma_queue *q)
{
	return !q->mmap;
}

static inline void *vrdma_queue_slot(struct vrdma_queue *q, u32 idx)
{
	return q->buf + (size_t)(idx & q->mask) * q->entry_size;
}

void vrdma_queue_move(struct vrdma_queue *dst, struct vrdma_queue *src,
		      u32 first, u32 n);
void vrdma_queue_consume(struct vrdma_queue *q, u32 n);
void vrdma_queue_produce(struct vrdma_queue *q);
void vrdma_queue_reset(struct vrdma_queue *q);
void vrdma_sq_want_doorbell(struct vrdma_qp *qp);

/* cq.c */
int vrdma_create_cq(struct ib_cq *ibcq, const struct ib_cq_init_attr *attr,
		    VRDMA_CQ_ATTRS *attrs);
int vrdma_destroy_cq(struct ib_cq *ibcq, struct ib_udata *udata);
int vrdma_resize_cq(struct ib_cq *ibcq, int cqe, struct ib_udata *udata);
int vrdma_req_notify_cq(struct ib_cq *ibcq, enum ib_cq_notify_flags flags);
int vrdma_cq_post(struct vrdma_cq *cq, const struct vrdma_cqe *cqe,
		  bool solicited);
int vrdma_cq_post_tm(struct vrdma_cq *cq, const struct vrdma_cqe *cqe,
		     const struct vrdma_cqe_tm *tm, bool solicited);

/* qp.c */
int vrdma_create_qp(struct ib_qp *ibqp, struct ib_qp_init_attr *init,
		    struct ib_udata *udata);
int vrdma_modify_qp(struct ib_qp *ibqp, struct ib_qp_attr *attr,
		    int mask, struct ib_udata *udata);
int vrdma_query_qp(struct ib_qp *ibqp, struct ib_qp_attr *attr, int mask,
		   struct ib_qp_init_attr *init);
int vrdma_destroy_qp(struct ib_qp *ibqp, struct ib_udata *udata);
int vrdma_post_send(struct ib_qp *ibqp, const struct ib_send_wr *wr,
		    const struct ib_send_wr **bad_wr);
int vrdma_post_recv(struct ib_qp *ibqp, const struct ib_recv_wr *wr,
		    const struct ib_recv_wr **bad_wr);
struct vrdma_qp *vrdma_qp_get(struct vrdma_dev *vdev, u32 qpn);
void vrdma_qp_put(struct vrdma_qp *qp);
void vrdma_qp_error(struct vrdma_qp *qp, enum ib_event_type event);
void vrdma_qp_sq_error(struct vrdma_qp *qp);
bool vrdma_qp_receives(struct vrdma_qp *qp);

/* txq.c */
struct vrdma_txq *vrdma_txq_create(struct vrdma_dev *vdev);
void vrdma_txq_destroy(struct vrdma_txq *q);
void vrdma_txq_exit(void);

/* sched.c */
int vrdma_sched_init(void);
void vrdma_sched_exit(void);
void vrdma_queue_background(struct work_struct *work);
void vrdma_sched_qp_init(struct vrdma_qp *qp);
void vrdma_sched_qp_stop(struct vrdma_qp *qp);
/* Bit of vrdma_qp.owner. */
#define VRDMA_QP_OWNED	0

/*
 * The engines' state may be touched: the QP is owned, by a holder of its
 * mutex (vrdma_qp_lock()) or by its tasklet (sched.c).
 */
static inline void vrdma_qp_assert_owned(struct vrdma_qp *qp)
{
	lockdep_assert(test_bit(VRDMA_QP_OWNED, &qp->owner));
}

/* Owned in process context: what the tasklet must leave to the task. */
static inline void vrdma_qp_assert_locked(struct vrdma_qp *qp)
{
	lockdep_assert_held(&qp->mutex);
	vrdma_qp_assert_owned(qp);
}

void vrdma_qp_lock(struct vrdma_qp *qp);
bool vrdma_qp_trylock(struct vrdma_qp *qp);
void vrdma_qp_unlock(struct vrdma_qp *qp);
void vrdma_qp_schedule(struct vrdma_qp *qp);
void vrdma_qp_continue(struct vrdma_qp *qp);
void vrdma_qp_doorbell(struct vrdma_qp *qp);
void vrdma_qp_rcv(struct vrdma_qp *qp, struct sk_buff *skb);
void vrdma_qp_rcv_local(struct vrdma_qp *qp, struct sk_buff *skb);
void vrdma_qp_hold_peer(struct vrdma_qp *qp);
void vrdma_qp_release_peer(struct vrdma_qp *qp);

/* rq.c */
bool vrdma_take_rwqe(struct vrdma_qp *qp);
void vrdma_flush_rq(struct vrdma_qp *qp);

/* debugfs.c */
void vrdma_debugfs_init(void);
void vrdma_debugfs_exit(void);
void vrdma_debugfs_dev_add(struct vrdma_dev *vdev);
void vrdma_debugfs_dev_del(struct vrdma_dev *vdev);
void vrdma_debugfs_qp_add(struct vrdma_qp *qp);
void vrdma_debugfs_qp_del(struct vrdma_qp *qp);

/* srq.c */
int vrdma_create_srq(struct ib_srq *ibsrq, struct ib_srq_init_attr *init,
		     struct ib_udata *udata);
int vrdma_modify_srq(struct ib_srq *ibsrq, struct ib_srq_attr *attr,
		     enum ib_srq_attr_mask mask, struct ib_udata *udata);
int vrdma_query_srq(struct ib_srq *ibsrq, struct ib_srq_attr *attr);
int vrdma_destroy_srq(struct ib_srq *ibsrq, struct ib_udata *udata);
int vrdma_srq_take(struct vrdma_srq *srq, struct vrdma_recv_wqe *wqe);

/* tm.c */
extern const struct uapi_definition vrdma_tm_uapi_defs[];
int vrdma_tm_srq_create(struct vrdma_srq *srq, struct ib_srq_init_attr *init,
			u32 max_ops);
void vrdma_tm_srq_destroy(struct vrdma_srq *srq);
bool vrdma_tm_take(struct vrdma_qp *qp, struct sk_buff *skb);
int vrdma_tm_complete(struct vrdma_qp *qp, struct vrdma_cqe *cqe,
		      bool solicited);
void vrdma_tm_swqe_done(struct vrdma_qp *qp, struct vrdma_swqe *swqe,
			u8 status);
void vrdma_tm_qp_reset(struct vrdma_qp *qp);

/* xrc.c */
int vrdma_alloc_xrcd(struct ib_xrcd *ibxrcd, struct ib_udata *udata);
int vrdma_dealloc_xrcd(struct ib_xrcd *ibxrcd, struct ib_udata *udata);
void vrdma_xrc_dev_init(struct vrdma_dev *vdev);
void vrdma_xrc_dev_fini(struct vrdma_dev *vdev);
int vrdma_xrc_srq_add(struct vrdma_dev *vdev, struct vrdma_srq *srq);
void vrdma_xrc_srq_publish(struct vrdma_srq *srq);
void vrdma_xrc_srq_del(struct vrdma_srq *srq);
void vrdma_xrc_tgt_add(struct vrdma_qp *qp, struct ib_xrcd *ibxrcd);
void vrdma_xrc_tgt_del(struct vrdma_qp *qp);
void vrdma_xrc_tgt_reset(struct vrdma_qp *qp);
bool vrdma_xrc_bind(struct vrdma_qp *qp, struct sk_buff *skb);

/* ah.c */
int vrdma_create_ah(struct ib_ah *ibah, struct rdma_ah_init_attr *init,
		    struct ib_udata *udata);
int vrdma_destroy_ah(struct ib_ah *ibah, u32 flags);
struct vrdma_ah_dest *vrdma_ah_get(struct vrdma_dev *vdev, u32 handle,
				   struct vrdma_pd *pd);
void vrdma_ah_put(struct vrdma_ah_dest *dest);
int vrdma_av_set(struct vrdma_av *av, const struct rdma_ah_attr *attr);

/* mcast.c */
int vrdma_mcast_dev_init(struct vrdma_dev *vdev);
void vrdma_mcast_dev_fini(struct vrdma_dev *vdev);
int vrdma_attach_mcast(struct ib_qp *ibqp, union ib_gid *gid, u16 lid);
int vrdma_detach_mcast(struct ib_qp *ibqp, union ib_gid *gid, u16 lid);
void vrdma_mcast_qp_destroy(struct vrdma_qp *qp);
void vrdma_mcast_rcv(struct vrdma_dev *vdev, struct sk_buff *skb,
		     unsigned int bytes);
bool vrdma_mcast_member(struct vrdma_dev *vdev, const union ib_gid *mgid);

/* raw.c */
int vrdma_raw_dev_init(struct vrdma_dev *vdev);
void vrdma_raw_dev_fini(struct vrdma_dev *vdev);
void vrdma_raw_netdev_gone(struct vrdma_dev *vdev);
struct ib_flow *vrdma_create_flow(struct ib_qp *ibqp, struct ib_flow_attr *attr,
				  struct ib_udata *udata);
int vrdma_destroy_flow(struct ib_flow *ibflow);
void vrdma_raw_qp_destroy(struct vrdma_qp *qp);
u32 vrdma_raw_frame_len(const struct sk_buff *skb, int off);
int vrdma_raw_place(struct vrdma_dev *vdev, struct vrdma_pd *pd,
		    const struct vrdma_recv_wqe *wqe, struct sk_buff *skb);

/* wq.c */
int vrdma_rss_selftest(void);
u32 vrdma_toeplitz(const u8 *key, const u8 *in, unsigned int len);
void vrdma_wq_dev_init(struct vrdma_dev *vdev);
void vrdma_wq_dev_fini(struct vrdma_dev *vdev);
void vrdma_wq_attr(struct ib_device_attr *attr);
struct ib_wq *vrdma_create_wq(struct ib_pd *ibpd,
			      struct ib_wq_init_attr *init,
			      struct ib_udata *udata);
int vrdma_modify_wq(struct ib_wq *ibwq, struct ib_wq_attr *attr, u32 mask,
		    struct ib_udata *udata);
int vrdma_destroy_wq(struct ib_wq *ibwq, struct ib_udata *udata);
int vrdma_create_rwq_ind_table(struct ib_rwq_ind_table *ibtbl,
			       struct ib_rwq_ind_table_init_attr *init,
			       struct ib_udata *udata);
int vrdma_destroy_rwq_ind_table(struct ib_rwq_ind_table *ibtbl);
struct vrdma_rss *vrdma_rss_create(struct vrdma_qp *qp,
				   struct ib_qp_init_attr *init,
				   struct ib_udata *udata);
void vrdma_rss_rcv(struct vrdma_qp *qp, struct sk_buff *skb);

/* kverbs.c */
int vrdma_kpost_send(struct vrdma_qp *qp, const struct ib_send_wr *wr,
		     const struct ib_send_wr **bad_wr);
int vrdma_kpost_recv(struct vrdma_qp *qp, const struct ib_recv_wr *wr,
		     const struct ib_recv_wr **bad_wr);
int vrdma_post_srq_recv(struct ib_srq *ibsrq, const struct ib_recv_wr *wr,
			const struct ib_recv_wr **bad_wr);
int vrdma_poll_cq(struct ib_cq *ibcq, int num_entries, struct ib_wc *wc);

/* copy.c: the bulk payload copy */
void vrdma_copy(void *dst, const void *src, size_t len);
int vrdma_copy_from_skb(const struct sk_buff *skb, int offset, void *to,
			int len);
void vrdma_copy_init(void);

#endif /* VRDMA_H */
