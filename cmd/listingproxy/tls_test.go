package main

import (
	"bufio"
	"context"
	"crypto/tls"
	"crypto/x509"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"listingproxy/internal/testkit"
)

// tlsDemoConfig is demoConfig serving the public listener over TLS.
func tlsDemoConfig(t *testing.T, certFile, keyFile string) string {
	t.Helper()
	path := demoConfig(t)
	src, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	s := strings.Replace(string(src), "\nserver:\n", "\nserver:\n  tls: {cert_file: \""+certFile+"\", key_file: \""+keyFile+"\"}\n", 1)
	if s == string(src) {
		t.Fatal("config.yaml has no server: section to add tls to")
	}
	if err := os.WriteFile(path, []byte(s), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// startTLSRun runs the service on cfgPath until the test ends, as
// startRun does, and returns its public base URL and its log lines about
// reloads as they come.
func startTLSRun(t *testing.T, cfgPath string) (base string, reloads <-chan string) {
	t.Helper()
	errR, errW := io.Pipe()
	lines := make(chan string, 64)
	go func() {
		sc := bufio.NewScanner(errR)
		for sc.Scan() {
			if strings.Contains(sc.Text(), "reload") {
				lines <- sc.Text()
			}
		}
		_, _ = io.Copy(io.Discard, errR)
	}()
	base, _, _ = startServing(t, cfgPath, func(ctx context.Context, args []string, stdout io.Writer) error {
		defer errW.Close()
		return serveWith(ctx, args, noEnv, stdout, errW, drainAtOnce)
	})
	if !strings.HasPrefix(base, "https://") {
		t.Fatalf("public listener %s, want https://", base)
	}
	return base, lines
}

// TestTLSPublicListener serves the demo over TLS with a generated
// self-signed certificate, renews it on SIGHUP and keeps it when the new
// files are broken.
func TestTLSPublicListener(t *testing.T) {
	dir := t.TempDir()
	certFile, keyFile, first := testkit.WriteSelfSigned(t, dir, 1)
	base, reloads := startTLSRun(t, tlsDemoConfig(t, certFile, keyFile))

	roots := x509.NewCertPool()
	roots.AddCert(first)
	get := func(c *tls.Config) (*http.Response, error) {
		tr := &http.Transport{TLSClientConfig: c, DisableKeepAlives: true, ForceAttemptHTTP2: true}
		defer tr.CloseIdleConnections()
		req, _ := http.NewRequest("GET", base+"/au/agents/1.json", nil)
		req.SetBasicAuth("harbour", "harbour-demo")
		resp, err := (&http.Client{Transport: tr, Timeout: 30 * time.Second}).Do(req)
		if err == nil {
			_, _ = io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
		}
		return resp, err
	}
	serial := func(t *testing.T) int64 {
		t.Helper()
		// The renewed certificate is another self-signed one: trust any
		// here and report which one was served.
		resp, err := get(&tls.Config{InsecureSkipVerify: true})
		if err != nil {
			t.Fatal(err)
		}
		return resp.TLS.PeerCertificates[0].SerialNumber.Int64()
	}
	waitFor := func(t *testing.T, msg string) {
		t.Helper()
		for line := range reloads {
			if strings.Contains(line, msg) {
				return
			}
		}
		t.Fatalf("the log never said %q", msg)
	}

	t.Run("verified request", func(t *testing.T) {
		resp, err := get(&tls.Config{RootCAs: roots})
		if err != nil {
			t.Fatal(err)
		}
		if resp.StatusCode != 200 || resp.TLS.Version < tls.VersionTLS12 || resp.Proto != "HTTP/2.0" {
			t.Errorf("status %d, TLS version %x, %s; want 200 over TLS 1.2+ and HTTP/2", resp.StatusCode, resp.TLS.Version, resp.Proto)
		}
	})
	t.Run("old protocol versions refused", func(t *testing.T) {
		if _, err := get(&tls.Config{RootCAs: roots, MaxVersion: tls.VersionTLS11}); err == nil {
			t.Error("a TLS 1.1 client was served")
		}
	})
	t.Run("plain HTTP refused", func(t *testing.T) {
		resp, err := (&http.Client{Timeout: 30 * time.Second}).Get(strings.Replace(base, "https://", "http://", 1) + "/au/agents/1.json")
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusBadRequest {
			t.Errorf("plain HTTP: status %d, want 400 (Go's answer to HTTP on a TLS port)", resp.StatusCode)
		}
	})
	t.Run("renewed on SIGHUP", func(t *testing.T) {
		testkit.WriteSelfSigned(t, dir, 2)
		if err := syscall.Kill(os.Getpid(), syscall.SIGHUP); err != nil {
			t.Fatal(err)
		}
		waitFor(t, "tls certificate reloaded")
		if got := serial(t); got != 2 {
			t.Errorf("serial %d after SIGHUP, want 2 (the renewed certificate)", got)
		}
	})
	t.Run("broken files keep the certificate in use", func(t *testing.T) {
		if err := os.WriteFile(certFile, []byte("not a certificate"), 0o600); err != nil {
			t.Fatal(err)
		}
		if err := syscall.Kill(os.Getpid(), syscall.SIGHUP); err != nil {
			t.Fatal(err)
		}
		waitFor(t, "tls certificate reload failed")
		// Never reported a success: the configuration names the broken
		// files, so it is rejected too.
		waitFor(t, "config reload rejected")
		if got := serial(t); got != 2 {
			t.Errorf("serial %d after a failed reload, want 2 (kept)", got)
		}
	})
}

// TestTLSConfigProblems: check-config loads the certificate too, and a
// half-configured server.tls or a missing file is a located problem,
// reported with every other problem of the file.
func TestTLSConfigProblems(t *testing.T) {
	dir := t.TempDir()
	certFile, keyFile, _ := testkit.WriteSelfSigned(t, dir, 1)
	write := func(name, tlsLine string) string {
		path := filepath.Join(dir, name)
		src := "backends: {d: {kind: sqlite, dsn: x}}\ntenants: {a: {backend: d}}\nserver:\n  tls: " + tlsLine + "\n"
		if err := os.WriteFile(path, []byte(src), 0o600); err != nil {
			t.Fatal(err)
		}
		return path
	}
	tests := []struct {
		name, tls, stderr string
		status            int
	}{
		{"valid pair", `{cert_file: "` + certFile + `", key_file: "` + keyFile + `"}`, "", 0},
		{"key missing", `{cert_file: "` + certFile + `"}`, "key-missing.yaml:4: server.tls: needs both cert_file and key_file", 1},
		{"file missing", `{cert_file: "` + certFile + `", key_file: "` + dir + `/none.pem"}`, "file-missing.yaml:4: server.tls.key_file: open " + dir + "/none.pem: no such file or directory", 1},
		{"both files missing, among other problems", `{cert_file: "` + dir + `/none.crt", key_file: "` + dir + `/none.pem"}` + "\nmax_results: -1", "(3 problems)|.yaml:4: server.tls.cert_file: open " + dir + "/none.crt: no such file or directory|.yaml:4: server.tls.key_file: open " + dir + "/none.pem|max_results", 1},
		{"key of another certificate", `{cert_file: "` + certFile + `", key_file: "` + certFile + `"}`, "server.tls: cert_file and key_file are not a certificate and its private key", 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			path := write(strings.ReplaceAll(tt.name, " ", "-")+".yaml", tt.tls)
			status, _, errOut := runCmd(t, noEnv, "check-config", path)
			missing := false
			for _, want := range strings.Split(tt.stderr, "|") { // each part in the output
				missing = missing || !strings.Contains(errOut, want)
			}
			if status != tt.status || missing {
				t.Errorf("exit %d, stderr %q; want %d and %q", status, errOut, tt.status, tt.stderr)
			}
		})
	}
}
