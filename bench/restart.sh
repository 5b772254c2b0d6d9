#!/usr/bin/env bash
# A PostgreSQL restart under load, with notify: true: listingproxy on the
# PostgreSQL demo through bench/cmd/tcpproxy, which stands in for the
# database server's restart (stopped: every connection dropped, new ones
# refused; then started again), since the server is shared. bench/cmd/warmload
# requests warm keys (and, one request in COLD, a cold key that needs the
# database, so the breaker opens while it is down) and reports, per second
# and in total, how many warm answers were a 200 with their body. Target:
# 100%.
#
#   bash bench/restart.sh      # DURATION=20s DOWN_AT=4 DOWN_FOR=5 CONCURRENCY=16 COLD=50
#   PG=postgres://postgres@127.0.0.1:5432 bash bench/restart.sh   # the server (a database is created and dropped)
#
# It exits 1 when any warm answer was wrong.
set -euo pipefail
cd "$(dirname "$0")/.."
. bench/lib.sh # free_port, wait_port, lp_config
PG=${PG:-postgres://postgres@127.0.0.1:5432}
DURATION=${DURATION:-20s}
DOWN_AT=${DOWN_AT:-4}
DOWN_FOR=${DOWN_FOR:-5}
CONCURRENCY=${CONCURRENCY:-16}
COLD=${COLD:-50}
DB=listingproxy_restart_$$

work=$(mktemp -d)
pids=()
cleanup() {
  for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
  wait 2>/dev/null || true
  psql -q "$PG/postgres?sslmode=disable" -c "DROP DATABASE IF EXISTS $DB" >/dev/null 2>&1 || true
  rm -rf "$work"
}
trap cleanup EXIT
psql -q "$PG/postgres?sslmode=disable" -c "CREATE DATABASE $DB" >/dev/null

go build -o "$work/listingproxy" ./cmd/listingproxy
go build -o "$work/tcpproxy" ./bench/cmd/tcpproxy
go build -o "$work/warmload" ./bench/cmd/warmload
hostport=${PG#*://}; hostport=${hostport#*@}; hostport=${hostport%%/*}
"$work/tcpproxy" -target "$hostport" >"$work/proxy.log" 2>&1 &
PX=$!
pids+=("$PX")
for _ in $(seq 1 100); do grep -q "listening on" "$work/proxy.log" && break; sleep 0.1; done
PROXY=$(awk '/listening on/ {print $3; exit}' "$work/proxy.log")
user=${PG#*://}; user=${user%@*}

PORT=$(free_port) ADMIN=$(free_port)
LOG_LEVEL=warn lp_config testdata/config.postgres.yaml "$work/config.yaml" "$PORT" "$ADMIN" -
export LISTINGPROXY_PG_DSN="postgres://$user@$PROXY/$DB?sslmode=disable"
"$work/listingproxy" -config "$work/config.yaml" >"$work/lp.log" 2>&1 &
pids+=($!)
for _ in $(seq 1 600); do
  [ "$(curl -s -o /dev/null -w '%{http_code}' -u harbour:harbour-demo "http://127.0.0.1:$PORT/au/properties.json?limit=1")" = 200 ] && break
  sleep 0.1
done

printf '%s\n' '/au/properties.json?limit=2' '/au/properties.xml?limit=5&detail=full' '/nz/properties.json?limit=3&order=price' \
  '/au/agents.json?limit=3' '/au/agents.xml?limit=2&detail=full' '/nz/agents.json?limit=4' >"$work/paths"
"$work/warmload" -base "http://127.0.0.1:$PORT" -paths "$work/paths" -duration "$DURATION" -concurrency "$CONCURRENCY" -cold "$COLD" >"$work/load.out" 2>&1 &
LOAD=$!
pids+=("$LOAD")
for _ in $(seq 1 100); do grep -qs "^warmed" "$work/load.out" && break; sleep 0.1; done
sleep "$DOWN_AT"
kill -USR1 "$PX"; echo "t≈${DOWN_AT}s: database stopped (connections dropped, new ones refused)"
sleep "$DOWN_FOR"
kill -USR2 "$PX"; echo "t≈$((DOWN_AT + DOWN_FOR))s: database started"
status=0
wait "$LOAD" || status=$?
cat "$work/load.out"
printf 'purges by the listener: %s\n' "$(curl -s "http://127.0.0.1:$ADMIN/metrics" | awk '/^listingproxy_cache_purges_total\{.*source="notify"/ {print}' | tr '\n' ' ')"
exit "$status"
