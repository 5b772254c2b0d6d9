package wire

import (
	"bytes"
	"encoding/json"
	"encoding/xml"
	"flag"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"listingproxy/normalize"
	"listingproxy/upstream"
)

var update = flag.Bool("update", false, "rewrite the golden files under testdata/")

// document is one rendered document of the golden set, in either format.
type document struct {
	name   string
	render func(dst []byte, f Format) []byte
}

func documents(tb testing.TB) []document {
	loc := sydney(tb)
	ps := fixtureProperties()
	as := fixtureAgents()
	short := Options{Detail: normalize.Short, Location: loc}
	full := Options{Detail: normalize.Full, Location: loc}
	prices := Options{Detail: normalize.Full, Prices: true, Location: loc}
	return []document{
		{"property_list_short", func(dst []byte, f Format) []byte { return AppendPropertyList(dst, f, ps, short) }},
		{"property_list_full", func(dst []byte, f Format) []byte { return AppendPropertyList(dst, f, ps, full) }},
		{"property_list_full_prices", func(dst []byte, f Format) []byte { return AppendPropertyList(dst, f, ps, prices) }},
		{"property_list_empty", func(dst []byte, f Format) []byte { return AppendPropertyList(dst, f, nil, full) }},
		{"property", func(dst []byte, f Format) []byte { return AppendProperty(dst, f, &ps[0], short) }},
		{"property_prices", func(dst []byte, f Format) []byte { return AppendProperty(dst, f, &ps[1], prices) }},
		{"agent_list_short", func(dst []byte, f Format) []byte { return AppendAgentList(dst, f, as, short) }},
		{"agent_list_full", func(dst []byte, f Format) []byte { return AppendAgentList(dst, f, as, full) }},
		{"agent_list_empty", func(dst []byte, f Format) []byte { return AppendAgentList(dst, f, []upstream.Agent{}, full) }},
		{"agent", func(dst []byte, f Format) []byte { return AppendAgent(dst, f, &as[0], short) }},
		{"errors_0", func(dst []byte, f Format) []byte { return AppendErrors(dst, f, nil) }},
		{"errors_1", func(dst []byte, f Format) []byte { return AppendErrors(dst, f, fixtureErrors(1)) }},
		{"errors_2", func(dst []byte, f Format) []byte { return AppendErrors(dst, f, fixtureErrors(2)) }},
		{"error", func(dst []byte, f Format) []byte { return AppendError(dst, f, "Property with ID 999 not found") }},
	}
}

var formats = []Format{XML, JSON}

func TestGolden(t *testing.T) {
	for _, d := range documents(t) {
		for _, f := range formats {
			name := d.name + "." + f.String()
			t.Run(name, func(t *testing.T) {
				got := d.render(nil, f)
				path := filepath.Join("testdata", name)
				if *update {
					if err := os.WriteFile(path, got, 0o644); err != nil {
						t.Fatal(err)
					}
				}
				want, err := os.ReadFile(path)
				if err != nil {
					t.Fatalf("%v (run with -update to create it)", err)
				}
				if diff := cmp.Diff(string(want), string(got)); diff != "" {
					t.Errorf("%s mismatch (-want +got):\n%s", path, diff)
				}
			})
		}
	}
}

func TestStructure(t *testing.T) {
	for _, d := range documents(t) {
		t.Run(d.name+".xml", func(t *testing.T) { checkXML(t, d.render(nil, XML)) })
		t.Run(d.name+".json", func(t *testing.T) { checkJSON(t, d.render(nil, JSON)) })
	}
}

// checkXML parses b with encoding/xml, token by token, and checks the
// declaration, a single root, a trailing newline, and that every container
// with a count attribute and children has exactly count children.
func checkXML(t *testing.T, b []byte) {
	t.Helper()
	if !bytes.HasPrefix(b, []byte(xmlHeader)) {
		t.Errorf("XML does not start with the declaration line: %.60q", b)
	}
	if !bytes.HasSuffix(b, []byte(">\n")) {
		t.Errorf("XML does not end with an element and a newline: %q", b[max(0, len(b)-20):])
	}
	type frame struct {
		name     string
		count    int
		hasCount bool
		children int
	}
	var stack []frame
	roots := 0
	dec := xml.NewDecoder(bytes.NewReader(b))
	for {
		tok, err := dec.Token()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatalf("XML does not parse: %v\n%s", err, b)
		}
		switch tok := tok.(type) {
		case xml.StartElement:
			if len(stack) == 0 {
				roots++
			} else {
				stack[len(stack)-1].children++
			}
			fr := frame{name: tok.Name.Local}
			for _, a := range tok.Attr {
				if a.Name.Local == "count" {
					n, err := strconv.Atoi(a.Value)
					if err != nil {
						t.Errorf("<%s count=%q>: not an integer", fr.name, a.Value)
					}
					fr.count, fr.hasCount = n, true
				}
			}
			stack = append(stack, fr)
		case xml.EndElement:
			fr := stack[len(stack)-1]
			stack = stack[:len(stack)-1]
			if fr.hasCount && fr.children > 0 && fr.children != fr.count {
				t.Errorf("<%s count=\"%d\"> holds %d elements", fr.name, fr.count, fr.children)
			}
		}
	}
	if roots != 1 {
		t.Errorf("XML has %d root elements, want 1", roots)
	}
}

// itemKeys are the keys of JSON collections, beside "count".
var itemKeys = map[string]bool{
	"property": true, "photo": true, "virtualtour": true, "floorplan": true,
	"agent": true, "openhome": true, "error": true,
}

// checkJSON checks that b is compact, valid JSON ending with a newline, that
// every leaf is a string except a null price_to, and that every collection
// (an object with "count") holds count items: an object for exactly one open
// home or error, an array otherwise.
func checkJSON(t *testing.T, b []byte) {
	t.Helper()
	if !json.Valid(b) {
		t.Fatalf("invalid JSON:\n%s", b)
	}
	body, ok := bytes.CutSuffix(b, []byte("\n"))
	if !ok {
		t.Errorf("JSON does not end with a newline")
	}
	var compact bytes.Buffer
	if err := json.Compact(&compact, body); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(compact.Bytes(), body) {
		t.Errorf("JSON is not compact")
	}
	var v any
	if err := json.Unmarshal(b, &v); err != nil {
		t.Fatal(err)
	}
	walkJSON(t, "$", "", v)
}

func walkJSON(t *testing.T, path, key string, v any) {
	t.Helper()
	switch v := v.(type) {
	case string:
	case nil:
		if key != "price_to" {
			t.Errorf("%s: null, want a string", path)
		}
	case []any:
		for i, e := range v {
			walkJSON(t, path+"["+strconv.Itoa(i)+"]", key, e)
		}
	case map[string]any:
		if c, ok := v["count"]; ok {
			checkCollection(t, path, v, c)
		}
		for k, e := range v {
			walkJSON(t, path+"."+k, k, e)
		}
	default:
		t.Errorf("%s: %T %v, want a string", path, v, v)
	}
}

func checkCollection(t *testing.T, path string, obj map[string]any, c any) {
	t.Helper()
	cs, ok := c.(string)
	if !ok {
		return // reported by walkJSON
	}
	count, err := strconv.Atoi(cs)
	if err != nil {
		t.Errorf("%s.count = %q, not an integer", path, cs)
		return
	}
	for k, items := range obj {
		if k == "count" {
			continue
		}
		if !itemKeys[k] {
			t.Errorf("%s: unexpected key %q beside count", path, k)
			continue
		}
		if (k == "openhome" || k == "error") && count == 1 {
			if _, ok := items.(map[string]any); !ok {
				t.Errorf("%s.%s: %T, want an object for a single item", path, k, items)
			}
			continue
		}
		arr, ok := items.([]any)
		if !ok {
			t.Errorf("%s.%s: %T, want an array", path, k, items)
			continue
		}
		if len(arr) != count {
			t.Errorf("%s.%s holds %d items, count is %d", path, k, len(arr), count)
		}
	}
}

func TestFormat(t *testing.T) {
	tests := []struct {
		ext         string
		want        Format
		ok          bool
		contentType string
	}{
		{"xml", XML, true, "application/xml; charset=utf-8"},
		{"json", JSON, true, "application/json; charset=utf-8"},
		{"XML", 0, false, ""},
		{"Json", 0, false, ""},
		{"", 0, false, ""},
		{".xml", 0, false, ""},
		{"html", 0, false, ""},
	}
	for _, tt := range tests {
		got, ok := ParseFormat(tt.ext)
		if got != tt.want || ok != tt.ok {
			t.Errorf("ParseFormat(%q) = %v, %v; want %v, %v", tt.ext, got, ok, tt.want, tt.ok)
		}
		if ok && got.String() != tt.ext {
			t.Errorf("ParseFormat(%q).String() = %q", tt.ext, got.String())
		}
		if ct := got.ContentType(); ct != tt.contentType {
			t.Errorf("ParseFormat(%q).ContentType() = %q, want %q", tt.ext, ct, tt.contentType)
		}
	}
	if got, want := Format(0).String(), "Format(0)"; got != want {
		t.Errorf("Format(0).String() = %q, want %q", got, want)
	}
}

func TestInvalidFormatPanics(t *testing.T) {
	p := fixtureProperties()[0]
	a := fixtureAgents()[0]
	calls := map[string]func(){
		"AppendPropertyList": func() { AppendPropertyList(nil, 0, nil, Options{}) },
		"AppendProperty":     func() { AppendProperty(nil, 3, &p, Options{}) },
		"AppendAgentList":    func() { AppendAgentList(nil, 0, nil, Options{}) },
		"AppendAgent":        func() { AppendAgent(nil, 0, &a, Options{}) },
		"AppendErrors":       func() { AppendErrors(nil, 0, nil) },
		"AppendError":        func() { AppendError(nil, 0, "x") },
	}
	for name, call := range calls {
		t.Run(name, func(t *testing.T) {
			defer func() {
				if recover() == nil {
					t.Errorf("%s with an invalid format did not panic", name)
				}
			}()
			call()
		})
	}
}

// TestAppendKeepsPrefix checks that documents are appended, not written over
// the caller's buffer.
func TestAppendKeepsPrefix(t *testing.T) {
	for _, d := range documents(t) {
		for _, f := range formats {
			prefix := []byte("HEADER")
			got := d.render(append(make([]byte, 0, 1), prefix...), f)
			want := append(prefix, d.render(nil, f)...)
			if !bytes.Equal(got, want) {
				t.Errorf("%s.%s: appending to a non-empty buffer changed the output", d.name, f)
			}
		}
	}
}

func TestOptionsIgnored(t *testing.T) {
	loc := sydney(t)
	ps := fixtureProperties()
	as := fixtureAgents()
	for _, f := range formats {
		t.Run(f.String(), func(t *testing.T) {
			// Prices need full detail.
			short := AppendPropertyList(nil, f, ps, Options{Location: loc})
			shortPrices := AppendPropertyList(nil, f, ps, Options{Prices: true, Location: loc})
			if diff := cmp.Diff(string(short), string(shortPrices)); diff != "" {
				t.Errorf("short list with prices differs from without (-without +with):\n%s", diff)
			}
			// Single resources are always full, whatever o.Detail says.
			one := AppendProperty(nil, f, &ps[0], Options{Location: loc})
			oneFull := AppendProperty(nil, f, &ps[0], Options{Detail: normalize.Full, Location: loc})
			if diff := cmp.Diff(string(one), string(oneFull)); diff != "" {
				t.Errorf("single property depends on Detail (-short +full):\n%s", diff)
			}
			ag := AppendAgent(nil, f, &as[2], Options{Location: loc})
			agFull := AppendAgent(nil, f, &as[2], Options{Detail: normalize.Full, Prices: true, Location: loc})
			if diff := cmp.Diff(string(ag), string(agFull)); diff != "" {
				t.Errorf("single agent depends on Detail or Prices (-short +full):\n%s", diff)
			}
		})
	}
}

func TestTimes(t *testing.T) {
	auckland, err := time.LoadLocation("Pacific/Auckland")
	if err != nil {
		t.Fatal(err)
	}
	p := upstream.Property{
		ID:          1,
		LastUpdated: utc(2026, time.November, 19, 22, 30),
		// A date given in a zone ahead of UTC keeps its calendar date.
		Approved:  time.Date(2024, time.March, 1, 0, 0, 0, 0, auckland),
		OpenHomes: []upstream.OpenHome{{Start: utc(2026, time.November, 27, 23, 0), End: utc(2026, time.November, 27, 23, 30)}},
	}
	tests := []struct {
		name string
		loc  *time.Location
		want []string
	}{
		{"nil location is UTC", nil, []string{
			`"last_updated":"Thu Nov 19 22:30:00 +0000 2026"`,
			`"approved":"2024-03-01"`,
			`{"start":"2026-11-27 23:00:00","end":"2026-11-27 23:30:00"}`,
		}},
		{"Pacific/Auckland", auckland, []string{
			`"last_updated":"Fri Nov 20 11:30:00 +1300 2026"`,
			`"approved":"2024-03-01"`,
			`{"start":"2026-11-28 12:00:00","end":"2026-11-28 12:30:00"}`,
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := string(AppendProperty(nil, JSON, &p, Options{Location: tt.loc}))
			for _, w := range tt.want {
				if !strings.Contains(got, w) {
					t.Errorf("output lacks %s:\n%s", w, got)
				}
			}
		})
	}

	t.Run("zero times are empty", func(t *testing.T) {
		z := upstream.Property{ID: 2, OpenHomes: []upstream.OpenHome{{}}}
		gotJSON := string(AppendProperty(nil, JSON, &z, Options{}))
		for _, w := range []string{`"last_updated":""`, `"approved":""`, `"openhome":{"start":"","end":""}`} {
			if !strings.Contains(gotJSON, w) {
				t.Errorf("JSON lacks %s:\n%s", w, gotJSON)
			}
		}
		gotXML := string(AppendProperty(nil, XML, &z, Options{}))
		for _, w := range []string{`<property id="2" last_updated="">`, "  <approved/>\n", "      <start/>\n      <end/>\n"} {
			if !strings.Contains(gotXML, w) {
				t.Errorf("XML lacks %q:\n%s", w, gotXML)
			}
		}
	})
}

// TestEmptyValues covers the empty forms the fixtures leave out.
func TestEmptyValues(t *testing.T) {
	p := upstream.Property{ID: 3, PhotoCount: 2, Agents: []upstream.AgentRef{{ID: 9}}}
	gotXML := string(AppendProperty(nil, XML, &p, Options{}))
	for _, w := range []string{
		`  <address display="false"/>` + "\n",
		"  <status/>\n",
		"  <latitude/>\n",
		"  <longitude/>\n",
		"  <bedrooms/>\n",
		`  <photos count="2"/>` + "\n", // a count without items
		`    <agent id="9"/>` + "\n",
	} {
		if !strings.Contains(gotXML, w) {
			t.Errorf("XML lacks %q:\n%s", w, gotXML)
		}
	}
	if strings.Contains(gotXML, "price_") {
		t.Errorf("XML without Prices has price_from or price_to:\n%s", gotXML)
	}
	gotXML = string(AppendProperty(nil, XML, &p, Options{Prices: true}))
	if w := "  <price/>\n  <price_from/>\n  <price_to/>\n"; !strings.Contains(gotXML, w) {
		t.Errorf("XML with Prices lacks %q:\n%s", w, gotXML)
	}
	gotJSON := string(AppendProperty(nil, JSON, &p, Options{Prices: true}))
	for _, w := range []string{
		`"address":{"display":"false","address":""}`,
		`"price_from":"","price_to":null`,
		`"latitude":"","longitude":""`,
		`"bedrooms":""`,
		`"photos":{"count":"2","photo":[]}`,
		`"agent":[{"id":"9","name":""}]`,
		`"openhomes":{"count":"0","openhome":[]}`,
	} {
		if !strings.Contains(gotJSON, w) {
			t.Errorf("JSON lacks %s:\n%s", w, gotJSON)
		}
	}
}

// TestAppendLayoutAgreesWithAppendFormat: the field-by-field layouts write
// what time.AppendFormat writes, for every layout of the package, across
// years, zones (half-hour, 45-minute, second offsets, far ones) and the
// ends of days and months.
func TestAppendLayoutAgreesWithAppendFormat(t *testing.T) {
	var zones []*time.Location
	for _, name := range []string{"UTC", "Australia/Sydney", "Pacific/Chatham", "America/St_Johns", "Pacific/Auckland", "Asia/Kolkata"} {
		loc, err := time.LoadLocation(name)
		if err != nil {
			t.Fatal(err)
		}
		zones = append(zones, loc)
	}
	for _, off := range []int{-30, 30, -(3*3600 + 30*60 + 15), 14 * 3600, -12 * 3600, 99*3600 + 59*60, 100 * 3600, -100 * 3600, 1000 * 3600} {
		zones = append(zones, time.FixedZone("fixed", off))
	}
	times := []time.Time{
		time.Date(2026, 3, 14, 9, 26, 53, 999, time.UTC),
		time.Date(2026, 12, 31, 23, 59, 59, 0, time.UTC),
		time.Date(2024, 2, 29, 0, 0, 0, 0, time.UTC),
		time.Date(1, 1, 1, 0, 0, 0, 0, time.UTC),
		time.Date(999, 6, 1, 12, 0, 0, 0, time.UTC),
		time.Date(9999, 12, 31, 23, 59, 59, 0, time.UTC),
		time.Date(10000, 1, 1, 0, 0, 0, 0, time.UTC),
		time.Date(-1, 1, 1, 0, 0, 0, 0, time.UTC),
	}
	for i := range 400 { // every weekday and month, hours of both halves of a day
		times = append(times, time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC).Add(time.Duration(i)*(25*time.Hour+7*time.Minute+3*time.Second)))
	}
	for _, layout := range []string{lastUpdatedLayout, approvedLayout, openHomeLayout, time.RFC3339} {
		for _, loc := range zones {
			for _, tm := range times {
				tm := tm.In(loc)
				if got, want := string(appendLayout([]byte("x"), tm, layout)), string(tm.AppendFormat([]byte("x"), layout)); got != want {
					t.Fatalf("appendLayout(%v, %q) = %q, AppendFormat: %q", tm, layout, got, want)
				}
			}
		}
	}
}
