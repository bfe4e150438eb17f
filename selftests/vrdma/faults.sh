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
. "$(dirname "$0")/lib.sh"

BUILD=$(cd "$(dirname "$0")" && pwd)/build
LIVE=$BUILD/fuzz_live
NS=vrdmafaults
NSB=vrdmafaultsb	# the bystander's peer
loops=${VRDMA_FAULTS_LOOPS:-2}
slow=${VRDMA_TEST_SLOW:-1}

victim_down()
{
	rdma link delete vrdmafa0 2>/dev/null
	ip netns exec $NS rdma link delete vrdmafa1 2>/dev/null
	ip link del fa0 2>/dev/null
	ip netns del $NS 2>/dev/null
	# The devices go with their netdevs, asynchronously.
	wait_until $((10 * slow)) sh -c '! ls /sys/class/infiniband | grep -q vrdmafa'
}

victim_up()
{
	victim_down
	ip netns add $NS &&
		ip link add fa0 type veth peer name fa1 netns $NS &&
		ip addr add 10.220.0.1/24 dev fa0 && ip link set fa0 up &&
		ip -n $NS addr add 10.220.0.2/24 dev fa1 &&
		ip -n $NS link set fa1 up && ip -n $NS link set lo up &&
		rdma link add vrdmafa0 type vrdma netdev fa0 &&
		ip netns exec $NS rdma link add vrdmafa1 type vrdma netdev fa1 &&
		wait_until $((10 * slow)) sh -c \
			'grep -q ":ffff:0adc:" /sys/class/infiniband/vrdmafa0/ports/1/gids/* 2>/dev/null &&
			 grep -q ":ffff:0adc:" /sys/class/infiniband/vrdmafa1/ports/1/gids/* 2>/dev/null'
}

bystander_up()
{
	ip netns add $NSB &&
		ip link add fb0 type veth peer name fb1 netns $NSB &&
		ip addr add 10.221.0.1/24 dev fb0 && ip link set fb0 up &&
		ip -n $NSB addr add 10.221.0.2/24 dev fb1 &&
		ip -n $NSB link set fb1 up && ip -n $NSB link set lo up &&
		rdma link add vrdmafb0 type vrdma netdev fb0 &&
		ip netns exec $NSB rdma link add vrdmafb1 type vrdma netdev fb1 &&
		wait_until $((10 * slow)) sh -c \
			'grep -q ":ffff:0add:" /sys/class/infiniband/vrdmafb0/ports/1/gids/* 2>/dev/null &&
			 grep -q ":ffff:0add:" /sys/class/infiniband/vrdmafb1/ports/1/gids/* 2>/dev/null'
}

cleanup()
{
	[ -z "${by_pid:-}" ] || kill -9 "$by_pid" 2>/dev/null
	[ -z "${vic_pid:-}" ] || kill -9 "$vic_pid" 2>/dev/null
	victim_down
	rdma link delete vrdmafb0 2>/dev/null
	ip netns exec $NSB rdma link delete vrdmafb1 2>/dev/null
	ip link del fb0 2>/dev/null
	ip netns del $NSB 2>/dev/null
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
		sleep "$((1 * slow)).$((RANDOM % 10))"
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
