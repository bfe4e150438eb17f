// SPDX-License-Identifier: GPL-2.0
/*
 * The bulk data copy: every byte of payload the data path moves between MR
 * pages, packets and kernel buffers goes through vrdma_copy() or
 * vrdma_copy_from_skb().
 *
 * Which routine copies fastest depends on the CPU, and on an emulated CPU
 * it can be the opposite of what the kernel's memcpy() assumes: under QEMU
 * TCG with "-cpu max" the CPU advertises ERMS, so memcpy() is a single
 * "rep movsb", which the emulator executes one byte per iteration; a plain
 * loop of 64-bit loads and stores moved 8 times as many bytes per second in
 * the test VM (410 MB/s against 3,200 MB/s for 4 KiB pieces).  So, as
 * crypto/xor.c and lib/raid6 do, the module times its candidates when it
 * loads (vrdma_copy_init(), about a millisecond under TCG) and uses the
 * fastest.  Every candidate is correct for any length and alignment on any
 * CPU.  The module parameter bulk_copy shows the routine in use and, when
 * written ("memcpy", "words", or "auto" for the timed choice), forces one.
 */
#include <linux/ktime.h>
#include <linux/moduleparam.h>
#include <linux/slab.h>

#include "vrdma.h"

enum vrdma_copy_kind {
	VRDMA_COPY_MEMCPY,
	VRDMA_COPY_WORDS,
	VRDMA_COPY_NR,
	VRDMA_COPY_AUTO = VRDMA_COPY_NR,
};

static const char * const vrdma_copy_names[] = {
	[VRDMA_COPY_MEMCPY] = "memcpy",
	[VRDMA_COPY_WORDS] = "words",
	[VRDMA_COPY_AUTO] = "auto",
};

/* The timed choice, and the one the parameter forces (AUTO: none). */
static int vrdma_copy_best = VRDMA_COPY_MEMCPY;
static int vrdma_copy_forced = VRDMA_COPY_AUTO;

/* Below this, any routine's set-up costs more than the bytes. */
#define VRDMA_COPY_SMALL	64

/*
 * Eight 64-bit words per iteration, the destination aligned so that no
 * store straddles a word; the source may be at any alignment (on x86 an
 * unaligned load is a plain load).  All eight are loaded before any is
 * stored, which also keeps the compiler from turning the loop back into a
 * call to memcpy().
 */
static void vrdma_copy_words(void *dst, const void *src, size_t len)
{
	size_t head = -(uintptr_t)dst & (sizeof(u64) - 1);
	const u8 *s = src;
	u64 *d;

	memcpy(dst, s, head);
	d = dst + head;
	s += head;
	len -= head;
	for (; len >= 8 * sizeof(u64); len -= 8 * sizeof(u64), d += 8) {
		u64 w0 = get_unaligned((const u64 *)s + 0);
		u64 w1 = get_unaligned((const u64 *)s + 1);
		u64 w2 = get_unaligned((const u64 *)s + 2);
		u64 w3 = get_unaligned((const u64 *)s + 3);
		u64 w4 = get_unaligned((const u64 *)s + 4);
		u64 w5 = get_unaligned((const u64 *)s + 5);
		u64 w6 = get_unaligned((const u64 *)s + 6);
		u64 w7 = get_unaligned((const u64 *)s + 7);

		d[0] = w0;
		d[1] = w1;
		d[2] = w2;
		d[3] = w3;
		d[4] = w4;
		d[5] = w5;
		d[6] = w6;
		d[7] = w7;
		s += 8 * sizeof(u64);
	}
	memcpy(d, s, len);
}

static void vrdma_copy_kind(int kind, void *dst, const void *src, size_t len)
{
	if (kind == VRDMA_COPY_WORDS && len >= VRDMA_COPY_SMALL)
		vrdma_copy_words(dst, src, len);
	else
		memcpy(dst, src, len);
}

/**
 * vrdma_copy() - copy payload bytes with the bulk copy routine in use
 * @dst: destination, kernel address
 * @src: source, kernel address; the two do not overlap
 * @len: bytes, any number, any alignment
 *
 * Same contract as memcpy(); the routine is the one timed fastest when the
 * module loaded, or the one the module parameter bulk_copy forces.
 */
void vrdma_copy(void *dst, const void *src, size_t len)
{
	int kind = READ_ONCE(vrdma_copy_forced);

	if (kind == VRDMA_COPY_AUTO)
		kind = vrdma_copy_best;
	vrdma_copy_kind(kind, dst, src, len);
}

/**
 * vrdma_copy_from_skb() - copy bytes out of a packet with vrdma_copy()
 * @skb: the packet; the bytes may lie in its head and its page fragments
 * @offset: where in @skb they start
 * @to: destination, kernel address
 * @len: bytes
 *
 * skb_copy_bits() with the bulk copy routine for the head and the page
 * fragments, where the payload of vrdma's packets lies; anything beyond
 * them (a frag_list) is left to skb_copy_bits().
 *
 * Return: 0, or -EFAULT if @skb is shorter than @offset + @len.
 */
int vrdma_copy_from_skb(const struct sk_buff *skb, int offset, void *to,
			int len)
{
	int start = skb_headlen(skb);
	int i, n;

	if (offset < 0 || len < 0 || offset > (int)skb->len - len)
		return -EFAULT;
	if (offset < start) {
		n = min(len, start - offset);
		vrdma_copy(to, skb->data + offset, n);
		offset += n;
		to += n;
		len -= n;
	}
	for (i = 0; len && i < skb_shinfo(skb)->nr_frags; i++) {
		const skb_frag_t *f = &skb_shinfo(skb)->frags[i];
		u32 p_off, p_len, copied;
		struct page *p;
		int end = start + skb_frag_size(f);
		u8 *vaddr;

		if (offset < end) {
			n = min(len, end - offset);
			skb_frag_foreach_page(f, skb_frag_off(f) + offset - start,
					      n, p, p_off, p_len, copied) {
				vaddr = kmap_local_page(p);
				vrdma_copy(to + copied, vaddr + p_off, p_len);
				kunmap_local(vaddr);
			}
			offset += n;
			to += n;
			len -= n;
		}
		start = end;
	}
	if (len)
		return skb_copy_bits(skb, offset, to, len);
	return 0;
}

static int vrdma_copy_param_set(const char *val, const struct kernel_param *kp)
{
	int kind = sysfs_match_string(vrdma_copy_names, val);

	if (kind < 0)
		return kind;
	WRITE_ONCE(vrdma_copy_forced, kind);
	return 0;
}

static int vrdma_copy_param_get(char *buf, const struct kernel_param *kp)
{
	int kind = READ_ONCE(vrdma_copy_forced);

	if (kind == VRDMA_COPY_AUTO)
		return sysfs_emit(buf, "%s (auto)\n",
				  vrdma_copy_names[vrdma_copy_best]);
	return sysfs_emit(buf, "%s\n", vrdma_copy_names[kind]);
}

static const struct kernel_param_ops vrdma_copy_param_ops = {
	.set = vrdma_copy_param_set,
	.get = vrdma_copy_param_get,
};

module_param_cb(bulk_copy, &vrdma_copy_param_ops, NULL, 0644);
MODULE_PARM_DESC(bulk_copy,
		 "Payload copy routine: auto (the fastest when the module loaded), memcpy, words");

/* Calibration: rounds of copies of one 4 KiB piece, page to page. */
#define VRDMA_COPY_ROUNDS	5
#define VRDMA_COPY_REPS		8

/**
 * vrdma_copy_init() - time the bulk copy routines and choose the fastest
 *
 * Each round copies a 4 KiB piece (the loopback path's unit, one page to
 * another) VRDMA_COPY_REPS times with each routine in turn, so that a
 * change of load on the host hits all alike; the best round of each
 * counts.  memcpy() keeps the job unless another routine is more than an
 * eighth faster: on real hardware the kernel's own choice is sound and
 * small differences are noise.  Called once, at module load.
 */
void vrdma_copy_init(void)
{
	u64 best_ns[VRDMA_COPY_NR];
	int kind, round, i;
	void *src, *dst;

	src = kmalloc(PAGE_SIZE, GFP_KERNEL);
	dst = kmalloc(PAGE_SIZE, GFP_KERNEL);
	if (!src || !dst)
		goto out;
	memset(src, 0x5a, PAGE_SIZE);
	memset(dst, 0, PAGE_SIZE);
	for (kind = 0; kind < VRDMA_COPY_NR; kind++)
		best_ns[kind] = U64_MAX;
	for (round = 0; round < VRDMA_COPY_ROUNDS; round++) {
		for (kind = 0; kind < VRDMA_COPY_NR; kind++) {
			u64 t0 = ktime_get_ns(), t;

			for (i = 0; i < VRDMA_COPY_REPS; i++)
				vrdma_copy_kind(kind, dst, src, PAGE_SIZE);
			t = ktime_get_ns() - t0;
			best_ns[kind] = min(best_ns[kind], t ?: 1);
		}
	}
	vrdma_copy_best = VRDMA_COPY_MEMCPY;
	for (kind = 0; kind < VRDMA_COPY_NR; kind++)
		if (best_ns[kind] + best_ns[kind] / 8 <
		    best_ns[VRDMA_COPY_MEMCPY] &&
		    best_ns[kind] < best_ns[vrdma_copy_best])
			vrdma_copy_best = kind;
	pr_info("vrdma: bulk copy: %s (4 KiB: memcpy %llu MB/s, words %llu MB/s)\n",
		vrdma_copy_names[vrdma_copy_best],
		div64_u64((u64)PAGE_SIZE * VRDMA_COPY_REPS * 1000,
			  best_ns[VRDMA_COPY_MEMCPY]),
		div64_u64((u64)PAGE_SIZE * VRDMA_COPY_REPS * 1000,
			  best_ns[VRDMA_COPY_WORDS]));
out:
	kfree(src);
	kfree(dst);
}
