#!/usr/bin/env bash
# bench/slowcrm.sh: listingproxy with its DEFAULT settings in front of a slow
# but healthy CRM, under an open-loop load over a long tail of queries.
#
# Builds legacy-crm, listingproxy and bench/cmd/zipfload; starts legacy-crm
# with LATENCY (default 300ms) on every answer, and listingproxy with a
# configuration that sets nothing but the CRM's address, the tenants (both
# on the CRM) and the users: every limit, timeout and cache setting is the
# default. Then zipfload sends RATE requests a second (default 200) for
# DURATION (default 60s) over KEYS distinct queries (default 24000, Zipf
# exponent ZIPF, default 1.1) from three users of two tenants, and prints,
# per 10 s and in all, the statuses, the 503s and the latency percentiles,
# then the most calls the CRM was answering at once and listingproxy's
# concurrency limit and refusals from its /metrics.
#
#   bash bench/slowcrm.sh                 # LATENCY=300ms RATE=200 DURATION=60s KEYS=24000 SEED=1
#   MAX_503=0 bash bench/slowcrm.sh       # exit 1 on any 503
#
# Everything runs in a temporary directory and is killed on exit; the whole
# run is bounded by a watchdog (BENCH_TIMEOUT seconds, default 300).
set -euo pipefail
cd "$(dirname "$0")/.."

LATENCY=${LATENCY:-300ms}
RATE=${RATE:-200}
DURATION=${DURATION:-60s}
KEYS=${KEYS:-24000}
ZIPF=${ZIPF:-1.1}
SEED=${SEED:-1}
USERS=${USERS:-harbour:harbour-demo,harbour-noprice:harbour-demo,summit:summit-demo}
MAX_503=${MAX_503:--1}
BENCH_TIMEOUT=${BENCH_TIMEOUT:-300}

. bench/lib.sh
bench_start

echo "building..."
go build -o "$work/legacy-crm" ./cmd/legacy-crm
go build -o "$work/listingproxy" ./cmd/listingproxy
go build -o "$work/zipfload" ./bench/cmd/zipfload

"$work/legacy-crm" -listen 127.0.0.1:0 -db "file:$work/crm.db" -latency "$LATENCY" >"$work/crm.out" 2>"$work/crm.err" &
pids+=($!)
crm=$(WAIT_SECONDS=120 wait_for "$work/crm.out" 'listening on (http://[0-9.:]+)' $!)

# Only what must be said: where the CRM is, who the tenants and users are.
# The users and hashes are config.yaml's (passwords harbour-demo, summit-demo).
{
	cat <<YAML
listen: "127.0.0.1:0"
admin_listen: "127.0.0.1:0"
backends:
  legacy: {kind: crm, url: "$crm"}
tenants:
  harbour: {backend: legacy, upstream_username: harbour, upstream_password: harbour-crm}
  summit: {backend: legacy, upstream_username: summit, upstream_password: summit-crm}
YAML
	sed -n '/^users:/,/^$/p' testdata/config.crm.yaml
	sed -n '/^admin:/,/^$/p' testdata/config.crm.yaml
} >"$work/config.yaml"
(cd "$work" && exec ./listingproxy -config config.yaml >lp.out 2>lp.err) &
pids+=($!)
lp=$(wait_for "$work/lp.out" 'listening on (http://[0-9.:]+)' $!)
admin=$(wait_for "$work/lp.out" 'admin: (http://[0-9.:]+)')

echo "legacy-crm $crm (latency $LATENCY), listingproxy $lp (defaults; admin $admin); $(nproc) CPUs, load average $(cut -d' ' -f1-3 /proc/loadavg), $(go version | cut -d' ' -f3)"
status=0
"$work/zipfload" -base "$lp" -rate "$RATE" -duration "$DURATION" -keys "$KEYS" -zipf "$ZIPF" -seed "$SEED" \
	-users "$USERS" \
	-crm-stats "$crm" -max-503 "$MAX_503" || status=$?
echo
echo "listingproxy's concurrency limit and breakers at the end (/metrics):"
curl -sf -u admin:admin-demo "$admin/metrics" | grep -E '^listingproxy_(backend_concurrency_|backend_slot_|breaker_state\{.*state="open"|crm_decode_budget_waits_total|breaker_transitions_total\{.*to="open")' || true
echo "load average after: $(cut -d' ' -f1-3 /proc/loadavg)"
exit "$status"
