package sqlstore

import (
	"database/sql/driver"
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"

	"listingproxy/normalize"
)

// query builds one parameterised statement. Text is appended from fixed
// fragments only; every value goes through arg, which records it and returns
// the dialect's placeholder, so placeholders are numbered in text order.
type query struct {
	d    dialect
	b    strings.Builder
	args []any
	// unprepared keeps the statement out of the statement cache (see
	// stmtCache): run as a one-off, prepared and closed each time.
	unprepared bool
	// jsonTable: the engine reads a JSON array with JSON_TABLE (MySQL 8,
	// MariaDB 10.6; hints.jsonTable), so byIDs binds ids as one array.
	jsonTable bool
}

func newQuery(d dialect) *query { return &query{d: d} }

func (q *query) add(fragments ...string) {
	for _, f := range fragments {
		q.b.WriteString(f)
	}
}

// arg records v and returns its placeholder.
func (q *query) arg(v any) string {
	q.args = append(q.args, v)
	return q.d.placeholder(len(q.args))
}

// in returns "expr IN (p1, p2, ...)" over vs, which must not be empty.
func in[T any](q *query, expr string, vs []T) string {
	var b strings.Builder
	b.WriteString(expr)
	b.WriteString(" IN (")
	for i, v := range vs {
		if i > 0 {
			b.WriteString(", ")
		}
		b.WriteString(q.arg(v))
	}
	b.WriteString(")")
	return b.String()
}

// inInts returns a condition that expr is one of vs, which must not be
// empty: an IN list, except on PostgreSQL, where vs is bound as one array
// (expr = ANY($n)). An IN list's text changes with the number of values,
// and pgx prepares each new text once per connection (a round trip more,
// and its statement cache churns: 2,000 texts for the lookups of up to
// 2,000 linked properties); one array is one text for any number. The
// dense agent filter's per-row check keeps its IN list: its values are
// constants of the plan, which PostgreSQL hashes once, where an array
// parameter under a generic plan is searched element by element for each
// row (58 us a row for 500 agents, against 2 us).
func inInts(q *query, expr string, vs []int64) string {
	if _, ok := q.d.(postgresDialect); ok {
		return expr + " = ANY(" + q.arg(vs) + ")"
	}
	return in(q, expr, vs)
}

// jsonIDs is ids as a JSON array.
func jsonIDs(ids []int64) string {
	b := make([]byte, 0, 2+len(ids)*8)
	b = append(b, '[')
	for i, id := range ids {
		if i > 0 {
			b = append(b, ',')
		}
		b = strconv.AppendInt(b, id, 10)
	}
	b = append(b, ']')
	return string(b)
}

// byIDs returns "tables WHERE expr is one of ids" for a FROM clause, ids
// being distinct and not empty. On SQLite the ids are a JSON array (see
// inIDs) joined first: "json_each(?) ids CROSS JOIN tables WHERE expr =
// ids.value", each id looked up in expr's index in turn. An IN (SELECT
// value FROM json_each(?)) condition is a list subquery, which SQLite
// copies into a temporary index (parse, create, insert) before the lookups,
// in each branch of load_children. On MySQL and MariaDB with JSON_TABLE
// (q.jsonTable) the same shape reads the array with JSON_TABLE: one
// statement text for any number of ids, where an IN list has one per page
// size, each prepared on the server and churning the statement cache
// (stmtCache) when clients vary their limit. Elsewhere it is an IN list.
func byIDs(q *query, tables, expr string, ids []int64) string {
	if _, ok := q.d.(sqliteDialect); ok {
		return "json_each(" + q.arg(jsonIDs(ids)) + ") ids CROSS JOIN " + tables + " WHERE " + expr + " = ids.value"
	}
	if q.jsonTable {
		return jsonTableIDs(q, ids) + " CROSS JOIN " + tables + " WHERE " + expr + " = ids.id"
	}
	return tables + " WHERE " + in(q, expr, ids)
}

// jsonTableIDs is ids bound as one JSON array and read as the table ids
// (column id) by MySQL's JSON_TABLE.
func jsonTableIDs(q *query, ids []int64) string {
	return "JSON_TABLE(" + q.arg(jsonIDs(ids)) + ", '$[*]' COLUMNS (id BIGINT PATH '$')) ids"
}

// textArg returns the placeholder of the text value v in a condition whose
// plan does not depend on v. On SQLite the placeholder is wrapped in an
// expression ("(? || ”)", the same text) so that STAT4 does not look at the
// value and the prepared statement is not recompiled for each new one (see
// inIDs). Elsewhere it is the plain placeholder.
func textArg(q *query, v any) string {
	if _, ok := q.d.(sqliteDialect); ok {
		return "(" + q.arg(v) + " || '')"
	}
	return q.arg(v)
}

// where appends " WHERE c1 AND c2 ..." (conds were built in order by arg).
func (q *query) where(conds []string) {
	if len(conds) > 0 {
		q.add(" WHERE ", strings.Join(conds, " AND "))
	}
}

// orderBy appends the ORDER BY clause for whitelisted fields, ending with the
// id tie-breaker.
func (q *query) orderBy(fields []string, columns map[string]orderColumn, idColumn string) error {
	terms := make([]string, 0, len(fields)+1)
	hasID := false
	for _, f := range fields {
		c, ok := columns[f]
		if !ok {
			return fmt.Errorf("unknown order field %q", f)
		}
		terms = append(terms, q.d.orderTerm(c.expr, c.text, c.nullable))
		if c.expr == idColumn {
			hasID = true
			break // id is unique: later terms cannot matter
		}
	}
	if !hasID {
		terms = append(terms, idColumn)
	}
	q.add(" ORDER BY ", strings.Join(terms, ", "))
	return nil
}

func (q *query) limitOffset(limit, offset int) {
	q.add(" LIMIT ", q.arg(limit), " OFFSET ", q.arg(offset))
}

func (q *query) String() string { return q.b.String() }

// orderColumn is the SQL expression behind an order field.
type orderColumn struct {
	expr     string
	text     bool // compared byte-wise
	nullable bool // NULL in the contract (NOT NULL columns must not hold NULL: they scan into Go values)
}

// propertyOrder maps the property order fields of normalize to columns.
var propertyOrder = map[string]orderColumn{
	"id":            {"p.id", false, false},
	"agency_id":     {"p.agency_id", true, false},
	"status":        {"p.status", true, false},
	"approved":      {"p.approved", false, true},
	"last_updated":  {"p.last_updated", false, false},
	"price":         {"p.price_from", false, true},
	"bedrooms":      {"p.bedrooms", false, true},
	"bathrooms":     {"p.bathrooms", false, true},
	"suburb":        {"p.suburb", true, false},
	"category":      {"p.category", true, false},
	"property_type": {"p.property_type", true, false},
}

// agentOrder maps the agent order fields of normalize to columns.
var agentOrder = map[string]orderColumn{
	"id":       {"a.id", false, false},
	"name":     {"a.name", true, false},
	"username": {"a.username", true, false},
}

// likePattern returns a LIKE pattern matching s anywhere, with the wildcards
// and the escape character of s escaped (backslash is the escape character;
// see dialect.likeEscape).
func likePattern(s string) string {
	r := strings.NewReplacer(`\`, `\\`, `%`, `\%`, `_`, `\_`)
	return "%" + r.Replace(s) + "%"
}

// EarthRadiusKm is the radius of the sphere on which geo distances are
// measured: the mean Earth radius (IUGG), in kilometres.
const EarthRadiusKm = 6371.0

// DistanceKm returns the great-circle distance in kilometres between two
// points given in degrees, by the haversine formula on a sphere of
// EarthRadiusKm.
func DistanceKm(lat1, long1, lat2, long2 float64) float64 {
	const rad = math.Pi / 180
	phi1, phi2 := lat1*rad, lat2*rad
	dPhi := (lat2 - lat1) * rad
	dLambda := (long2 - long1) * rad
	a := math.Sin(dPhi/2)*math.Sin(dPhi/2) + math.Cos(phi1)*math.Cos(phi2)*math.Sin(dLambda/2)*math.Sin(dLambda/2)
	return 2 * EarthRadiusKm * math.Asin(math.Min(1, math.Sqrt(a)))
}

// box is a latitude/longitude bounding box that contains a geo circle.
type box struct {
	minLat, maxLat   float64
	minLong, maxLong float64
	allLongs         bool // the circle contains a pole: every longitude
	wraps            bool // crosses the antimeridian: long >= minLong OR long <= maxLong
}

// boundingBox returns a box containing every point within g.RadiusKm of the
// centre (J. Matuschek, "Finding Points Within a Distance of a
// Latitude/Longitude Using Bounding Coordinates"), widened by a hair so
// rounding never excludes a point the exact check would accept.
func boundingBox(g normalize.Geo) box {
	const rad = math.Pi / 180
	const margin = 1e-6 // degrees, about 0.1 m
	r := g.RadiusKm / EarthRadiusKm
	lat := g.Lat * rad
	b := box{minLat: g.Lat - r/rad - margin, maxLat: g.Lat + r/rad + margin}
	if b.minLat <= -90 || b.maxLat >= 90 {
		b.minLat, b.maxLat = math.Max(b.minLat, -90), math.Min(b.maxLat, 90)
		b.allLongs = true
		return b
	}
	dLong := math.Asin(math.Min(1, math.Sin(r)/math.Cos(lat)))/rad + margin
	b.minLong, b.maxLong = g.Long-dLong, g.Long+dLong
	switch {
	case b.minLong < -180:
		b.minLong += 360
		b.wraps = true
	case b.maxLong > 180:
		b.maxLong -= 360
		b.wraps = true
	}
	return b
}

// nullTime scans a timestamp or date column of any dialect: time.Time
// (PostgreSQL, MySQL with parseTime), or text in the SQLite layouts.
type nullTime struct {
	t     time.Time
	valid bool
}

func (n *nullTime) Scan(v any) error {
	switch v := v.(type) {
	case nil:
		*n = nullTime{}
		return nil
	case time.Time:
		*n = nullTime{v.UTC(), true}
		return nil
	case []byte:
		return n.parse(string(v))
	case string:
		return n.parse(v)
	}
	return fmt.Errorf("cannot scan %T into a time", v)
}

func (n *nullTime) parse(s string) error {
	if t, ok := parseFixedUTC(s); ok { // what this schema stores on SQLite
		*n = nullTime{t, true}
		return nil
	}
	for _, layout := range []string{sqliteTimeLayout, dateLayout, time.RFC3339Nano, "2006-01-02 15:04:05"} {
		if t, err := time.Parse(layout, s); err == nil {
			*n = nullTime{t.UTC(), true}
			return nil
		}
	}
	return fmt.Errorf("cannot parse %q as a time", s)
}

// parseFixedUTC parses s as sqliteTimeLayout or dateLayout, as time.Parse
// does, without its layout interpretation (time.Parse was ~3% of a SQLite
// list's CPU, for the open homes' and properties' times); ok is false for
// anything else, which the general layouts then try.
func parseFixedUTC(s string) (t time.Time, ok bool) {
	if len(s) != len(sqliteTimeLayout) && len(s) != len(dateLayout) {
		return time.Time{}, false
	}
	num := func(i, n int) int {
		v := 0
		for _, c := range []byte(s[i : i+n]) {
			if c < '0' || c > '9' {
				return -1
			}
			v = v*10 + int(c-'0')
		}
		return v
	}
	if s[4] != '-' || s[7] != '-' {
		return time.Time{}, false
	}
	year, month, day := num(0, 4), num(5, 2), num(8, 2)
	hour, minute, second := 0, 0, 0
	if len(s) == len(sqliteTimeLayout) {
		if s[10] != 'T' || s[13] != ':' || s[16] != ':' || s[19] != 'Z' {
			return time.Time{}, false
		}
		hour, minute, second = num(11, 2), num(14, 2), num(17, 2)
	}
	if year < 0 || month < 1 || month > 12 || day < 1 || hour < 0 || hour > 23 || minute < 0 || minute > 59 || second < 0 || second > 59 {
		return time.Time{}, false
	}
	t = time.Date(year, time.Month(month), day, hour, minute, second, 0, time.UTC)
	if t.Day() != day { // past the month's end: time.Parse refuses it
		return time.Time{}, false
	}
	return t, true
}

// nullable returns nil for a nil pointer and the pointed-to value otherwise,
// so drivers see plain values.
func nullable[T any](p *T) driver.Value {
	if p == nil {
		return nil
	}
	return *p
}
