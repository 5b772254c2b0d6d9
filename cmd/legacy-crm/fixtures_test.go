package main

import (
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"listingproxy/docdiff"
	"listingproxy/internal/legacyfixture"
	"listingproxy/upstream/crm"
)

// TestFixtureFidelity puts listingproxy in front of the stand-in serving
// hand-written legacy documents (testdata/fixtures: decimals and times as
// a real endpoint writes them, tabs, a comment, unknown elements and
// attributes, <br/> in a description, an empty latitude, "3+" bedrooms, a
// time in approved, an open home in Sydney's daylight-saving gap, text/html
// as content type), none produced by
// listingproxy's writers. A caller with the upstream user's permissions
// gets each document structurally equal to the legacy's, every text as
// written; a caller without prices gets neither raw prices nor the unknown
// fields; the not-found message is the legacy's own.
func TestFixtureFidelity(t *testing.T) {
	const dir = "testdata/fixtures"
	legacy := httptest.NewServer(legacyfixture.Handler(dir, "text/html; charset=UTF-8", http.NotFoundHandler()))
	defer legacy.Close()
	front, _ := newFrontWith(t, crm.Options{BaseURL: legacy.URL, Hydrate: crm.HydrateNever, PassThrough: true}, nil)

	for _, tc := range []struct{ path, file string }{
		{"/au/properties.xml?detail=full&limit=10", "au/properties.xml"},
		{"/au/properties/3301.xml", "au/properties/3301.xml"},
		{"/au/agents/51.xml", "au/agents/51.xml"},
		{"/au/properties/9998.xml", "au/properties/9998.xml"},
	} {
		t.Run(tc.path, func(t *testing.T) {
			want, err := os.ReadFile(filepath.Join(dir, tc.file))
			if err != nil {
				t.Fatal(err)
			}
			status, ct, body := get(t, front, "", request{user: "harbour", password: passwordOf("harbour"), path: tc.path})
			if status != http.StatusOK || !strings.HasPrefix(ct, "application/xml") {
				t.Fatalf("status %d, content type %q: want 200 XML\n%s", status, ct, body)
			}
			for _, d := range docdiff.Compare(want, body, docdiff.XML) {
				t.Errorf("differs from the legacy document: %s", d)
			}
			if string(body) != string(want) {
				t.Errorf("not byte for byte the legacy document (-legacy +listingproxy):\n%s", cmp.Diff(string(want), string(body)))
			}
			for _, asWritten := range []string{"1650000.00", "-27.4705000", "320.0", "Tue Nov 3 09:05:00 +1000 2026", "12  Smith Street", "Line one<br/>Line two", "<garages>2</garages>", `width="1024"`, "3+", "2026-09-01 14:22:05", "<fax>", "Listing 9998 is no longer available",
				"<start>2099-10-04 02:00:00</start><end>2099-10-04 02:30:00</end>"} { // in Sydney's daylight-saving gap: not moved, not made zero-length
				if strings.Contains(string(want), asWritten) && !strings.Contains(string(body), asWritten) {
					t.Errorf("%q is not passed through as written:\n%s", asWritten, body)
				}
			}
			_, _, narrow := get(t, front, "", request{user: "harbour-noprice", password: passwordOf("harbour-noprice"), path: tc.path})
			for _, never := range []string{"price_from", "price_to", "garages", "videos", "homeviews", "width=", "lang=", "<fax>"} {
				if strings.Contains(string(narrow), never) {
					t.Errorf("a caller without prices sees %s:\n%s", never, narrow)
				}
			}
		})
	}
	status, _, body := get(t, front, "", request{user: "harbour", password: passwordOf("harbour"), path: "/au/properties.json?detail=full&limit=10"})
	for _, want := range []string{`"garages":"2"`, `"price_from":"1650000.00"`, `"videos":{"count":"1","video":["https://video.example/3301.mp4"]}`, `"bedrooms":"3+"`,
		`"openhomes":{"count":"2","openhome":[{"start":"2099-10-04 02:00:00","end":"2099-10-04 02:30:00"},{"start":"2099-11-28 10:00:00","end":"2099-11-28 10:30:00"}]}`} {
		if status != http.StatusOK || !strings.Contains(string(body), want) {
			t.Errorf("JSON %d lacks %s:\n%s", status, want, body)
		}
	}
}
