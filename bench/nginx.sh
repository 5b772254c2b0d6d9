#!/usr/bin/env bash
# listingproxy's cache hits next to nginx proxy_cache and Varnish serving the
# same bytes, and listingproxy's CPU per cache miss (docs/performance.md).
#
#   bash bench/nginx.sh                    # every case, ROUNDS=8 of DURATION=3s (about 40 minutes)
#   CASES='2KB/identity/c64/1key' bash bench/nginx.sh
#   MODE=miss bash bench/nginx.sh          # CPU per miss by shape (listingproxy only)
#   LP_STEADY=0 bash bench/nginx.sh        # skip the hits that take listingproxy past its first collection
#   PROCS=1 bash bench/nginx.sh            # one listingproxy and one bareproxy process instead of four
#   SLICES=1 bash bench/nginx.sh           # listingproxy and bareproxy in one block of DURATION each a round
#   ROUNDS_OUT=/tmp/r bash bench/nginx.sh  # also keep each round's figures (/tmp/r.CASE, / in CASE as _)
#
# Setup. listingproxy runs on the demo (SQLite) with authentication on and the
# access log off. nginx (proxy_cache) and Varnish run in front of it as their
# origin: they fill their caches from listingproxy, so every server holds the
# very same bytes for the same URL (status, body, ETag...). The caches are
# warmed with every key of a case before it is measured, so the origin is not
# involved in what is measured. Each checks Basic authentication on every
# request as cheaply as it can (nginx: a map of the exact Authorization value;
# Varnish: a string comparison in VCL; listingproxy: its memo of verified
# headers), and keys its cache on the Authorization header, like listingproxy.
# nginx and Varnish are installed from Debian packages when missing and run in
# the foreground on free loopback ports; every process is stopped by PID.
# A fourth server, bench/cmd/bareproxy, is the net/http ceiling: a caching
# proxy on net/http that does nothing per hit but compare the Authorization
# header, look its map up and write the stored answer, with listingproxy's
# server limits and one-write connections. lp/bare is what listingproxy's
# handler costs on top of net/http; bare/nginx is how far net/http itself is
# from nginx on the case (a target above it is out of reach for any handler).
#
# Measurement. The four servers are pinned to CPU 0, wrk to CPU 1 (with
# taskset and 2+ CPUs). Each round measures the four back to back (wrk, a Lua
# script cycling through the case's paths); the ratios printed are the medians
# of the per-round ratios, so slow drifts of a shared VM's speed cancel out.
# The order changes from round to round so that every server runs in every
# place equally often (in a fixed order two identical listingproxy processes
# came out 3-5% apart in bench/lp-bare.sh, the first one slower;
# bench/NOTES.md). ORDER=pairs, the default, runs rounds of lp bare nginx
# Varnish, bare lp Varnish nginx, nginx Varnish lp bare, Varnish nginx bare
# lp: each server in each place once in four rounds, and listingproxy and
# bare always back to back, so that lp/bare, the ratio the hit target is
# set on, compares two runs a few seconds apart rather than up to three
# slots apart. In their place the two alternate in SLICES runs of wrk each
# (default 3, DURATION/SLICES long: lp bare lp bare lp bare, or bare first
# in the rounds where bare comes first), and a server's figures in the
# round are the sums over its slices. A shared VM's speed drifts over
# seconds, so slices a second apart see nearly the same machine where two
# 3 s blocks do not: with two identical bareproxy processes
# (bench/drift.sh, 40 rounds) a 1 s run's req/s correlated 0.91 with the
# next one's, and the per-round ratio's standard deviation was 0.054 with
# three alternate 1 s slices each against 0.071 with one 3 s block each
# (quartiles 0.985-1.017 against 0.977-1.035); with listingproxy beside
# bare the two methods gave the same median within 0.01 (bench/NOTES.md,
# "lp and bare in alternate slices"). With ORDER=rotate or fixed, the pair is
# measured at the place of whichever of the two comes first. ORDER=rotate starts round r r-1 places later in the order lp,
# nginx, Varnish, bare; ORDER=fixed keeps that order in every round. A
# median of an even number of rounds is the mean of the middle two; the
# lp/bare column is followed by the lower and upper quartiles of its
# per-round ratios (the spread the median was taken from).
# listingproxy and bareproxy run as PROCS processes each (default 4), and
# round r measures the ((r-1) mod PROCS)-th of each (nginx and Varnish fill
# from the first listingproxy): two processes of one binary differ by ~3.5%
# in req/s however many rounds they run (where their heaps and stacks land),
# so with one process each a case's lp/bare carried that term whole; over
# four it averages (a control, the same binary as both servers in
# bench/lp-bare.sh, came out within 1.5% of 1.00; bench/NOTES.md).
# CPU µs per request is the server's user+system time (/proc, every process of
# the server) divided by the requests wrk completed, median over the rounds.
#
# Cases: body 2KB (a one-property full list or a single property) or 45KB (a
# 22-property full list); encoding identity or gzip (Accept-Encoding: gzip:
# every server answers with a gzip body it stored once); 64 or 256
# connections; 1 key, 10,000 keys cycled in order, or 10,000 keys drawn from a
# Zipf distribution (s=1.1).
#
# Miss mode: distinct, never cached URLs against listingproxy alone, CPU per
# miss for each shape (20-property full list, 1-property list, single
# property), each URL asked once.
set -euo pipefail
cd "$(dirname "$0")/.."
repo=$PWD
DURATION=${DURATION:-3s}
ROUNDS=${ROUNDS:-8}
KEYS=${KEYS:-10000}
MODE=${MODE:-hit}
CASES=${CASES:-}
PROCS=${PROCS:-4}
[[ $PROCS =~ ^[1-9][0-9]*$ ]] || { echo "PROCS must be a positive whole number, not '$PROCS'" >&2; exit 2; }
SLICES=${SLICES:-3}
[[ $SLICES =~ ^[1-9][0-9]*$ ]] || { echo "SLICES must be a positive whole number, not '$SLICES'" >&2; exit 2; }
if [ "$MODE" = hit ] && { ! [[ $DURATION =~ ^([1-9][0-9]*)s$ ]] || (( ${BASH_REMATCH[1]} % SLICES != 0 )); }; then
  echo "DURATION must be whole seconds (e.g. 3s) that SLICES=$SLICES divides, not '$DURATION'" >&2; exit 2
fi
SLICE=$(( ${DURATION%s} / SLICES ))s  # hit mode only
ROUNDS_OUT=${ROUNDS_OUT:-}
ORDER=${ORDER:-pairs}  # pairs: lp and bare back to back (see above); rotate: round r starts r-1 places later; fixed: lp, nginx, Varnish, bare

need() { command -v "$1" >/dev/null || { echo "installing $2 (apt-get)"; (apt-get update -qq && apt-get install -y -qq "$2") >/dev/null; }; }
need wrk wrk
need python3 python3
. bench/lib.sh # bench_start, bench_pin, free_port, wait_port, lp_config
if [ "$MODE" = hit ]; then need nginx nginx-light; need varnishd varnish; fi

bench_pin # SERVER_CPU, WRK_CPU
THREADS=2
[ ${#WRK_CPU[@]} -eq 0 ] || THREADS=1 # wrk on its own CPU
BENCH_TIMEOUT=${BENCH_TIMEOUT:-10800} # a watchdog against a hang; the full run takes 45-90 min
bench_start # work, pids, cleanup
chmod 755 "$work" # varnishd reads its VCL as an unprivileged user

go build -o "$work/listingproxy" ./cmd/listingproxy
go build -o "$work/warm" ./bench/cmd/warm
go build -o "$work/bareproxy" ./bench/cmd/bareproxy

# listingproxy: the demo, a cache large enough for 10,000 45KB bodies, entries
# that stay fresh for the whole run, errors-only log. In hit mode PROCS
# processes, each with a database of its own (see Measurement at the top);
# the first (LP) is the origin of nginx, Varnish and bare, and miss mode's
# only one.
LPS=() LP_PIDS=()
for n in $(seq 1 "$([ "$MODE" = hit ] && echo "$PROCS" || echo 1)"); do
  port=$(free_port)
  lp_config config.yaml "$work/config$n.yaml" "$port" off "$work/demo$n.db" 's|^\(  max_bytes:\).*|\1 2GiB|' 's|^\(  ttl:\).*|\1 2h|'
  "${SERVER_CPU[@]}" "$work/listingproxy" -config "$work/config$n.yaml" >"$work/lp$n.log" 2>&1 &
  pids+=($!); LPS+=("$port") LP_PIDS+=("$!")
  wait_port "$port" "lp$n"
done
LP=${LPS[0]} LP_PID=${LP_PIDS[0]}

CRED=$(printf 'harbour:harbour-demo' | base64)
AUTH="Authorization: Basic $CRED"
GZIP="Accept-Encoding: gzip"


# Paths. Every property list in full detail, ordered by one of eleven fields,
# from every offset, in both countries: thousands of distinct cache keys.
python3 - "$work" "$KEYS" <<'PY'
import random, sys
work, keys = sys.argv[1], int(sys.argv[2])
orders = ["id","agency_id","status","approved","last_updated","price","bedrooms","bathrooms","suburb","category","property_type"]
def lists(limit, n):
    out = []
    for fmt in ("xml", "json"):
        for c in ("au", "nz"):
            for o in orders:
                for off in range(0, 400 - limit + 1):
                    out.append(f"/{c}/properties.{fmt}?detail=full&limit={limit}&offset={off}&order={o}")
    random.Random(7).shuffle(out)
    if len(out) < n:
        sys.exit(f"only {len(out)} distinct paths for limit={limit}")
    return out[:n]
def write(name, paths):
    with open(f"{work}/{name}", "w") as f:
        f.write("\n".join(paths) + "\n")
def zipf(paths, s=1.1, n=200000):
    w = [1 / (k + 1) ** s for k in range(len(paths))]
    return random.Random(11).choices(paths, weights=w, k=n)
for body, limit in (("2KB", 1), ("45KB", 22)):
    many = lists(limit, keys)
    write(f"{body}.1key", [many[0]])
    write(f"{body}.cycled", many)
    write(f"{body}.zipf", zipf(many))
# Miss mode: shapes asked once each.
write("miss.list20", lists(20, 12000))
write("miss.list1", lists(1, 12000))
write("miss.single", [f"/{c}/properties/{i}.{f}" for f in ("xml", "json") for c in ("au", "nz") for i in range(1, 401)])
PY

cpu_ticks() { # sum of utime+stime of the given pids
  local t=0 p
  for p in "$@"; do [ -r "/proc/$p/stat" ] && t=$((t + $(awk '{print $14+$15}' "/proc/$p/stat"))); done
  echo "$t"
}
median() { sort -g | awk '{a[NR]=$1} END {print (NR % 2) ? a[(NR+1)/2] : (a[NR/2] + a[NR/2+1]) / 2}'; }
quartiles() { # "q1-q3" of the values on stdin (the medians of the lower and upper halves)
  sort -g | awk '{a[NR]=$1}
    function med(lo, hi,  n) { n = hi - lo + 1; return (n % 2) ? a[lo + (n-1)/2] : (a[lo + n/2 - 1] + a[lo + n/2]) / 2 }
    END {h = int(NR/2); if (NR < 2) printf "%.2f-%.2f", a[1], a[1]; else printf "%.2f-%.2f", med(1, h), med(NR - h + 1, NR)}'
}
HZ=$(getconf CLK_TCK)

# run LENGTH URLBASE PATHSFILE CONNS ENCODING PIDS... -> "requests seconds ticks":
# one run of wrk for LENGTH: the requests it completed, the seconds they
# took by wrk's clock, and the CPU ticks of the PIDS meanwhile
run() {
  local length=$1 base=$2 paths=$3 conns=$4 enc=$5; shift 5
  local hdr=(-H "$AUTH"); [ "$enc" = gzip ] && hdr+=(-H "$GZIP")
  local t0 t1 out n rps
  t0=$(cpu_ticks "$@")
  out=$("${WRK_CPU[@]}" wrk -t"$THREADS" -c"$conns" -d"$length" "${hdr[@]}" -s bench/paths.lua "$base" -- "$paths" 2>&1)
  t1=$(cpu_ticks "$@")
  n=$(awk '/requests in/ {print $1}' <<<"$out"); rps=$(awk '/Requests\/sec/ {print $2}' <<<"$out")
  if [ -z "$n" ] || [ -z "$rps" ] || grep -q 'Non-2xx' <<<"$out"; then echo "wrk failed or got non-2xx answers from $base:" >&2; echo "$out" >&2; exit 1; fi
  awk -v n="$n" -v r="$rps" -v t="$((t1 - t0))" 'BEGIN {printf "%s %.6f %s\n", n, n / r, t}'
}

# per "requests seconds ticks"... -> "req/s cpu_us": the sums' requests a
# second and CPU µs a request
per() { awk -v hz="$HZ" '{for (i = 1; i <= NF; i += 3) {n += $i; s += $(i+1); t += $(i+2)}} END {printf "%.2f %.1f\n", n / s, t / hz * 1e6 / n}' <<<"$*"; }

# measure URLBASE PATHSFILE CONNS ENCODING PIDS... -> "req/s cpu_us" of one run of DURATION
measure() { per "$(run "$DURATION" "$@")"; }

if [ "$MODE" = miss ]; then
  printf '\n%-8s %10s %12s   (listingproxy, distinct uncached URLs, %s rounds of %s, 8 connections)\n' shape req/s "cpu µs/miss" "$ROUNDS" "$DURATION"
  for shape in list20 list1 single; do
    : >"$work/m.rps"; : >"$work/m.cpu"
    for r in $(seq 1 "$ROUNDS"); do
      # Each round gets its own slice of never-asked paths.
      total=$(wc -l <"$work/miss.$shape"); per=$((total / ROUNDS))
      sed -n "$(( (r - 1) * per + 1 )),$(( r * per ))p" "$work/miss.$shape" >"$work/m.paths"
      read -r rps cpu < <(measure "http://127.0.0.1:$LP" "$work/m.paths" 8 identity "$LP_PID")
      echo "$rps" >>"$work/m.rps"; echo "$cpu" >>"$work/m.cpu"
    done
    printf '%-8s %10.0f %12.1f\n' "$shape" "$(median <"$work/m.rps")" "$(median <"$work/m.cpu")"
  done
  echo "(a URL asked twice within a run would be a hit: per-round slices have $(( $(wc -l <"$work/miss.list20") / ROUNDS )) paths; if req/s × duration exceeds that, raise the counts)"
  exit 0
fi

# listingproxy's steady state. A freshly started listingproxy's heap grows
# through memory it has never touched until its first collections: until
# then hits take page faults (a zeroed 4 KB page each), a cost a long-running
# server no longer pays (bench/NOTES.md, "Testing those hypotheses"; under
# GOGC=off, serve's setting until 2026-11-28, that first pass lasted until
# the heap reached the 3 GiB memory limit). So, before any case, one-key 2 KB
# hits until listingproxy's minor page faults fall below 0.01 per hit, for at
# most LP_STEADY seconds (0: skip). nginx and Varnish reuse their memory from the start.
LP_STEADY=${LP_STEADY:-180}
faults() { awk '{print $10}' "/proc/$1/stat"; }
if [ "$LP_STEADY" != 0 ]; then
  for i in "${!LPS[@]}"; do
    "$work/warm" -base "http://127.0.0.1:${LPS[i]}" -paths "$work/2KB.1key" -H "$AUTH"
    start=$SECONDS rate=unknown
    while [ $((SECONDS - start)) -lt "$LP_STEADY" ]; do
      f0=$(faults "${LP_PIDS[i]}")
      out=$("${WRK_CPU[@]}" wrk -t"$THREADS" -c64 -d2s -H "$AUTH" -s bench/paths.lua "http://127.0.0.1:${LPS[i]}" -- "$work/2KB.1key" 2>&1)
      f1=$(faults "${LP_PIDS[i]}")
      n=$(awk '/requests in/ {print $1}' <<<"$out")
      [ -n "$n" ] || { echo "wrk failed against listingproxy:" >&2; echo "$out" >&2; exit 1; }
      rate=$(awk -v f="$((f1 - f0))" -v n="$n" 'BEGIN {printf "%.3f", f / n}')
      if awk -v r="$rate" 'BEGIN {exit !(r < 0.01)}'; then break; fi
    done
    echo "listingproxy $((i + 1)): $rate page faults per hit after $((SECONDS - start))s of one-key hits (steady below 0.01; LP_STEADY=$LP_STEADY)"
  done
fi

# nginx: proxy_cache in front of listingproxy, one worker, auth by exact header.
NG=$(free_port)
mkdir -p "$work/nginx/cache" "$work/nginx/tmp"
cat >"$work/nginx/nginx.conf" <<EOF
worker_processes 1;
daemon off;
pid $work/nginx/nginx.pid;
error_log $work/nginx/error.log error;
events { worker_connections 4096; }
http {
  access_log off;
  client_body_temp_path $work/nginx/tmp; proxy_temp_path $work/nginx/tmp;
  fastcgi_temp_path $work/nginx/tmp; uwsgi_temp_path $work/nginx/tmp; scgi_temp_path $work/nginx/tmp;
  proxy_cache_path $work/nginx/cache levels=1:2 keys_zone=lp:64m max_size=4g inactive=2h use_temp_path=off;
  map \$http_authorization \$auth_ok { "Basic $CRED" 1; default 0; }
  server {
    listen 127.0.0.1:$NG;
    keepalive_requests 1000000;
    location / {
      if (\$auth_ok = 0) { return 401; }
      proxy_pass http://127.0.0.1:$LP;
      proxy_http_version 1.1;
      proxy_set_header Connection "";
      proxy_cache lp;
      proxy_cache_key "\$http_authorization|\$http_accept_encoding|\$request_uri";
      proxy_cache_valid 200 2h;
      proxy_ignore_headers Vary;
      add_header X-Cache-Status \$upstream_cache_status;
    }
  }
}
EOF
"${SERVER_CPU[@]}" nginx -c "$work/nginx/nginx.conf" -p "$work/nginx" &
pids+=($!); NG_MASTER=$!
wait_port "$NG" nginx/error
NG_PIDS=("$NG_MASTER" $(pgrep -P "$NG_MASTER" || true))

# Varnish: a malloc store, hashing on the Authorization and Accept-Encoding
# headers too; the builtin VCL would pass every request with Authorization.
VA=$(free_port)
cat >"$work/default.vcl" <<EOF
vcl 4.1;
backend lp { .host = "127.0.0.1"; .port = "$LP"; }
sub vcl_recv {
  if (req.http.Authorization != "Basic $CRED") { return (synth(401)); }
  return (hash);
}
sub vcl_hash { hash_data(req.http.Authorization); }
sub vcl_backend_response { set beresp.ttl = 2h; unset beresp.http.Vary; return (deliver); }
EOF
"${SERVER_CPU[@]}" varnishd -F -a "127.0.0.1:$VA" -f "$work/default.vcl" -n "$work/varnish" -s malloc,3g \
  -p thread_pools=1 >"$work/varnish.log" 2>&1 &
pids+=($!); VA_MASTER=$!
wait_port "$VA" varnish
va_pids() { echo "$VA_MASTER" $(pgrep -P "$VA_MASTER" || true); }

# The net/http ceiling (see the top of this file).
BAS=() BA_PIDS=()
for n in $(seq 1 "$PROCS"); do
  port=$(free_port)
  "${SERVER_CPU[@]}" "$work/bareproxy" -listen "127.0.0.1:$port" -origin "http://127.0.0.1:$LP" -auth "Basic $CRED" >"$work/bare$n.log" 2>&1 &
  pids+=($!); BAS+=("$port") BA_PIDS+=("$!")
  wait_port "$port" "bare$n"
done

printf '\n%-28s %9s %9s %9s %9s  %7s %7s %7s %7s  %6s %6s %6s %6s  %-9s   (median of %s rounds of %s, order %s)\n' \
  case lp-req/s nginx varnish bare lp-µs ng-µs va-µs ba-µs lp/ng lp/va lp/ba ba/ng "lp/ba q1-q3" "$ROUNDS" "$DURATION" "$ORDER, lp and bare in $SLICES slices, $PROCS processes each"
for body in 2KB 45KB; do
  for enc in identity gzip; do
    for conns in 64 256; do
      for keys in 1key cycled zipf; do
        name="$body/$enc/c$conns/$keys"
        if [ -n "$CASES" ] && ! grep -qw -- "$name" <<<"$CASES"; then continue; fi
        paths="$work/$body.$keys"
        warmhdr=(-H "$AUTH"); [ "$enc" = gzip ] && warmhdr+=(-H "$GZIP")
        for port in "${LPS[@]}" "$NG" "$VA" "${BAS[@]}"; do          # fill each cache with the case's keys
          "$work/warm" -base "http://127.0.0.1:$port" -paths <(sort -u "$paths") "${warmhdr[@]}"
        done
        p1=$(head -1 "$paths")                                 # and check that each now answers it from its cache
        for port in "${LPS[@]}"; do
          curl -fsS -o /dev/null -D - "${warmhdr[@]}" "http://127.0.0.1:$port$p1" | grep -qi '^Cache-Status: listingproxy; hit' || { echo "$name: listingproxy on $port did not hit"; exit 1; }
        done
        curl -fsS -o /dev/null -D - "${warmhdr[@]}" "http://127.0.0.1:$NG$p1" | grep -qi '^X-Cache-Status: HIT' || { echo "$name: nginx did not hit"; exit 1; }
        curl -fsS -o /dev/null -D - "${warmhdr[@]}" "http://127.0.0.1:$VA$p1" | grep -qiE '^X-Varnish: [0-9]+ [0-9]+' || { echo "$name: varnish did not hit"; exit 1; }
        for port in "${BAS[@]}"; do
          curl -fsS -o /dev/null -D - "${warmhdr[@]}" "http://127.0.0.1:$port$p1" | grep -qi '^X-Cache-Status: HIT' || { echo "$name: bare on $port did not hit"; exit 1; }
        done
        for f in lp ng va ba r_ng r_va r_ba r_bang; do : >"$work/$f.rps"; : >"$work/$f.cpu"; done
        : >"$work/rounds"   # a line a round: req/s and CPU µs a request of lp, nginx, Varnish, bare
        for r in $(seq 1 "$ROUNDS"); do
          seq=(lp ng va ba) n=$(( (r - 1) % PROCS ))
          case $ORDER in
            pairs)
              case $(( (r - 1) % 4 )) in
                0) seq=(lp ba ng va) ;; 1) seq=(ba lp va ng) ;; 2) seq=(ng va lp ba) ;; 3) seq=(va ng ba lp) ;;
              esac ;;
            rotate) k=$(( (r - 1) % 4 )); seq=("${seq[@]:k}" "${seq[@]:0:k}") ;;
            fixed) ;;
            *) echo "ORDER must be pairs, rotate or fixed, not $ORDER" >&2; exit 2 ;;
          esac
          paired=0
          for s in "${seq[@]}"; do
            case $s in
              lp|ba) # lp and bare in alternate slices, the first of them first (see Measurement at the top)
                [ "$paired" = 1 ] && continue
                paired=1 lps="" bas=""
                for _ in $(seq 1 "$SLICES"); do
                  for t in "$s" "$([ "$s" = lp ] && echo ba || echo lp)"; do
                    if [ "$t" = lp ]; then lps+=" $(run "$SLICE" "http://127.0.0.1:${LPS[n]}" "$paths" "$conns" "$enc" "${LP_PIDS[n]}")"
                    else bas+=" $(run "$SLICE" "http://127.0.0.1:${BAS[n]}" "$paths" "$conns" "$enc" "${BA_PIDS[n]}")"; fi
                  done
                done
                read -r a ac < <(per "$lps"); read -r d dc < <(per "$bas") ;;
              ng) read -r b bc < <(measure "http://127.0.0.1:$NG" "$paths" "$conns" "$enc" "${NG_PIDS[@]}") ;;
              va) read -r c cc < <(measure "http://127.0.0.1:$VA" "$paths" "$conns" "$enc" $(va_pids)) ;;
            esac
          done
          echo "$a $ac $b $bc $c $cc $d $dc" >>"$work/rounds"
          echo "$a" >>"$work/lp.rps"; echo "$ac" >>"$work/lp.cpu"
          echo "$b" >>"$work/ng.rps"; echo "$bc" >>"$work/ng.cpu"
          echo "$c" >>"$work/va.rps"; echo "$cc" >>"$work/va.cpu"
          echo "$d" >>"$work/ba.rps"; echo "$dc" >>"$work/ba.cpu"
          awk -v a="$a" -v b="$b" 'BEGIN {print a/b}' >>"$work/r_ng.rps"
          awk -v a="$a" -v c="$c" 'BEGIN {print a/c}' >>"$work/r_va.rps"
          awk -v a="$a" -v d="$d" 'BEGIN {print a/d}' >>"$work/r_ba.rps"
          awk -v d="$d" -v b="$b" 'BEGIN {print d/b}' >>"$work/r_bang.rps"
        done
        if [ -n "$ROUNDS_OUT" ]; then cp "$work/rounds" "$ROUNDS_OUT.${name//\//_}"; fi
        printf '%-28s %9.0f %9.0f %9.0f %9.0f  %7.1f %7.1f %7.1f %7.1f  %6.2f %6.2f %6.2f %6.2f  %s\n' "$name" \
          "$(median <"$work/lp.rps")" "$(median <"$work/ng.rps")" "$(median <"$work/va.rps")" "$(median <"$work/ba.rps")" \
          "$(median <"$work/lp.cpu")" "$(median <"$work/ng.cpu")" "$(median <"$work/va.cpu")" "$(median <"$work/ba.cpu")" \
          "$(median <"$work/r_ng.rps")" "$(median <"$work/r_va.rps")" "$(median <"$work/r_ba.rps")" "$(median <"$work/r_bang.rps")" \
          "$(quartiles <"$work/r_ba.rps")" | tee -a "$work/results"
      done
    done
  done
done

# The hit targets, from the cases measured above.
echo
echo "targets (load average $(cut -d' ' -f1-3 /proc/loadavg)):"
awk '
  {lpus[$1] = $6; ng[$1] = $10; va[$1] = $11; lpba[$1] = $12; bang[$1] = $13}
  function ratio(what, c, v, want, ge) {
    if (!(c in lpus)) return
    printf "  %-52s %5.2f  (target %s %.1f: %s)\n", what, v, ge ? ">=" : "<=", want, (ge ? v >= want : v <= want) ? "met" : "missed"
  }
  END {
    ratio("45KB identity, 64 connections: lp/nginx", "45KB/identity/c64/1key", ng["45KB/identity/c64/1key"], 1.0, 1)
    ratio("2KB identity, 256 connections: lp/nginx", "2KB/identity/c256/1key", ng["2KB/identity/c256/1key"], 1.0, 1)
    ratio("45KB identity, 256 connections: lp/nginx", "45KB/identity/c256/1key", ng["45KB/identity/c256/1key"], 1.0, 1)
    for (k in lpus) if (k ~ /\/(cycled|zipf)$/) {
      one = k; sub(/(cycled|zipf)$/, "1key", one)
      if (one in lpus) ratio(k ": CPU/hit vs 1 key", k, lpus[k] / lpus[one], 1.2, 0)
    }
    ratio("45KB gzip (stored form), 64 connections: lp/varnish", "45KB/gzip/c64/1key", va["45KB/gzip/c64/1key"], 1.0, 1)
    n = 0; met = 0; low = ""
    for (k in lpba) { n++; if (lpba[k] >= 0.95) met++; else low = low " " k }
    if (n) printf "  %-52s %2d/%-2d (target every case; below:%s)\n", "lp/bare >= 0.95", met, n, low == "" ? " none" : low
    print "the net/http ceiling on the cases against nginx (bare/nginx: a handler doing nothing; lp/bare: listingproxy against it):"
    split("45KB/identity/c64/1key 2KB/identity/c256/1key 45KB/identity/c256/1key", cs, " ")
    for (i = 1; i <= 3; i++) if (cs[i] in bang) printf "  %-28s bare/nginx %5.2f   lp/bare %5.2f\n", cs[i], bang[cs[i]], lpba[cs[i]]
  }' "$work/results"
