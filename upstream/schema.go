package upstream

import "time"

// The listing schema, declared once: every field of a Property and of an
// Agent, in the order the wire format gives them (docs/wire-format.md),
// with its detail level, its form in XML and JSON and its SQL column. The
// writers and readers of package wire and the scans of upstream/sqlstore
// are driven by these tables; none of them names a scalar field.
//
// A new scalar field (a text, number, date, instant or flag) is one row
// here, beside its field of Property or Agent, and its column in the demo
// schema (upstream/sqlstore/schema/*.sql); the golden documents then gain
// it. Irregular parts (the address, media, agents, open homes, an agent's
// properties) are rows of KindHand: the table places them and names what
// is inside them, and their code is written by hand where they are used.

// Kind is the type of a field's value, which says how it is read, written
// and scanned, and what its empty value is.
type Kind uint8

// The kinds of fields.
const (
	// KindHand is an irregular part (nested elements, collections) whose
	// code is written by hand in each user of the table; Inner names the
	// elements inside it.
	KindHand Kind = iota
	// KindID is the record's id, an int64 > 0: an attribute, never empty.
	KindID
	// KindText is a string; "" is empty.
	KindText
	// KindInt is an *int; nil is empty (never 0).
	KindInt
	// KindFloat is a *float64; nil is empty (never 0).
	KindFloat
	// KindDate is a time.Time holding a calendar date (UTC midnight),
	// written as 2006-01-02 without moving it to another zone; the zero
	// time is empty (never approved).
	KindDate
	// KindInstant is a time.Time instant, written in the country's zone as
	// "Mon Jan 02 15:04:05 -0700 2006"; the zero time is empty.
	KindInstant
	// KindFlag is a bool, written "true" or "false"; NULL in SQL is false.
	KindFlag
)

// Level is the least a caller must be allowed to see a field.
type Level uint8

// The levels of fields.
const (
	// LevelShort fields are in every document.
	LevelShort Level = iota
	// LevelFull fields are in full-detail documents only.
	LevelFull
	// LevelPrices fields are in full-detail documents for callers with the
	// prices permission only: pass-through removes them, wherever a legacy
	// put them, for any other caller.
	LevelPrices
)

// XMLForm is how a field is written in XML.
type XMLForm uint8

// The XML forms.
const (
	// NotOnWire fields are the model's and the database's only (a
	// property's price type and featured flag) or parts of a hand-written
	// field (an address's street number, name and display flag).
	NotOnWire XMLForm = iota
	// Element: <name>value</name>, <name/> when empty, one per line
	// after the record's start tag, in table order.
	Element
	// Attribute: name="value" on the record's start tag, in table order.
	Attribute
)

// Field is one field of records of type R (Property or Agent).
//
// The accessor of the field's kind returns where the value lives in a
// record (a pointer into it); the writers read through it, and the readers
// and scanners set through it. Exactly one accessor is set, none for
// KindHand.
type Field[R any] struct {
	// Name is the XML element or attribute and the JSON key. For a field
	// not on the wire, the column's name.
	Name  string
	Kind  Kind
	Level Level
	XML   XMLForm
	// JSONNull writes an empty value as JSON null rather than "" (the
	// spec's price_to), in rendered and passed-through documents alike.
	JSONNull bool
	// Column is the SQL expression selecting the field in the record's
	// query ("p.floor_size"), or "" when it is not a column of the record's
	// table (hand-written parts come from their own tables).
	Column string
	// Inner and Attrs name, for KindHand, the elements the wire format
	// gives inside it (photos: photo) and the attributes of it and of
	// them (count, position...), which readers keep and pass-through lets
	// through.
	Inner, Attrs []string

	ID    func(*R) *int64
	Text  func(*R) *string
	Int   func(*R) **int
	Float func(*R) **float64
	Time  func(*R) *time.Time // KindDate and KindInstant
	Flag  func(*R) *bool
}

// PropertyFields are the fields of a property, in the wire format's order:
// attributes, elements and JSON keys each follow it.
var PropertyFields = []Field[Property]{
	{Name: "id", Kind: KindID, XML: Attribute, Column: "p.id", ID: func(p *Property) *int64 { return &p.ID }},
	{Name: "agency_id", Kind: KindText, XML: Element, Column: "p.agency_id", Text: func(p *Property) *string { return &p.AgencyID }},
	{Name: "last_updated", Kind: KindInstant, XML: Attribute, Column: "p.last_updated", Time: func(p *Property) *time.Time { return &p.LastUpdated }},
	{Name: "approved", Kind: KindDate, XML: Element, Column: "p.approved", Time: func(p *Property) *time.Time { return &p.Approved }},
	{Name: "address", Kind: KindHand, XML: Element, Attrs: []string{"display"}}, // street number and name as text
	{Name: "street_number", Kind: KindText, Column: "p.street_number", Text: func(p *Property) *string { return &p.StreetNumber }},
	{Name: "street_name", Kind: KindText, Column: "p.street_name", Text: func(p *Property) *string { return &p.StreetName }},
	{Name: "address_display", Kind: KindFlag, Column: "p.address_display", Flag: func(p *Property) *bool { return &p.AddressDisplay }},
	{Name: "status", Kind: KindText, XML: Element, Column: "p.status", Text: func(p *Property) *string { return &p.Status }},
	{Name: "latitude", Kind: KindFloat, XML: Element, Column: "p.latitude", Float: func(p *Property) **float64 { return &p.Latitude }},
	{Name: "longitude", Kind: KindFloat, XML: Element, Column: "p.longitude", Float: func(p *Property) **float64 { return &p.Longitude }},
	{Name: "price", Kind: KindText, Level: LevelFull, XML: Element, Column: "p.price_text", Text: func(p *Property) *string { return &p.PriceText }},
	{Name: "price_from", Kind: KindFloat, Level: LevelPrices, XML: Element, Column: "p.price_from", Float: func(p *Property) **float64 { return &p.PriceFrom }},
	{Name: "price_to", Kind: KindFloat, Level: LevelPrices, XML: Element, JSONNull: true, Column: "p.price_to", Float: func(p *Property) **float64 { return &p.PriceTo }},
	{Name: "price_type", Kind: KindText, Column: "p.price_type", Text: func(p *Property) *string { return &p.PriceType }},
	{Name: "category", Kind: KindText, Level: LevelFull, XML: Element, Column: "p.category", Text: func(p *Property) *string { return &p.Category }},
	{Name: "property_type", Kind: KindText, Level: LevelFull, XML: Element, Column: "p.property_type", Text: func(p *Property) *string { return &p.PropertyType }},
	{Name: "suburb", Kind: KindText, Level: LevelFull, XML: Element, Column: "p.suburb", Text: func(p *Property) *string { return &p.Suburb }},
	{Name: "area", Kind: KindText, Level: LevelFull, XML: Element, Column: "p.area", Text: func(p *Property) *string { return &p.Area }},
	{Name: "region", Kind: KindText, Level: LevelFull, XML: Element, Column: "p.region", Text: func(p *Property) *string { return &p.Region }},
	{Name: "bedrooms", Kind: KindInt, Level: LevelFull, XML: Element, Column: "p.bedrooms", Int: func(p *Property) **int { return &p.Bedrooms }},
	{Name: "bathrooms", Kind: KindInt, Level: LevelFull, XML: Element, Column: "p.bathrooms", Int: func(p *Property) **int { return &p.Bathrooms }},
	{Name: "floor_size", Kind: KindFloat, Level: LevelFull, XML: Element, Column: "p.floor_size", Float: func(p *Property) **float64 { return &p.FloorSize }},
	{Name: "lot_size", Kind: KindFloat, Level: LevelFull, XML: Element, Column: "p.lot_size", Float: func(p *Property) **float64 { return &p.LotSize }},
	{Name: "built_in", Kind: KindText, Level: LevelFull, XML: Element, Column: "p.built_in", Text: func(p *Property) *string { return &p.BuiltIn }},
	{Name: "description", Kind: KindText, Level: LevelFull, XML: Element, Column: "p.description", Text: func(p *Property) *string { return &p.Description }},
	{Name: "featured", Kind: KindFlag, Column: "p.featured", Flag: func(p *Property) *bool { return &p.Featured }},
	{Name: "photos", Kind: KindHand, XML: Element, Inner: []string{"photo"}, Attrs: media},             // count, items in full detail
	{Name: "virtualtours", Kind: KindHand, XML: Element, Inner: []string{"virtualtour"}, Attrs: media}, // as photos
	{Name: "floorplans", Kind: KindHand, XML: Element, Inner: []string{"floorplan"}, Attrs: media},
	{Name: "agents", Kind: KindHand, XML: Element, Inner: []string{"agent"}, Attrs: []string{"count"}},
	{Name: "openhomes", Kind: KindHand, Level: LevelFull, XML: Element, Inner: []string{"openhome", "start", "end"}, Attrs: []string{"count"}},
}

// media are the attributes of a media collection and its items (a photo's
// type; tours and floorplans have none).
var media = []string{"count", "type", "caption", "position", "thumbnail"}

// AgentFields are the fields of an agent, as PropertyFields.
var AgentFields = []Field[Agent]{
	{Name: "id", Kind: KindID, XML: Attribute, Column: "a.id", ID: func(a *Agent) *int64 { return &a.ID }},
	{Name: "name", Kind: KindText, XML: Element, Column: "a.name", Text: func(a *Agent) *string { return &a.Name }},
	{Name: "username", Kind: KindText, Level: LevelFull, XML: Element, Column: "a.username", Text: func(a *Agent) *string { return &a.Username }},
	{Name: "phone", Kind: KindText, Level: LevelFull, XML: Element, Column: "a.phone", Text: func(a *Agent) *string { return &a.Phone }},
	{Name: "after_hours_phone", Kind: KindText, Level: LevelFull, XML: Element, Column: "a.after_hours_phone", Text: func(a *Agent) *string { return &a.AfterHoursPhone }},
	{Name: "mobile_phone", Kind: KindText, Level: LevelFull, XML: Element, Column: "a.mobile_phone", Text: func(a *Agent) *string { return &a.MobilePhone }},
	{Name: "email", Kind: KindText, Level: LevelFull, XML: Element, Column: "a.email", Text: func(a *Agent) *string { return &a.Email }},
	{Name: "description", Kind: KindText, Level: LevelFull, XML: Element, Column: "a.description", Text: func(a *Agent) *string { return &a.Description }},
	{Name: "photo", Kind: KindText, Level: LevelFull, XML: Element, Column: "a.photo_url", Text: func(a *Agent) *string { return &a.PhotoURL }},
	{Name: "website_url", Kind: KindText, Level: LevelFull, XML: Element, Column: "a.website_url", Text: func(a *Agent) *string { return &a.WebsiteURL }},
	// The count of current properties always, the properties themselves
	// (id and last_updated attributes, address and agency_id) in full
	// detail.
	{Name: "properties", Kind: KindHand, XML: Element, Inner: []string{"property", "address", "agency_id"}, Attrs: []string{"count"}},
}

// Columns returns the SQL expressions of fields that have one, in order.
func Columns[R any](fields []Field[R]) []string {
	var cols []string
	for _, f := range fields {
		if f.Column != "" {
			cols = append(cols, f.Column)
		}
	}
	return cols
}
