package serving

import (
	"context"
	"fmt"
	"log/slog"
	"net"
	"net/http"

	"listingproxy/internal/connlimit"
	"listingproxy/internal/h2guard"
	"listingproxy/internal/onewrite"
	"listingproxy/internal/tlsreload"
)

// ListenOptions say which listeners Open opens and how the public one is
// stacked.
type ListenOptions struct {
	// Addr is the public listener's address; AdminAddr the admin
	// listener's ("" or "off": none). ReusePort opens both with
	// SO_REUSEPORT (Listen).
	Addr, AdminAddr string
	ReusePort       bool
	// ConnLimits bound each client address's connections to the public
	// listener, closed at accept before any TLS handshake
	// (internal/connlimit).
	ConnLimits connlimit.Options
	// CertFile and KeyFile, when set, serve the public listener over TLS
	// (internal/tlsreload); HTTP2 offers HTTP/2 by ALPN, each connection's
	// control frames bounded (internal/h2guard).
	CertFile, KeyFile string
	HTTP2             bool
}

// Listeners are the public listener's stack (TCP, the bounds per client
// address, TLS and the HTTP/2 guard when a certificate is configured) and
// the admin listener. They accept nothing until the servers start.
type Listeners struct {
	tcp, admin net.Listener
	limited    *connlimit.Listener
	// Cert is the public listener's certificate, which a reload reads
	// again (Certificate.Reload); nil without TLS.
	Cert     *tlsreload.Certificate
	guard    *h2guard.Listener // nil without TLS
	public   net.Listener      // the top of the stack
	http2    bool
	certFile string
}

// Open opens the listeners of o. A port in use, or a certificate that
// does not load, is an error naming it, and nothing stays open.
func Open(ctx context.Context, o ListenOptions) (*Listeners, error) {
	tcp, err := Listen(ctx, o.Addr, o.ReusePort)
	if err != nil {
		return nil, fmt.Errorf("listen %s: %w", o.Addr, err)
	}
	l := &Listeners{tcp: tcp, http2: o.HTTP2, certFile: o.CertFile}
	if o.AdminAddr != "" && o.AdminAddr != "off" {
		if l.admin, err = Listen(ctx, o.AdminAddr, o.ReusePort); err != nil {
			l.Close()
			return nil, fmt.Errorf("admin listen %s: %w", o.AdminAddr, err)
		}
	}
	l.limited = connlimit.Listen(tcp, o.ConnLimits)
	l.public = l.limited
	if o.CertFile != "" {
		if l.Cert, err = tlsreload.Load(o.CertFile, o.KeyFile); err != nil {
			l.Close()
			return nil, fmt.Errorf("server.tls: %w", err)
		}
		// HTTP/1.1 and, when offered, HTTP/2, each connection's control
		// frames bounded.
		l.guard = h2guard.Listen(l.Cert.Listener(l.limited, o.HTTP2), h2guard.Options{})
		l.public = l.guard
	}
	return l, nil
}

// Close closes the listeners; Run closes them itself once the servers
// have started.
func (l *Listeners) Close() {
	_ = l.tcp.Close()
	if l.admin != nil {
		_ = l.admin.Close()
	}
}

// Servers are public on the public listener and, when the admin listener
// is open, admin on it. public's connections are counted against their
// address's bounds as they change state; without TLS a response larger
// than net/http's 4 KB connection buffer goes in one write instead of two
// (internal/onewrite; the handler arms them), and public's ConnContext,
// if any, still runs. With TLS, public serves HTTP/2 when offered.
func (l *Listeners) Servers(public, admin *http.Server) []Server {
	public.ConnState = l.limited.ConnState
	ln := l.public
	if l.guard != nil {
		l.guard.Configure(public, l.http2)
	} else {
		ln = onewrite.Listener(ln)
		next := public.ConnContext
		public.ConnContext = func(ctx context.Context, c net.Conn) context.Context {
			if next != nil {
				ctx = next(ctx, c)
			}
			return onewrite.ConnContext(ctx, c)
		}
	}
	servers := []Server{{HTTP: public, Listener: ln}}
	if l.admin != nil {
		servers = append(servers, Server{HTTP: admin, Listener: l.admin})
	}
	return servers
}

// ReloadCertificate reads the public listener's certificate and key again
// (serve's SIGHUP), logging the outcome; when they do not load, the pair in
// use is kept and the error returned. Without TLS it does nothing.
func (l *Listeners) ReloadCertificate(log *slog.Logger) error {
	if l.Cert == nil {
		return nil
	}
	if err := l.Cert.Reload(); err != nil {
		err = fmt.Errorf("server.tls: %w", err)
		log.Error("tls certificate reload failed; keeping the certificate in use", "err", err)
		return err
	}
	log.Info("tls certificate reloaded", "cert_file", l.certFile)
	return nil
}

// Refused are the public connections closed at accept: their address
// held too many, or opened them too fast (connlimit.Stats).
func (l *Listeners) Refused() (tooMany, tooFast uint64) {
	st := l.limited.Stats()
	return st.TooMany, st.TooFast
}

// HTTP2Guard is the HTTP/2 guard of a TLS listener, whose Closed counts
// the connections it closed; nil without TLS.
func (l *Listeners) HTTP2Guard() *h2guard.Listener { return l.guard }

// URL is the public listener's base URL (https with TLS); an unspecified
// address is shown as 127.0.0.1.
func (l *Listeners) URL() string {
	if l.Cert != nil {
		return "https://" + displayAddr(l.tcp.Addr())
	}
	return "http://" + displayAddr(l.tcp.Addr())
}

// AdminURL is the admin listener's base URL; "" when it is off.
func (l *Listeners) AdminURL() string {
	if l.admin == nil {
		return ""
	}
	return "http://" + l.admin.Addr().String()
}

func displayAddr(a net.Addr) string {
	tcp, ok := a.(*net.TCPAddr)
	if ok && tcp.IP.IsUnspecified() {
		return fmt.Sprintf("127.0.0.1:%d", tcp.Port)
	}
	return a.String()
}
