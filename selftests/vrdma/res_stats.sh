#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# Observability: "rdma res show qp|cq|mr|pd -dd" lists vrdma's objects with
# the driver's details (ring indices, PSNs, retry state, pinned pages), and
# "rdma statistic show link" counts what the traffic did: packets and bytes
# both ways (exact on a loss-free wire), RNR NAKs, sequence NAKs and
# retransmissions under netem loss, a bad ICRC, a truncated packet, a CQ
# overflow (res_stats.py does the traffic and the checks).
#
# vrdma0 sits on rs0; vrdma1 on rs1, the other end of the veth, in network
# namespace rsns, so that packets cross the wire.
. "$(dirname "$0")/lib.sh"

NS=rsns
cleanup()
{
	rdma link delete vrdma0 2>/dev/null
	ip netns exec $NS rdma link delete vrdma1 2>/dev/null
	ip link del rs0 2>/dev/null
	ip netns del $NS 2>/dev/null
}
trap cleanup EXIT

vrdma_load || skip_all "cannot load vrdma"
/usr/bin/python3 -c 'import pyverbs.device' 2>/dev/null ||
	skip_all "no pyverbs (python3-pyverbs)"
cleanup

ip netns add $NS &&
	veth_pair rs0 rs1 &&
	ip link set rs1 netns $NS &&
	ip -n $NS link set rs1 up && ip -n $NS link set lo up &&
	ip addr add 10.219.0.1/24 dev rs0 &&
	ip -n $NS addr add 10.219.0.2/24 dev rs1 || exit 1
check "vrdma0 on rs0" rdma link add vrdma0 type vrdma netdev rs0
check "vrdma1 on rs1, created in namespace $NS" \
	ip netns exec $NS rdma link add vrdma1 type vrdma netdev rs1
wait_until 10 sh -c 'rdma link show vrdma0/1 | grep -q ACTIVE' &&
	wait_until 10 sh -c 'rdma link show vrdma1/1 | grep -q ACTIVE' ||
	echo "# ports not active"

# The counters are there by name.
stats=$(rdma statistic show link vrdma0/1)
for c in sent_pkts rcvd_pkts sent_bytes rcvd_bytes retransmits nak_sent \
	nak_rcvd rnr_nak_sent rnr_nak_rcvd icrc_errors rcvd_dropped \
	cq_overflows; do
	check_match "statistic: $c" " $c [0-9]+" "$stats"
done

while read -r tag rc desc; do
	case $tag in
	R) tap_result "$rc" "$desc" ;;
	*) echo "$tag $rc $desc" ;;
	esac
done < <(/usr/bin/python3 "$(dirname "$0")/res_stats.py" vrdma0 rs0 \
	vrdma1 10.219.0.2 2>&1; echo "R $? res_stats.py ran to its end")

# Nothing of the process is left behind.
check_eq "res: no QP or MR of the process left" 0 \
	"$( (rdma res show qp; rdma res show mr) | grep -c python3)"
finish
