/* SPDX-License-Identifier: (GPL-2.0 OR Linux-OpenIB) */
/*
 * The part of libibverbs' private provider ABI that libvrdma uses.
 *
 * libibverbs exports the interface between itself and its providers under
 * the symbol version IBVERBS_PRIVATE_<N>; the installed libibverbs 44
 * (rdma-core v44.x) exports IBVERBS_PRIVATE_34, and any change to the
 * structures below comes with a new N.  rdma-core keeps the matching header
 * (libibverbs/driver.h) private and no distribution package ships it, so the
 * subset we use is declared here, by hand, from rdma-core v44.0
 * (tag v44.0, commit 91392a91eb41affee3bd75dc7d03eb86b4854aea):
 *
 *   libibverbs/driver.h    verbs_device_ops, verbs_device, verbs_match_ent,
 *                          verbs_context_ops, verbs_mr, verbs_dm,
 *                          verbs_xrcd, verbs_srq, verbs_qp, verbs_cq, the
 *                          verbs_* and ibv_cmd_* prototypes
 *   libibverbs/kern-abi.h  the ibv_<cmd> command structs (DECLARE_CMD)
 *   ccan/list.h            struct list_node (two pointers)
 *
 * None of these changed between v44.0 and the stable-v44 branch head, nor
 * up to rdma-core v56.1 (Debian 13), which still exports IBVERBS_PRIVATE_34:
 * its driver.h only changed ibv_cmd_reg_dmabuf_mr()'s arguments and added
 * ibv_cmd_create_cq_ex2(), neither of which libvrdma calls, so one source
 * builds against both (scripts/build-provider-trixie builds it against
 * rdma-core 56 and runs provider_abi_test there).
 *
 * Nothing checks a struct declared here against the library at build time:
 * a wrong member order compiles, links, and then corrupts memory at run
 * time.  selftests/vrdma/device/provider_abi_test.c checks what libibverbs
 * reads and writes (every op of verbs_context_ops, the verbs_device fields,
 * the command sizes) against the installed library; run it after any
 * change here or to libibverbs.
 *
 * When the installed libibverbs moves to a new IBVERBS_PRIVATE_<N>, the
 * provider stops loading (verbs_register_driver_34 no longer exists):
 * re-read driver.h of that release, update this file, rename the .so
 * suffix in the Makefile, and rerun the test.
 */
#ifndef VRDMA_VERBS_PRIVATE_H
#define VRDMA_VERBS_PRIVATE_H

#include <assert.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include <infiniband/verbs.h>
#include <rdma/ib_user_verbs.h>

/* The N of IBVERBS_PRIVATE_<N> this file describes. */
#define VRDMA_IBVERBS_PABI_VERSION 34

/* ------------------------------------------------------------------------
 * Logging (goes where VERBS_LOG_LEVEL / VERBS_LOG_FILE say).
 */
enum {
	VERBS_LOG_LEVEL_NONE,
	VERBS_LOG_ERR,
	VERBS_LOG_WARN,
	VERBS_LOG_INFO,
	VERBS_LOG_DEBUG,
};

void __verbs_log(struct verbs_context *ctx, uint32_t level,
		 const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

/* ------------------------------------------------------------------------
 * Device matching and the per-device objects.
 */

/* Kinds of verbs_match_ent; a table ends with a zeroed (SENTINEL) entry. */
enum {
	VERBS_MATCH_SENTINEL = 0,
	VERBS_MATCH_PCI = 1,
	VERBS_MATCH_MODALIAS = 2,
	VERBS_MATCH_DRIVER_ID = 3,
};

struct verbs_match_ent {
	void *driver_data;
	union {
		const char *modalias;	/* fnmatch() pattern */
		uint64_t driver_id;	/* enum rdma_driver_id */
	} u;
	uint16_t vendor;
	uint16_t device;
	uint8_t kind;
};

/*
 * A MODALIAS entry: for every device without a DRIVER_ID match, libibverbs
 * fnmatch()es the pattern against "rdma_device:N<ibdev name>" (which is
 * how rdma-core's VERBS_NAME_MATCH() matches names), then against
 * <ibdev>/device/modalias, the modalias of the device's parent.
 */
#define VRDMA_VERBS_MODALIAS_MATCH(_pattern, _data)			\
	{								\
		.driver_data = (_data),					\
		.u.modalias = (_pattern),				\
		.kind = VERBS_MATCH_MODALIAS,				\
	}

/*
 * libibverbs' record of an uverbs device found in sysfs/netlink.  Only
 * libibverbs looks inside; the provider passes pointers around.
 */
struct verbs_sysfs_dev;

struct verbs_device;

/* What a provider registers.  Field order is ABI. */
struct verbs_device_ops {
	const char *name;

	/* uverbs_abi_ver of the kernel driver, inclusive range */
	uint32_t match_min_abi_version;
	uint32_t match_max_abi_version;
	const struct verbs_match_ent *match_table;
	const struct verbs_device_ops **static_providers;

	bool (*match_device)(struct verbs_sysfs_dev *sysfs_dev);

	/* Owns cmd_fd: closes it on failure. */
	struct verbs_context *(*alloc_context)(struct ibv_device *device,
					       int cmd_fd,
					       void *private_data);
	struct verbs_context *(*import_context)(struct ibv_device *device,
						int cmd_fd);

	struct verbs_device *(*alloc_device)(struct verbs_sysfs_dev *sysfs_dev);
	void (*uninit_device)(struct verbs_device *device);
};

/* ccan/list.h struct list_node */
struct vrdma_verbs_list_node {
	struct vrdma_verbs_list_node *next, *prev;
};

/*
 * Allocated by verbs_device_ops.alloc_device (zeroed, embedded at the start
 * of the provider's own device struct); libibverbs fills every field, holds
 * a reference per open context and calls uninit_device at the last put.
 */
struct verbs_device {
	struct ibv_device device;	/* must be first */
	const struct verbs_device_ops *ops;
	atomic_int refcount;
	struct vrdma_verbs_list_node entry;
	struct verbs_sysfs_dev *sysfs;
	uint64_t core_support;
};

static inline struct verbs_device *
verbs_get_device(const struct ibv_device *dev)
{
	return (struct verbs_device *)((char *)dev -
				       offsetof(struct verbs_device, device));
}

/* ------------------------------------------------------------------------
 * Objects that embed a public verbs object.
 */

/* verbs_xrcd.comp_mask: ibv_cmd_open_xrcd() sets VERBS_XRCD_HANDLE */
enum verbs_xrcd_mask {
	VERBS_XRCD_HANDLE = 1 << 0,
	VERBS_XRCD_RESERVED = 1 << 1,
};

/* An XRC domain; libibverbs fills it at open_xrcd, the handle included. */
struct verbs_xrcd {
	struct ibv_xrcd xrcd;
	uint32_t comp_mask;
	uint32_t handle;
};

/*
 * An SRQ made by ibv_cmd_create_srq_ex(), which fills srq_type, xrcd and
 * srq_num (the uverbs response's srqn) for an XRC SRQ, and cq.
 */
struct verbs_srq {
	struct ibv_srq srq;
	enum ibv_srq_type srq_type;
	struct verbs_xrcd *xrcd;
	struct ibv_cq *cq;
	uint32_t srq_num;
};

enum ibv_mr_type {
	IBV_MR_TYPE_MR,
	IBV_MR_TYPE_NULL_MR,
	IBV_MR_TYPE_IMPORTED_MR,
	IBV_MR_TYPE_DMABUF_MR,
};

struct verbs_mr {
	struct ibv_mr ibv_mr;
	enum ibv_mr_type mr_type;
	int access;
};

/*
 * Device memory; ibv_cmd_alloc_dm() fills @handle and, in @dm, the
 * context, the handle and comp_mask IBV_DM_MASK_HANDLE.  The provider
 * sets the memcpy functions.
 */
struct verbs_dm {
	struct ibv_dm dm;
	uint32_t handle;
};

/* verbs_qp.comp_mask */
enum verbs_qp_mask {
	VERBS_QP_XRCD = 1 << 0,
	VERBS_QP_EX = 1 << 1,	/* ibv_qp_to_qp_ex() returns &qp_ex */
};

struct verbs_qp {
	union {
		struct ibv_qp qp;
		struct ibv_qp_ex qp_ex;
	};
	uint32_t comp_mask;
	struct verbs_xrcd *xrcd;
};

struct verbs_cq {
	union {
		struct ibv_cq cq;
		struct ibv_cq_ex cq_ex;
	};
};

/* ------------------------------------------------------------------------
 * The provider's operations.
 *
 * The union of every op a provider can implement, sorted by name; a NULL op
 * makes the verb fail with EOPNOTSUPP (libibverbs' dummy ops).  76 entries
 * in v44.  Order is ABI: keep it exactly as in driver.h.
 */
struct verbs_context_ops {
	int (*advise_mr)(struct ibv_pd *pd, enum ibv_advise_mr_advice advice,
			 uint32_t flags, struct ibv_sge *sg_list,
			 uint32_t num_sges);
	struct ibv_dm *(*alloc_dm)(struct ibv_context *context,
				   struct ibv_alloc_dm_attr *attr);
	struct ibv_mw *(*alloc_mw)(struct ibv_pd *pd, enum ibv_mw_type type);
	struct ibv_mr *(*alloc_null_mr)(struct ibv_pd *pd);
	struct ibv_pd *(*alloc_parent_domain)(
		struct ibv_context *context,
		struct ibv_parent_domain_init_attr *attr);
	struct ibv_pd *(*alloc_pd)(struct ibv_context *context);
	struct ibv_td *(*alloc_td)(struct ibv_context *context,
				   struct ibv_td_init_attr *init_attr);
	void (*async_event)(struct ibv_context *context,
			    struct ibv_async_event *event);
	int (*attach_counters_point_flow)(struct ibv_counters *counters,
					  struct ibv_counter_attach_attr *attr,
					  struct ibv_flow *flow);
	int (*attach_mcast)(struct ibv_qp *qp, const union ibv_gid *gid,
			    uint16_t lid);
	int (*bind_mw)(struct ibv_qp *qp, struct ibv_mw *mw,
		       struct ibv_mw_bind *mw_bind);
	int (*close_xrcd)(struct ibv_xrcd *xrcd);
	void (*cq_event)(struct ibv_cq *cq);
	struct ibv_ah *(*create_ah)(struct ibv_pd *pd,
				    struct ibv_ah_attr *attr);
	struct ibv_counters *(*create_counters)(
		struct ibv_context *context,
		struct ibv_counters_init_attr *init_attr);
	struct ibv_cq *(*create_cq)(struct ibv_context *context, int cqe,
				    struct ibv_comp_channel *channel,
				    int comp_vector);
	struct ibv_cq_ex *(*create_cq_ex)(
		struct ibv_context *context,
		struct ibv_cq_init_attr_ex *init_attr);
	struct ibv_flow *(*create_flow)(struct ibv_qp *qp,
					struct ibv_flow_attr *flow_attr);
	struct ibv_flow_action *(*create_flow_action_esp)(
		struct ibv_context *context,
		struct ibv_flow_action_esp_attr *attr);
	struct ibv_qp *(*create_qp)(struct ibv_pd *pd,
				    struct ibv_qp_init_attr *attr);
	struct ibv_qp *(*create_qp_ex)(
		struct ibv_context *context,
		struct ibv_qp_init_attr_ex *qp_init_attr_ex);
	struct ibv_rwq_ind_table *(*create_rwq_ind_table)(
		struct ibv_context *context,
		struct ibv_rwq_ind_table_init_attr *init_attr);
	struct ibv_srq *(*create_srq)(struct ibv_pd *pd,
				      struct ibv_srq_init_attr *srq_init_attr);
	struct ibv_srq *(*create_srq_ex)(
		struct ibv_context *context,
		struct ibv_srq_init_attr_ex *srq_init_attr_ex);
	struct ibv_wq *(*create_wq)(struct ibv_context *context,
				    struct ibv_wq_init_attr *wq_init_attr);
	int (*dealloc_mw)(struct ibv_mw *mw);
	int (*dealloc_pd)(struct ibv_pd *pd);
	int (*dealloc_td)(struct ibv_td *td);
	int (*dereg_mr)(struct verbs_mr *vmr);
	int (*destroy_ah)(struct ibv_ah *ah);
	int (*destroy_counters)(struct ibv_counters *counters);
	int (*destroy_cq)(struct ibv_cq *cq);
	int (*destroy_flow)(struct ibv_flow *flow);
	int (*destroy_flow_action)(struct ibv_flow_action *action);
	int (*destroy_qp)(struct ibv_qp *qp);
	int (*destroy_rwq_ind_table)(struct ibv_rwq_ind_table *rwq_ind_table);
	int (*destroy_srq)(struct ibv_srq *srq);
	int (*destroy_wq)(struct ibv_wq *wq);
	int (*detach_mcast)(struct ibv_qp *qp, const union ibv_gid *gid,
			    uint16_t lid);
	void (*free_context)(struct ibv_context *context);
	int (*free_dm)(struct ibv_dm *dm);
	int (*get_srq_num)(struct ibv_srq *srq, uint32_t *srq_num);
	struct ibv_dm *(*import_dm)(struct ibv_context *context,
				    uint32_t dm_handle);
	struct ibv_mr *(*import_mr)(struct ibv_pd *pd, uint32_t mr_handle);
	struct ibv_pd *(*import_pd)(struct ibv_context *context,
				    uint32_t pd_handle);
	int (*modify_cq)(struct ibv_cq *cq, struct ibv_modify_cq_attr *attr);
	int (*modify_flow_action_esp)(struct ibv_flow_action *action,
				      struct ibv_flow_action_esp_attr *attr);
	int (*modify_qp)(struct ibv_qp *qp, struct ibv_qp_attr *attr,
			 int attr_mask);
	int (*modify_qp_rate_limit)(struct ibv_qp *qp,
				    struct ibv_qp_rate_limit_attr *attr);
	int (*modify_srq)(struct ibv_srq *srq, struct ibv_srq_attr *srq_attr,
			  int srq_attr_mask);
	int (*modify_wq)(struct ibv_wq *wq, struct ibv_wq_attr *wq_attr);
	struct ibv_qp *(*open_qp)(struct ibv_context *context,
				  struct ibv_qp_open_attr *attr);
	struct ibv_xrcd *(*open_xrcd)(
		struct ibv_context *context,
		struct ibv_xrcd_init_attr *xrcd_init_attr);
	int (*poll_cq)(struct ibv_cq *cq, int num_entries, struct ibv_wc *wc);
	int (*post_recv)(struct ibv_qp *qp, struct ibv_recv_wr *wr,
			 struct ibv_recv_wr **bad_wr);
	int (*post_send)(struct ibv_qp *qp, struct ibv_send_wr *wr,
			 struct ibv_send_wr **bad_wr);
	int (*post_srq_ops)(struct ibv_srq *srq, struct ibv_ops_wr *op,
			    struct ibv_ops_wr **bad_op);
	int (*post_srq_recv)(struct ibv_srq *srq, struct ibv_recv_wr *recv_wr,
			     struct ibv_recv_wr **bad_recv_wr);
	int (*query_device_ex)(struct ibv_context *context,
			       const struct ibv_query_device_ex_input *input,
			       struct ibv_device_attr_ex *attr,
			       size_t attr_size);
	int (*query_ece)(struct ibv_qp *qp, struct ibv_ece *ece);
	int (*query_port)(struct ibv_context *context, uint8_t port_num,
			  struct ibv_port_attr *port_attr);
	int (*query_qp)(struct ibv_qp *qp, struct ibv_qp_attr *attr,
			int attr_mask, struct ibv_qp_init_attr *init_attr);
	int (*query_qp_data_in_order)(struct ibv_qp *qp, enum ibv_wr_opcode op,
				      uint32_t flags);
	int (*query_rt_values)(struct ibv_context *context,
			       struct ibv_values_ex *values);
	int (*query_srq)(struct ibv_srq *srq, struct ibv_srq_attr *srq_attr);
	int (*read_counters)(struct ibv_counters *counters,
			     uint64_t *counters_value, uint32_t ncounters,
			     uint32_t flags);
	struct ibv_mr *(*reg_dm_mr)(struct ibv_pd *pd, struct ibv_dm *dm,
				    uint64_t dm_offset, size_t length,
				    unsigned int access);
	struct ibv_mr *(*reg_dmabuf_mr)(struct ibv_pd *pd, uint64_t offset,
					size_t length, uint64_t iova, int fd,
					int access);
	struct ibv_mr *(*reg_mr)(struct ibv_pd *pd, void *addr, size_t length,
				 uint64_t hca_va, int access);
	int (*req_notify_cq)(struct ibv_cq *cq, int solicited_only);
	int (*rereg_mr)(struct verbs_mr *vmr, int flags, struct ibv_pd *pd,
			void *addr, size_t length, int access);
	int (*resize_cq)(struct ibv_cq *cq, int cqe);
	int (*set_ece)(struct ibv_qp *qp, struct ibv_ece *ece);
	void (*unimport_dm)(struct ibv_dm *dm);
	void (*unimport_mr)(struct ibv_mr *mr);
	void (*unimport_pd)(struct ibv_pd *pd);
};

#define VRDMA_VERBS_CONTEXT_OPS_COUNT 76

/* ------------------------------------------------------------------------
 * Registration and context life cycle.
 */

/*
 * Adds ops to libibverbs' driver list; call it from a constructor of the
 * provider .so.  The ABI number is part of the name, so a provider built
 * for another IBVERBS_PRIVATE_<N> fails to load instead of misbehaving.
 */
void verbs_register_driver_34(const struct verbs_device_ops *ops);

/*
 * Allocates alloc_size zeroed bytes with a struct verbs_context at
 * (uintptr_t)context_offset and initialises it (takes a device reference,
 * installs the EOPNOTSUPP ops).  Owns cmd_fd: closes it on failure.
 */
void *_verbs_init_and_alloc_context(struct ibv_device *device, int cmd_fd,
				    size_t alloc_size,
				    struct verbs_context *context_offset,
				    uint32_t driver_id);

#define vrdma_verbs_init_and_alloc_context(ibdev, cmd_fd, drv_ctx_ptr,	\
					   ctx_memb, driver_id)		\
	((__typeof__(drv_ctx_ptr))_verbs_init_and_alloc_context(	\
		(ibdev), (cmd_fd), sizeof(*(drv_ctx_ptr)),		\
		(struct verbs_context *)offsetof(			\
			__typeof__(*(drv_ctx_ptr)), ctx_memb),		\
		(driver_id)))

/* Undoes verbs_init_context: frees libibverbs' part, closes the fds. */
void verbs_uninit_context(struct verbs_context *context);

/* Installs every non-NULL op of ops; may be called more than once. */
void verbs_set_ops(struct verbs_context *vctx,
		   const struct verbs_context_ops *ops);

void verbs_init_cq(struct ibv_cq *cq, struct ibv_context *context,
		   struct ibv_comp_channel *channel, void *cq_context);

/* ------------------------------------------------------------------------
 * Command structs: the 8-byte uverbs header followed by the kernel's
 * request struct (kern-abi.h DECLARE_CMD).  libibverbs splits a provider's
 * command at sizeof() of these: what follows is the driver's udata.
 */
#define VRDMA_DECLARE_CMD(_name, _kabi)					\
	struct _name {							\
		struct ib_uverbs_cmd_hdr hdr;				\
		struct _kabi core_payload;				\
	};								\
	static_assert(offsetof(struct _name, core_payload) ==		\
			      sizeof(struct ib_uverbs_cmd_hdr),		\
		      "bad " #_name " header");				\
	static_assert(sizeof(struct _name) ==				\
			      sizeof(struct ib_uverbs_cmd_hdr) +	\
				      sizeof(struct _kabi),		\
		      "bad " #_name " size")

VRDMA_DECLARE_CMD(ibv_alloc_mw, ib_uverbs_alloc_mw);
VRDMA_DECLARE_CMD(ibv_alloc_pd, ib_uverbs_alloc_pd);
VRDMA_DECLARE_CMD(ibv_create_ah, ib_uverbs_create_ah);
VRDMA_DECLARE_CMD(ibv_create_cq, ib_uverbs_create_cq);
VRDMA_DECLARE_CMD(ibv_create_qp, ib_uverbs_create_qp);
VRDMA_DECLARE_CMD(ibv_create_srq, ib_uverbs_create_srq);
VRDMA_DECLARE_CMD(ibv_create_xsrq, ib_uverbs_create_xsrq);
VRDMA_DECLARE_CMD(ibv_get_context, ib_uverbs_get_context);
VRDMA_DECLARE_CMD(ibv_modify_qp, ib_uverbs_modify_qp);
VRDMA_DECLARE_CMD(ibv_modify_srq, ib_uverbs_modify_srq);
VRDMA_DECLARE_CMD(ibv_open_qp, ib_uverbs_open_qp);
VRDMA_DECLARE_CMD(ibv_open_xrcd, ib_uverbs_open_xrcd);
VRDMA_DECLARE_CMD(ibv_query_port, ib_uverbs_query_port);
VRDMA_DECLARE_CMD(ibv_query_qp, ib_uverbs_query_qp);
VRDMA_DECLARE_CMD(ibv_query_srq, ib_uverbs_query_srq);
VRDMA_DECLARE_CMD(ibv_reg_mr, ib_uverbs_reg_mr);
VRDMA_DECLARE_CMD(ibv_rereg_mr, ib_uverbs_rereg_mr);
VRDMA_DECLARE_CMD(ibv_resize_cq, ib_uverbs_resize_cq);

/*
 * A provider command with driver data (kern-abi.h DECLARE_DRV_CMD): the
 * core command, then the driver's request; the core response, then the
 * driver's response.  The kernel sees the driver parts as udata.
 */
#define VRDMA_DECLARE_DRV_CMD(_name, _ibv_cmd, _drv_req, _kresp, _drv_resp) \
	struct _name {							\
		struct _ibv_cmd ibv_cmd;				\
		struct _drv_req drv_payload;				\
	};								\
	struct _name##_resp {						\
		struct _kresp ibv_resp;					\
		struct _drv_resp drv_payload;				\
	};								\
	static_assert(offsetof(struct _name, drv_payload) ==		\
			      sizeof(struct _ibv_cmd),			\
		      "bad " #_name " request layout");		\
	static_assert(sizeof(struct _name) ==				\
			      sizeof(struct _ibv_cmd) +			\
				      sizeof(struct _drv_req),		\
		      "bad " #_name " request size");			\
	static_assert(offsetof(struct _name##_resp, drv_payload) ==	\
			      sizeof(struct _kresp),			\
		      "bad " #_name " response layout");		\
	static_assert(sizeof(struct _name##_resp) ==			\
			      sizeof(struct _kresp) +			\
				      sizeof(struct _drv_resp),		\
		      "bad " #_name " response size")

/* For VRDMA_DECLARE_DRV_CMD: a command without driver request data. */
struct vrdma_verbs_empty {};

/* ------------------------------------------------------------------------
 * Command wrappers (libibverbs/cmd_*.c).  Each returns 0 or a positive
 * errno.
 */
int ibv_cmd_get_context(struct verbs_context *context,
			struct ibv_get_context *cmd, size_t cmd_size,
			struct ib_uverbs_get_context_resp *resp,
			size_t resp_size);
int ibv_cmd_query_device_any(struct ibv_context *context,
			     const struct ibv_query_device_ex_input *input,
			     struct ibv_device_attr_ex *attr, size_t attr_size,
			     struct ib_uverbs_ex_query_device_resp *resp,
			     size_t *resp_size);
int ibv_cmd_query_port(struct ibv_context *context, uint8_t port_num,
		       struct ibv_port_attr *port_attr,
		       struct ibv_query_port *cmd, size_t cmd_size);
int ibv_cmd_alloc_pd(struct ibv_context *context, struct ibv_pd *pd,
		     struct ibv_alloc_pd *cmd, size_t cmd_size,
		     struct ib_uverbs_alloc_pd_resp *resp, size_t resp_size);
int ibv_cmd_dealloc_pd(struct ibv_pd *pd);
/*
 * OPEN_XRCD with attr's fd and oflags (both required: EINVAL); fills xrcd,
 * of vxrcd_size bytes, and its handle.
 */
int ibv_cmd_open_xrcd(struct ibv_context *context, struct verbs_xrcd *xrcd,
		      int vxrcd_size, struct ibv_xrcd_init_attr *attr,
		      struct ibv_open_xrcd *cmd, size_t cmd_size,
		      struct ib_uverbs_open_xrcd_resp *resp, size_t resp_size);
int ibv_cmd_close_xrcd(struct verbs_xrcd *xrcd);

int ibv_cmd_reg_mr(struct ibv_pd *pd, void *addr, size_t length,
		   uint64_t hca_va, int access, struct verbs_mr *vmr,
		   struct ibv_reg_mr *cmd, size_t cmd_size,
		   struct ib_uverbs_reg_mr_resp *resp, size_t resp_size);
int ibv_cmd_rereg_mr(struct verbs_mr *vmr, uint32_t flags, void *addr,
		     size_t length, uint64_t hca_va, int access,
		     struct ibv_pd *pd, struct ibv_rereg_mr *cmd,
		     size_t cmd_sz, struct ib_uverbs_rereg_mr_resp *resp,
		     size_t resp_sz);
int ibv_cmd_dereg_mr(struct verbs_mr *vmr);
/*
 * UVERBS_METHOD_ADVISE_MR (an ioctl, no write() form): @advice for the
 * @num_sge ranges of @sg_list, each of an MR of @pd; @flags is
 * IBV_ADVISE_MR_FLAG_FLUSH or 0.  The kernel checks all of it.
 */
int ibv_cmd_advise_mr(struct ibv_pd *pd, enum ibv_advise_mr_advice advice,
		      uint32_t flags, struct ibv_sge *sg_list,
		      uint32_t num_sge);
/* libibverbs' ioctl command buffer: only ever passed as NULL here. */
struct ibv_command_buffer;
int ibv_cmd_query_context(struct ibv_context *ctx,
			  struct ibv_command_buffer *driver);
int ibv_cmd_query_mr(struct ibv_pd *pd, struct verbs_mr *vmr,
		     uint32_t mr_handle);
int ibv_cmd_alloc_mw(struct ibv_pd *pd, enum ibv_mw_type type,
		     struct ibv_mw *mw, struct ibv_alloc_mw *cmd,
		     size_t cmd_size,
		     struct ib_uverbs_alloc_mw_resp *resp, size_t resp_size);
int ibv_cmd_dealloc_mw(struct ibv_mw *mw);
int ibv_cmd_create_cq(struct ibv_context *context, int cqe,
		      struct ibv_comp_channel *channel, int comp_vector,
		      struct ibv_cq *cq, struct ibv_create_cq *cmd,
		      size_t cmd_size, struct ib_uverbs_create_cq_resp *resp,
		      size_t resp_size);
/*
 * CREATE_CQ for ibv_create_cq_ex(): the same uverbs method as
 * ibv_cmd_create_cq, plus the kernel's CQ flags that attr asks for
 * (completion timestamps, IGNORE_OVERRUN).  The response starts with
 * struct ib_uverbs_ex_create_cq_resp whichever way the command goes; cmd
 * may be NULL (no driver request).  cmd_flags: enum create_cq_cmd_flags,
 * of which vrdma uses none.
 */
struct ibv_create_cq_ex {
	struct ib_uverbs_cmd_hdr hdr;
	struct ib_uverbs_ex_cmd_hdr ex_hdr;
	struct ib_uverbs_ex_create_cq core_payload;
};

static_assert(sizeof(struct ibv_create_cq_ex) ==
		      sizeof(struct ib_uverbs_cmd_hdr) +
			      sizeof(struct ib_uverbs_ex_cmd_hdr) +
			      sizeof(struct ib_uverbs_ex_create_cq),
	      "bad ibv_create_cq_ex size");

int ibv_cmd_create_cq_ex(struct ibv_context *context,
			 const struct ibv_cq_init_attr_ex *cq_attr,
			 struct verbs_cq *cq, struct ibv_create_cq_ex *cmd,
			 size_t cmd_size,
			 struct ib_uverbs_ex_create_cq_resp *resp,
			 size_t resp_size, uint32_t cmd_flags);
int ibv_cmd_req_notify_cq(struct ibv_cq *cq, int solicited_only);
int ibv_cmd_resize_cq(struct ibv_cq *cq, int cqe, struct ibv_resize_cq *cmd,
		      size_t cmd_size, struct ib_uverbs_resize_cq_resp *resp,
		      size_t resp_size);
int ibv_cmd_destroy_cq(struct ibv_cq *cq);
int ibv_cmd_create_srq(struct ibv_pd *pd, struct ibv_srq *srq,
		       struct ibv_srq_init_attr *attr,
		       struct ibv_create_srq *cmd, size_t cmd_size,
		       struct ib_uverbs_create_srq_resp *resp,
		       size_t resp_size);
/*
 * CREATE_SRQ of any type (attr_ex->pd required; an XRC SRQ needs xrcd and
 * cq); the driver request follows struct ibv_create_xsrq.  On success
 * attr_ex->attr holds what the kernel granted, and srq its type, XRCD, CQ
 * and number.
 */
int ibv_cmd_create_srq_ex(struct ibv_context *context, struct verbs_srq *srq,
			  struct ibv_srq_init_attr_ex *attr_ex,
			  struct ibv_create_xsrq *cmd, size_t cmd_size,
			  struct ib_uverbs_create_srq_resp *resp,
			  size_t resp_size);
int ibv_cmd_modify_srq(struct ibv_srq *srq, struct ibv_srq_attr *srq_attr,
		       int srq_attr_mask, struct ibv_modify_srq *cmd,
		       size_t cmd_size);
int ibv_cmd_query_srq(struct ibv_srq *srq, struct ibv_srq_attr *srq_attr,
		      struct ibv_query_srq *cmd, size_t cmd_size);
int ibv_cmd_destroy_srq(struct ibv_srq *srq);
int ibv_cmd_create_qp(struct ibv_pd *pd, struct ibv_qp *qp,
		      struct ibv_qp_init_attr *attr,
		      struct ibv_create_qp *cmd, size_t cmd_size,
		      struct ib_uverbs_create_qp_resp *resp, size_t resp_size);
/*
 * attr_ex->comp_mask may hold only IBV_QP_INIT_ATTR_PD (required by every
 * type but an XRC target QP), IBV_QP_INIT_ATTR_XRCD (required by an XRC
 * target QP) and IBV_QP_INIT_ATTR_SEND_OPS_FLAGS; anything else is EINVAL.
 */
int ibv_cmd_create_qp_ex(struct ibv_context *context, struct verbs_qp *qp,
			 struct ibv_qp_init_attr_ex *attr_ex,
			 struct ibv_create_qp *cmd, size_t cmd_size,
			 struct ib_uverbs_create_qp_resp *resp,
			 size_t resp_size);
/*
 * OPEN_QP: a handle of this context on the XRC target QP attr->qp_num of
 * attr->xrcd; fills qp (of vqp_sz bytes) as an ibv_qp with no PD, CQs or
 * SRQ, in state IBV_QPS_UNKNOWN.
 */
int ibv_cmd_open_qp(struct ibv_context *context, struct verbs_qp *qp,
		    int vqp_sz, struct ibv_qp_open_attr *attr,
		    struct ibv_open_qp *cmd, size_t cmd_size,
		    struct ib_uverbs_create_qp_resp *resp, size_t resp_size);
int ibv_cmd_query_qp(struct ibv_qp *qp, struct ibv_qp_attr *qp_attr,
		     int attr_mask, struct ibv_qp_init_attr *qp_init_attr,
		     struct ibv_query_qp *cmd, size_t cmd_size);
int ibv_cmd_modify_qp(struct ibv_qp *qp, struct ibv_qp_attr *attr,
		      int attr_mask, struct ibv_modify_qp *cmd,
		      size_t cmd_size);
int ibv_cmd_destroy_qp(struct ibv_qp *qp);
/*
 * Copies the list into one POST_SEND command.  With wr == NULL it sends
 * wr_count 0, which uverbs passes on to the driver's post_send as a NULL
 * list: vrdma's SQ doorbell.  *bad_wr is written on failure (to wr).
 */
int ibv_cmd_post_send(struct ibv_qp *ibqp, struct ibv_send_wr *wr,
		      struct ibv_send_wr **bad_wr);
/* The same for POST_RECV: vrdma's RQ doorbell. */
int ibv_cmd_post_recv(struct ibv_qp *ibqp, struct ibv_recv_wr *wr,
		      struct ibv_recv_wr **bad_wr);
/*
 * Device memory (ioctl methods of UVERBS_OBJECT_DM and _MR); @link is
 * libibverbs' command buffer of driver attributes, NULL here.
 * ALLOC_DM with attr's length and log_align_req (comp_mask is not
 * looked at); fills dm as above.
 */
int ibv_cmd_alloc_dm(struct ibv_context *ctx,
		     const struct ibv_alloc_dm_attr *dm_attr,
		     struct verbs_dm *dm, struct ibv_command_buffer *link);
int ibv_cmd_free_dm(struct verbs_dm *dm);
/*
 * REG_DM_MR: access must hold IBV_ACCESS_ZERO_BASED (else EINVAL without
 * a call); fills vmr's handle, keys, length, pd and context, addr NULL.
 */
int ibv_cmd_reg_dm_mr(struct ibv_pd *pd, struct verbs_dm *dm,
		      uint64_t offset, size_t length, unsigned int access,
		      struct verbs_mr *vmr, struct ibv_command_buffer *link);
int ibv_cmd_create_ah(struct ibv_pd *pd, struct ibv_ah *ah,
		      struct ibv_ah_attr *attr,
		      struct ib_uverbs_create_ah_resp *resp, size_t resp_size);
int ibv_cmd_destroy_ah(struct ibv_ah *ah);
int ibv_cmd_attach_mcast(struct ibv_qp *qp, const union ibv_gid *gid,
			 uint16_t lid);
int ibv_cmd_detach_mcast(struct ibv_qp *qp, const union ibv_gid *gid,
			 uint16_t lid);
/*
 * CREATE_FLOW (extended write): the specs of flow_attr, which follow it
 * in memory, turned into the kernel's form, then ucmd_size bytes of ucmd
 * (driver data; may be NULL).  Fills flow_id's context and handle.
 */
int ibv_cmd_create_flow(struct ibv_qp *qp, struct ibv_flow *flow_id,
			struct ibv_flow_attr *flow_attr, void *ucmd,
			size_t ucmd_size);
int ibv_cmd_destroy_flow(struct ibv_flow *flow_id);

/* ------------------------------------------------------------------------
 * RSS: work queues, indirection tables, QPs on them (libibverbs/cmd_wq.c,
 * cmd_rwq_ind.c, cmd.c, cmd_qp.c; kern-abi.h's DECLARE_CMD_EX commands,
 * whose header is the extended one).
 */
struct vrdma_ex_hdr {
	struct ib_uverbs_cmd_hdr hdr;
	struct ib_uverbs_ex_cmd_hdr ex_hdr;
};

#define VRDMA_DECLARE_CMD_EX(_name, _kabi)				\
	struct _name {							\
		struct vrdma_ex_hdr hdr;				\
		struct _kabi core_payload;				\
	};								\
	static_assert(offsetof(struct _name, core_payload) ==		\
			      sizeof(struct vrdma_ex_hdr),		\
		      "bad " #_name " header");				\
	static_assert(sizeof(struct _name) ==				\
			      sizeof(struct vrdma_ex_hdr) +		\
				      sizeof(struct _kabi),		\
		      "bad " #_name " size")

VRDMA_DECLARE_CMD_EX(ibv_create_qp_ex, ib_uverbs_ex_create_qp);
VRDMA_DECLARE_CMD_EX(ibv_create_wq, ib_uverbs_ex_create_wq);
VRDMA_DECLARE_CMD_EX(ibv_modify_wq, ib_uverbs_ex_modify_wq);

/*
 * CREATE_QP of any type, attr_ex->comp_mask also IBV_QP_INIT_ATTR_IND_TABLE
 * (then no RQ, recv_cq or SRQ: EINVAL), IBV_QP_INIT_ATTR_RX_HASH (never
 * sent: the hash is the driver's), CREATE_FLAGS, MAX_TSO_HEADER; the
 * driver request follows struct ibv_create_qp_ex, the driver response
 * struct ib_uverbs_ex_create_qp_resp.
 */
int ibv_cmd_create_qp_ex2(struct ibv_context *context, struct verbs_qp *qp,
			  struct ibv_qp_init_attr_ex *attr_ex,
			  struct ibv_create_qp_ex *cmd, size_t cmd_size,
			  struct ib_uverbs_ex_create_qp_resp *resp,
			  size_t resp_size);
/*
 * CREATE_WQ: fills wq's context, cq, pd, wq_type, handle and wq_num, and
 * wq_init_attr's max_wr and max_sge with what the kernel granted; not
 * post_recv, state or wq_context.
 */
int ibv_cmd_create_wq(struct ibv_context *context,
		      struct ibv_wq_init_attr *wq_init_attr,
		      struct ibv_wq *wq, struct ibv_create_wq *cmd,
		      size_t cmd_size,
		      struct ib_uverbs_ex_create_wq_resp *resp,
		      size_t resp_size);
/* MODIFY_WQ; sets wq->state on success when attr asks for a state. */
int ibv_cmd_modify_wq(struct ibv_wq *wq, struct ibv_wq_attr *attr,
		      struct ibv_modify_wq *cmd, size_t cmd_size);
int ibv_cmd_destroy_wq(struct ibv_wq *wq);
/* Fills rwq_ind_table's context, handle and number. */
int ibv_cmd_create_rwq_ind_table(struct ibv_context *context,
				 struct ibv_rwq_ind_table_init_attr *init_attr,
				 struct ibv_rwq_ind_table *rwq_ind_table,
				 struct ib_uverbs_ex_create_rwq_ind_table_resp *resp,
				 size_t resp_size);
int ibv_cmd_destroy_rwq_ind_table(struct ibv_rwq_ind_table *rwq_ind_table);

/* ------------------------------------------------------------------------
 * What the layout is on LP64 (x86_64, arm64) with v44; only a guard
 * against accidental edits, the test is what checks it against libibverbs.
 */
#if defined(__LP64__)
static_assert(sizeof(struct verbs_context_ops) ==
		      VRDMA_VERBS_CONTEXT_OPS_COUNT * sizeof(void *),
	      "verbs_context_ops must hold exactly the v44 ops");
static_assert(sizeof(struct verbs_match_ent) == 24, "verbs_match_ent");
static_assert(sizeof(struct verbs_device_ops) == 72, "verbs_device_ops");
static_assert(offsetof(struct verbs_device_ops, alloc_context) == 40,
	      "verbs_device_ops.alloc_context");
static_assert(offsetof(struct verbs_device, device) == 0, "verbs_device");
static_assert(offsetof(struct verbs_device, ops) ==
		      sizeof(struct ibv_device), "verbs_device.ops");
static_assert(offsetof(struct verbs_device, sysfs) ==
		      sizeof(struct ibv_device) + 32, "verbs_device.sysfs");
static_assert(sizeof(struct verbs_device) ==
		      sizeof(struct ibv_device) + 48, "verbs_device size");
static_assert(sizeof(struct verbs_xrcd) == 16, "verbs_xrcd");
static_assert(sizeof(struct verbs_dm) == sizeof(struct ibv_dm) + 8,
	      "verbs_dm");
static_assert(offsetof(struct verbs_srq, srq_num) ==
		      sizeof(struct ibv_srq) + 24, "verbs_srq.srq_num");
#endif

#endif /* VRDMA_VERBS_PRIVATE_H */
