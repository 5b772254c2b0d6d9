#!/usr/bin/env bash
# bench/memory.sh: does cache.max_bytes bound the process, and what does the
# garbage collector's setting cost the hit path? Two parts, each comparing
# this tree's listingproxy ("new") with one built from BASE_REV ("old", by
# default the last commit with the per-second GOGC tuner, cmd/listingproxy
# gc.go's tuneGC), both on the demo (SQLite, authentication on, access log
# off), on free 127.0.0.1 ports.
#
#   churn  for each MAX_BYTES (16MiB and 64MiB), a fresh server of each
#          build gets KEYS distinct full-detail lists (limit 11..50 x
#          offset 0..; 20-100 KB each) from bench/cmd/warm with 8 in
#          flight, twice over; prints the peak RSS (VmHWM of
#          /proc/PID/status) against the target 1.5 x max_bytes + 64 MiB.
#   hit    cache-hit throughput of both builds (the demo's 256MiB cache),
#          wrk pinned to CPU 1 and the servers to CPU 0, ROUNDS interleaved
#          rounds of DURATION each (the order alternating) after WARM (40s)
#          of hits on each (the steady state: see below); prints req/s
#          and CPU time per request (utime+stime of /proc/PID/stat around
#          each wrk run) medians, and the medians of the per-round ratios
#          new/old (target >= 0.95; CPU per request old/new, same sense).
#
#   bash bench/memory.sh                                # both parts
#   PARTS=churn MAX_BYTES="16MiB" KEYS=1000 bash bench/memory.sh   # a short run
#   BASE_REV=main~5 bash bench/memory.sh                # another baseline
#   NEW_ENV='GOGC=100' bash bench/memory.sh             # the new build with this environment
set -euo pipefail
cd "$(dirname "$0")/.."
. bench/lib.sh # free_port, wait_port, lp_config
PARTS=${PARTS:-"churn hit"}
MAX_BYTES=${MAX_BYTES:-"16MiB 64MiB"}
KEYS=${KEYS:-4000}
ROUNDS=${ROUNDS:-9}
DURATION=${DURATION:-3s}
CONNECTIONS=${CONNECTIONS:-32}
WARM=${WARM:-40s}
if [ -z "${BASE_REV:-}" ]; then
	removed=$(git log -1 --format=%H -G'func tuneGC' -- cmd/listingproxy/gc.go)
	if grep -q 'func tuneGC' cmd/listingproxy/gc.go; then BASE_REV=HEAD; else BASE_REV="$removed^"; fi
fi

work=$(mktemp -d)
pids=()
cleanup() {
	for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
	wait 2>/dev/null || true
	git worktree remove --force "$work/base" 2>/dev/null || true
	rm -rf "$work"
}
trap cleanup EXIT

echo "building new (this tree) and old ($BASE_REV = $(git rev-parse --short "$BASE_REV"))..."
go build -o "$work/new" ./cmd/listingproxy
go build -o "$work/warm" ./bench/cmd/warm
git worktree add --detach "$work/base" "$BASE_REV" >/dev/null 2>&1
(cd "$work/base" && go build -o "$work/old" ./cmd/listingproxy)
echo "$(nproc) CPUs, $(go version | cut -d' ' -f3); a shared machine: figures are noisy"

AUTH="Authorization: Basic $(printf 'harbour:harbour-demo' | base64)"
# config_of BIN: the config.yaml of the revision BIN was built from (an
# older binary refuses keys added after it, such as max_offset).
config_of() { if [ "$1" = old ]; then echo "$work/base/config.yaml"; else echo config.yaml; fi; }
# start BIN PORT MAXBYTES: runs a server on the demo (its database is seeded
# once and shared), prints its pid.
start() {
	lp_config "$(config_of "$1")" "$work/config.$2.yaml" "$2" off "$work/demo.db" "s|^\(  max_bytes:\).*|\1 $3|"
	local envs=()
	if [ "$1" = new ]; then read -ra envs <<<"${NEW_ENV:-}"; fi
	env "${envs[@]}" ${PIN_SERVER:-} "$work/$1" -config "$work/config.$2.yaml" >"$work/lp.$2.log" 2>&1 &
	echo $!
}
port=$(free_port); pid=$(start new "$port" 256MiB); pids+=("$pid"); wait_port "$port"; kill "$pid"; wait "$pid" 2>/dev/null || true

if [[ " $PARTS " == *" churn "* ]]; then
	: >"$work/paths"
	n=0
	for offset in $(seq 0 1000); do
		for limit in $(seq 11 50); do
			[ "$n" -ge "$KEYS" ] && break 2
			echo "/au/properties.json?detail=full&limit=$limit&offset=$offset" >>"$work/paths"
			n=$((n + 1))
		done
	done
	echo
	echo "== churn: $KEYS distinct full lists, twice, 8 in flight =="
	for mb in $MAX_BYTES; do
		mib=${mb%MiB}
		target=$((mib * 3 / 2 + 64))
		for bin in old new; do
			port=$(free_port); pid=$(start "$bin" "$port" "$mb"); pids+=("$pid"); wait_port "$port"
			start_s=$(date +%s.%N)
			"$work/warm" -base "http://127.0.0.1:$port" -paths "$work/paths" -c 8 -H "$AUTH" >/dev/null
			"$work/warm" -base "http://127.0.0.1:$port" -paths "$work/paths" -c 8 -H "$AUTH" >/dev/null
			took=$(echo "$(date +%s.%N) - $start_s" | bc)
			hwm=$(awk '/VmHWM/ {print $2}' "/proc/$pid/status")
			printf 'max_bytes %-6s %-3s peak RSS %4d MiB (target %d MiB) %s; %.1fs for %d requests\n' "$mb" "$bin" \
				$((hwm / 1024)) "$target" "$([ $((hwm / 1024)) -le "$target" ] && echo within || echo OVER)" "$took" $((2 * KEYS))
			kill "$pid"; wait "$pid" 2>/dev/null || true
		done
	done
fi

if [[ " $PARTS " == *" hit "* ]]; then
	command -v wrk >/dev/null || { echo "installing wrk (apt-get)"; (apt-get update -qq && apt-get install -y -qq wrk) >/dev/null; }
	WRK_CPU=() THREADS=2
	if command -v taskset >/dev/null && [ "$(nproc)" -ge 2 ]; then PIN_SERVER="taskset -c 0" WRK_CPU=(taskset -c 1) THREADS=1; fi
	declare -A PORT PID
	for bin in old new; do
		PORT[$bin]=$(free_port); PID[$bin]=$(start "$bin" "${PORT[$bin]}" 256MiB); pids+=("${PID[$bin]}"); wait_port "${PORT[$bin]}"
	done
	ticks() { awk '{print $14 + $15}' "/proc/$1/stat"; }
	hz=$(getconf CLK_TCK)
	# A fresh heap takes a fault for every new page until its first
	# collections (under GOGC=off, until it reaches the memory limit).
	# Measure the steady state, after WARM of hits on each server.
	for bin in old new; do
		"${WRK_CPU[@]}" wrk -t"$THREADS" -c"$CONNECTIONS" -d"$WARM" -H "$AUTH" "http://127.0.0.1:${PORT[$bin]}/au/properties/1.xml" >/dev/null 2>&1
	done
	median() { sort -g | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }
	echo
	echo "== hit: $ROUNDS interleaved rounds of $DURATION, $CONNECTIONS connections, after $WARM of hits on each =="
	for path in "/au/properties/1.xml" "/au/properties.xml?detail=full&limit=22&status=current"; do
		for bin in old new; do curl -fsS -H "$AUTH" "http://127.0.0.1:${PORT[$bin]}$path" -o /dev/null; : >"$work/$bin.rps"; : >"$work/$bin.cpu"; done
		: >"$work/ratio"; : >"$work/cpuratio"
		for r in $(seq "$ROUNDS"); do
			order="old new"; [ $((r % 2)) -eq 0 ] && order="new old"
			for bin in $order; do
				t0=$(ticks "${PID[$bin]}")
				out=$("${WRK_CPU[@]}" wrk -t"$THREADS" -c"$CONNECTIONS" -d"$DURATION" -H "$AUTH" "http://127.0.0.1:${PORT[$bin]}$path" 2>/dev/null)
				t1=$(ticks "${PID[$bin]}")
				awk '/Requests\/sec/ {print $2}' <<<"$out" >>"$work/$bin.rps"
				awk -v t=$((t1 - t0)) -v hz="$hz" '/requests in/ {printf "%.2f\n", t / hz * 1e6 / $1}' <<<"$out" >>"$work/$bin.cpu"
			done
			paste "$work/new.rps" "$work/old.rps" | tail -1 | awk '{print $1/$2}' >>"$work/ratio"
			paste "$work/old.cpu" "$work/new.cpu" | tail -1 | awk '{print $1/$2}' >>"$work/cpuratio"
		done
		printf '%-58s old %6.0f req/s %5.1fus CPU/req   new %6.0f req/s %5.1fus CPU/req\n' "$path" \
			"$(median <"$work/old.rps")" "$(median <"$work/old.cpu")" "$(median <"$work/new.rps")" "$(median <"$work/new.cpu")"
		printf '    median of per-round ratios: throughput new/old %.3f (rounds: %s); CPU per request old/new %.3f\n' \
			"$(median <"$work/ratio")" "$(sort -g "$work/ratio" | awk '{printf "%s%.2f", (NR>1 ? " " : ""), $1}')" "$(median <"$work/cpuratio")"
	done
fi
