// Package normalize owns the criteria vocabulary of the listing API: it parses
// a list request's query (url.Values) into canonical Criteria, or into the
// spec's error list, and gives each Criteria a canonical Key for caching and a
// canonical query (Values) for upstreams that speak the API.
//
// It is a leaf: it imports the standard library only, and nothing in the
// program builds a Criteria any other way, so every Criteria is valid and
// canonical.
//
// Every query parameter is one row of the table in params.go (its names, the
// lists that take it, its role under rules 1 and 2, its parser, its part of
// the Key and of Values): a new criterion is a field in PropertyFilter or
// AgentFilter plus one row.
//
// The decisions it implements (docs/api.md, "Decisions beyond the spec"; spec
// sections 4.1, 4.3, 7):
//
//   - "key=v" and "key[]=v" are one parameter; their values are merged, those
//     of "key" first. geo[lat], geo[long] and geo[rad] are three single-valued
//     parameters without a "[]" form. Keys are case-sensitive; any other key is
//     unknown, ignored, and never part of the Key.
//   - Values are trimmed of surrounding white space; an empty value counts as
//     not given.
//   - Multi-valued parameters are sorted and de-duplicated (order keeps the
//     order first given); more than Options.MaxValues distinct values is an
//     error. A single-valued parameter repeated with different values is an
//     error; identical repeats are fine.
//   - Rule 1: id overrides every other filter (they are neither validated nor
//     keyed). Rule 2: so does agency_id when id is absent. detail, limit,
//     offset and order always apply.
//   - Enumerations match ignoring ASCII case; free text (street_number,
//     street_name, property_type, price_type, name, username) is lower-cased
//     and matched case-insensitively; agency_id is kept as given. Text is valid
//     UTF-8, at most 200 bytes, without control characters.
//   - Numbers are plain decimals (no sign unless negative is allowed, no
//     exponent, hex, NaN, Inf or underscores) of at most 32 characters.
//   - The limit is capped at Options.MaxResults and defaults to it (unless
//     MaxResults is negative: then it is the query's, or none); limit=0
//     asks for an empty page. The order always ends with "id" as the
//     tie-breaker.
//   - Every invalid parameter is reported at once, one entry each, in the order
//     of the spec's tables; echoed values are cut to 64 bytes and quoted.
package normalize

import "strings"

// Resource is the kind of list a Criteria selects.
type Resource uint8

// The resources.
const (
	Properties Resource = iota + 1
	Agents
)

func (r Resource) String() string {
	switch r {
	case Properties:
		return "properties"
	case Agents:
		return "agents"
	}
	return "unknown"
}

// Detail is the detail level of a response.
type Detail uint8

// The detail levels. The zero value is Short.
const (
	Short Detail = iota
	Full
)

func (d Detail) String() string {
	if d == Full {
		return "full"
	}
	return "short"
}

// Criteria is a canonical, valid set of list criteria. The zero value is not
// useful; obtain one from ParseProperties or ParseAgents. Criteria are
// immutable: slices returned by its accessors must not be modified.
type Criteria struct {
	resource Resource
	detail   Detail
	limit    int  // effective limit, >= 0 (Options.MaxResults when not given), or NoLimit
	capped   bool // limit is Options.MaxResults
	offset   int
	order    []string // whitelisted field names; never empty ("id" by default); always ends with "id" as the tie-breaker
	prop     PropertyFilter
	agent    AgentFilter
	key      string
}

// PropertyFilter holds the canonical property filters. A zero/nil field means
// the filter was not given. All slices are sorted and free of duplicates, and
// nil when not given.
type PropertyFilter struct {
	// IDs, when non-empty, is the only filter (rule 1): all other fields are zero.
	IDs []int64
	// AgencyIDs, when non-empty, is the only filter (rule 2): all other fields
	// are zero. Agency references are kept as given (case-sensitive).
	AgencyIDs []string

	AgentIDs      []int64
	StreetNumber  string   // lower case; matched case-insensitively, exact
	StreetName    string   // lower case; matched case-insensitively, exact
	PriceFrom     *float64 // price > PriceFrom (strict)
	PriceTo       *float64 // price < PriceTo (strict)
	Categories    []string // canonical case: Residential, Commercial, Agricultural
	Statuses      []string // canonical case: CURRENT, CONTRACT, SOLD, RENTED
	PropertyTypes []string // lower case; matched case-insensitively
	PriceTypes    []string // lower case; matched case-insensitively
	Bedrooms      *int     // exact
	Bathrooms     *int     // exact
	Geo           *Geo
	Featured      bool   // only featured properties
	ApprovedFrom  string // "YYYY-MM-DD", inclusive; "" when not given
	ApprovedTo    string // "YYYY-MM-DD", inclusive; "" when not given
}

// Geo is a great-circle radius search.
type Geo struct {
	Lat      float64 // degrees, [-90, 90]
	Long     float64 // degrees, [-180, 180]
	RadiusKm float64 // (0, 1000]
}

// AgentFilter holds the canonical agent filters.
type AgentFilter struct {
	// IDs, when non-empty, is the only filter (rule 1): Name and Username are "".
	IDs      []int64
	Name     string // lower case; case-insensitive substring match; "" when not given
	Username string // lower case; case-insensitive exact match; "" when not given
}

// Resource returns the resource the criteria select.
func (c Criteria) Resource() Resource { return c.resource }

// Detail returns the requested detail level (Short unless detail=full).
func (c Criteria) Detail() Detail { return c.detail }

// Limit returns the effective maximum number of results: the requested limit
// capped at Options.MaxResults, or MaxResults when none was given. It may be
// 0 (limit=0): the list is then empty, whatever matches.
//
// With Options.MaxResults negative (no cap), it is the limit the query gave,
// or NoLimit when it gave none: the backend decides, and neither the key nor
// Values carry a limit.
func (c Criteria) Limit() int { return c.limit }

// NoLimit is Limit's answer when the query gave no limit and the options
// set no cap.
const NoLimit = -1

// Capped reports whether the effective limit is Options.MaxResults: the
// query asked for more, or gave no limit. A list of that many records may
// have been cut short.
func (c Criteria) Capped() bool { return c.capped }

// Offset returns the number of results to skip.
func (c Criteria) Offset() int { return c.offset }

// Order returns the whitelisted order fields, ascending, in priority order.
// It is never empty and its last element is always "id" (fields a client
// gives after "id" cannot change the order and are dropped).
func (c Criteria) Order() []string { return c.order }

// Property returns the property filters (zero for agent criteria).
func (c Criteria) Property() PropertyFilter { return c.prop }

// Agent returns the agent filters (zero for property criteria).
func (c Criteria) Agent() AgentFilter { return c.agent }

// Key returns the canonical form of the criteria: two queries that mean the
// same thing have equal keys, two that differ have different keys. Unknown
// parameters never appear in it. It is computed once, when parsing, and is
// shaped like a query behind the resource name, for example
//
//	properties?status=CURRENT,SOLD&detail=short&limit=1000&offset=0&order=price,id
//
// with filters in the order of the spec's table (only those given, geo as
// lat,long,rad), then detail, the effective limit, offset and order. Text
// values are query-escaped, so no value can forge a separator.
func (c Criteria) Key() string { return c.key }

// FieldError is one entry of the spec's error list.
type FieldError struct {
	Field   string // the parameter name, e.g. "approved_from"
	Message string
}

// Errors is the spec's error list. It is returned in a stable order: the
// order of the parameters in the spec's tables.
type Errors []FieldError

func (e Errors) Error() string {
	var b strings.Builder
	for i, fe := range e {
		if i > 0 {
			b.WriteString("; ")
		}
		b.WriteString(fe.Field)
		b.WriteString(": ")
		b.WriteString(fe.Message)
	}
	return b.String()
}
