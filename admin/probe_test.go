package admin_test

import (
	"context"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"listingproxy/admin"
)

func TestProbe(t *testing.T) {
	var unhealthy atomic.Bool
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/healthz" {
			http.NotFound(w, r)
			return
		}
		if unhealthy.Load() {
			w.WriteHeader(http.StatusServiceUnavailable)
		}
		io.WriteString(w, "ok\n")
	}))
	defer srv.Close()
	_, port, _ := net.SplitHostPort(srv.Listener.Addr().String())

	// An unspecified host is asked on loopback.
	got, err := admin.Probe(context.Background(), ":"+port, time.Minute)
	if want := "http://127.0.0.1:" + port + "/healthz: ok"; err != nil || got != want {
		t.Errorf("Probe = %q, %v; want %q", got, err, want)
	}
	unhealthy.Store(true)
	if _, err := admin.Probe(context.Background(), "0.0.0.0:"+port, time.Minute); err == nil || !strings.Contains(err.Error(), "503 Service Unavailable: ok") {
		t.Errorf("Probe of a 503: err = %v, want the status and body", err)
	}
	if _, err := admin.Probe(context.Background(), "no-port", time.Minute); err == nil || !strings.Contains(err.Error(), `admin address "no-port"`) {
		t.Errorf("Probe of a bad address: err = %v, want it named", err)
	}
}
