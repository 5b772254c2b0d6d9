package connlimit_test

import (
	"context"
	"crypto/tls"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"testing"

	"listingproxy/internal/connlimit"
)

// TestHTTP2Connections: behind a real TLS listener with HTTP/2, one
// address's connections beyond the bound are closed before their
// handshake (the HTTP/2 client's dial fails), and closing connections
// (seen through the server's ConnState) gives their slots back.
func TestHTTP2Connections(t *testing.T) {
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.WriteString(w, r.Proto)
	}))
	l := connlimit.Listen(srv.Listener, connlimit.Options{PerAddress: 2, NewPerSecond: -1, BoundLoopback: true})
	srv.Listener = l
	closed := make(chan struct{}, 16)
	srv.Config.ConnState = func(c net.Conn, s http.ConnState) {
		l.ConnState(c, s)
		if s == http.StateClosed {
			closed <- struct{}{}
		}
	}
	srv.EnableHTTP2 = true
	srv.StartTLS()
	defer srv.Close()

	type client struct {
		tr   *http.Transport
		conn net.Conn
	}
	// Each client is net/http's HTTP/2 transport (HTTP/2 only) on one
	// connection of its own.
	dial := func() (*client, error) {
		c := &client{}
		c.tr = &http.Transport{DialTLSContext: func(ctx context.Context, network, addr string) (net.Conn, error) {
			conn, err := (&tls.Dialer{Config: &tls.Config{InsecureSkipVerify: true, NextProtos: []string{"h2"}}}).DialContext(ctx, network, addr)
			c.conn = conn
			return conn, err
		}}
		c.tr.Protocols = new(http.Protocols)
		c.tr.Protocols.SetHTTP2(true)
		resp, err := (&http.Client{Transport: c.tr}).Get(srv.URL)
		if err != nil {
			return c, err
		}
		defer resp.Body.Close()
		if b, _ := io.ReadAll(resp.Body); string(b) != "HTTP/2.0" {
			t.Errorf("served over %q, want HTTP/2.0", b)
		}
		return c, nil
	}
	var held []*client
	for i := range 2 {
		c, err := dial()
		if err != nil {
			t.Fatalf("connection %d within the bound: %v", i, err)
		}
		held = append(held, c)
	}
	if _, err := dial(); err == nil {
		t.Fatal("a third HTTP/2 connection from one address was served")
	}
	if st := l.Stats(); st.TooMany != 1 {
		t.Errorf("stats %+v, want one refused for too many", st)
	}
	// One client goes away; the server sees its connection close and the
	// address may connect again.
	held[0].conn.Close()
	held[0].tr.CloseIdleConnections()
	<-closed
	c, err := dial()
	if err != nil {
		t.Fatalf("after a close, a new connection: %v", err)
	}
	held = append(held, c)
	for _, c := range held {
		c.tr.CloseIdleConnections()
	}
}
