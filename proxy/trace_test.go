package proxy_test

import (
	"context"
	"errors"
	"net/http"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	"go.opentelemetry.io/otel/attribute"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"listingproxy/cache"
	"listingproxy/proxy"
	"listingproxy/telemetry"
	"listingproxy/upstream/breaker"
)

// tracedServer is the proxy as cmd wires it for tracing: otelhttp server
// spans named by route, the access middleware, a traced cache and breaker,
// and an instrumented backend; every span goes to the returned exporter.
func tracedServer(t *testing.T, fb *fakeBackend) (http.Handler, *tracetest.InMemoryExporter, *cache.Store) {
	t.Helper()
	exp := tracetest.NewInMemoryExporter()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSyncer(exp))
	t.Cleanup(func() { _ = tp.Shutdown(context.Background()) })
	c, err := cache.New(cache.Options{MaxBytes: 64 << 20, Now: func() time.Time { return fixedNow }, TracerProvider: tp})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	b := telemetry.InstrumentBackend(fb, telemetry.BackendOptions{Name: "fake", Kind: "test", TracerProvider: tp})
	b = breaker.NewRegistry(breaker.Options{TracerProvider: tp}).Wrap(b, breaker.Backend{Name: "fake"})
	s, err := proxy.New(testUsers(), []proxy.Tenant{
		{Name: "harbour", Backend: b, BackendName: "fake", Upstream: "harbour"},
		{Name: "summit", Backend: b, BackendName: "fake", Upstream: "summit"},
	}, proxy.Options{
		Cache: c, Now: func() time.Time { return fixedNow }, TracerProvider: tp,
	})
	if err != nil {
		t.Fatal(err)
	}
	return telemetry.ServerHandler(telemetry.Middleware(telemetry.AccessOptions{Tracing: true})(s), tp), exp, c
}

// tree renders spans as indented "name" lines in start order under their
// parents, with the attribute named attr when a span has it.
func tree(spans tracetest.SpanStubs, attr attribute.Key) string {
	children := map[string][]tracetest.SpanStub{}
	ids := map[string]bool{}
	for _, s := range spans {
		ids[s.SpanContext.SpanID().String()] = true
	}
	var roots []tracetest.SpanStub
	for _, s := range spans {
		p := s.Parent.SpanID().String()
		if s.Parent.IsValid() && ids[p] {
			children[p] = append(children[p], s)
		} else {
			roots = append(roots, s)
		}
	}
	var b strings.Builder
	var walk func(s tracetest.SpanStub, depth int)
	walk = func(s tracetest.SpanStub, depth int) {
		b.WriteString(strings.Repeat("  ", depth) + s.Name)
		for _, a := range s.Attributes {
			if a.Key == attr {
				b.WriteString(" [" + a.Value.String() + "]")
			}
		}
		b.WriteString("\n")
		kids := children[s.SpanContext.SpanID().String()]
		slices.SortStableFunc(kids, func(x, y tracetest.SpanStub) int { return x.StartTime.Compare(y.StartTime) })
		for _, k := range kids {
			walk(k, depth+1)
		}
	}
	for _, r := range roots {
		walk(r, 0)
	}
	return b.String()
}

func TestTraceOfAMissAndAHit(t *testing.T) {
	h, exp, _ := tracedServer(t, newFake())
	const parent = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"
	if w := get(h, "GET", "harbour", "/au/properties/1.xml", "traceparent", parent); w.Code != 200 {
		t.Fatalf("status %d", w.Code)
	}
	want := `GET /{country}/properties/{file}
  proxy.authenticate
  proxy.normalize
  cache.lookup [miss]
    cache.fill
      breaker
        backend.GetProperty
`
	spans := exp.GetSpans()
	if got := tree(spans, "listingproxy.cache.outcome"); got != want {
		t.Errorf("miss: span tree\n%s\nwant\n%s", got, want)
	}
	for _, s := range spans {
		if got := s.SpanContext.TraceID().String(); got != "4bf92f3577b34da6a3ce929d0e0e4736" {
			t.Errorf("span %s in trace %s, want the incoming traceparent's trace", s.Name, got)
		}
	}
	checkNoSecrets(t, spans)

	exp.Reset()
	get(h, "GET", "harbour", "/au/properties/1.xml")
	want = `GET /{country}/properties/{file}
  proxy.authenticate
  proxy.normalize
  cache.lookup [hit]
`
	if got := tree(exp.GetSpans(), "listingproxy.cache.outcome"); got != want {
		t.Errorf("hit: span tree\n%s\nwant\n%s", got, want)
	}

	exp.Reset()
	get(h, "HEAD", "harbour", "/au/properties.json?status=current&suburb=Manly")
	spans = exp.GetSpans()
	if got := tree(spans, "listingproxy.cache.outcome"); !strings.HasPrefix(got, "HEAD /{country}/properties.json\n") {
		t.Errorf("list span tree\n%s\nwant it named HEAD /{country}/properties.json", got)
	}
	checkNoSecrets(t, spans)
}

// checkNoSecrets fails when any attribute carries the password, the
// Authorization header or a query value.
func checkNoSecrets(t *testing.T, spans tracetest.SpanStubs) {
	t.Helper()
	for _, s := range spans {
		for _, a := range s.Attributes {
			v := a.Value.String()
			for _, secret := range []string{password, basic("harbour"), strings.TrimPrefix(basic("harbour"), "Basic "), "Manly", "status="} {
				if strings.Contains(v, secret) {
					t.Errorf("span %s attribute %s = %q carries %q", s.Name, a.Key, v, secret)
				}
			}
		}
	}
}

func TestTraceOfACoalescedBurst(t *testing.T) {
	fb := newFake()
	release := fb.Block()
	h, exp, c := tracedServer(t, fb)
	const n = 8
	var wg sync.WaitGroup
	for range n {
		wg.Go(func() {
			if w := get(h, "GET", "harbour", "/au/properties.json?status=current"); w.Code != 200 {
				t.Errorf("status %d", w.Code)
			}
		})
	}
	waitJoined(t, c, fb, n) // all joined, the leader is at the backend
	release()
	wg.Wait()

	var fills, waits []tracetest.SpanStub
	backend := 0
	for _, s := range exp.GetSpans() {
		switch s.Name {
		case "cache.fill":
			fills = append(fills, s)
		case "cache.wait":
			waits = append(waits, s)
		case "backend.ListProperties":
			backend++
		}
	}
	if len(fills) != 1 || backend != 1 {
		t.Fatalf("%d cache.fill and %d backend spans, want one of each", len(fills), backend)
	}
	if len(waits) != n-1 {
		t.Fatalf("%d cache.wait spans, want %d", len(waits), n-1)
	}
	leader := fills[0].SpanContext
	for _, w := range waits {
		if len(w.Links) != 1 || !w.Links[0].SpanContext.Equal(leader) {
			t.Errorf("cache.wait links %v, want one link to the leader's cache.fill %s", w.Links, leader.SpanID())
		}
		if w.SpanContext.TraceID() == leader.TraceID() {
			t.Errorf("a waiter is in the leader's trace; each request has its own")
		}
	}
}

// TestReloadUnderLoad swaps users and policies while requests run (go test
// -race): every request sees one consistent set, and the new set applies.
func TestReloadUnderLoad(t *testing.T) {
	s := newServer(t, newFake(), proxy.Options{Cache: newCache(t)})
	stop := make(chan struct{})
	var wg sync.WaitGroup
	for range 4 {
		wg.Go(func() {
			for {
				select {
				case <-stop:
					return
				default:
				}
				if w := get(s, "GET", "summit", "/au/properties.xml"); w.Code != 200 {
					t.Errorf("summit during reloads: status %d", w.Code)
					return
				}
			}
		})
	}
	onlySummit := []proxy.User{{Username: "summit", PasswordHash: testHash, Tenant: "summit", Permissions: proxy.PermFull}}
	for i := range 20 {
		users := testUsers()
		if i%2 == 1 {
			users = onlySummit
		}
		if err := s.Reload(users, proxy.ReloadOptions{Policy: func(string) cache.Policy { return proxy.DefaultPolicy }}); err != nil {
			t.Fatal(err)
		}
	}
	close(stop)
	wg.Wait()

	if err := s.Reload(onlySummit, proxy.ReloadOptions{}); err != nil {
		t.Fatal(err)
	}
	if w := get(s, "GET", "harbour", "/au/properties.xml"); w.Code != http.StatusUnauthorized {
		t.Errorf("removed user: status %d, want 401", w.Code)
	}
	bad := []proxy.User{{Username: "x", PasswordHash: testHash, Tenant: "nobody"}}
	if err := s.Reload(bad, proxy.ReloadOptions{}); err == nil {
		t.Error("user of an unknown tenant: want an error")
	}
	if w := get(s, "GET", "summit", "/au/properties.xml"); w.Code != 200 {
		t.Errorf("after a rejected reload: status %d, want the old users kept", w.Code)
	}
}

// TestObserve reports tenant, cache outcome and authentication failures.
func TestObserve(t *testing.T) {
	var mu sync.Mutex
	var got []proxy.RequestInfo
	fb := newFake()
	s := newServer(t, fb, proxy.Options{Cache: newCache(t), Observe: func(_ http.ResponseWriter, i proxy.RequestInfo) {
		mu.Lock()
		got = append(got, i)
		mu.Unlock()
	}})
	get(s, "GET", "harbour", "/au/properties/1.json")
	get(s, "GET", "harbour", "/au/properties/1.json")
	get(s, "GET", "", "/au/properties/1.json")
	get(s, "GET", "harbour", "/au/properties.json?bedrooms=x")
	down := errors.New("connection refused")
	fb.Fail(down)
	if w := get(s, "GET", "summit", "/au/agents/1.json"); w.Code != http.StatusServiceUnavailable {
		t.Fatalf("failing backend: status %d, want 503", w.Code)
	}
	want := []proxy.RequestInfo{
		{Tenant: "harbour", Backend: "fake", User: "harbour", Cache: "miss"},
		{Tenant: "harbour", Backend: "fake", User: "harbour", Cache: "hit"},
		{AuthFailed: true, Rejection: proxy.RejectMissing},
		{Tenant: "harbour", Backend: "fake", User: "harbour", CriteriaErrors: []string{"bedrooms"}},
	}
	if len(got) != 5 || !errors.Is(got[4].Err, down) {
		t.Fatalf("observed %+v, want 5 requests, the last with the backend's failure", got)
	}
	if got[4].Tenant != "summit" || got[4].User != "summit" {
		t.Errorf("failed request observed as %+v", got[4])
	}
	if diff := cmp.Diff(want, got[:4], cmpopts.EquateErrors()); diff != "" {
		t.Errorf("observed (-want +got):\n%s", diff)
	}
}
