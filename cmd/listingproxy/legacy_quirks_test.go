package main

import (
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
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
		offsets []string
		calls   = map[string]int{} // by path and detail
	)
	const record = `<property id="17" last_updated="Fri Nov 20 09:30:00 +1100 2026">
    <address display="true">12 Smith Street</address>
    <status>CURRENT</status>
    <latitude/>
    <longitude/>
    <suburb>Caf` + "\xe9" + ` Row</suburb>
    <bedrooms>3+</bedrooms>
    <garages>2</garages>
    <price_from>650000.00</price_from>
    <photos count="1"><photo type="Normal" caption="" position="1" thumbnail="t.jpg">1.jpg</photo></photos>
    <videos><video>https://v/17.mp4</video></videos>
    <agents count="1"><agent id="5">Jane</agent></agents>
  </property>`
	crmSrv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		queries = append(queries, r.URL.Query().Get("limit")+"|"+fmt.Sprint(r.URL.Query().Has("limit")))
		offsets = append(offsets, r.URL.Query().Get("offset"))
		calls[r.URL.Path+"?"+r.URL.Query().Get("detail")]++
		mu.Unlock()
		w.Header().Set("Content-Type", "text/html; charset=UTF-8") // PHP's default
		if r.URL.Path == "/au/properties/9998.xml" {
			io.WriteString(w, `<?xml version="1.0" encoding="UTF-8"?>`+"\n<error>Listing 9998 is no longer available</error>")
			return
		}
		if r.URL.Path == "/au/properties/17.xml" {
			io.WriteString(w, `<?xml version="1.0" encoding="UTF-8"?>`+"\n"+record)
			return
		}
		io.WriteString(w, `<?xml version="1.0" encoding="UTF-8"?>
<properties count="1">
  `+record+`
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
max_offset: 10
backends:
  legacy: {kind: crm, url: "` + crmSrv.URL + `"}
  capped: {kind: crm, url: "` + crmSrv.URL + `", max_results: 1, max_offset: 100}
tenants:
  plain: {backend: legacy, upstream_username: u, upstream_password: p}
  oldclient: {backend: legacy, upstream_username: u, upstream_password: p, compat: {json_single_object: true}}
  small: {backend: capped, upstream_username: u, upstream_password: p}
  extra: {backend: legacy, upstream_username: u, upstream_password: p, extra_fields: [garages]}
  ciclient: {backend: legacy, upstream_username: u, upstream_password: p, compat: {json_single_object_items: [property]}}
  wpclient: {backend: legacy, upstream_username: u, upstream_password: p, compat: {json_numeric_ids: true, json_video_url: true}}
users:
  - {username: plain, password_bcrypt: "` + string(hash) + `", tenant: plain, permissions: [full, prices]}
  - {username: oldclient, password_bcrypt: "` + string(hash) + `", tenant: oldclient, permissions: [full, prices]}
  - {username: small, password_bcrypt: "` + string(hash) + `", tenant: small, permissions: [full, prices]}
  - {username: noprice, password_bcrypt: "` + string(hash) + `", tenant: plain, permissions: [full]}
  - {username: extra, password_bcrypt: "` + string(hash) + `", tenant: extra, permissions: [full]}
  - {username: ciclient, password_bcrypt: "` + string(hash) + `", tenant: ciclient, permissions: [full, prices]}
  - {username: wpclient, password_bcrypt: "` + string(hash) + `", tenant: wpclient, permissions: [full, prices]}
  - {username: wpnoprice, password_bcrypt: "` + string(hash) + `", tenant: wpclient, permissions: [full]}
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
	for _, want := range []string{`"count":"1","property":[{"id":"17"`, `"latitude":"","longitude":""`, `"suburb":"Café Row"`, `"bedrooms":"3+"`, `"garages":"2"`, `"price_from":"650000.00"`} {
		if !strings.Contains(body, want) {
			t.Errorf("plain list lacks %s:\n%s", want, body)
		}
	}
	if got := lastQuery(); got != "|false" {
		t.Errorf("without a limit the CRM got limit %q, want none", got)
	}
	// Never leak: a caller narrower than the upstream user (no prices)
	// sees neither raw prices nor an unknown element, unless the tenant's
	// extra_fields lists it.
	for _, f := range []string{"properties.xml?detail=full", "properties.json?detail=full", "properties/17.xml", "properties/17.json"} {
		body := get("noprice", "/au/"+f)
		if strings.Contains(body, "garages") || strings.Contains(body, "price_from") {
			t.Errorf("noprice %s sees garages or price_from:\n%s", f, body)
		}
		if !strings.Contains(body, "3+") {
			t.Errorf("noprice %s: bedrooms not passed through as written:\n%s", f, body)
		}
		body = get("extra", "/au/"+f)
		if !strings.Contains(body, "garages") || strings.Contains(body, "price_from") {
			t.Errorf("extra_fields [garages] %s: want garages, no price_from:\n%s", f, body)
		}
	}
	// One CRM call served every variant of a request: XML and JSON, as
	// plain (full, prices) and noprice (full) of tenant plain; the extra
	// tenant made its own (tenants never share a fetch).
	mu.Lock()
	if got := calls["/au/properties.xml?full"]; got != 2 {
		t.Errorf("CRM calls for the full list: %d, want 2 (one per tenant)", got)
	}
	if got := calls["/au/properties/17.xml?"]; got != 2 {
		t.Errorf("CRM calls for property 17: %d, want 2 (one per tenant)", got)
	}
	mu.Unlock()
	// The legacy's own not-found message.
	if body := get("plain", "/au/properties/9998.json"); body != `{"error":"Listing 9998 is no longer available"}`+"\n" {
		t.Errorf("not found: %s, want the legacy's message", body)
	}
	get("plain", "/au/properties.xml?limit=5000")
	if got := lastQuery(); got != "5000|true" {
		t.Errorf("with limit=5000 the CRM got %q, want 5000", got)
	}
	if body := get("oldclient", "/au/properties.json"); !strings.Contains(body, `"count":"1","property":{"id":"17"`) || !strings.Contains(body, `"agent":{"id":"5"`) {
		t.Errorf("json_single_object tenant: one listing is not an object:\n%s", body)
	}
	// The compatibility switches of docs/api.md, each for its tenant only:
	// one listing as an object with its one photo still an array (the
	// CodeIgniter client loops over photos); numeric ids and videos as
	// objects with a url (the WordPress client); the plain tenant is
	// unchanged.
	body = get("ciclient", "/au/properties.json?id=17&detail=full")
	for _, want := range []string{`"count":"1","property":{"id":"17"`, `"photo":[{"thumbnail":"t.jpg"`, `"agent":[{"id":"5"`} {
		if !strings.Contains(body, want) {
			t.Errorf("json_single_object_items [property]: lacks %s\n%s", want, body)
		}
	}
	for _, p := range []string{"/au/properties.json?detail=full", "/au/properties/17.json"} {
		body = get("wpclient", p)
		for _, want := range []string{`{"id":17,`, `"agent":[{"id":5,`, `"videos":{"count":"1","video":[{"url":"https://v/17.mp4"}]}`} {
			if !strings.Contains(body, want) {
				t.Errorf("json_numeric_ids, json_video_url %s: lacks %s\n%s", p, want, body)
			}
		}
		if body := get("wpnoprice", p); !strings.Contains(body, `{"id":17,`) || strings.Contains(body, "video") || strings.Contains(body, "price_from") {
			t.Errorf("json_numeric_ids for a caller without prices %s: want a numeric id, no video nor raw price\n%s", p, body)
		}
		if body := get("plain", p); !strings.Contains(body, `{"id":"17",`) || !strings.Contains(body, `"video":["https://v/17.mp4"]`) {
			t.Errorf("plain tenant %s changed by another tenant's switches:\n%s", p, body)
		}
	}
	get("small", "/au/properties.json")
	if got := lastQuery(); got != "1|true" {
		t.Errorf("backend max_results 1: the CRM got %q, want 1", got)
	}
	// The top-level max_offset (10) is not a CRM tenant's: the client's
	// offset goes to the CRM unless the backend sets its own cap.
	get("plain", "/au/properties.xml?offset=5000")
	mu.Lock()
	if got := offsets[len(offsets)-1]; got != "5000" {
		t.Errorf("offset=5000 under a top-level max_offset of 10: the CRM got offset %q, want 5000", got)
	}
	n := len(offsets)
	mu.Unlock()
	if body, want := get("small", "/au/properties.json?offset=101"), `{"errors":{"count":"1","error":{"field":"offset","message":"Invalid offset \"101\": must be a whole number from 0 to 100"}}}`+"\n"; body != want {
		t.Errorf("backend max_offset 100, offset=101: %s, want %s", body, want)
	}
	mu.Lock()
	if len(offsets) != n {
		t.Errorf("an offset past the backend's max_offset reached the CRM")
	}
	mu.Unlock()
	// Every answer of the legacy backend carried each flaw once (how many
	// calls hydration made is not this test's business); the capped
	// backend answered one capped list.
	resp, err := client.Get(admin + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	metrics, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	for _, want := range []string{
		`listingproxy_crm_tolerated_total\{backend="legacy",flaw="bad_value"\} [1-9]`,
		`listingproxy_crm_tolerated_total\{backend="legacy",flaw="mislabelled_content_type"\} [1-9]`,
		`listingproxy_crm_tolerated_total\{backend="legacy",flaw="not_utf8"\} [1-9]`,
		`(?m)^listingproxy_lists_capped_total 1$`,
		`(?m)^listingproxy_crm_panics_total\{backend="legacy"\} 0$`, // exported from the start
	} {
		if !regexp.MustCompile(want).Match(metrics) {
			t.Errorf("/metrics lacks %s", want)
		}
	}
}
