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

TYPE=${VRDMA_TEST_TYPE:-vrdma}
SLOW=${VRDMA_TEST_SLOW:-1}
NETDEV=isr0 PEER=isr1
IP=10.222.0.1
PORTNO=3260
IQN=iqn.2026-11.io.vrdma:iser-test
SIZE_MB=${VRDMA_ISER_SIZE_MB:-8}

[ "$(id -u)" -eq 0 ] || skip_all "must run as root (in the VM)"
command -v iscsiadm >/dev/null || skip_all "iscsiadm (open-iscsi) is not installed"
command -v fio >/dev/null || skip_all "fio is not installed"
need_modules target_core_mod iscsi_target_mod ib_isert ib_iser sd_mod

use_device_type
DEV=${TYPE}0

CFG=/sys/kernel/config/target
scratch=$(mktemp -d /tmp/iser.XXXXXX) || exit 1

iscsi_node() { iscsiadm -m node -T "$IQN" -p "$IP:$PORTNO" -I iser "$@"; }

cleanup()
{
	iscsi_node --logout >/dev/null 2>&1
	iscsi_node -o delete >/dev/null 2>&1
	[ -z "${iscsid_pid:-}" ] || kill "$iscsid_pid" 2>/dev/null
	target_down
	rmmod ib_iser ib_isert 2>/dev/null
	rdma link delete "$DEV" 2>/dev/null
	ip link del "$NETDEV" 2>/dev/null
	[ -z "$loaded_rxe" ] || rmmod rdma_rxe 2>/dev/null
	rm -rf "$scratch"
}
trap cleanup EXIT

# target_up: LIO's configfs (targetcli needs a D-Bus daemon, which the VM
# has not): a 64 MiB RAM disk as LUN 0 of IQN, an iSER portal on IP, any
# initiator allowed, no authentication.
target_up()
{
	local rd=$CFG/core/rd_mcp_0/iser_rd t=$CFG/iscsi/$IQN/tpgt_1 a

	mkdir -p "$rd" && echo rd_pages=16384 >"$rd/control" &&
		echo 1 >"$rd/enable" &&
		mkdir -p "$t/lun/lun_0" && ln -s "$rd" "$t/lun/lun_0/rd" &&
		mkdir "$t/np/$IP:$PORTNO" && echo 1 >"$t/np/$IP:$PORTNO/iser" ||
		return 1
	for a in authentication=0 generate_node_acls=1 \
		demo_mode_write_protect=0 cache_dynamic_acls=1; do
		echo "${a#*=}" >"$t/attrib/${a%=*}" || return 1
	done
	echo 1 >"$t/enable"
}

# target_down: children before parents.
target_down()
{
	local rd=$CFG/core/rd_mcp_0/iser_rd t=$CFG/iscsi/$IQN/tpgt_1

	[ -d "$CFG/iscsi/$IQN" ] || [ -d "$rd" ] || return 0
	echo 0 >"$t/enable" 2>/dev/null
	echo 0 >"$t/np/$IP:$PORTNO/iser" 2>/dev/null
	rmdir "$t/np/$IP:$PORTNO" 2>/dev/null
	rm -f "$t/lun/lun_0/rd"
	rmdir "$t/lun/lun_0" "$t" "$CFG/iscsi/$IQN" 2>/dev/null
	rmdir "$rd" "$CFG/core/rd_mcp_0" 2>/dev/null
	! [ -d "$CFG/iscsi/$IQN" ] && ! [ -d "$rd" ]
}

# disk: the SCSI disk of our session ("" if none).
disk()
{
	local s b

	for s in /sys/class/iscsi_session/session*; do
		[ "$(cat "$s/targetname" 2>/dev/null)" = "$IQN" ] || continue
		for b in "$s"/device/target*/*/block/*; do
			[ -e "$b" ] && echo "/dev/${b##*/}" && return
		done
	done
}

have_disk() { [ -n "$(disk)" ] && [ -b "$(disk)" ]; }
no_disk() { [ -z "$(disk)" ]; }

login()
{
	iscsi_node -o new && iscsi_node --login &&
		wait_until $((60 * SLOW)) have_disk
}

# session_param NAME: a negotiated parameter of our session.
session_param()
{
	local s

	for s in /sys/class/iscsi_session/session*; do
		[ "$(cat "$s/targetname" 2>/dev/null)" = "$IQN" ] || continue
		cat "$s/$1" 2>/dev/null
		return
	done
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

check "LIO: RAM disk LUN, iSER portal $IP:$PORTNO" target_up
# Its own session: iscsid signals its process group when it stops.
mkdir -p /run/lock/iscsi
setsid iscsid -f >"$scratch/iscsid.log" 2>&1 &
iscsid_pid=$!
# iscsiadm talks to it through this abstract socket.
iscsid_up() { ss -xl | grep -q '@ISCSIADM_ABSTRACT_NAMESPACE'; }
check "iscsid is running" wait_until $((20 * SLOW)) iscsid_up
check "iscsiadm -I iser: login, a disk appears" login
check_eq "the session's transport is iser" iser \
	"$(iscsiadm -m session 2>/dev/null | sed -n "s/^\([a-z]*\): .*$IQN.*/\1/p")"
check_eq "immediate data was negotiated" 1 "$(session_param immediate_data)"

check "fio: 4 KiB random writes, read back, crc32c verified" \
	fio_blockdev "$(disk)" rand4k --rw=randwrite --bs=4k --iodepth=16 \
	--verify=crc32c --do_verify=1 --verify_fatal=1
check "fio: 1 MiB sequential writes, read back, crc32c verified" \
	fio_blockdev "$(disk)" seq1m --rw=write --bs=1M --iodepth=4 \
	--verify=crc32c --do_verify=1 --verify_fatal=1
check "fio: 4 KiB random read/write mix, two jobs" \
	fio_blockdev "$(disk)" mix4k --rw=randrw --bs=4k --iodepth=32 \
	--numjobs=2
check "fio: random sizes 512 B to 1 MiB, written, read back, verified" \
	fio_blockdev "$(disk)" mixed --rw=randwrite --bsrange=512-1M \
	--iodepth=8 --verify=crc32c --do_verify=1 --verify_fatal=1
check "iscsiadm: logout" iscsi_node --logout
check "the disk goes away" wait_until $((30 * SLOW)) no_disk
[ "$_tap_failed" -eq "$f0" ] || dmesg_since "$n0"

same_res() { [ "$(rdma_res)" = "$res0" ]; }
check "no QP, CQ, MR or PD of the initiator or target left on $DEV" \
	wait_until $((30 * SLOW)) same_res
if ! same_res; then
	echo "# before: $res0, now: $(rdma_res)"
	rdma resource show | sed 's/^/#   /'
fi
check "the target goes down" target_down
check "ib_iser and ib_isert unload" rmmod ib_iser ib_isert
check "rdma link delete $DEV" rdma link delete "$DEV"
finish
