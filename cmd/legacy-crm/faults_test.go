package main

import (
	"context"
	"encoding/json"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// fakeEnv is an injected clock and a sleep that records instead of waiting.
type fakeEnv struct {
	mu     sync.Mutex
	now    time.Time
	sleeps []time.Duration
	fail   error // returned by sleep when set (the client went away)
}

func (e *fakeEnv) Now() time.Time {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.now
}

func (e *fakeEnv) advance(d time.Duration) {
	e.mu.Lock()
	e.now = e.now.Add(d)
	e.mu.Unlock()
}

func (e *fakeEnv) Sleep(ctx context.Context, d time.Duration) error {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.sleeps = append(e.sleeps, d)
	return e.fail
}

func (e *fakeEnv) options(seed uint64) FaultOptions {
	return FaultOptions{Now: e.Now, Sleep: e.Sleep, Rand: rand.New(rand.NewPCG(seed, seed))}
}

var okHandler = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Content-Type", "application/xml; charset=utf-8")
	_, _ = w.Write([]byte("<properties count=\"0\"/>\n"))
})

func serve(h http.Handler, path string) *httptest.ResponseRecorder {
	w := httptest.NewRecorder()
	h.ServeHTTP(w, httptest.NewRequest("GET", path, nil))
	return w
}

func TestFaultsNone(t *testing.T) {
	env := &fakeEnv{now: time.Unix(0, 0)}
	stats := &Stats{}
	h := newFaultInjector(Faults{}, env.options(1), stats).Wrap(okHandler)
	w := serve(h, "/au/properties.xml")
	if w.Code != http.StatusOK || w.Body.String() != "<properties count=\"0\"/>\n" {
		t.Errorf("got %d %q, want the handler's answer", w.Code, w.Body)
	}
	if got := stats.Snapshot(); got.Requests != 1 || got.ByKind["properties"] != 1 || got.ByStatus["200"] != 1 {
		t.Errorf("stats = %+v, want one properties request answered 200", got)
	}
}

func TestFaultsLatencyAndJitter(t *testing.T) {
	env := &fakeEnv{now: time.Unix(0, 0)}
	f := Faults{Latency: 300 * time.Millisecond, Jitter: 50 * time.Millisecond}
	h := newFaultInjector(f, env.options(7), &Stats{}).Wrap(okHandler)
	for range 50 {
		serve(h, "/au/agents.json")
	}
	if len(env.sleeps) != 50 {
		t.Fatalf("got %d sleeps, want 50", len(env.sleeps))
	}
	distinct := map[time.Duration]bool{}
	for _, d := range env.sleeps {
		if d < f.Latency || d >= f.Latency+f.Jitter {
			t.Errorf("sleep %s outside [%s, %s)", d, f.Latency, f.Latency+f.Jitter)
		}
		distinct[d] = true
	}
	if len(distinct) < 10 {
		t.Errorf("got %d distinct delays in 50, want jitter to vary them", len(distinct))
	}

	// The same seed injects the same delays.
	env2 := &fakeEnv{now: time.Unix(0, 0)}
	h2 := newFaultInjector(f, env2.options(7), &Stats{}).Wrap(okHandler)
	for range 50 {
		serve(h2, "/au/agents.json")
	}
	if diff := cmp.Diff(env.sleeps, env2.sleeps); diff != "" {
		t.Errorf("same seed, different delays (-first +second):\n%s", diff)
	}
}

func TestFaultsCancelledDuringLatency(t *testing.T) {
	env := &fakeEnv{now: time.Unix(0, 0), fail: context.Canceled}
	stats := &Stats{}
	called := false
	next := http.HandlerFunc(func(http.ResponseWriter, *http.Request) { called = true })
	h := newFaultInjector(Faults{Latency: time.Second}, env.options(1), stats).Wrap(next)
	serve(h, "/au/properties/1.xml")
	if called {
		t.Error("the handler ran after the client went away")
	}
	if got := stats.Snapshot(); got.Cancelled != 1 || len(got.ByStatus) != 0 {
		t.Errorf("stats = %+v, want one cancelled request and no status", got)
	}
}

func TestFaultsErrorRate(t *testing.T) {
	for _, tc := range []struct {
		rate     float64
		min, max int // of 1000
	}{
		{0, 0, 0},
		{1, 1000, 1000},
		{0.1, 50, 150},
	} {
		env := &fakeEnv{now: time.Unix(0, 0)}
		stats := &Stats{}
		h := newFaultInjector(Faults{ErrorRate: tc.rate}, env.options(3), stats).Wrap(okHandler)
		failed := 0
		for range 1000 {
			w := serve(h, "/au/properties.xml")
			if w.Code == http.StatusInternalServerError {
				failed++
				if ct := w.Header().Get("Content-Type"); !strings.HasPrefix(ct, "text/html") {
					t.Errorf("injected error has Content-Type %q, want text/html", ct)
				}
			}
		}
		if failed < tc.min || failed > tc.max {
			t.Errorf("rate %v: %d of 1000 failed, want %d to %d", tc.rate, failed, tc.min, tc.max)
		}
		if got := stats.Snapshot(); got.Injected["errors"] != int64(failed) || got.ByStatus["500"] != int64(failed) {
			t.Errorf("rate %v: stats = %+v, want %d injected errors", tc.rate, got, failed)
		}
	}
}

func TestFaultsOutage(t *testing.T) {
	env := &fakeEnv{now: time.Unix(1000, 0)}
	stats := &Stats{}
	h := newFaultInjector(Faults{OutageEvery: 30 * time.Second, OutageFor: 10 * time.Second, Latency: time.Second}, env.options(1), stats).Wrap(okHandler)
	steps := []struct {
		at   time.Duration // since start
		want int
	}{
		{0, 503}, {9 * time.Second, 503}, {10 * time.Second, 200}, {29 * time.Second, 200},
		{30 * time.Second, 503}, {39 * time.Second, 503}, {45 * time.Second, 200},
	}
	elapsed := time.Duration(0)
	for _, s := range steps {
		env.advance(s.at - elapsed)
		elapsed = s.at
		w := serve(h, "/nz/agents/3.xml")
		if w.Code != s.want {
			t.Errorf("at +%s: status %d, want %d", s.at, w.Code, s.want)
		}
		if w.Code == 503 && w.Header().Get("Retry-After") == "" {
			t.Errorf("at +%s: 503 without Retry-After", s.at)
		}
	}
	if got := stats.Snapshot(); got.Injected["outages"] != 4 || got.ByKind["agent"] != 7 {
		t.Errorf("stats = %+v, want 4 outages of 7 agent requests", got)
	}
	if len(env.sleeps) != 3 {
		t.Errorf("got %d latency sleeps, want 3 (an outage answers at once)", len(env.sleeps))
	}
}

func TestFaultsDrip(t *testing.T) {
	env := &fakeEnv{now: time.Unix(0, 0)}
	body := strings.Repeat("x", 1000)
	next := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { _, _ = w.Write([]byte(body)) })
	h := newFaultInjector(Faults{Drip: 100 * time.Millisecond, DripBytes: 300}, env.options(1), &Stats{}).Wrap(next)
	w := serve(h, "/au/properties.xml")
	if w.Body.String() != body {
		t.Errorf("dripped body has %d bytes, want the %d written", w.Body.Len(), len(body))
	}
	if !w.Flushed {
		t.Error("chunks were not flushed")
	}
	// The (zero) latency, then 1000 bytes in chunks of 300: 4 chunks, 3
	// pauses between them.
	want := []time.Duration{0, 100 * time.Millisecond, 100 * time.Millisecond, 100 * time.Millisecond}
	if diff := cmp.Diff(want, env.sleeps); diff != "" {
		t.Errorf("pauses (-want +got):\n%s", diff)
	}
}

func TestFaultsValidate(t *testing.T) {
	for _, f := range []Faults{
		{ErrorRate: 1.5},
		{Latency: -time.Second},
		{OutageEvery: 10 * time.Second, OutageFor: 10 * time.Second},
		{OutageEvery: 10 * time.Second},
		{DripBytes: -1},
	} {
		if f.Validate() == nil {
			t.Errorf("%+v: Validate() = nil, want an error", f)
		}
	}
	if err := (Faults{Latency: time.Second, ErrorRate: 0.5, OutageEvery: 30 * time.Second, OutageFor: 10 * time.Second}).Validate(); err != nil {
		t.Errorf("valid faults: %v", err)
	}
}

func TestParseOutage(t *testing.T) {
	every, down, err := parseOutage("30s/10s")
	if err != nil || every != 30*time.Second || down != 10*time.Second {
		t.Errorf(`parseOutage("30s/10s") = %s, %s, %v`, every, down, err)
	}
	for _, s := range []string{"", "off"} {
		if every, down, err := parseOutage(s); err != nil || every != 0 || down != 0 {
			t.Errorf("parseOutage(%q) = %s, %s, %v; want none", s, every, down, err)
		}
	}
	for _, s := range []string{"30s", "30s/x", "x/10s"} {
		if _, _, err := parseOutage(s); err == nil {
			t.Errorf("parseOutage(%q): want an error", s)
		}
	}
}

func TestKindOf(t *testing.T) {
	tests := map[string]string{
		"/au/properties.xml":      "properties",
		"/nz/properties.json":     "properties",
		"/au/properties/17.xml":   "property",
		"/au/agents.json":         "agents",
		"/au/agents/3.json":       "agent",
		"/":                       "other",
		"/au/properties/1/x.xml":  "other",
		"/au/unknown.xml":         "other",
		"/stats":                  "other",
		"/au/properties.xml/more": "other",
	}
	for path, want := range tests {
		if got := kinds[kindOf(path)]; got != want {
			t.Errorf("kindOf(%q) = %s, want %s", path, got, want)
		}
	}
}

func TestStatsEndpoint(t *testing.T) {
	stats := &Stats{}
	stats.request("/au/properties.xml")
	stats.status(200)
	h := statsHandler(stats)

	w := serve(h, "/stats")
	var got StatsSnapshot
	if err := json.Unmarshal(w.Body.Bytes(), &got); err != nil {
		t.Fatalf("GET /stats: %v: %s", err, w.Body)
	}
	if got.Requests != 1 || got.ByKind["properties"] != 1 || got.ByStatus["200"] != 1 {
		t.Errorf("GET /stats = %+v", got)
	}

	r := httptest.NewRequest("POST", "/stats/reset", nil)
	rw := httptest.NewRecorder()
	h.ServeHTTP(rw, r)
	if rw.Code != http.StatusNoContent {
		t.Errorf("POST /stats/reset: status %d", rw.Code)
	}
	if snap := stats.Snapshot(); snap.Requests != 0 || len(snap.ByStatus) != 0 {
		t.Errorf("after reset: %+v", snap)
	}
}

func TestParseUserSpec(t *testing.T) {
	tests := []struct {
		in   string
		want userSpec
	}{
		{"summit:summit-crm:summit:full,prices", userSpec{"summit", "summit-crm", "summit", 3}},
		{"a:pa:ss:w:harbour:", userSpec{"a", "pa:ss:w", "harbour", 0}},
		{"a:p:harbour:full", userSpec{"a", "p", "harbour", 1}},
		{"a:p:harbour:none", userSpec{"a", "p", "harbour", 0}},
	}
	for _, tc := range tests {
		got, err := parseUserSpec(tc.in)
		if err != nil || got != tc.want {
			t.Errorf("parseUserSpec(%q) = %+v, %v; want %+v", tc.in, got, err, tc.want)
		}
	}
	for _, in := range []string{"", "a", "a:p", "a:p:t", ":p:t:full", "a::t:full", "a:p::full", "a:p:t:admin"} {
		if _, err := parseUserSpec(in); err == nil {
			t.Errorf("parseUserSpec(%q): want an error", in)
		}
	}
}

// TestStatsInFlight: /stats reports the requests being answered and the
// most at once; a reset starts the most from those still in flight.
func TestStatsInFlight(t *testing.T) {
	var s Stats
	done1, done2 := s.enter(), s.enter()
	done1()
	if snap := s.Snapshot(); snap.InFlight != 1 || snap.MaxInFlight != 2 {
		t.Errorf("in flight %d, max %d; want 1 and 2", snap.InFlight, snap.MaxInFlight)
	}
	s.Reset()
	if snap := s.Snapshot(); snap.InFlight != 1 || snap.MaxInFlight != 1 {
		t.Errorf("after a reset: in flight %d, max %d; want 1 and 1", snap.InFlight, snap.MaxInFlight)
	}
	done2()
	if snap := s.Snapshot(); snap.InFlight != 0 || snap.MaxInFlight != 1 {
		t.Errorf("after the last: in flight %d, max %d; want 0 and 1", snap.InFlight, snap.MaxInFlight)
	}
}
