/* SPDX-License-Identifier: (GPL-2.0 OR Linux-OpenIB) */
/*
 * The little TAP harness of the provider's host tests: a test is a void
 * function that CHECKs; tap_run() prints "1..N", "ok N desc" or
 * "not ok N desc" per test (with "# file:line: ..." for every failed
 * check), then "N passed, N failed", and returns the exit status.
 */
#ifndef VRDMA_TEST_TAP_H
#define VRDMA_TEST_TAP_H

#include <stdio.h>

static int tap_failures;

#define CHECK(cond)							\
	do {								\
		if (!(cond)) {						\
			printf("# %s:%d: %s\n", __FILE__, __LINE__,	\
			       #cond);					\
			tap_failures++;					\
		}							\
	} while (0)

#define CHECK_EQ(expected, actual)					\
	do {								\
		unsigned long long e_ = (unsigned long long)(expected);	\
		unsigned long long a_ = (unsigned long long)(actual);	\
		if (e_ != a_) {						\
			printf("# %s:%d: %s == %s: ", __FILE__, __LINE__, \
			       #expected, #actual);			\
			printf("expected %#llx, got %#llx\n", e_, a_);	\
			tap_failures++;					\
		}							\
	} while (0)

struct tap_test {
	const char *desc;
	void (*fn)(void);
};

static inline int tap_run(const struct tap_test *tests, int n)
{
	int passed = 0, failed = 0;
	int i;

	setvbuf(stdout, NULL, _IOLBF, 0);
	printf("1..%d\n", n);
	for (i = 0; i < n; i++) {
		tap_failures = 0;
		tests[i].fn();
		if (tap_failures) {
			printf("not ok %d %s\n", i + 1, tests[i].desc);
			failed++;
		} else {
			printf("ok %d %s\n", i + 1, tests[i].desc);
			passed++;
		}
	}
	printf("%d passed, %d failed\n", passed, failed);
	return failed ? 1 : 0;
}

#endif /* VRDMA_TEST_TAP_H */
