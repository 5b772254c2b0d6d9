package main

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"golang.org/x/crypto/bcrypt"

	"listingproxy/cache"
	"listingproxy/docdiff"
	"listingproxy/proxy"
	"listingproxy/upstream/crm"
	"listingproxy/upstream/sqlstore"
)

// fidelityNow is the fixed clock of both sides: the demo data is generated
// around it and open homes are filtered by it, so documents are stable.
var fidelityNow = time.Date(2026, 11, 21, 0, 0, 0, 0, time.UTC)

func fixedNow() time.Time { return fidelityNow }

// apiUsers exist on both sides with the same passwords and permissions: a
// client gets the same answer from the legacy endpoint and from
// listingproxy in front of it.
var apiUsers = []userSpec{
	{"harbour", "harbour-demo", "harbour", proxy.PermFull | proxy.PermPrices},
	{"harbour-noprice", "harbour-demo", "harbour", proxy.PermFull},
	{"harbour-short", "harbour-demo", "harbour", 0},
	{"summit", "summit-demo", "summit", proxy.PermFull | proxy.PermPrices},
}

// upstreamUsers exist on the legacy side only: listingproxy's logins there,
// with both permissions, as the crm package requires.
var upstreamUsers = []userSpec{
	{"harbour-up", "harbour-crm", "harbour", proxy.PermFull | proxy.PermPrices},
	{"summit-up", "summit-crm", "summit", proxy.PermFull | proxy.PermPrices},
}

var upstreamCredentials = map[string]crm.Credential{
	"harbour": {Username: "harbour-up", Password: "harbour-crm"},
	"summit":  {Username: "summit-up", Password: "summit-crm"},
}

var (
	storeOnce sync.Once
	storeDir  string
	store     *sqlstore.Store
	storeErr  error
)

func TestMain(m *testing.M) {
	code := m.Run()
	if store != nil {
		store.Close()
	}
	if storeDir != "" {
		os.RemoveAll(storeDir)
	}
	os.Exit(code)
}

// demoStore is the demo database at fidelityNow, seeded once per test
// binary (it takes about a second).
func demoStore(t *testing.T) *sqlstore.Store {
	t.Helper()
	storeOnce.Do(func() {
		if storeDir, storeErr = os.MkdirTemp("", "legacy-crm-test"); storeErr != nil {
			return
		}
		dsn := "file:" + filepath.ToSlash(filepath.Join(storeDir, "demo.db"))
		store, storeErr = openStore(context.Background(), dsn, fixedNow, slog.New(slog.DiscardHandler))
	})
	if storeErr != nil {
		t.Fatal(storeErr)
	}
	return store
}

// newLegacy starts the stand-in on the demo data with the given faults.
func newLegacy(t *testing.T, f Faults) (*httptest.Server, *Stats) {
	t.Helper()
	users := append(append([]userSpec(nil), apiUsers...), upstreamUsers...)
	h, stats, err := newHandler(demoStore(t), users, f, handlerOptions{Now: fixedNow})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	return srv, stats
}

// newFront builds listingproxy in front of the legacy endpoint at base: both
// tenants on one crm.Client, the same API users, and the given cache (nil:
// none, so every request reaches the client). The client's timeout is far
// beyond the default: this test is about what is answered, and decoding a
// 900 KB full list under the race detector on a loaded 2-core machine can
// take longer than the default 3 s.
func newFront(t *testing.T, base string, mode crm.HydrateMode, c *cache.Store) (*proxy.Server, *crm.Client) {
	t.Helper()
	return newFrontWith(t, crm.Options{BaseURL: base, Hydrate: mode, Timeout: 2 * time.Minute, PassThrough: true}, c)
}

// newFrontWith is newFront with the crm client's options (credentials and
// clock are filled in).
func newFrontWith(t *testing.T, o crm.Options, c *cache.Store) (*proxy.Server, *crm.Client) {
	t.Helper()
	o.Credentials, o.Now = upstreamCredentials, fixedNow
	client, err := crm.New(o)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(client.Close)
	var users []proxy.User
	for _, u := range apiUsers {
		hash, err := bcrypt.GenerateFromPassword([]byte(u.Password), bcrypt.MinCost)
		if err != nil {
			t.Fatal(err)
		}
		users = append(users, proxy.User{Username: u.Username, PasswordHash: hash, Tenant: u.Tenant, Permissions: u.Perms})
	}
	tenants := []proxy.Tenant{
		{Name: "harbour", Backend: client, BackendName: "crm", Upstream: "harbour"},
		{Name: "summit", Backend: client, BackendName: "crm", Upstream: "summit"},
	}
	srv, err := proxy.New(users, tenants, proxy.Options{Now: fixedNow, Cache: c})
	if err != nil {
		t.Fatal(err)
	}
	return srv, client
}

// request is one entry of the corpus: who asks for what.
type request struct {
	user, password string
	path           string
}

func (r request) String() string { return r.user + " " + r.path }

func passwordOf(user string) string {
	for _, u := range apiUsers {
		if u.Username == user {
			return u.Password
		}
	}
	return ""
}

// fidelityCorpus generates the requests: every criterion of the spec's
// sections 4.1 and 4.3 (alone, combined, and invalid), ordering, paging and
// geo, both formats and both detail levels, single resources found, not
// found, of another tenant or country, and with bad ids, permission errors,
// bad credentials and unknown paths. The demo's ids are global: harbour au
// properties are 1-400 and agents 1-30, harbour nz 401-800 and 31-60,
// summit au 801-1200 and 61-90, summit nz 1201-1600 and 91-120.
func fidelityCorpus() []request {
	var out []request
	add := func(user, path string) {
		out = append(out, request{user: user, password: passwordOf(user), path: path})
	}
	propertyQueries := []string{
		"", "limit=5", "limit=5&offset=10", "offset=395", "limit=0", "limit=abc", "offset=-1",
		"id=5", "id[]=5&id[]=7&id[]=999999", "id=5&status=sold&category=house", "id=abc",
		"agency_id=HB-AU-00017", "agency_id[]=HB-AU-00017&agency_id[]=HB-AU-00020&id=", "agency_id=SM-AU-00001",
		"agent_id=3&limit=10", "agent_id[]=3&agent_id[]=4&limit=10", "agent_id=x",
		"street_number=12&limit=10", "street_name=Beach%20Road&limit=10", "street_name=beach+road&street_number=5",
		"price_from=500000&limit=10", "price_to=800000&limit=10", "price_from=500000&price_to=900000&limit=10", "price_from=abc",
		"category=residential&limit=10", "category[]=commercial&category[]=agricultural&limit=10", "category=house",
		"status=current&limit=10", "status[]=sold&status[]=rented&limit=10", "status=CONTRACT&limit=10", "status=bogus",
		"property_type=house&limit=10", "property_type[]=Apartment&property_type[]=Unit&limit=10",
		"price_type=auction&limit=10", "price_type[]=tender&price_type[]=pbn&limit=10",
		"bedrooms=3&limit=10", "bathrooms=2&limit=10", "bedrooms=3&bathrooms=2&limit=10", "bedrooms=-1",
		"geo[lat]=-33.89&geo[long]=151.27&geo[rad]=5", "geo[lat]=-37.8&geo[long]=144.97&geo[rad]=20&order=price&limit=10",
		"geo[lat]=-33.89&geo[long]=151.27", "geo[lat]=100&geo[long]=151&geo[rad]=5",
		"featured=true&limit=10", "featured=false",
		"approved_from=20240101&limit=10", "approved_to=20231231&limit=10", "approved_from=20240101&approved_to=20241231&order[]=approved&offset=5&limit=10",
		"approved_from=2024-01-01", "approved_from=20241231&approved_to=20240101",
		"order=price&limit=10", "order[]=status&order[]=approved&limit=10", "order=suburb&limit=10", "order=last_updated&offset=390",
		"order[]=bedrooms&order[]=bathrooms&limit=10", "order=agency_id&limit=10&offset=5", "order=bogus",
		"detail=bogus", "id=abc&category=house&approved_from=2024-01-01", "status=current&status=sold&limit=10&unknown=1",
		"limit=5&limit=6",
	}
	for _, q := range propertyQueries {
		for _, ext := range []string{"xml", "json"} {
			for _, detail := range []string{"", "&detail=full"} {
				add("harbour", "/au/properties."+ext+"?"+strings.TrimPrefix(q+detail, "&"))
			}
		}
	}
	agentQueries := []string{
		"", "limit=5", "limit=3&offset=2", "id=3", "id[]=3&id[]=4&id[]=999", "id=abc", "id=3&name=nobody",
		"name=Jane%20Smith", "name=jane", "name=nobody-has-this-name", "username=jane.smith",
		"order=name&limit=10", "order=username&limit=10", "order=bogus", "limit=x",
	}
	for _, q := range agentQueries {
		for _, ext := range []string{"xml", "json"} {
			for _, detail := range []string{"", "&detail=full"} {
				add("harbour", "/au/agents."+ext+"?"+strings.TrimPrefix(q+detail, "&"))
			}
		}
	}
	for _, ext := range []string{"xml", "json"} {
		// The other tenant, the other country, and permissions.
		add("summit", "/nz/properties."+ext+"?limit=5&detail=full&order=price")
		add("summit", "/au/properties."+ext+"?agency_id=SM-AU-00001&detail=full")
		add("summit", "/nz/agents."+ext+"?detail=full&limit=5")
		add("harbour", "/nz/properties."+ext+"?limit=5&detail=full")
		add("harbour-noprice", "/au/properties."+ext+"?limit=5&detail=full")
		add("harbour-noprice", "/au/properties."+ext+"?price_from=500000&detail=full&limit=5")
		add("harbour-short", "/au/properties."+ext+"?limit=5")
		add("harbour-short", "/au/properties."+ext+"?limit=5&detail=full")
		add("harbour-short", "/au/properties."+ext+"?id=abc&category=house&approved_from=2024-01-01&detail=full")
		add("harbour-short", "/au/agents."+ext+"?detail=full")
		// Single resources.
		for _, id := range []string{"1", "17", "400", "401", "801", "999999", "abc", "0", "-1", "1.5", "12x"} {
			add("harbour", "/au/properties/"+id+"."+ext)
		}
		for _, id := range []string{"1", "5", "30", "31", "61", "999", "abc"} {
			add("harbour", "/au/agents/"+id+"."+ext)
		}
		add("harbour-noprice", "/au/properties/17."+ext)
		add("harbour-short", "/au/properties/17."+ext)
		add("harbour-short", "/au/agents/1."+ext)
		add("summit", "/au/properties/801."+ext)
		add("summit", "/au/properties/1."+ext)
		add("summit", "/nz/agents/91."+ext)
		// Errors outside the criteria.
		add("nobody", "/au/properties."+ext)
		add("harbour", "/uk/properties."+ext)
		add("harbour", "/au/unknown."+ext)
	}
	out = append(out, request{user: "harbour", password: "wrong", path: "/au/properties/1.xml"})
	return out
}

func get(t *testing.T, h http.Handler, base string, rq request) (status int, contentType string, body []byte) {
	t.Helper()
	if h != nil {
		r := httptest.NewRequest("GET", rq.path, nil)
		if rq.user != "" {
			r.SetBasicAuth(rq.user, rq.password)
		}
		w := httptest.NewRecorder()
		h.ServeHTTP(w, r)
		return w.Code, w.Header().Get("Content-Type"), w.Body.Bytes()
	}
	status, contentType, body, err := fetch(base, rq)
	if err != nil {
		t.Fatal(err)
	}
	return status, contentType, body
}

// fetch requests rq from the server at base (safe in any goroutine).
func fetch(base string, rq request) (status int, contentType string, body []byte, err error) {
	r, err := http.NewRequest("GET", base+rq.path, nil)
	if err != nil {
		return 0, "", nil, err
	}
	r.SetBasicAuth(rq.user, rq.password)
	resp, err := http.DefaultTransport.RoundTrip(r)
	if err != nil {
		return 0, "", nil, fmt.Errorf("%s: %w", rq, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		return 0, "", nil, fmt.Errorf("%s: %w", rq, err)
	}
	return resp.StatusCode, resp.Header.Get("Content-Type"), b, nil
}

// TestFidelity proves that listingproxy is a drop-in replacement for the
// legacy endpoint it fronts: for every request of the corpus, the answer
// through listingproxy (status, content type and body) is byte for byte the
// answer of the legacy endpoint itself, whichever hydration strategy the
// crm client uses. On a failure, the structural differences are listed.
func TestFidelity(t *testing.T) {
	corpus := fidelityCorpus()
	if len(corpus) < 200 {
		t.Fatalf("corpus has %d requests, want at least 200", len(corpus))
	}
	legacy, _ := newLegacy(t, Faults{})

	// The legacy answers, once.
	type answer struct {
		status int
		ct     string
		body   []byte
	}
	want := make([]answer, len(corpus))
	census := map[string]int{}
	for i, rq := range corpus {
		want[i].status, want[i].ct, want[i].body = get(t, nil, legacy.URL, rq)
		census[answerKind(want[i].status, want[i].body)]++
	}
	t.Logf("legacy answers: %v", census)
	// The corpus must exercise documents, not only errors.
	for kind, min := range map[string]int{
		"200 properties": 100, "200 properties (empty)": 2, "200 property": 10, "200 agents": 20, "200 agent": 4,
		"200 errors": 30, "200 error": 15, "401 error": 2, "404 error": 4,
	} {
		if census[kind] < min {
			t.Errorf("corpus has %d answers of kind %q, want at least %d", census[kind], kind, min)
		}
	}

	for _, tc := range []struct {
		mode   crm.HydrateMode
		passes int
	}{
		{crm.HydrateNever, 1},
		{crm.HydrateAlways, 1},
		// The second pass repeats every full list within DocTTL with its
		// documents cached: the auto rule then hydrates.
		{crm.HydrateAuto, 2},
	} {
		t.Run("hydrate="+tc.mode.String(), func(t *testing.T) {
			front, client := newFront(t, legacy.URL, tc.mode, nil)
			for pass := range tc.passes {
				failures := 0
				for i, rq := range corpus {
					status, ct, body := get(t, front, "", rq)
					w := want[i]
					if status == w.status && ct == w.ct && string(body) == string(w.body) {
						continue
					}
					failures++
					if failures > 10 {
						t.Fatalf("pass %d: too many differences", pass+1)
					}
					msg := fmt.Sprintf("pass %d: %s: through listingproxy %d %q, %d bytes; legacy %d %q, %d bytes",
						pass+1, rq, status, ct, len(body), w.status, w.ct, len(w.body))
					for _, d := range docdiff.Compare(w.body, body, docdiff.Detect(w.ct, w.body)) {
						msg += "\n\t" + d.String()
					}
					t.Error(msg)
				}
			}
			st := client.Stats()
			t.Logf("%d requests x %d passes; crm client: %+v", len(corpus), tc.passes, st)
			switch tc.mode {
			case crm.HydrateNever:
				if st.Hydrations != 0 || st.FullLists == 0 {
					t.Errorf("never: %+v, want only full lists", st)
				}
			case crm.HydrateAlways:
				if st.FullLists != 0 || st.Hydrations == 0 {
					t.Errorf("always: %+v, want only hydrations", st)
				}
			case crm.HydrateAuto:
				if st.FullLists == 0 || st.Hydrations == 0 || st.DocHits == 0 {
					t.Errorf("auto: %+v, want full lists first, hydrations from the cached documents on the repeat", st)
				}
			}
		})
	}
}

// TestFidelityCorpusCoversCriteria keeps the corpus honest: every criterion
// of the spec's sections 4.1 and 4.3 appears in it.
func TestFidelityCorpusCoversCriteria(t *testing.T) {
	seen := map[string]bool{}
	for _, rq := range fidelityCorpus() {
		u, err := url.Parse(rq.path)
		if err != nil {
			t.Fatal(err)
		}
		res := "properties"
		if strings.Contains(u.Path, "/agents") {
			res = "agents"
		}
		for k := range u.Query() {
			k = strings.TrimSuffix(k, "[]")
			if i := strings.IndexByte(k, '['); i > 0 {
				k = k[:i]
			}
			seen[res+":"+k] = true
		}
	}
	for _, k := range []string{
		"id", "agency_id", "agent_id", "street_number", "street_name", "price_from", "price_to", "category", "status",
		"property_type", "price_type", "bedrooms", "bathrooms", "geo", "featured", "approved_from", "approved_to",
		"detail", "limit", "offset", "order",
	} {
		if !seen["properties:"+k] {
			t.Errorf("no property list request uses %s", k)
		}
	}
	for _, k := range []string{"id", "name", "username", "detail", "limit", "offset", "order"} {
		if !seen["agents:"+k] {
			t.Errorf("no agent list request uses %s", k)
		}
	}
}

// TestFidelityBurst checks request coalescing end to end: 100 concurrent
// identical cold requests through listingproxy with a cache reach the
// legacy endpoint once, and all get the legacy endpoint's document.
func TestFidelityBurst(t *testing.T) {
	// Latency keeps the one upstream call in flight while the burst
	// arrives; the count does not depend on it (later arrivals are hits).
	legacy, stats := newLegacy(t, Faults{Latency: 100 * time.Millisecond})
	c, err := cache.New(cache.Options{Now: fixedNow})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	front, _ := newFront(t, legacy.URL, crm.HydrateAuto, c)
	srv := httptest.NewServer(front)
	t.Cleanup(srv.Close)

	for _, rq := range []request{
		{"harbour", "harbour-demo", "/au/properties.xml?status=current&limit=20"},
		{"harbour", "harbour-demo", "/au/properties/17.json"},
		{"summit", "summit-demo", "/nz/properties.json?detail=full&limit=10"},
	} {
		t.Run(rq.path, func(t *testing.T) {
			_, _, want := get(t, nil, legacy.URL, rq)
			stats.Reset()
			const n = 100
			bodies := make([][]byte, n)
			var wg sync.WaitGroup
			start := make(chan struct{})
			for i := range n {
				wg.Go(func() {
					<-start
					var err error
					if _, _, bodies[i], err = fetch(srv.URL, rq); err != nil {
						t.Error(err)
					}
				})
			}
			close(start)
			wg.Wait()
			if got := stats.Snapshot().Requests; got != 1 {
				t.Errorf("legacy endpoint received %d requests for a burst of %d identical ones, want 1", got, n)
			}
			for i, b := range bodies {
				if string(b) != string(want) {
					t.Fatalf("response %d differs from the legacy document: %v", i, docdiff.Compare(want, b, docdiff.Detect("", want)))
				}
			}
		})
	}
}

// answerKind classifies an answer by status and root: "200 properties",
// "200 properties (empty)", "200 error"...
func answerKind(status int, body []byte) string {
	s := strings.TrimPrefix(string(body), `<?xml version="1.0" encoding="UTF-8"?>`+"\n")
	var root string
	switch {
	case strings.HasPrefix(s, "<"):
		root = strings.FieldsFunc(s[1:], func(r rune) bool { return r == ' ' || r == '>' || r == '/' })[0]
	case strings.HasPrefix(s, `{"`):
		root, _, _ = strings.Cut(s[2:], `"`)
	}
	kind := fmt.Sprintf("%d %s", status, root)
	if strings.Contains(s, `count="0"/>`) && strings.Count(s, "\n") == 1 || strings.Contains(s, `{"count":"0",`) && strings.Count(s, "{") == 2 {
		kind += " (empty)"
	}
	return kind
}

// TestFaultsThroughListingproxy checks that each injected fault reaches a
// listingproxy client as the spec's 503 (the crm client counts it as a
// backend failure), never as a broken or partial document.
func TestFaultsThroughListingproxy(t *testing.T) {
	const path = "/au/properties.xml?limit=20&detail=full"
	for _, tc := range []struct {
		name   string
		faults Faults
	}{
		{"error page", Faults{ErrorRate: 1}},
		{"outage", Faults{OutageEvery: time.Hour, OutageFor: 59 * time.Minute}},
		// About 300 chunks 20ms apart: far beyond the client's timeout.
		{"slow drip", Faults{Drip: 20 * time.Millisecond, DripBytes: 64}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			legacy, stats := newLegacy(t, tc.faults)
			front, _ := newFrontWith(t, crm.Options{BaseURL: legacy.URL, Timeout: 300 * time.Millisecond}, nil)
			status, _, body := get(t, front, "", request{"harbour", "harbour-demo", path})
			if status != http.StatusServiceUnavailable || !strings.Contains(string(body), "<error>") {
				t.Errorf("got %d %q, want 503 with the single-error body", status, body)
			}
			if got := stats.Snapshot().Requests; got != 1 {
				t.Errorf("legacy endpoint received %d requests, want 1", got)
			}
		})
	}
}
