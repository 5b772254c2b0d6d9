package main

import (
	"math/rand/v2"
	"strings"
	"testing"
	"time"
)

func ms(n int) time.Duration { return time.Duration(n) * time.Millisecond }

// TestSummarize: only requests scheduled from the measuring point count;
// errors are transport errors and answers other than 200 and 404; the hit
// ratio counts hits among measured requests; repeat_p99 is over repeats
// alone; percentiles are by nearest rank.
func TestSummarize(t *testing.T) {
	var rs []result
	// Before the measuring point: a slow error that must not count.
	rs = append(rs, result{at: ms(500), latency: ms(9000), status: 503})
	// 1000 measured requests: latencies 1..1000 ms; the ten slowest are
	// first asks (not repeats), 300 hits, a 404, two errors.
	for i := 1; i <= 1000; i++ {
		r := result{at: time.Second + ms(i), latency: ms(i), status: 200, repeat: i <= 990, hit: i%10 < 3, since: ms(2 * i)}
		switch i {
		case 5:
			r.status = 404
		case 6:
			r.status = 0
		case 7:
			r.status = 503
		}
		rs = append(rs, r)
	}
	s := Summarize(rs, time.Second)
	if s.N != 1000 || s.Errors != 2 || s.Hits != 300 || s.Repeats != 990 {
		t.Errorf("N %d errors %d hits %d repeats %d, want 1000 2 300 990", s.N, s.Errors, s.Hits, s.Repeats)
	}
	if s.P50 != ms(500) || s.P99 != ms(990) || s.P999 != ms(999) {
		t.Errorf("p50 %v p99 %v p999 %v, want 500ms 990ms 999ms", s.P50, s.P99, s.P999)
	}
	if s.RepeatP99 != ms(981) { // the 981st of 990 repeats (1..990 ms)
		t.Errorf("repeat p99 %v, want 981ms", s.RepeatP99)
	}
	if s.RepeatMisses != 693 || s.RepeatHitP99 != ms(981) { // hits: i%10 < 3 among 1..990 (297 of them)
		t.Errorf("repeat misses %d, p99 of repeat hits %v, want 693 and 981ms", s.RepeatMisses, s.RepeatHitP99)
	}
	if s.RepeatMissesNear != 350 { // misses among 1..499 (since < 1s): 499 - 149 hits
		t.Errorf("repeat misses within 1s of the first ask: %d, want 350", s.RepeatMissesNear)
	}
	line := s.Line("lp", 250)
	want := "server=lp calls_per_1k=250.0 hit_ratio=0.3000 p50_ms=500.0 p99_ms=990.0 p999_ms=999.0 repeat_p99_ms=981.0 errors=2"
	if line != want {
		t.Errorf("line\n%s\nwant\n%s", line, want)
	}
	if got := Summarize(rs, 0); got.N != 1001 || got.Errors != 3 {
		t.Errorf("from 0: N %d errors %d, want 1001 3", got.N, got.Errors)
	}
	if got := (Summary{}).Line("x", -1); !strings.Contains(got, "calls_per_1k=-1.0") {
		t.Errorf("no requests, no CRM figures: %s", got)
	}
}

// TestRepeats: a request is a repeat when its tenant and criteria were
// asked before, whatever the format, encoding or user of the tenant; the
// other tenant's same criteria, or other criteria, are first asks.
func TestRepeats(t *testing.T) {
	g := specSpace{criteria: []string{
		"/au/properties.{ext}?limit=10&detail=full",
		"/au/properties/#3.{ext}",
	}, gzip: 0.5}
	harbour := cred{user: "harbour", tenant: "harbour"}
	noprice := cred{user: "harbour-noprice", tenant: "harbour"}
	short := cred{user: "harbour-short", tenant: "harbour", short: true}
	summit := cred{user: "summit", tenant: "summit"}
	rng := rand.New(rand.NewPCG(1, 2))
	seen := repeats{}
	exts := map[string]bool{}
	for i, st := range []struct {
		rank   uint64
		c      cred
		repeat bool
		path   string // without its extension
	}{
		{0, harbour, false, "/au/properties.?limit=10&detail=full"},
		{0, noprice, true, "/au/properties.?limit=10&detail=full"},
		{0, harbour, true, "/au/properties.?limit=10&detail=full"},
		{0, summit, false, "/au/properties.?limit=10&detail=full"},
		{0, short, false, "/au/properties.?limit=10"}, // other criteria: no full detail
		{0, short, true, "/au/properties.?limit=10"},
		{1, harbour, false, "/au/properties/4."},  // harbour's 4th au property
		{1, summit, false, "/au/properties/804."}, // summit's
		{1, noprice, true, "/au/properties/4."},
		{1, short, false, "/au/properties.?id=4"}, // no full detail: the property in a short list
		{1, short, true, "/au/properties.?id=4"},
	} {
		path, _, key := g.request(st.rank, st.c, rng)
		ext := path[strings.LastIndex(path, ".")+1:]
		if q := strings.IndexByte(ext, '?'); q >= 0 {
			ext = ext[:q]
		}
		exts[ext] = true
		if got := strings.Replace(path, ext, "", 1); got != st.path {
			t.Errorf("%d: path %s, want %s with an extension", i, path, st.path)
		}
		if got := seen.seen(key); got != st.repeat {
			t.Errorf("%d: %s as %s: repeat %v, want %v", i, path, st.c.user, got, st.repeat)
		}
	}
	if !exts["xml"] || !exts["json"] || len(exts) != 2 {
		t.Errorf("formats drawn: %v, want xml and json", exts)
	}
}

// TestSpecCriteria: distinct, stable as n grows, single properties on the
// share of ranks asked (while the demo's 800 last).
func TestSpecCriteria(t *testing.T) {
	c := SpecCriteria(24000, 0.1)
	seen := map[string]bool{}
	singles, firstK := 0, 0
	for i, q := range c {
		if seen[q] {
			t.Fatalf("%d: %s twice", i, q)
		}
		seen[q] = true
		if strings.Contains(q, "/properties/#") {
			singles++
			if i < 8000 {
				firstK++
			}
		}
	}
	if singles != 800 || firstK != 800 {
		t.Errorf("%d singles (%d in the first 8000 ranks), want 800 and 800", singles, firstK)
	}
	small := SpecCriteria(1000, 0.1)
	for i := range small {
		if small[i] != c[i] {
			t.Fatalf("%d: %s with n=1000, %s with n=24000", i, small[i], c[i])
		}
	}
}

func TestIsHit(t *testing.T) {
	for v, want := range map[string]bool{
		"listingproxy; hit":                        true,
		"listingproxy; hit; detail=shared-fetch":   true,
		"listingproxy; hit; detail=stale-if-error": true,
		"listingproxy; fwd=miss; stored":           false,
		"nginx; hit; detail=STALE":                 true,
		"nginx; fwd=miss":                          false,
		"varnish; fwd=miss, listingproxy; hit":     false, // the first cache's word
		// A second tier's answers: the tier, nearer the origin, first.
		"listingproxy-shared; hit, listingproxy; fwd=miss; stored":                      true,
		"listingproxy-disk; hit; detail=stale-if-error, listingproxy; fwd=miss; stored": true,
		"listingproxy-shared; fwd=miss; collapsed, listingproxy; fwd=miss; stored":      false,
		"":    false,
		"hit": false, // no cache named
	} {
		if got := IsHit(v); got != want {
			t.Errorf("IsHit(%q) = %v, want %v", v, got, want)
		}
	}
}

// TestWarmKeys: the last distinct keys answered 200, newest first, at most
// max of them.
func TestWarmKeys(t *testing.T) {
	rs := []result{
		{key: "a", status: 200}, {key: "b", status: 200}, {key: "c", status: 503},
		{key: "a", status: 200}, {key: "d", status: 404}, {key: "e", status: 200},
	}
	if got := strings.Join(WarmKeys(rs, 10), " "); got != "e a b" {
		t.Errorf("WarmKeys = %q, want \"e a b\"", got)
	}
	if got := strings.Join(WarmKeys(rs, 2), " "); got != "e a" {
		t.Errorf("WarmKeys(2) = %q, want \"e a\"", got)
	}
}

func TestParseCred(t *testing.T) {
	c, err := parseCred("harbour-short:harbour-demo:harbour:short")
	if err != nil || c != (cred{user: "harbour-short", password: "harbour-demo", tenant: "harbour", short: true}) {
		t.Errorf("got %+v, %v", c, err)
	}
	c, err = parseCred("summit:summit-demo")
	if err != nil || c.tenant != "summit" || c.short {
		t.Errorf("got %+v, %v", c, err)
	}
	for _, bad := range []string{"summit", "a:b:c:full", ":x", "a:"} {
		if _, err := parseCred(bad); err == nil {
			t.Errorf("%q accepted", bad)
		}
	}
}
