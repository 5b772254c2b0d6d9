package wire

import (
	"bytes"
	"encoding/xml"
	"strings"
)

// frame is what surrounded the records of one legacy answer, as written:
// for a list, the prolog, the root's start tag and attributes, and what
// follows the last record (whitespace, the root's end tag, the epilog); for
// a single-resource answer, the prolog and the epilog. Its records share
// it. A part that cannot be kept (too long, not UTF-8, not whitespace where
// only whitespace may be) is nil, and the writers lay that part out as
// they lay out their own documents.
type frame struct {
	list   bool
	prolog []byte     // up to the root element: the declaration (UTF-8 or none declared), comments, whitespace
	tag    []byte     // list: the root's start tag
	attrs  []xml.Attr // list: the root's attributes
	qname  string     // list: the root's prefixed name as written ("crm:properties"), or ""
	ns     []xml.Attr // list: the root's namespace declarations
	tail   []byte     // list: from the end of the last record; single: after the root
}

// recordInfo is kept on a record read from a RawTokens source.
type recordInfo struct {
	frame *frame
	lead  []byte // list: the whitespace before the record, as written
	list  *frame // a document's record listed in this list's answer (hydration: the short list), or nil
}

// InList returns the legacy record doc (an upstream.Property's Legacy,
// read from a single-resource answer) as listed in the list answer whose
// record listed is: a copy that a list of such records, all of one list,
// writes under that list's root name and namespace declarations (a hydrated
// list keeps its root's namespace). Anything else is returned as it is.
func InList(doc, listed any) any {
	d, ok := doc.(*Element)
	l, lok := listed.(*Element)
	if !ok || !lok || l.rec == nil || l.rec.frame == nil || !l.rec.frame.list {
		return doc
	}
	c := *d
	ri := recordInfo{list: l.rec.frame}
	if d.rec != nil {
		ri.frame, ri.lead = d.rec.frame, d.rec.lead
	}
	c.rec = &ri
	return &c
}

// listOf returns the list e was listed in (InList), or nil.
func listOf(e *Element) *frame {
	if e.rec == nil {
		return nil
	}
	return e.rec.list
}

// sameList reports whether every record of recs was listed in l.
func sameList[T any](recs []T, legacy func(*T) any, l *frame) bool {
	for i := range recs {
		if e, ok := legacy(&recs[i]).(*Element); !ok || listOf(e) != l {
			return false
		}
	}
	return true
}

// qnameOf returns the prefixed name of the start tag tag as written, or
// "" when it has no prefix.
func qnameOf(tag []byte) string {
	if len(tag) < 2 {
		return ""
	}
	end := bytes.IndexAny(tag, " \t\r\n/>")
	if end < 0 {
		return ""
	}
	name := tag[1:end]
	if bytes.IndexByte(name, ':') < 0 {
		return ""
	}
	return string(name)
}

// rawRead tracks the offsets of the elements and texts of one record while
// it is read, to give each its slice of the record's bytes at its end.
type rawRead struct {
	src  RawTokens
	els  []elSpan
	txts []txtSpan
}

type elSpan struct {
	e               *Element
	start, tag, end int64
}

type txtSpan struct {
	e                  *Element
	kid                int
	elFrom, start, end int64 // elFrom: where e starts
}

// rawSource returns d as a RawTokens source that records, or nil.
func rawSource(d Tokens) RawTokens {
	if r, ok := d.(RawTokens); ok && r.Recorder() != nil {
		return r
	}
	return nil
}

// settle gives the record e (read from offset start to end) and its
// elements and texts their bytes as written, when the recorder still holds
// them. A text whose entities are not XML's own (&nbsp;, which the reader
// accepts from legacy HTML habits) is not kept as written, and neither is
// the element around it as a whole.
func (rr *rawRead) settle(e *Element, start, end int64) {
	raw := rr.src.Recorder().Bytes(start, end)
	if raw == nil {
		return
	}
	for _, s := range rr.els {
		s.e.raw = raw[s.start-start : s.end-start : s.end-start]
		s.e.tag = int32(s.tag - s.start)
		s.e.qname = qnameOf(s.e.raw[:s.e.tag])
		if !xmlEntitiesOnly(s.e.raw[:s.e.tag]) {
			s.e.attrsChanged = true
		}
		if attrsHaveSpace(s.e) {
			attrsAsWritten(s.e, s.e.raw[:s.e.tag])
		}
		s.e.comments = bytes.Contains(s.e.raw, []byte("<!--")) || bytes.Contains(s.e.raw[1:], []byte("<?"))
	}
	for _, s := range rr.txts {
		t := raw[s.start-start : s.end-start : s.end-start]
		if xmlEntitiesOnly(t) {
			s.e.Kids[s.kid].off = int32(s.start - s.elFrom)
			s.e.Kids[s.kid].n = int32(len(t))
		} else {
			s.e.changed = true
		}
	}
}

// attrsHaveSpace reports whether a value of e's attributes, as the
// decoder gave it, holds a tab or a line end: written literally, XML reads
// it as a space; written as a character reference (&#9;), as itself. The
// decoder gives both alike, so the start tag as written decides
// (attrsAsWritten).
func attrsHaveSpace(e *Element) bool {
	for _, a := range e.Attrs {
		if strings.ContainsAny(a.Value, "\t\n\r") {
			return true
		}
	}
	return false
}

// attrsAsWritten sets e's attribute values from its start tag as written,
// tag, normalised as XML does (attribute-value normalisation): a literal
// tab or line end is a space, a character reference to one is that
// character. So the JSON of a value is what an XML client reads from the
// bytes passed as written, and a start tag written anew (escaping a tab as
// &#x9;) says the same.
func attrsAsWritten(e *Element, tag []byte) {
	tag = bytes.ReplaceAll(tag, []byte("\r\n"), []byte("\n")) // line ends first: one space for CRLF
	norm := bytes.Map(func(r rune) rune {
		if r == '\t' || r == '\n' || r == '\r' {
			return ' '
		}
		return r
	}, tag)
	d := xml.NewDecoder(bytes.NewReader(norm))
	d.Entity = xml.HTMLEntity
	d.Strict = false // a prefix declared on an ancestor
	t, err := d.Token()
	start, ok := t.(xml.StartElement)
	if err != nil || !ok {
		return
	}
	i := 0
	for _, a := range start.Attr {
		if a.Name.Space == "xmlns" || a.Name.Local == "xmlns" {
			continue
		}
		if i < len(e.Attrs) && e.Attrs[i].Name.Local == a.Name.Local {
			e.Attrs[i].Value = a.Value
		}
		i++
	}
}

// xmlEntitiesOnly reports whether every entity reference in b (outside
// CDATA sections and comments) is one XML defines (amp, lt, gt, quot,
// apos) or a character reference.
func xmlEntitiesOnly(b []byte) bool {
	for {
		i := bytes.IndexAny(b, "&<")
		if i < 0 {
			return true
		}
		if b[i] == '<' {
			b = b[i+1:]
			for _, sec := range [][2]string{{"![CDATA[", "]]>"}, {"!--", "-->"}} {
				if bytes.HasPrefix(b, []byte(sec[0])) {
					end := bytes.Index(b, []byte(sec[1]))
					if end < 0 {
						return false
					}
					b = b[end:]
				}
			}
			continue
		}
		b = b[i+1:]
		j := bytes.IndexByte(b, ';')
		if j < 0 {
			return false
		}
		switch name := string(b[:j]); {
		case name == "amp", name == "lt", name == "gt", name == "quot", name == "apos", strings.HasPrefix(name, "#"):
		default:
			return false
		}
		b = b[j+1:]
	}
}

// dropComments marks every element of e whose bytes as written hold a
// comment or a processing instruction as changed, and drops the bytes of its
// texts that hold one, so none is written: for callers who may not see what
// the wire format does not name (a comment is such content).
func dropComments(e *Element) {
	if !e.comments {
		return
	}
	e.changed = true
	for i, k := range e.Kids {
		switch {
		case k.Elem != nil:
			dropComments(k.Elem)
		case k.n > 0 && bytes.Contains(k.rawIn(e), []byte("<?")):
			e.Kids[i].n = 0
		case k.n > 0 && bytes.Contains(k.rawIn(e), []byte("<!--")):
			if skip := afterComments(k.rawIn(e)); skip >= 0 {
				e.Kids[i].off += int32(skip)
				e.Kids[i].n -= int32(skip)
			} else {
				e.Kids[i].n = 0
			}
		}
	}
}

// afterComments returns, for whitespace with comments in it, where what
// follows the last comment starts (the comment's line goes with it), and
// -1 for text with comments in it.
func afterComments(b []byte) int {
	last := 0
	for {
		i := bytes.Index(b[last:], []byte("<!--"))
		if i < 0 {
			return last
		}
		if !onlySpace(b[last : last+i]) {
			return -1
		}
		j := bytes.Index(b[last+i:], []byte("-->"))
		if j < 0 {
			return -1
		}
		last += i + j + 3
	}
}

// onlySpace reports whether b is XML whitespace.
func onlySpace(b []byte) bool {
	return len(bytes.Trim(b, " \t\r\n")) == 0
}

// keptProlog returns the prolog as written when it may be written again
// before a UTF-8 document: a declaration of UTF-8 (or of no encoding) or
// none, comments and whitespace; else nil. A byte order mark, and
// whitespace before the declaration, are dropped.
func keptProlog(b []byte) []byte {
	if b == nil {
		return nil
	}
	b = bytes.TrimPrefix(b, []byte("\xef\xbb\xbf")) // a byte order mark: written again after a declaration would be malformed
	if t := bytes.TrimLeft(b, " \t\r\n"); isDecl(t) {
		b = t // whitespace before the declaration: kept, our declaration would be written before it, a second one
	}
	rest := b
	if isDecl(b) {
		end := bytes.Index(b, []byte("?>"))
		if end < 0 {
			return nil
		}
		decl := strings.ToLower(string(b[:end]))
		if strings.Contains(decl, "encoding") && !strings.Contains(decl, "utf-8") || !strings.Contains(decl, "version") {
			return nil // another encoding, or not a declaration XML allows (<?xml?>): ours is written
		}
		rest = b[end+2:]
	}
	if !miscOnly(rest) {
		return nil // text, or a declaration out of place, before the root: not written again
	}
	return b
}

// miscOnly reports whether b holds only what XML allows after the
// declaration and before the root: whitespace, comments, processing
// instructions (not a declaration) and a document type declaration.
func miscOnly(b []byte) bool {
	for {
		b = bytes.TrimLeft(b, " \t\r\n")
		var end []byte
		switch {
		case len(b) == 0:
			return true
		case bytes.HasPrefix(b, []byte("<!--")):
			end = []byte("-->")
		case isDecl(b):
			return false
		case bytes.HasPrefix(b, []byte("<?")):
			end = []byte("?>")
		case bytes.HasPrefix(b, []byte("<!DOCTYPE")):
			end = []byte(">")
			if i, j := bytes.IndexByte(b, '['), bytes.IndexByte(b, '>'); i >= 0 && i < j {
				end = []byte("]>") // an internal subset
			}
		default:
			return false
		}
		i := bytes.Index(b, end)
		if i < 0 {
			return false
		}
		b = b[i+len(end):]
	}
}

// isDecl reports whether b starts with an XML declaration (not a processing
// instruction whose name starts with xml, such as <?xml-stylesheet?>).
func isDecl(b []byte) bool {
	return len(b) > 5 && bytes.HasPrefix(b, []byte("<?xml")) && bytes.IndexByte([]byte(" \t\r\n?"), b[5]) >= 0
}
