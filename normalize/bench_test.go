package normalize_test

import (
	"strings"
	"testing"

	"listingproxy/normalize"
)

func BenchmarkParseProperties(b *testing.B) {
	q := mustQuery(b, "status[]=current&status[]=contract&category=residential&property_type=house&bedrooms=3"+
		"&price_from=500000&price_to=900000&order=price&limit=20&offset=40")
	b.ReportAllocs()
	for b.Loop() {
		if _, errs := normalize.ParseProperties(q, normalize.Options{}); errs != nil {
			b.Fatal(errs)
		}
	}
}

func BenchmarkParsePropertiesRepeated(b *testing.B) {
	q := mustQuery(b, strings.TrimSuffix(strings.Repeat("status=sold&id=7&order=price&", 3333), "&"))
	b.ReportAllocs()
	for b.Loop() {
		if _, errs := normalize.ParseProperties(q, normalize.Options{}); errs != nil {
			b.Fatal(errs)
		}
	}
}

func BenchmarkParseAgents(b *testing.B) {
	q := mustQuery(b, "name=smith&detail=full&order=name&limit=50")
	b.ReportAllocs()
	for b.Loop() {
		if _, errs := normalize.ParseAgents(q, normalize.Options{}); errs != nil {
			b.Fatal(errs)
		}
	}
}
