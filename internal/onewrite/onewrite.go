// Package onewrite lets a net/http server send a response larger than its
// connection buffer in one system call instead of two.
//
// net/http writes a response through a 4 KB bufio.Writer per connection:
// the status line and headers, then as much of the body as fits, go out in
// a first write(2) when the buffer fills; the rest of a large body is
// written straight from the handler's slice in a second. For a 45 KB
// cached body that is two system calls, two TCP transmissions and, on the
// client, two wake-ups per response (docs/performance.md). http.Server has
// no knob for that buffer's size.
//
// Listener wraps the accepted TCP connections; Handler arms a connection
// for the time its handler runs. An armed connection keeps a copy of the
// first write it is given (at most HoldMax bytes) instead of sending it,
// and sends it together with the next one in a single writev(2). When the
// handler returns with a write held, Handler flushes the ResponseWriter, so
// the tail net/http still buffers goes out with it; then whatever is still
// held is written, so nothing is held once net/http finishes the response.
// A response that fits the buffer (the common small one) makes no write
// during the handler and is untouched.
//
// Nothing of HTTP is handled here: net/http still parses every request and
// frames every response (pipelining, keep-alive, limits, timeouts, HEAD,
// chunking). The connection only merges two consecutive writes of the same
// byte stream, in order, so the bytes on the wire are exactly those net/http
// produced. Every path that sends bytes or ends the stream (Write, ReadFrom,
// CloseWrite) sends what is held first.
//
// Hand-written because net/http offers no way to size or bypass its
// connection buffer, and no library does this within net/http.
package onewrite

import (
	"context"
	"io"
	"net"
	"net/http"
	"sync"
)

// HoldMax is the largest write a connection holds back: net/http's
// connection buffer size. A larger first write is sent at once.
const HoldMax = 4 << 10

// Listener returns l with connections that Handler can arm. Connections
// that are not *net.TCPConn are passed through unchanged.
func Listener(l net.Listener) net.Listener { return listener{l} }

type listener struct{ net.Listener }

func (l listener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if tc, ok := c.(*net.TCPConn); ok && err == nil {
		return &Conn{TCPConn: tc}, nil
	}
	return c, err
}

// ConnContext is http.Server.ConnContext for a server on a Listener: it
// puts the connection in the context Handler reads.
func ConnContext(ctx context.Context, c net.Conn) context.Context {
	if oc, ok := c.(*Conn); ok {
		return context.WithValue(ctx, connKey{}, oc)
	}
	return ctx
}

type connKey struct{}

// Handler arms the request's connection (see ConnContext) while next runs.
// Requests that did not arrive on a Listener's connection (TLS, HTTP/2,
// tests calling the handler directly) are passed through.
func Handler(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		c, _ := r.Context().Value(connKey{}).(*Conn)
		if c == nil || r.ProtoMajor != 1 {
			next.ServeHTTP(w, r)
			return
		}
		c.armed = true
		defer c.release()
		next.ServeHTTP(w, r)
		if c.held != nil {
			// The response's tail is still in net/http's buffers (it is
			// written by finishRequest, after this returns): flush it now,
			// so that it goes out with the held bytes in one writev.
			if f, ok := w.(http.Flusher); ok {
				f.Flush()
			}
		}
	})
}

// Conn is a TCP connection that, while armed, merges its first two writes.
// Only the connection's serving goroutine (net/http's) writes, arms and
// releases it; Close may come from another goroutine and touches nothing
// held.
type Conn struct {
	*net.TCPConn
	armed bool
	held  *[]byte // a copy of the write held back, from holdBufs; nil when none
	bufs  net.Buffers
	pair  [2][]byte
}

// sendHook, when set (tests), is called before each system call that sends
// bytes: a write, a writev, or a ReadFrom.
var sendHook func()

func sending() {
	if sendHook != nil {
		sendHook()
	}
}

// holdBufs recycles the copies of held writes: a held write lives from one
// write to the next, so a few buffers serve every connection.
var holdBufs = sync.Pool{New: func() any { b := make([]byte, 0, HoldMax); return &b }}

// Write sends p, or holds a copy of it when armed and nothing is held yet,
// or sends what is held and p in one writev.
func (c *Conn) Write(p []byte) (int, error) {
	if c.held != nil {
		return c.writeBoth(p)
	}
	if c.armed && len(p) <= HoldMax && len(p) > 0 {
		c.armed = false // hold once per request
		b := holdBufs.Get().(*[]byte)
		*b = append((*b)[:0], p...)
		c.held = b
		return len(p), nil
	}
	sending()
	return c.TCPConn.Write(p)
}

// writeBoth sends the held bytes and p with one writev, and reports how
// much of p went out.
func (c *Conn) writeBoth(p []byte) (int, error) {
	h := c.held
	c.held = nil
	c.pair = [2][]byte{*h, p}
	c.bufs = c.pair[:]
	sending()
	n, err := c.bufs.WriteTo(c.TCPConn)
	c.pair, c.bufs = [2][]byte{}, nil // keep no reference to p
	holdBufs.Put(h)
	sent := int(n) - len(*h)
	if sent < 0 {
		sent = 0
	}
	if err == nil && sent < len(p) {
		err = io.ErrShortWrite
	}
	return sent, err
}

// flush sends what is held, if anything.
func (c *Conn) flush() error {
	if c.held == nil {
		return nil
	}
	_, err := c.writeBoth(nil)
	return err
}

// release disarms the connection and sends what is held: the handler has
// returned, so what it wrote must not wait for net/http's next write.
func (c *Conn) release() {
	c.armed = false
	_ = c.flush() // a failed write fails the next one too, which net/http sees
}

// ReadFrom sends what is held, then lets the TCP connection copy r (with
// sendfile or splice when it can), as net/http's response.ReadFrom expects.
func (c *Conn) ReadFrom(r io.Reader) (int64, error) {
	if err := c.flush(); err != nil {
		return 0, err
	}
	sending()
	return c.TCPConn.ReadFrom(r)
}

// CloseWrite sends what is held, then shuts the sending side down.
func (c *Conn) CloseWrite() error {
	if err := c.flush(); err != nil {
		return err
	}
	return c.TCPConn.CloseWrite()
}
