package cache

import (
	"context"
	"testing"
	"time"
)

func benchStore(b *testing.B, size int) (*Store, Loader) {
	s := newStore(b, Options{MaxBytes: 64 << 20})
	body := make([]byte, size)
	for i := range body {
		body[i] = byte('a' + i%26)
	}
	load := func(context.Context) (*Entry, error) {
		return NewEntry(body, "application/json", false, time.Now()), nil
	}
	if _, _, err := s.Get(context.Background(), key, pol, load); err != nil {
		b.Fatal(err)
	}
	return s, load
}

func BenchmarkGetHit(b *testing.B) {
	for _, bc := range []struct {
		name string
		size int
	}{{"2KB", 2 << 10}, {"40KB", 40 << 10}} {
		b.Run(bc.name, func(b *testing.B) {
			s, load := benchStore(b, bc.size)
			ctx := context.Background()
			b.ReportAllocs()
			for b.Loop() {
				if _, o, _ := s.Get(ctx, key, pol, load); o != Hit {
					b.Fatalf("outcome %v, want hit", o)
				}
			}
		})
	}
}

func BenchmarkGetHitParallel(b *testing.B) {
	for _, bc := range []struct {
		name string
		size int
	}{{"2KB", 2 << 10}, {"40KB", 40 << 10}} {
		b.Run(bc.name, func(b *testing.B) {
			s, load := benchStore(b, bc.size)
			ctx := context.Background()
			b.ReportAllocs()
			b.RunParallel(func(pb *testing.PB) {
				for pb.Next() {
					if _, o, _ := s.Get(ctx, key, pol, load); o != Hit {
						b.Errorf("outcome %v, want hit", o)
						return
					}
				}
			})
		})
	}
}

// BenchmarkGetMiss measures a full fill: flight, loader, store and Wait.
func BenchmarkGetMiss(b *testing.B) {
	s := newStore(b, Options{MaxBytes: 64 << 20})
	body := make([]byte, 2<<10)
	load := func(context.Context) (*Entry, error) {
		return &Entry{Body: body, StoredAt: time.Now()}, nil
	}
	ctx := context.Background()
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		i++
		k := Key{Tenant: "t", Resource: itoa(i)}
		if _, _, err := s.Get(ctx, k, pol, load); err != nil {
			b.Fatal(err)
		}
	}
}
