#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# NFS over RDMA on the device: the kernel NFS server (knfsd with svcrdma)
# exports a tmpfs and listens on "rdma 20049"; the kernel NFS client
# (xprtrdma) in the same VM mounts it with proto=rdma.  Both are kernel
# consumers: rdma_cm, kernel QPs and CQs, and the client's fast
# registrations (REG_MR, LOCAL_INV; the server's SEND with invalidate).
#
#   a file written through the mount (buffered, then O_DIRECT) reads back
#   with the same checksum through the mount (cache dropped) and on the
#   server's tmpfs; the mount really uses RDMA (mountstats); unmount,
#   server stopped, nothing of either left on the device
#
# VRDMA_TEST_TYPE=vrdma (default) or rxe (Soft-RoCE, validates the test).
# VRDMA_NFSRDMA_SIZE_MB: the size of the file (default 8).
#
# make check-long runs it on the host: lib.sh then boots a VM (scripts/vm-run,
# output in out/nfsrdma) and runs itself there.
VRDMA_OWN_VM=900
. "$(dirname "$0")/../lib/lib.sh"

TYPE=${VRDMA_TEST_TYPE:-vrdma}
SLOW=${VRDMA_TEST_SLOW:-1}
NETDEV=nfr0 PEER=nfr1
IP=10.220.0.1
NFSPORT=20049
SIZE_MB=${VRDMA_NFSRDMA_SIZE_MB:-8}

[ "$(id -u)" -eq 0 ] || skip_all "must run as root (in the VM)"
for c in rpc.nfsd rpc.mountd exportfs rpcbind mount.nfs; do
	command -v "$c" >/dev/null ||
		skip_all "$c is not installed (nfs-kernel-server, rpcbind)"
done
need_modules nfsd rpcrdma nfsv4

use_device_type
DEV=${TYPE}0

scratch=$(mktemp -d /tmp/nfsrdma.XXXXXX) || exit 1
EXPORT=$scratch/export
MNT=$scratch/mnt
rpcbind_pid=
mountd_pid=

server_stop()
{
	rpc.nfsd 0 >/dev/null 2>&1
	exportfs -ua >/dev/null 2>&1
	[ -z "$mountd_pid" ] || kill "$mountd_pid" 2>/dev/null
	[ -z "$rpcbind_pid" ] || kill "$rpcbind_pid" 2>/dev/null
	wait 2>/dev/null
	mountd_pid=''
	rpcbind_pid=''
}

cleanup()
{
	umount -f "$MNT" 2>/dev/null
	server_stop
	umount "$EXPORT" 2>/dev/null
	rdma link delete "$DEV" 2>/dev/null
	ip link del "$NETDEV" 2>/dev/null
	[ -z "$loaded_rxe" ] || rmmod rdma_rxe 2>/dev/null
	rm -rf "$scratch"
}
trap cleanup EXIT

dev_up() { veth_dev_up "$NETDEV" "$PEER" "$IP" "$DEV"; }

# rdma_res: how many QPs, CQs, MRs and PDs the device has.
rdma_res()
{
	local k

	for k in qp cq mr pd; do
		echo "$k $(rdma resource show "$k" 2>/dev/null |
			grep -Ec "(dev $DEV |link $DEV/)")"
	done | tr '\n' ' '
}

# server_start: rpcbind, mountd, the export, nfsd (NFSv4 only, a short
# grace period so that the first OPEN need not wait 90 s), then its RDMA
# listener.
server_start()
{
	local d=/proc/fs/nfsd

	mkdir -p "$EXPORT" "$MNT" /var/lib/nfs/v4recovery /run/rpcbind &&
		mount -t tmpfs -o size=64m nfsexport "$EXPORT" || return 1
	grep -q " $d nfsd " /proc/mounts || mount -t nfsd nfsd "$d" || return 1
	echo 10 >"$d/nfsv4leasetime" && echo 10 >"$d/nfsv4gracetime" ||
		return 1
	rpcbind -f -w >>"$scratch/server.log" 2>&1 &
	rpcbind_pid=$!
	sleep 1
	rpc.mountd -F -N 3 >>"$scratch/server.log" 2>&1 &
	mountd_pid=$!
	# The NFSv4 root itself (fsid=0): the VM's own root, an overlay, is
	# no file system a pseudo root could be built on.
	exportfs -i -o rw,no_root_squash,no_subtree_check,insecure,fsid=0 \
		"*:$EXPORT" && rpc.nfsd -N 3 4 &&
		echo "rdma $NFSPORT" >"$d/portlist"
}

sum()
{
	sha256sum <"$1" | cut -d' ' -f1
}

# The device first: ib_core gives a QP1 (GSI) for its MAD agents only to
# devices that kernel consumers can use; without one there is no rdma_cm.
dev_ok=0
dev_up && dev_ok=1
[ "$dev_ok" -eq 0 ] ||
	rdma resource show qp link "$DEV/1" 2>/dev/null | grep -q 'type GSI' ||
	skip_all "$DEV has no QP1: no kernel verbs, no rdma_cm"
check_eq "$DEV on $NETDEV ($IP), port active" 1 "$dev_ok"
check "modules nfsd, rpcrdma, nfsv4 load" modprobe -a nfsd rpcrdma nfsv4
res0=$(rdma_res)
echo "# resources of $DEV before: $res0"
# Not through check(): the daemons it starts would hold its output open.
server_start >>"$scratch/server.log" 2>&1
rc=$?
[ "$rc" -eq 0 ] || sed 's/^/#   /' "$scratch/server.log"
check_eq "knfsd exports a tmpfs, listening on rdma $NFSPORT" 0 "$rc"
portlist=$(cat /proc/fs/nfsd/portlist 2>/dev/null)
check_match "the portlist has rdma $NFSPORT" "^rdma $NFSPORT\$" "$portlist"
# NFSv4.1 where the client has it; the debug kernel's defconfig leaves
# CONFIG_NFS_V4_1 out, and 4.0 crosses RDMA just the same.
vers=4.1
{ zcat /proc/config.gz 2>/dev/null || cat "/boot/config-$(uname -r)"; } \
	2>/dev/null | grep -q '^# CONFIG_NFS_V4_1 is not set' && vers=4.0
check "mount -o vers=$vers,proto=rdma,port=$NFSPORT" \
	timeout $((120 * SLOW)) mount -t nfs \
	-o "vers=$vers,proto=rdma,port=$NFSPORT" "$IP:/" "$MNT"
# Nothing below means anything without the mount.
mountpoint -q "$MNT" || finish
ulp_perf "$MNT/perf"
check_match "the mount uses proto=rdma" "proto=rdma" \
	"$(grep " $MNT " /proc/mounts)"
check_match "its transport is RDMA (mountstats)" "xprt:[[:space:]]+rdma" \
	"$(grep -A 40 " $MNT " /proc/self/mountstats)"

check "a random file of $SIZE_MB MiB" \
	dd if=/dev/urandom of="$scratch/src" bs=1M count="$SIZE_MB" status=none
want=$(sum "$scratch/src")
check "written through the mount" \
	timeout $((120 * SLOW)) cp "$scratch/src" "$MNT/file"
check "synced" timeout $((60 * SLOW)) sync
check_eq "the server's copy has the same checksum" "$want" \
	"$(sum "$EXPORT/file")"
echo 3 >/proc/sys/vm/drop_caches
check_eq "read back through the mount (cache dropped): same checksum" \
	"$want" "$(timeout $((120 * SLOW)) sha256sum <"$MNT/file" | cut -d' ' -f1)"
check "written with O_DIRECT in 1 MiB requests" \
	timeout $((120 * SLOW)) dd if="$scratch/src" of="$MNT/direct" bs=1M \
	oflag=direct status=none
check_eq "the server's copy of that has the same checksum" "$want" \
	"$(sum "$EXPORT/direct")"
check_eq "read back with O_DIRECT: same checksum" "$want" \
	"$(timeout $((120 * SLOW)) dd if="$MNT/direct" bs=1M iflag=direct \
	   status=none | sha256sum | cut -d' ' -f1)"
check "unmount" timeout $((60 * SLOW)) umount "$MNT"
server_stop
check_eq "server stopped (no nfsd thread left)" 0 \
	"$(cat /proc/fs/nfsd/threads 2>/dev/null || echo 0)"
check "export unmounted" umount "$EXPORT"
# rpcrdma keeps nothing once the transports are gone: the reaper may
# take a moment.
res_back() { [ "$(rdma_res)" = "$res0" ]; }
wait_until $((30 * SLOW)) res_back
check_eq "no QP, CQ, MR or PD of NFS left on $DEV" "$res0" "$(rdma_res)"
check "rdma link delete $DEV" timeout $((60 * SLOW)) rdma link delete "$DEV"
finish
