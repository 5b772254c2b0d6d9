package proxy_test

import (
	"errors"
	"net/http"
	"sync/atomic"
	"testing"
	"time"

	"listingproxy/cache"
	"listingproxy/proxy"
)

// TestIfNoneMatchStar: "If-None-Match: *" is answered 304 only when the
// cache already held a representation for this caller (tenant and
// permissions) and it is not an error body; an exact ETag still matches
// whenever it is the body's.
func TestIfNoneMatchStar(t *testing.T) {
	var now atomic.Pointer[time.Time]
	now.Store(&fixedNow)
	clock := func() time.Time { return *now.Load() }
	c, err := cache.New(cache.Options{MaxBytes: 64 << 20, Now: clock})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	fb := newFake()
	s := newServer(t, fb, proxy.Options{Cache: c, Now: clock})
	uncached := newServer(t, newFake(), proxy.Options{})

	const list, missing = "/au/properties.xml?detail=full", "/au/properties/999.xml"
	star := []string{"If-None-Match", "*"}
	steps := []struct {
		name         string
		h            http.Handler
		user, target string
		hdr          []string
		status       int
		cacheStatus  string
	}{
		{"never fetched: the fill", s, "harbour", list, star, 200, "listingproxy; fwd=miss; stored"},
		{"held for the caller", s, "harbour", list, star, 304, "listingproxy; hit"},
		{"same tenant and permissions share it", s, "harbour-2", list, star, 304, "listingproxy; hit"},
		{"another permission level never fetched it", s, "harbour-noprice", list, star, 200, "listingproxy; fwd=miss; stored"},
		{"another tenant never fetched it", s, "summit", list, star, 200, "listingproxy; fwd=miss; stored"},
		{"not found, filled", s, "harbour", missing, star, 200, "listingproxy; fwd=miss; stored"},
		{"not found, held: an error body", s, "harbour", missing, star, 200, "listingproxy; hit; detail=negative"},
		{"no cache", uncached, "harbour", list, star, 200, "listingproxy; fwd=bypass"},
		{"star among tags", s, "harbour", list, []string{"If-None-Match", `"x", *`}, 304, "listingproxy; hit"},
	}
	for _, st := range steps {
		w := get(st.h, "GET", st.user, st.target, st.hdr...)
		if w.Code != st.status || w.Header().Get("Cache-Status") != st.cacheStatus {
			t.Errorf("%s: status %d, Cache-Status %q; want %d, %q", st.name, w.Code, w.Header().Get("Cache-Status"), st.status, st.cacheStatus)
		}
		if st.status == 304 && w.Body.Len() != 0 {
			t.Errorf("%s: a 304 with a %d-byte body", st.name, w.Body.Len())
		}
	}

	// A body served stale because the backend fails is still the one held.
	later := fixedNow.Add(proxy.DefaultPolicy.TTL + proxy.DefaultPolicy.StaleWhileRevalidate + time.Second)
	now.Store(&later)
	fb.Fail(errors.New("backend down"))
	w := get(s, "GET", "harbour", list, star...)
	if w.Code != 304 || w.Header().Get("Cache-Status") != "listingproxy; hit; detail=stale-if-error" {
		t.Errorf("stale-if-error: status %d, Cache-Status %q; want 304 stale-if-error", w.Code, w.Header().Get("Cache-Status"))
	}

	// An exact ETag matches a body this request filled.
	fb.Fail(nil)
	etag := get(uncached, "GET", "summit", "/au/agents.xml").Header().Get("ETag")
	if w := get(s, "GET", "summit", "/au/agents.xml", "If-None-Match", etag); w.Code != 304 {
		t.Errorf("exact ETag on a fill: status %d, want 304", w.Code)
	}
}
