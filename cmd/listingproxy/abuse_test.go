package main

import (
	"io"
	"net/http"
	"os"
	"strings"
	"testing"
	"time"
)

// TestRunAbuseLimits wires auth.* and tenants.NAME.rate_limit through run:
// a tenant past its limit and an address past its failures get 429 with
// Retry-After and the spec's body, verified callers are unaffected, and
// /metrics counts each refusal by reason and tenant. The buckets refill
// far slower than the test runs, so the real clock does not matter.
func TestRunAbuseLimits(t *testing.T) {
	cfgPath := demoConfig(t)
	raw, err := os.ReadFile(cfgPath)
	if err != nil {
		t.Fatal(err)
	}
	edited := strings.Replace(string(raw), "harbour: {backend: demo}", "harbour: {backend: demo, rate_limit: {requests_per_second: 0.001, burst: 2}}", 1)
	edited += "\nauth: {failures_per_address: {per_minute: 0.01, burst: 1}, refusal_delay: 1ms}\n"
	if err := os.WriteFile(cfgPath, []byte(edited), 0o600); err != nil {
		t.Fatal(err)
	}
	base, admin := startRun(t, cfgPath)
	client := &http.Client{Timeout: 10 * time.Second}
	do := func(user, pass string) (int, string, string) {
		t.Helper()
		req, _ := http.NewRequest("GET", base+"/au/agents.json", nil)
		req.SetBasicAuth(user, pass)
		resp, err := client.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		return resp.StatusCode, resp.Header.Get("Retry-After"), string(body)
	}
	steps := []struct {
		user, pass  string
		status      int
		retry, body string
	}{
		{"summit", "summit-demo", 200, "", ""},
		{"harbour", "harbour-demo", 200, "", ""},
		{"harbour", "harbour-demo", 200, "", ""},
		{"harbour", "harbour-demo", 429, "1000", `{"error":"Too many requests; please slow down and try again shortly"}` + "\n"},
		{"summit", "wrong-1", 401, "", `{"error":"Authentication required: a valid username and password are needed"}` + "\n"},
		{"summit", "wrong-2", 429, "6000", `{"error":"Too many failed sign-in attempts; please try again later"}` + "\n"},
		{"summit", "summit-demo", 200, "", ""}, // verified before: unaffected
	}
	for i, st := range steps {
		status, retry, body := do(st.user, st.pass)
		if status != st.status || (st.retry != "" && retry != st.retry) {
			t.Errorf("step %d (%s): status %d Retry-After %q, want %d %q", i, st.user, status, retry, st.status, st.retry)
		}
		if st.body != "" && body != st.body {
			t.Errorf("step %d: body %q, want %q", i, body, st.body)
		}
	}
	wantMetrics(t, client, admin, "",
		`listingproxy_auth_rejections_total{reason="bad_credentials"} 1`,
		`listingproxy_auth_rejections_total{reason="throttled"} 1`,
		`listingproxy_auth_rejections_total{reason="pool_full"} 0`,
		`listingproxy_tenant_rate_limited_total{tenant="harbour"} 1`,
	)
}
