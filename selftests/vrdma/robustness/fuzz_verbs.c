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
 * modify and resize, query, post, destroy; tag-matching ones and their
 * list operations), AHs, imports (a context on a
 * dup of the command file, PDs and MRs by real or random handles), post_send
 * and post_recv with random work requests and keys, and writes random and adversarial bytes into the
 * SQ, RQ, SRQ and CQ rings and their indices, then rings the doorbell.
 *
 * XRC: XRC domains (opened without a file, through one of a few files
 * that both runners' rounds open, so that they share the domain, with
 * O_EXCL, without O_CREAT, through fds that are no file, with garbage;
 * closed in use or not), XRC SRQs in the SRQ pool (with and without
 * domain and CQ, of other types; destroyed while target QPs use them;
 * resized, posted to and scribbled on as the basic ones), XRC target QPs
 * (in a domain, without, with what a target has no use for) and
 * initiators in the QP pool, modified at random and connected to each
 * other, ibv_open_qp by real, the other runner's, near and random
 * numbers, posts to initiators naming the pool's SRQs, the other runner's
 * (a board in shared memory tells the rounds each other's target QP and
 * SRQ numbers), near and random ones, the SRQ number field of WQEs in the
 * rings, the target QPs' doorbells (no ring) straight to the kernel, and
 * XRC messages sent as an application would; and raw uverbs commands
 * (CREATE_XSRQ, OPEN_QP, CREATE_QP of XRC types, OPEN_XRCD) with real,
 * stale and random handles, odd driver data and responses the kernel
 * cannot write.
 *
 * On-demand paging: ODP MRs in the MR pool, explicit over odd ranges (the
 * pool's ODP memory with unmapped holes, read-only and inaccessible pages,
 * unmapped and random addresses), implicit (NULL, SIZE_MAX) and near
 * misses of it, random rights; rereg_mr switching MRs between ODP and
 * pinned; advise_mr with random and real advice, flags, PDs and SGEs
 * (ODP, pinned, DM, dead and random keys, ranges inside, across the end,
 * huge); storms on the ODP memory (MADV_DONTNEED, munmap and mmap again,
 * mprotect, mremap away and back, CPU writes, fork with the child writing)
 * while the pool's QPs have SENDs, WRITEs, READs, atomics and receives on
 * it posted.  Device memory: alloc_dm with random lengths, alignments and
 * comp_mask, memcpy to and from it at random offsets, DM MRs with random
 * offsets, lengths and rights (ZERO_BASED or not) in the MR pool, used by
 * WRs, free while MRs of it exist (the kernel must refuse), import_dm by
 * the handles of DMs, of other objects and random ones, and the driver's
 * DM_QUERY method by raw RDMA_VERBS_IOCTL with garbage (handles of other
 * types, attributes missing, repeated or unknown, outputs short, long or
 * unwritable, wrong driver_id, object, method, header).  And a checked
 * flow (op_odp_flow): an RC pair of its own moving data between ODP
 * memory with a hole, an ODP buffer and a DM, with keys that grant the
 * operation and keys that do not, while a thread storms the ODP memory
 * (and forks: the child's copy must not change); every byte is checked
 * afterwards.
 *
 * dma-bufs: each round exports a few vgem buffers (one in three read-only)
 * and keeps their CPU mappings.  dma-buf MRs in the MR pool (so in every
 * WR, bind and scribbled ring) over them at random offsets, lengths, IOVAs
 * and rights, and over fds that are closed, no dma-buf or random; WRs
 * (SEND, WRITE, READ, atomics, receives) with them as local and remote
 * keys, now and then deregistering one while the WR may run; the buffers'
 * fds closed and mappings unmapped while MRs on them live; raw REREG_MR
 * (write() ABI) of them with random flags, PDs and rights (a new
 * translation must be refused with EOPNOTSUPP, write rights to a read-only
 * buffer with EACCES); UVERBS_METHOD_REG_DMABUF_MR by raw RDMA_VERBS_IOCTL
 * with garbage (attributes missing, repeated or unknown, odd lengths and
 * flags, keys nobody may write, PD handles of other objects, random fds,
 * ranges out of the buffer, a wrong header).  Oracles: the kernel takes no
 * registration out of the buffer's range, on no dma-buf, or with rights
 * that write into a read-only one; no byte of a buffer changes outside
 * every MR that may write it (checked through the CPU mapping: a read-only
 * buffer never changes); and a checked flow (op_xb_flow, an RC pair of its
 * own) WRITEs, READs, SENDs (received into the MR) and does atomics on a
 * fresh MR over a random range of a buffer, inside it and across its end:
 * a success is granted and places exactly its bytes, a refusal changes
 * nothing, no WRITE into a read-only buffer succeeds.  Without vgem (debug kernels) all that is skipped.
 *
 * Thread domains: alloc_td (comp_mask 0 must work, another must not) and
 * dealloc_td (EBUSY while a parent domain has the TD); parent domains on
 * the pool's PDs with its TDs, none, or bogus ones (pointers to other
 * objects, into memory, anything: EINVAL, never followed), on a parent
 * domain, with unknown comp_mask bits; QPs of the pool made on them and
 * CQs made SINGLE_THREADED or on them (create_cq_ex, polled by
 * start_poll/next_poll too), which the pool's traffic, rings and destroys
 * use like any other; each must skip its ring lock exactly when made so.
 * Their contract is one thread at a time: the round's only other thread
 * (flow_storm) touches memory, never a verbs object.
 *
 * The counts of all rounds, and the failed checks, go on the board (shared
 * memory, so a SIGKILL loses none); main prints them on a "reached:" line,
 * which fuzz.sh requires to hold no 0 (the dma-buf counts are left off
 * without vgem).
 *
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
#include <pthread.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <rdma/ib_user_ioctl_cmds.h>
#include <rdma/ib_user_ioctl_verbs.h>
#include <rdma/rdma_user_ioctl.h>
#include <linux/dma-buf.h>

#include "fuzz_lib.h"
/* The provider's own header: the rings are written behind its back. */
#include "vrdma.h"
#include <rdma/ib_user_verbs.h>

#define POOL		6
#define MEM_PAGES	256
#define PAGE		4096
#define BOARD		16
#define XRCD_FILES	3	/* the files XRC domains are opened with */

/* What a slot of the MR pool holds (p.mr_kind). */
enum { MK_PINNED, MK_ODP, MK_IMPLICIT, MK_DM, MK_DMABUF };

/*
 * The ODP and DM totals of every round, in shared memory (the board), so
 * that a round killed mid-way loses none: main prints them as "reached:"
 * for fuzz.sh, which fails the run if one stays 0.
 */
enum {
	T_ODP_MR, T_ODP_IMPLICIT, T_ODP_HOLEY, T_ADVISE_OK, T_ADVISE_REFUSED,
	T_REREG_ODP, T_STORM, T_FORK, T_ODP_POST, T_FLOW_OK, T_FLOW_ERR,
	T_FLOW_HOLE, T_FLOW_DM, T_DM_ALLOC, T_DM_FREE, T_DM_BUSY, T_DM_COPY,
	T_DM_MR, T_DM_IMPORT, T_DM_QUERY, T_DM_QUERY_REFUSED,
	/* dma-bufs (vgem's): left off the reached line without vgem */
	T_XB_MR, T_XB_REFUSED, T_XB_POST, T_XB_DROP, T_XB_CHECK,
	T_XB_FLOW_OK, T_XB_FLOW_REFUSED, T_XB_RAW_OK, T_XB_RAW_REFUSED,
	T_XB_REREG, T_XB_REREG_REFUSED,
	T_TD_ALLOC, T_TD_BUSY, T_TD_PARENT, T_TD_BOGUS, T_TD_QP, T_TD_CQ,
	T_TD_POST, T_TD_POLL, T_NUM
};

#define T_XB_FIRST	T_XB_MR
#define T_XB_LAST	T_XB_REREG_REFUSED

static const char *const t_name[T_NUM] = {
	"odp_mr", "odp_implicit", "odp_holey", "advise_ok", "advise_refused",
	"rereg_odp_pinned", "odp_storm", "odp_fork", "odp_posts",
	"flow_checked_ok", "flow_error_cqes", "flow_hole_refused",
	"flow_dm_ok", "dm_alloc", "dm_free", "dm_free_busy", "dm_memcpy",
	"dm_mr", "dm_import", "dm_query_ok", "dm_query_refused",
	"dmabuf_mr", "dmabuf_mr_refused", "dmabuf_posts",
	"dmabuf_closed_unmapped_in_use", "dmabuf_checked", "dmabuf_flow_ok",
	"dmabuf_flow_refused", "dmabuf_raw_ok", "dmabuf_raw_refused",
	"dmabuf_rereg_ok", "dmabuf_rereg_refused",
	"td_alloc", "td_dealloc_busy", "td_parent", "td_bogus_refused",
	"td_qp", "td_cq", "td_posts", "td_polls",
};

/*
 * The runners' bulletin board, shared by every process of the run (mapped
 * before the runners fork): the XRC target QP numbers and XRC SRQ numbers
 * the rounds made, so that a round of one runner opens the other's target
 * QPs in an XRC domain both opened through one file, and names the other's
 * SRQs in its initiators' work requests; and the ODP and DM totals and
 * failed checks of every round.
 */
struct board {
	volatile uint32_t tgt_qpn[BOARD];
	volatile uint32_t srqn[BOARD];
	unsigned long tot[T_NUM];
	unsigned long bad;
	unsigned long bad_srq;	/* of them: granted SENDs by the SRQ pair */
};

static struct board *board;
static char xrcd_dir[64];
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
	struct ibv_srq *srq[POOL];	/* basic and XRC */
	struct ibv_ah *ah[POOL];
	struct ibv_xrcd *xrcd[POOL];
	uint8_t *mem;		/* MEM_PAGES pages, some not writable */
	uint8_t *odp;		/* ODP_PAGES pages, some unmapped */
	int mr_kind[POOL];	/* MK_*: what p.mr[i] is */
	int mr_dm[POOL];	/* a DM MR's DM: its slot in p.dm, or -1 */
	struct ibv_dm *dm[POOL];
	size_t dm_len[POOL];
	uint64_t max_dm;	/* max_dm_size */
	/* A dma-buf MR's buffer (slot of xb[] and its generation), ... */
	int mr_xb[POOL];
	unsigned int mr_xgen[POOL];
	uint64_t mr_xoff[POOL];		/* ... first byte in it, IOVA, */
	uint64_t mr_xiova[POOL];
	int mr_xacc[POOL];		/* every right it ever had */
	struct ibv_td *td[POOL];
	struct ibv_pd *ppd[POOL];	/* parent domains, of p.pd's PDs */
	struct ibv_td *ppd_td[POOL];	/* ... and their TDs (or NULL) */
	struct ibv_pd *cq_ppd[POOL];	/* the parent domain of a CQ */
	struct ibv_cq_ex *cqx[POOL];	/* a CQ made by create_cq_ex */
	uint32_t dead[8];	/* keys of MRs deregistered */
	int gid_idx;
	union ibv_gid gid;
	struct ibv_device_attr attr;
	enum ibv_mtu mtu;
};

static struct pools p;
static struct fz_rng rng;
static uint64_t round_seed;
static unsigned long ops;
/* What got through, to see that the rounds reach the interesting states. */
static struct {
	unsigned long qp, mr, rts, send, recv, ring;
	unsigned long xrcd, xrcd_file, xsrq, xtgt, xini, xopen, xsend, xrts;
	unsigned long raw, raw_ok, xflow, xrecv_ok, xsend_ok;
	unsigned long xstatus[32];	/* the XRC QPs' CQEs by status */
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

/*
 * An XRC SRQ number: of an XRC SRQ of the pool, of the board (maybe the
 * other runner's, maybe gone), near those, or anything, beyond 24 bits too.
 */
static uint32_t any_srqn(void)
{
	struct ibv_srq *srq = ANY(p.srq);
	uint32_t n;

	switch (fz_below(R, 6)) {
	case 0: case 1:
		if (srq && !ibv_get_srq_num(srq, &n))
			return n;
		/* fall through */
	case 2:
		n = board->srqn[fz_below(R, BOARD)];
		if (n)
			return n;
		/* fall through */
	case 3:
		return board->srqn[0] + fz_below(R, 32) - 16;
	default:
		return fz_interesting32(R);
	}
}

/* An XRC target QP number: the pool's, the board's, near them, anything. */
static uint32_t any_tgt_qpn(void)
{
	struct ibv_qp *qp = ANY(p.qp);
	uint32_t n;

	switch (fz_below(R, 6)) {
	case 0: case 1:
		if (qp && qp->qp_type == IBV_QPT_XRC_RECV)
			return qp->qp_num;
		/* fall through */
	case 2:
		n = board->tgt_qpn[fz_below(R, BOARD)];
		if (n)
			return n;
		/* fall through */
	case 3:
		return (qp ? qp->qp_num : 0) + fz_below(R, 32) - 16;
	default:
		return fz_interesting32(R);
	}
}

/* Count the successes of XRC QPs among @n completions. */
static void count_xrc_wc(const struct ibv_wc *wc, int n)
{
	int i, k;

	for (i = 0; i < n; i++) {
		for (k = 0; k < POOL; k++) {
			if (!p.qp[k] || p.qp[k]->qp_num != wc[i].qp_num ||
			    (p.qp[k]->qp_type != IBV_QPT_XRC_RECV &&
			     p.qp[k]->qp_type != IBV_QPT_XRC_SEND))
				continue;
			got.xstatus[wc[i].status & 31]++;
			if (wc[i].status != IBV_WC_SUCCESS)
				continue;
			got.xrecv_ok += p.qp[k]->qp_type == IBV_QPT_XRC_RECV;
			got.xsend_ok += p.qp[k]->qp_type == IBV_QPT_XRC_SEND;
		}
	}
}

/* ---- operations ------------------------------------------------------ */

static void tot(int t);
static void odp_bad(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void cq_ex_create(int i, int cqe);
static void cq_ex_poll(struct ibv_cq_ex *cqx);
static struct ibv_pd *qp_pd(void);
static void td_count_qp(struct ibv_qp *qp, struct ibv_pd *pd);
static void td_count_post(struct ibv_qp *qp);
static void td_qp_init(struct ibv_qp *qp);

/*
 * Poll the pool's CQ @i, if there is one: ibv_poll_cq, or start_poll on an
 * extended one half the time; a single-threaded one is counted.
 */
static void cq_poll(int i)
{
	struct ibv_wc wc[8];

	if (!p.cq[i])
		return;
	if (to_vcq(p.cq[i])->lock.single)
		tot(T_TD_POLL);
	if (p.cqx[i] && fz_one_in(R, 2))
		cq_ex_poll(p.cqx[i]);
	else
		count_xrc_wc(wc, ibv_poll_cq(p.cq[i], 1 + fz_below(R, 8), wc));
}

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
		if (p.cq[i]) {
			ibv_resize_cq(p.cq[i], cqe);
		} else if (fz_one_in(R, 3)) {
			cq_ex_create(i, cqe);
		} else {
			p.cq[i] = ibv_create_cq(p.ctx, cqe, NULL,
						fz_one_in(R, 2) ? p.ch : NULL,
						fz_one_in(R, 4) ?
						(int)fz_u32(R) : 0);
			p.cq_ppd[i] = NULL;
			p.cqx[i] = NULL;
		}
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
		cq_poll(i);
	}
}

static void op_qp_create(void)
{
	static const enum ibv_qp_type types[] = {
		IBV_QPT_RC, IBV_QPT_RC, IBV_QPT_UC, IBV_QPT_UD, IBV_QPT_RAW_PACKET,
		IBV_QPT_XRC_SEND, IBV_QPT_XRC_SEND, IBV_QPT_DRIVER,
	};
	struct ibv_qp_init_attr_ex qa = { 0 };
	int i = SLOT(p.qp);

	if (p.qp[i]) {
		if (!ibv_destroy_qp(p.qp[i]))
			p.qp[i] = NULL;
		return;
	}
	if (fz_one_in(R, 5)) {
		/*
		 * An XRC target QP: in an XRC domain, no PD, CQ or SRQ (the
		 * provider drops what is given); now and then without the
		 * domain, or with caps that mean nothing to it.
		 */
		qa.qp_type = IBV_QPT_XRC_RECV;
		qa.comp_mask = IBV_QP_INIT_ATTR_XRCD;
		qa.xrcd = ANY(p.xrcd);
		if (!qa.xrcd || fz_one_in(R, 8)) {
			qa.comp_mask = IBV_QP_INIT_ATTR_PD;
			qa.pd = ANY(p.pd);
			if (!qa.pd)
				return;
		}
		if (fz_one_in(R, 4))
			qa.comp_mask |= IBV_QP_INIT_ATTR_PD,
			qa.pd = ANY(p.pd);
		if (fz_one_in(R, 3)) {
			qa.cap.max_send_wr = fz_interesting32(R);
			qa.cap.max_recv_wr = fz_interesting32(R);
			qa.cap.max_inline_data = fz_interesting32(R);
		}
		qa.send_cq = ANY(p.cq);
		qa.srq = ANY(p.srq);
		p.qp[i] = ibv_create_qp_ex(p.ctx, &qa);
		if (p.qp[i]) {
			board->tgt_qpn[fz_below(R, BOARD)] = p.qp[i]->qp_num;
			got.xtgt++;
		}
		return;
	}
	qa.send_cq = ANY(p.cq);
	qa.recv_cq = fz_one_in(R, 2) ? qa.send_cq : ANY(p.cq);
	qa.pd = qp_pd();
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
	got.xini += p.qp[i] && qa.qp_type == IBV_QPT_XRC_SEND;
	td_count_qp(p.qp[i], qa.pd);
}

/*
 * XRC domains: opened without a file, through a file every runner opens
 * (so that the rounds of both share the domain, its SRQs and target QPs),
 * with O_EXCL, without O_CREAT, through an fd that is no file for it, with
 * garbage; closed, in use or not.
 */
static void op_xrcd(void)
{
	struct ibv_xrcd_init_attr a = {
		.comp_mask = IBV_XRCD_INIT_ATTR_FD | IBV_XRCD_INIT_ATTR_OFLAGS,
		.fd = -1, .oflags = O_CREAT,
	};
	int i = SLOT(p.xrcd), fd = -1;
	char path[96];

	if (p.xrcd[i]) {
		if (!ibv_close_xrcd(p.xrcd[i]))	/* EBUSY while used */
			p.xrcd[i] = NULL;
		return;
	}
	switch (fz_below(R, 8)) {
	case 0: case 1: case 2:
		break;
	case 3: case 4: case 5:
		snprintf(path, sizeof(path), "%s/xrcd%u", xrcd_dir,
			 fz_below(R, XRCD_FILES));
		fd = open(path, O_RDWR | O_CREAT, 0600);
		a.fd = fd;
		if (fz_one_in(R, 4))
			a.oflags = fz_one_in(R, 2) ? O_CREAT | O_EXCL : 0;
		break;
	case 6:
		a.fd = fz_one_in(R, 2) ? p.ctx->cmd_fd : fz_interesting32(R);
		a.oflags = fz_one_in(R, 2) ? O_CREAT : fz_u32(R);
		break;
	default:
		a.comp_mask = fz_u32(R) & 7;
		a.fd = fz_interesting32(R);
		a.oflags = fz_u32(R);
	}
	p.xrcd[i] = ibv_open_xrcd(p.ctx, &a);
	if (fd >= 0)
		close(fd);	/* the domain lives on without it */
	got.xrcd += !!p.xrcd[i];
	got.xrcd_file += p.xrcd[i] && fd >= 0;
}

/*
 * XRC SRQs, in the SRQ pool (so that op_srq, op_post_recv and op_ring
 * resize, post to and scribble on them as on basic ones): in a domain of
 * the pool, with a CQ; without the domain or the CQ, of a type that is no
 * SRQ's, with hostile sizes; destroyed whether a target QP uses them or
 * not.  Their numbers go on the board.
 */
static void op_xsrq(void)
{
	struct ibv_srq_init_attr_ex sa = { 0 };
	int i = SLOT(p.srq);
	uint32_t n;

	if (p.srq[i]) {
		if (!ibv_destroy_srq(p.srq[i]))
			p.srq[i] = NULL;
		return;
	}
	sa.attr.max_wr = fz_one_in(R, 3) ? fz_interesting32(R) :
					   1 + fz_below(R, 64);
	sa.attr.max_sge = fz_one_in(R, 3) ? fz_interesting32(R) :
					    1 + fz_below(R, 4);
	sa.attr.srq_limit = fz_interesting32(R);
	sa.comp_mask = IBV_SRQ_INIT_ATTR_TYPE | IBV_SRQ_INIT_ATTR_PD |
		       IBV_SRQ_INIT_ATTR_XRCD | IBV_SRQ_INIT_ATTR_CQ;
	sa.srq_type = IBV_SRQT_XRC;
	sa.pd = ANY(p.pd);
	sa.xrcd = ANY(p.xrcd);
	sa.cq = ANY(p.cq);
	if (!sa.pd)
		return;
	switch (fz_below(R, 10)) {
	case 0:
		sa.comp_mask &= ~IBV_SRQ_INIT_ATTR_XRCD;
		break;
	case 1:
		sa.comp_mask &= ~IBV_SRQ_INIT_ATTR_CQ;
		break;
	case 2:
		sa.srq_type = fz_one_in(R, 2) ? IBV_SRQT_TM : fz_u32(R);
		sa.comp_mask |= IBV_SRQ_INIT_ATTR_TM;
		sa.tm_cap.max_num_tags = fz_interesting32(R);
		sa.tm_cap.max_ops = fz_interesting32(R);
		break;
	case 3:
		sa.comp_mask |= fz_u32(R);
		break;
	case 4:
		sa.srq_type = IBV_SRQT_BASIC;	/* with a domain and a CQ */
		break;
	}
	p.srq[i] = ibv_create_srq_ex(p.ctx, &sa);
	if (p.srq[i] && !ibv_get_srq_num(p.srq[i], &n)) {
		board->srqn[fz_below(R, BOARD)] = n;
		got.xsrq++;
	}
}

/*
 * ibv_open_qp(): a handle on an XRC target QP by its number -- the pool's,
 * the other runner's (on the board: theirs if both opened the domain
 * through one file), a near or a random one -- in a domain of the pool;
 * now and then asking for another type.  The handle joins the QP pool.
 */
static void op_open_qp(void)
{
	struct ibv_qp_open_attr a = {
		.comp_mask = IBV_QP_OPEN_ATTR_NUM | IBV_QP_OPEN_ATTR_XRCD |
			     IBV_QP_OPEN_ATTR_TYPE,
		.qp_type = IBV_QPT_XRC_RECV,
	};
	int i = SLOT(p.qp);

	a.xrcd = ANY(p.xrcd);
	if (p.qp[i] || !a.xrcd)
		return;
	a.qp_num = any_tgt_qpn();
	if (fz_one_in(R, 8))
		a.qp_type = fz_below(R, 12);
	if (fz_one_in(R, 8))
		a.comp_mask |= IBV_QP_OPEN_ATTR_CONTEXT;
	p.qp[i] = ibv_open_qp(p.ctx, &a);
	got.xopen += !!p.qp[i];
}

static void random_sges(struct ibv_sge *sge, int n);

/*
 * What op_xrc_flow() keeps: a PD, an MR over memory of its own and two
 * CQs that no other operation touches (so that its messages can succeed
 * and be seen to), its XRC domain (the pool's, maybe shared with the other
 * runner, or its own), and the initiator, target and SRQ it made, which
 * live in the pools: any operation may modify, scribble on or destroy
 * them, and the flow makes new ones when they are gone.
 */
#define FLOW_LEN	(64 << 10)
static struct {
	struct ibv_pd *pd;
	struct ibv_mr *mr;
	uint8_t *mem;
	struct ibv_cq *scq, *rcq;
	struct ibv_xrcd *xrcd;
	int own_xrcd;		/* opened by the flow, not in the pool */
	struct ibv_qp *ini, *tgt;
	struct ibv_srq *srq;
	uint32_t ini_qpn, tgt_qpn, srqn;
	int connected;
} fl;

/* Whether @obj is still in @pool (the flow's object may be gone). */
static int in_pool(void **pool, void *obj)
{
	int i;

	for (i = 0; obj && i < POOL; i++)
		if (pool[i] == obj)
			return 1;
	return 0;
}

/* A free slot of @pool, or -1. */
static int free_slot(void **pool)
{
	int i, s = fz_below(R, POOL);

	for (i = 0; i < POOL; i++)
		if (!pool[(s + i) % POOL])
			return (s + i) % POOL;
	return -1;
}

/* The flow's objects, made again where they are gone. */
static int flow_setup(void)
{
	int i;

	if (!fl.pd) {
		fl.mem = mmap(NULL, FLOW_LEN, PROT_READ | PROT_WRITE,
			      MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
		fl.pd = ibv_alloc_pd(p.ctx);
		fl.scq = ibv_create_cq(p.ctx, 256, NULL, NULL, 0);
		fl.rcq = ibv_create_cq(p.ctx, 256, NULL, NULL, 0);
		if (fl.mem == MAP_FAILED || !fl.pd || !fl.scq || !fl.rcq)
			return -1;
		fl.mr = ibv_reg_mr(fl.pd, fl.mem, FLOW_LEN,
				   IBV_ACCESS_LOCAL_WRITE |
				   IBV_ACCESS_REMOTE_WRITE |
				   IBV_ACCESS_REMOTE_READ |
				   IBV_ACCESS_REMOTE_ATOMIC);
		if (!fl.mr)
			return -1;
	}
	/*
	 * The pool's domain (maybe the other runner's too), until op_xrcd
	 * closes it (once nothing made through it is left), or one of its
	 * own, now and then replaced.
	 */
	if (!fl.xrcd || (!fl.own_xrcd && !in_pool((void **)p.xrcd, fl.xrcd)) ||
	    (fl.own_xrcd && fz_one_in(R, 64))) {
		fl.xrcd = ANY(p.xrcd);
		fl.own_xrcd = !fl.xrcd || fz_one_in(R, 4);
		if (fl.own_xrcd)
			fl.xrcd = ibv_open_xrcd(p.ctx,
				&(struct ibv_xrcd_init_attr){
				.comp_mask = IBV_XRCD_INIT_ATTR_FD |
					     IBV_XRCD_INIT_ATTR_OFLAGS,
				.fd = -1, .oflags = O_CREAT,
			});
		if (!fl.xrcd)
			return -1;
		fl.tgt = NULL;
		fl.srq = NULL;
	}
	if (!in_pool((void **)p.srq, fl.srq))
		fl.srq = NULL;
	if (!fl.srq && (i = free_slot((void **)p.srq)) >= 0) {
		struct ibv_srq_init_attr_ex sa = {
			.attr = { .max_wr = 64, .max_sge = 2 },
			.comp_mask = IBV_SRQ_INIT_ATTR_TYPE |
				     IBV_SRQ_INIT_ATTR_PD |
				     IBV_SRQ_INIT_ATTR_XRCD |
				     IBV_SRQ_INIT_ATTR_CQ,
			.srq_type = IBV_SRQT_XRC, .pd = fl.pd,
			.xrcd = fl.xrcd, .cq = fl.rcq,
		};

		fl.srq = p.srq[i] = ibv_create_srq_ex(p.ctx, &sa);
		if (fl.srq && !ibv_get_srq_num(fl.srq, &fl.srqn))
			board->srqn[fz_below(R, BOARD)] = fl.srqn;
	}
	/* Gone, or its memory another QP's now. */
	if (!in_pool((void **)p.qp, fl.tgt) || fl.tgt->qp_num != fl.tgt_qpn)
		fl.tgt = NULL;
	if (!in_pool((void **)p.qp, fl.ini) || fl.ini->qp_num != fl.ini_qpn)
		fl.ini = NULL;
	if (!fl.tgt && (i = free_slot((void **)p.qp)) >= 0) {
		struct ibv_qp_init_attr_ex qa = {
			.qp_type = IBV_QPT_XRC_RECV,
			.comp_mask = IBV_QP_INIT_ATTR_XRCD, .xrcd = fl.xrcd,
		};

		fl.tgt = p.qp[i] = ibv_create_qp_ex(p.ctx, &qa);
		fl.connected = 0;
		if (fl.tgt) {
			fl.tgt_qpn = fl.tgt->qp_num;
			board->tgt_qpn[fz_below(R, BOARD)] = fl.tgt_qpn;
		}
	}
	if (!fl.ini && (i = free_slot((void **)p.qp)) >= 0) {
		struct ibv_qp_init_attr_ex qa = {
			.qp_type = IBV_QPT_XRC_SEND,
			.comp_mask = IBV_QP_INIT_ATTR_PD, .pd = fl.pd,
			.send_cq = fl.scq,
			.cap = { .max_send_wr = 32, .max_send_sge = 2,
				 .max_inline_data = 64 },
		};

		fl.ini = p.qp[i] = ibv_create_qp_ex(p.ctx, &qa);
		fl.connected = 0;
		if (fl.ini)
			fl.ini_qpn = fl.ini->qp_num;
	}
	return fl.srq && fl.tgt && fl.ini ? 0 : -1;
}

/* An SGE of up to @max bytes of the flow's memory, or a random one. */
static void flow_sge(struct ibv_sge *sge, uint32_t max, int good)
{
	uint32_t off = fz_below(R, FLOW_LEN / 2);

	if (!good) {
		random_sges(sge, 1);
		return;
	}
	sge->addr = (uintptr_t)fl.mem + off;
	sge->length = fz_below(R, max);
	sge->lkey = fl.mr->lkey;
}

/*
 * XRC messages as an application sends them, so that data moves through
 * the paths the random operations break meanwhile: the flow's initiator
 * and target (in the pools) connected to each other with one PSN on both
 * sides (again, from RESET, whenever either is not in its state or no
 * longer the other's); receives posted to its XRC SRQ (in the pool); a
 * SEND, WRITE, READ or ATOMIC on the initiator naming that SRQ, between
 * buffers of its own MR.  One in four names any SRQ number or uses any
 * key and address instead.  Its CQs are polled.
 */
static void op_xrc_flow(void)
{
	struct ibv_qp_attr a = { .qp_state = IBV_QPS_RESET };
	struct ibv_sge sge[2];
	struct ibv_recv_wr rwr = { .sg_list = sge, .num_sge = 1 }, *brw;
	struct ibv_send_wr wr = { .sg_list = sge, .num_sge = 1,
				  .send_flags = IBV_SEND_SIGNALED }, *bsw;
	struct ibv_wc wc[16];
	uint32_t psn = fz_u32(R) & 0xffffff;
	int i, n, good = fz_below(R, 4), st;

	if (flow_setup())
		return;
	got.xflow++;
	st = fz_qp_state(fl.tgt);
	if (!fl.connected || fz_qp_state(fl.ini) != IBV_QPS_RTS ||
	    (st != IBV_QPS_RTR && st != IBV_QPS_RTS) || fz_one_in(R, 32)) {
		ibv_modify_qp(fl.ini, &a, IBV_QP_STATE);
		ibv_modify_qp(fl.tgt, &a, IBV_QP_STATE);
		fl.connected =
			!fz_connect(fl.ini, p.gid_idx, p.mtu, fl.tgt_qpn,
				    &p.gid, 0, psn, 14 + fz_below(R, 4), 7) &&
			!fz_connect(fl.tgt, p.gid_idx, p.mtu, fl.ini_qpn,
				    &p.gid, psn, 0, 14, 7);
		got.xrts += fl.connected;
	}
	for (i = fz_below(R, 3); i >= 0; i--) {
		flow_sge(sge, 2 * PAGE, good);
		rwr.wr_id = fz_u64(R);
		ibv_post_srq_recv(fl.srq, &rwr, &brw);
	}
	flow_sge(&sge[0], 2 * PAGE, good);
	flow_sge(&sge[1], PAGE, good);
	wr.num_sge = 1 + fz_below(R, 2);
	wr.opcode = (enum ibv_wr_opcode[]){ IBV_WR_SEND, IBV_WR_SEND,
		IBV_WR_SEND_WITH_IMM, IBV_WR_RDMA_WRITE,
		IBV_WR_RDMA_WRITE_WITH_IMM, IBV_WR_RDMA_READ,
		IBV_WR_ATOMIC_FETCH_AND_ADD,
		IBV_WR_ATOMIC_CMP_AND_SWP }[fz_below(R, 8)];
	wr.wr.rdma.remote_addr = good ? (uintptr_t)fl.mem + FLOW_LEN / 2 +
					fz_below(R, FLOW_LEN / 4) : any_addr();
	wr.wr.rdma.rkey = good ? fl.mr->rkey : any_key();
	if (wr.opcode == IBV_WR_ATOMIC_FETCH_AND_ADD ||
	    wr.opcode == IBV_WR_ATOMIC_CMP_AND_SWP) {
		sge[0].length = 8;
		wr.num_sge = 1;
		wr.wr.atomic.remote_addr = wr.wr.rdma.remote_addr & ~7ull;
		wr.wr.atomic.rkey = wr.wr.rdma.rkey;
		wr.wr.atomic.compare_add = fz_u64(R);
		wr.wr.atomic.swap = fz_u64(R);
	}
	/* Inline data is read by the provider: only from real memory. */
	if (good && wr.opcode == IBV_WR_SEND && fz_one_in(R, 4)) {
		wr.send_flags |= IBV_SEND_INLINE;
		sge[0].length %= 32;
		sge[1].length %= 32;
	}
	wr.qp_type.xrc.remote_srqn = good ? fl.srqn : any_srqn();
	got.xsend += !ibv_post_send(fl.ini, &wr, &bsw);
	while ((n = ibv_poll_cq(fl.scq, 16, wc)) > 0)
		count_xrc_wc(wc, n);
	while ((n = ibv_poll_cq(fl.rcq, 16, wc)) > 0)
		count_xrc_wc(wc, n);
}

/* ---- raw uverbs commands: what libibverbs would not send ------------- */

/*
 * A legacy write() command @cmd of @clen bytes (header included), @drv
 * bytes of random driver data after them, whose response of @rlen bytes
 * (uverbs' and the driver's) goes where the command says.  Returns what
 * write() returned.
 */
static ssize_t raw_cmd(uint32_t command, void *cmd, size_t clen, size_t drv,
		       size_t rlen)
{
	struct ib_uverbs_cmd_hdr *h = cmd;

	fz_bytes(R, (uint8_t *)cmd + clen, drv);
	clen += drv;
	h->command = command;
	h->in_words = clen / 4;
	h->out_words = rlen / 4;
	if (write(p.ctx->cmd_fd, cmd, clen) != (ssize_t)clen)
		return -1;
	got.raw_ok++;
	return clen;
}

/*
 * Where a raw command's response goes: a buffer, one that runs into the
 * read-only page (so that uverbs' part fits and the driver's does not),
 * the page nothing may touch, or nowhere.
 */
static uint64_t raw_resp(size_t ulen)
{
	switch (fz_below(R, 6)) {
	case 0:
		return (uintptr_t)p.mem + 20 * PAGE - ulen -
		       fz_below(R, 8) * 4;
	case 1:
		return (uintptr_t)p.mem + 10 * PAGE + fz_below(R, PAGE);
	case 2:
		return fz_one_in(R, 2) ? 0 : fz_u64(R);
	default:
		return (uintptr_t)p.mem + 40 * PAGE;
	}
}

static uint32_t raw_handle(uint32_t real)
{
	return fz_below(R, 4) ? real : fz_interesting32(R);
}

/*
 * CREATE_XSRQ, OPEN_QP, CREATE_QP (XRC types) and OPEN_XRCD as raw
 * commands: handles real, stale or random, types XRC and not, sizes of
 * the driver's request and response right, short or long, responses the
 * kernel cannot write.  What they create, user space does not know of:
 * the round's exit cleans it up.
 */
static void op_raw_xrc(void)
{
	struct ibv_pd *pd = ANY(p.pd);
	struct ibv_cq *cq = ANY(p.cq);
	struct ibv_srq *srq = ANY(p.srq);
	struct ibv_xrcd *xrcd = ANY(p.xrcd);
	uint32_t xh = xrcd ? to_vxrcd(xrcd)->handle : fz_u32(R);
	uint64_t buf[64];
	size_t drv_in = fz_one_in(R, 3) ? 8 * fz_below(R, 4) : 0;
	size_t drv_out = fz_one_in(R, 4) ? 4 * fz_below(R, 16) :
			 sizeof(struct vrdma_create_qp_resp);
	size_t ulen;

	memset(buf, 0, sizeof(buf));
	switch (fz_below(R, 4)) {
	case 0: {
		struct ib_uverbs_create_xsrq *c = (void *)(buf + 1);

		ulen = sizeof(struct ib_uverbs_create_srq_resp);
		c->response = raw_resp(ulen + drv_out);
		c->user_handle = fz_u64(R);
		c->srq_type = fz_one_in(R, 4) ? fz_below(R, 4) : IBV_SRQT_XRC;
		c->pd_handle = raw_handle(pd ? pd->handle : 0);
		c->max_wr = fz_one_in(R, 3) ? fz_interesting32(R) :
					      fz_below(R, 64);
		c->max_sge = fz_one_in(R, 3) ? fz_interesting32(R) :
					       fz_below(R, 4);
		c->srq_limit = fz_interesting32(R);
		c->max_num_tags = fz_interesting32(R);
		c->xrcd_handle = raw_handle(xh);
		c->cq_handle = raw_handle(cq ? cq->handle : 0);
		raw_cmd(IB_USER_VERBS_CMD_CREATE_XSRQ, buf,
			8 + sizeof(*c), drv_in, ulen + drv_out);
		break;
	}
	case 1: {
		struct ib_uverbs_open_qp *c = (void *)(buf + 1);

		ulen = sizeof(struct ib_uverbs_create_qp_resp);
		c->response = raw_resp(ulen + drv_out);
		c->user_handle = fz_u64(R);
		c->pd_handle = raw_handle(xh);	/* the XRCD's */
		c->qpn = any_tgt_qpn();
		c->qp_type = fz_one_in(R, 4) ? fz_below(R, 16) :
					       IBV_QPT_XRC_RECV;
		raw_cmd(IB_USER_VERBS_CMD_OPEN_QP, buf,
			8 + sizeof(*c), drv_in, ulen + drv_out);
		break;
	}
	case 2: {
		struct ib_uverbs_create_qp *c = (void *)(buf + 1);

		ulen = sizeof(struct ib_uverbs_create_qp_resp);
		c->response = raw_resp(ulen + drv_out);
		c->user_handle = fz_u64(R);
		c->qp_type = fz_one_in(R, 2) ? IBV_QPT_XRC_RECV :
			     fz_one_in(R, 2) ? IBV_QPT_XRC_SEND :
					       fz_below(R, 16);
		/* A target's XRCD handle goes in pd_handle. */
		c->pd_handle = raw_handle(c->qp_type == IBV_QPT_XRC_RECV &&
					  fz_below(R, 4) ? xh :
					  pd ? pd->handle : 0);
		c->send_cq_handle = raw_handle(cq ? cq->handle : 0);
		c->recv_cq_handle = raw_handle(cq ? cq->handle : 0);
		c->is_srq = fz_one_in(R, 3);
		c->srq_handle = raw_handle(srq ? srq->handle : 0);
		c->max_send_wr = fz_one_in(R, 3) ? fz_interesting32(R) :
						   fz_below(R, 64);
		c->max_recv_wr = fz_one_in(R, 3) ? fz_interesting32(R) :
						   fz_below(R, 64);
		c->max_send_sge = fz_below(R, 5);
		c->max_recv_sge = fz_below(R, 5);
		c->max_inline_data = fz_interesting32(R);
		c->sq_sig_all = fz_u32(R);
		raw_cmd(IB_USER_VERBS_CMD_CREATE_QP, buf,
			8 + sizeof(*c), drv_in, ulen + drv_out);
		break;
	}
	default: {
		struct ib_uverbs_open_xrcd *c = (void *)(buf + 1);
		char path[96];
		int fd = -1;

		snprintf(path, sizeof(path), "%s/xrcd%u", xrcd_dir,
			 fz_below(R, XRCD_FILES));
		if (fz_one_in(R, 2))
			fd = open(path, O_RDWR | O_CREAT, 0600);
		ulen = sizeof(struct ib_uverbs_open_xrcd_resp);
		c->response = raw_resp(ulen + drv_out);
		c->fd = fd >= 0 ? (uint32_t)fd : fz_interesting32(R);
		c->oflags = fz_one_in(R, 2) ? O_CREAT : fz_u32(R);
		raw_cmd(IB_USER_VERBS_CMD_OPEN_XRCD, buf,
			8 + sizeof(*c), drv_in, ulen + drv_out);
		if (fd >= 0)
			close(fd);
	}
	}
	got.raw++;
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
	int mask, i;

	if (!qp)
		return;
	/* XRC pairs: an initiator with a target (or the board's). */
	if ((qp->qp_type == IBV_QPT_XRC_SEND ||
	     qp->qp_type == IBV_QPT_XRC_RECV) && fz_below(R, 4))
		for (i = 0; i < POOL && peer; i++) {
			struct ibv_qp *c = p.qp[(i + qp->qp_num) % POOL];

			if (c && c->qp_type != qp->qp_type &&
			    (c->qp_type == IBV_QPT_XRC_SEND ||
			     c->qp_type == IBV_QPT_XRC_RECV)) {
				peer = c;
				break;
			}
		}
	switch (fz_below(R, 5)) {
	case 0:		/* a proper connection to a QP of the pool */
		if (!peer)
			return;
		if (!fz_connect(qp, p.gid_idx, p.mtu,
				qp->qp_type == IBV_QPT_XRC_SEND &&
				fz_one_in(R, 4) ? any_tgt_qpn() & 0xffffff :
				peer->qp_num, &p.gid, fz_u32(R) & 0xffffff,
				fz_u32(R) & 0xffffff, fz_below(R, 32),
				fz_below(R, 8))) {
			got.rts++;
			got.xrts += qp->qp_type == IBV_QPT_XRC_SEND ||
				    qp->qp_type == IBV_QPT_XRC_RECV;
		}
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
		uint32_t k = p.mr[i]->rkey;

		if (!ibv_dereg_mr(p.mr[i])) {
			p.mr[i] = NULL;
			p.dead[fz_below(R, 8)] = k;
		}
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
	flags = any_access();
	if (fz_one_in(R, 3))
		p.mr[i] = ibv_reg_mr_iova2(ANY(p.pd), addr, len,
					   fz_one_in(R, 2) ? fz_u64(R) :
					   (uintptr_t)addr, flags);
	else
		p.mr[i] = ibv_reg_mr(ANY(p.pd), addr, len, flags);
	/* Random rights may hold ON_DEMAND. */
	p.mr_kind[i] = flags & IBV_ACCESS_ON_DEMAND ? MK_ODP : MK_PINNED;
	p.mr_dm[i] = -1;
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

/*
 * Tag matching: a tag-matching SRQ in the SRQ pool (sizes near and beyond
 * the limits, any CQ of the pool), or a list of 1 to 4 operations of any
 * opcode, flags, handle, count, tag and SGEs posted to any SRQ of the
 * pool (basic and XRC ones refuse them).  QPs of the pool made on such an
 * SRQ then take op_post_send's random SENDs through the matcher.
 */
static void op_tm(void)
{
	struct ibv_ops_wr wr[4], *bad;
	struct ibv_sge sge[6];
	int i = SLOT(p.srq), n, j;

	if (!p.srq[i]) {
		struct ibv_srq_init_attr_ex sa = {
			.comp_mask = IBV_SRQ_INIT_ATTR_TYPE |
				     IBV_SRQ_INIT_ATTR_PD |
				     IBV_SRQ_INIT_ATTR_CQ |
				     IBV_SRQ_INIT_ATTR_TM,
			.srq_type = IBV_SRQT_TM,
		};

		sa.pd = ANY(p.pd);
		sa.cq = ANY(p.cq);
		if (!sa.pd || !sa.cq)
			return;
		sa.attr.max_wr = 1 + fz_below(R, 64);
		sa.attr.max_sge = 1 + fz_below(R, 4);
		sa.tm_cap.max_num_tags = fz_one_in(R, 3) ?
					 fz_interesting32(R) :
					 1 + fz_below(R, 64);
		sa.tm_cap.max_ops = fz_one_in(R, 3) ? fz_interesting32(R) :
						      1 + fz_below(R, 8);
		p.srq[i] = ibv_create_srq_ex(p.ctx, &sa);
		return;
	}
	n = 1 + fz_below(R, 4);
	memset(wr, 0, sizeof(wr));
	random_sges(sge, 6);
	for (j = 0; j < n; j++) {
		wr[j].wr_id = fz_u64(R);
		wr[j].next = j + 1 < n ? &wr[j + 1] : NULL;
		wr[j].opcode = fz_one_in(R, 8) ? fz_u32(R) : fz_below(R, 3);
		wr[j].flags = fz_one_in(R, 8) ? (int)fz_u32(R) :
			      (int)fz_below(R, 4);
		wr[j].tm.unexpected_cnt = fz_one_in(R, 2) ? fz_below(R, 4) :
					  fz_interesting32(R);
		wr[j].tm.handle = fz_one_in(R, 4) ? fz_interesting32(R) :
				  fz_below(R, 64);
		wr[j].tm.add.recv_wr_id = fz_u64(R);
		wr[j].tm.add.tag = fz_below(R, 8);
		wr[j].tm.add.mask = fz_one_in(R, 2) ? ~0ULL : fz_u64(R);
		wr[j].tm.add.sg_list = sge;
		wr[j].tm.add.num_sge = fz_one_in(R, 8) ? (int)fz_u32(R) :
				       (int)fz_below(R, 7);
		if (wr[j].tm.add.num_sge > 6 || wr[j].tm.add.num_sge < 0)
			wr[j].tm.add.num_sge = 6;
	}
	ibv_post_srq_ops(p.srq[i], wr, &bad);
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

static void op_post_send_on(struct ibv_qp *qp);

static void op_post_send(void)
{
	op_post_send_on(ANY(p.qp));
}

/* Random WRs on @qp. */
static void op_post_send_on(struct ibv_qp *qp)
{
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
		/* An XRC initiator's: the SRQ at the target. */
		wr[i].qp_type.xrc.remote_srqn = any_srqn();
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
	if (!ibv_post_send(qp, wr, &bad)) {
		got.send++;
		td_count_post(qp);
	}
	got.xsend += qp->qp_type == IBV_QPT_XRC_SEND;
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
	else if (qp && !qp->srq && !ibv_post_recv(qp, &wr, &bad)) {
		got.recv++;
		td_count_post(qp);
	}
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
		w->xrc_remote_srqn = fz_one_in(R, 4) ? fz_u32(R) : any_srqn();
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

	/*
	 * An XRC target QP (created or opened) has no ring; the provider
	 * refuses its posts: its doorbells, straight to the kernel.
	 */
	if (qp && qp->qp_type == IBV_QPT_XRC_RECV && what < 2) {
		ibv_cmd_post_send(qp, NULL, &bsw);
		ibv_cmd_post_recv(qp, NULL, &brw);
		return;
	}
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

/* ---- on-demand paging and device memory -------------------------------- */

/*
 * The pool's ODP memory: ODP_PAGES pages at a fixed address far below
 * where the kernel places mappings (top down), with pages ODP_HOLE1,
 * ODP_HOLE2 and ODP_HOLE2 + 1 unmapped: a later mmap (a ring, malloc's)
 * never falls into those holes, so they stay unmapped for the round.  The
 * flow's memory (below) lies next to it.
 */
#define ODP_PAGES	32
#define ODP_HOLE1	8
#define ODP_HOLE2	20
#define ODP_BASE	((uint8_t *)0x210000000000ull)
#define FL_BASE		(ODP_BASE + (1 << 20))

#define ODP_HOLES	(1ull << ODP_HOLE1 | 3ull << ODP_HOLE2)

static int odp_hole(int pg)
{
	return !!(ODP_HOLES & (1ull << pg));
}

static struct ibv_dm *flow_dm;	/* the checked flow's (op_odp_flow) */

static void tot(int t)
{
	__atomic_add_fetch(&board->tot[t], 1, __ATOMIC_RELAXED);
}

/* An oracle failed: counted on the board (a SIGKILL loses nothing). */

static int bad_srq;	/* the next odp_bad() is the SRQ pair's SEND */

static void odp_bad(const char *fmt, ...)
{
	unsigned long n = __atomic_add_fetch(&board->bad, 1, __ATOMIC_RELAXED);
	va_list ap;

	/* The first few of each kind. */
	if (bad_srq ? board->bad_srq <= 3 : n - board->bad_srq <= 10) {
		printf("# round seed %#llx: ", (unsigned long long)round_seed);
		va_start(ap, fmt);
		vprintf(fmt, ap);
		va_end(ap);
		printf("\n");
		fflush(stdout);
	}
}

/* The pool's ODP memory, its holes unmapped. */
static int odp_mem_setup(void)
{
	int pg;

	p.odp = mmap(ODP_BASE, ODP_PAGES * PAGE, PROT_READ | PROT_WRITE,
		     MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED_NOREPLACE, -1, 0);
	if (p.odp != ODP_BASE)
		return -1;
	for (pg = 0; pg < ODP_PAGES; pg++)
		if (odp_hole(pg))
			munmap(p.odp + pg * PAGE, PAGE);
		else
			memset(p.odp + pg * PAGE, pg, PAGE);
	return 0;
}

/* A slot's MR gone (deregistered by whoever): its kind forgotten. */
static void mr_slot_set(int i, struct ibv_mr *mr, int kind, int dm)
{
	p.mr[i] = mr;
	p.mr_kind[i] = kind;
	p.mr_dm[i] = dm;
}

/* Keys that are no MR's any more: advise_mr and WRs try them. */
static void dead_key(uint32_t k)
{
	p.dead[fz_below(R, 8)] = k;
}

static struct ibv_mr *any_mr_kind(int kind)
{
	int i, s = fz_below(R, POOL);

	for (i = 0; i < POOL; i++)
		if (p.mr[(s + i) % POOL] && p.mr_kind[(s + i) % POOL] == kind)
			return p.mr[(s + i) % POOL];
	return NULL;
}

/*
 * An address and length for an ODP registration: in the pool's ODP memory
 * (across its holes too), in the fuzzer's other memory (its PROT_NONE and
 * read-only pages), somewhere unmapped, or anything.
 */
static void odp_range(uint8_t **addr, size_t *len)
{
	switch (fz_below(R, 6)) {
	case 0: case 1: case 2:
		*addr = p.odp + fz_below(R, ODP_PAGES * PAGE);
		*len = 1 + fz_below(R, p.odp + ODP_PAGES * PAGE - *addr +
				    (fz_one_in(R, 4) ? 2 * PAGE : 0));
		break;
	case 3:
		*addr = p.mem + fz_below(R, MEM_PAGES * PAGE);
		*len = 1 + fz_below(R, 8 * PAGE);
		break;
	case 4:	/* nothing mapped: ODP pins nothing, so it may work */
		*addr = (uint8_t *)(uintptr_t)((fz_u64(R) & 0x7fffffffffffull) &
					       ~0xfffull);
		*len = 1 + fz_below(R, 64 * PAGE);
		break;
	default:
		*addr = (uint8_t *)(uintptr_t)fz_u64(R);
		*len = fz_one_in(R, 2) ? fz_interesting32(R) : fz_u64(R);
	}
}

/*
 * ODP MRs into the MR pool: explicit over odd ranges (holes, unmapped,
 * read-only, PROT_NONE, anything), implicit (NULL, SIZE_MAX) and near
 * misses of it, with random rights (remote ones too, now and then
 * HUGETLB); or an MR of the pool switched between ODP and pinned by
 * rereg_mr, with or without a new translation or PD.
 */
static void op_odp_mr(void)
{
	int i = SLOT(p.mr), acc = any_access() | IBV_ACCESS_ON_DEMAND;
	struct ibv_pd *pd = ANY(p.pd);
	uint8_t *addr;
	size_t len;

	if (fz_one_in(R, 8))
		acc |= IBV_ACCESS_HUGETLB;
	if (p.mr[i]) {
		int flags = IBV_REREG_MR_CHANGE_ACCESS, kind = p.mr_kind[i];

		if (kind == MK_DM || fz_one_in(R, 3)) {
			uint32_t k = p.mr[i]->rkey;

			if (!ibv_dereg_mr(p.mr[i])) {
				dead_key(k);
				mr_slot_set(i, NULL, 0, -1);
			}
			return;
		}
		/* ODP <-> pinned: the other way from what it is. */
		if (kind != MK_PINNED)
			acc &= ~IBV_ACCESS_ON_DEMAND;
		odp_range(&addr, &len);
		if (fz_one_in(R, 3))
			flags |= IBV_REREG_MR_CHANGE_TRANSLATION;
		if (fz_one_in(R, 4))
			flags |= IBV_REREG_MR_CHANGE_PD;
		if (!ibv_rereg_mr(p.mr[i], flags, pd, addr, len, acc)) {
			tot(T_REREG_ODP);
			p.mr_kind[i] = acc & IBV_ACCESS_ON_DEMAND ? MK_ODP :
				       MK_PINNED;
		}
		return;
	}
	if (!pd)
		return;
	switch (fz_below(R, 8)) {
	case 0: case 1:
		mr_slot_set(i, ibv_reg_mr(pd, NULL, SIZE_MAX, acc),
			    MK_IMPLICIT, -1);
		if (p.mr[i])
			tot(T_ODP_IMPLICIT);
		return;
	case 2:		/* implicit near misses: an address, an IOVA */
		mr_slot_set(i, fz_one_in(R, 2) ?
			    ibv_reg_mr_iova2(pd, NULL, SIZE_MAX, fz_u64(R),
					     acc) :
			    ibv_reg_mr(pd, p.odp + fz_below(R, PAGE),
				       SIZE_MAX, acc), MK_IMPLICIT, -1);
		return;
	default:
		odp_range(&addr, &len);
		mr_slot_set(i, fz_one_in(R, 4) ?
			    ibv_reg_mr_iova2(pd, addr, len, fz_u64(R), acc) :
			    ibv_reg_mr(pd, addr, len, acc), MK_ODP, -1);
		if (!p.mr[i])
			return;
		tot(T_ODP_MR);
		if ((uint8_t *)addr < p.odp + ODP_PAGES * PAGE &&
		    (uint8_t *)addr + len > p.odp + ODP_HOLE1 * PAGE)
			tot(T_ODP_HOLEY);
	}
}

/*
 * An SGE for advise_mr or a WR: a range of an MR of the pool (an ODP one
 * mostly; for an implicit MR the pool's ODP memory), a dead key, a random
 * one; inside, across the end, huge.
 */
static void odp_sge(struct ibv_sge *sge)
{
	struct ibv_mr *mr = fz_below(R, 4) ? any_mr_kind(MK_ODP) : NULL;
	uint64_t len;

	if (!mr)
		mr = fz_one_in(R, 2) ? any_mr_kind(MK_IMPLICIT) : ANY(p.mr);
	sge->length = fz_one_in(R, 4) ? fz_interesting32(R) :
		      1 + fz_below(R, 4 * PAGE);
	if (!mr || fz_one_in(R, 8)) {
		sge->lkey = fz_one_in(R, 2) ? p.dead[fz_below(R, 8)] :
			    fz_interesting32(R);
		sge->addr = (uintptr_t)p.odp + fz_below(R, ODP_PAGES * PAGE);
		return;
	}
	sge->lkey = fz_one_in(R, 8) ? mr->rkey : mr->lkey;
	if (mr->length == SIZE_MAX) {
		sge->addr = (uintptr_t)p.odp + fz_below(R, ODP_PAGES * PAGE);
		return;
	}
	len = mr->length;
	sge->addr = (uintptr_t)mr->addr +
		    (fz_one_in(R, 4) ? fz_below(R, len + 16) :
		     len > sge->length ? fz_below(R, len - sge->length + 1) :
					 0);
}

/*
 * ibv_advise_mr(): random and real advice, flags, PDs, and 0 to 8 SGEs of
 * ODP MRs (and others: pinned, DM, another PD's, dead, random keys).
 */
static void op_advise(void)
{
	struct ibv_pd *pd = ANY(p.pd);
	struct ibv_sge sge[8];
	uint32_t n = fz_below(R, 9), advice, flags, i;

	if (!pd)
		return;
	for (i = 0; i < n; i++)
		odp_sge(&sge[i]);
	advice = fz_below(R, 4) ? fz_below(R, 3) : fz_interesting32(R);
	flags = fz_below(R, 3) ? (fz_below(R, 2) ? IBV_ADVISE_MR_FLAG_FLUSH : 0)
			       : fz_u32(R);
	if (!ibv_advise_mr(pd, advice, flags, sge, n))
		tot(T_ADVISE_OK);
	else
		tot(T_ADVISE_REFUSED);
}

/*
 * What the storms do to a page range of ODP memory under the device:
 * drop it, unmap it and map it again, make it read-only or inaccessible
 * and back, move it away and back, write it from the CPU.  Each leaves the
 * range mapped and writable again (the holes are never touched).
 */
/*
 * Pages @pg to @pg + @n - 1 of @base (@npages pages; those in the bit mask
 * @holes are left alone, and what lies beyond them).  The memory is at a
 * fixed address nobody else maps near (ODP_BASE), so mapping it again with
 * MAP_FIXED replaces nothing of anyone's.  @r: the generator (the storm
 * thread has its own).
 */
static void storm_pages(struct fz_rng *r, uint8_t *base, int npages, int pg,
			int n, uint64_t holes, uint8_t *scratch)
{
	uint8_t *a;
	int k;

	while (n > 0 && pg + n > npages)
		n--;
	for (k = 0; k < n; k++)
		if (holes & (1ull << (pg + k)))
			n = k;
	if (n <= 0)
		return;
	a = base + pg * PAGE;
	switch (fz_below(r, 6)) {
	case 0:
		madvise(a, n * PAGE, MADV_DONTNEED);
		break;
	case 1:
		if (!munmap(a, n * PAGE)) {
			usleep(fz_below(r, 300));
			mmap(a, n * PAGE, PROT_READ | PROT_WRITE, MAP_PRIVATE |
			     MAP_ANONYMOUS | MAP_FIXED, -1, 0);
		}
		break;
	case 2:
		mprotect(a, n * PAGE, fz_one_in(r, 2) ? PROT_READ : PROT_NONE);
		usleep(fz_below(r, 300));
		mprotect(a, n * PAGE, PROT_READ | PROT_WRITE);
		break;
	case 3:
		/* Moved into the scratch reservation and back. */
		if (scratch && n <= 4 &&
		    mremap(a, n * PAGE, n * PAGE, MREMAP_MAYMOVE | MREMAP_FIXED,
			   scratch) == scratch) {
			usleep(fz_below(r, 300));
			mremap(scratch, n * PAGE, n * PAGE,
			       MREMAP_MAYMOVE | MREMAP_FIXED, a);
			mmap(scratch, 4 * PAGE, PROT_NONE, MAP_PRIVATE |
			     MAP_ANONYMOUS | MAP_FIXED, -1, 0);
		}
		break;
	default:
		for (k = 0; k < n; k++)
			a[k * PAGE + fz_below(r, PAGE)] = fz_u32(r);
	}
	tot(T_STORM);
}

/*
 * A storm on the pool's ODP memory, with the pool's WRs (posted by
 * op_post_send/op_odp_post, run by the QPs' tasks) on it, or a fork: the
 * child writes to the memory and exits, the parent's next writes break
 * copy on write under the device.
 */
static void op_odp_storm(void)
{
	int pg = fz_below(R, ODP_PAGES), n = 1 + fz_below(R, 4), k, st;
	pid_t pid;

	if (!fz_one_in(R, 8)) {
		storm_pages(R, p.odp, ODP_PAGES, pg, n, ODP_HOLES, NULL);
		return;
	}
	fflush(stdout);
	pid = fork();
	if (!pid) {
		for (k = 0; k < ODP_PAGES; k++)
			if (!odp_hole(k))
				p.odp[k * PAGE] = k;
		_exit(0);
	}
	if (pid < 0)
		return;
	tot(T_FORK);
	for (k = 0; k < ODP_PAGES; k += 3)
		if (!odp_hole(k))
			p.odp[k * PAGE + 1] = fz_u32(R);
	fz_wait_child(pid, &st, 10);
}

/*
 * A well formed WR (SEND, WRITE, READ, an atomic, or a receive) on a QP
 * of the pool whose SGE and remote range are of the pool's ODP and DM MRs,
 * so that the device goes through their pages while the storms and the
 * other operations change them.
 */
static void op_odp_post(void)
{
	struct ibv_qp *qp = ANY(p.qp);
	int rk = fz_one_in(R, 3) ? MK_DM : fz_one_in(R, 3) ? MK_IMPLICIT :
		 MK_ODP;
	struct ibv_mr *rmr = any_mr_kind(rk);
	struct ibv_sge sge;
	struct ibv_send_wr wr = { .sg_list = &sge, .num_sge = 1 }, *bad;
	struct ibv_recv_wr rwr = { .sg_list = &sge, .num_sge = 1 }, *brw;
	uint64_t ra;

	if (!qp || qp->qp_type == IBV_QPT_UD ||
	    qp->qp_type == IBV_QPT_XRC_RECV)
		return;
	odp_sge(&sge);
	if (fz_one_in(R, 4) && any_mr_kind(MK_DM)) {
		struct ibv_mr *dm = any_mr_kind(MK_DM);

		sge.lkey = dm->lkey;
		sge.addr = fz_below(R, dm->length + 8);
		sge.length = fz_below(R, dm->length + 8);
	}
	if (fz_one_in(R, 4)) {
		rwr.wr_id = fz_u64(R);
		if (!(qp->srq ? ibv_post_srq_recv(qp->srq, &rwr, &brw) :
				ibv_post_recv(qp, &rwr, &brw)))
			tot(T_ODP_POST);
		return;
	}
	if (!rmr || rk == MK_IMPLICIT)
		ra = (uintptr_t)p.odp + fz_below(R, ODP_PAGES * PAGE);
	else if (rk == MK_DM)	/* zero based */
		ra = fz_below(R, rmr->length + 8);
	else
		ra = (uintptr_t)rmr->addr + fz_below(R, rmr->length + 8);
	wr.wr_id = fz_u64(R);
	wr.send_flags = fz_below(R, 4) ? IBV_SEND_SIGNALED : 0;
	wr.opcode = (enum ibv_wr_opcode[]){ IBV_WR_SEND, IBV_WR_RDMA_WRITE,
		IBV_WR_RDMA_WRITE_WITH_IMM, IBV_WR_RDMA_READ,
		IBV_WR_RDMA_READ, IBV_WR_ATOMIC_FETCH_AND_ADD,
		IBV_WR_ATOMIC_CMP_AND_SWP }[fz_below(R, 7)];
	wr.wr.rdma.remote_addr = ra;
	wr.wr.rdma.rkey = rmr ? rmr->rkey : p.dead[fz_below(R, 8)];
	if (wr.opcode == IBV_WR_ATOMIC_FETCH_AND_ADD ||
	    wr.opcode == IBV_WR_ATOMIC_CMP_AND_SWP) {
		sge.length = 8;
		wr.wr.atomic.remote_addr = ra & ~7ull;
		wr.wr.atomic.rkey = wr.wr.rdma.rkey;
		wr.wr.atomic.compare_add = fz_u64(R);
		wr.wr.atomic.swap = fz_u64(R);
	}
	wr.qp_type.xrc.remote_srqn = any_srqn();
	if (!ibv_post_send(qp, &wr, &bad)) {
		tot(T_ODP_POST);
		td_count_post(qp);
	}
}

/* ---- device memory ----------------------------------------------------- */

/*
 * alloc_dm with random lengths (0, small, odd, max_dm_size and one more,
 * huge), alignments and comp_mask; or free one, with or without MRs of it
 * (then the kernel must refuse: EBUSY, and the DM stays).
 */
static void op_dm(void)
{
	int i = SLOT(p.dm), k, busy = 0, err;
	struct ibv_alloc_dm_attr a = { 0 };

	/* Half the time the DM of a DM MR, if there is one. */
	for (k = 0; k < POOL && fz_one_in(R, 2); k++)
		if (p.mr[k] && p.mr_kind[k] == MK_DM && p.mr_dm[k] >= 0) {
			i = p.mr_dm[k];
			break;
		}
	if (p.dm[i]) {
		for (k = 0; k < POOL; k++)
			busy |= p.mr[k] && p.mr_kind[k] == MK_DM &&
				p.mr_dm[k] == i;
		err = ibv_free_dm(p.dm[i]);
		if (!err) {
			if (busy)
				odp_bad("ibv_free_dm() freed a DM that MRs still use");
			p.dm[i] = NULL;
			for (k = 0; k < POOL; k++)
				if (p.mr[k] && p.mr_kind[k] == MK_DM &&
				    p.mr_dm[k] == i)
					p.mr_dm[k] = -1;
			tot(T_DM_FREE);
		} else if (busy) {
			tot(T_DM_BUSY);
		}
		return;
	}
	switch (fz_below(R, 8)) {
	case 0:
		a.length = fz_interesting32(R);
		break;
	case 1:
		a.length = p.max_dm + fz_below(R, 3) - 1;
		break;
	case 2:
		a.length = fz_one_in(R, 2) ? 0 : fz_u64(R);
		break;
	default:
		a.length = 1 + fz_below(R, 3 * PAGE);
	}
	a.log_align_req = fz_below(R, 4) ? fz_below(R, 14) :
			  fz_interesting32(R);
	a.comp_mask = fz_one_in(R, 8) ? fz_u32(R) : 0;
	p.dm[i] = ibv_alloc_dm(p.ctx, &a);
	if (p.dm[i]) {
		p.dm_len[i] = a.length;
		tot(T_DM_ALLOC);
	}
}

/* A slot of the DM pool that holds a DM, or -1. */
static int any_dm(void)
{
	int i, s = fz_below(R, POOL);

	for (i = 0; i < POOL; i++)
		if (p.dm[(s + i) % POOL])
			return (s + i) % POOL;
	return -1;
}

/*
 * memcpy to and from a DM at random offsets and lengths (aligned or not,
 * inside, across the end, beyond); and a round trip through a part of the
 * DM that no MR of the pool covers must come back as it went.
 */
static void op_dm_copy(void)
{
	int i = any_dm(), k, covered = 0;
	uint8_t buf[2 * PAGE], back[2 * PAGE];
	uint64_t off;
	size_t len;

	if (i < 0)
		return;
	off = fz_below(R, 4) ? fz_below(R, p.dm_len[i] + 1) & ~3ull :
			       fz_interesting32(R);
	len = fz_below(R, 4) ? fz_below(R, sizeof(buf) + 1) & ~3ull :
			       fz_below(R, sizeof(buf) + 1);
	/* Mostly a range that fits. */
	if (fz_below(R, 4) && off < p.dm_len[i] && len > p.dm_len[i] - off)
		len = (p.dm_len[i] - off) & ~3ull;
	fz_bytes(R, buf, len);
	for (k = 0; k < POOL; k++)
		covered |= p.mr[k] && p.mr_kind[k] == MK_DM &&
			   p.mr_dm[k] == i;
	if (fz_one_in(R, 2)) {
		if (!ibv_memcpy_from_dm(back, p.dm[i], off, len))
			tot(T_DM_COPY);
		return;
	}
	if (ibv_memcpy_to_dm(p.dm[i], off, buf, len))
		return;
	tot(T_DM_COPY);
	if (!covered && !ibv_memcpy_from_dm(back, p.dm[i], off, len) &&
	    memcmp(buf, back, len))
		odp_bad("a DM gave back other bytes than were copied in (offset %llu, %zu bytes)",
			(unsigned long long)off, len);
}

/*
 * DM MRs into the MR pool: random offset, length and rights, with and
 * without ZERO_BASED, of a DM of the pool, in any PD.
 */
static void op_dm_mr(void)
{
	int i = free_slot((void **)p.mr), d = any_dm(), acc = any_access();
	struct ibv_pd *pd = ANY(p.pd);
	uint64_t off;
	size_t len;

	if (i < 0 || d < 0 || !pd)
		return;
	if (fz_below(R, 4))
		acc |= IBV_ACCESS_ZERO_BASED;
	off = fz_below(R, 4) ? fz_below(R, p.dm_len[d] + 1) :
			       fz_interesting32(R);
	len = fz_below(R, 4) ? fz_below(R, p.dm_len[d] - (off < p.dm_len[d] ?
							 off : 0) + 2) :
			       fz_interesting32(R);
	mr_slot_set(i, ibv_reg_dm_mr(pd, p.dm[d], off, len, acc), MK_DM, d);
	if (p.mr[i])
		tot(T_DM_MR);
}

/*
 * ibv_import_dm() on the imported context: by the handle of a DM, a
 * freed DM's, of other objects (PD, MR, CQ, QP), or random.  Only a DM's
 * may work, and then its memory is the DM's.
 */
static void op_dm_import(void)
{
	struct ibv_dm *dm = ANY(p.dm), *im;
	struct ibv_pd *pd = ANY(p.pd);
	struct ibv_mr *mr = ANY(p.mr);
	struct ibv_cq *cq = ANY(p.cq);
	struct ibv_qp *qp = ANY(p.qp);
	uint32_t h;
	int real = 0;

	if (!p.ictx) {
		op_import();	/* makes the imported context */
		return;
	}
	switch (fz_below(R, 8)) {
	case 0: case 1: case 2:
		if (!dm)
			return;
		h = dm->handle;
		real = 1;
		break;
	case 3:
		if (!pd)
			return;
		h = pd->handle;
		break;
	case 4:
		if (!mr)
			return;
		h = mr->handle;
		break;
	case 5:
		if (!cq)
			return;
		h = cq->handle;
		break;
	case 6:
		if (!qp)
			return;
		h = qp->handle;
		break;
	default:
		h = fz_interesting32(R);
	}
	im = ibv_import_dm(p.ictx, h);
	if (!im)
		return;
	/*
	 * uverbs' handles are one space for every type: a random one may be
	 * a DM's (the flow's too), another object's never.
	 */
	if (!real) {
		int k;

		for (k = 0; k < POOL; k++)
			real |= p.dm[k] && p.dm[k]->handle == h;
		real |= flow_dm && flow_dm->handle == h;
		if (!real)
			odp_bad("ibv_import_dm() took handle %u, which is no DM's",
				h);
	}
	tot(T_DM_IMPORT);
	ibv_unimport_dm(im);
}

/*
 * VRDMA_IB_METHOD_DM_QUERY by raw RDMA_VERBS_IOCTL, with garbage: handles
 * of a DM, other objects or random; attributes missing, repeated,
 * unknown, with odd flags; outputs short, long, read-only, unmapped;
 * wrong driver_id, object, method, header length.  A well formed query of
 * a DM of the pool must answer its length.
 */
static void op_dm_query(void)
{
	struct {
		struct ib_uverbs_ioctl_hdr hdr;
		struct ib_uverbs_attr attrs[5];
	} cmd;
	uint64_t out[4] = { 0, 0, 0, 0 };
	int i = any_dm(), k, n, good = fz_one_in(R, 3);
	struct ibv_pd *pd = ANY(p.pd);
	struct ibv_cq *cq = ANY(p.cq);
	uint32_t h;

	memset(&cmd, 0, sizeof(cmd));
	i = i < 0 ? 0 : i;
	h = p.dm[i] && fz_below(R, 3) ? p.dm[i]->handle :
	    fz_one_in(R, 3) && pd ? pd->handle :
	    fz_one_in(R, 2) && cq ? cq->handle : fz_interesting32(R);
	cmd.hdr.object_id = UVERBS_OBJECT_DM;
	cmd.hdr.method_id = VRDMA_IB_METHOD_DM_QUERY;
	cmd.hdr.driver_id = RDMA_DRIVER_UNKNOWN;
	cmd.attrs[0].attr_id = VRDMA_IB_ATTR_DM_QUERY_HANDLE;
	cmd.attrs[0].flags = UVERBS_ATTR_F_MANDATORY;
	cmd.attrs[0].data = h;
	cmd.attrs[1].attr_id = VRDMA_IB_ATTR_DM_QUERY_MMAP_OFFSET;
	cmd.attrs[1].flags = UVERBS_ATTR_F_MANDATORY;
	cmd.attrs[1].len = 8;
	cmd.attrs[1].data = (uintptr_t)&out[0];
	cmd.attrs[2].attr_id = VRDMA_IB_ATTR_DM_QUERY_LENGTH;
	cmd.attrs[2].flags = UVERBS_ATTR_F_MANDATORY;
	cmd.attrs[2].len = 8;
	cmd.attrs[2].data = (uintptr_t)&out[1];
	n = 3;
	if (!good) {
		switch (fz_below(R, 10)) {
		case 0:		/* an attribute missing, or none */
			n = fz_below(R, 3);
			k = fz_below(R, 3);
			if (n && k < n)
				cmd.attrs[k] = cmd.attrs[n];
			break;
		case 1:		/* repeated, or unknown */
			n = 4 + fz_below(R, 2);
			cmd.attrs[3] = cmd.attrs[fz_below(R, 3)];
			cmd.attrs[4].attr_id =
				fz_one_in(R, 2) ? fz_u32(R) & 0xffff :
				VRDMA_IB_ATTR_DM_QUERY_LENGTH + 1;
			cmd.attrs[4].len = fz_below(R, 16);
			cmd.attrs[4].data = (uintptr_t)&out[2];
			break;
		case 2:		/* outputs of odd sizes */
			k = 1 + fz_below(R, 2);
			cmd.attrs[k].len = fz_one_in(R, 2) ? fz_below(R, 8) :
					   fz_u32(R) & 0xffff;
			break;
		case 3:		/* outputs nobody may write */
			k = 1 + fz_below(R, 2);
			cmd.attrs[k].data = fz_one_in(R, 3) ? 0 :
				fz_one_in(R, 2) ?
				(uintptr_t)p.mem + 20 * PAGE +
				8 * fz_below(R, 8) :
				(uintptr_t)p.mem + 10 * PAGE + fz_below(R, 64);
			break;
		case 4:
			cmd.hdr.driver_id = fz_one_in(R, 2) ? fz_below(R, 32) :
					    fz_u32(R);
			break;
		case 5:
			cmd.hdr.object_id = fz_below(R, 24);
			cmd.hdr.method_id = fz_one_in(R, 2) ?
				VRDMA_IB_METHOD_DM_QUERY + fz_below(R, 3) - 1 :
				fz_u32(R) & 0xffff;
			break;
		case 6:
			k = fz_below(R, 3);
			cmd.attrs[k].flags = fz_u32(R) & 0xffff;
			cmd.attrs[k].attr_data.reserved = fz_u32(R);
			break;
		case 7:
			cmd.hdr.reserved1 = fz_u32(R);
			cmd.hdr.reserved2 = fz_u32(R);
			break;
		case 8:		/* the handle attribute as a pointer */
			cmd.attrs[0].len = 8;
			cmd.attrs[0].data = (uintptr_t)&out[3];
			break;
		default:
			fz_bytes(R, &cmd.attrs[fz_below(R, 3)],
				 sizeof(cmd.attrs[0]));
		}
	}
	cmd.hdr.num_attrs = n;
	cmd.hdr.length = sizeof(cmd.hdr) + n * sizeof(cmd.attrs[0]);
	if (!good && fz_one_in(R, 8))
		cmd.hdr.length = fz_u32(R) & 0xffff;
	if (ioctl(p.ctx->cmd_fd, RDMA_VERBS_IOCTL, &cmd)) {
		tot(T_DM_QUERY_REFUSED);
		return;
	}
	tot(T_DM_QUERY);
	if (good && p.dm[i] && h == p.dm[i]->handle && out[1] != p.dm_len[i])
		odp_bad("DM_QUERY of a DM of %zu bytes answered %llu",
			p.dm_len[i], (unsigned long long)out[1]);
}

/* ---- the checked flow: ODP and DM memory under a storm ---------------- */

/*
 * A requester A and a responder B of its own (RC, in a PD of its own with
 * ODP MRs: never the loopback path, never the softirq), outside the pools
 * so that no random operation uses their keys.  Remote memory: T, FL_PAGES
 * pages of ODP memory at a fixed address with page FL_HOLE never mapped,
 * and the first half of a DM (M); local memory: an ODP buffer (S) and the
 * DM's second half.  Each operation (WRITE, READ, SEND into a receive of
 * B, an atomic) goes with a key that grants it (T's ODP MR, an implicit
 * ODP MR, the DM's MR) or not (T's read-only ODP MR, another PD's ODP or
 * DM MR, a deregistered MR's), B's rights drawn at each connection, while
 * a thread storms T: drops, unmaps, protects, moves, writes pages, forks
 * (the child checks that its copy does not change).  After each, with the
 * storm over, every byte is checked against what the flow knows it holds:
 * a success placed exactly the source's bytes, a refusal changed nothing,
 * an error may have changed only the operation's own range, nothing
 * outside it changed at all, and no operation across the hole succeeded.
 * Pages the storm touched are taken as they are.
 */
#define FL_PAGES	16
#define FL_HOLE		9
#define FL_LEN		(64 << 10)	/* S, and the DM's MR */
#define FL_DMOFF	256		/* the DM MR's start in the DM */
#define FL_DMLEN	(FL_LEN + FL_DMOFF)

enum { K_T, K_IMPLICIT, K_DM, K_T_RO, K_T_OTHER, K_DM_OTHER, K_DEAD };
enum { W_T, W_S, W_M };

static struct {
	int ready, broken, connected, b_acc;
	struct ibv_pd *pd, *pd2;
	struct ibv_cq *cq;
	struct ibv_qp *a, *b;
	uint8_t *t, *ts;		/* T and what it holds */
	uint8_t *s, *ss;		/* S ... */
	uint8_t *m, *ms;		/* the DM's bytes as read, and ... */
	uint8_t *snap;			/* the fork child's copy of T */
	uint8_t *scratch;		/* where a storm moves pages to */
	struct ibv_dm *dm;
	struct ibv_mr *tmr, *tro, *timp, *tother, *smr, *dmr, *dother;
	int s_odp;			/* S's MR is ODP (else pinned) */
	uint32_t dead;
	/*
	 * A second pair in a PD without ODP MRs (so the loopback path may
	 * carry its messages), whose responder C takes its receives from an
	 * SRQ in the ODP PD: D SENDs from a pinned buffer into T or M.
	 */
	struct ibv_pd *pdc;
	struct ibv_srq *srq;
	struct ibv_qp *c, *d;
	uint8_t *dbuf;
	struct ibv_mr *dbmr;
	int cd_connected;
	int touched[FL_PAGES];	/* by this operation's storm (joined) */
	int storm_n;
} of;

static void *fl_mem(int w)
{
	return w == W_T ? of.t : w == W_S ? of.s : of.m + FL_DMOFF;
}

static uint8_t *fl_sh(int w)
{
	return w == W_T ? of.ts : w == W_S ? of.ss : of.ms + FL_DMOFF;
}

static int fl_t_page_unknown(size_t off)
{
	return of.touched[off / PAGE];
}

/*
 * A checked flow's RC pair, new: *@a and *@b destroyed (nothing in
 * flight) and made again on @pd, with @cq for everything.  0, or -1 if
 * either could not be made.
 */
static int pair_new(struct ibv_pd *pd, struct ibv_cq *cq, struct ibv_qp **a,
		    struct ibv_qp **b)
{
	struct ibv_qp_init_attr qa = {
		.send_cq = cq, .recv_cq = cq,
		.cap = { .max_send_wr = 8, .max_recv_wr = 8,
			 .max_send_sge = 1, .max_recv_sge = 1 },
		.qp_type = IBV_QPT_RC,
	};

	if (*a)
		ibv_destroy_qp(*a);
	if (*b)
		ibv_destroy_qp(*b);
	*a = ibv_create_qp(pd, &qa);
	*b = ibv_create_qp(pd, &qa);
	return *a && *b ? 0 : -1;
}

/*
 * Connect a checked flow's pair anew, from RESET with @cq drained, at PSN
 * @psn, @b granting @b_acc to @a: 1 if both reached RTS.
 */
static int pair_connect(struct ibv_qp *a, struct ibv_qp *b, struct ibv_cq *cq,
			uint32_t psn, int b_acc)
{
	struct ibv_qp_attr attr = { .qp_state = IBV_QPS_RESET };
	struct ibv_wc wc[8];

	ibv_modify_qp(a, &attr, IBV_QP_STATE);
	ibv_modify_qp(b, &attr, IBV_QP_STATE);
	while (ibv_poll_cq(cq, 8, wc) > 0)
		;
	return !fz_connect_access(a, p.gid_idx, p.mtu, b->qp_num, &p.gid,
				  psn, psn, 16, 7, 0) &&
	       !fz_connect_access(b, p.gid_idx, p.mtu, a->qp_num, &p.gid,
				  psn, psn, 16, 7, b_acc);
}

/* The flow's QPs, new (the old ones destroyed: nothing in flight). */
static int flow_new_qps(void)
{
	of.connected = 0;
	if (!pair_new(of.pd, of.cq, &of.a, &of.b))
		return 0;
	of.broken = 1;
	of.ready = 0;
	return -1;
}

/* The SRQ pair, new: its SRQ may hold a receive a failure left. */
static void flow_new_srq_pair(void)
{
	struct ibv_qp_init_attr qa = {
		.send_cq = of.cq, .recv_cq = of.cq,
		.cap = { .max_send_wr = 8, .max_send_sge = 1 },
		.qp_type = IBV_QPT_RC,
	};

	if (of.c)
		ibv_destroy_qp(of.c);
	if (of.d)
		ibv_destroy_qp(of.d);
	if (of.srq)
		ibv_destroy_srq(of.srq);
	of.c = of.d = NULL;
	of.cd_connected = 0;
	of.srq = ibv_create_srq(of.pd, &(struct ibv_srq_init_attr){
		.attr = { .max_wr = 8, .max_sge = 1 } });
	if (!of.srq)
		return;
	qa.srq = of.srq;
	of.c = ibv_create_qp(of.pdc, &qa);
	qa.srq = NULL;
	qa.cap.max_recv_wr = 8;
	qa.cap.max_recv_sge = 1;
	of.d = ibv_create_qp(of.pdc, &qa);
	if (!of.c || !of.d) {
		if (of.c)
			ibv_destroy_qp(of.c);
		if (of.d)
			ibv_destroy_qp(of.d);
		of.c = of.d = NULL;
	}
}

static void flow_connect_cd(void)
{
	struct ibv_qp_attr a = { .qp_state = IBV_QPS_RESET };
	uint32_t psn = fz_u32(R) & 0xffffff;

	ibv_modify_qp(of.c, &a, IBV_QP_STATE);
	ibv_modify_qp(of.d, &a, IBV_QP_STATE);
	of.cd_connected =
		!fz_connect(of.c, p.gid_idx, p.mtu, of.d->qp_num, &p.gid,
			    psn, psn, 16, 7) &&
		!fz_connect(of.d, p.gid_idx, p.mtu, of.c->qp_num, &p.gid,
			    psn, psn, 16, 7);
}

static int flow_init(void)
{
	int all = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE |
		  IBV_ACCESS_REMOTE_READ | IBV_ACCESS_REMOTE_ATOMIC;
	struct ibv_mr *dead;
	int pg;

	if (of.broken)
		return -1;
	of.broken = 1;		/* until all is there */
	of.t = mmap(FL_BASE, FL_PAGES * PAGE, PROT_READ | PROT_WRITE,
		    MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED_NOREPLACE, -1, 0);
	of.scratch = mmap(FL_BASE + (1 << 20), 4 * PAGE, PROT_NONE,
			  MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED_NOREPLACE,
			  -1, 0);
	of.s = mmap(NULL, FL_LEN, PROT_READ | PROT_WRITE,
		    MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	of.ts = malloc(FL_PAGES * PAGE);
	of.ss = malloc(FL_LEN);
	of.m = malloc(FL_DMLEN);
	of.ms = malloc(FL_DMLEN);
	of.snap = malloc(FL_PAGES * PAGE);
	if (of.t != FL_BASE || of.s == MAP_FAILED || !of.ts || !of.ss ||
	    !of.m || !of.ms || !of.snap)
		return -1;
	if (of.scratch != FL_BASE + (1 << 20))
		of.scratch = NULL;
	munmap(of.t + FL_HOLE * PAGE, PAGE);
	for (pg = 0; pg < FL_PAGES; pg++)
		if (pg != FL_HOLE)
			fz_bytes(R, of.t + pg * PAGE, PAGE);
	memcpy(of.ts, of.t, FL_HOLE * PAGE);
	memcpy(of.ts + (FL_HOLE + 1) * PAGE, of.t + (FL_HOLE + 1) * PAGE,
	       (FL_PAGES - FL_HOLE - 1) * PAGE);
	fz_bytes(R, of.s, FL_LEN);
	memcpy(of.ss, of.s, FL_LEN);
	fz_bytes(R, of.ms, FL_DMLEN);

	of.pd = ibv_alloc_pd(p.ctx);
	of.pd2 = ibv_alloc_pd(p.ctx);
	of.cq = ibv_create_cq(p.ctx, 64, NULL, NULL, 0);
	of.dm = ibv_alloc_dm(p.ctx, &(struct ibv_alloc_dm_attr){
		.length = FL_DMLEN });
	if (!of.pd || !of.pd2 || !of.cq || !of.dm ||
	    ibv_memcpy_to_dm(of.dm, 0, of.ms, FL_DMLEN))
		return -1;
	of.tmr = ibv_reg_mr(of.pd, of.t, FL_PAGES * PAGE,
			    all | IBV_ACCESS_ON_DEMAND);
	of.tro = ibv_reg_mr(of.pd, of.t, FL_PAGES * PAGE,
			    IBV_ACCESS_REMOTE_READ | IBV_ACCESS_ON_DEMAND);
	of.timp = ibv_reg_mr(of.pd, NULL, SIZE_MAX, all | IBV_ACCESS_ON_DEMAND);
	of.tother = ibv_reg_mr(of.pd2, of.t, FL_PAGES * PAGE,
			       all | IBV_ACCESS_ON_DEMAND);
	of.smr = ibv_reg_mr(of.pd, of.s, FL_LEN,
			    IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_ON_DEMAND);
	of.s_odp = 1;
	of.dmr = ibv_reg_dm_mr(of.pd, of.dm, FL_DMOFF, FL_LEN,
			       all | IBV_ACCESS_ZERO_BASED);
	of.dother = ibv_reg_dm_mr(of.pd2, of.dm, FL_DMOFF, FL_LEN,
				  all | IBV_ACCESS_ZERO_BASED);
	dead = ibv_reg_mr(of.pd, of.t, FL_PAGES * PAGE,
			  all | IBV_ACCESS_ON_DEMAND);
	if (!of.tmr || !of.tro || !of.timp || !of.tother || !of.smr ||
	    !of.dmr || !of.dother || !dead)
		return -1;
	of.dead = dead->rkey;
	ibv_dereg_mr(dead);
	flow_dm = of.dm;
	of.pdc = ibv_alloc_pd(p.ctx);
	of.dbuf = malloc(FL_LEN);
	of.dbmr = of.pdc && of.dbuf ? ibv_reg_mr(of.pdc, of.dbuf, FL_LEN,
						 IBV_ACCESS_LOCAL_WRITE) : NULL;
	if (of.dbmr)
		flow_new_srq_pair();
	if (flow_new_qps())
		return -1;
	of.broken = 0;
	of.ready = 1;
	return 0;
}

/* Both QPs from RESET to RTS towards each other; B's rights drawn anew. */
static void flow_connect(void)
{
	uint32_t psn = fz_u32(R) & 0xffffff;

	of.b_acc = fz_below(R, 4) ? IBV_ACCESS_REMOTE_WRITE |
		   IBV_ACCESS_REMOTE_READ | IBV_ACCESS_REMOTE_ATOMIC :
		   (int)(fz_u32(R) & (IBV_ACCESS_REMOTE_WRITE |
				      IBV_ACCESS_REMOTE_READ |
				      IBV_ACCESS_REMOTE_ATOMIC));
	of.connected = pair_connect(of.a, of.b, of.cq, psn, of.b_acc);
}

/*
 * The storm thread: @n storms on T while the operation runs.  It touches
 * no verbs object: the single-threaded ones (thread domains) are the main
 * thread's alone.
 */
static void *flow_storm(void *arg)
{
	struct fz_rng *r = arg;
	int k, pg, n, st;
	pid_t pid;

	for (k = 0; k < of.storm_n; k++) {
		pg = fz_below(r, FL_PAGES);
		n = 1 + fz_below(r, 3);
		if (pg + n > FL_PAGES)
			n = FL_PAGES - pg;
		if (pg <= FL_HOLE && pg + n > FL_HOLE)
			n = FL_HOLE - pg;
		if (n <= 0)
			continue;
		if (fz_below(r, 6)) {
			int j;

			storm_pages(r, of.t, FL_PAGES, pg, n, 1ull << FL_HOLE,
				    of.scratch);
			for (j = pg; j < pg + n; j++)
				of.touched[j] = 1;
			usleep(fz_below(r, 500));
			continue;
		}
		/*
		 * A fork: the child's copy of T must stay as it was at the
		 * fork, whatever the device writes into the parent's from now
		 * on (after copy on write, into pages of the parent's own).
		 */
		pid = fork();
		if (!pid) {
			int j, bad = 0;

			memcpy(of.snap, of.t, FL_HOLE * PAGE);
			usleep(20000);
			for (j = 0; j < FL_HOLE * PAGE; j++)
				bad |= of.snap[j] != of.t[j];
			_exit(bad ? 7 : 0);
		}
		if (pid < 0)
			continue;
		tot(T_FORK);
		if (!fz_wait_child(pid, &st, 10) && WIFEXITED(st) &&
		    WEXITSTATUS(st) == 7)
			odp_bad("after fork(), the device wrote into the child's copy of ODP memory");
	}
	return NULL;
}

/*
 * Check one region of the flow against what it must hold: unchanged but
 * where @lo..@hi (bytes of the operation's own range, @exp what it must
 * hold there or NULL: anything) lies; T's pages the storm touched taken as
 * they are.  Returns the bytes wrong; the region's shadow is what it holds.
 */
static long fl_check(int w, size_t size, size_t lo, size_t hi,
		     const uint8_t *exp, const char *what)
{
	uint8_t *mem = fl_mem(w), *sh = fl_sh(w);
	long bad = 0;
	size_t j;

	for (j = 0; j < size; j++) {
		if (w == W_T && j / PAGE == FL_HOLE) {
			j += PAGE - 1;
			continue;
		}
		if (w == W_T && fl_t_page_unknown(j)) {
			sh[j] = mem[j];
			continue;
		}
		if (j >= lo && j < hi) {
			if (exp && exp[j - lo] != mem[j] && !bad++)
				odp_bad("%s: %s byte %zu is %#x, not %#x",
					what, w == W_T ? "ODP" : w == W_S ?
					"local" : "DM", j, mem[j],
					exp[j - lo]);
			sh[j] = mem[j];
			continue;
		}
		if (mem[j] != sh[j] && !bad++)
			odp_bad("%s: %s byte %zu outside the operation's range changed: %#x, was %#x",
				what, w == W_T ? "ODP" : w == W_S ? "local" :
				"DM", j, mem[j], sh[j]);
		sh[j] = mem[j];
	}
	return bad;
}

/*
 * advise_mr on the flow's MRs, storm over: a prefetch of a mapped range of
 * T's ODP MR, synchronous, must work; of T's range across the hole must
 * not (the fault fails); a pinned MR's, another PD's ODP MR's or a dead
 * key must be refused.
 */
static void flow_advise(void)
{
	uint32_t off = fz_below(R, FL_HOLE * PAGE - 8), len;
	struct ibv_sge sge;
	int kind = fz_below(R, 5), ret;

	len = 1 + fz_below(R, FL_HOLE * PAGE - off);
	sge.addr = (uintptr_t)of.t + off;
	sge.length = len;
	sge.lkey = of.tmr->lkey;
	switch (kind) {
	case 1:
		sge.addr = (uintptr_t)of.t + FL_HOLE * PAGE - 8;
		sge.length = 16;
		break;
	case 2:
		if (of.s_odp)
			kind = 0;
		sge.addr = (uintptr_t)of.s;
		sge.lkey = of.smr->lkey;
		break;
	case 3:
		sge.lkey = of.tother->lkey;
		break;
	case 4:
		sge.lkey = of.dead;
		break;
	}
	ret = ibv_advise_mr(of.pd, fz_one_in(R, 2) ?
			    IBV_ADVISE_MR_ADVICE_PREFETCH_WRITE :
			    IBV_ADVISE_MR_ADVICE_PREFETCH,
			    IBV_ADVISE_MR_FLAG_FLUSH, &sge, 1);
	tot(ret ? T_ADVISE_REFUSED : T_ADVISE_OK);
	if (!kind && ret)
		odp_bad("advise_mr of mapped memory of an ODP MR failed: %s",
			strerror(ret));
	if (kind && !ret)
		odp_bad("advise_mr of %s succeeded", kind == 1 ?
			"a range across unmapped memory" : kind == 2 ?
			"a pinned MR" : kind == 3 ? "another PD's MR" :
			"a deregistered MR");
}

/* S's MR switched between ODP and pinned (rereg_mr), or made again. */
static void flow_rereg_s(void)
{
	int acc = IBV_ACCESS_LOCAL_WRITE |
		  (of.s_odp ? 0 : IBV_ACCESS_ON_DEMAND);

	if (!ibv_rereg_mr(of.smr, IBV_REREG_MR_CHANGE_ACCESS, NULL, NULL, 0,
			  acc)) {
		of.s_odp = !of.s_odp;
		tot(T_REREG_ODP);
		return;
	}
	ibv_dereg_mr(of.smr);
	of.smr = ibv_reg_mr(of.pd, of.s, FL_LEN, acc);
	of.s_odp = !of.s_odp;
	if (!of.smr) {
		of.broken = 1;
		of.ready = 0;
	}
}

/*
 * Poll for @a's completion (and @b's receive for a SEND) within @ms.
 * Returns 1 once they are there, or after an error completion of either
 * and up to half a second for the other (which may never come), 0 if time
 * ran out first.
 */
static int flow_wait(struct ibv_qp *a, struct ibv_qp *b, int send,
		     struct ibv_wc *wa, struct ibv_wc *wb, int ms)
{
	double end = fz_now() + ms / 1e3;
	int have_a = 0, have_b = !send, err = 0;
	struct ibv_wc wc;

	while ((!have_a || !have_b) && fz_now() < end) {
		if (ibv_poll_cq(of.cq, 1, &wc) <= 0) {
			usleep(100);
			continue;
		}
		if (wc.qp_num == a->qp_num && !have_a) {
			*wa = wc;
			have_a = 1;
		} else if (wc.qp_num == b->qp_num && !have_b) {
			*wb = wc;
			have_b = 1;
		} else {
			continue;
		}
		if (wc.status != IBV_WC_SUCCESS && !err) {
			err = 1;
			if (end > fz_now() + 0.5)
				end = fz_now() + 0.5;
		}
	}
	return err || (have_a && have_b);
}

/* A status that says the transport gave up (a loaded host), no more. */
static int transport_gave_up(enum ibv_wc_status st)
{
	return st == IBV_WC_RETRY_EXC_ERR || st == IBV_WC_RNR_RETRY_EXC_ERR ||
	       st == IBV_WC_WR_FLUSH_ERR;
}

static void op_odp_flow(void)
{
	/* 1 write, 2 read, 4 atomic */
	static const int rights[K_DEAD + 1] = {
		[K_T] = 7, [K_IMPLICIT] = 7, [K_DM] = 7, [K_T_RO] = 2,
	};
	static const char *const op_name[] = {
		"WRITE", "READ", "SEND", "FETCH_ADD", "CMP_SWP",
	};
	static const char *const key_name[] = {
		"the ODP MR's", "the implicit MR's", "the DM MR's",
		"the read-only ODP MR's", "another PD's ODP MR's",
		"another PD's DM MR's", "a dead",
	};
	int op = fz_below(R, 5), key = fz_below(R, 10), send, atomic, pg;
	int remote, local, granted, ok, hole, done, need, slow, known = 1;
	int via_srq;
	struct ibv_qp *qa, *qb;
	enum ibv_wc_status why;
	uint8_t src[16 << 10], e[8];
	uint32_t len, rkey, rlkey;
	size_t roff, loff, rsize, j;
	struct ibv_sge sge, rs;
	struct ibv_send_wr wr = { .sg_list = &sge, .num_sge = 1,
				  .send_flags = IBV_SEND_SIGNALED }, *bad;
	struct ibv_recv_wr rwr = { .sg_list = &rs, .num_sge = 1 }, *brw;
	struct ibv_wc wa = { .status = IBV_WC_GENERAL_ERR }, wb = wa;
	struct fz_rng storm_rng;
	uint64_t old = 0, cmp = 0, add = 0, nw;
	pthread_t th;
	long wrong = 0;
	char what[256];

	if (!of.ready && flow_init())
		return;
	if (!of.connected || fz_qp_state(of.a) != IBV_QPS_RTS ||
	    fz_qp_state(of.b) != IBV_QPS_RTS)
		flow_connect();
	if (!of.connected)
		return;
	if (fz_one_in(R, 8)) {
		flow_advise();
		return;
	}
	if (fz_one_in(R, 32)) {
		flow_rereg_s();
		return;
	}
	/* op: 0 WRITE, 1 READ, 2 SEND, 3 FETCH_ADD, 4 CMP_SWP */
	send = op == 2;
	atomic = op >= 3;
	/* A third of the SENDs go by the SRQ pair, from its pinned buffer. */
	via_srq = send && of.c && fz_one_in(R, 3);
	if (via_srq && (!of.cd_connected || fz_qp_state(of.c) != IBV_QPS_RTS ||
			fz_qp_state(of.d) != IBV_QPS_RTS))
		flow_connect_cd();
	if (via_srq && !of.cd_connected)
		return;
	qa = via_srq ? of.d : of.a;
	qb = via_srq ? of.c : of.b;
	key = key < 4 ? K_T : key < 5 ? K_IMPLICIT : key < 7 ? K_DM :
	      key < 8 ? K_T_RO : key < 9 ? (fz_one_in(R, 2) ? K_T_OTHER :
					    K_DM_OTHER) : K_DEAD;
	remote = key == K_DM || key == K_DM_OTHER ? W_M : W_T;
	local = fz_one_in(R, 4) ? W_M : W_S;
	rsize = remote == W_T ? FL_PAGES * PAGE : FL_LEN / 2;
	len = atomic ? 8 : 1 + fz_below(R, fz_one_in(R, 4) ? sizeof(src) :
					    2 * PAGE);
	roff = fz_below(R, rsize - len + 1);
	/* Now and then right up to, into or across the hole. */
	if (remote == W_T && fz_one_in(R, 4))
		roff = FL_HOLE * PAGE - fz_below(R, len < PAGE ? len : PAGE) +
		       (fz_one_in(R, 4) ? PAGE / 2 : 0);
	if (atomic)
		roff &= ~7ull;
	loff = (local == W_M ? FL_LEN / 2 : 0) +
	       (fz_below(R, FL_LEN / 2 - len + 1) & (atomic ? ~7u : ~0u));
	hole = remote == W_T && roff < (FL_HOLE + 1) * PAGE &&
	       roff + len > FL_HOLE * PAGE;
	rkey = key == K_T ? of.tmr->rkey : key == K_IMPLICIT ? of.timp->rkey :
	       key == K_DM ? of.dmr->rkey : key == K_T_RO ? of.tro->rkey :
	       key == K_T_OTHER ? of.tother->rkey :
	       key == K_DM_OTHER ? of.dother->rkey : of.dead;
	rlkey = key == K_T ? of.tmr->lkey : key == K_IMPLICIT ?
		of.timp->lkey : key == K_DM ? of.dmr->lkey :
		key == K_T_RO ? of.tro->lkey : key == K_T_OTHER ?
		of.tother->lkey : key == K_DM_OTHER ? of.dother->lkey :
		of.dead;
	/*
	 * What the key and B must grant: a receive needs B's own PD and
	 * LOCAL_WRITE (the read-only MR has none), the rest the remote right.
	 */
	need = op == 0 ? 1 : op == 1 ? 2 : 4;
	if (send)
		granted = key == K_T || key == K_IMPLICIT || key == K_DM;
	else
		granted = (rights[key] & need) &&
			  (of.b_acc & (need == 1 ? IBV_ACCESS_REMOTE_WRITE :
				       need == 2 ? IBV_ACCESS_REMOTE_READ :
				       IBV_ACCESS_REMOTE_ATOMIC));

	/* A page of S dropped now and then: it sends zeros. */
	if (local == W_S && of.s_odp && fz_one_in(R, 8)) {
		pg = loff / PAGE;
		madvise(of.s + pg * PAGE, PAGE, MADV_DONTNEED);
		memset(of.ss + pg * PAGE, 0, PAGE);
	}
	/* The source's bytes, as the flow knows them. */
	memcpy(src, op == 1 ? fl_sh(remote) + roff : fl_sh(local) + loff, len);
	if (via_srq) {
		fz_bytes(R, of.dbuf + loff, len);
		memcpy(src, of.dbuf + loff, len);
	}
	if (atomic) {
		memcpy(&old, fl_sh(remote) + roff, 8);
		cmp = fz_one_in(R, 2) ? old : fz_u64(R);
		add = fz_u64(R);
	}

	sge.addr = local == W_M ? loff : (uintptr_t)of.s + loff;
	sge.length = len;
	sge.lkey = local == W_M ? of.dmr->lkey : of.smr->lkey;
	if (via_srq) {
		sge.addr = (uintptr_t)of.dbuf + loff;
		sge.lkey = of.dbmr->lkey;
	}
	if (send) {
		rs.addr = remote == W_M ? roff : (uintptr_t)of.t + roff;
		rs.length = len;
		rs.lkey = rlkey;
		if (via_srq ? ibv_post_srq_recv(of.srq, &rwr, &brw) :
			      ibv_post_recv(of.b, &rwr, &brw)) {
			of.connected = 0;
			return;
		}
	}
	wr.opcode = (enum ibv_wr_opcode[]){ IBV_WR_RDMA_WRITE,
		IBV_WR_RDMA_READ, IBV_WR_SEND, IBV_WR_ATOMIC_FETCH_AND_ADD,
		IBV_WR_ATOMIC_CMP_AND_SWP }[op];
	wr.wr.rdma.remote_addr = remote == W_M ? roff :
				 (uintptr_t)of.t + roff;
	wr.wr.rdma.rkey = rkey;
	if (atomic) {
		wr.wr.atomic.remote_addr = remote == W_M ? roff :
					   (uintptr_t)of.t + roff;
		wr.wr.atomic.rkey = rkey;
		wr.wr.atomic.compare_add = op == 3 ? add : cmp;
		wr.wr.atomic.swap = add;
	}

	/* The storm, while the operation runs. */
	memset(of.touched, 0, sizeof(of.touched));
	of.storm_n = fz_below(R, 4) ? fz_below(R, 4) : 0;
	fz_seed(&storm_rng, fz_u64(R));
	if (of.storm_n && pthread_create(&th, NULL, flow_storm, &storm_rng))
		of.storm_n = 0;
	slow = getenv("VRDMA_TEST_SLOW") ? atoi(getenv("VRDMA_TEST_SLOW")) : 1;
	done = !ibv_post_send(qa, &wr, &bad) &&
	       flow_wait(qa, qb, send, &wa, &wb, 5000 * (slow > 1 ? slow : 1));
	if (of.storm_n)
		pthread_join(th, NULL);
	if (!done) {
		/*
		 * No answer in time (a slow host, or the QPs broken): once
		 * destroyed they write nothing more, and the regions are
		 * taken as they are.
		 */
		flow_new_qps();
		if (via_srq)
			flow_new_srq_pair();
		if (ibv_memcpy_from_dm(of.ms, of.dm, 0, FL_DMLEN))
			of.broken = 1;
		memcpy(of.ss, of.s, FL_LEN);
		for (pg = 0; pg < FL_PAGES; pg++)
			if (pg != FL_HOLE)
				memcpy(of.ts + pg * PAGE, of.t + pg * PAGE,
				       PAGE);
		return;
	}
	ok = wa.status == IBV_WC_SUCCESS &&
	     (!send || wb.status == IBV_WC_SUCCESS);
	/* The responder's status says more (the requester's is a NAK's). */
	why = send && wb.status != IBV_WC_SUCCESS ? wb.status : wa.status;
	if (!ok && via_srq) {
		/* Stopped, and the SRQ without a receive left over. */
		flow_new_srq_pair();
		tot(T_FLOW_ERR);
	} else if (!ok) {
		/* Both in RESET before the regions are read: nothing lands. */
		flow_connect();
		tot(T_FLOW_ERR);
	}
	snprintf(what, sizeof(what),
		 "%s of %u bytes at %s offset %zu, local %s offset %zu, %s key, B's rights %#x: %s (requester %s)",
		 op_name[op], len, remote == W_T ? "ODP" : "DM", roff,
		 via_srq ? "pinned (through an SRQ of the ODP PD)" :
		 local == W_S ? "ODP" : "DM", loff, key_name[key], of.b_acc,
		 ok ? "success" : ibv_wc_status_str(why),
		 ibv_wc_status_str(wa.status));
	if (ok && !granted)
		odp_bad("%s, though not granted", what);
	if (ok && hole)
		odp_bad("%s, across unmapped memory", what);
	/*
	 * Granted, on memory that is mapped and that nothing changed
	 * meanwhile: nothing but the transport giving up may fail it.
	 */
	if (!ok && granted && !hole && !of.storm_n &&
	    !transport_gave_up(wa.status) && !transport_gave_up(wb.status)) {
		/* Counted apart: one defect would hide the others. */
		if (via_srq)
			__atomic_add_fetch(&board->bad_srq, 1,
					   __ATOMIC_RELAXED);
		bad_srq = via_srq;
		odp_bad("%s, though granted, on mapped memory", what);
		bad_srq = 0;
	}
	if (!ok && hole && granted)
		tot(T_FLOW_HOLE);
	if (ibv_memcpy_from_dm(of.m, of.dm, 0, FL_DMLEN)) {
		of.broken = 1;
		of.ready = 0;
		return;
	}
	/* The source's bytes known if no storm touched them. */
	for (j = roff; remote == W_T && (op == 1 || atomic) &&
	     j < roff + len; j++)
		known &= !fl_t_page_unknown(j);
	if (op == 1) {		/* READ: into the local range */
		wrong += fl_check(local, FL_LEN, loff, loff + len,
				  ok && known ? src : NULL, what);
		wrong += fl_check(remote, rsize, 0, 0, NULL, what);
	} else if (atomic) {	/* the remote word, the original locally */
		nw = op == 3 ? old + add : old == cmp ? add : old;
		memcpy(e, &nw, 8);
		wrong += fl_check(remote, rsize, roff,
				  ok || granted ? roff + 8 : 0,
				  ok && known ? e : NULL, what);
		memcpy(e, &old, 8);
		wrong += fl_check(local, FL_LEN, loff, ok ? loff + 8 : 0,
				  ok && known ? e : NULL, what);
	} else {		/* WRITE, SEND: into the remote range */
		wrong += fl_check(remote, rsize, roff,
				  ok || granted ? roff + len : 0,
				  ok ? src : NULL, what);
		wrong += fl_check(local, FL_LEN, 0, 0, NULL, what);
	}
	/* The rest: not touched at all. */
	if (remote != W_T)
		wrong += fl_check(W_T, FL_PAGES * PAGE, 0, 0, NULL, what);
	if (local != W_M && remote != W_M)
		wrong += fl_check(W_M, FL_LEN, 0, 0, NULL, what);
	if (local != W_S)
		wrong += fl_check(W_S, FL_LEN, 0, 0, NULL, what);
	if (memcmp(of.m, of.ms, FL_DMOFF)) {
		odp_bad("%s: DM bytes before its MR changed", what);
		wrong++;
	}
	memcpy(of.ms, of.m, FL_DMLEN);
	if (ok && !wrong) {
		tot(T_FLOW_OK);
		if (remote == W_M || local == W_M)
			tot(T_FLOW_DM);
	}
}

/* ---- dma-bufs --------------------------------------------------------- */

/*
 * The DRM ioctls that make a vgem buffer and export it (as dmabuf_test.c:
 * include/uapi/drm/drm.h and drm_mode.h).
 */
struct fz_drm_version {
	int major, minor, patchlevel;
	size_t name_len;
	char *name;
	size_t date_len;
	char *date;
	size_t desc_len;
	char *desc;
};

struct fz_drm_create_dumb {
	uint32_t height, width, bpp, flags;
	uint32_t handle, pitch;
	uint64_t size;
};

struct fz_drm_prime_handle {
	uint32_t handle, flags;
	int32_t fd;
};

struct fz_drm_gem_close {
	uint32_t handle, pad;
};

#define FZ_DRM_IOCTL_VERSION		_IOWR('d', 0x00, struct fz_drm_version)
#define FZ_DRM_IOCTL_GEM_CLOSE		_IOW('d', 0x09, struct fz_drm_gem_close)
#define FZ_DRM_IOCTL_PRIME_HANDLE_TO_FD	_IOWR('d', 0x2d, \
					      struct fz_drm_prime_handle)
#define FZ_DRM_IOCTL_MODE_CREATE_DUMB	_IOWR('d', 0xb2, \
					      struct fz_drm_create_dumb)

#define XB_N		3	/* the round's dma-bufs */
#define XB_PAGES	16

/*
 * A dma-buf of the pool, and what the fuzzer knows of its bytes: @sh what
 * it holds as last seen through the CPU mapping, @dirty the bytes an MR
 * that may write covers (1: until the next check, 2: for good, under an MR
 * whose handle the kernel kept but never told).  Any other byte that
 * changes was written outside every MR's range.  A slot whose fd is
 * closed and whose mapping is gone gets a new buffer (@gen + 1); the MRs
 * on the old one live on.
 */
static struct xbuf {
	int fd;			/* the dma-buf, -1 once closed */
	uint8_t *map;		/* its CPU mapping, NULL once unmapped */
	size_t size;
	int rdwr;		/* exported O_RDWR, else read-only */
	unsigned int gen;
	uint8_t *sh, *dirty;
} xb[XB_N];

static int have_vgem;	/* main found vgem: the rounds make dma-bufs */
static int xb_closed = -1;	/* a dma-buf's fd number, closed */

#define WRITABLE	(IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE | \
			 IBV_ACCESS_REMOTE_ATOMIC | IBV_ACCESS_MW_BIND)

/* vgem's card node, or -1. */
static int vgem_card(void)
{
	char path[32], name[16];
	int i, fd;

	for (i = 0; i < 16; i++) {
		struct fz_drm_version v = {
			.name_len = sizeof(name) - 1, .name = name,
		};

		snprintf(path, sizeof(path), "/dev/dri/card%d", i);
		fd = open(path, O_RDWR | O_CLOEXEC);
		if (fd < 0)
			continue;
		memset(name, 0, sizeof(name));
		if (!ioctl(fd, FZ_DRM_IOCTL_VERSION, &v) && !strcmp(name, "vgem"))
			return fd;
		close(fd);
	}
	return -1;
}

/* Bracket CPU access to a dma-buf, as its API asks. */
static void xb_sync(struct xbuf *b, int end)
{
	struct dma_buf_sync s = {
		.flags = DMA_BUF_SYNC_RW |
			 (end ? DMA_BUF_SYNC_END : DMA_BUF_SYNC_START),
	};

	if (b->fd >= 0)
		ioctl(b->fd, DMA_BUF_IOCTL_SYNC, &s);
}

/*
 * A new vgem buffer in slot @k: one in three exported read-only (it stays
 * zero: nothing may ever write it), the others filled with random bytes.
 */
static void xb_new(int k)
{
	struct xbuf *b = &xb[k];
	struct fz_drm_create_dumb c = {
		.height = XB_PAGES, .width = 1024, .bpp = 32,
	};
	struct fz_drm_prime_handle h = { .flags = O_CLOEXEC };
	int card = vgem_card();

	b->fd = -1;
	b->map = NULL;
	b->gen++;
	if (card < 0)
		return;
	if (ioctl(card, FZ_DRM_IOCTL_MODE_CREATE_DUMB, &c) || !c.size) {
		close(card);
		return;
	}
	b->rdwr = !fz_one_in(R, 3);
	h.handle = c.handle;
	if (b->rdwr)
		h.flags |= O_RDWR;
	if (!ioctl(card, FZ_DRM_IOCTL_PRIME_HANDLE_TO_FD, &h))
		b->fd = h.fd;
	/* The dma-buf holds the object. */
	ioctl(card, FZ_DRM_IOCTL_GEM_CLOSE,
	      &(struct fz_drm_gem_close){ .handle = c.handle });
	close(card);
	b->size = c.size;
	b->sh = realloc(b->sh, b->size);
	b->dirty = realloc(b->dirty, b->size);
	if (b->fd < 0 || !b->sh || !b->dirty) {
		if (b->fd >= 0)
			close(b->fd);
		b->fd = -1;
		return;
	}
	memset(b->dirty, 0, b->size);
	b->map = mmap(NULL, b->size, PROT_READ | (b->rdwr ? PROT_WRITE : 0),
		      MAP_SHARED, b->fd, 0);
	if (b->map == MAP_FAILED) {
		b->map = NULL;
		return;
	}
	xb_sync(b, 0);
	if (b->rdwr)
		fz_bytes(R, b->map, b->size);
	memcpy(b->sh, b->map, b->size);
	xb_sync(b, 1);
}

/* The slot of xb[] whose fd is @fd, or -1. */
static int xb_by_fd(int fd)
{
	int k;

	for (k = 0; k < XB_N && fd >= 0; k++)
		if (xb[k].fd == fd)
			return k;
	return -1;
}

/* Bytes @off..@off + @len of slot @k's buffer of generation @gen: dirty. */
static void xb_mark(int k, unsigned int gen, uint64_t off, uint64_t len,
		    int how)
{
	struct xbuf *b = k < 0 ? NULL : &xb[k];
	uint64_t j;

	/* A read-only buffer never changes, whoever took what rights. */
	if (!b || b->gen != gen || !b->dirty || !b->rdwr)
		return;
	for (j = off; j < b->size && j - off < len; j++)
		if (b->dirty[j] < how)
			b->dirty[j] = how;
}

/*
 * What pool MR @i may write (all it was ever granted), marked dirty; never
 * in a read-only buffer, whatever the MR was granted.
 */
static void xb_mark_mr(int i)
{
	if (p.mr[i] && p.mr_kind[i] == MK_DMABUF && p.mr_xacc[i] & WRITABLE &&
	    p.mr_xb[i] >= 0 && xb[p.mr_xb[i]].rdwr)
		xb_mark(p.mr_xb[i], p.mr_xgen[i], p.mr_xoff[i],
			p.mr[i]->length, 1);
}

/*
 * Check slot @k's buffer through its CPU mapping: bytes @lo..@hi are the
 * checked flow's operation's (@exp what they must hold, or NULL: anything),
 * every other byte is as last seen unless an MR that may write covers it.
 * Then what it holds is what was seen, and the pool's MRs that may write
 * mark their ranges again.  Returns the bytes wrong.
 */
static long xb_check(int k, size_t lo, size_t hi, const uint8_t *exp,
		     const char *what)
{
	struct xbuf *b = &xb[k];
	long bad = 0;
	size_t j;
	int i;

	if (!b->map)
		return 0;
	xb_sync(b, 0);
	for (j = 0; j < b->size; j++) {
		uint8_t v = b->map[j];

		if (j >= lo && j < hi) {
			if (exp && !b->dirty[j] && exp[j - lo] != v && !bad++)
				odp_bad("%s: dma-buf byte %zu is %#x, not %#x",
					what, j, v, exp[j - lo]);
		} else if (v != b->sh[j] && !b->dirty[j] && !bad++) {
			odp_bad("%s: byte %zu of a %s dma-buf changed (%#x, was %#x), outside every MR that may write it",
				what, j, b->rdwr ? "read-write" : "read-only",
				v, b->sh[j]);
		}
		b->sh[j] = v;
		if (b->dirty[j] == 1)
			b->dirty[j] = 0;
	}
	xb_sync(b, 1);
	for (i = 0; i < POOL; i++)
		xb_mark_mr(i);
	tot(T_XB_CHECK);
	return bad;
}

/*
 * Would the kernel take a dma-buf MR over @off, @len at @iova of the
 * buffer behind @fd, with @acc?  Only the range, the fd and the rights to
 * a read-only buffer are judged here: 0 if it must refuse.
 */
static int xb_may_take(int fd, uint64_t off, uint64_t len, uint64_t iova,
		       int acc)
{
	int k = xb_by_fd(fd);

	return k >= 0 && len && off + len >= off && off + len <= xb[k].size &&
	       iova + len > iova && (iova & 0xfff) == (off & 0xfff) &&
	       !(!xb[k].rdwr && acc & WRITABLE);
}

/* Rights that make sense (some of them write). */
static const int xb_rights[] = {
	IBV_ACCESS_REMOTE_READ, 0, IBV_ACCESS_LOCAL_WRITE,
	IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE,
	IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_READ |
	IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_ATOMIC,
	IBV_ACCESS_REMOTE_READ | IBV_ACCESS_MW_BIND,
};

#define XB_RIGHTS	(int)(sizeof(xb_rights) / sizeof(xb_rights[0]))

/* A slot of the MR pool holding a dma-buf MR, or -1. */
static int any_xb_slot(void)
{
	int i, s = fz_below(R, POOL);

	for (i = 0; i < POOL; i++)
		if (p.mr[(s + i) % POOL] && p.mr_kind[(s + i) % POOL] ==
		    MK_DMABUF)
			return (s + i) % POOL;
	return -1;
}

/*
 * IB_USER_VERBS_CMD_REREG_MR by the write() ABI (libibverbs refuses
 * rereg_mr for a dma-buf MR itself), its response to @resp.  Returns 0 or
 * the errno.
 */
static int raw_rereg(struct ibv_mr *mr, uint32_t flags, uint32_t pd_handle,
		     uint32_t access, uint64_t start, uint64_t len,
		     uint64_t iova, uint64_t resp)
{
	struct {
		struct ib_uverbs_cmd_hdr hdr;
		struct ib_uverbs_rereg_mr cmd;
	} req;

	memset(&req, 0, sizeof(req));
	req.hdr.command = IB_USER_VERBS_CMD_REREG_MR;
	req.hdr.in_words = sizeof(req) / 4;
	req.hdr.out_words = sizeof(struct ib_uverbs_rereg_mr_resp) / 4;
	req.cmd.response = resp;
	req.cmd.mr_handle = mr->handle;
	req.cmd.flags = flags;
	req.cmd.start = start;
	req.cmd.length = len;
	req.cmd.hca_va = iova;
	req.cmd.pd_handle = pd_handle;
	req.cmd.access_flags = access;
	if (write(p.ctx->cmd_fd, &req, sizeof(req)) == sizeof(req))
		return 0;
	return errno;
}

/*
 * Raw REREG_MR of dma-buf MR @i with random flags, PDs (the pool's, other
 * objects' handles), rights and ranges.  Whatever else is wrong, a new
 * translation must never be taken, nor rights that write into a buffer
 * exported read-only; a request right but for those must be refused with
 * EOPNOTSUPP and EACCES, and one without them taken (or EBUSY: windows
 * are bound).
 */
static void xb_rereg(int i)
{
	struct ib_uverbs_rereg_mr_resp resp;
	struct ibv_mr *mr = p.mr[i];
	struct ibv_pd *pd = ANY(p.pd);
	struct ibv_cq *cq = ANY(p.cq);
	int k = p.mr_xb[i], ro, clean, err, want, good_resp = !fz_one_in(R, 8);
	uint32_t flags, acc, h;
	uint64_t start, len, iova;
	char what[160];

	ro = k >= 0 && xb[k].gen == p.mr_xgen[i] ? !xb[k].rdwr : 0;
	/* The buffer's export mode goes with the MR, whatever the slot. */
	if (k >= 0 && xb[k].gen != p.mr_xgen[i])
		return;
	/* Mostly a new PD or rights, in place. */
	flags = fz_below(R, 2) ? 2 + 2 * fz_below(R, 3) :
		fz_below(R, 4) ? 1 + fz_below(R, 7) : fz_u32(R);
	acc = fz_below(R, 4) ? xb_rights[fz_below(R, XB_RIGHTS)] :
	      (uint32_t)any_access();
	h = pd && fz_below(R, 4) ? pd->handle : cq && fz_one_in(R, 2) ?
	    cq->handle : fz_interesting32(R);
	start = (uintptr_t)p.mem + fz_below(R, MEM_PAGES * PAGE);
	len = 1 + fz_below(R, 4 * PAGE);
	iova = fz_one_in(R, 4) ? fz_u64(R) : start;
	clean = flags && !(flags & ~7u) &&
		(!(flags & IBV_REREG_MR_CHANGE_TRANSLATION) ||
		 (start && iova && (start & 0xfff) == (iova & 0xfff))) &&
		(!(flags & IBV_REREG_MR_CHANGE_PD) ||
		 (pd && h == pd->handle)) &&
		(!(flags & IBV_REREG_MR_CHANGE_ACCESS) ||
		 (!(acc & ~(uint32_t)(WRITABLE | IBV_ACCESS_REMOTE_READ)) &&
		  (!(acc & (IBV_ACCESS_REMOTE_WRITE |
			    IBV_ACCESS_REMOTE_ATOMIC)) ||
		   acc & IBV_ACCESS_LOCAL_WRITE))) && good_resp;
	err = raw_rereg(mr, flags, h, acc, start, len, iova,
			good_resp ? (uintptr_t)&resp : raw_resp(sizeof(resp)));
	/* Taken, or perhaps taken with its response lost: rights and all. */
	if (flags & IBV_REREG_MR_CHANGE_ACCESS && (!err || !good_resp)) {
		p.mr_xacc[i] |= acc;
		xb_mark_mr(i);
	}
	snprintf(what, sizeof(what),
		 "REREG_MR of a dma-buf MR (%s buffer), flags %#x, rights %#x",
		 ro ? "read-only" : "read-write", flags, acc);
	if (!err && flags & IBV_REREG_MR_CHANGE_TRANSLATION)
		odp_bad("%s: took a new translation", what);
	if (!err && ro && flags & IBV_REREG_MR_CHANGE_ACCESS &&
	    acc & WRITABLE)
		odp_bad("%s: took rights that write", what);
	if (clean) {
		want = ro && flags & IBV_REREG_MR_CHANGE_ACCESS &&
		       acc & WRITABLE ? EACCES :
		       flags & IBV_REREG_MR_CHANGE_TRANSLATION ? EOPNOTSUPP : 0;
		if (err != want && !(!want && err == EBUSY))
			odp_bad("%s: %s, not %s", what,
				err ? strerror(err) : "taken",
				want ? strerror(want) : "taken");
	}
	tot(err ? T_XB_REREG_REFUSED : T_XB_REREG);
	if (!err && flags & IBV_REREG_MR_CHANGE_PD && pd && h == pd->handle)
		mr->pd = pd;
}

/* Raw REREG_MR of a dma-buf MR of the pool. */
static void op_xb_rereg(void)
{
	int i = any_xb_slot();

	if (i >= 0)
		xb_rereg(i);
}

/*
 * dma-buf MRs into the MR pool: over a buffer of the pool (read-write or
 * exported read-only; its fd maybe closed, its mapping maybe gone), or an
 * fd that is closed, no dma-buf or random; at random offsets (inside,
 * across and past the end, wrapping), lengths (0, huge), IOVAs (at the
 * offset's place in a page or not) and rights (ON_DEMAND too).  The
 * kernel must refuse what is out of range and rights that write into a
 * read-only buffer.  Or an MR of the pool deregistered (WRs may be using
 * it), or a dma-buf MR given to raw REREG_MR.
 */
static void op_xb_mr(void)
{
	int i = SLOT(p.mr), k = fz_below(R, XB_N), fd, acc, b;
	struct ibv_pd *pd = ANY(p.pd);
	uint64_t off, len, iova, size;
	struct ibv_mr *mr;

	if (!have_vgem)
		return;
	if (p.mr[i]) {
		uint32_t key = p.mr[i]->rkey;

		if (p.mr_kind[i] == MK_DMABUF && fz_one_in(R, 2)) {
			xb_rereg(i);
			return;
		}
		if (!ibv_dereg_mr(p.mr[i])) {
			dead_key(key);
			mr_slot_set(i, NULL, 0, -1);
		}
		return;
	}
	if (!pd)
		return;
	if (xb[k].fd < 0 && !xb[k].map)
		xb_new(k);
	switch (fz_below(R, 10)) {
	case 7:
		fd = xb_closed;
		break;
	case 8:		/* no dma-buf */
		fd = fz_one_in(R, 2) ? p.ctx->cmd_fd : fz_one_in(R, 2) &&
		     p.ch ? p.ch->fd : 1;
		break;
	case 9:
		fd = (int)fz_interesting32(R);
		break;
	default:
		fd = xb[k].fd;
	}
	b = xb_by_fd(fd);
	size = b >= 0 ? xb[b].size : XB_PAGES * PAGE;
	switch (fz_below(R, 10)) {
	case 0:		/* across the end */
		off = fz_below(R, size);
		len = size - off + 1 + fz_below(R, 2 * PAGE);
		break;
	case 1:
		off = fz_below(R, size);
		len = 0;
		break;
	case 2:		/* past the end */
		off = fz_one_in(R, 2) ? size + fz_below(R, PAGE) : fz_u64(R);
		len = 1 + fz_below(R, PAGE);
		break;
	case 3:		/* wrapping, huge */
		off = fz_u64(R);
		len = fz_one_in(R, 2) ? fz_u64(R) :
		      (uint64_t)0 - off + fz_below(R, 2 * PAGE);
		break;
	case 4:
		off = 0;
		len = size;
		break;
	default:
		off = fz_below(R, size);
		len = 1 + fz_below(R, size - off);
	}
	switch (fz_below(R, 6)) {
	case 0:		/* another place in the page */
		iova = fz_u64(R);
		break;
	case 1:		/* wrapping */
		iova = (~0ull & ~0xfffull) | (off & 0xfff);
		break;
	case 2: case 3:
		iova = off;
		break;
	default:
		iova = (fz_u64(R) & 0xffffffffff000ull) | (off & 0xfff);
	}
	acc = b >= 0 && !xb[b].rdwr && fz_below(R, 2) ?
	      (fz_one_in(R, 2) ? IBV_ACCESS_REMOTE_READ : 0) :
	      fz_below(R, 2) ? xb_rights[fz_below(R, XB_RIGHTS)] :
	      fz_below(R, 3) ? any_access() & ~IBV_ACCESS_ON_DEMAND :
	      any_access();
	mr = ibv_reg_dmabuf_mr(pd, off, len, iova, fd, acc);
	if (mr && !xb_may_take(fd, off, len, iova, acc))
		odp_bad("ibv_reg_dmabuf_mr() took %llu bytes at %llu (IOVA %#llx) of fd %d (%s, %zu bytes), rights %#x",
			(unsigned long long)len, (unsigned long long)off,
			(unsigned long long)iova, fd,
			b < 0 ? "no dma-buf of the pool" : xb[b].rdwr ?
			"read-write" : "read-only", b < 0 ? 0 : xb[b].size,
			acc);
	if (!mr) {
		tot(T_XB_REFUSED);
		return;
	}
	tot(T_XB_MR);
	mr_slot_set(i, mr, MK_DMABUF, -1);
	p.mr_xb[i] = b;
	p.mr_xgen[i] = b >= 0 ? xb[b].gen : 0;
	p.mr_xoff[i] = off;
	p.mr_xiova[i] = iova;
	p.mr_xacc[i] = acc;
	xb_mark_mr(i);
}

/*
 * A buffer of the pool: checked, its fd closed or its mapping unmapped
 * (the MRs on it live on, and go on moving data), or, once both are gone,
 * a new one in its slot.
 */
static void op_xb_drop(void)
{
	int k = fz_below(R, XB_N), i, used = 0;
	struct xbuf *b = &xb[k];

	if (!have_vgem)
		return;
	if (b->fd < 0 && !b->map) {
		xb_new(k);
		return;
	}
	if (b->map && fz_below(R, 2)) {
		xb_check(k, 0, 0, NULL, "the pool's traffic");
		return;
	}
	for (i = 0; i < POOL; i++)
		used |= p.mr[i] && p.mr_kind[i] == MK_DMABUF &&
			p.mr_xb[i] == k && p.mr_xgen[i] == b->gen;
	if (b->fd >= 0 && (!b->map || fz_one_in(R, 2))) {
		close(b->fd);
		xb_closed = b->fd;
		b->fd = -1;
	} else {
		xb_check(k, 0, 0, NULL, "the pool's traffic");
		munmap(b->map, b->size);
		b->map = NULL;
	}
	if (used)
		tot(T_XB_DROP);
}

/*
 * A well formed WR on a QP of the pool whose local SGE, remote range or
 * both are of the pool's dma-buf MRs (inside, across their ends): SEND,
 * WRITE, READ, atomics, or a receive; now and then one of the MRs is
 * deregistered at once, while the WR may be running.
 */
static void op_xb_post(void)
{
	struct ibv_qp *qp = ANY(p.qp);
	int li = any_xb_slot(), ri = any_xb_slot(), d;
	struct ibv_sge sge;
	struct ibv_send_wr wr = { .sg_list = &sge, .num_sge = 1 }, *bad;
	struct ibv_recv_wr rwr = { .sg_list = &sge, .num_sge = 1 }, *brw;
	uint64_t ra;
	int ok;

	if (!qp || qp->qp_type == IBV_QPT_UD ||
	    qp->qp_type == IBV_QPT_XRC_RECV || (li < 0 && ri < 0))
		return;
	if (li >= 0 && fz_below(R, 3)) {
		struct ibv_mr *mr = p.mr[li];

		sge.lkey = fz_one_in(R, 8) ? mr->rkey : mr->lkey;
		sge.addr = p.mr_xiova[li] + (fz_one_in(R, 4) ?
			   fz_below(R, mr->length + 16) :
			   fz_below(R, mr->length));
		sge.length = fz_one_in(R, 4) ? fz_below(R, mr->length + 16) :
			     1 + fz_below(R, mr->length + p.mr_xiova[li] -
					  sge.addr);
	} else {
		odp_sge(&sge);
	}
	if (fz_one_in(R, 4)) {
		rwr.wr_id = fz_u64(R);
		ok = !(qp->srq ? ibv_post_srq_recv(qp->srq, &rwr, &brw) :
			       ibv_post_recv(qp, &rwr, &brw));
	} else {
		if (ri >= 0 && fz_below(R, 4)) {
			ra = p.mr_xiova[ri] +
			     fz_below(R, p.mr[ri]->length + 8);
			wr.wr.rdma.rkey = p.mr[ri]->rkey;
		} else {
			ra = any_addr();
			wr.wr.rdma.rkey = any_key();
		}
		wr.wr_id = fz_u64(R);
		wr.send_flags = fz_below(R, 4) ? IBV_SEND_SIGNALED : 0;
		wr.opcode = (enum ibv_wr_opcode[]){ IBV_WR_SEND,
			IBV_WR_RDMA_WRITE, IBV_WR_RDMA_WRITE_WITH_IMM,
			IBV_WR_RDMA_READ, IBV_WR_ATOMIC_FETCH_AND_ADD,
			IBV_WR_ATOMIC_CMP_AND_SWP }[fz_below(R, 6)];
		wr.wr.rdma.remote_addr = ra;
		if (wr.opcode == IBV_WR_ATOMIC_FETCH_AND_ADD ||
		    wr.opcode == IBV_WR_ATOMIC_CMP_AND_SWP) {
			sge.length = 8;
			wr.wr.atomic.remote_addr = ra & ~7ull;
			wr.wr.atomic.rkey = wr.wr.rdma.rkey;
			wr.wr.atomic.compare_add = fz_u64(R);
			wr.wr.atomic.swap = fz_u64(R);
		}
		wr.qp_type.xrc.remote_srqn = any_srqn();
		ok = !ibv_post_send(qp, &wr, &bad);
	}
	if (!ok)
		return;
	tot(T_XB_POST);
	td_count_post(qp);
	/* Gone while the WR may be running. */
	d = fz_one_in(R, 2) ? li : ri;
	if (d >= 0 && fz_one_in(R, 4)) {
		uint32_t key = p.mr[d]->rkey;

		if (!ibv_dereg_mr(p.mr[d])) {
			dead_key(key);
			mr_slot_set(d, NULL, 0, -1);
		}
	}
}

/*
 * UVERBS_METHOD_REG_DMABUF_MR by raw RDMA_VERBS_IOCTL, as the provider
 * sends it, with garbage: attributes missing, repeated or unknown, of odd
 * lengths or flags; outputs (the keys) read-only, unmapped or NULL; the PD
 * handle of another type of object or random; random fds; ranges out of
 * the buffer; a wrong header.  What is taken is deregistered at once
 * (DEREG_MR by the write() ABI); the kernel must take no range it should
 * refuse.  An MR the kernel kept while failing to write its keys stays
 * unknown: its range counts as written for good.
 */
static void op_xb_raw(void)
{
	struct {
		struct ib_uverbs_ioctl_hdr hdr;
		struct ib_uverbs_attr attrs[11];
	} cmd;
	struct {
		struct ib_uverbs_cmd_hdr hdr;
		struct ib_uverbs_dereg_mr cmd;
	} dereg;
	struct ib_uverbs_attr *a = cmd.attrs;
	struct ibv_pd *pd = ANY(p.pd);
	struct ibv_cq *cq = ANY(p.cq);
	struct ibv_qp *qp = ANY(p.qp);
	struct ibv_mr *mr = ANY(p.mr);
	int k = fz_below(R, XB_N), n = 9, how = fz_below(R, 12), judge, j;
	uint32_t keys[4] = { 0, 0, 0, 0 }, acc;
	uint64_t off, len, iova, size;
	int fd;

	if (!have_vgem || !pd)
		return;
	if (xb[k].fd < 0 && !xb[k].map)
		xb_new(k);
	fd = xb[k].fd;
	size = xb[k].size;
	off = fz_below(R, size);
	len = 1 + fz_below(R, size - off);
	iova = (fz_u64(R) & 0xffffffff000ull) | (off & 0xfff);
	/* Rights that write only where the outcome is known. */
	acc = how <= 2 ? (uint32_t)any_access() & ~IBV_ACCESS_ON_DEMAND :
	      IBV_ACCESS_REMOTE_READ;
	memset(&cmd, 0, sizeof(cmd));
	a[0].attr_id = UVERBS_ATTR_REG_DMABUF_MR_HANDLE;
	a[1].attr_id = UVERBS_ATTR_REG_DMABUF_MR_PD_HANDLE;
	a[1].data = pd->handle;
	a[2].attr_id = UVERBS_ATTR_REG_DMABUF_MR_OFFSET;
	a[2].len = 8;
	a[3].attr_id = UVERBS_ATTR_REG_DMABUF_MR_LENGTH;
	a[3].len = 8;
	a[4].attr_id = UVERBS_ATTR_REG_DMABUF_MR_IOVA;
	a[4].len = 8;
	a[5].attr_id = UVERBS_ATTR_REG_DMABUF_MR_FD;
	a[5].len = 4;
	a[6].attr_id = UVERBS_ATTR_REG_DMABUF_MR_ACCESS_FLAGS;
	a[6].len = 8;
	a[7].attr_id = UVERBS_ATTR_REG_DMABUF_MR_RESP_LKEY;
	a[7].len = 4;
	a[7].data = (uintptr_t)&keys[0];
	a[8].attr_id = UVERBS_ATTR_REG_DMABUF_MR_RESP_RKEY;
	a[8].len = 4;
	a[8].data = (uintptr_t)&keys[1];
	for (j = 0; j < 9; j++)
		a[j].flags = UVERBS_ATTR_F_MANDATORY;
	cmd.hdr.object_id = UVERBS_OBJECT_MR;
	cmd.hdr.method_id = UVERBS_METHOD_REG_DMABUF_MR;
	cmd.hdr.driver_id = RDMA_DRIVER_UNKNOWN;
	/* judge: the fd, range and rights are what the kernel reads */
	judge = 1;
	switch (how) {
	case 0: case 1:		/* well formed */
		break;
	case 2:			/* keys nobody may write */
		j = 7 + fz_below(R, 2);
		a[j].data = fz_one_in(R, 3) ? 0 : fz_one_in(R, 2) ?
			(uintptr_t)p.mem + 20 * PAGE + 4 * fz_below(R, 8) :
			(uintptr_t)p.mem + 10 * PAGE + fz_below(R, 64);
		break;
	case 3:			/* the PD handle of another object */
		a[1].data = fz_one_in(R, 4) && cq ? cq->handle :
			    fz_one_in(R, 3) && qp ? qp->handle :
			    fz_one_in(R, 2) && mr ? mr->handle :
			    fz_interesting32(R);
		break;
	case 4:			/* any fd */
		fd = fz_one_in(R, 3) ? xb_closed : fz_one_in(R, 2) ?
		     p.ctx->cmd_fd : (int)fz_interesting32(R);
		break;
	case 5:			/* any range */
		off = fz_one_in(R, 2) ? fz_below(R, size + PAGE) : fz_u64(R);
		len = fz_one_in(R, 2) ? size - off + fz_below(R, 3) :
		      fz_one_in(R, 2) ? 0 : fz_u64(R);
		iova = fz_one_in(R, 2) ? off : fz_u64(R);
		break;
	case 6:			/* an attribute missing */
		j = fz_below(R, 9);
		a[j] = a[8];
		n = 8;
		judge = 0;
		break;
	case 7:			/* repeated, or unknown */
		a[9] = a[fz_below(R, 9)];
		a[10].attr_id = fz_one_in(R, 2) ? fz_u32(R) & 0xffff :
				UVERBS_ATTR_REG_DMABUF_MR_RESP_RKEY + 1;
		a[10].len = fz_below(R, 16);
		a[10].data = (uintptr_t)&keys[2];
		a[10].flags = fz_one_in(R, 2) ? UVERBS_ATTR_F_MANDATORY : 0;
		n = 10 + fz_below(R, 2);
		judge = 0;
		break;
	case 8:			/* lengths short or long */
		j = 2 + fz_below(R, 7);
		a[j].len = fz_one_in(R, 2) ? fz_below(R, 9) :
			   fz_u32(R) & 0xffff;
		judge = 0;
		break;
	case 9:			/* flags */
		j = fz_below(R, 9);
		a[j].flags = fz_u32(R) & 0xffff;
		a[j].attr_data.reserved = fz_u32(R);
		judge = 0;
		break;
	case 10:		/* the header */
		if (fz_one_in(R, 2))
			cmd.hdr.driver_id = fz_u32(R) & 0x3f;
		else
			cmd.hdr.reserved1 = fz_u32(R);
		judge = 0;
		break;
	default:
		fz_bytes(R, &a[fz_below(R, 9)], sizeof(a[0]));
		judge = 0;
	}
	if (a[2].len == 8 && a[2].attr_id == UVERBS_ATTR_REG_DMABUF_MR_OFFSET)
		a[2].data = off;
	if (a[3].len == 8 && a[3].attr_id == UVERBS_ATTR_REG_DMABUF_MR_LENGTH)
		a[3].data = len;
	if (a[4].len == 8 && a[4].attr_id == UVERBS_ATTR_REG_DMABUF_MR_IOVA)
		a[4].data = iova;
	if (a[5].len == 4 && a[5].attr_id == UVERBS_ATTR_REG_DMABUF_MR_FD)
		a[5].data = (uint32_t)fd;
	if (a[6].len == 8 &&
	    a[6].attr_id == UVERBS_ATTR_REG_DMABUF_MR_ACCESS_FLAGS)
		a[6].data = acc;
	cmd.hdr.num_attrs = n;
	cmd.hdr.length = sizeof(cmd.hdr) + n * sizeof(a[0]);
	if (how >= 6 && fz_one_in(R, 8))
		cmd.hdr.length = fz_u32(R) & 0xffff;
	/* Until its dereg, its keys are the pool's PD's (random keys hit). */
	if (acc & WRITABLE && xb_by_fd(fd) == k)
		xb_mark(k, xb[k].gen, off, len, 1);
	if (ioctl(p.ctx->cmd_fd, RDMA_VERBS_IOCTL, &cmd)) {
		/* Kept by the kernel while the keys could not be written? */
		if (how == 2 && acc & WRITABLE && xb_by_fd(fd) == k)
			xb_mark(k, xb[k].gen, off, len, 2);
		tot(T_XB_RAW_REFUSED);
		return;
	}
	tot(T_XB_RAW_OK);
	if (judge && !xb_may_take(fd, off, len, iova, acc))
		odp_bad("raw REG_DMABUF_MR took %llu bytes at %llu (IOVA %#llx) of fd %d, rights %#x",
			(unsigned long long)len, (unsigned long long)off,
			(unsigned long long)iova, fd, acc);
	if (how == 3 && a[1].data != pd->handle &&
	    ((cq && a[1].data == cq->handle) ||
	     (qp && a[1].data == qp->handle) ||
	     (mr && a[1].data == mr->handle)))
		odp_bad("raw REG_DMABUF_MR took handle %llu, which is no PD's",
			(unsigned long long)a[1].data);
	memset(&dereg, 0, sizeof(dereg));
	dereg.hdr.command = IB_USER_VERBS_CMD_DEREG_MR;
	dereg.hdr.in_words = sizeof(dereg) / 4;
	for (j = 0; j < n; j++)
		if (a[j].attr_id == UVERBS_ATTR_REG_DMABUF_MR_HANDLE)
			break;
	dereg.cmd.mr_handle = j < n ? (uint32_t)a[j].data : 0;
	if ((j == n || write(p.ctx->cmd_fd, &dereg, sizeof(dereg)) !=
	     sizeof(dereg)) && acc & WRITABLE && xb_by_fd(fd) == k)
		xb_mark(k, xb[k].gen, off, len, 2);
}

/*
 * The checked dma-buf flow: an RC pair of its own (A to B, in a PD of its
 * own, outside the pools), a pinned buffer S of A's.  Each time a new MR
 * on a random range of a buffer of the pool (read-only or not) with
 * random rights -- write rights to a read-only buffer must be refused
 * with EACCES -- and A's WRITE, READ or atomic into it with its rkey, or
 * SEND into a receive of B's on it, inside the MR or across its end; now
 * and then the MR is deregistered while the WR may run.  Then: a success granted by the MR (range and rights),
 * nothing but the transport failing a granted one, and the buffer through
 * its CPU mapping: a WRITE's bytes (an atomic's word) exactly where it
 * succeeded, nothing changed outside the operation's range within the MR
 * (outside what the pool's MRs may write).
 */
#define XF_LEN	(64 << 10)

static struct {
	int ready, broken, connected;
	struct ibv_pd *pd;
	struct ibv_cq *cq;
	struct ibv_qp *a, *b;
	uint8_t *s;
	struct ibv_mr *smr;
} xf;

static int xf_new_qps(void)
{
	xf.connected = 0;
	if (!pair_new(xf.pd, xf.cq, &xf.a, &xf.b))
		return 0;
	xf.broken = 1;
	xf.ready = 0;
	return -1;
}

static int xf_init(void)
{
	if (xf.broken)
		return -1;
	xf.broken = 1;
	xf.pd = ibv_alloc_pd(p.ctx);
	xf.cq = ibv_create_cq(p.ctx, 32, NULL, NULL, 0);
	xf.s = mmap(NULL, XF_LEN, PROT_READ | PROT_WRITE,
		    MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (!xf.pd || !xf.cq || xf.s == MAP_FAILED)
		return -1;
	xf.smr = ibv_reg_mr(xf.pd, xf.s, XF_LEN, IBV_ACCESS_LOCAL_WRITE);
	if (!xf.smr)
		return -1;
	xf.broken = 0;
	if (xf_new_qps())
		return -1;
	xf.ready = 1;
	return 0;
}

static void xf_connect(void)
{
	xf.connected = pair_connect(xf.a, xf.b, xf.cq, fz_u32(R) & 0xffffff,
				    IBV_ACCESS_REMOTE_WRITE |
				    IBV_ACCESS_REMOTE_READ |
				    IBV_ACCESS_REMOTE_ATOMIC);
}

static int transport_gave_up(enum ibv_wc_status st);

static void op_xb_flow(void)
{
	static const char *const op_name[] = {
		"WRITE", "READ", "FETCH_ADD", "CMP_SWP", "SEND",
	};
	int k = fz_below(R, XB_N), op = fz_below(R, 5), acc, granted, ok, ms;
	int early = fz_one_in(R, 8), slow, have_a = 0, have_b, send = op == 4;
	struct xbuf *b = &xb[k];
	uint64_t off, len, iova, rel, n, loff, old = 0, cmp, add, nw;
	uint8_t exp[8];
	struct ibv_sge sge;
	struct ibv_send_wr wr = { .sg_list = &sge, .num_sge = 1,
				  .send_flags = IBV_SEND_SIGNALED }, *bad;
	struct ibv_sge rs;
	struct ibv_recv_wr rwr = { .sg_list = &rs, .num_sge = 1 }, *brw;
	struct ibv_wc wa = { .status = IBV_WC_GENERAL_ERR }, wb = wa, wc;
	struct ibv_mr *mr;
	size_t lo, hi, j;
	char what[200];
	double end;

	if (!have_vgem || b->fd < 0 || !b->map)
		return;
	if (!xf.ready && xf_init())
		return;
	if (!xf.connected || fz_qp_state(xf.a) != IBV_QPS_RTS ||
	    fz_qp_state(xf.b) != IBV_QPS_RTS)
		xf_connect();
	if (!xf.connected)
		return;
	off = fz_below(R, b->size);
	len = 1 + fz_below(R, b->size - off);
	iova = (fz_u64(R) & 0xfffffff000ull) | (off & 0xfff);
	acc = fz_below(R, 3) ? IBV_ACCESS_LOCAL_WRITE |
	      IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ |
	      IBV_ACCESS_REMOTE_ATOMIC : (int)(fz_u32(R) &
	      (IBV_ACCESS_REMOTE_READ | IBV_ACCESS_LOCAL_WRITE));
	if (!b->rdwr && fz_below(R, 2))
		acc &= ~WRITABLE;
	mr = ibv_reg_dmabuf_mr(xf.pd, off, len, iova, b->fd, acc);
	if (!b->rdwr && acc & WRITABLE) {
		/* Taken: on, to see whether the WRITE lands too. */
		if (mr)
			odp_bad("a dma-buf exported read-only took rights %#x",
				acc);
		else if (errno != EACCES)
			odp_bad("rights %#x on a dma-buf exported read-only: %s, not EACCES",
				acc, strerror(errno));
		else
			tot(T_XB_FLOW_REFUSED);
	}
	if (!mr)
		return;		/* or max_mr, both runners' MRs counted */
	/* The operation's range, mostly inside the MR. */
	n = op == 2 || op == 3 ? 8 :
	    1 + fz_below(R, len < XF_LEN / 2 ? len : XF_LEN / 2);
	rel = fz_below(R, len - (n < len ? n : len) + 1);
	if (fz_one_in(R, 4))
		rel = len - fz_below(R, n < len ? n : len);
	if (op == 2 || op == 3)
		rel = ((iova + rel) & ~7ull) - iova + (rel < 8 && iova & 7 ?
						       8 : 0);
	lo = off + rel;
	hi = lo + n;
	loff = fz_below(R, XF_LEN - n + 1) & ~7ull;
	/* A receive needs LOCAL_WRITE, the rest its remote right. */
	granted = rel + n <= len && (b->rdwr || op == 1) &&
		  acc & (op == 0 ? IBV_ACCESS_REMOTE_WRITE : op == 1 ?
			 IBV_ACCESS_REMOTE_READ : send ?
			 IBV_ACCESS_LOCAL_WRITE : IBV_ACCESS_REMOTE_ATOMIC);
	fz_bytes(R, xf.s + loff, n);
	xb_sync(b, 0);
	if ((op == 2 || op == 3) && hi <= b->size)
		memcpy(&old, b->map + lo, 8);
	xb_sync(b, 1);
	cmp = fz_one_in(R, 2) ? old : fz_u64(R);
	add = fz_u64(R);
	sge.addr = (uintptr_t)xf.s + loff;
	sge.length = n;
	sge.lkey = xf.smr->lkey;
	wr.opcode = (enum ibv_wr_opcode[]){ IBV_WR_RDMA_WRITE,
		IBV_WR_RDMA_READ, IBV_WR_ATOMIC_FETCH_AND_ADD,
		IBV_WR_ATOMIC_CMP_AND_SWP, IBV_WR_SEND }[op];
	wr.wr.rdma.remote_addr = iova + rel;
	wr.wr.rdma.rkey = mr->rkey;
	/* SEND: received by B into the dma-buf MR, by its lkey. */
	rs.addr = iova + rel;
	rs.length = n;
	rs.lkey = mr->lkey;
	if (send && ibv_post_recv(xf.b, &rwr, &brw)) {
		ibv_dereg_mr(mr);
		xf.connected = 0;
		return;
	}
	if (op == 2 || op == 3) {
		wr.wr.atomic.remote_addr = iova + rel;
		wr.wr.atomic.rkey = mr->rkey;
		wr.wr.atomic.compare_add = op == 2 ? add : cmp;
		wr.wr.atomic.swap = add;
	}
	if (ibv_post_send(xf.a, &wr, &bad)) {
		ibv_dereg_mr(mr);
		xf.connected = 0;
		return;
	}
	/* Gone while the WR may run: either outcome, within the MR. */
	if (early)
		ibv_dereg_mr(mr);
	slow = getenv("VRDMA_TEST_SLOW") ? atoi(getenv("VRDMA_TEST_SLOW")) : 1;
	ms = 5000 * (slow > 1 ? slow : 1);
	end = fz_now() + ms / 1e3;
	have_b = !send;
	while ((!have_a || !have_b) && fz_now() < end) {
		if (ibv_poll_cq(xf.cq, 1, &wc) <= 0) {
			usleep(100);
			continue;
		}
		if (wc.qp_num == xf.a->qp_num && !have_a)
			wa = wc, have_a = 1;
		else if (wc.qp_num == xf.b->qp_num && !have_b)
			wb = wc, have_b = 1;
		else
			continue;
		/* After an error the other may never come. */
		if (wc.status != IBV_WC_SUCCESS && end > fz_now() + 0.5)
			end = fz_now() + 0.5;
	}
	if (!early)
		ibv_dereg_mr(mr);
	snprintf(what, sizeof(what),
		 "%s of %llu bytes at %llu of a %s dma-buf, MR %llu..%llu rights %#x",
		 op_name[op], (unsigned long long)n, (unsigned long long)lo,
		 b->rdwr ? "read-write" : "read-only",
		 (unsigned long long)off, (unsigned long long)(off + len),
		 acc);
	/*
	 * No answer (a loaded host), or no receive completion where B may
	 * still be at it: new QPs, the range as it is.
	 */
	if (!have_a || (!have_b && (wa.status == IBV_WC_SUCCESS ||
				    transport_gave_up(wa.status)))) {
		xf_new_qps();
		xb_check(k, lo, hi < off + len ? hi : off + len, NULL, what);
		return;
	}
	ok = have_a && have_b && wa.status == IBV_WC_SUCCESS &&
	     (!send || wb.status == IBV_WC_SUCCESS);
	/* The responder's status says more (the requester's is a NAK's). */
	wc = send && have_b && wb.status != IBV_WC_SUCCESS ? wb : wa;
	if (!ok)
		xf.connected = 0;
	/*
	 * Refused: nothing may change (granted: its range within the MR).
	 * A failed receive's buffer is undefined: a SEND that runs past the
	 * MR may have placed what fits.
	 */
	if (!ok && !granted &&
	    !(send && acc & IBV_ACCESS_LOCAL_WRITE && b->rdwr))
		hi = lo;
	if (ok && !granted)
		odp_bad("%s: success, though not granted", what);
	if (ok && !b->rdwr && op != 1)
		odp_bad("%s: success, into a buffer exported read-only", what);
	if (!ok && granted && !early && have_a && have_b &&
	    !transport_gave_up(wa.status) && !transport_gave_up(wb.status))
		odp_bad("%s: %s, though granted", what,
			ibv_wc_status_str(wc.status));
	if (op == 0 || send) {
		xb_check(k, lo, hi < off + len ? hi : off + len,
			 ok ? xf.s + loff : NULL, what);
	} else if (op == 1) {
		xb_sync(b, 0);
		for (j = 0; ok && j < n && lo + j < b->size; j++)
			if (!b->dirty[lo + j] &&
			    xf.s[loff + j] != b->map[lo + j]) {
				odp_bad("%s: READ gave %#x at byte %llu, the buffer holds %#x",
					what, xf.s[loff + j],
					(unsigned long long)j,
					b->map[lo + j]);
				break;
			}
		xb_sync(b, 1);
		xb_check(k, 0, 0, NULL, what);
	} else {
		nw = op == 2 ? old + add : old == cmp ? add : old;
		memcpy(exp, &nw, 8);
		xb_check(k, lo, hi < off + len ? hi : off + len,
			 ok ? exp : NULL, what);
	}
	tot(ok ? T_XB_FLOW_OK : T_XB_FLOW_REFUSED);
}

/* ---- thread domains ----------------------------------------------------- */

/*
 * What is made on a parent domain with a TD, and a CQ created
 * SINGLE_THREADED, goes without the ring's lock: the application promised
 * one thread at a time.  Here that is the round's main thread alone: the
 * only other threads (flow_storm) touch memory, never a verbs object.
 */

/* Is @pd a parent domain of the pool? */
static int ppd_is(struct ibv_pd *pd)
{
	int k;

	for (k = 0; k < POOL && pd; k++)
		if (p.ppd[k] == pd)
			return 1;
	return 0;
}

/* Is @pd a parent domain of the pool, with a TD? */
static int ppd_has_td(struct ibv_pd *pd)
{
	int k;

	for (k = 0; k < POOL && pd; k++)
		if (p.ppd[k] == pd)
			return !!p.ppd_td[k];
	return 0;
}

/* The PD for a new QP: often a parent domain (with a TD or not). */
static struct ibv_pd *qp_pd(void)
{
	struct ibv_pd *pd = ANY(p.ppd);

	return pd && fz_one_in(R, 2) ? pd : ANY(p.pd);
}

/* A QP made on @pd: counted, and single-threaded iff @pd has a TD. */
static void td_count_qp(struct ibv_qp *qp, struct ibv_pd *pd)
{
	int td = ppd_has_td(pd);

	if (!qp)
		return;
	if (td)
		tot(T_TD_QP);
	if (to_vqp(qp)->sq.lock.single != td ||
	    to_vqp(qp)->rq.lock.single != td)
		odp_bad("a QP %s a thread domain has %s ring locks", td ?
			"on" : "without", td ? "its" : "no");
	/*
	 * A first receive through its lock-free ring at once: such QPs are
	 * few, and a slow kernel makes few QPs in a round.
	 */
	if (td && !qp->srq && (qp->qp_type == IBV_QPT_RC ||
			       qp->qp_type == IBV_QPT_UC ||
			       qp->qp_type == IBV_QPT_UD)) {
		struct ibv_recv_wr rwr = { .wr_id = fz_u64(R) }, *brw;

		td_qp_init(qp);
		if (!ibv_post_recv(qp, &rwr, &brw))
			td_count_post(qp);
	}
}

static void td_count_post(struct ibv_qp *qp)
{
	if (qp && qp->qp_type != IBV_QPT_XRC_RECV &&
	    to_vqp(qp)->sq.lock.single)
		tot(T_TD_POST);
}

/*
 * ibv_create_cq_ex(): SINGLE_THREADED, on a parent domain of the pool
 * (with a TD or not), both, or with garbage (flags, comp_mask, wc_flags, a
 * PD that is no parent domain); single-threaded exactly when it should be.
 */
static void cq_ex_create(int i, int cqe)
{
	struct ibv_cq_init_attr_ex ca = {
		.cqe = cqe, .wc_flags = IBV_WC_STANDARD_FLAGS,
		.channel = fz_one_in(R, 2) ? p.ch : NULL,
	};
	struct ibv_cq_ex *cqx;
	int single, ok = 1;

	switch (fz_below(R, 6)) {
	case 0: case 1:
		ca.comp_mask = IBV_CQ_INIT_ATTR_MASK_FLAGS;
		ca.flags = IBV_CREATE_CQ_ATTR_SINGLE_THREADED;
		break;
	case 2: case 3:
		ca.comp_mask = IBV_CQ_INIT_ATTR_MASK_PD;
		ca.parent_domain = ANY(p.ppd);
		ok = !!ca.parent_domain;
		break;
	case 4:
		ca.comp_mask = IBV_CQ_INIT_ATTR_MASK_PD |
			       IBV_CQ_INIT_ATTR_MASK_FLAGS;
		ca.parent_domain = ANY(p.ppd);
		ca.flags = fz_one_in(R, 2) ? 0 :
			   IBV_CREATE_CQ_ATTR_SINGLE_THREADED;
		ok = !!ca.parent_domain;
		break;
	default:
		ca.comp_mask = fz_u32(R) & 0xf;
		ca.flags = fz_u32(R);
		ca.parent_domain = ANY(p.pd);	/* no parent domain */
		if (fz_one_in(R, 2))
			ca.wc_flags = fz_u64(R);
		ok = 0;
	}
	cqx = ibv_create_cq_ex(p.ctx, &ca);
	if (!cqx)
		return;
	p.cq[i] = ibv_cq_ex_to_cq(cqx);
	p.cqx[i] = cqx;
	p.cq_ppd[i] = ca.comp_mask & IBV_CQ_INIT_ATTR_MASK_PD ?
		      ca.parent_domain : NULL;
	single = (ca.comp_mask & IBV_CQ_INIT_ATTR_MASK_FLAGS &&
		  ca.flags & IBV_CREATE_CQ_ATTR_SINGLE_THREADED) ||
		 ppd_has_td(p.cq_ppd[i]);
	if (!ok && ca.comp_mask & ~(uint32_t)(IBV_CQ_INIT_ATTR_MASK_FLAGS |
					      IBV_CQ_INIT_ATTR_MASK_PD))
		odp_bad("ibv_create_cq_ex() took comp_mask %#x", ca.comp_mask);
	if (to_vcq(p.cq[i])->lock.single != single)
		odp_bad("a CQ %s single-threaded has %s ring lock", single ?
			"made" : "not made", single ? "its" : "no");
	if (!single)
		return;
	tot(T_TD_CQ);
	/*
	 * A first poll through its lock-free path at once: such CQs are few,
	 * and a slow kernel makes few CQs in a round.
	 */
	cq_poll(i);
}

/* start_poll, next_poll, the read_* functions, end_poll. */
static void cq_ex_poll(struct ibv_cq_ex *cqx)
{
	struct ibv_poll_cq_attr pa = { 0 };
	int n = fz_below(R, 8);

	if (ibv_start_poll(cqx, &pa))
		return;
	do {
		ibv_wc_read_opcode(cqx);
		ibv_wc_read_byte_len(cqx);
		ibv_wc_read_qp_num(cqx);
	} while (n-- > 0 && !ibv_next_poll(cqx));
	ibv_end_poll(cqx);
}

/*
 * A QP of the pool in RESET to INIT, where receives may be posted: the
 * pool's QPs reach other states only by chance, and a post to a QP in
 * RESET fails before it takes the ring.
 */
static void td_qp_init(struct ibv_qp *qp)
{
	struct ibv_qp_attr a = {
		.qp_state = IBV_QPS_INIT, .port_num = 1,
		.qp_access_flags = IBV_ACCESS_REMOTE_WRITE, .qkey = 0x11111111,
	};
	int mask = IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT;

	if (fz_qp_state(qp) != IBV_QPS_RESET)
		return;
	if (qp->qp_type == IBV_QPT_UD)
		mask |= IBV_QP_QKEY;
	else
		mask |= IBV_QP_ACCESS_FLAGS;
	ibv_modify_qp(qp, &a, mask);
}

/* A receive or a random WR on a single-threaded QP of the pool. */
static void op_td_post(void)
{
	struct ibv_recv_wr rwr = { .wr_id = fz_u64(R) }, *brw;
	struct ibv_sge sge[4];
	int i, s = fz_below(R, POOL);
	struct ibv_qp *qp;

	for (i = 0; i < POOL; i++) {
		qp = p.qp[(s + i) % POOL];
		if (!qp || qp->qp_type == IBV_QPT_XRC_RECV ||
		    !to_vqp(qp)->sq.lock.single)
			continue;
		if (qp->srq || fz_one_in(R, 2)) {
			op_post_send_on(qp);
			return;
		}
		td_qp_init(qp);
		rwr.num_sge = fz_below(R, 5);
		random_sges(sge, rwr.num_sge);
		rwr.sg_list = sge;
		if (!ibv_post_recv(qp, &rwr, &brw))
			td_count_post(qp);
		return;
	}
}

/*
 * A single-threaded CQ of the pool polled (ibv_poll_cq, or start_poll on
 * an extended one), so that the pool's completions go through them too.
 */
static void op_td_poll(void)
{
	int i, s = fz_below(R, POOL), k;

	if (fz_one_in(R, 2)) {
		op_td_post();
		return;
	}
	for (i = 0; i < POOL; i++) {
		k = (s + i) % POOL;
		if (!p.cq[k] || !to_vcq(p.cq[k])->lock.single)
			continue;
		cq_poll(k);
		return;
	}
}

/*
 * Thread domains: alloc (comp_mask 0 must work, another must not) and
 * dealloc (EBUSY while a parent domain of the pool has it, else it must
 * work).
 */
static void op_td(void)
{
	struct ibv_td_init_attr a = { 0 };
	int i = SLOT(p.td), k, busy = 0, err;

	if (p.td[i]) {
		for (k = 0; k < POOL; k++)
			busy |= p.ppd[k] && p.ppd_td[k] == p.td[i];
		err = ibv_dealloc_td(p.td[i]);
		if (!err && busy)
			odp_bad("ibv_dealloc_td() freed a TD a parent domain has");
		else if (err && (!busy || err != EBUSY))
			odp_bad("ibv_dealloc_td() of a TD %s: %s",
				busy ? "in use" : "unused", strerror(err));
		else if (err)
			tot(T_TD_BUSY);
		if (!err)
			p.td[i] = NULL;
		return;
	}
	if (fz_one_in(R, 8))
		a.comp_mask = fz_u32(R) | 1;
	p.td[i] = ibv_alloc_td(p.ctx, &a);
	if (p.td[i] && a.comp_mask)
		odp_bad("ibv_alloc_td() took comp_mask %#x", a.comp_mask);
	else if (!p.td[i] && !a.comp_mask)
		odp_bad("ibv_alloc_td() failed: %s", strerror(errno));
	if (p.td[i] && a.comp_mask) {
		ibv_dealloc_td(p.td[i]);
		p.td[i] = NULL;
	}
	if (p.td[i])
		tot(T_TD_ALLOC);
}

/*
 * Parent domains on the pool's PDs with a TD of the pool, none, or a
 * bogus one: a pointer to another object (PD, CQ, QP, MR, parent domain,
 * the context), into memory, or anything; on a parent domain; with
 * unknown comp_mask bits.  A right one must be made, a wrong one refused
 * with EINVAL (the bogus TD never followed).  One goes once no QP or CQ
 * of the pool was made on it (they point to it).
 */
static void op_ppd(void)
{
	struct ibv_parent_domain_init_attr a = { 0 };
	int i = SLOT(p.ppd), k, used = 0, bogus = 0, valid, err;
	struct ibv_pd *pd;

	if (p.ppd[i]) {
		for (k = 0; k < POOL; k++)
			used |= (p.qp[k] && p.qp[k]->pd == p.ppd[i]) ||
				(p.cq[k] && p.cq_ppd[k] == p.ppd[i]);
		if (used)
			return;
		err = ibv_dealloc_pd(p.ppd[i]);
		if (err)
			odp_bad("ibv_dealloc_pd() of a parent domain: %s",
				strerror(err));
		else
			p.ppd[i] = NULL;
		return;
	}
	a.pd = fz_one_in(R, 10) ? ANY(p.ppd) : ANY(p.pd);
	if (!a.pd)
		return;
	switch (fz_below(R, 10)) {
	case 0:
		break;
	case 1:
		a.td = (void *)(fz_one_in(R, 2) ? (void *)ANY(p.pd) :
				fz_one_in(R, 2) ? (void *)ANY(p.cq) :
				(void *)ANY(p.qp));
		break;
	case 2:
		a.td = (void *)(fz_one_in(R, 3) ? (void *)p.ctx :
				fz_one_in(R, 2) ? (void *)ANY(p.mr) :
				(void *)ANY(p.ppd));
		break;
	case 3:
		a.td = (void *)(uintptr_t)(fz_one_in(R, 2) ? fz_u64(R) :
			(uintptr_t)p.mem + fz_below(R, MEM_PAGES * PAGE));
		break;
	default:
		a.td = ANY(p.td);
	}
	bogus = !!a.td;
	for (k = 0; k < POOL; k++)
		bogus &= p.td[k] != a.td;
	if (fz_one_in(R, 8))
		a.comp_mask = fz_u32(R);
	valid = !bogus && !ppd_is(a.pd) &&
		!(a.comp_mask & ~(uint32_t)IBV_PARENT_DOMAIN_INIT_ATTR_PD_CONTEXT);
	errno = 0;
	pd = ibv_alloc_parent_domain(p.ctx, &a);
	if (pd && !valid)
		odp_bad("ibv_alloc_parent_domain() took %s (comp_mask %#x)",
			bogus ? "a bogus TD" : "a parent domain as its PD",
			a.comp_mask);
	else if (!pd && valid)
		odp_bad("ibv_alloc_parent_domain() failed: %s",
			strerror(errno));
	else if (!pd && bogus && errno != EINVAL)
		odp_bad("ibv_alloc_parent_domain() with a bogus TD: %s, not EINVAL",
			strerror(errno));
	if (!pd && bogus)
		tot(T_TD_BOGUS);
	if (pd && !valid) {
		ibv_dealloc_pd(pd);
		return;
	}
	if (!pd)
		return;
	p.ppd[i] = pd;
	p.ppd_td[i] = a.td;
	if (a.td)
		tot(T_TD_PARENT);
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
		op_xrcd, op_xsrq, op_xsrq, op_open_qp, op_raw_xrc,
		op_xrc_flow, op_xrc_flow,
		op_odp_mr, op_odp_mr, op_advise, op_odp_storm, op_odp_storm,
		op_odp_post, op_odp_post, op_odp_flow, op_odp_flow,
		op_odp_flow, op_dm, op_dm_copy, op_dm_mr, op_dm_import,
		op_dm_query, op_tm, op_tm,
		op_xb_mr, op_xb_mr, op_xb_post, op_xb_post, op_xb_drop,
		op_xb_raw, op_xb_rereg, op_xb_flow, op_xb_flow,
		op_td, op_ppd, op_ppd, op_td_poll,
	};
	struct ibv_device_attr_ex dx;
	struct ibv_port_attr port;
	unsigned long min_ops;
	double end;
	int k;

	fz_seed(&rng, seed);
	round_seed = seed;
	for (k = 0; k < POOL; k++)
		p.mr_dm[k] = p.mr_xb[k] = -1;
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
	if (odp_mem_setup() || ibv_query_device_ex(p.ctx, NULL, &dx))
		_exit(3);
	p.max_dm = dx.max_dm_size;
	for (k = 0; have_vgem && k < XB_N; k++)
		xb_new(k);
	/* A base to build on: a PD, a CQ, an XRC domain. */
	op_pd();
	p.cq[0] = ibv_create_cq(p.ctx, 64, NULL, NULL, 0);
	p.xrcd[0] = ibv_open_xrcd(p.ctx, &(struct ibv_xrcd_init_attr){
		.comp_mask = IBV_XRCD_INIT_ATTR_FD | IBV_XRCD_INIT_ATTR_OFLAGS,
		.fd = -1, .oflags = O_CREAT,
	});

	/*
	 * The round's time starts now: on a debug kernel the setup above can
	 * take longer than a whole round.
	 */
	end = fz_now() + secs;
	/*
	 * And at least this many operations: a busy host makes a round take
	 * longer, not fuzz less (its parent kills it at a time, or waits).
	 */
	min_ops = 100 + fz_below(R, 200);
	if (write(ready, "", 1) != 1)
		_exit(3);
	close(ready);
	while (fz_now() < end || ops < min_ops) {
		table[fz_below(R, sizeof(table) / sizeof(table[0]))]();
		ops++;
		if (fz_one_in(R, 64))
			usleep(fz_below(R, 2000));
	}
	printf("#   %lu ops: %lu QPs, %lu MRs, %lu connections, %lu sends and %lu receives posted, %lu rings scribbled\n",
	       ops, got.qp, got.mr, got.rts, got.send, got.recv, got.ring);
	printf("#   XRC: %lu domains (%lu through a file), %lu SRQs, %lu target and %lu initiator QPs, %lu opened, %lu connected, %lu posts to initiators (%lu messages, %lu completed, %lu received), %lu raw commands (%lu taken)\n",
	       got.xrcd, got.xrcd_file, got.xsrq, got.xtgt, got.xini,
	       got.xopen, got.xrts, got.xsend, got.xflow, got.xsend_ok,
	       got.xrecv_ok, got.raw, got.raw_ok);
	if (getenv("VRDMA_FUZZ_VERBOSE")) {
		int k;

		printf("#   XRC CQEs by status:");
		for (k = 0; k < 32; k++)
			if (got.xstatus[k])
				printf(" %s %lu", ibv_wc_status_str(k),
				       got.xstatus[k]);
		printf("\n");
	}
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

/* Whether every count of the "reached:" line is above 0 yet. */
static int reached_all(void)
{
	int j;

	for (j = 0; j < T_NUM; j++)
		if ((have_vgem || j < T_XB_FIRST || j > T_XB_LAST) &&
		    !board->tot[j])
			return 0;
	return 1;
}

/*
 * One runner: rounds one after the other until @end, from @seed, and on
 * until @last while a count of the "reached:" line is still 0: a slow or
 * busy machine gets through fewer rounds in the time, and fuzz.sh fails a
 * run that did not get everywhere.  Two runners at once (VRDMA_FUZZ_JOBS)
 * race each other in the kernel.  Returns the exit status: bit 0 a crash,
 * bit 1 a hang, bit 2 no round got through its setup (so none fuzzed
 * anything).
 */
static int runner(const char *dev, uint64_t seed, double end, double last,
		  int slow, int job)
{
	struct fz_rng top;
	int rounds = 0, crashes = 0, ran = 0, over = 0;

	fz_seed(&top, seed);
	while (fz_now() < end || (fz_now() < last && !reached_all())) {
		uint64_t rs = fz_u64(&top);
		double secs = 0.5 + fz_below(&top, 4000) / 1000.0;
		int kill_it = fz_one_in(&top, 3) ?
			      100 + 5 + fz_below(&top, 95) : 0;
		int ret;

		if (!over && fz_now() >= end) {
			printf("# runner %d: past its time, a count of the reached: line still 0\n",
			       job);
			over = 1;
		}
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
	const char *extra_env = getenv("VRDMA_FUZZ_EXTRA");
	double extra = extra_env ? atof(extra_env) : 0;
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
	board = mmap(NULL, sizeof(*board), PROT_READ | PROT_WRITE,
		     MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	snprintf(xrcd_dir, sizeof(xrcd_dir), "/tmp/vrdma-fuzz-xrcd.XXXXXX");
	if (board == MAP_FAILED || !mkdtemp(xrcd_dir)) {
		printf("Bail out! no board or directory for the XRC domains: %s\n",
		       strerror(errno));
		return 1;
	}
	/* dma-bufs come from vgem: without it, that part is skipped. */
	fz_sh("modprobe vgem 2>/dev/null");
	j = vgem_card();
	have_vgem = j >= 0;
	if (have_vgem)
		close(j);
	else	/* not a skip, which CI fails: the debug kernels lack it */
		printf("# no vgem in this kernel: no dma-buf MRs, their counts left off the reached: line\n");
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
				_exit(runner(dev, seed + j, end, end + extra,
					     slow, j));
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
	for (j = 0; j < XRCD_FILES; j++) {
		char path[96];

		snprintf(path, sizeof(path), "%s/xrcd%d", xrcd_dir, j);
		unlink(path);
	}
	rmdir(xrcd_dir);
	printf("# ODP, DM, dma-bufs and thread domains, all rounds:");
	for (j = 0; j < T_NUM; j++)
		printf(" %s %lu", t_name[j], board->tot[j]);
	printf("\n");
	/* For fuzz.sh: each must be more than 0 (dma-bufs: with vgem). */
	printf("# reached:");
	for (j = 0; j < T_NUM; j++)
		if (have_vgem || j < T_XB_FIRST || j > T_XB_LAST)
			printf(" %s=%lu", t_name[j], board->tot[j]);
	printf("\n");
	fz_result(!board->bad,
		  "ODP, DM, dma-bufs, thread domains: every byte the checked flows read back is right, nothing refused changed memory or succeeded, nothing granted failed, every oracle held (%lu ODP/DM and %lu dma-buf operations checked, %lu failed checks, %lu of them granted SENDs through the SRQ pair)",
		  board->tot[T_FLOW_OK], board->tot[T_XB_FLOW_OK],
		  board->bad, board->bad_srq);
	fz_result(!hangs, "no round stuck in the kernel");
	fz_result(!crashes, "no round crashed or failed to start");
	fz_result(!idle, "every runner had rounds that got to fuzzing");
	fz_result(fz_live_stop_wait(live), "the live QP pair kept working");
	printf("1..%d\n", fz_tap_n);
	return fz_tap_failed ? 1 : 0;
}
