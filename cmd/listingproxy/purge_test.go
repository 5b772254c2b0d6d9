package main

import (
	"database/sql"
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"testing"

	"listingproxy/internal/testkit"
)

// cacheOf is the Cache-Status of a request, and fails the test unless it
// answers 200.
func cacheOf(t *testing.T, h http.Handler, user, target string) string {
	t.Helper()
	w := demoGet(t, h, user, target)
	if w.Code != 200 {
		t.Fatalf("%s %s: %d %s", user, target, w.Code, w.Body)
	}
	return w.Header().Get("Cache-Status")
}

// purgeCase is a request and whether a purge should drop its cached body.
type purgeCase struct {
	user, target string
	purged       bool
}

// checkPurged warms every case on warm and then on every replica of check
// (each holds it in its first tier), purges with query on the admin API of
// via, and checks on each replica of check in turn that exactly the cases
// marked purged are not answered from its first tier any more: on the
// first, by a backend call (the copy in Redis is purged too); on the
// others, by a backend call or the refill the first wrote to Redis. The
// other cases are still first-tier hits.
func checkPurged(t *testing.T, warm *app, via *app, check []*app, query string, cases []purgeCase) {
	t.Helper()
	checkPurgedBy(t, warm, check, query, func() {
		before := make([]uint64, len(check))
		for i, a := range check {
			before[i] = a.cache.Stats().PurgesReceived
		}
		if w := adminPurge(via, query, "admin", "admin-demo"); w.Code != 200 {
			t.Fatalf("purge %s: %d %q", query, w.Code, w.Body)
		}
		for i, a := range check {
			if a != via {
				testkit.WaitFor(t, "the purge to reach every replica", func() bool { return a.cache.Stats().PurgesReceived > before[i] })
			}
		}
	}, cases)
}

// checkPurgedBy is checkPurged with the purge made, and awaited, by purge.
func checkPurgedBy(t *testing.T, warm *app, check []*app, query string, purge func(), cases []purgeCase) {
	t.Helper()
	for _, a := range append([]*app{warm}, check...) {
		for _, c := range cases {
			cacheOf(t, a.handler, c.user, c.target)
			if cs := cacheOf(t, a.handler, c.user, c.target); !strings.Contains(cs, "hit") {
				t.Fatalf("warm-up %s %s: Cache-Status %q, want a hit", c.user, c.target, cs)
			}
		}
	}
	purge()
	for i, a := range check {
		for _, c := range cases {
			st0 := a.cache.Stats()
			cs := cacheOf(t, a.handler, c.user, c.target)
			st1 := a.cache.Stats()
			loaded := st1.LoaderCalls > st0.LoaderCalls
			first := !loaded && st1.SecondTierHits == st0.SecondTierHits && st1.PeerFills == st0.PeerFills
			switch {
			case !c.purged && !first:
				t.Errorf("replica %d after purge %s: %s %s (not covered) left the first tier: Cache-Status %q", i, query, c.user, c.target, cs)
			case c.purged && first:
				t.Errorf("replica %d after purge %s: %s %s served from the first tier: Cache-Status %q", i, query, c.user, c.target, cs)
			case c.purged && i == 0 && !loaded:
				t.Errorf("replica %d after purge %s: %s %s not refilled from the backend (the purged copy in Redis?): Cache-Status %q", i, query, c.user, c.target, cs)
			}
		}
	}
}

// TestAdminPurgeByURLAndEntity: through the admin API and the public HTTP
// surface, a purge by url drops that request's bodies for every permission
// level and both formats, the url canonicalised as a request is
// (status[]=current is status=current); a purge by property or agent drops
// every body that holds it (its single resource, the lists that include
// it, the agent's document that embeds the property, the property's that
// embeds the agent); nothing else, and never another tenant's body (the
// same url or id of summit stays cached).
func TestAdminPurgeByURLAndEntity(t *testing.T) {
	a := newDemoApp(t)
	const (
		list    = "/au/properties.json?status=current&limit=2&detail=full"
		listXML = "/au/properties.xml?limit=2&detail=full&status=current"
		page1   = "/au/properties.json?limit=3"          // ids 1, 2, 3
		page2   = "/au/properties.json?limit=3&offset=3" // ids 4, 5, 6
		single1 = "/au/properties/1.json"                // agent 4
		single5 = "/au/properties/5.xml"                 //
		agent4  = "/au/agents/4.json"                    // embeds property 1
		agents  = "/au/agents.json?limit=50"             // includes agent 4
		agent1  = "/au/agents/1.xml"                     //
	)
	if body := demoGet(t, a.handler, "harbour", agent4).Body.String(); !strings.Contains(body, `"id":"1"`) {
		t.Fatalf("agent 4 does not embed property 1: %s", body)
	}
	t.Run("url", func(t *testing.T) {
		checkPurged(t, a, a, []*app{a}, "tenant=harbour&url="+url.QueryEscape("/au/properties.xml?status[]=current&limit=2&detail=full"), []purgeCase{
			{"harbour", list, true}, {"harbour-noprice", list, true}, {"harbour", listXML, true},
			{"harbour", page1, false}, {"harbour", single1, false},
			{"summit", list, false}, // the same url of another tenant
		})
	})
	t.Run("permission levels keep their own bodies", func(t *testing.T) {
		full, noprice := demoGet(t, a.handler, "harbour", list).Body.String(), demoGet(t, a.handler, "harbour-noprice", list).Body.String()
		if full == noprice || !strings.Contains(full, "price") {
			t.Errorf("after the url purge and refill, harbour and harbour-noprice share a body or prices are gone:\n%s\n%s", full, noprice)
		}
		if demoGet(t, a.handler, "summit", list).Body.String() == full {
			t.Error("summit was served harbour's body")
		}
	})
	t.Run("url of a single resource", func(t *testing.T) {
		checkPurged(t, a, a, []*app{a}, "tenant=harbour&url="+url.QueryEscape("/au/properties/1.xml"), []purgeCase{
			{"harbour", single1, true}, {"harbour", page1, false},
		})
	})
	t.Run("a url cannot name another tenant", func(t *testing.T) {
		checkPurged(t, a, a, []*app{a}, "tenant=harbour&url="+url.QueryEscape("/au/properties.json?limit=3&tenant=summit"), []purgeCase{
			{"summit", page1, false},
		})
	})
	t.Run("property", func(t *testing.T) {
		checkPurged(t, a, a, []*app{a}, "tenant=harbour&property=1", []purgeCase{
			{"harbour", single1, true}, {"harbour", page1, true}, {"harbour-noprice", page1, true}, {"harbour", agent4, true},
			{"harbour", page2, false}, {"harbour", single5, false}, {"harbour", agent1, false},
			{"summit", page1, false},
		})
	})
	t.Run("another tenant's id", func(t *testing.T) {
		id := firstID(t, a, "summit", page1)
		checkPurged(t, a, a, []*app{a}, "tenant=harbour&property="+id, []purgeCase{
			{"summit", "/au/properties/" + id + ".json", false}, {"summit", page1, false},
		})
	})
	t.Run("agent", func(t *testing.T) {
		checkPurged(t, a, a, []*app{a}, "tenant=harbour&agent=4&mode=hard", []purgeCase{
			{"harbour", agent4, true}, {"harbour", agents, true}, {"harbour", single1, true}, {"harbour", page1, true},
			{"harbour", agent1, false}, {"harbour", single5, false},
			{"summit", agents, false},
		})
	})
}

// TestAdminPurgeBadInput: every malformed purge is a 400 saying what is
// wrong, and purges nothing.
func TestAdminPurgeBadInput(t *testing.T) {
	a := newDemoApp(t)
	before := a.cache.Stats()
	for _, tc := range []struct{ query, want string }{
		{"tenant=nobody&property=1", `unknown tenant "nobody"`},
		{"tenant=harbour&url=" + url.QueryEscape("/au/properties.json") + "&property=1", "give at most one of resource, url, property and agent (got url and property)"},
		{"tenant=harbour&property=1&agent=2", "give at most one of resource, url, property and agent (got property and agent)"},
		{"tenant=harbour&property=x1", `property id "x1" is not a positive whole number`},
		{"tenant=harbour&agent=-4", `agent id "-4" is not a positive whole number`},
		{"tenant=harbour&url=" + url.QueryEscape("http://elsewhere/au/properties.json"), `url "http://elsewhere/au/properties.json" is not a request path such as /au/properties.xml?status=current`},
		{"tenant=harbour&url=" + url.QueryEscape("/au/houses.json"), `url path "/au/houses.json" is not one of the API's (properties or agents)`},
		{"tenant=harbour&url=" + url.QueryEscape("/xx/properties.json"), `url "/xx/properties.json": unknown country "xx"`},
		{"tenant=harbour&url=" + url.QueryEscape("/au/properties.html"), `url path "/au/properties.html" must end in .xml or .json`},
		{"tenant=harbour&url=" + url.QueryEscape("/au/properties/abc.json"), `url "/au/properties/abc.json": id "abc" is not a valid number`},
		{"tenant=harbour&url=" + url.QueryEscape("/au/properties.json?limit=-5"), `url "/au/properties.json?limit=-5": its query is one the API refuses`},
		{"tenant=harbour&url=/au/properties.json?status=current&limit=2", `unknown parameter "limit" (want tenant, resource, url, property, agent, mode; percent-encode the query of a url, e.g. curl --data-urlencode)`},
		{"tenant=harbour&url=%zz", "malformed query: "},
	} {
		w := adminPurge(a, tc.query, "admin", "admin-demo")
		if w.Code != 400 || !strings.HasPrefix(strings.TrimSpace(w.Body.String()), tc.want) {
			t.Errorf("%s: %d %q, want 400 starting %q", tc.query, w.Code, w.Body, tc.want)
		}
	}
	if after := a.cache.Stats(); after.SoftPurges != before.SoftPurges || after.HardPurges != before.HardPurges {
		t.Errorf("bad purges purged: %+v -> %+v", before, after)
	}
}

// TestFleetPurgeByURLAndEntity: purges by url and by entity made on one
// replica reach the two others through Redis, soft and hard, and drop
// exactly the bodies they cover there (those each replica holds in its
// first tier and those it would read from Redis); other bodies and other
// tenants' stay cached on every replica.
func TestFleetPurgeByURLAndEntity(t *testing.T) {
	rs := fleetOf(t, 3)
	const (
		page1   = "/au/properties.json?limit=3" // ids 1, 2, 3
		page2   = "/au/properties.json?limit=3&offset=3"
		single1 = "/au/properties/1.json"
		agent4  = "/au/agents/4.json"
		agent1  = "/au/agents/1.json"
	)
	t.Run("property, soft", func(t *testing.T) {
		checkPurged(t, rs[0], rs[1], rs, "tenant=harbour&property=1", []purgeCase{
			{"harbour", single1, true}, {"harbour", page1, true}, {"harbour-noprice", page1, true}, {"harbour", agent4, true},
			{"harbour", page2, false}, {"harbour", agent1, false}, {"summit", page1, false},
		})
	})
	t.Run("agent, hard", func(t *testing.T) {
		checkPurged(t, rs[2], rs[1], rs, "tenant=harbour&agent=4&mode=hard", []purgeCase{
			{"harbour", agent4, true}, {"harbour", single1, true}, {"harbour", page1, true},
			{"harbour", agent1, false}, {"harbour", page2, false}, {"summit", page1, false},
		})
	})
	t.Run("url", func(t *testing.T) {
		checkPurged(t, rs[1], rs[0], rs, "tenant=harbour&url="+url.QueryEscape("/au/properties.xml?limit[]=3&offset=3"), []purgeCase{
			{"harbour", page2, true}, {"harbour-noprice", page2, true},
			{"harbour", page1, false}, {"summit", page2, false},
		})
	})
}

// TestNotifyPurgesByEntity: on PostgreSQL with notify: true, a change to a
// property purges, at once, the bodies that hold it (its single resource,
// the lists that include it in every permission level, its agent's
// document) and nothing else of the tenant; inserting a property also
// purges the tenant's property lists (it may belong in any of them), not
// its single resources or agents; the other tenant's bodies stay cached.
func TestNotifyPurgesByEntity(t *testing.T) {
	a, db := notifyApp(t)
	// The listener purges every tenant once when it connects.
	testkit.WaitFor(t, "the change listener to connect", func() bool { return a.cache.Stats().SoftPurges >= 2 })
	const (
		page1   = "/au/properties.json?limit=3" // ids 1, 2, 3
		page2   = "/au/properties.json?limit=3&offset=3"
		single1 = "/au/properties/1.json"
		single5 = "/au/properties/5.json"
		agent4  = "/au/agents/4.json" // embeds property 1
		agent1  = "/au/agents/1.json"
	)
	change := func(stmt string, purges uint64) func() {
		return func() {
			before := a.cache.Stats().SoftPurges
			if _, err := db.Exec(stmt); err != nil {
				t.Fatal(err)
			}
			testkit.WaitFor(t, "the notification's purges", func() bool { return a.cache.Stats().SoftPurges >= before+purges })
		}
	}
	checkPurgedBy(t, a, []*app{a}, "update property 1", change("UPDATE properties SET description = 'Changed by the legacy app' WHERE id = 1", 1), []purgeCase{
		{"harbour", single1, true}, {"harbour", page1, true}, {"harbour-noprice", page1, true}, {"harbour", agent4, true},
		{"harbour", page2, false}, {"harbour", single5, false}, {"harbour", agent1, false},
		{"summit", page1, false},
	})
	if body := demoGet(t, a.handler, "harbour", single1).Body.String(); !strings.Contains(body, "Changed by the legacy app") {
		t.Errorf("property 1 after the change: %s", body)
	}
	insert := `INSERT INTO properties (id, tenant_id, country, agency_id, last_updated, status, latitude, longitude, category)
		SELECT 990001, tenant_id, country, 'HB-NEW', now(), 'CURRENT', latitude, longitude, category FROM properties WHERE id = 1`
	checkPurgedBy(t, a, []*app{a}, "insert a property", change(insert, 2), []purgeCase{
		{"harbour", page1, true}, {"harbour", page2, true},
		{"harbour", single1, false}, {"harbour", single5, false}, {"harbour", agent4, false},
		{"summit", page1, false},
	})
}

// notifyApp is the demo served from a fresh PostgreSQL database with
// notify: true, and a connection to that database (closed at the end).
func notifyApp(t *testing.T) (*app, *sql.DB) {
	t.Helper()
	path, dsn := engineConfig(t, "postgres", "    notify: true")
	a := newAppFrom(t, path)
	db, err := sql.Open("pgx", dsn)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return a, db
}

// firstID is the id of the first property of a list, as user sees it.
func firstID(t *testing.T, a *app, user, target string) string {
	t.Helper()
	m := regexp.MustCompile(`"id":"(\d+)"`).FindStringSubmatch(demoGet(t, a.handler, user, target).Body.String())
	if m == nil {
		t.Fatalf("%s %s: no property id", user, target)
	}
	return m[1]
}
