#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# Faults under load, each repeated in a loop while data moves: kill -9 of
# the process, rdma link delete, deleting the netdev, ip link set down/up,
# MTU changes, deleting the peer's network namespace; at the end rmmod
# vrdma with every device busy.
#
# The victim: vrdmafa0 on fa0 and vrdmafa1 on fa1 in the namespace
# vrdmafaults, a veth pair, with fuzz_live moving data between them.  The
# bystander: vrdmafb0/vrdmafb1 on another veth pair (fb1 in vrdmafaultsb),
# with fuzz_live running from start to end.  After each fault the victim's traffic must end when
# told (its transfers may fail: the fault may legitimately break them), no
# process may hang, the devices are rebuilt; the bystander must never see
# a single failed or wrong transfer.  rmmod must either refuse while the
# devices are in use or disassociate their users and succeed; once the
# users are gone it must succeed.  The VM harness catches kernel reports
# and, on the debug kernel, kmemleak's.
#
#   VRDMA_FAULTS_LOOPS   rounds of each fault (default 2; make fuzz: 5)
. "$(dirname "$0")/../lib/lib.sh"

BUILD=$(cd "$(dirname "$0")/.." && pwd)/build
LIVE=$BUILD/fuzz_live
NS=vrdmafaults
NSB=vrdmafaultsb	# the bystander's peer
loops=${VRDMA_FAULTS_LOOPS:-2}
slow=${VRDMA_TEST_SLOW:-1}

# pair_down NS N0 D0 D1 / pair_up NS N0 N1 NET HEX D0 D1: vrdma devices D0
# on netdev N0 (NET.1/24, here) and D1 on its veth peer N1 (NET.2/24, in
# namespace NS), up once both have an IPv4 GID (NET in hex: HEX).
pair_down()
{
	rdma link delete "$3" 2>/dev/null
	ip netns exec "$1" rdma link delete "$4" 2>/dev/null
	ip link del "$2" 2>/dev/null
	ip netns del "$1" 2>/dev/null
}

pair_up()
{
	local ns=$1 n0=$2 n1=$3 net=$4 hex=$5 d0=$6 d1=$7
	local c=/sys/class/infiniband

	ip netns add "$ns" &&
		ip link add "$n0" type veth peer name "$n1" netns "$ns" &&
		ip addr add "$net.1/24" dev "$n0" && ip link set "$n0" up &&
		ip -n "$ns" addr add "$net.2/24" dev "$n1" &&
		ip -n "$ns" link set "$n1" up && ip -n "$ns" link set lo up &&
		rdma link add "$d0" type vrdma netdev "$n0" &&
		ip netns exec "$ns" rdma link add "$d1" type vrdma netdev "$n1" &&
		wait_until $((10 * slow)) sh -c "
			grep -q ':ffff:$hex:' $c/$d0/ports/1/gids/* 2>/dev/null &&
			grep -q ':ffff:$hex:' $c/$d1/ports/1/gids/* 2>/dev/null"
}

victim_down()
{
	pair_down $NS fa0 vrdmafa0 vrdmafa1
	# The devices go with their netdevs, asynchronously.
	wait_until $((10 * slow)) sh -c '! ls /sys/class/infiniband | grep -q vrdmafa'
}

victim_up()
{
	victim_down
	pair_up $NS fa0 fa1 10.220.0 0adc vrdmafa0 vrdmafa1
}

bystander_up()
{
	pair_up $NSB fb0 fb1 10.221.0 0add vrdmafb0 vrdmafb1
}

cleanup()
{
	[ -z "${by_pid:-}" ] || kill -9 "$by_pid" 2>/dev/null
	[ -z "${vic_pid:-}" ] || kill -9 "$vic_pid" 2>/dev/null
	victim_down
	pair_down $NSB fb0 vrdmafb0 vrdmafb1
}

# gone PID: the process has ended (a zombie has).
gone()
{
	[ ! -e "/proc/$1" ] || grep -q '^[0-9]* (.*) Z' "/proc/$1/stat" 2>/dev/null
}

# stop_within PID SECONDS: SIGTERM, then the process must be gone in time
# (a process stuck in the kernel is a hang).  Returns 0 with its exit
# status in $stopped_rc, or 1 and prints its kernel stack.
stop_within()
{
	local pid=$1 t=$2

	stopped_rc=1
	kill -TERM "$pid" 2>/dev/null
	if ! wait_until "$t" gone "$pid"; then
		echo "# process $pid does not end; its kernel stack:"
		sed 's/^/#   /' "/proc/$pid/stack" 2>/dev/null
		kill -9 "$pid" 2>/dev/null
		wait_until "$t" gone "$pid" ||
			echo "# ... and it survives SIGKILL"
		return 1
	fi
	wait "$pid" 2>/dev/null
	stopped_rc=$?
	return 0
}

vrdma_load || exit 1
[ -x "$LIVE" ] || skip_all "fuzz_live not built"
trap cleanup EXIT
cleanup
dmesg_before=$(dmesg | wc -l)

check "bystander devices up" bystander_up
"$LIVE" vrdmafb0 vrdmafb1 > /tmp/faults-bystander.log 2>&1 &
by_pid=$!

# fault NAME: break the victim while it moves data.
fault()
{
	case $1 in
	kill)		kill -9 "$vic_pid" ;;
	link-delete)	rdma link delete vrdmafa0 ;;
	netdev-delete)	ip link del fa0 ;;
	down-up)	ip link set fa0 down; sleep 0.$((RANDOM % 10))
			ip link set fa0 up ;;
	mtu)		ip link set fa0 mtu $((RANDOM % 2 ? 1100 : 9000))
			sleep 0.$((RANDOM % 10)); ip link set fa0 mtu 1500 ;;
	netns-delete)	ip netns del $NS ;;
	esac
}

for f in kill link-delete netdev-delete down-up mtu netns-delete; do
	ok=1
	for i in $(seq "$loops"); do
		if ! victim_up; then
			echo "# $f round $i: the victim cannot be set up"
			ok=0
			break
		fi
		# (bash reports the kill -9 of its job: not a failure)
		"$LIVE" vrdmafa0 vrdmafa1 > /tmp/faults-victim.log 2>&1 &
		vic_pid=$!
		# The fault must hit a transfer: wait for the first round.
		if ! wait_until $((30 * slow)) grep -q 'moving data' /tmp/faults-victim.log; then
			echo "# $f round $i: the victim never moved data"
			ok=0
		fi
		sleep "0.$((RANDOM % 10))"
		fault $f
		sleep 0.5
		if ! stop_within "$vic_pid" $((60 * slow)); then
			echo "# $f round $i: the victim's process hangs"
			ok=0
		fi
		vic_pid=
		echo "# $f round $i: victim: $(tail -n 1 /tmp/faults-victim.log)"
		if gone "$by_pid"; then
			echo "# $f round $i: the bystander stopped:"
			sed 's/^/#   /' /tmp/faults-bystander.log
			ok=0
		fi
		[ "$ok" -eq 1 ] || break
	done
	tap_result $((!ok)) "$f under traffic, $loops times: no hang, the bystander unharmed"
done

victim_down
by_rc=1
! stop_within "$by_pid" $((60 * slow)) || by_rc=$stopped_rc
by_pid=
sed 's/^/#   bystander: /' /tmp/faults-bystander.log
tap_result "$by_rc" "the bystander pair moved data right throughout"

# rmmod with every device busy: refused (EBUSY) or the users
# disassociated; either way it succeeds once they are gone.
bystander_up >/dev/null 2>&1
victim_up
"$LIVE" vrdmafa0 vrdmafa1 > /tmp/faults-victim.log 2>&1 &
vic_pid=$!
"$LIVE" vrdmafb0 vrdmafb1 > /tmp/faults-bystander.log 2>&1 &
by_pid=$!
sleep "$((2 * slow))"
out=$(timeout $((120 * slow)) rmmod vrdma 2>&1)
rc=$?
echo "# rmmod under traffic: exit $rc: $out"
check "rmmod under traffic neither hangs nor crashes" test "$rc" -ne 124
hang=0
stop_within "$vic_pid" $((60 * slow)) || hang=1
stop_within "$by_pid" $((60 * slow)) || hang=1
vic_pid= by_pid=
tap_result "$hang" "the users end after rmmod"
victim_down
rdma link delete vrdmafb0 2>/dev/null
ip netns exec $NSB rdma link delete vrdmafb1 2>/dev/null
ip link del fb0 2>/dev/null
ip netns del $NSB 2>/dev/null
check "rmmod succeeds once the users are gone" vrdma_unload
check "and vrdma loads again" vrdma_load
# Beyond what the VM harness calls a problem: ib_core's warnings too.
reports=$(dmesg | tail -n +"$((dmesg_before + 1))" |
	grep -E 'BUG:|WARNING:|KASAN|UBSAN|KFENCE|lockdep|Oops|refcount_t|hung task|infiniband .*failed' |
	head -n 20)
check_eq "no kernel report or ib_core warning in dmesg" "" "$reports"
finish
