package openapi_test

import (
	"bytes"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"listingproxy/normalize"
	"listingproxy/openapi"
)

var update = flag.Bool("update", false, "rewrite openapi.json from the description in document_test.go")

// TestDocument builds the description from this file (schemas, answers,
// the parameters' texts), normalize's query keys and the golden bodies of
// testdata/golden (the examples), and compares it with openapi.json. After
// a deliberate change: go test ./openapi -run TestDocument -update, and
// review the diff. The JSON is written out (rather than served from this
// builder) so that it is reviewable, usable without Go, and the file CI's
// validators and code generators read.
func TestDocument(t *testing.T) {
	got := buildDocument(t)
	if *update {
		if err := os.WriteFile("openapi.json", got, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	if !bytes.Equal(got, openapi.Document) {
		t.Errorf("openapi.json is not what document_test.go builds: run go test ./openapi -run TestDocument -update and review the diff")
	}
}

// obj is a JSON object that keeps its keys in the order written.
type obj []kv

type kv struct {
	k string
	v any
}

// o makes an obj of key, value pairs.
func o(pairs ...any) obj {
	m := make(obj, 0, len(pairs)/2)
	for i := 0; i+1 < len(pairs); i += 2 {
		m = append(m, kv{pairs[i].(string), pairs[i+1]})
	}
	return m
}

func (m obj) set(k string, v any) obj {
	for i := range m {
		if m[i].k == k {
			m[i].v = v
			return m
		}
	}
	return append(m, kv{k, v})
}

func (m obj) keys() []string {
	var ks []string
	for _, p := range m {
		ks = append(ks, p.k)
	}
	return ks
}

func (m obj) MarshalJSON() ([]byte, error) {
	var b bytes.Buffer
	b.WriteByte('{')
	for i, p := range m {
		if i > 0 {
			b.WriteByte(',')
		}
		if err := encode(&b, p.k); err != nil {
			return nil, err
		}
		b.WriteByte(':')
		if err := encode(&b, p.v); err != nil {
			return nil, err
		}
	}
	b.WriteByte('}')
	return b.Bytes(), nil
}

// encode writes v as JSON without escaping <, > and & (the XML examples
// stay readable).
func encode(b *bytes.Buffer, v any) error {
	e := json.NewEncoder(b)
	e.SetEscapeHTML(false)
	if err := e.Encode(v); err != nil {
		return err
	}
	b.Truncate(b.Len() - 1) // Encode's newline
	return nil
}

type arr = []any

func ref(name string) obj { return o("$ref", "#/components/schemas/"+name) }
func str(desc string) obj {
	if desc == "" {
		return o("type", "string")
	}
	return o("type", "string", "description", desc)
}

// listOf is a collection a single-object compatibility switch may make an
// object when it holds one item.
func listOf(item, name, extra string) obj {
	return o("description", fmt.Sprintf("A collection of `%s` items: an array by default. Under the compatibility switch `json_single_object: true` (or `json_single_object_items` naming `%s`), a collection of exactly one item is that object instead of a one-element array; zero or two or more items stay an array.%s", name, name, extra),
		"oneOf", arr{o("type", "array", "items", ref(item)), ref(item)})
}

// oneIsObject is a collection that is an object when it holds one item,
// whatever the switches (the spec's rule for openhome and error).
func oneIsObject(item, name string) obj {
	return o("description", fmt.Sprintf("A collection of `%s` items: an array, except that exactly one item is that object (the spec's rule, whatever the compatibility switches).", name),
		"oneOf", arr{o("type", "array", "items", ref(item)), ref(item)})
}

func schemas() obj {
	media := func(photo bool) obj {
		p := o("thumbnail", str("Thumbnail address."))
		req := arr{"thumbnail"}
		if photo {
			p = p.set("type", o("type", "string", "description", "Normal, Elevated or Night.", "examples", arr{"Normal"}))
			req = append(req, "type")
		}
		p = append(p, kv{"caption", str("Caption; may be empty.")},
			kv{"position", str("Integer ordering, as a string (empty when a pass-through record has none).")},
			kv{"url", str("Full-size address (the element text in XML).")})
		return o("type", "object", "required", append(req, "caption", "position", "url"), "properties", p)
	}
	counted := func(item, name, extra string) obj {
		return o("type", "object", "required", arr{"count"}, "properties", o("count", ref("Count"), name, listOf(item, name, extra)))
	}
	s := o(
		"Count", o("type", "string", "pattern", "^[0-9]+$", "description", "The number of items in the collection, as a string.", "examples", arr{"3"}),
		"Id", o("type", arr{"string", "integer"}, "description", "A service id. A string (`\"17\"`) by default; a JSON number (`17`) under the `json_numeric_ids` compatibility switch when the value is a whole decimal number (a legacy id such as `\"017\"` stays a string). An empty string when a pass-through record has none.", "examples", arr{"17", 17}),
		"Address", o("type", "object", "required", arr{"display", "address"}, "properties", o(
			"display", o("type", "string", "enum", arr{"true", "false"}, "description", "Whether the street address may be displayed."),
			"address", str("Street number and name."))),
		"Photo", media(true),
		"Virtualtour", media(false),
		"Floorplan", media(false),
		"Photos", counted("Photo", "photo", " Present in full detail only; short detail has only `count`."),
		"Virtualtours", counted("Virtualtour", "virtualtour", " Present in full detail only."),
		"Floorplans", counted("Floorplan", "floorplan", " Present in full detail only."),
		"PropertyAgent", o("type", "object", "required", arr{"id", "name"}, "properties", o("id", ref("Id"), "name", str(""))),
		"PropertyAgents", o("type", "object", "required", arr{"count", "agent"}, "properties", o("count", ref("Count"), "agent", listOf("PropertyAgent", "agent", ""))),
		"Openhome", o("type", "object", "required", arr{"start", "end"}, "properties", o(
			"start", o("type", "string", "description", "`YYYY-MM-DD HH:MM:SS`, local time of the country.", "examples", arr{"2026-11-26 09:30:00"}),
			"end", str("`YYYY-MM-DD HH:MM:SS`, local time of the country."))),
		"Openhomes", o("type", "object", "required", arr{"count", "openhome"}, "description", "Open homes that have not ended.", "properties", o("count", ref("Count"), "openhome", oneIsObject("Openhome", "openhome"))),
		"Video", o("description", "A video of a CRM pass-through record (`videos`, not in the spec): a string (its URL) by default, or an object with its attributes and its text under `url` under the `json_video_url` compatibility switch (an object with the text under `video` when it has attributes and the switch is off).",
			"anyOf", arr{o("type", "string"), o("type", "object", "properties", o("url", str("")))}),
		"Videos", o("type", "object", "description", "Only in records passed through from a CRM backend that sends `<videos>`, and only to callers allowed unknown elements (see wire-format.md).",
			"required", arr{"count"}, "properties", o("count", ref("Count"), "video", listOf("Video", "video", ""))),
	)
	short := o(
		"id", ref("Id"),
		"agency_id", str("The agency's own reference for the property."),
		"last_updated", o("type", "string", "description", "`Mon Jan 02 15:04:05 -0700 2006`, in the country's zone.", "examples", arr{"Sun May 10 18:15:03 +1000 2026"}),
		"approved", o("type", "string", "description", "`YYYY-MM-DD`.", "examples", arr{"2019-07-26"}),
		"address", ref("Address"),
		"status", o("type", "string", "description", "CURRENT, CONTRACT, SOLD or RENTED (the stored case).", "examples", arr{"CURRENT"}),
		"latitude", o("type", "string", "description", "Decimal latitude.", "examples", arr{"-36.777345"}),
		"longitude", o("type", "string", "description", "Decimal longitude.", "examples", arr{"144.289933"}),
	)
	full := o(
		"price", str("Display price: an amount, a word such as an auction label, or both."),
		"price_from", str("Raw price. Full detail only, and only for users with the `prices` permission."),
		"price_to", o("type", arr{"string", "null"}, "description", "Raw upper price; `null` when absent. Full detail only, and only for users with the `prices` permission."),
		"category", str("Residential, Commercial or Agricultural."),
		"property_type", str(""), "suburb", str(""), "area", str(""), "region", str(""),
		"bedrooms", str(""), "bathrooms", str(""),
		"floor_size", str("Square metres."), "lot_size", str("Square metres."),
		"built_in", str("Free-form: a year, a decade, a range."),
		"description", str(""),
	)
	collections := o("photos", ref("Photos"), "virtualtours", ref("Virtualtours"), "floorplans", ref("Floorplans"),
		"agents", ref("PropertyAgents"), "openhomes", ref("Openhomes"), "videos", ref("Videos"))
	var shortReq, fullReq arr
	for _, k := range append(short.keys(), "photos", "virtualtours", "floorplans", "agents") {
		shortReq = append(shortReq, k)
	}
	fullReq = append(fullReq, shortReq...)
	for _, k := range append(full.keys(), "openhomes") {
		if k != "price_from" && k != "price_to" {
			fullReq = append(fullReq, k)
		}
	}
	all := append(append(append(obj{}, short...), full...), collections...)
	s = append(s,
		kv{"Property", o("type", "object", "description", "A property, in either detail level. Short detail has the fields listed as required; full detail adds the others (`price_from`/`price_to` only for users with the `prices` permission). Keys are in this order. Records passed through from a CRM backend may carry further keys (elements the spec does not name) for callers allowed them.",
			"required", shortReq, "properties", all)},
		kv{"PropertyFull", o("description", "A property in full detail: every field but the raw prices is present.", "allOf", arr{ref("Property"), o("required", fullReq)})},
		kv{"AgentProperty", o("type", "object", "required", arr{"id", "last_updated", "address", "agency_id"}, "properties", o(
			"id", ref("Id"), "last_updated", str(""), "address", str("Plain text, without the display flag."), "agency_id", str("")))},
		kv{"AgentProperties", o("type", "object", "required", arr{"count"}, "description", "The agent's current properties (status CURRENT or CONTRACT).",
			"properties", o("count", ref("Count"), "property", listOf("AgentProperty", "property", " Present in full detail only.")))},
	)
	agentFull := []string{"username", "phone", "after_hours_phone", "mobile_phone", "email", "description", "photo", "website_url"}
	agentProps := o("id", ref("Id"), "name", str(""))
	var agentFullReq arr
	for _, k := range agentFull {
		d := ""
		if k == "photo" {
			d = "URL of the agent's photo; empty when there is none."
		}
		agentProps = append(agentProps, kv{k, str(d)})
		agentFullReq = append(agentFullReq, k)
	}
	agentProps = append(agentProps, kv{"properties", ref("AgentProperties")})
	root := func(key string, inner obj) obj {
		return o("type", "object", "required", arr{key}, "properties", o(key, inner))
	}
	list := func(key, item, schema string) obj {
		return root(key, o("type", "object", "required", arr{"count", item}, "properties", o("count", ref("Count"), item, listOf(schema, item, ""))))
	}
	s = append(s,
		kv{"Agent", o("type", "object", "description", "An agent, in either detail level: short detail has `id`, `name` and `properties` (its `count` only); full detail adds the others.",
			"required", arr{"id", "name", "properties"}, "properties", agentProps)},
		kv{"AgentFull", o("description", "An agent in full detail.", "allOf", arr{ref("Agent"), o("required", agentFullReq)})},
		kv{"PropertyList", list("properties", "property", "Property")},
		kv{"PropertyDocument", root("property", ref("PropertyFull"))},
		kv{"AgentList", list("agents", "agent", "Agent")},
		kv{"AgentDocument", root("agent", ref("AgentFull"))},
		kv{"FieldError", o("type", "object", "required", arr{"field", "message"}, "properties", o(
			"field", o("type", "string", "description", "The parameter's name without `[]` (`geo[lat]` for geo's sub-keys; `query` for a query string that cannot be parsed).", "examples", arr{"approved_from"}),
			"message", o("type", "string", "examples", arr{`Invalid date "2024-01-01": use the format yyyymmdd`})))},
		kv{"ErrorList", o("type", "object", "required", arr{"errors"}, "description", "Criteria errors, sent with HTTP 200 instead of the list (the spec). Errors are in the order of the parameter table (the order of the parameters in this document).",
			"properties", o("errors", o("type", "object", "required", arr{"count", "error"}, "properties", o("count", ref("Count"), "error", oneIsObject("FieldError", "error")))))},
		kv{"Error", o("type", "object", "required", arr{"error"}, "description", "A single error: the message.", "properties", o("error", o("type", "string", "examples", arr{"Property with ID 9 not found"})))},
		kv{"PropertyListResponse", o("description", "The answer to a property list request: the list, or the error list (both with HTTP 200).", "oneOf", arr{ref("PropertyList"), ref("ErrorList")})},
		kv{"AgentListResponse", o("description", "The answer to an agent list request: the list, or the error list (both with HTTP 200).", "oneOf", arr{ref("AgentList"), ref("ErrorList")})},
		kv{"PropertyResponse", o("description", "The answer to a single-property request: the property, or a single error (not found, a bad id, no `full` permission), both with HTTP 200.", "oneOf", arr{ref("PropertyDocument"), ref("Error")})},
		kv{"AgentResponse", o("description", "The answer to a single-agent request: the agent, or a single error, both with HTTP 200.", "oneOf", arr{ref("AgentDocument"), ref("Error")})},
	)
	return s
}

// queryParam describes a query parameter of the lists: its values' schema,
// whether it takes several, and what it does (with its error message).
type queryParam struct {
	schema obj
	multi  bool
	desc   string
}

var (
	idSchema   = o("type", "integer", "format", "int64", "minimum", 0)
	textSchema = o("type", "string")
	priceRe    = o("type", "string", "pattern", `^[0-9]+(\.[0-9]*)?$`)
	dateRe     = o("type", "string", "pattern", "^[0-9]{8}$")
	rooms      = o("type", "integer", "minimum", 0, "maximum", 1000)
	page       = o("type", "integer", "minimum", 0, "maximum", 2147483647)
)

// queryParams are the texts of normalize's parameters, by name (both lists
// share a name's text; order's differs, see orderFields). A query key
// normalize accepts that is not here fails TestDocument.
var queryParams = map[string]queryParam{
	"id":            {idSchema, true, "Service ids. When given, every filter is ignored (rule 1); `detail`, `limit`, `offset` and `order` still apply. Error: `ID \"abc\" is not a valid number`."},
	"agency_id":     {textSchema, true, "The agency's references. When given (and `id` is not), every other filter is ignored (rule 2)."},
	"agent_id":      {idSchema, true, "Properties of these agents (of the caller's tenant and country). Error: `Agent ID \"x\" is not a valid number`."},
	"street_number": {textSchema, false, "Exact, case-insensitive. Error: `Invalid street_number \"…\": must be valid UTF-8 text of at most 200 bytes without control characters`."},
	"street_name":   {textSchema, false, "Exact, case-insensitive (same error as street_number)."},
	"price_from":    {priceRe, false, "Raw price strictly greater than the value; a plain decimal. Error: `Invalid price_from \"x\": must be a number from 0 to 1000000000000000, written as digits with an optional decimal point`."},
	"price_to":      {priceRe, false, "Raw price strictly less than the value (same error as price_from)."},
	"category":      {o("type", "string", "enum", arr{"residential", "commercial", "agricultural", "Residential", "Commercial", "Agricultural"}), true, "Case-insensitive. Error: `Invalid category \"house\": must be Residential, Commercial or Agricultural`."},
	"status":        {o("type", "string", "enum", arr{"current", "contract", "sold", "rented", "CURRENT", "CONTRACT", "SOLD", "RENTED"}), true, "Case-insensitive. Error: `Invalid status \"x\": must be current, contract, sold or rented`."},
	"property_type": {textSchema, true, "Case-insensitive."},
	"price_type":    {textSchema, true, "Case-insensitive (auction, tender, pbn...)."},
	"bedrooms":      {rooms, false, "Exact match. Error: `Invalid bedrooms \"x\": must be a whole number from 0 to 1000`."},
	"bathrooms":     {rooms, false, "Exact match (same error as bedrooms)."},
	"geo[lat]":      {o("type", "number", "minimum", -90, "maximum", 90), false, "Latitude of the centre; `geo[lat]`, `geo[long]` and `geo[rad]` come together. Error: `Invalid geo[lat] \"x\": must be a number from -90 to 90`."},
	"geo[long]":     {o("type", "number", "minimum", -180, "maximum", 180), false, "Longitude of the centre. Error: `Invalid geo[long] \"x\": must be a number from -180 to 180`."},
	"geo[rad]":      {o("type", "number", "exclusiveMinimum", 0, "maximum", 1000), false, "Radius in km (great-circle distance, inclusive). Error: `Invalid geo[rad] \"x\": must be a number of kilometres greater than 0 and at most 1000`."},
	"featured":      {o("type", "string", "enum", arr{"true"}), false, "Only featured properties. Error: `Invalid featured \"x\": the only accepted value is true`."},
	"approved_from": {dateRe, false, "`yyyymmdd`, inclusive. Error: `Invalid date \"2024-01-01\": use the format yyyymmdd`."},
	"approved_to":   {dateRe, false, "`yyyymmdd`, inclusive. Errors: the date error, and `Invalid approved_to \"20240101\": must not be before approved_from \"20240201\"`."},
	"name":          {textSchema, false, "Case-insensitive substring of the agent's name (same text error as street_number)."},
	"username":      {textSchema, false, "Exact, case-insensitive."},
	"detail":        {o("type", "string", "enum", arr{"short", "full"}, "default", "short"), false, "Detail level. `full` needs the `full` permission: without it the error list holds `Full detail requires the full permission` on field `detail`. Error: `Invalid detail \"x\": must be short or full`."},
	"limit":         {page, false, "Maximum number of results (`0`: an empty list). SQL tenants cap it at `max_results` (default 1000). Error: `Invalid limit \"x\": must be a whole number from 0 to 2147483647`."},
	"offset":        {page, false, "Position from which results start. With `max_offset` configured, larger values are the error `Invalid offset \"20001\": must be a whole number from 0 to 20000`."},
}

// orderFields are the fields each list orders by (normalize's whitelist,
// also in its error message).
var orderFields = map[normalize.Resource][]any{
	normalize.Properties: {"id", "agency_id", "status", "approved", "last_updated", "price", "bedrooms", "bathrooms", "suburb", "category", "property_type"},
	normalize.Agents:     {"id", "name", "username"},
}

const (
	multiText  = " A multi-valued parameter: repeat it (`key[]=a&key[]=b`, or `key=a&key=b`); both spellings name the same parameter and their values are merged. More than 500 values is an error on the field."
	singleText = " Single-valued: given twice with different values it is an error on the field. `%s[]` is accepted as the same parameter."
)

// listParameters adds the query parameters of resource r's list to params
// and returns their references, in normalize's order.
func listParameters(t *testing.T, r normalize.Resource, params obj) (obj, arr) {
	t.Helper()
	list := r.String()
	var refs arr
	keys := normalize.QueryKeys(r)
	for _, key := range keys {
		base, array := strings.CutSuffix(key, "[]")
		qp, ok := queryParams[base]
		if base == "order" {
			fields := make([]string, len(orderFields[r]))
			for i, f := range orderFields[r] {
				fields[i] = f.(string)
			}
			if r == normalize.Properties {
				qp = queryParam{o("type", "string", "enum", orderFields[r]), true,
					fmt.Sprintf("Fields to order by, ascending, in priority order; ties are broken by id. One of: %s. Error: `Invalid order \"x\": must be one of %[1]s`.", strings.Join(fields, ", "))}
			} else { // agents take one order field
				qp = queryParam{o("type", "string", "enum", orderFields[r]), false,
					fmt.Sprintf("Field to order by, ascending; ties are broken by id. One of: %s. Error: `Invalid order \"x\": must be one of %[1]s`.", strings.Join(fields, ", "))}
			}
			ok = true
		}
		if !ok {
			t.Fatalf("normalize accepts %q, which queryParams does not describe", key)
		}
		var desc string
		switch {
		case array:
			desc = "The same parameter as `" + base + "`."
		case !strings.Contains(base, "[") && qp.multi:
			desc = qp.desc + multiText + " An empty value counts as not given."
		case !strings.Contains(base, "["):
			desc = qp.desc + fmt.Sprintf(singleText, base) + " An empty value counts as not given."
		default: // geo's sub-keys
			desc = qp.desc + " Empty values count as not given."
		}
		schema := qp.schema
		p := o("name", key, "in", "query", "required", false, "description", desc)
		if qp.multi {
			p = append(p, kv{"schema", o("type", "array", "items", schema)}, kv{"style", "form"}, kv{"explode", true})
		} else {
			p = append(p, kv{"schema", schema})
		}
		name := "q-" + list + "-" + strings.NewReplacer("[]", "-array", "[", "-", "]", "").Replace(key)
		params = append(params, kv{name, p})
		refs = append(refs, o("$ref", "#/components/parameters/"+name))
	}
	return params, refs
}

const infoDescription = "The listing API as listingproxy implements it: the spec (docs/spec.md) plus the decisions in docs/api.md; the exact shapes are in docs/wire-format.md.\n\n" +
	"Each resource comes in XML and JSON, chosen by the path's extension, so every path is listed once per extension. All operations are GET (HEAD is accepted too, with the same headers and no body).\n\n" +
	"**Errors with HTTP 200.** As the spec says, invalid criteria (the error list, `ErrorList`), a resource that is not found, a bad id and a missing `full` permission (a single error, `Error`) are sent with HTTP 200: a client must look at the body's root key (`errors` or `error` instead of `properties`, `property`, `agents`, `agent`). Other statuses (400, 401, 404, 405, 429, 503) carry the single-error body, in the format of the path's extension (XML unless it ends in `.json`), with `Cache-Control: private, no-store`.\n\n" +
	"**JSON values are strings**: ids, counts, numbers, booleans (`\"display\":\"true\"`); `price_to` is `null` when absent. `openhome` and `error` are a single object when there is exactly one (the spec's rule); every other collection is an array.\n\n" +
	"**Compatibility switches** are set by the operator per tenant and per user (docs/api.md); they change JSON only, and the schemas admit both shapes:\n\n" +
	"- `json_numeric_ids`: every `id` that is a whole decimal number is a JSON number (`Id` is `string | integer`).\n" +
	"- `json_single_object` / `json_single_object_items`: a collection of exactly one item (`property`, `agent`, `photo`, `virtualtour`, `floorplan`, an agent's `property`, a CRM `video`) is that object instead of a one-element array (each such collection is `oneOf` an array and its item).\n" +
	"- `json_video_url`: each `video` of a CRM pass-through record is an object with its text under `url`, rather than a string.\n\n" +
	"A client that wants one shape should normalise with a helper (`Array.isArray(x) ? x : [x]`, `String(id)`), or ask its operator for a user without switches, which gets exactly the arrays and string ids.\n\n" +
	"Records passed through from a CRM backend may carry elements the spec does not name (`videos`, `garages`...) for callers allowed them; the schemas do not forbid further keys.\n"

func hdr(name string) obj { return o("$ref", "#/components/headers/"+name) }

// errorContent is a single-error body in the format of the path's
// extension.
func errorContent(ext, msg string) obj {
	if ext == "json" {
		return o("application/json", o("schema", ref("Error"), "example", o("error", msg)))
	}
	return o("application/xml", o("schema", o("type", "string"), "example", "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<error>"+msg+"</error>\n"))
}

// example names a golden body (testdata/golden/FILE.json and .xml).
type example struct{ name, summary, file string }

func buildDocument(t *testing.T) []byte {
	t.Helper()
	golden := func(name string) []byte {
		b, err := os.ReadFile(filepath.Join("../testdata/golden", name))
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	params, propRefs := listParameters(t, normalize.Properties, nil)
	params, agentRefs := listParameters(t, normalize.Agents, params)
	params = append(params,
		kv{"country", o("name", "country", "in", "path", "required", true, "description", "Country segment (configured; `au` and `nz` by default). Another segment is HTTP 404 with the single error `Unknown country \"xx\"`.", "schema", o("type", "string", "examples", arr{"au", "nz"}))},
		kv{"id-path", o("name", "id", "in", "path", "required", true, "description", "The service id. A segment that is not a whole number is answered with HTTP 200 and the single error `ID \"12x\" is not a valid number`.", "schema", idSchema)},
		kv{"if-none-match", o("name", "If-None-Match", "in", "header", "required", false, "description", "ETags of bodies the client holds (weak comparison): 304 when one is the body's. `*` matches only a body the cache already held for this caller's tenant and permissions and that is not an error body.", "schema", textSchema)},
	)
	headers := o(
		"ETag", o("description", "Entity tag of the body (a different one for its gzip form).", "schema", textSchema),
		"Vary", o("description", "`Accept-Encoding, Authorization`.", "schema", textSchema),
		"Cache-Status", o("description", "How the proxy's cache answered (RFC 9211).", "schema", textSchema),
		"Age", o("description", "Seconds since the body was fetched from the backend (a cached answer).", "schema", o("type", "integer")),
		"WWW-Authenticate", o("description", "`Basic realm=\"listings\", charset=\"UTF-8\"`.", "schema", textSchema, "required", true),
		"Retry-After", o("description", "Seconds to wait before trying again.", "schema", o("type", "integer", "minimum", 1), "required", true),
		"Allow", o("description", "`GET, HEAD`.", "schema", o("type", "string", "const", "GET, HEAD"), "required", true),
		"Cache-Control-error", o("description", "`private, no-store` on every error status.", "schema", textSchema),
	)
	noStore := hdr("Cache-Control-error")
	// The error answers, once per format (Not found and so on are in the
	// format of the path's extension): JSONNotFound, XMLNotFound...
	responses := obj{}
	for _, ext := range []string{"json", "xml"} {
		f := strings.ToUpper(ext)
		responses = append(responses,
			kv{f + "BadRequest", o("description", "A request target that is not a clean path (`*`, empty, `.` or `..` segments).",
				"headers", o("Cache-Control", noStore), "content", errorContent(ext, `Bad request: the path must not contain empty, "." or ".." segments`))},
			kv{f + "Unauthorized", o("description", "Missing or wrong credentials (HTTP Basic).", "headers", o("WWW-Authenticate", hdr("WWW-Authenticate"), "Cache-Control", noStore),
				"content", errorContent(ext, "Authentication required: a valid username and password are needed"))},
			kv{f + "NotFound", o("description", "An unknown path or extension (`Not found`) or an unknown country segment (`Unknown country \"xx\"`).",
				"headers", o("Cache-Control", noStore), "content", errorContent(ext, "Not found"))},
			kv{f + "MethodNotAllowed", o("description", "A method other than GET or HEAD.", "headers", o("Allow", hdr("Allow"), "Cache-Control", noStore),
				"content", errorContent(ext, "Method not allowed: use GET or HEAD"))},
			kv{f + "TooManyRequests", o("description", "Throttled: too many failed sign-ins from the client address or for the username (`Too many failed sign-in attempts; please try again later`), too many unverified sign-ins at once (`Too many sign-in attempts at once; please try again shortly`, `Retry-After: 1`), or the tenant's rate limit (`Too many requests; please slow down and try again shortly`).",
				"headers", o("Retry-After", hdr("Retry-After"), "Cache-Control", noStore), "content", errorContent(ext, "Too many requests; please slow down and try again shortly"))},
			kv{f + "Unavailable", o("description", "The backend is unavailable and nothing stale can be served. The body reveals no backend detail.",
				"headers", o("Retry-After", hdr("Retry-After"), "Cache-Control", noStore), "content", errorContent(ext, "The listing service is temporarily unavailable; please try again shortly"))},
		)
	}
	responses = append(responses, kv{"NotModified", o("description", "Not modified: an `If-None-Match` ETag matched.", "headers", o("ETag", hdr("ETag")))})
	okHeaders := o("ETag", hdr("ETag"), "Vary", hdr("Vary"), "Cache-Status", hdr("Cache-Status"), "Age", hdr("Age"))
	const xmlDoc = " See docs/wire-format.md for the exact XML shapes (element order, attributes, empty values); testdata/golden/ in the repository holds a document for every endpoint, format and detail level."
	op := func(id, summary, desc string, params arr, ext, schema, xmlDesc, tag string, examples []example) obj {
		var content obj
		exs := obj{}
		for _, e := range examples {
			if ext == "json" {
				exs = append(exs, kv{e.name, o("summary", e.summary, "value", json.RawMessage(bytes.TrimSpace(golden(e.file+".json"))))})
			} else {
				exs = append(exs, kv{e.name, o("summary", e.summary, "value", string(golden(e.file+".xml")))})
			}
		}
		if ext == "json" {
			content = o("application/json", o("schema", ref(schema), "examples", exs))
		} else {
			content = o("application/xml", o("schema", o("type", "string", "description", xmlDesc), "examples", exs))
		}
		rs := o("200", o("description", "The resource, or the spec's error body, which is also sent with HTTP 200 (see the schema's `oneOf`).", "headers", okHeaders, "content", content))
		rs = append(rs, kv{"304", o("$ref", "#/components/responses/NotModified")})
		for _, c := range []struct{ code, name string }{{"400", "BadRequest"}, {"401", "Unauthorized"}, {"404", "NotFound"}, {"405", "MethodNotAllowed"}, {"429", "TooManyRequests"}, {"503", "Unavailable"}} {
			rs = append(rs, kv{c.code, o("$ref", "#/components/responses/"+strings.ToUpper(ext)+c.name)})
		}
		return o("operationId", id, "summary", summary, "description", desc, "tags", arr{tag},
			"parameters", append(append(arr{}, params...), o("$ref", "#/components/parameters/if-none-match")), "responses", rs)
	}
	country := o("$ref", "#/components/parameters/country")
	idPath := o("$ref", "#/components/parameters/id-path")
	paths := obj{}
	for _, ext := range []string{"json", "xml"} {
		f := strings.ToUpper(ext)
		paths = append(paths,
			kv{"/{country}/properties." + ext, o("parameters", arr{country}, "get", op("listProperties"+f, "List properties ("+f+")",
				"Rules: `id` replaces every filter (rule 1); otherwise `agency_id` does (rule 2); otherwise all filters apply together. Invalid criteria give the error list with HTTP 200. Unknown parameters are ignored.",
				propRefs, ext, "PropertyListResponse", "Root `properties` with attribute `count`, holding `property` elements (attributes `id`, `last_updated`); criteria errors: root `errors`."+xmlDoc, "properties",
				[]example{{"short", "A list in short detail (testdata/golden/properties-short)", "properties-short"}, {"errors", "Criteria errors, HTTP 200", "errors-several"}, {"oneError", "One criteria error: `error` is an object, HTTP 200", "errors-one"}}))},
			kv{"/{country}/properties/{id}." + ext, o("parameters", arr{country, idPath}, "get", op("getProperty"+f, "Get a property ("+f+")",
				"Always full detail, which needs the `full` permission (else the single error `Full detail requires the full permission`, HTTP 200). A missing id (or another tenant's) is the single error `Property with ID 9 not found`, HTTP 200.",
				nil, ext, "PropertyResponse", "Root `property` (attributes `id`, `last_updated`); not found: root `error`."+xmlDoc, "properties",
				[]example{{"property", "A property (testdata/golden/property)", "property"}, {"notFound", "Not found, HTTP 200", "property-not-found"}, {"badId", "An id that is not a number, HTTP 200", "property-bad-id"}}))},
			kv{"/{country}/agents." + ext, o("parameters", arr{country}, "get", op("listAgents"+f, "List agents ("+f+")",
				"`id` replaces every filter (rule 1); otherwise all criteria apply together. Invalid criteria give the error list with HTTP 200. Unknown parameters are ignored.",
				agentRefs, ext, "AgentListResponse", "Root `agents` with attribute `count`, holding `agent` elements (attribute `id`); criteria errors: root `errors`."+xmlDoc, "agents",
				[]example{{"short", "A list in short detail (testdata/golden/agents-short)", "agents-short"}, {"errors", "Criteria errors, HTTP 200", "errors-several"}}))},
			kv{"/{country}/agents/{id}." + ext, o("parameters", arr{country, idPath}, "get", op("getAgent"+f, "Get an agent ("+f+")",
				"Always full detail, which needs the `full` permission. A missing id is the single error `Agent with ID 9 not found`, HTTP 200.",
				nil, ext, "AgentResponse", "Root `agent` (attribute `id`); not found: root `error`."+xmlDoc, "agents",
				[]example{{"agent", "An agent (testdata/golden/agent)", "agent"}, {"notFound", "Not found, HTTP 200", "agent-not-found"}}))},
		)
	}
	paths = append(paths, kv{"/openapi.json", o("get", o("operationId", "getOpenAPI", "summary", "This document", "tags", arr{"meta"}, "security", arr{},
		"description", "Served without credentials, from the binary: `Content-Type: application/json`, a strong `ETag` (304 for a matching `If-None-Match`) and `Cache-Control: public, max-age=3600`.",
		"responses", o(
			"200", o("description", "The OpenAPI document.", "headers", o("ETag", hdr("ETag")), "content", o("application/json", o("schema", o("type", "object")))),
			"304", o("$ref", "#/components/responses/NotModified"),
			"405", o("$ref", "#/components/responses/JSONMethodNotAllowed"))))})

	doc := o(
		"openapi", "3.1.0",
		"info", o("title", "Listing API (listingproxy)", "version", "1.0.0", "summary", "Read-only properties and agents of the caller's tenant, in XML or JSON.",
			"description", infoDescription, "license", o("name", "Proprietary", "identifier", "LicenseRef-Proprietary")),
		"servers", arr{o("url", "/", "description", "The listingproxy that serves this document.")},
		"security", arr{o("basicAuth", arr{})},
		"tags", arr{o("name", "properties", "description", "Real-estate properties of the caller's tenant."), o("name", "agents", "description", "Agents of the caller's tenant."), o("name", "meta", "description", "This description itself.")},
		"paths", paths,
		"components", o(
			"securitySchemes", o("basicAuth", o("type", "http", "scheme", "basic", "description", "HTTP Basic; realm `listings`. The operator issues the credentials; each user belongs to one tenant and has permissions (`full`, `prices`) and compatibility switches of its own.")),
			"parameters", params, "headers", headers, "responses", responses, "schemas", schemas()),
	)
	var compact bytes.Buffer
	if err := encode(&compact, doc); err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	if err := json.Indent(&out, compact.Bytes(), "", "  "); err != nil {
		t.Fatal(err)
	}
	out.WriteByte('\n')
	return out.Bytes()
}
