#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# The teaching examples (examples/): each runs on a vrdma device, a SEND
# with a 3-SGE gather list, an RDMA WRITE with immediate, an RDMA READ and
# a compare-and-swap, and checks its own data and CQEs.
# VRDMA_TEST_TYPE=rxe runs them on rdma_rxe instead, for comparison.
. "$(dirname "$0")/../lib/lib.sh"

EXAMPLES="send_sgl write_imm read cas"
BIN=$VRDMA_TOP/examples/build

for e in $EXAMPLES; do
	[ -x "$BIN/$e" ] || skip_all "$BIN/$e not built (make selftests)"
done
TYPE=${VRDMA_TEST_TYPE:-vrdma}
use_device_type
# On rxe, the rxe provider, not ours.
[ "$TYPE" = vrdma ] || export RDMAV_DRIVERS=

veth_pair vrdex_a vrdex_b || exit 1
ip addr add 10.221.0.1/24 dev vrdex_a
DEV=${TYPE}ex0
check "$TYPE device added" rdma link add "$DEV" type "$TYPE" netdev vrdex_a
for e in $EXAMPLES; do
	out=$(timeout 120 "$BIN/$e" "$DEV" 2>&1)
	rc=$?
	printf '%s\n' "$out" | sed 's/^/#   /'
	check_eq "$e on $DEV" 0 "$rc"
done
check "$TYPE device deleted" rdma link delete "$DEV"
ip link delete vrdex_a
[ -z "$loaded_rxe" ] || rmmod rdma_rxe
finish
