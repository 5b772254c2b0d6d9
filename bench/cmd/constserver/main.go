// Command constserver is the baseline of bench/hit.sh: a minimal net/http
// server (no middleware, no timeouts, one handler) that writes one response
// from memory for every request.
//
// With -headers it replays a response's header lines (as written by
// `curl -D`; the status line and Date are skipped, net/http writes its own),
// so it sends the same bytes listingproxy sends for a cache hit: status
// line, headers, body. Without it, it sends only Content-Type and
// Content-Length with the body. listingproxy's cache-hit throughput is
// reported as a ratio of this server's.
package main

import (
	"bufio"
	"bytes"
	"flag"
	"fmt"
	"net/http"
	"os"
	"strconv"
	"strings"
)

func main() {
	listen := flag.String("listen", "127.0.0.1:0", "listen address")
	bodyFile := flag.String("body", "", "file whose bytes every response carries")
	headerFile := flag.String("headers", "", "file of response headers to replay (curl -D output)")
	contentType := flag.String("content-type", "application/xml; charset=utf-8", "Content-Type header, without -headers")
	flag.Parse()
	body, err := os.ReadFile(*bodyFile)
	if err != nil {
		fail(err)
	}
	hdr := http.Header{"Content-Type": {*contentType}}
	if *headerFile != "" {
		if hdr, err = readHeaders(*headerFile); err != nil {
			fail(err)
		}
	}
	hdr["Content-Length"] = []string{strconv.Itoa(len(body))}
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		wh := w.Header()
		for k, v := range hdr {
			wh[k] = v
		}
		_, _ = w.Write(body)
	})
	if err := http.ListenAndServe(*listen, h); err != nil {
		fail(err)
	}
}

// readHeaders parses "Name: value" lines, skipping the status line, Date
// and blank lines.
func readHeaders(path string) (http.Header, error) {
	raw, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	h := http.Header{}
	sc := bufio.NewScanner(bytes.NewReader(raw))
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "HTTP/") {
			continue
		}
		k, v, ok := strings.Cut(line, ":")
		if !ok {
			return nil, fmt.Errorf("%s: not a header line: %q", path, line)
		}
		if k = http.CanonicalHeaderKey(strings.TrimSpace(k)); k != "Date" {
			h[k] = append(h[k], strings.TrimSpace(v))
		}
	}
	if len(h) == 0 {
		return nil, fmt.Errorf("%s: no headers", path)
	}
	return h, sc.Err()
}

func fail(err error) {
	fmt.Fprintln(os.Stderr, "constserver:", err)
	os.Exit(1)
}
