package crm

import (
	"bytes"
	"context"
	"encoding/json"
	"encoding/xml"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"golang.org/x/text/encoding/charmap"
	"golang.org/x/text/encoding/unicode"

	"listingproxy/normalize"
	"listingproxy/upstream"
	"listingproxy/wire"
)

// encodeAs returns the document doc (UTF-8, with encName standing for its
// declared encoding) in encoding enc: "utf-8", "iso-8859-1",
// "windows-1252", "utf-16le", "utf-16be". Letters the charset lacks are
// written as character references, as a legacy would.
func encodeAs(doc, enc string) []byte {
	doc = strings.ReplaceAll(doc, "ENC", enc)
	switch enc {
	case "iso-8859-1", "windows-1252":
		cm := charmap.ISO8859_1
		if enc == "windows-1252" {
			cm = charmap.Windows1252
		}
		var b []byte
		if rest, ok := strings.CutPrefix(doc, "\ufeff"); ok { // a UTF-8 byte order mark before the declaration, as some scripts write
			b, doc = []byte("\xef\xbb\xbf"), rest
		}
		for _, r := range doc {
			if c, ok := cm.EncodeRune(r); ok {
				b = append(b, c)
			} else {
				b = append(b, "&#"+itoa(int(r))+";"...)
			}
		}
		return b
	case "utf-16le", "utf-16be":
		e := unicode.UTF16(unicode.LittleEndian, unicode.IgnoreBOM)
		if enc == "utf-16be" {
			e = unicode.UTF16(unicode.BigEndian, unicode.IgnoreBOM)
		}
		b, err := e.NewEncoder().Bytes([]byte(doc)) // a leading U+FEFF is the byte order mark
		if err != nil {
			panic(err)
		}
		return b
	}
	return []byte(doc)
}

func itoa(n int) string {
	var b []byte
	for ; n > 0 || len(b) == 0; n /= 10 {
		b = append([]byte{byte('0' + n%10)}, b...)
	}
	return string(b)
}

// legacySeeds are the classes of legacy documents: every encoding the CRM
// decodes, each with every document feature (a byte order mark,
// whitespace before the declaration, CDATA, entities XML defines, HTML
// entities, character references, comments, unknown elements and
// attributes, attribute values with tabs and newlines, XML 1.1, a
// namespace), as a list and as a single record.
func legacySeeds() [][]byte {
	const record = `<property id="21" last_updated="Tue Nov 03 10:00:00 +1300 2026">
	<agency_id>SU-NZ-21</agency_id>
	<address display="true" note="a	b
c">7 Café Street</address>
	<price>€650,000 © &amp; Co</price>
	<price_from>650000.00</price_from>
	<suburb>Mangere &#233; &nbsp;</suburb>
	<!-- staff note -->
	<description><![CDATA[Near the café <b>bold</b>]]><br/>Line two</description>
	<garages>2</garages>
	<photos count="1"><photo type="Normal" caption="Zoë's" position="1" thumbnail="t.jpg" width="1024">1.jpg</photo></photos>
	<agents count="1"><agent id="5">Zoë</agent></agents>
	<openhomes count="0"/>
</property>`
	var seeds [][]byte
	for _, enc := range []string{"utf-8", "iso-8859-1", "windows-1252", "utf-16le", "utf-16be"} {
		for _, prolog := range []string{
			`<?xml version="1.0" encoding="ENC"?>` + "\n",
			"\ufeff" + `<?xml version="1.0" encoding="ENC"?>` + "\n",
			"\n  " + `<?xml version='1.0' encoding='ENC'?>` + "\r\n<!-- ListingCRM -->\r\n",
			`<?xml version="1.1" encoding="ENC"?>` + "\n",
			"",
		} {
			if prolog == "" && enc != "utf-8" && !strings.HasPrefix(enc, "utf-16") {
				continue // a single-byte charset needs its declaration
			}
			if strings.HasPrefix(enc, "utf-16") && !strings.HasPrefix(prolog, "\ufeff") && !strings.HasPrefix(prolog, "<?xml") {
				continue // UTF-16 needs a byte order mark or "<?" first
			}
			seeds = append(seeds,
				encodeAs(prolog+"<properties count=\"1\">\n\t"+record+"\n</properties>\n", enc),
				encodeAs(prolog+record+"\n", enc),
				encodeAs(prolog+`<properties xmlns="urn:crm" count="1">`+record+"</properties>", enc))
		}
	}
	return seeds
}

// readLegacy reads body through the adapter's decoder as a property list,
// or, when its root is a property, as a single property.
func readLegacy(body []byte) ([]upstream.Property, error) {
	lim := limits{maxBytes: 1 << 20, maxElements: 10_000, maxDepth: 64}
	ps, err := wire.ReadPropertyList(newBoundedDecoder(context.Background(), bytes.NewReader(body), lim, nil), time.UTC, true, 100, wire.ReadOptions{Keep: true})
	if err == nil {
		return ps, nil
	}
	p, err := wire.ReadProperty(newBoundedDecoder(context.Background(), bytes.NewReader(body), lim, nil), time.UTC, wire.ReadOptions{Keep: true})
	if err != nil {
		return nil, err
	}
	return []upstream.Property{p}, nil
}

// FuzzLegacyAnswer: whatever a legacy sends, what the adapter reads is sent
// as well-formed UTF-8 XML 1.0 with one declaration, first, and as valid
// JSON, for a caller with the upstream user's permissions and for a
// narrower one; read again, the XML gives itself back (the proxy's answer
// is a fixed point). Seeds: legacySeeds, every encoding × feature.
func FuzzLegacyAnswer(f *testing.F) {
	for _, s := range legacySeeds() {
		f.Add(s)
	}
	classes, err := filepath.Glob("../../internal/legacyfixture/testdata/classes/au/*/*.xml")
	if err != nil || len(classes) == 0 {
		f.Fatalf("class corpus: %v", err)
	}
	for _, name := range append(classes, "../../internal/legacyfixture/testdata/classes/au/properties.xml") {
		b, err := os.ReadFile(name)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		ps, err := readLegacy(body)
		if err != nil {
			return
		}
		for _, o := range []wire.Options{
			{Detail: normalize.Full, Prices: true, Unknown: true},
			{Detail: normalize.Full},
			{Detail: normalize.Short},
		} {
			x := wire.AppendPropertyList(nil, wire.XML, ps, o)
			if !utf8.Valid(x) {
				t.Fatalf("XML is not UTF-8: %q", x)
			}
			if !bytes.HasPrefix(x, []byte("<?xml version=")) || bytes.Count(x, []byte("<?xml ")) != 1 {
				t.Fatalf("XML does not start with its one declaration:\n%s", x)
			}
			dec := xml.NewDecoder(bytes.NewReader(x)) // strict, no entities but XML's, no charset but UTF-8
			for {
				if _, err := dec.Token(); err == io.EOF {
					break
				} else if err != nil {
					t.Fatalf("XML is not well-formed: %v\n%s", err, x)
				}
			}
			if j := wire.AppendPropertyList(nil, wire.JSON, ps, o); !json.Valid(j) {
				t.Fatalf("JSON is not valid:\n%s", j)
			}
			again, err := readLegacy(x)
			if err != nil {
				t.Fatalf("our XML does not read again: %v\n%s", err, x)
			}
			if y := wire.AppendPropertyList(nil, wire.XML, again, o); !bytes.Equal(x, y) {
				t.Fatalf("read again, the XML changes:\n%s\n----\n%s", x, y)
			}
		}
	})
}

// TestLegacySeedsRead: every class of FuzzLegacyAnswer's seeds is read
// (none fails as malformed), and its texts are the letters written in
// whatever encoding.
func TestLegacySeedsRead(t *testing.T) {
	for i, s := range legacySeeds() {
		ps, err := readLegacy(s)
		if err != nil {
			t.Errorf("seed %d: %v\n%q", i, err, s)
			continue
		}
		if len(ps) != 1 || ps[0].StreetName != "Café Street" || ps[0].PriceText != "€650,000 © & Co" || ps[0].Suburb != "Mangere é" ||
			ps[0].Description != "Near the café <b>bold</b>Line two" || len(ps[0].Agents) != 1 || ps[0].Agents[0].Name != "Zoë" {
			t.Errorf("seed %d: %d records, street %q price %q suburb %q description %q agents %v\n%q", i, len(ps), ps[0].StreetName, ps[0].PriceText, ps[0].Suburb, ps[0].Description, ps[0].Agents, s)
		}
	}
}
