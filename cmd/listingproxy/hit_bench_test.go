package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/base64"
	"io"
	"log/slog"
	"net"
	"testing"
	"time"

	"listingproxy/bench/bare"
	"listingproxy/config"
	"listingproxy/internal/connlimit"
	"listingproxy/internal/onewrite"
	"listingproxy/internal/serving"
	"listingproxy/proxy"
)

// BenchmarkServeHit measures a cache hit through everything a client
// reaches: net/http's server (as serve configures it: timeouts, header
// limit), the drain check, the access middleware with metrics, and the
// proxy, over a real loopback connection. The client is one keep-alive
// connection writing a fixed request and reading each response without
// allocating, so allocs/op and B/op are the server's (they do not depend
// on the machine's load, unlike ns/op, which includes the client and both
// ends of the socket).
func BenchmarkServeHit(b *testing.B) {
	benchServeHit(b, startBenchServer(b), "Cache-Status: listingproxy; hit")
}

// BenchmarkServeHitBare is BenchmarkServeHit through bench/cmd/bareproxy's
// handler and server (package bench/bare), filled from listingproxy: the
// same harness, client and answers, so that allocs/op, B/op and a CPU
// profile's handler time compare listingproxy's hit with net/http's
// ceiling without the noise of bench/nginx.sh's rounds.
func BenchmarkServeHitBare(b *testing.B) {
	origin := startBenchServer(b)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	auth := "Basic " + base64.StdEncoding.EncodeToString([]byte("harbour:harbour-demo"))
	srv := bare.Server(bare.New("http://"+origin, auth))
	go func() { _ = srv.Serve(onewrite.Listener(ln)) }()
	b.Cleanup(func() { _ = srv.Close() })
	benchServeHit(b, ln.Addr().String(), "X-Cache-Status: HIT")
}

// benchServeHit measures hits on the server at base, whose answer from its
// cache carries the header line hit.
func benchServeHit(b *testing.B, base, hit string) {
	cases := []struct{ name, target, encoding string }{
		{"2KB", "/au/properties.xml?detail=full&limit=1&order=price", ""},
		{"45KB", "/au/properties.xml?detail=full&limit=22&order=price", ""},
		{"45KB-gzip", "/au/properties.xml?detail=full&limit=22&order=price", "gzip"},
	}
	for _, bc := range cases {
		b.Run(bc.name, func(b *testing.B) {
			c := dialBench(b, base)
			req := "GET " + bc.target + " HTTP/1.1\r\nHost: bench\r\nAuthorization: Basic " +
				base64.StdEncoding.EncodeToString([]byte("harbour:harbour-demo")) + "\r\n"
			if bc.encoding != "" {
				req += "Accept-Encoding: " + bc.encoding + "\r\n"
			}
			req += "\r\n"
			raw := []byte(req)
			c.roundTrip(b, raw) // fill
			if n := c.roundTrip(b, raw); !bytes.Contains(c.head, []byte(hit)) {
				b.Fatalf("second request was not a hit (%d bytes):\n%s", n, c.head)
			}
			b.SetBytes(int64(len(c.head)) + int64(c.roundTrip(b, raw)))
			b.ReportAllocs()
			b.ResetTimer()
			for b.Loop() {
				c.roundTrip(b, raw)
			}
		})
	}
}

// startBenchServer serves the demo as serve does (log level error, so no
// access lines) and returns its address.
func startBenchServer(b *testing.B) string {
	b.Helper()
	cfg, err := config.Load(demoConfig(b), func(string) string { return "" })
	if err != nil {
		b.Fatal(err)
	}
	cfg.Log.Level = "error"
	log := slog.New(slog.DiscardHandler)
	a, err := build(context.Background(), cfg, log, time.Now)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(a.Close)
	// No bounds per client address: the benchmarks' connections are many
	// and from one address.
	ls, err := serving.Open(context.Background(), serving.ListenOptions{Addr: "127.0.0.1:0", ConnLimits: connlimit.Options{PerAddress: -1, NewPerSecond: -1}})
	if err != nil {
		b.Fatal(err)
	}
	srv := cfg.Server.HTTPServer(a.handler, log)
	srv.ConnContext = proxy.ConnContext
	sv := ls.Servers(srv, nil)[0]
	go func() { _ = sv.HTTP.Serve(sv.Listener) }()
	b.Cleanup(func() { _ = sv.HTTP.Close() })
	return sv.Listener.Addr().String()
}

// benchConn is a keep-alive client connection that reads responses into
// reused buffers.
type benchConn struct {
	c    net.Conn
	r    *bufio.Reader
	head []byte // the last response's status line and headers
	body []byte
}

func dialBench(b *testing.B, addr string) *benchConn {
	b.Helper()
	c, err := net.Dial("tcp", addr)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = c.Close() })
	return &benchConn{c: c, r: bufio.NewReaderSize(c, 64<<10), body: make([]byte, 64<<10)}
}

// roundTrip sends req and reads one 200 response with a Content-Length,
// returning the body's length.
func (c *benchConn) roundTrip(b *testing.B, req []byte) int {
	if _, err := c.c.Write([]byte(req)); err != nil {
		b.Fatal(err)
	}
	c.head = c.head[:0]
	length := -1
	for {
		line, err := c.r.ReadSlice('\n')
		if err != nil {
			b.Fatal(err)
		}
		c.head = append(c.head, line...)
		if len(line) <= 2 {
			break
		}
		if v, ok := bytes.CutPrefix(line, []byte("Content-Length: ")); ok {
			length = 0
			for _, d := range bytes.TrimSpace(v) {
				length = length*10 + int(d-'0')
			}
		}
	}
	if !bytes.HasPrefix(c.head, []byte("HTTP/1.1 200 ")) || length < 0 {
		b.Fatalf("response:\n%s", c.head)
	}
	if length > len(c.body) {
		c.body = make([]byte, length)
	}
	if _, err := io.ReadFull(c.r, c.body[:length]); err != nil {
		b.Fatal(err)
	}
	return length
}
