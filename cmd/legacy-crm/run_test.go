package main

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"listingproxy/internal/testkit"
)

// syncBuffer is a bytes.Buffer safe for a writer and a poller.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// TestRun starts the command as main does, on a free port and a fresh
// database, makes an authenticated request and reads /stats, then stops it.
func TestRun(t *testing.T) {
	dsn := "file:" + filepath.ToSlash(filepath.Join(t.TempDir(), "crm.db"))
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var stdout, stderr syncBuffer
	done := make(chan error, 1)
	go func() {
		done <- run(ctx, []string{"legacy-crm", "-listen", "127.0.0.1:0", "-db", dsn, "-latency", "1ms",
			"-user", "summit:s3cret:summit:full,prices"}, func(string) string { return "" }, &stdout, &stderr)
	}()

	addr := regexp.MustCompile(`listening on (http://\S+) \(users: summit; faults: latency 1ms`)
	var base string
	// The stand-in seeds its SQLite demo before it listens: seconds under
	// -race on a loaded machine. Wait for the line (or for run to fail),
	// with testkit.WaitFor's watchdog rather than a deadline of our own.
	testkit.WaitFor(t, "the stand-in's listening line", func() bool {
		select {
		case err := <-done:
			t.Fatalf("run returned early: %v\nstderr: %s", err, stderr.String())
		default:
		}
		if m := addr.FindStringSubmatch(stdout.String()); m != nil {
			base = m[1]
		}
		return base != ""
	})

	get := func(path, user, pass string) (int, string) {
		req, _ := http.NewRequest("GET", base+path, nil)
		if user != "" {
			req.SetBasicAuth(user, pass)
		}
		resp, err := (&http.Client{Timeout: 10 * time.Second}).Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	if code, body := get("/au/properties.xml?limit=1", "summit", "s3cret"); code != 200 || !strings.Contains(body, `<properties count="1">`) {
		t.Errorf("authenticated list: %d %s", code, body)
	}
	if code, _ := get("/au/properties.xml?limit=1", "summit", "wrong"); code != http.StatusUnauthorized {
		t.Errorf("wrong password: status %d, want 401", code)
	}
	if code, body := get("/stats", "", ""); code != 200 || !strings.Contains(body, `"requests": 2`) || !strings.Contains(body, `"401": 1`) {
		t.Errorf("/stats: %d %s", code, body)
	}

	cancel()
	select {
	case err := <-done:
		if err != nil {
			t.Errorf("run: %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("run did not return after cancel")
	}
}

func TestRunFlagErrors(t *testing.T) {
	for _, args := range [][]string{
		{"-outage", "30s"},
		{"-error-rate", "2"},
		{"-user", "nope"},
		{"extra"},
	} {
		err := run(context.Background(), append([]string{"legacy-crm"}, args...), func(string) string { return "" }, io.Discard, io.Discard)
		if err == nil {
			t.Errorf("run %v: want an error", args)
		}
	}
}
