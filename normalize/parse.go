package normalize

import (
	"cmp"
	"fmt"
	"math"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"
)

// Options bound what a query may ask for. The zero value is ready to use.
type Options struct {
	// MaxResults is the effective limit when the query gives none, and the
	// cap on a limit it gives. Default 1000 when 0. Negative: no cap, the
	// limit is the one the query gives (Limit returns NoLimit without one),
	// for a backend that applies its own (a legacy CRM).
	MaxResults int
	// MaxValues is the largest number of distinct values accepted for one
	// multi-valued parameter (order excepted: its whitelist bounds it); more
	// is an error on that parameter. Default 500 when <= 0.
	MaxValues int
	// MaxOffset is the largest offset accepted; a larger one is an error
	// on offset. 0 (the default) or negative: no cap. A deep page costs
	// the backend in proportion to its offset (docs/sql.md, "max_offset").
	MaxOffset int
}

func (o Options) maxResults() int {
	if o.MaxResults == 0 {
		return 1000
	}
	return o.MaxResults
}

func (o Options) maxValues() int {
	if o.MaxValues <= 0 {
		return 500
	}
	return o.MaxValues
}

// Limits of the vocabulary.
const (
	maxTextBytes   = 200  // longest free-text value, after lower-casing
	maxNumberBytes = 32   // longest number of any kind; longer is an error, never work
	maxEchoBytes   = 64   // longest value echoed back in an error message
	maxRooms       = 1000 // bedrooms, bathrooms
	maxRadiusKm    = 1000
	maxPrice       = 1e15 // keeps every price exact in float64 and its canonical form short
	maxPage        = math.MaxInt32
)

// parser holds one query's values by parameter. raw[p][0] holds the values of
// "key", raw[p][1] those of "key[]"; they are read in that order, so the
// result never depends on map iteration order.
type parser struct {
	raw [maxSlots][2][]string
	// names are the slots' names (slotNames), reached through the parser
	// so that the table's parse functions do not refer to the table.
	names []string
	o     Options
	errs  Errors
}

// init files the values of q by parameter. (Not a constructor returning a
// pointer: a parser lives on its caller's stack.)
func (ps *parser) init(r Resource, q url.Values, o Options) {
	ps.o = o
	ps.names = slotNames
	for k, vs := range q {
		ref, ok := lookupParam(r, k)
		if !ok {
			continue
		}
		ps.raw[ref.p][ref.array] = vs
	}
}

func (ps *parser) fail(p param, msg string) {
	ps.errs = append(ps.errs, FieldError{Field: ps.names[p], Message: msg})
}

// failf records an error that echoes the offending value. The format gets
// two operands, the parameter name and the value; the messages are constants,
// so nothing is built until a value is found invalid.
func (ps *parser) failf(p param, format, value string) {
	ps.fail(p, fmt.Sprintf(format, ps.names[p], echo(value)))
}

// given reports whether p has at least one non-empty value.
func (ps *parser) given(p param) bool {
	for _, vs := range ps.raw[p] {
		for _, s := range vs {
			if strings.TrimSpace(s) != "" {
				return true
			}
		}
	}
	return false
}

// count returns an upper bound of the number of values of p.
func (ps *parser) count(p param) int { return len(ps.raw[p][0]) + len(ps.raw[p][1]) }

// each calls fn with every trimmed, non-empty value of p, in order, until fn
// returns false. An immediate repeat of the same raw value is skipped, which
// keeps the common "many identical repeats" case cheap.
func (ps *parser) each(p param, fn func(string) bool) {
	prev, havePrev := "", false
	for _, vs := range ps.raw[p] {
		for _, s := range vs {
			if havePrev && s == prev {
				continue
			}
			prev, havePrev = s, true
			if s = strings.TrimSpace(s); s == "" {
				continue
			}
			if !fn(s) {
				return
			}
		}
	}
}

// single parses a single-valued parameter. It returns ok=false when p is not
// given or is invalid (the error is recorded). Repeats that mean the same
// thing are accepted; repeats that differ are an error.
func single[T comparable](ps *parser, p param, parse func(string) (T, bool), msg string) (val T, ok bool) {
	first := ""
	ps.each(p, func(s string) bool {
		if ok && s == first {
			return true
		}
		v, good := parse(s)
		if !good {
			ps.failf(p, msg, s)
			ok = false
			return false
		}
		if !ok {
			val, ok, first = v, true, s
			return true
		}
		if v != val {
			ps.fail(p, ps.names[p]+" is given more than once with different values")
			ok = false
			return false
		}
		return true
	})
	if !ok {
		var zero T
		return zero, false
	}
	return val, true
}

// tooMany records an error when n distinct values exceed the limit.
func (ps *parser) tooMany(p param, n int) bool {
	if max := ps.o.maxValues(); n > max {
		ps.fail(p, fmt.Sprintf("Too many values for %s: at most %d distinct values are accepted", ps.names[p], max))
		return true
	}
	return false
}

// multi parses a multi-valued parameter, each value with parse: sorted,
// without duplicates, nil when not given or when a value is invalid (the
// first invalid value is reported with msg).
func multi[T cmp.Ordered](ps *parser, p param, msg string, parse func(string) (T, bool)) []T {
	var out []T
	bad := false
	ps.each(p, func(s string) bool {
		v, ok := parse(s)
		if !ok {
			ps.failf(p, msg, s)
			bad = true
			return false
		}
		if out == nil {
			out = make([]T, 0, ps.count(p))
		}
		out = append(out, v)
		return true
	})
	if bad || len(out) == 0 {
		return nil
	}
	slices.Sort(out)
	out = slices.Compact(out)
	if ps.tooMany(p, len(out)) {
		return nil
	}
	return slices.Clip(out)
}

// ids parses a multi-valued list of service IDs.
func (ps *parser) ids(p param, msg string) []int64 { return multi(ps, p, msg, ParseID) }

// texts parses a multi-valued free-text parameter, lower-cased when lower
// is set.
func (ps *parser) texts(p param, lower bool) []string {
	return multi(ps, p, textMsg, func(s string) (string, bool) { return canonText(s, lower) })
}

// text parses a single-valued free-text parameter ("" when not given).
func (ps *parser) text(p param) string {
	s, _ := single(ps, p, lowerText, textMsg)
	return s
}

func lowerText(s string) (string, bool) { return canonText(s, true) }

// enum parses a multi-valued parameter whose values come from a fixed set
// (matched ignoring ASCII case). The result is in the order of canon, which
// is sorted, without duplicates.
func (ps *parser) enum(p param, canon []string, msg string) []string {
	var seen uint32
	bad := false
	ps.each(p, func(s string) bool {
		i := foldIndex(canon, s)
		if i < 0 {
			ps.failf(p, msg, s)
			bad = true
			return false
		}
		seen |= 1 << i
		return true
	})
	if bad || seen == 0 {
		return nil
	}
	out := make([]string, 0, len(canon))
	for i, c := range canon {
		if seen&(1<<i) != 0 {
			out = append(out, c)
		}
	}
	if ps.tooMany(p, len(out)) {
		return nil
	}
	return out
}

// The enumerations, each sorted so that an enum result is sorted too.
var (
	categories       = []string{"Agricultural", "Commercial", "Residential"}
	statuses         = []string{"CONTRACT", "CURRENT", "RENTED", "SOLD"}
	propertyOrders   = []string{"id", "agency_id", "status", "approved", "last_updated", "price", "bedrooms", "bathrooms", "suburb", "category", "property_type"}
	agentOrders      = []string{"id", "name", "username"}
	propertyOrderMsg = "Invalid %s %q: must be one of " + strings.Join(propertyOrders, ", ")
	agentOrderMsg    = "Invalid %s %q: must be one of " + strings.Join(agentOrders, ", ")
)

// Error message formats: operand 1 is the parameter name, operand 2 the
// offending value (see failf). The limits are spelled out so that the
// formats stay constants; TestParsePropertiesErrors pins them to the limits.
const (
	idMsg       = "ID %[2]q is not a valid number"
	agentIDMsg  = "Agent ID %[2]q is not a valid number"
	textMsg     = "Invalid %s %q: must be valid UTF-8 text of at most 200 bytes without control characters"
	priceMsg    = "Invalid %s %q: must be a number from 0 to 1000000000000000, written as digits with an optional decimal point"
	roomsMsg    = "Invalid %s %q: must be a whole number from 0 to 1000"
	pageMsg     = "Invalid %s %q: must be a whole number from 0 to 2147483647"
	offsetMsg   = "Invalid %s %q: must be a whole number from 0 to " // + Options.MaxOffset
	categoryMsg = "Invalid %s %q: must be Residential, Commercial or Agricultural"
	statusMsg   = "Invalid %s %q: must be current, contract, sold or rented"
	featuredMsg = "Invalid %s %q: the only accepted value is true"
	dateMsg     = "Invalid date %[2]q: use the format yyyymmdd"
	detailMsg   = "Invalid %s %q: must be short or full"
	latMsg      = "Invalid %s %q: must be a number from -90 to 90"
	longMsg     = "Invalid %s %q: must be a number from -180 to 180"
	radMsg      = "Invalid %s %q: must be a number of kilometres greater than 0 and at most 1000"
)

func pageNumber(s string) (int, bool) {
	n, ok := wholeNumber(s, maxPage)
	return int(n), ok
}

func parseDetail(s string) (Detail, bool) {
	switch {
	case asciiEqualFold(s, "short"):
		return Short, true
	case asciiEqualFold(s, "full"):
		return Full, true
	}
	return 0, false
}

// ParseProperties parses the query of a property list (spec section 4.1)
// into canonical criteria. Errors is nil on success; otherwise it lists every
// invalid parameter once, in the order of the spec's table, and the Criteria
// is zero.
func ParseProperties(q url.Values, o Options) (Criteria, Errors) {
	var ps parser
	ps.init(Properties, q, o)
	c := Criteria{resource: Properties}
	ps.parse(&c)
	if ps.errs != nil {
		return Criteria{}, ps.errs
	}
	c.key = c.buildKey()
	return c, nil
}

func (ps *parser) price(p param) *float64 {
	v, ok := single(ps, p, parsePrice, priceMsg)
	if !ok {
		return nil
	}
	return &v
}

func parsePrice(s string) (float64, bool) {
	f, ok := decimal(s, false)
	return f, ok && f <= maxPrice
}

func parseRooms(s string) (int, bool) {
	n, ok := wholeNumber(s, maxRooms)
	return int(n), ok
}

func parseTrue(s string) (bool, bool) { return true, asciiEqualFold(s, "true") }

func (ps *parser) rooms(p param) *int {
	n, ok := single(ps, p, parseRooms, roomsMsg)
	if !ok {
		return nil
	}
	return &n
}

// geo parses geo[lat], geo[long] and geo[rad] (slots p, p+1 and p+2), which
// only come together.
func (ps *parser) geo(p param) *Geo {
	type sub struct {
		p        param
		min, max float64
		minOpen  bool // min itself is excluded
		msg      string
	}
	subs := [3]sub{
		{p, -90, 90, false, latMsg},
		{p + 1, -180, 180, false, longMsg},
		{p + 2, 0, maxRadiusKm, true, radMsg},
	}
	var given [3]bool
	anyGiven := false
	for i, s := range subs {
		given[i] = ps.given(s.p)
		anyGiven = anyGiven || given[i]
	}
	if !anyGiven {
		return nil
	}
	var vals [3]float64
	good := true
	for i, s := range subs {
		if !given[i] {
			a, b := (i+1)%3, (i+2)%3
			ps.fail(s.p, ps.names[s.p]+" is required with "+ps.names[subs[min(a, b)].p]+" and "+ps.names[subs[max(a, b)].p])
			good = false
			continue
		}
		v, ok := single(ps, s.p, func(x string) (float64, bool) {
			f, ok := decimal(x, true)
			return f, ok && f <= s.max && (f > s.min || !s.minOpen && f == s.min)
		}, s.msg)
		vals[i] = v
		good = good && ok
	}
	if !good {
		return nil
	}
	return &Geo{Lat: vals[0], Long: vals[1], RadiusKm: vals[2]}
}

// propertyOrder parses the multi-valued property order: whitelisted names in
// the order first given, duplicates dropped, ending at "id". Names after "id"
// cannot change an order by a unique key, so they are dropped (after being
// validated); when "id" is absent it is appended as the tie-breaker.
func (ps *parser) propertyOrder(p param) []string {
	var seen uint32
	var out []string
	hasID := false
	ps.each(p, func(s string) bool {
		i := foldIndex(propertyOrders, s)
		if i < 0 {
			ps.failf(p, propertyOrderMsg, s)
			out = nil
			return false
		}
		if seen&(1<<i) != 0 || hasID {
			return true
		}
		seen |= 1 << i
		if out == nil {
			out = make([]string, 0, 4)
		}
		out = append(out, propertyOrders[i])
		hasID = i == 0
		return true
	})
	if !hasID {
		out = append(out, "id")
	}
	return out
}

// agentOrder parses the single-valued agent order and appends "id".
func (ps *parser) agentOrder(p param) []string {
	i, ok := single(ps, p, func(s string) (int, bool) {
		i := foldIndex(agentOrders, s)
		return i, i >= 0
	}, agentOrderMsg)
	if !ok || i == 0 {
		return []string{"id"}
	}
	return []string{agentOrders[i], "id"}
}

// ParseAgents parses the query of an agent list (spec section 4.3) into
// canonical criteria. Errors is nil on success; otherwise it lists every
// invalid parameter once, in the order of the spec's table, and the Criteria
// is zero.
func ParseAgents(q url.Values, o Options) (Criteria, Errors) {
	var ps parser
	ps.init(Agents, q, o)
	c := Criteria{resource: Agents}
	ps.parse(&c)
	if ps.errs != nil {
		return Criteria{}, ps.errs
	}
	c.key = c.buildKey()
	return c, nil
}

// ParseID parses a service ID as it appears in a path or an id parameter:
// ASCII decimal digits only (no sign, no spaces), from 1 to math.MaxInt64.
func ParseID(s string) (int64, bool) {
	n, ok := wholeNumber(s, math.MaxInt64)
	return n, ok && n > 0
}

// wholeNumber parses ASCII decimal digits (leading zeros allowed) with a
// value from 0 to max. It never allocates and stops at maxNumberBytes.
func wholeNumber(s string, max int64) (int64, bool) {
	if s == "" || len(s) > maxNumberBytes {
		return 0, false
	}
	var n int64
	for i := 0; i < len(s); i++ {
		d := int64(s[i]) - '0'
		if d < 0 || d > 9 || n > (max-d)/10 {
			return 0, false
		}
		n = n*10 + d
	}
	return n, true
}

// decimal parses a plain decimal, [0-9]+(\.[0-9]+)?, with a leading minus
// when neg is set. Negative zero becomes zero so that it has one spelling.
func decimal(s string, neg bool) (float64, bool) {
	if len(s) > maxNumberBytes {
		return 0, false
	}
	t := s
	if neg && strings.HasPrefix(t, "-") {
		t = t[1:]
	}
	intPart, frac, hasDot := strings.Cut(t, ".")
	if !allDigits(intPart) || hasDot && !allDigits(frac) {
		return 0, false
	}
	f, err := strconv.ParseFloat(s, 64)
	if err != nil || math.IsInf(f, 0) || math.IsNaN(f) {
		return 0, false
	}
	if f == 0 {
		f = 0
	}
	return f, true
}

func allDigits(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return true
}

// parseDate parses yyyymmdd (a real date, year 1 to 9999) into "YYYY-MM-DD".
func parseDate(s string) (string, bool) {
	if len(s) != 8 || !allDigits(s) {
		return "", false
	}
	y, _ := wholeNumber(s[:4], 9999)
	m, _ := wholeNumber(s[4:6], 99)
	d, _ := wholeNumber(s[6:], 99)
	if y < 1 || m < 1 || m > 12 || d < 1 || d > daysIn(int(m), int(y)) {
		return "", false
	}
	return s[:4] + "-" + s[4:6] + "-" + s[6:], true
}

func daysIn(m, y int) int64 {
	switch m {
	case 2:
		if y%4 == 0 && (y%100 != 0 || y%400 == 0) {
			return 29
		}
		return 28
	case 4, 6, 9, 11:
		return 30
	}
	return 31
}

// compactDate turns "YYYY-MM-DD" back into the query form yyyymmdd.
func compactDate(d string) string { return strings.ReplaceAll(d, "-", "") }

// canonText checks a free-text value and returns its canonical form. The
// byte limit applies after lower-casing, which can change the length, so that
// the canonical form always parses again.
func canonText(s string, lower bool) (string, bool) {
	if !utf8.ValidString(s) {
		return "", false
	}
	if lower {
		s = strings.ToLower(s)
	}
	if len(s) > maxTextBytes {
		return "", false
	}
	for _, r := range s {
		if unicode.IsControl(r) {
			return "", false
		}
	}
	return s, true
}

// foldIndex returns the index of s in list ignoring ASCII case, or -1.
// Unicode folding is deliberately not used: "ſold" is not "sold".
func foldIndex(list []string, s string) int {
	for i, c := range list {
		if asciiEqualFold(s, c) {
			return i
		}
	}
	return -1
}

func asciiEqualFold(s, t string) bool {
	if len(s) != len(t) {
		return false
	}
	for i := 0; i < len(s); i++ {
		a, b := s[i], t[i]
		if 'A' <= a && a <= 'Z' {
			a += 'a' - 'A'
		}
		if 'A' <= b && b <= 'Z' {
			b += 'a' - 'A'
		}
		if a != b {
			return false
		}
	}
	return true
}

// echo prepares a client's value for an error message: at most maxEchoBytes,
// cut on a character boundary, with "..." when cut. The caller quotes it
// with %q, which escapes anything unprintable or invalid.
func echo(s string) string {
	if len(s) <= maxEchoBytes {
		return s
	}
	n := 0
	for n < len(s) {
		_, size := utf8.DecodeRuneInString(s[n:])
		if n+size > maxEchoBytes-3 {
			break
		}
		n += size
	}
	return s[:n] + "..."
}
