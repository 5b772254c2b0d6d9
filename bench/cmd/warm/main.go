// Command warm requests every path of a file once against a base URL, with a
// few requests in flight, and fails unless every answer is 200. bench/nginx.sh
// uses it to fill each cache under test with the same keys before measuring
// hits.
//
//	warm -base http://127.0.0.1:8080 -paths FILE -H 'Authorization: Basic …' [-H 'Accept-Encoding: gzip']
package main

import (
	"bufio"
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"strings"
	"sync"
	"sync/atomic"
)

type headers []string

func (h *headers) String() string     { return strings.Join(*h, ", ") }
func (h *headers) Set(v string) error { *h = append(*h, v); return nil }

func main() {
	base := flag.String("base", "", "base URL (scheme, host and port)")
	pathsFile := flag.String("paths", "", "file of paths, one per line")
	workers := flag.Int("c", 8, "requests in flight")
	var hdr headers
	flag.Var(&hdr, "H", "request header (repeatable)")
	flag.Parse()
	f, err := os.Open(*pathsFile)
	if err != nil {
		fail(err)
	}
	defer f.Close()
	paths := make(chan string)
	var failed atomic.Int64
	var done atomic.Int64
	var wg sync.WaitGroup
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: *workers, DisableCompression: true}}
	for range *workers {
		wg.Go(func() {
			for p := range paths {
				req, err := http.NewRequest(http.MethodGet, *base+p, nil)
				if err != nil {
					fail(err)
				}
				for _, h := range hdr {
					k, v, _ := strings.Cut(h, ":")
					req.Header.Set(strings.TrimSpace(k), strings.TrimSpace(v))
				}
				resp, err := client.Do(req)
				if err != nil {
					fail(err)
				}
				_, _ = io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
				if resp.StatusCode != http.StatusOK {
					if failed.Add(1) <= 3 {
						fmt.Fprintf(os.Stderr, "warm: %s: status %d\n", p, resp.StatusCode)
					}
				}
				done.Add(1)
			}
		})
	}
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if p := strings.TrimSpace(sc.Text()); p != "" {
			paths <- p
		}
	}
	close(paths)
	wg.Wait()
	if err := sc.Err(); err != nil {
		fail(err)
	}
	if n := failed.Load(); n > 0 {
		fail(fmt.Errorf("%d of %d requests were not 200", n, done.Load()))
	}
}

func fail(err error) {
	fmt.Fprintln(os.Stderr, "warm:", err)
	os.Exit(1)
}
