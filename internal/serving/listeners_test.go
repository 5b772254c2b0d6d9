package serving_test

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"strings"
	"testing"

	"listingproxy/internal/serving"
	"listingproxy/internal/testkit"
)

type memoKey struct{}

// TestOpen: without TLS the public server is served on its stack, its own
// ConnContext still run, connections counted; "off" opens no admin
// listener; URL shows an unspecified address as 127.0.0.1; an admin
// address in use is an error naming it.
func TestOpen(t *testing.T) {
	ctx := context.Background()
	ls, err := serving.Open(ctx, serving.ListenOptions{Addr: ":0", AdminAddr: "off"})
	if err != nil {
		t.Fatal(err)
	}
	if ls.AdminURL() != "" || ls.HTTP2Guard() != nil || ls.Cert != nil {
		t.Errorf("admin %q, guard %v, cert %v: want none", ls.AdminURL(), ls.HTTP2Guard(), ls.Cert)
	}
	if !strings.HasPrefix(ls.URL(), "http://127.0.0.1:") {
		t.Errorf("URL = %s", ls.URL())
	}
	public := &http.Server{
		Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { fmt.Fprint(w, r.Context().Value(memoKey{})) }),
		ConnContext: func(ctx context.Context, _ net.Conn) context.Context {
			return context.WithValue(ctx, memoKey{}, "memo")
		},
	}
	servers := ls.Servers(public, &http.Server{})
	if len(servers) != 1 || public.ConnState == nil {
		t.Fatalf("%d servers, ConnState set %t: want the public one alone, counted", len(servers), public.ConnState != nil)
	}
	go func() { _ = public.Serve(servers[0].Listener) }()
	t.Cleanup(func() { _ = public.Close() })
	resp, err := http.Get(ls.URL() + "/")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if string(body) != "memo" {
		t.Errorf("body %q: the server's own ConnContext did not run", body)
	}

	taken := strings.TrimPrefix(ls.URL(), "http://")
	if _, err := serving.Open(ctx, serving.ListenOptions{Addr: "127.0.0.1:0", AdminAddr: taken}); err == nil || !strings.Contains(err.Error(), "admin listen "+taken) {
		t.Errorf("an admin address in use: %v", err)
	}
}

// TestOpenTLS: with a certificate the public listener is TLS with the
// HTTP/2 guard, its URL https; ReloadCertificate reads the files again
// and, when they no longer load, says so and keeps the pair in use.
func TestOpenTLS(t *testing.T) {
	dir := t.TempDir()
	certFile, keyFile, _ := testkit.WriteSelfSigned(t, dir, 1)
	ls, err := serving.Open(context.Background(), serving.ListenOptions{Addr: "127.0.0.1:0", AdminAddr: "127.0.0.1:0", CertFile: certFile, KeyFile: keyFile, HTTP2: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(ls.Close)
	if !strings.HasPrefix(ls.URL(), "https://127.0.0.1:") || ls.Cert == nil || ls.HTTP2Guard() == nil || !strings.HasPrefix(ls.AdminURL(), "http://127.0.0.1:") {
		t.Errorf("URL %s, admin %s, cert %v, guard %v", ls.URL(), ls.AdminURL(), ls.Cert, ls.HTTP2Guard())
	}
	public := &http.Server{}
	if servers := ls.Servers(public, &http.Server{}); len(servers) != 2 || public.Protocols == nil || !public.Protocols.UnencryptedHTTP2() {
		t.Errorf("%d servers, protocols %v: want both, the public one configured for HTTP/2 by the guard", len(servers), public.Protocols)
	}
	log := slog.New(slog.DiscardHandler)
	if err := ls.ReloadCertificate(log); err != nil {
		t.Errorf("reload of the same files: %v", err)
	}
	if err := os.Remove(keyFile); err != nil {
		t.Fatal(err)
	}
	if err := ls.ReloadCertificate(log); err == nil || !strings.HasPrefix(err.Error(), "server.tls: ") {
		t.Errorf("reload without the key: %v", err)
	}
}
