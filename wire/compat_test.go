package wire

import (
	"encoding/json"
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
