package main

import (
	"context"
	"encoding/json"
	"maps"
	"net/http"
	"slices"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"listingproxy/config"
	"listingproxy/upstream"
	"listingproxy/upstream/breaker"
)

// readier is a backend that may not be ready to serve yet (sqlstore while
// its database has not answered since start-up).
type readier interface{ Ready() error }

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
func backendsHandler(cfg *config.Config, backends map[string]upstream.Backend, breakers func() []breaker.Status) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		ctx, cancel := context.WithTimeout(r.Context(), 2*time.Second)
		defer cancel()
		names := slices.Sorted(maps.Keys(backends))
		out := make([]backendRow, len(names))
		var wg sync.WaitGroup
		for i, name := range names {
			out[i] = backendRow{Name: name, Kind: cfg.Backends[name].Kind, Ready: true, Breakers: []breakerRow{}}
			if rd, ok := backends[name].(readier); ok {
				if err := rd.Ready(); err != nil {
					out[i].Ready, out[i].Error = false, err.Error()
				}
			}
			if p, ok := backends[name].(pinger); ok {
				wg.Go(func() {
					out[i].Ping = "ok"
					if err := p.Ping(ctx); err != nil {
						out[i].Ping = err.Error()
					}
				})
			}
		}
		wg.Wait()
		for _, st := range breakers() {
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
		w.Header().Set("Content-Type", "application/json")
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		_ = enc.Encode(struct {
			Backends []backendRow `json:"backends"`
		}{out})
	})
}

func timeOrNil(t time.Time) *time.Time {
	if t.IsZero() {
		return nil
	}
	return &t
}

// registerBackendReady exports listingproxy_backend_ready{backend}: 1 when
// the backend can serve, 0 while it cannot yet (a SQL database that has not
// answered since start-up). Breaker states are exported by telemetry.
func registerBackendReady(reg prometheus.Registerer, backends map[string]upstream.Backend) error {
	for _, name := range slices.Sorted(maps.Keys(backends)) {
		b := backends[name]
		g := prometheus.NewGaugeFunc(prometheus.GaugeOpts{
			Name:        "listingproxy_backend_ready",
			Help:        "1 when the backend can serve, 0 while it cannot yet (a SQL database that has not answered since start-up).",
			ConstLabels: prometheus.Labels{"backend": name},
		}, func() float64 {
			if rd, ok := b.(readier); ok && rd.Ready() != nil {
				return 0
			}
			return 1
		})
		if err := reg.Register(g); err != nil {
			return err
		}
	}
	return nil
}
