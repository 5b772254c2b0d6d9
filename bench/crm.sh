#!/usr/bin/env bash
# bench/crm.sh: listingproxy in front of the legacy-crm stand-in.
#
# Builds both binaries, starts legacy-crm with a fixed latency (default 300ms)
# and listingproxy with testdata/config.crm.yaml (tenant summit on the CRM),
# both on free 127.0.0.1 ports, then
#   1. measures warm-cache latency through listingproxy against the same
#      requests made directly to legacy-crm, for a few URLs;
#   2. fires bursts of 100 identical concurrent cold requests at listingproxy
#      and reports how many requests legacy-crm received for each (goal: 1).
# Everything runs in a temporary directory and is killed on exit; the whole
# run is bounded by a watchdog (BENCH_TIMEOUT seconds, default 300).
#
#   bash bench/crm.sh                      # LATENCY=300ms DIRECT_N=10 PROXY_N=500
set -euo pipefail
cd "$(dirname "$0")/.."

LATENCY=${LATENCY:-300ms}
DIRECT_N=${DIRECT_N:-10}     # sequential requests straight to legacy-crm (each costs LATENCY)
PROXY_N=${PROXY_N:-500}      # sequential warm requests through listingproxy
BURST=${BURST:-100}
BENCH_TIMEOUT=${BENCH_TIMEOUT:-300}

. bench/lib.sh
bench_start

echo "building..."
go build -o "$work/legacy-crm" ./cmd/legacy-crm
go build -o "$work/listingproxy" ./cmd/listingproxy
go build -o "$work/latency" ./bench/cmd/latency

"$work/legacy-crm" -listen 127.0.0.1:0 -db "file:$work/crm.db" -latency "$LATENCY" >"$work/crm.out" 2>"$work/crm.err" &
pids+=($!)
crm=$(wait_for "$work/crm.out" 'listening on (http://[0-9.:]+)')

sed "s#http://127.0.0.1:9000#$crm#" testdata/config.crm.yaml >"$work/config.yaml"
(cd "$work" && SUMMIT_CRM_PASSWORD=summit-crm exec ./listingproxy -config config.yaml -listen 127.0.0.1:0 -admin-listen off >lp.out 2>lp.err) &
pids+=($!)
lp=$(wait_for "$work/lp.out" 'listening on (http://[0-9.:]+)')

echo "legacy-crm $crm (latency $LATENCY), listingproxy $lp; $(nproc) CPUs, $(go version | cut -d' ' -f3)"
echo
echo "== warm-cache latency: listingproxy (summit via the CRM) vs legacy-crm directly =="
lat="timeout 120 $work/latency"
for path in \
	"/au/properties.xml?limit=10" \
	"/au/properties.json?detail=full&limit=20&order=price" \
	"/au/properties/801.xml" \
	"/nz/agents.json?detail=full&limit=5"; do
	$lat -label "direct  $path" -url "$crm$path" -user summit -password summit-crm -n "$DIRECT_N" -warm 1
	$lat -label "through $path" -url "$lp$path" -user summit -password summit-demo -n "$PROXY_N" -warm 1
done

echo
echo "== bursts of $BURST identical concurrent cold requests through listingproxy =="
for path in \
	"/au/properties.xml?status=current&order=price&limit=50" \
	"/nz/properties.json?detail=full&limit=25" \
	"/au/properties/900.json"; do
	$lat -label "burst   $path" -url "$lp$path" -user summit -password summit-demo -n "$BURST" -c "$BURST" -warm 0 -crm-stats "$crm"
done

echo
echo "== listingproxy diff: legacy-crm (old) vs listingproxy (new), tenant summit =="
cat >"$work/paths.txt" <<'PATHS'
# lists, both formats and detail levels
/au/properties.xml?limit=5
/au/properties.json?limit=5
/au/properties.xml?limit=5&detail=full
/au/properties.json?limit=5&detail=full&order=price
/nz/properties.xml?status[]=current&status[]=contract&limit=10&offset=5
/nz/properties.json?geo[lat]=-36.85&geo[long]=174.76&geo[rad]=10&detail=full
/au/agents.xml?detail=full&limit=3
/au/agents.json?name=jane
# single resources, not found, errors
/au/properties/801.xml
/au/properties/801.json
/au/properties/1.xml
/au/agents/61.json
/au/properties/abc.json
/au/properties.xml?approved_from=2024-01-01&category=house
/au/properties.json?price_from=abc
PATHS
timeout 120 "$work/listingproxy" diff -old "$crm" -new "$lp" -old-user summit -old-password summit-crm \
	-new-user summit -new-password summit-demo -concurrency 8 -paths "$work/paths.txt"
