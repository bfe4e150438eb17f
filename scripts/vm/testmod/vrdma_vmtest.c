// SPDX-License-Identifier: GPL-2.0
/*
 * Test module for scripts/vm/selftest: provokes the kernel problems that
 * scripts/vm-run must detect.  Not part of the driver.
 *
 *   insmod vrdma_vmtest.ko warn=1   WARN_ON(1)             -> "WARNING:"
 *   insmod vrdma_vmtest.ko uaf=1    use after free (KASAN)  -> "BUG: KASAN"
 *   insmod vrdma_vmtest.ko leak=1   leak 8 x 1 KiB (kmemleak) -> "unreferenced object"
 *   insmod vrdma_vmtest.ko sleep=1  msleep under a spinlock -> "BUG: sleeping function"
 *                                   or "BUG: scheduling while atomic"
 */
#include <linux/module.h>
#include <linux/slab.h>
#include <linux/spinlock.h>
#include <linux/delay.h>

static int warn, uaf, leak, sleep;
module_param(warn, int, 0);
module_param(uaf, int, 0);
module_param(leak, int, 0);
module_param(sleep, int, 0);

static DEFINE_SPINLOCK(lock);

/*
 * Several objects, filled so that they differ from whatever a stale stack
 * slot may point at: a single one is often still referenced from a cached
 * kernel stack, and kmemleak then (rightly) stays quiet.
 */
static noinline void vmtest_leak(void)
{
	int i;

	for (i = 0; i < 8; i++) {
		char *p = kmalloc(1024, GFP_KERNEL);

		if (p)
			memset(p, 0x5a, 1024);
		OPTIMIZER_HIDE_VAR(p);
	}
}

static int __init vmtest_init(void)
{
	if (warn)
		WARN_ON(1);
	if (uaf) {
		volatile char *p = kmalloc(64, GFP_KERNEL);

		if (p) {
			kfree((void *)p);
			p[8] = 1;
		}
	}
	if (leak)
		vmtest_leak();
	if (sleep) {
		spin_lock(&lock);
		msleep(1);
		spin_unlock(&lock);
	}
	return 0;
}

static void __exit vmtest_exit(void)
{
}

module_init(vmtest_init);
module_exit(vmtest_exit);
MODULE_LICENSE("GPL");
MODULE_DESCRIPTION("vm-run self-test module");
