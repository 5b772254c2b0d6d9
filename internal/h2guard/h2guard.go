// Package h2guard bounds the HTTP/2 control frames a client may send on one
// connection of the public TLS listener: PING, SETTINGS (neither an
// acknowledgement) and PRIORITY in one bucket, RST_STREAM in a tighter one.
// They are the frames of the known HTTP/2 floods (ping flood, settings
// flood, rapid reset: CVE-2019-9512, CVE-2019-9515, CVE-2023-44487): each
// costs the server work (an answer, a request begun then torn down) and
// none waits for an answer, and net/http takes every one as fast as a
// client sends them: four connections flooding PINGs left other
// clients 6% of their throughput, 32 connections of rapid resets 1%. A
// connection past its bucket is closed at once and counted.
//
// How: Listen wraps the TLS listener, so that net/http is handed each
// connection already decrypted (the handshake runs on its first read, under
// net/http's header deadline), and Configure makes the server accept
// HTTP/1.1 and, on a connection that opens with HTTP/2's preface (a client
// that negotiated "h2" by ALPN), HTTP/2: net/http's own "unencrypted
// HTTP/2" (http.Protocols), so framing, streams, flow control, HPACK, the
// timeouts and the graceful shutdown all stay net/http's. The connection
// net/http reads is this package's, whose reads are watched.
//
// Why a hand-written frame walk: net/http exposes neither the frames a
// server reads nor a hook per frame (HTTP2Config.CountError sees protocol
// errors only). The walk reads no more than each frame's 9-byte header
// (length, type, flags) and skips its payload; it decodes nothing (no
// headers, no HPACK, no stream state) and never changes a byte: a malformed
// stream is still net/http's to refuse. A connection that does not open
// with the preface (HTTP/1.1) is passed through unwalked.
//
// Since net/http sees a connection that is not a *tls.Conn, Request.TLS is
// nil on this listener (nothing in listingproxy reads it); a client that
// speaks plain HTTP to it gets net/http's usual 400.
package h2guard

import (
	"crypto/tls"
	"errors"
	"io"
	"net"
	"net/http"
	"sync/atomic"
	"time"

	"golang.org/x/time/rate"
)

// Defaults of Options.
const (
	// DefaultControlPerSecond is the sustained rate of control frames
	// allowed on one connection: a browser sends a few at its start and
	// one now and then (a cancelled request, a keep-alive PING).
	DefaultControlPerSecond = 50
	// DefaultControlBurst is how many a connection may send at once.
	DefaultControlBurst = 500
	// DefaultResetPerSecond and DefaultResetBurst bound the streams a
	// client resets (RST_STREAM) on one connection: each reset stream was
	// a request the server began to serve, so a reset costs what a request
	// does, and rapid reset is a request flood the client never waits
	// for: with connections redialled at the per-address bound (50 a
	// second), a flood from one address then begins at most 2,500
	// requests a second. A program cancels a request now and then; a page
	// closed with its requests in flight resets them all, once.
	DefaultResetPerSecond = 5
	DefaultResetBurst     = 50
)

// Options configure Listen. The zero value takes the defaults.
type Options struct {
	// ControlPerSecond and ControlBurst bound one connection's control
	// frames (a token bucket); past them the connection is closed.
	ControlPerSecond float64
	ControlBurst     int
	// ResetPerSecond and ResetBurst bound one connection's RST_STREAM
	// frames, likewise.
	ResetPerSecond float64
	ResetBurst     int
	// Now is the clock of the buckets. Default time.Now.
	Now func() time.Time
}

// Listener is a TLS listener whose connections are watched.
type Listener struct {
	net.Listener
	o      Options
	closed atomic.Uint64
}

// ErrControlFlood is the read error of a connection closed for its
// control frames.
var ErrControlFlood = errors.New("h2guard: too many HTTP/2 control frames on one connection")

// Listen wraps ln, a TLS listener (tls.NewListener): see the package doc.
// Connections that are not *tls.Conn are passed as they are.
func Listen(ln net.Listener, o Options) *Listener {
	if o.ControlPerSecond <= 0 {
		o.ControlPerSecond = DefaultControlPerSecond
	}
	if o.ControlBurst <= 0 {
		o.ControlBurst = DefaultControlBurst
	}
	if o.ResetPerSecond <= 0 {
		o.ResetPerSecond = DefaultResetPerSecond
	}
	if o.ResetBurst <= 0 {
		o.ResetBurst = DefaultResetBurst
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	return &Listener{Listener: ln, o: o}
}

// Configure makes srv, which serves l, accept HTTP/1.1 and, when http2,
// HTTP/2 on the connections that open with its preface. The TLS
// configuration's ALPN list (tlsreload) decides what clients are offered.
func (l *Listener) Configure(srv *http.Server, http2 bool) {
	p := new(http.Protocols)
	p.SetHTTP1(true)
	p.SetUnencryptedHTTP2(http2)
	srv.Protocols = p
}

// Closed is the number of connections closed for their control frames.
func (l *Listener) Closed() uint64 { return l.closed.Load() }

// Accept returns the next connection, watched.
func (l *Listener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	tc, ok := c.(*tls.Conn)
	if !ok {
		return c, nil
	}
	return &conn{tc: tc, l: l}, nil
}

// conn is a TLS connection whose reads are walked frame by frame. It is
// deliberately not a *tls.Conn and has no ConnectionState method: net/http
// would then serve HTTP/2 only by its TLS path, which takes no connection
// of ours.
type conn struct {
	tc *tls.Conn
	l  *Listener
	// made when the preface is seen
	control, resets *rate.Limiter

	preface int     // bytes of the preface matched; -1: not HTTP/2, unwalked
	hdr     [9]byte // the frame header being read
	hn      int     // bytes of hdr read
	skip    uint32  // bytes of the current frame's payload still to pass
}

const clientPreface = "PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n"

func (c *conn) Read(p []byte) (int, error) {
	n, err := c.tc.Read(p)
	if n > 0 && c.preface >= 0 && !c.walk(p[:n]) {
		c.l.closed.Add(1)
		_ = c.tc.Close()
		return 0, ErrControlFlood
	}
	if re, ok := errors.AsType[tls.RecordHeaderError](err); ok && re.Conn != nil && looksLikeHTTP(re.RecordHeader) {
		// As net/http does on its own TLS path.
		_, _ = io.WriteString(re.Conn, "HTTP/1.0 400 Bad Request\r\n\r\nClient sent an HTTP request to an HTTPS server.\n")
		_ = re.Conn.Close()
	}
	return n, err
}

// looksLikeHTTP reports a TLS record header that is the start of a plain
// HTTP request (net/http's tlsRecordHeaderLooksLikeHTTP).
func looksLikeHTTP(hdr [5]byte) bool {
	switch string(hdr[:]) {
	case "GET /", "HEAD ", "POST ", "PUT /", "OPTIO":
		return true
	}
	return false
}

// HTTP/2 frame types and flags (RFC 9113, section 6) the walk counts.
const (
	framePriority  = 0x2
	frameRSTStream = 0x3
	frameSettings  = 0x4
	framePing      = 0x6
	flagAck        = 0x1
)

// walk follows the frames in b, which continues what was read before;
// false when a control frame exceeds the connection's bucket.
func (c *conn) walk(b []byte) bool {
	for len(b) > 0 {
		switch {
		case c.preface < 0:
			return true
		case c.preface < len(clientPreface):
			k := min(len(clientPreface)-c.preface, len(b))
			if string(b[:k]) != clientPreface[c.preface:c.preface+k] {
				c.preface = -1 // HTTP/1.1: net/http's to read
				return true
			}
			c.preface += k
			b = b[k:]
			if c.preface == len(clientPreface) {
				o := &c.l.o
				c.control = rate.NewLimiter(rate.Limit(o.ControlPerSecond), o.ControlBurst)
				c.resets = rate.NewLimiter(rate.Limit(o.ResetPerSecond), o.ResetBurst)
			}
		case c.skip > 0:
			k := min(c.skip, uint32(min(len(b), 1<<24)))
			c.skip -= k
			b = b[k:]
		default:
			k := copy(c.hdr[c.hn:], b)
			c.hn += k
			b = b[k:]
			if c.hn < len(c.hdr) {
				return true
			}
			c.hn = 0
			c.skip = uint32(c.hdr[0])<<16 | uint32(c.hdr[1])<<8 | uint32(c.hdr[2])
			if lim := c.bucket(c.hdr[3], c.hdr[4]); lim != nil && !lim.AllowN(c.l.o.Now(), 1) {
				return false
			}
		}
	}
	return true
}

// bucket is the bucket a frame counts against, nil for none.
func (c *conn) bucket(typ, flags byte) *rate.Limiter {
	switch typ {
	case frameRSTStream:
		return c.resets
	case framePriority:
		return c.control
	case frameSettings, framePing:
		if flags&flagAck == 0 {
			return c.control
		}
	}
	return nil
}

func (c *conn) Write(p []byte) (int, error)        { return c.tc.Write(p) }
func (c *conn) Close() error                       { return c.tc.Close() }
func (c *conn) LocalAddr() net.Addr                { return c.tc.LocalAddr() }
func (c *conn) RemoteAddr() net.Addr               { return c.tc.RemoteAddr() }
func (c *conn) SetDeadline(t time.Time) error      { return c.tc.SetDeadline(t) }
func (c *conn) SetReadDeadline(t time.Time) error  { return c.tc.SetReadDeadline(t) }
func (c *conn) SetWriteDeadline(t time.Time) error { return c.tc.SetWriteDeadline(t) }
