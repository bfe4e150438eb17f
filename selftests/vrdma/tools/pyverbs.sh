#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# rdma-core's own test suite against the device: python3-pyverbs ships it
# (gzipped) in /usr/share/doc/rdma-core/tests.  It is unpacked to a scratch
# directory and run as "run_tests.py --dev vrdma0 -v" on a device bound to a
# veth with an IPv4 and an IPv6 address; every unittest result becomes one
# TAP line.  A pass is ok; a failure or an error is not ok; a skip is ok only
# if the table below expects it (a vendor's own tests, or a feature the
# README lists as not implemented), so that a skip for any other reason (a
# port that is down, a verb that started to fail with EOPNOTSUPP) fails.
#
# VRDMA_TEST_TYPE=vrdma (default) or rxe (Soft-RoCE, for comparison).
# VRDMA_PYVERBS_ARGS: more run_tests.py arguments, e.g. "-k test_qp -k test_mr"
# or "--gid 1"; VRDMA_PYVERBS_TIMEOUT, VRDMA_PYVERBS_PYTHON (VRDMA_* is what
# scripts/vm-run carries into the VM).
. "$(dirname "$0")/../lib/lib.sh"

TYPE=${VRDMA_TEST_TYPE:-vrdma}
PYTHON=${VRDMA_PYVERBS_PYTHON:-/usr/bin/python3}
SUITE=/usr/share/doc/rdma-core/tests
NETDEV=pyv0 PEER=pyv1
IP4=10.213.0.1 IP6=fd00:213::1
# A guard against a hang, not a speed check: 250 s in a VM of its own on
# an idle 2-CPU host, 420 s beside make check's other VM, several times
# that on a loaded host (or the debug kernel, VRDMA_TEST_SLOW).
RUN_TIMEOUT=${VRDMA_PYVERBS_TIMEOUT:-$((1200 * ${VRDMA_TEST_SLOW:-1}))}

# Expected skips: "TEST GLOB;REASON ERE;WHY", the first line whose glob
# matches the test's id (without "tests.") and whose extended regex matches
# the reason the test gave wins.  The features are those README.md lists as
# not implemented; pyverbs turns EOPNOTSUPP from a verb into such a skip.
EXPECTED_SKIPS=$(cat <<'EOF'
test_mlx5_*;.;mlx5-specific
test_efa*;.;EFA-specific
test_cuda_dmabuf.*;cuda;needs a GPU (CUDA)
test_mr.DmaBuf*;Allocating dmabuf;dma-buf memory from a GPU (/dev/dri)
test_rdmacm.*;doesn't have net interface;rxe: no device/net in sysfs for a device on a veth
test_rdmacm.*;has no QP1;rdma_cm needs QP1 (GSI), which comes with kernel verbs
EOF
)
# rdma_rxe's provider imports no context, has no parent domains, no XRC
# and no device memory; vrdma's has them all, so there those skips are
# failures: an XRC test (test_atomic's test_xrc_*,
# test_cqex.test_xrc_traffic_cq_ex,
# test_qpex.test_qp_ex_xrc_send*, test_relaxed_ordering.test_ro_xrc_traffic,
# test_odp.test_odp_xrc_traffic) that skips fails.  rdma_rxe of Linux 6.1
# and 6.12 has no on-demand paging either; vrdma's ODP tests must pass.
if [ "$TYPE" = rxe ]; then
	EXPECTED_SKIPS+=$'\ntest_shared_pd.*;Importing a device is not supported;rxe: no ibv_import_device'
	EXPECTED_SKIPS+=$'\n*;Parent Domain is not supported;rxe: no parent domains'
	EXPECTED_SKIPS+=$'\n*;Create XRCD is not supported;rxe: no XRC'
	EXPECTED_SKIPS+=$'\n*;ODP is not supported|ODP is unavailable|ODP implicit is not supported;rxe: no on-demand paging'
	EXPECTED_SKIPS+=$'\n*;Device memory is not supported;rxe: no device memory'
	EXPECTED_SKIPS+=$'\n*;Create QP type 8 |Create Raw Packet QP;rxe: no raw packet QPs'
	EXPECTED_SKIPS+=$'\ntest_rss_traffic.*;Create WQ is not supported;rxe: no work queues (RSS)'
	EXPECTED_SKIPS+=$'\ntest_tag_matching.*;Extended CQ is not supported|Tag matching is not supported;rxe: no tag matching'
fi

[ "$(id -u)" -eq 0 ] || skip_all "must run as root (in the VM)"
[ -f "$SUITE/run_tests.py" ] || skip_all "$SUITE not installed (python3-pyverbs)"
"$PYTHON" -c 'import pyverbs.device' 2>/dev/null ||
	skip_all "$PYTHON cannot import pyverbs (python3-pyverbs)"

use_device_type
DEV=${TYPE}0

scratch=$(mktemp -d /tmp/pyverbs.XXXXXX) || exit 1
hugepages=/proc/sys/vm/nr_hugepages
old_hugepages=$(cat "$hugepages" 2>/dev/null)
cleanup()
{
	rdma link delete "$DEV" 2>/dev/null
	ip link del "$NETDEV" 2>/dev/null
	[ -z "$loaded_rxe" ] || rmmod rdma_rxe 2>/dev/null
	[ -z "$old_hugepages" ] || echo "$old_hugepages" >"$hugepages"
	rm -rf "$scratch"
}
trap cleanup EXIT

# The tests import each other as the package "tests".
cp -r "$SUITE" "$scratch/tests" && gunzip -f "$scratch"/tests/*.gz || exit 1

# A few 2 MiB huge pages, so that the huge-page tests (ODP's among them)
# run instead of skipping for the lack of them: such a skip is not expected.
[ -z "$old_hugepages" ] || [ "$old_hugepages" -ge 4 ] || echo 4 >"$hugepages"

ip -batch - <<-EOF || exit 1
	link add $NETDEV type veth peer name $PEER
	addr add $IP4/24 dev $NETDEV
	addr add $IP6/64 dev $NETDEV nodad
	link set $NETDEV up
	link set $PEER up
	EOF
check "rdma link add $DEV on $NETDEV" \
	rdma link add "$DEV" type "$TYPE" netdev "$NETDEV"

# has_gid PATTERN: a RoCE v2 GID of $DEV matches PATTERN (grep -E).
has_gid()
{
	local d=/sys/class/infiniband/$DEV/ports/1 f

	while read -r f; do
		[ "$(cat "$d/gid_attrs/types/${f##*/}")" = "RoCE v2" ] && return 0
	done < <(grep -lE "$1" "$d"/gids/* 2>/dev/null)
	return 1
}
# The link-local address only once duplicate address detection is done.
check "$DEV has its IPv6 link-local GID" wait_until 20 has_gid '^fe80:'
check "$DEV has its IPv4 GID" wait_until 10 has_gid '^0000:0000:0000:0000:0000:ffff:0ad5:0001'
check "$DEV has its IPv6 GID" wait_until 10 has_gid '^fd00:0213:'

# rdma_cm resolves addresses and connects through QP1 (the GSI QP), which
# ib_core creates only on devices with kernel verbs.  Where the device has
# none, the rdmacm tests (which find the netdev in device/net/ and so would
# run) are made to skip, with that reason, instead of failing.
if ! rdma res show qp link "$DEV/1" | grep -q ' lqpn 1 '; then
	cat >>"$scratch/tests/base.py" <<-EOF

	def _vrdma_no_qp1(self):
	    raise unittest.SkipTest('$DEV has no QP1 (GSI) for rdma_cm')
	RDMACMBaseTest.setUp = _vrdma_no_qp1
	EOF
fi

# test_rss_traffic makes its work queues without looking for EOPNOTSUPP
# (rdma-core 44 to 56): on rdma_rxe, which has none, it would error
# instead of skipping as pyverbs does for a verb not supported.  There
# only, made to skip with that reason, and only that error.
if [ "$TYPE" = rxe ]; then
	cat >>"$scratch/tests/test_rss_traffic.py" <<-EOF

	def _vrdma_create_wqs(self, _create_wqs=RssRes.create_wqs):
	    try:
	        return _create_wqs(self)
	    except PyverbsRDMAError as ex:
	        if ex.error_code == errno.EOPNOTSUPP:
	            raise unittest.SkipTest('Create WQ is not supported')
	        raise
	RssRes.create_wqs = _vrdma_create_wqs
	EOF
fi

# The unittest runner reports on stderr; the tests' own output goes to
# stdout, kept apart so that it cannot break the result lines.
t0=$SECONDS
# shellcheck disable=SC2086
(cd "$scratch/tests" &&
	timeout -k 10 "$RUN_TIMEOUT" "$PYTHON" run_tests.py --dev "$DEV" -v \
		${VRDMA_PYVERBS_ARGS:-}) >"$scratch/stdout" 2>"$scratch/stderr"
rc=$?
echo "# run_tests.py --dev $DEV -v ${VRDMA_PYVERBS_ARGS:-}: exit $rc after $((SECONDS - t0)) s"
if [ "$rc" -eq 124 ] || [ "$rc" -eq 137 ]; then
	tap_result 1 "run_tests.py finished within $RUN_TIMEOUT s"
fi

# parse_results: "STATUS<TAB>ID<TAB>REASON" per test from unittest's
# verbose output: "name (id) ... status", where a docstring puts the
# " ... status" on the next line and output of the test may come before it.
parse_results()
{
	awk '
	function done(s, r) {
		if (id == "")
			return
		r = ""
		if (s ~ /^skipped /) {
			# the reason as repr() prints it: drop the quotes
			r = substr(s, 10, length(s) - 10)
			s = "skipped"
		}
		printf "%s\t%s\t%s\n", s, id, r
		id = ""
	}
	function status_of(t) {
		if (t ~ /^(ok|FAIL|ERROR|expected failure|unexpected success)$/ ||
		    t ~ /^skipped /)
			return t
		return ""
	}
	/^test[A-Za-z0-9_]* \([A-Za-z0-9_.]+\)/ {
		if (id != "")
			done("lost")
		name = $1
		id = $2
		gsub(/[()]/, "", id)
		# Python < 3.11 prints the class, not the method.
		if (id !~ ("\\." name "$"))
			id = id "." name
		sub(/^tests\./, "", id)
	}
	id != "" {
		n = index($0, " ... ")
		t = $0
		while (n) {
			t = substr(t, n + 5)
			n = index(t, " ... ")
		}
		if (t == $0 && status_of(t) == "")
			next
		if (status_of(t) != "")
			done(t)
	}
	/^(-|=)+$/ && id != "" { done("lost") }
	END { done("lost") }
	' "$scratch/stderr"
}

# details ID: the traceback unittest printed for a failed test, between
# the dashes under "ERROR: name (id)" and the next line of dashes or equals.
details()
{
	awk -v id="$1" '
	/^(ERROR|FAIL): / {
		t = $3
		gsub(/[()]/, "", t)
		sub(/^tests\./, "", t)
		p = (t == id || t "." $2 == id) ? 1 : 0
		next
	}
	/^(-+|=+)$/ {
		if (p == 1)
			p = 2
		else
			p = 0
		next
	}
	p == 2 && NF { print "#   " $0 }
	' "$scratch/stderr"
}

# expected_skip ID REASON: print why the skip is expected, or fail.
expected_skip()
{
	local glob ere why

	while IFS=';' read -r glob ere why; do
		# shellcheck disable=SC2053
		if [[ $1 == $glob && $2 =~ $ere ]]; then
			echo "$why"
			return 0
		fi
	done <<<"$EXPECTED_SKIPS"
	return 1
}

passed=0 failed=0 skipped=0 xrc_passed=0 odp_passed=0 dm_passed=0 raw_passed=0
rss_passed=0
tm_passed=0
while IFS=$'\t' read -r status id reason; do
	case $status in
	ok | "expected failure")
		passed=$((passed + 1))
		case $id in *xrc*) xrc_passed=$((xrc_passed + 1)) ;; esac
		case $id in test_odp.*) odp_passed=$((odp_passed + 1)) ;; esac
		case $id in test_device.*DMTest.* | test_mr.DeviceMemory*)
			dm_passed=$((dm_passed + 1)) ;;
		esac
		case $id in test_qp.*raw* | test_flow.*)
			raw_passed=$((raw_passed + 1)) ;;
		esac
		case $id in test_rss_traffic.*)
			rss_passed=$((rss_passed + 1)) ;;
		esac
		case $id in test_tag_matching.*) tm_passed=$((tm_passed + 1)) ;; esac
		tap_result 0 "$id"
		;;
	skipped)
		if why=$(expected_skip "$id" "$reason"); then
			skipped=$((skipped + 1))
			_tap_n=$((_tap_n + 1))
			echo "ok $_tap_n $id # SKIP $why ($reason)"
		else
			failed=$((failed + 1))
			echo "# unexpected skip: $reason"
			tap_result 1 "$id"
		fi
		;;
	*)
		failed=$((failed + 1))
		echo "# $status"
		details "$id"
		tap_result 1 "$id"
		;;
	esac
done < <(parse_results)

# Every test that ran must have been reported, and something must have run.
ran=$(sed -n 's/^Ran \([0-9]*\) tests\{0,1\} in .*/\1/p' "$scratch/stderr")
check_eq "a result for each of the ${ran:-?} tests run" "${ran:-none}" \
	"$((passed + failed + skipped))"
if [ "${ran:-none}" != "$((passed + failed + skipped))" ]; then
	echo "# run_tests.py stderr, last lines:"
	tail -n 20 "$scratch/stderr" | sed 's/^/#   /'
	echo "# stdout, last lines:"
	tail -n 20 "$scratch/stdout" | sed 's/^/#   /'
fi
# vrdma has XRC, ODP, device memory, raw packet QPs, RSS and tag matching:
# the suite's XRC tests (rdma-core 44 has seven that can pass here,
# test_odp_xrc_traffic among them), its 17 ODP tests (explicit, implicit,
# huge pages, prefetch, every transport), its 14 device memory tests
# (test_device's DMTest and SharedDMTest, test_mr's DeviceMemory*), its 14
# raw packet tests (the nine of test_qp's raw QPs, test_flow's five flows
# with traffic), RSS's test_rss_traffic (work queues, an indirection table,
# a QP hashing over them) and its 4 tag matching tests (eager, unexpected,
# NO_TAG, rendezvous) must have run and passed, not merely not failed; the
# RSS and tag matching ones also when the arguments select them.
if [ "$TYPE" = vrdma ] && { [ -z "${VRDMA_PYVERBS_ARGS:-}" ] ||
	[[ ${VRDMA_PYVERBS_ARGS} == *test_rss* ]]; }; then
	check "test_rss_traffic passed ($rss_passed)" test "$rss_passed" -ge 1
fi
if [ "$TYPE" = vrdma ] && { [ -z "${VRDMA_PYVERBS_ARGS:-}" ] ||
	[[ ${VRDMA_PYVERBS_ARGS} == *test_tag_matching* ]]; }; then
	check "the tag matching tests passed ($tm_passed)" \
		test "$tm_passed" -ge 4
fi
if [ "$TYPE" = vrdma ] && [ -z "${VRDMA_PYVERBS_ARGS:-}" ]; then
	check "the XRC tests passed ($xrc_passed)" test "$xrc_passed" -ge 7
	check "the ODP tests passed ($odp_passed)" test "$odp_passed" -ge 17
	check "the device memory tests passed ($dm_passed)" \
		test "$dm_passed" -ge 14
	check "the raw packet QP and flow tests passed ($raw_passed)" \
		test "$raw_passed" -ge 14
fi
echo "# pyverbs on $TYPE: $passed passed, $failed failed or errors," \
	"$skipped skipped (expected) of ${ran:-?}"
finish
