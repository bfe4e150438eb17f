#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# RDS over RDMA (rds_rdma) on the device: the kernel's Reliable Datagram
# Sockets carry each message as SENDs on an RC QP of their own, with
# rdma_cm connecting, FRMR registrations posted on that QP, and RDMA WRITE
# and READ for RDS's RDMA operations.  Two devices on the ends of a veth
# pair, each with its address (RDS/IB binds only to an address of an RDMA
# device, and only in the initial namespace: both ends in one namespace).
# rds_xfer.py binds an RDS socket to each address, forced onto the IB
# transport (SO_RDS_TRANSPORT), and checks every byte of every message,
# its size and its sender, and that none is lost, duplicated or reordered.
#
#   rds_tcp stays unloaded; RDS refuses an address of no RDMA device
#   messages of 1 B, 100 B, 4 KiB, 64 KiB, 1 MiB (RDS's largest; one
#     byte more is refused) and random sizes, both ways at once; then RDMA
#     WRITE and READ into buffers the other side mapped (RDS_CMSG_RDMA_MAP)
#   RDS's atomics into a page B mapped: CSWP, FADD and their masked forms
#     (RDS_CMSG_[MASKED_]ATOMIC_*).  RDS hands the device every atomic as
#     a masked one (IB_WR_MASKED_ATOMIC_*), into an MR it registered
#     without REMOTE_ATOMIC (net/rds/ib_frmr.c, 6.1 and 6.12): vrdma,
#     checking the rkey's rights as the IBA requires, must refuse each
#     (RDS_RDMA_REMOTE_ERROR), B's page unchanged, and RDS's connection
#     must recover.  rdma_rxe has no masked atomics: a skip there.
#     (rds_xfer.py atomic without --refused checks results and words
#     against a model, for an RDS whose MRs grant the right.)
#   RDS's connection is on the IB transport, the device counters grew by
#     at least the bytes sent; vrdma: messages, RDMA and atomics once
#     through its local path (local_direct=1, its default), once as
#     packets (local_direct=0)
#   teardown: rds_rdma and rds unload, no QP, CQ, MR or PD of either
#     device left, the devices delete
#
# Both ends share one kernel, and with it RDS's congestion map of each
# address: an update that crosses a newer change would leave a port marked
# congested for good (senders wait in rds_cong_wait() without a timeout),
# so rds_xfer.py gives each receiver a buffer that holds its whole plan and
# no port ever becomes congested.  A transfer that fails prints the
# devices' QPs, their debugfs view, the counters and RDS's own.
#
# VRDMA_TEST_TYPE=vrdma (default) or rxe (Soft-RoCE, validates the test).
# VRDMA_RDS_PLAN, VRDMA_RDS_PKT_PLAN (the packet pass), VRDMA_RDS_RDMA_PLAN:
# rds_xfer.py's plans (SIZExCOUNT,...); VRDMA_RDS_ATOMICS: how many random
# atomics.
#
# make check-long runs it on the host: lib.sh then boots a VM (scripts/vm-run,
# output in out/rds) and runs itself there.
VRDMA_OWN_VM=1500
. "$(dirname "$0")/../lib/lib.sh"

TYPE=${VRDMA_TEST_TYPE:-vrdma}
SLOW=${VRDMA_TEST_SLOW:-1}
N0=rds0 N1=rds1
IP0=10.226.0.1 IP1=10.226.0.2
PORT=18634
PLAN=${VRDMA_RDS_PLAN:-1x2000,100x2000,4096x500,65536x200,1048576x20,randx100}
PKT_PLAN=${VRDMA_RDS_PKT_PLAN:-1x300,100x300,4096x100,65536x20,1048576x2,randx10}
RDMA_PLAN=${VRDMA_RDS_RDMA_PLAN:-4096x4,65536x4,1048576x2}
ATOMICS=${VRDMA_RDS_ATOMICS:-200}
XFER=$(dirname "$0")/rds_xfer.py
PARAM=/sys/module/vrdma/parameters/local_direct

[ "$(id -u)" -eq 0 ] || skip_all "must run as root (in the VM)"
command -v python3 >/dev/null || skip_all "python3 is not installed"
need_modules rds rds_rdma

use_device_type
D0=${TYPE}0 D1=${TYPE}1

scratch=$(mktemp -d /tmp/rds.XXXXXX) || exit 1

cleanup()
{
	[ ! -w "$PARAM" ] || echo 1 >"$PARAM"
	rmmod rds_rdma rds_tcp rds 2>/dev/null
	rdma_links_del "$D0" "$D1"
	veth_routed_del "$N0" 229 160
	[ -z "$loaded_rxe" ] || rmmod rdma_rxe 2>/dev/null
	return 0
}
trap 'cleanup; rm -rf "$scratch"' EXIT

# both_res: rdma_res (lib.sh) of each device.
both_res() { echo "$D0: $(DEV=$D0 rdma_res); $D1: $(DEV=$D1 rdma_res)"; }

# hw DEV COUNTER: one of DEV's port counters, 0 if it has no such one.
hw() { cat "/sys/class/infiniband/$1/ports/1/hw_counters/$2" 2>/dev/null || echo 0; }

# moved DEV: the bytes DEV sent as packets or moved inside the driver.
moved() { echo $(($(hw "$1" sent_bytes) + $(hw "$1" loopback_bytes))); }

# plan_bytes PLAN: the bytes of PLAN's messages.
plan_bytes()
{
	python3 -c 'import sys; sys.path.insert(0, sys.argv[1])
import rds_xfer; print(sum(rds_xfer.parse_plan(sys.argv[2])))' \
		"$(dirname "$XFER")" "$1"
}

# dmesg_since N: the kernel's RDS and RDMA lines after line N, as comments.
dmesg_since()
{
	dmesg | tail -n +$(($1 + 1)) | grep -Ei 'rds|rdma|infiniband|vrdma|rxe' |
		tail -n 40 | sed 's/^/#   /'
}

# state_dump: what the devices hold, as comments, for a transfer that
# failed: their QPs in detail (PSNs, ring indices), the QPs' debugfs view
# on vrdma (the WQEs in flight) and the counters that are not 0.
state_dump()
{
	local d f

	[ -d /sys/kernel/debug/tracing ] ||
		mount -t debugfs none /sys/kernel/debug 2>/dev/null
	for d in "$D0" "$D1"; do
		rdma resource show qp link "$d/1" -dd 2>&1 | sed 's/^/#   /'
		for f in /sys/kernel/debug/vrdma/"$d"/qp*; do
			[ -r "$f" ] || continue
			echo "#   $f:"
			sed 's/^/#     /' "$f"
		done
		grep -H . /sys/class/infiniband/"$d"/ports/1/hw_counters/* \
			2>/dev/null | grep -v ':0$' | sed "s|^.*/|#   $d |"
	done
	# RDS's own view: its connections and the counters that are not 0.
	python3 "$XFER" info 2>&1 | grep -v ' 0$' | sed 's/^/#   rds: /'
}

# xfer DESC PLAN [rds_xfer.py OPTION...]: rds_xfer.py's PLAN both ways
# between $IP0 and $IP1; the devices must each have moved PLAN's bytes.
xfer()
{
	local desc=$1 plan=$2 out rc t0=$SECONDS b0 b1 p0 bytes n0
	local log=$scratch/xfer.log

	shift 2
	bytes=$(plan_bytes "$plan")
	b0=$(moved "$D0") b1=$(moved "$D1") p0=$(hw "$D0" sent_pkts)
	n0=$(dmesg | wc -l)
	# Its progress (stderr) as it goes, its report once it is done.
	timeout -k 10 $((900 * SLOW)) python3 "$XFER" xfer --both --progress \
		--timeout $((60 * SLOW)) "$@" "$IP0" "$IP1" "$PORT" "$plan" \
		>"$log" 2> >(sed -u 's/^/# /' >&2)
	rc=$?
	out=$(cat "$log")
	printf '%s\n' "$out" | sed 's/^/# /'
	check_eq "$desc: rds_xfer.py exits 0 ($((SECONDS - t0)) s)" 0 "$rc"
	check_match "$desc: every message both ways, every byte right" \
		'^rds_xfer: ok$' "$out"
	check_match "$desc: a message of 1 MiB + 1 B is refused" \
		'^rds_xfer: 1048577 B refused: EMSGSIZE$' "$out"
	[ "$rc" -eq 0 ] || { dmesg_since "$n0"; state_dump; }
	b0=$(($(moved "$D0") - b0)) b1=$(($(moved "$D1") - b1))
	p0=$(($(hw "$D0" sent_pkts) - p0))
	echo "# $D0 moved $b0 bytes ($p0 packets), $D1 $b1, for $bytes each way"
	if [ "$TYPE" = rxe ]; then
		# rdma_rxe counts packets only.
		check "$desc: $D0 sent packets" test "$p0" -gt 0
	else
		check "$desc: $D0 moved the $bytes bytes A sent" \
			test "$b0" -ge "$bytes"
		check "$desc: $D1 moved the $bytes bytes B sent" \
			test "$b1" -ge "$bytes"
	fi
}

# atomics DESC TOS: rds_xfer.py's atomics from $IP0 (on RDS connections of
# type of service TOS to TOS + 2, apart from the messages') into a page
# $IP1 mapped.
atomics()
{
	local desc=$1 tos=$2 out rc t0=$SECONDS n0

	if [ "$TYPE" = rxe ]; then
		_tap_n=$((_tap_n + 1))
		echo "ok $_tap_n $desc # SKIP rxe: no masked atomics, and RDS sends every atomic masked"
		return
	fi
	n0=$(dmesg | wc -l)
	out=$(timeout -k 10 $((600 * SLOW)) python3 "$XFER" atomic --refused \
		--tos "$tos" --count "$ATOMICS" --timeout $((20 * SLOW)) \
		"$IP0" "$IP1" "$PORT" 2>&1)
	rc=$?
	printf '%s\n' "$out" | sed 's/^/# /'
	[ "$rc" -eq 0 ] || { dmesg_since "$n0"; state_dump; }
	check_match "$desc: each refused, B's page unchanged ($((SECONDS - t0)) s)" \
		'^rds_xfer: atomics: ok$' "$out"
}

cleanup
dmesg -C
check "rds_tcp is not loaded (RDS cannot fall back to TCP)" \
	sh -c '! lsmod | grep -q "^rds_tcp "'
veth_routed "$N0" "$N1" "$IP0" "$IP1" 229 160 || exit 1
rdma_links_add || exit 1
modprobe rdma_cm || exit 1
res0=$(both_res)
echo "# resources before: $res0"

check "rds_rdma loads" modprobe rds_rdma
check "RDS's IB transport is registered (/proc/sys/net/rds/ib)" \
	test -d /proc/sys/net/rds/ib
check "rds_tcp is still not loaded" sh -c '! lsmod | grep -q "^rds_tcp "'
# RDS's bind refuses an address its transport's laddr_check does not take
# with ENOPROTOOPT.
check_fails "an RDS IB socket cannot bind to 127.0.0.1 (no RDMA device)" \
	"Protocol not available" python3 "$XFER" bind 127.0.0.1
check "an RDS IB socket binds to $IP0 ($D0)" python3 "$XFER" bind "$IP0"
check "an RDS IB socket binds to $IP1 ($D1)" python3 "$XFER" bind "$IP1"

[ ! -w "$PARAM" ] || echo 1 >"$PARAM"
xfer "messages" "$PLAN" --rdma "$RDMA_PLAN"
info=$(python3 "$XFER" info 2>&1)
printf '%s\n' "$info" | grep -E '^(conn|ibconn) ' | sed 's/^/# /'
# Flag 4: RDS_INFO_CONNECTION_FLAG_CONNECTED.
check_match "RDS's connection $IP0 -> $IP1 is on the IB transport, up" \
	"^conn $IP0 $IP1 infiniband [4-7]\$" "$info"
check_eq "no RDS connection on another transport" "" \
	"$(grep '^conn ' <<<"$info" | grep -v '^conn [0-9.]* [0-9.]* infiniband ')"
check_match "RDS's IB connection $IP0 -> $IP1" "^ibconn $IP0 $IP1 " "$info"
# rds_qps DEV: DEV's RC QPs (RDS's, the only ones here).
rds_qps() { rdma resource show qp link "$1/1" 2>/dev/null | grep -c 'type RC'; }
check "RDS's RC QPs are on $D0 ($(rds_qps "$D0")) and $D1 ($(rds_qps "$D1"))" \
	test "$(rds_qps "$D0")" -ge 1 -a "$(rds_qps "$D1")" -ge 1
printf '%s\n' "$info" | grep -E '^counter (ib_(tx|rx)_(cq_event|rdma|send)|ib_rdma_mr|recv_delivered|send_queued)' |
	grep -v ' 0$' | sed 's/^/# /'
atomics "RDS atomics (CSWP, FADD, masked CSWP and FADD)" 1

if [ "$TYPE" = vrdma ] && [ -w "$PARAM" ]; then
	echo 0 >"$PARAM"
	xfer "as packets (local_direct=0)" "$PKT_PLAN" --rdma "$RDMA_PLAN"
	atomics "as packets (local_direct=0): RDS atomics" 11
	echo 1 >"$PARAM"
fi
printf 'statistic show link %s/1\nstatistic show link %s/1\n' "$D0" "$D1" |
	rdma -b - | fold -w 100 | sed 's/^/# /'

# Teardown: the sockets are closed (rds_xfer.py has exited), RDS's
# connections and their QPs go with the modules.
check "rds_rdma and rds unload" rmmod rds_rdma rds
same_res() { [ "$(both_res)" = "$res0" ]; }
check "no QP, CQ, MR or PD of RDS left on $D0 or $D1" \
	wait_until $((30 * SLOW)) same_res
if ! same_res; then
	echo "# before: $res0, now: $(both_res)"
	rdma resource show | sed 's/^/#   /'
fi
check "rdma link delete $D0 $D1" sh -c \
	"rdma link delete $D0 && rdma link delete $D1"
finish
