#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# The bulk payload copy (drivers/vrdma/copy.c).  The module times its copy
# routines when it loads and logs its choice; the parameter bulk_copy shows
# it and forces one.  With each routine forced in turn, rc_test's sizes
# (0 B to 1 MiB + 3, at odd offsets on both sides, MTU +-1) and sge
# (1..max SGEs of odd lengths) tests run over the loopback path
# (local_direct=1: MR to MR) and over packets (local_direct=0: the
# requester's gather, the responder's placement from page fragments, READ
# responses), every byte checked.
. "$(dirname "$0")/../lib/lib.sh"

PARAM=/sys/module/vrdma/parameters/bulk_copy
LOCAL=/sys/module/vrdma/parameters/local_direct
RC_TESTS="sizes sge"

cd "$(dirname "$0")/.." || exit 1
[ -x build/rc_test ] || skip_all "build/rc_test not built"
lsmod | grep -q '^vrdma ' && loaded=1 || loaded=0
vrdma_load || exit 1
[ -w $PARAM ] || skip_all "vrdma has no bulk_copy parameter"

auto=$(cat $PARAM)
check_match "bulk_copy shows the timed choice" '^(memcpy|words) \(auto\)$' \
	"$auto"
# Loaded before this test, the line may have left the kernel's log.
if [ "$loaded" = 0 ]; then
	check_match "the choice was logged at load" \
		"^vrdma: bulk copy: ${auto% (auto)} \\(4 KiB: memcpy [0-9]+ MB/s, words [0-9]+ MB/s\\)" \
		"$(dmesg | sed 's/^\[[^]]*\] //' | grep 'vrdma: bulk copy:')"
fi
check_fails "bulk_copy refuses an unknown routine" "Invalid argument" \
	bash -c "echo nosuch >$PARAM"

# run_tests ROUTINE LOCAL: one TAP line per rc_test test.
run_tests()
{
	local mode="bulk_copy=$1 local_direct=$2" out

	out=$(VRDMA_RC_TESTS="$RC_TESTS" ./build/rc_test 2>&1)
	tap_relay "$mode" "$out"
	check_eq "$mode: every test ran" 4 \
		"$(printf '%s\n' "$out" | grep -Ec '^(not )?ok [0-9]+ ')"
}

for copy in memcpy words; do
	echo $copy >$PARAM
	check_eq "bulk_copy=$copy is in use" $copy "$(cat $PARAM)"
	for ld in 1 0; do
		echo $ld >$LOCAL
		run_tests $copy $ld
	done
done
echo 1 >$LOCAL
echo auto >$PARAM
check_eq "bulk_copy is back to auto" "$auto" "$(cat $PARAM)"
finish
