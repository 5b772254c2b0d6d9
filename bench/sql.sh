#!/usr/bin/env bash
# SQL backend latency without the cache: seeds the demo at 1,000,000
# properties and 20,000 agents on the local PostgreSQL and MariaDB (each in a
# database of its own, $DB, default listingproxy_bench, so tests never touch
# it) and in a SQLite file ($SQLITE_DB), then runs bench/cmd/sqlbench: a
# fixed mix of list queries (limit 20) called straight on the store, among
# them the agent_id filters a hostile client can send (500 ids of the scope,
# of another tenant, of no agent), p50/p99 per query and engine, and the
# EXPLAIN of each query's statements, flagging what Store.PlanProblems finds
# (a full scan, or a subquery or lookup run once per row of a large walk).
#
#   bash bench/sql.sh                      # N=200 PROPERTIES=1000000 AGENTS=20000
#   ENGINES=pg bash bench/sql.sh           # PostgreSQL only (any of pg, mysql, sqlite)
#   ONLY=agent_id bash bench/sql.sh        # only the queries whose name matches
#   DB=mine SQLITE_DB=/tmp/mine.db bash bench/sql.sh   # other database names
#   MIGRATE=0 bash bench/sql.sh            # skip Migrate + analyze of seeded databases
#   STATEMENTS=1 bash bench/sql.sh         # also the median time of each statement of each query
#
# Seeding is skipped when a database already holds exactly that many
# properties and agents (a fresh load takes about 3-4 minutes on PostgreSQL
# and 8-10 on MariaDB on the 2-core machine, 8 on SQLite). MariaDB's
# innodb_buffer_pool_size is raised to MYSQL_BUFFER_POOL (default 2G; "keep"
# leaves it) when smaller: with the 128 MiB default the 1M-row indexes do not
# fit and both the load and the queries become disk-bound. PostgreSQL keeps
# its settings (128 MB shared_buffers; the OS page cache holds the rest).
set -euo pipefail
cd "$(dirname "$0")/.."
N=${N:-200}
PROPERTIES=${PROPERTIES:-1000000}
AGENTS=${AGENTS:-20000}
ENGINES=${ENGINES:-pg,mysql,sqlite}
ONLY=${ONLY:-}
DB=${DB:-listingproxy_bench}
SQLITE_DB=${SQLITE_DB:-${TMPDIR:-/tmp}/$DB.db}
MYSQL_BUFFER_POOL=${MYSQL_BUFFER_POOL:-2G}
export LISTINGPROXY_BENCH_PG_DSN=${LISTINGPROXY_BENCH_PG_DSN:-postgres://postgres@127.0.0.1:5432/$DB?sslmode=disable}
export LISTINGPROXY_BENCH_MYSQL_DSN=${LISTINGPROXY_BENCH_MYSQL_DSN:-root@tcp(127.0.0.1:3306)/$DB?parseTime=true}
export LISTINGPROXY_BENCH_SQLITE_DSN="file:$SQLITE_DB"
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
  sqlite: {kind: sqlite, dsn: "${LISTINGPROXY_BENCH_SQLITE_DSN}"}
tenants:
  harbour: {backend: pg}
  summit:  {backend: mysql}
  other:   {backend: sqlite}
users:
  - {username: bench, password_bcrypt: "$2a$10$lZZjUks2xDyB1vxQtsPHceEx78gv.fildKhgToZSUq7nb.YaKf4NS", tenant: harbour}
YAML

count_pg() { psql "${LISTINGPROXY_BENCH_PG_DSN}" -tAc "SELECT (SELECT count(*) FROM properties) || '/' || (SELECT count(*) FROM agents)" 2>/dev/null || echo none; }
count_mysql() { mariadb "${MYSQL_ARGS[@]}" "$DB" -N -e "SELECT concat((SELECT count(*) FROM properties), '/', (SELECT count(*) FROM agents))" 2>/dev/null || echo none; }

seed() { # backend
  "$work/listingproxy" seed -config "$work/bench.yaml" -backend "$1" \
    -properties "$PROPERTIES" -agents "$AGENTS" -now 2026-11-21 -reset
}

if [[ ",$ENGINES," == *",pg,"* ]]; then
  psql "$PG_ADMIN" -tAc "SELECT 1 FROM pg_database WHERE datname = '$DB'" | grep -q 1 ||
    psql "$PG_ADMIN" -c "CREATE DATABASE $DB"
  if [[ "$(count_pg)" != "$PROPERTIES/$AGENTS" ]]; then seed pg; else echo "pg: already seeded with $PROPERTIES properties"; fi
fi
if [[ ",$ENGINES," == *",mysql,"* ]]; then
  mariadb "${MYSQL_ARGS[@]}" -e "CREATE DATABASE IF NOT EXISTS $DB CHARACTER SET utf8mb4 COLLATE utf8mb4_bin"
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
if [[ ",$ENGINES," == *",sqlite,"* ]]; then
  # No sqlite3 shell needed: a marker next to the file records a finished seed.
  if [[ "$(cat "$SQLITE_DB.seeded" 2>/dev/null)" != "$PROPERTIES/$AGENTS" ]]; then
    rm -f "$SQLITE_DB.seeded"
    seed sqlite && echo "$PROPERTIES/$AGENTS" >"$SQLITE_DB.seeded"
  else
    echo "sqlite: already seeded with $PROPERTIES properties"
  fi
fi

echo
# -migrate: a database seeded by an older listingproxy gets the schema's new
# indexes (and fresh statistics) first; MIGRATE=0 skips it.
migrate=()
if [[ "${MIGRATE:-1}" != 0 ]]; then migrate=(-migrate); fi
if [[ "${STATEMENTS:-0}" != 0 ]]; then migrate+=(-statements); fi
"$work/sqlbench" -config "$work/bench.yaml" -backends "$ENGINES" -n "$N" -properties "$PROPERTIES" -agents "$AGENTS" -only "$ONLY" "${migrate[@]}"
