package main

import (
	"context"
	"log/slog"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"

	"listingproxy/config"
	"listingproxy/internal/testkit"
	"listingproxy/internal/warmup"
)

// warmConfig is the demo configuration with cache.warm on a file of the
// test's own, /readyz waiting for the warm-up.
func warmConfig(t *testing.T) (cfgPath, warmFile string) {
	t.Helper()
	path := demoConfig(t)
	src, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	warmFile = filepath.Join(filepath.Dir(path), "warm.json")
	warm := "  fill_timeout: 10s\n  warm:\n    file: \"" + filepath.ToSlash(warmFile) + "\"\n    keys: 100\n    ready_timeout: 1h\n"
	s := strings.Replace(string(src), "  fill_timeout: 10s\n", warm, 1)
	if s == string(src) {
		t.Fatal("config.yaml has no cache.fill_timeout line to add cache.warm after")
	}
	if err := os.WriteFile(path, []byte(s), 0o600); err != nil {
		t.Fatal(err)
	}
	return path, warmFile
}

// warmApp wires the configuration at path with the warm-up's pacing
// replaced by wait.
func warmApp(t *testing.T, path string, wait func(context.Context, string) error) *app {
	t.Helper()
	cfg, err := config.Load(path, func(string) string { return "" })
	if err != nil {
		t.Fatal(err)
	}
	d := deps{warmWait: wait, log: slog.New(slog.DiscardHandler), now: testkit.NewClock(goldenNow).Now}
	a, err := buildWith(context.Background(), cfg, d)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(a.Close)
	if a.warm == nil {
		t.Fatal("cache.warm configured, no warm-up wired")
	}
	return a
}

func readyz(a *app) (int, string) {
	w := httptest.NewRecorder()
	a.admin.ServeHTTP(w, httptest.NewRequest("GET", "/readyz", nil))
	return w.Code, w.Body.String()
}

// TestWarmUpAfterRestart, on the wired demo: the keys one process filled
// (two tenants, two permission levels, two formats) are written to
// cache.warm.file at its stop and fetched by the next process at its
// start without a client request, each through the budget of its
// tenant's backend; /readyz answers 503 "warming" until then; each
// caller then gets a hit with its own body. A hard purge of harbour
// fetches harbour's keys again, and only them.
func TestWarmUpAfterRestart(t *testing.T) {
	path, file := warmConfig(t)
	a := warmApp(t, path, nil)
	bodies := warm(t, a) // diskTargets, each caller's own body
	a.Close()
	saved, err := warmup.ReadFile(file)
	if err != nil || len(saved) != len(diskTargets) {
		t.Fatalf("warm file after the stop: %d targets, %v; want %d", len(saved), err, len(diskTargets))
	}
	for _, s := range saved {
		if strings.Contains(s.User+s.Target, "demo") {
			t.Errorf("a saved target holds a password: %+v", s)
		}
	}

	gate := make(chan struct{})
	var asked atomic.Int32
	var byTenant [2]atomic.Int32 // harbour, summit
	b := warmApp(t, path, func(ctx context.Context, tenant string) error {
		select {
		case <-gate:
		case <-ctx.Done():
			return ctx.Err()
		}
		asked.Add(1)
		if tenant == "summit" {
			byTenant[1].Add(1)
		} else {
			byTenant[0].Add(1)
		}
		return nil
	})
	if code, body := readyz(b); code != 503 || !strings.Contains(body, "warming") {
		t.Errorf("/readyz during the warm-up: %d %q; want 503 warming", code, body)
	}
	close(gate)
	<-b.warm.Started()
	if code, _ := readyz(b); code != 200 {
		t.Errorf("/readyz after the warm-up: %d; want 200", code)
	}
	if s := b.cache.Stats(); s.LoaderCalls != uint64(len(diskTargets)) || asked.Load() != int32(len(diskTargets)) || byTenant[1].Load() != 1 {
		t.Errorf("warm-up at start: %d backend calls, budget asked %d (summit %d); want %d, %d, 1", s.LoaderCalls, asked.Load(), byTenant[1].Load(), len(diskTargets), len(diskTargets))
	}
	for i, d := range diskTargets {
		w := demoGet(t, b.handler, d.user, d.target)
		if w.Code != 200 || w.Header().Get("Cache-Status") != "listingproxy; hit" || w.Body.String() != bodies[i] {
			t.Errorf("%s %s after the warm-up: %d %q; want its own body, a hit", d.user, d.target, w.Code, w.Header().Get("Cache-Status"))
		}
	}
	m := httptest.NewRecorder()
	b.admin.ServeHTTP(m, httptest.NewRequest("GET", "/metrics", nil))
	if want := `listingproxy_cache_warm_targets_total{result="done"} 5`; !strings.Contains(m.Body.String(), want) {
		t.Errorf("/metrics lacks %s", want)
	}

	before := b.cache.Stats().LoaderCalls
	if w := adminPurge(b, "tenant=harbour&mode=hard", "admin", "admin-demo"); w.Code != 200 {
		t.Fatalf("hard purge: %d %s", w.Code, w.Body)
	}
	b.warm.Idle()
	if got := b.cache.Stats().LoaderCalls - before; got != 4 || byTenant[1].Load() != 1 {
		t.Errorf("after a hard purge of harbour: %d backend calls (summit's budget asked %d times); want harbour's 4 keys, summit's untouched", got, byTenant[1].Load())
	}
	for i, d := range diskTargets {
		w := demoGet(t, b.handler, d.user, d.target)
		if w.Code != 200 || w.Header().Get("Cache-Status") != "listingproxy; hit" || w.Body.String() != bodies[i] {
			t.Errorf("%s %s after the hard purge's warm-up: %d %q; want its own body, a hit", d.user, d.target, w.Code, w.Header().Get("Cache-Status"))
		}
	}
}

// TestWarmCommand: "listingproxy warm -from LOG" adds a request log's
// served GETs (JSON access-log lines and USER PATH lines; other log lines,
// failed requests and other methods skipped) to cache.warm.file, the most
// requested first, merged with what the file held; a line it cannot read
// is an error naming its number, and the file is left as it was.
func TestWarmCommand(t *testing.T) {
	path, file := warmConfig(t)
	if err := os.WriteFile(file, []byte(`{"user":"summit","target":"/au/agents.xml","hits":1}`+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	log := filepath.Join(t.TempDir(), "access.log")
	lines := []string{
		`{"time":"x","level":"INFO","msg":"listening","addr":"http://127.0.0.1:8080"}`,
		`{"time":"x","level":"INFO","msg":"request","method":"GET","path":"/au/properties.xml?limit=2","status":200,"user":"harbour"}`,
		`{"time":"x","level":"INFO","msg":"request","method":"GET","path":"/au/properties.xml?limit=2","status":200,"user":"harbour"}`,
		`{"time":"x","level":"INFO","msg":"request","method":"GET","path":"/au/properties.xml?limit=9","status":401,"user":""}`,
		`{"time":"x","level":"INFO","msg":"request","method":"POST","path":"/au/properties.xml","status":405,"user":"harbour"}`,
		`summit /au/agents.xml`,
		`summit /au/agents.xml`,
		`# a comment`,
	}
	if err := os.WriteFile(log, []byte(strings.Join(lines, "\n")+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	var out, errb strings.Builder
	if err := run(context.Background(), []string{"listingproxy", "warm", "-config", path, "-from", log}, func(string) string { return "" }, strings.NewReader(""), &out, &errb); err != nil {
		t.Fatalf("warm: %v %s", err, errb.String())
	}
	got, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	want := `{"user":"summit","target":"/au/agents.xml","hits":3}` + "\n" + `{"user":"harbour","target":"/au/properties.xml?limit=2","hits":2}` + "\n"
	if string(got) != want {
		t.Errorf("warm file:\n%s\nwant:\n%s", got, want)
	}

	if err := os.WriteFile(log, []byte("summit /au/agents.xml\nnot a line\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	err = run(context.Background(), []string{"listingproxy", "warm", "-config", path, "-from", log}, func(string) string { return "" }, strings.NewReader(""), &out, &errb)
	if err == nil || !strings.Contains(err.Error(), "line 2") {
		t.Errorf("a bad line: %v; want an error naming line 2", err)
	}
	if again, _ := os.ReadFile(file); string(again) != want {
		t.Errorf("the file changed after a refused log:\n%s", again)
	}
}
