package warmup

import (
	"context"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	"listingproxy/cache"
	"listingproxy/proxy"
)

// fakeServer records the warm-up's runs; its hot targets are fixed, by
// tenant (the user's name is its tenant here).
type fakeServer struct {
	hot []proxy.WarmTarget
	mu  sync.Mutex
	ran [][]proxy.WarmTarget
}

func (f *fakeServer) HotTargets(n int, tenant string) []proxy.WarmTarget {
	var out []proxy.WarmTarget
	for _, t := range f.hot {
		if (tenant == "" || t.User == tenant) && len(out) < n {
			out = append(out, t)
		}
	}
	return out
}

func (f *fakeServer) WarmUp(ctx context.Context, targets []proxy.WarmTarget, wait func(context.Context, string) error) proxy.WarmStats {
	var st proxy.WarmStats
	for _, t := range targets {
		if wait != nil {
			if err := wait(ctx, t.User); err != nil {
				st.Failed++
				return st
			}
		}
		st.Done++
	}
	f.mu.Lock()
	f.ran = append(f.ran, targets)
	f.mu.Unlock()
	return st
}

func (f *fakeServer) runs() [][]proxy.WarmTarget {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([][]proxy.WarmTarget(nil), f.ran...)
}

var hot = []proxy.WarmTarget{
	{User: "harbour", Target: "/au/properties.xml?limit=2", Hits: 9},
	{User: "summit", Target: "/au/agents.json", Hits: 5},
	{User: "harbour", Target: "/nz/agents.xml", Hits: 1},
}

// TestFileRoundTrip: a missing file (or none) is empty; WriteFile keeps
// the n hottest, through a temporary file that does not stay beside it;
// a file that does not read is an error naming it.
func TestFileRoundTrip(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "warm.json")
	for _, p := range []string{"", path} {
		if ts, err := ReadFile(p); ts != nil || err != nil {
			t.Errorf("ReadFile(%q) of nothing: %v, %v; want empty", p, ts, err)
		}
	}
	if err := WriteFile(path, hot, 2); err != nil {
		t.Fatal(err)
	}
	got, err := ReadFile(path)
	if err != nil || !reflect.DeepEqual(got, hot[:2]) {
		t.Errorf("read back: %+v, %v; want %+v", got, err, hot[:2])
	}
	if es, _ := os.ReadDir(dir); len(es) != 1 {
		t.Errorf("%d files beside the warm file, want none: %v", len(es)-1, es)
	}
	if err := os.WriteFile(path, []byte("not a line\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := ReadFile(path); err == nil || !strings.Contains(err.Error(), path) {
		t.Errorf("a bad file: %v; want an error naming %s", err, path)
	}
}

// TestMerge: a repeated user and target adds its hits; new ones follow
// in b's order.
func TestMerge(t *testing.T) {
	a := []proxy.WarmTarget{{User: "summit", Target: "/au/agents.xml", Hits: 1}}
	b := []proxy.WarmTarget{{User: "harbour", Target: "/au/properties.xml", Hits: 2}, {User: "summit", Target: "/au/agents.xml", Hits: 2}, {User: "harbour", Target: "/au/agents.xml", Hits: 1}}
	want := []proxy.WarmTarget{{User: "summit", Target: "/au/agents.xml", Hits: 3}, {User: "harbour", Target: "/au/properties.xml", Hits: 2}, {User: "harbour", Target: "/au/agents.xml", Hits: 1}}
	if got := Merge(a, b); !reflect.DeepEqual(got, want) {
		t.Errorf("Merge = %+v, want %+v", got, want)
	}
	if a[0].Hits != 1 {
		t.Error("Merge changed its first argument")
	}
}

// TestBudgetsShareABackend: the tenants of one backend share its
// tokens, another backend's tenant has its own, a tenant without a
// backend never refreshes and does not wait.
func TestBudgetsShareABackend(t *testing.T) {
	b := NewBudgets(1, map[string]string{"harbour": "crm", "coast": "crm", "summit": "sql"})
	if !b.Allow(cache.Key{Tenant: "harbour"}) {
		t.Fatal("harbour's first refresh refused")
	}
	if b.Allow(cache.Key{Tenant: "coast"}) {
		t.Error("coast refreshed on the token harbour spent (one backend)")
	}
	if !b.Allow(cache.Key{Tenant: "summit"}) {
		t.Error("summit refused: its backend's budget is its own")
	}
	if b.Allow(cache.Key{Tenant: "nobody"}) {
		t.Error("a tenant without a budget refreshed")
	}
	if err := b.Wait(context.Background(), "nobody"); err != nil {
		t.Errorf("Wait without a budget: %v", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := b.Wait(ctx, "harbour"); err == nil {
		t.Error("Wait for an empty budget on a cancelled context returned nil")
	}
}

// TestReadyTimeoutBoundsTheWait: with the warm-up held (its budget never
// answers), Warming is true until ReadyTimeout's timer fires, then false
// while the warm-up still runs; a start with nothing to warm is ready at
// once and sets no timer.
func TestReadyTimeoutBoundsTheWait(t *testing.T) {
	path := filepath.Join(t.TempDir(), "warm.json")
	var timers int
	fire := func() {}
	after := func(d time.Duration, f func()) func() bool {
		timers++
		if d != time.Hour {
			t.Errorf("ready timeout timer of %v, want 1h", d)
		}
		fire = f
		return func() bool { return true }
	}
	empty := Start(&fakeServer{}, Options{File: path, ReadyTimeout: time.Hour, After: after})
	if empty.Warming() || timers != 0 {
		t.Errorf("nothing to warm: warming %v, %d timers; want ready at once, none", empty.Warming(), timers)
	}
	empty.Close()

	if err := WriteFile(path, hot, 10); err != nil {
		t.Fatal(err)
	}
	held := make(chan struct{})
	srv := &fakeServer{}
	w := Start(srv, Options{File: path, ReadyTimeout: time.Hour, After: after, Wait: func(ctx context.Context, _ string) error {
		select {
		case <-held:
			return nil
		case <-ctx.Done():
			return ctx.Err()
		}
	}})
	defer w.Close()
	if !w.Warming() || timers != 1 {
		t.Errorf("while warming: warming %v, %d timers; want true, 1", w.Warming(), timers)
	}
	fire()
	if w.Warming() {
		t.Error("still warming after the ready timeout fired")
	}
	select {
	case <-w.Started():
		t.Error("the warm-up ended while held")
	default:
	}
	close(held)
	<-w.Started()
	if r := srv.runs(); len(r) != 1 || !reflect.DeepEqual(r[0], hot) {
		t.Errorf("start's run: %+v; want the file's targets", r)
	}
}

// TestPurgedRefillsTheTenant: a hard purge of a tenant replays that
// tenant's hot targets, of everything every tenant's; a soft purge none;
// Close writes the hottest to the file.
func TestPurgedRefillsTheTenant(t *testing.T) {
	path := filepath.Join(t.TempDir(), "warm.json")
	srv := &fakeServer{hot: hot}
	w := Start(srv, Options{File: path, Keys: 10})
	<-w.Started()
	w.Purged(cache.Purge{Tenant: "summit", Mode: cache.Soft})
	w.Purged(cache.Purge{Tenant: "harbour", Mode: cache.Hard})
	w.Idle()
	w.Purged(cache.Purge{All: true, Tenant: "ignored", Mode: cache.Hard})
	w.Idle()
	want := [][]proxy.WarmTarget{{hot[0], hot[2]}, hot}
	if r := srv.runs(); !reflect.DeepEqual(r, want) {
		t.Errorf("runs after the purges: %+v; want harbour's, then all", r)
	}
	w.Close()
	if got, err := ReadFile(path); err != nil || !reflect.DeepEqual(got, hot) {
		t.Errorf("file after Close: %+v, %v; want the hot targets", got, err)
	}
	w.Purged(cache.Purge{Mode: cache.Hard, All: true})
	if r := srv.runs(); len(r) != 2 {
		t.Errorf("a purge after Close ran a warm-up: %d runs", len(r))
	}
}
