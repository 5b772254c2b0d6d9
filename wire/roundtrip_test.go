package wire

import (
	"bytes"
	"encoding/xml"
	"math"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"listingproxy/normalize"
	"listingproxy/upstream"
)

// newTokens reads doc as upstream/crm does, HTML entities included.
func newTokens(doc []byte) Tokens {
	d := xml.NewDecoder(bytes.NewReader(doc))
	d.Entity = xml.HTMLEntity
	return d
}

// renderRead renders ps as a full property list with prices, reads it back
// and renders what was read; it returns both renderings.
func renderRead(tb testing.TB, ps []upstream.Property, o Options) (first, second []byte) {
	tb.Helper()
	o.Detail, o.Prices = normalize.Full, true
	first = AppendPropertyList(nil, XML, ps, o)
	got, err := ReadPropertyList(newTokens(first), o.Location, true, len(ps))
	if err != nil {
		tb.Fatalf("reading our own document: %v\n%s", err, first)
	}
	return first, AppendPropertyList(nil, XML, got, o)
}

// TestRoundTrip: every document of the golden set reads back into records
// that render to the same bytes (render → read → render), in XML.
func TestRoundTrip(t *testing.T) {
	o := Options{Location: sydney(t)}
	t.Run("properties", func(t *testing.T) {
		first, second := renderRead(t, fixtureProperties(), o)
		if !bytes.Equal(first, second) {
			t.Errorf("render → read → render differs:\nfirst:\n%s\nsecond:\n%s", first, second)
		}
	})
	t.Run("property", func(t *testing.T) {
		p := fixtureProperties()[0]
		first := AppendProperty(nil, XML, &p, o)
		got, err := ReadProperty(newTokens(first), o.Location)
		if err != nil {
			t.Fatal(err)
		}
		if second := AppendProperty(nil, XML, &got, o); !bytes.Equal(first, second) {
			t.Errorf("render → read → render differs:\nfirst:\n%s\nsecond:\n%s", first, second)
		}
	})
	t.Run("agents", func(t *testing.T) {
		o := Options{Detail: normalize.Full, Location: o.Location}
		first := AppendAgentList(nil, XML, fixtureAgents(), o)
		got, err := ReadAgentList(newTokens(first), true, 3)
		if err != nil {
			t.Fatal(err)
		}
		if second := AppendAgentList(nil, XML, got, o); !bytes.Equal(first, second) {
			t.Errorf("render → read → render differs:\nfirst:\n%s\nsecond:\n%s", first, second)
		}
	})
}

// FuzzRoundTrip renders a property built from fuzzed values, reads it back
// and renders again: our own output always reads without error, and one
// round trip reaches a fixed point (a second one changes nothing). Values
// the format cannot carry (surrounding space, non-XML characters) may
// change on the first trip, never after.
func FuzzRoundTrip(f *testing.F) {
	f.Add("Tom & Jerry's <home>", "Bondi Beach", "Front view", "Jane Doe", "12", -33.8688, 151.2093, 3, 250.5, "1995")
	f.Add(" \u0001\u2028 ", "", "", "", "", 0.0, 0.0, -1, math.Inf(1), "")
	f.Add("Line one<br/>Line two", "Zoë", "\t", "Seán O'Brien", "3/45", 1e21, -1e-7, 0, 0.1, "1990s")
	f.Fuzz(func(t *testing.T, desc, suburb, caption, agent, number string, lat, lng float64, beds int, size float64, built string) {
		for _, s := range []string{desc, suburb, caption, agent, number, built} {
			if !utf8.ValidString(s) {
				return
			}
		}
		if math.IsNaN(lat) || math.IsInf(lat, 0) || math.IsNaN(lng) || math.IsInf(lng, 0) || math.IsNaN(size) || math.IsInf(size, 0) {
			return // no model value holds them: the reader refuses them
		}
		p := upstream.Property{
			ID: 1, StreetNumber: number, StreetName: suburb, Status: "CURRENT",
			Latitude: &lat, Longitude: &lng,
			Suburb: suburb, Description: desc, BuiltIn: built, Bedrooms: &beds, FloorSize: &size,
			PhotoCount: 1, Photos: []upstream.Media{{URL: "https://img.example/1.jpg", Caption: caption, Position: 1}},
			Agents: []upstream.AgentRef{{ID: 2, Name: agent}},
		}
		o := Options{Location: sydney(t)}
		_, second := renderRead(t, []upstream.Property{p}, o)
		got, err := ReadPropertyList(newTokens(second), o.Location, true, 1)
		if err != nil {
			t.Fatalf("reading a re-rendered document: %v\n%s", err, second)
		}
		o.Detail, o.Prices = normalize.Full, true
		if third := AppendPropertyList(nil, XML, got, o); !bytes.Equal(second, third) {
			t.Errorf("second round trip changed the document:\nsecond:\n%s\nthird:\n%s", second, third)
		}
	})
}

// TestMissingStaysMissing: empty coordinates, sizes and counts of a legacy
// document read as missing and render empty, never as 0.
func TestMissingStaysMissing(t *testing.T) {
	doc := `<?xml version="1.0" encoding="UTF-8"?>
<property id="9" last_updated="Fri Nov 20 09:30:00 +1100 2026">
  <address display="true">12 Smith Street</address>
  <status>CURRENT</status>
  <latitude/>
  <longitude></longitude>
  <price_from/>
  <bedrooms> </bedrooms>
  <bathrooms/>
  <floor_size/>
  <lot_size/>
</property>`
	p, err := ReadProperty(newTokens([]byte(doc)), time.UTC)
	if err != nil {
		t.Fatal(err)
	}
	got := string(AppendProperty(nil, XML, &p, Options{Prices: true}))
	for _, tag := range []string{"latitude", "longitude", "price_from", "bedrooms", "bathrooms", "floor_size", "lot_size"} {
		if w := "  <" + tag + "/>\n"; !strings.Contains(got, w) {
			t.Errorf("XML lacks %q:\n%s", w, got)
		}
	}
	gotJSON := string(AppendProperty(nil, JSON, &p, Options{Prices: true}))
	for _, w := range []string{`"latitude":""`, `"longitude":""`, `"bedrooms":""`, `"floor_size":""`} {
		if !strings.Contains(gotJSON, w) {
			t.Errorf("JSON lacks %s:\n%s", w, gotJSON)
		}
	}
}
