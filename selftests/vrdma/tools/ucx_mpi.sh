#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# UCX and Open MPI over the device.  Two devices on the ends of a veth
# pair whose second end lives in a network namespace of its own, so that
# their packets cross the veth, not the driver's shortcut between devices
# of one namespace.  The processes all run in the first namespace: RDMA
# devices are seen from every namespace, and mpirun's ranks must reach it
# over 127.0.0.1.
#  - ucx_info -d lists both with the rc_verbs and ud_verbs transports;
#  - ucx_perftest between them, each side pinned to its device with
#    UCX_NET_DEVICES: tag_bw with UCX_TLS=rc_v (rc_verbs, with ud_verbs
#    only to wire up: rc_verbs alone has no way to exchange its connection
#    addresses), tag_lat with UCX_TLS=ud_verbs (UCX_MPI_ALL=1: tag_lat,
#    tag_bw and ucp_put_bw with both); both sides must exit 0 and the
#    client must report its final line;
#  - mpi_xfer (mpi_xfer.c) as two Open MPI ranks over UCX (pml ucx, no BTL
#    but self, UCX_TLS=rc_v; rank 0 on one device, rank 1 on the other):
#    16 MiB and smaller messages each way, every byte checked; each
#    device's byte counters and the veth's must show the 16 MiB.
# UCX_TLS leaves out shared memory, TCP and the self transport, so nothing
# can quietly take another path.
#
# Environment: UCX_MPI_MIB (size of the large MPI message, default 16),
# UCX_MPI_ITERS (ucx_perftest iterations, default 20).
. "$(dirname "$0")/../lib/lib.sh"

D0=vrdmaux0 D1=vrdmaux1
N0=uxv0 N1=uxv1 NS=uxpeer
IP0=10.219.0.1 IP1=10.219.0.2
MIB=${UCX_MPI_MIB:-16}
ITERS=${UCX_MPI_ITERS:-20}
SLOW=${VRDMA_TEST_SLOW:-1}
MPI_XFER=$(dirname "$0")/../build/mpi_xfer
port=18800

[ "$(id -u)" -eq 0 ] || skip_all "must run as root (in the VM)"
command -v ucx_perftest >/dev/null || skip_all "ucx-utils not installed"
! lsmod | grep -q '^rdma_rxe ' || rmmod rdma_rxe || exit 1
vrdma_load || exit 1

cleanup()
{
	stop_servers TERM
	rdma_links_del "$D0" "$D1"
	ip link del "$N0" 2>/dev/null
	ip netns del "$NS" 2>/dev/null
	return 0
}
trap cleanup EXIT

cleanup
# MTU 9000: active MTU 4096, a quarter of the packets of 1024.
ip -batch - <<-EOF || exit 1
	netns add $NS
	link add $N0 mtu 9000 type veth peer name $N1 mtu 9000 netns $NS
	addr add $IP0/24 dev $N0
	link set $N0 up
EOF
ip -n "$NS" -batch - <<-EOF || exit 1
	addr add $IP1/24 dev $N1
	link set $N1 up
	link set lo up
EOF
rdma link add "$D0" type vrdma netdev "$N0" || exit 1
ip netns exec "$NS" rdma link add "$D1" type vrdma netdev "$N1" || exit 1
check_gids "$D0" "$D1"

# ucx_info -d, one block per memory domain: DEV's must list TL on DEV:1.
has_tl()
{
	printf '%s\n' "$1" | awk -v md="$2" -v tl="$3" '
		/# Memory domain:/ { in_md = ($4 == md) }
		in_md && /# *Transport:/ { t = $3 }
		in_md && /# *Device:/ && t == tl && $3 == md ":1" { found = 1 }
		END { exit !found }'
}
info=$(UCX_NET_DEVICES=$D0:1,$D1:1 ucx_info -d 2>&1)
for d in "$D0" "$D1"; do
	for tl in rc_verbs ud_verbs; do
		if has_tl "$info" "$d" "$tl"; then
			tap_result 0 "ucx_info -d: $tl on $d:1"
		else
			printf '%s\n' "$info" | grep -E 'domain|Transport|Device|ERR|WARN' |
				sed 's/^/#   /'
			tap_result 1 "ucx_info -d: $tl on $d:1"
		fi
	done
done

# ucx_pair TLS TEST SIZE: ucx_perftest server on D1, client on D0 (its
# out-of-band connection over 127.0.0.1), by tool_pair (lib.sh): both must
# exit 0 and the client must print its final line.
SERVER_TIMEOUT=$((90 * SLOW))
CLIENT_TIMEOUT=$((80 * SLOW))
TOOL_WAIT=$((30 * SLOW))
TOOL_SHOW=1
ucx_pair()
{
	local tls=$1 test=$2 size=$3
	local args=(-t "$test" -s "$size" -n "$ITERS" -w 2 -p "$port")

	TOOL_SRV_ARGS=()
	TOOL_CLI_ARGS=(127.0.0.1)
	tool_pair tcp_listening "$port" \
		"ucx_perftest -t $test -s $size, UCX_TLS=$tls, $D1 <- $D0" \
		'^Final:' \
		env UCX_TLS="$tls" UCX_NET_DEVICES="$D1:1" ucx_perftest "${args[@]}" -- \
		env UCX_TLS="$tls" UCX_NET_DEVICES="$D0:1" ucx_perftest "${args[@]}"
	port=$((port + 1))
}

# Each pair takes 15-40 s under TCG: by default rc_verbs for tag_bw and
# ud_verbs for tag_lat.
if [ -n "${UCX_MPI_ALL:-}" ]; then
	for tls in rc_v ud_verbs; do
		ucx_pair "$tls" tag_lat 8
		ucx_pair "$tls" tag_bw 65536
		ucx_pair "$tls" ucp_put_bw 65536
	done
else
	ucx_pair rc_v tag_bw 65536
	ucx_pair ud_verbs tag_lat 8
fi

# hw_stat DEV COUNTER: one of DEV's port counters.
hw_stat() { cat "/sys/class/infiniband/$1/ports/1/hw_counters/$2"; }

if ! command -v mpirun >/dev/null || [ ! -x "$MPI_XFER" ]; then
	skip_one "mpirun -np 2 mpi_xfer over UCX" \
		"mpirun (openmpi-bin) or $MPI_XFER (libopenmpi-dev) missing"
	finish
fi
tx0=$(hw_stat "$D0" sent_bytes) rx0=$(hw_stat "$D0" rcvd_bytes)
tx1=$(hw_stat "$D1" sent_bytes)
ntx0=$(cat "/sys/class/net/$N0/statistics/tx_bytes")
nrx0=$(cat "/sys/class/net/$N0/statistics/rx_bytes")
t0=$SECONDS
out=$(timeout -k 5 $((150 * SLOW)) mpirun --allow-run-as-root --oversubscribe \
	--mca pml ucx --mca btl self -x UCX_TLS=rc_v \
	-np 1 env UCX_NET_DEVICES="$D0:1" "$MPI_XFER" "$MIB" : \
	-np 1 env UCX_NET_DEVICES="$D1:1" "$MPI_XFER" "$MIB" 2>&1)
rc=$?
printf '%s\n' "$out" | sed 's/^/# /'
check_eq "mpirun -np 2 mpi_xfer $MIB MiB both ways over UCX exits 0 ($((SECONDS - t0)) s)" 0 "$rc"
check_match "mpi_xfer: every byte right" "^mpi_xfer: $MIB MiB .*: ok" "$out"
bytes=$((MIB << 20))
sent0=$(($(hw_stat "$D0" sent_bytes) - tx0))
rcvd0=$(($(hw_stat "$D0" rcvd_bytes) - rx0))
sent1=$(($(hw_stat "$D1" sent_bytes) - tx1))
echo "# $D0 sent $sent0 and received $rcvd0 bytes, $D1 sent $sent1"
check "MPI's $MIB MiB left through $D0" test "$sent0" -ge "$bytes"
check "MPI's $MIB MiB left through $D1" test "$sent1" -ge "$bytes"
check "$D0 received $MIB MiB" test "$rcvd0" -ge "$bytes"
# Not delivered inside the driver (as UCX's endpoints to their own rank
# are): on the wire, both ways.
ntx0=$(($(cat "/sys/class/net/$N0/statistics/tx_bytes") - ntx0))
nrx0=$(($(cat "/sys/class/net/$N0/statistics/rx_bytes") - nrx0))
echo "# $N0 sent $ntx0 and received $nrx0 bytes"
check "the $MIB MiB crossed the veth both ways" \
	test "$ntx0" -ge "$bytes" -a "$nrx0" -ge "$bytes"
# How the transport fared (retransmits, timeouts) over the whole test.
printf 'statistic show link %s/1\nstatistic show link %s/1\n' "$D0" "$D1" |
	rdma -b - | sed 's/^/# /'
finish
