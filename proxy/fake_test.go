package proxy_test

import (
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"golang.org/x/crypto/bcrypt"

	"listingproxy/internal/testkit"
	"listingproxy/proxy"
	"listingproxy/upstream"
)

// fakeBackend serves fixed records per tenant, counts calls, and can be made
// to fail or wait.
type fakeBackend = testkit.Backend

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
		Properties: map[string][]upstream.Property{
			"harbour/au": {prop(1, "HB-AU-1", "Harbour Street"), prop(2, "HB-AU-2", "Quay Road")},
			"harbour/nz": {prop(3, "HB-NZ-3", "Queen Street")},
			"summit/au":  {prop(10, "SM-AU-10", "Summit Avenue")},
		},
		Agents: map[string][]upstream.Agent{
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

func basic(user string) string { return testkit.BasicAuth(user, password) }

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
