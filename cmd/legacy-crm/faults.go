package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// Faults are what the stand-in does to a request before (and while)
// answering it. The zero value injects nothing.
type Faults struct {
	// Latency is added before every answer.
	Latency time.Duration
	// Jitter adds a uniformly random extra delay in [0, Jitter).
	Jitter time.Duration
	// ErrorRate is the share of requests, in [0, 1], answered 500 with an
	// HTML error page (after the latency), as a failing legacy server does.
	ErrorRate float64
	// OutageEvery and OutageFor describe recurring outages: in every period
	// of OutageEvery, counted from the start, the first OutageFor answer 503
	// at once with an HTML page. Zero OutageEvery: no outages.
	OutageEvery, OutageFor time.Duration
	// Drip writes the body DripBytes at a time with a pause of Drip between
	// chunks (a slow-drip server). Zero: the body is written at once.
	Drip time.Duration
	// DripBytes is the chunk size of Drip. Default 256.
	DripBytes int
}

// DefaultDripBytes is the chunk size of Faults.Drip when DripBytes is zero.
const DefaultDripBytes = 256

// Validate reports every invalid field at once.
func (f Faults) Validate() error {
	var problems []string
	if f.Latency < 0 || f.Jitter < 0 || f.Drip < 0 || f.OutageEvery < 0 || f.OutageFor < 0 {
		problems = append(problems, "durations must not be negative")
	}
	if f.ErrorRate < 0 || f.ErrorRate > 1 {
		problems = append(problems, fmt.Sprintf("error rate %v: want a value from 0 to 1", f.ErrorRate))
	}
	if f.OutageEvery > 0 && (f.OutageFor <= 0 || f.OutageFor >= f.OutageEvery) {
		problems = append(problems, fmt.Sprintf("outage %s/%s: the outage must be shorter than its period and not zero", f.OutageEvery, f.OutageFor))
	}
	if f.DripBytes < 0 {
		problems = append(problems, "drip bytes must not be negative")
	}
	if len(problems) > 0 {
		return errors.New("faults: " + strings.Join(problems, "; "))
	}
	return nil
}

// parseOutage parses "EVERY/FOR" such as "30s/10s"; "" and "off" are none.
func parseOutage(s string) (every, down time.Duration, err error) {
	if s == "" || s == "off" {
		return 0, 0, nil
	}
	a, b, ok := strings.Cut(s, "/")
	if ok {
		if every, err = time.ParseDuration(a); err == nil {
			down, err = time.ParseDuration(b)
		}
	}
	if !ok || err != nil {
		return 0, 0, fmt.Errorf("outage %q: want EVERY/FOR, such as 30s/10s", s)
	}
	return every, down, nil
}

// FaultOptions are the injected dependencies of the fault middleware. The
// zero value works.
type FaultOptions struct {
	// Now is the clock of outage windows. Default time.Now.
	Now func() time.Time
	// Sleep waits d or until ctx is done (then it returns ctx.Err()).
	// Default: a timer.
	Sleep func(ctx context.Context, d time.Duration) error
	// Rand draws jitter and errors. Default: seeded with Seed.
	Rand *rand.Rand
	// Seed seeds the default Rand, so runs with one seed inject the same
	// sequence of faults.
	Seed uint64
}

// faultInjector is the middleware. Its Rand is guarded by mu.
type faultInjector struct {
	f     Faults
	start time.Time
	now   func() time.Time
	sleep func(context.Context, time.Duration) error
	stats *Stats

	mu  sync.Mutex
	rnd *rand.Rand
}

func newFaultInjector(f Faults, o FaultOptions, stats *Stats) *faultInjector {
	fi := &faultInjector{f: f, now: o.Now, sleep: o.Sleep, rnd: o.Rand, stats: stats}
	if fi.now == nil {
		fi.now = time.Now
	}
	if fi.sleep == nil {
		fi.sleep = sleep
	}
	if fi.rnd == nil {
		fi.rnd = rand.New(rand.NewPCG(o.Seed, o.Seed^0x6c65676163792d63))
	}
	if fi.f.DripBytes == 0 {
		fi.f.DripBytes = DefaultDripBytes
	}
	fi.start = fi.now()
	return fi
}

func sleep(ctx context.Context, d time.Duration) error {
	if d <= 0 {
		return ctx.Err()
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// draw returns the request's extra delay and whether it fails.
func (fi *faultInjector) draw() (jitter time.Duration, fail bool) {
	fi.mu.Lock()
	defer fi.mu.Unlock()
	if fi.f.Jitter > 0 {
		jitter = time.Duration(fi.rnd.Int64N(int64(fi.f.Jitter)))
	}
	if fi.f.ErrorRate > 0 {
		fail = fi.rnd.Float64() < fi.f.ErrorRate
	}
	return jitter, fail
}

// inOutage reports whether now falls in an outage window.
func (fi *faultInjector) inOutage() bool {
	if fi.f.OutageEvery <= 0 {
		return false
	}
	since := fi.now().Sub(fi.start)
	if since < 0 {
		return false
	}
	return since%fi.f.OutageEvery < fi.f.OutageFor
}

// Wrap returns next behind the faults. Every request is counted first;
// then, in this order: an outage answers 503 at once; the latency (plus
// jitter) passes, or the client gives up and nothing is written; an
// injected error answers 500; otherwise next answers, its body dripped
// when Drip is set.
func (fi *faultInjector) Wrap(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fi.stats.request(r.URL.Path)
		defer fi.stats.enter()()
		sw := &statusWriter{ResponseWriter: w}
		defer func() { fi.stats.status(sw.code) }()

		if fi.inOutage() {
			fi.stats.outages.Add(1)
			sw.Header().Set("Retry-After", "10")
			htmlError(sw, http.StatusServiceUnavailable)
			return
		}
		jitter, fail := fi.draw()
		if err := fi.sleep(r.Context(), fi.f.Latency+jitter); err != nil {
			fi.stats.cancelled.Add(1)
			return
		}
		if fail {
			fi.stats.errors.Add(1)
			htmlError(sw, http.StatusInternalServerError)
			return
		}
		var out http.ResponseWriter = sw
		if fi.f.Drip > 0 {
			out = &dripWriter{ResponseWriter: sw, ctx: r.Context(), every: fi.f.Drip, chunk: fi.f.DripBytes, sleep: fi.sleep}
		}
		next.ServeHTTP(out, r)
	})
}

// htmlError answers as a legacy web server does: an HTML page, not the
// API's error body.
func htmlError(w http.ResponseWriter, code int) {
	text := http.StatusText(code)
	body := "<!DOCTYPE html>\n<html><head><title>" + strconv.Itoa(code) + " " + text + "</title></head>\n" +
		"<body><h1>" + text + "</h1><p>The server encountered a problem. Please try again later.</p></body></html>\n"
	w.Header().Set("Content-Type", "text/html; charset=iso-8859-1")
	w.Header().Set("Content-Length", strconv.Itoa(len(body)))
	w.WriteHeader(code)
	_, _ = w.Write([]byte(body))
}

// statusWriter records the status code of a response.
type statusWriter struct {
	http.ResponseWriter
	code int
}

func (w *statusWriter) WriteHeader(code int) {
	if w.code == 0 {
		w.code = code
	}
	w.ResponseWriter.WriteHeader(code)
}

func (w *statusWriter) Write(p []byte) (int, error) {
	if w.code == 0 {
		w.code = http.StatusOK
	}
	return w.ResponseWriter.Write(p)
}

func (w *statusWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

func (w *statusWriter) Flush() {
	if w.code == 0 {
		w.code = http.StatusOK
	}
	if f, ok := w.ResponseWriter.(http.Flusher); ok {
		f.Flush()
	}
}

// dripWriter writes a body chunk by chunk, flushing each and pausing between
// them; it stops when the client goes away.
type dripWriter struct {
	http.ResponseWriter
	ctx     context.Context
	every   time.Duration
	chunk   int
	sleep   func(context.Context, time.Duration) error
	started bool
}

func (w *dripWriter) Write(p []byte) (int, error) {
	written := 0
	for len(p) > 0 {
		if w.started {
			if err := w.sleep(w.ctx, w.every); err != nil {
				return written, err
			}
		}
		w.started = true
		n, err := w.ResponseWriter.Write(p[:min(w.chunk, len(p))])
		written += n
		if err != nil {
			return written, err
		}
		w.Flush()
		p = p[n:]
	}
	return written, nil
}

func (w *dripWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

func (w *dripWriter) Flush() {
	if f, ok := w.ResponseWriter.(http.Flusher); ok {
		f.Flush()
	}
}

// Path kinds counted by Stats.
var kinds = [...]string{"properties", "property", "agents", "agent", "other"}

// kindOf classifies an API path: /{country}/properties.{ext} is
// "properties", /{country}/properties/{id}.{ext} is "property", and so on.
func kindOf(path string) int {
	parts := strings.Split(strings.TrimPrefix(path, "/"), "/")
	switch {
	case len(parts) == 2 && strings.HasPrefix(parts[1], "properties."):
		return 0
	case len(parts) == 3 && parts[1] == "properties":
		return 1
	case len(parts) == 2 && strings.HasPrefix(parts[1], "agents."):
		return 2
	case len(parts) == 3 && parts[1] == "agents":
		return 3
	}
	return 4
}

// Stats counts the requests the stand-in received. The zero value is ready.
type Stats struct {
	requests  atomic.Int64
	byKind    [len(kinds)]atomic.Int64
	errors    atomic.Int64
	outages   atomic.Int64
	cancelled atomic.Int64
	inFlight  atomic.Int64 // requests being answered now
	maxFlight atomic.Int64 // the most at once

	mu       sync.Mutex
	byStatus map[int]int64
}

func (s *Stats) request(path string) {
	s.requests.Add(1)
	s.byKind[kindOf(path)].Add(1)
}

// enter counts a request in flight until the function it returns is
// called.
func (s *Stats) enter() func() {
	n := s.inFlight.Add(1)
	for {
		m := s.maxFlight.Load()
		if n <= m || s.maxFlight.CompareAndSwap(m, n) {
			break
		}
	}
	return func() { s.inFlight.Add(-1) }
}

func (s *Stats) status(code int) {
	if code == 0 {
		return // nothing written: the client went away
	}
	s.mu.Lock()
	if s.byStatus == nil {
		s.byStatus = map[int]int64{}
	}
	s.byStatus[code]++
	s.mu.Unlock()
}

// StatsSnapshot is the JSON document of GET /stats.
type StatsSnapshot struct {
	Requests  int64            `json:"requests"`
	ByKind    map[string]int64 `json:"by_kind"`
	ByStatus  map[string]int64 `json:"by_status"`
	Injected  map[string]int64 `json:"injected"`
	Cancelled int64            `json:"cancelled"`
	// InFlight is the requests being answered now, MaxInFlight the most
	// at once since start or the last reset.
	InFlight    int64 `json:"in_flight"`
	MaxInFlight int64 `json:"max_in_flight"`
}

// Snapshot returns the counters.
func (s *Stats) Snapshot() StatsSnapshot {
	snap := StatsSnapshot{
		Requests:  s.requests.Load(),
		ByKind:    map[string]int64{},
		ByStatus:  map[string]int64{},
		Injected:  map[string]int64{"errors": s.errors.Load(), "outages": s.outages.Load()},
		Cancelled: s.cancelled.Load(),

		InFlight:    s.inFlight.Load(),
		MaxInFlight: s.maxFlight.Load(),
	}
	for i, k := range kinds {
		snap.ByKind[k] = s.byKind[i].Load()
	}
	s.mu.Lock()
	for code, n := range s.byStatus {
		snap.ByStatus[strconv.Itoa(code)] = n
	}
	s.mu.Unlock()
	return snap
}

// Reset sets every counter to zero.
func (s *Stats) Reset() {
	s.requests.Store(0)
	for i := range s.byKind {
		s.byKind[i].Store(0)
	}
	s.errors.Store(0)
	s.outages.Store(0)
	s.cancelled.Store(0)
	s.maxFlight.Store(s.inFlight.Load())
	s.mu.Lock()
	s.byStatus = nil
	s.mu.Unlock()
}

// statsHandler serves GET /stats (the counters as JSON) and POST
// /stats/reset.
func statsHandler(s *Stats) http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /stats", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("Cache-Control", "no-store")
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		_ = enc.Encode(s.Snapshot())
	})
	mux.HandleFunc("POST /stats/reset", func(w http.ResponseWriter, r *http.Request) {
		s.Reset()
		w.WriteHeader(http.StatusNoContent)
	})
	return mux
}
