#!/usr/bin/env bash
# Cache-hit throughput and CPU per hit of two revisions of listingproxy, side
# by side: each round runs wrk against A and B back to back (the order
# alternating from round to round, so a shared VM's slow drifts cancel out),
# and the reported figures are the medians of the rounds' B/A ratios of req/s,
# of CPU µs per request (the server's user+system time from /proc divided by
# the requests wrk completed) and of p50 latency. Used to price a change on
# the hit path that the ./proxy benchmark cannot see, such as the HTTP
# server's timeouts.
#
#   bash bench/ab.sh A B                # e.g. bash bench/ab.sh 041e4e0 HEAD
#   ROUNDS=9 DURATION=3s CONNECTIONS=32 bash bench/ab.sh A B    # the defaults
#   URL_PATH='/au/properties.xml?detail=full&limit=22' HEADER='Accept-Encoding: gzip' bash bench/ab.sh A B
#   PATHS=file-of-paths bash bench/ab.sh A B   # cycle through many keys (all warmed first)
#   ENV_A='GOGC=100' bash bench/ab.sh HEAD HEAD # the same revision under two environments
#   WARMUP=40s bash bench/ab.sh A B     # wrk on each for 40s before the rounds (the heap's first pass)
#
# Both servers serve the demo (authentication on, access log off, entries
# fresh for 2 hours so that no round refills them), pinned to CPU 0 with wrk
# on CPU 1 when taskset exists and there are 2+ CPUs. HEADER adds one request
# header; ENV_A and ENV_B are space-separated VAR=value settings for either
# server's environment.
set -euo pipefail
cd "$(dirname "$0")/.."
. bench/lib.sh # bench_start, bench_pin, free_port, wait_port, lp_config
[ $# -eq 2 ] || { echo "usage: bash bench/ab.sh REV_A REV_B" >&2; exit 2; }
DURATION=${DURATION:-3s}
ROUNDS=${ROUNDS:-9}
CONNECTIONS=${CONNECTIONS:-32}
URL_PATH=${URL_PATH:-/au/properties/1.xml}
PATHS=${PATHS:-}
HEADER=${HEADER:-}
ENV_A=${ENV_A:-}
ENV_B=${ENV_B:-}

if ! command -v wrk >/dev/null; then
  echo "installing wrk (apt-get)"; (apt-get update -qq && apt-get install -y -qq wrk) >/dev/null
fi
bench_pin # SERVER_CPU, WRK_CPU
THREADS=2
[ ${#WRK_CPU[@]} -eq 0 ] || THREADS=1 # wrk on its own CPU
BENCH_TIMEOUT=${BENCH_TIMEOUT:-3600} # a watchdog against a hang
bench_start # work, pids, cleanup

HDRS=(-H "Authorization: Basic $(printf 'harbour:harbour-demo' | base64)")
[ -n "$HEADER" ] && HDRS+=(-H "$HEADER")
if [ -n "$PATHS" ]; then cp "$PATHS" "$work/paths"; else echo "$URL_PATH" >"$work/paths"; fi
go build -o "$work/warm" ./bench/cmd/warm

# start REV NAME ENV: build REV (a commit, exported with git archive) and run
# it; its port and pid are left in PORT and PID (not echoed: a subshell
# would lose its pid).
start() {
  local rev=$1 name=$2 env=$3 src="$work/src-$2" port
  mkdir -p "$src"
  git archive "$(git rev-parse "$rev")" | tar -x -C "$src"
  (cd "$src" && go build -o "$work/$name" ./cmd/listingproxy)
  port=$(free_port)
  # Either revision's config.yaml: ":8080" and 9090 before the safe
  # defaults, "127.0.0.1:8080" and 8081 after.
  lp_config "$src/config.yaml" "$work/$name.yaml" "$port" off "$work/$name.db" 's|^\(  ttl:\).*|\1 2h|'
  # shellcheck disable=SC2086 # ENV_* are word lists on purpose
  env $env "${SERVER_CPU[@]}" "$work/$name" -config "$work/$name.yaml" >"$work/$name.log" 2>&1 &
  pids+=($!)
  PID=$!
  wait_port "$port"
  sort -u "$work/paths" | "$work/warm" -base "http://127.0.0.1:$port" -paths /dev/stdin "${HDRS[@]}" # fill the cache
  PORT=$port
}
start "$1" a "$ENV_A"; A_PORT=$PORT A_PID=$PID
start "$2" b "$ENV_B"; B_PORT=$PORT B_PID=$PID

median() { sort -g | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }
HZ=$(getconf CLK_TCK)
ticks() { awk '{print $14+$15}' "/proc/$1/stat"; }
faults() { awk '{print $10}' "/proc/$1/stat"; } # minor page faults
# run PORT PID -> "req/s cpu-µs/req p50-ms faults/req"
run() {
  local t0 t1 f0 f1 out
  t0=$(ticks "$2") f0=$(faults "$2")
  out=$("${WRK_CPU[@]}" wrk -t"$THREADS" -c"$CONNECTIONS" -d"$DURATION" --latency "${HDRS[@]}" -s bench/paths.lua "http://127.0.0.1:$1" -- "$work/paths" 2>/dev/null)
  t1=$(ticks "$2") f1=$(faults "$2")
  if ! grep -q 'requests in' <<<"$out" || grep -q 'Non-2xx' <<<"$out"; then echo "wrk failed or got non-2xx answers from port $1:" >&2; echo "$out" >&2; exit 1; fi
  awk -v a="$t0" -v b="$t1" -v hz="$HZ" -v f="$((f1 - f0))" '
    /requests in/ {n=$1} /Requests\/sec/ {r=$2}
    $1=="50%" {v=$2; if (v ~ /us$/) v=v/1000; else if (v ~ /ms$/) v=v+0; else if (v ~ /s$/) v=v*1000; p=v}
    END {printf "%s %.2f %s %.4f\n", r, (b-a)/hz*1e6/n, p, f/n}' <<<"$out"
}

if [ "${WARMUP:-0}" != 0 ]; then # WARMUP=40s: hits on each before the rounds
  for port in "$A_PORT" "$B_PORT"; do
    "${WRK_CPU[@]}" wrk -t"$THREADS" -c"$CONNECTIONS" -d"$WARMUP" "${HDRS[@]}" -s bench/paths.lua "http://127.0.0.1:$port" -- "$work/paths" >/dev/null 2>&1
  done
fi
for f in a.flt b.flt a.rps b.rps a.cpu b.cpu ratio.rps ratio.cpu ratio.p50; do : >"$work/$f"; done
for r in $(seq 1 "$ROUNDS"); do
  if [ $((r % 2)) = 1 ]; then
    read -r ar ac ap af < <(run "$A_PORT" "$A_PID"); read -r br bc bp bf < <(run "$B_PORT" "$B_PID")
  else
    read -r br bc bp bf < <(run "$B_PORT" "$B_PID"); read -r ar ac ap af < <(run "$A_PORT" "$A_PID")
  fi
  echo "$af" >>"$work/a.flt"; echo "$bf" >>"$work/b.flt"
  echo "$ar" >>"$work/a.rps"; echo "$br" >>"$work/b.rps"; echo "$ac" >>"$work/a.cpu"; echo "$bc" >>"$work/b.cpu"
  awk -v a="$ar" -v b="$br" 'BEGIN {print b/a}' >>"$work/ratio.rps"
  awk -v a="$ac" -v b="$bc" 'BEGIN {print b/a}' >>"$work/ratio.cpu"
  awk -v a="$ap" -v b="$bp" 'BEGIN {print b/a}' >>"$work/ratio.p50"
done
rounds() { sort -g "$1" | awk '{printf "%s%.3f", (NR>1 ? " " : ""), $1}'; }
what=$URL_PATH; [ -n "$PATHS" ] && what="$(wc -l <"$work/paths") paths from $PATHS"
printf '%s, %s connections%s; load average %s\n' "$what" "$CONNECTIONS" "${HEADER:+, $HEADER}" "$(cut -d' ' -f1-3 /proc/loadavg)"
printf 'A=%s%s: %.0f req/s, %.2f µs CPU/req, %.4f page faults/req (medians)\n' "$1" "${ENV_A:+ ($ENV_A)}" "$(median <"$work/a.rps")" "$(median <"$work/a.cpu")" "$(median <"$work/a.flt")"
printf 'B=%s%s: %.0f req/s, %.2f µs CPU/req, %.4f page faults/req (medians)\n' "$2" "${ENV_B:+ ($ENV_B)}" "$(median <"$work/b.rps")" "$(median <"$work/b.cpu")" "$(median <"$work/b.flt")"
printf 'B/A req/s = %.3f (rounds: %s)\n' "$(median <"$work/ratio.rps")" "$(rounds "$work/ratio.rps")"
printf 'B/A CPU per request = %.3f (rounds: %s)\n' "$(median <"$work/ratio.cpu")" "$(rounds "$work/ratio.cpu")"
printf 'B/A p50 = %.3f\n' "$(median <"$work/ratio.p50")"
