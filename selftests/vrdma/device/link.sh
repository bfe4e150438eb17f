#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# rdma link add/delete and every bad input to it: each is refused with an
# error and leaves nothing half-created.
. "$(dirname "$0")/../lib/lib.sh"

vrdma_load || exit 1
veth_pair va0 va1
veth_pair vb0 vb1

check "link add vrdma0 on va0" rdma link add vrdma0 type vrdma netdev va0
check_eq "vrdma0 exists" "vrdma0" "$(ib_devices)"
check_match "rdma link shows vrdma0 on va0" "link vrdma0/1 .* netdev va0" \
	"$(rdma link show)"
check "vrdma0 has a parent device" test -d /sys/class/infiniband/vrdma0/device
check "vrdma0 has a uverbs device" \
	sh -c 'grep -qx vrdma0 /sys/class/infiniband_verbs/uverbs*/ibdev'
check_eq "link layer is Ethernet" "Ethernet" \
	"$(cat /sys/class/infiniband/vrdma0/ports/1/link_layer)"

# Each refusal with the error it is refused with, as rdma prints it: a
# name in use is ib_core's ENFILE, a bound netdev vrdma's EBUSY.
check_fails "unknown netdev is refused" "No such device" \
	rdma link add vrdma1 type vrdma netdev nosuchdev
check_fails "non-Ethernet netdev (lo) is refused" "Invalid argument" \
	rdma link add vrdma1 type vrdma netdev lo
check_fails "duplicate device name is refused" \
	"Too many open files in system" \
	rdma link add vrdma0 type vrdma netdev vb0
check_fails "netdev already bound is refused" "Device or resource busy" \
	rdma link add vrdma1 type vrdma netdev va0
check_eq "no device was half-created" "vrdma0" "$(ib_devices)"
links=$(rdma link show 2>&1)
check_match "rdma link show still lists vrdma0" "link vrdma0/1 " "$links"
check_eq "vb0 carries nothing" "" "$(printf '%s\n' "$links" | grep 'netdev vb0')"

check "vb0 is usable after the refusals" \
	rdma link add vrdma1 type vrdma netdev vb0
check_eq "two devices" "vrdma0 vrdma1" "$(ib_devices)"
check "link delete vrdma1" rdma link delete vrdma1
check_fails "link delete of a deleted device fails" "Wrong device name" \
	rdma link delete vrdma1
check_eq "one device left" "vrdma0" "$(ib_devices)"
check "link delete vrdma0" rdma link delete vrdma0
check_eq "no device left" "" "$(ib_devices)"

# Names are free again after delete, and a netdev can be rebound.
check "re-add on the same netdev" rdma link add vrdma0 type vrdma netdev va0
check_fails "a name without the vrdma prefix is refused" "Invalid argument" \
	rdma link add myrdma type vrdma netdev vb0
check "add with another vrdma name" rdma link add vrdma_x type vrdma netdev vb0
check_eq "custom name kept" "vrdma0 vrdma_x" "$(ib_devices)"

# Tools find a device's netdev in its parent device's net/ directory.
check_eq "vrdma0/device/net names va0" "va0" \
	"$(ls /sys/class/infiniband/vrdma0/device/net/)"
check_eq "vrdma_x/device/net names vb0" "vb0" \
	"$(ls /sys/class/infiniband/vrdma_x/device/net/)"
check "the link leads to the netdev" \
	test /sys/class/infiniband/vrdma0/device/net/va0/ifindex -ef /sys/class/net/va0/ifindex
check "the netdev renamed: va0 -> vr0" \
	sh -c 'ip link set va0 down && ip link set va0 name vr0'
check_eq "device/net follows the rename" "vr0" \
	"$(ls /sys/class/infiniband/vrdma0/device/net/)"
ip link set vr0 name va0 && ip link set va0 up
check_eq "two parent devices" 2 "$(ls /sys/class/vrdma | wc -l)"
check "delete both" sh -c 'rdma link delete vrdma_x && rdma link delete vrdma0'

# Many add/delete cycles leave nothing behind; each made the device.
n=0
for i in $(seq 1 20); do
	rdma link add vrdma0 type vrdma netdev va0 &&
		test -d /sys/class/infiniband/vrdma0 &&
		rdma link delete vrdma0 && n=$((n + 1))
done
check_eq "20 add/delete cycles" 20 "$n"
check_eq "nothing left after cycles" "" "$(ib_devices)"
check_eq "no parent device left" "" "$(ls /sys/class/vrdma)"

ip link del va0
ip link del vb0
finish
