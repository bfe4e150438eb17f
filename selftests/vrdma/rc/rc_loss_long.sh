#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# The loss stream of rc_loss_test at full size: 1 GiB of mixed SEND, WRITE
# and READ between two vrdma devices under netem loss, reordering and
# duplication, every byte and every completion checked (make check runs it
# with 64 MiB).  Run on the host, it boots a VM for it with scripts/vm-run;
# make check-long runs it.  Under TCG the stream moves 0.3-0.7 MB/s
# (go-back-N pays for netem's reordering with retransmissions): 25 minutes
# on a quiet host, up to an hour on a busy one.  Output is TAP.
#
#   selftests/vrdma/rc/rc_loss_long.sh
#   VRDMA_LOSS_MB=256 selftests/vrdma/rc/rc_loss_long.sh   # another size
. "$(dirname "$0")/../lib/lib.sh"

SLOW=${VRDMA_TEST_SLOW:-1}
export VRDMA_LOSS_MB=${VRDMA_LOSS_MB:-1024}
out=$VRDMA_TOP/out/rc_loss_long
test=selftests/vrdma/build/rc_loss_test

[ -x "$VRDMA_TOP/$test" ] || skip_all "$test not built"
rm -rf "$out"
mkdir -p "$out"
echo "# one VM, a $VRDMA_LOSS_MB MiB stream; output in $out"
SECONDS=0
(cd "$VRDMA_TOP" && scripts/vm-run --smp 2 --mem 2048 \
	--timeout $((4 * 3600 * SLOW)) --out "$out" "$test stream") 2>&1 |
	tee "$out/stream.log" | sed -u 's/^/# /'
vmrc=${PIPESTATUS[0]}
echo "# done in $SECONDS s"

check_match "the $VRDMA_LOSS_MB MiB stream under loss passed" \
	'^ok 1 loss.stream' "$(cat "$out/stream.log")"
check_eq "the VM ran cleanly (vm-run exit status)" 0 "$vmrc"
finish
