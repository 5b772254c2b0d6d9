package onewrite_test

import (
	"bufio"
	"bytes"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"listingproxy/internal/onewrite"
)

// body is n deterministic bytes.
func body(n int) []byte {
	b := make([]byte, n)
	for i := range b {
		b[i] = 'a' + byte(i%26)
	}
	return b
}

// testHandler serves the shapes of response the tests compare. Date is
// fixed so that two servers send the same bytes.
func testHandler(t *testing.T, proceed <-chan struct{}) http.Handler {
	file := filepath.Join(t.TempDir(), "file")
	if err := os.WriteFile(file, body(100_000), 0o600); err != nil {
		t.Fatal(err)
	}
	mux := http.NewServeMux()
	mux.HandleFunc("/size/{n}", func(w http.ResponseWriter, r *http.Request) {
		n, _ := strconv.Atoi(r.PathValue("n"))
		h := w.Header()
		h.Set("Date", "Sun, 22 Nov 2026 00:00:00 GMT")
		h.Set("Content-Type", "text/plain")
		h.Set("Content-Length", strconv.Itoa(n))
		w.WriteHeader(http.StatusOK)
		if r.Method != http.MethodHead {
			_, _ = w.Write(body(n))
		}
	})
	mux.HandleFunc("/chunks/{n}", func(w http.ResponseWriter, r *http.Request) { // no Content-Length: chunked
		n, _ := strconv.Atoi(r.PathValue("n"))
		w.Header().Set("Date", "Sun, 22 Nov 2026 00:00:00 GMT")
		b := body(n)
		for len(b) > 0 {
			k := min(len(b), 1000)
			_, _ = w.Write(b[:k])
			b = b[k:]
		}
	})
	mux.HandleFunc("/file", func(w http.ResponseWriter, r *http.Request) { // io.Copy: response.ReadFrom, sendfile
		f, err := os.Open(file)
		if err != nil {
			t.Error(err)
			return
		}
		defer f.Close()
		w.Header().Set("Date", "Sun, 22 Nov 2026 00:00:00 GMT")
		w.Header().Set("Content-Length", "100000")
		_, _ = io.Copy(w, f)
	})
	mux.HandleFunc("/stream", func(w http.ResponseWriter, r *http.Request) { // flushes, then waits
		w.Header().Set("Date", "Sun, 22 Nov 2026 00:00:00 GMT")
		w.Header().Set("Content-Length", "10000")
		_, _ = w.Write(body(5000))
		w.(http.Flusher).Flush()
		<-proceed
		_, _ = w.Write(body(10000)[5000:])
	})
	return mux
}

// serve starts an http.Server for h on a fresh loopback listener, as
// cmd/listingproxy does with onewrite or without it, and returns its
// address.
func serve(t *testing.T, h http.Handler, withOnewrite bool) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: h, ReadHeaderTimeout: time.Minute, MaxHeaderBytes: 4096}
	if withOnewrite {
		ln = onewrite.Listener(ln)
		srv.ConnContext = onewrite.ConnContext
		srv.Handler = onewrite.Handler(h)
	}
	go func() { _ = srv.Serve(ln) }()
	t.Cleanup(func() { _ = srv.Close() })
	return ln.Addr().String()
}

// exchange writes raw to a new connection to addr and returns everything
// the server sends until it closes the connection.
func exchange(t *testing.T, addr, raw string) []byte {
	t.Helper()
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(time.Minute)) // a hang fails instead of blocking the run
	if _, err := io.WriteString(c, raw); err != nil {
		t.Fatal(err)
	}
	got, err := io.ReadAll(c)
	if err != nil {
		t.Fatalf("reading %q: %v", raw, err)
	}
	return got
}

var targets = []string{
	"/size/0", "/size/100", "/size/3700", "/size/3900", "/size/4096", "/size/5000", "/size/45000", "/size/200000",
	"/chunks/3000", "/chunks/10000", "/chunks/100000", "/file",
}

// TestSameBytes sends the same requests to a server with and without
// onewrite and requires the very same bytes back: every response shape
// (small, a tail left in net/http's buffer, large, chunked, sendfile), HEAD,
// keep-alive with pipelined requests, and a malformed request after a
// large response, which net/http answers 400 by writing to the connection
// itself.
func TestSameBytes(t *testing.T) {
	never := make(chan struct{})
	h := testHandler(t, never)
	plain, one := serve(t, h, false), serve(t, h, true)
	var pipelined strings.Builder
	for _, method := range []string{"GET", "HEAD"} {
		for _, target := range targets {
			req := method + " " + target + " HTTP/1.1\r\nHost: x\r\n"
			pipelined.WriteString(req + "\r\n")
			t.Run(method+target, func(t *testing.T) {
				raw := req + "Connection: close\r\n\r\n"
				want, got := exchange(t, plain, raw), exchange(t, one, raw)
				if !bytes.Equal(got, want) {
					t.Fatalf("%q: %d bytes with onewrite, %d without; first difference at %d", raw, len(got), len(want), firstDiff(got, want))
				}
				if !bytes.HasPrefix(got, []byte("HTTP/1.1 200 OK\r\n")) {
					t.Fatalf("%q: %.80q", raw, got)
				}
			})
		}
	}
	t.Run("pipelined", func(t *testing.T) {
		raw := pipelined.String() + "GET /size/45000 HTTP/1.1\r\nHost: x\r\n\r\nNOT HTTP\r\n\r\n"
		want, got := exchange(t, plain, raw), exchange(t, one, raw)
		if !bytes.Equal(got, want) {
			t.Fatalf("%d bytes with onewrite, %d without; first difference at %d", len(got), len(want), firstDiff(got, want))
		}
		if n := bytes.Count(got, []byte("HTTP/1.1 200 OK\r\n")); n != 2*len(targets)+1 {
			t.Fatalf("%d responses 200, want %d", n, 2*len(targets)+1)
		}
		if !bytes.Contains(got, []byte("HTTP/1.1 400 Bad Request")) {
			t.Fatalf("no 400 for the malformed request; ends with %q", got[max(0, len(got)-200):])
		}
	})
}

func firstDiff(a, b []byte) int {
	for i := range min(len(a), len(b)) {
		if a[i] != b[i] {
			return i
		}
	}
	return min(len(a), len(b))
}

// TestOneSendPerResponse counts the system calls that send bytes: one per
// response, whether the response is larger than net/http's 4 KB buffer
// (which sends it in two writes without onewrite) or leaves a tail in it.
func TestOneSendPerResponse(t *testing.T) {
	var sends atomic.Int64
	onewrite.SetSendHook(func() { sends.Add(1) })
	t.Cleanup(func() { onewrite.SetSendHook(nil) })
	addr := serve(t, testHandler(t, nil), true)
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(time.Minute))
	r := bufio.NewReader(c)
	sizes := []int{100, 3900, 5000, 45000, 200000}
	for i, n := range sizes {
		closing := ""
		if i == len(sizes)-1 {
			closing = "Connection: close\r\n"
		}
		if _, err := io.WriteString(c, "GET /size/"+strconv.Itoa(n)+" HTTP/1.1\r\nHost: x\r\n"+closing+"\r\n"); err != nil {
			t.Fatal(err)
		}
		resp, err := http.ReadResponse(r, nil)
		if err != nil {
			t.Fatal(err)
		}
		got, err := io.ReadAll(resp.Body)
		resp.Body.Close()
		if err != nil || !bytes.Equal(got, body(n)) {
			t.Fatalf("size %d: %d bytes, err %v", n, len(got), err)
		}
	}
	if _, err := r.ReadByte(); err != io.EOF { // the server closed: every send is done
		t.Fatalf("after the last response: %v, want EOF", err)
	}
	if got := sends.Load(); got != int64(len(sizes)) {
		t.Fatalf("%d sends for %d responses", got, len(sizes))
	}
}

// TestFlushedBytesAreNotHeld: a handler that flushes and then waits must
// have its flushed bytes reach the client while it waits; a held write
// must never wait for the handler to finish.
func TestFlushedBytesAreNotHeld(t *testing.T) {
	proceed := make(chan struct{})
	addr := serve(t, testHandler(t, proceed), true)
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(time.Minute))
	if _, err := io.WriteString(c, "GET /stream HTTP/1.1\r\nHost: x\r\n\r\n"); err != nil {
		t.Fatal(err)
	}
	resp, err := http.ReadResponse(bufio.NewReader(c), nil)
	if err != nil {
		t.Fatal(err)
	}
	first := make([]byte, 5000)
	if _, err := io.ReadFull(resp.Body, first); err != nil { // the handler is still waiting
		t.Fatalf("flushed bytes did not arrive while the handler waited: %v", err)
	}
	close(proceed)
	rest, err := io.ReadAll(resp.Body)
	if err != nil || !bytes.Equal(append(first, rest...), body(10000)) {
		t.Fatalf("body: %d+%d bytes, err %v", len(first), len(rest), err)
	}
}

// TestHandlerWithoutConn: a request that did not come through a Listener
// (here a recorder) is served unchanged.
func TestHandlerWithoutConn(t *testing.T) {
	w := httptest.NewRecorder()
	onewrite.Handler(testHandler(t, nil)).ServeHTTP(w, httptest.NewRequest("GET", "/size/45000", nil))
	if w.Code != 200 || !bytes.Equal(w.Body.Bytes(), body(45000)) {
		t.Fatalf("status %d, %d bytes", w.Code, w.Body.Len())
	}
}
