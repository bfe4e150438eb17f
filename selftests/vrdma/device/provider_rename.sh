#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# libvrdma finds its devices by their parent's modalias, not by their
# name: a device renamed with "rdma dev set DEV name NEW" is still listed
# and opened through our provider (ibv_devices, ibv_devinfo, whose
# VERBS_LOG_LEVEL debug log has the provider's own line for it), and
# ibv_rc_pingpong --chk runs on it (loopback through its own IPv4 GID);
# renamed back, it is found again.
. "$(dirname "$0")/../lib/lib.sh"

[ "$(id -u)" -eq 0 ] || skip_all "must run as root (in the VM)"
command -v ibv_rc_pingpong >/dev/null || skip_all "ibv_rc_pingpong not installed"

D=vrdmarn0 NEW=renamed0 N0=rnv0 N1=rnv1 PORT=18790
SLOW=${VRDMA_TEST_SLOW:-1}
SERVER_TIMEOUT=$((240 * SLOW))
CLIENT_TIMEOUT=$((200 * SLOW))
TOOL_WAIT=$((30 * SLOW))
log=$(mktemp)

cleanup()
{
	stop_servers TERM
	rdma_links_del "$NEW" "$D"
	ip link del "$N0" 2>/dev/null
	rm -f "$log"
	return 0
}
trap cleanup EXIT

vrdma_load || exit 1
cleanup
veth_pair "$N0" "$N1" && ip addr add 10.213.0.1/24 dev "$N0" &&
	rdma link add "$D" type vrdma netdev "$N0" || exit 1

check "rdma dev set $D name $NEW" rdma dev set "$D" name "$NEW"
check_eq "its parent's modalias" "vrdma:vrdma" \
	"$(cat "/sys/class/infiniband/$NEW/device/modalias" 2>&1)"
check_match "ibv_devices lists $NEW" "^[[:space:]]*$NEW[[:space:]]+[0-9a-f]{16}" \
	"$(ibv_devices 2>&1)"
check "ibv_devinfo -d $NEW" ibv_devinfo -d "$NEW"
VERBS_LOG_LEVEL=4 VERBS_LOG_FILE=$log ibv_devinfo -d "$NEW" >/dev/null 2>&1
check_match "libvrdma opened $NEW" "$NEW: vrdma_alloc_context: " \
	"$(cat "$log")"
check "$NEW has an IPv4 RoCE v2 GID" \
	wait_until $((10 * SLOW)) roce_v2_ipv4_gid "$NEW"
G=$(roce_v2_ipv4_gid "$NEW")
TOOL_SRV_ARGS=(-p "$PORT")
TOOL_CLI_ARGS=(-p "$PORT" 127.0.0.1)
tool_pair tcp_listening "$PORT" "ibv_rc_pingpong --chk on $NEW" \
	'[0-9]+ iters in' \
	ibv_rc_pingpong --chk -n 20 -d "$NEW" -g "${G:-0}" -- \
	ibv_rc_pingpong --chk -n 20 -d "$NEW" -g "${G:-0}"

check "renamed back to $D" rdma dev set "$NEW" name "$D"
check "ibv_devinfo -d $D" ibv_devinfo -d "$D"
finish
