package config

import (
	"cmp"
	"crypto/tls"
	"fmt"
	"maps"
	"math"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"golang.org/x/crypto/bcrypt"

	"listingproxy/cache"
	"listingproxy/clientip"
	"listingproxy/upstream"
)

// Resources whose TTL may be set one by one in cache.ttls.
var Resources = []string{"properties", "property", "agents", "agent"}

// Defaults of the settings config owns: the listeners and HTTP servers cmd
// runs, which no other package owns. Every other zero knob is left zero and
// means the default of the package that owns it (cache, proxy, sqlstore,
// crm, upstream/breaker, telemetry, cache/redistier), the one place that
// default is stated; docs/configuration.md lists them all and cmd's
// TestDocumentedDefaults checks the two agree.
const (
	DefaultListen            = "127.0.0.1:8080"
	DefaultAdminListen       = "127.0.0.1:8081"
	DefaultReadHeaderTimeout = 5 * time.Second
	DefaultReadTimeout       = 15 * time.Second
	DefaultWriteTimeout      = 30 * time.Second
	DefaultIdleTimeout       = 120 * time.Second
	DefaultMaxHeaderBytes    = 16 << 10
	DefaultDrainDelay        = 5 * time.Second
	DefaultShutdownGrace     = 20 * time.Second
	DefaultLogLevel          = "info"
	DefaultLogFormat         = "auto"
)

// DefaultCountries are the country segments served when countries is
// absent: every country upstream.CountryZones knows.
func DefaultCountries() []string { return slices.Sorted(maps.Keys(upstream.CountryZones())) }

// ApplyDefaults fills the zero knobs config owns (see DefaultListen) and
// those derived from other keys (a tenant's upstream name, a rate limit's
// burst). It leaves the others zero: they mean the owning package's default.
func (c *Config) ApplyDefaults() {
	def := func(s *string, v string) {
		if *s == "" {
			*s = v
		}
	}
	defD := func(d *Duration, v time.Duration) {
		if *d == 0 {
			*d = Duration(v)
		}
	}
	def(&c.Listen, DefaultListen)
	def(&c.AdminListen, DefaultAdminListen)
	if len(c.Countries) == 0 {
		c.Countries = DefaultCountries()
	}
	for name, t := range c.Tenants {
		def(&t.UpstreamTenant, name)
		if rl := t.RateLimit; rl != nil && rl.Burst == 0 {
			rl.Burst = max(1, int(math.Ceil(rl.RequestsPerSecond)))
		}
		c.Tenants[name] = t
	}
	defD(&c.Server.ReadHeaderTimeout, DefaultReadHeaderTimeout)
	defD(&c.Server.ReadTimeout, DefaultReadTimeout)
	defD(&c.Server.WriteTimeout, DefaultWriteTimeout)
	defD(&c.Server.IdleTimeout, DefaultIdleTimeout)
	if c.Server.MaxHeaderBytes == 0 {
		c.Server.MaxHeaderBytes = DefaultMaxHeaderBytes
	}
	if c.Server.DrainDelay == nil {
		d := Duration(DefaultDrainDelay)
		c.Server.DrainDelay = &d
	}
	defD(&c.Server.ShutdownGrace, DefaultShutdownGrace)
	if c.Telemetry.SampleRatio == nil {
		one := 1.0 // a pointer: an explicit 0 samples nothing
		c.Telemetry.SampleRatio = &one
	}
	def(&c.Log.Level, DefaultLogLevel)
	def(&c.Log.Format, DefaultLogFormat)
}

// kindList is "sqlite, postgres, mysql or crm".
func kindList() string {
	k := Kinds()
	return strings.Join(k[:len(k)-1], ", ") + " or " + k[len(k)-1]
}

type problem struct{ path, msg string }

var (
	countryRe  = regexp.MustCompile(`^[a-z]{2}$`)
	usernameRe = regexp.MustCompile(`^[A-Za-z0-9._@-]{1,64}$`)
	xmlName    = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9._-]*$`)
)

// validate returns every problem of a defaulted config, in a stable order.
// kindFeeds says which change feeds each backend kind offers, for the
// error that names a feed on the wrong kind (docs/configuration.md,
// "Change feeds").
var kindFeeds = map[string]string{
	KindSQLite:   "webhooks only (webhook_secret on its tenants)",
	KindPostgres: "notify: true, and webhook_secret on its tenants",
	KindMySQL:    "binlog, and webhook_secret on its tenants",
	KindCRM:      "poll_interval, and webhook_secret on its tenants",
}

func (c *Config) validate() []problem {
	var ps []problem
	add := func(path, format string, args ...any) {
		ps = append(ps, problem{path, fmt.Sprintf(format, args...)})
	}
	checkAddr := func(path, addr string, allowOff bool) {
		if allowOff && (addr == "" || addr == "off") {
			return
		}
		_, port, err := net.SplitHostPort(addr)
		if err != nil {
			add(path, "invalid listen address %q (want host:port or :port)", addr)
			return
		}
		// What net.Listen would refuse: a port that is not a number from
		// 0 to 65535 (a service name, "http", is allowed: Listen looks it up).
		if n, err := strconv.Atoi(port); err == nil && (n < 0 || n > 65535) || port == "" {
			add(path, "invalid port %q in %q (want 0 to 65535)", port, addr)
		}
	}
	checkAddr("listen", c.Listen, false)
	checkAddr("admin_listen", c.AdminListen, true)
	if _, port, _ := net.SplitHostPort(c.Listen); c.Listen != "" && c.Listen == c.AdminListen && port != "0" {
		add("admin_listen", "%q is also listen: the two listeners need different addresses", c.AdminListen)
	}
	seen := map[string]bool{}
	for i, cc := range c.Countries {
		p := fmt.Sprintf("countries[%d]", i)
		switch {
		case !countryRe.MatchString(cc):
			add(p, "invalid country %q (want two lower-case letters)", cc)
		case upstream.CountryZones()[cc] == "":
			add(p, "unknown country %q (known: %s)", cc, strings.Join(DefaultCountries(), ", "))
		case seen[cc]:
			add(p, "country %q listed twice", cc)
		}
		seen[cc] = true
	}
	if c.MaxResults < 0 || c.MaxResults > 100000 {
		add("max_results", "must be between 1 and 100000 (0: the default), got %d", c.MaxResults)
	}
	if c.MaxOffset < 0 {
		add("max_offset", "must not be negative (0: no cap), got %d", c.MaxOffset)
	}

	if len(c.Backends) == 0 {
		add("backends", "at least one backend is required")
	}
	for _, name := range slices.Sorted(maps.Keys(c.Backends)) {
		b := c.Backends[name]
		p := "backends." + name
		switch {
		case b.SQL != nil:
			sb := b.SQL
			if sb.DSN == "" {
				add(p+".dsn", "required for a %s backend", b.Kind)
			}
			if sb.MaxOpenConns < 0 {
				add(p+".max_open_conns", "must not be negative")
			}
			if sb.PreparedStatements < 0 {
				add(p+".prepared_statements", "must not be negative (0: the default)")
			}
			if sb.Notify && b.Kind != KindPostgres {
				add(p+".notify", "notify is PostgreSQL's change feed; a %s backend's: %s", b.Kind, kindFeeds[b.Kind])
			}
			if bl := sb.Binlog; bl != nil {
				if b.Kind != KindMySQL {
					add(p+".binlog", "binlog is MySQL and MariaDB's change feed; a %s backend's: %s", b.Kind, kindFeeds[b.Kind])
				}
				if hb := bl.Heartbeat.D(); hb < 0 || hb > 0 && hb < 100*time.Millisecond {
					add(p+".binlog.heartbeat", "must be at least 100ms (or 0: 1s), got %s", hb)
				}
				for _, tn := range slices.Sorted(maps.Keys(bl.Tables)) {
					tb, tp := bl.Tables[tn], p+".binlog.tables."+tn
					switch {
					case tb.Resource != "properties" && tb.Resource != "agents":
						add(tp+".resource", "%q: want properties or agents", tb.Resource)
					case tb.ID != "" && tb.Tenant == "":
						add(tp+".tenant", "required with id: the column holding the row's tenants.id")
					case tb.ID == "" && tb.Property == "":
						add(tp, "needs id and tenant (an entity's own table) or property (a table of a property's parts)")
					case tb.Property != "" && tb.Resource != "properties":
						add(tp+".resource", "a table of a property's parts (property) is of resource properties")
					}
				}
			}
		case b.CRM != nil:
			cb := b.CRM
			u, err := url.Parse(cb.URL)
			switch {
			case cb.URL == "":
				add(p+".url", "required for a crm backend")
			case err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "":
				add(p+".url", "invalid url %q (want http(s)://host[:port][/path])", cb.URL)
			}
			switch cb.Hydrate {
			case "", "auto", "always", "never":
			default:
				add(p+".hydrate", "invalid value %q (want auto, always or never)", cb.Hydrate)
			}
			if cb.MaxConcurrency < 0 {
				add(p+".max_concurrency", "must not be negative (0: the default)")
			}
			if cb.MaxElements < 0 {
				add(p+".max_elements", "must not be negative (0: the default)")
			}
			switch {
			case cb.MaxDecodingBytes < 0:
				add(p+".max_decoding_bytes", "must not be negative (0: the default)")
			case cb.MaxDecodingBytes > 0 && cb.MaxDecodingBytes < cb.MaxBodyBytes:
				add(p+".max_decoding_bytes", "must be at least max_body_bytes (%d), or an answer of the largest size could never be decoded", cb.MaxBodyBytes)
			}
			if cb.MaxResults < 0 || cb.MaxResults > 100000 {
				add(p+".max_results", "must be between 1 and 100000, or 0 for no cap, got %d", cb.MaxResults)
			}
			if cb.MaxOffset < 0 {
				add(p+".max_offset", "must not be negative (0: no cap), got %d", cb.MaxOffset)
			}
			if pi := cb.PollInterval.D(); pi < 0 || pi > 0 && pi < time.Second {
				add(p+".poll_interval", "must be at least 1s (or 0: no poller), got %s", pi)
			}
		case b.Kind == "":
			add(p+".kind", "required (%s)", kindList())
		default:
			add(p+".kind", "unknown kind %q (want %s)", b.Kind, kindList())
		}
	}

	if len(c.Tenants) == 0 {
		add("tenants", "at least one tenant is required")
	}
	for _, name := range slices.Sorted(maps.Keys(c.Tenants)) {
		t := c.Tenants[name]
		p := "tenants." + name
		b, ok := c.Backends[t.Backend]
		switch {
		case t.Backend == "":
			add(p+".backend", "required")
		case !ok:
			add(p+".backend", "unknown backend %q", t.Backend)
		case b.CRM != nil && (t.UpstreamUsername == "" || t.UpstreamPassword == ""):
			add(p+".upstream_username", "a tenant on a crm backend needs upstream_username and upstream_password")
		}
		checkCompat(add, p, t.Compat)
		if t.WebhookSecret != "" && len(t.WebhookSecret) < 16 {
			add(p+".webhook_secret", "must be at least 16 bytes (it signs the tenant's change webhooks)")
		}
		if rl := t.RateLimit; rl != nil {
			if !(rl.RequestsPerSecond > 0) || math.IsInf(rl.RequestsPerSecond, 0) {
				add(p+".rate_limit.requests_per_second", "must be a positive number (omit rate_limit for no limit)")
			}
			if rl.Burst < 1 {
				add(p+".rate_limit.burst", "must be at least 1")
			}
		}
	}

	users := map[string]bool{}
	for i, u := range c.Users {
		p := fmt.Sprintf("users[%d]", i)
		if !usernameRe.MatchString(u.Username) {
			add(p+".username", "invalid username %q (1-64 of letters, digits, . _ @ -)", u.Username)
		} else if users[u.Username] {
			add(p+".username", "duplicate username %q", u.Username)
		}
		users[u.Username] = true
		checkHash(add, p+".password_bcrypt", u.PasswordBcrypt)
		if _, ok := c.Tenants[u.Tenant]; !ok {
			add(p+".tenant", "unknown tenant %q", u.Tenant)
		}
		for j, perm := range u.Permissions {
			if perm != PermFull && perm != PermPrices {
				add(fmt.Sprintf("%s.permissions[%d]", p, j), "unknown permission %q (want full or prices)", perm)
			}
		}
		if u.Compat != nil {
			checkCompat(add, p, u.Compat.Over(c.Tenants[u.Tenant].Compat))
		}
	}
	if c.Admin.Username != "" {
		checkHash(add, "admin.password_bcrypt", c.Admin.PasswordBcrypt)
	}

	if n := c.Server.MaxConnsPerAddress; n < -1 {
		add("server.max_conns_per_address", "%d: must be positive, 0 (the default) or -1 (no bound)", n)
	}
	if n := c.Server.NewConnsPerSecondPerAddress; n < 0 && n != -1 {
		add("server.new_conns_per_second_per_address", "%g: must be positive, 0 (the default) or -1 (no bound)", n)
	}
	if c.Cache.MaxBytes != 0 && c.Cache.MaxBytes < 1<<20 {
		add("cache.max_bytes", "must be at least 1MiB")
	}
	if ra := c.Cache.RefreshAhead; ra != nil && (*ra < 0 || *ra >= 1) {
		add("cache.refresh_ahead", "%g: must be from 0 (off) up to, not including, 1 (a share of ttl)", *ra)
	}
	if c.Cache.RefreshHits < 0 {
		add("cache.refresh_hits", "must not be negative (0: the default)")
	}
	if c.Cache.RefreshBudget < 0 {
		add("cache.refresh_budget", "must not be negative (0: the default)")
	}
	for _, k := range slices.Sorted(maps.Keys(c.Cache.TTLs)) {
		if !slices.Contains(Resources, k) {
			add("cache.ttls."+k, "unknown resource %q (want %s)", k, strings.Join(Resources, ", "))
		}
	}
	if fill := cmp.Or(c.Cache.FillTimeout.D(), cache.DefaultFillTimeout); fill >= c.Server.WriteTimeout.D() {
		add("cache.fill_timeout", "%s: must be shorter than server.write_timeout (%s), or a client waiting on a slow fill loses its connection before its 503",
			fill, c.Server.WriteTimeout.D())
	}
	if sh := c.Cache.Shared; sh != nil {
		validateShared(add, sh)
		// A waiter must be able to take over a dead filler's lease and
		// still fill within its own deadline.
		if fill := cmp.Or(c.Cache.FillTimeout.D(), cache.DefaultFillTimeout); sh.Lease.D() >= fill {
			add("cache.shared.lease", "%s: must be shorter than cache.fill_timeout (%s), or a replica waiting on a filler that died reaches its own deadline before it may fill",
				sh.Lease.D(), fill)
		}
	}
	if w := c.Cache.Warm; w != nil {
		validateWarm(add, w)
	}
	if d := c.Cache.Disk; d != nil {
		validateDisk(add, d)
		if c.Cache.Shared != nil {
			add("cache.disk", "cannot be used with cache.shared: a fleet's replicas start warm from Redis, and one second tier is consulted per miss (remove one of them)")
		}
	}
	for i, tp := range c.Server.TrustedProxies {
		if _, err := clientip.ParsePrefix(tp); err != nil {
			add(fmt.Sprintf("server.trusted_proxies[%d]", i), "invalid address or CIDR prefix %q (want e.g. 10.0.0.0/8, 192.0.2.7 or ::1)", tp)
		}
	}
	if c.Auth.Workers < 0 {
		add("auth.workers", "must not be negative (0: one less than the number of CPUs)")
	}
	if c.Auth.Queue < 0 {
		add("auth.queue", "must not be negative (0: the default)")
	}
	if c.Auth.ChecksPerSecond < 0 || math.IsNaN(c.Auth.ChecksPerSecond) || math.IsInf(c.Auth.ChecksPerSecond, 0) {
		add("auth.checks_per_second", "must be a positive number (0: the default)")
	}
	for _, f := range []struct {
		path string
		l    FailureLimit
	}{{"auth.failures_per_address", c.Auth.FailuresPerAddress}, {"auth.failures_per_username", c.Auth.FailuresPerUsername}} {
		if f.l == (FailureLimit{}) {
			continue // the default
		}
		if !(f.l.PerMinute > 0) || math.IsInf(f.l.PerMinute, 0) {
			add(f.path+".per_minute", "must be a positive number")
		}
		if f.l.Burst < 1 {
			add(f.path+".burst", "must be at least 1")
		}
	}
	if c.Auth.VerifiedEntries < 0 {
		add("auth.verified_entries", "must not be negative (0: the default)")
	}
	if c.Breaker.FailureRatio < 0 || c.Breaker.FailureRatio > 1 {
		add("breaker.failure_ratio", "must be between 0 and 1")
	}
	if c.Breaker.TenantShare < 0 || c.Breaker.TenantShare > 1 {
		add("breaker.tenant_share", "must be between 0 and 1 (0: the default)")
	}
	if c.Breaker.QueueTimeout < 0 {
		add("breaker.queue_timeout", "must not be negative (0: the default)")
	}
	if c.Breaker.Window < 0 {
		add("breaker.window", "must not be negative")
	}
	if c.Breaker.OpenFor < 0 {
		add("breaker.open_for", "must not be negative")
	}
	if tls := c.Server.TLS; (tls.CertFile == "") != (tls.KeyFile == "") {
		add("server.tls", "needs both cert_file and key_file")
	} else {
		checkKeyPair(add, "server.tls", tls.CertFile, tls.KeyFile)
	}
	switch c.Telemetry.Exporter {
	case "", "none", "stdout", "otlp-http", "otlp-grpc":
	default:
		add("telemetry.exporter", "unknown exporter %q (want none, stdout, otlp-http or otlp-grpc)", c.Telemetry.Exporter)
	}
	if r := *c.Telemetry.SampleRatio; r < 0 || r > 1 {
		add("telemetry.sample_ratio", "must be between 0 and 1")
	}
	switch c.Log.Level {
	case "debug", "info", "warn", "error":
	default:
		add("log.level", "unknown level %q (want debug, info, warn or error)", c.Log.Level)
	}
	switch c.Log.Format {
	case "auto", "json", "text":
	default:
		add("log.format", "unknown format %q (want auto, json or text)", c.Log.Format)
	}
	return ps
}

// checkCompat checks the compatibility switches in force at p (a
// tenant's, or a user's over its tenant's).
func checkCompat(add func(string, string, ...any), p string, c Compat) {
	items := c.JSONSingleObjectItems
	if len(items) == 0 {
		return
	}
	if c.JSONSingleObject {
		add(p+".compat.json_single_object_items", "json_single_object: true already makes every collection of one item an object; set one of the two")
	}
	for i, it := range items {
		if !xmlName.MatchString(it) {
			add(fmt.Sprintf("%s.compat.json_single_object_items[%d]", p, i), "%q is not an element name (want e.g. property)", it)
		}
	}
}

func checkHash(add func(string, string, ...any), path, hash string) {
	if hash == "" {
		add(path, "required (a bcrypt hash; make one with: listingproxy hash-password)")
		return
	}
	if _, err := bcrypt.Cost([]byte(hash)); err != nil {
		add(path, "not a bcrypt hash (make one with: listingproxy hash-password)")
	}
}

// ResourceTTL returns the cache TTL of a resource (properties, property, agents, agent).
func (c *Cache) ResourceTTL(resource string) time.Duration {
	if d, ok := c.TTLs[resource]; ok {
		return d.D()
	}
	return c.TTL.D()
}

// validateWarm checks cache.warm.
func validateWarm(add func(string, string, ...any), w *WarmCache) {
	if w.File != "" {
		if strings.HasSuffix(w.File, "/") {
			add("cache.warm.file", "%q names a directory; want a file in it (e.g. %swarm.json)", w.File, w.File)
		} else if fi, err := os.Stat(filepath.Dir(w.File)); err != nil || !fi.IsDir() {
			add("cache.warm.file", "%q: its directory %q does not exist", w.File, filepath.Dir(w.File))
		} else if fi, err := os.Stat(w.File); err == nil && fi.IsDir() {
			add("cache.warm.file", "%q is a directory; want a file in it (e.g. %s)", w.File, filepath.Join(w.File, "warm.json"))
		}
	}
	if w.Keys < 0 {
		add("cache.warm.keys", "must not be negative (0: the default)")
	}
	if w.ReadyTimeout.D() < 0 {
		add("cache.warm.ready_timeout", "must not be negative (0: /readyz does not wait)")
	}
}

// validateDisk checks cache.disk.
func validateDisk(add func(string, string, ...any), d *DiskCache) {
	switch {
	case d.Path == "":
		add("cache.disk.path", "required: the file the disk tier keeps its entries in (its directory must exist)")
	case strings.HasSuffix(d.Path, "/"):
		add("cache.disk.path", "%q names a directory; want a file in it (e.g. %scache.db)", d.Path, d.Path)
	default:
		if fi, err := os.Stat(filepath.Dir(d.Path)); err != nil || !fi.IsDir() {
			add("cache.disk.path", "%q: its directory %q does not exist", d.Path, filepath.Dir(d.Path))
		} else if fi, err := os.Stat(d.Path); err == nil && fi.IsDir() {
			add("cache.disk.path", "%q is a directory; want a file in it (e.g. %s)", d.Path, filepath.Join(d.Path, "cache.db"))
		}
	}
	if d.MaxBytes < 0 {
		add("cache.disk.max_bytes", "must not be negative (0: the default)")
	} else if d.MaxBytes != 0 && d.MaxBytes < 1<<20 {
		add("cache.disk.max_bytes", "must be at least 1MiB")
	}
}

// validateShared checks cache.shared.
func validateShared(add func(string, string, ...any), sh *SharedCache) {
	if len(sh.Addrs) == 0 {
		add("cache.shared.addrs", "at least one Redis address is required (host:port)")
	}
	for i, a := range sh.Addrs {
		if _, _, err := net.SplitHostPort(a); err != nil {
			add(fmt.Sprintf("cache.shared.addrs[%d]", i), "invalid address %q (want host:port)", a)
		}
	}
	if sh.DB < 0 {
		add("cache.shared.db", "must not be negative")
	}
	if sh.DB != 0 && len(sh.Addrs) > 1 && sh.MasterName == "" {
		add("cache.shared.db", "a Redis Cluster has only database 0")
	}
	if sh.MaxEntryBytes < 0 {
		add("cache.shared.max_entry_bytes", "must not be negative")
	}
	if sh.Timeout < 0 {
		add("cache.shared.timeout", "must not be negative")
	}
	if sh.Lease < 0 {
		add("cache.shared.lease", "must not be negative")
	}
	t := sh.TLS
	if !t.Enabled && (t.CAFile != "" || t.CertFile != "" || t.KeyFile != "" || t.ServerName != "") {
		add("cache.shared.tls.enabled", "tls files or server_name are set but tls is not enabled")
	}
	if (t.CertFile == "") != (t.KeyFile == "") {
		add("cache.shared.tls", "cert_file and key_file go together")
	} else if t.Enabled {
		checkKeyPair(add, "cache.shared.tls", t.CertFile, t.KeyFile)
	}
	if t.Enabled && t.CAFile != "" {
		if _, err := os.ReadFile(t.CAFile); err != nil {
			add("cache.shared.tls.ca_file", "%v", err)
		}
	}
}

// checkKeyPair checks, as serve will load them, the certificate and key
// files at prefix (both set or both empty): each readable, and the two a
// certificate and its key. check-config thereby finds a missing file with
// every other problem, located at its key.
func checkKeyPair(add func(string, string, ...any), prefix, certFile, keyFile string) {
	if certFile == "" {
		return
	}
	ok := true
	for _, f := range [...]struct{ key, path string }{{"cert_file", certFile}, {"key_file", keyFile}} {
		if _, err := os.ReadFile(f.path); err != nil {
			add(prefix+"."+f.key, "%v", err)
			ok = false
		}
	}
	if !ok {
		return
	}
	if _, err := tls.LoadX509KeyPair(certFile, keyFile); err != nil {
		add(prefix, "cert_file and key_file are not a certificate and its private key: %v", err)
	}
}
