// SPDX-License-Identifier: (GPL-2.0 OR Linux-OpenIB)
/*
 * fake_kernel_test - the provider end to end through the installed
 * libibverbs, against a kernel faked inside this process.
 *
 * The test defines ioctl(), mmap() and munmap() (exported with -rdynamic,
 * so libibverbs and the provider call them): calls on the device file
 * descriptor libibverbs uses here (-1: the fake device has no sysfs node)
 * are answered the way Linux 6.1's uverbs and a vrdma module following the
 * provider's contract would answer them; everything else goes to libc.  The
 * fake kernel allocates rings, returns struct vrdma_*_resp as driver data,
 * lets the provider map the rings, and on every SQ doorbell executes the
 * WQEs as a loopback RC device would (SEND, RDMA WRITE/READ, atomics; XRC
 * SENDs into the XRC SRQ they name), producing CQEs.  Rings start near
 * 2^32 so that every index wraps.
 *
 * What it checks is the provider's half: the commands and driver data it
 * sends, how it maps and uses the rings, that post_recv and poll_cq make no
 * system call, and that post_send makes exactly one, a POST_SEND with no
 * work requests.  The real module is checked by the selftests.
 *
 * No device, module or root is needed.  Output is TAP, then a last line
 * "N passed, N failed"; the exit status is non-zero on any failure.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <endian.h>
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>

#include <rdma/ib_user_ioctl_cmds.h>
#include <rdma/rdma_user_ioctl_cmds.h>

#include "vrdma.h"
#include "tap.h"

#ifndef VRDMA_PROVIDER_SO
#define VRDMA_PROVIDER_SO "libvrdma-rdmav34.so"
#endif

#define FAKE_FD (-1)
#define FAKE_PAGE 4096
/* where every ring's indices start */
#define RING_START 0xfffffff8u
/* where resize_cq puts the new ring's cons */
#define RESIZE_START 0x12345670u
#define FIRST_QPN 0x100
/* the one XRC domain's handle, and the number of XRC SRQ n */
#define KXRCD 9
#define FIRST_SRQN 0x50

/* ------------------------------------------------------------------------
 * The fake kernel.
 */

struct kring {
	void *mem;
	size_t size;
	uint64_t offset;
	uint32_t n, stride;
	int mapped;		/* live mappings by the provider */
};

struct kcq {
	bool live;
	int ring;
	uint32_t prod;		/* the kernel's own copy */
	int arm_calls;
	int solicited_only;
};

struct kqp {
	bool live;
	uint32_t qpn, type;
	int sq, rq;		/* ring numbers, -1: none */
	uint32_t sq_cons, rq_cons;	/* the kernel's own copies */
	int send_cq, recv_cq;
	uint32_t dest_qpn;
	int state;
};

struct ksrq {
	bool live;
	uint32_t type, srqn;	/* srqn: XRC only */
	int ring, cq;
	uint32_t cons;
};

#define MAX_RINGS 128
#define MAX_OBJS 16
/* the last WQEs executed, as the ring held them */
#define WQE_LOG 16
#define WQE_LOG_SIZE 256

static struct {
	struct kring rings[MAX_RINGS];
	int nrings;
	struct kcq cqs[MAX_OBJS];
	struct kqp qps[MAX_OBJS];
	struct ksrq srqs[MAX_OBJS];

	/* knobs */
	bool bad_sq_caps;	/* grant more SGEs than the SQ stride holds */
	bool srq_supported;	/* else CREATE_SRQ is EOPNOTSUPP */
	bool bad_srqn;		/* the driver data's srqn differs from uverbs' */
	uint8_t atomic_cap;	/* what QUERY_DEVICE reports */
	uint64_t device_cap_flags;

	/* what the provider did */
	/* system calls on the device fd: ioctl(), or write() for a doorbell */
	int syscalls, doorbells, rq_doorbells, unknown, uhw_short, overflow;
	int writes;		/* doorbells through write() */
	bool refuse_writes;	/* write() fails with EACCES (other creds) */
	int writes_refused;
	int bad_index;
	int qp_destroys, cq_destroys, srq_destroys;
	int xrcds;		/* XRC domains open */
	uint32_t xrcd_oflags;
	int uhw_unexpected;	/* driver data room where none can come */
	uint32_t last_post_send_len;
	struct ib_uverbs_post_send last_post_send;
	uint8_t last_wqe[VRDMA_SEND_WQE_HDR_SIZE];
	uint8_t wqe_log[WQE_LOG][WQE_LOG_SIZE];
	int executed;		/* WQEs executed so far */
	int query_devices;
	struct ib_uverbs_reg_mr last_reg_mr;
	/* the last ADVISE_MR: PD handle, advice, flags, the SGEs */
	int advises;
	uint32_t advise_pd, advise_advice, advise_flags, advise_nsge;
	struct ib_uverbs_sge advise_sge[4];
} k;

static uint32_t pow2_at_least(uint32_t x)
{
	uint32_t n = 1;

	while (n < x)
		n <<= 1;
	return n;
}

static int kring_alloc(uint32_t n, uint32_t stride, uint32_t start)
{
	struct kring *r = &k.rings[k.nrings];
	struct vrdma_ring *hdr;

	if (k.nrings == MAX_RINGS)
		abort();
	r->n = n;
	r->stride = stride;
	/* whole pages, as mmap() hands them out */
	r->size = (VRDMA_RING_HDR_SIZE + (size_t)n * stride + FAKE_PAGE - 1) &
		  ~(size_t)(FAKE_PAGE - 1);
	r->offset = (uint64_t)(k.nrings + 1) << 24;
	r->mem = aligned_alloc(FAKE_PAGE, r->size);
	if (!r->mem)
		abort();
	memset(r->mem, 0x5a, r->size);
	hdr = r->mem;
	memset(hdr, 0, sizeof(*hdr));
	hdr->prod = start;
	hdr->cons = start;
	return k.nrings++;
}

static void kring_info(int ring, struct vrdma_ring_info *info)
{
	struct kring *r = &k.rings[ring];

	*info = (struct vrdma_ring_info){
		.offset = r->offset,
		.size = r->size,
		.num_entries = r->n,
		.entry_size = r->stride,
	};
}

static void *kring_entry(int ring, uint32_t idx)
{
	struct kring *r = &k.rings[ring];

	return (uint8_t *)r->mem + VRDMA_RING_HDR_SIZE +
	       (size_t)(idx & (r->n - 1)) * r->stride;
}

static struct vrdma_ring *kring_hdr(int ring)
{
	return k.rings[ring].mem;
}

static void kcq_push(struct kcq *cq, const struct vrdma_cqe *cqe)
{
	struct vrdma_ring *hdr = kring_hdr(cq->ring);
	uint32_t cons = __atomic_load_n(&hdr->cons, __ATOMIC_ACQUIRE);

	if (cq->prod - cons >= k.rings[cq->ring].n) {
		k.overflow++;
		return;
	}
	memcpy(kring_entry(cq->ring, cq->prod), cqe, sizeof(*cqe));
	cq->prod++;
	__atomic_store_n(&hdr->prod, cq->prod, __ATOMIC_RELEASE);
}

static struct kqp *kqp_by_qpn(uint32_t qpn)
{
	int i;

	for (i = 0; i < MAX_OBJS; i++)
		if (k.qps[i].live && k.qps[i].qpn == qpn)
			return &k.qps[i];
	return NULL;
}

/* Takes the next receive WQE of a ring into buf, like the module would. */
static bool kring_take(int ring, uint32_t *cons, uint8_t *buf)
{
	struct vrdma_ring *hdr;
	uint32_t prod;

	if (ring < 0)
		return false;
	hdr = kring_hdr(ring);
	prod = __atomic_load_n(&hdr->prod, __ATOMIC_ACQUIRE);
	if (prod - *cons > k.rings[ring].n) {
		k.bad_index++;
		return false;
	}
	if (prod == *cons)
		return false;
	memcpy(buf, kring_entry(ring, *cons), k.rings[ring].stride);
	(*cons)++;
	__atomic_store_n(&hdr->cons, *cons, __ATOMIC_RELEASE);
	return true;
}

static bool krq_take(struct kqp *qp, uint8_t *buf)
{
	return kring_take(qp->rq, &qp->rq_cons, buf);
}

static struct ksrq *ksrq_by_num(uint32_t srqn)
{
	int i;

	for (i = 0; i < MAX_OBJS; i++)
		if (k.srqs[i].live && k.srqs[i].type == IBV_SRQT_XRC &&
		    k.srqs[i].srqn == srqn)
			return &k.srqs[i];
	return NULL;
}

static uint32_t gather(const struct vrdma_send_wqe *wqe, uint8_t *data)
{
	uint32_t len = 0;
	int i;

	if (wqe->flags & VRDMA_SEND_INLINE) {
		memcpy(data, wqe->sge, wqe->inline_len);
		return wqe->inline_len;
	}
	for (i = 0; i < wqe->num_sge; i++) {
		memcpy(data + len, (void *)(uintptr_t)wqe->sge[i].addr,
		       wqe->sge[i].length);
		len += wqe->sge[i].length;
	}
	return len;
}

static bool scatter(const struct vrdma_sge *sge, uint32_t num_sge,
		    const uint8_t *data, uint32_t len)
{
	uint32_t i, n;

	for (i = 0; i < num_sge && len; i++) {
		n = len < sge[i].length ? len : sge[i].length;
		memcpy((void *)(uintptr_t)sge[i].addr, data, n);
		data += n;
		len -= n;
	}
	return !len;
}

/* Delivers a SEND or WRITE_WITH_IMM to dst's RQ; returns the WC status. */
static int kdeliver(struct kqp *src, struct kqp *dst,
		    const struct vrdma_send_wqe *wqe, const uint8_t *data,
		    uint32_t len)
{
	uint8_t buf[4096];
	struct vrdma_recv_wqe *rwqe = (struct vrdma_recv_wqe *)buf;
	struct vrdma_cqe cqe = {};
	struct ksrq *srq;
	int cq;

	if (src->type == IBV_QPT_XRC_SEND) {
		/* to the XRC SRQ the WQE names, through a target QP */
		srq = ksrq_by_num(wqe->xrc_remote_srqn);
		if (!dst || dst->type != IBV_QPT_XRC_RECV || !srq)
			return IBV_WC_REM_INV_REQ_ERR;
		if (!kring_take(srq->ring, &srq->cons, buf))
			return IBV_WC_RNR_RETRY_EXC_ERR;
		cq = srq->cq;
	} else {
		if (!dst || !krq_take(dst, buf))
			return IBV_WC_RNR_RETRY_EXC_ERR;
		cq = dst->recv_cq;
	}

	cqe.wr_id = rwqe->wr_id;
	cqe.qp_num = dst->qpn;
	cqe.src_qp = src->qpn;
	cqe.byte_len = len;
	cqe.opcode = IBV_WC_RECV;
	switch (wqe->opcode) {
	case IB_UVERBS_WR_RDMA_WRITE_WITH_IMM:
		cqe.opcode = IBV_WC_RECV_RDMA_WITH_IMM;
		/* fall through */
	case IB_UVERBS_WR_SEND_WITH_IMM:
		cqe.wc_flags = VRDMA_WC_WITH_IMM;
		cqe.ex.imm_data = wqe->ex.imm_data;
		break;
	case IB_UVERBS_WR_SEND_WITH_INV:
		cqe.wc_flags = VRDMA_WC_WITH_INV;
		cqe.ex.invalidate_rkey = wqe->ex.invalidate_rkey;
		break;
	}
	if (wqe->opcode != IB_UVERBS_WR_RDMA_WRITE_WITH_IMM &&
	    !scatter(rwqe->sge, rwqe->num_sge, data, len))
		cqe.status = IBV_WC_LOC_LEN_ERR;
	kcq_push(&k.cqs[cq], &cqe);
	return IBV_WC_SUCCESS;
}

/* One send WQE, executed as a loopback device would. */
static void kexecute(struct kqp *qp, const struct vrdma_send_wqe *wqe)
{
	struct kqp *dst = kqp_by_qpn(qp->dest_qpn);
	struct vrdma_cqe cqe = {
		.wr_id = wqe->wr_id,
		.qp_num = qp->qpn,
	};
	static uint8_t data[1 << 16];
	uint64_t *target, old;
	uint32_t len;
	int i;

	memcpy(k.last_wqe, wqe, sizeof(k.last_wqe));
	memcpy(k.wqe_log[k.executed++ % WQE_LOG], wqe, WQE_LOG_SIZE);
	switch (wqe->opcode) {
	case IB_UVERBS_WR_SEND:
	case IB_UVERBS_WR_SEND_WITH_IMM:
	case IB_UVERBS_WR_SEND_WITH_INV:
		len = gather(wqe, data);
		cqe.opcode = IBV_WC_SEND;
		cqe.byte_len = len;
		if (qp->type != IBV_QPT_UD)
			cqe.status = kdeliver(qp, dst, wqe, data, len);
		break;
	case IB_UVERBS_WR_RDMA_WRITE:
	case IB_UVERBS_WR_RDMA_WRITE_WITH_IMM:
		len = gather(wqe, data);
		memcpy((void *)(uintptr_t)wqe->rdma.remote_addr, data, len);
		cqe.opcode = IBV_WC_RDMA_WRITE;
		cqe.byte_len = len;
		if (wqe->opcode == IB_UVERBS_WR_RDMA_WRITE_WITH_IMM)
			cqe.status = kdeliver(qp, dst, wqe, data, len);
		break;
	case IB_UVERBS_WR_RDMA_READ:
		for (i = 0; i < wqe->num_sge; i++)
			cqe.byte_len += wqe->sge[i].length;
		scatter(wqe->sge, wqe->num_sge,
			(const uint8_t *)(uintptr_t)wqe->rdma.remote_addr,
			cqe.byte_len);
		cqe.opcode = IBV_WC_RDMA_READ;
		break;
	case IB_UVERBS_WR_ATOMIC_CMP_AND_SWP:
	case IB_UVERBS_WR_ATOMIC_FETCH_AND_ADD:
		target = (uint64_t *)(uintptr_t)wqe->atomic.remote_addr;
		old = *target;
		if (wqe->opcode == IB_UVERBS_WR_ATOMIC_FETCH_AND_ADD) {
			*target = old + wqe->atomic.compare_add;
			cqe.opcode = IBV_WC_FETCH_ADD;
		} else {
			if (old == wqe->atomic.compare_add)
				*target = wqe->atomic.swap;
			cqe.opcode = IBV_WC_COMP_SWAP;
		}
		scatter(wqe->sge, wqe->num_sge, (uint8_t *)&old, sizeof(old));
		cqe.byte_len = sizeof(old);
		break;
	case IB_UVERBS_WR_BIND_MW:
		cqe.opcode = IBV_WC_BIND_MW;
		break;
	case IB_UVERBS_WR_LOCAL_INV:
		cqe.opcode = IBV_WC_LOCAL_INV;
		break;
	default:
		cqe.status = IBV_WC_LOC_QP_OP_ERR;
		break;
	}
	if ((wqe->flags & VRDMA_SEND_SIGNALED) || cqe.status)
		kcq_push(&k.cqs[qp->send_cq], &cqe);
}

/* ERR: every receive WQE completes with a flush error. */
static void krq_flush(struct kqp *qp)
{
	uint8_t buf[4096];
	struct vrdma_recv_wqe *rwqe = (struct vrdma_recv_wqe *)buf;
	struct vrdma_cqe cqe = {
		.status = IBV_WC_WR_FLUSH_ERR,
		.opcode = IBV_WC_RECV,
		.qp_num = qp->qpn,
	};

	while (krq_take(qp, buf)) {
		cqe.wr_id = rwqe->wr_id;
		kcq_push(&k.cqs[qp->recv_cq], &cqe);
	}
}

/* RESET: what is queued is dropped, the indices go on. */
static void kqp_reset(struct kqp *qp)
{
	if (qp->sq < 0)
		return;		/* an XRC target QP */
	qp->sq_cons = __atomic_load_n(&kring_hdr(qp->sq)->prod,
				      __ATOMIC_ACQUIRE);
	__atomic_store_n(&kring_hdr(qp->sq)->cons, qp->sq_cons,
			 __ATOMIC_RELEASE);
	if (qp->rq < 0)
		return;		/* an XRC initiator */
	qp->rq_cons = __atomic_load_n(&kring_hdr(qp->rq)->prod,
				      __ATOMIC_ACQUIRE);
	__atomic_store_n(&kring_hdr(qp->rq)->cons, qp->rq_cons,
			 __ATOMIC_RELEASE);
}

/* The driver's post_send with wr == NULL: run the SQ (flush it in ERR). */
static void kdoorbell(struct kqp *qp)
{
	struct vrdma_ring *hdr = kring_hdr(qp->sq);
	struct vrdma_send_wqe *wqe;
	uint8_t buf[4096];
	uint32_t prod;

	k.doorbells++;
	if (qp->sq < 0) {
		k.bad_index++;	/* rung on a QP without SQ */
		return;
	}
	prod = __atomic_load_n(&hdr->prod, __ATOMIC_ACQUIRE);
	if (prod - qp->sq_cons > k.rings[qp->sq].n) {
		k.bad_index++;
		return;
	}
	while (qp->sq_cons != prod) {
		/* copied out before it is looked at */
		memcpy(buf, kring_entry(qp->sq, qp->sq_cons),
		       k.rings[qp->sq].stride);
		wqe = (struct vrdma_send_wqe *)buf;
		if (qp->state == IBV_QPS_ERR)
			kcq_push(&k.cqs[qp->send_cq], &(struct vrdma_cqe){
					 .wr_id = wqe->wr_id,
					 .status = IBV_WC_WR_FLUSH_ERR,
					 .qp_num = qp->qpn,
				 });
		else
			kexecute(qp, wqe);
		qp->sq_cons++;
		__atomic_store_n(&hdr->cons, qp->sq_cons, __ATOMIC_RELEASE);
	}
}

/* ---- the ioctl protocol ---- */

static struct ib_uverbs_attr *kattr(struct ib_uverbs_ioctl_hdr *hdr,
				    uint16_t id)
{
	int i;

	for (i = 0; i < hdr->num_attrs; i++)
		if (hdr->attrs[i].attr_id == id)
			return &hdr->attrs[i];
	return NULL;
}

/* PTR_IN: up to 8 bytes inline, else a pointer */
static const void *kattr_in(const struct ib_uverbs_attr *a)
{
	return a->len <= sizeof(a->data) ? (const void *)&a->data :
					   (const void *)(uintptr_t)a->data;
}

static uint64_t kattr_u64(struct ib_uverbs_ioctl_hdr *hdr, uint16_t id)
{
	struct ib_uverbs_attr *a = kattr(hdr, id);
	uint64_t v = 0;

	if (a)
		memcpy(&v, kattr_in(a), a->len < 8 ? a->len : 8);
	return v;
}

/* IDR (object handle) attributes carry the handle itself */
static uint32_t kattr_idr(struct ib_uverbs_ioctl_hdr *hdr, uint16_t id)
{
	struct ib_uverbs_attr *a = kattr(hdr, id);

	return a ? a->data : UINT32_MAX;
}

static int kattr_out(struct ib_uverbs_attr *a, const void *src, size_t len)
{
	if (!a || a->len < len)
		return ENOSPC;
	memcpy((void *)(uintptr_t)a->data, src, len);
	a->flags |= UVERBS_ATTR_F_VALID_OUTPUT;
	return 0;
}

/* driver data: the provider must leave room for all of it */
static int kuhw_out(struct ib_uverbs_ioctl_hdr *hdr, const void *src,
		    size_t len)
{
	struct ib_uverbs_attr *a = kattr(hdr, UVERBS_ATTR_UHW_OUT);

	if (!a || a->len != len) {
		k.uhw_short++;
		return EINVAL;
	}
	return kattr_out(a, src, len);
}

static int kcreate_cq(struct ib_uverbs_ioctl_hdr *hdr)
{
	uint32_t cqe = kattr_u64(hdr, UVERBS_ATTR_CREATE_CQ_CQE);
	struct vrdma_create_cq_resp resp = {};
	uint32_t h, resp_cqe;
	struct kcq *cq;

	for (h = 0; h < MAX_OBJS && k.cqs[h].live; h++)
		;
	if (h == MAX_OBJS || !cqe || cqe > 4096)
		return EINVAL;
	/* as vrdma: no timestamps, no IGNORE_OVERRUN */
	if (kattr_u64(hdr, UVERBS_ATTR_CREATE_CQ_FLAGS))
		return EOPNOTSUPP;
	cq = &k.cqs[h];
	*cq = (struct kcq){ .live = true };
	cq->ring = kring_alloc(pow2_at_least(cqe + 1), sizeof(struct vrdma_cqe),
			       RING_START);
	cq->prod = RING_START;
	resp_cqe = k.rings[cq->ring].n - 1;
	kring_info(cq->ring, &resp.cq);

	kattr(hdr, UVERBS_ATTR_CREATE_CQ_HANDLE)->data = h;
	if (kattr_out(kattr(hdr, UVERBS_ATTR_CREATE_CQ_RESP_CQE), &resp_cqe,
		      sizeof(resp_cqe)))
		return ENOSPC;
	return kuhw_out(hdr, &resp, sizeof(resp));
}

static int kqp_slot(void)
{
	int h;

	for (h = 0; h < MAX_OBJS && k.qps[h].live; h++)
		;
	return h;
}

/*
 * An XRC target QP: in the XRC domain alone, no rings, and (as ib_core
 * creates it without udata) no driver data, nor room asked for any.
 */
static int kcreate_xrc_tgt(struct ib_uverbs_ioctl_hdr *hdr, int h)
{
	struct ib_uverbs_qp_cap cap = {};
	struct kqp *qp = &k.qps[h];

	if (kattr_idr(hdr, UVERBS_ATTR_CREATE_QP_XRCD_HANDLE) != KXRCD ||
	    kattr(hdr, UVERBS_ATTR_CREATE_QP_PD_HANDLE) ||
	    kattr(hdr, UVERBS_ATTR_CREATE_QP_SEND_CQ_HANDLE) ||
	    kattr(hdr, UVERBS_ATTR_CREATE_QP_RECV_CQ_HANDLE))
		return EINVAL;
	if (kattr(hdr, UVERBS_ATTR_UHW_OUT) || kattr(hdr, UVERBS_ATTR_UHW_IN))
		k.uhw_unexpected++;
	*qp = (struct kqp){
		.live = true,
		.qpn = FIRST_QPN + h,
		.type = IBV_QPT_XRC_RECV,
		.sq = -1,
		.rq = -1,
		.send_cq = -1,
		.recv_cq = -1,
	};
	kattr(hdr, UVERBS_ATTR_CREATE_QP_HANDLE)->data = h;
	if (kattr_out(kattr(hdr, UVERBS_ATTR_CREATE_QP_RESP_CAP), &cap,
		      sizeof(cap)) ||
	    kattr_out(kattr(hdr, UVERBS_ATTR_CREATE_QP_RESP_QP_NUM), &qp->qpn,
		      sizeof(qp->qpn)))
		return ENOSPC;
	return 0;
}

static int kcreate_qp(struct ib_uverbs_ioctl_hdr *hdr)
{
	struct ib_uverbs_attr *cap_attr = kattr(hdr, UVERBS_ATTR_CREATE_QP_CAP);
	uint32_t type = kattr_u64(hdr, UVERBS_ATTR_CREATE_QP_TYPE);
	struct vrdma_create_qp_resp resp = {};
	bool ini = type == IBV_QPT_XRC_SEND;
	struct ib_uverbs_qp_cap cap;
	uint32_t stride;
	struct kqp *qp;
	int h = kqp_slot();

	if (h == MAX_OBJS || !cap_attr || cap_attr->len != sizeof(cap))
		return EINVAL;
	if (type == IBV_QPT_XRC_RECV)
		return kcreate_xrc_tgt(hdr, h);
	if (kattr(hdr, UVERBS_ATTR_CREATE_QP_SRQ_HANDLE))
		return EOPNOTSUPP;
	if (kattr_idr(hdr, UVERBS_ATTR_CREATE_QP_PD_HANDLE) != 3)
		return EINVAL;
	memcpy(&cap, kattr_in(cap_attr), sizeof(cap));
	if (!cap.max_send_wr || cap.max_send_sge > 32 ||
	    cap.max_recv_sge > 32 || cap.max_inline_data > 512)
		return EINVAL;
	/* an XRC initiator receives nothing: libibverbs asks for no RQ */
	if (ini ? cap.max_recv_wr || cap.max_recv_sge ||
		  kattr(hdr, UVERBS_ATTR_CREATE_QP_RECV_CQ_HANDLE) :
		  !cap.max_recv_wr)
		return EINVAL;

	qp = &k.qps[h];
	*qp = (struct kqp){
		.live = true,
		.qpn = FIRST_QPN + h,
		.type = type,
		.send_cq = kattr_idr(hdr, UVERBS_ATTR_CREATE_QP_SEND_CQ_HANDLE),
		.recv_cq = kattr_idr(hdr, UVERBS_ATTR_CREATE_QP_RECV_CQ_HANDLE),
		.sq_cons = RING_START,
		.rq_cons = RING_START,
		.rq = -1,
	};

	/* grant what the rounded-up rings hold */
	stride = pow2_at_least(VRDMA_SEND_WQE_HDR_SIZE +
			       (cap.max_send_sge * 16 > cap.max_inline_data ?
					cap.max_send_sge * 16 :
					cap.max_inline_data));
	qp->sq = kring_alloc(pow2_at_least(cap.max_send_wr), stride,
			     RING_START);
	cap.max_send_wr = k.rings[qp->sq].n;
	cap.max_send_sge = (stride - VRDMA_SEND_WQE_HDR_SIZE) / 16;
	cap.max_inline_data = stride - VRDMA_SEND_WQE_HDR_SIZE;
	if (k.bad_sq_caps)
		cap.max_send_sge++;
	kring_info(qp->sq, &resp.sq);
	if (!ini) {
		stride = pow2_at_least(VRDMA_RECV_WQE_HDR_SIZE +
				       cap.max_recv_sge * 16);
		qp->rq = kring_alloc(pow2_at_least(cap.max_recv_wr), stride,
				     RING_START);
		cap.max_recv_wr = k.rings[qp->rq].n;
		cap.max_recv_sge = (stride - VRDMA_RECV_WQE_HDR_SIZE) / 16;
		kring_info(qp->rq, &resp.rq);
	}
	resp.qpn = qp->qpn;

	kattr(hdr, UVERBS_ATTR_CREATE_QP_HANDLE)->data = h;
	if (kattr_out(kattr(hdr, UVERBS_ATTR_CREATE_QP_RESP_CAP), &cap,
		      sizeof(cap)) ||
	    kattr_out(kattr(hdr, UVERBS_ATTR_CREATE_QP_RESP_QP_NUM), &qp->qpn,
		      sizeof(qp->qpn)))
		return ENOSPC;
	return kuhw_out(hdr, &resp, sizeof(resp));
}

/* CREATE_SRQ, basic or XRC: a receive ring, and an XRC SRQ's number. */
static int kcreate_srq(struct ib_uverbs_ioctl_hdr *hdr)
{
	uint32_t type = kattr_u64(hdr, UVERBS_ATTR_CREATE_SRQ_TYPE);
	uint32_t max_wr = kattr_u64(hdr, UVERBS_ATTR_CREATE_SRQ_MAX_WR);
	uint32_t max_sge = kattr_u64(hdr, UVERBS_ATTR_CREATE_SRQ_MAX_SGE);
	struct vrdma_create_srq_resp resp = {};
	uint32_t h, stride, cq;
	struct ksrq *srq;

	if (!k.srq_supported)
		return EOPNOTSUPP;	/* a module without SRQs */
	for (h = 0; h < MAX_OBJS && k.srqs[h].live; h++)
		;
	if (h == MAX_OBJS || !max_wr || max_wr > 4096 || max_sge > 32 ||
	    kattr_idr(hdr, UVERBS_ATTR_CREATE_SRQ_PD_HANDLE) != 3)
		return EINVAL;
	cq = kattr_idr(hdr, UVERBS_ATTR_CREATE_SRQ_CQ_HANDLE);
	if (type == IB_UVERBS_SRQT_XRC) {
		if (kattr_idr(hdr, UVERBS_ATTR_CREATE_SRQ_XRCD_HANDLE) !=
			    KXRCD ||
		    cq >= MAX_OBJS || !k.cqs[cq].live)
			return EINVAL;
	} else if (type != IB_UVERBS_SRQT_BASIC) {
		return EOPNOTSUPP;
	}

	srq = &k.srqs[h];
	*srq = (struct ksrq){
		.live = true,
		.type = type,
		.srqn = type == IB_UVERBS_SRQT_XRC ? FIRST_SRQN + h : 0,
		.cq = cq,
		.cons = RING_START,
	};
	stride = pow2_at_least(VRDMA_RECV_WQE_HDR_SIZE + max_sge * 16);
	srq->ring = kring_alloc(pow2_at_least(max_wr), stride, RING_START);
	max_wr = k.rings[srq->ring].n;
	max_sge = (stride - VRDMA_RECV_WQE_HDR_SIZE) / 16;
	kring_info(srq->ring, &resp.rq);
	resp.srqn = srq->srqn + k.bad_srqn;

	kattr(hdr, UVERBS_ATTR_CREATE_SRQ_HANDLE)->data = h;
	if (kattr_out(kattr(hdr, UVERBS_ATTR_CREATE_SRQ_RESP_MAX_WR), &max_wr,
		      sizeof(max_wr)) ||
	    kattr_out(kattr(hdr, UVERBS_ATTR_CREATE_SRQ_RESP_MAX_SGE),
		      &max_sge, sizeof(max_sge)))
		return ENOSPC;
	if (type == IB_UVERBS_SRQT_XRC &&
	    kattr_out(kattr(hdr, UVERBS_ATTR_CREATE_SRQ_RESP_SRQ_NUM),
		      &srq->srqn, sizeof(srq->srqn)))
		return ENOSPC;
	return kuhw_out(hdr, &resp, sizeof(resp));
}

/* RESIZE_CQ: the unpolled CQEs move to a new ring starting at a new cons. */
static int kresize_cq(const struct ib_uverbs_resize_cq *cmd, void *out,
		      size_t outlen, struct ib_uverbs_ioctl_hdr *hdr)
{
	struct ib_uverbs_resize_cq_resp resp = {};
	struct vrdma_create_cq_resp drv = {};
	uint32_t cons, pending, i;
	struct kcq *cq;
	int old, ring;

	if (cmd->cq_handle >= MAX_OBJS || !k.cqs[cmd->cq_handle].live ||
	    outlen < sizeof(resp))
		return EINVAL;
	cq = &k.cqs[cmd->cq_handle];
	old = cq->ring;
	cons = __atomic_load_n(&kring_hdr(old)->cons, __ATOMIC_ACQUIRE);
	pending = cq->prod - cons;
	if (pending > pow2_at_least(cmd->cqe + 1))
		return EINVAL;

	ring = kring_alloc(pow2_at_least(cmd->cqe + 1),
			   sizeof(struct vrdma_cqe), RESIZE_START);
	for (i = 0; i < pending; i++)
		memcpy(kring_entry(ring, RESIZE_START + i),
		       kring_entry(old, cons + i), sizeof(struct vrdma_cqe));
	kring_hdr(ring)->prod = RESIZE_START + pending;
	cq->ring = ring;
	cq->prod = RESIZE_START + pending;

	resp.cqe = k.rings[ring].n - 1;
	memcpy(out, &resp, sizeof(resp));
	kring_info(ring, &drv.cq);
	return kuhw_out(hdr, &drv, sizeof(drv));
}

/* UVERBS_METHOD_INVOKE_WRITE: a legacy write() command over ioctl. */
/* POST_SEND, through INVOKE_WRITE or write(): @in is the command. */
static int kpost_send(const void *in, size_t inlen, void *out, size_t outlen)
{
	struct ib_uverbs_post_send_resp resp = {};
	struct ib_uverbs_post_send req;

	k.last_post_send_len = inlen;
	if (inlen < sizeof(req) || outlen < sizeof(resp))
		return ENOSPC;
	memcpy(&req, in, sizeof(req));
	k.last_post_send = req;
	/* as ib_uverbs_post_send() of Linux 6.1 */
	if (req.wqe_size < sizeof(struct ib_uverbs_send_wr))
		return EINVAL;
	if (req.qp_handle >= MAX_OBJS || !k.qps[req.qp_handle].live)
		return EINVAL;
	/* uverbs passes wr == NULL for an empty list */
	if (!req.wr_count)
		kdoorbell(&k.qps[req.qp_handle]);
	memcpy(out, &resp, sizeof(resp));
	return 0;
}

static int kinvoke_write(struct ib_uverbs_ioctl_hdr *hdr)
{
	struct ib_uverbs_attr *in_a = kattr(hdr, UVERBS_ATTR_CORE_IN);
	struct ib_uverbs_attr *out_a = kattr(hdr, UVERBS_ATTR_CORE_OUT);
	uint64_t cmd = kattr_u64(hdr, UVERBS_ATTR_WRITE_CMD);
	void *out = out_a ? (void *)(uintptr_t)out_a->data : NULL;
	size_t outlen = out_a ? out_a->len : 0;
	const void *in;
	size_t inlen;

	/* libibverbs' probe for INVOKE_WRITE sends no request: too short */
	if (!in_a)
		return ENOSPC;
	in = kattr_in(in_a);
	inlen = in_a->len;

	switch (cmd) {
	case IB_USER_VERBS_CMD_ALLOC_PD: {
		struct ib_uverbs_alloc_pd_resp resp = { .pd_handle = 3 };

		if (outlen < sizeof(resp))
			return ENOSPC;
		memcpy(out, &resp, sizeof(resp));
		return 0;
	}
	case IB_USER_VERBS_CMD_REG_MR: {
		const struct ib_uverbs_reg_mr *req = in;
		struct ib_uverbs_reg_mr_resp resp = {
			.mr_handle = 5,
			.lkey = 0x1005,
			.rkey = 0x2005,
		};

		if (inlen < sizeof(*req) || outlen < sizeof(resp) ||
		    req->pd_handle != 3)
			return EINVAL;
		k.last_reg_mr = *req;
		memcpy(out, &resp, sizeof(resp));
		return 0;
	}
	case IB_USER_VERBS_CMD_QUERY_DEVICE: {
		struct ib_uverbs_query_device_resp resp = {
			.max_qp_wr = 4096,
			.max_sge = 32,
			.device_cap_flags = k.device_cap_flags,
			.atomic_cap = k.atomic_cap,
		};

		k.query_devices++;
		if (outlen < sizeof(resp))
			return ENOSPC;
		memcpy(out, &resp, sizeof(resp));
		return 0;
	}
	case IB_USER_VERBS_CMD_CREATE_AH: {
		/* libibverbs' handle, and the driver's own as driver data */
		struct ib_uverbs_create_ah_resp resp = { .ah_handle = 0x77 };
		struct vrdma_create_ah_resp drv = { .ah = 0x4711 };

		if (inlen < sizeof(struct ib_uverbs_create_ah) ||
		    outlen < sizeof(resp))
			return EINVAL;
		memcpy(out, &resp, sizeof(resp));
		return kuhw_out(hdr, &drv, sizeof(drv));
	}
	case IB_USER_VERBS_CMD_RESIZE_CQ:
		if (inlen < sizeof(struct ib_uverbs_resize_cq))
			return EINVAL;
		return kresize_cq(in, out, outlen, hdr);
	case IB_USER_VERBS_CMD_REQ_NOTIFY_CQ: {
		const struct ib_uverbs_req_notify_cq *req = in;

		if (inlen < sizeof(*req) || req->cq_handle >= MAX_OBJS ||
		    !k.cqs[req->cq_handle].live)
			return EINVAL;
		k.cqs[req->cq_handle].arm_calls++;
		k.cqs[req->cq_handle].solicited_only = req->solicited_only;
		return 0;
	}
	case IB_USER_VERBS_CMD_MODIFY_QP: {
		const struct ib_uverbs_modify_qp *req = in;
		struct kqp *qp;

		if (inlen < sizeof(*req) || req->qp_handle >= MAX_OBJS ||
		    !k.qps[req->qp_handle].live)
			return EINVAL;
		qp = &k.qps[req->qp_handle];
		if (req->attr_mask & IBV_QP_STATE) {
			qp->state = req->qp_state;
			if (qp->state == IBV_QPS_ERR)
				krq_flush(qp);
			if (qp->state == IBV_QPS_RESET)
				kqp_reset(qp);
		}
		if (req->attr_mask & IBV_QP_DEST_QPN)
			qp->dest_qpn = req->dest_qp_num;
		return 0;
	}
	case IB_USER_VERBS_CMD_QUERY_QP: {
		const struct ib_uverbs_query_qp *req = in;
		struct ib_uverbs_query_qp_resp resp = {};

		if (inlen < sizeof(*req) || outlen < sizeof(resp) ||
		    req->qp_handle >= MAX_OBJS || !k.qps[req->qp_handle].live)
			return EINVAL;
		resp.qp_state = k.qps[req->qp_handle].state;
		resp.dest_qp_num = k.qps[req->qp_handle].dest_qpn;
		memcpy(out, &resp, sizeof(resp));
		return 0;
	}
	case IB_USER_VERBS_CMD_OPEN_XRCD: {
		const struct ib_uverbs_open_xrcd *req = in;
		struct ib_uverbs_open_xrcd_resp resp = { .xrcd_handle = KXRCD };

		if (inlen < sizeof(*req) || outlen < sizeof(resp))
			return EINVAL;
		k.xrcds++;
		k.xrcd_oflags = req->oflags;
		memcpy(out, &resp, sizeof(resp));
		return 0;
	}
	case IB_USER_VERBS_CMD_OPEN_QP: {
		/* a second handle on the target QP: here a copy of it */
		const struct ib_uverbs_open_qp *req = in;
		struct ib_uverbs_create_qp_resp resp = {};
		struct kqp *t;
		int h = kqp_slot();

		if (inlen < sizeof(*req) || outlen < sizeof(resp) ||
		    h == MAX_OBJS || req->pd_handle != KXRCD ||
		    req->qp_type != IBV_QPT_XRC_RECV)
			return EINVAL;
		t = kqp_by_qpn(req->qpn);
		if (!t || t->type != IBV_QPT_XRC_RECV)
			return EINVAL;
		if (kattr(hdr, UVERBS_ATTR_UHW_OUT))
			k.uhw_unexpected++;
		k.qps[h] = *t;
		resp.qp_handle = h;
		resp.qpn = t->qpn;
		memcpy(out, &resp, sizeof(resp));
		return 0;
	}
	case IB_USER_VERBS_CMD_POST_SEND:
		return kpost_send(in, inlen, out, outlen);
	case IB_USER_VERBS_CMD_POST_RECV: {
		struct ib_uverbs_post_recv_resp resp = {};
		struct ib_uverbs_post_recv req;

		if (inlen < sizeof(req) || outlen < sizeof(resp))
			return ENOSPC;
		memcpy(&req, in, sizeof(req));
		if (req.qp_handle >= MAX_OBJS || !k.qps[req.qp_handle].live)
			return EINVAL;
		/* wr == NULL: the RQ doorbell, flushes in ERR */
		if (!req.wr_count) {
			k.rq_doorbells++;
			if (k.qps[req.qp_handle].state == IBV_QPS_ERR)
				krq_flush(&k.qps[req.qp_handle]);
		}
		memcpy(out, &resp, sizeof(resp));
		return 0;
	}
	}
	k.unknown++;
	return EOPNOTSUPP;
}

static int kioctl(struct ib_uverbs_ioctl_hdr *hdr)
{
	uint64_t h;

	k.syscalls++;
	switch (hdr->object_id << 16 | hdr->method_id) {
	case UVERBS_OBJECT_DEVICE << 16 | UVERBS_METHOD_INVOKE_WRITE:
		return kinvoke_write(hdr);
	case UVERBS_OBJECT_DEVICE << 16 | UVERBS_METHOD_GET_CONTEXT: {
		struct vrdma_alloc_ucontext_resp resp = {
			.abi_version = VRDMA_UVERBS_ABI_VERSION,
		};
		uint64_t core_support = 0;
		uint32_t vectors = 1;

		kattr_out(kattr(hdr, UVERBS_ATTR_GET_CONTEXT_NUM_COMP_VECTORS),
			  &vectors, sizeof(vectors));
		kattr_out(kattr(hdr, UVERBS_ATTR_GET_CONTEXT_CORE_SUPPORT),
			  &core_support, sizeof(core_support));
		return kuhw_out(hdr, &resp, sizeof(resp));
	}
	case UVERBS_OBJECT_CQ << 16 | UVERBS_METHOD_CQ_CREATE:
		return kcreate_cq(hdr);
	case UVERBS_OBJECT_CQ << 16 | UVERBS_METHOD_CQ_DESTROY: {
		struct ib_uverbs_destroy_cq_resp resp = {};

		h = kattr(hdr, UVERBS_ATTR_DESTROY_CQ_HANDLE)->data;
		if (h >= MAX_OBJS || !k.cqs[h].live)
			return EINVAL;
		k.cqs[h].live = false;
		k.cq_destroys++;
		return kattr_out(kattr(hdr, UVERBS_ATTR_DESTROY_CQ_RESP), &resp,
				 sizeof(resp));
	}
	case UVERBS_OBJECT_QP << 16 | UVERBS_METHOD_QP_CREATE:
		return kcreate_qp(hdr);
	case UVERBS_OBJECT_QP << 16 | UVERBS_METHOD_QP_DESTROY: {
		struct ib_uverbs_destroy_qp_resp resp = {};

		h = kattr(hdr, UVERBS_ATTR_DESTROY_QP_HANDLE)->data;
		if (h >= MAX_OBJS || !k.qps[h].live)
			return EINVAL;
		k.qps[h].live = false;
		k.qp_destroys++;
		return kattr_out(kattr(hdr, UVERBS_ATTR_DESTROY_QP_RESP), &resp,
				 sizeof(resp));
	}
	case UVERBS_OBJECT_SRQ << 16 | UVERBS_METHOD_SRQ_CREATE:
		return kcreate_srq(hdr);
	case UVERBS_OBJECT_SRQ << 16 | UVERBS_METHOD_SRQ_DESTROY: {
		struct ib_uverbs_destroy_srq_resp resp = {};

		h = kattr(hdr, UVERBS_ATTR_DESTROY_SRQ_HANDLE)->data;
		if (h >= MAX_OBJS || !k.srqs[h].live)
			return EINVAL;
		k.srqs[h].live = false;
		k.srq_destroys++;
		return kattr_out(kattr(hdr, UVERBS_ATTR_DESTROY_SRQ_RESP), &resp,
				 sizeof(resp));
	}
	case UVERBS_OBJECT_XRCD << 16 | UVERBS_METHOD_XRCD_DESTROY:
		if (kattr(hdr, UVERBS_ATTR_DESTROY_XRCD_HANDLE)->data != KXRCD ||
		    !k.xrcds)
			return EINVAL;
		k.xrcds--;
		return 0;
	case UVERBS_OBJECT_MR << 16 | UVERBS_METHOD_ADVISE_MR: {
		/* as uverbs checks it: flags, at least one whole SGE */
		struct ib_uverbs_attr *a =
			kattr(hdr, UVERBS_ATTR_ADVISE_MR_SGE_LIST);

		k.advises++;
		if (!a || !a->len || a->len % sizeof(struct ib_uverbs_sge) ||
		    a->len > sizeof(k.advise_sge) ||
		    !kattr(hdr, UVERBS_ATTR_ADVISE_MR_ADVICE))
			return EINVAL;
		k.advise_pd = kattr_idr(hdr, UVERBS_ATTR_ADVISE_MR_PD_HANDLE);
		k.advise_advice = kattr_u64(hdr, UVERBS_ATTR_ADVISE_MR_ADVICE);
		k.advise_flags = kattr_u64(hdr, UVERBS_ATTR_ADVISE_MR_FLAGS);
		k.advise_nsge = a->len / sizeof(struct ib_uverbs_sge);
		memcpy(k.advise_sge, kattr_in(a), a->len);
		if (k.advise_flags & ~(uint32_t)IB_UVERBS_ADVISE_MR_FLAG_FLUSH)
			return EINVAL;
		return 0;
	}
	case UVERBS_OBJECT_PD << 16 | UVERBS_METHOD_PD_DESTROY:
	case UVERBS_OBJECT_MR << 16 | UVERBS_METHOD_MR_DESTROY:
	case UVERBS_OBJECT_AH << 16 | UVERBS_METHOD_AH_DESTROY:
		return 0;
	}
	k.unknown++;
	return EPROTONOSUPPORT;
}

/* ---- the interposed system calls ---- */

int ioctl(int fd, unsigned long request, ...)
{
	static int (*real)(int, unsigned long, ...);
	va_list ap;
	void *arg;
	int ret;

	va_start(ap, request);
	arg = va_arg(ap, void *);
	va_end(ap);

	if (fd == FAKE_FD && request == RDMA_VERBS_IOCTL) {
		ret = kioctl(arg);
		if (ret) {
			errno = ret;
			return -1;
		}
		return 0;
	}
	if (!real)
		real = (__typeof__(real))dlsym(RTLD_NEXT, "ioctl");
	return real(fd, request, arg);
}

/*
 * The legacy command path, as ib_uverbs_write() of Linux 6.1 takes it: a
 * header whose in_words cover the whole write, then the command, which
 * starts with the user address of the response.  Only POST_SEND, the
 * doorbell, comes this way.
 */
static int kwrite(const void *buf, size_t count)
{
	struct ib_uverbs_cmd_hdr hdr;
	uint64_t response;

	k.syscalls++;
	if (k.refuse_writes) {
		k.writes_refused++;
		return EACCES;
	}
	if (count < sizeof(hdr) + sizeof(response))
		return EINVAL;
	memcpy(&hdr, buf, sizeof(hdr));
	if (hdr.in_words * 4u != count)
		return EINVAL;
	if (hdr.command != IB_USER_VERBS_CMD_POST_SEND) {
		k.unknown++;
		return EOPNOTSUPP;
	}
	k.writes++;
	memcpy(&response, (const char *)buf + sizeof(hdr), sizeof(response));
	return kpost_send((const char *)buf + sizeof(hdr), count - sizeof(hdr),
			  (void *)(uintptr_t)response, hdr.out_words * 4u);
}

ssize_t write(int fd, const void *buf, size_t count)
{
	static ssize_t (*real)(int, const void *, size_t);
	int ret;

	if (fd == FAKE_FD) {
		ret = kwrite(buf, count);
		if (ret) {
			errno = ret;
			return -1;
		}
		return count;
	}
	if (!real)
		real = (__typeof__(real))dlsym(RTLD_NEXT, "write");
	return real(fd, buf, count);
}

void *mmap(void *addr, size_t len, int prot, int flags, int fd, off_t off)
{
	static void *(*real)(void *, size_t, int, int, int, off_t);
	int i;

	if (fd == FAKE_FD && !(flags & MAP_ANONYMOUS)) {
		for (i = 0; i < k.nrings; i++) {
			struct kring *r = &k.rings[i];

			if ((uint64_t)off != r->offset)
				continue;
			if (len != r->size || !(flags & MAP_SHARED) ||
			    prot != (PROT_READ | PROT_WRITE))
				break;
			r->mapped++;
			return r->mem;
		}
		errno = EINVAL;
		return MAP_FAILED;
	}
	if (!real)
		real = (__typeof__(real))dlsym(RTLD_NEXT, "mmap");
	return real(addr, len, prot, flags, fd, off);
}

int munmap(void *addr, size_t len)
{
	static int (*real)(void *, size_t);
	int i;

	for (i = 0; i < k.nrings; i++) {
		if (k.rings[i].mem != addr)
			continue;
		if (len != k.rings[i].size || !k.rings[i].mapped) {
			errno = EINVAL;
			return -1;
		}
		k.rings[i].mapped--;
		return 0;
	}
	if (!real)
		real = (__typeof__(real))dlsym(RTLD_NEXT, "munmap");
	return real(addr, len);
}

/* ------------------------------------------------------------------------
 * Loading the provider onto a device with no sysfs node (cmd_fd -1).
 */

static const struct verbs_device_ops *vrdma_ops;

void verbs_register_driver_34(const struct verbs_device_ops *ops)
{
	void (*real)(const struct verbs_device_ops *ops);

	if (ops && ops->name && !strcmp(ops->name, VRDMA_PROVIDER_NAME))
		vrdma_ops = ops;
	real = (__typeof__(real))dlvsym(RTLD_NEXT, "verbs_register_driver_34",
					"IBVERBS_PRIVATE_34");
	if (real)
		real(ops);
}

static struct ibv_context *ctx;
static struct ibv_pd *pd;
static struct ibv_mr *mr;
static struct ibv_cq *scq, *rcq;
static struct ibv_qp *qp;

/* registered memory: all the buffers the tests move data between */
static uint8_t mem[1 << 16];
#define SRC (mem)
#define DST (mem + 0x4000)
#define REMOTE (mem + 0x8000)

static int mapped_rings(void)
{
	int i, n = 0;

	for (i = 0; i < k.nrings; i++)
		n += k.rings[i].mapped;
	return n;
}

static struct ibv_qp *create_rc_qp(int sq_sig_all)
{
	struct ibv_qp_init_attr attr = {
		.send_cq = scq,
		.recv_cq = rcq,
		.cap = { .max_send_wr = 5, .max_recv_wr = 5, .max_send_sge = 3,
			 .max_recv_sge = 2, .max_inline_data = 40 },
		.qp_type = IBV_QPT_RC,
		.sq_sig_all = sq_sig_all,
	};

	return ibv_create_qp(pd, &attr);
}

static int to_init(struct ibv_qp *q)
{
	struct ibv_qp_attr attr = {
		.qp_state = IBV_QPS_INIT,
		.port_num = 1,
		.qp_access_flags = IBV_ACCESS_REMOTE_WRITE |
				   IBV_ACCESS_REMOTE_READ |
				   IBV_ACCESS_REMOTE_ATOMIC,
	};

	return ibv_modify_qp(q, &attr,
			     IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT |
				     IBV_QP_ACCESS_FLAGS);
}

static int to_rtr(struct ibv_qp *q)
{
	struct ibv_qp_attr attr = {
		.qp_state = IBV_QPS_RTR,
		.path_mtu = IBV_MTU_1024,
		.dest_qp_num = q->qp_num,
		.ah_attr = { .is_global = 1, .port_num = 1 },
		.max_dest_rd_atomic = 1,
		.min_rnr_timer = 12,
	};

	return ibv_modify_qp(q, &attr,
			     IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU |
				     IBV_QP_DEST_QPN | IBV_QP_RQ_PSN |
				     IBV_QP_MAX_DEST_RD_ATOMIC |
				     IBV_QP_MIN_RNR_TIMER);
}

static int to_rts(struct ibv_qp *q)
{
	struct ibv_qp_attr attr = {
		.qp_state = IBV_QPS_RTS,
		.timeout = 14,
		.retry_cnt = 7,
		.rnr_retry = 7,
		.max_rd_atomic = 1,
	};

	return ibv_modify_qp(q, &attr,
			     IBV_QP_STATE | IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT |
				     IBV_QP_RNR_RETRY | IBV_QP_SQ_PSN |
				     IBV_QP_MAX_QP_RD_ATOMIC);
}

/* INIT, RTR to itself, RTS */
static int connect_loopback(struct ibv_qp *q)
{
	int ret = to_init(q);

	if (!ret)
		ret = to_rtr(q);
	if (!ret)
		ret = to_rts(q);
	return ret;
}

/* An RC QP connected to itself, checked; NULL if it could not be created. */
static struct ibv_qp *create_loopback_qp(int sq_sig_all)
{
	struct ibv_qp *q = create_rc_qp(sq_sig_all);

	CHECK(q);
	if (q)
		CHECK_EQ(0, connect_loopback(q));
	return q;
}

static int post_recv_buf(struct ibv_qp *q, uint64_t wr_id, void *buf,
			 uint32_t len)
{
	struct ibv_sge sge = {
		.addr = (uintptr_t)buf, .length = len, .lkey = mr->lkey,
	};
	struct ibv_recv_wr wr = { .wr_id = wr_id, .sg_list = &sge,
				  .num_sge = 1 };
	struct ibv_recv_wr *bad = NULL;

	return ibv_post_recv(q, &wr, &bad);
}

/* ------------------------------------------------------------------------
 * Tests, in order: each builds on the objects of the ones before.
 */

static void test_open(void)
{
	struct verbs_device *vdev;
	void *lib;

	lib = dlopen(VRDMA_PROVIDER_SO, RTLD_NOW | RTLD_LOCAL);
	CHECK(lib);
	if (!lib) {
		printf("# dlopen: %s\n", dlerror());
		exit(1);
	}
	CHECK(vrdma_ops);
	if (!vrdma_ops)
		exit(1);

	vdev = vrdma_ops->alloc_device(NULL);
	CHECK(vdev);
	if (!vdev)
		exit(1);
	vdev->ops = vrdma_ops;
	atomic_init(&vdev->refcount, 1);
	vdev->device.node_type = IBV_NODE_CA;
	vdev->device.transport_type = IBV_TRANSPORT_IB;
	snprintf(vdev->device.name, sizeof(vdev->device.name), "vrdma0");

	ctx = ibv_open_device(&vdev->device);
	CHECK(ctx);
	if (!ctx) {
		printf("# ibv_open_device: %s\n", strerror(errno));
		exit(1);
	}
	CHECK_EQ(0, k.uhw_short);
	CHECK_EQ(0, k.unknown);

	pd = ibv_alloc_pd(ctx);
	CHECK(pd);
	mr = ibv_reg_mr(pd, mem, sizeof(mem),
			IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE |
				IBV_ACCESS_REMOTE_READ |
				IBV_ACCESS_REMOTE_ATOMIC);
	CHECK(mr);
	if (!pd || !mr)
		exit(1);
	CHECK_EQ(0x1005, mr->lkey);
	CHECK_EQ(0x2005, mr->rkey);
}

static void test_create_cq(void)
{
	struct vrdma_cq *vcq;

	scq = ibv_create_cq(ctx, 7, NULL, NULL, 0);
	rcq = ibv_create_cq(ctx, 16, NULL, NULL, 0);
	CHECK(scq && rcq);
	if (!scq || !rcq)
		exit(1);
	CHECK_EQ(7, scq->cqe);		/* the kernel's answer: 8 - 1 */
	CHECK_EQ(31, rcq->cqe);
	CHECK_EQ(2, mapped_rings());
	vcq = vrdma_container_of(scq, struct vrdma_cq, vcq.cq);
	CHECK_EQ(8, vcq->ring.num_entries);
	CHECK_EQ(RING_START, vcq->ring.head);
	CHECK_EQ(0, k.uhw_short);
}

static void test_create_qp(void)
{
	struct ibv_qp_init_attr attr = {
		.send_cq = scq,
		.recv_cq = rcq,
		.cap = { .max_send_wr = 5, .max_recv_wr = 5, .max_send_sge = 3,
			 .max_recv_sge = 2, .max_inline_data = 40 },
		.qp_type = IBV_QPT_RC,
	};
	struct vrdma_qp *vqp;

	qp = ibv_create_qp(pd, &attr);
	CHECK(qp);
	if (!qp) {
		printf("# ibv_create_qp: %s\n", strerror(errno));
		exit(1);
	}
	/* what the kernel granted: 8 x 128-byte send WQEs, 8 x 64 receive */
	CHECK_EQ(8, attr.cap.max_send_wr);
	CHECK_EQ(4, attr.cap.max_send_sge);
	CHECK_EQ(64, attr.cap.max_inline_data);
	CHECK_EQ(8, attr.cap.max_recv_wr);
	CHECK_EQ(3, attr.cap.max_recv_sge);
	CHECK_EQ(FIRST_QPN, qp->qp_num);
	CHECK_EQ(4, mapped_rings());

	vqp = vrdma_container_of(qp, struct vrdma_qp, vqp.qp);
	CHECK_EQ(4, vqp->sq.limits.max_sge);
	CHECK_EQ(64, vqp->sq.limits.max_inline);
	CHECK_EQ(0, vqp->sq.limits.sig_all);
	CHECK_EQ(3, vqp->rq.max_sge);
	CHECK_EQ(128, vqp->sq.ring.entry_size);
	CHECK_EQ(64, vqp->rq.ring.entry_size);

	CHECK_EQ(0, connect_loopback(qp));
	CHECK_EQ(IBV_QPS_RTS, k.qps[0].state);
	CHECK_EQ(qp->qp_num, k.qps[0].dest_qpn);
	CHECK_EQ(0, k.uhw_short);
	CHECK_EQ(0, k.unknown);
}

static void test_send_recv(void)
{
	struct ibv_sge sge[2] = {
		{ .addr = (uintptr_t)SRC, .length = 10, .lkey = mr->lkey },
		{ .addr = (uintptr_t)SRC + 100, .length = 6, .lkey = mr->lkey },
	};
	struct ibv_send_wr wr[2] = {
		{ .wr_id = 1, .next = &wr[1], .sg_list = sge, .num_sge = 2,
		  .opcode = IBV_WR_SEND },
		{ .wr_id = 2, .sg_list = sge, .num_sge = 1,
		  .opcode = IBV_WR_SEND, .send_flags = IBV_SEND_SIGNALED },
	};
	struct ibv_send_wr *bad = NULL;
	struct ibv_wc wc[4];
	int calls;

	memcpy(SRC, "0123456789", 10);
	memcpy(SRC + 100, "abcdef", 6);
	memset(DST, 0, 64);

	calls = k.syscalls;
	CHECK_EQ(0, post_recv_buf(qp, 11, DST, 32));
	CHECK_EQ(0, post_recv_buf(qp, 12, DST + 32, 32));
	CHECK_EQ(calls, k.syscalls);	/* no system call */

	CHECK_EQ(0, ibv_post_send(qp, wr, &bad));
	/*
	 * One system call: POST_SEND for this QP with no work requests, a
	 * write() of the command (the lighter path, as rxe's provider rings).
	 */
	CHECK_EQ(calls + 1, k.syscalls);
	CHECK_EQ(1, k.doorbells);
	CHECK_EQ(1, k.writes);
	CHECK_EQ(sizeof(struct ib_uverbs_post_send), k.last_post_send_len);
	CHECK_EQ(0, k.last_post_send.qp_handle);
	CHECK_EQ(0, k.last_post_send.wr_count);
	CHECK_EQ(0, k.last_post_send.sge_count);

	calls = k.syscalls;
	/* only the signaled one completes on the send side */
	CHECK_EQ(1, ibv_poll_cq(scq, 4, wc));
	CHECK_EQ(2, wc[0].wr_id);
	CHECK_EQ(IBV_WC_SUCCESS, wc[0].status);
	CHECK_EQ(IBV_WC_SEND, wc[0].opcode);
	CHECK_EQ(qp->qp_num, wc[0].qp_num);

	CHECK_EQ(2, ibv_poll_cq(rcq, 4, wc));
	CHECK_EQ(11, wc[0].wr_id);
	CHECK_EQ(IBV_WC_RECV, wc[0].opcode);
	CHECK_EQ(16, wc[0].byte_len);
	CHECK_EQ(0, wc[0].wc_flags);
	CHECK_EQ(qp->qp_num, wc[0].src_qp);
	CHECK_EQ(12, wc[1].wr_id);
	CHECK_EQ(10, wc[1].byte_len);
	CHECK(!memcmp(DST, "0123456789abcdef", 16));
	CHECK(!memcmp(DST + 32, "0123456789", 10));
	CHECK_EQ(0, ibv_poll_cq(rcq, 4, wc));
	CHECK_EQ(calls, k.syscalls);	/* polling makes no system call */
}

static void test_inline_imm(void)
{
	static const char msg[] = "inline, with immediate data";
	struct ibv_sge sge = { .addr = (uintptr_t)msg, .length = sizeof(msg) };
	struct ibv_send_wr wr = {
		.wr_id = 3,
		.sg_list = &sge,
		.num_sge = 1,
		.opcode = IBV_WR_SEND_WITH_IMM,
		.send_flags = IBV_SEND_INLINE | IBV_SEND_SIGNALED,
		.imm_data = htobe32(0xfeedf00d),
	};
	struct ibv_send_wr *bad = NULL;
	struct ibv_wc wc[2];

	memset(DST, 0, 64);
	CHECK_EQ(0, post_recv_buf(qp, 13, DST, 64));
	CHECK_EQ(0, ibv_post_send(qp, &wr, &bad));
	CHECK_EQ(1, ibv_poll_cq(scq, 2, wc));
	CHECK_EQ(3, wc[0].wr_id);
	CHECK_EQ(1, ibv_poll_cq(rcq, 2, wc));
	CHECK_EQ(13, wc[0].wr_id);
	CHECK_EQ(sizeof(msg), wc[0].byte_len);
	CHECK_EQ(IBV_WC_WITH_IMM, wc[0].wc_flags);
	CHECK_EQ(htobe32(0xfeedf00d), wc[0].imm_data);
	CHECK(!memcmp(DST, msg, sizeof(msg)));
}

static void test_rdma(void)
{
	struct ibv_sge sge = { .addr = (uintptr_t)SRC, .length = 8,
			       .lkey = mr->lkey };
	struct ibv_send_wr wr = {
		.wr_id = 4,
		.sg_list = &sge,
		.num_sge = 1,
		.opcode = IBV_WR_RDMA_WRITE,
		.send_flags = IBV_SEND_SIGNALED,
		.wr.rdma = { .remote_addr = (uintptr_t)REMOTE,
			     .rkey = mr->rkey },
	};
	struct ibv_send_wr *bad = NULL;
	struct ibv_wc wc[2];

	memcpy(SRC, "written!", 8);
	memset(REMOTE, 0, 64);
	CHECK_EQ(0, ibv_post_send(qp, &wr, &bad));
	CHECK_EQ(1, ibv_poll_cq(scq, 2, wc));
	CHECK_EQ(IBV_WC_RDMA_WRITE, wc[0].opcode);
	CHECK_EQ(IBV_WC_SUCCESS, wc[0].status);
	CHECK(!memcmp(REMOTE, "written!", 8));

	/* with immediate: the responder's RQ gives a completion */
	CHECK_EQ(0, post_recv_buf(qp, 14, DST, 64));
	wr.wr_id = 5;
	wr.opcode = IBV_WR_RDMA_WRITE_WITH_IMM;
	wr.imm_data = htobe32(42);
	wr.wr.rdma.remote_addr = (uintptr_t)REMOTE + 8;
	CHECK_EQ(0, ibv_post_send(qp, &wr, &bad));
	CHECK_EQ(1, ibv_poll_cq(scq, 2, wc));
	CHECK_EQ(5, wc[0].wr_id);
	CHECK_EQ(1, ibv_poll_cq(rcq, 2, wc));
	CHECK_EQ(14, wc[0].wr_id);
	CHECK_EQ(IBV_WC_RECV_RDMA_WITH_IMM, wc[0].opcode);
	CHECK_EQ(htobe32(42), wc[0].imm_data);
	CHECK(!memcmp(REMOTE + 8, "written!", 8));

	/* read it back somewhere else */
	memset(DST, 0, 64);
	sge.addr = (uintptr_t)DST;
	sge.length = 16;
	wr.wr_id = 6;
	wr.opcode = IBV_WR_RDMA_READ;
	wr.wr.rdma.remote_addr = (uintptr_t)REMOTE;
	CHECK_EQ(0, ibv_post_send(qp, &wr, &bad));
	CHECK_EQ(1, ibv_poll_cq(scq, 2, wc));
	CHECK_EQ(IBV_WC_RDMA_READ, wc[0].opcode);
	CHECK_EQ(16, wc[0].byte_len);
	CHECK(!memcmp(DST, "written!written!", 16));
}

static void test_atomics(void)
{
	uint64_t *target = (uint64_t *)(void *)REMOTE;
	uint64_t *result = (uint64_t *)(void *)DST;
	struct ibv_sge sge = { .addr = (uintptr_t)DST, .length = 8,
			       .lkey = mr->lkey };
	struct ibv_send_wr wr = {
		.wr_id = 7,
		.sg_list = &sge,
		.num_sge = 1,
		.opcode = IBV_WR_ATOMIC_FETCH_AND_ADD,
		.send_flags = IBV_SEND_SIGNALED,
		.wr.atomic = { .remote_addr = (uintptr_t)REMOTE,
			       .compare_add = 5, .rkey = mr->rkey },
	};
	struct ibv_send_wr *bad = NULL;
	struct ibv_wc wc[2];

	*target = 100;
	CHECK_EQ(0, ibv_post_send(qp, &wr, &bad));
	CHECK_EQ(1, ibv_poll_cq(scq, 2, wc));
	CHECK_EQ(IBV_WC_FETCH_ADD, wc[0].opcode);
	CHECK_EQ(100, *result);
	CHECK_EQ(105, *target);

	wr.opcode = IBV_WR_ATOMIC_CMP_AND_SWP;
	wr.wr.atomic.compare_add = 105;
	wr.wr.atomic.swap = 7;
	CHECK_EQ(0, ibv_post_send(qp, &wr, &bad));
	CHECK_EQ(1, ibv_poll_cq(scq, 2, wc));
	CHECK_EQ(IBV_WC_COMP_SWAP, wc[0].opcode);
	CHECK_EQ(105, *result);
	CHECK_EQ(7, *target);
}

static void test_sq_full(void)
{
	struct ibv_send_wr wr[9] = {};
	struct ibv_send_wr *bad = NULL;
	struct ibv_wc wc[16];
	int i, doorbells = k.doorbells;

	for (i = 0; i < 9; i++) {
		wr[i].wr_id = 100 + i;
		wr[i].next = i < 8 ? &wr[i + 1] : NULL;
		wr[i].opcode = IBV_WR_RDMA_WRITE;
		wr[i].send_flags = IBV_SEND_SIGNALED;
		wr[i].wr.rdma.remote_addr = (uintptr_t)REMOTE;
	}
	/* 8 fit; the 9th does not, and the 8 are rung in once */
	CHECK_EQ(ENOMEM, ibv_post_send(qp, wr, &bad));
	CHECK(bad == &wr[8]);
	CHECK_EQ(doorbells + 1, k.doorbells);
	CHECK_EQ(8, ibv_poll_cq(scq, 16, wc));
	for (i = 0; i < 8; i++)
		CHECK_EQ(100 + i, wc[i].wr_id);
	CHECK_EQ(0, k.overflow);
}

static void test_bad_wr(void)
{
	struct ibv_sge sge[5] = {};
	struct ibv_send_wr wr = { .wr_id = 1, .sg_list = sge, .num_sge = 5,
				  .opcode = IBV_WR_SEND };
	struct ibv_recv_wr rwr = { .wr_id = 1, .sg_list = sge, .num_sge = 4 };
	struct ibv_send_wr *bad = NULL;
	struct ibv_recv_wr *rbad = NULL;
	int calls = k.syscalls;

	/* nothing posted, so no doorbell */
	CHECK_EQ(EINVAL, ibv_post_send(qp, &wr, &bad));
	CHECK(bad == &wr);
	wr.num_sge = 1;
	sge[0].length = 65;
	wr.send_flags = IBV_SEND_INLINE;
	bad = NULL;
	CHECK_EQ(EINVAL, ibv_post_send(qp, &wr, &bad));
	CHECK(bad == &wr);
	CHECK_EQ(EINVAL, ibv_post_recv(qp, &rwr, &rbad));
	CHECK(rbad == &rwr);
	CHECK_EQ(calls, k.syscalls);
}

static void test_sig_all(void)
{
	struct ibv_send_wr wr = { .wr_id = 9, .opcode = IBV_WR_RDMA_WRITE,
				  .wr.rdma.remote_addr = (uintptr_t)REMOTE };
	struct ibv_send_wr *bad = NULL;
	struct ibv_qp *q = create_loopback_qp(1);
	struct ibv_wc wc[2];

	if (!q)
		return;
	CHECK_EQ(0, ibv_post_send(q, &wr, &bad));
	CHECK_EQ(1, ibv_poll_cq(scq, 2, wc));
	CHECK_EQ(9, wc[0].wr_id);
	CHECK_EQ(q->qp_num, wc[0].qp_num);
	CHECK_EQ(0, ibv_destroy_qp(q));
}

/*
 * A process whose credentials changed since it opened the device is
 * refused write() (ib_safe_file_access()): the doorbell goes by ioctl
 * instead, from then on for that QP.
 */
static void test_doorbell_fallback(void)
{
	struct ibv_send_wr wr = { .wr_id = 7, .opcode = IBV_WR_RDMA_WRITE,
				  .send_flags = IBV_SEND_SIGNALED,
				  .wr.rdma.remote_addr = (uintptr_t)REMOTE };
	struct ibv_send_wr *bad = NULL;
	struct ibv_qp *q = create_loopback_qp(0);
	int calls, doorbells, writes;
	struct ibv_wc wc[2];

	if (!q)
		return;
	k.refuse_writes = true;
	calls = k.syscalls;
	doorbells = k.doorbells;
	writes = k.writes;
	CHECK_EQ(0, ibv_post_send(q, &wr, &bad));
	CHECK_EQ(1, k.writes_refused);
	CHECK_EQ(calls + 2, k.syscalls);	/* the write, then the ioctl */
	CHECK_EQ(doorbells + 1, k.doorbells);
	CHECK_EQ(1, ibv_poll_cq(scq, 2, wc));
	CHECK_EQ(7, wc[0].wr_id);
	CHECK_EQ(0, ibv_post_send(q, &wr, &bad));
	CHECK_EQ(1, k.writes_refused);		/* not tried again */
	CHECK_EQ(calls + 3, k.syscalls);
	CHECK_EQ(doorbells + 2, k.doorbells);
	CHECK_EQ(writes, k.writes);
	CHECK_EQ(1, ibv_poll_cq(scq, 2, wc));
	k.refuse_writes = false;
	CHECK_EQ(0, ibv_destroy_qp(q));
}

/*
 * While the kernel says, in the SQ ring's no_doorbell, that it will look
 * at the ring anyway, post_send makes no system call; once it clears the
 * flag the next post rings, and the kernel finds both WQEs.
 */
static void test_no_doorbell(void)
{
	struct ibv_send_wr wr = { .wr_id = 1, .opcode = IBV_WR_RDMA_WRITE,
				  .send_flags = IBV_SEND_SIGNALED,
				  .wr.rdma.remote_addr = (uintptr_t)REMOTE };
	struct ibv_send_wr *bad = NULL;
	struct ibv_qp *q = create_loopback_qp(0);
	struct vrdma_ring *hdr;
	int calls, doorbells;
	struct ibv_wc wc[3];

	if (!q)
		return;
	hdr = to_vqp(q)->sq.ring.hdr;
	calls = k.syscalls;
	doorbells = k.doorbells;
	__atomic_store_n(&hdr->no_doorbell, 1, __ATOMIC_RELAXED);
	CHECK_EQ(0, ibv_post_send(q, &wr, &bad));
	CHECK_EQ(calls, k.syscalls);
	CHECK_EQ(0, ibv_poll_cq(scq, 3, wc));	/* the kernel has not looked */
	__atomic_store_n(&hdr->no_doorbell, 0, __ATOMIC_RELAXED);
	wr.wr_id = 2;
	CHECK_EQ(0, ibv_post_send(q, &wr, &bad));
	CHECK_EQ(calls + 1, k.syscalls);
	CHECK_EQ(doorbells + 1, k.doorbells);
	CHECK_EQ(2, ibv_poll_cq(scq, 3, wc));
	CHECK_EQ(1, wc[0].wr_id);
	CHECK_EQ(2, wc[1].wr_id);
	CHECK_EQ(0, ibv_destroy_qp(q));
}

static void test_req_notify(void)
{
	int calls = k.syscalls;

	CHECK_EQ(0, ibv_req_notify_cq(rcq, 1));
	CHECK_EQ(calls + 1, k.syscalls);
	CHECK_EQ(1, k.cqs[1].arm_calls);
	CHECK_EQ(1, k.cqs[1].solicited_only);
}

static void test_resize_cq(void)
{
	struct ibv_send_wr wr[3] = {};
	struct ibv_send_wr *bad = NULL;
	struct ibv_wc wc[8];
	int i, old = k.cqs[0].ring;
	struct vrdma_cq *vcq;

	for (i = 0; i < 3; i++) {
		wr[i].wr_id = 200 + i;
		wr[i].next = i < 2 ? &wr[i + 1] : NULL;
		wr[i].opcode = IBV_WR_RDMA_WRITE;
		wr[i].send_flags = IBV_SEND_SIGNALED;
		wr[i].wr.rdma.remote_addr = (uintptr_t)REMOTE;
	}
	CHECK_EQ(0, ibv_post_send(qp, wr, &bad));

	/* 3 CQEs not polled yet move to the new ring */
	CHECK_EQ(0, ibv_resize_cq(scq, 40));
	CHECK_EQ(63, scq->cqe);
	CHECK_EQ(0, k.rings[old].mapped);
	CHECK_EQ(1, k.rings[k.cqs[0].ring].mapped);
	vcq = vrdma_container_of(scq, struct vrdma_cq, vcq.cq);
	CHECK_EQ(RESIZE_START, vcq->ring.head);
	CHECK_EQ(64, vcq->ring.num_entries);

	CHECK_EQ(3, ibv_poll_cq(scq, 8, wc));
	for (i = 0; i < 3; i++)
		CHECK_EQ(200 + i, wc[i].wr_id);
	CHECK_EQ(RESIZE_START + 3, kring_hdr(k.cqs[0].ring)->cons);

	/* and the CQ goes on working */
	wr[0].next = NULL;
	CHECK_EQ(0, ibv_post_send(qp, wr, &bad));
	CHECK_EQ(1, ibv_poll_cq(scq, 8, wc));
	CHECK_EQ(200, wc[0].wr_id);
}

static void test_not_ready(void)
{
	struct ibv_send_wr wr = {
		.wr_id = 0xdead, .opcode = IBV_WR_RDMA_WRITE,
		.send_flags = IBV_SEND_SIGNALED,
		.wr.rdma.remote_addr = (uintptr_t)REMOTE,
	};
	struct ibv_send_wr *bad = NULL;
	struct ibv_qp *q = create_rc_qp(0);
	int calls = k.syscalls;
	struct vrdma_qp *vqp;
	struct ibv_wc wc[4];
	uint32_t prod;

	CHECK(q);
	if (!q)
		return;
	vqp = vrdma_container_of(q, struct vrdma_qp, vqp.qp);
	prod = vqp->sq.ring.hdr->prod;

	/* RESET: neither queue takes work requests */
	CHECK_EQ(EINVAL, ibv_post_send(q, &wr, &bad));
	CHECK(bad == &wr);
	CHECK_EQ(EINVAL, post_recv_buf(q, 0xdead, DST, 64));
	CHECK_EQ(calls, k.syscalls);
	/* INIT: only the RQ */
	CHECK_EQ(0, to_init(q));
	calls = k.syscalls;
	bad = NULL;
	CHECK_EQ(EINVAL, ibv_post_send(q, &wr, &bad));
	CHECK(bad == &wr);
	memset(DST, 0, 64);
	CHECK_EQ(0, post_recv_buf(q, 0x1a17, DST, 64));
	CHECK_EQ(calls, k.syscalls);
	/* RTR: still not the SQ */
	CHECK_EQ(0, to_rtr(q));
	calls = k.syscalls;
	bad = NULL;
	CHECK_EQ(EINVAL, ibv_post_send(q, &wr, &bad));
	CHECK(bad == &wr);
	CHECK_EQ(calls, k.syscalls);
	/* nothing of it reached the ring */
	CHECK_EQ(prod, vqp->sq.ring.hdr->prod);

	/* RTS: the SQ runs, and the receive posted in INIT gets the SEND */
	CHECK_EQ(0, to_rts(q));
	wr.wr_id = 0x600d;
	wr.opcode = IBV_WR_SEND;
	CHECK_EQ(0, ibv_post_send(q, &wr, &bad));
	CHECK_EQ(1, ibv_poll_cq(scq, 4, wc));
	CHECK_EQ(0x600d, wc[0].wr_id);
	CHECK_EQ(IBV_WC_SUCCESS, wc[0].status);
	CHECK_EQ(1, ibv_poll_cq(rcq, 4, wc));
	CHECK_EQ(0x1a17, wc[0].wr_id);
	CHECK_EQ(q->qp_num, wc[0].qp_num);
	CHECK_EQ(0, ibv_destroy_qp(q));
}

static void test_error_flush(void)
{
	struct ibv_send_wr wr = { .wr_id = 0x20, .opcode = IBV_WR_SEND,
				  .send_flags = IBV_SEND_SIGNALED };
	struct ibv_qp_attr attr = { .qp_state = IBV_QPS_ERR };
	struct ibv_send_wr *bad = NULL;
	struct ibv_qp *q = create_loopback_qp(0);
	int calls, rq_doorbells, i;
	struct ibv_wc wc[8];

	if (!q)
		return;
	/* receives in RTS: no system call */
	rq_doorbells = k.rq_doorbells;
	for (i = 0; i < 3; i++)
		CHECK_EQ(0, post_recv_buf(q, 0x10 + i, DST, 64));
	CHECK_EQ(rq_doorbells, k.rq_doorbells);

	/* to ERR: the kernel flushes them */
	CHECK_EQ(0, ibv_modify_qp(q, &attr, IBV_QP_STATE));
	CHECK_EQ(3, ibv_poll_cq(rcq, 8, wc));
	for (i = 0; i < 3; i++) {
		CHECK_EQ(0x10 + i, wc[i].wr_id);
		CHECK_EQ(IBV_WC_WR_FLUSH_ERR, wc[i].status);
	}

	/* posted in ERR: both rung in, both flushed */
	CHECK_EQ(0, ibv_post_send(q, &wr, &bad));
	CHECK_EQ(1, ibv_poll_cq(scq, 8, wc));
	CHECK_EQ(0x20, wc[0].wr_id);
	CHECK_EQ(IBV_WC_WR_FLUSH_ERR, wc[0].status);
	calls = k.syscalls;
	CHECK_EQ(0, post_recv_buf(q, 0x21, DST, 64));
	CHECK_EQ(calls + 1, k.syscalls);
	CHECK_EQ(rq_doorbells + 1, k.rq_doorbells);
	CHECK_EQ(1, ibv_poll_cq(rcq, 8, wc));
	CHECK_EQ(0x21, wc[0].wr_id);
	CHECK_EQ(IBV_WC_WR_FLUSH_ERR, wc[0].status);
	CHECK_EQ(0, ibv_destroy_qp(q));
}

/* What is queued at RESET never runs; the rings go on from there. */
static void test_reset_and_reuse(void)
{
	struct ibv_send_wr wr = { .wr_id = 0x30, .opcode = IBV_WR_SEND,
				  .send_flags = IBV_SEND_SIGNALED };
	struct ibv_qp_attr attr = { .qp_state = IBV_QPS_RESET };
	struct ibv_send_wr *bad = NULL;
	struct ibv_qp *q = create_loopback_qp(0);
	struct ibv_wc wc[8];

	if (!q)
		return;
	CHECK_EQ(0, post_recv_buf(q, 0xdead, DST, 64));
	CHECK_EQ(0, ibv_modify_qp(q, &attr, IBV_QP_STATE));
	CHECK_EQ(0, connect_loopback(q));
	CHECK_EQ(0, post_recv_buf(q, 0x600d, DST, 64));
	CHECK_EQ(0, ibv_post_send(q, &wr, &bad));
	CHECK_EQ(1, ibv_poll_cq(scq, 8, wc));
	CHECK_EQ(0x30, wc[0].wr_id);
	CHECK_EQ(IBV_WC_SUCCESS, wc[0].status);
	CHECK_EQ(1, ibv_poll_cq(rcq, 8, wc));
	CHECK_EQ(0x600d, wc[0].wr_id);
	CHECK_EQ(0, ibv_poll_cq(rcq, 8, wc));
	CHECK_EQ(0, ibv_destroy_qp(q));
}

static void test_srq_unsupported(void)
{
	struct ibv_srq_init_attr attr = { .attr = { .max_wr = 4,
						    .max_sge = 1 } };

	errno = 0;
	CHECK(!ibv_create_srq(pd, &attr));
	CHECK_EQ(EOPNOTSUPP, errno);
	CHECK_EQ(0, k.unknown);
}

/* ---- the extended CQ and QP -------------------------------------------- */

static struct ibv_cq_ex *xcq;	/* both CQs of the extended QPs */
static struct ibv_qp *xqp;	/* an extended RC QP with every op, looped */
static struct ibv_qp_ex *qpx;

#define RC_WR_OPS							\
	(IBV_QP_EX_WITH_SEND | IBV_QP_EX_WITH_SEND_WITH_IMM |		\
	 IBV_QP_EX_WITH_RDMA_WRITE | IBV_QP_EX_WITH_RDMA_WRITE_WITH_IMM |	\
	 IBV_QP_EX_WITH_RDMA_READ)
#define ATOMIC_WR_OPS							\
	(IBV_QP_EX_WITH_ATOMIC_CMP_AND_SWP |				\
	 IBV_QP_EX_WITH_ATOMIC_FETCH_AND_ADD)
#define MW_WR_OPS (IBV_QP_EX_WITH_LOCAL_INV | IBV_QP_EX_WITH_BIND_MW)

/* The caps of create_rc_qp: 8 x 128-byte send WQEs, 4 SGEs, 64 inline. */
static struct ibv_qp *create_ex_qp(enum ibv_qp_type type, uint64_t ops,
				   int sq_sig_all)
{
	struct ibv_qp_init_attr_ex attr = {
		.send_cq = ibv_cq_ex_to_cq(xcq),
		.recv_cq = ibv_cq_ex_to_cq(xcq),
		.cap = { .max_send_wr = 5, .max_recv_wr = 5, .max_send_sge = 3,
			 .max_recv_sge = 2, .max_inline_data = 40 },
		.qp_type = type,
		.sq_sig_all = sq_sig_all,
		.comp_mask = IBV_QP_INIT_ATTR_PD |
			     IBV_QP_INIT_ATTR_SEND_OPS_FLAGS,
		.pd = pd,
		.send_ops_flags = ops,
	};

	return ibv_create_qp_ex(ctx, &attr);
}

/* The kernel's view of xcq's ring. */
static struct vrdma_ring *xcq_hdr(void)
{
	return kring_hdr(k.cqs[xcq->handle].ring);
}

/* The SQ ring header of a QP, as the kernel sees it. */
static struct vrdma_ring *sq_hdr(struct ibv_qp *q)
{
	return kring_hdr(k.qps[q->handle].sq);
}

/*
 * Polls xcq through start/next/end_poll and the read_* functions into
 * struct ibv_wc; returns how many, or minus the error.
 */
static int poll_ex(struct ibv_wc *wc, int max)
{
	struct ibv_poll_cq_attr attr = {};
	int n = 0, ret;

	ret = ibv_start_poll(xcq, &attr);
	if (ret)
		return ret == ENOENT ? 0 : -ret;
	do {
		wc[n] = (struct ibv_wc){
			.wr_id = xcq->wr_id,
			.status = xcq->status,
			.opcode = ibv_wc_read_opcode(xcq),
			.vendor_err = ibv_wc_read_vendor_err(xcq),
			.byte_len = ibv_wc_read_byte_len(xcq),
			.imm_data = ibv_wc_read_imm_data(xcq),
			.qp_num = ibv_wc_read_qp_num(xcq),
			.src_qp = ibv_wc_read_src_qp(xcq),
			.wc_flags = ibv_wc_read_wc_flags(xcq),
			.slid = ibv_wc_read_slid(xcq),
			.sl = ibv_wc_read_sl(xcq),
			.dlid_path_bits = ibv_wc_read_dlid_path_bits(xcq),
		};
		n++;
	} while (n < max && !(ret = ibv_next_poll(xcq)));
	ibv_end_poll(xcq);
	return ret && ret != ENOENT ? -ret : n;
}

static void test_create_cq_ex(void)
{
	static const uint64_t refused[] = {
		IBV_WC_EX_WITH_COMPLETION_TIMESTAMP,
		IBV_WC_EX_WITH_COMPLETION_TIMESTAMP_WALLCLOCK,
		IBV_WC_EX_WITH_CVLAN,
		IBV_WC_EX_WITH_FLOW_TAG,
	};
	struct ibv_cq_init_attr_ex attr = {
		.cqe = 20,
		.wc_flags = IBV_WC_STANDARD_FLAGS,
	};
	struct ibv_poll_cq_attr pattr = { .comp_mask = 1 };
	int calls = k.syscalls, mapped = mapped_rings();
	unsigned int i;

	/* what the CQE cannot carry is refused before the kernel is asked */
	for (i = 0; i < sizeof(refused) / sizeof(refused[0]); i++) {
		attr.wc_flags = IBV_WC_STANDARD_FLAGS | refused[i];
		errno = 0;
		CHECK(!ibv_create_cq_ex(ctx, &attr));
		CHECK_EQ(EOPNOTSUPP, errno);
	}
	attr.wc_flags = IBV_WC_STANDARD_FLAGS;
	/* a "parent domain" that is a plain PD */
	attr.comp_mask = IBV_CQ_INIT_ATTR_MASK_PD;
	attr.parent_domain = pd;
	errno = 0;
	CHECK(!ibv_create_cq_ex(ctx, &attr));
	CHECK_EQ(EINVAL, errno);
	attr.comp_mask = IBV_CQ_INIT_ATTR_MASK_FLAGS;
	attr.parent_domain = NULL;
	attr.flags = IBV_CREATE_CQ_ATTR_IGNORE_OVERRUN;
	errno = 0;
	CHECK(!ibv_create_cq_ex(ctx, &attr));
	CHECK_EQ(EOPNOTSUPP, errno);
	CHECK_EQ(calls, k.syscalls);

	/* a promise of one thread is fine */
	attr.flags = IBV_CREATE_CQ_ATTR_SINGLE_THREADED;
	xcq = ibv_create_cq_ex(ctx, &attr);
	CHECK(xcq);
	if (!xcq) {
		printf("# ibv_create_cq_ex: %s\n", strerror(errno));
		exit(1);
	}
	CHECK_EQ(31, xcq->cqe);
	CHECK_EQ(mapped + 1, mapped_rings());
	CHECK_EQ(0, k.uhw_short);

	/* empty: ENOENT (no end_poll then), no system call */
	calls = k.syscalls;
	pattr.comp_mask = 0;
	CHECK_EQ(ENOENT, ibv_start_poll(xcq, &pattr));
	CHECK_EQ(ENOENT, ibv_start_poll(xcq, &pattr));
	pattr.comp_mask = 1;
	CHECK_EQ(EINVAL, ibv_start_poll(xcq, &pattr));
	CHECK_EQ(calls, k.syscalls);
}

static void test_create_qp_ex(void)
{
	static const uint64_t refused[] = {
		IBV_QP_EX_WITH_TSO,
		1ULL << 40,
	};
	struct ibv_qp_init_attr_ex attr = {
		.send_cq = scq,
		.recv_cq = rcq,
		.cap = { .max_send_wr = 1, .max_recv_wr = 1, .max_send_sge = 1,
			 .max_recv_sge = 1 },
		.qp_type = IBV_QPT_RC,
		.comp_mask = IBV_QP_INIT_ATTR_PD,
		.pd = pd,
	};
	int calls = k.syscalls, queries = k.query_devices;
	unsigned int i;
	struct ibv_qp *q;

	/* ops the kernel cannot carry out: refused before it is asked */
	for (i = 0; i < sizeof(refused) / sizeof(refused[0]); i++) {
		errno = 0;
		CHECK(!create_ex_qp(IBV_QPT_RC, IBV_QP_EX_WITH_SEND |
					refused[i], 0));
		CHECK_EQ(EOPNOTSUPP, errno);
	}
	errno = 0;
	CHECK(!create_ex_qp(IBV_QPT_UD, IBV_QP_EX_WITH_RDMA_WRITE, 0));
	CHECK_EQ(EOPNOTSUPP, errno);
	/* ATOMIC WRITE is RC's alone */
	errno = 0;
	CHECK(!create_ex_qp(IBV_QPT_UC, IBV_QP_EX_WITH_ATOMIC_WRITE, 0));
	CHECK_EQ(EOPNOTSUPP, errno);
	CHECK_EQ(calls, k.syscalls);

	/* atomics and SEND with invalidate: as the device says */
	k.atomic_cap = IBV_ATOMIC_NONE;
	k.device_cap_flags = 0;
	errno = 0;
	CHECK(!create_ex_qp(IBV_QPT_RC, ATOMIC_WR_OPS, 0));
	CHECK_EQ(EOPNOTSUPP, errno);
	errno = 0;
	CHECK(!create_ex_qp(IBV_QPT_RC, IBV_QP_EX_WITH_SEND_WITH_INV, 0));
	CHECK_EQ(EOPNOTSUPP, errno);
	/* memory windows, and invalidating them, as the device says too */
	errno = 0;
	CHECK(!create_ex_qp(IBV_QPT_RC, IBV_QP_EX_WITH_LOCAL_INV, 0));
	CHECK_EQ(EOPNOTSUPP, errno);
	k.device_cap_flags = IBV_DEVICE_MEM_MGT_EXTENSIONS;
	errno = 0;
	CHECK(!create_ex_qp(IBV_QPT_RC, IBV_QP_EX_WITH_BIND_MW, 0));
	CHECK_EQ(EOPNOTSUPP, errno);
	CHECK_EQ(queries + 4, k.query_devices);
	CHECK_EQ(calls + 4, k.syscalls);		/* and no QP created */

	k.atomic_cap = IBV_ATOMIC_HCA;
	k.device_cap_flags = IBV_DEVICE_MEM_WINDOW;
	xqp = create_ex_qp(IBV_QPT_RC, RC_WR_OPS | ATOMIC_WR_OPS | MW_WR_OPS |
				   IBV_QP_EX_WITH_SEND_WITH_INV, 0);
	CHECK(xqp);
	if (!xqp) {
		printf("# ibv_create_qp_ex: %s\n", strerror(errno));
		exit(1);
	}
	qpx = ibv_qp_to_qp_ex(xqp);
	CHECK(qpx);
	if (!qpx)
		exit(1);
	CHECK(qpx->wr_start && qpx->wr_complete && qpx->wr_abort &&
	      qpx->wr_send && qpx->wr_set_sge_list &&
	      qpx->wr_set_inline_data_list && qpx->wr_set_ud_addr);
	CHECK_EQ(0, connect_loopback(xqp));

	/* no send ops: a plain QP, with no ibv_qp_ex */
	attr.comp_mask = IBV_QP_INIT_ATTR_PD | IBV_QP_INIT_ATTR_CREATE_FLAGS;
	attr.create_flags = 0;
	q = ibv_create_qp_ex(ctx, &attr);
	CHECK(q);
	if (!q)
		return;
	CHECK_EQ(1, attr.cap.max_send_wr);
	CHECK_EQ(4, attr.cap.max_send_sge);	/* a 64 + 16 byte WQE -> 128 */
	CHECK(!ibv_qp_to_qp_ex(q));
	CHECK_EQ(0, ibv_destroy_qp(q));
}

/* Every field through the read_* functions; cons moves at end_poll only. */
static void test_cq_ex_poll(void)
{
	struct ibv_sge sge = { .addr = (uintptr_t)SRC, .length = 10,
			       .lkey = mr->lkey };
	struct ibv_send_wr wr[2] = {
		{ .wr_id = 0x51, .next = &wr[1], .sg_list = &sge,
		  .num_sge = 1, .opcode = IBV_WR_SEND_WITH_IMM,
		  .send_flags = IBV_SEND_SIGNALED,
		  .imm_data = htobe32(0x1234abcd) },
		{ .wr_id = 0x52, .sg_list = &sge, .num_sge = 1,
		  .opcode = IBV_WR_RDMA_WRITE, .send_flags = IBV_SEND_SIGNALED,
		  .wr.rdma = { .remote_addr = (uintptr_t)REMOTE,
			       .rkey = mr->rkey } },
	};
	struct ibv_poll_cq_attr attr = {};
	struct ibv_send_wr *bad = NULL;
	uint32_t cons = xcq_hdr()->cons;
	struct ibv_wc wc[4];
	int calls;

	memcpy(SRC, "ten bytes!", 10);
	CHECK_EQ(0, post_recv_buf(xqp, 0x50, DST, 64));
	/* plain post_send works on an extended QP */
	CHECK_EQ(0, ibv_post_send(xqp, wr, &bad));
	calls = k.syscalls;

	CHECK_EQ(0, ibv_start_poll(xcq, &attr));
	CHECK_EQ(0x50, xcq->wr_id);
	CHECK_EQ(IBV_WC_SUCCESS, xcq->status);
	CHECK_EQ(IBV_WC_RECV, ibv_wc_read_opcode(xcq));
	CHECK_EQ(10, ibv_wc_read_byte_len(xcq));
	CHECK_EQ(htobe32(0x1234abcd), ibv_wc_read_imm_data(xcq));
	CHECK_EQ(IBV_WC_WITH_IMM, ibv_wc_read_wc_flags(xcq));
	CHECK_EQ(xqp->qp_num, ibv_wc_read_qp_num(xcq));
	CHECK_EQ(xqp->qp_num, ibv_wc_read_src_qp(xcq));
	CHECK_EQ(0, ibv_wc_read_vendor_err(xcq));
	CHECK_EQ(0, ibv_wc_read_slid(xcq));
	CHECK_EQ(0, ibv_wc_read_sl(xcq));
	CHECK_EQ(0, ibv_wc_read_dlid_path_bits(xcq));
	CHECK(!memcmp(DST, "ten bytes!", 10));

	CHECK_EQ(0, ibv_next_poll(xcq));
	CHECK_EQ(0x51, xcq->wr_id);
	CHECK_EQ(IBV_WC_SEND, ibv_wc_read_opcode(xcq));
	CHECK_EQ(xqp->qp_num, ibv_wc_read_qp_num(xcq));
	CHECK_EQ(0, ibv_next_poll(xcq));
	CHECK_EQ(0x52, xcq->wr_id);
	CHECK_EQ(IBV_WC_RDMA_WRITE, ibv_wc_read_opcode(xcq));
	CHECK_EQ(10, ibv_wc_read_byte_len(xcq));
	CHECK_EQ(ENOENT, ibv_next_poll(xcq));
	/* nothing handed back before end_poll */
	CHECK_EQ(cons, xcq_hdr()->cons);
	ibv_end_poll(xcq);
	CHECK_EQ(cons + 3, xcq_hdr()->cons);
	CHECK_EQ(calls, k.syscalls);	/* polling makes no system call */

	/* stopping early hands back what was read, and no more */
	wr[0].next = NULL;
	wr[0].opcode = IBV_WR_RDMA_WRITE;
	wr[0].wr.rdma = wr[1].wr.rdma;
	CHECK_EQ(0, ibv_post_send(xqp, wr, &bad));
	CHECK_EQ(0, ibv_post_send(xqp, wr, &bad));
	CHECK_EQ(1, poll_ex(wc, 1));
	CHECK_EQ(cons + 4, xcq_hdr()->cons);
	/* and ibv_poll_cq reads the same CQ */
	CHECK_EQ(1, ibv_poll_cq(ibv_cq_ex_to_cq(xcq), 4, wc));
	CHECK_EQ(0x51, wc[0].wr_id);
	CHECK_EQ(IBV_WC_RDMA_WRITE, wc[0].opcode);
	CHECK_EQ(cons + 5, xcq_hdr()->cons);
	CHECK_EQ(0, poll_ex(wc, 4));

	/* a prod no kernel can have written: EIO, and the lock is free */
	xcq_hdr()->prod = cons + 5 + 100;
	CHECK_EQ(EIO, ibv_start_poll(xcq, &attr));
	CHECK_EQ(EIO, ibv_start_poll(xcq, &attr));
	CHECK_EQ(-EIO, ibv_poll_cq(ibv_cq_ex_to_cq(xcq), 4, wc));
	xcq_hdr()->prod = k.cqs[xcq->handle].prod;
	CHECK_EQ(0, poll_ex(wc, 4));
}

/* The WQE's bytes that mean something: header and data. */
static size_t wqe_len(const uint8_t *w)
{
	const struct vrdma_send_wqe *wqe = (const void *)w;

	return VRDMA_SEND_WQE_HDR_SIZE +
	       (wqe->flags & VRDMA_SEND_INLINE ? wqe->inline_len :
						 wqe->num_sge * 16u);
}

/* The WQE executed @back WQEs before the last. */
static const uint8_t *executed(int back)
{
	return k.wqe_log[(k.executed - 1 - back) % WQE_LOG];
}

/* What an application does to post @wr through the ibv_wr_* API. */
static void wr_api_build(struct ibv_qp_ex *x, const struct ibv_send_wr *wr)
{
	struct ibv_data_buf buf[8];
	int i;

	x->wr_id = wr->wr_id;
	x->wr_flags = wr->send_flags;
	switch (wr->opcode) {
	case IBV_WR_SEND:
		ibv_wr_send(x);
		break;
	case IBV_WR_SEND_WITH_IMM:
		ibv_wr_send_imm(x, wr->imm_data);
		break;
	case IBV_WR_SEND_WITH_INV:
		ibv_wr_send_inv(x, wr->invalidate_rkey);
		break;
	case IBV_WR_RDMA_WRITE:
		ibv_wr_rdma_write(x, wr->wr.rdma.rkey, wr->wr.rdma.remote_addr);
		break;
	case IBV_WR_RDMA_WRITE_WITH_IMM:
		ibv_wr_rdma_write_imm(x, wr->wr.rdma.rkey,
				      wr->wr.rdma.remote_addr, wr->imm_data);
		break;
	case IBV_WR_RDMA_READ:
		ibv_wr_rdma_read(x, wr->wr.rdma.rkey, wr->wr.rdma.remote_addr);
		break;
	case IBV_WR_ATOMIC_CMP_AND_SWP:
		ibv_wr_atomic_cmp_swp(x, wr->wr.atomic.rkey,
				      wr->wr.atomic.remote_addr,
				      wr->wr.atomic.compare_add,
				      wr->wr.atomic.swap);
		break;
	case IBV_WR_ATOMIC_FETCH_AND_ADD:
		ibv_wr_atomic_fetch_add(x, wr->wr.atomic.rkey,
					wr->wr.atomic.remote_addr,
					wr->wr.atomic.compare_add);
		break;
	case IBV_WR_LOCAL_INV:
		ibv_wr_local_inv(x, wr->invalidate_rkey);
		break;
	case IBV_WR_BIND_MW:
		ibv_wr_bind_mw(x, wr->bind_mw.mw, wr->bind_mw.rkey,
			       &wr->bind_mw.bind_info);
		break;
	default:
		break;
	}
	if (wr->send_flags & IBV_SEND_INLINE) {
		for (i = 0; i < wr->num_sge; i++) {
			buf[i].addr = (void *)(uintptr_t)wr->sg_list[i].addr;
			buf[i].length = wr->sg_list[i].length;
		}
		if (wr->num_sge == 1)
			ibv_wr_set_inline_data(x, buf[0].addr, buf[0].length);
		else
			ibv_wr_set_inline_data_list(x, wr->num_sge, buf);
	} else if (wr->num_sge == 1) {
		ibv_wr_set_sge(x, wr->sg_list[0].lkey, wr->sg_list[0].addr,
			       wr->sg_list[0].length);
	} else if (wr->num_sge) {
		ibv_wr_set_sge_list(x, wr->num_sge, wr->sg_list);
	}
}

/* post_send and the ibv_wr_* API write the same bytes for every op. */
static void test_wr_layout(void)
{
	static uint8_t inl[64];
	struct ibv_sge sg[4] = {
		{ .addr = (uintptr_t)SRC, .length = 7, .lkey = mr->lkey },
		{ .addr = (uintptr_t)SRC + 100, .length = 0,
		  .lkey = mr->lkey },
		{ .addr = (uintptr_t)SRC + 200, .length = 9,
		  .lkey = mr->lkey },
		{ .addr = (uintptr_t)SRC + 300, .length = 1,
		  .lkey = mr->lkey },
	};
	struct ibv_sge inl_sg[2] = {
		{ .addr = (uintptr_t)inl, .length = 40 },
		{ .addr = (uintptr_t)inl + 40, .length = 24 },
	};
	struct ibv_sge res = { .addr = (uintptr_t)DST + 512, .length = 8,
			       .lkey = mr->lkey };
	struct ibv_mw mw = { .rkey = 0x80000305, .type = IBV_MW_TYPE_2 };
	const uint64_t raddr = (uintptr_t)REMOTE, aaddr = raddr + 256;
	const struct ibv_send_wr cases[] = {
		{ .wr_id = 0x61, .sg_list = sg, .num_sge = 3,
		  .opcode = IBV_WR_SEND, .send_flags = IBV_SEND_SIGNALED },
		{ .wr_id = 0x62, .sg_list = sg, .num_sge = 4,
		  .opcode = IBV_WR_SEND_WITH_IMM, .imm_data = htobe32(7),
		  .send_flags = IBV_SEND_SIGNALED | IBV_SEND_SOLICITED |
				IBV_SEND_INLINE },
		{ .wr_id = 0x63, .opcode = IBV_WR_SEND,
		  .send_flags = IBV_SEND_SIGNALED },
		{ .wr_id = 0x64, .sg_list = sg, .num_sge = 4,
		  .opcode = IBV_WR_RDMA_WRITE,
		  .send_flags = IBV_SEND_SIGNALED | IBV_SEND_FENCE,
		  .wr.rdma = { .remote_addr = raddr, .rkey = mr->rkey } },
		{ .wr_id = 0x65, .sg_list = inl_sg, .num_sge = 2,
		  .opcode = IBV_WR_RDMA_WRITE_WITH_IMM,
		  .imm_data = htobe32(0xdeadbeef),
		  .send_flags = IBV_SEND_SIGNALED | IBV_SEND_INLINE,
		  .wr.rdma = { .remote_addr = raddr + 64, .rkey = mr->rkey } },
		{ .wr_id = 0x66, .sg_list = sg + 2, .num_sge = 1,
		  .opcode = IBV_WR_RDMA_READ, .send_flags = IBV_SEND_SIGNALED,
		  .wr.rdma = { .remote_addr = raddr, .rkey = mr->rkey } },
		{ .wr_id = 0x67, .sg_list = &res, .num_sge = 1,
		  .opcode = IBV_WR_ATOMIC_FETCH_AND_ADD,
		  .send_flags = IBV_SEND_SIGNALED,
		  .wr.atomic = { .remote_addr = aaddr, .compare_add = 3,
				 .rkey = mr->rkey } },
		{ .wr_id = 0x68, .sg_list = &res, .num_sge = 1,
		  .opcode = IBV_WR_ATOMIC_CMP_AND_SWP,
		  .send_flags = IBV_SEND_SIGNALED,
		  .wr.atomic = { .remote_addr = aaddr, .compare_add = 106,
				 .swap = 0x1122334455667788ULL,
				 .rkey = mr->rkey } },
		{ .wr_id = 0x69, .sg_list = sg, .num_sge = 1,
		  .opcode = IBV_WR_SEND_WITH_INV, .invalidate_rkey = 0xabcd,
		  .send_flags = IBV_SEND_SIGNALED },
		{ .wr_id = 0x6a, .opcode = IBV_WR_BIND_MW,
		  .send_flags = IBV_SEND_SIGNALED | IBV_SEND_FENCE,
		  .bind_mw = { .mw = &mw, .rkey = 0x80000306,
			       .bind_info = { .mr = mr, .addr = raddr + 1,
					      .length = 100,
					      .mw_access_flags =
						IBV_ACCESS_REMOTE_READ } } },
		{ .wr_id = 0x6b, .opcode = IBV_WR_LOCAL_INV,
		  .invalidate_rkey = 0x80000306,
		  .send_flags = IBV_SEND_SIGNALED },
	};
	struct ibv_send_wr wr, *bad = NULL;
	uint8_t a[WQE_LOG_SIZE];
	struct ibv_wc wc[4];
	unsigned int i;
	int n, calls;
	bool recv;
	size_t len;

	for (i = 0; i < sizeof(inl); i++)
		inl[i] = i ^ 0x3c;
	*(uint64_t *)(void *)(REMOTE + 256) = 100;
	for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		wr = cases[i];
		recv = wr.opcode == IBV_WR_SEND ||
		       wr.opcode == IBV_WR_SEND_WITH_IMM ||
		       wr.opcode == IBV_WR_SEND_WITH_INV ||
		       wr.opcode == IBV_WR_RDMA_WRITE_WITH_IMM;
		if (recv)
			CHECK_EQ(0, post_recv_buf(xqp, 0x70, DST, 64));
		CHECK_EQ(0, ibv_post_send(xqp, &wr, &bad));
		memcpy(a, executed(0), sizeof(a));

		if (recv)
			CHECK_EQ(0, post_recv_buf(xqp, 0x70, DST, 64));
		calls = k.syscalls;
		ibv_wr_start(qpx);
		wr_api_build(qpx, &wr);
		CHECK_EQ(0, ibv_wr_complete(qpx));
		CHECK_EQ(calls + 1, k.syscalls);

		len = wqe_len(a);
		CHECK_EQ(len, wqe_len(executed(0)));
		if (memcmp(a, executed(0), len)) {
			printf("# case %u (wr_id %#llx): the WQEs differ\n", i,
			       (unsigned long long)wr.wr_id);
			CHECK(0);
		}
		CHECK_EQ(wr.wr_id, ((struct vrdma_send_wqe *)a)->wr_id);

		/* both ran, and succeeded */
		n = poll_ex(wc, 4);
		CHECK_EQ(recv ? 4 : 2, n);
		while (n-- > 0) {
			CHECK_EQ(IBV_WC_SUCCESS, wc[n].status);
			if (wc[n].wc_flags & IBV_WC_WITH_INV)
				CHECK_EQ(0xabcd, wc[n].invalidated_rkey);
		}
	}
	/* the atomics did what they said, twice each */
	CHECK_EQ(0x1122334455667788ULL, *(uint64_t *)(void *)(REMOTE + 256));
	/* inline data needs no registered memory */
	CHECK(!memcmp(REMOTE + 64, inl, 64));
}

/* One batch: one release of prod and one doorbell, at wr_complete. */
static void test_wr_batch(void)
{
	struct vrdma_qp *vqp = vrdma_container_of(xqp, struct vrdma_qp,
						  vqp.qp);
	static const char msg[] = "inline!";
	uint32_t prod = sq_hdr(xqp)->prod;
	int calls = k.syscalls, doorbells = k.doorbells, done = k.executed;
	struct ibv_wc wc[4];
	int i;

	memcpy(SRC, "batch of three", 14);
	memset(REMOTE, 0, 64);
	memset(DST, 0, 64);
	ibv_wr_start(qpx);
	qpx->wr_flags = IBV_SEND_SIGNALED;
	qpx->wr_id = 0x81;
	ibv_wr_rdma_write(qpx, mr->rkey, (uintptr_t)REMOTE);
	ibv_wr_set_sge(qpx, mr->lkey, (uintptr_t)SRC, 14);
	qpx->wr_id = 0x82;
	ibv_wr_rdma_write(qpx, mr->rkey, (uintptr_t)REMOTE + 32);
	ibv_wr_set_inline_data(qpx, (void *)msg, sizeof(msg));
	qpx->wr_id = 0x83;
	ibv_wr_rdma_read(qpx, mr->rkey, (uintptr_t)REMOTE);
	ibv_wr_set_sge(qpx, mr->lkey, (uintptr_t)DST, 14);
	/* built, not published */
	CHECK_EQ(prod, sq_hdr(xqp)->prod);
	CHECK_EQ(prod + 3, vqp->sq.ring.head);
	CHECK_EQ(calls, k.syscalls);
	CHECK_EQ(0, ibv_wr_complete(qpx));
	CHECK_EQ(prod + 3, sq_hdr(xqp)->prod);
	CHECK_EQ(calls + 1, k.syscalls);
	CHECK_EQ(doorbells + 1, k.doorbells);
	CHECK_EQ(done + 3, k.executed);

	CHECK_EQ(3, poll_ex(wc, 4));
	for (i = 0; i < 3; i++) {
		CHECK_EQ(0x81 + i, wc[i].wr_id);
		CHECK_EQ(IBV_WC_SUCCESS, wc[i].status);
	}
	CHECK_EQ(IBV_WC_RDMA_READ, wc[2].opcode);
	CHECK(!memcmp(REMOTE, "batch of three", 14));
	CHECK(!memcmp(REMOTE + 32, msg, sizeof(msg)));
	CHECK(!memcmp(DST, "batch of three", 14));

	/* an empty batch posts nothing and makes no system call */
	ibv_wr_start(qpx);
	CHECK_EQ(0, ibv_wr_complete(qpx));
	CHECK_EQ(calls + 1, k.syscalls);
	CHECK_EQ(prod + 3, sq_hdr(xqp)->prod);
}

/* wr_abort discards the batch; the next one takes the same slots. */
static void test_wr_abort(void)
{
	struct vrdma_qp *vqp = vrdma_container_of(xqp, struct vrdma_qp,
						  vqp.qp);
	uint32_t prod = sq_hdr(xqp)->prod;
	int calls = k.syscalls, done = k.executed;
	struct vrdma_send_wqe *slot;
	struct ibv_wc wc[4];

	ibv_wr_start(qpx);
	qpx->wr_flags = IBV_SEND_SIGNALED;
	qpx->wr_id = 0xdead1;
	ibv_wr_send(qpx);
	ibv_wr_set_sge(qpx, mr->lkey, (uintptr_t)SRC, 4);
	qpx->wr_id = 0xdead2;
	ibv_wr_send(qpx);
	ibv_wr_abort(qpx);
	CHECK_EQ(prod, sq_hdr(xqp)->prod);
	CHECK_EQ(prod, vqp->sq.ring.head);
	CHECK_EQ(calls, k.syscalls);
	CHECK_EQ(0, poll_ex(wc, 4));

	ibv_wr_start(qpx);
	qpx->wr_id = 0x600d;
	ibv_wr_rdma_write(qpx, mr->rkey, (uintptr_t)REMOTE);
	ibv_wr_set_sge(qpx, mr->lkey, (uintptr_t)SRC, 4);
	CHECK_EQ(0, ibv_wr_complete(qpx));
	CHECK_EQ(prod + 1, sq_hdr(xqp)->prod);
	CHECK_EQ(done + 1, k.executed);
	slot = kring_entry(k.qps[xqp->handle].sq, prod);
	CHECK_EQ(0x600d, slot->wr_id);
	CHECK_EQ(1, poll_ex(wc, 4));
	CHECK_EQ(0x600d, wc[0].wr_id);
}

/* A batch longer than the SQ: ENOMEM at wr_complete, nothing posted. */
static void test_wr_full(void)
{
	uint32_t prod = sq_hdr(xqp)->prod;
	int calls = k.syscalls, i;
	struct ibv_wc wc[16];

	ibv_wr_start(qpx);
	qpx->wr_flags = IBV_SEND_SIGNALED;
	for (i = 0; i < 9; i++) {
		qpx->wr_id = 0x900 + i;
		ibv_wr_rdma_write(qpx, mr->rkey, (uintptr_t)REMOTE);
		ibv_wr_set_sge(qpx, mr->lkey, (uintptr_t)SRC, 8);
	}
	CHECK_EQ(ENOMEM, ibv_wr_complete(qpx));
	CHECK_EQ(prod, sq_hdr(xqp)->prod);
	CHECK_EQ(calls, k.syscalls);
	CHECK_EQ(0, poll_ex(wc, 16));

	/* exactly full is fine */
	ibv_wr_start(qpx);
	for (i = 0; i < 8; i++) {
		qpx->wr_id = 0x910 + i;
		ibv_wr_rdma_write(qpx, mr->rkey, (uintptr_t)REMOTE);
		ibv_wr_set_sge(qpx, mr->lkey, (uintptr_t)SRC, 8);
	}
	CHECK_EQ(0, ibv_wr_complete(qpx));
	CHECK_EQ(prod + 8, sq_hdr(xqp)->prod);
	CHECK_EQ(calls + 1, k.syscalls);
	CHECK_EQ(8, poll_ex(wc, 16));
	for (i = 0; i < 8; i++)
		CHECK_EQ(0x910 + i, wc[i].wr_id);
}

/*
 * A bad request fails the whole batch at wr_complete, with the first
 * error; nothing is published, no system call is made.
 */
static void test_wr_errors(void)
{
	struct ibv_sge sg[5] = {};
	struct ibv_data_buf big[2] = {
		{ .addr = SRC, .length = 60 },
		{ .addr = SRC, .length = 5 },
	};
	uint32_t prod = sq_hdr(xqp)->prod;
	int calls = k.syscalls;
	struct ibv_qp_ex *x2;
	struct ibv_wc wc[4];
	struct ibv_qp *q2;

	/* a setter before any builder */
	ibv_wr_start(qpx);
	ibv_wr_set_sge(qpx, mr->lkey, (uintptr_t)SRC, 8);
	ibv_wr_send(qpx);
	CHECK_EQ(EINVAL, ibv_wr_complete(qpx));

	/* a good WQE, then more SGEs than max_send_sge: neither posted */
	ibv_wr_start(qpx);
	ibv_wr_send(qpx);
	ibv_wr_send(qpx);
	ibv_wr_set_sge_list(qpx, 5, sg);
	CHECK_EQ(EINVAL, ibv_wr_complete(qpx));

	/* inline: one byte beyond max_inline_data, or on a READ */
	ibv_wr_start(qpx);
	ibv_wr_send(qpx);
	ibv_wr_set_inline_data_list(qpx, 2, big);
	CHECK_EQ(EINVAL, ibv_wr_complete(qpx));
	ibv_wr_start(qpx);
	ibv_wr_rdma_read(qpx, mr->rkey, (uintptr_t)REMOTE);
	ibv_wr_set_inline_data(qpx, SRC, 8);
	CHECK_EQ(EINVAL, ibv_wr_complete(qpx));

	/* a UD address on an RC QP */
	ibv_wr_start(qpx);
	ibv_wr_send(qpx);
	ibv_wr_set_ud_addr(qpx, NULL, 1, 2);
	CHECK_EQ(EINVAL, ibv_wr_complete(qpx));

	/* ops create_qp_ex refuses: the first error is the one reported */
	ibv_wr_start(qpx);
	ibv_wr_send_tso(qpx, NULL, 0, 0);
	ibv_wr_send(qpx);
	ibv_wr_set_sge_list(qpx, 5, sg);
	CHECK_EQ(EOPNOTSUPP, ibv_wr_complete(qpx));
	ibv_wr_start(qpx);
	ibv_wr_set_sge_list(qpx, 5, sg);
	ibv_wr_send_tso(qpx, NULL, 0, 0);
	CHECK_EQ(EINVAL, ibv_wr_complete(qpx));
	/* a bind without a window */
	ibv_wr_start(qpx);
	ibv_wr_bind_mw(qpx, NULL, 0, NULL);
	CHECK_EQ(EINVAL, ibv_wr_complete(qpx));

	CHECK_EQ(prod, sq_hdr(xqp)->prod);
	CHECK_EQ(calls, k.syscalls);
	CHECK_EQ(0, poll_ex(wc, 4));

	/* a QP created for SENDs only, signaling all */
	q2 = create_ex_qp(IBV_QPT_RC, IBV_QP_EX_WITH_SEND, 1);
	x2 = q2 ? ibv_qp_to_qp_ex(q2) : NULL;
	CHECK(x2);
	if (!x2)
		return;
	/* not before RTS, as post_send */
	calls = k.syscalls;
	ibv_wr_start(x2);
	ibv_wr_send(x2);
	CHECK_EQ(EINVAL, ibv_wr_complete(x2));
	CHECK_EQ(calls, k.syscalls);
	CHECK_EQ(0, connect_loopback(q2));
	calls = k.syscalls;
	ibv_wr_start(x2);
	ibv_wr_rdma_write(x2, mr->rkey, (uintptr_t)REMOTE);
	CHECK_EQ(EINVAL, ibv_wr_complete(x2));
	CHECK_EQ(calls, k.syscalls);
	/* what it was created for works, sq_sig_all included */
	CHECK_EQ(0, post_recv_buf(q2, 0x77, DST, 64));
	ibv_wr_start(x2);
	x2->wr_id = 0x78;
	x2->wr_flags = 0;
	ibv_wr_send(x2);
	CHECK_EQ(0, ibv_wr_complete(x2));
	CHECK_EQ(VRDMA_SEND_SIGNALED,
		 ((struct vrdma_send_wqe *)executed(0))->flags);
	CHECK_EQ(2, poll_ex(wc, 4));
	CHECK_EQ(0x77, wc[0].wr_id);
	CHECK_EQ(0x78, wc[1].wr_id);
	CHECK_EQ(0, ibv_destroy_qp(q2));
}

/* UD: the kernel's AH handle in the WQE, and no address is no request. */
static void test_wr_ud(void)
{
	struct ibv_ah_attr ah_attr = { .is_global = 1, .port_num = 1 };
	struct vrdma_send_wqe *wqe = (struct vrdma_send_wqe *)k.last_wqe;
	struct ibv_qp_ex *x;
	struct ibv_wc wc[2];
	struct ibv_ah *ah;
	struct ibv_qp *q;
	int calls;

	q = create_ex_qp(IBV_QPT_UD, IBV_QP_EX_WITH_SEND |
			 IBV_QP_EX_WITH_SEND_WITH_IMM, 0);
	ah = ibv_create_ah(pd, &ah_attr);
	x = q ? ibv_qp_to_qp_ex(q) : NULL;
	CHECK(x && ah);
	if (!x || !ah)
		return;
	CHECK_EQ(0, ibv_modify_qp(q, &(struct ibv_qp_attr){
					.qp_state = IBV_QPS_INIT,
					.port_num = 1,
					.qkey = 0x11111111,
				  }, IBV_QP_STATE | IBV_QP_PKEY_INDEX |
				  IBV_QP_PORT | IBV_QP_QKEY));
	CHECK_EQ(0, ibv_modify_qp(q, &(struct ibv_qp_attr){
					.qp_state = IBV_QPS_RTR,
				  }, IBV_QP_STATE));
	CHECK_EQ(0, ibv_modify_qp(q, &(struct ibv_qp_attr){
					.qp_state = IBV_QPS_RTS,
				  }, IBV_QP_STATE | IBV_QP_SQ_PSN));
	ibv_wr_start(x);
	x->wr_id = 21;
	x->wr_flags = IBV_SEND_SIGNALED;
	ibv_wr_send(x);
	ibv_wr_set_ud_addr(x, ah, 0xabcdef, 0x11111111);
	ibv_wr_set_sge(x, mr->lkey, (uintptr_t)SRC, 4);
	CHECK_EQ(0, ibv_wr_complete(x));
	CHECK_EQ(0x4711, wqe->ud.ah);
	CHECK_EQ(0xabcdef, wqe->ud.remote_qpn);
	CHECK_EQ(0x11111111, wqe->ud.remote_qkey);
	CHECK_EQ(1, poll_ex(wc, 2));
	CHECK_EQ(21, wc[0].wr_id);

	calls = k.syscalls;
	ibv_wr_start(x);
	ibv_wr_send_imm(x, 0);
	ibv_wr_set_sge(x, mr->lkey, (uintptr_t)SRC, 4);
	CHECK_EQ(EINVAL, ibv_wr_complete(x));
	CHECK_EQ(calls, k.syscalls);
	CHECK_EQ(0, ibv_destroy_ah(ah));
	CHECK_EQ(0, ibv_destroy_qp(q));
}

static void test_destroy_ex(void)
{
	int mapped = mapped_rings();

	CHECK_EQ(0, ibv_destroy_qp(xqp));
	CHECK_EQ(0, ibv_destroy_cq(ibv_cq_ex_to_cq(xcq)));
	CHECK_EQ(mapped - 3, mapped_rings());
}

static void test_bad_caps(void)
{
	int destroys = k.qp_destroys, mapped = mapped_rings();

	k.bad_sq_caps = true;
	errno = 0;
	CHECK(!create_rc_qp(0));
	CHECK_EQ(EPROTO, errno);
	k.bad_sq_caps = false;
	/* the kernel's QP was destroyed, nothing stays mapped */
	CHECK_EQ(destroys + 1, k.qp_destroys);
	CHECK_EQ(mapped, mapped_rings());
}

static void test_ud(void)
{
	struct ibv_qp_init_attr init = {
		.send_cq = scq,
		.recv_cq = rcq,
		.cap = { .max_send_wr = 2, .max_recv_wr = 2, .max_send_sge = 1,
			 .max_recv_sge = 1 },
		.qp_type = IBV_QPT_UD,
	};
	struct ibv_ah_attr ah_attr = { .is_global = 1, .port_num = 1 };
	struct ibv_sge sge = { .addr = (uintptr_t)SRC, .length = 4,
			       .lkey = mr->lkey };
	struct ibv_send_wr wr = {
		.wr_id = 8, .sg_list = &sge, .num_sge = 1,
		.opcode = IBV_WR_SEND, .send_flags = IBV_SEND_SIGNALED,
	};
	struct vrdma_send_wqe *wqe = (struct vrdma_send_wqe *)k.last_wqe;
	struct ibv_send_wr *bad = NULL;
	struct ibv_wc wc[2];
	struct ibv_ah *ah;
	struct ibv_qp *q;

	q = ibv_create_qp(pd, &init);
	ah = ibv_create_ah(pd, &ah_attr);
	CHECK(q && ah);
	if (!q || !ah)
		return;
	CHECK_EQ(0x77, ah->handle);
	CHECK_EQ(0, ibv_modify_qp(q, &(struct ibv_qp_attr){
					.qp_state = IBV_QPS_INIT,
					.port_num = 1,
					.qkey = 0x11111111,
				  }, IBV_QP_STATE | IBV_QP_PKEY_INDEX |
				  IBV_QP_PORT | IBV_QP_QKEY));
	CHECK_EQ(0, ibv_modify_qp(q, &(struct ibv_qp_attr){
					.qp_state = IBV_QPS_RTR,
				  }, IBV_QP_STATE));
	CHECK_EQ(0, ibv_modify_qp(q, &(struct ibv_qp_attr){
					.qp_state = IBV_QPS_RTS,
				  }, IBV_QP_STATE | IBV_QP_SQ_PSN));
	wr.wr.ud.ah = ah;
	wr.wr.ud.remote_qpn = 0xabcdef;
	wr.wr.ud.remote_qkey = 0x11111111;
	CHECK_EQ(0, ibv_post_send(q, &wr, &bad));
	CHECK_EQ(0x4711, wqe->ud.ah);
	CHECK_EQ(0xabcdef, wqe->ud.remote_qpn);
	CHECK_EQ(0x11111111, wqe->ud.remote_qkey);
	CHECK_EQ(1, ibv_poll_cq(scq, 2, wc));
	CHECK_EQ(8, wc[0].wr_id);
	CHECK_EQ(0, ibv_destroy_ah(ah));
	CHECK_EQ(0, ibv_destroy_qp(q));
}

/* ---- XRC --------------------------------------------------------------- */

static struct ibv_xrcd *xrcd;
static struct ibv_srq *xsrq;	/* an XRC SRQ completing on rcq */
static uint32_t xsrqn;
static struct ibv_qp *xtgt, *xini, *xopened;
static int xrc_mapped;		/* rings mapped before any XRC object */

#define XSRQ_ATTR_MASK							\
	(IBV_SRQ_INIT_ATTR_TYPE | IBV_SRQ_INIT_ATTR_PD |		\
	 IBV_SRQ_INIT_ATTR_XRCD | IBV_SRQ_INIT_ATTR_CQ)

static int post_srq_buf(struct ibv_srq *srq, uint64_t wr_id, void *buf,
			uint32_t len)
{
	struct ibv_sge sge = {
		.addr = (uintptr_t)buf, .length = len, .lkey = mr->lkey,
	};
	struct ibv_recv_wr wr = { .wr_id = wr_id, .sg_list = &sge,
				  .num_sge = 1 };
	struct ibv_recv_wr *bad = NULL;

	return ibv_post_srq_recv(srq, &wr, &bad);
}

/* An XRC initiator to RTS, its destination the target QP xtgt. */
static int xrc_connect(struct ibv_qp *q)
{
	struct ibv_qp_attr attr = {
		.qp_state = IBV_QPS_RTR,
		.path_mtu = IBV_MTU_1024,
		.dest_qp_num = xtgt->qp_num,
		.ah_attr = { .is_global = 1, .port_num = 1 },
	};
	int ret;

	ret = to_init(q);
	if (!ret)
		ret = ibv_modify_qp(q, &attr,
				    IBV_QP_STATE | IBV_QP_AV |
					    IBV_QP_PATH_MTU | IBV_QP_DEST_QPN |
					    IBV_QP_RQ_PSN);
	if (!ret)
		ret = to_rts(q);
	return ret;
}

static void test_xrcd_srq(void)
{
	struct ibv_xrcd_init_attr xattr = {
		.comp_mask = IBV_XRCD_INIT_ATTR_FD,
		.fd = -1,
		.oflags = O_CREAT,
	};
	struct ibv_srq_init_attr_ex attr = {
		.attr = { .max_wr = 5, .max_sge = 1 },
		.comp_mask = XSRQ_ATTR_MASK & ~IBV_SRQ_INIT_ATTR_CQ,
		.srq_type = IBV_SRQT_XRC,
		.pd = pd,
		.cq = rcq,
		.srq_context = &attr,
	};
	struct vrdma_srq *vsrq;
	int calls = k.syscalls, destroys = k.srq_destroys;
	struct ibv_srq *srq;
	uint32_t num = 0;

	xrc_mapped = mapped_rings();
	/* refused before the kernel is asked */
	errno = 0;
	CHECK(!ibv_open_xrcd(ctx, &xattr));
	CHECK_EQ(EINVAL, errno);
	xattr.comp_mask = IBV_XRCD_INIT_ATTR_RESERVED - 1 +
			  IBV_XRCD_INIT_ATTR_RESERVED;
	errno = 0;
	CHECK(!ibv_open_xrcd(ctx, &xattr));
	CHECK_EQ(EOPNOTSUPP, errno);
	CHECK_EQ(calls, k.syscalls);

	xattr.comp_mask = IBV_XRCD_INIT_ATTR_FD | IBV_XRCD_INIT_ATTR_OFLAGS;
	xrcd = ibv_open_xrcd(ctx, &xattr);
	CHECK(xrcd);
	if (!xrcd)
		exit(1);
	CHECK_EQ(1, k.xrcds);
	CHECK_EQ(O_CREAT, k.xrcd_oflags);
	CHECK(xrcd->context == ctx);
	attr.xrcd = xrcd;

	calls = k.syscalls;
	errno = 0;
	CHECK(!ibv_create_srq_ex(ctx, &attr));		/* XRC needs a CQ */
	CHECK_EQ(EINVAL, errno);
	/* tag matching without its attributes (IBV_SRQ_INIT_ATTR_TM) */
	attr.comp_mask = XSRQ_ATTR_MASK;
	attr.srq_type = IBV_SRQT_TM;
	errno = 0;
	CHECK(!ibv_create_srq_ex(ctx, &attr));
	CHECK_EQ(EINVAL, errno);
	attr.srq_type = IBV_SRQT_XRC;
	CHECK_EQ(calls, k.syscalls);

	k.srq_supported = true;
	/* driver data and uverbs disagree on the number: EPROTO, destroyed */
	k.bad_srqn = true;
	errno = 0;
	CHECK(!ibv_create_srq_ex(ctx, &attr));
	CHECK_EQ(EPROTO, errno);
	CHECK_EQ(destroys + 1, k.srq_destroys);
	CHECK_EQ(xrc_mapped, mapped_rings());
	k.bad_srqn = false;

	xsrq = ibv_create_srq_ex(ctx, &attr);
	CHECK(xsrq);
	if (!xsrq) {
		printf("# ibv_create_srq_ex: %s\n", strerror(errno));
		exit(1);
	}
	CHECK_EQ(xrc_mapped + 1, mapped_rings());
	CHECK_EQ(8, attr.attr.max_wr);
	CHECK_EQ(0, ibv_get_srq_num(xsrq, &xsrqn));
	CHECK_EQ(FIRST_SRQN + xsrq->handle, xsrqn);
	CHECK(xsrq->pd == pd);
	CHECK(xsrq->srq_context == &attr);
	vsrq = vrdma_container_of(xsrq, struct vrdma_srq, vsrq.srq);
	CHECK_EQ(IBV_SRQT_XRC, vsrq->vsrq.srq_type);
	CHECK(vsrq->vsrq.cq == rcq);
	CHECK_EQ(1, vsrq->rq.max_sge);

	/* a basic SRQ, through create_srq_ex too, has no number */
	attr.comp_mask = IBV_SRQ_INIT_ATTR_PD | IBV_SRQ_INIT_ATTR_CQ;
	srq = ibv_create_srq_ex(ctx, &attr);
	CHECK(srq);
	if (!srq)
		return;
	CHECK_EQ(EINVAL, ibv_get_srq_num(srq, &num));
	CHECK_EQ(0, k.srqs[srq->handle].srqn);
	CHECK_EQ(0, ibv_destroy_srq(srq));
	CHECK_EQ(xrc_mapped + 1, mapped_rings());
	CHECK_EQ(0, k.uhw_short);
}

static void test_xrc_qps(void)
{
	struct ibv_qp_init_attr_ex tattr = {
		.qp_type = IBV_QPT_XRC_RECV,
		.comp_mask = IBV_QP_INIT_ATTR_PD,
		.pd = pd,
		.xrcd = xrcd,
		.send_cq = scq,
	};
	struct ibv_qp_init_attr_ex iattr = {
		.qp_type = IBV_QPT_XRC_SEND,
		.send_cq = scq,
		.recv_cq = rcq,
		.srq = xsrq,
		.cap = { .max_send_wr = 5, .max_send_sge = 1,
			 .max_recv_wr = 5, .max_recv_sge = 1 },
		.comp_mask = IBV_QP_INIT_ATTR_PD,
		.pd = pd,
	};
	struct ibv_qp_open_attr oattr = {
		.comp_mask = IBV_QP_OPEN_ATTR_NUM | IBV_QP_OPEN_ATTR_XRCD |
			     IBV_QP_OPEN_ATTR_TYPE |
			     IBV_QP_OPEN_ATTR_RESERVED,
		.xrcd = xrcd,
		.qp_type = IBV_QPT_XRC_RECV,
	};
	struct ibv_sge sge = { .addr = (uintptr_t)SRC, .length = 4,
			       .lkey = mr->lkey };
	struct ibv_send_wr wr = {
		.wr_id = 0xb1, .sg_list = &sge, .num_sge = 1,
		.opcode = IBV_WR_SEND, .send_flags = IBV_SEND_SIGNALED,
		.qp_type.xrc.remote_srqn = xsrqn,
	};
	struct vrdma_send_wqe *wqe = (struct vrdma_send_wqe *)k.last_wqe;
	int calls = k.syscalls, mapped = mapped_rings();
	struct ibv_qp_init_attr init;
	struct ibv_send_wr *bad = NULL;
	struct ibv_qp_attr qattr;
	struct vrdma_qp *vqp;
	struct ibv_wc wc[4];

	/* refused before the kernel is asked */
	errno = 0;
	CHECK(!ibv_create_qp_ex(ctx, &tattr));	/* a target needs an XRCD */
	CHECK_EQ(EINVAL, errno);
	errno = 0;
	CHECK(!ibv_create_qp_ex(ctx, &iattr));	/* an initiator, an SRQ */
	CHECK_EQ(EINVAL, errno);
	errno = 0;
	CHECK(!ibv_open_qp(ctx, &oattr));
	CHECK_EQ(EOPNOTSUPP, errno);
	oattr.comp_mask &= ~IBV_QP_OPEN_ATTR_RESERVED;
	oattr.qp_type = IBV_QPT_RC;
	errno = 0;
	CHECK(!ibv_open_qp(ctx, &oattr));
	CHECK_EQ(EINVAL, errno);
	oattr.qp_type = IBV_QPT_XRC_RECV;
	CHECK_EQ(calls, k.syscalls);

	/*
	 * a target QP: no rings, no driver data, no CQ or SRQ; the PD it was
	 * given stays recorded, as librdmacm takes an XRC SRQ's PD from it
	 */
	tattr.comp_mask = IBV_QP_INIT_ATTR_XRCD | IBV_QP_INIT_ATTR_PD;
	xtgt = ibv_create_qp_ex(ctx, &tattr);
	CHECK(xtgt);
	if (!xtgt) {
		printf("# XRC target: %s\n", strerror(errno));
		exit(1);
	}
	CHECK_EQ(mapped, mapped_rings());
	CHECK_EQ(0, k.uhw_unexpected);
	CHECK_EQ(IBV_QPT_XRC_RECV, xtgt->qp_type);
	CHECK(xtgt->pd == tattr.pd && !xtgt->send_cq && !xtgt->recv_cq &&
	      !xtgt->srq);
	CHECK_EQ(0, to_init(xtgt));
	CHECK_EQ(0, to_rtr(xtgt));

	/* an initiator: an SQ and nothing to receive with */
	iattr.srq = NULL;
	xini = ibv_create_qp_ex(ctx, &iattr);
	CHECK(xini);
	if (!xini) {
		printf("# XRC initiator: %s\n", strerror(errno));
		exit(1);
	}
	CHECK_EQ(mapped + 1, mapped_rings());
	CHECK_EQ(0, iattr.cap.max_recv_wr);
	CHECK(!xini->recv_cq && !xini->srq);
	vqp = vrdma_container_of(xini, struct vrdma_qp, vqp.qp);
	CHECK(vqp->sq.ring.hdr && !vqp->rq.ring.hdr);
	CHECK(vqp->sq.limits.xrc);
	CHECK_EQ(0, xrc_connect(xini));

	/* opened by number, in the same XRC domain: a handle, no ring */
	oattr.qp_num = xtgt->qp_num;
	xopened = ibv_open_qp(ctx, &oattr);
	CHECK(xopened);
	if (!xopened) {
		printf("# ibv_open_qp: %s\n", strerror(errno));
		exit(1);
	}
	CHECK_EQ(xtgt->qp_num, xopened->qp_num);
	CHECK(xtgt->handle != xopened->handle);
	CHECK_EQ(IBV_QPS_UNKNOWN, xopened->state);
	CHECK_EQ(mapped + 1, mapped_rings());
	CHECK_EQ(0, ibv_query_qp(xopened, &qattr, IBV_QP_STATE, &init));
	CHECK_EQ(IBV_QPS_RTR, qattr.qp_state);
	CHECK_EQ(IBV_QPS_RTR, xopened->state);

	/*
	 * Nothing to post on a target QP, nor to receive with on an
	 * initiator: EINVAL with bad_wr, and no system call.
	 */
	calls = k.syscalls;
	CHECK_EQ(EINVAL, ibv_post_send(xtgt, &wr, &bad));
	CHECK(bad == &wr);
	bad = NULL;
	CHECK_EQ(EINVAL, ibv_post_send(xopened, &wr, &bad));
	CHECK(bad == &wr);
	CHECK_EQ(EINVAL, post_recv_buf(xtgt, 1, DST, 8));
	CHECK_EQ(EINVAL, post_recv_buf(xopened, 1, DST, 8));
	CHECK_EQ(EINVAL, post_recv_buf(xini, 1, DST, 8));
	CHECK_EQ(calls, k.syscalls);

	/*
	 * A SEND to the XRC SRQ: received from its ring, completed on its CQ
	 * with the number of the target QP (which this process may not even
	 * have), and the WQE named the SRQ.
	 */
	memcpy(SRC, "xrc!", 4);
	memset(DST, 0, 8);
	CHECK_EQ(0, post_srq_buf(xsrq, 0xa1, DST, 64));
	CHECK_EQ(calls, k.syscalls);
	CHECK_EQ(0, ibv_post_send(xini, &wr, &bad));
	CHECK_EQ(calls + 1, k.syscalls);
	CHECK_EQ(xsrqn, wqe->xrc_remote_srqn);
	CHECK_EQ(1, ibv_poll_cq(rcq, 4, wc));
	CHECK_EQ(0xa1, wc[0].wr_id);
	CHECK_EQ(IBV_WC_SUCCESS, wc[0].status);
	CHECK_EQ(IBV_WC_RECV, wc[0].opcode);
	CHECK_EQ(xtgt->qp_num, wc[0].qp_num);
	CHECK_EQ(xini->qp_num, wc[0].src_qp);
	CHECK_EQ(4, wc[0].byte_len);
	CHECK(!memcmp(DST, "xrc!", 4));
	CHECK_EQ(1, ibv_poll_cq(scq, 4, wc));
	CHECK_EQ(0xb1, wc[0].wr_id);
	CHECK_EQ(IBV_WC_SUCCESS, wc[0].status);

	/* a target QP's RESET leaves its receives on the SRQ's CQ */
	CHECK_EQ(0, post_srq_buf(xsrq, 0xa2, DST, 64));
	CHECK_EQ(0, ibv_post_send(xini, &wr, &bad));
	CHECK_EQ(0, ibv_modify_qp(xtgt, &(struct ibv_qp_attr){
					.qp_state = IBV_QPS_RESET,
				  }, IBV_QP_STATE));
	CHECK_EQ(1, ibv_poll_cq(rcq, 4, wc));
	CHECK_EQ(0xa2, wc[0].wr_id);
	CHECK_EQ(xtgt->qp_num, wc[0].qp_num);
	CHECK_EQ(1, ibv_poll_cq(scq, 4, wc));
	CHECK_EQ(0, to_init(xtgt));
	CHECK_EQ(0, to_rtr(xtgt));
	CHECK_EQ(0, k.bad_index);
}

/* ibv_wr_set_xrc_srqn(): the same WQE as post_send's, on initiators only. */
static void test_xrc_wr(void)
{
	static const uint64_t refused[] = {
		IBV_QP_EX_WITH_ATOMIC_WRITE,
		IBV_QP_EX_WITH_SEND_WITH_INV,
		IBV_QP_EX_WITH_LOCAL_INV,
		IBV_QP_EX_WITH_BIND_MW,
	};
	struct ibv_qp_init_attr_ex attr = {
		.qp_type = IBV_QPT_XRC_SEND,
		.send_cq = scq,
		.cap = { .max_send_wr = 5, .max_send_sge = 1 },
		.comp_mask = IBV_QP_INIT_ATTR_PD |
			     IBV_QP_INIT_ATTR_SEND_OPS_FLAGS,
		.pd = pd,
	};
	struct ibv_sge sge = { .addr = (uintptr_t)SRC, .length = 4,
			       .lkey = mr->lkey };
	struct ibv_send_wr wr = {
		.wr_id = 0xc1, .sg_list = &sge, .num_sge = 1,
		.opcode = IBV_WR_SEND_WITH_IMM, .imm_data = htobe32(0x77),
		.send_flags = IBV_SEND_SIGNALED,
		.qp_type.xrc.remote_srqn = xsrqn,
	};
	uint8_t a[WQE_LOG_SIZE];
	struct ibv_send_wr *bad = NULL;
	struct ibv_qp_ex *x, *rcx;
	struct ibv_qp *q, *rc;
	struct ibv_wc wc[4];
	unsigned int i;

	k.atomic_cap = IBV_ATOMIC_HCA;
	k.device_cap_flags = IBV_DEVICE_MEM_WINDOW;
	for (i = 0; i < sizeof(refused) / sizeof(refused[0]); i++) {
		attr.send_ops_flags = IBV_QP_EX_WITH_SEND | refused[i];
		errno = 0;
		CHECK(!ibv_create_qp_ex(ctx, &attr));
		CHECK_EQ(EOPNOTSUPP, errno);
	}
	attr.send_ops_flags = RC_WR_OPS | ATOMIC_WR_OPS;
	q = ibv_create_qp_ex(ctx, &attr);
	x = q ? ibv_qp_to_qp_ex(q) : NULL;
	CHECK(x);
	if (!x)
		return;
	CHECK_EQ(0, xrc_connect(q));

	CHECK_EQ(0, post_srq_buf(xsrq, 0xa3, DST, 64));
	CHECK_EQ(0, ibv_post_send(q, &wr, &bad));
	memcpy(a, executed(0), sizeof(a));
	CHECK_EQ(0, post_srq_buf(xsrq, 0xa4, DST, 64));
	ibv_wr_start(x);
	wr_api_build(x, &wr);
	ibv_wr_set_xrc_srqn(x, xsrqn);
	CHECK_EQ(0, ibv_wr_complete(x));
	CHECK_EQ(xsrqn, ((struct vrdma_send_wqe *)executed(0))->xrc_remote_srqn);
	CHECK_EQ(wqe_len(a), wqe_len(executed(0)));
	CHECK(!memcmp(a, executed(0), wqe_len(a)));
	CHECK_EQ(2, ibv_poll_cq(rcq, 4, wc));
	CHECK_EQ(0xa3, wc[0].wr_id);
	CHECK_EQ(0xa4, wc[1].wr_id);
	CHECK_EQ(htobe32(0x77), wc[1].imm_data);
	CHECK_EQ(xtgt->qp_num, wc[1].qp_num);
	CHECK_EQ(2, ibv_poll_cq(scq, 4, wc));

	/* the setter with no WQE to set */
	ibv_wr_start(x);
	ibv_wr_set_xrc_srqn(x, xsrqn);
	CHECK_EQ(EINVAL, ibv_wr_complete(x));
	CHECK_EQ(0, ibv_destroy_qp(q));

	/* nor on another QP type */
	attr.qp_type = IBV_QPT_RC;
	attr.recv_cq = rcq;
	attr.cap.max_recv_wr = 1;
	attr.cap.max_recv_sge = 1;
	attr.send_ops_flags = IBV_QP_EX_WITH_SEND;
	rc = ibv_create_qp_ex(ctx, &attr);
	rcx = rc ? ibv_qp_to_qp_ex(rc) : NULL;
	CHECK(rcx);
	if (!rcx)
		return;
	CHECK_EQ(0, connect_loopback(rc));
	ibv_wr_start(rcx);
	ibv_wr_send(rcx);
	ibv_wr_set_xrc_srqn(rcx, xsrqn);
	CHECK_EQ(EINVAL, ibv_wr_complete(rcx));
	CHECK_EQ(0, ibv_destroy_qp(rc));
}

/* Each handle goes on its own; no ring was ever mapped for a target QP. */
static void test_xrc_destroy(void)
{
	int destroys = k.qp_destroys;

	CHECK_EQ(0, ibv_destroy_qp(xopened));
	CHECK_EQ(0, ibv_destroy_qp(xtgt));
	CHECK_EQ(0, ibv_destroy_qp(xini));
	CHECK_EQ(destroys + 3, k.qp_destroys);
	CHECK_EQ(0, ibv_destroy_srq(xsrq));
	CHECK_EQ(xrc_mapped, mapped_rings());
	CHECK_EQ(0, ibv_close_xrcd(xrcd));
	CHECK_EQ(0, k.xrcds);
	CHECK_EQ(0, k.uhw_unexpected);
}

/*
 * On-demand paging: ODP MRs, explicit and implicit, reach the kernel as
 * asked; ibv_advise_mr() is one ADVISE_MR with the SGEs unchanged, and the
 * kernel's answer comes back as the verb's.
 */
static void test_odp(void)
{
	const int access = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE |
			   IBV_ACCESS_ON_DEMAND;
	struct ibv_sge sge[2] = {
		{ .addr = (uintptr_t)mem + 5, .length = 100, .lkey = 0x1006 },
		{ .addr = (uintptr_t)mem + 4096, .length = 3, .lkey = 0x1007 },
	};
	struct ibv_mr *omr, *imr;

	omr = ibv_reg_mr(pd, mem + 5, 100, access);
	CHECK(omr);
	CHECK_EQ((uintptr_t)mem + 5, k.last_reg_mr.start);
	CHECK_EQ(100, k.last_reg_mr.length);
	CHECK_EQ((uintptr_t)mem + 5, k.last_reg_mr.hca_va);
	CHECK_EQ(access, k.last_reg_mr.access_flags);

	/* implicit: the whole address space, as the kernel expects it */
	imr = ibv_reg_mr(pd, NULL, SIZE_MAX, access);
	CHECK(imr);
	CHECK_EQ(0, k.last_reg_mr.start);
	CHECK_EQ(UINT64_MAX, k.last_reg_mr.length);
	CHECK_EQ(0, k.last_reg_mr.hca_va);
	CHECK_EQ(access, k.last_reg_mr.access_flags);
	if (imr) {
		CHECK(!imr->addr);
		CHECK_EQ(SIZE_MAX, imr->length);
	}

	memset(k.advise_sge, 0, sizeof(k.advise_sge));
	CHECK_EQ(0, ibv_advise_mr(pd, IBV_ADVISE_MR_ADVICE_PREFETCH_WRITE,
				  IBV_ADVISE_MR_FLAG_FLUSH, sge, 2));
	CHECK_EQ(1, k.advises);
	CHECK_EQ(3, k.advise_pd);
	CHECK_EQ(IBV_ADVISE_MR_ADVICE_PREFETCH_WRITE, k.advise_advice);
	CHECK_EQ(IBV_ADVISE_MR_FLAG_FLUSH, k.advise_flags);
	CHECK_EQ(2, k.advise_nsge);
	CHECK(!memcmp(k.advise_sge, sge, sizeof(sge)));
	CHECK_EQ(0, ibv_advise_mr(pd, IBV_ADVISE_MR_ADVICE_PREFETCH_NO_FAULT,
				  0, sge + 1, 1));
	CHECK_EQ(IBV_ADVISE_MR_ADVICE_PREFETCH_NO_FAULT, k.advise_advice);
	CHECK_EQ(0, k.advise_flags);
	CHECK_EQ(1, k.advise_nsge);
	/* the kernel's refusal is the verb's return value */
	CHECK_EQ(EINVAL, ibv_advise_mr(pd, IBV_ADVISE_MR_ADVICE_PREFETCH,
				       1 << 7, sge, 1));
	CHECK_EQ(3, k.advises);

	if (omr)
		CHECK_EQ(0, ibv_dereg_mr(omr));
	if (imr)
		CHECK_EQ(0, ibv_dereg_mr(imr));
	CHECK_EQ(0, k.unknown);
}

static void test_destroy(void)
{
	CHECK_EQ(0, ibv_destroy_qp(qp));
	CHECK_EQ(2, mapped_rings());
	CHECK_EQ(0, ibv_destroy_cq(scq));
	CHECK_EQ(0, ibv_destroy_cq(rcq));
	CHECK_EQ(0, mapped_rings());
	CHECK_EQ(0, ibv_dereg_mr(mr));
	CHECK_EQ(0, ibv_dealloc_pd(pd));
	CHECK_EQ(0, ibv_close_device(ctx));

	CHECK_EQ(0, k.unknown);
	CHECK_EQ(0, k.uhw_short);
	CHECK_EQ(0, k.uhw_unexpected);
	CHECK_EQ(0, k.overflow);
	CHECK_EQ(0, k.bad_index);
}

static const struct tap_test tests[] = {
	{ "open through the provider, GET_CONTEXT, PD, MR", test_open },
	{ "ODP MRs, explicit and implicit; advise_mr as one ADVISE_MR",
	  test_odp },
	{ "create_cq maps the ring the kernel describes", test_create_cq },
	{ "create_qp takes the kernel's caps and maps SQ and RQ",
	  test_create_qp },
	{ "SEND; no system call in post_recv, poll_cq; one in post_send",
	  test_send_recv },
	{ "inline SEND with immediate data", test_inline_imm },
	{ "RDMA WRITE, WRITE WITH IMM, READ", test_rdma },
	{ "atomic FETCH_AND_ADD and CMP_AND_SWP", test_atomics },
	{ "full SQ: ENOMEM, bad_wr, one doorbell for the rest", test_sq_full },
	{ "doorbell: by ioctl once write() is refused", test_doorbell_fallback },
	{ "doorbell: none while the kernel sets no_doorbell", test_no_doorbell },
	{ "bad work requests: EINVAL, bad_wr, no system call", test_bad_wr },
	{ "sq_sig_all signals every WQE", test_sig_all },
	{ "SQ refused before RTS, RQ before INIT, nothing queued",
	  test_not_ready },
	{ "ERR flushes; WRs posted in ERR are rung in and flushed",
	  test_error_flush },
	{ "RESET drops what is queued, the QP works again after it",
	  test_reset_and_reuse },
	{ "req_notify_cq goes to the kernel", test_req_notify },
	{ "resize_cq keeps unpolled CQEs and the kernel's cons",
	  test_resize_cq },
	{ "create_srq passes the kernel's EOPNOTSUPP on",
	  test_srq_unsupported },
	{ "create_cq_ex: refuses what a CQE cannot carry; empty is ENOENT",
	  test_create_cq_ex },
	{ "create_qp_ex: send ops as the kernel and device can do them",
	  test_create_qp_ex },
	{ "start/next/end_poll: every field, cons released at end_poll",
	  test_cq_ex_poll },
	{ "ibv_wr_*: the same WQE bytes as post_send, for every op",
	  test_wr_layout },
	{ "ibv_wr_*: a batch is published and rung in once",
	  test_wr_batch },
	{ "ibv_wr_abort: nothing published, the slots reused",
	  test_wr_abort },
	{ "ibv_wr_*: a batch beyond the SQ is ENOMEM, nothing posted",
	  test_wr_full },
	{ "ibv_wr_*: bad requests fail the whole batch, no system call",
	  test_wr_errors },
	{ "ibv_wr_*: the kernel's AH handle in the WQE, no address EINVAL",
	  test_wr_ud },
	{ "destroy the extended QP and CQ", test_destroy_ex },
	{ "granted caps the ring cannot hold: EPROTO, QP destroyed",
	  test_bad_caps },
	{ "UD: create_ah, the kernel's AH handle in the WQE", test_ud },
	{ "XRC: open_xrcd, XRC SRQ and its number, refusals",
	  test_xrcd_srq },
	{ "XRC: target QP without rings, initiator without RQ, open_qp",
	  test_xrc_qps },
	{ "XRC: ibv_wr_set_xrc_srqn writes what post_send does",
	  test_xrc_wr },
	{ "XRC: destroy the QPs, the SRQ, close the XRCD", test_xrc_destroy },
	{ "destroy everything, every ring unmapped", test_destroy },
};

int main(void)
{
	return tap_run(tests, sizeof(tests) / sizeof(tests[0]));
}
