package main

import (
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"listingproxy/internal/tcpproxy"
	"listingproxy/internal/testkit"
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
	base, admin := startRun(t, path)
	client := &http.Client{Transport: &http.Transport{}, Timeout: 20 * time.Second}
	backendReady := func() string {
		resp, err := client.Get(admin + "/metrics")
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		m := regexp.MustCompile(`(?m)^listingproxy_backend_ready\{backend="demo"\} (\d)$`).FindStringSubmatch(string(b))
		if m == nil {
			t.Fatal("/metrics has no listingproxy_backend_ready for backend demo")
		}
		return m[1]
	}
	if got := backendReady(); got != "0" {
		t.Errorf("listingproxy_backend_ready with the database down = %s, want 0", got)
	}
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
	testkit.WaitFor(t, "a 200 once the database accepts", func() bool {
		a := get(t, client, base, "harbour", "/au/properties.json?limit=2")
		return a.status == 200 && strings.HasPrefix(a.body, `{"properties":{"count":"2",`)
	})
	if got := backendReady(); got != "1" {
		t.Errorf("listingproxy_backend_ready once the database answers = %s, want 1", got)
	}
}

// TestRunServesWarmKeysThroughADatabaseRestart: with notify: true, a
// PostgreSQL restart (the test's proxy stopped, every connection dropped,
// then started again) never costs a warm key its body. While the database
// is down, cold requests open the breaker (open_for: 10m, so it stays open);
// when it is back, the change listener reconnects and purges every tenant,
// softly: the warm keys, now stale with the breaker still open, are served
// under stale_if_error. Every answer to a warm key, throughout, is a 200
// with the body it had. (A hard purge here answers 503.)
func TestRunServesWarmKeysThroughADatabaseRestart(t *testing.T) {
	path, px := proxiedPostgres(t, "    notify: true", false, "open_for: 15s", "open_for: 10m")
	base, _ := startRun(t, path)
	client := &http.Client{Transport: &http.Transport{}, Timeout: 20 * time.Second}
	type key struct{ user, target string }
	var keys []key
	for _, u := range []string{"harbour", "summit"} {
		for _, target := range []string{"/au/properties.json?limit=2", "/au/properties.xml?limit=5&detail=full", "/nz/agents.json?limit=3"} {
			keys = append(keys, key{u, target})
		}
	}
	bodies := map[key]string{}
	for _, k := range keys {
		a := get(t, client, base, k.user, k.target)
		if a.status != 200 {
			t.Fatalf("warming %s %s: %d %s", k.user, k.target, a.status, a.body)
		}
		bodies[k] = a.body
	}
	staleServed := 0
	checkWarm := func(phase string) {
		t.Helper()
		for _, k := range keys {
			a := get(t, client, base, k.user, k.target)
			if a.status != 200 || a.body != bodies[k] {
				t.Fatalf("%s: %s %s answered %d (%s) %.200s; want 200 with its warm body", phase, k.user, k.target, a.status, a.cache, a.body)
			}
			if a.cache == "listingproxy; hit; detail=stale-if-error" {
				staleServed++
			}
		}
	}
	checkWarm("database up")

	px.Stop()
	checkWarm("database down")
	// Cold requests fail until each tenant's breaker opens (a Retry-After
	// of minutes is open_for's), warm keys checked in between.
	for _, u := range []string{"harbour", "summit"} {
		for i := 0; ; i++ {
			a := get(t, client, base, u, fmt.Sprintf("/au/properties.json?limit=%d", 100+i))
			if a.status != http.StatusServiceUnavailable {
				t.Fatalf("cold request with the database down: %d, want 503", a.status)
			}
			if ra, _ := strconv.Atoi(a.retryAfter); ra >= 60 {
				break
			}
			if i == 200 {
				t.Fatalf("%s's breaker never opened (last Retry-After %q)", u, a.retryAfter)
			}
			checkWarm("database down, breaker opening")
		}
	}
	checkWarm("database down, breaker open")

	if err := px.Start(); err != nil {
		t.Fatal(err)
	}
	// The listener reconnects and soft-purges: warm keys then come from
	// stale_if_error (the breaker is still open). Wait for that, checking
	// every answer on the way.
	testkit.WaitFor(t, "the reconnected listener's purge shows (stale-if-error)", func() bool {
		checkWarm("database back, breaker open")
		return staleServed > 0
	})
	checkWarm("after the purge")
}
