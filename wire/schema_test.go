package wire

import (
	"encoding/xml"
	"maps"
	"slices"
	"strings"
	"testing"
	"time"

	"listingproxy/normalize"
	"listingproxy/upstream"
)

// TestSchemaTables: the sets the readers and pass-through filters use,
// derived from the listing schema, are those the wire format gives
// (docs/wire-format.md); a table the code cannot follow fails at start.
func TestSchemaTables(t *testing.T) {
	for _, tc := range []struct {
		name      string
		got, want map[string]bool
	}{
		{"property elements", sch.property.known, setOf("agency_id", "approved", "address", "status", "latitude", "longitude", "price",
			"price_from", "price_to", "category", "property_type", "suburb", "area", "region", "bedrooms", "bathrooms",
			"floor_size", "lot_size", "built_in", "description", "photos", "photo", "virtualtours", "virtualtour",
			"floorplans", "floorplan", "agents", "agent", "openhomes", "openhome", "start", "end")},
		{"agent elements", sch.agent.known, setOf("name", "username", "phone", "after_hours_phone", "mobile_phone", "email",
			"description", "photo", "website_url", "properties", "property", "address", "agency_id")},
		{"attributes", sch.knownAttrs, setOf("id", "last_updated", "display", "count", "thumbnail", "type", "caption", "position")},
		{"elements the readers keep", sch.knownTags, setOf("properties", "property", "agents", "agent", "errors", "error",
			"agency_id", "approved", "status", "latitude", "longitude", "price", "price_from", "price_to", "category",
			"property_type", "suburb", "area", "region", "bedrooms", "bathrooms", "floor_size", "lot_size", "built_in",
			"description", "address", "photos", "photo", "virtualtours", "virtualtour", "floorplans", "floorplan",
			"openhomes", "openhome", "start", "end", "name", "username", "phone", "after_hours_phone", "mobile_phone",
			"email", "website_url")},
		{"prices", sch.prices, setOf("price_from", "price_to")},
		{"JSON nulls", sch.nulls, setOf("price_to")},
	} {
		if !maps.Equal(tc.got, tc.want) {
			t.Errorf("%s: %v, want %v", tc.name, slices.Sorted(maps.Keys(tc.got)), slices.Sorted(maps.Keys(tc.want)))
		}
	}

	// Every hand-written part has its row.
	for name := range propertyParts {
		if !slices.ContainsFunc(upstream.PropertyFields, func(f upstream.Field[upstream.Property]) bool {
			return f.Name == name && f.Kind == upstream.KindHand
		}) {
			t.Errorf("hand-written property part %q has no KindHand row in upstream.PropertyFields", name)
		}
	}
	for name := range agentParts {
		if !slices.ContainsFunc(upstream.AgentFields, func(f upstream.Field[upstream.Agent]) bool {
			return f.Name == name && f.Kind == upstream.KindHand
		}) {
			t.Errorf("hand-written agent part %q has no KindHand row in upstream.AgentFields", name)
		}
	}

	// Tables the code cannot follow.
	bad := map[string][]upstream.Field[upstream.Property]{
		"a hand-written part without code": append(slices.Clone(upstream.PropertyFields),
			upstream.Field[upstream.Property]{Name: "videos", Kind: upstream.KindHand, XML: upstream.Element}),
		"a first field of full detail": append([]upstream.Field[upstream.Property]{{Name: "note", Kind: upstream.KindText,
			Level: upstream.LevelFull, XML: upstream.Element, Text: func(p *upstream.Property) *string { return &p.Description }}},
			upstream.PropertyFields...),
		"no id": slices.DeleteFunc(slices.Clone(upstream.PropertyFields), func(f upstream.Field[upstream.Property]) bool {
			return f.Kind == upstream.KindID
		}),
	}
	for name, props := range bad {
		func() {
			defer func() {
				if recover() == nil {
					t.Errorf("%s: compileSchema did not refuse it", name)
				}
			}()
			compileSchema(props, upstream.AgentFields)
		}()
	}
}

// useSchema makes the writers, readers and filters use the tables props
// and agents until the test ends. A test that calls it must not be
// parallel.
func useSchema(t *testing.T, props []upstream.Field[upstream.Property], agents []upstream.Field[upstream.Agent]) {
	t.Helper()
	oldSch, oldShapes := sch, shapes
	sch = compileSchema(props, agents)
	shapes = newShapes()
	t.Cleanup(func() { sch, shapes = oldSch, oldShapes })
}

// side holds, by record id, the values of a field the model does not
// have: a stand-in for the field of upstream.Property or upstream.Agent a
// new row would point at, so that the test adds a row and nothing else.
type side[T any] map[int64]*T

func (s side[T]) at(id int64) *T {
	p, ok := s[id]
	if !ok {
		p = new(T)
		s[id] = p
	}
	return p
}

// withRow returns a copy of fields with f inserted before the field named
// before.
func withRow[R any](t *testing.T, fields []upstream.Field[R], before string, f upstream.Field[R]) []upstream.Field[R] {
	t.Helper()
	i := slices.IndexFunc(fields, func(f upstream.Field[R]) bool { return f.Name == before })
	if i < 0 {
		t.Fatalf("no field %q", before)
	}
	return slices.Insert(slices.Clone(fields), i, f)
}

// TestOneRowAddsAField: a scalar field is one row of the listing schema.
// With a row added to a copy of each table (and no other change), the
// new fields are rendered in XML and JSON at their level and place, read
// back from a legacy's XML (a value that cannot be read reported), kept by
// pass-through for a caller who may not see unknown elements, and filled
// with their empty value in the JSON of a legacy record that lacks them.
// upstream/sqlstore's TestOneRowAddsAColumn scans the same row.
func TestOneRowAddsAField(t *testing.T) {
	garages := side[*int]{}
	languages := side[string]{}
	props := withRow(t, upstream.PropertyFields, "lot_size", upstream.Field[upstream.Property]{
		Name: "garage_spaces", Kind: upstream.KindInt, Level: upstream.LevelFull, XML: upstream.Element,
		Column: "p.garage_spaces", Int: func(p *upstream.Property) **int { return garages.at(p.ID) },
	})
	agents := withRow(t, upstream.AgentFields, "description", upstream.Field[upstream.Agent]{
		Name: "languages", Kind: upstream.KindText, Level: upstream.LevelFull, XML: upstream.Element,
		Column: "a.languages", Text: func(a *upstream.Agent) *string { return languages.at(a.ID) },
	})

	// Before the rows, a legacy's garage_spaces is unknown: dropped for a
	// caller who may not see unknown elements.
	legacy := `<?xml version="1.0" encoding="UTF-8"?>
<property id="7" last_updated="Sun May 10 18:15:03 +1000 2026">
  <agency_id>HB-AU-00007</agency_id>
  <floor_size>120</floor_size>
  <garage_spaces>2</garage_spaces>
</property>
`
	full := Options{Detail: normalize.Full, Location: time.UTC}
	passed := func(t *testing.T, f Format) string {
		t.Helper()
		p, err := ReadProperty(xml.NewDecoder(strings.NewReader(legacy)), time.UTC, ReadOptions{Keep: true})
		if err != nil {
			t.Fatal(err)
		}
		return string(AppendProperty(nil, f, &p, full))
	}
	if got := passed(t, XML); strings.Contains(got, "garage_spaces") {
		t.Fatalf("without the row, pass-through kept garage_spaces:\n%s", got)
	}

	useSchema(t, props, agents)

	two := 2
	*garages.at(1) = &two
	*languages.at(5) = "English, Māori"
	p1 := upstream.Property{ID: 1, FloorSize: ptr(98.5)}
	p2 := upstream.Property{ID: 2}
	a5 := upstream.Agent{ID: 5, Name: "Jane"}
	short := Options{Detail: normalize.Short, Location: time.UTC}
	for _, tc := range []struct {
		name       string
		got        []byte
		want, lack []string
	}{
		{"property XML", AppendProperty(nil, XML, &p1, full),
			[]string{"  <floor_size>98.5</floor_size>\n  <garage_spaces>2</garage_spaces>\n  <lot_size/>\n"}, nil},
		{"property JSON", AppendProperty(nil, JSON, &p1, full),
			[]string{`"floor_size":"98.5","garage_spaces":"2","lot_size":""`}, nil},
		{"property without a value, XML", AppendProperty(nil, XML, &p2, full), []string{"\n  <garage_spaces/>\n"}, nil},
		{"property without a value, JSON", AppendProperty(nil, JSON, &p2, full), []string{`,"garage_spaces":"",`}, nil},
		{"short list XML", AppendPropertyList(nil, XML, []upstream.Property{p1}, short), nil, []string{"garage_spaces"}},
		{"short list JSON", AppendPropertyList(nil, JSON, []upstream.Property{p1}, short), nil, []string{"garage_spaces"}},
		{"agent XML", AppendAgent(nil, XML, &a5, full),
			[]string{"  <email/>\n  <languages>English, Māori</languages>\n  <description/>\n"}, nil},
		{"agent JSON", AppendAgent(nil, JSON, &a5, full), []string{`"email":"","languages":"English, Māori","description":""`}, nil},
		{"agent list, short", AppendAgentList(nil, JSON, []upstream.Agent{a5}, short), nil, []string{"languages"}},
	} {
		for _, w := range tc.want {
			if !strings.Contains(string(tc.got), w) {
				t.Errorf("%s lacks %q:\n%s", tc.name, w, tc.got)
			}
		}
		for _, l := range tc.lack {
			if strings.Contains(string(tc.got), l) {
				t.Errorf("%s has %q:\n%s", tc.name, l, tc.got)
			}
		}
	}

	// Read back: the rendered documents, then a legacy's unreadable value.
	propertyXML, agentXML := string(AppendProperty(nil, XML, &p1, full)), string(AppendAgent(nil, XML, &a5, full))
	clear(garages)
	clear(languages)
	if _, err := ReadProperty(xml.NewDecoder(strings.NewReader(propertyXML)), time.UTC, ReadOptions{}); err != nil {
		t.Fatal(err)
	}
	if v := *garages.at(1); v == nil || *v != 2 {
		t.Errorf("garage_spaces read back as %v, want 2", v)
	}
	if _, err := ReadAgent(xml.NewDecoder(strings.NewReader(agentXML)), ReadOptions{}); err != nil {
		t.Fatal(err)
	}
	if v := *languages.at(5); v != "English, Māori" {
		t.Errorf("languages read back as %q", v)
	}
	var problems []Problem
	bad := strings.Replace(legacy, "<garage_spaces>2<", "<garage_spaces>two<", 1)
	if _, err := ReadProperty(xml.NewDecoder(strings.NewReader(bad)), time.UTC, ReadOptions{Report: func(p Problem) { problems = append(problems, p) }}); err != nil {
		t.Fatal(err)
	}
	want := []Problem{{Record: `property "7"`, Field: "garage_spaces", Value: "two", Want: "not an integer"}}
	if !slices.Equal(problems, want) {
		t.Errorf("problems %v, want %v", problems, want)
	}
	if v := *garages.at(7); v != nil {
		t.Errorf("an unreadable garage_spaces read as %d, want missing", *v)
	}

	// Pass-through: known now, so kept; and the JSON of a legacy record
	// that lacks it has its key, empty, in its place.
	if got := passed(t, XML); !strings.Contains(got, "  <garage_spaces>2</garage_spaces>\n") {
		t.Errorf("pass-through XML lacks garage_spaces:\n%s", got)
	}
	if got := passed(t, JSON); !strings.Contains(got, `"floor_size":"120","garage_spaces":"2","lot_size":""`) {
		t.Errorf("pass-through JSON lacks garage_spaces in its place:\n%s", got)
	}
	legacy = strings.Replace(legacy, "  <garage_spaces>2</garage_spaces>\n", "", 1)
	if got := passed(t, JSON); !strings.Contains(got, `"floor_size":"120","garage_spaces":"","lot_size":""`) {
		t.Errorf("pass-through JSON of a record without garage_spaces lacks its empty key:\n%s", got)
	}
}
