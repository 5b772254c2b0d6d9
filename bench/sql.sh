#!/usr/bin/env bash
# SQL backend latency without the cache: seeds the demo at 1,000,000
# properties and 20,000 agents on the local PostgreSQL and MariaDB (each in a
# database of its own, listingproxy_bench, so tests never touch it), then runs
# bench/cmd/sqlbench: a fixed mix of list queries (limit 20) called straight
# on the store, p50/p99 per query and engine, and the EXPLAIN of each
# query's main statement, flagging any full scan of properties.
#
#   bash bench/sql.sh                      # N=200 PROPERTIES=1000000 AGENTS=20000
#   ENGINES=pg bash bench/sql.sh           # PostgreSQL only (pg, mysql or pg,mysql)
#
# Seeding is skipped when a database already holds exactly that many
# properties and agents (a fresh load takes about 3-4 minutes on PostgreSQL
# and 8-10 on MariaDB on the 2-core machine). MariaDB's
# innodb_buffer_pool_size is raised to MYSQL_BUFFER_POOL (default 2G; "keep"
# leaves it) when smaller: with the 128 MiB default the 1M-row indexes do not
# fit and both the load and the queries become disk-bound. PostgreSQL keeps
# its settings (128 MB shared_buffers; the OS page cache holds the rest).
set -euo pipefail
cd "$(dirname "$0")/.."
N=${N:-200}
PROPERTIES=${PROPERTIES:-1000000}
AGENTS=${AGENTS:-20000}
ENGINES=${ENGINES:-pg,mysql}
MYSQL_BUFFER_POOL=${MYSQL_BUFFER_POOL:-2G}
export LISTINGPROXY_BENCH_PG_DSN=${LISTINGPROXY_BENCH_PG_DSN:-postgres://postgres@127.0.0.1:5432/listingproxy_bench?sslmode=disable}
export LISTINGPROXY_BENCH_MYSQL_DSN=${LISTINGPROXY_BENCH_MYSQL_DSN:-root@tcp(127.0.0.1:3306)/listingproxy_bench?parseTime=true}
PG_ADMIN=${PG_ADMIN:-postgres://postgres@127.0.0.1:5432/postgres?sslmode=disable}
MYSQL_ARGS=(-h 127.0.0.1 -u root)

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
go build -o "$work/listingproxy" ./cmd/listingproxy
go build -o "$work/sqlbench" ./bench/cmd/sqlbench

# The backends as listingproxy configuration (the seed command and sqlbench
# both read it); tenants and a user only because a configuration needs them.
cat >"$work/bench.yaml" <<'YAML'
backends:
  pg:    {kind: postgres, dsn: "${LISTINGPROXY_BENCH_PG_DSN}"}
  mysql: {kind: mysql, dsn: "${LISTINGPROXY_BENCH_MYSQL_DSN}"}
tenants:
  harbour: {backend: pg}
  summit:  {backend: mysql}
users:
  - {username: bench, password_bcrypt: "$2a$10$lZZjUks2xDyB1vxQtsPHceEx78gv.fildKhgToZSUq7nb.YaKf4NS", tenant: harbour}
YAML

count_pg() { psql "${LISTINGPROXY_BENCH_PG_DSN}" -tAc "SELECT (SELECT count(*) FROM properties) || '/' || (SELECT count(*) FROM agents)" 2>/dev/null || echo none; }
count_mysql() { mariadb "${MYSQL_ARGS[@]}" listingproxy_bench -N -e "SELECT concat((SELECT count(*) FROM properties), '/', (SELECT count(*) FROM agents))" 2>/dev/null || echo none; }

seed() { # backend
  "$work/listingproxy" seed -config "$work/bench.yaml" -backend "$1" \
    -properties "$PROPERTIES" -agents "$AGENTS" -now 2026-11-21 -reset
}

if [[ ",$ENGINES," == *",pg,"* ]]; then
  psql "$PG_ADMIN" -tAc "SELECT 1 FROM pg_database WHERE datname = 'listingproxy_bench'" | grep -q 1 ||
    psql "$PG_ADMIN" -c "CREATE DATABASE listingproxy_bench"
  if [[ "$(count_pg)" != "$PROPERTIES/$AGENTS" ]]; then seed pg; else echo "pg: already seeded with $PROPERTIES properties"; fi
fi
if [[ ",$ENGINES," == *",mysql,"* ]]; then
  mariadb "${MYSQL_ARGS[@]}" -e "CREATE DATABASE IF NOT EXISTS listingproxy_bench CHARACTER SET utf8mb4 COLLATE utf8mb4_bin"
  if [[ "$MYSQL_BUFFER_POOL" != keep ]]; then
    want=$(numfmt --from=iec "$MYSQL_BUFFER_POOL")
    have=$(mariadb "${MYSQL_ARGS[@]}" -N -e "SELECT @@innodb_buffer_pool_size")
    if (( have < want )); then
      echo "mysql: raising innodb_buffer_pool_size from $have to $want"
      mariadb "${MYSQL_ARGS[@]}" -e "SET GLOBAL innodb_buffer_pool_size = $want"
    fi
  fi
  if [[ "$(count_mysql)" != "$PROPERTIES/$AGENTS" ]]; then seed mysql; else echo "mysql: already seeded with $PROPERTIES properties"; fi
fi

echo
"$work/sqlbench" -config "$work/bench.yaml" -backends "$ENGINES" -n "$N" -properties "$PROPERTIES" -agents "$AGENTS"
