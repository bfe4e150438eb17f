#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# scripts/bench.d/retry.sh on the host: what a second boot of the two-VM
# bench runs when runs of the first failed ("nan" in raw.csv), and how its
# figures take their places.
. "$(dirname "$0")/../lib/lib.sh"
. "$VRDMA_TOP/scripts/bench.d/retry.sh"

T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
H=device,test,size,qps,rep,value,unit

printf '%s\n' $H rxe,2vm/ib_read_bw,64,1,1,1.44,MB/s \
	vrdma,2vm/ib_read_bw,64,1,1,1.29,MB/s >"$T/ok.csv"
check_eq "nothing failed: no second boot" "" "$(retry_plan "$T/ok.csv")"

# rxe failed twice in one row and once in another, vrdma once.
printf '%s\n' $H \
	rxe,2vm/ib_read_bw,64,1,1,1.44,MB/s \
	vrdma,2vm/ib_read_bw,64,1,1,1.29,MB/s \
	rxe,2vm/ib_read_bw,64,1,2,nan,MB/s \
	rxe,2vm/ib_send_bw,4096,1,2,nan,MB/s \
	vrdma,2vm/ib_send_bw,4096,1,2,1.50,MB/s \
	rxe,2vm/ib_read_bw,64,1,3,nan,MB/s \
	vrdma,2vm/ib_send_bw,4096,1,3,nan,MB/s >"$T/raw.csv"
IFS=$'\t' read -r only devs reps <<<"$(retry_plan "$T/raw.csv")"
check_eq "the devices, the one that failed least first" "vrdma rxe" "$devs"
check_eq "as many repetitions as the row that failed most" 2 "$reps"
rows=$(printf '%s\n' "2vm/ib_read_bw 64 1 10000" "2vm/ib_read_bw 64 16 10000" \
	"2vm/ib_read_bw 640 1 1000" "2vm/ib_send_bw 4096 1 1000" \
	"2vm/ib_send_bw 65536 1 100" "2vm/ib_write_bw 64 1 10000" |
	grep -E -- "$only" | tr '\n' ';')
check_eq "the rows that failed, and only they" \
	"2vm/ib_read_bw 64 1 10000;2vm/ib_send_bw 4096 1 1000;" "$rows"

# The second boot: rxe's read row failed once more, its send row passed
# twice; vrdma's send row passed.
printf '%s\n' $H \
	vrdma,2vm/ib_send_bw,4096,1,1,1.61,MB/s \
	rxe,2vm/ib_read_bw,64,1,1,1.37,MB/s \
	rxe,2vm/ib_send_bw,4096,1,1,0.91,MB/s \
	rxe,2vm/ib_send_bw,4096,1,2,0.92,MB/s \
	rxe,2vm/ib_read_bw,64,1,2,nan,MB/s >"$T/again.csv"
retry_merge "$T/raw.csv" "$T/again.csv" >"$T/merged.csv"
check_eq "merged: each nan filled in turn while figures last" \
	"$(printf '%s\n' $H \
	rxe,2vm/ib_read_bw,64,1,1,1.44,MB/s \
	vrdma,2vm/ib_read_bw,64,1,1,1.29,MB/s \
	rxe,2vm/ib_read_bw,64,1,2,1.37,MB/s \
	rxe,2vm/ib_send_bw,4096,1,2,0.91,MB/s \
	vrdma,2vm/ib_send_bw,4096,1,2,1.50,MB/s \
	rxe,2vm/ib_read_bw,64,1,3,nan,MB/s \
	vrdma,2vm/ib_send_bw,4096,1,3,1.61,MB/s)" "$(cat "$T/merged.csv")"
IFS=$'\t' read -r only devs reps <<<"$(retry_plan "$T/merged.csv")"
check_eq "what is still missing after it" "^2vm/(ib_read_bw 64 1) /rxe/1" \
	"$only/$devs/$reps"
finish
