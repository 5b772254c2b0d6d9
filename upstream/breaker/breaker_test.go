package breaker_test

import (
	"context"
	"errors"
	"fmt"
	"net"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"listingproxy/internal/testkit"
	"listingproxy/normalize"
	"listingproxy/upstream"
	"listingproxy/upstream/breaker"
	"listingproxy/upstream/crm"
)

// newFake is a fake backend whose every call ends as result says for its
// tenant; TenantCalls counts the calls by tenant.
func newFake(result func(ctx context.Context, tenant string) error) *testkit.Backend {
	return &testkit.Backend{Result: func(ctx context.Context, s upstream.Scope) error { return result(ctx, s.Tenant) }}
}

func newClock() *testkit.Clock {
	return testkit.NewClock(time.Date(2026, 11, 22, 12, 0, 0, 0, time.UTC))
}

// errTimeout is what a SQL store returns when its query timeout ends a query.
var errTimeout = fmt.Errorf("sqlstore: list properties: %w", context.DeadlineExceeded)

// refused is a real connection-refused error: a dial to a listener that
// was just closed.
func refused(t *testing.T) error {
	t.Helper()
	addr := testkit.ClosedAddr(t)
	c, err := net.Dial("tcp", addr)
	if err == nil {
		c.Close()
		t.Fatal("dial to a closed listener succeeded")
	}
	return fmt.Errorf("sqlstore: list properties: %w", err)
}

func list(b upstream.Backend, tenant string) error {
	_, err := b.ListProperties(context.Background(), upstream.Scope{Tenant: tenant, Country: "au"}, normalize.Criteria{})
	return err
}

// states returns each breaker's state by "backend/tenant" ("backend" for
// the backend-wide one).
func states(r *breaker.Registry) map[string]string {
	m := map[string]string{}
	for _, s := range r.States() {
		name := s.Backend
		if s.Tenant != "" {
			name += "/" + s.Tenant
		}
		m[name] = s.State.String()
	}
	return m
}

// TestTenantTimeoutsOpenOnlyItsBreaker: a tenant whose queries all hit the
// query timeout opens its own breaker; another tenant of the same backend
// keeps being answered by the backend, and the backend breaker stays
// closed, whether the two tenants' calls interleave or the failing tenant
// is alone.
func TestTenantTimeoutsOpenOnlyItsBreaker(t *testing.T) {
	for _, tc := range []struct {
		name      string
		okBetween bool // a call of the healthy tenant after each failing one
	}{
		{"interleaved with a healthy tenant", true},
		{"failing tenant alone, healthy tenant after", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			clk := newClock()
			fb := newFake(func(_ context.Context, tenant string) error {
				if tenant == "slow" {
					return errTimeout
				}
				return nil
			})
			r := breaker.NewRegistry(breaker.Options{Now: clk.Now})
			b := r.Wrap(fb, breaker.Backend{Name: "sql", Limit: 8, Tenants: []string{"slow", "ok"}})
			for i := range 20 {
				err := list(b, "slow")
				if i < breaker.DefaultConsecutiveFailures && !errors.Is(err, context.DeadlineExceeded) {
					t.Fatalf("slow call %d = %v, want the timeout", i, err)
				}
				if tc.okBetween {
					if err := list(b, "ok"); err != nil {
						t.Fatalf("ok call %d = %v, want an answer", i, err)
					}
				}
			}
			if n := fb.TenantCalls("slow"); n != breaker.DefaultConsecutiveFailures {
				t.Errorf("slow tenant reached the backend %d times, want %d (then its breaker is open)", n, breaker.DefaultConsecutiveFailures)
			}
			for i := range 20 {
				if err := list(b, "ok"); err != nil {
					t.Fatalf("ok call %d after slow's breaker opened = %v, want an answer", i, err)
				}
			}
			want := map[string]string{"sql": "closed", "sql/ok": "closed", "sql/slow": "open"}
			if diff := cmp.Diff(want, states(r)); diff != "" {
				t.Errorf("states (-want +got):\n%s", diff)
			}
			err := list(b, "slow")
			var oe *breaker.OpenError
			if !errors.As(err, &oe) || !errors.Is(err, breaker.ErrOpen) || oe.Tenant != "slow" || oe.Backend != "sql" {
				t.Fatalf("slow call while open = %v, want an *OpenError for sql/slow", err)
			}
			if got, want := err.Error(), "breaker sql/slow: circuit breaker open"; got != want {
				t.Errorf("error %q, want %q", got, want)
			}
			if oe.RetryAfter() != breaker.DefaultOpenFor {
				t.Errorf("RetryAfter = %v, want %v", oe.RetryAfter(), breaker.DefaultOpenFor)
			}
			clk.Advance(4*time.Second + time.Millisecond)
			if err := list(b, "slow"); !errors.As(err, &oe) || oe.RetryAfter() != 11*time.Second {
				t.Errorf("RetryAfter 4s later = %v, want 11s (rounded up)", err)
			}
		})
	}
}

// TestCRMRefusingConnectionsOpensEveryTenant: the real CRM client against
// a closed port: its refused dials are connection-level, so one tenant's
// calls open the backend breaker for all.
func TestCRMRefusingConnectionsOpensEveryTenant(t *testing.T) {
	addr := testkit.ClosedAddr(t)
	c, err := crm.New(crm.Options{BaseURL: "http://" + addr, Credentials: map[string]crm.Credential{
		"a": {Username: "a", Password: "pw"}, "b": {Username: "b", Password: "pw"},
	}})
	if err != nil {
		t.Fatal(err)
	}
	r := breaker.NewRegistry(breaker.Options{})
	b := r.Wrap(c, breaker.Backend{Name: "crm", Limit: 16, Tenants: []string{"a", "b"}})
	for i := range breaker.DefaultConsecutiveFailures {
		if err := list(b, "a"); err == nil || errors.Is(err, breaker.ErrOpen) {
			t.Fatalf("call %d = %v, want the CRM's connection error", i, err)
		}
	}
	var oe *breaker.OpenError
	if err := list(b, "b"); !errors.As(err, &oe) || oe.Tenant != "" {
		t.Errorf("tenant b after tenant a's refused calls = %v, want the backend breaker's *OpenError", err)
	}
}

// TestBackendDownOpensEveryTenant: a backend that is really down opens for
// every tenant within a bounded number of calls, including tenants that
// never called it.
func TestBackendDownOpensEveryTenant(t *testing.T) {
	conn := refused(t)
	for _, tc := range []struct {
		name    string
		err     error
		callers []string // round robin
		// calls is how many failing calls open the backend breaker.
		calls int
	}{
		// Nothing ran, so no query is to blame: one tenant is enough.
		{"connection refused, one tenant calling", conn, []string{"a"}, breaker.DefaultConsecutiveFailures},
		// A timeout could be the tenant's own query: it counts once a
		// second tenant fails too.
		{"timeouts from two tenants", errTimeout, []string{"a", "b"}, breaker.DefaultConsecutiveFailures + 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			fb := newFake(func(context.Context, string) error { return tc.err })
			r := breaker.NewRegistry(breaker.Options{Now: newClock().Now})
			b := r.Wrap(fb, breaker.Backend{Name: "sql", Limit: 8, Tenants: []string{"a", "b", "c"}})
			for i := range tc.calls {
				tenant := tc.callers[i%len(tc.callers)]
				if err := list(b, tenant); errors.Is(err, breaker.ErrOpen) {
					t.Fatalf("call %d (%s) = %v, want the backend's error: open too early", i, tenant, err)
				}
			}
			for _, tenant := range []string{"a", "b", "c"} {
				before := fb.TenantCalls(tenant)
				err := list(b, tenant)
				var oe *breaker.OpenError
				if !errors.As(err, &oe) || oe.Tenant != "" || oe.Backend != "sql" {
					t.Errorf("tenant %s after %d failing calls: %v, want the backend breaker's *OpenError", tenant, tc.calls, err)
				}
				if fb.TenantCalls(tenant) != before {
					t.Errorf("tenant %s reached a backend whose breaker is open", tenant)
				}
			}
			st := r.States()[0]
			if st.Tenant != "" || st.State != breaker.StateOpen || st.LastError != tc.err.Error() {
				t.Errorf("backend status %+v, want open with last error %q", st, tc.err)
			}
		})
	}
}

// TestBulkhead: another tenant's call is served at once while a hog holds
// all it may, and the hog's next call waits (never for another tenant's
// slot), gets the slot its own call frees, or gives up with its context's
// error, counted by no breaker. With an adaptive limit (a CRM) a tenant
// alone may borrow beyond its share, but never the reserve; with a fixed
// one (a SQL pool) it keeps to its share.
func TestBulkhead(t *testing.T) {
	for _, tc := range []struct {
		name     string
		adaptive bool
		hogMay   int // calls the hog alone may hold of the limit 4 (share 2, reserve 1)
	}{
		{"adaptive: borrows to the reserve", true, 3},
		{"fixed: its share", false, 2},
	} {
		t.Run(tc.name, func(t *testing.T) { testBulkhead(t, tc.adaptive, tc.hogMay) })
	}
}

func testBulkhead(t *testing.T, adaptive bool, hogMay int) {
	release := make(chan struct{})
	entered := make(chan string, 16)
	fb := newFake(func(ctx context.Context, tenant string) error {
		entered <- tenant
		if tenant == "hog" {
			<-release
		}
		return nil
	})
	// The hog's call beyond what it may hold waits as long as it takes
	// (the queue timeout has its own test).
	r := breaker.NewRegistry(breaker.Options{Now: newClock().Now, Settings: breaker.Settings{QueueTimeout: time.Hour}})
	b := r.Wrap(fb, breaker.Backend{Name: "be", Limit: 4, Adaptive: adaptive})
	var wg sync.WaitGroup
	errs := make(chan error, 8)
	for range hogMay {
		wg.Go(func() { errs <- list(b, "hog") })
	}
	for range hogMay {
		<-entered
	}
	next := make(chan error, 1)
	go func() { next <- list(b, "hog") }()
	// Another tenant is served at once, again and again, while the hog
	// holds all it may.
	for i := range 3 {
		if err := list(b, "other"); err != nil {
			t.Fatalf("other tenant's call %d = %v", i, err)
		}
		if who := <-entered; who != "other" {
			t.Fatalf("entered %q while the hog holds all it may, want other", who)
		}
	}
	hogStatus := func() breaker.Status {
		for _, s := range r.States() {
			if s.Tenant == "hog" {
				return s
			}
		}
		t.Fatal("no status for the hog")
		return breaker.Status{}
	}
	if s := hogStatus(); s.InFlight != hogMay || s.Slots != 2 {
		t.Errorf("hog in flight %d of a share of %d, want %d of 2", s.InFlight, s.Slots, hogMay)
	}
	// A caller that gives up while waiting gets its context's error and
	// never reaches the backend; nothing is counted against the breakers.
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err := b.GetProperty(ctx, upstream.Scope{Tenant: "hog"}, 1)
	if want := "breaker be/hog: waiting for a backend slot (limit 4, tenant share 2): context canceled"; err == nil || err.Error() != want {
		t.Errorf("cancelled waiting call = %v, want %q", err, want)
	}
	close(release)
	if who := <-entered; who != "hog" { // the waiting call gets a slot
		t.Errorf("entered %q, want the hog's waiting call", who)
	}
	wg.Wait()
	if err := <-next; err != nil {
		t.Errorf("hog's waiting call = %v", err)
	}
	close(errs)
	for err := range errs {
		if err != nil {
			t.Errorf("hog call = %v", err)
		}
	}
	if n := fb.TenantCalls("hog"); n != hogMay+1 {
		t.Errorf("hog reached the backend %d times, want %d", n, hogMay+1)
	}
	if got := states(r); got["be/hog"] != "closed" || got["be"] != "closed" {
		t.Errorf("states %v, want all closed", got)
	}
}

// TestShareUnderContention: while a tenant below its share waits, every
// slot that frees goes to it, before a tenant that borrowed beyond its
// share and asked first; once nobody below their share waits, the
// borrower gets the free slots again.
func TestShareUnderContention(t *testing.T) {
	hogRelease, otherRelease := make(chan struct{}), make(chan struct{})
	entered := make(chan string, 32)
	fb := newFake(func(ctx context.Context, tenant string) error {
		entered <- tenant
		if tenant == "hog" {
			<-hogRelease
		} else {
			<-otherRelease
		}
		return nil
	})
	// Limit 8: share 4, reserve 1: the hog alone holds 7.
	r := breaker.NewRegistry(breaker.Options{Settings: breaker.Settings{QueueTimeout: time.Hour}})
	b := r.Wrap(fb, breaker.Backend{Name: "crm", Limit: 8, Adaptive: true})
	done := make(chan error, 32)
	call := func(tenant string) { go func() { done <- list(b, tenant) }() }
	// next is the tenant of the next call to reach the backend; the
	// bound is a safety net, so that a broken limiter fails, not hangs.
	next := func() string {
		t.Helper()
		select {
		case who := <-entered:
			return who
		case <-time.After(3 * time.Minute):
			t.Fatal("no call reached the backend")
			return ""
		}
	}
	for range 7 {
		call("hog")
	}
	for range 7 {
		next()
	}
	call("hog") // the hog's eighth: waits, first in the queue
	testkit.WaitFor(t, "the hog's eighth call to wait", func() bool { return r.Limits()[0].Waiting == 1 })
	call("other") // below its share: the reserve slot, at once
	if who := next(); who != "other" {
		t.Fatalf("entered %q, want other from the reserve", who)
	}
	for range 2 {
		call("other")
	}
	testkit.WaitFor(t, "three calls to wait", func() bool { return r.Limits()[0].Waiting == 3 })
	for i := range 2 { // each slot the hog frees goes to the other tenant
		hogRelease <- struct{}{}
		if who := next(); who != "other" {
			t.Fatalf("freed slot %d went to %q, want other (below its share) before the hog (beyond it)", i, who)
		}
	}
	// Nobody below their share waits now: the next slot freed is the
	// reserve, kept free; the one after is the hog's to borrow.
	hogRelease <- struct{}{}
	testkit.WaitFor(t, "the hog's call to end", func() bool { return r.Limits()[0].InFlight == 7 })
	if l := r.Limits()[0]; l.Waiting != 1 {
		t.Fatalf("limits %+v, want the hog's call still waiting: the last free slot is the reserve", l)
	}
	hogRelease <- struct{}{}
	if who := next(); who != "hog" {
		t.Fatalf("freed slot went to %q, want the hog's waiting call", who)
	}
	close(hogRelease)
	close(otherRelease)
	for range 11 {
		if err := <-done; err != nil {
			t.Errorf("call = %v", err)
		}
	}
}

// TestBulkheadWaitTimesOut: a call that cannot get a slot before its
// deadline fails with the deadline, without counting against the breakers.
func TestBulkheadWaitTimesOut(t *testing.T) {
	release := make(chan struct{})
	entered := make(chan struct{}, 1)
	fb := newFake(func(ctx context.Context, tenant string) error {
		entered <- struct{}{}
		<-release
		return nil
	})
	r := breaker.NewRegistry(breaker.Options{Settings: breaker.Settings{ConsecutiveFailures: 1}})
	b := r.Wrap(fb, breaker.Backend{Name: "sql", Limit: 1}) // 1 slot
	done := make(chan error, 1)
	go func() { done <- list(b, "t") }()
	<-entered
	ctx, cancel := context.WithDeadline(context.Background(), time.Unix(0, 0)) // already past
	defer cancel()
	_, err := b.ListProperties(ctx, upstream.Scope{Tenant: "t"}, normalize.Criteria{})
	if !errors.Is(err, context.DeadlineExceeded) || fb.TenantCalls("t") != 1 {
		t.Errorf("call past its deadline = %v after %d backend calls, want DeadlineExceeded after 1", err, fb.TenantCalls("t"))
	}
	close(release)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if got := states(r); got["sql/t"] != "closed" || got["sql"] != "closed" {
		t.Errorf("states %v, want all closed: a caller's own wait is no backend failure", got)
	}
}

// TestOutcomes: what counts against a tenant's breaker (ConsecutiveFailures
// 1: one counted failure opens it).
func TestOutcomes(t *testing.T) {
	cancelled, cancel := context.WithCancel(context.Background())
	cancel()
	for _, tc := range []struct {
		name   string
		ctx    context.Context
		result func(ctx context.Context) error
		open   bool
	}{
		{"not found is an answer", context.Background(), func(context.Context) error { return fmt.Errorf("get 7: %w", upstream.ErrNotFound) }, false},
		{"criteria rejected is an answer", context.Background(), func(context.Context) error { return &upstream.CriteriaError{} }, false},
		{"context.Canceled", context.Background(), func(context.Context) error { return fmt.Errorf("query: %w", context.Canceled) }, false},
		{"caller already gone", cancelled, func(context.Context) error { return errTimeout }, false},
		{"deadline", context.Background(), func(context.Context) error { return errTimeout }, true},
		{"other error", context.Background(), func(context.Context) error { return errors.New("syntax error") }, true},
		{"listingproxy's own bug", context.Background(), func(context.Context) error { return fmt.Errorf("%w: panic", upstream.ErrInternal) }, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			fb := newFake(func(ctx context.Context, _ string) error { return tc.result(ctx) })
			r := breaker.NewRegistry(breaker.Options{Settings: breaker.Settings{ConsecutiveFailures: 1}})
			b := r.Wrap(fb, breaker.Backend{Name: "sql"})
			for range 3 {
				b.GetProperty(tc.ctx, upstream.Scope{Tenant: "t"}, 7)
			}
			if got := states(r)["sql/t"] == "open"; got != tc.open {
				t.Errorf("open = %v, want %v (states %v)", got, tc.open, states(r))
			}
		})
	}
}

// TestCallerCancelledMidCall: the caller goes away during the call and the
// backend reports some other error as a result: not the backend's fault.
func TestCallerCancelledMidCall(t *testing.T) {
	cancels := make(chan context.CancelFunc, 1)
	fb := newFake(func(context.Context, string) error { (<-cancels)(); return errors.New("connection reset") })
	r := breaker.NewRegistry(breaker.Options{Settings: breaker.Settings{ConsecutiveFailures: 1}})
	b := r.Wrap(fb, breaker.Backend{Name: "sql"})
	for range 5 {
		ctx, cancel := context.WithCancel(context.Background())
		cancels <- cancel
		_, err := b.GetAgent(ctx, upstream.Scope{Tenant: "t"}, 1)
		cancel()
		if err == nil {
			t.Fatal("call = nil, want the error")
		}
	}
	if got := states(r)["sql/t"]; got != "closed" {
		t.Errorf("tenant t: %s, want closed", got)
	}
}

func TestPanicCountsAndPropagates(t *testing.T) {
	fb := newFake(func(context.Context, string) error { panic("kaput") })
	r := breaker.NewRegistry(breaker.Options{Settings: breaker.Settings{ConsecutiveFailures: 1}})
	b := r.Wrap(fb, breaker.Backend{Name: "sql", Limit: 1})
	func() {
		defer func() {
			if v := recover(); v != "kaput" {
				t.Errorf("recovered %v, want the backend's panic", v)
			}
		}()
		list(b, "t")
	}()
	if got := states(r)["sql/t"]; got != "open" {
		t.Errorf("after a panic: %s, want open", got)
	}
	for _, s := range r.States() {
		if s.InFlight != 0 {
			t.Errorf("%s/%s: %d slots still held after a panic", s.Backend, s.Tenant, s.InFlight)
		}
	}
}

func TestFailureRatio(t *testing.T) {
	fail := false
	fb := newFake(func(context.Context, string) error {
		if fail {
			return errTimeout
		}
		return nil
	})
	r := breaker.NewRegistry(breaker.Options{Settings: breaker.Settings{FailureRatio: 0.5, MinRequests: 10, Window: time.Hour}})
	b := r.Wrap(fb, breaker.Backend{Name: "sql"})
	call := func(f bool) { fail = f; list(b, "t") }
	for range 4 { // 4 of 8: the ratio is met but too few calls
		call(true)
		call(false)
	}
	if got := states(r)["sql/t"]; got != "closed" {
		t.Fatalf("below MinRequests: %s, want closed", got)
	}
	call(false)
	call(true) // 5 of 10
	if got := states(r)["sql/t"]; got != "open" {
		t.Errorf("5 failures of 10: %s, want open", got)
	}
}

// TestHalfOpen: after OpenFor a breaker lets HalfOpenProbes calls through;
// more fail fast; their successes close it. gobreaker reads the real clock
// for its open period, so this uses a short OpenFor and waits for the
// state to change; nothing asserts on elapsed time.
func TestHalfOpen(t *testing.T) {
	var mu sync.Mutex
	var changes []string
	result := make(chan error, 1)
	result <- errors.New("boom")
	release := make(chan struct{})
	probing := make(chan struct{}, 2)
	fb := newFake(func(ctx context.Context, _ string) error {
		select {
		case err := <-result:
			return err
		default:
		}
		probing <- struct{}{}
		<-release
		return nil
	})
	r := breaker.NewRegistry(breaker.Options{
		Settings: breaker.Settings{ConsecutiveFailures: 1, OpenFor: 20 * time.Millisecond, HalfOpenProbes: 2},
		OnStateChange: func(backend, tenant string, from, to breaker.State) {
			mu.Lock()
			changes = append(changes, fmt.Sprintf("%s/%s:%v->%v", backend, tenant, from, to))
			mu.Unlock()
		},
	})
	b := r.Wrap(fb, breaker.Backend{Name: "sql"})
	list(b, "t")
	testkit.WaitFor(t, "half-open", func() bool { return states(r)["sql/t"] == "half-open" })
	var wg sync.WaitGroup
	for range 2 {
		wg.Go(func() {
			if err := list(b, "t"); err != nil {
				t.Errorf("probe = %v", err)
			}
		})
	}
	<-probing
	<-probing // both probes are in the backend
	var oe *breaker.OpenError
	if err := list(b, "t"); !errors.As(err, &oe) || oe.RetryAfter() != time.Second {
		t.Errorf("third call while probing = %v, want an *OpenError with RetryAfter 1s", err)
	}
	close(release)
	wg.Wait()
	if got := states(r)["sql/t"]; got != "closed" {
		t.Errorf("after successful probes: %s, want closed", got)
	}
	mu.Lock()
	defer mu.Unlock()
	want := []string{"sql/t:closed->open", "sql/t:open->half-open", "sql/t:half-open->closed"}
	if diff := cmp.Diff(want, changes); diff != "" {
		t.Errorf("state changes (-want +got):\n%s", diff)
	}
}

// TestReload: unchanged settings keep the breakers (an open one stays
// open); changed settings replace them, closed, with the new thresholds,
// and keep the history.
func TestReload(t *testing.T) {
	fb := newFake(func(context.Context, string) error { return errTimeout })
	r := breaker.NewRegistry(breaker.Options{Settings: breaker.Settings{ConsecutiveFailures: 1}})
	b := r.Wrap(fb, breaker.Backend{Name: "sql"})
	list(b, "t")
	if r.Reload(breaker.Settings{ConsecutiveFailures: 1}) {
		t.Error("Reload of the same settings reported a change")
	}
	if got := states(r)["sql/t"]; got != "open" {
		t.Fatalf("after an unchanged reload: %s, want still open", got)
	}
	if !r.Reload(breaker.Settings{ConsecutiveFailures: 2}) {
		t.Error("Reload of new settings reported no change")
	}
	if got := states(r)["sql/t"]; got != "closed" {
		t.Fatalf("after a changed reload: %s, want a fresh closed breaker", got)
	}
	list(b, "t")
	if got := states(r)["sql/t"]; got != "closed" {
		t.Fatalf("1 failure with ConsecutiveFailures 2: %s, want closed", got)
	}
	list(b, "t")
	if got := states(r)["sql/t"]; got != "open" {
		t.Errorf("2 failures with ConsecutiveFailures 2: %s, want open", got)
	}
	if s := r.States()[1]; s.LastError != errTimeout.Error() || s.LastFailure.IsZero() {
		t.Errorf("history after reload: %+v, want the last error kept", s)
	}
}

func TestDefaults(t *testing.T) {
	got := breaker.Settings{}.WithDefaults()
	want := breaker.Settings{
		ConsecutiveFailures: 5, MinRequests: 20, Window: 10 * time.Second, OpenFor: 15 * time.Second,
		HalfOpenProbes: 3, TenantShare: 0.5, QueueTimeout: 500 * time.Millisecond,
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("defaults (-want +got):\n%s", diff)
	}
	for s, want := range map[breaker.State]string{breaker.StateClosed: "closed", breaker.StateHalfOpen: "half-open", breaker.StateOpen: "open", 9: "unknown"} {
		if s.String() != want {
			t.Errorf("State(%d) = %q, want %q", s, s, want)
		}
	}
}

// TestBusyCountsAgainstNoBreaker: calls that cannot get a slot within the
// queue timeout fail fast with a *BusyError (upstream.ErrBusy, with a
// Retry-After), and no breaker counts them: tenant A saturating its share
// with slow calls, then being refused again and again, never opens its
// own breaker nor the backend-wide one, even when tenant B is refused too
// (two tenants failing would open the backend-wide breaker), and B keeps
// being answered once it has a slot. An upstream.ErrBusy from inside the
// backend (a full decode budget) is not counted either.
func TestBusyCountsAgainstNoBreaker(t *testing.T) {
	release := make(chan struct{})
	entered := make(chan string, 4)
	var blockB, innerBusy atomic.Bool
	fb := newFake(func(ctx context.Context, tenant string) error {
		if innerBusy.Load() {
			return fmt.Errorf("crm: list properties au: waiting for decode budget: %w", upstream.ErrBusy)
		}
		if tenant == "a" || blockB.Load() {
			entered <- tenant
			<-release
		}
		return nil
	})
	// Limit 2, share 0.5: one slot each. The queue timeout is 1ns: a call
	// that finds no free slot is refused when its timer fires, and no slot
	// frees up here before release, so the outcome is the same on any
	// machine.
	r := breaker.NewRegistry(breaker.Options{Settings: breaker.Settings{ConsecutiveFailures: 1, QueueTimeout: time.Nanosecond}})
	b := r.Wrap(fb, breaker.Backend{Name: "crm", Limit: 2, Tenants: []string{"a", "b"}})
	busy := func(tenant string) {
		t.Helper()
		err := list(b, tenant)
		var be *breaker.BusyError
		if !errors.As(err, &be) || !errors.Is(err, upstream.ErrBusy) || be.RetryAfter() != time.Second || be.Tenant != tenant {
			t.Fatalf("call of %s without a free slot = %v, want a *BusyError for it matching upstream.ErrBusy with Retry-After 1s", tenant, err)
		}
	}
	allClosed := func(when string) {
		t.Helper()
		if got, want := states(r), map[string]string{"crm": "closed", "crm/a": "closed", "crm/b": "closed"}; !cmp.Equal(got, want) {
			t.Fatalf("%s: states %v, want all closed", when, got)
		}
	}
	held := make(chan error, 2)
	go func() { held <- list(b, "a") }()
	<-entered
	for range 10 { // A at its share: each further call refused at once
		busy("a")
	}
	if err := list(b, "b"); err != nil { // B is not held up by A
		t.Fatalf("other tenant beside a saturated one = %v", err)
	}
	allClosed("one tenant refused")
	blockB.Store(true)
	go func() { held <- list(b, "b") }()
	<-entered
	for range 10 { // the backend full: both tenants refused
		busy("a")
		busy("b")
	}
	allClosed("two tenants refused")
	if l := r.Limits(); len(l) != 1 || l[0].Refusals[breaker.RefusedQueueTimeout] != 30 || l[0].InFlight != 2 || l[0].Limit != 2 {
		t.Errorf("limits %+v, want 30 refusals by queue timeout, 2 of 2 in flight", l)
	}
	close(release)
	for range 2 {
		if err := <-held; err != nil {
			t.Fatalf("held call = %v", err)
		}
	}
	innerBusy.Store(true)
	for range 10 {
		for _, tenant := range []string{"a", "b"} {
			if err := list(b, tenant); !errors.Is(err, upstream.ErrBusy) {
				t.Fatalf("call with a busy backend = %v, want upstream.ErrBusy", err)
			}
		}
	}
	allClosed("the backend's own bound full")
	innerBusy.Store(false)
	blockB.Store(false)
	if err := list(b, "b"); err != nil {
		t.Errorf("B after the refusals = %v", err)
	}
}

// TestBackgroundCallsUseIdleCapacity: a background call (a cache refresh)
// runs while clients leave capacity idle, is refused at once (ErrBusy,
// counted as a background refusal, no breaker counting it) when they use
// three quarters of the limit or wait, and never takes a waiting client's
// place.
func TestBackgroundCallsUseIdleCapacity(t *testing.T) {
	release := make(chan struct{})
	entered := make(chan string, 16)
	fb := newFake(func(ctx context.Context, tenant string) error {
		if upstream.IsBackground(ctx) {
			entered <- "background"
			return nil
		}
		entered <- tenant
		<-release
		return nil
	})
	r := breaker.NewRegistry(breaker.Options{Now: newClock().Now, Settings: breaker.Settings{QueueTimeout: time.Hour, ConsecutiveFailures: 1}})
	b := r.Wrap(fb, breaker.Backend{Name: "be", Limit: 8, Adaptive: false, Tenants: []string{"t", "u"}})
	bg := func() error {
		_, err := b.ListProperties(upstream.Background(context.Background()), upstream.Scope{Tenant: "u"}, normalize.Criteria{})
		return err
	}
	if err := bg(); err != nil {
		t.Fatalf("a background call with the backend idle = %v", err)
	}
	<-entered
	// Clients hold 6 of 8 (their share is 4 each: two tenants).
	var wg sync.WaitGroup
	for _, tn := range []string{"t", "t", "t", "u", "u", "u"} {
		wg.Go(func() { list(b, tn) })
	}
	for range 6 {
		<-entered
	}
	err := bg()
	if !errors.Is(err, upstream.ErrBusy) {
		t.Errorf("a background call with 6 of 8 slots held = %v, want ErrBusy at once", err)
	}
	for _, s := range r.States() {
		if s.State != breaker.StateClosed {
			t.Errorf("breaker %s/%s %v after a refused background call, want closed", s.Backend, s.Tenant, s.State)
		}
	}
	close(release)
	wg.Wait()
	var refused uint64
	for _, l := range r.Limits() {
		refused = l.Refusals[breaker.RefusedBackground]
	}
	if refused != 1 {
		t.Errorf("background refusals = %d, want 1", refused)
	}
}
