#!/usr/bin/env bash
# What a microsecond of handler work costs in bench/nginx.sh's lp/bare: two
# bareproxy processes on the same origin (one listingproxy on the demo),
# one plain and one spending SPIN of busy CPU time at the top of every
# request (bareproxy -spin), measured by wrk in alternate rounds. Prints
# each round's req/s and CPU µs per request (user+system from /proc) and
# the medians: spin/plain req/s, and the CPU per request each.
#
#   bash bench/bare-spin.sh                              # SPIN=1us, 10 rounds of 3s, 2KB one key, 64 connections
#   SPIN=500ns ROUNDS=8 bash bench/bare-spin.sh
#   SPIN=0 bash bench/bare-spin.sh                       # the control: two plain processes
#
# Servers pinned to CPU 0, wrk to CPU 1 (PIN=0: not pinned), as in
# bench/lp-bare.sh. On the 2026-11-28 VM 0.5 µs gave 0.962 and 1 µs 0.935
# of the plain one's hits a second, 0 gave 1.001 (bench/NOTES.md, "the
# entry and its headers in one object").
set -euo pipefail
cd "$(dirname "$0")/.."
SPIN=${SPIN:-1us}
ROUNDS=${ROUNDS:-10}
DURATION=${DURATION:-3s}
CONNS=${CONNS:-64}
BENCH_TIMEOUT=${BENCH_TIMEOUT:-900}
[[ $ROUNDS =~ ^[1-9][0-9]*$ ]] || { echo "ROUNDS must be a positive whole number, not '$ROUNDS'" >&2; exit 2; }
for t in wrk python3 curl; do command -v $t >/dev/null || { echo "needs $t" >&2; exit 2; }; done
. bench/lib.sh
bench_start
bench_pin
go build -o "$work/listingproxy" ./cmd/listingproxy
go build -o "$work/bareproxy" ./bench/cmd/bareproxy
AUTH="Authorization: Basic $(printf 'harbour:harbour-demo' | base64)"
echo '/au/properties.xml?detail=full&limit=1&offset=0&order=price' >"$work/1key"

LP=$(free_port)
lp_config config.yaml "$work/lp.yaml" "$LP" off "$work/lp.db"
"$work/listingproxy" -config "$work/lp.yaml" >"$work/lp.log" 2>&1 &
pids+=($!)
wait_port "$LP"
PORTS=() PIDS=()
for s in 0 "$SPIN"; do
  p=$(free_port)
  "${SERVER_CPU[@]}" "$work/bareproxy" -listen "127.0.0.1:$p" -origin "http://127.0.0.1:$LP" -auth "${AUTH#Authorization: }" -spin "$s" >"$work/bare$p.log" 2>&1 &
  PIDS+=($!) PORTS+=("$p"); pids+=($!)
  wait_port "$p"
  "${WRK_CPU[@]}" wrk -t1 -c"$CONNS" -d2s -H "$AUTH" -s bench/paths.lua "http://127.0.0.1:$p" -- "$work/1key" >/dev/null # fill and warm
done

cpu() { awk '{print $14 + $15}' "/proc/$1/stat"; }
HZ=$(getconf CLK_TCK)
for r in $(seq 1 "$ROUNDS"); do
  line=""
  for i in 0 1; do
    c0=$(cpu "${PIDS[i]}")
    out=$("${WRK_CPU[@]}" wrk -t1 -c"$CONNS" -d"$DURATION" -H "$AUTH" -s bench/paths.lua "http://127.0.0.1:${PORTS[i]}" -- "$work/1key" 2>&1)
    c1=$(cpu "${PIDS[i]}")
    n=$(awk '/requests in/ {print $1}' <<<"$out")
    if [ -z "$n" ] || grep -q 'Non-2xx' <<<"$out"; then echo "wrk failed or got non-2xx answers from port ${PORTS[i]}:" >&2; echo "$out" >&2; exit 1; fi
    line="$line $(awk '/Requests\/sec/ {print $2}' <<<"$out") $(awk -v a="$c0" -v b="$c1" -v n="$n" -v hz="$HZ" 'BEGIN {print (b-a)/hz*1e6/n}')"
  done
  echo "$line"
done >"$work/rounds"
python3 - "$SPIN" "$work/rounds" <<'PY'
import statistics, sys
rows = [list(map(float, l.split())) for l in open(sys.argv[2]) if l.strip()]
print("%10s %9s %10s %9s" % ("plain-req/s", "plain-µs", "spin-req/s", "spin-µs"))
for r in rows:
    print("%10.0f %9.2f %10.0f %9.2f" % tuple(r))
med = statistics.median
print("spin %s: spin/plain req/s %.3f (median of %d rounds); CPU µs per request plain %.2f, spin %.2f" %
      (sys.argv[1], med([r[2] / r[0] for r in rows]), len(rows), med([r[1] for r in rows]), med([r[3] for r in rows])))
PY
