// SPDX-License-Identifier: GPL-2.0
/*
 * Test module for frmr.sh: fast-registration MRs as a kernel consumer
 * uses them locally, on two RC QPs of one RDMA device.  Not part of the
 * driver.
 *
 * Only kernel consumers have fast-reg MRs, so only a module can post what
 * iSER's initiator posts: LOCAL_INV, REG_MR and a SEND whose gather list
 * names the new lkey, in one ib_post_send() chain.  Each case does that
 * (or a variant: an RDMA READ into the MR, a key invalidated before the
 * SEND, a range beyond the registration) on a fresh pair of QPs and
 * checks the completions and, byte by byte, what the receiver got.
 *
 * Masked atomics too are kernel consumers' only (IB_WR_MASKED_ATOMIC_*,
 * what RDS posts for every atomic): the atomic cases send them, and plain
 * ones, into a fast-registered region, and check the original value, the
 * word left and the completion's opcode; a region registered without
 * REMOTE_ATOMIC (as RDS registers its MRs) is refused, unchanged.
 *
 *   insmod vrdma_frmr_test.ko dev=vrdma0 [slow=N]
 *
 * One line per case in the kernel log, "vrdma_frmr_test: ok N NAME" or
 * "vrdma_frmr_test: not ok N NAME: REASON"; insmod fails (-EIO) unless
 * every case passed, and everything it created is gone when it returns.
 */
#include <linux/jiffies.h>
#include <linux/module.h>
#include <linux/scatterlist.h>
#include <linux/slab.h>
#include <linux/delay.h>
#include <net/ipv6.h>
#include <rdma/ib_cache.h>
#include <rdma/ib_verbs.h>

static char *dev = "vrdma0";
module_param(dev, charp, 0);
MODULE_PARM_DESC(dev, "RDMA device to test (default vrdma0)");
static int slow = 1;
module_param(slow, int, 0);
MODULE_PARM_DESC(slow, "Multiply the completion timeout by this");

#define FT_SRC_ORDER	2			/* 16 KiB of source pages */
#define FT_SRC_SIZE	(PAGE_SIZE << FT_SRC_ORDER)
#define FT_DST_SIZE	(2 * FT_SRC_SIZE)
#define FT_HDR_SIZE	48			/* an iSER header's place */
#define FT_MAX_SGE	4
#define FT_MAX_SG	8
#define FT_RECV_FILL	0xee

enum { FT_WR_INV = 1, FT_WR_REG, FT_WR_DATA, FT_WR_RECV };

struct ft_ctx {
	struct ib_device *dev;
	struct ib_pd *pd;
	u8 port;
	int sgid_index;
	union ib_gid gid;
	u8 *src;		/* FT_SRC_SIZE, physically contiguous */
	u8 *dst;		/* FT_DST_SIZE: receive buffer, READ source */
	u8 *hdr;		/* FT_HDR_SIZE */
	u8 *expect;		/* FT_DST_SIZE */
	struct ib_cq *cq[2];
	struct ib_qp *qp[2];
	char why[160];
};

/* A byte pattern that differs at every offset of a page and between pages. */
static u8 ft_pattern(size_t i)
{
	return (u8)(i * 7 + 13) ^ (u8)(i >> 9);
}

/* The source pages the region maps: one scatterlist entry each. */
struct ft_piece {
	u32 off;	/* into ctx->src */
	u32 len;
};

static __printf(2, 3) int ft_fail(struct ft_ctx *c, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(c->why, sizeof(c->why), fmt, ap);
	va_end(ap);
	return -EIO;
}

/* A RoCEv2 GID of the port with an IPv4 address: the QPs' own address. */
static int ft_find_gid(struct ft_ctx *c)
{
	struct ib_port_attr pattr;
	int i, ret;

	ret = ib_query_port(c->dev, c->port, &pattr);
	if (ret)
		return ret;
	for (i = 0; i < pattr.gid_tbl_len; i++) {
		const struct ib_gid_attr *attr;
		bool ok;

		attr = rdma_get_gid_attr(c->dev, c->port, i);
		if (IS_ERR(attr))
			continue;
		ok = attr->gid_type == IB_GID_TYPE_ROCE_UDP_ENCAP &&
		     ipv6_addr_v4mapped((const struct in6_addr *)attr->gid.raw);
		if (ok) {
			c->gid = attr->gid;
			c->sgid_index = i;
		}
		rdma_put_gid_attr(attr);
		if (ok)
			return 0;
	}
	return -ENOENT;
}

static int ft_wait_wc(struct ft_ctx *c, struct ib_cq *cq, struct ib_wc *wc)
{
	unsigned long end = jiffies + msecs_to_jiffies(10000 * slow);

	for (;;) {
		int n = ib_poll_cq(cq, 1, wc);

		if (n < 0)
			return n;
		if (n)
			return 0;
		if (time_after(jiffies, end))
			return -ETIMEDOUT;
		usleep_range(200, 1000);
	}
}

static int ft_modify(struct ft_ctx *c, int i)
{
	struct ib_qp_attr a = {};
	int ret;

	a.qp_state = IB_QPS_INIT;
	a.pkey_index = 0;
	a.port_num = c->port;
	a.qp_access_flags = IB_ACCESS_REMOTE_READ | IB_ACCESS_REMOTE_WRITE |
			    IB_ACCESS_REMOTE_ATOMIC;
	ret = ib_modify_qp(c->qp[i], &a, IB_QP_STATE | IB_QP_PKEY_INDEX |
			   IB_QP_PORT | IB_QP_ACCESS_FLAGS);
	if (ret)
		return ret;

	memset(&a, 0, sizeof(a));
	a.qp_state = IB_QPS_RTR;
	a.path_mtu = IB_MTU_1024;
	a.dest_qp_num = c->qp[!i]->qp_num;
	a.rq_psn = 0;
	a.max_dest_rd_atomic = 1;
	a.min_rnr_timer = 12;
	a.ah_attr.type = RDMA_AH_ATTR_TYPE_ROCE;
	rdma_ah_set_port_num(&a.ah_attr, c->port);
	rdma_ah_set_grh(&a.ah_attr, &c->gid, 0, c->sgid_index, 64, 0);
	ret = ib_modify_qp(c->qp[i], &a, IB_QP_STATE | IB_QP_AV |
			   IB_QP_PATH_MTU | IB_QP_DEST_QPN | IB_QP_RQ_PSN |
			   IB_QP_MAX_DEST_RD_ATOMIC | IB_QP_MIN_RNR_TIMER);
	if (ret)
		return ret;

	memset(&a, 0, sizeof(a));
	a.qp_state = IB_QPS_RTS;
	a.timeout = 14;
	a.retry_cnt = 7;
	a.rnr_retry = 7;
	a.sq_psn = 0;
	a.max_rd_atomic = 1;
	return ib_modify_qp(c->qp[i], &a, IB_QP_STATE | IB_QP_TIMEOUT |
			    IB_QP_RETRY_CNT | IB_QP_RNR_RETRY | IB_QP_SQ_PSN |
			    IB_QP_MAX_QP_RD_ATOMIC);
}

static void ft_qps_down(struct ft_ctx *c)
{
	int i;

	for (i = 0; i < 2; i++) {
		if (c->qp[i])
			ib_destroy_qp(c->qp[i]);
		c->qp[i] = NULL;
	}
	for (i = 0; i < 2; i++) {
		if (c->cq[i])
			ib_destroy_cq(c->cq[i]);
		c->cq[i] = NULL;
	}
}

/* QP 0 (the sender) and QP 1 (the receiver), connected, each its own CQ. */
static int ft_qps_up(struct ft_ctx *c)
{
	struct ib_cq_init_attr cqa = { .cqe = 32 };
	int i, ret;

	for (i = 0; i < 2; i++) {
		struct ib_qp_init_attr qa = {
			.qp_type = IB_QPT_RC,
			.sq_sig_type = IB_SIGNAL_REQ_WR,
			.cap = {
				.max_send_wr = 16, .max_recv_wr = 4,
				.max_send_sge = FT_MAX_SGE, .max_recv_sge = 1,
			},
		};
		struct ib_cq *cq;
		struct ib_qp *qp;

		cq = ib_create_cq(c->dev, NULL, NULL, NULL, &cqa);
		if (IS_ERR(cq)) {
			ret = PTR_ERR(cq);
			goto err;
		}
		c->cq[i] = cq;
		qa.send_cq = cq;
		qa.recv_cq = cq;
		qp = ib_create_qp(c->pd, &qa);
		if (IS_ERR(qp)) {
			ret = PTR_ERR(qp);
			goto err;
		}
		c->qp[i] = qp;
	}
	for (i = 0; i < 2; i++) {
		ret = ft_modify(c, i);
		if (ret)
			goto err;
	}
	return 0;
err:
	ft_qps_down(c);
	return ft_fail(c, "QP setup failed: %d", ret);
}

/* Map @n pieces of the source pages into @mr with @page_size pages. */
static int ft_map(struct ft_ctx *c, struct ib_mr *mr, const struct ft_piece *p,
		  int n, unsigned int page_size, struct scatterlist *sg)
{
	int i, ret;

	sg_init_table(sg, n);
	for (i = 0; i < n; i++)
		sg_set_buf(&sg[i], c->src + p[i].off, p[i].len);
	if (ib_dma_map_sg(c->dev, sg, n, DMA_TO_DEVICE) != n)
		return ft_fail(c, "ib_dma_map_sg failed");
	ret = ib_map_mr_sg(mr, sg, n, NULL, page_size);
	if (ret != n) {
		ib_dma_unmap_sg(c->dev, sg, n, DMA_TO_DEVICE);
		return ft_fail(c, "ib_map_mr_sg mapped %d of %d", ret, n);
	}
	return 0;
}

/* The source byte at @off of the region the pieces make. */
static u8 ft_region_byte(struct ft_ctx *c, const struct ft_piece *p, int n,
			 u64 off)
{
	int i;

	for (i = 0; i < n; i++) {
		if (off < p[i].len)
			return c->src[p[i].off + off];
		off -= p[i].len;
	}
	return 0;
}

/* A gather entry: @off bytes into the region, @len bytes. */
struct ft_range {
	u32 off;
	u32 len;
};

struct ft_case {
	const char *name;
	struct ft_piece pieces[FT_MAX_SG];
	int npieces;
	unsigned int page_size;
	int access;
	/* Gather list after the header; offsets into the region. */
	struct ft_range ranges[FT_MAX_SGE - 1];
	int nranges;
	/* Register once and complete it, then invalidate and register anew. */
	bool reuse;
	/* The SEND goes in a post of its own, after the REG_MR completed. */
	bool separate;
	/* LOCAL_INV between REG_MR and the SEND: the SEND must fail. */
	bool inv_before_send;
	/* An RDMA READ of the receiver's buffer into the ranges instead. */
	bool read;
	/* Expected status of the SEND (or READ). */
	enum ib_wc_status status;
};

static int ft_expect_wc(struct ft_ctx *c, int i, u64 wr_id,
			enum ib_wc_status status, struct ib_wc *wc)
{
	int ret = ft_wait_wc(c, c->cq[i], wc);

	if (ret)
		return ft_fail(c, "QP %d: no completion of wr %llu: %d", i,
			       wr_id, ret);
	if (wc->wr_id != wr_id || wc->status != status)
		return ft_fail(c, "QP %d: wr %llu status %d (%s), want wr %llu %s",
			       i, wc->wr_id, wc->status,
			       ib_wc_status_msg(wc->status), wr_id,
			       ib_wc_status_msg(status));
	return 0;
}

/* REG_MR of @mr alone, signaled, on QP @i; waits for it. */
static int ft_reg_alone(struct ft_ctx *c, int i, struct ib_mr *mr, int access)
{
	struct ib_reg_wr reg = {
		.wr = { .wr_id = FT_WR_REG, .opcode = IB_WR_REG_MR,
			.send_flags = IB_SEND_SIGNALED },
		.mr = mr, .key = mr->rkey, .access = access,
	};
	struct ib_wc wc;
	int ret;

	ret = ib_post_send(c->qp[i], &reg.wr, NULL);
	if (ret)
		return ft_fail(c, "post REG_MR: %d", ret);
	return ft_expect_wc(c, i, FT_WR_REG, IB_WC_SUCCESS, &wc);
}

static int ft_run(struct ft_ctx *c, const struct ft_case *t)
{
	struct scatterlist sg[FT_MAX_SG], rsg;
	struct ib_mr *mr, *rmr = NULL;
	struct ib_sge sge[FT_MAX_SGE], rsge;
	struct ib_send_wr inv = { .wr_id = FT_WR_INV,
				  .opcode = IB_WR_LOCAL_INV };
	struct ib_send_wr inv2 = inv;
	struct ib_reg_wr reg = {
		.wr = { .wr_id = FT_WR_REG, .opcode = IB_WR_REG_MR },
		.access = t->access,
	};
	struct ib_rdma_wr data = {
		.wr = { .wr_id = FT_WR_DATA, .send_flags = IB_SEND_SIGNALED,
			.sg_list = sge },
	};
	struct ib_recv_wr recv = { .wr_id = FT_WR_RECV, .sg_list = &rsge,
				   .num_sge = 1 };
	struct ib_send_wr *first;
	u32 total = 0, k, j;
	int i, ns = 0, ret;
	struct ib_wc wc;

	ret = ft_qps_up(c);
	if (ret)
		return ret;
	mr = ib_alloc_mr(c->pd, IB_MR_TYPE_MEM_REG, FT_MAX_SG * 8);
	if (IS_ERR(mr)) {
		ret = ft_fail(c, "ib_alloc_mr: %ld", PTR_ERR(mr));
		goto out_qps;
	}
	ret = ft_map(c, mr, t->pieces, t->npieces, t->page_size, sg);
	if (ret)
		goto out_mr;

	memset(c->dst, FT_RECV_FILL, FT_DST_SIZE);
	if (t->read) {
		/* The peer's buffer, readable through a key of its own. */
		for (k = 0; k < FT_DST_SIZE; k++)
			c->dst[k] = ft_pattern(k + 5);
		rmr = ib_alloc_mr(c->pd, IB_MR_TYPE_MEM_REG, FT_MAX_SG * 8);
		if (IS_ERR(rmr)) {
			ret = ft_fail(c, "ib_alloc_mr: %ld", PTR_ERR(rmr));
			rmr = NULL;
			goto out_unmap;
		}
		sg_init_one(&rsg, c->dst, FT_DST_SIZE);
		ib_dma_map_sg(c->dev, &rsg, 1, DMA_TO_DEVICE);
		if (ib_map_mr_sg(rmr, &rsg, 1, NULL, PAGE_SIZE) != 1) {
			ret = ft_fail(c, "ib_map_mr_sg of the READ source");
			goto out_unmap;
		}
		ret = ft_reg_alone(c, 1, rmr, IB_ACCESS_REMOTE_READ);
		if (ret)
			goto out_unmap;
		/* The sink: the region's bytes are overwritten. */
		memset(c->src, FT_RECV_FILL, FT_SRC_SIZE);
	} else {
		for (k = 0; k < FT_SRC_SIZE; k++)
			c->src[k] = ft_pattern(k);
		rsge.addr = (uintptr_t)c->dst;
		rsge.length = FT_DST_SIZE;
		rsge.lkey = c->pd->local_dma_lkey;
		ret = ib_post_recv(c->qp[1], &recv, NULL);
		if (ret) {
			ret = ft_fail(c, "post_recv: %d", ret);
			goto out_unmap;
		}
		/* Header bytes first, from outside the MR, as iSER's. */
		for (k = 0; k < FT_HDR_SIZE; k++)
			c->hdr[k] = 0xa0 ^ k;
		sge[ns].addr = (uintptr_t)c->hdr;
		sge[ns].length = FT_HDR_SIZE;
		sge[ns].lkey = c->pd->local_dma_lkey;
		memcpy(c->expect, c->hdr, FT_HDR_SIZE);
		total = FT_HDR_SIZE;
		ns++;
	}

	if (t->reuse) {
		ret = ft_reg_alone(c, 0, mr, t->access);
		if (ret)
			goto out_unmap;
	}
	/* As iSER does: the next key byte for each registration. */
	inv.ex.invalidate_rkey = mr->rkey;
	ib_update_fast_reg_key(mr, ib_inc_rkey(mr->rkey));
	reg.mr = mr;
	reg.key = mr->rkey;
	inv2.ex.invalidate_rkey = mr->rkey;

	for (i = 0; i < t->nranges; i++, ns++) {
		const struct ft_range *r = &t->ranges[i];

		sge[ns].addr = mr->iova + r->off;
		sge[ns].length = r->len;
		sge[ns].lkey = mr->lkey;
		for (j = 0; j < r->len; j++)
			c->expect[total + j] = t->read ?
				ft_pattern(total + j + 5) :
				ft_region_byte(c, t->pieces, t->npieces,
					       r->off + j);
		total += r->len;
	}
	data.wr.num_sge = ns;
	if (t->read) {
		data.wr.opcode = IB_WR_RDMA_READ;
		data.remote_addr = rmr->iova;
		data.rkey = rmr->rkey;
	} else {
		data.wr.opcode = IB_WR_SEND;
	}

	/* LOCAL_INV (a reused MR), REG_MR, [LOCAL_INV], SEND: one chain. */
	first = &reg.wr;
	if (t->reuse) {
		inv.next = &reg.wr;
		first = &inv;
	}
	if (t->inv_before_send) {
		reg.wr.next = &inv2;
		inv2.next = &data.wr;
	} else if (!t->separate) {
		reg.wr.next = &data.wr;
	} else {
		reg.wr.send_flags = IB_SEND_SIGNALED;
	}
	ret = ib_post_send(c->qp[0], first, NULL);
	if (ret) {
		ret = ft_fail(c, "post_send: %d", ret);
		goto out_unmap;
	}
	if (t->separate) {
		ret = ft_expect_wc(c, 0, FT_WR_REG, IB_WC_SUCCESS, &wc);
		if (ret)
			goto out_unmap;
		ret = ib_post_send(c->qp[0], &data.wr, NULL);
		if (ret) {
			ret = ft_fail(c, "post_send: %d", ret);
			goto out_unmap;
		}
	}
	ret = ft_expect_wc(c, 0, FT_WR_DATA, t->status, &wc);
	if (ret || t->status != IB_WC_SUCCESS)
		goto out_unmap;

	if (t->read) {
		u32 at = 0;

		/* Each range of the region holds the bytes read into it. */
		for (i = 0; i < t->nranges; i++) {
			const struct ft_range *r = &t->ranges[i];

			for (j = 0; j < r->len; j++, at++) {
				u8 got = ft_region_byte(c, t->pieces,
							t->npieces, r->off + j);

				if (got != c->expect[at]) {
					ret = ft_fail(c, "READ: range %d byte %u: %#x, want %#x",
						      i, j, got, c->expect[at]);
					goto out_unmap;
				}
			}
		}
		goto out_unmap;
	}
	ret = ft_expect_wc(c, 1, FT_WR_RECV, IB_WC_SUCCESS, &wc);
	if (ret)
		goto out_unmap;
	if (wc.byte_len != total) {
		ret = ft_fail(c, "received %u bytes, sent %u", wc.byte_len,
			      total);
		goto out_unmap;
	}
	for (k = 0; k < total; k++) {
		if (c->dst[k] != c->expect[k]) {
			ret = ft_fail(c, "received byte %u is %#x, want %#x",
				      k, c->dst[k], c->expect[k]);
			goto out_unmap;
		}
	}
	if (c->dst[total] != FT_RECV_FILL)
		ret = ft_fail(c, "byte %u after the message was written", total);

out_unmap:
	/* Nothing may be using the MRs when they go: the QPs first. */
	ft_qps_down(c);
	ib_dma_unmap_sg(c->dev, sg, t->npieces, DMA_TO_DEVICE);
	if (rmr) {
		ib_dma_unmap_sg(c->dev, &rsg, 1, DMA_TO_DEVICE);
		ib_dereg_mr(rmr);
	}
out_mr:
	ib_dereg_mr(mr);
out_qps:
	ft_qps_down(c);
	return ret;
}

#define FT_RW	(IB_ACCESS_LOCAL_WRITE | IB_ACCESS_REMOTE_READ | \
		 IB_ACCESS_REMOTE_WRITE)
#define FT_P	PAGE_SIZE

static const struct ft_case ft_cases[] = {
	{
		.name = "REG_MR and a SEND of the whole region in one post",
		.pieces = { { 0, FT_SRC_SIZE } }, .npieces = 1,
		.page_size = FT_P, .access = FT_RW,
		.ranges = { { 0, FT_SRC_SIZE } }, .nranges = 1,
	}, {
		.name = "SEND of part of the region (iSER's immediate data)",
		.pieces = { { 0, FT_SRC_SIZE } }, .npieces = 1,
		.page_size = FT_P, .access = FT_RW,
		.ranges = { { 0, 2 * FT_P } }, .nranges = 1,
	}, {
		.name = "three SGEs at offsets, first page at an offset, pages out of order",
		.pieces = { { 2 * FT_P + 300, FT_P - 300 }, { 0, FT_P },
			    { 3 * FT_P, 3000 } }, .npieces = 3,
		.page_size = FT_P, .access = FT_RW,
		.ranges = { { 17, 2000 }, { FT_P - 400, FT_P + 200 },
			    { 2 * FT_P - 300 + 2500, 500 } }, .nranges = 3,
	}, {
		.name = "MR with remote read access only: local read allowed",
		.pieces = { { FT_P + 100, 2 * FT_P } }, .npieces = 1,
		.page_size = FT_P, .access = IB_ACCESS_REMOTE_READ,
		.ranges = { { 50, 3000 }, { 5000, 2000 } }, .nranges = 2,
	}, {
		.name = "page size 2 KiB, region at an offset",
		.pieces = { { 1000, 9000 } }, .npieces = 1,
		.page_size = SZ_2K, .access = FT_RW,
		.ranges = { { 1, 2047 }, { 3000, 6000 } }, .nranges = 2,
	}, {
		.name = "page size 8 KiB, region at an offset",
		.pieces = { { 5000, 10000 } }, .npieces = 1,
		.page_size = SZ_8K, .access = FT_RW,
		.ranges = { { 3000, 4000 }, { 9000, 1000 } }, .nranges = 2,
	}, {
		.name = "LOCAL_INV, REG_MR with a new key and SEND in one post",
		.pieces = { { FT_P + 64, 2 * FT_P } }, .npieces = 1,
		.page_size = FT_P, .access = FT_RW,
		.ranges = { { 0, FT_P }, { FT_P + 8, 1024 } }, .nranges = 2,
		.reuse = true,
	}, {
		.name = "RDMA READ into the region, registered in the same post",
		.pieces = { { 2 * FT_P + 300, FT_P - 300 }, { 0, FT_P } },
		.npieces = 2, .page_size = FT_P,
		.access = IB_ACCESS_LOCAL_WRITE,
		.ranges = { { 10, 3000 }, { FT_P, 1200 } }, .nranges = 2,
		.read = true,
	}, {
		.name = "a SEND past the registered length fails",
		.pieces = { { 0, 2 * FT_P } }, .npieces = 1,
		.page_size = FT_P, .access = FT_RW,
		.ranges = { { 2 * FT_P - 100, 200 } }, .nranges = 1,
		.status = IB_WC_LOC_PROT_ERR,
	}, {
		.name = "a SEND with a key invalidated before it in the post fails",
		.pieces = { { 0, 2 * FT_P } }, .npieces = 1,
		.page_size = FT_P, .access = FT_RW,
		.ranges = { { 0, 600 } }, .nranges = 1,
		.inv_before_send = true, .status = IB_WC_LOC_PROT_ERR,
	}, {
		.name = "SEND posted after its REG_MR completed",
		.pieces = { { FT_P + 100, 2 * FT_P } }, .npieces = 1,
		.page_size = FT_P, .access = FT_RW,
		.ranges = { { 0, 2 * FT_P } }, .nranges = 1,
		.separate = true,
	},
};

/* ---- masked atomics ---------------------------------------------------- */

struct ft_atomic_case {
	const char *name;
	enum ib_wr_opcode op;
	u64 old, compare_add, swap, compare_add_mask, swap_mask;
	int access;		/* of the target region */
	int num_sge;		/* 0: 1 */
	enum ib_wc_status status;
};

static bool ft_masked(enum ib_wr_opcode op)
{
	return op == IB_WR_MASKED_ATOMIC_CMP_AND_SWP ||
	       op == IB_WR_MASKED_ATOMIC_FETCH_AND_ADD;
}

static bool ft_cas(enum ib_wr_opcode op)
{
	return op == IB_WR_ATOMIC_CMP_AND_SWP ||
	       op == IB_WR_MASKED_ATOMIC_CMP_AND_SWP;
}

/*
 * The word an atomic leaves, bit by bit: compare-and-swap compares the
 * bits of the compare mask and swaps those of the swap mask; fetch-and-add
 * drops the carry out of every bit of its mask.
 */
static u64 ft_atomic_model(const struct ft_atomic_case *t)
{
	u64 cmask = t->compare_add_mask, smask = t->swap_mask, r = 0;
	int b, carry = 0;

	if (!ft_masked(t->op)) {
		cmask = ft_cas(t->op) ? ~0ULL : 0;
		smask = ~0ULL;
	}
	if (ft_cas(t->op))
		return (t->old ^ t->compare_add) & cmask ? t->old :
		       (t->old & ~smask) | (t->swap & smask);
	for (b = 0; b < 64; b++) {
		int sum = (int)(t->old >> b & 1) +
			  (int)(t->compare_add >> b & 1) + carry;

		r |= (u64)(sum & 1) << b;
		carry = (sum >> 1) && !(cmask >> b & 1);
	}
	return r;
}

static enum ib_wc_opcode ft_atomic_wc(enum ib_wr_opcode op)
{
	switch (op) {
	case IB_WR_MASKED_ATOMIC_CMP_AND_SWP:
		return IB_WC_MASKED_COMP_SWAP;
	case IB_WR_MASKED_ATOMIC_FETCH_AND_ADD:
		return IB_WC_MASKED_FETCH_ADD;
	case IB_WR_ATOMIC_CMP_AND_SWP:
		return IB_WC_COMP_SWAP;
	default:
		return IB_WC_FETCH_ADD;
	}
}

#define FT_WORD_OFF	8	/* the target word, in the region at c->dst */

/*
 * QP 1 registers the first page of c->dst, QP 0 sends the atomic to the
 * word at FT_WORD_OFF with its result into c->hdr (the PD's local DMA
 * lkey).  No other byte of either buffer may change.
 */
static int ft_atomic_run(struct ft_ctx *c, const struct ft_atomic_case *t)
{
	u64 want = t->status == IB_WC_SUCCESS ? ft_atomic_model(t) : t->old;
	struct ib_sge sge[2];
	struct ib_atomic_wr aw = {
		.wr = { .wr_id = FT_WR_DATA, .opcode = t->op,
			.send_flags = IB_SEND_SIGNALED, .sg_list = sge,
			.num_sge = t->num_sge ? t->num_sge : 1 },
		.compare_add = t->compare_add, .swap = t->swap,
		.compare_add_mask = t->compare_add_mask,
		.swap_mask = t->swap_mask,
	};
	struct scatterlist sg;
	u64 *word = (u64 *)(c->dst + FT_WORD_OFF), got;
	struct ib_mr *mr;
	struct ib_wc wc;
	u64 dma;
	int ret, k;

	ret = ft_qps_up(c);
	if (ret)
		return ret;
	memset(c->dst, FT_RECV_FILL, PAGE_SIZE);
	*word = t->old;
	memset(c->hdr, FT_RECV_FILL, FT_HDR_SIZE);
	mr = ib_alloc_mr(c->pd, IB_MR_TYPE_MEM_REG, 1);
	if (IS_ERR(mr)) {
		ret = ft_fail(c, "ib_alloc_mr: %ld", PTR_ERR(mr));
		goto out_qps;
	}
	sg_init_one(&sg, c->dst, PAGE_SIZE);
	if (ib_dma_map_sg(c->dev, &sg, 1, DMA_BIDIRECTIONAL) != 1) {
		ret = ft_fail(c, "ib_dma_map_sg failed");
		goto out_mr;
	}
	ret = ib_map_mr_sg(mr, &sg, 1, NULL, PAGE_SIZE);
	if (ret != 1) {
		ret = ft_fail(c, "ib_map_mr_sg: %d", ret);
		goto out_unmap;
	}
	ret = ft_reg_alone(c, 1, mr, t->access);
	if (ret)
		goto out_unmap;

	dma = ib_dma_map_single(c->dev, c->hdr, FT_HDR_SIZE, DMA_FROM_DEVICE);
	if (ib_dma_mapping_error(c->dev, dma)) {
		ret = ft_fail(c, "ib_dma_map_single failed");
		goto out_unmap;
	}
	for (k = 0; k < 2; k++) {
		sge[k].addr = dma + 8 * k;
		sge[k].length = 8 / aw.wr.num_sge;
		sge[k].lkey = c->pd->local_dma_lkey;
	}
	aw.remote_addr = mr->iova + FT_WORD_OFF;
	aw.rkey = mr->rkey;
	ret = ib_post_send(c->qp[0], &aw.wr, NULL);
	if (t->num_sge == 2) {
		/* The masks take the second SGE's place: not postable. */
		if (ret != -EINVAL)
			ret = ft_fail(c, "post with two SGEs: %d, want %d",
				      ret, -EINVAL);
		else
			ret = 0;
		goto out_dma;
	}
	if (ret) {
		ret = ft_fail(c, "post atomic: %d", ret);
		goto out_dma;
	}
	ret = ft_expect_wc(c, 0, FT_WR_DATA, t->status, &wc);
	if (ret)
		goto out_dma;
	if (t->status == IB_WC_SUCCESS &&
	    (wc.opcode != ft_atomic_wc(t->op) || wc.byte_len != 8)) {
		ret = ft_fail(c, "completion opcode %d byte_len %u, want %d 8",
			      wc.opcode, wc.byte_len, ft_atomic_wc(t->op));
		goto out_dma;
	}
	memcpy(&got, c->hdr, sizeof(got));
	if (t->status == IB_WC_SUCCESS && got != t->old) {
		ret = ft_fail(c, "returned %#llx, want %#llx", got, t->old);
		goto out_dma;
	}
	if (*word != want) {
		ret = ft_fail(c, "the word is %#llx, want %#llx", *word, want);
		goto out_dma;
	}
	for (k = 0; k < PAGE_SIZE; k++) {
		if ((k < FT_WORD_OFF || k >= FT_WORD_OFF + 8) &&
		    c->dst[k] != FT_RECV_FILL) {
			ret = ft_fail(c, "target byte %d changed", k);
			goto out_dma;
		}
	}
	for (k = t->status == IB_WC_SUCCESS ? 8 : 0; k < FT_HDR_SIZE; k++) {
		if (c->hdr[k] != FT_RECV_FILL) {
			ret = ft_fail(c, "result byte %d changed", k);
			goto out_dma;
		}
	}
out_dma:
	/* Nothing may be using the MR when it goes: the QPs first. */
	ft_qps_down(c);
	ib_dma_unmap_single(c->dev, dma, FT_HDR_SIZE, DMA_FROM_DEVICE);
out_unmap:
	ft_qps_down(c);
	ib_dma_unmap_sg(c->dev, &sg, 1, DMA_BIDIRECTIONAL);
out_mr:
	ib_dereg_mr(mr);
out_qps:
	ft_qps_down(c);
	return ret;
}

#define FT_ATOMIC	(IB_ACCESS_LOCAL_WRITE | IB_ACCESS_REMOTE_ATOMIC)

static const struct ft_atomic_case ft_atomic_cases[] = {
	{
		.name = "masked CAS: the low 48 bits compared, bits 16-31 swapped",
		.op = IB_WR_MASKED_ATOMIC_CMP_AND_SWP,
		.old = 0x1122334455667788ULL,
		.compare_add = 0xffff334455667788ULL,
		.swap = 0xaaaaaaaaaaaaaaaaULL,
		.compare_add_mask = 0x0000ffffffffffffULL,
		.swap_mask = 0x00000000ffff0000ULL, .access = FT_ATOMIC,
	}, {
		.name = "masked CAS: a compared bit differs, nothing swapped",
		.op = IB_WR_MASKED_ATOMIC_CMP_AND_SWP,
		.old = 0x1122334455667788ULL,
		.compare_add = 0x1122334455667789ULL, .swap = ~0ULL,
		.compare_add_mask = 0xff, .swap_mask = ~0ULL,
		.access = FT_ATOMIC,
	}, {
		.name = "masked CAS with all-ones masks (the IBA's COMPARE SWAP)",
		.op = IB_WR_MASKED_ATOMIC_CMP_AND_SWP,
		.old = 5, .compare_add = 5, .swap = 6,
		.compare_add_mask = ~0ULL, .swap_mask = ~0ULL,
		.access = FT_ATOMIC,
	}, {
		.name = "masked FAA: four 16-bit fields, carries dropped",
		.op = IB_WR_MASKED_ATOMIC_FETCH_AND_ADD,
		.old = 0xffff0001fffe7fffULL,
		.compare_add = 0x0001000100030001ULL,
		.compare_add_mask = 0x8000800080008000ULL,
		.access = FT_ATOMIC,
	}, {
		.name = "masked FAA with mask 0 (the IBA's FETCH ADD), wrapping",
		.op = IB_WR_MASKED_ATOMIC_FETCH_AND_ADD,
		.old = 0xfffffffffffffff0ULL, .compare_add = 0x20,
		.access = FT_ATOMIC,
	}, {
		.name = "a plain FAA beside them",
		.op = IB_WR_ATOMIC_FETCH_AND_ADD,
		.old = 41, .compare_add = 1, .access = FT_ATOMIC,
	}, {
		.name = "masked FAA into a region without REMOTE_ATOMIC (as RDS registers) is refused",
		.op = IB_WR_MASKED_ATOMIC_FETCH_AND_ADD,
		.old = 7, .compare_add = 1, .access = FT_RW,
		.status = IB_WC_REM_ACCESS_ERR,
	}, {
		.name = "masked CAS with two SGEs cannot be posted",
		.op = IB_WR_MASKED_ATOMIC_CMP_AND_SWP,
		.old = 1, .compare_add = 1, .swap = 2, .compare_add_mask = 1,
		.swap_mask = 2, .access = FT_ATOMIC, .num_sge = 2,
	},
};

/* Run the atomic cases, numbered from @first; returns how many failed. */
static int ft_atomic_cases_run(struct ft_ctx *c, int first)
{
	bool masked = c->dev->attrs.masked_atomic_cap != IB_ATOMIC_NONE;
	int i, failed = 0;

	for (i = 0; i < ARRAY_SIZE(ft_atomic_cases); i++) {
		const struct ft_atomic_case *t = &ft_atomic_cases[i];

		c->why[0] = 0;
		if (!masked && ft_masked(t->op)) {
			pr_info("vrdma_frmr_test: ok %d %s # SKIP no masked atomics on %s\n",
				first + i, t->name, dev);
		} else if (ft_atomic_run(c, t)) {
			pr_info("vrdma_frmr_test: not ok %d %s: %s\n",
				first + i, t->name, c->why);
			failed++;
		} else {
			pr_info("vrdma_frmr_test: ok %d %s\n", first + i,
				t->name);
		}
	}
	return failed;
}

static int __init ft_init(void)
{
	struct ft_ctx *c;
	int i, failed = 0;
	struct page *pg;

	c = kzalloc(sizeof(*c), GFP_KERNEL);
	if (!c)
		return -ENOMEM;
	c->port = 1;
	c->dev = ib_device_get_by_name(dev, RDMA_DRIVER_UNKNOWN);
	if (!c->dev) {
		pr_err("vrdma_frmr_test: no RDMA device %s\n", dev);
		kfree(c);
		return -ENODEV;
	}
	pg = alloc_pages(GFP_KERNEL, FT_SRC_ORDER);
	c->src = pg ? page_address(pg) : NULL;
	c->dst = kmalloc(FT_DST_SIZE, GFP_KERNEL);
	c->expect = kmalloc(FT_DST_SIZE, GFP_KERNEL);
	c->hdr = kmalloc(FT_HDR_SIZE, GFP_KERNEL);
	c->pd = ib_alloc_pd(c->dev, 0);
	if (!c->src || !c->dst || !c->expect || !c->hdr || IS_ERR(c->pd) ||
	    ft_find_gid(c)) {
		pr_err("vrdma_frmr_test: setup failed (memory, PD or no RoCEv2 IPv4 GID on %s)\n",
		       dev);
		failed = 1;
		goto out;
	}
	for (i = 0; i < ARRAY_SIZE(ft_cases); i++) {
		c->why[0] = 0;
		if (ft_run(c, &ft_cases[i])) {
			pr_info("vrdma_frmr_test: not ok %d %s: %s\n", i + 1,
				ft_cases[i].name, c->why);
			failed++;
		} else {
			pr_info("vrdma_frmr_test: ok %d %s\n", i + 1,
				ft_cases[i].name);
		}
	}
	failed += ft_atomic_cases_run(c, i + 1);
out:
	if (!IS_ERR_OR_NULL(c->pd))
		ib_dealloc_pd(c->pd);
	kfree(c->hdr);
	kfree(c->expect);
	kfree(c->dst);
	if (c->src)
		free_pages((unsigned long)c->src, FT_SRC_ORDER);
	ib_device_put(c->dev);
	kfree(c);
	return failed ? -EIO : 0;
}

static void __exit ft_exit(void)
{
}

module_init(ft_init);
module_exit(ft_exit);
MODULE_LICENSE("GPL");
MODULE_DESCRIPTION("vrdma selftest: fast-reg MR keys in gather lists, masked atomics");
