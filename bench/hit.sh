#!/usr/bin/env bash
# Cache-hit throughput and latency of listingproxy versus a constant-body
# server writing the same bytes from memory, in the same run, with wrk on
# 127.0.0.1. Authentication is on for listingproxy (Basic, memoised); the
# access log is off (log.level: error) as it would be for a throughput run.
#
#   bash bench/hit.sh            # DURATION=3s ROUNDS=15 CONNECTIONS=32 by default (about 5 minutes)
#   PIN=0 bash bench/hit.sh      # no CPU pinning: servers and wrk share every core
#
# The baseline, bench/cmd/constserver, is a bare net/http server (one
# handler, no middleware, no timeouts). "constant" replays the exact
# response listingproxy sends for a hit (status line, the same headers,
# body; each server writes its own Date), captured with curl -D: the same
# bytes. "body-only" sends the body with Content-Type and Content-Length
# alone, for reference: the difference is the cost of the four headers
# listingproxy's caching surface adds (ETag, Cache-Status, Age, Vary).
#
# Both servers run pinned to CPU 0 and wrk to CPU 1 (when taskset exists and
# there are 2+ CPUs), so they are measured under the same conditions. Each
# round runs the three servers back to back; the ratio of a round compares
# measurements seconds apart, so slow drifts of a shared VM's speed cancel
# out, and the reported ratio is the median of the rounds' ratios
# (listingproxy / constant: target >= 0.85; listingproxy / body-only for
# reference). req/s, p50 and p99 are the medians over the rounds.
set -euo pipefail
cd "$(dirname "$0")/.."
. bench/lib.sh # bench_start, bench_pin, free_port, wait_port, lp_config
DURATION=${DURATION:-3s}
ROUNDS=${ROUNDS:-15}
CONNECTIONS=${CONNECTIONS:-32}

if ! command -v wrk >/dev/null; then
  echo "installing wrk (apt-get)"; (apt-get update -qq && apt-get install -y -qq wrk) >/dev/null
fi
bench_pin # SERVER_CPU, WRK_CPU
THREADS=2
[ ${#WRK_CPU[@]} -eq 0 ] || THREADS=1 # wrk on its own CPU
BENCH_TIMEOUT=${BENCH_TIMEOUT:-3600} # a watchdog against a hang
bench_start # work, pids, cleanup

go build -o "$work/listingproxy" ./cmd/listingproxy
go build -o "$work/constserver" ./bench/cmd/constserver

LP_PORT=$(free_port)
lp_config config.yaml "$work/config.yaml" "$LP_PORT" off "$work/demo.db"
"${SERVER_CPU[@]}" "$work/listingproxy" -config "$work/config.yaml" >"$work/lp.log" 2>&1 &
pids+=($!)
wait_port "$LP_PORT"

AUTH="Authorization: Basic $(printf 'harbour:harbour-demo' | base64)"
declare -A URLS=(
  [single-2KB]="/au/properties/1.xml"
  [list-40KB]="/au/properties.xml?detail=full&limit=22&status=current"
)
median() { sort -g | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }
run() { "${WRK_CPU[@]}" wrk -t"$THREADS" -c"$CONNECTIONS" -d"$DURATION" --latency -H "$AUTH" "$1" 2>/dev/null; }
rps() { awk '/Requests\/sec/ {print $2}' <<<"$1"; }
pct() { awk -v p="$2" '$1==p {print $2}' <<<"$1"; }
ms() { awk '{v=$1; if (v ~ /us$/) v=v/1000; else if (v ~ /ms$/) v=v+0; else if (v ~ /s$/) v=v*1000; print v}' <<<"$1"; }

printf '\n%-12s %-13s %10s %9s %9s %7s   (median of %s rounds of %s, %s connections)\n' case server req/s p50 p99 bytes "$ROUNDS" "$DURATION" "$CONNECTIONS"
for name in single-2KB list-40KB; do
  url="http://127.0.0.1:$LP_PORT${URLS[$name]}"
  curl -fsS -H "$AUTH" "$url" -o /dev/null                                  # warm the cache
  curl -fsS -H "$AUTH" -D "$work/$name.headers" "$url" -o "$work/$name.body" # a hit: keep its bytes
  grep -qi '^Cache-Status: listingproxy; hit' "$work/$name.headers" || { echo "$name: second request was not a hit"; cat "$work/$name.headers"; exit 1; }
  bytes=$(wc -c <"$work/$name.body")
  CS_PORT=$(free_port) BO_PORT=$(free_port)
  "${SERVER_CPU[@]}" "$work/constserver" -listen "127.0.0.1:$CS_PORT" -body "$work/$name.body" -headers "$work/$name.headers" &
  pids+=($!)
  "${SERVER_CPU[@]}" "$work/constserver" -listen "127.0.0.1:$BO_PORT" -body "$work/$name.body" &
  pids+=($!)
  wait_port "$CS_PORT"; wait_port "$BO_PORT"
  for s in lp cs bo; do : >"$work/$s.rps"; : >"$work/$s.p50"; : >"$work/$s.p99"; done
  : >"$work/ratio.cs"; : >"$work/ratio.bo"
  for _ in $(seq 1 "$ROUNDS"); do
    for s in lp:$url cs:http://127.0.0.1:$CS_PORT/ bo:http://127.0.0.1:$BO_PORT/; do
      f=${s%%:*}; out=$(run "${s#*:}")
      rps "$out" >>"$work/$f.rps"; ms "$(pct "$out" 50%)" >>"$work/$f.p50"; ms "$(pct "$out" 99%)" >>"$work/$f.p99"
    done
    paste "$work/lp.rps" "$work/cs.rps" | tail -1 | awk '{print $1/$2}' >>"$work/ratio.cs"
    paste "$work/lp.rps" "$work/bo.rps" | tail -1 | awk '{print $1/$2}' >>"$work/ratio.bo"
  done
  for s in lp:listingproxy cs:constant bo:body-only; do
    f=${s%%:*}
    printf '%-12s %-13s %10.0f %7.2fms %7.2fms %7s\n' "$name" "${s#*:}" "$(median <"$work/$f.rps")" "$(median <"$work/$f.p50")" "$(median <"$work/$f.p99")" "$bytes"
  done
  printf '%-12s ratio listingproxy/constant = %.2f   (listingproxy/body-only = %.2f; rounds: %s)\n' "$name" \
    "$(median <"$work/ratio.cs")" "$(median <"$work/ratio.bo")" "$(sort -g "$work/ratio.cs" | awk '{printf "%s%.2f", (NR>1 ? " " : ""), $1}')"
done
