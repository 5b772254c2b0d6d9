// Command legacy-crm is a stand-in for the legacy CRM endpoint that
// listingproxy fronts, for demos, tests and benchmarks. It serves the
// listing API (XML and JSON, spec and docs/wire-format.md) from a SQL store
// holding the demo data, behind HTTP Basic auth, and injects faults on
// request: latency with jitter, a random error rate (500 with an HTML page),
// recurring outages (503) and a slow-drip body. GET /stats (no auth) counts
// the requests it received; POST /stats/reset zeroes the counters.
// POST /_crm/changes (no auth) changes its data as the CRM's users would
// (changes.go) and, with -webhook, sends the signed change webhook a CRM
// sends, so that listingproxy's change feeds are tested end to end.
//
//	legacy-crm [-listen 127.0.0.1:9000] [-db DSN] [-user NAME:PASSWORD:TENANT:PERMS]...
//	           [-latency 300ms] [-jitter 50ms] [-error-rate 0.1] [-outage 30s/10s]
//	           [-drip 100ms] [-drip-bytes 256] [-seed 1]
//	           [-fixtures DIR] [-fixture-content-type TYPE]
//	           [-webhook URL-WITH-{tenant}] [-webhook-secret TENANT=SECRET]...
//
// With -fixtures, a GET whose path names a file under DIR is answered with
// that document as written (hand-written or recorded legacy answers with
// their quirks, package internal/legacyfixture), not by the stand-in's renderer.
//
// It is listingproxy's own API surface (proxy.Server) with no cache, so it
// answers exactly what the spec and the wire format say; the fault
// middleware (faults.go) sits in front of it. It must not be imported.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"time"
	_ "time/tzdata" // country zones must resolve without a system zoneinfo

	"golang.org/x/crypto/bcrypt"

	"listingproxy/internal/crmchanges"
	"listingproxy/internal/legacyfixture"
	"listingproxy/proxy"
	"listingproxy/upstream"
	"listingproxy/upstream/sqlstore"
	"listingproxy/upstream/sqlstore/demo"
)

func main() {
	if err := run(context.Background(), os.Args, os.Getenv, os.Stdout, os.Stderr); err != nil {
		fmt.Fprintln(os.Stderr, "legacy-crm:", err)
		os.Exit(1)
	}
}

// defaultUsers are the stand-in's users when no -user is given: one per demo
// tenant, with both permissions (what listingproxy's upstream users need).
var defaultUsers = []string{
	"harbour:harbour-crm:harbour:full,prices",
	"summit:summit-crm:summit:full,prices",
}

// userSpec is one -user flag: NAME:PASSWORD:TENANT:PERMS, PERMS a
// comma-separated list of full and prices (may be empty). The password may
// contain colons.
type userSpec struct {
	Username, Password, Tenant string
	Perms                      proxy.Permissions
}

func parseUserSpec(s string) (userSpec, error) {
	name, rest, ok1 := strings.Cut(s, ":")
	i := strings.LastIndex(rest, ":")
	j := -1
	if i >= 0 {
		j = strings.LastIndex(rest[:i], ":")
	}
	if !ok1 || j < 0 || name == "" {
		return userSpec{}, fmt.Errorf("user %q: want NAME:PASSWORD:TENANT:PERMS (PERMS: full, prices, both comma-separated, or empty)", s)
	}
	u := userSpec{Username: name, Password: rest[:j], Tenant: rest[j+1 : i]}
	if u.Password == "" || u.Tenant == "" {
		return userSpec{}, fmt.Errorf("user %q: empty password or tenant", s)
	}
	for p := range strings.SplitSeq(rest[i+1:], ",") {
		switch strings.TrimSpace(p) {
		case "", "none":
		case "full":
			u.Perms |= proxy.PermFull
		case "prices":
			u.Perms |= proxy.PermPrices
		default:
			return userSpec{}, fmt.Errorf("user %q: unknown permission %q (want full or prices)", s, p)
		}
	}
	return u, nil
}

// userFlags collects repeated -user flags.
type userFlags []userSpec

func (u *userFlags) String() string {
	names := make([]string, len(*u))
	for i, s := range *u {
		names[i] = s.Username
	}
	return strings.Join(names, ",")
}

func (u *userFlags) Set(s string) error {
	spec, err := parseUserSpec(s)
	if err != nil {
		return err
	}
	*u = append(*u, spec)
	return nil
}

// handlerOptions are the optional parts of newHandler.
type handlerOptions struct {
	Now    func() time.Time // the API's clock (open homes); default time.Now
	Faults FaultOptions
	Logger *slog.Logger // default: discard
	// Changes serves POST /_crm/changes (a *crmchanges.Handler); nil: 404.
	Changes http.Handler
}

// newHandler returns the stand-in: /stats and the listing API over backend
// behind the faults, with users hashed at bcrypt.MinCost (a stand-in's users
// are not secrets worth a slow hash). Every tenant named by a user is served
// by backend under its own name.
func newHandler(backend upstream.Backend, users []userSpec, f Faults, o handlerOptions) (http.Handler, *Stats, error) {
	if err := f.Validate(); err != nil {
		return nil, nil, err
	}
	var tenants []proxy.Tenant
	seen := map[string]bool{}
	pus := make([]proxy.User, 0, len(users))
	for _, u := range users {
		hash, err := bcrypt.GenerateFromPassword([]byte(u.Password), bcrypt.MinCost)
		if err != nil {
			return nil, nil, fmt.Errorf("user %s: %w", u.Username, err)
		}
		pus = append(pus, proxy.User{Username: u.Username, PasswordHash: hash, Tenant: u.Tenant, Permissions: u.Perms})
		if !seen[u.Tenant] {
			seen[u.Tenant] = true
			tenants = append(tenants, proxy.Tenant{Name: u.Tenant, Backend: backend, BackendName: "sql", Upstream: u.Tenant})
		}
	}
	api, err := proxy.New(pus, tenants, proxy.Options{Now: o.Now, Logger: o.Logger})
	if err != nil {
		return nil, nil, err
	}
	stats := &Stats{}
	faults := newFaultInjector(f, o.Faults, stats)
	mux := http.NewServeMux()
	sh := statsHandler(stats)
	mux.Handle("GET /stats", sh)
	mux.Handle("POST /stats/reset", sh)
	if o.Changes != nil {
		mux.Handle("POST /_crm/changes", o.Changes)
	}
	mux.Handle("/", faults.Wrap(api))
	return mux, stats, nil
}

// openStore opens the SQLite store at dsn, creating the schema and seeding
// the demo data (anchored at now) when it is empty.
func openStore(ctx context.Context, dsn string, now func() time.Time, log *slog.Logger) (*sqlstore.Store, error) {
	st, err := sqlstore.Open(ctx, sqlstore.Config{Dialect: "sqlite", DSN: dsn, Now: now})
	if err != nil {
		return nil, err
	}
	if err := seed(ctx, st, now, log); err != nil {
		st.Close()
		return nil, err
	}
	return st, nil
}

func seed(ctx context.Context, st *sqlstore.Store, now func() time.Time, log *slog.Logger) error {
	if err := st.Migrate(ctx); err != nil {
		return err
	}
	empty, err := st.Empty(ctx)
	if err != nil || !empty {
		return err
	}
	start := time.Now()
	if err := st.SeedDemo(ctx, demo.Options{Now: now()}); err != nil {
		return fmt.Errorf("seed demo data: %w", err)
	}
	log.Info("seeded demo data", "took", time.Since(start).Round(time.Millisecond).String())
	return nil
}

// run parses the flags, opens (and on first start seeds) the store, and
// serves until ctx is done or SIGINT/SIGTERM arrives.
func run(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("legacy-crm", flag.ContinueOnError)
	fs.SetOutput(stderr)
	defaultDB := getenv("LEGACY_CRM_DB")
	if defaultDB == "" {
		defaultDB = "file:" + filepath.ToSlash(filepath.Join(os.TempDir(), "legacy-crm.db"))
	}
	listen := fs.String("listen", "127.0.0.1:9000", "listen address")
	dsn := fs.String("db", defaultDB, "SQLite data source, seeded with the demo data on first start (default from $LEGACY_CRM_DB)")
	var users userFlags
	fs.Var(&users, "user", "a user NAME:PASSWORD:TENANT:PERMS, repeatable (default: "+strings.Join(defaultUsers, " and ")+")")
	var f Faults
	fs.DurationVar(&f.Latency, "latency", 0, "fixed delay before every answer, e.g. 300ms")
	fs.DurationVar(&f.Jitter, "jitter", 0, "random extra delay in [0, jitter)")
	fs.Float64Var(&f.ErrorRate, "error-rate", 0, "share of requests answered 500 with an HTML page, 0 to 1")
	outage := fs.String("outage", "", "recurring outage EVERY/FOR, e.g. 30s/10s: the first 10s of every 30s answer 503")
	fs.DurationVar(&f.Drip, "drip", 0, "slow drip: pause between body chunks, e.g. 100ms")
	fs.IntVar(&f.DripBytes, "drip-bytes", DefaultDripBytes, "chunk size of -drip")
	seedFlag := fs.Uint64("seed", 1, "random seed of jitter and injected errors")
	verbose := fs.Bool("v", false, "log every request")
	fixtures := fs.String("fixtures", "", "directory of legacy documents served for the paths they name (DIR/au/properties.xml), before the demo data")
	fixtureType := fs.String("fixture-content-type", "text/html; charset=UTF-8", "Content-Type of the -fixtures documents (PHP's default by default)")
	hookURL := fs.String("webhook", "", "after each change (POST /_crm/changes), send a signed webhook to this URL; {tenant} is replaced by the tenant, e.g. http://127.0.0.1:8080/hooks/changes/{tenant}")
	secrets := secretFlags{}
	fs.Var(secrets, "webhook-secret", "a tenant's webhook secret TENANT=SECRET, repeatable (a tenant without one gets no webhook)")
	if err := fs.Parse(args[1:]); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("unexpected argument %q", fs.Arg(0))
	}
	var err error
	if f.OutageEvery, f.OutageFor, err = parseOutage(*outage); err != nil {
		return err
	}
	if err := f.Validate(); err != nil {
		return err
	}
	if len(users) == 0 {
		for _, s := range defaultUsers {
			_ = users.Set(s)
		}
	}
	level := slog.LevelInfo
	if *verbose {
		level = slog.LevelDebug
	}
	log := slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: level}))

	ctx, stop := signal.NotifyContext(ctx, os.Interrupt, syscall.SIGTERM)
	defer stop()

	st, err := openStore(ctx, *dsn, time.Now, log)
	if err != nil {
		return err
	}
	defer st.Close()
	wdb, err := crmchanges.OpenWriter(*dsn)
	if err != nil {
		return err
	}
	defer wdb.Close()
	ch := crmchanges.New(wdb, crmchanges.Options{WebhookURL: *hookURL, Secrets: secrets})
	h, _, err := newHandler(st, users, f, handlerOptions{Faults: FaultOptions{Seed: *seedFlag}, Logger: log, Changes: ch})
	if err != nil {
		return err
	}
	if *fixtures != "" {
		h = legacyfixture.Handler(*fixtures, *fixtureType, h)
	}
	if *verbose {
		h = accessLog(h, log)
	}

	ln, err := net.Listen("tcp", *listen)
	if err != nil {
		return fmt.Errorf("listen %s: %w", *listen, err)
	}
	srv := &http.Server{Handler: h, ReadHeaderTimeout: 5 * time.Second, ErrorLog: slog.NewLogLogger(log.Handler(), slog.LevelWarn)}
	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(ln) }()
	fmt.Fprintf(stdout, "legacy-crm listening on http://%s (users: %s; faults: %s)\n", ln.Addr(), users.String(), describe(f))

	select {
	case <-ctx.Done():
	case err := <-errc:
		if !errors.Is(err, http.ErrServerClosed) {
			return fmt.Errorf("serve: %w", err)
		}
	}
	sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
	defer cancel()
	if err := srv.Shutdown(sctx); err != nil {
		return fmt.Errorf("shutdown: %w", err)
	}
	return nil
}

// describe is a one-line summary of f for the start-up line.
func describe(f Faults) string {
	var parts []string
	if f.Latency > 0 || f.Jitter > 0 {
		parts = append(parts, fmt.Sprintf("latency %s+[0,%s)", f.Latency, f.Jitter))
	}
	if f.ErrorRate > 0 {
		parts = append(parts, fmt.Sprintf("error rate %g", f.ErrorRate))
	}
	if f.OutageEvery > 0 {
		parts = append(parts, fmt.Sprintf("outage %s every %s", f.OutageFor, f.OutageEvery))
	}
	if f.Drip > 0 {
		parts = append(parts, fmt.Sprintf("drip %d bytes per %s", f.DripBytes, f.Drip))
	}
	if len(parts) == 0 {
		return "none"
	}
	return strings.Join(parts, ", ")
}

// accessLog logs one debug line per request (never the Authorization
// header).
func accessLog(next http.Handler, log *slog.Logger) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		start := time.Now()
		sw := &statusWriter{ResponseWriter: w}
		next.ServeHTTP(sw, r)
		log.Debug("request", "method", r.Method, "uri", r.URL.RequestURI(), "status", sw.code, "took", time.Since(start).Round(time.Microsecond).String())
	})
}

// secretFlags collects -webhook-secret TENANT=SECRET flags.
type secretFlags map[string][]byte

func (s secretFlags) String() string { return fmt.Sprintf("%d tenants", len(s)) }

func (s secretFlags) Set(v string) error {
	t, secret, ok := strings.Cut(v, "=")
	if !ok || t == "" || secret == "" {
		return fmt.Errorf("webhook secret %q: want TENANT=SECRET", v)
	}
	s[t] = []byte(secret)
	return nil
}
