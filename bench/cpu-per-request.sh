#!/usr/bin/env bash
# Server CPU time (user + system) per cache-hit request, listingproxy versus
# the constant server replaying the same response bytes (see bench/hit.sh),
# read from /proc/PID/stat around fixed wrk runs.
# It says how much work each server does per request; on a shared VM it is
# as noisy as throughput (the host's speed itself varies), so compare the
# two servers within a round.
#
#   bash bench/cpu-per-request.sh        # ROUNDS=3 alternating 4s runs
set -euo pipefail
cd "$(dirname "$0")/.."
. bench/lib.sh # bench_start, free_port, wait_port, lp_config
ROUNDS=${ROUNDS:-3}
command -v wrk >/dev/null || { (apt-get update -qq && apt-get install -y -qq wrk) >/dev/null; }
PIN=(); WPIN=()
if command -v taskset >/dev/null && [ "$(nproc)" -ge 2 ]; then PIN=(taskset -c 0); WPIN=(taskset -c 1); fi
BENCH_TIMEOUT=${BENCH_TIMEOUT:-1200} # a watchdog against a hang
bench_start # work, pids, cleanup
go build -o "$work/listingproxy" ./cmd/listingproxy
go build -o "$work/constserver" ./bench/cmd/constserver
LP=$(free_port); CS=$(free_port)
lp_config config.yaml "$work/config.yaml" "$LP" off "$work/demo.db"
"${PIN[@]}" "$work/listingproxy" -config "$work/config.yaml" >/dev/null 2>&1 & pids+=($!); LPID=$!
wait_port "$LP"
AUTH="Authorization: Basic $(printf 'harbour:harbour-demo' | base64)"
URL="http://127.0.0.1:$LP/au/properties/1.xml"
curl -fsS -H "$AUTH" "$URL" -o /dev/null                          # warm
curl -fsS -H "$AUTH" -D "$work/headers" "$URL" -o "$work/body"    # a hit's exact bytes
"${PIN[@]}" "$work/constserver" -listen "127.0.0.1:$CS" -body "$work/body" -headers "$work/headers" & pids+=($!); CPID=$!
wait_port "$CS"
per_request() { # pid url
  local t0 t1 n
  t0=$(awk '{print $14+$15}' "/proc/$1/stat")
  n=$("${WPIN[@]}" wrk -t1 -c32 -d4s -H "$AUTH" "$2" | awk '/requests in/ {print $1}')
  t1=$(awk '{print $14+$15}' "/proc/$1/stat")
  awk -v a="$t0" -v b="$t1" -v n="$n" -v hz="$(getconf CLK_TCK)" 'BEGIN {printf "%.1f µs/request (%d requests)\n", (b-a)/hz*1e6/n, n}'
}
for _ in $(seq 1 "$ROUNDS"); do
  printf 'listingproxy  %s\n' "$(per_request "$LPID" "$URL")"
  printf 'constant      %s\n' "$(per_request "$CPID" "http://127.0.0.1:$CS/")"
done
