#!/usr/bin/env bash
# bench/fleet-purge-storm.sh: a fleet under load while its tenant is purged
# every 100 ms (a busy but healthy Redis). Starts bench/fleet.sh
# (3 replicas, their Redis, the legacy-crm stand-in at LATENCY) from TREE,
# runs bench/cmd/fleetload's closed-loop load (32 at once, 200 keys) for
# SECONDS while POST /cache/purge?tenant=summit goes to the replicas in
# turn every 100 ms, then prints the purges' status codes, the load's
# summary and each replica's shared-tier counters, and stops the fleet
# (its process group, by the PID it started).
#
#   bash bench/fleet-purge-storm.sh [TREE] [SECONDS]   # TREE: a checkout (default: this one)
set -u
tree=${1:-$(cd "$(dirname "$0")/.." && pwd)} secs=${2:-45}
out=$(mktemp)
cd "$tree"
LATENCY=${LATENCY:-20ms} setsid bash bench/fleet.sh run >"$out" 2>&1 &
fpid=$!
trap 'kill -TERM -- -$fpid 2>/dev/null' EXIT
for _ in $(seq 600); do
	grep -q "^replica 3" "$out" && break
	kill -0 $fpid 2>/dev/null || { echo "fleet.sh exited:"; cat "$out"; exit 1; }
	sleep 1
done
urls=$(grep "^replica" "$out" | awk '{print $3}' | paste -sd,)
mapfile -t admins < <(grep "^replica" "$out" | awk '{print $5}')
work=$(grep -o "logs in .*" "$out" | awk '{print $3}')
"$work/fleetload" load -urls "$urls" -c 32 -duration "${secs}s" -keys 200 -base 700000 >"$out.load" 2>&1 &
lpid=$!
declare -A codes
end=$((SECONDS + secs))
i=0
while [ $SECONDS -lt $end ]; do
	c=$(curl -s -o /dev/null -w '%{http_code}' -u admin:admin-demo -X POST "${admins[$((i % 3))]}/cache/purge?tenant=summit")
	codes[$c]=$((${codes[$c]:-0} + 1))
	i=$((i + 1))
	sleep 0.1
done
wait $lpid
echo "purges: $i; status codes: $(for k in "${!codes[@]}"; do echo -n "$k=${codes[$k]} "; done)"
tail -1 "$out.load"
for a in "${admins[@]}"; do
	echo "== $a"
	curl -s "$a/metrics" | grep -E '^listingproxy_shared_cache_(errors_total|slow_total|breaker_open|purges_pending|purges_sent_total) '
done
echo "load average $(cut -d' ' -f1-3 /proc/loadavg)"
