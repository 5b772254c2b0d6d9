package wire

import (
	"encoding/xml"
	"strings"
	"testing"
)

// TestNodeText: an element's own text is joined from every chunk (text,
// entities, CDATA, around comments and skipped elements), never its
// children's, and trimmed.
func TestNodeText(t *testing.T) {
	for _, tc := range []struct{ xml, want string }{
		{`<description> plain </description>`, "plain"},
		{`<description>a<!-- c -->b<![CDATA[<c>]]>d&amp;e</description>`, "ab<c>d&e"},
		{`<description>a<x>hidden</x>b<name>child</name>c</description>`, "abc"},
		{`<description></description>`, ""},
		{`<description><!-- only a comment --></description>`, ""},
	} {
		d := xml.NewDecoder(strings.NewReader(tc.xml))
		start, _, err := rootElement(d)
		if err != nil {
			t.Fatal(err)
		}
		n, err := readNode(d, start)
		if err != nil {
			t.Fatalf("%s: %v", tc.xml, err)
		}
		if n.text != tc.want {
			t.Errorf("%s: text %q, want %q", tc.xml, n.text, tc.want)
		}
	}
}
