package main

import (
	"crypto/tls"
	"fmt"
	"net"
	"sync/atomic"

	"listingproxy/config"
)

// certificate is the public listener's TLS certificate, loaded from the
// files server.tls names and re-read by reload (on SIGHUP), so a renewed
// certificate is served to new connections without a restart.
type certificate struct {
	files config.TLS
	cur   atomic.Pointer[tls.Certificate]
}

// loadCertificate reads the certificate and key files of c.
func loadCertificate(c config.TLS) (*certificate, error) {
	cert := &certificate{files: c}
	return cert, cert.reload()
}

// reload re-reads the files; on error the certificate in use is kept.
func (c *certificate) reload() error {
	pair, err := tls.LoadX509KeyPair(c.files.CertFile, c.files.KeyFile)
	if err != nil {
		return fmt.Errorf("server.tls: load %s and %s: %w", c.files.CertFile, c.files.KeyFile, err)
	}
	c.cur.Store(&pair)
	return nil
}

// tlsConfig is the public listener's TLS configuration: TLS 1.2 at least
// (1.3 preferred), Go's default cipher suites (forward-secret AEADs only)
// and curves, HTTP/2 and HTTP/1.1 by ALPN, and the current certificate
// for each handshake.
func (c *certificate) tlsConfig() *tls.Config {
	return &tls.Config{
		MinVersion: tls.VersionTLS12,
		NextProtos: []string{"h2", "http/1.1"},
		GetCertificate: func(*tls.ClientHelloInfo) (*tls.Certificate, error) {
			return c.cur.Load(), nil
		},
	}
}

// listenTLS wraps the public listener in TLS when server.tls names a
// certificate, and returns the certificate for reloads; otherwise it
// returns ln and a nil certificate.
func listenTLS(ln net.Listener, c config.TLS) (net.Listener, *certificate, error) {
	if c.CertFile == "" {
		return ln, nil, nil
	}
	cert, err := loadCertificate(c)
	if err != nil {
		return nil, nil, err
	}
	return tls.NewListener(ln, cert.tlsConfig()), cert, nil
}
