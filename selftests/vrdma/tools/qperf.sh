#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# qperf over the device: its RC tests over rdma_cm (-cm1), the client
# connecting to the server's address, which rdma_cm resolves to the
# server's device, so both ends are on $D1 (qperf cannot bind the client
# to another address): SEND/RECV bandwidth one way and both ways and latency,
# RDMA WRITE and READ bandwidth and latency, the compare-and-swap and
# fetch-and-add message rates, and its two atomic verification tests
# (ver_rc_compare_swap, ver_rc_fetch_add: every result checked).  Each
# must report its figure (a bandwidth, a latency, a rate) and no error;
# the figures are printed.  qperf's UC and UD tests cannot run on any
# RoCE device (rdma_rxe's included): without rdma_cm qperf exchanges only
# LIDs, no GID, and its rdma_cm mode is for RC only (qperf --help options,
# --use_cm); perftest's UC and UD runs (uc_ud_tools.sh) cover those.
#
# VRDMA_TEST_TYPE=vrdma (default) or rxe (Soft-RoCE, to validate the test).
. "$(dirname "$0")/../lib/lib.sh"

TYPE=${VRDMA_TEST_TYPE:-vrdma}
N0=rqp0 N1=rqp1
IP0=10.224.0.1 IP1=10.224.0.2
LPORT=19775
SECS=${QPERF_SECONDS:-2}
TIMEOUT=$((60 * ${VRDMA_TEST_SLOW:-1}))

[ "$(id -u)" -eq 0 ] || skip_all "must run as root (in the VM)"
command -v qperf >/dev/null || skip_all "qperf not installed"

use_device_type
D0=${TYPE}qp0 D1=${TYPE}qp1
modprobe rdma_ucm || exit 1

cleanup()
{
	stop_servers KILL
	rdma_links_del "$D0" "$D1"
	veth_routed_del "$N0" 227 150
	[ -z "$loaded_rxe" ] || rmmod rdma_rxe 2>/dev/null
	return 0
}
trap cleanup EXIT

cleanup
veth_routed "$N0" "$N1" "$IP0" "$IP1" 227 150 || exit 1
rdma_links_add || exit 1

# The server: qperf's listener on $IP1's side; each test connects anew.
qperf -lp "$LPORT" >/dev/null 2>&1 &
servers+=("$!")
check "qperf server listening" wait_until 30 tcp_listening "$LPORT"

# qperf_test TEST WHAT: run TEST against the server over rdma_cm; its output
# must carry WHAT (e.g. "bw", "latency", "msg_rate") with a value, and no
# "failed" or "error".
qperf_test()
{
	local t=$1 what=$2 out rc

	out=$(timeout -k 5 "$TIMEOUT" qperf -lp "$LPORT" -cm1 -t "$SECS" \
	      "$IP1" "$t" 2>&1)
	rc=$?
	if [ "$rc" -eq 0 ] && ! grep -Eqi 'fail|error' <<<"$out" &&
	   grep -Eq "^[[:space:]]*${what}[[:space:]]+=[[:space:]]+[0-9.]+ " <<<"$out"; then
		tap_result 0 "qperf $t: $(grep -E "^[[:space:]]*$what " <<<"$out" |
					  tr -s ' ' | sed 's/^ //')"
	else
		echo "# qperf $t -> exit $rc"
		printf '%s\n' "$out" | sed 's/^/#   /'
		tap_result 1 "qperf $t"
	fi
}

qperf_test rc_bw bw
qperf_test rc_bi_bw bw
qperf_test rc_lat latency
qperf_test rc_rdma_write_bw bw
qperf_test rc_rdma_write_lat latency
qperf_test rc_rdma_read_bw bw
qperf_test rc_rdma_read_lat latency
qperf_test rc_compare_swap_mr msg_rate
qperf_test rc_fetch_add_mr msg_rate
# The verification tests check every atomic's result themselves and
# report errors; they still print the rate.
qperf_test ver_rc_compare_swap msg_rate
qperf_test ver_rc_fetch_add msg_rate

stop_servers KILL
finish
