#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# The port follows its netdev: state with carrier and admin state, active
# MTU with the MTU, GIDs with the IP addresses; the device goes away with
# the netdev.
. "$(dirname "$0")/../lib/lib.sh"

vrdma_load || exit 1
veth_pair ve0 ve1
rdma link add vrdma0 type vrdma netdev ve0

check_eq "port ACTIVE with carrier" "ACTIVE" "$(port_state vrdma0)"
check_eq "ibv_devinfo: PORT_ACTIVE" "PORT_ACTIVE (4)" \
	"$(devinfo_field vrdma0 state)"

ip link set ve0 down
check_eq "port DOWN when the netdev is down" "DOWN" "$(port_state vrdma0)"
check_eq "phys state DISABLED when down" "DISABLED" \
	"$(rdma link show vrdma0/1 | sed -n 's/.*physical_state \([A-Z_]*\).*/\1/p')"
ip link set ve0 up
check_eq "port ACTIVE again when up" "ACTIVE" "$(port_state vrdma0)"

ip link set ve1 down	# the peer: ve0 loses carrier but stays up
check_eq "port DOWN without carrier" "DOWN" "$(port_state vrdma0)"
check_eq "phys state POLLING without carrier" "POLLING" \
	"$(rdma link show vrdma0/1 | sed -n 's/.*physical_state \([A-Z_]*\).*/\1/p')"
ip link set ve1 up
check "port ACTIVE when carrier returns" \
	wait_until 5 sh -c '[ "$(rdma link show vrdma0/1 | grep -o "state ACTIVE")" ]'

check_eq "active_mtu 1024 at MTU 1500" "1024 (3)" \
	"$(devinfo_field vrdma0 active_mtu)"
ip link set ve0 mtu 9000
check_eq "active_mtu 4096 at MTU 9000" "4096 (5)" \
	"$(devinfo_field vrdma0 active_mtu)"
ip link set ve0 mtu 1100
check_eq "active_mtu 512 at MTU 1100" "512 (2)" \
	"$(devinfo_field vrdma0 active_mtu)"
check_eq "max_mtu 4096" "4096 (5)" "$(devinfo_field vrdma0 max_mtu)"
ip link set ve0 mtu 1500

# GIDs: IPv6 link-local appears with the link; IPv4 when added.
gids()
{
	cat /sys/class/infiniband/vrdma0/ports/1/gids/* 2>/dev/null
}
check "IPv6 link-local GID present" \
	wait_until 10 sh -c 'cat /sys/class/infiniband/vrdma0/ports/1/gids/* | grep -q "^fe80:"'
ip addr add 10.11.12.13/24 dev ve0
check "IPv4 GID appears with the address" \
	wait_until 10 sh -c 'cat /sys/class/infiniband/vrdma0/ports/1/gids/* | grep -q "0000:ffff:0a0b:0c0d"'
check_match "IPv4 GID is RoCE v2" "RoCE v2" \
	"$(for f in /sys/class/infiniband/vrdma0/ports/1/gid_attrs/types/*; do cat "$f" 2>/dev/null; done | sort -u)"
ip addr add 2001:db8::5/64 dev ve0 nodad
check "IPv6 GID appears with the address" \
	wait_until 10 sh -c 'cat /sys/class/infiniband/vrdma0/ports/1/gids/* | grep -q "^2001:0db8:0000:0000:0000:0000:0000:0005"'
ip addr del 10.11.12.13/24 dev ve0
check "IPv4 GID goes with the address" \
	wait_until 10 sh -c '! cat /sys/class/infiniband/vrdma0/ports/1/gids/* | grep -q "0000:ffff:0a0b:0c0d"'

# Deleting the netdev removes the device, and nothing hangs.
check "netdev delete returns" timeout 30 ip link del ve0
check "device disappears with its netdev" \
	wait_until 10 sh -c '[ -z "$(ls /sys/class/infiniband)" ]'
check "rdma link show works" rdma link show
check_eq "rdma link shows nothing" "" "$(rdma link show)"

# Again with a process holding the device open.
veth_pair ve0 ve1
rdma link add vrdma0 type vrdma netdev ve0
sleep 60 < /dev/infiniband/uverbs0 &
holder=$!
check "a process holds uverbs0 open" wait_until 10 sh -c \
	"ls -l /proc/$holder/fd/0 | grep -q uverbs0"
check "netdev delete with an open uverbs file returns" timeout 30 ip link del ve0
check "device disappears with its netdev" \
	wait_until 10 sh -c '[ -z "$(ls /sys/class/infiniband)" ]'
kill "$holder" 2>/dev/null
wait "$holder" 2>/dev/null

check "module unloads cleanly" rmmod vrdma
finish
