/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The setup the RC tests (rc_test.c, ex_test.c) share: in the parent,
 * before the tests fork, load the module (or rdma_rxe with
 * VRDMA_TEST_TYPE=rxe), create a veth pair with IPv4 addresses, policy
 * routing that makes traffic between the two local addresses really cross
 * the veth, and an RDMA device on each end; remove it all at exit.
 *
 * Include it once per test program, after rc_lib.h; main() is
 * rc_suite_main().
 */
#ifndef RC_SUITE_H
#define RC_SUITE_H

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <infiniband/verbs.h>

#include "ko_lib.h"
#include "rc_lib.h"

struct rc_config rc_cfg;

#define NETDEV0		"rct0"
#define NETDEV1		"rct1"
#define IP0		"10.211.0.1"
#define IP1		"10.211.0.2"

/*
 * RC_ENDS_VARIANTS(f): fixture @f runs twice, between two QPs of one
 * device (loopback) and between the two devices (two_devices); its setup
 * reads variant->two_devices (rc_ends_open()).
 */
#define RC_ENDS_VARIANTS(f)				\
	FIXTURE_VARIANT(f) {				\
		int two_devices;			\
	};						\
	FIXTURE_VARIANT_ADD(f, loopback) {		\
		.two_devices = 0,			\
	};						\
	FIXTURE_VARIANT_ADD(f, two_devices) {		\
		.two_devices = 1,			\
	}

static int rc_set_up;
static int rc_loaded_rxe;

/*
 * Few processes: each one costs about half a second under TCG with the root
 * on 9p, so ip and rdma commands go in batches.
 */
static void suite_teardown(void)
{
	if (!rc_set_up)
		return;
	rc_shf("{ rdma -f -b - <<EOF\n"
	       "link delete %s\n"
	       "link delete %s\n"
	       "EOF\n"
	       "ip -force -batch - <<EOF\n"
	       "link del " NETDEV0 "\n"
	       "rule del pref 100\n"
	       "rule del pref 101\n"
	       "route flush table 211\n"
	       "route flush table 212\n"
	       "rule add pref 0 lookup local\n"
	       "rule del pref 1000 lookup local\n"
	       "EOF\n"
	       "} >/dev/null 2>&1", rc_cfg.name[0], rc_cfg.name[1]);
	if (rc_loaded_rxe)
		rc_sh("rmmod rdma_rxe 2>/dev/null");
	rc_set_up = 0;
}

static int rc_write(const char *path, const char *val)
{
	FILE *f = fopen(path, "w");
	int ret;

	if (!f)
		return -1;
	ret = fputs(val, f) < 0;
	return fclose(f) || ret ? -1 : 0;
}

/*
 * SKIP(STATEMENT, FMT...) where the device lacks what the test needs and
 * vrdma has (inline data, atomics): on vrdma, the capability went missing
 * and the test fails instead of passing vacuously.
 */
#define RC_SKIP_ON_RXE(statement, fmt, ...) do {			\
	ASSERT_TRUE(rc_cfg.is_rxe) {					\
		TH_LOG("vrdma: " fmt, ##__VA_ARGS__);			\
	}								\
	SKIP(statement, fmt, ##__VA_ARGS__);				\
} while (0)

/*
 * SKIP(STATEMENT, FMT...) for what the environment lacks (IPv6 GIDs):
 * under CI, which provides it, a failure.
 */
#define RC_SKIP_UNLESS_CI(statement, fmt, ...) do {			\
	ASSERT_FALSE(vrdma_in_ci()) {					\
		TH_LOG("under CI: " fmt, ##__VA_ARGS__);		\
	}								\
	SKIP(statement, fmt, ##__VA_ARGS__);				\
} while (0)

/* The program cannot run here: a skip, under CI a failure. */
static void rc_bail(const char *msg)
{
	suite_teardown();
	if (vrdma_in_ci()) {
		printf("TAP version 13\nBail out! %s (a failure under CI)\n", msg);
		exit(KSFT_FAIL);
	}
	printf("TAP version 13\n1..0 # SKIP %s\n", msg);
	exit(KSFT_SKIP);
}

static void rc_fail(const char *msg)
{
	suite_teardown();
	printf("TAP version 13\nBail out! %s\n", msg);
	exit(KSFT_FAIL);
}

static void suite_setup(void)
{
	const char *why = rc_cfg_env();
	double deadline;
	int ret;

	if (why)
		rc_bail(why);
	ret = vrdma_ko_use(rc_cfg.type, &why, &rc_loaded_rxe);
	if (ret > 0)
		rc_bail(why);
	if (ret)
		rc_fail(why);
	/* vrdmarc0 and vrdmarc1, or rxerc0 and rxerc1 */
	snprintf(rc_cfg.name[0], sizeof(rc_cfg.name[0]), "%src0", rc_cfg.type);
	snprintf(rc_cfg.name[1], sizeof(rc_cfg.name[1]), "%src1", rc_cfg.type);

	/* Leftovers of an earlier run. */
	rc_set_up = 1;
	suite_teardown();
	rc_set_up = 1;

	/*
	 * Both addresses are local, so by default the kernel would route
	 * between them through lo. Rules for locally generated packets
	 * (iif lo) between exactly these two addresses, looked up before the
	 * local table, send them out of the veth instead; accept_local lets
	 * the other end take a packet from a local source address.
	 */
	if (rc_sh("ip -batch - <<EOF\n"
		  "link add " NETDEV0 " type veth peer name " NETDEV1 "\n"
		  "addr add " IP0 "/24 dev " NETDEV0 "\n"
		  "addr add " IP1 "/24 dev " NETDEV1 "\n"
		  "link set " NETDEV0 " up\n"
		  "link set " NETDEV1 " up\n"
		  "EOF"))
		rc_fail("veth setup failed");
	if (rc_write("/proc/sys/net/ipv4/conf/" NETDEV0 "/accept_local", "1") ||
	    rc_write("/proc/sys/net/ipv4/conf/" NETDEV1 "/accept_local", "1") ||
	    rc_write("/proc/sys/net/ipv4/conf/" NETDEV0 "/rp_filter", "0") ||
	    rc_write("/proc/sys/net/ipv4/conf/" NETDEV1 "/rp_filter", "0"))
		rc_fail("sysctl accept_local/rp_filter failed");
	if (rc_sh("ip -batch - <<EOF\n"
		  "route add " IP1 " dev " NETDEV0 " src " IP0 " table 211\n"
		  "route add " IP0 " dev " NETDEV1 " src " IP1 " table 212\n"
		  "rule add pref 100 iif lo from " IP0 " to " IP1 " lookup 211\n"
		  "rule add pref 101 iif lo from " IP1 " to " IP0 " lookup 212\n"
		  "rule add pref 1000 lookup local\n"
		  "rule del pref 0 lookup local\n"
		  "EOF"))
		rc_fail("policy routing setup failed");
	if (rc_shf("rdma -b - <<EOF\n"
		   "link add %s type %s netdev " NETDEV0 "\n"
		   "link add %s type %s netdev " NETDEV1 "\n"
		   "EOF", rc_cfg.name[0], rc_cfg.type, rc_cfg.name[1],
		   rc_cfg.type))
		rc_fail("rdma link add failed");

	deadline = rc_now_ms() + RC_TIMEOUT_MS;
	for (;;) {
		rc_cfg.gid_idx[0] = rc_find_gid(rc_cfg.name[0]);
		rc_cfg.gid_idx[1] = rc_find_gid(rc_cfg.name[1]);
		if (rc_cfg.gid_idx[0] >= 0 && rc_cfg.gid_idx[1] >= 0)
			break;
		if (rc_now_ms() > deadline)
			rc_fail("no IPv4 RoCE v2 GID appeared");
		usleep(100 * 1000);
	}
	printf("# %s: %s (" NETDEV0 ", " IP0 ", GID %d) and %s (" NETDEV1
	       ", " IP1 ", GID %d)\n", rc_cfg.type, rc_cfg.name[0],
	       rc_cfg.gid_idx[0], rc_cfg.name[1], rc_cfg.gid_idx[1]);
	fflush(stdout);
}

static void __attribute__((constructor)) __constructor_order_last(void)
{
	if (!__constructor_order)
		__constructor_order = _CONSTRUCTOR_ORDER_BACKWARD;
}

/*
 * VRDMA_RC_TESTS="name name...": run only the tests of these names, e.g.
 * local_path.sh's error tests with the loopback path on and off.
 */
static void rc_select_tests(void)
{
	const char *only = getenv("VRDMA_RC_TESTS");
	char *names, *tok, *argv[256] = { "rc_suite" };
	int argc = 1;

	if (!only || !*only)
		return;
	names = strdup(only);
	for (tok = strtok(names, " "); tok && argc < 256; tok = strtok(NULL, " "))
		argv[argc++] = tok;
	rc_only_tests(argc, argv);
	free(names);
}

/*
 * rc_suite_ipv6_addrs() - @ip6_0 and @ip6_1 (/64, no DAD) on the two veth
 * ends; they go with the veth at the end.  Returns 0, or 1 without IPv6.
 */
static inline int rc_suite_ipv6_addrs(const char *ip6_0, const char *ip6_1)
{
	if (access("/proc/sys/net/ipv6", F_OK))
		return 1;
	if (rc_shf("ip -6 -batch - <<EOF\n"
		  "addr add %s/64 dev " NETDEV0 " nodad\n"
		  "addr add %s/64 dev " NETDEV1 " nodad\n"
		  "EOF", ip6_0, ip6_1))
		rc_fail("IPv6 addresses failed");
	return 0;
}

/*
 * rc_suite_wait_gids() - wait (RC_TIMEOUT_MS at most) for the two devices'
 * RoCE v2 GIDs starting with @gid[0] and @gid[1] (sysfs notation); their
 * indices go to @idx, -1 for one that did not come.
 */
static inline void rc_suite_wait_gids(const char *const gid[2], int idx[2])
{
	double deadline = rc_now_ms() + RC_TIMEOUT_MS;

	do {
		idx[0] = rc_find_gid_prefix(rc_cfg.name[0], gid[0]);
		idx[1] = rc_find_gid_prefix(rc_cfg.name[1], gid[1]);
		if (idx[0] >= 0 && idx[1] >= 0)
			break;
		usleep(100 * 1000);
	} while (rc_now_ms() < deadline);
}

/*
 * rc_suite_main_setup() - the main() of a suite program: its devices and veth
 * set up (then @setup, if any, for what the program adds to them), torn
 * down at exit, then the harness.
 */
static inline int rc_suite_main_setup(int argc, char **argv,
				      void (*setup)(void))
{
	struct ibv_device **list;

	rc_select_tests();
	suite_setup();
	atexit(suite_teardown);
	if (setup)
		setup();
	/*
	 * Load the providers once here rather than in every test child (slow
	 * under TCG). No device is opened before the tests fork.
	 */
	list = ibv_get_device_list(NULL);
	if (list)
		ibv_free_device_list(list);
	return test_harness_run(argc, argv);
}

static inline int rc_suite_main(int argc, char **argv)
{
	return rc_suite_main_setup(argc, argv, NULL);
}

#endif /* RC_SUITE_H */
