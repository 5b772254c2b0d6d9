package docdiff

import (
	"testing"

	"github.com/google/go-cmp/cmp"
)

const xmlBase = `<?xml version="1.0" encoding="UTF-8"?>
<properties count="2">
  <property id="1" last_updated="Fri Nov 20 09:30:00 +1100 2026">
    <agency_id>HB-AU-00001</agency_id>
    <price>$650,000</price>
    <photos count="0"/>
  </property>
  <property id="2" last_updated="Fri Nov 20 09:30:00 +1100 2026">
    <agency_id>HB-AU-00002</agency_id>
    <price>Auction</price>
    <photos count="0"/>
  </property>
</properties>
`

func TestCompareXML(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name     string
		old, new string
		want     []Difference
	}{
		{"equal bytes", xmlBase, xmlBase, nil},
		{
			"formatting and attribute order are not compared",
			xmlBase,
			`<properties count="2"><property last_updated="Fri Nov 20 09:30:00 +1100 2026" id="1"><agency_id> HB-AU-00001 </agency_id><price>$650,000</price><photos count="0"></photos></property>` +
				`<property id="2" last_updated="Fri Nov 20 09:30:00 +1100 2026"><agency_id>HB-AU-00002</agency_id><price>Auction</price><photos count="0"/></property></properties>`,
			nil,
		},
		{
			"text",
			xmlBase,
			replace(xmlBase, "<price>Auction</price>", "<price>Tender</price>"),
			[]Difference{{Path: "/properties/property[2]/price", Kind: Text, Old: `"Auction"`, New: `"Tender"`}},
		},
		{
			"attribute value, missing and extra",
			xmlBase,
			replace(replace(xmlBase, `<properties count="2">`, `<properties count="3" page="1">`), `<property id="2" last_updated="Fri Nov 20 09:30:00 +1100 2026">`, `<property id="2">`),
			[]Difference{
				{Path: "/properties/@count", Kind: Attribute, Old: `"2"`, New: `"3"`},
				{Path: "/properties/@page", Kind: Extra, New: `"1"`},
				{Path: "/properties/property[2]/@last_updated", Kind: Missing, Old: `"Fri Nov 20 09:30:00 +1100 2026"`},
			},
		},
		{
			"extra element in the middle",
			xmlBase,
			replace(xmlBase, "<price>Auction</price>", "<price>Auction</price><price_to/>"),
			[]Difference{{Path: "/properties/property[2]/price_to", Kind: Extra, New: "<price_to>"}},
		},
		{
			"missing element",
			xmlBase,
			replace(xmlBase, "<price>$650,000</price>", ""),
			[]Difference{{Path: "/properties/property[1]/price", Kind: Missing, Old: "<price>"}},
		},
		{
			"order",
			xmlBase,
			replace(xmlBase, "<agency_id>HB-AU-00001</agency_id>\n    <price>$650,000</price>", "<price>$650,000</price><agency_id>HB-AU-00001</agency_id>"),
			[]Difference{{Path: "/properties/property[1]/agency_id", Kind: Order, Old: "child 1", New: "child 2"}},
		},
		{
			"root name",
			`<error>x</error>`,
			`<errors count="1"/>`,
			[]Difference{{Path: "/", Kind: Name, Old: "<error>", New: "<errors>"}},
		},
		{
			"not well-formed",
			`<a>`,
			`<a/>`,
			[]Difference{{Path: "/", Kind: Parse, Old: "not well-formed: etree: invalid XML format", New: "well-formed"}},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := Compare([]byte(tc.old), []byte(tc.new), XML)
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("Compare mismatch (-want +got):\n%s", diff)
			}
		})
	}
}

func TestCompareJSON(t *testing.T) {
	t.Parallel()
	const base = `{"properties":{"count":"2","property":[{"id":"1","price":"$650,000","price_to":null},{"id":"2","price":"Auction","price_to":"700000"}]}}`
	tests := []struct {
		name     string
		old, new string
		want     []Difference
	}{
		{"equal", base, base, nil},
		{"whitespace", base, "{ \"properties\" : " + base[len(`{"properties":`):] + "\n", nil},
		{
			"value",
			base,
			replace(base, `"Auction"`, `"Tender"`),
			[]Difference{{Path: "/properties/property[2]/price", Kind: Text, Old: `"Auction"`, New: `"Tender"`}},
		},
		{
			"type",
			base,
			replace(base, `"price_to":null}`, `"price_to":""}`),
			[]Difference{{Path: "/properties/property[1]/price_to", Kind: Type, Old: "null null", New: `string ""`}},
		},
		{
			"key order",
			base,
			replace(base, `{"id":"1","price":"$650,000"`, `{"price":"$650,000","id":"1"`),
			[]Difference{{Path: "/properties/property[1]", Kind: Order, Old: "keys from 1: id,price,price_to", New: "keys from 1: price,id,price_to"}},
		},
		{
			"missing and extra keys",
			base,
			replace(base, `"count":"2",`, `"total":"2",`),
			[]Difference{
				{Path: "/properties/count", Kind: Missing, Old: `"2"`},
				{Path: "/properties/total", Kind: Extra, New: `"2"`},
			},
		},
		{
			"array length",
			`{"a":["x","y"]}`,
			`{"a":["x"]}`,
			[]Difference{{Path: "/a[2]", Kind: Missing, Old: `"y"`}},
		},
		{
			"single object instead of array",
			`{"error":[{"field":"id"}]}`,
			`{"error":{"field":"id"}}`,
			[]Difference{{Path: "/error", Kind: Type, Old: "array array of 1", New: "object object of 1 keys"}},
		},
		{
			"long key order",
			`{"a":"","b":"","c":"","d":"","e":"","f":"","g":""}`,
			`{"a":"","c":"","b":"","d":"","e":"","f":"","g":""}`,
			[]Difference{{Path: "/", Kind: Order, Old: "keys from 2: b,c,d,e,...", New: "keys from 2: c,b,d,e,..."}},
		},
		{"number spelling", `{"n":1}`, `{"n":1.0}`, []Difference{{Path: "/n", Kind: Text, Old: "1", New: "1.0"}}},
		{"trailing data", `{}`, `{}{}`, []Difference{{Path: "/", Kind: Parse, Old: "well-formed", New: "not well-formed: data after the top-level value"}}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := Compare([]byte(tc.old), []byte(tc.new), JSON)
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("Compare mismatch (-want +got):\n%s", diff)
			}
		})
	}
}

func TestCompareUnknown(t *testing.T) {
	t.Parallel()
	if got := Compare([]byte("a"), []byte("a"), Unknown); got != nil {
		t.Errorf("equal bodies: got %v, want none", got)
	}
	got := Compare([]byte("a"), []byte("b"), Unknown)
	want := []Difference{{Path: "/", Kind: Body, Old: `"a"`, New: `"b"`}}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("mismatch (-want +got):\n%s", diff)
	}
}

func TestDetect(t *testing.T) {
	t.Parallel()
	tests := []struct {
		ct, body string
		want     Format
	}{
		{"application/xml; charset=utf-8", "", XML},
		{"text/xml", "", XML},
		{"application/atom+xml", "", XML},
		{"application/json; charset=utf-8", "", JSON},
		{"", "  <a/>", XML},
		{"text/plain", "{}", JSON},
		{"", "[1]", JSON},
		{"text/html", "Oops", Unknown},
		{"", "", Unknown},
	}
	for _, tc := range tests {
		if got := Detect(tc.ct, []byte(tc.body)); got != tc.want {
			t.Errorf("Detect(%q, %q) = %v, want %v", tc.ct, tc.body, got, tc.want)
		}
	}
}

func TestDifferenceString(t *testing.T) {
	t.Parallel()
	tests := []struct {
		d    Difference
		want string
	}{
		{Difference{Path: "/a/b", Kind: Missing, Old: "<b>"}, "/a/b: missing in new (old: <b>)"},
		{Difference{Path: "/a/b", Kind: Extra, New: "<b>"}, "/a/b: extra in new (new: <b>)"},
		{Difference{Path: "/a/@n", Kind: Attribute, Old: `"1"`, New: `"2"`}, `/a/@n: attribute differs: old "1", new "2"`},
	}
	for _, tc := range tests {
		if got := tc.d.String(); got != tc.want {
			t.Errorf("String() = %q, want %q", got, tc.want)
		}
	}
}

func replace(s, old, new string) string {
	for i := 0; i+len(old) <= len(s); i++ {
		if s[i:i+len(old)] == old {
			return s[:i] + new + s[i+len(old):]
		}
	}
	panic("replace: " + old + " not found")
}

// TestCompareEncodings: a legacy document in another encoding (a declared
// ISO-8859-1 or windows-1252, UTF-16 with or without a byte order mark,
// XML 1.1, whitespace before the declaration) compares equal to the same
// document in UTF-8, as listingproxy's CRM adapter reads it, and is
// detected as XML without a content type.
func TestCompareEncodings(t *testing.T) {
	t.Parallel()
	const doc = `<property id="1"><suburb>Café</suburb><price>€1 © “q”</price></property>`
	utf8Doc := []byte(`<?xml version="1.0" encoding="UTF-8"?>` + "\n" + doc)
	utf16 := func(s string, be bool) []byte {
		var b []byte
		for _, r := range s {
			if be {
				b = append(b, byte(r>>8), byte(r))
			} else {
				b = append(b, byte(r), byte(r>>8))
			}
		}
		return b
	}
	for _, tc := range []struct {
		name string
		old  []byte
	}{
		{"windows-1252", []byte("<?xml version=\"1.0\" encoding=\"windows-1252\"?>\n<property id=\"1\"><suburb>Caf\xe9</suburb><price>\x801 \xa9 \x93q\x94</price></property>")},
		{"ISO-8859-1 with references", []byte("<?xml version=\"1.0\" encoding=\"ISO-8859-1\"?>\n<property id=\"1\"><suburb>Caf\xe9</suburb><price>&#8364;1 \xa9 &#8220;q&#8221;</price></property>")},
		{"UTF-16LE with BOM", append([]byte("\xff\xfe"), utf16(`<?xml version="1.0" encoding="UTF-16"?>`+doc, false)...)},
		{"UTF-16BE without BOM", utf16(`<?xml version="1.0" encoding="UTF-16"?>`+doc, true)},
		{"XML 1.1 after whitespace", []byte("\n  <?xml version=\"1.1\" encoding=\"UTF-8\"?>\n" + doc)},
	} {
		if f := Detect("text/html", tc.old); f != XML {
			t.Errorf("%s: detected as %v, want XML", tc.name, f)
		}
		if d := Compare(tc.old, utf8Doc, XML); d != nil {
			t.Errorf("%s: differences %v, want none", tc.name, d)
		}
	}
}
