package wire

import (
	"bytes"
	"encoding/xml"
	"errors"
	"io"
	"math"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/google/go-cmp/cmp"

	"listingproxy/normalize"
	"listingproxy/upstream"
)

// asWrittenList is a legacy list as an old PHP endpoint writes it: a
// comment in the prolog, an attribute of the list the wire format does not
// name, tabs, single-quoted attributes, character references, CDATA, an
// empty element written open, a comment inside a record, CRLF line ends.
const asWrittenList = "<?xml version=\"1.0\" encoding=\"utf-8\"?>\r\n<!-- ListingCRM 4.2 -->\r\n" +
	"<properties count='2' page=\"1\">\r\n" +
	"\t<property id='3301' last_updated=\"Tue Nov 3 09:05:00 +1000 2026\">\r\n" +
	"\t\t<agency_id>QLD-3301</agency_id>\r\n" +
	"\t\t<address display=\"true\">12  Smith&#32;Street</address>\r\n" +
	"\t\t<status>CURRENT</status>\r\n" +
	"\t\t<latitude></latitude>\r\n" +
	"\t\t<price_from>1650000.00</price_from>\r\n" +
	"\t\t<suburb>Caf&#xE9; Row</suburb>\r\n" +
	"\t\t<garages>2</garages>\r\n" +
	"\t\t<!-- staff note -->\r\n" +
	"\t\t<description><![CDATA[Views & more <3]]><br></br>Line two &amp; &quot;more&quot;</description>\r\n" +
	"\t\t<photos count=\"1\"><photo type=\"Normal\" caption='Front' position=\"1\" thumbnail=\"t.jpg\" width=\"1024\">1.jpg</photo></photos>\r\n" +
	"\t</property>\r\n" +
	"\t<property id=\"3302\" last_updated=\"Mon Nov 02 17:45:10 +1000 2026\"><status>SOLD</status><bedrooms>3+</bedrooms></property>\r\n" +
	"</properties>\r\n"

func readRawList(t *testing.T, doc string) []upstream.Property {
	t.Helper()
	ps, err := ReadPropertyList(NewRawDecoder(strings.NewReader(doc)), time.UTC, true, math.MaxInt, ReadOptions{Keep: true})
	if err != nil {
		t.Fatal(err)
	}
	return ps
}

// TestPassThroughAsWritten: a caller with the upstream user's permissions
// gets the legacy's list byte for byte, also after the shared fetch's
// source document round trip; a narrower caller gets only the changed
// parts written anew: the removed elements (with the whitespace before
// them), the list's start tag (its unnamed attribute dropped, the count
// fixed) and the declaration, everything else as written.
func TestPassThroughAsWritten(t *testing.T) {
	ps := readRawList(t, asWrittenList)
	full := Options{Detail: normalize.Full, Prices: true, Unknown: true}
	if got := string(AppendPropertyList(nil, XML, ps, full)); got != asWrittenList {
		t.Errorf("upstream-level caller (-legacy +got):\n%s", cmp.Diff(asWrittenList, got))
	}
	src := AppendPropertyList(nil, XML, ps, SourceOptions(normalize.Full, time.UTC))
	again, err := ReadSourceList[upstream.Property](src, time.UTC, true)
	if err != nil {
		t.Fatal(err)
	}
	if got := string(AppendPropertyList(nil, XML, again, full)); got != asWrittenList {
		t.Errorf("after the source round trip (-legacy +got):\n%s", cmp.Diff(asWrittenList, got))
	}

	narrow := string(AppendPropertyList(nil, XML, ps, Options{Detail: normalize.Full}))
	want := "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n" +
		"<properties count=\"2\">\r\n" +
		"\t<property id='3301' last_updated=\"Tue Nov 3 09:05:00 +1000 2026\">\r\n" +
		"\t\t<agency_id>QLD-3301</agency_id>\r\n" +
		"\t\t<address display=\"true\">12  Smith&#32;Street</address>\r\n" +
		"\t\t<status>CURRENT</status>\r\n" +
		"\t\t<latitude></latitude>\r\n" +
		"\t\t<suburb>Caf&#xE9; Row</suburb>\r\n" +
		"\t\t<description><![CDATA[Views & more <3]]><br></br>Line two &amp; &quot;more&quot;</description>\r\n" +
		"\t\t<photos count=\"1\"><photo type=\"Normal\" caption=\"Front\" position=\"1\" thumbnail=\"t.jpg\">1.jpg</photo></photos>\r\n" +
		"\t</property>\r\n" +
		"\t<property id=\"3302\" last_updated=\"Mon Nov 02 17:45:10 +1000 2026\"><status>SOLD</status><bedrooms>3+</bedrooms></property>\r\n" +
		"</properties>\r\n"
	if narrow != want {
		t.Errorf("caller without prices (-want +got):\n%s", cmp.Diff(want, narrow))
	}
	// The JSON of both is derived from the values, as before.
	j := string(AppendPropertyList(nil, JSON, ps, full))
	for _, s := range []string{`"latitude":""`, `"suburb":"Café Row"`, `"description":"Views \u0026amp; more \u0026lt;3\u003cbr\u003e\u003c/br\u003eLine two \u0026amp; \"more\""`} {
		if !strings.Contains(j, s) {
			t.Errorf("JSON lacks %s:\n%s", s, j)
		}
	}
}

// TestPassThroughNotAsWritten: what cannot be given back as written is
// written as the writers write it, and only that part: a text with an HTML
// entity (not XML's own), a record longer than MaxRawRecord, a list whose
// records are separated by more than whitespace.
func TestPassThroughNotAsWritten(t *testing.T) {
	full := Options{Detail: normalize.Full, Prices: true, Unknown: true}
	doc := "<property id=\"1\" last_updated=\"Tue Nov 3 09:05:00 +1000 2026\">\n\t<suburb>Caf&eacute;</suburb>\n\t<area></area>\n</property>\n"
	d := NewRawDecoder(strings.NewReader(doc))
	d.Entity = xml.HTMLEntity // as upstream/crm's decoder
	p, err := ReadProperty(d, time.UTC, ReadOptions{Keep: true})
	if err != nil {
		t.Fatal(err)
	}
	want := "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<property id=\"1\" last_updated=\"Tue Nov 3 09:05:00 +1000 2026\">\n\t<suburb>Café</suburb>\n\t<area></area>\n</property>\n"
	if got := string(AppendProperty(nil, XML, &p, full)); got != want {
		t.Errorf("HTML entity (-want +got):\n%s", cmp.Diff(want, got))
	}

	long := strings.Repeat("x", MaxRawRecord)
	doc = "<properties count=\"1\">\n\t<property id=\"1\"><description>" + long + "</description><area></area></property>\n</properties>\n"
	ps := readRawList(t, doc)
	got := string(AppendPropertyList(nil, XML, ps, full))
	want = "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<properties count=\"1\">\n\t<property id=\"1\"><description>" + long + "</description><area/></property>\n</properties>\n"
	if got != want {
		t.Errorf("record over MaxRawRecord: got %d bytes, want %d: %.200q", len(got), len(want), got)
	}

	doc = "<properties count=\"2\">\n\t<property id=\"1\"></property>\n\t<page>1</page>\n\t<property id=\"2\"></property>\n</properties>\n"
	got = string(AppendPropertyList(nil, XML, readRawList(t, doc), full))
	want = "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<properties count=\"2\">\n\t<property id=\"1\"></property>\n  <property id=\"2\"></property>\n</properties>\n"
	if got != want {
		t.Errorf("list with an element between records (-want +got):\n%s", cmp.Diff(want, got))
	}
}

// TestRecorderOffsets: the Recorder under an xml.Decoder gives back, for
// the decoder's offsets, the bytes of each token as written, over reads of
// any size, and keeps no more than it is asked to.
func TestRecorderOffsets(t *testing.T) {
	doc := asWrittenList
	d := NewRawDecoder(&oneByteReader{r: strings.NewReader(doc)})
	var b strings.Builder
	for {
		from := d.InputOffset()
		d.Recorder().Mark(from)
		if _, err := d.Token(); err != nil {
			break
		}
		b.Write(d.Recorder().Bytes(from, d.InputOffset()))
	}
	if b.String() != doc {
		t.Errorf("tokens as written (-doc +got):\n%s", cmp.Diff(doc, b.String()))
	}
	rec := NewRecorder(bytes.NewReader(make([]byte, 1<<20)))
	rec.Unmark()
	for range 1 << 20 {
		if _, err := rec.ReadByte(); err != nil {
			t.Fatal(err)
		}
	}
	if cap(rec.buf) > 8192 {
		t.Errorf("unmarked recorder grew to %d bytes", cap(rec.buf))
	}
}

type oneByteReader struct{ r *strings.Reader }

func (o *oneByteReader) Read(p []byte) (int, error) { return o.r.Read(p[:min(1, len(p))]) }

// convertingDecoder is a RawTokens source like upstream/crm's: its
// Recorder turns nil once the declaration names a charset it converts.
type convertingDecoder struct{ *RawDecoder }

func newConvertingDecoder(doc string) *convertingDecoder {
	d := &convertingDecoder{NewRawDecoder(strings.NewReader(doc))}
	d.CharsetReader = func(charset string, input io.Reader) (io.Reader, error) {
		d.rec.Disable()
		b, err := io.ReadAll(input)
		var u []byte
		for _, c := range b { // ISO-8859-1: each byte is its code point
			u = utf8.AppendRune(u, rune(c))
		}
		return bytes.NewReader(u), err
	}
	return d
}

func (d *convertingDecoder) Recorder() *Recorder {
	if d.rec.Disabled() {
		return nil
	}
	return d.rec
}

// TestRecorderGoneAfterDeclaration: a source whose Recorder is gone once
// the declaration is read (a declared charset converted under it) is read
// as a tree, every reader and shape alike, and written by the writers'
// rules: a list, a single record, an error document, a whole document.
func TestRecorderGoneAfterDeclaration(t *testing.T) {
	const decl = `<?xml version="1.0" encoding="ISO-8859-1"?>` + "\n"
	const rec = "<property id=\"1\" last_updated=\"Tue Nov 3 09:05:00 +1000 2026\"><suburb>Caf\xe9</suburb></property>"
	full := Options{Detail: normalize.Full, Prices: true, Unknown: true}

	ps, err := ReadPropertyList(newConvertingDecoder(decl+"<properties count=\"1\">"+rec+"</properties>"), time.UTC, true, 10, ReadOptions{Keep: true})
	if err != nil {
		t.Fatal(err)
	}
	want := "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<properties count=\"1\">\n  <property id=\"1\" last_updated=\"Tue Nov 3 09:05:00 +1000 2026\"><suburb>Café</suburb></property>\n</properties>\n"
	if got := string(AppendPropertyList(nil, XML, ps, full)); got != want {
		t.Errorf("list (-want +got):\n%s", cmp.Diff(want, got))
	}
	p, err := ReadProperty(newConvertingDecoder(decl+rec), time.UTC, ReadOptions{Keep: true})
	if err != nil {
		t.Fatal(err)
	}
	want = "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<property id=\"1\" last_updated=\"Tue Nov 3 09:05:00 +1000 2026\"><suburb>Café</suburb></property>\n"
	if got := string(AppendProperty(nil, XML, &p, full)); got != want {
		t.Errorf("single (-want +got):\n%s", cmp.Diff(want, got))
	}
	if _, err := ReadProperty(newConvertingDecoder(decl+"<error>Caf\xe9 not found</error>"), time.UTC, ReadOptions{Keep: true}); !errors.Is(err, upstream.ErrNotFound) {
		t.Errorf("error document: %v, want not found", err)
	}
	doc, err := ReadDocument(newConvertingDecoder(decl + rec))
	if err != nil {
		t.Fatal(err)
	}
	if got := string(AppendDocumentXML(nil, doc)); !strings.Contains(got, "<suburb>Café</suburb>") {
		t.Errorf("document: %s", got)
	}
}

// TestOneDeclaration: whitespace or a byte order mark before the legacy's
// declaration never makes a second declaration (nor a declaration that is
// not the first bytes) in what is sent, for a list and a single record; a
// declaration XML does not allow (<?xml?>, without a version) is replaced by
// ours; a processing instruction named xml-something is no declaration.
func TestOneDeclaration(t *testing.T) {
	for _, tc := range []struct{ prolog, want string }{
		{"<?xml?>\n", `<?xml version="1.0" encoding="UTF-8"?>` + "\n"},
		{"<?xml-stylesheet href=\"s.xsl\"?>\n", `<?xml version="1.0" encoding="UTF-8"?>` + "\n<?xml-stylesheet href=\"s.xsl\"?>\n"},
		{"0<?xml ?>", `<?xml version="1.0" encoding="UTF-8"?>` + "\n"},                                      // text before the root
		{"<?xml version=\"1.0\"?><?xml version=\"1.0\"?>", `<?xml version="1.0" encoding="UTF-8"?>` + "\n"}, // a second declaration
		{"<?xml version=\"1.0\"?>\n<!DOCTYPE properties [<!ENTITY a \"b\">]>\n<!-- c -->\n", "<?xml version=\"1.0\"?>\n<!DOCTYPE properties [<!ENTITY a \"b\">]>\n<!-- c -->\n"},
	} {
		ps := readRawList(t, tc.prolog+"<properties count=\"1\"><property id=\"1\"/></properties>\n")
		got := string(AppendPropertyList(nil, XML, ps, Options{Detail: normalize.Full, Prices: true, Unknown: true}))
		if want := tc.want + "<properties count=\"1\"><property id=\"1\"/></properties>\n"; got != want {
			t.Errorf("prolog %q (-want +got):\n%s", tc.prolog, cmp.Diff(want, got))
		}
	}
	full := Options{Detail: normalize.Full, Prices: true, Unknown: true}
	const decl = `<?xml version="1.0" encoding="UTF-8"?>`
	const rec = "<property id=\"1\" last_updated=\"Tue Nov 3 09:05:00 +1000 2026\"><suburb>Bondi</suburb></property>"
	for _, lead := range []string{"", "\n", "  \r\n\t", "\xef\xbb\xbf", "\xef\xbb\xbf\n "} {
		list := lead + decl + "\n<!-- c -->\n<properties count=\"1\">\n  " + rec + "\n</properties>\n"
		ps := readRawList(t, list)
		wantList := decl + "\n<!-- c -->\n<properties count=\"1\">\n  " + rec + "\n</properties>\n"
		if got := string(AppendPropertyList(nil, XML, ps, full)); got != wantList {
			t.Errorf("list after %q (-want +got):\n%s", lead, cmp.Diff(wantList, got))
		}
		p, err := ReadProperty(NewRawDecoder(strings.NewReader(lead+decl+"\n"+rec+"\n")), time.UTC, ReadOptions{Keep: true})
		if err != nil {
			t.Fatal(err)
		}
		for _, o := range []Options{full, {Detail: normalize.Full}} {
			got := string(AppendProperty(nil, XML, &p, o))
			if !strings.HasPrefix(got, decl+"\n") || strings.Count(got, "<?xml") != 1 {
				t.Errorf("single after %q, unknown %v: want one declaration first:\n%s", lead, o.Unknown, got)
			}
		}
	}
}

// TestAttributeWhitespace: a literal tab or line end inside an attribute
// value is a space (XML's attribute-value normalisation), a character
// reference to one is that character; the XML and the JSON of one answer
// carry the same value, whether the start tag passes as written (a caller
// with the upstream user's permissions) or is written anew (a narrower
// caller: an unknown attribute removed). The model reads the same value.
func TestAttributeWhitespace(t *testing.T) {
	const rec = "<property id=\"1\" last_updated=\"Tue Nov 3 09:05:00 +1000 2026\">" +
		"<photos count=\"1\"><photo type=\"Normal\" caption=\"Front\tview\r\nat\ndusk\" position=\"1\" thumbnail=\"t.jpg\" width=\"1\">a.jpg</photo>" +
		"<photo type=\"Normal\" caption=\"tab&#9;ref&#xA;line\" position=\"2\" thumbnail=\"t2.jpg\" width=\"2\">b.jpg</photo></photos></property>"
	doc := "<properties count=\"1\">\n  " + rec + "\n</properties>\n"
	ps := readRawList(t, doc)
	if got := ps[0].Photos[0].Caption; got != "Front view at dusk" {
		t.Errorf("model caption %q, want %q", got, "Front view at dusk")
	}
	if got := ps[0].Photos[1].Caption; got != "tab\tref\nline" {
		t.Errorf("model caption %q, want %q", got, "tab\tref\nline")
	}
	wantJSON := []string{`"caption":"Front view at dusk"`, `"caption":"tab\tref\nline"`}
	for _, c := range []struct {
		name    string
		o       Options
		wantXML []string
	}{
		{"as written", Options{Detail: normalize.Full, Prices: true, Unknown: true},
			[]string{"caption=\"Front\tview\r\nat\ndusk\"", `caption="tab&#9;ref&#xA;line"`}},
		{"written anew", Options{Detail: normalize.Full},
			[]string{`caption="Front view at dusk"`, `caption="tab&#x9;ref&#xA;line"`}},
	} {
		x := string(AppendPropertyList(nil, XML, ps, c.o))
		for _, w := range c.wantXML {
			if !strings.Contains(x, w) {
				t.Errorf("%s: XML lacks %s:\n%s", c.name, w, x)
			}
		}
		j := string(AppendPropertyList(nil, JSON, ps, c.o))
		for _, w := range wantJSON {
			if !strings.Contains(j, w) {
				t.Errorf("%s: JSON lacks %s:\n%s", c.name, w, j)
			}
		}
	}
}

// TestLocalPaging: a list answer with more records than its limit (a
// legacy that ignores limit and offset) is paged here: the records of
// [offset, offset+limit) are kept, in order, the count is theirs, and
// Paged is told how many the answer held; an answer within its limit is
// the page already (its offset applied by the legacy) and is kept whole.
func TestLocalPaging(t *testing.T) {
	var recs strings.Builder
	for i := range 10 {
		recs.WriteString("\n\t<property id=\"" + strconv.Itoa(i+1) + "\" last_updated=\"Tue Nov 3 09:05:00 +1000 2026\"><status>CURRENT</status></property>")
	}
	doc := "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<properties count=\"10\">" + recs.String() + "\n</properties>\n"
	for _, tc := range []struct {
		limit, offset int
		want          []int64
		paged         int
	}{
		{3, 0, []int64{1, 2, 3}, 10},
		{3, 4, []int64{5, 6, 7}, 10},
		{3, 8, []int64{9, 10}, 10},
		{3, 10, nil, 10},
		{5, 2, []int64{3, 4, 5, 6, 7}, 10},
		{10, 4, []int64{1, 2, 3, 4, 5, 6, 7, 8, 9, 10}, 0}, // within the limit: the legacy's own page
	} {
		for _, keep := range []bool{false, true} {
			paged := 0
			ps, err := ReadPropertyList(NewRawDecoder(strings.NewReader(doc)), time.UTC, true, tc.limit,
				ReadOptions{Keep: keep, Offset: tc.offset, Paged: func(n int) { paged = n }})
			if err != nil {
				t.Fatal(err)
			}
			var got []int64
			for _, p := range ps {
				got = append(got, p.ID)
			}
			if !slices.Equal(got, tc.want) || paged != tc.paged {
				t.Errorf("limit %d offset %d keep %v: ids %v, paged %d; want %v, %d", tc.limit, tc.offset, keep, got, paged, tc.want, tc.paged)
			}
			if !keep || len(ps) == 0 {
				continue
			}
			for _, o := range []Options{{Detail: normalize.Full, Prices: true, Unknown: true}, {Detail: normalize.Full}, {}} {
				x := AppendPropertyList(nil, XML, ps, o)
				if !strings.Contains(string(x), `<properties count="`+strconv.Itoa(len(tc.want))+`">`) || strings.Count(string(x), "<property ") != len(tc.want) {
					t.Errorf("limit %d offset %d: XML:\n%s", tc.limit, tc.offset, x)
				}
				if err := xml.Unmarshal(x, new(struct{})); err != nil {
					t.Errorf("limit %d offset %d: not well-formed: %v\n%s", tc.limit, tc.offset, err, x)
				}
			}
		}
	}
}

// TestLocalPagingAgents: an agent list is paged as a property list is.
func TestLocalPagingAgents(t *testing.T) {
	var recs strings.Builder
	for i := range 6 {
		recs.WriteString("<agent id=\"" + strconv.Itoa(i+1) + "\"><name>N</name></agent>")
	}
	paged := 0
	as, err := ReadAgentList(NewRawDecoder(strings.NewReader("<agents count=\"6\">"+recs.String()+"</agents>")), true, 2,
		ReadOptions{Keep: true, Offset: 3, Paged: func(n int) { paged = n }})
	if err != nil {
		t.Fatal(err)
	}
	if len(as) != 2 || as[0].ID != 4 || as[1].ID != 5 || paged != 6 {
		t.Errorf("agents %+v, paged %d; want 4 and 5, 6", as, paged)
	}
	if got := string(AppendAgentList(nil, JSON, as, Options{Detail: normalize.Full})); !strings.HasPrefix(got, `{"agents":{"count":"2","agent":[{"id":"4"`) {
		t.Errorf("JSON %s", got)
	}
}
