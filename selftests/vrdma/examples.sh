#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# The teaching examples (examples/): each runs on a vrdma device, a SEND
# with a 3-SGE gather list, an RDMA WRITE with immediate, an RDMA READ and
# a compare-and-swap, and checks its own data and CQEs; then the same on
# rdma_rxe, when the kernel has it, for comparison.
. "$(dirname "$0")/lib.sh"

EXAMPLES="send_sgl write_imm read cas"
BIN=$VRDMA_TOP/examples/build

for e in $EXAMPLES; do
	[ -x "$BIN/$e" ] || skip_all "$BIN/$e not built (make selftests)"
done
! lsmod | grep -q '^rdma_rxe ' || rmmod rdma_rxe || exit 1
vrdma_load || exit 1

veth_pair vrdex_a vrdex_b || exit 1
ip addr add 10.221.0.1/24 dev vrdex_a

run_all()
{
	local dev=$1 e out rc

	for e in $EXAMPLES; do
		out=$(timeout 120 "$BIN/$e" "$dev" 2>&1)
		rc=$?
		printf '%s\n' "$out" | sed 's/^/#   /'
		check_eq "$e on $dev" 0 "$rc"
	done
}

check "vrdma device added" rdma link add vrdmaex0 type vrdma netdev vrdex_a
run_all vrdmaex0
check "vrdma device deleted" rdma link delete vrdmaex0

# rxe binds UDP port 4791 when it loads: only with no vrdma device left.
if modprobe rdma_rxe 2>/dev/null; then
	check "rxe device added" rdma link add rxeex0 type rxe netdev vrdex_a
	RDMAV_DRIVERS= run_all rxeex0
	check "rxe device deleted" rdma link delete rxeex0
	rmmod rdma_rxe
else
	echo "# rdma_rxe not available: examples not compared"
fi
ip link delete vrdex_a
finish
