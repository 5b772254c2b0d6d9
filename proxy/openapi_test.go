package proxy_test

import (
	"encoding/json"
	"fmt"
	"maps"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"listingproxy/openapi"
	"listingproxy/proxy"
	"listingproxy/upstream"
)

// TestOpenAPIServed: GET /openapi.json answers without credentials with the
// embedded document as application/json, a strong ETag (304 on
// If-None-Match), HEAD with no body; other methods are 405 with Allow and a
// JSON error body, as for the API's paths.
func TestOpenAPIServed(t *testing.T) {
	s := newServer(t, newFake(), proxy.Options{})
	for _, user := range []string{"", "harbour", "nobody"} {
		rec := get(s, "GET", user, "/openapi.json")
		if rec.Code != 200 || rec.Body.String() != string(openapi.Document) {
			t.Fatalf("GET /openapi.json as %q: %d, %d bytes", user, rec.Code, rec.Body.Len())
		}
		h := rec.Header()
		if h.Get("Content-Type") != "application/json" || h.Get("ETag") != openapi.ETag ||
			h.Get("Cache-Control") != "public, max-age=3600" || h.Get("WWW-Authenticate") != "" {
			t.Errorf("GET /openapi.json as %q: headers %v", user, h)
		}
	}
	if rec := get(s, "GET", "", "/openapi.json", "If-None-Match", `"x", `+openapi.ETag); rec.Code != http.StatusNotModified || rec.Body.Len() != 0 {
		t.Errorf("If-None-Match with the ETag: %d %q", rec.Code, rec.Body)
	}
	if rec := get(s, "GET", "", "/openapi.json", "If-None-Match", `"other"`); rec.Code != 200 {
		t.Errorf("If-None-Match with another ETag: %d", rec.Code)
	}
	if rec := get(s, "HEAD", "", "/openapi.json"); rec.Code != 200 || rec.Body.Len() != 0 || rec.Header().Get("ETag") != openapi.ETag {
		t.Errorf("HEAD: %d %q %v", rec.Code, rec.Body, rec.Header())
	}
	rec := get(s, "POST", "", "/openapi.json")
	if rec.Code != http.StatusMethodNotAllowed || rec.Header().Get("Allow") != "GET, HEAD" ||
		strings.TrimSpace(rec.Body.String()) != `{"error":"Method not allowed: use GET or HEAD"}` {
		t.Errorf("POST: %d %v %s", rec.Code, rec.Header(), rec.Body)
	}
	if rec := get(s, "GET", "", "/openapi.json/"); rec.Code != http.StatusNotFound {
		t.Errorf("GET /openapi.json/: %d", rec.Code)
	}
	var doc struct{ OpenAPI string }
	if err := json.Unmarshal(openapi.Document, &doc); err != nil || !strings.HasPrefix(doc.OpenAPI, "3.1.") {
		t.Errorf("the document is not OpenAPI 3.1 JSON: %q, %v", doc.OpenAPI, err)
	}
}

// docPaths are the paths openapi.json documents, with their methods and
// the media types of their 200 answers.
func docPaths(t *testing.T) map[string]map[string]struct {
	Responses map[string]struct {
		Content map[string]any
	}
} {
	t.Helper()
	var doc struct {
		Paths map[string]map[string]json.RawMessage
	}
	if err := json.Unmarshal(openapi.Document, &doc); err != nil {
		t.Fatal(err)
	}
	out := map[string]map[string]struct {
		Responses map[string]struct{ Content map[string]any }
	}{}
	for p, item := range doc.Paths {
		out[p] = map[string]struct {
			Responses map[string]struct{ Content map[string]any }
		}{}
		for m, raw := range item {
			if m == "parameters" {
				continue
			}
			var op struct {
				Responses map[string]struct{ Content map[string]any }
			}
			if err := json.Unmarshal(raw, &op); err != nil {
				t.Fatalf("%s %s: %v", m, p, err)
			}
			out[p][m] = op
		}
	}
	return out
}

// TestOpenAPIDocumentsEveryRoute: every GET route the server registers is
// a path of openapi.json (a single resource's {file} once per extension,
// as {id}.xml and {id}.json), and every documented path is served by the
// route it stands for, with GET only, in the documented media type.
func TestOpenAPIDocumentsEveryRoute(t *testing.T) {
	s := newServer(t, newFake(), proxy.Options{})
	paths := docPaths(t)
	pattern := func(docPath string) string {
		p := strings.Replace(docPath, "/{id}.xml", "/{file}", 1)
		return "GET " + strings.Replace(p, "/{id}.json", "/{file}", 1)
	}
	for p, ops := range paths {
		if len(ops) != 1 || ops["get"].Responses == nil {
			t.Errorf("%s: operations %v, want get alone", p, slices.Sorted(maps.Keys(ops)))
		}
		target := strings.NewReplacer("{country}", "au", "{id}", "1").Replace(p)
		r := httptest.NewRequest("GET", target, nil)
		r.Header.Set("Authorization", basic("harbour"))
		w := httptest.NewRecorder()
		s.ServeHTTP(w, r)
		if r.Pattern != pattern(p) || w.Code != 200 {
			t.Errorf("GET %s: pattern %q, status %d; want %q, 200", target, r.Pattern, w.Code, pattern(p))
		}
		ct, _, _ := strings.Cut(w.Header().Get("Content-Type"), ";")
		if _, ok := ops["get"].Responses["200"].Content[ct]; !ok || len(ops["get"].Responses["200"].Content) != 1 {
			t.Errorf("GET %s: content type %q, documented %v", target, ct, ops["get"].Responses["200"].Content)
		}
	}
	// Every registered GET route is documented: a single resource's once
	// per extension.
	var want []string
	for _, pat := range proxy.GETPatterns(s) {
		p := strings.TrimPrefix(pat, "GET ")
		if base, ok := strings.CutSuffix(p, "/{file}"); ok {
			want = append(want, base+"/{id}.json", base+"/{id}.xml")
		} else {
			want = append(want, p)
		}
	}
	slices.Sort(want)
	got := slices.Sorted(maps.Keys(paths))
	if !slices.Equal(got, want) || len(want) < 9 {
		t.Errorf("documented paths %q, want (from the registered GET routes) %q", got, want)
	}
}

// TestOpenAPISamples asks the JSON endpoints as users with each set of
// compatibility switches, and as callers of each permission level, and
// checks the switches' shapes in the answers. With
// LISTINGPROXY_OPENAPI_SAMPLES=DIR it also writes each answer to
// DIR/SCHEMA.NAME.json, which CI validates against openapi.json's schema
// SCHEMA with a JSON Schema validator (openapi/ts-check/validate.mjs): the
// golden bodies hold no switch's shapes, these do.
func TestOpenAPISamples(t *testing.T) {
	fb := newFake()
	// harbour/nz holds one property, harbour/au one agent: one-item lists.
	one := fb.Properties["harbour/nz"][0]
	one.Photos = []upstream.Media{{URL: "https://media.example/1.jpg", Thumbnail: "https://media.example/1-t.jpg", Type: "Normal", Position: 1}}
	one.Floorplans = []upstream.Media{{URL: "https://media.example/f.png", Thumbnail: "https://media.example/f-t.png", Position: 1}}
	one.OpenHomes = []upstream.OpenHome{{Start: fixedNow.Add(24 * time.Hour), End: fixedNow.Add(25 * time.Hour)}}
	one.PhotoCount, one.FloorplanCount = 1, 1
	fb.Properties["harbour/nz"][0] = one
	fb.Agents["harbour/au"][0].Properties = []upstream.PropertyRef{{ID: 1, LastUpdated: fixedNow, Address: "12 Harbour Street", AgencyID: "HB-AU-1"}}

	type user struct {
		name          string
		compat        *proxy.Compat
		perms         proxy.Permissions
		numeric, list bool // ids are numbers; a one-item property list is an object
		photo         bool // a one-item photo collection is an object
	}
	all := proxy.PermFull | proxy.PermPrices
	users := []user{
		{name: "plain", compat: &proxy.Compat{}, perms: all},
		{name: "short", compat: &proxy.Compat{}},
		{name: "noprice", compat: &proxy.Compat{}, perms: proxy.PermFull},
		{name: "numeric", compat: &proxy.Compat{NumericIDs: true}, perms: all, numeric: true},
		{name: "single", compat: &proxy.Compat{SingleObject: true}, perms: all, list: true, photo: true},
		{name: "items", compat: &proxy.Compat{SingleObjectItems: map[string]bool{"property": true}}, perms: all, list: true},
		{name: "all", compat: &proxy.Compat{NumericIDs: true, SingleObject: true, VideoURL: true}, perms: all, numeric: true, list: true, photo: true},
	}
	var pu []proxy.User
	for _, u := range users {
		pu = append(pu, proxy.User{Username: u.name, PasswordHash: testHash, Tenant: "harbour", Permissions: u.perms, Compat: u.compat})
	}
	s, err := proxy.New(pu, []proxy.Tenant{{Name: "harbour", Backend: fb, BackendName: "fake", Upstream: "harbour"}},
		proxy.Options{Now: func() time.Time { return fixedNow }})
	if err != nil {
		t.Fatal(err)
	}
	targets := []struct{ schema, name, target string }{
		{"PropertyListResponse", "full-one", "/nz/properties.json?detail=full"},
		{"PropertyListResponse", "full", "/au/properties.json?detail=full"},
		{"PropertyListResponse", "short-one", "/nz/properties.json"},
		{"PropertyListResponse", "errors", "/au/properties.json?category=house&approved_from=2024-01-01"},
		{"PropertyListResponse", "error-one", "/au/properties.json?id=abc"},
		{"PropertyResponse", "one", "/nz/properties/3.json"},
		{"PropertyResponse", "not-found", "/au/properties/999.json"},
		{"AgentListResponse", "full-one", "/au/agents.json?detail=full"},
		{"AgentListResponse", "short-one", "/au/agents.json"},
		{"AgentResponse", "one", "/au/agents/5.json"},
	}
	numeric := regexp.MustCompile(`"id":[0-9]`)
	dir := os.Getenv("LISTINGPROXY_OPENAPI_SAMPLES")
	for _, u := range users {
		for _, tg := range targets {
			rec := get(s, "GET", u.name, tg.target)
			body := rec.Body.Bytes()
			if rec.Code != 200 || !json.Valid(body) {
				t.Fatalf("%s %s: %d %s", u.name, tg.target, rec.Code, body)
			}
			if got := numeric.Match(body); got != (u.numeric && !strings.Contains(tg.name, "error") && tg.name != "not-found" && (u.perms&proxy.PermFull != 0 || !strings.HasPrefix(tg.schema, "PropertyResponse"))) {
				t.Errorf("%s %s: numeric ids %v: %s", u.name, tg.target, got, body)
			}
			if strings.HasSuffix(tg.name, "-one") && strings.Contains(tg.schema, "List") && !strings.Contains(tg.name, "error") {
				obj := `"property":{`
				if strings.HasPrefix(tg.schema, "Agent") {
					obj = `"agent":{`
				}
				// json_single_object_items: [property] names the property
				// collections (a list's and an agent's), not agents.
				want := u.list && (obj == `"property":{` || u.photo)
				if got := strings.Contains(string(body), obj); got != want && !(obj == `"agent":{` && u.list) {
					t.Errorf("%s %s: one item as an object %v, want %v: %s", u.name, tg.target, got, want, body)
				}
			}
			if tg.name == "one" && tg.schema == "PropertyResponse" && u.perms&proxy.PermFull != 0 {
				if got := strings.Contains(string(body), `"photo":{`); got != u.photo {
					t.Errorf("%s %s: one photo as an object %v, want %v: %s", u.name, tg.target, got, u.photo, body)
				}
				if !strings.Contains(string(body), `"openhome":{`) {
					t.Errorf("%s %s: one open home is not an object: %s", u.name, tg.target, body)
				}
			}
			if dir != "" {
				if err := os.WriteFile(filepath.Join(dir, fmt.Sprintf("%s.%s-%s.json", tg.schema, u.name, tg.name)), body, 0o644); err != nil {
					t.Fatal(err)
				}
			}
		}
	}
}
