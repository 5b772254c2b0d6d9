package wire

import (
	"encoding/xml"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"
)

// A Document is a legacy answer kept as it was sent, for pass-through
// (docs/crm.md, "Pass-through"): every element and attribute in document
// order, known or not, and every text as written (numbers, dates, inner
// whitespace, mixed content such as <br/> inside a description). Read
// from a RawTokens source, it also keeps its bytes as written, and the
// writer gives back what was not changed byte for byte (raw.go); read from
// any other source, comments, processing instructions and the declaration
// are dropped and CDATA becomes text (written escaped, same meaning).
//
// A Document is built by ReadDocument from a Tokens source, which bounds it
// (upstream/crm's decoder: size, elements, depth, time); it costs about
// three to four times its XML. It is changed only by Filter and written by
// AppendDocumentXML and AppendDocumentJSON.
type Document struct {
	Root *Element

	// frame, when set, is what surrounded the records as the legacy
	// wrote it (prolog, the list's start tag and end, whitespace between
	// records), written again around them.
	frame *frame
}

// Element is one element of a Document.
type Element struct {
	Name  string // local name
	Attrs []xml.Attr
	Kids  []Node // in document order

	root bool // read as a document's root: laid out one level shallower than in a list

	// As written, for a start tag written anew: qname is the element's
	// prefixed name ("crm:property"; "" when unprefixed or unknown), ns
	// its namespace declarations (xmlns, xmlns:crm), kept in place so
	// that what passes as written inside it stays in its namespace.
	qname string
	ns    []xml.Attr

	// As written (read from a RawTokens source): raw is the element's
	// bytes, tag the length of its start tag; changed and attrsChanged
	// say that its children or its attributes are no longer as written
	// (set by whatever changes them), so only the changed parts are
	// written anew. rec is set on records.
	raw          []byte
	tag          int32
	changed      bool
	attrsChanged bool
	comments     bool // raw holds a comment or processing instruction
	rec          *recordInfo
}

// Node is a child of an Element: an element, or text when Elem is nil.
type Node struct {
	Elem *Element
	Text string
	// The text as written (entities, CDATA): parent.raw[off:off+n] when
	// n > 0; Text itself, unescaped, when n is -1 (whitespace between
	// records); unknown when 0.
	off, n int32
}

// rawIn returns the text node k of parent as written, or nil.
func (k Node) rawIn(parent *Element) []byte {
	switch {
	case k.n > 0 && parent.raw != nil:
		return parent.raw[k.off : k.off+k.n]
	case k.n == -1:
		return []byte(k.Text)
	}
	return nil
}

// ReadDocument reads a whole document from d.
func ReadDocument(d Tokens) (*Document, error) {
	var rr *rawRead
	if src := rawSource(d); src != nil {
		rr = &rawRead{src: src}
	}
	start, from, err := rootElement(d)
	if err != nil {
		return nil, err
	}
	if rr != nil && rawSource(d) == nil {
		rr = nil // the declaration named a charset the source converts
	}
	root, err := readElement(d, start, rr, from)
	if err != nil {
		return nil, err
	}
	if rr != nil {
		rr.settle(root, from, rr.src.InputOffset())
	}
	if err := finish(d); err != nil {
		return nil, err
	}
	return &Document{Root: root}, nil
}

// readElement reads the element whose start (read from offset from) was
// just read, with everything in it. With rr, it notes the offsets of the
// element and its texts for rawRead.settle.
func readElement(d Tokens, start xml.StartElement, rr *rawRead, from int64) (*Element, error) {
	e := &Element{Name: start.Name.Local}
	for _, a := range start.Attr {
		if isNSDecl(a) {
			e.ns = append(e.ns, a)
			continue
		}
		e.Attrs = append(e.Attrs, xml.Attr{Name: xml.Name{Local: a.Name.Local}, Value: a.Value})
	}
	var tagEnd, before int64
	if rr != nil {
		tagEnd = rr.src.InputOffset()
		before = tagEnd
	}
	for {
		t, err := d.Token()
		if err != nil {
			return nil, unexpectedEOF(err)
		}
		var after int64
		if rr != nil {
			after = rr.src.InputOffset()
		}
		switch t := t.(type) {
		case xml.StartElement:
			k, err := readElement(d, t, rr, before)
			if err != nil {
				return nil, err
			}
			e.Kids = append(e.Kids, Node{Elem: k})
			if rr != nil {
				after = rr.src.InputOffset()
			}
		case xml.CharData:
			if n := len(e.Kids); n > 0 && e.Kids[n-1].Elem == nil {
				e.Kids[n-1].Text += string(t) // text around a dropped comment
				if rr != nil && len(rr.txts) > 0 && rr.txts[len(rr.txts)-1].e == e {
					rr.txts[len(rr.txts)-1].end = after // the raw text keeps the comment
				}
			} else {
				e.Kids = append(e.Kids, Node{Text: string(t)})
				if rr != nil {
					rr.txts = append(rr.txts, txtSpan{e: e, kid: len(e.Kids) - 1, elFrom: from, start: before, end: after})
				}
			}
		case xml.EndElement:
			if rr != nil {
				rr.els = append(rr.els, elSpan{e: e, start: from, tag: tagEnd, end: after})
			}
			return e, nil
		}
		before = after
	}
}

// Attr returns the value of e's attribute name, and whether it has one.
func (e *Element) Attr(name string) (string, bool) {
	for _, a := range e.Attrs {
		if a.Name.Local == name {
			return a.Value, true
		}
	}
	return "", false
}

// SetAttr sets e's attribute name, in place when e has it, else last.
func (e *Element) SetAttr(name, value string) {
	for i := range e.Attrs {
		if e.Attrs[i].Name.Local == name {
			if e.Attrs[i].Value != value {
				e.Attrs[i].Value = value
				e.attrsChanged = true
			}
			return
		}
	}
	e.Attrs = append(e.Attrs, xml.Attr{Name: xml.Name{Local: name}, Value: value})
	e.attrsChanged = true
}

// Elements returns e's child elements named name (all of them when name is
// "").
func (e *Element) Elements(name string) []*Element {
	var out []*Element
	for _, k := range e.Kids {
		if k.Elem != nil && (name == "" || k.Elem.Name == name) {
			out = append(out, k.Elem)
		}
	}
	return out
}

// Text returns e's own text, as written, without surrounding space.
func (e *Element) Text() string {
	var b strings.Builder
	for _, k := range e.Kids {
		if k.Elem == nil {
			b.WriteString(k.Text)
		}
	}
	return strings.TrimSpace(b.String())
}

// hasElements reports whether e has child elements.
func (e *Element) hasElements() bool {
	for _, k := range e.Kids {
		if k.Elem != nil {
			return true
		}
	}
	return false
}

// remove drops e's children for which drop is true, with the space that
// indented them, and returns how many it dropped.
func (e *Element) remove(drop func(*Element) bool) int {
	n := 0
	out := e.Kids[:0]
	for _, k := range e.Kids {
		if k.Elem != nil && drop(k.Elem) {
			n++
			if l := len(out); l > 0 && out[l-1].Elem == nil && strings.TrimSpace(out[l-1].Text) == "" {
				out = out[:l-1]
			}
			continue
		}
		if l := len(out); l > 0 && k.Elem == nil && out[l-1].Elem == nil {
			out[l-1].Text += k.Text // the text on both sides of what was dropped
			out[l-1].n = 0
			continue
		}
		out = append(out, k)
	}
	clear(e.Kids[len(out):])
	e.Kids = out
	if n > 0 {
		e.changed = true
	}
	return n
}

// AppendDocumentXML appends doc as XML: the declaration, then every element
// and text as read. What was read as written (from a RawTokens source) and
// not changed since is written byte for byte; the rest is escaped as the
// writers escape (docs/wire-format.md).
func AppendDocumentXML(dst []byte, doc *Document) []byte {
	f := doc.frame
	switch {
	case f == nil || f.prolog == nil:
		dst = append(dst, xmlHeader...)
	case isDecl(f.prolog):
		dst = append(dst, f.prolog...)
	case len(f.prolog) > 0 && (f.prolog[0] == '\n' || f.prolog[0] == '\r'):
		dst = append(append(dst, xmlHeader[:len(xmlHeader)-1]...), f.prolog...)
	default: // written without a declaration: this one says UTF-8
		dst = append(append(dst, xmlHeader...), f.prolog...)
	}
	if f != nil && f.list && f.tail != nil {
		dst = appendStartTag(dst, doc.Root, f.tag)
		for _, k := range doc.Root.Kids {
			dst = appendNodeXML(dst, doc.Root, k)
		}
		return append(dst, f.tail...)
	}
	dst = appendElementXML(dst, doc.Root)
	if f != nil && !f.list && f.tail != nil {
		return append(dst, f.tail...)
	}
	return append(dst, '\n')
}

// unchanged reports whether e and everything in it are as written.
func unchanged(e *Element) bool {
	if e.raw == nil || e.changed || e.attrsChanged {
		return false
	}
	for _, k := range e.Kids {
		if k.Elem != nil && !unchanged(k.Elem) {
			return false
		}
	}
	return true
}

func appendElementXML(dst []byte, e *Element) []byte {
	if unchanged(e) {
		return append(dst, e.raw...)
	}
	var tag []byte
	if e.raw != nil {
		tag = e.raw[:e.tag]
	}
	dst = appendStartTag(dst, e, tag)
	if len(e.Kids) == 0 && (e.raw == nil || int(e.tag) == len(e.raw)) {
		// Self-closing, as written or as the writers write it.
		if tag == nil || e.attrsChanged {
			return append(dst[:len(dst)-1], "/>"...)
		}
		return dst
	}
	for _, k := range e.Kids {
		dst = appendNodeXML(dst, e, k)
	}
	dst = append(dst, "</"...)
	dst = append(dst, e.tagName()...)
	return append(dst, '>')
}

// tagName is e's name as its tags are written: prefixed as written.
func (e *Element) tagName() string {
	if e.qname != "" {
		return e.qname
	}
	return e.Name
}

// isNSDecl reports whether a is a namespace declaration.
func isNSDecl(a xml.Attr) bool {
	return a.Name.Space == "xmlns" || a.Name.Local == "xmlns" && a.Name.Space == ""
}

// appendStartTag appends e's start tag: tag (as written) when e's
// attributes are unchanged, else e's name and attributes, escaped, ending
// with '>' (also when written self-closing: appendElementXML makes it so).
func appendStartTag(dst []byte, e *Element, tag []byte) []byte {
	if tag != nil && !e.attrsChanged {
		return append(dst, tag...)
	}
	dst = append(dst, '<')
	dst = append(dst, e.tagName()...)
	for _, a := range e.ns {
		name := "xmlns"
		if a.Name.Space == "xmlns" {
			name = "xmlns:" + a.Name.Local
		}
		dst = xmlAttr(dst, name, a.Value)
	}
	for _, a := range e.Attrs {
		dst = xmlAttr(dst, a.Name.Local, a.Value)
	}
	return append(dst, '>')
}

func appendNodeXML(dst []byte, parent *Element, k Node) []byte {
	if k.Elem != nil {
		return appendElementXML(dst, k.Elem)
	}
	if raw := k.rawIn(parent); raw != nil {
		return append(dst, raw...)
	}
	return appendXMLText(dst, k.Text)
}

// PassOptions say what a caller may see of a pass-through document.
type PassOptions struct {
	// Full and Prices are the caller's permissions. A caller without
	// Prices never sees price_from or price_to.
	Full, Prices bool
	// Unknown allows elements and attributes the wire format does not name,
	// in a full-detail record: true when the caller's permissions are no
	// narrower than the upstream user's (whose answer the document is).
	Unknown bool
	// Extra names unknown elements and attributes every caller may see
	// (tenants.NAME.extra_fields).
	Extra map[string]bool
	// Now and Location drop open homes that have ended (their end is a
	// wall-clock time of Location). A zero Now keeps them all.
	Now      time.Time
	Location *time.Location
}

// Filter removes from a full-detail record document what o's caller may not
// see and what the spec drops, and fixes the counts it changes: raw prices
// without Prices, unknown elements and attributes of records unless allowed,
// open homes that have ended. Everything else is left as the legacy wrote it.
// Filter changes doc; problems (an open-home end that cannot be read: the
// open home is kept) go to report, which may be nil.
func Filter(doc *Document, o PassOptions, report func(Problem)) {
	root := doc.Root
	switch root.Name {
	case "properties", "agents":
		item := containers[root.Name]
		for _, r := range root.Elements(item) {
			filterRecord(r, o, report)
		}
		root.SetAttr("count", strconv.Itoa(len(root.Elements(item))))
	case "property", "agent":
		filterRecord(root, o, report)
	}
}

func setOf(names ...string) map[string]bool {
	m := make(map[string]bool, len(names))
	for _, n := range names {
		m[n] = true
	}
	return m
}

func filterRecord(r *Element, o PassOptions, report func(Problem)) {
	known := sch.property.known
	if r.Name == sch.agent.name {
		known = sch.agent.known
	}
	allowed := func(name string, knownSet map[string]bool) bool {
		return knownSet[name] || o.Unknown || o.Extra[name]
	}
	// The record, its containers and their items are filtered; the
	// content of any other element (a description with <br/>, an allowed
	// unknown element) is text and passes whole.
	filterAttrs := func(e *Element) {
		attrs := e.Attrs[:0]
		for _, a := range e.Attrs {
			if allowed(a.Name.Local, sch.knownAttrs) {
				attrs = append(attrs, a)
			}
		}
		if len(attrs) < len(e.Attrs) {
			e.attrsChanged = true
		}
		clear(e.Attrs[len(attrs):])
		e.Attrs = attrs
	}
	var walk func(e *Element)
	walk = func(e *Element) {
		e.remove(func(k *Element) bool {
			return !allowed(k.Name, known) || !o.Prices && sch.prices[k.Name]
		})
		for _, k := range e.Elements("") {
			if !known[k.Name] {
				if !o.Prices {
					dropPrices(k) // an allowed unknown element passes whole, less raw prices
				}
				continue
			}
			filterAttrs(k)
			switch _, container := containers[k.Name]; {
			case container || items[k.Name]:
				walk(k)
			case !o.Unknown:
				keepMarkup(k)
			case !o.Prices:
				dropPrices(k)
			}
		}
	}
	if !o.Unknown {
		dropComments(r)
	}
	filterAttrs(r)
	walk(r)
	if ohs := r.Elements("openhomes"); len(ohs) == 1 && !o.Now.IsZero() {
		loc := o.Location
		if loc == nil {
			loc = time.UTC
		}
		f := fields{record: r.Name + " " + strconv.Quote(attrOf(r, "id")), report: report}
		ohs[0].remove(func(oh *Element) bool {
			end := firstText(oh, "end")
			t, ok := f.localTime("openhome end", end, loc)
			return ok && !t.IsZero() && t.Before(o.Now)
		})
		ohs[0].SetAttr("count", strconv.Itoa(len(ohs[0].Elements("openhome"))))
	}
}

// markupTags are the inline markup a legacy text may carry (a description
// with <br/>): inside a known value they pass through, without attributes,
// to callers who may not see unknown elements; any other element there is
// removed with its content.
var markupTags = setOf("br", "p", "b", "i", "em", "strong", "u", "ul", "ol", "li")

func keepMarkup(e *Element) {
	e.remove(func(k *Element) bool { return !markupTags[k.Name] })
	for _, k := range e.Elements("") {
		if len(k.Attrs) > 0 {
			k.attrsChanged = true
		}
		clear(k.Attrs)
		k.Attrs = nil
		keepMarkup(k)
	}
}

// dropPrices removes raw prices (the schema's fields of upstream.LevelPrices:
// price_from, price_to) at any depth inside e, an element that otherwise
// passes whole: a caller without prices never sees one, wherever the legacy
// put it.
func dropPrices(e *Element) {
	e.remove(func(k *Element) bool { return sch.prices[k.Name] })
	for _, k := range e.Elements("") {
		dropPrices(k)
	}
}

func attrOf(e *Element, name string) string { v, _ := e.Attr(name); return v }

func firstText(e *Element, name string) string {
	if ks := e.Elements(name); len(ks) > 0 {
		return ks[0].Text()
	}
	return ""
}

// errNotDocument is returned by the JSON writer for a root it cannot map.
var errNotDocument = fmt.Errorf("%w: not a listing document", ErrRoot)

// AppendDocumentJSON appends doc as JSON by the spec's rules
// (docs/wire-format.md, "Pass-through documents"): every value a string; an
// element with attributes or child elements an object, attributes first;
// an element's own text under a key named by the table textKeys (its own
// name by default); the items of a collection (a container with a count
// attribute, or the children of one repeated name) as {"count", item: [...]};
// full says whether media and agent-property items are listed. Of o only
// the JSON compatibility switches count (SingleObject, SingleObjectItems,
// NumericIDs, VideoURL).
func AppendDocumentJSON(dst []byte, doc *Document, full bool, o Options) ([]byte, error) {
	root := doc.Root
	lv := level{full: full, prices: full && o.Prices, single: o.SingleObject, singles: o.SingleObjectItems, numIDs: o.NumericIDs, videoURL: o.VideoURL}
	switch root.Name {
	case "properties", "agents":
		dst = append(append(append(dst, `{"`...), root.Name...), `":`...)
		dst = jsonCollection(dst, root, containers[root.Name], containers[root.Name], lv, true)
		return append(dst, "}\n"...), nil
	case "property", "agent", "error", "errors":
		dst = append(append(append(dst, `{"`...), root.Name...), `":`...)
		dst = jsonElement(dst, root, "", root.Name, lv)
		return append(dst, "}\n"...), nil
	}
	return dst, errNotDocument
}

// containers are the collections of the wire format and their items; a
// container lists its items in short detail too when listedShort says so.
var (
	containers  = map[string]string{"photos": "photo", "virtualtours": "virtualtour", "floorplans": "floorplan", "agents": "agent", "openhomes": "openhome", "properties": "property", "errors": "error"}
	items       = setOf("photo", "virtualtour", "floorplan", "agent", "openhome", "property", "error")
	listedShort = setOf("agents", "errors")
	textKeys    = map[string]string{"photo": "url", "virtualtour": "url", "floorplan": "url", "agent": "name"}
)

// jsonElement appends the JSON value of e, a child of parent. path names
// e's shape ("property", "property/address", "agent/properties/property":
// see shapes.go), or is "" for an element the wire format does not name as
// an object.
func jsonElement(dst []byte, e *Element, parent, path string, lv level) []byte {
	if item, ok := containers[e.Name]; ok && (e.hasElements() || hasAttr(e, "count")) {
		itemPath := ""
		if path != "" {
			itemPath = path + "/" + item
		}
		return jsonCollection(dst, e, item, itemPath, lv, lv.full || listedShort[e.Name])
	}
	if item, ok := unknownCollection(e); ok {
		return jsonCollection(dst, e, item, "", lv, true)
	}
	if order := shapes.prices[path]; order != nil {
		return jsonShaped(dst, e, parent, path, order, shapesOf(lv)[path], lv)
	}
	video := lv.videoURL && e.Name == "video" && parent == "videos" && !e.hasElements()
	if len(e.Attrs) == 0 && !e.hasElements() && !video {
		if sch.nulls[e.Name] && e.Text() == "" {
			return append(dst, "null"...)
		}
		return jsonString(dst, e.Text())
	}
	if len(e.Attrs) == 0 && e.hasElements() && isMarkup(e) {
		return jsonString(dst, innerXML(e))
	}
	dst = append(dst, '{')
	first := true
	key := func(k string) {
		if !first {
			dst = append(dst, ',')
		}
		first = false
		dst = jsonString(dst, k)
		dst = append(dst, ':')
	}
	attrs := e.Attrs
	if video { // a media item's key order
		attrs = slices.Clone(attrs)
		slices.SortStableFunc(attrs, func(a, b xml.Attr) int { return mediaRank(a.Name.Local) - mediaRank(b.Name.Local) })
	}
	for _, a := range attrs {
		key(a.Name.Local)
		dst = jsonAttr(dst, a, lv)
	}
	if !e.hasElements() {
		tk := e.Name
		if video {
			tk = "url"
		}
		key(tk)
		dst = jsonString(dst, e.Text())
		return append(dst, '}')
	}
	return jsonGroups(dst, e, e.Elements(""), nil, first, lv)
}

// jsonAttr appends an attribute's value: a string, or a whole-number id as
// a number with the numeric-ids switch.
func jsonAttr(dst []byte, a xml.Attr, lv level) []byte {
	if lv.numIDs && a.Name.Local == "id" && isWholeNumber(a.Value) {
		return append(dst, a.Value...)
	}
	return jsonString(dst, a.Value)
}

// jsonGroups appends the child elements kids of e, except those named in
// skip, by name in order of first appearance, a repeated name an array,
// and closes the object; first says that no key was written before.
func jsonGroups(dst []byte, e *Element, kids []*Element, skip map[string]*Element, first bool, lv level) []byte {
	var names []string
	groups := map[string][]*Element{}
	for _, k := range kids {
		if _, known := skip[k.Name]; known {
			continue
		}
		if _, ok := groups[k.Name]; !ok {
			names = append(names, k.Name)
		}
		groups[k.Name] = append(groups[k.Name], k)
	}
	for _, n := range names {
		if !first {
			dst = append(dst, ',')
		}
		first = false
		dst = append(jsonString(dst, n), ':')
		if g := groups[n]; len(g) > 1 {
			dst = append(dst, '[')
			for i, k := range g {
				if i > 0 {
					dst = append(dst, ',')
				}
				dst = jsonElement(dst, k, e.Name, "", lv)
			}
			dst = append(dst, ']')
		} else {
			dst = jsonElement(dst, g[0], e.Name, "", lv)
		}
	}
	return append(dst, '}')
}

// jsonShaped appends e, an object the wire format names (a record, an
// item, an address), as the writers write it: the keys of order (the
// widest level's shape) in its order, each from e's attribute, e's first
// child element of that name (a repeated scalar is written once: the first
// occurrence wins, as in the model), or e's text (under its text key); a
// key e lacks is written with its empty value when the caller's level has
// it (fill). Then what the wire format does not name, in document order:
// e's other attributes, then its other child elements (a repeated name an
// array).
func jsonShaped(dst []byte, e *Element, parent, path string, order, fill *shape, lv level) []byte {
	dst = append(dst, '{')
	first := true
	key := func(k string) {
		if !first {
			dst = append(dst, ',')
		}
		first = false
		dst = jsonString(dst, k)
		dst = append(dst, ':')
	}
	kids := e.Elements("")
	tk := textKeys[e.Name]
	if tk == "" || e.Name == "photo" && parent == "agent" {
		tk = e.Name
	}
	known := make(map[string]*Element, len(order.keys))
	for _, k := range kids {
		if _, named := order.empty[k.Name]; named {
			if _, seen := known[k.Name]; !seen {
				known[k.Name] = k
			}
		}
	}
	markup := len(kids) > 0 && isMarkup(e)
	for _, k := range order.keys {
		text := k == tk && (len(kids) == 0 || markup) // the text wins over an attribute of its key's name
		if a, ok := attrNamed(e, k); ok && !text {
			key(k)
			dst = jsonAttr(dst, a, lv)
			continue
		}
		if c := known[k]; c != nil {
			key(k)
			dst = jsonElement(dst, c, e.Name, path+"/"+k, lv)
			continue
		}
		if text {
			key(k)
			if markup {
				dst = jsonString(dst, innerXML(e))
			} else {
				dst = jsonString(dst, e.Text())
			}
			continue
		}
		if v, ok := fill.emptyOf(k); ok {
			key(k)
			dst = append(dst, v...)
		}
	}
	for _, a := range e.Attrs {
		if _, named := order.empty[a.Name.Local]; !named {
			key(a.Name.Local)
			dst = jsonAttr(dst, a, lv)
		}
	}
	if markup {
		return append(dst, '}')
	}
	for _, k := range kids { // a repeated name among the known: dropped after its first
		if _, named := order.empty[k.Name]; named {
			known[k.Name] = k
		}
	}
	return jsonGroups(dst, e, kids, known, first, lv)
}

// emptyOf returns the empty value of key k, when s (nil: none) has k.
func (s *shape) emptyOf(k string) ([]byte, bool) {
	if s == nil {
		return nil, false
	}
	v, ok := s.empty[k]
	return v, ok
}

// attrNamed returns e's attribute named name (any namespace).
func attrNamed(e *Element, name string) (xml.Attr, bool) {
	for _, a := range e.Attrs {
		if a.Name.Local == name {
			return a, true
		}
	}
	return xml.Attr{}, false
}

// jsonCollection appends {"count": N, item: [...]} for container e; list
// says whether items are listed (media in short detail are not). itemPath
// is the items' shape path ("" for a collection the wire format does not
// name).
func jsonCollection(dst []byte, e *Element, item, itemPath string, lv level, list bool) []byte {
	items := e.Elements(item)
	count, ok := e.Attr("count")
	if !ok {
		count = strconv.Itoa(len(items))
	}
	dst = jsonField(append(dst, '{'), `"count":`, count)
	if !list {
		return append(dst, '}')
	}
	one := len(items) == 1 && (item == "openhome" || item == "error")
	if one {
		dst = append(append(append(dst, `,"`...), item...), `":`...)
		dst = jsonElement(dst, items[0], e.Name, itemPath, lv)
		return append(dst, '}')
	}
	dst = jsonOpenItems(dst, `,"`+item+`":`, item, len(items), lv)
	for i, k := range items {
		if i > 0 {
			dst = append(dst, ',')
		}
		dst = jsonElement(dst, k, e.Name, itemPath, lv)
	}
	dst = jsonCloseItems(dst, item, len(items), lv)
	return append(dst, '}')
}

// mediaRank orders a media item's attributes as the spec's JSON keys:
// thumbnail, type, caption, position, then any other in document order.
func mediaRank(name string) int {
	switch name {
	case "thumbnail":
		return 0
	case "type":
		return 1
	case "caption":
		return 2
	case "position":
		return 3
	}
	return 4
}

func hasAttr(e *Element, name string) bool { _, ok := e.Attr(name); return ok }

// unknownCollection reports whether e, an element the wire format does not
// name, is a collection: its children share one name, the singular of e's
// ("videos" of "video"), and it has no text of its own.
func unknownCollection(e *Element) (item string, ok bool) {
	kids := e.Elements("")
	if len(kids) == 0 || kids[0].Name+"s" != e.Name || isMarkup(e) {
		return "", false
	}
	for _, k := range kids {
		if k.Name != kids[0].Name {
			return "", false
		}
	}
	return kids[0].Name, true
}

// isMarkup reports whether e's children are inline markup inside text
// (<br/>, <b>...): mixed content, written to JSON as its inner XML.
func isMarkup(e *Element) bool {
	text := false
	for _, k := range e.Kids {
		if k.Elem == nil && strings.TrimSpace(k.Text) != "" {
			text = true
		}
	}
	return text
}

// innerXML is e's content as XML, as written.
func innerXML(e *Element) string {
	var dst []byte
	for _, k := range e.Kids {
		if k.Elem != nil {
			dst = appendElementXML(dst, k.Elem)
		} else {
			dst = appendXMLText(dst, k.Text)
		}
	}
	return strings.TrimSpace(string(dst))
}

// passList returns the list document of records that all carry their
// legacy source (copies, laid out as the writers lay out a list, or as the
// legacy laid them out when they are the records of one answer and asWritten
// allows it), or nil when any does not (or there are none): those are
// rendered instead.
func passList[T any](name string, recs []T, legacy func(*T) any, asWritten bool) *Document {
	if len(recs) == 0 {
		return nil
	}
	first, ok := legacy(&recs[0]).(*Element) // the model path allocates nothing here
	if !ok {
		return nil
	}
	var f *frame
	if first.rec != nil && first.rec.frame != nil && first.rec.frame.list {
		f = first.rec.frame
	}
	root := &Element{Name: name, Kids: make([]Node, 0, 2*len(recs)+1)}
	for i := range recs {
		e, ok := legacy(&recs[i]).(*Element)
		if !ok {
			return nil
		}
		if f != nil && (e.rec == nil || e.rec.frame != f) {
			f = nil // records of several answers (hydration)
		}
		c := cloneElement(e)
		if e.root {
			indent(c) // a single document's record (hydration) inside a list
		}
		lead := Node{Text: "\n  "}
		if e.rec != nil && e.rec.lead != nil {
			lead = Node{Text: string(e.rec.lead), n: -1}
		}
		root.Kids = append(root.Kids, lead, Node{Elem: c})
	}
	if f != nil && f.tail != nil {
		root.qname, root.ns = f.qname, f.ns // its end tag, as written, is in the tail
		if !asWritten {
			// Whitespace only: the prolog (comments) and the root's
			// attributes are the legacy's unnamed content; its namespace
			// declarations are not content.
			return &Document{Root: root, frame: &frame{list: true, tail: f.tail}}
		}
		root.Attrs = slices.Clone(f.attrs)
		return &Document{Root: root, frame: f}
	}
	if l := listOf(first); l != nil && sameList(recs, legacy, l) {
		root.qname, root.ns = l.qname, l.ns // records of the documents of one list (hydration): its root's namespace
	}
	for i := 0; i < len(root.Kids); i += 2 {
		root.Kids[i] = Node{Text: "\n  "}
	}
	root.Kids = append(root.Kids, Node{Text: "\n"})
	return &Document{Root: root}
}

// passOne returns the single-resource document of e, a copy, with the
// legacy's prolog and epilog when asWritten.
func passOne(e *Element, asWritten bool) *Document {
	doc := &Document{Root: cloneElement(e)}
	if e.rec != nil && e.rec.frame != nil && !e.rec.frame.list {
		doc.frame = e.rec.frame
		if !asWritten {
			doc.frame = &frame{tail: doc.frame.tail} // whitespace only
		}
	}
	return doc
}

// appendPassed filters doc for o's caller and writes it in f. A full-detail
// document is filtered (prices, unknown fields, ended open homes); a short
// list passes as the legacy's own short answer, its count fixed and any raw
// price removed for a caller without prices.
func appendPassed(dst []byte, f Format, doc *Document, o Options, full bool) []byte {
	// The legacy's short answer is short by its own rules and passes as
	// it is (unknown fields too), except raw prices: those reach only a
	// caller with prices, whatever the legacy put in a short answer.
	po := PassOptions{Full: full, Prices: o.Prices, Unknown: o.Unknown || !full, Extra: o.Extra, Now: o.Now, Location: o.Location}
	Filter(doc, po, nil)
	switch f {
	case XML:
		return AppendDocumentXML(dst, doc)
	case JSON:
		out, err := AppendDocumentJSON(dst, doc, full, o)
		if err != nil { // roots are always ours here
			panic(err)
		}
		return out
	}
	panic(badFormat(f))
}

// cloneElement copies e deeply: Filter changes what it is given, and a
// legacy record may be cached and rendered for other callers.
func cloneElement(e *Element) *Element {
	c := &Element{Name: e.Name, Attrs: slices.Clone(e.Attrs), Kids: make([]Node, len(e.Kids)), qname: e.qname, ns: e.ns,
		root: e.root, raw: e.raw, tag: e.tag, changed: e.changed, attrsChanged: e.attrsChanged, comments: e.comments, rec: e.rec}
	for i, k := range e.Kids {
		if k.Elem != nil {
			c.Kids[i].Elem = cloneElement(k.Elem)
		} else {
			c.Kids[i] = k // the raw bytes are never changed, only dropped
		}
	}
	return c
}

// indent moves e's layout one level (two spaces) deeper: the space after
// each line break of the whitespace-only texts between its elements and
// those of its containers and items (values are left as written).
func indent(e *Element) {
	for i, k := range e.Kids {
		_, container := containers[k.Name()]
		switch {
		case k.Elem != nil && (container || items[k.Elem.Name]):
			indent(k.Elem)
		case k.Elem == nil && strings.TrimSpace(k.Text) == "" && strings.Contains(k.Text, "\n"):
			e.Kids[i].Text = strings.ReplaceAll(k.Text, "\n", "\n  ")
			e.Kids[i].n = 0
			e.changed = true
		}
	}
}

// Name is the node's element name, or "" for text.
func (n Node) Name() string {
	if n.Elem == nil {
		return ""
	}
	return n.Elem.Name
}
