// Package demo owns the deterministic demo data of listingproxy: two tenants
// (harbour and summit), each with agents and properties in Australia and New
// Zealand, as rows of the legacy schema (docs/legacy-database.md).
//
// Generate streams the rows to a Sink, so it scales to a million properties
// without holding them; Collect gathers them in memory for tests. The same
// Options always yield the same rows: the generator draws from a PCG source
// with a constant seed and reads the clock only through Options.Now.
//
// It knows no SQL and must not import database/sql, proxy, cache or config;
// upstream/sqlstore writes the rows into a database.
package demo

import (
	"fmt"
	"math"
	"math/rand/v2"
	"strconv"
	"strings"
	"time"
)

// Options sizes the demo data. The zero value is the default demo.
type Options struct {
	// PropertiesPerTenantCountry is the number of properties each tenant has
	// in each country. Default 400.
	PropertiesPerTenantCountry int
	// AgentsPerTenantCountry is the number of agents each tenant has in each
	// country. Default 30; at least 3 (the agents with shared name prefixes).
	AgentsPerTenantCountry int
	// Now anchors every relative time: approved dates run from 2018-01-01 to
	// Now, open homes are placed around Now (most of them in the future, so
	// the demo stays alive). Default time.Now(). It is truncated to the
	// second and converted to UTC.
	Now time.Time
}

// Default sizes of Options.
const (
	DefaultPropertiesPerTenantCountry = 400
	DefaultAgentsPerTenantCountry     = 30
)

// Totals are Options for totals over the demo's tenants and countries
// (listingproxy seed's -properties and -agents), split evenly and rounded
// up; 0 keeps a default.
func Totals(properties, agents int, now time.Time) Options {
	blocks := len(Tenants) * len(Countries)
	return Options{PropertiesPerTenantCountry: (properties + blocks - 1) / blocks, AgentsPerTenantCountry: (agents + blocks - 1) / blocks, Now: now}
}

func (o Options) withDefaults() Options {
	if o.PropertiesPerTenantCountry <= 0 {
		o.PropertiesPerTenantCountry = DefaultPropertiesPerTenantCountry
	}
	if o.AgentsPerTenantCountry <= 0 {
		o.AgentsPerTenantCountry = DefaultAgentsPerTenantCountry
	}
	if o.AgentsPerTenantCountry < len(agentPrefixNames) {
		o.AgentsPerTenantCountry = len(agentPrefixNames)
	}
	if o.Now.IsZero() {
		o.Now = time.Now()
	}
	o.Now = o.Now.UTC().Truncate(time.Second)
	return o
}

// Properties returns the number of properties Generate writes for o: the
// per-block size times the tenant x country blocks.
func (o Options) Properties() int {
	return o.withDefaults().PropertiesPerTenantCountry * len(Tenants) * len(Countries)
}

// Agents returns the number of agents Generate writes for o.
func (o Options) Agents() int {
	return o.withDefaults().AgentsPerTenantCountry * len(Tenants) * len(Countries)
}

// Tenant is a row of tenants.
type Tenant struct {
	ID   int64
	Name string
}

// Agent is a row of agents.
type Agent struct {
	ID              int64
	TenantID        int64
	Country         string // "au" or "nz"
	Name            string
	Username        string // lower case, unique per tenant
	Phone           string
	AfterHoursPhone string
	MobilePhone     string
	Email           string
	Description     string
	PhotoURL        string // "" when the agent has no photo
	WebsiteURL      string
}

// Property is a row of properties.
type Property struct {
	ID             int64
	TenantID       int64
	Country        string
	AgencyID       string    // e.g. "HB-AU-00017", unique per tenant
	LastUpdated    time.Time // UTC, second precision, after Approved
	Approved       time.Time // UTC midnight of the approval date
	StreetNumber   string
	StreetName     string
	AddressDisplay bool
	Status         string // CURRENT, CONTRACT, SOLD or RENTED
	Latitude       float64
	Longitude      float64
	PriceText      string
	PriceFrom      *float64
	PriceTo        *float64
	PriceType      string // auction, tender, pbn or fixed
	Category       string // Residential, Commercial or Agricultural
	PropertyType   string
	Suburb         string
	Area           string
	Region         string
	Bedrooms       *int
	Bathrooms      *int
	FloorSize      *float64
	LotSize        *float64
	BuiltIn        string
	Description    string // at most 100 characters
	Featured       bool
}

// PropertyAgent is a row of property_agents.
type PropertyAgent struct {
	PropertyID int64
	AgentID    int64
	Position   int // 1-based order of the agents of a property
}

// The kinds of Media.
const (
	KindPhoto       = "photo"
	KindVirtualTour = "virtualtour"
	KindFloorplan   = "floorplan"
)

// Media is a row of property_media.
type Media struct {
	PropertyID int64
	Kind       string // KindPhoto, KindVirtualTour or KindFloorplan
	URL        string
	Thumbnail  string
	Type       string // photos: Normal, Elevated or Night; "" otherwise
	Caption    string
	Position   int // 1-based within the property and kind
}

// OpenHome is a row of openhomes.
type OpenHome struct {
	PropertyID int64
	Start, End time.Time // UTC, second precision
}

// Sink receives the generated rows. Generate calls it in an order that
// satisfies the foreign keys: tenants first; then, per tenant and country,
// its agents, then each property followed by its agents, media and open
// homes. A non-nil error stops Generate, which returns it.
type Sink interface {
	Tenant(Tenant) error
	Agent(Agent) error
	Property(Property) error
	PropertyAgent(PropertyAgent) error
	Media(Media) error
	OpenHome(OpenHome) error
}

// Tenants are the demo tenants, in id order.
var Tenants = []Tenant{{ID: 1, Name: "harbour"}, {ID: 2, Name: "summit"}}

// Countries are the demo countries, in generation order.
var Countries = []string{"au", "nz"}

// seed is the constant seed of the PCG source: the demo never changes unless
// this package does.
const seed1, seed2 = 0x6c697374696e67, 0x70726f7879

type tenantInfo struct {
	prefix string // agency id prefix
	domain string // e-mail and website domain
}

var tenantInfos = map[string]tenantInfo{
	"harbour": {"HB", "harbour-realty.example"},
	"summit":  {"SM", "summit-property.example"},
}

// Generate streams the demo rows for o to sink. Service ids are global:
// properties are numbered 1..N and agents 1..M across tenants and countries,
// so one tenant's ids never name another tenant's records.
func Generate(o Options, sink Sink) error {
	o = o.withDefaults()
	g := &generator{
		o:    o,
		sink: sink,
		r:    rand.New(rand.NewPCG(seed1, seed2)),
		from: time.Date(2018, 1, 1, 0, 0, 0, 0, time.UTC),
	}
	for _, t := range Tenants {
		if err := sink.Tenant(t); err != nil {
			return err
		}
	}
	for _, t := range Tenants {
		usernames := map[string]bool{}
		for _, c := range Countries {
			if err := g.block(t, c, usernames); err != nil {
				return err
			}
		}
	}
	return nil
}

// Dataset is the whole demo in memory.
type Dataset struct {
	Options        Options // with defaults applied
	Tenants        []Tenant
	Agents         []Agent
	Properties     []Property
	PropertyAgents []PropertyAgent
	Media          []Media
	OpenHomes      []OpenHome
}

// Collect generates the demo for o into memory. Use it for tests and small
// demos; Generate streams.
func Collect(o Options) (*Dataset, error) {
	d := &Dataset{Options: o.withDefaults()}
	if err := Generate(d.Options, collector{d}); err != nil {
		return nil, err
	}
	return d, nil
}

type collector struct{ d *Dataset }

func (c collector) Tenant(t Tenant) error     { c.d.Tenants = append(c.d.Tenants, t); return nil }
func (c collector) Agent(a Agent) error       { c.d.Agents = append(c.d.Agents, a); return nil }
func (c collector) Property(p Property) error { c.d.Properties = append(c.d.Properties, p); return nil }
func (c collector) PropertyAgent(pa PropertyAgent) error {
	c.d.PropertyAgents = append(c.d.PropertyAgents, pa)
	return nil
}
func (c collector) Media(m Media) error        { c.d.Media = append(c.d.Media, m); return nil }
func (c collector) OpenHome(oh OpenHome) error { c.d.OpenHomes = append(c.d.OpenHomes, oh); return nil }

type generator struct {
	o         Options
	sink      Sink
	r         *rand.Rand
	from      time.Time
	nextAgent int64
	nextProp  int64
}

var (
	statuses   = []string{"CURRENT", "CONTRACT", "SOLD", "RENTED"}
	categories = []string{"Residential", "Commercial", "Agricultural"}
	typesBy    = map[string][]string{
		"Residential":  {"House", "House", "House", "Apartment", "Apartment", "Unit", "Townhouse", "Section"},
		"Commercial":   {"Retail", "Office", "Warehouse", "Industrial"},
		"Agricultural": {"Farm", "Vineyard", "Lifestyle Property", "Orchard"},
	}
	photoCaptions = []string{"Street view", "Living room", "Kitchen", "Main bedroom", "Garden", "View from the deck", "Aerial view", "Evening light"}
)

func (g *generator) block(t Tenant, country string, usernames map[string]bool) error {
	info := tenantInfos[t.Name]
	towns, streets := auTowns, auStreets
	if country == "nz" {
		towns, streets = nzTowns, nzStreets
	}
	var rural []town
	for _, tw := range towns {
		if tw.Rural {
			rural = append(rural, tw)
		}
	}

	agents := make([]int64, 0, g.o.AgentsPerTenantCountry)
	names := map[string]bool{}
	for i := range g.o.AgentsPerTenantCountry {
		var name string
		if i < len(agentPrefixNames) {
			name = agentPrefixNames[i]
		} else {
			name = g.agentName(names)
		}
		names[name] = true
		base := strings.NewReplacer(". ", ".", " ", ".", "'", "").Replace(strings.ToLower(name))
		username := base
		for n := 2; usernames[username]; n++ {
			username = base + strconv.Itoa(n)
		}
		usernames[username] = true
		g.nextAgent++
		a := Agent{
			ID:          g.nextAgent,
			TenantID:    t.ID,
			Country:     country,
			Name:        name,
			Username:    username,
			Phone:       g.phone(country, false),
			MobilePhone: g.phone(country, true),
			Email:       username + "@" + info.domain,
			Description: fmt.Sprintf("%s has sold property around %s for %d years.", strings.Fields(name)[0], pick(g.r, towns).Suburb, 2+g.r.IntN(25)),
			WebsiteURL:  "https://" + info.domain + "/agents/" + username,
		}
		if g.r.IntN(10) < 7 {
			a.AfterHoursPhone = g.phone(country, false)
		}
		if g.r.IntN(10) < 7 {
			a.PhotoURL = "https://media.example.com/" + t.Name + "/agents/" + username + ".jpg"
		}
		agents = append(agents, a.ID)
		if err := g.sink.Agent(a); err != nil {
			return err
		}
	}

	for i := range g.o.PropertiesPerTenantCountry {
		g.nextProp++
		if err := g.property(t, country, info, i, towns, rural, streets, agents); err != nil {
			return err
		}
	}
	return nil
}

// agentName draws a name not in taken. There are only len(firstNames) x
// len(lastNames) plain names, so a large block (thousands of agents) adds a
// middle initial once plain draws keep colliding, and a number after that:
// the draws of a small demo are unchanged.
func (g *generator) agentName(taken map[string]bool) string {
	for try := 0; ; try++ {
		first, last := pick(g.r, firstNames), pick(g.r, lastNames)
		name := first + " " + last
		switch {
		case try >= 200:
			name = fmt.Sprintf("%s %s %d", first, last, len(taken)+try)
		case try >= 50:
			name = first + " " + string(rune('A'+g.r.IntN(26))) + ". " + last
		}
		if !taken[name] {
			return name
		}
	}
}

func (g *generator) property(t Tenant, country string, info tenantInfo, i int, towns, rural []town, streets []string, agents []int64) error {
	r := g.r
	p := Property{
		ID:       g.nextProp,
		TenantID: t.ID,
		Country:  country,
		AgencyID: fmt.Sprintf("%s-%s-%05d", info.prefix, strings.ToUpper(country), i+1),
	}

	// The first properties of each block cover every status and category,
	// so even a small demo has them all.
	switch {
	case i < 12:
		p.Status = statuses[i%len(statuses)]
		p.Category = categories[i%len(categories)]
	default:
		p.Status = weighted(r, statuses, 55, 15, 20, 10)
		p.Category = weighted(r, categories, 70, 18, 12)
	}
	p.PropertyType = pick(r, typesBy[p.Category])
	tw := pick(r, towns)
	if p.Category == "Agricultural" {
		tw = pick(r, rural)
	}
	p.Suburb, p.Area, p.Region = tw.Suburb, tw.Area, tw.Region
	p.Latitude = round6(tw.Lat + (r.Float64()*2-1)*0.03)
	p.Longitude = round6(wrapLong(tw.Long + (r.Float64()*2-1)*0.03/math.Cos(tw.Lat*math.Pi/180)))

	p.StreetName = pick(r, streets)
	n := 1 + r.IntN(240)
	switch {
	case (p.PropertyType == "Apartment" || p.PropertyType == "Unit") && r.IntN(2) == 0:
		p.StreetNumber = fmt.Sprintf("%d/%d", 1+r.IntN(40), n)
	case p.Category == "Agricultural" && r.IntN(4) == 0:
		p.StreetNumber = ""
	case r.IntN(10) == 0:
		p.StreetNumber = strconv.Itoa(n) + string(rune('A'+r.IntN(3)))
	default:
		p.StreetNumber = strconv.Itoa(n)
	}
	p.AddressDisplay = r.IntN(100) < 85
	p.Featured = r.IntN(10) == 0

	g.sizes(&p)
	g.price(&p, country)
	switch p.PropertyType {
	case "Section":
		p.BuiltIn = ""
	default:
		year := 1900 + r.IntN(124)
		switch r.IntN(4) {
		case 0:
			p.BuiltIn = strconv.Itoa(year)
		case 1:
			p.BuiltIn = strconv.Itoa(year/10*10) + "s"
		case 2:
			p.BuiltIn = fmt.Sprintf("%d-%d", year, year+1+r.IntN(6))
		default:
			p.BuiltIn = ""
		}
	}
	p.Description = g.description(&p)

	// Approved on a date from 2018-01-01 to the day before Now; updated
	// at some instant after that, up to Now.
	days := int(g.o.Now.Sub(g.from).Hours()/24) - 1
	if days < 1 {
		days = 1
	}
	p.Approved = g.from.AddDate(0, 0, r.IntN(days))
	span := g.o.Now.Sub(p.Approved) / time.Second
	if span < 2 {
		span = 2
	}
	p.LastUpdated = p.Approved.Add(time.Duration(1+r.Int64N(int64(span)-1)) * time.Second)

	if err := g.sink.Property(p); err != nil {
		return err
	}

	// Agents: mostly one, some shared by two, a few with none.
	var pas []int64
	switch k := r.IntN(100); {
	case k < 2:
	case k < 20:
		a := pick(r, agents)
		b := pick(r, agents)
		for b == a {
			b = pick(r, agents)
		}
		pas = []int64{a, b}
	default:
		pas = []int64{pick(r, agents)}
	}
	for pos, a := range pas {
		if err := g.sink.PropertyAgent(PropertyAgent{PropertyID: p.ID, AgentID: a, Position: pos + 1}); err != nil {
			return err
		}
	}

	if err := g.media(t, country, &p); err != nil {
		return err
	}
	return g.openHomes(&p)
}

func (g *generator) sizes(p *Property) {
	r := g.r
	ip := func(lo, hi int) *int { v := lo + r.IntN(hi-lo+1); return &v }
	fp := func(lo, hi int, step int) *float64 {
		v := float64((lo + r.IntN(hi-lo+1)) / step * step)
		return &v
	}
	switch p.PropertyType {
	case "House":
		p.Bedrooms, p.Bathrooms = ip(2, 6), ip(1, 3)
		p.FloorSize, p.LotSize = fp(90, 380, 1), fp(300, 1400, 10)
	case "Apartment":
		p.Bedrooms, p.Bathrooms = ip(1, 3), ip(1, 2)
		p.FloorSize = fp(40, 160, 1)
	case "Unit":
		p.Bedrooms, p.Bathrooms = ip(1, 3), ip(1, 2)
		p.FloorSize = fp(50, 130, 1)
		if r.IntN(2) == 0 {
			p.LotSize = fp(150, 400, 10)
		}
	case "Townhouse":
		p.Bedrooms, p.Bathrooms = ip(2, 4), ip(1, 3)
		p.FloorSize, p.LotSize = fp(100, 220, 1), fp(150, 350, 10)
	case "Section":
		p.LotSize = fp(350, 1200, 10)
	case "Retail", "Office":
		if r.IntN(2) == 0 {
			p.Bathrooms = ip(1, 2)
		}
		p.FloorSize = fp(60, 1500, 10)
		if r.IntN(3) == 0 {
			p.LotSize = fp(200, 3000, 10)
		}
	case "Warehouse", "Industrial":
		if r.IntN(3) == 0 {
			p.Bathrooms = ip(1, 2)
		}
		p.FloorSize, p.LotSize = fp(400, 8000, 50), fp(800, 20000, 100)
	case "Farm":
		p.Bedrooms, p.Bathrooms = ip(3, 5), ip(1, 3)
		p.FloorSize, p.LotSize = fp(150, 350, 1), fp(200000, 5000000, 1000)
	case "Vineyard", "Orchard":
		if r.IntN(3) > 0 {
			p.Bedrooms, p.Bathrooms = ip(3, 5), ip(1, 3)
			p.FloorSize = fp(140, 320, 1)
		}
		p.LotSize = fp(40000, 600000, 1000)
	case "Lifestyle Property":
		p.Bedrooms, p.Bathrooms = ip(3, 5), ip(2, 3)
		p.FloorSize, p.LotSize = fp(160, 400, 1), fp(8000, 200000, 100)
	}
}

// basePrices are the low and high sale prices of a property type, in whole
// dollars of the country's currency.
var basePrices = map[string][2]int{
	"House": {450_000, 2_800_000}, "Apartment": {320_000, 1_600_000}, "Unit": {300_000, 900_000},
	"Townhouse": {500_000, 1_500_000}, "Section": {180_000, 900_000},
	"Retail": {350_000, 4_000_000}, "Office": {400_000, 6_000_000},
	"Warehouse": {800_000, 9_000_000}, "Industrial": {700_000, 8_000_000},
	"Farm": {1_200_000, 12_000_000}, "Vineyard": {900_000, 7_000_000},
	"Orchard": {800_000, 5_000_000}, "Lifestyle Property": {700_000, 3_500_000},
}

func (g *generator) price(p *Property, country string) {
	r := g.r
	fp := func(v int) *float64 { f := float64(v); return &f }
	if p.Status == "RENTED" {
		lo, hi := 350, 1400
		if p.Category != "Residential" {
			lo, hi = 600, 6000
		}
		v := (lo + r.IntN(hi-lo+1)) / 10 * 10
		p.PriceFrom = fp(v)
		p.PriceText = money(v) + " per week"
		return
	}
	b := basePrices[p.PropertyType]
	base := (b[0] + r.IntN(b[1]-b[0]+1)) / 5000 * 5000
	if country == "nz" {
		base = base / 10000 * 10000
	}
	upper := (base + base*(5+r.IntN(11))/100) / 5000 * 5000
	switch weighted(r, []string{"auction", "tender", "pbn", "fixed"}, 25, 10, 15, 50) {
	case "auction":
		p.PriceType, p.PriceText, p.PriceFrom = "auction", "Auction", fp(base)
		if r.IntN(4) == 0 {
			p.PriceTo = fp(upper)
		}
	case "tender":
		p.PriceType, p.PriceText = "tender", "Tender"
		if r.IntN(2) == 0 {
			p.PriceFrom = fp(base)
		}
	case "pbn":
		p.PriceType, p.PriceText, p.PriceFrom = "pbn", "Price by negotiation", fp(base)
	default:
		p.PriceType, p.PriceFrom = "fixed", fp(base)
		p.PriceText = money(base)
		if r.IntN(5) < 2 {
			p.PriceTo = fp(upper)
			p.PriceText += " - " + money(upper)
		}
	}
}

// money formats whole dollars as "$650,000".
func money(v int) string {
	s := strconv.Itoa(v)
	var b strings.Builder
	b.WriteByte('$')
	for i, c := range s {
		if i > 0 && (len(s)-i)%3 == 0 {
			b.WriteByte(',')
		}
		b.WriteRune(c)
	}
	return b.String()
}

var descOpeners = []string{"Sunny", "Spacious", "Charming", "Modern", "Renovated", "Well-kept", "Character", "Elevated"}
var descClosers = []string{
	"close to shops and transport.", "with room to grow.", "a short walk to the water.",
	"ready to move in.", "in a quiet street.", "with easy access to the motorway.",
}

func (g *generator) description(p *Property) string {
	what := strings.ToLower(p.PropertyType)
	if p.Bedrooms != nil && p.Category == "Residential" {
		what = fmt.Sprintf("%d bedroom %s", *p.Bedrooms, what)
	}
	s := fmt.Sprintf("%s %s in %s, %s", pick(g.r, descOpeners), what, p.Suburb, pick(g.r, descClosers))
	if len(s) > 100 {
		s = s[:100]
		if i := strings.LastIndexByte(s, ' '); i > 0 {
			s = s[:i]
		}
	}
	return s
}

func (g *generator) media(t Tenant, country string, p *Property) error {
	r := g.r
	base := fmt.Sprintf("https://media.example.com/%s/%s/%d/", t.Name, country, p.ID)
	nPhotos := 0
	if r.IntN(10) > 0 {
		nPhotos = 1 + r.IntN(8)
	}
	for i := 1; i <= nPhotos; i++ {
		typ := "Normal"
		switch k := r.IntN(100); {
		case k < 12:
			typ = "Elevated"
		case k < 20:
			typ = "Night"
		}
		caption := ""
		if r.IntN(10) >= 3 {
			caption = pick(r, photoCaptions)
		}
		m := Media{PropertyID: p.ID, Kind: KindPhoto, Type: typ, Caption: caption, Position: i,
			URL: fmt.Sprintf("%sphoto-%d.jpg", base, i), Thumbnail: fmt.Sprintf("%sphoto-%d-thumb.jpg", base, i)}
		if err := g.sink.Media(m); err != nil {
			return err
		}
	}
	nTours := 0
	if r.IntN(10) < 4 {
		nTours = 1 + r.IntN(2)
	}
	for i := 1; i <= nTours; i++ {
		caption := ""
		if r.IntN(2) == 0 {
			caption = "3D walkthrough"
		}
		m := Media{PropertyID: p.ID, Kind: KindVirtualTour, Caption: caption, Position: i,
			URL:       fmt.Sprintf("https://tours.example.com/%s/%d/%d", t.Name, p.ID, i),
			Thumbnail: fmt.Sprintf("%stour-%d-thumb.jpg", base, i)}
		if err := g.sink.Media(m); err != nil {
			return err
		}
	}
	nPlans := 0
	if r.IntN(100) >= 35 {
		nPlans = 1 + r.IntN(2)
	}
	for i := 1; i <= nPlans; i++ {
		caption := []string{"Ground floor", "First floor", "Site plan", ""}[r.IntN(4)]
		m := Media{PropertyID: p.ID, Kind: KindFloorplan, Caption: caption, Position: i,
			URL: fmt.Sprintf("%sfloorplan-%d.png", base, i), Thumbnail: fmt.Sprintf("%sfloorplan-%d-thumb.png", base, i)}
		if err := g.sink.Media(m); err != nil {
			return err
		}
	}
	return nil
}

func (g *generator) openHomes(p *Property) error {
	r := g.r
	now := g.o.Now
	day := now.Truncate(24 * time.Hour)
	var slots []OpenHome
	at := func(d int) OpenHome {
		// 22:00-05:45 UTC is morning to early afternoon in Australia and
		// New Zealand.
		start := day.AddDate(0, 0, d).Add(time.Duration(22+r.IntN(8))*time.Hour + time.Duration(15*r.IntN(4))*time.Minute)
		return OpenHome{PropertyID: p.ID, Start: start, End: start.Add(time.Duration(30+15*r.IntN(2)) * time.Minute)}
	}
	if r.IntN(4) == 0 { // some open homes in the past
		for _, d := range distinct(r, 1+r.IntN(2), 1, 30) {
			slots = append(slots, at(-d-1))
		}
	}
	if p.Status == "CURRENT" || p.Status == "CONTRACT" {
		n := 0
		switch k := r.IntN(100); {
		case k < 40:
		case k < 70:
			n = 1
		default:
			n = 2 + r.IntN(2)
		}
		for _, d := range distinct(r, n, 1, 21) {
			slots = append(slots, at(d))
		}
		if r.IntN(40) == 0 { // one under way: started, not ended
			start := now.Add(-15 * time.Minute)
			slots = append(slots, OpenHome{PropertyID: p.ID, Start: start, End: now.Add(15 * time.Minute)})
		}
	}
	for _, oh := range slots {
		if err := g.sink.OpenHome(oh); err != nil {
			return err
		}
	}
	return nil
}

func (g *generator) phone(country string, mobile bool) string {
	r := g.r
	switch {
	case country == "au" && mobile:
		return fmt.Sprintf("+61 4%02d %03d %03d", r.IntN(100), r.IntN(1000), r.IntN(1000))
	case country == "au":
		return fmt.Sprintf("+61 %d %04d %04d", []int{2, 3, 7, 8}[r.IntN(4)], r.IntN(10000), r.IntN(10000))
	case mobile:
		return fmt.Sprintf("+64 2%d %03d %04d", []int{1, 2, 7}[r.IntN(3)], r.IntN(1000), r.IntN(10000))
	}
	return fmt.Sprintf("+64 %d %03d %04d", []int{3, 4, 6, 7, 9}[r.IntN(5)], r.IntN(1000), r.IntN(10000))
}

// distinct returns n distinct integers in [lo, hi].
func distinct(r *rand.Rand, n, lo, hi int) []int {
	seen := map[int]bool{}
	var out []int
	for len(out) < n && len(out) <= hi-lo {
		v := lo + r.IntN(hi-lo+1)
		if !seen[v] {
			seen[v] = true
			out = append(out, v)
		}
	}
	return out
}

func pick[T any](r *rand.Rand, s []T) T { return s[r.IntN(len(s))] }

// weighted picks s[i] with probability w[i]/sum(w).
func weighted(r *rand.Rand, s []string, w ...int) string {
	total := 0
	for _, x := range w {
		total += x
	}
	k := r.IntN(total)
	for i, x := range w {
		if k < x {
			return s[i]
		}
		k -= x
	}
	return s[len(s)-1]
}

func round6(f float64) float64 { return math.Round(f*1e6) / 1e6 }

func wrapLong(l float64) float64 {
	switch {
	case l > 180:
		return l - 360
	case l < -180:
		return l + 360
	}
	return l
}
