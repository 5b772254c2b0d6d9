// Package serving runs listingproxy's HTTP servers and stops them in
// order: a drain (readiness turns 503, responses close their connections)
// while a load balancer notices, then net/http's own Shutdown, bounded by
// a grace period. Draining is the drain's flag and its middleware. What the
// servers serve, and their limits, are cmd's. Listen opens their
// listeners, with SO_REUSEPORT when asked (golang.org/x/sys/unix), for a
// hand-over between an old process and a new one. Open composes the public
// listener's stack (the bounds per client address of internal/connlimit,
// the TLS of internal/tlsreload and the HTTP/2 guard of internal/h2guard,
// or without TLS internal/onewrite's connections) and the admin listener,
// and Listeners.Servers puts the servers on them. Otherwise standard
// library only.
package serving

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"sync/atomic"
	"time"
)

// Draining is set when the drain before shutdown begins: the admin API's
// /readyz answers 503, and Handler marks every response Connection:
// close. Its zero value is not draining.
type Draining struct{ on atomic.Bool }

// Start starts the drain.
func (d *Draining) Start() { d.on.Store(true) }

// Load reports whether the drain has begun.
func (d *Draining) Load() bool { return d.on.Load() }

// Handler marks every response Connection: close once the drain has
// begun: net/http then closes the connection after the response, so a
// kept-alive client reconnects (to another replica, once the load balancer
// has noticed) rather than losing a request when the listener closes. Idle
// connections are left alone until the shutdown: closing them now would
// race with a request the client is sending on them. One atomic load per
// request.
func (d *Draining) Handler(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if d.on.Load() {
			w.Header().Set("Connection", "close")
		}
		next.ServeHTTP(w, r)
	})
}

// Server is an http.Server with its listener.
type Server struct {
	HTTP     *http.Server
	Listener net.Listener
}

// Shutdown says how Run stops.
type Shutdown struct {
	// DrainDelay is how long the listeners stay open after Drain is
	// called; 0: none.
	DrainDelay time.Duration
	// Grace bounds the shutdown proper: requests in flight may finish.
	Grace time.Duration
	// After is the drain delay's timer (time.After; required with a
	// DrainDelay).
	After func(time.Duration) <-chan time.Time
	// Drain starts the drain (Draining.Start: /readyz answers 503 and
	// responses carry Connection: close). Nil: nothing to do.
	Drain func()
}

// Run serves every server until ctx is done (or one fails), calling
// reload on each value from hup, then stops in three steps:
//
//  1. drain: s.Drain is called (readiness turns 503, responses carry
//     Connection: close, so clients open a new connection per request and
//     a load balancer that stopped routing here lets them go) while the
//     listeners keep accepting for s.DrainDelay: a load balancer or
//     Kubernetes takes a few seconds to notice, and until then new
//     connections still arrive; refusing them would fail requests;
//  2. shutdown: listeners close (new connections are refused), idle
//     connections close, and requests in flight have s.Grace to finish;
//  3. it returns nil after a clean shutdown.
//
// A server that fails skips the drain.
func Run(ctx context.Context, servers []Server, s Shutdown, hup <-chan os.Signal, reload func(), log *slog.Logger) error {
	errc := make(chan error, len(servers))
	for _, sv := range servers {
		go func() { errc <- sv.HTTP.Serve(sv.Listener) }()
	}
	var failed error
	stopped := func(err error) {
		if !errors.Is(err, http.ErrServerClosed) {
			failed = fmt.Errorf("serve: %w", err)
		}
	}
wait:
	for {
		select {
		case <-ctx.Done():
			break wait
		case <-hup:
			reload()
		case err := <-errc:
			stopped(err)
			break wait
		}
	}
	if failed == nil && s.DrainDelay > 0 {
		log.Info("draining: not ready, closing connections after each response", "drain_delay", s.DrainDelay.String())
		if s.Drain != nil {
			s.Drain()
		}
		select {
		case <-s.After(s.DrainDelay):
		case err := <-errc:
			stopped(err)
		}
	} else if s.Drain != nil {
		s.Drain()
	}
	log.Info("shutting down", "grace", s.Grace.String())
	sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), s.Grace)
	defer cancel()
	// Shut the servers down together: each closes its listener first.
	errs := make(chan error, len(servers))
	for _, sv := range servers {
		go func() { errs <- sv.HTTP.Shutdown(sctx) }()
	}
	for range servers {
		if err := <-errs; err != nil && failed == nil {
			failed = fmt.Errorf("shutdown: %w", err)
		}
	}
	return failed
}
