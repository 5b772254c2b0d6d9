package docdiff

import (
	"bytes"
	"encoding/xml"
	"fmt"
	"strings"

	"github.com/beevik/etree"

	"listingproxy/internal/xmltext"
)

// parseXML reads b in whatever encoding it is (internal/xmltext: a declared
// ISO-8859-1 or windows-1252, UTF-16, XML 1.1 read as 1.0, stray bytes
// read as Windows-1252), as listingproxy's CRM adapter reads a legacy
// answer, so a legacy document and listingproxy's UTF-8 answer compare by
// what they say.
func parseXML(b []byte) (*etree.Element, error) {
	doc := etree.NewDocument()
	doc.ReadSettings = etree.ReadSettings{
		Entity:        xml.HTMLEntity, // legacy documents sometimes carry &nbsp;
		MaxDepth:      256,
		CharsetReader: xmltext.CharsetReader,
	}
	if _, err := doc.ReadFrom(xmltext.NewReader(bytes.NewReader(b))); err != nil {
		return nil, err
	}
	root := doc.Root()
	if root == nil {
		return nil, fmt.Errorf("no root element")
	}
	return root, nil
}

func compareXML(old, new []byte) []Difference {
	a, errA := parseXML(old)
	b, errB := parseXML(new)
	if errA != nil || errB != nil {
		return parseDiffs(errA, errB, old, new)
	}
	if a.FullTag() != b.FullTag() {
		return []Difference{{Path: "/", Kind: Name, Old: "<" + a.FullTag() + ">", New: "<" + b.FullTag() + ">"}}
	}
	var c xmlComparer
	c.element("/"+a.FullTag(), a, b)
	return c.diffs
}

// parseDiffs reports which documents do not parse; when neither does, they
// are also compared as bytes.
func parseDiffs(errA, errB error, old, new []byte) []Difference {
	msg := func(err error) string {
		if err == nil {
			return "well-formed"
		}
		return "not well-formed: " + err.Error()
	}
	return []Difference{{Path: "/", Kind: Parse, Old: msg(errA), New: msg(errB)}}
}

type xmlComparer struct{ diffs []Difference }

func (c *xmlComparer) add(path string, k Kind, old, new string) {
	c.diffs = append(c.diffs, Difference{Path: path, Kind: k, Old: old, New: new})
}

// element compares two elements of the same name at path.
func (c *xmlComparer) element(path string, a, b *etree.Element) {
	c.attributes(path, a, b)
	if ta, tb := ownText(a), ownText(b); ta != tb {
		c.add(path, Text, quote(ta), quote(tb))
	}
	c.children(path, childElements(a), childElements(b))
}

func (c *xmlComparer) attributes(path string, a, b *etree.Element) {
	bv := make(map[string]string, len(b.Attr))
	for _, at := range b.Attr {
		bv[at.FullKey()] = at.Value
	}
	seen := make(map[string]bool, len(a.Attr))
	for _, at := range a.Attr {
		k := at.FullKey()
		seen[k] = true
		v, ok := bv[k]
		switch {
		case !ok:
			c.add(path+"/@"+k, Missing, quote(at.Value), "")
		case v != at.Value:
			c.add(path+"/@"+k, Attribute, quote(at.Value), quote(v))
		}
	}
	for _, at := range b.Attr {
		if k := at.FullKey(); !seen[k] {
			c.add(path+"/@"+k, Extra, "", quote(at.Value))
		}
	}
}

// children aligns two child lists by name (a longest common subsequence),
// recurses into aligned pairs, reports children present on one side only,
// and reports as Order those that both sides have but at other places.
func (c *xmlComparer) children(path string, as, bs []*etree.Element) {
	if len(as) == 0 && len(bs) == 0 {
		return
	}
	pathA, pathB := childPaths(path, as, bs)
	pairs := lcs(len(as), len(bs), func(i, j int) bool { return as[i].FullTag() == bs[j].FullTag() })

	// Unmatched children of one name on both sides moved: pair them in order.
	matchedA := make([]bool, len(as))
	matchedB := make([]bool, len(bs))
	for _, p := range pairs {
		matchedA[p[0]], matchedB[p[1]] = true, true
	}
	unmatchedB := map[string][]int{}
	for j, e := range bs {
		if !matchedB[j] {
			unmatchedB[e.FullTag()] = append(unmatchedB[e.FullTag()], j)
		}
	}
	movedTo := map[int]int{} // old index -> new index
	for i, e := range as {
		if q := unmatchedB[e.FullTag()]; !matchedA[i] && len(q) > 0 {
			movedTo[i] = q[0]
			matchedB[q[0]] = true
			unmatchedB[e.FullTag()] = q[1:]
		}
	}

	i, j := 0, 0
	flushNew := func(until int) {
		for ; j < until; j++ {
			if !matchedB[j] {
				c.add(pathB[j], Extra, "", "<"+bs[j].FullTag()+">")
			}
		}
	}
	for _, p := range append(pairs, [2]int{len(as), len(bs)}) {
		for ; i < p[0]; i++ {
			if to, ok := movedTo[i]; ok {
				c.add(pathA[i], Order, fmt.Sprintf("child %d", i+1), fmt.Sprintf("child %d", to+1))
				c.element(pathA[i], as[i], bs[to])
				continue
			}
			c.add(pathA[i], Missing, "<"+as[i].FullTag()+">", "")
		}
		flushNew(p[1])
		if p[0] < len(as) {
			c.element(pathA[p[0]], as[p[0]], bs[p[1]])
			i, j = p[0]+1, p[1]+1
		}
	}
}

// childPaths names each child: path/name, with [n] when its parent (on
// either side) has more than one child of that name.
func childPaths(path string, as, bs []*etree.Element) (pa, pb []string) {
	count := func(es []*etree.Element) map[string]int {
		m := map[string]int{}
		for _, e := range es {
			m[e.FullTag()]++
		}
		return m
	}
	ca, cb := count(as), count(bs)
	name := func(es []*etree.Element) []string {
		out := make([]string, len(es))
		seen := map[string]int{}
		for k, e := range es {
			tag := e.FullTag()
			seen[tag]++
			if ca[tag] > 1 || cb[tag] > 1 {
				out[k] = fmt.Sprintf("%s/%s[%d]", path, tag, seen[tag])
			} else {
				out[k] = path + "/" + tag
			}
		}
		return out
	}
	return name(as), name(bs)
}

func childElements(e *etree.Element) []*etree.Element { return e.ChildElements() }

// ownText is the element's character data (not its children's), trimmed.
func ownText(e *etree.Element) string {
	var b strings.Builder
	for _, t := range e.Child {
		if cd, ok := t.(*etree.CharData); ok {
			b.WriteString(cd.Data)
		}
	}
	return strings.TrimSpace(b.String())
}
