package connlimit

import (
	"net"
	"net/http"
	"net/netip"
	"testing"
	"time"

	"listingproxy/internal/testkit"
)

// fakeConn is an accepted connection from addr.
type fakeConn struct {
	net.Conn
	addr   string
	closed bool
}

func (c *fakeConn) RemoteAddr() net.Addr {
	ap := netip.MustParseAddrPort(c.addr)
	return net.TCPAddrFromAddrPort(ap)
}
func (c *fakeConn) Close() error { c.closed = true; return nil }

// fakeListener hands out the queued connections.
type fakeListener struct {
	net.Listener
	queue chan *fakeConn
}

func (l *fakeListener) Accept() (net.Conn, error) { return <-l.queue, nil }

func TestBounds(t *testing.T) {
	clk := testkit.NewClock(time.Date(2026, 11, 27, 12, 0, 0, 0, time.UTC))
	fl := &fakeListener{queue: make(chan *fakeConn, 64)}
	l := Listen(fl, Options{PerAddress: 3, NewPerSecond: 2, NewBurst: 4, Now: clk.Now,
		Exempt: func(a netip.Addr) bool { return a == netip.MustParseAddr("10.0.0.9") }})
	// accept queues a connection from addr and, behind it, one from a
	// fresh address (Accept skips refused connections, so it always
	// returns); it reports addr's connection if accepted, else the
	// refused one.
	accept := func(addr string) (got net.Conn, refused []*fakeConn) {
		t.Helper()
		c := &fakeConn{addr: addr}
		fl.queue <- c
		fl.queue <- &fakeConn{addr: "203.0.113.200:1"}
		a, _ := l.Accept()
		if a.RemoteAddr().String() == addr {
			<-fl.queue // the marker stays queued: take it back
			return a, nil
		}
		return nil, []*fakeConn{c}
	}
	var open []net.Conn
	for i := range 3 {
		c, _ := accept("192.0.2.1:100" + string(rune('0'+i)))
		if c == nil {
			t.Fatalf("connection %d within the bounds was refused", i)
		}
		open = append(open, c)
	}
	if c, refused := accept("192.0.2.1:2000"); c != nil || len(refused) != 1 || !refused[0].closed {
		t.Fatalf("a 4th open connection from one address: accepted %v, refused %d; want it closed at once", c != nil, len(refused))
	}
	if st := l.Stats(); st.TooMany != 1 {
		t.Errorf("stats %+v, want 1 too many", st)
	}
	l.ConnState(open[0], http.StateActive) // not a close
	l.ConnState(open[0], http.StateClosed)
	c4, _ := accept("192.0.2.1:3000")
	if c4 == nil {
		// The bucket (burst 4) has one token left: the refused attempt
		// took none.
		t.Fatal("after a close, a new connection was refused")
	}
	l.ConnState(open[1], http.StateHijacked)
	if c, refused := accept("192.0.2.1:3001"); c != nil || len(refused) != 1 {
		t.Fatal("past the burst of new connections, one was accepted")
	}
	if st := l.Stats(); st.TooFast != 1 {
		t.Errorf("stats %+v, want 1 too fast", st)
	}
	// Other addresses, the same /64 of IPv6, loopback and exempt ones.
	if c, _ := accept("198.51.100.7:1"); c == nil {
		t.Error("another address was refused")
	}
	for range 10 {
		if c, _ := accept("127.0.0.1:5"); c == nil {
			t.Fatal("loopback was refused")
		}
		if c, _ := accept("10.0.0.9:5"); c == nil {
			t.Fatal("an exempt address was refused")
		}
	}
	for i := range 3 {
		if c, _ := accept("[2001:db8::" + string(rune('1'+i)) + "]:1"); c == nil {
			t.Fatalf("IPv6 connection %d of one /64 refused", i)
		}
	}
	if c, _ := accept("[2001:db8::ff]:1"); c != nil {
		t.Error("a 4th connection from the same /64 was accepted")
	}
	// A second later the bucket has two more tokens.
	clk.Advance(time.Second)
	if c, _ := accept("192.0.2.1:4000"); c == nil {
		t.Error("a second later, a new connection was refused")
	}
}
