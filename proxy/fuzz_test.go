package proxy_test

import (
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"

	"listingproxy/proxy"
)

// FuzzRouter sends arbitrary paths and queries through the whole handler:
// never a panic, never a 500, and every answer carries a body in the spec's
// shape.
func FuzzRouter(f *testing.F) {
	seeds := []string{
		"/au/properties.xml", "/nz/agents.json?name=jane", "/au/properties/1.json", "/au/agents/abc.xml",
		"/au/properties.json?id[]=1&id=2&geo[lat][x]=1", "/au/properties.xml?geo[lat]=NaN&geo[long]=1e309&geo[rad]=-1",
		"/au/properties.json?limit=99999999999999999999999&offset=-1", "/au/properties.json?=&&=x&%00=1",
		"/au/properties.json?status=%E2%80%A8&category=%ff", "/xx/properties.xml", "/au/properties/%2e%2e.xml",
		"/au/properties.json?detail=full&order=price&order=id&order=nope", "/au/agents.xml?id=1&id=x",
		"/au/properties.json?" + strings.Repeat("status=sold&", 10000),
	}
	for _, s := range seeds {
		f.Add(s)
	}
	fb := newFake()
	s := newServer(f, fb, proxy.Options{Cache: newCache(f)})
	f.Fuzz(func(t *testing.T, target string) {
		u, err := url.Parse(target)
		if err != nil || !strings.HasPrefix(u.Path, "/") || u.Host != "" || u.Scheme != "" {
			t.Skip()
		}
		for _, user := range []string{"harbour", "harbour-short"} {
			r := httptest.NewRequest("GET", "/", nil)
			r.URL = u
			r.RequestURI = u.RequestURI()
			r.Header.Set("Authorization", basic(user))
			w := httptest.NewRecorder()
			s.ServeHTTP(w, r)
			if w.Code >= 500 {
				t.Fatalf("%s as %s: status %d: %s", target, user, w.Code, w.Body)
			}
			if w.Code != http.StatusMovedPermanently && w.Body.Len() == 0 {
				t.Fatalf("%s as %s: status %d with an empty body", target, user, w.Code)
			}
		}
	})
}
