# SPDX-License-Identifier: GPL-2.0
# shellcheck shell=bash
#
# Sourced by scripts/bench: the two-VM runs that failed, run again.  Their
# figures are "nan" in raw.csv (scripts/bench.d/two-vm); retry_plan says what a
# fresh boot must run, retry_merge puts its figures in their places.
# selftests/vrdma/bench/bench_retry.sh tests both on the host.

# retry_plan RAW: for the runs of RAW that failed, "ONLY DEVICES REPS" of a
# boot that runs them again: their rows, their devices (the one that
# failed least first: a device that fails every run would end that boot
# too, after three), and as many repetitions as the row that failed most
# often.  Empty if none failed.
retry_plan()
{
	awk -F, '$6 == "nan" {
		row = substr($2, 5) " " $3 " " $4
		rows[row]; fails[$1]++
		if (++n[$1 "," row] > reps) reps = n[$1 "," row]
	}
	END {
		if (!reps) exit
		only = ""; d = ""
		for (r in rows) only = only (only == "" ? "" : "|") r
		for (;;) {
			best = ""
			for (x in fails)
				if (best == "" || fails[x] < fails[best]) best = x
			if (best == "") break
			d = d (d == "" ? "" : " ") best
			delete fails[best]
		}
		printf "^2vm/(%s) \t%s\t%d\n", only, d, reps
	}' "$1"
}

# retry_merge RAW RETRY: RAW with each failed run's "nan" replaced by a
# figure of the same device and row from RETRY, while there are some.
retry_merge()
{
	awk -F, -v OFS=, '{ key = $1 "," $2 "," $3 "," $4 }
	NR == FNR { if (FNR > 1 && $6 != "nan") v[key, ++k[key]] = $6; next }
	$6 == "nan" && used[key] < k[key] { $6 = v[key, ++used[key]] }
	{ print }' "$2" "$1"
}
