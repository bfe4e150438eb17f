#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# Loading and unloading vrdma.ko, with and without devices present.
. "$(dirname "$0")/../lib/lib.sh"

vrdma_unload
vrdma_load
check "module loads" grep -q '^vrdma ' /proc/modules
check "module unloads" rmmod vrdma
veth_pair vt0 vt1
check_fails "no vrdma link type without the module" "Invalid argument" \
	rdma link add vrdma0 type vrdma netdev vt0
ip link del vt0
check "module loads again" insmod "$VRDMA_KO"

veth_pair vt0 vt1
check "link add vrdma0" rdma link add vrdma0 type vrdma netdev vt0
check "link add vrdma1" rdma link add vrdma1 type vrdma netdev vt1
check_eq "both devices exist" "vrdma0 vrdma1" "$(ib_devices)"
check "unload with two devices present" rmmod vrdma
check_eq "unload removed the devices" "" "$(ib_devices)"
check "netdevs survive the unload" ip link show vt0
check "load after unload" insmod "$VRDMA_KO"
check "link add after reload" rdma link add vrdma0 type vrdma netdev vt0
check "link delete" rdma link delete vrdma0
ip link del vt0
check "final unload" rmmod vrdma
finish
