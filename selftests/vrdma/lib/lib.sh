#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# Shared helpers of the vrdma shell selftests.  They run as root inside the
# test VM (scripts/vm-run), produce TAP, and exit 0 only if every check
# passed (4 = kselftest "skip").
#
#   . "$(dirname "$0")/../lib/lib.sh"
#   vrdma_load; veth_pair a b
#   check "link add works" rdma link add vrdma0 type vrdma netdev a
#   check_fails "unknown netdev is refused" "No such device" rdma link add ...
#   finish

set -u

# A long test that boots a VM of its own (make check-long runs it on the
# host) sets VRDMA_OWN_VM to that VM's timeout in seconds (times
# VRDMA_TEST_SLOW) before it sources lib.sh: on the host, it then runs
# again inside a VM (scripts/vm-run, logs in out/NAME[-TYPE]).
if [ -n "${VRDMA_OWN_VM:-}" ] && [ -z "${VRDMA_VM:-}" ]; then
	_name=$(basename "$0" .sh)
	_dir=$(basename "$(dirname "$0")")
	cd "$(dirname "$0")/../../.." || exit 1
	exec scripts/vm-run --timeout $((VRDMA_OWN_VM * ${VRDMA_TEST_SLOW:-1})) \
		--out "out/$_name${VRDMA_TEST_TYPE:+-$VRDMA_TEST_TYPE}" \
		"selftests/vrdma/$_dir/$_name.sh"
fi

VRDMA_TOP=$(cd "$(dirname "${BASH_SOURCE[0]}")/../../.." && pwd)
# The test script, by its absolute path: what the VMs of a two-VM test run
# (vm2_run), and VM B again for each job (vm2_on).
SELF=$(cd "$(dirname "$0")" && pwd)/$(basename "$0")
VRDMA_KO=${VRDMA_KO:-$VRDMA_TOP/vrdma.ko}
# Load our provider from the build tree, not from an installed copy.
export RDMAV_DRIVERS=${RDMAV_DRIVERS:-$VRDMA_TOP/userspace-provider/libvrdma}

_tap_n=0
_tap_failed=0
# A two-VM test's job (the script run again with --job, see vm2_on) prints
# only what VM A is to show: no TAP header.
[ "${1:-}" = --job ] || echo "TAP version 13"

# tap_result STATUS DESCRIPTION: record one result (0 = ok).
tap_result()
{
	_tap_n=$((_tap_n + 1))
	if [ "$1" -eq 0 ]; then
		echo "ok $_tap_n $2"
	else
		echo "not ok $_tap_n $2"
		_tap_failed=$((_tap_failed + 1))
	fi
}

# check DESCRIPTION CMD...: CMD must succeed.
check()
{
	local desc=$1 out rc
	shift
	out=$("$@" 2>&1)
	rc=$?
	if [ "$rc" -ne 0 ]; then
		printf '# %s -> exit %d\n' "$*" "$rc"
		printf '%s\n' "$out" | sed 's/^/#   /'
	fi
	tap_result "$rc" "$desc"
}

# check_fails DESCRIPTION ERE CMD...: CMD must fail, and say why: its
# output (stdout and stderr) must match ERE, the error it is expected to
# report.  Any non-zero exit is not enough: a missing or broken tool fails
# too, for another reason.
check_fails()
{
	local desc=$1 ere=$2 out rc
	shift 2
	out=$("$@" 2>&1)
	rc=$?
	if [ "$rc" -eq 0 ]; then
		printf '# %s\n# -> unexpectedly succeeded\n' "$*"
		printf '%s\n' "$out" | sed 's/^/#   /'
		tap_result 1 "$desc"
	elif ! printf '%s\n' "$out" | grep -Eq -- "$ere"; then
		printf '# %s -> exit %d, but not with /%s/:\n' "$*" "$rc" "$ere"
		printf '%s\n' "$out" | sed 's/^/#   /'
		tap_result 1 "$desc"
	else
		printf '# %s -> exit %d: %s\n' "$*" "$rc" \
			"$(printf '%s\n' "$out" | grep -Em 1 -- "$ere")"
		tap_result 0 "$desc"
	fi
}

# tap_relay PREFIX OUTPUT: one result of ours for each "ok N NAME" or
# "not ok N NAME" line in OUTPUT (a kselftest harness program's), named
# "PREFIX NAME"; on a failure the whole OUTPUT is shown.
tap_relay()
{
	local line name

	while read -r line; do
		case $line in
		"ok "[0-9]*|"not ok "[0-9]*)
			name=${line#*ok }
			name=${name#* }
			if [ "${line#not }" = "$line" ]; then
				tap_result 0 "$1 $name"
			else
				printf '%s\n' "$2" | sed 's/^/#   /'
				tap_result 1 "$1 $name"
			fi
			;;
		esac
	done <<<"$2"
}

# check_eq DESCRIPTION EXPECTED ACTUAL
check_eq()
{
	if [ "$2" = "$3" ]; then
		tap_result 0 "$1"
	else
		printf '# expected: %s\n# actual:   %s\n' "$2" "$3"
		tap_result 1 "$1"
	fi
}

# check_match DESCRIPTION REGEX TEXT: TEXT must contain a match of REGEX.
check_match()
{
	if printf '%s\n' "$3" | grep -Eq -- "$2"; then
		tap_result 0 "$1"
	else
		printf '# no match for /%s/ in:\n' "$2"
		printf '%s\n' "$3" | sed 's/^/#   /'
		tap_result 1 "$1"
	fi
}

# rdma_res: how many QPs, CQs, MRs and PDs $DEV has: ib_core's own for its
# MAD agents included, the idle CQs its CQ pool keeps until the device goes
# not.
rdma_res()
{
	local k

	for k in qp cq mr pd; do
		echo "$k $(rdma resource show "$k" 2>/dev/null |
			grep -E "(dev $DEV |link $DEV/)" |
			grep -Evc 'users 0 .*comm \[ib_core\]')"
	done | tr '\n' ' '
}

# wait_until SECONDS CMD...: poll CMD until it succeeds or time runs out.
wait_until()
{
	local deadline=$((SECONDS + $1))
	shift
	until "$@" >/dev/null 2>&1; do
		[ "$SECONDS" -lt "$deadline" ] || return 1
		sleep 0.2
	done
}

# fio_blockdev DEV NAME ARGS...: fio job NAME with ARGS on the first
# SIZE_MB MiB of block device DEV, direct I/O through libaio; its output,
# in $scratch/NAME.log, is shown only when it fails.  It creates no file:
# if DEV has gone it fails, and leaves no file in /dev that would take the
# name of the next device node.
fio_blockdev()
{
	local dev=$1 name=$2 log=${scratch:?}/$2.log

	shift 2
	timeout -k 10 $((300 * ${VRDMA_TEST_SLOW:-1})) fio --name="$name" \
		--filename="$dev" --allow_file_create=0 \
		--ioengine=libaio --direct=1 \
		--size="${SIZE_MB:?}M" --eta=never --output="$log" "$@" ||
		{ cat "$log"; return 1; }
}

# ulp_perf FILE: with VRDMA_ULP_PERF=SECONDS (the ULP phase of
# scripts/bench), fio on FILE, a ULP's disk or a file on its mount:
# 4 KiB random writes and random reads, 16 in flight, and 1 MiB sequential
# writes, 4 in flight, over its first SIZE_MB MiB, direct I/O, SECONDS each
# after a second's ramp; a line "# perf RW BS VALUE UNIT" for each (IOPS,
# or MB/s of 2^20 bytes for 1 MiB), VALUE nan if fio failed.  Then the
# test ends there, its cleanup taking everything down.  Without
# VRDMA_ULP_PERF it does nothing.
ulp_perf()
{
	local secs=${VRDMA_ULP_PERF:-} rw bs qd unit v create=1 job

	[ -n "$secs" ] || return 0
	[ ! -b "$1" ] || create=0
	for job in "randwrite 4k 16 IOPS" "randread 4k 16 IOPS" \
		   "write 1M 4 MB/s"; do
		read -r rw bs qd unit <<<"$job"
		v=nan
		if timeout -k 10 $((secs * 4 + 120 * ${VRDMA_TEST_SLOW:-1})) \
			fio --name=perf --filename="$1" \
			--allow_file_create="$create" --ioengine=libaio \
			--direct=1 --rw="$rw" --bs="$bs" --iodepth="$qd" \
			--size="${SIZE_MB:?}M" --time_based --ramp_time=1 \
			--runtime="$secs" --output-format=json \
			--output="${scratch:?}/perf.json" >/dev/null 2>&1; then
			v=$(python3 -c '
import json, sys
j = json.load(open(sys.argv[1]))["jobs"][0]
d = j["read" if sys.argv[2] == "randread" else "write"]
print("%.1f" % (d["iops"] if sys.argv[3] == "IOPS"
                else d["bw_bytes"] / 1048576))' \
				"$scratch/perf.json" "$rw" "$unit" 2>/dev/null) || v=nan
		fi
		echo "# perf $rw $bs ${v:-nan} $unit"
	done
	finish
}

# wait_file SECONDS FILE...: until one of the FILEs exists; 1 if none did
# in time (they are looked at once more when it is up).
wait_file()
{
	local deadline=$((SECONDS + $1)) f
	shift
	while :; do
		for f in "$@"; do
			[ -e "$f" ] && return 0
		done
		[ "$SECONDS" -lt "$deadline" ] || return 1
		sleep 0.2
	done
}

# vm2_boot OUT TIMEOUT SCRIPT [VM-RUN OPTION...]: the VMs of a two-VM test
# (run on the host): two of one vCPU each on a virtio-net wire, both
# running SCRIPT (VRDMA_VM_ROLE tells them apart), logs in OUT, their
# output shown as TAP comments.  Returns vm-run's exit status.
#
# Two TCG VMs on a busy host are each slow and descheduled at times.  A
# guest may then calibrate its TSC against the PIT while descheduled ("PIT
# calibration deviates from HPET") and run its clock several times too
# fast until the clocksource watchdog notices, reporting soft lockups and
# RCU stalls that never were: tsc=unstable.  Or it may miss the timer
# interrupts its boot-time check waits for and panic ("IO-APIC + timer
# doesn't work"): no_timer_check, as usual for virtual machines.
vm2_boot()
{
	local out=$1 timeout=$2 script=$3 rc t0=$SECONDS

	shift 3
	echo "# two VMs (--smp 1 each); output in $out"
	(cd "$VRDMA_TOP" && scripts/vm-run "$@" --smp 1 --mem 1G \
		--timeout "$timeout" --out "$out" --peer-grace 20 \
		--append "tsc=unstable no_timer_check" \
		--peer-cmd "$script" "$script") 2>&1 | sed -u 's/^/# /'
	rc=${PIPESTATUS[0]}
	echo "# VMs done in $((SECONDS - t0)) s"
	return "$rc"
}

# vm2_run OUT TIMEOUT VM_ARGS: (host) vm2_boot the two VMs of this test
# script ($SELF), output in OUT (emptied first), with the scripts/vm-run
# options in the string VM_ARGS, then vm2_results of VM A; vm-run's exit
# status.
vm2_run()
{
	local out=$1 timeout=$2 rc
	local -a vmargs

	read -r -a vmargs <<<"$3"
	rm -rf "$out"
	mkdir -p "$out"
	vm2_boot "$out" "$timeout" "$SELF" "${vmargs[@]}"
	rc=$?
	vm2_results "$out/primary/results"
	return "$rc"
}

# vm2_results FILE: the results the primary VM recorded in FILE, lines
# "STATUS DESCRIPTION", as TAP results of ours; their count in VM2_N.
vm2_results()
{
	local rc line

	VM2_N=0
	while read -r rc line; do
		tap_result "$rc" "$line"
		VM2_N=$((VM2_N + 1))
	done < <(cat "$1" 2>/dev/null)
}

# vm2_host OUT TIMEOUT VM_ARGS: (host) once vrdma.ko is built, vm2_run the
# VMs of this test script (TIMEOUT seconds times SLOW); a skip that VM A
# reported (vm2_need_modules) is the test's.  vm-run's exit status in
# VM2_RC, for vm2_host_end.
vm2_host()
{
	[ -f "$VRDMA_TOP/vrdma.ko" ] || skip_all "vrdma.ko not built"
	vm2_run "$1" $(($2 * ${SLOW:-1})) "$3"
	VM2_RC=$?
	[ ! -s "$1/primary/skip" ] || skip_all "$(cat "$1/primary/skip")"
}

# vm2_host_end WANT: (host) the end of the test: VM A reported WANT
# results, and the VMs ran cleanly.
vm2_host_end()
{
	check_eq "every check ran in VM A" "$1" "$VM2_N"
	check_eq "the VMs ran cleanly (vm-run exit status)" 0 "$VM2_RC"
	finish
}

# The jobs of a two-VM test: VM A (primary) drives and records the
# results, VM B (peer) runs the shell commands A hands it (B has no ssh).
#
#   B: set up; vm2_setup_failed and exit if that failed, else vm2_serve
#   A: : >/vmout/results; set up; vm2_wait_peer 120 || fail;
#      out=$(vm2_remote "CMD"); vm2_result $? "DESC"; ...; vm2_done; finish
#
# They go through files in the directory both VMs share (VRDMA_VM_SHARED):
#   job.ID.cmd    a command of A's (written as job.ID.tmp, then renamed),
#                 job.ID.run once B has started it
#   job.ID.out    its output (stdout and stderr)
#   job.ID.rc     its exit status, once it has ended
#   b.ready       B serves jobs
#   setup.failed  B's setup failed: it never will
#   a.done        A has no more: B stops serving and writes b.gone
VM2_SHARED=${VRDMA_VM_SHARED:-/vmshared}

# vm2_remote CMD: (VM A) run the shell command CMD in VM B (sh -c, in the
# directory vm2_serve runs in, without stdin), wait for it, print its
# output and return its exit status, as ssh would; 255 if it could not be
# handed over or B stopped serving first.
vm2_remote()
{
	local j
	j=$VM2_SHARED/job.$$.$RANDOM$RANDOM

	printf '%s\n' "$*" >"$j.tmp" && mv "$j.tmp" "$j.cmd" || return 255
	while [ ! -e "$j.rc" ]; do
		[ ! -e "$VM2_SHARED/b.gone" ] || return 255
		sleep 0.2
	done
	cat "$j.out" 2>/dev/null
	return "$(cat "$j.rc")"
}

# vm2_serve: (VM B) run every job A hands over, each in the background, so
# that a server may run beside its clients, until A is done.
vm2_serve()
{
	local f j

	touch "$VM2_SHARED/b.ready"
	while [ ! -e "$VM2_SHARED/a.done" ]; do
		for f in "$VM2_SHARED"/job.*.cmd; do
			[ -e "$f" ] || continue
			j=${f%.cmd}
			mv "$f" "$j.run" || continue
			(sh -c "$(cat "$j.run")" >"$j.out" 2>&1 </dev/null
			 echo $? >"$j.rc.tmp"
			 mv "$j.rc.tmp" "$j.rc") &
		done
		sleep 0.2
	done
	touch "$VM2_SHARED/b.gone"
}

# vm2_setup_failed: (VM B) its setup failed, it will serve no job: A's
# vm2_wait_peer returns at once.
vm2_setup_failed() { touch "$VM2_SHARED/setup.failed"; }

# vm2_wait_peer SECONDS: (VM A) until B serves; 1 if its setup failed or
# it did not come up in time.
vm2_wait_peer()
{
	wait_file "$1" "$VM2_SHARED/b.ready" "$VM2_SHARED/setup.failed" &&
		[ ! -e "$VM2_SHARED/setup.failed" ]
}

# vm2_done: (VM A) no more jobs: B stops serving; if it served, wait up to
# 30 s for it to have stopped.
vm2_done()
{
	touch "$VM2_SHARED/a.done"
	[ ! -e "$VM2_SHARED/b.ready" ] || wait_file 30 "$VM2_SHARED/b.gone"
}

# vm2_result STATUS DESCRIPTION: (VM A) a result, also recorded in
# /vmout/results for the host's vm2_results (A truncates it first).
vm2_result()
{
	tap_result "$1" "$2"
	printf '%s %s\n' "$1" "$2" >>/vmout/results
}

# vm2_check_eq DESCRIPTION EXPECTED ACTUAL: (VM A) check_eq, its result
# also recorded for the host.
vm2_check_eq()
{
	[ "$2" = "$3" ]
	vm2_result $? "$1"
	[ "$2" = "$3" ] || echo "#   expected '$2', got '$3'"
}

# vm2_check_match DESCRIPTION ERE TEXT: (VM A) check_match, its result
# also recorded for the host.
vm2_check_match()
{
	printf '%s\n' "$3" | grep -Eq -- "$2"
	vm2_result $? "$1"
}

# vm2_rcheck DESCRIPTION CMD...: (VM A) CMD must succeed (a job in B, as a
# rule: vm2_on B); its output is shown as comments.
vm2_rcheck()
{
	local desc=$1 out rc

	shift
	out=$("$@" 2>&1)
	rc=$?
	[ -z "$out" ] || printf '%s\n' "$out" | sed 's/^/#   /'
	vm2_result "$rc" "$desc"
}

# vm2_setup IP_A IP_B DEV [PREP]: in either VM of a two-VM test, load
# vrdma, run the shell command PREP if given, give eth0 this VM's address
# (IP_A in A, IP_B in B; MTU 9000) and bind DEV to it; a DEV named rxe*
# is an rdma_rxe device instead (vrdma is not loaded then: both bind UDP
# port 4791).  In VM B it then serves A's jobs until A is done, and
# exits.  In VM A it starts /vmout/results and returns once B serves and
# answers a ping; if either VM's setup failed, A ends the run (exit 1).
vm2_setup()
{
	local ip_a=$1 ip_b=$2 dev=$3 prep=${4:-} me=$1 ok=1

	[ "$VRDMA_VM_ROLE" = primary ] || me=$ip_b
	case $dev in
	rxe*) modprobe -a rdma_rxe ib_uverbs || ok= ;;
	*) vrdma_load || ok= ;;
	esac
	[ -z "$prep" ] || sh -c "$prep" || ok=
	ip link set lo up
	ip link set eth0 mtu 9000 up && ip addr add "$me/24" dev eth0 &&
		vm2_link_add "$dev" || ok=
	if [ "$VRDMA_VM_ROLE" != primary ]; then
		[ -n "$ok" ] || { vm2_setup_failed; exit 1; }
		vm2_serve
		exit 0
	fi

	: >/vmout/results
	[ -n "$ok" ] || { vm2_done; exit 1; }
	if ! vm2_wait_peer $((120 * ${SLOW:-1})); then
		vm2_result 1 "VM B came up"
		vm2_done
		exit 1
	fi
	wait_until 30 ping -c 1 -W 1 "$ip_b" >/dev/null
}

# vm2_link_add DEV: bind DEV (vrdma, or rdma_rxe if named rxe*) to eth0,
# and wait for its RoCE v2 IPv4 GID.
vm2_link_add()
{
	local type=vrdma

	case $1 in rxe*) type=rxe ;; esac
	rdma link add "$1" type "$type" netdev eth0 &&
		wait_until 30 roce_v2_ipv4_gid "$1"
}

# Jobs any two-VM test can hand to either VM (vm2_on), and a server with
# its clients in the other VM (vm2_pair).

# rdma_cm ports are not TCP ports: a server is ready when its cm_id
# listens on the port.
cm_listening()
{
	rdma res show cm_id 2>/dev/null | grep LISTEN | grep -q ":$1 "
}

# job_server READY PORT CMD...: run the server CMD, its PID in
# srv.PORT.pid, and once "READY PORT" says it listens create listen.PORT
# (both in the shared directory); CMD's exit status.
job_server()
{
	local ready=$1 port=$2 pid

	shift 2
	"$@" &
	pid=$!
	echo "$pid" >"$VM2_SHARED/srv.$port.pid"
	until "$ready" "$port"; do
		kill -0 "$pid" 2>/dev/null || break
		sleep 0.2
	done
	! "$ready" "$port" || touch "$VM2_SHARED/listen.$port"
	wait "$pid"
}

# job_client NAME CMD...: run CMD, its PID in NAME.pid in the shared
# directory; CMD's exit status.
job_client()
{
	local name=$1

	shift
	"$@" &
	echo "$!" >"$VM2_SHARED/$name.pid"
	wait "$!"
}

# job_kill NAME: stop what job_server (srv.PORT) or job_client ran.
job_kill() { kill "$(cat "$VM2_SHARED/$1.pid")" 2>/dev/null; }

# vm2_on VM JOB ARGS...: the job JOB (the shell function job_JOB) in VM
# A (here) or B, where the test script runs again as "$SELF --job JOB
# ARGS..." and calls it (vm2_main).
vm2_on()
{
	local vm=$1 job=$2

	shift 2
	if [ "$vm" = A ]; then
		"job_$job" "$@"
	else
		vm2_remote "$(printf '%q ' "$SELF" --job "$job" "$@")"
	fi
}

# job_res: the device's resources (rdma_res), for vm2_check_left.
job_res() { rdma_res; }

# job_missing MODULE...: those of the MODULEs the booted kernel has not.
job_missing()
{
	local m

	for m in "$@"; do
		modinfo "$m" >/dev/null 2>&1 || echo "$m"
	done
}

# job_dmesg ERE: the kernel's last 40 lines that match ERE (grep -Ei), as
# comments.
job_dmesg()
{
	dmesg | grep -Ei -- "$1" | tail -n 40 | sed 's/^/#   /'
}

# vm2_need_modules MODULES_A [MODULES_B]: (VM A) unless the booted kernel
# has the modules of the list MODULES_A in A and those of MODULES_B (by
# default the same) in B, the test is a skip, which the host reports
# (vm2_host): a kernel built without LIO, for one.
vm2_need_modules()
{
	local out

	# shellcheck disable=SC2086 # the lists: words
	out=$(job_missing $1; vm2_on B missing ${2-$1})
	[ -n "$out" ] || return 0
	echo "no module $(printf '%s\n' "$out" | paste -sd ' ') in the VMs' kernel" \
		>/vmout/skip
	vm2_done
	exit 0
}

# vm2_fio [VM [JOB]]: (VM A) fio in VM (default B) on the disk of a ULP
# whose target is in the other VM, through VM's job JOB (default fio) NAME
# ARGS... (direct I/O on SIZE_MB MiB): 4 KiB random writes and 1 MiB
# sequential writes, each read back and verified with crc32c, and a
# 4 KiB random read/write mix, two jobs; then A's DEV carried the data
# both ways.
vm2_fio()
{
	local c=/sys/class/infiniband/$DEV/ports/1/hw_counters rx tx
	local vm=${1:-B} job=${2:-fio}

	rx=$(cat "$c/rcvd_bytes") tx=$(cat "$c/sent_bytes")
	vm2_rcheck "$vm: fio 4 KiB random writes, read back, crc32c verified" \
		vm2_on "$vm" "$job" rand4k --rw=randwrite --bs=4k --iodepth=16 \
		--verify=crc32c --do_verify=1 --verify_fatal=1
	vm2_rcheck "$vm: fio 1 MiB sequential writes, read back, crc32c verified" \
		vm2_on "$vm" "$job" seq1m --rw=write --bs=1M --iodepth=4 \
		--verify=crc32c --do_verify=1 --verify_fatal=1
	vm2_rcheck "$vm: fio 4 KiB random read/write mix, two jobs" \
		vm2_on "$vm" "$job" mix4k --rw=randrw --bs=4k --iodepth=32 \
		--numjobs=2
	rx=$(($(cat "$c/rcvd_bytes") - rx)) tx=$(($(cat "$c/sent_bytes") - tx))
	echo "# A's $DEV received $rx and sent $tx bytes"
	# Each verified job writes the whole range (the initiator's SENDs
	# and the target's RDMA READs) and reads it back: both ways through
	# A, whichever end it is.
	[ "$rx" -ge $((2 * SIZE_MB << 20)) ] && [ "$tx" -ge $((2 * SIZE_MB << 20)) ]
	vm2_result $? "A: the data went both ways through $DEV"
}

# vm2_dmesg F0 ERE: (VM A) if a check failed since _tap_failed was F0, both
# kernels' lines that match ERE (job_dmesg).
vm2_dmesg()
{
	[ "$_tap_failed" -ne "$1" ] || return 0
	echo "# A's kernel:"
	job_dmesg "$2"
	echo "# B's kernel:"
	vm2_on B dmesg "$2"
}

# vm2_no_rc_qp: DEV has no RC QP (a kernel ULP's connections are gone).
vm2_no_rc_qp()
{
	! rdma resource show qp link "$DEV/1" 2>/dev/null | grep -q 'type RC'
}

# vm2_check_left DEV RES_A RES_B [DEV_B]: (VM A) nothing left on DEV in
# A or on DEV_B (default DEV) in B: A's resources are RES_A again (within
# 10 s) and B's RES_B, what they were before the run; A's are listed if
# not.
vm2_check_left()
{
	local res

	wait_until 10 vm2_same_res "$2"
	res=$(rdma_res)
	vm2_check_eq "A: no QP, CQ, MR or PD left on $1" "$2" "$res"
	[ "$res" = "$2" ] || rdma resource show | sed 's/^/#   /'
	res=$(vm2_on B res)
	vm2_check_eq "B: no QP, CQ, MR or PD left on ${4:-$1}" "$3" "$res"
}

# vm2_same_res RES: this VM's device has the resources RES (rdma_res).
vm2_same_res() { [ "$(rdma_res)" = "$1" ]; }

# vm2_skip DESCRIPTION WHY: (VM A) a result for the host that is a skip (a
# failure under CI, as skip_one).
vm2_skip()
{
	if in_ci; then
		vm2_result 1 "$1 ($2: a failure under CI)"
	else
		vm2_result 0 "$1 # SKIP $2"
	fi
}

# vm2_pair SV NC READY PORT SRV_OK CLI_OK SRV_CMD... -- CLI_CMD...: the
# server SRV_CMD in VM SV (A or B), once "READY PORT" says it listens NC clients
# CLI_CMD at once in the other VM.  Each must exit 0 within its timeout
# with output matching its ERE, SRV_OK or CLI_OK, else vm2_pair fails (having
# shown why).  While the clients run, the command $VM2_PAIR_DEAD (if set) is
# asked every few seconds whether the run cannot end any more: then the
# clients and the server are stopped, and vm2_pair returns 2.  The
# server's output is left in the file $VM2_SLOG, for the caller to remove.
# The caller sets SERVER_TIMEOUT and CLIENT_TIMEOUT (seconds).
vm2_pair()
{
	local sv=$1 nc=$2 ready=$3 port=$4 sok=$5 cok=$6
	local cv=A srv=() spid i rc bad=0 alive
	local -a cpids clogs

	shift 6
	[ "$sv" = B ] || cv=B
	while [ "$1" != -- ]; do
		srv+=("$1")
		shift
	done
	shift
	VM2_SLOG=$(mktemp)
	rm -f "$VM2_SHARED/listen.$port"
	vm2_on "$sv" server "$ready" "$port" \
		timeout -k 5 "$SERVER_TIMEOUT" "${srv[@]}" >"$VM2_SLOG" 2>&1 &
	spid=$!
	if ! wait_file $((60 * SLOW)) "$VM2_SHARED/listen.$port"; then
		echo "# the server in $sv is not listening on $port: ${srv[*]}"
		bad=1
	else
		for ((i = 0; i < nc; i++)); do
			clogs[i]=$(mktemp)
			vm2_on "$cv" client "cli.$port.$i" \
				timeout -k 5 "$CLIENT_TIMEOUT" "$@" \
				>"${clogs[i]}" 2>&1 &
			cpids[i]=$!
		done
		while [ -n "${VM2_PAIR_DEAD:-}" ]; do
			alive=
			for ((i = 0; i < nc; i++)); do
				! kill -0 "${cpids[i]}" 2>/dev/null || alive=1
			done
			[ -n "$alive" ] || break
			if "$VM2_PAIR_DEAD"; then
				bad=2
				for ((i = 0; i < nc; i++)); do
					vm2_on "$cv" kill "cli.$port.$i"
				done
				break
			fi
			sleep 3
		done
		for ((i = 0; i < nc; i++)); do
			wait "${cpids[i]}"
			rc=$?
			if [ "$rc" -ne 0 ] || ! grep -Eq -- "$cok" "${clogs[i]}"; then
				echo "# client $i in $cv ($*) -> exit $rc"
				sed 's/^/#   /' "${clogs[i]}"
				[ "$bad" -ne 0 ] || bad=1
			fi
			rm -f "${clogs[i]}"
		done
	fi
	# The server ends on its own once its clients are done; if one
	# failed, it may wait for ever: give it a few seconds.
	wait_until $((bad ? 5 : 30 * SLOW)) sh -c "! kill -0 $spid" ||
		vm2_on "$sv" kill "srv.$port"
	wait "$spid"
	rc=$?
	if [ "$rc" -ne 0 ] || ! grep -Eq -- "$sok" "$VM2_SLOG"; then
		echo "# server in $sv (${srv[*]}) -> exit $rc"
		sed 's/^/#   /' "$VM2_SLOG"
		[ "$bad" -ne 0 ] || bad=1
	fi
	return "$bad"
}

# vm2_end [--delete]: (VM A) the end of a two-VM test: A's device
# counters, as comments; with --delete, rdma link delete $DEV (a check);
# no more jobs for B; the TAP plan.
vm2_end()
{
	rdma statistic show link "$DEV/1" 2>/dev/null | sed 's/^/# /'
	if [ "${1:-}" = --delete ]; then
		rdma link delete "$DEV"
		vm2_result $? "A: rdma link delete $DEV"
	fi
	vm2_done
	finish
}

# vm2_main ARGS...: the end of a two-VM script, called with its arguments
# once its functions are defined: "--job NAME ARGS..." (in VM B, from
# vm2_on) runs job_NAME with ARGS and exits with its status; in either VM
# (VRDMA_VM set) the script's vm_main; on the host its host_main, which
# boots the VMs (vm2_host).
vm2_main()
{
	if [ "${1:-}" = --job ]; then
		"job_$2" "${@:3}"
		exit
	elif [ -n "${VRDMA_VM:-}" ]; then
		vm_main
	else
		host_main
	fi
}

finish()
{
	echo "1..$_tap_n"
	echo "# $((_tap_n - _tap_failed)) passed, $_tap_failed failed"
	[ "$_tap_failed" -eq 0 ]
	exit
}

# in_ci: running under CI (CI set and not 0/false, as .ci/run sets it).
# There scripts/install-deps has installed every tool and make has built
# every program, so whatever a test would skip for is missing by mistake.
in_ci()
{
	case ${CI:-} in
	""|0|false) return 1 ;;
	esac
}

# skip_all WHY: the whole test cannot run here: a skip, under CI a failure.
skip_all()
{
	if in_ci; then
		tap_result 1 "$* (a failure under CI)"
		finish
	fi
	echo "1..0 # SKIP $*"
	exit 4
}

# skip_one DESCRIPTION WHY: one check that cannot run here: a skipped
# result, under CI a failed one.
skip_one()
{
	if in_ci; then
		tap_result 1 "$1 ($2: a failure under CI)"
	else
		_tap_n=$((_tap_n + 1))
		echo "ok $_tap_n $1 # SKIP $2"
	fi
}

# use_device_type: load the module of the device type under test, $TYPE
# (VRDMA_TEST_TYPE: vrdma or rxe), unloading the other one: rdma_rxe and
# vrdma both bind UDP port 4791, never both at once.  Sets loaded_rxe when
# it loaded rdma_rxe, for the caller's cleanup to unload it again.
use_device_type()
{
	loaded_rxe=
	case $TYPE in
	vrdma)
		! lsmod | grep -q '^rdma_rxe ' || rmmod rdma_rxe || exit 1
		vrdma_load || exit 1
		;;
	rxe)
		vrdma_unload || exit 1
		if ! lsmod | grep -q '^rdma_rxe '; then
			modprobe rdma_rxe || skip_all "rdma_rxe is not available"
			loaded_rxe=1
		fi
		;;
	*)
		skip_all "VRDMA_TEST_TYPE must be vrdma or rxe"
		;;
	esac
}

# vrdma_load: our module from the build tree, after the modules it needs
# (insmod does not load dependencies) and uverbs for user space.
vrdma_load()
{
	local dep

	[ "$(id -u)" -eq 0 ] || skip_all "must run as root (in the VM)"
	[ -f "$VRDMA_KO" ] || skip_all "$VRDMA_KO not built"
	for dep in $(modinfo -F depends "$VRDMA_KO" | tr ',' ' ') ib_uverbs; do
		modprobe "$dep" || return 1
	done
	lsmod | grep -q '^vrdma ' || insmod "$VRDMA_KO"
}

vrdma_unload()
{
	! lsmod | grep -q '^vrdma ' || rmmod vrdma
}

# veth_pair A B: a veth pair, both ends up.
veth_pair()
{
	ip link add "$1" type veth peer name "$2" &&
		ip link set "$1" up && ip link set "$2" up
}

# veth_dev_up A B IP DEV: a veth pair A-B, both ends up, IP/24 on A and the
# RDMA device DEV of type $TYPE on A, its port ACTIVE within 20 s.
veth_dev_up()
{
	ip link add "$1" type veth peer name "$2" &&
		ip addr add "$3/24" dev "$1" &&
		ip link set "$1" up && ip link set "$2" up &&
		rdma link add "$4" type "$TYPE" netdev "$1" &&
		wait_until 20 port_active "$4"
}

# need_modules MODULE...: skip the test unless every MODULE is available.
need_modules()
{
	local m

	for m in "$@"; do
		modinfo "$m" >/dev/null 2>&1 ||
			skip_all "module $m is not available"
	done
}

# ib_devices: the names of all ib devices, space separated, sorted.
ib_devices()
{
	ls /sys/class/infiniband 2>/dev/null | sort | tr '\n' ' ' | sed 's/ $//'
}

# port_state DEV: the port state as rdma-tool shows it (ACTIVE, DOWN).
port_state()
{
	rdma link show "$1/1" 2>/dev/null | sed -n 's/.* state \([A-Z_]*\).*/\1/p'
}

# port_active DEV: DEV's port is ACTIVE.
port_active() { [ "$(port_state "$1")" = ACTIVE ]; }

# devinfo_field DEV FIELD: one "field: value" of ibv_devinfo -v.
devinfo_field()
{
	ibv_devinfo -v -d "$1" | sed -n "s/^[[:space:]]*$2:[[:space:]]*//p" | head -n 1
}

# veth_routed A B IPA IPB TABLE PREF: a veth pair A-B with IPA/24 on A and
# IPB/24 on B whose traffic between IPA and IPB really crosses the veth.
# Both addresses are local, so by default the kernel routes between them
# through lo; rules for locally generated packets (iif lo) between exactly
# these two addresses, looked up before the local table (moved from
# preference 0 to 1000), send them out of the veth instead, and
# accept_local lets the other end take packets from a local source address.
# Uses routing tables TABLE and TABLE+1, rule preferences PREF and PREF+1.
veth_routed()
{
	local a=$1 b=$2 ipa=$3 ipb=$4 t=$5 p=$6

	# Batched: every process costs about half a second under TCG.
	ip -batch - <<-EOF || return 1
		link add $a type veth peer name $b
		addr add $ipa/24 dev $a
		addr add $ipb/24 dev $b
		link set $a up
		link set $b up
	EOF
	echo 1 >"/proc/sys/net/ipv4/conf/$a/accept_local" &&
	echo 1 >"/proc/sys/net/ipv4/conf/$b/accept_local" &&
	echo 0 >"/proc/sys/net/ipv4/conf/$a/rp_filter" &&
	echo 0 >"/proc/sys/net/ipv4/conf/$b/rp_filter" || return 1
	ip -batch - <<-EOF || return 1
		route add $ipb dev $a src $ipa table $t
		route add $ipa dev $b src $ipb table $((t + 1))
		rule add pref $p iif lo from $ipa to $ipb lookup $t
		rule add pref $((p + 1)) iif lo from $ipb to $ipa lookup $((t + 1))
	EOF
	ip rule show pref 1000 | grep -q . || ip rule add pref 1000 lookup local
	ip rule del pref 0 lookup local 2>/dev/null
	return 0
}

# veth_routed_del A TABLE PREF: undo veth_routed (the local table goes back
# to preference 0 when no other rule of ours is left).
veth_routed_del()
{
	ip -force -batch - >/dev/null 2>&1 <<-EOF
		link del $1
		rule del pref $3
		rule del pref $(($3 + 1))
		route flush table $2
		route flush table $(($2 + 1))
	EOF
	if ! ip rule show | grep -qv 'lookup \(local\|main\|default\)'; then
		ip -force -batch - >/dev/null 2>&1 <<-EOF
			rule add pref 0 lookup local
			rule del pref 1000 lookup local
		EOF
	fi
	return 0
}

# roce_v2_ipv4_gid DEV: the index of DEV's RoCE v2 GID with an IPv4 address.
roce_v2_ipv4_gid()
{
	local d=/sys/class/infiniband/$1/ports/1 f i

	# One grep over the table: a shell loop over 1024 entries is slow
	# under TCG.
	while read -r f; do
		i=${f##*/}
		if [ "$(cat "$d/gid_attrs/types/$i" 2>/dev/null)" = "RoCE v2" ]; then
			echo "$i"
			return 0
		fi
	done < <(grep -l '^0000:0000:0000:0000:0000:ffff:' "$d"/gids/* 2>/dev/null)
	return 1
}

# The servers tool_pair started; stop_servers SIGNAL kills what is left.
servers=()
stop_servers()
{
	local p

	for p in "${servers[@]}"; do
		kill -s "$1" "$p" 2>/dev/null
	done
}

# rdma_links_del DEV...: delete these RDMA devices if they exist, quietly.
rdma_links_del() { printf 'link delete %s\n' "$@" | rdma -f -b - >/dev/null 2>&1; }

# check_gids DEV...: a check each that DEV gets an IPv4 RoCE v2 GID (10 s).
check_gids()
{
	local d

	for d; do
		check "$d has an IPv4 RoCE v2 GID" wait_until 10 roce_v2_ipv4_gid "$d"
	done
}

# rdma_links_add: devices $D0 on netdev $N0 and $D1 on $N1, of $TYPE
# (use_device_type), and check_gids for both.
rdma_links_add()
{
	printf 'link add %s type %s netdev %s\n' \
		"$D0" "$TYPE" "$N0" "$D1" "$TYPE" "$N1" | rdma -b - || return 1
	check_gids "$D0" "$D1"
}

# hw_counters_sum "DEV..." NAME...: the sum of port 1's hw_counters NAME...
# of every DEV (a counter a device does not have counts 0).
hw_counters_sum()
{
	local d c f n=0

	for d in $1; do
		for c in "${@:2}"; do
			f=/sys/class/infiniband/$d/ports/1/hw_counters/$c
			[ -r "$f" ] && n=$((n + $(cat "$f")))
		done
	done
	echo "$n"
}

# tcp_listening PORT: something listens on TCP port PORT.
tcp_listening() { ss -Hltn "sport = :$1" | grep -q .; }

# tool_pair READY PORT DESC PATTERN SERVER_CMD... -- CLIENT_CMD...: start
# the server in the background (its PID goes to servers, for stop_servers
# in the caller's cleanup), wait until "READY PORT" says it listens, run
# the client in the foreground.  Both must exit 0 within SERVER_TIMEOUT and
# CLIENT_TIMEOUT seconds, the client's output must match PATTERN (an ERE),
# neither output may match TOOL_BAD (an ERE, any case; unset: no check),
# else both outputs are shown.  The server gets TOOL_SRV_ARGS, the client
# TOOL_CLI_ARGS appended (arrays, e.g. the port).  TOOL_WAIT (default 30 s
# times VRDMA_TEST_SLOW) is how long the server may take to listen, and to
# end once the client is done; TOOL_SHOW=1 shows the client's lines that
# match PATTERN.
tool_pair()
{
	local ready=$1 lport=$2 desc=$3 pat=$4 srv=() spid rc src slog clog
	local t0 wait=${TOOL_WAIT:-$((30 * ${VRDMA_TEST_SLOW:-1}))}

	shift 4
	while [ "$1" != "--" ]; do
		srv+=("$1")
		shift
	done
	shift
	slog=$(mktemp)
	clog=$(mktemp)
	t0=$SECONDS
	timeout -k 5 "$SERVER_TIMEOUT" "${srv[@]}" "${TOOL_SRV_ARGS[@]}" \
		>"$slog" 2>&1 &
	spid=$!
	servers+=("$spid")
	if ! wait_until "$wait" "$ready" "$lport"; then
		echo "# server not listening on $lport: ${srv[*]}"
		sed 's/^/#   /' "$slog"
		kill "$spid" 2>/dev/null
		wait "$spid" 2>/dev/null
		tap_result 1 "$desc"
		rm -f "$slog" "$clog"
		return
	fi
	timeout -k 5 "$CLIENT_TIMEOUT" "$@" "${TOOL_CLI_ARGS[@]}" >"$clog" 2>&1
	rc=$?
	# The server ends on its own once the client is done; if the client
	# failed, it may wait for ever: give it a few seconds.
	wait_until $((rc ? 5 : wait)) sh -c "! kill -0 $spid" ||
		kill "$spid" 2>/dev/null
	wait "$spid"
	src=$?
	if [ "$rc" -ne 0 ] || [ "$src" -ne 0 ] ||
	   ! grep -Eq -- "$pat" "$clog" ||
	   { [ -n "${TOOL_BAD:-}" ] &&
	     grep -Eqi -- "$TOOL_BAD" "$clog" "$slog"; }; then
		echo "# client ($*) -> exit $rc"
		sed 's/^/#   /' "$clog"
		echo "# server (${srv[*]}) -> exit $src"
		sed 's/^/#   /' "$slog"
		tap_result 1 "$desc"
	else
		[ -z "${TOOL_SHOW:-}" ] || grep -E -- "$pat" "$clog" | sed 's/^/# /'
		tap_result 0 "$desc ($((SECONDS - t0)) s)"
	fi
	rm -f "$slog" "$clog"
}
