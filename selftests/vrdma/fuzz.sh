#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# The fuzzers, bounded in time and seeded: fuzz_verbs (user space ->
# kernel: random verbs, garbage in the shared rings) and fuzz_wire (wire ->
# kernel: mutated RoCEv2 packets), each against a device with live QPs.
#
#   VRDMA_FUZZ_SECONDS   time for each fuzzer (default 45: the short pass
#                        of make check; make fuzz gives 300 each)
#   VRDMA_FUZZ_SEED      the seed (default: from the clock); printed, and
#                        with it any finding replays:
#                        VRDMA_FUZZ_SEED=S selftests/vrdma/fuzz.sh
#   VRDMA_FUZZ_PACKETS   fuzz_wire stops after this many packets (default:
#                        no limit but the time)
#
# vrdmafz0 sits on fz0, vrdmafz1 on fz1 in the namespace vrdmafuzz, a veth
# pair between them.  A second pair, fz2 (here, no RDMA device on it) to
# fz3 (in vrdmafuzz, no address), is a way in for fuzz_wire's packets to
# vrdmafz0's address that is not vrdmafz0's netdev.  fz1's address is a
# /32 so that the subnet broadcasts fuzz_wire sends from here are not
# taken by vrdmafz1.  Passes if both fuzzers pass and the kernel log shows
# no report (the VM harness checks the console too).
. "$(dirname "$0")/lib.sh"

BUILD=$(dirname "$0")/build
NS=vrdmafuzz
secs=${VRDMA_FUZZ_SECONDS:-45}
seed=${VRDMA_FUZZ_SEED:-$(( $(date +%s%N) & 0xffffffff ))}
echo "# seed $seed ($secs s per fuzzer): VRDMA_FUZZ_SEED=$seed replays it"

cleanup()
{
	rdma link delete vrdmafz0 2>/dev/null
	ip netns exec $NS rdma link delete vrdmafz1 2>/dev/null
	ip link del fz0 2>/dev/null
	ip link del fz2 2>/dev/null
	ip netns del $NS 2>/dev/null
}

vrdma_load || exit 1
[ -x "$BUILD/fuzz_wire" ] || skip_all "fuzz_wire not built"
cleanup
trap cleanup EXIT
dmesg_before=$(dmesg | wc -l)
ip netns add $NS && ip -batch - <<EOF && ip -n $NS -batch - <<EOF2 ||
link add fz0 address 02:00:0a:db:00:01 type veth peer name fz1 address 02:00:0a:db:00:02 netns $NS
addr add 10.219.0.1/24 dev fz0
link set fz0 up
neigh replace 10.219.0.2 lladdr 02:00:0a:db:00:02 dev fz0 nud permanent
link add fz2 address 02:00:0a:db:01:01 type veth peer name fz3 address 02:00:0a:db:01:02 netns $NS
addr add 10.220.0.1/24 dev fz2
link set fz2 up
neigh replace 10.220.0.2 lladdr 02:00:0a:db:01:02 dev fz2 nud permanent
EOF
link set lo up
addr add 10.219.0.2/32 dev fz1
link set fz1 up
route add 10.219.0.0/24 dev fz1 src 10.219.0.2
neigh replace 10.219.0.1 lladdr 02:00:0a:db:00:01 dev fz1 nud permanent
link set fz3 up
EOF2
	{ echo "Bail out! veth/netns setup failed"; exit 1; }
# Loose: fz2 takes packets from the peer's address too (it is reachable).
echo 2 > /proc/sys/net/ipv4/conf/fz2/rp_filter
rdma link add vrdmafz0 type vrdma netdev fz0 &&
	ip netns exec $NS rdma link add vrdmafz1 type vrdma netdev fz1 ||
	{ echo "Bail out! rdma link add failed"; exit 1; }
wait_until 10 sh -c 'grep -l "0000:0000:0000:0000:0000:ffff:0ada" \
	/sys/class/infiniband/vrdmafz0/ports/1/gids/* &&
	grep -l "0000:0000:0000:0000:0000:ffff:0ada" \
	/sys/class/infiniband/vrdmafz1/ports/1/gids/*'

# run_fuzzer NAME CMD...: one TAP result for the fuzzer, its own lines
# indented as a subtest.
run_fuzzer()
{
	local name=$1 rc
	shift
	"$@" 2>&1 | sed -u 's/^/    /'
	rc=${PIPESTATUS[0]}
	[ "$rc" -eq 0 ] || echo "# $name failed (exit $rc): replay with VRDMA_FUZZ_SEED=$seed"
	tap_result "$rc" "$name (seed $seed, $secs s)"
}

run_fuzzer fuzz_verbs "$BUILD/fuzz_verbs" vrdmafz0 vrdmafz1 "$secs" "$seed"
run_fuzzer fuzz_wire "$BUILD/fuzz_wire" vrdmafz0 vrdmafz1 "$secs" "$seed" \
	${VRDMA_FUZZ_PACKETS:+"$VRDMA_FUZZ_PACKETS"}

echo "# rdma statistic after the run:"
rdma statistic show link vrdmafz0/1 2>&1 | fold -w 100 | sed 's/^/#   /'

cleanup
trap - EXIT
check "the devices go away cleanly" \
	sh -c '! ls /sys/class/infiniband | grep -q vrdmafz'
reports=$(dmesg | tail -n +"$((dmesg_before + 1))" |
	grep -v -e 'traps:' -e 'segfault at' -e 'Code: ' |
	grep -E 'BUG:|WARNING:|KASAN|UBSAN|KFENCE|lockdep|circular locking|Oops|general protection|refcount_t|list_(add|del) corruption|hung task|soft lockup' |
	head -n 20)
check_eq "no kernel report in dmesg" "" "$reports"
finish
