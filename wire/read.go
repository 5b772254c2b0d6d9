package wire

import (
	"encoding/xml"
	"errors"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"

	"listingproxy/normalize"
	"listingproxy/upstream"
)

// Tokens is a source of XML tokens with the contract of
// (*xml.Decoder).Token: a token's data is valid until the next call, and a
// well-formed document ends with io.EOF. An *xml.Decoder is one; upstream/crm
// reads a legacy answer through one that bounds its size, elements, depth
// and time, so the readers here need no limits of their own (besides the
// records of a list).
type Tokens interface {
	Token() (xml.Token, error)
}

// Failures of reading a document. Each is wrapped with detail.
var (
	// ErrMalformed: not XML, or truncated.
	ErrMalformed = errors.New("malformed XML")
	// ErrRoot: XML whose root is neither the expected element nor an
	// error document.
	ErrRoot = errors.New("unexpected root element")
	// ErrAnswerError: an error document where it is no answer (a single
	// <error> to a list, an <errors> list to a single resource).
	ErrAnswerError = errors.New("upstream error")
)

// NotFoundError is the single-error document answering a single-resource
// request. It matches upstream.ErrNotFound with errors.Is and keeps the
// document's message.
type NotFoundError struct {
	Message string // e.g. "Property with ID 999 not found"
}

func (e *NotFoundError) Error() string { return "not found: " + e.Message }

// Unwrap returns upstream.ErrNotFound.
func (e *NotFoundError) Unwrap() error { return upstream.ErrNotFound }

// Variations of lastUpdatedLayout seen in the wild: an unpadded day.
var lastUpdatedLayouts = []string{
	lastUpdatedLayout,
	"Mon Jan _2 15:04:05 -0700 2006",
	"Mon Jan 2 15:04:05 -0700 2006",
}

// Problem is a value of a legacy record that could not be read as the
// wire format says. It never fails a list: the record is kept without the
// value (a record whose id cannot be read is dropped), and the problem is
// handed to the reader's report function, for the caller to log and count.
type Problem struct {
	Record string // e.g. `property "17"`
	Field  string // e.g. "bedrooms"
	Value  string // as written
	Want   string // what the format expects
}

func (p Problem) String() string {
	return fmt.Sprintf("%s: %s %q: %s", p.Record, p.Field, p.Value, p.Want)
}

// ReadOptions tune the readers. The zero value reports nothing and keeps
// no legacy records.
type ReadOptions struct {
	// Report receives the values that could not be read; nil ignores them.
	Report func(Problem)
	// Keep keeps each record as the legacy sent it (every element and
	// attribute, text as written) in its Legacy field, for pass-through
	// (Options.PassThrough of the writers). It costs about three times the
	// record's XML on top of the model.
	Keep bool
	// Offset is the offset a list was asked for. A list answer with more
	// records than it was asked for (maxRecords) comes from a legacy that
	// ignores paging: it is paged here, its records [Offset,
	// Offset+maxRecords) kept, and Paged (nil: none) is told how many
	// records it held. Holding at most twice maxRecords records, a list
	// of tiny records cannot inflate the model.
	Offset int
	Paged  func(sent int)
}

// page returns the page a list read with ro and maxRecords was asked for,
// and the function that drops, from a list's records with their positions
// idx, those outside it once the answer turns out to be paged here.
func (ro ReadOptions) page(maxRecords int) (page, *bool) {
	paged := new(bool)
	return page{offset: max(ro.Offset, 0), limit: maxRecords, paged: func(sent int) {
		*paged = true
		if ro.Paged != nil {
			ro.Paged(sent)
		}
	}}, paged
}

// inPage keeps the items of recs whose position idx is in pg.
func inPage[T any](recs []T, idx []int, pg page) []T {
	out := recs[:0]
	for i, r := range recs {
		if pg.keeps(idx[i]) {
			out = append(out, r)
		}
	}
	clear(recs[len(out):])
	return out
}

// ReadPropertyList reads a <properties> list document from d; full says
// whether the list was asked for in full detail, loc is the country's zone
// (open-home times are wall-clock times), and a list of more than
// maxRecords properties is paged here (ReadOptions.Offset). The children
// are trusted over the count attribute. An <errors> document is returned as
// *upstream.CriteriaError. Values that cannot be read are reported to report
// (which may be nil) and never fail the list: only the document can.
func ReadPropertyList(d Tokens, loc *time.Location, full bool, maxRecords int, ro ReadOptions) ([]upstream.Property, error) {
	var (
		props []upstream.Property
		idx   []int
	)
	pg, paged := ro.page(maxRecords)
	err := decodeAnswer(d, "properties", "property", false, pg, ro.Keep, func(e *node) error {
		// Read in place: a record handed to the schema's accessors
		// would otherwise be a heap allocation of its own.
		props = append(props, upstream.Property{})
		if parseProperty(e, loc, full, ro.Report, &props[len(props)-1]) {
			idx = append(idx, e.idx)
		} else {
			props = props[:len(props)-1]
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	if *paged {
		props = inPage(props, idx, pg)
	}
	return props, nil
}

// ReadProperty reads the single-property document (always full detail) from
// d, as ReadPropertyList; a property whose id cannot be read fails. An
// <error> document is returned as *NotFoundError.
func ReadProperty(d Tokens, loc *time.Location, ro ReadOptions) (upstream.Property, error) {
	var p upstream.Property
	err := decodeAnswer(d, "property", "property", true, page{limit: 1}, ro.Keep, func(e *node) error {
		if !parseProperty(e, loc, true, ro.Report, &p) {
			return fmt.Errorf("%w: property id %q", ErrMalformed, attr(e, "id"))
		}
		return nil
	})
	return p, err
}

// ReadAgentList reads an <agents> list document from d, as ReadPropertyList.
func ReadAgentList(d Tokens, full bool, maxRecords int, ro ReadOptions) ([]upstream.Agent, error) {
	var (
		agents []upstream.Agent
		idx    []int
	)
	pg, paged := ro.page(maxRecords)
	err := decodeAnswer(d, "agents", "agent", false, pg, ro.Keep, func(e *node) error {
		agents = append(agents, upstream.Agent{}) // in place, as properties
		if parseAgent(e, full, ro.Report, &agents[len(agents)-1]) {
			idx = append(idx, e.idx)
		} else {
			agents = agents[:len(agents)-1]
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	if *paged {
		agents = inPage(agents, idx, pg)
	}
	return agents, nil
}

// ReadAgent reads the single-agent document from d, as ReadProperty.
func ReadAgent(d Tokens, ro ReadOptions) (upstream.Agent, error) {
	var a upstream.Agent
	err := decodeAnswer(d, "agent", "agent", true, page{limit: 1}, ro.Keep, func(e *node) error {
		if !parseAgent(e, true, ro.Report, &a) {
			return fmt.Errorf("%w: agent id %q", ErrMalformed, attr(e, "id"))
		}
		return nil
	})
	return a, err
}

// answerError turns the CRM's error bodies into errors: <errors> into
// *upstream.CriteriaError, <error> into *NotFoundError on a single-resource
// call (single) and a failure otherwise.
func answerError(root *node, single bool) error {
	if root.tag == "errors" {
		if single {
			return fmt.Errorf("%w: %s", ErrAnswerError, text(root))
		}
		var list normalize.Errors
		for _, e := range root.children("error") {
			list = append(list, normalize.FieldError{Field: attr(e, "field"), Message: text(e)})
		}
		if len(list) == 0 {
			return fmt.Errorf("%w: an empty error list", ErrAnswerError)
		}
		return &upstream.CriteriaError{Errors: list}
	}
	if single {
		return &NotFoundError{Message: text(root)}
	}
	return fmt.Errorf("%w: %s", ErrAnswerError, text(root))
}

// parseProperty reads one property: its scalar fields as the listing
// schema says (readFields), then the hand-written parts, into *p (which
// it overwrites). It reports false when the id cannot be read (the record
// is then dropped: nothing else identifies it).
func parseProperty(e *node, loc *time.Location, full bool, report func(Problem), p *upstream.Property) bool {
	idName := sch.property.id.Name
	f := fields{record: "property " + strconv.Quote(attr(e, idName)), report: report}
	id, ok := f.id(idName, attr(e, idName))
	if !ok {
		return false
	}
	*p = upstream.Property{Legacy: e.legacy(), ID: id}
	readFields(&f, e, &sch.property, p)
	if a := e.child("address"); a != nil {
		p.StreetNumber, p.StreetName = splitAddress(text(a))
		p.AddressDisplay = parseFlag(attr(a, "display"))
	}
	p.PhotoCount, p.Photos = f.media(e.child("photos"), "photo", full)
	p.VirtualTourCount, p.VirtualTours = f.media(e.child("virtualtours"), "virtualtour", full)
	p.FloorplanCount, p.Floorplans = f.media(e.child("floorplans"), "floorplan", full)
	if as := e.child("agents"); as != nil {
		for _, a := range as.children("agent") {
			if id, ok := f.id("agent id", attr(a, "id")); ok {
				p.Agents = append(p.Agents, upstream.AgentRef{ID: id, Name: text(a)})
			}
		}
	}
	if ohs := e.child("openhomes"); ohs != nil {
		for _, oh := range ohs.children("openhome") {
			start, okStart := f.localTime("openhome start", childText(oh, "start"), loc)
			end, okEnd := f.localTime("openhome end", childText(oh, "end"), loc)
			if !okStart || !okEnd || start.IsZero() && end.IsZero() {
				continue // an empty <openhome/>, or one whose times cannot be read
			}
			p.OpenHomes = append(p.OpenHomes, upstream.OpenHome{Start: start, End: end})
		}
		slices.SortStableFunc(p.OpenHomes, func(a, b upstream.OpenHome) int { return a.Start.Compare(b.Start) })
	}
	return true
}

// parseAgent reads one agent, as parseProperty.
func parseAgent(e *node, full bool, report func(Problem), a *upstream.Agent) bool {
	idName := sch.agent.id.Name
	f := fields{record: "agent " + strconv.Quote(attr(e, idName)), report: report}
	id, ok := f.id(idName, attr(e, idName))
	if !ok {
		return false
	}
	*a = upstream.Agent{Legacy: e.legacy(), ID: id}
	readFields(&f, e, &sch.agent, a)
	if ps := e.child("properties"); ps != nil {
		for _, pe := range ps.children("property") {
			id, ok := f.id("property id", attr(pe, "id"))
			if !ok {
				continue
			}
			a.Properties = append(a.Properties, upstream.PropertyRef{
				ID:          id,
				LastUpdated: f.lastUpdated(attr(pe, "last_updated")),
				Address:     childText(pe, "address"),
				AgencyID:    childText(pe, "agency_id"),
			})
		}
		a.PropertyCount = f.count(ps, len(a.Properties), full)
	}
	return true
}

// text returns e's own character data (text, entities and CDATA sections,
// not that of its children), without surrounding space. A nil e has none.
func text(e *node) string {
	if e == nil {
		return ""
	}
	return e.text
}

func childText(e *node, tag string) string { return text(e.child(tag)) }

func attr(e *node, key string) string { return e.attr(key) }

// splitAddress splits "12 Smith Street" into the street number and name: the
// number is the first word when it starts with a digit.
func splitAddress(s string) (number, name string) {
	first, rest, _ := strings.Cut(s, " ")
	if first != "" && first[0] >= '0' && first[0] <= '9' {
		return first, strings.TrimSpace(rest)
	}
	return "", s
}

// parseFlag reads a boolean attribute; anything but a true-ish value (and a
// missing attribute) is false, which hides an address rather than show it.
func parseFlag(s string) bool {
	switch strings.ToLower(s) {
	case "true", "1", "yes":
		return true
	}
	return false
}

// fields parses the values of one record, reporting those it cannot read.
type fields struct {
	record string
	report func(Problem) // nil: ignore
}

func (f *fields) fail(name, value, want string) {
	if f.report != nil {
		f.report(Problem{Record: f.record, Field: name, Value: value, Want: want})
	}
}

func (f *fields) id(name, s string) (int64, bool) {
	v, err := strconv.ParseInt(s, 10, 64)
	if err != nil || v <= 0 {
		f.fail(name, s, "not a service ID")
		return 0, false
	}
	return v, true
}

// optFloat reads a decimal; empty, or one that cannot be read, is missing
// (nil), never 0.
func (f *fields) optFloat(name, s string) *float64 {
	if s == "" {
		return nil
	}
	v, err := strconv.ParseFloat(s, 64)
	if err != nil || math.IsNaN(v) || math.IsInf(v, 0) {
		f.fail(name, s, "not a number")
		return nil
	}
	return &v
}

func (f *fields) optInt(name, s string) *int {
	if s == "" {
		return nil
	}
	v, err := strconv.Atoi(s)
	if err != nil { // tolerate "3.0"
		fv, ferr := strconv.ParseFloat(s, 64)
		if ferr != nil || fv != math.Trunc(fv) || math.Abs(fv) > math.MaxInt32 {
			f.fail(name, s, "not an integer")
			return nil
		}
		v = int(fv)
	}
	return &v
}

// count returns the number of items of a container: the items themselves in
// full detail, the count attribute in short detail (the items when the
// attribute is missing).
func (f *fields) count(e *node, items int, full bool) int {
	s := attr(e, "count")
	if full || s == "" {
		return items
	}
	n, err := strconv.Atoi(s)
	if err != nil || n < 0 {
		f.fail(e.tag+" count", s, "not a count")
		return items
	}
	return n
}

// media reads a photos, virtualtours or floorplans container, ordered by
// position (document order for equal or missing positions).
func (f *fields) media(e *node, item string, full bool) (int, []upstream.Media) {
	if e == nil {
		return 0, nil
	}
	var ms []upstream.Media
	for i, m := range e.children(item) {
		md := upstream.Media{
			URL:       text(m),
			Thumbnail: attr(m, "thumbnail"),
			Type:      attr(m, "type"),
			Caption:   attr(m, "caption"),
			Position:  i + 1,
		}
		if s := attr(m, "position"); s != "" {
			if v := f.optInt(item+" position", s); v != nil {
				md.Position = *v
			}
		}
		ms = append(ms, md)
	}
	slices.SortStableFunc(ms, func(a, b upstream.Media) int { return a.Position - b.Position })
	return f.count(e, len(ms), full), ms
}

// lastUpdated reads the last update of an agent's property.
func (f *fields) lastUpdated(s string) time.Time { return f.instant("last_updated", s) }

// instant reads an instant written in the form of last_updated (or one
// of its variations seen in the wild); empty is the zero time.
func (f *fields) instant(name, s string) time.Time {
	if s == "" {
		return time.Time{}
	}
	for _, layout := range lastUpdatedLayouts {
		if t, err := time.Parse(layout, s); err == nil {
			return t
		}
	}
	f.fail(name, s, "want the form "+lastUpdatedLayout)
	return time.Time{}
}

// date reads an approved date as UTC midnight; empty or the zero date of old
// databases ("0000-00-00") is never approved. A date followed by a time
// ("2024-03-01 10:00:00", a DATETIME column printed as is) is that date.
func (f *fields) date(name, s string) time.Time {
	if s == "" || strings.HasPrefix(s, "0000-00-00") {
		return time.Time{}
	}
	if len(s) > len(approvedLayout) && (s[len(approvedLayout)] == ' ' || s[len(approvedLayout)] == 'T') {
		s = s[:len(approvedLayout)]
	}
	t, err := time.Parse(approvedLayout, s)
	if err != nil {
		f.fail(name, s, "want the form "+approvedLayout)
		return time.Time{}
	}
	return t
}

// localTime reads a wall-clock time of the country's zone; ok is false when
// s cannot be read.
func (f *fields) localTime(name, s string, loc *time.Location) (t time.Time, ok bool) {
	if s == "" || strings.HasPrefix(s, "0000-00-00") {
		return time.Time{}, true
	}
	t, err := time.ParseInLocation(openHomeLayout, s, loc)
	if err != nil {
		f.fail(name, s, "want the form "+openHomeLayout)
		return time.Time{}, false
	}
	return t, true
}
