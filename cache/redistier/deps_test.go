package redistier

import (
	"go/build"
	"strings"
	"testing"
)

// TestImports keeps the package to the standard library, cache, go-redis
// gobreaker and backoff: never proxy, upstream or config.
func TestImports(t *testing.T) {
	pkg, err := build.ImportDir(".", 0)
	if err != nil {
		t.Fatal(err)
	}
	allowed := map[string]bool{
		"listingproxy/cache":             true,
		"github.com/redis/go-redis/v9":   true,
		"github.com/sony/gobreaker/v2":   true,
		"github.com/cenkalti/backoff/v5": true,
	}
	for _, imp := range pkg.Imports {
		first, _, _ := strings.Cut(imp, "/")
		if !strings.Contains(first, ".") && first != "listingproxy" {
			continue // standard library
		}
		if !allowed[imp] {
			t.Errorf("redistier imports %s; allowed: the standard library, cache, go-redis, gobreaker, backoff", imp)
		}
	}
}
