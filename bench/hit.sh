#!/usr/bin/env bash
# Cache-hit throughput and latency of listingproxy versus a constant-body
# server writing the same bytes from memory, in the same run, with wrk on
# 127.0.0.1. Authentication is on for listingproxy (Basic, memoised); the
# access log is off (log.level: error) as it would be for a throughput run.
#
#   bash bench/hit.sh            # DURATION=5s ROUNDS=3 CONNECTIONS=32 by default
#   PIN=0 bash bench/hit.sh      # no CPU pinning: servers and wrk share every core
#
# Both servers run pinned to CPU 0 and wrk to CPU 1 (when taskset exists and
# there are 2+ CPUs), so the two are measured under the same conditions; the
# rounds alternate listingproxy and the constant server and the median of
# each is reported, with the ratio listingproxy / constant (target >= 0.85).
set -euo pipefail
cd "$(dirname "$0")/.."
DURATION=${DURATION:-5s}
ROUNDS=${ROUNDS:-3}
CONNECTIONS=${CONNECTIONS:-32}

if ! command -v wrk >/dev/null; then
  echo "installing wrk (apt-get)"; (apt-get update -qq && apt-get install -y -qq wrk) >/dev/null
fi
SERVER_CPU=() WRK_CPU=() THREADS=2
if [ "${PIN:-1}" = 1 ] && command -v taskset >/dev/null && [ "$(nproc)" -ge 2 ]; then
  SERVER_CPU=(taskset -c 0) WRK_CPU=(taskset -c 1) THREADS=1
fi
work=$(mktemp -d)
pids=()
cleanup() { for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done; wait 2>/dev/null || true; rm -rf "$work"; }
trap cleanup EXIT

go build -o "$work/listingproxy" ./cmd/listingproxy
go build -o "$work/constserver" ./bench/cmd/constserver

free_port() { python3 -c 'import socket;s=socket.socket();s.bind(("127.0.0.1",0));print(s.getsockname()[1])'; }
wait_port() { for _ in $(seq 1 100); do if curl -s -o /dev/null "http://127.0.0.1:$1/"; then return; fi; sleep 0.1; done; echo "port $1 never answered"; exit 1; }
LP_PORT=$(free_port)
sed -e "s|listen: \":8080\"|listen: \"127.0.0.1:$LP_PORT\"|" \
    -e "s|admin_listen: \"127.0.0.1:9090\"|admin_listen: \"off\"|" \
    -e "s|file:listingproxy-demo.db|file:$work/demo.db|" \
    -e "s|level: info|level: error|" config.yaml > "$work/config.yaml"
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

printf '\n%-12s %-13s %10s %9s %9s %7s   (median of %s rounds of %s, %s connections)\n' case server req/s p50 p99 bytes "$ROUNDS" "$DURATION" "$CONNECTIONS"
for name in single-2KB list-40KB; do
  url="http://127.0.0.1:$LP_PORT${URLS[$name]}"
  curl -fsS -H "$AUTH" "$url" -o "$work/$name.body"   # warm the cache, keep the bytes
  bytes=$(wc -c <"$work/$name.body")
  CS_PORT=$(free_port)
  "${SERVER_CPU[@]}" "$work/constserver" -listen "127.0.0.1:$CS_PORT" -body "$work/$name.body" &
  pids+=($!)
  wait_port "$CS_PORT"
  : >"$work/lp.rps"; : >"$work/cs.rps"
  for _ in $(seq 1 "$ROUNDS"); do
    lp=$(run "$url"); rps "$lp" >>"$work/lp.rps"; echo "$lp" >"$work/lp.last"
    cs=$(run "http://127.0.0.1:$CS_PORT/"); rps "$cs" >>"$work/cs.rps"; echo "$cs" >"$work/cs.last"
  done
  lpm=$(median <"$work/lp.rps"); csm=$(median <"$work/cs.rps")
  printf '%-12s %-13s %10s %9s %9s %7s\n' "$name" listingproxy "$lpm" "$(pct "$(cat "$work/lp.last")" 50%)" "$(pct "$(cat "$work/lp.last")" 99%)" "$bytes"
  printf '%-12s %-13s %10s %9s %9s %7s\n' "$name" constant "$csm" "$(pct "$(cat "$work/cs.last")" 50%)" "$(pct "$(cat "$work/cs.last")" 99%)" "$bytes"
  awk -v a="$lpm" -v b="$csm" -v n="$name" 'BEGIN {printf "%-12s ratio listingproxy/constant = %.2f\n", n, a/b}'
done
