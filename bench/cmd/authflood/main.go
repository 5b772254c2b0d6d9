// Command authflood floods a URL with wrong Basic credentials: C
// connections, each sending requests back to back for a duration, every
// request with a password never sent before (a new Authorization header
// each time, so no memo can answer it). It prints the requests sent per
// status code. Used by bench/auth-flood.sh.
//
//	authflood -url URL [-c 32] [-d 5s] [-user harbour] [-random-users] [-random-xff]
//
// -random-users sends a new username with each request too; -random-xff a
// new X-Forwarded-For address (from 10.0.0.0/8), for a listingproxy that
// trusts the flood's address as a proxy: it then sees a flood from
// millions of clients, which its per-address buckets cannot hold back.
package main

import (
	"context"
	"encoding/base64"
	"flag"
	"fmt"
	"io"
	"maps"
	"net/http"
	"os"
	"slices"
	"sync"
	"sync/atomic"
	"time"
)

func main() {
	if err := run(context.Background(), os.Args, os.Stdout, os.Stderr); err != nil {
		fmt.Fprintln(os.Stderr, "authflood:", err)
		os.Exit(1)
	}
}

func run(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("authflood", flag.ContinueOnError)
	fs.SetOutput(stderr)
	target := fs.String("url", "", "URL to request (required)")
	conns := fs.Int("c", 32, "connections")
	dur := fs.Duration("d", 5*time.Second, "duration")
	user := fs.String("user", "harbour", "username of the wrong credentials")
	randomUsers := fs.Bool("random-users", false, "a new username with each request")
	randomXFF := fs.Bool("random-xff", false, "a new X-Forwarded-For address with each request")
	if err := fs.Parse(args[1:]); err != nil {
		return err
	}
	if *target == "" {
		return fmt.Errorf("-url is required")
	}
	client := &http.Client{
		Timeout:   30 * time.Second,
		Transport: &http.Transport{MaxIdleConnsPerHost: *conns, MaxConnsPerHost: *conns, DisableCompression: true},
	}
	ctx, cancel := context.WithTimeout(ctx, *dur)
	defer cancel()
	var seq atomic.Uint64
	seq.Store(uint64(time.Now().UnixNano())) // a new run never repeats an earlier run's headers
	var mu sync.Mutex
	statuses := map[int]int{}
	errs := 0
	var wg sync.WaitGroup
	for range *conns {
		wg.Go(func() {
			mine := map[int]int{}
			myErrs := 0
			for ctx.Err() == nil {
				n := seq.Add(1)
				name := *user
				if *randomUsers {
					name = fmt.Sprintf("user%d", n)
				}
				req, _ := http.NewRequestWithContext(ctx, "GET", *target, nil)
				req.Header.Set("Authorization", "Basic "+base64.StdEncoding.EncodeToString(fmt.Appendf(nil, "%s:wrong-%d", name, n)))
				if *randomXFF {
					req.Header.Set("X-Forwarded-For", fmt.Sprintf("10.%d.%d.%d", n>>16&255, n>>8&255, n&255))
				}
				resp, err := client.Do(req)
				if err != nil {
					if ctx.Err() == nil {
						myErrs++
					}
					continue
				}
				_, _ = io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
				mine[resp.StatusCode]++
			}
			mu.Lock()
			for k, v := range mine {
				statuses[k] += v
			}
			errs += myErrs
			mu.Unlock()
		})
	}
	wg.Wait()
	total := 0
	for _, code := range slices.Sorted(maps.Keys(statuses)) {
		fmt.Fprintf(stdout, "%d:%d ", code, statuses[code])
		total += statuses[code]
	}
	fmt.Fprintf(stdout, "errors:%d total:%d rps:%.0f\n", errs, total, float64(total)/dur.Seconds())
	return nil
}
