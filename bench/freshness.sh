#!/usr/bin/env bash
# bench/freshness.sh: how soon a change made in the backend is served,
# for each change feed, under a read load on warm keys.
#
# For each feed in FEEDS it starts what the feed needs on free 127.0.0.1
# ports, then listingproxy (cache ttl 1h, so only the feed explains a new
# body), then bench/cmd/freshload: RATE load requests a second (default
# 200) over about 290 warm keys (single properties and list pages of
# harbour and summit) while UPDATE_RATE updates a second (default 5) are
# made to harbour's properties in the backend itself, for DURATION
# (default 50s: 250 updates); each update's property is polled through
# listingproxy until it shows. Then it stops what it started and prints
#
#   feed=NAME updates=N visible_p50_ms=X visible_p99_ms=X visible_max_ms=X backend_calls_per_s=X tenant_purges=N untouched_hit_ratio=X
#
# The feeds:
#   postgres-notify  the local PostgreSQL, database PG_DB (default
#                    listingproxy_fresh, dropped and recreated), notify: true
#   mariadb-binlog   a mariadbd of the script's own with --log-bin
#                    --binlog-format=ROW (the local server has no binlog),
#                    binlog: {}
#   crm-webhook      cmd/legacy-crm (CRM_LATENCY on every API answer,
#                    default 50ms) posting signed webhooks for harbour
#   crm-poll         the same CRM without webhooks, poll_interval
#                    POLL_INTERVAL (default 5s)
#   ttl              no feed (PostgreSQL, notify: false): what a cache in
#                    front of the API alone (nginx, Varnish) offers, with
#                    cache ttl TTL and refresh_ahead 0 (they have none;
#                    stale-while-revalidate stays, as their
#                    proxy_cache_use_stale updating and grace). Default: the TTL that costs the
#                    backend about what postgres-notify did, keys /
#                    postgres-notify's backend_calls_per_s (every key is
#                    read about once a second, so each costs one refill a
#                    TTL); 20s when postgres-notify did not run. TTL is
#                    whole seconds ("52s"). Keys warmed together expire
#                    together, so this run lasts half a ttl plus two
#                    ttls (at least DURATION) and is measured after the
#                    first half ttl.
#
#   bash bench/freshness.sh                          # all five, about 7 minutes
#   FEEDS="postgres-notify ttl" DURATION=20s bash bench/freshness.sh
#
# Everything runs in a temporary directory and is stopped by PID as each
# feed ends and on exit; the whole run is bounded by a watchdog
# (BENCH_TIMEOUT seconds, default 1200).
set -euo pipefail
cd "$(dirname "$0")/.."

FEEDS=${FEEDS:-postgres-notify mariadb-binlog crm-webhook crm-poll ttl}
RATE=${RATE:-200}
UPDATE_RATE=${UPDATE_RATE:-5}
DURATION=${DURATION:-50s}
POLL_INTERVAL=${POLL_INTERVAL:-5s}
CRM_LATENCY=${CRM_LATENCY:-50ms}
PG_DB=${PG_DB:-listingproxy_fresh}
PG=${PG:-postgres://postgres@127.0.0.1:5432}
SEED=${SEED:-1}
TTL=${TTL:-}
BENCH_TIMEOUT=${BENCH_TIMEOUT:-1200}

. bench/lib.sh
bench_start

echo "building..." >&2
go build -o "$work/listingproxy" ./cmd/listingproxy
go build -o "$work/legacy-crm" ./cmd/legacy-crm
go build -o "$work/freshload" ./bench/cmd/freshload

# stop PID: ends one process this script started and waits for it.
stop() {
	kill "$1" 2>/dev/null || true
	wait "$1" 2>/dev/null || true
}

# config FILE BACKEND-YAML TENANT-YAML TTL [CACHE-YAML]: listingproxy's
# configuration, with the demo users (passwords harbour-demo, summit-demo)
# and admin; CACHE-YAML, indented for cache:, adds cache keys.
config() {
	{
		cat <<YAML
listen: "127.0.0.1:${lp_port:-0}"
admin_listen: "127.0.0.1:0"
countries: [au, nz]
backends:
  main: $2
tenants:
$3
cache:
  ttl: $4
${5:-}
log:
  level: warn
YAML
		sed -n '/^users:/,/^$/p' testdata/config.crm.yaml
		sed -n '/^admin:/,/^$/p' testdata/config.crm.yaml
	} >"$1"
}

# proxy NAME: starts listingproxy with $work/NAME.yaml, sets lp and admin.
proxy() {
	(cd "$work" && exec ./listingproxy -config "$1.yaml" >"$1.lp.out" 2>"$1.lp.err") &
	lp_pid=$!
	lp=$(WAIT_SECONDS=120 wait_for "$work/$1.lp.out" 'listening on (http://[0-9.:]+)' $lp_pid)
	admin=$(wait_for "$work/$1.lp.out" 'admin: (http://[0-9.:]+)' $lp_pid)
}

# load NAME ARGS...: runs freshload against lp, keeps its line.
load() {
	local name=$1
	shift
	if "$work/freshload" -feed "$name" -base "$lp" -admin "$admin" -rate "$RATE" -update-rate "$UPDATE_RATE" \
		-duration "$DURATION" -seed "$SEED" "$@" >"$work/$name.line" 2>"$work/$name.err"; then
		cat "$work/$name.line"
	else
		echo "feed=$name failed: $(tail -1 "$work/$name.err")"
	fi
	cat "$work/$name.err" >&2
}

pgdb() {
	psql -q "$PG/postgres?sslmode=disable" -c "DROP DATABASE IF EXISTS $PG_DB WITH (FORCE)" -c "CREATE DATABASE $PG_DB"
}
pg_dsn="$PG/$PG_DB?sslmode=disable"
tenants_sql='  harbour: {backend: main}
  summit: {backend: main}'
hook_secret=harbour-fresh-webhook-secret
tenants_crm="  harbour: {backend: main, upstream_username: harbour, upstream_password: harbour-crm}
  summit: {backend: main, upstream_username: summit, upstream_password: summit-crm}"

echo "$(nproc) CPUs, load average $(cut -d' ' -f1-3 /proc/loadavg), $(go version | cut -d' ' -f3); RATE=$RATE UPDATE_RATE=$UPDATE_RATE DURATION=$DURATION POLL_INTERVAL=$POLL_INTERVAL CRM_LATENCY=$CRM_LATENCY" >&2
pg_calls=
for feed in $FEEDS; do
	echo "== $feed (load average $(cut -d' ' -f1-3 /proc/loadavg))" >&2
	lp_port=
	case $feed in
	postgres-notify)
		pgdb
		config "$work/$feed.yaml" "{kind: postgres, dsn: \"$pg_dsn\", seed_demo: true, notify: true}" "$tenants_sql" 1h
		proxy "$feed"
		load "$feed" -update postgres -dsn "$pg_dsn" -min-gaps 1
		pg_calls=$(sed -nE 's/.*backend_calls_per_s=([0-9.]+).*/\1/p' "$work/$feed.line")
		stop "$lp_pid"
		;;
	mariadb-binlog)
		mdb=$work/mariadb
		mkdir -p "$mdb"
		mariadb-install-db --no-defaults --datadir="$mdb/data" --user="$(id -un)" --auth-root-authentication-method=normal \
			--skip-test-db >"$mdb/install.log" 2>&1
		mport=$("$work/freshload" -free-port)
		/usr/sbin/mariadbd --no-defaults --datadir="$mdb/data" --user="$(id -un)" --port="$mport" --bind-address=127.0.0.1 \
			--socket="$mdb/s.sock" --pid-file="$mdb/m.pid" --log-bin="$mdb/data/bin" --binlog-format=ROW --server-id=1 \
			--skip-name-resolve --innodb-buffer-pool-size=64M >"$mdb/mariadbd.log" 2>&1 &
		m_pid=$!
		pids+=($m_pid)
		for _ in $(seq 300); do
			mariadb -h 127.0.0.1 -P "$mport" -u root -e 'SELECT 1' >/dev/null 2>&1 && break
			kill -0 "$m_pid" 2>/dev/null || { tail "$mdb/mariadbd.log" >&2; exit 1; }
			sleep 0.1
		done
		mariadb -h 127.0.0.1 -P "$mport" -u root -e "CREATE DATABASE listingproxy_fresh CHARACTER SET utf8mb4 COLLATE utf8mb4_bin"
		my_dsn="root@tcp(127.0.0.1:$mport)/listingproxy_fresh?parseTime=true"
		config "$work/$feed.yaml" "{kind: mysql, dsn: \"$my_dsn\", seed_demo: true, binlog: {}}" "$tenants_sql" 1h
		if "$work/listingproxy" check-config -config "$work/$feed.yaml" >"$work/$feed.check" 2>&1 || ! grep -q binlog "$work/$feed.check"; then
			proxy "$feed"
			load "$feed" -update mysql -dsn "$my_dsn" -min-gaps 1
			stop "$lp_pid"
		else
			echo "feed=$feed skipped: this listingproxy has no binlog feed ($(grep -m1 binlog "$work/$feed.check"))"
		fi
		stop "$m_pid"
		;;
	crm-webhook | crm-poll)
		lp_port=$("$work/freshload" -free-port)
		hook=()
		tenants=$tenants_crm
		backend="{kind: crm, url: \"\$CRM\"}"
		gaps=0
		if [ "$feed" = crm-webhook ]; then
			hook=(-webhook "http://127.0.0.1:$lp_port/hooks/changes/{tenant}" -webhook-secret "harbour=$hook_secret")
			tenants="  harbour: {backend: main, upstream_username: harbour, upstream_password: harbour-crm, webhook_secret: \"$hook_secret\"}
  summit: {backend: main, upstream_username: summit, upstream_password: summit-crm}"
		else
			backend="{kind: crm, url: \"\$CRM\", poll_interval: $POLL_INTERVAL}"
			gaps=4 # the first pass: each tenant in each country
		fi
		"$work/legacy-crm" -listen 127.0.0.1:0 -db "file:$work/$feed.crm.db" -latency "$CRM_LATENCY" "${hook[@]}" \
			>"$work/$feed.crm.out" 2>"$work/$feed.crm.err" &
		c_pid=$!
		pids+=($c_pid)
		crm=$(WAIT_SECONDS=120 wait_for "$work/$feed.crm.out" 'listening on (http://[0-9.:]+)' $c_pid)
		config "$work/$feed.yaml" "${backend/\$CRM/$crm}" "$tenants" 1h
		proxy "$feed"
		load "$feed" -update crm -crm "$crm" -min-gaps "$gaps"
		stop "$lp_pid"
		stop "$c_pid"
		;;
	ttl)
		ttl=$TTL
		if [ -z "$ttl" ]; then
			ttl=20s
			if [ -n "$pg_calls" ]; then
				keys=$(sed -nE 's/.* over ([0-9]+) keys.*/\1/p' "$work/postgres-notify.err")
				ttl=$(awk -v k="$keys" -v c="$pg_calls" 'BEGIN { t = int(k / c + 0.5); if (t < 1) t = 1; print t "s" }')
			fi
		fi
		# Keys warmed together expire together: measure from half a ttl
		# in, over two whole ttls (or DURATION when longer).
		secs=${ttl%s}
		dur=$(awk -v t="$secs" -v d="${DURATION%s}" 'BEGIN { x = t / 2 + 2 * t; if (d > x) x = d; print x "s" }')
		echo "ttl: cache ttl $ttl, measured from $((secs / 2))s to $dur" >&2
		[ -n "$pg_calls" ] || pgdb
		# nginx and Varnish refresh nothing ahead of its expiry; their
		# stale-while-revalidate (proxy_cache_use_stale updating, grace)
		# is kept, as are listingproxy's other defaults.
		config "$work/$feed.yaml" "{kind: postgres, dsn: \"$pg_dsn\", seed_demo: true}" "$tenants_sql" "$ttl" "  refresh_ahead: 0"
		proxy "$feed"
		DURATION=$dur load "$feed" -update postgres -dsn "$pg_dsn" -poll-every 250ms -poll-growth 0.1 -skip "$((secs / 2))s"
		stop "$lp_pid"
		;;
	*)
		echo "bench: unknown feed $feed (want postgres-notify mariadb-binlog crm-webhook crm-poll ttl)" >&2
		exit 2
		;;
	esac
done
echo "load average after: $(cut -d' ' -f1-3 /proc/loadavg)" >&2
