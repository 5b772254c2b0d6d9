package wire

import (
	"bytes"
	"encoding/xml"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
)

// passLevels are the callers of the legacy golden files: the upstream
// user's permissions (full, prices) see everything; a caller without
// prices sees neither raw prices nor unknown elements, unless the tenant's
// extra_fields names them.
var passLevels = []struct {
	name string
	o    PassOptions
}{
	{"full_prices", PassOptions{Full: true, Prices: true, Unknown: true}},
	{"full", PassOptions{Full: true}},
	{"full_extra", PassOptions{Full: true, Extra: map[string]bool{"garages": true, "videos": true, "video": true}}},
}

// TestLegacyGolden passes hand-written legacy documents (testdata/legacy,
// with the quirks of real old endpoints: decimals as written, a +1000
// last_updated with an unpadded day, double spaces, <br/> in a
// description, unknown elements and attributes, an empty latitude, a
// bedrooms of "3+", an approved with a time, an ended open home, a wrong
// count) through Filter for each caller and compares the XML and JSON with
// golden files (-update rewrites them; check them by eye).
func TestLegacyGolden(t *testing.T) {
	brisbane, err := time.LoadLocation("Australia/Brisbane")
	if err != nil {
		t.Fatal(err)
	}
	now := time.Date(2026, 11, 20, 12, 0, 0, 0, brisbane)
	inputs, err := filepath.Glob("testdata/legacy/*_full.xml")
	if err != nil || len(inputs) == 0 {
		t.Fatalf("no legacy fixtures: %v", err)
	}
	for _, in := range inputs {
		src, err := os.ReadFile(in)
		if err != nil {
			t.Fatal(err)
		}
		base := strings.TrimSuffix(in, "_full.xml")
		for _, lv := range passLevels {
			t.Run(filepath.Base(base)+"/"+lv.name, func(t *testing.T) {
				doc := readDoc(t, src)
				o := lv.o
				o.Now, o.Location = now, brisbane
				Filter(doc, o, nil)
				gotXML := AppendDocumentXML(nil, doc)
				gotJSON, err := AppendDocumentJSON(nil, doc, true, Options{})
				if err != nil {
					t.Fatal(err)
				}
				for _, g := range []struct {
					ext string
					got []byte
				}{{"xml", gotXML}, {"json", gotJSON}} {
					path := base + "." + lv.name + "." + g.ext
					if *update {
						if err := os.WriteFile(path, g.got, 0o644); err != nil {
							t.Fatal(err)
						}
						continue
					}
					want, err := os.ReadFile(path)
					if err != nil {
						t.Fatalf("%v (run with -update)", err)
					}
					if diff := cmp.Diff(string(want), string(g.got)); diff != "" {
						t.Errorf("%s (-want +got):\n%s", path, diff)
					}
				}
				if !lv.o.Prices {
					for _, never := range []string{"price_from", "price_to", "homeviews", "width=", "lang=", "<fax>", `"fax"`} {
						if strings.Contains(string(gotXML), never) || strings.Contains(string(gotJSON), strings.Trim(never, "<>=")) {
							t.Errorf("a caller without prices sees %s", never)
						}
					}
				}
			})
		}
	}
}

// FuzzPassThroughFilter: whatever a legacy document holds, a caller without
// prices gets from Filter no raw price and no element or attribute the
// wire format does not name (inline markup inside a text excepted), unless
// extra_fields names it; and the filtered document reads back unchanged.
func FuzzPassThroughFilter(f *testing.F) {
	for _, name := range []string{"testdata/legacy/properties_full.xml", "testdata/legacy/agent_full.xml"} {
		b, err := os.ReadFile(name)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	f.Add([]byte(`<property id="1"><description>x<secret a="1">y<price_from>9</price_from></secret></description><photos><photo width="1"><videos/></photo></photos></property>`))
	f.Add([]byte("<property id=\"1\">\r\n\t<!-- note --><price_from>9</price_from>\r\n\t<area></area><description><![CDATA[a<b]]>&amp;&eacute;<br></br></description><?pi x?></property>"))
	f.Fuzz(func(t *testing.T, b []byte) {
		// Read as upstream/crm reads: each part kept as written, so the
		// writer gives back unchanged parts byte for byte.
		d := NewRawDecoder(bytes.NewReader(b))
		d.Entity = xml.HTMLEntity
		doc, err := ReadDocument(d)
		if err != nil {
			return
		}
		Filter(doc, PassOptions{Full: true, Extra: map[string]bool{"garages": true}}, nil)
		out := AppendDocumentXML(nil, doc)
		if bytes.Contains(out, []byte("<!--")) || bytes.Contains(out[1:], []byte("<?")) {
			t.Fatalf("a comment or processing instruction reached a caller without prices:\n%s", out)
		}
		again, err := ReadDocument(newTokens(out))
		if err != nil {
			t.Fatalf("filtered document does not read: %v\n%s", err, out)
		}
		if diff := cmp.Diff(doc, again, cmpopts.EquateEmpty(), cmpopts.IgnoreUnexported(Element{}, Node{}, Document{})); diff != "" {
			t.Fatalf("filtered document reads back differently (-written +read):\n%s", diff)
		}
		records := []*Element{doc.Root}
		if item, ok := containers[doc.Root.Name]; ok {
			records = doc.Root.Elements(item)
		}
		// In a record, its containers and their items ("structural"), a
		// child is a value: a known element with known attributes. Inside
		// a value is text: inline markup only, without attributes.
		var check func(e *Element, known map[string]bool, structural, inText bool)
		check = func(e *Element, known map[string]bool, structural, inText bool) {
			for _, a := range e.Attrs {
				if inText || !knownAttrs[a.Name.Local] {
					t.Fatalf("attribute %s=%q of <%s> reached a caller without prices:\n%s", a.Name.Local, a.Value, e.Name, out)
				}
			}
			for _, k := range e.Elements("") {
				switch {
				case k.Name == "price_from" || k.Name == "price_to":
					t.Fatalf("<%s> reached a caller without prices:\n%s", k.Name, out)
				case structural && k.Name == "garages":
					continue // extra_fields
				case structural && !known[k.Name], !structural && !markupTags[k.Name]:
					t.Fatalf("<%s> inside <%s> reached a caller without prices:\n%s", k.Name, e.Name, out)
				}
				_, container := containers[k.Name]
				kStructural := structural && (container || items[k.Name])
				check(k, known, kStructural, inText || !structural)
			}
		}
		for _, r := range records {
			switch r.Name {
			case "property":
				check(r, knownPropertyElems, true, false)
			case "agent":
				check(r, knownAgentElems, true, false)
			}
		}
	})
}
