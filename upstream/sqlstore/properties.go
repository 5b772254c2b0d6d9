package sqlstore

import (
	"cmp"
	"context"
	"database/sql"
	"fmt"
	"maps"
	"math"
	"reflect"
	"slices"
	"strings"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgtype"

	"listingproxy/normalize"
	"listingproxy/upstream"
)

// propertyRequest is what a property list or get asks of the database.
type propertyRequest = request[normalize.PropertyFilter]

// request is what a list or get asks of the database: filters of type F
// and the page.
type request[F any] struct {
	filter F
	order  []string
	limit  int
	offset int
	detail normalize.Detail
	linked []int64 // properties only: see resolveAgents
	// walkBox writes the geo bounding box so that no index serves it
	// (geoWalkQuery).
	walkBox bool
}

// requestOf is the request of a list: its filters f and c's page.
func requestOf[F any](f F, c normalize.Criteria) request[F] {
	return request[F]{filter: f, order: c.Order(), limit: c.Limit(), offset: c.Offset(), detail: c.Detail()}
}

// byID is the request of a get: one full-detail record matching f.
func byID[F any](f F) request[F] { return request[F]{filter: f, limit: 1, detail: normalize.Full} }

// getOne runs a get as a one-record page: no record is upstream.ErrNotFound.
func getOne[T any](ctx context.Context, what string, id int64, fetch func() ([]T, error)) (T, error) {
	var zero T
	rs, err := fetch()
	if err != nil {
		return zero, fmt.Errorf("sqlstore: get %s %d: %w", what, id, err)
	}
	if len(rs) == 0 {
		return zero, upstream.ErrNotFound
	}
	return rs[0], nil
}

// ListProperties implements upstream.Backend.
func (s *Store) ListProperties(ctx context.Context, sc upstream.Scope, c normalize.Criteria) ([]upstream.Property, error) {
	ps, err := s.properties(ctx, sc, requestOf(c.Property(), c))
	if err != nil {
		return nil, fmt.Errorf("sqlstore: list properties: %w", err)
	}
	return ps, nil
}

// GetProperty implements upstream.Backend.
func (s *Store) GetProperty(ctx context.Context, sc upstream.Scope, id int64) (upstream.Property, error) {
	return getOne(ctx, "property", id, func() ([]upstream.Property, error) {
		return s.properties(ctx, sc, byID(normalize.PropertyFilter{IDs: []int64{id}}))
	})
}

func (s *Store) properties(ctx context.Context, sc upstream.Scope, r propertyRequest) ([]upstream.Property, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	tenant, ok, err := s.tenantID(ctx, sc.Tenant)
	if err != nil {
		return nil, err
	}
	if !ok || r.limit <= 0 {
		return []upstream.Property{}, nil
	}
	if ok, err = s.resolveAgents(ctx, tenant, sc.Country, &r); err != nil || !ok {
		return []upstream.Property{}, err
	}

	var page []upstream.Property
	if g := r.filter.Geo; g != nil {
		page, err = s.geoPage(ctx, tenant, sc.Country, r, *g)
	} else {
		var q *query
		if q, err = s.propertyPageQuery(tenant, sc.Country, r); err != nil {
			return nil, err
		}
		page, err = s.queryProperties(ctx, "list_properties", q, r.limit)
	}
	if err != nil {
		return nil, err
	}
	if err := s.decorateProperties(ctx, page, r.detail); err != nil {
		return nil, err
	}
	return page, nil
}

// defaultMaxLinked is the most properties an agent_id filter is resolved to
// before the page statement (see resolveAgents). Looking L properties up
// costs L key lookups; walking a scope of S properties for a page of 20
// costs about 20 x S/L rows, each with a probe of its links; the two meet
// near L = sqrt(20 x S), 2,236 for the 250,000 properties of a scope of the
// demo at a million. One IN list of 2,000 is far below every engine's limit
// on bind parameters (SQLite's is 32,766).
const defaultMaxLinked = 2000

// maxLinkedDeep bounds the links a deep or long page looks up (see
// maxLinkedFor): one IN list of 20,000 stays far below every engine's
// limit on bind parameters (MySQL's is 65,535; SQLite and PostgreSQL bind
// the list as one value).
const maxLinkedDeep = 20000

// maxLinkedFor is the most links resolveAgents looks up for r rather than
// walking the scope. Store.maxLinked is the crossover for a first page of
// 20; for offset+limit = N the walk reads about N x S/L rows, so the two
// meet near L = sqrt(N x S): maxLinked x sqrt(N/20), 14,283 at offset
// 1,000. Without it, agents of just over 2,000 links at offset 1,000 had
// the walk read about 127,000 rows (bench/NOTES.md, "What is left slow").
func (s *Store) maxLinkedFor(r *propertyRequest) int {
	const firstPage = 20
	n := r.offset + r.limit
	if n <= firstPage {
		return s.maxLinked
	}
	return min(maxLinkedDeep, max(s.maxLinked, int(float64(s.maxLinked)*math.Sqrt(float64(n)/firstPage))))
}

// resolveAgents turns the agent_id filter of r into what the page statement
// can use cheaply, and reports false when the page is empty for sure (no
// property statement need run). An agent_id names an agent of the caller's
// tenant and country, as the caller sees agents (GetAgent, ListAgents): ids
// of other tenants or countries, or of no agent, match nothing.
//
//  1. agent_properties reads at most M+1 links of those of the ids that
//     are agents of the scope (one probe of agents per id, then index
//     property_agents_agent), where M is maxLinkedFor(r): Store.maxLinked
//     for a first page of 20, more for a deeper or longer one, which first
//     asks whether there are more than M (agent_links_probe, one row at
//     offset M, counted in the engine) and, if so, goes straight to 2
//     without fetching them. None: the page is empty, so ids of another
//     tenant or of no agent cost their probes and nothing more. At most M:
//     they are all the candidates, set in r.linked, and the page statement
//     looks up just those properties by id (p.id IN (...)), in any order
//     and at any offset.
//  2. More: the agents list many properties (more than 1 in 125 of a scope
//     of 250,000). scope_agents keeps the ids of agents of the scope, and
//     the page statement walks the scope in the requested order and checks
//     each row's links (property_agents primary key) until the page is
//     full: about (offset+limit) x S/links rows for a scope of S
//     properties, 2,500 at most for a first page of 20 at a million
//     properties.
//
// With many ids (Store.scopeFirstN, scopeFirstIDs) scope_agents runs
// first: ids of no agent of the scope end there, and 1 reads the links of
// the scope's agents alone, without the agents join.
//
// The walk alone (an EXISTS per row, as before) read the whole scope for an
// agent with few properties, and for ids of another tenant or of no agent;
// the semi-join alone (driven by the links) reads every link and every
// linked property to sort them, 29,000 for 500 agents of the demo.
func (s *Store) resolveAgents(ctx context.Context, tenant int64, country string, r *propertyRequest) (bool, error) {
	if len(r.filter.AgentIDs) == 0 {
		return true, nil
	}
	scoped := s.scopeFirst(r)
	if scoped {
		if ok, err := s.denseAgents(ctx, tenant, country, r); err != nil || !ok {
			return false, err
		}
	}
	maxLinked := s.maxLinkedFor(r)
	dense := false
	if maxLinked > s.maxLinked {
		err := s.each(ctx, "agent_links_probe", s.agentLinksProbeQuery(tenant, country, r.filter.AgentIDs, scoped, maxLinked), func(*sql.Rows) error {
			dense = true
			return nil
		})
		if err != nil {
			return false, err
		}
	}
	if dense {
		if scoped {
			return true, nil
		}
		return s.denseAgents(ctx, tenant, country, r)
	}
	seen := map[int64]bool{}
	links := 0
	err := s.each(ctx, "agent_properties", s.agentPropertiesQuery(tenant, country, r.filter.AgentIDs, scoped, maxLinked), func(rows *sql.Rows) error {
		var id int64
		if err := rows.Scan(&id); err != nil {
			return err
		}
		links++
		seen[id] = true
		return nil
	})
	if err != nil {
		return false, err
	}
	switch {
	case links == 0: // no agent of the scope, or none with a property
		return false, nil
	case links <= maxLinked:
		r.linked = slices.Sorted(maps.Keys(seen))
		return true, nil
	case scoped:
		return true, nil
	}
	return s.denseAgents(ctx, tenant, country, r)
}

// scopeFirstIDs is the number of agent ids from which resolveAgents asks
// scope_agents first: the links are then read for the agents of the scope
// alone, from property_agents_agent without the agents join, and the dense
// case needs no second look at agents. Each statement with a list of 500
// ids costs MariaDB 3-4 ms of range analysis and probes (bench/NOTES.md,
// "The `agent_id` filter"), and agent_properties with the join was one more such
// list; for a few ids the order of one statement first is the cheaper.
const scopeFirstIDs = 64

// scopeFirst reports whether resolveAgents finds r's agents of the scope
// before their links (see scopeFirstIDs).
func (s *Store) scopeFirst(r *propertyRequest) bool {
	return len(r.filter.AgentIDs) >= s.scopeFirstN
}

// denseAgents is the dense case of resolveAgents, and its first statement
// for many ids: r's agent ids become those of agents of the scope.
func (s *Store) denseAgents(ctx context.Context, tenant int64, country string, r *propertyRequest) (bool, error) {
	var agents []int64
	err := s.each(ctx, "scope_agents", s.scopeAgentsQuery(tenant, country, r.filter.AgentIDs), func(rows *sql.Rows) error {
		var id int64
		if err := rows.Scan(&id); err != nil {
			return err
		}
		agents = append(agents, id)
		return nil
	})
	if err != nil {
		return false, err
	}
	r.filter.AgentIDs = agents // a new slice: the caller's criteria are untouched
	return len(agents) > 0, nil
}

// pageFrom is the FROM item of the page and geo statements of r: the one of
// detectHints, except on a MySQL table (hints allowed):
//
//   - properties looked up by id (r.linked) are read by the primary key
//     alone. Left to choose, MariaDB weighs every (tenant_id, country, ...)
//     index against the id list, one index dive per id and index below 200
//     ids and still 14 ms for 500: the statement costs 2-15 ms to plan and
//     0.2-1 ms to run; forced, 0.2-4 ms in all.
//   - the dense agent walk with no other filter, in one order field (then
//     id), walks that field's index (hints.order), which the planner
//     chooses anyway after weighing the 16 indexes of (tenant_id, country,
//     ...) against the walk's per-row check: for 500 agents that weighing
//     was a third of the statement (MariaDB list_properties 1.8-2.1 ->
//     1.3-1.5 ms median by id, 2.2-2.7 -> 1.4-1.8 by price; sqlbench
//     -statements, bench/NOTES.md "The `agent_id` filter").
func (s *Store) pageFrom(r propertyRequest) string {
	h := s.currentHints()
	if h.order == nil { // no hints: not MySQL, or a view
		return h.fromProperties
	}
	if len(r.linked) > 0 {
		return "properties p FORCE INDEX (PRIMARY)"
	}
	if index := h.order[walkOrderField(r)]; index != "" {
		return "properties p FORCE INDEX (" + index + ")"
	}
	return h.fromProperties
}

// walkOrderField is the order field of r's dense agent walk when the agent
// ids are its only filter and its order is one field (then id, as every
// order ends), or "" otherwise: another filter may have a better index
// than the order's, and an order of two fields would sort the scope.
func walkOrderField(r propertyRequest) string {
	if len(r.filter.AgentIDs) == 0 || len(r.linked) > 0 {
		return ""
	}
	others := r.filter
	others.AgentIDs = nil
	if !reflect.ValueOf(others).IsZero() {
		return ""
	}
	switch {
	case len(r.order) == 0:
		return "id"
	case len(r.order) == 1, len(r.order) == 2 && r.order[1] == "id":
		return r.order[0]
	}
	return ""
}

// scopeAgentsQuery is the statement of resolveAgents for the dense case:
// the ids, of ids, of agents of the tenant and country (index agents_tc_id,
// forced where detectHints found it: MariaDB otherwise weighs the primary
// key and the other agents indexes against the id list, 1.7-2.0 -> 1.3 ms
// median for 500 ids).
func (s *Store) scopeAgentsQuery(tenant int64, country string, ids []int64) *query {
	q := newQuery(s.d)
	q.add("SELECT a.id FROM agents a")
	if index := s.currentHints().agentScope; index != "" {
		q.add(" FORCE INDEX (", index, ")")
	}
	q.add(" WHERE a.tenant_id = ", q.arg(tenant), " AND a.country = ", q.arg(country),
		" AND ", inInts(q, "a.id", ids), " ORDER BY a.id")
	return q
}

// agentPropertiesQuery is the links statement of resolveAgents: up to
// maxLinked+1 properties linked to those of ids that are agents of the
// tenant and country (agents_tc_id or the primary key, then
// property_agents_agent), with repeats when a property has several of them.
// scoped: ids are already agents of the scope (scope_agents ran first), so
// the links are read from property_agents_agent alone.
func (s *Store) agentPropertiesQuery(tenant int64, country string, ids []int64, scoped bool, maxLinked int) *query {
	q := s.agentLinksFrom(tenant, country, ids, scoped)
	q.add(" LIMIT ", q.arg(maxLinked+1))
	return q
}

// agentLinksProbeQuery is the statement of agentPropertiesQuery's links
// that returns a row only when there are more than maxLinked: the
// (maxLinked+1)-th, so that a deep page does not fetch up to 20,000 links
// only to walk the scope. An offset, not count(*) over a subquery, which
// MariaDB materializes (see geoCountQuery).
func (s *Store) agentLinksProbeQuery(tenant int64, country string, ids []int64, scoped bool, maxLinked int) *query {
	q := s.agentLinksFrom(tenant, country, ids, scoped)
	q.limitOffset(1, maxLinked)
	return q
}

// agentLinksFrom is the links statement of agentPropertiesQuery and
// agentLinksProbeQuery, without its LIMIT.
func (s *Store) agentLinksFrom(tenant int64, country string, ids []int64, scoped bool) *query {
	q := newQuery(s.d)
	if scoped && s.currentHints().jsonTable {
		// On MySQL the ids bound as one JSON array, read by JSON_TABLE:
		// one statement text for any number of ids, and none of the range
		// analysis MariaDB does on an IN list of 500 at each execution
		// (1.4-1.6 -> 0.8-1.1 ms median for 500 agents' first 2,001 links).
		q.add("SELECT pa.property_id FROM ", jsonTableIDs(q, ids), " JOIN property_agents pa ON pa.agent_id = ids.id")
		return q
	}
	if scoped {
		q.add("SELECT pa.property_id FROM property_agents pa WHERE ", inInts(q, "pa.agent_id", ids))
		return q
	}
	q.add("SELECT pa.property_id FROM agents a JOIN property_agents pa ON pa.agent_id = a.id WHERE a.tenant_id = ",
		q.arg(tenant), " AND a.country = ", q.arg(country), " AND ", inInts(q, "a.id", ids))
	return q
}

// deepOffset is the offset from which a page is selected by a deferred
// join (see propertyPageQuery) on PostgreSQL and MySQL; SQLite's
// deferredJoinFrom is 0.
const deepOffset = 200

// propertyPageQuery is the statement of a property page without geo.
//
// A deep page (offset >= the dialect's deferredJoinFrom) is selected by a
// deferred join: the
// inner query finds the page's ids, walking offset+limit entries of an index
// that holds the filter and order columns and id (index-only: PostgreSQL's
// indexes end with id, InnoDB's hold the primary key), and only the page's
// rows are then read whole. Otherwise every skipped row would be read from
// the table just to be thrown away.
func (s *Store) propertyPageQuery(tenant int64, country string, r propertyRequest) (*query, error) {
	q := newQuery(s.d)
	if r.offset < s.d.deferredJoinFrom() {
		q.add("SELECT ", propertyColumns, " FROM ", s.pageFrom(r))
		q.where(s.propertyConds(q, tenant, country, r))
		if err := q.orderBy(r.order, propertyOrder, "p.id"); err != nil {
			return nil, err
		}
		q.limitOffset(r.limit, r.offset)
		return q, nil
	}
	q.add("SELECT ", propertyColumns, " FROM (SELECT p.id FROM ", s.pageFrom(r))
	q.where(s.propertyConds(q, tenant, country, r))
	if err := q.orderBy(r.order, propertyOrder, "p.id"); err != nil {
		return nil, err
	}
	q.limitOffset(r.limit, r.offset)
	q.add(") page JOIN properties p ON p.id = page.id")
	if err := q.orderBy(r.order, propertyOrder, "p.id"); err != nil {
		return nil, err
	}
	return q, nil
}

// defaultGeoProbe is the most bounding-box candidates a geo search reads,
// unordered, before it chooses how to find its page (see geoPage). Reading
// the B candidates of a box costs B index entries; walking the scope in the
// requested order until offset+limit hits are found costs about
// (offset+limit) x S/B rows for a scope of S properties; for a first page
// of 20 the two meet near B = sqrt(20 x S), 2,236 for the 250,000
// properties of a scope of the demo at a million (as defaultMaxLinked).
// 2,000 ids also make one IN list far below every engine's limit on bind
// parameters.
const defaultGeoProbe = 2000

// geoWalkMax is the most hits (offset+limit) a geo search finds by walking
// the scope in order (see geoPage): past it the walk, about (offset+limit)
// x S/B rows, costs more than reading the whole box.
const geoWalkMax = deepOffset

// geoCountQuery is the first statement of a geo search: whether the
// bounding box holds more than s.geoProbe candidates that pass the
// filters, as the id of the (s.geoProbe+1)-th, if any, in no order (the geo
// index alone, index-only, when geo is the only filter). A large box is
// told from a small one without its 2,001 rows crossing to Go: fetching
// them took most of a first page's time (4-8 ms on PostgreSQL, 11-21 ms
// on MariaDB on the loaded machine, for 0.9 ms of execution). An offset,
// not count(*) over a subquery, which MariaDB materializes (9-15 ms on the
// loaded machine against 1.7-2.5 on PostgreSQL and SQLite).
func (s *Store) geoCountQuery(tenant int64, country string, r propertyRequest) *query {
	q := newQuery(s.d)
	q.add("SELECT p.id FROM ", s.pageFrom(r))
	q.where(s.propertyConds(q, tenant, country, r))
	q.limitOffset(1, s.geoProbe)
	return q
}

// geoProbeQuery is the statement of a geo search whose box holds at most
// s.geoProbe candidates (geoCountQuery): their ids and positions (at most
// s.geoProbe+1, should rows have come since the count), in no order.
func (s *Store) geoProbeQuery(tenant int64, country string, r propertyRequest) *query {
	q := newQuery(s.d)
	q.add("SELECT p.id, p.latitude, p.longitude FROM ", s.pageFrom(r))
	q.where(s.propertyConds(q, tenant, country, r))
	q.add(" LIMIT ", q.arg(s.geoProbe+1))
	return q
}

// geoCandidatesQuery is the statement of a geo search whose box holds more
// than s.geoProbe candidates, for a page too deep to walk to (offset+limit
// above geoWalkMax): the ids and positions of the bounding box in the
// requested order, limit of them from offset. The engine reads the whole
// box from the geo index and keeps the first offset+limit in order (a
// top-N sort), so only those cross to Go, not every candidate of the box
// (7,000-11,000 for 5 km around a town centre of the demo at a million,
// sorted in Go before).
func (s *Store) geoCandidatesQuery(tenant int64, country string, r propertyRequest, limit, offset int) (*query, error) {
	q := newQuery(s.d)
	q.add("SELECT p.id, p.latitude, p.longitude FROM ", s.pageFrom(r))
	q.where(s.propertyConds(q, tenant, country, r))
	if err := q.orderBy(r.order, propertyOrder, "p.id"); err != nil {
		return nil, err
	}
	q.limitOffset(limit, offset)
	// MariaDB runs this statement re-executed from its cache 1.4 times
	// slower than prepared afresh (geo 5 km offset 1000: geo_candidates
	// 6.9 -> 17.6 ms median, bench/NOTES.md "Prepared statements on MariaDB").
	_, q.unprepared = s.d.(mysqlDialect)
	return q, nil
}

// geoWalkQuery is the statement of a geo search whose box holds more than
// s.geoProbe candidates, for a shallow page: the scope walked in the
// requested order (the order column's (tenant_id, country, column) index,
// as without geo), the box tested on each row without its index, limit
// rows of the box from offset. The engines would otherwise read the whole
// box from the geo index and sort it: for any order but id and price
// (which the geo index holds) that read every candidate from the table
// (7,000-11,000 for 5 km around a town centre of the demo at a million).
//
// On SQLite and MySQL the box is written so that no index serves it
// (dialect.noRangeIndex) and the planners walk the order's index. On
// PostgreSQL, which has no hints and estimates such an expression at a
// fixed 0.5% a bound (so it would rather sort the scope), the walk is a
// subquery fenced by OFFSET 0 with the box tested outside it: the outer
// LIMIT, with no sort or join above the subquery, is passed down as the
// number of rows wanted, so the planner walks the order's index, and a
// subquery scan with a filter keeps its rows in order. Its order indexes
// carry latitude and longitude (INCLUDE), so the walk is index-only.
func (s *Store) geoWalkQuery(tenant int64, country string, r propertyRequest, limit, offset int) (*query, error) {
	q := newQuery(s.d)
	if !s.d.fenceGeoWalk() {
		r.walkBox = true
		q.add("SELECT p.id, p.latitude, p.longitude FROM ", s.pageFrom(r))
		q.where(s.propertyConds(q, tenant, country, r))
		if err := q.orderBy(r.order, propertyOrder, "p.id"); err != nil {
			return nil, err
		}
		q.limitOffset(limit, offset)
		return q, nil
	}
	g := *r.filter.Geo
	r.filter.Geo = nil
	q.add("SELECT w.id, w.latitude, w.longitude FROM (SELECT p.id, p.latitude, p.longitude FROM ", s.pageFrom(r))
	q.where(s.propertyConds(q, tenant, country, r))
	if err := q.orderBy(r.order, propertyOrder, "p.id"); err != nil {
		return nil, err
	}
	q.add(" OFFSET 0) w")
	q.where(boxConds(q, g, "w.latitude", "w.longitude"))
	q.limitOffset(limit, offset)
	return q, nil
}

// idOrder reports an order by id alone.
func idOrder(order []string) bool {
	return len(order) == 0 || order[0] == "id"
}

// propertyConds returns the WHERE conditions of a property filter, in text
// order, with their arguments recorded in q. Rules 1 and 2 of the spec (id or
// agency_id override the other filters) are the normalize package's: its
// canonical filter already carries only the ids then.
func (s *Store) propertyConds(q *query, tenant int64, country string, r propertyRequest) []string {
	f := r.filter
	conds := []string{"p.tenant_id = " + q.arg(tenant), "p.country = " + q.arg(country)}
	if len(f.IDs) > 0 {
		conds = append(conds, inInts(q, "p.id", f.IDs))
	}
	if len(f.AgencyIDs) > 0 {
		conds = append(conds, in(q, "p.agency_id", f.AgencyIDs))
	}
	switch {
	case len(r.linked) > 0: // resolved to few properties: look them up
		conds = append(conds, inInts(q, "p.id", r.linked))
	case len(f.AgentIDs) > 0: // agents of many properties: check each row of the walk
		// A scalar subquery, not EXISTS or IN: the engines turn those into
		// semi-joins that read every link of the agents (29,000 for 500
		// agents of the demo) to sort a page of 20: PostgreSQL a merge
		// semi-join reading property_agents from its first row (0.5-2 s for
		// the last tenant), MariaDB a materialization (45-65 ms). An IN
		// list, not inInts: see there.
		conds = append(conds, "(SELECT count(*) FROM property_agents pa WHERE pa.property_id = p.id AND "+
			in(q, s.d.noIndex("pa.agent_id"), f.AgentIDs)+") > 0")
	}
	if f.StreetNumber != "" {
		conds = append(conds, "lower(p.street_number) = "+q.arg(strings.ToLower(f.StreetNumber)))
	}
	if f.StreetName != "" {
		conds = append(conds, "lower(p.street_name) = "+q.arg(strings.ToLower(f.StreetName)))
	}
	if f.PriceFrom != nil {
		conds = append(conds, "p.price_from > "+q.arg(*f.PriceFrom))
	}
	if f.PriceTo != nil {
		conds = append(conds, "p.price_from < "+q.arg(*f.PriceTo))
	}
	if len(f.Categories) > 0 {
		conds = append(conds, in(q, "p.category", f.Categories))
	}
	if len(f.Statuses) > 0 {
		conds = append(conds, in(q, "p.status", f.Statuses))
	}
	if len(f.PropertyTypes) > 0 {
		conds = append(conds, in(q, "lower(p.property_type)", lower(f.PropertyTypes)))
	}
	if len(f.PriceTypes) > 0 {
		conds = append(conds, in(q, "lower(p.price_type)", lower(f.PriceTypes)))
	}
	if f.Bedrooms != nil {
		conds = append(conds, "p.bedrooms = "+q.arg(*f.Bedrooms))
	}
	if f.Bathrooms != nil {
		conds = append(conds, "p.bathrooms = "+q.arg(*f.Bathrooms))
	}
	if f.Featured {
		conds = append(conds, "p.featured = "+q.arg(true))
	}
	if f.ApprovedFrom != "" {
		conds = append(conds, "p.approved >= "+q.arg(s.d.dateArg(f.ApprovedFrom)))
	}
	if f.ApprovedTo != "" {
		conds = append(conds, "p.approved <= "+q.arg(s.d.dateArg(f.ApprovedTo)))
	}
	if f.Geo != nil {
		lat, long := "p.latitude", "p.longitude"
		if r.walkBox {
			lat, long = s.d.noRangeIndex(lat), s.d.noRangeIndex(long)
		}
		conds = append(conds, boxConds(q, *f.Geo, lat, long)...)
	}
	return conds
}

// boxConds returns the conditions of g's bounding box on the columns lat
// and long.
func boxConds(q *query, g normalize.Geo, lat, long string) []string {
	b := boundingBox(g)
	conds := []string{lat + " BETWEEN " + q.arg(b.minLat) + " AND " + q.arg(b.maxLat)}
	switch {
	case b.allLongs:
	case b.wraps:
		conds = append(conds, "("+long+" >= "+q.arg(b.minLong)+" OR "+long+" <= "+q.arg(b.maxLong)+")")
	default:
		conds = append(conds, long+" BETWEEN "+q.arg(b.minLong)+" AND "+q.arg(b.maxLong))
	}
	return conds
}

func lower(ss []string) []string {
	out := make([]string, len(ss))
	for i, s := range ss {
		out[i] = strings.ToLower(s)
	}
	return out
}

// geoPlan is how geo search finds its page (see geoPage).
type geoPlan int

const (
	geoSmallBox geoPlan = iota // the probe read every candidate
	geoWalk                    // walk the scope in order, test the box on each row
	geoWholeBox                // read the whole box in order
)

// geoPage runs a geo search. The bounding box of the circle is a range of
// latitude and longitude, which no B-tree index reads in the order of a
// page: the geo index (tenant_id, country, latitude, longitude, price_from)
// reads the box in latitude order; the order column's index reads the scope
// in page order. So a first statement, geo_count, asks whether the box
// holds more than s.geoProbe candidates (with the other filters), and then:
//
//   - at most s.geoProbe (a small radius, a sparse area, a selective
//     filter, or an agent_id filter resolved to a few properties):
//     geo_probe reads them all, in no order. Go keeps those within the
//     radius; by id it sorts
//     and cuts the page itself, otherwise the page statement looks them up
//     by id (p.id IN (...)) in the requested order, as for agent_id.
//   - more, for a page within the first geoWalkMax hits: geo_walk walks the
//     scope in the requested order, the order column's index as without
//     geo, testing the box on each row, until offset+limit hits within the
//     radius are found: about (offset+limit) x S/B rows for B candidates
//     of a scope of S, 2,500 at most for a first page of 20 at a million
//     properties (720 for 5 km around a town centre of the demo).
//   - more, for a deeper page: geo_candidates reads the box in the
//     requested order, in batches of its first rows from the geo index (a
//     top-N sort in the engine), and Go skips to the page.
//
// Then load_properties reads the page's rows (but for the small box in
// another order, whose page statement reads them).
func (s *Store) geoPage(ctx context.Context, tenant int64, country string, r propertyRequest, g normalize.Geo) ([]upstream.Property, error) {
	plan, hits, err := s.geoProbeRun(ctx, tenant, country, r, g)
	if err != nil {
		return nil, err
	}
	var ids []int64
	switch plan {
	case geoSmallBox:
		if len(hits) == 0 {
			return []upstream.Property{}, nil
		}
		slices.Sort(hits)
		if !idOrder(r.order) {
			q, err := s.geoSmallBoxQuery(tenant, country, r, hits)
			if err != nil {
				return nil, err
			}
			return s.queryProperties(ctx, "list_properties", q, r.limit)
		}
		ids = hits[min(r.offset, len(hits)):]
		ids = ids[:min(r.limit, len(ids))]
	case geoWalk:
		if ids, err = s.geoWalkRun(ctx, tenant, country, r, g); err != nil {
			return nil, err
		}
	default:
		if ids, err = s.geoWholeBoxRun(ctx, tenant, country, r, g); err != nil {
			return nil, err
		}
	}
	return s.loadProperties(ctx, ids)
}

// geoProbeRun runs geo_count, then geo_probe for a small box (see
// geoPage), and returns the plan it chooses, with the ids within the
// radius when the probe read every candidate.
func (s *Store) geoProbeRun(ctx context.Context, tenant int64, country string, r propertyRequest, g normalize.Geo) (geoPlan, []int64, error) {
	large := false
	err := s.each(ctx, "geo_count", s.geoCountQuery(tenant, country, r), func(*sql.Rows) error {
		large = true
		return nil
	})
	if err != nil {
		return 0, nil, err
	}
	if !large {
		n, hits, err := s.geoProbeRows(ctx, tenant, country, r, g)
		if err != nil || n <= s.geoProbe { // else rows came since geo_count
			return geoSmallBox, hits, err
		}
	}
	if r.offset+r.limit <= geoWalkMax && r.offset+r.limit > 0 {
		return geoWalk, nil, nil
	}
	return geoWholeBox, nil, nil
}

// geoProbeRows runs geo_probe: the number of candidates it read, and the
// ids of those within the radius.
func (s *Store) geoProbeRows(ctx context.Context, tenant int64, country string, r propertyRequest, g normalize.Geo) (int, []int64, error) {
	var hits []int64
	n := 0
	err := s.each(ctx, "geo_probe", s.geoProbeQuery(tenant, country, r), func(rows *sql.Rows) error {
		var id int64
		var lat, long float64
		if err := rows.Scan(&id, &lat, &long); err != nil {
			return err
		}
		n++
		if DistanceKm(g.Lat, g.Long, lat, long) <= g.RadiusKm {
			hits = append(hits, id)
		}
		return nil
	})
	return n, hits, err
}

// geoSmallBoxQuery is the page statement of a geo search whose probe read
// every candidate: hits, the sorted ids within the radius, looked up by id
// in the requested order (the filters are already applied: the box and the
// other filters were the probe's).
func (s *Store) geoSmallBoxQuery(tenant int64, country string, r propertyRequest, hits []int64) (*query, error) {
	r.filter = normalize.PropertyFilter{}
	r.linked = hits
	return s.propertyPageQuery(tenant, country, r)
}

// geoWalkRun runs geo_walk (see geoPage) in batches until it has the page:
// the first of geoWalkBatch rows of the box, each next one twice as many
// as the last.
func (s *Store) geoWalkRun(ctx context.Context, tenant int64, country string, r propertyRequest, g normalize.Geo) ([]int64, error) {
	return s.geoBatches(ctx, "geo_walk", r, g, func(limit, offset int) (*query, error) {
		return s.geoWalkQuery(tenant, country, r, limit, offset)
	})
}

// geoWholeBoxRun runs geo_candidates (see geoPage) in batches until it has
// the page, as geoWalkRun.
func (s *Store) geoWholeBoxRun(ctx context.Context, tenant int64, country string, r propertyRequest, g normalize.Geo) ([]int64, error) {
	return s.geoBatches(ctx, "geo_candidates", r, g, func(limit, offset int) (*query, error) {
		return s.geoCandidatesQuery(tenant, country, r, limit, offset)
	})
}

// geoBatches runs the statement name, built by batch for a number of rows
// of the box in the page's order and an offset among them, in batches
// until it has the page's ids: rows outside the radius are dropped, the
// first r.offset hits skipped. The first batch is of geoWalkBatch rows,
// each next one twice as many as the last.
func (s *Store) geoBatches(ctx context.Context, name string, r propertyRequest, g normalize.Geo, batchQuery func(limit, offset int) (*query, error)) ([]int64, error) {
	var ids []int64
	skip := r.offset
	batch := s.geoWalkBatch(r)
	for read := 0; ; {
		q, err := batchQuery(batch, read)
		if err != nil {
			return nil, err
		}
		n := 0
		err = s.each(ctx, name, q, func(rows *sql.Rows) error {
			var id int64
			var lat, long float64
			if err := rows.Scan(&id, &lat, &long); err != nil {
				return err
			}
			n++
			if DistanceKm(g.Lat, g.Long, lat, long) > g.RadiusKm {
				return nil
			}
			if skip > 0 {
				skip--
				return nil
			}
			ids = append(ids, id)
			if len(ids) == r.limit {
				return errStop
			}
			return nil
		})
		if err != nil {
			return nil, err
		}
		if len(ids) == r.limit || n < batch {
			return ids, nil
		}
		read += n
		batch *= 2
	}
}

// geoWalkBatch is the number of rows of geo_walk's first batch for r: the
// circle fills pi/4 (79%) of its box, so 1.5 times the hits needed and 8
// more (s.geoWalkFirst instead when set).
func (s *Store) geoWalkBatch(r propertyRequest) int {
	if s.geoWalkFirst > 0 {
		return s.geoWalkFirst
	}
	need := r.offset + r.limit
	return need + need/2 + 8
}

// loadProperties reads the rows of ids, in that order (load_properties);
// a row gone since its id was found is skipped.
func (s *Store) loadProperties(ctx context.Context, ids []int64) ([]upstream.Property, error) {
	if len(ids) == 0 {
		return []upstream.Property{}, nil
	}
	byID := make(map[int64]upstream.Property, len(ids))
	for chunk := range chunks(ids) {
		q := newQuery(s.d)
		if q.jsonTable = s.currentHints().jsonTable; q.jsonTable {
			// One statement text for any page size (see byIDs).
			q.add("SELECT ", propertyColumns, " FROM ", byIDs(q, "properties p", "p.id", chunk))
		} else {
			q.add("SELECT ", propertyColumns, " FROM properties p WHERE ", in(q, "p.id", chunk))
		}
		ps, err := s.queryProperties(ctx, "load_properties", q, len(chunk))
		if err != nil {
			return nil, err
		}
		for _, p := range ps {
			byID[p.ID] = p
		}
	}
	page := make([]upstream.Property, 0, len(ids))
	for _, id := range ids {
		if p, ok := byID[id]; ok { // gone since the first query: skip
			page = append(page, p)
		}
	}
	return page, nil
}

// maxPresized bounds the properties queryProperties makes room for before
// the rows come (about 500 bytes each).
const maxPresized = 100

// queryProperties reads the properties q selects; most is the most rows it
// can return (its LIMIT or its ids). The slice is made for min(most,
// maxPresized) at the first row: a 20-property page grown by append was
// six allocations of 63 properties in all, and five copies.
func (s *Store) queryProperties(ctx context.Context, name string, q *query, most int) ([]upstream.Property, error) {
	var ps []upstream.Property
	add := func(p upstream.Property) {
		if ps == nil {
			ps = make([]upstream.Property, 0, max(1, min(most, maxPresized)))
		}
		ps = append(ps, p)
	}
	var err error
	if _, pg := s.d.(postgresDialect); pg {
		sc := newPgxRowScanner(propertyScan)
		err = s.eachPgx(ctx, name, q, func(rows pgx.Rows) error {
			p, err := sc.scan(rows)
			if err != nil {
				return err
			}
			add(p)
			return nil
		})
	} else {
		sc := newRowScanner(propertyScan)
		err = s.each(ctx, name, q, func(rows *sql.Rows) error {
			p, err := sc.scan(rows)
			if err != nil {
				return err
			}
			add(p)
			return nil
		})
	}
	if err != nil {
		return nil, err
	}
	return nonNil(ps), nil
}

// decorateProperties loads the agents, media (items in full detail, counts
// otherwise) and (full detail) open homes of a page with one statement,
// load_children, for the whole page (see childrenQuery), never one per row.
//
// The statement returns the rows of the three tables in no order; Go puts
// each table's rows in the order the contract gives them (agents by
// position, then id; media by kind, then position; open homes by start,
// then end: every order total, so no engine could give another) and each
// property is given its part of one slice per table (see inBuckets),
// instead of a slice grown per property. A 20-property full list has about
// 110 media rows, 23 agents and 23 open homes: three statements (three
// round trips to a server) cost more than ordering them.
func (s *Store) decorateProperties(ctx context.Context, page []upstream.Property, detail normalize.Detail) error {
	if len(page) == 0 {
		return nil
	}
	idx := make(map[int64]int, len(page))
	ids := make([]int64, len(page))
	for i := range page {
		idx[page[i].ID] = i
		ids[i] = page[i].ID
		page[i].Agents = []upstream.AgentRef{}
	}
	full := detail == normalize.Full
	for chunk := range chunks(ids) {
		var ch children
		ch.agents = make([]agentRow, 0, len(chunk)*2)
		if full {
			ch.media = make([]mediaRow, 0, len(chunk)*8)
			ch.opens = make([]openHomeRow, 0, len(chunk)*2)
		}
		var err error
		if _, pg := s.d.(postgresDialect); pg {
			err = s.eachPgx(ctx, "load_children", s.childrenQuery(chunk, full), func(rows pgx.Rows) error {
				return ch.scanPgx(rows, idx, full)
			})
		} else {
			err = s.each(ctx, "load_children", s.childrenQuery(chunk, full), func(rows *sql.Rows) error {
				return ch.scan(rows, idx, full)
			})
		}
		if err != nil {
			return fmt.Errorf("agents, media and open homes: %w", err)
		}
		ch.assign(page)
	}
	if full {
		for i := range page {
			p := &page[i]
			p.Photos, p.VirtualTours, p.Floorplans = nonNil(p.Photos), nonNil(p.VirtualTours), nonNil(p.Floorplans)
			p.OpenHomes = nonNil(p.OpenHomes)
		}
	}
	return nil
}

// childrenQuery is load_children for the properties ids: a UNION ALL of
// the open homes that have not ended (when full), the agents and the media
// (items when full, counts by kind otherwise), each looked up by
// property (index property_agents, property_media and openhomes primary
// keys). Its columns, NULL where a table has none:
//
//	table (0 agents, 1 media, 2 open homes), property_id,
//	n1 (agent id, media position or count), n2 (agent position),
//	kind, name or url, thumbnail, type, caption, starts_at, ends_at
func (s *Store) childrenQuery(ids []int64, full bool) *query {
	q := newQuery(s.d)
	q.jsonTable = s.currentHints().jsonTable
	// PostgreSQL types a UNION's columns branch by branch, and two NULLs
	// make a text column: so the open homes come first (their timestamps
	// type the last two columns), then the agents (their integers type n2).
	if full {
		q.add("SELECT 2, o.property_id, NULL, NULL, NULL, NULL, NULL, NULL, NULL, o.starts_at, o.ends_at",
			" FROM ", byIDs(q, "openhomes o", "o.property_id", ids), " AND o.ends_at > ", textArg(q, s.d.timeArg(s.now())),
			" UNION ALL ")
	}
	q.add("SELECT 0, pa.property_id, a.id, pa.position, NULL, a.name, NULL, NULL, NULL, NULL, NULL",
		" FROM ", byIDs(q, "property_agents pa JOIN agents a ON a.id = pa.agent_id", "pa.property_id", ids))
	if !full {
		q.add(" UNION ALL SELECT 1, m.property_id, count(*), NULL, m.kind, NULL, NULL, NULL, NULL, NULL, NULL",
			" FROM ", byIDs(q, "property_media m", "m.property_id", ids), " GROUP BY m.property_id, m.kind")
		return q
	}
	q.add(" UNION ALL SELECT 1, m.property_id, m.position, NULL, m.kind, m.url, m.thumbnail, m.type, m.caption, NULL, NULL",
		" FROM ", byIDs(q, "property_media m", "m.property_id", ids))
	return q
}

// children are the rows of load_children for a chunk of a page, by table,
// each with its property's index in the page and its sort keys.
type children struct {
	row    childRow
	dest   []any // of row's fields, in the statement's order
	pgRow  pgxChildRow
	pgDest []any // of pgRow's fields
	agents []agentRow
	media  []mediaRow
	counts []mediaRow // of media by kind (full false): Position is the count
	opens  []openHomeRow
}

type agentRow struct {
	owner, position int
	a               upstream.AgentRef
}

type mediaRow struct {
	owner, kind int
	m           upstream.Media
}

type openHomeRow struct {
	owner int
	o     upstream.OpenHome
}

// childRow is a row of load_children, scanned into the same variables
// every row (see rowScanner).
type childRow struct {
	table, pid       int64
	n1, n2           sql.NullInt64
	kind, name       string
	thumbnail, typ   string
	caption          string
	startsAt, endsAt nullTime
}

// scan reads one row of load_children.
func (c *children) scan(rows *sql.Rows, idx map[int64]int, full bool) error {
	r := &c.row
	if c.dest == nil {
		c.dest = []any{int64Of{&r.table}, int64Of{&r.pid}, nullInt64Of{&r.n1}, nullInt64Of{&r.n2}, textOrEmpty{&r.kind}, textOrEmpty{&r.name},
			textOrEmpty{&r.thumbnail}, textOrEmpty{&r.typ}, textOrEmpty{&r.caption}, &r.startsAt, &r.endsAt}
	}
	if err := rows.Scan(c.dest...); err != nil {
		return err
	}
	return c.add(idx, full)
}

// pgxChildRow is childRow as pgx decodes it.
type pgxChildRow struct {
	table, pid                          int64
	n1, n2                              pgtype.Int8
	kind, name, thumbnail, typ, caption pgtype.Text
	startsAt, endsAt                    nullTime // a sql.Scanner: any timestamp or date type, as each reads it
}

// scanPgx reads one row of load_children from pgx.
func (c *children) scanPgx(rows pgx.Rows, idx map[int64]int, full bool) error {
	p := &c.pgRow
	if c.pgDest == nil {
		c.pgDest = []any{&p.table, &p.pid, &p.n1, &p.n2, &p.kind, &p.name, &p.thumbnail, &p.typ, &p.caption, &p.startsAt, &p.endsAt}
	}
	if err := rows.Scan(c.pgDest...); err != nil {
		return err
	}
	c.row = childRow{table: p.table, pid: p.pid,
		n1: sql.NullInt64{Int64: p.n1.Int64, Valid: p.n1.Valid}, n2: sql.NullInt64{Int64: p.n2.Int64, Valid: p.n2.Valid},
		kind: p.kind.String, name: p.name.String, thumbnail: p.thumbnail.String, typ: p.typ.String, caption: p.caption.String,
		startsAt: p.startsAt, endsAt: p.endsAt}
	return c.add(idx, full)
}

// add files c.row, a row of load_children.
func (c *children) add(idx map[int64]int, full bool) error {
	r := &c.row
	owner := idx[r.pid]
	switch r.table {
	case 0:
		c.agents = append(c.agents, agentRow{owner, int(r.n2.Int64), upstream.AgentRef{ID: r.n1.Int64, Name: r.name}})
	case 1:
		k := mediaKind(r.kind)
		if k < 0 { // not listed
			return nil
		}
		m := upstream.Media{URL: r.name, Thumbnail: r.thumbnail, Type: r.typ, Caption: r.caption, Position: int(r.n1.Int64)}
		if !full {
			c.counts = append(c.counts, mediaRow{owner, k, m})
			return nil
		}
		c.media = append(c.media, mediaRow{owner, k, m})
	case 2:
		c.opens = append(c.opens, openHomeRow{owner, upstream.OpenHome{Start: r.startsAt.t, End: r.endsAt.t}})
	default:
		return fmt.Errorf("load_children: table %d", r.table)
	}
	return nil
}

// assign orders the rows (see decorateProperties) and gives each property
// its own: a counting sort by property (and kind), see inBuckets.
func (c *children) assign(page []upstream.Property) {
	inBuckets(c.agents, len(page), func(r *agentRow) int { return r.owner },
		func(x, y *agentRow) int {
			return cmp.Or(cmp.Compare(x.position, y.position), cmp.Compare(x.a.ID, y.a.ID))
		},
		func(r *agentRow) upstream.AgentRef { return r.a },
		func(i int, as []upstream.AgentRef) { page[i].Agents = join(page[i].Agents, as) })

	inBuckets(c.media, len(page)*kinds, func(r *mediaRow) int { return r.owner*kinds + r.kind },
		func(x, y *mediaRow) int { return cmp.Compare(x.m.Position, y.m.Position) },
		func(r *mediaRow) upstream.Media { return r.m },
		func(b int, ms []upstream.Media) {
			p := &page[b/kinds]
			switch b % kinds {
			case photo:
				p.Photos = join(p.Photos, ms)
				p.PhotoCount += len(ms)
			case virtualTour:
				p.VirtualTours = join(p.VirtualTours, ms)
				p.VirtualTourCount += len(ms)
			case floorplan:
				p.Floorplans = join(p.Floorplans, ms)
				p.FloorplanCount += len(ms)
			}
		})

	for _, r := range c.counts {
		p := &page[r.owner]
		switch r.kind {
		case photo:
			p.PhotoCount = r.m.Position
		case virtualTour:
			p.VirtualTourCount = r.m.Position
		case floorplan:
			p.FloorplanCount = r.m.Position
		}
	}

	inBuckets(c.opens, len(page), func(r *openHomeRow) int { return r.owner },
		func(x, y *openHomeRow) int {
			if n := x.o.Start.Compare(y.o.Start); n != 0 {
				return n
			}
			return x.o.End.Compare(y.o.End)
		},
		func(r *openHomeRow) upstream.OpenHome { return r.o },
		func(i int, os []upstream.OpenHome) { page[i].OpenHomes = join(page[i].OpenHomes, os) })
}

// inBuckets orders rows by bucket (0 to buckets-1) and each bucket's rows
// by cmp, and calls f with each bucket that has rows, in bucket order, and
// the values of its rows: a slice of one slice for all of them, capped at
// its length (an append to it copies). It is a counting sort: a pass to
// count the rows of each bucket, one to place them, then a sort of each
// bucket not in cmp's order already (a bucket's rows mostly come in the
// order of the engine's index, cmp's). slices.SortFunc of all the rows of
// a page, comparing property and kind first, was a fifth of a PostgreSQL
// list's queries (110 media rows of 88 bytes, ~750 comparisons and their
// swaps).
func inBuckets[R, T any](rows []R, buckets int, bucket func(*R) int, cmp func(x, y *R) int, value func(*R) T, f func(b int, values []T)) {
	if len(rows) == 0 {
		return
	}
	at := make([]int, buckets+1) // counts, then where each bucket ends, then starts
	for i := range rows {
		at[bucket(&rows[i])]++
	}
	end := 0
	for b := range buckets {
		end += at[b]
		at[b] = end
	}
	at[buckets] = len(rows)
	order := make([]int32, len(rows)) // of rows, by bucket
	for i := len(rows) - 1; i >= 0; i-- {
		b := bucket(&rows[i])
		at[b]--
		order[at[b]] = int32(i)
	}
	byRow := func(x, y int32) int { return cmp(&rows[x], &rows[y]) }
	values := make([]T, len(rows))
	for b := range buckets {
		start, end := at[b], at[b+1]
		if start == end {
			continue
		}
		o := order[start:end]
		if !slices.IsSortedFunc(o, byRow) {
			slices.SortFunc(o, byRow)
		}
		for k, i := range o {
			values[start+k] = value(&rows[i])
		}
		f(b, values[start:end:end])
	}
}

// join is have followed by more: more itself when have is empty (no copy).
func join[T any](have, more []T) []T {
	if len(have) == 0 {
		return more
	}
	return append(have, more...)
}

// The media kinds of property_media.kind.
const (
	photo = iota
	virtualTour
	floorplan
	kinds // how many
)

// mediaKind is the kind of a property_media.kind value, -1 for none (such
// a row is not listed).
func mediaKind(kind string) int {
	switch kind {
	case "photo":
		return photo
	case "virtualtour":
		return virtualTour
	case "floorplan":
		return floorplan
	}
	return -1
}

func nonNil[T any](s []T) []T {
	if s == nil {
		return []T{}
	}
	return s
}

// maxInList bounds the number of values bound in one IN list, well below
// every engine's limit on bind parameters.
const maxInList = 500

// chunks yields ids in slices of at most maxInList.
func chunks(ids []int64) func(func([]int64) bool) {
	return func(yield func([]int64) bool) {
		for len(ids) > 0 {
			n := min(len(ids), maxInList)
			if !yield(ids[:n]) {
				return
			}
			ids = ids[n:]
		}
	}
}
