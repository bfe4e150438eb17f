#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# XRC between two VMs, each with a vrdma device on its end of a virtual
# Ethernet wire (scripts/vm-run --peer-cmd):
#
#   VM A (primary)  vrdma0 on eth0, 10.80.0.1
#   VM B (peer)     vrdma0 on eth0, 10.80.0.2
#
# VM A drives; VM B runs the commands A hands it through the shared
# directory (this script with --job, through lib.sh's vm2_remote and
# vm2_serve).  Checks:
#   - ibv_xsrq_pingpong with its server in B and two clients in A at once,
#     which share their XRC domain (the tool opens the one of the file
#     /tmp/xrc_domain): the server sends each client's messages through
#     the target QPs of both clients in turn, so each client receives
#     through a target QP the other process made; then the reverse, the
#     server in A and a client in B.  Each way with the tool's default
#     4096-byte messages at its default path MTU of 1024, and with
#     70000-byte messages (path MTU 512 with CQ events, and path MTU 4096).
#     Every process must exit 0 and print "success", the server must have
#     heard from every client.  The tool's QPs give up after 0.6 s without
#     an answer, less than a busy host may leave a VM without CPU: a run
#     in which a device ran out of retries is tried again (up to three
#     tries), and its result says so (see xsrq_dead);
#   - rdma_xserver/rdma_xclient -c x (XRC over rdma_cm: the SRQ number in
#     the accept's private data, one inline SEND naming it), the server in
#     B, then in A; both must end with "end 0";
#   - for each run, A's vrdma0 counters grew by at least the bytes A's
#     processes sent and received (for rdma_xclient in A also a doorbell),
#     and a capture on A's eth0 holds, each way, at least as many XRC SEND
#     packets (BTH opcodes 0xa0-0xa5) as the messages take at the path MTU,
#     and XRC ACKs (0xb1) back: the traffic crossed the wire, as XRC;
#   - no QP, CQ, MR or PD left on either device at the end.
# A tool that is not installed skips its checks (fails them under CI).
# Output is TAP; make check-long runs it (on the host: it boots the VMs).
#
# XRC_2VM_ITERS: messages per client each way (default 20).
# XRC_2VM_VM_ARGS: more scripts/vm-run options, e.g. --debug-kernel.
. "$(dirname "$0")/../lib/lib.sh"

IP_A=10.80.0.1 IP_B=10.80.0.2
DEV=vrdma0
SLOW=${VRDMA_TEST_SLOW:-1}
ITERS=${XRC_2VM_ITERS:-20}
# A run takes 5-40 s under TCG on a busy host.
SERVER_TIMEOUT=$((120 * SLOW))
CLIENT_TIMEOUT=$((90 * SLOW))
# What A reports: 3 results for each of 4 ibv_xsrq_pingpong runs and 2 of
# rdma_xserver, and the resources of both devices.
WANT=20

have() { command -v "$1" >/dev/null; }

# ---------------------------------------------------------------- host ----

host_main()
{
	have ibv_xsrq_pingpong || have rdma_xserver ||
		skip_all "neither ibv_xsrq_pingpong (ibverbs-utils) nor rdma_xserver (rdmacm-utils) is installed"
	vm2_host "${XRC_2VM_OUT:-$VRDMA_TOP/out/xrc_2vm}" 900 \
		"${XRC_2VM_VM_ARGS:-}"
	vm2_host_end "$WANT"
}

# ------------------------------------------------------------------ VM ----

# The jobs, in either VM: in A called as functions, in B this script with
# --job NAME ARGS... (on).

job_gid() { roce_v2_ipv4_gid "$DEV"; }

# job_stats: the device's counters, and what the network stack dropped:
# eth0's qdisc (fq_codel drops what waits too long), eth0, the backlog.
job_stats()
{
	rdma statistic show link "$DEV/1" 2>/dev/null
	tc -s qdisc show dev eth0 | grep -E '^qdisc|Sent|drop'
	ip -s link show eth0 | grep -A1 -E '^ *(RX|TX):'
	echo "softnet_stat dropped: $(awk '{ print $2 }' /proc/net/softnet_stat)"
}

hw_stat() { cat "/sys/class/infiniband/$DEV/ports/1/hw_counters/$1"; }

# The wire, captured on A's eth0 for each run: its XRC packets (BTH
# opcodes 101xxxxx, 0xa0-0xbf) only.
cap_start()
{
	cap=/vmout/$1.pcap
	cap_pid=
	have tcpdump || return 0
	tcpdump -i eth0 -n -Z root -B 16384 -s 96 --immediate-mode -U -w "$cap" \
		'udp dst port 4791 and (udp[8] & 0xe0) = 0xa0' 2>"$cap.log" &
	cap_pid=$!
	wait_until $((20 * SLOW)) grep -q listening "$cap.log" ||
		echo "# tcpdump is not capturing"
}

# cap_stop: once tcpdump has written what it had (its file unchanged for
# 2 s), stop it.
cap_stop()
{
	local size=-1 same=0

	[ -n "$cap_pid" ] || return 0
	while [ "$same" -lt 10 ]; do
		if [ "$(stat -c %s "$cap" 2>/dev/null)" = "$size" ]; then
			same=$((same + 1))
		else
			size=$(stat -c %s "$cap" 2>/dev/null) same=0
		fi
		sleep 0.2
	done
	kill "$cap_pid"
	wait "$cap_pid"
	grep -E 'captured|received|dropped' "$cap.log" | tr '\n' ' ' |
		sed 's/^/# tcpdump: /; s/ $/\n/'
}

# cap_count SRC FILTER: the captured packets from SRC that match FILTER.
cap_count()
{
	tcpdump -n -r "$cap" "src host $1 and ($2)" 2>/dev/null | wc -l
}

# wire_check DESC NA NB: the capture holds at least NA XRC SEND packets
# (opcodes 0xa0-0xa5) from A and NB from B, and an XRC ACK (0xb1) back
# from each side that was sent some.
wire_check()
{
	local desc=$1 na=$2 nb=$3 sa sb aa ab ok=0

	if [ -z "$cap_pid" ]; then
		vm2_skip "$desc" "tcpdump not installed"
		return
	fi
	sa=$(cap_count "$IP_A" 'udp[8] <= 0xa5')
	sb=$(cap_count "$IP_B" 'udp[8] <= 0xa5')
	aa=$(cap_count "$IP_A" 'udp[8] = 0xb1')
	ab=$(cap_count "$IP_B" 'udp[8] = 0xb1')
	echo "# on the wire: XRC SENDs A->B $sa, B->A $sb; XRC ACKs A->B $aa, B->A $ab"
	[ "$sa" -ge "$na" ] && [ "$sb" -ge "$nb" ] || ok=1
	[ "$na" -eq 0 ] || [ "$ab" -ge 1 ] || ok=1
	[ "$nb" -eq 0 ] || [ "$aa" -ge 1 ] || ok=1
	vm2_result "$ok" "$desc: XRC SENDs on the wire, >= $na A->B and $nb B->A, and XRC ACKs back"
}

# The tool's QPs wait 67 ms for an answer (its timeout 14) and resend 7
# times (its retry count), then give up with a retry exceeded error; its
# processes then wait for ever.  Two things make that happen here without
# a packet lost:
#   - its start-up race: the server sends as soon as the last client has
#     its address, when that client may not have made its target QP ready
#     to receive (RTR) yet: the packets are dropped there (as IBA says,
#     silently), and if the client's VM gets no CPU for the next 0.6 s...
#   - ...a busy host that leaves one VM without CPU for longer than that
#     (seen: 1.2 s) while the other runs.
# A run in which a device counted retry_exceeded is stopped at once and
# tried again, up to three tries; its result says so.
rex_a=0 rex_b=0
rex_b() { vm2_remote "cat /sys/class/infiniband/$DEV/ports/1/hw_counters/retry_exceeded"; }
xsrq_dead()
{
	[ "$(hw_stat retry_exceeded)" -gt "$rex_a" ] ||
		[ "$(rex_b)" -gt "$rex_b" ]
}

# xsrq DESC SV NC SIZE MTU [ARGS...]: ibv_xsrq_pingpong, the server (-c NC)
# in VM SV, NC clients in the other, ITERS messages of SIZE bytes each way
# per client at path MTU MTU (SIZE and MTU empty: the tool's defaults,
# 4096 and 1024), more ARGS for all of them.
xsrq_port=18600
xsrq()
{
	local desc=$1 sv=$2 nc=$3 size=$4 mtu=$5 gs gc ip sarg=()
	local tx rx msgs pkts bytes bad t0=$SECONDS try retried=

	shift 5
	desc="ibv_xsrq_pingpong $desc, ${size:-4096} bytes at path MTU ${mtu:-1024}"
	[ -n "$size$mtu" ] || desc+=" (the defaults)"
	if ! have ibv_xsrq_pingpong; then
		vm2_skip "$desc" "ibverbs-utils not installed"
		vm2_skip "$desc: A's counters" "ibverbs-utils not installed"
		vm2_skip "$desc: the wire" "ibverbs-utils not installed"
		return
	fi
	if [ "$sv" = A ]; then
		gs=$G_A gc=$G_B ip=$IP_A
	else
		gs=$G_B gc=$G_A ip=$IP_B
	fi
	[ -z "$size" ] || sarg+=(-s "$size")
	[ -z "$mtu" ] || sarg+=(-m "$mtu")
	sarg+=(-n "$ITERS" -d "$DEV" "$@")
	for try in 1 2 3; do
		tx=$(hw_stat sent_bytes) rx=$(hw_stat rcvd_bytes)
		rex_a=$(hw_stat retry_exceeded) rex_b=$(rex_b)
		cap_start "xsrq.$xsrq_port"
		VM2_PAIR_DEAD=xsrq_dead vm2_pair "$sv" "$nc" tcp_listening \
			"$xsrq_port" '^success$' '^success$' \
			ibv_xsrq_pingpong -c "$nc" -g "$gs" -p "$xsrq_port" \
			"${sarg[@]}" -- ibv_xsrq_pingpong -g "$gc" \
			-p "$xsrq_port" "${sarg[@]}" "$ip"
		bad=$?
		# The server heard from each client: a line "  remote: ..."
		# each.
		if [ "$bad" -eq 0 ] &&
		   [ "$(grep -c '^ *remote:' "$VM2_SLOG")" -ne "$nc" ]; then
			echo "# the server did not hear from $nc clients:"
			sed 's/^/#   /' "$VM2_SLOG"
			bad=1
		fi
		rm -f "$VM2_SLOG"
		cap_stop
		tx=$(($(hw_stat sent_bytes) - tx)) rx=$(($(hw_stat rcvd_bytes) - rx))
		xsrq_port=$((xsrq_port + 1))
		[ "$bad" -eq 2 ] || break
		echo "# try $try: a device gave up resending (retry_exceeded)"
		retried=", try $((try + 1)) of 3: the tries before it ran out of retries"
		bad=1
	done
	vm2_result "$bad" "$desc ($((SECONDS - t0)) s$retried)"
	# Each client and the server send ITERS messages to each other.
	size=${size:-4096} mtu=${mtu:-1024}
	msgs=$((nc * ITERS))
	bytes=$((msgs * size))
	pkts=$((msgs * ((size + mtu - 1) / mtu)))
	echo "# A's $DEV sent $tx and received $rx bytes"
	[ "$tx" -ge "$bytes" ] && [ "$rx" -ge "$bytes" ]
	vm2_result $? "$desc: A's $DEV counted >= $bytes bytes sent and received"
	wire_check "$desc" "$pkts" "$pkts"
}

# xserver SV: rdma_xserver -c x in VM SV, rdma_xclient -c x -s SV's address
# in the other: one 16-byte inline SEND into the server's XRC SRQ.
xserver_port=18700
xserver()
{
	local sv=$1 cv=A ip=$IP_B desc bells tx rx ok=0 na=1 nb=0 t0=$SECONDS

	if [ "$sv" = A ]; then
		cv=B ip=$IP_A na=0 nb=1
	fi
	desc="rdma_xserver -c x in $sv, rdma_xclient -c x in $cv"
	if ! have rdma_xserver; then
		vm2_skip "$desc" "rdmacm-utils not installed"
		vm2_skip "$desc: A's counters" "rdmacm-utils not installed"
		vm2_skip "$desc: the wire" "rdmacm-utils not installed"
		return
	fi
	bells=$(hw_stat doorbells) tx=$(hw_stat sent_bytes) rx=$(hw_stat rcvd_bytes)
	cap_start "xserver.$xserver_port"
	vm2_pair "$sv" 1 cm_listening "$xserver_port" ': end 0$' ': end 0$' \
		rdma_xserver -c x -p "$xserver_port" -- \
		rdma_xclient -c x -p "$xserver_port" -s "$ip"
	vm2_result $? "$desc ($((SECONDS - t0)) s)"
	rm -f "$VM2_SLOG"
	cap_stop
	bells=$(($(hw_stat doorbells) - bells))
	tx=$(($(hw_stat sent_bytes) - tx)) rx=$(($(hw_stat rcvd_bytes) - rx))
	echo "# A's $DEV: $bells doorbells, $tx bytes sent, $rx received"
	if [ "$cv" = A ]; then
		[ "$bells" -ge 1 ] && [ "$tx" -ge 16 ] || ok=1
	else
		[ "$rx" -ge 16 ] || ok=1
	fi
	vm2_result "$ok" "$desc: A's $DEV counted the message$([ "$cv" = B ] || echo ' and a doorbell')"
	wire_check "$desc" "$na" "$nb"
	xserver_port=$((xserver_port + 1))
}

vm_main()
{
	local prep= res0 res_b0

	have rdma_xserver && prep="modprobe rdma_ucm"
	vm2_setup "$IP_A" "$IP_B" "$DEV" ${prep:+"$prep"}

	G_A=$(job_gid) G_B=$(vm2_on B gid)
	res0=$(rdma_res)
	res_b0=$(vm2_on B res)
	echo "# GID indexes: A $G_A, B $G_B; resources of $DEV: A: $res0; B: $res_b0"

	xsrq "B <- 2 clients in A sharing their XRC domain" B 2 "" ""
	xsrq "B <- 2 clients in A sharing their XRC domain, CQ events" \
		B 2 70000 512 -e
	xsrq "A <- a client in B" A 1 "" ""
	xsrq "A <- a client in B" A 1 70000 4096
	xserver B
	xserver A

	vm2_check_left "$DEV" "$res0" "$res_b0"
	echo "# A:"
	job_stats | sed 's/^/#   /'
	echo "# B:"
	vm2_on B stats | sed 's/^/#   /'
	vm2_done
	finish
}

vm2_main "$@"
