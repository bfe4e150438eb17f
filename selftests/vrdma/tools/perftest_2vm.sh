#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# On-demand paging and raw packet QPs between two VMs, each with a vrdma
# device on its end of a virtual Ethernet wire (scripts/vm-run --peer-cmd),
# driven by perftest:
#
#   VM A (primary)  vrdma0 on eth0, 10.81.0.1
#   VM B (peer)     vrdma0 on eth0, 10.81.0.2
#
# VM A drives; VM B runs the commands A hands it through the shared
# directory (lib.sh's vm2_on and vm2_pair).  Checks:
#   - ib_write_bw, ib_read_bw and ib_send_bw with --odp on both ends
#     (every buffer an ODP MR: its pages faulted in as packets touch
#     them), the server in B and the client in A, and ib_write_bw and
#     ib_send_bw the other way; then ib_write_bw with --odp on the client
#     only (an ODP MR writing into a pinned one).  Each process must exit
#     0, the client with its result line, and A's counters must have
#     grown by at least the bytes the run moved.  (perftest refuses --odp
#     for ib_atomic_bw; odp_test has the atomics on ODP memory);
#   - raw_ethernet_bw: a raw packet QP in B sends IPv4 frames from B's
#     address to A's, to A's MAC, where a raw packet QP whose flow (MAC
#     and IPv4 addresses) matches them receives them.  Both exit 0, and
#     A's raw_rcvd_pkts grew;
#   - no QP, CQ, MR or PD left on either device at the end.
# A tool that is not installed skips its checks (fails them under CI).
# Output is TAP; make check-long runs it (on the host: it boots the VMs).
#
# PERFTEST_2VM_VM_ARGS: more scripts/vm-run options, e.g. --debug-kernel.
. "$(dirname "$0")/../lib/lib.sh"

IP_A=10.81.0.1 IP_B=10.81.0.2
DEV=vrdma0
SLOW=${VRDMA_TEST_SLOW:-1}
SERVER_TIMEOUT=$((180 * SLOW))
CLIENT_TIMEOUT=$((150 * SLOW))
SIZE=65536
ITERS=200
# The QPs' local ACK timeout: 4.096 us * 2^18, about 1 s, so that the 7
# retries outlast a VM the busy host leaves without CPU for a while (the
# default, 14, gives up after half a second of silence).
QP_TIMEOUT=18
# What A reports: 2 results for each of 6 perftest runs, 2 for
# raw_ethernet_bw, and the resources of both devices.
WANT=16

have() { command -v "$1" >/dev/null; }

# ---------------------------------------------------------------- host ----

host_main()
{
	have ib_write_bw || skip_all "perftest not installed"
	vm2_host "${PERFTEST_2VM_OUT:-$VRDMA_TOP/out/perftest_2vm}" 900 \
		"${PERFTEST_2VM_VM_ARGS:-}"
	vm2_host_end "$WANT"
}

# ------------------------------------------------------------------ VM ----

# The jobs, in either VM (vm2_on; lib.sh has server, client and kill).
job_gid() { roce_v2_ipv4_gid "$DEV"; }
job_mac() { cat /sys/class/net/eth0/address; }
# job_stats: the device's counters that are not zero.
job_stats() { rdma statistic show link "$DEV/1" 2>/dev/null | tr ' ' '\n' |
	paste - - | awk '$2 != 0 && $2 ~ /^[0-9]+$/'; }

hw_stat() { cat "/sys/class/infiniband/$DEV/ports/1/hw_counters/$1"; }

# A raw_ethernet_bw server is ready once its raw packet QP exists (it
# makes its flow before it waits for frames).
raw_ready() { rdma res show qp 2>/dev/null | grep -q 'type RAW_PACKET'; }

# bw DESC SV TOOL SERVER_ARGS -- CLIENT_ARGS: TOOL with its server in VM
# SV and its client in the other, both with --odp unless their ARGS say
# otherwise; A's counters must have grown by MOVED bytes (set by the
# caller: what crosses the wire from A or to A, whichever is less).
bw_port=18900
bw()
{
	local desc=$1 sv=$2 tool=$3 gs gc ip sargs=() cargs=() tx rx bad
	local t0=$SECONDS

	shift 3
	while [ "$1" != -- ]; do
		sargs+=("$1")
		shift
	done
	shift
	cargs=("$@")
	if ! have "$tool"; then
		vm2_skip "$desc" "perftest not installed"
		vm2_skip "$desc: A's counters" "perftest not installed"
		return
	fi
	if [ "$sv" = A ]; then
		gs=$G_A gc=$G_B ip=$IP_A
	else
		gs=$G_B gc=$G_A ip=$IP_B
	fi
	tx=$(hw_stat sent_bytes) rx=$(hw_stat rcvd_bytes)
	vm2_pair "$sv" 1 tcp_listening "$bw_port" '.' \
		'^ *[0-9]+ +[0-9]+ +[0-9.]+ +[0-9.]+' \
		"$tool" -d "$DEV" -x "$gs" -p "$bw_port" -F -u "$QP_TIMEOUT" \
		"${sargs[@]}" -- \
		"$tool" -d "$DEV" -x "$gc" -p "$bw_port" -F -u "$QP_TIMEOUT" \
		"${cargs[@]}" "$ip"
	bad=$?
	rm -f "$VM2_SLOG"
	if [ "$bad" -ne 0 ]; then
		echo "# A's counters:"
		job_stats | sed 's/^/#   /'
		echo "# B's counters:"
		vm2_on B stats | sed 's/^/#   /'
	fi
	vm2_result "$bad" "$desc ($((SECONDS - t0)) s)"
	tx=$(($(hw_stat sent_bytes) - tx)) rx=$(($(hw_stat rcvd_bytes) - rx))
	echo "# A's $DEV sent $tx and received $rx bytes"
	[ "$tx" -ge "$MOVED" ] || [ "$rx" -ge "$MOVED" ]
	vm2_result $? "$desc: A's $DEV counted >= $MOVED bytes"
	bw_port=$((bw_port + 1))
}

# raw: raw_ethernet_bw, its receiving server in A (a flow for B's frames
# to A's MAC, IPv4 from B's address to A's), its sending client in B.
raw()
{
	local desc="raw_ethernet_bw: raw packet QPs, B sends IPv4 frames to A's flow"
	local mac_a mac_b pkts0 pkts bad t0=$SECONDS

	if ! have raw_ethernet_bw; then
		vm2_skip "$desc" "perftest not installed"
		vm2_skip "$desc: A's raw_rcvd_pkts" "perftest not installed"
		return
	fi
	mac_a=$(job_mac) mac_b=$(vm2_on B mac)
	pkts0=$(hw_stat raw_rcvd_pkts)
	# -D: each side runs 8 s, however many frames that is (the server's
	# 8 s from its first frame).  -J names the server's address and -j
	# the client's, on both sides: the server's flow matches frames from
	# -j to -J, to the MAC of its -B.
	vm2_pair A 1 raw_ready 0 '^ *[0-9]+ +[0-9]+ +[0-9.]+' '.' \
		raw_ethernet_bw -d "$DEV" -i 1 --server -D 8 -F \
		-B "$mac_a" -E "$mac_b" -J "$IP_A" -j "$IP_B" -- \
		raw_ethernet_bw -d "$DEV" -i 1 --client -D 8 -F \
		-B "$mac_b" -E "$mac_a" -j "$IP_B" -J "$IP_A"
	bad=$?
	grep -E '^ *[0-9]+ +[0-9]+ ' "$VM2_SLOG" | sed 's/^/# A: /'
	rm -f "$VM2_SLOG"
	vm2_result "$bad" "$desc ($((SECONDS - t0)) s)"
	pkts=$(($(hw_stat raw_rcvd_pkts) - pkts0))
	echo "# A's $DEV: $pkts raw frames received"
	[ "$pkts" -ge 1 ]
	vm2_result $? "$desc: A's raw_rcvd_pkts grew"
}

vm_main()
{
	local res0 res_b0

	vm2_setup "$IP_A" "$IP_B" "$DEV"

	G_A=$(job_gid) G_B=$(vm2_on B gid)
	res0=$(rdma_res)
	res_b0=$(vm2_on B res)
	echo "# GID indexes: A $G_A, B $G_B; resources of $DEV: A: $res0; B: $res_b0"

	MOVED=$((SIZE * ITERS))
	bw "ib_write_bw --odp, B <- A" B ib_write_bw \
		--odp -s "$SIZE" -n "$ITERS" -- --odp -s "$SIZE" -n "$ITERS"
	bw "ib_write_bw --odp, A <- B" A ib_write_bw \
		--odp -s "$SIZE" -n "$ITERS" -- --odp -s "$SIZE" -n "$ITERS"
	bw "ib_read_bw --odp, A reads from B" B ib_read_bw \
		--odp -s "$SIZE" -n "$ITERS" -- --odp -s "$SIZE" -n "$ITERS"
	bw "ib_send_bw --odp, B <- A" B ib_send_bw \
		--odp -s "$SIZE" -n "$ITERS" -- --odp -s "$SIZE" -n "$ITERS"
	bw "ib_send_bw --odp, A <- B" A ib_send_bw \
		--odp -s "$SIZE" -n "$ITERS" -- --odp -s "$SIZE" -n "$ITERS"
	bw "ib_write_bw, --odp on the client in A only" B ib_write_bw \
		-s "$SIZE" -n "$ITERS" -- --odp -s "$SIZE" -n "$ITERS"
	raw

	vm2_check_left "$DEV" "$res0" "$res_b0"
	vm2_done
	finish
}

vm2_main "$@"
