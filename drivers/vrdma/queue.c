// SPDX-License-Identifier: GPL-2.0
/*
 * The shared rings: SQ, RQ, SRQ and CQ.
 *
 * A ring (struct vrdma_ring in uapi/rdma/vrdma-abi.h) is written by two
 * parties, one of which -- the process -- may write anything at any time.
 * So the kernel keeps the index it owns in kernel memory (q->kidx) and only
 * ever copies it out; it reads the other side's index once per batch,
 * checks it against its own, and callers copy each entry out of the ring
 * before checking its contents.
 */
#include <linux/vmalloc.h>

#include "vrdma.h"

/**
 * vrdma_queue_init() - allocate a ring, shared with user space if @uc
 * @q: the queue to set up
 * @uc: the owning context, or NULL for a ring only the kernel uses
 * @num_entries: a power of two
 * @entry_size: a power of two
 * @info: with @uc, filled with what the process needs to map the ring
 *
 * The memory is zeroed before anyone can map it.
 *
 * Return: 0 or a negative errno.
 */
int vrdma_queue_init(struct vrdma_queue *q, struct vrdma_ucontext *uc,
		     u32 num_entries, u32 entry_size,
		     struct vrdma_ring_info *info)
{
	size_t size = VRDMA_RING_HDR_SIZE + (size_t)num_entries * entry_size;
	u64 offset;

	if (!is_power_of_2(num_entries) || !is_power_of_2(entry_size))
		return -EINVAL;

	memset(q, 0, sizeof(*q));
	if (uc) {
		q->mmap = vrdma_mmap_alloc(uc, size, &offset);
		if (IS_ERR(q->mmap)) {
			int ret = PTR_ERR(q->mmap);

			q->mmap = NULL;
			return ret;
		}
		q->ring = q->mmap->vaddr;
		info->offset = offset;
		info->size = q->mmap->size;
		info->num_entries = num_entries;
		info->entry_size = entry_size;
	} else {
		q->kbuf = vzalloc(size);
		if (!q->kbuf)
			return -ENOMEM;
		q->ring = q->kbuf;
	}
	q->buf = (void *)q->ring + VRDMA_RING_HDR_SIZE;
	q->num_entries = num_entries;
	q->mask = num_entries - 1;
	q->entry_size = entry_size;
	return 0;
}

/**
 * vrdma_queue_destroy() - release a ring
 * @q: the queue; its memory stays until the last user mapping is gone
 */
void vrdma_queue_destroy(struct vrdma_queue *q)
{
	if (q->mmap)
		vrdma_mmap_remove(q->mmap);
	vfree(q->kbuf);
	memset(q, 0, sizeof(*q));
}

/**
 * vrdma_queue_respond() - give user space a new ring, or take it back
 * @q: the queue vrdma_queue_init() has just set up
 * @udata: the creating verb's; NULL for a kernel consumer
 * @resp: the verb's response, @len bytes, with the ring's mmap details
 * @len: its size
 *
 * Return: 0, or the error of ib_copy_to_udata() with @q destroyed.
 */
int vrdma_queue_respond(struct vrdma_queue *q, struct ib_udata *udata,
			void *resp, size_t len)
{
	int ret;

	if (!udata)
		return 0;
	ret = ib_copy_to_udata(udata, resp, len);
	if (ret)
		vrdma_queue_destroy(q);
	return ret;
}

/**
 * vrdma_queue_move() - copy entries of one ring to the start of another
 * @dst: the new ring (a resize), of @src's entry size
 * @src: the old ring
 * @first: index in @src of the first entry to move
 * @n: how many; at most @dst's size
 *
 * Only the entries move: the caller sets @dst's indices, which depend on
 * who produces into it.
 */
void vrdma_queue_move(struct vrdma_queue *dst, struct vrdma_queue *src,
		      u32 first, u32 n)
{
	u32 i;

	for (i = 0; i < n; i++)
		memcpy(vrdma_queue_slot(dst, i), vrdma_queue_slot(src, first + i),
		       dst->entry_size);
}

/**
 * vrdma_queue_count() - entries the other side has produced for the kernel
 * @q: a work queue (user space produces, the kernel consumes)
 * @count: set to the number of entries from q->kidx on that are ready
 *
 * Return: 0, or -EINVAL if the producer index is impossible (more entries
 * than the ring holds): the ring is garbage and its QP must go to error.
 */
int vrdma_queue_count(struct vrdma_queue *q, u32 *count)
{
	/* Pairs with the producer's store-release: entries are visible. */
	u32 prod = smp_load_acquire(&q->ring->prod);
	u32 n = prod - q->kidx;

	if (n > q->num_entries)
		return -EINVAL;
	*count = n;
	return 0;
}

/**
 * vrdma_queue_consume() - give @n entries back to the producer
 * @q: a work queue
 * @n: entries from q->kidx on, which the kernel has finished with
 */
void vrdma_queue_consume(struct vrdma_queue *q, u32 n)
{
	q->kidx += n;
	/* The entries were copied out before the producer may reuse them. */
	smp_store_release(&q->ring->cons, q->kidx);
}

/**
 * vrdma_queue_full() - no room to produce an entry
 * @q: a queue the kernel produces into (a CQ)
 *
 * A consumer index that is ahead of the producer or too far behind makes
 * the difference at least num_entries, so garbage reads as "full": the CQ
 * overflows, which is an error the owner sees, never a write outside the
 * ring.
 *
 * Return: true if the ring is full.
 */
bool vrdma_queue_full(struct vrdma_queue *q)
{
	return q->kidx - READ_ONCE(q->ring->cons) >= q->num_entries;
}

/**
 * vrdma_queue_produce() - publish the entry at q->kidx
 * @q: a queue the kernel produces into
 */
void vrdma_queue_produce(struct vrdma_queue *q)
{
	q->kidx++;
	/* The entry's contents are visible before the index that covers it. */
	smp_store_release(&q->ring->prod, q->kidx);
}

/**
 * vrdma_queue_reset() - drop every entry produced so far
 * @q: a work queue
 *
 * Any producer index is acceptable here: the consumer simply starts over
 * from it.
 */
void vrdma_queue_reset(struct vrdma_queue *q)
{
	q->kidx = READ_ONCE(q->ring->prod);
	/* Pairs with the producer's load-acquire of cons: slots are free. */
	smp_store_release(&q->ring->cons, q->kidx);
}

/**
 * vrdma_sq_want_doorbell() - have the provider ring the SQ doorbell again
 * @qp: the QP, engines owned
 *
 * Clears the SQ ring's no_doorbell (see struct vrdma_ring).  The barrier
 * pairs with the provider's between publishing prod and reading the flag:
 * the caller reads prod after this, and either sees the provider's WQEs
 * or the provider sees the flag clear and rings.
 */
void vrdma_sq_want_doorbell(struct vrdma_qp *qp)
{
	struct vrdma_ring *ring = qp->sq.ring;

	if (!READ_ONCE(ring->no_doorbell))
		return;
	WRITE_ONCE(ring->no_doorbell, 0);
	smp_mb();	/* pairs with vrdma_sq_doorbell() of the provider */
}
