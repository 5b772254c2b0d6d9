package proxy

import (
	"net/http"
	"path"

	"listingproxy/normalize"
	"listingproxy/proxy/render"
	"listingproxy/upstream"
)

// routes registers every route of the listing API. GET patterns also answer
// HEAD. The same paths without a method answer 405 for other methods, and
// every other path answers 404, both with the spec's single-error body.
func (s *Server) routes() {
	listProperties := listEndpoint(s, normalize.Properties, resProperties, normalize.ParseProperties,
		upstream.Backend.ListProperties, render.AppendPropertyList)
	listAgents := listEndpoint(s, normalize.Agents, resAgents, normalize.ParseAgents,
		upstream.Backend.ListAgents, render.AppendAgentList)
	getProperty := singleEndpoint(s, resProperty, "Property", upstream.Backend.GetProperty, render.AppendProperty)
	getAgent := singleEndpoint(s, resAgent, "Agent", upstream.Backend.GetAgent, render.AppendAgent)
	for _, ext := range []string{"xml", "json"} {
		s.mux.Handle("GET /{country}/properties."+ext, s.api(formatOf(ext), listProperties))
		s.mux.Handle("GET /{country}/agents."+ext, s.api(formatOf(ext), listAgents))
		s.mux.Handle("/{country}/properties."+ext, s.methodNotAllowed())
		s.mux.Handle("/{country}/agents."+ext, s.methodNotAllowed())
	}
	s.mux.Handle("GET /{country}/properties/{file}", s.single(getProperty))
	s.mux.Handle("GET /{country}/agents/{file}", s.single(getAgent))
	s.mux.Handle("/{country}/properties/{file}", s.methodNotAllowed())
	s.mux.Handle("/{country}/agents/{file}", s.methodNotAllowed())
	s.mux.Handle("/", s.notFound())
}

func formatOf(ext string) render.Format {
	f, _ := render.ParseFormat(ext)
	return f
}

// requestFormat is the format named by the path's extension; XML when the
// extension is not one of ours (for error bodies).
func requestFormat(p string) (render.Format, bool) {
	ext := path.Ext(p)
	if ext == "" {
		return render.XML, false
	}
	f, ok := render.ParseFormat(ext[1:])
	if !ok {
		return render.XML, false
	}
	return f, true
}

// single serves /{country}/{resource}/{id}.{ext}; an unknown extension is 404.
func (s *Server) single(h apiHandler) http.Handler {
	handlers := map[render.Format]http.Handler{
		render.XML:  s.api(render.XML, h),
		render.JSON: s.api(render.JSON, h),
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
