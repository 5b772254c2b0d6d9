#!/usr/bin/env bash
# listingproxy against bench/cmd/bareproxy alone, in interleaved rounds: a
# shorter and steadier form of bench/nginx.sh's lp/bare column (no nginx or
# Varnish on the CPU between the rounds), with a second listingproxy under
# another environment (ENV_B, default GOGC=off) to price the runtime's
# memory settings in the same rounds. Each round runs wrk against A
# (listingproxy, serve's own settings), B (listingproxy under ENV_B) and
# bare, round r starting r-1 places later in that order (ORDER=rotate, the
# default: over 6 rounds each server runs twice in each place; ORDER=fixed
# keeps A B bare, where the first place cost A 3-5%); the
# script prints the medians of the per-round
# ratios of req/s and of CPU per request (user+system time from /proc), and
# each server's page faults and context switches (every thread's, voluntary
# or not) per request.
#
#   bash bench/lp-bare.sh                                    # the cases below, 6 rounds of 3s
#   CASES='2KB.cycled:64 45KB.1key:256' ROUNDS=5 bash bench/lp-bare.sh
#   PRELOAD='2KB.cycled 45KB.cycled' bash bench/lp-bare.sh  # fill every server with those keys first
#                                                            # (identity and gzip), as bench/nginx.sh's
#                                                            # later cases find them
#   ENV_B='GOGC=400' bash bench/lp-bare.sh
#   BIN_B=/tmp/lp-other ENV_B= bash bench/lp-bare.sh         # B is another build of listingproxy (a PGO build,
#                                                            # another revision) under ENV_B
#   ROUNDS_OUT=/tmp/rounds bash bench/lp-bare.sh             # also keep each round's figures, a file per case
#                                                            # (/tmp/rounds.CASE: per server req/s, CPU µs, faults
#                                                            # and context switches per request; A, B, bare)
#   PROCS=4 ROUNDS=16 bash bench/lp-bare.sh                  # 4 processes of each server, round r measuring
#                                                            # the ((r-1) mod 4)-th: two processes of one binary
#                                                            # differ by ~3.5% however many rounds they run
#                                                            # (bench/NOTES.md), so a ratio within a few per
#                                                            # cent needs several
#
# A case is BODY.KEYS:CONNECTIONS, with BODY 2KB or 45KB and KEYS 1key,
# cycled or zipf, drawn as in bench/nginx.sh (10,000 keys). Servers pinned
# to CPU 0, wrk to CPU 1 (PIN=0: not pinned); the cache is 2 GiB as in
# bench/nginx.sh; every listingproxy process first takes one-key hits for
# STEADY seconds (default 5), past its start's first page faults (25 s
# until GOGC went back to the runtime's default, when the heap's first pass
# ran up to the memory limit; bench/NOTES.md).
set -euo pipefail
cd "$(dirname "$0")/.."
CASES=${CASES:-2KB.cycled:64 2KB.zipf:64 2KB.1key:256 45KB.1key:256}
ROUNDS=${ROUNDS:-6}
DURATION=${DURATION:-3s}
ENV_B=${ENV_B-GOGC=off}
PRELOAD=${PRELOAD:-}
BIN_B=${BIN_B:-}
ORDER=${ORDER:-rotate} # rotate: round r starts r-1 places later (A B bare, B bare A, bare A B, ...); fixed: A B bare
STEADY=${STEADY:-5}
PROCS=${PROCS:-1}
ROUNDS_OUT=${ROUNDS_OUT:-}
[[ $PROCS =~ ^[1-9][0-9]*$ ]] || { echo "PROCS must be a positive whole number, not '$PROCS'" >&2; exit 2; }
BENCH_TIMEOUT=${BENCH_TIMEOUT:-1800}
for t in wrk python3 curl; do command -v $t >/dev/null || { echo "needs $t" >&2; exit 2; }; done
. bench/lib.sh
bench_start
bench_pin
go build -o "$work/listingproxy" ./cmd/listingproxy
if [ -n "$BIN_B" ]; then cp "$BIN_B" "$work/listingproxy-b"; else cp "$work/listingproxy" "$work/listingproxy-b"; fi
go build -o "$work/bareproxy" ./bench/cmd/bareproxy
go build -o "$work/warm" ./bench/cmd/warm

python3 - "$work" <<'PY'
import random, sys
work = sys.argv[1]
orders = ["id","agency_id","status","approved","last_updated","price","bedrooms","bathrooms","suburb","category","property_type"]
def lists(limit, n):
    out = [f"/{c}/properties.{fmt}?detail=full&limit={limit}&offset={off}&order={o}"
           for fmt in ("xml", "json") for c in ("au", "nz") for o in orders for off in range(0, 400 - limit + 1)]
    random.Random(7).shuffle(out)
    return out[:n]
for body, limit in (("2KB", 1), ("45KB", 22)):
    many = lists(limit, 10000)
    w = [1 / (k + 1) ** 1.1 for k in range(len(many))]
    for name, paths in (("1key", many[:1]), ("cycled", many), ("zipf", random.Random(11).choices(many, weights=w, k=200000))):
        with open(f"{work}/{body}.{name}", "w") as f:
            f.write("\n".join(paths) + "\n")
PY

AUTH="Authorization: Basic $(printf 'harbour:harbour-demo' | base64)"
start_lp() { # name env binary: starts listingproxy on the demo with bench/nginx.sh's settings; sets PORT, PID
  local port; port=$(free_port)
  lp_config config.yaml "$work/$1.yaml" "$port" off "$work/$1.db" 's|^\(  max_bytes:\).*|\1 2GiB|' 's|^\(  ttl:\).*|\1 2h|'
  # shellcheck disable=SC2086 # the environment is a word list on purpose
  env $2 "${SERVER_CPU[@]}" "$3" -config "$work/$1.yaml" >"$work/$1.log" 2>&1 &
  PID=$! PORT=$port; pids+=("$PID")
  wait_port "$port"
}
# PROCS processes of each server (A, B, bare), all started now; round r
# measures the ((r-1) mod PROCS)-th of each. Each bare fills from the A
# beside it.
A_PORTS=() A_PIDS=() B_PORTS=() B_PIDS=() X_PORTS=() X_PIDS=()
for n in $(seq 1 "$PROCS"); do
  start_lp "a$n" "" "$work/listingproxy"; A_PORTS+=("$PORT") A_PIDS+=("$PID")
  start_lp "b$n" "$ENV_B" "$work/listingproxy-b"; B_PORTS+=("$PORT") B_PIDS+=("$PID")
  port=$(free_port)
  "${SERVER_CPU[@]}" "$work/bareproxy" -listen "127.0.0.1:$port" -origin "http://127.0.0.1:${A_PORTS[-1]}" -auth "${AUTH#Authorization: }" >"$work/bare$n.log" 2>&1 &
  X_PIDS+=("$!") X_PORTS+=("$port"); pids+=("$!")
  wait_port "$port"
done
for p in "${A_PORTS[@]}" "${B_PORTS[@]}"; do
  "${WRK_CPU[@]}" wrk -t1 -c64 -d"${STEADY}s" -H "$AUTH" -s bench/paths.lua "http://127.0.0.1:$p" -- "$work/2KB.1key" >/dev/null
done
ALL_PORTS=("${A_PORTS[@]}" "${B_PORTS[@]}" "${X_PORTS[@]}")
for f in $PRELOAD; do
  for p in "${ALL_PORTS[@]}"; do
    "$work/warm" -base "http://127.0.0.1:$p" -paths <(sort -u "$work/$f") -H "$AUTH" >/dev/null
    "$work/warm" -base "http://127.0.0.1:$p" -paths <(sort -u "$work/$f") -H "$AUTH" -H "Accept-Encoding: gzip" >/dev/null
  done
done

stat_field() { awk -v f="$2" '{print $f}' "/proc/$1/stat"; }
cpu() { echo $(( $(stat_field "$1" 14) + $(stat_field "$1" 15) )); }
switches() { cat /proc/"$1"/task/*/status 2>/dev/null | awk '/_ctxt_switches/ {n += $2} END {print n}'; } # voluntary + not, every thread
HZ=$(getconf CLK_TCK)
printf '%-16s %8s %8s %8s   %7s %7s   %8s %8s %8s   %7s %7s %7s   (medians of %s rounds of %s over %s processes each; B: %s)\n' \
  case A/bare B/bare B/A cpuA/x cpuB/x faultsA faultsB faultsX cswA cswB cswX "$ROUNDS" "$DURATION" "$PROCS" "$ENV_B"
for cs in $CASES; do
  f=${cs%%:*} conns=${cs#*:}
  [ -e "$work/$f" ] || { echo "unknown case $cs (BODY.KEYS:CONNECTIONS, e.g. 2KB.cycled:64)" >&2; exit 2; }
  for p in "${ALL_PORTS[@]}"; do
    "$work/warm" -base "http://127.0.0.1:$p" -paths <(sort -u "$work/$f") -H "$AUTH" >/dev/null
  done
  : >"$work/rounds"
  for r in $(seq 1 "$ROUNDS"); do
    n=$(( (r - 1) % PROCS ))
    servers=("${A_PORTS[n]} ${A_PIDS[n]}" "${B_PORTS[n]} ${B_PIDS[n]}" "${X_PORTS[n]} ${X_PIDS[n]}") got=()
    seq=(0 1 2)
    if [ "$ORDER" = rotate ]; then k=$(( (r - 1) % 3 )); seq=("${seq[@]:k}" "${seq[@]:0:k}"); fi
    for i in "${seq[@]}"; do
      set -- ${servers[$i]}
      f0=$(stat_field "$2" 10); t0=$(cpu "$2"); c0=$(switches "$2")
      out=$("${WRK_CPU[@]}" wrk -t1 -c"$conns" -d"$DURATION" -H "$AUTH" -s bench/paths.lua "http://127.0.0.1:$1" -- "$work/$f" 2>&1)
      t1=$(cpu "$2"); f1=$(stat_field "$2" 10); c1=$(switches "$2")
      n=$(awk '/requests in/ {print $1}' <<<"$out")
      if [ -z "$n" ] || grep -q 'Non-2xx' <<<"$out"; then echo "wrk failed or got non-2xx answers from port $1:" >&2; echo "$out" >&2; exit 1; fi
      got[$i]="$(awk '/Requests\/sec/ {print $2}' <<<"$out") $(awk -v a="$t0" -v b="$t1" -v n="$n" -v hz="$HZ" 'BEGIN {print (b-a)/hz*1e6/n}') $(awk -v a="$f0" -v b="$f1" -v n="$n" 'BEGIN {print (b-a)/n}') $(awk -v a="$c0" -v b="$c1" -v n="$n" 'BEGIN {print (b-a)/n}')"
    done
    echo "${got[0]} ${got[1]} ${got[2]}" >>"$work/rounds"
  done
  if [ -n "$ROUNDS_OUT" ]; then cp "$work/rounds" "$ROUNDS_OUT.$cs"; fi
  python3 - "$cs" "$work/rounds" <<'PY'
import statistics, sys
rows = [list(map(float, l.split())) for l in open(sys.argv[2]) if l.strip()]
med = lambda xs: statistics.median(xs)
r = lambda i, j: med([row[i] / row[j] for row in rows])
print("%-16s %8.3f %8.3f %8.3f   %7.3f %7.3f   %8.4f %8.4f %8.4f   %7.4f %7.4f %7.4f" % (sys.argv[1], r(0, 8), r(4, 8), r(4, 0), r(1, 9), r(5, 9),
      med([x[2] for x in rows]), med([x[6] for x in rows]), med([x[10] for x in rows]),
      med([x[3] for x in rows]), med([x[7] for x in rows]), med([x[11] for x in rows])))
PY
done
