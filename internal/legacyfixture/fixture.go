// Package legacyfixture serves recorded or hand-written legacy answers from
// a directory: the -fixtures mode of the stand-in cmd/legacy-crm, and the
// same handler in the tests of cmd/listingproxy (listingproxy diff against
// the stand-in), which cannot import a main package. Standard library only.
package legacyfixture

import (
	"net/http"
	"os"
	"path"
	"path/filepath"
	"strings"
)

// Handler answers a GET whose path names a file under dir (the query
// ignored: /au/properties.xml?detail=full is dir/au/properties.xml) with
// that file, as recorded or written by hand, under contentType (PHP's
// text/html, to play an endpoint that mislabels its XML); other requests go
// to next. It plays a real legacy endpoint, with its quirks (decimals as
// written, server-local times, unknown elements, mixed content), which the
// stand-in's own renderer (listingproxy's writers) never produces. It
// checks no credentials.
func Handler(dir, contentType string, next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if b, ok := Read(dir, r.URL.Path); ok && r.Method == http.MethodGet {
			w.Header().Set("Content-Type", contentType)
			_, _ = w.Write(b)
			return
		}
		next.ServeHTTP(w, r)
	})
}

// Read returns the file under dir that the request path p names (its query
// ignored), and whether there is one. A path that leaves dir names none.
func Read(dir, p string) ([]byte, bool) {
	p, _, _ = strings.Cut(p, "?")
	clean := path.Clean("/" + p)
	if strings.Contains(clean, "..") {
		return nil, false
	}
	b, err := os.ReadFile(filepath.Join(dir, filepath.FromSlash(clean)))
	if err != nil {
		return nil, false
	}
	return b, true
}

// Paths returns the request path of every regular file under dir
// (dir/au/properties/3301.xml is /au/properties/3301.xml), sorted.
func Paths(dir string) ([]string, error) {
	var out []string
	err := filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err != nil || !d.Type().IsRegular() {
			return err
		}
		rel, err := filepath.Rel(dir, p)
		if err != nil {
			return err
		}
		out = append(out, "/"+filepath.ToSlash(rel))
		return nil
	})
	return out, err
}
