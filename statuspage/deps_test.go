package statuspage

import (
	"go/build"
	"testing"
)

// TestImports keeps the page out of the HTTP surface and the
// configuration: it reads its data through the interfaces it declares, and
// cmd mounts it behind the admin credentials.
func TestImports(t *testing.T) {
	pkg, err := build.ImportDir(".", 0)
	if err != nil {
		t.Fatal(err)
	}
	for _, imp := range pkg.Imports {
		switch imp {
		case "listingproxy/proxy", "listingproxy/config", "listingproxy/cmd/listingproxy":
			t.Errorf("statuspage imports %s", imp)
		}
	}
}
