package main

import (
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"golang.org/x/crypto/bcrypt"
)

// TestLegacyQuirks runs the service (run) in front of a CRM that answers
// like an old PHP endpoint: text/html, a Latin-1 byte in a UTF-8 document,
// a record with a value that is not a number. The list is served whole and
// each flaw is counted; the client's limit (or none) is what reaches the
// CRM unless the backend sets max_results, and a list cut at that cap is
// counted; a tenant with compat.json_single_object gets one listing as an
// object.
func TestLegacyQuirks(t *testing.T) {
	var (
		mu      sync.Mutex
		queries []string
	)
	crmSrv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		queries = append(queries, r.URL.Query().Get("limit")+"|"+fmt.Sprint(r.URL.Query().Has("limit")))
		mu.Unlock()
		w.Header().Set("Content-Type", "text/html; charset=UTF-8") // PHP's default
		io.WriteString(w, `<?xml version="1.0" encoding="UTF-8"?>
<properties count="1">
  <property id="17" last_updated="Fri Nov 20 09:30:00 +1100 2026">
    <address display="true">12 Smith Street</address>
    <status>CURRENT</status>
    <latitude/>
    <longitude/>
    <suburb>Caf`+"\xe9"+` Row</suburb>
    <bedrooms>3+</bedrooms>
    <agents count="1"><agent id="5">Jane</agent></agents>
  </property>
</properties>`)
	}))
	defer crmSrv.Close()

	hash, err := bcrypt.GenerateFromPassword([]byte("pw"), bcrypt.MinCost)
	if err != nil {
		t.Fatal(err)
	}
	cfg := `listen: "127.0.0.1:0"
admin_listen: "127.0.0.1:0"
countries: [au]
backends:
  legacy: {kind: crm, url: "` + crmSrv.URL + `"}
  capped: {kind: crm, url: "` + crmSrv.URL + `", max_results: 1}
tenants:
  plain: {backend: legacy, upstream_username: u, upstream_password: p}
  oldclient: {backend: legacy, upstream_username: u, upstream_password: p, compat: {json_single_object: true}}
  small: {backend: capped, upstream_username: u, upstream_password: p}
users:
  - {username: plain, password_bcrypt: "` + string(hash) + `", tenant: plain, permissions: [full, prices]}
  - {username: oldclient, password_bcrypt: "` + string(hash) + `", tenant: oldclient, permissions: [full, prices]}
  - {username: small, password_bcrypt: "` + string(hash) + `", tenant: small, permissions: [full, prices]}
`
	path := filepath.Join(t.TempDir(), "config.yaml")
	if err := os.WriteFile(path, []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	base, admin := startRun(t, path)
	client := &http.Client{Transport: &http.Transport{}, Timeout: 10 * time.Second}
	get := func(user, p string) string {
		t.Helper()
		req, _ := http.NewRequest("GET", base+p, nil)
		req.SetBasicAuth(user, "pw")
		resp, err := client.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		body, _ := io.ReadAll(resp.Body)
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("%s %s: status %d, want 200: %s", user, p, resp.StatusCode, body)
		}
		return string(body)
	}
	lastQuery := func() string {
		mu.Lock()
		defer mu.Unlock()
		return queries[len(queries)-1]
	}

	body := get("plain", "/au/properties.json?detail=full")
	for _, want := range []string{`"count":"1","property":[{"id":"17"`, `"latitude":"","longitude":""`, `"suburb":"Café Row"`, `"bedrooms":""`} {
		if !strings.Contains(body, want) {
			t.Errorf("plain list lacks %s:\n%s", want, body)
		}
	}
	if got := lastQuery(); got != "|false" {
		t.Errorf("without a limit the CRM got limit %q, want none", got)
	}
	get("plain", "/au/properties.xml?limit=5000")
	if got := lastQuery(); got != "5000|true" {
		t.Errorf("with limit=5000 the CRM got %q, want 5000", got)
	}
	if body := get("oldclient", "/au/properties.json"); !strings.Contains(body, `"count":"1","property":{"id":"17"`) || !strings.Contains(body, `"agent":{"id":"5"`) {
		t.Errorf("json_single_object tenant: one listing is not an object:\n%s", body)
	}
	get("small", "/au/properties.json")
	if got := lastQuery(); got != "1|true" {
		t.Errorf("backend max_results 1: the CRM got %q, want 1", got)
	}
	wantMetrics(t, client, admin, "",
		`listingproxy_crm_tolerated_total{backend="legacy",flaw="bad_value"} 3`,
		`listingproxy_crm_tolerated_total{backend="legacy",flaw="mislabelled_content_type"} 3`,
		`listingproxy_crm_tolerated_total{backend="legacy",flaw="not_utf8"} 3`,
		`listingproxy_lists_capped_total 1`,
	)
}
