package main

import (
	"context"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"
)

// demoConfig is the shipped config.yaml pointed at a temporary database and
// ephemeral ports.
func demoConfig(t *testing.T) string {
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

var listenLine = regexp.MustCompile(`listening on (http://\S+) \(admin: (http://\S+),`)

// TestRunServesTheDemo starts the real service with run, waits for
// /healthz, makes an authenticated request, and shuts it down (startRun
// checks that run then returns nil).
func TestRunServesTheDemo(t *testing.T) {
	base, admin := startRun(t, demoConfig(t))
	client := &http.Client{Timeout: 10 * time.Second}
	deadline := time.Now().Add(10 * time.Second)
	for {
		resp, err := client.Get(admin + "/healthz")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				break
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("/healthz never answered 200 (last error %v)", err)
		}
		time.Sleep(20 * time.Millisecond)
	}

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
