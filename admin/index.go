package admin

import (
	"fmt"
	"html/template"
	"mime"
	"net/http"
	"strconv"
	"strings"
	"text/tabwriter"
)

// endpoint is a route of the admin listener, as GET / lists it.
type endpoint struct {
	Method, Path string
	// Auth: behind the operator's credentials.
	Auth bool
	What string
}

// endpoints lists the admin listener's routes that o mounts.
func (o Options) endpoints() []endpoint {
	eps := []endpoint{
		{"GET", "/", false, "this list (text/plain, or HTML for Accept: text/html)"},
		{"GET", "/healthz", false, "the process answers"},
		{"GET", "/readyz", false, "it can serve: not draining or warming (503 with the reason otherwise)"},
	}
	if o.Metrics != nil {
		eps = append(eps, endpoint{"GET", "/metrics", false, "Prometheus metrics"})
	}
	if o.StatusPage != nil {
		eps = append(eps,
			endpoint{"GET", "/status", true, "the operator's page: tenants, backends, cache tiers, change feeds, the fleet"},
			endpoint{"GET", "/status.json", true, "the status page's data as JSON"})
	}
	return append(eps,
		endpoint{"GET", "/backends", true, "each backend's readiness, a ping, its breakers and concurrency limit; the second tiers"},
		endpoint{"POST", "/cache/purge", true, "purge a tenant's cached bodies (tenant=, resource=, url=, property=, agent=, mode=soft|hard)"},
		endpoint{"GET", "/cache/explain", true, "what the cache holds for a user's request and why the next one would miss (user=, url=)"},
		endpoint{"GET", "/cache/keys", true, "a tenant's keys held in memory, paged (tenant=, limit=, after=)"},
		endpoint{"GET", "/debug/pprof/", true, "Go profiles"},
	)
}

var indexTemplate = template.Must(template.New("index").Parse(`<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>listingproxy admin</title>
<style>body { font: 13px/1.4 system-ui, sans-serif; margin: 1em 2em; } td { padding: 2px 8px; vertical-align: top; }</style>
</head><body>
<h1>listingproxy admin</h1>
<table id="endpoints"><thead><tr><th>method</th><th>path</th><th>credentials</th><th>what</th></tr></thead><tbody>
{{range .}}<tr><td>{{.Method}}</td><td>{{if eq .Method "GET"}}<a href="{{.Path}}">{{.Path}}</a>{{else}}{{.Path}}{{end}}</td><td>{{if .Auth}}admin{{end}}</td><td>{{.What}}</td></tr>
{{end}}</tbody></table>
</body></html>
`))

// indexHandler answers GET / with the list of endpoints: HTML for a
// client that accepts text/html (a browser), text/plain otherwise (curl).
func indexHandler(eps []endpoint) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Vary", "Accept")
		if acceptsHTML(r.Header.Values("Accept")) {
			w.Header().Set("Content-Type", "text/html; charset=utf-8")
			_ = indexTemplate.Execute(w, eps)
			return
		}
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		fmt.Fprintln(w, "listingproxy admin endpoints (admin: behind the operator's credentials)")
		tw := tabwriter.NewWriter(w, 0, 8, 2, ' ', 0)
		for _, e := range eps {
			auth := ""
			if e.Auth {
				auth = "admin"
			}
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\n", e.Method, e.Path, auth, e.What)
		}
		_ = tw.Flush()
	})
}

// acceptsHTML reports whether an Accept header names text/html (with a
// q above 0).
func acceptsHTML(accept []string) bool {
	for _, v := range accept {
		for part := range strings.SplitSeq(v, ",") {
			mt, params, err := mime.ParseMediaType(strings.TrimSpace(part))
			if err != nil || mt != "text/html" {
				continue
			}
			if q, ok := params["q"]; ok {
				if f, err := strconv.ParseFloat(q, 64); err != nil || f <= 0 {
					continue
				}
			}
			return true
		}
	}
	return false
}
