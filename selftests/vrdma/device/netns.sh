#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# vrdma in network namespaces.  A veth pair joins namespaces nsa and nsb;
# vrdma links are created inside them ("ip netns exec ... rdma link add")
# and carry ibv_rc_pingpong --chk from one namespace to the other:
#
#   shared mode (the default): every namespace sees every RDMA device;
#   exclusive mode ("rdma system set netns exclusive"): the devices are
#     moved into the namespaces with "rdma dev set vrdma0 netns nsa" and
#     are seen there only.
#
# Deleting the namespaces deletes the veths and with them the devices;
# nothing may be left (devices, their parent devices, the module unloads)
# and the console must stay clean (scripts/vm-run fails on a WARN).
. "$(dirname "$0")/../lib/lib.sh"

A=nsa B=nsb
IPA=10.220.0.1 IPB=10.220.0.2
ITERS=${NETNS_PINGPONG_ITERS:-200}
TMO=$((60 * ${VRDMA_TEST_SLOW:-1}))

cleanup()
{
	ip netns del $A 2>/dev/null
	ip netns del $B 2>/dev/null
	rdma system set netns shared 2>/dev/null
}
trap cleanup EXIT

command -v ibv_rc_pingpong >/dev/null || skip_all "ibv_rc_pingpong not installed"
vrdma_load || skip_all "cannot load vrdma"
cleanup

# setup: the namespaces and the veth between them, up and addressed.  Each
# namespace gets an id in the initial one, which its teardown removes
# (cleanup_net, before the subsystems' exit, ib_core's included).
setup()
{
	ip netns add $A && ip netns add $B &&
		ip netns set $A auto && ip netns set $B auto &&
		ip -n $A link add va type veth peer name vb netns $B &&
		ip -n $A addr add $IPA/24 dev va &&
		ip -n $B addr add $IPB/24 dev vb &&
		ip -n $A link set va up && ip -n $B link set vb up &&
		ip -n $A link set lo up && ip -n $B link set lo up
}

# ipv4_gid NS DEV: the index of DEV's RoCE v2 IPv4 GID, seen from NS.
ipv4_gid()
{
	ip netns exec "$1" sh -c '
		d=/sys/class/infiniband/$0/ports/1
		for f in $(grep -l "^0000:0000:0000:0000:0000:ffff:" $d/gids/*); do
			i=${f##*/}
			[ "$(cat $d/gid_attrs/types/$i)" = "RoCE v2" ] &&
				echo $i && exit 0
		done
		exit 1' "$2"
}

# pingpong DESC: ibv_rc_pingpong --chk, server vrdma0 in nsa, client
# vrdma1 in nsb.
pingpong()
{
	local ga gb slog spid rc src

	ga=$(wait_until 10 ipv4_gid $A vrdma0 && ipv4_gid $A vrdma0)
	gb=$(wait_until 10 ipv4_gid $B vrdma1 && ipv4_gid $B vrdma1)
	slog=$(mktemp)
	ip netns exec $A timeout $TMO ibv_rc_pingpong --chk -n "$ITERS" \
		-d vrdma0 -g "$ga" -p 18790 >"$slog" 2>&1 &
	spid=$!
	wait_until 20 ip netns exec $A sh -c 'ss -Hltn "sport = :18790" | grep -q .'
	out=$(ip netns exec $B timeout $TMO ibv_rc_pingpong --chk \
		-n "$ITERS" -d vrdma1 -g "$gb" -p 18790 $IPA 2>&1)
	rc=$?
	wait "$spid"
	src=$?
	if [ "$rc" -ne 0 ] || [ "$src" -ne 0 ] ||
	   ! printf '%s\n' "$out" | grep -q "$ITERS iters"; then
		echo "# gids $ga $gb; client exit $rc, server exit $src"
		printf '%s\n' "$out" | sed 's/^/#   /'
		sed 's/^/#   /' "$slog"
		tap_result 1 "$1"
	else
		tap_result 0 "$1"
	fi
	rm -f "$slog"
}

# ns_ids: the ids of $A and $B in the initial namespace, from our_ids.
ns_ids=
our_ids()
{
	ip netns list-id |
		sed -n "s/^nsid \([0-9]*\) .*name: \($A\|$B\))$/\1/p" |
		tr '\n' ' '
}

# torn_down: the teardown of the namespaces setup made has begun (their
# ids, ns_ids, are gone).
torn_down()
{
	local ids i

	ids=" $(ip netns list-id | sed -n 's/^nsid \([0-9]*\).*/\1/p' |
		tr '\n' ' ')"
	for i in $ns_ids; do
		case $ids in *" $i "*) return 1 ;; esac
	done
}

# netns_diag: what may hold a namespace, when the mode cannot change (in
# check's output, which comments it).
netns_diag()
{
	local p

	echo "ids of $A, $B: ${ns_ids:-none}; ids the initial namespace has:"
	ip netns list-id | sed 's/^/  /'
	echo "named namespaces: $(ip netns list | tr '\n' ' ')"
	echo "namespaces of processes (count, namespace):"
	readlink /proc/[0-9]*/ns/net 2>/dev/null | sort | uniq -c
	dmesg | grep -E 'to become free|cleanup_net' | tail -n 5
	for p in /proc/[0-9]*; do
		grep -qE 'cleanup_net|rdma_dev_exit_net|netdev_wait_allrefs' \
			"$p/stack" 2>/dev/null || continue
		echo "$(cat "$p/comm") (${p#/proc/}) in a namespace's teardown:"
		sed 's/^/  /' "$p/stack"
	done
}

# netns_mode MODE: rdma system set netns MODE.  The kernel refuses to
# switch while any namespace but the initial one exists, and "ip netns del"
# only starts a namespace's teardown (cleanup_net runs later, on a
# workqueue, behind any teardown before it): wait until the teardown of
# ours has begun, then retry EBUSY while ib_core's part of it runs.  If it
# never comes, say what still holds namespaces.
netns_mode()
{
	wait_until $((TMO * 2)) torn_down ||
		echo "the teardown of $A and $B has not begun"
	wait_until $((TMO / 2)) rdma system set netns "$1" && return 0
	rdma system set netns "$1" && return 0
	netns_diag
	return 1
}

# gone: no vrdma device and no parent device left.
gone()
{
	[ -z "$(ls /sys/class/infiniband 2>/dev/null | grep vrdma)" ] &&
		[ -z "$(ls /sys/class/vrdma 2>/dev/null)" ]
}

# Shared mode.
check "rdma system netns shared" netns_mode shared
check "namespaces and veth" setup
ns_ids=$(our_ids)
check "rdma link add inside $A" \
	ip netns exec $A rdma link add vrdma0 type vrdma netdev va
check "rdma link add inside $B" \
	ip netns exec $B rdma link add vrdma1 type vrdma netdev vb
check_match "$A: vrdma0 on va, ACTIVE" "netdev va" \
	"$(wait_until 10 sh -c "ip netns exec $A rdma link show vrdma0/1 | grep -q ACTIVE"; ip netns exec $A rdma link show vrdma0/1)"
check_eq "vrdma0's device/net names va (seen from $A)" "va" \
	"$(ip netns exec $A ls /sys/class/infiniband/vrdma0/device/net/)"
check "shared: vrdma1 is seen from the initial namespace too" \
	test -e /sys/class/infiniband/vrdma1
pingpong "shared: ibv_rc_pingpong --chk $B -> $A"
check "shared: ip netns del $A $B" sh -c "ip netns del $A && ip netns del $B"
check "shared: both devices gone with their veth" wait_until 30 gone

# Exclusive mode.
check "rdma system set netns exclusive" netns_mode exclusive
check "namespaces and veth" setup
ns_ids=$(our_ids)
check "rdma link add inside $A" \
	ip netns exec $A rdma link add vrdma0 type vrdma netdev va
check "rdma link add inside $B" \
	ip netns exec $B rdma link add vrdma1 type vrdma netdev vb
check "rdma dev set vrdma0 netns $A" rdma dev set vrdma0 netns $A
check "rdma dev set vrdma1 netns $B" rdma dev set vrdma1 netns $B
check_eq "exclusive: $A sees vrdma0 only" "vrdma0" \
	"$(ip netns exec $A ls /sys/class/infiniband | tr '\n' ' ' | sed 's/ $//')"
check "exclusive: the initial namespace sees neither" \
	sh -c '! ls /sys/class/infiniband | grep -q vrdma'
check_match "exclusive: $A: rdma link shows vrdma0 on va" "vrdma0/1 .*netdev va" \
	"$(ip netns exec $A rdma link show)"
pingpong "exclusive: ibv_rc_pingpong --chk $B -> $A"
check "exclusive: ip netns del $A $B" sh -c "ip netns del $A && ip netns del $B"
check "exclusive: both devices gone" wait_until 30 gone
check "rdma system set netns shared" netns_mode shared

check "the module unloads" vrdma_unload
finish
