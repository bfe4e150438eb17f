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
#                        VRDMA_FUZZ_SEED=S selftests/vrdma/robustness/fuzz.sh
#   VRDMA_FUZZ_PACKETS   fuzz_wire stops after this many packets (default:
#                        no limit but the time)
#   VRDMA_FUZZ_ONLY      fuzz_verbs or fuzz_wire: run that one alone
#
# fuzz_verbs goes on past its time, by up to twice that time (at most
# 180 s more; times VRDMA_TEST_SLOW, as on the debug kernel), while a
# count of its "reached:" line is still 0: on a slow or busy machine it
# gets through fewer rounds in the time.
#
# vrdmafz0 sits on fz0, vrdmafz1 on fz1 in the namespace vrdmafuzz, a veth
# pair between them.  A second pair, fz2 (here, no RDMA device on it) to
# fz3 (in vrdmafuzz, no address), is a way in for fuzz_wire's packets to
# vrdmafz0's address that is not vrdmafz0's netdev.  fz1's address is a
# /32 so that the subnet broadcasts fuzz_wire sends from here are not
# taken by vrdmafz1.  Passes if both fuzzers pass, each reached what its
# "reached:" line counts (on-demand paging and device memory; fuzz_wire
# also masked atomics executed, fuzz_verbs dma-buf MRs, left off the line
# on a kernel without vgem, and thread domains): every count above 0, so that a change that stops the fuzzers
# getting there fails instead of fuzzing less; and the kernel log shows no
# report (the VM harness checks the console too).
. "$(dirname "$0")/../lib/lib.sh"

BUILD=$(dirname "$0")/../build
NS=vrdmafuzz
secs=${VRDMA_FUZZ_SECONDS:-45}
extra=$(((2 * secs < 180 ? 2 * secs : 180) * ${VRDMA_TEST_SLOW:-1}))
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
# Each fuzzer's output, for reached().
logs=$(mktemp -d)
trap 'cleanup; rm -rf "$logs"' EXIT
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

# The processes under @1, depth first.
descendants()
{
	local p

	for p in $(pgrep -P "$1"); do
		echo "$p"
		descendants "$p"
	done
}

# watchdog PID SECS: if PID still runs after SECS, print where each of its
# processes' threads waits (state, wchan, kernel stack), have the kernel
# list every blocked task and each CPU's backtrace, and kill them all.  A
# fuzzer that stops making progress then fails, with the evidence of which
# side hangs, instead of silencing the VM until the harness kills it.
watchdog()
{
	local pid=$1 left=$2 p t

	while [ "$left" -gt 0 ] && kill -0 "$pid" 2>/dev/null; do
		sleep 1
		left=$((left - 1))
	done
	kill -0 "$pid" 2>/dev/null || return 0
	echo "# watchdog: still running after $2 s; its tasks:"
	for p in "$pid" $(descendants "$pid"); do
		for t in /proc/"$p"/task/*; do
			echo "#   $p/${t##*/} $(cut -d' ' -f2,3 "$t"/stat 2>/dev/null) wchan $(cat "$t"/wchan 2>/dev/null)"
			sed 's/^/#     /' "$t"/stack 2>/dev/null
		done
	done
	echo w > /proc/sysrq-trigger
	echo l > /proc/sysrq-trigger
	for p in $(descendants "$pid") "$pid"; do
		kill -KILL "$p" 2>/dev/null
	done
}

# run_fuzzer NAME EXTRA CMD...: one TAP result for the fuzzer, its own
# lines indented as a subtest.  It must end within its time and the EXTRA
# seconds it may take on, plus a margin for a loaded host (watchdog).
run_fuzzer()
{
	local name=$1 more=$2 rc
	shift 2
	{
		VRDMA_FUZZ_EXTRA=$more "$@" &
		local pid=$!
		watchdog "$pid" $(((secs + 120) * ${VRDMA_TEST_SLOW:-1} + more)) &
		local wd=$!
		wait "$pid"
		rc=$?
		kill "$wd" 2>/dev/null
		wait "$wd" 2>/dev/null
		exit "$rc"
	} 2>&1 | tee "$logs/$name" | sed -u 's/^/    /'
	rc=${PIPESTATUS[0]}
	[ "$rc" -eq 0 ] || echo "# $name failed (exit $rc): replay with VRDMA_FUZZ_SEED=$seed"
	tap_result "$rc" "$name (seed $seed, $secs s)"
	reached "$name"
}

# reached NAME: the fuzzer's last "# reached: what=N ..." line has no 0.
reached()
{
	local line zero

	line=$(grep '^# reached:' "$logs/$1" | tail -n 1)
	zero=$(printf '%s\n' "${line#\# reached:}" | tr ' ' '\n' | grep '=0$' |
		tr '\n' ' ')
	[ -n "$line" ] || zero="no reached: line"
	check_eq "$1 reached what it counts (every count above 0)" "" "$zero"
}

only=${VRDMA_FUZZ_ONLY:-}
[ -n "$only" ] && [ "$only" != fuzz_verbs ] ||
	run_fuzzer fuzz_verbs "$extra" "$BUILD/fuzz_verbs" vrdmafz0 vrdmafz1 "$secs" "$seed"
[ -n "$only" ] && [ "$only" != fuzz_wire ] ||
	run_fuzzer fuzz_wire 0 "$BUILD/fuzz_wire" vrdmafz0 vrdmafz1 "$secs" \
		"$seed" ${VRDMA_FUZZ_PACKETS:+"$VRDMA_FUZZ_PACKETS"}

echo "# rdma statistic after the run:"
rdma statistic show link vrdmafz0/1 2>&1 | fold -w 100 | sed 's/^/#   /'

cleanup
rm -rf "$logs"
trap - EXIT
check "the devices go away cleanly" \
	sh -c '! ls /sys/class/infiniband | grep -q vrdmafz'
reports=$(dmesg | tail -n +"$((dmesg_before + 1))" |
	grep -v -e 'traps:' -e 'segfault at' -e 'Code: ' |
	grep -E 'BUG:|WARNING:|KASAN|UBSAN|KFENCE|lockdep|circular locking|Oops|general protection|refcount_t|list_(add|del) corruption|hung task|soft lockup' |
	head -n 20)
check_eq "no kernel report in dmesg" "" "$reports"
finish
