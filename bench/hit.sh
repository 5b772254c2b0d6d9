#!/usr/bin/env bash
# Cache-hit throughput and latency of listingproxy versus a constant-body
# server writing the same bytes from memory, in the same run, with wrk on
# 127.0.0.1. Authentication is on for listingproxy (Basic, memoised).
#
#   bash bench/hit.sh            # DURATION=10s CONNECTIONS=32 THREADS=2 by default
#
# Prints requests/s, p50 and p99 for each server and URL, and the ratio
# listingproxy / constant (target: >= 0.85).
set -euo pipefail
cd "$(dirname "$0")/.."
DURATION=${DURATION:-10s}
CONNECTIONS=${CONNECTIONS:-32}
THREADS=${THREADS:-2}

if ! command -v wrk >/dev/null; then
  echo "installing wrk (apt-get)"; (apt-get update -qq && apt-get install -y -qq wrk) >/dev/null
fi
work=$(mktemp -d)
pids=()
cleanup() { for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done; wait 2>/dev/null || true; rm -rf "$work"; }
trap cleanup EXIT

go build -o "$work/listingproxy" ./cmd/listingproxy
go build -o "$work/constserver" ./bench/cmd/constserver

free_port() { python3 -c 'import socket;s=socket.socket();s.bind(("127.0.0.1",0));print(s.getsockname()[1])'; }
LP_PORT=$(free_port)
sed -e "s|listen: \":8080\"|listen: \"127.0.0.1:$LP_PORT\"|" \
    -e "s|admin_listen: \"127.0.0.1:9090\"|admin_listen: \"off\"|" \
    -e "s|file:listingproxy-demo.db|file:$work/demo.db|" \
    -e "s|level: info|level: error|" config.yaml > "$work/config.yaml"
"$work/listingproxy" -config "$work/config.yaml" >"$work/lp.log" 2>&1 &
pids+=($!)
for _ in $(seq 1 100); do
  if curl -s -o /dev/null "http://127.0.0.1:$LP_PORT/"; then break; fi
  sleep 0.1
done

AUTH="Authorization: Basic $(printf 'harbour:harbour-demo' | base64)"
declare -A URLS=(
  [single-2KB]="/au/properties/1.xml"
  [list-40KB]="/au/properties.xml?detail=full&limit=22&status=current"
)
printf '\n%-12s %-14s %12s %10s %10s %8s\n' case server req/s p50 p99 bytes
for name in single-2KB list-40KB; do
  url="http://127.0.0.1:$LP_PORT${URLS[$name]}"
  curl -fsS -H "$AUTH" "$url" -o "$work/$name.body"   # warm the cache, keep the bytes
  bytes=$(wc -c <"$work/$name.body")
  CS_PORT=$(free_port)
  "$work/constserver" -listen "127.0.0.1:$CS_PORT" -body "$work/$name.body" &
  pids+=($!)
  sleep 0.3
  run() { wrk -t"$THREADS" -c"$CONNECTIONS" -d"$DURATION" --latency -H "$AUTH" "$1" 2>/dev/null; }
  lp=$(run "$url"); cs=$(run "http://127.0.0.1:$CS_PORT/")
  rps() { awk '/Requests\/sec/ {print $2}' <<<"$1"; }
  pct() { awk -v p="$2" '$1==p {print $2}' <<<"$1"; }
  printf '%-12s %-14s %12s %10s %10s %8s\n' "$name" listingproxy "$(rps "$lp")" "$(pct "$lp" 50%)" "$(pct "$lp" 99%)" "$bytes"
  printf '%-12s %-14s %12s %10s %10s %8s\n' "$name" constant "$(rps "$cs")" "$(pct "$cs" 50%)" "$(pct "$cs" 99%)" "$bytes"
  awk -v a="$(rps "$lp")" -v b="$(rps "$cs")" -v n="$name" 'BEGIN {printf "%-12s ratio listingproxy/constant = %.2f\n", n, a/b}'
done
