#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# The loopback path (drivers/vrdma/loopback.c) against the packet path.  RC
# messages between QPs of this host move whole, MR to MR, without packets,
# unless the module parameter local_direct is 0.  The RC and atomic tests
# of every error case -- bad rkey, out of bounds, access rights of MR and
# QP, another PD, a deregistered MR, RNR and RNR retries exhausted, receive
# buffer too small, bad lkeys, bad receive WQE, CQ overflow, misaligned
# atomics, no responder resources; ATOMIC WRITE and FLUSH, which take the
# packet path either way, between messages that do not -- and the tests
# of each opcode, and xrc_test's of XRC (every opcode, many packets, SRQ
# numbers nobody has, of another domain or destroyed, rkeys and lkeys of
# another PD than the SRQ's, numbers beyond 24 bits), and dm_test's of
# device memory MRs (SEND, WRITE, READ and atomics from and into them, a
# WRITE beyond one), run once with
# local_direct=1 and once with local_direct=0: each checks the exact
# outcome (CQE status, opcode, byte_len, QP states, memory untouched), so
# passing both ways shows the two paths end the same.  rc_test's
# local_path checks which path was taken: loopback_msgs counted and no packet
# sent with 1, packets (delivered inside the driver) with 0.
. "$(dirname "$0")/../lib/lib.sh"

PARAM=/sys/module/vrdma/parameters/local_direct
RC_TESTS="opcodes local_path inline_data unsignaled solicited rnr_retry
	rnr_retry_exceeded bad_rkey_write bad_rkey_read bad_rkey_write_imm
	oob_write_end oob_write_wrap oob_read_start oob_read_end
	mr_no_remote_write mr_no_remote_read mr_local_only rkey_after_dereg
	rkey_other_pd qp_no_remote_write recv_too_small bad_lkey_send
	bad_lkey_read bad_lkey_recv cq_overflow"
ATOMIC_TESTS="cas_success cas_failure faa_wrap misaligned misaligned_cas
	mr_no_remote_atomic qp_no_remote_atomic out_of_bounds_end
	out_of_bounds_start bad_rkey no_responder_resources bad_lkey
	local_read_only local_length atomic_write atomic_write_misaligned
	atomic_write_bad_rkey flush flush_no_right masked_cas masked_faa
	masked_errors"
XRC_TESTS="send two_srqs rdma_atomic multi_packet unknown_srqn other_xrcd
	other_pd recv_other_pd srqn_24_bits srq_destroyed"
DM_TESTS="send write_read atomics write_beyond_mr"

cd "$(dirname "$0")/.." || exit 1
[ -x build/rc_test ] && [ -x build/atomic_test ] && [ -x build/xrc_test ] &&
	[ -x build/dm_test ] ||
	skip_all "build/rc_test, atomic_test, xrc_test, dm_test not built"
vrdma_load || exit 1
[ -w $PARAM ] || skip_all "vrdma has no local_direct parameter"

# run_tests MODE PROGRAM NAMES: one TAP line per test of PROGRAM.
run_tests()
{
	local mode=$1 prog=$2 names out

	names=$(echo "$3" | tr -s ' \t\n' ' ')
	out=$(VRDMA_RC_TESTS="$names" "./build/$prog" 2>&1)
	tap_relay "local_direct=$mode $prog" "$out"
	# Every test named ran (a renamed test would silently be skipped).
	check_eq "local_direct=$mode $prog ran every test named" \
		"$(( $(echo "$names" | wc -w) * 2 ))" \
		"$(printf '%s\n' "$out" | grep -Ec '^(not )?ok [0-9]+ ')"
}

for mode in 1 0; do
	echo $mode >$PARAM
	run_tests $mode rc_test "$RC_TESTS"
	run_tests $mode atomic_test "$ATOMIC_TESTS"
	run_tests $mode xrc_test "$XRC_TESTS"
	run_tests $mode dm_test "$DM_TESTS"
done
echo 1 >$PARAM
check_eq "local_direct is back on" "Y" "$(cat $PARAM)"
finish
