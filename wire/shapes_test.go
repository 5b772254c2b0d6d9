package wire

import (
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"listingproxy/normalize"
	"listingproxy/upstream"
)

// messyProperty omits most elements, writes the rest out of the spec's
// order, repeats scalars (price, description), and has items that lack
// parts (a photo without its caption, type and thumbnail, an open home
// without its end, an address without display). It names nothing
// unknown, so the model path renders it too.
const messyProperty = `<property id="7" last_updated="Tue Nov 03 09:05:00 +1000 2026">
  <description>First</description>
  <price>$1</price>
  <agency_id>A-7</agency_id>
  <address>12 Smith Street</address>
  <price>$2</price>
  <photos count="1"><photo position="1">p.jpg</photo></photos>
  <description>Second</description>
  <agents count="1"><agent id="5">Jane</agent></agents>
</property>`

// messyAgent likewise: two phones, no website_url, no properties; and an
// agent property without its agency_id.
const messyAgent = `<agent id="9">
  <phone>1</phone>
  <name>N</name>
  <phone>2</phone>
  <description>D</description>
</agent>`

// TestRecordShapes: whatever a legacy record omits, repeats or reorders,
// its JSON has every key the spec names for the caller's detail level, in
// the spec's order, an omitted one in its empty form, a repeated scalar
// once (the first occurrence, as the model reads it), so it is byte for
// byte the JSON the writers make of the same record read into the model,
// for every caller; and its XML is the legacy's as written.
func TestRecordShapes(t *testing.T) {
	plus10 := time.FixedZone("", 10*3600)
	callers := []struct {
		name     string
		o        Options
		rec, agt string
	}{
		{"short", Options{Prices: true, Unknown: true, Location: plus10}, // a short answer: the legacy's short elements only
			`<property id="7" last_updated="Tue Nov 03 09:05:00 +1000 2026"><address>12 Smith Street</address><agency_id>A-7</agency_id><photos count="1"/></property>`,
			`<agent id="9"><name>N</name></agent>`},
		{"full", Options{Detail: normalize.Full, Location: plus10}, messyProperty, messyAgent},
		{"full, prices", Options{Detail: normalize.Full, Prices: true, Unknown: true, Location: plus10}, messyProperty, messyAgent},
	}
	list := func(name, rec string) string {
		return `<?xml version="1.0" encoding="UTF-8"?>` + "\n<" + name + " count=\"1\">\n  " + rec + "\n</" + name + ">\n"
	}
	for _, c := range callers {
		t.Run(c.name, func(t *testing.T) {
			full := c.o.Detail == normalize.Full
			ps, err := ReadPropertyList(NewRawDecoder(strings.NewReader(list("properties", c.rec))), time.UTC, full, 10, ReadOptions{Keep: true})
			if err != nil {
				t.Fatal(err)
			}
			as, err := ReadAgentList(NewRawDecoder(strings.NewReader(list("agents", c.agt))), full, 10, ReadOptions{Keep: true})
			if err != nil {
				t.Fatal(err)
			}
			model := func(ps []upstream.Property) []upstream.Property {
				out := append([]upstream.Property(nil), ps...)
				for i := range out {
					out[i].Legacy = nil
				}
				return out
			}(ps)
			if got, want := AppendPropertyList(nil, JSON, ps, c.o), AppendPropertyList(nil, JSON, model, c.o); string(got) != string(want) {
				t.Errorf("property list JSON (-writers +pass-through):\n%s", cmp.Diff(string(want), string(got)))
			}
			if got, want := AppendProperty(nil, JSON, &ps[0], c.o), AppendProperty(nil, JSON, &model[0], c.o); full && string(got) != string(want) {
				t.Errorf("property JSON (-writers +pass-through):\n%s", cmp.Diff(string(want), string(got)))
			}
			amodel := append([]upstream.Agent(nil), as...)
			amodel[0].Legacy = nil
			if got, want := AppendAgentList(nil, JSON, as, c.o), AppendAgentList(nil, JSON, amodel, c.o); string(got) != string(want) {
				t.Errorf("agent list JSON (-writers +pass-through):\n%s", cmp.Diff(string(want), string(got)))
			}
			if c.o.Unknown {
				if got, want := string(AppendPropertyList(nil, XML, ps, c.o)), list("properties", c.rec); got != want {
					t.Errorf("property list XML, not as written (-legacy +got):\n%s", cmp.Diff(want, got))
				}
			}
		})
	}
	full := Options{Detail: normalize.Full, Prices: true, Unknown: true}
	ps := readRawList(t, list("properties", messyProperty))
	as, err := ReadAgentList(NewRawDecoder(strings.NewReader(list("agents", messyAgent))), true, 10, ReadOptions{Keep: true})
	if err != nil {
		t.Fatal(err)
	}
	want := `{"property":{"id":"7","agency_id":"A-7","last_updated":"Tue Nov 03 09:05:00 +1000 2026","approved":"","address":{"display":"false","address":"12 Smith Street"},` +
		`"status":"","latitude":"","longitude":"","price":"$1","price_from":"","price_to":null,"category":"","property_type":"","suburb":"","area":"","region":"",` +
		`"bedrooms":"","bathrooms":"","floor_size":"","lot_size":"","built_in":"","description":"First",` +
		`"photos":{"count":"1","photo":[{"thumbnail":"","type":"","caption":"","position":"1","url":"p.jpg"}]},"virtualtours":{"count":"0","virtualtour":[]},` +
		`"floorplans":{"count":"0","floorplan":[]},"agents":{"count":"1","agent":[{"id":"5","name":"Jane"}]},"openhomes":{"count":"0","openhome":[]}}}` + "\n"
	if got := string(AppendProperty(nil, JSON, &ps[0], full)); got != want {
		t.Errorf("property (-want +got):\n%s", cmp.Diff(want, got))
	}
	want = `{"agent":{"id":"9","name":"N","username":"","phone":"1","after_hours_phone":"","mobile_phone":"","email":"","description":"D","photo":"","website_url":"",` +
		`"properties":{"count":"0","property":[]}}}` + "\n"
	if got := string(AppendAgent(nil, JSON, &as[0], full)); got != want {
		t.Errorf("agent (-want +got):\n%s", cmp.Diff(want, got))
	}
}

// TestRecordShapesUnknownLast: what the wire format does not name keeps
// its document order after the keys it names, at every level of a record
// (the record's attributes and elements, an item's attributes), and a
// repeated unknown element stays an array; missing parts of items are
// filled (an open home's end, an agent property's agency_id).
func TestRecordShapesUnknownLast(t *testing.T) {
	full := Options{Detail: normalize.Full, Prices: true, Unknown: true, Location: time.UTC}
	doc := `<property id="7" featured="yes" last_updated="Tue Nov 03 09:05:00 +1000 2026"><garages>2</garages><agency_id>A</agency_id>` +
		`<tag>a</tag><tag>b</tag><address display="true" lang="en">X</address>` +
		`<photos count="1"><photo width="9" url="no" caption="c" type="Normal" thumbnail="t" position="1">u</photo></photos>` +
		`<openhomes count="1"><openhome><start>2099-01-01 10:00:00</start></openhome></openhomes></property>`
	p, err := ReadProperty(NewRawDecoder(strings.NewReader(doc)), time.UTC, ReadOptions{Keep: true})
	if err != nil {
		t.Fatal(err)
	}
	want := `{"property":{"id":"7","agency_id":"A","last_updated":"Tue Nov 03 09:05:00 +1000 2026","approved":"","address":{"display":"true","address":"X","lang":"en"},` +
		`"status":"","latitude":"","longitude":"","price":"","price_from":"","price_to":null,"category":"","property_type":"","suburb":"","area":"","region":"",` +
		`"bedrooms":"","bathrooms":"","floor_size":"","lot_size":"","built_in":"","description":"",` +
		`"photos":{"count":"1","photo":[{"thumbnail":"t","type":"Normal","caption":"c","position":"1","url":"u","width":"9"}]},"virtualtours":{"count":"0","virtualtour":[]},` +
		`"floorplans":{"count":"0","floorplan":[]},"agents":{"count":"0","agent":[]},"openhomes":{"count":"1","openhome":{"start":"2099-01-01 10:00:00","end":""}},` +
		`"featured":"yes","garages":"2","tag":["a","b"]}}` + "\n"
	if got := string(AppendProperty(nil, JSON, &p, full)); got != want {
		t.Errorf("property (-want +got):\n%s", cmp.Diff(want, got))
	}

	doc = `<agent id="9"><name>N</name><properties count="1"><property id="1" last_updated="x"><address>A</address><note>n</note></property></properties></agent>`
	a, err := ReadAgent(NewRawDecoder(strings.NewReader(doc)), ReadOptions{Keep: true})
	if err != nil {
		t.Fatal(err)
	}
	want = `"properties":{"count":"1","property":[{"id":"1","last_updated":"x","address":"A","agency_id":"","note":"n"}]}}}` + "\n"
	if got := string(AppendAgent(nil, JSON, &a, full)); !strings.HasSuffix(got, want) {
		t.Errorf("agent: got\n%s\nwant it to end with\n%s", got, want)
	}
}
