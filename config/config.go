// Package config owns listingproxy's configuration file: its YAML schema,
// strict decoding (unknown keys are errors), ${VAR} expansion in every
// scalar value (secrets, but also durations, numbers, booleans), defaults,
// and validation, which lists every problem at once, each located by its
// line and path in the file; and which changes a reload applies
// (NeedsRestart, WithFixed).
//
// Only cmd/ imports config: it turns a Config into constructor arguments, so
// no other package reads configuration. The conversions to the types of
// the packages config imports anyway (cache.Policy, breaker.Settings,
// trusted prefixes, time zones) and the questions cmd asks of it (a
// backend's tenants, the SQL backend to seed) are methods here
// (options.go).
package config

import (
	"errors"
	"fmt"
	"os"
	"reflect"
	"sort"
	"strconv"
	"strings"
	"time"

	"gopkg.in/yaml.v3"
)

// Config is the whole configuration file.
type Config struct {
	Listen      string   `yaml:"listen"`       // public API listener; default DefaultListen
	AdminListen string   `yaml:"admin_listen"` // metrics, health, pprof, purge; default DefaultAdminListen; "off" disables
	Countries   []string `yaml:"countries"`    // country segments served; default DefaultCountries
	MaxResults  int      `yaml:"max_results"`  // results of a list without limit, and the cap on limit; 0: proxy.DefaultMaxResults
	MaxOffset   int      `yaml:"max_offset"`   // the largest offset of a list (SQL backends); 0: no cap

	Backends map[string]Backend `yaml:"backends"`
	Tenants  map[string]Tenant  `yaml:"tenants"`
	Users    []User             `yaml:"users"`
	Admin    Admin              `yaml:"admin"`
	Auth     Auth               `yaml:"auth"`

	Cache     Cache     `yaml:"cache"`
	Breaker   Breaker   `yaml:"breaker"`
	Server    Server    `yaml:"server"`
	Telemetry Telemetry `yaml:"telemetry"`
	Log       Log       `yaml:"log"`
}

// Backend kinds.
const (
	KindSQLite   = "sqlite"
	KindPostgres = "postgres"
	KindMySQL    = "mysql"
	KindCRM      = "crm"
)

// Kinds lists every backend kind, in the order messages name them.
func Kinds() []string { return []string{KindSQLite, KindPostgres, KindMySQL, KindCRM} }

// Backend is one legacy source of truth. In the file it is one mapping,
// kind and that kind's keys; the keys decode into the kind's own struct, so
// a key of another kind (a dsn on a crm backend) is a located error, not a
// setting silently ignored. After Parse exactly the struct of Kind is set.
type Backend struct {
	Kind string
	SQL  *SQLBackend // kinds sqlite, postgres and mysql
	CRM  *CRMBackend // kind crm
}

// settings returns the struct kind's keys decode into, allocating it in b,
// or nil for an unknown kind. It is config's table of backend kinds: a new
// kind is a constant, a struct and a case here (and an opener in cmd).
func (b *Backend) settings() any {
	switch b.Kind {
	case KindSQLite, KindPostgres, KindMySQL:
		if b.SQL == nil {
			b.SQL = new(SQLBackend)
		}
		return b.SQL
	case KindCRM:
		if b.CRM == nil {
			b.CRM = new(CRMBackend)
		}
		return b.CRM
	}
	return nil
}

// UnmarshalYAML implements yaml.Unmarshaler: kind first, then the same
// mapping into the kind's struct (the schema check has already reported
// keys that are not the kind's).
func (b *Backend) UnmarshalYAML(n *yaml.Node) error {
	var k struct {
		Kind string `yaml:"kind"`
	}
	if err := n.Decode(&k); err != nil {
		return err
	}
	*b = Backend{Kind: k.Kind}
	if s := b.settings(); s != nil {
		return n.Decode(s)
	}
	return nil
}

// SQLBackend is a database backend: sqlite, postgres or mysql. A zero knob
// means sqlstore's default (sqlstore.Default*).
type SQLBackend struct {
	DSN          string `yaml:"dsn"`
	SeedDemo     bool   `yaml:"seed_demo"` // create the schema and load the demo data when the database is empty
	MaxOpenConns int    `yaml:"max_open_conns"`
	MaxIdleConns int    `yaml:"max_idle_conns"` // 0: max_open_conns
	// PreparedStatements: statement texts kept prepared per connection
	// (sqlite, mysql); the database holds at most this x max_open_conns.
	PreparedStatements int      `yaml:"prepared_statements"`
	ConnMaxLifetime    Duration `yaml:"conn_max_lifetime"`
	QueryTimeout       Duration `yaml:"query_timeout"` // per statement
	Notify             bool     `yaml:"notify"`        // postgres: LISTEN for change notifications
	// Binlog, mysql only: read the server's binary log and purge what
	// changed (the binlog feed, docs/sql.md). Nil: off.
	Binlog *Binlog `yaml:"binlog"`
}

// Binlog configures a MySQL/MariaDB backend's binlog feed.
type Binlog struct {
	// ServerID is the replica id the feed registers with; unique among
	// the server's replicas. 0: a random one.
	ServerID uint32 `yaml:"server_id"`
	// Heartbeat is the server's heartbeat period: a stream silent for
	// three is reconnected. 0: 1s.
	Heartbeat Duration `yaml:"heartbeat"`
	// Tables maps legacy tables (behind the documented views) to what
	// their rows are; none: the legacy schema's own tables.
	Tables map[string]BinlogTable `yaml:"tables"`
}

// BinlogTable says what one table's rows are (upstream/binlog.Table).
type BinlogTable struct {
	Resource string `yaml:"resource"` // properties or agents
	ID       string `yaml:"id"`       // the entity's id column
	Tenant   string `yaml:"tenant"`   // the column holding tenants.id
	Property string `yaml:"property"` // for a property's parts: the property's id column
	Agent    string `yaml:"agent"`    // an agent id column whose document the row is part of
}

// CRMBackend is the legacy CRM's XML API. A zero knob means crm's default
// (crm.Default*).
type CRMBackend struct {
	URL            string   `yaml:"url"`
	Timeout        Duration `yaml:"timeout"`         // per upstream call
	MaxConcurrency int      `yaml:"max_concurrency"` // ceiling of concurrent upstream calls (the adaptive limit's)
	Hydrate        string   `yaml:"hydrate"`         // auto (the default), always or never
	// PollInterval, when set, runs the change poller (the poll feed,
	// docs/crm.md): every interval it reads each tenant's short list and
	// purges what changed.
	PollInterval       Duration `yaml:"poll_interval"`
	HydrateConcurrency int      `yaml:"hydrate_concurrency"`
	DocTTL             Duration `yaml:"doc_ttl"` // reuse of per-property documents
	MaxBodyBytes       ByteSize `yaml:"max_body_bytes"`
	MaxDecodingBytes   ByteSize `yaml:"max_decoding_bytes"` // answer bytes decoded at once, across calls
	MaxElements        int      `yaml:"max_elements"`       // XML elements of one answer
	// MaxResults caps the limit of a list of this CRM's tenants; 0 (the
	// default): no cap, the client's limit (or none) goes to the CRM,
	// which decides, as it did for its own clients. The top-level
	// max_results does not apply to CRM backends.
	MaxResults int `yaml:"max_results"`
	// MaxOffset is the largest offset of a list of this CRM's tenants; 0
	// (the default): no cap. The top-level max_offset does not apply to
	// CRM backends.
	MaxOffset int `yaml:"max_offset"`
	// Rerender renders answers from the model instead of passing the CRM's
	// records through (docs/crm.md, "Pass-through"); default false.
	Rerender bool `yaml:"rerender"`
}

// Tenant is a client/agency whose users see only its own data.
type Tenant struct {
	Backend string `yaml:"backend"`
	// UpstreamTenant is the tenant's name at the backend (SQL: tenants.name);
	// default: the tenant's key in this file.
	UpstreamTenant string `yaml:"upstream_tenant"`
	// Upstream credentials for a CRM backend.
	UpstreamUsername string `yaml:"upstream_username"`
	UpstreamPassword string `yaml:"upstream_password"`
	// RateLimit bounds the tenant's API requests; nil (the default): none.
	RateLimit *RateLimit `yaml:"rate_limit"`
	// Compat holds compatibility switches for the tenant's old clients;
	// every switch is off by default.
	Compat Compat `yaml:"compat"`
	// ExtraFields names elements and attributes of a CRM's records that the
	// wire format does not, which every caller of the tenant may see;
	// others reach only callers with both full and prices.
	ExtraFields []string `yaml:"extra_fields"`
	// WebhookSecret, when set, accepts the tenant's signed change
	// webhooks (POST /hooks/changes/NAME on the public listener; the
	// webhook feed, docs/crm.md). At least 16 bytes.
	WebhookSecret string `yaml:"webhook_secret"`
	// StrictParams answers a list request carrying a parameter the list
	// does not take with the spec's error list instead of ignoring it.
	// Default false.
	StrictParams bool `yaml:"strict_params"`
}

// Compat are per-tenant compatibility switches for old clients of the
// legacy API (docs/api.md, "Compatibility switches").
type Compat struct {
	// JSONSingleObject writes a JSON collection of exactly one item as
	// that object instead of a one-element array (clients that read
	// "property" as an object when one listing matches).
	JSONSingleObject bool `yaml:"json_single_object"`
	// JSONSingleObjectItems limits the single-object switch to the
	// collections of these items (property, agent, photo, virtualtour,
	// floorplan, or an item of a CRM's own collection such as video).
	JSONSingleObjectItems []string `yaml:"json_single_object_items"`
	// JSONNumericIDs writes every JSON id as a number (clients that
	// compare ids with numbers).
	JSONNumericIDs bool `yaml:"json_numeric_ids"`
	// JSONVideoURL writes each video of a CRM's videos collection as an
	// object with its text under "url", as a photo (clients that read
	// videos.video[i].url).
	JSONVideoURL bool `yaml:"json_video_url"`
}

// RateLimit is a token bucket: requests_per_second on average, bursts of
// up to burst requests.
type RateLimit struct {
	RequestsPerSecond float64 `yaml:"requests_per_second"`
	Burst             int     `yaml:"burst"` // default: requests_per_second rounded up (at least 1)
}

// Auth bounds the cost of checking API credentials. A verified
// Authorization header is remembered (a hash of it, never the password) and
// costs nothing more; unverified ones run bcrypt in a small pool, and
// repeated failures are throttled per client address and per username.
type Auth struct {
	Workers int `yaml:"workers"` // concurrent bcrypt checks; default 0: one less than GOMAXPROCS (at least 1)
	Queue   int `yaml:"queue"`   // checks waiting for a worker before 429
	// ChecksPerSecond bounds the bcrypt checks started a second (burst: a
	// second's worth); past it 429.
	ChecksPerSecond float64 `yaml:"checks_per_second"`
	// FailuresPerAddress and FailuresPerUsername are token buckets of
	// failed checks; an attempt finding its bucket empty gets 429 without
	// a check.
	FailuresPerAddress  FailureLimit `yaml:"failures_per_address"`
	FailuresPerUsername FailureLimit `yaml:"failures_per_username"`
	VerifiedEntries     int          `yaml:"verified_entries"` // verified headers remembered (least recently used go first)
	// RefusalDelay holds a 429 of authentication (throttled, pool full)
	// before it is sent, pacing a client that floods bad credentials.
	RefusalDelay Duration `yaml:"refusal_delay"`
}

// FailureLimit is a token bucket of failed credential checks.
type FailureLimit struct {
	PerMinute float64 `yaml:"per_minute"`
	Burst     int     `yaml:"burst"`
}

// Permissions a user may hold.
const (
	PermFull   = "full"   // full detail
	PermPrices = "prices" // raw price_from / price_to in full detail
)

// User is an API user. Passwords are stored as bcrypt hashes only.
type User struct {
	Username       string   `yaml:"username"`
	PasswordBcrypt string   `yaml:"password_bcrypt"`
	Tenant         string   `yaml:"tenant"`
	Permissions    []string `yaml:"permissions"`
	// Compat sets this user's own compatibility switches, over its
	// tenant's: a key left out keeps the tenant's (docs/api.md).
	Compat *UserCompat `yaml:"compat"`
}

// UserCompat is a user's compatibility switches; each nil field keeps the
// tenant's switch.
type UserCompat struct {
	JSONSingleObject      *bool     `yaml:"json_single_object"`
	JSONSingleObjectItems *[]string `yaml:"json_single_object_items"`
	JSONNumericIDs        *bool     `yaml:"json_numeric_ids"`
	JSONVideoURL          *bool     `yaml:"json_video_url"`
}

// Over returns the tenant's switches t with u's set over them.
func (u *UserCompat) Over(t Compat) Compat {
	if u == nil {
		return t
	}
	if u.JSONSingleObject != nil {
		t.JSONSingleObject = *u.JSONSingleObject
	}
	if u.JSONSingleObjectItems != nil {
		t.JSONSingleObjectItems = *u.JSONSingleObjectItems
	}
	if u.JSONNumericIDs != nil {
		t.JSONNumericIDs = *u.JSONNumericIDs
	}
	if u.JSONVideoURL != nil {
		t.JSONVideoURL = *u.JSONVideoURL
	}
	return t
}

// Admin holds the credentials for the admin listener's operator endpoints
// (cache purge). With no username the operator endpoints are disabled.
type Admin struct {
	Username       string `yaml:"username"`
	PasswordBcrypt string `yaml:"password_bcrypt"`
}

// Cache configures the rendered-body cache.
type Cache struct {
	Disabled             bool     `yaml:"disabled"`
	MaxBytes             ByteSize `yaml:"max_bytes"` // 0: cache.DefaultMaxBytes
	TTL                  Duration `yaml:"ttl"`       // this and the windows, 0: proxy.DefaultPolicy's
	StaleWhileRevalidate Duration `yaml:"stale_while_revalidate"`
	StaleIfError         Duration `yaml:"stale_if_error"`
	NegativeTTL          Duration `yaml:"negative_ttl"`
	FillTimeout          Duration `yaml:"fill_timeout"` // backend call of a fill
	// RefreshAhead is the share of ttl after which a hot entry is fetched
	// again before it expires; nil: proxy.DefaultRefreshAhead; 0: off.
	RefreshAhead *float64 `yaml:"refresh_ahead"`
	// RefreshHits is how many hits make an entry hot; 0: the default.
	RefreshHits int `yaml:"refresh_hits"`
	// RefreshBudget bounds each backend's refreshes ahead of expiry, calls
	// a second; 0: proxy.DefaultRefreshBudget.
	RefreshBudget float64 `yaml:"refresh_budget"`
	// TTLs overrides TTL per resource: properties, property, agents, agent.
	TTLs map[string]Duration `yaml:"ttls"`
	// Shared, when present, adds a second tier shared by every replica
	// (Redis or Valkey): fills write through to it, first-tier misses read
	// it, one replica fills a key for the fleet, purges reach the fleet.
	Shared *SharedCache `yaml:"shared"`
	// Disk, when present, keeps entries on local disk as well (a node
	// without cache.shared), so a restarted process serves its warm keys
	// at once. Not with Shared: one second tier or the other.
	Disk *DiskCache `yaml:"disk"`
	// Warm, when present, records the hottest requests and fetches them
	// again after a start and a hard purge (proxy.Server.WarmUp).
	Warm *WarmCache `yaml:"warm"`
}

// WarmCache configures the warm-up. A zero knob takes the default of
// proxy (proxy.DefaultHotKeys) or, for ReadyTimeout, none (/readyz does
// not wait).
type WarmCache struct {
	// File keeps the hottest requests across restarts (written
	// periodically and at shutdown, read at start); "": kept in memory
	// only (a hard purge still refills them).
	File string `yaml:"file"`
	// Keys is how many requests are recorded and replayed.
	Keys int `yaml:"keys"`
	// ReadyTimeout is how long /readyz answers 503 "warming" after a
	// start while the warm-up runs; 0: it does not wait.
	ReadyTimeout Duration `yaml:"ready_timeout"`
}

// DiskCache configures the disk tier (package cache/disktier). A zero knob
// means that package's default (docs/configuration.md lists them).
type DiskCache struct {
	Path     string   `yaml:"path"`      // the database file; its directory must exist
	MaxBytes ByteSize `yaml:"max_bytes"` // bound of the entries kept on disk
}

// SharedCache configures the Redis second tier. A zero knob means the
// default of package cache/redistier, the one place the defaults are
// stated (docs/configuration.md lists them).
type SharedCache struct {
	// Addrs: one address is a standalone server; several a cluster; with
	// MasterName, the Sentinel addresses.
	Addrs      []string  `yaml:"addrs"`
	MasterName string    `yaml:"master_name"` // Sentinel: the monitored master's name
	Username   string    `yaml:"username"`    // AUTH (ACL user); empty: password only
	Password   string    `yaml:"password"`
	DB         int       `yaml:"db"` // standalone and Sentinel only
	TLS        SharedTLS `yaml:"tls"`
	KeyPrefix  string    `yaml:"key_prefix"` // every key and channel starts with it
	// MaxEntryBytes bounds one stored entry (body, gzip form and header
	// fields); larger entries stay in the first tier only.
	MaxEntryBytes ByteSize `yaml:"max_entry_bytes"`
	Timeout       Duration `yaml:"timeout"` // per Redis operation
	Lease         Duration `yaml:"lease"`   // fill lease: how long other replicas wait for a filler
}

// SharedTLS is the client side of TLS to Redis (PEM files).
type SharedTLS struct {
	Enabled    bool   `yaml:"enabled"`
	CAFile     string `yaml:"ca_file"`   // default: the system roots
	CertFile   string `yaml:"cert_file"` // client certificate (mutual TLS)
	KeyFile    string `yaml:"key_file"`
	ServerName string `yaml:"server_name"` // default: the address's host
}

// Breaker configures the circuit breakers (one per backend and tenant, one
// per backend) and the per-tenant bulkheads in front of each backend. A
// zero value means the default of package upstream/breaker, the one place
// the defaults are stated (docs/configuration.md lists them).
type Breaker struct {
	Failures       uint32   `yaml:"failures"`         // consecutive failures that open it
	FailureRatio   float64  `yaml:"failure_ratio"`    // or this ratio of failures in the window (0 = off)
	MinRequests    uint32   `yaml:"min_requests"`     // requests in the window before the ratio applies
	Window         Duration `yaml:"window"`           // rolling window for counts
	OpenFor        Duration `yaml:"open_for"`         // how long it stays open before probes
	HalfOpenProbes uint32   `yaml:"half_open_probes"` // probes let through when half-open
	TenantShare    float64  `yaml:"tenant_share"`     // share of a backend's concurrency one tenant may hold
	QueueTimeout   Duration `yaml:"queue_timeout"`    // longest wait for a concurrency slot
}

// Server holds HTTP server limits, the drain delay and the shutdown grace
// period.
type Server struct {
	ReadHeaderTimeout Duration `yaml:"read_header_timeout"` // default DefaultReadHeaderTimeout, and so on
	ReadTimeout       Duration `yaml:"read_timeout"`
	WriteTimeout      Duration `yaml:"write_timeout"`
	IdleTimeout       Duration `yaml:"idle_timeout"`
	MaxHeaderBytes    ByteSize `yaml:"max_header_bytes"`
	// DrainDelay is how long, after SIGTERM, the listeners keep accepting
	// while /readyz says 503 and every response carries Connection: close,
	// before the shutdown starts; default DefaultDrainDelay, 0 disables (a pointer so that
	// an explicit 0 is told from an absent key).
	DrainDelay    *Duration `yaml:"drain_delay"`
	ShutdownGrace Duration  `yaml:"shutdown_grace"` // default DefaultShutdownGrace
	// TrustedProxies are the addresses or CIDR prefixes of the proxies in
	// front of listingproxy whose X-Forwarded-For / Forwarded headers name
	// the client; default none (the client is the TCP peer).
	TrustedProxies []string `yaml:"trusted_proxies"`
	// TLS, when set, serves the public listener over TLS (the admin
	// listener stays plain HTTP, on loopback by default).
	TLS TLS `yaml:"tls"`
	// MaxConnsPerAddress bounds one client address's open connections to
	// the public listener; 0: connlimit.DefaultPerAddress; -1: none.
	MaxConnsPerAddress int `yaml:"max_conns_per_address"`
	// NewConnsPerSecondPerAddress bounds the connections (TLS handshakes)
	// one address opens a second; 0: connlimit.DefaultNewPerSecond; -1:
	// none.
	NewConnsPerSecondPerAddress float64 `yaml:"new_conns_per_second_per_address"`
	// ReusePort opens the listeners with SO_REUSEPORT, so that a new
	// process can listen on them while the old one drains.
	ReusePort bool `yaml:"reuse_port"`
}

// TLS names the public listener's certificate and key (PEM files). They
// are re-read on SIGHUP, so a renewed certificate is served without a
// restart.
type TLS struct {
	CertFile string `yaml:"cert_file"` // certificate chain, leaf first
	KeyFile  string `yaml:"key_file"`
	// HTTP2 offers HTTP/2 by ALPN; nil: true. false serves HTTP/1.1 only
	// (no PING, RST_STREAM or CONTINUATION floods to bound).
	HTTP2 *bool `yaml:"http2"`
}

// Telemetry configures tracing.
type Telemetry struct {
	ServiceName  string   `yaml:"service_name"`  // default telemetry.DefaultServiceName
	Exporter     string   `yaml:"exporter"`      // none, stdout, otlp-http or otlp-grpc; default none
	OTLPEndpoint string   `yaml:"otlp_endpoint"` // URL (otlp-http: /v1/traces added when it has no path) or host:port; default from OTEL_EXPORTER_OTLP_ENDPOINT
	SampleRatio  *float64 `yaml:"sample_ratio"`  // default 1.0; 0 samples no new traces
}

// Log configures logging.
type Log struct {
	Level  string `yaml:"level"`  // debug, info, warn, error; default DefaultLogLevel
	Format string `yaml:"format"` // json, text or auto (text on a terminal); default DefaultLogFormat
}

// Duration is a time.Duration written as "1m30s" in YAML.
type Duration time.Duration

// D returns the duration.
func (d Duration) D() time.Duration { return time.Duration(d) }

// UnmarshalYAML implements yaml.Unmarshaler. Its error is a *yaml.TypeError,
// so that decoding goes on and reports the file's other problems too.
func (d *Duration) UnmarshalYAML(n *yaml.Node) error {
	v, err := time.ParseDuration(strings.TrimSpace(n.Value))
	if err != nil || v < 0 {
		return &yaml.TypeError{Errors: []string{fmt.Sprintf("line %d: invalid duration %q (want e.g. 500ms, 10s, 5m)", n.Line, n.Value)}}
	}
	*d = Duration(v)
	return nil
}

// ByteSize is a size in bytes, written as 1024, "64KiB", "256MiB", "1GiB",
// "10MB" in YAML.
type ByteSize int64

var byteUnits = map[string]int64{
	"": 1, "b": 1,
	"kb": 1000, "mb": 1000 * 1000, "gb": 1000 * 1000 * 1000,
	"kib": 1 << 10, "mib": 1 << 20, "gib": 1 << 30,
}

// ParseByteSize parses sizes such as "256MiB".
func ParseByteSize(s string) (ByteSize, error) {
	s = strings.TrimSpace(s)
	i := 0
	for i < len(s) && s[i] >= '0' && s[i] <= '9' {
		i++
	}
	n, err := strconv.ParseInt(s[:i], 10, 64)
	mult, ok := byteUnits[strings.ToLower(strings.TrimSpace(s[i:]))]
	if err != nil || !ok || n > (1<<62)/mult {
		return 0, fmt.Errorf("invalid size %q (want e.g. 65536, 64KiB, 256MiB, 1GiB)", s)
	}
	return ByteSize(n * mult), nil
}

// UnmarshalYAML implements yaml.Unmarshaler; errors as Duration's.
func (b *ByteSize) UnmarshalYAML(n *yaml.Node) error {
	v, err := ParseByteSize(n.Value)
	if err != nil {
		return &yaml.TypeError{Errors: []string{fmt.Sprintf("line %d: %v", n.Line, err)}}
	}
	*b = v
	return nil
}

// Problems is every problem found in a configuration, in file order where
// known. It is returned as the error of Load.
type Problems []string

func (p Problems) Error() string {
	if len(p) == 1 {
		return "invalid configuration: " + p[0]
	}
	return fmt.Sprintf("invalid configuration (%d problems):\n  %s", len(p), strings.Join(p, "\n  "))
}

// Load reads, expands, decodes, defaults and validates the file at path.
// getenv resolves ${VAR} references (os.Getenv in production).
func Load(path string, getenv func(string) string) (*Config, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("config: %w", err)
	}
	return Parse(path, data, getenv)
}

// Parse is Load on bytes; name is used in messages.
func Parse(name string, data []byte, getenv func(string) string) (*Config, error) {
	var root yaml.Node
	if err := yaml.Unmarshal(data, &root); err != nil {
		return nil, Problems{locate(name, err.Error())}
	}
	// Check the tree against the schema first (unknown keys, values of the
	// wrong type, unset variables), expanding ${VAR} on the way; then
	// decode, default and validate, so one pass lists every problem.
	s := schema{getenv: getenv, lines: map[string]int{}}
	s.check(&root, reflect.TypeFor[Config](), "")
	probs := s.probs
	var cfg Config
	decoded := true
	if len(root.Content) > 0 {
		err := root.Decode(&cfg)
		var te *yaml.TypeError
		switch {
		case err == nil:
		case len(probs) == 0: // the schema check should have caught it
			return nil, Problems(yamlProblems(name, err))
		case !errors.As(err, &te):
			decoded = false // decoding stopped part way: validating would mislead
		}
	}
	if decoded {
		cfg.ApplyDefaults()
		for _, p := range cfg.validate() {
			if !s.followsFromUnset(p.path) {
				probs = append(probs, located{p.path, lineOf(s.lines, p.path), p.msg})
			}
		}
	}
	if len(probs) > 0 {
		// File order; problems with no line (a missing section) last.
		sort.SliceStable(probs, func(i, j int) bool {
			li, lj := probs[i].line, probs[j].line
			return li != 0 && (lj == 0 || li < lj)
		})
		out := make(Problems, len(probs))
		for i, p := range probs {
			out[i] = p.format(name)
		}
		return nil, out
	}
	return &cfg, nil
}

// lineOf returns the line of path, or of its nearest ancestor present in the
// file (a missing required key is reported at its parent).
func lineOf(lines map[string]int, path string) int {
	for path != "" {
		if l, ok := lines[path]; ok {
			return l
		}
		i := strings.LastIndexAny(path, ".[")
		if i < 0 {
			return 0
		}
		path = path[:i]
	}
	return 0
}

type located struct {
	path string
	line int
	msg  string
}

func (l located) format(file string) string {
	if l.line > 0 {
		return fmt.Sprintf("%s:%d: %s: %s", file, l.line, l.path, l.msg)
	}
	if l.path == "" {
		return fmt.Sprintf("%s: %s", file, l.msg)
	}
	return fmt.Sprintf("%s: %s: %s", file, l.path, l.msg)
}

func yamlProblems(name string, err error) []string {
	var te *yaml.TypeError
	if errors.As(err, &te) {
		out := make([]string, len(te.Errors))
		for i, e := range te.Errors {
			out[i] = locate(name, e)
		}
		return out
	}
	return []string{locate(name, err.Error())}
}

// locate turns yaml's "yaml: line 3: msg" into "name:3: msg".
func locate(name, msg string) string {
	if m := lineRef.FindStringSubmatch(msg); m != nil {
		return name + ":" + m[1] + ": " + msg[len(m[0]):]
	}
	return name + ": " + strings.TrimPrefix(msg, "yaml: ")
}
