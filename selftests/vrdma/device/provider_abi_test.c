// SPDX-License-Identifier: (GPL-2.0 OR Linux-OpenIB)
/*
 * provider_abi_test - checks userspace-provider/vrdma-verbs-private.h
 * against the installed libibverbs.
 *
 * The provider shares structs with libibverbs that no installed header
 * describes (verbs_context_ops, verbs_device, verbs_device_ops, the command
 * structs); we declare them by hand.  A member out of place still compiles
 * and links, and then libibverbs calls the wrong function or writes into the
 * wrong field.  So this test hands libibverbs objects laid out by our header
 * and checks what the library itself reads and writes:
 *
 *  - a fake verbs_device goes through ibv_open_device()/ibv_close_device()
 *    (verbs_device.ops, .refcount, .sysfs; verbs_device_ops.alloc_context
 *    and .uninit_device; _verbs_init_and_alloc_context, verbs_uninit_context)
 *  - every one of the 76 verbs_context_ops gets its own function; after
 *    verbs_set_ops() each must come out in the public ibv_context_ops /
 *    verbs_context slot libibverbs copies it to, or, for the ops that only
 *    libibverbs' private table holds, be what the public verb calls
 *  - the command structs have the size libibverbs splits driver data at
 *  - ibv_qp_to_qp_ex() honours verbs_qp.comp_mask's VERBS_QP_EX
 *  - every private function we declare exists as IBVERBS_PRIVATE_34
 *  - libvrdma-rdmav34.so dlopen()s with RTLD_NOW, its constructor registers
 *    sane verbs_device_ops, and its alloc_context fails cleanly without a
 *    kernel device
 *  - libibverbs' own device discovery, run on a fake sysfs (root only: a
 *    private mount namespace), loads the provider through RDMAV_DRIVERS and
 *    binds it to "vrdma0" with uverbs ABI 1 and to nothing else
 *
 * No RDMA device or kernel module is needed.  The provider is found at
 * $VRDMA_PROVIDER_SO, else at the path the Makefile compiled in; if neither
 * exists the provider tests are skipped.
 *
 *   make -C userspace-provider && make -C selftests/vrdma
 *   selftests/vrdma/build/provider_abi_test     (or scripts/run-selftests --host)
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <endian.h>
#include <errno.h>
#include <fcntl.h>
#include <fnmatch.h>
#include <limits.h>
#include <sched.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>
#include <linux/filter.h>
#include <linux/netlink.h>
#include <linux/seccomp.h>

#include "vrdma.h"

#include "kselftest_harness.h"

#ifndef VRDMA_PROVIDER_SO
#define VRDMA_PROVIDER_SO "libvrdma-rdmav34.so"
#endif

#define IBVERBS_PRIVATE "IBVERBS_PRIVATE_34"

typedef void (*fn_t)(void);

/* Function pointers of any type, compared as addresses. */
#define FN(f) ((uintptr_t)(fn_t)(f))

/*
 * Every op of verbs_context_ops in rdma-core v44, named independently of
 * the header so that a member missing there fails to compile here.
 */
#define ALL_OPS(X)							\
	X(advise_mr) X(alloc_dm) X(alloc_mw) X(alloc_null_mr)		\
	X(alloc_parent_domain) X(alloc_pd) X(alloc_td) X(async_event)	\
	X(attach_counters_point_flow) X(attach_mcast) X(bind_mw)	\
	X(close_xrcd) X(cq_event) X(create_ah) X(create_counters)	\
	X(create_cq) X(create_cq_ex) X(create_flow)			\
	X(create_flow_action_esp) X(create_qp) X(create_qp_ex)		\
	X(create_rwq_ind_table) X(create_srq) X(create_srq_ex)		\
	X(create_wq) X(dealloc_mw) X(dealloc_pd) X(dealloc_td)		\
	X(dereg_mr) X(destroy_ah) X(destroy_counters) X(destroy_cq)	\
	X(destroy_flow) X(destroy_flow_action) X(destroy_qp)		\
	X(destroy_rwq_ind_table) X(destroy_srq) X(destroy_wq)		\
	X(detach_mcast) X(free_context) X(free_dm) X(get_srq_num)	\
	X(import_dm) X(import_mr) X(import_pd) X(modify_cq)		\
	X(modify_flow_action_esp) X(modify_qp) X(modify_qp_rate_limit)	\
	X(modify_srq) X(modify_wq) X(open_qp) X(open_xrcd) X(poll_cq)	\
	X(post_recv) X(post_send) X(post_srq_ops) X(post_srq_recv)	\
	X(query_device_ex) X(query_ece) X(query_port) X(query_qp)	\
	X(query_qp_data_in_order) X(query_rt_values) X(query_srq)	\
	X(read_counters) X(reg_dm_mr) X(reg_dmabuf_mr) X(reg_mr)	\
	X(req_notify_cq) X(rereg_mr) X(resize_cq) X(set_ece)		\
	X(unimport_dm) X(unimport_mr) X(unimport_pd)

enum op_id {
#define X(name) OP_##name,
	ALL_OPS(X)
#undef X
	NUM_OPS,
	OP_NONE = -1,
};

static_assert(NUM_OPS == VRDMA_VERBS_CONTEXT_OPS_COUNT,
	      "the test must know every op");
static_assert(sizeof(struct verbs_context_ops) == NUM_OPS * sizeof(fn_t),
	      "verbs_context_ops has more or fewer members than v44");

static const char *const op_names[] = {
#define X(name) #name,
	ALL_OPS(X)
#undef X
};

/* The op the last stub call came through. */
static int last_op = OP_NONE;

static const char *op_name(int op)
{
	return op >= 0 && op < NUM_OPS ? op_names[op] : "(none)";
}

/*
 * One distinct function per op.  Those the test only compares by address
 * have no arguments and are never called through the op; the ones it makes
 * libibverbs call (typed_* below) have the op's exact type.
 */
#define X(name)								\
	static void __attribute__((noinline)) addr_stub_##name(void)	\
	{								\
		last_op = OP_##name;					\
	}
ALL_OPS(X)
#undef X

static int typed_advise_mr(struct ibv_pd *pd, enum ibv_advise_mr_advice advice,
			   uint32_t flags, struct ibv_sge *sg_list,
			   uint32_t num_sge)
{
	(void)pd;
	(void)advice;
	(void)flags;
	(void)sg_list;
	(void)num_sge;
	last_op = OP_advise_mr;
	return EINVAL;
}

static struct ibv_pd *typed_alloc_pd(struct ibv_context *context)
{
	(void)context;
	last_op = OP_alloc_pd;
	errno = EINVAL;
	return NULL;
}

static int typed_dealloc_pd(struct ibv_pd *pd)
{
	(void)pd;
	last_op = OP_dealloc_pd;
	return EINVAL;
}

static int typed_query_device_ex(struct ibv_context *context,
				 const struct ibv_query_device_ex_input *input,
				 struct ibv_device_attr_ex *attr,
				 size_t attr_size)
{
	(void)context;
	(void)input;
	(void)attr;
	(void)attr_size;
	last_op = OP_query_device_ex;
	return EINVAL;
}

static int typed_query_port(struct ibv_context *context, uint8_t port_num,
			    struct ibv_port_attr *port_attr)
{
	(void)context;
	(void)port_num;
	(void)port_attr;
	last_op = OP_query_port;
	return EINVAL;
}

static struct ibv_cq_ex *typed_create_cq_ex(struct ibv_context *context,
					    struct ibv_cq_init_attr_ex *attr)
{
	(void)context;
	(void)attr;
	last_op = OP_create_cq_ex;
	errno = EINVAL;
	return NULL;
}

static struct ibv_dm *typed_import_dm(struct ibv_context *context,
				      uint32_t dm_handle)
{
	(void)context;
	(void)dm_handle;
	last_op = OP_import_dm;
	errno = EINVAL;
	return NULL;
}

static struct ibv_mr *typed_import_mr(struct ibv_pd *pd, uint32_t mr_handle)
{
	(void)pd;
	(void)mr_handle;
	last_op = OP_import_mr;
	errno = EINVAL;
	return NULL;
}

static struct ibv_pd *typed_import_pd(struct ibv_context *context,
				      uint32_t pd_handle)
{
	(void)context;
	(void)pd_handle;
	last_op = OP_import_pd;
	errno = EINVAL;
	return NULL;
}

static void typed_unimport_dm(struct ibv_dm *dm)
{
	(void)dm;
	last_op = OP_unimport_dm;
}

static void typed_unimport_mr(struct ibv_mr *mr)
{
	(void)mr;
	last_op = OP_unimport_mr;
}

static void typed_unimport_pd(struct ibv_pd *pd)
{
	(void)pd;
	last_op = OP_unimport_pd;
}

static int typed_query_ece(struct ibv_qp *qp, struct ibv_ece *ece)
{
	(void)qp;
	(void)ece;
	last_op = OP_query_ece;
	return EINVAL;
}

static int typed_set_ece(struct ibv_qp *qp, struct ibv_ece *ece)
{
	(void)qp;
	(void)ece;
	last_op = OP_set_ece;
	return EINVAL;
}

static int typed_query_qp_data_in_order(struct ibv_qp *qp,
					enum ibv_wr_opcode op, uint32_t flags)
{
	(void)qp;
	(void)op;
	(void)flags;
	last_op = OP_query_qp_data_in_order;
	return 0;
}

static struct ibv_mr *typed_reg_dmabuf_mr(struct ibv_pd *pd, uint64_t offset,
					  size_t length, uint64_t iova, int fd,
					  int access)
{
	(void)pd;
	(void)offset;
	(void)length;
	(void)iova;
	(void)fd;
	(void)access;
	last_op = OP_reg_dmabuf_mr;
	errno = EINVAL;
	return NULL;
}

static int typed_poll_cq(struct ibv_cq *cq, int num_entries, struct ibv_wc *wc)
{
	(void)cq;
	(void)num_entries;
	(void)wc;
	last_op = OP_poll_cq;
	return -1;
}

static int typed_post_send(struct ibv_qp *qp, struct ibv_send_wr *wr,
			   struct ibv_send_wr **bad_wr)
{
	(void)qp;
	(void)wr;
	(void)bad_wr;
	last_op = OP_post_send;
	return EINVAL;
}

static int typed_post_recv(struct ibv_qp *qp, struct ibv_recv_wr *wr,
			   struct ibv_recv_wr **bad_wr)
{
	(void)qp;
	(void)wr;
	(void)bad_wr;
	last_op = OP_post_recv;
	return EINVAL;
}

static int typed_req_notify_cq(struct ibv_cq *cq, int solicited_only)
{
	(void)cq;
	(void)solicited_only;
	last_op = OP_req_notify_cq;
	return EINVAL;
}

/* The real thing: ibv_close_device() must get here and free the context. */
struct test_context {
	uint64_t before;	/* the verbs_context is not at offset 0 */
	struct verbs_context ibv_ctx;
};

static void typed_free_context(struct ibv_context *ibctx)
{
	struct test_context *tc = vrdma_container_of(ibctx, struct test_context,
						     ibv_ctx.context);

	last_op = OP_free_context;
	verbs_uninit_context(&tc->ibv_ctx);
	free(tc);
}

/* All 76 ops, each set by name to its own function. */
static struct verbs_context_ops stub_ops;

static void fill_stub_ops(void)
{
#define X(name) stub_ops.name = (__typeof__(stub_ops.name))addr_stub_##name;
	ALL_OPS(X)
#undef X
	stub_ops.advise_mr = typed_advise_mr;
	stub_ops.alloc_pd = typed_alloc_pd;
	stub_ops.create_cq_ex = typed_create_cq_ex;
	stub_ops.dealloc_pd = typed_dealloc_pd;
	stub_ops.free_context = typed_free_context;
	stub_ops.import_dm = typed_import_dm;
	stub_ops.import_mr = typed_import_mr;
	stub_ops.import_pd = typed_import_pd;
	stub_ops.poll_cq = typed_poll_cq;
	stub_ops.post_recv = typed_post_recv;
	stub_ops.post_send = typed_post_send;
	stub_ops.query_device_ex = typed_query_device_ex;
	stub_ops.query_ece = typed_query_ece;
	stub_ops.query_port = typed_query_port;
	stub_ops.query_qp_data_in_order = typed_query_qp_data_in_order;
	stub_ops.reg_dmabuf_mr = typed_reg_dmabuf_mr;
	stub_ops.req_notify_cq = typed_req_notify_cq;
	stub_ops.set_ece = typed_set_ece;
	stub_ops.unimport_dm = typed_unimport_dm;
	stub_ops.unimport_mr = typed_unimport_mr;
	stub_ops.unimport_pd = typed_unimport_pd;
}

static int alloc_context_calls;

static struct verbs_context *test_alloc_context(struct ibv_device *ibdev,
						int cmd_fd, void *private_data)
{
	struct test_context *tc;

	(void)private_data;
	alloc_context_calls++;

	tc = vrdma_verbs_init_and_alloc_context(ibdev, cmd_fd, tc, ibv_ctx,
						RDMA_DRIVER_UNKNOWN);
	if (!tc)
		return NULL;
	verbs_set_ops(&tc->ibv_ctx, &stub_ops);
	return &tc->ibv_ctx;
}

static int uninit_device_calls;

static void test_uninit_device(struct verbs_device *vdev)
{
	uninit_device_calls++;
	free(vdev);
}

static const struct verbs_device_ops test_dev_ops = {
	.name = "vrdma_abi_test",
	.match_min_abi_version = VRDMA_UVERBS_ABI_VERSION,
	.match_max_abi_version = VRDMA_UVERBS_ABI_VERSION,
	.alloc_context = test_alloc_context,
	.uninit_device = test_uninit_device,
};

/*
 * A verbs_device as libibverbs' try_driver() leaves it, with no sysfs
 * device (so ibv_open_device() passes cmd_fd -1) and with the fields it
 * must not use here set to addresses that crash when used as pointers.
 */
static struct verbs_device *fake_device(const struct verbs_device_ops *ops,
					struct verbs_device *vdev)
{
	if (!vdev)
		vdev = calloc(1, sizeof(*vdev));
	if (!vdev)
		return NULL;
	vdev->ops = ops;
	atomic_init(&vdev->refcount, 1);
	vdev->entry.next = (void *)0x11;
	vdev->entry.prev = (void *)0x13;
	vdev->sysfs = NULL;
	vdev->core_support = 0x17;
	vdev->device.node_type = IBV_NODE_CA;
	vdev->device.transport_type = IBV_TRANSPORT_IB;
	snprintf(vdev->device.name, sizeof(vdev->device.name), "vrdma_abi0");
	return vdev;
}

FIXTURE(stub_ctx) {
	struct verbs_device *vdev;
	struct ibv_context *ctx;
	struct verbs_context *vctx;
};

FIXTURE_SETUP(stub_ctx)
{
	fill_stub_ops();
	self->vdev = fake_device(&test_dev_ops, NULL);
	ASSERT_NE(NULL, self->vdev);

	self->ctx = ibv_open_device(&self->vdev->device);
	ASSERT_NE(NULL, self->ctx) {
		TH_LOG("ibv_open_device on the fake device: %s",
		       strerror(errno));
	}
	ASSERT_EQ(1, alloc_context_calls);
	self->vctx = verbs_get_ctx(self->ctx);
	ASSERT_NE(NULL, self->vctx);
}

FIXTURE_TEARDOWN(stub_ctx)
{
	if (self->ctx)
		ibv_close_device(self->ctx);
	if (self->vdev && !uninit_device_calls)
		free(self->vdev);
}

/* _verbs_init_and_alloc_context() set up the context we laid out. */
TEST_F(stub_ctx, context_init)
{
	struct test_context *tc = vrdma_container_of(self->ctx,
						     struct test_context,
						     ibv_ctx.context);

	ASSERT_EQ(&self->vdev->device, self->ctx->device);
	ASSERT_EQ(-1, self->ctx->cmd_fd);
	ASSERT_EQ(-1, self->ctx->async_fd);
	ASSERT_EQ(sizeof(struct verbs_context), self->vctx->sz);
	ASSERT_EQ(&tc->ibv_ctx, self->vctx);
	ASSERT_EQ(0, tc->before);
	ASSERT_NE(NULL, self->vctx->priv);
	/* the context holds a device reference, in verbs_device.refcount */
	ASSERT_EQ(2, atomic_load(&self->vdev->refcount));
	/* nothing else of the device was touched */
	ASSERT_EQ(&test_dev_ops, self->vdev->ops);
	ASSERT_EQ((void *)0x11, self->vdev->entry.next);
	ASSERT_EQ((void *)0x13, self->vdev->entry.prev);
	ASSERT_EQ(NULL, self->vdev->sysfs);
	ASSERT_EQ(0x17, self->vdev->core_support);

	last_op = OP_NONE;
	ibv_close_device(self->ctx);
	self->ctx = NULL;
	ASSERT_STREQ("free_context", op_name(last_op));
	ASSERT_EQ(1, atomic_load(&self->vdev->refcount));
	ASSERT_EQ(0, uninit_device_calls);
}

/*
 * The device list goes away while a context is open; closing the context
 * drops the last reference: libibverbs frees verbs_device.sysfs and calls
 * verbs_device_ops.uninit_device.
 */
TEST_F(stub_ctx, device_release)
{
	atomic_fetch_sub(&self->vdev->refcount, 1);
	self->vdev->sysfs = malloc(16);	/* freed by libibverbs */
	ASSERT_NE(NULL, self->vdev->sysfs);

	ibv_close_device(self->ctx);
	self->ctx = NULL;
	ASSERT_EQ(1, uninit_device_calls);
	self->vdev = NULL;	/* freed by test_uninit_device */
}

/* Our op table itself: every slot set, all functions distinct. */
TEST_F(stub_ctx, stub_table)
{
	fn_t slots[NUM_OPS];
	int i, j;

	memcpy(slots, &stub_ops, sizeof(slots));
	for (i = 0; i < NUM_OPS; i++) {
		ASSERT_NE(NULL, slots[i]);
		for (j = 0; j < i; j++)
			ASSERT_NE(FN(slots[j]), FN(slots[i])) {
				TH_LOG("slots %d and %d share a function", j, i);
			}
	}
}

#define EXPECT_SLOT(slot, op)						\
	EXPECT_EQ(FN(stub_ops.op), FN(slot)) {				\
		TH_LOG("%s: libibverbs holds the function of %s",	\
		       #op, op_name(op_of(FN(slot))));			\
	}

/* Which op's function fn is (by member name, not by slot). */
static int op_of(uintptr_t fn)
{
#define X(name)								\
	if (FN(stub_ops.name) == fn)					\
		return OP_##name;
	ALL_OPS(X)
#undef X
	return OP_NONE;
}

/* Ops verbs_set_ops() copies into the public ibv_context_ops. */
TEST_F(stub_ctx, public_context_ops)
{
	struct ibv_context_ops *o = &self->ctx->ops;

	EXPECT_SLOT(o->alloc_mw, alloc_mw);
	EXPECT_SLOT(o->bind_mw, bind_mw);
	EXPECT_SLOT(o->dealloc_mw, dealloc_mw);
	EXPECT_SLOT(o->poll_cq, poll_cq);
	EXPECT_SLOT(o->req_notify_cq, req_notify_cq);
	EXPECT_SLOT(o->post_srq_recv, post_srq_recv);
	EXPECT_SLOT(o->post_send, post_send);
	EXPECT_SLOT(o->post_recv, post_recv);

	EXPECT_SLOT(o->_compat_alloc_pd, alloc_pd);
	EXPECT_SLOT(o->_compat_dealloc_pd, dealloc_pd);
	EXPECT_SLOT(o->_compat_reg_mr, reg_mr);
	EXPECT_SLOT(o->_compat_rereg_mr, rereg_mr);
	EXPECT_SLOT(o->_compat_dereg_mr, dereg_mr);
	EXPECT_SLOT(o->_compat_create_cq, create_cq);
	EXPECT_SLOT(o->_compat_cq_event, cq_event);
	EXPECT_SLOT(o->_compat_resize_cq, resize_cq);
	EXPECT_SLOT(o->_compat_destroy_cq, destroy_cq);
	EXPECT_SLOT(o->_compat_create_srq, create_srq);
	EXPECT_SLOT(o->_compat_modify_srq, modify_srq);
	EXPECT_SLOT(o->_compat_query_srq, query_srq);
	EXPECT_SLOT(o->_compat_destroy_srq, destroy_srq);
	EXPECT_SLOT(o->_compat_create_qp, create_qp);
	EXPECT_SLOT(o->_compat_query_qp, query_qp);
	EXPECT_SLOT(o->_compat_modify_qp, modify_qp);
	EXPECT_SLOT(o->_compat_destroy_qp, destroy_qp);
	EXPECT_SLOT(o->_compat_create_ah, create_ah);
	EXPECT_SLOT(o->_compat_destroy_ah, destroy_ah);
	EXPECT_SLOT(o->_compat_attach_mcast, attach_mcast);
	EXPECT_SLOT(o->_compat_detach_mcast, detach_mcast);
	EXPECT_SLOT(o->_compat_async_event, async_event);
}

/* Ops verbs_set_ops() copies into the public struct verbs_context. */
TEST_F(stub_ctx, public_verbs_context)
{
	struct verbs_context *v = self->vctx;

	EXPECT_SLOT(v->advise_mr, advise_mr);
	EXPECT_SLOT(v->alloc_dm, alloc_dm);
	EXPECT_SLOT(v->alloc_null_mr, alloc_null_mr);
	EXPECT_SLOT(v->alloc_parent_domain, alloc_parent_domain);
	EXPECT_SLOT(v->alloc_td, alloc_td);
	EXPECT_SLOT(v->attach_counters_point_flow, attach_counters_point_flow);
	EXPECT_SLOT(v->close_xrcd, close_xrcd);
	EXPECT_SLOT(v->create_counters, create_counters);
	EXPECT_SLOT(v->ibv_create_flow, create_flow);
	EXPECT_SLOT(v->ABI_placeholder1, create_flow);
	EXPECT_SLOT(v->create_flow_action_esp, create_flow_action_esp);
	EXPECT_SLOT(v->create_qp_ex, create_qp_ex);
	EXPECT_SLOT(v->create_rwq_ind_table, create_rwq_ind_table);
	EXPECT_SLOT(v->create_srq_ex, create_srq_ex);
	EXPECT_SLOT(v->create_wq, create_wq);
	EXPECT_SLOT(v->dealloc_td, dealloc_td);
	EXPECT_SLOT(v->destroy_counters, destroy_counters);
	EXPECT_SLOT(v->ibv_destroy_flow, destroy_flow);
	EXPECT_SLOT(v->ABI_placeholder2, destroy_flow);
	EXPECT_SLOT(v->destroy_flow_action, destroy_flow_action);
	EXPECT_SLOT(v->destroy_rwq_ind_table, destroy_rwq_ind_table);
	EXPECT_SLOT(v->destroy_wq, destroy_wq);
	EXPECT_SLOT(v->free_dm, free_dm);
	EXPECT_SLOT(v->get_srq_num, get_srq_num);
	EXPECT_SLOT(v->modify_cq, modify_cq);
	EXPECT_SLOT(v->modify_flow_action_esp, modify_flow_action_esp);
	EXPECT_SLOT(v->modify_qp_rate_limit, modify_qp_rate_limit);
	EXPECT_SLOT(v->modify_wq, modify_wq);
	EXPECT_SLOT(v->open_qp, open_qp);
	EXPECT_SLOT(v->open_xrcd, open_xrcd);
	EXPECT_SLOT(v->post_srq_ops, post_srq_ops);
	EXPECT_SLOT(v->query_device_ex, query_device_ex);
	EXPECT_SLOT(v->query_rt_values, query_rt_values);
	EXPECT_SLOT(v->read_counters, read_counters);
	EXPECT_SLOT(v->reg_dm_mr, reg_dm_mr);
}

#define EXPECT_CALLS(op, call)						\
	do {								\
		last_op = OP_NONE;					\
		call;							\
		EXPECT_STREQ(#op, op_name(last_op)) {			\
			TH_LOG("%s reached the wrong op", #call);	\
		}							\
	} while (0)

/*
 * Ops only libibverbs' private table holds (and a few common ones): the
 * public verb must land in our function for that op.
 */
TEST_F(stub_ctx, dispatch)
{
	struct ibv_context *ctx = self->ctx;
	struct ibv_cq_init_attr_ex cq_attr = { .cqe = 1 };
	struct ibv_device_attr_ex dev_attr;
	struct ibv_port_attr port_attr;
	struct ibv_send_wr *bad_send;
	struct ibv_recv_wr *bad_recv;
	struct ibv_send_wr send_wr = {};
	struct ibv_recv_wr recv_wr = {};
	struct ibv_ece ece = { .vendor_id = 1 };
	struct ibv_pd pd = { .context = ctx };
	struct ibv_mr mr = { .context = ctx };
	struct ibv_dm dm = { .context = ctx };
	struct ibv_qp qp = { .context = ctx };
	struct ibv_cq cq = { .context = ctx };
	struct ibv_wc wc;

	EXPECT_CALLS(advise_mr,
		     ibv_advise_mr(&pd, IBV_ADVISE_MR_ADVICE_PREFETCH, 0,
				   NULL, 0));
	EXPECT_CALLS(alloc_pd, ibv_alloc_pd(ctx));
	EXPECT_CALLS(dealloc_pd, ibv_dealloc_pd(&pd));
	EXPECT_CALLS(query_device_ex, ibv_query_device_ex(ctx, NULL, &dev_attr));
	EXPECT_CALLS(query_port, ibv_query_port(ctx, 1, &port_attr));
	EXPECT_CALLS(create_cq_ex, ibv_create_cq_ex(ctx, &cq_attr));
	EXPECT_CALLS(import_dm, ibv_import_dm(ctx, 1));
	EXPECT_CALLS(import_mr, ibv_import_mr(&pd, 1));
	EXPECT_CALLS(import_pd, ibv_import_pd(ctx, 1));
	EXPECT_CALLS(unimport_dm, ibv_unimport_dm(&dm));
	EXPECT_CALLS(unimport_mr, ibv_unimport_mr(&mr));
	EXPECT_CALLS(unimport_pd, ibv_unimport_pd(&pd));
	EXPECT_CALLS(query_ece, ibv_query_ece(&qp, &ece));
	EXPECT_CALLS(set_ece, ibv_set_ece(&qp, &ece));
#if defined(__i386__) || defined(__x86_64__)
	/* elsewhere libibverbs answers this one itself */
	EXPECT_CALLS(query_qp_data_in_order,
		     ibv_query_qp_data_in_order(&qp, IBV_WR_SEND, 0));
#endif
	EXPECT_CALLS(reg_dmabuf_mr, ibv_reg_dmabuf_mr(&pd, 0, 4096, 0, -1, 0));
	EXPECT_CALLS(poll_cq, ibv_poll_cq(&cq, 1, &wc));
	EXPECT_CALLS(req_notify_cq, ibv_req_notify_cq(&cq, 0));
	EXPECT_CALLS(post_send, ibv_post_send(&qp, &send_wr, &bad_send));
	EXPECT_CALLS(post_recv, ibv_post_recv(&qp, &recv_wr, &bad_recv));

	last_op = OP_NONE;
	ibv_close_device(ctx);
	self->ctx = NULL;
	EXPECT_STREQ("free_context", op_name(last_op));
}

/*
 * A command struct is the uverbs header plus the kernel's struct; libibverbs
 * treats whatever follows sizeof() of its own copy as driver data.
 */
#define EXPECT_CMD(type, kabi, lp64_size)				\
	do {								\
		EXPECT_EQ(sizeof(struct ib_uverbs_cmd_hdr),		\
			  offsetof(struct type, core_payload));		\
		EXPECT_EQ(sizeof(struct ib_uverbs_cmd_hdr) +		\
				  sizeof(struct kabi),			\
			  sizeof(struct type));				\
		EXPECT_EQ(lp64_size, sizeof(struct type));		\
	} while (0)

TEST(command_layout)
{
	EXPECT_EQ(8, sizeof(struct ib_uverbs_cmd_hdr));
	EXPECT_CMD(ibv_alloc_mw, ib_uverbs_alloc_mw, 24);
	EXPECT_CMD(ibv_alloc_pd, ib_uverbs_alloc_pd, 16);
	EXPECT_CMD(ibv_create_ah, ib_uverbs_create_ah, 64);
	EXPECT_CMD(ibv_create_cq, ib_uverbs_create_cq, 40);
	EXPECT_CMD(ibv_create_qp, ib_uverbs_create_qp, 64);
	EXPECT_CMD(ibv_create_srq, ib_uverbs_create_srq, 40);
	EXPECT_CMD(ibv_create_xsrq, ib_uverbs_create_xsrq, 56);
	EXPECT_CMD(ibv_get_context, ib_uverbs_get_context, 16);
	EXPECT_CMD(ibv_modify_qp, ib_uverbs_modify_qp, 120);
	EXPECT_CMD(ibv_modify_srq, ib_uverbs_modify_srq, 24);
	EXPECT_CMD(ibv_open_qp, ib_uverbs_open_qp, 40);
	EXPECT_CMD(ibv_open_xrcd, ib_uverbs_open_xrcd, 24);
	EXPECT_CMD(ibv_query_port, ib_uverbs_query_port, 24);
	EXPECT_CMD(ibv_query_qp, ib_uverbs_query_qp, 24);
	EXPECT_CMD(ibv_query_srq, ib_uverbs_query_srq, 24);
	EXPECT_CMD(ibv_reg_mr, ib_uverbs_reg_mr, 48);
	EXPECT_CMD(ibv_rereg_mr, ib_uverbs_rereg_mr, 56);
	EXPECT_CMD(ibv_resize_cq, ib_uverbs_resize_cq, 24);

	/* GET_CONTEXT as vrdma sends it: no driver request, 8 bytes back */
	EXPECT_EQ(16, sizeof(struct vrdma_get_context));
	EXPECT_EQ(8, sizeof(struct vrdma_alloc_ucontext_resp));
	EXPECT_EQ(sizeof(struct ib_uverbs_get_context_resp),
		  offsetof(struct vrdma_get_context_resp, drv_payload));
	EXPECT_EQ(16, sizeof(struct vrdma_get_context_resp));

	/*
	 * The data path's commands: no driver request, the driver's answer
	 * right after the core response, where libibverbs puts the udata.
	 */
	EXPECT_EQ(sizeof(struct ibv_create_cq),
		  sizeof(struct vrdma_cmd_create_cq));
	EXPECT_EQ(8, offsetof(struct vrdma_cmd_create_cq_resp, drv_payload));
	EXPECT_EQ(8 + 24, sizeof(struct vrdma_cmd_create_cq_resp));
	/* create_cq_ex: after the extended core response */
	EXPECT_EQ(16, sizeof(struct ib_uverbs_ex_create_cq_resp));
	EXPECT_EQ(16, offsetof(struct vrdma_cmd_create_cq_ex_resp,
			       drv_payload));
	EXPECT_EQ(16 + 24, sizeof(struct vrdma_cmd_create_cq_ex_resp));
	/* and its request: the CQE size, after the extended command */
	EXPECT_EQ(8 + 16 + 32, sizeof(struct ibv_create_cq_ex));
	EXPECT_EQ(sizeof(struct ibv_create_cq_ex),
		  offsetof(struct vrdma_cmd_create_cq_ex, drv_payload));
	EXPECT_EQ(56 + 16, sizeof(struct vrdma_cmd_create_cq_ex));
	EXPECT_EQ(sizeof(struct ibv_resize_cq),
		  sizeof(struct vrdma_cmd_resize_cq));
	EXPECT_EQ(8, offsetof(struct vrdma_cmd_resize_cq_resp, drv_payload));
	EXPECT_EQ(8 + 24, sizeof(struct vrdma_cmd_resize_cq_resp));
	EXPECT_EQ(sizeof(struct ibv_create_qp),
		  sizeof(struct vrdma_cmd_create_qp));
	EXPECT_EQ(32, offsetof(struct vrdma_cmd_create_qp_resp, drv_payload));
	EXPECT_EQ(32 + 56, sizeof(struct vrdma_cmd_create_qp_resp));
	EXPECT_EQ(sizeof(struct ibv_create_srq),
		  sizeof(struct vrdma_cmd_create_srq));
	EXPECT_EQ(16, offsetof(struct vrdma_cmd_create_srq_resp, drv_payload));
	EXPECT_EQ(16 + 32, sizeof(struct vrdma_cmd_create_srq_resp));
	/*
	 * create_srq_ex: the same answer, after the XSRQ command, and a
	 * request (a tag-matching SRQ's max_ops)
	 */
	EXPECT_EQ(sizeof(struct ibv_create_xsrq) + 16,
		  sizeof(struct vrdma_cmd_create_xsrq));
	EXPECT_EQ(16, offsetof(struct vrdma_cmd_create_xsrq_resp, drv_payload));
	EXPECT_EQ(16 + 32, sizeof(struct vrdma_cmd_create_xsrq_resp));
}

/* The structs whose fields libibverbs fills, as v44 has them on LP64. */
TEST(struct_layout)
{
	if (sizeof(void *) != 8)
		SKIP(return, "absolute offsets are for LP64");

	EXPECT_EQ(24, sizeof(struct verbs_match_ent));
	EXPECT_EQ(8, offsetof(struct verbs_match_ent, u));
	EXPECT_EQ(20, offsetof(struct verbs_match_ent, kind));

	EXPECT_EQ(0, offsetof(struct verbs_device_ops, name));
	EXPECT_EQ(8, offsetof(struct verbs_device_ops, match_min_abi_version));
	EXPECT_EQ(12, offsetof(struct verbs_device_ops, match_max_abi_version));
	EXPECT_EQ(16, offsetof(struct verbs_device_ops, match_table));
	EXPECT_EQ(24, offsetof(struct verbs_device_ops, static_providers));
	EXPECT_EQ(32, offsetof(struct verbs_device_ops, match_device));
	EXPECT_EQ(40, offsetof(struct verbs_device_ops, alloc_context));
	EXPECT_EQ(48, offsetof(struct verbs_device_ops, import_context));
	EXPECT_EQ(56, offsetof(struct verbs_device_ops, alloc_device));
	EXPECT_EQ(64, offsetof(struct verbs_device_ops, uninit_device));
	EXPECT_EQ(72, sizeof(struct verbs_device_ops));

	EXPECT_EQ(664, sizeof(struct ibv_device));
	EXPECT_EQ(664, offsetof(struct verbs_device, ops));
	EXPECT_EQ(672, offsetof(struct verbs_device, refcount));
	EXPECT_EQ(680, offsetof(struct verbs_device, entry));
	EXPECT_EQ(696, offsetof(struct verbs_device, sysfs));
	EXPECT_EQ(704, offsetof(struct verbs_device, core_support));
	EXPECT_EQ(712, sizeof(struct verbs_device));

	EXPECT_EQ(sizeof(struct ibv_mr) + 8, sizeof(struct verbs_mr));
	EXPECT_EQ(sizeof(struct ibv_mr), offsetof(struct verbs_mr, mr_type));
	EXPECT_EQ(sizeof(struct ibv_qp_ex), offsetof(struct verbs_qp, comp_mask));
	EXPECT_EQ(sizeof(struct ibv_qp_ex) + 8, offsetof(struct verbs_qp, xrcd));
	EXPECT_EQ(sizeof(struct ibv_cq_ex), sizeof(struct verbs_cq));

	/* what ibv_cmd_alloc_dm() fills in, and the copies it leaves us */
	EXPECT_EQ(32, sizeof(struct ibv_dm));
	EXPECT_EQ(8, offsetof(struct ibv_dm, memcpy_to_dm));
	EXPECT_EQ(16, offsetof(struct ibv_dm, memcpy_from_dm));
	EXPECT_EQ(32, offsetof(struct verbs_dm, handle));
	EXPECT_EQ(40, sizeof(struct verbs_dm));

	/* what ibv_cmd_open_xrcd() and ibv_cmd_create_srq_ex() fill in */
	EXPECT_EQ(8, sizeof(struct ibv_xrcd));
	EXPECT_EQ(8, offsetof(struct verbs_xrcd, comp_mask));
	EXPECT_EQ(12, offsetof(struct verbs_xrcd, handle));
	EXPECT_EQ(16, sizeof(struct verbs_xrcd));
	EXPECT_EQ(128, sizeof(struct ibv_srq));
	EXPECT_EQ(128, offsetof(struct verbs_srq, srq_type));
	EXPECT_EQ(136, offsetof(struct verbs_srq, xrcd));
	EXPECT_EQ(144, offsetof(struct verbs_srq, cq));
	EXPECT_EQ(152, offsetof(struct verbs_srq, srq_num));
	EXPECT_EQ(160, sizeof(struct verbs_srq));
}

/*
 * ibv_qp_to_qp_ex() hands out a QP's ibv_qp_ex when, and only when, the
 * provider set VERBS_QP_EX in verbs_qp.comp_mask.
 */
TEST(verbs_qp_ex)
{
	struct verbs_qp vqp;

	memset(&vqp, 0, sizeof(vqp));
	EXPECT_EQ(NULL, ibv_qp_to_qp_ex(&vqp.qp));
	vqp.comp_mask = VERBS_QP_XRCD;
	EXPECT_EQ(NULL, ibv_qp_to_qp_ex(&vqp.qp));
	vqp.comp_mask = VERBS_QP_EX;
	EXPECT_EQ(&vqp.qp_ex, ibv_qp_to_qp_ex(&vqp.qp));
	EXPECT_EQ((void *)&vqp, (void *)&vqp.qp_ex.qp_base);
}

/*
 * Every private function the header declares is exported by libibverbs
 * under IBVERBS_PRIVATE_34, and is what this program was linked to.
 */
#define PRIVATE_FUNCS(X)						\
	X(__verbs_log) X(_verbs_init_and_alloc_context)			\
	X(verbs_uninit_context) X(verbs_set_ops) X(verbs_init_cq)	\
	X(ibv_cmd_get_context) X(ibv_cmd_query_device_any)		\
	X(ibv_cmd_query_port) X(ibv_cmd_alloc_pd) X(ibv_cmd_dealloc_pd)	\
	X(ibv_cmd_open_xrcd) X(ibv_cmd_close_xrcd)			\
	X(ibv_cmd_reg_mr) X(ibv_cmd_rereg_mr) X(ibv_cmd_dereg_mr)	\
	X(ibv_cmd_advise_mr)						\
	X(ibv_cmd_query_context) X(ibv_cmd_query_mr)			\
	X(ibv_cmd_alloc_mw) X(ibv_cmd_dealloc_mw)			\
	X(ibv_cmd_create_cq) X(ibv_cmd_create_cq_ex)			\
	X(ibv_cmd_req_notify_cq) X(ibv_cmd_resize_cq)			\
	X(ibv_cmd_destroy_cq) X(ibv_cmd_create_srq)			\
	X(ibv_cmd_create_srq_ex)					\
	X(ibv_cmd_modify_srq) X(ibv_cmd_query_srq)			\
	X(ibv_cmd_destroy_srq) X(ibv_cmd_create_qp)			\
	X(ibv_cmd_create_qp_ex) X(ibv_cmd_open_qp) X(ibv_cmd_query_qp)	\
	X(ibv_cmd_modify_qp) X(ibv_cmd_destroy_qp) X(ibv_cmd_post_send)	\
	X(ibv_cmd_post_recv) X(ibv_cmd_create_ah) X(ibv_cmd_destroy_ah) \
	X(ibv_cmd_alloc_dm) X(ibv_cmd_free_dm) X(ibv_cmd_reg_dm_mr)	\
	X(ibv_cmd_attach_mcast) X(ibv_cmd_detach_mcast)			\
	X(ibv_cmd_create_flow) X(ibv_cmd_destroy_flow)

TEST(private_symbols)
{
	static const struct {
		const char *name;
		uintptr_t linked;
	} funcs[] = {
#define X(f) { #f, FN(f) },
		PRIVATE_FUNCS(X)
#undef X
	};
	void *lib, *sym;
	size_t i;

	lib = dlopen("libibverbs.so.1", RTLD_NOW | RTLD_NOLOAD);
	ASSERT_NE(NULL, lib);

	for (i = 0; i < sizeof(funcs) / sizeof(funcs[0]); i++) {
		sym = dlvsym(lib, funcs[i].name, IBVERBS_PRIVATE);
		EXPECT_NE(NULL, sym) {
			TH_LOG("%s@%s: %s", funcs[i].name, IBVERBS_PRIVATE,
			       dlerror());
		}
		EXPECT_EQ(funcs[i].linked, (uintptr_t)sym) {
			TH_LOG("%s: linked to another definition",
			       funcs[i].name);
		}
	}
	/* the one we interpose below */
	EXPECT_NE(NULL, dlvsym(lib, "verbs_register_driver_34",
			       IBVERBS_PRIVATE));
	dlclose(lib);
}

/*
 * A provider's constructor calls verbs_register_driver_34(); this program
 * defines that symbol too (and exports it, see the Makefile), so the call
 * lands here first.  Record vrdma's ops, then register for real.  (The
 * installed providers libibverbs loads from /etc/libibverbs.d come through
 * here as well.)
 */
static const struct verbs_device_ops *registered_ops;
static int registrations;

void verbs_register_driver_34(const struct verbs_device_ops *ops)
{
	void (*real)(const struct verbs_device_ops *ops);

	if (ops && ops->name && !strcmp(ops->name, VRDMA_PROVIDER_NAME)) {
		registrations++;
		registered_ops = ops;
	}
	real = (__typeof__(real))dlvsym(RTLD_NEXT, "verbs_register_driver_34",
					IBVERBS_PRIVATE);
	if (real)
		real(ops);
}

static const char *provider_path(void)
{
	const char *path = getenv("VRDMA_PROVIDER_SO");

	return path && *path ? path : VRDMA_PROVIDER_SO;
}

/*
 * libibverbs' match_modalias(), for a MODALIAS entry: @value is the
 * device's parent's modalias, or "rdma_device:N<name>" (match_name()).
 */
static bool provider_matches(const struct verbs_device_ops *ops,
			     const char *value)
{
	const struct verbs_match_ent *ent;

	for (ent = ops->match_table; ent->kind != VERBS_MATCH_SENTINEL; ent++)
		if (ent->kind == VERBS_MATCH_MODALIAS &&
		    fnmatch(ent->u.modalias, value, 0) == 0)
			return true;
	return false;
}

/*
 * Test bodies skip on !ready: the 6.1 harness runs the body even when the
 * setup called SKIP().
 */
FIXTURE(provider) {
	void *handle;
	bool ready;
	char reason[256];
};

FIXTURE_SETUP(provider)
{
	const char *path = provider_path();

	if (access(path, R_OK)) {
		snprintf(self->reason, sizeof(self->reason),
			 "%s: %s (build userspace-provider first)", path,
			 strerror(errno));
		return;
	}

	self->handle = dlopen(path, RTLD_NOW | RTLD_LOCAL);
	ASSERT_NE(NULL, self->handle) {
		TH_LOG("dlopen(%s, RTLD_NOW): %s", path, dlerror());
	}
	self->ready = true;
}

FIXTURE_TEARDOWN(provider)
{
	if (self->handle)
		dlclose(self->handle);
}

TEST_F(provider, registers)
{
	const struct verbs_device_ops *ops = registered_ops;
	const struct verbs_match_ent *ent;

	if (!self->ready)
		SKIP(return, "%s", self->reason);
	ASSERT_EQ(1, registrations);
	ASSERT_NE(NULL, ops);
	ASSERT_STREQ("vrdma", ops->name);
	EXPECT_EQ(VRDMA_UVERBS_ABI_VERSION, ops->match_min_abi_version);
	EXPECT_EQ(VRDMA_UVERBS_ABI_VERSION, ops->match_max_abi_version);
	EXPECT_NE(NULL, ops->alloc_context);
	EXPECT_NE(NULL, ops->alloc_device);
	EXPECT_NE(NULL, ops->uninit_device);
	EXPECT_NE(NULL, ops->import_context);
	EXPECT_EQ(NULL, ops->match_device);
	ASSERT_NE(NULL, ops->match_table);

	/* only our modalias, under any device name; no driver ids */
	EXPECT_TRUE(provider_matches(ops, VRDMA_MODALIAS));
	EXPECT_FALSE(provider_matches(ops, "rdma_device:Nvrdma0"));
	EXPECT_FALSE(provider_matches(ops, "rdma_device:Nrxe0"));
	EXPECT_FALSE(provider_matches(ops, "pci:v000015B3d0000101Bsv*"));
	EXPECT_FALSE(provider_matches(ops, "virtio:d00000001v00001AF4"));
	EXPECT_FALSE(provider_matches(ops, ""));
	for (ent = ops->match_table; ent->kind != VERBS_MATCH_SENTINEL; ent++)
		EXPECT_EQ(VERBS_MATCH_MODALIAS, ent->kind);
}

/*
 * Without a kernel device, GET_CONTEXT fails (cmd_fd is -1): the provider's
 * alloc_context must report it and leave the device reference count as it
 * found it.
 */
TEST_F(provider, alloc_context_without_kernel)
{
	const struct verbs_device_ops *ops = registered_ops;
	struct verbs_device *vdev;
	struct ibv_context *ctx;

	if (!self->ready)
		SKIP(return, "%s", self->reason);
	ASSERT_NE(NULL, ops);
	vdev = ops->alloc_device(NULL);
	ASSERT_NE(NULL, vdev);
	fake_device(ops, vdev);

	errno = 0;
	ctx = ibv_open_device(&vdev->device);
	EXPECT_EQ(NULL, ctx);
	EXPECT_NE(0, errno);
	EXPECT_EQ(1, atomic_load(&vdev->refcount));
	if (ctx)
		ibv_close_device(ctx);

	ops->uninit_device(vdev);
}

/*
 * Discovery: libibverbs lists uverbs devices through RDMA netlink, or, when
 * that fails, from <SYSFS_PATH>/class/infiniband_verbs; either way it wants
 * /dev/infiniband/uverbsN to exist.  The test makes netlink fail (seccomp),
 * points SYSFS_PATH at a fake tree and mounts a private /dev, so the whole
 * path of ibv_get_device_list() runs on a device that does not exist:
 * load_drivers() (RDMAV_DRIVERS), the match table, the ABI range, and
 * verbs_device fields libibverbs fills in.  All of it is undone when the
 * test process exits.
 */
#if __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
#define SECCOMP_ARG_LO(n) offsetof(struct seccomp_data, args[n])
#else
#define SECCOMP_ARG_LO(n) (offsetof(struct seccomp_data, args[n]) + 4)
#endif

/* socket(AF_NETLINK, *, NETLINK_RDMA) fails with EPROTONOSUPPORT. */
static int block_rdma_netlink(void)
{
	struct sock_filter filter[] = {
		BPF_STMT(BPF_LD | BPF_W | BPF_ABS,
			 offsetof(struct seccomp_data, nr)),
		BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, __NR_socket, 0, 5),
		BPF_STMT(BPF_LD | BPF_W | BPF_ABS, SECCOMP_ARG_LO(0)),
		BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, AF_NETLINK, 0, 3),
		BPF_STMT(BPF_LD | BPF_W | BPF_ABS, SECCOMP_ARG_LO(2)),
		BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, NETLINK_RDMA, 0, 1),
		BPF_STMT(BPF_RET | BPF_K,
			 SECCOMP_RET_ERRNO | (EPROTONOSUPPORT & SECCOMP_RET_DATA)),
		BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
	};
	struct sock_fprog prog = {
		.len = sizeof(filter) / sizeof(filter[0]),
		.filter = filter,
	};

	if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0))
		return -1;
	return prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &prog);
}

/* The fake sysfs lives in the private /dev, and goes away with it. */
#define FAKE_SYSFS "/dev/vrdma_abi_sysfs"

FIXTURE(discovery) {
	bool ready;
	char reason[256];
};

/* Creates FAKE_SYSFS/rel: a directory if text is NULL, else a file. */
static int fake_path(const char *rel, const char *text)
{
	char path[PATH_MAX];
	FILE *f;
	int ret;

	snprintf(path, sizeof(path), "%s/%s", FAKE_SYSFS, rel);
	if (!text)
		return mkdir(path, 0755);
	f = fopen(path, "w");
	if (!f)
		return -1;
	ret = fputs(text, f) < 0;
	ret |= fclose(f);
	return ret;
}

/*
 * uverbs0, for an ib_device <name> whose driver reports uverbs ABI <abi>,
 * under a parent device whose modalias is <modalias> (NULL: no parent).
 */
static int fake_uverbs(const char *name, const char *abi,
		       const char *modalias)
{
	char rel[128], text[64];

	snprintf(text, sizeof(text), "%s\n", name);
	if (fake_path("class/infiniband_verbs/uverbs0/dev", "231:192\n") ||
	    fake_path("class/infiniband_verbs/uverbs0/ibdev", text) ||
	    fake_path("class/infiniband_verbs/uverbs0/abi_version", abi))
		return -1;
	snprintf(rel, sizeof(rel), "class/infiniband/%s", name);
	if (fake_path(rel, NULL))
		return -1;
	snprintf(rel, sizeof(rel), "class/infiniband/%s/node_type", name);
	if (fake_path(rel, "1: CA\n"))
		return -1;
	snprintf(rel, sizeof(rel), "class/infiniband/%s/node_guid", name);
	if (fake_path(rel, "0200:00ff:fe00:0001\n"))
		return -1;
	if (!modalias)
		return 0;
	snprintf(rel, sizeof(rel), "class/infiniband/%s/device", name);
	if (fake_path(rel, NULL))
		return -1;
	snprintf(rel, sizeof(rel), "class/infiniband/%s/device/modalias",
		 name);
	snprintf(text, sizeof(text), "%s\n", modalias);
	return fake_path(rel, text);
}

FIXTURE_SETUP(discovery)
{
	static const char suffix[] = "-rdmav34.so";
	const char *path = provider_path();
	char drivers[PATH_MAX];
	size_t len = strlen(path);

	if (geteuid() != 0) {
		snprintf(self->reason, sizeof(self->reason),
			 "needs root (private mount namespace)");
		return;
	}
	if (access(path, R_OK) || len <= strlen(suffix) ||
	    strcmp(path + len - strlen(suffix), suffix)) {
		snprintf(self->reason, sizeof(self->reason),
			 "%s: not a readable ...%s", path, suffix);
		return;
	}
	/* RDMAV_DRIVERS takes the path without the suffix */
	snprintf(drivers, sizeof(drivers), "%.*s",
		 (int)(len - strlen(suffix)), path);

	if (unshare(CLONE_NEWNS) ||
	    mount("none", "/", "none", MS_REC | MS_PRIVATE, NULL) ||
	    mount("vrdma_abi_dev", "/dev", "tmpfs", 0, "mode=0755")) {
		snprintf(self->reason, sizeof(self->reason),
			 "private /dev: %s", strerror(errno));
		return;
	}
	/* only stat()ed while listing; opening it would fail */
	ASSERT_EQ(0, mkdir("/dev/infiniband", 0755));
	ASSERT_EQ(0, close(creat("/dev/infiniband/uverbs0", 0600)));

	ASSERT_EQ(0, mkdir(FAKE_SYSFS, 0755));
	ASSERT_EQ(0, fake_path("class", NULL));
	ASSERT_EQ(0, fake_path("class/infiniband", NULL));
	ASSERT_EQ(0, fake_path("class/infiniband_verbs", NULL));
	ASSERT_EQ(0, fake_path("class/infiniband_verbs/abi_version", "6\n"));
	ASSERT_EQ(0, fake_path("class/infiniband_verbs/uverbs0", NULL));

	ASSERT_EQ(0, block_rdma_netlink()) {
		TH_LOG("seccomp: %s", strerror(errno));
	}
	ASSERT_EQ(0, setenv("SYSFS_PATH", FAKE_SYSFS, 1));
	ASSERT_EQ(0, setenv("RDMAV_DRIVERS", drivers, 1));
	ASSERT_EQ(0, unsetenv("IBV_DRIVERS"));
	self->ready = true;
}

FIXTURE_TEARDOWN(discovery)
{
}

TEST_F(discovery, binds_vrdma0)
{
	struct ibv_device **list;
	struct verbs_device *vdev;
	int n = -1;

	if (!self->ready)
		SKIP(return, "%s", self->reason);
	ASSERT_EQ(0, fake_uverbs("vrdma0", "1\n", VRDMA_MODALIAS));

	list = ibv_get_device_list(&n);
	ASSERT_NE(NULL, list) {
		TH_LOG("ibv_get_device_list: %s", strerror(errno));
	}
	ASSERT_EQ(1, registrations);
	ASSERT_EQ(1, n);
	EXPECT_STREQ("vrdma0", ibv_get_device_name(list[0]));
	EXPECT_EQ(IBV_NODE_CA, list[0]->node_type);
	EXPECT_EQ(IBV_TRANSPORT_IB, list[0]->transport_type);

	/* what try_driver() wrote, read through our struct verbs_device */
	vdev = verbs_get_device(list[0]);
	EXPECT_EQ(registered_ops, vdev->ops);
	EXPECT_NE(0, atomic_load(&vdev->refcount));
	EXPECT_NE(NULL, vdev->sysfs);
	EXPECT_NE(NULL, vdev->entry.next);
	EXPECT_NE(NULL, vdev->entry.prev);
	/* read by libibverbs from the sysfs node behind vdev->sysfs */
	EXPECT_EQ(htobe64(0x020000fffe000001ULL), ibv_get_device_guid(list[0]));

	ibv_free_device_list(list);
}

/* Matching passes, the ABI range check in libibverbs refuses it. */
TEST_F(discovery, refuses_other_abi)
{
	struct ibv_device **list;
	int n = -1;

	if (!self->ready)
		SKIP(return, "%s", self->reason);
	ASSERT_EQ(0, fake_uverbs("vrdma0", "2\n", VRDMA_MODALIAS));

	list = ibv_get_device_list(&n);
	ASSERT_NE(NULL, list);
	EXPECT_EQ(1, registrations);
	EXPECT_EQ(0, n);
	ibv_free_device_list(list);
}

/* "rdma dev set vrdma0 name foo": found by its parent, not its name. */
TEST_F(discovery, binds_renamed)
{
	struct ibv_device **list;
	int n = -1;

	if (!self->ready)
		SKIP(return, "%s", self->reason);
	ASSERT_EQ(0, fake_uverbs("foo", "1\n", VRDMA_MODALIAS));

	list = ibv_get_device_list(&n);
	ASSERT_NE(NULL, list);
	EXPECT_EQ(1, registrations);
	ASSERT_EQ(1, n);
	EXPECT_STREQ("foo", ibv_get_device_name(list[0]));
	EXPECT_EQ(registered_ops, verbs_get_device(list[0])->ops);
	ibv_free_device_list(list);
}

/*
 * Another driver's device named as ours are, of the same uverbs ABI
 * (siw's is 1, as ours): without our parent's modalias it is not ours.
 */
TEST_F(discovery, ignores_other_devices)
{
	struct ibv_device **list;
	int n = -1;

	if (!self->ready)
		SKIP(return, "%s", self->reason);
	ASSERT_EQ(0, fake_uverbs("vrdma0", "1\n",
				 "virtio:d00000001v00001AF4"));

	list = ibv_get_device_list(&n);
	ASSERT_NE(NULL, list);
	EXPECT_EQ(1, registrations);
	EXPECT_EQ(0, n);
	ibv_free_device_list(list);
}

TEST_F(discovery, ignores_no_parent)
{
	struct ibv_device **list;
	int n = -1;

	if (!self->ready)
		SKIP(return, "%s", self->reason);
	ASSERT_EQ(0, fake_uverbs("vrdma0", "1\n", NULL));

	list = ibv_get_device_list(&n);
	ASSERT_NE(NULL, list);
	EXPECT_EQ(1, registrations);
	EXPECT_EQ(0, n);
	ibv_free_device_list(list);
}

TEST_HARNESS_MAIN
