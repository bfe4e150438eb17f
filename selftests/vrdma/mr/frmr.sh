#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# Fast-registration MRs used locally, as a kernel consumer does: the test
# module kmod/vrdma_frmr_test.ko (built by make selftests) posts REG_MR and
# a SEND gathering from the new lkey in one chain, as iSER's initiator
# sends immediate data: whole and partial ranges, several SGEs, a region
# whose first page starts at an offset, pages out of order, page sizes of
# 2, 4 and 8 KiB, an MR with remote read access only, a reused MR
# (LOCAL_INV, REG_MR, SEND), an RDMA READ into a region registered in the
# same post; a SEND past the registration, or with a key invalidated
# before it, must fail.  The receiver's bytes are checked.  Then masked
# atomics (IB_WR_MASKED_ATOMIC_*, RDS's atomics), and plain ones, into a
# fast-registered region: the original value, the word left, the
# completion's opcode; refused without REMOTE_ATOMIC on the region, and
# with two SGEs (skipped where the device has no masked_atomic_cap).
#
# vrdma runs it twice: on the loopback path (local_direct=1, the default)
# and with packets (local_direct=0).  Then no QP, CQ, MR or PD is left.
#
# VRDMA_TEST_TYPE=vrdma (default) or rxe (Soft-RoCE, validates the test).
. "$(dirname "$0")/../lib/lib.sh"

TYPE=${VRDMA_TEST_TYPE:-vrdma}
SLOW=${VRDMA_TEST_SLOW:-1}
NETDEV=frm0 PEER=frm1
IP=10.221.0.1
KMOD=$VRDMA_TOP/selftests/vrdma/mr/kmod/vrdma_frmr_test.ko
PARAM=/sys/module/vrdma/parameters/local_direct

[ "$(id -u)" -eq 0 ] || skip_all "must run as root (in the VM)"
[ -f "$KMOD" ] || skip_all "$KMOD not built (make selftests)"

use_device_type
DEV=${TYPE}0

cleanup()
{
	[ ! -w "$PARAM" ] || echo 1 >"$PARAM"
	rdma link delete "$DEV" 2>/dev/null
	ip link del "$NETDEV" 2>/dev/null
	[ -z "$loaded_rxe" ] || rmmod rdma_rxe 2>/dev/null
}
trap cleanup EXIT


# run_module WHAT: load the module once; one result per case it reports.
run_module()
{
	local n0 out rc

	n0=$(dmesg | wc -l)
	insmod "$KMOD" dev="$DEV" slow="$SLOW"
	rc=$?
	lsmod | grep -q '^vrdma_frmr_test ' && rmmod vrdma_frmr_test
	out=$(dmesg | tail -n +$((n0 + 1)) | sed -n 's/.*vrdma_frmr_test: //p')
	if ! grep -q '^ok\|^not ok' <<<"$out"; then
		printf '%s\n' "$out" | sed 's/^/#   /'
		tap_result 1 "$1: the module ran its cases"
		return
	fi
	tap_relay "$1:" "$out"
	check_eq "$1: insmod succeeds exactly when every case passed" \
		"$(grep -q '^not ok' <<<"$out" && echo 1 || echo 0)" \
		"$([ "$rc" -ne 0 ] && echo 1 || echo 0)"
}

dev_ok=0
veth_dev_up "$NETDEV" "$PEER" "$IP" "$DEV" && dev_ok=1
check_eq "$DEV on $NETDEV ($IP), port active" 1 "$dev_ok"
[ "$dev_ok" -eq 1 ] || finish
check "its RoCEv2 IPv4 GID is in the table" \
	wait_until $((30 * SLOW)) roce_v2_ipv4_gid "$DEV"
res0=$(rdma_res)

if [ "$TYPE" = vrdma ]; then
	run_module "loopback path"
	check "local_direct=0" sh -c "echo 0 >$PARAM"
	run_module "packets"
	echo 1 >"$PARAM"
else
	run_module "$TYPE"
fi

same_res() { [ "$(rdma_res)" = "$res0" ]; }
check "no QP, CQ, MR or PD of the module left on $DEV" \
	wait_until $((10 * SLOW)) same_res
same_res || echo "# before: $res0, now: $(rdma_res)"
finish
