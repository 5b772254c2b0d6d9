package main

import (
	"bufio"
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"listingproxy/internal/testkit"
)

// demoConfig is the shipped config.yaml pointed at a temporary database and
// ephemeral ports.
func demoConfig(t testing.TB) string {
	t.Helper()
	src, err := os.ReadFile("../../config.yaml")
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	s := string(src)
	s = strings.Replace(s, `listen: "127.0.0.1:8080"`, `listen: "127.0.0.1:0"`, 1)
	s = strings.Replace(s, `admin_listen: "127.0.0.1:8081"`, `admin_listen: "127.0.0.1:0"`, 1)
	s = strings.Replace(s, `dsn: "file:listingproxy-demo.db"`, `dsn: "file:`+filepath.ToSlash(filepath.Join(dir, "demo.db"))+`"`, 1)
	path := filepath.Join(dir, "config.yaml")
	if err := os.WriteFile(path, []byte(s), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

var listenLine = regexp.MustCompile(`listening on (https?://\S+) \(admin: (http://\S+),`)

// TestRunServesTheDemo starts the real service with run, waits for
// /healthz, makes an authenticated request, and shuts it down (startServing
// checks that run then returns nil); server.drain_delay 0s stops it without
// a drain.
func TestRunServesTheDemo(t *testing.T) {
	path := demoConfig(t)
	src, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	noDrain := strings.Replace(string(src), "  drain_delay: 5s", "  drain_delay: 0s", 1)
	if noDrain == string(src) {
		t.Fatal("config.yaml has no drain_delay: 5s line")
	}
	if err := os.WriteFile(path, []byte(noDrain), 0o600); err != nil {
		t.Fatal(err)
	}
	base, admin, _ := startServing(t, path, func(ctx context.Context, args []string, stdout io.Writer) error {
		return run(ctx, args, func(string) string { return "" }, strings.NewReader(""), stdout, io.Discard)
	})
	client := &http.Client{Timeout: 10 * time.Second}
	testkit.WaitFor(t, "/healthz to answer 200", func() bool {
		resp, err := client.Get(admin + "/healthz")
		if err != nil {
			return false
		}
		resp.Body.Close()
		return resp.StatusCode == http.StatusOK
	})

	req, _ := http.NewRequest("GET", base+"/au/properties.json?limit=2&status=current", nil)
	req.SetBasicAuth("harbour", "harbour-demo")
	resp, err := client.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 || !strings.HasPrefix(string(body), `{"properties":{"count":"2","property":[`) {
		t.Fatalf("status %d body %s", resp.StatusCode, body)
	}
	if ct := resp.Header.Get("Content-Type"); ct != "application/json; charset=utf-8" {
		t.Errorf("Content-Type = %q", ct)
	}
}

func TestRunRejectsBadConfig(t *testing.T) {
	path := filepath.Join(t.TempDir(), "bad.yaml")
	if err := os.WriteFile(path, []byte("listen: nope\nbackends: {x: {kind: oracle}}\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	err := run(context.Background(), []string{"listingproxy", "-config", path}, func(string) string { return "" }, nil, io.Discard, io.Discard)
	if err == nil {
		t.Fatal("want an error")
	}
	for _, want := range []string{"bad.yaml:1: listen: invalid listen address", `bad.yaml:2: backends.x.kind: unknown kind "oracle"`, "tenants: at least one tenant is required"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q\nwant it to contain %q", err, want)
		}
	}
}

func TestHashPassword(t *testing.T) {
	var out strings.Builder
	if err := run(context.Background(), []string{"listingproxy", "hash-password", "-cost", "4"}, nil, strings.NewReader("s3cret\n"), &out, io.Discard); err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(out.String(), "$2a$04$") {
		t.Errorf("hash = %q, want a bcrypt hash of cost 4", out.String())
	}
	if err := run(context.Background(), []string{"listingproxy", "hash-password"}, nil, strings.NewReader(""), io.Discard, io.Discard); err == nil {
		t.Error("empty password: want an error")
	}
}

// closedByServer reports whether the server closed conn: a read ends with
// EOF or a reset rather than the short deadline set here.
func closedByServer(t *testing.T, conn net.Conn) bool {
	t.Helper()
	_ = conn.SetReadDeadline(time.Now().Add(2 * time.Second))
	_, err := io.ReadAll(conn)
	if err == nil || errors.Is(err, io.EOF) {
		return true
	}
	var ne net.Error
	return !(errors.As(err, &ne) && ne.Timeout())
}

func dial(t *testing.T, addr string) net.Conn {
	t.Helper()
	conn, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = conn.Close() })
	return conn
}

// TestRunClosesSlowHeaders: run's public listener closes a connection whose
// headers never finish once read_header_timeout has passed, never before,
// and still serves a well-behaved client. net/http's deadline starts when
// it begins reading the connection, after the dial began, so the time is
// measured from before the dial: on a loaded machine any delay only
// lengthens what the test measures.
func TestRunClosesSlowHeaders(t *testing.T) {
	cfgPath := demoConfig(t)
	raw, err := os.ReadFile(cfgPath)
	if err != nil {
		t.Fatal(err)
	}
	edited := strings.Replace(string(raw), "read_header_timeout: 5s", "read_header_timeout: 200ms", 1)
	if edited == string(raw) {
		t.Fatal("demo config has no read_header_timeout: 5s to edit")
	}
	if err := os.WriteFile(cfgPath, []byte(edited), 0o600); err != nil {
		t.Fatal(err)
	}
	base, _ := startRun(t, cfgPath)
	addr := strings.TrimPrefix(base, "http://")
	start := time.Now()
	conn := dial(t, addr)
	_, _ = io.WriteString(conn, "GET /au/properties.xml HTTP/1.1\r\nHo")
	if !closedByServer(t, conn) {
		t.Fatal("run kept a connection whose headers never finished")
	}
	if time.Since(start) < 200*time.Millisecond {
		t.Error("closed before read_header_timeout")
	}
	// A well-behaved client is still served.
	c2 := dial(t, addr)
	roundTrip401(t, c2)
}

func roundTrip401(t *testing.T, conn net.Conn) {
	t.Helper()
	_, _ = io.WriteString(conn, "GET /au/properties.xml HTTP/1.1\r\nHost: x\r\n\r\n")
	resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
	if err != nil {
		t.Fatal(err)
	}
	_ = resp.Body.Close()
	if resp.StatusCode != http.StatusUnauthorized {
		t.Errorf("status %d, want 401 (no credentials)", resp.StatusCode)
	}
}

// startRun runs the service on cfgPath until the test ends (then it must
// shut down cleanly: serve returns nil) and returns its public and admin
// base URLs, once it prints where it listens. Its drain delay ends at once
// (drainAtOnce).
func startRun(t *testing.T, cfgPath string) (base, admin string) {
	t.Helper()
	base, admin, _ = startServing(t, cfgPath, func(ctx context.Context, args []string, stdout io.Writer) error {
		return serveWith(ctx, args, func(string) string { return "" }, stdout, io.Discard, drainAtOnce)
	})
	return base, admin
}

// drainAtOnce is serveWith's drain timer for tests that only stop the
// service at their end: the drain (server.drain_delay, 5s by default)
// ends at once instead of holding each test for it.
// TestRunDrainsBeforeShutdown holds the timer and looks at the drain.
func drainAtOnce(time.Duration) <-chan time.Time {
	c := make(chan time.Time, 1)
	c <- time.Time{}
	return c
}

// startServing starts serve (through run or serveWith) on cfgPath, as
// startRun does, and also returns the function that stops it (as SIGTERM
// does) without waiting; the test's end waits for a clean return.
func startServing(t *testing.T, cfgPath string, serve func(ctx context.Context, args []string, stdout io.Writer) error) (base, admin string, stop func()) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	pr, pw := io.Pipe()
	done := make(chan error, 1)
	go func() {
		done <- serve(ctx, []string{"listingproxy", "-config", cfgPath}, pw)
		pw.Close()
	}()
	t.Cleanup(func() {
		cancel()
		select {
		case err := <-done:
			if err != nil {
				t.Errorf("run returned %v after shutdown, want nil", err)
			}
		case <-time.After(30 * time.Second):
			t.Error("run did not return after its context was cancelled")
		}
	})
	lines := bufio.NewScanner(pr)
	for lines.Scan() {
		if m := listenLine.FindStringSubmatch(lines.Text()); m != nil {
			base, admin = m[1], m[2]
			break
		}
	}
	go func() { _, _ = io.Copy(io.Discard, pr) }()
	if base == "" {
		t.Fatal("run never printed where it listens")
	}
	return base, admin, cancel
}

// TestRunDrainsBeforeShutdown: once run's context ends (as on SIGTERM),
// /readyz answers 503 at once, responses carry Connection: close (and the
// connection closes after them), and new connections are still accepted and
// served until the drain delay's timer fires; then the listener closes. The
// timer is the test's channel, so nothing here waits on the clock.
func TestRunDrainsBeforeShutdown(t *testing.T) {
	delays := make(chan time.Duration, 1)
	fire := make(chan time.Time)
	after := func(d time.Duration) <-chan time.Time { delays <- d; return fire }
	base, admin, stop := startServing(t, demoConfig(t), func(ctx context.Context, args []string, stdout io.Writer) error {
		return serveWith(ctx, args, func(string) string { return "" }, stdout, io.Discard, after)
	})
	addr := strings.TrimPrefix(base, "http://")
	adminClient := &http.Client{Transport: &http.Transport{}, Timeout: 10 * time.Second}
	readyz := func() int {
		resp, err := adminClient.Get(admin + "/readyz")
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	if got := readyz(); got != 200 {
		t.Fatalf("/readyz before the drain: %d, want 200", got)
	}
	kept := dial(t, addr)
	keptR := bufio.NewReader(kept)
	// (ReadResponse turns a Connection: close header into resp.Close.)
	if resp := rawGet(t, kept, keptR); resp.Close {
		t.Fatal("before the drain: Connection: close, want a kept-alive connection")
	}

	stop()
	if d := <-delays; d != 5*time.Second {
		t.Errorf("drain delay %v, want the default 5s", d)
	}
	if got := readyz(); got != http.StatusServiceUnavailable {
		t.Errorf("/readyz while draining: %d, want 503", got)
	}
	if resp := rawGet(t, kept, keptR); !resp.Close {
		t.Error("kept-alive connection while draining: no Connection: close")
	}
	if !closedByServer(t, kept) {
		t.Error("the server kept the connection open after a Connection: close response")
	}
	fresh := dial(t, addr) // new connections are still accepted and served
	if resp := rawGet(t, fresh, bufio.NewReader(fresh)); !resp.Close {
		t.Error("new connection while draining: no Connection: close")
	}

	close(fire)
	testkit.WaitFor(t, "the listener closes after the drain delay", func() bool {
		c, err := net.Dial("tcp", addr)
		if err != nil {
			return true
		}
		c.Close()
		return false
	})
}

// rawGet sends one authenticated keep-alive GET on conn and reads its
// response, which must be a 200.
func rawGet(t *testing.T, conn net.Conn, br *bufio.Reader) *http.Response {
	t.Helper()
	req, _ := http.NewRequest("GET", "http://x/au/properties.json?limit=1", nil)
	req.SetBasicAuth("harbour", "harbour-demo")
	if err := req.Write(conn); err != nil {
		t.Fatal(err)
	}
	resp, err := http.ReadResponse(br, req)
	if err != nil {
		t.Fatal(err)
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	_ = resp.Body.Close()
	if resp.StatusCode != 200 {
		t.Fatalf("status %d, want 200", resp.StatusCode)
	}
	return resp
}

// TestHandOverWithReusePort: with server.reuse_port, a new process binds
// the public and admin addresses while the old one is still draining on
// them (no "address already in use"), both are served meanwhile, and once
// the old one has stopped every request goes to the new one.
func TestHandOverWithReusePort(t *testing.T) {
	port := func() string {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		defer l.Close()
		return l.Addr().String()
	}
	public, adminAddr := port(), port()
	src, err := os.ReadFile(demoConfig(t))
	if err != nil {
		t.Fatal(err)
	}
	s := strings.Replace(string(src), `listen: "127.0.0.1:0"`, `listen: "`+public+`"`, 1)
	s = strings.Replace(s, `admin_listen: "127.0.0.1:0"`, `admin_listen: "`+adminAddr+`"`, 1)
	s = strings.Replace(s, "\nserver:\n", "\nserver:\n  reuse_port: true\n", 1)
	cfg := filepath.Join(t.TempDir(), "config.yaml")
	if err := os.WriteFile(cfg, []byte(s), 0o600); err != nil {
		t.Fatal(err)
	}

	// The old process: its drain is held until the test fires it.
	fire := make(chan time.Time)
	draining := make(chan struct{})
	oldCtx, stopOld := context.WithCancel(context.Background())
	oldDone := make(chan error, 1)
	pr, pw := io.Pipe()
	go func() {
		oldDone <- serveWith(oldCtx, []string{"listingproxy", "-config", cfg}, func(string) string { return "" }, pw, io.Discard,
			func(time.Duration) <-chan time.Time { close(draining); return fire })
		pw.Close()
	}()
	t.Cleanup(func() {
		stopOld()
		select {
		case <-draining:
		default:
			close(draining)
		}
	})
	lines := bufio.NewScanner(pr)
	for lines.Scan() && !listenLine.MatchString(lines.Text()) {
	}
	go func() { _, _ = io.Copy(io.Discard, pr) }()
	get := func() int {
		tr := &http.Transport{DisableKeepAlives: true}
		defer tr.CloseIdleConnections()
		req, _ := http.NewRequest("GET", "http://"+public+"/au/properties.json?limit=1", nil)
		req.SetBasicAuth("harbour", "harbour-demo")
		resp, err := (&http.Client{Transport: tr, Timeout: 30 * time.Second}).Do(req)
		if err != nil {
			t.Fatalf("GET: %v", err)
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	if code := get(); code != 200 {
		t.Fatalf("the old process answered %d, want 200", code)
	}
	stopOld() // as SIGTERM: the drain begins, the listeners stay open
	<-draining

	// The new process binds the same addresses now.
	base, admin, _ := startServing(t, cfg, func(ctx context.Context, args []string, stdout io.Writer) error {
		return serveWith(ctx, args, func(string) string { return "" }, stdout, io.Discard, drainAtOnce)
	})
	if base != "http://"+public || admin != "http://"+adminAddr {
		t.Fatalf("the new process listens on %s (admin %s), want %s (admin %s)", base, admin, public, adminAddr)
	}
	for range 20 { // both processes accept meanwhile; each answers
		if code := get(); code != 200 {
			t.Fatalf("during the hand-over: %d, want 200", code)
		}
	}
	close(fire)
	if err := <-oldDone; err != nil {
		t.Fatalf("the old process returned %v", err)
	}
	for range 20 {
		if code := get(); code != 200 {
			t.Fatalf("after the old process stopped: %d, want 200 from the new one", code)
		}
	}
}

// TestPortClashBeforeBackends: a public or admin address already in use is
// reported before any backend is set up: the demo database is not even
// created, let alone seeded.
func TestPortClashBeforeBackends(t *testing.T) {
	taken, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer taken.Close()
	for _, key := range []string{"listen", "admin_listen"} {
		t.Run(key, func(t *testing.T) {
			src, err := os.ReadFile(demoConfig(t))
			if err != nil {
				t.Fatal(err)
			}
			dir := t.TempDir()
			db := filepath.Join(dir, "never.db")
			s := regexp.MustCompile(`dsn: "file:[^"]*"`).ReplaceAllString(string(src), `dsn: "file:`+filepath.ToSlash(db)+`"`)
			s = strings.Replace(s, key+`: "127.0.0.1:0"`, key+`: "`+taken.Addr().String()+`"`, 1)
			cfg := filepath.Join(dir, "config.yaml")
			if err := os.WriteFile(cfg, []byte(s), 0o600); err != nil {
				t.Fatal(err)
			}
			var stderr strings.Builder
			err = serveWith(context.Background(), []string{"listingproxy", "-config", cfg}, func(string) string { return "" }, io.Discard, &stderr, drainAtOnce)
			if err == nil || !strings.Contains(err.Error(), "address already in use") || !strings.Contains(err.Error(), taken.Addr().String()) {
				t.Fatalf("serve with %s taken: %v, want the address in use", key, err)
			}
			if _, statErr := os.Stat(db); !errors.Is(statErr, os.ErrNotExist) {
				t.Errorf("the demo database exists after a port clash (stat: %v): backends were set up first", statErr)
			}
			if strings.Contains(stderr.String(), "setting up backends") {
				t.Errorf("the log says backends were being set up:\n%s", stderr.String())
			}
		})
	}
}
