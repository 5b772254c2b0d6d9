package main

import (
	"os"
	"strings"
	"testing"
)

// TestClientMistakesCountedAndStrict, on the wired demo through the HTTP
// surface: criteria errors are counted by parameter and unknown
// parameters by name (the spec's names, else other), per tenant, on
// /metrics; summit, with tenants.summit.strict_params, gets the spec's
// error list for an unknown parameter where harbour gets its list.
func TestClientMistakesCountedAndStrict(t *testing.T) {
	path := demoConfig(t)
	src, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	edited := strings.Replace(string(src), "summit:  {backend: demo}", "summit:  {backend: demo, strict_params: true}", 1)
	if edited == string(src) {
		t.Fatal("the shipped configuration no longer has summit's line")
	}
	if err := os.WriteFile(path, []byte(edited), 0o600); err != nil {
		t.Fatal(err)
	}
	a := newAppFrom(t, path)
	for _, tc := range []struct{ user, target, body string }{
		{"harbour", "/au/properties.xml?statuss=current&limit=2", `<properties count="2">`},
		{"harbour", "/au/properties.xml?statuss=current&limit=2", `<properties count="2">`}, // a hit: counted again
		{"harbour", "/au/agents.json?bedrooms=3&limit=1", `{"agents":`},
		{"harbour", "/au/properties.json?bedrooms=many&price_from=cheap", `{"errors":{"count":"2"`},
		{"summit", "/au/properties.xml?statuss=current&limit=2", `<error field="statuss">Unknown parameter "statuss" (did you mean "status"?)</error>`},
		{"summit", "/au/properties.xml?status=current&limit=2", `<properties count="2">`},
	} {
		if w := demoGet(t, a.handler, tc.user, tc.target); w.Code != 200 || !strings.Contains(w.Body.String(), tc.body) {
			t.Errorf("%s %s: %d %.300s; want 200 with %s", tc.user, tc.target, w.Code, w.Body, tc.body)
		}
	}
	_, text := exportedMetrics(t, a.admin)
	for _, want := range []string{
		`listingproxy_unknown_params_total{param="other",tenant="harbour"} 2`,
		`listingproxy_unknown_params_total{param="bedrooms",tenant="harbour"} 1`,
		`listingproxy_criteria_errors_total{param="bedrooms",tenant="harbour"} 1`,
		`listingproxy_criteria_errors_total{param="price_from",tenant="harbour"} 1`,
		`listingproxy_unknown_params_total{param="other",tenant="summit"} 1`,
		`listingproxy_criteria_errors_total{param="other",tenant="summit"} 1`,
	} {
		if !strings.Contains(text, want) {
			t.Errorf("/metrics lacks %s", want)
		}
	}
	if strings.Contains(text, `param="statuss"`) {
		t.Error("/metrics has a label of a client's own parameter name: the label set must stay bounded")
	}
}
