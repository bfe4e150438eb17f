#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# UD multicast with librdmacm's mckey: rdma_join_multicast() through
# rdma_cm (which attaches the QP with ibv_attach_mcast()), datagrams sent
# to the group's AH with the multicast QPN.  Between two devices on the
# ends of a veth pair, with one and with two receiving QPs, and on one
# device (the sender's own device receives, as a NIC loops multicast back).
# Every receiver must get every message: mckey's receiver waits for
# exactly -C completions per QP and exits 0 only then, and the receiving
# device's mcast_rcvd_pkts counter must have grown by the messages sent.
# The netdev must have joined the group (its multicast MAC and IP
# membership) while a QP is attached, and left it after.
#
# IPv6: Linux 6.1's rdma_cm refuses multicast on RoCE v2 GIDs for IPv6
# addresses (cma_iboe_join_multicast(): -EOPNOTSUPP), on any device; the
# test records that as a skip, and mcast_test checks IPv6 multicast through
# the verbs.
#
# VRDMA_TEST_TYPE=vrdma (default) or rxe (Soft-RoCE, to validate the test).
. "$(dirname "$0")/../lib/lib.sh"

TYPE=${VRDMA_TEST_TYPE:-vrdma}
N0=mct0 N1=mct1
IP0=10.221.0.1 IP1=10.221.0.2
IP6_0=fd00:221::1 IP6_1=fd00:221::2
GROUP=239.1.2.4 GROUP_MAC=01:00:5e:01:02:04
GROUP6=ff0e::1:4
COUNT=${MCAST_COUNT:-50}
SLOW=${VRDMA_TEST_SLOW:-1}

[ "$(id -u)" -eq 0 ] || skip_all "must run as root (in the VM)"
command -v mckey >/dev/null || skip_all "rdmacm-utils (mckey) not installed"

use_device_type
D0=${TYPE}mc0 D1=${TYPE}mc1
modprobe rdma_ucm || exit 1

pids=()
cleanup()
{
	local p

	for p in "${pids[@]}"; do
		kill -9 "$p" 2>/dev/null
	done
	printf 'link delete %s\nlink delete %s\n' "$D0" "$D1" |
		rdma -f -b - >/dev/null 2>&1
	veth_routed_del "$N0" 225 140
	[ -z "$loaded_rxe" ] || rmmod rdma_rxe 2>/dev/null
	return 0
}
trap cleanup EXIT

cleanup
dmesg -C
veth_routed "$N0" "$N1" "$IP0" "$IP1" 225 140 || exit 1
ip -6 -batch - <<-EOF || exit 1
	addr add $IP6_0/64 dev $N0 nodad
	addr add $IP6_1/64 dev $N1 nodad
EOF
rdma_links_add || exit 1

counter()
{
	cat "/sys/class/infiniband/$1/ports/1/hw_counters/$2" 2>/dev/null ||
		echo 0
}

# The netdev is in the group: its multicast MAC, and IP membership.
joined()
{
	ip maddr show dev "$1" | grep -q "link  *$2" &&
		ip maddr show dev "$1" | grep -q "inet  *$3"
}

# mc_run DESC RECV_IP SEND_IP GROUP QPS: mckey receiving with QPS QPs bound
# to RECV_IP, then mckey sending COUNT messages from SEND_IP.  Both must
# end with status 0, the receiver only once every QP got COUNT messages.
# Sets mc_status: 0 passed, 1 failed, 2 the join itself was refused.
mc_run()
{
	local desc=$1 rip=$2 sip=$3 grp=$4 qps=$5 rlog slog rpid rc src t0
	local deadline=$((60 * SLOW))

	rlog=$(mktemp)
	slog=$(mktemp)
	t0=$SECONDS
	timeout -k 5 $((120 * SLOW)) stdbuf -oL mckey -m "$grp" -b "$rip" -c "$qps" \
		-C "$COUNT" >"$rlog" 2>&1 &
	rpid=$!
	pids+=("$rpid")
	# Joined, receives posted, its 3 s pause over; or gone (a refused
	# join ends it).
	wait_until "$deadline" sh -c "grep -q 'receiving data transfers' '$rlog' ||
		! kill -0 $rpid 2>/dev/null"
	if ! grep -q 'receiving data transfers' "$rlog"; then
		wait "$rpid" 2>/dev/null
		mc_status=1
		grep -q 'failure joining\|MULTICAST_ERROR' "$rlog" && mc_status=2
		[ "$mc_status" -eq 2 ] || {
			echo "# receiver not ready: $desc"
			sed 's/^/#   /' "$rlog"
		}
		rm -f "$rlog" "$slog"
		return
	fi
	timeout -k 5 $((60 * SLOW)) stdbuf -oL mckey -m "$grp" -b "$sip" -s -C "$COUNT" \
		>"$slog" 2>&1
	src=$?
	wait_until $((30 * SLOW)) sh -c "! kill -0 $rpid" || kill "$rpid" 2>/dev/null
	wait "$rpid"
	rc=$?
	if [ "$rc" -ne 0 ] || [ "$src" -ne 0 ] ||
	   ! grep -q 'data transfers complete' "$rlog" ||
	   ! grep -q 'return status 0' "$slog"; then
		echo "# receiver (-c $qps, $rip) -> exit $rc"
		sed 's/^/#   /' "$rlog"
		echo "# sender ($sip) -> exit $src"
		sed 's/^/#   /' "$slog"
		mc_status=1
	else
		echo "# $desc: $((SECONDS - t0)) s"
		mc_status=0
	fi
	rm -f "$rlog" "$slog"
}

# mc_test DESC RECV_DEV RECV_IP SEND_DEV SEND_IP QPS
mc_test()
{
	local desc=$1 rdev=$2 rip=$3 sdev=$4 sip=$5 qps=$6 r0 s0 r1 s1

	r0=$(counter "$rdev" mcast_rcvd_pkts)
	s0=$(counter "$sdev" mcast_sent_pkts)
	mc_run "$desc" "$rip" "$sip" "$GROUP" "$qps"
	tap_result "$mc_status" "mckey $desc: $COUNT messages to each of $qps QP(s)"
	[ "$TYPE" = vrdma ] || return 0
	r1=$(counter "$rdev" mcast_rcvd_pkts)
	s1=$(counter "$sdev" mcast_sent_pkts)
	check_eq "$desc: $sdev mcast_sent_pkts +$COUNT" "$COUNT" "$((s1 - s0))"
	# The receiving device counts each packet once, whatever its QPs.
	check_eq "$desc: $rdev mcast_rcvd_pkts +$COUNT" "$COUNT" "$((r1 - r0))"
}

mc_test "$D1 <- $D0" "$D1" "$IP1" "$D0" "$IP0" 1
mc_test "$D1 (two QPs) <- $D0" "$D1" "$IP1" "$D0" "$IP0" 2
mc_test "loopback on $D0" "$D0" "$IP0" "$D0" "$IP0" 1

# While a QP is attached the netdev is in the group; after, no more.
timeout -k 5 $((120 * SLOW)) mckey -m "$GROUP" -b "$IP1" -C 1 >/dev/null 2>&1 &
mpid=$!
pids+=("$mpid")
check "$N1 joined $GROUP ($GROUP_MAC) while attached" \
	wait_until $((30 * SLOW)) joined "$N1" "$GROUP_MAC" "$GROUP"
kill "$mpid" 2>/dev/null
wait "$mpid" 2>/dev/null
check "$N1 left $GROUP after the detach" \
	wait_until $((30 * SLOW)) sh -c "! ip maddr show dev $N1 | grep -q 'inet  *$GROUP\$'"

mc_run "IPv6 $D1 <- $D0" "$IP6_1" "$IP6_0" "$GROUP6" 1
if [ "$mc_status" -eq 2 ]; then
	_tap_n=$((_tap_n + 1))
	echo "ok $_tap_n mckey IPv6 # SKIP rdma_cm (Linux 6.1) refuses IPv6 multicast on RoCE v2"
else
	tap_result "$mc_status" "mckey IPv6 $D1 <- $D0: $COUNT messages"
fi

printf 'link delete %s\nlink delete %s\n' "$D0" "$D1" | rdma -b - >/dev/null 2>&1
C=/sys/class/infiniband
check "$D0 and $D1 deleted" wait_until 10 sh -c "[ ! -e $C/$D0 ] && [ ! -e $C/$D1 ]"
check "$N0 and $N1 left every group" \
	sh -c "! ip maddr show dev $N0 | grep -q 'inet  *239\.' && ! ip maddr show dev $N1 | grep -q 'inet  *239\.'"
log=$(dmesg | grep -Ei 'WARNING|BUG|leak' )
check_eq "no warnings in the kernel log" "" "$log"
finish
