#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# UCX and Open MPI between two VMs, each with a vrdma device on its end of
# a virtual Ethernet wire (scripts/vm-run --peer-cmd):
#
#   VM A (primary, vrdma-vm)    vrdma0 on eth0, 10.78.0.1
#   VM B (peer, vrdma-peer)     vrdma0 on eth0, 10.78.0.2
#
# VM A drives; VM B runs the commands A hands it through the shared
# directory (lib.sh's vm2_remote and vm2_serve), which also serves Open
# MPI as its remote shell (plm_rsh_agent: this script with --rsh, in place
# of ssh).  Checks: ucx_perftest tag_bw,
# ucp_put_bw (UCX_TLS=rc_v) and tag_lat (UCX_TLS=ud_verbs) from A to a
# server in B, both exiting 0; mpi_xfer as rank 0 in A and rank 1 in B
# over pml ucx (UCX_TLS=rc_v), 16 MiB and smaller messages both ways,
# every byte checked, and A's vrdma0 byte counters showing the traffic.
# Output is TAP; make check-long runs it (on the host: it boots the VMs).
#
# UCX_MPI_VM_ARGS: more scripts/vm-run options, e.g. --debug-kernel (with
# vrdma.ko built for that kernel).
SELF_DIR=$(cd "$(dirname "$0")" && pwd)

if [ "${1:-}" = --rsh ]; then
	# Open MPI's remote shell in VM A: --rsh HOST CMD... (lib.sh's TAP
	# header is not for orted).
	. "$(dirname "$0")/../lib/lib.sh" >/dev/null
	shift 2
	vm2_remote "$*"
	exit
fi

. "$(dirname "$0")/../lib/lib.sh"

IP_A=10.78.0.1 IP_B=10.78.0.2
DEV=vrdma0
SLOW=${VRDMA_TEST_SLOW:-1}
MIB=${UCX_MPI_MIB:-16}
ITERS=${UCX_MPI_ITERS:-20}

# ---------------------------------------------------------------- host ----

host_main()
{
	local want=3

	command -v ucx_perftest >/dev/null || skip_all "ucx-utils not installed"
	vm2_host "${UCX_MPI_OUT:-$VRDMA_TOP/out/ucx_mpi_2vm}" 1200 \
		"${UCX_MPI_VM_ARGS:-}"
	# The VMs see this machine's root: the same tools.
	if command -v mpirun >/dev/null && [ -x "$SELF_DIR/../build/mpi_xfer" ]; then
		want=6
	else
		skip_one "mpi_xfer, rank 0 in A, rank 1 in B" \
			"mpirun (openmpi-bin) or build/mpi_xfer (libopenmpi-dev) missing"
	fi
	vm2_host_end "$want"
}

# ------------------------------------------------------------------ VM ----

# ucx_pair TLS TEST SIZE: the server in VM B, the client here.
ucx_pair()
{
	local tls=$1 test=$2 size=$3 port=$4 desc t0 rc srv src
	local args="-t $test -s $size -n $ITERS -w 2 -p $port"
	local slog=/vmout/srv.$port.log clog=/vmout/cli.$port.log

	desc="ucx_perftest -t $test -s $size, UCX_TLS=$tls, B <- A"
	t0=$SECONDS
	rm -f "$VM2_SHARED/listen.$port"
	# The server, and a file once it listens.
	vm2_remote "UCX_TLS=$tls UCX_NET_DEVICES=$DEV:1 timeout $((150 * SLOW)) \
		ucx_perftest $args & p=\$!
		until ss -Hltn 'sport = :$port' | grep -q .; do sleep 0.2; done
		touch $VM2_SHARED/listen.$port; wait \$p" >"$slog" 2>&1 &
	srv=$!
	if ! wait_file $((60 * SLOW)) "$VM2_SHARED/listen.$port"; then
		echo "# the server in B did not listen"
		kill "$srv" 2>/dev/null
		vm2_result 1 "$desc"
		return
	fi
	# shellcheck disable=SC2086 # $args: words, as in the server's
	UCX_TLS=$tls UCX_NET_DEVICES=$DEV:1 timeout -k 5 $((120 * SLOW)) \
		ucx_perftest $args "$IP_B" >"$clog" 2>&1
	rc=$?
	wait "$srv"
	src=$?
	if [ "$rc" -ne 0 ] || [ "$src" -ne 0 ] ||
	   ! grep -q '^Final:' "$clog"; then
		sed 's/^/# client: /' "$clog"
		sed 's/^/# server: /' "$slog"
		vm2_result 1 "$desc"
	else
		grep '^Final:' "$clog" | sed 's/^/# /'
		vm2_result 0 "$desc ($((SECONDS - t0)) s)"
	fi
}

hw_stat() { cat "/sys/class/infiniband/$DEV/ports/1/hw_counters/$1"; }

vm_main()
{
	local rc out tx rx t0

	printf '%s vrdma-vm\n%s vrdma-peer\n' "$IP_A" "$IP_B" >>/etc/hosts
	vm2_setup "$IP_A" "$IP_B" "$DEV"

	ucx_pair rc_v tag_bw 65536 18801
	ucx_pair rc_v ucp_put_bw 65536 18802
	ucx_pair ud_verbs tag_lat 8 18803

	if [ -x "$SELF_DIR/../build/mpi_xfer" ] && command -v mpirun >/dev/null; then
		tx=$(hw_stat sent_bytes) rx=$(hw_stat rcvd_bytes)
		t0=$SECONDS
		# VM B has no ssh: this script's --rsh runs orted there.
		out=$(timeout -k 5 $((300 * SLOW)) mpirun --allow-run-as-root \
			--host vrdma-vm:1,vrdma-peer:1 -np 2 \
			--mca plm_rsh_agent "$SELF --rsh" \
			--mca oob_tcp_if_include eth0 \
			--mca pml ucx --mca btl self \
			-x UCX_TLS=rc_v -x UCX_NET_DEVICES=$DEV:1 \
			"$SELF_DIR/../build/mpi_xfer" "$MIB" 2>&1)
		rc=$?
		printf '%s\n' "$out" | sed 's/^/# /'
		vm2_result "$rc" "mpirun: mpi_xfer $MIB MiB both ways, rank 0 in A, rank 1 in B ($((SECONDS - t0)) s)"
		printf '%s\n' "$out" | grep -q "^mpi_xfer: $MIB MiB .*: ok"
		vm2_result $? "mpi_xfer: every byte right"
		tx=$(($(hw_stat sent_bytes) - tx))
		rx=$(($(hw_stat rcvd_bytes) - rx))
		echo "# $DEV sent $tx and received $rx bytes"
		[ "$tx" -ge $((MIB << 20)) ] && [ "$rx" -ge $((MIB << 20)) ]
		vm2_result $? "MPI's $MIB MiB went both ways through $DEV"
	else
		echo "# no mpirun or mpi_xfer: no MPI"
	fi
	vm2_end
}

vm2_main "$@"
