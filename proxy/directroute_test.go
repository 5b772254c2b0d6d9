package proxy_test

import (
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"listingproxy/proxy"
)

// TestDirectRoutesAgreeWithServeMux sends the same request lines, one after
// the other, to two servers on the same backend: one that finds its GET
// routes without the ServeMux (route), one that routes everything through
// it. Every answer must be the same (status, body, every header but the
// per-response ones), and so must the route telemetry names it by
// (Request.Pattern). The targets cover each shape the direct routes take
// and the near misses they must leave to the ServeMux: escapes that change
// the segments, other methods, trailing slashes, extra or missing
// segments, unknown resources and extensions.
func TestDirectRoutesAgreeWithServeMux(t *testing.T) {
	direct := newServer(t, newFake(), proxy.Options{})
	viaMux := newServer(t, newFake(), proxy.Options{})
	proxy.WithoutDirectRoutes(viaMux)

	type answer struct {
		Status  int
		Header  http.Header
		Body    string
		Pattern string
	}
	// byRoute counts the requests the direct server's route answered: a
	// GET pattern with no path values, which only the ServeMux sets. Each
	// server's handler hands the pattern it saw to send over a channel once
	// it has returned (the client may have the whole response before that).
	// Every target here is a request line net/http passes to the handler.
	byRoute := 0
	type seen struct {
		pattern string
		byRoute bool
	}
	serve := func(s http.Handler, direct bool) (addr string, handled chan seen) {
		handled = make(chan seen, 1)
		ts := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			s.ServeHTTP(w, r)
			handled <- seen{r.Pattern, direct && strings.HasPrefix(r.Pattern, "GET ") && r.PathValue("country") == ""}
		}))
		ts.Config.DisableGeneralOptionsHandler = true
		ts.Start()
		t.Cleanup(ts.Close)
		return ts.Listener.Addr().String(), handled
	}
	send := func(addr string, handled chan seen, method, target, user string) answer {
		t.Helper()
		resp, body := exchangeRaw(t, addr, method, target, user)
		for _, k := range []string{"Date", "X-Request-Id", "Age"} {
			resp.Header.Del(k)
		}
		h := <-handled
		if h.byRoute {
			byRoute++
		}
		return answer{resp.StatusCode, resp.Header, body, h.pattern}
	}
	dAddr, dPat := serve(direct, true)
	mAddr, mPat := serve(viaMux, false)

	// Each method and user that can change the answer: anonymous, a full
	// and a short permission level, another tenant (with GET only: the
	// others are answered before authentication).
	type caller struct{ method, user string }
	callers := []caller{{"GET", ""}, {"GET", "harbour"}, {"GET", "harbour-short"}, {"GET", "summit"},
		{"HEAD", "harbour"}, {"POST", "harbour"}, {"DELETE", ""}, {"OPTIONS", "harbour"}, {"TRACE", ""}}
	for _, target := range directRouteTargets {
		for _, c := range callers {
			got := send(dAddr, dPat, c.method, target, c.user)
			want := send(mAddr, mPat, c.method, target, c.user)
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("%s %s as %q: direct routes (+) differ from the ServeMux (-):\n%s", c.method, target, c.user, diff)
			}
		}
	}
	// The comparison means something only if route answered many of them:
	// the 18 routable targets' GETs and HEADs (5 callers each) at least.
	if byRoute < 18*5 {
		t.Fatalf("route answered only %d requests: the corpus no longer exercises it", byRoute)
	}
}

// directRouteTargets are the request targets the direct routes are compared
// on: each shape they take and the near misses they must leave alone.
var directRouteTargets = []string{
	"/au/properties.xml", "/nz/properties.json", "/au/agents.xml", "/nz/agents.json",
	"/au/properties.xml?limit=2&order=price", "/au/properties.json?detail=full&limit=1",
	"/au/properties/1.xml", "/au/properties/1.json", "/nz/agents/7.json", "/au/agents/1.xml",
	"/au/properties/abc.xml", "/au/properties/1", "/au/properties/1.yaml", "/au/properties/1.xml.json",
	"/xx/properties.xml", "/xx/properties/1.json", "/AU/properties.xml",
	"/au/properties.yaml", "/au/properties", "/au/agents", "/au/houses.xml", "/au/houses/1.xml",
	"/au/properties/", "/au/properties.xml/", "/au/properties/1.xml/", "/au/properties/1.xml/x",
	"/au", "/au/", "/", "/properties.xml", "/au/x/properties.xml",
	"/a%75/properties.xml", "/au/propert%69es.xml", "/au/properties%2Exml", "/au%2Fx/properties.xml",
	"/au/properties/1%2Fx.xml", "/au/properties%2F1.xml", "/au/properties/%31.xml", "/a%20u/properties.json",
	"/au/properties/1%20.xml", "http://listings.example/au/properties/1.xml",
	"/openapi.json", "/openapi.json/", "/au/openapi.json", "/openapi.xml", "/openapi%2Ejson",
}

// FuzzDirectRoutes compares, for arbitrary targets and methods, the answer
// of a server with direct routes and of one routing through the ServeMux
// alone (status, body, content type, Allow, and the route name).
func FuzzDirectRoutes(f *testing.F) {
	methods := []string{"GET", "HEAD", "POST", "OPTIONS"}
	for i, target := range directRouteTargets {
		f.Add(target, uint8(i))
	}
	direct := newServer(f, newFake(), proxy.Options{Cache: newCache(f)})
	viaMux := newServer(f, newFake(), proxy.Options{Cache: newCache(f)})
	proxy.WithoutDirectRoutes(viaMux)
	f.Fuzz(func(t *testing.T, target string, m uint8) {
		u, err := url.Parse(target)
		if err != nil || !strings.HasPrefix(u.Path, "/") || u.Host != "" || u.Scheme != "" {
			t.Skip()
		}
		method := methods[int(m)%len(methods)]
		type answer struct {
			Status                   int
			ContentType, Allow, Body string
			Pattern                  string
		}
		ask := func(s http.Handler) answer {
			r := httptest.NewRequest(method, "/", nil)
			r.URL = u
			r.RequestURI = u.RequestURI()
			r.Header.Set("Authorization", basic("harbour"))
			w := httptest.NewRecorder()
			s.ServeHTTP(w, r)
			return answer{w.Code, w.Header().Get("Content-Type"), w.Header().Get("Allow"), w.Body.String(), r.Pattern}
		}
		want, got := ask(viaMux), ask(direct)
		if diff := cmp.Diff(want, got); diff != "" {
			t.Fatalf("%s %q: direct routes (+) differ from the ServeMux (-):\n%s", method, target, diff)
		}
	})
}
