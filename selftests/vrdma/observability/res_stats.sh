#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# Observability: "rdma res show qp|cq|mr|pd -dd" lists vrdma's objects with
# the driver's details (ring indices, PSNs, retry state, pinned pages), and
# "rdma statistic show link" counts what the traffic did: packets and bytes
# both ways (exact on a loss-free wire), RNR NAKs, sequence NAKs and
# retransmissions under netem loss, a bad ICRC, a truncated packet, a CQ
# overflow (res_stats.py does the traffic and the checks).  Addresses
# (an MR's iova) are shown only to root and to the owner: not to uid 65534
# for root's MR (res_stats.py) nor for a kernel fast-registration MR,
# whose iova is a kernel address (NVMe over RDMA from vrdma0 to itself:
# nvme_rdma's MRs, after I/O).  A flood of UD packets to a QP whose task
# cannot run (res_stats.py) finds at most VRDMA_RX_QUEUE_MAX of them
# queued, the rest dropped and counted in rx_queue_full.
#
# vrdma0 sits on rs0; vrdma1 on rs1, the other end of the veth, in network
# namespace rsns, so that packets cross the wire.
. "$(dirname "$0")/../lib/lib.sh"
. "$(dirname "$0")/../lib/nvme_lib.sh"

NS=rsns
CFG=/sys/kernel/config/nvmet
NQN=nqn.2026-11.io.vrdma:res-stats
PORTNO=4420
SLOW=${VRDMA_TEST_SLOW:-1}

nvme_down()
{
	nvme disconnect -n "$NQN" >/dev/null 2>&1
	rm -f "$CFG/ports/1/subsystems/$NQN" 2>/dev/null
	rmdir "$CFG/ports/1" 2>/dev/null
	if [ -d "$CFG/subsystems/$NQN" ]; then
		echo 0 >"$CFG/subsystems/$NQN/namespaces/1/enable" 2>/dev/null
		rmdir "$CFG/subsystems/$NQN/namespaces/1" 2>/dev/null
		rmdir "$CFG/subsystems/$NQN" 2>/dev/null
	fi
	rmmod nvme_rdma nvmet_rdma 2>/dev/null
	rmmod nvmet nvme_fabrics null_blk 2>/dev/null
}

have_ns_dev()
{
	[ -n "$(ns_dev)" ] && [ -b "$(ns_dev)" ]
}

# kernel_mrs [USER]: "rdma -dd res show mr" lines of nvme_rdma's MRs, as
# root or as uid USER.
kernel_mrs()
{
	if [ -n "${1:-}" ]; then
		setpriv --reuid="$1" --regid="$1" --clear-groups \
			rdma -dd res show mr dev vrdma0
	else
		rdma -dd res show mr dev vrdma0
	fi | grep 'comm \[nvme_rdma\]'
}

# The kernel's MRs: NVMe over RDMA on vrdma0 to itself, some I/O, then
# the host's fast-registration MRs as root and as uid 65534.
kernel_mr_addresses()
{
	local mods='' m dev root nobody json

	for m in nvmet nvmet-rdma nvme-rdma null_blk; do
		modinfo "$m" >/dev/null 2>&1 || mods="$mods $m"
	done
	if ! command -v nvme >/dev/null || [ -n "$mods" ]; then
		skip_one "kernel MRs" "no nvme-cli or$mods"
		return
	fi
	modprobe null_blk nr_devices=1 && modprobe nvmet &&
		modprobe nvmet-rdma && modprobe nvme-rdma &&
		target_up 10.219.0.1 &&
		nvme connect -t rdma -a 10.219.0.1 -s $PORTNO -n "$NQN" >/dev/null &&
		wait_until $((30 * SLOW)) have_ns_dev
	check "NVMe over RDMA on vrdma0 to itself: connected" have_ns_dev
	dev=$(ns_dev)
	[ -n "$dev" ] &&
		dd if=/dev/zero of="$dev" bs=64k count=16 oflag=direct 2>/dev/null &&
		dd if="$dev" of=/dev/null bs=64k count=16 iflag=direct 2>/dev/null
	root=$(kernel_mrs)
	nobody=$(kernel_mrs 65534)
	echo "# nvme_rdma's MRs: $(printf '%s\n' "$root" | grep -c .) (root), \
$(printf '%s\n' "$nobody" | grep -c .) (uid 65534)"
	check_match "res mr -dd as root: a kernel fast-registration MR's iova" \
		'drv_type user drv_iova 0xffff[0-9a-f]{12} ' "$root"
	check_eq "res mr -dd as uid 65534: the kernel's MRs listed" \
		"$(printf '%s\n' "$root" | grep -c .)" \
		"$(printf '%s\n' "$nobody" | grep -c .)"
	check_eq "res mr -dd as uid 65534: no iova of a kernel MR" 0 \
		"$(printf '%s\n' "$nobody" | grep -c iova)"
	json=$(setpriv --reuid=65534 --regid=65534 --clear-groups \
		rdma -j -dd res show mr dev vrdma0)
	check_eq "res mr -dd -j as uid 65534: the kernel's MRs, none with an iova" \
		"$(printf '%s\n' "$root" | grep -c .) 0" \
		"$(printf '%s' "$json" | jq -r '[.[] | select(.comm == "nvme_rdma")] |
			"\(length) \([.[] | select(has("drv_iova"))] | length)"')"
	echo "# e.g. $(printf '%s\n' "$root" | head -n 1)"
	echo "# e.g. $(printf '%s' "$json" | jq -c '[.[] | select(.comm == "nvme_rdma")][0]')"
	nvme_down
}

cleanup()
{
	nvme_down
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
	cq_overflows rx_queue_full; do
	check_match "statistic: $c" " $c [0-9]+" "$stats"
done

while read -r tag rc desc; do
	case $tag in
	R) tap_result "$rc" "$desc" ;;
	*) echo "$tag $rc $desc" ;;
	esac
done < <(/usr/bin/python3 "$(dirname "$0")/res_stats.py" vrdma0 rs0 \
	vrdma1 10.219.0.2 10.219.0.1 2>&1; echo "R $? res_stats.py ran to its end")

kernel_mr_addresses

# Nothing of the process is left behind.
check_eq "res: no QP or MR of the process left" 0 \
	"$( (rdma res show qp; rdma res show mr) | grep -c python3)"
finish
