package cache

import (
	"bytes"
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"github.com/klauspost/compress/gzip"
	"io"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"listingproxy/internal/testkit"
)

var pol = Policy{
	TTL:                  time.Minute,
	StaleWhileRevalidate: 5 * time.Minute,
	StaleIfError:         time.Hour,
	NegativeTTL:          10 * time.Second,
}

var key = Key{Tenant: "harbour", Resource: "au/properties/1", Variant: "full|au|json|"}

func TestNewEntry(t *testing.T) {
	small := NewEntry([]byte("hello"), "text/plain", false, t0)
	if small.Gzip != nil {
		t.Errorf("small body: Gzip = %d bytes, want nil", len(small.Gzip))
	}
	if len(small.ETag) != 34 || small.ETag[0] != '"' || small.ETag[33] != '"' {
		t.Errorf("ETag = %s, want a quoted 32-hex tag", small.ETag)
	}
	if again := NewEntry([]byte("hello"), "x", true, t0); again.ETag != small.ETag {
		t.Errorf("same body, ETags %s and %s differ", small.ETag, again.ETag)
	}
	if other := NewEntry([]byte("hellO"), "text/plain", false, t0); other.ETag == small.ETag {
		t.Errorf("different bodies share ETag %s", other.ETag)
	}
	if !small.StoredAt.Equal(t0) || small.ContentType != "text/plain" || small.Negative {
		t.Errorf("fields = %+v", small)
	}

	big := bytes.Repeat([]byte("<property><id>1</id></property>"), 100)
	e := NewEntry(big, "application/xml", false, t0)
	if e.Gzip == nil || len(e.Gzip) >= len(big) {
		t.Fatalf("big body: Gzip = %d bytes, want some below %d", len(e.Gzip), len(big))
	}
	zr, err := gzip.NewReader(bytes.NewReader(e.Gzip))
	if err != nil {
		t.Fatal(err)
	}
	got, err := io.ReadAll(zr)
	if err != nil || !bytes.Equal(got, big) {
		t.Errorf("gunzip = %d bytes, %v; want the body back", len(got), err)
	}

	noise := make([]byte, 4096)
	rand.Read(noise)
	if e := NewEntry(noise, "application/octet-stream", false, t0); e.Gzip != nil {
		t.Errorf("incompressible body: Gzip = %d bytes, want nil", len(e.Gzip))
	}
}

// TestNewEntryWith: an entry built with its Meta value in the same object
// has NewEntry's fields, its Meta is the value returned, and what the
// caller sets there is what a reader of the entry finds, also after
// collections (the entry alone keeps the object alive).
func TestNewEntryWith(t *testing.T) {
	type meta struct {
		vals [3]string
		n    int
	}
	for _, body := range [][]byte{[]byte("hello"), bytes.Repeat([]byte("<property><id>1</id></property>"), 100)} {
		want := NewEntry(body, "application/xml", true, t0)
		e, m := NewEntryWith[meta](body, "application/xml", true, t0)
		if got, ok := e.Meta.(*meta); !ok || got != m {
			t.Fatalf("Meta = %#v, want the *meta returned (%p)", e.Meta, m)
		}
		m.vals[1], m.n = strings.Repeat("x", len(body)), len(body)
		e.Meta, want.Meta = nil, nil
		if !bytes.Equal(e.Body, want.Body) || !bytes.Equal(e.Gzip, want.Gzip) || e.ETag != want.ETag ||
			e.ContentType != want.ContentType || e.Negative != want.Negative || !e.StoredAt.Equal(want.StoredAt) || e.Tags != nil {
			t.Errorf("%d-byte body: entry %+v, want NewEntry's %+v", len(body), e, want)
		}
		e.Meta = m
		m = nil
		runtime.GC()
		runtime.GC()
		if got := e.Meta.(*meta); got.n != len(body) || len(got.vals[1]) != len(body) {
			t.Errorf("%d-byte body: Meta after collections = %+v", len(body), got)
		}
	}
}

// TestNewEntryGzipConcurrent: entries built at once on many goroutines
// (which share recycled gzip writers) each hold the gzip form of their own
// body, byte for byte what a fresh writer makes.
func TestNewEntryGzipConcurrent(t *testing.T) {
	t0 := time.Unix(1700000000, 0)
	const n = 64
	bodies := make([][]byte, n)
	for i := range bodies {
		bodies[i] = bytes.Repeat(fmt.Appendf(nil, "<property><id>%d</id></property>", i), 50+i)
	}
	entries := make([]*Entry, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() { entries[i] = NewEntry(bodies[i], "application/xml", false, t0) })
	}
	wg.Wait()
	for i, e := range entries {
		var want bytes.Buffer
		zw, err := gzip.NewWriterLevel(&want, GzipLevel)
		if err != nil {
			t.Fatal(err)
		}
		_, _ = zw.Write(bodies[i])
		_ = zw.Close()
		if !bytes.Equal(e.Gzip, want.Bytes()) {
			t.Errorf("body %d: gzip form of %d bytes differs from a fresh writer's %d", i, len(e.Gzip), want.Len())
		}
	}
}

func TestOutcomeString(t *testing.T) {
	want := map[Outcome]string{
		Miss: "miss", Hit: "hit", Stale: "stale", StaleIfError: "stale-if-error",
		Negative: "negative", Bypass: "bypass", Outcome(99): "unknown",
	}
	for o, w := range want {
		if got := o.String(); got != w {
			t.Errorf("Outcome(%d).String() = %q, want %q", o, got, w)
		}
	}
}

func TestColdGetsCoalesce(t *testing.T) {
	const n = 200
	s := newStore(t, Options{})
	l := newLoader(nil).gated()

	results := make(chan result, n)
	for range n {
		go func() {
			e, o, err := s.Get(context.Background(), key, pol, l.load)
			results <- result{e, o, err}
		}()
	}
	<-l.started
	waitJoined(t, s, n)
	close(l.gate)

	for range n {
		r := <-results
		if r.err != nil || body(r.e) != "v1" || r.o != Miss {
			t.Fatalf("Get = %q, %v, %v; want v1, miss, nil", body(r.e), r.o, r.err)
		}
	}
	if got := l.Calls(); got != 1 {
		t.Errorf("loader calls = %d, want 1", got)
	}
	st := s.Stats()
	if st.Waiters != n-1 || st.Misses != n || st.LoaderCalls != 1 {
		t.Errorf("stats: waiters %d, misses %d, loader calls %d; want %d, %d, 1", st.Waiters, st.Misses, st.LoaderCalls, n-1, n)
	}
	if e, o, err := s.Get(context.Background(), key, pol, l.load); err != nil || o != Hit || body(e) != "v1" {
		t.Errorf("next Get = %q, %v, %v; want v1, hit", body(e), o, err)
	}
}

func TestCancelledCallerDoesNotFailOthers(t *testing.T) {
	s := newStore(t, Options{})
	l := newLoader(nil).gated()

	ctx, cancel := context.WithCancel(context.Background())
	first := make(chan result, 1)
	go func() {
		e, o, err := s.Get(ctx, key, pol, l.load)
		first <- result{e, o, err}
	}()
	<-l.started
	others := make(chan result, 2)
	for range 2 {
		go func() {
			e, o, err := s.Get(context.Background(), key, pol, l.load)
			others <- result{e, o, err}
		}()
	}
	waitJoined(t, s, 3)

	cancel()
	if r := <-first; !errors.Is(r.err, context.Canceled) || r.e != nil {
		t.Errorf("cancelled caller got %q, %v; want context.Canceled", body(r.e), r.err)
	}
	close(l.gate)
	for range 2 {
		if r := <-others; r.err != nil || body(r.e) != "v1" {
			t.Errorf("other caller got %q, %v; want v1", body(r.e), r.err)
		}
	}
	s.Wait()
	if l.Calls() != 1 || l.ctxErrs[0] != nil {
		t.Errorf("loader: %d calls, ctx error %v; want 1 call on a live context", l.Calls(), l.ctxErrs)
	}
	if e, o, _ := s.Get(context.Background(), key, pol, l.load); o != Hit || body(e) != "v1" {
		t.Errorf("after the flight: %q, %v; want the detached load stored (hit v1)", body(e), o)
	}
}

func TestCancelledLeaderStillFills(t *testing.T) {
	// The only caller gives up; the detached load carries on and fills.
	s := newStore(t, Options{})
	l := newLoader(nil).gated()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		_, _, err := s.Get(ctx, key, pol, l.load)
		done <- err
	}()
	<-l.started
	cancel()
	if err := <-done; !errors.Is(err, context.Canceled) {
		t.Fatalf("Get = %v, want context.Canceled", err)
	}
	close(l.gate)
	s.Wait()
	if e, o, err := s.Get(context.Background(), key, pol, l.load); o != Hit || body(e) != "v1" || err != nil {
		t.Errorf("Get = %q, %v, %v; want hit v1", body(e), o, err)
	}
}

func TestLoaderPanicReachesEveryWaiter(t *testing.T) {
	const n = 20
	s := newStore(t, Options{})
	s.Wait()
	baseline := runtime.NumGoroutine()

	l := newLoader(nil).gated()
	l.result = func(context.Context, int32) (*Entry, error) { panic("boom") }
	errs := make(chan error, n)
	for range n {
		go func() {
			_, _, err := s.Get(context.Background(), key, pol, l.load)
			errs <- err
		}()
	}
	<-l.started
	waitJoined(t, s, n)
	close(l.gate)
	for range n {
		err := <-errs
		var pe *PanicError
		if !errors.As(err, &pe) || pe.Value != "boom" || len(pe.Stack) == 0 {
			t.Fatalf("Get error = %v, want a *PanicError carrying boom and a stack", err)
		}
	}
	s.Wait()
	testkit.WaitFor(t, "goroutines to return to baseline", func() bool { return runtime.NumGoroutine() <= baseline })
	if st := s.Stats(); st.Panics != 1 || st.Errors != n {
		t.Errorf("stats: panics %d, errors %d; want 1, %d", st.Panics, st.Errors, n)
	}

	// The key is not poisoned.
	ok := newLoader(nil)
	if e, o, err := s.Get(context.Background(), key, pol, ok.load); err != nil || o != Miss || body(e) != "v1" {
		t.Errorf("Get after panic = %q, %v, %v; want miss v1", body(e), o, err)
	}
}

func TestLadder(t *testing.T) {
	clock := newClock()
	s := newStore(t, Options{Now: clock.Now})
	l := newLoader(clock)
	fail := false
	var failMu sync.Mutex
	l.result = func(_ context.Context, n int32) (*Entry, error) {
		failMu.Lock()
		defer failMu.Unlock()
		if fail {
			return nil, errBackend
		}
		return NewEntry([]byte("v"+itoa(int(n))), "text/plain", false, clock.Now()), nil
	}
	setFail := func(v bool) { failMu.Lock(); fail = v; failMu.Unlock() }
	get := func() (string, Outcome, error) {
		e, o, err := s.Get(context.Background(), key, pol, l.load)
		return body(e), o, err
	}
	check := func(step, wantBody string, wantO Outcome, wantCalls int) {
		t.Helper()
		b, o, err := get()
		if err != nil || b != wantBody || o != wantO || (wantCalls >= 0 && l.Calls() != wantCalls) {
			t.Fatalf("%s: Get = %q, %v, %v with %d loader calls; want %q, %v, nil with %d",
				step, b, o, err, l.Calls(), wantBody, wantO, wantCalls)
		}
	}

	check("cold", "v1", Miss, 1)
	clock.Advance(pol.TTL - time.Second)
	check("fresh", "v1", Hit, 1)

	// Within stale-while-revalidate: the stored body, one background refresh.
	clock.Advance(2 * time.Second)
	l.gate = make(chan struct{})
	for range 10 {
		check("stale", "v1", Stale, -1) // the refresh runs concurrently
	}
	<-l.started
	<-l.started
	close(l.gate)
	s.Wait()
	l.gate = nil
	if l.Calls() != 2 {
		t.Fatalf("loader calls after stale Gets = %d, want 2", l.Calls())
	}
	if st := s.Stats(); st.Refreshes != 1 || st.Stale != 10 {
		t.Fatalf("stats: refreshes %d, stale %d; want 1, 10", st.Refreshes, st.Stale)
	}
	check("refreshed", "v2", Hit, 2)

	// A failing background refresh keeps the stale body.
	clock.Advance(pol.TTL + time.Second)
	setFail(true)
	check("stale, refresh failing", "v2", Stale, -1)
	s.Wait()
	if l.Calls() != 3 {
		t.Fatalf("loader calls after failed refresh = %d, want 3", l.Calls())
	}

	// Past stale-while-revalidate, within stale-if-error, loader failing.
	clock.Advance(pol.StaleWhileRevalidate)
	check("stale-if-error", "v2", StaleIfError, 4)

	// Beyond stale-if-error: the error.
	clock.Advance(pol.StaleIfError)
	b, o, err := get()
	if !errors.Is(err, errBackend) || b != "<nil>" || o != Miss {
		t.Fatalf("beyond stale-if-error: Get = %q, %v, %v; want the backend error", b, o, err)
	}

	// The backend recovers.
	setFail(false)
	check("recovered", "v6", Miss, 6)
}

func TestNegativeEntries(t *testing.T) {
	clock := newClock()
	s := newStore(t, Options{Now: clock.Now})
	l := newLoader(clock)
	l.result = func(_ context.Context, n int32) (*Entry, error) {
		return NewEntry([]byte("not found "+itoa(int(n))), "text/plain", true, clock.Now()), nil
	}
	steps := []struct {
		advance   time.Duration
		wantO     Outcome
		wantBody  string
		wantCalls int
	}{
		{0, Miss, "not found 1", 1},
		{pol.NegativeTTL - time.Second, Negative, "not found 1", 1},
		{time.Second, Miss, "not found 2", 2}, // no stale-while-revalidate phase for negatives
		{time.Second, Negative, "not found 2", 2},
	}
	for i, st := range steps {
		clock.Advance(st.advance)
		e, o, err := s.Get(context.Background(), key, pol, l.load)
		if err != nil || o != st.wantO || body(e) != st.wantBody || !e.Negative || l.Calls() != st.wantCalls {
			t.Fatalf("step %d: Get = %q, %v, %v, %d calls; want %q, %v, %d calls",
				i, body(e), o, err, l.Calls(), st.wantBody, st.wantO, st.wantCalls)
		}
	}

	// Past NegativeTTL a failing backend gets the stored not-found as
	// StaleIfError until NegativeTTL + StaleIfError, then the error.
	clock.Advance(pol.NegativeTTL)
	failing := func(context.Context) (*Entry, error) { return nil, errBackend }
	if e, o, err := s.Get(context.Background(), key, pol, failing); err != nil || o != StaleIfError || body(e) != "not found 2" || !e.Negative {
		t.Fatalf("negative past NegativeTTL, backend failing: Get = %q, %v, %v; want the stored not-found as StaleIfError", body(e), o, err)
	}
	clock.Advance(pol.StaleIfError - 2*time.Second) // age NegativeTTL + StaleIfError - 1s
	if e, o, err := s.Get(context.Background(), key, pol, failing); err != nil || o != StaleIfError || body(e) != "not found 2" {
		t.Fatalf("negative within NegativeTTL + StaleIfError: Get = %q, %v, %v; want StaleIfError", body(e), o, err)
	}
	clock.Advance(2 * time.Second)
	if e, o, err := s.Get(context.Background(), key, pol, failing); !errors.Is(err, errBackend) {
		t.Fatalf("negative past NegativeTTL + StaleIfError: Get = %q, %v, %v; want the backend error", body(e), o, err)
	}

	// NegativeTTL zero: negatives are not stored.
	p := pol
	p.NegativeTTL = 0
	k := Key{Tenant: "t", Resource: "r"}
	for i := 1; i <= 2; i++ {
		if _, o, _ := s.Get(context.Background(), k, p, l.load); o != Miss {
			t.Errorf("NegativeTTL 0, Get %d: %v, want miss", i, o)
		}
	}
	if st := s.Stats(); st.Negative != 2 {
		t.Errorf("stats: negative %d, want 2", st.Negative)
	}
}

func TestWaiterDeadlineServesStale(t *testing.T) {
	clock := newClock()
	s := newStore(t, Options{Now: clock.Now})
	l := newLoader(clock)
	if _, _, err := s.Get(context.Background(), key, pol, l.load); err != nil {
		t.Fatal(err)
	}
	clock.Advance(pol.TTL + pol.StaleWhileRevalidate + time.Second)
	l.gate = make(chan struct{})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan result, 1)
	go func() {
		e, o, err := s.Get(ctx, key, pol, l.load)
		done <- result{e, o, err}
	}()
	<-l.started
	cancel() // the caller's own deadline passes while the backend hangs
	if r := <-done; r.err != nil || r.o != StaleIfError || body(r.e) != "v1" {
		t.Errorf("Get = %q, %v, %v; want stale-if-error v1", body(r.e), r.o, r.err)
	}
	close(l.gate)
	s.Wait()
}

func TestFillTimeout(t *testing.T) {
	s := newStore(t, Options{})
	p := pol
	p.FillTimeout = time.Millisecond
	var deadline bool
	load := func(ctx context.Context) (*Entry, error) {
		_, deadline = ctx.Deadline()
		<-ctx.Done()
		return nil, ctx.Err()
	}
	_, _, err := s.Get(context.Background(), key, p, load)
	if !errors.Is(err, context.DeadlineExceeded) || !deadline {
		t.Errorf("Get = %v (loader ctx had deadline: %v); want DeadlineExceeded from FillTimeout", err, deadline)
	}
}

func TestLoaderContract(t *testing.T) {
	clock := newClock()
	s := newStore(t, Options{Now: clock.Now})
	_, _, err := s.Get(context.Background(), key, pol, func(context.Context) (*Entry, error) { return nil, nil })
	if !errors.Is(err, errNilEntry) {
		t.Errorf("nil entry: Get = %v, want errNilEntry", err)
	}
	e, _, err := s.Get(context.Background(), Key{Tenant: "z"}, pol, func(context.Context) (*Entry, error) {
		return &Entry{Body: []byte("x")}, nil
	})
	if err != nil || !e.StoredAt.Equal(t0) {
		t.Errorf("zero StoredAt: Get = %+v, %v; want StoredAt = Now()", e, err)
	}
	_, _, err = s.Get(context.Background(), Key{Tenant: "y"}, pol, func(context.Context) (*Entry, error) { return nil, errBackend })
	if !errors.Is(err, errBackend) || !strings.Contains(err.Error(), "cache: fill y") {
		t.Errorf("loader error = %v, want it wrapped with the key", err)
	}
}

func TestBypass(t *testing.T) {
	s := newStore(t, Options{})
	l := newLoader(nil)
	p := pol
	p.TTL = 0
	for i := 1; i <= 2; i++ {
		e, o, err := s.Get(context.Background(), key, p, l.load)
		if err != nil || o != Bypass || body(e) != "v"+itoa(i) {
			t.Errorf("Get %d = %q, %v, %v; want bypass v%d", i, body(e), o, err, i)
		}
	}
	if _, o, _ := s.Get(context.Background(), key, pol, l.load); o != Miss {
		t.Errorf("cached Get after bypasses = %v, want miss (bypass stores nothing)", o)
	}

	s.Close()
	e, o, err := s.Get(context.Background(), key, pol, l.load)
	if err != nil || o != Bypass || body(e) != "v4" {
		t.Errorf("Get after Close = %q, %v, %v; want bypass v4", body(e), o, err)
	}
	if st := s.Stats(); st.Bypass != 3 {
		t.Errorf("stats: bypass %d, want 3", st.Bypass)
	}
}

func TestPurgeDuringFill(t *testing.T) {
	s := newStore(t, Options{})
	l := newLoader(nil).gated()
	first := make(chan result, 1)
	go func() {
		e, o, err := s.Get(context.Background(), key, pol, l.load)
		first <- result{e, o, err}
	}()
	<-l.started
	s.Purge(key.Tenant, "", Hard)
	close(l.gate)
	// The caller that was already waiting gets the body it asked for...
	if r := <-first; r.err != nil || body(r.e) != "v1" {
		t.Fatalf("pre-purge caller: %q, %v; want v1", body(r.e), r.err)
	}
	s.Wait()
	// ...but it is neither stored nor served after the purge.
	e, o, err := s.Get(context.Background(), key, pol, l.load)
	if err != nil || o != Miss || body(e) != "v2" || l.Calls() != 2 {
		t.Errorf("after purge: Get = %q, %v, %v, %d calls; want miss v2, 2 calls", body(e), o, err, l.Calls())
	}
	if st := s.Stats(); st.PurgedFills != 1 || st.HardPurges != 1 {
		t.Errorf("stats: purged fills %d, purges %d; want 1, 1", st.PurgedFills, st.HardPurges)
	}
}

func TestGetAfterPurgeDoesNotJoinOldFlight(t *testing.T) {
	s := newStore(t, Options{})
	l := newLoader(nil)
	gate := make(chan struct{})
	l.result = func(_ context.Context, n int32) (*Entry, error) {
		if n == 1 {
			<-gate
		}
		return NewEntry([]byte("v"+itoa(int(n))), "text/plain", false, time.Now()), nil
	}
	first := make(chan result, 1)
	go func() {
		e, o, err := s.Get(context.Background(), key, pol, l.load)
		first <- result{e, o, err}
	}()
	<-l.started
	s.Purge(key.Tenant, key.Resource, Hard)

	e, o, err := s.Get(context.Background(), key, pol, l.load)
	if err != nil || o != Miss || body(e) != "v2" {
		t.Fatalf("post-purge Get = %q, %v, %v; want its own load (miss v2)", body(e), o, err)
	}
	close(gate)
	if r := <-first; body(r.e) != "v1" {
		t.Errorf("pre-purge caller: %q, want v1", body(r.e))
	}
	s.Wait()
	if e, o, _ := s.Get(context.Background(), key, pol, l.load); o != Hit || body(e) != "v2" {
		t.Errorf("later Get = %q, %v; want hit v2 (the pre-purge fill never overwrites)", body(e), o)
	}
}

func TestPurgeScopes(t *testing.T) {
	s := newStore(t, Options{})
	l := newLoader(nil)
	a1 := Key{"a", "r1", "s", "v"}
	a2 := Key{"a", "r2", "s", "v"}
	b1 := Key{"b", "r1", "s", "v"}
	fill := func(k Key) {
		if _, _, err := s.Get(context.Background(), k, pol, l.load); err != nil {
			t.Fatal(err)
		}
	}
	expect := func(step string, want map[Key]Outcome) {
		t.Helper()
		for k, w := range want {
			if _, o, _ := s.Get(context.Background(), k, pol, l.load); o != w {
				t.Errorf("%s: %v = %v, want %v", step, k, o, w)
			}
		}
	}
	for _, k := range []Key{a1, a2, b1} {
		fill(k)
	}
	s.Purge("a", "r1", Hard)
	expect("purge a/r1", map[Key]Outcome{a1: Miss, a2: Hit, b1: Hit})
	s.Purge("a", "", Hard)
	expect("purge a", map[Key]Outcome{a1: Miss, a2: Miss, b1: Hit})
	s.Purge("a", "r2", Hard)
	s.Purge("b", "", Hard)
	expect("purge a/r2 and b", map[Key]Outcome{a1: Hit, a2: Miss, b1: Miss})
	s.PurgeAll(Hard)
	expect("purge all", map[Key]Outcome{a1: Miss, a2: Miss, b1: Miss})
	expect("refilled", map[Key]Outcome{a1: Hit, a2: Hit, b1: Hit})

	g := s.gens.Load()
	if len(g.tenant) != 0 || len(g.resource) != 0 {
		t.Errorf("after PurgeAll: %d tenant and %d resource records, want none", len(g.tenant), len(g.resource))
	}
}

func TestByteBound(t *testing.T) {
	const maxBytes = 64 << 10
	for _, tc := range []struct {
		name    string
		workers int
		grow    bool
	}{
		{"sequential", 1, false},
		{"concurrent", 4, false},
		{"growing replacements", 2, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := newStore(t, Options{MaxBytes: maxBytes})
			var inserted int64
			var mu sync.Mutex
			check := func() {
				st := s.Stats()
				used := s.maxCost - s.c.RemainingCost()
				_, ovBytes := s.ov.stats()
				if st.Bytes > maxBytes || used > s.maxCost || ovBytes > s.ov.maxBytes {
					t.Errorf("held %d bytes (ristretto %d of %d, overlay %d of %d), budget %d",
						st.Bytes, used, s.maxCost, ovBytes, s.ov.maxBytes, maxBytes)
				}
			}
			var wg sync.WaitGroup
			for w := range tc.workers {
				wg.Go(func() {
					for i := 0; ; i++ {
						mu.Lock()
						done := inserted >= 10*maxBytes
						mu.Unlock()
						if done {
							return
						}
						size := 1000 + (i*7919)%4000
						k := Key{Tenant: "t" + itoa(w), Resource: "r" + itoa(i), Variant: "v"}
						if tc.grow {
							// Same keys, purged each time: every fill replaces
							// the stored item with a bigger one.
							size = 500 + (i*97)%(maxBytes/4)
							k.Resource = "r" + itoa(i%8)
							s.Purge(k.Tenant, k.Resource, Hard)
						}
						b := make([]byte, size)
						rand.Read(b)
						e, _, err := s.Get(context.Background(), k, pol, func(context.Context) (*Entry, error) {
							return NewEntry(b, "application/octet-stream", false, time.Now()), nil
						})
						if err != nil {
							t.Error(err)
							return
						}
						mu.Lock()
						inserted += cost(k, e)
						mu.Unlock()
						check()
					}
				})
			}
			wg.Wait()
			s.Wait()
			check()
			if st := s.Stats(); st.Entries <= 0 || st.Evictions+st.Rejections == 0 {
				t.Errorf("stats %+v: want entries held and some evicted or rejected", st)
			}
		})
	}
}

func TestOversizedEntryNotStored(t *testing.T) {
	s := newStore(t, Options{MaxBytes: 4 << 10})
	big := make([]byte, 8<<10)
	l := func(context.Context) (*Entry, error) { return NewEntry(big, "x", false, time.Now()), nil }
	for _, want := range []Outcome{Miss, Miss} {
		if _, o, err := s.Get(context.Background(), key, pol, l); err != nil || o != want {
			t.Errorf("Get = %v, %v; want %v", o, err, want)
		}
	}
	if st := s.Stats(); st.Bytes != 0 || st.Rejections != 2 {
		t.Errorf("stats: bytes %d, rejections %d; want 0, 2", st.Bytes, st.Rejections)
	}
}

func TestKeysNeverShareEntries(t *testing.T) {
	clock := newClock()
	s := newStore(t, Options{MaxBytes: 1 << 20, Now: clock.Now})
	var keys []Key
	for _, tenant := range []string{"a", "b", "ab", ""} {
		for _, res := range []string{"au/properties", "au/properties/1", "nz/agents"} {
			for _, v := range []string{"full|json", "full|xml", "short|json", "|", ""} {
				keys = append(keys, Key{tenant, res, v, ""}, Key{tenant, res, "", v})
			}
		}
	}
	// Field boundaries matter: these differ only in where the split falls.
	keys = append(keys, Key{"a|b", "c", "", ""}, Key{"a", "b|c", "", ""}, Key{"a", "b", "|c", ""}, Key{"a", "b", "", "|c"}, Key{"a", "b", "c|", ""}, Key{"a", "b", "c", "|"})

	p := pol
	p.TTL = 2 * time.Second
	var wg sync.WaitGroup
	for w := range 8 {
		wg.Go(func() {
			for i := range 3000 {
				k := keys[(i*31+w*17)%len(keys)]
				want := fmt.Sprintf("%q|%q|%q", k.Tenant, k.Resource, k.Variant)
				e, _, err := s.Get(context.Background(), k, p, func(context.Context) (*Entry, error) {
					return NewEntry([]byte(want), "text/plain", false, clock.Now()), nil
				})
				if err != nil || body(e) != want {
					t.Errorf("Get(%v) = %q, %v; want %q", k, body(e), err, want)
					return
				}
				if i%500 == 0 {
					s.Purge(k.Tenant, "", PurgeMode(i/500%2)) // soft and hard in turn
				}
				if w == 0 && i%100 == 0 {
					clock.Advance(time.Second) // some entries go stale and refresh
				}
			}
		})
	}
	wg.Wait()
}

func TestLookupVerifiesKeyOnHashCollision(t *testing.T) {
	s := newStore(t, Options{})
	a, b := Key{Tenant: "a"}, Key{Tenant: "b"}
	hb := s.hash(b)
	it := &item{key: a, hash: hb, entry: NewEntry([]byte("a"), "", false, t0)}
	s.idx.admit(it) // as store does
	s.c.Set(hb, it, 1)
	s.c.Wait()
	if it, _ := s.lookup(hb, b, epochs{}); it != nil {
		t.Errorf("lookup(b) = item for %v, want nil", it.key)
	}
	if s.hash(a) == hb {
		t.Errorf("hash(a) == hash(b)")
	}
}

func TestJustFilledServedNext(t *testing.T) {
	t.Run("set dropped", func(t *testing.T) {
		s := newStore(t, Options{})
		s.dropSets = true // every ristretto Set "lost"
		l := newLoader(nil)
		for i, want := range []Outcome{Miss, Hit, Hit} {
			if e, o, err := s.Get(context.Background(), key, pol, l.load); err != nil || o != want || body(e) != "v1" {
				t.Errorf("Get %d = %q, %v, %v; want %v v1", i, body(e), o, err, want)
			}
		}
		if st := s.Stats(); l.Calls() != 1 || st.OverlayEntries != 1 || st.Bytes == 0 {
			t.Errorf("loader calls %d, overlay entries %d, bytes %d; want 1, 1, >0", l.Calls(), st.OverlayEntries, st.Bytes)
		}
	})
	t.Run("tiny buffers and a full cache", func(t *testing.T) {
		s := newStore(t, Options{MaxBytes: 32 << 10, OverlayBytes: 8 << 10, BufferItems: 1, NumCounters: 100})
		for i := range 500 {
			k := Key{Tenant: "t", Resource: "r" + itoa(i)}
			calls := 0
			load := func(context.Context) (*Entry, error) {
				calls++
				return NewEntry(make([]byte, 900), "x", false, time.Now()), nil
			}
			if _, o, err := s.Get(context.Background(), k, pol, load); err != nil || o != Miss {
				t.Fatalf("%v: first Get = %v, %v; want miss", k, o, err)
			}
			if _, o, err := s.Get(context.Background(), k, pol, load); err != nil || o != Hit || calls != 1 {
				t.Fatalf("%v: next Get = %v, %v with %d loader calls; want hit with 1", k, o, err, calls)
			}
		}
		st := s.Stats()
		t.Logf("evictions %d, rejections %d, overlay puts %d", st.Evictions, st.Rejections, st.OverlayPuts)
		if st.Bytes > 32<<10 {
			t.Errorf("held %d bytes, budget %d", st.Bytes, 32<<10)
		}
	})
	t.Run("overlay disabled", func(t *testing.T) {
		s := newStore(t, Options{OverlayBytes: -1})
		s.dropSets = true
		l := newLoader(nil)
		s.Get(context.Background(), key, pol, l.load)
		if _, o, _ := s.Get(context.Background(), key, pol, l.load); o != Miss || l.Calls() != 2 {
			t.Errorf("Get = %v with %d calls; want miss with 2 (nowhere to keep it)", o, l.Calls())
		}
	})
}

func TestOverlayBounds(t *testing.T) {
	o := newOverlay(1000, 3)
	mk := func(h uint64, c int64) *item { return &item{key: Key{Tenant: itoa(int(h))}, hash: h, cost: c} }
	for h := uint64(1); h <= 5; h++ {
		o.put(h, mk(h, 300))
	}
	if n, b := o.stats(); n != 3 || b != 900 {
		t.Errorf("after 5 puts: %d entries, %d bytes; want 3, 900", n, b)
	}
	if o.get(1, Key{Tenant: "1"}, 0) != nil || o.get(5, Key{Tenant: "5"}, 0) == nil {
		t.Errorf("FIFO: oldest should be gone, newest kept")
	}
	o.put(6, mk(6, 700))
	if n, b := o.stats(); n != 2 || b != 1000 {
		t.Errorf("after a big put: %d entries, %d bytes; want 2, 1000", n, b)
	}
	if o.put(7, mk(7, 1001)) {
		t.Errorf("put of an item above the budget succeeded")
	}
	for i := range 100 { // churn must not grow the queue without bound
		o.put(8, mk(8, 10))
		o.del(8)
		_ = i
	}
	if len(o.queue) > 2*3+16+1 {
		t.Errorf("queue length %d after churn", len(o.queue))
	}
}

// refusedErr is a backend refusing calls for a while (an open breaker, say):
// it knows when to retry.
type refusedErr struct{}

func (refusedErr) Error() string             { return "refused" }
func (refusedErr) RetryAfter() time.Duration { return 42 * time.Second }

// TestStaleIfErrorWhileRefused: a loader that fails fast (a backend behind
// an open breaker) gets a stale copy served within stale-if-error; past it,
// its error comes back with what it says about retrying intact.
func TestStaleIfErrorWhileRefused(t *testing.T) {
	clock := newClock()
	s := newStore(t, Options{Now: clock.Now})
	l := newLoader(clock)
	refusing := false
	l.result = func(_ context.Context, n int32) (*Entry, error) {
		if refusing {
			return nil, refusedErr{}
		}
		return NewEntry([]byte("v"+itoa(int(n))), "text/plain", false, clock.Now()), nil
	}
	if _, _, err := s.Get(context.Background(), key, pol, l.load); err != nil {
		t.Fatal(err)
	}
	refusing = true
	clock.Advance(pol.TTL + pol.StaleWhileRevalidate + time.Second)
	e, o, err := s.Get(context.Background(), key, pol, l.load)
	if err != nil || o != StaleIfError || body(e) != "v1" {
		t.Errorf("refused, within stale-if-error: %q, %v, %v; want stale-if-error v1", body(e), o, err)
	}
	clock.Advance(pol.StaleIfError)
	_, _, err = s.Get(context.Background(), key, pol, l.load)
	var ra interface{ RetryAfter() time.Duration }
	if !errors.As(err, &ra) || ra.RetryAfter() != 42*time.Second {
		t.Errorf("refused, nothing stale: %v, want the loader's error with its RetryAfter", err)
	}
}

func TestNewOptions(t *testing.T) {
	for _, o := range []Options{{MaxBytes: -1}, {MaxBytes: 100, OverlayBytes: 100}} {
		if _, err := New(o); err == nil {
			t.Errorf("New(%+v) succeeded, want an error", o)
		}
	}
	s := newStore(t, Options{})
	if st := s.Stats(); st.MaxBytes != DefaultMaxBytes {
		t.Errorf("default MaxBytes = %d, want %d", st.MaxBytes, DefaultMaxBytes)
	}
}
