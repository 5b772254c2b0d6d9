package sqlstore

import (
	"go/parser"
	"go/token"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// TestForbiddenImports keeps the package boundaries of design.md §3: the SQL
// store serves upstream's types and is configured by cmd, so it never
// imports proxy, cache or config; the demo generator knows no SQL.
func TestForbiddenImports(t *testing.T) {
	for _, tc := range []struct {
		dir       string
		forbidden []string
	}{
		{".", []string{"listingproxy/proxy", "listingproxy/cache", "listingproxy/config"}},
		{"demo", []string{"listingproxy/proxy", "listingproxy/cache", "listingproxy/config", "database/sql", "listingproxy/upstream/sqlstore"}},
	} {
		files, err := filepath.Glob(filepath.Join(tc.dir, "*.go"))
		if err != nil {
			t.Fatal(err)
		}
		for _, f := range files {
			if strings.HasSuffix(f, "_test.go") {
				continue
			}
			file, err := parser.ParseFile(token.NewFileSet(), f, nil, parser.ImportsOnly)
			if err != nil {
				t.Fatal(err)
			}
			for _, imp := range file.Imports {
				path, _ := strconv.Unquote(imp.Path.Value)
				for _, bad := range tc.forbidden {
					if path == bad || strings.HasPrefix(path, bad+"/") {
						t.Errorf("%s imports %s", f, path)
					}
				}
			}
		}
	}
}
