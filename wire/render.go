// Package wire owns the wire format of the listing API (docs/wire-format.md)
// in both directions. Writers append the XML and JSON documents (property
// and agent lists, single resources, the error list and the single error)
// to a caller's buffer; readers (read.go, node.go) turn a legacy endpoint's
// XML documents back into the upstream model, so what we write and what we
// accept are defined, and tested (render → read → render), in one place.
// Both follow the listing schema (upstream.PropertyFields and AgentFields,
// compiled in schema.go): no code here names a scalar field of a record.
//
// Writers work directly with append and strconv, never through
// encoding/xml, encoding/json, reflection or fmt, so that a caller who
// reuses its buffer renders without allocating; the package does its own
// escaping. Readers take their tokens from a Tokens source and set no
// limits of their own beyond a list's records: upstream/crm feeds them
// through a decoder that bounds size, elements, depth and time.
//
// It imports only the standard library, listingproxy/upstream (the records)
// and listingproxy/normalize (detail levels and the error list). It must
// not import proxy, cache, config or any upstream adapter.
package wire

import (
	"strconv"
	"time"

	"listingproxy/normalize"
	"listingproxy/upstream"
)

// Format is the representation of a response, chosen by the path's file
// extension. The zero value is not a valid format; passing an invalid Format
// to an Append function panics.
type Format uint8

// The formats.
const (
	XML Format = iota + 1
	JSON
)

// ParseFormat returns the format named by a path's file extension, without
// the dot: "xml" or "json". Matching is case-sensitive, as paths are.
func ParseFormat(ext string) (Format, bool) {
	switch ext {
	case "xml":
		return XML, true
	case "json":
		return JSON, true
	}
	return 0, false
}

// ContentType returns the value of the Content-Type header for f, or "" when
// f is not a valid format.
func (f Format) ContentType() string {
	switch f {
	case XML:
		return "application/xml; charset=utf-8"
	case JSON:
		return "application/json; charset=utf-8"
	}
	return ""
}

// String returns the file extension of f ("xml" or "json"), or "Format(N)"
// when f is not a valid format.
func (f Format) String() string {
	switch f {
	case XML:
		return "xml"
	case JSON:
		return "json"
	}
	return "Format(" + strconv.Itoa(int(f)) + ")"
}

// Options tune the rendering of a document. The zero value renders short
// lists, without prices, with times in UTC.
type Options struct {
	// Detail is the detail level of lists; the zero value is normalize.Short.
	// Single resources are always rendered with full detail.
	Detail normalize.Detail
	// Prices includes the raw price_from and price_to of properties. It only
	// has an effect with full detail.
	Prices bool
	// Location is the zone in which last_updated and open-home times are
	// rendered (the country's zone). Nil means UTC.
	Location *time.Location
	// SingleObject is a compatibility switch for old JSON clients: a
	// collection of exactly one item (property, agent, photo...) is
	// written as that object instead of a one-element array. XML is
	// unchanged. Default off: always an array, as the spec says.
	SingleObject bool
	// SingleObjectItems limits the single-object switch to the collections
	// of these items ("property"): a collection of exactly one of them is
	// that object, every other collection stays an array (an old client
	// that reads a listing as an object may still loop over its photos).
	// Ignored when SingleObject is set (every collection).
	SingleObjectItems map[string]bool
	// NumericIDs is a compatibility switch for old JSON clients that
	// compare ids with numbers: every "id" (of a property, an agent, an
	// agent of a property, a property of an agent) whose value is a whole
	// decimal number is written as a JSON number, not a string.
	NumericIDs bool
	// VideoURL is a compatibility switch for old JSON clients of
	// pass-through documents: each <video> of a <videos> collection is an
	// object, its attributes first (in a media item's order) and its text
	// under "url", as a photo is, instead of a string or an object with
	// the text under "video".
	VideoURL bool

	// For records that carry their legacy source (upstream.Property.Legacy),
	// which are passed through rather than rendered (see Filter):
	// Unknown lets the caller see elements and attributes the wire format
	// does not name (true when its permissions are no narrower than the
	// upstream user's), Extra names those every caller may see, and Now
	// drops open homes that have ended (zero: none dropped).
	Unknown bool
	Extra   map[string]bool
	Now     time.Time
}

// level is the resolved set of optional parts of a document.
type level struct {
	full     bool
	prices   bool
	single   bool            // Options.SingleObject
	singles  map[string]bool // Options.SingleObjectItems
	numIDs   bool            // Options.NumericIDs
	videoURL bool            // Options.VideoURL
	loc      *time.Location
}

func (o Options) level(full bool) level {
	loc := o.Location
	if loc == nil {
		loc = time.UTC
	}
	return level{full: full, prices: full && o.Prices, single: o.SingleObject, singles: o.SingleObjectItems,
		numIDs: o.NumericIDs, videoURL: o.VideoURL, loc: loc}
}

// oneObject says whether a collection of n items named item is written as
// its one item rather than an array (the single-object switches).
func (lv level) oneObject(item string, n int) bool {
	return n == 1 && (lv.single || lv.singles[item])
}

// Time layouts of docs/wire-format.md.
const (
	lastUpdatedLayout = "Mon Jan 02 15:04:05 -0700 2006"
	approvedLayout    = "2006-01-02"
	openHomeLayout    = "2006-01-02 15:04:05"
)

// AppendPropertyList appends the property list document of ps at the detail
// level of o and returns the extended buffer. The document's count is len(ps).
func AppendPropertyList(dst []byte, f Format, ps []upstream.Property, o Options) []byte {
	if doc := passList("properties", ps, func(p *upstream.Property) any { return p.Legacy }, asWritten(o)); doc != nil {
		return appendPassed(dst, f, doc, o, o.Detail == normalize.Full)
	}
	lv := o.level(o.Detail == normalize.Full)
	switch f {
	case XML:
		return xmlPropertyList(dst, ps, lv)
	case JSON:
		return jsonPropertyList(dst, ps, lv)
	}
	panic(badFormat(f))
}

// asWritten reports whether a list for o's caller keeps what surrounded the
// legacy's records (prolog with its comments, whitespace between records):
// for callers who may see what the wire format does not name, and for short
// lists, which pass as the legacy's own short answer.
func asWritten(o Options) bool { return o.Unknown || o.Detail != normalize.Full }

// AppendProperty appends the single-property document of p, always with full
// detail, and returns the extended buffer. o.Detail is ignored.
func AppendProperty(dst []byte, f Format, p *upstream.Property, o Options) []byte {
	if e, ok := p.Legacy.(*Element); ok {
		return appendPassed(dst, f, passOne(e, o.Unknown), o, true)
	}
	lv := o.level(true)
	switch f {
	case XML:
		dst = append(dst, xmlHeader...)
		return xmlProperty(dst, 0, p, lv)
	case JSON:
		dst = append(dst, `{"property":`...)
		dst = jsonProperty(dst, p, lv)
		return append(dst, "}\n"...)
	}
	panic(badFormat(f))
}

// AppendAgentList appends the agent list document of as at the detail level
// of o and returns the extended buffer. The document's count is len(as).
// o.Prices is ignored.
func AppendAgentList(dst []byte, f Format, as []upstream.Agent, o Options) []byte {
	if doc := passList("agents", as, func(a *upstream.Agent) any { return a.Legacy }, asWritten(o)); doc != nil {
		return appendPassed(dst, f, doc, o, o.Detail == normalize.Full)
	}
	lv := o.level(o.Detail == normalize.Full)
	switch f {
	case XML:
		return xmlAgentList(dst, as, lv)
	case JSON:
		return jsonAgentList(dst, as, lv)
	}
	panic(badFormat(f))
}

// AppendAgent appends the single-agent document of a, always with full
// detail, and returns the extended buffer. o.Detail and o.Prices are ignored.
func AppendAgent(dst []byte, f Format, a *upstream.Agent, o Options) []byte {
	if e, ok := a.Legacy.(*Element); ok {
		return appendPassed(dst, f, passOne(e, o.Unknown), o, true)
	}
	lv := o.level(true)
	switch f {
	case XML:
		dst = append(dst, xmlHeader...)
		return xmlAgent(dst, 0, a, lv)
	case JSON:
		dst = append(dst, `{"agent":`...)
		dst = jsonAgent(dst, a, lv)
		return append(dst, "}\n"...)
	}
	panic(badFormat(f))
}

// AppendErrors appends the error list document of errs (the answer to
// invalid criteria) and returns the extended buffer. In JSON, exactly one
// error is rendered as an object, any other number as an array.
func AppendErrors(dst []byte, f Format, errs normalize.Errors) []byte {
	switch f {
	case XML:
		return xmlErrors(dst, errs)
	case JSON:
		return jsonErrors(dst, errs)
	}
	panic(badFormat(f))
}

// AppendError appends the single-error document carrying msg (not found,
// unauthorized, unavailable) and returns the extended buffer.
func AppendError(dst []byte, f Format, msg string) []byte {
	switch f {
	case XML:
		dst = append(dst, xmlHeader...)
		return xmlString(dst, 0, "error", msg)
	case JSON:
		dst = append(dst, `{"error":`...)
		dst = jsonString(dst, msg)
		return append(dst, "}\n"...)
	}
	panic(badFormat(f))
}

func badFormat(f Format) string {
	return "wire: invalid format " + f.String()
}

// appendTime appends t in loc with layout; the zero time renders as the empty
// value.
func appendTime(dst []byte, t time.Time, loc *time.Location, layout string) []byte {
	if t.IsZero() {
		return dst
	}
	return appendLayout(dst, t.In(loc), layout)
}

// appendDate appends the calendar date of t as it was given, without moving
// it to another zone: approved is a date, not an instant.
func appendDate(dst []byte, t time.Time) []byte {
	if t.IsZero() {
		return dst
	}
	return appendLayout(dst, t, approvedLayout)
}

// appendLayout is t.AppendFormat(dst, layout), written field by field for
// this package's three layouts and years 0-9999: AppendFormat parses its
// layout on every call (a fifth of a full list's render). Anything else
// goes to AppendFormat. TestAppendLayoutAgreesWithAppendFormat.
func appendLayout(dst []byte, t time.Time, layout string) []byte {
	year, month, day := t.Date()
	if year < 0 || year > 9999 {
		return t.AppendFormat(dst, layout)
	}
	date := func(dst []byte) []byte {
		dst = append4(dst, year)
		dst = append(dst, '-')
		dst = append2(dst, int(month))
		dst = append(dst, '-')
		return append2(dst, day)
	}
	clock := func(dst []byte) []byte {
		hour, minute, second := t.Clock()
		dst = append2(dst, hour)
		dst = append(dst, ':')
		dst = append2(dst, minute)
		dst = append(dst, ':')
		return append2(dst, second)
	}
	switch layout {
	case approvedLayout:
		return date(dst)
	case openHomeLayout:
		dst = date(dst)
		dst = append(dst, ' ')
		return clock(dst)
	case lastUpdatedLayout: // Mon Jan 02 15:04:05 -0700 2006
		_, offset := t.Zone()
		zone := offset / 60 // minutes, as AppendFormat: seconds dropped
		if zone <= -100*60 || zone >= 100*60 {
			return t.AppendFormat(dst, layout)
		}
		dst = append(dst, t.Weekday().String()[:3]...)
		dst = append(dst, ' ')
		dst = append(dst, month.String()[:3]...)
		dst = append(dst, ' ')
		dst = append2(dst, day)
		dst = append(dst, ' ')
		dst = clock(dst)
		dst = append(dst, ' ')
		if zone < 0 {
			dst = append(dst, '-')
			zone = -zone
		} else {
			dst = append(dst, '+')
		}
		dst = append2(dst, zone/60)
		dst = append2(dst, zone%60)
		dst = append(dst, ' ')
		return append4(dst, year)
	}
	return t.AppendFormat(dst, layout)
}

// append2 appends v (0-99) as two digits.
func append2(dst []byte, v int) []byte {
	return append(dst, byte('0'+v/10), byte('0'+v%10))
}

// append4 appends v (0-9999) as four digits.
func append4(dst []byte, v int) []byte {
	return append(dst, byte('0'+v/1000), byte('0'+v/100%10), byte('0'+v/10%10), byte('0'+v%10))
}

func appendFloat(dst []byte, v float64) []byte {
	return strconv.AppendFloat(dst, v, 'f', -1, 64)
}

func appendBool(dst []byte, v bool) []byte {
	if v {
		return append(dst, "true"...)
	}
	return append(dst, "false"...)
}
