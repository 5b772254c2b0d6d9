package main

import (
	"cmp"
	"context"
	"fmt"
	"log/slog"
	"maps"
	"net/http"
	"slices"
	"strings"
	"time"

	"go.opentelemetry.io/otel/trace"

	"listingproxy/config"
	"listingproxy/telemetry"
	"listingproxy/upstream"
	"listingproxy/upstream/crm"
	"listingproxy/upstream/sqlstore"
	"listingproxy/upstream/sqlstore/demo"
)

// backendKind is how cmd opens one kind of backend.
type backendKind struct {
	// open opens the backend name of cfg; the function returned releases
	// it.
	open func(ctx context.Context, name string, cfg *config.Config, env openEnv) (upstream.Backend, func(), error)
	// concurrency is the backend's own concurrency limit, which
	// upstream/breaker shares out among tenants: the SQL pool size, the
	// CRM's concurrent calls.
	concurrency func(config.Backend) int
	// adaptive makes concurrency a ceiling, the limit in force following
	// the backend's latency (upstream/breaker). A CRM's latency says how
	// loaded it is; a SQL pool's limit is its connections, and its
	// queries' latency depends on the query far more than on the load.
	adaptive bool
	// feeds opens the change feeds the backend's configuration asks for
	// (none: nil); nil when the kind has none.
	feeds func(feedEnv) ([]upstream.ChangeFeed, error)
}

// openEnv is what every opener may use beyond the configuration.
type openEnv struct {
	log *slog.Logger
	now func() time.Time
	tp  trace.TracerProvider
}

// backendKinds is every backend kind listingproxy opens, by config's kind:
// config decodes a kind's keys (config.Backend.settings), this table opens
// it. A kind config accepts and this table lacks fails at start-up with its
// name, never as a guess (TestEveryKindOpens checks the two agree).
var backendKinds = map[string]backendKind{
	config.KindSQLite:   sqlKind,
	config.KindPostgres: sqlKind,
	config.KindMySQL:    sqlKind,
	config.KindCRM:      {open: openCRM, concurrency: func(b config.Backend) int { return cmp.Or(b.CRM.MaxConcurrency, crm.DefaultMaxConcurrency) }, adaptive: true, feeds: crmFeeds},
}

var sqlKind = backendKind{open: openSQL, concurrency: func(b config.Backend) int { return sqlstore.PoolSize(b.Kind, b.SQL.MaxOpenConns) }, feeds: sqlFeeds}

// openBackend opens the backend name of cfg with its kind's opener.
func openBackend(ctx context.Context, name string, cfg *config.Config, log *slog.Logger, now func() time.Time, tp trace.TracerProvider) (upstream.Backend, func(), error) {
	kind := cfg.Backends[name].Kind
	k, ok := backendKinds[kind]
	if !ok {
		return nil, nil, fmt.Errorf("backend %s: kind %q cannot be opened (known: %s)", name, kind, strings.Join(slices.Sorted(maps.Keys(backendKinds)), ", "))
	}
	b, closer, err := k.open(ctx, name, cfg, openEnv{log: log, now: now, tp: tp})
	if err != nil {
		return nil, nil, fmt.Errorf("backend %s: %w", name, err)
	}
	return b, closer, nil
}

// openCRM opens a crm backend: the CRM client with each of its tenants'
// upstream credentials.
func openCRM(_ context.Context, name string, cfg *config.Config, env openEnv) (upstream.Backend, func(), error) {
	o, err := cfg.CRMOptions(name)
	if err != nil {
		return nil, nil, err
	}
	o.Now, o.Logger = env.now, env.log.With("backend", name)
	if env.tp != nil {
		o.WrapTransport = func(rt http.RoundTripper) http.RoundTripper { return telemetry.Transport(rt, env.tp) }
	}
	c, err := crm.New(o)
	if err != nil {
		return nil, nil, err
	}
	return c, c.Close, nil
}

// openSQL opens a sqlite, postgres or mysql backend. A database down at
// start-up is waited for (sqlstore.Open), so the demo's migration and
// seeding run when it first answers.
func openSQL(ctx context.Context, name string, cfg *config.Config, env openEnv) (upstream.Backend, func(), error) {
	sc, b := cfg.SQLConfig(name), cfg.Backends[name].SQL
	sc.Now, sc.Logger, sc.TracerProvider = env.now, env.log.With("backend", name), env.tp
	if b.SeedDemo {
		sc.Setup = func(ctx context.Context, st *sqlstore.Store) error {
			return st.SetupDemo(ctx, demo.Options{Now: env.now()}, b.Notify)
		}
	}
	st, err := sqlstore.Open(ctx, sc)
	if err != nil {
		return nil, nil, err
	}
	return st, func() { st.Close() }, nil
}
