// Package normalize owns the criteria vocabulary of the listing API: it parses
// a request's query (url.Values) into canonical Criteria, or into the spec's
// error list, and gives each Criteria a canonical Key for caching.
//
// It is a leaf: it imports the standard library only.
package normalize

import (
	"net/url"
	"strings"
)

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
	limit    int // effective limit, always > 0 after parsing (max_results when not given)
	offset   int
	order    []string // whitelisted field names; never empty ("id" by default); always ends with "id" as the tie-breaker
	prop     PropertyFilter
	agent    AgentFilter
	key      string
}

// PropertyFilter holds the canonical property filters. A zero/nil field means
// the filter was not given. All slices are sorted and free of duplicates.
type PropertyFilter struct {
	// IDs, when non-empty, is the only filter (rule 1): all other fields are zero.
	IDs []int64
	// AgencyIDs, when non-empty, is the only filter (rule 2): all other fields are zero.
	AgencyIDs []string

	AgentIDs      []int64
	StreetNumber  string   // matched case-insensitively, exact
	StreetName    string   // matched case-insensitively, exact
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
	Name     string // case-insensitive substring match; "" when not given
	Username string // case-insensitive exact match; "" when not given
}

// Resource returns the resource the criteria select.
func (c Criteria) Resource() Resource { return c.resource }

// Detail returns the requested detail level (Short unless detail=full).
func (c Criteria) Detail() Detail { return c.detail }

// Limit returns the effective maximum number of results: the requested limit
// capped at Options.MaxResults, or MaxResults when none was given.
func (c Criteria) Limit() int { return c.limit }

// Offset returns the number of results to skip.
func (c Criteria) Offset() int { return c.offset }

// Order returns the whitelisted order fields, ascending, in priority order.
// It is never empty and its last element is always "id".
func (c Criteria) Order() []string { return c.order }

// Property returns the property filters (zero for agent criteria).
func (c Criteria) Property() PropertyFilter { return c.prop }

// Agent returns the agent filters (zero for property criteria).
func (c Criteria) Agent() AgentFilter { return c.agent }

// Key returns the canonical form of the criteria: two queries that mean the
// same thing have equal keys, two that differ have different keys. Unknown
// parameters never appear in it.
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

// Values returns the canonical query of the criteria in the spec's parameter
// forms (multi-valued parameters as key[]=v, single ones as key=v, geo as
// geo[lat], geo[long], geo[rad]). Parsing it again yields equal criteria.
// TEMPORARY placeholder: the normalize implementation replaces it.
func (c Criteria) Values() url.Values { return url.Values{} }
