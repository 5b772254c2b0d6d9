package webhook_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"listingproxy/internal/testkit"
	"listingproxy/upstream"
	"listingproxy/upstream/webhook"
)

var t0 = time.Date(2026, 11, 27, 12, 0, 0, 0, time.UTC)

// setup returns a receiver for two tenants (harbour, backend tenant hb;
// summit, sm) on a fake clock, watched by a recording sink, behind a real
// HTTP server with the route cmd registers.
func setup(t *testing.T, o webhook.Options) (*testkit.Clock, *testkit.Changes, func(tenant, ts, sig, body string) (int, string)) {
	t.Helper()
	clk := testkit.NewClock(t0)
	o.Now = clk.Now
	if o.Tenants == nil {
		o.Tenants = map[string]webhook.Tenant{
			"harbour": {Upstream: "hb", Secret: []byte("harbour-secret")},
			"summit":  {Upstream: "sm", Secret: []byte("summit-secret")},
		}
	}
	r, err := webhook.New(o)
	if err != nil {
		t.Fatal(err)
	}
	sink := testkit.NewChanges()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- r.Watch(ctx, sink) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("Watch = %v after its context ended, want nil", err)
		}
	})
	testkit.WaitFor(t, "the feed to watch", func() bool { ups, _ := sink.State(); return ups > 0 })
	mux := http.NewServeMux()
	mux.Handle("POST /webhooks/{tenant}", r)
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	post := func(tenant, ts, sig, body string) (int, string) {
		t.Helper()
		req, _ := http.NewRequest("POST", srv.URL+"/webhooks/"+tenant, strings.NewReader(body))
		if ts != "" {
			req.Header.Set(webhook.HeaderTimestamp, ts)
		}
		if sig != "" {
			req.Header.Set(webhook.HeaderSignature, sig)
		}
		resp, err := srv.Client().Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		var e struct{ Error string }
		if json.Unmarshal(b, &e) == nil && e.Error != "" {
			return resp.StatusCode, e.Error
		}
		return resp.StatusCode, strings.TrimSpace(string(b))
	}
	return clk, sink, post
}

const update = `{"changes": [{"resource": "property", "op": "update", "ids": [12, 7], "country": "au"}, {"resource": "agent", "op": "delete", "ids": [3]}]}`

// TestSignedChangesAreReported: a good signature reports its changes (for
// the tenant's backend tenant); a bad, a stale, a replayed and another
// tenant's signature get 401 and report nothing.
func TestSignedChangesAreReported(t *testing.T) {
	clk, sink, post := setup(t, webhook.Options{})
	secret := []byte("harbour-secret")
	ts, sig := webhook.Sign(secret, clk.Now(), []byte(update))
	if code, body := post("harbour", ts, sig, update); code != 200 || body != `{"accepted":2}` {
		t.Fatalf("good signature: %d %s, want 200 {\"accepted\":2}", code, body)
	}
	want := []upstream.Change{
		{Tenant: "hb", Country: "au", Resource: "properties", Op: "UPDATE", Properties: []int64{7, 12}},
		{Tenant: "hb", Resource: "agents", Op: "DELETE", Agents: []int64{3}},
	}
	for i, w := range want {
		if diff := cmp.Diff(w, sink.Next(t), cmpopts.EquateEmpty()); diff != "" {
			t.Errorf("change %d (-want +got):\n%s", i, diff)
		}
	}

	staleTS, staleSig := webhook.Sign(secret, clk.Now().Add(-6*time.Minute), []byte(update))
	futureTS, futureSig := webhook.Sign(secret, clk.Now().Add(6*time.Minute), []byte(update))
	otherTS, otherSig := webhook.Sign([]byte("summit-secret"), clk.Now(), []byte(update))
	tampered := strings.Replace(update, "12", "13", 1)
	for _, c := range []struct {
		name, tenant, ts, sig, body, want string
	}{
		{"replayed", "harbour", ts, sig, update, "replayed request"},
		{"no signature", "harbour", "", "", update, "signature required"},
		{"wrong secret", "harbour", otherTS, otherSig, update, "signature does not match"},
		{"tampered body", "harbour", ts, sig, tampered, "signature does not match"},
		{"another tenant's path", "summit", ts, sig, update, "signature does not match"},
		{"too old", "harbour", staleTS, staleSig, update, "outside the 5m0s window"},
		{"from the future", "harbour", futureTS, futureSig, update, "outside the 5m0s window"},
		{"malformed signature", "harbour", ts, "sha256=zz", update, "want sha256=<64 hex digits>"},
		{"malformed timestamp", "harbour", "yesterday", sig, update, "want Unix seconds"},
		{"unknown tenant", "nobody", ts, sig, update, "signature required"},
	} {
		code, body := post(c.tenant, c.ts, c.sig, c.body)
		if code != http.StatusUnauthorized || !strings.Contains(body, c.want) {
			t.Errorf("%s: %d %s, want 401 with %q", c.name, code, body, c.want)
		}
	}
	if got := sink.Pending(); len(got) != 0 {
		t.Errorf("refused requests reported %d changes: %+v", len(got), got)
	}
}

// TestBadBodiesAreRefused: a signed body that is not the documented JSON
// gets 400 with where it is wrong, and reports nothing; a large one 413.
func TestBadBodiesAreRefused(t *testing.T) {
	clk, sink, post := setup(t, webhook.Options{MaxBodyBytes: 1024, MaxChanges: 3})
	for _, c := range []struct{ body, want string }{
		{`{"changes": []}`, `no "changes"`},
		{`{"changes": [{"resource": "house", "op": "update", "ids": [1]}]}`, `changes[0].resource: "house"`},
		{`{"changes": [{"resource": "property", "op": "upsert", "ids": [1]}]}`, `changes[0].op: "upsert"`},
		{`{"changes": [{"resource": "property", "op": "update", "ids": []}]}`, `changes[0].ids: empty`},
		{`{"changes": [{"resource": "property", "op": "update", "ids": [0]}]}`, `changes[0].ids[0]: 0`},
		{`{"changes": [{"resource": "property", "op": "update", "ids": [1, 2, 3, 4]}]}`, `more than 3 ids`},
		{`{"changes": [{"resource": "property", "op": "update", "ids": [1], "colour": "red"}]}`, `unknown field "colour"`},
		{`{"changes": [{"resource": "property", "op": "update", "ids": [1]}]} {}`, `more than one JSON value`},
		{`not json`, `body: invalid character`},
	} {
		ts, sig := webhook.Sign([]byte("harbour-secret"), clk.Now(), []byte(c.body))
		if code, body := post("harbour", ts, sig, c.body); code != 400 || !strings.Contains(body, c.want) {
			t.Errorf("%s: %d %s, want 400 with %q", c.body, code, body, c.want)
		}
	}
	big := `{"changes": [{"resource": "property", "op": "update", "ids": [1]}], "pad": "` + strings.Repeat("x", 2000) + `"}`
	ts, sig := webhook.Sign([]byte("harbour-secret"), clk.Now(), []byte(big))
	if code, body := post("harbour", ts, sig, big); code != http.StatusRequestEntityTooLarge {
		t.Errorf("a body over MaxBodyBytes: %d %s, want 413", code, body)
	}
	if got := sink.Pending(); len(got) != 0 {
		t.Errorf("refused bodies reported %d changes", len(got))
	}
}

// TestRateLimits: a tenant's accepted requests are limited; refused ones
// never use that rate, so a flood of bad signatures does not lock out the
// tenant's real sender.
func TestRateLimits(t *testing.T) {
	clk, sink, post := setup(t, webhook.Options{Rate: 1, Burst: 2})
	for range 20 {
		if code, _ := post("harbour", "1", "sha256="+strings.Repeat("0", 64), update); code != http.StatusUnauthorized {
			t.Fatalf("a bad signature: %d, want 401", code)
		}
	}
	good := func(i int) int {
		body := update + strings.Repeat(" ", i) // distinct signatures
		ts, sig := webhook.Sign([]byte("harbour-secret"), clk.Now(), []byte(body))
		code, _ := post("harbour", ts, sig, body)
		return code
	}
	for i := range 2 {
		if c := good(i); c != 200 {
			t.Errorf("good request %d after a flood of bad ones: %d, want 200", i, c)
		}
	}
	if c := good(2); c != http.StatusTooManyRequests {
		t.Errorf("past the accepted burst: %d, want 429", c)
	}
	clk.Advance(time.Second)
	if c := good(3); c != 200 {
		t.Errorf("a second later: %d, want 200", c)
	}
	if n := len(sink.Pending()); n != 3*2 {
		t.Errorf("%d changes reported, want 6 (3 accepted requests of 2)", n)
	}
}

// TestNotWatching: a request that arrives when no Watch runs is told to
// retry (503), not silently dropped.
func TestNotWatching(t *testing.T) {
	r, err := webhook.New(webhook.Options{Now: func() time.Time { return t0 },
		Tenants: map[string]webhook.Tenant{"harbour": {Upstream: "hb", Secret: []byte("s")}}})
	if err != nil {
		t.Fatal(err)
	}
	ts, sig := webhook.Sign([]byte("s"), t0, []byte(update))
	req := httptest.NewRequest("POST", "/webhooks/harbour", strings.NewReader(update))
	req.SetPathValue("tenant", "harbour")
	req.Header.Set(webhook.HeaderTimestamp, ts)
	req.Header.Set(webhook.HeaderSignature, sig)
	w := httptest.NewRecorder()
	r.ServeHTTP(w, req)
	if w.Code != http.StatusServiceUnavailable || w.Header().Get("Retry-After") == "" {
		t.Errorf("no Watch running: %d, Retry-After %q; want 503 with Retry-After", w.Code, w.Header().Get("Retry-After"))
	}
	if _, err := webhook.New(webhook.Options{Tenants: map[string]webhook.Tenant{"x": {Upstream: "x"}}}); err == nil {
		t.Error("a tenant without a secret was accepted")
	}
}

// TestMuxRefusesAnUnknownTenantAsUnsigned: Mux routes a tenant's POST to
// its receiver (a forged signature is judged there), and answers a tenant
// it has none for exactly as a request without a signature, signed or
// not, so which tenants exist is not said.
func TestMuxRefusesAnUnknownTenantAsUnsigned(t *testing.T) {
	r, err := webhook.New(webhook.Options{Now: func() time.Time { return t0 },
		Tenants: map[string]webhook.Tenant{"harbour": {Upstream: "hb", Secret: []byte("harbour-secret")}}})
	if err != nil {
		t.Fatal(err)
	}
	mux := http.NewServeMux()
	mux.Handle("POST /hooks/changes/{tenant}", webhook.Mux(map[string]*webhook.Receiver{"harbour": r}))
	post := func(tenant string, signed bool) (int, string) {
		w := httptest.NewRecorder()
		req := httptest.NewRequest("POST", "/hooks/changes/"+tenant, strings.NewReader(update))
		if signed {
			req.Header.Set(webhook.HeaderTimestamp, strconv.FormatInt(t0.Unix(), 10))
			req.Header.Set(webhook.HeaderSignature, "sha256=00")
		}
		mux.ServeHTTP(w, req)
		return w.Code, w.Body.String()
	}
	unsigned, unsignedBody := post("harbour", false)
	if unsigned != http.StatusUnauthorized || !strings.Contains(unsignedBody, "signature required") {
		t.Errorf("harbour without a signature: %d %s; want its receiver's 401", unsigned, unsignedBody)
	}
	if code, body := post("harbour", true); body == unsignedBody {
		t.Errorf("harbour with a forged signature: %d %s; want its receiver's judgement, not the refusal of an unsigned request", code, body)
	}
	for _, signed := range []bool{false, true} {
		if code, body := post("nobody", signed); code != unsigned || body != unsignedBody {
			t.Errorf("unknown tenant (signed %v): %d %s; want the same as an unsigned request: %d %s", signed, code, body, unsigned, unsignedBody)
		}
	}
}
