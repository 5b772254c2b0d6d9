package main

import (
	"bytes"
	"encoding/json"
	"flag"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"listingproxy/internal/legacyfixture"
	"listingproxy/upstream/crm"
)

var update = flag.Bool("update", false, "rewrite the expected answers of the legacy document classes (internal/legacyfixture/testdata/want)")

// classesDir is the corpus of hand-written legacy documents, one per class
// of what real legacy endpoints send: every charset the adapter decodes
// (ISO-8859-1, windows-1252 with a byte order mark and CRLF, UTF-16 LE
// with a byte order mark and BE without), XML 1.1 and whitespace before
// the declaration, repeated and omitted and reordered elements, literal
// and referenced whitespace in attributes, a default namespace and
// prefixed elements, and a list that ignores limit and offset.
const (
	classesDir = "../../internal/legacyfixture/testdata/classes"
	wantDir    = "../../internal/legacyfixture/testdata/want"
)

// classQueries are the queries the class documents are asked with (the
// list: a page the legacy ignores).
var classQueries = map[string]string{"/au/properties.xml": "?detail=full&limit=3&offset=2"}

// TestFixtureClasses puts listingproxy (hydrate never, pass-through) in
// front of the class corpus, served as PHP labels it, and compares its
// answers to a caller with the upstream user's permissions byte for byte:
// the XML with the legacy's document itself, or, where listingproxy must
// change it (decoded to UTF-8, one declaration first, paged), with the
// expected answer under want/; the JSON with want/ (-update rewrites them;
// review every diff). A narrower caller gets well-formed XML, each element
// in its namespace, and valid JSON.
func TestFixtureClasses(t *testing.T) {
	legacy := httptest.NewServer(legacyfixture.Handler(classesDir, "text/html; charset=UTF-8", http.NotFoundHandler()))
	defer legacy.Close()
	front, client := newFrontWith(t, crm.Options{BaseURL: legacy.URL, Hydrate: crm.HydrateNever, PassThrough: true}, nil)
	paths, err := legacyfixture.Paths(classesDir)
	if err != nil || len(paths) < 10 {
		t.Fatalf("class paths %v, %v", paths, err)
	}
	for _, p := range paths {
		t.Run(p, func(t *testing.T) {
			sent, _ := legacyfixture.Read(classesDir, p)
			for _, ext := range []string{".xml", ".json"} {
				path := strings.TrimSuffix(p, ".xml") + ext + classQueries[p]
				status, _, body := get(t, front, "", request{user: "harbour", password: passwordOf("harbour"), path: path})
				if status != http.StatusOK {
					t.Fatalf("%s: %d\n%s", path, status, body)
				}
				wantFile := filepath.Join(wantDir, filepath.FromSlash(strings.TrimSuffix(p, ".xml")+ext))
				want, err := os.ReadFile(wantFile)
				switch {
				case *update && (ext == ".json" || !bytes.Equal(body, sent)):
					if err := os.MkdirAll(filepath.Dir(wantFile), 0o755); err != nil {
						t.Fatal(err)
					}
					if err := os.WriteFile(wantFile, body, 0o644); err != nil {
						t.Fatal(err)
					}
					continue
				case *update:
					os.Remove(wantFile)
					continue
				case err != nil && ext == ".xml":
					want = sent // as the legacy sent it
				case err != nil:
					t.Fatalf("%v (run with -update)", err)
				}
				if !bytes.Equal(body, want) {
					t.Errorf("%s (-want +got):\n%s", path, cmp.Diff(string(want), string(body)))
				}
				if ext == ".xml" {
					namespaces(t, body)
				} else if !json.Valid(body) {
					t.Errorf("%s: not JSON:\n%s", path, body)
				}

				status, _, narrow := get(t, front, "", request{user: "harbour-noprice", password: passwordOf("harbour-noprice"), path: path})
				if status != http.StatusOK {
					t.Fatalf("%s, narrower caller: %d\n%s", path, status, narrow)
				}
				if ext == ".xml" {
					wantNS := namespaces(t, body)
					for el, ns := range namespaces(t, narrow) {
						if w, ok := wantNS[el]; ok && w != ns {
							t.Errorf("%s, narrower caller: <%s> in %q, want %q\n%s", path, el, ns, w, narrow)
						}
					}
				} else if !json.Valid(narrow) {
					t.Errorf("%s, narrower caller: not JSON:\n%s", path, narrow)
				}
			}
		})
	}
	if s := client.Stats(); s.Transcoded == 0 || s.XML11 == 0 || s.PagedHere == 0 {
		t.Errorf("stats %+v: want transcoded, XML 1.1 and paged answers counted", s)
	}
}
