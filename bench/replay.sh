#!/usr/bin/env bash
# bench/replay.sh: listingproxy, nginx proxy_cache and Varnish in front of
# the same slow CRM, under the same replayed workload, one after another.
#
# The origin is cmd/legacy-crm with LATENCY (default 300ms) on every answer.
# The load is bench/cmd/zipfload -space spec: RATE requests a second
# (default 200, open loop) for DURATION per server (default 10m), criteria
# drawn from the spec's parameter space with Zipf popularity (exponent
# ZIPF, default 1.1) over KEYS distinct criteria (default 24000), about 10%
# of them single properties (SINGLES), the four demo users drawn uniformly,
# XML or JSON per request, gzip for a share GZIP (default 0.5) of requests
# and identity for the rest. The same SEED gives every server the same
# sequence. Figures are taken from MEASURE_FROM on (default 2m), so the
# compulsory first fetches of a cold start do not dominate; the CRM's
# request count is reset there. For each server it prints
#
#   server=NAME calls_per_1k=X hit_ratio=X p50_ms=X p99_ms=X p999_ms=X repeat_p99_ms=X errors=N
#
# calls_per_1k: the CRM's requests per 1,000 measured requests; hit_ratio:
# the share of measured answers whose Cache-Status has "hit" (nginx and
# Varnish are made to send one: nginx's $upstream_cache_status HIT, STALE,
# UPDATING and REVALIDATED are hits, Varnish's obj.hits > 0 is); latencies
# from each request's scheduled time; repeat_p99_ms: over the requests
# whose tenant and criteria (format aside) were asked before in the run;
# errors: transport errors and answers other than 200 and 404.
#
# Then, for listingproxy, nginx and Varnish: the CRM is stopped, the server
# is restarted, and the last WARM_MAX (default 1000) distinct requests it
# answered 200 are asked once each:
#
#   restart server=NAME warm_ok=X
#
# The setup, the same for every server where it can be:
#   - every server caches for TTL (default 60s, listingproxy's default
#     cache.ttl); nginx and Varnish are configured as their users would for
#     a slow origin: nginx proxy_cache_lock, proxy_cache_use_stale updating
#     error timeout and proxy_cache_background_update; Varnish grace GRACE
#     (default 10m, listingproxy's stale_while_revalidate). Both key their
#     cache on the Authorization header (and nginx on Accept-Encoding; both
#     honour the CRM's Vary), so no tenant or permission level ever gets
#     another's body.
#   - the clients send the same credentials to every server. nginx and
#     Varnish front the CRM's API directly and pass them through: the CRM
#     is started with the four demo users (same passwords, tenants and
#     permissions as listingproxy's users), and with the tenants' own
#     upstream users listingproxy logs in with (lp-harbour, lp-summit: full
#     and prices).
#   - listingproxy: a configuration naming only the CRM, the tenants and
#     the users (every other setting its default), plus cache.disk (the
#     local disk tier of a single node, no Redis) so that its restart keeps
#     its warm keys.
#   - listingproxy-feed: the same with cache.ttl 1h and the CRM's signed
#     change webhooks for both tenants (the CRM restarted with -webhook);
#     no restart phase.
#
#   bash bench/replay.sh                                  # about 45 minutes
#   DURATION=90s MEASURE_FROM=30s bash bench/replay.sh    # a short run
#   SERVERS="listingproxy nginx" bash bench/replay.sh
#
# nginx (nginx-light) and Varnish are installed from Debian packages when
# missing. Everything runs in a temporary directory on free 127.0.0.1 ports
# and is stopped by PID; the run is bounded by a watchdog (BENCH_TIMEOUT
# seconds, default: enough for the servers' durations).
set -euo pipefail
cd "$(dirname "$0")/.."
. bench/lib.sh # secs, bench_start, free_port, wait_port

LATENCY=${LATENCY:-300ms}
RATE=${RATE:-200}
DURATION=${DURATION:-10m}
MEASURE_FROM=${MEASURE_FROM:-2m}
KEYS=${KEYS:-24000}
ZIPF=${ZIPF:-1.1}
SINGLES=${SINGLES:-0.1}
GZIP=${GZIP:-0.5}
SEED=${SEED:-1}
TTL=${TTL:-60s}
GRACE=${GRACE:-10m}
FEED_TTL=${FEED_TTL:-1h}
WARM_MAX=${WARM_MAX:-1000}
SERVERS=${SERVERS:-listingproxy nginx varnish listingproxy-feed}

run_secs=$(secs "$DURATION") || { echo "DURATION must be whole seconds, minutes or hours (90s, 10m), not '$DURATION'" >&2; exit 2; }
BENCH_TIMEOUT=${BENCH_TIMEOUT:-$((run_secs * 4 + 900))}

need() { command -v "$1" >/dev/null || { echo "installing $2 (apt-get)" >&2; (apt-get update -qq && apt-get install -y -qq "$2") >/dev/null; }; }
for s in $SERVERS; do
	case $s in
	nginx) need nginx nginx-light ;;
	varnish) need varnishd varnish ;;
	listingproxy | listingproxy-feed) ;;
	*)
		echo "bench: unknown server $s (want listingproxy nginx varnish listingproxy-feed)" >&2
		exit 2
		;;
	esac
done

bench_start
export WAIT_SECONDS=${WAIT_SECONDS:-60} # wait_port: the CRM seeds its database first
chmod 755 "$work" # varnishd reads its VCL as an unprivileged user

echo "building..." >&2
go build -o "$work/legacy-crm" ./cmd/legacy-crm
go build -o "$work/listingproxy" ./cmd/listingproxy
go build -o "$work/zipfload" ./bench/cmd/zipfload

stop() { # PID: ends one process this script started and waits for it
	kill "$1" 2>/dev/null || true
	wait "$1" 2>/dev/null || true
}

# The CRM: the demo users (as listingproxy's: passwords harbour-demo and
# summit-demo) and the tenants' upstream users; on a fixed port, so that it
# can be stopped and started again under every server's feet.
CRM_PORT=$(free_port)
crm="http://127.0.0.1:$CRM_PORT"
crm_users=(
	-user lp-harbour:harbour-crm:harbour:full,prices -user lp-summit:summit-crm:summit:full,prices
	-user harbour:harbour-demo:harbour:full,prices -user harbour-noprice:harbour-demo:harbour:full
	-user harbour-short:harbour-demo:harbour: -user summit:summit-demo:summit:full,prices
)
crm_start() { # [ARGS...]: starts the CRM, sets crm_pid
	"$work/legacy-crm" -listen "127.0.0.1:$CRM_PORT" -db "file:$work/crm.db" -latency "$LATENCY" "${crm_users[@]}" "$@" \
		>>"$work/crm.out" 2>>"$work/crm.err" &
	crm_pid=$!
	pids+=($crm_pid)
	wait_port "$CRM_PORT" crm "$crm_pid"
}

users=harbour:harbour-demo:harbour,harbour-noprice:harbour-demo:harbour,harbour-short:harbour-demo:harbour:short,summit:summit-demo:summit

# replay_config FILE TTL [EXTRA-TENANT-YAML]: what a user must say, and the disk tier.
replay_config() {
	{
		cat <<YAML
listen: "127.0.0.1:$LP_PORT"
admin_listen: "127.0.0.1:0"
backends:
  legacy: {kind: crm, url: "$crm"}
tenants:
  harbour: {backend: legacy, upstream_username: lp-harbour, upstream_password: harbour-crm${3:+, webhook_secret: "$3-harbour"}}
  summit: {backend: legacy, upstream_username: lp-summit, upstream_password: summit-crm${3:+, webhook_secret: "$3-summit"}}
cache:
  ttl: $2
  disk: {path: "$work/disk/cache.db"}
log:
  level: warn
YAML
		sed -n '/^users:/,/^$/p' testdata/config.crm.yaml
		sed -n '/^admin:/,/^$/p' testdata/config.crm.yaml
	} >"$1"
}

NG_PORT=$(free_port)
nginx_config() {
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
  proxy_cache_path $work/nginx/cache levels=1:2 keys_zone=crm:64m max_size=4g inactive=2h use_temp_path=off;
  upstream crm { server 127.0.0.1:$CRM_PORT; keepalive 64; }
  map \$upstream_cache_status \$cache_status {
    HIT "nginx; hit"; STALE "nginx; hit; detail=STALE"; UPDATING "nginx; hit; detail=UPDATING";
    REVALIDATED "nginx; hit; detail=REVALIDATED"; default "nginx; fwd=miss";
  }
  server {
    listen 127.0.0.1:$NG_PORT;
    keepalive_requests 1000000;
    location / {
      proxy_pass http://crm;
      proxy_http_version 1.1;
      proxy_set_header Connection "";
      proxy_cache crm;
      proxy_cache_key "\$http_authorization|\$http_accept_encoding|\$request_uri";
      proxy_cache_valid 200 $TTL;
      proxy_cache_lock on;
      proxy_cache_use_stale updating error timeout;
      proxy_cache_background_update on;
      proxy_hide_header Cache-Status; # the CRM's own (it has no cache)
      add_header Cache-Status \$cache_status always;
    }
  }
}
EOF
}

VA_PORT=$(free_port)
varnish_config() {
	cat >"$work/default.vcl" <<EOF
vcl 4.1;
backend crm { .host = "127.0.0.1"; .port = "$CRM_PORT"; }
sub vcl_recv {
  if (req.method != "GET" && req.method != "HEAD") { return (pass); }
  return (hash); # the builtin VCL passes every request with Authorization
}
sub vcl_hash { hash_data(req.http.Authorization); } # then the builtin: URL and host
sub vcl_backend_response {
  if (beresp.http.Cache-Control ~ "private|no-store") { # error bodies, as the builtin VCL
    set beresp.uncacheable = true;
    set beresp.ttl = 120s;
    return (deliver);
  }
  set beresp.ttl = $TTL;
  set beresp.grace = $GRACE;
  return (deliver);
}
sub vcl_deliver {
  if (obj.hits > 0) { set resp.http.Cache-Status = "varnish; hit"; } else { set resp.http.Cache-Status = "varnish; fwd=miss"; }
}
EOF
}

# server_start NAME: starts it, sets srv_pid and base.
server_start() {
	case $1 in
	listingproxy | listingproxy-feed)
		(cd "$work" && exec ./listingproxy -config "$1.yaml" >>"$1.out" 2>>"$1.err") &
		srv_pid=$!
		base="http://127.0.0.1:$LP_PORT"
		wait_port "$LP_PORT" "$1" "$srv_pid"
		;;
	nginx)
		nginx -c "$work/nginx/nginx.conf" -p "$work/nginx" >>"$work/nginx.out" 2>>"$work/nginx.err" &
		srv_pid=$!
		base="http://127.0.0.1:$NG_PORT"
		wait_port "$NG_PORT" nginx "$srv_pid"
		;;
	varnish)
		varnishd -F -a "127.0.0.1:$VA_PORT" -f "$work/default.vcl" -n "$work/varnish" -s malloc,2g \
			>>"$work/varnish.out" 2>>"$work/varnish.err" &
		srv_pid=$!
		base="http://127.0.0.1:$VA_PORT"
		wait_port "$VA_PORT" varnish "$srv_pid"
		;;
	esac
	pids+=($srv_pid)
}

echo "$(nproc) CPUs, load average $(cut -d' ' -f1-3 /proc/loadavg), $(go version | cut -d' ' -f3); LATENCY=$LATENCY RATE=$RATE DURATION=$DURATION MEASURE_FROM=$MEASURE_FROM KEYS=$KEYS ZIPF=$ZIPF SINGLES=$SINGLES GZIP=$GZIP TTL=$TTL GRACE=$GRACE FEED_TTL=$FEED_TTL SEED=$SEED" >&2
crm_start
: >"$work/lines"
for s in $SERVERS; do
	echo "== $s (load average $(cut -d' ' -f1-3 /proc/loadavg))" >&2
	LP_PORT=$(free_port)
	rm -rf "$work/disk" && mkdir -p "$work/disk"
	case $s in
	listingproxy) replay_config "$work/$s.yaml" "$TTL" ;;
	listingproxy-feed)
		# The CRM again, now sending its change webhooks to listingproxy.
		stop "$crm_pid"
		crm_start -webhook "http://127.0.0.1:$LP_PORT/hooks/changes/{tenant}" \
			-webhook-secret "harbour=replay-webhook-secret-harbour" -webhook-secret "summit=replay-webhook-secret-summit"
		replay_config "$work/$s.yaml" "$FEED_TTL" replay-webhook-secret
		;;
	nginx) nginx_config ;;
	varnish) varnish_config ;;
	esac
	server_start "$s"
	"$work/zipfload" -space spec -base "$base" -rate "$RATE" -duration "$DURATION" -keys "$KEYS" -zipf "$ZIPF" \
		-single-share "$SINGLES" -gzip "$GZIP" -seed "$SEED" -users "$users" -crm-stats "$crm" \
		-measure-from "$MEASURE_FROM" -summary "$s" -warm-out "$work/$s.warm" -warm-max "$WARM_MAX" -window 30s \
		>"$work/$s.load" 2>&1 || true
	sed -n '/^\[\|^total\|^backend\|^measured/p' "$work/$s.load" >&2
	line=$(grep '^server=' "$work/$s.load" || echo "server=$s failed: $(tail -1 "$work/$s.load")")
	echo "$line" | tee -a "$work/lines"
	if [ "$s" != listingproxy-feed ]; then
		# The restart: the CRM down, the server stopped and started again.
		stop "$crm_pid"
		stop "$srv_pid"
		server_start "$s"
		line=$("$work/zipfload" -base "$base" -users "$users" -check "$work/$s.warm" -summary "$s" 2>>"$work/$s.load" ||
			echo "restart server=$s failed")
		echo "$line" | tee -a "$work/lines"
		crm_start
	fi
	stop "$srv_pid"
	[ "$s" = nginx ] && rm -rf "$work/nginx/cache"
	[ "$s" = varnish ] && rm -rf "$work/varnish"
done

# The targets: listingproxy on its defaults.
echo
echo "targets (load average $(cut -d' ' -f1-3 /proc/loadavg)):"
awk '
	# Numbers, not strings: "8.7" <= 10 compares as strings otherwise.
	function field(line, k) { if (match(line, k "=[-0-9.]+")) return substr(line, RSTART + length(k) + 1, RLENGTH - length(k) - 1) + 0; return "" }
	/^server=/ { n = $1; sub("server=", "", n); calls[n] = field($0, "calls_per_1k"); errs[n] = field($0, "errors"); rp99[n] = field($0, "repeat_p99_ms") }
	/^restart / { n = $2; sub("server=", "", n); warm[n] = field($0, "warm_ok") }
	function say(what, ok) { printf "  %-60s %s\n", what, ok ? "met" : "MISSED" }
	END {
		if (!("listingproxy" in calls)) exit
		ref = ""
		if ("nginx" in calls) ref = calls["nginx"]
		if ("varnish" in calls && (ref == "" || calls["varnish"] + 0 < ref + 0)) ref = calls["varnish"]
		say("listingproxy errors = 0 (" errs["listingproxy"] ")", errs["listingproxy"] == 0)
		if (ref != "") say(sprintf("listingproxy calls_per_1k <= 0.8 x %s (%s)", ref, calls["listingproxy"]), calls["listingproxy"] <= 0.8 * ref)
		if (ref != "" && "listingproxy-feed" in calls) say(sprintf("listingproxy-feed calls_per_1k <= 0.5 x %s (%s)", ref, calls["listingproxy-feed"]), calls["listingproxy-feed"] <= 0.5 * ref)
		say("listingproxy repeat_p99_ms <= 10 (" rp99["listingproxy"] ")", rp99["listingproxy"] <= 10)
		if ("listingproxy" in warm) say("listingproxy warm_ok >= 0.99 (" warm["listingproxy"] ")", warm["listingproxy"] >= 0.99)
	}' "$work/lines"
echo "load average after: $(cut -d' ' -f1-3 /proc/loadavg)" >&2
