package proxy_test

import (
	"context"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"listingproxy/proxy"
)

// connServer serves s over real keep-alive connections with
// proxy.ConnContext, as the public listener does; each client it returns
// holds one connection at most, and conns counts the connections opened.
func connServer(t *testing.T, s http.Handler) (client func() *http.Client, url string, conns func() int) {
	t.Helper()
	srv := httptest.NewUnstartedServer(s)
	srv.Config.ConnContext = proxy.ConnContext
	opened := make(chan struct{}, 1000)
	srv.Config.ConnState = func(_ net.Conn, st http.ConnState) {
		if st == http.StateNew {
			opened <- struct{}{}
		}
	}
	srv.Start()
	t.Cleanup(srv.Close)
	client = func() *http.Client {
		tr := &http.Transport{MaxConnsPerHost: 1, MaxIdleConnsPerHost: 1}
		t.Cleanup(tr.CloseIdleConnections)
		return &http.Client{Transport: tr}
	}
	return client, srv.URL, func() int { return len(opened) }
}

// fetchAs asks url on c with the Authorization header auth.
func fetchAs(t *testing.T, c *http.Client, url, auth string) (int, string) {
	t.Helper()
	r, err := http.NewRequestWithContext(context.Background(), "GET", url, nil)
	if err != nil {
		t.Fatal(err)
	}
	r.Header.Set("Authorization", auth)
	resp, err := c.Do(r)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp.StatusCode, string(b)
}

// TestConnMemo: a connection remembers the Authorization header first
// verified on it, so its next requests with that header need neither the
// verified memo nor a password check; any other header on it is checked
// as before (a wrong one refused, another user's answered as that user:
// tenants and permission levels never share a body), and after a reload
// the header is checked against the new users.
func TestConnMemo(t *testing.T) {
	t.Run("each connection keeps its own user past the verified memo", func(t *testing.T) {
		// A one-entry verified memo: harbour and summit evict each other
		// (TestAuthMemo counts 4 checks for this sequence on one
		// connection-less handler); each on its own connection, 2.
		s, c := authServer(t, proxy.AuthOptions{VerifiedEntries: 1}, newClock())
		client, url, conns := connServer(t, s)
		clients := map[string]*http.Client{"harbour": client(), "summit": client()}
		for range 3 {
			for _, u := range []string{"harbour", "summit"} {
				code, body := fetchAs(t, clients[u], url+"/au/properties/1.json", basic(u))
				if code != 200 {
					t.Fatalf("%s: status %d", u, code)
				}
				if found := !strings.Contains(body, `"error"`); found != (u == "harbour") {
					t.Errorf("%s sees property 1 = %v; only harbour owns it: %s", u, found, body)
				}
			}
		}
		if got := c.n.Load(); got != 2 {
			t.Errorf("checks = %d, want 2 (one per user; later requests answered by their connection's memo)", got)
		}
		if got := conns(); got != 2 {
			t.Errorf("connections = %d, want 2", got)
		}
	})
	t.Run("other headers on a connection are checked, bodies apart", func(t *testing.T) {
		s := newServer(t, newFake(), proxy.Options{Cache: newCache(t), Auth: proxy.AuthOptions{RefusalDelay: -1}})
		client, url, conns := connServer(t, s)
		const target = "/au/properties.xml?detail=full"
		want := map[string]string{}
		for _, u := range []string{"harbour", "harbour-noprice", "summit"} {
			want[u] = get(newServer(t, newFake(), proxy.Options{}), "GET", u, target).Body.String()
		}
		if want["harbour"] == want["harbour-noprice"] || want["harbour"] == want["summit"] {
			t.Fatal("fixture bodies must differ between tenants and permission levels")
		}
		one := client()
		// harbour twice first: the second request stores it in the
		// connection's memo; the others follow on the same connection.
		for _, u := range []string{"harbour", "harbour", "summit", "harbour-noprice", "harbour", "summit", "harbour-noprice", "harbour"} {
			code, body := fetchAs(t, one, url+target, basic(u))
			if code != 200 || body != want[u] {
				t.Errorf("%s on harbour's connection: status %d, body\n%s\nwant\n%s", u, code, body, want[u])
			}
		}
		right := basic("harbour")
		for _, auth := range []string{basicRaw("harbour:wrong"), right[:len(right)-2] + "x=", right + "x"} {
			if code, _ := fetchAs(t, one, url+target, auth); code != http.StatusUnauthorized {
				t.Errorf("%q on harbour's connection: status %d, want 401", auth, code)
			}
		}
		if code, body := fetchAs(t, one, url+target, right); code != 200 || body != want["harbour"] {
			t.Errorf("harbour after the refusals: status %d", code)
		}
		if got := conns(); got != 1 {
			t.Errorf("connections = %d, want 1", got)
		}
	})
	t.Run("headers of every length around the memo's inline bound", func(t *testing.T) {
		// Pairs of users of one name length, of two tenants, whose
		// headers differ: their lengths (a Basic header's are 6 + 4k) run
		// across the bytes a connection's memo holds in itself (128), and
		// one is far past it.
		var users []proxy.User
		var lengths []int
		for n := 70; n <= 100; n++ {
			lengths = append(lengths, n)
		}
		lengths = append(lengths, 300)
		name := func(tenant string, n int) string { return tenant + strings.Repeat("x", n-len(tenant)) }
		for _, n := range lengths {
			users = append(users,
				proxy.User{Username: name("harbour", n), PasswordHash: testHash, Tenant: "harbour", Permissions: proxy.PermFull},
				proxy.User{Username: name("summit", n), PasswordHash: testHash, Tenant: "summit", Permissions: proxy.PermFull})
		}
		c := &checks{}
		fb := newFake()
		s, err := proxy.New(users, []proxy.Tenant{
			{Name: "harbour", Backend: fb, BackendName: "fake", Upstream: "harbour"},
			{Name: "summit", Backend: fb, BackendName: "fake", Upstream: "summit"},
		}, proxy.Options{Auth: proxy.AuthOptions{Compare: c.compare, RefusalDelay: -1, VerifiedEntries: 1,
			ChecksPerSecond: -1, AddressFailures: proxy.Limit{PerSecond: 1, Burst: 100}}, Now: func() time.Time { return fixedNow }})
		if err != nil {
			t.Fatal(err)
		}
		client, url, _ := connServer(t, s)
		seen := map[int]bool{}
		fetch := func(c *http.Client, auth string, harbours bool) {
			t.Helper()
			code, body := fetchAs(t, c, url+"/au/properties/1.json", auth)
			if code != 200 {
				t.Fatalf("header of %d bytes: status %d", len(auth), code)
			}
			if found := !strings.Contains(body, `"error"`); found != harbours {
				t.Errorf("header of %d bytes (harbour's: %v) sees property 1 = %v; only harbour owns it", len(auth), harbours, found)
			}
		}
		wrong := map[int]bool{}
		for _, n := range lengths {
			h, su := basicRaw(name("harbour", n)+":"+password), basicRaw(name("summit", n)+":"+password)
			if len(h) != len(su) || h == su {
				t.Fatalf("length %d: the two headers must be as long and differ", n)
			}
			seen[len(h)] = true
			// Each on its own connection, in turn: the one-entry
			// verified memo holds only the last, so each connection's
			// later requests are answered by its own memo.
			hc, sc := client(), client()
			before := c.n.Load()
			for range 3 {
				fetch(hc, h, true)
				fetch(sc, su, false)
			}
			if got := c.n.Load() - before; got != 2 {
				t.Errorf("header of %d bytes: checks = %d, want 2 (one per user, then each connection's memo)", len(h), got)
			}
			// The other user's header of the same length on harbour's
			// connection is that user's, and harbour's after it still
			// harbour's.
			fetch(hc, su, false)
			fetch(hc, h, true)
			if !wrong[len(h)] && (len(h) == 122 || len(h) == 126 || len(h) == 130 || n == 300) {
				wrong[len(h)] = true
				if code, _ := fetchAs(t, hc, url+"/au/properties/1.json", h[:len(h)-2]+"A="); code != http.StatusUnauthorized {
					t.Errorf("header of %d bytes with a byte changed: status %d, want 401", len(h), code)
				}
			}
		}
		if !seen[122] || !seen[126] || !seen[130] || len(wrong) != 4 {
			t.Errorf("header lengths %v do not run across 128", seen)
		}
	})
	t.Run("a reload checks the header again", func(t *testing.T) {
		s, c := authServer(t, proxy.AuthOptions{}, newClock())
		client, url, _ := connServer(t, s)
		one := client()
		for range 3 {
			if code, _ := fetchAs(t, one, url+"/au/agents.json", basic("harbour")); code != 200 {
				t.Fatalf("status %d", code)
			}
		}
		if got := c.n.Load(); got != 1 {
			t.Fatalf("checks = %d, want 1", got)
		}
		var others []proxy.User
		for _, u := range testUsers() {
			if u.Username != "harbour" {
				others = append(others, u)
			}
		}
		if err := s.Reload(others, proxy.ReloadOptions{}); err != nil {
			t.Fatal(err)
		}
		if code, _ := fetchAs(t, one, url+"/au/agents.json", basic("harbour")); code != http.StatusUnauthorized {
			t.Errorf("harbour removed by a reload, on its connection: status %d, want 401", code)
		}
		if err := s.Reload(testUsers(), proxy.ReloadOptions{}); err != nil {
			t.Fatal(err)
		}
		before := c.n.Load()
		for range 3 {
			if code, _ := fetchAs(t, one, url+"/au/agents.json", basic("harbour")); code != 200 {
				t.Errorf("harbour back after a reload: status %d", code)
			}
		}
		if got := c.n.Load() - before; got != 1 {
			t.Errorf("checks after the reload = %d, want 1 (the new users' check, then the connection's memo)", got)
		}
	})
}
