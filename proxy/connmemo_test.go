package proxy_test

import (
	"context"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

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
