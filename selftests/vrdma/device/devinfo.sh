#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# The standard tools see a vrdma device through our provider:
# ibv_devices, ibv_devinfo -v, rdma dev/link.
. "$(dirname "$0")/../lib/lib.sh"

vrdma_load || exit 1
veth_pair vd0 vd1
ip addr add 192.168.77.1/24 dev vd0
rdma link add vrdma0 type vrdma netdev vd0

check_match "ibv_devices lists vrdma0" "^[[:space:]]*vrdma0[[:space:]]+[0-9a-f]{16}" \
	"$(ibv_devices)"
out=$(ibv_devinfo -v -d vrdma0 2>&1)
check "ibv_devinfo -v -d vrdma0 succeeds" ibv_devinfo -v -d vrdma0
check_eq "no provider warning" "" \
	"$(ibv_devinfo -d vrdma0 2>&1 >/dev/null | grep -i 'couldn.t\|no userspace\|warning')"

field() { printf '%s\n' "$out" | sed -n "s/^[[:space:]]*$1:[[:space:]]*//p" | head -n 1; }

# The node GUID is the EUI-64 of the netdev's MAC.
mac=$(cat /sys/class/net/vd0/address)
IFS=: read -r m0 m1 m2 m3 m4 m5 <<<"$mac"
guid=$(printf '%02x%s:%s%s:%s%s:%s%s' $((0x$m0 ^ 2)) "$m1" "$m2" ff fe "$m3" "$m4" "$m5")
check_eq "transport" "InfiniBand (0)" "$(field transport)"
check_eq "fw_ver" "1.0.0" "$(field fw_ver)"
check_eq "node_guid is EUI-64 of the MAC" "$guid" "$(field node_guid)"
check_eq "sys_image_guid" "$guid" "$(field sys_image_guid)"
check_eq "vendor_id" "0xffffff" "$(field vendor_id)"
check_eq "vendor_part_id" "30322" "$(field vendor_part_id)"
check_eq "phys_port_cnt" "1" "$(field phys_port_cnt)"
check_eq "max_mr_size" "0x10000000000" "$(field max_mr_size)"
check_eq "max_qp" "16384" "$(field max_qp)"
check_eq "max_qp_wr" "16384" "$(field max_qp_wr)"
check_eq "max_sge" "32" "$(field max_sge)"
check_eq "max_cq" "16384" "$(field max_cq)"
check_eq "max_cqe" "65535" "$(field max_cqe)"
check_eq "max_mr" "65536" "$(field max_mr)"
check_eq "max_pd" "65536" "$(field max_pd)"
check_eq "max_srq" "4096" "$(field max_srq)"
check_eq "atomic_cap" "ATOMIC_HCA (1)" "$(field atomic_cap)"
check_eq "port state" "PORT_ACTIVE (4)" "$(field state)"
check_eq "link_layer" "Ethernet" "$(field link_layer)"
check_eq "active_mtu" "1024 (3)" "$(field active_mtu)"
check_eq "phys_state" "LINK_UP (5)" "$(field phys_state)"
check "GID table has the IPv4 address" wait_until 10 sh -c \
	'ibv_devinfo -v -d vrdma0 | grep -q "::ffff:192.168.77.1, RoCE v2"'
check_match "GID table has the IPv6 link-local" "GID\[ *[0-9]+\]:[[:space:]]*fe80::.*RoCE v2" \
	"$(ibv_devinfo -v -d vrdma0)"

check_match "rdma dev shows vrdma0" "vrdma0: node_type ca fw 1.0.0 node_guid" \
	"$(rdma dev show vrdma0)"
check_match "rdma link: ACTIVE on vd0" "link vrdma0/1 state ACTIVE physical_state LINK_UP netdev vd0" \
	"$(rdma link show vrdma0/1)"

rdma link delete vrdma0
ip link del vd0
finish
