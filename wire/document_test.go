package wire

import (
	"bytes"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"listingproxy/normalize"
	"listingproxy/upstream"
)

func readDoc(tb testing.TB, b []byte) *Document {
	tb.Helper()
	doc, err := ReadDocument(newTokens(b))
	if err != nil {
		tb.Fatalf("ReadDocument: %v\n%s", err, b)
	}
	return doc
}

// TestDocumentMatchesWriters: a document our writers produced, read as a
// pass-through Document, filtered for each permission level and written
// again, is byte for byte what the writers produce for that level, in XML
// and JSON. So the pass-through path and the model path agree wherever the
// legacy sends what the spec names.
func TestDocumentMatchesWriters(t *testing.T) {
	loc := sydney(t)
	ps, as := fixtureProperties(), fixtureAgents()
	levels := []struct {
		name         string
		full, prices bool
		detail       normalize.Detail
	}{
		{"full,prices", true, true, normalize.Full},
		{"full", true, false, normalize.Full},
	}
	type doc struct {
		name   string
		render func(f Format, o Options) []byte
		full   bool // the legacy's answer is full detail
	}
	docs := []doc{
		{"property list", func(f Format, o Options) []byte { return AppendPropertyList(nil, f, ps, o) }, true},
		{"property", func(f Format, o Options) []byte { return AppendProperty(nil, f, &ps[0], o) }, true},
		{"agent list", func(f Format, o Options) []byte { return AppendAgentList(nil, f, as, o) }, true},
		{"agent", func(f Format, o Options) []byte { return AppendAgent(nil, f, &as[2], o) }, true},
		{"empty list", func(f Format, o Options) []byte { return AppendPropertyList(nil, f, nil, o) }, true},
	}
	for _, d := range docs {
		upstreamDoc := d.render(XML, Options{Detail: normalize.Full, Prices: true, Location: loc})
		for _, lv := range levels {
			t.Run(d.name+"/"+lv.name, func(t *testing.T) {
				o := Options{Detail: lv.detail, Prices: lv.prices, Location: loc}
				doc := readDoc(t, upstreamDoc)
				Filter(doc, PassOptions{Full: lv.full, Prices: lv.prices, Unknown: lv.prices}, noProblems(t))
				if got, want := AppendDocumentXML(nil, doc), d.render(XML, o); !bytes.Equal(got, want) {
					t.Errorf("XML (-want +got):\n%s", cmp.Diff(string(want), string(got)))
				}
				got, err := AppendDocumentJSON(nil, doc, true, Options{})
				if err != nil {
					t.Fatal(err)
				}
				// XML cannot carry control characters: the writers put
				// U+FFFD in XML, and so in a document read from it.
				want := []byte(strings.NewReplacer(`\u0001`, "\uFFFD", `\u0007`, "\uFFFD").Replace(string(d.render(JSON, o))))
				if !bytes.Equal(got, want) {
					t.Errorf("JSON (-want +got):\n%s", cmp.Diff(string(want), string(got)))
				}
			})
		}
	}
	// Short lists pass through as the legacy's short answer.
	for _, d := range []doc{
		{"short property list", func(f Format, o Options) []byte { return AppendPropertyList(nil, f, ps, o) }, false},
		{"short agent list", func(f Format, o Options) []byte { return AppendAgentList(nil, f, as, o) }, false},
	} {
		t.Run(d.name, func(t *testing.T) {
			o := Options{Location: loc}
			doc := readDoc(t, d.render(XML, o))
			Filter(doc, PassOptions{}, noProblems(t))
			if got, want := AppendDocumentXML(nil, doc), d.render(XML, o); !bytes.Equal(got, want) {
				t.Errorf("XML (-want +got):\n%s", cmp.Diff(string(want), string(got)))
			}
			got, err := AppendDocumentJSON(nil, doc, false, Options{})
			if err != nil {
				t.Fatal(err)
			}
			if want := d.render(JSON, o); !bytes.Equal(got, want) {
				t.Errorf("JSON (-want +got):\n%s", cmp.Diff(string(want), string(got)))
			}
		})
	}
	_ = upstream.Property{}
}
