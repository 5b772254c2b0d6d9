package main

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/redis/go-redis/v9"

	"listingproxy/internal/testkit"
)

// headless starts headless Chromium (or skips, see chromium) and returns
// a function that runs one step of the test in its tab, bounded.
func headless(t *testing.T) func(what string, f func(ctx context.Context) error) {
	t.Helper()
	execPath := chromium(t)
	opts := append(chromedp.DefaultExecAllocatorOptions[:],
		chromedp.ExecPath(execPath),
		chromedp.Headless,
		chromedp.NoSandbox, // CI runs as root, where Chromium's sandbox cannot start
		chromedp.DisableGPU,
		chromedp.Flag("disable-dev-shm-usage", true),
	)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	t.Cleanup(cancel)
	actx, cancelAlloc := chromedp.NewExecAllocator(ctx, opts...)
	t.Cleanup(cancelAlloc)
	bctx, cancelBrowser := chromedp.NewContext(actx)
	t.Cleanup(cancelBrowser)
	if err := chromedp.Do(bctx); err != nil {
		t.Fatalf("start %s: %v", execPath, err)
	}
	return func(what string, f func(ctx context.Context) error) {
		t.Helper()
		sctx, cancel := context.WithTimeout(bctx, 60*time.Second)
		defer cancel()
		if err := f(sctx); err != nil {
			t.Fatalf("%s: %v", what, err)
		}
	}
}

// pollJS waits until the expression is true in the page.
func pollJS(ctx context.Context, expr string) error {
	_, err := chromedp.Run(ctx, chromedp.Poll[bool](expr, chromedp.WithPollingInterval(50*time.Millisecond)))
	return err
}

// TestStatusPageWithCredentialsInURL: opened as
// http://admin:PASSWORD@host/status, the page shows its data as the server
// rendered it, and then refreshes live: the snapshot's fetch (which must
// not carry the URL's credentials) succeeds and redraws a tenant's count.
func TestStatusPageWithCredentialsInURL(t *testing.T) {
	step := headless(t)
	a := newAppFrom(t, demoConfig(t))
	admin := httptest.NewServer(a.admin)
	defer admin.Close()
	for range 2 {
		if w := demoGet(t, a.handler, "harbour", "/au/properties.json?limit=2"); w.Code != http.StatusOK {
			t.Fatalf("harbour: status %d", w.Code)
		}
	}
	u, err := url.Parse(admin.URL + "/status")
	if err != nil {
		t.Fatal(err)
	}
	u.User = url.UserPassword("admin", "admin-demo")
	var row string
	step("load the page with credentials in the URL", func(ctx context.Context) error {
		// The server's rendering: there before any script ran.
		err := chromedp.Do(ctx, chromedp.Navigate(u.String()), chromedp.WaitReady(chromedp.CSS(`#tenants tr[data-tenant="harbour"]`)))
		if err != nil {
			return err
		}
		row, err = chromedp.Run(ctx, chromedp.Text(chromedp.CSS(`#tenants tr[data-tenant="harbour"]`)))
		return err
	})
	if !strings.Contains(row, "demo") || !strings.Contains(row, " ms") {
		t.Errorf("harbour's row %q, rendered by the server, does not name its backend or show its latency", row)
	}
	// Chromium drops the credentials from location.href; other browsers
	// keep them, and fetch refuses a URL that carries them. The page's
	// snapshot URL, from such a location, carries none.
	var fromCredentials struct {
		URL     string `json:"url"`
		Refused bool   `json:"refused"`
	}
	step("resolve the snapshot's URL from a location with credentials", func(ctx context.Context) (err error) {
		fromCredentials, err = chromedp.Run(ctx, chromedp.Evaluate[struct {
			URL     string `json:"url"`
			Refused bool   `json:"refused"`
		}](`(() => {
			const base = location.href.replace("http://", "http://admin:admin-demo@");
			let refused = false;
			try { new Request(base); } catch (e) { refused = true; }
			return {url: snapshotURL(base), refused};
		})()`))
		return err
	})
	if !fromCredentials.Refused {
		t.Log("this browser's fetch takes a URL with credentials")
	}
	if fromCredentials.URL != admin.URL+"/status.json" {
		t.Errorf("the snapshot's URL from a location with credentials is %q, want %q", fromCredentials.URL, admin.URL+"/status.json")
	}
	step("refresh live", func(ctx context.Context) error {
		return pollJS(ctx, `document.getElementById("status").textContent.startsWith("updated")`)
	})
	if w := demoGet(t, a.handler, "harbour", "/au/properties.json?limit=3"); w.Code != http.StatusOK {
		t.Fatalf("harbour: status %d", w.Code)
	}
	step("redraw the tenant's requests", func(ctx context.Context) error {
		// Cell 4 is the request count: 3 requests now, drawn by the script.
		return pollJS(ctx, `document.querySelector('#tenants tr[data-tenant="harbour"] td:nth-child(4)').textContent === "3" && document.getElementById("status").textContent.startsWith("updated")`)
	})
}

// startOwnRedis starts a redis-server of this test on a free port, or
// skips; the test kills it by its process (cmd.Process.Kill).
func startOwnRedis(t *testing.T) (*exec.Cmd, string) {
	t.Helper()
	path, err := exec.LookPath("redis-server")
	if err != nil {
		t.Skip("redis-server is not installed: the Redis-killed status page test needs its own server")
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := l.Addr().(*net.TCPAddr).Port
	l.Close()
	cmd := exec.Command(path, "--port", strconv.Itoa(port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
	})
	addr := fmt.Sprintf("127.0.0.1:%d", port)
	c := redis.NewClient(&redis.Options{Addr: addr})
	defer c.Close()
	testkit.WaitFor(t, "redis-server to answer", func() bool { return c.Ping(context.Background()).Err() == nil })
	return cmd, addr
}

// TestStatusPageFleetRedisDown: two replicas sharing a Redis each show
// both on their page, with each one's own figures; once Redis is killed,
// the page still loads at once, shows the shared tier's state as not
// synced, this replica still, and why the other is missing.
func TestStatusPageFleetRedisDown(t *testing.T) {
	step := headless(t)
	srv, addr := startOwnRedis(t)
	path := sharedDemoConfig(t, addr)
	a, b := newAppFrom(t, path), newAppFrom(t, path)
	testkit.WaitFor(t, "the replicas to read the fleet's purges", func() bool { return a.shared.Synced() && b.shared.Synced() })
	for range 3 {
		if w := demoGet(t, b.handler, "summit", "/au/properties.json?limit=2"); w.Code != http.StatusOK {
			t.Fatalf("summit on b: status %d", w.Code)
		}
	}
	admin := httptest.NewServer(a.admin)
	defer admin.Close()
	auth := "Basic " + "YWRtaW46YWRtaW4tZGVtbw==" // admin:admin-demo
	step("load a's page", func(ctx context.Context) error {
		return chromedp.Do(ctx,
			sendAuthorization(auth),
			chromedp.Navigate(admin.URL+"/status"),
			chromedp.WaitReady(chromedp.CSS(`#fleet`)),
		)
	})
	// b publishes every 5s, at its start among them; its 3 requests show
	// once it has published after them.
	step("show both replicas, b with its requests", func(ctx context.Context) error {
		return pollJS(ctx, `document.querySelectorAll("#fleet tbody tr").length === 2 &&
			[...document.querySelectorAll("#fleet tbody tr:not(.self) td:nth-child(5)")].some(td => td.textContent === "3") &&
			document.querySelector("#fleet tbody tr.self td:nth-child(5)").textContent === "0" &&
			document.querySelector('#tiers tr[data-tier="shared"] td:nth-child(2)').textContent === "synced"`)
	})

	if err := srv.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	_ = srv.Wait()
	step("show Redis down", func(ctx context.Context) error {
		return pollJS(ctx, `document.getElementById("fleet-error").textContent.startsWith("the other replicas cannot be read") &&
			document.querySelectorAll("#fleet tbody tr").length === 1 &&
			document.querySelector("#fleet tbody tr.self") !== null &&
			document.querySelector('#tiers tr[data-tier="shared"] td:nth-child(2)').textContent !== "synced"`)
	})
	// The page itself still loads, at once, with the same news.
	var took time.Duration
	step("reload with Redis down", func(ctx context.Context) error {
		start := time.Now()
		err := chromedp.Do(ctx, chromedp.Reload(), chromedp.WaitReady(chromedp.CSS(`#fleet-error`)))
		took = time.Since(start)
		if err != nil {
			return err
		}
		msg, err := chromedp.Run(ctx, chromedp.Text(chromedp.CSS(`#fleet-error`)))
		if err == nil && !strings.HasPrefix(msg, "the other replicas cannot be read") {
			err = fmt.Errorf("fleet error %q after a reload", msg)
		}
		return err
	})
	if took > 20*time.Second {
		t.Errorf("the page took %v to load with Redis down", took)
	}
	// The rows are the server's: the page works without its script.
	w := httptest.NewRecorder()
	r := httptest.NewRequest("GET", "/status", nil)
	r.SetBasicAuth("admin", "admin-demo")
	a.admin.ServeHTTP(w, r)
	if body := w.Body.String(); w.Code != http.StatusOK || !strings.Contains(body, `class="self"`) || !strings.Contains(body, "the other replicas cannot be read") {
		t.Errorf("GET /status with Redis down: %d\n%s", w.Code, body)
	}
}
