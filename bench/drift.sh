#!/usr/bin/env bash
# bench/drift.sh: what a shared machine's drifting speed does to a ratio of
# two servers' hits a second measured in turn (bench/nginx.sh's lp/bare),
# measured with two servers that are the same: two bareproxy processes of
# one build, filled from one listingproxy on the demo, taking one-key 2 KB
# hits at 64 connections (CONNS, KEYS). Each of ROUNDS rounds (default 40, about 9
# minutes) measures their ratio twice, by the two methods bench/nginx.sh
# can use (SLICES): "slices", each server in SLICES alternate runs of 1 s
# (default 3; its figures the sums), and "blocks", one run of SLICES
# seconds of each, one after the other; which server and which method go
# first alternates. Every departure of a ratio from 1 is the method's
# noise: the script prints, per method, the median ratio, its standard
# deviation and quartiles over the rounds, and the lag-1 autocorrelation
# of the 1 s runs' req/s within a round (how much a second's speed tells
# of the next one's).
#
#   bash bench/drift.sh
#   ROUNDS=10 bash bench/drift.sh                 # a short run
#   SERVER0=lp KEYS=zipf CONNS=256 bash bench/drift.sh
#                                                 # server 0 is listingproxy (the origin itself): both
#                                                 # methods on lp/bare, 10,000 keys drawn as in
#                                                 # bench/nginx.sh's Zipf cases (KEYS=cycled: in turn)
#   PERF=10 SERVER0=lp KEYS=zipf CONNS=256 bash bench/drift.sh
#                                                 # then a CPU profile of each server under the same
#                                                 # load for 10 s (perf record -e cpu-clock on CPU 0):
#                                                 # its samples by kind of code, and its top symbols
#
# Servers on CPU 0, wrk on CPU 1 (PIN=0: not pinned), as in bench/nginx.sh.
set -euo pipefail
cd "$(dirname "$0")/.."
ROUNDS=${ROUNDS:-40}
SLICES=${SLICES:-3}
SERVER0=${SERVER0:-bare}
KEYS=${KEYS:-1key}
CONNS=${CONNS:-64}
PERF=${PERF:-0}
[[ $PERF =~ ^[0-9]+$ ]] || { echo "PERF must be a whole number of seconds, not '$PERF'" >&2; exit 2; }
[ "$PERF" = 0 ] || command -v perf >/dev/null || { echo "PERF needs perf (Debian: linux-perf)" >&2; exit 2; }
case $SERVER0 in bare|lp) ;; *) echo "SERVER0 must be bare or lp, not '$SERVER0'" >&2; exit 2 ;; esac
case $KEYS in 1key|cycled|zipf) ;; *) echo "KEYS must be 1key, cycled or zipf, not '$KEYS'" >&2; exit 2 ;; esac
[[ $CONNS =~ ^[1-9][0-9]*$ ]] || { echo "CONNS must be a positive whole number, not '$CONNS'" >&2; exit 2; }
[[ $ROUNDS =~ ^[1-9][0-9]*$ ]] && [ "$ROUNDS" -ge 4 ] || { echo "ROUNDS must be a whole number of at least 4, not '$ROUNDS'" >&2; exit 2; }
[[ $SLICES =~ ^[1-9][0-9]*$ ]] || { echo "SLICES must be a positive whole number, not '$SLICES'" >&2; exit 2; }
BENCH_TIMEOUT=${BENCH_TIMEOUT:-$((ROUNDS * (SLICES * 4 + 6) + 300))}
for t in wrk python3 curl; do command -v $t >/dev/null || { echo "needs $t" >&2; exit 2; }; done
. bench/lib.sh
bench_start
bench_pin
go build -o "$work/listingproxy" ./cmd/listingproxy
go build -o "$work/bareproxy" ./bench/cmd/bareproxy
go build -o "$work/warm" ./bench/cmd/warm

AUTH="Authorization: Basic $(printf 'harbour:harbour-demo' | base64)"
port=$(free_port)
sed -e "s|^listen: \"[0-9.]*:8080\"|listen: \"127.0.0.1:$port\"|" -e 's|admin_listen: "127.0.0.1:[0-9]*"|admin_listen: "off"|' \
    -e "s|file:listingproxy-demo.db|file:$work/origin.db|" -e 's|level: info|level: error|' \
    -e 's|^\(  max_bytes:\).*|\1 2GiB|' -e 's|^\(  ttl:\).*|\1 2h|' config.yaml >"$work/origin.yaml"
"${SERVER_CPU[@]}" "$work/listingproxy" -config "$work/origin.yaml" >"$work/origin.log" 2>&1 &
pids+=($!) origin_pid=$!
wait_port "$port"
# The paths, drawn as bench/nginx.sh draws its 2 KB cases'.
python3 - "$work/paths" "$KEYS" <<'PY'
import random, sys
orders = ["id","agency_id","status","approved","last_updated","price","bedrooms","bathrooms","suburb","category","property_type"]
out = [f"/{c}/properties.{fmt}?detail=full&limit=1&offset={off}&order={o}"
       for fmt in ("xml", "json") for c in ("au", "nz") for o in orders for off in range(0, 400)]
random.Random(7).shuffle(out)
many = out[:10000]
paths = {"1key": many[:1], "cycled": many,
         "zipf": random.Random(11).choices(many, weights=[1 / (k + 1) ** 1.1 for k in range(len(many))], k=200000)}[sys.argv[2]]
open(sys.argv[1], "w").write("\n".join(paths) + "\n")
PY
ports=() server_pids=()
if [ "$SERVER0" = lp ]; then
  "$work/warm" -base "http://127.0.0.1:$port" -paths <(sort -u "$work/paths") -H "$AUTH" >/dev/null
  ports+=("$port") server_pids+=("$origin_pid")
  # past a fresh process's first page faults, as bench/nginx.sh does (LP_STEADY)
  "${WRK_CPU[@]}" wrk -t1 -c64 -d10s -H "$AUTH" -s bench/paths.lua "http://127.0.0.1:$port" -- "$work/paths" >/dev/null
fi
for n in $(seq $((${#ports[@]} + 1)) 2); do
  p=$(free_port)
  "${SERVER_CPU[@]}" "$work/bareproxy" -listen "127.0.0.1:$p" -origin "http://127.0.0.1:$port" -auth "${AUTH#Authorization: }" >"$work/bare$n.log" 2>&1 &
  pids+=($!) server_pids+=($!)
  wait_port "$p"
  "$work/warm" -base "http://127.0.0.1:$p" -paths <(sort -u "$work/paths") -H "$AUTH" >/dev/null
  ports+=("$p")
done
: >"$work/runs"
rps() { # PORT SECONDS: one run of wrk, its req/s
  local out r
  out=$("${WRK_CPU[@]}" wrk -t1 -c"$CONNS" -d"$2s" -H "$AUTH" -s bench/paths.lua "http://127.0.0.1:$1" -- "$work/paths" 2>&1)
  r=$(awk '/Requests\/sec/ {print $2}' <<<"$out")
  if [ -z "$r" ] || grep -q 'Non-2xx' <<<"$out"; then echo "wrk failed or got non-2xx answers from port $1:" >&2; echo "$out" >&2; exit 1; fi
  echo "$r"
}
# A line a round: "slices" then "blocks" (or the other way round), then the
# runs' req/s in the order they ran, each with the server it measured
# (0 or 1).
for r in $(seq 1 "$ROUNDS"); do
  first=$(( r % 2 )) second=$(( 1 - r % 2 ))
  methods=(slices blocks); [ $(( (r / 2) % 2 )) = 1 ] && methods=(blocks slices)
  for m in "${methods[@]}"; do
    row="$m"
    if [ "$m" = slices ]; then
      for _ in $(seq 1 "$SLICES"); do
        for s in "$first" "$second"; do row+=" $s:$(rps "${ports[s]}" 1)"; done
      done
    else
      for s in "$first" "$second"; do row+=" $s:$(rps "${ports[s]}" "$SLICES")"; done
    fi
    echo "$row" >>"$work/runs"
  done
done
python3 - "$work/runs" "$SERVER0 / bare, $KEYS, $CONNS connections" <<'PY'
import statistics as st, sys
ratios = {"slices": [], "blocks": []}
pairs = []  # consecutive 1 s runs within a round (for the autocorrelation)
for line in open(sys.argv[1]):
    method, *runs = line.split()
    runs = [(int(s), float(v)) for s, v in (x.split(":") for x in runs)]
    sums = [sum(v for s, v in runs if s == k) for k in (0, 1)]
    ratios[method].append(sums[0] / sums[1])
    if method == "slices":
        pairs += [(runs[i][1], runs[i + 1][1]) for i in range(len(runs) - 1)]
xs, ys = [p[0] for p in pairs], [p[1] for p in pairs]
mx, my = st.mean(xs), st.mean(ys)
lag1 = sum((x - mx) * (y - my) for x, y in pairs) / (sum((x - mx) ** 2 for x in xs) * sum((y - my) ** 2 for y in ys)) ** 0.5
print(f"lag-1 autocorrelation of 1 s runs' req/s within a round: {lag1:.2f} ({len(pairs)} pairs)")
print(f"{'method':<8} {'median':>7} {'sd':>6} {'q1-q3':>12}   (server 0 / server 1: {sys.argv[2]}; {len(ratios['slices'])} rounds)")
for m, v in ratios.items():
    q = st.quantiles(v, n=4)
    print(f"{m:<8} {st.median(v):>7.3f} {st.pstdev(v):>6.3f} {q[0]:>5.3f}-{q[2]:.3f}")
PY
# The profiles (PERF seconds of each server under the rounds' load).
[ "$PERF" = 0 ] && exit 0
for i in 0 1; do
  perf record -q -e cpu-clock -F 2000 -g -C 0 -o "$work/perf.$i" -- sleep "$PERF" >/dev/null 2>&1 &
  rec=$!
  "${WRK_CPU[@]}" wrk -t1 -c"$CONNS" -d"${PERF}s" -H "$AUTH" -s bench/paths.lua "http://127.0.0.1:${ports[i]}" -- "$work/paths" >/dev/null
  wait "$rec" || true
  echo
  echo "server $i ($([ "$i" = 0 ] && echo "$SERVER0" || echo bare), pid ${server_pids[i]}): its samples by kind of code, then its top symbols"
  perf report -i "$work/perf.$i" --pid "${server_pids[i]}" --no-children --sort sym -g none --stdio 2>/dev/null |
    python3 -c '
import re, sys
rows = [(float(m.group(1)), m.group(2), m.group(3).strip()) for m in
        (re.match(r"\s*([\d.]+)%\s+\[(.)\]\s+(.*)$", l) for l in sys.stdin) if m]
kinds = {"kernel": lambda k, s: k == "k",
         "listingproxy (bench/bare is the bare handler)": lambda k, s: "listingproxy/" in s and "onewrite" not in s,
         "net/http, bufio, textproto": lambda k, s: any(x in s for x in ("net/http", "bufio", "textproto")),
         "runtime": lambda k, s: s.startswith("runtime") or "internal/runtime" in s}
for name, f in kinds.items():
    print("  %6.2f%%  %s" % (sum(p for p, k, s in rows if f(k, s)), name))
for p, k, s in rows[:25]:
    print("  %6.2f%%  [%s] %s" % (p, k, s[:110]))
'
done
