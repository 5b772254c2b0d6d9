package proxy

import (
	"bytes"
	"net/http"
	"path"
	"strings"
	"time"

	"listingproxy/normalize"
	"listingproxy/openapi"
	"listingproxy/upstream"
	"listingproxy/wire"
)

// routes registers every route of the listing API. GET patterns also answer
// HEAD. The same paths without a method answer 405 for other methods, and
// every other path answers 404, both with the spec's single-error body.
//
// The order of decisions, every answer in the format of the path's
// extension (XML when it is not .json):
//
//  1. the request line (ServeHTTP, badRequestLine): CONNECT is 405; a
//     target that is not a path ("*") or a path with empty, "." or ".."
//     segments is 400. net/http rejects what it cannot parse before that.
//  2. the route (the mux): an unknown path is 404, a known path with a
//     method other than GET or HEAD is 405 with Allow: GET, HEAD.
//  3. authentication (api): 401 with WWW-Authenticate, or 429 when the
//     caller's address or username is throttled or the bcrypt pool is
//     full; then the tenant's rate limit (429).
//  4. the country, then the endpoint (criteria, permissions, cache,
//     backend).
//
// Steps 1 and 2 come before authentication on purpose: they depend on the
// request line alone, the same for every caller, and reveal nothing about a
// tenant; answering them first spares a bcrypt verification for requests
// that can never be served.
func (s *Server) routes() {
	listProperties := listEndpoint(s, normalize.Properties, resProperties, normalize.ParseProperties,
		upstream.Backend.ListProperties, wire.AppendPropertyList, propertyTags)
	listAgents := listEndpoint(s, normalize.Agents, resAgents, normalize.ParseAgents,
		upstream.Backend.ListAgents, wire.AppendAgentList, agentTags)
	getProperty := singleEndpoint(s, resProperty, "Property", upstream.Backend.GetProperty, wire.AppendProperty, PropertyTag, propertyTags)
	getAgent := singleEndpoint(s, resAgent, "Agent", upstream.Backend.GetAgent, wire.AppendAgent, AgentTag, agentTags)
	// get registers a GET route with the ServeMux and for route: lists by
	// their last segment ("properties.xml"), singles by their resource
	// ("properties").
	s.lists, s.singles = map[string]directRoute{}, map[string]directRoute{}
	get := func(pattern string, h http.Handler) {
		s.mux.Handle(pattern, h)
		s.getPatterns = append(s.getPatterns, pattern)
		rest := strings.TrimPrefix(pattern, "GET /{country}/")
		if res, ok := strings.CutSuffix(rest, "/{file}"); ok {
			s.singles[res] = directRoute{pattern, h}
		} else {
			s.lists[rest] = directRoute{pattern, h}
		}
	}
	s.warmRoutes = map[string]warmRoute{
		"GET /{country}/properties/{file}": {h: getProperty, single: true},
		"GET /{country}/agents/{file}":     {h: getAgent, single: true},
	}
	for _, ext := range []string{"xml", "json"} {
		s.warmRoutes["GET /{country}/properties."+ext] = warmRoute{h: listProperties, format: formatOf(ext)}
		s.warmRoutes["GET /{country}/agents."+ext] = warmRoute{h: listAgents, format: formatOf(ext)}
		get("GET /{country}/properties."+ext, s.api(formatOf(ext), listProperties))
		get("GET /{country}/agents."+ext, s.api(formatOf(ext), listAgents))
		s.mux.Handle("/{country}/properties."+ext, s.methodNotAllowed())
		s.mux.Handle("/{country}/agents."+ext, s.methodNotAllowed())
	}
	s.getPatterns = append(s.getPatterns, "GET /openapi.json")
	s.mux.Handle("GET /openapi.json", serveOpenAPI())
	s.mux.Handle("/openapi.json", s.methodNotAllowed())
	get("GET /{country}/properties/{file}", s.single(getProperty))
	get("GET /{country}/agents/{file}", s.single(getAgent))
	s.mux.Handle("/{country}/properties/{file}", s.methodNotAllowed())
	s.mux.Handle("/{country}/agents/{file}", s.methodNotAllowed())
	s.mux.Handle("/", s.notFound())
}

// serveOpenAPI serves the API's OpenAPI description, the same for every
// caller and without credentials (it reveals nothing about any tenant): a
// strong ETag of its content, so a client revalidates with If-None-Match
// (http.ServeContent answers 304, HEAD and ranges), and an hour of
// caching, since it changes only with the binary. The ServeMux routes it
// (one segment: never one of route's shapes), off the API's hit path.
func serveOpenAPI() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h := w.Header()
		h.Set("Content-Type", "application/json")
		h.Set("ETag", openapi.ETag)
		h.Set("Cache-Control", "public, max-age=3600")
		http.ServeContent(w, r, "", time.Time{}, bytes.NewReader(openapi.Document))
	})
}

// directRoute is a GET route that route finds without the ServeMux: its
// pattern as registered (for Request.Pattern) and its handler.
type directRoute struct {
	pattern string
	h       http.Handler
}

// route finds r's GET route without the ServeMux when r's path has one of
// the API's four shapes as plain segments, and reports false for anything
// else, which the ServeMux routes (and answers 404 or 405 for).
//
// Why: ServeMux's matching (its pattern tree, the wildcards' values, the
// slice that holds them) was about 5% of a cache hit's instructions
// (bench/callgrind-hit.sh), for four shapes a split of the path decides.
// The answer is the ServeMux's, which TestDirectRoutesAgreeWithServeMux
// checks request line by request line:
//   - only GET and HEAD (which GET patterns also match); every other method
//     goes to the ServeMux, for its 405 and Allow;
//   - only a path without escapes that change its segments (RawPath empty:
//     the decoded path has the escaped path's segments), already clean
//     (ServeHTTP's cleanPath), with two or three non-empty segments:
//     /{country}/{properties|agents}.{xml|json} and
//     /{country}/{properties|agents}/{file};
//   - r.Pattern is set to the pattern the ServeMux would have matched
//     (telemetry names routes by it); the path values, which only the
//     ServeMux sets, are read back from the path by pathValue.
func (s *Server) route(r *http.Request) (http.Handler, bool) {
	if r.Method != http.MethodGet && r.Method != http.MethodHead || r.URL.RawPath != "" {
		return nil, false
	}
	p := r.URL.Path // clean: starts with "/", no empty segment but a trailing one
	i := strings.IndexByte(p[1:], '/') + 1
	if i <= 1 { // one segment, or an empty country
		return nil, false
	}
	rest := p[i+1:] // "properties.xml", or "properties/1.xml"
	routes := s.lists
	if j := strings.IndexByte(rest, '/'); j >= 0 {
		// /{country}/{resource}/{file}: file non-empty, nothing after it.
		if file := rest[j+1:]; file == "" || strings.IndexByte(file, '/') >= 0 {
			return nil, false
		}
		routes, rest = s.singles, rest[:j]
	}
	d, ok := routes[rest]
	if !ok {
		return nil, false
	}
	r.Pattern = d.pattern
	return d.h, true
}

// pathValue is r.PathValue(name) for a request the ServeMux routed, and the
// same segment of the path for one that route found (name is "country",
// the first segment, or "file", the third).
func pathValue(r *http.Request, name string) string {
	if v := r.PathValue(name); v != "" {
		return v
	}
	if r.URL.RawPath != "" {
		return "" // routed by the ServeMux, which had no such value
	}
	p := r.URL.Path[1:]
	country, rest, _ := strings.Cut(p, "/")
	if name == "country" {
		return country
	}
	_, file, _ := strings.Cut(rest, "/")
	return file
}

func formatOf(ext string) wire.Format {
	f, _ := wire.ParseFormat(ext)
	return f
}

// requestFormat is the format named by the path's extension; XML when the
// extension is not one of ours (for error bodies).
func requestFormat(p string) (wire.Format, bool) {
	ext := path.Ext(p)
	if ext == "" {
		return wire.XML, false
	}
	f, ok := wire.ParseFormat(ext[1:])
	if !ok {
		return wire.XML, false
	}
	return f, true
}

// single serves /{country}/{resource}/{id}.{ext}; an unknown extension is 404.
func (s *Server) single(h apiHandler) http.Handler {
	handlers := map[wire.Format]http.Handler{
		wire.XML:  s.api(wire.XML, h),
		wire.JSON: s.api(wire.JSON, h),
	}
	nf := s.notFound()
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		f, ok := requestFormat(r.URL.Path)
		if !ok {
			nf.ServeHTTP(w, r)
			return
		}
		handlers[f].ServeHTTP(w, r)
	})
}

func (s *Server) notFound() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		f, _ := requestFormat(r.URL.Path)
		s.writeError(w, r, f, &Error{Status: http.StatusNotFound, Message: msgNotFound})
	})
}

func (s *Server) methodNotAllowed() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		f, _ := requestFormat(r.URL.Path)
		w.Header().Set("Allow", "GET, HEAD")
		s.writeError(w, r, f, &Error{Status: http.StatusMethodNotAllowed, Message: msgMethod})
	})
}

// Messages for request lines that name no resource.
const (
	msgBadPath   = `Bad request: the path must not contain empty, "." or ".." segments`
	msgBadTarget = "Bad request: the request target must be a path, such as /au/properties.xml"
)

// cleanPath reports whether p is a path ServeMux would route as it is: it
// starts with "/" and has no empty, "." or ".." segment (a trailing "/" is
// allowed: no route has one, so it is a 404). ServeMux would redirect any
// other path to its cleaned form, with an HTML body, before we could
// authenticate; we answer 400 instead.
func cleanPath(p string) bool {
	if p == "" || p[0] != '/' {
		return false
	}
	for i := 0; i < len(p); {
		j := i + 1
		for j < len(p) && p[j] != '/' {
			j++
		}
		switch seg := p[i+1 : j]; seg {
		case "":
			if j < len(p) {
				return false
			}
		case ".", "..":
			return false
		}
		i = j
	}
	return true
}

// badRequestLine answers a request that the routes must not see: CONNECT
// (405: we are not a tunnel), a target with no path (an absolute URI such
// as "http://host": 404, as for "/"), a target that is not a path ("*",
// whatever the method: 400) and an uncleaned path (400).
func (s *Server) badRequestLine(w http.ResponseWriter, r *http.Request) {
	p := r.URL.Path
	switch {
	case r.Method == http.MethodConnect:
		s.methodNotAllowed().ServeHTTP(w, r)
	case p == "" && r.URL.IsAbs():
		s.notFound().ServeHTTP(w, r)
	default:
		msg := msgBadPath
		if p == "" || p[0] != '/' {
			msg = msgBadTarget
		}
		f, _ := requestFormat(p)
		s.writeError(w, r, f, &Error{Status: http.StatusBadRequest, Message: msg})
	}
}
