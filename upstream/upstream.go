// Package upstream owns the domain model served by listingproxy (Property,
// Agent and their parts), the Backend contract every legacy source adapter
// implements, and the sentinel errors those adapters return.
//
// It must not import proxy, cache or config, nor any database driver; the
// adapters live in sub-packages (upstream/sqlstore, upstream/crm) and bring
// their own drivers.
package upstream

import (
	"context"
	"errors"
	"fmt"
	"time"

	"listingproxy/normalize"
)

// Scope says whose data a backend call is about. Every backend call is
// scoped: an adapter never returns a record outside its scope.
type Scope struct {
	// Tenant is the tenant's identity at the backend (for SQL stores the
	// tenants.name value; for the CRM, the configured tenant name).
	Tenant string
	// Country is the country segment of the request path, "au" or "nz".
	Country string
}

// Backend is the contract of a legacy source of truth. Implementations must be
// safe for concurrent use and must honour ctx's deadline and cancellation.
//
// Lists return records in the order and page that the criteria ask for
// (criteria.Order, Offset and Limit already applied). Records carry every
// field the criteria's detail level needs; counts (PhotoCount, AgentCount...)
// are always filled, item slices (Photos, OpenHomes, Properties...) at least
// when the detail level is full.
type Backend interface {
	ListProperties(ctx context.Context, s Scope, c normalize.Criteria) ([]Property, error)
	// GetProperty returns the property with full detail, or ErrNotFound.
	GetProperty(ctx context.Context, s Scope, id int64) (Property, error)
	ListAgents(ctx context.Context, s Scope, c normalize.Criteria) ([]Agent, error)
	// GetAgent returns the agent with full detail, or ErrNotFound.
	GetAgent(ctx context.Context, s Scope, id int64) (Agent, error)
}

// ErrNotFound is returned by GetProperty and GetAgent when no record with that
// id exists in the scope. It is an answer, not a failure (see IsAnswer).
var ErrNotFound = errors.New("not found")

// CriteriaError is returned by a backend that rejects the criteria itself (a
// legacy CRM answering with an error list). It is an answer, not a failure
// (see IsAnswer).
type CriteriaError struct {
	Errors normalize.Errors
}

func (e *CriteriaError) Error() string {
	return fmt.Sprintf("backend rejected criteria: %v", e.Errors)
}

// ErrInternal marks an error that is listingproxy's own bug found during a
// backend call (an adapter recovered a panic of its decoding, with the
// stack logged and counted there): neither an answer nor a failure of the
// backend. Breakers leave such calls uncounted (the backend answered; what
// failed was reading it) and metrics report them as "internal", apart from
// the backend's failures. The caller still gets no data: the proxy serves
// it as any unavailable answer (a stale copy, else 503).
var ErrInternal = errors.New("internal error of listingproxy")

// IsAnswer reports whether err, returned by a Backend, is an answer from a
// healthy backend rather than a failure: ErrNotFound or a *CriteriaError,
// wrapped or not. Answers are served (and cached) as the spec's error
// bodies, count as successes for breakers and are not errors in metrics or
// spans. This is the one place the rule is written.
//
// context.Canceled is not an answer: a caller that went away learned
// nothing from the backend, good or bad. It is not a failure either;
// breakers leave such calls uncounted and metrics report them as
// "canceled". Neither is ErrInternal, which is listingproxy's bug, not the
// backend's failure. nil is not an answer (it is a success with data).
func IsAnswer(err error) bool {
	var ce *CriteriaError
	return errors.Is(err, ErrNotFound) || errors.As(err, &ce)
}

// ErrBusy is matched (errors.Is) by the error of a call that was refused or
// given up before the backend could answer it because a local bound was
// full: no concurrency slot came free within the wait allowed, no room in
// the budget of bytes being decoded. It says nothing about the backend's
// health, so it is neither an answer nor a failure: breakers leave it
// uncounted, and the cache answers it like a failure (a stale copy, else
// 503 with Retry-After when the error has a RetryAfter method).
var ErrBusy = errors.New("backend busy")

// Property is one listing. Nullable numbers are pointers: nil renders as an
// empty value.
type Property struct {
	// Legacy is the record as its source sent it, for pass-through (a
	// *wire.Element from a legacy CRM), or nil: the writers then render
	// from the fields below. Adapters set it; nobody changes it.
	Legacy any

	ID             int64
	AgencyID       string
	LastUpdated    time.Time // instant; rendered in the country's zone
	Approved       time.Time // a date (UTC midnight); zero when never approved
	StreetNumber   string
	StreetName     string
	AddressDisplay bool
	Status         string   // CURRENT, CONTRACT, SOLD or RENTED, as stored
	Latitude       *float64 // nil when the source has none (never 0°)
	Longitude      *float64

	PriceText    string   // display price, e.g. "$650,000" or "Auction"
	PriceFrom    *float64 // raw price
	PriceTo      *float64 // raw upper price of a range
	PriceType    string   // e.g. auction, tender, pbn; "" for a fixed price
	Category     string   // Residential, Commercial or Agricultural
	PropertyType string
	Suburb       string
	Area         string
	Region       string
	Bedrooms     *int
	Bathrooms    *int
	FloorSize    *float64 // square metres
	LotSize      *float64 // square metres
	BuiltIn      string   // free text: "1995", "1990s", "1995-2000"
	Description  string
	Featured     bool

	PhotoCount       int
	VirtualTourCount int
	FloorplanCount   int
	Photos           []Media // ordered by Position
	VirtualTours     []Media
	Floorplans       []Media

	Agents    []AgentRef // always filled, ordered by position
	OpenHomes []OpenHome // open homes that have not ended, by start
}

// Address is the display address: street number and name.
func (p *Property) Address() string {
	switch {
	case p.StreetNumber == "":
		return p.StreetName
	case p.StreetName == "":
		return p.StreetNumber
	}
	return p.StreetNumber + " " + p.StreetName
}

// Media is a photo, virtual tour or floorplan.
type Media struct {
	URL       string
	Thumbnail string
	Type      string // photos only: Normal, Elevated or Night
	Caption   string
	Position  int
}

// AgentRef is an agent as listed inside a property.
type AgentRef struct {
	ID   int64
	Name string
}

// OpenHome is one open-home slot. Times are instants; they are rendered in
// the country's zone.
type OpenHome struct {
	Start time.Time
	End   time.Time
}

// Agent is one agent of a tenant.
type Agent struct {
	Legacy any // as Property.Legacy

	ID              int64
	Name            string
	Username        string
	Phone           string
	AfterHoursPhone string
	MobilePhone     string
	Email           string
	Description     string
	PhotoURL        string // "" when the agent has no photo
	WebsiteURL      string

	PropertyCount int           // current (CURRENT or CONTRACT) properties
	Properties    []PropertyRef // the current properties, by id; full detail
}

// PropertyRef is a property as listed inside an agent.
type PropertyRef struct {
	ID          int64
	LastUpdated time.Time
	Address     string // plain text, street number and name
	AgencyID    string
}

// backgroundKey marks the context of a background call.
type backgroundKey struct{}

// Background returns ctx marked as a background call: one no client waits
// for (a cache refresh ahead of expiry or of a stale entry). Decorators
// that bound concurrency run it only on idle capacity and refuse it rather
// than queue it (upstream/breaker).
func Background(ctx context.Context) context.Context {
	return context.WithValue(ctx, backgroundKey{}, true)
}

// IsBackground reports whether ctx is a background call's (Background).
func IsBackground(ctx context.Context) bool { return ctx.Value(backgroundKey{}) != nil }
