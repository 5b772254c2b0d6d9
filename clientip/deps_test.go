package clientip

import (
	"go/build"
	"strings"
	"testing"
)

// TestImports keeps the package a leaf of the standard library, so that
// both proxy and telemetry may import it.
func TestImports(t *testing.T) {
	t.Parallel()
	pkg, err := build.ImportDir(".", 0)
	if err != nil {
		t.Fatal(err)
	}
	for _, imp := range pkg.Imports {
		first, _, _ := strings.Cut(imp, "/")
		if strings.Contains(first, ".") || first == "listingproxy" {
			t.Errorf("clientip imports %s; only the standard library is allowed", imp)
		}
	}
}
