package demo

import (
	"fmt"
	"reflect"
	"regexp"
	"strings"
	"testing"
	"time"
)

var testNow = time.Date(2026, 3, 14, 9, 26, 53, 0, time.UTC)

func TestCollectIsDeterministic(t *testing.T) {
	a, err := Collect(Options{Now: testNow})
	if err != nil {
		t.Fatal(err)
	}
	b, err := Collect(Options{Now: testNow})
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(a, b) {
		t.Fatal("two Collect calls with the same Options differ")
	}
}

// TestDemoRequirements checks, over the default demo, every property the demo
// data promises (see the package documentation of upstream/sqlstore).
func TestDemoRequirements(t *testing.T) {
	d, err := Collect(Options{Now: testNow})
	if err != nil {
		t.Fatal(err)
	}
	now := d.Options.Now

	// Tenants and sizes.
	if got, want := len(d.Tenants), 2; got != want {
		t.Fatalf("tenants = %d, want %d", got, want)
	}
	tenantName := map[int64]string{}
	for _, tn := range d.Tenants {
		tenantName[tn.ID] = tn.Name
	}
	if tenantName[1] != "harbour" || tenantName[2] != "summit" {
		t.Errorf("tenants = %v, want harbour and summit", d.Tenants)
	}
	if got, want := len(d.Properties), 4*DefaultPropertiesPerTenantCountry; got != want {
		t.Errorf("properties = %d, want %d", got, want)
	}
	if got, want := len(d.Agents), 4*DefaultAgentsPerTenantCountry; got != want {
		t.Errorf("agents = %d, want %d", got, want)
	}

	// Agents.
	agentByID := map[int64]Agent{}
	usernames := map[string]bool{}
	names := map[[2]string][]string{} // tenant+country -> names
	var withPhoto, withoutPhoto int
	for i, a := range d.Agents {
		if a.ID != int64(i+1) {
			t.Errorf("agent %d has id %d, want global ids 1..M", i, a.ID)
		}
		agentByID[a.ID] = a
		key := tenantName[a.TenantID] + "|" + a.Username
		if usernames[key] {
			t.Errorf("username %q not unique in tenant %d", a.Username, a.TenantID)
		}
		usernames[key] = true
		if a.Username != strings.ToLower(a.Username) || a.Username == "" {
			t.Errorf("username %q is not lower case", a.Username)
		}
		if a.PhotoURL == "" {
			withoutPhoto++
		} else {
			withPhoto++
		}
		if a.Name == "" || a.Email == "" || a.Phone == "" || a.MobilePhone == "" || a.WebsiteURL == "" {
			t.Errorf("agent %d lacks contact details: %+v", a.ID, a)
		}
		k := [2]string{tenantName[a.TenantID], a.Country}
		names[k] = append(names[k], a.Name)
	}
	if withPhoto == 0 || withoutPhoto == 0 {
		t.Errorf("agents with photo %d, without %d; want both", withPhoto, withoutPhoto)
	}
	for k, ns := range names {
		prefixShared := false
		for _, a := range ns {
			for _, b := range ns {
				if a != b && strings.HasPrefix(b, a) {
					prefixShared = true
				}
			}
		}
		if !prefixShared {
			t.Errorf("%v: no agent name is a prefix of another", k)
		}
	}

	// Properties.
	want := func(what string, ok bool) {
		t.Helper()
		if !ok {
			t.Errorf("demo lacks %s", what)
		}
	}
	seen := map[string]bool{}
	mark := func(parts ...string) { seen[strings.Join(parts, "|")] = true }
	agencyIDs := map[string]bool{}
	agencyRe := regexp.MustCompile(`^(HB|SM)-(AU|NZ)-\d{5}$`)
	fixedRe := regexp.MustCompile(`^\$\d{1,3}(,\d{3})*( - \$\d{1,3}(,\d{3})*)?$`)
	rentRe := regexp.MustCompile(`^\$\d{1,3}(,\d{3})* per week$`)
	categoryOf := map[string]string{}
	for c, ts := range typesBy {
		for _, ty := range ts {
			categoryOf[ty] = c
		}
	}
	byID := map[int64]Property{}
	start := time.Date(2018, 1, 1, 0, 0, 0, 0, time.UTC)
	for i, p := range d.Properties {
		byID[p.ID] = p
		tc := tenantName[p.TenantID] + "|" + p.Country
		if p.ID != int64(i+1) {
			t.Errorf("property %d has id %d, want global ids 1..N", i, p.ID)
		}
		mark("tc", tc)
		mark("status", tc, p.Status)
		mark("category", tc, p.Category)
		mark("type", p.PropertyType)
		mark("pricetype", p.PriceType)
		mark("featured", tc, boolStr(p.Featured))
		mark("display", boolStr(p.AddressDisplay))
		mark("priceTo", p.PriceType, boolStr(p.PriceTo != nil))
		mark("priceFrom", boolStr(p.PriceFrom != nil))

		if !agencyRe.MatchString(p.AgencyID) || agencyIDs[tenantName[p.TenantID]+p.AgencyID] {
			t.Errorf("property %d: agency id %q malformed or not unique", p.ID, p.AgencyID)
		}
		agencyIDs[tenantName[p.TenantID]+p.AgencyID] = true
		if categoryOf[p.PropertyType] != p.Category {
			t.Errorf("property %d: type %q in category %q", p.ID, p.PropertyType, p.Category)
		}
		if p.Suburb == "" || p.Area == "" || p.Region == "" || p.StreetName == "" {
			t.Errorf("property %d lacks address parts: %+v", p.ID, p)
		}
		if !inCountry(p.Country, p.Latitude, p.Longitude) {
			t.Errorf("property %d at (%v, %v) is outside %s", p.ID, p.Latitude, p.Longitude, p.Country)
		}
		if len(p.Description) == 0 || len(p.Description) > 100 {
			t.Errorf("property %d: description of %d characters", p.ID, len(p.Description))
		}
		if p.Approved.Before(start) || p.Approved.After(now) || !p.Approved.Equal(p.Approved.Truncate(24*time.Hour)) {
			t.Errorf("property %d: approved %v outside [2018-01-01, now] or not a date", p.ID, p.Approved)
		}
		if !p.LastUpdated.After(p.Approved) || p.LastUpdated.After(now) {
			t.Errorf("property %d: last_updated %v not in (approved %v, now]", p.ID, p.LastUpdated, p.Approved)
		}
		switch {
		case p.Status == "RENTED":
			want("a rent for "+p.AgencyID, rentRe.MatchString(p.PriceText))
		case p.PriceType == "fixed":
			if !fixedRe.MatchString(p.PriceText) {
				t.Errorf("property %d: fixed price text %q", p.ID, p.PriceText)
			}
		case p.PriceType == "auction":
			want("Auction text", p.PriceText == "Auction")
		case p.PriceType == "tender":
			want("Tender text", p.PriceText == "Tender")
		case p.PriceType == "pbn":
			want("pbn text", p.PriceText == "Price by negotiation")
		}
		if p.PriceTo != nil && (p.PriceFrom == nil || *p.PriceTo <= *p.PriceFrom) {
			t.Errorf("property %d: price_to %v without a lower price_from", p.ID, *p.PriceTo)
		}
		mark("builtin", builtInForm(p.BuiltIn))
		switch p.PropertyType {
		case "House", "Apartment", "Unit", "Townhouse", "Farm", "Lifestyle Property":
			if p.Bedrooms == nil || *p.Bedrooms < 1 || *p.Bedrooms > 6 || p.Bathrooms == nil || *p.Bathrooms < 1 || *p.Bathrooms > 3 {
				t.Errorf("property %d (%s): bedrooms/bathrooms not sensible", p.ID, p.PropertyType)
			}
		}
		if p.Category == "Commercial" && p.Bedrooms == nil {
			mark("commercial without bedrooms")
		}
		if p.PropertyType == "Apartment" && p.LotSize != nil {
			t.Errorf("property %d: apartment with lot size", p.ID)
		}
		if p.FloorSize != nil && *p.FloorSize <= 0 || p.LotSize != nil && *p.LotSize <= 0 {
			t.Errorf("property %d: non-positive size", p.ID)
		}
	}
	for _, tn := range []string{"harbour", "summit"} {
		for _, c := range []string{"au", "nz"} {
			tc := tn + "|" + c
			want("properties for "+tc, seen["tc|"+tc])
			for _, s := range statuses {
				want(tc+" status "+s, seen["status|"+tc+"|"+s])
			}
			for _, cat := range categories {
				want(tc+" category "+cat, seen["category|"+tc+"|"+cat])
			}
			want(tc+" featured properties", seen["featured|"+tc+"|true"])
		}
	}
	for _, ty := range []string{"House", "Apartment", "Unit", "Townhouse", "Retail", "Office", "Warehouse", "Vineyard", "Lifestyle Property", "Farm"} {
		want("type "+ty, seen["type|"+ty])
	}
	for _, pt := range []string{"auction", "tender", "pbn", "fixed"} {
		want("price type "+pt, seen["pricetype|"+pt])
	}
	want("a fixed price range", seen["priceTo|fixed|true"])
	want("a fixed price without price_to", seen["priceTo|fixed|false"])
	want("a property without price_from", seen["priceFrom|false"])
	want("address display true", seen["display|true"])
	want("address display false", seen["display|false"])
	want("commercial without bedrooms", seen["commercial without bedrooms"])
	for _, f := range []string{"year", "decade", "range", "empty"} {
		want("built_in form "+f, seen["builtin|"+f])
	}

	// Property agents.
	agentsOf := map[int64]int{}
	for _, pa := range d.PropertyAgents {
		p, a := byID[pa.PropertyID], agentByID[pa.AgentID]
		if p.TenantID != a.TenantID || p.Country != a.Country {
			t.Errorf("property %d and its agent %d differ in tenant or country", p.ID, a.ID)
		}
		agentsOf[pa.PropertyID]++
		if pa.Position != agentsOf[pa.PropertyID] {
			t.Errorf("property %d: agent position %d, want %d", pa.PropertyID, pa.Position, agentsOf[pa.PropertyID])
		}
	}
	var shared, alone int
	for _, n := range agentsOf {
		if n >= 2 {
			shared++
		}
	}
	alone = len(d.Properties) - len(agentsOf)
	want("properties shared by two agents", shared > 0)
	want("properties without agents", alone > 0)

	// Media.
	counts := map[int64]map[string]int{}
	for _, m := range d.Media {
		if counts[m.PropertyID] == nil {
			counts[m.PropertyID] = map[string]int{}
		}
		counts[m.PropertyID][m.Kind]++
		if m.Position != counts[m.PropertyID][m.Kind] {
			t.Errorf("property %d %s: position %d out of sequence", m.PropertyID, m.Kind, m.Position)
		}
		mark("media", m.Kind, m.Type, boolStr(m.Caption != ""))
		if m.URL == "" || m.Thumbnail == "" {
			t.Errorf("media without url or thumbnail: %+v", m)
		}
	}
	for _, ty := range []string{"Normal", "Elevated", "Night"} {
		want("photo type "+ty, seen["media|photo|"+ty+"|true"] || seen["media|photo|"+ty+"|false"])
	}
	want("photos with captions", seen["media|photo|Normal|true"])
	want("photos without captions", seen["media|photo|Normal|false"])
	want("virtual tours", seen["media|virtualtour||true"] || seen["media|virtualtour||false"])
	want("floorplans", seen["media|floorplan||true"] || seen["media|floorplan||false"])
	var noPhotos, noPlans int
	for _, p := range d.Properties {
		if counts[p.ID][KindPhoto] == 0 {
			noPhotos++
		}
		if counts[p.ID][KindFloorplan] == 0 {
			noPlans++
		}
	}
	want("properties without photos", noPhotos > 0)
	want("properties without floorplans", noPlans > 0)

	// Open homes.
	future := map[int64]int{}
	starts := map[int64]map[time.Time]bool{}
	var past int
	for _, oh := range d.OpenHomes {
		if !oh.End.After(oh.Start) {
			t.Errorf("open home of %d ends before it starts", oh.PropertyID)
		}
		if starts[oh.PropertyID] == nil {
			starts[oh.PropertyID] = map[time.Time]bool{}
		}
		if starts[oh.PropertyID][oh.Start] {
			t.Errorf("property %d has two open homes starting at %v", oh.PropertyID, oh.Start)
		}
		starts[oh.PropertyID][oh.Start] = true
		if oh.End.After(now) {
			future[oh.PropertyID]++
		} else {
			past++
		}
	}
	var zero, one, several int
	for _, p := range d.Properties {
		switch future[p.ID] {
		case 0:
			zero++
		case 1:
			one++
		default:
			several++
		}
	}
	want("properties with no open home ahead", zero > 0)
	want("properties with one open home ahead", one > 0)
	want("properties with several open homes ahead", several > 0)
	want("open homes in the past", past > 0)
}

func boolStr(b bool) string {
	if b {
		return "true"
	}
	return "false"
}

var (
	yearRe   = regexp.MustCompile(`^(19|20)\d\d$`)
	decadeRe = regexp.MustCompile(`^(19|20)\d0s$`)
	rangeRe  = regexp.MustCompile(`^(19|20)\d\d-(19|20)\d\d$`)
)

func builtInForm(s string) string {
	switch {
	case s == "":
		return "empty"
	case yearRe.MatchString(s):
		return "year"
	case decadeRe.MatchString(s):
		return "decade"
	case rangeRe.MatchString(s):
		return "range"
	}
	return "malformed " + s
}

func inCountry(c string, lat, long float64) bool {
	switch c {
	case "au":
		return lat > -44 && lat < -10 && long > 112 && long < 154
	case "nz":
		return lat > -48 && lat < -34 && (long > 166 && long < 179 || long > -177 && long < -176)
	}
	return false
}

func TestGenerateSizes(t *testing.T) {
	var s countSink
	if err := Generate(Options{PropertiesPerTenantCountry: 5, AgentsPerTenantCountry: 1, Now: testNow}, &s); err != nil {
		t.Fatal(err)
	}
	if s.properties != 20 || s.agents != 4*len(agentPrefixNames) {
		t.Errorf("got %d properties and %d agents, want 20 and %d", s.properties, s.agents, 4*len(agentPrefixNames))
	}
}

type countSink struct{ properties, agents int }

func (s *countSink) Tenant(Tenant) error               { return nil }
func (s *countSink) Agent(Agent) error                 { s.agents++; return nil }
func (s *countSink) Property(Property) error           { s.properties++; return nil }
func (s *countSink) PropertyAgent(PropertyAgent) error { return nil }
func (s *countSink) Media(Media) error                 { return nil }
func (s *countSink) OpenHome(OpenHome) error           { return nil }

// TestLargeAgentBlocks checks that blocks with more agents than there are
// plain first x last names still get distinct names per block and distinct
// usernames per tenant (the 1M-property benchmark has 5,000 per block).
func TestLargeAgentBlocks(t *testing.T) {
	ds, err := Collect(Options{PropertiesPerTenantCountry: 1, AgentsPerTenantCountry: 2000, Now: testNow})
	if err != nil {
		t.Fatal(err)
	}
	names := map[string]bool{}
	usernames := map[string]bool{}
	for _, a := range ds.Agents {
		name := fmt.Sprint(a.TenantID, a.Country, a.Name)
		user := fmt.Sprint(a.TenantID, a.Username)
		if names[name] || usernames[user] {
			t.Fatalf("agent %d: duplicate name %q or username %q", a.ID, a.Name, a.Username)
		}
		names[name], usernames[user] = true, true
		if strings.Contains(a.Username, "..") || strings.Contains(a.Username, " ") {
			t.Errorf("agent %d: username %q", a.ID, a.Username)
		}
	}
	if len(ds.Agents) != 8000 {
		t.Errorf("%d agents, want 8000", len(ds.Agents))
	}
}

// TestTotals: totals over the 2 tenants x 2 countries are split evenly,
// rounded up (a total is never short); 0 keeps the defaults.
func TestTotals(t *testing.T) {
	now := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	o := Totals(1001, 30, now)
	if o.PropertiesPerTenantCountry != 251 || o.AgentsPerTenantCountry != 8 || !o.Now.Equal(now) {
		t.Errorf("Totals(1001, 30) = %+v, want 251 properties and 8 agents per block", o)
	}
	if got := o.Properties(); got < 1001 {
		t.Errorf("Properties() = %d, fewer than the 1001 asked", got)
	}
	if z := Totals(0, 0, now).withDefaults(); z.PropertiesPerTenantCountry != DefaultPropertiesPerTenantCountry || z.AgentsPerTenantCountry != DefaultAgentsPerTenantCountry {
		t.Errorf("Totals(0, 0) = %+v, want the defaults", z)
	}
}
