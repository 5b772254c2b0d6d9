package serving_test

import (
	"context"
	"io"
	"log/slog"
	"net"
	"net/http"
	"testing"
	"time"

	"listingproxy/internal/serving"
	"listingproxy/internal/testkit"
)

// TestShutdownDrainsInFlight starts a slow request, shuts down without a
// drain delay, and checks that new connections are refused while the slow
// request still completes.
func TestShutdownDrainsInFlight(t *testing.T) {
	entered, release := make(chan struct{}), make(chan struct{})
	slow := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		close(entered)
		<-release
		io.WriteString(w, "finished")
	})
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		srv := &http.Server{Handler: slow}
		done <- serving.Run(ctx, []serving.Server{{HTTP: srv, Listener: ln}}, serving.Shutdown{Grace: time.Minute}, nil, nil, slog.New(slog.DiscardHandler))
	}()

	type result struct {
		body string
		err  error
	}
	inflight := make(chan result, 1)
	go func() {
		resp, err := (&http.Client{Transport: &http.Transport{}}).Get("http://" + addr + "/slow")
		if err != nil {
			inflight <- result{err: err}
			return
		}
		b, err := io.ReadAll(resp.Body)
		resp.Body.Close()
		inflight <- result{string(b), err}
	}()
	<-entered
	cancel() // as SIGTERM does

	// The listener closes at once: new connections are refused.
	testkit.WaitFor(t, "the listener to refuse new connections", func() bool {
		c, err := net.Dial("tcp", addr)
		if err != nil {
			return true
		}
		c.Close()
		return false
	})
	select {
	case err := <-done:
		t.Fatalf("Run returned %v while a request was in flight", err)
	default:
	}
	close(release)
	if r := <-inflight; r.err != nil || r.body != "finished" {
		t.Errorf("in-flight request: body %q, err %v; want it to finish", r.body, r.err)
	}
	if err := <-done; err != nil {
		t.Errorf("Run = %v, want nil after a clean shutdown", err)
	}
}
