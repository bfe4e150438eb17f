/* SPDX-License-Identifier: (GPL-2.0 OR Linux-OpenIB) */
/*
 * vrdma user/kernel ABI.
 *
 * Everything the kernel module (drivers/vrdma/) and the rdma-core provider
 * (userspace-provider/) share lives in this one file, and both include it.
 * The sizes are pinned with static asserts on both sides, so a change that
 * breaks the layout fails to build instead of corrupting memory.
 */
#ifndef VRDMA_ABI_USER_H
#define VRDMA_ABI_USER_H

#include <linux/types.h>
#include <rdma/ib_user_ioctl_cmds.h>

/*
 * Bumped on every incompatible change.  The module reports it as its
 * uverbs_abi_ver; the provider only binds to devices whose version lies in
 * [VRDMA_UVERBS_ABI_VERSION, VRDMA_UVERBS_ABI_VERSION].
 */
#define VRDMA_UVERBS_ABI_VERSION 1

/*
 * The ib_device name prefix "rdma link add" requires ("vrdma0", ...).  A
 * device may be renamed later, so the provider does not match on it.
 */
#define VRDMA_DEVICE_NAME_PREFIX "vrdma"

/*
 * What the parent device of every vrdma ib_device reads in its modalias
 * attribute (/sys/class/infiniband/<ibdev>/device/modalias), and what the
 * provider matches on; "vrdma:" is no bus's prefix, so no other driver's
 * device reads the same.
 */
#define VRDMA_MODALIAS "vrdma:vrdma"

/**
 * struct vrdma_uverbs_req - the driver request of a verb
 * @comp_mask: which optional fields after this header the sender filled
 *	in; the bits are per verb, and none are defined yet
 * @reserved: must be zero
 *
 * The driver request (udata) of every verb starts with this header; a verb
 * that needs more appends its fields behind it, each announced by a
 * @comp_mask bit.  The kernel reads a shorter request as if the missing
 * bytes were zero (today's provider sends none at all), and refuses
 * unknown @comp_mask bits and non-zero bytes beyond the request it knows
 * with EOPNOTSUPP, a non-zero @reserved with EINVAL: a newer provider learns
 * that an older kernel cannot do what it asks instead of being ignored.
 */
struct vrdma_uverbs_req {
	__u32 comp_mask;
	__u32 reserved;
};

/**
 * struct vrdma_alloc_ucontext_resp - driver data of ALLOC_UCONTEXT
 * @abi_version: VRDMA_UVERBS_ABI_VERSION of the running module
 * @reserved: must be zero
 */
struct vrdma_alloc_ucontext_resp {
	__u32 abi_version;
	__u32 reserved;
};

/*
 * Shared rings
 * ------------
 * Every work queue (SQ, RQ, SRQ) and completion queue is a ring of
 * fixed-size entries in memory the kernel allocates and the process maps.
 * A ring starts with struct vrdma_ring; entry i lives at
 *	VRDMA_RING_HDR_SIZE + (i & (num_entries - 1)) * entry_size.
 * Indices are free-running u32 counters: the ring holds prod - cons entries
 * and is full when that equals num_entries (a power of two).
 *
 * The producer writes entries, then publishes them with a store-release of
 * prod; the consumer reads prod with a load-acquire, reads the entries, and
 * returns them with a store-release of cons.  Each index sits on its own
 * cache line so the two sides never write the same line.
 *
 * For SQ/RQ/SRQ user space produces and the kernel consumes; for a CQ the
 * kernel produces and user space consumes.  The kernel never trusts what
 * user space writes: it keeps its own copy of the index it owns, reads the
 * other side's index once, checks it, and copies each WQE out of the ring
 * before looking at it.
 *
 * no_doorbell (SQ only, written by the kernel): while it is set, the
 * kernel holds WQEs it may not send yet (the window, max_rd_atomic, a
 * fence, an RNR wait) or awaits the answers to many requests, and is
 * certain to read prod again without being asked, when a response or a
 * timer comes; the provider may then skip the doorbell's system call.
 * The provider publishes prod, makes a full barrier, then reads the flag;
 * the kernel clears it, makes a full barrier, then reads prod: one of the
 * two sees the other's write.
 */
struct vrdma_ring {
	__u32 prod;
	__u32 reserved0[15];
	__u32 cons;
	__u32 no_doorbell;
	__u32 reserved1[14];
};

#define VRDMA_RING_HDR_SIZE	128

/* One scatter/gather element, as in struct ibv_sge. */
struct vrdma_sge {
	__aligned_u64 addr;
	__u32 length;
	__u32 lkey;
};

/* vrdma_send_wqe.flags, the same bits as enum ibv_send_flags. */
enum vrdma_send_flags {
	VRDMA_SEND_FENCE	= 1 << 0,
	VRDMA_SEND_SIGNALED	= 1 << 1,
	VRDMA_SEND_SOLICITED	= 1 << 2,
	VRDMA_SEND_INLINE	= 1 << 3,
};

/*
 * vrdma_send_wqe.opcode beyond enum ib_uverbs_wr_opcode: work requests
 * only kernel consumers post (the value of the kernel's IB_WR_REG_MR).  A
 * user QP that posts one gets IBV_WC_LOC_QP_OP_ERR: user PDs never hold
 * fast-registration MRs.
 */
enum vrdma_wr_opcode {
	VRDMA_WR_REG_MR		= 0x20,
};

/*
 * The opcodes of the memory placement extensions, the values of the
 * kernel's IB_UVERBS_WR_FLUSH and IB_UVERBS_WR_ATOMIC_WRITE and of
 * rdma-core's IBV_WR_FLUSH and IBV_WR_ATOMIC_WRITE, named here because
 * the uapi headers of Linux 6.1 have no names for them.  Their completions
 * carry VRDMA_WC_FLUSH and VRDMA_WC_ATOMIC_WRITE (IBV_WC_FLUSH,
 * IBV_WC_ATOMIC_WRITE).
 */
enum vrdma_placement_opcode {
	VRDMA_WR_FLUSH		= 14,
	VRDMA_WR_ATOMIC_WRITE	= 15,
	VRDMA_WC_FLUSH		= 8,
	VRDMA_WC_ATOMIC_WRITE	= 9,
};

/*
 * vrdma_send_wqe.flush.type: what a FLUSH makes of the data before it is
 * answered, bits of IB_FLUSH_GLOBAL and IB_FLUSH_PERSISTENT (IBV_FLUSH_*);
 * vrdma_send_wqe.flush.level: IB_FLUSH_RANGE or IB_FLUSH_MR.
 */
enum vrdma_flush_type {
	VRDMA_FLUSH_GLOBAL	= 1 << 0,
	VRDMA_FLUSH_PERSISTENT	= 1 << 1,
};

enum vrdma_flush_level {
	VRDMA_FLUSH_RANGE	= 0,
	VRDMA_FLUSH_MR		= 1,
};

/*
 * Masked atomics, the kernel's IB_WR_MASKED_ATOMIC_CMP_AND_SWP and
 * IB_WR_MASKED_ATOMIC_FETCH_AND_ADD (the values of
 * IB_UVERBS_WR_MASKED_ATOMIC_*; rdma-core has no verb for them, a process
 * may write them into its SQ ring).  Their operands are @atomic's of struct
 * vrdma_send_wqe, their masks a struct vrdma_atomic_masks in the place of
 * the second SGE: the WQE has exactly one SGE, for the 8 bytes of the
 * result, and the SQ's entries room for two (a stride of 96 bytes or
 * more, which any QP with max_send_sge or max_inline_data above 0 has).
 * Their completions carry IBV_WC_COMP_SWAP and IBV_WC_FETCH_ADD (a kernel
 * consumer's IB_WC_MASKED_COMP_SWAP and IB_WC_MASKED_FETCH_ADD).
 */
enum vrdma_masked_atomic_opcode {
	VRDMA_WR_MASKED_ATOMIC_CMP_AND_SWP	= 12,
	VRDMA_WR_MASKED_ATOMIC_FETCH_AND_ADD	= 13,
};

/**
 * struct vrdma_atomic_masks - the masks of a masked atomic
 * @compare_add_mask: compare-and-swap: the bits of the word compared with
 *	@atomic.compare_add; fetch-and-add: the last bit of each field the
 *	word is split into -- no carry leaves a bit set here
 * @swap_mask: compare-and-swap: the bits of the word @atomic.swap
 *	replaces; ignored by fetch-and-add
 *
 * A compare-and-swap with both masks all ones, or a fetch-and-add with a
 * mask of 0, is the plain operation.
 */
struct vrdma_atomic_masks {
	__aligned_u64 compare_add_mask;
	__aligned_u64 swap_mask;
};

/**
 * struct vrdma_send_wqe - one send work request in the SQ ring
 * @wr_id: returned in the CQE
 * @opcode: enum ib_uverbs_wr_opcode (the values of enum ibv_wr_opcode),
 *	enum vrdma_placement_opcode, enum vrdma_masked_atomic_opcode, or
 *	enum vrdma_wr_opcode
 * @num_sge: entries of @sge in use (not with VRDMA_SEND_INLINE)
 * @flags: enum vrdma_send_flags
 * @ex: immediate data (big endian), or the rkey to invalidate (LOCAL_INV,
 *	SEND_WITH_INV)
 * @inline_len: bytes of @inline_data (with VRDMA_SEND_INLINE)
 * @xrc_remote_srqn: on an XRC initiator QP (IBV_QPT_XRC_SEND), the number
 *	of the XRC SRQ at the target that receives the message (its low 24
 *	bits go in the XRCETH of every packet); zero on other QPs
 * @rdma: RDMA WRITE/READ target
 * @atomic: atomic operation target and operands (a masked atomic's masks
 *	follow its one SGE: struct vrdma_atomic_masks)
 * @ud: UD destination: @ud.ah is vrdma_create_ah_resp.ah; a
 *	@ud.remote_qkey with the high bit set sends the QP's own Q_Key
 * @bind: BIND_MW: the memory window whose rkey has the index (the upper 24
 *	bits) of @bind.mw_rkey is bound to [@bind.addr, @bind.addr +
 *	@bind.length) of the MR @bind.mr_lkey with the rights @bind.access
 *	(enum ib_uverbs_access_flags, the values of enum ibv_access_flags),
 *	and its rkey becomes @bind.new_rkey; @bind.length 0 unbinds a type 1
 *	window
 * @atomic_write: VRDMA_WR_ATOMIC_WRITE: the 8 bytes of @atomic_write.value,
 *	as they are in memory, are written at once to @atomic_write.rkey's
 *	8-byte aligned @atomic_write.remote_addr; no SGEs, no inline data
 * @flush: VRDMA_WR_FLUSH: the responder makes the data placed in
 *	[@flush.remote_addr, @flush.remote_addr + @flush.length) of
 *	@flush.rkey (or, with @flush.level VRDMA_FLUSH_MR, of its whole MR)
 *	visible as @flush.type (enum vrdma_flush_type) says; no SGEs
 * @reg: VRDMA_WR_REG_MR: the fast-registration MR whose lkey has the index
 *	of @reg.mr_lkey, its page list set by ib_map_mr_sg(), becomes valid
 *	for [@reg.iova, @reg.iova + @reg.length) with the rights @reg.access
 *	(enum ib_access_flags) under the key @reg.key (same index)
 * @pad: gives the union its fixed size, 40 bytes, whatever the operation
 * @sge: the gather list; with VRDMA_SEND_INLINE the inline data bytes
 *	occupy this space instead
 *
 * The entry is VRDMA_SEND_WQE_HDR_SIZE bytes of header followed by room
 * for max_send_sge SGEs or max_inline_data bytes, whichever is larger,
 * rounded up to a power of two: create_qp returns the stride.
 */
struct vrdma_send_wqe {
	__aligned_u64 wr_id;
	__u8 opcode;
	__u8 num_sge;
	__u16 flags;
	union {
		__be32 imm_data;
		__u32 invalidate_rkey;
	} ex;
	__u32 inline_len;
	__u32 xrc_remote_srqn;
	union {
		struct {
			__aligned_u64 remote_addr;
			__u32 rkey;
			__u32 reserved;
		} rdma;
		struct {
			__aligned_u64 remote_addr;
			__aligned_u64 compare_add;
			__aligned_u64 swap;
			__u32 rkey;
			__u32 reserved;
		} atomic;
		struct {
			__u32 ah;
			__u32 remote_qpn;
			__u32 remote_qkey;
			__u32 reserved;
		} ud;
		struct {
			__u32 mw_rkey;
			__u32 new_rkey;
			__aligned_u64 addr;
			__aligned_u64 length;
			__u32 mr_lkey;
			__u32 access;
		} bind;
		struct {
			__aligned_u64 remote_addr;
			__u32 rkey;
			__u32 reserved;
			__u8 value[8];
		} atomic_write;
		struct {
			__aligned_u64 remote_addr;
			__u32 rkey;
			__u32 length;
			__u8 type;
			__u8 level;
			__u8 reserved[6];
		} flush;
		struct {
			__u32 mr_lkey;
			__u32 key;
			__aligned_u64 iova;
			__aligned_u64 length;
			__u32 access;
			__u32 reserved;
		} reg;
		__u8 pad[40];
	};
	struct vrdma_sge sge[];
};

#define VRDMA_SEND_WQE_HDR_SIZE	64

/**
 * struct vrdma_recv_wqe - one receive work request in an RQ or SRQ ring
 * @wr_id: returned in the CQE
 * @num_sge: entries of @sge in use
 * @reserved: must be zero
 * @sge: the scatter list
 *
 * Header plus max_recv_sge SGEs, rounded up to a power of two.
 */
struct vrdma_recv_wqe {
	__aligned_u64 wr_id;
	__u32 num_sge;
	__u32 reserved;
	struct vrdma_sge sge[];
};

#define VRDMA_RECV_WQE_HDR_SIZE	16

/* vrdma_cqe.wc_flags, the same bits as enum ibv_wc_flags. */
enum vrdma_wc_flags {
	VRDMA_WC_GRH		= 1 << 0,
	VRDMA_WC_WITH_IMM	= 1 << 1,
	VRDMA_WC_WITH_INV	= 1 << 3,
};

/**
 * struct vrdma_cqe - one completion in a CQ ring
 * @wr_id: of the completed work request
 * @status: enum ibv_wc_status
 * @opcode: enum ibv_wc_opcode (VRDMA_WC_FLUSH, VRDMA_WC_ATOMIC_WRITE
 *	included)
 * @wc_flags: enum vrdma_wc_flags
 * @byte_len: bytes received (receive completions) or read/written
 * @ex: immediate data (big endian) or the invalidated rkey
 * @qp_num: the local QP
 * @src_qp: the sending QP (UD)
 * @vendor_err: driver detail for an error status
 * @network_hdr_type: enum vrdma_network_hdr_type: what the 40 bytes in
 *	front of UD data hold
 * @reserved: zero
 */
struct vrdma_cqe {
	__aligned_u64 wr_id;
	__u8 status;
	__u8 opcode;
	__u16 wc_flags;
	__u32 byte_len;
	union {
		__be32 imm_data;
		__u32 invalidate_rkey;
	} ex;
	__u32 qp_num;
	__u32 src_qp;
	__u16 vendor_err;
	__u8 network_hdr_type;
	__u8 reserved;
};

/*
 * vrdma_cqe.network_hdr_type.  A UD receive buffer starts with 40 bytes for
 * the GRH: the IPv6 header, or 20 zero bytes and the IPv4 header (the
 * layout of ib_core's union rdma_network_hdr).  The values are the kernel's
 * enum rdma_network_type.
 */
enum vrdma_network_hdr_type {
	VRDMA_NETWORK_HDR_NONE	= 0,
	VRDMA_NETWORK_HDR_IPV4	= 2,
	VRDMA_NETWORK_HDR_IPV6	= 3,
};

/* The bytes in front of the data of every UD receive. */
#define VRDMA_GRH_SIZE	40

/*
 * Driver data of the create/resize commands.  The kernel answers each ring
 * with its mmap offset and length, its entry count and its stride; the
 * process maps exactly that length at that offset.
 */

/**
 * struct vrdma_ring_info - where and how big a ring is
 * @offset: pass to mmap() on the device file
 * @size: bytes to map
 * @num_entries: power of two
 * @entry_size: stride of entries, power of two
 */
struct vrdma_ring_info {
	__aligned_u64 offset;
	__aligned_u64 size;
	__u32 num_entries;
	__u32 entry_size;
};

/* create_cq and resize_cq */
struct vrdma_create_cq_resp {
	struct vrdma_ring_info cq;
};

/**
 * struct vrdma_create_qp_resp - driver data of create_qp
 * @sq: the send ring
 * @rq: the receive ring (num_entries 0 when the QP uses an SRQ, and for
 *	an XRC initiator QP, which receives nothing)
 * @qpn: the QP number, also in the uverbs response; here for convenience
 * @reserved: zero
 *
 * An XRC target QP (IBV_QPT_XRC_RECV) has no rings and no driver data:
 * ib_core creates it without udata, and its requests name, in their
 * XRCETH, the XRC SRQ that takes them.
 */
struct vrdma_create_qp_resp {
	struct vrdma_ring_info sq;
	struct vrdma_ring_info rq;
	__u32 qpn;
	__u32 reserved;
};

/**
 * struct vrdma_create_srq_resp - driver data of create_srq
 * @rq: the SRQ's receive ring, laid out as a QP's RQ (struct
 *	vrdma_recv_wqe entries)
 * @srqn: an XRC SRQ's number, which initiators name in their WQEs
 *	(@xrc_remote_srqn of struct vrdma_send_wqe) and the XRCETH carries;
 *	0 for a basic SRQ
 * @reserved: zero
 */
struct vrdma_create_srq_resp {
	struct vrdma_ring_info rq;
	__u32 srqn;
	__u32 reserved;
};

/* vrdma_modify_srq_req.hdr.comp_mask bits */
enum {
	VRDMA_MODIFY_SRQ_RING_INFO	= 1 << 0,	/* ring_info is set */
};

/**
 * struct vrdma_modify_srq_req - driver request of modify_srq
 * @hdr: VRDMA_MODIFY_SRQ_RING_INFO in comp_mask announces @ring_info
 * @ring_info: the address, in the caller's memory, of a struct
 *	vrdma_ring_info that the kernel fills with the new ring when
 *	IBV_SRQ_MAX_WR resizes the SRQ: MODIFY_SRQ has no driver response
 *	that could carry it.  A resize without it is refused (EINVAL).
 *
 * A resize moves the WQEs the kernel has not taken yet to the start of a
 * new ring, in order: the new ring's prod is their number, its cons 0.
 * The old ring is dead once the call returns; the provider posts to
 * neither while the call runs.
 */
struct vrdma_modify_srq_req {
	struct vrdma_uverbs_req hdr;
	__aligned_u64 ring_info;
};

/**
 * struct vrdma_create_ah_resp - driver data of create_ah
 * @ah: the handle a UD send WQE names the AH by (vrdma_send_wqe.ud.ah);
 *	never 0.  The kernel only accepts it on QPs of the AH's PD.
 * @reserved: zero
 */
struct vrdma_create_ah_resp {
	__u32 ah;
	__u32 reserved;
};

/*
 * Device memory (ibv_alloc_dm)
 * ----------------------------
 * A DM is zeroed kernel memory the process maps: the provider copies in
 * and out of the mapping (ibv_memcpy_to_dm/from_dm), RDMA reaches it
 * through DM MRs, which are zero based.  ALLOC_DM answers only the handle,
 * and ibv_import_dm() has nothing else, so the provider asks for the
 * rest with a method of the driver's own on UVERBS_OBJECT_DM, through
 * RDMA_VERBS_IOCTL with driver_id RDMA_DRIVER_UNKNOWN (the module's):
 *
 *   VRDMA_IB_ATTR_DM_QUERY_HANDLE       IDR in, the DM (mandatory)
 *   VRDMA_IB_ATTR_DM_QUERY_MMAP_OFFSET  u64 out: pass to mmap() on the
 *                                       device file
 *   VRDMA_IB_ATTR_DM_QUERY_LENGTH       u64 out: bytes of the DM; the
 *                                       mapping is that rounded up to
 *                                       whole pages
 *
 * A handle that names no DM of the command file fails (EINVAL, ENOENT).
 */
enum vrdma_ib_dm_methods {
	VRDMA_IB_METHOD_DM_QUERY = (1U << UVERBS_ID_NS_SHIFT),
};

enum vrdma_ib_dm_query_attrs {
	VRDMA_IB_ATTR_DM_QUERY_HANDLE = (1U << UVERBS_ID_NS_SHIFT),
	VRDMA_IB_ATTR_DM_QUERY_MMAP_OFFSET,
	VRDMA_IB_ATTR_DM_QUERY_LENGTH,
};

/*
 * Receive side scaling (RSS)
 * --------------------------
 * A work queue (ibv_create_wq, IBV_WQT_RQ) is a receive ring of its own,
 * laid out as a QP's RQ (struct vrdma_recv_wqe entries), whose
 * completions go to its own CQ with the WQ's number in vrdma_cqe.qp_num.
 * An indirection table lists 2^n WQs; a raw packet QP created on one
 * (IBV_QP_INIT_ATTR_IND_TABLE) only receives: each frame its flows take
 * goes to the WQ at index (hash & (2^n - 1)), the hash being the Toeplitz
 * hash, under the QP's key, of the frame's fields its rx_hash_fields_mask
 * selects, in the order source address, destination address, source
 * port, destination port (the Microsoft RSS input).  A field the frame has
 * not (an IPv6 address of an IPv4 frame, a port of a fragment) is left
 * out; a frame with none of them hashes to 0.
 *
 * create_qp of such a QP carries struct vrdma_create_qp_rss_req, its
 * comp_mask VRDMA_CREATE_QP_RSS; the answer is struct
 * vrdma_create_qp_resp with no rings (num_entries 0).  A WQ in ERR
 * flushes the WQEs posted to it when modify_wq moves it there, and again
 * at each modify_wq from ERR to ERR, which the provider sends after
 * posting to a WQ in ERR.
 */

/* vrdma_create_qp_rss_req.rx_hash_fields_mask: the values of IBV_RX_HASH_* */
enum vrdma_rx_hash_fields {
	VRDMA_RX_HASH_SRC_IPV4		= 1 << 0,
	VRDMA_RX_HASH_DST_IPV4		= 1 << 1,
	VRDMA_RX_HASH_SRC_IPV6		= 1 << 2,
	VRDMA_RX_HASH_DST_IPV6		= 1 << 3,
	VRDMA_RX_HASH_SRC_PORT_TCP	= 1 << 4,
	VRDMA_RX_HASH_DST_PORT_TCP	= 1 << 5,
	VRDMA_RX_HASH_SRC_PORT_UDP	= 1 << 6,
	VRDMA_RX_HASH_DST_PORT_UDP	= 1 << 7,
};

#define VRDMA_RX_HASH_FIELDS	0xff

/* vrdma_create_qp_rss_req.rx_hash_function: IBV_RX_HASH_FUNC_TOEPLITZ */
#define VRDMA_RX_HASH_FUNC_TOEPLITZ	1

/* The Toeplitz key: 40 bytes, as NICs take (and IPv6 with ports needs). */
#define VRDMA_RSS_KEY_LEN	40

/* vrdma_create_qp_rss_req.hdr.comp_mask */
enum {
	VRDMA_CREATE_QP_RSS	= 1 << 0,
};

/**
 * struct vrdma_create_qp_rss_req - driver request of create_qp for a QP
 *	on an indirection table
 * @hdr: comp_mask VRDMA_CREATE_QP_RSS
 * @rx_hash_fields_mask: enum vrdma_rx_hash_fields; other bits EOPNOTSUPP
 * @rx_hash_function: VRDMA_RX_HASH_FUNC_TOEPLITZ, else EOPNOTSUPP
 * @rx_hash_key_len: VRDMA_RSS_KEY_LEN, else EINVAL
 * @reserved: zero
 * @rx_hash_key: the key
 */
struct vrdma_create_qp_rss_req {
	struct vrdma_uverbs_req hdr;
	__aligned_u64 rx_hash_fields_mask;
	__u8 rx_hash_function;
	__u8 rx_hash_key_len;
	__u8 reserved[6];
	__u8 rx_hash_key[VRDMA_RSS_KEY_LEN];
};

/**
 * struct vrdma_create_wq_resp - driver data of create_wq
 * @rq: the WQ's receive ring
 * @wqn: its number, also in the uverbs response
 * @reserved: zero
 */
struct vrdma_create_wq_resp {
	struct vrdma_ring_info rq;
	__u32 wqn;
	__u32 reserved;
};

/*
 * Tag matching (IBV_SRQT_TM)
 * --------------------------
 * A tag-matching SRQ holds, besides its receive ring, a list of tagged
 * buffers kept by the kernel.  Its QPs' responders match every SEND that
 * begins with a struct vrdma_tmh (the layout of rdma-core's struct
 * ibv_tmh) against the list: a match lands in the tagged buffer without
 * the header (eager) or is fetched by an RDMA READ the receiving QP issues
 * itself (rendezvous: struct vrdma_rvh after the TMH), then a FIN message
 * tells the sender; anything else lands whole in a WQE of the receive
 * ring.  Completions go to the SRQ's CQ.
 *
 * The list is changed by the driver's method VRDMA_IB_METHOD_SRQ_OPS on
 * UVERBS_OBJECT_SRQ (ibv_post_srq_ops), through RDMA_VERBS_IOCTL with
 * driver_id RDMA_DRIVER_UNKNOWN:
 *
 *   VRDMA_IB_ATTR_SRQ_OPS_HANDLE   IDR in, the SRQ (mandatory)
 *   VRDMA_IB_ATTR_SRQ_OPS_WRS      in: an array of struct vrdma_srq_op,
 *                                  of which the SRQ's max_ops at most
 *                                  are executed (the next: ENOMEM)
 *   VRDMA_IB_ATTR_SRQ_OPS_HANDLES  out: a __u32 per op, the handle a
 *                                  TAG_ADD got (0 for the others)
 *   VRDMA_IB_ATTR_SRQ_OPS_RESP     out: struct vrdma_srq_ops_resp
 *
 * The ops are executed in order until one is refused: resp.done says how
 * many were, resp.error why the next one was not (a positive errno).
 */
#define VRDMA_TM_MAX_SGE	4

/* The headers a tag-matching SEND starts with, big endian on the wire. */
enum vrdma_tmh_opcode {
	VRDMA_TMH_NO_TAG	= 0,
	VRDMA_TMH_RNDV		= 1,
	VRDMA_TMH_FIN		= 2,
	VRDMA_TMH_EAGER		= 3,
};

struct vrdma_tmh {
	__u8 opcode;
	__u8 reserved[3];
	__be32 app_ctx;
	__be64 tag;
};

struct vrdma_rvh {
	__be64 va;
	__be32 rkey;
	__be32 len;
};

/* vrdma_srq_op.opcode and .flags: enum ibv_ops_wr_opcode, ibv_ops_flags */
enum vrdma_srq_op_opcode {
	VRDMA_SRQ_OP_TAG_ADD	= 0,
	VRDMA_SRQ_OP_TAG_DEL	= 1,
	VRDMA_SRQ_OP_TAG_SYNC	= 2,
};

enum vrdma_srq_op_flags {
	VRDMA_SRQ_OP_SIGNALED	= 1 << 0,
	VRDMA_SRQ_OP_TM_SYNC	= 1 << 1,
};

/**
 * struct vrdma_srq_op - one operation on a tag-matching SRQ's list
 * @wr_id: returned in the operation's completion
 * @recv_wr_id: TAG_ADD: returned in the tagged buffer's completions
 * @tag: TAG_ADD: a message matches if its tag & @mask == @tag & @mask
 * @mask: TAG_ADD
 * @opcode: enum vrdma_srq_op_opcode
 * @flags: enum vrdma_srq_op_flags
 * @num_sge: TAG_ADD: entries of @sge, at most VRDMA_TM_MAX_SGE
 * @unexpected_cnt: with VRDMA_SRQ_OP_TM_SYNC, the unexpected messages the
 *	process has handled: matching resumes when it is the kernel's count
 * @handle: TAG_DEL: the handle TAG_ADD returned
 * @reserved: must be zero
 * @sge: TAG_ADD: the buffer, lkeys of the SRQ's PD with local write
 */
struct vrdma_srq_op {
	__aligned_u64 wr_id;
	__aligned_u64 recv_wr_id;
	__aligned_u64 tag;
	__aligned_u64 mask;
	__u8 opcode;
	__u8 flags;
	__u16 num_sge;
	__u32 unexpected_cnt;
	__u32 handle;
	__u32 reserved;
	struct vrdma_sge sge[VRDMA_TM_MAX_SGE];
};

/**
 * struct vrdma_srq_ops_resp - what VRDMA_IB_METHOD_SRQ_OPS did
 * @done: operations executed, in order
 * @error: 0 if all were, else the positive errno that refused the next
 */
struct vrdma_srq_ops_resp {
	__u32 done;
	__u32 error;
};

enum vrdma_ib_srq_methods {
	VRDMA_IB_METHOD_SRQ_OPS = (1U << UVERBS_ID_NS_SHIFT),
};

enum vrdma_ib_srq_ops_attrs {
	VRDMA_IB_ATTR_SRQ_OPS_HANDLE = (1U << UVERBS_ID_NS_SHIFT),
	VRDMA_IB_ATTR_SRQ_OPS_WRS,
	VRDMA_IB_ATTR_SRQ_OPS_HANDLES,
	VRDMA_IB_ATTR_SRQ_OPS_RESP,
};

/* vrdma_create_srq_req.hdr.comp_mask bits */
enum {
	VRDMA_CREATE_SRQ_TM	= 1 << 0,	/* max_ops is set */
};

/**
 * struct vrdma_create_srq_req - driver request of create_srq
 * @hdr: VRDMA_CREATE_SRQ_TM announces @max_ops
 * @max_ops: a tag-matching SRQ: operations one VRDMA_IB_METHOD_SRQ_OPS
 *	call may carry, 1 to tm_caps.max_ops (uverbs has no field for it)
 * @reserved: must be zero
 */
struct vrdma_create_srq_req {
	struct vrdma_uverbs_req hdr;
	__u32 max_ops;
	__u32 reserved;
};

/*
 * Completions of tag matching: the values of rdma-core's IBV_WC_TM_*
 * opcodes, flags and statuses, which the kernel's uapi does not name.
 */
enum vrdma_wc_tm_opcode {
	VRDMA_WC_TM_ADD		= 0x82,
	VRDMA_WC_TM_DEL		= 0x83,
	VRDMA_WC_TM_SYNC	= 0x84,
	VRDMA_WC_TM_RECV	= 0x85,
	VRDMA_WC_TM_NO_TAG	= 0x86,
};

enum vrdma_wc_tm_flags {
	VRDMA_WC_TM_SYNC_REQ	= 1 << 4,
	VRDMA_WC_TM_MATCH	= 1 << 5,
	VRDMA_WC_TM_DATA_VALID	= 1 << 6,
};

enum vrdma_wc_tm_status {
	VRDMA_WC_TM_ERR			= 22,
	VRDMA_WC_TM_RNDV_INCOMPLETE	= 23,
};

/* vrdma_create_cq_req.hdr.comp_mask bits */
enum {
	VRDMA_CREATE_CQ_CQE_SIZE = 1 << 0,	/* cqe_size is set */
};

/**
 * struct vrdma_create_cq_req - driver request of create_cq
 * @hdr: VRDMA_CREATE_CQ_CQE_SIZE announces @cqe_size
 * @cqe_size: sizeof(struct vrdma_cqe), or VRDMA_CQE_TM_SIZE for a CQ whose
 *	entries carry struct vrdma_cqe_tm behind the CQE (IBV_WC_EX_WITH_TM_INFO)
 * @reserved: must be zero
 *
 * Only CQs that ask for the larger entry pay for it.
 */
struct vrdma_create_cq_req {
	struct vrdma_uverbs_req hdr;
	__u32 cqe_size;
	__u32 reserved;
};

#define VRDMA_CQE_TM_SIZE	64

/**
 * struct vrdma_cqe_tm - behind the CQE in a CQ of VRDMA_CQE_TM_SIZE entries
 * @tag: the matched message's tag (TM_RECV with VRDMA_WC_TM_MATCH), else 0
 * @priv: its TMH's app_ctx, else 0
 * @reserved: zero
 */
struct vrdma_cqe_tm {
	__aligned_u64 tag;
	__u32 priv;
	__u32 reserved[5];
};

/*
 * Both sides pin these sizes with static asserts (drivers/vrdma/vrdma.h,
 * ucontext.c and the provider): verb request header 8, ring header 128,
 * SGE 16, send WQE header 64, receive WQE header 16, CQE 32, ring info 24,
 * create_qp response 56, create_srq response 32, modify_srq request 16,
 * create_ah response 8 bytes; create_qp RSS request 64, create_wq
 * response 32 bytes; TMH 16, RVH 16, SRQ op 112, SRQ ops response 8,
 * create_srq and create_cq requests 16, TM CQE extension 32 bytes.
 */

#endif /* VRDMA_ABI_USER_H */
