package wire

import (
	"go/parser"
	"go/token"
	"os"
	"strconv"
	"strings"
	"testing"
)

// TestImports enforces the package comment: production files import only the
// standard library, upstream and normalize, and the writers none of the
// packages that would mean marshalling, reflection or fmt on the hot path
// (the readers, read.go, node.go, document.go, source.go, raw.go and recorder.go, decode with encoding/xml).
func TestImports(t *testing.T) {
	readers := map[string]bool{"read.go": true, "node.go": true, "document.go": true, "source.go": true, "raw.go": true, "recorder.go": true}
	allowedModule := map[string]bool{"listingproxy/upstream": true, "listingproxy/normalize": true}
	forbidden := map[string]bool{"encoding/xml": true, "encoding/json": true, "reflect": true, "fmt": true}
	entries, err := os.ReadDir(".")
	if err != nil {
		t.Fatal(err)
	}
	fset := token.NewFileSet()
	for _, e := range entries {
		name := e.Name()
		if e.IsDir() || !strings.HasSuffix(name, ".go") || strings.HasSuffix(name, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, name, nil, parser.ImportsOnly)
		if err != nil {
			t.Fatal(err)
		}
		for _, imp := range f.Imports {
			path, _ := strconv.Unquote(imp.Path.Value)
			first, _, _ := strings.Cut(path, "/")
			stdlib := !strings.Contains(first, ".") && first != "listingproxy"
			switch {
			case forbidden[path] && !readers[name]:
				t.Errorf("%s imports %s, which the renderer must not use", name, path)
			case !stdlib && !allowedModule[path]:
				t.Errorf("%s imports %s; allowed: the standard library, upstream, normalize", name, path)
			}
		}
	}
}
