#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# scripts/bench.d/report on the host: from a raw.csv written here, the
# figures it derives (medians, the one-QP message rate, shares of the
# link's ceiling, kernel CPU per message) and the targets it marks met or
# missed, for the one-VM, scale, two-VM and storage ULP rows.
. "$(dirname "$0")/../lib/lib.sh"

REPORT=$VRDMA_TOP/scripts/bench.d/report
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
H=device,test,size,qps,rep,value,unit

# get DIR EXPR: a Python expression over results.json (j), the rows by
# key (row[(test, size, qps)]) and the targets by name's start (tgt(s)).
get()
{
	python3 - "$1/results.json" "$2" <<'EOF'
import json, sys
j = json.load(open(sys.argv[1]))
row = {(r["test"], r["size"], r["qps"]): r for r in j["rows"]}
def tgt(s):
    found = [t for t in j["targets"] if t["target"].startswith(s)]
    return found[0] if len(found) == 1 else "%d targets" % len(found)
v = eval(sys.argv[2])
print("%.4g" % v if isinstance(v, float) else v)
EOF
}

# report DIR: run the report on DIR/raw.csv; its output in DIR/out.
report()
{
	check "the report runs on $(basename "$1")" \
		sh -c '"$1" "$2" >"$2/out"' sh "$REPORT" "$1"
}

# --- one VM: medians, the message rate, scale rows, the packet path
mkdir "$T/one"
printf '%s\n' $H \
	vrdma,ib_send_bw,64,1,1,10,MB/s vrdma,ib_send_bw,64,1,2,nan,MB/s \
	vrdma,ib_send_bw,64,1,3,14,MB/s rxe,ib_send_bw,64,1,1,2,MB/s \
	rxe,ib_send_bw,64,1,2,3,MB/s rxe,ib_send_bw,64,1,3,4,MB/s \
	vrdma,ib_send_bw,64,8,1,30,MB/s rxe,ib_send_bw,64,8,1,10,MB/s \
	vrdma,2x/ib_write_bw,4096,1,1,900,MB/s \
	rxe,2x/ib_write_bw,4096,1,1,100,MB/s \
	vrdma,ib_write_bw,4096,1,1,400,MB/s rxe,ib_write_bw,4096,1,1,100,MB/s \
	vrdmapkt,ib_write_bw,4096,1,1,300,MB/s \
	vrdma,ib_write_lat,2,1,1,6,us rxe,ib_write_lat,2,1,1,10,us \
	vrdmapkt,ib_write_lat,2,1,1,4,us \
	cpu,memcpy,67108864,1,1,2000,MB/s >"$T/one/raw.csv"
report "$T/one"
check_eq "a median leaves failed runs (nan) out" 12 \
	"$(get "$T/one" 'row[("ib_send_bw", 64, 1)]["vrdma"]')"
check_eq "the one-QP message rate is the 64 B SEND MB/s over 64 B" \
	"0.1966/0.04915" \
	"$(get "$T/one" '"%.4g/%.4g" % (row[("msgrate/ib_send_bw", 64, 1)]["vrdma"], row[("msgrate/ib_send_bw", 64, 1)]["rxe"])')"
check_eq "its label says where it comes from" \
	"message rate, 64 B SEND, 1 QP (its MB/s over 64 B)" \
	"$(get "$T/one" 'row[("msgrate/ib_send_bw", 64, 1)]["label"]')"
check_eq "the 8-QP message rate is a target: 3x rxe" True \
	"$(get "$T/one" 'tgt("message rate")["met"]')"
check_eq "two pairs at once: labelled, summed figures compared" \
	"ib_write_bw 4 KiB, two pairs at once 9" \
	"$(get "$T/one" '"%s %g" % (row[("2x/ib_write_bw", 4096, 1)]["label"], row[("2x/ib_write_bw", 4096, 1)]["ratio"])')"
check_eq "a one-VM row's share of memcpy" 0.2 \
	"$(get "$T/one" 'row[("ib_write_bw", 4096, 1)]["vrdma_of_ceiling"]')"
check_eq "the packet path: 3x rxe at 4 KiB misses 4x" False \
	"$(get "$T/one" 'tgt("packet path: ib_write_bw 4 KiB")["met"]')"
check_eq "the packet path: 2 B latency 0.4 of rxe meets 1/2" True \
	"$(get "$T/one" 'tgt("packet path: ib_write_lat 2 B")["met"]')"
check_eq "a latency of 0.6 of rxe misses 1/2" False \
	"$(get "$T/one" 'tgt("ib_write_lat 2 B <= 1/2 rxe")["met"]')"
check_eq "a row not measured is neither met nor missed" None \
	"$(get "$T/one" 'tgt("ib_read_bw 64 KiB >= 4x rxe")["met"]')"
check_eq "no row below rxe" True "$(get "$T/one" 'tgt("no row below rxe")["met"]')"
check "the table has the packet path" grep -q '^The packet path' "$T/one/out"
check "the summary counts the targets" grep -q '^Targets met: [0-9]* of [0-9]*$' \
	"$T/one/out"
check "and writes the plot" test -s "$T/one/bandwidth.png"

# --- two VMs: the link's ceiling and kernel CPU time
mkdir "$T/two"
printf '%s\n' $H \
	link,2vm/udp_oneway,4112,1,1,51200,pps \
	link,2vm/udp_oneway,96,1,1,100000,pps \
	link,2vm/udp_rr,32,128,1,16384,per\ s \
	vrdma,2vm/ib_write_bw,4096,1,1,180,MB/s rxe,2vm/ib_write_bw,4096,1,1,50,MB/s \
	vrdma,2vm/ib_write_bw,64,1,1,4,MB/s rxe,2vm/ib_write_bw,64,1,1,2,MB/s \
	vrdma,2vm/ib_read_bw,64,1,1,0.5,MB/s rxe,2vm/ib_read_bw,64,1,1,0.6,MB/s \
	vrdma,2vm/cpu_client/ib_write_bw,4096,1,1,4,ms/MB \
	rxe,2vm/cpu_client/ib_write_bw,4096,1,1,10,ms/MB \
	vrdma,2vm/cpu_server/ib_write_bw,4096,1,1,6,ms/MB \
	rxe,2vm/cpu_server/ib_write_bw,4096,1,1,10,ms/MB >"$T/two/raw.csv"
report "$T/two"
check_eq "4 KiB: the link's 4 KiB datagrams/s times 4 KiB" "200/0.9/0.25" \
	"$(get "$T/two" '"%g/%g/%g" % tuple(row[("2vm/ib_write_bw", 4096, 1)][k] for k in ("link_MBps", "vrdma_of_link", "rxe_of_link"))')"
check_eq "64 B WRITE: one 96 B datagram a message" 6.104 \
	"$(get "$T/two" 'row[("2vm/ib_write_bw", 64, 1)]["link_MBps"]')"
check_eq "64 B READ: round trips with 128 in flight" 1 \
	"$(get "$T/two" 'row[("2vm/ib_read_bw", 64, 1)]["link_MBps"]')"
check "rows under 80% of the ceiling are named" grep -qF \
	"80% of the link's ceiling (not: ib_write_bw 64 B, two VMs 66%, ib_read_bw 64 B, two VMs 50%)" \
	"$T/two/out"
check_eq "a two-VM row slower than rxe is named" \
	"vrdma beats rxe on every two-VM bandwidth row (not: ib_read_bw 64 B, two VMs) False" \
	"$(get "$T/two" '"%s %s" % (tgt("vrdma beats")["target"], tgt("vrdma beats")["met"])')"
check_eq "kernel CPU per MB: the server side at 0.6 of rxe misses" \
	"kernel CPU per MB <= 1/2 rxe's on every two-VM row (not: ib_write_bw 4 KiB server 0.60) False" \
	"$(get "$T/two" '"%s %s" % (tgt("kernel CPU")["target"], tgt("kernel CPU")["met"])')"
check "CPU per message: 4 ms/MB is 15.6 us a 4 KiB message" \
	grep -q '^| ib_write_bw 4 KiB, two VMs | 4.00 / 10.0 | 15.6 / 39.1 | 0.40 |' \
	"$T/two/out"

# --- the storage ULPs: one slower row fails the target, and says which
mkdir "$T/ulp"
printf '%s\n' $H \
	vrdma,ulp/srp/randread,4096,1,1,862,IOPS rxe,ulp/srp/randread,4096,1,1,1059,IOPS \
	vrdma,ulp/nvmeof/randwrite,4096,1,1,3000,IOPS \
	rxe,ulp/nvmeof/randwrite,4096,1,1,1000,IOPS \
	vrdma,ulp/iser/write,1048576,1,1,300,MB/s >"$T/ulp/raw.csv"
report "$T/ulp"
check_eq "a ULP row is labelled with its ULP and fio job" \
	"SRP: 4 KiB random reads, 16 in flight (fio, one device)" \
	"$(get "$T/ulp" 'row[("ulp/srp/randread", 4096, 1)]["label"]')"
check_eq "a ULP row has no memcpy share" None \
	"$(get "$T/ulp" 'row[("ulp/iser/write", 1048576, 1)]["vrdma_of_ceiling"]')"
check_eq "slower and unmeasured ULP rows miss the target, named" \
	"False SRP: 4 KiB random reads, 16 in flight (fio, one device), iSER: 1 MiB sequential writes, 4 in flight (fio, one device)" \
	"$(get "$T/ulp" '"%s %s" % (tgt("no storage ULP")["met"], tgt("no storage ULP")["target"].split(": ", 1)[1][:-1])')"
sed -i '/srp/d; /iser/d' "$T/ulp/raw.csv"
report "$T/ulp"
check_eq "with every ULP row ahead, the target is met" True \
	"$(get "$T/ulp" 'tgt("no storage ULP")["met"]')"
finish
