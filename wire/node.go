package wire

import (
	"encoding/xml"
	"fmt"
	"io"
	"strings"
)

// node is an element kept from an answer: the small tree of one record (or
// of an error body) that the parsers of parse.go read, built from a
// Tokens source and dropped once the record is in the model. A
// list is never held as a tree: records are decoded one at a time.
type node struct {
	tag   string // local name
	attrs []xml.Attr
	text  string // own character data (not the children's), trimmed
	kids  []*node
	src   *Element // the record as sent (ReadOptions.Keep), else nil
	idx   int      // a list's record: its position in the answer
}

// page is what a list answer was asked for: at most limit records, from
// offset. An answer with more (a legacy that ignores limit and offset) is
// paged here: only the records of [offset, offset+limit) are kept, at
// most 2×limit are ever held, and paged is told how many the answer held.
type page struct {
	offset, limit int
	paged         func(sent int)
}

// keeps reports whether the record at idx of a list paged here is kept.
func (pg page) keeps(idx int) bool { return idx >= pg.offset && idx-pg.offset < pg.limit }

// legacy returns the record as sent, for upstream's Legacy fields: nil (an
// untyped nil interface) when it was not kept.
func (n *node) legacy() any {
	if n.src == nil {
		return nil
	}
	return n.src
}

// nodeFromElement is the node of e that the parsers read: its known
// children (recursively), its attributes and its own text, trimmed.
func nodeFromElement(e *Element) *node {
	n := &node{tag: e.Name, attrs: e.Attrs, text: e.Text()}
	for _, k := range e.Elements("") {
		if sch.knownTags[k.Name] {
			n.kids = append(n.kids, nodeFromElement(k))
		}
	}
	return n
}

// readRecord reads a record whose start (read from offset from) was just
// read: as a node, or, when keep, as an Element kept in the node, with its
// bytes as written when d is a RawTokens source that records (rr non-nil).
func readRecord(d Tokens, start xml.StartElement, keep bool, rr *rawRead, from int64) (*node, error) {
	if !keep {
		return readNode(d, start)
	}
	if rr != nil {
		rr.els, rr.txts = rr.els[:0], rr.txts[:0]
	}
	e, err := readElement(d, start, rr, from)
	if err != nil {
		return nil, err
	}
	if rr != nil {
		rr.settle(e, from, rr.src.InputOffset())
		clear(rr.els)
		clear(rr.txts)
	}
	n := nodeFromElement(e)
	n.src = e
	return n, nil
}

// child returns n's first child element named tag, or nil.
func (n *node) child(tag string) *node {
	if n == nil {
		return nil
	}
	for _, k := range n.kids {
		if k.tag == tag {
			return k
		}
	}
	return nil
}

// children returns n's child elements named tag, in document order.
func (n *node) children(tag string) []*node {
	var out []*node
	for _, k := range n.kids {
		if k.tag == tag {
			out = append(out, k)
		}
	}
	return out
}

// attr returns the value of n's attribute key (any namespace), trimmed.
func (n *node) attr(key string) string {
	for _, a := range n.attrs {
		if a.Name.Local == key {
			return strings.TrimSpace(a.Value)
		}
	}
	return ""
}

// readNode reads the element whose start was just read from d, keeping its
// attributes, its own text and its known child elements.
func readNode(d Tokens, start xml.StartElement) (*node, error) {
	n := &node{tag: start.Name.Local}
	if len(start.Attr) > 0 {
		n.attrs = make([]xml.Attr, len(start.Attr))
		copy(n.attrs, start.Attr) // the decoder's strings are already copies
	}
	// Text usually comes as one chunk: it is then copied once, at its
	// size; a builder (which grows by doubling) only joins several.
	var (
		first string
		more  strings.Builder
	)
	for {
		t, err := d.Token()
		if err != nil {
			return nil, unexpectedEOF(err)
		}
		switch t := t.(type) {
		case xml.StartElement:
			if !sch.knownTags[t.Name.Local] {
				if err := skip(d); err != nil {
					return nil, err
				}
				continue
			}
			k, err := readNode(d, t)
			if err != nil {
				return nil, err
			}
			n.kids = append(n.kids, k)
		case xml.CharData:
			switch {
			case first == "" && more.Len() == 0:
				first = string(t)
			case more.Len() == 0:
				more.Grow(len(first) + len(t))
				more.WriteString(first)
				more.Write(t)
			default:
				more.Write(t)
			}
		case xml.EndElement:
			if more.Len() > 0 {
				first = more.String()
			}
			n.text = strings.TrimSpace(first)
			return n, nil
		}
	}
}

// decodeAnswer reads a whole answer from d. The root must be want ("properties",
// "property", "agents" or "agent"), or the CRM's error bodies <errors> and
// <error> (see answerError). In a list (single false) every child element
// named record is read and handed to each in document order, one at a time;
// in a single-resource answer (single true) the root itself is the record.
// A list with more than pg.limit records is paged (see page): each may
// have been handed records outside the page before that was known, and
// drops them by their idx when pg.paged is called; so a list of tiny
// records cannot inflate the model. The rest of the document is read too,
// so a truncated body is malformed.
func decodeAnswer(d Tokens, want, record string, single bool, pg page, keep bool, each func(*node) error) error {
	var rr *rawRead
	if src := rawSource(d); src != nil {
		if keep {
			rr = &rawRead{src: src}
		} else {
			src.Recorder().Unmark()
		}
	}
	start, from, err := rootElement(d)
	if err != nil {
		return err
	}
	if rr != nil && rawSource(d) == nil {
		rr = nil // the declaration named a charset the source converts: nothing is kept as written
	}
	if rr != nil && start.Name.Local != want {
		rr.src.Recorder().Unmark() // an error document is not kept
		rr = nil
	}
	switch start.Name.Local {
	case want:
		if single {
			n, err := readRecord(d, start, keep, rr, from)
			if err != nil {
				return err
			}
			if n.src != nil {
				n.src.root = true
				if rr != nil {
					end := rr.src.InputOffset()
					f := &frame{prolog: keptProlog(rr.src.Recorder().Bytes(0, from))}
					rr.src.Recorder().Mark(end)
					if err := finish(d); err != nil {
						return err
					}
					if tail := rr.src.Recorder().Bytes(end, rr.src.InputOffset()); tail != nil && onlySpace(tail) {
						f.tail = tail
					}
					n.src.rec = &recordInfo{frame: f}
					return each(n)
				}
			}
			if err := each(n); err != nil {
				return err
			}
			return finish(d)
		}
		if err := eachChild(d, start, from, record, pg, keep, rr, each); err != nil {
			return err
		}
		return finish(d)
	case "errors", "error":
		n, err := readNode(d, start)
		if err != nil {
			return err
		}
		if err := finish(d); err != nil {
			return err
		}
		return answerError(n, single)
	}
	return fmt.Errorf("%w <%s>, want <%s>", ErrRoot, start.Name.Local, want)
}

// rootElement reads up to the root element's start, and returns it and the
// offset it was read from (0 unless d is a RawTokens source).
func rootElement(d Tokens) (xml.StartElement, int64, error) {
	src, _ := d.(RawTokens)
	for {
		var from int64
		if src != nil {
			from = src.InputOffset()
		}
		t, err := d.Token()
		if err == io.EOF {
			return xml.StartElement{}, 0, fmt.Errorf("%w: no root element", ErrMalformed)
		}
		if err != nil {
			return xml.StartElement{}, 0, err
		}
		if s, ok := t.(xml.StartElement); ok {
			return s, from, nil
		}
	}
}

// eachChild reads the children of the root just opened (start, read from
// offset from), handing those named record to each and skipping the
// others, up to the root's end. With rr, each record keeps its bytes as
// written and the list's frame.
func eachChild(d Tokens, root xml.StartElement, from int64, record string, pg page, keep bool, rr *rawRead, each func(*node) error) error {
	var (
		f       *frame
		prevEnd int64 // the end of the root's start tag, then of the last record
	)
	if rr != nil {
		rec := rr.src.Recorder()
		prevEnd = rr.src.InputOffset()
		f = &frame{list: true, prolog: keptProlog(rec.Bytes(0, from)), tag: rec.Bytes(from, prevEnd)}
		f.qname = qnameOf(f.tag)
		if f.tag == nil || !xmlEntitiesOnly(f.tag) {
			f.tag = nil
		}
		for _, a := range root.Attr {
			if isNSDecl(a) {
				f.ns = append(f.ns, a)
			} else {
				f.attrs = append(f.attrs, xml.Attr{Name: xml.Name{Local: a.Name.Local}, Value: a.Value})
			}
		}
		rec.Mark(prevEnd)
	}
	for records := 0; ; {
		var before int64
		if rr != nil {
			before = rr.src.InputOffset()
		}
		t, err := d.Token()
		if err != nil {
			return unexpectedEOF(err)
		}
		switch t := t.(type) {
		case xml.StartElement:
			if t.Name.Local != record {
				if err := skip(d); err != nil {
					return err
				}
				continue
			}
			idx := records
			if records++; records > pg.limit && !pg.keeps(idx) {
				// More than asked for: the legacy ignored paging; a
				// record outside the page is not read.
				if err := skip(d); err != nil {
					return err
				}
				if rr != nil {
					prevEnd = rr.src.InputOffset()
					rr.src.Recorder().Mark(prevEnd)
				}
				continue
			}
			var lead []byte
			if rr != nil {
				if lead = rr.src.Recorder().Bytes(prevEnd, before); lead != nil && !onlySpace(lead) {
					lead = nil
				}
			}
			n, err := readRecord(d, t, keep, rr, before)
			if err != nil {
				return err
			}
			n.idx = idx
			if rr != nil && n.src != nil {
				n.src.rec = &recordInfo{frame: f, lead: lead}
				prevEnd = rr.src.InputOffset()
				rr.src.Recorder().Mark(prevEnd)
			}
			if err := each(n); err != nil {
				return err
			}
		case xml.EndElement:
			if records > pg.limit && pg.paged != nil {
				pg.paged(records)
			}
			if rr != nil {
				end := rr.src.InputOffset()
				rec := rr.src.Recorder() // marked at prevEnd
				if err := finish(d); err != nil {
					return err
				}
				tail := rec.Bytes(prevEnd, rr.src.InputOffset())
				if tail != nil && onlySpace(tail[:before-prevEnd]) && onlySpace(tail[end-prevEnd:]) {
					f.tail = tail
				}
				rec.Unmark()
			}
			return nil
		}
	}
}

// finish reads what follows the root element, to the end of the document.
func finish(d Tokens) error {
	for {
		if _, err := d.Token(); err != nil {
			if err == io.EOF {
				return nil
			}
			return err
		}
	}
}

// skip reads past the rest of the element whose start was just read.
func skip(d Tokens) error {
	for depth := 1; depth > 0; {
		t, err := d.Token()
		if err != nil {
			return unexpectedEOF(err)
		}
		switch t.(type) {
		case xml.StartElement:
			depth++
		case xml.EndElement:
			depth--
		}
	}
	return nil
}

// unexpectedEOF turns io.EOF inside an element into a malformed document.
func unexpectedEOF(err error) error {
	if err == io.EOF {
		return fmt.Errorf("%w: unexpected end of document", ErrMalformed)
	}
	return err
}
