package main

import (
	"bytes"
	"encoding/json"
	"encoding/xml"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"listingproxy/cache"
	"listingproxy/upstream/crm"
)

// nsRecord is a property record whose elements carry prefix p (with the
// declaration decl on the record itself, or none when its list declares it).
func nsRecord(p, decl string) string {
	return `<` + p + `property` + decl + ` id="3301" last_updated="Tue Nov 3 09:05:00 +1000 2026">` +
		`<` + p + `agency_id>QLD-3301</` + p + `agency_id><` + p + `status>CURRENT</` + p + `status>` +
		`<` + p + `price_from>1650000.00</` + p + `price_from><` + p + `suburb>New Farm</` + p + `suburb>` +
		`<` + p + `photos count="0"/><` + p + `agents count="0"/><` + p + `openhomes count="0"/></` + p + `property>`
}

// TestNamespacedLegacy: documents with a default namespace on the root or
// on the records, or with prefixed records, are served in every hydrate
// mode, to a caller with the upstream user's permissions and to a narrower
// one, as well-formed XML whose every element is in the namespace the
// legacy gave it (no prefix left undeclared, no element moved out of its
// namespace; a hydrated list keeps its root's declaration), and as JSON.
func TestNamespacedLegacy(t *testing.T) {
	for _, tc := range []struct{ name, list, single string }{
		{"default on the root", `<properties xmlns="urn:crm" count="1">` + "\n  " + nsRecord("", "") + "\n</properties>\n", nsRecord("", ` xmlns="urn:crm"`)},
		{"default on the records", `<properties count="1">` + "\n  " + nsRecord("", ` xmlns="urn:crm"`) + "\n</properties>\n", nsRecord("", ` xmlns="urn:crm"`)},
		{"prefixed", `<crm:properties xmlns:crm="urn:crm" count="1">` + "\n  " + nsRecord("crm:", "") + "\n</crm:properties>\n", nsRecord("crm:", ` xmlns:crm="urn:crm"`)},
	} {
		legacy := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "application/xml")
			io.WriteString(w, `<?xml version="1.0" encoding="UTF-8"?>`+"\n")
			if strings.HasPrefix(r.URL.Path, "/au/properties/") {
				io.WriteString(w, tc.single+"\n")
				return
			}
			io.WriteString(w, tc.list)
		}))
		defer legacy.Close()
		// The namespace every element of the legacy's list is in.
		legacyNS := namespaces(t, []byte(tc.list))
		for _, mode := range []crm.HydrateMode{crm.HydrateNever, crm.HydrateAlways, crm.HydrateAuto} {
			t.Run(tc.name+"/"+mode.String(), func(t *testing.T) {
				c, err := cache.New(cache.Options{Now: fixedNow})
				if err != nil {
					t.Fatal(err)
				}
				front, _ := newFrontWith(t, crm.Options{BaseURL: legacy.URL, Hydrate: mode, PassThrough: true}, c)
				for _, user := range []string{"harbour", "harbour-noprice"} {
					// The full list twice: hydrate auto hydrates the second
					// (its documents cached by the first).
					for _, path := range []string{"/au/properties.xml?detail=full&limit=10", "/au/properties.xml?detail=full&limit=10", "/au/properties.xml?limit=10", "/au/properties/3301.xml"} {
						status, _, body := get(t, front, "", request{user: user, password: passwordOf(user), path: path})
						if status != http.StatusOK {
							t.Fatalf("%s %s: %d\n%s", user, path, status, body)
						}
						for el, ns := range namespaces(t, body) {
							if want, ok := legacyNS[el]; ok && want != ns {
								t.Errorf("%s %s: <%s> in namespace %q, the legacy's is %q\n%s", user, path, el, ns, want, body)
							}
						}
						if user == "harbour" && strings.Contains(path, "properties.xml") && mode == crm.HydrateNever && string(body) != `<?xml version="1.0" encoding="UTF-8"?>`+"\n"+tc.list {
							t.Errorf("not as written:\n%s", body)
						}
						jpath := strings.Replace(path, ".xml", ".json", 1)
						status, _, body = get(t, front, "", request{user: user, password: passwordOf(user), path: jpath})
						if status != http.StatusOK || !json.Valid(body) || !bytes.Contains(body, []byte(`"suburb":"New Farm"`)) {
							t.Errorf("%s %s: %d\n%s", user, jpath, status, body)
						}
					}
				}
			})
		}
	}
}

// namespaces returns the namespace of each element name of doc, failing
// on a document that is not well-formed or uses an undeclared prefix.
func namespaces(t *testing.T, doc []byte) map[string]string {
	t.Helper()
	out := map[string]string{}
	d := xml.NewDecoder(bytes.NewReader(doc))
	for {
		tok, err := d.Token()
		if err == io.EOF {
			return out
		}
		if err != nil {
			t.Fatalf("not well-formed: %v\n%s", err, doc)
		}
		if s, ok := tok.(xml.StartElement); ok {
			if s.Name.Space != "" && !strings.Contains(s.Name.Space, ":") {
				t.Fatalf("undeclared prefix %q on <%s>\n%s", s.Name.Space, s.Name.Local, doc)
			}
			out[s.Name.Local] = s.Name.Space
		}
	}
}
