#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# The standard RC tools over the device: ibv_rc_pingpong --chk on one
# device (server and client on the same device, loopback through its own
# IPv4 GID) and between two devices on the ends of a veth pair, then
# perftest's ib_{send,write,read}_{bw,lat} -a and ib_atomic_{bw,lat} (both
# atomic types) between the two devices, the same over shared receive
# queues (ibv_srq_pingpong, ib_send_bw --use-srq), and XRC
# (ibv_xsrq_pingpong, also with two clients sharing their XRC domain).
# With RC_TOOLS_SET=ucud (uc_ud_tools.sh), the UD and UC tools instead:
# ibv_ud_pingpong and ibv_uc_pingpong --chk, ib_send_bw -c UD -a,
# ib_send_bw -c UC and ib_write_bw -c UC; a set of its own, so that each
# has the whole per-program timeout (settings).
# Every run must exit 0 on both sides within its timeout.
#
# VRDMA_TEST_TYPE=vrdma (default) or rxe (Soft-RoCE, to validate the test).
. "$(dirname "$0")/../lib/lib.sh"

TYPE=${VRDMA_TEST_TYPE:-vrdma}
N0=rtt0 N1=rtt1
IP0=10.212.0.1 IP1=10.212.0.2
PINGPONG_ITERS=${RC_TOOLS_PINGPONG_ITERS:-50}
PERF_ITERS=${RC_TOOLS_PERF_ITERS:-5}
ATOMIC_ITERS=${RC_TOOLS_ATOMIC_ITERS:-200}
SERVER_TIMEOUT=$((240 * ${VRDMA_TEST_SLOW:-1}))
CLIENT_TIMEOUT=$((200 * ${VRDMA_TEST_SLOW:-1}))

[ "$(id -u)" -eq 0 ] || skip_all "must run as root (in the VM)"
command -v ibv_rc_pingpong >/dev/null || skip_all "ibv_rc_pingpong not installed"
command -v ib_send_bw >/dev/null || skip_all "perftest not installed"

use_device_type
D0=${TYPE}tt0 D1=${TYPE}tt1

# veth_routed, veth_routed_del: lib.sh.

cleanup()
{
	stop_servers TERM
	rdma_links_del "$D0" "$D1"
	veth_routed_del "$N0" 221 110
	[ -z "$loaded_rxe" ] || rmmod rdma_rxe 2>/dev/null
	return 0
}
trap cleanup EXIT

cleanup
veth_routed "$N0" "$N1" "$IP0" "$IP1" 221 110 || exit 1
# Active MTU 4096 for perftest (ibv_rc_pingpong sets its own path MTU, 1024
# by default): a quarter of the packets, which matters under TCG.
printf 'link set %s mtu 9000\n' "$N0" "$N1" | ip -batch - || exit 1
rdma_links_add || exit 1
G0=$(roce_v2_ipv4_gid "$D0")
G1=$(roce_v2_ipv4_gid "$D1")
if [ -z "$G0" ] || [ -z "$G1" ]; then
	finish
fi
echo "# $TYPE: $D0 ($N0 $IP0 GID $G0), $D1 ($N1 $IP1 GID $G1)"

port=18700

# run_pair DESC PATTERN SERVER_CMD... -- CLIENT_CMD...: tool_pair (lib.sh)
# on TCP port $port, the next one each time; the client connects to it on
# 127.0.0.1.
TOOL_BAD='invalid data'
run_pair()
{
	TOOL_SRV_ARGS=(-p "$port")
	TOOL_CLI_ARGS=(-p "$port" 127.0.0.1)
	tool_pair tcp_listening "$port" "$@"
	port=$((port + 1))
}

# UD and UC.  UD messages are at most the MTU (ibv_ud_pingpong: 2048 bytes
# by default; its receive buffers hold the 40-byte GRH in front); --chk
# checks the data after it.  perftest: UD every size up to the MTU, UC one
# size of many packets.
if [ "${RC_TOOLS_SET:-rc}" = ucud ]; then
	udpp() { echo ibv_ud_pingpong --chk -n "$PINGPONG_ITERS" "$@"; }
	ucpp() { echo ibv_uc_pingpong --chk -n "$PINGPONG_ITERS" "$@"; }
	PP_OK='[0-9]+ iters in'
	# shellcheck disable=SC2046
	run_pair "ibv_ud_pingpong loopback on $D0" "$PP_OK" \
		$(udpp -d "$D0" -g "$G0") -- $(udpp -d "$D0" -g "$G0")
	# shellcheck disable=SC2046
	run_pair "ibv_ud_pingpong $D1 <- $D0, 4096 bytes" "$PP_OK" \
		$(udpp -d "$D1" -g "$G1" -s 4096) -- \
		$(udpp -d "$D0" -g "$G0" -s 4096)
	# shellcheck disable=SC2046
	run_pair "ibv_uc_pingpong $D1 <- $D0" "$PP_OK" \
		$(ucpp -d "$D1" -g "$G1") -- $(ucpp -d "$D0" -g "$G0")
	# shellcheck disable=SC2046
	run_pair "ibv_uc_pingpong $D1 <- $D0, 70000 bytes, path MTU 512" \
		"$PP_OK" $(ucpp -d "$D1" -g "$G1" -s 70000 -n 10 -m 512) -- \
		$(ucpp -d "$D0" -g "$G0" -s 70000 -n 10 -m 512)

	run_pair "ib_send_bw -c UD -a $D1 <- $D0" \
		'^[[:space:]]*4096[[:space:]]+[0-9]+' \
		ib_send_bw -c UD -d "$D1" -x "$G1" -a -n "$PERF_ITERS" -F -- \
		ib_send_bw -c UD -d "$D0" -x "$G0" -a -n "$PERF_ITERS" -F
	for t in ib_send_bw ib_write_bw; do
		run_pair "$t -c UC -s 1000000 $D1 <- $D0" \
			'^[[:space:]]*1000000[[:space:]]+[0-9]+' \
			"$t" -c UC -d "$D1" -x "$G1" -s 1000000 -n "$PERF_ITERS" \
			-F -- \
			"$t" -c UC -d "$D0" -x "$G0" -s 1000000 -n "$PERF_ITERS" -F
	done
	finish
fi

# ibv_rc_pingpong: --chk has the server check the data it receives.
pp() { echo ibv_rc_pingpong --chk -n "$PINGPONG_ITERS" "$@"; }
PP_OK='[0-9]+ iters in'
pp_srq() { echo ibv_srq_pingpong --chk -q 4 -r 64 -n "$PINGPONG_ITERS" "$@"; }

# shellcheck disable=SC2046
run_pair "ibv_rc_pingpong loopback on $D0" "$PP_OK" \
	$(pp -d "$D0" -g "$G0") -- $(pp -d "$D0" -g "$G0")
# shellcheck disable=SC2046
run_pair "ibv_rc_pingpong $D1 <- $D0" "$PP_OK" \
	$(pp -d "$D1" -g "$G1") -- $(pp -d "$D0" -g "$G0")
# shellcheck disable=SC2046
run_pair "ibv_rc_pingpong $D1 <- $D0, 1 byte, CQ events" "$PP_OK" \
	$(pp -d "$D1" -g "$G1" -s 1 -e) -- $(pp -d "$D0" -g "$G0" -s 1 -e)
# shellcheck disable=SC2046
run_pair "ibv_rc_pingpong $D1 <- $D0, 70000 bytes, path MTU 512" "$PP_OK" \
	$(pp -d "$D1" -g "$G1" -s 70000 -n 10 -m 512) -- \
	$(pp -d "$D0" -g "$G0" -s 70000 -n 10 -m 512)

# perftest: every size from 2 bytes to 8 MiB, a few iterations each (5 is
# perftest's minimum). -F: no CPU frequency warning. -C: latencies in
# cycles, which spares a 0.2 s CPU clock calibration per size.
PERF_OK='^[[:space:]]*8388608[[:space:]]+[0-9]+'
# perftest's QP timeout (14, 67 ms) assumes hardware speed. On a debug
# kernel under TCG (VRDMA_TEST_SLOW > 1) a 1 MiB message can take longer
# than 8 such timeouts to be taken in, which would end in RETRY_EXC_ERR
# with nothing lost; there, -u 18 (1 s) keeps the retry budget honest.
PERF_SLOW=()
if [ "${VRDMA_TEST_SLOW:-1}" -gt 1 ]; then PERF_SLOW=(-u 18); fi
for t in ${RC_TOOLS_PERF:-ib_send_bw ib_write_bw ib_read_bw ib_send_lat ib_write_lat ib_read_lat}; do
	opts=(-a -n "$PERF_ITERS" -F "${PERF_SLOW[@]}")
	case $t in *_lat) opts+=(-C) ;; esac
	run_pair "$t -a $D1 <- $D0" "$PERF_OK" \
		"$t" -d "$D1" -x "$G1" "${opts[@]}" -- \
		"$t" -d "$D0" -x "$G0" "${opts[@]}"
done

# perftest's atomics: 8 bytes each, as many in flight as the device allows
# (max_qp_rd_atom), on one word of the server.
ATOMIC_OK='^[[:space:]]*8[[:space:]]+[0-9]+'
for a in ${RC_TOOLS_ATOMIC:-FETCH_AND_ADD CMP_AND_SWAP}; do
	for t in ib_atomic_bw ib_atomic_lat; do
		opts=(-A "$a" -n "$ATOMIC_ITERS" -F)
		case $t in *_lat) opts+=(-C) ;; esac
		run_pair "$t -A $a $D1 <- $D0" "$ATOMIC_OK" \
			"$t" -d "$D1" -x "$G1" "${opts[@]}" -- \
			"$t" -d "$D0" -x "$G0" "${opts[@]}"
	done
done

# Shared receive queues: ibv_srq_pingpong --chk with 4 QPs receiving
# through one SRQ, and ib_send_bw with 2 QPs on one SRQ.
# shellcheck disable=SC2046
run_pair "ibv_srq_pingpong $D1 <- $D0, 4 QPs on one SRQ" "$PP_OK" \
	$(pp_srq -d "$D1" -g "$G1") -- $(pp_srq -d "$D0" -g "$G0")
run_pair "ib_send_bw --use-srq -q 2 $D1 <- $D0" \
	'^[[:space:]]*1048576[[:space:]]+[0-9]+' \
	ib_send_bw -d "$D1" -x "$G1" --use-srq -q 2 -s 1048576 -n "$PERF_ITERS" -F -- \
	ib_send_bw -d "$D0" -x "$G0" --use-srq -q 2 -s 1048576 -n "$PERF_ITERS" -F

# XRC: ibv_xsrq_pingpong.  Each process opens the XRC domain of the file
# /tmp/xrc_domain on its device, makes an XRC SRQ in it and, per client, a
# target and an initiator QP; every message names the SRQ it is for.  With
# two clients on one device they share that domain, and the server sends
# the messages for each client through the other client's target QP in
# turn (round robin over its initiators), so each client receives through
# a target QP the other process made.  The server finds the client of a
# receive completion by its qp_num, the target QP's number.  Every process
# must end with "success"; the devices must have counted at least the
# bytes the messages carried (it has no data check of its own).
XSRQ_ITERS=${RC_TOOLS_XSRQ_ITERS:-20}
DEVS="$D0 $D1"
xsrq_bytes() { hw_counters_sum "$DEVS" rcvd_bytes loopback_bytes; }

# run_xsrq DESC CLIENTS SIZE SERVER_ARGS... -- CLIENT_ARGS...: the server
# (-c CLIENTS) and CLIENTS clients at once, messages of SIZE bytes, on TCP
# port $port (the next one each time).
run_xsrq()
{
	local desc=$1 nc=$2 size=$3 srv=() cli=() spid pids=() logs=()
	local slog i rc bad=0 t0=$SECONDS before moved want

	shift 3
	while [ "$1" != "--" ]; do
		srv+=("$1")
		shift
	done
	shift
	cli=("$@")
	before=$(xsrq_bytes)
	slog=$(mktemp)
	timeout -k 5 "$SERVER_TIMEOUT" ibv_xsrq_pingpong -p "$port" -c "$nc" \
		-s "$size" -n "$XSRQ_ITERS" "${srv[@]}" >"$slog" 2>&1 &
	spid=$!
	servers+=("$spid")
	if ! wait_until 30 tcp_listening "$port"; then
		echo "# ibv_xsrq_pingpong server not listening on $port"
		bad=1
	else
		for ((i = 0; i < nc; i++)); do
			logs[i]=$(mktemp)
			timeout -k 5 "$CLIENT_TIMEOUT" ibv_xsrq_pingpong \
				-p "$port" -s "$size" -n "$XSRQ_ITERS" \
				"${cli[@]}" 127.0.0.1 >"${logs[i]}" 2>&1 &
			pids[i]=$!
		done
		for ((i = 0; i < nc; i++)); do
			wait "${pids[i]}"
			rc=$?
			if [ "$rc" -ne 0 ] || ! grep -qx success "${logs[i]}"; then
				echo "# client $i -> exit $rc"
				sed 's/^/#   /' "${logs[i]}"
				bad=1
			fi
			rm -f "${logs[i]}"
		done
	fi
	wait_until $((bad ? 5 : 30)) sh -c "! kill -0 $spid" ||
		kill "$spid" 2>/dev/null
	wait "$spid"
	rc=$?
	if [ "$bad" -ne 0 ] || [ "$rc" -ne 0 ] || ! grep -qx success "$slog" ||
	   [ "$(grep -c '^  remote:' "$slog")" -ne "$nc" ]; then
		echo "# server -> exit $rc"
		sed 's/^/#   /' "$slog"
		bad=1
	fi
	rm -f "$slog"
	tap_result "$bad" "$desc ($((SECONDS - t0)) s)"
	port=$((port + 1))
	[ "$TYPE" = vrdma ] || return 0
	# Each client and the server send XSRQ_ITERS messages to each other.
	moved=$(($(xsrq_bytes) - before))
	want=$((2 * nc * XSRQ_ITERS * size))
	check "$desc: the devices counted $moved bytes received, >= $want" \
		test "$moved" -ge "$want"
}

if ! command -v ibv_xsrq_pingpong >/dev/null; then
	skip_one "ibv_xsrq_pingpong" "not installed (ibverbs-utils)"
elif [ "$TYPE" = rxe ]; then
	echo "# rdma_rxe has no XRC: ibv_xsrq_pingpong not run"
else
	run_xsrq "ibv_xsrq_pingpong loopback on $D0" 1 4096 \
		-d "$D0" -g "$G0" -- -d "$D0" -g "$G0"
	run_xsrq "ibv_xsrq_pingpong $D1 <- 2 clients on $D0 sharing a domain" \
		2 4096 -d "$D1" -g "$G1" -- -d "$D0" -g "$G0"
	run_xsrq "ibv_xsrq_pingpong $D1 <- $D0, 70000 bytes, path MTU 512, CQ events" \
		1 70000 -d "$D1" -g "$G1" -m 512 -e -- -d "$D0" -g "$G0" -m 512 -e
fi

finish
