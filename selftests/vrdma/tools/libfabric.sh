#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# libfabric (OFI) over the device: its verbs provider, as MPI and other
# HPC middleware use it, opens the device through libibverbs (our provider
# library) and connects through librdmacm, so it finds a RoCE device by the
# IP addresses of its netdev.  Two devices on the ends of a veth pair, each
# with its address:
#
#   fi_info -p verbs lists both devices as domains of the verbs provider
#     with MSG endpoints, each at its own address, and as RDM endpoints of
#     verbs;ofi_rxm (libfabric's reliable datagrams over verbs' RC)
#   fi_pingpong -c (the client checks every byte it receives against its
#     pattern), server and client on $D1: MSG endpoints of verbs, and RDM
#     endpoints of verbs;ofi_rxm, which sends 1 B and 4 KiB eagerly, 64 KiB
#     segmented, and 1 MiB by rendezvous (the receiver RDMA READs it); each
#     must exit 0 on both sides and print its result row, and the devices'
#     counters must have grown by the bytes exchanged
#   no QP, CQ, MR or PD left behind
#
# libfabric-bin ships fi_info and fi_pingpong only: Debian has no fabtests.
#
# VRDMA_TEST_TYPE=vrdma (default) or rxe (Soft-RoCE, to validate the test).
. "$(dirname "$0")/../lib/lib.sh"

TYPE=${VRDMA_TEST_TYPE:-vrdma}
SLOW=${VRDMA_TEST_SLOW:-1}
N0=lfb0 N1=lfb1
IP0=10.228.0.1 IP1=10.228.0.2
SERVER_TIMEOUT=$((150 * SLOW))
CLIENT_TIMEOUT=$((120 * SLOW))

[ "$(id -u)" -eq 0 ] || skip_all "must run as root (in the VM)"
command -v fi_pingpong >/dev/null || skip_all "libfabric-bin not installed"

use_device_type
D0=${TYPE}lf0 D1=${TYPE}lf1
modprobe rdma_ucm || exit 1

cleanup()
{
	stop_servers KILL
	rdma_links_del "$D0" "$D1"
	veth_routed_del "$N0" 231 170
	[ -z "$loaded_rxe" ] || rmmod rdma_rxe 2>/dev/null
	return 0
}
trap cleanup EXIT

cleanup
veth_routed "$N0" "$N1" "$IP0" "$IP1" 231 170 || exit 1
rdma_links_add || exit 1
res0="$(DEV=$D0 rdma_res) $(DEV=$D1 rdma_res)"

# fi_info ARGS...: its output, a block of "key: value" lines per endpoint
# it offers.
fi_list() { timeout -k 5 $((60 * SLOW)) fi_info "$@" 2>&1; }

# domains OUTPUT: the domains fi_info listed, sorted, space separated.
domains()
{
	sed -n 's/^[[:space:]]*domain:[[:space:]]*//p' <<<"$1" | sort -u |
		tr '\n' ' ' | sed 's/ $//'
}

# fi_check DESC EXPECTED ARGS...: fi_info ARGS lists the domains EXPECTED.
fi_check()
{
	local desc=$1 want=$2 out

	shift 2
	out=$(fi_list "$@")
	if [ "$(domains "$out")" = "$want" ]; then
		tap_result 0 "$desc"
	else
		printf '# fi_info %s: domains "%s", not "%s"\n' "$*" \
			"$(domains "$out")" "$want"
		printf '%s\n' "$out" | sed 's/^/#   /'
		tap_result 1 "$desc"
	fi
}

fi_check "fi_info -p verbs: MSG endpoints on $D0 and $D1" "$D0 $D1" \
	-p verbs -t FI_EP_MSG
fi_check "fi_info -p verbs -s $IP0: $D0 alone" "$D0" \
	-p verbs -t FI_EP_MSG -s "$IP0"
fi_check "fi_info -p verbs -s $IP1: $D1 alone" "$D1" \
	-p verbs -t FI_EP_MSG -s "$IP1"
fi_check "fi_info -p 'verbs;ofi_rxm': RDM endpoints on $D0 and $D1" \
	"$D0 $D1" -p 'verbs;ofi_rxm' -t FI_EP_RDM
msg_info=$(fi_list -p verbs -t FI_EP_MSG -d "$D0")
printf '%s\n' "$msg_info" | grep -m 1 -E '^[[:space:]]*fabric:' | sed 's/^ */# /'

# moved: the bytes both devices sent, as packets or inside the driver
# (vrdma); the packets they sent (rdma_rxe counts no bytes).
moved()
{
	local d c n=0

	for d in "$D0" "$D1"; do
		for c in sent_bytes loopback_bytes; do
			c=/sys/class/infiniband/$d/ports/1/hw_counters/$c
			[ -r "$c" ] && n=$((n + $(cat "$c")))
		done
		[ "$TYPE" != rxe ] ||
			n=$((n + $(cat "/sys/class/infiniband/$d/ports/1/hw_counters/sent_pkts")))
	done
	echo "$n"
}

# size_str BYTES: fi_pingpong's name of a size (4k, 64k, 1m).
size_str()
{
	if [ "$1" -ge $((1 << 20)) ]; then echo "$(($1 >> 20))m"
	elif [ "$1" -ge 1024 ]; then echo "$(($1 >> 10))k"
	else echo "$1"
	fi
}

# pingpong PROV EP CDEV SIZE ITERS: fi_pingpong -c, server on $D1, client
# on CDEV (their control channel on TCP port $port); its result row must
# count ITERS messages of SIZE sent and acknowledged, and the devices must
# have moved that many bytes both ways.
port=47700
TOOL_BAD='\[error\]|data check|corrupt'
TOOL_SHOW=1
pingpong()
{
	local prov=$1 ep=$2 cdev=$3 size=$4 iters=$5 b0 s

	s=$(size_str "$size")
	b0=$(moved)
	tool_pair tcp_listening "$port" \
		"fi_pingpong -p '$prov' -e $ep -c, $s x $iters, $D1 <- $cdev" \
		"^${s}[[:space:]]+${iters}[[:space:]]+=${iters}[[:space:]]" \
		fi_pingpong -p "$prov" -e "$ep" -d "$D1" -c -S "$size" \
		-I "$iters" -B "$port" -- \
		fi_pingpong -p "$prov" -e "$ep" -d "$cdev" -c -S "$size" \
		-I "$iters" -P "$port" "$IP1"
	port=$((port + 1))
	b0=$(($(moved) - b0))
	if [ "$TYPE" = rxe ]; then
		check "  ... $D0 and $D1 sent $b0 packets for it" \
			test "$b0" -ge $((2 * iters))
	else
		check "  ... $D0 and $D1 moved $b0 bytes for it" \
			test "$b0" -ge $((2 * size * iters))
	fi
}

# fi_pingpong's client has no source address option, and the verbs
# provider matches the server's address (rdma_cm resolves it to $D1, whose
# address it is) against the domain asked for: with -d $D0 it finds no
# match (fi_getinfo: -61, "handling of the socket address fails"), so the
# client is on $D1 too, talking to its own address.  ofi_rxm asks
# for a CQ of (its MSG endpoints' TX + RX size) x the universe size
# entries, by default (128 + 128) x 256 = 65536, more than either device
# has (vrdma 65535, rdma_rxe 32767), and libfabric 1.17 does not cap it:
# fi_enable fails with "Unable to create verbs CQ".  A universe of 16 (the
# peers ofi_rxm expects) asks for 4096.
export FI_UNIVERSE_SIZE=16
for run in "verbs msg $D1" "verbs;ofi_rxm rdm $D1"; do
	read -r prov ep cdev <<<"$run"
	pingpong "$prov" "$ep" "$cdev" 1 200
	pingpong "$prov" "$ep" "$cdev" 4096 200
	pingpong "$prov" "$ep" "$cdev" 65536 50
	pingpong "$prov" "$ep" "$cdev" 1048576 10
done

stop_servers KILL
same_res() { [ "$(DEV=$D0 rdma_res) $(DEV=$D1 rdma_res)" = "$res0" ]; }
check "no QP, CQ, MR or PD of libfabric left on $D0 or $D1" \
	wait_until $((30 * SLOW)) same_res
same_res || rdma resource show | sed 's/^/#   /'
finish
