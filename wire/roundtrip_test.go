package wire

import (
	"bytes"
	"encoding/xml"
	"math"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/google/go-cmp/cmp"

	"listingproxy/normalize"
	"listingproxy/upstream"
)

// newTokens reads doc as upstream/crm does, HTML entities included.
func newTokens(doc []byte) Tokens {
	d := xml.NewDecoder(bytes.NewReader(doc))
	d.Entity = xml.HTMLEntity
	return d
}

// noProblems fails tb on any problem: our own documents always read whole.
func noProblems(tb testing.TB) func(Problem) {
	return func(p Problem) {
		tb.Helper()
		tb.Errorf("problem reading our own document: %s", p)
	}
}

// renderRead renders ps as a full property list with prices, reads it back
// and renders what was read; it returns both renderings.
func renderRead(tb testing.TB, ps []upstream.Property, o Options) (first, second []byte) {
	tb.Helper()
	o.Detail, o.Prices = normalize.Full, true
	first = AppendPropertyList(nil, XML, ps, o)
	got, err := ReadPropertyList(newTokens(first), o.Location, true, len(ps), ReadOptions{Report: noProblems(tb)})
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
		got, err := ReadProperty(newTokens(first), o.Location, ReadOptions{Report: noProblems(t)})
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
		got, err := ReadAgentList(newTokens(first), true, 3, ReadOptions{Report: noProblems(t)})
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
		got, err := ReadPropertyList(newTokens(second), o.Location, true, 1, ReadOptions{Report: noProblems(t)})
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
	p, err := ReadProperty(newTokens([]byte(doc)), time.UTC, ReadOptions{Report: noProblems(t)})
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

// TestBadValuesKeepTheRecord: a value that cannot be read never fails a
// list. The record is kept without it (one whose id cannot be read is
// dropped) and every problem is reported; a date with a time is its date.
func TestBadValuesKeepTheRecord(t *testing.T) {
	doc := `<?xml version="1.0" encoding="UTF-8"?>
<properties count="4">
  <property id="1" last_updated="Fri Nov 20 09:30:00 +1100 2026">
    <status>CURRENT</status>
    <latitude>n/a</latitude>
    <bedrooms>3+</bedrooms>
    <approved>2024-03-01 10:00:00</approved>
    <photos count="many"><photo position="first">https://img.example/1.jpg</photo></photos>
    <agents><agent id="x">Nobody</agent><agent id="5">Jane</agent></agents>
    <openhomes><openhome><start>soon</start><end>2026-11-21 11:00:00</end></openhome></openhomes>
  </property>
  <property id="abc"><status>CURRENT</status></property>
  <property id="2" last_updated="yesterday"><approved>2024-13-45</approved></property>
</properties>`
	var got []string
	ps, err := ReadPropertyList(newTokens([]byte(doc)), time.UTC, true, 10, ReadOptions{Report: func(p Problem) { got = append(got, p.String()) }})
	if err != nil {
		t.Fatalf("one bad record failed the list: %v", err)
	}
	want := []string{
		`property "1": latitude "n/a": not a number`,
		`property "1": bedrooms "3+": not an integer`,
		`property "1": photo position "first": not an integer`,
		`property "1": agent id "x": not a service ID`,
		`property "1": openhome start "soon": want the form 2006-01-02 15:04:05`,
		`property "abc": id "abc": not a service ID`,
		`property "2": last_updated "yesterday": want the form Mon Jan 02 15:04:05 -0700 2006`,
		`property "2": approved "2024-13-45": want the form 2006-01-02`,
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("problems (-want +got):\n%s", diff)
	}
	if len(ps) != 2 || ps[0].ID != 1 || ps[1].ID != 2 {
		t.Fatalf("got %d properties, want ids 1 and 2: %+v", len(ps), ps)
	}
	p := ps[0]
	if p.Latitude != nil || p.Bedrooms != nil {
		t.Errorf("unreadable latitude, bedrooms = %v, %v, want missing", p.Latitude, p.Bedrooms)
	}
	if got, want := p.Approved, time.Date(2024, 3, 1, 0, 0, 0, 0, time.UTC); !got.Equal(want) {
		t.Errorf("approved = %v, want %v", got, want)
	}
	if p.PhotoCount != 1 || len(p.Agents) != 1 || p.Agents[0].ID != 5 || len(p.OpenHomes) != 0 {
		t.Errorf("photos %d, agents %+v, open homes %+v: want 1 photo, agent 5, no open home", p.PhotoCount, p.Agents, p.OpenHomes)
	}
}
