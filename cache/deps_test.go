package cache

import (
	"go/build"
	"strings"
	"testing"
)

// TestImports keeps the package's dependencies to the standard library,
// ristretto, x/sync and the OpenTelemetry trace API: it must not
// reach into upstream, proxy or config, nor the OpenTelemetry SDK.
func TestImports(t *testing.T) {
	pkg, err := build.ImportDir(".", 0)
	if err != nil {
		t.Fatal(err)
	}
	allowed := []string{
		"github.com/dgraph-io/ristretto/v2",
		"golang.org/x/sync/",
		"go.opentelemetry.io/otel/trace",     // the API only, never the SDK
		"go.opentelemetry.io/otel/attribute", // span attributes
		"go.opentelemetry.io/otel/codes",     // span status
	}
next:
	for _, imp := range pkg.Imports {
		first, _, _ := strings.Cut(imp, "/")
		if !strings.Contains(first, ".") && first != "listingproxy" {
			continue // standard library
		}
		for _, a := range allowed {
			if imp == a || (strings.HasSuffix(a, "/") && strings.HasPrefix(imp, a)) {
				continue next
			}
		}
		t.Errorf("cache imports %s; allowed: the standard library and %v", imp, allowed)
	}
}
