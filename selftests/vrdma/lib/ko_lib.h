/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Loading vrdma.ko and our provider from the build tree, for the C
 * selftests, so that each of them runs on its own as well as in the suite.
 */
#ifndef VRDMA_KO_LIB_H
#define VRDMA_KO_LIB_H

#include <libgen.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

/* The tree the running test was built in: it is selftests/vrdma/build/X. */
static inline int vrdma_ko_top(char *top)
{
	int i;

	if (!realpath("/proc/self/exe", top))
		return -1;
	for (i = 0; i < 4; i++)
		dirname(top);
	return 0;
}

/*
 * Under CI (CI set, not "0" or "false", as .ci/run sets it) every tool and
 * module a test needs is installed: a test that would skip for the lack of
 * one fails instead.
 */
static inline int vrdma_in_ci(void)
{
	const char *ci = getenv("CI");

	return ci && *ci && strcmp(ci, "0") && strcmp(ci, "false");
}

static inline int vrdma_ko_loaded(const char *name)
{
	char path[128];

	snprintf(path, sizeof(path), "/sys/module/%s", name);
	return access(path, F_OK) == 0;
}

/*
 * Load vrdma.ko ($VRDMA_KO, else the build tree's) after the modules it
 * depends on, which insmod does not load, and ib_uverbs for user space;
 * point libibverbs at our provider unless RDMAV_DRIVERS says otherwise.
 * Return: 0, or -1 with the reason in @why.
 */
static inline int vrdma_ko_load(const char **why)
{
	char top[PATH_MAX], ko[PATH_MAX + 16], cmd[3 * PATH_MAX];
	int rc;

	*why = NULL;
	if (vrdma_ko_top(top)) {
		*why = "cannot find the build tree";
		return -1;
	}
	if (getenv("VRDMA_KO"))
		snprintf(ko, sizeof(ko), "%s", getenv("VRDMA_KO"));
	else
		snprintf(ko, sizeof(ko), "%s/vrdma.ko", top);
	if (!vrdma_ko_loaded("vrdma")) {
		if (access(ko, R_OK)) {
			*why = "vrdma.ko not built";
			return -1;
		}
		snprintf(cmd, sizeof(cmd),
			 "d=$(modinfo -F depends %s | tr , ' ');"
			 "modprobe -a $d ib_uverbs && insmod %s", ko, ko);
		rc = system(cmd);
		if (!WIFEXITED(rc) || WEXITSTATUS(rc)) {
			*why = "insmod vrdma.ko failed";
			return -1;
		}
	} else if (!vrdma_ko_loaded("ib_uverbs") &&
		   system("modprobe ib_uverbs") != 0) {
		*why = "cannot load ib_uverbs";
		return -1;
	}
	snprintf(cmd, sizeof(cmd), "%s/userspace-provider/libvrdma", top);
	setenv("RDMAV_DRIVERS", cmd, 0);
	return 0;
}

/*
 * Make @type ("vrdma" or "rxe") the RoCE driver in use: both bind UDP port
 * 4791, so the other one is unloaded first.  *@loaded_rxe tells whether
 * this loaded rdma_rxe (and the caller should unload it at the end).
 * Return: 0; 1 with the reason in @why when the test should be skipped
 * (no rdma_rxe, an unknown @type); -1 with the reason when it fails.
 */
static inline int vrdma_ko_use(const char *type, const char **why,
			       int *loaded_rxe)
{
	*loaded_rxe = 0;
	if (!strcmp(type, "rxe")) {
		if (vrdma_ko_loaded("vrdma") && system("rmmod vrdma") != 0) {
			*why = "vrdma is loaded and cannot be unloaded";
			return -1;
		}
		if (!vrdma_ko_loaded("rdma_rxe")) {
			if (system("modprobe rdma_rxe") != 0) {
				*why = "rdma_rxe is not available";
				return 1;
			}
			*loaded_rxe = 1;
		}
		return 0;
	}
	if (strcmp(type, "vrdma")) {
		*why = "VRDMA_TEST_TYPE must be vrdma or rxe";
		return 1;
	}
	if (vrdma_ko_loaded("rdma_rxe") && system("rmmod rdma_rxe") != 0) {
		*why = "rdma_rxe is loaded and cannot be unloaded";
		return -1;
	}
	return vrdma_ko_load(why);
}

#endif /* VRDMA_KO_LIB_H */
