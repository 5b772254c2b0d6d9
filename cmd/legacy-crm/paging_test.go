package main

import (
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strings"
	"testing"

	"listingproxy/upstream/crm"
)

// TestLegacyIgnoresPaging: a legacy that ignores limit and offset (sends
// every record, whatever it was asked) is paged by listingproxy: a client
// that sends limit and offset gets that page, in XML and JSON, short and
// full, in every hydrate mode, and the answer is counted.
func TestLegacyIgnoresPaging(t *testing.T) {
	record := func(id int, full bool) string {
		r := fmt.Sprintf(`<property id="%d" last_updated="Tue Nov 3 09:05:00 +1000 2026"><agency_id>A-%d</agency_id><status>CURRENT</status>`, id, id)
		if full {
			r += `<suburb>New Farm</suburb><openhomes count="0"/>`
		}
		return r + `<photos count="0"/><agents count="0"/></property>`
	}
	legacy := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/xml")
		var id int
		if _, err := fmt.Sscanf(r.URL.Path, "/au/properties/%d.xml", &id); err == nil {
			io.WriteString(w, `<?xml version="1.0" encoding="UTF-8"?>`+"\n"+record(id, true)+"\n")
			return
		}
		full := r.URL.Query().Get("detail") == "full"
		var b strings.Builder
		b.WriteString(`<?xml version="1.0" encoding="UTF-8"?>` + "\n" + `<properties count="20">`)
		for id := 1; id <= 20; id++ {
			b.WriteString("\n  " + record(id, full))
		}
		b.WriteString("\n</properties>\n")
		io.WriteString(w, b.String())
	}))
	defer legacy.Close()
	ids := regexp.MustCompile(`property id="(\d+)"|"id":"(\d+)"`)
	for _, mode := range []crm.HydrateMode{crm.HydrateNever, crm.HydrateAlways} {
		front, client := newFrontWith(t, crm.Options{BaseURL: legacy.URL, Hydrate: mode, PassThrough: true}, nil)
		for _, user := range []string{"harbour", "harbour-noprice"} {
			for _, path := range []string{"/au/properties.xml?limit=5&offset=10", "/au/properties.json?limit=5&offset=10",
				"/au/properties.xml?detail=full&limit=5&offset=10", "/au/properties.json?detail=full&limit=5&offset=10"} {
				status, _, body := get(t, front, "", request{user: user, password: passwordOf(user), path: path})
				var got []string
				for _, m := range ids.FindAllStringSubmatch(string(body), -1) {
					got = append(got, m[1]+m[2])
				}
				if status != http.StatusOK || strings.Join(got, ",") != "11,12,13,14,15" {
					t.Errorf("%s, %s %s: %d, ids %v; want 200, 11-15\n%s", mode, user, path, status, got, body)
				}
				if !strings.Contains(string(body), `count="5"`) && !strings.Contains(string(body), `"count":"5"`) {
					t.Errorf("%s, %s %s: count is not 5\n%s", mode, user, path, body)
				}
			}
		}
		if got := client.Stats().PagedHere; got == 0 {
			t.Errorf("%s: Stats.PagedHere = 0, want the paged answers counted", mode)
		}
	}
}
