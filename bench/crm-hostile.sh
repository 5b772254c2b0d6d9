#!/usr/bin/env bash
# bench/crm-hostile.sh: N concurrent cold requests through listingproxy to a
# CRM whose every answer is a large hostile document (bench/cmd/hostilecrm),
# one fresh listingproxy per shape. Prints every client's status, latency
# and bytes (curl; a complete answer or not), and listingproxy's peak RSS
# (VmHWM from /proc/PID/status) after the burst.
#
#   bash bench/crm-hostile.sh                          # 16 clients x 15 MiB, shapes elements photos records text
#   SHAPES=elements CLIENTS=4 SIZE=$((4<<20)) bash bench/crm-hostile.sh   # a short run
#   LP_ENV='GOGC=off' bash bench/crm-hostile.sh        # listingproxy with this environment
#
# listingproxy collects as its heap doubles (GOGC at the runtime's default)
# or when it nears the memory limit derived from cache.max_bytes (256MiB
# here: limit 416 MiB; docs/operations.md), so its peak RSS shows what
# decoding holds; LP_ENV='GOGC=off' (serve's setting before 2026-11-28)
# collects only near the limit and shows how much garbage a burst leaves
# before the first collection, up to that limit.
#
# Targets: peak RSS <= 600 MB and every client answered (a
# complete response, 503 with Retry-After at worst) within
# cache.fill_timeout (10s) + 1s. Each client asks a different list (its own
# cache key), so nothing is coalesced: N calls are made at once (one tenant:
# up to 14 of the CRM's starting concurrency limit of 16), and their answers
# are decoded as max_decoding_bytes (64MiB) allows: four of 15 MiB at once.
set -euo pipefail
cd "$(dirname "$0")/.."

SHAPES=${SHAPES:-"elements photos records text"}
CLIENTS=${CLIENTS:-16}
SIZE=${SIZE:-$((15 << 20))}
BENCH_TIMEOUT=${BENCH_TIMEOUT:-600}

. bench/lib.sh
bench_start

echo "building..."
go build -o "$work/listingproxy" ./cmd/listingproxy
go build -o "$work/hostilecrm" ./bench/cmd/hostilecrm
hash=$(printf 'bench-pw' | "$work/listingproxy" hash-password)

echo "$CLIENTS concurrent clients, $SIZE-byte answers; $(nproc) CPUs, $(go version | cut -d' ' -f3)"
for shape in $SHAPES; do
	"$work/hostilecrm" -shape "$shape" -size "$SIZE" >"$work/crm.out" 2>&1 &
	crm_pid=$!
	pids+=("$crm_pid")
	crm=$(wait_for "$work/crm.out" 'listening on (http://[0-9.:]+)')
	cat >"$work/config.yaml" <<YAML
listen: "127.0.0.1:0"
admin_listen: "off"
countries: [au]
backends:
  legacy: {kind: crm, url: "$crm", timeout: 30s}
tenants:
  bench: {backend: legacy, upstream_username: u, upstream_password: p}
users:
  - {username: bench, password_bcrypt: "$hash", tenant: bench, permissions: [full, prices]}
log: {level: error}
YAML
	read -ra lp_env <<<"${LP_ENV:-}"
	env "${lp_env[@]}" "$work/listingproxy" -config "$work/config.yaml" >"$work/lp.out" 2>"$work/lp.err" &
	lp_pid=$!
	pids+=("$lp_pid")
	lp=$(wait_for "$work/lp.out" 'listening on (http://[0-9.:]+)')
	rss_before=$(awk '/VmRSS/ {print $2}' "/proc/$lp_pid/status")
	echo
	echo "== shape $shape: $(sed -nE 's/.*\((shape [^)]*)\).*/\1/p' "$work/crm.out") =="
	for i in $(seq "$CLIENTS"); do
		(
			out=$(curl -s -o /dev/null -m 60 -u bench:bench-pw \
				-w '%{http_code} %{time_total} %{size_download}' \
				"$lp/au/properties.xml?detail=full&limit=1000&price_from=$i" 2>/dev/null) && rc=0 || rc=$?
			printf 'client %2d  status %s  %6.2fs  %9s bytes  curl exit %s\n' "$i" \
				"$(cut -d' ' -f1 <<<"$out")" "$(cut -d' ' -f2 <<<"$out")" "$(cut -d' ' -f3 <<<"$out")" "$rc"
		) >"$work/client.$i" &
	done
	wait_clients=()
	for i in $(seq "$CLIENTS"); do wait_clients+=("$work/client.$i"); done
	while [ "$(cat "${wait_clients[@]}" 2>/dev/null | wc -l)" -lt "$CLIENTS" ]; do sleep 0.2; done
	cat "${wait_clients[@]}"
	hwm=$(awk '/VmHWM/ {print $2}' "/proc/$lp_pid/status")
	statuses=$(cat "${wait_clients[@]}" | awk '{print $4}' | sort | uniq -c | awk '{printf "%s%s x %s", (NR>1?", ":""), $1, $2}')
	slowest=$(cat "${wait_clients[@]}" | awk '{print $5+0}' | sort -g | tail -1)
	printf 'shape %-9s peak RSS %d MB (at start %d MB); statuses: %s; slowest %.2fs\n' "$shape" \
		$((hwm / 1024)) $((rss_before / 1024)) "$statuses" "$slowest"
	kill "$lp_pid" "$crm_pid" 2>/dev/null || true
	wait "$lp_pid" "$crm_pid" 2>/dev/null || true
done
