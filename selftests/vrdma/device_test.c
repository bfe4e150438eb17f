// SPDX-License-Identifier: GPL-2.0
/*
 * The vrdma device as an application sees it through libibverbs and our
 * provider: discovery, device and port attributes, PDs, port events, and
 * what happens to an open context when the device is deleted under it.
 *
 * Runs as root in the test VM; loads vrdma.ko from the build tree if it is
 * not loaded yet; each test creates its own veth pair and vrdma device.
 */
#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <infiniband/verbs.h>

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

TEST_HARNESS_MAIN
