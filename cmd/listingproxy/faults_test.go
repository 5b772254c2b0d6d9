package main

import (
	"io"
	"net/http"
	"net/url"
	"os"
	"strings"
	"testing"
	"time"

	"listingproxy/internal/tcpproxy"
)

// proxiedPostgres is engineConfig on a fresh PostgreSQL schema, reached
// through a TCP proxy the test can stop (every connection dropped, new ones
// refused) and start again, as a database restart would. edits are applied
// to the configuration text (old, new pairs; each must match). The proxy
// starts stopped when down is set.
func proxiedPostgres(t *testing.T, extra string, down bool, edits ...string) (path string, px *tcpproxy.Proxy) {
	t.Helper()
	path, dsn := engineConfig(t, "postgres", extra)
	u, err := url.Parse(dsn)
	if err != nil {
		t.Fatal(err)
	}
	px, err = tcpproxy.Listen("127.0.0.1:0", u.Host)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(px.Close)
	if down {
		px.Stop()
	}
	proxied := *u
	proxied.Host = px.Addr()
	edits = append(edits, "dsn: '"+dsn+"'", "dsn: '"+proxied.String()+"'")
	src, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	s := string(src)
	for i := 0; i < len(edits); i += 2 {
		if !strings.Contains(s, edits[i]) {
			t.Fatalf("config has no %q to edit", edits[i])
		}
		s = strings.Replace(s, edits[i], edits[i+1], 1)
	}
	if err := os.WriteFile(path, []byte(s), 0o600); err != nil {
		t.Fatal(err)
	}
	return path, px
}

type reply struct {
	status     int
	retryAfter string
	cache      string
	body       string
}

// get makes an authenticated request to the public listener.
func get(t *testing.T, client *http.Client, base, user, target string) reply {
	t.Helper()
	req, _ := http.NewRequest("GET", base+target, nil)
	req.SetBasicAuth(user, map[string]string{"summit": "summit-demo"}[user]+map[string]string{"harbour": "harbour-demo"}[user])
	resp, err := client.Do(req)
	if err != nil {
		t.Fatalf("GET %s: %v", target, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("GET %s: reading the body: %v", target, err)
	}
	return reply{resp.StatusCode, resp.Header.Get("Retry-After"), resp.Header.Get("Cache-Status"), string(b)}
}

// TestRunStartsWithTheDatabaseDown: run starts although its PostgreSQL
// backend refuses connections; its tenants get the spec's 503 with
// Retry-After; once the database accepts, the store migrates and seeds it
// on its own and requests succeed, without a restart.
func TestRunStartsWithTheDatabaseDown(t *testing.T) {
	path, px := proxiedPostgres(t, "", true, "open_for: 15s", "open_for: 100ms")
	base, _ := startRun(t, path)
	client := &http.Client{Transport: &http.Transport{}, Timeout: 20 * time.Second}
	const unavailable = `{"error":"The listing service is temporarily unavailable; please try again shortly"}`
	for range 3 {
		a := get(t, client, base, "harbour", "/au/properties.json?limit=2")
		if a.status != http.StatusServiceUnavailable || a.retryAfter == "" || strings.TrimSpace(a.body) != unavailable {
			t.Fatalf("with the database down: %d Retry-After %q body %s; want 503, Retry-After and %s", a.status, a.retryAfter, a.body, unavailable)
		}
	}
	if err := px.Start(); err != nil {
		t.Fatal(err)
	}
	eventually(t, "a 200 once the database accepts", func() bool {
		a := get(t, client, base, "harbour", "/au/properties.json?limit=2")
		return a.status == 200 && strings.HasPrefix(a.body, `{"properties":{"count":"2",`)
	})
}
