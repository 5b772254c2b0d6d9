package normalize_test

import (
	"net/url"
	"strconv"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"listingproxy/normalize"
)

// view is everything a Criteria exposes, in a form go-cmp can compare.
type view struct {
	Resource normalize.Resource
	Detail   normalize.Detail
	Limit    int
	Offset   int
	Order    []string
	Prop     normalize.PropertyFilter
	Agent    normalize.AgentFilter
	Key      string
}

func viewOf(c normalize.Criteria) view {
	return view{c.Resource(), c.Detail(), c.Limit(), c.Offset(), c.Order(), c.Property(), c.Agent(), c.Key()}
}

func ptr[T any](v T) *T { return &v }

func mustQuery(t testing.TB, raw string) url.Values {
	t.Helper()
	q, err := url.ParseQuery(raw)
	if err != nil {
		if len(raw) > 100 {
			raw = raw[:100] + "..."
		}
		t.Fatalf("url.ParseQuery(%q): %v", raw, err)
	}
	return q
}

// parseFunc is ParseProperties or ParseAgents.
type parseFunc func(url.Values, normalize.Options) (normalize.Criteria, normalize.Errors)

// checkRoundTrip checks that the canonical query of c parses to the same
// criteria.
func checkRoundTrip(t *testing.T, parse parseFunc, c normalize.Criteria, o normalize.Options) {
	t.Helper()
	again, errs := parse(c.Values(), o)
	if errs != nil {
		t.Fatalf("parse(Values() = %q) errors: %v", c.Values().Encode(), errs)
	}
	if diff := cmp.Diff(viewOf(c), viewOf(again)); diff != "" {
		t.Errorf("parse(Values() = %q) differs (-first +again):\n%s", c.Values().Encode(), diff)
	}
}

func TestParsePropertiesValid(t *testing.T) {
	def := []string{"id"}
	tests := []struct {
		name  string
		query string
		opts  normalize.Options
		// want has Resource, Key zero: those are checked elsewhere.
		want view
	}{
		{"empty", "", normalize.Options{}, view{Limit: 1000, Order: def}},
		{"empty values are not given", "status=&id=&geo[lat]=&limit=&order=&detail=+", normalize.Options{}, view{Limit: 1000, Order: def}},
		{"unknown keys ignored", "Status=bogus&foo=bar&id[x]=1&geo[lat][x]=1&geo[lat][]=5&geo=1&=x&[]=y&name=x&ID=1", normalize.Options{}, view{Limit: 1000, Order: def}},
		{"ids merged sorted deduplicated", "id=3&id[]=1&id=3&id[]=007", normalize.Options{}, view{Limit: 1000, Order: def, Prop: normalize.PropertyFilter{IDs: []int64{1, 3, 7}}}},
		{"id max int64", "id=9223372036854775807", normalize.Options{}, view{Limit: 1000, Order: def, Prop: normalize.PropertyFilter{IDs: []int64{9223372036854775807}}}},
		{"rule 1 ignores other filters unvalidated", "id=5&status=bogus&price_from=x&agency_id=A&geo[lat]=1", normalize.Options{}, view{Limit: 1000, Order: def, Prop: normalize.PropertyFilter{IDs: []int64{5}}}},
		{"rule 1 keeps detail limit offset order", "id=5&detail=full&limit=10&offset=2&order=price", normalize.Options{}, view{Detail: normalize.Full, Limit: 10, Offset: 2, Order: []string{"price", "id"}, Prop: normalize.PropertyFilter{IDs: []int64{5}}}},
		{"rule 2 agency ids", "agency_id=B&agency_id[]=A&status=bogus&agent_id=x", normalize.Options{}, view{Limit: 1000, Order: def, Prop: normalize.PropertyFilter{AgencyIDs: []string{"A", "B"}}}},
		{"agency id keeps case, trimmed", "agency_id=+Ab%2C1+&agency_id=ab", normalize.Options{}, view{Limit: 1000, Order: def, Prop: normalize.PropertyFilter{AgencyIDs: []string{"Ab,1", "ab"}}}},
		{"agent ids", "agent_id=9&agent_id[]=2&agent_id=9", normalize.Options{}, view{Limit: 1000, Order: def, Prop: normalize.PropertyFilter{AgentIDs: []int64{2, 9}}}},
		{"street lower-cased and trimmed", "street_name=+George%20ST+&street_number=12A", normalize.Options{}, view{Limit: 1000, Order: def, Prop: normalize.PropertyFilter{StreetNumber: "12a", StreetName: "george st"}}},
		{"street unicode lower-cased", "street_name=%C3%89COLE", normalize.Options{}, view{Limit: 1000, Order: def, Prop: normalize.PropertyFilter{StreetName: "école"}}},
		{"street repeated same meaning", "street_name=Main&street_name[]=MAIN", normalize.Options{}, view{Limit: 1000, Order: def, Prop: normalize.PropertyFilter{StreetName: "main"}}},
		{"prices", "price_from=100&price_to=250000.50", normalize.Options{}, view{Limit: 1000, Order: def, Prop: normalize.PropertyFilter{PriceFrom: ptr(100.0), PriceTo: ptr(250000.5)}}},
		{"price bounds", "price_from=0&price_to=1000000000000000", normalize.Options{}, view{Limit: 1000, Order: def, Prop: normalize.PropertyFilter{PriceFrom: ptr(0.0), PriceTo: ptr(1e15)}}},
		{"price leading zeros", "price_from=007.50", normalize.Options{}, view{Limit: 1000, Order: def, Prop: normalize.PropertyFilter{PriceFrom: ptr(7.5)}}},
		{"categories", "category=residential&category[]=COMMERCIAL&category=Residential", normalize.Options{}, view{Limit: 1000, Order: def, Prop: normalize.PropertyFilter{Categories: []string{"Commercial", "Residential"}}}},
		{"statuses", "status=sold&status=Current&status[]=RENTED&status[]=contract&status=sold", normalize.Options{}, view{Limit: 1000, Order: def, Prop: normalize.PropertyFilter{Statuses: []string{"CONTRACT", "CURRENT", "RENTED", "SOLD"}}}},
		{"property and price types", "property_type=House&property_type[]=house&property_type=Apartment&price_type=Auction", normalize.Options{}, view{Limit: 1000, Order: def, Prop: normalize.PropertyFilter{PropertyTypes: []string{"apartment", "house"}, PriceTypes: []string{"auction"}}}},
		{"rooms", "bedrooms=0&bathrooms=1000", normalize.Options{}, view{Limit: 1000, Order: def, Prop: normalize.PropertyFilter{Bedrooms: ptr(0), Bathrooms: ptr(1000)}}},
		{"rooms repeated same value", "bedrooms=3&bedrooms=3&bedrooms[]=03", normalize.Options{}, view{Limit: 1000, Order: def, Prop: normalize.PropertyFilter{Bedrooms: ptr(3)}}},
		{"geo", "geo[lat]=-33.8688&geo[long]=151.2093&geo[rad]=5", normalize.Options{}, view{Limit: 1000, Order: def, Prop: normalize.PropertyFilter{Geo: &normalize.Geo{Lat: -33.8688, Long: 151.2093, RadiusKm: 5}}}},
		{"geo bounds", "geo[lat]=-90&geo[long]=180&geo[rad]=1000", normalize.Options{}, view{Limit: 1000, Order: def, Prop: normalize.PropertyFilter{Geo: &normalize.Geo{Lat: -90, Long: 180, RadiusKm: 1000}}}},
		{"geo negative zero", "geo[lat]=-0&geo[long]=-0.000&geo[rad]=0.001", normalize.Options{}, view{Limit: 1000, Order: def, Prop: normalize.PropertyFilter{Geo: &normalize.Geo{Lat: 0, Long: 0, RadiusKm: 0.001}}}},
		{"featured", "featured=TRUE", normalize.Options{}, view{Limit: 1000, Order: def, Prop: normalize.PropertyFilter{Featured: true}}},
		{"approved same day", "approved_from=20240229&approved_to=20240229", normalize.Options{}, view{Limit: 1000, Order: def, Prop: normalize.PropertyFilter{ApprovedFrom: "2024-02-29", ApprovedTo: "2024-02-29"}}},
		{"approved to only", "approved_to=20001231", normalize.Options{}, view{Limit: 1000, Order: def, Prop: normalize.PropertyFilter{ApprovedTo: "2000-12-31"}}},
		{"detail full any case", "detail=FULL&detail=full", normalize.Options{}, view{Detail: normalize.Full, Limit: 1000, Order: def}},
		{"detail short", "detail=Short", normalize.Options{}, view{Limit: 1000, Order: def}},
		{"limit zero is an empty page", "limit=0", normalize.Options{}, view{Limit: 0, Order: def}},
		{"limit below max", "limit=20&offset=40", normalize.Options{}, view{Limit: 20, Offset: 40, Order: def}},
		{"limit capped", "limit=2147483647&offset=2147483647", normalize.Options{}, view{Limit: 1000, Offset: 2147483647, Order: def}},
		{"max results option", "", normalize.Options{MaxResults: 50}, view{Limit: 50, Order: def}},
		{"max results option caps", "limit=60", normalize.Options{MaxResults: 50}, view{Limit: 50, Order: def}},
		{"offset at max offset", "offset=10000", normalize.Options{MaxOffset: 10000}, view{Limit: 1000, Offset: 10000, Order: def}},
		{"negative max offset: no cap", "offset=2147483647", normalize.Options{MaxOffset: -1}, view{Limit: 1000, Offset: 2147483647, Order: def}},
		{"order plain before array form", "order=price&order[]=ID&order=status", normalize.Options{}, view{Limit: 1000, Order: []string{"price", "status", "id"}}},
		{"order duplicates dropped", "order=Price&order=price&order=bedrooms", normalize.Options{}, view{Limit: 1000, Order: []string{"price", "bedrooms", "id"}}},
		{"order after id dropped", "order=approved&order=id&order=price", normalize.Options{}, view{Limit: 1000, Order: []string{"approved", "id"}}},
		{"order every field", "order[]=property_type&order[]=category&order[]=suburb&order[]=bathrooms&order[]=bedrooms&order[]=price&order[]=last_updated&order[]=approved&order[]=status&order[]=agency_id",
			normalize.Options{}, view{Limit: 1000, Order: []string{"property_type", "category", "suburb", "bathrooms", "bedrooms", "price", "last_updated", "approved", "status", "agency_id", "id"}}},
		{"max values counts distinct", "id=1&id=2&id=2&id=1", normalize.Options{MaxValues: 2}, view{Limit: 1000, Order: def, Prop: normalize.PropertyFilter{IDs: []int64{1, 2}}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, errs := normalize.ParseProperties(mustQuery(t, tt.query), tt.opts)
			if errs != nil {
				t.Fatalf("ParseProperties(%q) errors: %v", tt.query, errs)
			}
			got := viewOf(c)
			got.Key = ""
			tt.want.Resource = normalize.Properties
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("ParseProperties(%q) mismatch (-want +got):\n%s", tt.query, diff)
			}
			checkRoundTrip(t, normalize.ParseProperties, c, tt.opts)
		})
	}
}

func TestParsePropertiesErrors(t *testing.T) {
	e := func(field, msg string) normalize.FieldError { return normalize.FieldError{Field: field, Message: msg} }
	const (
		textRule  = `: must be valid UTF-8 text of at most 200 bytes without control characters`
		priceRule = `: must be a number from 0 to 1000000000000000, written as digits with an optional decimal point`
		orderRule = `: must be one of id, agency_id, status, approved, last_updated, price, bedrooms, bathrooms, suburb, category, property_type`
	)
	geoOK := "&geo[long]=1&geo[rad]=1"
	tests := []struct {
		name  string
		query string
		opts  normalize.Options
		want  normalize.Errors
	}{
		{"id not a number", "id=abc", normalize.Options{}, normalize.Errors{e("id", `ID "abc" is not a valid number`)}},
		{"id zero", "id=0", normalize.Options{}, normalize.Errors{e("id", `ID "0" is not a valid number`)}},
		{"id negative", "id=-1", normalize.Options{}, normalize.Errors{e("id", `ID "-1" is not a valid number`)}},
		{"id plus sign", "id=%2B1", normalize.Options{}, normalize.Errors{e("id", `ID "+1" is not a valid number`)}},
		{"id decimal", "id=1.0", normalize.Options{}, normalize.Errors{e("id", `ID "1.0" is not a valid number`)}},
		{"id overflow", "id=9223372036854775808", normalize.Options{}, normalize.Errors{e("id", `ID "9223372036854775808" is not a valid number`)}},
		{"id inner space", "id=1+2", normalize.Options{}, normalize.Errors{e("id", `ID "1 2" is not a valid number`)}},
		{"id fullwidth digit", "id=%EF%BC%91", normalize.Options{}, normalize.Errors{e("id", `ID "１" is not a valid number`)}},
		{"id first bad value reported once", "id=1&id=x&id=y", normalize.Options{}, normalize.Errors{e("id", `ID "x" is not a valid number`)}},
		{"invalid id still overrides filters", "id=x&status=bad&agency_id=%FF", normalize.Options{}, normalize.Errors{e("id", `ID "x" is not a valid number`)}},
		{"agency id control char", "agency_id=a%00", normalize.Options{}, normalize.Errors{e("agency_id", `Invalid agency_id "a\x00"`+textRule)}},
		{"agent id", "agent_id=x1", normalize.Options{}, normalize.Errors{e("agent_id", `Agent ID "x1" is not a valid number`)}},
		{"street name control char", "street_name=a%0Ab", normalize.Options{}, normalize.Errors{e("street_name", `Invalid street_name "a\nb"`+textRule)}},
		{"street name invalid utf-8", "street_name=a%FF", normalize.Options{}, normalize.Errors{e("street_name", `Invalid street_name "a\xff"`+textRule)}},
		{"street number too long", "street_number=" + strings.Repeat("1", 201), normalize.Options{}, normalize.Errors{e("street_number", `Invalid street_number "`+strings.Repeat("1", 61)+`..."`+textRule)}},
		{"street name too long once lower-cased", "street_name=" + strings.Repeat("%C8%BA", 100), normalize.Options{}, normalize.Errors{e("street_name", `Invalid street_name "`+strings.Repeat("Ⱥ", 30)+`..."`+textRule)}},
		{"street name twice", "street_name=a&street_name=b", normalize.Options{}, normalize.Errors{e("street_name", `street_name is given more than once with different values`)}},
		{"price negative", "price_from=-1", normalize.Options{}, normalize.Errors{e("price_from", `Invalid price_from "-1"`+priceRule)}},
		{"price exponent", "price_from=1e5", normalize.Options{}, normalize.Errors{e("price_from", `Invalid price_from "1e5"`+priceRule)}},
		{"price NaN", "price_to=NaN", normalize.Options{}, normalize.Errors{e("price_to", `Invalid price_to "NaN"`+priceRule)}},
		{"price Inf", "price_to=Inf", normalize.Options{}, normalize.Errors{e("price_to", `Invalid price_to "Inf"`+priceRule)}},
		{"price hex", "price_to=0x10", normalize.Options{}, normalize.Errors{e("price_to", `Invalid price_to "0x10"`+priceRule)}},
		{"price underscore", "price_to=1_000", normalize.Options{}, normalize.Errors{e("price_to", `Invalid price_to "1_000"`+priceRule)}},
		{"price bare fraction", "price_to=.5", normalize.Options{}, normalize.Errors{e("price_to", `Invalid price_to ".5"`+priceRule)}},
		{"price trailing dot", "price_to=5.", normalize.Options{}, normalize.Errors{e("price_to", `Invalid price_to "5."`+priceRule)}},
		{"price plus", "price_to=%2B5", normalize.Options{}, normalize.Errors{e("price_to", `Invalid price_to "+5"`+priceRule)}},
		{"price above max", "price_to=1000000000000000.1", normalize.Options{}, normalize.Errors{e("price_to", `Invalid price_to "1000000000000000.1"`+priceRule)}},
		{"price absurd length", "price_to=" + strings.Repeat("9", 33), normalize.Options{}, normalize.Errors{e("price_to", `Invalid price_to "`+strings.Repeat("9", 33)+`"`+priceRule)}},
		{"price huge", "price_to=" + strings.Repeat("9", 400), normalize.Options{}, normalize.Errors{e("price_to", `Invalid price_to "`+strings.Repeat("9", 61)+`..."`+priceRule)}},
		{"price twice", "price_from=1&price_from[]=2", normalize.Options{}, normalize.Errors{e("price_from", `price_from is given more than once with different values`)}},
		{"category", "category=x", normalize.Options{}, normalize.Errors{e("category", `Invalid category "x": must be Residential, Commercial or Agricultural`)}},
		{"category unicode fold is not ascii", "category=re%C5%BFidential", normalize.Options{}, normalize.Errors{e("category", `Invalid category "reſidential": must be Residential, Commercial or Agricultural`)}},
		{"category long value cut", "category=" + strings.Repeat("a", 100), normalize.Options{}, normalize.Errors{e("category", `Invalid category "`+strings.Repeat("a", 61)+`...": must be Residential, Commercial or Agricultural`)}},
		{"status", "status=sold&status=gone", normalize.Options{}, normalize.Errors{e("status", `Invalid status "gone": must be current, contract, sold or rented`)}},
		{"status invalid utf-8", "status=%FF", normalize.Options{}, normalize.Errors{e("status", `Invalid status "\xff": must be current, contract, sold or rented`)}},
		{"property type control", "property_type=a%7F", normalize.Options{}, normalize.Errors{e("property_type", `Invalid property_type "a\x7f"`+textRule)}},
		{"price type invalid utf-8", "price_type=%C3", normalize.Options{}, normalize.Errors{e("price_type", `Invalid price_type "\xc3"`+textRule)}},
		{"bedrooms negative", "bedrooms=-1", normalize.Options{}, normalize.Errors{e("bedrooms", `Invalid bedrooms "-1": must be a whole number from 0 to 1000`)}},
		{"bedrooms fraction", "bedrooms=2.5", normalize.Options{}, normalize.Errors{e("bedrooms", `Invalid bedrooms "2.5": must be a whole number from 0 to 1000`)}},
		{"bathrooms too many", "bathrooms=1001", normalize.Options{}, normalize.Errors{e("bathrooms", `Invalid bathrooms "1001": must be a whole number from 0 to 1000`)}},
		{"bedrooms twice", "bedrooms=2&bedrooms=3", normalize.Options{}, normalize.Errors{e("bedrooms", `bedrooms is given more than once with different values`)}},
		{"geo lat range", "geo[lat]=90.1" + geoOK, normalize.Options{}, normalize.Errors{e("geo[lat]", `Invalid geo[lat] "90.1": must be a number from -90 to 90`)}},
		{"geo lat NaN", "geo[lat]=NaN" + geoOK, normalize.Options{}, normalize.Errors{e("geo[lat]", `Invalid geo[lat] "NaN": must be a number from -90 to 90`)}},
		{"geo lat 1e309", "geo[lat]=1e309" + geoOK, normalize.Options{}, normalize.Errors{e("geo[lat]", `Invalid geo[lat] "1e309": must be a number from -90 to 90`)}},
		{"geo long range", "geo[lat]=1&geo[long]=-180.5&geo[rad]=1", normalize.Options{}, normalize.Errors{e("geo[long]", `Invalid geo[long] "-180.5": must be a number from -180 to 180`)}},
		{"geo rad zero", "geo[lat]=1&geo[long]=1&geo[rad]=0.0", normalize.Options{}, normalize.Errors{e("geo[rad]", `Invalid geo[rad] "0.0": must be a number of kilometres greater than 0 and at most 1000`)}},
		{"geo rad negative", "geo[lat]=1&geo[long]=1&geo[rad]=-1", normalize.Options{}, normalize.Errors{e("geo[rad]", `Invalid geo[rad] "-1": must be a number of kilometres greater than 0 and at most 1000`)}},
		{"geo rad too big", "geo[lat]=1&geo[long]=1&geo[rad]=1000.5", normalize.Options{}, normalize.Errors{e("geo[rad]", `Invalid geo[rad] "1000.5": must be a number of kilometres greater than 0 and at most 1000`)}},
		{"geo rad missing", "geo[lat]=1&geo[long]=1", normalize.Options{}, normalize.Errors{e("geo[rad]", `geo[rad] is required with geo[lat] and geo[long]`)}},
		{"geo lat only", "geo[lat]=1", normalize.Options{}, normalize.Errors{
			e("geo[long]", `geo[long] is required with geo[lat] and geo[rad]`),
			e("geo[rad]", `geo[rad] is required with geo[lat] and geo[long]`),
		}},
		{"geo bad lat, missing long", "geo[lat]=x&geo[rad]=1", normalize.Options{}, normalize.Errors{
			e("geo[lat]", `Invalid geo[lat] "x": must be a number from -90 to 90`),
			e("geo[long]", `geo[long] is required with geo[lat] and geo[rad]`),
		}},
		{"geo lat twice", "geo[lat]=1&geo[lat]=2" + geoOK, normalize.Options{}, normalize.Errors{e("geo[lat]", `geo[lat] is given more than once with different values`)}},
		{"featured false", "featured=false", normalize.Options{}, normalize.Errors{e("featured", `Invalid featured "false": the only accepted value is true`)}},
		{"featured one", "featured=1", normalize.Options{}, normalize.Errors{e("featured", `Invalid featured "1": the only accepted value is true`)}},
		{"date dashed", "approved_from=2024-01-01", normalize.Options{}, normalize.Errors{e("approved_from", `Invalid date "2024-01-01": use the format yyyymmdd`)}},
		{"date not in calendar", "approved_from=20230229", normalize.Options{}, normalize.Errors{e("approved_from", `Invalid date "20230229": use the format yyyymmdd`)}},
		{"date month 13", "approved_from=20241301", normalize.Options{}, normalize.Errors{e("approved_from", `Invalid date "20241301": use the format yyyymmdd`)}},
		{"date year zero", "approved_from=00000101", normalize.Options{}, normalize.Errors{e("approved_from", `Invalid date "00000101": use the format yyyymmdd`)}},
		{"date short", "approved_to=2024011", normalize.Options{}, normalize.Errors{e("approved_to", `Invalid date "2024011": use the format yyyymmdd`)}},
		{"date long", "approved_to=202401011", normalize.Options{}, normalize.Errors{e("approved_to", `Invalid date "202401011": use the format yyyymmdd`)}},
		{"date to before from", "approved_from=20240201&approved_to=20240131", normalize.Options{}, normalize.Errors{e("approved_to", `Invalid approved_to "20240131": must not be before approved_from "20240201"`)}},
		{"detail", "detail=medium", normalize.Options{}, normalize.Errors{e("detail", `Invalid detail "medium": must be short or full`)}},
		{"detail twice", "detail=short&detail=full", normalize.Options{}, normalize.Errors{e("detail", `detail is given more than once with different values`)}},
		{"limit negative", "limit=-1", normalize.Options{}, normalize.Errors{e("limit", `Invalid limit "-1": must be a whole number from 0 to 2147483647`)}},
		{"limit overflow", "limit=2147483648", normalize.Options{}, normalize.Errors{e("limit", `Invalid limit "2147483648": must be a whole number from 0 to 2147483647`)}},
		{"offset fraction", "offset=1.5", normalize.Options{}, normalize.Errors{e("offset", `Invalid offset "1.5": must be a whole number from 0 to 2147483647`)}},
		{"offset past max offset", "offset=10001&offset=10001", normalize.Options{MaxOffset: 10000}, normalize.Errors{e("offset", `Invalid offset "10001": must be a whole number from 0 to 10000`)}},
		{"offset invalid with max offset", "offset=x", normalize.Options{MaxOffset: 10000}, normalize.Errors{e("offset", `Invalid offset "x": must be a whole number from 0 to 10000`)}},
		{"order unknown", "order=price&order=foo", normalize.Options{}, normalize.Errors{e("order", `Invalid order "foo"`+orderRule)}},
		{"order with direction", "order=price+desc", normalize.Options{}, normalize.Errors{e("order", `Invalid order "price desc"`+orderRule)}},
		{"order invalid after id", "order=id&order=foo", normalize.Options{}, normalize.Errors{e("order", `Invalid order "foo"`+orderRule)}},
		{"too many values", "status=sold&status=current&status=rented", normalize.Options{MaxValues: 2}, normalize.Errors{e("status", `Too many values for status: at most 2 distinct values are accepted`)}},
		{"too many ids", "id=1&id=2&id[]=3", normalize.Options{MaxValues: 2}, normalize.Errors{e("id", `Too many values for id: at most 2 distinct values are accepted`)}},
		{"rule 1 still validates detail limit offset order", "id=1&detail=x&limit=x&offset=x&order=x", normalize.Options{}, normalize.Errors{
			e("detail", `Invalid detail "x": must be short or full`),
			e("limit", `Invalid limit "x": must be a whole number from 0 to 2147483647`),
			e("offset", `Invalid offset "x": must be a whole number from 0 to 2147483647`),
			e("order", `Invalid order "x"`+orderRule),
		}},
		{"every error at once in spec order", "order=x&offset=x&limit=x&detail=x&approved_to=x&approved_from=x&featured=x&geo[rad]=x&geo[long]=x&geo[lat]=x&bathrooms=x&bedrooms=x&price_type=%00&property_type=%00&status=x&category=x&price_to=x&price_from=x&street_name=%00&street_number=%00&agent_id=x",
			normalize.Options{}, normalize.Errors{
				e("agent_id", `Agent ID "x" is not a valid number`),
				e("street_number", `Invalid street_number "\x00"`+textRule),
				e("street_name", `Invalid street_name "\x00"`+textRule),
				e("price_from", `Invalid price_from "x"`+priceRule),
				e("price_to", `Invalid price_to "x"`+priceRule),
				e("category", `Invalid category "x": must be Residential, Commercial or Agricultural`),
				e("status", `Invalid status "x": must be current, contract, sold or rented`),
				e("property_type", `Invalid property_type "\x00"`+textRule),
				e("price_type", `Invalid price_type "\x00"`+textRule),
				e("bedrooms", `Invalid bedrooms "x": must be a whole number from 0 to 1000`),
				e("bathrooms", `Invalid bathrooms "x": must be a whole number from 0 to 1000`),
				e("geo[lat]", `Invalid geo[lat] "x": must be a number from -90 to 90`),
				e("geo[long]", `Invalid geo[long] "x": must be a number from -180 to 180`),
				e("geo[rad]", `Invalid geo[rad] "x": must be a number of kilometres greater than 0 and at most 1000`),
				e("featured", `Invalid featured "x": the only accepted value is true`),
				e("approved_from", `Invalid date "x": use the format yyyymmdd`),
				e("approved_to", `Invalid date "x": use the format yyyymmdd`),
				e("detail", `Invalid detail "x": must be short or full`),
				e("limit", `Invalid limit "x": must be a whole number from 0 to 2147483647`),
				e("offset", `Invalid offset "x": must be a whole number from 0 to 2147483647`),
				e("order", `Invalid order "x"`+orderRule),
			}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, got := normalize.ParseProperties(mustQuery(t, tt.query), tt.opts)
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("ParseProperties(%q) errors mismatch (-want +got):\n%s", tt.query, diff)
			}
			if diff := cmp.Diff(view{}, viewOf(c)); diff != "" {
				t.Errorf("ParseProperties(%q) criteria on error not zero:\n%s", tt.query, diff)
			}
		})
	}
}

func TestParseAgents(t *testing.T) {
	def := []string{"id"}
	tests := []struct {
		name  string
		query string
		want  view
	}{
		{"empty", "", view{Limit: 1000, Order: def}},
		{"ids", "id[]=20&id=3&id=20", view{Limit: 1000, Order: def, Agent: normalize.AgentFilter{IDs: []int64{3, 20}}}},
		{"rule 1 ignores name and username", "id=3&name=%00&username=x", view{Limit: 1000, Order: def, Agent: normalize.AgentFilter{IDs: []int64{3}}}},
		{"name and username lower-cased", "name=+John+SMITH+&username=JSmith", view{Limit: 1000, Order: def, Agent: normalize.AgentFilter{Name: "john smith", Username: "jsmith"}}},
		{"property params unknown", "status=bogus&agency_id=x&geo[lat]=1", view{Limit: 1000, Order: def}},
		{"order name", "order=NAME&order[]=name", view{Limit: 1000, Order: []string{"name", "id"}}},
		{"order username", "order=username", view{Limit: 1000, Order: []string{"username", "id"}}},
		{"order id", "order=Id", view{Limit: 1000, Order: def}},
		{"detail limit offset", "detail=full&limit=5&offset=10", view{Detail: normalize.Full, Limit: 5, Offset: 10, Order: def}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, errs := normalize.ParseAgents(mustQuery(t, tt.query), normalize.Options{})
			if errs != nil {
				t.Fatalf("ParseAgents(%q) errors: %v", tt.query, errs)
			}
			got := viewOf(c)
			got.Key = ""
			tt.want.Resource = normalize.Agents
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("ParseAgents(%q) mismatch (-want +got):\n%s", tt.query, diff)
			}
			checkRoundTrip(t, normalize.ParseAgents, c, normalize.Options{})
		})
	}
}

func TestParseAgentsErrors(t *testing.T) {
	e := func(field, msg string) normalize.FieldError { return normalize.FieldError{Field: field, Message: msg} }
	tests := []struct {
		name  string
		query string
		want  normalize.Errors
	}{
		{"id", "id=abc&name=%00", normalize.Errors{e("id", `ID "abc" is not a valid number`)}},
		{"name control char", "name=a%09b", normalize.Errors{e("name", `Invalid name "a\tb": must be valid UTF-8 text of at most 200 bytes without control characters`)}},
		{"username twice", "username=a&username[]=b", normalize.Errors{e("username", `username is given more than once with different values`)}},
		{"order is single-valued", "order=name&order=username", normalize.Errors{e("order", `order is given more than once with different values`)}},
		{"order unknown", "order=price", normalize.Errors{e("order", `Invalid order "price": must be one of id, name, username`)}},
		{"all at once in spec order", "order=x&offset=x&limit=x&detail=x&username=%FF&name=%00", normalize.Errors{
			e("name", `Invalid name "\x00": must be valid UTF-8 text of at most 200 bytes without control characters`),
			e("username", `Invalid username "\xff": must be valid UTF-8 text of at most 200 bytes without control characters`),
			e("detail", `Invalid detail "x": must be short or full`),
			e("limit", `Invalid limit "x": must be a whole number from 0 to 2147483647`),
			e("offset", `Invalid offset "x": must be a whole number from 0 to 2147483647`),
			e("order", `Invalid order "x": must be one of id, name, username`),
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, got := normalize.ParseAgents(mustQuery(t, tt.query), normalize.Options{})
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("ParseAgents(%q) errors mismatch (-want +got):\n%s", tt.query, diff)
			}
		})
	}
	// max_offset bounds agent lists too.
	q := "offset=501"
	_, got := normalize.ParseAgents(mustQuery(t, q), normalize.Options{MaxOffset: 500})
	want := normalize.Errors{e("offset", `Invalid offset "501": must be a whole number from 0 to 500`)}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("ParseAgents(%q) with MaxOffset 500: errors mismatch (-want +got):\n%s", q, diff)
	}
}

func TestParseID(t *testing.T) {
	tests := []struct {
		in     string
		want   int64
		wantOK bool
	}{
		{"1", 1, true},
		{"42", 42, true},
		{"007", 7, true},
		{"9223372036854775807", 9223372036854775807, true},
		{"9223372036854775808", 0, false},
		{"99999999999999999999999999999999999999", 0, false},
		{"0", 0, false},
		{"", 0, false},
		{"-1", 0, false},
		{"+1", 0, false},
		{" 1", 0, false},
		{"1 ", 0, false},
		{"1_000", 0, false},
		{"0x1F", 0, false},
		{"1e3", 0, false},
		{"١", 0, false}, // Arabic-Indic digit one
	}
	for _, tt := range tests {
		t.Run(strconv.Quote(tt.in), func(t *testing.T) {
			got, ok := normalize.ParseID(tt.in)
			if got != tt.want || ok != tt.wantOK {
				t.Errorf("ParseID(%q) = %d, %t; want %d, %t", tt.in, got, ok, tt.want, tt.wantOK)
			}
		})
	}
}

func TestManyRepeatedParameters(t *testing.T) {
	tests := []struct {
		name  string
		query string
		want  string // Key
	}{
		{"same status", strings.Repeat("status=sold&", 10000), "properties?status=SOLD&detail=short&limit=1000&offset=0&order=id"},
		{"same limit", strings.Repeat("limit=5&", 10000), "properties?detail=short&limit=5&offset=0&order=id"},
		{"same order", strings.Repeat("order[]=price&", 10000), "properties?detail=short&limit=1000&offset=0&order=price,id"},
		{"alternating ids", strings.Repeat("id=1&id[]=2&", 5000), "properties?id=1,2&detail=short&limit=1000&offset=0&order=id"},
		{"unknown", strings.Repeat("x=1&", 10000), "properties?detail=short&limit=1000&offset=0&order=id"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			// url.ParseQuery accepts at most 10,000 parameters.
			c, errs := normalize.ParseProperties(mustQuery(t, strings.TrimSuffix(tt.query, "&")), normalize.Options{})
			if errs != nil {
				t.Fatalf("errors: %v", errs)
			}
			if got := c.Key(); got != tt.want {
				t.Errorf("Key() = %q; want %q", got, tt.want)
			}
		})
	}
	t.Run("many distinct ids", func(t *testing.T) {
		var b strings.Builder
		for i := 1; i <= 10000; i++ {
			b.WriteString("id[]=" + strconv.Itoa(i) + "&")
		}
		_, errs := normalize.ParseProperties(mustQuery(t, strings.TrimSuffix(b.String(), "&")), normalize.Options{})
		want := normalize.Errors{{Field: "id", Message: "Too many values for id: at most 500 distinct values are accepted"}}
		if diff := cmp.Diff(want, errs); diff != "" {
			t.Errorf("errors mismatch (-want +got):\n%s", diff)
		}
	})
}

func TestValues(t *testing.T) {
	tests := []struct {
		name  string
		parse parseFunc
		query string
		want  url.Values
	}{
		{"properties default", normalize.ParseProperties, "", url.Values{
			"detail": {"short"}, "limit": {"1000"}, "offset": {"0"}, "order[]": {"id"},
		}},
		{"properties every filter", normalize.ParseProperties,
			"agent_id=2&street_number=12A&street_name=George+St&price_from=100.50&price_to=200000&category=residential&status=SOLD&status=current" +
				"&property_type=House&price_type=Auction&bedrooms=3&bathrooms=2&geo[lat]=-33.8688&geo[long]=151.2093&geo[rad]=2.5" +
				"&featured=true&approved_from=20240101&approved_to=20241231&detail=full&limit=10&offset=20&order=price",
			url.Values{
				"agent_id[]": {"2"}, "street_number": {"12a"}, "street_name": {"george st"}, "price_from": {"100.5"}, "price_to": {"200000"},
				"category[]": {"residential"}, "status[]": {"current", "sold"}, "property_type[]": {"house"}, "price_type[]": {"auction"},
				"bedrooms": {"3"}, "bathrooms": {"2"}, "geo[lat]": {"-33.8688"}, "geo[long]": {"151.2093"}, "geo[rad]": {"2.5"},
				"featured": {"true"}, "approved_from": {"20240101"}, "approved_to": {"20241231"},
				"detail": {"full"}, "limit": {"10"}, "offset": {"20"}, "order[]": {"price", "id"},
			}},
		{"properties ids", normalize.ParseProperties, "id=2&id=1&status=x", url.Values{
			"id[]": {"1", "2"}, "detail": {"short"}, "limit": {"1000"}, "offset": {"0"}, "order[]": {"id"},
		}},
		{"properties agency ids", normalize.ParseProperties, "agency_id=b&agency_id=A", url.Values{
			"agency_id[]": {"A", "b"}, "detail": {"short"}, "limit": {"1000"}, "offset": {"0"}, "order[]": {"id"},
		}},
		{"agents", normalize.ParseAgents, "name=Jo&username=JS&order=name&limit=0", url.Values{
			"name": {"jo"}, "username": {"js"}, "detail": {"short"}, "limit": {"0"}, "offset": {"0"}, "order": {"name"},
		}},
		{"agents ids", normalize.ParseAgents, "id=9", url.Values{
			"id[]": {"9"}, "detail": {"short"}, "limit": {"1000"}, "offset": {"0"}, "order": {"id"},
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, errs := tt.parse(mustQuery(t, tt.query), normalize.Options{})
			if errs != nil {
				t.Fatalf("parse(%q) errors: %v", tt.query, errs)
			}
			if diff := cmp.Diff(tt.want, c.Values()); diff != "" {
				t.Errorf("Values() mismatch (-want +got):\n%s", diff)
			}
			checkRoundTrip(t, tt.parse, c, normalize.Options{})
		})
	}
	t.Run("zero criteria", func(t *testing.T) {
		if got := (normalize.Criteria{}).Values(); len(got) != 0 {
			t.Errorf("Criteria{}.Values() = %v; want empty", got)
		}
	})
}

func TestErrorsError(t *testing.T) {
	errs := normalize.Errors{{Field: "id", Message: "a"}, {Field: "limit", Message: "b"}}
	if got, want := errs.Error(), "id: a; limit: b"; got != want {
		t.Errorf("Error() = %q; want %q", got, want)
	}
}
