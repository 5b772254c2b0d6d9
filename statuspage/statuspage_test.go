package statuspage_test

import (
	"context"
	"encoding/json"
	"errors"
	"maps"
	"net/http/httptest"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	"golang.org/x/net/html"

	"listingproxy/cache"
	"listingproxy/cache/disktier"
	"listingproxy/cache/redistier"
	"listingproxy/statuspage"
	"listingproxy/telemetry"
	"listingproxy/upstream/breaker"
)

type fakeTraffic []telemetry.TenantStats

func (f fakeTraffic) Tenants() []telemetry.TenantStats { return f }

// fakeAllTraffic also reports the unauthenticated requests.
type fakeAllTraffic struct {
	fakeTraffic
	anonymous telemetry.TenantStats
}

func (f fakeAllTraffic) Unauthenticated() telemetry.TenantStats { return f.anonymous }

type fakeFeeds []telemetry.FeedStats

func (f fakeFeeds) Feeds() []telemetry.FeedStats { return f }

// latency is a histogram of n answers in the bucket of 1ms and one in that
// of 250ms: p50 falls in the first, p99 (for n < 99) in the second.
func latency(n uint64) telemetry.Histogram {
	bounds := []float64{.0005, .001, .25}
	return telemetry.Histogram{Bounds: bounds, Counts: []uint64{0, n, 1, 0}}
}

type fakeFailures []telemetry.BackendErrorStats

func (f fakeFailures) Backends() []telemetry.BackendErrorStats { return f }

type fakeEvents []telemetry.Event

func (f fakeEvents) RecentEvents() []telemetry.Event { return f }

type fakeCache cache.Stats

func (f fakeCache) Stats() cache.Stats { return cache.Stats(f) }

type fakeBreakers []breaker.Status

func (f fakeBreakers) States() []breaker.Status { return f }

var now = time.Date(2026, 11, 22, 20, 0, 0, 0, time.UTC)

func TestSnapshot(t *testing.T) {
	failedAt := now.Add(-time.Second)
	p := statuspage.New(statuspage.Options{
		Now: func() time.Time { return now },
		Traffic: fakeTraffic{
			{Tenant: "harbour", Backend: "demo", Requests: 10, Hits: 5, Stale: 1, StaleIfError: 1, Negative: 1, Misses: 2,
				ClientErrors: 3, Unauthorized: 0, TooMany: 2, Invalid: 4, Latency: latency(90), Recent: latency(9)},
			{Tenant: "summit", Backend: "legacy", Requests: 4, Misses: 1, Uncached: 3, ServerErrors: 3},
			{Tenant: "quiet", Backend: "demo", Requests: 2, Uncached: 2},
		},
		Breakers: fakeBreakers{
			{Backend: "legacy", State: breaker.StateClosed},
			{Backend: "legacy", Tenant: "summit", State: breaker.StateOpen, RetryAfter: 12 * time.Second, LastError: "HTTP 500"},
			{Backend: "demo", State: breaker.StateClosed},
		},
		Failures: fakeFailures{{Backend: "legacy", Errors: 3, LastError: "crm: HTTP 500", LastAt: failedAt}},
		Cache:    fakeCache{Bytes: 2048, MaxBytes: 1 << 20, Entries: 3, OverlayEntries: 1, Hits: 8, Misses: 2, Evictions: 4, HardPurges: 1, SoftPurges: 2},
		Events:   fakeEvents{{Time: now, Kind: "purge", Detail: "source=admin kind=tenant mode=hard tenant=harbour"}},
	})
	want := statuspage.Snapshot{
		Time: now, Started: now,
		Tenants: []statuspage.TenantRow{
			{Tenant: "harbour", Backend: "demo", Requests: 10, Hits: 8, Stale: 2, Misses: 2, HitRatio: 0.8,
				ClientErrors: 3, TooMany: 2, Invalid: 4, RecentRequests: 10, P50: 0.0005 + 0.0005*5/9, P99: 0.001 + 0.249*(9.9-9)},
			{Tenant: "summit", Backend: "legacy", Requests: 4, Misses: 1, HitRatio: 0, ServerErrors: 3},
			{Tenant: "quiet", Backend: "demo", Requests: 2},
		},
		Backends: []statuspage.BackendRow{
			{Backend: "demo", State: "closed", Breakers: []statuspage.BreakerRow{{State: "closed"}}},
			{Backend: "legacy", State: "open", Breakers: []statuspage.BreakerRow{
				{State: "closed"}, {Tenant: "summit", State: "open", RetryAfterSeconds: 12, LastError: "HTTP 500"},
			}, Errors: 3, LastError: "crm: HTTP 500", LastErrorAt: &failedAt},
		},
		Cache:  &statuspage.CacheRow{Bytes: 2048, MaxBytes: 1 << 20, Entries: 4, Evictions: 4, Purges: 3, HitRatio: 0.8},
		Feeds:  []statuspage.FeedRow{},
		Events: []statuspage.EventRow{{Time: now, Kind: "purge", Detail: "source=admin kind=tenant mode=hard tenant=harbour"}},
	}
	if diff := cmp.Diff(want, p.Snapshot(), cmpopts.EquateApprox(0, 1e-12)); diff != "" {
		t.Errorf("Snapshot (-want +got):\n%s", diff)
	}
}

func TestNoSources(t *testing.T) {
	p := statuspage.New(statuspage.Options{})
	w := httptest.NewRecorder()
	p.ServeHTTP(w, httptest.NewRequest("GET", "/status.json", nil))
	var got map[string]any
	if err := json.Unmarshal(w.Body.Bytes(), &got); err != nil {
		t.Fatalf("%v: %s", err, w.Body)
	}
	for _, k := range []string{"tenants", "backends", "feeds", "events"} {
		if list, ok := got[k].([]any); !ok || len(list) != 0 {
			t.Errorf("%s = %v, want an empty list (never null: the page iterates it)", k, got[k])
		}
	}
	if _, ok := got["cache"]; ok {
		t.Errorf("cache = %v without a cache source, want absent", got["cache"])
	}
}

func TestPageHTML(t *testing.T) {
	p := statuspage.New(statuspage.Options{Build: telemetry.Build{Version: "v1.2.3", Commit: "abc123<script>", GoVersion: "go1.26"}, Refresh: 500 * time.Millisecond})
	w := httptest.NewRecorder()
	p.ServeHTTP(w, httptest.NewRequest("GET", "/status", nil))
	body := w.Body.String()
	if ct := w.Header().Get("Content-Type"); ct != "text/html; charset=utf-8" {
		t.Errorf("Content-Type %q", ct)
	}
	if !regexp.MustCompile(`const url = "status.json", every = +500 *;`).MatchString(body) {
		t.Error("page does not poll status.json every 500ms")
	}
	for _, want := range []string{"v1.2.3", "abc123&lt;script&gt;", `<table id="tenants">`, `<meta http-equiv="refresh" content="10">`} {
		if !strings.Contains(body, want) {
			t.Errorf("page lacks %q", want)
		}
	}
}

// rows returns the text of each cell of each row of the body of the table
// with id in the page doc.
func rows(doc *html.Node, id string) [][]string {
	var table *html.Node
	var find func(n *html.Node)
	find = func(n *html.Node) {
		for _, a := range n.Attr {
			if n.Data == "table" && a.Key == "id" && a.Val == id {
				table = n
			}
		}
		for c := n.FirstChild; c != nil && table == nil; c = c.NextSibling {
			find(c)
		}
	}
	find(doc)
	if table == nil {
		return nil
	}
	var text func(n *html.Node) string
	text = func(n *html.Node) string {
		if n.Type == html.TextNode {
			return n.Data
		}
		var b strings.Builder
		for c := n.FirstChild; c != nil; c = c.NextSibling {
			b.WriteString(text(c))
		}
		return b.String()
	}
	out := [][]string{}
	var walk func(n *html.Node, inBody bool)
	walk = func(n *html.Node, inBody bool) {
		if n.Type == html.ElementNode && n.Data == "tr" && inBody {
			var cells []string
			for c := n.FirstChild; c != nil; c = c.NextSibling {
				if c.Type == html.ElementNode && c.Data == "td" {
					cells = append(cells, text(c))
				}
			}
			out = append(out, cells)
			return
		}
		for c := n.FirstChild; c != nil; c = c.NextSibling {
			walk(c, inBody || n.Data == "tbody")
		}
	}
	walk(table, false)
	return out
}

// TestPageRendersTheData: the page as curl or a text browser gets it, with
// no script run, carries every table's rows: each tenant's latency and
// error counts, the unauthenticated requests, the backends' breakers,
// every cache tier with its state, the change feeds and the events.
func TestPageRendersTheData(t *testing.T) {
	p := statuspage.New(statuspage.Options{
		Now: func() time.Time { return now },
		Traffic: fakeAllTraffic{
			fakeTraffic: fakeTraffic{{Tenant: "harbour", Backend: "demo", Requests: 10, Hits: 8, Misses: 2,
				ClientErrors: 3, TooMany: 2, Invalid: 4, ServerErrors: 1, Recent: latency(9)}},
			// Requests since start, none recent: no latency to show.
			anonymous: telemetry.TenantStats{Requests: 5, Uncached: 5, ClientErrors: 5, Unauthorized: 4, TooMany: 1, Latency: latency(4)},
		},
		Breakers: fakeBreakers{
			{Backend: "demo", State: breaker.StateClosed},
			{Backend: "demo", Tenant: "harbour", State: breaker.StateOpen, RetryAfter: 1500 * time.Millisecond, LastError: "HTTP 500 <b>"},
		},
		Cache: fakeCache{Bytes: 2048, MaxBytes: 1 << 20, Entries: 3, Hits: 3, Misses: 1, Evictions: 4, SoftPurges: 2},
		Shared: func() redistier.Stats {
			return redistier.Stats{BreakerOpen: true, Hits: 4, Misses: 4, Errors: 7, PurgesPending: 2}
		},
		Disk: func() disktier.Stats {
			return disktier.Stats{Entries: 9, Bytes: 3 << 20, Hits: 1, Misses: 3, Errors: 1}
		},
		Feeds: fakeFeeds{
			{Backend: "crm", Feed: "webhook", Up: true, Held: true, Changes: 12, Gaps: 1, Lag: 1500 * time.Millisecond, LastEvent: now},
			{Backend: "pg", Feed: "listen"},
			{Backend: "pg", Feed: "poll", Held: true},
		},
		Events: fakeEvents{{Time: now, Kind: "reload", Detail: "config", Err: "bad <yaml>"}},
	})
	w := httptest.NewRecorder()
	p.ServeHTTP(w, httptest.NewRequest("GET", "/status", nil))
	// What a text browser shows: the script is not run.
	doc, err := html.Parse(strings.NewReader(w.Body.String()))
	if err != nil {
		t.Fatal(err)
	}
	want := map[string][][]string{
		"tenants": {
			{"harbour", "demo", "–", "10", "0.78 ms", "225.10 ms", "80.0%", "0", "2", "3", "0", "2", "4", "1"},
			{"(unauthenticated)", "", "–", "5", "–", "–", "0.0%", "0", "0", "5", "4", "1", "0", "0"},
		},
		"backends": {
			{"demo", "open", "backend: closed; harbour: open (retry in 2s) after: HTTP 500 <b>", "0", "", ""},
		},
		"tiers": {
			{"memory (first tier)", "ok", "3", "2.0 KiB", "1.0 MiB", "75.0%", "", "evictions 4, purges 2"},
			{"shared (Redis)", "breaker open", "", "", "", "50.0%", "7", "pending purges 2"},
			{"disk", "ok", "9", "3.0 MiB", "", "25.0%", "1", ""},
		},
		"feeds": {
			{"crm", "webhook", "up", "12", "1", "1500.00 ms", "2026-11-22 20:00:00Z"},
			{"pg", "listen", "held elsewhere", "0", "0", "0.00 ms", ""},
			{"pg", "poll", "down", "0", "0", "0.00 ms", ""},
		},
		"events": {
			{"2026-11-22 20:00:00Z", "reload", "config", "bad <yaml>"},
		},
	}
	for id, rs := range want {
		if diff := cmp.Diff(rs, rows(doc, id)); diff != "" {
			t.Errorf("table %s (-want +got):\n%s", id, diff)
		}
	}
	if !strings.Contains(w.Body.String(), "HTTP 500 &lt;b&gt;") {
		t.Error("a backend's error is not escaped")
	}
}

// fakeFleet is an in-memory Redis of status records; err fails every call.
type fakeFleet struct {
	mu   sync.Mutex
	recs map[string]fleetRecord
	err  error
	// keep are the ids ForgetStatus leaves alone (published).
	keep map[string]bool
}

type fleetRecord struct {
	b       []byte
	expires time.Time
}

func (f *fakeFleet) PublishStatus(_ context.Context, id string, rec []byte, ttl time.Duration, now time.Time) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.err != nil {
		return f.err
	}
	if f.recs == nil {
		f.recs = map[string]fleetRecord{}
	}
	f.recs[id] = fleetRecord{rec, now.Add(ttl)}
	return nil
}

func (f *fakeFleet) ForgetStatus(_ context.Context, id string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.err != nil {
		return f.err
	}
	if !f.keep[id] {
		delete(f.recs, id)
	}
	return nil
}

func (f *fakeFleet) Replicas(_ context.Context, now time.Time) (map[string][]byte, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.err != nil {
		return nil, f.err
	}
	out := map[string][]byte{}
	for id, r := range f.recs {
		if r.expires.After(now) {
			out[id] = r.b
		}
	}
	return out, nil
}

// published runs p's publisher until its first publication, then stops it
// (which forgets the record) and puts the record back, as a replica still
// running would have it.
func published(t *testing.T, f *fakeFleet, p *statuspage.Page, id string) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	f.mu.Lock()
	kept := f.keep
	f.keep = map[string]bool{id: true}
	f.mu.Unlock()
	p.Run(ctx) // publishes once, sees ctx ended, forgets
	f.mu.Lock()
	f.keep = kept
	f.mu.Unlock()
}

// TestStart: Start publishes in a goroutine of its own; stop returns
// once it has ended, the summary published and then forgotten.
func TestStart(t *testing.T) {
	fleet := &fakeFleet{}
	stop := statuspage.New(statuspage.Options{ID: "s", Fleet: fleet, Publish: time.Hour}).Start()
	stop()
	fleet.mu.Lock()
	defer fleet.mu.Unlock()
	if _, ok := fleet.recs["s"]; fleet.recs == nil || ok {
		t.Errorf("after stop: records %v, want s published and forgotten", fleet.recs)
	}
}

// TestFleet: with a fleet, each replica's page shows every replica that
// published within three publication intervals, itself from its own
// figures; a replica silent longer drops off; with the fleet's store
// unreachable the page still shows this replica and says why the others
// are missing.
func TestFleet(t *testing.T) {
	fleet := &fakeFleet{}
	clock := now
	tick := func() time.Time { return clock }
	a := statuspage.New(statuspage.Options{ID: "a", Fleet: fleet, Now: tick, Publish: time.Second,
		Traffic: fakeTraffic{{Tenant: "harbour", Backend: "demo", Requests: 3, Hits: 3}}})
	b := statuspage.New(statuspage.Options{ID: "b", Fleet: fleet, Now: tick, Publish: time.Second,
		Traffic:  fakeTraffic{{Tenant: "harbour", Backend: "demo", Requests: 7, Hits: 1, Misses: 1, ServerErrors: 5, ClientErrors: 1}},
		Breakers: fakeBreakers{{Backend: "demo", Tenant: "harbour", State: breaker.StateOpen}},
		Shared:   func() redistier.Stats { return redistier.Stats{Synced: true, PurgesPending: 2} },
		Feeds:    fakeFeeds{{Backend: "pg", Feed: "listen", Held: true, Up: true}, {Backend: "crm", Feed: "poll"}}})
	published(t, fleet, a, "a")
	published(t, fleet, b, "b")

	w := httptest.NewRecorder()
	a.ServeHTTP(w, httptest.NewRequest("GET", "/status", nil))
	doc, err := html.Parse(strings.NewReader(w.Body.String()))
	if err != nil {
		t.Fatal(err)
	}
	at := "2026-11-22 20:00:00Z"
	want := [][]string{
		{"a (this page)", " ", at, at, "3", "100.0%", "0", "0", "0", "", "0", "", ""},
		{"b", " ", at, at, "7", "50.0%", "1", "5", "1", "synced", "2", "pg/listen", ""},
	}
	if diff := cmp.Diff(want, rows(doc, "fleet")); diff != "" {
		t.Errorf("a's fleet table (-want +got):\n%s", diff)
	}

	// b falls silent for more than three intervals: a shows itself only.
	clock = now.Add(3500 * time.Millisecond)
	published(t, fleet, a, "a")
	var s statuspage.Snapshot
	w = httptest.NewRecorder()
	a.ServeHTTP(w, httptest.NewRequest("GET", "/status.json", nil))
	if err := json.Unmarshal(w.Body.Bytes(), &s); err != nil {
		t.Fatal(err)
	}
	if len(s.Fleet) != 1 || s.Fleet[0].ID != "a" || !s.Fleet[0].Self || s.FleetError != "" {
		t.Errorf("after b fell silent: fleet %+v, error %q", s.Fleet, s.FleetError)
	}

	// The store is unreachable: this replica, and why the others are missing.
	fleet.err = errors.New("dial tcp 127.0.0.1:6379: connect: connection refused")
	w = httptest.NewRecorder()
	a.ServeHTTP(w, httptest.NewRequest("GET", "/status", nil))
	if doc, err = html.Parse(strings.NewReader(w.Body.String())); err != nil {
		t.Fatal(err)
	}
	if got := rows(doc, "fleet"); len(got) != 1 || got[0][0] != "a (this page)" {
		t.Errorf("fleet rows with the store down: %q", got)
	}
	if !strings.Contains(w.Body.String(), "the other replicas cannot be read: dial tcp 127.0.0.1:6379: connect: connection refused") {
		t.Error("the page does not say why the other replicas are missing")
	}

	// A replica that stops forgets its record: off the page at once.
	fleet.err = nil
	published(t, fleet, b, "b")
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	b.Run(ctx)
	if recs, _ := fleet.Replicas(context.Background(), clock); recs["b"] != nil || recs["a"] == nil {
		t.Errorf("after b stopped, the fleet holds %v: want a's record only", slices.Collect(maps.Keys(recs)))
	}

	// Without a fleet, no fleet table.
	w = httptest.NewRecorder()
	statuspage.New(statuspage.Options{}).ServeHTTP(w, httptest.NewRequest("GET", "/status", nil))
	if strings.Contains(w.Body.String(), `id="fleet"`) {
		t.Error("a page without a fleet has a fleet table")
	}
}
