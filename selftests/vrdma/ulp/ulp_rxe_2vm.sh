#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# Kernel storage ULPs between vrdma and the kernel's Soft-RoCE (rdma_rxe),
# two VMs on a virtual Ethernet wire (scripts/vm-run --peer-cmd):
#
#   VM A (primary)  vrdma0 (vrdma) on eth0, 10.84.0.1
#   VM B (peer)     rxe0 (rdma_rxe) on eth0, 10.84.0.2
#
# Four runs, each ULP with its target on either side:
#
#   NVMe-oF  target (nvmet-rdma, a memory-backed null_blk disk) on vrdma,
#            host (nvme connect -t rdma) on rxe; then the reverse
#   iSER     target (LIO, ib_isert, a 64 MiB RAM disk) on vrdma,
#            initiator (open-iscsi, ib_iser) on rxe; then the reverse
#
# Each run: the target comes up on its VM's address; the initiator
# connects (or logs in) over rdma to it and its disk appears; fio there,
# direct I/O: 4 KiB random writes and 1 MiB sequential writes read back
# with crc32c, a 4 KiB random read/write mix; vrdma0 carried the data both
# ways; the initiator disconnects, its modules unload, the target's QPs go
# and the target goes down.  The NVMe target's device is deleted and
# bound again before its configuration goes (as nvmeof.sh: its listener
# goes with the device).  At the end no QP, CQ, MR or PD is left on either
# device.  A drives; B runs the jobs A hands it (lib.sh's vm2_on).  Output
# is TAP; make check-long runs it (on the host: it boots the VMs).
#
# VRDMA_ULP_RXE_SIZE_MB: how much of each disk fio covers (default 8).
# ULP_RXE_VM_ARGS: more scripts/vm-run options.  A kernel without the
# modules of the targets or the initiators skips the test.
. "$(dirname "$0")/../lib/lib.sh"
. "$(dirname "$0")/../lib/nvme_lib.sh"
. "$(dirname "$0")/../lib/lio_lib.sh"

IP_A=10.84.0.1 IP_B=10.84.0.2
# This VM's device: vrdma in A, rdma_rxe in B.
if [ "${VRDMA_VM_ROLE:-}" = peer ]; then
	DEV=rxe0
else
	DEV=vrdma0
fi
NQN=nqn.2026-12.io.vrdma:ulp-rxe
HOSTNQN=nqn.2014-08.org.nvmexpress:uuid:6c0e3f52-1d0b-4a8e-b7a4-0d2f3c9e8b11
IQN=iqn.2026-12.io.vrdma:ulp-rxe
NVME_PORT=4420 ISCSI_PORT=3260
SLOW=${VRDMA_TEST_SLOW:-1}
SIZE_MB=${VRDMA_ULP_RXE_SIZE_MB:-8}
# Where fio_blockdev leaves its logs.
scratch=/tmp
NVMET_CFG=/sys/kernel/config/nvmet
# What A checks, and so how many results the host expects.
WANT=41

# ---------------------------------------------------------------- host ----

host_main()
{
	local t

	for t in nvme iscsiadm fio; do
		command -v "$t" >/dev/null || skip_all "$t is not installed"
	done
	vm2_host "${ULP_RXE_2VM_OUT:-$VRDMA_TOP/out/ulp_rxe_2vm}" 1800 \
		"${ULP_RXE_VM_ARGS:-}"
	vm2_host_end "$WANT"
}

# ------------------------------------------------------------------ VM ----

# The jobs of either VM (this script with --job NAME ARGS... in B, a call
# in A: vm2_on).  nvme_lib.sh and lio_lib.sh name their configfs
# directory CFG and their port PORTNO: each job sets its own (local, as
# both run in A).
LIO_CFG=$CFG

job_nvme_target_up()
{
	local CFG=$NVMET_CFG PORTNO=$NVME_PORT

	modprobe -a nvmet nvmet-rdma &&
		modprobe null_blk nr_devices=1 gb=1 memory_backed=1 &&
		target_up "$1"
}

have_ns_dev() { [ -n "$(ns_dev)" ] && [ -b "$(ns_dev)" ]; }
no_ns_dev() { [ -z "$(ns_dev)" ]; }

# job_nvme_connect IP: nvme-rdma's controller to the target at IP; the
# namespace's block device, the controller's transport and address.
job_nvme_connect()
{
	local c

	modprobe nvme-rdma &&
		nvme connect -t rdma -a "$1" -s "$NVME_PORT" -n "$NQN" \
			--hostnqn="$HOSTNQN" &&
		wait_until $((30 * SLOW)) have_ns_dev || return 1
	for c in /sys/class/nvme/nvme*; do
		[ "$(cat "$c/subsysnqn" 2>/dev/null)" = "$NQN" ] || continue
		echo "$(ns_dev) $(cat "$c/transport")" \
			"$(sed 's/,src_addr=.*//' "$c/address")"
	done
}

job_nvme_fio()
{
	fio_blockdev "$(ns_dev)" "$@" &&
		grep -E '^ *(READ|WRITE):' "$scratch/$1.log"
}

# job_nvme_disconnect: the controller goes, nvme-rdma unloads.
job_nvme_disconnect()
{
	nvme disconnect -n "$NQN" && wait_until $((20 * SLOW)) no_ns_dev &&
		rmmod nvme_rdma nvme_fabrics
}

# job_nvme_target_down: once the host's queues (RC QPs) are gone, the
# device deleted (its listener with it), the configuration removed,
# nvmet's modules unloaded, and the device bound again.
job_nvme_target_down()
{
	local CFG=$NVMET_CFG

	wait_until $((30 * SLOW)) vm2_no_rc_qp &&
		rdma link delete "$DEV" &&
		target_down &&
		rmmod nvmet_rdma nvmet null_blk &&
		vm2_link_add "$DEV"
}

job_iser_target_up()
{
	local CFG=$LIO_CFG TARGET_IP=$1 PORTNO=$ISCSI_PORT

	modprobe -a target_core_mod iscsi_target_mod ib_isert &&
		iser_target_up
}

# job_iser_login IP: the login to the portal at IP (iser_login).
job_iser_login()
{
	local TARGET_IP=$1 PORTNO=$ISCSI_PORT

	iser_login
}

job_iser_fio()
{
	fio_blockdev "$(iscsi_disk)" "$@" &&
		grep -E '^ *(READ|WRITE):' "$scratch/$1.log"
}

# job_iser_logout IP: the session and its node record go, ib_iser unloads,
# iscsid stops.
job_iser_logout()
{
	local rc TARGET_IP=$1 PORTNO=$ISCSI_PORT

	iser_logout && rmmod ib_iser
	rc=$?
	iscsid_stop
	return "$rc"
}

# job_iser_target_down IP: once the initiator's connection (an RC QP) is
# gone, the target down and ib_isert unloaded.
job_iser_target_down()
{
	local CFG=$LIO_CFG TARGET_IP=$1 PORTNO=$ISCSI_PORT

	wait_until $((30 * SLOW)) vm2_no_rc_qp && iser_target_down &&
		rmmod ib_isert
}

# The runs (in A).

# other VM: the VM that is not VM.
other() { if [ "$1" = A ]; then echo B; else echo A; fi; }

# ip_of VM: its address.
ip_of() { if [ "$1" = A ]; then echo "$IP_A"; else echo "$IP_B"; fi; }

# dev_of VM: its device, with its driver.
dev_of() { if [ "$1" = A ]; then echo "vrdma0 (vrdma)"; else echo "rxe0 (rxe)"; fi; }

# nvme_run TGT: NVMe-oF with the target in VM TGT, the host in the other.
nvme_run()
{
	local tgt=$1 ini ip out

	ini=$(other "$tgt") ip=$(ip_of "$tgt")
	echo "# NVMe-oF: target on $(dev_of "$tgt"), host on $(dev_of "$ini")"
	vm2_rcheck "$tgt: nvmet-rdma target, null_blk namespace, port $ip:$NVME_PORT" \
		vm2_on "$tgt" nvme_target_up "$ip"
	out=$(vm2_on "$ini" nvme_connect "$ip")
	vm2_result $? "$ini: nvme connect -t rdma -a $ip, the namespace appears"
	echo "# $ini: $out"
	vm2_check_match "$ini: the controller's transport is rdma, to $ip" \
		"^/dev/nvme[0-9]+n[0-9]+ rdma traddr=$ip,trsvcid=$NVME_PORT\$" \
		"$out"
	vm2_fio "$ini" nvme_fio
	vm2_rcheck "$ini: nvme disconnect, nvme-rdma unloads" \
		vm2_on "$ini" nvme_disconnect
	vm2_rcheck "$tgt: the host's queues go, the target goes down, nvmet unloads" \
		vm2_on "$tgt" nvme_target_down
}

# iser_run TGT: iSER with the target in VM TGT, the initiator in the other.
iser_run()
{
	local tgt=$1 ini ip out

	ini=$(other "$tgt") ip=$(ip_of "$tgt")
	echo "# iSER: target on $(dev_of "$tgt"), initiator on $(dev_of "$ini")"
	vm2_rcheck "$tgt: LIO RAM disk LUN, iSER portal $ip:$ISCSI_PORT" \
		vm2_on "$tgt" iser_target_up "$ip"
	out=$(vm2_on "$ini" iser_login "$ip")
	vm2_result $? "$ini: iscsiadm -I iser: login to $ip:$ISCSI_PORT, a disk appears"
	printf '%s\n' "$out" | sed "s/^/# $ini: /"
	vm2_check_match "$ini: the session's transport is iser, to $ip:$ISCSI_PORT" \
		"^iser: \[[0-9]+\] $ip:$ISCSI_PORT,1 $IQN" "$out"
	vm2_check_match "$ini: immediate data was negotiated" \
		'^/dev/[a-z]+ immediate_data=1$' "$out"
	vm2_fio "$ini" iser_fio
	vm2_rcheck "$ini: logout, the disk goes, ib_iser unloads" \
		vm2_on "$ini" iser_logout "$ip"
	vm2_rcheck "$tgt: the initiator's connection goes, the target goes down" \
		vm2_on "$tgt" iser_target_down "$ip"
}

vm_main()
{
	local res0 res_b0 f0

	vm2_setup "$IP_A" "$IP_B" "$DEV"
	vm2_need_modules "nvmet nvmet-rdma null_blk nvme-rdma target_core_mod iscsi_target_mod ib_isert ib_iser"
	res0=$(rdma_res)
	res_b0=$(vm2_on B res)
	echo "# resources before: A's vrdma0: $res0; B's rxe0: $res_b0"
	f0=$_tap_failed

	nvme_run A
	nvme_run B
	iser_run A
	iser_run B

	vm2_check_left "$DEV" "$res0" "$res_b0" rxe0
	vm2_dmesg "$f0" 'nvme|iser|iscsi|target|rdma|rxe|infiniband|vrdma'
	vm2_end --delete
}

vm2_main "$@"
