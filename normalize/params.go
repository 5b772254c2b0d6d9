package normalize

import (
	"fmt"
	"net/url"
	"strconv"
	"strings"
)

// The parameter table: one row per query parameter of the listing API, with
// everything the package knows about it — its names, the lists that take it,
// its role under rules 1 and 2, how it is parsed into Criteria, how it is
// written into the canonical Key, and how it is written back as a canonical
// query (Values). Adding a criterion means adding its field to
// PropertyFilter or AgentFilter and one row here.
//
// The rows are in the order of the spec's tables (properties, then the
// agent-only ones, then detail, limit, offset and order). That order is the
// order of the error list, of the fields in a Key and of parsing (a row may
// rely on the rows above it, as approved_to does on approved_from).
var params = []paramRow{
	{
		names: []string{"id"}, lists: both, role: override,
		parse: func(ps *parser, p param, c *Criteria) {
			ids := ps.ids(p, idMsg)
			if c.resource == Agents {
				c.agent.IDs = ids
			} else {
				c.prop.IDs = ids
			}
		},
		key: func(w *keyWriter, c *Criteria) {
			if c.resource == Agents {
				w.ints("id", c.agent.IDs)
			} else {
				w.ints("id", c.prop.IDs)
			}
		},
		values: func(v url.Values, c *Criteria) {
			if c.resource == Agents {
				setInts(v, "id[]", c.agent.IDs)
			} else {
				setInts(v, "id[]", c.prop.IDs)
			}
		},
	},
	{
		names: []string{"agency_id"}, lists: properties, role: override,
		parse:  func(ps *parser, p param, c *Criteria) { c.prop.AgencyIDs = ps.texts(p, false) },
		key:    func(w *keyWriter, c *Criteria) { w.texts("agency_id", c.prop.AgencyIDs) },
		values: func(v url.Values, c *Criteria) { setStrings(v, "agency_id[]", c.prop.AgencyIDs) },
	},
	{
		names: []string{"agent_id"}, lists: properties,
		parse:  func(ps *parser, p param, c *Criteria) { c.prop.AgentIDs = ps.ids(p, agentIDMsg) },
		key:    func(w *keyWriter, c *Criteria) { w.ints("agent_id", c.prop.AgentIDs) },
		values: func(v url.Values, c *Criteria) { setInts(v, "agent_id[]", c.prop.AgentIDs) },
	},
	textRow("street_number", func(c *Criteria) *string { return &c.prop.StreetNumber }),
	textRow("street_name", func(c *Criteria) *string { return &c.prop.StreetName }),
	priceRow("price_from", func(c *Criteria) **float64 { return &c.prop.PriceFrom }),
	priceRow("price_to", func(c *Criteria) **float64 { return &c.prop.PriceTo }),
	enumRow("category", categories, categoryMsg, func(c *Criteria) *[]string { return &c.prop.Categories }),
	enumRow("status", statuses, statusMsg, func(c *Criteria) *[]string { return &c.prop.Statuses }),
	textsRow("property_type", func(c *Criteria) *[]string { return &c.prop.PropertyTypes }),
	textsRow("price_type", func(c *Criteria) *[]string { return &c.prop.PriceTypes }),
	roomsRow("bedrooms", func(c *Criteria) **int { return &c.prop.Bedrooms }),
	roomsRow("bathrooms", func(c *Criteria) **int { return &c.prop.Bathrooms }),
	{
		// Three single-valued sub-keys that only come together, with no
		// "[]" form.
		names: []string{"geo[lat]", "geo[long]", "geo[rad]"}, lists: properties, noArray: true,
		parse: func(ps *parser, p param, c *Criteria) { c.prop.Geo = ps.geo(p) },
		key: func(w *keyWriter, c *Criteria) {
			if g := c.prop.Geo; g != nil {
				w.name("geo")
				w.num(g.Lat)
				w.b.WriteByte(',')
				w.num(g.Long)
				w.b.WriteByte(',')
				w.num(g.RadiusKm)
			}
		},
		values: func(v url.Values, c *Criteria) {
			if g := c.prop.Geo; g != nil {
				v.Set("geo[lat]", formatFloat(g.Lat))
				v.Set("geo[long]", formatFloat(g.Long))
				v.Set("geo[rad]", formatFloat(g.RadiusKm))
			}
		},
	},
	{
		names: []string{"featured"}, lists: properties,
		parse: func(ps *parser, p param, c *Criteria) { c.prop.Featured, _ = single(ps, p, parseTrue, featuredMsg) },
		key: func(w *keyWriter, c *Criteria) {
			if c.prop.Featured {
				w.text("featured", "true")
			}
		},
		values: func(v url.Values, c *Criteria) {
			if c.prop.Featured {
				v.Set("featured", "true")
			}
		},
	},
	{
		names: []string{"approved_from"}, lists: properties,
		parse:  func(ps *parser, p param, c *Criteria) { c.prop.ApprovedFrom, _ = single(ps, p, parseDate, dateMsg) },
		key:    func(w *keyWriter, c *Criteria) { w.text("approved_from", c.prop.ApprovedFrom) },
		values: func(v url.Values, c *Criteria) { setDate(v, "approved_from", c.prop.ApprovedFrom) },
	},
	{
		names: []string{"approved_to"}, lists: properties,
		parse: func(ps *parser, p param, c *Criteria) {
			f := &c.prop
			to, ok := single(ps, p, parseDate, dateMsg)
			if ok && f.ApprovedFrom != "" && to < f.ApprovedFrom {
				ps.fail(p, fmt.Sprintf("Invalid approved_to %q: must not be before approved_from %q",
					compactDate(to), compactDate(f.ApprovedFrom)))
				return
			}
			f.ApprovedTo = to
		},
		key:    func(w *keyWriter, c *Criteria) { w.text("approved_to", c.prop.ApprovedTo) },
		values: func(v url.Values, c *Criteria) { setDate(v, "approved_to", c.prop.ApprovedTo) },
	},
	{
		names: []string{"name"}, lists: agents,
		parse:  func(ps *parser, p param, c *Criteria) { c.agent.Name = ps.text(p) },
		key:    func(w *keyWriter, c *Criteria) { w.text("name", c.agent.Name) },
		values: func(v url.Values, c *Criteria) { setString(v, "name", c.agent.Name) },
	},
	{
		names: []string{"username"}, lists: agents,
		parse:  func(ps *parser, p param, c *Criteria) { c.agent.Username = ps.text(p) },
		key:    func(w *keyWriter, c *Criteria) { w.text("username", c.agent.Username) },
		values: func(v url.Values, c *Criteria) { setString(v, "username", c.agent.Username) },
	},
	{
		names: []string{"detail"}, lists: both, role: always,
		parse: func(ps *parser, p param, c *Criteria) {
			if d, ok := single(ps, p, parseDetail, detailMsg); ok {
				c.detail = d
			}
		},
		key:    func(w *keyWriter, c *Criteria) { w.text("detail", c.detail.String()) },
		values: func(v url.Values, c *Criteria) { v.Set("detail", c.detail.String()) },
	},
	{
		names: []string{"limit"}, lists: both, role: always,
		parse: func(ps *parser, p param, c *Criteria) {
			n, given := single(ps, p, pageNumber, pageMsg)
			if ps.o.MaxResults < 0 { // no cap: the client's limit, or none
				c.limit = NoLimit
				if given {
					c.limit = n
				}
				return
			}
			c.limit = ps.o.maxResults()
			if given && n < c.limit {
				c.limit = n
			}
			c.capped = c.limit == ps.o.maxResults()
		},
		key: func(w *keyWriter, c *Criteria) {
			if c.limit != NoLimit {
				w.number("limit", c.limit)
			}
		},
		values: func(v url.Values, c *Criteria) {
			if c.limit != NoLimit {
				v.Set("limit", strconv.Itoa(c.limit))
			}
		},
	},
	{
		names: []string{"offset"}, lists: both, role: always,
		parse: func(ps *parser, p param, c *Criteria) {
			parse, msg := pageNumber, pageMsg
			if m := ps.o.MaxOffset; m > 0 { // past the cap, as past 2147483647
				parse = func(s string) (int, bool) {
					n, ok := pageNumber(s)
					return n, ok && n <= m
				}
				msg = offsetMsg + strconv.Itoa(m)
			}
			if n, ok := single(ps, p, parse, msg); ok {
				c.offset = n
			}
		},
		key:    func(w *keyWriter, c *Criteria) { w.number("offset", c.offset) },
		values: func(v url.Values, c *Criteria) { v.Set("offset", strconv.Itoa(c.offset)) },
	},
	{
		names: []string{"order"}, lists: both, role: always,
		parse: func(ps *parser, p param, c *Criteria) {
			if c.resource == Agents {
				c.order = ps.agentOrder(p)
			} else {
				c.order = ps.propertyOrder(p)
			}
		},
		key: func(w *keyWriter, c *Criteria) { w.texts("order", c.order) },
		values: func(v url.Values, c *Criteria) {
			if c.resource == Agents {
				// Agents take one order field; "id" is implied after it.
				v.Set("order", c.order[0])
			} else {
				setStrings(v, "order[]", c.order)
			}
		},
	},
}

// paramRow is one row of the parameter table.
type paramRow struct {
	// names are the query keys of the parameter. Each also has a "key[]"
	// form naming the same parameter, unless noArray is set. Only geo has
	// more than one name: each is reported on its own in errors.
	names   []string
	noArray bool
	// lists are the resources whose lists take the parameter.
	lists resourceSet
	role  role
	// parse reads the parameter's values (ps.each(p+i, ...) for its i-th
	// name) into c, recording any error with ps.fail.
	parse func(ps *parser, p param, c *Criteria)
	// key writes the parameter's part of the canonical Key (nothing when
	// it was not given, except for the always-present role).
	key func(w *keyWriter, c *Criteria)
	// values writes the parameter in its canonical query form.
	values func(v url.Values, c *Criteria)
}

// role is how a parameter takes part in the spec's rules 1 and 2.
type role uint8

const (
	// filter parameters apply together (rule 3), unless an override
	// parameter is given.
	filter role = iota
	// override parameters replace every filter when given, the first given
	// in table order winning (rule 1: id; rule 2: agency_id).
	override
	// always parameters apply whatever the filters (detail, limit, offset,
	// order).
	always
)

// resourceSet is a set of Resources, one bit each.
type resourceSet uint8

const (
	properties resourceSet = 1 << Properties
	agents     resourceSet = 1 << Agents
	both                   = properties | agents
)

func (s resourceSet) has(r Resource) bool { return s&(1<<r) != 0 }

// param is a query key's slot: the index of one name of one row in the
// flattened table. Slots of one row are consecutive.
type param uint8

// maxSlots bounds the number of query keys the table may name; parser keeps
// a fixed array of them on the stack.
const maxSlots = 32

// slots are the table's names, flattened: slotNames[p] is the name of slot
// p, slotRow[p] its row. rowSlot[i] is the first slot of row i.
var (
	slotNames, slotRow, rowSlot = flatten(params)
	byName                      = names()
)

func flatten(rows []paramRow) (names []string, row []int, first []param) {
	for i, r := range rows {
		first = append(first, param(len(names)))
		for _, n := range r.names {
			names = append(names, n)
			row = append(row, i)
		}
	}
	if len(names) > maxSlots {
		panic("normalize: the parameter table names more than maxSlots keys")
	}
	return names, row, first
}

// names maps every key a query may use ("id", "id[]", "geo[lat]"...) to its
// slot and whether it is the "[]" form.
func names() map[string]slotRef {
	m := make(map[string]slotRef, 2*len(slotNames))
	for p, n := range slotNames {
		m[n] = slotRef{param(p), 0}
		if !params[slotRow[p]].noArray {
			m[n+"[]"] = slotRef{param(p), 1}
		}
	}
	return m
}

type slotRef struct {
	p     param
	array int // 0: "key", 1: "key[]"
}

// lookupParam maps a query key to the slot it names for resource r.
func lookupParam(r Resource, key string) (slotRef, bool) {
	ref, ok := byName[key]
	if !ok || !params[slotRow[ref.p]].lists.has(r) {
		return slotRef{}, false
	}
	return ref, true
}

// parse fills c from the parser's values, row by row in table order: the
// first override parameter given (rule 1, then rule 2) replaces every
// filter; otherwise all filters apply.
func (ps *parser) parse(c *Criteria) {
	chosen := -1
	for i, r := range params {
		if r.role == override && r.lists.has(c.resource) && ps.given(rowSlot[i]) {
			chosen = i
			break
		}
	}
	for i, r := range params {
		if !r.lists.has(c.resource) {
			continue
		}
		switch {
		case r.role == override && i != chosen, r.role == filter && chosen >= 0:
			continue
		}
		r.parse(ps, rowSlot[i], c)
	}
}

// setStrings writes a multi-valued text parameter as given.
func setStrings(v url.Values, key string, vals []string) {
	if len(vals) > 0 {
		v[key] = append([]string(nil), vals...)
	}
}

// Constructors of the common shapes of rows.

func textRow(name string, field func(*Criteria) *string) paramRow {
	return paramRow{
		names: []string{name}, lists: properties,
		parse:  func(ps *parser, p param, c *Criteria) { *field(c) = ps.text(p) },
		key:    func(w *keyWriter, c *Criteria) { w.text(name, *field(c)) },
		values: func(v url.Values, c *Criteria) { setString(v, name, *field(c)) },
	}
}

func textsRow(name string, field func(*Criteria) *[]string) paramRow {
	return paramRow{
		names: []string{name}, lists: properties,
		parse:  func(ps *parser, p param, c *Criteria) { *field(c) = ps.texts(p, true) },
		key:    func(w *keyWriter, c *Criteria) { w.texts(name, *field(c)) },
		values: func(v url.Values, c *Criteria) { setStrings(v, name+"[]", *field(c)) },
	}
}

func enumRow(name string, canon []string, msg string, field func(*Criteria) *[]string) paramRow {
	return paramRow{
		names: []string{name}, lists: properties,
		parse:  func(ps *parser, p param, c *Criteria) { *field(c) = ps.enum(p, canon, msg) },
		key:    func(w *keyWriter, c *Criteria) { w.texts(name, *field(c)) },
		values: func(v url.Values, c *Criteria) { setLower(v, name+"[]", *field(c)) },
	}
}

func priceRow(name string, field func(*Criteria) **float64) paramRow {
	return paramRow{
		names: []string{name}, lists: properties,
		parse:  func(ps *parser, p param, c *Criteria) { *field(c) = ps.price(p) },
		key:    func(w *keyWriter, c *Criteria) { w.float(name, *field(c)) },
		values: func(v url.Values, c *Criteria) { setFloat(v, name, *field(c)) },
	}
}

func roomsRow(name string, field func(*Criteria) **int) paramRow {
	return paramRow{
		names: []string{name}, lists: properties,
		parse: func(ps *parser, p param, c *Criteria) { *field(c) = ps.rooms(p) },
		key:   func(w *keyWriter, c *Criteria) { w.int(name, *field(c)) },
		values: func(v url.Values, c *Criteria) {
			if n := *field(c); n != nil {
				v.Set(name, strconv.Itoa(*n))
			}
		},
	}
}

// lowerAll returns vals in lower case (the spec's filter spelling of
// enumerated values).
func lowerAll(vals []string) []string {
	s := make([]string, len(vals))
	for i, x := range vals {
		s[i] = strings.ToLower(x)
	}
	return s
}

// QueryKeys returns every query key the lists of r accept, in the
// parameter table's order: each name and its "[]" form unless it has none
// ("id", "id[]", ..., "geo[lat]", "geo[long]", "geo[rad]", ...). The
// OpenAPI description lists the same keys (openapi.TestParametersAreNormalizes).
func QueryKeys(r Resource) []string {
	var keys []string
	for p, n := range slotNames {
		row := params[slotRow[p]]
		if !row.lists.has(r) {
			continue
		}
		keys = append(keys, n)
		if !row.noArray {
			keys = append(keys, n+"[]")
		}
	}
	return keys
}
