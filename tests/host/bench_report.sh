#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only
#
# scripts/bench_report.py on a small synthetic raw directory, no VM: the median, minimum and
# maximum over the boots, the ratio of medians, "within noise" exactly when the two ranges
# overlap, a point without a number (a failed run, a boot that never ran, perftest's 0.00
# MB/sec) shown as failed, a point the device lacks as n/a, the fraction of memcpy, the ratios
# boot by boot, ratios to another reference than C, the plot, and scripts/bench.sh's boot order.
set -u
here=$(cd "$(dirname "$0")" && pwd)
. "$here/../lib/ktap.sh"
report=$here/../../scripts/bench_report.py
# Debian's python has Debian's matplotlib, which scripts/setup.sh installs.
python=/usr/bin/python3
[ -x "$python" ] || python=python3
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
raw=$tmp/raw

# bw_out SIZE BW MSGRATE: a client's output of a perftest bandwidth program.
bw_out() {
	cat <<EOF
---------------------------------------------------------------------------------------
 #bytes     #iterations    BW peak[MB/sec]    BW average[MB/sec]   MsgRate[Mpps]
 $1      2000             0.00               $2		   $3
---------------------------------------------------------------------------------------
EOF
}

# lat_out TYPICAL AVG P99 P999: a client's output of a perftest latency program.
lat_out() {
	cat <<EOF
---------------------------------------------------------------------------------------
 #bytes #iterations    t_min[usec]    t_max[usec]  t_typical[usec]    t_avg[usec]    t_stdev[usec]   99% percentile[usec]   99.9% percentile[usec] 
 8       10000          3.10           80.00        $1     	$2        	1.00   		$3    		$4   
---------------------------------------------------------------------------------------
EOF
}

# point PROVIDER ROUND NAME STATUS [CLIENT_OUTPUT [SERVER_OUTPUT]]: one point of one boot.
point() {
	local d=$raw/$1/$2
	mkdir -p "$d"
	echo "$3 $4" >>"$d/status"
	echo "ib_x -d DEV" >"$d/$3.cmd"
	[ $# -lt 5 ] || printf '%s\n' "$5" >"$d/$3.client"
	[ $# -lt 6 ] || printf '%s\n' "$6" >"$d/$3.server"
}

# memcpy PROVIDER ROUND: the guest's memcpy bandwidth in that boot: 1000 MB/s at 1 MiB.
memcpy() { printf 'memcpy 4096 4000.00\nmemcpy 1048576 1000.00\n' >"$raw/$1/$2/memcpy.txt"; }

for r in 1 2 3; do
	rs=$((90 + 10 * r)) c=$((190 + 10 * r))
	point rs $r write_bw_64k ok "$(bw_out 65536 "$rs.00" 0.01)"
	point c $r write_bw_64k ok "$(bw_out 65536 "$c.00" 0.01)"
	point rs $r send_bw_64k ok "$(bw_out 65536 "$((rs + 95)).00" 0.01)"
	point c $r send_bw_64k ok "$(bw_out 65536 "$c.00" 0.01)"
	# In round 3 the sender of rs's send_bw_64 prints 0.00; its receiver has the number.
	if [ $r = 3 ]; then
		point rs $r send_bw_64 ok "$(bw_out 64 0.00 0.000)" "$(bw_out 64 9.00 0.14)"
	else
		point rs $r send_bw_64 ok "$(bw_out 64 8.00 0.12)" "$(bw_out 64 7.00 0.11)"
	fi
	point rs $r write_bw_64 ok "$(bw_out 64 10.00 0.16)"
	point c $r write_bw_64 ok "$(bw_out 64 12.00 0.20)"
	if [ $r = 2 ]; then
		point rs $r write_bw_4k "failed(server=0,client=124)"
	else
		point rs $r write_bw_4k ok "$(bw_out 4096 300.00 0.07)"
	fi
	point c $r write_bw_4k ok "$(bw_out 4096 400.00 0.10)"
	point rs $r read_bw_1m ok "$(bw_out 1048576 500.00 0.0005)"
	point c $r read_bw_1m ok "$(bw_out 1048576 800.00 0.0008)"
	point rs $r atomic_bw "failed(server=1,client=1)"
	point c $r atomic_bw ok "$(bw_out 8 1.00 0.13)"
	point rs $r send_lat_8 ok "$(lat_out 5.0$r 6.00 9.00 40.00)"
	point c $r send_lat_8 ok "$(lat_out 4.00 5.00 8.00 30.00)"
	memcpy rs $r
	memcpy c $r
done
# rxe: perftest's 0.00 MB/sec in a run that exited 0; a second boot that never ran a point.
point rxe 1 write_bw_64k ok "$(bw_out 65536 60.00 0.001)"
point rxe 1 send_bw_64k ok "$(bw_out 65536 0.00 0.000)"
mkdir -p "$raw/rxe/2"
# siw: a point the device does not support.
point siw 1 write_bw_64k ok "$(bw_out 65536 500.00 0.008)"
point siw 1 atomic_bw "unsupported(no atomics)"
# siw: perftest's clock calibration failed (its stderr is in the client's output).
point siw 1 send_bw_64k ok "Correlation coefficient r^2: 0.41 < 0.9
$(bw_out 65536 0.00 0.000)"
# As scripts/bench.sh orders them: the first of a round changing from round to round.
printf 'rs 1\nc 1\nc 2\nrs 2\nrs 3\nc 3\nrxe 1\nrxe 2\nsiw 1\n' >"$raw/order"

"$python" "$report" --png "$tmp/ratios.png" "$raw" rs c rxe siw >"$tmp/out" 2>"$tmp/err"
rc=$?

# row NAME METRIC: the table's cells of that row, one per line: rs, c, rxe, siw, rs / C,
# rxe / C, siw / C.
row() {
	grep -F "| $1 | $2 |" "$tmp/out" | head -1 | awk -F' \\| ' '{ for (i = 3; i <= NF; i++) print $i }' |
		sed 's/ |$//'
}
# cell NAME METRIC N: the Nth cell of that row.
cell() { row "$1" "$2" | sed -n "$3p"; }
# is ACTUAL EXPECTED: a check that says what it found when it fails.
is() { [ "$1" = "$2" ] || { echo "got '$1', expected '$2'"; return 1; }; }

BW='BW average [MB/s]'
ktap_header
ktap_plan 23
ktap_check "the report runs" is "$rc" 0
ktap_check "median and min-max over the boots" is "$(cell write_bw_64k "$BW" 1)" "110 (100-120)"
ktap_check "a single boot shows its value alone" is "$(cell write_bw_64k "$BW" 4)" "500"
ktap_check "the ratio of medians" is "$(cell write_bw_64k "$BW" 5)" "0.52"
ktap_check "overlapping ranges are within noise" \
	is "$(cell send_bw_64k "$BW" 5)" "0.98 (within noise)"
ktap_check "a point that failed in every boot says failed" \
	is "$(cell atomic_bw "$BW" 1)" "failed (3 of 3)"
ktap_check "a failed point has no ratio" is "$(cell atomic_bw "$BW" 5)" "-"
ktap_check "a point that failed in one boot counts it" \
	is "$(cell write_bw_4k "$BW" 1)" "300 (300-300), 1 of 3 failed"
ktap_check "0.00 MB/sec is failed, not a number" is "$(cell send_bw_64k "$BW" 3)" "failed (2 of 2)"
ktap_check "a boot that ran nothing counts as failed" \
	is "$(cell write_bw_64k "$BW" 3)" "60.0, 1 of 2 failed"
ktap_check "an unsupported point is n/a" is "$(cell atomic_bw "$BW" 4)" "n/a"
ktap_check "bandwidth as a fraction of memcpy at its size" \
	is "$(cell read_bw_1m "BW / memcpy" 1)" "0.500 (0.500-0.500)"
ktap_check "message rate for the 64 B rows only" \
	bash -c "grep -qF '| write_bw_64 | MsgRate [Mpps] | 0.160 (0.160-0.160) |' '$tmp/out' &&
		! grep -qF '| write_bw_64k | MsgRate' '$tmp/out'"
ktap_check "a sender's 0.00 MB/sec is replaced by its receiver's number, and said so" \
	bash -c "grep -qF '| send_bw_64 | $BW | 8.00 (8.00-9.00) |' '$tmp/out' &&
		grep -q '^The sender printed 0.00 MB/sec.*: rs/3 send_bw_64$' '$tmp/out'"
ktap_check "latency: typical, average, 99% and 99.9%" \
	is "$(cell send_lat_8 '99.9% [usec]' 1)|$(cell send_lat_8 't_typical [usec]' 1)" \
	"40.0 (40.0-40.0)|5.02 (5.01-5.03)"
ktap_check "the failures are listed, the unsupported point is not among them" \
	bash -c "grep -q '^Failed: .*rxe/2: the boot ran no point' '$tmp/out' &&
		grep -q '^Failed: .*rxe/1 send_bw_64k: no number in the output' '$tmp/out' &&
		! grep -q '^Failed: .*siw/1 atomic_bw' '$tmp/out'"
ktap_check "a failed clock calibration is named as the cause" \
	grep -q "^Failed: .*siw/1 send_bw_64k: no number: perftest's clock calibration failed" \
	"$tmp/out"
ktap_check "boot by boot: the median of the rounds' ratios, and in how many the faster" \
	grep -qF "| write_bw_64k | $BW | 0.52 (0.50-0.55) | 0 of 3 |" "$tmp/out"
ktap_check "boot by boot: a failed round left out, lower latency faster, single boots not paired" \
	bash -c "grep -qF '| write_bw_4k | $BW | 0.75 (0.75-0.75) | 0 of 2 |' '$tmp/out' &&
		grep -qF '| send_lat_8 | t_avg [usec] | 1.20 (1.20-1.20) | 0 of 3 |' '$tmp/out' &&
		grep -qF '| rdmavt-rs / C, paired | rdmavt-rs the faster |' '$tmp/out' &&
		! grep -qF 'rxe / C, paired' '$tmp/out'"
# A reference provider with as many boots as C, all run after the rdmavts (BENCH_REF_ROUNDS=3):
# it did not alternate with C, so it is not paired.
cp -r "$raw" "$tmp/raw3"
for r in 1 2 3; do
	mkdir -p "$tmp/raw3/rxe/$r"
	echo "write_bw_64k ok" >"$tmp/raw3/rxe/$r/status"
	bw_out 65536 60.00 0.001 >"$tmp/raw3/rxe/$r/write_bw_64k.client"
done
printf 'rs 1\nc 1\nc 2\nrs 2\nrs 3\nc 3\nrxe 1\nrxe 2\nrxe 3\n' >"$tmp/raw3/order"
"$python" "$report" "$tmp/raw3" rs c rxe >"$tmp/out3" 2>>"$tmp/err"
ktap_check "boot by boot: only the providers that alternate with the reference" bash -c \
	"grep -qF '| rdmavt-rs / C, paired | rdmavt-rs the faster |' '$tmp/out3' &&
		! grep -qF 'rxe / C, paired' '$tmp/out3'"
# Another reference (BENCH_REFERENCE: rs-notrace, to measure rdmavt-rs against itself).
"$python" "$report" --reference rs "$raw" rs c >"$tmp/out-ref" 2>>"$tmp/err"
ktap_check "--reference: the ratios are to that provider" bash -c \
	"grep -qF '| C rdmavt / rdmavt-rs |' '$tmp/out-ref' &&
		grep -qF '| write_bw_64k | $BW | 110 (100-120) | 210 (200-220) | 1.91 |' '$tmp/out-ref'"
if "$python" -c 'import matplotlib' 2>/dev/null; then
	ktap_check "the plot is a PNG" "$python" -c \
		'import sys; sys.exit(open(sys.argv[1], "rb").read(8) != b"\x89PNG\r\n\x1a\n")' \
		"$tmp/ratios.png"
else
	ktap_skip "the plot is a PNG" "no matplotlib (scripts/setup.sh installs python3-matplotlib)"
fi
# scripts/bench.sh's boot order: the rdmavts in the order given in odd rounds, reversed in even.
order_fn=$(sed -n '/^round_order() {/,/^}/p' "$here/../../scripts/bench.sh")
ktap_check "the boot order: the first of a round changes from round to round" bash -c \
	"$order_fn"'
	[ "$(round_order 1 rs c)" = "rs c" ] && [ "$(round_order 2 rs c | xargs)" = "c rs" ] &&
		[ "$(round_order 4 rs rs-notrace c | xargs)" = "c rs-notrace rs" ]'
[ "$KTAP_FAIL" = 0 ] || { ktap_msg "report:"; sed 's/^/# /' "$tmp/out" "$tmp/err"; }
ktap_finish
