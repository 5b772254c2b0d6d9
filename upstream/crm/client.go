package crm

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"golang.org/x/sync/semaphore"
	"golang.org/x/sync/singleflight"

	"listingproxy/normalize"
	"listingproxy/upstream"
	"listingproxy/wire"
)

// Defaults of Options.
const (
	DefaultTimeout            = 3 * time.Second
	DefaultMaxConcurrency     = 256
	DefaultMaxBodyBytes       = 16 << 20
	DefaultHydrateConcurrency = 8
	DefaultDocTTL             = 60 * time.Second
)

// Bounds of the in-package caches. Documents are small (a few KiB); the bound
// keeps the worst case at a few tens of MiB.
const (
	maxCachedDocs  = 4096
	maxCachedMemos = 1024
	autoHitPercent = 80 // HydrateAuto hydrates when at least this share of docs is cached
)

// HydrateMode says how full-detail property lists are fetched (see the
// package documentation).
type HydrateMode uint8

// The hydrate modes. The zero value is HydrateAuto.
const (
	HydrateAuto   HydrateMode = iota // hydrate when most documents are cached
	HydrateAlways                    // short list plus one call per document
	HydrateNever                     // one detail=full list call
)

func (m HydrateMode) String() string {
	switch m {
	case HydrateAuto:
		return "auto"
	case HydrateAlways:
		return "always"
	case HydrateNever:
		return "never"
	}
	return "HydrateMode(" + strconv.Itoa(int(m)) + ")"
}

// ParseHydrateMode parses "auto", "always" or "never" (case-insensitive;
// surrounding spaces ignored). The empty string is "auto".
func ParseHydrateMode(s string) (HydrateMode, error) {
	switch strings.ToLower(strings.TrimSpace(s)) {
	case "", "auto":
		return HydrateAuto, nil
	case "always":
		return HydrateAlways, nil
	case "never":
		return HydrateNever, nil
	}
	return 0, fmt.Errorf("crm: invalid hydrate mode %q: want auto, always or never", s)
}

// Credential is a tenant's login at the legacy endpoint.
type Credential struct {
	Username string
	Password string
}

// Options configure a Client. The zero value of every field but BaseURL
// works.
type Options struct {
	// BaseURL is the legacy endpoint's base address, http or https, without
	// credentials, query or fragment, e.g. "http://127.0.0.1:9000" or
	// "https://crm.example/api". Required.
	BaseURL string
	// Credentials holds each tenant's upstream login, by upstream.Scope.Tenant.
	// A call for a tenant without an entry fails without reaching the CRM.
	Credentials map[string]Credential
	// Timeout bounds each upstream call, from waiting for a concurrency slot
	// to reading the last byte of the body. Default DefaultTimeout (3s).
	Timeout time.Duration
	// MaxConcurrency caps concurrent upstream calls across the Client, a
	// hydration's document fetches included. A call that gets no slot
	// within Timeout fails with upstream.ErrBusy. It is a ceiling, not the
	// working bound: cmd puts an adaptive limit below it
	// (upstream/breaker), which follows the CRM's latency. Default
	// DefaultMaxConcurrency (256).
	MaxConcurrency int
	// MaxBodyBytes caps the size of one (decompressed) response body.
	// Default DefaultMaxBodyBytes (16 MiB).
	MaxBodyBytes int64
	// MaxDecodingBytes bounds the bytes of answers being decoded at once,
	// across the Client: what bounds the memory of decoding, since one
	// answer's is proportional to its bytes. Each answer's bytes are
	// granted as they are read (at once from a Content-Length); a grant
	// that cannot be had within Timeout fails the call with
	// upstream.ErrBusy. It must be at least MaxBodyBytes. Default the
	// larger of DefaultMaxDecodingBytes (64 MiB) and MaxBodyBytes.
	MaxDecodingBytes int64
	// MaxElements caps the XML elements of one answer, kept or skipped; an
	// answer with more is a failure. Default DefaultMaxElements (100,000).
	MaxElements int
	// MaxDepth caps the nesting of one answer's elements. Default
	// DefaultMaxDepth (64).
	MaxDepth int
	// Hydrate chooses how full-detail property lists are fetched. Default
	// HydrateAuto.
	Hydrate HydrateMode
	// HydrateConcurrency caps the concurrent document fetches of one
	// hydration. Default DefaultHydrateConcurrency (8).
	HydrateConcurrency int
	// DocTTL is how long a fetched property document may be reused by
	// hydration. Default DefaultDocTTL (60s); negative disables reuse.
	DocTTL time.Duration
	// HTTPClient makes the calls. Default: a client of the Client's own with
	// a Transport tuned to MaxConcurrency and Timeout (never
	// http.DefaultClient). Its Timeout field should be zero: the Client sets
	// deadlines per call.
	HTTPClient *http.Client
	// WrapTransport, when set and HTTPClient is nil, wraps the Client's own
	// tuned transport (cmd adds client spans and trace context here), so
	// the caller need not build a second one. Close still releases the
	// transport's idle connections. Nil: the transport as it is.
	WrapTransport func(http.RoundTripper) http.RoundTripper
	// Now returns the current time; it drops ended open homes and ages
	// cached documents. Default time.Now.
	Now func() time.Time
	// PassThrough keeps each record as the CRM sent it (upstream.Property
	// and Agent Legacy fields), so the proxy passes it through instead of
	// re-rendering the model (docs/crm.md, "Pass-through"). It costs about
	// three times each record's XML on top of the model.
	PassThrough bool
	// Logger receives a warning for each tolerated flaw of an answer (a
	// value that cannot be read, a mislabelled content type, bytes that are
	// not UTF-8). Default: discard.
	Logger *slog.Logger
}

// Client is an upstream.Backend backed by the legacy CRM. It is safe for
// concurrent use. Create it with New.
type Client struct {
	base        *url.URL
	creds       map[string]Credential
	timeout     time.Duration
	sem         *semaphore.Weighted // MaxConcurrency calls at once
	maxConc     int
	inFlight    atomic.Int64 // calls holding a slot
	budget      *budget
	maxBody     int64
	limits      limits
	hydrate     HydrateMode
	hydrateConc int
	docTTL      time.Duration
	hc          *http.Client
	transport   *http.Transport // non-nil when the Client owns hc
	log         *slog.Logger
	passThrough bool
	now         func() time.Time
	zones       map[string]*time.Location
	// withTimeout bounds a call by timeout: context.WithTimeout, but for
	// tests that end a call's Timeout at a moment of their choosing.
	withTimeout func(context.Context, time.Duration) (context.Context, context.CancelFunc)

	docs    *lru[docKey, upstream.Property]
	memos   *lru[memoKey, []int64]
	flights singleflight.Group

	stats struct {
		calls, docHits, docFetches, hydrations, fullLists atomic.Int64
		badValues, mislabelled, repaired, xml11           atomic.Int64
		transcoded, panics, pagedHere                     atomic.Int64
	}
}

var _ upstream.Backend = (*Client)(nil)

// New returns a Client for o, or an error naming every invalid option.
func New(o Options) (*Client, error) {
	var problems []string
	bad := func(format string, args ...any) { problems = append(problems, fmt.Sprintf(format, args...)) }

	base, err := url.Parse(strings.TrimSpace(o.BaseURL))
	switch {
	case o.BaseURL == "":
		bad("BaseURL is required")
	case err != nil:
		bad("BaseURL: %v", err)
	case base.Scheme != "http" && base.Scheme != "https":
		bad("BaseURL %q: scheme must be http or https", o.BaseURL)
	case base.Host == "":
		bad("BaseURL %q: no host", o.BaseURL)
	case base.User != nil:
		bad("BaseURL: must not carry credentials (use Credentials)")
	case base.RawQuery != "" || base.Fragment != "":
		bad("BaseURL %q: must not have a query or fragment", o.BaseURL)
	}
	if o.Timeout < 0 {
		bad("Timeout %s: must not be negative", o.Timeout)
	}
	if o.MaxConcurrency < 0 {
		bad("MaxConcurrency %d: must not be negative", o.MaxConcurrency)
	}
	if o.MaxBodyBytes < 0 {
		bad("MaxBodyBytes %d: must not be negative", o.MaxBodyBytes)
	}
	if o.MaxDecodingBytes < 0 {
		bad("MaxDecodingBytes %d: must not be negative", o.MaxDecodingBytes)
	} else if o.MaxDecodingBytes > 0 && o.MaxDecodingBytes < orDefault(o.MaxBodyBytes, DefaultMaxBodyBytes) {
		bad("MaxDecodingBytes %d: must be at least MaxBodyBytes (%d), or an answer of the largest size could never be decoded", o.MaxDecodingBytes, orDefault(o.MaxBodyBytes, DefaultMaxBodyBytes))
	}
	if o.MaxElements < 0 {
		bad("MaxElements %d: must not be negative", o.MaxElements)
	}
	if o.MaxDepth < 0 {
		bad("MaxDepth %d: must not be negative", o.MaxDepth)
	}
	if o.HydrateConcurrency < 0 {
		bad("HydrateConcurrency %d: must not be negative", o.HydrateConcurrency)
	}
	if o.Hydrate > HydrateNever {
		bad("Hydrate %s: unknown mode", o.Hydrate)
	}
	creds := make(map[string]Credential, len(o.Credentials))
	for tenant, cr := range o.Credentials {
		if cr.Username == "" {
			bad("Credentials[%q]: empty username", tenant)
		}
		creds[tenant] = cr
	}
	// The CRM writes local times in the country's zone (other countries
	// are read as UTC).
	countryZones := upstream.CountryZones()
	zones := make(map[string]*time.Location, len(countryZones))
	for country, name := range countryZones {
		loc, err := time.LoadLocation(name)
		if err != nil {
			bad("time zone %s for country %s: %v (link time/tzdata into the binary)", name, country, err)
			continue
		}
		zones[country] = loc
	}
	if len(problems) > 0 {
		return nil, fmt.Errorf("crm: invalid options: %s", strings.Join(problems, "; "))
	}

	c := &Client{
		base:        base,
		creds:       creds,
		timeout:     orDefault(o.Timeout, DefaultTimeout),
		withTimeout: context.WithTimeout,
		maxBody:     orDefault(o.MaxBodyBytes, DefaultMaxBodyBytes),
		hydrate:     o.Hydrate,
		hydrateConc: orDefault(o.HydrateConcurrency, DefaultHydrateConcurrency),
		docTTL:      orDefault(o.DocTTL, DefaultDocTTL),
		hc:          o.HTTPClient,
		now:         o.Now,
		log:         o.Logger,
		passThrough: o.PassThrough,
		zones:       zones,
		docs:        newLRU[docKey, upstream.Property](maxCachedDocs),
		memos:       newLRU[memoKey, []int64](maxCachedMemos),
	}
	c.limits = limits{
		maxBytes:    c.maxBody,
		maxElements: orDefault(o.MaxElements, DefaultMaxElements),
		maxDepth:    orDefault(o.MaxDepth, DefaultMaxDepth),
	}
	c.base.Path = strings.TrimRight(c.base.Path, "/")
	c.base.RawPath = ""
	maxConc := orDefault(o.MaxConcurrency, DefaultMaxConcurrency)
	c.sem, c.maxConc = semaphore.NewWeighted(int64(maxConc)), maxConc
	c.budget = newBudget(orDefault(o.MaxDecodingBytes, max(DefaultMaxDecodingBytes, c.maxBody)))
	if c.now == nil {
		c.now = time.Now
	}
	if c.log == nil {
		c.log = slog.New(slog.DiscardHandler)
	}
	if c.hc == nil {
		c.transport = &http.Transport{
			Proxy: http.ProxyFromEnvironment,
			DialContext: (&net.Dialer{
				Timeout:   c.timeout,
				KeepAlive: 30 * time.Second,
			}).DialContext,
			ForceAttemptHTTP2:   true,
			MaxIdleConns:        2 * maxConc,
			MaxIdleConnsPerHost: maxConc, // every slot can keep its connection warm
			IdleConnTimeout:     90 * time.Second,
			TLSHandshakeTimeout: c.timeout,
			// No ResponseHeaderTimeout: each call's context deadline
			// (Timeout) bounds headers and body together.
			ExpectContinueTimeout: time.Second,
		}
		var rt http.RoundTripper = c.transport
		if o.WrapTransport != nil {
			rt = o.WrapTransport(rt)
		}
		c.hc = &http.Client{Transport: rt}
	}
	return c, nil
}

func orDefault[T int | int64 | time.Duration](v, def T) T {
	if v == 0 {
		return def
	}
	return v
}

// Close releases the idle connections of the Client's own transport. The
// Client remains usable. It does nothing when Options.HTTPClient was given.
func (c *Client) Close() {
	if c.transport != nil {
		c.transport.CloseIdleConnections()
	}
}

// Stats are counters since the Client was created.
type Stats struct {
	Calls    int64 // upstream HTTP calls started
	InFlight int64 // upstream calls holding one of MaxConcurrency slots now
	// DecodingBytes is the decode budget granted now (answer bytes being
	// decoded), of Options.MaxDecodingBytes; BudgetWaits counts the grants
	// that had to wait for room.
	DecodingBytes int64
	BudgetWaits   int64
	DocHits       int64 // property documents reused from the cache by hydration
	DocFetches    int64 // property documents fetched by hydration (after single-flight)
	Hydrations    int64 // full-detail lists answered by hydration
	FullLists     int64 // full-detail lists answered by one detail=full call

	// Tolerated flaws of answers that were served anyway (each also logged).
	BadValues   int64 // values that could not be read (the record was kept without them, or dropped without an id)
	Mislabelled int64 // well-formed answers with a content type other than XML (text/html...)
	Repaired    int64 // answers with bytes that were not UTF-8, read as Windows-1252
	XML11       int64 // answers declaring XML 1.1, read as XML 1.0
	PagedHere   int64 // list answers with more records than their limit (limit and offset ignored), paged here

	// Transcoded counts answers in another encoding than UTF-8 (a declared
	// ISO-8859-1 or Windows-1252, UTF-16), decoded to UTF-8.
	Transcoded int64

	// Panics counts answers whose reading panicked: listingproxy's bug,
	// each logged with its stack; the call fails with upstream.ErrInternal.
	Panics int64
}

// Stats returns the Client's counters.
func (c *Client) Stats() Stats {
	return Stats{
		Calls:    c.stats.calls.Load(),
		InFlight: c.inFlight.Load(),

		DecodingBytes: c.budget.inUse.Load(),
		BudgetWaits:   c.budget.waits.Load(),

		DocHits:    c.stats.docHits.Load(),
		DocFetches: c.stats.docFetches.Load(),
		Hydrations: c.stats.hydrations.Load(),
		FullLists:  c.stats.fullLists.Load(),

		BadValues:   c.stats.badValues.Load(),
		Mislabelled: c.stats.mislabelled.Load(),
		Repaired:    c.stats.repaired.Load(),
		XML11:       c.stats.xml11.Load(),
		PagedHere:   c.stats.pagedHere.Load(),
		Transcoded:  c.stats.transcoded.Load(),

		Panics: c.stats.panics.Load(),
	}
}

// ListProperties returns the properties the criteria select, in the CRM's
// order. A full-detail list may be hydrated (see the package documentation).
func (c *Client) ListProperties(ctx context.Context, s upstream.Scope, cr normalize.Criteria) ([]upstream.Property, error) {
	return c.listProperties(ctx, s, cr.Values(), cr.Detail(), cr.Key())
}

// listProperties is ListProperties on the criteria's parts; key identifies
// the criteria for HydrateAuto.
func (c *Client) listProperties(ctx context.Context, s upstream.Scope, q url.Values, detail normalize.Detail, key string) ([]upstream.Property, error) {
	op := "crm: list properties " + s.Country
	var (
		props []upstream.Property
		err   error
	)
	switch {
	case detail != normalize.Full:
		props, err = c.fetchPropertyList(ctx, s, q, normalize.Short)
	case c.shouldHydrate(s, key):
		c.stats.hydrations.Add(1)
		props, err = c.hydrated(ctx, s, q, key)
	default:
		c.stats.fullLists.Add(1)
		props, err = c.fetchPropertyList(ctx, s, q, normalize.Full)
		if err == nil && c.hydrate == HydrateAuto && c.docTTL > 0 {
			c.seed(s, key, props)
		}
	}
	if err != nil {
		return nil, c.wrap(ctx, op, err)
	}
	now := c.now()
	for i := range props {
		props[i].OpenHomes = currentOpenHomes(props[i].OpenHomes, now)
	}
	return props, nil
}

// GetProperty returns the property with full detail, or an error matching
// upstream.ErrNotFound (a *NotFoundError). It always asks the CRM; the
// document it gets is kept for hydration.
func (c *Client) GetProperty(ctx context.Context, s upstream.Scope, id int64) (upstream.Property, error) {
	p, err := c.fetchPropertyDoc(ctx, s, id)
	if err != nil {
		return upstream.Property{}, c.wrap(ctx, fmt.Sprintf("crm: get property %s %d", s.Country, id), err)
	}
	if c.hydrate != HydrateNever && c.docTTL > 0 {
		c.docs.put(docKey{s.Tenant, s.Country, id}, p, c.now())
	}
	p = cloneProperty(p)
	p.OpenHomes = currentOpenHomes(p.OpenHomes, c.now())
	return p, nil
}

// ListAgents returns the agents the criteria select, in the CRM's order.
func (c *Client) ListAgents(ctx context.Context, s upstream.Scope, cr normalize.Criteria) ([]upstream.Agent, error) {
	return c.listAgents(ctx, s, cr.Values(), cr.Detail())
}

func (c *Client) listAgents(ctx context.Context, s upstream.Scope, q url.Values, detail normalize.Detail) ([]upstream.Agent, error) {
	var agents []upstream.Agent
	err := c.call(ctx, s, withDetail(q, detail), []string{"agents.xml"}, func(d *boundedDecoder) (err error) {
		agents, err = wire.ReadAgentList(d, detail == normalize.Full, maxRecords(q), c.listReadOptions(s, q))
		return err
	})
	if err != nil {
		return nil, c.wrap(ctx, "crm: list agents "+s.Country, err)
	}
	return agents, nil
}

// GetAgent returns the agent with full detail, or an error matching
// upstream.ErrNotFound (a *NotFoundError).
func (c *Client) GetAgent(ctx context.Context, s upstream.Scope, id int64) (upstream.Agent, error) {
	var a upstream.Agent
	err := c.call(ctx, s, nil, []string{"agents", strconv.FormatInt(id, 10) + ".xml"}, func(d *boundedDecoder) (err error) {
		a, err = wire.ReadAgent(d, c.readOptions(s))
		return err
	})
	if err != nil {
		return upstream.Agent{}, c.wrap(ctx, fmt.Sprintf("crm: get agent %s %d", s.Country, id), err)
	}
	return a, nil
}

// wrap prefixes err with op. When the caller's ctx is done, the result wraps
// ctx.Err() whatever the call failed with, so the caller sees its own
// cancellation; but a wait for a bound of the Client's own (a slot, the
// decode budget) that the caller's deadline ended stays upstream.ErrBusy:
// the CRM did not make the caller wait.
func (c *Client) wrap(ctx context.Context, op string, err error) error {
	var ce *upstream.CriteriaError
	if errors.As(err, &ce) {
		return ce
	}
	if ctxErr := ctx.Err(); ctxErr != nil && !errors.Is(err, ctxErr) &&
		(errors.Is(ctxErr, context.Canceled) || !errors.Is(err, upstream.ErrBusy)) {
		return fmt.Errorf("%s: %w", op, ctxErr)
	}
	return fmt.Errorf("%s: %w", op, err)
}

// withDetail returns a copy of q asking for detail.
func withDetail(q url.Values, detail normalize.Detail) url.Values {
	out := make(url.Values, len(q)+1)
	for k, v := range q {
		out[k] = v
	}
	out.Set("detail", detail.String())
	return out
}

func (c *Client) fetchPropertyList(ctx context.Context, s upstream.Scope, q url.Values, detail normalize.Detail) ([]upstream.Property, error) {
	var props []upstream.Property
	err := c.call(ctx, s, withDetail(q, detail), []string{"properties.xml"}, func(d *boundedDecoder) (err error) {
		props, err = wire.ReadPropertyList(d, c.zone(s.Country), detail == normalize.Full, maxRecords(q), c.listReadOptions(s, q))
		return err
	})
	return props, err
}

func (c *Client) fetchPropertyDoc(ctx context.Context, s upstream.Scope, id int64) (upstream.Property, error) {
	var p upstream.Property
	err := c.call(ctx, s, nil, []string{"properties", strconv.FormatInt(id, 10) + ".xml"}, func(d *boundedDecoder) (err error) {
		p, err = wire.ReadProperty(d, c.zone(s.Country), c.readOptions(s))
		return err
	})
	return p, err
}

// readOptions are the reader's options for an answer for s.
func (c *Client) readOptions(s upstream.Scope) wire.ReadOptions {
	return wire.ReadOptions{Report: c.report(s), Keep: c.passThrough}
}

// listReadOptions are the reader's options for a list answer for s to q: a
// legacy that ignores limit and offset (sends more records than the limit)
// is paged here, as one that ignores both (a script that pages implements
// both), logged and counted.
func (c *Client) listReadOptions(s upstream.Scope, q url.Values) wire.ReadOptions {
	ro := c.readOptions(s)
	if n, err := strconv.Atoi(q.Get("offset")); err == nil && n > 0 {
		ro.Offset = n
	}
	ro.Paged = func(sent int) {
		c.stats.pagedHere.Add(1)
		c.log.Warn("crm: list answer with more records than its limit: limit and offset ignored by the CRM, paged here",
			"tenant", s.Tenant, "country", s.Country, "limit", q.Get("limit"), "offset", q.Get("offset"), "records", sent)
	}
	return ro
}

// report returns the function that logs and counts the values of an answer
// for s that could not be read.
func (c *Client) report(s upstream.Scope) func(wire.Problem) {
	return func(p wire.Problem) {
		c.stats.badValues.Add(1)
		c.log.Warn("crm: value not read; record kept without it", "tenant", s.Tenant, "country", s.Country, "problem", p.String())
	}
}

// maxRecords is the most records a list answer to q may hold: its limit,
// which the proxy always sends; without one, no more than the elements.
func maxRecords(q url.Values) int {
	if n, err := strconv.Atoi(q.Get("limit")); err == nil && n >= 0 {
		return n
	}
	return math.MaxInt
}

func (c *Client) zone(country string) *time.Location {
	if loc := c.zones[country]; loc != nil {
		return loc
	}
	return time.UTC
}

// currentOpenHomes returns the open homes that have not ended by now, in a
// new slice when any is dropped.
func currentOpenHomes(ohs []upstream.OpenHome, now time.Time) []upstream.OpenHome {
	for i, oh := range ohs {
		if !oh.End.IsZero() && oh.End.Before(now) {
			out := append([]upstream.OpenHome(nil), ohs[:i]...)
			for _, oh := range ohs[i+1:] {
				if oh.End.IsZero() || !oh.End.Before(now) {
					out = append(out, oh)
				}
			}
			return out
		}
	}
	return ohs
}
