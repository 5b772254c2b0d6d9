package normalize_test

import (
	"testing"

	"listingproxy/normalize"
)

func TestKeyEquivalence(t *testing.T) {
	props, agents := parseFunc(normalize.ParseProperties), parseFunc(normalize.ParseAgents)
	tests := []struct {
		name     string
		parseA   parseFunc
		a        string
		parseB   parseFunc
		b        string
		sameKey  bool
		optsBoth normalize.Options
	}{
		{"status forms and order", props, "status[]=sold&status[]=current", props, "status=current&status=sold", true, normalize.Options{}},
		{"status case", props, "status=SOLD", props, "status=sold", true, normalize.Options{}},
		{"status repeated", props, "status=sold&status=sold", props, "status=sold", true, normalize.Options{}},
		{"keys are case-sensitive", props, "Status=sold", props, "", true, normalize.Options{}},
		{"unknown parameters", props, "utm_source=x&_=123", props, "", true, normalize.Options{}},
		{"empty value", props, "status=&category=", props, "", true, normalize.Options{}},
		{"trimmed", props, "street_name=+Main+", props, "street_name=main", true, normalize.Options{}},
		{"defaults written out", props, "detail=short&offset=0&order=id&limit=1000", props, "", true, normalize.Options{}},
		{"limit over max is max", props, "limit=5000", props, "", true, normalize.Options{}},
		{"limit under max", props, "limit=999", props, "", false, normalize.Options{}},
		{"limit zero", props, "limit=0", props, "", false, normalize.Options{}},
		{"rule 1 drops filters", props, "id=5&status=sold&agency_id=x", props, "id=5", true, normalize.Options{}},
		{"rule 2 drops filters", props, "agency_id=x&status=sold", props, "agency_id=x", true, normalize.Options{}},
		{"ids in any order", props, "id=2&id=1", props, "id[]=1&id[]=2&id=01", true, normalize.Options{}},
		{"agency id is case-sensitive", props, "agency_id=A", props, "agency_id=a", false, normalize.Options{}},
		{"comma inside a value", props, "agency_id=a%2Cb", props, "agency_id=a&agency_id=b", false, normalize.Options{}},
		{"separator inside a value", props, "street_name=a%26detail%3Dfull", props, "street_name=a&detail=full", false, normalize.Options{}},
		{"order implied id", props, "order=price&order=id", props, "order=price", true, normalize.Options{}},
		{"order after id", props, "order=id&order=price", props, "", true, normalize.Options{}},
		{"order priority matters", props, "order=price&order=status", props, "order=status&order=price", false, normalize.Options{}},
		{"price spelling", props, "price_from=100", props, "price_from=100.000", true, normalize.Options{}},
		{"price from is not price to", props, "price_from=100", props, "price_to=100", false, normalize.Options{}},
		{"geo negative zero", props, "geo[lat]=-0&geo[long]=0&geo[rad]=1", props, "geo[lat]=0&geo[long]=-0.0&geo[rad]=1.0", true, normalize.Options{}},
		{"geo lat is not long", props, "geo[lat]=1&geo[long]=2&geo[rad]=1", props, "geo[lat]=2&geo[long]=1&geo[rad]=1", false, normalize.Options{}},
		{"date from is not date to", props, "approved_from=20240101", props, "approved_to=20240101", false, normalize.Options{}},
		{"featured case", props, "featured=True", props, "featured=true", true, normalize.Options{}},
		{"bedrooms is not bathrooms", props, "bedrooms=2", props, "bathrooms=2", false, normalize.Options{}},
		{"detail", props, "detail=full", props, "", false, normalize.Options{}},
		{"resources differ", props, "", agents, "", false, normalize.Options{}},
		{"agent name case", agents, "name=John", agents, "name=JOHN", true, normalize.Options{}},
		{"agent name is not username", agents, "name=john", agents, "username=john", false, normalize.Options{}},
		{"agent order id", agents, "order=id", agents, "", true, normalize.Options{}},
		{"agent order name", agents, "order=name", agents, "", false, normalize.Options{}},
		{"max results default", props, "", props, "limit=50", true, normalize.Options{MaxResults: 50}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			a, errs := tt.parseA(mustQuery(t, tt.a), tt.optsBoth)
			if errs != nil {
				t.Fatalf("parse(%q) errors: %v", tt.a, errs)
			}
			b, errs := tt.parseB(mustQuery(t, tt.b), tt.optsBoth)
			if errs != nil {
				t.Fatalf("parse(%q) errors: %v", tt.b, errs)
			}
			if got := a.Key() == b.Key(); got != tt.sameKey {
				t.Errorf("Key(%q) = %q, Key(%q) = %q: same = %t; want %t", tt.a, a.Key(), tt.b, b.Key(), got, tt.sameKey)
			}
		})
	}
}

func TestKeyFormat(t *testing.T) {
	tests := []struct {
		name  string
		parse parseFunc
		query string
		want  string
	}{
		{"properties default", normalize.ParseProperties, "", "properties?detail=short&limit=1000&offset=0&order=id"},
		{"properties every filter", normalize.ParseProperties,
			"agent_id=2&agent_id=1&street_number=12A&street_name=George+St&price_from=100.50&price_to=200000&category=residential&status=SOLD&status=current" +
				"&property_type=House&price_type=Auction&bedrooms=3&bathrooms=2&geo[lat]=-33.8688&geo[long]=151.2093&geo[rad]=2.5" +
				"&featured=true&approved_from=20240101&approved_to=20241231&detail=full&limit=10&offset=20&order=price",
			"properties?agent_id=1,2&street_number=12a&street_name=george+st&price_from=100.5&price_to=200000&category=Residential&status=CURRENT,SOLD" +
				"&property_type=house&price_type=auction&bedrooms=3&bathrooms=2&geo=-33.8688,151.2093,2.5" +
				"&featured=true&approved_from=2024-01-01&approved_to=2024-12-31&detail=full&limit=10&offset=20&order=price,id"},
		{"properties escaped text", normalize.ParseProperties, "agency_id=A%2CB%26C&agency_id=%C3%A9", "properties?agency_id=A%2CB%26C,%C3%A9&detail=short&limit=1000&offset=0&order=id"},
		{"agents", normalize.ParseAgents, "id=3&id=1", "agents?id=1,3&detail=short&limit=1000&offset=0&order=id"},
		{"agents name", normalize.ParseAgents, "name=Jo+Bloggs&username=JB&order=username", "agents?name=jo+bloggs&username=jb&detail=short&limit=1000&offset=0&order=username,id"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, errs := tt.parse(mustQuery(t, tt.query), normalize.Options{})
			if errs != nil {
				t.Fatalf("parse(%q) errors: %v", tt.query, errs)
			}
			if got := c.Key(); got != tt.want {
				t.Errorf("Key() = %q; want %q", got, tt.want)
			}
		})
	}
}
