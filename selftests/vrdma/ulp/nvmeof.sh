#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# NVMe over Fabrics on the device: the kernel's NVMe target (nvmet,
# nvmet-rdma) exports a memory-backed null_blk disk on port 4420 of the
# device's address, and the kernel's NVMe host (nvme-rdma) connects to it
# from the same VM (the device talks to itself).  Both are kernel
# consumers: rdma_cm, kernel QPs and CQs, fast-registration MRs (REG_MR,
# LOCAL_INV, SEND with invalidate).
#
#   connect, fio: 4 KiB random writes then reads, verified with crc32c;
#     1 MiB sequential writes then reads, verified; a 4 KiB random mix
#   disconnect: the controller and its block device go away
#   link killed during I/O: the netdev down for 10 s under verified
#     writes (requeued, reconnected, completed, verified); the device
#     deleted under a random mix (the I/O fails, within a bounded time,
#     and so does the disconnect)
#   the device recreated: the target set up again, connect, verified
#     writes, disconnect
#   teardown: no QP, CQ, MR or PD of the device left; the device deleted
#     before the target's configuration; the modules unload
#
# VRDMA_TEST_TYPE=vrdma (default) or rxe (Soft-RoCE, validates the test).
# VRDMA_NVMEOF_SIZE_MB: how much of the disk fio covers (default 8).
# nvmeof_2vm.sh runs target and host in two VMs, over the wire.
#
# make check-long runs it on the host: lib.sh then boots a VM (scripts/vm-run,
# output in out/nvmeof) and runs itself there.
VRDMA_OWN_VM=1500
. "$(dirname "$0")/../lib/lib.sh"
. "$(dirname "$0")/../lib/nvme_lib.sh"

TYPE=${VRDMA_TEST_TYPE:-vrdma}
SLOW=${VRDMA_TEST_SLOW:-1}
NETDEV=nvf0 PEER=nvf1
IP=10.219.0.1
PORTNO=4420
NQN=nqn.2026-11.io.vrdma:nvmeof-test
HOSTNQN=nqn.2014-08.org.nvmexpress:uuid:$(cat /proc/sys/kernel/random/uuid)
SIZE_MB=${VRDMA_NVMEOF_SIZE_MB:-8}
CFG=/sys/kernel/config/nvmet

[ "$(id -u)" -eq 0 ] || skip_all "must run as root (in the VM)"
command -v nvme >/dev/null || skip_all "nvme-cli is not installed"
command -v fio >/dev/null || skip_all "fio is not installed"
need_modules nvmet nvmet-rdma nvme-rdma null_blk

use_device_type
DEV=${TYPE}0

scratch=$(mktemp -d /tmp/nvmeof.XXXXXX) || exit 1

cleanup()
{
	nvme disconnect -n "$NQN" >/dev/null 2>&1
	target_down 2>/dev/null
	rmmod nvme_rdma nvmet_rdma 2>/dev/null
	rdma link delete "$DEV" 2>/dev/null
	ip link del "$NETDEV" 2>/dev/null
	rmmod nvmet nvme_fabrics null_blk 2>/dev/null
	[ -z "$loaded_rxe" ] || rmmod rdma_rxe 2>/dev/null
	rm -rf "$scratch"
}
trap cleanup EXIT

# dev_up: the netdev with its address and the device on it, port active
# and its IPv4 GID in the table (rdma_cm binds and resolves through it).
dev_up()
{
	local t

	veth_dev_up "$NETDEV" "$PEER" "$IP" "$DEV" || return 1
	t=$SECONDS
	wait_until $((30 * SLOW)) roce_v2_ipv4_gid "$DEV" || return 1
	echo "# $DEV's IPv4 GID found $((SECONDS - t)) s after the port went active"
}

link_up()
{
	ip link set "$NETDEV" up && wait_until 20 port_active "$DEV"
}

have_ns_dev()
{
	[ -n "$(ns_dev)" ] && [ -b "$(ns_dev)" ]
}

no_ns_dev()
{
	[ -z "$(ns_dev)" ]
}

connect()
{
	nvme connect -t rdma -a "$IP" -s "$PORTNO" -n "$NQN" \
		--hostnqn="$HOSTNQN" "$@" && wait_until $((30 * SLOW)) have_ns_dev
}

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


no_ctrl() { [ -z "$(ctrl_attr state)" ]; }

disconnect()
{
	nvme disconnect -n "$NQN" && wait_until $((20 * SLOW)) no_ns_dev
}

# nvme_state: the host's NVMe controllers, namespaces, block devices.
nvme_state()
{
	local c

	for c in /sys/class/nvme/nvme*; do
		[ -e "$c" ] || continue
		echo "# ${c##*/}: $(cat "$c/state" "$c/subsysnqn" "$c/cntlid" \
			"$c/address" 2>&1 | tr '\n' ' ')"
		ls "$c" | grep '^nvme' | sed 's/^/#   /'
	done
	ls /sys/block /sys/class/nvme-subsystem /dev | grep nvme | tr '\n' ' ' |
		sed 's/^/# /'
	echo
}

# dmesg_since N: the kernel's NVMe and RDMA lines after line N, as comments.
dmesg_since()
{
	dmesg | tail -n +$(($1 + 1)) | grep -E 'nvme|rdma|infiniband|null' |
		tail -n 40 | sed 's/^/#   /'
}

link_flap()
{
	local n0 t0 fio_pid

	n0=$(dmesg | wc -l)
	t0=$SECONDS
	fio_blockdev "$(ns_dev)" flap --rw=randwrite --bs=4k --iodepth=16 \
		--verify=crc32c --do_verify=1 --verify_fatal=1 --rate_iops=200 &
	fio_pid=$!
	sleep 3
	check "fio is running when the link goes down" kill -0 "$fio_pid"
	check "ip link set $NETDEV down for 10 s" ip link set "$NETDEV" down
	sleep 10
	check "ip link set $NETDEV up, port active" link_up
	wait "$fio_pid"
	check_eq "fio completed and verified every block after the flap" 0 "$?"
	echo "# fio took $((SECONDS - t0)) s"
	check_match "the controller recovered from the error" \
		"Successfully reconnected" "$(dmesg | tail -n +$((n0 + 1)) | grep nvme)"
}

# The device first: ib_core gives a QP1 (GSI) for its MAD agents only to
# devices that kernel consumers can use; without one there is no rdma_cm.
dev_ok=0
dev_up && dev_ok=1
[ "$dev_ok" -eq 0 ] ||
	rdma resource show qp link "$DEV/1" 2>/dev/null | grep -q 'type GSI' ||
	skip_all "$DEV has no QP1: no kernel verbs, no rdma_cm"
check_eq "$DEV on $NETDEV ($IP), port active" 1 "$dev_ok"
check "modules nvmet, nvmet-rdma, nvme-rdma, null_blk load" \
	modprobe -a nvmet nvmet-rdma nvme-rdma
check "null_blk: a memory-backed disk" \
	modprobe null_blk nr_devices=1 gb=1 memory_backed=1
res0=$(rdma_res)
echo "# resources of $DEV before: $res0"
check "nvmet: subsystem, namespace on /dev/nullb0, rdma port $IP:$PORTNO" \
	target_up "$IP"
check "nvme connect -t rdma -a $IP -s $PORTNO" connect
devname=$(ns_dev)
check_match "the namespace's block device appears" '^/dev/nvme' "$devname"
ulp_perf "$devname"
# nvme-rdma opens an I/O queue per CPU, as many as the device has
# completion vectors: one per CPU, as a multi-queue NIC's.
check_eq "an I/O queue per CPU (and the admin queue)" $(($(nproc) + 1)) \
	"$(ctrl_attr queue_count)"
check_eq "the controller's transport is rdma, address $IP" \
	"rdma traddr=$IP,trsvcid=$PORTNO" \
	"$(ctrl_attr transport) $(ctrl_attr address | sed 's/,src_addr=.*//')"

check "fio: 4 KiB random writes, read back, crc32c verified" \
	fio_blockdev "$(ns_dev)" rand4k --rw=randwrite --bs=4k --iodepth=16 \
	--verify=crc32c --do_verify=1 --verify_fatal=1
check "fio: 1 MiB sequential writes, read back, crc32c verified" \
	fio_blockdev "$(ns_dev)" seq1m --rw=write --bs=1M --iodepth=4 \
	--verify=crc32c --do_verify=1 --verify_fatal=1
check "fio: 4 KiB random read/write mix, two jobs" \
	fio_blockdev "$(ns_dev)" mix4k --rw=randrw --bs=4k --iodepth=32 \
	--numjobs=2
check "nvme disconnect" nvme disconnect -n "$NQN"
check "the block device goes away" wait_until $((20 * SLOW)) no_ns_dev

# The link killed under I/O, twice.
#
# A flap: the netdev goes down for 10 s under verified random writes.
# nvme-rdma notices (keep-alive, or a failed send), tears the queues down
# and requeues the I/O (multipath: "no usable path"), reconnects once the
# link is back, and the I/O goes on: fio completes and verifies every
# block.
#
# rdma_rxe (6.1) cannot do this one: its error recovery never ends (the
# queue teardown waits for ever, and so does anything that waits for it).
check "nvme connect again (keep-alive 5 s, reconnect delay 1 s)" \
	connect --ctrl-loss-tmo=-1 --reconnect-delay=1 --keep-alive-tmo=5
if [ "$TYPE" = rxe ]; then
	echo "# rdma_rxe: the link flap is not tested (its recovery hangs)"
else
	link_flap
fi

# The device deleted under I/O (the link up, so that the peer's CM
# answers): nvme-rdma deletes the controller, the I/O fails ("no
# available path"), fio ends with errors -- but ends, and so does "rdma
# link delete".
# fio must not create a file in /dev when the block device goes: that
# file would keep devtmpfs from making the new namespace's device node
# of the same name (the reconnect below then finds no block device).
t0=$SECONDS
devname=$(ns_dev)
timeout -k 10 $((240 * SLOW)) fio --name=kill --filename="$devname" \
	--allow_file_create=0 \
	--ioengine=libaio --direct=1 --rw=randrw --bs=4k --iodepth=32 \
	--size="${SIZE_MB}M" --time_based --runtime=$((120 * SLOW)) \
	--output="$scratch/kill.log" >/dev/null 2>&1 &
fio_pid=$!
sleep 3
check "fio is running when the device goes" kill -0 "$fio_pid"
check "rdma link delete $DEV under I/O returns" \
	timeout $((120 * SLOW)) rdma link delete "$DEV"
wait "$fio_pid"
fio_rc=$?
echo "# fio ended after $((SECONDS - t0)) s, exit $fio_rc"
grep -m 3 'err=' "$scratch/kill.log" | sed 's/^/#   /'
check "fio's I/O failed (the device is gone)" test "$fio_rc" -ne 0
# timeout(1) exits 124 (137 after -k) when it had to stop fio.
check "fio ended by itself, no hang" test "$fio_rc" -ne 124 -a "$fio_rc" -ne 137
check "the controller's block device is gone" wait_until $((60 * SLOW)) no_ns_dev
check "no file left at $devname" \
	wait_until $((20 * SLOW)) test ! -e "$devname"
check "nvme disconnect returns" \
	timeout $((30 * SLOW)) sh -c "nvme disconnect -n $NQN; true"
# nvme-cli refuses to connect ("already connected") while a controller
# with the same address and NQN is in sysfs, even one being deleted.
t0=$SECONDS
check "the controller is gone" wait_until $((60 * SLOW)) no_ctrl
echo "# the controller went $((SECONDS - t0)) s after its block device"

# A new device, and an orderly teardown at the end: nothing of the ULPs
# may be left on it.
ip link del "$NETDEV" 2>/dev/null
n0=$(dmesg | wc -l) f0=$_tap_failed
check "$DEV recreated, port active, IPv4 GID" dev_up
res0=$(rdma_res)
# nvmet's port lost its listener with the old device; its repair does not
# always bring it back: the port is set up anew.
target_again() { target_down && target_up "$IP"; }
check "the target set up again" target_again
check "nvme connect to the new device" connect
if ! have_ns_dev; then
	nvme_state
	t0=$SECONDS
	wait_until $((30 * SLOW)) have_ns_dev &&
		echo "# ... the namespace came $((SECONDS - t0)) s later"
	nvme_state
fi
check "fio: 1 MiB sequential writes, read back, crc32c verified" \
	fio_blockdev "$(ns_dev)" again --rw=write --bs=1M --verify=crc32c \
	--do_verify=1 --verify_fatal=1
check "nvme disconnect, the block device goes away" disconnect
[ "$_tap_failed" -eq "$f0" ] || dmesg_since "$n0"

# The device goes before the target's configuration: nvmet's listener
# goes with it (rdma_cm destroys it on DEVICE_REMOVAL).  Removing the
# port's subsystem link while the listener lives destroys it with
# nvmet_config_sem held, and lockdep, which has one class for every
# cm_id's handler_mutex, takes that for the reverse of an ESTABLISHED
# handler running a queued connect command (which takes the semaphore):
# upstream code, on any RDMA device.
same_res() { [ "$(rdma_res)" = "$res0" ]; }
check "no QP, CQ, MR or PD of the ULPs left on $DEV" \
	wait_until $((30 * SLOW)) same_res
if ! same_res; then
	echo "# before: $res0, now: $(rdma_res)"
	rdma resource show | sed 's/^/#   /'
fi
check "rdma link delete $DEV" rdma link delete "$DEV"
check "the target goes down" target_down
check "nvme-rdma and nvmet-rdma unload" rmmod nvme_rdma nvmet_rdma
finish
