#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# The SCSI RDMA Protocol (SRP) between two VMs, each with a vrdma device on
# its end of a virtual Ethernet wire (scripts/vm-run --peer-cmd):
#
#   VM A (primary)  the target: LIO's SRP target (configfs, ib_srpt)
#                   exporting a 64 MiB RAM disk through vrdma0's port, its
#                   RDMA/CM listener on 10.83.0.1:5555, and an ACL for
#                   the logins it accepts
#   VM B (peer)     the initiator: ib_srp, add_target over RDMA/CM to
#                   10.83.0.1:5555 on two channels (two RC QPs)
#
# VM A drives; VM B runs the jobs A hands it through the shared directory
# (this script with --job, through lib.sh's vm2_on).  Checks: a login
# with a wrong target port identifier is refused by ib_srpt; the login
# and its disk in B, on B's vrdma0, two channels; fio from B, direct I/O:
# 4 KiB random writes read back and 1 MiB sequential writes read back
# (one SRP command each, a 256-page fast-registration MR), both verified
# with crc32c, and a 4 KiB random read/write mix; the bytes went through
# A's vrdma0; the remote port deleted, the disk goes away and the
# target's channels go; the target goes down, ib_srpt and ib_srp unload,
# and no QP, CQ, MR or PD is left on either device.  Output is TAP; make
# check-long runs it (on the host: it boots the VMs).
#
# VRDMA_SRP_SIZE_MB: how much of the disk fio covers (default 8).
# SRP_2VM_VM_ARGS: more scripts/vm-run options.  A kernel without the
# modules of the target or the initiator (the debug kernel of
# scripts/build-debug-kernel has none) skips the test.
. "$(dirname "$0")/../lib/lib.sh"
. "$(dirname "$0")/../lib/lio_lib.sh"

IP_A=10.83.0.1 IP_B=10.83.0.2
TARGET_IP=$IP_A INITIATOR_IP=$IP_B
DEV=vrdma0
PORTNO=5555
SLOW=${VRDMA_TEST_SLOW:-1}
SIZE_MB=${VRDMA_SRP_SIZE_MB:-8}
# Where fio_blockdev leaves its logs (in B).
scratch=/tmp
# What A checks, and so how many results the host expects.
WANT=20

# ---------------------------------------------------------------- host ----

host_main()
{
	command -v fio >/dev/null || skip_all "fio is not installed"
	vm2_host "${SRP_2VM_OUT:-$VRDMA_TOP/out/srp_2vm}" 900 \
		"${SRP_2VM_VM_ARGS:-}"
	vm2_host_end "$WANT"
}

# ------------------------------------------------------------------ VM ----

# VM B: the initiator.

# The jobs A hands B (this script with --job NAME ARGS...).

job_modules()
{
	modprobe -a ib_srp sd_mod &&
		test -e "/sys/class/infiniband_srp/srp-$DEV-1/add_target"
}

# job_bad_login GUID: a login with a wrong target port identifier fails
# with ib_srp's error for a login rejection (ECONNRESET), which it prints,
# and no disk appears.
job_bad_login()
{
	local err

	err=$(srp_add_target 0x1 "$1" 2>&1) && return 1
	echo "$err"
	case $err in
	*"Connection reset by peer"*) srp_no_disk ;;
	*) return 1 ;;
	esac
}

# job_login GUID: the login, on two channels, 1 MiB (256 pages) in one
# command; then the disk, its SCSI host's device, port and channels.
job_login()
{
	local h

	srp_add_target "$1" "$1" max_sect=2048 sg_tablesize=256 \
		ch_count=2 && wait_until $((60 * SLOW)) srp_have_disk || return 1
	h=$(srp_host)
	echo "$(srp_disk) on ${h##*/}:" \
		"$(cat "$h/local_ib_device" "$h/local_ib_port" "$h/ch_count" |
		   tr '\n' ' ' | sed 's/ $//')"
}

# job_fio NAME ARGS...: fio on the disk, direct I/O; its output is shown
# only when it fails, else its summary lines.
job_fio()
{
	fio_blockdev "$(srp_disk)" "$@" &&
		grep -E '^ *(READ|WRITE):' "$scratch/$1.log"
}

# job_logout: the remote port deleted.
job_logout() { srp_logout; }

job_unload() { rmmod ib_srp; }

# VM A: the target, and the checks.

vm_main()
{
	local out res0 res_b0 f0 n0 guid tport

	vm2_setup "$IP_A" "$IP_B" "$DEV"

	vm2_need_modules "target_core_mod ib_srpt" \
		"ib_srp scsi_transport_srp sd_mod"
	res0=$(rdma_res)
	res_b0=$(vm2_on B res)
	echo "# resources of $DEV before: A: $res0; B: $res_b0"
	f0=$_tap_failed n0=$(dmesg | wc -l)
	modprobe -a target_core_mod ib_srpt
	vm2_result $? "A: modules target_core_mod, ib_srpt"
	guid=$(cat /sys/module/ib_srpt/parameters/srpt_service_guid 2>/dev/null)
	printf '%s\n' "$guid" |
		grep -q "^0x$(tr -d : <"/sys/class/infiniband/$DEV/node_guid")\$"
	vm2_result $? "A: ib_srpt's service GUID ($guid) is $DEV's node GUID"
	tport=$(srp_port_id)
	echo "# target port $tport"
	srp_target_up "$tport"
	vm2_result $? "A: LIO RAM disk LUN on $DEV's port, ACL, RDMA/CM port $PORTNO"

	vm2_rcheck "B: ib_srp has a port of $DEV" vm2_on B modules
	# The target must check the login: a wrong target port identifier
	# (the initiator's id_ext) gets a login rejection (ib_srp:
	# ECONNRESET), and no disk.
	out=$(vm2_on B bad_login "$guid")
	vm2_result $? "B: a login with a wrong target port identifier is refused (ECONNRESET), no disk"
	printf '%s\n' "$out" | sed 's/^/#   /'
	dmesg | tail -n +$((n0 + 1)) |
		grep -q 'rejected SRP_LOGIN_REQ because it has an invalid target port'
	vm2_result $? "A: ... by ib_srpt, for that reason"

	out=$(vm2_on B login "$guid")
	vm2_result $? "B: ib_srp add_target over RDMA/CM to $IP_A:$PORTNO, a disk appears"
	echo "# B: $out"
	printf '%s\n' "$out" | grep -Eq "^/dev/sd[a-z]+ on host[0-9]+: $DEV 1 2\$"
	vm2_result $? "B: the SCSI host is on $DEV port 1, two channels"

	vm2_fio

	vm2_rcheck "B: the remote port deleted, the disk goes away" vm2_on B logout
	wait_until $((30 * SLOW)) vm2_no_rc_qp
	vm2_result $? "A: ib_srpt's channels (RC QPs) are gone"
	srp_target_down
	vm2_result $? "A: the target's configuration goes"
	rmmod ib_srpt
	vm2_result $? "A: ib_srpt unloads"
	vm2_rcheck "B: ib_srp unloads" vm2_on B unload
	vm2_check_left "$DEV" "$res0" "$res_b0"
	# The kernels' SRP, SCSI, target and RDMA lines, if a check failed.
	vm2_dmesg "$f0" 'srp|scsi|target|rdma|infiniband|vrdma'
	vm2_end --delete
}

vm2_main "$@"
