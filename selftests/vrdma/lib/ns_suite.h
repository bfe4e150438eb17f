/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The setup that rc_wire_test.c and rc_loss_test.c share: a veth pair whose
 * second end lives in a network namespace of its own (the fake peer's, or
 * a second vrdma device's), so that every packet really crosses it.
 *
 * Include it once per test program, after defining NS, NETDEV0 (here),
 * NETDEV1 (in NS), IP0, IP1, MAC0 and MAC1, and optionally NS_QUEUES (the
 * veth's transmit and receive queues per end, "1" by default).  The
 * program defines suite_setup(), which calls ns_suite_env() and
 * ns_veth_setup() before adding its devices, and suite_teardown(), which
 * removes what it made (NETDEV0 and NS included) while set_up is true;
 * main() is ns_suite_main().
 */
#ifndef NS_SUITE_H
#define NS_SUITE_H

#include <stdio.h>
#include <stdlib.h>

#include "ko_lib.h"
#include "rc_lib.h"

#ifndef NS_QUEUES
#define NS_QUEUES	"1"
#endif
#define NS_QARGS	" numtxqueues " NS_QUEUES " numrxqueues " NS_QUEUES

struct rc_config rc_cfg;

static int set_up;		/* there is something to tear down */
static int loaded_rxe;		/* and rdma_rxe to unload with it */

static void suite_setup(void);
static void suite_teardown(void);

/*
 * Tear down and end the program: a skip (KSFT_SKIP, under CI a failure) or
 * a bail out.
 */
static void bail(const char *msg, int code)
{
	suite_teardown();
	if (code == KSFT_SKIP && vrdma_in_ci()) {
		printf("TAP version 13\nBail out! %s (a failure under CI)\n", msg);
		exit(KSFT_FAIL);
	}
	printf("TAP version 13\n%s %s\n",
	       code == KSFT_SKIP ? "1..0 # SKIP" : "Bail out!", msg);
	exit(code);
}

/* rc_cfg from the environment, and the driver of rc_cfg.type loaded. */
static void ns_suite_env(int rxe_ok)
{
	const char *why = rc_cfg_env();
	int ret;

	if (why)
		bail(why, KSFT_SKIP);
	if (!rxe_ok) {
		rc_cfg.type = "vrdma";
		rc_cfg.is_rxe = 0;
	}
	ret = vrdma_ko_use(rc_cfg.type, &why, &loaded_rxe);
	if (ret)
		bail(why, ret > 0 ? KSFT_SKIP : KSFT_FAIL);
}

/*
 * Permanent neighbour entries both ways: address resolution (ib_core's, at
 * RTR, and the IP stack's) must not depend on ARP packets that are lost or
 * never answered.
 */
static int ns_static_neigh(void)
{
	return rc_sh("ip neigh replace " IP1 " lladdr " MAC1 " dev " NETDEV0
		     " nud permanent && ip -n " NS " neigh replace " IP0
		     " lladdr " MAC0 " dev " NETDEV1 " nud permanent");
}

/* The namespace and the veth pair, afresh (an earlier run's removed). */
static void ns_veth_setup(void)
{
	set_up = 1;
	suite_teardown();
	set_up = 1;
	if (rc_sh("ip netns add " NS " && ip -batch - <<EOF\n"
		  "link add " NETDEV0 " address " MAC0 NS_QARGS " type veth "
		  "peer name " NETDEV1 " address " MAC1 NS_QARGS " netns " NS
		  "\n"
		  "addr add " IP0 "/24 dev " NETDEV0 "\n"
		  "link set " NETDEV0 " up\n"
		  "EOF\n"
		  "ip -n " NS " -batch - <<EOF\n"
		  "link set lo up\n"
		  "addr add " IP1 "/24 dev " NETDEV1 "\n"
		  "link set " NETDEV1 " up\n"
		  "EOF") || ns_static_neigh())
		bail("veth/netns setup failed", KSFT_FAIL);
}

/* "PROGRAM NAME..." runs only the tests named. */
static inline int ns_suite_main(int argc, char **argv)
{
	int ret;

	setvbuf(stdout, NULL, _IOLBF, 0);
	rc_only_tests(argc, argv);
	suite_setup();
	/*
	 * test_harness_run() ends the program itself (ksft_exit()): the
	 * namespace, the veth and the devices go at exit, or they outlive the
	 * program (an "exclusive" netns mode is then refused to the next).
	 * The tests' processes end with _exit() and do not run it.
	 */
	atexit(suite_teardown);
	ret = test_harness_run(argc, argv);
	suite_teardown();
	return ret;
}

#endif /* NS_SUITE_H */
