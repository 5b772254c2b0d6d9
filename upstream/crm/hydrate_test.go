package crm

import (
	"fmt"
	"net/http"
	"sync"
	"testing"
	"time"

	"listingproxy/internal/testkit"
	"listingproxy/normalize"
	"listingproxy/upstream"
)

func ids(props []upstream.Property) []int64 {
	out := make([]int64, len(props))
	for i, p := range props {
		out[i] = p.ID
	}
	return out
}

func equalIDs(a, b []int64) bool { return fmt.Sprint(a) == fmt.Sprint(b) }

func docCalls(f *fakeCRM, country string, ids ...int64) int {
	n := 0
	for _, id := range ids {
		n += f.count(fmt.Sprintf("/%s/properties/%d.xml", country, id))
	}
	return n
}

func TestHydrationCalls(t *testing.T) {
	all := []int64{105, 101, 104, 102, 103} // the CRM's order, kept
	g := newGenerated(all...)
	f := newFakeCRM(t, g.serve)
	clk := testkit.NewClock(testNow)
	c := newTestClient(t, f, Options{Hydrate: HydrateAlways, DocTTL: time.Minute, Now: clk.Now})

	list := func(t *testing.T) []upstream.Property {
		t.Helper()
		got, err := c.listProperties(t.Context(), harbourAU, nil, normalize.Full, "k")
		if err != nil {
			t.Fatalf("listProperties: %v", err)
		}
		return got
	}

	t.Run("first: 1 list + N documents", func(t *testing.T) {
		got := list(t)
		if !equalIDs(ids(got), all) {
			t.Errorf("ids = %v, want %v", ids(got), all)
		}
		if got[0].PriceText != "$105000" || got[0].AgencyID != "harbour-crm-105" || len(got[0].Photos) != 1 {
			t.Errorf("property 105 not hydrated: %+v", got[0])
		}
		if n := f.count("/au/properties.xml"); n != 1 {
			t.Errorf("list calls = %d, want 1", n)
		}
		if q := f.allQueries()[0]; q != "detail=short" {
			t.Errorf("list query = %q, want detail=short", q)
		}
		if n := docCalls(f, "au", all...); n != len(all) {
			t.Errorf("document calls = %d, want %d", n, len(all))
		}
	})
	t.Run("second within DocTTL: 1 list", func(t *testing.T) {
		got := list(t)
		if !equalIDs(ids(got), all) {
			t.Errorf("ids = %v, want %v", ids(got), all)
		}
		if n := f.count("/au/properties.xml"); n != 2 {
			t.Errorf("list calls = %d, want 2", n)
		}
		if n := docCalls(f, "au", all...); n != len(all) {
			t.Errorf("document calls = %d, want still %d", n, len(all))
		}
	})
	t.Run("updated property is fetched again", func(t *testing.T) {
		g.touch(102)
		got := list(t)
		if n := f.count("/au/properties/102.xml"); n != 2 {
			t.Errorf("calls for 102 = %d, want 2", n)
		}
		if want := g.updated[102]; !got[3].LastUpdated.Equal(want) {
			t.Errorf("102 last_updated = %v, want %v", got[3].LastUpdated, want)
		}
		if n := docCalls(f, "au", all...); n != len(all)+1 {
			t.Errorf("document calls = %d, want %d", n, len(all)+1)
		}
	})
	t.Run("disappeared property is dropped", func(t *testing.T) {
		g.mu.Lock()
		g.gone[104] = true
		g.updated[104] = g.updated[104].Add(time.Hour) // so the cached doc is not reused
		g.mu.Unlock()
		got := list(t)
		if want := []int64{105, 101, 102, 103}; !equalIDs(ids(got), want) {
			t.Errorf("ids = %v, want %v", ids(got), want)
		}
	})
	t.Run("after DocTTL: all again", func(t *testing.T) {
		clk.Advance(2 * time.Minute)
		before := docCalls(f, "au", all...)
		list(t)
		if n := docCalls(f, "au", all...) - before; n != len(all) {
			t.Errorf("document calls = %d, want %d", n, len(all))
		}
	})
}

func TestHydrationTenantsNeverShare(t *testing.T) {
	all := []int64{1, 2, 3}
	g := newGenerated(all...)
	f := newFakeCRM(t, g.serve)
	c := newTestClient(t, f, Options{Hydrate: HydrateAlways, DocTTL: time.Hour})

	for round := range 2 {
		for _, s := range []upstream.Scope{harbourAU, summitAU} {
			got, err := c.listProperties(t.Context(), s, nil, normalize.Full, "k")
			if err != nil {
				t.Fatalf("round %d, %s: %v", round, s.Tenant, err)
			}
			user := map[string]string{"harbour": "harbour-crm", "summit": "summit-crm"}[s.Tenant]
			for _, p := range got {
				if want := fmt.Sprintf("%s-%d", user, p.ID); p.AgencyID != want {
					t.Errorf("round %d, %s: property %d agency_id = %q, want %q", round, s.Tenant, p.ID, p.AgencyID, want)
				}
			}
		}
	}
	// Each tenant fetched each document once: 2 tenants × 3.
	if n := docCalls(f, "au", all...); n != 2*len(all) {
		t.Errorf("document calls = %d, want %d", n, 2*len(all))
	}
	// A document kept by GetProperty is scoped too.
	if _, err := c.GetProperty(t.Context(), harbourAU, 9); err == nil {
		t.Errorf("GetProperty(9) = nil error, want not found")
	}
}

func TestHydrationConcurrencyBounds(t *testing.T) {
	var all []int64
	for id := int64(1); id <= 24; id++ {
		all = append(all, id)
	}
	tests := []struct {
		name    string
		opts    Options
		wantMax int64
	}{
		{"HydrateConcurrency", Options{HydrateConcurrency: 3, MaxConcurrency: 16}, 3},
		{"MaxConcurrency", Options{HydrateConcurrency: 8, MaxConcurrency: 2}, 2},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			g := newGenerated(all...)
			g.delay = 5 * time.Millisecond // lets fetches overlap
			f := newFakeCRM(t, g.serve)
			tc.opts.Hydrate = HydrateAlways
			c := newTestClient(t, f, tc.opts)
			got, err := c.listProperties(t.Context(), harbourAU, nil, normalize.Full, "k")
			if err != nil {
				t.Fatalf("listProperties: %v", err)
			}
			if !equalIDs(ids(got), all) {
				t.Errorf("ids = %v, want %v", ids(got), all)
			}
			if m := f.maxInFlight.Load(); m > tc.wantMax {
				t.Errorf("max requests in flight = %d, want <= %d", m, tc.wantMax)
			} else {
				t.Logf("max requests in flight: %d (bound %d)", m, tc.wantMax)
			}
		})
	}
}

func TestHydrationSingleFlight(t *testing.T) {
	all := []int64{1, 2, 3, 4, 5, 6}
	g := newGenerated(all...)
	release := make(chan struct{})
	f := newFakeCRM(t, func(w http.ResponseWriter, r *http.Request, user string) {
		if r.URL.Path != "/au/properties.xml" {
			select {
			case <-release:
			case <-r.Context().Done():
				return
			}
		}
		g.serve(w, r, user)
	})
	c := newTestClient(t, f, Options{Hydrate: HydrateAlways, HydrateConcurrency: len(all)})

	const callers = 4
	var wg sync.WaitGroup
	errs := make(chan error, callers)
	for range callers {
		wg.Go(func() {
			got, err := c.listProperties(t.Context(), harbourAU, nil, normalize.Full, "k")
			if err == nil && !equalIDs(ids(got), all) {
				err = fmt.Errorf("ids = %v, want %v", ids(got), all)
			}
			errs <- err
		})
	}
	time.Sleep(100 * time.Millisecond) // let the callers meet in flight; the count holds either way
	close(release)
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Error(err)
		}
	}
	for _, id := range all {
		if n := f.count(fmt.Sprintf("/au/properties/%d.xml", id)); n != 1 {
			t.Errorf("calls for %d = %d, want 1", id, n)
		}
	}
}

func TestHydrateAuto(t *testing.T) {
	all := []int64{7, 3, 5}
	g := newGenerated(all...)
	f := newFakeCRM(t, g.serve)
	c := newTestClient(t, f, Options{DocTTL: time.Minute})

	list := func(key string) {
		t.Helper()
		got, err := c.listProperties(t.Context(), harbourAU, nil, normalize.Full, key)
		if err != nil {
			t.Fatalf("listProperties: %v", err)
		}
		if !equalIDs(ids(got), all) || got[0].PriceText != "$7000" {
			t.Fatalf("got %v, want %v in full detail", ids(got), all)
		}
	}
	list("a") // unknown query: one full call, which seeds the documents
	if s := c.Stats(); s.FullLists != 1 || s.Hydrations != 0 || f.lastQuery() != "detail=full" {
		t.Errorf("first: stats %+v, query %q; want one full list", s, f.lastQuery())
	}
	list("a") // known query with every document cached: hydrate from the cache
	if s := c.Stats(); s.FullLists != 1 || s.Hydrations != 1 || s.DocHits != 3 || s.DocFetches != 0 || f.lastQuery() != "detail=short" {
		t.Errorf("second: stats %+v, query %q; want a hydration from the cache", s, f.lastQuery())
	}
	list("b") // another query: one full call
	if s := c.Stats(); s.FullLists != 2 || f.total() != 3 {
		t.Errorf("third: stats %+v, calls %d; want a second full list", s, f.total())
	}
	if n := docCalls(f, "au", all...); n != 0 {
		t.Errorf("document calls = %d, want 0", n)
	}
}
