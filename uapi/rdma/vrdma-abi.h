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

/*
 * Bumped on every incompatible change.  The module reports it as its
 * uverbs_abi_ver; the provider only binds to devices whose version lies in
 * [VRDMA_UVERBS_ABI_VERSION, VRDMA_UVERBS_ABI_VERSION].
 */
#define VRDMA_UVERBS_ABI_VERSION 1

/* The ib_device name prefix the provider matches on ("vrdma0", ...). */
#define VRDMA_DEVICE_NAME_PREFIX "vrdma"

/**
 * struct vrdma_alloc_ucontext_resp - driver data of ALLOC_UCONTEXT
 * @abi_version: VRDMA_UVERBS_ABI_VERSION of the running module
 * @reserved: must be zero
 */
struct vrdma_alloc_ucontext_resp {
	__u32 abi_version;
	__u32 reserved;
};

#endif /* VRDMA_ABI_USER_H */
