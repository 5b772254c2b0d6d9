#!/usr/bin/env bash
# Legitimate HTTP/2 clients next to HTTP/2 floods on listingproxy's TLS
# listener, in one run: the ratio of the legitimate throughput with the
# flood to without it (target >= 0.7, as for the password flood).
#
#   bash bench/h2-abuse.sh       # DURATION=5s ROUNDS=5, about 5 minutes
#
# listingproxy runs the SQLite demo with a self-signed certificate
# (server.tls, HTTP/2 on), pinned to CPU 0; the clients (bench/cmd/h2flood)
# run on CPU 1, the flood at the lowest priority (nice 19: an attacker's
# CPU is its own, and must not be what slows the legit clients here). The
# legit load: LEGIT_CONNECTIONS HTTP/2 connections
# (net/http's transport), 8 goroutines each, asking one cached URL with
# harbour's credentials. The floods, each on its own connections:
#   ping/4      PING frames as fast as 4 connections take them
#   reset/4     rapid reset (HEADERS then RST_STREAM) on 4 connections
#   reset/32    the same on 32
# A flooding connection the server closes is dialled again, at most 50 new
# connections a second in all: what server.new_conns_per_second_per_address
# allows one client address that is not loopback (loopback, where this runs,
# is exempt from that bound). Each round measures, for each flood, the legit
# load alone and then with the flood running, so a shared machine's drifts
# cancel out in the round's ratio; the ratio printed is the median over
# rounds. The last column is listingproxy_http2_connections_closed_total
# at the end.
set -euo pipefail
cd "$(dirname "$0")/.."
DURATION=${DURATION:-5s}
ROUNDS=${ROUNDS:-5}
LEGIT_CONNECTIONS=${LEGIT_CONNECTIONS:-8}
FLOODS=${FLOODS:-"ping/4 reset/4 reset/32"}
BENCH_TIMEOUT=${BENCH_TIMEOUT:-1800}
. bench/lib.sh
bench_start

SERVER_CPU=() CLIENT_CPU=()
if command -v taskset >/dev/null && [ "$(nproc)" -ge 2 ]; then SERVER_CPU=(taskset -c 0) CLIENT_CPU=(taskset -c 1); fi

go build -o "$work/listingproxy" ./cmd/listingproxy
go build -o "$work/h2flood" ./bench/cmd/h2flood
openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -days 1 -subj /CN=127.0.0.1 \
  -addext subjectAltName=IP:127.0.0.1 -keyout "$work/key.pem" -out "$work/cert.pem" 2>/dev/null

PORT=$(free_port) ADMIN=$(free_port)
lp_config config.yaml "$work/config.yaml" "$PORT" "$ADMIN" "$work/demo.db" \
    "s|^server:|server:\n  tls:\n    cert_file: $work/cert.pem\n    key_file: $work/key.pem|"
"${SERVER_CPU[@]}" "$work/listingproxy" -config "$work/config.yaml" >"$work/lp.log" 2>&1 &
pids+=($!)
for _ in $(seq 1 300); do curl -sk -o /dev/null "https://127.0.0.1:$PORT/" && break; sleep 0.1; done

URL="https://127.0.0.1:$PORT/au/properties.json?limit=10&status=current"
curl -fsSk --http2 -u harbour:harbour-demo "$URL" -o /dev/null # verifies the credentials, fills the cache
curl -fsSk --http2 -u harbour:harbour-demo -D - "$URL" -o /dev/null | grep -qi '^Cache-Status: listingproxy; hit' || { echo "second request was not a hit"; exit 1; }

median() { sort -g | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }
legit() { "${CLIENT_CPU[@]}" "$work/h2flood" -mode legit -url "$URL" -c "$LEGIT_CONNECTIONS" -d "$DURATION"; }
rps() { sed -nE 's/^req\/s=([0-9.]+) .*/\1/p' <<<"$1"; }
closed() { curl -s "http://127.0.0.1:$ADMIN/metrics" | awk '/^listingproxy_http2_connections_closed_total/ {print $2}'; }
secs=${DURATION%s}
for f in $FLOODS; do : >"$work/${f%/*}-${f#*/}.ratio"; done
for round in $(seq 1 "$ROUNDS"); do
  for f in $FLOODS; do
    mode=${f%/*} conns=${f#*/} key="${f%/*}-${f#*/}"
    alone=$(legit)
    nice -n 19 "${CLIENT_CPU[@]}" "$work/h2flood" -mode "$mode" -url "$URL" -c "$conns" -d "$((secs + 1))s" >"$work/flood.out" &
    fpid=$!
    sleep 0.5 # let the flood reach its pace
    flooded=$(legit)
    wait "$fpid"
    awk -v a="$(rps "$alone")" -v f="$(rps "$flooded")" 'BEGIN {print f/a}' >>"$work/$key.ratio"
    printf 'round %d %-9s legit alone: %s | flooded: %s | %s\n' "$round" "$f" "$alone" "$flooded" "$(cat "$work/flood.out")"
  done
done
printf '\n%-9s %8s   (median of %s rounds of %s; legit %s HTTP/2 connections; load average %s)\n' flood ratio "$ROUNDS" "$DURATION" "$LEGIT_CONNECTIONS" "$(cut -d' ' -f1-3 /proc/loadavg)"
for f in $FLOODS; do
  key="${f%/*}-${f#*/}"
  printf '%-9s %8.2f   ratios: %s\n' "$f" "$(median <"$work/$key.ratio")" "$(sort -g "$work/$key.ratio" | awk '{printf "%s%.2f", (NR>1 ? " " : ""), $1}')"
done
echo "connections closed for their control frames: $(closed)"
