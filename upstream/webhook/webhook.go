// Package webhook receives a legacy system's signed change notifications
// (a CRM telling listingproxy which properties and agents it changed) and
// reports them as an upstream.ChangeFeed ("webhook"). It is the receiving
// end of docs/crm.md's "Webhooks": one Receiver per backend, serving
// POST /webhooks/{tenant} for that backend's tenants.
//
// A request is accepted only when it is signed with the tenant's secret:
//
//	X-Listingproxy-Timestamp: 1764300000                 (Unix seconds)
//	X-Listingproxy-Signature: sha256=<hex HMAC-SHA256(secret, timestamp + "." + body)>
//
// within Window of the receiver's clock, and not seen before (a replayed
// request, even within the window, is refused). The comparison is
// constant-time. Bad, missing, stale or replayed signatures get 401 and
// purge nothing; bodies are bounded (MaxBodyBytes), so a refused request
// costs one bounded read and one HMAC. Each tenant's accepted requests are
// rate-limited (x/time/rate; 429 past it); refused ones never use that
// rate, so a flood of bad signatures cannot lock the tenant's real sender
// out.
//
// The signature scheme is Stripe's and GitHub's (timestamp in the signed
// text against replay, hex HMAC in a header); it is hand-written because
// it is a dozen lines of crypto/hmac, and no library in the project's list
// verifies it.
//
// It imports upstream (the feed contract) and golang-lru (the bounded
// memory of signatures seen); never proxy, cache or config.
package webhook

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	lru "github.com/hashicorp/golang-lru/v2"
	"golang.org/x/time/rate"

	"listingproxy/upstream"
)

// Headers of a signed request.
const (
	HeaderTimestamp = "X-Listingproxy-Timestamp"
	HeaderSignature = "X-Listingproxy-Signature"
)

// Defaults of Options.
const (
	DefaultWindow       = 5 * time.Minute
	DefaultMaxBodyBytes = 64 << 10
	DefaultMaxChanges   = 1000
	DefaultRate         = 50 // requests a second per tenant
	DefaultBurst        = 100
	// seenSignatures bounds the signatures remembered against replay:
	// more than a tenant's rate allows within the window at the
	// defaults (50 a second for 10 minutes is 30,000).
	seenSignatures = 100000
)

// Tenant is one tenant a Receiver accepts changes for.
type Tenant struct {
	// Upstream is the tenant's identity at the backend
	// (upstream.Change.Tenant).
	Upstream string
	// Secret signs the tenant's requests.
	Secret []byte
}

// Options configure a Receiver. Tenants is required; the zero values of
// the rest are their defaults.
type Options struct {
	// Tenants are the tenants accepted, by our tenant name (the path's
	// {tenant}).
	Tenants map[string]Tenant
	// Window is how far a request's timestamp may be from now, either
	// way. Default DefaultWindow.
	Window time.Duration
	// MaxBodyBytes bounds a request body. Default DefaultMaxBodyBytes.
	MaxBodyBytes int64
	// MaxChanges bounds the ids one request names. Default
	// DefaultMaxChanges.
	MaxChanges int
	// Rate and Burst limit each tenant's requests. Default DefaultRate,
	// DefaultBurst.
	Rate  float64
	Burst int
	// Now is the clock. Default time.Now.
	Now func() time.Time
	// Logger defaults to discarding.
	Logger *slog.Logger
}

// Receiver is a backend's webhook endpoint and its change feed.
type Receiver struct {
	o      Options
	limits map[string]*rate.Limiter // accepted requests, by tenant
	seen   *lru.Cache[[sha256.Size]byte, struct{}]
	seenMu sync.Mutex // check-and-add of seen is one step
	sinkMu sync.RWMutex
	sink   upstream.ChangeSink
}

// New returns a Receiver for o's tenants.
func New(o Options) (*Receiver, error) {
	if len(o.Tenants) == 0 {
		return nil, errors.New("webhook: no tenants")
	}
	if o.Window <= 0 {
		o.Window = DefaultWindow
	}
	if o.MaxBodyBytes <= 0 {
		o.MaxBodyBytes = DefaultMaxBodyBytes
	}
	if o.MaxChanges <= 0 {
		o.MaxChanges = DefaultMaxChanges
	}
	if o.Rate <= 0 {
		o.Rate = DefaultRate
	}
	if o.Burst <= 0 {
		o.Burst = DefaultBurst
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	r := &Receiver{o: o, limits: map[string]*rate.Limiter{}}
	for name, t := range o.Tenants {
		if len(t.Secret) == 0 {
			return nil, fmt.Errorf("webhook: tenant %s: empty secret", name)
		}
		r.limits[name] = rate.NewLimiter(rate.Limit(o.Rate), o.Burst)
	}
	r.seen, _ = lru.New[[sha256.Size]byte, struct{}](seenSignatures) // errors only for a size <= 0
	return r, nil
}

// Name implements upstream.ChangeFeed.
func (*Receiver) Name() string { return "webhook" }

// PerReplica reports true: a webhook reaches one replica of a fleet (the
// load balancer's pick), whose purges reach the others through the shared
// tier, so every replica receives and none waits for a lease.
func (*Receiver) PerReplica() bool { return true }

// Watch implements upstream.ChangeFeed: requests accepted until ctx ends
// are reported to sink. A request arriving when no Watch runs gets 503.
func (r *Receiver) Watch(ctx context.Context, sink upstream.ChangeSink) error {
	r.sinkMu.Lock()
	r.sink = sink
	r.sinkMu.Unlock()
	sink.Live(nil)
	<-ctx.Done()
	r.sinkMu.Lock()
	r.sink = nil
	r.sinkMu.Unlock()
	return nil
}

// Body is a request's JSON: the changes, each naming a resource
// ("property" or "agent"), an operation ("insert", "update" or "delete"),
// the ids it concerns and, optionally, their country.
//
//	{"changes": [{"resource": "property", "op": "update", "ids": [101, 102], "country": "au"}]}
type Body struct {
	Changes []BodyChange `json:"changes"`
}

// BodyChange is one change of a Body.
type BodyChange struct {
	Resource string  `json:"resource"`
	Op       string  `json:"op"`
	IDs      []int64 `json:"ids"`
	Country  string  `json:"country,omitempty"`
}

// Sign returns the signature header value of body sent at ts with secret:
// what a legacy system (and cmd/legacy-crm) sends.
func Sign(secret []byte, ts time.Time, body []byte) (timestamp, signature string) {
	timestamp = strconv.FormatInt(ts.Unix(), 10)
	return timestamp, "sha256=" + hex.EncodeToString(mac(secret, timestamp, body))
}

func mac(secret []byte, timestamp string, body []byte) []byte {
	m := hmac.New(sha256.New, secret)
	m.Write([]byte(timestamp))
	m.Write([]byte{'.'})
	m.Write(body)
	return m.Sum(nil)
}

// ServeHTTP implements http.Handler for POST /webhooks/{tenant}: the
// tenant is the request's path value "tenant".
func (r *Receiver) ServeHTTP(w http.ResponseWriter, req *http.Request) {
	name := req.PathValue("tenant")
	t, ok := r.o.Tenants[name]
	if !ok {
		Refuse(w)
		return
	}
	body, err := io.ReadAll(http.MaxBytesReader(w, req.Body, r.o.MaxBodyBytes))
	if err != nil {
		var mb *http.MaxBytesError
		if errors.As(err, &mb) {
			reply(w, http.StatusRequestEntityTooLarge, fmt.Sprintf("body larger than %d bytes", r.o.MaxBodyBytes))
			return
		}
		reply(w, http.StatusBadRequest, "reading the body: "+err.Error())
		return
	}
	if msg := r.verify(t, req.Header.Get(HeaderTimestamp), req.Header.Get(HeaderSignature), body); msg != "" {
		r.o.Logger.Warn("webhook refused", "tenant", name, "reason", msg)
		reply(w, http.StatusUnauthorized, msg)
		return
	}
	if !r.limits[name].AllowN(r.o.Now(), 1) {
		w.Header().Set("Retry-After", "1")
		reply(w, http.StatusTooManyRequests, "too many webhook requests for this tenant")
		return
	}
	changes, msg := r.parse(t, body)
	if msg != "" {
		reply(w, http.StatusBadRequest, msg)
		return
	}
	r.sinkMu.RLock()
	sink := r.sink
	if sink != nil {
		for _, c := range changes {
			sink.Changed(c)
		}
	}
	r.sinkMu.RUnlock()
	if sink == nil {
		w.Header().Set("Retry-After", "1")
		reply(w, http.StatusServiceUnavailable, "not accepting changes yet: retry")
		return
	}
	w.Header().Set("Content-Type", "application/json")
	fmt.Fprintf(w, "{\"accepted\":%d}\n", len(changes))
}

// Tenants returns the names of the tenants r accepts, sorted.
func (r *Receiver) Tenants() []string { return slices.Sorted(maps.Keys(r.o.Tenants)) }

// Mux serves POST /hooks/changes/{tenant} with the receiver of the path's
// tenant (byTenant), and any other tenant as Refuse does.
func Mux(byTenant map[string]*Receiver) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		rc := byTenant[r.PathValue("tenant")]
		if rc == nil {
			Refuse(w)
			return
		}
		rc.ServeHTTP(w, r)
	})
}

// Refuse answers a request for a tenant no receiver accepts exactly as a
// request without a signature: the endpoint does not say which tenants
// exist.
func Refuse(w http.ResponseWriter) {
	reply(w, http.StatusUnauthorized, "signature required: "+HeaderTimestamp+" and "+HeaderSignature)
}

// verify checks a request's signature; its answer is why it is refused
// ("" when accepted). An accepted signature is remembered, so the same
// request is refused if it comes again.
func (r *Receiver) verify(t Tenant, timestamp, signature string, body []byte) string {
	if timestamp == "" || signature == "" {
		return "signature required: " + HeaderTimestamp + " and " + HeaderSignature
	}
	secs, err := strconv.ParseInt(timestamp, 10, 64)
	if err != nil {
		return "bad " + HeaderTimestamp + ": want Unix seconds"
	}
	hexSig, ok := strings.CutPrefix(signature, "sha256=")
	got, err := hex.DecodeString(hexSig)
	if !ok || err != nil || len(got) != sha256.Size {
		return "bad " + HeaderSignature + ": want sha256=<64 hex digits>"
	}
	if !hmac.Equal(got, mac(t.Secret, timestamp, body)) {
		return "signature does not match"
	}
	if d := r.o.Now().Sub(time.Unix(secs, 0)); d > r.o.Window || d < -r.o.Window {
		return fmt.Sprintf("timestamp outside the %s window", r.o.Window)
	}
	var key [sha256.Size]byte
	copy(key[:], got)
	r.seenMu.Lock()
	defer r.seenMu.Unlock()
	if r.seen.Contains(key) {
		return "replayed request"
	}
	r.seen.Add(key, struct{}{})
	return ""
}

// parse reads a body into changes of t, or says what is wrong with it.
func (r *Receiver) parse(t Tenant, body []byte) ([]upstream.Change, string) {
	dec := json.NewDecoder(strings.NewReader(string(body)))
	dec.DisallowUnknownFields()
	var b Body
	if err := dec.Decode(&b); err != nil {
		return nil, "body: " + err.Error()
	}
	if dec.More() {
		return nil, "body: more than one JSON value"
	}
	if len(b.Changes) == 0 {
		return nil, `body: no "changes"`
	}
	ids := 0
	out := make([]upstream.Change, 0, len(b.Changes))
	for i, bc := range b.Changes {
		at := fmt.Sprintf("changes[%d]", i)
		c := upstream.Change{Tenant: t.Upstream, Country: bc.Country}
		switch bc.Op {
		case "insert":
			c.Op = upstream.OpInsert
		case "update":
			c.Op = upstream.OpUpdate
		case "delete":
			c.Op = upstream.OpDelete
		default:
			return nil, fmt.Sprintf("%s.op: %q: want insert, update or delete", at, bc.Op)
		}
		if len(bc.IDs) == 0 {
			return nil, at + ".ids: empty"
		}
		for j, id := range bc.IDs {
			if id <= 0 {
				return nil, fmt.Sprintf("%s.ids[%d]: %d: want a positive id", at, j, id)
			}
		}
		if ids += len(bc.IDs); ids > r.o.MaxChanges {
			return nil, fmt.Sprintf("more than %d ids in one request", r.o.MaxChanges)
		}
		switch bc.Resource {
		case "property":
			c.Resource, c.Properties = upstream.ResourceProperties, bc.IDs
		case "agent":
			c.Resource, c.Agents = upstream.ResourceAgents, bc.IDs
		default:
			return nil, fmt.Sprintf("%s.resource: %q: want property or agent", at, bc.Resource)
		}
		out = append(out, c)
	}
	return out, ""
}

// reply answers a small JSON object {"error": msg}.
func reply(w http.ResponseWriter, status int, msg string) {
	b, _ := json.Marshal(struct {
		Error string `json:"error"`
	}{msg})
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(status)
	w.Write(append(b, '\n'))
}
