// Package tlsreload owns the public listener's TLS: its configuration
// (TLS 1.2 at least, HTTP/2 and HTTP/1.1 by ALPN) and a certificate read
// from a certificate and a key file that Reload reads again, so a renewed
// certificate is served to new connections without a restart (serve
// reloads it on SIGHUP).
//
// It is hand-written because crypto/tls has no reloading of its own: a
// tls.Config's GetCertificate returns the pair last loaded, held in an
// atomic pointer, so a handshake never waits for a reload and a reload
// that fails keeps the pair in use. Standard library only; it knows
// nothing of listingproxy's configuration.
package tlsreload

import (
	"crypto/tls"
	"fmt"
	"net"
	"sync/atomic"
)

// Certificate is a certificate and key loaded from files, which Reload
// reads again.
type Certificate struct {
	certFile, keyFile string
	cur               atomic.Pointer[tls.Certificate]
}

// Load reads the certificate and key files.
func Load(certFile, keyFile string) (*Certificate, error) {
	c := &Certificate{certFile: certFile, keyFile: keyFile}
	return c, c.Reload()
}

// Reload re-reads the files; on error the certificate in use is kept.
// Reloads may run concurrently with handshakes.
func (c *Certificate) Reload() error {
	pair, err := tls.LoadX509KeyPair(c.certFile, c.keyFile)
	if err != nil {
		return fmt.Errorf("load %s and %s: %w", c.certFile, c.keyFile, err)
	}
	c.cur.Store(&pair)
	return nil
}

// Config is the public listener's TLS configuration: TLS 1.2 at least
// (1.3 preferred), Go's default cipher suites (forward-secret AEADs only)
// and curves, HTTP/2 and HTTP/1.1 by ALPN, and the current certificate
// for each handshake.
func (c *Certificate) Config() *tls.Config {
	return &tls.Config{
		MinVersion: tls.VersionTLS12,
		NextProtos: []string{"h2", "http/1.1"},
		GetCertificate: func(*tls.ClientHelloInfo) (*tls.Certificate, error) {
			return c.cur.Load(), nil
		},
	}
}

// Listener wraps ln in TLS with c's configuration; without http2 it
// offers HTTP/1.1 alone.
func (c *Certificate) Listener(ln net.Listener, http2 bool) net.Listener {
	cfg := c.Config()
	if !http2 {
		cfg.NextProtos = []string{"http/1.1"}
	}
	return tls.NewListener(ln, cfg)
}
