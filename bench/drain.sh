#!/usr/bin/env bash
# A deploy under load: wrk with 64 kept-alive connections against the demo,
# SIGTERM to listingproxy in the middle, and wrk's errors reported. With the
# drain (server.drain_delay longer than what is left of the wrk run, as a
# load balancer that stops routing within the drain), every request is
# answered: 0 errors. DRAIN=0s shows the behaviour without a drain: the
# listeners close at once and every kept-alive connection loses a request.
#
#   bash bench/drain.sh                  # DURATION=8s TERM_AFTER=3s DRAIN=10s CONNECTIONS=64
#   DRAIN=0s bash bench/drain.sh         # no drain, for comparison
#
# It exits 1 when wrk saw any error (socket errors or non-2xx answers) with
# a drain, so it can gate a change.
set -euo pipefail
cd "$(dirname "$0")/.."
. bench/lib.sh # bench_start, free_port, wait_port, lp_config, secs
DURATION=${DURATION:-8s}
TERM_AFTER=${TERM_AFTER:-3}
DRAIN=${DRAIN:-10s}
CONNECTIONS=${CONNECTIONS:-64}
URL_PATH=${URL_PATH:-/au/properties/1.xml}

# With a drain, the run measures a deploy only if the drain outlasts wrk:
# requests wrk sends after listingproxy has exited are errors of the
# settings, not of the drain.
if [ "$DRAIN" != 0s ] && d=$(secs "$DURATION") && t=$(secs "$TERM_AFTER") && g=$(secs "$DRAIN") && [ $((t + g)) -le "$d" ]; then
  echo "bench/drain.sh: TERM_AFTER ($TERM_AFTER) + DRAIN ($DRAIN) must outlast DURATION ($DURATION): listingproxy would exit while wrk still runs" >&2
  exit 2
fi

if ! command -v wrk >/dev/null; then
  echo "installing wrk (apt-get)"; (apt-get update -qq && apt-get install -y -qq wrk) >/dev/null
fi
BENCH_TIMEOUT=${BENCH_TIMEOUT:-600} # a watchdog against a hang
bench_start # work, pids, cleanup

go build -o "$work/listingproxy" ./cmd/listingproxy
PORT=$(free_port) ADMIN=$(free_port)
LOG_LEVEL=warn lp_config config.yaml "$work/config.yaml" "$PORT" "$ADMIN" "$work/demo.db" "s|^\(  drain_delay:\) [^ ]*|\1 $DRAIN|"
"$work/listingproxy" -config "$work/config.yaml" >"$work/lp.log" 2>&1 &
LP=$!
pids+=("$LP")
for _ in $(seq 1 200); do curl -s -o /dev/null "http://127.0.0.1:$ADMIN/healthz" && break; sleep 0.1; done
AUTH="Authorization: Basic $(printf 'harbour:harbour-demo' | base64)"
URL="http://127.0.0.1:$PORT$URL_PATH"
curl -fsS -H "$AUTH" "$URL" -o /dev/null # warm the cache

wrk -t2 -c"$CONNECTIONS" -d"$DURATION" -H "$AUTH" "$URL" >"$work/wrk.out" 2>&1 &
WRK=$!
pids+=("$WRK")
sleep "$TERM_AFTER"
kill -TERM "$LP"
term_at=$(date +%s.%N)
(while kill -0 "$LP" 2>/dev/null; do sleep 0.05; done; date +%s.%N >"$work/exit_at") &
ready=$(curl -s -o /dev/null -w '%{http_code}' "http://127.0.0.1:$ADMIN/readyz" || true)
wait "$WRK" || true
status=0
wait "$LP" || status=$?
for _ in $(seq 1 100); do [ -s "$work/exit_at" ] && break; sleep 0.05; done
exit_after=$(awk -v a="$term_at" -v b="$(cat "$work/exit_at")" 'BEGIN {printf "%.1f", b-a}')

cat "$work/wrk.out"
socket=$(awk '/Socket errors/ {gsub(",", ""); print $4+$6+$8+$10}' "$work/wrk.out")
non2xx=$(awk '/Non-2xx/ {print $NF}' "$work/wrk.out")
errors=$(( ${socket:-0} + ${non2xx:-0} ))
printf '\ndrain_delay=%s, SIGTERM after %ss of a %s wrk run (-c%s): /readyz right after SIGTERM %s; listingproxy exited %s, %ss after SIGTERM\n' \
  "$DRAIN" "$TERM_AFTER" "$DURATION" "$CONNECTIONS" "$ready" "$status" "$exit_after"
printf 'wrk errors: %d (socket errors %d, non-2xx %d)\n' "$errors" "${socket:-0}" "${non2xx:-0}"
if [ "$DRAIN" != "0s" ] && [ "$errors" -ne 0 ]; then exit 1; fi
