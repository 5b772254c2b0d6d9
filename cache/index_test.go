package cache

import (
	"fmt"
	"math"
	"sync"
	"testing"
	"time"
)

// TestIndexMirrorsRistretto fills a small store from several goroutines
// with keys of every size, refills some with bigger bodies, after purges
// and with older generations, and then requires the index to hold exactly
// the items ristretto holds: never one it refused, evicted or replaced
// (which a hit would otherwise serve), never missing one (which would turn
// a hit into a fill).
func TestIndexMirrorsRistretto(t *testing.T) {
	s := newStore(t, Options{MaxBytes: 256 << 10, OverlayBytes: -1})
	long := Policy{TTL: time.Hour}
	var wg sync.WaitGroup
	for w := range 4 {
		wg.Go(func() {
			for i := range 400 {
				k := Key{Tenant: "t", Resource: "r", Variant: fmt.Sprint(i % 150)}
				if i%97 == 0 && w == 0 {
					s.Purge("t", "", Soft)
				}
				size := 100 + (i*37+w*1000)%9000 // replacements of other sizes, some bigger
				e := NewEntry(make([]byte, size), "", false, time.Now())
				s.store(s.hash(k), k, s.genOf(k).fill, e, long)
			}
		})
	}
	wg.Wait()
	s.c.Wait()
	held := map[*item]bool{}
	s.c.IterValues(func(it *item) bool { held[it] = true; return false })
	if len(held) == 0 || s.Stats().Evictions+s.Stats().Rejections == 0 {
		t.Fatalf("ristretto holds %d items, evicted or refused %d: the test did not fill the store past its size", len(held), s.Stats().Evictions+s.Stats().Rejections)
	}
	for i := range s.idx.shards {
		for h, it := range s.idx.shards[i].m {
			if !held[it] {
				t.Errorf("index holds %x (key %v), which ristretto does not", h, it.key)
			}
			delete(held, it)
		}
	}
	for it := range held {
		t.Errorf("ristretto holds %v, which the index does not", it.key)
	}
	if n, e := s.idx.len(), s.Stats().Entries; n != int(e) {
		t.Errorf("index holds %d items, Stats().Entries = %d", n, e)
	}
}

// TestLookupsSampledForAdmission checks that ristretto's admission policy
// still sees the accesses although hits no longer go through its Get: one
// lookup in feedbackEvery, of a stored key or of a missing one alike (so that
// the keys' relative frequencies, which TinyLFU compares, are kept), reaches
// ristretto's Get, which hands it to the policy.
func TestLookupsSampledForAdmission(t *testing.T) {
	s := newStore(t, Options{ristrettoMetrics: true})
	long := Policy{TTL: time.Hour}
	hot, missing := Key{Tenant: "t", Resource: "hot"}, Key{Tenant: "t", Resource: "missing"}
	s.store(s.hash(hot), hot, 0, NewEntry([]byte("x"), "", false, time.Now()), long)
	const lookups = 256 * feedbackEvery
	m := s.c.Metrics
	hits0, misses0 := m.Hits(), m.Misses()
	for range lookups {
		if _, _, _, ok := s.Fresh(hot, long); !ok {
			t.Fatal("the stored key was not found")
		}
		if _, _, _, ok := s.Fresh(missing, long); ok {
			t.Fatal("a missing key was found")
		}
	}
	// 256 expected of each; the bounds are 6 standard deviations away.
	hits, misses := m.Hits()-hits0, m.Misses()-misses0
	want := float64(lookups) / feedbackEvery
	dev := 6 * math.Sqrt(want*(1-1.0/feedbackEvery))
	for _, c := range []struct {
		what string
		n    uint64
	}{{"hits", hits}, {"misses", misses}} {
		if math.Abs(float64(c.n)-want) > dev {
			t.Errorf("ristretto saw %d of %d lookups of %s, want about %d (1 in %d)", c.n, lookups, c.what, lookups/feedbackEvery, feedbackEvery)
		}
	}
}
