package tlsreload_test

import (
	"crypto/tls"
	"crypto/x509"
	"net"
	"os"
	"strings"
	"testing"

	"listingproxy/internal/testkit"
	"listingproxy/internal/tlsreload"
)

// served is the serial number of the certificate c's configuration hands a
// handshake.
func served(t *testing.T, c *tlsreload.Certificate) int64 {
	t.Helper()
	pair, err := c.Config().GetCertificate(&tls.ClientHelloInfo{})
	if err != nil {
		t.Fatal(err)
	}
	leaf, err := x509.ParseCertificate(pair.Certificate[0])
	if err != nil {
		t.Fatal(err)
	}
	return leaf.SerialNumber.Int64()
}

// TestReload: a renewed certificate is served after Reload, and files that
// no longer load leave the certificate in use.
func TestReload(t *testing.T) {
	dir := t.TempDir()
	certFile, keyFile, _ := testkit.WriteSelfSigned(t, dir, 1)
	c, err := tlsreload.Load(certFile, keyFile)
	if err != nil {
		t.Fatal(err)
	}
	if got := served(t, c); got != 1 {
		t.Fatalf("serial %d, want 1", got)
	}

	testkit.WriteSelfSigned(t, dir, 2)
	if got := served(t, c); got != 1 {
		t.Errorf("serial %d before Reload, want 1 (the files are read on Reload only)", got)
	}
	if err := c.Reload(); err != nil {
		t.Fatal(err)
	}
	if got := served(t, c); got != 2 {
		t.Errorf("serial %d after Reload, want 2 (the renewed certificate)", got)
	}

	if err := os.WriteFile(certFile, []byte("not a certificate"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := c.Reload(); err == nil || !strings.Contains(err.Error(), "load "+certFile+" and "+keyFile) {
		t.Errorf("Reload of a broken file: err = %v, want one naming both files", err)
	}
	if got := served(t, c); got != 2 {
		t.Errorf("serial %d after a failed Reload, want 2 (kept)", got)
	}
}

func TestConfig(t *testing.T) {
	certFile, keyFile, _ := testkit.WriteSelfSigned(t, t.TempDir(), 1)
	c, err := tlsreload.Load(certFile, keyFile)
	if err != nil {
		t.Fatal(err)
	}
	cfg := c.Config()
	if cfg.MinVersion != tls.VersionTLS12 {
		t.Errorf("MinVersion %x, want TLS 1.2", cfg.MinVersion)
	}
	if got := strings.Join(cfg.NextProtos, ","); got != "h2,http/1.1" {
		t.Errorf("NextProtos %s, want h2,http/1.1", got)
	}
	if _, err := tlsreload.Load(certFile, certFile); err == nil {
		t.Error("Load of a certificate as its own key: no error")
	}
}

// TestListenerProtocols: the listener offers HTTP/2 and HTTP/1.1 by ALPN,
// and HTTP/1.1 alone without http2 (server.tls.http2: false).
func TestListenerProtocols(t *testing.T) {
	certFile, keyFile, _ := testkit.WriteSelfSigned(t, t.TempDir(), 1)
	c, err := tlsreload.Load(certFile, keyFile)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		http2 bool
		want  string
	}{{true, "h2"}, {false, "http/1.1"}} {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		tl := c.Listener(ln, tc.http2)
		go func() {
			if conn, err := tl.Accept(); err == nil {
				conn.(*tls.Conn).Handshake()
				conn.Close()
			}
		}()
		conn, err := tls.Dial("tcp", ln.Addr().String(), &tls.Config{InsecureSkipVerify: true, NextProtos: []string{"h2", "http/1.1"}})
		if err != nil {
			t.Fatal(err)
		}
		if got := conn.ConnectionState().NegotiatedProtocol; got != tc.want {
			t.Errorf("http2 %v: negotiated %q, want %q", tc.http2, got, tc.want)
		}
		conn.Close()
		tl.Close()
	}
}
