package admin

import (
	"context"
	"encoding/json"
	"net/http"
	"slices"
	"strings"
	"sync"
	"time"

	"listingproxy/cache/disktier"
	"listingproxy/cache/redistier"
	"listingproxy/upstream/breaker"
)

// Backend is one backend GET /backends reports on.
type Backend struct {
	Name, Kind string
	// Ready, when set, says whether the backend can serve yet (nil) or
	// why not (sqlstore.Store.Ready: a database that has not answered
	// since start-up). Nil: always ready.
	Ready func() error
	// Ping, when set, reaches the backend now. Nil: not pinged.
	Ping func(context.Context) error
}

// BackendOf is the Backend name, of kind, that b (the backend as opened)
// reports: its Ready and Ping methods when it has them (a SQL store has
// both, a CRM client neither).
func BackendOf(name, kind string, b any) Backend {
	ab := Backend{Name: name, Kind: kind}
	if rd, ok := b.(interface{ Ready() error }); ok {
		ab.Ready = rd.Ready
	}
	if p, ok := b.(interface{ Ping(context.Context) error }); ok {
		ab.Ping = p.Ping
	}
	return ab
}

// SharedCacheState is the shared cache tier's section of GET /backends.
type SharedCacheState struct {
	// Synced is false until the replica has read every purge the fleet
	// recorded in Redis since its subscription (re)started; meanwhile it
	// serves nothing it reads from Redis.
	Synced bool `json:"synced"`
	// BreakerOpen is true while the tier's breaker refuses Redis
	// operations (the replica caches alone).
	BreakerOpen bool `json:"breaker_open"`
	// PurgesPending is the number of purges applied on this replica and
	// not yet recorded for the fleet (the tier retries them).
	PurgesPending int64 `json:"purges_pending"`
}

// DiskCacheState is the disk tier's section of GET /backends.
type DiskCacheState struct {
	// Entries and Bytes are what the disk holds (Bytes as counted against
	// cache.disk.max_bytes).
	Entries int64 `json:"entries"`
	Bytes   int64 `json:"bytes"`
	// Disabled is true once a purge could not be recorded on disk: the
	// tier deleted its files and is off until a restart.
	Disabled bool `json:"disabled"`
}

// backendRow is one backend's entry in GET /backends.
type backendRow struct {
	Name string `json:"name"`
	Kind string `json:"kind"`
	// Ready is false while the backend cannot serve yet (a SQL database
	// that has not answered since start-up); Error says why.
	Ready bool   `json:"ready"`
	Error string `json:"error,omitempty"`
	// Ping is the result of pinging the backend now ("ok" or the error),
	// for backends that can be pinged; absent otherwise.
	Ping     string       `json:"ping,omitempty"`
	Breakers []breakerRow `json:"breakers"`
	// Concurrency is the backend's concurrency limit (absent when it has
	// none, or the BreakerStates do not report limits).
	Concurrency *concurrencyRow `json:"concurrency,omitempty"`
}

// concurrencyRow is a backend's concurrency limiter (breaker.LimitStatus).
type concurrencyRow struct {
	Adaptive bool              `json:"adaptive"`
	Limit    int               `json:"limit"`
	Ceiling  int               `json:"ceiling"`
	InFlight int               `json:"in_flight"`
	Waiting  int               `json:"waiting"`
	Waits    uint64            `json:"waits"`
	Refusals map[string]uint64 `json:"refusals"`
}

// limits is what BreakerStates may also implement
// (breaker.Registry.Limits).
type limits interface {
	Limits() []breaker.LimitStatus
}

// breakerRow is one breaker of a backend: the backend-wide one (tenant
// "") or a tenant's.
type breakerRow struct {
	Tenant            string     `json:"tenant"`
	State             string     `json:"state"`
	RetryAfterSeconds float64    `json:"retry_after_seconds,omitempty"`
	LastError         string     `json:"last_error,omitempty"`
	LastFailure       *time.Time `json:"last_failure,omitempty"`
	LastSuccess       *time.Time `json:"last_success,omitempty"`
	InFlight          int        `json:"in_flight,omitempty"`
	Slots             int        `json:"slots,omitempty"`
}

// backendsHandler serves GET /backends: every backend's readiness, a ping
// (within 2s, all at once) and its breakers' states, as JSON. The process's
// own readiness is /readyz; this is what an operator looks at to see which
// backend is failing and since when. Behind the admin credentials: last
// errors may quote a backend's messages.
func backendsHandler(backends []Backend, breakers BreakerStates, shared func() redistier.Stats, disk func() disktier.Stats) http.Handler {
	backends = slices.SortedFunc(slices.Values(backends), func(a, b Backend) int { return strings.Compare(a.Name, b.Name) })
	names := make([]string, len(backends))
	for i, b := range backends {
		names[i] = b.Name
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		ctx, cancel := context.WithTimeout(r.Context(), 2*time.Second)
		defer cancel()
		out := make([]backendRow, len(backends))
		var wg sync.WaitGroup
		for i, b := range backends {
			out[i] = backendRow{Name: b.Name, Kind: b.Kind, Ready: true, Breakers: []breakerRow{}}
			if b.Ready != nil {
				if err := b.Ready(); err != nil {
					out[i].Ready, out[i].Error = false, err.Error()
				}
			}
			if b.Ping != nil {
				wg.Go(func() {
					out[i].Ping = "ok"
					if err := b.Ping(ctx); err != nil {
						out[i].Ping = err.Error()
					}
				})
			}
		}
		wg.Wait()
		var states []breaker.Status
		if breakers != nil {
			states = breakers.States()
		}
		for _, st := range states {
			i, ok := slices.BinarySearch(names, st.Backend)
			if !ok {
				continue
			}
			out[i].Breakers = append(out[i].Breakers, breakerRow{
				Tenant: st.Tenant, State: st.State.String(), RetryAfterSeconds: st.RetryAfter.Seconds(),
				LastError: st.LastError, LastFailure: timeOrNil(st.LastFailure), LastSuccess: timeOrNil(st.LastSuccess),
				InFlight: st.InFlight, Slots: st.Slots,
			})
		}
		if l, ok := breakers.(limits); ok {
			for _, st := range l.Limits() {
				if i, ok := slices.BinarySearch(names, st.Backend); ok {
					out[i].Concurrency = &concurrencyRow{Adaptive: st.Adaptive, Limit: st.Limit, Ceiling: st.Ceiling,
						InFlight: st.InFlight, Waiting: st.Waiting, Waits: st.Waits, Refusals: st.Refusals}
				}
			}
		}
		w.Header().Set("Content-Type", "application/json")
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		var sh *SharedCacheState
		if shared != nil {
			st := shared()
			sh = &SharedCacheState{Synced: st.Synced, BreakerOpen: st.BreakerOpen, PurgesPending: st.PurgesPending}
		}
		var dk *DiskCacheState
		if disk != nil {
			st := disk()
			dk = &DiskCacheState{Entries: st.Entries, Bytes: st.Bytes, Disabled: st.Disabled}
		}
		_ = enc.Encode(struct {
			Backends    []backendRow      `json:"backends"`
			SharedCache *SharedCacheState `json:"shared_cache,omitempty"`
			DiskCache   *DiskCacheState   `json:"disk_cache,omitempty"`
		}{out, sh, dk})
	})
}

func timeOrNil(t time.Time) *time.Time {
	if t.IsZero() {
		return nil
	}
	return &t
}
