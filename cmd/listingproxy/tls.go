package main

import (
	"fmt"
	"net"

	"listingproxy/config"
	"listingproxy/internal/tlsreload"
)

// loadCertificate reads the certificate and key files of server.tls
// (internal/tlsreload), which serve re-reads on SIGHUP.
func loadCertificate(c config.TLS) (*tlsreload.Certificate, error) {
	cert, err := tlsreload.Load(c.CertFile, c.KeyFile)
	if err != nil {
		return nil, fmt.Errorf("server.tls: %w", err)
	}
	return cert, nil
}

// listenTLS wraps the public listener in TLS when server.tls names a
// certificate, and returns the certificate for reloads; otherwise it
// returns ln and a nil certificate.
func listenTLS(ln net.Listener, c config.TLS) (net.Listener, *tlsreload.Certificate, error) {
	if c.CertFile == "" {
		return ln, nil, nil
	}
	cert, err := loadCertificate(c)
	if err != nil {
		return nil, nil, err
	}
	return cert.Listener(ln, c.HTTP2 == nil || *c.HTTP2), cert, nil
}
