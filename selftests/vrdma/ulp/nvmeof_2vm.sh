#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# NVMe over Fabrics between two VMs, each with a vrdma device on its end of
# a virtual Ethernet wire (scripts/vm-run --peer-cmd):
#
#   VM A (primary)  the NVMe target: nvmet + nvmet-rdma exporting a
#                   memory-backed null_blk disk on vrdma0, 10.79.0.1:4420
#   VM B (peer)     the NVMe host: nvme-rdma, nvme connect -t rdma
#
# VM A drives; VM B runs the commands A hands it through the shared
# directory (this script with --job, through lib.sh's vm2_on).  Checks:
# the connect and the namespace's block device in B, with transport rdma
# to A's address; fio from B, direct I/O: 4 KiB random writes read back
# and 1 MiB sequential writes read back, both verified with crc32c, and a
# 4 KiB random read/write mix; the bytes went through A's vrdma0; the
# disconnect leaves no controller on either side and no QP, CQ, MR or PD
# of the ULPs on either device; the target goes down and its modules
# unload.  Output is TAP; make check-long runs it (on the host: it boots
# the VMs).
#
# VRDMA_NVMEOF_SIZE_MB: how much of the disk fio covers (default 8).
# NVMEOF_VM_ARGS: more scripts/vm-run options, e.g. --debug-kernel.
. "$(dirname "$0")/../lib/lib.sh"
. "$(dirname "$0")/../lib/nvme_lib.sh"

IP_A=10.79.0.1 IP_B=10.79.0.2
DEV=vrdma0
PORTNO=4420
NQN=nqn.2026-11.io.vrdma:nvmeof-2vm
HOSTNQN=nqn.2014-08.org.nvmexpress:uuid:2a6f1c0e-6b1e-4e0c-9d43-5d1f2c7b2a00
SLOW=${VRDMA_TEST_SLOW:-1}
SIZE_MB=${VRDMA_NVMEOF_SIZE_MB:-8}
CFG=/sys/kernel/config/nvmet
# What A checks, and so how many results the host expects.
WANT=16

# ---------------------------------------------------------------- host ----

host_main()
{
	command -v nvme >/dev/null || skip_all "nvme-cli is not installed"
	command -v fio >/dev/null || skip_all "fio is not installed"
	vm2_host "${NVMEOF_2VM_OUT:-$VRDMA_TOP/out/nvmeof_2vm}" 900 \
		"${NVMEOF_VM_ARGS:-}"
	vm2_host_end "$WANT"
}

# ------------------------------------------------------------------ VM ----

# VM B: the NVMe host.

have_ns_dev() { [ -n "$(ns_dev)" ] && [ -b "$(ns_dev)" ]; }
no_ns_dev() { [ -z "$(ns_dev)" ]; }

# ctrl_attr ATTR: an attribute of our subsystem's controller.
ctrl_attr()
{
	local c

	for c in /sys/class/nvme/nvme*; do
		if [ "$(cat "$c/subsysnqn" 2>/dev/null)" = "$NQN" ]; then
			cat "$c/$1"
			return
		fi
	done
}

# The jobs A hands B (this script with --job NAME ARGS...).
job_connect()
{
	modprobe nvme-rdma &&
		nvme connect -t rdma -a "$IP_A" -s "$PORTNO" -n "$NQN" \
			--hostnqn="$HOSTNQN" &&
		wait_until $((30 * SLOW)) have_ns_dev &&
		echo "$(ns_dev) $(ctrl_attr transport)" \
			"$(ctrl_attr address | sed 's/,src_addr=.*//')"
}

# job_fio NAME ARGS...: fio on the namespace, direct I/O; its output is
# shown only when it fails.
job_fio()
{
	local name=$1 log=/tmp/fio.$1.log

	shift
	timeout -k 10 $((300 * SLOW)) fio --name="$name" \
		--filename="$(ns_dev)" --ioengine=libaio --direct=1 \
		--size="${SIZE_MB}M" --eta=never --output="$log" "$@" ||
		{ cat "$log"; return 1; }
	grep -E '^ *(READ|WRITE):' "$log"
}

job_disconnect()
{
	nvme disconnect -n "$NQN" && wait_until $((20 * SLOW)) no_ns_dev &&
		[ -z "$(ctrl_attr subsysnqn)" ]
}

job_unload()
{
	rmmod nvme_rdma nvme_fabrics && rdma_res
}

# VM A: the target, and the checks.

vm_main()
{
	local out res0 res_b0 res

	vm2_setup "$IP_A" "$IP_B" "$DEV"

	res0=$(rdma_res)
	res_b0=$(vm2_on B res)
	echo "# resources of $DEV before: A: $res0; B: $res_b0"
	modprobe -a nvmet nvmet-rdma &&
		modprobe null_blk nr_devices=1 gb=1 memory_backed=1
	vm2_result $? "A: modules nvmet, nvmet-rdma, null_blk (a memory-backed disk)"
	target_up "$IP_A"
	vm2_result $? "A: nvmet subsystem, namespace on /dev/nullb0, rdma port $IP_A:$PORTNO"

	out=$(vm2_on B connect)
	vm2_result $? "B: nvme connect -t rdma -a $IP_A -s $PORTNO, the namespace appears"
	echo "# B: $out"
	vm2_check_match "B: the controller's transport is rdma, address $IP_A" \
		"^/dev/nvme[0-9]+n[0-9]+ rdma traddr=$IP_A,trsvcid=$PORTNO\$" \
		"$out"

	vm2_fio

	vm2_rcheck "B: nvme disconnect, the controller and block device go away" \
		vm2_on B disconnect
	wait_until $((30 * SLOW)) vm2_no_rc_qp
	vm2_result $? "A: nvmet's queues (RC QPs) are gone"
	out=$(vm2_on B unload)
	vm2_result $? "B: nvme-rdma unloads"
	res=$(printf '%s\n' "$out" | tail -n 1)
	vm2_check_eq "B: no QP, CQ, MR or PD of the ULPs left on $DEV" \
		"$res_b0" "$res"
	# The device before the target's configuration, as nvmeof.sh does:
	# the listener goes with the device, not under nvmet_config_sem
	# (else lockdep reports a false inversion there, in upstream code).
	wait_until $((30 * SLOW)) vm2_same_res "$res0"
	res=$(rdma_res)
	vm2_check_eq "A: no QP, CQ, MR or PD of the ULPs left on $DEV" \
		"$res0" "$res"
	[ "$res" = "$res0" ] || rdma resource show | sed 's/^/#   /'
	rdma statistic show link "$DEV/1" 2>/dev/null | sed 's/^/# /'
	rdma link delete "$DEV"
	vm2_result $? "A: rdma link delete $DEV"
	target_down
	vm2_result $? "A: the target goes down"
	rmmod nvmet_rdma nvmet null_blk
	vm2_result $? "A: nvmet-rdma, nvmet, null_blk unload"
	vm2_done
	finish
}

vm2_main "$@"
