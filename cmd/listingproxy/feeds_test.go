package main

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/json"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"golang.org/x/crypto/bcrypt"

	"listingproxy/config"
	"listingproxy/internal/crmchanges"
	"listingproxy/internal/testkit"
	"listingproxy/proxy"
	"listingproxy/upstream/sqlstore"
	"listingproxy/upstream/sqlstore/demo"
	"listingproxy/upstream/webhook"
)

// crmStandIn is cmd/legacy-crm in process: the demo data behind the API
// (listingproxy's own surface with no cache) for harbour and summit, and
// POST /_crm/changes, whose webhooks go to hooks (set once the proxy
// under test exists).
type crmStandIn struct {
	srv   *httptest.Server
	hooks http.Handler
}

const summitSecret, harbourSecret = "summit-webhook-secret", "harbour-webhook-secret"

func newCRMStandIn(t *testing.T) *crmStandIn {
	t.Helper()
	ctx := context.Background()
	dsn := filepath.Join(t.TempDir(), "crm.db")
	st, err := sqlstore.Open(ctx, sqlstore.Config{DSN: dsn, Now: func() time.Time { return goldenNow }})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	if err := st.Migrate(ctx); err != nil {
		t.Fatal(err)
	}
	if err := st.SeedDemo(ctx, demo.Options{Now: goldenNow}); err != nil {
		t.Fatal(err)
	}
	var users []proxy.User
	var tenants []proxy.Tenant
	for _, tn := range []string{"harbour", "summit"} {
		h, _ := bcrypt.GenerateFromPassword([]byte(tn+"-crm"), bcrypt.MinCost)
		users = append(users, proxy.User{Username: tn, PasswordHash: h, Tenant: tn, Permissions: proxy.PermFull | proxy.PermPrices})
		tenants = append(tenants, proxy.Tenant{Name: tn, Backend: st, BackendName: "sql", Upstream: tn})
	}
	api, err := proxy.New(users, tenants, proxy.Options{Now: func() time.Time { return goldenNow }})
	if err != nil {
		t.Fatal(err)
	}
	wdb, err := crmchanges.OpenWriter(dsn)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { wdb.Close() })
	c := &crmStandIn{}
	hookSrv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { c.hooks.ServeHTTP(w, r) }))
	t.Cleanup(hookSrv.Close)
	mux := http.NewServeMux()
	mux.Handle("POST /_crm/changes", crmchanges.New(wdb, crmchanges.Options{Now: time.Now,
		WebhookURL: hookSrv.URL + "/hooks/changes/{tenant}", Secrets: map[string][]byte{"summit": []byte(summitSecret)}}))
	mux.Handle("/", api)
	c.srv = httptest.NewServer(mux)
	t.Cleanup(c.srv.Close)
	return c
}

// change asks the stand-in for a change and returns its answer.
func (c *crmStandIn) change(t *testing.T, body string) (id int64, hook int) {
	t.Helper()
	resp, err := http.Post(c.srv.URL+"/_crm/changes", "application/json", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var out struct {
		ID      int64 `json:"id"`
		Webhook int   `json:"webhook"`
	}
	if resp.StatusCode != 200 || json.NewDecoder(resp.Body).Decode(&out) != nil {
		t.Fatalf("change %s: %s", body, resp.Status)
	}
	return out.ID, out.Webhook
}

// crmFeedApp is listingproxy in front of the stand-in: summit with a
// webhook secret, harbour without, the CRM polled every poll (0: never);
// a one-hour ttl, so only a feed can explain a new body.
func crmFeedApp(t *testing.T, crm *crmStandIn, poll string) *app {
	t.Helper()
	return newAppFrom(t, crmFeedConfig(t, crm, poll, ""))
}

// crmFeedConfig writes crmFeedApp's configuration, with extra cache keys
// (indented for cache:) and returns its path.
func crmFeedConfig(t *testing.T, crm *crmStandIn, poll, cacheExtra string) string {
	t.Helper()
	hash := func(pw string) string {
		h, _ := bcrypt.GenerateFromPassword([]byte(pw), bcrypt.MinCost)
		return string(h)
	}
	cfg := `listen: "127.0.0.1:0"
admin_listen: "127.0.0.1:0"
countries: [au, nz]
backends:
  legacy: {kind: crm, url: "` + crm.srv.URL + `", poll_interval: ` + poll + `}
tenants:
  summit: {backend: legacy, upstream_username: summit, upstream_password: summit-crm, webhook_secret: "` + summitSecret + `"}
  harbour: {backend: legacy, upstream_username: harbour, upstream_password: harbour-crm}
users:
  - {username: summit, password_bcrypt: "` + hash("summit-demo") + `", tenant: summit, permissions: [full, prices]}
  - {username: harbour, password_bcrypt: "` + hash("harbour-demo") + `", tenant: harbour, permissions: [full, prices]}
  - {username: harbour-short, password_bcrypt: "` + hash("harbour-demo") + `", tenant: harbour, permissions: []}
cache:
  ttl: 1h
` + cacheExtra
	path := filepath.Join(t.TempDir(), "config.yaml")
	if err := os.WriteFile(path, []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

var priceText = regexp.MustCompile(`"price":"([^"]*)"`)

// firstOf returns the id and price text of user's first property in au.
func firstOf(t *testing.T, a *app, user string) (id, price string) {
	t.Helper()
	w := demoGet(t, a.handler, user, "/au/properties.json?detail=full&limit=1")
	m := regexp.MustCompile(`"id":"(\d+)"`).FindStringSubmatch(w.Body.String())
	p := priceText.FindStringSubmatch(w.Body.String())
	if m == nil || p == nil {
		t.Fatalf("%s's first property: %d %s", user, w.Code, w.Body.String())
	}
	return m[1], p[1]
}

// TestCRMWebhookPurgesTheChange: a change made in the CRM, whose signed
// webhook reaches listingproxy, is served at once (within the one-hour ttl)
// to the tenant whose secret signed it; the other tenant's bodies stay
// cached. A webhook with a bad signature or replayed purges nothing.
func TestCRMWebhookPurgesTheChange(t *testing.T) {
	crm := newCRMStandIn(t)
	a := crmFeedApp(t, crm, "0s")
	crm.hooks = a.handler
	id, _ := firstOf(t, a, "summit")
	single := "/au/properties/" + id + ".json"
	before := demoGet(t, a.handler, "summit", single).Body.String()
	harbourList := demoGet(t, a.handler, "harbour", "/au/properties.json").Body.String()
	if cs := demoGet(t, a.handler, "summit", single).Header().Get("Cache-Status"); !strings.Contains(cs, "hit") {
		t.Fatalf("summit's property is not cached: %s", cs)
	}

	// A forged and a replayed webhook purge nothing.
	body := []byte(`{"changes":[{"resource":"property","op":"update","ids":[` + id + `]}]}`)
	ts, sig := webhook.Sign([]byte("not-the-secret-at-all"), time.Now(), body)
	if code := postHook(t, a, "summit", ts, sig, body); code != http.StatusUnauthorized {
		t.Errorf("forged webhook: %d, want 401", code)
	}
	ts, sig = webhook.Sign([]byte(summitSecret), time.Now(), body)
	if code := postHook(t, a, "summit", ts, sig, body); code != 200 {
		t.Fatalf("good webhook: %d, want 200", code)
	}
	demoGet(t, a.handler, "summit", single) // refill after that purge
	if code := postHook(t, a, "summit", ts, sig, body); code != http.StatusUnauthorized {
		t.Errorf("replayed webhook: %d, want 401", code)
	}
	if cs := demoGet(t, a.handler, "summit", single).Header().Get("Cache-Status"); !strings.Contains(cs, "hit") {
		t.Errorf("after a replayed webhook summit's property is %s, want still cached", cs)
	}

	// The CRM changes the property and sends its webhook.
	if _, hook := crm.change(t, `{"tenant":"summit","op":"update","id":`+id+`}`); hook != 200 {
		t.Fatalf("the CRM's webhook got %d, want 200", hook)
	}
	after := demoGet(t, a.handler, "summit", single)
	if after.Body.String() == before || !strings.Contains(after.Body.String(), "Offers from") {
		t.Errorf("summit's property after the change: %s, want the new price text", after.Body.String())
	}
	hl := demoGet(t, a.handler, "harbour", "/au/properties.json")
	if !strings.Contains(hl.Header().Get("Cache-Status"), "hit") || hl.Body.String() != harbourList {
		t.Errorf("harbour's list after summit's change: %s, want it cached and unchanged", hl.Header().Get("Cache-Status"))
	}
}

func postHook(t *testing.T, a *app, tenant, ts, sig string, body []byte) int {
	t.Helper()
	r := httptest.NewRequest("POST", "/hooks/changes/"+tenant, bytes.NewReader(body))
	r.Header.Set(webhook.HeaderTimestamp, ts)
	r.Header.Set(webhook.HeaderSignature, sig)
	w := httptest.NewRecorder()
	a.handler.ServeHTTP(w, r)
	return w.Code
}

// TestCRMPollerPurgesTheChange: with poll_interval, a change made in the
// CRM without any webhook is served once the poller has seen it, for
// every permission level of that tenant; a property inserted appears in
// the tenant's lists; the other tenant's cached bodies stay.
func TestCRMPollerPurgesTheChange(t *testing.T) {
	crm := newCRMStandIn(t)
	a := crmFeedApp(t, crm, "1s")
	// The poller's first pass purges each tenant once (a gap for each
	// tenant and country): wait for all four.
	testkit.WaitFor(t, "the poller's first pass", func() bool {
		return strings.Contains(scrape(t, a), `listingproxy_change_feed_gaps_total{backend="legacy",feed="poll"} 4`)
	})
	id, price := firstOf(t, a, "harbour")
	short := demoGet(t, a.handler, "harbour-short", "/au/properties.json?limit=1").Body.String()
	summit := demoGet(t, a.handler, "summit", "/au/properties.json").Body.String()
	if _, hook := crm.change(t, `{"tenant":"harbour","op":"update","id":`+id+`}`); hook != 0 {
		t.Fatalf("harbour has no webhook secret, yet one was sent (%d)", hook)
	}
	testkit.WaitFor(t, "the poller to purge the changed property", func() bool {
		_, p := firstOf(t, a, "harbour")
		return p != price
	})
	if s := demoGet(t, a.handler, "harbour-short", "/au/properties.json?limit=1"); s.Body.String() == short {
		t.Errorf("harbour-short's list still shows the old last_updated (%s): %s", s.Header().Get("Cache-Status"), s.Body.String())
	}
	sw := demoGet(t, a.handler, "summit", "/au/properties.json")
	if !strings.Contains(sw.Header().Get("Cache-Status"), "hit") || sw.Body.String() != summit {
		t.Errorf("summit's list after harbour's change: %s, want it cached and unchanged", sw.Header().Get("Cache-Status"))
	}
	// An insert appears in harbour's lists.
	newID, _ := crm.change(t, `{"tenant":"harbour","op":"insert","copy_of":`+id+`}`)
	target := "/au/properties.json?order=id&offset=0&limit=1000"
	testkit.WaitFor(t, "the inserted property in harbour's list", func() bool {
		return strings.Contains(demoGet(t, a.handler, "harbour", target).Body.String(), `"id":"`+itoa64(newID)+`"`)
	})
}

func itoa64(n int64) string { return strconv.FormatInt(n, 10) }

// scrape returns the app's metrics page.
func scrape(t *testing.T, a *app) string {
	t.Helper()
	r := httptest.NewRequest("GET", "/metrics", nil)
	w := httptest.NewRecorder()
	a.admin.ServeHTTP(w, r)
	return w.Body.String()
}

// TestFleetPollsOnce: three replicas sharing a Redis tier and a CRM with
// poll_interval run one poller between them (one holds the feed's lease);
// a change in the CRM is purged by that one and reaches the others through
// the tier, each serving the new body; when the holder is stopped another
// takes the feed over and the next change is seen as well.
func TestFleetPollsOnce(t *testing.T) {
	t.Parallel() // its own stand-in, apps and Redis key prefix; it waits on real lease times
	addr := os.Getenv("LISTINGPROXY_TEST_REDIS_ADDR")
	if addr == "" {
		t.Skip("LISTINGPROXY_TEST_REDIS_ADDR is not set: set it to a Redis host:port (CI does) to run the fleet tests")
	}
	crm := newCRMStandIn(t)
	path := crmFeedConfig(t, crm, "1s", "  shared:\n    addrs: [\""+addr+"\"]\n    key_prefix: \"lptest:"+rand.Text()[:10]+":\"\n")
	apps := make([]*app, 3)
	closed := make([]bool, 3)
	for i := range apps {
		cfg, err := config.Load(path, func(string) string { return "" })
		if err != nil {
			t.Fatal(err)
		}
		a, err := build(context.Background(), cfg, slog.New(slog.DiscardHandler), time.Now)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() {
			if !closed[i] {
				a.Close()
			}
		})
		testkit.WaitFor(t, "the replica to read the fleet's purges", a.shared.Synced)
		apps[i] = a
	}
	const held = `listingproxy_change_feed_held{backend="legacy",feed="poll"} 1`
	holders := func() []int {
		var out []int
		for i, a := range apps {
			if !closed[i] && strings.Contains(scrape(t, a), held) {
				out = append(out, i)
			}
		}
		return out
	}
	testkit.WaitFor(t, "one replica to hold the poller", func() bool { return len(holders()) == 1 })
	holder := holders()[0]
	polls := func(a *app) string {
		return regexp.MustCompile(`listingproxy_cache_purges_total\{kind="entity",mode="soft",source="poll"\} \d+`).FindString(scrape(t, a))
	}
	// Wait for the holder's first pass (a gap per tenant and country).
	testkit.WaitFor(t, "the poller's first pass", func() bool {
		return strings.Contains(scrape(t, apps[holder]), `listingproxy_change_feed_gaps_total{backend="legacy",feed="poll"} 4`)
	})
	change := func(what string) {
		t.Helper()
		id, price := firstOf(t, apps[0], "harbour")
		for i, a := range apps {
			if !closed[i] {
				firstOf(t, a, "harbour") // every live replica holds the old body
			}
		}
		crm.change(t, `{"tenant":"harbour","op":"update","id":`+id+`}`)
		for i, a := range apps {
			if closed[i] {
				continue
			}
			testkit.WaitFor(t, what+": the new body on every replica", func() bool {
				_, p := firstOf(t, a, "harbour")
				return p != price
			})
		}
	}
	change("a change")
	for i, a := range apps {
		if got := polls(a); (i == holder) != (got != "") {
			t.Errorf("replica %d (holder %d): entity purges by the poller %q; want them on the holder alone", i, holder, got)
		}
	}
	if got := len(holders()); got != 1 {
		t.Errorf("%d replicas hold the poller, want 1", got)
	}

	apps[holder].Close() // it releases the lease as it stops
	closed[holder] = true
	testkit.WaitFor(t, "another replica to take the poller over", func() bool { return len(holders()) == 1 })
	next := holders()[0]
	testkit.WaitFor(t, "the new holder's first pass", func() bool {
		return strings.Contains(scrape(t, apps[next]), `listingproxy_change_feed_gaps_total{backend="legacy",feed="poll"} 4`)
	})
	change("a change after the take-over")
}
