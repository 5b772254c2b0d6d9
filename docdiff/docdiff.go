// Package docdiff owns the structural comparison of two listing documents,
// the same resource as answered by an old and a new endpoint, for
// "listingproxy diff" and the drop-in fidelity tests.
//
// XML documents are compared element by element: names and order of
// elements, attributes as a set (name and value, order ignored), and each
// element's own text with surrounding space trimmed. The XML declaration,
// indentation, comments and the choice between <a></a> and <a/> are not
// compared. JSON documents are compared value by value: object keys as a set,
// then the order of the keys both have (listingproxy's key order is part of
// the wire format, so an order difference is reported, as its own Kind),
// array items by position, and scalars by type and text (a JSON number keeps
// its spelling: 1 and 1.0 differ).
//
// Paths name the node that differs in an XPath-like way shared by both
// formats: /properties/property[3]/price, /properties/@count. An index
// [n] (1-based) is written when the parent has more than one child of that
// name (XML) or for every array item (JSON).
//
// It imports the standard library and github.com/beevik/etree only, and
// nothing of listingproxy.
package docdiff

import (
	"bytes"
	"fmt"
	"mime"
	"strings"
)

// Format is the representation of a document.
type Format uint8

// The formats. Unknown documents are compared byte for byte.
const (
	Unknown Format = iota
	XML
	JSON
)

func (f Format) String() string {
	switch f {
	case XML:
		return "xml"
	case JSON:
		return "json"
	}
	return "unknown"
}

// Detect returns the format of a document from its Content-Type, else from
// its first non-space byte.
func Detect(contentType string, body []byte) Format {
	if mt, _, err := mime.ParseMediaType(contentType); err == nil {
		switch {
		case mt == "application/json" || strings.HasSuffix(mt, "+json"):
			return JSON
		case mt == "application/xml" || mt == "text/xml" || strings.HasSuffix(mt, "+xml"):
			return XML
		}
	}
	trimmed := bytes.TrimLeft(body, " \t\r\n\ufeff")
	switch {
	case bytes.HasPrefix(body, []byte("\xff\xfe")), bytes.HasPrefix(body, []byte("\xfe\xff")),
		bytes.HasPrefix(body, []byte("<\x00")), bytes.HasPrefix(body, []byte("\x00<")):
		return XML // UTF-16, by its byte order mark or its first "<"
	case len(trimmed) == 0:
		return Unknown
	case trimmed[0] == '<':
		return XML
	case trimmed[0] == '{' || trimmed[0] == '[':
		return JSON
	}
	return Unknown
}

// Kind classifies a Difference.
type Kind string

// The kinds of difference.
const (
	// Missing: the node is in the old document only.
	Missing Kind = "missing"
	// Extra: the node is in the new document only.
	Extra Kind = "extra"
	// Name: elements at the same place have different names.
	Name Kind = "name"
	// Text: an element's text or a JSON scalar's value differs.
	Text Kind = "text"
	// Attribute: an attribute's value differs (missing and extra attributes
	// are Missing and Extra).
	Attribute Kind = "attribute"
	// Order: the same children or keys appear in another order.
	Order Kind = "order"
	// Type: JSON values of different types (string, number, object...).
	Type Kind = "type"
	// Parse: a document is not well-formed.
	Parse Kind = "parse"
	// Body: documents of an unknown format differ byte-wise.
	Body Kind = "body"
)

// Difference is one place where the documents differ. Old and New describe
// what each document has there ("" when it has nothing).
type Difference struct {
	Path string
	Kind Kind
	Old  string
	New  string
}

func (d Difference) String() string {
	switch d.Kind {
	case Missing:
		return fmt.Sprintf("%s: missing in new (old: %s)", d.Path, d.Old)
	case Extra:
		return fmt.Sprintf("%s: extra in new (new: %s)", d.Path, d.New)
	}
	return fmt.Sprintf("%s: %s differs: old %s, new %s", d.Path, d.Kind, d.Old, d.New)
}

// Compare returns the differences between the old and new documents in
// format f, in document order; none when they are structurally equal.
// Byte-equal documents are equal without parsing.
func Compare(old, new []byte, f Format) []Difference {
	if bytes.Equal(old, new) {
		return nil
	}
	switch f {
	case XML:
		return compareXML(old, new)
	case JSON:
		return compareJSON(old, new)
	}
	return []Difference{{Path: "/", Kind: Body, Old: summary(old), New: summary(new)}}
}

// summary is a short quoted form of a body or value for messages.
func summary(b []byte) string {
	const max = 80
	s := string(b)
	if len(s) > max {
		return fmt.Sprintf("%q... (%d bytes)", s[:max], len(b))
	}
	return fmt.Sprintf("%q", s)
}

func quote(s string) string { return summary([]byte(s)) }

// lcs returns the pairs (i, j) of a longest common subsequence of a and b,
// compared with eq, in order.
func lcs(na, nb int, eq func(i, j int) bool) [][2]int {
	// Documents are small (thousands of children at most); the quadratic
	// table is fine, but a common prefix and suffix are matched first so the
	// usual case (identical names) costs nothing.
	pre := 0
	for pre < na && pre < nb && eq(pre, pre) {
		pre++
	}
	suf := 0
	for suf < na-pre && suf < nb-pre && eq(na-1-suf, nb-1-suf) {
		suf++
	}
	var pairs [][2]int
	for i := range pre {
		pairs = append(pairs, [2]int{i, i})
	}
	ma, mb := na-pre-suf, nb-pre-suf
	if ma > 0 && mb > 0 {
		t := make([][]int32, ma+1)
		for i := range t {
			t[i] = make([]int32, mb+1)
		}
		for i := ma - 1; i >= 0; i-- {
			for j := mb - 1; j >= 0; j-- {
				if eq(pre+i, pre+j) {
					t[i][j] = t[i+1][j+1] + 1
				} else {
					t[i][j] = max(t[i+1][j], t[i][j+1])
				}
			}
		}
		for i, j := 0, 0; i < ma && j < mb; {
			switch {
			case eq(pre+i, pre+j):
				pairs = append(pairs, [2]int{pre + i, pre + j})
				i++
				j++
			case t[i+1][j] >= t[i][j+1]:
				i++
			default:
				j++
			}
		}
	}
	for k := range suf {
		pairs = append(pairs, [2]int{na - suf + k, nb - suf + k})
	}
	return pairs
}
