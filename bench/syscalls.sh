#!/usr/bin/env bash
# Deterministic evidence for listingproxy's hits, usable on a shared machine
# (docs/performance.md): system calls per hit (strace -c -f) by body and encoding, and
# garbage collections per 1,000 hits (GODEBUG=gctrace=1) at 64 and 256
# connections. Counts, not timings: they do not move with the machine's load.
#
#   bash bench/syscalls.sh                      # DURATION=5s of wrk per case
#
# listingproxy runs on the demo (SQLite) as in bench/nginx.sh (cache large,
# entries fresh for the run, errors-only log). Each case warms its URL, then
# sends hits with wrk for DURATION and divides the counts by the requests wrk
# completed. strace slows the server down a lot; only its counts are used.
set -euo pipefail
cd "$(dirname "$0")/.."
DURATION=${DURATION:-5s}

need() { command -v "$1" >/dev/null || { echo "installing $2 (apt-get)"; (apt-get update -qq && apt-get install -y -qq "$2") >/dev/null; }; }
need wrk wrk
need strace strace
need python3 python3

. bench/lib.sh
BENCH_TIMEOUT=${BENCH_TIMEOUT:-600}
bench_start

go build -o "$work/listingproxy" ./cmd/listingproxy
sed -e 's|^\(  max_bytes:\).*|\1 512MiB|' -e 's|^\(  ttl:\).*|\1 2h|' -e "s|file:listingproxy-demo.db|file:$work/demo.db|" \
    -e 's|^\(  level:\).*|\1 error|' config.yaml >"$work/config.yaml"

# start: listingproxy with GODEBUG=gctrace=1 (its stderr is the GC log).
start() {
  LP=$(free_port)
  GODEBUG=gctrace=1 "$work/listingproxy" -config "$work/config.yaml" -listen "127.0.0.1:$LP" -admin-listen off >"$work/lp.out" 2>"$work/lp.err" &
  LP_PID=$!; pids+=("$LP_PID")
  for _ in $(seq 1 300); do curl -s -o /dev/null "http://127.0.0.1:$LP/" && return; sleep 0.1; done
  echo "listingproxy never answered; its log:"; tail -20 "$work/lp.err"; exit 1
}
stop() { kill "$LP_PID"; wait "$LP_PID" 2>/dev/null || true; }

AUTH="Authorization: Basic $(printf 'harbour:harbour-demo' | base64)"
# hits URL CONNS ENC: sends hits for DURATION, prints the requests done.
hits() {
  local hdr=(-H "$AUTH"); [ "$3" = gzip ] && hdr+=(-H "Accept-Encoding: gzip")
  curl -s -o /dev/null -H "$AUTH" "http://127.0.0.1:$LP$1" || { echo "listingproxy did not answer; its log:" >&2; grep -v '^gc ' "$work/lp.err" | tail -20 >&2; exit 1; }
  local out
  out=$(wrk -t1 -c"$2" -d"$DURATION" "${hdr[@]}" "http://127.0.0.1:$LP$1" 2>&1) || { echo "wrk failed: $out" >&2; exit 1; }
  awk '/requests in/ {print $1}' <<<"$out"
}

LIST45='/au/properties.xml?detail=full&limit=22&order=price'
SINGLE2='/au/properties.xml?detail=full&limit=1&order=price'

start
printf '%-22s %8s %8s %8s %8s %8s   (per hit; strace -c -f over %s of wrk, 64 connections)\n' case write writev sendfile read epoll "$DURATION"
for c in "2KB identity:$SINGLE2:identity" "45KB identity:$LIST45:identity" "45KB gzip:$LIST45:gzip"; do
  IFS=: read -r name url enc <<<"$c"
  curl -s -o /dev/null -H "$AUTH" "http://127.0.0.1:$LP$url"
  strace -c -f -q -o "$work/strace.txt" -p "$LP_PID" & st=$!
  sleep 1   # strace attaches to every thread
  n=$(hits "$url" 64 "$enc")
  kill -INT "$st"; wait "$st" 2>/dev/null || true
  awk -v n="$n" -v name="$name" '
    $NF ~ /^(write|writev|sendfile|read|epoll_pwait|epoll_wait)$/ {c[$NF] += ($4 ~ /^[0-9]+$/ ? $4 : $5)}
    END {printf "%-22s %8.3f %8.3f %8.3f %8.3f %8.3f\n", name, c["write"]/n, c["writev"]/n, c["sendfile"]/n, c["read"]/n, (c["epoll_pwait"]+c["epoll_wait"])/n}' "$work/strace.txt"
done

printf '\n%-22s %10s %12s   (GODEBUG=gctrace=1, %s of wrk)\n' case gcs "gcs/1000 hits" "$DURATION"
for conns in 64 256; do
  for c in "2KB identity:$SINGLE2:identity" "45KB identity:$LIST45:identity"; do
    IFS=: read -r name url enc <<<"$c"
    hits "$url" "$conns" "$enc" >/dev/null   # warm connections' pools
    before=$(grep -c '^gc ' "$work/lp.err" || true)
    n=$(hits "$url" "$conns" "$enc")
    after=$(grep -c '^gc ' "$work/lp.err" || true)
    awk -v n="$n" -v g=$((after - before)) -v name="$name c$conns" 'BEGIN {printf "%-22s %10d %12.3f\n", name, g, g*1000/n}'
  done
done
stop
