package h2guard_test

import (
	"bytes"
	"crypto/tls"
	"errors"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"golang.org/x/net/http2"
	"golang.org/x/net/http2/hpack"

	"listingproxy/internal/h2guard"
	"listingproxy/internal/testkit"
)

// testServer is the public listener's stack in small: TLS offering h2 and
// http/1.1, the guard, and net/http serving both; the guard's clock never
// moves (its buckets never refill: what a test sends is all they see).
type testServer struct {
	addr, url string
	g         *h2guard.Listener
}

func server(t *testing.T, burst int) *testServer {
	t.Helper()
	certFile, keyFile, _ := testkit.WriteSelfSigned(t, t.TempDir(), 1)
	cert, err := tls.LoadX509KeyPair(certFile, keyFile)
	if err != nil {
		t.Fatal(err)
	}
	tcp, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	at := time.Unix(1_800_000_000, 0)
	g := h2guard.Listen(tls.NewListener(tcp, &tls.Config{Certificates: []tls.Certificate{cert}, NextProtos: []string{"h2", "http/1.1"}}),
		h2guard.Options{ControlPerSecond: 1, ControlBurst: burst, ResetPerSecond: 1, ResetBurst: burst, Now: func() time.Time { return at }})
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.WriteString(w, r.Proto)
	}), ReadHeaderTimeout: time.Minute}
	g.Configure(srv, true)
	done := make(chan struct{})
	go func() { defer close(done); _ = srv.Serve(g) }()
	t.Cleanup(func() { _ = srv.Close(); <-done })
	return &testServer{addr: tcp.Addr().String(), url: "https://" + tcp.Addr().String() + "/", g: g}
}

// get asks for / over protocol ("h2" or "http/1.1") with net/http's client.
func (s *testServer) get(t *testing.T, protocol string) string {
	t.Helper()
	tr := &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}, Protocols: new(http.Protocols)}
	if protocol == "h2" {
		tr.Protocols.SetHTTP2(true)
	} else {
		tr.Protocols.SetHTTP1(true)
	}
	defer tr.CloseIdleConnections()
	resp, err := (&http.Client{Transport: tr}).Get(s.url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != 200 {
		t.Fatalf("%s: %d %s", protocol, resp.StatusCode, b)
	}
	return string(b)
}

// raw is an HTTP/2 client connection written frame by frame.
type raw struct {
	conn net.Conn
	fr   *http2.Framer
	enc  *hpack.Encoder
	hbuf bytes.Buffer
}

func dialRaw(t *testing.T, srv *testServer) *raw {
	t.Helper()
	conn, err := tls.Dial("tcp", srv.addr, &tls.Config{InsecureSkipVerify: true, NextProtos: []string{"h2"}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	if p := conn.ConnectionState().NegotiatedProtocol; p != "h2" {
		t.Fatalf("negotiated %q, want h2", p)
	}
	r := &raw{conn: conn, fr: http2.NewFramer(conn, conn)}
	r.enc = hpack.NewEncoder(&r.hbuf)
	if _, err := io.WriteString(conn, http2.ClientPreface); err != nil {
		t.Fatal(err)
	}
	if err := r.fr.WriteSettings(); err != nil { // one control frame
		t.Fatal(err)
	}
	return r
}

// request writes a GET on stream id.
func (r *raw) request(id uint32) error {
	r.hbuf.Reset()
	for _, f := range [][2]string{{":method", "GET"}, {":scheme", "https"}, {":path", "/"}, {":authority", "example.test"}} {
		_ = r.enc.WriteField(hpack.HeaderField{Name: f[0], Value: f[1]})
	}
	return r.fr.WriteHeaders(http2.HeadersFrameParam{StreamID: id, BlockFragment: r.hbuf.Bytes(), EndStream: true, EndHeaders: true})
}

// closedByServer reads frames until the server closes the connection
// (true) or answers stream id with a response (false).
func (r *raw) closedByServer(t *testing.T, id uint32) bool {
	t.Helper()
	_ = r.conn.SetReadDeadline(time.Now().Add(time.Minute)) // a hang fails the test, never a wait on time
	for {
		f, err := r.fr.ReadFrame()
		if err != nil {
			var ne net.Error
			if errors.As(err, &ne) && ne.Timeout() {
				t.Fatalf("neither an answer nor a close within a minute: %v", err)
			}
			return true
		}
		if h, ok := f.(*http2.HeadersFrame); ok && h.StreamID == id {
			return false
		}
		if g, ok := f.(*http2.GoAwayFrame); ok {
			t.Logf("GOAWAY %v", g.ErrCode)
		}
	}
}

// TestPingFlood: a connection whose PINGs (and SETTINGS) exceed the burst
// is closed by the server and counted; one that stays within it is
// served; and another client's connection is not affected by the flood.
func TestPingFlood(t *testing.T) {
	const burst = 20
	srv := server(t, burst)
	g := srv.g

	// Within the bound: SETTINGS plus burst-1 PINGs, then a request.
	ok := dialRaw(t, srv)
	for i := range burst - 1 {
		if err := ok.fr.WritePing(false, [8]byte{byte(i)}); err != nil {
			t.Fatal(err)
		}
	}
	if err := ok.request(1); err != nil {
		t.Fatal(err)
	}
	if ok.closedByServer(t, 1) {
		t.Fatalf("a connection within the bound (%d control frames) was closed", burst)
	}
	if n := g.Closed(); n != 0 {
		t.Fatalf("closed %d connections, want 0", n)
	}

	// Over it: the flood's connection is closed, acknowledgements and all.
	flood := dialRaw(t, srv)
	var werr error
	for i := 0; i < 10*burst && werr == nil; i++ {
		werr = flood.fr.WritePing(false, [8]byte{byte(i)})
	}
	_ = flood.request(1) // may fail: the server may have closed already
	if !flood.closedByServer(t, 1) {
		t.Fatal("a PING flood's connection was served, want it closed")
	}
	if n := g.Closed(); n != 1 {
		t.Errorf("closed %d connections, want 1", n)
	}

	// net/http's own clients on connections of their own are served.
	if p := srv.get(t, "h2"); p != "HTTP/2.0" {
		t.Errorf("an HTTP/2 client after the flood was served over %s", p)
	}
	if p := srv.get(t, "http/1.1"); p != "HTTP/1.1" {
		t.Errorf("an HTTP/1.1 client after the flood was served over %s", p)
	}
}

// TestPlainHTTPToTheTLSPort: a client speaking plain HTTP to the TLS
// listener gets net/http's 400, not a silent close.
func TestPlainHTTPToTheTLSPort(t *testing.T) {
	srv := server(t, 10)
	resp, err := http.Get("http://" + srv.addr + "/")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != 400 || !strings.Contains(string(b), "HTTP request to an HTTPS server") {
		t.Errorf("plain HTTP to the TLS port: %d %q, want 400", resp.StatusCode, b)
	}
}

// TestRapidReset: requests each reset at once (CVE-2023-44487) count
// their RST_STREAM frames: past the burst the connection is closed.
func TestRapidReset(t *testing.T) {
	const burst = 30
	srv := server(t, burst)
	g := srv.g
	c := dialRaw(t, srv)
	var werr error
	id := uint32(1)
	for i := 0; i < 10*burst && werr == nil; i++ {
		if werr = c.request(id); werr == nil {
			werr = c.fr.WriteRSTStream(id, http2.ErrCodeCancel)
		}
		id += 2
	}
	if !c.closedByServer(t, 0) {
		t.Fatal("a rapid reset's connection was not closed")
	}
	if n := g.Closed(); n != 1 {
		t.Errorf("closed %d connections, want 1", n)
	}
}

// TestFramesSplitAcrossReads: the walk follows frames however the reads
// cut them (the preface and headers one byte at a time, payloads large
// and small): a slow writer of legitimate frames is served, and its
// PINGs are still counted exactly.
func TestFramesSplitAcrossReads(t *testing.T) {
	const burst = 8
	srv := server(t, burst)
	g := srv.g
	var buf bytes.Buffer
	fr := http2.NewFramer(&buf, nil)
	buf.WriteString(http2.ClientPreface)
	_ = fr.WriteSettings()
	_ = fr.WriteWindowUpdate(0, 1<<20) // not counted
	for i := range burst - 2 {
		_ = fr.WritePing(false, [8]byte{byte(i)})
	}
	conn, err := tls.Dial("tcp", srv.addr, &tls.Config{InsecureSkipVerify: true, NextProtos: []string{"h2"}})
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	for _, b := range buf.Bytes() { // one byte a write, one TLS record each
		if _, err := conn.Write([]byte{b}); err != nil {
			t.Fatal(err)
		}
	}
	r := &raw{conn: conn, fr: http2.NewFramer(conn, conn)}
	r.enc = hpack.NewEncoder(&r.hbuf)
	if err := r.request(1); err != nil {
		t.Fatal(err)
	}
	if r.closedByServer(t, 1) {
		t.Fatal("a byte-by-byte client within the bound was closed")
	}
	// Two more control frames: SETTINGS + (burst-2) PINGs + 2 = burst+1.
	_ = r.fr.WritePing(false, [8]byte{1})
	_ = r.fr.WritePing(false, [8]byte{2})
	_ = r.request(3)
	if !r.closedByServer(t, 3) {
		t.Fatal("the control frame past the burst did not close the connection")
	}
	if n := g.Closed(); n != 1 {
		t.Errorf("closed %d, want 1", n)
	}
}
