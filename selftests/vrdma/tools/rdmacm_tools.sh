#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# rdma_cm over the device: connection management runs through ib_cm's MADs
# on QP1 (GSI, a kernel QP of the driver), so every tool here needs the
# kernel verbs, kernel AHs and QP1 to work.  Checked first: ib_mad opened
# QP1 without errors and the GID attributes are right.  Then librdmacm's
# tools, on one device (loopback through its own address) and between two
# devices on the ends of a veth pair, IPv4, and IPv6 on one device:
# rping -V (data verified, -C iterations counted), ucmatose (RC), udaddy
# (UD through AHs rdma_cm made), rdma_server/rdma_client,
# rdma_xserver/rdma_xclient (XRC: an SRQ number in the accept's private
# data, one message through an initiator naming it), rstream and
# riostream (rsockets, -T v verifies the data; also blocking and
# nonblocking), and an ordinary TCP program (tcp_stream) under rsockets'
# preload, librspreload.so.  Every run must exit 0 on both sides within
# its timeout and print what success looks like.  Last, teardown: an rping
# client killed mid-run and a server killed under a client leave nothing
# behind but QP1, and the devices delete cleanly (no WARN: vm-run checks
# the console).
#
# VRDMA_TEST_TYPE=vrdma (default) or rxe (Soft-RoCE, to validate the test).
. "$(dirname "$0")/../lib/lib.sh"

TYPE=${VRDMA_TEST_TYPE:-vrdma}
N0=rct0 N1=rct1
IP0=10.219.0.1 IP1=10.219.0.2
IP6=fd00:219::1
PING_COUNT=${RDMACM_PING_COUNT:-1000}
SERVER_TIMEOUT=$((200 * ${VRDMA_TEST_SLOW:-1}))
CLIENT_TIMEOUT=$((180 * ${VRDMA_TEST_SLOW:-1}))

[ "$(id -u)" -eq 0 ] || skip_all "must run as root (in the VM)"
command -v rping >/dev/null || skip_all "rdmacm-utils not installed"

use_device_type
D0=${TYPE}cm0 D1=${TYPE}cm1
modprobe rdma_ucm || exit 1

cleanup()
{
	stop_servers KILL
	rdma_links_del "$D0" "$D1"
	veth_routed_del "$N0" 223 130
	[ -z "$loaded_rxe" ] || rmmod rdma_rxe 2>/dev/null
	return 0
}
trap cleanup EXIT

cleanup
dmesg -C
veth_routed "$N0" "$N1" "$IP0" "$IP1" 223 130 || exit 1
ip -6 addr add "$IP6/64" dev "$N0" nodad || exit 1
rdma_links_add || exit 1

# QP1: ib_mad created it (it shows as a GSI QP of the port), with nothing
# in the kernel log but the device's own line.
gsi_qp() { rdma res show qp link "$1/1" 2>/dev/null | grep -q 'lqpn 1 .*type GSI'; }
check "$D0 has QP1 (GSI)" wait_until 10 gsi_qp "$D0"
check "$D1 has QP1 (GSI)" wait_until 10 gsi_qp "$D1"
log=$(dmesg | grep -Ei 'mad|ib_cm|rdma_cm|cma|error|fail|warn' |
      grep -v "$TYPE device on\|rxe.*added\|loaded")
check_eq "no ib_mad/ib_cm errors in the kernel log" "" "$log"

# gid_attrs: every valid GID is RoCE v2 (vrdma has no RoCE v1) on the netdev.
gid_attrs_ok()
{
	local d=/sys/class/infiniband/$1/ports/1 f i t n bad=0 seen=0

	for f in "$d"/gids/*; do
		i=${f##*/}
		[ "$(cat "$f")" != 0000:0000:0000:0000:0000:0000:0000:0000 ] ||
			continue
		t=$(cat "$d/gid_attrs/types/$i" 2>/dev/null)
		n=$(cat "$d/gid_attrs/ndevs/$i" 2>/dev/null)
		seen=$((seen + 1))
		if [ "$t" != "RoCE v2" ] || [ "$n" != "$2" ]; then
			echo "gid $i: type '$t' ndev '$n'"
			bad=1
		fi
	done
	[ "$seen" -gt 0 ] && [ "$bad" -eq 0 ]
}
[ "$TYPE" = rxe ] || check "$D0 gid_attrs: RoCE v2 on $N0" gid_attrs_ok "$D0" "$N0"
check "$D0 has the IPv6 GID" wait_until 10 \
	grep -qi "^fd00:0219:0000:0000:0000:0000:0000:0001" \
	-r "/sys/class/infiniband/$D0/ports/1/gids/"

port=18900

# rdma_cm ports are not TCP ports: a server is ready when its cm_id
# listens on the port.
cm_listening()
{
	rdma res show cm_id 2>/dev/null | grep LISTEN | grep -q ":$1 "
}

# run_cm DESC PATTERN SERVER_CMD... -- CLIENT_CMD...: tool_pair (lib.sh)
# with "-p $port" for both, the next port each time.  With FIXED_PORT=N in
# the environment, the tools get no -p (udaddy's -p is a port space) and
# the server listens on N.
TOOL_BAD='mismatch|invalid data|error'
run_cm()
{
	TOOL_SRV_ARGS=(-p "$port")
	TOOL_CLI_ARGS=(-p "$port")
	if [ -n "${FIXED_PORT:-}" ]; then
		TOOL_SRV_ARGS=()
		TOOL_CLI_ARGS=()
	fi
	tool_pair cm_listening "${FIXED_PORT:-$port}" "$@"
	port=$((port + 1))
}

# rping -v prints one "ping data" line per iteration; -V checks each.
rping_srv() { echo rping -s -v -V -C "$2" -a "$1"; }
rping_cli() { echo rping -c -v -V -C "$2" -a "$1"; }
# The client's last -v line: every iteration ran.
PING_LAST="rdma-ping-$((PING_COUNT - 1)):"
CM_OK='return status 0'
# rstream/riostream: "custom SIZE COUNT ..." once all transfers are done.
stream_ok() { echo "^custom[[:space:]]+$1[[:space:]]+$2[[:space:]]"; }

cm_suite()
{
	local where=$1 srv_ip=$2 cli_ip=$3 fam=()

	[ -z "${4:-}" ] || fam=(-f "$4")
	# shellcheck disable=SC2046
	run_cm "rping -V -C $PING_COUNT $where" "$PING_LAST" \
		$(rping_srv "$srv_ip" "$PING_COUNT") -- \
		$(rping_cli "$srv_ip" "$PING_COUNT") -I "$cli_ip"
	run_cm "ucmatose $where" "$CM_OK" \
		ucmatose -b "$srv_ip" -C 20 -S 1000 "${fam[@]}" -- \
		ucmatose -s "$srv_ip" -b "$cli_ip" -C 20 -S 1000 "${fam[@]}"
	FIXED_PORT=7174 run_cm "udaddy $where" "$CM_OK" \
		udaddy -b "$srv_ip" -C 20 "${fam[@]}" -- \
		udaddy -s "$srv_ip" -b "$cli_ip" -C 20 "${fam[@]}"
}

# One device: server and client on $D0, through its own address.
cm_suite "loopback on $D0" "$IP0" "$IP0"
# Two devices: $D0's client connects to $D1's server across the veth.
cm_suite "$D1 <- $D0" "$IP1" "$IP0"
run_cm "ucmatose 4 connections $D1 <- $D0" "$CM_OK" \
	ucmatose -b "$IP1" -c 4 -C 10 -- ucmatose -s "$IP1" -b "$IP0" -c 4 -C 10
# IPv6, on one device.
cm_suite "IPv6 loopback on $D0" "$IP6" "$IP6" ipv6

run_cm "rdma_server/rdma_client $D1 <- $D0" 'rdma_client: end 0' \
	rdma_server -s "$IP1" -- rdma_client -s "$IP1"
run_cm "rdma_server/rdma_client loopback on $D0" 'rdma_client: end 0' \
	rdma_server -s "$IP0" -- rdma_client -s "$IP0"

# XRC over rdma_cm (RDMA_PS_IB): on the connection request rdma_xserver
# gets an XRC target QP (librdmacm opens the device's XRC domain) and makes
# an XRC SRQ, posts a receive to it and accepts with the SRQ's number as
# private data; rdma_xclient's initiator (IBV_QPT_XRC_SEND) sends one
# inline message naming that number, and the server ends once its receive
# completes.  rdma_xserver has no -s: it listens on every address.  First
# the same tools with RC (-c r), to tell a tool that cannot run from XRC
# that does not work (and to show the counter checks pass where a message
# goes through).
# xserver_pair DESC TYPE SERVER_IP: run_cm of rdma_xserver/rdma_xclient -c
# TYPE; the client must ring a doorbell of the device (the message:
# rdma_cm's MADs are the kernel's) and the devices count its bytes.
xserver_pair()
{
	local bells bytes

	bells=$(hw_counters_sum "$D0 $D1" doorbells)
	bytes=$(hw_counters_sum "$D0 $D1" rcvd_bytes loopback_bytes)
	run_cm "rdma_xserver/rdma_xclient -c $2 $1" 'rdma_xclient: end 0' \
		rdma_xserver -c "$2" -- rdma_xclient -c "$2" -s "$3"
	[ "$TYPE" = vrdma ] || return 0
	bells=$(($(hw_counters_sum "$D0 $D1" doorbells) - bells))
	bytes=$(($(hw_counters_sum "$D0 $D1" rcvd_bytes loopback_bytes) - bytes))
	check "rdma_xclient -c $2 $1: $bells doorbells, $bytes bytes received" \
		test "$bells" -ge 1 -a "$bytes" -ge 16
}
if ! command -v rdma_xserver >/dev/null; then
	skip_one "rdma_xserver/rdma_xclient" "not installed (rdmacm-utils)"
else
	xserver_pair "$D1 <- $D0" r "$IP1"
	if [ "$TYPE" = rxe ]; then
		echo "# rdma_rxe has no XRC: rdma_xserver -c x not run"
	else
		xserver_pair "$D1 <- $D0" x "$IP1"
		xserver_pair "loopback on $D0" x "$IP0"
	fi
fi

# rsockets: streams of transfers, the data verified (-T v), with the
# default (asynchronous), blocking and nonblocking calls.
for t in rstream riostream; do
	run_cm "$t -T v $D1 <- $D0" "$(stream_ok 64k 50)" \
		"$t" -b "$IP1" -S 65536 -C 50 -T v -- \
		"$t" -s "$IP1" -S 65536 -C 50 -T v
	run_cm "$t -T b -T v loopback on $D0" "$(stream_ok 4k 100)" \
		"$t" -b "$IP0" -S 4096 -C 100 -T b -T v -- \
		"$t" -s "$IP0" -S 4096 -C 100 -T b -T v
done
run_cm "rstream -T n -T v $D1 <- $D0" "$(stream_ok 1m 10)" \
	rstream -b "$IP1" -S 1048576 -C 10 -T n -T v -- \
	rstream -s "$IP1" -S 1048576 -C 10 -T n -T v
run_cm "rstream -T v IPv6 loopback on $D0" "$(stream_ok 4k 100)" \
	rstream -b "$IP6" -S 4096 -C 100 -T v -f ipv6 -- \
	rstream -s "$IP6" -S 4096 -C 100 -T v -f ipv6

# rsockets' preload: an ordinary TCP program (tcp_stream: socket, accept,
# connect, send, recv) carried by librspreload.so, a stream checked byte
# for byte.  The preload falls back to TCP when rsockets cannot connect,
# so the devices' counters must show the stream went through them.
STREAM_BYTES=$((32 << 20))
TCP_STREAM=$(dirname "$0")/../build/tcp_stream
dev_bytes() # the bytes $D0 and $D1 counted received, on the wire or not
{
	local d c n=0

	for d in "$D0" "$D1"; do
		for c in rcvd_bytes loopback_bytes; do
			c=/sys/class/infiniband/$d/ports/1/hw_counters/$c
			[ -r "$c" ] && n=$((n + $(cat "$c")))
		done
	done
	echo "$n"
}
RSPRELOAD=$(find /usr/lib/*/rsocket -name librspreload.so 2>/dev/null |
	    head -n 1)
if [ -z "$RSPRELOAD" ] || [ ! -x "$TCP_STREAM" ]; then
	skip_one "rsockets preload" "no librspreload.so (librdmacm1) or tcp_stream"
else
	before=$(dev_bytes)
	FIXED_PORT=$port run_cm "an unmodified TCP program through librspreload.so, $D1 <- $D0" \
		"^tcp_stream client: $STREAM_BYTES bytes sent, .* matched" \
		env LD_PRELOAD="$RSPRELOAD" "$TCP_STREAM" server "$IP1" "$port" -- \
		env LD_PRELOAD="$RSPRELOAD" "$TCP_STREAM" client "$IP1" "$port" \
		"$STREAM_BYTES"
	moved=$(($(dev_bytes) - before))
	[ "$TYPE" != vrdma ] ||
		check "the stream went through the devices ($moved bytes counted)" \
			test "$moved" -ge "$STREAM_BYTES"
fi

# Teardown under traffic: a client killed mid-run, then a server.
qps_left() { rdma res show qp 2>/dev/null | grep -v 'type GSI' | grep -c lqpn; }
kill_test()
{
	local desc=$1 victim=$2 spid cpid ok=0 i

	rping -s -a "$IP1" -C 1000000 -p "$port" >/dev/null 2>&1 &
	spid=$!
	servers+=("$spid")
	wait_until 30 cm_listening "$port" || ok=1
	rping -c -a "$IP1" -I "$IP0" -C 1000000 -p "$port" >/dev/null 2>&1 &
	cpid=$!
	servers+=("$cpid")
	sleep 3
	if [ "$victim" = client ]; then
		kill -9 "$cpid"
		# The server sees the disconnect (or keeps waiting): ends it.
		wait "$cpid" 2>/dev/null
		sleep 1
		kill "$spid" 2>/dev/null
	else
		kill -9 "$spid"
		wait "$spid" 2>/dev/null
		# The client must notice and end on its own.
		if ! wait_until 60 sh -c "! kill -0 $cpid"; then
			echo "# rping client still running after its server died"
			ok=1
		fi
		kill -9 "$cpid" 2>/dev/null
	fi
	wait "$spid" "$cpid" 2>/dev/null
	for i in 1 2 3 4 5 6 7 8 9 10; do
		[ "$(qps_left)" -eq 0 ] && break
		sleep 1
	done
	if [ "$(qps_left)" -ne 0 ]; then
		echo "# QPs left:"
		rdma res show qp | sed 's/^/#   /'
		ok=1
	fi
	tap_result "$ok" "$desc"
	port=$((port + 1))
}
kill_test "rping client killed mid-run: nothing left behind" client
kill_test "rping server killed mid-run: client ends, nothing left" server
# And it all still works.
# shellcheck disable=SC2046
run_cm "rping -V -C 10 $D1 <- $D0 after the kills" "rdma-ping-9:" \
	$(rping_srv "$IP1" 10) -- $(rping_cli "$IP1" 10) -I "$IP0"

rdma_links_del "$D0" "$D1"
C=/sys/class/infiniband
check "$D0 and $D1 deleted" wait_until 10 sh -c "[ ! -e $C/$D0 ] && [ ! -e $C/$D1 ]"
log=$(dmesg | grep -Ei 'ib_mad|ib_cm|mad agent|WARNING|BUG' )
check_eq "no MAD/CM errors or warnings in the kernel log" "" "$log"
finish
