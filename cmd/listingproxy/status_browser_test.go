package main

import (
	"context"
	"encoding/base64"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/network"
	"github.com/chromedp/chromedp"

	"listingproxy/config"
)

// chromium returns the path of a Chromium or Chrome binary, or skips the
// test (fails it when LISTINGPROXY_REQUIRE_BROWSER is set: .ci/run sets it
// once it has installed Debian's chromium, so CI never skips silently).
func chromium(t *testing.T) string {
	t.Helper()
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome", "google-chrome-stable", "headless-shell"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	const msg = "no chromium, chromium-browser, google-chrome or headless-shell on PATH (apt-get install -y chromium; .ci/run installs it)"
	if os.Getenv("LISTINGPROXY_REQUIRE_BROWSER") != "" {
		t.Fatal(msg + ", and LISTINGPROXY_REQUIRE_BROWSER is set")
	}
	t.Skip(msg + ": the browser test of the status page is skipped")
	return ""
}

// crmDemoApp wires the shipped demo configuration with tenant summit moved
// to a CRM backend "legacy" served by crm, and breakers that open after
// two failures; extra are more replacements of the configuration's text.
func crmDemoApp(t *testing.T, crm string, extra ...[2]string) *app {
	t.Helper()
	return crmDemoAppAt(t, crm, time.Now, extra...)
}

// crmDemoAppAt is crmDemoApp on the clock now.
func crmDemoAppAt(t *testing.T, crm string, now func() time.Time, extra ...[2]string) *app {
	t.Helper()
	path := demoConfig(t)
	src, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	s := string(src)
	for _, r := range append([][2]string{
		{"  summit:  {backend: demo}", "  summit: {backend: legacy, upstream_username: summit, upstream_password: summit-crm}"},
		{"    seed_demo: true ", fmt.Sprintf("    seed_demo: true\n  legacy: {kind: crm, url: %q, timeout: 5s}\n    #", crm)},
		{"  failures: 5", "  failures: 2"},
	}, extra...) {
		if !strings.Contains(s, r[0]) {
			t.Fatalf("config.yaml has no %q any more: update this test", r[0])
		}
		s = strings.Replace(s, r[0], r[1], 1)
	}
	if err := os.WriteFile(path, []byte(s), 0o600); err != nil {
		t.Fatal(err)
	}
	cfg, err := config.Load(path, func(string) string { return "" })
	if err != nil {
		t.Fatal(err)
	}
	a, err := build(context.Background(), cfg, slog.New(slog.DiscardHandler), now)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(a.Close)
	return a
}

// TestStatusPageInBrowser loads the operator's page in headless Chromium:
// it loads behind the admin credentials, shows a tenant once it has had
// traffic, and shows a backend's breaker opening when the backend fails.
func TestStatusPageInBrowser(t *testing.T) {
	t.Parallel() // its own app, admin server and browser
	chromium(t)  // skip (or fail) before starting anything when there is no browser
	crm := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Error(w, "legacy CRM is down", http.StatusInternalServerError)
	}))
	defer crm.Close()
	a := crmDemoApp(t, crm.URL)
	admin := httptest.NewServer(a.admin)
	defer admin.Close()

	// Without credentials the page is refused.
	resp, err := http.Get(admin.URL + "/status")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusUnauthorized {
		t.Fatalf("GET /status without credentials: %d, want 401", resp.StatusCode)
	}

	bounded := headless(t) // bounded runs one step with a bound of its own, naming it on failure
	text := func(ctx context.Context, sel string) (string, error) {
		return chromedp.Run(ctx, chromedp.Text(chromedp.CSS(sel)))
	}
	auth := "Basic " + base64.StdEncoding.EncodeToString([]byte("admin:admin-demo"))
	bounded("load the page", func(ctx context.Context) error {
		err := chromedp.Do(ctx,
			sendAuthorization(auth),
			chromedp.Navigate(admin.URL+"/status"),
			chromedp.WaitVisible(chromedp.CSS(`#tenants`)),
		)
		if err != nil {
			return err
		}
		_, err = chromedp.Run(ctx, chromedp.Poll[bool](`document.getElementById("status").textContent.startsWith("updated")`,
			chromedp.WithPollingInterval(50*time.Millisecond)))
		return err
	})

	if w := demoGet(t, a.handler, "harbour", "/au/properties.json?limit=2"); w.Code != http.StatusOK {
		t.Fatalf("harbour: status %d", w.Code)
	}
	var harbour string
	bounded("show the tenant after traffic", func(ctx context.Context) (err error) {
		if err := chromedp.Do(ctx, chromedp.WaitVisible(chromedp.CSS(`#tenants tr[data-tenant="harbour"]`))); err != nil {
			return err
		}
		harbour, err = text(ctx, `#tenants tr[data-tenant="harbour"]`)
		return err
	})
	if !strings.Contains(harbour, "demo") {
		t.Errorf("harbour's row %q does not name its backend", harbour)
	}

	for i := range 3 {
		w := demoGet(t, a.handler, "summit", fmt.Sprintf("/au/properties.json?limit=%d", i+1))
		if w.Code != http.StatusServiceUnavailable {
			t.Fatalf("summit with its CRM down: status %d, want 503", w.Code)
		}
	}
	var legacy, lastError string
	bounded("show the breaker open", func(ctx context.Context) (err error) {
		if err := chromedp.Do(ctx, chromedp.WaitVisible(chromedp.CSS(`#backends tr[data-backend="legacy"] td.state-open`))); err != nil {
			return err
		}
		if legacy, err = text(ctx, `#backends tr[data-backend="legacy"]`); err != nil {
			return err
		}
		lastError, err = text(ctx, `#backends tr[data-backend="legacy"] td.err`)
		return err
	})
	if !strings.Contains(legacy, "summit: open") || !strings.Contains(legacy, "after: ") {
		t.Errorf("legacy's row %q does not show summit's breaker open with the failure that opened it", legacy)
	}
	if lastError == "" {
		t.Errorf("legacy's row %q shows no last error", legacy)
	}
}

// sendAuthorization makes the browser send auth as the Authorization
// header of every request from then on.
func sendAuthorization(auth string) chromedp.Action[chromedp.Void] {
	return chromedp.Func(func(ctx context.Context, t *chromedp.Target) error {
		if _, err := cdp.Call(ctx, t, network.Enable, network.EnableParams{}); err != nil {
			return err
		}
		_, err := cdp.Call(ctx, t, network.SetExtraHTTPHeaders, network.SetExtraHTTPHeadersParams{Headers: network.Headers{"Authorization": auth}})
		return err
	})
}
