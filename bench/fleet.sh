#!/usr/bin/env bash
# bench/fleet.sh: a fleet in one command. Builds listingproxy, the legacy-crm
# stand-in and bench/cmd/fleetload, then starts on free 127.0.0.1 ports, as
# local processes in a temporary directory:
#   - the stand-in CRM (cmd/legacy-crm, LATENCY per call),
#   - its own Redis (redis-server, no persistence), the shared second tier,
#   - REPLICAS listingproxy replicas (default 3) from testdata/config.fleet.yaml,
#     each with its own -listen and -admin-listen.
# Everything it started is stopped (by PID) when it exits, on Ctrl-C too.
#
#   bash bench/fleet.sh          # run: print the URLs, serve until Ctrl-C (the demo of scaling out)
#   bash bench/fleet.sh bench    # measure, print the figures, stop (bounded by BENCH_TIMEOUT)
#
# The bench mode prints (docs/operations.md, "Scaling out"):
#   1. CRM calls for a cold burst of BURST concurrent requests for one key,
#      spread over the replicas (one per key for the fleet when the tier works);
#   2. second-tier hit latency p50/p99 next to a first-tier hit's;
#   3. the hit ratio of a Zipf workload on 1 replica and on all of them;
#   4. failed requests under load while Redis is killed (SIGKILL) and restarted;
#   5. once the replicas' shared-tier breakers have closed, a new cold burst
#      (one CRM call again when they rejoined the fleet).
# Knobs: REPLICAS=3 LATENCY=200ms BURST=300 TIER_ROUNDS=5 TIER_KEYS=20
# ZIPF_N=3000 ZIPF_KEYS=500 LOAD_SECONDS=9 LOAD_C=16 BENCH_TIMEOUT=600.
set -euo pipefail
cd "$(dirname "$0")/.."

MODE=${1:-run}
case "$MODE" in
run | bench) ;;
*)
	echo "usage: bash bench/fleet.sh [run|bench]" >&2
	exit 2
	;;
esac
REPLICAS=${REPLICAS:-3}
LATENCY=${LATENCY:-200ms}
BURST=${BURST:-300}
TIER_ROUNDS=${TIER_ROUNDS:-5}
TIER_KEYS=${TIER_KEYS:-20}
ZIPF_N=${ZIPF_N:-3000}
ZIPF_KEYS=${ZIPF_KEYS:-500}
LOAD_SECONDS=${LOAD_SECONDS:-9}
LOAD_C=${LOAD_C:-16}
BENCH_TIMEOUT=${BENCH_TIMEOUT:-600}
if [ "$MODE" = bench ] && [ "$REPLICAS" -lt 2 ]; then
	echo "fleet: bench needs REPLICAS >= 2 (a filler and a reader)" >&2
	exit 2
fi
command -v redis-server >/dev/null || {
	echo "fleet: redis-server is not on PATH (Debian: apt-get install redis-server)" >&2
	exit 1
}
command -v python3 >/dev/null || {
	echo "fleet: python3 is not on PATH (free_port, bench/lib.sh)" >&2
	exit 1
}

. bench/lib.sh
redis_pid=""
# Redis is restarted by the bench, so it is stopped apart from pids.
fleet_cleanup() {
	[ -n "$redis_pid" ] && kill "$redis_pid" 2>/dev/null || true
	bench_cleanup
}
if [ "$MODE" = bench ]; then
	bench_start # work, pids, the watchdog
else
	work=$(mktemp -d)
	pids=()
	trap 'exit 130' INT TERM
fi
trap fleet_cleanup EXIT
export WAIT_SECONDS=${WAIT_SECONDS:-300} # the CRM may be seeding its database

# start_redis [PORT]: starts redis-server on PORT (default: a free one) and
# sets redis_port and redis_pid once it answers PING.
start_redis() {
	local want=${1:-} try i
	for try in 1 2 3 4 5; do
		redis_port=${want:-$(free_port)}
		redis-server --bind 127.0.0.1 --port "$redis_port" --save "" --appendonly no \
			--maxmemory 256mb --maxmemory-policy volatile-lru \
			>>"$work/redis.log" 2>&1 &
		redis_pid=$!
		for i in $(seq 100); do
			if redis-cli -h 127.0.0.1 -p "$redis_port" ping 2>/dev/null | grep -q PONG; then
				return 0
			fi
			kill -0 "$redis_pid" 2>/dev/null || break
			sleep 0.1
		done
		kill "$redis_pid" 2>/dev/null || true
		wait "$redis_pid" 2>/dev/null || true
		redis_pid=""
		[ -n "$want" ] && sleep 0.5 # the old process's port: try again shortly
	done
	echo "fleet: redis-server would not start (log: below)" >&2
	tail -20 "$work/redis.log" >&2
	return 1
}

echo "building..."
go build -o "$work/legacy-crm" ./cmd/legacy-crm
go build -o "$work/listingproxy" ./cmd/listingproxy
go build -o "$work/fleetload" ./bench/cmd/fleetload

# The CRM's database is kept between runs (CRM_DB; delete it to reseed).
CRM_DB=${CRM_DB:-${TMPDIR:-/tmp}/listingproxy-fleet-crm.db}
echo "starting legacy-crm ($CRM_DB; seeded on first use)..."
"$work/legacy-crm" -listen 127.0.0.1:0 -db "file:$CRM_DB" -latency "$LATENCY" >"$work/crm.out" 2>"$work/crm.err" &
pids+=($!)
crm=$(wait_for "$work/crm.out" 'listening on (http://[0-9.:]+)' $!)

start_redis

export LISTINGPROXY_CRM_URL=$crm SUMMIT_CRM_PASSWORD=summit-crm HARBOUR_CRM_PASSWORD=harbour-crm LISTINGPROXY_REDIS_ADDR=127.0.0.1:$redis_port
urls=() admins=() rpids=()
config=$PWD/testdata/config.fleet.yaml
for r in $(seq "$REPLICAS"); do
	mkdir -p "$work/r$r"
	(cd "$work/r$r" && exec "$work/listingproxy" serve -config "$config" \
		-listen 127.0.0.1:0 -admin-listen 127.0.0.1:0 >out 2>err) &
	pids+=($!)
	rpids+=($!)
done
for r in $(seq "$REPLICAS"); do
	urls+=("$(wait_for "$work/r$r/out" 'listening on (http://[0-9.:]+)' "${rpids[r - 1]}")")
	admins+=("$(wait_for "$work/r$r/out" '\(admin: (http://[0-9.:]+)' "${rpids[r - 1]}")")
done

echo
echo "legacy-crm   $crm (latency $LATENCY; GET $crm/stats counts its calls)"
echo "redis        127.0.0.1:$redis_port (pid $redis_pid; redis-cli -p $redis_port)"
for r in $(seq "$REPLICAS"); do
	echo "replica $r    ${urls[r - 1]}  admin ${admins[r - 1]}"
done
echo "$(nproc) CPUs, load $(cut -d' ' -f1-3 /proc/loadavg), $(go version | cut -d' ' -f3), logs in $work"

if [ "$MODE" = run ]; then
	cat <<EOF

Try (users and passwords: README.md; both tenants are served by the CRM through the fleet):
  curl -u summit:summit-demo '${urls[0]}/au/properties.json?limit=2'
  curl -u summit:summit-demo '${urls[1]}/au/properties.json?limit=2'   # another replica
  curl -s $crm/stats | grep '"requests"'                                 # CRM calls so far
  curl -u admin:admin-demo -X POST '${admins[0]}/cache/purge?tenant=summit'
  curl -u admin:admin-demo -X POST '${admins[1]}/cache/purge?tenant=summit&property=801' # every body holding summit's property 801, fleet-wide
  curl -u admin:admin-demo -X POST -G '${admins[0]}/cache/purge' -d tenant=summit --data-urlencode 'url=/au/properties.json?limit=2'
                                                                         # one URL, every permission level and format
  curl -s ${admins[0]}/metrics | grep -E '^listingproxy_(cache|shared_cache)'   # first and second tier
Ctrl-C stops everything.
EOF
	# Serve until Ctrl-C or until a process of the fleet dies.
	wait -n "${pids[@]}" || true
	echo "fleet: a process exited; stopping the rest (logs: $work)" >&2
	for f in "$work"/crm.err "$work"/r*/err; do tail -3 "$f" >&2 || true; done
	exit 1
fi

all=$(IFS=,; echo "${urls[*]}")
load="$work/fleetload"
echo
echo "== 1. cold burst: $BURST concurrent requests for one key over $REPLICAS replicas =="
"$load" burst -urls "$all" -crm "$crm" -n "$BURST" -base 100000
echo
echo "== 2. second-tier hit (filled on replica 1, first read on replica 2) next to a first-tier hit =="
"$load" tiers -urls "${urls[0]},${urls[1]}" -crm "$crm" -rounds "$TIER_ROUNDS" -keys "$TIER_KEYS" -base 200000
echo
echo "== 3. Zipf workload: hit ratio on 1 replica, then on $REPLICAS (disjoint keys) =="
"$load" zipf -urls "${urls[0]}" -crm "$crm" -n "$ZIPF_N" -keys "$ZIPF_KEYS" -base 300000
"$load" zipf -urls "$all" -crm "$crm" -n "$ZIPF_N" -keys "$ZIPF_KEYS" -base 400000
echo
third=$((LOAD_SECONDS / 3))
echo "== 4. load for ${LOAD_SECONDS}s over $REPLICAS replicas; Redis killed (SIGKILL) at ${third}s, restarted at $((2 * third))s =="
"$load" load -urls "$all" -c "$LOAD_C" -duration "${LOAD_SECONDS}s" -keys 200 -base 500000 &
load_pid=$!
pids+=($load_pid)
sleep "$third"
kill -KILL "$redis_pid"
wait "$redis_pid" 2>/dev/null || true
echo "  redis killed at ${third}s"
sleep "$third"
start_redis "$redis_port"
echo "  redis restarted at ~$((2 * third))s (pid $redis_pid)"
wait "$load_pid"
echo
echo "== 5. after Redis's restart: the replicas rejoin (shared-tier breakers closed), then a cold burst =="
# metric ADMIN NAME: the sum of NAME's samples on a replica's /metrics.
metric() { curl -fsS "$1/metrics" | awk -v n="$2" '$1 == n || index($1, n "{") == 1 { s += $2 } END { print s + 0 }'; }
start=$SECONDS
for i in $(seq 600); do
	open=0
	for a in "${admins[@]}"; do open=$((open + $(metric "$a" listingproxy_shared_cache_breaker_open))); done
	[ "$open" = 0 ] && break
	sleep 0.1
done
echo "  shared-tier breakers open: $open, ~$((SECONDS - start))s after the load ended"
"$load" burst -urls "$all" -crm "$crm" -n "$BURST" -base 600000
echo
echo "replica errors logged (level=ERROR lines, per replica): $(for r in $(seq "$REPLICAS"); do grep -cE 'level=ERROR|"level":"ERROR"' "$work/r$r/err" || true; done | paste -sd' ')"
