package main

import (
	"net/http"
	"os"
	"path"
	"path/filepath"
	"strings"
)

// fixtureHandler answers a GET whose path names a file under dir (the query
// ignored: /au/properties.xml?detail=full is dir/au/properties.xml) with
// that file, as recorded or written by hand, under contentType (PHP's
// text/html, to play an endpoint that mislabels its XML); other requests go
// to next. It plays a real legacy endpoint, with its quirks (decimals as
// written, server-local times, unknown elements, mixed content), which the
// stand-in's own renderer (listingproxy's writers) never produces. It
// checks no credentials.
func fixtureHandler(dir, contentType string, next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		clean := path.Clean("/" + r.URL.Path)
		if r.Method == http.MethodGet && !strings.Contains(clean, "..") {
			if b, err := os.ReadFile(filepath.Join(dir, filepath.FromSlash(clean))); err == nil {
				w.Header().Set("Content-Type", contentType)
				_, _ = w.Write(b)
				return
			}
		}
		next.ServeHTTP(w, r)
	})
}
