package redistier

import (
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"listingproxy/cache"
	"listingproxy/internal/testkit"
)

func TestEncodeDecode(t *testing.T) {
	k := cache.Key{Tenant: "summit", Resource: "properties", Scope: "full|au|json", Variant: "price_max=5"}
	e := cache.NewEntry([]byte(strings.Repeat(`{"id":1},`, 100)), "application/json", false, time.Unix(1700000000, 123))
	neg := cache.NewEntry([]byte(`{"error":"not found"}`), "application/json", true, time.Unix(1700000000, 0))
	withTags := cache.NewEntry([]byte(`{"id":7}`), "application/json", false, time.Unix(1700000000, 0))
	withTags.Tags = []cache.Tag{cache.IDTag("property", 7), cache.IDTag("agent", 1), 1 << 63}
	tests := []struct {
		name    string
		e       *cache.Entry
		readAs  cache.Key
		want    *cache.Entry
		wantGen uint64
	}{
		{"entry", e, k, e, 42},
		{"negative", neg, k, neg, 42},
		{"tags", withTags, k, withTags, 42},
		{"another tenant", e, cache.Key{Tenant: "harbour", Resource: k.Resource, Scope: k.Scope, Variant: k.Variant}, nil, 0},
		{"another scope", e, cache.Key{Tenant: k.Tenant, Resource: k.Resource, Scope: "prices|au|json", Variant: k.Variant}, nil, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, gen, err := decode(encode(k, 42, tt.e), tt.readAs)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tt.want, got, cmp.Comparer(func(a, b time.Time) bool { return a.Equal(b) })); diff != "" || gen != tt.wantGen {
				t.Errorf("decode: gen %d (want %d), entry (-want +got):\n%s", gen, tt.wantGen, diff)
			}
		})
	}
	b := encode(k, 42, e)
	older := append([]byte{2}, b[1:]...)
	if got, _, err := decode(older, k); got != nil || err != nil {
		t.Errorf("decode of another format: entry %t, %v; want a miss, not damage", got != nil, err)
	}
	for _, at := range []int{1, 3, len(b) / 2, len(b) - 5, len(b) - 1} {
		damaged := append([]byte(nil), b...)
		damaged[at] ^= 0x10
		if got, _, err := decode(damaged, k); err == nil {
			t.Errorf("decode with byte %d of %d flipped: entry %t, no error; want damage", at, len(b), got != nil)
		}
	}
	for _, n := range []int{1, 5, 20, len(b) - 1} {
		if got, _, err := decode(b[:n], k); err == nil && got != nil {
			t.Errorf("decode of %d of %d bytes: an entry, want an error or a miss", n, len(b))
		}
	}
}

// TestDocumentedSharedDefaults: the defaults docs/configuration.md lists
// for cache.shared.* are this package's, the one source of them.
func TestDocumentedSharedDefaults(t *testing.T) {
	got := testkit.DocumentedDefaults(t, "../../docs/configuration.md", func(key string) bool {
		switch key {
		case "cache.shared.key_prefix", "cache.shared.max_entry_bytes", "cache.shared.timeout", "cache.shared.lease":
			return true
		}
		return false
	})
	want := map[string]string{
		"cache.shared.key_prefix":      DefaultKeyPrefix,
		"cache.shared.max_entry_bytes": "8MiB",
		"cache.shared.timeout":         (DefaultTimeout).String(),
		"cache.shared.lease":           (DefaultLease).String(),
	}
	if DefaultMaxEntryBytes != 8<<20 {
		want["cache.shared.max_entry_bytes"] = "changed: update docs and this test"
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("docs/configuration.md cache.shared defaults (-package +docs):\n%s", diff)
	}
}
