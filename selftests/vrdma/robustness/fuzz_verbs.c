// SPDX-License-Identifier: GPL-2.0
/*
 * The user space -> kernel fuzzer: random verb sequences with random
 * attributes through the uverbs interface, and random bytes in the shared
 * rings, while traffic runs.
 *
 * Each round is a child process with a seed of its own.  It opens DEV and
 * runs random operations on pools of objects: PDs, CQs (create, resize,
 * destroy, notify, poll), QPs of every type (create with random caps,
 * modify_qp with random masks and values or a proper connection to
 * another QP of the pool, query, destroy), MRs (reg_mr with odd ranges:
 * unaligned, empty, unmapped, read-only, huge, wrapping; random access
 * flags; rereg_mr; dereg_mr), MWs (alloc, bind, dealloc), SRQs (create,
 * modify and resize, query, post, destroy), AHs, imports (a context on a
 * dup of the command file, PDs and MRs by real or random handles), post_send
 * and post_recv with random work requests and keys, and writes random and adversarial bytes into the
 * SQ, RQ, SRQ and CQ rings and their indices, then rings the doorbell.
 * The round ends by exiting with every object still there (the kernel
 * cleans up), or by SIGKILL at a random moment.
 *
 * Meanwhile an RC pair between DEV and DEV2 moves data and checks every
 * byte (fz_live_start in fuzz_lib.h): it must keep working.  A round must
 * not hang (a child that SIGKILL cannot end is stuck in the kernel).
 * Kernel reports (KASAN, lockdep, WARN...) are caught by the VM harness;
 * fuzz.sh also checks dmesg.
 *
 *   fuzz_verbs DEV DEV2 SECONDS SEED [ROUND_SEED]
 *
 * VRDMA_FUZZ_JOBS (default 2) runners do rounds at the same time, runner
 * j seeded with SEED + j.  Every round prints its seed; "fuzz_verbs DEV
 * DEV2 S SEED ROUND_SEED" replays that one round.  TAP output.
 */
#define _GNU_SOURCE
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/resource.h>

#include "fuzz_lib.h"
/* The provider's own header: the rings are written behind its back. */
#include "vrdma.h"

#define POOL		6
#define MEM_PAGES	256
#define PAGE		4096

struct pools {
	struct ibv_context *ctx;
	struct ibv_context *ictx;	/* imported on a dup of ctx's file */
	int import_tried;
	struct ibv_comp_channel *ch;
	struct ibv_pd *pd[POOL];
	struct ibv_cq *cq[POOL];
	struct ibv_qp *qp[POOL];
	struct ibv_mr *mr[POOL];
	struct ibv_mw *mw[POOL];
	struct ibv_srq *srq[POOL];
	struct ibv_ah *ah[POOL];
	uint8_t *mem;		/* MEM_PAGES pages, some not writable */
	int gid_idx;
	union ibv_gid gid;
	struct ibv_device_attr attr;
	enum ibv_mtu mtu;
};

static struct pools p;
static struct fz_rng rng;
static unsigned long ops;
/* What got through, to see that the rounds reach the interesting states. */
static struct {
	unsigned long qp, mr, rts, send, recv, ring;
} got;

#define R (&rng)

/* A random slot of @pool, and a random used one (or NULL). */
#define SLOT(pool) (fz_below(R, POOL))
static void *any(void **pool)
{
	int i, s = fz_below(R, POOL);

	for (i = 0; i < POOL; i++)
		if (pool[(s + i) % POOL])
			return pool[(s + i) % POOL];
	return NULL;
}

#define ANY(pool) ((__typeof__((pool)[0]))any((void **)(pool)))

static uint32_t any_key(void)
{
	struct ibv_mr *mr = ANY(p.mr);
	struct ibv_mw *mw = ANY(p.mw);

	switch (fz_below(R, 6)) {
	case 0: case 1:
		return mr ? mr->lkey : fz_u32(R);
	case 2:
		return mr ? mr->rkey : fz_u32(R);
	case 3:
		return mw ? mw->rkey : fz_u32(R);
	case 4:
		return mr ? mr->lkey ^ (1u << fz_below(R, 32)) : 0;
	default:
		return fz_interesting32(R);
	}
}

static uint64_t any_addr(void)
{
	struct ibv_mr *mr = ANY(p.mr);

	switch (fz_below(R, 6)) {
	case 0: case 1:
		return mr ? (uintptr_t)mr->addr + fz_below(R, mr->length + 2)
			  : 0;
	case 2:
		return mr ? (uintptr_t)mr->addr + mr->length -
			    fz_below(R, 16) : 0;
	case 3:
		return (uintptr_t)p.mem + fz_below(R, MEM_PAGES * PAGE);
	case 4:
		return fz_u64(R);
	default:
		return (uint64_t)0 - fz_below(R, 8192);
	}
}

static int any_access(void)
{
	switch (fz_below(R, 4)) {
	case 0:
		return fz_u32(R) & 0x1fffff;
	case 1:
		return IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE |
		       IBV_ACCESS_REMOTE_READ | IBV_ACCESS_REMOTE_ATOMIC;
	default:
		return fz_u32(R) & 0x1f;
	}
}

/* ---- operations ------------------------------------------------------ */

static void op_pd(void)
{
	int i = SLOT(p.pd);

	if (p.pd[i]) {
		if (!ibv_dealloc_pd(p.pd[i]))
			p.pd[i] = NULL;
	} else {
		p.pd[i] = ibv_alloc_pd(p.ctx);
	}
}

static void op_cq(void)
{
	int i = SLOT(p.cq), cqe;

	switch (fz_below(R, 4)) {
	case 0:
		cqe = fz_one_in(R, 2) ? (int)fz_interesting32(R) :
					1 + (int)fz_below(R, 256);
		if (fz_one_in(R, 8))
			cqe = p.attr.max_cqe + fz_below(R, 2);
		if (!p.cq[i])
			p.cq[i] = ibv_create_cq(p.ctx, cqe, NULL,
						fz_one_in(R, 2) ? p.ch : NULL,
						fz_one_in(R, 4) ?
						(int)fz_u32(R) : 0);
		else
			ibv_resize_cq(p.cq[i], cqe);
		break;
	case 1:
		if (p.cq[i] && !ibv_destroy_cq(p.cq[i]))
			p.cq[i] = NULL;
		break;
	case 2:
		if (p.cq[i])
			ibv_req_notify_cq(p.cq[i], fz_below(R, 2));
		break;
	default:
		if (p.cq[i]) {
			struct ibv_wc wc[8];

			ibv_poll_cq(p.cq[i], 1 + fz_below(R, 8), wc);
		}
	}
}

static void op_qp_create(void)
{
	static const enum ibv_qp_type types[] = {
		IBV_QPT_RC, IBV_QPT_RC, IBV_QPT_UC, IBV_QPT_UD, IBV_QPT_RAW_PACKET,
		IBV_QPT_XRC_SEND, IBV_QPT_DRIVER,
	};
	struct ibv_qp_init_attr_ex qa = { 0 };
	int i = SLOT(p.qp);

	if (p.qp[i]) {
		if (!ibv_destroy_qp(p.qp[i]))
			p.qp[i] = NULL;
		return;
	}
	qa.send_cq = ANY(p.cq);
	qa.recv_cq = fz_one_in(R, 2) ? qa.send_cq : ANY(p.cq);
	qa.pd = ANY(p.pd);
	if (!qa.send_cq || !qa.recv_cq || !qa.pd)
		return;
	qa.qp_type = types[fz_below(R, sizeof(types) / sizeof(types[0]))];
	if (fz_one_in(R, 3))
		qa.srq = ANY(p.srq);
	qa.sq_sig_all = fz_below(R, 2);
	if (fz_one_in(R, 3)) {
		qa.cap.max_send_wr = fz_interesting32(R);
		qa.cap.max_recv_wr = fz_interesting32(R);
		qa.cap.max_send_sge = fz_interesting32(R);
		qa.cap.max_recv_sge = fz_interesting32(R);
		qa.cap.max_inline_data = fz_interesting32(R);
	} else {
		qa.cap.max_send_wr = 1 + fz_below(R, 64);
		qa.cap.max_recv_wr = 1 + fz_below(R, 64);
		qa.cap.max_send_sge = 1 + fz_below(R, 4);
		qa.cap.max_recv_sge = 1 + fz_below(R, 4);
		qa.cap.max_inline_data = fz_below(R, 256);
	}
	qa.comp_mask = IBV_QP_INIT_ATTR_PD;
	if (fz_one_in(R, 2)) {
		qa.comp_mask |= IBV_QP_INIT_ATTR_SEND_OPS_FLAGS;
		qa.send_ops_flags = fz_one_in(R, 4) ? fz_u64(R) :
				    fz_u32(R) & 0x3ff;
	}
	p.qp[i] = ibv_create_qp_ex(p.ctx, &qa);
	got.qp += !!p.qp[i];
}

static void random_ah_attr(struct ibv_ah_attr *ah)
{
	memset(ah, 0, sizeof(*ah));
	if (fz_one_in(R, 4)) {
		fz_bytes(R, ah, sizeof(*ah));
		return;
	}
	ah->is_global = !fz_one_in(R, 8);
	ah->port_num = fz_one_in(R, 8) ? fz_u32(R) : 1;
	ah->grh.sgid_index = fz_one_in(R, 4) ? fz_u32(R) : p.gid_idx;
	ah->grh.hop_limit = fz_u32(R);
	ah->grh.traffic_class = fz_u32(R);
	ah->grh.flow_label = fz_u32(R);
	ah->dlid = fz_u32(R);
	ah->sl = fz_u32(R);
	ah->static_rate = fz_u32(R);
	if (fz_one_in(R, 2))
		ah->grh.dgid = p.gid;
	else
		fz_bytes(R, &ah->grh.dgid, sizeof(ah->grh.dgid));
}

static void op_qp_modify(void)
{
	struct ibv_qp *qp = ANY(p.qp), *peer = ANY(p.qp);
	struct ibv_qp_attr a;
	struct ibv_qp_init_attr init;
	int mask;

	if (!qp)
		return;
	switch (fz_below(R, 5)) {
	case 0:		/* a proper connection to a QP of the pool */
		if (peer && !fz_connect(qp, p.gid_idx, p.mtu, peer->qp_num,
					&p.gid, fz_u32(R) & 0xffffff,
					fz_u32(R) & 0xffffff,
					fz_below(R, 32), fz_below(R, 8)))
			got.rts++;
		return;
	case 1:		/* anything at all */
		fz_bytes(R, &a, sizeof(a));
		mask = fz_u32(R) & ((1 << 25) - 1);
		break;
	case 2:		/* a state change with plausible values */
		memset(&a, 0, sizeof(a));
		a.qp_state = fz_below(R, 8);
		a.cur_qp_state = fz_below(R, 8);
		a.path_mtu = fz_below(R, 8);
		a.qp_access_flags = any_access();
		a.port_num = fz_one_in(R, 4) ? fz_u32(R) : 1;
		a.pkey_index = fz_one_in(R, 4) ? fz_u32(R) : 0;
		a.qkey = fz_u32(R);
		a.rq_psn = fz_u32(R);
		a.sq_psn = fz_u32(R);
		a.dest_qp_num = peer && fz_below(R, 4) ? peer->qp_num :
			fz_u32(R);
		a.max_rd_atomic = fz_interesting32(R);
		a.max_dest_rd_atomic = fz_interesting32(R);
		a.min_rnr_timer = fz_u32(R);
		a.timeout = fz_u32(R);
		a.retry_cnt = fz_u32(R);
		a.rnr_retry = fz_u32(R);
		a.sq_draining = fz_u32(R);
		a.en_sqd_async_notify = fz_u32(R);
		a.cap.max_send_wr = fz_interesting32(R);
		a.cap.max_recv_wr = fz_interesting32(R);
		a.path_mig_state = fz_u32(R);
		random_ah_attr(&a.ah_attr);
		random_ah_attr(&a.alt_ah_attr);
		a.alt_port_num = fz_u32(R);
		a.alt_timeout = fz_u32(R);
		a.rate_limit = fz_u32(R);
		mask = IBV_QP_STATE | (fz_u32(R) & ((1 << 25) - 1));
		break;
	case 3:
		memset(&a, 0, sizeof(a));
		a.qp_state = fz_one_in(R, 2) ? IBV_QPS_ERR : IBV_QPS_RESET;
		mask = IBV_QP_STATE;
		break;
	default:
		ibv_query_qp(qp, &a, fz_u32(R), &init);
		return;
	}
	ibv_modify_qp(qp, &a, mask);
}

static void op_mr(void)
{
	int i = SLOT(p.mr), flags;
	uint8_t *addr;
	size_t len;

	if (p.mr[i] && fz_one_in(R, 3)) {
		flags = fz_below(R, 16);
		ibv_rereg_mr(p.mr[i], flags, ANY(p.pd),
			     p.mem + fz_below(R, MEM_PAGES * PAGE),
			     fz_below(R, 8 * PAGE), any_access());
		return;
	}
	if (p.mr[i]) {
		if (!ibv_dereg_mr(p.mr[i]))
			p.mr[i] = NULL;
		return;
	}
	switch (fz_below(R, 8)) {
	case 0:
		addr = NULL;
		break;
	case 1:
		addr = (uint8_t *)(uintptr_t)fz_u64(R);
		break;
	case 2:		/* the page that cannot be accessed */
		addr = p.mem + 10 * PAGE + fz_below(R, PAGE);
		break;
	case 3:		/* the read-only page */
		addr = p.mem + 20 * PAGE + fz_below(R, PAGE);
		break;
	default:
		addr = p.mem + fz_below(R, MEM_PAGES * PAGE);
	}
	switch (fz_below(R, 8)) {
	case 0:
		len = 0;
		break;
	case 1:
		len = fz_interesting32(R);
		break;
	case 2:
		len = (size_t)fz_u64(R);
		break;
	case 3:		/* beyond the end of the mapping */
		len = p.mem + MEM_PAGES * PAGE - addr + fz_below(R, 2 * PAGE);
		break;
	default:
		len = 1 + fz_below(R, 4 * PAGE);
	}
	if (!ANY(p.pd))
		return;
	if (fz_one_in(R, 3))
		p.mr[i] = ibv_reg_mr_iova2(ANY(p.pd), addr, len,
					   fz_one_in(R, 2) ? fz_u64(R) :
					   (uintptr_t)addr, any_access());
	else
		p.mr[i] = ibv_reg_mr(ANY(p.pd), addr, len, any_access());
	got.mr += !!p.mr[i];
}

static void op_mw(void)
{
	int i = SLOT(p.mw);
	struct ibv_qp *qp = ANY(p.qp);
	struct ibv_mr *mr = ANY(p.mr);

	if (!p.mw[i]) {
		if (ANY(p.pd))
			p.mw[i] = ibv_alloc_mw(ANY(p.pd), fz_one_in(R, 2) ?
					       IBV_MW_TYPE_1 : IBV_MW_TYPE_2);
		return;
	}
	if (fz_one_in(R, 3)) {
		if (!ibv_dealloc_mw(p.mw[i]))
			p.mw[i] = NULL;
		return;
	}
	if (qp && mr && p.mw[i]->type == IBV_MW_TYPE_1) {
		struct ibv_mw_bind b = {
			.wr_id = fz_u64(R),
			.send_flags = fz_u32(R) & 0xf,
			.bind_info = {
				.mr = mr,
				.addr = any_addr(),
				.length = fz_one_in(R, 2) ? fz_below(R, 4 * PAGE) :
					  fz_u64(R),
				.mw_access_flags = any_access(),
			},
		};

		ibv_bind_mw(qp, p.mw[i], &b);
	}
}

static void op_srq(void)
{
	int i = SLOT(p.srq);
	struct ibv_srq_attr a;

	if (!p.srq[i]) {
		struct ibv_srq_init_attr sa = { 0 };

		if (!ANY(p.pd))
			return;
		sa.attr.max_wr = fz_one_in(R, 3) ? fz_interesting32(R) :
						   1 + fz_below(R, 64);
		sa.attr.max_sge = fz_one_in(R, 3) ? fz_interesting32(R) :
						    1 + fz_below(R, 4);
		sa.attr.srq_limit = fz_interesting32(R);
		p.srq[i] = ibv_create_srq(ANY(p.pd), &sa);
		return;
	}
	switch (fz_below(R, 4)) {
	case 0:
		if (!ibv_destroy_srq(p.srq[i]))
			p.srq[i] = NULL;
		break;
	case 1:
		a.max_wr = fz_interesting32(R);
		a.max_sge = fz_interesting32(R);
		a.srq_limit = fz_interesting32(R);
		ibv_modify_srq(p.srq[i], &a, fz_u32(R) & 3);
		break;
	default:
		ibv_query_srq(p.srq[i], &a);
	}
}

static void op_ah(void)
{
	int i = SLOT(p.ah);
	struct ibv_ah_attr a;

	if (p.ah[i]) {
		if (!ibv_destroy_ah(p.ah[i]))
			p.ah[i] = NULL;
		return;
	}
	if (!ANY(p.pd))
		return;
	random_ah_attr(&a);
	p.ah[i] = ibv_create_ah(ANY(p.pd), &a);
}

static void random_sges(struct ibv_sge *sge, int n)
{
	int i;

	for (i = 0; i < n; i++) {
		sge[i].addr = any_addr();
		sge[i].length = fz_one_in(R, 3) ? fz_interesting32(R) :
						  fz_below(R, 3 * PAGE);
		sge[i].lkey = any_key();
	}
}

static void op_post_send(void)
{
	struct ibv_qp *qp = ANY(p.qp);
	struct ibv_send_wr wr[4], *bad;
	struct ibv_sge sge[4][8];
	uint8_t inl[512];
	int i, n = 1 + fz_below(R, 4);

	if (!qp)
		return;
	memset(wr, 0, sizeof(wr));
	for (i = 0; i < n; i++) {
		wr[i].wr_id = fz_u64(R);
		wr[i].next = i + 1 < n ? &wr[i + 1] : NULL;
		wr[i].opcode = fz_below(R, 16);
		wr[i].send_flags = fz_u32(R) & 0x1f;
		if (wr[i].send_flags & IBV_SEND_INLINE) {
			sge[i][0].addr = (uintptr_t)inl;
			sge[i][0].length = fz_below(R, sizeof(inl));
			sge[i][0].lkey = 0;
			wr[i].num_sge = 1;
		} else {
			wr[i].num_sge = fz_below(R, 9);
			random_sges(sge[i], wr[i].num_sge);
		}
		wr[i].sg_list = sge[i];
		wr[i].imm_data = fz_u32(R);
		/* A UD WR's AH is a pointer the provider follows. */
		switch (qp->qp_type == IBV_QPT_UD ? 2 : fz_below(R, 3)) {
		case 0:
			wr[i].wr.rdma.remote_addr = any_addr();
			wr[i].wr.rdma.rkey = any_key();
			break;
		case 1:
			wr[i].wr.atomic.remote_addr = any_addr() &
				(fz_one_in(R, 4) ? ~0ull : ~7ull);
			wr[i].wr.atomic.rkey = any_key();
			wr[i].wr.atomic.compare_add = fz_u64(R);
			wr[i].wr.atomic.swap = fz_u64(R);
			break;
		default:
			/* The provider dereferences the AH: a real one. */
			wr[i].wr.ud.ah = ANY(p.ah);
			if (!wr[i].wr.ud.ah)
				return;
			wr[i].wr.ud.remote_qpn = ANY(p.qp) && fz_below(R, 4) ?
				ANY(p.qp)->qp_num : fz_u32(R);
			wr[i].wr.ud.remote_qkey = fz_u32(R);
		}
		if (wr[i].opcode == IBV_WR_BIND_MW)
			wr[i].opcode = IBV_WR_SEND;	/* bind_mw: op_mw */
	}
	got.send += !ibv_post_send(qp, wr, &bad);
}

static void op_post_recv(void)
{
	struct ibv_qp *qp = ANY(p.qp);
	struct ibv_srq *srq = ANY(p.srq);
	struct ibv_recv_wr wr = { .wr_id = fz_u64(R) }, *bad;
	struct ibv_sge sge[8];

	wr.num_sge = fz_below(R, 9);
	random_sges(sge, wr.num_sge);
	wr.sg_list = sge;
	if (srq && fz_one_in(R, 2))
		got.recv += !ibv_post_srq_recv(srq, &wr, &bad);
	else if (qp && !qp->srq)
		got.recv += !ibv_post_recv(qp, &wr, &bad);
}

/* Random bytes, or a plausible WQE with hostile fields, in entry @e. */
static void scribble_wqe(void *e, uint32_t size, int send)
{
	if (fz_one_in(R, 2)) {
		fz_bytes(R, e, size);
		return;
	}
	memset(e, 0, size);
	if (send) {
		struct vrdma_send_wqe *w = e;
		int i, n = (size - VRDMA_SEND_WQE_HDR_SIZE) /
			   sizeof(struct vrdma_sge);

		w->wr_id = fz_u64(R);
		w->opcode = fz_one_in(R, 4) ? fz_u32(R) : fz_below(R, 16);
		w->num_sge = fz_one_in(R, 4) ? fz_u32(R) : fz_below(R, n + 2);
		w->flags = fz_u32(R) & (fz_one_in(R, 4) ? 0xffff : 0xf);
		w->inline_len = fz_interesting32(R);
		w->rdma.remote_addr = any_addr();
		w->rdma.rkey = any_key();
		if (fz_one_in(R, 3)) {
			w->ud.ah = fz_interesting32(R);
			w->ud.remote_qpn = fz_u32(R);
		}
		for (i = 0; i < n; i++) {
			w->sge[i].addr = any_addr();
			w->sge[i].length = fz_interesting32(R);
			w->sge[i].lkey = any_key();
		}
	} else {
		struct vrdma_recv_wqe *w = e;
		int i, n = (size - VRDMA_RECV_WQE_HDR_SIZE) /
			   sizeof(struct vrdma_sge);

		w->wr_id = fz_u64(R);
		w->num_sge = fz_one_in(R, 4) ? fz_u32(R) : fz_below(R, n + 2);
		for (i = 0; i < n; i++) {
			w->sge[i].addr = any_addr();
			w->sge[i].length = fz_interesting32(R);
			w->sge[i].lkey = any_key();
		}
	}
}

/* A new producer index: a few entries on, too many, backwards, anything. */
static uint32_t hostile_index(const struct vrdma_uring *r)
{
	switch (fz_below(R, 6)) {
	case 0: case 1: case 2:
		return r->head + 1 + fz_below(R, r->num_entries);
	case 3:
		return r->head + r->num_entries + 1 + fz_below(R, 1000);
	case 4:
		return r->head - 1 - fz_below(R, 4);
	default:
		return fz_u32(R);
	}
}

static void op_ring(void)
{
	struct ibv_qp *qp = ANY(p.qp);
	struct ibv_srq *srq = ANY(p.srq);
	struct ibv_cq *cq = ANY(p.cq);
	struct ibv_send_wr *bsw;
	struct ibv_recv_wr *brw;
	struct vrdma_uring *r = NULL;
	uint32_t i, n, idx;
	int what = fz_below(R, 4), send = 0;

	if (what == 0 && qp && to_vqp(qp)->sq.ring.hdr) {
		r = &to_vqp(qp)->sq.ring;
		send = 1;
	} else if (what == 1 && qp && to_vqp(qp)->rq.ring.hdr) {
		r = &to_vqp(qp)->rq.ring;
	} else if (what == 2 && srq) {
		r = &to_vsrq(srq)->rq.ring;
	} else if (what == 3 && cq) {
		r = &to_vcq(cq)->ring;
		/* The kernel produces here: garbage entries, indices. */
		if (fz_one_in(R, 2))
			fz_bytes(R, vrdma_uring_entry(r, fz_u32(R)),
				 r->entry_size);
		if (fz_one_in(R, 2))
			vrdma_store_release(&r->hdr->cons, hostile_index(r));
		if (fz_one_in(R, 4))
			vrdma_store_release(&r->hdr->prod, fz_u32(R));
		if (fz_one_in(R, 4))
			fz_bytes(R, r->hdr->reserved0,
				 sizeof(r->hdr->reserved0));
		ibv_req_notify_cq(cq, fz_below(R, 2));
		return;
	}
	if (!r || !r->num_entries)
		return;
	n = 1 + fz_below(R, r->num_entries);
	for (i = 0; i < n; i++)
		scribble_wqe(vrdma_uring_entry(r, r->head + i), r->entry_size,
			     send);
	idx = fz_one_in(R, 2) ? r->head + n : hostile_index(r);
	if (fz_one_in(R, 8))
		vrdma_store_release(&r->hdr->cons, fz_u32(R));
	r->head = idx;
	vrdma_uring_publish(r);
	got.ring++;
	if (send)
		ibv_cmd_post_send(qp, NULL, &bsw);
	else if (what == 1)
		ibv_cmd_post_recv(qp, NULL, &brw);
}

/*
 * A second context imported on a dup of the command file, and through it
 * PDs and MRs by handles that are real, stale or random, a CQ on it now
 * and then; every import is undone at once.
 */
static void op_import(void)
{
	struct ibv_pd *pd, *real = ANY(p.pd);
	struct ibv_mr *mr, *rmr = ANY(p.mr);
	struct ibv_cq *cq;
	int fd;

	if (!p.ictx) {
		if (p.import_tried++)
			return;
		fd = dup(p.ctx->cmd_fd);
		if (fd >= 0)
			p.ictx = ibv_import_device(fd);
		return;
	}
	pd = ibv_import_pd(p.ictx, real && !fz_one_in(R, 4) ? real->handle :
			   fz_interesting32(R));
	if (!pd)
		return;
	mr = ibv_import_mr(pd, rmr && !fz_one_in(R, 4) ? rmr->handle :
			   fz_interesting32(R));
	if (mr)
		ibv_unimport_mr(mr);
	if (fz_one_in(R, 4)) {
		cq = ibv_create_cq(p.ictx, 1 + fz_below(R, 64), NULL, NULL, 0);
		if (cq)
			ibv_destroy_cq(cq);
	}
	ibv_unimport_pd(pd);
}

static void op_query(void)
{
	struct ibv_device_attr_ex dx;
	struct ibv_port_attr pa;
	union ibv_gid gid;
	uint16_t pkey;

	switch (fz_below(R, 4)) {
	case 0:
		ibv_query_device_ex(p.ctx, NULL, &dx);
		break;
	case 1:
		ibv_query_port(p.ctx, fz_below(R, 4), &pa);
		break;
	case 2:
		ibv_query_gid(p.ctx, 1, fz_one_in(R, 2) ? fz_u32(R) :
			      fz_below(R, 8), &gid);
		break;
	default:
		ibv_query_pkey(p.ctx, 1, fz_interesting32(R), &pkey);
	}
}

static void child(const char *dev, uint64_t seed, double secs, int ready)
{
	void (*const table[])(void) = {
		op_pd, op_cq, op_cq, op_qp_create, op_qp_create,
		op_qp_modify, op_qp_modify, op_qp_modify, op_mr, op_mr,
		op_mw, op_srq, op_ah, op_post_send, op_post_send,
		op_post_send, op_post_recv, op_post_recv, op_ring, op_ring,
		op_query, op_import,
	};
	struct ibv_port_attr port;
	double end;

	fz_seed(&rng, seed);
	p.ctx = rc_open_by_name(dev);
	p.gid_idx = rc_find_gid(dev);
	if (!p.ctx || p.gid_idx < 0 || ibv_query_port(p.ctx, 1, &port) ||
	    ibv_query_gid(p.ctx, 1, p.gid_idx, &p.gid) ||
	    ibv_query_device(p.ctx, &p.attr))
		_exit(3);
	p.mtu = port.active_mtu;
	p.ch = ibv_create_comp_channel(p.ctx);
	p.mem = mmap(NULL, MEM_PAGES * PAGE, PROT_READ | PROT_WRITE,
		     MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (p.mem == MAP_FAILED)
		_exit(3);
	memset(p.mem, 0x5a, MEM_PAGES * PAGE);
	mprotect(p.mem + 10 * PAGE, PAGE, PROT_NONE);
	mprotect(p.mem + 20 * PAGE, PAGE, PROT_READ);
	/* A base to build on: a PD, a CQ, two QPs. */
	op_pd();
	p.cq[0] = ibv_create_cq(p.ctx, 64, NULL, NULL, 0);

	/*
	 * The round's time starts now: on a debug kernel the setup above can
	 * take longer than a whole round.
	 */
	end = fz_now() + secs;
	if (write(ready, "", 1) != 1)
		_exit(3);
	close(ready);
	while (fz_now() < end) {
		table[fz_below(R, sizeof(table) / sizeof(table[0]))]();
		ops++;
		if (fz_one_in(R, 64))
			usleep(fz_below(R, 2000));
	}
	printf("#   %lu ops: %lu QPs, %lu MRs, %lu connections, %lu sends and %lu receives posted, %lu rings scribbled\n",
	       ops, got.qp, got.mr, got.rts, got.send, got.recv, got.ring);
	fflush(stdout);
	/* Leave everything to the kernel's cleanup, or tidy up first. */
	if (fz_one_in(R, 2))
		_exit(0);
	ibv_close_device(p.ctx);
	_exit(0);
}

/*
 * Run one round with @seed for about @secs once its child has set up; SIGKILL
 * it at a random moment of that time if @kill_it.  Returns 0 if it ended (by
 * itself or the kill) having set up, 2 if it ended before (killed while
 * stuck in its setup), 1 if it crashed in user space, -1 if it hung.
 */
static int round_run(const char *dev, uint64_t seed, double secs, int kill_it,
		     int slow)
{
	double deadline = fz_now() + 60.0 * slow;
	int st, killed = 0, ready = 0, fds[2];
	char c;
	pid_t pid;

	fflush(stdout);
	if (pipe(fds))
		return 1;
	pid = fork();
	if (!pid) {
		close(fds[0]);
		child(dev, seed, secs, fds[1]);
	}
	close(fds[1]);
	fcntl(fds[0], F_SETFL, O_NONBLOCK);
	for (;;) {
		pid_t w = waitpid(pid, &st, WNOHANG);

		if (w == pid)
			break;
		if (!ready && read(fds[0], &c, 1) == 1) {
			/* Set up: the round's time (and the kill's) starts. */
			ready = 1;
			deadline = fz_now() +
				   (kill_it ? secs * (kill_it % 100) / 100.0 :
				    secs + 60.0 * slow);
		}
		if (fz_now() > deadline && !killed) {
			kill(pid, SIGKILL);
			killed = 1;
			deadline = fz_now() + 60.0 * slow;
		} else if (fz_now() > deadline) {
			char cmd[128];

			printf("# round seed %#llx: the child does not end after SIGKILL: stuck in the kernel\n",
			       (unsigned long long)seed);
			snprintf(cmd, sizeof(cmd),
				 "cat /proc/%d/stack | sed 's/^/#   /'", pid);
			fz_sh(cmd);
			close(fds[0]);
			return -1;
		}
		usleep(20 * 1000);
	}
	ready |= read(fds[0], &c, 1) == 1;
	close(fds[0]);
	if (WIFSIGNALED(st) && WTERMSIG(st) != SIGKILL) {
		printf("# round seed %#llx: the child died of signal %d\n",
		       (unsigned long long)seed, WTERMSIG(st));
		return 1;
	}
	if (WIFEXITED(st) && WEXITSTATUS(st)) {
		printf("# round seed %#llx: the child could not start (%d)\n",
		       (unsigned long long)seed, WEXITSTATUS(st));
		return 1;
	}
	return ready ? 0 : 2;
}

/*
 * One runner: rounds one after the other until @end, from @seed.  Two
 * runners at once (VRDMA_FUZZ_JOBS) race each other in the kernel.
 * Returns the exit status: bit 0 a crash, bit 1 a hang, bit 2 no round got
 * through its setup (so none fuzzed anything).
 */
static int runner(const char *dev, uint64_t seed, double end, int slow,
		  int job)
{
	struct fz_rng top;
	int rounds = 0, crashes = 0, ran = 0;

	fz_seed(&top, seed);
	while (fz_now() < end) {
		uint64_t rs = fz_u64(&top);
		double secs = 0.5 + fz_below(&top, 4000) / 1000.0;
		int kill_it = fz_one_in(&top, 3) ?
			      100 + 5 + fz_below(&top, 95) : 0;
		int ret;

		printf("# runner %d round %d seed %#llx%s\n", job, rounds,
		       (unsigned long long)rs, kill_it ? " (SIGKILL)" : "");
		ret = round_run(dev, rs, secs, kill_it, slow);
		crashes += ret == 1;
		if (ret < 0)
			return 2 | !!crashes;
		ran += !ret;
		rounds++;
	}
	printf("# runner %d: %d rounds, %d of them set up and fuzzing\n", job,
	       rounds, ran);
	return (crashes ? 1 : 0) | (ran ? 0 : 4);
}

int main(int argc, char **argv)
{
	const char *slow_env = getenv("VRDMA_TEST_SLOW");
	const char *jobs_env = getenv("VRDMA_FUZZ_JOBS");
	int slow = slow_env ? atoi(slow_env) : 1;
	int jobs = jobs_env ? atoi(jobs_env) : 2;
	int crashes = 0, hangs = 0, idle = 0, j, st;
	const char *dev, *dev2;
	pid_t live, pid[8];
	uint64_t seed;
	double end;

	setvbuf(stdout, NULL, _IOLBF, 0);
	if (argc < 5) {
		fprintf(stderr,
			"usage: %s DEV DEV2 SECONDS SEED [ROUND_SEED]\n",
			argv[0]);
		return 2;
	}
	dev = argv[1];
	dev2 = argv[2];
	end = fz_now() + atof(argv[3]);
	seed = strtoull(argv[4], NULL, 0);
	if (slow < 1)
		slow = 1;
	if (jobs < 1 || jobs > 8)
		jobs = 2;
	printf("TAP version 13\n# fuzz_verbs %s %s %s %#llx, %d runners\n",
	       dev, dev2, argv[3], (unsigned long long)seed, jobs);
	live = fz_live_start(dev, dev2);

	if (argc > 5) {
		uint64_t rs = strtoull(argv[5], NULL, 0);

		printf("# replaying round seed %#llx\n", (unsigned long long)rs);
		j = round_run(dev, rs, atof(argv[3]), 0, slow);
		crashes = j == 1 || j < 0;
		idle = j == 2;
	} else {
		/* Runner j's rounds: seed + j; runner 0's are SEED's. */
		for (j = 0; j < jobs; j++) {
			fflush(stdout);
			pid[j] = fork();
			if (!pid[j])
				_exit(runner(dev, seed + j, end, slow, j));
		}
		for (j = 0; j < jobs; j++) {
			if (waitpid(pid[j], &st, 0) != pid[j] ||
			    !WIFEXITED(st)) {
				crashes++;
				continue;
			}
			crashes += WEXITSTATUS(st) & 1;
			hangs += !!(WEXITSTATUS(st) & 2);
			idle += !!(WEXITSTATUS(st) & 4);
		}
	}
	fz_result(!hangs, "no round stuck in the kernel");
	fz_result(!crashes, "no round crashed or failed to start");
	fz_result(!idle, "every runner had rounds that got to fuzzing");
	fz_result(fz_live_stop_wait(live), "the live QP pair kept working");
	printf("1..%d\n", fz_tap_n);
	return fz_tap_failed ? 1 : 0;
}
