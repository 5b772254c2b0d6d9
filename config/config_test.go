package config_test

import (
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"listingproxy/config"
)

func noEnv(string) string { return "" }

func TestShippedConfigLoads(t *testing.T) {
	t.Parallel()
	cfg, err := config.Load("../config.yaml", noEnv)
	if err != nil {
		t.Fatalf("shipped config.yaml: %v", err)
	}
	if got, want := cfg.Backends["demo"].Kind, config.KindSQLite; got != want {
		t.Errorf("demo backend kind = %q, want %q", got, want)
	}
	if got, want := len(cfg.Users), 4; got != want {
		t.Errorf("users = %d, want %d", got, want)
	}
	if got, want := cfg.Cache.TTL.D(), 60*time.Second; got != want {
		t.Errorf("cache.ttl = %v, want %v", got, want)
	}
	if got, want := cfg.Tenants["summit"].UpstreamTenant, "summit"; got != want {
		t.Errorf("default upstream_tenant = %q, want %q", got, want)
	}
}

const validHash = "$2a$10$lZZjUks2xDyB1vxQtsPHceEx78gv.fildKhgToZSUq7nb.YaKf4NS"

func env(vars map[string]string) func(string) string {
	return func(k string) string { return vars[k] }
}

// minimal is the smallest valid file; cases append to it from line 3.
const minimal = "backends: {d: {kind: sqlite, dsn: x}}\ntenants: {a: {backend: d}}\n"

func TestEnvExpansion(t *testing.T) {
	t.Parallel()
	vars := env(map[string]string{
		"LEVEL": "debug", "TTL": "90s", "MAX": "250", "SIZE": "64MiB", "YES": "true",
		"RATIO": "0.25", "PW": "123", "NULLISH": "null", "HOST": "127.0.0.1", "PORT": "8181",
	})
	tests := []struct {
		name, src string
		got       func(*config.Config) any
		want      any
	}{
		{"string", `log: {level: "${LEVEL}"}`, func(c *config.Config) any { return c.Log.Level }, "debug"},
		{"duration", `cache: {ttl: "${TTL}"}`, func(c *config.Config) any { return c.Cache.TTL.D() }, 90 * time.Second},
		{"bare duration", "cache:\n  ttl: ${TTL}", func(c *config.Config) any { return c.Cache.TTL.D() }, 90 * time.Second},
		{"duration map", `cache: {ttls: {agent: "${TTL}"}}`, func(c *config.Config) any { return c.Cache.ResourceTTL("agent") }, 90 * time.Second},
		{"integer", `max_results: "${MAX}"`, func(c *config.Config) any { return c.MaxResults }, 250},
		{"unsigned", "breaker:\n  failures: ${MAX}", func(c *config.Config) any { return c.Breaker.Failures }, uint32(250)},
		{"byte size", `cache: {max_bytes: "${SIZE}"}`, func(c *config.Config) any { return c.Cache.MaxBytes }, config.ByteSize(64 << 20)},
		{"boolean", `cache: {disabled: "${YES}"}`, func(c *config.Config) any { return c.Cache.Disabled }, true},
		{"float pointer", `telemetry: {sample_ratio: "${RATIO}"}`, func(c *config.Config) any { return *c.Telemetry.SampleRatio }, 0.25},
		{"part of a value", `listen: "${HOST}:${PORT}"`, func(c *config.Config) any { return c.Listen }, "127.0.0.1:8181"},
		{"number stays a string", `admin: {username: "${PW}", password_bcrypt: "` + validHash + `"}`, func(c *config.Config) any { return c.Admin.Username }, "123"},
		{"shared tier address", "cache:\n  shared: {addrs: [\"${HOST}:${PORT}\"], password: \"${PW}\"}", func(c *config.Config) any { return []string{c.Cache.Shared.Addrs[0], c.Cache.Shared.Password} }, []string{"127.0.0.1:8181", "123"}},
		{"null stays a string", `admin: {username: "${NULLISH}", password_bcrypt: "` + validHash + `"}`, func(c *config.Config) any { return c.Admin.Username }, "null"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg, err := config.Parse("c.yaml", []byte(minimal+tt.src+"\n"), vars)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tt.want, tt.got(cfg)); diff != "" {
				t.Errorf("value mismatch (-want +got):\n%s", diff)
			}
		})
	}
}

// TestDecodeProblems: every problem of the file at once, each located as
// file:line: path: message, whatever its kind.
func TestDecodeProblems(t *testing.T) {
	t.Parallel()
	vars := env(map[string]string{"SOON": "soon", "MANY": "many"})
	tests := []struct {
		name, src string
		want      []string
	}{
		{"unknown key", "lisen: \":80\"\n", []string{`c.yaml:3: lisen: unknown key "lisen" (did you mean "listen"?)`}},
		{"unknown nested key", "cache: {tll: 5s}\n", []string{`c.yaml:3: cache.tll: unknown key "tll" (did you mean "ttl"?)`}},
		{"unknown key, nothing near", "frobnicate: 1\n", []string{`c.yaml:3: frobnicate: unknown key "frobnicate"`}},
		{"unknown key in a list item", "users:\n  - {username: u, pasword: x}\n", []string{
			`c.yaml:4: users[0].pasword: unknown key "pasword"`,
			`c.yaml:4: users[0].password_bcrypt: required (a bcrypt hash; make one with: listingproxy hash-password)`,
			`c.yaml:4: users[0].tenant: unknown tenant ""`,
		}},
		{"every bad value at once", "cache: {ttl: soon, max_bytes: lots, disabled: maybe}\nmax_results: many\nbreaker: {failures: -1, failure_ratio: half}\nlisten: nope\n", []string{
			`c.yaml:3: cache.ttl: invalid duration "soon" (want e.g. 500ms, 10s, 5m)`,
			`c.yaml:3: cache.max_bytes: invalid size "lots" (want e.g. 65536, 64KiB, 256MiB, 1GiB)`,
			`c.yaml:3: cache.disabled: invalid boolean "maybe" (want true or false)`,
			`c.yaml:4: max_results: invalid integer "many"`,
			`c.yaml:5: breaker.failures: invalid count "-1" (want a whole number, 0 or more)`,
			`c.yaml:5: breaker.failure_ratio: invalid number "half"`,
			`c.yaml:6: listen: invalid listen address "nope" (want host:port or :port)`,
		}},
		{"negative duration", "cache: {ttl: -5s}\n", []string{`c.yaml:3: cache.ttl: invalid duration "-5s" (want e.g. 500ms, 10s, 5m)`}},
		{"unset variables", "cache: {ttl: \"${CACHE_TTL}\"}\nadmin: {username: \"${ADMIN_USER}\", password_bcrypt: \"${ADMIN_HASH}\"}\n", []string{
			`c.yaml:3: cache.ttl: environment variable CACHE_TTL is not set`,
			`c.yaml:4: admin.username: environment variable ADMIN_USER is not set`,
			`c.yaml:4: admin.password_bcrypt: environment variable ADMIN_HASH is not set`,
		}},
		{"five unset variables, five problems (nothing that follows from them)", "cache:\n  shared: {addrs: [\"${REDIS}\"]}\nusers: [{username: u, password_bcrypt: \"${HASH}\", tenant: a, permissions: [full]}]\nadmin: {username: admin, password_bcrypt: \"${ADMIN_HASH}\"}\nserver:\n  tls: {cert_file: \"${CERT}\", key_file: \"${KEY}\"}\n", []string{
			`c.yaml:4: cache.shared.addrs[0]: environment variable REDIS is not set`,
			`c.yaml:5: users[0].password_bcrypt: environment variable HASH is not set`,
			`c.yaml:6: admin.password_bcrypt: environment variable ADMIN_HASH is not set`,
			`c.yaml:8: server.tls.cert_file: environment variable CERT is not set`,
			`c.yaml:8: server.tls.key_file: environment variable KEY is not set`,
		}},
		{"TLS files missing, with the other problems", "max_results: -1\nserver:\n  tls: {cert_file: /nonexistent/c.pem, key_file: /nonexistent/k.pem}\n", []string{
			`c.yaml:3: max_results: must be between 1 and 100000 (0: the default), got -1`,
			`c.yaml:5: server.tls.cert_file: open /nonexistent/c.pem: no such file or directory`,
			`c.yaml:5: server.tls.key_file: open /nonexistent/k.pem: no such file or directory`,
		}},
		{"variables with bad values", "cache: {ttl: \"${SOON}\"}\nmax_results: \"${MANY}\"\n", []string{
			`c.yaml:3: cache.ttl: invalid duration "soon" (want e.g. 500ms, 10s, 5m)`,
			`c.yaml:4: max_results: invalid integer "many"`,
		}},
		{"list for a mapping", "cache: [1, 2]\n", []string{`c.yaml:3: cache: want a mapping, got a list`}},
		{"mapping for a list", "users: {a: b}\n", []string{`c.yaml:3: users: want a list, got a mapping`}},
		{"list for a value", "listen: [a, b]\n", []string{`c.yaml:3: listen: want a single value, got a list`}},
		{"repeated key", "listen: \":80\"\nlisten: \":81\"\n", []string{`c.yaml:4: listen: key "listen" repeated (first at line 3)`}},
		{"not yaml", "listen: [\n", []string{`c.yaml:3: did not find expected node content`}},
		{"shared tier without addresses", "cache:\n  shared: {key_prefix: x}\n", []string{`c.yaml:4: cache.shared.addrs: at least one Redis address is required (host:port)`}},
		{"shared lease not shorter than the fill timeout", "cache:\n  fill_timeout: 4s\n  shared: {addrs: [\"r:6379\"], lease: 4s}\n", []string{
			`c.yaml:5: cache.shared.lease: 4s: must be shorter than cache.fill_timeout (4s), or a replica waiting on a filler that died reaches its own deadline before it may fill`}},
		{"disk tier without a path", "cache:\n  disk: {max_bytes: 1GiB}\n", []string{
			`c.yaml:4: cache.disk.path: required: the file the disk tier keeps its entries in (its directory must exist)`}},
		{"disk tier bad values", "cache:\n  disk:\n    path: /nonexistent-dir/cache.db\n    max_bytes: 1KiB\n", []string{
			`c.yaml:5: cache.disk.path: "/nonexistent-dir/cache.db": its directory "/nonexistent-dir" does not exist`,
			`c.yaml:6: cache.disk.max_bytes: must be at least 1MiB`}},
		{"disk tier path a directory", "cache:\n  disk: {path: /tmp}\n", []string{
			`c.yaml:4: cache.disk.path: "/tmp" is a directory; want a file in it (e.g. /tmp/cache.db)`}},
		{"disk tier with a shared tier", "cache:\n  shared: {addrs: [\"r:6379\"]}\n  disk: {path: /tmp/c.db}\n", []string{
			`c.yaml:5: cache.disk: cannot be used with cache.shared: a fleet's replicas start warm from Redis, and one second tier is consulted per miss (remove one of them)`}},
		{"warm-up bad values", "cache:\n  warm:\n    file: /nonexistent-dir/warm.json\n    keys: -1\n    ready_timeout: 5s\n", []string{
			`c.yaml:5: cache.warm.file: "/nonexistent-dir/warm.json": its directory "/nonexistent-dir" does not exist`,
			`c.yaml:6: cache.warm.keys: must not be negative (0: the default)`}},
		{"warm-up file a directory", "cache:\n  warm: {file: /tmp}\n", []string{
			`c.yaml:4: cache.warm.file: "/tmp" is a directory; want a file in it (e.g. /tmp/warm.json)`}},
		{"shared tier bad values", "cache:\n  shared:\n    addrs: [redis, \"r1:6379\"]\n    db: 2\n    lease: 1h30\n    max_entry_bytes: huge\n    tls: {cert_file: c.pem}\n", []string{
			`c.yaml:5: cache.shared.addrs[0]: invalid address "redis" (want host:port)`,
			`c.yaml:6: cache.shared.db: a Redis Cluster has only database 0`,
			`c.yaml:7: cache.shared.lease: invalid duration "1h30" (want e.g. 500ms, 10s, 5m)`,
			`c.yaml:8: cache.shared.max_entry_bytes: invalid size "huge" (want e.g. 65536, 64KiB, 256MiB, 1GiB)`,
			`c.yaml:9: cache.shared.tls.enabled: tls files or server_name are set but tls is not enabled`,
			`c.yaml:9: cache.shared.tls: cert_file and key_file go together`,
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := config.Parse("c.yaml", []byte(minimal+tt.src), vars)
			probs, ok := err.(config.Problems)
			if !ok {
				t.Fatalf("error = %v (%T), want config.Problems", err, err)
			}
			if diff := cmp.Diff(tt.want, []string(probs)); diff != "" {
				t.Errorf("problems mismatch (-want +got):\n%s", diff)
			}
		})
	}
}

func TestProblemsAreListedAndLocated(t *testing.T) {
	t.Parallel()
	src := `listen: "nope"
countries: [au, xx]
backends:
  main: {kind: postgres, dsn: "${PG_DSN}", prepared_statements: -1}
  crm: {kind: crm, url: "ftp://x", hydrate: sometimes, max_elements: -1, max_results: -1, max_offset: -5, max_body_bytes: 32MiB, max_decoding_bytes: 16MiB}
  odd: {kind: oracle}
tenants:
  a: {backend: missing}
  b: {backend: crm}
users:
  - {username: u1, password_bcrypt: "plain", tenant: a, permissions: [full, admin]}
  - {username: u1, password_bcrypt: "` + validHash + `", tenant: zzz}
cache: {max_bytes: 10KiB, ttls: {houses: 5s}, fill_timeout: 1m}
log: {level: loud}
max_offset: -1
`
	_, err := config.Parse("c.yaml", []byte(src), noEnv)
	if err == nil {
		t.Fatal("want an error")
	}
	probs, ok := err.(config.Problems)
	if !ok {
		t.Fatalf("error type %T, want config.Problems", err)
	}
	want := []string{
		`c.yaml:1: listen: invalid listen address "nope" (want host:port or :port)`,
		`c.yaml:2: countries[1]: unknown country "xx" (known: au, nz)`,
		`c.yaml:4: backends.main.dsn: environment variable PG_DSN is not set`,
		`c.yaml:4: backends.main.prepared_statements: must not be negative (0: the default)`,
		`c.yaml:5: backends.crm.url: invalid url "ftp://x" (want http(s)://host[:port][/path])`,
		`c.yaml:5: backends.crm.hydrate: invalid value "sometimes" (want auto, always or never)`,
		`c.yaml:5: backends.crm.max_elements: must not be negative (0: the default)`,
		`c.yaml:5: backends.crm.max_decoding_bytes: must be at least max_body_bytes (33554432), or an answer of the largest size could never be decoded`,
		`c.yaml:5: backends.crm.max_results: must be between 1 and 100000, or 0 for no cap, got -1`,
		`c.yaml:5: backends.crm.max_offset: must not be negative (0: no cap), got -5`,
		`c.yaml:6: backends.odd.kind: unknown kind "oracle" (want sqlite, postgres, mysql or crm)`,
		`c.yaml:8: tenants.a.backend: unknown backend "missing"`,
		`c.yaml:9: tenants.b.upstream_username: a tenant on a crm backend needs upstream_username and upstream_password`,
		`c.yaml:11: users[0].password_bcrypt: not a bcrypt hash (make one with: listingproxy hash-password)`,
		`c.yaml:11: users[0].permissions[1]: unknown permission "admin" (want full or prices)`,
		`c.yaml:12: users[1].username: duplicate username "u1"`,
		`c.yaml:12: users[1].tenant: unknown tenant "zzz"`,
		`c.yaml:13: cache.max_bytes: must be at least 1MiB`,
		`c.yaml:13: cache.ttls.houses: unknown resource "houses" (want properties, property, agents, agent)`,
		`c.yaml:13: cache.fill_timeout: 1m0s: must be shorter than server.write_timeout (30s), or a client waiting on a slow fill loses its connection before its 503`,
		`c.yaml:14: log.level: unknown level "loud" (want debug, info, warn or error)`,
		`c.yaml:15: max_offset: must not be negative (0: no cap), got -1`,
	}
	if diff := cmp.Diff(want, []string(probs)); diff != "" {
		t.Errorf("problems mismatch (-want +got):\n%s", diff)
	}
}

func TestByteSize(t *testing.T) {
	t.Parallel()
	tests := map[string]config.ByteSize{"1024": 1024, "64KiB": 64 << 10, "256MiB": 256 << 20, "1GiB": 1 << 30, "10MB": 10e6}
	for in, want := range tests {
		got, err := config.ParseByteSize(in)
		if err != nil || got != want {
			t.Errorf("ParseByteSize(%q) = %d, %v; want %d", in, got, err, want)
		}
	}
	for _, bad := range []string{"", "MiB", "-1", "1.5GiB", "99999999999999999999"} {
		if _, err := config.ParseByteSize(bad); err == nil {
			t.Errorf("ParseByteSize(%q): want an error", bad)
		}
	}
}

func TestMissingFile(t *testing.T) {
	t.Parallel()
	_, err := config.Load(t.TempDir()+"/none.yaml", os.Getenv)
	if err == nil || !strings.Contains(err.Error(), "none.yaml") {
		t.Errorf("error = %v, want it to name the file", err)
	}
}

func TestSampleRatioZeroIsKept(t *testing.T) {
	t.Parallel()
	src := "backends: {d: {kind: sqlite, dsn: x}}\ntenants: {a: {backend: d}}\n"
	cfg, err := config.Parse("c.yaml", []byte(src), noEnv)
	if err != nil {
		t.Fatal(err)
	}
	if got := *cfg.Telemetry.SampleRatio; got != 1 {
		t.Errorf("default sample_ratio = %v, want 1", got)
	}
	cfg, err = config.Parse("c.yaml", []byte(src+"telemetry: {sample_ratio: 0}\n"), noEnv)
	if err != nil {
		t.Fatal(err)
	}
	if got := *cfg.Telemetry.SampleRatio; got != 0 {
		t.Errorf("sample_ratio 0 became %v, want 0 (no sampling)", got)
	}
}

func TestAbuseLimits(t *testing.T) {
	t.Parallel()
	base := "backends: {d: {kind: sqlite, dsn: x}}\n"
	t.Run("defaults", func(t *testing.T) {
		cfg, err := config.Parse("c.yaml", []byte(base+"tenants: {a: {backend: d}, b: {backend: d, rate_limit: {requests_per_second: 2.5}}}\n"), noEnv)
		if err != nil {
			t.Fatal(err)
		}
		// Left zero: proxy's defaults (proxy.DefaultAuthQueue...), the
		// one place they are stated.
		want := config.Auth{}
		if diff := cmp.Diff(want, cfg.Auth); diff != "" {
			t.Errorf("auth defaults (-want +got):\n%s", diff)
		}
		if cfg.Tenants["a"].RateLimit != nil {
			t.Errorf("tenant a: rate_limit = %+v, want none", cfg.Tenants["a"].RateLimit)
		}
		if diff := cmp.Diff(&config.RateLimit{RequestsPerSecond: 2.5, Burst: 3}, cfg.Tenants["b"].RateLimit); diff != "" {
			t.Errorf("tenant b rate_limit (-want +got):\n%s", diff)
		}
		if len(cfg.Server.TrustedProxies) != 0 {
			t.Errorf("trusted_proxies = %v, want none", cfg.Server.TrustedProxies)
		}
	})
	t.Run("problems", func(t *testing.T) {
		src := base + `tenants:
  a: {backend: d, rate_limit: {requests_per_second: 0, burst: -1}}
server:
  trusted_proxies: [10.0.0.0/8, proxy.example, "10.0.0.0/40", "::1"]
auth:
  workers: -1
  queue: -2
  checks_per_second: -1
  failures_per_address: {per_minute: -1, burst: 0}
  failures_per_username: {per_minute: 5}
  verified_entries: -5
`
		_, err := config.Parse("c.yaml", []byte(src), noEnv)
		probs, ok := err.(config.Problems)
		if !ok {
			t.Fatalf("error = %v (%T), want config.Problems", err, err)
		}
		want := []string{
			`c.yaml:3: tenants.a.rate_limit.requests_per_second: must be a positive number (omit rate_limit for no limit)`,
			`c.yaml:3: tenants.a.rate_limit.burst: must be at least 1`,
			`c.yaml:5: server.trusted_proxies[1]: invalid address or CIDR prefix "proxy.example" (want e.g. 10.0.0.0/8, 192.0.2.7 or ::1)`,
			`c.yaml:5: server.trusted_proxies[2]: invalid address or CIDR prefix "10.0.0.0/40" (want e.g. 10.0.0.0/8, 192.0.2.7 or ::1)`,
			`c.yaml:7: auth.workers: must not be negative (0: one less than the number of CPUs)`,
			`c.yaml:8: auth.queue: must not be negative (0: the default)`,
			`c.yaml:9: auth.checks_per_second: must be a positive number (0: the default)`,
			`c.yaml:10: auth.failures_per_address.per_minute: must be a positive number`,
			`c.yaml:10: auth.failures_per_address.burst: must be at least 1`,
			`c.yaml:11: auth.failures_per_username.burst: must be at least 1`,
			`c.yaml:12: auth.verified_entries: must not be negative (0: the default)`,
		}
		if diff := cmp.Diff(want, []string(probs)); diff != "" {
			t.Errorf("problems mismatch (-want +got):\n%s", diff)
		}
	})
}

// TestDrainDelay: absent is the documented 5s, an explicit 0 disables the
// drain, a negative delay is a located error.
func TestDrainDelay(t *testing.T) {
	t.Parallel()
	src := "backends: {d: {kind: sqlite, dsn: x}}\ntenants: {a: {backend: d}}\n"
	for _, tc := range []struct {
		name, extra string
		want        time.Duration
	}{
		{"absent", "", 5 * time.Second},
		{"zero", "server: {drain_delay: 0s}\n", 0},
		{"set", "server: {drain_delay: 12s}\n", 12 * time.Second},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg, err := config.Parse("c.yaml", []byte(src+tc.extra), noEnv)
			if err != nil {
				t.Fatal(err)
			}
			if got := cfg.Server.DrainDelay.D(); got != tc.want {
				t.Errorf("drain_delay = %v, want %v", got, tc.want)
			}
		})
	}
	_, err := config.Parse("c.yaml", []byte(src+"server: {drain_delay: -1s}\n"), noEnv)
	if err == nil || !strings.Contains(err.Error(), `c.yaml:3: server.drain_delay: invalid duration "-1s"`) {
		t.Errorf("negative drain_delay: err = %v, want it located at c.yaml:3 server.drain_delay", err)
	}
}

// TestAnchorsAndMergeKeys: YAML's own reuse works in the checked schema.
func TestAnchorsAndMergeKeys(t *testing.T) {
	t.Parallel()
	src := `backends:
  a: &sql {kind: sqlite, dsn: "file:a.db", query_timeout: 2s}
  b:
    <<: *sql
    dsn: "file:b.db"
tenants:
  t1: {backend: a}
  t2: {backend: b}
`
	cfg, err := config.Parse("c.yaml", []byte(src), noEnv)
	if err != nil {
		t.Fatal(err)
	}
	b := cfg.Backends["b"]
	if b.Kind != config.KindSQLite || b.SQL == nil || b.SQL.DSN != "file:b.db" || b.SQL.QueryTimeout.D() != 2*time.Second {
		t.Errorf("merged backend b = %+v, want a's kind and timeout with its own dsn", b)
	}
}

// TestBackendKinds: each kind's keys decode into its own struct, and a key
// of another kind is a located error naming the kind.
func TestBackendKinds(t *testing.T) {
	t.Parallel()
	src := `backends:
  legacy:
    kind: crm
    url: http://crm.example
    dsn: "file:x.db"
    max_open_conns: 3
  db: {kind: postgres, dsn: "postgres://db", hydrate: never, max_open_conns: 3}
  reused: &lite {kind: sqlite, dsn: "file:a.db"}
  merged:
    <<: *lite
    url: http://crm.example
  nokind: {dsn: "file:b.db"}
tenants:
  a: {backend: db}
`
	_, err := config.Parse("c.yaml", []byte(src), noEnv)
	want := config.Problems{
		`c.yaml:5: backends.legacy.dsn: not a key of a crm backend`,
		`c.yaml:6: backends.legacy.max_open_conns: not a key of a crm backend`,
		`c.yaml:7: backends.db.hydrate: not a key of a postgres backend`,
		`c.yaml:11: backends.merged.url: not a key of a sqlite backend`,
		`c.yaml:12: backends.nokind.kind: required (sqlite, postgres, mysql or crm)`,
	}
	if diff := cmp.Diff(want, err); diff != "" {
		t.Errorf("problems mismatch (-want +got):\n%s", diff)
	}

	cfg, err := config.Parse("c.yaml", []byte(`backends:
  legacy: {kind: crm, url: "http://crm.example", max_concurrency: 4}
  db: {kind: mysql, dsn: "root@tcp(db)/x", max_open_conns: 3}
tenants:
  a: {backend: db}
  b: {backend: legacy, upstream_username: u, upstream_password: p}
`), noEnv)
	if err != nil {
		t.Fatal(err)
	}
	crm, db := cfg.Backends["legacy"], cfg.Backends["db"]
	if crm.SQL != nil || crm.CRM == nil || crm.CRM.URL != "http://crm.example" || crm.CRM.MaxConcurrency != 4 {
		t.Errorf("crm backend = %+v (crm %+v), want only its CRM settings", crm, crm.CRM)
	}
	if db.CRM != nil || db.SQL == nil || db.SQL.DSN != "root@tcp(db)/x" || db.SQL.MaxOpenConns != 3 {
		t.Errorf("mysql backend = %+v (sql %+v), want only its SQL settings", db, db.SQL)
	}
}

// TestCompat: the compatibility switches decode, default off, and a bad
// json_single_object_items is a located error.
func TestCompat(t *testing.T) {
	t.Parallel()
	base := "backends: {d: {kind: sqlite, dsn: x}}\n"
	cfg, err := config.Parse("c.yaml", []byte(base+`tenants:
  a: {backend: d}
  b: {backend: d, compat: {json_single_object_items: [property], json_numeric_ids: true, json_video_url: true}}
`), noEnv)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(config.Compat{}, cfg.Tenants["a"].Compat); diff != "" {
		t.Errorf("tenant a compat, want all off (-want +got):\n%s", diff)
	}
	want := config.Compat{JSONSingleObjectItems: []string{"property"}, JSONNumericIDs: true, JSONVideoURL: true}
	if diff := cmp.Diff(want, cfg.Tenants["b"].Compat); diff != "" {
		t.Errorf("tenant b compat (-want +got):\n%s", diff)
	}
	_, err = config.Parse("c.yaml", []byte(base+`tenants:
  a: {backend: d, compat: {json_single_object: true, json_single_object_items: [property, "a b"]}}
`), noEnv)
	probs, ok := err.(config.Problems)
	if !ok {
		t.Fatalf("error = %v (%T), want config.Problems", err, err)
	}
	wantProbs := []string{
		`c.yaml:3: tenants.a.compat.json_single_object_items: json_single_object: true already makes every collection of one item an object; set one of the two`,
		`c.yaml:3: tenants.a.compat.json_single_object_items[1]: "a b" is not an element name (want e.g. property)`,
	}
	if diff := cmp.Diff(wantProbs, []string(probs)); diff != "" {
		t.Errorf("problems mismatch (-want +got):\n%s", diff)
	}
}

// TestFeedSettings: the change feeds' keys are checked where they are.
func TestFeedSettings(t *testing.T) {
	cfg := `listen: ":8080"
backends:
  db: {kind: sqlite, dsn: x.db, notify: true}
  crm: {kind: crm, url: "http://127.0.0.1:9000", poll_interval: 100ms}
  crm2: {kind: crm, url: "http://127.0.0.1:9001", poll_interval: 30s}
tenants:
  a: {backend: db, webhook_secret: short}
  b: {backend: crm, upstream_username: u, upstream_password: p}
  c: {backend: crm2, upstream_username: u, upstream_password: p, webhook_secret: "0123456789abcdef"}
users:
  - {username: u, password_bcrypt: "$2a$10$lZZjUks2xDyB1vxQtsPHceEx78gv.fildKhgToZSUq7nb.YaKf4NS", tenant: a}
`
	_, err := config.Parse("c.yaml", []byte(cfg), noEnv)
	var got []string
	if err != nil {
		for _, l := range strings.Split(err.Error(), "\n") {
			got = append(got, strings.TrimSpace(l))
		}
	}
	for _, want := range []string{
		`c.yaml:3: backends.db.notify: notify is PostgreSQL's change feed; a sqlite backend's: webhooks only (webhook_secret on its tenants)`,
		`c.yaml:4: backends.crm.poll_interval: must be at least 1s (or 0: no poller), got 100ms`,
		`c.yaml:7: tenants.a.webhook_secret: must be at least 16 bytes (it signs the tenant's change webhooks)`,
	} {
		if !slices.Contains(got, want) {
			t.Errorf("missing problem %q in:\n%s", want, strings.Join(got, "\n"))
		}
	}
	for _, line := range got {
		if strings.Contains(line, "crm2") || strings.Contains(line, "tenants.c") {
			t.Errorf("a valid feed setting was refused: %s", line)
		}
	}
}

// TestUserCompat: a user's switches are set over its tenant's (a key left
// out keeps the tenant's), and checked where they are.
func TestUserCompat(t *testing.T) {
	cfg := `listen: ":8080"
backends: {db: {kind: sqlite, dsn: x.db}}
tenants:
  a: {backend: db, compat: {json_numeric_ids: true, json_single_object_items: [property]}}
users:
  - {username: ts, password_bcrypt: "$2a$10$lZZjUks2xDyB1vxQtsPHceEx78gv.fildKhgToZSUq7nb.YaKf4NS", tenant: a, compat: {json_numeric_ids: false}}
  - {username: ci, password_bcrypt: "$2a$10$lZZjUks2xDyB1vxQtsPHceEx78gv.fildKhgToZSUq7nb.YaKf4NS", tenant: a}
`
	c, err := config.Parse("c.yaml", []byte(cfg), noEnv)
	if err != nil {
		t.Fatal(err)
	}
	ts := c.Users[0].Compat.Over(c.Tenants["a"].Compat)
	if ts.JSONNumericIDs || len(ts.JSONSingleObjectItems) != 1 {
		t.Errorf("ts's switches = %+v, want numeric ids off and the tenant's items kept", ts)
	}
	if ci := c.Users[1].Compat.Over(c.Tenants["a"].Compat); !ci.JSONNumericIDs {
		t.Errorf("ci's switches = %+v, want the tenant's", ci)
	}
	bad := strings.Replace(cfg, "compat: {json_numeric_ids: false}", "compat: {json_single_object: true, json_single_object_items: [\"1x\"]}", 1)
	_, err = config.Parse("c.yaml", []byte(bad), noEnv)
	for _, want := range []string{
		"users[0].compat.json_single_object_items: json_single_object: true already makes every collection",
		`users[0].compat.json_single_object_items[0]: "1x" is not an element name`,
	} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("err = %v, want it to contain %q", err, want)
		}
	}
}

// TestListenAddresses: an address serve could not listen on is a located
// problem at check time (check-config says what serve would).
func TestListenAddresses(t *testing.T) {
	base := "backends: {db: {kind: sqlite, dsn: x.db}}\ntenants: {a: {backend: db}}\n"
	for _, c := range []struct{ yaml, want string }{
		{`listen: "localhost:80800"`, `listen: invalid port "80800" in "localhost:80800" (want 0 to 65535)`},
		{`listen: "localhost:"`, `listen: invalid port "" in "localhost:" (want 0 to 65535)`},
		{`listen: "localhost"`, `listen: invalid listen address "localhost"`},
		{"listen: \"127.0.0.1:9000\"\nadmin_listen: \"127.0.0.1:9000\"", `admin_listen: "127.0.0.1:9000" is also listen`},
	} {
		_, err := config.Parse("c.yaml", []byte(c.yaml+"\n"+base), noEnv)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: err = %v, want %q", c.yaml, err, c.want)
		}
	}
	for _, ok := range []string{`listen: ":8080"`, `listen: "[::1]:0"`, `listen: "localhost:http"`, "listen: \"127.0.0.1:0\"\nadmin_listen: \"127.0.0.1:0\""} {
		if _, err := config.Parse("c.yaml", []byte(ok+"\n"+base), noEnv); err != nil && strings.Contains(err.Error(), "listen") {
			t.Errorf("%s: %v", ok, err)
		}
	}
}

// TestDidYouMean: a mistyped key of a backend's kind names the key meant.
func TestDidYouMean(t *testing.T) {
	src := "backends: {x: {kind: sqlite, dsn: x.db, seed_dmo: true}}\ntenants: {a: {backend: x}}\n"
	_, err := config.Parse("c.yaml", []byte(src), noEnv)
	if want := `c.yaml:1: backends.x.seed_dmo: not a key of a sqlite backend (did you mean "seed_demo"?)`; err == nil || !strings.Contains(err.Error(), want) {
		t.Errorf("err = %v, want it to contain %q", err, want)
	}
}

// TestStrictParams: tenants.NAME.strict_params is off by default, and a
// value that is no boolean is a located error.
func TestStrictParams(t *testing.T) {
	t.Parallel()
	base := "backends: {d: {kind: sqlite, dsn: x}}\n"
	cfg, err := config.Parse("c.yaml", []byte(base+"tenants:\n  a: {backend: d}\n  b: {backend: d, strict_params: true}\n"), noEnv)
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Tenants["a"].StrictParams || !cfg.Tenants["b"].StrictParams {
		t.Errorf("strict_params: a %v, b %v; want false, true", cfg.Tenants["a"].StrictParams, cfg.Tenants["b"].StrictParams)
	}
	_, err = config.Parse("c.yaml", []byte(base+"tenants:\n  a: {backend: d}\n  b:\n    backend: d\n    strict_params: sometimes\n"), noEnv)
	probs, ok := err.(config.Problems)
	if !ok {
		t.Fatalf("error = %v (%T), want config.Problems", err, err)
	}
	if diff := cmp.Diff([]string{`c.yaml:6: tenants.b.strict_params: invalid boolean "sometimes" (want true or false)`}, []string(probs)); diff != "" {
		t.Errorf("problems mismatch (-want +got):\n%s", diff)
	}
}
