#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# iSCSI over RDMA (iSER) between two VMs, each with a vrdma device on its
# end of a virtual Ethernet wire (scripts/vm-run --peer-cmd):
#
#   VM A (primary)  the target: LIO's iSCSI target (configfs, ib_isert)
#                   exporting a 64 MiB RAM disk on an iSER portal on
#                   vrdma0's address, 10.82.0.1:3260
#   VM B (peer)     the initiator: open-iscsi (iscsid, iscsiadm -I iser,
#                   ib_iser)
#
# VM A drives; VM B runs the jobs A hands it through the shared directory
# (this script with --job, through lib.sh's vm2_on).  Checks: the login
# and the session's disk in B, over iser to A's portal, with immediate
# data negotiated (a write's first bytes go in the initiator's SEND, the
# rest by the target's RDMA READ); fio from B, direct I/O: 4 KiB random
# writes read back and 1 MiB sequential writes read back, both verified
# with crc32c, and a 4 KiB random read/write mix; the bytes went through
# A's vrdma0; the logout takes the disk away and the target's QPs go; the
# target goes down, ib_isert and ib_iser unload, and no QP, CQ, MR or PD
# is left on either device.  Output is TAP; make check-long runs it (on
# the host: it boots the VMs).
#
# VRDMA_ISER_SIZE_MB: how much of the disk fio covers (default 8).
# ISER_2VM_VM_ARGS: more scripts/vm-run options.  A kernel without the
# modules of the target or the initiator (the debug kernel of
# scripts/build-debug-kernel has none) skips the test.
. "$(dirname "$0")/../lib/lib.sh"
. "$(dirname "$0")/../lib/lio_lib.sh"

IP_A=10.82.0.1 IP_B=10.82.0.2
TARGET_IP=$IP_A
DEV=vrdma0
PORTNO=3260
IQN=iqn.2026-11.io.vrdma:iser-2vm
SLOW=${VRDMA_TEST_SLOW:-1}
SIZE_MB=${VRDMA_ISER_SIZE_MB:-8}
# Where fio_blockdev leaves its logs (in B).
scratch=/tmp
# What A checks, and so how many results the host expects.
WANT=17

# ---------------------------------------------------------------- host ----

host_main()
{
	command -v iscsiadm >/dev/null ||
		skip_all "iscsiadm (open-iscsi) is not installed"
	command -v fio >/dev/null || skip_all "fio is not installed"
	vm2_host "${ISER_2VM_OUT:-$VRDMA_TOP/out/iser_2vm}" 900 \
		"${ISER_2VM_VM_ARGS:-}"
	vm2_host_end "$WANT"
}

# ------------------------------------------------------------------ VM ----

# VM B: the initiator.

# The jobs A hands B (this script with --job NAME ARGS...).

# job_login: the login (iser_login).
job_login() { iser_login; }

# job_fio NAME ARGS...: fio on the disk, direct I/O; its output is shown
# only when it fails, else its summary lines.
job_fio()
{
	fio_blockdev "$(iscsi_disk)" "$@" &&
		grep -E '^ *(READ|WRITE):' "$scratch/$1.log"
}

job_logout() { iser_logout; }

# job_unload: ib_iser unloads, iscsid stops.
job_unload()
{
	local rc

	rmmod ib_iser
	rc=$?
	iscsid_stop
	return "$rc"
}

# VM A: the target, and the checks.

vm_main()
{
	local out res0 res_b0 f0

	vm2_setup "$IP_A" "$IP_B" "$DEV"

	vm2_need_modules "target_core_mod iscsi_target_mod ib_isert" \
		"ib_iser sd_mod"
	res0=$(rdma_res)
	res_b0=$(vm2_on B res)
	echo "# resources of $DEV before: A: $res0; B: $res_b0"
	f0=$_tap_failed
	modprobe -a target_core_mod iscsi_target_mod ib_isert
	vm2_result $? "A: modules target_core_mod, iscsi_target_mod, ib_isert"
	iser_target_up
	vm2_result $? "A: LIO RAM disk LUN, iSER portal $IP_A:$PORTNO"

	out=$(vm2_on B login)
	vm2_result $? "B: iscsiadm -I iser: login to $IP_A:$PORTNO, a disk appears"
	printf '%s\n' "$out" | sed 's/^/# B: /'
	printf '%s\n' "$out" | grep -Eq "^iser: \[[0-9]+\] $IP_A:$PORTNO,1 $IQN"
	vm2_result $? "B: the session's transport is iser, to $IP_A:$PORTNO"
	printf '%s\n' "$out" | grep -q '^/dev/[a-z]* immediate_data=1$'
	vm2_result $? "B: immediate data was negotiated"

	vm2_fio

	vm2_rcheck "B: iscsiadm logout, the disk goes away" vm2_on B logout
	wait_until $((30 * SLOW)) vm2_no_rc_qp
	vm2_result $? "A: ib_isert's connection (RC QP) is gone"
	iser_target_down
	vm2_result $? "A: the target goes down"
	rmmod ib_isert
	vm2_result $? "A: ib_isert unloads"
	vm2_rcheck "B: ib_iser unloads" vm2_on B unload
	vm2_check_left "$DEV" "$res0" "$res_b0"
	# The kernels' iSCSI, target and RDMA lines, if a check failed.
	vm2_dmesg "$f0" 'iser|iscsi|target|rdma|infiniband|vrdma'
	vm2_end --delete
}

vm2_main "$@"
