#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# Wire interoperability with the kernel's Soft-RoCE (rdma_rxe), between two
# VMs.  Run on the host, it boots them with scripts/vm-run --peer-cmd:
#
#   VM A (primary)  vrdma0 (vrdma) on eth0, 10.77.0.1 and fd77::1
#   VM B (peer)     rxe0 (rdma_rxe) on eth0, 10.77.0.2 and fd77::2
#
# linked by a virtual Ethernet wire (MTU 9000, so perftest runs at path
# MTU 4096 and ibv_*_pingpong at their default 1024).  Both VMs run this
# same script, which walks the same list of rows in lock step (files in
# /vmshared): each row is one standard tool, one direction (vrdma client to
# rxe server, or the reverse), IPv4 or IPv6 GIDs; both sides must exit 0,
# and the client print its results.  VM A captures the wire (tcpdump); the
# host then checks every RoCEv2 packet with roce_pcap.py (layout, pad,
# ICRC, every RC request answered; packets counted per opcode) and, if
# tshark is installed, that Wireshark dissects every one as InfiniBand.
#
# A row whose feature vrdma does not have is skipped with
# the reason vrdma gave.  Output is TAP.  make check-long runs it.
#
#   selftests/vrdma/wire/interop.sh          # on the host: the whole test
#   INTEROP_ROWS='^(1|2)$' ...          # only the rows whose number matches
#   INTEROP_A_TYPE=rxe ...              # rxe in both VMs (tests the test)
. "$(dirname "$0")/../lib/lib.sh"

IP4_A=10.77.0.1 IP4_B=10.77.0.2
IP6_A=fd77::1 IP6_B=fd77::2
MC_GROUP=239.77.0.1
SLOW=${VRDMA_TEST_SLOW:-1}
# Per row: how long the client may run, and how long to wait for a server.
CLIENT_TIMEOUT=$((150 * SLOW))
LISTEN_TIMEOUT=$((60 * SLOW))
PORT0=18800

# The rows.  row DIR IP TOOL ARGS...: DIR v2r runs the client on vrdma and
# the server on rxe, r2v the reverse; IP picks the GIDs both use: 4, 6
# (fd77::/64) or ll (IPv6 link-local, fe80::/64).  The tool gets -d,
# -g/-x (GID), -p and the server's IPv4 address (for its TCP exchange);
# mckey gets the group MC_GROUP, its own address (-b) and, on the client,
# -s (send).
rows()
{
	row v2r 4 ibv_rc_pingpong --chk -n 20 -s 101
	row r2v 4 ibv_rc_pingpong --chk -n 20 -s 101
	row v2r 6 ibv_rc_pingpong --chk -n 10 -s 4099
	row r2v 6 ibv_rc_pingpong --chk -n 10 -s 4099 -e
	row v2r 4 ib_send_bw -s 65536 -n 10
	row r2v 4 ib_send_bw -s 65536 -n 10
	row v2r 4 ib_write_bw -s 65536 -n 10
	row r2v 4 ib_write_bw -s 65536 -n 10
	row v2r 4 ib_read_bw -s 65536 -n 10
	row r2v 4 ib_read_bw -s 65536 -n 10
	row v2r 6 ib_write_bw -s 10001 -n 10
	row r2v 6 ib_read_bw -s 10001 -n 10
	row v2r 6 ib_send_bw -s 3 -n 10
	row r2v 4 ib_send_bw -s 4097 -n 10 -m 1024
	row v2r 4 ib_write_lat -s 64 -n 100 -C
	row r2v 4 ib_send_lat -s 64 -n 100 -C
	row v2r 6 ib_read_lat -s 5000 -n 50 -C
	row v2r 4 ibv_ud_pingpong --chk -n 10 -s 57
	row r2v 6 ibv_ud_pingpong --chk -n 10 -s 1000
	row v2r 4 ibv_uc_pingpong --chk -n 10 -s 4099
	row r2v 4 ibv_uc_pingpong --chk -n 10 -s 101
	row v2r 4 ib_atomic_bw -n 10
	row r2v 6 ib_atomic_bw -n 10 -A CMP_AND_SWAP
	row v2r ll ibv_rc_pingpong --chk -n 10 -s 1000
	row r2v ll ib_write_bw -s 8192 -n 10
	row v2r 6 ib_send_bw -c UD -s 1024 -n 10
	row r2v 4 ib_send_bw -c UD -s 1024 -n 10
	row v2r 4 ib_write_bw -c UC -s 10001 -n 10
	row r2v 6 ib_send_bw -c UC -s 10001 -n 10
	# UD multicast through rdma_cm: the server (mckey) receives, the
	# client sends.  From rxe the sender is mcast_send (ours): mckey's
	# sender destroys its QP right after posting its sends unsignaled,
	# and rxe, whose requester runs later, then discards the sends it has
	# not yet put on the wire; mcast_send waits for every completion.
	row v2r 4 mckey -C 20 -S 1000
	row r2v 4 mcast_send -C 20 -S 100
	# ATOMIC WRITE and FLUSH (placement_peer, ours: no standard tool has
	# them): the target checks its memory after each step; keys without
	# the right get remote access errors.  Linux 6.2 on (ib_core's FLUSH
	# rights, rdma_rxe's support of both).  A FLUSH from vrdma to an
	# rdma_rxe that drops it (rxe_drops_flush) is run as flush_dropped.
	row v2r 4 placement_peer -t atomic_write
	row r2v 6 placement_peer -t atomic_write
	row v2r 4 placement_peer -t flush
	row r2v 4 placement_peer -t flush
	# A link slower than the QP timeout (4.096 us * 2^14 = 67 ms, the
	# pingpongs' own): every request times out and its first packet is
	# sent again; the answers to what was sent before, and to that copy (an
	# ACK of the latest PSN the responder executed), arrive late and are
	# answers all the same.  Messages of several packets each.
	slow_row v2r 4 ibv_rc_pingpong --chk -n 10
	slow_row r2v 4 ibv_rc_pingpong --chk -n 10
	slow_row v2r 4 ib_send_bw -s 65536 -n 20 -u 14
	slow_row r2v 4 ib_send_bw -s 65536 -n 20 -u 14
	slow_row v2r 4 ib_write_bw -s 65536 -n 20 -u 14
	slow_row r2v 4 ib_write_bw -s 65536 -n 20 -u 14
	slow_row v2r 4 ib_read_bw -s 65536 -n 20 -u 14
	slow_row r2v 4 ib_read_bw -s 65536 -n 20 -u 14
	slow_row v2r 4 ib_atomic_bw -n 20 -u 14
	slow_row r2v 4 ib_atomic_bw -n 20 -u 14
}

# The one-way delay of slow_row's link, each VM's egress: 2 x 50 ms.
SLOW_DELAY=50ms
# slow_row DIR IP TOOL ARGS...: row, with netem delaying both directions.
slow_row()
{
	SLOW_LINK=1 row "$@"
}

# ---------------------------------------------------------------- host ----

host_main()
{
	local top out rc vmrc line n=0 a
	local -a names

	top=$(cd "$(dirname "$0")/../../.." && pwd)
	out=${INTEROP_OUT:-$top/out/interop}
	command -v tcpdump >/dev/null || skip_all "tcpdump not installed"
	command -v ibv_rc_pingpong >/dev/null || skip_all "ibverbs-utils not installed"
	command -v ib_send_bw >/dev/null || skip_all "perftest not installed"
	[ -f "$top/vrdma.ko" ] || skip_all "vrdma.ko not built"
	for a in placement_peer mcast_send; do
		[ -x "$(dirname "$0")/../build/$a" ] ||
			skip_all "selftests not built (build/$a)"
	done
	rm -rf "$out"
	mkdir -p "$out"

	vm2_boot "$out" $((1500 * SLOW)) selftests/vrdma/wire/interop.sh \
		--env INTEROP_ROWS --env INTEROP_A_TYPE
	vmrc=$?

	# The rows' results, as VM A recorded them.
	while IFS=$'\t' read -r rc line; do
		case $rc in
		skip)
			_tap_n=$((_tap_n + 1))
			echo "ok $_tap_n ${line%%$'\t'*} # SKIP ${line#*$'\t'}"
			;;
		*)
			tap_result "$rc" "$line"
			;;
		esac
		n=$((n + 1))
	done < <(cat "$out/primary/results" 2>/dev/null)
	check_eq "every row ran" "$(rows_count)" "$n"
	check_eq "the VMs ran cleanly (vm-run exit status)" 0 "$vmrc"
	# Whatever rxe sent, vrdma found well formed.
	[ "$TYPE_A" != vrdma ] ||
		check_eq "vrdma counted no ICRC error or malformed packet" "0 0" \
			"$(sed -n 's/.* icrc_errors \([0-9]*\) malformed \([0-9]*\) .*/\1 \2/p' \
			   "$out/primary/counters" 2>/dev/null)"

	# The checks of the capture below need all of it.
	check_eq "the capture lost no packet (tcpdump: dropped by kernel)" 0 \
		"$(sed -n 's/^\([0-9]*\) packets dropped by kernel$/\1/p' \
		   "$out/primary/tcpdump.log" 2>/dev/null)"

	# Every RoCEv2 packet on the wire, with a checker of our own.
	# (vm-run gives the VMs the MACs 52:54:00:00:00:01 and :02.)
	a=$TYPE_A
	[ "$a" != rxe ] || a=rxe-A
	names=(--name "$IP4_A=$a" --name "$IP6_A=$a"
	       --name "fe80::5054:ff:fe00:1=$a"
	       --name "$IP4_B=rxe" --name "$IP6_B=rxe"
	       --name "fe80::5054:ff:fe00:2=rxe")
	if [ -s "$out/primary/interop.pcap" ]; then
		while IFS= read -r line; do
			case $line in
			"ok "*) tap_result 0 "pcap: $(tap_desc "$line")" ;;
			"not ok "*) tap_result 1 "pcap: $(tap_desc "$line")" ;;
			"#"*) echo "$line" ;;
			esac
		done < <(python3 "$(dirname "$0")/roce_pcap.py" "${names[@]}" \
			 "$out/primary/interop.pcap" 2>&1 | tee "$out/roce_pcap.log")
		tshark_check "$out/primary/interop.pcap" "$out/roce_pcap.log"
	else
		tap_result 1 "the wire was captured"
	fi
	finish
}

# "ok 3 text" / "not ok 3 text" -> "text"
tap_desc() { sed -E 's/^(not )?ok [0-9]+ //' <<<"$1"; }

# How many rows run (INTEROP_ROWS may select some).
rows_count()
{
	local count=0 n=0
	row()
	{
		n=$((n + 1))
		[ -z "${INTEROP_ROWS:-}" ] || [[ $n =~ $INTEROP_ROWS ]] ||
			return 0
		count=$((count + 1))
	}
	rows
	echo "$count"
}

# tshark_check PCAP LOG: Wireshark's own dissector must see every UDP packet
# to port 4791 as InfiniBand (RRoCE), none of them malformed, and count
# the same opcodes as roce_pcap.py did (its LOG).  Wireshark 4.0 does not
# verify the ICRC; roce_pcap.py does.
tshark_check()
{
	local total ib bad h
	local -a ts=(tshark -n -r "$1" -o infiniband.rroce.port:4791)
	# Wireshark calls a zero UDP checksum over IPv6 an error; RoCEv2
	# senders (rdma_rxe as vrdma) leave it 0, as RFC 6935 allows tunnels.
	local filter='udp.dstport == 4791 && (_ws.malformed ||
		(_ws.expert.severity >= warning && !(ipv6 && udp.checksum == 0)))'

	if ! command -v tshark >/dev/null; then
		skip_one "tshark dissects every packet as RoCEv2" \
			"tshark not installed"
		return
	fi
	# The payloads are test patterns: no guessing of upper protocols
	# (RPC-over-RDMA, SMB Direct...) in them, with the heuristics this
	# tshark has (an unknown name is an error).
	for h in rpcrdma_infiniband smb_direct_infiniband smcr_infiniband \
		 iser_infiniband sdp_infiniband fc_infiniband eth_over_ib \
		 lnet_ib nvme_rdma; do
		! tshark -n -r "$1" -c 1 --disable-heuristic "$h" >/dev/null 2>&1 ||
			ts+=(--disable-heuristic "$h")
	done
	total=$("${ts[@]}" -Y 'udp.dstport == 4791' 2>/dev/null | wc -l)
	ib=$("${ts[@]}" -Y 'udp.dstport == 4791 && infiniband.bth.opcode' 2>/dev/null | wc -l)
	bad=$("${ts[@]}" -Y "$filter" 2>/dev/null | wc -l)
	echo "# tshark: $total packets to UDP 4791, $ib with a BTH, $bad malformed or with warnings"
	[ "$bad" -eq 0 ] ||
		"${ts[@]}" -Y "$filter" -V 2>/dev/null | grep -E -B 3 'Expert|Malformed' |
			head -n 30 | sed 's/^/#   /'
	check_eq "tshark dissects every packet to UDP 4791 as InfiniBand" "$total" "$ib"
	check_eq "tshark finds no malformed packet" 0 "$bad"
	# Cross-check the two dissectors: the same opcode counts.
	check_eq "tshark and roce_pcap.py count the same opcodes" \
		"$(sed -n 's/^# opcode counts: //p' "$2")" \
		"$("${ts[@]}" -Y 'udp.dstport == 4791' -T fields -e infiniband.bth.opcode \
		   2>/dev/null | sort -n | uniq -c | awk '{printf "%s%d:%d", (NR > 1 ? " " : ""), $2, $1}')"
}

# ------------------------------------------------------------ both VMs ----

S=${VRDMA_VM_SHARED:-/vmshared}
PLACEMENT=$(cd "$(dirname "$0")/.." && pwd)/build/placement_peer
MCAST_SEND=$(cd "$(dirname "$0")/.." && pwd)/build/mcast_send
ROLE=${VRDMA_VM_ROLE:-}
# Side a (the primary VM, which records the results) runs vrdma, side b
# rxe; INTEROP_A_TYPE=rxe runs rxe on both, to validate the test itself.
TYPE_A=${INTEROP_A_TYPE:-vrdma}

# gid_index DEV 4|6|ll: the RoCE v2 GID of DEV with our IPv4 or IPv6
# address, or its IPv6 link-local one.
gid_index()
{
	local d=/sys/class/infiniband/$1/ports/1 pat f i

	case $2 in
	4) pat='^0000:0000:0000:0000:0000:ffff:0a4d:000' ;;
	6) pat='^fd77:0000:0000:0000:0000:0000:0000:000' ;;
	*) pat='^fe80:0000:0000:0000:' ;;
	esac
	while read -r f; do
		i=${f##*/}
		if [ "$(cat "$d/gid_attrs/types/$i" 2>/dev/null)" = "RoCE v2" ]; then
			echo "$i"
			return 0
		fi
	done < <(grep -l "$pat" "$d"/gids/* 2>/dev/null)
	return 1
}

# vm_setup: eth0 addressed, $DEV of $TYPE on it with its GIDs.
vm_setup()
{
	local ip4=$IP4_A ip6=$IP6_A

	[ "$SIDE" = a ] || ip4=$IP4_B ip6=$IP6_B
	if [ "$TYPE" = vrdma ]; then
		! lsmod | grep -q '^rdma_rxe ' || rmmod rdma_rxe || return 1
		vrdma_load || return 1
	else
		modprobe rdma_rxe || return 1
		modprobe ib_uverbs || return 1
	fi
	ip -batch - <<-EOF || return 1
		link set eth0 mtu 9000
		addr add $ip4/24 dev eth0
		addr add $ip6/64 dev eth0 nodad
		link set eth0 up
	EOF
	rdma link add "$DEV" type "$TYPE" netdev eth0 || return 1
	modprobe rdma_ucm || return 1	# mckey
	wait_until $((30 * SLOW)) gid_index "$DEV" 4 &&
		wait_until $((30 * SLOW)) gid_index "$DEV" 6 &&
		wait_until $((30 * SLOW)) gid_index "$DEV" ll
}

# rxe_drops_flush: is VM B's rdma_rxe one that drops the FLUSHes of
# the IBA, vrdma's?  Its opcode table (Linux 6.2, its first FLUSH, to
# 6.12, the newest tested here) gives RC_FLUSH no payload offset, so it
# computes a FLUSH's ICRC over the BTH, FETH and RETH twice: it checks
# FLUSHes that way, and sends them so (vrdma takes that form, counted in
# rxe_flush_icrc).  rxe in both VMs agrees with itself.
rxe_drops_flush()
{
	local v

	[ "$TYPE_A" != rxe ] || return 1
	v=$(cut -d. -f1,2 "$S/kernel.b" 2>/dev/null)
	[[ $v =~ ^6\.([0-9]+)$ ]] || return 1
	((BASH_REMATCH[1] >= 2 && BASH_REMATCH[1] <= 12))
}

# unsupported TOOL ARGS...: why vrdma (or, for placement_peer, rxe in VM
# B: its capabilities in $S/caps.b) cannot run TOOL, or nothing if it can.
unsupported()
{
	local p pid log side cap why=

	case $1 in
	placement_peer)
		cap=atomic_write
		[[ $3 != flush* ]] || cap=flush_global
		for side in b a; do
			p=$(cat "$S/caps.$side" 2>/dev/null)
			[[ $p == *"$cap 1"* ]] && continue
			printf '%s%s on Linux %s does not announce %s' "${why:+; }" \
				"$(cat "$S/type.$side" 2>/dev/null)" \
				"$(cat "$S/kernel.$side" 2>/dev/null)" "${cap^^}"
			why=1
		done
		echo
		;;
	ib_atomic_bw)
		p=$(devinfo_field "$DEV" atomic_cap)
		case $p in ATOMIC_NONE*) echo "vrdma: atomic_cap $p" ;; esac
		;;
	ibv_ud_pingpong | ibv_uc_pingpong)
		# The server creates its QP before it listens.
		log=$(mktemp)
		p=$((PORT0 - 1))
		"$1" -d "$DEV" -g "$G4" -p "$p" >"$log" 2>&1 &
		pid=$!
		if wait_until $((20 * SLOW)) sh -c "! kill -0 $pid 2>/dev/null || ss -Hltn 'sport = :$p' | grep -q ."; then
			if ! kill -0 "$pid" 2>/dev/null; then
				echo "vrdma: $1: $(head -n 1 "$log")"
			fi
		fi
		kill "$pid" 2>/dev/null
		wait "$pid" 2>/dev/null
		rm -f "$log"
		;;
	esac
}

# tool_cmd N IP TOOL ARGS...: the command line of row N for this side in
# CMD; the client adds the server's address (in SERVER).
tool_cmd()
{
	local n=$1 ip=$2 tool=$3 g
	shift 3

	case $ip in
	4) g=$G4 ;;
	6) g=$G6 ;;
	*) g=$GLL ;;
	esac
	case $tool in
	mckey)
		# Line-buffered: the server's readiness is read from its log.
		CMD=(stdbuf -oL mckey -m "$MC_GROUP" -b "$MY_IP4" "$@")
		[ -z "$SERVER" ] || CMD+=(-s)
		return
		;;
	mcast_send)
		# mckey receives; the sender sends from GID g (IPv4).
		if [ -z "$SERVER" ]; then
			CMD=(stdbuf -oL mckey -m "$MC_GROUP" -b "$MY_IP4" "$@")
		else
			CMD=("$MCAST_SEND" -d "$DEV" -g "$g" -m "$MC_GROUP" "$@")
		fi
		return
		;;
	ibv_*) CMD=("$tool" -d "$DEV" -g "$g" -p $((PORT0 + n)) "$@") ;;
	placement_peer)
		CMD=("$PLACEMENT" -d "$DEV" -g "$g" -p $((PORT0 + n)) "$@")
		;;
	*) CMD=("$tool" -d "$DEV" -x "$g" -p $((PORT0 + n)) -F "$@") ;;
	esac
	[ -z "$SERVER" ] || CMD+=("$SERVER")
}

# What a successful client prints.
ok_pattern()
{
	case $1 in
	mckey) echo 'return status 0' ;;
	mcast_send) echo '^mcast_send: [1-9][0-9]* sent, 0 failed' ;;
	placement_peer) echo ': [1-9][0-9]* checks passed, 0 failed' ;;
	ibv_*) echo '[0-9]+ iters in' ;;
	*) echo '^[[:space:]]*[0-9]+[[:space:]]+[0-9]+[[:space:]]+[0-9.]+' ;;
	esac
}

# run_server N CMD...: serve row N, tell the client when listening, record
# the exit status; give up soon after the client did.
run_server()
{
	local n=$1 pid t
	shift
	timeout -k 5 $((CLIENT_TIMEOUT + LISTEN_TIMEOUT)) "$@" >"$S/$n.server.log" 2>&1 &
	pid=$!
	# mckey has joined and posted its receives once it says so.
	if wait_until "$LISTEN_TIMEOUT" sh -c "ss -Hltn 'sport = :$((PORT0 + n))' | grep -q . || grep -q 'receiving data transfers' '$S/$n.server.log' || ! kill -0 $pid"; then
		touch "$S/$n.listening"
	fi
	while kill -0 "$pid" 2>/dev/null; do
		if [ -e "$S/$n.client.rc" ]; then
			t=$SECONDS
			[ "$(cat "$S/$n.client.rc")" = 0 ] && t=$((SECONDS + 30 * SLOW))
			wait_until $((t + 5 - SECONDS)) sh -c "! kill -0 $pid"
			kill "$pid" 2>/dev/null
			break
		fi
		sleep 0.2
	done
	wait "$pid"
	echo $? >"$S/$n.server.rc"
}

run_client()
{
	local n=$1 rc
	shift
	if ! wait_file $((LISTEN_TIMEOUT + 10)) "$S/$n.listening" "$S/$n.server.rc"; then
		echo "server of row $n never listened" >"$S/$n.client.log"
		echo 125 >"$S/$n.client.rc"
		return
	fi
	if [ ! -e "$S/$n.listening" ]; then
		echo "server of row $n died before listening" >"$S/$n.client.log"
		echo 125 >"$S/$n.client.rc"
		return
	fi
	timeout -k 5 "$CLIENT_TIMEOUT" "$@" >"$S/$n.client.log" 2>&1
	rc=$?
	echo $rc >"$S/$n.client.rc"
}

# row DIR IP TOOL ARGS...: run one row on this side; VM A records it.
row()
{
	local dir=$1 ip=$2 tool=$3 n why desc srv cli t0 ok=0 peer_ip ipdesc
	shift 3
	NROW=$((NROW + 1))
	n=$NROW
	case $ip in
	ll) ipdesc="IPv6 link-local" ;;
	*) ipdesc=IPv$ip ;;
	esac
	[ -z "${SLOW_LINK:-}" ] || ipdesc="$ipdesc, $SLOW_DELAY each way"
	if [ "$dir" = v2r ]; then
		desc="$tool $* $TYPE_A -> rxe $ipdesc"
		srv=b
	else
		desc="$tool $* rxe -> $TYPE_A $ipdesc"
		srv=a
	fi
	if [ -n "${INTEROP_ROWS:-}" ] && ! [[ $n =~ $INTEROP_ROWS ]]; then
		return
	fi

	if [ "$tool $1 $2 $dir" = "placement_peer -t flush v2r" ] &&
	   rxe_drops_flush; then
		set -- -t flush_dropped
		desc="$tool $* $TYPE_A -> rxe $ipdesc"
	fi
	if [ "$SIDE" = a ]; then
		why=$(unsupported "$tool" "$@")
		if [ -n "$why" ]; then
			echo "$why" >"$S/$n.skip"
			printf 'skip\t%s\t%s\n' "$desc (row $n)" "$why" >>/vmout/results
			echo "row $n: $desc: skipped: $why"
			return
		fi
		touch "$S/$n.go"
	elif ! wait_file $((120 * SLOW)) "$S/$n.go" "$S/$n.skip"; then
		echo "row $n: no word from VM A"
		return
	elif [ -e "$S/$n.skip" ]; then
		return
	fi

	t0=$SECONDS
	[ -z "${SLOW_LINK:-}" ] ||
		tc qdisc replace dev eth0 root netem delay "$SLOW_DELAY" limit 10000
	peer_ip=$IP4_A MY_IP4=$IP4_B
	[ "$SIDE" = a ] && peer_ip=$IP4_B MY_IP4=$IP4_A
	if [ "$SIDE" = "$srv" ]; then
		SERVER=
		tool_cmd "$n" "$ip" "$tool" "$@"
		run_server "$n" "${CMD[@]}"
	else
		SERVER=$peer_ip
		tool_cmd "$n" "$ip" "$tool" "$@"
		run_client "$n" "${CMD[@]}"
	fi

	if [ "$SIDE" = a ]; then
		wait_file $((CLIENT_TIMEOUT + LISTEN_TIMEOUT + 60)) "$S/$n.server.rc"
		wait_file 60 "$S/$n.client.rc"
		srv=$(cat "$S/$n.server.rc" 2>/dev/null || echo none)
		cli=$(cat "$S/$n.client.rc" 2>/dev/null || echo none)
		if [ "$srv" = 0 ] && [ "$cli" = 0 ] &&
		   grep -Eq -- "$(ok_pattern "$tool")" "$S/$n.client.log" &&
		   ! grep -qi 'invalid data' "$S/$n.client.log" "$S/$n.server.log"; then
			ok=0
		else
			ok=1
			echo "row $n: $desc: client exit $cli, server exit $srv"
			echo "client log:"
			sed 's/^/  /' "$S/$n.client.log"
			echo "server log:"
			sed 's/^/  /' "$S/$n.server.log"
		fi
		printf '%s\t%s\n' "$ok" "$desc (row $n, $((SECONDS - t0)) s)" >>/vmout/results
		echo "row $n: $desc: $([ $ok = 0 ] && echo ok || echo FAILED) in $((SECONDS - t0)) s"
		touch "$S/$n.done"
	else
		wait_file $((CLIENT_TIMEOUT + LISTEN_TIMEOUT + 120)) "$S/$n.done"
	fi
	[ -z "${SLOW_LINK:-}" ] || tc qdisc del dev eth0 root 2>/dev/null
	return 0
}

vm_main()
{
	local tcpdump_pid=

	if [ "$ROLE" = primary ]; then
		SIDE=a TYPE=$TYPE_A
	else
		SIDE=b TYPE=rxe
	fi
	DEV=${TYPE}0
	if ! vm_setup; then
		echo "setup of $DEV failed"
		touch "$S/setup.failed"
		exit 1
	fi
	# What each side's device does of ATOMIC WRITE and FLUSH.
	"$PLACEMENT" -d "$DEV" --caps >"$S/caps.$SIDE" 2>&1
	echo "$TYPE" >"$S/type.$SIDE"
	uname -r >"$S/kernel.$SIDE"
	echo "$DEV: $(cat "$S/caps.$SIDE")"
	G4=$(gid_index "$DEV" 4)
	G6=$(gid_index "$DEV" 6)
	GLL=$(gid_index "$DEV" ll)
	echo "$DEV on eth0: GIDs $G4 (IPv4), $G6 (IPv6), $GLL (link-local);" \
		"$(ip -br addr show eth0)"

	if [ "$SIDE" = a ]; then
		: >/vmout/results
		# A 64 MiB capture buffer holds the whole run (about 30 MB):
		# a tcpdump that the loaded VM schedules late loses nothing, and
		# the checks below need every packet.
		tcpdump -i eth0 -Z root -B 65536 -w /vmout/interop.pcap -U \
			'udp port 4791 or arp or icmp or icmp6' 2>/vmout/tcpdump.log &
		tcpdump_pid=$!
		wait_until 20 grep -q listening /vmout/tcpdump.log
	fi
	touch "$S/ready.$SIDE"
	if ! wait_file $((120 * SLOW)) "$S/ready.a" "$S/setup.failed" ||
	   ! wait_file $((120 * SLOW)) "$S/ready.b" "$S/setup.failed" ||
	   [ -e "$S/setup.failed" ]; then
		echo "the other VM did not come up"
		exit 1
	fi

	NROW=0
	rows

	if [ "$SIDE" = a ]; then
		sleep 1
		kill "$tcpdump_pid"
		wait "$tcpdump_pid"
		sed 's/^/tcpdump: /' /vmout/tcpdump.log
		rdma statistic show link "$DEV/1" | tee /vmout/counters
		wait_file 60 "$S/rxe.counters" && cat "$S/rxe.counters"
		touch "$S/finished"
	else
		rdma statistic show link "$DEV/1" >"$S/rxe.counters"
		wait_file 120 "$S/finished"
	fi
	exit 0
}

if [ -n "${VRDMA_VM:-}" ]; then
	vm_main
else
	host_main
fi
