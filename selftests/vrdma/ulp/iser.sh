#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# iSCSI over RDMA (iSER) on the device: LIO's iSCSI target (configfs,
# ib_isert) exports a RAM disk on an iSER portal at the device's address,
# and open-iscsi's initiator (iscsiadm -I iser, ib_iser) logs in from the
# same VM (the device talks to itself).  With immediate data (open-iscsi's
# default) the initiator's SEND carries the first bytes of a write,
# gathered by the lkey of a fast-registration MR it registered in the same
# post, and the target fetches the rest by RDMA READ through its rkey.
#
#   login, fio: 4 KiB random writes, 1 MiB sequential writes, each read
#     back and verified with crc32c; a 4 KiB random read/write mix
#   logout: the disk goes away
#   no QP, CQ, MR or PD of the device left; the target goes, the modules
#     unload
#
# VRDMA_TEST_TYPE=vrdma (default) or rxe (Soft-RoCE, validates the test).
# VRDMA_ISER_SIZE_MB: how much of the disk fio covers (default 8).
#
# make check-long runs it on the host: lib.sh then boots a VM (scripts/vm-run,
# output in out/iser) and runs itself there.
VRDMA_OWN_VM=1500
. "$(dirname "$0")/../lib/lib.sh"
. "$(dirname "$0")/../lib/lio_lib.sh"

TYPE=${VRDMA_TEST_TYPE:-vrdma}
SLOW=${VRDMA_TEST_SLOW:-1}
NETDEV=isr0 PEER=isr1
IP=10.222.0.1
TARGET_IP=$IP
PORTNO=3260
IQN=iqn.2026-11.io.vrdma:iser-test
SIZE_MB=${VRDMA_ISER_SIZE_MB:-8}

[ "$(id -u)" -eq 0 ] || skip_all "must run as root (in the VM)"
command -v iscsiadm >/dev/null || skip_all "iscsiadm (open-iscsi) is not installed"
command -v fio >/dev/null || skip_all "fio is not installed"
need_modules target_core_mod iscsi_target_mod ib_isert ib_iser sd_mod

use_device_type
DEV=${TYPE}0

scratch=$(mktemp -d /tmp/iser.XXXXXX) || exit 1

cleanup()
{
	iscsi_node --logout >/dev/null 2>&1
	iscsi_node -o delete >/dev/null 2>&1
	[ -z "${iscsid_pid:-}" ] || kill "$iscsid_pid" 2>/dev/null
	iser_target_down
	rmmod ib_iser ib_isert 2>/dev/null
	rdma link delete "$DEV" 2>/dev/null
	ip link del "$NETDEV" 2>/dev/null
	[ -z "$loaded_rxe" ] || rmmod rdma_rxe 2>/dev/null
	rm -rf "$scratch"
}
trap cleanup EXIT

login()
{
	iscsi_node -o new && iscsi_node --login &&
		wait_until $((60 * SLOW)) iscsi_have_disk
}

# dmesg_since N: the kernel's iSCSI and RDMA lines after line N, as comments.
dmesg_since()
{
	dmesg | tail -n +$(($1 + 1)) | grep -Ei 'iser|iscsi|rdma|infiniband' |
		tail -n 40 | sed 's/^/#   /'
}

dev_ok=0
veth_dev_up "$NETDEV" "$PEER" "$IP" "$DEV" &&
	wait_until $((30 * SLOW)) roce_v2_ipv4_gid "$DEV" && dev_ok=1
check_eq "$DEV on $NETDEV ($IP), port active, IPv4 GID" 1 "$dev_ok"
[ "$dev_ok" -eq 1 ] || finish
rdma resource show qp link "$DEV/1" 2>/dev/null | grep -q 'type GSI' ||
	skip_all "$DEV has no QP1: no kernel verbs, no rdma_cm"
check "modules target_core_mod, iscsi_target_mod, ib_isert, ib_iser, sd_mod load" \
	modprobe -a target_core_mod iscsi_target_mod ib_isert ib_iser sd_mod
res0=$(rdma_res)
echo "# resources of $DEV before: $res0"
n0=$(dmesg | wc -l) f0=$_tap_failed

check "LIO: RAM disk LUN, iSER portal $IP:$PORTNO" iser_target_up
# Its own session: iscsid signals its process group when it stops.
mkdir -p /run/lock/iscsi
setsid iscsid -f >"$scratch/iscsid.log" 2>&1 &
iscsid_pid=$!
check "iscsid is running" wait_until $((20 * SLOW)) iscsid_up
check "iscsiadm -I iser: login, a disk appears" login
check_eq "the session's transport is iser" iser \
	"$(iscsiadm -m session 2>/dev/null | sed -n "s/^\([a-z]*\): .*$IQN.*/\1/p")"
check_eq "immediate data was negotiated" 1 \
	"$(iscsi_session_param immediate_data)"
ulp_perf "$(iscsi_disk)"

check "fio: 4 KiB random writes, read back, crc32c verified" \
	fio_blockdev "$(iscsi_disk)" rand4k --rw=randwrite --bs=4k \
	--iodepth=16 --verify=crc32c --do_verify=1 --verify_fatal=1
check "fio: 1 MiB sequential writes, read back, crc32c verified" \
	fio_blockdev "$(iscsi_disk)" seq1m --rw=write --bs=1M --iodepth=4 \
	--verify=crc32c --do_verify=1 --verify_fatal=1
check "fio: 4 KiB random read/write mix, two jobs" \
	fio_blockdev "$(iscsi_disk)" mix4k --rw=randrw --bs=4k \
	--iodepth=32 --numjobs=2
check "fio: random sizes 512 B to 1 MiB, written, read back, verified" \
	fio_blockdev "$(iscsi_disk)" mixed --rw=randwrite --bsrange=512-1M \
	--iodepth=8 --verify=crc32c --do_verify=1 --verify_fatal=1
check "iscsiadm: logout" iscsi_node --logout
check "the disk goes away" wait_until $((30 * SLOW)) iscsi_no_disk
[ "$_tap_failed" -eq "$f0" ] || dmesg_since "$n0"

same_res() { [ "$(rdma_res)" = "$res0" ]; }
check "no QP, CQ, MR or PD of the initiator or target left on $DEV" \
	wait_until $((30 * SLOW)) same_res
if ! same_res; then
	echo "# before: $res0, now: $(rdma_res)"
	rdma resource show | sed 's/^/#   /'
fi
check "the target goes down" iser_target_down
check "ib_iser and ib_isert unload" rmmod ib_iser ib_isert
check "rdma link delete $DEV" rdma link delete "$DEV"
finish
