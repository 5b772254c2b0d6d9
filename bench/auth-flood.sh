#!/usr/bin/env bash
# Legitimate, already-authenticated load next to a flood of wrong passwords,
# in one run: the ratio of legitimate throughput with the flood to without
# it (target >= 0.7) and the legitimate p99 under the flood (target <= 10 ms).
#
#   bash bench/auth-flood.sh     # DURATION=5s ROUNDS=5 FLOOD_CONNECTIONS=32 LEGIT_CONNECTIONS=16
#
# listingproxy runs the SQLite demo (cache on, access log off) and trusts
# 127.0.0.1 as a proxy, so the flood can pose as many clients. The legit
# load is wrk on one cached URL with harbour's verified credentials. The
# flood (bench/cmd/authflood) sends a new wrong password with each request,
# on FLOOD_CONNECTIONS connections, in two shapes:
#   one-address     every request from 127.0.0.1 as user harbour: the
#                   per-address and per-username buckets throttle it (429)
#   many-addresses  a new X-Forwarded-For address and a new username with
#                   each request: no bucket holds it back, only the bcrypt
#                   pool and its queue do (429 pool_full)
# Each round measures, for each shape, the legit load alone and then with
# the flood running, seconds apart, so a shared machine's drifts cancel out
# in the round's ratio; the reported ratio and p99 are medians over rounds.
set -euo pipefail
cd "$(dirname "$0")/.."
. bench/lib.sh # bench_start, free_port, wait_port, lp_config
DURATION=${DURATION:-5s}
ROUNDS=${ROUNDS:-5}
FLOOD_CONNECTIONS=${FLOOD_CONNECTIONS:-32}
LEGIT_CONNECTIONS=${LEGIT_CONNECTIONS:-16}
SHAPES=${SHAPES:-"one-address many-addresses"}

if ! command -v wrk >/dev/null; then
  echo "installing wrk (apt-get)"; (apt-get update -qq && apt-get install -y -qq wrk) >/dev/null
fi
BENCH_TIMEOUT=${BENCH_TIMEOUT:-1800} # a watchdog against a hang
bench_start # work, pids, cleanup

go build -o "$work/listingproxy" ./cmd/listingproxy
go build -o "$work/authflood" ./bench/cmd/authflood

PORT=$(free_port)
lp_config config.yaml "$work/config.yaml" "$PORT" off "$work/demo.db" 's|^server:|server:\n  trusted_proxies: [127.0.0.1]|'
"$work/listingproxy" -config "$work/config.yaml" >"$work/lp.log" 2>&1 &
pids+=($!)
wait_port "$PORT"

URL="http://127.0.0.1:$PORT/au/properties.xml?limit=10&status=current"
AUTH="Authorization: Basic $(printf 'harbour:harbour-demo' | base64)"
curl -fsS -H "$AUTH" "$URL" -o /dev/null # verify harbour's header and warm the cache
curl -fsS -H "$AUTH" -D - "$URL" -o /dev/null | grep -qi '^Cache-Status: listingproxy; hit' || { echo "second request was not a hit"; exit 1; }

median() { sort -g | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }
legit() { wrk -t1 -c"$LEGIT_CONNECTIONS" -d"$DURATION" --latency -H "$AUTH" "$URL" 2>/dev/null; }
rps() { awk '/Requests\/sec/ {print $2}' <<<"$1"; }
p99() { awk '$1=="99%" {v=$2; if (v ~ /us$/) v=v/1000; else if (v ~ /ms$/) v=v+0; else if (v ~ /s$/) v=v*1000; print v}' <<<"$1"; }
non2xx() { awk '/Non-2xx/ {print $NF}' <<<"$1"; }

secs=${DURATION%s}
for shape in $SHAPES; do : >"$work/$shape.ratio"; : >"$work/$shape.p99"; : >"$work/$shape.alone"; : >"$work/$shape.flooded"; : >"$work/$shape.p99alone"; done
for round in $(seq 1 "$ROUNDS"); do
  for shape in $SHAPES; do
    flags=()
    [ "$shape" = many-addresses ] && flags=(-random-users -random-xff)
    alone=$(legit)
    "$work/authflood" -url "$URL" -c "$FLOOD_CONNECTIONS" -d "$((secs + 1))s" "${flags[@]}" >"$work/flood.out" &
    fpid=$!
    sleep 0.5 # let the flood reach its pace
    flooded=$(legit)
    wait "$fpid"
    [ -n "$(non2xx "$alone$flooded")" ] && { echo "legit load got non-2xx answers:"; echo "$alone$flooded"; exit 1; }
    rps "$alone" >>"$work/$shape.alone"; rps "$flooded" >>"$work/$shape.flooded"
    p99 "$alone" >>"$work/$shape.p99alone"; p99 "$flooded" >>"$work/$shape.p99"
    awk -v a="$(rps "$alone")" -v f="$(rps "$flooded")" 'BEGIN {print f/a}' >>"$work/$shape.ratio"
    printf 'round %d %-15s legit alone %8.0f req/s p99 %6.2fms | flooded %8.0f req/s p99 %6.2fms | flood %s\n' "$round" "$shape" \
      "$(rps "$alone")" "$(p99 "$alone")" "$(rps "$flooded")" "$(p99 "$flooded")" "$(cat "$work/flood.out")"
  done
done
printf '\n%-15s %12s %12s %10s %12s %12s   (median of %s rounds of %s; legit %s connections, flood %s)\n' shape alone-req/s flooded-req/s ratio p99-alone p99-flooded "$ROUNDS" "$DURATION" "$LEGIT_CONNECTIONS" "$FLOOD_CONNECTIONS"
for shape in $SHAPES; do
  printf '%-15s %12.0f %12.0f %10.2f %10.2fms %10.2fms   ratios: %s\n' "$shape" "$(median <"$work/$shape.alone")" "$(median <"$work/$shape.flooded")" \
    "$(median <"$work/$shape.ratio")" "$(median <"$work/$shape.p99alone")" "$(median <"$work/$shape.p99")" \
    "$(sort -g "$work/$shape.ratio" | awk '{printf "%s%.2f", (NR>1 ? " " : ""), $1}')"
done
