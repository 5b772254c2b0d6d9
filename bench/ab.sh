#!/usr/bin/env bash
# Cache-hit throughput of two revisions of listingproxy, side by side: each
# round runs wrk against A then B (back to back, so a shared VM's slow drifts
# cancel out), and the reported figure is the median of the rounds' B/A
# ratios of req/s (and of p50 latency). Used to price a change on the hit
# path that the ./proxy benchmark cannot see, such as the HTTP server's
# timeouts.
#
#   bash bench/ab.sh A B                # e.g. bash bench/ab.sh 041e4e0 HEAD
#   ROUNDS=9 DURATION=3s CONNECTIONS=32 bash bench/ab.sh A B    # the defaults
#
# Both servers serve the demo (authentication on, access log off), pinned to
# CPU 0 with wrk on CPU 1 when taskset exists and there are 2+ CPUs.
set -euo pipefail
cd "$(dirname "$0")/.."
[ $# -eq 2 ] || { echo "usage: bash bench/ab.sh REV_A REV_B" >&2; exit 2; }
DURATION=${DURATION:-3s}
ROUNDS=${ROUNDS:-9}
CONNECTIONS=${CONNECTIONS:-32}
URL_PATH=${URL_PATH:-/au/properties/1.xml}

if ! command -v wrk >/dev/null; then
  echo "installing wrk (apt-get)"; (apt-get update -qq && apt-get install -y -qq wrk) >/dev/null
fi
SERVER_CPU=() WRK_CPU=() THREADS=2
if [ "${PIN:-1}" = 1 ] && command -v taskset >/dev/null && [ "$(nproc)" -ge 2 ]; then
  SERVER_CPU=(taskset -c 0) WRK_CPU=(taskset -c 1) THREADS=1
fi
work=$(mktemp -d)
pids=()
cleanup() { for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done; wait 2>/dev/null || true; rm -rf "$work"; }
trap cleanup EXIT

free_port() { python3 -c 'import socket;s=socket.socket();s.bind(("127.0.0.1",0));print(s.getsockname()[1])'; }
wait_port() { for _ in $(seq 1 200); do if curl -s -o /dev/null "http://127.0.0.1:$1/"; then return; fi; sleep 0.1; done; echo "port $1 never answered"; exit 1; }
AUTH="Authorization: Basic $(printf 'harbour:harbour-demo' | base64)"

# start REV NAME: build REV (a commit, exported with git archive) and run
# it; its port is left in PORT (not echoed: a subshell would lose its pid).
start() {
  local rev=$1 name=$2 src="$work/src-$2" port
  mkdir -p "$src"
  git archive "$(git rev-parse "$rev")" | tar -x -C "$src"
  (cd "$src" && go build -o "$work/$name" ./cmd/listingproxy)
  port=$(free_port)
  # Either revision's config.yaml: ":8080" and 9090 before the safe
  # defaults, "127.0.0.1:8080" and 8081 after.
  sed -e "s|^listen: \"[0-9.]*:8080\"|listen: \"127.0.0.1:$port\"|" \
      -e "s|admin_listen: \"127.0.0.1:[0-9]*\"|admin_listen: \"off\"|" \
      -e "s|file:listingproxy-demo.db|file:$work/$name.db|" \
      -e "s|level: info|level: error|" "$src/config.yaml" >"$work/$name.yaml"
  "${SERVER_CPU[@]}" "$work/$name" -config "$work/$name.yaml" >"$work/$name.log" 2>&1 &
  pids+=($!)
  wait_port "$port"
  curl -fsS -H "$AUTH" "http://127.0.0.1:$port$URL_PATH" -o /dev/null # warm the cache
  PORT=$port
}
start "$1" a; A_PORT=$PORT
start "$2" b; B_PORT=$PORT

median() { sort -g | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }
run() { "${WRK_CPU[@]}" wrk -t"$THREADS" -c"$CONNECTIONS" -d"$DURATION" --latency -H "$AUTH" "$1" 2>/dev/null; }
rps() { awk '/Requests\/sec/ {print $2}' <<<"$1"; }
p50() { awk '$1=="50%" {v=$2; if (v ~ /us$/) v=v/1000; else if (v ~ /ms$/) v=v+0; else if (v ~ /s$/) v=v*1000; print v}' <<<"$1"; }

for f in a.rps b.rps ratio.rps ratio.p50; do : >"$work/$f"; done
for _ in $(seq 1 "$ROUNDS"); do
  a=$(run "http://127.0.0.1:$A_PORT$URL_PATH"); b=$(run "http://127.0.0.1:$B_PORT$URL_PATH")
  rps "$a" >>"$work/a.rps"; rps "$b" >>"$work/b.rps"
  awk -v a="$(rps "$a")" -v b="$(rps "$b")" 'BEGIN {print b/a}' >>"$work/ratio.rps"
  awk -v a="$(p50 "$a")" -v b="$(p50 "$b")" 'BEGIN {print b/a}' >>"$work/ratio.p50"
done
printf '%s: A=%s (%.0f req/s median)  B=%s (%.0f req/s median)\n' "$URL_PATH" "$1" "$(median <"$work/a.rps")" "$2" "$(median <"$work/b.rps")"
printf 'B/A req/s = %.3f (rounds: %s)\nB/A p50   = %.3f\n' "$(median <"$work/ratio.rps")" \
  "$(sort -g "$work/ratio.rps" | awk '{printf "%s%.3f", (NR>1 ? " " : ""), $1}')" "$(median <"$work/ratio.p50")"
