#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# Limits and isolation (limits_test): RLIMIT_MEMLOCK for non-root
# pinning, the rings and WQE copies of a non-root process charged to its
# memory cgroup (ENOMEM at memory.max), the max_* attributes enforced with
# clean errors, new keys on re-registration, zeroed rings that only their
# context can map.
# VRDMA_LIMITS_ALL=1 also fills max_cq, max_pd and max_qp (tens of
# thousands of objects; make fuzz sets it).
#
# The device is made with the module parameter max_mr at 200, so that the
# MR table fills in seconds and its slots come back within the 255 keys
# test_keys compares (the allocation is cyclic).
. "$(dirname "$0")/../lib/lib.sh"

BUILD=$(dirname "$0")/../build

vrdma_load || exit 1
[ -x "$BUILD/limits_test" ] || skip_all "limits_test not built"
MAXMR=/sys/module/vrdma/parameters/max_mr
max_mr=$(cat $MAXMR) || { echo "Bail out! no $MAXMR"; exit 1; }
trap 'echo $max_mr > $MAXMR; rdma link delete vrdmalim0 2>/dev/null; ip link del lim0 2>/dev/null' EXIT
veth_pair lim0 lim1 && ip addr add 10.222.0.1/24 dev lim0 &&
	echo 200 > $MAXMR && rdma link add vrdmalim0 type vrdma netdev lim0 &&
	echo "$max_mr" > $MAXMR &&
	wait_until 10 sh -c 'grep -q ":ffff:0ade:" /sys/class/infiniband/vrdmalim0/ports/1/gids/*' ||
	{ echo "Bail out! device setup failed"; exit 1; }
"$BUILD/limits_test" vrdmalim0
