package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"golang.org/x/crypto/bcrypt"

	"listingproxy/internal/testkit"
)

// TestHostileCRMAnswers runs the service (run, with its real server and
// timeouts) in front of a CRM that answers with documents built to cost
// memory or time. Every client gets a complete 503 with Retry-After and the
// spec's single-error body, never a closed connection, and the access log
// records the 503 it sent.
func TestHostileCRMAnswers(t *testing.T) {
	crmSrv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/xml")
		switch r.URL.Path {
		case "/au/properties.xml": // many tiny unknown elements
			fmt.Fprint(w, `<properties><property id="1">`+strings.Repeat("<x/>", 20_000)+`</property></properties>`)
		case "/au/agents.xml": // absurd nesting
			fmt.Fprint(w, `<agents>`+strings.Repeat("<x>", 1000)+strings.Repeat("</x>", 1000)+`</agents>`)
		case "/au/properties/2.xml": // announced far over max_body_bytes, never sent
			w.Header().Set("Content-Length", "1073741824")
			w.WriteHeader(http.StatusOK)
			w.(http.Flusher).Flush()
			<-r.Context().Done()
		default: // a document that never ends: only cache.fill_timeout stops it
			fmt.Fprint(w, `<property id="1"><description>`)
			for {
				if _, err := w.Write([]byte(strings.Repeat("x", 1024))); err != nil {
					return
				}
				w.(http.Flusher).Flush()
				select {
				case <-r.Context().Done():
					return
				case <-time.After(time.Millisecond):
				}
			}
		}
	}))
	defer crmSrv.Close()
	defer crmSrv.CloseClientConnections()

	hash, err := bcrypt.GenerateFromPassword([]byte("summit-demo"), bcrypt.MinCost)
	if err != nil {
		t.Fatal(err)
	}
	// fill_timeout (1s) is far shorter than the CRM timeout (1m) and than
	// server.write_timeout (30s): only the fill's deadline ends the endless
	// document, and the 503 must reach the client before the write timeout.
	cfg := `listen: "127.0.0.1:0"
admin_listen: "127.0.0.1:0"
countries: [au]
backends:
  legacy: {kind: crm, url: "` + crmSrv.URL + `", timeout: 1m, max_elements: 1000}
tenants:
  summit: {backend: legacy, upstream_username: summit, upstream_password: summit-crm}
users:
  - {username: summit, password_bcrypt: "` + string(hash) + `", tenant: summit, permissions: [full, prices]}
cache: {fill_timeout: 1s}
log: {level: info, format: json}
`
	dir := t.TempDir()
	path := filepath.Join(dir, "config.yaml")
	if err := os.WriteFile(path, []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	var stdout, stderr syncBuffer
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		done <- serveWith(ctx, []string{"listingproxy", "-config", path}, func(string) string { return "" }, &stdout, &stderr, drainAtOnce)
	}()
	defer func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("run: %v", err)
		}
	}()
	var base string
	testkit.WaitFor(t, "run prints where it listens", func() bool {
		m := listenLine.FindStringSubmatch(stdout.String())
		if m != nil {
			base = m[1]
		}
		return m != nil
	})

	client := &http.Client{Transport: &http.Transport{}}
	paths := []string{
		"/au/properties.xml?limit=10",
		"/au/agents.json",
		"/au/properties/2.xml",
		"/au/properties/3.json",
	}
	for _, p := range paths {
		t.Run(p, func(t *testing.T) {
			req, _ := http.NewRequest("GET", base+p, nil)
			req.SetBasicAuth("summit", "summit-demo")
			resp, err := client.Do(req)
			if err != nil {
				t.Fatalf("no answer: %v", err)
			}
			body, err := io.ReadAll(resp.Body)
			resp.Body.Close()
			if err != nil {
				t.Fatalf("incomplete answer: %v", err)
			}
			if resp.StatusCode != http.StatusServiceUnavailable || resp.Header.Get("Retry-After") == "" {
				t.Errorf("status %d, Retry-After %q, want 503 with Retry-After", resp.StatusCode, resp.Header.Get("Retry-After"))
			}
			if !strings.Contains(string(body), "temporarily unavailable") {
				t.Errorf("body %q, want the spec's single error", body)
			}
		})
	}
	// The access log line comes after the response is written.
	testkit.WaitFor(t, "the access log records every 503 with its bytes", func() bool {
		n := 0
		for _, line := range strings.Split(stderr.String(), "\n") {
			var rec struct {
				Msg    string
				Status int
				Bytes  int
			}
			if json.Unmarshal([]byte(line), &rec) == nil && rec.Msg == "request" && rec.Status == 503 && rec.Bytes > 0 {
				n++
			}
		}
		return n == len(paths)
	})
}
