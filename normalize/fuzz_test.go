package normalize_test

import (
	"net/url"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"listingproxy/normalize"
)

// Field names in the order the spec's tables give them, which is the order
// errors must come in.
var (
	propertyFields = []string{"id", "agency_id", "agent_id", "street_number", "street_name", "price_from", "price_to",
		"category", "status", "property_type", "price_type", "bedrooms", "bathrooms", "geo[lat]", "geo[long]", "geo[rad]",
		"featured", "approved_from", "approved_to", "detail", "limit", "offset", "order"}
	agentFields = []string{"id", "name", "username", "detail", "limit", "offset", "order"}
)

func fuzzSeeds(f *testing.F) {
	seeds := []string{
		"",
		"id=1&id[]=2&id=1",
		"id[]=&id=x&id=9223372036854775807",
		"id=99999999999999999999999999999999999999999999999999",
		"price_from=NaN&price_to=Inf",
		"price_from=1e309&price_to=-0",
		"price_from=" + strings.Repeat("9", 32),
		"price_from=" + strings.Repeat("9", 31) + ".5",
		"price_from=0." + strings.Repeat("0", 29) + "1",
		"geo[lat]=-0&geo[long]=180&geo[rad]=1000",
		"geo[lat]=-89.99999999999999999999999&geo[long]=-0.000000000000000000000000001&geo[rad]=0.00000000000000000000000000001",
		"geo[lat][x]=1&geo[lat]=1",
		"geo[lat][]=1&geo[long]=2",
		"=1&[]=2&=&&&",
		"%00=%00&status=%00",
		"street_name=%C3%A9cole&name=%E2%80%AE&username=%F0%9F%98%80",
		"street_name=%FF%FE&agency_id=%C3",
		"street_name=" + strings.Repeat("%C8%BA", 67),
		"status=Sold&Status=x&category=re%C5%BFidential",
		"order=id&order=price&order[]=NAME&order=name",
		"approved_from=20240229&approved_to=20240228",
		"limit=0&offset=2147483647&detail=FULL",
		"featured=TRUE&featured=true",
		"name=a;b&x=1",
		strings.TrimSuffix(strings.Repeat("status[]=sold&", 10000), "&"),
		strings.TrimSuffix(strings.Repeat("id=1&id[]=2&", 5000), "&"),
	}
	for _, s := range seeds {
		f.Add(s)
	}
}

func fuzzParse(t *testing.T, raw string, parse parseFunc, fields []string) {
	q, err := url.ParseQuery(raw)
	if err != nil {
		t.Skip()
	}
	o := normalize.Options{MaxResults: 100, MaxValues: 20}
	c, errs := parse(q, o)
	if errs != nil {
		if len(errs) == 0 {
			t.Fatalf("non-nil empty Errors")
		}
		last := -1
		for _, e := range errs {
			i := slices.Index(fields, e.Field)
			if i < 0 {
				t.Fatalf("error on unknown field %q: %v", e.Field, errs)
			}
			if i <= last {
				t.Fatalf("errors out of order or repeated: %v", errs)
			}
			last = i
			if e.Message == "" {
				t.Fatalf("empty message for %q", e.Field)
			}
		}
		return
	}
	if c.Key() == "" {
		t.Fatalf("empty Key for valid criteria")
	}
	if c.Limit() < 0 || c.Limit() > o.MaxResults || c.Offset() < 0 {
		t.Fatalf("limit %d offset %d out of range", c.Limit(), c.Offset())
	}
	if ord := c.Order(); len(ord) == 0 || ord[len(ord)-1] != "id" {
		t.Fatalf("Order() = %q; want it to end with id", ord)
	}
	again, errs := parse(c.Values(), o)
	if errs != nil {
		t.Fatalf("parse(Values() = %q) errors: %v (Key %q)", c.Values().Encode(), errs, c.Key())
	}
	if diff := cmp.Diff(viewOf(c), viewOf(again)); diff != "" {
		t.Fatalf("parse(Values() = %q) differs (-first +again):\n%s", c.Values().Encode(), diff)
	}
}

func FuzzParseProperties(f *testing.F) {
	fuzzSeeds(f)
	f.Fuzz(func(t *testing.T, raw string) {
		fuzzParse(t, raw, normalize.ParseProperties, propertyFields)
	})
}

func FuzzParseAgents(f *testing.F) {
	fuzzSeeds(f)
	f.Fuzz(func(t *testing.T, raw string) {
		fuzzParse(t, raw, normalize.ParseAgents, agentFields)
	})
}
