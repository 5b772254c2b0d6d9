#!/usr/bin/env bash
# Instructions and simulated cache misses per cache hit, from valgrind's
# callgrind: listingproxy on the demo runs under callgrind with
# instrumentation off while it starts and takes WARMUP of wrk hits, then
# instrumentation is switched on for DURATION of wrk hits and the counts are
# dumped. The counts are the server's user-space instructions and its
# simulated D1/LL misses (the kernel is not counted), divided by the hits wrk
# completed in that window: they do not depend on the machine's load, unlike
# CPU time. The second table sums the instructions by package (runtime
# functions of the allocator and of the collector apart).
#
#   bash bench/callgrind-hit.sh                          # 64 connections, 60s, LL = 32 MiB (this VM's L3)
#   CONNECTIONS=256 LL=524288,8,64 bash bench/callgrind-hit.sh   # LL sized as one core's L2
#   ENV='GOGC=100' bash bench/callgrind-hit.sh           # environment of the server
#   URL_PATH='/au/properties.xml?detail=full&limit=22' bash bench/callgrind-hit.sh
#   HEADER='Accept-Encoding: gzip' bash bench/callgrind-hit.sh   # one more request header (the stored gzip form)
#   DUMP=/tmp/c64.cg bash bench/callgrind-hit.sh         # keep callgrind's dump (callgrind_annotate it)
#   SERVER=bare bash bench/callgrind-hit.sh              # bench/cmd/bareproxy (the net/http ceiling) under callgrind instead,
#                                                        # filled from a native listingproxy: the same bytes, net/http's share alone
#
# Under valgrind a hit is ~100 times slower (~300 hits a second), so the
# window holds ~20,000 hits in 60 s; wrk's timeout is raised to 60 s so that
# no connection is dropped and reopened (256 connections wait ~1 s a hit). valgrind hides SHA-NI from the program,
# so crypto/sha256 (the memo of verified Authorization headers) counts its
# AVX2 code here, several times the instructions it takes natively.
# callgrind asserts on the runtime's preemption signals, so the server runs
# with GODEBUG=asyncpreemptoff=1 (added to ENV).
set -euo pipefail
cd "$(dirname "$0")/.."
CONNECTIONS=${CONNECTIONS:-64}
DURATION=${DURATION:-60s}
WARMUP=${WARMUP:-10s}
LL=${LL:-33554432,16,64}
URL_PATH=${URL_PATH:-/au/properties/1.xml}
ENV=${ENV:-}
HEADER=${HEADER:-}
SERVER=${SERVER:-listingproxy}
case "$SERVER" in listingproxy|bare) ;; *) echo "SERVER must be listingproxy or bare, not $SERVER" >&2; exit 2;; esac
BENCH_TIMEOUT=${BENCH_TIMEOUT:-900}
for t in valgrind wrk; do command -v $t >/dev/null || { echo "needs $t" >&2; exit 2; }; done
. bench/lib.sh
bench_start
export WAIT_SECONDS=${WAIT_SECONDS:-300} # wait_port: listingproxy takes minutes to start under valgrind
go build -o "$work/listingproxy" ./cmd/listingproxy
go build -o "$work/bareproxy" ./bench/cmd/bareproxy
port=$(free_port)
lp_config config.yaml "$work/config.yaml" "$port" off "$work/demo.db" 's|^\(  ttl:\).*|\1 2h|'
# Seed the demo database natively first: under valgrind it would take minutes.
"$work/listingproxy" -config "$work/config.yaml" >"$work/seed.log" 2>&1 &
seed=$!
wait_port "$port"
kill "$seed"; wait "$seed" 2>/dev/null || true
AUTH="Authorization: Basic $(printf 'harbour:harbour-demo' | base64)"
server=("$work/listingproxy" -config "$work/config.yaml")
if [ "$SERVER" = bare ]; then
  # listingproxy natively as the origin; bareproxy under callgrind in front.
  "$work/listingproxy" -config "$work/config.yaml" >"$work/origin.log" 2>&1 &
  pids+=($!)
  wait_port "$port"
  origin=$port port=$(free_port)
  server=("$work/bareproxy" -listen "127.0.0.1:$port" -origin "http://127.0.0.1:$origin" -auth "${AUTH#Authorization: }")
fi
# shellcheck disable=SC2086 # ENV is a word list on purpose
env GODEBUG=asyncpreemptoff=1 $ENV valgrind --tool=callgrind --cache-sim=yes --instr-atstart=no --LL="$LL" \
  --callgrind-out-file="$work/cg.out" "${server[@]}" >"$work/server.log" 2>&1 &
vg=$!
pids+=("$vg")
wait_port "$port"
URL="http://127.0.0.1:$port$URL_PATH"
hdr=(-H "$AUTH"); [ -n "$HEADER" ] && hdr+=(-H "$HEADER")
curl -fsS "${hdr[@]}" "$URL" -o /dev/null
wrk -t1 -c"$CONNECTIONS" -d"$WARMUP" --timeout 60s "${hdr[@]}" "$URL" >/dev/null
callgrind_control -i on "$vg" >/dev/null 2>&1
out=$(wrk -t1 -c"$CONNECTIONS" -d"$DURATION" --timeout 60s "${hdr[@]}" "$URL")
callgrind_control -d "$vg" >/dev/null 2>&1
callgrind_control -i off "$vg" >/dev/null 2>&1
if grep -qE 'Non-2xx|Socket errors' <<<"$out"; then
  # A timed-out connection is reopened: its new goroutine and buffers would count as hits' work.
  echo "non-2xx answers or socket errors:" >&2; echo "$out" >&2; exit 1
fi
n=$(awk '/requests in/ {print $1}' <<<"$out")
dump=$(ls "$work"/cg.out.* | head -n1)
[ -n "${DUMP:-}" ] && cp "$dump" "$DUMP"
printf '%s: %s, %s connections, %s hits in %s, LL %s%s%s\n' "$SERVER" "$URL_PATH" "$CONNECTIONS" "$n" "$DURATION" "$LL" "${ENV:+, $ENV}" "${HEADER:+, $HEADER}"
callgrind_annotate "$dump" 2>/dev/null | grep 'PROGRAM TOTALS' | tr -d ',' | awk -v n="$n" '
  {printf "per hit: Ir %.0f  Dr %.0f  Dw %.0f  I1mr %.1f  D1mr %.1f  D1mw %.1f  LLmr %.2f  LLmw %.2f\n",
    $1/n, $3/n, $5/n, $7/n, $9/n, $11/n, ($13+$15)/n, $17/n}'
callgrind_annotate --threshold=100 --inclusive=no --auto=no "$dump" 2>/dev/null | python3 -c '
import re, sys, collections
n = float(sys.argv[1]); text = sys.stdin.read(); text = text[text.index("file:function"):]
by = collections.Counter()
for line in text.split("\n"):
    m = re.match(r"\s*([\d,]+) \(\s*[\d.]+%\).*?\S+\.(?:go|s|c|S):(\S+)", line)
    if not m: continue
    f = m.group(2)
    pkg = re.sub(r"\.[^/]*$", "", f) if f.startswith("listingproxy/") else f.split(".")[0].split("(")[0]
    if pkg == "runtime" and re.search(r"malloc|nextFree|heapBits|HeapBits", f): pkg = "runtime (allocator)"
    elif pkg == "runtime" and re.search(r"gc|GC|scan|mark|sweep|typePointers|greentea", f): pkg = "runtime (collector)"
    by[pkg] += int(m.group(1).replace(",", ""))
tot = sum(by.values())
print("instructions per hit by package (top 20):")
for k, v in by.most_common(20): print("  %6.0f %5.1f%%  %s" % (v / n, 100 * v / tot, k))
' "$n"
