package crm

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"listingproxy/normalize"
	"listingproxy/upstream"
	"listingproxy/upstream/breaker"
)

// serveFile answers every request with one testdata file.
func serveFile(t *testing.T, name string) func(w http.ResponseWriter, r *http.Request, user string) {
	b, err := os.ReadFile(filepath.Join("testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	return func(w http.ResponseWriter, r *http.Request, user string) {
		w.Header().Set("Content-Type", "application/xml")
		w.Write(b)
	}
}

// settleGoroutines waits, for a bounded time, until no more goroutines run
// than before, and reports the stacks if some remain.
func settleGoroutines(t *testing.T, before int) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for runtime.NumGoroutine() > before {
		if time.Now().After(deadline) {
			buf := make([]byte, 1<<20)
			t.Errorf("goroutines: %d before, %d after:\n%s", before, runtime.NumGoroutine(), buf[:runtime.Stack(buf, true)])
			return
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func TestFailures(t *testing.T) {
	doc17, err := os.ReadFile(filepath.Join("testdata", "property_17.xml"))
	if err != nil {
		t.Fatal(err)
	}
	const html = "<!DOCTYPE html>\n<html><head><title>Error</title></head><body><h1>Service unavailable</h1></body></html>\n"
	type handler = func(w http.ResponseWriter, r *http.Request, user string)
	status := func(code int, ctype, body string) handler {
		return func(w http.ResponseWriter, r *http.Request, user string) {
			if ctype != "" {
				w.Header().Set("Content-Type", ctype)
			}
			w.WriteHeader(code)
			fmt.Fprint(w, body)
		}
	}
	tests := []struct {
		name    string
		handle  handler
		opts    Options
		call    string // "get" (GetProperty 17) or "list" (short property list)
		want    error
		wantMsg string
	}{
		{name: "truncated XML", handle: status(200, "application/xml", string(doc17[:len(doc17)/2])), call: "get", want: errMalformed},
		{name: "empty body", handle: status(200, "application/xml", ""), call: "get", want: errMalformed},
		{name: "not XML at all", handle: status(200, "application/xml", "Fatal error: out of memory"), call: "get", want: errMalformed},
		{
			// Refused once 16 MiB are decoded: the Timeout leaves room for
			// the race detector's slow decoding.
			name: "50 MB body", call: "list", want: errTooLarge, opts: Options{Timeout: 2 * time.Minute},
			handle: func(w http.ResponseWriter, r *http.Request, user string) {
				w.Header().Set("Content-Type", "application/xml")
				fmt.Fprint(w, `<?xml version="1.0"?><properties count="1"><property id="1"><description>`)
				chunk := []byte(strings.Repeat("x", 64<<10))
				for written := 0; written < 50<<20; written += len(chunk) {
					if _, err := w.Write(chunk); err != nil {
						return // the client gave up
					}
				}
				fmt.Fprint(w, `</description></property></properties>`)
			},
		},
		{name: "over MaxBodyBytes", handle: status(200, "application/xml", string(doc17)), opts: Options{MaxBodyBytes: 1024}, call: "get", want: errTooLarge, wantMsg: "body exceeds the size limit of 1024 bytes"},
		{name: "wrong content type", handle: status(200, "application/json", `{"property":{}}`), call: "get", want: errContentType, wantMsg: `unexpected content type "application/json"`},
		{name: "HTML error page with 200", handle: status(200, "text/html; charset=utf-8", html), call: "list", want: errContentType},
		{name: "HTML error page with 500", handle: status(500, "text/html", html), call: "list", want: errStatus, wantMsg: "crm: list properties au: upstream status 500"},
		{name: "HTML served as XML", handle: status(200, "application/xml", "<html><body>Oops</body></html>"), call: "get", want: errRoot, wantMsg: "unexpected root element <html>, want <property>"},
		{name: "wrong root", handle: serveFile(t, "agent_6.xml"), call: "get", want: errRoot},
		{name: "502", handle: status(502, "", "bad gateway"), call: "get", want: errStatus, wantMsg: "crm: get property au 17: upstream status 502"},
		{name: "404 page", handle: status(404, "text/plain", "404 page not found"), call: "get", want: errStatus},
		{name: "403", handle: status(403, "application/xml", "<error>Forbidden</error>"), call: "list", want: errCredentials},
		{name: "single error on a list", handle: status(200, "application/xml", "<error>Service unavailable</error>"), call: "list", want: errUpstream, wantMsg: "upstream error: Service unavailable"},
		{name: "error list on a single", handle: serveFile(t, "errors_1.xml"), call: "get", want: errUpstream},
		{name: "single record without an id", handle: status(200, "application/xml", `<property id="seventeen"/>`), call: "get", want: errMalformed, wantMsg: `malformed XML: property id "seventeen"`},
		{name: "HTML page as text/html", handle: status(200, "text/html", "<html><body>Oops</body></html>"), call: "get", want: errRoot, wantMsg: `unexpected content type "text/html": unexpected root element <html>`},
		{
			name: "headers never come", call: "get", opts: Options{Timeout: 300 * time.Millisecond}, want: errTimeout,
			handle: func(w http.ResponseWriter, r *http.Request, user string) { <-r.Context().Done() },
		},
		{
			name: "slow drip", call: "get", opts: Options{Timeout: 300 * time.Millisecond}, want: errTimeout,
			handle: func(w http.ResponseWriter, r *http.Request, user string) {
				w.Header().Set("Content-Type", "application/xml")
				for _, b := range doc17 {
					if _, err := w.Write([]byte{b}); err != nil {
						return
					}
					w.(http.Flusher).Flush()
					select {
					case <-time.After(100 * time.Millisecond):
					case <-r.Context().Done():
						return
					}
				}
			},
		},
	}
	before := runtime.NumGoroutine()
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			f := newFakeCRM(t, tc.handle)
			c := newTestClient(t, f, tc.opts)
			var err error
			if tc.call == "list" {
				_, err = c.listProperties(t.Context(), harbourAU, nil, normalize.Short, "k")
			} else {
				_, err = c.GetProperty(t.Context(), harbourAU, 17)
			}
			checkFailure(t, err, tc.want, tc.wantMsg)
		})
	}
	t.Run("connection refused", func(t *testing.T) {
		srv := httptest.NewServer(http.NotFoundHandler())
		base := srv.URL
		srv.Close()
		c, err := New(Options{BaseURL: base, Credentials: map[string]Credential{"harbour": {Username: "u"}}})
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		_, err = c.GetAgent(t.Context(), harbourAU, 5)
		checkFailure(t, err, errRequest, "crm: get agent au 5: upstream request: ")
	})
	settleGoroutines(t, before)
}

func checkFailure(t *testing.T, err, want error, wantMsg string) {
	t.Helper()
	switch {
	case err == nil:
		t.Fatalf("err = nil, want a failure")
	case want != nil && !errors.Is(err, want):
		t.Errorf("err = %v, want %v", err, want)
	case errors.Is(err, upstream.ErrNotFound), errors.Is(err, context.DeadlineExceeded), errors.Is(err, context.Canceled):
		t.Errorf("err = %v: a failure must not read as not found or as the caller's cancellation", err)
	case errors.As(err, new(*upstream.CriteriaError)):
		t.Errorf("err = %v: a failure must not read as a criteria error", err)
	case !strings.HasPrefix(err.Error(), "crm: "):
		t.Errorf("err = %q: want the operation as prefix", err)
	case wantMsg != "" && !strings.Contains(err.Error(), wantMsg):
		t.Errorf("err = %q, want it to contain %q", err, wantMsg)
	}
}

func TestCancellation(t *testing.T) {
	before := runtime.NumGoroutine()
	// blockedOn returns a handler that reports on started, then blocks until
	// the request is done.
	blockedOn := func(started chan struct{}) func(w http.ResponseWriter, r *http.Request, user string) {
		return func(w http.ResponseWriter, r *http.Request, user string) {
			started <- struct{}{}
			<-r.Context().Done()
		}
	}

	t.Run("already cancelled", func(t *testing.T) {
		started := make(chan struct{}, 64)
		f := newFakeCRM(t, blockedOn(started))
		c := newTestClient(t, f, Options{})
		ctx, cancel := context.WithCancel(t.Context())
		cancel()
		_, err := c.GetProperty(ctx, harbourAU, 17)
		if !errors.Is(err, context.Canceled) || !strings.HasPrefix(err.Error(), "crm: get property au 17: ") {
			t.Errorf("err = %v, want context.Canceled wrapped", err)
		}
		if f.total() != 0 {
			t.Errorf("the CRM was called")
		}
	})
	t.Run("during the call", func(t *testing.T) {
		started := make(chan struct{}, 64)
		f := newFakeCRM(t, blockedOn(started))
		c := newTestClient(t, f, Options{})
		ctx, cancel := context.WithCancel(t.Context())
		go func() { <-started; cancel() }()
		_, err := c.listAgents(ctx, harbourAU, nil, normalize.Short)
		if !errors.Is(err, context.Canceled) {
			t.Errorf("err = %v, want context.Canceled", err)
		}
	})
	t.Run("caller deadline", func(t *testing.T) {
		started := make(chan struct{}, 64)
		f := newFakeCRM(t, blockedOn(started))
		c := newTestClient(t, f, Options{})
		ctx, cancel := context.WithTimeout(t.Context(), 100*time.Millisecond)
		defer cancel()
		_, err := c.GetAgent(ctx, harbourAU, 5)
		if !errors.Is(err, context.DeadlineExceeded) {
			t.Errorf("err = %v, want the caller's context.DeadlineExceeded", err)
		}
	})
	t.Run("waiting for a slot", func(t *testing.T) {
		started := make(chan struct{}, 64)
		f := newFakeCRM(t, blockedOn(started))
		c := newTestClient(t, f, Options{MaxConcurrency: 1})
		first, cancelFirst := context.WithCancel(t.Context())
		done := make(chan error, 1)
		go func() { _, err := c.GetProperty(first, harbourAU, 17); done <- err }()
		<-started // the only slot is taken
		ctx, cancel := context.WithCancel(t.Context())
		go func() { time.Sleep(50 * time.Millisecond); cancel() }()
		_, err := c.GetProperty(ctx, harbourAU, 18)
		if !errors.Is(err, context.Canceled) {
			t.Errorf("err = %v, want context.Canceled while waiting for a slot", err)
		}
		if n := f.count("/au/properties/18.xml"); n != 0 {
			t.Errorf("second call reached the CRM %d times with the slot taken", n)
		}
		cancelFirst()
		<-done
	})
	t.Run("during hydration", func(t *testing.T) {
		started := make(chan struct{}, 64)
		g := newGenerated(1, 2, 3, 4)
		f := newFakeCRM(t, func(w http.ResponseWriter, r *http.Request, user string) {
			if strings.HasPrefix(r.URL.Path, "/au/properties/") {
				blockedOn(started)(w, r, user)
				return
			}
			g.serve(w, r, user)
		})
		// Shared document fetches are detached from the caller and end at Timeout.
		c := newTestClient(t, f, Options{Hydrate: HydrateAlways, Timeout: 500 * time.Millisecond})
		ctx, cancel := context.WithCancel(t.Context())
		go func() { <-started; cancel() }()
		_, err := c.listProperties(ctx, harbourAU, nil, normalize.Full, "k")
		if !errors.Is(err, context.Canceled) || !strings.HasPrefix(err.Error(), "crm: list properties au: ") {
			t.Errorf("err = %v, want context.Canceled wrapped", err)
		}
	})
	settleGoroutines(t, before)
}

// panickyBody is a response body whose Read panics: a panic in the middle
// of reading an answer, as a bug of the readers would.
type panickyBody struct{ n *atomic.Int64 }

func (b panickyBody) Read([]byte) (int, error) { b.n.Add(1); panic("reader bug") }
func (panickyBody) Close() error               { return nil }

// panickyTransport answers a short property list of one record, and
// every other request with a panickyBody; panics counts the panics.
type panickyTransport struct{ panics *atomic.Int64 }

func (p panickyTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	var body io.ReadCloser = panickyBody{p.panics}
	if r.URL.Path == "/au/properties.xml" && r.URL.Query().Get("detail") == "short" {
		body = io.NopCloser(strings.NewReader(`<properties count="1"><property id="17" last_updated="Fri Nov 20 09:30:00 +1100 2026"/></properties>`))
	}
	return &http.Response{StatusCode: http.StatusOK, Header: http.Header{"Content-Type": {"application/xml"}},
		Body: body, ContentLength: -1, Request: r}, nil
}

// TestDecodePanicIsOurBug: a panic while an answer is read is recovered in
// the adapter, for every operation and for hydration's fetches (on
// goroutines of their own): the call fails with upstream.ErrInternal, the
// panic is logged with its stack and counted, and a breaker that opens on
// one failure stays closed, since the CRM did answer.
func TestDecodePanicIsOurBug(t *testing.T) {
	var (
		logs   bytes.Buffer
		panics atomic.Int64
	)
	c, err := New(Options{BaseURL: "http://crm.invalid", Credentials: map[string]Credential{"harbour": {Username: "u", Password: "p"}},
		HTTPClient: &http.Client{Transport: panickyTransport{&panics}}, Hydrate: HydrateAlways,
		Logger: slog.New(slog.NewTextHandler(&logs, nil))})
	if err != nil {
		t.Fatal(err)
	}
	reg := breaker.NewRegistry(breaker.Options{Settings: breaker.Settings{ConsecutiveFailures: 1}})
	b := reg.Wrap(c, breaker.Backend{Name: "crm"})
	full, errs := normalize.ParseProperties(url.Values{"detail": {"full"}}, normalize.Options{})
	if errs != nil {
		t.Fatal(errs)
	}
	calls := []struct {
		name string
		call func() error
	}{
		{"GetProperty", func() error { _, err := b.GetProperty(t.Context(), harbourAU, 17); return err }},
		{"ListProperties", func() error { _, err := b.ListProperties(t.Context(), harbourAU, full); return err }},
		{"GetAgent", func() error { _, err := b.GetAgent(t.Context(), harbourAU, 5); return err }},
		{"ListAgents", func() error { _, err := b.ListAgents(t.Context(), harbourAU, normalize.Criteria{}); return err }},
	}
	for _, tc := range calls {
		before := panics.Load()
		err := tc.call()
		if !errors.Is(err, upstream.ErrInternal) || !strings.Contains(err.Error(), "reader bug") {
			t.Errorf("%s: %v, want upstream.ErrInternal with the panic", tc.name, err)
		}
		// ListProperties is hydrated: its one document's fetch panics
		// on a goroutine of its own (a single flight's).
		if got, want := c.Stats().Panics, panics.Load(); got != want || want != before+1 {
			t.Errorf("after %s: Stats.Panics = %d, answers read %d, want %d", tc.name, got, want, before+1)
		}
	}
	for _, s := range reg.States() {
		if s.State.String() != "closed" {
			t.Errorf("breaker %s/%s is %s: a panic of ours counted against the CRM", s.Backend, s.Tenant, s.State)
		}
	}
	for _, want := range []string{"level=ERROR", "a bug of listingproxy", "panic=\"reader bug\"", "decodeSafely"} {
		if !strings.Contains(logs.String(), want) {
			t.Errorf("log lacks %q (the panic with its stack):\n%s", want, logs.String())
		}
	}
}
