// SPDX-License-Identifier: GPL-2.0
/*
 * On-demand paging (ODP): MRs whose pages are not pinned.
 *
 * Registering with IB_ACCESS_ON_DEMAND pins nothing and charges nothing to
 * RLIMIT_MEMLOCK.  The MR watches its range of the process's address space
 * with an mmu_interval_notifier and keeps, in @pages, the pages it has
 * looked up so far: an xarray indexed by user page number, each entry the
 * struct page tagged with whether it may be written.  An explicit MR
 * watches [start, start + length); an implicit one (address 0, length
 * U64_MAX) the whole address space, with iova == virtual address.
 *
 * The device touches a page only under the xarray's lock and only while
 * the page is in the table (vrdma_odp_access()).  The kernel drops pages
 * from the table before it frees, moves or write-protects them
 * (vrdma_odp_invalidate(), under the same lock): from then on the device
 * reaches them only by faulting them in again.  No page reference is held.
 *
 * A page not in the table (or read-only, for a write) is faulted in with
 * hmm_range_fault(), which may sleep: only in process context, the QP's
 * task or a poster's own syscall.  A QP whose PD has an ODP MR is never
 * run by its softirq tasklet (sched.c) nor through the loopback path
 * (loopback.c), so every access to ODP memory comes from a context that
 * may fault; a miss found where sleeping is not allowed fails with
 * -EAGAIN.  ibv_advise_mr() prefetches (vrdma_advise_mr()).
 */
#include <linux/hmm.h>
#include <linux/highmem.h>
#include <linux/mmu_notifier.h>
#include <linux/sched/mm.h>

#include "vrdma.h"

/* Pages hmm_range_fault() looks up per call: bounds its array. */
#define VRDMA_ODP_FAULT_PAGES	64
/*
 * Faults of one access that find the page still missing (or read-only,
 * for a write) before it gives up: the process's mapping does not allow
 * it.
 */
#define VRDMA_ODP_MAX_RETRIES	8

/**
 * struct vrdma_odp - the page table of an ODP MR
 * @notifier: watches the MR's range of the process's address space
 * @pages: user page number -> struct page, tagged 1 if writable; its
 *	xa_lock (BH-safe) covers every access to a page it holds
 * @mapped: entries in @pages, under its lock (for rdma res show)
 * @start: the user address of the MR's first byte (iova: mr->iova)
 * @implicit: covers the whole address space
 */
struct vrdma_odp {
	struct mmu_interval_notifier notifier;
	struct xarray pages;
	unsigned long mapped;
	u64 start;
	bool implicit;
};

/* Prefetch work, for ibv_advise_mr() without IB_UVERBS_ADVISE_MR_FLAG_FLUSH. */
struct vrdma_prefetch {
	struct work_struct work;
	u32 num;
	bool write;
	bool fault;
	struct {
		struct vrdma_mr *mr;
		u64 iova;
		u32 length;
	} sge[];
};

static bool vrdma_odp_invalidate(struct mmu_interval_notifier *mni,
				 const struct mmu_notifier_range *range,
				 unsigned long cur_seq)
{
	struct vrdma_odp *odp = container_of(mni, struct vrdma_odp, notifier);
	unsigned long first = range->start >> PAGE_SHIFT;
	unsigned long last = (range->end - 1) >> PAGE_SHIFT;
	unsigned long idx;
	void *entry;

	/*
	 * A spinlock: nothing is waited for but an access in progress, one
	 * page's copy at most, so non-blockable ranges are served too.
	 */
	xa_lock_bh(&odp->pages);
	mmu_interval_set_seq(mni, cur_seq);
	xa_for_each_range(&odp->pages, idx, entry, first, last) {
		__xa_erase(&odp->pages, idx);
		WRITE_ONCE(odp->mapped, odp->mapped - 1);
	}
	xa_unlock_bh(&odp->pages);
	return true;
}

static const struct mmu_interval_notifier_ops vrdma_odp_ops = {
	.invalidate = vrdma_odp_invalidate,
};

/* The user address of @iova of an ODP MR (range checked). */
static u64 vrdma_odp_va(struct vrdma_mr *mr, u64 iova)
{
	return mr->odp->start + (iova - mr->iova);
}

/* One access to one page of an ODP MR (vrdma_odp_access()). */
struct vrdma_odp_piece {
	u64 va;
	u32 len;
	u32 done;
	bool write;
	int (*fn)(void *kaddr, u32 len, u32 done, void *ctx);
	void *ctx;
	bool ran;
	int ret;
};

/* Run @pc on its page if the table has it as needed; the table's lock held. */
static void vrdma_odp_try_piece(struct vrdma_odp *odp,
				struct vrdma_odp_piece *pc)
{
	void *entry = xa_load(&odp->pages, pc->va >> PAGE_SHIFT);
	void *kaddr;

	if (!entry || (pc->write && !xa_pointer_tag(entry)))
		return;
	kaddr = kmap_local_page(xa_untag_pointer(entry));
	pc->ret = pc->fn(kaddr + offset_in_page(pc->va), pc->len, pc->done,
			 pc->ctx);
	kunmap_local(kaddr);
	pc->ran = true;
}

/*
 * Look up [va, end) of @odp's process, faulting pages in if @fault (for
 * writing if @write), and enter what is present into the table.  With
 * @pc, only the pages from @va to the end of its first chunk, and @pc is
 * run on its page before the table's lock is let go: an invalidation
 * cannot take the page between the fault and its use (a process that
 * keeps dropping its pages would otherwise win every time).
 *
 * hmm_range_fault() starts over (-EBUSY) whenever the range was
 * invalidated meanwhile, also by the faults it takes itself (a copy on
 * write replaces a page): a chunk that keeps being invalidated is cut in
 * half until it is one page, which gets through.
 */
static int vrdma_odp_fault(struct vrdma_odp *odp, u64 va, u64 end,
			   bool write, bool fault, struct vrdma_odp_piece *pc)
{
	unsigned long pfns[VRDMA_ODP_FAULT_PAGES];
	struct mm_struct *mm = odp->notifier.mm;
	struct hmm_range range = {
		.notifier = &odp->notifier,
		.hmm_pfns = pfns,
	};
	unsigned long timeout, i, n, max = VRDMA_ODP_FAULT_PAGES;
	int ret = 0;

	might_sleep();
	if (fault)
		range.default_flags = HMM_PFN_REQ_FAULT |
				      (write ? HMM_PFN_REQ_WRITE : 0);
	va &= PAGE_MASK;
	while (va < end) {
		timeout = jiffies + msecs_to_jiffies(VRDMA_ODP_FAULT_TIMEOUT_MS);
again:
		range.start = va;
		range.end = min_t(u64, PAGE_ALIGN(end), va + max * PAGE_SIZE);
		n = (range.end - range.start) >> PAGE_SHIFT;
		range.notifier_seq = mmu_interval_read_begin(&odp->notifier);
		/* A process that exited has no pages to give. */
		if (!mmget_not_zero(mm))
			return -EFAULT;
		mmap_read_lock(mm);
		ret = hmm_range_fault(&range);
		mmap_read_unlock(mm);
		mmput(mm);
		if (ret == -EBUSY && !time_after(jiffies, timeout)) {
			max = max(max / 2, 1UL);
			goto again;
		}
		if (ret)
			break;

		xa_lock_bh(&odp->pages);
		if (mmu_interval_read_retry(&odp->notifier,
					    range.notifier_seq)) {
			xa_unlock_bh(&odp->pages);
			max = max(max / 2, 1UL);
			if (time_after(jiffies, timeout)) {
				ret = -EBUSY;
				break;
			}
			goto again;
		}
		for (i = 0; i < n && !ret; i++) {
			struct page *page;
			void *old;

			if (!(pfns[i] & HMM_PFN_VALID))
				continue;
			page = hmm_pfn_to_page(pfns[i]);
			old = __xa_store(&odp->pages,
					 (range.start >> PAGE_SHIFT) + i,
					 xa_tag_pointer(page,
							!!(pfns[i] & HMM_PFN_WRITE)),
					 GFP_ATOMIC | __GFP_NOWARN);
			if (xa_is_err(old))
				ret = xa_err(old);
			else if (!old)
				WRITE_ONCE(odp->mapped, odp->mapped + 1);
		}
		if (pc && !ret)
			vrdma_odp_try_piece(odp, pc);
		xa_unlock_bh(&odp->pages);
		if (ret || pc)
			break;
		va = range.end;
		max = VRDMA_ODP_FAULT_PAGES;
	}
	return ret;
}

/* May this context fault pages in (sleep)? */
static bool vrdma_odp_may_fault(void)
{
	return in_task() && preemptible() && !rcu_preempt_depth();
}

/**
 * vrdma_odp_access() - reach a checked range of an ODP MR, page by page
 * @mr: the MR, range checked with vrdma_mr_check()
 * @iova: start address in the region
 * @length: bytes
 * @write: the bytes will be written (the pages must be writable)
 * @fn: called for each piece that lies in one page, with its kernel
 *	address, its length and the bytes done before it; under the table's
 *	lock, so it must not sleep.  A nonzero return stops the walk.
 * @ctx: for @fn
 *
 * Pages missing from the table are faulted in first, where the context
 * allows it.
 *
 * Return: 0, what @fn returned, -EAGAIN for a missing page where no fault
 * may be taken, or the fault's error (-EFAULT: not mapped in the process,
 * -EPERM: not writable there).
 */
int vrdma_odp_access(struct vrdma_mr *mr, u64 iova, u32 length, bool write,
		     int (*fn)(void *kaddr, u32 len, u32 done, void *ctx),
		     void *ctx)
{
	struct vrdma_odp *odp = mr->odp;
	u64 va = vrdma_odp_va(mr, iova);
	int retries = VRDMA_ODP_MAX_RETRIES;
	u32 done = 0;
	int ret;

	while (done < length) {
		struct vrdma_odp_piece pc = {
			.va = va + done,
			.len = min_t(u32, length - done,
				     PAGE_SIZE - offset_in_page(va + done)),
			.done = done,
			.write = write,
			.fn = fn,
			.ctx = ctx,
		};

		xa_lock_bh(&odp->pages);
		vrdma_odp_try_piece(odp, &pc);
		xa_unlock_bh(&odp->pages);
		if (!pc.ran) {
			if (!vrdma_odp_may_fault())
				return -EAGAIN;
			/*
			 * The fault runs the piece itself; a page a write
			 * faulted in may still be read-only (the process's
			 * mapping is), and then it does not.
			 */
			if (!retries--)
				return -EFAULT;
			ret = vrdma_odp_fault(odp, pc.va, va + length, write,
					      true, &pc);
			if (ret)
				return ret;
			if (!pc.ran)
				continue;
		}
		if (pc.ret)
			return pc.ret;
		done += pc.len;
	}
	return 0;
}

/**
 * vrdma_odp_init() - make @mr an ODP MR of the current process
 * @mr: the new MR, @iova and @length set
 * @start: the user address of its first byte; 0 with @mr->length U64_MAX
 *	for an implicit MR
 *
 * Return: 0, -EINVAL for a range beyond the address space, -ENOMEM.
 */
int vrdma_odp_init(struct vrdma_mr *mr, u64 start)
{
	struct vrdma_odp *odp;
	u64 length = mr->length;
	int ret;

	odp = kzalloc(sizeof(*odp), GFP_KERNEL);
	if (!odp)
		return -ENOMEM;
	odp->implicit = !start && length == U64_MAX;
	if (odp->implicit) {
		/* The whole address space; iova == address. */
		if (mr->iova)
			goto err_inval;
		length = TASK_SIZE;
	} else if (start >= TASK_SIZE || length > TASK_SIZE - start) {
		goto err_inval;
	}
	odp->start = start;
	xa_init_flags(&odp->pages, XA_FLAGS_LOCK_BH);
	ret = mmu_interval_notifier_insert(&odp->notifier, current->mm,
					   start, length, &vrdma_odp_ops);
	if (ret) {
		kfree(odp);
		return ret;
	}
	mr->odp = odp;
	return 0;

err_inval:
	kfree(odp);
	return -EINVAL;
}

/**
 * vrdma_odp_fini() - stop watching and forget the pages
 * @mr: an ODP MR nobody uses any more
 */
void vrdma_odp_fini(struct vrdma_mr *mr)
{
	struct vrdma_odp *odp = mr->odp;

	if (!odp)
		return;
	/* Waits for an invalidation in progress. */
	mmu_interval_notifier_remove(&odp->notifier);
	xa_destroy(&odp->pages);
	kfree(odp);
	mr->odp = NULL;
}

/**
 * vrdma_odp_mapped_pages() - pages an ODP MR has looked up and holds now
 * @mr: an ODP MR
 *
 * Return: the count, as of some moment during the call.
 */
unsigned long vrdma_odp_mapped_pages(struct vrdma_mr *mr)
{
	return READ_ONCE(mr->odp->mapped);
}

/**
 * vrdma_odp_user_start() - the user address an ODP MR was registered at
 * @mr: an ODP MR
 *
 * Return: the address (0 for an implicit MR).
 */
u64 vrdma_odp_user_start(struct vrdma_mr *mr)
{
	return mr->odp->start;
}

/*
 * Fault in the ranges of @p (after a failure the rest too only if @all:
 * advice need not stop at one range), drop its MR references and free it.
 * Returns the first error.
 */
static int vrdma_prefetch_run(struct vrdma_prefetch *p, bool all)
{
	int ret = 0, err;
	u32 i;

	for (i = 0; i < p->num; i++) {
		struct vrdma_mr *mr = p->sge[i].mr;
		u64 va = vrdma_odp_va(mr, p->sge[i].iova);

		if (!ret || all) {
			err = vrdma_odp_fault(mr->odp, va,
					      va + p->sge[i].length, p->write,
					      p->fault, NULL);
			if (!ret)
				ret = err;
		}
		vrdma_mr_put(mr);
	}
	kfree(p);
	return ret;
}

static void vrdma_prefetch_work(struct work_struct *work)
{
	vrdma_prefetch_run(container_of(work, struct vrdma_prefetch, work),
			   true);
}

/**
 * vrdma_advise_mr() - ibv_advise_mr(): prefetch ranges of ODP MRs
 * @ibpd: the PD every MR must belong to
 * @advice: IB_UVERBS_ADVISE_MR_ADVICE_PREFETCH (for reading),
 *	_PREFETCH_WRITE, or _PREFETCH_NO_FAULT (enter what is present only)
 * @flags: IB_UVERBS_ADVISE_MR_FLAG_FLUSH: done before returning; else
 *	done by a work item
 * @sg_list: the ranges, each inside an ODP MR of @ibpd that grants local
 *	write when prefetched for writing
 * @num_sge: entries
 * @attrs: unused
 *
 * Return: 0, -EOPNOTSUPP for an unknown advice, -EINVAL for unknown
 * flags, a key that names no ODP MR of @ibpd or a range outside it,
 * -ENOMEM; a synchronous prefetch returns the fault's error.
 */
int vrdma_advise_mr(struct ib_pd *ibpd, enum ib_uverbs_advise_mr_advice advice,
		    u32 flags, struct ib_sge *sg_list, u32 num_sge,
		    struct uverbs_attr_bundle *attrs)
{
	struct vrdma_dev *vdev = to_vdev(ibpd->device);
	struct vrdma_prefetch *p;
	int ret = 0;
	u32 i;

	if (advice != IB_UVERBS_ADVISE_MR_ADVICE_PREFETCH &&
	    advice != IB_UVERBS_ADVISE_MR_ADVICE_PREFETCH_WRITE &&
	    advice != IB_UVERBS_ADVISE_MR_ADVICE_PREFETCH_NO_FAULT)
		return -EOPNOTSUPP;
	if (flags & ~IB_UVERBS_ADVISE_MR_FLAG_FLUSH)
		return -EINVAL;

	p = kzalloc(struct_size(p, sge, num_sge), GFP_KERNEL);
	if (!p)
		return -ENOMEM;
	p->write = advice == IB_UVERBS_ADVISE_MR_ADVICE_PREFETCH_WRITE;
	p->fault = advice != IB_UVERBS_ADVISE_MR_ADVICE_PREFETCH_NO_FAULT;
	for (i = 0; i < num_sge; i++) {
		struct vrdma_mr *mr = vrdma_mr_get(vdev, sg_list[i].lkey);

		if (!mr) {
			ret = -EINVAL;
			break;
		}
		p->sge[p->num].mr = mr;
		p->sge[p->num].iova = sg_list[i].addr;
		p->sge[p->num].length = sg_list[i].length;
		p->num++;
		if (!mr->odp ||
		    vrdma_mr_check(mr, to_vpd(ibpd), sg_list[i].lkey,
				   sg_list[i].addr, sg_list[i].length,
				   p->write ? IB_ACCESS_LOCAL_WRITE : 0)) {
			ret = -EINVAL;
			break;
		}
	}
	if (ret) {
		for (i = 0; i < p->num; i++)
			vrdma_mr_put(p->sge[i].mr);
		kfree(p);
		return ret;
	}
	if (!(flags & IB_UVERBS_ADVISE_MR_FLAG_FLUSH)) {
		INIT_WORK(&p->work, vrdma_prefetch_work);
		vrdma_queue_background(&p->work);
		return 0;
	}
	return vrdma_prefetch_run(p, false);
}
