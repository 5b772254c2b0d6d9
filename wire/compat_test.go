package wire

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"listingproxy/normalize"
	"listingproxy/upstream"
)

// TestSingleObject: with the compatibility switch, every JSON collection of
// exactly one item is that object; collections of 0 or 2+ items stay
// arrays, and without the switch every collection is an array.
func TestSingleObject(t *testing.T) {
	one := upstream.Property{
		ID: 1, PhotoCount: 1, Photos: []upstream.Media{{URL: "u", Position: 1}},
		FloorplanCount: 2, Floorplans: []upstream.Media{{URL: "a", Position: 1}, {URL: "b", Position: 2}},
		Agents: []upstream.AgentRef{{ID: 5, Name: "Jane"}},
	}
	kinds := func(doc []byte) map[string]string {
		var v struct {
			Properties struct {
				Property json.RawMessage
			}
		}
		if err := json.Unmarshal(doc, &v); err != nil {
			t.Fatalf("%v\n%s", err, doc)
		}
		kind := func(raw json.RawMessage) string {
			if len(raw) > 0 && raw[0] == '[' {
				return "array"
			}
			return "object"
		}
		out := map[string]string{"property": kind(v.Properties.Property)}
		if out["property"] == "object" {
			var p struct {
				Photos       struct{ Photo json.RawMessage }
				Virtualtours struct{ Virtualtour json.RawMessage }
				Floorplans   struct{ Floorplan json.RawMessage }
				Agents       struct{ Agent json.RawMessage }
			}
			if err := json.Unmarshal(v.Properties.Property, &p); err != nil {
				t.Fatal(err)
			}
			out["photo"], out["virtualtour"] = kind(p.Photos.Photo), kind(p.Virtualtours.Virtualtour)
			out["floorplan"], out["agent"] = kind(p.Floorplans.Floorplan), kind(p.Agents.Agent)
		}
		return out
	}
	o := Options{Detail: normalize.Full, SingleObject: true}
	got := kinds(AppendPropertyList(nil, JSON, []upstream.Property{one}, o))
	want := map[string]string{"property": "object", "photo": "object", "virtualtour": "array", "floorplan": "array", "agent": "object"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("one property with the switch (-want +got):\n%s", diff)
	}
	if got := kinds(AppendPropertyList(nil, JSON, []upstream.Property{one, one}, o)); got["property"] != "array" {
		t.Errorf("two properties with the switch: %v, want an array", got)
	}
	o.SingleObject = false
	if got := kinds(AppendPropertyList(nil, JSON, []upstream.Property{one}, o)); got["property"] != "array" {
		t.Errorf("one property without the switch: %v, want an array", got)
	}
	// Agents: the list and an agent's properties.
	a := upstream.Agent{ID: 5, PropertyCount: 1, Properties: []upstream.PropertyRef{{ID: 1}}}
	doc := string(AppendAgentList(nil, JSON, []upstream.Agent{a}, Options{Detail: normalize.Full, SingleObject: true}))
	if want := `{"agents":{"count":"1","agent":{"id":"5",`; doc[:len(want)] != want {
		t.Errorf("agent list with the switch: %s, want it to start with %s", doc, want)
	}
	var v any
	if err := json.Unmarshal([]byte(doc), &v); err != nil {
		t.Errorf("agent list with the switch is not JSON: %v\n%s", err, doc)
	}
	prop := v.(map[string]any)["agents"].(map[string]any)["agent"].(map[string]any)["properties"].(map[string]any)["property"]
	if _, ok := prop.(map[string]any); !ok {
		t.Errorf("agent's one property with the switch: %T, want an object", prop)
	}
	// XML is the same either way.
	if a, b := AppendPropertyList(nil, XML, []upstream.Property{one}, o), AppendPropertyList(nil, XML, []upstream.Property{one}, Options{Detail: normalize.Full, SingleObject: true}); string(a) != string(b) {
		t.Errorf("the switch changed XML")
	}
}

// TestSingleObjectItems: the single-object switch limited to properties
// (a client that reads one listing as an object but loops over its photos)
// leaves every other collection of one item an array, on the model path
// and on the pass-through path alike.
func TestSingleObjectItems(t *testing.T) {
	one := upstream.Property{ID: 1, PhotoCount: 1, Photos: []upstream.Media{{URL: "u", Position: 1}},
		Agents: []upstream.AgentRef{{ID: 5, Name: "Jane"}}}
	o := Options{Detail: normalize.Full, Prices: true, SingleObjectItems: map[string]bool{"property": true}}
	model := AppendPropertyList(nil, JSON, []upstream.Property{one}, o)
	for _, want := range []string{`"count":"1","property":{"id":"1",`, `"photo":[{"thumbnail"`, `"agent":[{"id":"5"`} {
		if !strings.Contains(string(model), want) {
			t.Errorf("single_object [property]: lacks %s\n%s", want, model)
		}
	}
	doc := readDoc(t, AppendPropertyList(nil, XML, []upstream.Property{one}, Options{Detail: normalize.Full, Prices: true}))
	passed, err := AppendDocumentJSON(nil, doc, true, o)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(string(model), string(passed)); diff != "" {
		t.Errorf("pass-through differs from the model path (-model +passed):\n%s", diff)
	}
	if two := AppendPropertyList(nil, JSON, []upstream.Property{one, one}, o); !strings.Contains(string(two), `"property":[{`) {
		t.Errorf("two properties: not an array\n%s", two)
	}
}

// TestNumericIDs: with the switch every id is a JSON number, on the model
// path and the pass-through path alike; a legacy id that is not a whole
// number stays a string, so the document is still JSON; without the
// switch ids are strings.
func TestNumericIDs(t *testing.T) {
	loc := sydney(t)
	ps, as := fixtureProperties(), fixtureAgents()
	o := Options{Detail: normalize.Full, Prices: true, Location: loc, NumericIDs: true}
	docs := map[string]func(Format, Options) []byte{
		"property list": func(f Format, o Options) []byte { return AppendPropertyList(nil, f, ps, o) },
		"agent list":    func(f Format, o Options) []byte { return AppendAgentList(nil, f, as, o) },
		"agent":         func(f Format, o Options) []byte { return AppendAgent(nil, f, &as[2], o) },
	}
	for name, render := range docs {
		model := render(JSON, o)
		var v any
		if err := json.Unmarshal(model, &v); err != nil {
			t.Fatalf("%s: not JSON: %v\n%s", name, err, model)
		}
		ids := 0
		var walk func(any)
		walk = func(v any) {
			switch v := v.(type) {
			case map[string]any:
				for k, x := range v {
					if k == "id" {
						ids++
						if _, ok := x.(float64); !ok {
							t.Errorf("%s: id %v is %T, want a number", name, x, x)
						}
					}
					walk(x)
				}
			case []any:
				for _, x := range v {
					walk(x)
				}
			}
		}
		walk(v)
		if ids < 2 {
			t.Errorf("%s: %d ids seen, want the records' and their references'", name, ids)
		}
		passed, err := AppendDocumentJSON(nil, readDoc(t, render(XML, Options{Detail: normalize.Full, Prices: true, Location: loc})), true, o)
		if err != nil {
			t.Fatal(err)
		}
		if want := strings.NewReplacer(`\u0001`, "\uFFFD", `\u0007`, "\uFFFD").Replace(string(model)); want != string(passed) {
			t.Errorf("%s: pass-through differs from the model path (-model +passed):\n%s", name, cmp.Diff(want, string(passed)))
		}
		if plain := render(JSON, Options{Detail: normalize.Full, Location: loc}); strings.Contains(string(plain), `"id":1`) {
			t.Errorf("%s without the switch has a numeric id:\n%s", name, plain)
		}
	}
	odd := readDoc(t, []byte(`<property id="017"><agency_id>A</agency_id><agents count="2"><agent id="5">J</agent><agent id="x9">K</agent></agents></property>`))
	got, err := AppendDocumentJSON(nil, odd, true, o)
	if err != nil {
		t.Fatal(err)
	}
	want := `{"property":{"id":"017","agency_id":"A",` + emptyMiddle(`"price_from":"","price_to":null,`) +
		`"agents":{"count":"2","agent":[{"id":5,"name":"J"},{"id":"x9","name":"K"}]},"openhomes":{"count":"0","openhome":[]}}}` + "\n"
	if string(got) != want {
		t.Errorf("legacy ids:\n got %s\nwant %s", got, want)
	}
}

// TestVideoURL: with the switch a legacy <video> is an object with its
// text under "url" and its attributes in a media item's order, as a photo
// is; without it the mapping of unknown elements is unchanged.
func TestVideoURL(t *testing.T) {
	doc := []byte(`<property id="1"><agency_id>A</agency_id><videos><video>https://v/1.mp4</video><video position="2" caption="Tour" thumbnail="t.jpg">https://v/2.mp4</video></videos><video>loose</video></property>`)
	for _, tc := range []struct {
		o    Options
		want string
	}{
		{Options{VideoURL: true}, `{"property":{"id":"1","agency_id":"A",` + emptyMiddle("") + emptyTail +
			`,"videos":{"count":"2","video":[{"url":"https://v/1.mp4"},{"thumbnail":"t.jpg","caption":"Tour","position":"2","url":"https://v/2.mp4"}]},"video":"loose"}}` + "\n"},
		{Options{}, `{"property":{"id":"1","agency_id":"A",` + emptyMiddle("") + emptyTail +
			`,"videos":{"count":"2","video":["https://v/1.mp4",{"position":"2","caption":"Tour","thumbnail":"t.jpg","video":"https://v/2.mp4"}]},"video":"loose"}}` + "\n"},
	} {
		got, err := AppendDocumentJSON(nil, readDoc(t, doc), true, tc.o)
		if err != nil {
			t.Fatal(err)
		}
		if string(got) != tc.want {
			t.Errorf("VideoURL %v:\n got %s\nwant %s", tc.o.VideoURL, got, tc.want)
		}
	}
}

// emptyMiddle is the JSON of a full-detail property's keys between
// agency_id and agents when the legacy record has none of them (empty
// values, docs/wire-format.md), with prices (the raw price keys or "").
func emptyMiddle(prices string) string {
	return `"last_updated":"","approved":"","address":{"display":"false","address":""},"status":"","latitude":"","longitude":"","price":"",` + prices +
		`"category":"","property_type":"","suburb":"","area":"","region":"","bedrooms":"","bathrooms":"","floor_size":"","lot_size":"","built_in":"","description":"",` +
		`"photos":{"count":"0","photo":[]},"virtualtours":{"count":"0","virtualtour":[]},"floorplans":{"count":"0","floorplan":[]},`
}

// emptyTail is a full-detail property's last keys when the legacy record
// has none of them.
const emptyTail = `"agents":{"count":"0","agent":[]},"openhomes":{"count":"0","openhome":[]}`
