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
#   SERVER0=lp BASE=main KEYS=zipf CONNS=256 bash bench/drift.sh
#                                                 # server 1 is listingproxy too, built from the git
#                                                 # revision BASE: a change's own effect on lp's hits
#   PERF=20 SERVER0=lp KEYS=zipf CONNS=256 bash bench/drift.sh
#                                                 # then a CPU profile of both servers under the same
#                                                 # load, 20 alternate 1 s runs each in one recording
#                                                 # (perf record -e cpu-clock on CPU 0): each one's
#                                                 # samples per request by kind of code, and the
#                                                 # symbols where they differ most
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
BASE=${BASE:-}
[[ $PERF =~ ^[0-9]+$ ]] || { echo "PERF must be a whole number of seconds, not '$PERF'" >&2; exit 2; }
[ "$PERF" = 0 ] || command -v perf >/dev/null || { echo "PERF needs perf (Debian: linux-perf)" >&2; exit 2; }
case $SERVER0 in bare|lp) ;; *) echo "SERVER0 must be bare or lp, not '$SERVER0'" >&2; exit 2 ;; esac
if [ -n "$BASE" ]; then
  [ "$SERVER0" = lp ] || { echo "BASE needs SERVER0=lp (server 1 is then listingproxy at BASE)" >&2; exit 2; }
  git rev-parse -q --verify "$BASE^{commit}" >/dev/null || { echo "BASE '$BASE' is not a git revision here" >&2; exit 2; }
fi
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
if [ -n "$BASE" ]; then
  mkdir "$work/base"
  git archive "$BASE" | tar -x -C "$work/base"
  (cd "$work/base" && go build -o "$work/listingproxy-base" ./cmd/listingproxy)
fi

AUTH="Authorization: Basic $(printf 'harbour:harbour-demo' | base64)"
port=$(free_port)
edits=('s|^\(  max_bytes:\).*|\1 2GiB|' 's|^\(  ttl:\).*|\1 2h|')
lp_config config.yaml "$work/origin.yaml" "$port" off "$work/origin.db" "${edits[@]}"
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
if [ -n "$BASE" ]; then
  p=$(free_port)
  lp_config config.yaml "$work/base.yaml" "$p" off "$work/base.db" "${edits[@]}"
  "${SERVER_CPU[@]}" "$work/listingproxy-base" -config "$work/base.yaml" >"$work/base.log" 2>&1 &
  pids+=($!) server_pids+=($!)
  wait_port "$p"
  "$work/warm" -base "http://127.0.0.1:$p" -paths <(sort -u "$work/paths") -H "$AUTH" >/dev/null
  "${WRK_CPU[@]}" wrk -t1 -c64 -d10s -H "$AUTH" -s bench/paths.lua "http://127.0.0.1:$p" -- "$work/paths" >/dev/null
  ports+=("$p")
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
python3 - "$work/runs" "$SERVER0 / ${BASE:+lp at }${BASE:-bare}, $KEYS, $CONNS connections" <<'PY'
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
# The profiles: both servers under the rounds' load in PERF alternate 1 s
# wrk runs each (as the slices), in one recording of CPU 0, so that a
# drift of the machine's speed weighs on both alike; each server's samples
# are divided by the requests it answered in its runs.
[ "$PERF" = 0 ] && exit 0
perf record -q -e cpu-clock -F 2000 -g -C 0 -o "$work/perf.data" -- sleep $((2 * PERF + 5)) >/dev/null 2>&1 &
rec=$!
sleep 1
: >"$work/perf.reqs"
for _ in $(seq 1 "$PERF"); do
  for i in 0 1; do
    out=$("${WRK_CPU[@]}" wrk -t1 -c"$CONNS" -d1s -H "$AUTH" -s bench/paths.lua "http://127.0.0.1:${ports[i]}" -- "$work/paths")
    echo "$i $(awk '/requests in/ {print $1}' <<<"$out")" >>"$work/perf.reqs"
  done
done
wait "$rec" || true
# Each server's threads: perf report's filters (--pid, --comm) apply after
# it has merged the samples of one symbol across processes (every kernel
# symbol), so the samples are sorted by thread and symbol and summed here.
for i in 0 1; do ls "/proc/${server_pids[i]}/task" | sed "s/^/$i /"; done >"$work/perf.tids"
perf report -i "$work/perf.data" --no-children --sort pid,sym -g none --stdio -n 2>/dev/null >"$work/perf.txt"
python3 - "$work" "$SERVER0" "${BASE:+lp at }${BASE:-bare}" <<'PY'
import re, sys
work, names = sys.argv[1], sys.argv[2:]
reqs = [0, 0]
for line in open(f"{work}/perf.reqs"):
    i, n = line.split()
    reqs[int(i)] += int(n)
server = {tid: int(i) for i, tid in (l.split() for l in open(f"{work}/perf.tids"))}
rows = [{}, {}]  # per server: (kind of line, symbol) -> samples
for l in open(f"{work}/perf.txt"):
    m = re.match(r"\s*[\d.]+%\s+(\d+)\s+(\d+):\S*\s+\[(.)\]\s+(.*)$", l)
    if m and m.group(2) in server:
        r, k = rows[server[m.group(2)]], (m.group(3), m.group(4).strip())
        r[k] = r.get(k, 0) + int(m.group(1))
ns = [{k: v * 5e5 / reqs[i] for k, v in rows[i].items()} for i in (0, 1)]  # a sample is 500 us at 2000 Hz
kinds = {"kernel": lambda k, s: k == "k",
         "listingproxy (bench/bare is the bare handler)": lambda k, s: "listingproxy/" in s and "onewrite" not in s,
         "net/http, bufio, textproto": lambda k, s: any(x in s for x in ("net/http", "bufio", "textproto")),
         "runtime": lambda k, s: s.startswith("runtime") or "internal/runtime" in s}
print()
print(f"CPU 0's samples per request, in ns (server 0: {names[0]}, {reqs[0]} requests; server 1: {names[1]}, {reqs[1]})")
print(f"  {'':<48} {'server 0':>9} {'server 1':>9} {'0 - 1':>8}")
tot = [sum(n.values()) for n in ns]
print(f"  {'all':<48} {tot[0]:>9.0f} {tot[1]:>9.0f} {tot[0] - tot[1]:>+8.0f}")
for name, f in kinds.items():
    v = [sum(x for (k, s), x in n.items() if f(k, s)) for n in ns]
    print(f"  {name:<48} {v[0]:>9.0f} {v[1]:>9.0f} {v[0] - v[1]:>+8.0f}")
keys = set(ns[0]) | set(ns[1])
diff = sorted(keys, key=lambda x: ns[0].get(x, 0) - ns[1].get(x, 0), reverse=True)
print("the symbols server 0 spends most more on, then most less:")
for x in diff[:20] + diff[-8:]:
    a, b = ns[0].get(x, 0), ns[1].get(x, 0)
    print(f"  {a - b:>+6.0f}  ({a:>5.0f} {b:>5.0f})  [{x[0]}] {x[1][:90]}")
own = kinds["listingproxy (bench/bare is the bare handler)"]
for i in (0, 1):
    top = sorted(((v, s) for (k, s), v in ns[i].items() if own(k, s)), reverse=True)[:12]
    print(f"server {i}'s own code ({names[i]}), ns a request: " + ", ".join(f"{s.removeprefix('listingproxy/')[:60]} {v:.0f}" for v, s in top))
PY
