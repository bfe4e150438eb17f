#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# /sys/kernel/debug/vrdma/<dev>/qp<n>: an ibv_rc_pingpong server creates
# its QP and posts 4 receive WQEs before it waits for a client; the file
# shows that QP, its state and its RQ ring with the 4 WQEs posted and none
# consumed; it goes with the QP, and the directory with the device.
. "$(dirname "$0")/../lib/lib.sh"

DBG=/sys/kernel/debug/vrdma
command -v ibv_rc_pingpong >/dev/null || skip_all "ibv_rc_pingpong not installed"
! lsmod | grep -q '^rdma_rxe ' || rmmod rdma_rxe || exit 1
vrdma_load || exit 1
[ -d /sys/kernel/debug/tracing ] || mount -t debugfs none /sys/kernel/debug 2>/dev/null
[ -d $DBG ] || skip_all "no $DBG (debugfs not mounted?)"

veth_pair vrdbg_a vrdbg_b || exit 1
ip addr add 10.220.0.1/24 dev vrdbg_a
check "device added" rdma link add vrdmadbg0 type vrdma netdev vrdbg_a
check "its debugfs directory" test -d $DBG/vrdmadbg0

ibv_rc_pingpong -d vrdmadbg0 -g 0 -r 4 -p 18516 >/dev/null 2>&1 &
pid=$!
# Not QP1: ib_core's GSI QP has a file too.
qpfile() { ls -d $DBG/vrdmadbg0/qp* 2>/dev/null | grep -vE '/qp[01]$' | head -n 1; }
have_qpfile() { [ -n "$(qpfile)" ]; }
wait_until 60 have_qpfile
f=$(qpfile)
check "a file for the server's QP" test -n "$f"
out=$(cat "$f" 2>&1)
printf '%s\n' "$out" | sed 's/^/# /'
check_match "its QPN and type" "^qpn ${f##*/qp} type RC state (INIT|RESET)" "$out"
check_match "the RQ: 4 WQEs posted, none consumed" \
	"^rq: entries [0-9]+ stride [0-9]+ prod 4 cons 0 used 4$" "$out"
check_match "the SQ: empty" "^sq: entries [0-9]+ stride [0-9]+ prod 0 cons 0 used 0$" "$out"
check_match "the requester's PSNs" "^requester: fetch 0 cur 0 next_psn" "$out"
check_match "the CQ indices" "^recv_cq: entries [0-9]+ stride 32 prod 0 cons 0" "$out"
kill "$pid"; wait "$pid" 2>/dev/null
check "the file goes with the QP" wait_until 30 test ! -e "$f"
check "device deleted" rdma link delete vrdmadbg0
check "the directory goes with the device" test ! -e $DBG/vrdmadbg0
ip link delete vrdbg_a
finish
