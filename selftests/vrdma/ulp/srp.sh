#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# The SCSI RDMA Protocol (SRP) on the device: LIO's SRP target (configfs,
# ib_srpt) exports a RAM disk through the device's port, listening on an
# RDMA/CM port, and the kernel's SRP initiator (ib_srp) logs in to it over
# RDMA/CM from the same VM (the device talks to itself), on two channels
# (two RC QPs).  Both are kernel consumers with a data path of their own:
# the initiator sends each command in a SEND; a write of up to 8 KiB
# carries its data in that SEND (immediate data, gathered from the pages by
# the local DMA lkey), any other I/O is described by the rkey of a
# fast-registration MR (REG_MR, LOCAL_INV once done), through which the
# target moves the data by RDMA READ (writes) or RDMA WRITE (reads), with
# the rdma_rw API.  The target receives on each channel's own queue, its
# default: with use_srq=1, ib_srpt (Debian's 6.1 and 6.12) warns when a
# channel goes, whatever the device (it puts back a receive buffer cache
# it never took).
#
#   login with a wrong target port identifier: refused, no disk
#   login: a SCSI disk appears behind an SRP remote port of the device
#   fio: 4 KiB random writes, 1 MiB sequential writes (one SRP command
#     each: max_sect=2048 sg_tablesize=256, so one 256-page MR) and random
#     sizes from 512 B to 1 MiB, each read back and verified with crc32c;
#     a 4 KiB random read/write mix, two jobs
#   the device's counters carried at least the bytes the disk moved
#   the remote port deleted: the disk goes away, no QP, CQ, MR or PD of
#     the login left
#   teardown: the target's configuration goes, ib_srp and ib_srpt unload
#     and leave nothing on the device
#
# VRDMA_TEST_TYPE=vrdma (default) or rxe (Soft-RoCE, validates the test).
# VRDMA_SRP_SIZE_MB: how much of the disk fio covers (default 8).
#
# make check-long runs it on the host: lib.sh then boots a VM (scripts/vm-run,
# output in out/srp) and runs itself there.
VRDMA_OWN_VM=1500
. "$(dirname "$0")/../lib/lib.sh"
. "$(dirname "$0")/../lib/lio_lib.sh"

TYPE=${VRDMA_TEST_TYPE:-vrdma}
SLOW=${VRDMA_TEST_SLOW:-1}
NETDEV=srp0 PEER=srp1
IP=10.226.0.1
# The device talks to itself: one address for the target and initiator.
TARGET_IP=$IP INITIATOR_IP=$IP
PORTNO=5555
SIZE_MB=${VRDMA_SRP_SIZE_MB:-8}

[ "$(id -u)" -eq 0 ] || skip_all "must run as root (in the VM)"
command -v fio >/dev/null || skip_all "fio is not installed"
need_modules target_core_mod ib_srpt ib_srp scsi_transport_srp sd_mod

use_device_type
DEV=${TYPE}0

scratch=$(mktemp -d /tmp/srp.XXXXXX) || exit 1

cleanup()
{
	srp_logout >/dev/null 2>&1
	srp_target_down
	rmmod ib_srp ib_srpt 2>/dev/null
	rdma link delete "$DEV" 2>/dev/null
	ip link del "$NETDEV" 2>/dev/null
	[ -z "$loaded_rxe" ] || rmmod rdma_rxe 2>/dev/null
	rm -rf "$scratch"
}
trap cleanup EXIT

login()
{
	srp_add_target "$GUID" "$GUID" max_sect=2048 sg_tablesize=256 \
		ch_count=2 && wait_until $((60 * SLOW)) srp_have_disk
}

# moved DISK: the bytes DISK read and wrote (512-byte sectors).
moved()
{
	local s

	read -ra s <"/sys/block/${1#/dev/}/stat" || return 1
	echo $(((s[2] + s[6]) * 512))
}

# writes DISK: the write requests DISK completed.
writes()
{
	local s

	read -ra s <"/sys/block/${1#/dev/}/stat" || return 1
	echo "${s[4]}"
}

hw_stat() { cat "/sys/class/infiniband/$DEV/ports/1/hw_counters/$1" 2>/dev/null; }

# carried: what the device's counters say it carried: rcvd_bytes (as
# packets) and loopback_bytes (messages between QPs of this host, moved
# without packets) where it counts bytes; else, as on rdma_rxe, rcvd_pkts
# times the netdev's MTU, more than the payload they can have had.
carried()
{
	if [ -n "$(hw_stat rcvd_bytes)" ]; then
		echo $(($(hw_stat rcvd_bytes) + $(hw_stat loopback_bytes || echo 0)))
	else
		echo $(($(hw_stat rcvd_pkts) * $(cat "/sys/class/net/$NETDEV/mtu")))
	fi
}

# dmesg_since N: the kernel's SRP, SCSI and RDMA lines after line N, as
# comments.
dmesg_since()
{
	dmesg | tail -n +$(($1 + 1)) |
		grep -Ei 'srp|scsi|rdma|infiniband|target|sd[a-z]* ' |
		tail -n 40 | sed 's/^/#   /'
}

# data_path: the disk's identity, fio on it, the device's counters.
data_path()
{
	local host d moved0 carried0 moved carried w0

	host=$(srp_host) d=$(srp_disk)
	echo "# $d on ${host##*/}"
	ulp_perf "$d"
	check_eq "the SCSI host's device and port" "$DEV 1" \
		"$(cat "$host/local_ib_device" "$host/local_ib_port" 2>/dev/null |
		   tr '\n' ' ' | sed 's/ $//')"
	check_eq "two RDMA channels" 2 "$(cat "$host/ch_count" 2>/dev/null)"
	check_eq "the disk takes 1 MiB (256 pages) in one command" "1024 256" \
		"$(cat "/sys/block/${d#/dev/}/queue/max_sectors_kb" \
		       "/sys/block/${d#/dev/}/queue/max_segments" 2>/dev/null |
		   tr '\n' ' ' | sed 's/ $//')"
	check_eq "the disk's size: 64 MiB" $((64 << 20)) \
		"$(blockdev --getsize64 "$d" 2>/dev/null)"

	moved0=$(moved "$d") carried0=$(carried)
	check "fio: 4 KiB random writes, read back, crc32c verified" \
		fio_blockdev "$d" rand4k --rw=randwrite --bs=4k --iodepth=16 \
		--verify=crc32c --do_verify=1 --verify_fatal=1
	w0=$(writes "$d")
	check "fio: 1 MiB sequential writes, read back, crc32c verified" \
		fio_blockdev "$d" seq1m --rw=write --bs=1M --iodepth=4 \
		--verify=crc32c --do_verify=1 --verify_fatal=1
	check_eq "each 1 MiB write one SCSI command" "$SIZE_MB" \
		$(($(writes "$d") - w0))
	check "fio: random sizes 512 B to 1 MiB, written, read back, verified" \
		fio_blockdev "$d" mixed --rw=randwrite --bsrange=512-1M \
		--iodepth=8 --verify=crc32c --do_verify=1 --verify_fatal=1
	check "fio: 4 KiB random read/write mix, two jobs" \
		fio_blockdev "$d" mix4k --rw=randrw --bs=4k --iodepth=32 \
		--numjobs=2
	moved=$(($(moved "$d") - moved0)) carried=$(($(carried) - carried0))
	echo "# the disk moved $moved bytes, $DEV counted $carried"
	check "the disk moved at least what fio wrote and read back" \
		test "$moved" -ge $((8 * SIZE_MB << 20))
	check "$DEV's counters carried at least what the disk moved" \
		test "$carried" -ge "$moved"
	[ "$carried" -ge "$moved" ] ||
		rdma statistic show link "$DEV/1" | fold -w 100 | sed 's/^/#   /'
}

dev_ok=0
veth_dev_up "$NETDEV" "$PEER" "$IP" "$DEV" &&
	wait_until $((30 * SLOW)) roce_v2_ipv4_gid "$DEV" && dev_ok=1
check_eq "$DEV on $NETDEV ($IP), port active, IPv4 GID" 1 "$dev_ok"
[ "$dev_ok" -eq 1 ] || finish
rdma resource show qp link "$DEV/1" 2>/dev/null | grep -q 'type GSI' ||
	skip_all "$DEV has no QP1: no kernel verbs, no rdma_cm"
res_base=$(rdma_res)
check "modules target_core_mod, ib_srpt, ib_srp, sd_mod load" \
	modprobe -a target_core_mod ib_srpt ib_srp sd_mod
check "ib_srp has a port of $DEV" \
	test -e "/sys/class/infiniband_srp/srp-$DEV-1/add_target"
GUID=$(cat /sys/module/ib_srpt/parameters/srpt_service_guid 2>/dev/null)
check_match "ib_srpt's service GUID is $DEV's node GUID" \
	"^0x$(tr -d : <"/sys/class/infiniband/$DEV/node_guid")\$" "$GUID"
res0=$(rdma_res)
echo "# resources of $DEV before the modules: $res_base, after: $res0"
n0=$(dmesg | wc -l) f0=$_tap_failed

TPORT=$(srp_port_id)
echo "# target port $TPORT"
check "LIO: RAM disk LUN on $DEV's port, initiator ACL, RDMA/CM port $PORTNO" \
	srp_target_up "$TPORT"
check_eq "ib_srpt's RDMA/CM port" "$PORTNO" \
	"$(cat "$CFG/srpt/discovery_auth/rdma_cm_port" 2>/dev/null)"

# The target must check the login: a wrong target port identifier (the
# initiator's id_ext) gets a login rejection (ib_srp: ECONNRESET), and no
# disk.
check_fails "login with a wrong target port identifier is refused" \
	"Connection reset by peer" srp_add_target 0x1 "$GUID"
check_match "... by ib_srpt, for that reason" \
	"rejected SRP_LOGIN_REQ because it has an invalid target port" \
	"$(dmesg | tail -n +$((n0 + 1)))"
check "... and no remote port, no disk" srp_no_disk

check "ib_srp add_target over RDMA/CM ($IP:$PORTNO), a disk appears" login
# Without a disk, on to the teardown (the kernel's lines shown after it).
! srp_have_disk || data_path
check "the remote port deleted, the disk goes away" srp_logout
[ "$_tap_failed" -eq "$f0" ] || dmesg_since "$n0"

same_res() { [ "$(rdma_res)" = "$1" ]; }
check "no QP, CQ, MR or PD of the initiator's login left on $DEV" \
	wait_until $((30 * SLOW)) same_res "$res0"
if ! same_res "$res0"; then
	echo "# before: $res0, now: $(rdma_res)"
	rdma resource show | sed 's/^/#   /'
fi

check "the target's configuration goes" srp_target_down
check "ib_srp and ib_srpt unload" rmmod ib_srp ib_srpt
check "nothing of ib_srp or ib_srpt left on $DEV" \
	wait_until $((30 * SLOW)) same_res "$res_base"
same_res "$res_base" || echo "# before: $res_base, now: $(rdma_res)"
check "rdma link delete $DEV" rdma link delete "$DEV"
finish
