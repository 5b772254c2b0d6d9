// Command constserver is the baseline of bench/hit.sh: a minimal net/http
// server that writes one body from memory for every request, with the same
// Content-Type and Content-Length headers listingproxy sends. Nothing can
// serve those bytes faster over HTTP/1.1 with net/http, so listingproxy's
// cache-hit throughput is reported as a ratio of this server's.
package main

import (
	"flag"
	"fmt"
	"net/http"
	"os"
	"strconv"
)

func main() {
	listen := flag.String("listen", "127.0.0.1:0", "listen address")
	bodyFile := flag.String("body", "", "file whose bytes every response carries")
	contentType := flag.String("content-type", "application/xml; charset=utf-8", "Content-Type header")
	flag.Parse()
	body, err := os.ReadFile(*bodyFile)
	if err != nil {
		fmt.Fprintln(os.Stderr, "constserver:", err)
		os.Exit(1)
	}
	ct, cl := []string{*contentType}, []string{strconv.Itoa(len(body))}
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header()["Content-Type"] = ct
		w.Header()["Content-Length"] = cl
		_, _ = w.Write(body)
	})
	if err := http.ListenAndServe(*listen, h); err != nil {
		fmt.Fprintln(os.Stderr, "constserver:", err)
		os.Exit(1)
	}
}
