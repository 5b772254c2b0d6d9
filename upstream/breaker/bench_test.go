package breaker_test

import (
	"context"
	"testing"

	"listingproxy/upstream"
	"listingproxy/upstream/breaker"
)

// BenchmarkDecorator is the cost the breakers and the concurrency limit
// (fixed, or adaptive) add to one backend call (a miss; hits never reach
// them), against a backend that answers at once.
func BenchmarkDecorator(b *testing.B) {
	fb := newFake(func(context.Context, string) error { return nil })
	fb.Properties = map[string][]upstream.Property{"t/au": {{ID: 1}}}
	for _, bc := range []struct {
		name string
		be   upstream.Backend
	}{
		{"bare", fb},
		{"breaker", breaker.NewRegistry(breaker.Options{}).Wrap(fb, breaker.Backend{Name: "sql", Limit: 8, Tenants: []string{"t"}})},
		{"adaptive", breaker.NewRegistry(breaker.Options{}).Wrap(fb, breaker.Backend{Name: "crm", Limit: 256, Adaptive: true, Tenants: []string{"t"}})},
	} {
		b.Run(bc.name, func(b *testing.B) {
			ctx, s := context.Background(), upstream.Scope{Tenant: "t", Country: "au"}
			b.ReportAllocs()
			for b.Loop() {
				if _, err := bc.be.GetProperty(ctx, s, 1); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
