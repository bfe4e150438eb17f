// SPDX-License-Identifier: (GPL-2.0 OR Linux-OpenIB)
/*
 * Mapping the rings the kernel allocates for CQs, QPs and SRQs.
 *
 * create_cq/create_qp/create_srq (and resize_cq) answer each ring with a
 * struct vrdma_ring_info; the ring is then mmap()ed from the device file at
 * that offset.  The provider checks the description before it believes it:
 * a ring that does not hold what the kernel promised in the same answer is
 * a kernel bug, and failing the create (EPROTO) is better than writing
 * outside a slot later.
 */
#include <errno.h>
#include <inttypes.h>
#include <string.h>
#include <sys/mman.h>

#include "vrdma.h"

int vrdma_map_ring(struct vrdma_context *ctx, struct vrdma_uring *ring,
		   const struct vrdma_ring_info *info, uint32_t min_entry_size,
		   bool producer)
{
	void *map;

	if (!vrdma_ring_info_valid(info, min_entry_size)) {
		vrdma_err(&ctx->ibv_ctx,
			  "bad ring: %u x %u bytes in %" PRIu64 " at %#" PRIx64
			  "\n", info->num_entries, info->entry_size,
			  (uint64_t)info->size, (uint64_t)info->offset);
		return EPROTO;
	}

	map = mmap(NULL, info->size, PROT_READ | PROT_WRITE, MAP_SHARED,
		   ctx->ibv_ctx.context.cmd_fd, (off_t)info->offset);
	if (map == MAP_FAILED)
		return errno;

	vrdma_uring_init(ring, map, info, producer);
	return 0;
}

void vrdma_unmap_ring(struct vrdma_uring *ring)
{
	if (ring->map_size)
		munmap(ring->hdr, ring->map_size);
	memset(ring, 0, sizeof(*ring));
}

/* vrdma_wq_fits(), telling why not. */
int vrdma_check_wq(struct vrdma_context *ctx, const char *name,
		   const struct vrdma_ring_info *info, uint32_t wqe_hdr_size,
		   uint32_t max_wr, uint32_t max_sge, uint32_t max_inline)
{
	if (vrdma_wq_fits(info, wqe_hdr_size, max_wr, max_sge, max_inline))
		return 0;

	vrdma_err(&ctx->ibv_ctx,
		  "%s ring of %u x %u bytes cannot hold max_wr %u, max_sge %u, max_inline %u\n",
		  name, info->num_entries, info->entry_size, max_wr, max_sge,
		  max_inline);
	return EPROTO;
}
