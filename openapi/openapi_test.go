package openapi_test

import (
	"encoding/json"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"listingproxy/normalize"
	"listingproxy/openapi"
)

type document struct {
	OpenAPI string
	Paths   map[string]struct {
		Get *struct {
			Parameters []struct {
				Ref string `json:"$ref"`
			}
		}
	}
	Components struct {
		Parameters map[string]struct{ Name, In string }
		Schemas    map[string]json.RawMessage
	}
}

func load(t *testing.T) document {
	t.Helper()
	var d document
	if err := json.Unmarshal(openapi.Document, &d); err != nil {
		t.Fatal(err)
	}
	return d
}

// TestParametersAreNormalizes: each list path, in both formats, documents
// exactly the query keys normalize accepts for its resource ("id" and
// "id[]", "geo[lat]"...), in the parameter table's order, and nothing else.
func TestParametersAreNormalizes(t *testing.T) {
	d := load(t)
	for res, paths := range map[normalize.Resource][]string{
		normalize.Properties: {"/{country}/properties.json", "/{country}/properties.xml"},
		normalize.Agents:     {"/{country}/agents.json", "/{country}/agents.xml"},
	} {
		want := normalize.QueryKeys(res)
		if len(want) < 10 {
			t.Fatalf("%v: normalize names only %q", res, want)
		}
		for _, p := range paths {
			op := d.Paths[p].Get
			if op == nil {
				t.Fatalf("%s: no GET", p)
			}
			var got []string
			for _, ref := range op.Parameters {
				name, ok := strings.CutPrefix(ref.Ref, "#/components/parameters/")
				prm, found := d.Components.Parameters[name]
				if !ok || !found {
					t.Fatalf("%s: parameter %q does not resolve", p, ref.Ref)
				}
				if prm.In == "query" {
					got = append(got, prm.Name)
				}
			}
			if !slices.Equal(got, want) {
				t.Errorf("%s documents the query keys\n%q\nnormalize accepts\n%q", p, got, want)
			}
		}
	}
}

// TestEveryGoldenBodyHasASchema: every JSON body in testdata/golden is
// listed in ts-check/goldens.json with schemas openapi.json defines, so
// CI's validation (ts-check/validate.mjs) covers each of them, a new golden
// included; every $ref of the document resolves.
func TestEveryGoldenBodyHasASchema(t *testing.T) {
	d := load(t)
	if !strings.HasPrefix(d.OpenAPI, "3.1.") {
		t.Fatalf("openapi %q, want 3.1.x", d.OpenAPI)
	}
	raw, err := os.ReadFile("ts-check/goldens.json")
	if err != nil {
		t.Fatal(err)
	}
	var m struct {
		Goldens map[string]struct {
			Schemas []string
			Items   []string
		}
		NotAPIBodies []string
	}
	if err := json.Unmarshal(raw, &m); err != nil {
		t.Fatal(err)
	}
	files, err := filepath.Glob("../testdata/golden/*.json")
	if err != nil || len(files) < 10 {
		t.Fatalf("golden bodies: %q, %v", files, err)
	}
	for _, f := range files {
		name := filepath.Base(f)
		g, ok := m.Goldens[name]
		if !ok {
			if !slices.Contains(m.NotAPIBodies, name) {
				t.Errorf("testdata/golden/%s has no schema in ts-check/goldens.json", name)
			}
			continue
		}
		if len(g.Schemas) == 0 {
			t.Errorf("%s: no schema", name)
		}
		for _, s := range append(g.Schemas, g.Items[min(1, len(g.Items)):]...) {
			if _, ok := d.Components.Schemas[s]; !ok {
				t.Errorf("%s: schema %q is not in openapi.json", name, s)
			}
		}
	}
	for name := range m.Goldens {
		if _, err := os.Stat(filepath.Join("../testdata/golden", name)); err != nil {
			t.Errorf("ts-check/goldens.json names %s: %v", name, err)
		}
	}
	// Every local reference resolves.
	var whole any
	if err := json.Unmarshal(openapi.Document, &whole); err != nil {
		t.Fatal(err)
	}
	var walk func(v any)
	walk = func(v any) {
		switch v := v.(type) {
		case map[string]any:
			if ref, ok := v["$ref"].(string); ok {
				var at any = whole
				for _, seg := range strings.Split(strings.TrimPrefix(ref, "#/"), "/") {
					obj, _ := at.(map[string]any)
					at = obj[seg]
				}
				if at == nil {
					t.Errorf("$ref %q does not resolve", ref)
				}
			}
			for _, x := range v {
				walk(x)
			}
		case []any:
			for _, x := range v {
				walk(x)
			}
		}
	}
	walk(whole)
}

// TestExamplesAreGoldenBodies: every example of a 200 answer is a golden
// body of testdata/golden as it is now (the XML byte for byte, the JSON
// value for value), so a change of the wire format that updates the golden
// documents makes the document's examples fail here until they follow.
func TestExamplesAreGoldenBodies(t *testing.T) {
	var d struct {
		Paths map[string]map[string]json.RawMessage // method (or "parameters") -> operation
	}
	if err := json.Unmarshal(openapi.Document, &d); err != nil {
		t.Fatal(err)
	}
	type operation struct {
		Responses map[string]struct {
			Content map[string]struct {
				Examples map[string]struct{ Value json.RawMessage }
			}
		}
	}
	goldens := map[string]bool{} // canonical JSON values and XML texts
	files, _ := filepath.Glob("../testdata/golden/*")
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		switch filepath.Ext(f) {
		case ".json":
			goldens[canonical(t, b)] = true
		case ".xml":
			goldens[string(b)] = true
		}
	}
	n := 0
	for p, ops := range d.Paths {
		for m, raw := range ops {
			var op operation
			if m == "parameters" {
				continue
			}
			if err := json.Unmarshal(raw, &op); err != nil {
				t.Fatalf("%s %s: %v", m, p, err)
			}
			for mt, c := range op.Responses["200"].Content {
				for name, ex := range c.Examples {
					n++
					var key string
					switch mt {
					case "application/json":
						key = canonical(t, ex.Value)
					case "application/xml":
						if err := json.Unmarshal(ex.Value, &key); err != nil {
							t.Fatalf("%s %s %s: %v", p, mt, name, err)
						}
					default:
						continue
					}
					if !goldens[key] {
						t.Errorf("%s %s example %q is not a golden body of testdata/golden", p, mt, name)
					}
				}
			}
		}
	}
	if n < 20 {
		t.Fatalf("only %d examples", n)
	}
}

// canonical is a JSON text re-encoded from its value.
func canonical(t *testing.T, b []byte) string {
	t.Helper()
	var v any
	if err := json.Unmarshal(b, &v); err != nil {
		t.Fatal(err)
	}
	out, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(out)
}

// TestMultiValuedAsNormalize: a query parameter the document types as an
// array takes several values in normalize, and one it types as a single
// value is an error on its field when given two different ones. The values
// tried are taken from each parameter's schema (its enum, its type).
func TestMultiValuedAsNormalize(t *testing.T) {
	var d struct {
		Components struct {
			Parameters map[string]struct {
				Name, In string
				Schema   struct {
					Type  string
					Enum  []string
					Items *struct {
						Type string
						Enum []string
					}
				}
			}
		}
	}
	if err := json.Unmarshal(openapi.Document, &d); err != nil {
		t.Fatal(err)
	}
	// two returns two different valid values of a schema's type.
	two := func(typ string, enum []string, name string) (string, string, bool) {
		switch {
		case len(enum) >= 2:
			return enum[0], enum[1], true
		case len(enum) == 1:
			return "", "", false // featured: one possible value
		case strings.HasPrefix(name, "approved_"):
			return "20240101", "20240102", true
		case typ == "integer", typ == "number", strings.HasPrefix(name, "price_"):
			return "1", "2", true
		}
		return "a", "b", true
	}
	checked := 0
	for key, p := range d.Components.Parameters {
		list, ok := strings.CutPrefix(key, "q-")
		if !ok || strings.HasSuffix(p.Name, "[]") {
			continue
		}
		parse, field := normalize.ParseProperties, p.Name
		if strings.HasPrefix(list, "agents-") {
			parse = normalize.ParseAgents
		}
		multi := p.Schema.Type == "array"
		typ, enum := p.Schema.Type, p.Schema.Enum
		if multi {
			typ, enum = p.Schema.Items.Type, p.Schema.Items.Enum
		}
		a, b, ok := two(typ, enum, p.Name)
		if !ok {
			continue
		}
		q := url.Values{p.Name: {a, b}}
		if strings.HasPrefix(p.Name, "geo[") { // the three come together
			for _, k := range []string{"geo[lat]", "geo[long]", "geo[rad]"} {
				if k != p.Name {
					q.Set(k, "1")
				}
			}
		}
		_, errs := parse(q, normalize.Options{})
		failed := slices.ContainsFunc(errs, func(e normalize.FieldError) bool { return e.Field == field })
		if failed == multi {
			t.Errorf("%s: documented multi-valued %v, but normalize with %[3]s=%[4]s&%[3]s=%[5]s: %[6]v", key, multi, p.Name, a, b, errs)
		}
		checked++
	}
	if checked < 25 {
		t.Fatalf("only %d parameters checked", checked)
	}
}
