// SPDX-License-Identifier: GPL-2.0
/*
 * The vrdma device as an application sees it through libibverbs and our
 * provider: discovery, device and port attributes, PDs, port events, and
 * what happens to an open context when the device is deleted under it;
 * and the driver request (struct vrdma_uverbs_req) of every verb, sent
 * with raw uverbs commands.
 *
 * Runs as root in the test VM; loads vrdma.ko from the build tree if it is
 * not loaded yet; each test creates its own veth pair and vrdma device.
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <infiniband/verbs.h>
#include <rdma/ib_user_verbs.h>
#include <rdma/vrdma-abi.h>

#include "kselftest_harness.h"
#include "gid_lib.h"
#include "ko_lib.h"

#define DEV_NAME "vrdmat0"
/* Seconds; the harness default (30) is too short for a debug kernel. */
#define DEV_TEST_TIMEOUT 180

static int sh(const char *cmd)
{
	int rc = system(cmd);

	return WIFEXITED(rc) ? WEXITSTATUS(rc) : -1;
}

/*
 * Wait up to @ms for an async event on @ctx; 0 if none came.  GID table
 * changes come and go with addresses and link state: they are skipped.
 */
static enum ibv_event_type wait_async(struct ibv_context *ctx, int ms)
{
	struct pollfd pfd = { .fd = ctx->async_fd, .events = POLLIN };
	struct ibv_async_event ev;
	enum ibv_event_type type;

	do {
		if (poll(&pfd, 1, ms) != 1)
			return 0;
		if (ibv_get_async_event(ctx, &ev))
			return 0;
		type = ev.event_type;
		ibv_ack_async_event(&ev);
	} while (type == IBV_EVENT_GID_CHANGE);
	return type;
}

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

FIXTURE(dev) {
	struct ibv_context *ctx;
	int deleted;
};

FIXTURE_SETUP(dev)
{
	const char *why;

	ASSERT_EQ(0, vrdma_ko_load(&why)) {
		TH_LOG("%s", why);
	}
	sh("ip link del vdt0 2>/dev/null");
	ASSERT_EQ(0, sh("ip link add vdt0 type veth peer name vdt1 && "
			"ip link set vdt0 up && ip link set vdt1 up"));
	ASSERT_EQ(0, sh("rdma link add " DEV_NAME " type vrdma netdev vdt0"));
	self->ctx = rc_open_by_name(DEV_NAME);
	ASSERT_NE(NULL, self->ctx) {
		TH_LOG("ibv_open_device(%s) failed", DEV_NAME);
	}
	self->deleted = 0;
}

FIXTURE_TEARDOWN(dev)
{
	if (self->ctx)
		ibv_close_device(self->ctx);
	if (!self->deleted)
		sh("rdma link delete " DEV_NAME);
	sh("ip link del vdt0 2>/dev/null");
}

TEST_F_TIMEOUT(dev, query_device, DEV_TEST_TIMEOUT)
{
	struct ibv_device_attr_ex ax;
	struct ibv_device_attr *a = &ax.orig_attr;

	memset(&ax, 0xa5, sizeof(ax));
	ASSERT_EQ(0, ibv_query_device_ex(self->ctx, NULL, &ax));
	EXPECT_STREQ("1.0.0", a->fw_ver);
	EXPECT_EQ(0xffffff, a->vendor_id);
	EXPECT_EQ(0x7672, a->vendor_part_id);
	EXPECT_NE(0, a->node_guid);
	EXPECT_EQ(a->node_guid, a->sys_image_guid);
	EXPECT_EQ(1ULL << 40, a->max_mr_size);
	EXPECT_EQ(16384, a->max_qp);
	EXPECT_EQ(16384, a->max_qp_wr);
	EXPECT_EQ(32, a->max_sge);
	EXPECT_EQ(32, a->max_sge_rd);
	EXPECT_EQ(16384, a->max_cq);
	EXPECT_EQ(65535, a->max_cqe);
	EXPECT_EQ(65536, a->max_mr);
	EXPECT_EQ(65536, a->max_pd);
	EXPECT_EQ(128, a->max_qp_rd_atom);
	EXPECT_EQ(128, a->max_qp_init_rd_atom);
	EXPECT_EQ(IBV_ATOMIC_HCA, a->atomic_cap);
	EXPECT_EQ(4096, a->max_srq);
	EXPECT_EQ(16384, a->max_srq_wr);
	EXPECT_EQ(1, a->max_pkeys);
	EXPECT_EQ(1, a->phys_port_cnt);
	EXPECT_EQ(0, ax.comp_mask);
}

TEST_F_TIMEOUT(dev, query_port, DEV_TEST_TIMEOUT)
{
	struct ibv_port_attr pa;
	union ibv_gid gid;

	ASSERT_EQ(0, ibv_query_port(self->ctx, 1, &pa));
	EXPECT_EQ(IBV_PORT_ACTIVE, pa.state);
	EXPECT_EQ(IBV_LINK_LAYER_ETHERNET, pa.link_layer);
	EXPECT_EQ(IBV_MTU_4096, pa.max_mtu);
	EXPECT_EQ(IBV_MTU_1024, pa.active_mtu);	/* veth MTU 1500 */
	EXPECT_EQ(32, pa.gid_tbl_len);
	EXPECT_EQ(1, pa.pkey_tbl_len);
	EXPECT_EQ(1U << 31, pa.max_msg_sz);
	EXPECT_EQ(5, pa.phys_state);		/* LinkUp */

	/* The IPv6 link-local GID, added by ib_core from the netdev. */
	ASSERT_EQ(0, sh("for i in $(seq 50); do "
			"grep -q ^fe80 /sys/class/infiniband/" DEV_NAME
			"/ports/1/gids/0 && exit 0; sleep 0.1; done; exit 1"));
	ASSERT_EQ(0, ibv_query_gid(self->ctx, 1, 0, &gid));
	EXPECT_EQ(0xfe, gid.raw[0]);
	EXPECT_EQ(0x80, gid.raw[1]);

	/* Port 2 does not exist. */
	EXPECT_NE(0, ibv_query_port(self->ctx, 2, &pa));
}

TEST_F_TIMEOUT(dev, pd, DEV_TEST_TIMEOUT)
{
	struct ibv_pd *pd[64];
	int i;

	for (i = 0; i < 64; i++) {
		pd[i] = ibv_alloc_pd(self->ctx);
		ASSERT_NE(NULL, pd[i]);
	}
	for (i = 1; i < 64; i++)
		EXPECT_NE(pd[0]->handle, pd[i]->handle);
	for (i = 0; i < 64; i++)
		EXPECT_EQ(0, ibv_dealloc_pd(pd[i]));
}

TEST_F_TIMEOUT(dev, port_events, DEV_TEST_TIMEOUT)
{
	struct ibv_port_attr pa;

	ASSERT_EQ(0, sh("ip link set vdt1 down"));	/* carrier off */
	EXPECT_EQ(IBV_EVENT_PORT_ERR, wait_async(self->ctx, 5000));
	ASSERT_EQ(0, ibv_query_port(self->ctx, 1, &pa));
	EXPECT_EQ(IBV_PORT_DOWN, pa.state);

	ASSERT_EQ(0, sh("ip link set vdt1 up"));
	EXPECT_EQ(IBV_EVENT_PORT_ACTIVE, wait_async(self->ctx, 5000));
	ASSERT_EQ(0, ibv_query_port(self->ctx, 1, &pa));
	EXPECT_EQ(IBV_PORT_ACTIVE, pa.state);

	ASSERT_EQ(0, sh("ip link set vdt0 down"));	/* admin down */
	EXPECT_EQ(IBV_EVENT_PORT_ERR, wait_async(self->ctx, 5000));
	ASSERT_EQ(0, sh("ip link set vdt0 up"));
	EXPECT_EQ(IBV_EVENT_PORT_ACTIVE, wait_async(self->ctx, 5000));

	/* An MTU change is no state change: no event. */
	ASSERT_EQ(0, sh("ip link set vdt0 mtu 9000"));
	EXPECT_EQ(0, wait_async(self->ctx, 500));
	ASSERT_EQ(0, ibv_query_port(self->ctx, 1, &pa));
	EXPECT_EQ(IBV_MTU_4096, pa.active_mtu);
}

/*
 * "rdma link delete" while a process has the device open must neither wait
 * for the process nor break it: the context is disassociated, its verbs
 * fail with EIO, it gets IBV_EVENT_DEVICE_FATAL, and closing it is clean.
 */
TEST_F_TIMEOUT(dev, delete_with_open_context, DEV_TEST_TIMEOUT)
{
	struct ibv_pd *pd, *pd2;
	double t0;

	pd = ibv_alloc_pd(self->ctx);
	ASSERT_NE(NULL, pd);

	t0 = now();
	ASSERT_EQ(0, sh("timeout 30 rdma link delete " DEV_NAME));
	self->deleted = 1;
	EXPECT_LT(now() - t0, 10.0);
	EXPECT_NE(0, sh("ls /sys/class/infiniband/" DEV_NAME " 2>/dev/null"));

	EXPECT_EQ(IBV_EVENT_DEVICE_FATAL, wait_async(self->ctx, 5000));
	pd2 = ibv_alloc_pd(self->ctx);
	EXPECT_EQ(NULL, pd2);
	EXPECT_EQ(EIO, errno);
	/* Destroying what was there is still allowed and clean. */
	EXPECT_EQ(0, ibv_dealloc_pd(pd));
}

/* Same, with the netdev deleted instead of the link. */
TEST_F_TIMEOUT(dev, netdev_delete_with_open_context, DEV_TEST_TIMEOUT)
{
	enum ibv_event_type ev;
	struct ibv_pd *pd;

	pd = ibv_alloc_pd(self->ctx);
	ASSERT_NE(NULL, pd);
	ASSERT_EQ(0, sh("timeout 30 ip link del vdt0"));
	self->deleted = 1;
	/* The link may be reported down first, as the netdev goes. */
	ev = wait_async(self->ctx, 10000);
	if (ev == IBV_EVENT_PORT_ERR)
		ev = wait_async(self->ctx, 10000);
	EXPECT_EQ(IBV_EVENT_DEVICE_FATAL, ev);
	EXPECT_EQ(NULL, ibv_alloc_pd(self->ctx));
	EXPECT_EQ(0, ibv_dealloc_pd(pd));
}

/*
 * The driver request of every verb, as struct vrdma_uverbs_req says: a
 * shorter request, none included, is today's and accepted, and so are zero
 * bytes beyond it; an unknown comp_mask bit and non-zero bytes beyond it
 * ask for what the module cannot do (EOPNOTSUPP), a non-zero reserved
 * field is malformed (EINVAL).  The commands are written to a uverbs file
 * of our own with write(), as libibverbs would send them from a provider
 * that appends the request to the core command.
 */
enum req_kind {
	REQ_NONE,		/* what today's provider sends */
	REQ_SHORT,		/* 4 zero bytes */
	REQ_LONG_ZERO,		/* the header and 8 more bytes, all zero */
	REQ_COMP_MASK,		/* an unknown comp_mask bit */
	REQ_RESERVED,		/* reserved not zero */
	REQ_TRAILING,		/* a non-zero byte beyond the header */
	REQ_KINDS
};

static const int req_errno[REQ_KINDS] = {
	[REQ_COMP_MASK] = EOPNOTSUPP,
	[REQ_RESERVED] = EINVAL,
	[REQ_TRAILING] = EOPNOTSUPP,
};

static const char *const req_name[REQ_KINDS] = {
	"none", "short", "long zero", "comp_mask bit", "reserved",
	"trailing byte",
};

struct drv_req {
	struct vrdma_uverbs_req hdr;
	__u8 more[8];
};

/* Fills @req for @kind; returns its length. */
static size_t drv_req_fill(enum req_kind kind, struct drv_req *req)
{
	memset(req, 0, sizeof(*req));
	switch (kind) {
	case REQ_NONE:
		return 0;
	case REQ_SHORT:
		return 4;
	case REQ_LONG_ZERO:
		return sizeof(*req);
	case REQ_COMP_MASK:
		req->hdr.comp_mask = 1u << 31;
		return sizeof(req->hdr);
	case REQ_RESERVED:
		req->hdr.reserved = 1;
		return sizeof(req->hdr);
	default:
		req->more[7] = 0x80;
		return sizeof(*req);
	}
}

/*
 * Writes the uverbs command @cmd: its core part @core (@core_len bytes,
 * starting with the response pointer when @resp_len), then a driver
 * request of @kind; @resp_len bytes of response (core and driver) go to
 * @resp.  Returns 0 or the errno of the command.
 */
static int uv_cmd(int fd, __u32 cmd, void *core, size_t core_len,
		  enum req_kind kind, void *resp, size_t resp_len)
{
	struct {
		struct ib_uverbs_cmd_hdr hdr;
		__u8 body[256];
	} msg = {};
	struct drv_req req;
	size_t req_len = drv_req_fill(kind, &req), len;

	if (resp_len)
		*(__u64 *)core = (uintptr_t)resp;
	len = sizeof(msg.hdr) + core_len + req_len;
	msg.hdr.command = cmd;
	msg.hdr.in_words = len / 4;
	msg.hdr.out_words = resp_len / 4;
	memcpy(msg.body, core, core_len);
	memcpy(msg.body + core_len, &req, req_len);
	if (write(fd, &msg, len) == (ssize_t)len)
		return 0;
	return errno;
}

/*
 * The same for an extended command, whose sizes count 8-byte words (a
 * 4-byte request goes as 8 zero bytes).  MODIFY_QP passes a driver request
 * on only in this form.
 */
static int uv_cmd_ex(int fd, __u32 cmd, void *core, size_t core_len,
		     enum req_kind kind, void *resp, size_t resp_len)
{
	struct {
		struct ib_uverbs_cmd_hdr hdr;
		struct ib_uverbs_ex_cmd_hdr ex;
		__u8 body[256];
	} msg = {};
	struct drv_req req;
	size_t req_len = (drv_req_fill(kind, &req) + 7) & ~7, len;

	len = sizeof(msg.hdr) + sizeof(msg.ex) + core_len + req_len;
	msg.hdr.command = IB_USER_VERBS_CMD_FLAG_EXTENDED | cmd;
	msg.hdr.in_words = core_len / 8;
	msg.hdr.out_words = resp_len / 8;
	msg.ex.response = (uintptr_t)resp;
	msg.ex.provider_in_words = req_len / 8;
	memcpy(msg.body, core, core_len);
	memcpy(msg.body + core_len, &req, req_len);
	if (write(fd, &msg, len) == (ssize_t)len)
		return 0;
	return errno;
}

/* A uverbs file of DEV_NAME, without a context yet; -1 on failure. */
static int uv_open(void)
{
	struct ibv_device **list, **d;
	char path[128] = "";

	list = ibv_get_device_list(NULL);
	if (!list)
		return -1;
	for (d = list; *d; d++)
		if (!strcmp(ibv_get_device_name(*d), DEV_NAME))
			snprintf(path, sizeof(path), "/dev/infiniband/%s",
				 (*d)->dev_name);
	ibv_free_device_list(list);
	return path[0] ? open(path, O_RDWR | O_CLOEXEC) : -1;
}

static int uv_get_context(int fd, enum req_kind kind)
{
	struct ib_uverbs_get_context c = {};
	struct {
		struct ib_uverbs_get_context_resp core;
		struct vrdma_alloc_ucontext_resp drv;
	} r;
	int ret;

	ret = uv_cmd(fd, IB_USER_VERBS_CMD_GET_CONTEXT, &c, sizeof(c), kind,
		     &r, sizeof(r));
	if (!ret)
		close(r.core.async_fd);
	return ret;
}

TEST_F_TIMEOUT(dev, udata_get_context, DEV_TEST_TIMEOUT)
{
	enum req_kind k;
	int fd, ret;

	for (k = 0; k < REQ_KINDS; k++) {
		fd = uv_open();
		ASSERT_LE(0, fd);
		ret = uv_get_context(fd, k);
		EXPECT_EQ(req_errno[k], ret) {
			TH_LOG("GET_CONTEXT with request %s: %s", req_name[k],
			       strerror(ret));
		}
		/* a refused request leaves the file without a context */
		if (ret)
			EXPECT_EQ(0, uv_get_context(fd, REQ_NONE));
		close(fd);
	}
}

/* The objects the verbs under test work on, made with valid requests. */
struct uv_objs {
	int fd;
	__u32 pd, cq, qp, srq, mr;
	union ibv_gid gid;
	int gid_idx;
	char buf[4096];
};

enum uv_verb {
	UV_ALLOC_PD, UV_CREATE_CQ, UV_RESIZE_CQ, UV_CREATE_QP, UV_MODIFY_QP,
	UV_CREATE_SRQ, UV_MODIFY_SRQ, UV_CREATE_AH, UV_REG_MR, UV_REREG_MR,
	UV_ALLOC_MW, UV_VERBS
};

static const char *const uv_verb_name[UV_VERBS] = {
	"ALLOC_PD", "CREATE_CQ", "RESIZE_CQ", "CREATE_QP", "MODIFY_QP",
	"CREATE_SRQ", "MODIFY_SRQ", "CREATE_AH", "REG_MR", "REREG_MR",
	"ALLOC_MW",
};

/* Sends @verb with a request of @kind; the handle it made goes to *@h. */
static int uv_verb(struct uv_objs *o, enum uv_verb verb, enum req_kind kind,
		   __u32 *h)
{
	union {
		struct ib_uverbs_alloc_pd pd;
		struct ib_uverbs_create_cq cq;
		struct ib_uverbs_resize_cq resize;
		struct ib_uverbs_create_qp qp;
		struct ib_uverbs_ex_modify_qp mqp;
		struct ib_uverbs_create_srq srq;
		struct ib_uverbs_modify_srq msrq;
		struct ib_uverbs_create_ah ah;
		struct ib_uverbs_reg_mr mr;
		struct ib_uverbs_rereg_mr rereg;
		struct ib_uverbs_alloc_mw mw;
	} c;
	/* every response starts with the handle, and fits */
	__u32 r[64] = {};
	int ret, n;

	memset(&c, 0, sizeof(c));
	switch (verb) {
	case UV_ALLOC_PD:
		ret = uv_cmd(o->fd, IB_USER_VERBS_CMD_ALLOC_PD, &c.pd,
			     sizeof(c.pd), kind, r,
			     sizeof(struct ib_uverbs_alloc_pd_resp));
		break;
	case UV_CREATE_CQ:
		c.cq.cqe = 16;
		c.cq.comp_channel = -1;
		ret = uv_cmd(o->fd, IB_USER_VERBS_CMD_CREATE_CQ, &c.cq,
			     sizeof(c.cq), kind, r,
			     sizeof(struct ib_uverbs_create_cq_resp) +
			     sizeof(struct vrdma_create_cq_resp));
		break;
	case UV_RESIZE_CQ:
		c.resize.cq_handle = o->cq;
		c.resize.cqe = 32;
		ret = uv_cmd(o->fd, IB_USER_VERBS_CMD_RESIZE_CQ, &c.resize,
			     sizeof(c.resize), kind, r,
			     sizeof(struct ib_uverbs_resize_cq_resp) +
			     sizeof(struct vrdma_create_cq_resp));
		break;
	case UV_CREATE_QP:
		c.qp.pd_handle = o->pd;
		c.qp.send_cq_handle = o->cq;
		c.qp.recv_cq_handle = o->cq;
		c.qp.max_send_wr = 4;
		c.qp.max_recv_wr = 4;
		c.qp.max_send_sge = 1;
		c.qp.max_recv_sge = 1;
		c.qp.qp_type = IBV_QPT_RC;
		ret = uv_cmd(o->fd, IB_USER_VERBS_CMD_CREATE_QP, &c.qp,
			     sizeof(c.qp), kind, r,
			     sizeof(struct ib_uverbs_create_qp_resp) +
			     sizeof(struct vrdma_create_qp_resp));
		break;
	case UV_MODIFY_QP:
		/* RESET to INIT, then INIT to INIT, as often as wanted */
		c.mqp.base.qp_handle = o->qp;
		c.mqp.base.attr_mask = IBV_QP_STATE | IBV_QP_PKEY_INDEX |
				       IBV_QP_PORT | IBV_QP_ACCESS_FLAGS;
		c.mqp.base.qp_state = IBV_QPS_INIT;
		c.mqp.base.port_num = 1;
		return uv_cmd_ex(o->fd, IB_USER_VERBS_EX_CMD_MODIFY_QP, &c.mqp,
				 sizeof(c.mqp), kind, r,
				 sizeof(struct ib_uverbs_ex_modify_qp_resp));
	case UV_CREATE_SRQ:
		c.srq.pd_handle = o->pd;
		c.srq.max_wr = 4;
		c.srq.max_sge = 1;
		ret = uv_cmd(o->fd, IB_USER_VERBS_CMD_CREATE_SRQ, &c.srq,
			     sizeof(c.srq), kind, r,
			     sizeof(struct ib_uverbs_create_srq_resp) +
			     sizeof(struct vrdma_create_srq_resp));
		break;
	case UV_MODIFY_SRQ:
		c.msrq.srq_handle = o->srq;
		c.msrq.attr_mask = IBV_SRQ_LIMIT;
		c.msrq.srq_limit = 1;
		return uv_cmd(o->fd, IB_USER_VERBS_CMD_MODIFY_SRQ, &c.msrq,
			      sizeof(c.msrq), kind, NULL, 0);
	case UV_CREATE_AH:
		c.ah.pd_handle = o->pd;
		memcpy(c.ah.attr.grh.dgid, o->gid.raw, 16);
		c.ah.attr.grh.sgid_index = o->gid_idx;
		c.ah.attr.grh.hop_limit = 64;
		c.ah.attr.is_global = 1;
		c.ah.attr.port_num = 1;
		n = sizeof(struct ib_uverbs_create_ah_resp) +
		    sizeof(struct vrdma_create_ah_resp);
		ret = uv_cmd(o->fd, IB_USER_VERBS_CMD_CREATE_AH, &c.ah,
			     sizeof(c.ah), kind, r, (n + 3) & ~3);
		break;
	case UV_REG_MR:
		c.mr.start = (uintptr_t)o->buf;
		c.mr.length = sizeof(o->buf);
		c.mr.hca_va = (uintptr_t)o->buf;
		c.mr.pd_handle = o->pd;
		c.mr.access_flags = IBV_ACCESS_LOCAL_WRITE;
		ret = uv_cmd(o->fd, IB_USER_VERBS_CMD_REG_MR, &c.mr,
			     sizeof(c.mr), kind, r,
			     sizeof(struct ib_uverbs_reg_mr_resp));
		break;
	case UV_REREG_MR:
		c.rereg.mr_handle = o->mr;
		c.rereg.flags = IBV_REREG_MR_CHANGE_ACCESS;
		c.rereg.access_flags = IBV_ACCESS_LOCAL_WRITE;
		return uv_cmd(o->fd, IB_USER_VERBS_CMD_REREG_MR, &c.rereg,
			      sizeof(c.rereg), kind, r,
			      sizeof(struct ib_uverbs_rereg_mr_resp));
	default:
		c.mw.pd_handle = o->pd;
		c.mw.mw_type = IBV_MW_TYPE_1;
		ret = uv_cmd(o->fd, IB_USER_VERBS_CMD_ALLOC_MW, &c.mw,
			     sizeof(c.mw), kind, r,
			     sizeof(struct ib_uverbs_alloc_mw_resp));
		break;
	}
	if (!ret && h)
		*h = r[0];
	return ret;
}

TEST_F_TIMEOUT(dev, udata_verbs, DEV_TEST_TIMEOUT)
{
	static struct uv_objs o;
	enum uv_verb v;
	enum req_kind k;
	int i, ret;

	/* an IPv4 GID to address the AH to: this device's own */
	ASSERT_EQ(0, sh("ip addr add 192.0.2.1/24 dev vdt0"));
	o.gid_idx = -1;
	for (i = 0; i < 100 && o.gid_idx < 0; i++) {
		o.gid_idx = rc_find_gid(DEV_NAME);
		if (o.gid_idx < 0)
			usleep(100000);
	}
	ASSERT_LE(0, o.gid_idx);
	ASSERT_EQ(0, ibv_query_gid(self->ctx, 1, o.gid_idx, &o.gid));

	o.fd = uv_open();
	ASSERT_LE(0, o.fd);
	ASSERT_EQ(0, uv_get_context(o.fd, REQ_NONE));
	ASSERT_EQ(0, uv_verb(&o, UV_ALLOC_PD, REQ_NONE, &o.pd));
	ASSERT_EQ(0, uv_verb(&o, UV_CREATE_CQ, REQ_NONE, &o.cq));
	ASSERT_EQ(0, uv_verb(&o, UV_CREATE_QP, REQ_NONE, &o.qp));
	ASSERT_EQ(0, uv_verb(&o, UV_CREATE_SRQ, REQ_NONE, &o.srq));
	ASSERT_EQ(0, uv_verb(&o, UV_REG_MR, REQ_NONE, &o.mr));

	for (v = 0; v < UV_VERBS; v++) {
		for (k = 0; k < REQ_KINDS; k++) {
			int want = req_errno[k];

			/*
			 * MODIFY_SRQ knows 8 bytes more (ring_info), and
			 * CREATE_CQ and CREATE_SRQ 8 more (cqe_size,
			 * max_ops, and a reserved word): the byte lands in
			 * a field no comp_mask bit announced.
			 */
			if ((v == UV_MODIFY_SRQ || v == UV_CREATE_CQ ||
			     v == UV_CREATE_SRQ) && k == REQ_TRAILING)
				want = EINVAL;
			ret = uv_verb(&o, v, k, NULL);
			EXPECT_EQ(want, ret) {
				TH_LOG("%s with request %s: %s",
				       uv_verb_name[v], req_name[k],
				       strerror(ret));
			}
		}
	}
	/* the objects made on the way go with the context */
	close(o.fd);
}

TEST_HARNESS_MAIN
