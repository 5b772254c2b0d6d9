package poll_test

import (
	"context"
	"errors"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"listingproxy/internal/testkit"
	"listingproxy/normalize"
	"listingproxy/upstream"
	"listingproxy/upstream/poll"
)

var t0 = time.Date(2026, 11, 27, 12, 0, 0, 0, time.UTC)

// legacy is a spec-following backend the test edits: it pages by offset
// and limit in id order (or ignores both, as some legacies do).
type legacy struct {
	testkit.Backend
	mu          sync.Mutex
	props       map[string][]upstream.Property // by tenant/country
	ignoreLimit bool
	fail        error
}

func (l *legacy) set(scope string, ps ...upstream.Property) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.props[scope] = ps
}

func (l *legacy) ListProperties(ctx context.Context, s upstream.Scope, c normalize.Criteria) ([]upstream.Property, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.fail != nil {
		return nil, l.fail
	}
	all := slices.Clone(l.props[s.Tenant+"/"+s.Country])
	slices.SortFunc(all, func(a, b upstream.Property) int { return int(a.ID - b.ID) })
	if l.ignoreLimit {
		return all, nil
	}
	if c.Offset() >= len(all) {
		return nil, nil
	}
	all = all[c.Offset():]
	return all[:min(len(all), c.Limit())], nil
}

func p(id int64, minutes int) upstream.Property {
	return upstream.Property{ID: id, LastUpdated: t0.Add(time.Duration(minutes) * time.Minute)}
}

// run starts a poller of hb/au and sm/au over l with page size 2; tick
// starts the next poll of every scope; calls counts list calls.
func run(t *testing.T, l *legacy) (sink *testkit.Changes, tick func(), calls func() int) {
	t.Helper()
	var mu sync.Mutex
	n := 0
	// Each scope, its poll done, asks After once for the wait before its
	// next poll; waiting holds those waits' channels. A channel per wait,
	// not one shared by all: with a shared one, a scope whose poll ends
	// first could take both of tick's sends and the other scope never
	// poll again (it happened under -race on a loaded machine).
	var waiting []chan time.Time
	pl, err := poll.New(poll.Options{
		Backend: l, Scopes: []upstream.Scope{{Tenant: "hb", Country: "au"}, {Tenant: "sm", Country: "au"}},
		Interval: time.Minute, PageSize: 2,
		Calls: func(upstream.Scope) { mu.Lock(); n++; mu.Unlock() },
		After: func(d time.Duration) <-chan time.Time {
			if d != time.Minute {
				t.Errorf("waited %s between polls, want the interval", d)
			}
			ch := make(chan time.Time, 1)
			mu.Lock()
			waiting = append(waiting, ch)
			mu.Unlock()
			return ch
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	sink = testkit.NewChanges()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- pl.Watch(ctx, sink) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("Watch = %v, want nil", err)
		}
	})
	// tick waits until both scopes wait for their next poll, then ends
	// both waits: each scope polls once more.
	tick = func() {
		t.Helper()
		testkit.WaitFor(t, "both scopes to wait for their next poll", func() bool {
			mu.Lock()
			defer mu.Unlock()
			return len(waiting) == 2
		})
		mu.Lock()
		ws := waiting
		waiting = nil
		mu.Unlock()
		for _, ch := range ws {
			ch <- t0
		}
	}
	return sink, tick, func() int { mu.Lock(); defer mu.Unlock(); return n }
}

// next returns the next two changes (one per scope, in any order) sorted
// by tenant.
func nextOf(t *testing.T, sink *testkit.Changes, n int) []upstream.Change {
	t.Helper()
	var out []upstream.Change
	for range n {
		out = append(out, sink.Next(t))
	}
	slices.SortFunc(out, func(a, b upstream.Change) int {
		if a.Tenant != b.Tenant {
			if a.Tenant < b.Tenant {
				return -1
			}
			return 1
		}
		if a.Op < b.Op {
			return -1
		}
		if a.Op > b.Op {
			return 1
		}
		return 0
	})
	return out
}

// TestPollerReportsWhatChanged: the first poll of each tenant is a gap;
// then an update, an insert and a delete of one tenant are reported for
// it alone (the other tenant, holding the same ids, reports nothing); the
// lists are read a page at a time.
func TestPollerReportsWhatChanged(t *testing.T) {
	l := &legacy{props: map[string][]upstream.Property{}}
	l.set("hb/au", p(1, 0), p(2, 0), p(3, 0), p(4, 0), p(5, 0))
	l.set("sm/au", p(1, 0), p(2, 0))
	sink, tick, calls := run(t, l)
	want := []upstream.Change{{Tenant: "hb", Country: "au", Gap: true}, {Tenant: "sm", Country: "au", Gap: true}}
	if diff := cmp.Diff(want, nextOf(t, sink, 2), cmpopts.EquateEmpty()); diff != "" {
		t.Fatalf("first polls (-want +got):\n%s", diff)
	}
	testkit.WaitFor(t, "both first polls to be done", func() bool { return calls() == 3+2 })

	// hb: 2 updated, 6 inserted, 1 deleted; sm untouched.
	l.set("hb/au", p(2, 5), p(3, 0), p(4, 0), p(5, 0), p(6, 0))
	tick()
	want = []upstream.Change{
		{Tenant: "hb", Country: "au", Resource: "properties", Op: "DELETE", Properties: []int64{1}},
		{Tenant: "hb", Country: "au", Resource: "properties", Op: "INSERT", Properties: []int64{6}},
		{Tenant: "hb", Country: "au", Resource: "properties", Op: "UPDATE", Properties: []int64{2}},
	}
	if diff := cmp.Diff(want, nextOf(t, sink, 3), cmpopts.EquateEmpty()); diff != "" {
		t.Fatalf("second polls (-want +got):\n%s", diff)
	}
	testkit.WaitFor(t, "both second polls to be done", func() bool { return calls() == 2*(3+2) })
	if got := sink.Pending(); len(got) != 0 {
		t.Errorf("unchanged lists reported %+v", got)
	}
	if _, last := sink.State(); last != nil {
		t.Errorf("Live = %v after good polls, want nil", last)
	}
}

// TestPollerSurvivesFailures: a failed poll is reported as the feed's
// state and reports no change; the next good one reports everything since
// the last good one.
func TestPollerSurvivesFailures(t *testing.T) {
	l := &legacy{props: map[string][]upstream.Property{}}
	l.set("hb/au", p(1, 0))
	l.set("sm/au", p(1, 0))
	sink, tick, calls := run(t, l)
	nextOf(t, sink, 2)
	testkit.WaitFor(t, "the first polls", func() bool { return calls() == 2 })
	l.mu.Lock()
	l.fail = errors.New("crm: 503")
	l.mu.Unlock()
	l.set("hb/au", p(1, 9))
	tick()
	testkit.WaitFor(t, "the failed polls", func() bool { _, last := sink.State(); return last != nil && calls() == 4 })
	if got := sink.Pending(); len(got) != 0 {
		t.Errorf("a failed poll reported %+v", got)
	}
	l.mu.Lock()
	l.fail = nil
	l.mu.Unlock()
	tick()
	want := []upstream.Change{{Tenant: "hb", Country: "au", Resource: "properties", Op: "UPDATE", Properties: []int64{1}}}
	if diff := cmp.Diff(want, nextOf(t, sink, 1), cmpopts.EquateEmpty()); diff != "" {
		t.Fatalf("after recovering (-want +got):\n%s", diff)
	}
	testkit.WaitFor(t, "the feed to be live again", func() bool { _, last := sink.State(); return last == nil })
}

// TestPollerLegacyIgnoringLimit: a legacy that sends its whole list
// whatever the limit is read in one call per poll, not forever.
func TestPollerLegacyIgnoringLimit(t *testing.T) {
	l := &legacy{props: map[string][]upstream.Property{}, ignoreLimit: true}
	l.set("hb/au", p(1, 0), p(2, 0), p(3, 0), p(4, 0), p(5, 0))
	l.set("sm/au", p(1, 0), p(2, 0))
	sink, tick, calls := run(t, l)
	nextOf(t, sink, 2)
	// sm's two properties fill its first page of two: a second call finds
	// nothing new.
	testkit.WaitFor(t, "the first polls", func() bool { return calls() == 1+2 })
	l.set("hb/au", p(1, 0), p(2, 0), p(3, 1), p(4, 0), p(5, 0))
	tick()
	want := []upstream.Change{{Tenant: "hb", Country: "au", Resource: "properties", Op: "UPDATE", Properties: []int64{3}}}
	if diff := cmp.Diff(want, nextOf(t, sink, 1), cmpopts.EquateEmpty()); diff != "" {
		t.Fatalf("(-want +got):\n%s", diff)
	}
}
