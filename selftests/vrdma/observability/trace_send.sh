#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# The vrdma tracepoints and scripts/trace-send: every event of trace.h
# exists in tracefs and is off after loading; trace-send traces one
# ibv_rc_pingpong SEND, prints the nine steps, and its own cross-checks of
# the traced values (wr_id, QPN, PSN, lengths, lkeys, CQEs, the polls) pass;
# the same with the receiver's packets delayed past the retransmit timeout,
# the resends shown; the steps' titles in Traditional Chinese; nothing it
# created is left behind.
. "$(dirname "$0")/../lib/lib.sh"

TRACEFS=/sys/kernel/tracing
EVENTS="vrdma_doorbell vrdma_sq_wqe vrdma_rq_wqe vrdma_req_pkt vrdma_xmit
	vrdma_rcv vrdma_resp_pkt vrdma_key_check vrdma_atomic vrdma_ack_xmit
	vrdma_comp_pkt vrdma_retry vrdma_cqe vrdma_cq_arm vrdma_cq_notify
	vrdma_qp_error vrdma_loopback_msg"

command -v ibv_rc_pingpong >/dev/null || skip_all "ibv_rc_pingpong not installed"
! lsmod | grep -q '^rdma_rxe ' || rmmod rdma_rxe || exit 1
vrdma_load || exit 1
[ -d $TRACEFS/events ] || mount -t tracefs nodev $TRACEFS

missing=
for e in $EVENTS; do
	[ -d "$TRACEFS/events/vrdma/$e" ] || missing="$missing $e"
done
check_eq "every vrdma tracepoint is in tracefs" "" "$missing"
check_eq "the tracepoints are off after loading" "0" \
	"$(cat $TRACEFS/events/vrdma/enable)"

out=$("$VRDMA_TOP/scripts/trace-send" 2>&1)
rc=$?
printf '%s\n' "$out" | sed 's/^/# /'
check_eq "trace-send exits 0" 0 "$rc"
for n in 1 2 3 4 5 6 7 8 9; do
	check_match "step $n is printed" "^$n\. " "$out"
done
check_match "the SEND's packets: FIRST .. LAST, 1024 bytes each" \
	"SEND_FIRST +psn=[0-9]+" "$out"
check_match "the receive CQE" "CQE cq=[0-9]+ \[[0-9]+\] RECV" "$out"
check_match "the receiving application polled wr_id 1" \
	"ibv_poll_cq \(pid [0-9]+\)" "$out"
check_match "the traced values agree" "^trace-send: all values agree" "$out"

# The receiver's packets held back past the retransmit timeout: the
# sender resends, and the first transmission of each PSN is still the one
# the steps and the checks follow.
out=$("$VRDMA_TOP/scripts/trace-send" --delay-acks 150 2>&1)
rc=$?
printf '%s\n' "$out" | sed 's/^/# /'
check_eq "trace-send --delay-acks exits 0" 0 "$rc"
check_match "the timer fired" "retry from psn=[0-9]+ \(timeout\)" "$out"
check_match "the resent packets are shown" "psn=[0-9]+ resent" "$out"
check_match "the values agree despite the resends" \
	"^trace-send: all values agree \(4 packets, [0-9]+ resent" "$out"

out=$("$VRDMA_TOP/scripts/trace-send" --steps --lang zh-TW 2>&1)
check_match "the steps in Traditional Chinese" "^1\. 接收端硬體從 RQ" "$out"

check_eq "no device left behind" "" \
	"$(ls /sys/class/infiniband | grep vrdmats)"
check_eq "no uprobe left behind" "" "$(cat $TRACEFS/uprobe_events)"
check_eq "the tracepoints are off again" "0" \
	"$(cat $TRACEFS/events/vrdma/enable)"
finish
