package crm

import (
	"errors"
	"net/http"
	"net/url"
	"strings"
	"sync/atomic"
	"testing"
	"time"
	_ "time/tzdata"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"listingproxy/normalize"
	"listingproxy/upstream"
)

var (
	harbourAU = upstream.Scope{Tenant: "harbour", Country: "au"}
	harbourNZ = upstream.Scope{Tenant: "harbour", Country: "nz"}
	summitAU  = upstream.Scope{Tenant: "summit", Country: "au"}

	sydney   = mustZone("Australia/Sydney")
	auckland = mustZone("Pacific/Auckland")
	plus11   = time.FixedZone("", 11*3600)
	plus13   = time.FixedZone("", 13*3600)

	// testNow is after the first open home of property 17 and before the others.
	testNow = time.Date(2026, 11, 21, 12, 0, 0, 0, sydney)
)

func mustZone(name string) *time.Location {
	loc, err := time.LoadLocation(name)
	if err != nil {
		panic(err)
	}
	return loc
}

func ptr[T any](v T) *T { return &v }

// newTestClient returns a Client of f with both tenants' credentials; o's
// zero fields get test defaults.
func newTestClient(t *testing.T, f *fakeCRM, o Options) *Client {
	t.Helper()
	if o.BaseURL == "" {
		o.BaseURL = f.srv.URL
	}
	if o.Credentials == nil {
		o.Credentials = map[string]Credential{
			"harbour": {Username: "harbour-crm", Password: "s3cret"},
			"summit":  {Username: "summit-crm", Password: "p@ss:word"},
		}
	}
	if o.Now == nil {
		o.Now = func() time.Time { return testNow }
	}
	if o.Timeout == 0 {
		o.Timeout = 5 * time.Second
	}
	c, err := New(o)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	t.Cleanup(c.Close)
	return c
}

var cmpOpts = []cmp.Option{cmpopts.EquateEmpty()}

func TestListPropertiesShort(t *testing.T) {
	f := newFakeCRM(t, serveFixtures(t))
	c := newTestClient(t, f, Options{})

	got, err := c.listProperties(t.Context(), harbourAU, url.Values{"status[]": {"current", "sold"}}, normalize.Short, "k")
	if err != nil {
		t.Fatalf("listProperties: %v", err)
	}
	if q, want := f.lastQuery(), "detail=short&status%5B%5D=current&status%5B%5D=sold"; q != want {
		t.Errorf("query = %q, want %q", q, want)
	}
	want := []upstream.Property{
		{
			ID: 17, AgencyID: "HB-AU-00017",
			LastUpdated:  time.Date(2026, 11, 20, 9, 30, 0, 0, plus11),
			Approved:     time.Date(2024, 3, 1, 0, 0, 0, 0, time.UTC),
			StreetNumber: "12", StreetName: "Smith Street", AddressDisplay: true,
			Status: "CURRENT", Latitude: ptr(-33.8688), Longitude: ptr(151.2093),
			PhotoCount: 3, VirtualTourCount: 0, FloorplanCount: 1,
			Agents: []upstream.AgentRef{{ID: 5, Name: "Jane Doe"}},
		},
		{
			ID: 18, AgencyID: "HB-AU-00018",
			LastUpdated: time.Date(2026, 11, 7, 14, 5, 10, 0, plus11),
			StreetName:  "Lot 4 Hill & Dale Road",
			Status:      "SOLD", Latitude: ptr(-33.9), Longitude: ptr(151.1),
			Agents: []upstream.AgentRef{{ID: 5, Name: "Jane Doe"}, {ID: 6, Name: "Tom O'Brien"}},
		},
	}
	if diff := cmp.Diff(want, got, cmpOpts...); diff != "" {
		t.Errorf("properties (-want +got):\n%s", diff)
	}
}

// The exported method sends the criteria's canonical query and detail level.
func TestListPropertiesCriteria(t *testing.T) {
	f := newFakeCRM(t, serveFixtures(t))
	c := newTestClient(t, f, Options{})
	got, err := c.ListProperties(t.Context(), harbourAU, normalize.Criteria{})
	if err != nil {
		t.Fatalf("ListProperties: %v", err)
	}
	if len(got) != 2 {
		t.Errorf("got %d properties, want 2", len(got))
	}
	if q := f.lastQuery(); !strings.Contains(q, "detail=short") {
		t.Errorf("query = %q, want detail=short", q)
	}
}

// The exported methods send the criteria's canonical query, asking for the
// detail level the hydration needs.
func TestParsedCriteria(t *testing.T) {
	f := newFakeCRM(t, serveFixtures(t))
	props, errs := normalize.ParseProperties(url.Values{"detail": {"full"}, "status": {"current"}, "limit": {"2"}}, normalize.Options{})
	if errs != nil {
		t.Fatalf("ParseProperties: %v", errs)
	}
	agents, errs := normalize.ParseAgents(url.Values{"name": {"Jane"}}, normalize.Options{})
	if errs != nil {
		t.Fatalf("ParseAgents: %v", errs)
	}
	full := props.Values().Encode()
	short := withDetail(props.Values(), normalize.Short).Encode()

	t.Run("one call", func(t *testing.T) {
		c := newTestClient(t, f, Options{Hydrate: HydrateNever})
		if _, err := c.ListProperties(t.Context(), harbourAU, props); err != nil {
			t.Fatalf("ListProperties: %v", err)
		}
		if q := f.lastQuery(); q != full || !strings.Contains(q, "detail=full") || !strings.Contains(q, "status%5B%5D=current") {
			t.Errorf("query = %q, want %q", q, full)
		}
	})
	t.Run("hydrated", func(t *testing.T) {
		c := newTestClient(t, f, Options{Hydrate: HydrateAlways})
		first := len(f.allQueries())
		if _, err := c.ListProperties(t.Context(), harbourAU, props); err != nil {
			t.Fatalf("ListProperties: %v", err)
		}
		if !strings.Contains(short, "detail=short") || !strings.Contains(short, "limit=2") {
			t.Fatalf("short query %q", short)
		}
		if q := f.allQueries()[first]; q != short { // the list comes before its documents
			t.Errorf("list query = %q, want %q", q, short)
		}
	})
	t.Run("agents", func(t *testing.T) {
		c := newTestClient(t, f, Options{})
		if _, err := c.ListAgents(t.Context(), harbourAU, agents); err != nil {
			t.Fatalf("ListAgents: %v", err)
		}
		if q, want := f.lastQuery(), agents.Values().Encode(); q != want {
			t.Errorf("query = %q, want %q", q, want)
		}
	})
}

func TestListPropertiesFullOneCall(t *testing.T) {
	f := newFakeCRM(t, serveFixtures(t))
	c := newTestClient(t, f, Options{Hydrate: HydrateNever})

	got, err := c.listProperties(t.Context(), harbourAU, nil, normalize.Full, "k")
	if err != nil {
		t.Fatalf("listProperties: %v", err)
	}
	if q := f.lastQuery(); q != "detail=full" {
		t.Errorf("query = %q, want detail=full", q)
	}
	want := []upstream.Property{
		{
			ID: 17, AgencyID: "HB-AU-00017",
			LastUpdated:  time.Date(2026, 11, 20, 9, 30, 0, 0, plus11),
			Approved:     time.Date(2024, 3, 1, 0, 0, 0, 0, time.UTC),
			StreetNumber: "12", StreetName: "Smith Street", AddressDisplay: true,
			Status: "CURRENT", Latitude: ptr(-33.8688), Longitude: ptr(151.2093),
			PriceText: "$650,000", PriceFrom: ptr(650000.0),
			Category: "Residential", PropertyType: "House",
			Suburb: "Bondi", Area: "Eastern Suburbs", Region: "Sydney",
			Bedrooms: ptr(3), Bathrooms: ptr(2), FloorSize: ptr(120.5), LotSize: ptr(450.0),
			BuiltIn: "1990s", Description: "Sunny family home",
			PhotoCount: 1, // the children win over count="5" in full detail
			Photos:     []upstream.Media{{URL: "https://img.example/1.jpg", Thumbnail: "https://img.example/t/1.jpg", Type: "Normal", Caption: "Front", Position: 1}},
			Agents:     []upstream.AgentRef{{ID: 5, Name: "Jane Doe"}},
			OpenHomes: []upstream.OpenHome{{
				Start: time.Date(2026, 11, 28, 10, 0, 0, 0, sydney),
				End:   time.Date(2026, 11, 28, 10, 30, 0, 0, sydney),
			}},
		},
		{
			ID: 20, AgencyID: "HB-AU-00020",
			LastUpdated:  time.Date(2026, 11, 19, 8, 0, 0, 0, plus11),
			Approved:     time.Date(2025, 1, 15, 0, 0, 0, 0, time.UTC),
			StreetNumber: "3", StreetName: "Vine Lane", AddressDisplay: true,
			Status: "CONTRACT", Latitude: ptr(-34.5), Longitude: ptr(150.9),
			PriceText: "Auction", Category: "Agricultural", PropertyType: "Vineyard",
			Suburb: "Mudgee", Region: "Central West", LotSize: ptr(200000.0),
		},
	}
	if diff := cmp.Diff(want, got, cmpOpts...); diff != "" {
		t.Errorf("properties (-want +got):\n%s", diff)
	}
	if f.total() != 1 {
		t.Errorf("upstream calls = %d, want 1", f.total())
	}
}

func TestGetProperty(t *testing.T) {
	tests := []struct {
		name  string
		scope upstream.Scope
		id    int64
		want  upstream.Property
	}{
		{
			name:  "several open homes, CDATA, entities, comments, extras",
			scope: harbourAU,
			id:    17,
			want: upstream.Property{
				ID: 17, AgencyID: "HB-AU-00017",
				LastUpdated:  time.Date(2026, 11, 20, 9, 30, 0, 0, plus11),
				Approved:     time.Date(2024, 3, 1, 0, 0, 0, 0, time.UTC),
				StreetNumber: "12", StreetName: "Smith Street", AddressDisplay: true,
				Status: "CURRENT", Latitude: ptr(-33.8688), Longitude: ptr(151.2093),
				PriceText: "$650,000 – $700,000", PriceFrom: ptr(650000.0), PriceTo: ptr(700000.0),
				Category: "Residential", PropertyType: "House",
				Suburb: "Bondi", Area: "Eastern Suburbs", Region: "Sydney",
				Bedrooms: ptr(3), Bathrooms: ptr(2), FloorSize: ptr(120.5), LotSize: ptr(450.0),
				BuiltIn:     "1995-2000",
				Description: "Sunny <b>family</b> home & garden by the beach",
				PhotoCount:  2,
				Photos: []upstream.Media{
					{URL: "https://img.example/1.jpg", Thumbnail: "https://img.example/t/1.jpg", Type: "Normal", Caption: `Front "view"`, Position: 1},
					{URL: "https://img.example/2.jpg", Thumbnail: "https://img.example/t/2.jpg", Type: "Night", Caption: "", Position: 2},
				},
				VirtualTourCount: 1,
				VirtualTours:     []upstream.Media{{URL: "https://vt.example/1", Thumbnail: "https://vt.example/t/1.jpg", Caption: "Walkthrough", Position: 1}},
				FloorplanCount:   1,
				Floorplans:       []upstream.Media{{URL: "https://fp.example/1.png", Thumbnail: "https://fp.example/t/1.png", Caption: "Ground", Position: 1}},
				Agents:           []upstream.AgentRef{{ID: 5, Name: "Jane Doe"}, {ID: 6, Name: "Tom O'Brien"}},
				// The open home of 14 November has ended by testNow; the rest come by start.
				OpenHomes: []upstream.OpenHome{
					{Start: time.Date(2026, 11, 28, 10, 0, 0, 0, sydney), End: time.Date(2026, 11, 28, 10, 30, 0, 0, sydney)},
					{Start: time.Date(2026, 12, 5, 11, 0, 0, 0, sydney), End: time.Date(2026, 12, 5, 11, 45, 0, 0, sydney)},
				},
			},
		},
		{
			name:  "one open home, no prices permission",
			scope: harbourAU,
			id:    18,
			want: upstream.Property{
				ID: 18, AgencyID: "HB-AU-00018",
				LastUpdated: time.Date(2026, 11, 7, 14, 5, 10, 0, plus11),
				Approved:    time.Date(2023, 6, 30, 0, 0, 0, 0, time.UTC),
				StreetName:  "Lot 4 Hill & Dale Road",
				Status:      "SOLD", Latitude: ptr(-33.9), Longitude: ptr(151.1),
				PriceText: "Contact agent", Category: "Commercial", PropertyType: "Retail",
				Suburb: "Parramatta", Area: "Western Sydney", Region: "Sydney",
				Bedrooms: ptr(0), Bathrooms: ptr(1), FloorSize: ptr(80.0),
				BuiltIn: "1970", Description: "Corner shop",
				Agents: []upstream.AgentRef{{ID: 6, Name: "Tom O'Brien"}},
				OpenHomes: []upstream.OpenHome{
					{Start: time.Date(2026, 12, 1, 17, 30, 0, 0, sydney), End: time.Date(2026, 12, 1, 18, 0, 0, 0, sydney)},
				},
			},
		},
		{
			name:  "no open homes, empty and missing elements",
			scope: harbourNZ,
			id:    19,
			want: upstream.Property{
				ID: 19, AgencyID: "SU-NZ-19",
				LastUpdated: time.Date(2026, 11, 2, 7, 15, 0, 0, plus13),
				StreetName:  "Beach Road", AddressDisplay: true,
				Status: "CURRENT", Latitude: ptr(-36.8485), Longitude: ptr(174.7633),
				Category: "Residential", PropertyType: "Lifestyle Property",
			},
		},
		{
			name:  "ISO-8859-1 with an HTML entity, New Zealand time",
			scope: harbourNZ,
			id:    21,
			want: upstream.Property{
				ID: 21, AgencyID: "SU-NZ-21",
				LastUpdated:  time.Date(2026, 11, 3, 10, 0, 0, 0, plus13),
				StreetNumber: "7", StreetName: "Café Street", AddressDisplay: true,
				Status: "CURRENT", Suburb: "Mangere", Description: "Near the café",
				OpenHomes: []upstream.OpenHome{
					{Start: time.Date(2026, 11, 29, 13, 0, 0, 0, auckland), End: time.Date(2026, 11, 29, 13, 30, 0, 0, auckland)},
				},
			},
		},
	}
	f := newFakeCRM(t, serveFixtures(t))
	c := newTestClient(t, f, Options{})
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := c.GetProperty(t.Context(), tc.scope, tc.id)
			if err != nil {
				t.Fatalf("GetProperty: %v", err)
			}
			if diff := cmp.Diff(tc.want, got, cmpOpts...); diff != "" {
				t.Errorf("property (-want +got):\n%s", diff)
			}
			for _, oh := range got.OpenHomes { // the wall clock of the country
				if z, _ := oh.Start.Zone(); z == "UTC" {
					t.Errorf("open home %v read in UTC", oh.Start)
				}
			}
		})
	}
}

func TestAgents(t *testing.T) {
	f := newFakeCRM(t, serveFixtures(t))
	c := newTestClient(t, f, Options{})
	lu17 := time.Date(2026, 11, 20, 9, 30, 0, 0, plus11)

	t.Run("short list", func(t *testing.T) {
		got, err := c.listAgents(t.Context(), harbourAU, url.Values{"name": {"a"}}, normalize.Short)
		if err != nil {
			t.Fatalf("listAgents: %v", err)
		}
		want := []upstream.Agent{
			{ID: 5, Name: "Jane Doe", PropertyCount: 2},
			{ID: 6, Name: "Tom O'Brien", PropertyCount: 1},
			{ID: 7, Name: "Ana Silva"},
		}
		if diff := cmp.Diff(want, got, cmpOpts...); diff != "" {
			t.Errorf("agents (-want +got):\n%s", diff)
		}
		if q, want := f.lastQuery(), "detail=short&name=a"; q != want {
			t.Errorf("query = %q, want %q", q, want)
		}
	})
	t.Run("full list", func(t *testing.T) {
		got, err := c.listAgents(t.Context(), harbourAU, nil, normalize.Full)
		if err != nil {
			t.Fatalf("listAgents: %v", err)
		}
		want := []upstream.Agent{{
			ID: 5, Name: "Jane Doe", Username: "jdoe", Phone: "02 9000 0000",
			MobilePhone: "0400 000 000", Email: "jane@harbour.example",
			Description: "Ten years in the east & south", WebsiteURL: "https://harbour.example/jane",
			PropertyCount: 2, // the children win over count="7" in full detail
			Properties: []upstream.PropertyRef{
				{ID: 17, LastUpdated: lu17, Address: "12 Smith Street", AgencyID: "HB-AU-00017"},
				{ID: 20, LastUpdated: time.Date(2026, 11, 19, 8, 0, 0, 0, plus11), Address: "3 Vine Lane", AgencyID: "HB-AU-00020"},
			},
		}}
		if diff := cmp.Diff(want, got, cmpOpts...); diff != "" {
			t.Errorf("agents (-want +got):\n%s", diff)
		}
	})
	t.Run("single", func(t *testing.T) {
		got, err := c.GetAgent(t.Context(), harbourAU, 6)
		if err != nil {
			t.Fatalf("GetAgent: %v", err)
		}
		want := upstream.Agent{
			ID: 6, Name: "Tom O'Brien", Username: "tobrien", Phone: "02 9000 0001",
			AfterHoursPhone: "02 9000 0002", MobilePhone: "0400 000 001", Email: "tom@harbour.example",
			Description: "Commercial & retail", PhotoURL: "https://img.example/agents/6.jpg",
			PropertyCount: 1,
			Properties: []upstream.PropertyRef{
				{ID: 18, LastUpdated: time.Date(2026, 11, 7, 14, 5, 10, 0, plus11), Address: "Lot 4 Hill & Dale Road", AgencyID: "HB-AU-00018"},
			},
		}
		if diff := cmp.Diff(want, got, cmpOpts...); diff != "" {
			t.Errorf("agent (-want +got):\n%s", diff)
		}
		if f.count("/au/agents/6.xml") != 1 {
			t.Errorf("calls to /au/agents/6.xml = %d, want 1", f.count("/au/agents/6.xml"))
		}
	})
}

func TestCriteriaErrors(t *testing.T) {
	tests := []struct {
		fixture string
		want    normalize.Errors
	}{
		{"errors_1.xml", normalize.Errors{{Field: "id", Message: `ID "abc" is not a valid number`}}},
		{"errors_2.xml", normalize.Errors{
			{Field: "approved_from", Message: `Invalid date "2024-01-01": use the format yyyymmdd`},
			{Field: "category", Message: `Invalid category "house": must be Residential, Commercial or Agricultural`},
		}},
	}
	for _, tc := range tests {
		t.Run(tc.fixture, func(t *testing.T) {
			f := newFakeCRM(t, serveFile(t, tc.fixture))
			c := newTestClient(t, f, Options{})
			calls := map[string]func() error{
				"properties short": func() error {
					_, err := c.listProperties(t.Context(), harbourAU, nil, normalize.Short, "k")
					return err
				},
				"properties full": func() error {
					_, err := c.listProperties(t.Context(), harbourAU, nil, normalize.Full, "k")
					return err
				},
				"properties hydrated": func() error {
					c := newTestClient(t, f, Options{Hydrate: HydrateAlways})
					_, err := c.listProperties(t.Context(), harbourAU, nil, normalize.Full, "k")
					return err
				},
				"agents": func() error {
					_, err := c.listAgents(t.Context(), harbourAU, nil, normalize.Short)
					return err
				},
			}
			for name, call := range calls {
				var ce *upstream.CriteriaError
				if err := call(); !errors.As(err, &ce) {
					t.Fatalf("%s: err = %v, want a *upstream.CriteriaError", name, err)
				}
				if diff := cmp.Diff(tc.want, ce.Errors); diff != "" {
					t.Errorf("%s: errors (-want +got):\n%s", name, diff)
				}
			}
		})
	}
}

func TestNotFound(t *testing.T) {
	f := newFakeCRM(t, serveFixtures(t))
	c := newTestClient(t, f, Options{})

	_, err := c.GetProperty(t.Context(), harbourAU, 999)
	var nf *NotFoundError
	if !errors.Is(err, upstream.ErrNotFound) || !errors.As(err, &nf) {
		t.Fatalf("GetProperty(999) = %v, want ErrNotFound as *NotFoundError", err)
	}
	if nf.Message != "Property with ID 999 not found" {
		t.Errorf("message = %q", nf.Message)
	}
	if want := "crm: get property au 999: not found: Property with ID 999 not found"; err.Error() != want {
		t.Errorf("error = %q, want %q", err, want)
	}

	_, err = c.GetAgent(t.Context(), harbourAU, 999)
	if !errors.Is(err, upstream.ErrNotFound) || !errors.As(err, &nf) || nf.Message != "Agent with ID 999 not found" {
		t.Errorf("GetAgent(999) = %v, want ErrNotFound with the CRM's message", err)
	}
}

func TestCredentials(t *testing.T) {
	f := newFakeCRM(t, serveFixtures(t))

	t.Run("each tenant its own", func(t *testing.T) {
		c := newTestClient(t, f, Options{})
		for _, s := range []upstream.Scope{harbourAU, summitAU} {
			if _, err := c.GetAgent(t.Context(), s, 6); err != nil {
				t.Errorf("GetAgent as %s: %v", s.Tenant, err) // the fake answers 401 to a wrong pair
			}
		}
	})
	t.Run("no credentials", func(t *testing.T) {
		c := newTestClient(t, f, Options{})
		before := f.total()
		_, err := c.GetProperty(t.Context(), upstream.Scope{Tenant: "nobody", Country: "au"}, 17)
		if !errors.Is(err, errNoCredentials) || !strings.Contains(err.Error(), `"nobody"`) {
			t.Errorf("err = %v, want no credentials for tenant \"nobody\"", err)
		}
		if f.total() != before {
			t.Errorf("the CRM was called without credentials")
		}
	})
	t.Run("rejected", func(t *testing.T) {
		c := newTestClient(t, f, Options{Credentials: map[string]Credential{"harbour": {Username: "harbour-crm", Password: "wrong"}}})
		_, err := c.GetProperty(t.Context(), harbourAU, 17)
		if !errors.Is(err, errCredentials) || errors.Is(err, upstream.ErrNotFound) {
			t.Errorf("err = %v, want rejected credentials", err)
		}
		if !strings.Contains(err.Error(), "HTTP 401") || strings.Contains(err.Error(), "wrong") {
			t.Errorf("err = %q: want the status and never the password", err)
		}
	})
}

func TestParseHydrateMode(t *testing.T) {
	tests := []struct {
		in      string
		want    HydrateMode
		wantErr bool
	}{
		{"", HydrateAuto, false},
		{"auto", HydrateAuto, false},
		{" Always ", HydrateAlways, false},
		{"NEVER", HydrateNever, false},
		{"sometimes", 0, true},
	}
	for _, tc := range tests {
		got, err := ParseHydrateMode(tc.in)
		if (err != nil) != tc.wantErr || got != tc.want {
			t.Errorf("ParseHydrateMode(%q) = %v, %v; want %v, error %v", tc.in, got, err, tc.want, tc.wantErr)
		}
		if err == nil && got.String() != strings.ToLower(strings.TrimSpace(tc.in)) && tc.in != "" {
			t.Errorf("%v.String() = %q", got, got.String())
		}
	}
}

func TestNewOptions(t *testing.T) {
	tests := []struct {
		name    string
		o       Options
		wantErr string
	}{
		{"defaults", Options{BaseURL: "http://crm.example/api/"}, ""},
		{"no base", Options{}, "BaseURL is required"},
		{"scheme", Options{BaseURL: "ftp://crm.example"}, "scheme must be http or https"},
		{"credentials in URL", Options{BaseURL: "http://u:p@crm.example"}, "must not carry credentials"},
		{"query", Options{BaseURL: "http://crm.example/?a=b"}, "query or fragment"},
		{"negatives", Options{BaseURL: "http://crm.example", Timeout: -1, MaxConcurrency: -1, MaxBodyBytes: -1, HydrateConcurrency: -1},
			"Timeout -1ns: must not be negative; MaxConcurrency -1: must not be negative; MaxBodyBytes -1: must not be negative; HydrateConcurrency -1: must not be negative"},
		{"mode", Options{BaseURL: "http://crm.example", Hydrate: 9}, "Hydrate HydrateMode(9): unknown mode"},
		{"empty username", Options{BaseURL: "http://crm.example", Credentials: map[string]Credential{"t": {}}}, `Credentials["t"]: empty username`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c, err := New(tc.o)
			if tc.wantErr == "" {
				if err != nil {
					t.Fatalf("New: %v", err)
				}
				c.Close()
				if c.timeout != DefaultTimeout || c.maxConc != DefaultMaxConcurrency || c.maxBody != DefaultMaxBodyBytes ||
					c.hydrateConc != DefaultHydrateConcurrency || c.docTTL != DefaultDocTTL || c.transport == nil || c.now == nil {
					t.Errorf("defaults not applied: %+v", c)
				}
				if got := c.base.JoinPath("au", "properties.xml").String(); got != "http://crm.example/api/au/properties.xml" {
					t.Errorf("URL = %q", got)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Errorf("New: err = %v, want it to contain %q", err, tc.wantErr)
			}
		})
	}
}

func TestInvalidCountry(t *testing.T) {
	f := newFakeCRM(t, serveFixtures(t))
	c := newTestClient(t, f, Options{})
	_, err := c.GetProperty(t.Context(), upstream.Scope{Tenant: "harbour", Country: "../admin"}, 1)
	if !errors.Is(err, errBadCountry) {
		t.Errorf("err = %v, want invalid country", err)
	}
	if f.total() != 0 {
		t.Errorf("the CRM was called")
	}
}

// roundTripFunc is an http.RoundTripper of a function.
type roundTripFunc func(*http.Request) (*http.Response, error)

func (f roundTripFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

// TestWrapTransport: the wrapper sees every call, over the Client's own
// transport, which Close still owns.
func TestWrapTransport(t *testing.T) {
	f := newFakeCRM(t, serveFixtures(t))
	var calls atomic.Int32
	c := newTestClient(t, f, Options{WrapTransport: func(rt http.RoundTripper) http.RoundTripper {
		if _, ok := rt.(*http.Transport); !ok {
			t.Errorf("wrapped %T, want the Client's own *http.Transport", rt)
		}
		return roundTripFunc(func(r *http.Request) (*http.Response, error) {
			calls.Add(1)
			return rt.RoundTrip(r)
		})
	}})
	if _, err := c.listProperties(t.Context(), harbourAU, url.Values{}, normalize.Short, "k"); err != nil {
		t.Fatalf("listProperties: %v", err)
	}
	if calls.Load() != 1 || c.transport == nil {
		t.Errorf("wrapper saw %d calls (own transport %v), want 1 over the Client's own", calls.Load(), c.transport != nil)
	}
}
