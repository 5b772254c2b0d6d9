package proxy_test

import (
	"bytes"
	"compress/gzip"
	"errors"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"

	"time"

	"github.com/google/go-cmp/cmp"

	"listingproxy/cache"
	"listingproxy/proxy"
)

const xmlHeader = `<?xml version="1.0" encoding="UTF-8"?>` + "\n"

func TestStatusTable(t *testing.T) {
	fb := newFake()
	s := newServer(t, fb, proxy.Options{})
	tests := []struct {
		name, method, user, target string
		status                     int
		body                       string
		header                     map[string]string
	}{
		{
			name: "no credentials", method: "GET", target: "/au/properties.xml", status: 401,
			body:   xmlHeader + "<error>Authentication required: a valid username and password are needed</error>\n",
			header: map[string]string{"WWW-Authenticate": `Basic realm="listings", charset="UTF-8"`},
		},
		{
			name: "no credentials json", method: "GET", target: "/au/agents.json", status: 401,
			body: `{"error":"Authentication required: a valid username and password are needed"}` + "\n",
		},
		{
			name: "unknown country", method: "GET", user: "harbour", target: "/uk/properties.json", status: 404,
			body: `{"error":"Unknown country \"uk\""}` + "\n",
		},
		{
			name: "unknown path", method: "GET", user: "harbour", target: "/au/houses.xml", status: 404,
			body: xmlHeader + "<error>Not found</error>\n",
		},
		{
			name: "unknown extension", method: "GET", user: "harbour", target: "/au/properties/1.html", status: 404,
			body: xmlHeader + "<error>Not found</error>\n",
		},
		{
			name: "post", method: "POST", user: "harbour", target: "/au/properties.json", status: 405,
			body:   `{"error":"Method not allowed: use GET or HEAD"}` + "\n",
			header: map[string]string{"Allow": "GET, HEAD"},
		},
		{
			name: "delete single", method: "DELETE", user: "harbour", target: "/au/agents/5.xml", status: 405,
			body: xmlHeader + "<error>Method not allowed: use GET or HEAD</error>\n",
		},
		{
			name: "property not found", method: "GET", user: "harbour", target: "/au/properties/999.json", status: 200,
			body: `{"error":"Property with ID 999 not found"}` + "\n",
		},
		{
			name: "agent not found", method: "GET", user: "harbour", target: "/au/agents/999.xml", status: 200,
			body: xmlHeader + "<error>Agent with ID 999 not found</error>\n",
		},
		{
			name: "other tenant's property", method: "GET", user: "summit", target: "/au/properties/1.json", status: 200,
			body: `{"error":"Property with ID 1 not found"}` + "\n",
		},
		{
			name: "other country's property", method: "GET", user: "harbour", target: "/nz/properties/1.json", status: 200,
			body: `{"error":"Property with ID 1 not found"}` + "\n",
		},
		{
			name: "bad id", method: "GET", user: "harbour", target: "/au/properties/abc.json", status: 200,
			body: `{"error":"ID \"abc\" is not a valid number"}` + "\n",
		},
		{
			name: "single without full permission", method: "GET", user: "harbour-short", target: "/au/properties/1.xml", status: 200,
			body: xmlHeader + "<error>Full detail requires the full permission</error>\n",
		},
		{
			name: "list detail=full without permission", method: "GET", user: "harbour-short", target: "/au/properties.json?detail=full", status: 200,
			body: `{"errors":{"count":"1","error":{"field":"detail","message":"Full detail requires the full permission"}}}` + "\n",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			w := get(s, tt.method, tt.user, tt.target)
			if w.Code != tt.status {
				t.Errorf("status = %d, want %d", w.Code, tt.status)
			}
			if diff := cmp.Diff(tt.body, w.Body.String()); diff != "" {
				t.Errorf("body mismatch (-want +got):\n%s", diff)
			}
			for k, v := range tt.header {
				if got := w.Header().Get(k); got != v {
					t.Errorf("header %s = %q, want %q", k, got, v)
				}
			}
		})
	}
}

func TestWrongPassword(t *testing.T) {
	s := newServer(t, newFake(), proxy.Options{})
	for _, auth := range []string{"Basic !!!", "Bearer x", basic("nobody"), "Basic " + "aGFyYm91cjp3cm9uZw=="} {
		r := get(s, "GET", "", "/au/properties.xml", "Authorization", auth)
		if r.Code != http.StatusUnauthorized {
			t.Errorf("Authorization %q: status %d, want 401", auth, r.Code)
		}
	}
}

func TestDetailErrorKeepsSpecOrder(t *testing.T) {
	s := newServer(t, newFake(), proxy.Options{})
	w := get(s, "GET", "harbour-short", "/au/properties.xml?detail=full&category=house&limit=x")
	want := xmlHeader + `<errors count="3">
  <error field="category">Invalid category "house": must be Residential, Commercial or Agricultural</error>
  <error field="detail">Full detail requires the full permission</error>
  <error field="limit">`
	if !strings.HasPrefix(w.Body.String(), want) {
		t.Errorf("body = %s\nwant prefix %s", w.Body.String(), want)
	}
}

func TestBackendDownIs503(t *testing.T) {
	fb := newFake()
	fb.Fail(errors.New("connection refused"))
	s := newServer(t, fb, proxy.Options{})
	w := get(s, "GET", "harbour", "/au/properties.json")
	if w.Code != http.StatusServiceUnavailable || w.Header().Get("Retry-After") == "" {
		t.Fatalf("status %d Retry-After %q, want 503 with Retry-After", w.Code, w.Header().Get("Retry-After"))
	}
	if strings.Contains(w.Body.String(), "connection refused") {
		t.Errorf("503 body leaks backend detail: %s", w.Body.String())
	}
}

func newCache(t testing.TB) *cache.Store {
	t.Helper()
	c, err := cache.New(cache.Options{MaxBytes: 64 << 20, Now: func() time.Time { return fixedNow }})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	return c
}

// TestCacheNeverSharesAcrossTenantsOrPermissions requests one URL as every
// user, concurrently and repeatedly: each tenant/permission level gets its
// own body, and users with the same tenant and permissions share one entry.
func TestCacheNeverSharesAcrossTenantsOrPermissions(t *testing.T) {
	fb := newFake()
	s := newServer(t, fb, proxy.Options{Cache: newCache(t)})
	const target = "/au/properties.xml?detail=full"
	want := map[string]string{}
	for _, u := range []string{"harbour", "harbour-noprice", "summit"} {
		uncached := newServer(t, newFake(), proxy.Options{})
		want[u] = get(uncached, "GET", u, target).Body.String()
	}
	want["harbour-2"] = want["harbour"]
	if want["harbour"] == want["harbour-noprice"] || want["harbour"] == want["summit"] {
		t.Fatal("fixture bodies must differ between tenants and permission levels")
	}
	var wg sync.WaitGroup
	for range 20 {
		for u, body := range want {
			wg.Go(func() {
				if got := get(s, "GET", u, target).Body.String(); got != body {
					t.Errorf("user %s got another body:\n%s", u, got)
				}
			})
		}
	}
	wg.Wait()
	// harbour and harbour-2 share an entry: 3 fills, not 4.
	if got := fb.Calls(); got != 3 {
		t.Errorf("backend calls = %d, want 3 (one per tenant/permission level)", got)
	}
	short := get(s, "GET", "harbour-short", "/au/properties.xml").Body.String()
	if strings.Contains(short, "<price>") {
		t.Errorf("short user got full detail: %s", short)
	}
}

func TestETagGzipHead(t *testing.T) {
	s := newServer(t, newFake(), proxy.Options{Cache: newCache(t)})
	first := get(s, "GET", "harbour", "/au/properties.xml?detail=full")
	if got := first.Header().Get("Cache-Status"); !strings.Contains(got, "fwd=miss") {
		t.Errorf("first Cache-Status = %q, want a miss", got)
	}
	etag := first.Header().Get("ETag")
	if etag == "" || first.Header().Get("Content-Encoding") != "" {
		t.Fatalf("ETag %q, Content-Encoding %q", etag, first.Header().Get("Content-Encoding"))
	}
	second := get(s, "GET", "harbour", "/au/properties.xml?detail=full")
	if got := second.Header().Get("Cache-Status"); got != "listingproxy; hit" {
		t.Errorf("second Cache-Status = %q, want a hit", got)
	}
	if second.Header().Get("Age") == "" {
		t.Error("hit without Age")
	}
	nm := get(s, "GET", "harbour", "/au/properties.xml?detail=full", "If-None-Match", etag)
	if nm.Code != http.StatusNotModified || nm.Body.Len() != 0 {
		t.Errorf("If-None-Match: status %d, body %d bytes; want 304, empty", nm.Code, nm.Body.Len())
	}
	gz := get(s, "GET", "harbour", "/au/properties.xml?detail=full", "Accept-Encoding", "br, gzip;q=0.8")
	if gz.Header().Get("Content-Encoding") == "gzip" {
		zr, err := gzip.NewReader(gz.Body)
		if err != nil {
			t.Fatal(err)
		}
		plain, _ := io.ReadAll(zr)
		if !bytes.Equal(plain, first.Body.Bytes()) {
			t.Error("gzip body does not decompress to the plain body")
		}
		if gz.Header().Get("ETag") == etag {
			t.Error("gzip and identity representations share a strong ETag")
		}
	}
	nogz := get(s, "GET", "harbour", "/au/properties.xml?detail=full", "Accept-Encoding", "gzip;q=0")
	if nogz.Header().Get("Content-Encoding") != "" {
		t.Error("gzip sent to a client that refused it")
	}
	head := get(s, "HEAD", "harbour", "/au/properties.xml?detail=full")
	if head.Code != 200 || head.Body.Len() != 0 || head.Header().Get("Content-Length") != first.Header().Get("Content-Length") {
		t.Errorf("HEAD: status %d, body %d bytes, Content-Length %q; want 200, empty, %q",
			head.Code, head.Body.Len(), head.Header().Get("Content-Length"), first.Header().Get("Content-Length"))
	}
}

func TestMalformedQueryIsAnErrorList(t *testing.T) {
	s := newServer(t, newFake(), proxy.Options{})
	tests := map[string]string{
		"bad escape":      "/au/properties.json?status=%zz",
		"semicolon":       "/au/properties.json?status=sold;limit=1",
		"too many params": "/au/properties.json?" + strings.Repeat("x=1&", 10001),
	}
	for name, target := range tests {
		t.Run(name, func(t *testing.T) {
			w := get(s, "GET", "harbour", target)
			if w.Code != 200 || !strings.HasPrefix(w.Body.String(), `{"errors":{"count":"1","error":{"field":"query","message":`) {
				t.Errorf("status %d body %s; want the error list on field query", w.Code, w.Body)
			}
		})
	}
}
