package proxy_test

import (
	"context"
	"encoding/base64"
	"net/http"
	"net/http/httptest"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"golang.org/x/crypto/bcrypt"

	"listingproxy/normalize"
	"listingproxy/proxy"
	"listingproxy/upstream"
)

// fakeBackend serves fixed records per tenant, counts calls, and can be made
// to fail.
type fakeBackend struct {
	mu    sync.Mutex
	props map[string][]upstream.Property // by Scope.Tenant+"/"+Scope.Country
	agts  map[string][]upstream.Agent
	fail  error
	calls atomic.Int64
	block chan struct{} // when non-nil, calls wait for it
}

func (f *fakeBackend) wait(ctx context.Context) error {
	f.calls.Add(1)
	if f.block != nil {
		select {
		case <-f.block:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.fail
}

func (f *fakeBackend) ListProperties(ctx context.Context, s upstream.Scope, c normalize.Criteria) ([]upstream.Property, error) {
	if err := f.wait(ctx); err != nil {
		return nil, err
	}
	all := f.props[s.Tenant+"/"+s.Country]
	if ids := c.Property().IDs; len(ids) > 0 {
		var out []upstream.Property
		for _, p := range all {
			for _, id := range ids {
				if p.ID == id {
					out = append(out, p)
				}
			}
		}
		return out, nil
	}
	return all, nil
}

func (f *fakeBackend) GetProperty(ctx context.Context, s upstream.Scope, id int64) (upstream.Property, error) {
	if err := f.wait(ctx); err != nil {
		return upstream.Property{}, err
	}
	for _, p := range f.props[s.Tenant+"/"+s.Country] {
		if p.ID == id {
			return p, nil
		}
	}
	return upstream.Property{}, upstream.ErrNotFound
}

func (f *fakeBackend) ListAgents(ctx context.Context, s upstream.Scope, c normalize.Criteria) ([]upstream.Agent, error) {
	if err := f.wait(ctx); err != nil {
		return nil, err
	}
	return f.agts[s.Tenant+"/"+s.Country], nil
}

func (f *fakeBackend) GetAgent(ctx context.Context, s upstream.Scope, id int64) (upstream.Agent, error) {
	if err := f.wait(ctx); err != nil {
		return upstream.Agent{}, err
	}
	for _, a := range f.agts[s.Tenant+"/"+s.Country] {
		if a.ID == id {
			return a, nil
		}
	}
	return upstream.Agent{}, upstream.ErrNotFound
}

var fixedNow = time.Date(2026, 11, 21, 3, 0, 0, 0, time.UTC)

func ptr[T any](v T) *T { return &v }

func newFake() *fakeBackend {
	prop := func(id int64, agency, street string) upstream.Property {
		return upstream.Property{
			ID: id, AgencyID: agency, LastUpdated: fixedNow.Add(-time.Hour), Approved: time.Date(2024, 3, 1, 0, 0, 0, 0, time.UTC),
			StreetNumber: "12", StreetName: street, AddressDisplay: true, Status: "CURRENT", Latitude: ptr(-33.8688), Longitude: ptr(151.2093),
			PriceText: "$650,000", PriceFrom: ptr(650000.0), Category: "Residential", PropertyType: "House",
			Suburb: "Manly", Area: "Northern Beaches", Region: "Sydney", Bedrooms: ptr(3), Bathrooms: ptr(2),
			Agents: []upstream.AgentRef{{ID: 5, Name: "Jane Doe"}},
		}
	}
	return &fakeBackend{
		props: map[string][]upstream.Property{
			"harbour/au": {prop(1, "HB-AU-1", "Harbour Street"), prop(2, "HB-AU-2", "Quay Road")},
			"harbour/nz": {prop(3, "HB-NZ-3", "Queen Street")},
			"summit/au":  {prop(10, "SM-AU-10", "Summit Avenue")},
		},
		agts: map[string][]upstream.Agent{
			"harbour/au": {{ID: 5, Name: "Jane Doe", Username: "jdoe", PropertyCount: 2}},
			"summit/au":  {{ID: 50, Name: "Sam Peak", Username: "speak", PropertyCount: 1}},
		},
	}
}

const password = "pw-demo"

var testHash = func() []byte {
	h, err := bcrypt.GenerateFromPassword([]byte(password), bcrypt.MinCost)
	if err != nil {
		panic(err)
	}
	return h
}()

func testUsers() []proxy.User {
	return []proxy.User{
		{Username: "harbour", PasswordHash: testHash, Tenant: "harbour", Permissions: proxy.PermFull | proxy.PermPrices},
		{Username: "harbour-noprice", PasswordHash: testHash, Tenant: "harbour", Permissions: proxy.PermFull},
		{Username: "harbour-short", PasswordHash: testHash, Tenant: "harbour"},
		{Username: "harbour-2", PasswordHash: testHash, Tenant: "harbour", Permissions: proxy.PermFull | proxy.PermPrices},
		{Username: "summit", PasswordHash: testHash, Tenant: "summit", Permissions: proxy.PermFull | proxy.PermPrices},
	}
}

func newServer(t testing.TB, fb *fakeBackend, o proxy.Options) *proxy.Server {
	t.Helper()
	if o.Now == nil {
		o.Now = func() time.Time { return fixedNow }
	}
	s, err := proxy.New(testUsers(), []proxy.Tenant{
		{Name: "harbour", Backend: fb, BackendName: "fake", Upstream: "harbour"},
		{Name: "summit", Backend: fb, BackendName: "fake", Upstream: "summit"},
	}, o)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func basic(user string) string {
	return "Basic " + base64.StdEncoding.EncodeToString([]byte(user+":"+password))
}

// get performs a request against h as user ("" = anonymous).
func get(h http.Handler, method, user, target string, hdr ...string) *httptest.ResponseRecorder {
	r := httptest.NewRequest(method, target, nil)
	if user != "" {
		r.Header.Set("Authorization", basic(user))
	}
	for i := 0; i+1 < len(hdr); i += 2 {
		r.Header.Set(hdr[i], hdr[i+1])
	}
	w := httptest.NewRecorder()
	h.ServeHTTP(w, r)
	return w
}
