package admin_test

import (
	"io"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strings"
	"testing"

	"listingproxy/admin"
)

// TestIndex: GET / lists the endpoints, text/plain for curl and HTML for
// a browser, without credentials; every GET it lists answers (none is a
// 404), and any other path is still a 404.
func TestIndex(t *testing.T) {
	t.Parallel()
	page := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "page") })
	do := serve(t, admin.Options{Metrics: page, StatusPage: page})
	status, text := do("GET", "/", false)
	if status != http.StatusOK {
		t.Fatalf("GET / = %d %s", status, text)
	}
	listed := regexp.MustCompile(`(?m)^(GET|POST) +(/\S*) +(admin)?`).FindAllStringSubmatch(text, -1)
	if len(listed) < 10 {
		t.Fatalf("GET / lists %d endpoints:\n%s", len(listed), text)
	}
	seen := map[string]bool{}
	for _, l := range listed {
		seen[l[2]] = true
		if l[1] != "GET" || l[2] == "/" {
			continue
		}
		code, body := do("GET", l[2], l[3] == "admin")
		if code == http.StatusNotFound || code == http.StatusUnauthorized {
			t.Errorf("listed GET %s answers %d %s", l[2], code, body)
		}
		if l[3] == "admin" {
			if code, _ := do("GET", l[2], false); code != http.StatusUnauthorized {
				t.Errorf("GET %s, listed as behind the credentials, answers %d without them", l[2], code)
			}
		}
	}
	for _, p := range []string{"/status", "/status.json", "/metrics", "/healthz", "/readyz", "/backends", "/cache/purge", "/cache/explain", "/cache/keys", "/debug/pprof/"} {
		if !seen[p] {
			t.Errorf("GET / does not list %s:\n%s", p, text)
		}
	}
	if code, _ := do("GET", "/nope", false); code != http.StatusNotFound {
		t.Errorf("GET /nope = %d, want 404", code)
	}

	// Without a status page or metrics, they are not listed.
	if _, text := serve(t, admin.Options{})("GET", "/", false); strings.Contains(text, "/status") || strings.Contains(text, "/metrics") {
		t.Errorf("GET / lists routes that are not mounted:\n%s", text)
	}

	srv := httptest.NewServer(admin.New(admin.Options{}))
	defer srv.Close()
	for _, c := range []struct{ accept, ctype string }{
		{"text/html,application/xhtml+xml,*/*;q=0.8", "text/html; charset=utf-8"},
		{"*/*", "text/plain; charset=utf-8"},
		{"", "text/plain; charset=utf-8"},
		{"text/html;q=0, text/plain", "text/plain; charset=utf-8"},
	} {
		req, _ := http.NewRequest("GET", srv.URL+"/", nil)
		if c.accept != "" {
			req.Header.Set("Accept", c.accept)
		}
		resp, err := srv.Client().Do(req)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if got := resp.Header.Get("Content-Type"); got != c.ctype {
			t.Errorf("Accept %q: Content-Type %q, want %q", c.accept, got, c.ctype)
		}
		if strings.HasPrefix(c.ctype, "text/html") && !strings.Contains(string(body), `<a href="/healthz">/healthz</a>`) {
			t.Errorf("HTML list lacks a link to /healthz:\n%s", body)
		}
	}
}
